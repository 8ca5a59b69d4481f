"""The chunk-level model behind ``python -m experiments.esa_jct`` (ESA §7.2).

An event-driven simulation at aggregator granularity of ESA's NS3 setting (§7.2.1): one
switch, 100 Gb/s links, 10 µs base RTT, 5 MB of aggregator memory, 306-byte packets; jobs of
DNN A (communication-heavy: 4 tensor partitions of 4 MB, 0.32 ms compute per layer) and DNN B
(computation-heavy: 2 MB partitions, 0.64 ms per layer); 8 workers per job, one PS per job for
the schemes that need one. Five memory schedulers:

``switchml``  static partition (ESA §2.1): each job owns memory/jobs of aggregators; chunk
              ``seq`` uses slot ``seq mod S`` and a worker sends ``seq`` only once it has the
              result of ``seq - S`` (SwitchML's self-clocked slot reuse). Never falls back.
``atp``       shared pool, aggregator index ``hash(job, seq)``, first come first served
              (ESA §2.1): a chunk whose aggregator holds another task goes to the job's PS. A
              complete aggregate also goes to the PS, and the aggregator stays held until the
              PS's result (ATP's parameter packet / ACK) passes back through the switch, which
              frees it and multicasts the result (ESA §2.1-§2.2: "release the aggregator when
              the result packet (ACK) arrives at the switch"; "the aggregator occupation time
              includes ... the round-trip time between the switch and the PS"; ATP's P4
              program cleans the aggregator on the ACK and multicasts it).
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
  the per-job memory ESA §2.2 quotes for 100 Gb/s. ATP/ESA senders use a sliding window of
  ``window_mb`` (default that bandwidth-delay product): chunk ``seq`` may leave only while
  ``seq < head + window``, ``head`` being the first chunk without a result (ESA §5.1: the
  worker sends the next fragment when the result of the first sequence number in its window
  arrives; ATP's window manager advances its last ACK the same way). ``inorder_window=False``
  counts results instead (any result frees a slot). SwitchML is limited by its slots as
  above. No congestion control (ATP's, which ESA reuses, is not modelled).
* Switch: per arriving chunk, the scheme's rule above; a task (one chunk index of one job)
  needs one contribution per worker. If all contributions meet in one aggregator holding, the
  switch finishes it; otherwise the PS does: fallback contributions and evicted partials go to
  the PS as they happen. A partial left in the switch (some contributions went to the PS, the
  rest wait in an aggregator for peers that will never come) stays there, holding the
  aggregator, until the protocol notices -- nothing tells the switch or the PS when a task's
  last contribution has arrived:
  - ESA and the straw-men (§5.1, §5.3, §6): the PS reminds the switch when it has received
    three packets of later sequence numbers of the job since it opened the task's entry
    (its "dupACK"), or when no piece of the task came for an RTO; a worker notices when it
    has three later packets' results while its first window sequence has none (dupACK), or
    its RTO after sending it expires, and sends a reminder to the PS, which reminds the
    switch at once. The header-only reminder swaps the partial out to the PS and frees the
    aggregator (nothing happens if the task holds none). A preemption may free it earlier.
  - ATP: its PS sends no reminders; the workers notice as above and retransmit their
    fragment (ATP's resend bit); the first resend to reach the switch makes it forward the
    partial to the PS and clean the aggregator (ATP's P4 "force forward and clean"), the
    other resends go on to the PS as well (its bitmap drops the duplicates), so a recovery
    costs every worker's chunk on the PS link.
  Parameters the paper leaves open: the dupACK threshold counts *packets*
  (``dupack_packets``, 3: one later chunk at the default chunk size); the RTO follows TCP's
  (RFC 6298: smoothed RTT + 4 deviations, at least ``rto_min_us`` = 1 ms, ESA §6; 1 ms before
  the first sample, doubled per repeated timeout of one task; samples skip recovered tasks);
  the worker's RTT sample is taken from the job's earliest send of the task (ESA §6: send ->
  parameter packet), the PS's from entry creation to completion (§6). Reminders are header
  only: one propagation per hop, no serialisation or queueing. ATP's resends are chunks on
  their worker's uplink. ATP uses the same worker-side detection as ESA (ESA §5.3 builds its
  worker timeout on ATP's), which the ESA paper does not state for its ATP baseline.
* PS: one per job, behind its own 100 Gb/s link; the link into the PS and the link out of
  it are FIFO queues (one chunk serialisation each), the same for every scheme that uses a
  PS: what crosses them differs by design (ATP: every task's aggregate or contributions in
  and every result out; ESA: only fallbacks, evicted or reminded partials in and the results
  the PS completes out). PS processing is otherwise free.
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

Not modelled: packet loss (the recovery above runs for stuck partials only), congestion
control, ATP's PS re-hashing of collided sequence numbers, switch pipeline limits, per-packet
ordering inside a chunk, worker downlink queueing, PS CPU time. Deterministic per seed.
"""
from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable

SCHEMES: tuple[str, ...] = ("switchml", "atp", "esa", "straw1", "straw2")
MB = 1_000_000                      # ESA's MB (tensor and memory sizes)


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
    inorder_window: bool = True        # window slides on its first chunk's result (ESA §5.1)
    rto_min_us: float = 1000.0         # worker/PS retransmission timeout floor (ESA §6)
    dupack_packets: int = 3            # later packets that reveal a missing result (ESA §5.1)
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
class _Rto:
    """TCP's retransmission timeout estimator (RFC 6298) with ESA's floor (§6)."""

    def __init__(self, floor_us: float) -> None:
        self.floor, self.srtt, self.rttvar = floor_us, None, 0.0

    def sample(self, r: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = r, r / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - r)
            self.srtt = 0.875 * self.srtt + 0.125 * r

    @property
    def rto(self) -> float:
        return self.floor if self.srtt is None else max(self.floor, self.srtt + 4 * self.rttvar)


@dataclass(eq=False)
class _Task:
    job: "_Job"
    seq: int
    layer: int
    idx: int                        # aggregator block (pool) or slot (SwitchML)
    sent: float = 0.0               # the job's earliest send of this chunk
    accounted: int = 0              # contributions that reached the switch
    at_switch: int = 0              # contributions summed in the current block holding
    at_ps: int = 0                  # contributions the PS has (fallbacks + partials)
    held: bool = False              # ATP: complete, aggregator held until the result passes
    ps_open: float = -1.0           # when the PS opened its entry (-1: none)
    ps_last: float = 0.0            # latest piece (or reminder) of the task at the PS
    ps_dup: int = 0                 # later-seq packets the PS got since this task's last piece
    ps_dup_armed: bool = False      # the PS's dupACK may fire (once per piece of the task)
    ps_timeouts: int = 0
    ps_timer: bool = False
    reminding: bool = False         # a PS reminder is on its way to the switch
    timer_base: float = 0.0         # worker RTO runs from here
    timeouts: int = 0
    recovered: bool = False         # needed a reminder/resend: no RTT sample (Karn)
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
    received: bytearray = field(default_factory=bytearray)   # per seq: result delivered
    head: int = 0                   # first seq without a result (every worker's window start)
    dup: int = 0                    # later-result packets since head last moved
    dup_fired: int = -1             # the head a dupACK already reported
    ps_entries: dict[int, _Task] = field(default_factory=dict)  # open PS entries (ESA)
    rto: _Rto | None = None         # workers' estimator (they see the same results)
    ps_rto: _Rto | None = None      # the PS's
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


STATS = ("fallback", "preempt", "claim", "aggregate", "switch_done", "ps_done", "ps_pieces",
         "dupack", "timeout", "ps_dupack", "ps_timeout", "flushed", "resend")


class Simulator:
    """One run of one scheme on one configuration (see the module docstring)."""

    HORIZON_US = 10e6                                 # no run is near 10 s of simulated time

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
        self.stats = dict.fromkeys(STATS, 0)
        self.trace: list[tuple[float, str, int, int]] | None = None   # (time, what, job, seq)
        self.chunks_per_part: dict[str, int] = {}
        self.jobs: list[_Job] = []
        for j in range(cfg.n_jobs):
            job = _Job(j, cfg.dnn(j), self.rng.uniform(0, cfg.start_spread_us))
            job.workers = [_Worker(job, w) for w in range(cfg.workers)]
            job.received = bytearray(cfg.iterations * self._iter_chunks(job.dnn))
            job.rto, job.ps_rto = _Rto(cfg.rto_min_us), _Rto(cfg.rto_min_us)
            self.jobs.append(job)
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
        self.dup_chunks = max(1, math.ceil(cfg.dupack_packets / cfg.chunk_packets))

    # ------------------------------------------------------------------ events
    def at(self, t: float, fn: Callable[..., None], *args: Any) -> None:
        self._n += 1
        heapq.heappush(self._q, (t, self._n, fn, args))

    def _log(self, what: str, task: _Task) -> None:
        if self.trace is not None:
            self.trace.append((self.now, what, task.job.j, task.seq))

    def run_until(self, t_end: float) -> None:
        """Process every event due at or before ``t_end``."""
        while self._q and self._q[0][0] <= t_end:
            self.now, _, fn, args = heapq.heappop(self._q)
            if self.now > self.HORIZON_US:
                raise RuntimeError(f"{self.scheme}: still running at {self.now / 1e6:g} s (livelock)")
            fn(*args)

    def run(self) -> SimResult:
        for job in self.jobs:
            for wk in job.workers:
                self.at(job.start, self._start_iteration, wk)
        self.run_until(math.inf)
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
            if seq >= self.slots and not job.received[seq - self.slots]:
                return                                   # slot still busy: a result re-kicks
        elif (seq >= job.head + self.window if cfg.inorder_window
              else wk.outstanding >= self.window):
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
        """The task's aggregate reaches every worker of the job: window, RTT sample and
        dupACK bookkeeping (identical on every worker: they all get the same results)."""
        seq = task.seq
        it = seq // self._iter_chunks(job.dnn)
        job.last_result[it] = self.now
        job.received[seq] = 1
        if not task.recovered:
            job.rto.sample(self.now - task.sent)
        if seq == job.head:
            while job.head < len(job.received) and job.received[job.head]:
                job.head += 1
            job.dup = 0
        elif seq > job.head:
            job.dup += 1
            if job.dup >= self.dup_chunks and job.dup_fired != job.head:
                job.dup_fired = job.head
                stuck = job.tasks.get(job.head)
                if stuck is not None:
                    self.stats["dupack"] += 1
                    self._workers_notice(stuck)
        for wk in job.workers:
            wk.outstanding -= 1
            wk.got[task.layer] = wk.got.get(task.layer, 0) + 1
            self._maybe_compute(wk)
            self._kick(wk)

    def _worker_timer(self, task: _Task) -> None:
        """The workers' RTO for this chunk (ESA §5.3 case 1, §6), with exponential backoff."""
        if task.done:
            return
        due = task.timer_base + task.job.rto.rto * (1 << min(task.timeouts, 6))
        if self.now < due:
            self.at(due, self._worker_timer, task)
            return
        task.timeouts += 1
        task.timer_base = self.now
        self.stats["timeout"] += 1
        self._workers_notice(task)
        self.at(self.now + task.job.rto.rto * (1 << min(task.timeouts, 6)), self._worker_timer, task)

    def _workers_notice(self, task: _Task) -> None:
        """The workers miss this chunk's result. ESA: each sends a reminder to the PS (two
        hops), which reminds the switch at once. ATP: each that sent it retransmits it."""
        task.recovered = True
        self._log("notice", task)
        if self.scheme != "atp":
            self.at(self.now + 2 * self.prop, self._ps_remind, task, False)
            return
        for wk in task.job.workers[:task.accounted]:
            start = max(self.now, wk.link_free)
            wk.link_free = start + self.cfg.chunk_us
            self.stats["resend"] += 1
            self.at(wk.link_free + self.prop, self._resend_at_switch, task)

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
            t.sent = t.timer_base = self.now - self.cfg.chunk_us - self.prop
            if self.scheme != "switchml":
                self.at(t.sent + job.rto.rto, self._worker_timer, t)
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
        if out.evicted is not None:
            victim, cnt = out.evicted
            victim.at_switch = 0
            self._to_ps(victim, cnt)
        if out.kind == "fallback":
            self._to_ps(task, 1)
            return
        task.at_switch = 1 if out.kind in ("claim", "preempt") else task.at_switch + 1
        if task.at_switch == n:
            self._finish_at_switch(task)

    def _finish_at_switch(self, task: _Task) -> None:
        """All contributions met in one holding. ATP: the aggregate goes to the PS and the
        aggregator is held until the result passes back; others: multicast and free."""
        task.at_switch = 0
        if self.scheme == "atp":
            task.held = True
            self._to_ps(task, len(task.job.workers))
            return
        task.done = True
        del task.job.tasks[task.seq]
        self.stats["switch_done"] += 1
        if self.scheme != "switchml":
            self.pool.release(task.idx, task)
        self._multicast(task)

    def _flush(self, task: _Task) -> bool:
        """A reminder (ESA) or resend (ATP) drains the task's holding, if any, to the PS."""
        if self.pool.holder[task.idx] is not task:
            return False
        self.pool.release(task.idx, task)
        cnt, task.at_switch = task.at_switch, 0
        self.stats["flushed"] += 1
        self._log("flush", task)
        self._to_ps(task, cnt)        # 0 for ATP's held aggregate: the PS has it already
        return True

    def _resend_at_switch(self, task: _Task) -> None:
        """ATP: a worker's retransmission. The first finds the holding and forwards it (with
        itself) to the PS; the others, and those of finished tasks, go on to the PS."""
        if task.done or not self._flush(task):
            self._to_ps(task, 0)

    def _reminder_at_switch(self, task: _Task) -> None:
        task.reminding = False
        if not task.done:
            self._flush(task)

    # ------------------------------------------------------------------ PS side
    def _to_ps(self, task: _Task, contributions: int) -> None:
        """One chunk (a raw contribution or a partial aggregate) crosses the link into the PS."""
        job = task.job
        start = max(self.now, job.ps_in_free)
        job.ps_in_free = start + self.cfg.chunk_us
        self.stats["ps_pieces"] += 1
        self.at(job.ps_in_free + self.prop, self._ps_piece, task, contributions)

    def _ps_piece(self, task: _Task, contributions: int) -> None:
        job = task.job
        if task.done:
            return
        task.at_ps += contributions
        if task.at_ps == len(job.workers):
            self._ps_complete(task)
        elif self.scheme != "atp":
            self._ps_open(task)
        if self.scheme == "atp":
            return
        # ESA's PS "dupACK": three consecutive packets of later sequence numbers while an
        # entry waits (Fig. 4); it fires once, and again only after a new piece of the entry.
        for s, t in list(job.ps_entries.items()):
            if s < task.seq and t.ps_dup_armed:
                t.ps_dup += self.cfg.chunk_packets
                if t.ps_dup >= self.cfg.dupack_packets:
                    t.ps_dup_armed = False
                    self.stats["ps_dupack"] += 1
                    self._ps_remind(t, True)

    def _ps_open(self, task: _Task) -> None:
        """ESA's PS keeps an entry per unfinished fragment it has heard of; its timer runs
        from the latest piece of that fragment."""
        task.ps_last, task.ps_dup, task.ps_dup_armed = self.now, 0, True
        if task.ps_open < 0:
            task.ps_open = self.now
            task.job.ps_entries[task.seq] = task
        if not task.ps_timer:
            task.ps_timer = True
            self.at(self.now + task.job.ps_rto.rto, self._ps_timer, task)

    def _ps_timer(self, task: _Task) -> None:
        if task.done:
            return
        due = task.ps_last + task.job.ps_rto.rto * (1 << min(task.ps_timeouts, 6))
        if self.now < due:
            self.at(due, self._ps_timer, task)
            return
        task.ps_timeouts += 1
        self.stats["ps_timeout"] += 1
        self._ps_remind(task, True)
        task.ps_last = self.now
        self.at(self.now + task.job.ps_rto.rto * (1 << min(task.ps_timeouts, 6)), self._ps_timer, task)

    def _ps_remind(self, task: _Task, own: bool) -> None:
        """ESA's PS sends a header-only reminder to the switch (own: its own detection, else
        a worker's reminder, which also opens the entry)."""
        if task.done:
            return
        task.recovered = True
        if not own:
            self._ps_open(task)
        if not task.reminding:
            task.reminding = True
            self._log("remind", task)
            self.at(self.now + self.prop, self._reminder_at_switch, task)

    def _ps_complete(self, task: _Task) -> None:
        task.done = True
        job = task.job
        del job.tasks[task.seq]
        if job.ps_entries.pop(task.seq, None) is not None and not task.recovered:
            job.ps_rto.sample(self.now - task.ps_open)
        self.stats["ps_done"] += 1
        self._log("ps_done", task)
        start = max(self.now, job.ps_out_free)
        job.ps_out_free = start + self.cfg.chunk_us
        self.at(job.ps_out_free + self.prop, self._result_at_switch, task)

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
