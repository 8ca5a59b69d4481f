"""One worker of one INA job, as a sans-IO protocol core (docs/protocol.md, "Host behaviour").

The worker cuts a gradient into K-lane fragments keyed (sub-model, fragment), labels each with
the aggregation node, fan-in and priority the plan gave its sub-model, and sends them to the
PS through the fabric with a sliding window. Results (RESULT frames from a switch multicast or
the PS) fill the output and slide the window. A fragment without a result after its timeout is
retransmitted, twice to its aggregation node as a RETRY (docs/protocol.md rule 8: the node adds
it to a partial still lacking it, or answers with the result it kept), then *to the PS* as an
ask: a RESEND without lanes, which no switch aggregates (ESA §5.3: with preemption a switch
cannot tell a plain retransmission from a first copy, the PS can). The PS answers it with the
result, or queries the contribution if it lacks it; the answer to a query carries the lanes.

Drivers (hostlib.drivers) own the clock and the sockets: ``start``, ``on_frame`` and
``on_timer`` return the frames to send, ``next_deadline`` says when to call ``on_timer``.

Rounds: every ``push`` is one all-reduce round and every frame carries its round number, so a
partial stranded in a switch by a loss can never be completed by a later round's fragments
(docs/protocol.md, "Rounds"). A worker starts round r+1 only once it holds every result of
round r, and keeps round r's contributions to answer the PS's queries for it.
"""
from __future__ import annotations


import math
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

import numpy as np

from .agent import each_frame
from .protocol import (DEFAULT_LANES, HEADER_LEN, INA_UDP_PORT, MAX_WORKERS, ROUND_BITS, Flags, InaHeader,
                       ProtocolError, build_frame, build_frames, build_header_only, decode_lanes, encode_fragments,
                       fragment_layout, frame_fields, frame_prefix, header_array, layer_order, send_order)
from .rounds import Round
from .rto import RETRY_MIN, RtoEstimator, smoothed
from .worker_tuning import (ANSWER_BACKOFF, DEFAULT_WINDOW, DUPACK_THRESHOLD, FAST_RETRANSMIT_AFTER,  # noqa: F401
                            LOSS_DETECTION, NODE_TRIES, NODE_TRIES_KEPT, RECOVERY_WINDOWS, STALE_AFTER)


@dataclass(frozen=True)
class FragmentLabel:
    """What the plan assigns one worker for one sub-model.

    GOAT: the sub-model's aggregation node y and fan-in = all workers; ATP/ESA: the worker's
    ToR node and its fan-in; no INA: node 0 (the PS; no switch matches it).
    """
    node_id: int
    fan_in: int
    priority: int = 0


UNBOUNDED_REACH = 1 << 40      # more fragments than any round has (an int: the native path copies it)


_RESULT, _REMINDER, _OVERFLOW = int(Flags.RESULT), int(Flags.REMINDER), int(Flags.OVERFLOW)
_RELAY, _RETRY = int(Flags.RELAY), int(Flags.RETRY)


# A one-pass encoder of a round's first copies: (values, sub-model sizes, scale bits, lanes,
# clip, one header template per sub-model, the Ethernet/IPv4/UDP prefix) -> the frames back to
# back, the bytes build_frames gives, or None (it cannot, or a value needs the numpy path's
# exact error). The core does not know where one comes from: a driver layer installs it
# (hostlib.drivers installs hostlib.native's C encoder).
RoundEncoder = Callable[[np.ndarray, Sequence[int], int, int, bool, np.ndarray, bytes], "bytes | None"]
_round_encoder: RoundEncoder | None = None


def set_round_encoder(encoder: RoundEncoder | None) -> None:
    """The encoder :meth:`Worker.push` tries first for Workers with ``native`` set (None: numpy's
    only)."""
    global _round_encoder
    _round_encoder = encoder


# A one-pass decoder of a complete round's results into float32: (the round, the factor 2^-scale,
# the divisor, the float32 output) -> True, or False where it cannot (numpy's path then runs).
# hostlib.drivers installs hostlib.native's.
RoundDecoder = Callable[[Round, float, float, np.ndarray], bool]
_round_decoder: RoundDecoder | None = None


def set_round_decoder(decoder: RoundDecoder | None) -> None:
    """The decoder :meth:`Worker.result_into` tries first for Workers with ``native`` set (None:
    numpy's only)."""
    global _round_decoder
    _round_decoder = decoder


@dataclass(slots=True)
class WorkerState:
    """The Worker's protocol state that its public attributes do not show, handed to and taken
    back from an accelerated twin of the core (hostlib.native's NativeWorker runs the common
    case in C and the Worker the rest): :meth:`Worker.export_state`, :meth:`Worker.import_state`.

    The containers are the Worker's own, not copies (a round can have hundreds of thousands of
    fragments): a twin may change them in place or replace them, and imports the state back
    before the Worker runs again. Per-fragment lists and bytearrays are indexed in send order."""
    round: Round | None             # the current round (None before the first push)
    started: bool                   # start() was called for it
    done: bytearray                 # 1 per fragment with a result
    n_done: int                     # how many
    retransmitted: bytearray        # tries so far per fragment (0: only the first copy)
    pending: dict[int, float]       # fragments awaiting a result -> deadline; keys ascend
    first_sent: list[float]         # when each first copy was sent
    timeout: list[float]            # each pending fragment's current timeout
    resent_at: list[float]          # when each was last retransmitted
    later_results: list[int]        # later results since it was sent; -1: presumed lost
    path_srtt: list[float]          # per sub-model: smoothed RTT (-1: no sample yet)
    path_rttvar: list[float]        # per sub-model: RTT variance
    path_clean: list[float]         # per sub-model: last first copy answered unretransmitted (-1: none)
    recovering: int                 # pending fragments already retransmitted
    newest_answered: float          # latest send time among fragments with a result
    recovery_answered: float        # when a retransmitted fragment last got its result (-1: never)
    base: int                       # first fragment without a result
    next: int                       # first fragment never sent


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
                 window: int = DEFAULT_WINDOW, reach: int | None = None, recovery: int | None = None,
                 rto: RtoEstimator | None = None, clip: bool = False, native: bool = True,
                 node_tries: int = NODE_TRIES, loss_detection: str = "rack",
                 slot_of: Callable[[int, int, int], int] | None = None, layered: bool = False) -> None:
        if window < 1:
            raise ValueError("window must be at least one fragment")
        if loss_detection not in LOSS_DETECTION:
            raise ValueError(f"loss detection {loss_detection!r}: choose from {', '.join(LOSS_DETECTION)}")
        self.loss_detection = loss_detection
        self._fast_after = {"rack": FAST_RETRANSMIT_AFTER, "dupack": DUPACK_THRESHOLD,
                            "timeout": UNBOUNDED_REACH}[loss_detection]
        # SwitchML's slot discipline: (node id, sub-model, fragment) -> the aggregator it takes at
        # its node; a fragment waits while one in flight takes the same one, so an aggregator is
        # reused only after its result, and a job alone in its pool (a static partition) never
        # collides with itself. None: any fragment in the window goes
        self.slot_of = slot_of
        self._slots: list[int] | None = None
        # layered: a round goes layer by layer, the last sub-model first (protocol.layer_order),
        # each only once the application released it (push's ready, release): its gradients
        # computed, so sending overlaps backpropagation. Else sub-models interleave (send_order)
        self.layered = layered
        self._ready = 0                         # fragments (a prefix of the send order) released
        # retransmitted fragments hold no window slot, up to this many (default: RECOVERY_WINDOWS
        # windows); each one beyond holds a slot again. Unbounded, a lossy round's recoveries
        # piled up on the PS's link faster than it could answer them (5 % loss, window 16, in
        # benchmarks/bench_loss.py: 13 s rounds, 41x the lossless one; bounded: 1.3 s)
        self.recovery = RECOVERY_WINDOWS[loss_detection] * window if recovery is None else recovery
        if self.recovery < 0:
            raise ValueError(f"recovery bound {self.recovery} must not be negative")
        # selective repeat: at most ``window`` fragments await a result, anywhere in
        # [base, base + reach), so a fragment being recovered holds one slot, not the window.
        # No bound by default: a recovery takes an RTO or more, and a bounded reach (it was 4W)
        # stalled the whole window behind every lost fragment (1 % loss on the k=4 fat-tree:
        # 3.45 s rounds with 4W, 1.63 s unbounded, same machine and sitting)
        self.reach = UNBOUNDED_REACH if reach is None else reach
        if self.reach < window:
            raise ValueError(f"reach {self.reach} must be at least the window {window}")
        if node_tries < 0:
            raise ValueError(f"node_tries {node_tries} must not be negative")
        self.node_tries = node_tries
        self.job_id, self.worker_id = job_id, worker_id
        self.ps_ip, self.ip, self.mac, self.gateway_mac = ps_ip, ip, mac, gateway_mac
        self.labels: Mapping[int, FragmentLabel] = (dict(enumerate(labels)) if not isinstance(labels, Mapping)
                                                    else labels)
        self.lanes, self.scale_bits, self.window, self.clip = lanes, scale_bits, window, clip
        # accelerated paths where a driver offers them: push encodes with the installed round
        # encoder, run_udp runs hostlib.native's C loop (False: the Python core only, e.g. to
        # compare the two)
        self.native = native
        self.rto = rto or RtoEstimator()
        # resend → result times of fragments resent once: how long a retransmitted fragment
        # waits before it is tried again. Not the RTO: a first copy's round trip waits for
        # every peer (and their recoveries), a retry only for the PS; and no floor, so a quick
        # PS is retried quickly while a busy one (whose answers take long) is not flooded
        self.resend_rtt = RtoEstimator(initial=self.rto.minimum, minimum=RETRY_MIN, maximum=self.rto.maximum)
        # second try → result times of fragments answered after exactly two tries: the wait
        # before a third. A second try finds the PS holding our copy already, so its answer is
        # about a round trip away (a first try's also waits for the PS to assemble the fragment):
        # at 1 % loss, GOAT's rounds went 1.36x -> 1.32x the lossless one in bench_loss.py
        self.retry_rtt = RtoEstimator(initial=self.rto.minimum, minimum=RETRY_MIN, maximum=self.rto.maximum)
        self.stats = WorkerStats()
        self._cur: Round | None = None
        self._done = bytearray()    # 1 per fragment with a result (bytearray: fast scalar access)
        self._n_done = 0            # how many (done() without scanning _done)
        # Fragments awaiting a result: index -> deadline. Keys ascend (inserted in send order,
        # never re-inserted), which the fast-retransmit scan relies on. The rest of a fragment's
        # timer lives in per-fragment lists, so sending a window costs no object per fragment.
        self._pending: dict[int, float] = {}
        self._first_sent: list[float] = []
        self._timeout: list[float] = []
        self._resent_at: list[float] = []     # when each fragment was last retransmitted
        # each sub-model's round trip (its own node and path): smoothed RTT (-1: no sample yet)
        # and variance, for RACK's window, which must not mistake a longer path for a loss
        self._path_srtt: list[float] = []
        self._path_rttvar: list[float] = []
        # when each sub-model last had a first copy answered before any retransmission (-1: not
        # this round): a switch's result of a resent fragment sent after that is sampled
        self._path_clean: list[float] = []
        self._retransmitted = bytearray()      # tries so far (Karn: no RTT sample from these)
        # pending fragments already retransmitted: being recovered, they hold no window slot
        self._recovering = 0
        # results of later fragments since it was sent ("dupACKs"); -1: presumed lost after a
        # later result from the PS (no window slot, not yet resent)
        self._later_results: list[int] = []
        self._newest_answered = -1.0           # latest send time among fragments with a result
        self._recovery_answered = -1.0         # when a retransmitted fragment last got its result
        self._base = 0          # first fragment without a result: the window's left edge
        self._next = 0          # first fragment never sent
        self._started = False
        self.round = -1         # the current round (push() starts the next one)
        self._previous: Round | None = None    # the previous round, kept for the PS's queries

    # ------------------------------------------------------------------ application side
    def push(self, gradient: np.ndarray, submodel_sizes: Sequence[int] | None = None,
             round: int | None = None, ready: int | None = None) -> None:
        """Prepare the next all-reduce round of ``gradient`` (flat floats), cut into sub-models
        of the given sizes (default: one sub-model). ``round``: its number (default: the last
        one plus 1, starting at 0); rounds only increase. ``ready`` (a layered worker): how many
        sub-models, in send order, may go now (default all; :meth:`release` the rest). Call
        ``start`` to send."""
        if self._started and not self.done():
            raise RuntimeError(f"round {self.round} is not complete: a worker starts a round only "
                               "once it holds every result of the previous one")
        rnd = self.round + 1 if round is None else int(round)
        if not 0 <= rnd < 1 << ROUND_BITS or rnd <= self.round:
            raise ValueError(f"round {rnd} must increase (last {self.round}) and fit {ROUND_BITS} bits")
        g = np.asarray(gradient).ravel()
        sizes = [g.size] if submodel_sizes is None else [int(s) for s in submodel_sizes]
        if sum(sizes) != g.size or any(s < 0 for s in sizes):
            raise ValueError(f"sub-model sizes {sizes} do not add up to the gradient's {g.size} values")
        missing = [s for s in range(len(sizes)) if sizes[s] and s not in self.labels]
        if missing:
            raise ValueError(f"no fragment label for sub-models {missing}")
        if not 0 <= self.worker_id < MAX_WORKERS:
            raise ProtocolError(f"worker_id {self.worker_id} out of range 0..{MAX_WORKERS - 1}")
        if ready is not None and not self.layered:
            raise ValueError("ready: sub-models are released one after another by a layered worker only")
        lab = [self.labels[s] if sizes[s] else FragmentLabel(0, 0) for s in range(len(sizes))]
        wire = self._encode_fast(g, sizes, lab, rnd)
        if wire is None:
            # encode everything now: an overflow is the caller's error, before anything is on the wire
            encoded = encode_fragments(g, sizes, self.scale_bits, self.lanes, self.clip)
            # every first copy in one pass (the labels and round are fixed for the round)
            sub, frag, _, _ = fragment_layout(sizes, self.lanes)
            per_sub = lambda attr: np.array([getattr(x, attr) for x in lab], dtype=np.int64)[sub]   # noqa: E731
            headers = header_array(len(sub), job_id=self.job_id, node_id=per_sub("node_id"), submodel_id=sub,
                                   fragment_id=frag, worker_id=self.worker_id, fan_in=per_sub("fan_in"),
                                   priority=per_sub("priority"), bitmap=1 << self.worker_id, round=rnd)
            wire = build_frames(headers, encoded, src_ip=self.ip, dst_ip=self.ps_ip, src_mac=self.mac,
                                dst_mac=self.gateway_mac)
        order = (layer_order if self.layered else send_order)(sizes, self.lanes)
        n_frag = len(order)
        if n_frag and not bool((order == np.arange(n_frag)).all()):
            wire = np.frombuffer(wire, dtype=np.uint8).reshape(n_frag, -1)[order].tobytes()   # send order
        dropped = None                  # the round no query can concern any more
        if self._started and self._cur is not None:
            dropped, self._previous = self._previous, self._cur
        self.round = rnd
        self.stats = WorkerStats()
        self._cur = Round(rnd, sizes, self.lanes, wire, self.stats.overflowed, order, [x.node_id for x in lab],
                          recycle=dropped)
        r, slot_of = self._cur, self.slot_of
        self._slots = None if slot_of is None else [
            slot_of(r.node[s], s, f) if r.node[s] else -1 for s, f in zip(r.sub, r.frag)]
        self._done = bytearray(len(self._cur))
        self._n_done = 0
        n = len(self._cur)
        self._pending.clear()
        self._first_sent, self._timeout, self._resent_at = [0.0] * n, [0.0] * n, [0.0] * n
        self._retransmitted, self._later_results = bytearray(n), [0] * n
        self._recovering = 0
        if len(self._path_srtt) != len(sizes):       # same sub-models, same paths: keep what we learnt
            self._path_srtt, self._path_rttvar = [-1.0] * len(sizes), [0.0] * len(sizes)
        self._path_clean = [-1.0] * len(sizes)
        self._newest_answered = -1.0
        self._base = self._next = 0
        self._started = False
        self._ready = n
        if ready is not None:
            self._release(ready)

    def _release(self, submodels: int) -> None:
        r = self._cur
        assert r is not None
        last = len(r.count) - 1           # layer order: the last sub-model first
        self._ready = sum(r.count[last - k] for k in range(min(submodels, len(r.count))))

    def release(self, submodels: int, now: float) -> list[bytes]:
        """A layered worker's application computed the gradients of the first ``submodels``
        sub-models in send order (the last layers): they may go; returns what goes now."""
        if not self.layered or self._cur is None:
            raise ValueError("release: a layered worker's pushed round only")
        self._release(submodels)
        return self._fill(now) if self._started else []

    def _encode_fast(self, g: np.ndarray, sizes: list[int], lab: list[FragmentLabel], rnd: int) -> bytes | None:
        """The round's first copies from the installed one-pass encoder (the same bytes as the
        numpy path below it), or None: none installed or available, or an error for the numpy
        path to raise exactly as it always has (values are checked before header fields)."""
        encoder = _round_encoder
        if encoder is None or not self.native or not 0 <= self.scale_bits < 63:
            return None               # e.g. a negative scale: the numpy path raises for it
        used = [s for s in range(len(sizes)) if sizes[s]]
        pick = lambda attr: np.array([getattr(lab[s], attr) if sizes[s] else 0 for s in range(len(sizes))])  # noqa: E731
        try:
            templates = header_array(len(sizes), job_id=self.job_id, node_id=pick("node_id"),
                                     submodel_id=np.array([s if sizes[s] else 0 for s in range(len(sizes))]),
                                     fragment_id=0, worker_id=self.worker_id, fan_in=pick("fan_in"),
                                     priority=pick("priority"), bitmap=1 << self.worker_id, round=rnd)
        except ProtocolError:
            return None
        if not used:
            return b""
        prefix = frame_prefix(self.ip, self.ps_ip, self.mac, self.gateway_mac, INA_UDP_PORT, 64,
                              HEADER_LEN + 4 * self.lanes)
        return encoder(g, sizes, self.scale_bits, self.lanes, self.clip, templates, prefix)

    # ------------------------------------------------------------------ accelerated twins
    def export_state(self) -> WorkerState:
        """The state an accelerated twin of this core needs (see :class:`WorkerState`): the
        Worker's own containers, current until it runs again or takes a state back."""
        return WorkerState(self._cur, self._started, self._done, self._n_done, self._retransmitted, self._pending,
                           self._first_sent, self._timeout, self._resent_at, self._later_results, self._path_srtt,
                           self._path_rttvar, self._path_clean, self._recovering, self._newest_answered,
                           self._recovery_answered, self._base, self._next)

    def import_state(self, state: WorkerState) -> None:
        """Take back a state from :meth:`export_state`, as a twin left it."""
        self._cur, self._started, self._done, self._n_done = state.round, state.started, state.done, state.n_done
        self._retransmitted, self._pending = state.retransmitted, state.pending
        self._first_sent, self._timeout, self._resent_at = state.first_sent, state.timeout, state.resent_at
        self._later_results, self._recovering = state.later_results, state.recovering
        self._path_srtt, self._path_rttvar, self._path_clean = state.path_srtt, state.path_rttvar, state.path_clean
        self._newest_answered, self._base, self._next = state.newest_answered, state.base, state.next
        self._recovery_answered = state.recovery_answered

    def done(self) -> bool:
        return self._started and self._n_done == len(self._done)

    def result_fixed(self) -> np.ndarray:
        """The aggregated gradient in fixed point (int64, one value per gradient element)."""
        return self._cur.result_fixed(self._done) if self._cur is not None else np.zeros(0, dtype=np.int64)

    def result(self) -> np.ndarray:
        """The aggregated gradient as floats (valid once ``done``)."""
        return decode_lanes(self.result_fixed(), self.scale_bits)

    def result_into(self, out: np.ndarray, scale_bits: int | None = None, divisor: float = 1.0) -> np.ndarray:
        """The aggregated gradient into ``out`` (contiguous float32, one per gradient value; valid
        once ``done``), returned: each result times 2^-``scale_bits`` (default the round's scale)
        over ``divisor``, rounded once to float32 from float64 — what numpy gives for
        ``(result_fixed() * 2.0**-scale_bits / divisor).astype(np.float32)``, in one pass and
        without those arrays where a decoder is installed."""
        bits = self.scale_bits if scale_bits is None else int(scale_bits)
        r = self._cur
        n = 0 if r is None else r.values
        if out.dtype != np.float32 or out.size != n or not out.flags.c_contiguous:
            raise ValueError(f"out: {out.size} {out.dtype} values for a round of {n}; needs contiguous float32")
        decoder = _round_decoder
        if r is not None and self.native and decoder is not None and self.done() and \
                decoder(r, math.ldexp(1.0, -bits), float(divisor), out):
            return out
        total = self.result_fixed().astype(np.float64)
        np.ldexp(total, -bits, out=total)
        total /= divisor
        np.copyto(out.reshape(-1), total, casting="same_kind")
        return out

    # ------------------------------------------------------------------ sans-IO core
    def start(self, now: float) -> list[bytes]:
        self._started = True
        return self._fill(now)

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        try:
            (flags, job, node, sub, frag, worker, _, _, _, _, rnd, off) = frame_fields(frame, self.lanes)
        except ProtocolError:
            self.stats.ignored += 1
            return []
        # this round's fragments; the previous round's stay queryable after we moved on
        # (another worker may have lost one of its results), and its late results are duplicates
        cur, prev = self._cur, self._previous
        if cur is not None and job == self.job_id and rnd == cur.number:
            r = cur
        elif prev is not None and job == self.job_id and rnd == prev.number:
            r = prev
        else:
            self.stats.ignored += 1
            return []
        idx = r.index(sub, frag)
        if idx is None:
            self.stats.ignored += 1
        elif flags & _RESULT:
            if r is cur:
                # a RELAY is the PS's result that a node multicast, a RETRY one a node's kept
                # result answering a retry: neither answers a first copy
                return self._on_result(idx, flags, frame, off, now, 0 if flags & (_RELAY | _RETRY) else node)
            self.stats.duplicate_results += 1
        elif flags & _REMINDER and node == 0 and worker == self.worker_id:
            # the PS's query (node 0 = the PS itself): it lacks this fragment. ESA §5.3 case 2:
            # answer with the result if we hold it (others lost theirs), else our contribution.
            self.stats.queries_answered += 1
            if r is not cur or self._done[idx]:
                return [self._result_copy(r, idx)]
            return [self._resend(r, idx, to_ps=True)]
        else:
            self.stats.ignored += 1      # e.g. a reminder that passed a switch not owning its key
        return []

    def on_frames(self, frames: Sequence[bytes], now: float) -> list[bytes]:
        """``on_frame`` for each of ``frames`` (one driver wake-up), the replies concatenated."""
        return each_frame(self.on_frame, frames, now)

    def on_timer(self, now: float) -> list[bytes]:
        """Resend the expired fragments there is evidence against — a fragment sent later
        already has its result, so this one (or its result) was lost — and, per firing, the
        oldest expired one without such evidence as a probe; re-arm the others. An aggregate
        waits for every worker, so a stalled peer makes a whole window expire at once; the probe
        then costs one spurious resend instead of a window's worth (RACK-style loss detection;
        docs/loss-recovery.md)."""
        out = []
        pending, timeout, sent = self._pending, self._timeout, self._first_sent
        answered, probed = self._newest_answered, False
        for idx, deadline in pending.items():
            if deadline <= now:
                if sent[idx] >= answered and probed:
                    pending[idx] = now + timeout[idx]     # no evidence yet: wait another RTO
                    continue
                probed = probed or sent[idx] >= answered
                tries = self._retransmitted[idx]
                if not tries:
                    if self._later_results[idx] >= 0:     # else a PS result freed its slot already
                        self._recovering += 1
                    timeout[idx] = self.retry_wait()
                elif tries == 1 and self.retry_rtt.srtt is not None:      # the third try
                    timeout[idx] = min(self.retry_rtt.rto, self.rto.backoff(timeout[idx], floor=False))
                else:
                    # doubling, up to ANSWER_BACKOFF measured answer times: a drop is random, so
                    # the next try comes about when an answer would have. The answer time is the
                    # retry round trip (else the resend one); the cap is at least the fastest
                    # path's srtt, since an answer to an earlier try arriving just after a later
                    # one is measured short. Before any answer was measured, 4 RTOs (4 floors at
                    # 1.1 Mb/s: a first round at 1 % loss resent 44,625 fragments)
                    measured = self.retry_rtt if self.retry_rtt.srtt is not None else self.resend_rtt
                    if measured.srtt is not None:
                        cap = max(ANSWER_BACKOFF * measured.rto, self._fastest_path())
                    else:
                        cap = self.rto.max_backoff * self.rto.rto
                    if now - self._recovery_answered > self.rto.max_backoff * cap:
                        # no retransmitted fragment answered for 4 caps: not random drops but a
                        # congested path or a stuck PS, which more copies only congest further
                        # (TCP backs off until an ACK comes). Capped at a few answer times, a layered
                        # ESA job's 20 unanswered fragments were each resent every 54 ms on a
                        # 1 Mb/s link, its queue grew without end and one round took 124 s
                        cap = self.rto.maximum
                    timeout[idx] = min(self.rto.maximum, cap, 2.0 * timeout[idx])
                self._retransmitted[idx] = min(255, tries + 1)
                pending[idx] = now + timeout[idx]         # an existing key: the order stays
                self._resent_at[idx] = now
                self.stats.resent += 1
                out.append(self._resend(self._cur, idx))
        return out + self._fill(now) if out else out

    def next_deadline(self) -> float | None:
        return min(self._pending.values()) if self._pending else None

    def retry_wait(self) -> float:
        """How long a fragment just retransmitted waits for its result before the next try:
        the resends' measured round trip (the RTO floor until one was measured), at least the
        fastest sub-model path's smoothed RTT (no answer comes sooner; under a busy CPU a
        shorter wait only adds retries)."""
        wait = self.resend_rtt.rto if self.resend_rtt.srtt is not None else self.rto.minimum
        return min(self.rto.maximum, max(wait, self._fastest_path()))

    def _fastest_path(self) -> float:
        """The smallest smoothed RTT of the sub-models' paths (0 before any sample): no
        answer comes sooner."""
        return min((p for p in self._path_srtt if p >= 0), default=0.0)

    # ------------------------------------------------------------------ internals
    def _on_result(self, idx: int, flags: int, frame: bytes, off: int, now: float, node: int) -> list[bytes]:
        if self._done[idx]:
            self.stats.duplicate_results += 1      # idempotent: the first copy already counted
            return []
        r = self._cur
        size = 4 * self.lanes
        r.results[idx * size:(idx + 1) * size] = frame[off:off + size]
        self._done[idx] = 1
        self._n_done += 1
        self.stats.results += 1
        if flags & _OVERFLOW:
            self.stats.overflowed.add(idx)
        pending, retransmitted = self._pending, self._retransmitted
        if pending.pop(idx, None) is not None:
            if not retransmitted[idx]:
                rtt = now - self._first_sent[idx]               # Karn: skip ambiguous samples
                guessed = self.rto.srtt is None
                self.rto.sample(rtt)
                if guessed:
                    self._retime_first_copies()
                self._path_sample(r.sub[idx], rtt)
                self._path_clean[r.sub[idx]] = now
                if self._later_results[idx] < 0:
                    self._recovering -= 1                       # presumed lost, yet answered
            else:
                self._recovering -= 1
                self._recovery_answered = now
                if node and self._path_clean[r.sub[idx]] < self._first_sent[idx]:
                    # a switch's result can only answer the first copy (a RESEND goes to the PS,
                    # whose results carry node 0), so its round trip is exact despite the resend
                    # (Karn's ambiguity is about which copy was answered). Sampled only when no
                    # first copy of this sub-model was answered in time since this one was sent:
                    # else RACK's resends keep a path srtt learnt too short for ever (every
                    # copy resent before its result, so no sample grows it) — the emulation's
                    # lossless 1.3 Mb/s run with the floor stretched resent every 4th fragment of
                    # one worker 10-40 ms after sending it, 545 times; the twin with one path
                    # srtt set to 5 ms: 254 resends a round, 1.13x the ideal, for every round;
                    # now 2 resends in all, 1.00x. Only then: a copy that waited for a peer's
                    # recovery measures that recovery, and sampling every switch-answered resent
                    # fragment made GOAT at 5 % loss, window 8, slower (bench_loss.py, 3 seeds:
                    # 3.51 -> 5.14 s; with this condition 3.59 s)
                    self._path_sample(r.sub[idx], now - self._first_sent[idx])
                if retransmitted[idx] == 1:      # one try: the answer is to it (or to the first copy)
                    self.resend_rtt.sample(now - self._resent_at[idx])
                elif retransmitted[idx] == 2:
                    self.retry_rtt.sample(now - self._resent_at[idx])
        if self._first_sent[idx] > self._newest_answered:
            self._newest_answered = self._first_sent[idx]
        out = []
        sub, later, timeout, path = r.sub, self._later_results, self._timeout, r.node
        retry = -1.0                      # retry_wait(), computed once a fast retransmit needs it
        for earlier in pending:
            if earlier >= idx:
                break                     # keys ascend: no earlier fragment is left
            if retransmitted[earlier]:
                continue
            # a switch's result: evidence against earlier fragments of every sub-model of its
            # node, whose copies and results take the same paths; the PS's results (whose gap
            # rule sees the loss) only against the same sub-model's
            if path[sub[earlier]] == path[sub[idx]] if node else sub[earlier] == sub[idx]:
                if not node or sub[earlier] != sub[idx]:
                    # another sub-model's result from the same node: presumed lost too, not
                    # resent at once — where a pool is short, copies that collided complete at
                    # the PS and their fragments are overtaken without a loss (resending at once
                    # made make run-fattree's GOAT rounds 15 % slower in the twin; presuming
                    # took GOAT at 5 % loss from 11.1 to 10.5 s in bench_loss.py's setting).
                    # A later result the PS sent (node 0): this one is presumed lost — it no longer
                    # holds a window slot (marked -1) — but is resent only at its RACK deadline,
                    # unless its result comes first. The PS completes fragments as their
                    # contributions come, sees a lost first copy itself (its gap rule) and asks
                    # exactly the workers it lacks, so a resend at once would mostly cross its
                    # result and be answered again (ATP at 1 % loss in bench_loss.py: 4,519 ->
                    # 2,389 resends, rounds 1.31x -> 1.28x the lossless one), while holding the
                    # slot until then stalled the window at 5 % (9x -> 18x)
                    if later[earlier] >= 0:
                        later[earlier] = -1
                        self._recovering += 1
                    self._rack(earlier)
                    continue
                # fast retransmit: results of later fragments of the same sub-model (same path,
                # so in order) overtook this one: it was probably lost
                presumed = later[earlier] < 0
                later[earlier] = max(later[earlier], 0) + 1
                if later[earlier] >= self._fast_after:
                    retransmitted[earlier] = 1
                    if not presumed:
                        self._recovering += 1
                    if retry < 0:
                        retry = self.retry_wait()
                    timeout[earlier] = retry
                    pending[earlier] = now + retry
                    self._resent_at[earlier] = now
                    self.stats.resent += 1
                    self.stats.fast_resent += 1
                    out.append(self._resend(r, earlier))
            else:
                # a later fragment of another sub-model (another path) has its result: this one
                # is lost unless its answer comes within its own path's round trip (RACK: the
                # paths differ, so by time, not by order); the timer resends it then. Once it
                # has waited its path's smoothed RTT it is presumed lost: its slot goes to a new
                # fragment (at 5 % loss, 3 in 5 fragments wait for a lost copy, and a window
                # held by them ran the links 55 % busy: GOAT rounds 12.8 s -> 10.9 s in
                # bench_loss.py, lossless and 1 % unchanged)
                srtt = self._path_srtt[sub[earlier]]
                if later[earlier] >= 0 and 0 <= srtt < now - self._first_sent[earlier]:
                    later[earlier] = -1
                    self._recovering += 1
                self._rack(earlier)
        done, n = self._done, len(self._done)
        while self._base < n and done[self._base]:
            self._base += 1
        return out + self._fill(now)

    def _retime_first_copies(self) -> None:
        """The first round trip measured replaces the initial RTO, a guess (RFC 6298 2.2-2.3):
        first copies sent under the guess wait no longer than the measured RTO. On slow links
        the guess is long (6 s at 1 Mb/s, run.host_timers), and a first-window fragment whose
        partial a pool collision stranded waited all of it: one job's first round took 6.0 s
        instead of 1.4 (ESA §7.2 on 16 servers, ATP, both instruments)."""
        rto, sent, pending, timeout, retx = self.rto.rto, self._first_sent, self._pending, self._timeout, \
            self._retransmitted
        for idx, deadline in pending.items():
            if not retx[idx] and sent[idx] + rto < deadline:
                pending[idx], timeout[idx] = sent[idx] + rto, rto

    def _path_sample(self, sub: int, rtt: float) -> None:
        """RFC 6298's update of sub-model ``sub``'s round trip."""
        srtt = self._path_srtt[sub]
        self._path_srtt[sub], self._path_rttvar[sub] = smoothed(srtt if srtt >= 0 else None,
                                                                self._path_rttvar[sub], rtt)

    def _rack(self, idx: int) -> None:
        """Bring pending fragment ``idx``'s timer forward to its RACK deadline ("rack" only)."""
        if self.loss_detection != "rack":
            return
        rack = self._rack_window(self._cur.sub[idx])
        if rack is not None and self._first_sent[idx] + rack < self._pending[idx]:
            self._pending[idx] = self._first_sent[idx] + rack

    def _arm_tail(self) -> None:
        """The round's last first copy is out (after a result of the round: its peers are
        sending): no fragment will be sent after the pending ones, so no later result can show
        one of them lost — each gets its RACK deadline now (a tail loss probe), not an RTO.
        Measured in benchmarks/bench_loss.py: a lost last fragment cost 1 % loss rounds a whole
        RTO floor (0.2 s of 0.4 s)."""
        retransmitted = self._retransmitted
        for idx in self._pending:
            if not retransmitted[idx]:
                self._rack(idx)

    def _rack_window(self, sub: int) -> float | None:
        """How long a fragment of ``sub`` waits for its result once a later-sent one has its
        own: twice its path's srtt + 4 rttvar, without the RTO floor (the floor keeps a busy
        machine's delay from passing for loss when nothing else says so; here something
        does), at most the RTO (the timer would fire then anyway; capped at the floor, round
        trips of slow links outgrew it: at 1 Mb/s and window 16 every lossless emulated GOAT
        round resent ~3,000 fragments). None before the path's first sample. Twice: queues on
        the links a path shares come and go, and one srtt + 4 rttvar resent 4 % of a lossless
        GOAT round's fragments in benchmarks/bench_loss.py, twice none."""
        srtt = self._path_srtt[sub]
        if srtt < 0:
            return None
        return max(RETRY_MIN, min(self.rto.rto, 2.0 * srtt + 4.0 * self._path_rttvar[sub]))

    def _fill(self, now: float) -> list[bytes]:
        """Send never-sent fragments while fewer than ``window`` first copies await a result,
        up to ``base + reach``. Retransmitted fragments do not count: once one is declared lost
        its recovery (PS, queries) takes longer than a round trip, and holding a slot for it
        shrank the window by the share of fragments being recovered (TCP's "pipe" likewise
        leaves out segments marked lost)."""
        r, pending = self._cur, self._pending
        if r is None:
            return []
        room = self.window - len(pending) + min(self._recovering, self.recovery)
        if room <= 0 and self._recovering < self.recovery:
            room += self._presume_stale(r, now)
        stop = min(self._ready, self._base + self.reach)
        if self._slots is not None and room > 0:
            stop = self._slot_free_until(stop, room)
        if room <= 0 or self._next >= stop:
            return []
        done, start = self._done, self._next
        end = min(stop, start + room)
        t = self.rto.rto                  # no sample can arrive in between: one value for all
        if end == start + 1 and not done[start]:
            # one result freed one slot: the steady state of a window, kept short
            pending[start] = now + t
            self._first_sent[start], self._timeout[start] = now, t
            self._next = end
            self.stats.sent += 1
            if end == len(r) and self._n_done:
                self._arm_tail()
            return [r.wire[start * r.frame_len:end * r.frame_len]]
        if done.find(1, start, end) < 0:
            send: range | list[int] = range(start, end)      # the usual case: none done yet
            self._next = end
        else:
            # skip fragments whose result arrived before we sent them (another worker's loss)
            send, i = [], start
            while i < stop and len(send) < room:
                if not done[i]:
                    send.append(i)
                i += 1
            self._next = i
        pending.update(dict.fromkeys(send, now + t))
        if isinstance(send, range):
            self._first_sent[send.start:send.stop] = [now] * len(send)
            self._timeout[send.start:send.stop] = [t] * len(send)
        else:
            for idx in send:
                self._first_sent[idx], self._timeout[idx] = now, t
        self.stats.sent += len(send)
        if send and self._next >= len(r) and self._n_done:
            self._arm_tail()
        wire, size = r.wire, r.frame_len
        return [wire[i * size:(i + 1) * size] for i in send]

    @property
    def c_capable(self) -> bool:
        """Whether hostlib.native's C worker implements this Worker's options: "rack" loss
        detection, no slot discipline, sub-models interleaved (not layered)."""
        return self.loss_detection == "rack" and self.slot_of is None and not self.layered

    def _slot_free_until(self, stop: int, room: int) -> int:
        """The first fragment from ``_next`` on whose aggregator one in flight (or one before it
        in this fill) still takes: sending stops there (SwitchML's slots, in order)."""
        slots, done, pending = self._slots, self._done, self._pending
        assert slots is not None
        busy = {slots[i] for i in pending}
        i = self._next
        while i < stop and room > 0:
            if not done[i]:
                if slots[i] >= 0 and slots[i] in busy:
                    return i
                busy.add(slots[i])
                room -= 1
            i += 1
        return stop

    def _presume_stale(self, r: Round, now: float) -> int:
        """Presume lost the first copies that waited ``STALE_AFTER`` times their path's
        smoothed RTT (oldest first, while the recovery bound allows): each frees a window slot.
        Their timers stay: with no later result as evidence, nothing is resent early. Returns
        how many were presumed ("rack" only: waiting long is how a straggler's peers wait)."""
        if self.loss_detection != "rack":
            return 0
        sent, tries, later, srtt, sub = (self._first_sent, self._retransmitted, self._later_results,
                                         self._path_srtt, r.sub)
        freed = 0
        for idx in self._pending:
            if self._recovering >= self.recovery:
                break
            wait = srtt[sub[idx]]
            if not tries[idx] and later[idx] >= 0 and 0 <= STALE_AFTER * wait < now - sent[idx]:
                later[idx] = -1
                self._recovering += 1
                freed += 1
        return freed

    def _header(self, r: Round, idx: int, node_id: int, flags: Flags) -> InaHeader:
        sub = r.sub[idx]
        label = self.labels[sub]
        return InaHeader.for_worker(self.job_id, node_id, sub, r.frag[idx], self.worker_id,
                                    label.fan_in, label.priority, flags, r.number)

    def _result_copy(self, r: Round, idx: int) -> bytes:
        """Our copy of a fragment's result, for the PS to pass on (RESULT|RESEND: no switch
        touches it)."""
        lanes = r.result_lanes(idx)
        flags = Flags.RESULT | Flags.RESEND | (Flags.OVERFLOW if idx in r.overflowed else Flags(0))
        return build_frame(self._header(r, idx, 0, flags), lanes, src_ip=self.ip, dst_ip=self.ps_ip,
                           src_mac=self.mac, dst_mac=self.gateway_mac)

    def _resend(self, r: Round | None, idx: int, to_ps: bool = False) -> bytes:
        """A retransmission. The first ``node_tries`` of the current round's go to the fragment's
        aggregation node as a RETRY of our contribution (rule 8); later ones to the PS as an ask
        (RESEND, count 0, no lanes: the PS most often has the result or our copy already), and
        answers to the PS's queries (``to_ps``) as a RESEND of our contribution. Both have node
        0, so no pinned per-node route or aggregation applies."""
        assert r is not None
        node = r.node[r.sub[idx]]
        if node and not to_ps and r is self._cur and self._retransmitted[idx] <= self.node_tries:
            return build_frame(self._header(r, idx, node, Flags.RETRY), r.contribution(idx), src_ip=self.ip,
                               dst_ip=self.ps_ip, src_mac=self.mac, dst_mac=self.gateway_mac)
        if to_ps:
            return build_frame(self._header(r, idx, 0, Flags.RESEND), r.contribution(idx), src_ip=self.ip,
                               dst_ip=self.ps_ip, src_mac=self.mac, dst_mac=self.gateway_mac)
        h = replace(self._header(r, idx, 0, Flags.RESEND), count=0)
        return build_header_only(h, src_ip=self.ip, dst_ip=self.ps_ip, src_mac=self.mac, dst_mac=self.gateway_mac)

