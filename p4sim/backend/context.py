"""What the Python and C generators share: bindings and scopes, the compiled-program records,
the body context, the error helper and small AST queries.

It sits below the compiler and the generators (externs, parser, architecture, Tofino rules,
cgen) so they can import it without importing the compiler, which imports them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ..errors import CompileError
from ..frontend import ast
from ..frontend.types import BitT, BoolT, EnumT, ExternT, P4Type, StructT
from p4control import model
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
