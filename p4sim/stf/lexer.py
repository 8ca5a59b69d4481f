"""Lexer of STF files, and what it shares with the parser: :class:`StfError` and the p4sim
extensions of the STF language a file declares on its first line.

The language and its extensions are described in :mod:`p4sim.stf.parser`, which re-exports
every name of this module.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

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
