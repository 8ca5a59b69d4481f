"""One worker of one INA job, as a sans-IO protocol core (docs/protocol.md, "Host behaviour").

The worker cuts a gradient into K-lane fragments keyed (sub-model, fragment), labels each with
the aggregation node, fan-in and priority the plan gave its sub-model, and sends them to the
PS through the fabric with a sliding window. Results (RESULT frames from a switch multicast or
the PS) fill the output and slide the window. A fragment without a result after its timeout is
retransmitted *to the PS* with RESEND, which no switch aggregates (ESA §5.3): with preemption a
switch cannot tell a retransmission from a first copy, the PS can.

Drivers (hostlib.drivers) own the clock and the sockets: ``start``, ``on_frame`` and
``on_timer`` return the frames to send, ``next_deadline`` says when to call ``on_timer``.

Rounds: every ``push`` is one all-reduce round and every frame carries its round number, so a
partial stranded in a switch by a loss can never be completed by a later round's fragments
(docs/protocol.md, "Rounds"). A worker starts round r+1 only once it holds every result of
round r, and keeps round r's contributions to answer the PS's queries for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from .protocol import (DEFAULT_LANES, ROUND_BITS, Flags, InaHeader, ProtocolError, build_frame,
                       decode_lanes, encode_lanes, parse_frame)
from .rto import RtoEstimator


@dataclass(frozen=True)
class FragmentLabel:
    """What the plan assigns one worker for one sub-model.

    GOAT: the sub-model's aggregation node y and fan-in = all workers; ATP/ESA: the worker's
    ToR node and its fan-in; no INA: node 0 (the PS; no switch matches it).
    """
    node_id: int
    fan_in: int
    priority: int = 0


@dataclass
class _Pending:
    first_sent: float
    deadline: float
    timeout: float
    retransmitted: bool = False
    later_results: int = 0      # results of later fragments since it was sent ("dupACKs")


FAST_RETRANSMIT_AFTER = 3       # later results that make a missing one count as lost (ESA §5.3)


@dataclass(frozen=True)
class _Fragment:
    submodel_id: int
    fragment_id: int
    start: int          # slice of the flat gradient
    stop: int


@dataclass
class WorkerStats:
    sent: int = 0
    resent: int = 0
    fast_resent: int = 0        # of ``resent``: sent after later results, before the timeout
    results: int = 0
    duplicate_results: int = 0
    queries_answered: int = 0
    ignored: int = 0
    overflowed: set[int] = field(default_factory=set)   # fragment indexes whose result saturated


class Worker:
    def __init__(self, job_id: int, worker_id: int, ps_ip: str, ip: str,
                 labels: Sequence[FragmentLabel] | Mapping[int, FragmentLabel], *, mac: str | int = 0,
                 gateway_mac: str | int = 0, lanes: int = DEFAULT_LANES, scale_bits: int = 16,
                 window: int = 8, reach: int | None = None, rto: RtoEstimator | None = None,
                 clip: bool = False) -> None:
        if window < 1:
            raise ValueError("window must be at least one fragment")
        # selective repeat: at most ``window`` fragments await a result, anywhere in
        # [base, base + reach), so a fragment being recovered holds one slot, not the window
        self.reach = 4 * window if reach is None else reach
        if self.reach < window:
            raise ValueError(f"reach {self.reach} must be at least the window {window}")
        self.job_id, self.worker_id = job_id, worker_id
        self.ps_ip, self.ip, self.mac, self.gateway_mac = ps_ip, ip, mac, gateway_mac
        self.labels: Mapping[int, FragmentLabel] = (dict(enumerate(labels)) if not isinstance(labels, Mapping)
                                                    else labels)
        self.lanes, self.scale_bits, self.window, self.clip = lanes, scale_bits, window, clip
        self.rto = rto or RtoEstimator()
        self.stats = WorkerStats()
        self._frags: list[_Fragment] = []
        self._index: dict[tuple[int, int], int] = {}
        self._gradient = np.zeros(0)
        self._encoded: list[np.ndarray] = []
        self._result = np.zeros(0, dtype=np.int64)
        self._done = np.zeros(0, dtype=bool)
        self._pending: dict[int, _Pending] = {}
        self._base = 0          # first fragment without a result: the window's left edge
        self._next = 0          # first fragment never sent
        self._started = False
        self.round = -1         # the current round (push() starts the next one)
        # the previous round: (round, index, fragments, encoded lanes, result, overflowed
        # fragments), kept for the PS's queries
        self._previous: tuple[int, dict[tuple[int, int], int], list[_Fragment], list[np.ndarray],
                              np.ndarray, set[int]] | None = None

    # ------------------------------------------------------------------ application side
    def push(self, gradient: np.ndarray, submodel_sizes: Sequence[int] | None = None,
             round: int | None = None) -> None:
        """Prepare the next all-reduce round of ``gradient`` (flat floats), cut into sub-models
        of the given sizes (default: one sub-model). ``round``: its number (default: the last
        one plus 1, starting at 0); rounds only increase. Call ``start`` to send."""
        if self._started and not self.done():
            raise RuntimeError(f"round {self.round} is not complete: a worker starts a round only "
                               "once it holds every result of the previous one")
        rnd = self.round + 1 if round is None else int(round)
        if not 0 <= rnd < 1 << ROUND_BITS or rnd <= self.round:
            raise ValueError(f"round {rnd} must increase (last {self.round}) and fit {ROUND_BITS} bits")
        g = np.asarray(gradient, dtype=np.float64).ravel()
        sizes = [g.size] if submodel_sizes is None else [int(s) for s in submodel_sizes]
        if sum(sizes) != g.size or any(s < 0 for s in sizes):
            raise ValueError(f"sub-model sizes {sizes} do not add up to the gradient's {g.size} values")
        missing = [s for s in range(len(sizes)) if sizes[s] and s not in self.labels]
        if missing:
            raise ValueError(f"no fragment label for sub-models {missing}")
        frags, off = [], 0
        for sub, size in enumerate(sizes):
            for f, start in enumerate(range(off, off + size, self.lanes)):
                frags.append(_Fragment(sub, f, start, min(start + self.lanes, off + size)))
            off += size
        # encode everything now: an overflow is the caller's error, before anything is on the wire
        encoded = [encode_lanes(g[fr.start:fr.stop], self.scale_bits, self.lanes, self.clip) for fr in frags]
        if self._started:
            self._previous = (self.round, self._index, self._frags, self._encoded, self._result,
                              self.stats.overflowed)
        self.round = rnd
        self._encoded = encoded
        self._gradient, self._frags = g, frags
        self._index = {(fr.submodel_id, fr.fragment_id): i for i, fr in enumerate(frags)}
        self._result = np.zeros(g.size, dtype=np.int64)
        self._done = np.zeros(len(frags), dtype=bool)
        self._pending.clear()
        self._base = self._next = 0
        self._started = False
        self.stats = WorkerStats()

    def done(self) -> bool:
        return bool(self._done.all()) and self._started

    def result_fixed(self) -> np.ndarray:
        """The aggregated gradient in fixed point (int64, one value per gradient element)."""
        return self._result.copy()

    def result(self) -> np.ndarray:
        """The aggregated gradient as floats (valid once ``done``)."""
        return decode_lanes(self._result, self.scale_bits)

    # ------------------------------------------------------------------ sans-IO core
    def start(self, now: float) -> list[bytes]:
        self._started = True
        return self._fill(now)

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        try:
            pkt = parse_frame(frame, self.lanes)
        except ProtocolError:
            self.stats.ignored += 1
            return []
        h = pkt.header
        # this round's fragments; the previous round's stay queryable after we moved on
        # (another worker may have lost one of its results), and its late results are duplicates
        if h.job_id == self.job_id and h.round == self.round:
            rnd, index, frags, encoded = self.round, self._index, self._frags, self._encoded
            result, overflowed = self._result, self.stats.overflowed
        elif h.job_id == self.job_id and self._previous is not None and h.round == self._previous[0]:
            rnd, index, frags, encoded, result, overflowed = self._previous
        else:
            self.stats.ignored += 1
            return []
        idx = index.get((h.submodel_id, h.fragment_id))
        if idx is None:
            self.stats.ignored += 1
        elif Flags.RESULT in h.flags:
            if rnd == self.round:
                return self._on_result(idx, h, pkt.lanes, now)
            self.stats.duplicate_results += 1
        elif Flags.REMINDER in h.flags and h.node_id == 0 and h.worker_id == self.worker_id:
            # the PS's query (node 0 = the PS itself): it lacks this fragment. ESA §5.3 case 2:
            # answer with the result if we hold it (others lost theirs), else our contribution.
            self.stats.queries_answered += 1
            if rnd != self.round or self._done[idx]:
                return [self._result_copy(rnd, frags[idx], result, idx in overflowed)]
            return [self._build(rnd, frags[idx], encoded[idx], resend=True)]
        else:
            self.stats.ignored += 1      # e.g. a reminder that passed a switch not owning its key
        return []

    def on_timer(self, now: float) -> list[bytes]:
        out = []
        for idx, p in self._pending.items():
            if p.deadline <= now:
                p.retransmitted = True
                p.timeout = self.rto.backoff(p.timeout)
                p.deadline = now + p.timeout
                self.stats.resent += 1
                out.append(self._frame(idx, resend=True))
        return out

    def next_deadline(self) -> float | None:
        return min((p.deadline for p in self._pending.values()), default=None)

    # ------------------------------------------------------------------ internals
    def _on_result(self, idx: int, h: InaHeader, lanes: np.ndarray, now: float) -> list[bytes]:
        if self._done[idx]:
            self.stats.duplicate_results += 1      # idempotent: the first copy already counted
            return []
        fr = self._frags[idx]
        self._result[fr.start:fr.stop] = lanes[:fr.stop - fr.start]
        self._done[idx] = True
        self.stats.results += 1
        if Flags.OVERFLOW in h.flags:
            self.stats.overflowed.add(idx)
        p = self._pending.pop(idx, None)
        if p is not None and not p.retransmitted:          # Karn: ambiguous samples are skipped
            self.rto.sample(now - p.first_sent)
        out = []
        for earlier, q in self._pending.items():
            # fast retransmit: results of later fragments of the same sub-model (same path, so
            # in order) overtook this one: it was probably lost
            if earlier < idx and not q.retransmitted and self._frags[earlier].submodel_id == fr.submodel_id:
                q.later_results += 1
                if q.later_results >= FAST_RETRANSMIT_AFTER:
                    q.retransmitted = True
                    q.deadline = now + q.timeout
                    self.stats.resent += 1
                    self.stats.fast_resent += 1
                    out.append(self._frame(earlier, resend=True))
        while self._base < len(self._frags) and self._done[self._base]:
            self._base += 1
        return out + self._fill(now)

    def _fill(self, now: float) -> list[bytes]:
        """Send never-sent fragments while fewer than ``window`` await a result, up to
        ``base + reach``."""
        out = []
        while (self._next < len(self._frags) and len(self._pending) < self.window
               and self._next < self._base + self.reach):
            idx = self._next
            self._next += 1
            if self._done[idx]:
                continue                  # its result arrived before we sent it (another worker's loss)
            t = self.rto.rto
            self._pending[idx] = _Pending(now, now + t, t)
            self.stats.sent += 1
            out.append(self._frame(idx, resend=False))
        return out

    def _frame(self, idx: int, resend: bool) -> bytes:
        return self._build(self.round, self._frags[idx], self._encoded[idx], resend)

    def _result_copy(self, rnd: int, fr: _Fragment, result: np.ndarray, overflow: bool) -> bytes:
        """Our copy of a fragment's result, for the PS to pass on (RESULT|RESEND: no switch
        touches it)."""
        lanes = np.zeros(self.lanes, dtype=np.int32)
        lanes[:fr.stop - fr.start] = result[fr.start:fr.stop]
        label = self.labels[fr.submodel_id]
        h = InaHeader.for_worker(self.job_id, 0, fr.submodel_id, fr.fragment_id, self.worker_id,
                                 label.fan_in, label.priority,
                                 Flags.RESULT | Flags.RESEND | (Flags.OVERFLOW if overflow else Flags(0)), rnd)
        return build_frame(h, lanes, src_ip=self.ip, dst_ip=self.ps_ip, src_mac=self.mac,
                           dst_mac=self.gateway_mac)

    def _build(self, rnd: int, fr: _Fragment, lanes: np.ndarray, resend: bool) -> bytes:
        label = self.labels[fr.submodel_id]
        if resend:
            # straight to the PS: node 0 so no pinned per-node route or aggregation applies
            h = InaHeader.for_worker(self.job_id, 0, fr.submodel_id, fr.fragment_id, self.worker_id,
                                     label.fan_in, label.priority, Flags.RESEND, rnd)
        else:
            h = InaHeader.for_worker(self.job_id, label.node_id, fr.submodel_id, fr.fragment_id,
                                     self.worker_id, label.fan_in, label.priority, round=rnd)
        return build_frame(h, lanes, src_ip=self.ip, dst_ip=self.ps_ip, src_mac=self.mac,
                           dst_mac=self.gateway_mac)
