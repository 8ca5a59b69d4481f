"""The parsed form of an STF file: values (numbers with don't-care digits, key matches,
action calls), one dataclass per command, and :class:`StfFile`.

Built by :mod:`p4sim.stf.parser`, which re-exports every name of this module; executed by
:mod:`p4sim.stf.runner`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


# ---------------------------------------------------------------------------------------------
# Values


@dataclass(frozen=True)
class Number:
    """A numeric literal as written. ``care`` is the mask of specified bits (None when the
    literal has no ``*`` digits and is decimal, i.e. all bits matter); ``digits`` is the number
    of digits written after the prefix (0 for decimal); ``bits_per_digit`` is 4 for hex, 1 for
    binary and 0 for decimal."""
    text: str
    value: int
    care: int | None = None
    digits: int = 0
    bits_per_digit: int = 0

    @property
    def has_wildcards(self) -> bool:
        return "*" in self.text

    @property
    def is_decimal(self) -> bool:
        return self.bits_per_digit == 0


@dataclass(frozen=True)
class KeyNumber:
    """``KEY:VALUE``."""
    number: Number


@dataclass(frozen=True)
class KeyPrefix:
    """``KEY:VALUE/LEN``."""
    number: Number
    prefix_len: Number


@dataclass(frozen=True)
class KeyMasked:
    """``KEY:VALUE&&&MASK`` (p4sim extension)."""
    number: Number
    mask: Number


@dataclass(frozen=True)
class KeyRange:
    """``KEY:LOW..HIGH`` (p4sim extension)."""
    low: Number
    high: Number


KeyValue = Union[KeyNumber, KeyPrefix, KeyMasked, KeyRange]


@dataclass(frozen=True)
class ActionSpec:
    name: str
    args: list[tuple[str, Number]]
    line: int = 0
    col: int = 0


# ---------------------------------------------------------------------------------------------
# Commands (one dataclass per statement kind; ``line``/``col`` are the keyword's position)


@dataclass
class Command:
    line: int
    col: int


@dataclass
class Packet(Command):
    port: int
    data: bytes


@dataclass
class Expect(Command):
    port: int
    pattern: str | None          # upper-case hex nibbles and '*'; None: any packets are fine
    exact: bool = False          # trailing '$': the packet must not be longer than the pattern


@dataclass
class NoPacket(Command):
    pass


@dataclass
class Add(Command):
    table: str
    priority: int | None
    keys: list[tuple[str, KeyValue, int, int]]   # name, value, line, col
    action: ActionSpec
    handle: str | None = None


@dataclass
class SetDefault(Command):
    table: str
    action: ActionSpec


@dataclass
class RemoveAll(Command):
    pass


@dataclass
class CheckCounter(Command):
    counter: str
    index: Union[int, str]        # an index, or an entry handle name (without '$')
    count_type: str | None        # "packets", "bytes" or None (not given)
    op: str
    value: int


@dataclass
class Wait(Command):
    pass


@dataclass
class MirroringAdd(Command):
    session: int
    port: int


@dataclass
class MirroringAddMc(Command):
    session: int
    group: int


@dataclass
class MirroringDelete(Command):
    session: int


@dataclass
class MirroringGet(Command):
    session: int


@dataclass
class McMgrpCreate(Command):
    group: int


@dataclass
class McNodeCreate(Command):
    rid: int
    ports: list[int]


@dataclass
class McNodeUpdate(Command):
    node: int
    ports: list[int]


@dataclass
class McNodeAssociate(Command):
    group: int
    node: int


@dataclass
class CounterRead(Command):
    name: str
    index: int


@dataclass
class CounterWrite(Command):
    name: str
    index: int
    packets: int
    bytes: int


@dataclass
class RegisterRead(Command):
    name: str
    index: int
    op: str | None = None         # p4sim extension: check the value
    value: int | None = None


@dataclass
class RegisterWrite(Command):
    name: str
    index: int
    value: int


@dataclass
class RegisterReset(Command):
    name: str


@dataclass
class MeterGetRates(Command):
    name: str
    index: int


@dataclass
class MeterSetRates(Command):
    name: str
    index: int | None             # None: meter_array_set_rates (every index)
    rates: list[tuple[float, int]]   # (rate, burst) pairs as bmv2's CLI takes them


@dataclass
class StfFile:
    path: str
    commands: list[Command] = field(default_factory=list)
    extensions: frozenset[str] = frozenset()   # declared on the first line
