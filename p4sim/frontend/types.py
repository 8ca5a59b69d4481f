"""P4 types as the compiler sees them after name resolution."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class P4Type:
    """Base class. ``width`` is the serialized size in bits where the type has one."""

    def is_scalar_bits(self) -> bool:
        return False


@dataclass(frozen=True)
class BitT(P4Type):
    width: int
    signed: bool = False

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def is_scalar_bits(self) -> bool:
        return True


@dataclass(frozen=True)
class VarbitT(P4Type):
    """varbit<N>: a value is the Python tuple (current width in bits, unsigned value)."""
    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class InfIntT(P4Type):
    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class BoolT(P4Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class StringT(P4Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidT(P4Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class DontCareT(P4Type):
    def __str__(self) -> str:
        return "_"


@dataclass(eq=False)
class ErrorT(P4Type):
    members: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "error"


@dataclass(eq=False)
class MatchKindT(P4Type):
    members: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "match_kind"


@dataclass(eq=False)
class EnumT(P4Type):
    name: str
    members: list[str]
    underlying: BitT | None = None
    values: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name

    def value_of(self, member: str) -> int:
        return self.values[member] if self.underlying else self.members.index(member)


@dataclass(eq=False)
class StructT(P4Type):
    """Header, header union or struct."""
    kind: str                                  # "header" | "header_union" | "struct"
    name: str
    fields: list[tuple[str, P4Type]]
    annotations: list[Any] = field(default_factory=list)
    py_class: str = ""                         # name of the generated Python class
    pad_bits: int = 0                          # TNA @flexible headers: zero bits up to a whole byte
    pos: Any = field(default=None, compare=False)   # the declaration's position (errors)

    def __str__(self) -> str:
        return self.name

    def field_type(self, name: str) -> P4Type | None:
        for n, t in self.fields:
            if n == name:
                return t
        return None

    @property
    def is_header(self) -> bool:
        return self.kind == "header"

    @property
    def width(self) -> int:
        """Serialized width; a header's varbit field counts 0 here (see varbit_field)."""
        return sum(0 if isinstance(t, VarbitT) and self.kind == "header" else bit_width(t)
                   for _, t in self.fields) + self.pad_bits

    @property
    def varbit_field(self) -> "tuple[str, VarbitT] | None":
        for n, t in self.fields:
            if isinstance(t, VarbitT):
                return n, t
        return None


@dataclass(eq=False)
class StackT(P4Type):
    element: StructT
    size: int

    def __str__(self) -> str:
        return f"{self.element}[{self.size}]"


@dataclass(eq=False)
class TupleT(P4Type):
    elements: list[P4Type]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.elements)) + ">"


@dataclass(eq=False)
class TypeVar(P4Type):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class ExternT(P4Type):
    decl: Any                                  # ast.ExternObject
    args: list[P4Type]

    @property
    def name(self) -> str:
        return self.decl.name

    def __str__(self) -> str:
        if self.args:
            return f"{self.name}<{', '.join(map(str, self.args))}>"
        return self.name


@dataclass(eq=False)
class BlockT(P4Type):
    """Type of a parser/control/package declaration or instance."""
    decl: Any
    kind: str                                  # "parser" | "control" | "package"

    def __str__(self) -> str:
        return self.decl.name


@dataclass(eq=False)
class TableT(P4Type):
    table: Any

    def __str__(self) -> str:
        return f"table {self.table.name}"


@dataclass(eq=False)
class ApplyResultT(P4Type):
    table: Any

    def __str__(self) -> str:
        return f"apply_result({self.table.name})"


@dataclass(eq=False)
class ActionRunT(P4Type):
    table: Any

    def __str__(self) -> str:
        return f"action_list({self.table.name})"


def bit_width(t: P4Type) -> int:
    """Serialized width of a type that has one (for hashing, emit, digests)."""
    if isinstance(t, BitT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, StructT):
        if t.is_header and t.varbit_field is not None:
            raise TypeError(f"header {t} has a varbit field: no fixed width")
        return t.width
    if isinstance(t, StackT):
        return t.size * t.element.width
    if isinstance(t, TupleT):
        return sum(bit_width(e) for e in t.elements)
    raise TypeError(f"type {t} has no fixed width")


def same_type(a: P4Type, b: P4Type) -> bool:
    if isinstance(a, (BitT, InfIntT, BoolT, StringT, VoidT, VarbitT)):
        return a == b
    if isinstance(a, StackT) and isinstance(b, StackT):
        return a.size == b.size and same_type(a.element, b.element)
    if isinstance(a, TupleT) and isinstance(b, TupleT):
        return len(a.elements) == len(b.elements) and all(
            same_type(x, y) for x, y in zip(a.elements, b.elements))
    if isinstance(a, ErrorT) and isinstance(b, ErrorT):
        return True
    return a is b
