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

from typing import Union

# the parsed form and the lexer live in their own modules; their names are the parser's
from p4sim.stf.commands import (ActionSpec, Add, CheckCounter, Command, CounterRead, CounterWrite,  # noqa: F401
                                Expect, KeyMasked, KeyNumber, KeyPrefix, KeyRange, KeyValue,
                                McMgrpCreate, McNodeAssociate, McNodeCreate, McNodeUpdate,
                                MeterGetRates, MeterSetRates, MirroringAdd, MirroringAddMc,
                                MirroringDelete, MirroringGet, NoPacket, Number, Packet,
                                RegisterRead, RegisterReset, RegisterWrite, RemoveAll, SetDefault,
                                StfFile, Wait)
from p4sim.stf.lexer import (EXTENSIONS, KEYWORDS, MARKER, StfError, Token,  # noqa: F401
                             _DATA_RULES, _INITIAL_RULES, _KEY_RE, _MARKER_RE, _STATEMENT_KEYWORDS,
                             _not_declared, declared_extensions, tokenize)


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
