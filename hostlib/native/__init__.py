"""The native (C) host data path: C files beside this package, built at first use and loaded
with ctypes.

The C code owns the common case of the sans-IO cores — a worker's first copies, its current
round's results and fast retransmits; the PS's network contributions and the results it sends —
and the UDP loops around them (recvmmsg into a ring, sendmmsg straight from the round's frames).
Everything else is handed to the Python cores (hostlib.worker.Worker, hostlib.ps.ParameterServer),
which stay the reference: around every hand-off the state is synced both ways through each
core's ``export_state``/``import_state``, so the protocol logic exists once, in Python, with a C
mirror of its common case. The cores do not know this package; the driver (hostlib.drivers)
chooses it.

* :mod:`.library`: building (through the shared build cache, ``cbuild``) and loading, with the
  check of the ctypes mirrors (:mod:`.structs`) and of the shared constants (:mod:`.constants`,
  from which the C's ``constants.h`` is generated);
* :mod:`.worker`: :func:`encode_round` (Worker.push's one-pass encoder), :func:`decode_round`
  (Worker.result_into's one-pass decoder), :class:`NativeWorker`
  and :class:`NativeGroup`; :mod:`.ps`: :class:`NativePs` — sans-IO agents binding one Worker /
  WorkerGroup / ParameterServer to its C state (the differential tests run them and the Python
  cores side by side);
* :mod:`.udp`: :class:`SocketRings` and :func:`run_loop`, run_udp on the C loops.
"""
from __future__ import annotations

from .library import (MirrorMismatch, NativeUnavailable, available, build, load, sources,
                      unavailable_reason)
from .ps import NativePs
from .udp import IoCounts, SocketRings, loopback_gso, run_loop
from .worker import NativeGroup, NativeWorker, decode_round, encode_round

__all__ = ["IoCounts", "MirrorMismatch", "NativeGroup", "NativePs", "NativeUnavailable", "NativeWorker",
           "SocketRings", "available", "build", "decode_round", "encode_round", "load", "loopback_gso", "run_loop",
           "sources", "unavailable_reason"]
