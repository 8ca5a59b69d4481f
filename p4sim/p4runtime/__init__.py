"""P4Runtime support for p4sim: a gRPC server over a :class:`p4sim.Switch`.

Importing this package selects the pure-Python protobuf backend first (see
:mod:`p4control.protobuf_env` for why); the server itself is loaded on first use.
"""
from __future__ import annotations

from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (first)

__all__ = ["P4RuntimeServer", "P4RUNTIME_API_VERSION"]


def __getattr__(name: str):  # lazy: importing the package should not load gRPC and the server
    if name in __all__:
        import p4sim.p4runtime.server as server

        return getattr(server, name)
    raise AttributeError(name)
