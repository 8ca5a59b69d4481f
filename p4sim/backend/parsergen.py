"""Parser state machines → Python.

A parser becomes one function running a ``while`` loop over state numbers. The packet is
read through local ``buf``/``off`` (byte offset) variables for speed; they are written back to
the packet object on accept and carried by :class:`ParserReject` on errors, because the
architecture needs the offset to find the unparsed payload.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..frontend import ast
from ..frontend.types import BitT, BoolT, EnumT, ErrorT, InfIntT, StackT, StructT
from .context import BodyCtx, Scope, _err

if TYPE_CHECKING:
    from .compiler import Compiler



def compile_parser(c: "Compiler", decl: ast.ParserDecl, ctx: "BodyCtx") -> None:
    w = ctx.w
    ctx.in_parser = True
    pkt = None
    for p in decl.params:
        b = ctx.scope.lookup(p.name)
        if b.kind == "packet_in":
            pkt = b.py
    if pkt is None:
        raise _err(decl, f"parser {decl.name} has no packet_in parameter")
    ctx.packet_py = pkt
    states = {s.name: s for s in decl.states}
    if "start" not in states:
        raise _err(decl, f"parser {decl.name} has no start state")
    for name in ("accept", "reject"):
        if name in states:
            raise _err(states[name], f"state '{name}' is predefined and cannot be declared")
    numbers = {name: i for i, name in enumerate(states)}
    w.line(f"buf = {pkt}.buf")
    w.line("blen = len(buf)")
    w.line(f"off = {pkt}.off")
    for local in decl.locals:
        if isinstance(local, ast.ValueSetDecl):
            raise _err(local, "parser value sets are not supported")
        c.compile_local_decl(local, ctx)
    w.line(f"st = {numbers['start']}")
    w.line("while True:")
    with w.indent():
        first = True
        for name, s in states.items():
            w.line(f"{'if' if first else 'elif'} st == {numbers[name]}:  # state {name}")
            first = False
            with w.indent():
                # the state's locals are in scope in its transition select
                outer = ctx.scope
                ctx.scope = Scope(outer)
                try:
                    c.compile_items(s.statements, ctx)
                    _transition(c, s, numbers, ctx, pkt)
                finally:
                    ctx.scope = outer


def _goto(target: str, numbers: dict[str, int], node, ctx: "BodyCtx", pkt: str) -> list[str]:
    if target == "accept":
        out = ctx.ret.out_names
        return [f"{pkt}.off = off", f"return ({', '.join(out)},)" if out else "return"]
    if target == "reject":
        # an explicit reject keeps parser_error as NoError (bmv2)
        return ["raise ParserReject(0, off)"]
    if target not in numbers:
        raise _err(node, f"unknown parser state '{target}'")
    return [f"st = {numbers[target]}", "continue"]


def _transition(c: "Compiler", s: ast.ParserState, numbers, ctx: "BodyCtx", pkt: str) -> None:
    w = ctx.w
    t = s.transition
    if t is None:
        # P4: a state without transition goes to reject
        w.line("raise ParserReject(0, off)")
        return
    if t.state is not None:
        for line in _goto(t.state, numbers, t, ctx, pkt):
            w.line(line)
        return
    keys = []
    for e in t.select_on:
        code, kt = c.compile_expr(e, ctx)
        if isinstance(kt, BoolT):
            code = f"int({code})"
            kt = BitT(1)
        if not isinstance(kt, (BitT, EnumT, ErrorT, InfIntT)):
            raise _err(e, f"cannot select on a value of type {kt}")
        tmp = c.fresh("k")
        w.line(f"{tmp} = {code}")
        keys.append((tmp, kt))
    first = True
    default_seen = False
    for case in t.cases:
        ks = case.keyset
        if isinstance(ks, ast.KsTuple):
            items = ks.items
        else:
            items = [ks]
        if len(items) == 1 and isinstance(items[0], ast.KsDefault):
            conds = []
        else:
            if len(items) != len(keys):
                raise _err(case, f"select has {len(keys)} keys, this case has {len(items)}")
            conds = [cnd for item, (k, kt) in zip(items, keys) if (cnd := _key_cond(c, item, k, kt, ctx))]
        cond = " and ".join(conds) if conds else "True"
        w.line(f"{'if' if first else 'elif'} {cond}:")
        first = False
        with w.indent():
            for line in _goto(case.state, numbers, case, ctx, pkt):
                w.line(line)
        if cond == "True":
            default_seen = True
            break
    if not default_seen:
        # No case matched. The P4 spec says reject with error.NoMatch, and Tofino sets its
        # no-match error bit; bmv2 (v1model) just ends parsing there without an error
        # (ParseState::find_next_state falls to a null default state), like an explicit reject.
        no_match = 0 if c.arch == "v1model" else c.errors.index("NoMatch")
        if first:
            w.line(f"raise ParserReject({no_match}, off)")
        else:
            w.line("else:")
            with w.indent():
                w.line(f"raise ParserReject({no_match}, off)")


def _key_cond(c: "Compiler", item: ast.Keyset, k: str, kt, ctx: "BodyCtx") -> str | None:
    width_t = kt if isinstance(kt, BitT) else (kt.underlying if isinstance(kt, EnumT) and kt.underlying else None)
    mask_all = width_t.mask if width_t is not None and not width_t.signed else None

    def val(e: ast.Expr) -> int:
        v = c.const_eval(e, ctx.scope, width_t)
        return v & mask_all if mask_all is not None and isinstance(v, int) else v

    if isinstance(item, ast.KsDefault):
        return None
    if isinstance(item, ast.KsExpr):
        ok, v, _ = c.try_const(item.expr, ctx.scope)
        if ok:
            return f"{k} == {val(item.expr)!r}"
        code = c.expr_as(item.expr, kt, ctx)
        return f"{k} == {code}"
    if isinstance(item, ast.KsMask):
        v, m = val(item.value), val(item.mask)
        return f"({k} & {m}) == {v & m}"
    if isinstance(item, ast.KsRange):
        return f"{val(item.low)} <= {k} <= {val(item.high)}"
    raise _err(item, "unsupported keyset expression")


# ---------------------------------------------------------------------------- packet_in methods
def compile_packet_in_method(c: "Compiler", pkt: str, method: str, call: ast.Call, ctx: "BodyCtx",
                             statement: bool):
    w = ctx.w
    if not ctx.in_parser:
        raise _err(call, f"packet_in.{method} is only allowed in a parser")
    too_short = c.errors.index("PacketTooShort")
    if method == "extract":
        if len(call.args) == 2:
            return _extract_varbit(c, call, ctx, too_short)
        if len(call.args) != 1:
            raise _err(call, "extract takes one argument")
        target = call.args[0].value
        if isinstance(target, ast.DontCare):
            # extract<T>(_): read and discard a T (advances the packet like any extract)
            if len(call.type_args) != 1:
                raise _err(target, "extract(_) needs a type argument: extract<T>(_)")
            t = c.resolve_type(call.type_args[0], ctx.scope)
            if not (isinstance(t, StructT) and t.is_header):
                raise _err(call, f"extract needs a header type, got {t}")
            h = c.fresh("h")
            w.line(f"{h} = {c.default_value_code(t)}")
            _extract_into(c, h, t, w, too_short, target)
            return "", None
        c._check_lvalue(target, ctx)
        # stack.next: advance nextIndex with a bounds check (StackOutOfBounds)
        if isinstance(target, ast.Member) and target.member == "next":
            base, bt = c.compile_expr(target.expr, ctx, lvalue=True)
            if isinstance(bt, StackT):
                h = c.fresh("h")
                w.line(f"if {base}.nxt >= {bt.size}: raise ParserReject({c.errors.index('StackOutOfBounds')}, off)")
                w.line(f"{h} = {base}.items[{base}.nxt]")
                _extract_into(c, h, bt.element, w, too_short, target)
                w.line(f"{base}.nxt += 1")
                return "", None
        code, t = c.compile_expr(target, ctx, lvalue=True)
        if not (isinstance(t, StructT) and t.is_header):
            raise _err(target, f"extract needs a header, got {t}")
        h = c.fresh("h")
        w.line(f"{h} = {code}")
        _extract_into(c, h, t, w, too_short, target)
        for sib in c.union_siblings(target, ctx):
            w.line(f"{sib}._v = False")
        return "", None
    if method == "lookahead":
        if len(call.type_args) != 1:
            raise _err(call, "lookahead needs one type argument: lookahead<T>()")
        t = c.resolve_type(call.type_args[0], ctx.scope)
        if isinstance(t, BitT):
            nbytes = (t.width + 7) // 8
            pad = nbytes * 8 - t.width
            w.line(f"if off + {nbytes} > blen: raise ParserReject({too_short}, off)")
            code = f"int.from_bytes(buf[off:off + {nbytes}], 'big')"
            if pad:
                code = f"({code} >> {pad})"
            if t.signed:
                code = c._wrap_code(code, t)
            return code, t
        if isinstance(t, StructT) and t.is_header:
            tmp = c.fresh("la")
            w.line(f"if off + {t.width // 8} > blen: raise ParserReject({too_short}, off)")
            w.line(f"{tmp} = {t.py_class}()")
            w.line(f"{tmp}.unpack(int.from_bytes(buf[off:off + {t.width // 8}], 'big'))")
            return tmp, t
        if (isinstance(t, StructT) and t.kind == "struct" and t.width % 8 == 0
                and all(isinstance(ft, (BitT, BoolT)) or (isinstance(ft, EnumT) and ft.underlying)
                        for _, ft in t.fields)):
            # a struct of scalar fields, laid out like a header's (p4c's lookahead<struct>)
            tmp, v = c.fresh("la"), c.fresh("lv")
            w.line(f"if off + {t.width // 8} > blen: raise ParserReject({too_short}, off)")
            w.line(f"{tmp} = {t.py_class}()")
            w.line(f"{v} = int.from_bytes(buf[off:off + {t.width // 8}], 'big')")
            for line in c._unpack_lines(t, tmp, v):
                w.line(line)
            return tmp, t
        raise _err(call, f"lookahead of type {t} is not supported")
    if method == "advance":
        if len(call.args) != 1:
            raise _err(call, "advance takes one argument")
        ok, v, _ = c.try_const(call.args[0].value, ctx.scope)
        if ok:
            if v % 8:
                raise _err(call, "advance by a number of bits that is not a multiple of 8 is not supported")
            w.line(f"if off + {v // 8} > blen: raise ParserReject({too_short}, off)")
            w.line(f"off += {v // 8}")
        else:
            n = c.expr_as(call.args[0].value, BitT(32), ctx)
            tmp = c.fresh("adv")
            w.line(f"{tmp} = {n}")
            w.line(f"if {tmp} % 8: raise DataplaneError('advance by a non-multiple of 8 bits')")
            w.line(f"if off + ({tmp} >> 3) > blen: raise ParserReject({too_short}, off)")
            w.line(f"off += {tmp} >> 3")
        return "", None
    if method == "length":
        return "blen", BitT(32)
    raise _err(call, f"packet_in has no method '{method}'")


def _extract_varbit(c: "Compiler", call: ast.Call, ctx: "BodyCtx", too_short: int):
    """``extract(hdr, bits)``: the fixed fields plus ``bits`` bits of hdr's varbit field. Too
    many bits for the field: error.HeaderTooShort; not enough packet: error.PacketTooShort;
    a size that is not a whole number of bytes: error.ParserInvalidArgument (as bmv2)."""
    w = ctx.w
    target = call.args[0].value
    c._check_lvalue(target, ctx)
    stack_base = None
    if isinstance(target, ast.Member) and target.member == "next":
        base, bt = c.compile_expr(target.expr, ctx, lvalue=True)
        if isinstance(bt, StackT):
            stack_base, t = (base, bt), bt.element
            code = None
    if stack_base is None:
        code, t = c.compile_expr(target, ctx, lvalue=True)
    if not (isinstance(t, StructT) and t.is_header):
        raise _err(target, f"extract needs a header, got {t}")
    vf = t.varbit_field
    if vf is None:
        raise _err(call, f"extract(hdr, size): header {t} has no varbit field; use extract(hdr)")
    size_code = c.expr_as(call.args[1].value, BitT(32), ctx)
    vw = c.fresh("vw")
    w.line(f"{vw} = {size_code}")
    w.line(f"if {vw} > {vf[1].max_width}: raise ParserReject({c.errors.index('HeaderTooShort')}, off)")
    w.line(f"if {vw} & 7: raise ParserReject({c.errors.index('ParserInvalidArgument')}, off)")
    n = c.fresh("n")
    w.line(f"{n} = {t.width // 8} + ({vw} >> 3)")
    w.line(f"if off + {n} > blen: raise ParserReject({too_short}, off)")
    h = c.fresh("h")
    if stack_base is not None:
        base, bt = stack_base
        w.line(f"if {base}.nxt >= {bt.size}: raise ParserReject({c.errors.index('StackOutOfBounds')}, off)")
        w.line(f"{h} = {base}.items[{base}.nxt]")
    else:
        w.line(f"{h} = {code}")
    w.line(f"{h}.unpack_var(int.from_bytes(buf[off:off + {n}], 'big'), {vw})")
    w.line(f"off += {n}")
    if stack_base is not None:
        w.line(f"{stack_base[0]}.nxt += 1")
    else:
        for sib in c.union_siblings(target, ctx):
            w.line(f"{sib}._v = False")
    return "", None


def _extract_into(c: "Compiler", h: str, t: StructT, w, too_short: int, node) -> None:
    if t.varbit_field is not None:
        raise _err(node, f"header {t} has a varbit field: extract it with extract(hdr, size_in_bits)")
    n = t.width // 8
    w.line(f"if off + {n} > blen: raise ParserReject({too_short}, off)")
    w.line(f"{h}.unpack_from(buf, off)")
    w.line(f"off += {n}")
