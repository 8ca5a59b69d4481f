"""Code generation for extern instances, extern methods and extern functions.

v1model externs follow bmv2 simple_switch; TNA externs follow Tofino's documented behaviour
for what the INA programs use (docs/p4sim.md, "TNA subset, and where it differs from Tofino").
Each handler checks the call and returns Python code; unknown externs are compile errors, never
silent no-ops.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..frontend import ast
from ..frontend.types import (BitT, BoolT, EnumT, ExternT, InfIntT, P4Type, StackT, StructT,
                              TupleT, TypeVar, VarbitT, VoidT, bit_width)
from p4control import model
from .context import Binding, BodyCtx, ExternInstance, Scope, _err, _ReturnSignal, contains_return
from .parsergen import compile_packet_in_method

if TYPE_CHECKING:
    from .compiler import Compiler


# ============================================================================ instances
def declare_extern_instance(c: "Compiler", d: ast.Instantiation, t: ExternT, ctx: "BodyCtx") -> "ExternInstance":
    fq = c._fq(ctx.prefix, d)
    name = t.name
    args = [a.value for a in d.args]
    scope = ctx.scope

    def const(i: int, expected: P4Type | None = None) -> Any:
        if i >= len(args):
            raise _err(d, f"{name} needs at least {i + 1} constructor arguments")
        return c.const_eval(args[i], scope, expected)

    def enum_member(i: int) -> str:
        e = args[i] if i < len(args) else None
        if isinstance(e, ast.TypeMember) or (isinstance(e, ast.Member) and isinstance(e.expr, ast.Name)):
            return e.member
        raise _err(d, f"{name}: argument {i + 1} must be an enum member")

    annos = [c._anno_text(a) for a in d.annotations]
    inst = ExternInstance(d, t, "", fq)
    if name == "Register" and isinstance(t.args[0], StructT) and t.args[0].kind == "struct":
        _declare_struct_register(c, d, t, inst, const, annos)
    elif name in ("register", "Register"):
        vt = t.args[0]
        if not isinstance(vt, BitT):
            raise _err(d, f"{name} element type {vt} is not supported (use bit<N>, int<N> or, "
                          "for TNA, a struct of them)")
        size = const(0)
        if not isinstance(size, int) or size <= 0:
            raise _err(d, f"{name} size must be a positive constant")
        initial = const(1, vt) if len(args) > 1 else 0
        inst.py = c.add_object("R_" + fq, "register", name=fq, size=size, bitwidth=vt.width,
                               signed=vt.signed, initial=initial)
        c.info.registers[fq] = model.RegisterInfo(fq, vt.width, size, vt.signed, annos)
        inst.params.update(size=size, value_type=vt)
    elif name == "counter" or name == "Counter":
        size = const(0)
        unit = enum_member(1).lower()
        unit = {"packets": "packets", "bytes": "bytes", "packets_and_bytes": "packets_and_bytes"}.get(unit)
        if unit is None:
            raise _err(d, f"{name}: unknown counter type")
        inst.py = c.add_object("C_" + fq, "counter", name=fq, size=size, unit=unit)
        c.info.counters[fq] = model.CounterInfo(fq, size, unit, None, annos)  # type: ignore[arg-type]
    elif name in ("direct_counter", "DirectCounter"):
        unit = enum_member(0).lower()
        inst.py = c.add_object("DC_" + fq, "direct_counter", name=fq, unit=unit)
        c.info.counters[fq] = model.CounterInfo(fq, 0, unit, None, annos)  # type: ignore[arg-type]
    elif name == "meter":
        size = const(0)
        unit = enum_member(1).lower()
        inst.py = c.add_object("M_" + fq, "meter", name=fq, size=size, unit=unit)
        c.info.meters[fq] = model.MeterInfo(fq, size, unit, None, annos)  # type: ignore[arg-type]
    elif name == "Hash":
        algo = enum_member(0)
        if algo == "CUSTOM":
            if len(args) < 2 or not isinstance(args[1], ast.Name):
                raise _err(d, "Hash(HashAlgorithm_t.CUSTOM, poly) needs a CRCPolynomial instance")
            pb = scope.lookup(args[1].name)
            if pb is None or pb.kind != "extern" or pb.info.type.name != "CRCPolynomial":
                raise _err(d, f"'{args[1].name}' is not a CRCPolynomial instance")
            poly = pb.info.params
        else:
            poly = None
        out_t = t.args[0]
        if not isinstance(out_t, BitT):
            raise _err(d, "Hash<W> needs a bit<W> output type")
        inst.py = c.add_object("HS_" + fq, "tna_hash", algorithm=algo.lower(), poly=poly, width=out_t.width)
    elif name == "CRCPolynomial":
        pt = t.args[0]
        if not isinstance(pt, BitT):
            raise _err(d, "CRCPolynomial<T> needs a bit<W> type")
        inst.params.update(coeff=const(0), reversed=bool(const(1)), msb=bool(const(2)),
                           extended=bool(const(3)), init=const(4), xor=const(5), width=pt.width)
        inst.py = "None"
    elif name == "Random":
        inst.py = "_rng"
    elif name == "RegisterAction":
        _declare_register_action(c, d, t, ctx, inst)
    elif name == "Checksum":
        inst.py = "None"
    elif name in ("Resubmit", "Mirror", "Digest"):
        inst.py = "None"
        if name == "Digest":
            dt = t.args[0]
            if not isinstance(dt, StructT):
                raise _err(d, "Digest<T> needs a struct type")
            _register_digest(c, dt, d)
    else:
        raise _err(d, f"extern {name} is not supported by p4sim")
    return inst


def _declare_struct_register(c: "Compiler", d: ast.Instantiation, t: ExternT, inst: "ExternInstance",
                             const, annos: list[str]) -> None:
    """TNA ``Register<pair_t, I>``: each element is a struct (Tofino's paired 2×32-bit cells)."""
    vt: StructT = t.args[0]
    fields = []
    for n, ft in vt.fields:
        if not isinstance(ft, BitT):
            raise _err(d, f"Register element struct {vt.name}: field {n} must be bit<N> or int<N>")
        fields.append((n, ft.width, ft.signed))
    size = const(0)
    if not isinstance(size, int) or size <= 0:
        raise _err(d, "Register size must be a positive constant")
    initial: tuple = tuple(0 for _ in fields)
    if len(d.args) > 1:
        v = const(1)
        if not isinstance(v, tuple) or len(v) != len(fields):
            raise _err(d, f"initial value of a Register<{vt.name}> must be a list of {len(fields)} values")
        initial = tuple(int(x) & ((1 << w) - 1) for x, (_, w, _) in zip(v, fields))
    inst.py = c.add_object("R_" + inst.fq_name, "struct_register", name=inst.fq_name, size=size,
                           struct_class=vt.py_class, fields=fields, initial=initial)
    c.info.registers[inst.fq_name] = model.RegisterInfo(inst.fq_name, vt.width, size, False, annos,
                                                        [(n, w) for n, w, _ in fields], vt.name)
    inst.params.update(size=size, value_type=vt)


def _register_digest(c: "Compiler", t: StructT, node) -> None:
    fields = []
    for n, ft in t.fields:
        try:
            fields.append(model.StructField(n, bit_width(ft)))
        except TypeError:
            raise _err(node, f"digest struct {t.name} field {n} has no fixed width") from None
    c.info.digests[t.name] = model.DigestInfo(t.name, fields)


def _declare_register_action(c: "Compiler", d: ast.Instantiation, t: ExternT, ctx: "BodyCtx",
                             inst: "ExternInstance") -> None:
    if not d.args or not isinstance(d.args[0].value, ast.Name):
        raise _err(d, "RegisterAction needs the register instance as its argument")
    rb = ctx.scope.lookup(d.args[0].value.name)
    if rb is None or rb.kind != "extern" or rb.info.type.name != "Register":
        raise _err(d, f"'{d.args[0].value.name}' is not a Register")
    reg = rb.info
    vt = reg.params["value_type"]
    applies = [m for m in d.members if isinstance(m, ast.FunctionDecl) and m.name == "apply"]
    if len(applies) != 1:
        raise _err(d, "RegisterAction needs exactly one apply(inout T value[, out U rv]) body")
    fn = applies[0]
    params = fn.proto.params
    if not 1 <= len(params) <= 2:
        raise _err(fn, "RegisterAction.apply takes (inout T value) or (inout T value, out U rv)")
    u_t = t.args[2] if len(t.args) > 2 else BitT(32)
    if c.arch == "tna":
        from .tofino_rules import check_register_action
        check_register_action(c, d, fn, ctx.scope)
    # The body is inlined at each execute() so it can read the control's headers and locals.
    inst.py = reg.py
    inst.params.update(register=reg, value_type=vt, rv_type=u_t, apply=fn, scope=ctx.scope)


def _inline_register_action(c: "Compiler", inst: "ExternInstance", index_code: str, ctx: "BodyCtx") -> str:
    w = ctx.w
    reg = inst.params["register"]
    vt, u_t, fn = inst.params["value_type"], inst.params["rv_type"], inst.params["apply"]
    params = fn.proto.params
    scope = Scope(inst.params["scope"])
    idx = c.fresh("ri")
    val = c.unique_local(params[0].name)
    rv = c.unique_local(params[1].name) if len(params) == 2 else c.fresh("rv")
    scope.define(params[0].name, Binding("value", vt, py=val, writable=True))
    if len(params) == 2:
        scope.define(params[1].name, Binding("value", u_t, py=rv, writable=True))
    w.line(f"{idx} = {index_code}")
    w.line(f"_claim({reg.py})")
    w.line(f"{rv} = 0")
    w.line(f"if {idx} < {reg.py}_size:")
    with w.indent():
        w.line(f"{val} = {reg.py}_values[{idx}]")
        bctx = BodyCtx(w, scope, "action", ctx.prefix, _ReturnSignal("break"))
        if contains_return(fn.body):
            w.line("while True:")
            with w.indent():
                c.compile_block_stmt(fn.body, bctx)
                w.line("break")
        else:
            c.compile_block_stmt(fn.body, bctx)
        w.line(f"{reg.py}_values[{idx}] = {val}")
    return rv


# ============================================================================ method calls
def compile_method_call(c: "Compiler", b: "Binding", method: str, call: ast.Call, ctx: "BodyCtx",
                        statement: bool) -> tuple[str, P4Type]:
    w = ctx.w
    if b.kind == "packet_in":
        code, t = compile_packet_in_method(c, b.py, method, call, ctx, statement)
        return code, (t or VoidT())
    if b.kind == "packet_out":
        if method != "emit":
            raise _err(call, f"packet_out has no method '{method}'")
        if len(call.args) != 1:
            raise _err(call, "emit takes one argument")
        code, t = c.compile_expr(call.args[0].value, ctx)
        _emit(c, code, t, b.py, w, call)
        return "", VoidT()
    inst: "ExternInstance" = b.info
    name = inst.type.name
    args = call.args

    def arg(i: int, t: P4Type) -> str:
        return c.expr_as(args[i].value, t, ctx)

    def nargs(*allowed: int) -> None:
        if len(args) not in allowed:
            raise _err(call, f"{name}.{method} takes {' or '.join(map(str, allowed))} arguments, got {len(args)}")

    if name == "register":
        vt = inst.type.args[0]
        it = inst.type.args[1] if len(inst.type.args) > 1 else BitT(32)   # legacy register<T>
        idx_t = it if isinstance(it, BitT) else BitT(32)
        if method == "read":
            nargs(2)
            c._check_lvalue(args[0].value, ctx)
            dst_t = c.lvalue_type(args[0].value, ctx)
            c.coerce("0", vt, dst_t, args[0].value) if isinstance(vt, BitT) else None
            cur, _ = c.compile_expr(args[0].value, ctx)
            c.assign_to(args[0].value, _register_read(c, inst.py, arg(1, idx_t), cur, w), ctx)
            return "", VoidT()
        if method == "write":
            nargs(2)
            _register_write(c, inst.py, arg(0, idx_t), arg(1, vt), w)
            return "", VoidT()
    if name in ("counter", "Counter"):
        if method == "count":
            if name == "counter":
                nargs(1)
                it = inst.type.args[0] if inst.type.args else BitT(32)   # legacy counter
            else:                                                         # TNA Counter<W, I>
                nargs(1, 2)
                it = inst.type.args[1]
            nbytes = "_ctx.packet_length"
            if len(args) == 2:                                            # TNA adjust_byte_count
                nbytes = f"((_ctx.packet_length + {arg(1, BitT(32))}) & 0xffffffff)"
            w.line(f"{inst.py}.count({arg(0, it if isinstance(it, BitT) else BitT(32))}, {nbytes})")
            return "", VoidT()
    if name in ("direct_counter", "DirectCounter"):
        if method == "count":
            if args:
                raise _err(call, f"{name}.count(adjust_byte_count) is not supported by p4sim")
            return "", VoidT()           # counted on every hit of the table (as bmv2 does)
    if name == "meter":
        if method == "execute_meter":
            nargs(2)
            it = inst.type.args[0] if inst.type.args else BitT(32)       # legacy meter
            c._check_lvalue(args[1].value, ctx)
            dst_t = c.lvalue_type(args[1].value, ctx)
            if not isinstance(dst_t, BitT):
                raise _err(call, "meter color destination must be bit<N>")
            cur, _ = c.compile_expr(args[1].value, ctx)
            unit = c.info.meters[inst.fq_name].unit
            nb = "_ctx.packet_length" if unit == "bytes" else "1"
            c.assign_to(args[1].value,
                        f"{inst.py}.execute({arg(0, it if isinstance(it, BitT) else BitT(32))}, {nb}, _now(), {cur})", ctx)
            return "", VoidT()
    if c.arch == "tna" and name in ("Register", "RegisterAction") and method in ("read", "write", "execute") \
            and args:
        from .tofino_rules import check_register_index
        check_register_index(c, call, f"{name}.{method}", args[0].value, ctx)
    if name == "Register":
        vt, it = inst.type.args
        idx_t = it if isinstance(it, BitT) else BitT(32)
        if method == "read":
            nargs(1)
            return f"_reg_exec({inst.py}, {arg(0, idx_t)})", vt
        if method == "write":
            nargs(2)
            w.line(f"_reg_write({inst.py}, {arg(0, idx_t)}, {arg(1, vt)})")
            return "", VoidT()
    if name == "RegisterAction":
        if method == "execute":
            nargs(1)
            reg = inst.params["register"]
            it = reg.type.args[1]
            idx_t = it if isinstance(it, BitT) else BitT(32)
            return _inline_register_action(c, inst, arg(0, idx_t), ctx), inst.params["rv_type"]
    if name == "Hash":
        if method == "get":
            nargs(1)
            fields = _field_list(c, args[0].value, ctx)
            return f"{inst.py}.get({fields})", BitT(inst.type.args[0].width)
    if name == "Random":
        if method == "get":
            nargs(0)
            wt = inst.type.args[0]
            return f"_rng.getrandbits({wt.width})", wt
    if name == "Checksum":
        if method == "update":
            nargs(1, 2)
            return f"_csum16({_field_bytes(c, args[0].value, ctx)})", BitT(16)
        if method in ("add", "subtract", "verify", "get"):
            raise _err(call, f"Checksum.{method} is not supported by p4sim (only update() in the deparser)")
    if name == "Resubmit":
        if method == "emit":
            nargs(0, 1)
            data = _field_list(c, args[0].value, ctx) if args else "()"
            w.line(f"_ctx.resubmit_field_list = {data}")
            return "", VoidT()
    if name == "Mirror":
        if method == "emit":
            nargs(1, 2)
            sess = arg(0, BitT(10))
            data = _field_list(c, args[1].value, ctx) if len(args) > 1 else "()"
            w.line(f"_ctx.clone_session = {sess}")
            w.line(f"_ctx.clone_field_list = {data}")
            return "", VoidT()
    if name == "Digest":
        if method == "pack":
            nargs(1)
            dt = inst.type.args[0]
            code = c.expr_as(args[0].value, dt, ctx)
            w.line(f"_ctx.digests.append(({dt.name!r}, {code}.copy()))")
            return "", VoidT()
    raise _err(call, f"{name} has no method '{method}' supported by p4sim")


# Registers are read and written inline on their value lists (bound as <py>_values and
# <py>_size by the Switch): a method call per access dominated the aggregation programs.
# An index out of range reads the destination's current value and skips writes (bmv2).
def _register_read(c: "Compiler", py: str, index: str, current: str, w) -> str:
    i = _index_local(c, index, w)
    return f"({py}_values[{i}] if {i} < {py}_size else {current})"


def _register_write(c: "Compiler", py: str, index: str, value: str, w) -> None:
    i = _index_local(c, index, w)
    w.line(f"if {i} < {py}_size: {py}_values[{i}] = {value}")


def _index_local(c: "Compiler", index: str, w) -> str:
    if index.isidentifier() or index.isdigit():
        return index
    i = c.fresh("ix")
    w.line(f"{i} = {index}")
    return i


def _emit(c: "Compiler", code: str, t: P4Type, out: str, w, node) -> None:
    if isinstance(t, StructT) and t.is_header:
        h = c.fresh("e")
        w.line(f"{h} = {code}")
        w.line(f"if {h}._v: {out}.append({h}.pack())")
    elif isinstance(t, StructT):
        for n, ft in t.fields:
            _emit(c, f"{code}.{n}", ft, out, w, node)
    elif isinstance(t, StackT):
        for i in range(t.size):
            _emit(c, f"{code}.items[{i}]", t.element, out, w, node)
    else:
        raise _err(node, f"emit needs a header, header union, stack or struct, got {t}")


def _field_parts(c: "Compiler", e: ast.Expr, ctx: "BodyCtx",
                 varbit: bool = False) -> list[tuple[str, int | str]]:
    """A P4 field list as (non-negative value code, width) pairs, MSB first. With ``varbit``,
    a varbit field is (value code, width code): its current bits (hash and checksum inputs)."""
    parts: list[tuple[str, int | str]] = []

    def add(code: str, t: P4Type, node) -> None:
        if isinstance(t, VarbitT) and varbit:
            tmp = c.fresh("vb")
            ctx.w.line(f"{tmp} = {code}")
            parts.append((f"{tmp}[1]", f"{tmp}[0]"))
        elif isinstance(t, BitT):
            parts.append((f"({code} & {t.mask})" if t.signed else code, t.width))
        elif isinstance(t, BoolT):
            parts.append((f"int({code})", 1))
        elif isinstance(t, EnumT) and t.underlying is not None:
            parts.append((f"({code} & {t.underlying.mask})", t.underlying.width))
        elif isinstance(t, StructT):
            for n, ft in t.fields:
                add(f"{code}.{n}", ft, node)
        elif isinstance(t, InfIntT):
            raise _err(node, "field list values need a fixed width; cast the constant")
        else:
            raise _err(node, f"cannot hash or serialize a value of type {t}")

    if isinstance(e, ast.ListExpr):
        for item in e.items:
            code, t = c.compile_expr(item, ctx)
            add(code, t, item)
    else:
        code, t = c.compile_expr(e, ctx)
        add(code, t, e)
    return parts


def _field_list(c: "Compiler", e: ast.Expr, ctx: "BodyCtx") -> str:
    """A P4 field list as a Python tuple of (value, width) pairs, MSB first."""
    return "(" + "".join(f"({v}, {wd}), " for v, wd in _field_parts(c, e, ctx)) + ")"


def _field_bytes(c: "Compiler", e: ast.Expr, ctx: "BodyCtx") -> str:
    """A P4 field list serialized as bmv2 hashes it: fields back to back, MSB first, the end
    zero-padded to a byte (hashes.pack_fields), built as one integer expression."""
    parts = _field_parts(c, e, ctx, varbit=True)
    if any(isinstance(wd, str) for _, wd in parts):     # a varbit field: width known at run time
        return "_pack_fields((" + "".join(f"({v}, {wd}), " for v, wd in parts) + "))"
    total = sum(wd for _, wd in parts)
    nbytes = (total + 7) // 8
    shift = nbytes * 8
    terms = []
    for v, wd in parts:
        shift -= wd
        terms.append(f"({v} << {shift})" if shift else v)
    return f"({' | '.join(terms) or '0'}).to_bytes({nbytes}, 'big')"


# ============================================================================ extern functions
_V1_HASH_ALGOS = {"crc32": "crc32", "crc32_custom": "crc32", "crc16": "crc16", "crc16_custom": "crc16",
                  "random": "random", "identity": "identity", "csum16": "csum16", "xor16": "xor16"}


def _algo(c: "Compiler", e: ast.Expr, ctx: "BodyCtx", node) -> str:
    if isinstance(e, (ast.TypeMember, ast.Member)):
        m = e.member
        if m in _V1_HASH_ALGOS:
            return _V1_HASH_ALGOS[m]
    raise _err(node, "hash algorithm must be a HashAlgorithm member")


def compile_extern_function(c: "Compiler", name: str, protos: list[ast.FunctionProto], call: ast.Call,
                            ctx: "BodyCtx", statement: bool) -> tuple[str, P4Type]:
    w = ctx.w
    args = call.args

    def need(n: int) -> None:
        if len(args) != n:
            raise _err(call, f"{name} takes {n} arguments, got {len(args)}")

    if name == "verify":
        need(2)
        if not ctx.in_parser:
            raise _err(call, "verify is only allowed in a parser")
        cond = c.expr_as(args[0].value, BoolT(), ctx)
        err = c.expr_as(args[1].value, c.error_type, ctx)
        w.line(f"if not {cond}: raise ParserReject({err}, off)")
        return "", VoidT()
    if name == "static_assert":
        ok = c.const_eval(args[0].value, ctx.scope)
        if not ok:
            msg = c.const_eval(args[1].value, ctx.scope) if len(args) > 1 else "static_assert failed"
            raise _err(call, f"static_assert: {msg}")
        return "True", BoolT()
    if name == "mark_to_drop":
        if len(args) == 1:
            sm, _ = c.compile_expr(args[0].value, ctx)
            w.line(f"{sm}.egress_spec = 511")
            w.line(f"{sm}.mcast_grp = 0")
        else:
            w.line("_ctx.std_meta.egress_spec = 511")
            w.line("_ctx.std_meta.mcast_grp = 0")
        return "", VoidT()
    if name == "hash":
        need(5)
        c._check_lvalue(args[0].value, ctx)
        ot = c.lvalue_type(args[0].value, ctx)
        if not isinstance(ot, BitT):
            raise _err(call, "hash result must be bit<N>")
        algo = _algo(c, args[1].value, ctx, call)
        base_code, bt = c.compile_expr(args[2].value, ctx)
        fields = _field_bytes(c, args[3].value, ctx)
        max_code, mt = c.compile_expr(args[4].value, ctx)
        c.assign_to(args[0].value, f"_v1hash({algo!r}, {fields}, {base_code}, {max_code}, {ot.width})", ctx)
        return "", VoidT()
    if name == "random":
        need(3)
        c._check_lvalue(args[0].value, ctx)
        ot = c.lvalue_type(args[0].value, ctx)
        lo = c.expr_as(args[1].value, ot, ctx)
        hi = c.expr_as(args[2].value, ot, ctx)
        c.assign_to(args[0].value, f"_random({lo}, {hi})", ctx)
        return "", VoidT()
    if name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                "update_checksum_with_payload"):
        need(4)
        cond = c.expr_as(args[0].value, BoolT(), ctx)
        fields = _field_bytes(c, args[1].value, ctx)
        algo = _algo(c, args[3].value, ctx, call)
        ct = c.lvalue_type(args[2].value, ctx)
        if not isinstance(ct, BitT):
            raise _err(call, "checksum field must be bit<N>")
        payload = "True" if name.endswith("_with_payload") else "False"
        value = f"_checksum({algo!r}, {fields}, {payload}, {ct.width})"
        if name.startswith("update"):
            c._check_lvalue(args[2].value, ctx)
            w.line(f"if {cond}:")
            with w.indent():
                c.assign_to(args[2].value, value, ctx)
        else:
            cur, _ = c.compile_expr(args[2].value, ctx)
            w.line(f"if {cond} and {value} != {cur}: _ctx.std_meta.checksum_error = 1")
        return "", VoidT()
    if name in ("clone3", "resubmit", "recirculate"):
        # declared (deprecated) by v1model.p4, but p4c's bmv2 back end converts none of them
        new_name = "clone_preserving_field_list" if name == "clone3" else f"{name}_preserving_field_list"
        raise _err(call, f"{name}: unknown extern function (p4c's bmv2 back end does not support "
                         f"the deprecated {name}; use {new_name} and @field_list)")
    if name in ("clone", "clone_preserving_field_list"):
        if name == "clone":
            need(2)
        else:
            need(3)
        ctype = args[0].value
        if not isinstance(ctype, (ast.TypeMember, ast.Member)) or ctype.member not in ("I2E", "E2E"):
            raise _err(call, "clone type must be CloneType.I2E or CloneType.E2E")
        expected = "ingress" if ctype.member == "I2E" else "egress"
        if ctx.prefix != c.block_prefixes.get(expected) and not ctx.prefix.startswith(c.block_prefixes.get(expected, "?") + "."):
            raise _err(call, f"CloneType.{ctype.member} clone must be called from the {expected} control")
        sess = c.expr_as(args[1].value, BitT(32), ctx)
        w.line(f"_ctx.clone_session = {sess}")
        w.line(f"_ctx.clone_type = {1 if ctype.member == 'I2E' else 2}")
        if name == "clone_preserving_field_list":
            fl = c.const_eval(args[2].value, ctx.scope)
            w.line(f"_ctx.clone_field_list = {fl}")
        else:
            w.line("_ctx.clone_field_list = None")
        return "", VoidT()
    if name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
        need(1)
        fl = c.const_eval(args[0].value, ctx.scope)
        attr = "resubmit_field_list" if name.startswith("resubmit") else "recirculate_field_list"
        w.line(f"_ctx.{attr} = {fl}")
        return "", VoidT()
    if name == "digest":
        need(2)
        if call.type_args:
            # digest<T>(receiver, {...}): the list initializes a T
            t = c.resolve_type(call.type_args[0], ctx.scope)
            if not isinstance(t, StructT):
                raise _err(call, f"digest<{t}>: the digest type must be a struct")
            code = c.expr_as(args[1].value, t, ctx)
        else:
            code, t = c.compile_expr(args[1].value, ctx)
            if isinstance(args[1].value, ast.ListExpr) or not isinstance(t, StructT):
                raise _err(call, "digest data must be a struct value, or give its type: digest<T>(receiver, {...})")
        _register_digest(c, t, call)
        w.line(f"_ctx.digests.append(({t.name!r}, {code}.copy()))")
        return "", VoidT()
    if name == "truncate":
        need(1)
        w.line(f"_ctx.truncate_length = {c.expr_as(args[0].value, BitT(32), ctx)}")
        return "", VoidT()
    if name in ("assert", "assume"):
        need(1)
        cond = c.expr_as(args[0].value, BoolT(), ctx)
        w.line(f"if not {cond}: raise DataplaneError({name + ' failed at ' + str(call.pos)!r})")
        return "", VoidT()
    if name == "log_msg":
        if not args:
            raise _err(call, "log_msg needs a message")
        msg = c.expr_as(args[0].value, c.resolve_type(ast.SimpleTypeRef("string"), ctx.scope), ctx)
        if len(args) > 1:
            data = _field_list(c, args[1].value, ctx)
            w.line(f"_ctx.logs.append(_fmt({msg}, {data}))")
        else:
            w.line(f"_ctx.logs.append({msg})")
        return "", VoidT()
    if name in ("max", "min"):
        need(2)
        a, ta = c.compile_expr(args[0].value, ctx)
        b, tb = c.compile_expr(args[1].value, ctx)
        t = c._unify(ta, tb, call)
        return f"{name}({c.coerce(a, ta, t, call)}, {c.coerce(b, tb, t, call)})", t
    if name == "port_metadata_unpack":
        # TNA: the 64-bit port metadata in front of the packet (Tofino 1), read into a header
        need(1)
        if not ctx.in_parser:
            raise _err(call, "port_metadata_unpack is only allowed in a parser")
        t = c.resolve_type(call.type_args[0], ctx.scope) if len(call.type_args) == 1 else None
        if not (isinstance(t, StructT) and t.is_header and t.width <= 64):
            raise _err(call, "port_metadata_unpack<T> needs a header type T of at most 64 bits")
        too_short = c.errors.index("PacketTooShort")
        tmp = c.fresh("pm")
        w.line(f"if off + 8 > blen: raise ParserReject({too_short}, off)")
        w.line(f"{tmp} = {t.py_class}()")
        w.line(f"{tmp}.unpack(int.from_bytes(buf[off:off + 8], 'big') >> {64 - t.width})")
        w.line("off += 8")
        return tmp, t
    if name in ("sizeInBits", "sizeInBytes"):
        need(1)
        _, t = c.compile_expr(args[0].value, ctx)
        if not (isinstance(t, StructT) and t.is_header):
            raise _err(call, f"{name} needs a header")
        return str(t.width if name == "sizeInBits" else t.width // 8), BitT(32)
    if name == "invalidate":
        raise _err(call, "invalidate() is not supported")
    raise _err(call, f"extern function {name} is not supported by p4sim")
