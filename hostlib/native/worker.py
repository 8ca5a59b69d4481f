"""The worker side of the C data path: Worker.push's one-pass encoder (:func:`encode_round`),
and :class:`NativeWorker` / :class:`NativeGroup`, a Worker / WorkerGroup with its common case in
C (worker.c), sans-IO agents like them.

State crosses between the Worker and C through the Worker's one export/import pair
(:meth:`hostlib.worker.Worker.export_state`, ``import_state``): before C runs, the window is
copied into C's arrays; before the Worker runs, back. The done/results/retransmitted bytearrays
and the round's first copies are shared with C, not copied."""
from __future__ import annotations

import ctypes
import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..agent import each_frame
from ..protocol import ETH_IP_UDP_LEN, HEADER_LEN, ProtocolError, frame_fields, is_ask
from .constants import OK
from .library import load, require
from .structs import CRto, CWorker

if TYPE_CHECKING:
    from ..rounds import Round
    from ..rto import RtoEstimator
    from ..worker import Worker, WorkerState
    from ..worker_group import WorkerGroup


def address(a: np.ndarray | bytearray | bytes) -> int:
    """Where the bytes of ``a`` lie (0 for an empty bytes object), for a C pointer."""
    if isinstance(a, np.ndarray):
        return a.ctypes.data
    return np.frombuffer(a, dtype=np.uint8).ctypes.data if len(a) else 0


def rto_to_c(r: "RtoEstimator", c: CRto) -> None:
    c.initial, c.minimum, c.maximum, c.max_backoff = r.initial, r.minimum, r.maximum, r.max_backoff
    c.has_srtt = r.srtt is not None
    c.srtt, c.rttvar = (r.srtt or 0.0), r.rttvar


def rto_from_c(c: CRto, r: "RtoEstimator") -> None:
    r.srtt = c.srtt if c.has_srtt else None
    r.rttvar = c.rttvar


# ---------------------------------------------------------------------- encoding
def encode_round(values: np.ndarray, sizes: Sequence[int], scale_bits: int, lanes: int, clip: bool,
                 templates: np.ndarray, prefix: bytes) -> bytes | None:
    """Every first copy of a round, as ``build_frames(header_array(...), encode_fragments(...))``
    builds them: ``templates`` holds one header per sub-model (fragment id 0; rows of empty
    sub-models unused). None if the C path is unavailable or a value cannot be encoded (the
    caller's numpy path then raises the exact error). A :data:`hostlib.worker.RoundEncoder`."""
    lib = load()
    if lib is None:
        return None
    v = values if values.dtype in (np.float32, np.float64) else values.astype(np.float64)
    v = np.ascontiguousarray(v)
    sz = np.asarray(sizes, dtype=np.int64)
    n_frames = int((-(-sz // lanes)).sum())
    out = new_bytes(n_frames * (ETH_IP_UDP_LEN + HEADER_LEN + 4 * lanes))
    tpl = np.ascontiguousarray(templates).view(np.uint8)
    if lib.ina_encode_frames(v.ctypes.data, int(v.dtype == np.float32), sz.ctypes.data, len(sz), scale_bits, lanes,
                             int(clip), prefix, tpl.ctypes.data, out):
        return None
    return out


def decode_round(r: "Round", scale: float, divisor: float, out: np.ndarray) -> bool:
    """A complete round's results into ``out`` (float32, gradient order), each value times
    ``scale`` over ``divisor`` rounded once to float32, in one C pass; False if the C path is
    unavailable. A :data:`hostlib.worker.RoundDecoder`."""
    lib = load()
    if lib is None:
        return False
    rows, starts, widths = r.decode_layout
    lib.ina_decode_results(address(r.results), r.lanes, rows.ctypes.data, starts.ctypes.data, widths.ctypes.data,
                           len(rows), scale, divisor, out.ctypes.data)
    return True


_bytes_uninitialized = ctypes.pythonapi.PyBytes_FromStringAndSize
_bytes_uninitialized.argtypes, _bytes_uninitialized.restype = [ctypes.c_void_p, ctypes.c_ssize_t], ctypes.py_object


def new_bytes(size: int) -> bytes:
    """A new bytes object of ``size`` bytes for C to fill before anyone else sees it (CPython's
    PyBytes_FromStringAndSize(NULL, size): no zeroing pass, no copy out of a scratch buffer)."""
    return _bytes_uninitialized(None, size)


# ---------------------------------------------------------------------- worker
class NativeWorker:
    """A :class:`hostlib.worker.Worker` with its common case in C; a sans-IO agent like it.

    The Worker stays the state's owner between calls into C: its window (pending fragments,
    their timers and counters) is copied into C before C runs (:meth:`to_c`) and back before
    the Worker runs (:meth:`from_c`). Call :meth:`finish` before using the Worker directly
    (e.g. to push the next round)."""

    def __init__(self, worker: "Worker") -> None:
        if not worker.c_capable:
            raise ValueError(f"the C worker detects loss as 'rack' without slots, not "
                             f"{worker.loss_detection!r}{' with slots' if worker.slot_of else ''}")
        self.lib, self.wk = require(), worker
        self.st = CWorker()
        self._round: Any = None
        self._done_ref: bytearray | None = None
        self._py_fresh = True          # the Worker's state is current
        self._c_fresh = False          # the C state is current
        self._bound: bool | None = None    # bound(), until start() or finish()
        self._keep: list[Any] = []
        self.pend: np.ndarray | None = None     # per fragment, with its timers (made by _bind)
        self.native_frames = self.python_frames = 0     # sans-IO calls: frames C took, handed on

    # ------------------------------------------------------------------ state
    def _bind(self, s: "WorkerState") -> None:
        """Point the C state at the Worker's current round (after every push)."""
        wk, st, r = self.wk, self.st, s.round
        n = len(r)
        self._round, self._done_ref = r, s.done
        counts = np.asarray(r.count, dtype=np.int64)
        first = np.asarray(r.first, dtype=np.int64)
        nodes = np.asarray(r.node, dtype=np.int64)
        sub, pos = r.sub_array, r.pos_array              # per fragment, send order; gradient -> send order
        wire = np.frombuffer(r.wire, dtype=np.uint8)
        # one frame's replies: a window of first copies and at most a window of fast resends
        cap = max(1024, 4 * min(wk.window, n) + 64)
        if self.pend is not None and len(self.pend) == n:
            # a round of the same size: the last round's arrays, cleared (no fresh pages)
            for a in (self.first_sent, self.timeout, self.deadline, self.pend, self.later, self.resent_at):
                a.fill(0)
        else:
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
        st.wire, st.sub, st.first = address(wire), address(sub), address(first)
        st.count, st.pos, st.node = address(counts), address(pos), address(nodes)
        st.done, st.results, st.retx = address(s.done), address(r.results), address(s.retransmitted)
        st.first_sent, st.timeout = address(self.first_sent), address(self.timeout)
        st.deadline, st.pend = address(self.deadline), address(self.pend)
        st.later, st.resent_at = address(self.later), address(self.resent_at)
        st.path_srtt, st.path_rttvar = address(self.path_srtt), address(self.path_rttvar)
        st.path_clean = address(self.path_clean)
        st.out_cap, st.out_n, st.scratch_used = cap, 0, 0
        st.out = ctypes.cast(self.out, ctypes.POINTER(ctypes.c_void_p))
        st.scratch = address(self.scratch)
        self._py_fresh, self._c_fresh = True, False

    def bound(self) -> bool:
        """Whether the Worker has a round C can run (pushed and started)."""
        if self._bound is None:
            s = self.wk.export_state()
            self._bound = s.round is not None and s.started and len(s.round) > 0
        return self._bound

    def to_c(self) -> None:
        """The Worker's window into C (C runs next)."""
        if self._c_fresh:
            return
        wk, st = self.wk, self.st
        s = wk.export_state()
        if (self._round is not s.round or self._done_ref is not s.done
                or 4 * min(wk.window, st.n) + 64 > st.out_cap):      # a new round, or a larger window
            self._bind(s)
        a, b = s.base, s.next
        self.pend[a:b] = 0
        pending = s.pending
        if pending:
            idx = np.fromiter(pending.keys(), dtype=np.int64, count=len(pending))
            self.pend[idx] = 1
            self.deadline[idx] = np.fromiter(pending.values(), dtype=np.float64, count=len(idx))
        self.first_sent[a:b] = s.first_sent[a:b]
        self.timeout[a:b] = s.timeout[a:b]
        self.later[a:b] = s.later_results[a:b]
        self.resent_at[a:b] = s.resent_at[a:b]
        self.path_srtt[:], self.path_rttvar[:] = s.path_srtt, s.path_rttvar
        self.path_clean[:] = s.path_clean
        st.base, st.next, st.n_done, st.n_pending = a, b, s.n_done, len(pending)
        st.n_recovering = s.recovering
        st.newest_answered, st.recovery_answered = s.newest_answered, s.recovery_answered
        st.window, st.reach, st.recovery, st.node_tries = wk.window, wk.reach, wk.recovery, wk.node_tries
        rto_to_c(wk.rto, st.rto)
        rto_to_c(wk.resend_rtt, st.resend_rtt)
        rto_to_c(wk.retry_rtt, st.retry_rtt)
        stats = wk.stats
        st.sent, st.resent, st.fast_resent, st.results_n, st.duplicate_results = (
            stats.sent, stats.resent, stats.fast_resent, stats.results, stats.duplicate_results)
        self._c_fresh, self._py_fresh = True, False

    def from_c(self) -> None:
        """C's window back into the Worker (the Worker runs next)."""
        if self._py_fresh:
            return
        wk, st = self.wk, self.st
        s = wk.export_state()
        # fragments below the base are done: nothing reads their timers or counters again
        a, b = st.base, st.next
        s.first_sent[a:b] = self.first_sent[a:b].tolist()
        s.timeout[a:b] = self.timeout[a:b].tolist()
        s.later_results[a:b] = self.later[a:b].tolist()
        s.resent_at[a:b] = self.resent_at[a:b].tolist()
        s.path_srtt, s.path_rttvar = self.path_srtt.tolist(), self.path_rttvar.tolist()
        s.path_clean = self.path_clean.tolist()
        idx = np.flatnonzero(self.pend[a:b]) + a
        s.pending = dict(zip(idx.tolist(), self.deadline[idx].tolist()))   # ascending: send order
        s.base, s.next, s.n_done, s.recovering = a, b, st.n_done, st.n_recovering
        s.newest_answered, s.recovery_answered = st.newest_answered, st.recovery_answered
        wk.import_state(s)
        rto_from_c(st.rto, wk.rto)
        rto_from_c(st.resend_rtt, wk.resend_rtt)
        rto_from_c(st.retry_rtt, wk.retry_rtt)
        stats = wk.stats
        stats.sent, stats.resent, stats.fast_resent, stats.results, stats.duplicate_results = (
            st.sent, st.resent, st.fast_resent, st.results_n, st.duplicate_results)
        self._py_fresh, self._c_fresh = True, False

    def python_core(self) -> "Worker":
        """The Worker, current, for a call into its Python core (C is re-synced afterwards)."""
        self.from_c()
        self._c_fresh = False
        return self.wk

    def _outputs(self) -> list[bytes]:
        st = self.st
        n, fl = st.out_n, st.frame_len
        out = [ctypes.string_at(self.out[i], fl) for i in range(n)]
        st.out_n = st.scratch_used = 0
        # an ask lies in a whole frame's room: the INA header alone is the frame
        return [f[:ETH_IP_UDP_LEN + HEADER_LEN] if is_ask(f[43], f[56]) else f for f in out]

    # ------------------------------------------------------------------ sans-IO agent
    def start(self, now: float) -> list[bytes]:
        self._bound = None
        return self.python_core().start(now)

    def done(self) -> bool:
        if not self._py_fresh and self.bound():
            return self.st.n_done == self.st.n
        return self.wk.done()

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        if not self.bound():
            return self.python_core().on_frame(frame, now)
        self.to_c()
        if self.lib.ina_worker_frame(ctypes.byref(self.st), frame, len(frame), now) == OK:
            self.native_frames += 1
            return self._outputs()
        self.python_frames += 1
        return self.python_core().on_frame(frame, now)

    def on_frames(self, frames: Sequence[bytes], now: float) -> list[bytes]:
        return each_frame(self.on_frame, frames, now)

    def on_timer(self, now: float) -> list[bytes]:
        if not self.bound():
            return self.python_core().on_timer(now)
        self.to_c()
        self.lib.ina_worker_timer(ctypes.byref(self.st), now)
        return self._outputs()

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
        self._bound = None


class NativeGroup:
    """A :class:`hostlib.worker_group.WorkerGroup` (one Worker per job on one socket) with each
    Worker's common case in C (:class:`NativeWorker` each); a sans-IO agent like it."""

    def __init__(self, group: "WorkerGroup") -> None:
        self.group = group
        self.natives = {job: NativeWorker(wk) for job, wk in group.workers.items()}
        # the C loop's view: one Worker state per job
        self.c_states = (ctypes.c_void_p * len(self.natives))(
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
        for n in self.natives.values():
            n.finish()

    def python_core(self) -> "WorkerGroup":
        for n in self.natives.values():
            n.python_core()
        return self.group

    def start(self, now: float) -> list[bytes]:
        return [f for n in self.natives.values() for f in n.start(now)]     # WorkerGroup.start's order

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
        return [f for n in self.natives.values() for f in n.on_timer(now)]     # WorkerGroup.on_timer's order

    def next_deadline(self) -> float | None:
        return min((d for n in self.natives.values() if (d := n.next_deadline()) is not None), default=None)
