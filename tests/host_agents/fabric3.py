"""Three p4sim switches running p4src/v1model/ina.p4, four workers per job and one PS (the
topology of GOAT's Fig. 2, tests/dataplane/test_goat_example.py).

    W0 W1  (X0 X1)    W2 W3  (X2 X3)
     |  |              |  |
      S1 -----4-4----- S2          S1 = node 1, S2 = node 2, S3 = node 3
        \\3           3/           workers of job 7 (W*) on ports 1, 2;
         1\\         /2            of job 8 (X*, if asked for) on ports 5, 6
             S3 -3- PS

``build(mode)`` programs one plan and returns the fabric, the PS and the workers:

* ``goat``: sub-model s aggregated at node (1, 2, 3, 0)[s] with fan-in 4 (node 0 = the PS:
  no switch aggregates). Paths to nodes 1 and 2 are pinned (ina_route); their results go to
  the PS, which unicasts them; node 3 multicasts its results itself. (Multicasting from nodes
  1 and 2 would loop: the pinned per-node routes also match the result replicas.)
* ``atp``: ToR aggregation (fan-in 2) then S3 (fan-in 4), results to the PS, aggregators held
  until the result passes back (ATP), ``pool`` aggregators per switch.
* ``esa``: the same two levels, no holding, preemption on, S3 multicasts results.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controller.ina_tables import InaTables
from dataplane.ina_harness import program
from hostlib.protocol import encode_lanes
from hostlib.ps import JobConfig, ParameterServer
from hostlib.worker import FragmentLabel, Worker
from p4sim import Switch
from p4sim.fabric import Fabric

K = 64
PS_IP = "10.0.9.1"
JOB = 7
SIZES = [130, 64, 100, 70]           # sub-model sizes: 3 + 1 + 2 + 2 fragments
TOR = {0: "S1", 1: "S1", 2: "S2", 3: "S2"}
NODE = {"S1": 1, "S2": 2, "S3": 3}
PREFIX = {7: "W", 8: "X"}            # host names of each job's workers


def wip(w: int, job: int = JOB) -> str:
    return f"10.0.{job - JOB}.{w + 1}"


def wmac(w: int, job: int = JOB) -> int:
    return 0x020000000000 + (job << 8) + w


def wport(w: int, job: int = JOB) -> int:
    return 1 + w % 2 + 4 * (job - JOB)


@dataclass
class Setup:
    fabric: Fabric
    ps: ParameterServer
    workers: dict[str, Worker]          # host name -> worker
    grads: dict[str, np.ndarray]

    @property
    def agents(self) -> dict:
        return {"PS": self.ps, **self.workers}

    def expected_fixed(self, job: int = JOB) -> np.ndarray:
        """Σ of the job's workers' fixed-point fragments: the exact answer (int64)."""
        total = np.zeros(sum(SIZES), dtype=np.int64)
        for host, g in self.grads.items():
            if self.workers[host].job_id != job:
                continue
            off = 0
            for size in SIZES:
                for s in range(off, off + size, K):
                    e = min(s + K, off + size)
                    total[s:e] += encode_lanes(g[s:e], 16, K)[:e - s]
                off += size
        return total

    def all_done(self) -> bool:
        return all(wk.done() for wk in self.workers.values())


def build(mode: str, pool: int = 1024, window: int = 4, priorities: tuple[int, ...] = (0, 0, 0, 0),
          seed: int = 3, jobs: dict[int, tuple[int, ...]] | None = None, relay: bool = False) -> Setup:
    """``jobs``: job id (7, 8) → its sub-models' priorities (default: job 7 with ``priorities``).
    ``relay``: the PS sends its results through S3, which multicasts to every worker in goat and
    esa (``result_via``; S3 is on the PS's route to W0, the reminder host of node 3)."""
    jobs = jobs or {JOB: priorities}
    fab = Fabric()
    t: dict[str, InaTables] = {}
    for name in ("S1", "S2", "S3"):
        sw = Switch(program("v1model"))
        fab.add_switch(name, sw)
        t[name] = InaTables(sw)
        t[name].add_node(NODE[name], pool_base=0, pool_size=pool)
        t[name].add_lpm(PS_IP, 32, 3)
    fab.link("S1", 3, "S3", 1)
    fab.link("S2", 3, "S3", 2)
    fab.link("S1", 4, "S2", 4)
    fab.attach("PS", "S3", 3)

    rng = np.random.default_rng(seed)
    cfg, workers, grads = {}, {}, {}
    for job, prio in jobs.items():
        for name in ("S1", "S2", "S3"):
            t[name].add_job(job, preemption=(mode == "esa"), hold_until_result=(mode == "atp"))
            if mode == "atp":
                t[name].add_release(job, NODE[name], pool_base=0, pool_size=pool)
        for w, tor in TOR.items():
            fab.attach(f"{PREFIX[job]}{w}", tor, wport(w, job))
            t[tor].add_lpm(wip(w, job), 32, wport(w, job))
            t["S2" if tor == "S1" else "S1"].add_lpm(wip(w, job), 32, 4)
            t["S3"].add_lpm(wip(w, job), 32, 1 if tor == "S1" else 2)
        s3_group = [(1 if TOR[w] == "S1" else 2, wip(w, job), wmac(w, job)) for w in range(4)]
        if mode == "goat":
            t["S1"].add_route(job, 4, node_id=2)          # node 2's fragments from S1's workers cross to S2
            t["S2"].add_route(job, 4, node_id=1)
            t["S1"].level_to_ps(job, 1)
            t["S2"].level_to_ps(job, 2)
            t["S3"].add_result_group(job, s3_group, rid_base=100 * job)
            t["S3"].level_to_multicast(job, 3, job)
            labels = {w: [FragmentLabel(n, 4, prio[s]) for s, n in enumerate((1, 2, 3, 0))] for w in range(4)}
            submodel_nodes: dict[int, list[int]] | None = {0: [1], 1: [2], 2: [3], 3: []}
        else:
            t["S1"].level_to_node(job, 1, next_node=3, next_fan_in=4)
            t["S2"].level_to_node(job, 2, next_node=3, next_fan_in=4)
            if mode == "atp":
                t["S3"].level_to_ps(job, 3)
            else:
                t["S3"].add_result_group(job, s3_group, rid_base=100 * job)
                t["S3"].level_to_multicast(job, 3, job)
            labels = {w: [FragmentLabel(NODE[TOR[w]], 2, p) for p in prio] for w in range(4)}
            submodel_nodes = None
        via = {1: wip(0, job), 2: wip(2, job), 3: wip(0, job)}
        cfg[job] = JobConfig({w: (wip(w, job), wmac(w, job)) for w in range(4)}, via, submodel_nodes,
                             result_via=3 if relay and mode != "atp" else 0)
        for w in range(4):
            host = f"{PREFIX[job]}{w}"
            grads[host] = rng.normal(0.0, 4.0, sum(SIZES))
            wk = Worker(job, w, PS_IP, wip(w, job), labels[w], mac=wmac(w, job), lanes=K, window=window)
            wk.push(grads[host], SIZES)
            workers[host] = wk
    ps = ParameterServer(PS_IP, cfg, lanes=K)
    return Setup(fab, ps, workers, grads)
