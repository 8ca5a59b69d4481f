"""A switch stand-in for host benchmarks: ``benchmarks/reflector.c`` on a UDP socket.

The reflector binds the job's PS address and does what a programmable switch aggregating the
job at a multicast level does (docs/protocol.md, "Switch behaviour"): it sums the workers'
int32 lanes per fragment and, once a fragment holds all ``fan_in`` contributions, sends the
aggregate to every worker (one datagram each). Workers labelled with a non-zero node id see a
switch's results; nothing else of the project runs in it, so a benchmark against it measures
the hosts alone.

It is compiled through the project's C build cache (cbuild), into the directory and within the
bound of hostlib's native data path (``$INAHOST_CACHE_DIR``, ``$INAHOST_CACHE_MAX_MB``), and
its ``constants.h`` is hostlib's (flags, header length, version), generated from the same
Python values.

    with Reflector("127.0.5.1", ["127.0.5.2", "127.0.5.3"]) as r:    # runs in a thread
        ...                                                          # the workers' rounds
    r.stats.completed
"""
from __future__ import annotations

import ctypes
import socket
import sys
import threading
from pathlib import Path
from typing import Any, Sequence

from cbuild import BuildCache, BuildError
from hostlib.drivers import udp_socket
from hostlib.native.constants import header
from hostlib.native.library import cache as native_cache
from hostlib.native.udp import loopback_gso
from hostlib.protocol import DEFAULT_LANES, INA_UDP_PORT

SOURCE = Path(__file__).with_name("reflector.c")
NATIVE = Path(__file__).resolve().parent.parent / "hostlib" / "native"     # hostlib's C sources
CFLAGS = ["-O3", "-shared", "-fPIC", "-Wall"]
PREFIX = "inareflect"


class ReflectorStats(ctypes.Structure):
    """The C loop's counters (``Stats`` in reflector.c, field for field): datagrams read (GRO
    segments counted one by one), INA fragments taken, ignored (other versions, reminders,
    results, short), stale rounds, duplicates, aggregates completed, retries answered with a
    kept result, result datagrams sent, datagrams a full socket buffer dropped, aggregates that
    saturated."""
    _fields_ = [(name, ctypes.c_int64) for name in (
        "datagrams", "fragments", "ignored", "stale", "duplicates", "completed", "answered_retries",
        "results_sent", "send_dropped", "overflowed")]

    def as_dict(self) -> dict[str, int]:
        return {name: int(getattr(self, name)) for name, _ in self._fields_}


class ReflectorUnavailable(RuntimeError):
    """No C compiler, or the reflector does not build here."""


_lib: Any = None
_lock = threading.Lock()


def build() -> Path:
    """The reflector's shared library, compiled now or taken from the build cache."""
    base = native_cache()
    cache = BuildCache(base.directory, PREFIX, base.limit_bytes)
    try:
        return cache.build({"reflector.c": SOURCE.read_text(), "constants.h": header(),
                            "inahost.h": (NATIVE / "inahost.h").read_text()}, CFLAGS,
                           what="the reflector").path
    except BuildError as e:
        raise ReflectorUnavailable(str(e)) from None


def load() -> Any:
    global _lib
    with _lock:
        if _lib is None:
            lib = ctypes.CDLL(str(build()))
            p, i = ctypes.c_void_p, ctypes.c_int64
            lib.ina_reflect.argtypes = [i, i, i, p, i, i, i, p, p]
            lib.ina_reflect.restype = i
            _lib = lib
        return _lib


class Reflector:
    """The reflector on ``ip``:47100 for workers at ``worker_ips`` (their port 47100), completing
    a fragment at ``fan_in`` contributions (default: every worker). ``gso``: UDP GSO/GRO batches
    (default: on loopback, as hostlib's native path; ``INAHOST_GSO=0`` turns both off).
    ``shard=(i, n)``: one of ``n`` reflectors on the same address, each aggregating the
    sub-models ``s`` with ``s % n == i`` (hostlib.drivers.udp_socket); start them in order of ``i``."""

    def __init__(self, ip: str, worker_ips: Sequence[str], *, fan_in: int | None = None, lanes: int = DEFAULT_LANES,
                 gso: bool | None = None, buffer_bytes: int = 8 << 20, shard: tuple[int, int] | None = None) -> None:
        self.lib = load()
        self.ip, self.lanes = ip, lanes
        self.fan_in = len(worker_ips) if fan_in is None else fan_in
        self.gso = loopback_gso(ip) if gso is None else gso
        self._workers = (ctypes.c_uint32 * len(worker_ips))(
            *(int.from_bytes(socket.inet_aton(w), "little") for w in worker_ips))   # network order in memory
        self.sock = udp_socket(ip, INA_UDP_PORT, buffer_bytes, shard)
        self.stats = ReflectorStats()
        self._stop = ctypes.c_int32(0)
        self._thread: threading.Thread | None = None
        self.error: OSError | None = None

    def run(self) -> None:
        """Reflect until :meth:`stop` (from another thread; ctypes releases the GIL meanwhile)."""
        rc = self.lib.ina_reflect(self.sock.fileno(), self.lanes, self.fan_in, ctypes.addressof(self._workers),
                                  len(self._workers), INA_UDP_PORT, int(self.gso), ctypes.addressof(self._stop),
                                  ctypes.addressof(self.stats))
        if rc < 0:
            self.error = OSError(-rc, f"reflector on {self.ip}: socket call failed")
            raise self.error

    def start(self) -> "Reflector":
        self._thread = threading.Thread(target=self._run_quietly, daemon=True, name=f"reflector-{self.ip}")
        self._thread.start()
        return self

    def _run_quietly(self) -> None:
        try:
            self.run()
        except OSError:
            pass                 # kept in self.error: stop() raises it in the owner's thread

    def stop(self) -> None:
        self._stop.value = 1
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        try:
            self.stop()
        finally:
            self.sock.close()

    def __enter__(self) -> "Reflector":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()
