"""Syntax tree of a P4_16 program, as built by :mod:`p4sim.frontend.parser`.

Nodes are plain dataclasses. Every node has ``pos`` (file, line, column) so that later passes
can report errors where the user wrote the construct. The checker attaches types to
expressions (``Expr.type``) and resolved declarations to names (``Name.decl``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Pos:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NOPOS = Pos("<builtin>", 0, 0)


@dataclass
class Annotation:
    name: str
    body: str            # raw text between the brackets, "" when there are none
    pos: Pos = NOPOS

    def string_arg(self) -> str | None:
        """The body as a single string literal (``@name("x")`` → ``x``), else None."""
        text = self.body.strip()
        if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
            return text[1:-1]
        return None


def find_annotation(annotations: list[Annotation], name: str) -> Annotation | None:
    for a in annotations:
        if a.name == name:
            return a
    return None


@dataclass
class Node:
    pos: Pos = field(default=NOPOS, kw_only=True)


# ------------------------------------------------------------------ type syntax
@dataclass
class TypeRef(Node):
    pass


@dataclass
class BitTypeRef(TypeRef):
    width: Expr | None          # None: plain `bit` (= bit<1>)
    signed: bool = False


@dataclass
class InfIntTypeRef(TypeRef):
    pass


@dataclass
class VarbitTypeRef(TypeRef):
    width: Expr


@dataclass
class SimpleTypeRef(TypeRef):
    kind: str                   # "bool" | "error" | "string" | "void" | "_"


@dataclass
class NamedTypeRef(TypeRef):
    name: str
    args: list[TypeRef] = field(default_factory=list)


@dataclass
class StackTypeRef(TypeRef):
    element: TypeRef
    size: Expr


@dataclass
class TupleTypeRef(TypeRef):
    elements: list[TypeRef]


# ------------------------------------------------------------------ expressions
@dataclass
class Expr(Node):
    type: Any = field(default=None, init=False, repr=False, compare=False)


@dataclass
class IntLit(Expr):
    value: int
    width: int | None = None    # 8w5 → 8
    signed: bool = False


@dataclass
class BoolLit(Expr):
    value: bool


@dataclass
class StringLit(Expr):
    value: str


@dataclass
class Name(Expr):
    name: str
    top_level: bool = False
    decl: Any = field(default=None, init=False, repr=False, compare=False)


@dataclass
class This(Expr):
    pass


@dataclass
class Member(Expr):
    expr: Expr
    member: str


@dataclass
class TypeMember(Expr):
    """``EnumType.MEMBER``, ``error.NoMatch``."""
    type_ref: TypeRef
    member: str


@dataclass
class Index(Expr):
    expr: Expr
    index: Expr


@dataclass
class Slice(Expr):
    expr: Expr
    high: Expr
    low: Expr


@dataclass
class Argument(Node):
    value: Expr
    name: str | None = None


@dataclass
class Call(Expr):
    func: Expr
    args: list[Argument]
    type_args: list[TypeRef] = field(default_factory=list)


@dataclass
class ConstructorCall(Expr):
    """``T(args)`` or ``T<A>(args)`` used as an expression (an extern or control instance)."""
    type_ref: TypeRef
    args: list[Argument]


@dataclass
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass
class UnaryOp(Expr):
    op: str                     # "!", "~", "-", "+"
    expr: Expr


@dataclass
class Cast(Expr):
    type_ref: TypeRef
    expr: Expr


@dataclass
class Conditional(Expr):
    cond: Expr
    then: Expr
    otherwise: Expr


@dataclass
class ListExpr(Expr):
    items: list[Expr]


@dataclass
class StructExpr(Expr):
    fields: list[tuple[str, Expr]]


@dataclass
class DontCare(Expr):
    pass


@dataclass
class DefaultExpr(Expr):
    pass


# ------------------------------------------------------------------ keysets (select / entries)
@dataclass
class Keyset(Node):
    pass


@dataclass
class KsExpr(Keyset):
    expr: Expr


@dataclass
class KsMask(Keyset):
    value: Expr
    mask: Expr


@dataclass
class KsRange(Keyset):
    low: Expr
    high: Expr


@dataclass
class KsDefault(Keyset):
    pass


@dataclass
class KsTuple(Keyset):
    items: list[Keyset]


# ------------------------------------------------------------------ statements
@dataclass
class Stmt(Node):
    pass


@dataclass
class Assign(Stmt):
    target: Expr
    value: Expr
    op: str | None = None       # compound assignment `target op= value` (op without '=')


@dataclass
class CallStmt(Stmt):
    call: Call


@dataclass
class If(Stmt):
    cond: Expr
    then: Stmt
    otherwise: Stmt | None


@dataclass
class Block(Stmt):
    items: list[Node]           # statements and local declarations


@dataclass
class Exit(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: Expr | None


@dataclass
class SwitchCase(Node):
    label: Expr | None          # None: default
    body: Block | None          # None: falls through to the next case


@dataclass
class Switch(Stmt):
    expr: Expr
    cases: list[SwitchCase]


@dataclass
class Empty(Stmt):
    pass


@dataclass
class DirectApply(Stmt):
    type_ref: TypeRef
    args: list[Argument]


# ------------------------------------------------------------------ declarations
@dataclass
class Decl(Node):
    name: str
    annotations: list[Annotation] = field(default_factory=list, kw_only=True)


@dataclass
class ConstDecl(Decl):
    type_ref: TypeRef
    value: Expr


@dataclass
class VarDecl(Decl):
    type_ref: TypeRef
    init: Expr | None


@dataclass
class Param(Decl):
    direction: str              # "" (directionless), "in", "out", "inout"
    type_ref: TypeRef
    default: Expr | None = None


@dataclass
class Instantiation(Decl):
    type_ref: TypeRef
    args: list[Argument]
    members: list[Decl] = field(default_factory=list)   # `= { ... }` initializer


@dataclass
class FunctionProto(Decl):
    return_type: TypeRef
    type_params: list[str]
    params: list[Param]
    abstract: bool = False
    is_constructor: bool = False


@dataclass
class ExternObject(Decl):
    type_params: list[str]
    methods: list[FunctionProto]


@dataclass
class ExternFunction(Decl):
    proto: FunctionProto


@dataclass
class FunctionDecl(Decl):
    proto: FunctionProto
    body: Block


@dataclass
class ActionDecl(Decl):
    params: list[Param]
    body: Block


@dataclass
class FieldDecl(Decl):
    type_ref: TypeRef


@dataclass
class StructLikeDecl(Decl):
    kind: str                   # "header" | "header_union" | "struct"
    fields: list[FieldDecl]


@dataclass
class EnumDecl(Decl):
    members: list[str]
    underlying: TypeRef | None = None
    values: list[Expr] = field(default_factory=list)


@dataclass
class TypedefDecl(Decl):
    type_ref: TypeRef
    is_newtype: bool = False


@dataclass
class ErrorDecl(Decl):
    members: list[str]


@dataclass
class MatchKindDecl(Decl):
    members: list[str]


@dataclass
class BlockTypeDecl(Decl):
    """Declaration of a parser, control or package *type* (no body)."""
    kind: str                   # "parser" | "control" | "package"
    type_params: list[str]
    params: list[Param]


@dataclass
class SelectCase(Node):
    keyset: Keyset
    state: str


@dataclass
class Transition(Node):
    state: str | None                       # direct transition
    select_on: list[Expr] = field(default_factory=list)
    cases: list[SelectCase] = field(default_factory=list)


@dataclass
class ParserState(Decl):
    statements: list[Node]
    transition: Transition | None


@dataclass
class ValueSetDecl(Decl):
    element_type: TypeRef
    size: Expr


@dataclass
class ParserDecl(Decl):
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    states: list[ParserState]


@dataclass
class KeyElement(Node):
    expr: Expr
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ActionRefNode(Node):
    name: str
    args: list[Argument] | None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class EntryNode(Node):
    keyset: Keyset
    action: ActionRefNode
    priority: Expr | None = None
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class TableProperty(Node):
    name: str
    value: Any                  # Expr, list[KeyElement], list[ActionRefNode], list[EntryNode]
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class TableDecl(Decl):
    properties: list[TableProperty]

    def prop(self, name: str) -> TableProperty | None:
        for p in self.properties:
            if p.name == name:
                return p
        return None


@dataclass
class ControlDecl(Decl):
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    body: Block


@dataclass
class Program(Node):
    declarations: list[Decl]
    source_files: list[str] = field(default_factory=list)   # files read; the main one last
