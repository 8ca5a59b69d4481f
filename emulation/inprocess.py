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
from typing import Any, Sequence

import numpy as np

from controller.deploy import Deployment, apply_ops
from controller.ina_tables import InaTables
from controller.model import Topology
from hostlib.drivers import SimReport, run_on_fabric
from hostlib.ps import ParameterServer
from hostlib.rto import RtoEstimator
from hostlib.worker import Worker
from p4sim import Program, Switch, load_program
from p4sim.fabric import Fabric

from .agents import expected_fixed, gradient, round_seeds

ROOT = Path(__file__).resolve().parent.parent
V1MODEL = ROOT / "p4src" / "v1model" / "ina.p4"


@lru_cache(maxsize=4)
def ina_program(lanes: int = 64) -> Program:
    """The v1model INA program built for ``lanes`` lanes (compiled once per process)."""
    return load_program(str(V1MODEL), arch="v1model", defines={"INA_LANES": str(lanes)})


def build_fabric(topo: Topology, dep: Deployment, program: Program) -> Fabric:
    """One programmed switch per topology switch, wired as the topology's links."""
    fabric = Fabric()
    for s in topo.switches():
        sw = Switch(program)
        apply_ops(InaTables(sw), dep.ops.get(s, []))
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


class _TrainingWorker:
    """A Worker running ``rounds`` rounds back to back; records each round's finish time."""

    def __init__(self, worker: Worker, seeds: Sequence[int], index: int, sizes: Sequence[int],
                 rounds: int) -> None:
        self.worker, self.seeds, self.index, self.sizes, self.rounds = worker, seeds, index, sizes, rounds
        self.finished: list[float] = []
        self.results: list[np.ndarray] = []
        self.resent: list[int] = []

    def _push(self) -> None:
        rnd = len(self.finished)
        self.worker.push(gradient(round_seeds(self.seeds, rnd)[self.index], sum(self.sizes)), self.sizes)

    def start(self, now: float) -> list[bytes]:
        self._push()
        return self.worker.start(now)

    def _advance(self, out: list[bytes], now: float) -> list[bytes]:
        if self.worker.done() and len(self.finished) < self.rounds and self.worker.round == len(self.finished):
            self.finished.append(now)
            self.results.append(self.worker.result_fixed())
            self.resent.append(self.worker.stats.resent)
            if len(self.finished) < self.rounds:
                self._push()
                out = out + self.worker.start(now)
        return out

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        return self._advance(self.worker.on_frame(frame, now), now)

    def on_timer(self, now: float) -> list[bytes]:
        return self._advance(self.worker.on_timer(now), now)

    def next_deadline(self) -> float | None:
        return self.worker.next_deadline()

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
               lanes: int = 64, window: int = 8, hop_latency: float = 10e-6, until: float = 60.0,
               rto: RtoEstimator | None = None, max_events: int = 5_000_000) -> InProcessResult:
    """Run ``rounds`` rounds of ``dep``'s job with every switch port dropping ``loss`` of the
    frames it sends (host links included, as the Mininet experiment's switch drop rate)."""
    fabric = build_fabric(topo, dep, ina_program(lanes))
    a = dep.addresses
    seeds = [seed * 1000 + i for i in range(len(dep.workers))]
    make_rto = (lambda: RtoEstimator(**vars(rto))) if rto is not None else RtoEstimator
    agents: dict[str, Any] = {}
    ps = ParameterServer(a[dep.ps].ip, {dep.job_id: dep.job_config}, mac=a[dep.ps].mac, lanes=lanes,
                         timeout=make_rto())
    agents[dep.ps] = ps
    trainers = []
    for i, w in enumerate(dep.workers):
        wk = Worker(dep.job_id, i, a[dep.ps].ip, a[w].ip, dep.labels[w], mac=a[w].mac, lanes=lanes,
                    window=window, rto=make_rto())
        agents[w] = _TrainingWorker(wk, seeds, i, dep.submodel_sizes, rounds)
        trainers.append(agents[w])
    drops: dict[tuple[str, str], float] = {}
    if loss:
        for (sw, _), (other, _) in fabric.links.items():
            drops[(sw, other)] = loss
        for host, (sw, _) in fabric.hosts.items():
            drops[(sw, host)] = loss
    report = run_on_fabric(fabric, agents, until, hop_latency=hop_latency, loss=drops, seed=seed,
                           stop=lambda: all(t.done for t in trainers) and ps.done(), max_events=max_events)
    per_round = []
    for r in range(min(len(t.finished) for t in trainers)):
        want = expected_fixed(round_seeds(seeds, r), dep.submodel_sizes, lanes)
        start = max(t.finished[r - 1] for t in trainers) if r else 0.0
        per_round.append({"round": r, "seconds": max(t.finished[r] for t in trainers) - start,
                          "exact": all(np.array_equal(t.results[r], want) for t in trainers),
                          "worker_resent": sum(t.resent[r] for t in trainers)})
    return InProcessResult(per_round, dict(ps.stats.received), report, ps.stats)


__all__ = ["ina_program", "build_fabric", "run_rounds", "InProcessResult"]
