"""Indented Python source builder used by the code generator."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


class CodeWriter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0
        self._counter = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.level + text)

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
