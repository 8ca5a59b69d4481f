"""Checks a parsed P4_16 program and compiles it into Python source.

One pass does name resolution, type checking and code generation, walking the program from
its ``main`` package instance (only instantiated blocks are compiled, as in p4c's mid-end).
Actions are inlined at their call sites and at table dispatch, so a control's ``apply`` is one
Python function whose P4 locals are Python locals. Anything we cannot execute faithfully is a
:class:`CompileError` at load time, with the position of the construct.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable

from ..errors import CompileError
from ..frontend import ast
from ..frontend.types import (ActionRunT, ApplyResultT, BitT, BlockT, BoolT, DontCareT, EnumT,
                              ErrorT, ExternT, InfIntT, MatchKindT, P4Type, StackT, StringT,
                              StructT, TableT, TupleT, TypeVar, VoidT, bit_width, same_type, VarbitT)
from ..runtime import model
from .codewriter import CodeWriter

# ---------------------------------------------------------------------------- bindings


@dataclass
class Binding:
    kind: str          # value | const | type | action | table | extern | instance | function
    #                    | extern_function | packet_in | packet_out | error | match_kind
    #                    | varbit_type (a typedef rejected where it is used)
    type: P4Type | None = None
    py: str = ""       # Python expression that reads the value
    decl: Any = None
    value: Any = None  # compile-time value for consts
    info: Any = None   # extra: table record, extern record, ...
    writable: bool = True


class Scope:
    def __init__(self, parent: "Scope | None" = None) -> None:
        self.parent = parent
        self.names: dict[str, Binding] = {}

    def lookup(self, name: str) -> Binding | None:
        s: Scope | None = self
        while s is not None:
            b = s.names.get(name)
            if b is not None:
                return b
            s = s.parent
        return None

    def define(self, name: str, b: Binding) -> None:
        self.names[name] = b


@dataclass
class RuntimeObject:
    """An object the Switch must create and bind to ``py_name`` in the generated module."""
    py_name: str
    kind: str          # table | register | counter | direct_counter | meter | hash | random | ...
    params: dict[str, Any]


@dataclass
class ActionRecord:
    decl: ast.ActionDecl
    fq_name: str
    scope: Scope       # where the action was declared (control scope)
    prefix: str


@dataclass
class TableRecord:
    decl: ast.TableDecl
    info: model.TableInfo
    py: str
    actions: list[ActionRecord]
    key_exprs: list[ast.Expr]
    key_types: list[P4Type]
    direct_counter_py: str | None = None
    direct_meter_py: str | None = None
    # per action: the arguments its directional parameters are bound to in `actions = {...}`
    bound_args: list[list[ast.Argument]] = field(default_factory=list)


@dataclass
class ExternInstance:
    decl: ast.Instantiation
    type: ExternT
    py: str
    fq_name: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class CompiledBlock:
    kind: str          # parser | control
    py_func: str
    decl: Any
    params: list[tuple[str, str, P4Type]]   # (direction, name, type)


@dataclass
class CompiledProgram:
    arch: str
    source: str                            # generated Python source
    info: model.ProgramInfo
    objects: list[RuntimeObject]
    blocks: dict[str, CompiledBlock]       # arch block name -> compiled block
    struct_classes: dict[str, str]         # P4 type name -> generated class name
    errors: list[str]
    field_lists: dict[int, list[str]]      # v1model @field_list index -> metadata field names
    types: dict[str, P4Type]


def _err(node: Any, msg: str) -> CompileError:
    pos = getattr(node, "pos", None) or ast.NOPOS
    return CompileError(msg, pos.file, pos.line or None, pos.col or None)


def _py_ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


ARCH_BLOCKS = {
    "v1model": ("V1Switch", ["p", "vr", "ig", "eg", "ck", "dep"]),
}


class _ReturnSignal:
    """How a `return` statement is compiled in the current body."""

    def __init__(self, mode: str, out_names: list[str] | None = None, value_var: str | None = None):
        self.mode = mode                    # "python" | "break"
        self.out_names = out_names or []
        self.value_var = value_var
        self.used = False


@dataclass
class BodyCtx:
    """State while compiling one Python function body."""
    w: CodeWriter
    scope: Scope
    kind: str                              # parser | control | action | function | deparser
    prefix: str                            # P4Info name prefix, e.g. "MyIngress"
    ret: _ReturnSignal
    in_parser: bool = False
    packet_py: str | None = None           # name of the packet_in/out variable


class Compiler:
    def __init__(self, program: ast.Program, arch: str) -> None:
        self.program = program
        self.arch = arch
        self.globals = Scope()
        self.w_types = CodeWriter()
        self.w_funcs = CodeWriter()
        self.objects: list[RuntimeObject] = []
        self.info = model.ProgramInfo(arch=arch)  # type: ignore[arg-type]
        self.errors: list[str] = []
        self.match_kinds: list[str] = []
        self.struct_classes: dict[str, str] = {}
        self.types: dict[str, P4Type] = {}
        self.field_lists: dict[int, list[str]] = {}
        self.py_names: set[str] = set()
        self._fresh = itertools.count(1)
        self.blocks: dict[str, CompiledBlock] = {}
        self.error_type = ErrorT(self.errors)
        self.match_kind_type = MatchKindT(self.match_kinds)
        self.functions_emitted: dict[int, str] = {}
        self.action_py_names: set[str] = set()

    # ======================================================================== utilities
    def fresh(self, base: str) -> str:
        return f"_{_py_ident(base)}_{next(self._fresh)}"

    def unique_py(self, base: str) -> str:
        name = _py_ident(base)
        cand = name
        i = 1
        while cand in self.py_names:
            i += 1
            cand = f"{name}_{i}"
        self.py_names.add(cand)
        return cand

    # ======================================================================== entry point
    def compile(self) -> CompiledProgram:
        self._declare_builtins()
        for d in self.program.declarations:
            self._declare_top(d)
        main = self.globals.lookup("main")
        if main is None or main.kind != "instance":
            raise CompileError("program has no `main` package instance",
                               self.program.source_files[-1] if self.program.source_files else None)
        self._elaborate_main(main.decl)
        src = "\n".join([
            "# Generated by p4sim from P4 source; do not edit.",
            "from p4sim.runtime.rt import ExitBlock, ParserReject, DataplaneError, Stack, stack_get, stack_set, div as _div, mod as _mod",
            "import struct as _struct",
            "from p4sim.runtime.hashes import pack_fields as _pack_fields",
            "",
            self.w_types.text(),
            self.w_funcs.text(),
        ])
        return CompiledProgram(self.arch, src, self.info, self.objects, self.blocks,
                               self.struct_classes, self.errors, self.field_lists, self.types)

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
                out.extend(Compiler._leaves(ft, f"{obj}.{n}"))
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
    def _elaborate_main(self, inst: ast.Instantiation) -> None:
        from . import archs
        archs.elaborate(self, inst)

    def instantiate_block(self, arg: ast.Expr, scope: Scope, role: str, prefix_override: str | None = None) -> CompiledBlock:
        """Compile the parser/control instance given as a package argument."""
        if isinstance(arg, ast.ConstructorCall):
            tr, cargs = arg.type_ref, arg.args
        elif isinstance(arg, ast.Name):
            b = scope.lookup(arg.name)
            if b is None or b.kind != "instance":
                raise _err(arg, f"unknown instance '{arg.name}'")
            tr, cargs = b.decl.type_ref, b.decl.args
        else:
            raise _err(arg, "expected a parser or control instantiation")
        t = self.resolve_type(tr, self.globals)
        if not isinstance(t, BlockT) or t.kind not in ("parser", "control") or not isinstance(
                t.decl, (ast.ParserDecl, ast.ControlDecl)):
            raise _err(arg, f"'{tr.name if isinstance(tr, ast.NamedTypeRef) else tr}' is not a parser or control declaration")
        prefix = prefix_override if prefix_override is not None else t.decl.name
        return self.compile_block(t.decl, cargs, prefix, role, arg)

    def compile_block(self, decl: Any, ctor_args: list[ast.Argument], prefix: str, role: str,
                      site: Any, arg_scope: Scope | None = None) -> CompiledBlock:
        active = self.__dict__.setdefault("_blocks_compiling", [])
        if any(d is decl for d in active):
            raise _err(site, f"{decl.name} is instantiated or applied inside itself (recursion)")
        active.append(decl)
        try:
            return self._compile_block(decl, ctor_args, prefix, role, site, arg_scope)
        finally:
            active.pop()

    def _compile_block(self, decl: Any, ctor_args: list[ast.Argument], prefix: str, role: str,
                       site: Any, arg_scope: Scope | None = None) -> CompiledBlock:
        scope = Scope(self.globals)
        self._bind_ctor_params(decl, ctor_args, scope, site, arg_scope or self.globals)
        py_func = self.unique_py(("parser_" if isinstance(decl, ast.ParserDecl) else "control_") + prefix)
        params = []
        py_params = []
        for p in decl.params:
            t = self.resolve_type(p.type_ref, scope)
            pyn = self.unique_local(p.name)
            params.append((p.direction, p.name, t))
            py_params.append(pyn)
            if isinstance(t, ExternT) and t.name == "packet_in":
                scope.define(p.name, Binding("packet_in", t, py=pyn))
            elif isinstance(t, ExternT) and t.name == "packet_out":
                scope.define(p.name, Binding("packet_out", t, py=pyn))
            else:
                scope.define(p.name, Binding("value", t, py=pyn, writable=p.direction in ("out", "inout"),
                                             decl=p))
        w = CodeWriter()
        out_scalars = [pyn for (d, _, t), pyn in zip(params, py_params)
                       if d in ("out", "inout") and not isinstance(t, (StructT, StackT))]
        ret = _ReturnSignal("python", out_scalars)
        ctx = BodyCtx(w, scope, "parser" if isinstance(decl, ast.ParserDecl) else "control", prefix, ret)
        w.line(f"def {py_func}({', '.join(py_params)}):")
        with w.indent():
            if isinstance(decl, ast.ParserDecl):
                self._compile_parser_body(decl, ctx)
            elif role == "nested":
                for local in decl.locals:
                    self._control_local(local, ctx)
                self.compile_block_stmt(decl.body, ctx)
                if out_scalars:
                    w.line(f"return ({', '.join(out_scalars)},)")
            else:
                # an architecture block: `exit` ends this block (and nothing else)
                w.line("try:")
                with w.indent():
                    for local in decl.locals:
                        self._control_local(local, ctx)
                    self.compile_block_stmt(decl.body, ctx)
                w.line("except ExitBlock:")
                with w.indent():
                    w.line("pass")
                if out_scalars:
                    w.line(f"return ({', '.join(out_scalars)},)")
        self.w_funcs.lines.extend(w.lines)
        self.w_funcs.line("")
        blk = CompiledBlock("parser" if isinstance(decl, ast.ParserDecl) else "control", py_func, decl, params)
        blk.out_scalars = out_scalars  # type: ignore[attr-defined]
        return blk

    def _bind_ctor_params(self, decl: Any, args: list[ast.Argument], scope: Scope, site: Any,
                          arg_scope: Scope) -> None:
        cparams = decl.ctor_params
        if len(args) > len(cparams):
            raise _err(site, f"{decl.name} takes {len(cparams)} constructor arguments, got {len(args)}")
        bound: dict[str, ast.Expr] = {}
        for i, a in enumerate(args):
            name = a.name or cparams[i].name
            bound[name] = a.value
        for p in cparams:
            t = self.resolve_type(p.type_ref, scope)
            if p.name in bound:
                e = bound[p.name]
            elif p.default is not None:
                e = p.default
            else:
                raise _err(site, f"missing constructor argument '{p.name}' of {decl.name}")
            if isinstance(t, (BlockT, ExternT)):
                # an instance passed by name (a control/parser instance, or an extern instance):
                # the parameter is that same instance
                src_scope = arg_scope if p.name in bound else scope
                ib = src_scope.lookup(e.name) if isinstance(e, ast.Name) else None
                want = "instance" if isinstance(t, BlockT) else "extern"
                if ib is None or ib.kind != want or (
                        isinstance(t, BlockT) and t.kind != getattr(ib.info, "kind", None)) or (
                        isinstance(t, ExternT) and getattr(ib.type, "name", None) != t.name):
                    raise _err(e, f"constructor parameter '{p.name}' of type {t} needs the name "
                                  f"of a {t.kind if isinstance(t, BlockT) else t.name} instance")
                scope.define(p.name, ib)
                continue
            v = self.const_eval(e, arg_scope if p.name in bound else scope, t)
            scope.define(p.name, Binding("const", t, py=repr(v), value=v))

    def unique_local(self, name: str) -> str:
        return f"{_py_ident(name)}_{next(self._fresh)}"

    # ======================================================================== control locals
    @staticmethod
    def _check_redeclared(d: ast.Decl, scope: Scope) -> None:
        if d.name in scope.names:
            raise _err(d, f"'{d.name}' is already declared in this scope")

    def _control_local(self, d: ast.Decl, ctx: BodyCtx) -> None:
        scope = ctx.scope
        if not isinstance(d, (ast.VarDecl, ast.ConstDecl)):
            self._check_redeclared(d, scope)
        if isinstance(d, ast.ActionDecl):
            scope.define(d.name, Binding("action", decl=ActionRecord(d, self._fq(ctx.prefix, d), scope, ctx.prefix)))
            self._register_action(scope.lookup(d.name).decl)
        elif isinstance(d, ast.TableDecl):
            self._declare_table(d, ctx)
        elif isinstance(d, ast.Instantiation):
            self._declare_instance(d, ctx)
        elif isinstance(d, (ast.VarDecl, ast.ConstDecl)):
            self.compile_local_decl(d, ctx)
        elif isinstance(d, ast.FunctionDecl):
            scope.define(d.name, Binding("function", decl=d))
        else:
            raise _err(d, f"unsupported declaration in a control: {type(d).__name__}")

    def _register_action(self, rec: ActionRecord) -> model.ActionInfo:
        existing = self.info.actions.get(rec.fq_name)
        if existing is not None:
            return existing
        params = []
        for p in rec.decl.params:
            if p.direction:
                continue
            t = self.resolve_type(p.type_ref, rec.scope)
            a = ast.find_annotation(p.annotations, "name")   # control-plane name, as in p4c
            params.append(model.ActionParam(a.string_arg() if a is not None and a.string_arg() else p.name,
                                            self._cp_width(t, p)))
        ai = model.ActionInfo(rec.fq_name, params, [self._anno_text(a) for a in rec.decl.annotations])
        self.info.actions[rec.fq_name] = ai
        return ai

    @staticmethod
    def _anno_text(a: ast.Annotation) -> str:
        return f"@{a.name}({a.body})" if a.body else f"@{a.name}"

    def _cp_width(self, t: P4Type, node: Any) -> int:
        if isinstance(t, BitT):
            return t.width
        if isinstance(t, BoolT):
            return 1
        if isinstance(t, EnumT) and t.underlying:
            return t.underlying.width
        raise _err(node, f"type {t} cannot be set by the control plane")

    # ---------------------------------------------------------------- instances
    def _declare_instance(self, d: ast.Instantiation, ctx: BodyCtx) -> None:
        t = self.resolve_type(d.type_ref, ctx.scope)
        if isinstance(t, BlockT):
            if t.kind not in ("control", "parser") or not isinstance(t.decl, (ast.ControlDecl, ast.ParserDecl)):
                raise _err(d, f"cannot instantiate {t} here")
            blk = self.compile_block(t.decl, d.args, f"{ctx.prefix}.{d.name}", "nested", d, ctx.scope)
            ctx.scope.define(d.name, Binding("instance", t, py=blk.py_func, decl=d, info=blk))
            return
        if not isinstance(t, ExternT):
            raise _err(d, f"cannot instantiate type {t}")
        from . import externs
        inst = externs.declare_extern_instance(self, d, t, ctx)
        ctx.scope.define(d.name, Binding("extern", inst.type, py=inst.py, decl=d, info=inst))

    def _object(self, py_name: str) -> RuntimeObject:
        return next(o for o in self.objects if o.py_name == py_name)

    def add_object(self, base: str, kind: str, **params: Any) -> str:
        py = self.unique_py(base)
        self.objects.append(RuntimeObject(py, kind, params))
        return py

    # ---------------------------------------------------------------- tables
    def _declare_table(self, d: ast.TableDecl, ctx: BodyCtx) -> None:
        scope = ctx.scope
        fq = self._fq(ctx.prefix, d)
        known = {"key", "actions", "entries", "default_action", "size", "counters", "meters",
                 "implementation", "support_timeout", "idle_timeout_with_auto_delete",
                 "pna_direct_counter", "direct_counter", "psa_direct_counter"}
        for p in d.properties:
            if p.name not in known:
                raise _err(p, f"unknown table property '{p.name}'")
            if p.name == "implementation":
                raise _err(p, "action profiles and selectors (implementation) are not supported")
        keys: list[model.KeyField] = []
        key_exprs: list[ast.Expr] = []
        key_types: list[P4Type] = []
        kp = d.prop("key")
        if kp is not None:
            for ke in kp.value:
                if ke.match_kind not in self.match_kinds:
                    raise _err(ke, f"unknown match kind '{ke.match_kind}'")
                if ke.match_kind not in ("exact", "ternary", "lpm", "range", "optional"):
                    raise _err(ke, f"match kind '{ke.match_kind}' is not supported")
                _, kt = self.type_of(ke.expr, ctx)
                width = self._cp_width(kt if not isinstance(kt, ErrorT) else BitT(32), ke)
                a = ast.find_annotation(ke.annotations, "name")
                kname = a.string_arg() if a is not None else key_name(ke.expr)
                keys.append(model.KeyField(kname, width, ke.match_kind))  # type: ignore[arg-type]
                key_exprs.append(ke.expr)
                key_types.append(kt)
            if sum(1 for k in keys if k.match_kind == "lpm") > 1:
                raise _err(kp, "a table may have at most one lpm key")
        ap = d.prop("actions")
        if ap is None:
            raise _err(d, f"table {d.name} has no actions property")
        actions: list[ActionRecord] = []
        refs: list[model.ActionRef] = []
        bound_args: list[list[ast.Argument]] = []
        for ar in ap.value:
            b = scope.lookup(ar.name)
            if b is None or b.kind != "action":
                raise _err(ar, f"unknown action '{ar.name}' in table {d.name}")
            rec: ActionRecord = b.decl
            n_dir = sum(1 for p in rec.decl.params if p.direction)
            if len(ar.args or []) != n_dir:
                raise _err(ar, f"action {ar.name} in table {d.name}: the actions list must bind its "
                               f"{n_dir} directional parameter(s), it gives {len(ar.args or [])} argument(s)")
            bound_args.append(list(ar.args or []))
            self._register_action(rec)
            actions.append(rec)
            refs.append(model.ActionRef(rec.fq_name,
                                        table_only=ast.find_annotation(ar.annotations, "tableonly") is not None,
                                        default_only=ast.find_annotation(ar.annotations, "defaultonly") is not None,
                                        annotations=[self._anno_text(a) for a in ar.annotations]))
        # default action
        dp = d.prop("default_action")
        if dp is not None:
            default_call = self._table_action_call(dp.value, actions, scope, d, "default_action")
            default_const = dp.is_const
        else:
            b = self.globals.lookup("NoAction")
            if b is None or b.kind != "action":
                raise _err(d, f"table {d.name} has no default_action and NoAction is not declared")
            if all(rec.fq_name != "NoAction" for rec in actions):
                # As p4c: the implicit default NoAction joins the list as @defaultonly.
                self._register_action(b.decl)
                actions.append(b.decl)
                bound_args.append([])
                refs.append(model.ActionRef("NoAction", default_only=True))
            default_call = model.ActionCall("NoAction", {})
            default_const = False
        size = 512 if self.arch == "tna" else 1024     # bf-p4c's default; p4c's for P4Info
        sp = d.prop("size")
        if sp is not None:
            size = self.const_eval(sp.value, scope)
            if not isinstance(size, int) or size <= 0:
                raise _err(sp, "table size must be a positive constant")
        info = model.TableInfo(fq, keys, refs, default_call, default_const, size=size,
                               annotations=[self._anno_text(a) for a in d.annotations])
        ep = d.prop("entries")
        if ep is not None:
            info.has_const_entries = ep.is_const
            for en in ep.value:
                info.const_entries.append(self._const_entry(en, info, actions, key_types, scope, d))
            self._legacy_entry_priorities(ep.value, info)
        rec_py = self.add_object("T_" + fq, "table", name=fq)
        trec = TableRecord(d, info, rec_py, actions, key_exprs, key_types, bound_args=bound_args)
        for pname in ("counters", "meters"):
            p = d.prop(pname)
            if p is None:
                continue
            if not isinstance(p.value, ast.Name):
                raise _err(p, f"table property {pname} must name a direct_counter/direct_meter instance")
            b = scope.lookup(p.value.name)
            if b is None or b.kind != "extern":
                raise _err(p, f"unknown {pname} instance '{p.value.name}'")
            inst = b.info
            if pname == "counters":
                if inst.type.name not in ("direct_counter", "DirectCounter"):
                    raise _err(p, f"'{p.value.name}' is not a direct counter")
                info.direct_counter = inst.fq_name
                self.info.counters[inst.fq_name].direct_table = fq
                trec.direct_counter_py = inst.py
                self._object(inst.py).params["table"] = fq
            else:
                if inst.type.name not in ("direct_meter", "DirectMeter"):
                    raise _err(p, f"'{p.value.name}' is not a direct meter")
                info.direct_meter = inst.fq_name
                self.info.meters[inst.fq_name].direct_table = fq
                trec.direct_meter_py = inst.py
                self._object(inst.py).params["table"] = fq
        self.info.tables[fq] = info
        scope.define(d.name, Binding("table", TableT(d), py=rec_py, decl=d, info=trec))

    def _table_action_call(self, e: ast.Expr, actions: list[ActionRecord], scope: Scope, table: Any,
                           what: str) -> model.ActionCall:
        if isinstance(e, ast.Name):
            name, args = e.name, []
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
            name, args = e.func.name, e.args
        else:
            raise _err(e, f"{what} must be an action call")
        rec = next((a for a in actions if a.decl.name == name), None)
        if rec is None:
            raise _err(e, f"{what} '{name}' is not in the actions of table {table.name}")
        params = [p for p in rec.decl.params if not p.direction]
        if len(args) == len(rec.decl.params) > len(params):
            args = args[len(rec.decl.params) - len(params):]  # directional ones: bound in the actions list
        if len(args) != len(params):
            raise _err(e, f"action {name} takes {len(params)} arguments, {what} gives {len(args)}")
        values = {}
        for p, a in zip(params, args):
            t = self.resolve_type(p.type_ref, rec.scope)
            values[p.name] = self.const_eval(a.value, scope, t) & ((1 << self._cp_width(t, p)) - 1)
        return model.ActionCall(rec.fq_name, values)

    def _const_entry(self, en: ast.EntryNode, info: model.TableInfo, actions: list[ActionRecord],
                     key_types: list[P4Type], scope: Scope, table: Any) -> model.TableEntry:
        ks = en.keyset
        items = ks.items if isinstance(ks, ast.KsTuple) else [ks]
        if len(items) != len(info.keys):
            raise _err(en, f"entry has {len(items)} key values, table {table.name} has {len(info.keys)} keys")
        match: dict[str, model.FieldMatch] = {}
        for k, item in zip(info.keys, items):
            full = (1 << k.bitwidth) - 1
            if isinstance(item, ast.KsDefault):
                continue
            if isinstance(item, ast.KsExpr):
                v = self.const_eval(item.expr, scope) & full
                m: model.FieldMatch = {"exact": lambda: model.Exact(v), "ternary": lambda: model.Ternary(v, full),
                                       "lpm": lambda: model.Lpm(v, k.bitwidth), "range": lambda: model.Range(v, v),
                                       "optional": lambda: model.Optional(v)}[k.match_kind]()
            elif isinstance(item, ast.KsMask):
                v = self.const_eval(item.value, scope) & full
                mask = self.const_eval(item.mask, scope) & full
                if k.match_kind == "ternary":
                    m = model.Ternary(v & mask, mask)
                elif k.match_kind == "lpm":
                    plen = bin(mask).count("1")
                    if mask != (full >> (k.bitwidth - plen) << (k.bitwidth - plen) if plen else 0):
                        raise _err(item, "lpm mask must be a prefix")
                    m = model.Lpm(v & mask, plen)
                else:
                    raise _err(item, f"a mask is not allowed for a {k.match_kind} key")
            elif isinstance(item, ast.KsRange):
                if k.match_kind != "range":
                    raise _err(item, f"a range is not allowed for a {k.match_kind} key")
                m = model.Range(self.const_eval(item.low, scope) & full, self.const_eval(item.high, scope) & full)
            else:
                raise _err(item, "unsupported key value in entry")
            match[k.name] = m
        call = self._table_action_call(
            ast.Call(ast.Name(en.action.name, pos=en.action.pos), en.action.args or [], pos=en.action.pos),
            actions, scope, table, "entry action")
        prio = 0
        if info.needs_priority:
            prio = self.const_eval(en.priority, scope) if en.priority is not None else -1
        return model.TableEntry(match, call, prio, is_const=True)

    @staticmethod
    def _legacy_entry_priorities(entries: list[ast.EntryNode], info: model.TableInfo) -> None:
        """p4c's older `@priority(N)` entry annotation: p4c gives bmv2 N for such an entry and
        its position (1, 2, ...) to the others, and in bmv2 the smaller value wins. Turned into
        p4sim's larger-wins priorities."""
        annos = [ast.find_annotation(en.annotations, "priority") for en in entries]
        if not info.needs_priority or not any(annos) or any(en.priority is not None for en in entries):
            return
        bmv2: list[int] = []
        for i, a in enumerate(annos):
            if a is not None and not a.body.strip().isdigit():
                raise _err(a, "@priority needs a decimal number")
            bmv2.append(int(a.body) if a is not None else i + 1)
        top = max(bmv2) + 1
        for e, b in zip(info.const_entries, bmv2):
            e.priority = top - b

    # ======================================================================== local decls
    def compile_local_decl(self, d: ast.Decl, ctx: BodyCtx) -> None:
        self._check_redeclared(d, ctx.scope)
        if isinstance(d, ast.ConstDecl):
            t = self.resolve_type(d.type_ref, ctx.scope)
            v = self.const_eval(d.value, ctx.scope, t)
            ctx.scope.define(d.name, Binding("const", t, py=repr(v), value=v))
            return
        if isinstance(d, ast.Instantiation):
            self._declare_instance(d, ctx)
            return
        assert isinstance(d, ast.VarDecl)
        t = self.resolve_type(d.type_ref, ctx.scope)
        if isinstance(t, (VoidT, DontCareT, ExternT, BlockT)):
            raise _err(d, f"cannot declare a variable of type {t}")
        pyn = self.unique_local(d.name)
        if d.init is not None:
            code = self.expr_as(d.init, t, ctx)
            ctx.w.line(f"{pyn} = {self.copy_if_compound(code, t)}")
        else:
            ctx.w.line(f"{pyn} = {self.default_value_code(t)}")
        ctx.scope.define(d.name, Binding("value", t, py=pyn, decl=d))

    @staticmethod
    def copy_if_compound(code: str, t: P4Type) -> str:
        if isinstance(t, (StructT, StackT)):
            return f"{code}.copy()"
        return code

    # ======================================================================== statements
    def compile_block_stmt(self, b: ast.Block, ctx: BodyCtx) -> None:
        outer = ctx.scope
        ctx.scope = Scope(outer)
        try:
            self.compile_items(b.items, ctx)
        finally:
            ctx.scope = outer

    def compile_items(self, items: list[ast.Node], ctx: BodyCtx) -> None:
        """Statements and local declarations, in the current scope."""
        for item in items:
            if isinstance(item, (ast.VarDecl, ast.ConstDecl, ast.Instantiation)):
                self.compile_local_decl(item, ctx)
            else:
                self.compile_stmt(item, ctx)

    def compile_stmt(self, s: ast.Stmt, ctx: BodyCtx) -> None:
        with ctx.w.at(s.pos):
            self._compile_stmt(s, ctx)

    def _compile_stmt(self, s: ast.Stmt, ctx: BodyCtx) -> None:
        w = ctx.w
        if isinstance(s, ast.Block):
            self.compile_block_stmt(s, ctx)
        elif isinstance(s, ast.Assign):
            if s.op is not None:
                self.compile_compound_assign(s, ctx)
            else:
                self.compile_assign(s.target, s.value, ctx)
        elif isinstance(s, ast.CallStmt):
            self.compile_call(s.call, ctx, statement=True)
        elif isinstance(s, ast.If):
            cond = self.expr_as(s.cond, BoolT(), ctx)
            w.line(f"if {cond}:")
            with w.indent():
                self.compile_stmt(s.then, ctx)
            if s.otherwise is not None:
                w.line("else:")
                with w.indent():
                    self.compile_stmt(s.otherwise, ctx)
        elif isinstance(s, ast.Empty):
            pass
        elif isinstance(s, ast.Exit):
            if ctx.kind == "function":
                raise _err(s, "exit is not allowed in a function")
            w.line("raise ExitBlock()")
        elif isinstance(s, ast.Return):
            self.compile_return(s, ctx)
        elif isinstance(s, ast.Switch):
            self.compile_switch(s, ctx)
        elif isinstance(s, ast.DirectApply):
            self.compile_direct_apply(s, ctx)
        else:
            raise _err(s, f"unsupported statement {type(s).__name__}")

    def compile_return(self, s: ast.Return, ctx: BodyCtx) -> None:
        r = ctx.ret
        r.used = True
        if ctx.in_parser:
            raise _err(s, "return is not allowed in a parser")
        if r.mode == "break":
            if s.value is not None:
                raise _err(s, "an action cannot return a value")
            ctx.w.line("break")
            return
        if r.value_var is not None:
            if s.value is None:
                raise _err(s, "this function must return a value")
            val = self.expr_as(s.value, r.value_type, ctx)  # type: ignore[attr-defined]
            vals = [self.copy_if_compound(val, r.value_type)] + r.out_names  # type: ignore[attr-defined]
            ctx.w.line(f"return ({', '.join(vals)},)" if r.out_names else f"return {vals[0]}")
            return
        if s.value is not None:
            raise _err(s, "a control or void function cannot return a value")
        if r.out_names:
            ctx.w.line(f"return ({', '.join(r.out_names)},)")
        else:
            ctx.w.line("return")

    def compile_switch(self, s: ast.Switch, ctx: BodyCtx) -> None:
        w = ctx.w
        e = s.expr
        is_action_run = isinstance(e, ast.Member) and e.member == "action_run"
        if is_action_run:
            if not (isinstance(e.expr, ast.Call) and isinstance(e.expr.func, ast.Member)
                    and e.expr.func.member == "apply"):
                raise _err(e, "action_run must be read from a table apply: t.apply().action_run")
            trec, idx_var = self.compile_table_apply(e.expr.func.expr, ctx)
            actions = trec.actions
            conds: list[tuple[list[str], ast.Block | None]] = []
            pending: list[str] = []
            seen = set()
            for c in s.cases:
                if c.label is None:
                    pending.append("True")
                else:
                    if not isinstance(c.label, ast.Name):
                        raise _err(c, "switch on action_run needs action names as labels")
                    idx = next((i for i, a in enumerate(actions) if a.decl.name == c.label.name), None)
                    if idx is None:
                        raise _err(c, f"'{c.label.name}' is not an action of table {trec.decl.name}")
                    if idx in seen:
                        raise _err(c, f"duplicate switch label '{c.label.name}'")
                    seen.add(idx)
                    pending.append(f"{idx_var} == {idx}")
                if c.body is not None:
                    conds.append((pending, c.body))
                    pending = []
            if pending:
                conds.append((pending, None))
        else:
            val, t = self.compile_expr(e, ctx)
            if not isinstance(t, (BitT, EnumT, ErrorT, InfIntT)):
                raise _err(e, f"cannot switch on a value of type {t}")
            tmp = self.fresh("sw")
            w.line(f"{tmp} = {val}")
            conds = []
            pending = []
            for c in s.cases:
                if c.label is None:
                    pending.append("True")
                else:
                    lv = self.expr_as(c.label, t, ctx)
                    pending.append(f"{tmp} == {lv}")
                if c.body is not None:
                    conds.append((pending, c.body))
                    pending = []
            if pending:
                conds.append((pending, None))
        first = True
        for cs, body in conds:
            cond = "True" if "True" in cs else " or ".join(cs)
            w.line(f"{'if' if first else 'elif'} {cond}:")
            first = False
            with w.indent():
                if body is not None:
                    self.compile_block_stmt(body, ctx)

    # ---------------------------------------------------------------- assignment
    def compile_assign(self, target: ast.Expr, value: ast.Expr, ctx: BodyCtx) -> None:
        tt = self.lvalue_type(target, ctx)
        if isinstance(value, ast.DontCare):
            return
        if contains_call(value):
            # P4 evaluates the left-hand side first: a call on the right (hoisted before the
            # assignment) must not see its effects on a stack index of the left.
            target = self._freeze_indexes(target, ctx)
        code = self.expr_as(value, tt, ctx)
        self.assign_to(target, self.copy_if_compound(code, tt), ctx)

    def compile_compound_assign(self, s: ast.Assign, ctx: BodyCtx) -> None:
        """``a op= b`` is ``a = a op b`` with ``a`` evaluated once (P4_16 v1.2.4, 11.1)."""
        if isinstance(s.value, ast.DontCare):
            raise _err(s.value, f"'_' cannot be the right-hand side of '{s.op}='")
        self.lvalue_type(s.target, ctx)
        target = self._freeze_indexes(s.target, ctx)
        value = ast.BinOp(s.op, target, s.value, pos=s.pos)
        self.compile_assign(target, value, ctx)

    def lvalue_type(self, target: ast.Expr, ctx: BodyCtx) -> P4Type:
        _, t = self.type_of(target, ctx)
        return t

    def assign_to(self, target: ast.Expr, code: str, ctx: BodyCtx) -> None:
        """Emit `target = code` (code already has target's type)."""
        w = ctx.w
        if isinstance(target, ast.DontCare):
            return
        if isinstance(target, ast.Name):
            b = ctx.scope.lookup(target.name)
            if b is None:
                raise _err(target, f"unknown name '{target.name}'")
            if b.kind != "value":
                raise _err(target, f"cannot assign to '{target.name}'")
            if not b.writable:
                raise _err(target, f"cannot assign to '{target.name}': it is a read-only (in) parameter")
            if isinstance(b.decl, ast.Param) and isinstance(b.type, (StructT, StackT)):
                # a struct/header/stack parameter is the caller's object (inout/out are passed
                # by reference): assign in place, rebinding the local would lose the write
                tmp = self.fresh("asg")
                w.line(f"{tmp} = {code}")
                if isinstance(b.type, StackT):
                    w.line(f"{b.py}.items[:] = {tmp}.items; {b.py}.nxt = {tmp}.nxt")
                else:
                    for n in [n for n, _ in b.type.fields] + (["_v"] if b.type.is_header else []):
                        w.line(f"{b.py}.{n} = {tmp}.{n}")
                return
            w.line(f"{b.py} = {code}")
            return
        if isinstance(target, ast.Member):
            base, bt = self.compile_expr(target.expr, ctx, lvalue=True)
            self._check_writable(target.expr, ctx)
            if isinstance(bt, StackT):
                raise _err(target, f"cannot assign to stack property '{target.member}'")
            w.line(f"{base}.{target.member} = {code}")
            return
        if isinstance(target, ast.Index):
            self._check_writable(target.expr, ctx)
            base, bt = self.compile_expr(target.expr, ctx, lvalue=True)
            if not isinstance(bt, StackT):
                raise _err(target, "only header stacks can be indexed")
            ok, idx, _ = self.try_const(target.index, ctx.scope)
            if ok:
                if not 0 <= idx < bt.size:
                    raise _err(target, f"index {idx} out of range for {bt}")
                w.line(f"{base}.items[{idx}] = {code}")
            else:
                w.line(f"stack_set({base}, {self._stack_index(target.index, ctx)}, {code})")
            return
        if isinstance(target, ast.Slice):
            base_code, bt = self.compile_expr(target.expr, ctx)
            if not isinstance(bt, BitT):
                raise _err(target, "only bit<N>/int<N> values can be sliced")
            hi = self.const_eval(target.high, ctx.scope)
            lo = self.const_eval(target.low, ctx.scope)
            self._check_slice(target, bt, hi, lo)
            width = hi - lo + 1
            m = ((1 << width) - 1) << lo
            keep = bt.mask & ~m
            new = f"(({base_code} & {keep}) | (({code}) << {lo}))" if lo else f"(({base_code} & {keep}) | ({code}))"
            if bt.signed:
                new = self._wrap_code(new, bt)
            self.assign_to(target.expr, new, ctx)
            return
        raise _err(target, "expression cannot be assigned to")

    def _freeze_indexes(self, target: ast.Expr, ctx: BodyCtx) -> ast.Expr:
        """``target`` with each run-time stack index replaced by a local holding its value now."""
        if isinstance(target, ast.Index):
            base = self._freeze_indexes(target.expr, ctx)
            if self.try_const(target.index, ctx.scope)[0]:
                return replace(target, expr=base)
            tmp = self.fresh("ix")
            ctx.w.line(f"{tmp} = {self._stack_index(target.index, ctx)}")
            ctx.scope.define(f"${tmp}", Binding("value", BitT(32), py=tmp))
            return replace(target, expr=base, index=ast.Name(f"${tmp}", pos=target.index.pos))
        if isinstance(target, (ast.Member, ast.Slice)):
            return replace(target, expr=self._freeze_indexes(target.expr, ctx))
        return target

    def _stack_index(self, e: ast.Expr, ctx: BodyCtx) -> str:
        """A run-time stack index: any bit<N> or int<N> expression (or an int constant); a
        negative one is out of range like a too large one (stack_get/stack_set)."""
        code, t = self.compile_expr(e, ctx, expected=BitT(32))
        if isinstance(t, BitT):
            return code
        return self.coerce(code, t, BitT(32), e)

    def _check_writable(self, e: ast.Expr, ctx: BodyCtx) -> None:
        while isinstance(e, (ast.Member, ast.Index, ast.Slice)):
            e = e.expr
        if isinstance(e, ast.Name):
            b = ctx.scope.lookup(e.name)
            if b is not None and b.kind == "value" and not b.writable:
                raise _err(e, f"cannot assign to a field of '{e.name}': it is a read-only (in) parameter")

    @staticmethod
    def _check_slice(node: Any, t: BitT, hi: Any, lo: Any) -> None:
        if not isinstance(hi, int) or not isinstance(lo, int):
            raise _err(node, "slice bounds must be constants")
        if not (0 <= lo <= hi < t.width):
            raise _err(node, f"slice [{hi}:{lo}] out of range for {t}")

    # ======================================================================== calls
    def compile_call(self, call: ast.Call, ctx: BodyCtx, statement: bool) -> tuple[str, P4Type]:
        """Compile a call; statements emit code and return ("", VoidT) or a value expression."""
        f = call.func
        from . import externs
        # method calls: x.m(...)
        if isinstance(f, ast.Member):
            m = f.member
            base = f.expr
            # table.apply()
            if m == "apply":
                bb = self._binding_of(base, ctx)
                if bb is not None and bb.kind == "table":
                    if call.args:
                        raise _err(call, "table.apply() takes no arguments")
                    trec, idx_var = self.compile_table_apply(base, ctx)
                    return idx_var, ApplyResultT(trec.decl)
                if bb is not None and bb.kind == "instance":
                    return self.compile_instance_apply(bb, call, ctx, statement)
            bb = self._binding_of(base, ctx)
            if bb is not None and bb.kind in ("packet_in", "packet_out", "extern"):
                return externs.compile_method_call(self, bb, m, call, ctx, statement)
            # header / stack / union methods
            code, t = self.compile_expr(base, ctx, lvalue=m in ("setValid", "setInvalid", "push_front", "pop_front"))
            if m in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes") \
                    and isinstance(t, (StructT, StackT)):
                if call.args:
                    raise _err(call, f"{m}() takes no arguments")
                try:
                    bits = bit_width(t)  # no varbit: min and max sizes are the same
                except TypeError:
                    raise _err(call, f"{m}(): {t} has no fixed size") from None
                return str(bits if m.endswith("Bits") else (bits + 7) // 8), InfIntT()
            if isinstance(t, StructT) and t.is_header:
                if call.args:
                    raise _err(call, f"{m}() takes no arguments")
                if m == "isValid":
                    return f"{code}._v", BoolT()
                if m in ("setValid", "setInvalid"):
                    self._check_writable(base, ctx)
                    if not statement:
                        raise _err(call, f"{m}() returns nothing")
                    if m == "setInvalid":
                        ctx.w.line(f"{code}._v = False")
                    else:
                        # bmv2: setValid on an invalid header leaves fields as they are (zero-initialized)
                        ctx.w.line(f"{code}._v = True")
                        for sib in self.union_siblings(base, ctx):
                            ctx.w.line(f"{sib}._v = False")
                    return "", VoidT()
            if isinstance(t, StructT) and t.kind == "header_union" and m == "isValid":
                return f"{code}.isValid()", BoolT()
            if isinstance(t, StackT) and m in ("push_front", "pop_front"):
                if len(call.args) != 1:
                    raise _err(call, f"{m} takes one argument")
                n = self.const_eval(call.args[0].value, ctx.scope)
                ctx.w.line(f"{code}.{m}({n})")
                return "", VoidT()
            raise _err(call, f"unknown method '{m}' on a value of type {t}")
        if isinstance(f, ast.Name):
            b = ctx.scope.lookup(f.name) if not f.top_level else self.globals.lookup(f.name)
            if b is None:
                raise _err(f, f"unknown function or action '{f.name}'")
            if b.kind == "action":
                if not statement:
                    raise _err(call, "an action call is a statement, not an expression")
                if ctx.kind == "function":
                    raise _err(call, "actions cannot be called from functions")
                if ctx.kind == "control":  # recorded for the P4Info (p4sim.p4info)
                    self.info.direct_calls.add(self._register_action(b.decl).name)
                self.inline_action(b.decl, call.args, ctx, call, from_table=False)
                return "", VoidT()
            if b.kind == "function":
                return self.compile_function_call(b.decl, call, ctx, statement)
            if b.kind == "extern_function":
                return externs.compile_extern_function(self, f.name, b.decl, call, ctx, statement)
        raise _err(call, f"'{expr_text(f)}' cannot be called")

    def union_siblings(self, e: ast.Expr, ctx: BodyCtx) -> list[str]:
        """Other members of the header union that ``e`` is a member of (a union holds at most
        one valid member, so making one valid invalidates the rest)."""
        if not isinstance(e, ast.Member):
            return []
        _, ut = self.type_of(e.expr, ctx)
        if not (isinstance(ut, StructT) and ut.kind == "header_union"):
            return []
        base, _ = self.compile_expr(e.expr, ctx, lvalue=True)
        return [f"{base}.{n}" for n, _ in ut.fields if n != e.member]

    def _binding_of(self, e: ast.Expr, ctx: BodyCtx) -> Binding | None:
        if isinstance(e, ast.Name):
            return (self.globals if e.top_level else ctx.scope).lookup(e.name)
        return None

    # ---------------------------------------------------------------- argument binding
    def bind_args(self, params: list[ast.Param], args: list[ast.Argument], call: Any, what: str) -> list[tuple[ast.Param, ast.Expr | None]]:
        """Match call arguments (positional or named) to parameters; None for omitted @optional."""
        named = any(a.name for a in args)
        result: dict[str, ast.Expr | None] = {}
        if named:
            if not all(a.name for a in args):
                raise _err(call, "either all arguments are named or none")
            pnames = {p.name for p in params}
            for a in args:
                if a.name not in pnames:
                    raise _err(a, f"{what} has no parameter '{a.name}'")
                result[a.name] = a.value
        else:
            if len(args) > len(params):
                raise _err(call, f"{what} takes {len(params)} arguments, got {len(args)}")
            for p, a in zip(params, args):
                result[p.name] = a.value
        out = []
        for p in params:
            if p.name in result:
                out.append((p, result[p.name]))
            elif p.default is not None:
                out.append((p, p.default))
            elif ast.find_annotation(p.annotations, "optional") is not None:
                out.append((p, None))
            else:
                raise _err(call, f"{what}: missing argument for parameter '{p.name}'")
        return out

    # ---------------------------------------------------------------- actions
    def inline_action(self, rec: ActionRecord, args: list[ast.Argument], ctx: BodyCtx, call: Any,
                      from_table: bool, arg_codes: list[str] | None = None) -> None:
        """Inline an action body. Directional params come from ``args`` (for a table: the
        arguments bound in its actions list); directionless ones from ``args`` too for direct
        calls, or from ``arg_codes`` (control-plane data) for tables."""
        d = rec.decl
        w = ctx.w
        ascope = Scope(rec.scope)
        copy_out: list[tuple[ast.Expr, str]] = []
        if from_table:
            data_params = [p for p in d.params if not p.direction]
            assert arg_codes is not None and len(arg_codes) == len(data_params)
            for p, code in zip(data_params, arg_codes):
                t = self.resolve_type(p.type_ref, rec.scope)
                pyn = self.unique_local(p.name)
                w.line(f"{pyn} = {self._from_cp_code(code, t)}")
                ascope.define(p.name, Binding("value", t, py=pyn, writable=True, decl=p))
        dir_params = [p for p in d.params if p.direction] if from_table else d.params
        if dir_params or not from_table:
            bound = self.bind_args(dir_params, args, call, f"action {d.name}")
            for p, a in bound:
                t = self.resolve_type(p.type_ref, rec.scope)
                pyn = self.unique_local(p.name)
                if a is None:
                    raise _err(call, f"action {d.name}: missing argument for '{p.name}'")
                if p.direction in ("out", "inout"):
                    self._check_lvalue(a, ctx)
                if p.direction == "out":
                    w.line(f"{pyn} = {self.default_value_code(t)}")
                else:
                    code = self.expr_as(a, t, ctx)
                    # copy-in (P4 calling convention): an inout struct is a copy too, so that
                    # writes through another path (e.g. the control's own parameter) are
                    # overwritten at copy-out, as in p4c/bmv2
                    w.line(f"{pyn} = {self.copy_if_compound(code, t)}")
                ascope.define(p.name, Binding("value", t, py=pyn, writable=p.direction != "in", decl=p))
                if p.direction in ("out", "inout"):
                    copy_out.append((a, pyn))
        actx = BodyCtx(w, ascope, "action", rec.prefix, _ReturnSignal("break"))
        if copy_out:
            # `exit` (here, in a called action or a table applied here) still copies out
            # out/inout parameters (P4_16 spec, exit statement)
            w.line("try:")
            with w.indent():
                self._compile_action_body(d.body, actx)
            w.line("except ExitBlock:")
            with w.indent():
                for a, pyn in copy_out:
                    self.assign_to(a, pyn, ctx)
                w.line("raise")
        else:
            self._compile_action_body(d.body, actx)
        for a, pyn in copy_out:
            self.assign_to(a, pyn, ctx)

    def _compile_action_body(self, body: ast.Block, actx: BodyCtx) -> None:
        w = actx.w
        if contains_return(body):
            w.line("while True:")
            with w.indent():
                self.compile_block_stmt(body, actx)
                w.line("break")
        else:
            self.compile_block_stmt(body, actx)

    def _from_cp_code(self, code: str, t: P4Type) -> str:
        if isinstance(t, BoolT):
            return f"bool({code})"
        if isinstance(t, BitT) and t.signed:
            return self._wrap_code(code, t)
        return code

    def _check_lvalue(self, e: ast.Expr, ctx: BodyCtx) -> None:
        if isinstance(e, ast.DontCare):
            return              # `_` for an out argument: the value is discarded
        base = e
        while isinstance(base, (ast.Member, ast.Index, ast.Slice)):
            base = base.expr
        if not isinstance(base, ast.Name):
            raise _err(e, "argument for an out/inout parameter must be assignable")
        b = ctx.scope.lookup(base.name)
        if b is None or b.kind != "value":
            raise _err(e, "argument for an out/inout parameter must be assignable")
        if not b.writable:
            raise _err(e, f"'{base.name}' is read-only (in) and cannot be passed as out/inout")

    # ---------------------------------------------------------------- tables
    def compile_table_apply(self, base: ast.Expr, ctx: BodyCtx) -> tuple[TableRecord, str]:
        b = self._binding_of(base, ctx)
        if b is None or b.kind != "table":
            raise _err(base, f"'{expr_text(base)}' is not a table")
        trec: TableRecord = b.info
        w = ctx.w
        keys = []
        for ke, kt in zip(trec.key_exprs, trec.key_types):
            code, t = self.compile_expr(ke, ctx)
            if isinstance(t, BoolT):
                code = f"int({code})"
            elif isinstance(t, BitT) and t.signed:
                code = f"({code} & {t.mask})"
            keys.append(code)
        res = self.fresh("r")
        idx = self.fresh("ai")
        w.line(f"{idx}, {res}_args, {res}_e = {trec.py}.lookup(({''.join(k + ', ' for k in keys)}))")
        if trec.direct_counter_py:
            w.line(f"{trec.py}.count({res}_e, _ctx.packet_length)")
        first = True
        for i, a in enumerate(trec.actions):
            w.line(f"{'if' if first else 'elif'} {idx} == {i}:")
            first = False
            with w.indent():
                nparams = sum(1 for p in a.decl.params if not p.direction)
                codes = [f"{res}_args[{j}]" for j in range(nparams)]
                self.inline_action(a, trec.bound_args[i], ctx, base, from_table=True, arg_codes=codes)
        # hit flag and action index live in Python locals for .hit/.miss/action_run
        self._last_apply = (idx, f"({res}_e is not None)")
        ctx.scope.define(f"$hit:{idx}", Binding("value", BoolT(), py=f"({res}_e is not None)"))
        return trec, idx

    # ---------------------------------------------------------------- nested blocks
    def compile_direct_apply(self, s: ast.DirectApply, ctx: BodyCtx) -> None:
        """``T.apply(args)`` for a control or parser type T without constructor parameters: as
        p4c's InstantiateDirectCalls, a fresh instance of T at this site, named T in the control
        plane (``@name("T")``), then applied."""
        t = self.resolve_type(s.type_ref, ctx.scope)
        if not isinstance(t, BlockT) or t.kind not in ("control", "parser") or not isinstance(
                t.decl, (ast.ControlDecl, ast.ParserDecl)):
            raise _err(s, f"'{t}' is not a control or parser declaration: .apply() needs one")
        if t.kind == "parser" and not ctx.in_parser:
            raise _err(s, "a parser can only be applied from a parser")
        if ctx.kind in ("action", "function"):
            raise _err(s, f"{t.decl.name}.apply() is not allowed in an {ctx.kind}")
        if getattr(t.decl, "ctor_params", None):
            raise _err(s, f"{t.decl.name} has constructor parameters: instantiate it to apply it")
        name = t.decl.name
        blk = self.compile_block(t.decl, [], f"{ctx.prefix}.{name}" if ctx.prefix else name,
                                 "nested", s, ctx.scope)
        b = Binding("instance", t, py=blk.py_func, decl=s, info=blk)
        call = ast.Call(ast.Member(ast.Name(name, pos=s.pos), "apply", pos=s.pos), s.args, pos=s.pos)
        self.compile_instance_apply(b, call, ctx, statement=True)

    def compile_instance_apply(self, b: Binding, call: ast.Call, ctx: BodyCtx, statement: bool) -> tuple[str, P4Type]:
        blk: CompiledBlock = b.info
        if blk.kind == "parser" and not ctx.in_parser:
            raise _err(call, "a parser can only be applied from a parser")
        params = [p for p in blk.decl.params]
        bound = self.bind_args(params, call.args, call, f"{blk.decl.name}.apply")
        arg_codes = []
        copy_back = []
        packet = None
        for (p, a), (d, _, t) in zip(bound, blk.params):
            if a is None:
                raise _err(call, f"missing argument '{p.name}'")
            if isinstance(t, ExternT) and t.name == "packet_in":
                pb = self._binding_of(a, ctx)
                if pb is None or pb.kind != "packet_in":
                    raise _err(a, f"argument '{p.name}' must be the parser's packet_in")
                packet = pb.py
                arg_codes.append(packet)
                continue
            if d in ("out", "inout"):
                self._check_lvalue(a, ctx)
            code = self.expr_as(a, t, ctx)
            if isinstance(t, (StructT, StackT)):
                arg_codes.append(code if d in ("inout", "out") else f"{code}.copy()")
            else:
                arg_codes.append(code)
                if d in ("out", "inout"):
                    copy_back.append(a)
        if packet is not None:
            # a sub-parser continues from our offset and we continue from where it accepted;
            # its reject (ParserReject) ends the whole parse, as in P4
            ctx.w.line(f"{packet}.off = off")
        if copy_back:
            tmp = self.fresh("o")
            ctx.w.line(f"{tmp} = {blk.py_func}({', '.join(arg_codes)})")
            for i, a in enumerate(copy_back):
                self.assign_to(a, f"{tmp}[{i}]", ctx)
        else:
            ctx.w.line(f"{blk.py_func}({', '.join(arg_codes)})")
        if packet is not None:
            ctx.w.line(f"off = {packet}.off")
        return "", VoidT()

    # ---------------------------------------------------------------- functions
    def compile_function_call(self, d: ast.FunctionDecl, call: ast.Call, ctx: BodyCtx,
                              statement: bool) -> tuple[str, P4Type]:
        py, ret_t, params = self._emit_function(d)
        bound = self.bind_args(d.proto.params, call.args, call, f"function {d.name}")
        codes = []
        outs = []
        for (p, a), (pd, pt) in zip(bound, params):
            if a is None:
                raise _err(call, f"missing argument '{p.name}'")
            if pd in ("out", "inout"):
                self._check_lvalue(a, ctx)
            if pd == "out":
                codes.append(self.default_value_code(pt))
            else:
                c = self.expr_as(a, pt, ctx)
                codes.append(self.copy_if_compound(c, pt) if pd == "in" or pd == "" else c)
            if pd in ("out", "inout") and not (pd == "inout" and isinstance(pt, (StructT, StackT))):
                outs.append(a)
        callcode = f"{py}({', '.join(codes)})"
        if not outs:
            if isinstance(ret_t, VoidT):
                if not statement:
                    raise _err(call, f"function {d.name} returns no value")
                ctx.w.line(callcode)
                return "", VoidT()
            if statement:
                ctx.w.line(callcode)
                return "", VoidT()
            return callcode, ret_t
        tmp = self.fresh("f")
        ctx.w.line(f"{tmp} = {callcode}")
        off = 0 if isinstance(ret_t, VoidT) else 1
        for i, a in enumerate(outs):
            self.assign_to(a, f"{tmp}[{i + off}]", ctx)
        if isinstance(ret_t, VoidT):
            return "", VoidT()
        return f"{tmp}[0]", ret_t

    def _emit_function(self, d: ast.FunctionDecl) -> tuple[str, P4Type, list[tuple[str, P4Type]]]:
        key = id(d)
        cached = self.functions_emitted.get(key)
        scope = Scope(self.globals)
        if d.proto.type_params:
            raise _err(d, "generic functions are not supported")
        ret_t = self.resolve_type(d.proto.return_type, scope)
        params = []
        pynames = []
        outs = []
        for p in d.proto.params:
            t = self.resolve_type(p.type_ref, scope)
            pyn = self.unique_local(p.name)
            params.append((p.direction, t))
            pynames.append(pyn)
            scope.define(p.name, Binding("value", t, py=pyn, writable=p.direction in ("out", "inout"), decl=p))
            if p.direction in ("out", "inout") and not (p.direction == "inout" and isinstance(t, (StructT, StackT))):
                outs.append(pyn)
        if cached is not None:
            return cached, ret_t, params  # type: ignore[return-value]
        py = self.unique_py("fn_" + d.name)
        self.functions_emitted[key] = py
        w = CodeWriter()
        ret = _ReturnSignal("python", outs, None if isinstance(ret_t, VoidT) else "ret")
        ret.value_type = ret_t  # type: ignore[attr-defined]
        ctx = BodyCtx(w, scope, "function", "", ret)
        w.line(f"def {py}({', '.join(pynames)}):")
        with w.indent():
            self.compile_block_stmt(d.body, ctx)
            if isinstance(ret_t, VoidT):
                if outs:
                    w.line(f"return ({', '.join(outs)},)")
            else:
                w.line(f"raise DataplaneError('function {d.name} ended without return')")
        self.w_funcs.lines.extend(w.lines)
        self.w_funcs.line("")
        return py, ret_t, params

    # ======================================================================== expressions
    def type_of(self, e: ast.Expr, ctx: BodyCtx) -> tuple[str, P4Type]:
        """Type of an expression without emitting code (compiles into a scratch writer)."""
        scratch = BodyCtx(CodeWriter(), ctx.scope, ctx.kind, ctx.prefix, ctx.ret,
                          in_parser=ctx.in_parser, packet_py=ctx.packet_py)
        saved = self._fresh
        try:
            return self.compile_expr(e, scratch)
        finally:
            self._fresh = saved

    def expr_as(self, e: ast.Expr, t: P4Type, ctx: BodyCtx) -> str:
        """Compile ``e`` and convert it implicitly to ``t`` (int literals, list → struct/header)."""
        if isinstance(e, (ast.ListExpr, ast.StructExpr)) and isinstance(t, (StructT, TupleT)):
            return self._compile_initializer(e, t, ctx)
        code, et = self.compile_expr(e, ctx, expected=t)
        return self.coerce(code, et, t, e)

    def coerce(self, code: str, et: P4Type, t: P4Type, node: Any) -> str:
        if isinstance(t, (TypeVar, DontCareT)):
            return code
        if isinstance(t, BitT):
            if isinstance(et, InfIntT):
                return self._const_fit(code, t)
            if isinstance(et, BitT) and et == t:
                return code
            if isinstance(et, EnumT) and et.underlying == t:
                raise _err(node, f"cannot use enum {et} as {t} without a cast")
        elif isinstance(t, InfIntT):
            if isinstance(et, (InfIntT, BitT)):
                return code
        elif same_type(t, et):
            return code
        elif isinstance(t, EnumT) and isinstance(et, EnumT) and t is et:
            return code
        elif isinstance(t, ErrorT) and isinstance(et, ErrorT):
            return code
        elif isinstance(t, StructT) and isinstance(et, StructT) and t.name == et.name:
            return code
        raise _err(node, f"type mismatch: expected {t}, got {et}")

    def _const_fit(self, code: str, t: BitT) -> str:
        try:
            v = int(code, 0)
        except ValueError:
            return self._wrap_code(code, t)
        return str(self._wrap(v, t))

    def _wrap_code(self, code: str, t: BitT) -> str:
        if t.signed:
            half = 1 << (t.width - 1)
            return f"((({code}) + {half} & {t.mask}) - {half})"
        return f"(({code}) & {t.mask})"

    def _compile_initializer(self, e: ast.Expr, t: P4Type, ctx: BodyCtx) -> str:
        if isinstance(t, TupleT):
            if not isinstance(e, ast.ListExpr) or len(e.items) != len(t.elements):
                raise _err(e, f"initializer does not match {t}")
            return "(" + "".join(self.expr_as(i, et, ctx) + ", " for i, et in zip(e.items, t.elements)) + ")"
        assert isinstance(t, StructT)
        if isinstance(e, ast.ListExpr):
            if len(e.items) != len(t.fields):
                raise _err(e, f"{t.name} has {len(t.fields)} fields, initializer has {len(e.items)}")
            pairs = list(zip([n for n, _ in t.fields], e.items))
        else:
            assert isinstance(e, ast.StructExpr)
            names = [n for n, _ in t.fields]
            given = [n for n, _ in e.fields]
            if sorted(given) != sorted(names):
                raise _err(e, f"initializer for {t.name} must set exactly the fields {', '.join(names)}")
            pairs = list(e.fields)
        tmp = self.fresh("init")
        ctx.w.line(f"{tmp} = {t.py_class}()")
        for n, ie in pairs:
            ft = t.field_type(n)
            ctx.w.line(f"{tmp}.{n} = {self.copy_if_compound(self.expr_as(ie, ft, ctx), ft)}")
        if t.is_header:
            ctx.w.line(f"{tmp}._v = True")
        return tmp

    def compile_expr(self, e: ast.Expr, ctx: BodyCtx, lvalue: bool = False,
                     expected: P4Type | None = None) -> tuple[str, P4Type]:
        if isinstance(e, ast.IntLit):
            if e.width is not None:
                t = BitT(e.width, e.signed)
                return str(self._wrap(e.value, t)), t
            return str(e.value), InfIntT()
        if isinstance(e, ast.BoolLit):
            return ("True" if e.value else "False"), BoolT()
        if isinstance(e, ast.StringLit):
            return repr(e.value), StringT()
        if isinstance(e, ast.Name):
            b = (self.globals if e.top_level else ctx.scope).lookup(e.name)
            if b is None:
                raise _err(e, f"unknown name '{e.name}'")
            if b.kind in ("value", "const"):
                if b.kind == "const" and isinstance(b.value, tuple):
                    return repr(b.value), b.type
                return b.py, b.type
            if b.kind == "match_kind":
                return repr(b.value), self.match_kind_type
            if b.kind == "table":
                return b.py, b.type
            if b.kind in ("extern", "instance", "packet_in", "packet_out"):
                return b.py, b.type
            raise _err(e, f"'{e.name}' is not a value")
        if isinstance(e, ast.TypeMember):
            v, t = self._const(e, ctx.scope)
            return str(v), t
        if isinstance(e, ast.Member):
            return self._compile_member(e, ctx, lvalue)
        if isinstance(e, ast.Index):
            base, bt = self.compile_expr(e.expr, ctx, lvalue)
            if not isinstance(bt, StackT):
                raise _err(e, f"a value of type {bt} cannot be indexed")
            ok, idx, _ = self.try_const(e.index, ctx.scope)
            if ok:
                if not isinstance(idx, int) or not 0 <= idx < bt.size:
                    raise _err(e, f"index {idx} out of range for {bt}")
                return f"{base}.items[{idx}]", bt.element
            return f"stack_get({base}, {self._stack_index(e.index, ctx)})", bt.element
        if isinstance(e, ast.Slice):
            base, bt = self.compile_expr(e.expr, ctx)
            if not isinstance(bt, BitT):
                raise _err(e, f"a value of type {bt} cannot be sliced")
            hi = self.const_eval(e.high, ctx.scope)
            lo = self.const_eval(e.low, ctx.scope)
            self._check_slice(e, bt, hi, lo)
            width = hi - lo + 1
            code = f"(({base} >> {lo}) & {(1 << width) - 1})" if lo else f"({base} & {(1 << width) - 1})"
            return code, BitT(width)
        if isinstance(e, ast.Call):
            code, t = self.compile_call(e, ctx, statement=False)
            if isinstance(t, VoidT):
                raise _err(e, "call returns no value")
            return code, t
        if isinstance(e, ast.BinOp):
            return self._compile_binop(e, ctx)
        if isinstance(e, ast.UnaryOp):
            return self._compile_unary(e, ctx)
        if isinstance(e, ast.Cast):
            return self._compile_cast(e, ctx)
        if isinstance(e, ast.Conditional):
            cond = self.expr_as(e.cond, BoolT(), ctx)
            (a, ta), then_lines = self._compile_lazy(lambda: self.compile_expr(e.then, ctx), ctx)
            (b, tb), else_lines = self._compile_lazy(lambda: self.compile_expr(e.otherwise, ctx), ctx)
            t = self._unify(ta, tb, e)
            a = self.coerce(a, ta, t, e.then)
            b = self.coerce(b, tb, t, e.otherwise)
            if not then_lines and not else_lines:
                return f"({a} if {cond} else {b})", t
            # an operand with statements (table apply, call with out arguments): only the
            # chosen one is evaluated
            tmp = self.fresh("c")
            ctx.w.line(f"if {cond}:")
            with ctx.w.indent():
                ctx.w.lines.extend(then_lines)
                ctx.w.line(f"{tmp} = {a}")
            ctx.w.line("else:")
            with ctx.w.indent():
                ctx.w.lines.extend(else_lines)
                ctx.w.line(f"{tmp} = {b}")
            return tmp, t
        if isinstance(e, ast.ListExpr):
            if isinstance(expected, (StructT, TupleT)):
                return self._compile_initializer(e, expected, ctx), expected
            items = [self.compile_expr(i, ctx) for i in e.items]
            return "(" + "".join(c + ", " for c, _ in items) + ")", TupleT([t for _, t in items])
        if isinstance(e, ast.StructExpr):
            if isinstance(expected, StructT):
                return self._compile_initializer(e, expected, ctx), expected
            raise _err(e, "a structure initializer needs a known target type here")
        if isinstance(e, ast.This):
            raise _err(e, "`this` is only supported inside RegisterAction bodies")
        if isinstance(e, ast.DontCare):
            return "0", DontCareT()
        if isinstance(e, ast.ConstructorCall):
            raise _err(e, "constructor calls are only allowed in instantiations")
        raise _err(e, f"unsupported expression {type(e).__name__}")

    def _compile_member(self, e: ast.Member, ctx: BodyCtx, lvalue: bool) -> tuple[str, P4Type]:
        # table apply results: t.apply().hit / .miss / .action_run
        if isinstance(e.expr, ast.Call) and isinstance(e.expr.func, ast.Member) and e.expr.func.member == "apply":
            bb = self._binding_of(e.expr.func.expr, ctx)
            if bb is not None and bb.kind == "table":
                if e.member in ("hit", "miss"):
                    trec, idx = self.compile_table_apply(e.expr.func.expr, ctx)
                    hit = ctx.scope.lookup(f"$hit:{idx}").py
                    return (hit if e.member == "hit" else f"(not {hit})"), BoolT()
                if e.member == "action_run":
                    raise _err(e, "action_run can only be used in a switch statement")
                raise _err(e, f"table apply result has no member '{e.member}'")
        # enum / error members written as Name.member where Name is a type
        if isinstance(e.expr, ast.Name):
            b = ctx.scope.lookup(e.expr.name)
            if b is not None and b.kind == "type":
                v, t = self._const(ast.TypeMember(ast.NamedTypeRef(e.expr.name, pos=e.pos), e.member, pos=e.pos), ctx.scope)
                return str(v), t
        base, bt = self.compile_expr(e.expr, ctx, lvalue)
        if isinstance(bt, StructT):
            ft = bt.field_type(e.member)
            if ft is None:
                raise _err(e, f"{bt.kind} {bt.name} has no field '{e.member}'")
            return f"{base}.{e.member}", ft
        if isinstance(bt, StackT):
            m = e.member
            if m == "next":
                return f"stack_get({base}, {base}.nxt)", bt.element
            if m == "last":
                return f"stack_get({base}, {base}.nxt - 1)", bt.element
            if m == "size":
                return str(bt.size), BitT(32)
            if m == "lastIndex":
                return f"(({base}.nxt - 1) & 0xffffffff)", BitT(32)
            if m == "nextIndex":
                return f"{base}.nxt", BitT(32)
            raise _err(e, f"header stack has no member '{m}'")
        raise _err(e, f"a value of type {bt} has no member '{e.member}'")

    def _compile_lazy(self, compile_fn: Any, ctx: BodyCtx) -> tuple[Any, list[str]]:
        """Compile an operand that P4 evaluates only conditionally (right of && / ||, arms of
        ?:). Returns compile_fn's result and the statements the operand needs (a table apply,
        a call with out arguments), indented one level deeper than the current code."""
        saved = ctx.w
        sub = CodeWriter()
        sub.level = saved.level + 1
        ctx.w = sub
        try:
            result = compile_fn()
        finally:
            ctx.w = saved
        return result, sub.lines

    def _unify(self, ta: P4Type, tb: P4Type, node: Any) -> P4Type:
        if isinstance(ta, InfIntT):
            return tb
        if isinstance(tb, InfIntT):
            return ta
        if same_type(ta, tb) or (isinstance(ta, StructT) and ta is tb) or (isinstance(ta, EnumT) and ta is tb) \
                or (isinstance(ta, ErrorT) and isinstance(tb, ErrorT)):
            return ta
        raise _err(node, f"type mismatch: {ta} and {tb}")

    def _compile_binop(self, e: ast.BinOp, ctx: BodyCtx) -> tuple[str, P4Type]:
        op = e.op
        ok, v, t = self.try_const(e, ctx.scope)
        if ok and not isinstance(t, TupleT):
            return (repr(v) if not isinstance(v, bool) else str(v)), t
        if op in ("&&", "||"):
            a = self.expr_as(e.left, BoolT(), ctx)
            b, lines = self._compile_lazy(lambda: self.expr_as(e.right, BoolT(), ctx), ctx)
            if not lines:
                return f"({a} {'and' if op == '&&' else 'or'} {b})", BoolT()
            # the right operand needs statements: run them only when it is evaluated
            tmp = self.fresh("sc")
            ctx.w.line(f"{tmp} = {a}")
            ctx.w.line(f"if {'' if op == '&&' else 'not '}{tmp}:")
            with ctx.w.indent():
                ctx.w.lines.extend(lines)
                ctx.w.line(f"{tmp} = {b}")
            return tmp, BoolT()
        inits = (ast.ListExpr, ast.StructExpr)
        if op in ("==", "!=") and isinstance(e.left, inits) != isinstance(e.right, inits):
            # `hdr.h == {1, 2}`: the initializer takes the type of the other side
            known, init = (e.right, e.left) if isinstance(e.left, inits) else (e.left, e.right)
            kc, kt = self.compile_expr(known, ctx)
            ic, it = self.expr_as(init, kt, ctx), kt
            (a, ta), (b, tb) = ((kc, kt), (ic, it)) if known is e.left else ((ic, it), (kc, kt))
        else:
            a, ta = self.compile_expr(e.left, ctx)
            if contains_call(e.right) and not self.try_const(e.left, ctx.scope)[0]:
                # P4 evaluates left to right: the left operand's value is taken before a call
                # on the right (inlined as statements before this expression) can change it
                tmp = self.fresh("lhs")
                ctx.w.line(f"{tmp} = {self.copy_if_compound(a, ta)}")
                a = tmp
            b, tb = self.compile_expr(e.right, ctx)
        if op in ("<<", ">>"):
            if not isinstance(ta, BitT):
                raise _err(e, f"left operand of {op} must have a fixed width (got {ta}); cast it")
            if isinstance(tb, BitT) and tb.signed:
                raise _err(e, f"shift amount must be unsigned")
            if not isinstance(tb, (BitT, InfIntT)):
                raise _err(e, f"shift amount must be an integer")
            if op == "<<":
                return self._wrap_code(f"{a} << {b}", ta), ta
            if ta.signed:
                return f"({a} >> {b})", ta
            return f"({a} >> {b})", ta
        if op in ("==", "!="):
            t = self._unify(ta, tb, e)
            if isinstance(t, (StructT, StackT)):
                return f"({'' if op == '==' else 'not '}{a}.p4_eq({b}))", BoolT()
            if isinstance(t, TupleT) and any(isinstance(x, (StructT, StackT)) for x in t.elements):
                raise _err(e, f"comparing values of type {t} is not supported")
            a = self.coerce(a, ta, t, e.left)
            b = self.coerce(b, tb, t, e.right)
            return f"({a} {op} {b})", BoolT()
        if op == "++":
            if not isinstance(ta, BitT) or not isinstance(tb, BitT):
                raise _err(e, f"++ needs operands of fixed width (got {ta} and {tb})")
            bb = f"({b} & {tb.mask})" if tb.signed else b
            aa = f"({a} & {ta.mask})" if ta.signed else a
            rt = BitT(ta.width + tb.width, ta.signed)
            code = f"(({aa} << {tb.width}) | {bb})"
            return (self._wrap_code(code, rt) if rt.signed else code), rt
        t = self._unify(ta, tb, e)
        if isinstance(t, InfIntT):
            raise _err(e, f"operands of {op} need a fixed width; cast one of them")
        if not isinstance(t, BitT):
            if op in ("<", ">", "<=", ">=") and isinstance(t, (BitT,)):
                pass
            raise _err(e, f"operator {op} is not defined on {t}")
        a = self.coerce(a, ta, t, e.left)
        b = self.coerce(b, tb, t, e.right)
        if op in ("<", ">", "<=", ">="):
            return f"({a} {op} {b})", BoolT()
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})", t
        if op in ("+", "-", "*"):
            return self._wrap_code(f"{a} {op} {b}", t), t
        if op in ("/", "%"):
            if t.signed:
                raise _err(e, f"{op} on signed values is not supported")
            return f"_div({a}, {b})" if op == "/" else f"_mod({a}, {b})", t
        if op in ("|+|", "|-|"):
            pyop = "+" if op == "|+|" else "-"
            if t.signed:
                lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
            else:
                lo, hi = 0, t.mask
            v = self.fresh("sat")        # a conditional, not min/max calls: hot in INA lanes
            return f"({hi} if ({v} := {a} {pyop} {b}) > {hi} else {lo} if {v} < {lo} else {v})", t
        raise _err(e, f"unsupported operator {op}")

    def _compile_unary(self, e: ast.UnaryOp, ctx: BodyCtx) -> tuple[str, P4Type]:
        ok, v, t = self.try_const(e, ctx.scope)
        if ok and not isinstance(t, TupleT):
            return (repr(v) if not isinstance(v, bool) else str(v)), t
        a, t = self.compile_expr(e.expr, ctx)
        if e.op == "!":
            if not isinstance(t, BoolT):
                raise _err(e, f"! needs a bool operand (got {t})")
            return f"(not {a})", t
        if not isinstance(t, BitT):
            raise _err(e, f"operator {e.op} is not defined on {t}")
        if e.op == "~":
            return (f"(~{a})" if t.signed else f"({a} ^ {t.mask})"), t
        if e.op == "-":
            return self._wrap_code(f"-{a}", t), t
        return a, t

    def _compile_cast(self, e: ast.Cast, ctx: BodyCtx) -> tuple[str, P4Type]:
        if self.arch == "tna" and isinstance(e.expr, ast.Cast):
            from .tofino_rules import check_nested_cast
            check_nested_cast(self, e, ctx)
        tt = self.resolve_type(e.type_ref, ctx.scope)
        if isinstance(e.expr, (ast.ListExpr, ast.StructExpr)) and isinstance(tt, (StructT, TupleT)):
            return self._compile_initializer(e.expr, tt, ctx), tt
        a, t = self.compile_expr(e.expr, ctx)
        if isinstance(tt, BitT):
            if isinstance(t, BitT):
                if t == tt:
                    return a, tt
                if t.signed and not tt.signed:
                    return f"({a} & {tt.mask})", tt
                if not t.signed and tt.signed:
                    return self._wrap_code(a, tt), tt
                if tt.width >= t.width:
                    return a, tt
                return self._wrap_code(a, tt), tt
            if isinstance(t, InfIntT):
                return self._const_fit(a, tt), tt
            if isinstance(t, BoolT):
                if tt.width != 1 or tt.signed:
                    raise _err(e, "bool can only be cast to bit<1>")
                return f"int({a})", tt
            if isinstance(t, EnumT) and t.underlying is not None:
                return self._compile_cast_bits(a, t.underlying, tt), tt
            raise _err(e, f"cannot cast {t} to {tt}")
        if isinstance(tt, BoolT):
            if isinstance(t, BitT) and t.width == 1 and not t.signed:
                return f"({a} != 0)", tt
            if isinstance(t, BoolT):
                return a, tt
            if isinstance(t, InfIntT):
                return f"({a} != 0)", tt
            raise _err(e, f"cannot cast {t} to bool")
        if isinstance(tt, EnumT) and tt.underlying is not None:
            if isinstance(t, (BitT, InfIntT)):
                return self.coerce(a, t, tt.underlying, e) if isinstance(t, InfIntT) else a, tt
        if isinstance(tt, InfIntT) and isinstance(t, (InfIntT, BitT)):
            return a, tt
        if same_type(t, tt) or t is tt:
            return a, tt
        raise _err(e, f"cannot cast {t} to {tt}")

    def _compile_cast_bits(self, a: str, t: BitT, tt: BitT) -> str:
        if t == tt:
            return a
        if t.signed and not tt.signed:
            return f"({a} & {tt.mask})"
        return self._wrap_code(a, tt)

    # ======================================================================== parser
    def _compile_parser_body(self, decl: ast.ParserDecl, ctx: BodyCtx) -> None:
        from .parsergen import compile_parser
        compile_parser(self, decl, ctx)


def _header_field_ok(t: P4Type) -> bool:
    """P4_16 (1.2.x): a header field is bit<N>, int<N>, bool, a serializable enum, or a struct
    whose fields are all such types (recursively)."""
    if isinstance(t, (BitT, BoolT)) or (isinstance(t, EnumT) and t.underlying is not None):
        return True
    if isinstance(t, StructT) and t.kind == "struct":
        return all(_header_field_ok(ft) for _, ft in t.fields)
    return False


def contains_call(node: Any) -> bool:
    """Whether an expression has a call (a function, method or table apply) anywhere in it."""
    if isinstance(node, ast.Call):
        return True
    if isinstance(node, list):
        return any(contains_call(n) for n in node)
    if isinstance(node, ast.Node):
        return any(contains_call(getattr(node, f.name)) for f in fields(node) if f.init and f.name != "pos")
    return False


def _mentions_varbit(tr: ast.TypeRef) -> bool:
    if isinstance(tr, ast.VarbitTypeRef):
        return True
    if isinstance(tr, ast.TupleTypeRef):
        return any(_mentions_varbit(e) for e in tr.elements)
    if isinstance(tr, ast.StackTypeRef):
        return _mentions_varbit(tr.element)
    return False


def contains_return(node: Any) -> bool:
    if isinstance(node, ast.Return):
        return True
    if isinstance(node, ast.Block):
        return any(contains_return(i) for i in node.items)
    if isinstance(node, ast.If):
        return contains_return(node.then) or (node.otherwise is not None and contains_return(node.otherwise))
    if isinstance(node, ast.Switch):
        return any(c.body is not None and contains_return(c.body) for c in node.cases)
    return False


def key_name(e: ast.Expr) -> str:
    """A table key's control-plane name, as p4c writes it into P4Info: its source text, except
    that a validity test ``hdr.h.isValid()`` is named ``hdr.h.$valid$``."""
    if (isinstance(e, ast.Call) and not e.args and isinstance(e.func, ast.Member)
            and e.func.member == "isValid"):
        return f"{expr_text(e.func.expr)}.$valid$"
    return expr_text(e)


def expr_text(e: ast.Expr) -> str:
    """P4 source text of an expression, as p4c writes key names into P4Info."""
    if isinstance(e, ast.Name):
        return ("." if e.top_level else "") + e.name
    if isinstance(e, ast.Member):
        return f"{expr_text(e.expr)}.{e.member}"
    if isinstance(e, ast.Index):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, ast.Slice):
        return f"{expr_text(e.expr)}[{expr_text(e.high)}:{expr_text(e.low)}]"
    if isinstance(e, ast.IntLit):
        if e.width is not None:
            return f"{e.width}{'s' if e.signed else 'w'}{e.value}"
        return str(e.value)
    if isinstance(e, ast.Call):
        return f"{expr_text(e.func)}({', '.join(expr_text(a.value) for a in e.args)})"
    if isinstance(e, ast.BinOp):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, ast.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, ast.TypeMember):
        tn = e.type_ref.name if isinstance(e.type_ref, ast.NamedTypeRef) else "error"
        return f"{tn}.{e.member}"
    return type(e).__name__
