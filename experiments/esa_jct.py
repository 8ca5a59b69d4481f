"""ESA §7.2: job completion time of multi-job INA on one 64-server switch.

An event-driven simulation at aggregator granularity of ESA's NS3 setting (§7.2.1): one
switch, 100 Gb/s links, 10 µs base RTT, 5 MB of aggregator memory, 306-byte packets; jobs of
DNN A (communication-heavy: 4 tensor partitions of 4 MB, 0.32 ms compute per layer) and DNN B
(computation-heavy: 2 MB partitions, 0.64 ms per layer); 8 workers per job, one PS per job for
the schemes that need one. Five memory schedulers:

``switchml``  static partition (ESA §2.1): each job owns memory/jobs of aggregators; chunk
              ``seq`` uses slot ``seq mod S`` and a worker sends ``seq`` only once it has the
              result of ``seq - S`` (SwitchML's self-clocked slot reuse). Never falls back.
``atp``       shared pool, aggregator index ``hash(job, seq)``, first come first served
              (ESA §2.1): a chunk whose aggregator holds another task goes to the job's PS;
              an aggregator is held until the result comes back from the PS (ATP forwards
              every aggregate to its PS and frees on the returning result).
``esa``       the same pool with priority preemption (§4, §5.2): a chunk of higher priority
              than the holder evicts it -- packet swapping sends exactly the evicted partial
              aggregate to the PS -- otherwise it goes to the PS and the holder's priority is
              halved (downgrading, §5.4); priorities from §5.4 Eq. (1), 8-bit; a finished
              aggregate is multicast by the switch, which frees the aggregator at once.
``straw1``    ESA's data plane, always preempt on a collision (§7.3).
``straw2``    ESA's data plane, preempt with probability 1/2 (§7.3).

Model (what one run simulates):

* Unit of work: a *chunk* of ``chunk_packets`` consecutive packets of one tensor (256-byte
  payload per 306-byte packet); a chunk occupies ``chunk_packets`` aggregators (one *block*)
  and is hashed as one. Why: per-packet events are ~4 M per iteration; blocks keep the
  memory/tensor ratios and the collision probabilities (fraction of the pool occupied) while
  cutting events 64x. ``chunk_packets=1`` is the per-packet model.
* Worker: per iteration it sends the tensor partitions in §7.2.1's order (layer 2 part 1,
  layer 1 parts 1-2, layer 2 part 2), back to back at line rate; before each partition it
  waits a jitter ~ U(0, 300 µs) (§7.2.1 "computation speed variance", about one partition's
  computation). A result is usable ``host_delay_us`` (70 µs) after it reaches the worker, so
  the send -> result -> next-send loop is ~80 µs and line rate needs ~1 MB in flight per job:
  the per-job memory ESA §2.2 quotes for 100 Gb/s. ATP/ESA senders keep at most one such
  window (``window_mb``, default that bandwidth-delay product) of chunks without a result;
  SwitchML is limited by its slots as above. No congestion control (ATP's, which ESA reuses,
  is not modelled).
* Switch: per arriving chunk, the scheme's rule above; a task (one chunk index of one job)
  needs one contribution per worker. If all contributions meet in one aggregator holding, the
  switch finishes it; otherwise the PS does: fallback contributions and evicted partials go to
  the PS as they happen, and the last partial left in the switch is fetched by a reminder
  one base RTT after the last contribution arrived (ESA §5.1 dupACK reminder; the same for
  ATP). The aggregator stays held until then.
* PS: one per job, behind its own 100 Gb/s link; the link into the PS and the link out of
  it are FIFO queues (one chunk serialisation each): fallback traffic is what makes the PS a
  bottleneck. PS processing is otherwise free.
* Results: multicast to the job's workers; a result is usable one serialisation, one
  propagation delay and the host turnaround after it leaves the switch (worker downlinks are
  not queued: each only carries its own job's results).
* Computation (§7.2.1): forward layer 1 starts when both layer-1 partitions' results are in,
  layer 2 when layer 1 is computed and layer 2's results are in; the next iteration starts
  when layer 2 is computed. Job start ~ U(0, 1 ms).
* Priority (§5.4 Eq. (1)): P = 1/T_j x L_j/l x Comm_j/Comp_j with L_j = 2, l the layer,
  Comm/Comp = 2 (A) or 1/2 (B) and T_j the job's remaining communication (bytes / line rate)
  plus computation in ms (§7.2.1); encoded as 8-bit fixed point with 6 fractional bits
  (saturating at 255, at least 1).
* JCT (§7.2.1): per job and iteration, computation completion minus communication start;
  averaged over jobs and iterations. Utilisation (§7.3): per job and iteration, the ideal
  communication time (bytes / line rate) over the measured one (first chunk sent to last
  result received).

Not modelled: packet loss and its recovery, congestion control, switch pipeline limits,
per-packet ordering inside a chunk, worker downlink queueing, PS CPU time.

``python -m experiments.esa_jct [--quick]`` writes results/esa/esa_jct.{csv,md,png}.
"""
from __future__ import annotations

import argparse
import csv
import heapq
import math
import random
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

SCHEMES: tuple[str, ...] = ("switchml", "atp", "esa", "straw1", "straw2")
MB = 1_000_000                      # ESA's MB (tensor and memory sizes)

# ESA's reported numbers (§7.2.2, §7.3): speedups of ESA's average JCT, and utilisation ratios.
PAPER = {
    "max_speedup_vs_switchml": 1.89,      # Fig. 8, "up to"
    "max_speedup_vs_atp": 1.35,           # Fig. 8, "up to"
    # Fig. 11 (8 jobs x 8 workers): speedup over ATP of ESA, Straw1, Straw2
    "fig11_A": {"esa": 1.35, "straw1": 1.19, "straw2": 1.19},
    "fig11_AB": {"esa": 1.22, "straw1": 1.05, "straw2": 1.05},
    # Fig. 10 (8 jobs x 8 workers): ESA's utilisation over SwitchML's and ATP's
    "fig10_A": {"switchml": 2.27, "atp": 1.45},
    "fig10_B": {"switchml": 1.9, "atp": 1.28},
}


# ----------------------------------------------------------------------------- workload
@dataclass(frozen=True)
class DNN:
    """A two-layer model of ESA §7.2.1; each layer is ``partitions`` equal tensor partitions."""
    name: str
    partition_mb: float
    comp_ms_per_layer: float
    layers: int = 2
    partitions: int = 2

    def comm_comp(self, link_gbps: float) -> float:
        """Theoretical communication : computation time per layer (2 for A, 1/2 for B)."""
        comm_ms = self.partition_mb * self.partitions * MB * 8 / (link_gbps * 1e9) * 1e3
        return comm_ms / self.comp_ms_per_layer


DNN_A = DNN("A", 4.0, 0.32)
DNN_B = DNN("B", 2.0, 0.64)
SEND_ORDER: tuple[tuple[int, int], ...] = ((2, 0), (1, 0), (1, 1), (2, 1))   # (layer, part)


@dataclass
class SimConfig:
    """ESA §7.2.1 defaults."""
    n_jobs: int = 8
    workers: int = 8
    mix: str = "A"                     # "A", "B" or "AB" (alternating, 1:1)
    link_gbps: float = 100.0
    rtt_us: float = 10.0
    memory_mb: float = 5.0
    packet_bytes: int = 306
    payload_bytes: int = 256
    chunk_packets: int = 64
    start_spread_us: float = 1000.0
    jitter_us: float = 300.0
    iterations: int = 2
    host_delay_us: float = 70.0        # end-host turnaround: result in -> window/slot reusable
    window_mb: float | None = None     # ATP/ESA max sender window; None: one BDP (see bdp_mb)
    reminder_us: float | None = None   # PS reminder delay; None: one base RTT
    seed: int = 0

    def dnn(self, j: int) -> DNN:
        if self.mix == "A":
            return DNN_A
        if self.mix == "B":
            return DNN_B
        if self.mix == "AB":
            return DNN_A if j % 2 == 0 else DNN_B
        raise ValueError(f"mix must be A, B or AB, not {self.mix!r}")

    @property
    def chunk_payload(self) -> int:
        return self.chunk_packets * self.payload_bytes

    @property
    def chunk_us(self) -> float:
        """Serialisation time of one chunk at line rate."""
        return self.chunk_packets * self.packet_bytes * 8 / (self.link_gbps * 1e3)

    @property
    def bdp_mb(self) -> float:
        """Bandwidth x (base RTT + host turnaround): 1 MB at 100 Gb/s with the defaults, the
        per-job memory ESA §2.2 says line-rate aggregation needs."""
        return self.link_gbps * 1e3 * (self.rtt_us + self.host_delay_us) / 8 / MB

    @property
    def blocks(self) -> int:
        """Aggregator blocks in switch memory (each holds one chunk)."""
        return max(1, int(self.memory_mb * MB // self.chunk_payload))


# ----------------------------------------------------------------------------- switch
@dataclass
class Outcome:
    """What the switch did with one arriving chunk contribution."""
    kind: str                               # "claim", "aggregate", "preempt", "fallback"
    evicted: tuple[Any, int] | None = None  # (task, partial count) swapped out to the PS


class AggregatorPool:
    """Shared aggregator blocks with the collision rule of ATP, ESA or a straw-man (§5.2).

    Each block holds at most one task: ``holder``, how many contributions it has summed
    (``count``) and an 8-bit ``prio``. ``offer`` applies one arriving contribution."""

    def __init__(self, n: int, policy: str, rng: random.Random | None = None) -> None:
        if policy not in ("atp", "esa", "straw1", "straw2"):
            raise ValueError(f"unknown pool policy {policy!r}")
        self.policy = policy
        self.rng = rng or random.Random(0)
        self.holder: list[Any] = [None] * n
        self.count = [0] * n
        self.prio = [0] * n

    def offer(self, idx: int, task: Any, prio: int) -> Outcome:
        h = self.holder[idx]
        if h is None:
            self.holder[idx], self.count[idx], self.prio[idx] = task, 1, prio
            return Outcome("claim")
        if h is task:
            self.count[idx] += 1
            self.prio[idx] = prio             # priority renewal on aggregation (§5.2)
            return Outcome("aggregate")
        if self.policy == "atp":
            preempt = False
        elif self.policy == "esa":
            preempt = prio > self.prio[idx]
            if not preempt:
                self.prio[idx] >>= 1          # downgrading: halve, one right shift (§5.4)
        elif self.policy == "straw1":
            preempt = True
        else:
            preempt = self.rng.random() < 0.5
        if not preempt:
            return Outcome("fallback")
        # Packet swapping (§6): the new chunk takes the block, the old partial leaves for the PS.
        evicted = (h, self.count[idx])
        self.holder[idx], self.count[idx], self.prio[idx] = task, 1, prio
        return Outcome("preempt", evicted)

    def release(self, idx: int, task: Any) -> int:
        """Free the block if ``task`` holds it; returns the partial count it held (0 if not)."""
        if self.holder[idx] is not task:
            return 0
        n = self.count[idx]
        self.holder[idx], self.count[idx], self.prio[idx] = None, 0, 0
        return n


def encode_priority(p: float) -> int:
    """8-bit fixed point, 6 fractional bits, saturating (ESA §5.1 compresses P to 8 bits)."""
    return max(1, min(255, int(round(p * 64))))


def esa_priority(remaining_ms: float, layers: int, layer: int, comm_comp: float) -> float:
    """ESA §5.4 Eq. (1): P_j(l) = 1/T_j * L_j/l * Comm_j/Comp_j."""
    return (1.0 / max(remaining_ms, 1e-3)) * (layers / layer) * comm_comp


def _hash(job: int, seq: int, n: int) -> int:
    """ATP-style aggregator index hash(jobID, seqNum) (splitmix64 finaliser)."""
    z = (job * 0x9E3779B97F4A7C15 + seq * 0xBF58476D1CE4E5B9 + 0x94D049BB133111EB) & (2**64 - 1)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
    return (z ^ (z >> 31)) % n


# ----------------------------------------------------------------------------- simulation
@dataclass(eq=False)
class _Task:
    job: "_Job"
    seq: int
    layer: int
    idx: int                        # aggregator block (pool) or slot (SwitchML)
    accounted: int = 0              # contributions that reached the switch
    at_switch: int = 0              # contributions summed in the current block holding
    at_ps: int = 0                  # contributions the PS has (fallbacks + evicted partials)
    ps_last: float = 0.0            # arrival of the latest piece at the PS
    done: bool = False


@dataclass(eq=False)
class _Worker:
    job: "_Job"
    w: int
    it: int = 0                     # current iteration
    chunk: int = 0                  # next chunk of the iteration to send
    ready: float = 0.0              # when the current partition may start
    link_free: float = 0.0
    outstanding: int = 0
    send_pending: bool = False
    received: bytearray = field(default_factory=bytearray)   # per seq: result received
    got: dict[int, int] = field(default_factory=dict)        # layer -> results this iteration
    next_layer: int = 1             # next layer to compute this iteration
    computing: bool = False


@dataclass(eq=False)
class _Job:
    j: int
    dnn: DNN
    start: float
    ps_in_free: float = 0.0         # FIFO link switch -> PS
    ps_out_free: float = 0.0        # FIFO link PS -> switch
    workers: list[_Worker] = field(default_factory=list)
    tasks: dict[int, _Task] = field(default_factory=dict)
    iter_start: dict[int, float] = field(default_factory=dict)   # min worker comm start
    iter_end: dict[int, float] = field(default_factory=dict)     # max worker compute end
    last_result: dict[int, float] = field(default_factory=dict)  # last result received


@dataclass
class SimResult:
    scheme: str
    config: SimConfig
    jct_us: list[float]                    # per job: mean iteration JCT
    utilization: list[float]               # per job: mean ideal/actual communication time
    stats: dict[str, int]

    @property
    def avg_jct_us(self) -> float:
        return sum(self.jct_us) / len(self.jct_us)

    @property
    def avg_utilization(self) -> float:
        return sum(self.utilization) / len(self.utilization)


class Simulator:
    """One run of one scheme on one configuration (see the module docstring)."""

    def __init__(self, cfg: SimConfig, scheme: str) -> None:
        if scheme not in SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r}; one of {', '.join(SCHEMES)}")
        self.cfg, self.scheme = cfg, scheme
        self.rng = random.Random(cfg.seed)            # workload: identical across schemes
        self.coin = random.Random(cfg.seed + 7919)    # straw2's coin flips
        self.now = 0.0
        self._q: list[tuple[float, int, Callable[..., None], tuple]] = []
        self._n = 0
        self.prop = cfg.rtt_us / 4                    # one hop: host<->switch
        self.stats = {"fallback": 0, "preempt": 0, "claim": 0, "aggregate": 0,
                      "switch_done": 0, "ps_done": 0, "ps_pieces": 0}
        self.chunks_per_part: dict[str, int] = {}
        self.jobs: list[_Job] = []
        for j in range(cfg.n_jobs):
            job = _Job(j, cfg.dnn(j), self.rng.uniform(0, cfg.start_spread_us))
            job.workers = [_Worker(job, w) for w in range(cfg.workers)]
            self.jobs.append(job)
        for job in self.jobs:
            for wk in job.workers:
                wk.received = bytearray(cfg.iterations * self._iter_chunks(job.dnn))
        # Per-(worker, iteration, partition) jitters, drawn up front so all schemes see the same.
        self.jitter = {(j.j, w.w, it, p): self.rng.uniform(0, cfg.jitter_us)
                       for j in self.jobs for w in j.workers
                       for it in range(cfg.iterations) for p in range(len(SEND_ORDER))}
        if scheme == "switchml":
            self.slots = max(1, cfg.blocks // cfg.n_jobs)
        else:
            self.pool = AggregatorPool(cfg.blocks, scheme, self.coin)
        window = cfg.bdp_mb if cfg.window_mb is None else cfg.window_mb
        self.window = math.inf if window == math.inf else max(1, int(window * MB // cfg.chunk_payload))
        self.reminder = cfg.rtt_us if cfg.reminder_us is None else cfg.reminder_us

    # ------------------------------------------------------------------ events
    def at(self, t: float, fn: Callable[..., None], *args: Any) -> None:
        self._n += 1
        heapq.heappush(self._q, (t, self._n, fn, args))

    def run(self) -> SimResult:
        for job in self.jobs:
            for wk in job.workers:
                self.at(job.start, self._start_iteration, wk)
        while self._q:
            self.now, _, fn, args = heapq.heappop(self._q)
            fn(*args)
        its = range(self.cfg.iterations)
        unfinished = [j.j for j in self.jobs if len(j.iter_end) < self.cfg.iterations]
        if unfinished:
            raise RuntimeError(f"{self.scheme}: jobs {unfinished} did not finish (deadlock)")
        jct = [sum(j.iter_end[k] - j.iter_start[k] for k in its) / len(its) for j in self.jobs]
        util = []
        for j in self.jobs:
            ideal = self._iter_bytes(j.dnn) * 8 / (self.cfg.link_gbps * 1e3)
            util.append(sum(ideal / (j.last_result[k] - j.iter_start[k]) for k in its) / len(its))
        return SimResult(self.scheme, self.cfg, jct, util, dict(self.stats))

    # ------------------------------------------------------------------ workload helpers
    def _parts(self, dnn: DNN) -> int:
        if dnn.name not in self.chunks_per_part:
            self.chunks_per_part[dnn.name] = math.ceil(dnn.partition_mb * MB / self.cfg.chunk_payload)
        return self.chunks_per_part[dnn.name]

    def _iter_chunks(self, dnn: DNN) -> int:
        return self._parts(dnn) * len(SEND_ORDER)

    def _iter_bytes(self, dnn: DNN) -> float:
        return self._iter_chunks(dnn) * self.cfg.chunk_packets * self.cfg.packet_bytes

    def _remaining_ms(self, wk: _Worker) -> float:
        """T_j of §7.2.1: remaining communication (at line rate) plus computation, in ms."""
        job, cfg = wk.job, self.cfg
        per_iter = self._iter_chunks(job.dnn)
        left_iters = cfg.iterations - wk.it - 1
        chunks = (per_iter - wk.chunk) + left_iters * per_iter
        comm = chunks * cfg.chunk_us / 1e3
        comp = (job.dnn.layers * (left_iters + 1) - wk.next_layer + 1) * job.dnn.comp_ms_per_layer
        return comm + comp

    # ------------------------------------------------------------------ worker side
    def _start_iteration(self, wk: _Worker) -> None:
        job = wk.job
        wk.chunk, wk.got, wk.next_layer = 0, {}, 1
        job.iter_start[wk.it] = min(job.iter_start.get(wk.it, math.inf), self.now)
        wk.ready = self.now + self.jitter[(job.j, wk.w, wk.it, 0)]
        self._kick(wk)

    def _kick(self, wk: _Worker) -> None:
        if not wk.send_pending:
            wk.send_pending = True
            self.at(max(self.now, wk.ready, wk.link_free), self._send, wk)

    def _send(self, wk: _Worker) -> None:
        """Send the next chunk if the partition is ready and the window/slot allows."""
        wk.send_pending = False
        job, cfg = wk.job, self.cfg
        per_part = self._parts(job.dnn)
        if wk.chunk >= per_part * len(SEND_ORDER):
            return
        if self.now < wk.ready or self.now < wk.link_free:
            self._kick(wk)
            return
        seq = wk.it * self._iter_chunks(job.dnn) + wk.chunk
        if self.scheme == "switchml":
            if seq >= self.slots and not wk.received[seq - self.slots]:
                return                                   # slot still busy: a result re-kicks
        elif wk.outstanding >= self.window:
            return                                       # window full: a result re-kicks
        layer = SEND_ORDER[wk.chunk // per_part][0]
        prio = 0
        if self.scheme == "esa":
            prio = encode_priority(esa_priority(self._remaining_ms(wk), job.dnn.layers, layer,
                                                job.dnn.comm_comp(cfg.link_gbps)))
        wk.outstanding += 1
        wk.link_free = self.now + cfg.chunk_us
        self.at(wk.link_free + self.prop, self._arrive, job, seq, layer, prio)
        wk.chunk += 1
        if wk.chunk < per_part * len(SEND_ORDER):
            if wk.chunk % per_part == 0:                 # next partition: wait for its jitter
                wk.ready = wk.link_free + self.jitter[(job.j, wk.w, wk.it, wk.chunk // per_part)]
            self._kick(wk)

    def _results(self, job: _Job, task: _Task) -> None:
        """The task's aggregate reaches every worker of the job."""
        it = task.seq // self._iter_chunks(job.dnn)
        job.last_result[it] = self.now
        for wk in job.workers:
            wk.outstanding -= 1
            wk.received[task.seq] = 1
            wk.got[task.layer] = wk.got.get(task.layer, 0) + 1
            self._maybe_compute(wk)
            self._kick(wk)

    def _maybe_compute(self, wk: _Worker) -> None:
        """Forward pass (§7.2.1): layer l starts once layer l-1 is computed and all of layer
        l's results are in."""
        dnn = wk.job.dnn
        if wk.computing or wk.next_layer > dnn.layers:
            return
        if wk.got.get(wk.next_layer, 0) == self._parts(dnn) * dnn.partitions:
            wk.computing = True
            self.at(self.now + dnn.comp_ms_per_layer * 1e3, self._computed, wk)

    def _computed(self, wk: _Worker) -> None:
        job = wk.job
        wk.computing = False
        wk.next_layer += 1
        if wk.next_layer <= job.dnn.layers:
            self._maybe_compute(wk)
            return
        job.iter_end[wk.it] = max(job.iter_end.get(wk.it, 0.0), self.now)
        wk.it += 1
        if wk.it < self.cfg.iterations:
            self._start_iteration(wk)

    # ------------------------------------------------------------------ switch side
    def _task(self, job: _Job, seq: int, layer: int) -> _Task:
        t = job.tasks.get(seq)
        if t is None:
            idx = (seq % self.slots if self.scheme == "switchml"
                   else _hash(job.j, seq, self.cfg.blocks))
            t = job.tasks[seq] = _Task(job, seq, layer, idx)
        return t

    def _arrive(self, job: _Job, seq: int, layer: int, prio: int) -> None:
        task = self._task(job, seq, layer)
        task.accounted += 1
        n = len(job.workers)
        if self.scheme == "switchml":
            task.at_switch += 1
            if task.accounted == n:
                self._finish_at_switch(task)
            return
        out = self.pool.offer(task.idx, task, prio)
        self.stats[out.kind] += 1
        if out.kind in ("claim", "aggregate", "preempt"):
            task.at_switch += 1
        else:
            self._to_ps(task, 1)
        if out.evicted is not None:
            victim, cnt = out.evicted
            victim.at_switch = 0
            self._to_ps(victim, cnt)
        if task.accounted == n:
            if task.at_ps == 0 and self.scheme != "atp":
                self._finish_at_switch(task)
            else:
                # The switch's partial (if any) reaches the PS after a reminder (ESA §5.1);
                # ATP always completes through its PS, which frees the aggregator on return.
                delay = 0.0 if task.at_ps == 0 else self.reminder
                self.at(self.now + delay, self._flush, task)

    def _finish_at_switch(self, task: _Task) -> None:
        task.done = True
        del task.job.tasks[task.seq]
        self.stats["switch_done"] += 1
        if self.scheme == "switchml":
            task.at_switch = 0
        else:
            self.pool.release(task.idx, task)
        self._multicast(task)

    def _to_ps(self, task: _Task, contributions: int) -> None:
        """One chunk (a raw contribution or a partial aggregate) crosses the link into the PS."""
        job = task.job
        start = max(self.now, job.ps_in_free)
        job.ps_in_free = start + self.cfg.chunk_us
        arrival = job.ps_in_free + self.prop
        task.at_ps += contributions
        task.ps_last = max(task.ps_last, arrival)
        self.stats["ps_pieces"] += 1
        if task.at_ps == len(job.workers) and task.accounted == len(job.workers):
            self.at(task.ps_last, self._ps_complete, task)

    def _flush(self, task: _Task) -> None:
        """Reminder (or ATP's normal path): the switch's partial leaves for the PS."""
        cnt = task.at_switch
        task.at_switch = 0
        if self.scheme != "atp":
            self.pool.release(task.idx, task)
        if cnt:
            self._to_ps(task, cnt)
        elif task.at_ps == len(task.job.workers):
            self.at(max(self.now, task.ps_last), self._ps_complete, task)

    def _ps_complete(self, task: _Task) -> None:
        if task.done:
            return
        task.done = True
        del task.job.tasks[task.seq]
        self.stats["ps_done"] += 1
        job = task.job
        start = max(self.now, job.ps_out_free)
        job.ps_out_free = start + self.cfg.chunk_us
        at_switch = job.ps_out_free + self.prop
        self.at(at_switch, self._result_at_switch, task)

    def _result_at_switch(self, task: _Task) -> None:
        if self.scheme == "atp":
            self.pool.release(task.idx, task)     # ATP frees on the returning result
        self._multicast(task)

    def _multicast(self, task: _Task) -> None:
        """Result leaves the switch; workers can use it after serialisation, propagation and
        their host turnaround."""
        self.at(self.now + self.cfg.chunk_us + self.prop + self.cfg.host_delay_us,
                self._results, task.job, task)


def simulate(cfg: SimConfig, scheme: str) -> SimResult:
    """Run one scheme on one configuration."""
    return Simulator(cfg, scheme).run()


# ----------------------------------------------------------------------------- experiment
@dataclass(frozen=True)
class Point:
    """One workload of the sweep: model mix, number of jobs, workers per job, seed."""
    mix: str
    n_jobs: int
    workers: int
    seed: int


def sweep_points(quick: bool, seeds: int) -> list[Point]:
    """Fig. 8 (jobs 2..8, 8 workers each) and Fig. 9 (8 jobs, 2..8 workers), for all-A,
    all-B and 1:1 mixes; ``quick`` keeps every mix at 8x8 but sweeps only all-A."""
    sizes = (2, 4, 8) if quick else (2, 4, 6, 8)
    pts: list[Point] = []
    for mix in ("A", "B", "AB"):
        sweep_mixes = ("A",) if quick else ("A", "B", "AB")
        shapes = {(8, 8)}
        if mix in sweep_mixes:
            shapes |= {(n, 8) for n in sizes} | {(8, w) for w in sizes}
        for n_jobs, workers in sorted(shapes):
            pts += [Point(mix, n_jobs, workers, s) for s in range(seeds)]
    return pts


def run_sweep(points: Sequence[Point], base: SimConfig, schemes: Sequence[str] = SCHEMES,
              progress: bool = True) -> list[dict[str, Any]]:
    """Simulate every scheme on every point; one row per (point, scheme)."""
    from tqdm import tqdm
    rows = []
    todo = [(p, s) for p in points for s in schemes]
    for p, scheme in tqdm(todo, desc="esa_jct", unit="sim", disable=not progress, file=sys.stderr):
        cfg = replace(base, mix=p.mix, n_jobs=p.n_jobs, workers=p.workers, seed=p.seed)
        r = simulate(cfg, scheme)
        rows.append({"mix": p.mix, "n_jobs": p.n_jobs, "workers": p.workers, "seed": p.seed,
                     "scheme": scheme, "avg_jct_ms": r.avg_jct_us / 1e3,
                     "utilization": r.avg_utilization, **r.stats})
    return rows


def _mean(rows: Iterable[dict[str, Any]], key: str) -> float:
    vals = [r[key] for r in rows]
    return sum(vals) / len(vals) if vals else math.nan


def _table(rows: list[dict[str, Any]], mix: str, n_jobs: int, workers: int) -> dict[str, dict[str, float]]:
    """scheme -> mean JCT / utilisation over seeds at one point."""
    out = {}
    for s in SCHEMES:
        sel = [r for r in rows if (r["mix"], r["n_jobs"], r["workers"], r["scheme"]) == (mix, n_jobs, workers, s)]
        if sel:
            out[s] = {"jct": _mean(sel, "avg_jct_ms"), "util": _mean(sel, "utilization"),
                      "fallback": _mean(sel, "fallback"), "preempt": _mean(sel, "preempt")}
    return out


def summarize(rows: list[dict[str, Any]], base: SimConfig, quick: bool) -> str:
    """Markdown: our numbers beside ESA's (§7.2.2, §7.3)."""
    L = [f"# ESA §7.2 JCT simulation ({'quick' if quick else 'full'} run)", "",
         f"One switch, {base.link_gbps:g} Gb/s links, base RTT {base.rtt_us:g} µs + host turnaround "
         f"{base.host_delay_us:g} µs (BDP {base.bdp_mb:.2f} MB per job), {base.memory_mb:g} MB of "
         f"aggregators = {base.blocks} blocks of {base.chunk_packets} x {base.payload_bytes} B, "
         f"{base.packet_bytes}-byte packets, {base.iterations} iterations per job, jitter U(0, "
         f"{base.jitter_us:g} µs) per partition, job start U(0, {base.start_spread_us:g} µs). "
         f"Seeds per point: {len({r['seed'] for r in rows})}. Model and simplifications: module "
         "docstring of `experiments/esa_jct.py`.", "",
         "## Average JCT at 8 jobs x 8 workers (ms; lower is better)", "",
         "| mix | " + " | ".join(SCHEMES) + " | ESA speedup vs SwitchML | vs ATP |",
         "|---|" + "---|" * (len(SCHEMES) + 2)]
    for mix in ("A", "B", "AB"):
        t = _table(rows, mix, 8, 8)
        if len(t) == len(SCHEMES):
            L.append(f"| {mix} | " + " | ".join(f"{t[s]['jct']:.3f}" for s in SCHEMES) +
                     f" | {t['switchml']['jct'] / t['esa']['jct']:.2f}x | {t['atp']['jct'] / t['esa']['jct']:.2f}x |")
    L += ["", "## Priority scheduling (ESA Fig. 11): speedup over ATP at 8x8", "",
          "| mix | scheme | ours | paper |", "|---|---|---|---|"]
    for mix, key in (("A", "fig11_A"), ("AB", "fig11_AB")):
        t = _table(rows, mix, 8, 8)
        for s in ("esa", "straw1", "straw2"):
            if s in t and "atp" in t:
                L.append(f"| {mix} | {s} | {t['atp']['jct'] / t[s]['jct']:.2f}x | {PAPER[key][s]:.2f}x |")
    L += ["", "## Switch memory utilisation (ESA Fig. 10): ESA's over the baseline's, 8x8", "",
          "| mix | baseline | ours | paper | (ESA utilisation, ours) |", "|---|---|---|---|---|"]
    for mix, key in (("A", "fig10_A"), ("B", "fig10_B")):
        t = _table(rows, mix, 8, 8)
        for s in ("switchml", "atp"):
            if s in t and "esa" in t:
                L.append(f"| {mix} | {s} | {t['esa']['util'] / t[s]['util']:.2f}x | {PAPER[key][s]:.2f}x "
                         f"| {t['esa']['util']:.2f} |")
    points = sorted({(r["mix"], r["n_jobs"], r["workers"]) for r in rows})
    best_ml = max(((_table(rows, *p)["switchml"]["jct"] / _table(rows, *p)["esa"]["jct"]), p) for p in points)
    best_atp = max(((_table(rows, *p)["atp"]["jct"] / _table(rows, *p)["esa"]["jct"]), p) for p in points)
    L += ["", "## Largest ESA speedup over the sweep (ESA Fig. 8-9, \"up to\")", "",
          "| versus | ours (mix, jobs, workers) | paper |", "|---|---|---|",
          f"| SwitchML | {best_ml[0]:.2f}x {best_ml[1]} | {PAPER['max_speedup_vs_switchml']:.2f}x |",
          f"| ATP | {best_atp[0]:.2f}x {best_atp[1]} | {PAPER['max_speedup_vs_atp']:.2f}x |",
          "", "## Sweeps (average JCT, ms)", ""]
    for label, fixed in (("jobs (8 workers each)", "workers"), ("workers per job (8 jobs)", "n_jobs")):
        var = "n_jobs" if fixed == "workers" else "workers"
        for mix in ("A", "B", "AB"):
            xs = sorted({r[var] for r in rows if r["mix"] == mix and r[fixed] == 8})
            if len(xs) < 2:
                continue
            L += [f"By {label}, mix {mix}:", "", f"| {var} | " + " | ".join(SCHEMES) + " |",
                  "|---|" + "---|" * len(SCHEMES)]
            for x in xs:
                p = (mix, x, 8) if var == "n_jobs" else (mix, 8, x)
                t = _table(rows, *p)
                L.append(f"| {x} | " + " | ".join(f"{t[s]['jct']:.3f}" for s in SCHEMES) + " |")
            L.append("")
    L += ["## Counters at 8x8, mix A (mean per run)", "",
          "| scheme | PS fallbacks | preemptions |", "|---|---|---|"]
    t = _table(rows, "A", 8, 8)
    for s in SCHEMES:
        if s in t:
            L.append(f"| {s} | {t[s]['fallback']:.0f} | {t[s]['preempt']:.0f} |")
    return "\n".join(L) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, var, fixed, title in ((axes[0], "n_jobs", "workers", "Fig. 8 shape: JCT vs jobs (mix A)"),
                                  (axes[1], "workers", "n_jobs", "Fig. 9 shape: JCT vs workers/job (mix A)")):
        xs = sorted({r[var] for r in rows if r["mix"] == "A" and r[fixed] == 8})
        for s in SCHEMES:
            ys = []
            for x in xs:
                p = ("A", x, 8) if var == "n_jobs" else ("A", 8, x)
                ys.append(_table(rows, *p).get(s, {}).get("jct", math.nan))
            ax.plot(xs, ys, marker="o", label=s)
        ax.set_xlabel("jobs" if var == "n_jobs" else "workers per job")
        ax.set_ylabel("average JCT (ms)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax = axes[2]
    labels, ours, paper = [], [], []
    for mix, key in (("A", "fig11_A"), ("AB", "fig11_AB")):
        t = _table(rows, mix, 8, 8)
        for s in ("esa", "straw1", "straw2"):
            if s in t and "atp" in t:
                labels.append(f"{mix}\n{s}")
                ours.append(t["atp"]["jct"] / t[s]["jct"])
                paper.append(PAPER[key][s])
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], ours, 0.4, label="ours")
    ax.bar([i + 0.2 for i in x], paper, 0.4, label="ESA paper", hatch="//", alpha=0.6)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("speedup of average JCT over ATP")
    ax.set_title("Fig. 11 shape: priority scheduling, 8 jobs x 8 workers", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.esa_jct", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="coarse chunks, one seed, A-only sweeps (< 60 s)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per point (default 1 quick, 2 full)")
    ap.add_argument("--chunk-packets", type=int, default=None,
                    help="packets per simulated chunk (default 256 quick, 64 full)")
    ap.add_argument("--out", type=Path, default=Path("results/esa"))
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    seeds = args.seeds or (1 if args.quick else 2)
    base = SimConfig(chunk_packets=args.chunk_packets or (256 if args.quick else 64))
    t0 = time.perf_counter()
    rows = run_sweep(sweep_points(args.quick, seeds), base, progress=not args.no_progress)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "esa_jct.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    md = summarize(rows, base, args.quick)
    md += f"\nWall time: {time.perf_counter() - t0:.1f} s.\n"
    (args.out / "esa_jct.md").write_text(md)
    plot(rows, args.out / "esa_jct.png")
    print(md)
    print(f"wrote {args.out}/esa_jct.csv, esa_jct.md, esa_jct.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
