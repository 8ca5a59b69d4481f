"""P4_16 source text before the grammar sees it.

Runs the system C preprocessor (as p4c does) keeping line markers, so every token maps back
to its file and line (:class:`SourceText`); cuts annotation bodies out of the text (they are
free-form token lists); pre-scans for declared type names, which the lexer needs (see
:mod:`p4sim.frontend.parser`).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import CompileError
from . import ast


INCLUDE_DIR = Path(__file__).resolve().parent.parent / "p4include"


@dataclass
class SourceText:
    """Preprocessed text plus, for each of its lines, the original (file, line)."""
    text: str
    line_map: list[tuple[str, int]]

    def origin(self, line: int, col: int = 0) -> ast.Pos:
        if 1 <= line <= len(self.line_map):
            f, ln = self.line_map[line - 1]
            return ast.Pos(f, ln, col)
        return ast.Pos("<input>", line, col)


_LINE_MARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"((?:[^"\\]|\\.)*)"')


def preprocess(path: str, include_dirs: list[str] | tuple[str, ...] = (),
               defines: dict[str, str] | None = None) -> SourceText:
    """Run ``cpp`` the way p4c does and keep a map back to the original lines."""
    if not os.path.isfile(path):
        raise CompileError(f"cannot read program: no such file", path)
    cpp = shutil.which("cpp")
    if cpp is None:
        raise CompileError("the C preprocessor `cpp` is not installed (apt-get install cpp)", path)
    cmd = [cpp, "-undef", "-nostdinc", "-x", "assembler-with-cpp"]
    for d in include_dirs:
        cmd += ["-I", str(d)]
    cmd += ["-I", str(INCLUDE_DIR)]
    for k, v in (defines or {}).items():
        cmd.append(f"-D{k}={v}")
    cmd.append(path)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        msg = proc.stderr.strip().splitlines()
        # cpp writes "file:line:col: error: text"; show its first error line as is.
        first = next((m for m in msg if "error" in m), msg[0] if msg else "preprocessor failed")
        raise CompileError(f"preprocessor: {first}", path)
    lines = proc.stdout.split("\n")
    out: list[str] = []
    line_map: list[tuple[str, int]] = []
    cur_file, cur_line = path, 1
    for raw in lines:
        m = _LINE_MARKER.match(raw)
        if m:
            cur_line = int(m.group(1))
            cur_file = m.group(2).encode().decode("unicode_escape")
            if cur_file == "<stdin>":
                cur_file = path
            out.append("")
            line_map.append((cur_file, cur_line))
            continue
        out.append(raw)
        line_map.append((cur_file, cur_line))
        cur_line += 1
    return SourceText("\n".join(out), line_map)


# ---------------------------------------------------------------------- annotations
_ANNOT_START = re.compile(r'@[A-Za-z_][A-Za-z0-9_]*')


def cut_annotation_bodies(text: str) -> tuple[str, dict[int, str]]:
    """Blank out ``(...)`` / ``[...]`` after ``@name`` and return the bodies by offset of '@'.

    Newlines are kept so line numbers stay right.
    """
    bodies: dict[int, str] = {}
    chars = list(text)
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':                     # skip string literals
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "@":
            m = _ANNOT_START.match(text, i)
            if m:
                j = m.end()
                k = j
                while k < n and text[k] in " \t\r\n":
                    k += 1
                if k < n and text[k] in "([":
                    close = ")" if text[k] == "(" else "]"
                    depth, p = 0, k
                    while p < n:
                        ch = text[p]
                        if ch == '"':
                            p += 1
                            while p < n and text[p] != '"':
                                p += 2 if text[p] == "\\" else 1
                        elif ch in "([":
                            depth += 1
                        elif ch in ")]":
                            depth -= 1
                            if depth == 0:
                                break
                        p += 1
                    bodies[i] = text[k + 1:p]
                    for q in range(j, min(p + 1, n)):
                        if chars[q] != "\n":
                            chars[q] = " "
                    i = p + 1
                    continue
                i = j
                continue
        i += 1
    return "".join(chars), bodies


# ---------------------------------------------------------------------- type-name pre-scan
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*|@[A-Za-z_][A-Za-z0-9_]*|[0-9][0-9A-Za-z_]*|\S')
_KEYWORDS = {
    "abstract", "action", "actions", "apply", "bit", "bool", "const", "control", "default",
    "else", "entries", "enum", "error", "exit", "extern", "false", "header", "header_union",
    "if", "in", "inout", "int", "key", "match_kind", "out", "package", "parser", "priority",
    "return", "select", "state", "string", "struct", "switch", "table", "this", "transition",
    "true", "tuple", "type", "typedef", "value_set", "varbit", "void", "_",
}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def scan_type_names(text: str) -> set[str]:
    """Names declared as types anywhere in the program (p4c's lexer feedback, unscoped)."""
    toks = [t for t in _TOKEN.findall(text) if not t.startswith("@")]
    names: set[str] = set()
    n = len(toks)

    def is_ident(t: str) -> bool:
        return bool(_IDENT.match(t)) and t not in _KEYWORDS

    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < n else ""
        if t in ("header", "header_union", "struct", "control", "parser", "package") and is_ident(nxt):
            names.add(nxt)
        elif t == "extern" and is_ident(nxt) and i + 2 < n and toks[i + 2] in ("{", "<"):
            names.add(nxt)
        elif t == "enum":
            j = i + 1
            if toks[j:j + 1] in (["bit"], ["int"]):
                j += 1
                if toks[j:j + 1] == ["<"]:
                    while j < n and toks[j] != ">":
                        j += 1
                    j += 1
            if j < n and is_ident(toks[j]):
                names.add(toks[j])
        elif t in ("typedef", "type") and (i == 0 or toks[i - 1] in (";", "}", "{") or toks[i - 1].startswith("@")):
            j = i + 1
            while j < n and toks[j] != ";":
                j += 1
            if is_ident(toks[j - 1]):
                names.add(toks[j - 1])
        elif t == "<" and i > 0 and is_ident(toks[i - 1]):
            # `<A, B>` made only of plain identifiers: a type-parameter list.
            j = i + 1
            params = []
            while j < n and is_ident(toks[j]):
                params.append(toks[j])
                if toks[j + 1] == ",":
                    j += 2
                else:
                    j += 1
                    break
            if params and j < n and toks[j] == ">" and toks[j - 1] != ",":
                after = toks[j + 1] if j + 1 < n else ""
                if after in ("(", "{", ";") or is_ident(after):
                    names.update(params)
    return names
