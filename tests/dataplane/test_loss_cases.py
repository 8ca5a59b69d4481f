"""ESA's packet-loss cases (ESA §5.3) and three more loss points, packet by packet, on both
programs: the real Worker and ParameterServer cores around one InaSwitch, frames delivered by
hand, and exactly the frame a case names dropped.

Every test checks two things: each worker ends with the exact fixed-point sum of its job's
gradients, and the recovery mechanism docs/protocol.md gives for that loss actually ran
(a drain, a query, a worker's result copy, a retried reminder, ...).

The network below has no latency: every frame in flight is delivered, first in first out, before
time moves on to the next host deadline. So the order of events is fully determined by the order
the workers start in, which each test picks to build its case.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

from hostlib.protocol import Flags, InaPacket, encode_lanes, parse_frame
from hostlib.ps import JobConfig, ParameterServer
from hostlib.rto import RtoEstimator
from hostlib.worker import FragmentLabel, Worker

from .ina_harness import PS_IP, PS_PORT, InaSwitch, worker_ip, worker_port

ARCHS = ["v1model", "tna"]
FAST, SLOW = 0.01, 0.03        # worker RTOs: the worker a case makes time out first / the others
PS_RTO = 0.015                 # the PS's first timeout of an entry: between the two
FIRST_ROUND = 1                # not 0, so that agg_round == 0 means "free" in the registers


@pytest.fixture(params=ARCHS)
def arch(request) -> str:
    return request.param


def _rto(initial: float) -> RtoEstimator:
    # the floor is the initial value: this network has no latency, so every RTT sample is 0 and
    # would otherwise shrink every timeout to the same floor, blurring who times out first
    return RtoEstimator(initial=initial, minimum=initial, maximum=0.05)


# ---------------------------------------------------------------------- drops
@dataclass
class Drop:
    """Drop the first ``times`` frames matching ``match(port, pkt)`` where ``where`` says:
    ``"to_switch"`` (port = the switch's ingress port) or ``"to_host"`` (port = its egress
    port). ``times=None``: every match."""
    where: str
    match: Callable[[int, InaPacket], bool]
    times: int | None = 1
    dropped: list[InaPacket] = field(default_factory=list)

    def take(self, where: str, port: int, pkt: InaPacket) -> bool:
        if where != self.where or (self.times is not None and len(self.dropped) >= self.times):
            return False
        if self.match(port, pkt):
            self.dropped.append(pkt)
            return True
        return False


def first_copy(job: int, w: int, frag: int = 0, sub: int = 0) -> Drop:
    """Worker ``w``'s first copy of a fragment, on its way to the switch."""
    return Drop("to_switch", lambda port, p: port == worker_port(w) and p.header.flags == Flags(0)
                and (p.header.job_id, p.header.worker_id, p.header.submodel_id, p.header.fragment_id)
                == (job, w, sub, frag))


def switch_result_to(ws: list[int], job: int = 1) -> Drop:
    """The switch's multicast RESULT copies to the workers ``ws`` (the PS's results carry node 0)."""
    return Drop("to_host", lambda port, p: port in [worker_port(w) for w in ws] and p.header.job_id == job
                and Flags.RESULT in p.header.flags and p.header.node_id != 0, times=len(ws))


def to_ps(flags: Flags, job: int = 1, exact: bool = True, **fields: int) -> Drop:
    """A frame the switch sends to the PS carrying ``flags`` (exactly, or at least them)."""
    def match(port: int, p: InaPacket) -> bool:
        h = p.header
        ok = h.flags == flags if exact else flags in h.flags
        return port == PS_PORT and ok and h.job_id == job and all(getattr(h, k) == v for k, v in fields.items())
    return Drop("to_host", match)


def reminder_to_switch(node: int = 1, times: int | None = 1, round: int | None = None) -> Drop:
    """The PS's REMINDER for an aggregation node, on its way into the switch."""
    return Drop("to_switch", lambda port, p: port == PS_PORT and p.header.flags == Flags.REMINDER
                and p.header.node_id == node and (round is None or p.header.round == round), times=times)


def queries_to(ws: list[int]) -> Drop:
    """The PS's queries (REMINDER, node 0) to the workers ``ws``, one each."""
    return Drop("to_switch", lambda port, p: port == PS_PORT and p.header.flags == Flags.REMINDER
                and p.header.node_id == 0 and p.header.worker_id in ws, times=len(ws))


def ps_result_to(w: int) -> Drop:
    """The PS's unicast RESULT to worker ``w``."""
    return Drop("to_switch", lambda port, p: port == PS_PORT and Flags.RESULT in p.header.flags
                and p.dst_ip == worker_ip(w))


# ---------------------------------------------------------------------- the network
Key = tuple[int, int]          # (job, worker)


class Net:
    """One InaSwitch, the PS on PS_PORT and each job's workers 0..n-1 on ports 1..n.

    ``jobs``: job id -> ESA priority of its fragments. Every worker pushes ``frags`` fragments
    of integer multiples of 2^-16 (so the fixed-point sum is exact and obvious). ``node_tries``:
    the workers' retries at the switch before the PS (rule 8); 0 by default, so that every
    retransmission goes to the PS, whose recovery ESA's cases are about."""

    def __init__(self, arch: str, *, jobs: dict[int, int] | None = None, n: int = 4, frags: int = 1,
                 pool_size: int = 64, preemption: bool = False, result: str = "multicast",
                 fast: tuple[Key, ...] = (), drops: tuple[Drop, ...] = (), seed: int = 0,
                 node_tries: int = 0) -> None:
        jobs = jobs or {1: 0}
        ids = list(jobs)
        self.s = InaSwitch(arch, workers=n, pool_size=pool_size, preemption=preemption, job_id=ids[0],
                           result=result)
        for job in ids[1:]:
            self.s.add_job(job, preemption, n, result)
        self.pool_size, self.n, self.frags = pool_size, n, frags
        self.k = self.s.lanes
        self.rng = np.random.default_rng(seed)
        self.drops = list(drops)
        self.now = 0.0
        self.queue: deque[tuple[str, int, bytes]] = deque()
        mac = {w: 0x020000000000 + w for w in range(n)}
        self.ps = ParameterServer(PS_IP, {job: JobConfig({w: (worker_ip(w), mac[w]) for w in range(n)},
                                                        reminder_via={self.s.node_id: worker_ip(0)})
                                         for job in ids},
                                  lanes=self.k, timeout=_rto(PS_RTO))
        self.workers: dict[Key, Worker] = {}
        for job, prio in jobs.items():
            for w in range(n):
                self.workers[(job, w)] = Worker(job, w, PS_IP, worker_ip(w), [FragmentLabel(self.s.node_id, n, prio)],
                                                lanes=self.k, window=frags, rto=_rto(FAST if (job, w) in fast else SLOW),
                                                node_tries=node_tries)
        self.hosts: dict[int, list] = {PS_PORT: [self.ps]}
        for (job, w), wk in self.workers.items():
            self.hosts.setdefault(worker_port(w), []).append(wk)
        self.port_of = {id(wk): worker_port(w) for (job, w), wk in self.workers.items()}
        self.port_of[id(self.ps)] = PS_PORT
        # per worker: the fixed-point gradients of its rounds so far, and the rounds still to push
        self.fixed: dict[Key, list[np.ndarray]] = {key: [] for key in self.workers}
        self.later: dict[Key, deque[np.ndarray]] = {key: deque() for key in self.workers}
        self.history: dict[Key, list[tuple[int, np.ndarray, object]]] = {key: [] for key in self.workers}
        self.unrouted: list[tuple[int, InaPacket]] = []
        self.log: list[tuple[float, str, int, InaPacket]] = []     # every frame delivered, in order

    # ---------------------------------------------------------------- gradients and rounds
    def gradient(self) -> np.ndarray:
        return self.rng.integers(-(1 << 18), 1 << 18, size=self.frags * self.k) / float(1 << 16)

    def push(self, key: Key, g: np.ndarray, round: int | None = None) -> None:
        wk = self.workers[key]
        if wk.round >= 0:
            self.history[key].append((wk.round, wk.result_fixed(), wk.stats))
        wk.push(g, round=round)
        self.fixed[key].append(encode_lanes(g, 16, g.size))

    def push_all(self, round: int | None = None) -> None:
        for key in self.workers:
            self.push(key, self.gradient(), round)

    def then(self, rounds: int) -> None:
        """Each worker pushes ``rounds`` more rounds, each as soon as it holds the previous one's
        results (so workers can be one round apart, as in training)."""
        for key in self.workers:
            self.later[key].extend(self.gradient() for _ in range(rounds))

    def start(self, order: list[Key] | None = None) -> None:
        """Start the workers in ``order`` (default: job by job, worker by worker); their first
        frames enter the switch in that order."""
        for key in order or list(self.workers):
            self.emit(self.workers[key], self.workers[key].start(self.now))

    # ---------------------------------------------------------------- delivery
    def emit(self, agent, frames: list[bytes]) -> None:
        for f in frames:
            self.queue.append(("to_switch", self.port_of[id(agent)], f))

    def _dropped(self, where: str, port: int, frame: bytes) -> bool:
        pkt = parse_frame(frame, self.k)
        if any(d.take(where, port, pkt) for d in self.drops):
            return True
        self.log.append((self.now, where, port, pkt))
        return False

    def first(self, where: str, pred: Callable[[int, InaPacket], bool]) -> int:
        """Position in the log of the first delivered frame matching ``pred(port, pkt)``."""
        return next(i for i, (_, wh, port, p) in enumerate(self.log) if wh == where and pred(port, p))

    def deliver(self) -> None:
        while self.queue:
            where, port, frame = self.queue.popleft()
            if self._dropped(where, port, frame):
                continue
            if where == "to_switch":
                for out_port, out in self.s.sw.process(port, frame):
                    self.queue.append(("to_host", out_port, out))
                continue
            if port not in self.hosts:
                self.unrouted.append((port, parse_frame(frame, self.k)))
                continue
            for agent in self.hosts[port]:
                self.emit(agent, agent.on_frame(frame, self.now))
                self._next_round(agent)

    def _next_round(self, agent) -> None:
        for key, wk in self.workers.items():
            if wk is agent and wk.done() and self.later[key]:
                self.push(key, self.later[key].popleft())
                self.emit(wk, wk.start(self.now))

    def done(self) -> bool:
        return all(wk.done() for wk in self.workers.values()) and not any(self.later.values())

    def run(self, steps: int = 200) -> None:
        """Deliver, then move time to the earliest host deadline and fire the due timers, until
        every worker holds all its results (or ``steps`` timer steps)."""
        agents = [self.ps, *self.workers.values()]
        for _ in range(steps):
            self.deliver()
            if self.done():
                return
            due = [d for d in (a.next_deadline() for a in agents) if d is not None]
            assert due, "stuck: nothing in flight and no host timer"
            self.now = max(self.now, min(due))
            for a in agents:
                d = a.next_deadline()
                if d is not None and d <= self.now:
                    self.emit(a, a.on_timer(self.now))
        raise AssertionError(f"not done after {steps} steps: "
                             f"{ {k: wk.stats for k, wk in self.workers.items() if not wk.done()} }")

    # ---------------------------------------------------------------- checks
    def expected(self, job: int, i: int) -> np.ndarray:
        """The exact sum of the job's workers' fixed-point gradients of their ``i``-th round."""
        return sum((self.fixed[(j, w)][i].astype(np.int64) for (j, w) in self.workers if j == job),
                   np.zeros(self.frags * self.k, dtype=np.int64))

    def results(self, key: Key) -> list[np.ndarray]:
        return [r for _, r, _ in self.history[key]] + [self.workers[key].result_fixed()]

    def stats(self, key: Key, i: int = 0):
        """The worker's stats of its ``i``-th round (push() starts fresh ones)."""
        past = [st for _, _, st in self.history[key]]
        return (past + [self.workers[key].stats])[i]

    def assert_exact(self) -> None:
        assert self.done()
        for key, wk in self.workers.items():
            got = self.results(key)
            assert len(got) == len(self.fixed[key])
            for i, r in enumerate(got):
                assert r.dtype == np.int64
                assert np.array_equal(r, self.expected(key[0], i)), (key, i, r - self.expected(key[0], i))
        assert self.ps.incomplete() == []
        assert self.unrouted == []

    def assert_dropped(self) -> None:
        for d in self.drops:
            assert d.dropped and (d.times is None or len(d.dropped) == d.times), d

    def value(self, key: Key, frag: int = 0, i: int = 0) -> np.ndarray:
        """Worker ``key``'s fixed-point lanes of fragment ``frag`` in its ``i``-th round."""
        return self.fixed[key][i][frag * self.k:(frag + 1) * self.k].astype(np.int64)

    def to_ps_log(self, flags: Flags) -> list[InaPacket]:
        return [p for _, wh, port, p in self.log if wh == "to_host" and port == PS_PORT and p.header.flags == flags]

    def agg(self, short: str, i: int) -> int:
        return self.s.register(short, i)

    def aggregator_free(self, i: int) -> bool:
        """Free, or (v1model) keeping a complete result, which any claim takes (rule 8)."""
        names = ("agg_owner",) if self.s.arch == "v1model" else ("owner_hi", "owner_lo")
        if self.s.arch == "v1model" and 0 < self.agg("agg_fan_in", i) <= self.agg("agg_count", i):
            return True
        return all(self.agg(n, i) == 0 for n in (*names, "agg_bitmap", "agg_round"))

    def assert_all_free(self) -> None:
        busy = [i for i in range(self.pool_size) if not self.aggregator_free(i)]
        assert busy == [], busy

    def received(self, kind: str) -> int:
        return self.ps.stats.received.get(kind, 0)


def _net(arch: str, **kw) -> Net:
    net = Net(arch, **kw)
    net.push_all(round=FIRST_ROUND)
    return net


# ---------------------------------------------------------------------- the lossless baseline
def test_lossless_round_is_aggregated_by_the_switch_alone(arch):
    """The baseline the loss cases depart from: the switch multicasts the result, the PS never
    hears of the fragment, nobody retransmits, the aggregator is free again."""
    net = _net(arch, frags=2)
    net.start()
    net.run()
    net.assert_exact()
    assert net.ps.stats.received == {} and net.ps.stats.reminders == 0 and net.ps.stats.queries == 0
    assert all(wk.stats.resent == 0 and wk.stats.results == 2 for wk in net.workers.values())
    net.assert_all_free()


# ---------------------------------------------------------------------- ESA §5.3 case 1
def test_case1_first_copy_lost_partial_drained_by_reminder_two_rounds(arch):
    """No collision; worker 2's first copy never reaches the switch, so the other three wait in
    the aggregator and the PS knows nothing. Worker 2 times out and asks the PS, which at once
    reminds the switch (the partial drains to it) and queries: exact. Then a second round
    without loss: the switch aggregates it alone and does not mix the rounds. (Only worker 2
    asked and nothing came through the switch, so the PS takes it for case 2 and queries one
    silent worker, and the asker, whose copy an ask does not carry; the drain and worker 2's
    answer complete it.)"""
    drop = first_copy(1, 2)
    net = _net(arch, fast=((1, 2),), drops=(drop,))
    net.then(1)
    net.start()
    net.run()
    net.assert_dropped()
    net.assert_exact()
    assert drop.dropped[0].header.round == FIRST_ROUND
    assert [len(net.results(k)) for k in net.workers] == [2] * 4
    # round 1: worker 2 resent; the PS drained the three-worker partial and completed with it
    assert net.stats((1, 2), 0).resent == 1 and net.stats((1, 2), 0).fast_resent == 0
    assert all(net.stats((1, w), 0).resent == 0 for w in (0, 1, 3))
    assert net.received("ask") == 1 and net.received("drained") == 1 and net.received("resend") >= 1
    assert net.ps.stats.reminders >= 1 and net.ps.stats.queries == 2
    assert [net.stats((1, w), 0).queries_answered for w in range(4)] == [1, 0, 1, 0]
    (drained,) = net.to_ps_log(Flags.REMINDER | Flags.PREEMPTED)
    h = drained.header
    assert (h.bitmap, h.count, h.fan_in, h.worker_id, h.round) == (0b1011, 3, 4, 255, FIRST_ROUND)
    assert drained.dst_ip == PS_IP
    assert np.array_equal(drained.lanes.astype(np.int64), sum(net.value((1, w)) for w in (0, 1, 3)))
    assert net.ps.result(1, 0, 0, round=FIRST_ROUND) is not None
    assert np.array_equal(net.ps.result(1, 0, 0, round=FIRST_ROUND), net.expected(1, 0))
    # round 2: no loss, no retransmission; the switch multicast it (the PS never completed it)
    assert all(net.stats(k, 1).resent == 0 and net.stats(k, 1).results == 1 for k in net.workers)
    assert net.ps.result(1, 0, 0, round=FIRST_ROUND + 1) is None
    assert not np.array_equal(net.expected(1, 0), net.expected(1, 1))
    net.assert_all_free()


# ---------------------------------------------------------------------- ESA §5.3 case 2
def test_case2_one_multicast_copy_lost_result_copy_from_a_peer(arch):
    """No collision; the switch completes the fragment, frees the aggregator and multicasts,
    but the copy to worker 2 is lost. Worker 2 asks; nothing came through the switch, so the PS
    queries one of the silent workers (fragment 0: the first of 0, 1, 3), and worker 2 (an ask
    cannot tell a lost result from a lost copy). Worker 0 holds the result and answers with it
    (RESULT|RESEND), worker 2 with its contribution; the PS adopts worker 0's copy and sends it
    on to the worker that lacks it (the one that asked)."""
    drop = switch_result_to([2])
    net = _net(arch, fast=((1, 2),), drops=(drop,))
    net.start()
    net.run()
    net.assert_dropped()
    net.assert_exact()
    assert net.workers[(1, 2)].stats.resent == 1
    assert [net.workers[(1, w)].stats.queries_answered for w in range(4)] == [1, 0, 1, 0]
    # v1model kept the result (rule 8): the recovery's reminder drains it, after worker 0's
    # copy completed the fragment (late); TNA freed the aggregator, nothing to drain
    kept = arch == "v1model"
    assert net.received("result_copy") == 1 and net.received("late") == kept
    copies = net.to_ps_log(Flags.RESULT | Flags.RESEND)
    assert [(p.header.worker_id, p.header.bitmap) for p in copies] == [(0, 0b0001)]
    assert all(np.array_equal(p.lanes.astype(np.int64), net.expected(1, 0)) for p in copies)
    assert net.received("ask") == 1 and net.received("resend") == 1 and net.received("drained") == kept
    assert net.ps.stats.completed == 1 and net.ps.stats.queries == 2
    # the adopted copy (worker 0's) is what worker 2 got, and only worker 2:
    # the others already hold it
    assert net.workers[(1, 2)].stats.results == 1 and net.workers[(1, 2)].stats.duplicate_results == 0
    assert [net.workers[(1, w)].stats.duplicate_results for w in (0, 1, 3)] == [0, 0, 0]
    net.assert_all_free()


def test_case2_all_multicast_copies_lost_ps_aggregates_instead(arch):
    """The switch's result reaches no worker: nobody holds a copy to answer with, so the PS
    aggregates the fragment from the workers' answers to its queries (every worker asked: each
    lacks the result) and unicasts the result."""
    drop = switch_result_to([0, 1, 2, 3])
    net = _net(arch, fast=tuple((1, w) for w in range(4)), drops=(drop,))
    net.start()
    net.run()
    net.assert_dropped()
    net.assert_exact()
    assert all(wk.stats.resent == 1 and wk.stats.results == 1 for wk in net.workers.values())
    assert net.received("result_copy") == 0 and net.received("resend") >= 4
    assert net.ps.stats.completed == 1 and net.ps.stats.results_sent == 4
    assert np.array_equal(net.ps.result(1, 0, 0), net.expected(1, 0))
    net.assert_all_free()


# ---------------------------------------------------------------------- ESA §5.3 case 3
def test_case3_collision_fallback_lost(arch):
    """One aggregator, two fragments per worker, no preemption: fragment 0 holds the aggregator,
    so every worker's fragment 1 collides and falls back to the PS — worker 0's fallback is lost.
    (Worker 3's fragment 1 arrives after fragment 0 completed: it claims the aggregator and waits.)
    Worker 0 times out and asks; the PS drains worker 3's partial, queries the workers it lacks
    and completes exactly."""
    drop = to_ps(Flags.COLLISION, worker_id=0, fragment_id=1)
    net = _net(arch, frags=2, pool_size=1, fast=((1, 0),), drops=(drop,))
    net.start()
    net.run()
    net.assert_dropped()
    net.assert_exact()
    assert net.received("collision") == 2                  # workers 1 and 2; worker 0's was lost
    lost = drop.dropped[0]
    assert lost.header.bitmap == 0b0001 and lost.header.count == 1 and lost.dst_ip == PS_IP
    assert np.array_equal(lost.lanes.astype(np.int64), net.value((1, 0), frag=1))     # unaggregated
    assert net.received("drained") == 1                    # worker 3's fragment 1
    assert net.workers[(1, 0)].stats.resent == 1
    assert all(net.workers[(1, w)].stats.resent == 0 for w in (1, 2, 3))
    assert np.array_equal(net.ps.result(1, 0, 1), net.expected(1, 0)[net.k:])
    assert net.ps.result(1, 0, 0) is None                  # fragment 0: the switch alone
    net.assert_all_free()


# ---------------------------------------------------------------------- ESA §5.3 cases 4 and 5
LOW, HIGH = 1, 2               # job ids: low (10) and high (200) ESA priority
PRIOS = {LOW: 10, HIGH: 200}


def test_case4_preempted_partial_lost(arch):
    """One aggregator, preemption on. Job LOW's workers 0 and 1 aggregate; job HIGH's first
    fragment evicts that partial, which is lost on its way to the PS. LOW's workers 2 and 3
    collide (HIGH's priority is halved each time) and fall back to the PS. LOW's worker 0 times
    out and asks; the PS queries workers 0 and 1, the contributions it lacks: both exact."""
    drop = to_ps(Flags.PREEMPTED, job=LOW)
    order = [(LOW, 0), (LOW, 1), (HIGH, 0), (LOW, 2), (LOW, 3), (HIGH, 1), (HIGH, 2), (HIGH, 3)]
    net = _net(arch, jobs=PRIOS, pool_size=1, preemption=True, fast=((LOW, 0),), drops=(drop,))
    net.start(order)
    net.run()
    net.assert_dropped()
    lost = drop.dropped[0]
    h = lost.header
    assert (h.bitmap, h.count, h.worker_id, h.priority, h.fan_in) == (0b0011, 2, 255, 10, 4)
    assert lost.dst_ip == PS_IP
    assert np.array_equal(lost.lanes.astype(np.int64), net.value((LOW, 0)) + net.value((LOW, 1)))
    net.assert_exact()
    assert net.received("preempted") == 0 and net.received("collision") == 2
    assert net.workers[(LOW, 0)].stats.resent == 1 and net.workers[(LOW, 1)].stats.queries_answered == 1
    assert net.workers[(LOW, 1)].stats.resent == 0
    assert all(net.workers[(HIGH, w)].stats.resent == 0 for w in range(4))    # HIGH: the switch alone
    assert net.ps.result(HIGH, 0, 0) is None
    assert np.array_equal(net.ps.result(LOW, 0, 0), net.expected(LOW, 0))
    net.assert_all_free()


def test_case5_first_copy_of_the_evicted_fragment_lost(arch):
    """Preemption evicts LOW's partial {0, 1} to the PS (so the PS has an entry); LOW's worker
    2's first copy is lost; worker 3 collides. The PS's own timeout (before any worker's)
    queries worker 2, whose answer completes the fragment."""
    drop = first_copy(LOW, 2)
    order = [(LOW, 0), (LOW, 1), (HIGH, 0), (LOW, 2), (LOW, 3), (HIGH, 1), (HIGH, 2), (HIGH, 3)]
    net = _net(arch, jobs=PRIOS, pool_size=1, preemption=True, drops=(drop,))
    net.start(order)
    net.run()
    net.assert_dropped()
    net.assert_exact()
    assert net.received("preempted") == 1 and net.received("collision") == 1
    assert net.now == pytest.approx(PS_RTO)                # completed at the PS's first timeout
    assert all(wk.stats.resent == 0 for wk in net.workers.values())
    assert net.workers[(LOW, 2)].stats.queries_answered == 1 and net.ps.stats.queries == 1
    net.assert_all_free()


def test_case5_first_copy_of_the_preempting_fragment_lost(arch):
    """HIGH's worker 0 evicts LOW's partial; HIGH's worker 1's first copy is lost, so HIGH's
    partial {0, 2, 3} waits in the switch and the PS knows nothing of it (LOW completes at the
    PS from the evicted partial and two collisions). HIGH's worker 1 times out and asks; the PS
    reminds the switch, which drains HIGH's partial, and queries worker 1: both exact."""
    drop = first_copy(HIGH, 1)
    order = [(LOW, 0), (LOW, 1), (HIGH, 0), (HIGH, 1), (LOW, 2), (LOW, 3), (HIGH, 2), (HIGH, 3)]
    net = _net(arch, jobs=PRIOS, pool_size=1, preemption=True, fast=((HIGH, 1),), drops=(drop,))
    net.start(order)
    net.run()
    net.assert_dropped()
    net.assert_exact()
    assert net.received("preempted") == 1 and net.received("collision") == 2 and net.received("drained") == 1
    assert net.workers[(HIGH, 1)].stats.resent == 1
    (drained,) = net.to_ps_log(Flags.REMINDER | Flags.PREEMPTED)
    h = drained.header
    # HIGH's partial: LOW's two failed preemptions halved its priority to 200 // 4 (ESA's
    # downgrade), HIGH's workers 2 and 3 renewed it to 200 as they merged (rule 3)
    assert (h.job_id, h.bitmap, h.count, h.priority) == (HIGH, 0b1101, 3, 200)
    assert np.array_equal(drained.lanes.astype(np.int64), sum(net.value((HIGH, w)) for w in (0, 2, 3)))
    assert all(net.workers[(LOW, w)].stats.resent == 0 for w in range(4))    # LOW: done by the PS
    assert np.array_equal(net.ps.result(LOW, 0, 0), net.expected(LOW, 0))
    assert np.array_equal(net.ps.result(HIGH, 0, 0), net.expected(HIGH, 0))
    net.assert_all_free()


# ---------------------------------------------------------------------- reminders and drains
def test_reminder_lost_queries_complete(arch):
    """Case 1, and the PS's first reminder is lost. Taking it for case 2 (one ask, nothing
    through the switch), the first recovery queried one silent worker and the asker, which both
    answer with a RESEND (they lack the result); the second recovery, an answer round trip
    later, reminds the switch again — the drain completes the fragment with worker 2's resend
    copy — and queries the other two (two silent workers for two resends: no longer case 2),
    whose RESENDs then come too late and are answered with the result. No clean-up reminder:
    the recoveries reminded the switch already."""
    drops = (first_copy(1, 2), reminder_to_switch())
    net = _net(arch, fast=((1, 2),), drops=drops)
    net.start()
    net.run()
    net.assert_dropped()
    net.assert_exact()
    assert net.ps.stats.reminders == 2 and net.ps.stats.queries == 2 + 2
    assert net.received("ask") == 1 and net.received("drained") == 1 and net.ps.stats.results_resent == 2
    assert net.received("resend") >= 4
    net.assert_all_free()


def test_reminder_and_queries_lost_reminder_retried_at_ps_timeout(arch):
    """Case 1, and the first recovery, at worker 2's ask, is lost but for the query to worker 2
    (the reminder, and the query to one silent worker): worker 2's answer comes, and the PS
    recovers again an answer round trip later (none measured yet: a quarter of its floor),
    before worker 2's next try; that drain completes the fragment, before any other worker
    times out."""
    drops = (first_copy(1, 2), reminder_to_switch(), queries_to([0, 1, 3]))
    net = _net(arch, fast=((1, 2),), drops=drops)
    net.start()
    net.run()
    net.assert_dropped()
    net.assert_exact()
    # one silent worker and the asker, then two silent workers
    assert net.ps.stats.reminders >= 2 and net.ps.stats.queries == 2 + 2
    assert net.received("drained") == 1 and net.received("late") == 0      # the drain counted
    assert net.now == pytest.approx(FAST + PS_RTO / 4)     # recovered at the ask, then the answer wait
    assert net.workers[(1, 2)].stats.resent == 1
    assert all(net.workers[(1, w)].stats.resent == 0 for w in (0, 1, 3))
    net.assert_all_free()


def test_drained_partial_lost_queries_complete(arch):
    """Case 1, and the drained partial (REMINDER|PREEMPTED) is lost on its way to the PS: the
    switch freed the aggregator anyway; the query answers complete the fragment exactly."""
    drop = to_ps(Flags.REMINDER | Flags.PREEMPTED)
    net = _net(arch, fast=((1, 2),), drops=(first_copy(1, 2), drop))
    net.start()
    net.run()
    net.assert_dropped()
    assert drop.dropped[0].header.bitmap == 0b1011 and drop.dropped[0].header.count == 3
    assert np.array_equal(drop.dropped[0].lanes.astype(np.int64), sum(net.value((1, w)) for w in (0, 1, 3)))
    net.assert_exact()
    assert net.received("drained") == 0 and net.received("resend") >= 4
    assert sum(net.workers[(1, w)].stats.queries_answered for w in (0, 1, 3)) == 3
    net.assert_all_free()


# ---------------------------------------------------------------------- results from the PS
def test_ps_unicast_result_lost_resend_gets_it_again(arch):
    """Results go to the PS (no multicast), which unicasts them; its RESULT to worker 1 is lost.
    Worker 1 asks for it; the PS answers with the result. The other workers have meanwhile started
    the next round (their first copies wait in the switch for worker 1's): the PS still serves
    the previous round, and the next round is exact and unmixed."""
    drop = ps_result_to(1)
    net = _net(arch, result="ps", fast=((1, 1),), drops=(drop,))
    net.then(1)
    net.start()
    net.run()
    net.assert_dropped()
    assert drop.dropped[0].header.round == FIRST_ROUND
    net.assert_exact()
    assert net.stats((1, 1), 0).resent == 1
    # workers 0, 2 and 3 sent their next round's first copies before worker 1's ask
    resend = net.first("to_switch", lambda port, p: p.header.flags == Flags.RESEND and p.header.count == 0)
    assert net.log[resend][3].header.round == FIRST_ROUND and net.log[resend][3].header.worker_id == 1
    for w in (0, 2, 3):
        assert net.first("to_switch", lambda port, p: p.header.flags == Flags(0) and p.header.worker_id == w
                         and p.header.round == FIRST_ROUND + 1) < resend
    assert net.ps.stats.results_resent == 1
    assert net.received("switch_result") == 2               # one per round
    assert net.received("ask") == 1 and net.received("resend") == 0
    assert all(net.stats(k, 1).resent == 0 for k in net.workers)
    assert np.array_equal(net.ps.result(1, 0, 0, round=FIRST_ROUND), net.expected(1, 0))
    assert np.array_equal(net.ps.result(1, 0, 0, round=FIRST_ROUND + 1), net.expected(1, 1))
    net.assert_all_free()


# ---------------------------------------------------------------------- rounds
def test_stranded_partial_never_mixes_with_the_next_round(arch):
    """Case 1 with every reminder of the round lost (a PS that cannot reach the switch): the PS
    completes from query answers and the partial {0, 1, 3} stays in the switch. The next round's
    first copy reclaims that aggregator; the next result is exactly that round's sum."""
    drops = (first_copy(1, 2), reminder_to_switch(times=None, round=FIRST_ROUND))
    net = _net(arch, fast=((1, 2),), drops=drops)
    net.start()
    net.run()
    net.assert_exact()
    assert len(drops[1].dropped) == 2                       # the two recoveries' (no clean-up after them)
    stranded = [i for i in range(net.pool_size) if not net.aggregator_free(i)]
    assert len(stranded) == 1
    i = stranded[0]
    assert net.agg("agg_round", i) == FIRST_ROUND and net.agg("agg_bitmap", i) == 0b1011
    net.push_all()
    net.start()
    net.run()
    net.assert_dropped()
    net.assert_exact()
    assert all(net.stats(k, 1).resent == 0 and net.stats(k, 1).results == 1 for k in net.workers)
    assert net.ps.result(1, 0, 0, round=FIRST_ROUND + 1) is None    # the switch alone
    net.assert_all_free()
