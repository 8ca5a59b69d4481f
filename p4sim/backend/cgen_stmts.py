"""The C generator's statements and expressions: the lowered Python ``ast`` of one function
body to C. Mixed into :class:`p4sim.backend.cgen._Gen`.
"""
from __future__ import annotations

import ast as pyast
from typing import Any

from ..runtime.rt import register_twice_message
from .cgen_common import (_ALGORITHMS, ARGS, _balanced, BUF, _c_string, _cls_of, ENTRY, HashSpec,
                          INT, MAX_INT_BITS, _may_raise, PKTIN, PKTOUT, RegisterSpec, RESULTS)


class StatementsC:
    """Statements and expressions to C (a mixin of cgen._Gen; state set up there)."""

    def w(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def ret_stmt(self) -> str:
        return "return 0;" if self.f.returns_value else "return;"

    def after_call(self) -> str:
        """What follows a call of a generated function: an error returns at once, an `exit`
        goes on to the enclosing handler."""
        return f"if (p4sw->exit_flag) {{ if (p4sw->exit_flag >= P4_RAISED) {self.ret_stmt()} {self.exit_jump()} }}"

    def exit_jump(self) -> str:
        if self.try_labels:
            self.used_labels.add(self.try_labels[-1])
            return f"goto {self.try_labels[-1]};"
        return "return 0;" if self.f.returns_value else "return;"

    def stmts(self, body: list[pyast.stmt], d: int) -> None:
        for s in body:
            self.stmt(s, d)

    def stmt(self, s: pyast.stmt, d: int) -> None:
        if isinstance(s, pyast.Pass):
            return
        if isinstance(s, pyast.Assign):
            self.assign(s, d)
        elif isinstance(s, pyast.AugAssign):
            op = self.binop_c(s.op, s)
            tgt = self.lvalue(s.target)
            self.w(d, f"{tgt} = {tgt} {op} {self.expr(s.value)};")
        elif isinstance(s, pyast.If):
            if _may_raise(s.test):
                test = self.tmp("t")
                self.w(d, f"int {test} = {self.cond(s.test)}; {self.after_raise()}")
                self.w(d, f"if ({test}) {{")
            else:
                self.w(d, f"if ({self.cond(s.test)}) {{")
            self.stmts(s.body, d + 1)
            if s.orelse:
                self.w(d, "} else {")
                self.stmts(s.orelse, d + 1)
            self.w(d, "}")
        elif isinstance(s, pyast.While):
            if not (isinstance(s.test, pyast.Constant) and s.test.value is True) or s.orelse:
                raise self.fail("a loop other than `while True`", s)
            self.w(d, "for (;;) {")
            self.stmts(s.body, d + 1)
            self.w(d, "}")
        elif isinstance(s, pyast.Break):
            self.w(d, "break;")
        elif isinstance(s, pyast.Continue):
            self.w(d, "continue;")
        elif isinstance(s, pyast.Return):
            if s.value is None:
                self.w(d, "return 0;" if self.f.returns_value else "return;")
            else:
                if isinstance(s.value, pyast.Tuple):
                    parts = [f"_results[{i}] = {self.expr(x)};" for i, x in enumerate(s.value.elts)]
                    self.w(d, "{ " + " ".join(parts) + " return; }")
                    return
                self.w(d, f"return {self.expr(s.value)};")
        elif isinstance(s, pyast.Try):
            self.try_stmt(s, d)
        elif isinstance(s, pyast.Raise):
            self.raise_stmt(s, d)
        elif isinstance(s, pyast.Expr):
            self.expr_stmt(s.value, d)
        else:
            raise self.fail(f"statement {type(s).__name__}", s)

    def try_stmt(self, s: pyast.Try, d: int) -> None:
        """``try: ... except ExitBlock: HANDLER`` -- an `exit` in the body jumps to the
        handler (the out/inout copy-out of the actions it leaves), which ends with a bare
        ``raise`` (the exit goes on) or not (the exit stops here)."""
        ok = (len(s.handlers) == 1 and not s.orelse and not s.finalbody
              and isinstance(s.handlers[0].type, pyast.Name) and s.handlers[0].type.id == "ExitBlock")
        if not ok:
            raise self.fail("exception handling other than `exit`", s)
        handler = [x for x in s.handlers[0].body if not isinstance(x, pyast.Pass)]
        reraise = bool(handler) and isinstance(handler[-1], pyast.Raise) and handler[-1].exc is None
        if reraise:
            handler = handler[:-1]
        if any(isinstance(n, pyast.Raise) and n.exc is None for x in handler for n in pyast.walk(x)):
            raise self.fail("a re-raise inside an exit handler", s)
        label = self.tmp("exit")
        done = self.tmp("done")
        self.try_labels.append(label)
        self.w(d, "{")
        self.stmts(s.body, d + 1)
        self.w(d, "}")
        self.try_labels.pop()
        if label not in self.used_labels:    # no `exit` inside: nothing to handle
            return
        self.w(d, f"goto {done};")
        self.w(d, f"{label}: p4sw->exit_flag = 0;")
        self.w(d, "{")
        self.stmts(handler, d + 1)
        if reraise:
            self.w(d + 1, f"{{ p4sw->exit_flag = P4_EXITING; {self.exit_jump()} }}")
        self.w(d, "}")
        self.w(d, f"{done}: ;")

    def raise_stmt(self, s: pyast.Raise, d: int) -> None:
        exc = s.exc
        name = exc.func.id if isinstance(exc, pyast.Call) and isinstance(exc.func, pyast.Name) else (
            exc.id if isinstance(exc, pyast.Name) else None)
        if name == "ExitBlock":
            self.w(d, f"{{ p4sw->exit_flag = P4_EXITING; {self.exit_jump()} }}")
            return
        if name == "ParserReject" and isinstance(exc, pyast.Call) and len(exc.args) == 2 \
                and (self.f.param_kinds or [None])[0] == PKTIN:
            # a parser or a sub-parser (packet_in first): the reject unwinds every parser up
            # to the pipeline, as the Python exception does
            pkt = self.f.params[0]  # type: ignore[attr-defined]
            self.w(d, f"{{ p4sw->rejected = 1; p4sw->reject_code = {self.expr(exc.args[0])}; "
                      f"{pkt}->off = (int64_t)({self.expr(exc.args[1])}); "
                      f"p4sw->exit_flag = P4_REJECT; {self.ret_stmt()} }}")
            return
        if name == "DataplaneError" and isinstance(exc, pyast.Call) and len(exc.args) == 1 \
                and isinstance(exc.args[0], pyast.Constant) and isinstance(exc.args[0].value, str):
            # the Python backend raises this out of process(): the C pipeline returns an error
            # and the caller raises the same DataplaneError
            self.w(d, self.raise_c(exc.args[0].value))
            return
        raise self.fail(f"raising {name or 'an exception'}", s)

    def raise_c(self, message: str) -> str:
        """C that raises a DataplaneError: the pipeline returns P4_ERROR and the runtime
        raises the error with this message, as the Python backend does at the same point."""
        return f"{{ p4sw->exit_flag = P4_RAISED; p4sw->error = {_c_string(message)}; {self.ret_stmt()} }}"

    def assign(self, s: pyast.Assign, d: int) -> None:
        self.assign_inner(s, d)
        tgt = s.targets[0]
        kind = self.kinds.get(tgt.id, "") if isinstance(tgt, pyast.Name) else ""
        if not kind.startswith(RESULTS) and any(
                isinstance(n, pyast.Call) and isinstance(n.func, pyast.Name) and n.func.id in self.funcs
                for n in pyast.walk(s.value)):
            self.w(d, self.after_call())
        elif _may_raise(s.value):
            self.w(d, self.after_raise())

    def after_raise(self) -> str:
        """What follows an expression that can raise a DataplaneError (the Python exception
        leaves at once: nothing after it may change state)."""
        return f"if (p4sw->exit_flag >= P4_RAISED) {self.ret_stmt()}"

    def assign_inner(self, s: pyast.Assign, d: int) -> None:
        tgt = s.targets[0]
        v = s.value
        if isinstance(tgt, pyast.Tuple):
            call = v
            assert isinstance(call, pyast.Call) and isinstance(call.func, pyast.Attribute)
            spec = self.tables[call.func.value.id]  # type: ignore[attr-defined]
            ai, args, entry = (e.id for e in tgt.elts)  # type: ignore[attr-defined]
            keys = call.args[0] if call.args else None
            if not isinstance(keys, pyast.Tuple) or len(keys.elts) != spec.nkeys:
                raise self.fail(f"table {spec.name}: unexpected key", s)
            if spec.nkeys:
                kv = ", ".join(f"(uint64_t)({self.expr(k)})" for k in keys.elts)
                self.w(d, f"{{ uint64_t _k[{spec.nkeys}] = {{{kv}}};")
                self.w(d + 1, f"{ai} = p4_table_lookup(&p4sw->tables[{spec.index}], _k, &{args}, &{entry}); }}")
            else:
                self.w(d, f"{ai} = p4_table_lookup(&p4sw->tables[{spec.index}], 0, &{args}, &{entry});")
            return
        if isinstance(tgt, pyast.Subscript):
            reg = self.register_of(tgt.value)
            if reg is None:
                raise self.fail("assignment to a subscript", s)
            ix = f"(int64_t)({self.expr(tgt.slice)})"
            if reg.struct_class:
                self.w(d, f"p4_sreg_store_{reg.index}(p4sw, {ix}, &{self.struct_expr(v)});")
            elif reg.wide:
                self.w(d, f"p4_reg_set128((uint64_t *)p4sw->regs[{reg.index}], {ix}, {self.expr(v)});")
            else:
                ct = "int64_t" if reg.signed else "uint64_t"
                self.w(d, f"(({ct} *)p4sw->regs[{reg.index}])[{ix}] = ({ct})({self.expr(v)});")
            return
        if isinstance(tgt, pyast.Name):
            kind = self.kinds.get(tgt.id, INT)
            if kind.startswith(RESULTS):
                call = self.call_generated(v)  # type: ignore[arg-type]
                self.w(d, f"{call[:-1]}, {tgt.id});")
                self.w(d, self.after_call())
                return
            if kind == BUF:
                self.w(d, f"{tgt.id} = {self.f.params[0]}->buf;")  # type: ignore[attr-defined]
                return
            if kind.startswith("ptr:"):
                self.w(d, f"{tgt.id} = &{self.struct_expr(v)};")
                return
            if kind.startswith("val:"):
                self.w(d, f"{tgt.id} = {self.struct_expr(v)};")
                return
            self.w(d, f"{tgt.id} = {self.expr(v)};")
            return
        if isinstance(tgt, pyast.Attribute) and isinstance(tgt.value, pyast.Name) and tgt.value.id == "_ctx":
            self.context_assign(tgt.attr, v, d)
            return
        if isinstance(tgt, pyast.Attribute):
            lv = self.lvalue(tgt)
            k = self.kind_of(tgt, self.kinds, for_local=False)
            if k.startswith("val:"):
                self.w(d, f"{lv} = {self.struct_expr(v)};")
            else:
                self.w(d, f"{lv} = {self.expr(v)};")
            return
        raise self.fail(f"assignment to {type(tgt).__name__}", s)

    def context_assign(self, attr: str, v: pyast.expr, d: int) -> None:
        """``_ctx.<attr> = ...``: what a tna Resubmit/Mirror emit() records for the pipeline
        (p4sim/runtime/tna.py packs the field lists with hashes.pack_fields; so does C)."""
        if self.arch == "tna" and attr == "resubmit_field_list":
            nbytes = self.fill_field_list(v, "p4sw->resubmit_data", d)
            self.resubmit_bytes = max(self.resubmit_bytes, nbytes)
            self.w(d, f"p4sw->resubmit_set = 1; p4sw->resubmit_len = {nbytes};")
            return
        if self.arch == "tna" and attr == "clone_field_list":
            nbytes = self.fill_field_list(v, "p4sw->mirror_data", d)
            self.mirror_bytes = max(self.mirror_bytes, nbytes)
            self.w(d, f"p4sw->mirror_len = {nbytes};")
            return
        if self.arch == "v1model" and attr == "truncate_length":
            # v1model truncate(): only the egress pass's value counts (a new context per pass)
            self.w(d, f"p4sw->truncate_length = (int64_t)({self.expr(v)});")
            return
        if self.arch == "tna" and attr == "clone_session":
            self.w(d, f"p4sw->clone_set = 1; p4sw->clone_session = (uint64_t)({self.expr(v)});")
            return
        raise self.fail(f"packet context attribute {attr} set", v)

    def claim(self, reg: RegisterSpec, d: int) -> None:
        """Tofino: a register's stateful ALU runs once per pass (switch.py's _claim)."""
        self.w(d, f"if (p4sw->claimed[{reg.index}]) {self.raise_c(register_twice_message(reg.name))}")
        self.w(d, f"p4sw->claimed[{reg.index}] = 1;")

    def register_object(self, e: pyast.expr, scalar: bool = False) -> RegisterSpec:
        """The register a runtime helper is called on (``scalar``: one of int cells)."""
        if isinstance(e, pyast.Name) and e.id in self.registers:
            reg = self.registers[e.id]
            if not (scalar and reg.struct_class):
                return reg
        raise self.fail(f"register argument `{pyast.unparse(e)[:60]}`", e)

    def register_load(self, reg: RegisterSpec, ix: str) -> str:
        """Cell ``ix`` (in range) of a register as an i128."""
        if reg.wide:
            v = f"p4_reg_get128((const uint64_t *)p4sw->regs[{reg.index}], {ix})"
            return f"p4_sext({v}, {reg.bitwidth})" if reg.signed else v
        ct = "int64_t" if reg.signed else "uint64_t"
        return f"((i128)(({ct} *)p4sw->regs[{reg.index}])[{ix}])"

    def register_store(self, reg: RegisterSpec, ix: str, value: str) -> str:
        """Register.write's store of ``value`` wrapped to the register's width (a statement)."""
        wrapped = f"((i128)((u128)({value}) & p4_mask({reg.bitwidth})))"
        if reg.signed:
            wrapped = f"p4_sext({wrapped}, {reg.bitwidth})"
        if reg.wide:
            return f"p4_reg_set128((uint64_t *)p4sw->regs[{reg.index}], {ix}, {wrapped});"
        ct = "int64_t" if reg.signed else "uint64_t"
        return f"(({ct} *)p4sw->regs[{reg.index}])[{ix}] = ({ct}){wrapped};"

    def field_list(self, e: pyast.expr) -> list[tuple[pyast.expr, int]]:
        """The (value, width) pairs of a generated field-list tuple."""
        if not isinstance(e, pyast.Tuple):
            raise self.fail(f"field list `{pyast.unparse(e)[:60]}`", e)
        out = []
        for item in e.elts:
            if not (isinstance(item, pyast.Tuple) and len(item.elts) == 2):
                raise self.fail(f"field list item `{pyast.unparse(item)[:60]}`", item)
            width = self.int_const(item.elts[1])
            if not 0 < width <= MAX_INT_BITS:
                raise self.fail(f"a field of {width} bits in a field list", item)
            out.append((item.elts[0], width))
        return out

    def fill_field_list(self, e: pyast.expr, buf: str, d: int) -> int:
        """Write hashes.pack_fields(<field list>) into the byte array ``buf`` (statements at
        depth d); returns its length in bytes."""
        setup, nbytes = self.pack_field_list(e, buf)
        self.w(d, "{ " + " ".join(setup) + " }")
        return nbytes

    def pack_field_list(self, e: pyast.expr, buf: str) -> tuple[list[str], int]:
        """C statements that fill ``buf`` as hashes.pack_fields does: the fields MSB first,
        each masked to its width, zero bits padding the end to a byte."""
        fields = self.field_list(e)
        nbits = sum(w for _, w in fields)
        nbytes = (nbits + 7) // 8
        shift = nbytes * 8 - nbits          # the padding, below the last field
        parts = [f"memset({buf}, 0, {max(nbytes, 1)});"]
        for value, width in reversed(fields):
            parts.append(f"p4_or_shifted({buf}, {nbytes}, (u128)({self.expr(value)}) & p4_mask({width}), "
                         f"{shift});")
            shift += width
        return parts, nbytes

    def expr_stmt(self, e: pyast.expr, d: int) -> None:
        if isinstance(e, pyast.Call):
            fn = e.func
            if isinstance(fn, pyast.Name) and fn.id == "_claim" and len(e.args) == 1:
                self.claim(self.register_object(e.args[0]), d)
                return
            if isinstance(fn, pyast.Name) and fn.id == "_reg_write" and len(e.args) == 3:
                # tna Register.write: claim, then Register.write (wraps to the width)
                reg = self.register_object(e.args[0], scalar=True)
                self.claim(reg, d)
                ix = f"(int64_t)({self.expr(e.args[1])})"
                self.w(d, f"if ({ix} < {reg.size}) {self.register_store(reg, ix, self.expr(e.args[2]))}")
                return
            if isinstance(fn, pyast.Name) and fn.id in self.funcs:
                self.w(d, f"{self.call_generated(e)};")
                self.w(d, self.after_call())
                return
            if isinstance(fn, pyast.Attribute) and fn.attr == "append":
                base = fn.value
                if (isinstance(base, pyast.Name) and self.kinds.get(base.id) == PKTOUT and len(e.args) == 1
                        and isinstance(e.args[0], pyast.Call) and isinstance(e.args[0].func, pyast.Attribute)
                        and e.args[0].func.attr == "pack"):
                    hk = self.kind_of(e.args[0].func.value, self.kinds, for_local=False)
                    cls = _cls_of(hk)
                    h = self.struct_expr(e.args[0].func.value)
                    self.w(d, f"pack_{cls}(&{h}, {base.id}->buf + {base.id}->len); "
                              f"{base.id}->len += NBYTES_{cls};")
                    return
            if isinstance(fn, pyast.Attribute) and fn.attr in ("unpack_from", "unpack"):
                cls = _cls_of(self.kind_of(fn.value, self.kinds, for_local=False))
                h = self.struct_expr(fn.value)
                if fn.attr == "unpack_from" and len(e.args) == 2:
                    self.w(d, f"unpack_{cls}(&{h}, {self.expr(e.args[0])} + (int64_t)({self.expr(e.args[1])}));")
                    return
                if fn.attr == "unpack" and len(e.args) == 1:
                    ptr = self.from_bytes_ptr(e.args[0])
                    if ptr is not None:
                        self.w(d, f"unpack_{cls}(&{h}, {ptr});")
                        return
            if (isinstance(fn, pyast.Attribute) and fn.attr == "count" and isinstance(fn.value, pyast.Name)
                    and fn.value.id.startswith("T_")):
                raise self.fail("direct counters", e)    # a table's counter, counted on a hit
        raise self.fail(f"statement `{pyast.unparse(e)[:60]}`", e)

    def call_generated(self, e: pyast.Call) -> str:
        callee = self.funcs[e.func.id]  # type: ignore[attr-defined]
        args = ["p4sw"]
        for a, k in zip(e.args, callee.param_kinds or []):
            if k.startswith("ptr:"):
                args.append(f"&{self.struct_expr(a)}")
            elif k in (PKTIN, PKTOUT):
                args.append(self.expr_name(a))
            else:
                args.append(self.expr(a))
        return f"{callee.name}({', '.join(args)})"

    def expr_name(self, a: pyast.expr) -> str:
        if not isinstance(a, pyast.Name):
            raise self.fail("a packet argument that is not a name", a)
        return a.id

    # ------------------------------------------------------------------ expressions
    def register_of(self, e: pyast.expr) -> RegisterSpec | None:
        if isinstance(e, pyast.Name) and e.id.endswith("_values"):
            return self.registers.get(e.id[: -len("_values")])
        return None

    def struct_expr(self, e: pyast.expr) -> str:
        """A struct-typed expression as a C lvalue/rvalue of the struct type."""
        if isinstance(e, pyast.Name):
            k = self.kinds.get(e.id, "")
            if k.startswith("ptr:"):
                return f"(*{e.id})"
            if k.startswith("val:"):
                return e.id
            raise self.fail(f"struct value {e.id}", e)
        if isinstance(e, pyast.Attribute):
            if isinstance(e.value, pyast.Name) and e.value.id == "_ctx" and e.attr == "std_meta":
                self.used_classes.add(self.sm_class())
                return f"(*({self.sm_class()} *)p4sw->cur_sm)"
            return f"{self.struct_expr(e.value)}.{e.attr}"
        if isinstance(e, pyast.Subscript):
            reg = self.register_of(e.value)
            if reg is not None and reg.struct_class:
                return f"p4_sreg_load_{reg.index}(p4sw, (int64_t)({self.expr(e.slice)}))"
        if isinstance(e, pyast.Call):
            if isinstance(e.func, pyast.Name) and e.func.id in self.classes and not e.args:
                self.used_classes.add(e.func.id)
                return f"(({e.func.id}){{0}})"
            if isinstance(e.func, pyast.Attribute) and e.func.attr == "copy" and not e.args:
                return self.struct_expr(e.func.value)
        raise self.fail(f"struct expression `{pyast.unparse(e)[:60]}`", e)

    def lvalue(self, e: pyast.expr) -> str:
        if isinstance(e, pyast.Name):
            return e.id
        if isinstance(e, pyast.Attribute):
            if isinstance(e.value, pyast.Name) and self.kinds.get(e.value.id) == PKTIN:
                if e.attr == "off":
                    return f"{e.value.id}->off"
                raise self.fail(f"packet attribute {e.attr}", e)
            return f"{self.struct_expr(e.value)}.{e.attr}"
        raise self.fail(f"assignment target `{pyast.unparse(e)[:60]}`", e)

    def cond(self, e: pyast.expr) -> str:
        c = self.expr(e)
        return c[1:-1] if c.startswith("(") and c.endswith(")") and _balanced(c[1:-1]) else c

    def const(self, v: Any, node: Any) -> str:
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, int):
            if -(1 << 62) < v < (1 << 62):
                return f"((i128){v}LL)" if abs(v) >= (1 << 31) else str(v)
            if -(1 << MAX_INT_BITS) <= v < (1 << MAX_INT_BITS):
                neg = v < 0
                a = -v if neg else v
                s = f"(((i128){a >> 64}ULL << 64) | (i128){a & ((1 << 64) - 1)}ULL)"
                return f"(-{s})" if neg else s
            raise self.fail(f"constant {v} wider than {MAX_INT_BITS} bits", node)
        raise self.fail(f"constant {v!r}", node)

    def binop_c(self, op: pyast.operator, node: Any) -> str:
        m = {pyast.Add: "+", pyast.Sub: "-", pyast.Mult: "*", pyast.BitAnd: "&", pyast.BitOr: "|",
             pyast.BitXor: "^", pyast.LShift: "<<", pyast.RShift: ">>"}
        c = m.get(type(op))
        if c is None:
            raise self.fail(f"operator {type(op).__name__}", node)
        return c

    def expr(self, e: pyast.expr) -> str:
        if isinstance(e, pyast.Constant):
            return self.const(e.value, e)
        if isinstance(e, pyast.Name):
            k = self.kinds.get(e.id)
            if k is None:
                reg_size = e.id.endswith("_size") and self.registers.get(e.id[: -len("_size")])
                if reg_size:
                    return f"((i128){reg_size.size}LL)"
                raise self.fail(f"use of `{e.id}` (an extern or object the C backend lacks)", e)
            if k not in (INT, ENTRY, BUF):
                raise self.fail(f"`{e.id}` used as a value", e)
            return e.id
        if isinstance(e, pyast.Attribute):
            if isinstance(e.value, pyast.Name):
                if self.kinds.get(e.value.id) == PKTIN:
                    if e.attr == "off":
                        return f"{e.value.id}->off"
                    if e.attr == "buf":
                        return f"{e.value.id}->buf"
                if e.value.id == "_ctx" and e.attr == "packet_length":
                    return "((i128)p4sw->packet_length)"
                if e.value.id == "_ctx":
                    raise self.fail(f"packet context attribute {e.attr}", e)
            return f"((i128){self.struct_expr(e.value)}.{e.attr})"
        if isinstance(e, pyast.BinOp):
            a, b = self.expr(e.left), self.expr(e.right)
            if isinstance(e.op, pyast.LShift):
                if isinstance(e.right, pyast.Constant) and isinstance(e.right.value, int) and 0 <= e.right.value < 127:
                    return f"((i128)((u128)({a}) << {e.right.value}))"
                return f"p4_shl({a}, {b})"
            if isinstance(e.op, pyast.RShift):
                if isinstance(e.right, pyast.Constant) and isinstance(e.right.value, int) and 0 <= e.right.value < 127:
                    return f"(({a}) >> {e.right.value})"
                return f"p4_shr({a}, {b})"
            if isinstance(e.op, (pyast.Add, pyast.Sub, pyast.Mult)):
                # unsigned arithmetic: wrap-around instead of signed overflow (the Python code
                # masks every such result, so only the low bits matter there)
                return f"((i128)((u128)({a}) {self.binop_c(e.op, e)} (u128)({b})))"
            return f"({a} {self.binop_c(e.op, e)} {b})"
        if isinstance(e, pyast.UnaryOp):
            a = self.expr(e.operand)
            if isinstance(e.op, pyast.Not):
                return f"(!{a})"
            if isinstance(e.op, pyast.Invert):
                return f"(~{a})"
            if isinstance(e.op, pyast.USub):
                return f"((i128)(-(u128)({a})))"
            if isinstance(e.op, pyast.UAdd):
                return a
        if isinstance(e, pyast.BoolOp):
            op = " && " if isinstance(e.op, pyast.And) else " || "
            return "(" + op.join(self.expr(v) for v in e.values) + ")"
        if isinstance(e, pyast.Compare):
            return self.compare(e)
        if isinstance(e, pyast.IfExp):
            return f"({self.expr(e.test)} ? {self.expr(e.body)} : {self.expr(e.orelse)})"
        if isinstance(e, pyast.NamedExpr):
            return f"({e.target.id} = {self.expr(e.value)})"
        if isinstance(e, pyast.Subscript):
            return self.subscript(e)
        if isinstance(e, pyast.Call):
            return self.call_expr(e)
        raise self.fail(f"expression `{pyast.unparse(e)[:60]}`", e)

    def compare(self, e: pyast.Compare) -> str:
        ops = {pyast.Eq: "==", pyast.NotEq: "!=", pyast.Lt: "<", pyast.LtE: "<=", pyast.Gt: ">",
               pyast.GtE: ">="}
        parts = []
        left = e.left
        for op, right in zip(e.ops, e.comparators):
            if isinstance(op, (pyast.Is, pyast.IsNot)):
                if not (isinstance(right, pyast.Constant) and right.value is None
                        and isinstance(left, pyast.Name) and self.kinds.get(left.id) == ENTRY):
                    raise self.fail("an identity comparison", e)
                parts.append(f"({left.id} {'<' if isinstance(op, pyast.Is) else '>='} 0)")
            else:
                c = ops.get(type(op))
                if c is None:
                    raise self.fail(f"comparison {type(op).__name__}", e)
                parts.append(f"({self.expr(left)} {c} {self.expr(right)})")
            left = right
        return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"

    def subscript(self, e: pyast.Subscript) -> str:
        reg = self.register_of(e.value)
        if reg is not None and not reg.struct_class:
            return self.register_load(reg, f"(int64_t)({self.expr(e.slice)})")
        if isinstance(e.value, pyast.Name) and self.kinds.get(e.value.id, "").startswith(RESULTS):
            return f"{e.value.id}[{self.expr(e.slice)}]"
        if isinstance(e.value, pyast.Name) and self.kinds.get(e.value.id) == ARGS:
            return f"((i128){e.value.id}[{self.expr(e.slice)}])"
        if isinstance(e.value, pyast.Attribute) and e.value.attr == "items":
            raise self.fail("header stacks", e)          # the generated stack's element list
        raise self.fail(f"subscript `{pyast.unparse(e)[:60]}`", e)

    def from_bytes_ptr(self, e: pyast.expr) -> str | None:
        """``int.from_bytes(buf[a:b], 'big')`` → the C pointer to byte a (None if not that)."""
        if (isinstance(e, pyast.Call) and isinstance(e.func, pyast.Attribute) and e.func.attr == "from_bytes"
                and isinstance(e.func.value, pyast.Name) and e.func.value.id == "int" and len(e.args) == 2
                and isinstance(e.args[0], pyast.Subscript) and isinstance(e.args[0].slice, pyast.Slice)):
            sl = e.args[0].slice
            return f"{self.expr(e.args[0].value)} + (int64_t)({self.expr(sl.lower)})"
        return None

    def call_expr(self, e: pyast.Call) -> str:
        fn = e.func
        if isinstance(fn, pyast.Name):
            if fn.id in self.funcs:
                callee = self.funcs[fn.id]
                if not callee.returns_value:
                    raise self.fail(f"value of {fn.id}", e)
                return self.call_generated(e)
            if fn.id == "len" and len(e.args) == 1 and isinstance(e.args[0], pyast.Name) \
                    and self.kinds.get(e.args[0].id) == BUF:
                return f"((i128){self.f.params[0]}->len)"  # type: ignore[attr-defined]
            if fn.id == "int" and len(e.args) == 1:
                return self.expr(e.args[0])
            if fn.id == "bool" and len(e.args) == 1:
                return f"({self.expr(e.args[0])} != 0)"
            if fn.id == "_v1hash" and len(e.args) == 5:
                algo = self.algorithm(e.args[0], e)
                return self.with_bytes(e.args[1], lambda b, n: (
                    f"p4_v1hash({algo}, {b}, {n}, {self.expr(e.args[2])}, {self.expr(e.args[3])}, "
                    f"{self.int_const(e.args[4])})"))
            if fn.id == "_checksum" and len(e.args) == 4:
                algo = self.algorithm(e.args[0], e)
                payload = self.bool_const(e.args[2])
                width = self.int_const(e.args[3])
                return self.with_bytes(e.args[1], lambda b, n: (
                    f"p4_checksum(p4sw, {algo}, {b}, {n}, {int(payload)}, {width})"))
            if fn.id == "_reg_exec" and len(e.args) == 2:
                # tna Register.read: claim, then Register.read (0 out of range)
                reg = self.register_object(e.args[0], scalar=True)
                ix = self.tmp("ix")
                claimed = f"p4sw->claimed[{reg.index}]"
                fail = (f"if ({claimed}) {{ p4sw->exit_flag = P4_RAISED; p4sw->error = "
                        f"{_c_string(register_twice_message(reg.name))}; }}")
                return (f"({{ int64_t {ix} = (int64_t)({self.expr(e.args[1])}); {fail} {claimed} = 1; "
                        f"{ix} < {reg.size} ? {self.register_load(reg, ix)} : (i128)0; }})")
            if fn.id == "_csum16" and len(e.args) == 1:
                return self.with_bytes(e.args[0], lambda b, n: f"((i128)p4_hash(3, {b}, {n}))")
            if fn.id in ("_div", "_mod") and len(e.args) == 2 and isinstance(e.args[1], pyast.Constant) \
                    and isinstance(e.args[1].value, int) and e.args[1].value > 0:
                return f"p4_py{fn.id[1:]}({self.expr(e.args[0])}, {self.expr(e.args[1])})"
        if isinstance(fn, pyast.Attribute):
            if fn.attr == "get" and isinstance(fn.value, pyast.Name) and fn.value.id in self.hashes \
                    and len(e.args) == 1:
                return self.tna_hash(self.hashes[fn.value.id], e.args[0])
            if fn.attr == "isValid" and not e.args:
                return f"((i128){self.struct_expr(fn.value)}._v)"
            if fn.attr == "p4_eq" and len(e.args) == 1:
                cls = _cls_of(self.kind_of(fn.value, self.kinds, for_local=False))
                return f"eq_{cls}(&{self.struct_expr(fn.value)}, &{self.struct_expr(e.args[0])})"
            ptr = self.from_bytes_ptr(e)
            if ptr is not None:
                n = self.slice_len(e.args[0].slice, e)  # type: ignore[attr-defined]
                return f"((i128)p4_load_be({ptr}, {n}))"
        raise self.fail(f"call `{pyast.unparse(e)[:60]}`", e)

    def tna_hash(self, spec: HashSpec, fields: pyast.expr) -> str:
        """``HS_x.get(((value, width), ...))`` as switch.py's _TnaHash.get computes it."""
        if spec.kind == "identity":
            # the fields concatenated (unmasked, as the Python code does), then truncated
            acc = "(u128)0"
            for value, width in self.field_list(fields):
                acc = f"((({acc}) << {width}) | (u128)({self.expr(value)}))"
            return f"((i128)(({acc}) & p4_mask({spec.out_width})))"
        buf = self.tmp("hb")
        setup, nbytes = self.pack_field_list(fields, f"{buf}")
        return (f"({{ uint8_t {buf}[{max(nbytes, 1)}]; {' '.join(setup)} "
                f"(i128)p4_tna_hash_{spec.index}({buf}, {nbytes}); }})")

    def slice_len(self, sl: pyast.Slice, node: Any) -> int:
        # buf[off:off + N]: N must be a constant number of bytes that fits an __int128
        up = sl.upper
        if (isinstance(up, pyast.BinOp) and isinstance(up.op, pyast.Add) and isinstance(up.right, pyast.Constant)
                and pyast.dump(up.left) == pyast.dump(sl.lower) and isinstance(up.right.value, int)
                and 0 < up.right.value <= 15):
            return up.right.value
        raise self.fail("a lookahead wider than 15 bytes", node)

    def algorithm(self, e: pyast.expr, node: Any) -> int:
        if isinstance(e, pyast.Constant) and e.value in _ALGORITHMS:
            return _ALGORITHMS[e.value]
        raise self.fail(f"hash algorithm {pyast.unparse(e)}", node)

    def int_const(self, e: pyast.expr) -> int:
        if isinstance(e, pyast.Constant) and isinstance(e.value, int):
            return e.value
        raise self.fail("a non-constant width", e)

    def bool_const(self, e: pyast.expr) -> bool:
        if isinstance(e, pyast.Constant) and isinstance(e.value, bool):
            return e.value
        raise self.fail("a non-constant flag", e)

    def with_bytes(self, e: pyast.expr, use: Any) -> str:
        """``(terms).to_bytes(n, 'big')`` → a statement expression that fills a byte buffer
        with each term at its bit position (terms are ORed, as the Python ints are)."""
        if not (isinstance(e, pyast.Call) and isinstance(e.func, pyast.Attribute) and e.func.attr == "to_bytes"
                and len(e.args) == 2):
            raise self.fail(f"field list `{pyast.unparse(e)[:60]}`", e)
        n = self.int_const(e.args[0])
        terms: list[tuple[pyast.expr, int]] = []

        def flatten(x: pyast.expr, shift: int) -> None:
            if isinstance(x, pyast.BinOp) and isinstance(x.op, pyast.BitOr):
                flatten(x.left, shift)
                flatten(x.right, shift)
            elif (isinstance(x, pyast.BinOp) and isinstance(x.op, pyast.LShift)
                  and isinstance(x.right, pyast.Constant) and isinstance(x.right.value, int)):
                flatten(x.left, shift + x.right.value)
            else:
                terms.append((x, shift))

        flatten(e.func.value, 0)
        buf = self.tmp("b")
        parts = [f"uint8_t {buf}[{max(n, 1)}]; memset({buf}, 0, {max(n, 1)});"]
        for x, shift in terms:
            if isinstance(x, pyast.Constant) and x.value == 0:
                continue
            parts.append(f"p4_or_shifted({buf}, {n}, (u128)({self.expr(x)}), {shift});")
        return "({ " + " ".join(parts) + " " + use(buf, n) + "; })"
