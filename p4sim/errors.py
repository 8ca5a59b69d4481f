"""Errors raised by p4sim.

Front-end errors carry a source position so that users see ``file:line:col: message``.
Control-plane errors map one-to-one onto the gRPC status codes the P4Runtime spec prescribes.
"""
from __future__ import annotations


class P4SimError(Exception):
    """Base class of every error p4sim raises on purpose."""


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


class ControlPlaneError(P4SimError):
    """A control-plane request was refused; ``grpc_code`` names the P4Runtime status."""

    grpc_code = "UNKNOWN"


class InvalidArgument(ControlPlaneError):
    grpc_code = "INVALID_ARGUMENT"


class NotFound(ControlPlaneError):
    grpc_code = "NOT_FOUND"


class AlreadyExists(ControlPlaneError):
    grpc_code = "ALREADY_EXISTS"


class OutOfRange(ControlPlaneError):
    grpc_code = "OUT_OF_RANGE"


class ResourceExhausted(ControlPlaneError):
    grpc_code = "RESOURCE_EXHAUSTED"


class Unimplemented(ControlPlaneError):
    grpc_code = "UNIMPLEMENTED"


class PermissionDenied(ControlPlaneError):
    grpc_code = "PERMISSION_DENIED"


class FailedPrecondition(ControlPlaneError):
    grpc_code = "FAILED_PRECONDITION"
