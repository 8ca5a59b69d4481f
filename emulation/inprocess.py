"""A deployment on an in-process p4sim fabric with a simulated clock: the Mininet experiment's
twin for tests and quick studies (no root, deterministic, seconds instead of minutes).

Every switch of the topology runs the real INA program (``p4sim.Switch``), programmed with the
deployment's table operations; links carry frames with a fixed latency and seeded loss
(``hostlib.drivers.run_on_fabric``). Workers run ``rounds`` all-reduce rounds back to back, a
round starting once the previous one's results are all in (synchronous training), then keep
answering the PS's queries until every worker is done.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from controller.esa_priority import JobProgress
from controller.deploy import (PART_JOB_ID_STRIDE, Deployment, FabricDeployment, TableOp, apply_ops, slot_function,
                               slot_pools)
from controller.ina_tables import InaTables
from controller.model import Topology
from hostlib.drivers import SimReport, run_on_fabric
from hostlib.layers import LayerRelease
from hostlib.protocol import ETH_IP_UDP_LEN, Flags
from hostlib.ps import ParameterServer
from hostlib.rto import RtoEstimator
from hostlib.worker import DEFAULT_WINDOW, NODE_TRIES_KEPT, FragmentLabel, Worker
from hostlib.worker_group import WorkerGroup
from p4sim import Program, Switch, load_program
from p4sim.fabric import Fabric

from .experiment import link_bits_per_s
from .agents import (FORWARD_SHARE, compute_seconds, expected_fixed, gradient, layer_release_times, measured_labels,
                     round_labels, round_seeds)

ROOT = Path(__file__).resolve().parent.parent
V1MODEL = ROOT / "p4src" / "v1model" / "ina.p4"


@lru_cache(maxsize=4)
def ina_program(lanes: int = 64) -> Program:
    """The v1model INA program built for ``lanes`` lanes (compiled once per process)."""
    return load_program(str(V1MODEL), arch="v1model", defines={"INA_LANES": str(lanes)})


def build_fabric(topo: Topology, ops: Mapping[str, Sequence[TableOp]], program: Program) -> Fabric:
    """One switch per topology switch, programmed with ``ops`` (a deployment's ``ops``), wired
    as the topology's links."""
    fabric = Fabric()
    for s in topo.switches():
        sw = Switch(program)
        apply_ops(InaTables(sw), ops.get(s, []))
        fabric.add_switch(s, sw)
    hosts = set(topo.hosts())
    for s in topo.switches():
        for link in topo.links_of(s):
            other = link.other(s)
            if other in hosts:
                fabric.attach(other, s, link.port_of(s))
            elif s < other:
                fabric.link(s, link.port_of(s), other, link.port_of(other))
    return fabric


@dataclass
class _Part:
    """One Worker of a training host: a job, or one PS's part of a job split over several
    (InArt), with what it records per round."""
    worker: Worker
    seeds: Sequence[int]                     # its job's workers' gradient seeds
    index: int                               # this worker's place among them
    sizes: Sequence[int]
    priorities: Sequence[Sequence[int]] | None = None   # round → sub-model → byte
    progress: JobProgress | None = None      # ESA: Eq. 1's inputs, measured per job
    unit: float = 1.0
    labels: list[FragmentLabel] = field(default_factory=list)
    results: list[np.ndarray] = field(default_factory=list)
    resent: list[int] = field(default_factory=list)
    fast_resent: list[int] = field(default_factory=list)
    priority_log: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.labels = [self.worker.labels[i] for i in range(len(self.sizes))]

    def push(self, rnd: int) -> None:
        labels = measured_labels(round_labels(self.labels, self.priorities, rnd), self.progress, self.unit)
        self.priority_log.append([lab.priority for lab in labels])
        self.worker.labels = dict(enumerate(labels))
        self.worker.push(gradient(round_seeds(self.seeds, rnd)[self.index], sum(self.sizes)), self.sizes,
                         ready=0 if self.worker.layered else None)

    def record(self) -> None:
        self.results.append(self.worker.result_fixed())
        self.resent.append(self.worker.stats.resent)
        self.fast_resent.append(self.worker.stats.fast_resent)


class _TrainingWorker:
    """A host training ``rounds`` rounds from ``start_at`` with one Worker per job part (one, or
    one per PS of a job split over several; all in lockstep, as emulation.agents.run_worker):
    before each round it computes for ``compute`` seconds plus its own seeded U(0, ``jitter``)
    (emulation.agents.compute_seconds, the Mininet agents' draws), still answering the PS
    meanwhile; records each round's finish time. A part's ``priorities`` relabel each round;
    its ``progress`` (ESA) relabels it with Eq. 1 on what the job measured. A host of layered
    Workers pushes its round once the forward pass is done and sends each sub-model as
    backpropagation computes it (emulation.agents.layer_release_times)."""

    def __init__(self, parts: Sequence[_Part], rounds: int, start_at: float = 0.0, *, compute: float = 0.0,
                 jitter: float = 0.0, on_round: Callable[[], None] | None = None) -> None:
        self.parts, self.rounds, self.start_at = list(parts), rounds, start_at
        self.compute, self.jitter, self.on_round = compute, jitter, on_round
        self.release_at: list[float] | None = None   # a layered round's release times
        self.started = False
        self.resume_at: float | None = None      # when the computation before the next round ends
        self.finished: list[float] = []
        self.pushed_at: list[float] = []         # when each round's first copies went out
        self.computed: list[float] = []          # each round's computation before it (s)
        self._agent: Worker | WorkerGroup | LayerRelease = self._agent_of(self.parts)

    @staticmethod
    def _agent_of(parts: Sequence[_Part]) -> Worker | WorkerGroup:
        return parts[0].worker if len(parts) == 1 else WorkerGroup([p.worker for p in parts])

    def add(self, part: _Part) -> None:
        if part.worker.layered:
            raise ValueError("a layered job's model is on one PS: one part per host")
        self.parts.append(part)
        self._agent = self._agent_of(self.parts)

    def _compute(self, now: float) -> list[bytes]:
        first = self.parts[0]
        comp = compute_seconds(self.compute, self.jitter, first.seeds[first.index], len(self.finished))
        self.computed.append(comp)
        if self.parts[0].worker.layered:
            self.release_at = layer_release_times(self.parts[0].sizes, now, comp)
            comp *= FORWARD_SHARE
        if comp > 0:
            self.resume_at = now + comp
            return []
        return self._push(now)

    def _push(self, now: float) -> list[bytes]:
        self.resume_at = None
        self.pushed_at.append(now)
        for p in self.parts:
            p.push(len(self.finished))
        if self.release_at is not None:
            self._agent = LayerRelease(self.parts[0].worker, self.release_at)
        return self._agent.start(now)

    def start(self, now: float) -> list[bytes]:
        if now < self.start_at:
            return []
        self.started = True
        return self._compute(now)

    def _advance(self, out: list[bytes], now: float) -> list[bytes]:
        rnd = len(self.finished)
        if self.resume_at is None and rnd < self.rounds and all(
                p.worker.done() and p.worker.round == rnd for p in self.parts):
            self.finished.append(now)
            for p in self.parts:
                p.record()
                if p.progress is not None:
                    p.progress.record_finish(now, self.start_at)
            if self.on_round is not None:
                self.on_round()
            if len(self.finished) < self.rounds:
                out = out + self._compute(now)
        return out

    # the parts push their rounds together: before the first, no Worker has anything to answer
    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        return self._advance(self._agent.on_frame(frame, now) if self.pushed_at else [], now)

    def on_timer(self, now: float) -> list[bytes]:
        if not self.started:
            return self.start(now)
        out = self._agent.on_timer(now) if self.pushed_at else []
        if self.resume_at is not None and now >= self.resume_at:
            out = out + self._push(now)
        return self._advance(out, now)

    def next_deadline(self) -> float | None:
        if not self.started:
            return self.start_at
        d = self._agent.next_deadline() if self.pushed_at else None
        if self.resume_at is not None:
            d = self.resume_at if d is None else min(d, self.resume_at)
        return d

    def report(self, part: _Part, wants: Sequence[np.ndarray], lanes: int) -> dict[str, Any]:
        """What a Mininet worker agent reports for ``part`` (emulation.agents.run_worker), on the
        simulated clock: ``wants[r]`` is round r's exact sum."""
        rounds = [{"round": r, "seconds": done - self.pushed_at[r], "compute_seconds": self.computed[r],
                   "exact": bool(np.array_equal(part.results[r], want)), "joined": True,
                   # a Worker's counters start again with every round (Worker.push)
                   "resent": part.resent[r], "fast_resent": part.fast_resent[r], "priorities": part.priority_log[r]}
                  for r, (done, want) in enumerate(zip(self.finished, wants))]
        return {"seconds": (self.finished[-1] - self.start_at) if self.done else float("nan"),
                "done": self.done, "exact": self.done and all(r["exact"] for r in rounds), "rounds": rounds,
                "fragments": sum(-(-n // lanes) for n in part.sizes),
                "resent": sum(r["resent"] for r in rounds), "fast_resent": sum(r["fast_resent"] for r in rounds)}

    @property
    def done(self) -> bool:
        return len(self.finished) == self.rounds


@dataclass
class InProcessResult:
    rounds: list[dict[str, Any]]            # per round: seconds (slowest worker), exact, resent
    ps_received: dict[str, int]
    report: SimReport
    ps_stats: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        return bool(self.rounds) and all(r["exact"] for r in self.rounds)


def run_rounds(topo: Topology, dep: Deployment, *, rounds: int = 1, loss: float = 0.0, seed: int = 0,
               lanes: int = 64, window: int = DEFAULT_WINDOW, hop_latency: float = 10e-6, until: float = 60.0,
               rto: RtoEstimator | None = None, max_events: int = 5_000_000,
               link_mbps: float | None = None) -> InProcessResult:
    """Run ``rounds`` rounds of ``dep``'s job with every switch port dropping ``loss`` of the
    frames it sends (host links included, as the Mininet experiment's switch drop rate)."""
    fd = FabricDeployment(dep.scheme, [dep], dep.ops, {})
    return run_jobs(topo, fd, rounds={dep.job_id: rounds}, loss=loss, seed=seed, lanes=lanes, window=window,
                    hop_latency=hop_latency, until=until, rto=rto, max_events=max_events, link_mbps=link_mbps)[0]


_FLAGS_AT, _NODE_AT = ETH_IP_UDP_LEN + 1, ETH_IP_UDP_LEN + 4     # the INA header's flags and node id
_PASSING = int(Flags.RESULT | Flags.RELAY | Flags.RESEND | Flags.REMINDER)


def _capacities(topo: Topology, fd: FabricDeployment, bw_scale: float) -> dict[str, float]:
    """Bits per second of every switch with an aggregation capacity and every PS host with a
    processing capacity (``capacity_gbps``, scaled like the links)."""
    pses = {d.ps for d in fd.jobs}
    return {n: node.capacity_gbps * 1e9 / bw_scale for n, node in topo.nodes.items()
            if node.capacity_gbps > 0 and (node.kind == "switch" or n in pses)}


def _aggregation_cost(fd: FabricDeployment) -> Callable[[str, bytes], bool]:
    """Whether a frame costs a node's capacity: at a switch, a worker's fragment or a partial
    for one of its node ids (not a result, relay, resend or reminder, which pass); at a host,
    everything."""
    nodes: dict[str, set[int]] = {}
    for sw, ops in fd.ops.items():
        nodes[sw] = {op.args[0] for op in ops if op.method == "add_node"}

    def costs(node: str, frame: bytes) -> bool:
        if node not in nodes:
            return True
        return (len(frame) > _NODE_AT + 1 and not frame[_FLAGS_AT] & _PASSING
                and int.from_bytes(frame[_NODE_AT:_NODE_AT + 2], "big") in nodes[node])
    return costs


def job_seeds(seed: int, position: int, workers: int) -> list[int]:
    """Gradient seeds of the workers of the job at ``position`` (disjoint across jobs)."""
    return [seed * 1000 + 100 * position + i for i in range(workers)]


def run_jobs(topo: Topology, fd: FabricDeployment, *, rounds: Mapping[int, int], loss: float = 0.0,
             seed: int = 0, lanes: int = 64, window: int = DEFAULT_WINDOW, hop_latency: float = 10e-6,
             until: float = 60.0, rto: RtoEstimator | None = None, max_events: int = 5_000_000,
             starts: Mapping[int, float] | None = None,
             priorities: Mapping[int, Sequence[Sequence[int]]] | None = None,
             members: Mapping[int, Sequence[int]] | None = None,
             link_mbps: float | None = None, bw_scale: float | None = None,
             compute: Mapping[int, float] | None = None,
             jitter: float = 0.0, esa: Mapping[int, Mapping[str, Any]] | None = None,
             on_round: Callable[[], None] | None = None, loss_detection: str = "rack",
             observe: Callable[[float, str, bytes, list[bytes]], None] | None = None,
             capacities: bool = False, layered: bool = False) -> list[InProcessResult]:
    """Every job of ``fd`` at once on one fabric: job ``j`` runs ``rounds[j]`` rounds from
    ``starts[j]`` (simulated seconds), relabelled per round by ``priorities[j]``; PSes on one
    host serve their jobs together. ``members[j]``: the worker ids of job ``j`` that run (default
    all; the deployment's fan-ins and PS config must expect just those, as GOAT-Async's round
    labels do), an empty list leaving the job idle. ``link_mbps``: every link's rate (default
    unlimited: latency only); ``bw_scale`` instead: each link at its capacity / ``bw_scale``, as
    the Mininet net (emulation.net) sets them. ``compute[j]``: each of job ``j``'s workers computes that long
    before every round, plus its own U(0, ``jitter``) (the Mininet agents' draws); ``esa[j]``:
    ESA's Eq. 1 inputs (emulation.schemes.esa_inputs), its workers labelling each round with the
    job's measured priority; ``on_round()`` is called as any worker finishes a round (a progress
    bar); ``loss_detection``: the workers' (hostlib.worker.LOSS_DETECTION); ``observe``: see
    hostlib.drivers.run_on_fabric; ``capacities`` (with ``bw_scale``): a node with a
    ``capacity_gbps`` (InArt's switch aggregation and PS processing rates) processes what it
    aggregates, a PS what it receives, at that rate scaled like the links; ``layered``: workers
    send layer by layer as backpropagation computes them (hostlib.layers). One result per job,
    in ``fd.jobs`` order."""
    fabric = build_fabric(topo, fd.ops, ina_program(lanes))
    make_rto = (lambda: RtoEstimator(**vars(rto))) if rto is not None else RtoEstimator
    agents: dict[str, Any] = {}
    ps_jobs: dict[str, dict[int, Any]] = {}
    for dep in fd.jobs:
        ps_jobs.setdefault(dep.ps, {})[dep.job_id] = dep.job_config
    pses = {}
    for host, cfgs in ps_jobs.items():
        a = fd.jobs[0].addresses[host]
        pses[host] = agents[host] = ParameterServer(a.ip, cfgs, mac=a.mac, lanes=lanes, timeout=make_rto())
    trainers: list[list[tuple[_TrainingWorker, _Part]]] = []
    seeds = []
    for k, dep in enumerate(fd.jobs):
        a = dep.addresses
        seeds.append(job_seeds(seed, k, len(dep.workers)))
        mine = []
        running = set(range(len(dep.workers)) if members is None or dep.job_id not in members
                      else members[dep.job_id])
        pools = slot_pools(dep)
        slot_of = None if pools is None else slot_function(dep.job_id, pools)
        for i, w in enumerate(dep.workers):
            if i not in running:
                continue
            host = agents.get(w)
            if host is not None and not (isinstance(host, _TrainingWorker) and all(
                    p.worker.job_id % PART_JOB_ID_STRIDE == dep.job_id % PART_JOB_ID_STRIDE for p in host.parts)):
                raise ValueError(f"host {w} runs two agents (jobs must use distinct hosts)")
            # the v1model program's nodes keep their results (rule 8): more tries at the node
            wk = Worker(dep.job_id, i, a[dep.ps].ip, a[w].ip, dep.labels[w], mac=a[w].mac, lanes=lanes,
                        window=window, rto=make_rto(), node_tries=NODE_TRIES_KEPT, loss_detection=loss_detection,
                        slot_of=slot_of, layered=layered)
            inputs = (esa or {}).get(dep.job_id)
            progress = None if not inputs else JobProgress(
                comm_prior=float(inputs["comm_prior"]), comp_prior=float(inputs["comp_prior"]),
                rounds_total=inputs.get("rounds"))
            part = _Part(wk, seeds[k], i, dep.submodel_sizes, (priorities or {}).get(dep.job_id), progress,
                         float((inputs or {}).get("unit", 1.0)))
            if host is None:             # one host, one agent; another part of its job joins it (InArt)
                host = agents[w] = _TrainingWorker([part], rounds[dep.job_id], (starts or {}).get(dep.job_id, 0.0),
                                                   compute=(compute or {}).get(dep.job_id, 0.0), jitter=jitter,
                                                   on_round=on_round)
            else:
                host.add(part)
            mine.append((host, part))
        trainers.append(mine)
    drops: dict[tuple[str, str], float] = {}
    if loss:
        for (sw, _), (other, _) in fabric.links.items():
            drops[(sw, other)] = loss
        for host, (sw, _) in fabric.hosts.items():
            drops[(sw, host)] = loss
    everyone = [t for ts in trainers for t, _ in ts]
    report = run_on_fabric(fabric, agents, until, hop_latency=hop_latency, loss=drops, seed=seed,
                           stop=lambda: all(t.done for t in everyone) and all(p.done() for p in pses.values()),
                           max_events=max_events, observe=observe,
                           node_bps=_capacities(topo, fd, bw_scale) if capacities and bw_scale else None,
                           costs=_aggregation_cost(fd),
                           link_bps=link_bits_per_s(topo, bw_scale) if bw_scale else link_mbps * 1e6 if link_mbps else None)
    out = []
    for k, dep in enumerate(fd.jobs):
        ts = trainers[k]
        per_round = []
        wants = [expected_fixed([round_seeds(seeds[k], r)[p.index] for _, p in ts], dep.submodel_sizes, lanes)
                 for r in range(max((len(t.finished) for t, _ in ts), default=0))]
        for r in range(min((len(t.finished) for t, _ in ts), default=0)):
            want = wants[r]
            start = max(t.finished[r - 1] for t, _ in ts) if r else ts[0][0].start_at
            per_round.append({"round": r, "seconds": max(t.finished[r] for t, _ in ts) - start,
                              "exact": all(np.array_equal(p.results[r], want) for _, p in ts),
                              "worker_resent": sum(p.resent[r] for _, p in ts),
                              "worker_fast_resent": sum(p.fast_resent[r] for _, p in ts)})
        ps = pses[dep.ps]
        out.append(InProcessResult(per_round, dict(ps.stats.received), report, ps.stats,
                                   {"jct": max(t.finished[-1] for t, _ in ts) - ts[0][0].start_at
                                    if ts and all(t.done for t, _ in ts) else float("nan"),
                                    "workers": [t.report(p, wants, lanes) for t, p in ts]}))
    return out


__all__ = ["ina_program", "build_fabric", "run_rounds", "run_jobs", "job_seeds", "InProcessResult"]
