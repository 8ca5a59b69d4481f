"""The native (C) host data path: ``inahost.c`` built at first use and loaded with ctypes.

The C code owns the common case of the sans-IO cores — a worker's first copies, its current
round's results and fast retransmits; the PS's network contributions and the results it sends —
and the UDP loops around them (recvmmsg into a ring, sendmmsg straight from the round's frames).
Everything else is handed to the Python cores (hostlib.worker.Worker, hostlib.ps.ParameterServer),
which stay the reference: around every hand-off the state is synced both ways, so the protocol
logic exists once, in Python, with a C mirror of its common case.

* :class:`NativeWorker` / :class:`NativeGroup` / :class:`NativePs` bind one Worker /
  WorkerGroup / ParameterServer to its C state and are sans-IO agents themselves (``start``, ``on_frame``, ``on_timer``, ``next_deadline``): the
  differential tests run them and the Python cores side by side.
* :func:`run_udp_native` is :func:`hostlib.drivers.run_udp` on the C loops.
* :func:`encode_round` is Worker.push's encoder (fixed point and frame building) in one C pass.

Build: ``cc -O3 -shared -fPIC`` into ``$INAHOST_CACHE_DIR`` (default ``~/.cache/ina-host``),
the file named by the SHA-256 of the source, the flags and the compiler's identity; written to
a temporary file and renamed (atomic), so concurrent builders race harmlessly. No compiler, or
``INAHOST_NATIVE=0``: :func:`available` is False and hostlib runs the Python cores (one log line).
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import math
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..agent import each_frame
from ..protocol import ETH_IP_UDP_LEN, HEADER_LEN, INA_UDP_PORT, ProtocolError, frame_fields, frame_prefix

log = logging.getLogger("hostlib.native")

SOURCE = Path(__file__).with_name("inahost.c")
CFLAGS = ["-O3", "-shared", "-fPIC", "-ffp-contract=off", "-Wall"]   # no FMA: doubles as Python computes them
LIBS = ["-lm"]

OK, HANDOFF, NEWROUND, GAP_PY = 0, 1, 2, 3
EV_DONE, EV_POLL, EV_TIMER, EV_FRAME, EV_NEWROUND, EV_GAP = 10, 11, 12, 13, 14, 15
# the C PS's counters, in its enum's order: ParameterServer.stats.received kinds
KINDS = ("plain", "partial", "collision", "preempted", "drained", "switch_result", "reminder", "no_contribution",
         "stale", "late", "overlap")
RING = 1024                  # datagrams per recvmmsg
RING_GSO = 256               # ... with UDP_GRO, each slot up to 64 datagrams
TXCAP = 1024                 # datagrams per sendmmsg (UIO_MAXIOV)
SOL_UDP, UDP_GRO = 17, 104


def loopback_gso(ip: str) -> bool:
    """Whether a socket bound to ``ip`` batches with UDP GSO/GRO: only on loopback (127/8), where
    the datagrams never meet a switch — a packet socket on a real interface (p4sim on Mininet's
    veths) would see a GSO super-packet instead of the datagrams. ``INAHOST_GSO=0`` turns it off."""
    return ip.startswith("127.") and os.environ.get("INAHOST_GSO", "1") != "0"


class NativeUnavailable(RuntimeError):
    """The C data path cannot be built or loaded here."""


def cache_dir() -> Path:
    return Path(os.environ.get("INAHOST_CACHE_DIR") or Path.home() / ".cache" / "ina-host")


def _compiler() -> tuple[str, str]:
    cc = shutil.which(os.environ.get("CC") or "cc")
    if cc is None:
        raise NativeUnavailable("no C compiler found (cc; set $CC to choose one)")
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NativeUnavailable(f"C compiler {cc} does not run: {e}") from None
    return cc, (out.stdout.splitlines() or [""])[0]


def build() -> Path:
    """The shared library, compiled now or taken from the cache."""
    source = SOURCE.read_text()
    cc, ident = _compiler()
    # the key names what determines the binary, never where the source lives
    key = hashlib.sha256("\0".join([source, " ".join(CFLAGS + LIBS), ident]).encode()).hexdigest()
    out_dir = cache_dir()
    target = out_dir / f"inahost-{key[:32]}.so"
    if target.exists():
        return target
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        # processes starting together (emulation agents) wait for one compiler run instead of
        # running one each on a 2-core machine; the rename below stays what makes it safe
        with open(out_dir / f".lock-{key[:32]}", "w") as lock:
            try:
                import fcntl
                fcntl.flock(lock, fcntl.LOCK_EX)
            except (ImportError, OSError):
                pass
            if target.exists():
                return target
            _compile(cc, source, out_dir, target)
    except OSError as e:
        raise NativeUnavailable(f"cannot build in {out_dir}: {e.strerror or e}") from None
    except subprocess.TimeoutExpired:
        raise NativeUnavailable("C compiler timed out") from None
    return target


def _compile(cc: str, source: str, out_dir: Path, target: Path) -> None:
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".build-") as tmp:
        c_file, so_tmp = Path(tmp) / "inahost.c", Path(tmp) / "inahost.so"
        c_file.write_text(source)
        r = subprocess.run([cc, *CFLAGS, "-o", str(so_tmp), str(c_file), *LIBS], capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 0:
            first = next((ln for ln in r.stderr.splitlines() if "error" in ln), r.stderr.strip()[:200])
            raise NativeUnavailable(f"C compiler failed on {SOURCE.name}: {first.strip()}")
        os.replace(so_tmp, target)     # atomic: concurrent builders race harmlessly


# ---------------------------------------------------------------------- ctypes mirrors
_i64, _dbl, _ptr = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p


class Rto(ctypes.Structure):
    _fields_ = [(n, _dbl) for n in ("initial", "minimum", "maximum", "max_backoff", "srtt", "rttvar")] + [
        ("has_srtt", _i64)]


class WorkerState(ctypes.Structure):
    _fields_ = ([(n, _i64) for n in ("n", "lanes", "frame_len", "window", "reach", "recovery", "nsubs", "job",
                                     "round", "node_tries")]
                + [(n, _ptr) for n in ("wire", "sub", "first", "count", "node", "pos", "done", "results", "retx", "first_sent",
                                       "timeout", "deadline", "pend", "later", "resent_at", "path_srtt",
                                       "path_rttvar", "path_clean")]
                + [(n, _i64) for n in ("base", "next", "n_done", "n_pending", "n_recovering")]
                + [("newest_answered", _dbl), ("rto", Rto), ("resend_rtt", Rto), ("retry_rtt", Rto)]
                + [(n, _i64) for n in ("sent", "resent", "fast_resent", "results_n", "duplicate_results", "out_n",
                                       "out_cap", "scratch_used")]
                + [("out", ctypes.POINTER(ctypes.c_void_p)), ("scratch", _ptr)])


class JobState(ctypes.Structure):
    _fields_ = ([(n, _i64) for n in ("id", "nworkers", "python_only", "has_newest", "newest")]
                + [("mask", ctypes.c_uint32), ("wid", ctypes.c_int32 * 32), ("prefix", (ctypes.c_uint8 * 42) * 32)]
                + [("relay_node", _i64), ("relay_prefix", ctypes.c_uint8 * 42)])


class PsState(ctypes.Structure):
    _fields_ = ([(n, _i64) for n in ("lanes", "frame_len", "njobs", "ntables", "tables_cap", "seq")]
                + [("jobs", _ptr), ("tables", _ptr), ("open", ctypes.c_uint64 * 9), ("rto", Rto),
                   ("counts", _i64 * len(KINDS))]
                + [(n, _i64) for n in ("completed", "results_sent", "results_relayed", "out_n", "out_cap")]
                + [("out", ctypes.POINTER(ctypes.c_void_p)), ("scratch", _ptr)])


class IoState(ctypes.Structure):
    _fields_ = ([(n, _i64) for n in ("fd", "lanes", "need", "frame_len", "cap", "bufsize", "pos", "cnt", "dst_port",
                                     "gso", "tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "send_dropped")]
                + [(n, _ptr) for n in ("rxbuf", "rxmsgs", "rxiov", "rxnames")]
                + [("txcap", _i64)] + [(n, _ptr) for n in ("txmsgs", "txiov", "txnames")]
                + [("ho_data", _ptr), ("ho_len", _i64), ("ho_source", ctypes.c_uint8 * 6)]
                + [(n, _i64) for n in ("seg_off", "seg_size", "last_pos", "last_off")]
                + [(n, _ptr) for n in ("rxctl", "txctl", "txgid", "txsorted")])


_lib: Any = None
_lib_error: str | None = None
_lib_lock = threading.Lock()


def _load() -> Any:
    global _lib, _lib_error
    with _lib_lock:
        if _lib is not None or _lib_error is not None:
            return _lib
        if os.environ.get("INAHOST_NATIVE", "1") == "0":
            _lib_error = "disabled by INAHOST_NATIVE=0"
            return None
        try:
            lib = ctypes.CDLL(str(build()))
        except (NativeUnavailable, OSError) as e:
            _lib_error = str(e)
            log.warning("hostlib: native data path unavailable (%s); using the Python cores", e)
            return None
        P, D, I = ctypes.c_void_p, ctypes.c_double, ctypes.c_int64
        sig = {
            "ina_sizeof": ([I], I),
            "ina_encode_frames": ([P, I, P, I, I, I, I, P, P, P], ctypes.c_int),
            "ina_worker_fill": ([P, D], None),
            "ina_worker_frame": ([P, P, I, D], ctypes.c_int),
            "ina_worker_next_deadline": ([P], D),
            "ina_ps_new": ([I, I, I], P),
            "ina_ps_free": ([P], None),
            "ina_ps_job": ([P, I], P),
            "ina_ps_set_newest": ([P, I, I], None),
            "ina_ps_take": ([P, I, I, I, I, P, P, P], I),
            "ina_ps_mark_py": ([P, I, I, I, I], I),
            "ina_ps_collect": ([P, I, D, I, P, P, P, P], I),
            "ina_ps_live": ([P, I, D], I),
            "ina_ps_next_deadline": ([P], D),
            "ina_ps_frame": ([P, P, I, D], ctypes.c_int),
            "ina_ps_gap": ([P, I, I, I, I, I, D], ctypes.c_int),
            "ina_io_new": ([I, I, I, I, I, I], P),
            "ina_io_free": ([P], None),
            "ina_io_send": ([P, P, I], ctypes.c_int),
            "ina_io_poll": ([P, D], ctypes.c_int),
            "ina_worker_udp": ([P, P, D, D, D, I], ctypes.c_int),
            "ina_group_udp": ([P, I, P, D, D, D, I], ctypes.c_int),
            "ina_ps_udp": ([P, P, D, D, D], ctypes.c_int),
        }
        for name, (args, res) in sig.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
        for i, st in enumerate((Rto, WorkerState, JobState, PsState, IoState)):
            if lib.ina_sizeof(i) != ctypes.sizeof(st):
                _lib_error = f"{st.__name__} layout differs from inahost.c"
                log.warning("hostlib: native data path unavailable (%s); using the Python cores", _lib_error)
                return None
        _lib = lib
        return lib


def available() -> bool:
    """Whether the C data path is built and loaded (building it on the first call)."""
    return _load() is not None


def unavailable_reason() -> str | None:
    _load()
    return _lib_error


def _addr(a: np.ndarray | bytearray | bytes) -> int:
    if isinstance(a, np.ndarray):
        return a.ctypes.data
    return np.frombuffer(a, dtype=np.uint8).ctypes.data if len(a) else 0


def _rto_to_c(r: Any, c: Rto) -> None:
    c.initial, c.minimum, c.maximum, c.max_backoff = r.initial, r.minimum, r.maximum, r.max_backoff
    c.has_srtt = r.srtt is not None
    c.srtt, c.rttvar = (r.srtt or 0.0), r.rttvar


def _rto_from_c(c: Rto, r: Any) -> None:
    r.srtt = c.srtt if c.has_srtt else None
    r.rttvar = c.rttvar


# ---------------------------------------------------------------------- encoding
def encode_round(values: np.ndarray, sizes: Sequence[int], scale_bits: int, lanes: int, clip: bool,
                 templates: np.ndarray, prefix: bytes) -> bytes | None:
    """Every first copy of a round, as ``build_frames(header_array(...), encode_fragments(...))``
    builds them: ``templates`` holds one header per sub-model (fragment id 0; rows of empty
    sub-models unused). None if the C path is unavailable or a value cannot be encoded (the
    caller's numpy path then raises the exact error)."""
    lib = _load()
    if lib is None:
        return None
    v = values if values.dtype in (np.float32, np.float64) else values.astype(np.float64)
    v = np.ascontiguousarray(v)
    sz = np.asarray(sizes, dtype=np.int64)
    n_frames = int((-(-sz // lanes)).sum())
    out = np.empty(n_frames * (ETH_IP_UDP_LEN + HEADER_LEN + 4 * lanes), dtype=np.uint8)
    tpl = np.ascontiguousarray(templates).view(np.uint8)
    if lib.ina_encode_frames(v.ctypes.data, int(v.dtype == np.float32), sz.ctypes.data, len(sz), scale_bits, lanes,
                             int(clip), prefix, tpl.ctypes.data, out.ctypes.data):
        return None
    return out.tobytes()


# ---------------------------------------------------------------------- worker
class NativeWorker:
    """A :class:`hostlib.worker.Worker` with its common case in C; a sans-IO agent like it.

    The Worker object stays the state's owner between calls into C: its done/results/
    retransmitted bytearrays are shared with C, and its window (pending fragments, their
    timers and counters) is copied into C before C runs and back before Python runs."""

    def __init__(self, worker: Any) -> None:
        lib = _load()
        if lib is None:
            raise NativeUnavailable(_lib_error or "native data path unavailable")
        self.lib, self.wk = lib, worker
        self.st = WorkerState()
        self._round: Any = None
        self._py_fresh = True          # the Worker's fields are current
        self._c_fresh = False          # the C state is current
        self._keep: list[Any] = []
        self.native_frames = self.python_frames = 0     # sans-IO calls: frames C took, handed on

    # ------------------------------------------------------------------ state
    def _bind(self) -> None:
        """Point the C state at the Worker's current round (after every push)."""
        wk, st = self.wk, self.st
        r = wk._cur
        n = len(r)
        self._round = r
        self._done_ref = wk._done
        counts = np.asarray(r.count, dtype=np.int64)
        first = np.asarray(r.first, dtype=np.int64)
        nodes = np.asarray(r.node, dtype=np.int64)
        sub = np.asarray(r.sub, dtype=np.int32)          # per fragment, send order
        pos = np.asarray(r.pos, dtype=np.int64)
        wire = np.frombuffer(r.wire, dtype=np.uint8)
        # one frame's replies: a window of first copies and at most a window of fast resends
        cap = max(1024, 4 * min(wk.window, n) + 64)
        self.first_sent, self.timeout, self.deadline = np.zeros(n), np.zeros(n), np.zeros(n)
        self.pend, self.later = np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=np.int32)
        self.resent_at = np.zeros(n)
        self.path_srtt, self.path_rttvar = np.zeros(len(r.count)), np.zeros(len(r.count))
        self.path_clean = np.zeros(len(r.count))
        self.out = (ctypes.c_void_p * cap)()
        self.scratch = np.zeros(cap * max(r.frame_len, 1), dtype=np.uint8)
        self._keep = [counts, first, nodes, sub, pos, wire]
        st.n, st.lanes, st.frame_len, st.window, st.reach = n, wk.lanes, r.frame_len, wk.window, wk.reach
        st.recovery, st.node_tries = wk.recovery, wk.node_tries
        st.nsubs, st.job, st.round = len(r.count), wk.job_id, r.number
        st.wire, st.sub, st.first, st.count, st.pos = _addr(wire), _addr(sub), _addr(first), _addr(counts), _addr(pos)
        st.node = _addr(nodes)
        st.done, st.results, st.retx = _addr(wk._done), _addr(r.results), _addr(wk._retransmitted)
        st.first_sent, st.timeout, st.deadline = _addr(self.first_sent), _addr(self.timeout), _addr(self.deadline)
        st.pend, st.later, st.resent_at = _addr(self.pend), _addr(self.later), _addr(self.resent_at)
        st.path_srtt, st.path_rttvar = _addr(self.path_srtt), _addr(self.path_rttvar)
        st.path_clean = _addr(self.path_clean)
        st.out_cap, st.out_n, st.scratch_used = cap, 0, 0
        st.out = ctypes.cast(self.out, ctypes.POINTER(ctypes.c_void_p))
        st.scratch = _addr(self.scratch)
        self._py_fresh, self._c_fresh = True, False

    def bound(self) -> bool:
        """Whether the Worker has a round C can run (pushed and started)."""
        wk = self.wk
        return wk._cur is not None and wk._started and len(wk._cur) > 0

    def to_c(self) -> None:
        if self._c_fresh:
            return
        wk, st = self.wk, self.st
        if (self._round is not wk._cur or self._done_ref is not wk._done
                or 4 * min(wk.window, st.n) + 64 > st.out_cap):      # a new round, or a larger window
            self._bind()
        a, b = wk._base, wk._next
        self.pend[a:b] = 0
        if wk._pending:
            idx = np.fromiter(wk._pending.keys(), dtype=np.int64, count=len(wk._pending))
            self.pend[idx] = 1
            self.deadline[idx] = np.fromiter(wk._pending.values(), dtype=np.float64, count=len(idx))
        self.first_sent[a:b] = wk._first_sent[a:b]
        self.timeout[a:b] = wk._timeout[a:b]
        self.later[a:b] = wk._later_results[a:b]
        self.resent_at[a:b] = wk._resent_at[a:b]
        self.path_srtt[:], self.path_rttvar[:] = wk._path_srtt, wk._path_rttvar
        self.path_clean[:] = wk._path_clean
        st.base, st.next, st.n_done, st.n_pending = a, b, wk._n_done, len(wk._pending)
        st.n_recovering = wk._recovering
        st.newest_answered = wk._newest_answered
        st.window, st.reach, st.recovery, st.node_tries = wk.window, wk.reach, wk.recovery, wk.node_tries
        _rto_to_c(wk.rto, st.rto)
        _rto_to_c(wk.resend_rtt, st.resend_rtt)
        _rto_to_c(wk.retry_rtt, st.retry_rtt)
        s = wk.stats
        st.sent, st.resent, st.fast_resent, st.results_n, st.duplicate_results = (
            s.sent, s.resent, s.fast_resent, s.results, s.duplicate_results)
        self._c_fresh, self._py_fresh = True, False

    def from_c(self) -> None:
        if self._py_fresh:
            return
        wk, st = self.wk, self.st
        # fragments below the base are done: nothing reads their timers or counters again
        a, b = st.base, st.next
        wk._first_sent[a:b] = self.first_sent[a:b].tolist()
        wk._timeout[a:b] = self.timeout[a:b].tolist()
        wk._later_results[a:b] = self.later[a:b].tolist()
        wk._resent_at[a:b] = self.resent_at[a:b].tolist()
        wk._path_srtt, wk._path_rttvar = self.path_srtt.tolist(), self.path_rttvar.tolist()
        wk._path_clean = self.path_clean.tolist()
        idx = np.flatnonzero(self.pend[st.base:b]) + st.base
        wk._pending = dict(zip(idx.tolist(), self.deadline[idx].tolist()))   # ascending: send order
        wk._base, wk._next, wk._n_done, wk._recovering = st.base, st.next, st.n_done, st.n_recovering
        wk._newest_answered = st.newest_answered
        _rto_from_c(st.rto, wk.rto)
        _rto_from_c(st.resend_rtt, wk.resend_rtt)
        _rto_from_c(st.retry_rtt, wk.retry_rtt)
        s = wk.stats
        s.sent, s.resent, s.fast_resent, s.results, s.duplicate_results = (
            st.sent, st.resent, st.fast_resent, st.results_n, st.duplicate_results)
        self._py_fresh, self._c_fresh = True, False

    def _python(self) -> Any:
        """The Worker, current, for a call into its Python core (C is re-synced afterwards)."""
        self.from_c()
        self._c_fresh = False
        return self.wk

    def _outputs(self) -> list[bytes]:
        st = self.st
        n, fl = st.out_n, st.frame_len
        out = [ctypes.string_at(self.out[i], fl) for i in range(n)]
        st.out_n = st.scratch_used = 0
        return out

    # ------------------------------------------------------------------ sans-IO agent
    def start(self, now: float) -> list[bytes]:
        return self._python().start(now)

    def done(self) -> bool:
        if not self._py_fresh and self.bound():
            return self.st.n_done == self.st.n
        return self.wk.done()

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        if not self.bound():
            return self._python().on_frame(frame, now)
        self.to_c()
        if self.lib.ina_worker_frame(ctypes.byref(self.st), frame, len(frame), now) == OK:
            self.native_frames += 1
            return self._outputs()
        self.python_frames += 1
        return self._python().on_frame(frame, now)

    def on_frames(self, frames: Sequence[bytes], now: float) -> list[bytes]:
        return each_frame(self.on_frame, frames, now)

    def on_timer(self, now: float) -> list[bytes]:
        return self._python().on_timer(now)

    def next_deadline(self) -> float | None:
        if not self._py_fresh and self.bound():
            d = self.lib.ina_worker_next_deadline(ctypes.byref(self.st))
            return None if math.isinf(d) else d
        return self.wk.next_deadline()

    def result_fixed(self) -> np.ndarray:
        return self.wk.result_fixed()

    def finish(self) -> None:
        """Leave the Worker current (C keeps nothing the Worker does not have)."""
        self.from_c()


class NativeGroup:
    """A :class:`hostlib.worker.WorkerGroup` (one Worker per job on one socket) with each
    Worker's common case in C (:class:`NativeWorker` each); a sans-IO agent like it."""

    def __init__(self, group: Any) -> None:
        self.group = group
        self.natives = {job: _native_worker(wk) for job, wk in group.workers.items()}
        self._ptrs = (ctypes.c_void_p * len(self.natives))(
            *[ctypes.addressof(n.st) for n in self.natives.values()])

    def bound(self) -> bool:
        return all(n.bound() for n in self.natives.values())

    def to_c(self) -> None:
        for n in self.natives.values():
            n.to_c()

    def from_c(self) -> None:
        for n in self.natives.values():
            n.from_c()

    def finish(self) -> None:
        self.from_c()

    def _python(self) -> Any:
        for n in self.natives.values():
            n._python()
        return self.group

    def start(self, now: float) -> list[bytes]:
        return self._python().start(now)

    def done(self) -> bool:
        return all(n.done() for n in self.natives.values())

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        try:
            job = frame_fields(frame, self.group.lanes)[1]
        except ProtocolError:
            return []
        n = self.natives.get(job)
        return [] if n is None else n.on_frame(frame, now)

    def on_frames(self, frames: Sequence[bytes], now: float) -> list[bytes]:
        return each_frame(self.on_frame, frames, now)

    def on_timer(self, now: float) -> list[bytes]:
        return self._python().on_timer(now)

    def next_deadline(self) -> float | None:
        return min((d for n in self.natives.values() if (d := n.next_deadline()) is not None), default=None)


def _native_worker(wk: Any) -> NativeWorker:
    """The Worker's NativeWorker, made once and kept with it (its C arrays live per round)."""
    n = getattr(wk, "_native", None)
    if n is None:
        n = wk._native = NativeWorker(wk)
    return n


# ---------------------------------------------------------------------- PS
class NativePs:
    """A :class:`hostlib.ps.ParameterServer` with its common case in C; a sans-IO agent like it.

    Entries are owned per key: C creates and completes the entries of network contributions;
    the first frame or timeout that needs the Python core moves the key's entry into the
    ParameterServer for good (C then hands every frame of that key over). Creation order is
    kept across both (``_Entry.seq``), so the PS's timers fire in the order they would have.
    ``finish`` moves everything left in C into the ParameterServer."""

    def __init__(self, ps: Any) -> None:
        lib = _load()
        if lib is None:
            raise NativeUnavailable(_lib_error or "native data path unavailable")
        self.lib, self.ps = lib, ps
        self.lanes = ps.lanes
        self.cap = 1024
        self.handle = lib.ina_ps_new(ps.lanes, len(ps.jobs), self.cap)
        if not self.handle:
            raise MemoryError("inahost: cannot allocate the PS state")
        self.st = PsState.from_address(self.handle)
        self._jobs: dict[int, JobState] = {}
        for i, (jid, cfg) in enumerate(ps.jobs.items()):
            j = JobState.from_address(lib.ina_ps_job(self.handle, i))
            j.id = jid
            workers = list(cfg.workers)
            # GOAT-Async rounds of part of the workers, and jobs of more than 32: Python's
            j.python_only = int(cfg.participants is not None or len(workers) > 32)
            j.nworkers, j.mask = len(workers), cfg.mask
            payload = HEADER_LEN + 4 * ps.lanes
            for k, w in enumerate(workers[:32]):
                ip, mac = cfg.workers[w]
                j.wid[k] = w
                pre = frame_prefix(ps.ip, ip, ps.mac, ps.gateway_mac or mac, INA_UDP_PORT, 64, payload)
                ctypes.memmove(ctypes.addressof(j.prefix[k]), pre, ETH_IP_UDP_LEN)
            if cfg.result_via in cfg.reminder_via:    # C completes rounds of every worker only
                j.relay_node = cfg.result_via
                pre = frame_prefix(ps.ip, cfg.reminder_via[cfg.result_via], ps.mac, ps.gateway_mac, INA_UDP_PORT, 64,
                                   payload)
                ctypes.memmove(ctypes.addressof(j.relay_prefix), pre, ETH_IP_UDP_LEN)
            self._jobs[jid] = j
        self._sync_newest()
        # every entry the ParameterServer has is its own; number them in its creation order
        for e in ps._entries.values():
            e.seq = -1
        for (job, rnd, sub, frag), e in ps._entries.items():
            if job in self._jobs and not self._jobs[job].python_only:
                s = lib.ina_ps_mark_py(self.handle, job, rnd, sub, frag)
                e.seq = s if s >= 0 else e.seq
        self.native_frames = self.python_frames = 0     # sans-IO calls: frames C took, handed on
        _rto_to_c(ps.timeout, self.st.rto)
        self._meta = np.zeros(3, dtype=np.int64)
        self._times = np.zeros(4)
        self._acc = np.zeros(ps.lanes, dtype=np.int64)
        self.out = ctypes.cast(self.st.out, ctypes.POINTER(ctypes.c_void_p))

    def close(self) -> None:
        if self.handle:
            self.lib.ina_ps_free(self.handle)
            self.handle = None
            self.st = None        # type: ignore[assignment]

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:           # interpreter shutdown: ctypes may be gone
            pass

    # ------------------------------------------------------------------ state
    def _sync_newest(self) -> None:
        """C's round window follows the ParameterServer's (``_newest``), pruning as it does."""
        for jid, j in self._jobs.items():
            n = self.ps._newest.get(jid)
            if n is not None and (not j.has_newest or j.newest != n):
                self.lib.ina_ps_set_newest(self.handle, jid, n)

    def _pull(self) -> None:
        """C's counters and estimator into the ParameterServer."""
        st, stats = self.st, self.ps.stats
        for i, kind in enumerate(KINDS):
            c = st.counts[i]
            if c:
                stats.received[kind] = stats.received.get(kind, 0) + c
                st.counts[i] = 0
        stats.completed += st.completed
        stats.results_sent += st.results_sent
        stats.results_relayed += st.results_relayed
        st.completed = st.results_sent = st.results_relayed = 0
        _rto_from_c(st.rto, self.ps.timeout)

    def _entry(self, key: tuple[int, int, int, int], state: int, meta: np.ndarray, times: np.ndarray,
               acc: np.ndarray) -> None:
        from ..ps import _Entry
        e = _Entry(float(times[0]), float(times[1]), float(times[2]), self.lanes, net_sum=acc.copy(),
                   net_bitmap=int(meta[1]), overflow=bool(meta[2]), seq=int(meta[0]))
        if state == 2:              # complete: the saturated sum, as _maybe_complete keeps it
            e.result = np.clip(acc, -(1 << 31), (1 << 31) - 1).astype(np.int32)
            e.completed_at = float(times[3])
            e.relay_state = -1 if self._jobs[key[0]].relay_node else -2
        self.ps._entries[key] = e
        if state == 1:
            self.ps._open[key] = e

    def _reorder_open(self) -> None:
        o = self.ps._open
        if any(a.seq > b.seq for a, b in zip(list(o.values()), list(o.values())[1:])):
            self.ps._open = dict(sorted(o.items(), key=lambda kv: kv[1].seq))

    def _take(self, key: tuple[int, int, int, int]) -> None:
        state = self.lib.ina_ps_take(self.handle, *key, self._meta.ctypes.data, self._times.ctypes.data,
                                     self._acc.ctypes.data)
        if state in (1, 2):
            self._entry(key, state, self._meta, self._times, self._acc)
            if state == 1:
                self._reorder_open()

    def _collect(self, only_due: bool, now: float) -> None:
        n = self.lib.ina_ps_live(self.handle, int(only_due), now)
        if not n:
            return
        keys, meta = np.zeros((n, 5), dtype=np.int64), np.zeros((n, 3), dtype=np.int64)
        times, acc = np.zeros((n, 4)), np.zeros((n, self.lanes), dtype=np.int64)
        got = self.lib.ina_ps_collect(self.handle, int(only_due), now, n, keys.ctypes.data, meta.ctypes.data,
                                      times.ctypes.data, acc.ctypes.data)
        # in creation order, so the ParameterServer's dicts keep it; rows are views of one array
        order = np.argsort(meta[:got, 0], kind="stable")
        keys, meta, times, acc = keys[order], meta[order], times[order], acc[order]
        results = np.clip(acc, -(1 << 31), (1 << 31) - 1).astype(np.int32)
        from ..ps import _Entry
        entries, open_ = self.ps._entries, self.ps._open
        lanes = self.lanes
        for k, m, t, a, r in zip(keys.tolist(), meta.tolist(), times.tolist(), list(acc), list(results)):
            e = _Entry(t[0], t[1], t[2], lanes, net_sum=a, net_bitmap=m[1], overflow=bool(m[2]), seq=m[0])
            key = (k[0], k[1], k[2], k[3])
            entries[key] = e
            if k[4] == 2:
                e.result, e.completed_at = r, t[3]
                e.relay_state = -1 if self._jobs[key[0]].relay_node else -2
            else:
                open_[key] = e
        self._reorder_open()

    def python_frame(self, frame: bytes, now: float) -> list[bytes]:
        """A frame for the Python core: its key's entry moves there first, and stays there."""
        self._pull()
        try:
            f = frame_fields(frame, self.lanes)
            key: tuple[int, int, int, int] | None = (f[1], f[10], f[3], f[4])
        except ProtocolError:
            key = None
        job = self._jobs.get(key[0]) if key is not None else None
        if key is not None and job is not None and not job.python_only:
            self._take(key)
        self.ps.gap_checked = False
        out = self.ps.on_frame(frame, now)
        self._sync_newest()
        if key is not None and job is not None and not job.python_only:
            if self.ps.gap_checked:
                # the gap rule (ParameterServer._gap) for a first copy the Python core counted,
                # where the entry before it is C's (not for a late or overlapping one: neither
                # core applies it then)
                self.lib.ina_ps_gap(self.handle, f[1], f[10], f[3], f[4], f[9], now)
            e = self.ps._entries.get(key)
            if e is not None:
                s = self.lib.ina_ps_mark_py(self.handle, *key)
                if s >= 0:
                    e.seq = s
        _rto_to_c(self.ps.timeout, self.st.rto)
        return out

    def python_gap(self, frame: bytes, now: float) -> None:
        """C handled a first copy whose preceding entry is the Python core's: the gap rule there."""
        f = frame_fields(frame, self.lanes)
        self.ps._gap(f[1], f[10], f[3], f[4], f[9], now)

    def new_round(self, frame_job: int, frame_round: int) -> None:
        self.ps._in_window(frame_job, frame_round)
        self._sync_newest()

    def python_timer(self, now: float) -> list[bytes]:
        """The ParameterServer's on_timer, with C's due entries moved over first."""
        self._pull()
        self._collect(True, now)
        out = self.ps.on_timer(now)
        _rto_to_c(self.ps.timeout, self.st.rto)
        return out

    def py_deadline(self) -> float:
        d = self.ps.next_deadline()
        return math.inf if d is None else d

    def _outputs(self) -> list[bytes]:
        st = self.st
        n, fl = st.out_n, st.frame_len
        out = [ctypes.string_at(self.out[i], fl) for i in range(n)]
        st.out_n = 0
        return out

    # ------------------------------------------------------------------ sans-IO agent
    def start(self, now: float) -> list[bytes]:
        return self.ps.start(now)

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        while True:
            c = self.lib.ina_ps_frame(self.handle, frame, len(frame), now)
            if c in (OK, GAP_PY):
                self.native_frames += 1
                out = self._outputs()
                if c == GAP_PY:
                    self.python_gap(frame, now)
                return out
            if c == NEWROUND:
                f = frame_fields(frame, self.lanes)
                self.new_round(f[1], f[10])
                continue
            if c < 0:
                raise OSError(-c, f"inahost PS: {os.strerror(-c)}")
            self.python_frames += 1
            return self._outputs() + self.python_frame(frame, now)

    def on_frames(self, frames: Sequence[bytes], now: float) -> list[bytes]:
        return each_frame(self.on_frame, frames, now)

    def on_timer(self, now: float) -> list[bytes]:
        return self.python_timer(now)

    def next_deadline(self) -> float | None:
        d = min(self.lib.ina_ps_next_deadline(self.handle), self.py_deadline())
        return None if math.isinf(d) else d

    def done(self) -> bool:
        return self.lib.ina_ps_live(self.handle, 1, math.inf) == 0 and self.ps.done()

    def finish(self) -> None:
        """Move everything C holds into the ParameterServer; this object is spent."""
        if self.handle:
            self._pull()
            self._collect(False, 0.0)
            self.close()


# ---------------------------------------------------------------------- UDP
def _raise(code: int, what: str) -> None:
    raise OSError(-code, f"inahost {what}: {os.strerror(-code)}")


def run_udp_native(agent: Any, transport: Any, timeout: float, stop: Callable[[], bool] | None,
                   poll: float) -> bool:
    """:func:`hostlib.drivers.run_udp` for a Worker or ParameterServer on a UdpTransport, with
    the C loops; the same contract. The transport's ``counts`` (frames and frame bytes each
    way, if it keeps them, as emulation.agents.CountingTransport does) and ``send_dropped``
    get what C moved."""
    from ..drivers import UdpTransport
    from ..ps import ParameterServer
    from ..worker import WorkerGroup
    lib = _load()
    io = transport_io(transport)
    ios = IoState.from_address(io)
    tx0, txb0, rx0, rxb0, drop0 = ios.tx_packets, ios.tx_bytes, ios.rx_packets, ios.rx_bytes, ios.send_dropped
    is_ps = isinstance(agent, ParameterServer)
    is_group = isinstance(agent, WorkerGroup)
    native: Any
    if is_ps:
        native = NativePs(agent)
    elif is_group:
        native = NativeGroup(agent)
    else:
        native = _native_worker(agent)
    default_stop = stop is None
    stop = stop or agent.done
    moved = [0, 0, 0, 0, 0]          # tx frames, tx bytes, rx frames, rx bytes, send_dropped (Python's share)

    def send(frames: list[bytes]) -> None:
        if frames:
            before = transport.send_dropped
            UdpTransport.send_many(transport, frames)
            moved[0] += len(frames)
            moved[1] += sum(map(len, frames))
            moved[4] += transport.send_dropped - before
            transport.send_dropped = before

    t0 = time.monotonic()
    try:
        send(native.start(0.0))
        while True:
            if is_ps or not default_stop or not native.bound():
                if stop():
                    return True
            elif native.done():
                return True
            now = time.monotonic() - t0
            if now > timeout:
                return False
            until = min(timeout, now + poll)
            if is_ps:
                ev = lib.ina_ps_udp(native.handle, io, t0, until, native.py_deadline())
            elif native.bound():
                native.to_c()
                if is_group:
                    ev = lib.ina_group_udp(native._ptrs, len(native.natives), io, t0, until, math.inf,
                                           int(default_stop))
                else:
                    ev = lib.ina_worker_udp(ctypes.byref(native.st), io, t0, until, math.inf, int(default_stop))
            else:
                # nothing to run in C (no round yet): the Python core answers what comes
                wait = min(poll, max(0.0, timeout - now))
                for _ in range(RING):
                    got = lib.ina_io_poll(io, wait)
                    if got < 0:
                        _raise(got, "receive")
                    if not got:
                        break
                    wait = 0.0
                    frame = transport._frame(ctypes.string_at(ios.ho_data, ios.ho_len), bytes(ios.ho_source))
                    if frame is not None:
                        send(native._python().on_frame(frame, time.monotonic() - t0))
                continue
            if ev < 0:
                _raise(ev, "UDP loop")
            now = time.monotonic() - t0
            if ev == EV_FRAME:
                data = ctypes.string_at(ios.ho_data, ios.ho_len)
                frame = transport._frame(data, bytes(ios.ho_source))
                if frame is not None:
                    send(native.python_frame(frame, now) if is_ps else native._python().on_frames([frame], now))
            elif ev == EV_GAP:
                frame = transport._frame(ctypes.string_at(ios.ho_data, ios.ho_len), bytes(ios.ho_source))
                if frame is not None:
                    native.python_gap(frame, now)
            elif ev == EV_NEWROUND:
                hdr = ctypes.string_at(ios.ho_data, HEADER_LEN)
                native.new_round(int.from_bytes(hdr[2:4], "big"), int.from_bytes(hdr[20:24], "big"))
            elif ev == EV_TIMER:
                if is_ps:
                    send(native.python_timer(now))
                else:
                    wk = native._python()
                    d = wk.next_deadline()
                    if d is not None and d <= now:
                        send(wk.on_timer(now))
    finally:
        native.finish()
        counts = getattr(transport, "counts", None)
        c_moved = [ios.tx_packets - tx0, ios.tx_bytes - txb0, ios.rx_packets - rx0, ios.rx_bytes - rxb0]
        if isinstance(counts, dict):
            for k, v in zip(("tx_packets", "tx_bytes", "rx_packets", "rx_bytes"),
                            [c_moved[0] + moved[0], c_moved[1] + moved[1], c_moved[2], c_moved[3]]):
                if k in counts:
                    counts[k] += v
        transport.send_dropped += ios.send_dropped - drop0 + moved[4]


def transport_io(transport: Any) -> int:
    """The C socket state of a UdpTransport (its rings), made once and kept with it until it
    closes: what one run_udp left in the receive ring is the next one's, and with UDP_GRO on
    (loopback) the socket must be read by the C loop, which splits coalesced datagrams."""
    io = getattr(transport, "_native_io", None)
    if io:
        return io
    lib = _load()
    gso = loopback_gso(transport.ip)
    if gso:
        try:
            transport.sock.setsockopt(SOL_UDP, UDP_GRO, 1)
        except OSError:
            gso = False
    io = lib.ina_io_new(transport.sock.fileno(), transport.lanes, RING_GSO if gso else RING, TXCAP,
                        transport.dst_port, int(gso))
    if not io:
        raise MemoryError("inahost: cannot allocate the socket rings")
    transport._native_io = io
    return io


def free_transport_io(transport: Any) -> None:
    io = getattr(transport, "_native_io", None)
    if io:
        transport._native_io = None
        _load().ina_io_free(io)
        if loopback_gso(transport.ip) and transport.sock.fileno() >= 0:
            transport.sock.setsockopt(SOL_UDP, UDP_GRO, 0)     # the Python loop reads one datagram per buffer
