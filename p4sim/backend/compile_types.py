"""Compiler methods for top-level declarations, types and compile-time constants: structs,
headers and enums, the generated Python classes that hold them, type resolution and
constant evaluation. Mixed into :class:`p4sim.backend.compiler.Compiler`.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import CompileError
from ..frontend import ast
from ..frontend.types import (bit_width, BitT, BlockT, BoolT, DontCareT, EnumT, ErrorT, ExternT,
                              InfIntT, P4Type, same_type, StackT, StringT, StructT, TupleT,
                              TypeVar, VarbitT, VoidT)
from .codewriter import CodeWriter
from .context import (ActionRecord, Binding, BodyCtx, _err, _header_field_ok, _mentions_varbit,
                      _ReturnSignal, Scope)


class TypeDeclarations:
    """Declarations, types, constants (a mixin of Compiler; state set up there)."""

    def _declare_builtins(self) -> None:
        g = self.globals
        g.define("error", Binding("type", self.error_type))
        g.define("match_kind", Binding("type", self.match_kind_type))

    # ======================================================================== declarations
    def _declare_top(self, d: ast.Decl) -> None:
        g = self.globals
        if isinstance(d, ast.ErrorDecl):
            for m in d.members:
                if m in self.errors:
                    raise _err(d, f"error '{m}' declared twice")
                self.errors.append(m)
            return
        if isinstance(d, ast.MatchKindDecl):
            for m in d.members:
                self.match_kinds.append(m)
                g.define(m, Binding("match_kind", self.match_kind_type, value=m))
            return
        if d.name in g.names and not isinstance(d, (ast.ExternFunction, ast.ExternObject)):
            prev = g.names[d.name]
            if (isinstance(d, ast.TypedefDecl) and isinstance(prev.decl, ast.TypedefDecl)
                    and same_type(self.resolve_type(d.type_ref, g), prev.type)):
                return  # as p4c: e.g. `typedef bit<9> PortId_t;` again after v1model.p4
            if prev.kind not in ("extern_function",):
                raise _err(d, f"'{d.name}' is already declared")
        if isinstance(d, ast.StructLikeDecl):
            self._declare_struct(d)
        elif isinstance(d, ast.EnumDecl):
            self._declare_enum(d)
        elif isinstance(d, ast.TypedefDecl):
            if _mentions_varbit(d.type_ref):
                # rejected where it is used: programs declare such tuples without using them
                g.define(d.name, Binding("varbit_type", decl=d))
                return
            t = self.resolve_type(d.type_ref, g)
            g.define(d.name, Binding("type", t, decl=d))
        elif isinstance(d, ast.ConstDecl):
            t = self.resolve_type(d.type_ref, g)
            v = self.const_eval(d.value, g, t)
            g.define(d.name, Binding("const", t, py=repr(v), decl=d, value=v))
        elif isinstance(d, ast.ExternObject):
            g.define(d.name, Binding("type", ExternT(d, []), decl=d))
        elif isinstance(d, ast.ExternFunction):
            prev = g.names.get(d.name)
            if prev is not None and prev.kind == "extern_function":
                prev.decl.append(d.proto)
            else:
                g.define(d.name, Binding("extern_function", decl=[d.proto]))
        elif isinstance(d, ast.BlockTypeDecl):
            g.define(d.name, Binding("type", BlockT(d, d.kind), decl=d))
        elif isinstance(d, (ast.ParserDecl, ast.ControlDecl)):
            kind = "parser" if isinstance(d, ast.ParserDecl) else "control"
            if d.type_params:
                raise _err(d, f"generic {kind} declarations are not supported")
            g.define(d.name, Binding("type", BlockT(d, kind), decl=d))
        elif isinstance(d, ast.ActionDecl):
            g.define(d.name, Binding("action", decl=ActionRecord(d, self._fq("", d), g, "")))
        elif isinstance(d, ast.FunctionDecl):
            g.define(d.name, Binding("function", decl=d))
        elif isinstance(d, ast.Instantiation):
            tb = g.lookup(d.type_ref.name) if isinstance(d.type_ref, ast.NamedTypeRef) else None
            t = tb.type if tb is not None and tb.kind == "type" else None
            if isinstance(t, ExternT):
                t = self.resolve_type(d.type_ref, g)
                # a top-level extern instance (e.g. a register shared by ingress and egress):
                # one object, named as p4c names it (no control prefix)
                from . import externs
                ctx = BodyCtx(CodeWriter(), g, "control", "", _ReturnSignal("break"))
                inst = externs.declare_extern_instance(self, d, t, ctx)
                g.define(d.name, Binding("extern", inst.type, py=inst.py, decl=d, info=inst))
            else:
                g.define(d.name, Binding("instance", decl=d))
        else:
            raise _err(d, f"unsupported top-level declaration {type(d).__name__}")

    def _fq(self, prefix: str, d: ast.Decl) -> str:
        """Control-plane name: prefix.name, or the @name annotation (absolute if it starts with '.')."""
        a = ast.find_annotation(d.annotations, "name")
        local = d.name
        if a is not None:
            s = a.string_arg()
            if s is None:
                raise _err(a, "@name needs one string argument")
            if s.startswith("."):
                return s[1:]
            local = s
        return f"{prefix}.{local}" if prefix else local

    def _declare_struct(self, d: ast.StructLikeDecl) -> None:
        fields: list[tuple[str, P4Type]] = []
        t = StructT(d.kind, d.name, fields, d.annotations, pos=d.pos)
        self.globals.define(d.name, Binding("type", t, decl=d))
        seen = set()
        for f in d.fields:
            if f.name in seen:
                raise _err(f, f"field '{f.name}' declared twice in {d.name}")
            seen.add(f.name)
            ft = self.resolve_type(f.type_ref, self.globals)
            if isinstance(ft, VarbitT):
                if d.kind != "header":
                    raise _err(f, f"field '{f.name}': varbit fields are only supported in headers")
                if any(isinstance(t0, VarbitT) for _, t0 in fields):
                    raise _err(f, f"header {d.name} has more than one varbit field")
            elif d.kind == "header":
                if not _header_field_ok(ft):
                    raise _err(f, f"header field '{f.name}' has type {ft}; header fields must be "
                                  "bit<N>, int<N>, bool, a serializable enum, or a struct of "
                                  "those (varbit is not supported)")
            elif d.kind == "header_union":
                if not (isinstance(ft, StructT) and ft.is_header):
                    raise _err(f, f"header_union member '{f.name}' must be a header")
            fields.append((f.name, ft))
        if d.kind == "header" and t.varbit_field is not None and t.width % 8 != 0:
            raise _err(d, f"header {d.name}: its fixed fields are {t.width} bits; p4sim needs a "
                          "whole number of bytes besides the varbit field")
        if d.kind == "header" and t.width % 8 != 0:
            if any(ast.find_annotation(f.annotations, "flexible") for f in d.fields):
                # bf-p4c packs @flexible fields as it likes; p4sim keeps them in order, padded
                t.pad_bits = -t.width % 8
            else:
                raise _err(d, f"header {d.name} is {t.width} bits; headers must be a whole number of bytes")
        self.types[d.name] = t
        self._emit_struct_class(t)

    def _declare_enum(self, d: ast.EnumDecl) -> None:
        if d.underlying is not None:
            ut = self.resolve_type(d.underlying, self.globals)
            if not isinstance(ut, BitT):
                raise _err(d, "serializable enum must have a bit<N> or int<N> underlying type")
            values = {}
            for m, e in zip(d.members, d.values):
                values[m] = self.const_eval(e, self.globals, ut)
            t = EnumT(d.name, d.members, ut, values)
        else:
            t = EnumT(d.name, d.members)
        self.globals.define(d.name, Binding("type", t, decl=d))
        self.types[d.name] = t

    # ======================================================================== struct classes
    def _emit_struct_class(self, t: StructT) -> None:
        cls = self.unique_py(("H_" if t.is_header else "U_" if t.kind == "header_union" else "S_") + t.name)
        t.py_class = cls
        self.struct_classes[t.name] = cls
        w = self.w_types
        slots = [n for n, _ in t.fields] + (["_v"] if t.is_header else [])
        with w.at(t.pos):
            w.line(f"class {cls}:")
        with w.indent():
            w.line(f"__slots__ = {tuple(slots)!r}")
            w.line(f"p4_name = {t.name!r}")
            w.line(f"p4_kind = {t.kind!r}")
            w.line(f"p4_fields = {tuple(n for n, _ in t.fields)!r}")
            w.line("def __init__(self):")
            with w.indent():
                for n, ft in t.fields:
                    w.line(f"self.{n} = {self.default_value_code(ft)}")
                if t.is_header:
                    w.line("self._v = False")
            w.line("def copy(self):")
            with w.indent():
                w.line(f"c = {cls}.__new__({cls})")
                for n, ft in t.fields:
                    if isinstance(ft, (StructT, StackT)):
                        w.line(f"c.{n} = self.{n}.copy()")
                    else:
                        w.line(f"c.{n} = self.{n}")
                if t.is_header:
                    w.line("c._v = self._v")
                w.line("return c")
            if t.is_header and t.varbit_field is not None:
                self._emit_varbit_pack(t, w)
            elif t.is_header:
                nbytes = t.width // 8
                w.line(f"nbytes = {nbytes}")
                # pack/unpack: fields MSB first
                as_int = f"({self._pack_expr(t, 'self')}).to_bytes({nbytes}, 'big')"
                fmt = self._struct_format(t)
                leaves = ", ".join(path for path, _ in self._leaves(t, "self"))
                if fmt:
                    # every field a whole 1, 2, 4 or 8 bytes: one C call each way instead of a
                    # shift and mask per field on a wide int (values out of their field's range
                    # cannot be packed by struct: the int path then masks them, as before)
                    w.line(f"_st = _struct.Struct({fmt!r})")
                w.line("def pack(self):")
                with w.indent():
                    if fmt:
                        w.line("try:")
                        w.line(f"    return self._st.pack({leaves})")
                        w.line("except _struct.error:")
                        w.line(f"    return {as_int}")
                    else:
                        w.line(f"return {as_int}")
                w.line("def unpack(self, v):")
                with w.indent():
                    for line in self._unpack_lines(t, "self", "v"):
                        w.line(line)
                    w.line("self._v = True")
                w.line("def unpack_from(self, buf, off):")
                with w.indent():
                    if fmt:
                        w.line(f"({leaves},) = self._st.unpack_from(buf, off)")
                        w.line("self._v = True")
                    else:
                        w.line(f"self.unpack(int.from_bytes(buf[off:off + {nbytes}], 'big'))")
            # P4 `==` (spec 8.x; bmv2 Header/Stack compare): two invalid headers are equal,
            # valid headers and structs compare field by field.
            w.line("def p4_eq(self, o):")
            with w.indent():
                eqs = [f"self.{n}.p4_eq(o.{n})" if isinstance(ft, (StructT, StackT)) else f"self.{n} == o.{n}"
                       for n, ft in t.fields]
                fields_eq = " and ".join(eqs) or "True"
                if t.is_header:
                    w.line(f"return self._v == o._v and (not self._v or ({fields_eq}))")
                else:
                    w.line(f"return {fields_eq}")
            if t.kind == "header_union":
                w.line("def isValid(self):")
                with w.indent():
                    w.line("return " + (" or ".join(f"self.{n}._v" for n, _ in t.fields) or "False"))
        w.line("")

    def _emit_varbit_pack(self, t: StructT, w: CodeWriter) -> None:
        """pack()/unpack_var(x, vw) of a header with a varbit field (value (width, bits)): the
        fields after it sit at fixed offsets from the end, those before it move with vw."""
        leaves = self._leaves(t, "self")
        vb = next(i for i, (_, ft) in enumerate(leaves) if isinstance(ft, VarbitT))
        vpath = leaves[vb][0]

        def after(i: int) -> str:
            fixed = sum(bit_width(ft) for _, ft in leaves[i + 1:] if not isinstance(ft, VarbitT))
            return f"({fixed} + vw)" if i < vb else str(fixed)

        w.line(f"nbytes_fixed = {t.width // 8}")
        w.line("def pack(self):")
        with w.indent():
            w.line(f"vw, vv = {vpath}")
            parts = []
            for i, (path, ft) in enumerate(leaves):
                if i == vb:
                    parts.append(f"(vv << {after(i)})")
                    continue
                fw = bit_width(ft)
                v = f"int({path})" if isinstance(ft, BoolT) else f"({path} & {(1 << fw) - 1})"
                parts.append(f"({v} << {after(i)})")
            w.line(f"return ({' | '.join(parts)}).to_bytes(({t.width} + vw) // 8, 'big')")
        w.line("def unpack_var(self, x, vw):")
        with w.indent():
            for i, (path, ft) in enumerate(leaves):
                if i == vb:
                    w.line(f"{path} = (vw, (x >> {after(i)}) & ((1 << vw) - 1))")
                    continue
                fw = bit_width(ft)
                e = f"((x >> {after(i)}) & {(1 << fw) - 1})"
                if isinstance(ft, BoolT):
                    e = f"bool({e})"
                elif (isinstance(ft, BitT) and ft.signed) or (isinstance(ft, EnumT) and ft.underlying.signed):
                    half = 1 << (fw - 1)
                    e = f"(({e} ^ {half}) - {half})"
                w.line(f"{path} = {e}")
            w.line("self._v = True")

    @staticmethod
    def _leaves(t: StructT, obj: str) -> list[tuple[str, P4Type]]:
        """The scalar fields of a header (or a struct laid out like one), MSB first, with their
        access paths: a struct-typed header field contributes its own fields in order."""
        out: list[tuple[str, P4Type]] = []
        for n, ft in t.fields:
            if isinstance(ft, StructT) and ft.kind == "struct":
                out.extend(TypeDeclarations._leaves(ft, f"{obj}.{n}"))
            else:
                out.append((f"{obj}.{n}", ft))
        return out

    _STRUCT_CODES = {8: "b", 16: "h", 32: "i", 64: "q"}

    def _struct_format(self, t: StructT) -> str | None:
        """A ``struct`` format for the header's wire layout when every field is a bit<N> or
        int<N> of 8, 16, 32 or 64 bits; None otherwise."""
        codes = []
        for _, ft in self._leaves(t, "self"):
            if not isinstance(ft, BitT) or ft.width not in self._STRUCT_CODES:
                return None
            code = self._STRUCT_CODES[ft.width]
            codes.append(code if ft.signed else code.upper())
        return ">" + "".join(codes) if codes else None

    def _pack_expr(self, t: StructT, obj: str) -> str:
        parts = []
        shift = t.width
        for v, ft in self._leaves(t, obj):
            fw = bit_width(ft)
            shift -= fw
            if isinstance(ft, BoolT):
                v = f"int({v})"
            elif isinstance(ft, BitT) and ft.signed or isinstance(ft, EnumT) and ft.underlying.signed:
                v = f"({v} & {(1 << fw) - 1})"
            parts.append(f"({v} << {shift})" if shift else v)
        return " | ".join(parts) or "0"

    def _unpack_lines(self, t: StructT, obj: str, var: str) -> list[str]:
        lines = []
        shift = t.width
        for path, ft in self._leaves(t, obj):
            fw = bit_width(ft)
            shift -= fw
            mask = (1 << fw) - 1
            e = f"({var} >> {shift})" if shift else var
            if shift + fw < t.width:
                e = f"({e} & {mask})"
            if isinstance(ft, BoolT):
                e = f"bool({e})"
            elif (isinstance(ft, BitT) and ft.signed) or (isinstance(ft, EnumT) and ft.underlying.signed):
                half = 1 << (fw - 1)
                e = f"((({e}) ^ {half}) - {half})"
            lines.append(f"{path} = {e}")
        return lines

    def default_value_code(self, t: P4Type) -> str:
        if isinstance(t, BoolT):
            return "False"
        if isinstance(t, StructT):
            return f"{t.py_class}()"
        if isinstance(t, StackT):
            return f"Stack([{t.element.py_class}() for _ in range({t.size})])"
        if isinstance(t, EnumT):
            return str(t.value_of(t.members[0])) if not t.underlying else "0"
        if isinstance(t, StringT):
            return "''"
        if isinstance(t, VarbitT):
            return "(0, 0)"
        if isinstance(t, TupleT):
            return "(" + "".join(self.default_value_code(e) + ", " for e in t.elements) + ")"
        return "0"

    # ======================================================================== types
    def resolve_type(self, tr: ast.TypeRef, scope: Scope, type_vars: dict[str, P4Type] | None = None) -> P4Type:
        if isinstance(tr, ast.BitTypeRef):
            if tr.width is None:
                return BitT(1, tr.signed)
            w = self.const_eval(tr.width, scope, InfIntT())
            if not isinstance(w, int) or isinstance(w, bool) or w < (2 if tr.signed else 1) or w > 4096:
                raise _err(tr, f"invalid width {w} for {'int' if tr.signed else 'bit'}")
            return BitT(w, tr.signed)
        if isinstance(tr, ast.InfIntTypeRef):
            return InfIntT()
        if isinstance(tr, ast.VarbitTypeRef):
            w = self.const_eval(tr.width, scope, InfIntT())
            if not isinstance(w, int) or isinstance(w, bool) or w < 1 or w > 4096:
                raise _err(tr, f"invalid width {w} for varbit")
            return VarbitT(w)
        if isinstance(tr, ast.SimpleTypeRef):
            return {"bool": BoolT(), "error": self.error_type, "string": StringT(), "void": VoidT(),
                    "_": DontCareT()}[tr.kind]
        if isinstance(tr, ast.StackTypeRef):
            et = self.resolve_type(tr.element, scope, type_vars)
            if not isinstance(et, StructT) or et.kind == "struct":
                raise _err(tr, f"header stack elements must be headers or header unions, not {et}")
            n = self.const_eval(tr.size, scope, InfIntT())
            if not isinstance(n, int) or n <= 0:
                raise _err(tr, "header stack size must be a positive constant")
            return StackT(et, n)
        if isinstance(tr, ast.TupleTypeRef):
            return TupleT([self.resolve_type(e, scope, type_vars) for e in tr.elements])
        if isinstance(tr, ast.NamedTypeRef):
            if type_vars and tr.name in type_vars and not tr.args:
                return type_vars[tr.name]
            b = scope.lookup(tr.name)
            if b is not None and b.kind == "varbit_type":
                raise _err(tr, f"type '{tr.name}' contains varbit, which is not supported by p4sim")
            if b is None or b.kind != "type":
                raise _err(tr, f"unknown type '{tr.name}'")
            t = b.type
            if tr.args:
                if isinstance(t, ExternT):
                    args = [self.resolve_type(a, scope, type_vars) for a in tr.args]
                    if len(args) != len(t.decl.type_params):
                        raise _err(tr, f"{t.name} takes {len(t.decl.type_params)} type arguments, got {len(args)}")
                    return ExternT(t.decl, args)
                raise _err(tr, f"type '{tr.name}' is not generic")
            if isinstance(t, ExternT) and t.decl.type_params:
                return ExternT(t.decl, [TypeVar(p) for p in t.decl.type_params])
            return t
        raise _err(tr, f"unsupported type {type(tr).__name__}")

    # ======================================================================== constants
    def const_eval(self, e: ast.Expr, scope: Scope, expected: P4Type | None = None) -> Any:
        """Evaluate a compile-time constant expression (literals, consts, arithmetic)."""
        v, t = self._const(e, scope)
        if expected is not None and isinstance(expected, BitT) and isinstance(v, int) and not isinstance(v, bool):
            v = self._wrap(v, expected)
        return v

    def try_const(self, e: ast.Expr, scope: Scope) -> tuple[bool, Any, P4Type | None]:
        try:
            v, t = self._const(e, scope)
            return True, v, t
        except CompileError:
            return False, None, None

    @staticmethod
    def _wrap(v: int, t: BitT) -> int:
        v &= t.mask
        if t.signed and v >> (t.width - 1):
            v -= 1 << t.width
        return v

    def _const(self, e: ast.Expr, scope: Scope) -> tuple[Any, P4Type]:
        if isinstance(e, ast.IntLit):
            if e.width is not None:
                t = BitT(e.width, e.signed)
                return self._wrap(e.value, t), t
            return e.value, InfIntT()
        if isinstance(e, ast.BoolLit):
            return e.value, BoolT()
        if isinstance(e, ast.StringLit):
            return e.value, StringT()
        if isinstance(e, ast.Name):
            b = (self.globals if e.top_level else scope).lookup(e.name)
            if b is None:
                raise _err(e, f"unknown name '{e.name}'")
            if b.kind == "const":
                return b.value, b.type
            raise _err(e, f"'{e.name}' is not a compile-time constant")
        if isinstance(e, ast.TypeMember):
            t = self.resolve_type(e.type_ref, scope)
            if isinstance(t, EnumT):
                if e.member not in t.members:
                    raise _err(e, f"enum {t.name} has no member '{e.member}'")
                return t.value_of(e.member), t
            if isinstance(t, ErrorT):
                if e.member not in self.errors:
                    raise _err(e, f"unknown error '{e.member}'")
                return self.errors.index(e.member), t
            raise _err(e, f"'{t}' has no constant members")
        if isinstance(e, ast.UnaryOp):
            v, t = self._const(e.expr, scope)
            if e.op == "!":
                return (not v), t
            if e.op == "-":
                return self._fix(-v, t), t
            if e.op == "~":
                if isinstance(t, BitT):
                    return self._fix(~v, t), t
                raise _err(e, "~ needs an operand of fixed width")
            return v, t
        if isinstance(e, ast.Cast):
            v, t = self._const(e.expr, scope)
            tt = self.resolve_type(e.type_ref, scope)
            if isinstance(tt, BitT):
                return self._wrap(int(v), tt), tt
            if isinstance(tt, BoolT):
                return bool(v), tt
            if isinstance(tt, EnumT) and tt.underlying:
                return self._wrap(int(v), tt.underlying), tt
            return v, tt
        if isinstance(e, ast.BinOp):
            a, ta = self._const(e.left, scope)
            b, tb = self._const(e.right, scope)
            t = ta if isinstance(ta, BitT) else tb
            op = e.op
            if op not in ("<<", ">>", "++"):
                # an int literal takes the other operand's type first: 8w255 == -1 is true
                if isinstance(ta, BitT) and isinstance(tb, InfIntT):
                    b = self._wrap(b, ta)
                elif isinstance(tb, BitT) and isinstance(ta, InfIntT):
                    a = self._wrap(a, tb)
            if op in ("==", "!=", "<", ">", "<=", ">="):
                r = {"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
                return r, BoolT()
            if op == "&&":
                return bool(a and b), BoolT()
            if op == "||":
                return bool(a or b), BoolT()
            if op == "++":
                if not (isinstance(ta, BitT) and isinstance(tb, BitT)):
                    raise _err(e, "++ needs operands of fixed width")
                return (a & ta.mask) << tb.width | (b & tb.mask), BitT(ta.width + tb.width, ta.signed)
            if op in ("/", "%") and b == 0:
                raise _err(e, "division by zero in a constant expression")
            fn: dict[str, Callable[[int, int], int]] = {
                "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
                "/": lambda x, y: x // y, "%": lambda x, y: x % y, "&": lambda x, y: x & y,
                "|": lambda x, y: x | y, "^": lambda x, y: x ^ y, "<<": lambda x, y: x << y,
                ">>": lambda x, y: x >> y}
            if op in ("|+|", "|-|"):
                r = a + b if op == "|+|" else a - b
                if isinstance(t, BitT):
                    lo = -(1 << (t.width - 1)) if t.signed else 0
                    hi = (1 << (t.width - 1)) - 1 if t.signed else t.mask
                    r = max(lo, min(hi, r))
                return r, t
            if op in ("<<", ">>"):
                return self._fix(fn[op](a, b), ta), ta
            if op not in fn:
                raise _err(e, f"operator {op} is not allowed in a constant expression")
            return self._fix(fn[op](a, b), t), t
        if isinstance(e, ast.Conditional):
            c, _ = self._const(e.cond, scope)
            return self._const(e.then if c else e.otherwise, scope)
        if isinstance(e, ast.ListExpr):
            vals = [self._const(i, scope) for i in e.items]
            return tuple(v for v, _ in vals), TupleT([t for _, t in vals])
        raise _err(e, "expression is not a compile-time constant")

    def _fix(self, v: int, t: P4Type) -> int:
        return self._wrap(v, t) if isinstance(t, BitT) else v

    # ======================================================================== elaboration
