"""The control-plane view of a loaded program.

p4sim's front end fills a :class:`ProgramInfo`; P4Info generation, the P4Runtime server, the
STF runner and the table runtime all read it. A client builds one from what the switch
describes (:func:`p4control.p4runtime.p4info.program_info_from_p4info`, or
``controller.bfrt_target.program_info_from_bfrt``). Names are the fully qualified P4 names p4c puts in
P4Info (``MyIngress.ipv4_lpm``, ``MyIngress.set_nhop``, ``NoAction``), or the ``@name``
annotation where the program gives one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

MatchKind = Literal["exact", "ternary", "lpm", "range", "optional"]
CounterUnit = Literal["packets", "bytes", "packets_and_bytes"]


@dataclass
class KeyField:
    name: str            # key expression text or @name, e.g. "hdr.ipv4.dstAddr"
    bitwidth: int
    match_kind: MatchKind
    annotations: list[str] = field(default_factory=list)


@dataclass
class ActionParam:
    name: str
    bitwidth: int


@dataclass
class ActionInfo:
    name: str                              # fully qualified, e.g. "MyIngress.set_nhop"
    params: list[ActionParam]
    annotations: list[str] = field(default_factory=list)


@dataclass
class ActionRef:
    """An action a table may use, with its P4 scope annotations."""
    name: str
    table_only: bool = False               # @tableonly
    default_only: bool = False             # @defaultonly
    annotations: list[str] = field(default_factory=list)


# ---- match values of one key field, as the control plane gives them ----

@dataclass(frozen=True)
class Exact:
    value: int


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True)
class Optional:
    value: int


FieldMatch = Union[Exact, Ternary, Lpm, Range, Optional]


@dataclass
class ActionCall:
    name: str                              # fully qualified action name
    args: dict[str, int] = field(default_factory=dict)


@dataclass
class TableEntry:
    """One entry. ``match`` maps key-field name to its match; a field that is absent is a
    wildcard (allowed for ternary/lpm/range/optional only). For tables whose keys are all exact
    or lpm, ``priority`` is 0; otherwise it is > 0 and a larger priority wins (P4Runtime)."""
    match: dict[str, FieldMatch]
    action: ActionCall
    priority: int = 0
    is_const: bool = False


@dataclass
class TableInfo:
    name: str
    keys: list[KeyField]
    actions: list[ActionRef]
    default_action: ActionCall
    default_is_const: bool = False
    const_entries: list[TableEntry] = field(default_factory=list)
    has_const_entries: bool = False        # `const entries`: the table is immutable at run time
    size: int = 1024
    direct_counter: str | None = None
    direct_meter: str | None = None
    annotations: list[str] = field(default_factory=list)

    @property
    def needs_priority(self) -> bool:
        return any(k.match_kind in ("ternary", "range", "optional") for k in self.keys)


@dataclass
class RegisterInfo:
    name: str
    bitwidth: int                          # width of the element type
    size: int
    signed: bool = False
    annotations: list[str] = field(default_factory=list)
    # TNA struct (paired) cells: (name, width) of each field, MSB first. P4Runtime carries such
    # a cell as one bitstring of `bitwidth` bits, the fields concatenated in this order.
    fields: list[tuple[str, int]] = field(default_factory=list)
    struct_name: str = ""                  # the element struct's type name (P4Info's type_info)


@dataclass
class CounterInfo:
    name: str
    size: int                              # 0 for direct counters
    unit: CounterUnit
    direct_table: str | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class MeterInfo:
    name: str
    size: int
    unit: Literal["packets", "bytes"]
    direct_table: str | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class StructField:
    name: str
    bitwidth: int


@dataclass
class DigestInfo:
    name: str                              # the digested struct's type name
    fields: list[StructField]


@dataclass
class ControllerHeader:
    """A header annotated ``@controller_header("packet_in")`` or ``("packet_out")``."""
    name: str                              # "packet_in" or "packet_out"
    type_name: str
    fields: list[StructField]


@dataclass
class ValueSetInfo:
    name: str
    size: int
    fields: list[StructField]


@dataclass
class ProgramInfo:
    arch: Literal["v1model", "tna"]
    tables: dict[str, TableInfo] = field(default_factory=dict)
    actions: dict[str, ActionInfo] = field(default_factory=dict)
    registers: dict[str, RegisterInfo] = field(default_factory=dict)
    counters: dict[str, CounterInfo] = field(default_factory=dict)
    meters: dict[str, MeterInfo] = field(default_factory=dict)
    digests: dict[str, DigestInfo] = field(default_factory=dict)
    controller_headers: dict[str, ControllerHeader] = field(default_factory=dict)
    value_sets: dict[str, ValueSetInfo] = field(default_factory=dict)
    # Actions invoked as statements of a control's apply block (not from another action, not
    # through a table). p4c keeps these in the P4Info, without parameters (see p4sim.p4info).
    direct_calls: set[str] = field(default_factory=set)
