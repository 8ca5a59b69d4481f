"""BfRuntime (Tofino's control-plane API) for p4sim: bf-rt.json generation and a gRPC server over
a TNA :class:`~p4sim.Switch`. The schema, codec and bindings it shares with the controller's
client are :mod:`p4control.bfrt`.

    python -m p4sim bfrt-json PROGRAM.p4 [-o bf-rt.json]
    python -m p4sim serve PROGRAM.p4 --arch tna --bfrt-addr HOST:PORT [-i PORT@IFACE ...]
"""
from __future__ import annotations

# first: it fixes the protobuf backend before anything imports protobuf
from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (selects the protobuf backend first)


def serve_bfrt(switch, addr: str = "127.0.0.1:50052", **kw):  # type: ignore[no-untyped-def]
    """See :func:`p4sim.bfrt.server.serve_bfrt`."""
    from .server import serve_bfrt as _serve

    return _serve(switch, addr, **kw)


__all__ = ["serve_bfrt"]
