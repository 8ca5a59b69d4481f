"""Errors raised by p4sim.

Front-end errors carry a source position so that users see ``file:line:col: message``.
Control-plane refusals are :mod:`p4control.errors` (shared with the controller); they cannot
derive from :class:`P4SimError` (p4control imports nothing of p4sim), so code that catches
"anything p4sim raises on purpose" catches :data:`P4SIM_ERRORS`.
"""
from __future__ import annotations

from p4control.errors import ControlPlaneError


class P4SimError(Exception):
    """Base class of p4sim's own errors (its control-plane refusals are p4control.errors)."""


class SourceError(P4SimError):
    """An error at a place in an input file, shown as ``file:line:col: message``."""

    default_file = "<input>"

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 col: int | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.file or self.default_file
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        return f"{where}: {self.message}"


class CompileError(SourceError):
    """The program cannot be loaded: a syntax error, a type error or an unsupported construct."""


# every error p4sim raises on purpose: its own and the control-plane refusals
P4SIM_ERRORS: tuple[type[Exception], ...] = (P4SimError, ControlPlaneError)
