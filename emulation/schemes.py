"""Schemes on the emulation: which it can deploy (:data:`DEPLOYABLE`), their plans for a set of
jobs (:func:`plan_scheme`: controller.schemes, schemes that plan one job at a time planning each
alone; GOAT-Async's participants per round), deployed with their link-rate ideal
(:func:`prepare_scheme`: controller.deploy.deploy_jobs, emulation.bounds) and run on a fresh
Mininet net (:func:`run_scheme`: emulation.install, emulation.jobs).
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from controller.deploy import DEFAULT_POOL, FabricDeployment, deploy_jobs, esa_priority_schedule
from controller.esa_priority import JobProgress, priority_unit
from controller.goat import async_epochs
from controller.model import Job, Plan, Topology, submodel_key
from controller.schemes import run_scheme as plan_with
from controller.topologies import fat_tree

from .bounds import LANES, LinkBound, link_bounds, spec_of
from .experiment import JobSpec, place_jobs
from .install import install
from .jobs import RoundResult, run_jobs
from .net import SWITCH_KINDS, EmuNet


def fattree_setup(k: int, workers: int, mb: float, *, programmable_fraction: float = 0.2,
                  submodels: int = 4, seed: int = 0, hosts_per_edge: int | None = None) -> tuple[Topology, Job]:
    """A k-ary fat-tree and one job (workers on the first hosts, the PS on the last; switch
    memory = half the model, so no switch holds it all)."""
    topo = fat_tree(k, hosts_per_edge, programmable_fraction=programmable_fraction, seed=seed)
    return topo, place_jobs(topo, [JobSpec(mb, 1)], workers, submodels=submodels)[0]


# schemes the emulation can deploy (controller/deploy.py: one PS per job; placement plans, and
# routing plans aggregating where paths merge)
DEPLOYABLE = ("ps", "atp", "esa", "switchml", "goat", "goat-async", "goat-ilp", "geryon", "k-sgd", "aro", "aro-acc", "inart", "l-inart",
              "random", "lbmm", "grid", "aggtree")


@dataclass
class SchemeRun:
    scheme: str
    jobs: list[RoundResult]
    deployment: FabricDeployment
    entries: int
    lanes: int = LANES                  # gradient lanes per packet of the program that ran
    bounds: dict[int, LinkBound] = field(default_factory=dict)   # job id → its round's link-rate ideal
    dropped: int | None = None          # frames the switches' loss impairment dropped (all jobs; None: not known)
    loss: float = 0.0                   # the switches' drop rate
    label: str = ""                     # how plots name it (the scheme, or with its loss when a run has several)
    layered: bool = False               # workers sent layer by layer, overlapping backpropagation


@dataclass
class PreparedScheme:
    """A scheme planned and deployed for the jobs, with its link-rate ideal (pure: no network)."""
    scheme: str
    deployment: FabricDeployment
    priorities: dict[int, list[list[int]]]            # ESA: job id → per round, per sub-model
    participants: dict[int, list[list[int]]] | None   # GOAT-Async: job id → per round, worker ids
    bounds: dict[int, LinkBound]                      # job id → its round's link-rate ideal at bw_scale
    bw_scale: float


def prepare_scheme(topo: Topology, jobs: list[Job], specs: list[JobSpec], scheme: str, *, bw_scale: float,
                   window: int, seed: int, pool: int = DEFAULT_POOL, switch: str = "p4sim",
                   log: Callable[[str], None] = print) -> PreparedScheme:
    """Plan ``scheme`` for ``jobs``, deploy it (``pool`` aggregators per switch) and count its
    link-rate ideal on the in-process twin (ESA: priorities per round, ESA §5.4; GOAT-Async:
    seeded heterogeneous gradient intervals, :func:`async_history`, and each round's participants)."""
    if scheme == ASYNC:
        async_history(jobs, seed)
    plan = plan_scheme(scheme, topo, jobs)
    elements = {j.name: int(s.mb * 1e6 / 4) for j, s in zip(jobs, specs)}
    fd = deploy_jobs(topo, jobs, plan, total_elements=elements, pool_size=pool)
    log(f"[{scheme}] aggregation nodes: " + (", ".join(
        f"{n}({'/'.join(sorted({d.levels[n] for d in fd.jobs if n in d.levels}))}, {fd.pool_sizes[n]} aggregators)"
        for n in fd.ina_switches) or "none"))
    prio: dict[int, list[list[int]]] = {}
    if scheme == "esa":
        sched = esa_priority_schedule(jobs, {j.name: s.rounds for j, s in zip(jobs, specs)})
        prio = {j.job_id: sched[j.name] for j in jobs}
    joined: dict[int, list[list[int]]] | None = None
    if scheme == ASYNC:
        joined = {j.job_id: async_participants(plan, j, s.rounds) for j, s in zip(jobs, specs)}
        for j in jobs:
            log(f"[{scheme}] job {j.job_id}: K_t = {async_info(plan, j)['K_t']} of {len(j.workers)} workers; "
                f"participants per round {joined[j.job_id]}")
    # the ideal counts the plan's traffic on the pools the switches have: what collides there
    # and goes on to the PS is on the links too
    bounds = link_bounds(topo, fd, specs, bw_scale=bw_scale, lanes=SWITCH_KINDS[switch].lanes, window=window,
                         participants=joined)
    return PreparedScheme(scheme, fd, prio, joined, bounds, bw_scale)


def run_scheme(topo: Topology, jobs: list[Job], specs: list[JobSpec], scheme: str, *, loss: float,
               workdir: Path, bw_scale: float, window: int, seed: int, timeout: float,
               rto: dict[str, float] | None = None, pool: int = DEFAULT_POOL, switch: str = "p4sim",
               log: Callable[[str], None] = print, progress: Callable[[int], None] | None = None,
               prepared: PreparedScheme | None = None, jitter: float = 0.0,
               loss_detection: str = "rack", serialize: bool = False, layered: bool = False) -> SchemeRun:
    """Plan ``scheme`` for ``jobs`` (or take ``prepared``: :func:`prepare_scheme`'s, at any
    bandwidth scale), build a fresh Mininet net, install over P4Runtime and run every job's
    rounds. ``pool``: aggregators per switch (small pools make jobs contend: ESA's setting);
    each worker computes its spec's ``compute`` seconds per round plus U(0, ``jitter``). ESA's
    workers evaluate Eq. 1 each round on what their job measured (:func:`esa_inputs`);
    ``loss_detection``: the workers' (hostlib.worker.LOSS_DETECTION); ``serialize``: the switches
    hold every frame for its time on the link (:class:`emulation.net.EmuNet`); ``layered``: the
    workers send layer by layer as backpropagation computes them (hostlib.layers)."""
    if prepared is None:
        prepared = prepare_scheme(topo, jobs, specs, scheme, bw_scale=bw_scale, window=window, seed=seed, pool=pool,
                                  switch=switch, log=log)
    fd, prio, joined = prepared.deployment, prepared.priorities, prepared.participants
    bounds = {j: b.at(bw_scale / prepared.bw_scale) for j, b in prepared.bounds.items()}
    log(f"[{scheme}] link-rate ideal per round: " + ", ".join(
        f"job {j} {b.seconds:.3f} s ({b.link})" for j, b in sorted(bounds.items())))
    net = EmuNet(topo, bw_scale=bw_scale, log_dir=workdir / "logs", switch=switch, serialize=serialize)
    net.with_switch_options(**({"drop_rate": loss, "seed": seed} if switch != "bmv2" else {}))
    try:
        t = time.time()
        net.build().start()
        log(f"[{scheme}] {len(topo.switches())} {switch} switches up in {time.time() - t:.1f} s")
        t = time.time()
        entries = install(net, fd.ops)
        api = "BfRuntime" if net.arch == "tna" else "P4Runtime"
        log(f"[{scheme}] {entries} table entries over {api} in {time.time() - t:.1f} s")
        spec = {d.job_id: spec_of(specs, d.job_id) for d in fd.jobs}     # parts of a job: its spec
        results = run_jobs(net, fd, workdir / scheme, rounds={i: sp.rounds for i, sp in spec.items()},
                           window=window, seed=seed, timeout=timeout, rto=rto,
                           starts={i: sp.start for i, sp in spec.items()},
                           priorities={} if scheme == "esa" else prio,
                           participants=joined, progress=progress,
                           compute={i: sp.compute for i, sp in spec.items()}, jitter=jitter,
                           esa=esa_inputs(fd, spec, bounds, jitter) if scheme == "esa" else None,
                           loss_detection=loss_detection, layered=layered)
    finally:
        net.stop()
    dropped = net.impairment_drops()
    for res in results:
        pre = f"[{scheme}] job {res.job}"
        for r in res.per_round():
            log(f"{pre} round {r['round']}: {r['seconds']:.2f} s, exact={r['exact']}, "
                f"worker resends {r['worker_resent']} ({r['worker_fast_resent']} fast)")
        log(f"{pre}: completion {res.completion:.2f} s ({len(res.per_round())} rounds), exact={res.exact}, "
            f"PS received {res.ps['rx_packets']} packets, preemptions {res.ps['received'].get('preempted', 0)}")
    resent = sum(w["resent"] for res in results for w in res.workers)
    if dropped is not None:
        log(f"[{scheme}] the switches dropped {dropped} frames; the workers resent {resent} fragments"
            + (f" ({resent / dropped:.2f} resends per dropped frame)" if dropped else ""))
    return SchemeRun(scheme, results, fd, entries, net.lanes, bounds, dropped, loss, layered=layered)


def esa_inputs(fd: FabricDeployment, specs: Mapping[int, JobSpec], bounds: Mapping[int, LinkBound],
               jitter: float = 0.0) -> dict[int, dict[str, Any]]:
    """job id → what its workers need to evaluate ESA's Eq. 1 themselves (emulation.agents):
    the rounds the job runs (so T_j is rounds left × the round time they measure); for round 0,
    before anything is measured, the plan's link-rate ideal as the communication time and the
    job's compute time (with half the jitter) as the computation time; and the byte's unit,
    one for all jobs: the highest P any job is expected to reach (its front layer in its last
    round, on the priors) maps to 254."""
    inputs = {d.job_id: {"rounds": specs[d.job_id].rounds, "comm_prior": bounds[d.job_id].seconds,
                         "comp_prior": specs[d.job_id].compute + jitter / 2} for d in fd.jobs}
    top = max(JobProgress(v["comm_prior"], v["comp_prior"], v["rounds"]).last_round_priority(len(d.submodel_sizes))
              for d, v in zip(fd.jobs, inputs.values()))
    unit = priority_unit(top)
    return {j: {**v, "unit": unit} for j, v in inputs.items()}


# schemes that plan one job at a time (InArt §3.1: other jobs are background traffic; GOAT-Async's
# Alg. 2 chooses K_t per job)
ASYNC = "goat-async"
MULTI_PS = ("inart", "l-inart")          # schemes that split a job's model over several PSes
PER_JOB = ("inart", "l-inart", ASYNC)


def async_history(jobs: list[Job], seed: int, spread: float = 2.0) -> None:
    """Give each job's workers gradient intervals p_w (``job.meta["history"]``, Alg. 2's input)
    where none are given: uniform in [1, 1 + spread], seeded — heterogeneous workers, so K_t
    may leave the slowest out of a round."""
    for j in jobs:
        if "history" not in j.meta:
            rng = random.Random(seed * 7919 + j.job_id)
            j.meta["history"] = {w: round(1.0 + spread * rng.random(), 4) for w in j.workers}


def async_info(plan: Plan, job: Job) -> dict[str, Any]:
    """GOAT-Async's decision for ``job`` (K_t, participants, Alg. 2's table)."""
    return (plan.extra.get("async_by_job") or {}).get(job.name) or plan.extra["async"]


def async_participants(plan: Plan, job: Job, rounds: int) -> list[list[int]]:
    """Worker ids taking part in each of ``rounds`` rounds: Alg. 2's epochs at the plan's K_t
    (a worker still computing when an epoch closes joins a later one)."""
    hist = [float(job.meta["history"][w]) for w in job.workers]
    return [ids for _, ids in async_epochs(hist, int(async_info(plan, job)["K_t"]), rounds)]


def plan_scheme(scheme: str, topo: Topology, jobs: list[Job]) -> Plan:
    """The controller's plan for ``scheme`` (controller.schemes), checked deployable here;
    schemes that plan one job at a time plan each job alone, their plans merged."""
    if scheme not in DEPLOYABLE:
        raise ValueError(f"scheme {scheme!r} cannot be deployed in the emulation yet; "
                         f"deployable: {', '.join(DEPLOYABLE)}")
    if scheme not in PER_JOB or len(jobs) == 1:
        return plan_with(scheme, topo, jobs)
    plans = [plan_with(scheme, topo, [j]) for j in jobs]
    merged = Plan(scheme, [j.name for j in jobs], status="heuristic",
                  solve_seconds=sum(p.solve_seconds for p in plans))
    for j, p in zip(jobs, plans):           # tasks and workers are distinct across jobs
        merged.paths.update(p.paths)
        merged.rates.update(p.rates)
        merged.split.update(p.split)
        # a one-job plan names sub-models bare; the merged plan covers several jobs
        key = {s.name: submodel_key(j, s, True) for s in j.submodels}
        for w, nodes in p.aggregation_node.items():
            merged.aggregation_node.setdefault(w, {}).update({key.get(g, g): n for g, n in nodes.items()})
        merged.submodel_switches.update({key.get(g, g): v for g, v in p.submodel_switches.items()})
        if "async" in p.extra:
            merged.extra.setdefault("async_by_job", {})[j.name] = p.extra["async"]
    return merged
