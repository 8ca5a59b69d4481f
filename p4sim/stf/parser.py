"""Parser for p4c's STF ("simple test framework") files.

The accepted language is the grammar of p4c's ``tools/stf/stf_parser.py`` extended with the
simple_switch_CLI pass-through commands of ``backends/bmv2/bmv2stf.py`` (``Bmv2StfParser``),
tokenised the way ``tools/stf/stf_lexer.py`` does it:

* A statement starts with a keyword (case-insensitive). After ``packet``/``expect`` the lexer
  switches to *packet data* mode until the end of the line: hex digit runs, ``*`` (don't-care
  nibble, expect only) and a final ``$`` (expect only: the output must end there).
* Elsewhere numbers are decimal, ``0x`` hex or ``0b`` binary; hex and binary may contain ``*``
  digits (ternary don't-care). Identifiers may contain ``$`` (``hdr.stack$0.f`` names
  ``hdr.stack[0].f``; ``$A`` names an entry handle) and may be double-quoted.
* Statements are not line-delimited in the p4c grammar (only packet data is); this parser
  follows that, so an ``add`` may continue on the next line.
* As bmv2stf.py sends them: ``packet N`` with no data is an empty packet, and a last lone hex
  digit is a byte of its own (``packet 0 12 3`` sends 12 03).

p4sim extensions (p4sim/stf/README.md), which p4c's driver cannot parse. A file that uses any
of them must say so on its first line, ``# p4sim-stf-extensions: NAME, NAME...`` (a comment
to p4c); elsewhere they are errors, so that every unmarked file stays runnable with p4c's
``run-bmv2-test.py`` (docker/check_with_p4c.sh runs exactly the unmarked ones):

* ``data_comments``: ``#`` comments after packet data (p4c's lexer has no comment rule in
  packet-data mode);
* ``masks``: ``KEY:VALUE&&&MASK`` for ternary keys;
* ``ranges``: ``KEY:LOW..HIGH`` for range keys (bmv2stf.py has no syntax for them at all);
* ``empty_key``: an ``add`` with no key matches;
* ``indexed_names``: ``[N]`` after a component other than the first of a qualified name;
* ``register_read``: a check ``OP VALUE`` after ``register_read NAME INDEX``;
* ``qualified_counter``: a dotted name in ``check_counter``;
* ``implicit_priority`` (checked by the runner): an ``add`` without a priority to a table that
  needs one (bmv2stf.py leaves the priority out and simple_switch_CLI refuses the entry).

Every error is a :class:`StfError` carrying ``file:line:col``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

from p4sim.errors import SourceError


class StfError(SourceError):
    """A malformed STF file, or an STF command that cannot be executed."""

    default_file = "<stf>"


# The p4sim extensions of the STF language, each with how an error message describes it.
EXTENSIONS: dict[str, str] = {
    "data_comments": "a comment after packet data",
    "masks": "a KEY:VALUE&&&MASK ternary match",
    "ranges": "a KEY:LOW..HIGH range match",
    "empty_key": "an 'add' without key matches",
    "indexed_names": "'[N]' after a dotted name component",
    "register_read": "a value check after 'register_read NAME INDEX'",
    "qualified_counter": "a dotted counter name in 'check_counter'",
    # checked by the runner: it needs the table's match kinds
    "implicit_priority": "an entry without a priority in a table with ternary/range/optional keys",
    # a behaviour, declared only: p4sim runs each command to completion before the next
    "ordering": "control-plane changes between packets, output order across passes, or state "
                "one packet's egress reads before the next packet's ingress writes it: orders "
                "p4sim's runner keeps (bmv2 and its STF driver do not wait for earlier packets)",
}
MARKER = "p4sim-stf-extensions"
_MARKER_RE = re.compile(r"#\s*" + MARKER + r"\b\s*(:?)(.*)")


def declared_extensions(text: str, path: str = "<stf>") -> frozenset[str]:
    """The extensions a file declares on its first line (``# p4sim-stf-extensions: a, b``).

    The marker anywhere else, an unknown name or an empty list is an error: a misspelt marker
    must not quietly turn a file back into a portable one.
    """
    names: frozenset[str] = frozenset()
    for lineno, line in enumerate(text.split("\n"), 1):
        hash_at = line.find("#")
        m = _MARKER_RE.match(line, hash_at) if hash_at >= 0 else None
        if m is None:
            continue
        if lineno != 1 or line[:hash_at].strip():
            raise StfError(f"'{MARKER}' must be the first line of the file, on a line of its own",
                           path, lineno, hash_at + 1)
        if not m.group(1):
            raise StfError(f"expected ':' after '{MARKER}'", path, lineno, hash_at + 1)
        listed = [n.strip() for n in m.group(2).split(",")]
        if not any(listed):
            raise StfError(f"'{MARKER}:' lists no extension (known: {', '.join(EXTENSIONS)})",
                           path, lineno, hash_at + 1)
        for n in listed:
            if n not in EXTENSIONS:
                raise StfError(f"unknown STF extension '{n}' (known: {', '.join(EXTENSIONS)})",
                               path, lineno, hash_at + 1)
        names = frozenset(listed)
    return names


def _not_declared(name: str, path: str, line: int, col: int) -> StfError:
    return StfError(f"{EXTENSIONS[name]} is a p4sim extension that p4c's STF driver cannot parse; "
                    f"declare it on the first line: '# {MARKER}: {name}'", path, line, col)


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


# ---------------------------------------------------------------------------------------------
# Lexer

KEYWORDS = (
    "add", "all", "bytes", "check_counter", "expect", "no_packet", "packet", "packets", "remove",
    "setdefault", "wait",
    # bmv2stf.py's simple_switch_CLI pass-through commands
    "mirroring_add", "mirroring_add_mc", "mirroring_delete", "mirroring_get", "mc_mgrp_create",
    "mc_node_create", "mc_node_update", "mc_node_associate", "counter_read", "counter_write",
    "register_read", "register_write", "register_reset", "meter_get_rates", "meter_set_rates",
    "meter_array_set_rates",
)
_STATEMENT_KEYWORDS = frozenset(KEYWORDS) - {"all", "bytes", "packets"}

_KEY_RE = re.compile(r"[A-Za-z_$][A-Za-z_$0-9]*")
# Order matters, as in the ply lexer: ternary hex before binary before decimal; longer
# operators before their prefixes.
_INITIAL_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("WS", re.compile(r"[ \t\r\f\v]+")),
    ("COMMENT", re.compile(r"#[^\n]*")),
    ("HEX", re.compile(r"0[xX][0-9a-fA-F*]+")),
    ("BIN", re.compile(r"0[bB][*01]+")),
    ("DEC", re.compile(r"[0-9]+")),
    ("ID", _KEY_RE),
    ("QID", re.compile(r'"[^"\n]+"')),
    ("TERN", re.compile(r"&&&")),
    ("RANGE", re.compile(r"\.\.")),
    ("EQEQ", re.compile(r"==")),
    ("NEQ", re.compile(r"!=")),
    ("LEQ", re.compile(r"<=")),
    ("GEQ", re.compile(r">=")),
    ("LE", re.compile(r"<")),
    ("GT", re.compile(r">")),
    ("EQUAL", re.compile(r"=")),
    ("COLON", re.compile(r":")),
    ("COMMA", re.compile(r",")),
    ("DOT", re.compile(r"\.")),
    ("LBRACKET", re.compile(r"\[")),
    ("RBRACKET", re.compile(r"\]")),
    ("LPAREN", re.compile(r"\(")),
    ("RPAREN", re.compile(r"\)")),
    ("SLASH", re.compile(r"/")),
]
_DATA_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("WS", re.compile(r"[ \t\r\f\v]+")),
    ("COMMENT", re.compile(r"#[^\n]*")),
    ("DATA", re.compile(r"[0-9a-fA-F]+")),
    ("DATA_TERN", re.compile(r"\*")),
    ("DATA_EXACT", re.compile(r"\$")),
]


@dataclass(frozen=True)
class Token:
    type: str       # rule name, or "KW" for a statement keyword, or "EOF"
    value: str
    line: int
    col: int


def tokenize(text: str, path: str, extensions: frozenset[str] = frozenset(EXTENSIONS)) -> list[Token]:
    """Split STF text into tokens, tracking the lexer states of p4c's STF lexer.

    ``extensions``: those allowed (default: all); the lexer checks ``data_comments`` and the
    characters of ``masks`` and ``ranges``, the parser the rest."""
    tokens: list[Token] = []
    state = "keyword"
    pos = 0
    line = 1
    line_start = 0
    n = len(text)
    while pos < n:
        ch = text[pos]
        if ch == "\n":
            # A newline ends packet data and puts the lexer back to expecting a keyword.
            pos += 1
            line += 1
            line_start = pos
            state = "keyword"
            continue
        col = pos - line_start + 1
        rules = _DATA_RULES if state == "packetdata" else _INITIAL_RULES
        for kind, rx in rules:
            m = rx.match(text, pos)
            if m:
                break
        else:
            what = "invalid packet data" if state == "packetdata" else "illegal character"
            raise StfError(f"{what} {ch!r}", path, line, col)
        value = m.group(0)
        pos = m.end()
        if kind == "COMMENT" and state == "packetdata" and "data_comments" not in extensions:
            raise _not_declared("data_comments", path, line, col)
        if kind == "TERN" and "masks" not in extensions:
            raise _not_declared("masks", path, line, col)
        if kind == "RANGE" and "ranges" not in extensions:
            raise _not_declared("ranges", path, line, col)
        if kind in ("WS", "COMMENT"):
            continue
        if kind == "QID":
            kind, value = "ID", value[1:-1]
        if kind == "ID":
            low = value.lower()
            if state == "keyword" and low in _STATEMENT_KEYWORDS:
                kind = "KW"
                value = low
            elif low in ("packets", "bytes", "all"):
                # Counter types stay keywords everywhere; 'all' only follows 'remove'.
                kind = low.upper()
        if state == "keyword":
            state = "packetdata" if kind == "KW" and value in ("packet", "expect") else "initial"
        tokens.append(Token(kind, value, line, col))
    # Report "unexpected end of file" where the last statement is, not past the last line.
    if tokens:
        last = tokens[-1]
        tokens.append(Token("EOF", "", last.line, last.col + len(last.value)))
    else:
        tokens.append(Token("EOF", "", 1, 1))
    return tokens


# ---------------------------------------------------------------------------------------------
# Parser


def parse_number(text: str) -> Number:
    """Parse a decimal, ``0x`` or ``0b`` literal, with ``*`` don't-care digits in the latter."""
    low = text.lower()
    if low.startswith("0x") or low.startswith("0b"):
        base, bpd = (16, 4) if low[1] == "x" else (2, 1)
        digits = text[2:]
        full = (1 << bpd) - 1
        value = care = 0
        for d in digits:
            value <<= bpd
            care <<= bpd
            if d != "*":
                value |= int(d, base)
                care |= full
        return Number(text, value, care, len(digits), bpd)
    return Number(text, int(text, 10))


_OPS = {"EQEQ": "==", "NEQ": "!=", "LE": "<", "LEQ": "<=", "GT": ">", "GEQ": ">="}
_NUMBER_TOKENS = ("DEC", "HEX", "BIN")


class _Parser:
    def __init__(self, tokens: list[Token], path: str,
                 extensions: frozenset[str] = frozenset(EXTENSIONS)) -> None:
        self.toks = tokens
        self.i = 0
        self.path = path
        self.extensions = extensions

    def extension(self, name: str, tok: Token) -> None:
        """Fail unless the file declared extension ``name`` (used at ``tok``)."""
        if name not in self.extensions:
            raise _not_declared(name, self.path, tok.line, tok.col)

    # -- helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        t = self.toks[self.i]
        if t.type != "EOF":
            self.i += 1
        return t

    def error(self, msg: str, tok: Token | None = None) -> StfError:
        t = tok or self.tok
        return StfError(msg, self.path, t.line, t.col)

    def unexpected(self, wanted: str) -> StfError:
        t = self.tok
        got = "end of file" if t.type == "EOF" else f"'{t.value}'"
        return self.error(f"expected {wanted}, got {got}")

    def expect(self, kind: str, wanted: str) -> Token:
        if self.tok.type != kind:
            raise self.unexpected(wanted)
        return self.next()

    def number(self, wanted: str = "a number") -> Number:
        if self.tok.type not in _NUMBER_TOKENS:
            raise self.unexpected(wanted)
        return parse_number(self.next().value)

    def plain_int(self, wanted: str) -> int:
        t = self.tok
        n = self.number(wanted)
        if n.has_wildcards:
            raise self.error(f"'{n.text}': don't-care digits are not allowed here", t)
        return n.value

    def decimal(self, wanted: str) -> int:
        return int(self.expect("DEC", wanted).value)

    def qualified_name(self, wanted: str = "a name") -> str:
        parts = [self.expect("ID", wanted).value]
        while True:
            if self.tok.type == "LBRACKET":
                if len(parts) > 1:  # p4c's grammar: ID '[' N ']' only as the first component
                    self.extension("indexed_names", self.tok)
                self.next()
                idx = self.decimal("an index")
                self.expect("RBRACKET", "']'")
                parts[-1] += f"[{idx}]"
            elif self.tok.type == "DOT" and self.toks[self.i + 1].type == "ID":
                self.next()
                parts.append(self.next().value)
            else:
                return ".".join(parts)

    def action(self) -> ActionSpec:
        t = self.tok
        name = self.qualified_name("an action name")
        self.expect("LPAREN", "'(' after the action name")
        args: list[tuple[str, Number]] = []
        if self.tok.type != "RPAREN":
            while True:
                arg = self.expect("ID", "an action argument name").value
                self.expect("COLON", "':' after the argument name")
                args.append((arg, self.number("an argument value")))
                if self.tok.type == "COMMA":
                    self.next()
                    continue
                break
        self.expect("RPAREN", "')' or ','")
        return ActionSpec(name, args, t.line, t.col)

    def key_value(self) -> KeyValue:
        num = self.number("a key value")
        if self.tok.type == "SLASH":
            self.next()
            return KeyPrefix(num, self.number("a prefix length"))
        if self.tok.type == "TERN":
            self.next()
            return KeyMasked(num, self.number("a mask"))
        if self.tok.type == "RANGE":
            self.next()
            return KeyRange(num, self.number("the range's upper bound"))
        return KeyNumber(num)

    def logical(self) -> tuple[str, int]:
        if self.tok.type not in _OPS:
            raise self.unexpected("a comparison (==, !=, <, <=, >, >=)")
        op = _OPS[self.next().type]
        return op, self.plain_int("a number")

    # -- statements
    def parse(self) -> list[Command]:
        cmds: list[Command] = []
        while self.tok.type != "EOF":
            cmds.append(self.statement())
        return cmds

    def statement(self) -> Command:
        t = self.tok
        if t.type != "KW":
            if t.type == "ID":
                raise self.error(f"unknown command '{t.value}'")
            raise self.unexpected("a command")
        self.next()
        kw = t.value
        ln, co = t.line, t.col
        handler = getattr(self, "st_" + kw)
        return handler(ln, co)

    def st_packet(self, ln: int, co: int) -> Command:
        port = self.port()
        data = self.packet_data(allow_wildcards=False)
        if data is None:
            # bmv2stf.py sends an empty packet for `packet N` without data (p4c's gauntlet tests)
            return Packet(ln, co, port, b"")
        hexstr = data[0]
        if len(hexstr) % 2:
            # bmv2stf.py (hex_to_byte) makes a last lone digit a byte of its own: "1 2" → 01 02
            hexstr = hexstr[:-1] + "0" + hexstr[-1]
        return Packet(ln, co, port, bytes.fromhex(hexstr))

    def st_expect(self, ln: int, co: int) -> Command:
        port = self.port()
        data = self.packet_data(allow_wildcards=True)
        if data is None:
            return Expect(ln, co, port, None)
        return Expect(ln, co, port, data[0].upper(), data[1])

    def port(self) -> int:
        t = self.tok
        if t.type != "DATA" or not t.value.isdigit():
            raise self.unexpected("a port number")
        self.next()
        return int(t.value)

    def packet_data(self, allow_wildcards: bool) -> tuple[str, bool] | None:
        """Collect the packet-data tokens of this statement: (nibbles, ends-with-$)."""
        parts: list[str] = []
        exact = False
        while self.tok.type in ("DATA", "DATA_TERN", "DATA_EXACT"):
            t = self.next()
            if exact:
                raise self.error("nothing may follow '$' in packet data", t)
            if t.type == "DATA_EXACT":
                if not allow_wildcards:
                    raise self.error("'$' is only allowed in expect", t)
                exact = True
            elif t.type == "DATA_TERN":
                if not allow_wildcards:
                    raise self.error("'*' is only allowed in expect", t)
                parts.append("*")
            else:
                parts.append(t.value)
        if not parts and not exact:
            return None
        return "".join(parts), exact

    def st_no_packet(self, ln: int, co: int) -> Command:
        return NoPacket(ln, co)

    def st_wait(self, ln: int, co: int) -> Command:
        return Wait(ln, co)

    def st_add(self, ln: int, co: int) -> Command:
        table = self.qualified_name("a table name")
        prio = None
        if self.tok.type == "DEC":
            prio = int(self.next().value)
        keys: list[tuple[str, KeyValue, int, int]] = []
        while True:
            t = self.tok
            if t.type != "ID":
                raise self.unexpected("a KEY:VALUE match or an action call")
            save = self.i
            name = self.qualified_name()
            if self.tok.type == "COLON":
                self.next()
                keys.append((name, self.key_value(), t.line, t.col))
                continue
            if self.tok.type == "LPAREN":
                if not keys:  # p4c's match_list has at least one match
                    self.extension("empty_key", t)
                self.i = save
                action = self.action()
                break
            raise self.unexpected("':' (a key match) or '(' (an action call)")
        handle = None
        if self.tok.type == "EQUAL":
            self.next()
            handle = self.expect("ID", "an entry handle name").value
        return Add(ln, co, table, prio, keys, action, handle)

    def st_setdefault(self, ln: int, co: int) -> Command:
        table = self.qualified_name("a table name")
        return SetDefault(ln, co, table, self.action())

    def st_remove(self, ln: int, co: int) -> Command:
        if self.tok.type != "ALL":
            raise self.unexpected("'all' (only 'remove all' is supported by the STF grammar)")
        self.next()
        return RemoveAll(ln, co)

    def st_check_counter(self, ln: int, co: int) -> Command:
        t = self.tok
        name = self.qualified_name("a counter name")
        if "." in name or "[" in name:  # bmv2stf.py: CHECK_COUNTER ID LPAREN ...
            self.extension("qualified_counter", t)
        self.expect("LPAREN", "'(' after the counter name")
        if self.tok.type == "ID":
            index: Union[int, str] = self.next().value.lstrip("$")
        else:
            index = self.plain_int("an index or $handle")
        self.expect("RPAREN", "')'")
        count_type, op, value = None, "==", 0
        if self.tok.type in ("PACKETS", "BYTES"):
            count_type = self.next().type.lower()
            op, value = self.logical()
        return CheckCounter(ln, co, name, index, count_type, op, value)

    def st_mirroring_add(self, ln: int, co: int) -> Command:
        return MirroringAdd(ln, co, self.plain_int("a session id"), self.plain_int("a port"))

    def st_mirroring_add_mc(self, ln: int, co: int) -> Command:
        return MirroringAddMc(ln, co, self.plain_int("a session id"),
                              self.plain_int("a multicast group"))

    def st_mirroring_delete(self, ln: int, co: int) -> Command:
        return MirroringDelete(ln, co, self.plain_int("a session id"))

    def st_mirroring_get(self, ln: int, co: int) -> Command:
        return MirroringGet(ln, co, self.plain_int("a session id"))

    def st_mc_mgrp_create(self, ln: int, co: int) -> Command:
        return McMgrpCreate(ln, co, self.plain_int("a multicast group id"))

    def number_list(self, wanted: str) -> list[int]:
        out = [self.plain_int(wanted)]
        while self.tok.type in _NUMBER_TOKENS:
            out.append(self.plain_int(wanted))
        return out

    def st_mc_node_create(self, ln: int, co: int) -> Command:
        rid = self.plain_int("a replication id")
        return McNodeCreate(ln, co, rid, self.number_list("a port"))

    def st_mc_node_update(self, ln: int, co: int) -> Command:
        node = self.plain_int("a node handle")
        return McNodeUpdate(ln, co, node, self.number_list("a port"))

    def st_mc_node_associate(self, ln: int, co: int) -> Command:
        return McNodeAssociate(ln, co, self.plain_int("a multicast group handle"),
                               self.plain_int("a node handle"))

    def st_counter_read(self, ln: int, co: int) -> Command:
        return CounterRead(ln, co, self.qualified_name("a counter name"),
                           self.plain_int("an index"))

    def st_counter_write(self, ln: int, co: int) -> Command:
        return CounterWrite(ln, co, self.qualified_name("a counter name"),
                            self.plain_int("an index"), self.plain_int("a packet count"),
                            self.plain_int("a byte count"))

    def st_register_read(self, ln: int, co: int) -> Command:
        name = self.qualified_name("a register name")
        index = self.plain_int("an index")
        if self.tok.type in _OPS:
            self.extension("register_read", self.tok)
            op, value = self.logical()
            return RegisterRead(ln, co, name, index, op, value)
        return RegisterRead(ln, co, name, index)

    def st_register_write(self, ln: int, co: int) -> Command:
        return RegisterWrite(ln, co, self.qualified_name("a register name"),
                             self.plain_int("an index"), self.plain_int("a value"))

    def st_register_reset(self, ln: int, co: int) -> Command:
        return RegisterReset(ln, co, self.qualified_name("a register name"))

    def st_meter_get_rates(self, ln: int, co: int) -> Command:
        return MeterGetRates(ln, co, self.qualified_name("a meter name"),
                             self.plain_int("an index"))

    def rates(self) -> list[tuple[float, int]]:
        out: list[tuple[float, int]] = []
        while True:
            whole = self.plain_int("a rate")
            rate = float(whole)
            if self.tok.type == "DOT":
                self.next()
                frac = self.expect("DEC", "the fractional digits of the rate").value
                rate = float(f"{whole}.{frac}")
            self.expect("COLON", "':' between rate and burst size")
            out.append((rate, self.plain_int("a burst size")))
            if self.tok.type not in _NUMBER_TOKENS:
                return out

    def st_meter_set_rates(self, ln: int, co: int) -> Command:
        name = self.qualified_name("a meter name")
        index = self.plain_int("an index")
        return MeterSetRates(ln, co, name, index, self.rates())

    def st_meter_array_set_rates(self, ln: int, co: int) -> Command:
        name = self.qualified_name("a meter name")
        return MeterSetRates(ln, co, name, None, self.rates())


def parse_stf(text: str, path: str = "<stf>") -> StfFile:
    """Parse STF source text. Raises :class:`StfError` with the position of the first error;
    p4sim extensions must be declared on the first line (:func:`declared_extensions`)."""
    extensions = declared_extensions(text, path)
    commands = _Parser(tokenize(text, path, extensions), path, extensions).parse()
    return StfFile(path, commands, extensions)


def parse_stf_file(path: str) -> StfFile:
    """Read and parse an STF file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise StfError(f"cannot read STF file: {e.strerror}", path) from None
    except UnicodeDecodeError as e:
        raise StfError(f"not a text file: {e.reason}", path) from None
    return parse_stf(text, path)
