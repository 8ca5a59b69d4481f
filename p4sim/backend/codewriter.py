"""Indented Python source builder used by the code generator."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


# Trailing comment on the first line generated from a P4 statement or declaration, so that a
# later pass over the generated code (the C backend) can name the P4 position it came from.
POS_MARKER = "  # @p4 "


class CodeWriter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0
        self._counter = 0
        self.pos: object | None = None        # the P4 position being compiled (file:line:col)
        self._marked: object | None = None

    def line(self, text: str) -> None:
        mark = ""
        if self.pos is not None and self.pos is not self._marked:
            mark = f"{POS_MARKER}{self.pos}"
            self._marked = self.pos
        self.lines.append("    " * self.level + text + mark)

    @contextmanager
    def at(self, pos: object | None) -> Iterator[None]:
        """Lines written inside come from the P4 construct at pos (None or a builtin: unchanged)."""
        if pos is None or getattr(pos, "line", 0) <= 0:
            yield
            return
        outer, self.pos = self.pos, pos
        try:
            yield
        finally:
            self.pos = outer

    @contextmanager
    def indent(self) -> Iterator[None]:
        self.level += 1
        mark = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == mark:      # an empty Python block needs a statement
                self.line("pass")
            self.level -= 1

    def fresh(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
