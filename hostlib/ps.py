"""The parameter server (PS) of one or more INA jobs, as a sans-IO protocol core.

It receives everything the switches did not finish — plain fragments (node 0 plans), COLLISION
fallbacks, PREEMPTED partials, partials and complete aggregates a level sends to the PS,
REMINDER drains, workers' asks (header-only RESENDs: a result is overdue) and their answers to
its queries — and completes each (job, sub-model,
fragment) exactly, then unicasts the RESULT to every worker of the job (or, where a node of the
job multicasts to all of them, once through that node: ``JobConfig.result_via``).

Exactness (docs/protocol.md, "Host behaviour"). Every contribution reaches the PS by one of two
channels:

* the *network* channel: a worker's first copy of a fragment (never retransmitted without
  RESEND) travels as a token that switches only ever move — absorb into an aggregator, merge
  into a partial, swap out, drain — and never copy (only complete RESULTs are multicast). So the
  network-channel packets the PS receives for a key carry pairwise disjoint bitmaps, each worker
  at most once, whatever was lost;
* the *resend* channel: answers to the PS's queries (and RETRYs a switch turned into RESENDs),
  each the exact value of one worker's own contribution, possibly several identical copies.

The PS keeps them apart: ``net_sum``/``net_bitmap`` for the first, one stored copy per worker
for the second, and the result is ``net_sum + Σ resend[w] for w ∉ net_bitmap``. Each worker
is counted once: through the network sum if some network packet carried it (disjointness),
else through its resend copy. A RESEND of w that arrives while a switch still holds a partial
with w is harmless: if that partial is later drained to the PS, w moves to the network side and
its resend copy is no longer used; if it never arrives, the resend copy stands in for it. The
fragment completes when ``net_bitmap | resend_bitmap`` covers the job, and a later network
packet (a late drain) is then ignored. A network packet overlapping ``net_bitmap`` (which the
token argument rules out, but a duplicating network could produce) is dropped whole: it cannot
be split, and the query fallback below still completes the fragment.

Liveness (ESA §5.3): an ask for an incomplete entry and each of its timeouts (RTO
estimator with a floor and capped exponential backoff, ESA §6) *recover* it: REMINDERs to the
aggregation nodes of its sub-model drain their partials (case 1), and *queries* to the workers it
lacks (a REMINDER with node 0 sent to the worker) are answered with the worker's copy of the
result if it holds one — the PS adopts it and passes it on (case 2: a result multicast that some
workers lost after the switch freed its aggregator) — else with the worker's contribution. An
ask (or a RESEND) for an already complete fragment is answered with the RESULT. Completing through resend
copies may leave a partial in a switch; one clean-up REMINDER drains it unless a recovery
reminded the nodes already (the drain is then ignored).

Rounds. Entries are keyed (job, round, sub-model, fragment). A job's workers are at most one
round apart (a worker starts round r+1 only once it holds every result of round r), so the PS
keeps the newest round it has seen and the one before — to serve an ask of a worker that lost a
result of round r while others already sent round r+1 — and drops entries and packets of older
rounds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from .protocol import (DEFAULT_LANES, INA_UDP_PORT, INT32_MAX, INT32_MIN, WORKER_AGGREGATE, Flags,
                       InaHeader, ProtocolError, build_frame, build_header_only, frame_fields, frame_lanes,
                       frame_prefix, frame_records, pack_header)
from .rto import RETRY_MIN, RtoEstimator

Key = tuple[int, int, int, int]     # (job, round, sub-model, fragment)


@dataclass
class JobConfig:
    """What the PS knows of a job.

    ``workers``: worker id → (IP, MAC). ``reminder_via``: aggregation node id → an IP address
    whose route from the PS passes that node (reminders are ordinary UDP packets; a switch not
    owning the key forwards them on to that host, which ignores them). ``submodel_nodes``: the
    nodes to remind for a sub-model (all ``reminder_via`` nodes if absent; reminding a node that
    holds nothing is harmless). ``participants``: round → the worker ids that take part in it
    (GOAT-Async: the K_t workers of Alg. 2); a round not listed has every worker.
    ``result_via``: a node of the job that multicasts to every worker (level ``to_multicast``,
    with a ``reminder_via`` host; rule 1 needs no aggregator, so it serves every sub-model), 0
    if none: a result the PS completes for a round of every worker leaves once, flagged
    ``RELAY``, through that node, not once per worker. ``node_workers``: aggregation node id →
    the workers whose contributions can reach it (their first copies, or what a level below
    sends on); a reminder goes only to nodes that can hold a contribution the PS lacks (None:
    to every node of the sub-model).
    """
    workers: Mapping[int, tuple[str, str | int]]
    reminder_via: Mapping[int, str] = field(default_factory=dict)
    submodel_nodes: Mapping[int, Sequence[int]] | None = None
    participants: Mapping[int, Sequence[int]] | None = None
    result_via: int = 0
    node_workers: Mapping[int, Sequence[int]] | None = None

    @property
    def mask(self) -> int:
        m = 0
        for w in self.workers:
            m |= 1 << w
        return m

    def round_workers(self, round: int) -> list[int]:
        """The workers whose contributions make up ``round`` (and who get its result)."""
        if self.participants is None or round not in self.participants:
            return list(self.workers)
        return [w for w in self.participants[round] if w in self.workers]

    def round_mask(self, round: int) -> int:
        if self.participants is None or round not in self.participants:
            return self.mask
        m = 0
        for w in self.round_workers(round):
            m |= 1 << w
        return m

    def nodes_for(self, submodel_id: int) -> list[int]:
        if self.submodel_nodes is not None and submodel_id in self.submodel_nodes:
            nodes = self.submodel_nodes[submodel_id]
        else:
            nodes = list(self.reminder_via)
        return [n for n in nodes if n != 0 and n in self.reminder_via]

    def nodes_to_remind(self, submodel_id: int, lacking: int) -> list[int]:
        """The nodes of ``submodel_id`` that may hold a partial with a contribution of the
        workers in the bitmap ``lacking``: any other node's partial, if it has one, adds
        nothing the PS lacks."""
        nodes = self.nodes_for(submodel_id)
        if self.node_workers is None:
            return nodes
        return [n for n in nodes if any(lacking >> w & 1 for w in self.node_workers.get(n, ()))]

    def relay_node(self, round: int) -> int:
        """The node that multicasts the PS's results of ``round`` to every worker (0: the PS
        sends one to each): its group holds every worker, so only for rounds that have them all."""
        node = self.result_via
        if node not in self.reminder_via or self.round_mask(round) != self.mask:
            return 0
        return node


@dataclass(slots=True)
class Entry:
    created: float
    deadline: float
    timeout: float
    lanes: int
    net_sum: np.ndarray | None = None      # None until the first network packet (one copy, no zeros + add)
    net_bitmap: int = 0
    resend: dict[int, np.ndarray] = field(default_factory=dict)
    asked: int = 0                 # the workers whose asks came (their bitmap)
    sent_to: int = 0               # the workers a result copy was passed on to (their bitmap)
    overflow: bool = False
    attempts: int = 0              # timeouts so far
    reminded: bool = False         # a RESEND or an ask arrived: the deadline was brought forward
    grace: bool = False            # the deadline is that grace (the first recovery), not a timeout
    first_resend: float = -1.0     # when the first RESEND arrived (-1: none yet)
    recovered_at: float = -1.0     # when the last recovery was sent (-1: never)
    recoveries: int = 0            # recoveries sent so far
    reminded_for: int = 0          # the workers whose nodes its recoveries reminded (their bitmap)
    answered: bool = False         # a reply that only a recovery gets (a result copy or a drain) arrived
    replied: bool = False          # such a reply arrived since the last recovery
    # after its result was relayed: -1 until a RESEND of it comes, then that worker (the next
    # RESEND of another is answered with a relay again); -2 if not relayed or relayed again
    relay_state: int = -2
    result: np.ndarray | None = None
    completed_at: float = -1.0     # when its result went out (-1: not complete)
    slot: int = -1                 # in on_frames: its place among the batch's completions
    seq: int = 0                   # creation order, kept by an accelerated twin when it hands entries over

    @property
    def resend_bitmap(self) -> int:
        b = 0
        for w in self.resend:
            b |= 1 << w
        return b


@dataclass(slots=True)
class PsState:
    """The ParameterServer's fragment state, handed to and taken back from an accelerated twin of
    the core (hostlib.native's NativePs completes network contributions in C and moves an entry
    here for good whenever the Python core needs it): :meth:`ParameterServer.export_state`,
    :meth:`ParameterServer.import_state`. The dicts are the PS's own, not copies; a twin may
    change them in place or replace them, and imports the state back before the PS runs again."""
    entries: dict[Key, Entry]       # every entry kept (complete ones serve resends)
    open: dict[Key, Entry]          # the incomplete ones, in creation order (the timers' order)
    newest: dict[int, int]          # job -> newest round seen


@dataclass
class PsStats:
    received: dict[str, int] = field(default_factory=dict)     # by kind, see _kind()
    results_sent: int = 0
    results_resent: int = 0
    reminders: int = 0
    queries: int = 0
    completed: int = 0
    results_relayed: int = 0       # of results_sent: one frame through a multicasting node

    def count(self, kind: str) -> None:
        self.received[kind] = self.received.get(kind, 0) + 1


_RESULT, _COLLISION, _PREEMPTED = int(Flags.RESULT), int(Flags.COLLISION), int(Flags.PREEMPTED)
_REMINDER, _RESEND, _OVERFLOW = int(Flags.REMINDER), int(Flags.RESEND), int(Flags.OVERFLOW)
_RELAY = int(Flags.RELAY)


_FIRST_COPIES = ("plain", "partial", "collision")     # first copies in their workers' send order


def _kind(flags: int, count: int) -> str:
    if flags & _RESEND:
        return "result_copy" if flags & _RESULT else "resend" if count else "ask"
    if flags & _PREEMPTED:
        return "drained" if flags & _REMINDER else "preempted"
    if flags & (_REMINDER | _RELAY):
        return "reminder"             # our own, come back (a relay only if misrouted)
    if flags & _RESULT:
        return "switch_result"
    if flags & _COLLISION:
        return "collision"
    return "partial" if count > 1 else "plain"


# A reply this many answer RTOs after an entry's latest recovery (not its first) samples the
# answer round trip although Karn's rule would drop it (ParameterServer._on_reply). In the
# emulation at 5 % loss and 0.88 Mb/s the replies queued behind the PS's own recoveries for
# seconds while the wait, learnt lossless, stayed 0.2 s at most (4 RTOs): the PS re-recovered
# every entry many times per reply, 487,867 queries for 1,784 fragments, and rounds hit their
# 300 s limit; sampled, 4.3x the lossless round. Not 1: at 20 Mb/s (bench_loss.py) the tail
# of ordinary replies then raised the wait, and GOAT's 5 % rounds took up to 4x longer; 2 and
# 3 leave them as they were.
_LATE_REPLY = 2.0

# A result that on_frames computes at the end of its batch: every completion of the batch at
# once, in numpy, instead of reductions and conversions per fragment. Until then the entry's
# result is this (not None: the fragment is complete, as on_frame would have it) and the frames
# for it are _Later placeholders in the batch's output.
_DEFERRED = np.zeros(0, dtype=np.int32)


class _Later:
    __slots__ = ("slot", "worker")

    def __init__(self, slot: int, worker: int) -> None:
        self.slot, self.worker = slot, worker


class ParameterServer:
    def __init__(self, ip: str, jobs: Mapping[int, JobConfig], *, mac: str | int = 0,
                 gateway_mac: str | int = 0, lanes: int = DEFAULT_LANES, timeout: RtoEstimator | None = None) -> None:
        self.ip, self.mac, self.gateway_mac, self.lanes = ip, mac, gateway_mac, lanes
        self.jobs = dict(jobs)
        self.timeout = timeout or RtoEstimator()
        # how long after an entry's first RESEND the other workers' resends complete it (sampled
        # where they did so unasked): the grace before the PS queries anyone. Before a sample,
        # a quarter of the timeout's floor: the workers see a lost first copy within a round
        # trip of each other, and the floor is many round trips
        self.resend_spread = RtoEstimator(initial=self.timeout.minimum / 4, minimum=RETRY_MIN,
                                          maximum=self.timeout.maximum)
        # recovery sent -> its first reply, for entries recovered once (Karn): how long to wait
        # before recovering again. Only replies nothing else sends count — a worker's result
        # copy (the answer to a query) and a switch's drain (to a reminder); a RESEND may be
        # the worker's own retry, seconds after a lost query. Not the entry timeout (first copy
        # -> complete waits for every worker's window) nor a multiple of the grace: the replies
        # are one round trip away, and what a recovery sends or gets back is lost at random, so
        # the next try should come about then
        self.answer_rtt = RtoEstimator(initial=self.timeout.minimum / 4, minimum=RETRY_MIN,
                                       maximum=self.timeout.maximum)
        # the quickest answers to queries: the time from a recovery to the first RESEND of a worker
        # it lacked. Short when the worker's own retry was on its way, so a lower bound of the
        # round trip to the workers: a RESEND arriving sooner after the result went out was sent
        # before that result could have arrived (``_on_resend``)
        self.query_rtt = RtoEstimator(initial=self.timeout.minimum, minimum=RETRY_MIN, maximum=self.timeout.maximum)
        self.stats = PsStats()
        self._entries: dict[Key, Entry] = {}        # (job, round, sub-model, fragment)
        # the incomplete ones, in creation order: timers only ever concern these, and a round's
        # complete entries (kept to serve resends) must not cost a scan per frame
        self._open: dict[Key, Entry] = {}
        self._newest: dict[int, int] = {}            # job -> newest round seen
        self._completions: list[tuple[Key, Entry, JobConfig]] | None = None   # on_frames' deferred results
        # set whenever a first copy was counted and the gap rule evaluated for it (an accelerated
        # twin then applies the rule to the preceding entry where it holds that one)
        self.gap_checked = False

    # ------------------------------------------------------------------ inspection
    def result(self, job_id: int, submodel_id: int, fragment_id: int, round: int | None = None) -> np.ndarray | None:
        """The result of a fragment in ``round`` (default: the job's newest round)."""
        r = self._newest.get(job_id, 0) if round is None else round
        e = self._entries.get((job_id, r, submodel_id, fragment_id))
        return None if e is None or e.result is None else e.result.copy()

    def incomplete(self) -> list[Key]:
        """(job, round, sub-model, fragment) of every entry still waiting for contributions."""
        return list(self._open)

    def reset(self, job_id: int | None = None) -> None:
        """Forget every fragment and round of ``job_id`` (all jobs when None), e.g. when a job
        restarts its round numbers. Not needed between rounds: rounds tell themselves apart."""
        self._entries = {k: e for k, e in self._entries.items() if job_id is not None and k[0] != job_id}
        self._open = {k: e for k, e in self._open.items() if job_id is not None and k[0] != job_id}
        self._newest = {j: r for j, r in self._newest.items() if job_id is not None and j != job_id}

    # ------------------------------------------------------------------ accelerated twins
    def export_state(self) -> PsState:
        """The state an accelerated twin of this core needs (see :class:`PsState`)."""
        return PsState(self._entries, self._open, self._newest)

    def import_state(self, state: PsState) -> None:
        """Take back a state from :meth:`export_state`, as a twin left it."""
        self._entries, self._open, self._newest = state.entries, state.open, state.newest

    # ------------------------------------------------------------------ sans-IO core
    def start(self, now: float) -> list[bytes]:
        return []

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        try:
            f = frame_fields(frame, self.lanes)
        except ProtocolError:
            self.stats.count("invalid")
            return []
        return self._handle(f[0], f[1], f[3], f[4], f[5], f[7], f[9], f[10], frame_lanes(frame, f[11], self.lanes),
                            now)

    def on_frames(self, frames: Sequence[bytes], now: float) -> list[bytes]:
        """``on_frame`` for each of ``frames`` (one driver wake-up), the replies concatenated.

        Decodes the batch in one numpy pass (headers to ints in one call, lanes to int64 in one
        conversion) where every frame has hostlib's layout; the per-frame logic is on_frame's."""
        out: list[bytes] = []
        try:
            rec = frame_records(frames, self.lanes) if len(frames) > 1 else None
        except ProtocolError:
            rec = None                    # some frame needs on_frame's checks and counters
        if rec is None:
            for frame in frames:
                out += self.on_frame(frame, now)
            return out
        lanes = rec["lanes"].astype(np.int64)
        handle, self._completions = self._handle, []
        try:
            for i, (_, flags, job_id, _, sub, frag, worker, _, count, _, bitmap, rnd) in enumerate(
                    rec["hdr"].tolist()):
                out += handle(flags, job_id, sub, frag, worker, count, bitmap, rnd, lanes[i], now)
        finally:
            completions, self._completions = self._completions, None
            payloads = self._complete_all(completions)
        if not payloads:
            return out
        return [f if isinstance(f, bytes) else
                self._address(payloads[f.slot], completions[f.slot][2], f.worker) for f in out]

    def _complete_all(self, completions: list[tuple[Key, Entry, JobConfig]]) -> list[bytes]:
        """The results of a batch's deferred completions, all at once; their payloads."""
        if not completions:
            return []
        totals = np.stack([e.net_sum for _, e, _ in completions])
        over = (totals.min(axis=1) < INT32_MIN) | (totals.max(axis=1) > INT32_MAX)
        if over.any():
            totals = np.clip(totals, INT32_MIN, INT32_MAX)     # saturate, as a switch would
        results = totals.astype(np.int32)
        wire = results.astype(">i4").tobytes()
        step = 4 * results.shape[1]
        payloads = []
        for i, ((key, e, job), o) in enumerate(zip(completions, over.tolist())):
            e.result, e.slot = results[i], -1
            e.overflow |= o
            payloads.append(self._header(key, e, job) + wire[i * step:(i + 1) * step])
        return payloads

    def _handle(self, flags: int, job_id: int, sub: int, frag: int, worker: int, count: int, bitmap: int, rnd: int,
                lanes: np.ndarray, now: float) -> list[bytes]:
        """One decoded frame (``lanes``: its K lanes, any integer dtype, not kept)."""
        job = self.jobs.get(job_id)
        if job is None:
            self.stats.count("foreign")
            return []
        kind = _kind(flags, count)
        self.stats.count(kind)
        if kind == "reminder":
            return []                     # one of ours that came back: nothing to add
        from_worker = kind in ("resend", "result_copy", "ask")
        if from_worker and worker not in job.workers:
            self.stats.count("unknown_worker")
            return []
        mask = job.round_mask(rnd)
        if not from_worker and (bitmap & ~mask or bitmap == 0):
            # a drained *held* aggregator (ATP mode) reports bitmap 0xFFFFFFFF and no sums: its
            # contributions already left as the complete aggregate. Nothing to add.
            self.stats.count("no_contribution")
            return []
        if not self.in_window(job_id, rnd):
            self.stats.count("stale")     # a round every worker has finished
            return []
        key = (job_id, rnd, sub, frag)
        e = self._entries.get(key)
        if e is None:
            t = self.timeout.rto
            e = self._entries[key] = self._open[key] = Entry(now, now + t, t, self.lanes)
        if kind in ("result_copy", "drained") and e.recoveries and not e.replied:
            self._on_reply(e, now)
        if kind == "resend":
            return self._on_resend(key, e, job, worker, lanes, now)
        if kind == "ask":
            return self._on_ask(key, e, job, worker, now)
        if kind == "result_copy":
            return self._on_result_copy(key, e, job, worker, flags, lanes, now)
        if kind == "drained" and bitmap == mask and not e.net_bitmap:
            # a node's kept result (rule 8), drained whole: the node multicast it already, so,
            # like a worker's copy, it goes only to the workers known to lack it
            return self._on_result_copy(key, e, job, -1, flags, lanes, now)
        if e.result is not None:
            self.stats.count("late")      # e.g. a drained partial whose workers were resent
            return []
        if bitmap & e.net_bitmap:
            self.stats.count("overlap")   # cannot be split: drop whole, queries complete it
            return []
        if e.net_sum is None:
            e.net_sum = lanes.astype(np.int64)
        else:
            e.net_sum += lanes
        e.net_bitmap |= bitmap
        e.overflow |= bool(flags & _OVERFLOW)
        out = self._maybe_complete(key, e, job, now, mask, first_copy=kind in _FIRST_COPIES)
        if kind in _FIRST_COPIES:
            self.gap_rule(job_id, rnd, sub, frag, bitmap, now)
        return out

    def on_timer(self, now: float) -> list[bytes]:
        out = []
        for key, e in list(self._open.items()):
            if e.deadline <= now:
                out += self._recover(key, e, self.jobs[key[0]], now)
                if e.grace:               # the grace after a first RESEND: no timeout yet
                    e.grace = False
                else:
                    e.attempts += 1
                # recovery again an answer round trip later, then a doubled wait: what it sends
                # or gets back is lost at random, while a PS or hosts slower to answer are
                # measured as such. Doubled up to the ceiling, not to a few answer round trips:
                # before one is measured (a quarter of the timeout's floor), a window of entries
                # capped at four of them re-queried every millisecond, faster than a loaded host
                # answers, and the answers queued behind ever more queries
                e.timeout = (self.answer_rtt.rto if e.recoveries == 1
                             else min(self.answer_rtt.maximum, 2.0 * e.timeout))
                e.deadline = now + e.timeout
        return out

    def next_deadline(self) -> float | None:
        return min((e.deadline for e in self._open.values()), default=None)

    def done(self) -> bool:
        return not self._open

    # ------------------------------------------------------------------ internals
    def in_window(self, job_id: int, round: int) -> bool:
        """Track the job's newest round (dropping the entries of rounds before the one preceding
        it); False for such a round. An accelerated twin calls it for a round it sees first."""
        newest = self._newest.get(job_id)
        if newest is None or round > newest:
            self._newest[job_id] = round
            self._entries = {k: e for k, e in self._entries.items() if k[0] != job_id or k[1] >= round - 1}
            self._open = {k: e for k, e in self._open.items() if k[0] != job_id or k[1] >= round - 1}
            return True
        return round >= newest - 1

    def _on_resend(self, key: Key, e: Entry, job: JobConfig, worker: int,
                   lanes: np.ndarray, now: float) -> list[bytes]:
        if e.result is not None:
            return self._serve(key, e, job, worker, now)
        again = worker in e.resend
        if not again and e.recoveries == 1 and e.reminded_for >> worker & 1:
            self.query_rtt.sample(now - e.recovered_at)
        e.resend.setdefault(worker, lanes.astype(np.int64))   # copies are identical
        if e.first_resend < 0:
            e.first_resend = now
        out = self._maybe_complete(key, e, job, now, job.round_mask(key[1]))
        if e.result is not None:
            return out
        # at most an answer round trip: a recovery completes the fragment about that long after
        # it goes out, so waiting longer for the others' resends only delays it. And the spread
        # follows the workers' timers, which follow how fast the PS answers: uncapped, in the
        # emulation at 5 % loss (0.89 Mb/s) the grace rose to 3.5 s, the workers' resend waits
        # to 10 s and the rounds from 37 to 235 s, the machine idle
        grace = min(self.resend_spread.rto, self.answer_rtt.rto)
        if not e.reminded:
            # ESA §5.3: a worker saw this fragment lost, so a partial may be stuck waiting for a
            # lost first copy (case 1) or the others may hold a result it lost (case 2). In
            # case 1 every worker saw the gap and their resends are on their way; recover
            # (remind the nodes, query who is still missing) after the grace they usually take,
            # rather than query everyone at once or wait for the PS's own timeout
            e.reminded = e.grace = True
            e.deadline = min(e.deadline, now + grace)
        elif again and not e.grace and now - e.recovered_at >= grace:
            # a worker resending again still waits: the last recovery or its answers were lost
            out += self._recover(key, e, job, now)
        return out

    def _serve(self, key: Key, e: Entry, job: JobConfig, worker: int, now: float) -> list[bytes]:
        """A RESEND or an ask of a complete fragment: its worker lacks the result."""
        # Sent before the result could have reached the worker, it crossed the result, which is
        # on its way (a lost one is asked for again): sooner after completion than the quickest
        # query answer, or, from a worker a result copy was passed on to, than an answer round
        # trip (its answer to the query that went out with the one that brought the copy).
        # Answering such RESENDs was three in four of ATP's resent results at 1 % loss, each a
        # frame on the PS's link (twin of bench_loss.py, window 10, 3 seeds: rounds 1.34x -> 1.25x)
        crossing = self.query_rtt.srtt or 0.0
        if e.sent_to >> worker & 1:
            crossing = max(crossing, self.answer_rtt.rto)
        if now - e.completed_at < crossing:
            self.stats.count("crossed")
            return []
        # the worker lost the result (or the PS's copy of it): serve it again
        self.stats.results_resent += 1
        if e.relay_state >= 0 and worker != e.relay_state:
            # a second worker lacks a relayed result: the relay itself was probably lost
            # before the node, and every worker lacks it
            e.relay_state = -2
            return [self._relay(key, e, job, job.relay_node(key[1]))]
        if e.relay_state == -1:
            e.relay_state = worker
        return [self._result_frame(key, e, worker, job)]

    def _on_ask(self, key: Key, e: Entry, job: JobConfig, worker: int, now: float) -> list[bytes]:
        """A worker's ask: its result of this fragment is overdue. Served like a RESEND where
        the fragment is complete; else the fragment is recovered now (reminders, and queries to
        the workers it lacks, the asker too if its copy never came) if it never was, or if this
        worker asks again an answer round trip or more after the latest recovery."""
        if e.result is not None:
            return self._serve(key, e, job, worker, now)
        again = e.asked >> worker & 1
        e.asked |= 1 << worker
        if e.recoveries == 0 or (again and now - e.recovered_at >= self.answer_rtt.rto):
            e.reminded = e.grace = True
            e.deadline = now
        return []

    def _on_result_copy(self, key: Key, e: Entry, job: JobConfig, worker: int, flags: int,
                        lanes: np.ndarray, now: float) -> list[bytes]:
        """A worker's copy of the complete result (its answer to a query): final, so it
        completes the entry; passed on to every worker not known to hold it."""
        if e.result is not None:
            self.stats.count("late")
            return []
        e.result, e.completed_at = lanes.astype(np.int32), now
        e.overflow = bool(flags & _OVERFLOW)
        self._open.pop(key, None)
        self.stats.completed += 1
        payload = self._result_payload(key, e, job)
        # to the workers known to lack it: those that resent (or answered a query with their
        # contribution). The others got the switch's result or will answer their query with a
        # RESEND, which is answered with the result
        receivers = [w for w in job.round_workers(key[1])
                     if w != worker and (w in e.resend or e.asked >> w & 1)]
        e.sent_to = sum(1 << w for w in receivers)
        out = [self._result_frame(key, e, w, job, payload) for w in receivers]
        self.stats.results_sent += len(out)
        return out

    def _recover(self, key: Key, e: Entry, job: JobConfig, now: float) -> list[bytes]:
        """Remind the aggregation nodes (drain a stuck partial) and query the workers whose
        contribution is missing (they answer with the result if they hold it, else their
        contribution)."""
        e.recovered_at = now
        e.recoveries += 1
        e.replied = False
        lacking = job.round_mask(key[1]) & ~(e.net_bitmap | e.resend_bitmap)
        missing = [w for w in sorted(job.round_workers(key[1])) if lacking >> w & 1]
        n_ask = 1 << (e.recoveries - 1)
        silent = [w for w in missing if not e.asked >> w & 1]
        reporters = (e.resend_bitmap | e.asked).bit_count()
        if n_ask < len(silent) and e.net_bitmap == 0 and 0 < reporters < len(silent):
            # fewer workers report the fragment lost than stay silent, and no switch sent any of
            # it here: most likely a switch multicast the result and only the reporters lost
            # their copies (case 2), so one holder's copy completes it. Query one silent worker
            # (the others would answer with the same copy in vain: on the k=4 fat-tree at 1 %
            # loss that was 4 wasted queries and copies per such fragment over the busiest
            # links, and GOAT's rounds went 1.36x -> 1.26x the lossless one). Each further
            # recovery queries twice as many (a query or its answer is lost at random), not all at
            # once: at 5 % loss a second recovery queried 4.7 workers on average and one copy
            # completed it (twin, GOAT, 0.88 Mb/s, 5 seeds: 23.7 -> 22.1 s per round)
            # The askers are queried too: an ask cannot say whether the asker lost the result or
            # its own copy (then the drained partial still lacks it), and its answer costs what
            # a RESEND with lanes would have, without a further round trip
            start = key[3] % len(silent)
            askers = [w for w in missing if e.asked >> w & 1]
            missing = [silent[(start + i) % len(silent)] for i in range(n_ask)] + askers
        e.reminded_for |= lacking
        return self._reminders(key, job, job.nodes_to_remind(key[2], lacking)) + [
            self._query(key, w, job) for w in missing]

    def _on_reply(self, e: Entry, now: float) -> None:
        """The first reply since ``e``'s last recovery that only a recovery gets: a sample of
        the answer round trip. After one recovery it is exact. After several (Karn's rule: it
        may answer an earlier one) it is still a lower bound of the round trip — it answers
        the last recovery or an earlier one — and sampled when that bound is well past the
        answer RTO (``_LATE_REPLY`` of them): else a round trip that outgrew the waits is
        never measured, since every reply then comes after a further recovery, and the waits
        never grow to it. A drain of a complete entry may answer the clean-up reminder sent at
        completion instead, and then overstates the round trip; it still counts — leaving such
        drains out let the twin's first 5 % GOAT round at 1.1 Mb/s storm (28 → 66 s, seed 1)."""
        e.replied = True
        since = now - e.recovered_at
        if e.recoveries == 1 and not e.answered:
            e.answered = True
            self.answer_rtt.sample(since)
        elif e.recoveries > 1 and since > _LATE_REPLY * self.answer_rtt.rto:
            self.answer_rtt.sample(since)

    def gap_rule(self, job_id: int, rnd: int, sub: int, frag: int, bitmap: int, now: float) -> None:
        """A first copy of ``frag`` carried ``bitmap``. Each worker's fragments of a sub-model
        take one FIFO path to the PS (or to the switch whose partial comes here), so if the
        entry of the fragment before it is still open and lacks some of those workers, their
        copies of it were lost (or wait in a partial for one that was): recover it now, at the
        next timer call, instead of after a timeout — ATP's workers all stall on such a
        fragment, and nobody else can tell."""
        self.gap_checked = True
        e = self._open.get((job_id, rnd, sub, frag - 1)) if frag else None
        if e is not None and bitmap & ~(e.net_bitmap | e.resend_bitmap) and e.deadline > now:
            e.deadline = now

    def _maybe_complete(self, key: Key, e: Entry, job: JobConfig, now: float, mask: int,
                        first_copy: bool = False) -> list[bytes]:
        if (e.net_bitmap | e.resend_bitmap if e.resend else e.net_bitmap) != mask:
            return []
        unasked = e.attempts == 0 and not e.resend
        if unasked or (first_copy and not e.resend):
            # the entry timeout's sample. A recovery came first (Karn's rule), but a first copy
            # completed it, not anything the recovery brought (those are marked: RESEND, a result
            # copy, a drain): the timeout fired early, and this time is unambiguous. Without it,
            # copies that always come later than the timeout (a loaded host, a slower path) make
            # every entry time out, and the timeout never learns it
            self.timeout.sample(now - e.created)
        stand_ins = [w for w in e.resend if not e.net_bitmap >> w & 1]
        relay = job.relay_node(key[1])
        # (a relay is one frame: nothing to batch)
        if self._completions is not None and not stand_ins and e.net_sum is not None and not relay:
            # inside on_frames: the sum is final; compute it with the batch's others
            e.result, e.slot, e.completed_at = _DEFERRED, len(self._completions), now
            self._completions.append((key, e, job))
            self._open.pop(key, None)
            self.stats.completed += 1
            receivers = job.round_workers(key[1])
            self.stats.results_sent += len(receivers)
            return [_Later(e.slot, w) for w in receivers]     # type: ignore[misc]
        total = e.net_sum if e.net_sum is not None else np.zeros(e.lanes, dtype=np.int64)
        if stand_ins:
            total = total.copy()
            for w in stand_ins:
                total += e.resend[w]
        if total.min() < INT32_MIN or total.max() > INT32_MAX:
            e.overflow = True             # saturate, as a switch would
            total = np.clip(total, INT32_MIN, INT32_MAX)
        e.result, e.completed_at = total.astype(np.int32), now
        self._open.pop(key, None)
        self.stats.completed += 1
        if not unasked and e.recovered_at < 0 and e.first_resend >= 0:
            self.resend_spread.sample(now - e.first_resend)     # resends completed it unasked
        if relay:
            # one frame for the PS's link, replicated by the node: at 5 % loss in the emulation
            # the PS's own link limits the rounds, and results were half of what it sent
            out = [self._relay(key, e, job, relay)]
            e.relay_state = -1
        else:
            payload = self._result_payload(key, e, job)
            out = [self._result_frame(key, e, w, job, payload) for w in job.round_workers(key[1])]
        self.stats.results_sent += len(out)
        if stand_ins:
            # the stand-ins' first copies may still sit in a switch partial: free that aggregator
            # at the nodes their copies go through, unless a recovery reminded them already
            nodes = job.nodes_to_remind(key[2], sum(1 << w for w in stand_ins))
            if e.recoveries:
                reminded = job.nodes_to_remind(key[2], e.reminded_for)
                nodes = [n for n in nodes if n not in reminded]
            out += self._reminders(key, job, nodes)
        return out

    def _header(self, key: Key, e: Entry, job: JobConfig, relay: int = 0) -> bytes:
        """The INA header of the RESULT every worker gets; with ``relay``, of the frame that
        node multicasts as that RESULT (rule 1: complete, so it only replicates it)."""
        n = len(job.round_workers(key[1]))
        flags = (_RELAY if relay else _RESULT) | (_OVERFLOW if e.overflow else 0)
        return pack_header(key[0], relay, key[2], key[3], WORKER_AGGREGATE, n, n, 0, job.round_mask(key[1]), flags,
                           key[1])

    def _result_payload(self, key: Key, e: Entry, job: JobConfig, relay: int = 0) -> bytes:
        """INA header and lanes of the RESULT every worker gets (only the addressing differs)."""
        assert e.result is not None
        return self._header(key, e, job, relay) + e.result.astype(">i4").tobytes()

    def _result_frame(self, key: Key, e: Entry, worker: int, job: JobConfig, payload: bytes | None = None) -> bytes:
        if e.result is _DEFERRED:
            return _Later(e.slot, worker)                   # type: ignore[return-value]
        if payload is None:
            payload = self._result_payload(key, e, job)
        return self._address(payload, job, worker)

    def _address(self, payload: bytes, job: JobConfig, worker: int) -> bytes:
        ip, mac = job.workers[worker]
        return frame_prefix(self.ip, ip, self.mac, self.gateway_mac or mac, INA_UDP_PORT, 64, len(payload)) + payload

    def _relay(self, key: Key, e: Entry, job: JobConfig, node: int) -> bytes:
        """``e``'s result as the one frame ``node`` multicasts to every worker, addressed as
        its reminders are (their path passes it)."""
        self.stats.results_relayed += 1
        payload = self._result_payload(key, e, job, node)
        return frame_prefix(self.ip, job.reminder_via[node], self.mac, self.gateway_mac, INA_UDP_PORT, 64,
                            len(payload)) + payload

    def _reminders(self, key: Key, job: JobConfig, nodes: Sequence[int]) -> list[bytes]:
        """A reminder of ``key`` to each of ``nodes`` (ESA §5.1: drain your partial)."""
        out = []
        zeros = np.zeros(self.lanes, dtype=np.int32)
        for node in nodes:
            # ESA: everything but the key (and round) is zero; the owning switch fills in its partial
            h = InaHeader(key[0], node, key[2], key[3], WORKER_AGGREGATE, 0, 0, 0, 0, Flags.REMINDER, key[1])
            out.append(build_frame(h, zeros, src_ip=self.ip, dst_ip=job.reminder_via[node], src_mac=self.mac,
                                   dst_mac=self.gateway_mac))
        self.stats.reminders += len(out)
        return out

    def _query(self, key: Key, worker: int, job: JobConfig) -> bytes:
        self.stats.queries += 1
        h = InaHeader(key[0], 0, key[2], key[3], worker, 0, 0, 0, 0, Flags.REMINDER, key[1])
        ip, mac = job.workers[worker]
        return build_header_only(h, src_ip=self.ip, dst_ip=ip, src_mac=self.mac, dst_mac=self.gateway_mac or mac)
