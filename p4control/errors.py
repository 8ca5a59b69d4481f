"""Control-plane errors: a request was refused.

Each class maps one-to-one onto the gRPC status code the P4Runtime spec prescribes, so a server
(p4sim's P4Runtime and BfRuntime servers) reports it with that code and a client (the
controller's targets) raises it for a refusal.
"""
from __future__ import annotations


class ControlPlaneError(Exception):
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
