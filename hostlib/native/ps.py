"""The PS side of the C data path: :class:`NativePs`, a ParameterServer with its common case in C
(ps.c), a sans-IO agent like it.

State crosses between the ParameterServer and C through the PS's one export/import pair
(:meth:`hostlib.ps.ParameterServer.export_state`, ``import_state``): its entries, the open
ones in creation order, and each job's newest round. The two protocol rules C leaves to the
Python core for entries it owns are the PS's public ``in_window`` and ``gap_rule``."""
from __future__ import annotations

import ctypes
import math
import os
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..agent import each_frame
from ..protocol import ETH_IP_UDP_LEN, HEADER_LEN, INA_UDP_PORT, MAX_WORKERS, ProtocolError, frame_fields, frame_prefix
from ..ps import Entry
from .constants import ENTRY_DONE, ENTRY_OPEN, GAP_PY, KINDS, NEWROUND, OK
from .library import require
from .structs import CJob, CPs
from .worker import rto_from_c, rto_to_c

if TYPE_CHECKING:
    from ..ps import Key, ParameterServer, PsState

_INT32 = (-(1 << 31), (1 << 31) - 1)


class NativePs:
    """A :class:`hostlib.ps.ParameterServer` with its common case in C; a sans-IO agent like it.

    Entries are owned per key: C creates and completes the entries of network contributions;
    the first frame or timeout that needs the Python core moves the key's entry into the
    ParameterServer for good (C then hands every frame of that key over). Creation order is
    kept across both (``Entry.seq``), so the PS's timers fire in the order they would have.
    ``finish`` moves everything left in C into the ParameterServer."""

    def __init__(self, ps: "ParameterServer") -> None:
        lib = require()
        self.lib, self.ps = lib, ps
        self.lanes = ps.lanes
        self.cap = 1024
        self.handle = lib.ina_ps_new(ps.lanes, len(ps.jobs), self.cap)
        if not self.handle:
            raise MemoryError("inahost: cannot allocate the PS state")
        self.st = CPs.from_address(self.handle)
        self._jobs: dict[int, CJob] = {}
        for i, (jid, cfg) in enumerate(ps.jobs.items()):
            j = CJob.from_address(lib.ina_ps_job(self.handle, i))
            j.id = jid
            workers = list(cfg.workers)
            # GOAT-Async rounds of part of the workers, and jobs of more workers than C holds: Python's
            j.python_only = int(cfg.participants is not None or len(workers) > MAX_WORKERS)
            j.nworkers, j.mask = len(workers), cfg.mask
            payload = HEADER_LEN + 4 * ps.lanes
            for k, w in enumerate(workers[:MAX_WORKERS]):
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
        entries = ps.export_state().entries
        for e in entries.values():
            e.seq = -1
        for (job, rnd, sub, frag), e in entries.items():
            if job in self._jobs and not self._jobs[job].python_only:
                s = lib.ina_ps_mark_py(self.handle, job, rnd, sub, frag)
                e.seq = s if s >= 0 else e.seq
        self.native_frames = self.python_frames = 0     # sans-IO calls: frames C took, handed on
        self._estimators_to_c()
        self._meta = np.zeros(4, dtype=np.int64)
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
        """C's round window follows the ParameterServer's (its newest rounds), pruning as it does."""
        newest = self.ps.export_state().newest
        for jid, j in self._jobs.items():
            n = newest.get(jid)
            if n is not None and (not j.has_newest or j.newest != n):
                self.lib.ina_ps_set_newest(self.handle, jid, n)

    def _estimators_to_c(self) -> None:
        """The ParameterServer's estimators C reads: the entry timeout, and the query round trip
        by which a RESEND of a complete fragment crossed its result (ParameterServer._on_resend)."""
        rto_to_c(self.ps.timeout, self.st.rto)
        srtt = self.ps.query_rtt.srtt
        self.st.query_srtt = -1.0 if srtt is None else srtt

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
        stats.results_resent += st.results_resent
        st.completed = st.results_sent = st.results_relayed = st.results_resent = 0
        rto_from_c(st.rto, self.ps.timeout)

    @staticmethod
    def _reorder_open(state: "PsState") -> None:
        o = state.open
        if any(a.seq > b.seq for a, b in zip(list(o.values()), list(o.values())[1:])):
            state.open = dict(sorted(o.items(), key=lambda kv: kv[1].seq))

    def _take(self, key: "Key") -> None:
        """Key's entry, if C holds it, into the ParameterServer for good."""
        state = self.lib.ina_ps_take(self.handle, *key, self._meta.ctypes.data, self._times.ctypes.data,
                                     self._acc.ctypes.data)
        if state not in (ENTRY_OPEN, ENTRY_DONE):
            return
        meta, times, acc = self._meta, self._times, self._acc
        e = Entry(float(times[0]), float(times[1]), float(times[2]), self.lanes, net_sum=acc.copy(),
                  net_bitmap=int(meta[1]), overflow=bool(meta[2]), seq=int(meta[0]))
        if state == ENTRY_DONE:        # the saturated sum, as _maybe_complete keeps it
            e.result = np.clip(acc, *_INT32).astype(np.int32)
            e.completed_at = float(times[3])
            e.relay_state = int(meta[3])
        ps_state = self.ps.export_state()
        ps_state.entries[key] = e
        if state == ENTRY_OPEN:
            ps_state.open[key] = e
            self._reorder_open(ps_state)
        self.ps.import_state(ps_state)

    def _collect(self, only_due: bool, now: float) -> None:
        """C's entries (only the open ones due at ``now``) into the ParameterServer for good."""
        n = self.lib.ina_ps_live(self.handle, int(only_due), now)
        if not n:
            return
        keys, meta = np.zeros((n, 5), dtype=np.int64), np.zeros((n, 4), dtype=np.int64)
        times, acc = np.zeros((n, 4)), np.zeros((n, self.lanes), dtype=np.int64)
        got = self.lib.ina_ps_collect(self.handle, int(only_due), now, n, keys.ctypes.data, meta.ctypes.data,
                                      times.ctypes.data, acc.ctypes.data)
        # in creation order, so the ParameterServer's dicts keep it; rows are views of one array
        order = np.argsort(meta[:got, 0], kind="stable")
        keys, meta, times, acc = keys[order], meta[order], times[order], acc[order]
        results = np.clip(acc, *_INT32).astype(np.int32)
        ps_state = self.ps.export_state()
        entries, open_ = ps_state.entries, ps_state.open
        lanes = self.lanes
        for k, m, t, a, r in zip(keys.tolist(), meta.tolist(), times.tolist(), list(acc), list(results)):
            e = Entry(t[0], t[1], t[2], lanes, net_sum=a, net_bitmap=m[1], overflow=bool(m[2]), seq=m[0])
            key = (k[0], k[1], k[2], k[3])
            entries[key] = e
            if k[4] == ENTRY_DONE:
                e.result, e.completed_at = r, t[3]
                e.relay_state = m[3]
            else:
                open_[key] = e
        self._reorder_open(ps_state)
        self.ps.import_state(ps_state)

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
                # the gap rule (ParameterServer.gap_rule) for a first copy the Python core counted,
                # where the entry before it is C's (not for a late or overlapping one: neither
                # core applies it then)
                self.lib.ina_ps_gap(self.handle, f[1], f[10], f[3], f[4], f[9], now)
            e = self.ps.export_state().entries.get(key)
            if e is not None:
                s = self.lib.ina_ps_mark_py(self.handle, *key)
                if s >= 0:
                    e.seq = s
        self._estimators_to_c()
        return out

    def python_gap(self, frame: bytes, now: float) -> None:
        """C handled a first copy whose preceding entry is the Python core's: the gap rule there."""
        f = frame_fields(frame, self.lanes)
        self.ps.gap_rule(f[1], f[10], f[3], f[4], f[9], now)

    def new_round(self, frame_job: int, frame_round: int) -> None:
        """C saw a round newer than the job's newest: the ParameterServer tracks it, C follows."""
        self.ps.in_window(frame_job, frame_round)
        self._sync_newest()

    def python_timer(self, now: float) -> list[bytes]:
        """The ParameterServer's on_timer, with C's due entries moved over first."""
        self._pull()
        self._collect(True, now)
        out = self.ps.on_timer(now)
        self._estimators_to_c()
        return out

    def python_deadline(self) -> float:
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
        d = min(self.lib.ina_ps_next_deadline(self.handle), self.python_deadline())
        return None if math.isinf(d) else d

    def done(self) -> bool:
        return self.lib.ina_ps_live(self.handle, 1, math.inf) == 0 and self.ps.done()

    def finish(self) -> None:
        """Move everything C holds into the ParameterServer; this object is spent."""
        if self.handle:
            self._pull()
            self._collect(False, 0.0)
            self.close()
