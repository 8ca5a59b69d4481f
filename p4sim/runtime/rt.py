"""Run-time support imported by generated code: control-flow signals, header stacks and the
per-packet context. Kept tiny because generated code calls into it on the fast path."""
from __future__ import annotations

from typing import Any


class ExitBlock(Exception):
    """`exit`: ends the enclosing top-level parser/control block."""


class ParserReject(Exception):
    """The parser reached `reject`, failed a `verify` or hit an extract error."""

    def __init__(self, error_code: int, offset: int) -> None:
        super().__init__(error_code)
        self.error_code = error_code
        self.offset = offset


class DataplaneError(Exception):
    """The program did something the target refuses at run time (bmv2 would abort)."""


def register_twice_message(register: str) -> str:
    """The DataplaneError of a second RegisterAction execution on one register in one pass
    (tna; both backends raise it)."""
    return (f"register {register} accessed twice in one pipeline pass "
            "(Tofino allows one RegisterAction execution per pass)")


class Stack:
    """A header stack: ``items`` plus bmv2's ``nextIndex``."""

    __slots__ = ("items", "nxt")

    def __init__(self, items: list) -> None:
        self.items = items
        self.nxt = 0

    def copy(self) -> "Stack":
        s = Stack([h.copy() for h in self.items])
        s.nxt = self.nxt
        return s

    def p4_eq(self, other: "Stack") -> bool:
        """P4 `==` on stacks: element by element (nextIndex is not compared)."""
        return all(a.p4_eq(b) for a, b in zip(self.items, other.items))

    def push_front(self, count: int) -> None:
        items = self.items
        n = len(items)
        count = min(count, n)
        for i in range(n - 1, count - 1, -1):
            items[i] = items[i - count]
        cls = type(items[0]) if n else None
        for i in range(count):
            items[i] = cls()
        self.nxt = min(self.nxt + count, n)

    def pop_front(self, count: int) -> None:
        items = self.items
        n = len(items)
        count = min(count, n)
        cls = type(items[0]) if n else None
        for i in range(n - count):
            items[i] = items[i + count]
        for i in range(n - count, n):
            items[i] = cls()
        self.nxt = max(self.nxt - count, 0)


def div(a: int, b: int) -> int:
    if b == 0:
        raise DataplaneError("division by zero")
    return a // b


def mod(a: int, b: int) -> int:
    if b == 0:
        raise DataplaneError("modulo by zero")
    return a % b


class PacketIn:
    """The packet a parser reads: the bytes and the current byte offset."""

    __slots__ = ("buf", "off")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.off = 0


def stack_get(stack: Stack, index: int) -> Any:
    """Run-time index into a stack. Out of range, as p4c compiles it for bmv2 (its header
    stack index expansion): reading gives an invalid header, writing changes nothing, so the
    result is a throwaway invalid element."""
    if 0 <= index < len(stack.items):
        return stack.items[index]
    return type(stack.items[0])()


def stack_set(stack: Stack, index: int, value: Any) -> None:
    """`stack[index] = value` with a run-time index; out of range it does nothing."""
    if 0 <= index < len(stack.items):
        stack.items[index] = value


class PacketContext:
    """Per-packet state the architecture's externs read and write (clone, resubmit, digest...)."""

    __slots__ = ("clone_session", "clone_type", "clone_field_list", "resubmit_field_list",
                 "recirculate_field_list", "digests", "truncate_length", "payload",
                 "register_pass", "logs", "packet_length", "std_meta")

    def __init__(self, packet_length: int = 0, std_meta: Any = None) -> None:
        self.packet_length = packet_length
        self.std_meta = std_meta
        self.clone_session: int | None = None
        self.clone_type = 0
        self.clone_field_list: int | None = None
        self.resubmit_field_list: int | None = None
        self.recirculate_field_list: int | None = None
        self.digests: list[tuple[str, Any]] = []
        self.truncate_length = 0
        self.payload = b""
        self.register_pass: set[str] = set()
        self.logs: list[str] = []
