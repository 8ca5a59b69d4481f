"""Emulated INA experiments on Mininet with p4sim switches.

    python -m emulation.run [fattree|leaf-spine|goat-testbed|inart] [--k 4] [--jobs 1] [--workers 6]
                            [--mb 2] [--schemes goat,atp] [--loss 0] [--rounds 1] [--out results/fattree]

``--jobs`` jobs of ``--workers`` workers each, interleaved over the hosts (so they share ToRs
and compete for aggregators), each with its own PS on the last hosts, model size (``--mb``,
a list cycles over the jobs) and start time (``--stagger``). The default topology is a k=4
fat-tree whose switches are 20 % programmable (4 of 20: GOAT has to choose among switches that
are mostly off the workers' paths, where ATP can only use those on them); each programmable
switch has memory for half of the largest model, and its aggregator pool is what that memory
holds, so placement and sharing matter. For every scheme: plan all jobs together
(controller.schemes), deploy (controller.deploy.deploy_jobs: shared pools, SwitchML's static
partition, ESA's priorities recomputed per round), build a fresh Mininet net, install over
P4Runtime, run every job's rounds (fresh gradients each) with the agents in the hosts, and
check every worker's result is exact in every round. Writes under ``--out``: results.csv (per
scheme and job: JCT, mean round time and its ratio to the link-rate ideal, PS ingress,
in-network fraction, preemptions, resends), rounds.csv (per round), summary.md and a PNG
(emulation.plots: mean round vs its link-rate ideal, JCT, time per round, PS ingress, in-network
fraction, resends and preemptions). ``--loss 0,0.01,0.05`` runs every scheme at each drop rate
over the same links (one ``--link-mbps auto`` calibration, which keeps the lossiest rounds
link-bound) and gives each row its mean round over the lossless one (``x_lossless``).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tqdm import tqdm

from controller.deploy import (DEFAULT_POOL, PART_JOB_ID_STRIDE, Deployment, FabricDeployment, deploy_jobs,
                               esa_priority_schedule, ina_fraction)
from controller.esa_priority import JobProgress, priority_unit
from controller.goat import async_epochs
from controller.model import Job, Plan, Topology, submodel_key
from controller.schemes import available
from controller.schemes import run_scheme as plan_with
from controller.topologies import fat_tree
from hostlib.protocol import HEADER_LEN, MAX_WORKERS
from hostlib.worker import DEFAULT_WINDOW, NODE_TRIES, NODE_TRIES_KEPT

from .agents import UDP_OVERHEAD, round_labels
from .bmv2 import bmv2_unavailable_reason
from .calibrate import (BUSY_LINK_BOUND, PROBE_MBPS, Choice, Traffic, choose_link_mbps, cpu_busy_seconds,
                        loss_cpu_factor, machine, pace_note, parse_link_mbps)
from .compare import comparison_markdown
from .experiment import LINK_MBPS, TOPOLOGIES, JobSpec, bw_scale_for, build_topology, place_jobs
from .inprocess import job_seeds
from .inprocess import run_jobs as run_inprocess
from .install import install
from .net import SWITCH_KINDS, EmuNet, mininet_unavailable_reason
from .plots import plot_run

LANES = 64


@dataclass
class RoundResult:
    scheme: str
    workers: list[dict[str, Any]]
    ps: dict[str, Any]
    switch_tx: int                      # packets all switches transmitted during the run (all jobs)
    wall_seconds: float
    job: int = 1
    start: float = 0.0                  # the job's start, s after the common start
    busiest_link: str = ""              # the link that carried the most (at its rate) until every worker was done
    busiest_link_seconds: float = 0.0   # how long that took it at its rate: its busy time (all jobs)
    cpu_seconds: float = 0.0            # the machine's busy CPU time (all cores) over the same span (all jobs)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        return bool(self.workers) and all(w["exact"] for w in self.workers)

    @property
    def completion(self) -> float:
        return max((w["seconds"] for w in self.workers), default=math.nan)

    def per_round(self) -> list[dict[str, Any]]:
        """One row per round: the slowest worker's time, exactness on every worker, resends."""
        n = min((len(w["rounds"]) for w in self.workers), default=0)
        return [{"round": r, "seconds": max(w["rounds"][r]["seconds"] for w in self.workers),
                 "exact": all(w["rounds"][r]["exact"] for w in self.workers),
                 "worker_resent": sum(w["rounds"][r]["resent"] for w in self.workers),
                 "worker_fast_resent": sum(w["rounds"][r]["fast_resent"] for w in self.workers),
                 "participants": sum(1 for w in self.workers if w["rounds"][r].get("joined", True))}
                for r in range(n)]


def link_bits_per_s(topo: Topology, bw_scale: float) -> dict[tuple[str, str], float]:
    """Each link's rate in the emulation, both directions: (from, to) → bits per second."""
    rates = {}
    for link in topo.links:
        rates[(link.a, link.b)] = rates[(link.b, link.a)] = link.capacity_gbps * 1e9 / bw_scale
    return rates


def _link_counters(net: EmuNet) -> dict[tuple[str, str], tuple[int, int]]:
    """(from, to) → (packets, bytes) every link has carried so far, read off the switches' ends
    (root namespace): a switch interface's tx is switch → peer, its rx peer → switch (that only
    for a host's link: between two switches the sending end's tx counts)."""
    counts, received = {}, {}
    for sw in net.switches():
        for intf in sw.intfList():
            if intf.name == "lo" or intf.link is None:
                continue
            peer = intf.link.intf2 if intf.link.intf1 is intf else intf.link.intf1
            stats = Path(f"/sys/class/net/{intf.name}/statistics")
            try:
                read = {k: int((stats / k).read_text()) for k in ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes")}
            except OSError:
                continue
            counts[(sw.name, peer.node.name)] = (read["tx_packets"], read["tx_bytes"])
            received[(peer.node.name, sw.name)] = (read["rx_packets"], read["rx_bytes"])
    return {**received, **counts}


def _agent_configs(fd: FabricDeployment, workdir: Path, *, window: int, seeds: list[list[int]],
                   timeout: float, rto: dict[str, float] | None, rounds: Mapping[int, int],
                   starts: Mapping[int, float], priorities: Mapping[int, list[list[int]]],
                   lanes: int = LANES, participants: Mapping[int, list[list[int]]] | None = None,
                   compute: Mapping[int, float] | None = None, jitter: float = 0.0,
                   esa: Mapping[int, dict[str, Any]] | None = None,
                   node_tries: int = NODE_TRIES) -> dict[str, tuple[str, dict]]:
    """host → (role, config) for every PS and worker of every job (PSes on one host merged).
    ``participants``: job → per round the worker ids taking part (GOAT-Async); the fan-in a
    worker's packets carry then counts that round's participants at its node. ``compute``: job →
    its workers' computation per round (s), each worker adding its own U(0, ``jitter``);
    ``esa``: job → the inputs its workers need to evaluate ESA's Eq. 1 on what they measure
    (emulation.agents.job_progress); ``node_tries``: each worker's retransmissions of a fragment
    to its node before the PS (hostlib.worker)."""
    go, finish = workdir / "go", workdir / "finish"
    most = max(rounds.values())
    common = {"lanes": lanes, "go_file": str(go), "timeout": timeout, "rto": rto or {}, "finish_file": str(finish),
              "node_tries": node_tries}
    cfgs: dict[str, tuple[str, dict[str, Any]]] = {}
    for k, dep in enumerate(fd.jobs):
        a, cfg = dep.addresses, dep.job_config
        prio = priorities.get(dep.job_id)
        slowest = timeout + max((compute or {}).values(), default=0.0) + jitter
        ps = cfgs.setdefault(dep.ps, ("ps", dict(common, host=dep.ps, ip=a[dep.ps].ip, mac=a[dep.ps].mac, jobs={},
                                                 timeout=slowest * most + max(starts.values()) + 60)))[1]
        ps["jobs"][str(dep.job_id)] = {
            "workers": {str(w): list(v) for w, v in cfg.workers.items()},
            "reminder_via": {str(n): ip for n, ip in cfg.reminder_via.items()},
            "submodel_nodes": None if cfg.submodel_nodes is None else
            {str(g): list(nodes) for g, nodes in cfg.submodel_nodes.items()},
            "result_via": cfg.result_via,
            "node_workers": None if cfg.node_workers is None else
            {str(n): list(ws) for n, ws in cfg.node_workers.items()}}
        joined = (participants or {}).get(dep.job_id)
        if joined is not None:
            ps["jobs"][str(dep.job_id)]["participants"] = {str(r): ids for r, ids in enumerate(joined)}
        for i, w in enumerate(dep.workers):
            part = dict(job_id=dep.job_id, worker_id=i, ps_ip=a[dep.ps].ip,
                        labels=[[l.node_id, l.fan_in, l.priority] for l in dep.labels[w]],
                        submodel_sizes=list(dep.submodel_sizes), seed=seeds[k][i], all_seeds=seeds[k],
                        priorities=None if prio is None else [list(row) for row in prio],
                        round_fan_in=None if joined is None else
                        [list(row) for row in round_fan_ins(dep, w, joined)],
                        esa=(esa or {}).get(dep.job_id))
            host = dict(common, host=w, ip=a[w].ip, mac=a[w].mac, window=window, rounds=rounds[dep.job_id],
                        start_delay=starts.get(dep.job_id, 0.0), participants=joined, parts=[part],
                        compute=(compute or {}).get(dep.job_id, 0.0), jitter=jitter)
            if w in cfgs:
                # another PS's part of the same job (InArt's split): one agent, one Worker per part
                other = cfgs[w][1]
                if cfgs[w][0] != "worker" or any(other[f] != host[f] for f in ("rounds", "start_delay", "compute")) \
                        or joined is not None or other["participants"] is not None:
                    raise ValueError(f"host {w} would run two agents: jobs must use distinct hosts")
                other["parts"].append(part)
            else:
                cfgs[w] = ("worker", host)
    for host, (_, c) in cfgs.items():
        c.update(ready_file=str(workdir / f"{host}.ready"), out=str(workdir / f"{host}.json"),
                 done_file=str(workdir / f"{host}.done"), progress_file=str(workdir / f"{host}.progress"))
    for dep in fd.jobs:               # a worker sitting a round out waits on the others' progress
        peers = {str(i): str(workdir / f"{w}.progress") for i, w in enumerate(dep.workers)}
        for w in dep.workers:
            cfgs[w][1]["peer_progress"] = peers
    return cfgs


def round_fan_ins(dep: Deployment, worker: str, joined: list[list[int]]) -> list[list[int]]:
    """Per round, the fan-in ``worker``'s packets carry for each sub-model: how many of that
    round's participants send the sub-model to the same aggregation node (node 0, the PS: the
    plan's label, which the PS does not use)."""
    out = []
    for ids in joined:
        part = [dep.workers[i] for i in ids]
        row = []
        for g, lab in enumerate(dep.labels[worker]):
            row.append(lab.fan_in if lab.node_id == 0 else
                       sum(1 for p in part if dep.labels[p][g].node_id == lab.node_id))
        out.append(row)
    return out


def run_jobs(net: EmuNet, fd: FabricDeployment, workdir: Path, *, rounds: Mapping[int, int],
             window: int = DEFAULT_WINDOW, seed: int = 1, timeout: float = 300.0, rto: dict[str, float] | None = None,
             starts: Mapping[int, float] | None = None, priorities: Mapping[int, list[list[int]]] | None = None,
             participants: Mapping[int, list[list[int]]] | None = None,
             progress: Callable[[int], None] | None = None, compute: Mapping[int, float] | None = None,
             jitter: float = 0.0, esa: Mapping[int, dict[str, Any]] | None = None) -> list[RoundResult]:
    """Every job of ``fd`` at once: PSes and workers as processes in their hosts, job ``j``
    running ``rounds[j]`` rounds from ``starts[j]`` s after the common start (``timeout``
    bounds each round). ``progress(n)`` is called as rounds complete (n: newly completed
    rounds, summed over jobs). One result per job, in ``fd.jobs`` order."""
    workdir.mkdir(parents=True, exist_ok=True)
    for f in workdir.glob("*"):
        if f.is_file():
            f.unlink()
    starts = dict(starts or {})
    seeds = [job_seeds(seed, k, len(d.workers)) for k, d in enumerate(fd.jobs)]
    cfgs = _agent_configs(fd, workdir, window=window, seeds=seeds, timeout=timeout, rto=rto, rounds=rounds,
                          starts={d.job_id: starts.get(d.job_id, 0.0) for d in fd.jobs}, priorities=priorities or {},
                          lanes=net.lanes, participants=participants, compute=compute, jitter=jitter, esa=esa,
                          # the v1model program's nodes keep their results (rule 8), the TNA one's not
                          node_tries=NODE_TRIES_KEPT if net.arch == "v1model" else NODE_TRIES)
    procs = {}
    for host, (role, c) in cfgs.items():
        path = workdir / f"{host}.config.json"
        path.write_text(json.dumps(c))
        log = open(workdir / f"{host}.log", "w")
        procs[host] = net.popen(host, [sys.executable, "-m", "emulation.agents", role, "--config", str(path)],
                                stdout=log, stderr=log)
        log.close()
    deadline = time.time() + 120
    while not all((workdir / f"{h}.ready").exists() for h in cfgs):
        for h, p in procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"agent {h} exited early: {(workdir / f'{h}.log').read_text()[-2000:]}")
        if time.time() > deadline:
            raise RuntimeError("agents not ready after 120 s")
        time.sleep(0.05)
    workers = [w for d in fd.jobs for w in d.workers]
    before = _link_counters(net)
    cpu0 = cpu_busy_seconds()
    t0 = time.time() + 0.3
    (workdir / "go").write_text(f"{t0}\n")
    # workers finish their rounds, then linger to answer the PS until every one is done
    per_round = timeout + max((compute or {}).values(), default=0.0) + jitter
    deadline = time.time() + 0.3 + max(starts.values(), default=0.0) + per_round * max(rounds.values()) + 30
    reported = 0
    while time.time() < deadline and not all((workdir / f"{w}.done").exists() or procs[w].poll() is not None
                                             for w in workers):
        if progress is not None:
            done = sum(min(_rounds_done(workdir / f"{w}.progress") for w in d.workers) for d in fd.jobs)
            if done > reported:
                progress(done - reported)
                reported = done
        time.sleep(0.05)
    wall = time.time() - t0
    cpu = cpu_busy_seconds() - cpu0
    done = _link_counters(net)
    (workdir / "finish").write_text("finish\n")
    for w in workers:
        try:
            procs[w].wait(30)
        except Exception:
            procs[w].kill()
    after = _link_counters(net)
    switches = set(net.topology.switches())
    switch_tx = sum(after[ab][0] - before[ab][0] for ab in after if ab[0] in switches and ab in before)
    rates = link_bits_per_s(net.topology, net.bw_scale) if net.bw_scale else {}
    busy = {ab: 8 * (done[ab][1] - before[ab][1]) / rates[ab] for ab in done if ab in before and ab in rates}
    busiest = max(busy, key=busy.__getitem__, default=None)
    for h, (role, _) in cfgs.items():
        if role == "ps":
            procs[h].terminate()                # the PS runs until told; SIGTERM → report
            procs[h].wait(30)
    reports = {}
    for h in cfgs:
        out = workdir / f"{h}.json"
        if not out.exists():
            raise RuntimeError(f"agent {h} wrote no report: {(workdir / f'{h}.log').read_text()[-2000:]}")
        reports[h] = json.loads(out.read_text())
    return [RoundResult(fd.scheme, [reports[w]["jobs"][str(d.job_id)] for w in d.workers], reports[d.ps],
                        switch_tx, wall, job=d.job_id, start=starts.get(d.job_id, 0.0),
                        busiest_link="→".join(busiest) if busiest else "",
                        busiest_link_seconds=busy[busiest] if busiest else 0.0, cpu_seconds=cpu) for d in fd.jobs]


def _rounds_done(progress_file: Path) -> int:
    try:
        return len(progress_file.read_text().split())
    except OSError:
        return 0


def run_allreduce(net: EmuNet, dep: Deployment, workdir: Path, *, window: int = DEFAULT_WINDOW, seed: int = 1,
                  timeout: float = 300.0, rto: dict[str, float] | None = None, rounds: int = 1) -> RoundResult:
    """``rounds`` all-reduce rounds of one deployment's job (see :func:`run_jobs`)."""
    fd = FabricDeployment(dep.scheme, [dep], dep.ops, {})
    return run_jobs(net, fd, workdir, rounds={dep.job_id: rounds}, window=window, seed=seed, timeout=timeout,
                    rto=rto)[0]


def fattree_setup(k: int, workers: int, mb: float, *, programmable_fraction: float = 0.2,
                  submodels: int = 4, seed: int = 0, hosts_per_edge: int | None = None) -> tuple[Topology, Job]:
    """A k-ary fat-tree and one job (workers on the first hosts, the PS on the last; switch
    memory = half the model, so no switch holds it all)."""
    topo = fat_tree(k, hosts_per_edge, programmable_fraction=programmable_fraction, seed=seed)
    return topo, place_jobs(topo, [JobSpec(mb, 1)], workers, submodels=submodels)[0]


# schemes the emulation can deploy (controller/deploy.py: one PS per job; placement plans, and
# routing plans aggregating where paths merge)
DEPLOYABLE = ("ps", "atp", "esa", "switchml", "goat", "goat-async", "goat-ilp", "geryon", "k-sgd", "aro", "inart", "l-inart",
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
               prepared: PreparedScheme | None = None, jitter: float = 0.0) -> SchemeRun:
    """Plan ``scheme`` for ``jobs`` (or take ``prepared``: :func:`prepare_scheme`'s, at any
    bandwidth scale), build a fresh Mininet net, install over P4Runtime and run every job's
    rounds. ``pool``: aggregators per switch (small pools make jobs contend: ESA's setting);
    each worker computes its spec's ``compute`` seconds per round plus U(0, ``jitter``). ESA's
    workers evaluate Eq. 1 each round on what they measured (:func:`esa_inputs`)."""
    if prepared is None:
        prepared = prepare_scheme(topo, jobs, specs, scheme, bw_scale=bw_scale, window=window, seed=seed, pool=pool,
                                  switch=switch, log=log)
    fd, prio, joined = prepared.deployment, prepared.priorities, prepared.participants
    bounds = {j: b.at(bw_scale / prepared.bw_scale) for j, b in prepared.bounds.items()}
    log(f"[{scheme}] link-rate ideal per round: " + ", ".join(
        f"job {j} {b.seconds:.3f} s ({b.link})" for j, b in sorted(bounds.items())))
    net = EmuNet(topo, bw_scale=bw_scale, log_dir=workdir / "logs", switch=switch)
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
                           esa=esa_inputs(fd, spec, bounds, jitter) if scheme == "esa" else None)
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
    return SchemeRun(scheme, results, fd, entries, net.lanes, bounds, dropped, loss)


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


def spec_of(specs: list[JobSpec], job_id: int) -> JobSpec:
    """The spec of job ``job_id`` (ids 1..n as place_jobs gives them), or of the job a multi-PS
    part (id + k·PART_JOB_ID_STRIDE) belongs to."""
    return specs[job_id % PART_JOB_ID_STRIDE - 1]


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


def host_link_round_seconds(submodel_sizes: list[int], link_mbps: float, lanes: int = LANES) -> float:
    """A worker's frames (Ethernet + IPv4 + UDP + INA header + lanes) back to back on its own
    host link: the round of a fabric where no link is shared (results.csv's host_link_s and
    ratio_to_host_link; the link-rate ideal is link_bounds')."""
    frames = sum(-(-n // lanes) for n in submodel_sizes)
    return frames * (UDP_OVERHEAD + HEADER_LEN + 4 * lanes) * 8 / (link_mbps * 1e6)


@dataclass(frozen=True)
class LinkBound:
    """The link-rate ideal of a job's round."""
    seconds: float            # the busiest link's bytes at its rate (mean over the job's rounds)
    link: str                 # that link in the job's first round, "from→to"
    busiest_bytes: float = 0.0   # what that link carries in a round (mean over the rounds)
    total_bytes: float = 0.0     # what all links carry in a round of the jobs running beside it: the
                                 # frames the machine's switches, hosts and kernel handle (emulation.calibrate)

    def at(self, factor: float) -> "LinkBound":
        """The same traffic on links ``factor`` times slower."""
        return replace(self, seconds=self.seconds * factor)


def link_bounds(topo: Topology, fd: FabricDeployment, specs: list[JobSpec], *, bw_scale: float,
                lanes: int = LANES, window: int = DEFAULT_WINDOW,
                participants: Mapping[int, list[list[int]]] | None = None) -> dict[int, LinkBound]:
    """Per job id, the least time a round can take at link rate: every link the job uses has to
    carry what the deployment puts on it in a lossless round — first copies to their aggregation
    nodes, partials, results multicast or unicast by the PS — and no link moves more than its
    rate. The traffic is counted, not modelled: the in-process twin runs one round through the
    real program and ``fd``'s tables, pools included: a fragment that collides goes on to the
    PS on the links here too, so a plan the pools cannot hold has a longer ideal. Jobs that start together with the same size
    and rounds run their rounds side by side, so a shared link carries all of theirs; any other
    job counts alone. GOAT-Async: each round with its participants, the mean over rounds. A
    worker's own host link (:func:`host_link_round_seconds`) is one of the links, so this is
    never less than that."""
    bits_per_s = link_bits_per_s(topo, bw_scale)
    side_by_side = len({(sp.start, sp.mb, sp.rounds) for sp in specs}) == 1
    groups: dict[int, list[Deployment]] = {}        # jobs whose rounds overlap (a job's parts share its spec)
    for dep in fd.jobs:
        groups.setdefault(0 if side_by_side else dep.job_id % PART_JOB_ID_STRIDE, []).append(dep)
    joined = participants or {}
    traffic: dict[tuple, dict[tuple[str, str, int], int]] = {}     # members → link bytes of one round
    bounds: dict[int, LinkBound] = {}
    for deps in groups.values():
        ids = {d.job_id for d in deps}
        per_round: dict[int, list[tuple[float, str, int, int]]] = {d.job_id: [] for d in deps}
        for rnd in range(spec_of(specs, deps[0].job_id).rounds):
            members = {d.job_id: (joined[d.job_id][rnd] if d.job_id in joined else list(range(len(d.workers))))
                       if d.job_id in ids else [] for d in fd.jobs}
            key = tuple((j, tuple(m)) for j, m in sorted(members.items()))
            if key not in traffic:
                traffic[key] = _round_traffic(topo, fd, members, joined, rnd, lanes, window)
            by_link: dict[tuple[str, str], int] = {}
            for (a, b, _), n in traffic[key].items():
                by_link[(a, b)] = by_link.get((a, b), 0) + n
            for d in deps:
                used = [(a, b) for (a, b, j), n in traffic[key].items() if j == d.job_id and n]
                busiest = max(used, key=lambda ab: by_link[ab] / bits_per_s[ab])
                per_round[d.job_id].append((8 * by_link[busiest] / bits_per_s[busiest], "→".join(busiest),
                                            by_link[busiest], sum(by_link.values())))
        for job_id, rows in per_round.items():
            n = len(rows)
            bounds[job_id] = LinkBound(sum(r[0] for r in rows) / n, rows[0][1], sum(r[2] for r in rows) / n,
                                       sum(r[3] for r in rows) / n)
    return bounds


def _round_traffic(topo: Topology, fd: FabricDeployment, members: Mapping[int, list[int]],
                   joined: Mapping[int, list[list[int]]], rnd: int, lanes: int,
                   window: int) -> dict[tuple[str, str, int], int]:
    """Link bytes of one lossless in-process round of ``fd`` with ``members`` (job → worker ids)
    running; a GOAT-Async job carries round ``rnd``'s fan-ins and its PS expects that round's
    participants. The parts of a job split over several PSes share their workers' hosts, which
    the twin runs one agent each on: they run one after the other and their bytes add up (with a
    pool that never collides, no part changes another's traffic). Raises RuntimeError unless
    every running job completes the round exactly."""
    deps = []
    for dep in fd.jobs:
        if dep.job_id in joined:
            labels = {w: round_labels(dep.labels[w], None, rnd, round_fan_ins(dep, w, joined[dep.job_id]))
                      for w in dep.workers}
            dep = replace(dep, labels=labels, job_config=replace(dep.job_config,
                                                                 participants={0: list(members[dep.job_id])}))
        deps.append(dep)
    batches: list[list[int]] = []           # job ids running together: no worker host twice
    for dep in deps:
        if members[dep.job_id]:
            hosts = {dep.workers[i] for i in members[dep.job_id]}
            batch = next((b for b in batches if not any(hosts & set(d.workers) for d in deps if d.job_id in b)), None)
            if batch is None:
                batches.append(batch := [])
            batch.append(dep.job_id)
    total: dict[tuple[str, str, int], int] = {}
    for batch in batches:
        running = {j: (m if j in batch else []) for j, m in members.items()}
        results = run_inprocess(topo, replace(fd, jobs=deps), rounds={d.job_id: 1 for d in deps}, lanes=lanes,
                                window=window, members=running)
        for dep, res in zip(deps, results):
            if running[dep.job_id] and not (len(res.rounds) == 1 and res.exact):
                raise RuntimeError(f"link bound of {fd.scheme}: job {dep.job_id}'s lossless in-process round "
                                   "did not complete exactly")
        for key, n in results[0].report.link_bytes.items():
            total[key] = total.get(key, 0) + n
    return total


def summarise(run: SchemeRun, specs: list[JobSpec], loss: float, link_mbps: float) -> list[dict[str, Any]]:
    """results.csv rows: one per (scheme, job)."""
    rows = []
    for res, dep in zip(run.jobs, run.deployment.jobs):
        spec = spec_of(specs, res.job)
        n_rounds = max(1, len(res.per_round()))
        # fragments the workers sent as first copies (GOAT-Async: only in the rounds they joined)
        frags = sum(w["fragments"] * sum(1 for r in w["rounds"] if r.get("joined", True)) for w in res.workers)
        host_link = host_link_round_seconds(dep.submodel_sizes, link_mbps, run.lanes)
        bound = run.bounds[res.job]
        mean = res.completion / n_rounds
        # the workers' computation per round (the slowest worker's), outside the link-rate ideal
        compute = sum(max(w["rounds"][r].get("compute_seconds", 0.0) for w in res.workers)
                      for r in range(len(res.per_round()))) / n_rounds
        busy = res.busiest_link_seconds / res.wall_seconds if res.wall_seconds else 0.0
        rows.append({
            "scheme": run.scheme, "job": res.job, "workers": len(res.workers), "mb": spec.mb, "loss": loss,
            "start_s": spec.start, "rounds": len(res.per_round()), "jct_s": round(res.completion, 3),
            "mean_round_s": round(mean, 3), "ideal_round_s": round(bound.seconds, 4),
            "compute_s": round(compute, 3),
            "ratio_to_ideal": round((mean - compute) / bound.seconds, 2), "busiest_link": bound.link,
            "host_link_s": round(host_link, 4), "ratio_to_host_link": round(mean / host_link, 2),
            "link_busy": f"{res.busiest_link_seconds / res.wall_seconds:.0%} {res.busiest_link}" if res.wall_seconds else "",
            "busy_share": round(busy, 3),
            # under BUSY_LINK_BOUND the busiest link idled much of the run: the CPU set the pace
            "pace": "links" if busy >= BUSY_LINK_BOUND else "CPU",
            "exact": res.exact,
            "ps_rx_packets": res.ps["rx_packets"], "ps_rx_bytes": res.ps["rx_bytes"],
            "ps_rx_mb": round(res.ps["rx_bytes"] / 1e6, 3),
            "ina_fraction": round(ina_fraction(res.ps["received"], frags), 4),
            "preemptions": res.ps["received"].get("preempted", 0),
            "switch_tx_packets": res.switch_tx,
            "worker_fragments": frags,
            "worker_resent": sum(w["resent"] for w in res.workers),
            # the impairment's drops over the whole net (every job of the run) beside the resends
            "dropped": "" if run.dropped is None else run.dropped,
            "resends_per_drop": (round(sum(w["resent"] for w in res.workers) / run.dropped, 2)
                                 if run.dropped else ""),
            "ps_results_sent": res.ps["results_sent"],
            "ina_switches": " ".join(f"{n}:{dep.levels[n]}" for n in dep.ina_switches),
            "table_entries": run.entries,
        })
    return rows


ROUND_COLUMNS = ["scheme", "loss", "job", "round", "seconds", "exact", "worker_resent", "worker_fast_resent",
                 "participants"]


def round_rows(runs: list[SchemeRun]) -> list[dict[str, Any]]:
    """rounds.csv's rows: one per (scheme, job, round)."""
    return [{"scheme": run.scheme, "loss": run.loss, "job": res.job,
             **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}}
            for run in runs for res in run.jobs for r in res.per_round()]


def write_rounds(runs: list[SchemeRun], out: Path) -> None:
    """rounds.csv: one row per (scheme, job, round)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "rounds.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=ROUND_COLUMNS)
        wr.writeheader()
        wr.writerows(round_rows(runs))


SUMMARY_COLUMNS = ["scheme", "job", "mb", "rounds", "jct_s", "mean_round_s", "ideal_round_s", "ratio_to_ideal",
                   "busiest_link", "ratio_to_host_link", "link_busy", "pace", "exact", "ps_rx_mb", "ina_fraction", "preemptions",
                   "worker_resent", "dropped", "resends_per_drop", "ina_switches"]


def add_x_lossless(rows: list[dict[str, Any]]) -> None:
    """Each row's ``x_lossless``: its mean round over the lossless row of the same scheme and
    job ("" without one)."""
    lossless = {(r["scheme"], r["job"]): r["mean_round_s"] for r in rows if r["loss"] == 0}
    for r in rows:
        base = lossless.get((r["scheme"], r["job"]))
        r["x_lossless"] = round(r["mean_round_s"] / base, 2) if base else ""


def pace_notes(rows: list[dict[str, Any]]) -> list[str]:
    """Per results row, who set the pace (emulation.calibrate.pace_note): CPU-bound rows say so."""
    return [pace_note(r["busy_share"], r["ratio_to_ideal"],
                      f"{r['scheme']} job {r['job']}" + (f" at {r['loss']:g} loss" if "x_lossless" in r else ""))
            for r in rows]


def write_outputs(rows: list[dict[str, Any]], runs: list[SchemeRun], out: Path, title: str, png: str,
                  notes: Sequence[str] = ()) -> None:
    """results.csv, summary.md (with ``notes``: how the link rate was chosen, who set the pace)
    and a PNG (emulation.plots.plot_run): mean round vs its link-rate ideal, JCT, time per round,
    PS ingress, in-network fraction, resends and preemptions."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    cols = SUMMARY_COLUMNS if "x_lossless" not in rows[0] else (
        SUMMARY_COLUMNS[:1] + ["loss"] + SUMMARY_COLUMNS[1:6] + ["x_lossless"] + SUMMARY_COLUMNS[6:])
    lines = [f"# {title}", "", *comparison_markdown(rows), "", "## Per job", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    if notes:
        lines += [""] + [f"* {n}" for n in notes]
    lines += ["", "jct_s: the job's slowest worker, its first send → last result of its last round "
              "(mean_round_s: that over the rounds; per round: rounds.csv); ideal_round_s: the link-rate ideal, "
              "the busiest link's bytes in a lossless round of the plan (jobs side by side) at its rate "
              "(busiest_link: which one); ratio_to_ideal: mean round / that; ratio_to_host_link: mean round / a "
              "worker's frames back to back on its own link (the ideal of a fabric sharing no link); link_busy: the "
              "link that carried the most (at its rate) from the start until every worker was done, measured on "
              "the switch interfaces, and the share of that time it was busy; pace: links if that share was at least "
              f"{BUSY_LINK_BOUND:.0%}, else CPU (the machine, not the links, set the round times); exact: every worker, every round; ps_rx: what "
              "reached the job's PS (bytes with Ethernet/IPv4/UDP headers); ina_fraction: share of the workers' "
              "fragments that switches aggregated (not received plain by the PS); preemptions: partials the "
              "PS received because ESA swapped them out; worker_resent: fragments the job's workers resent; dropped: "
              "frames the switches' loss impairment (--loss) dropped over the whole net, every job and frame kind; "
              "resends_per_drop: worker_resent / dropped"
              + ("; x_lossless: mean round / the same scheme and job's lossless mean round, on the same links."
                 if "x_lossless" in cols else "."), ""]
    (out / "summary.md").write_text("\n".join(lines))
    # a run of several losses plots each (scheme, loss) as its own series
    label = {(run.scheme, run.loss): run.label or run.scheme for run in runs}
    plot_run([{**r, "scheme": label.get((r["scheme"], r["loss"]), r["scheme"])} for r in rows],
             [{**r, "scheme": label[(r["scheme"], r["loss"])]} for r in round_rows(runs)], out / png, title)


def parse_list(text: str, kind: Callable[[str], Any], what: str) -> list[Any]:
    try:
        values = [kind(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{what}: expected a comma-separated list of numbers, got {text!r}") from None
    if not values:
        raise ValueError(f"{what}: empty list")
    return values


def check_args(args: argparse.Namespace) -> tuple[Topology, list[Job], list[JobSpec], list[str]]:
    """Everything a run needs, validated before any network is built (ValueError: one line)."""
    if args.topology == "fattree" and (args.k < 2 or args.k % 2):
        raise ValueError(f"--k {args.k}: a fat-tree needs an even k >= 2")
    if args.topology == "leaf-spine" and args.k < 1:
        raise ValueError(f"--k {args.k}: a leaf-spine needs k >= 1")
    args.losses = parse_list(str(args.loss), float, "--loss")
    if not all(0.0 <= loss < 1.0 for loss in args.losses):
        raise ValueError(f"--loss {args.loss}: drop rates in [0, 1)")
    if len(set(args.losses)) != len(args.losses):
        raise ValueError(f"--loss {args.loss}: a rate is listed twice")
    if args.arch == "tna" and args.switch == "bmv2":
        raise ValueError("--arch tna runs on p4sim (bmv2 has no TNA target)")
    pool_limit = SWITCH_KINDS[switch_kind(args)].pool_limit
    if args.switch == "bmv2":
        why = bmv2_unavailable_reason()
        if why:
            raise ValueError(why)
        if any(args.losses):
            raise ValueError("--loss needs --switch p4sim (bmv2 has no loss injection)")
    if not 0.0 <= args.programmable <= 1.0:
        raise ValueError(f"--programmable {args.programmable}: a fraction in [0, 1]")
    for name in ("jobs", "workers", "rounds", "window"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} {getattr(args, name)}: must be at least 1")
    if args.rto_max < args.rto_min:
        raise ValueError(f"--rto-max {args.rto_max}: below --rto-min {args.rto_min}")
    args.link_mbps = parse_link_mbps(args.link_mbps)
    for name in ("timeout", "rto_min"):
        if getattr(args, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(args, name)}: must be positive")
    if args.workers > MAX_WORKERS:
        raise ValueError(f"--workers {args.workers}: at most {MAX_WORKERS} (the INA header's worker bitmap)")
    if args.pool is not None and (not 1 <= args.pool <= pool_limit or args.pool & (args.pool - 1)):
        raise ValueError(f"--pool {args.pool}: a power of two in 1..{pool_limit} (the {args.arch} program's registers)")
    if args.stagger < 0:
        raise ValueError(f"--stagger {args.stagger}: must not be negative")
    mbs = parse_list(args.mb, float, "--mb")
    if any(m <= 0 for m in mbs):
        raise ValueError(f"--mb {args.mb}: sizes must be positive")
    schemes = [s.strip() for s in args.schemes.split(",") if s.strip()]
    if not schemes:
        raise ValueError("--schemes: empty list")
    bad = [s for s in schemes if s not in DEPLOYABLE]
    if bad:
        known = set(available())
        what = ", ".join(f"{s} ({'not deployable in the emulation yet' if s in known else 'unknown'})" for s in bad)
        raise ValueError(f"--schemes: {what}; deployable: {', '.join(DEPLOYABLE)}")
    if args.hosts_per_edge is not None and args.hosts_per_edge < 1:
        raise ValueError(f"--hosts-per-edge {args.hosts_per_edge}: must be at least 1")
    topo = build_topology(args.topology, k=args.k, hosts_per_edge=args.hosts_per_edge,
                          programmable=args.programmable, seed=args.seed)
    computes = parse_list(args.compute, float, "--compute")
    if any(c < 0 for c in computes) or args.jitter < 0:
        raise ValueError(f"--compute {args.compute}, --jitter {args.jitter}: must not be negative")
    specs = [JobSpec(mbs[k % len(mbs)], args.rounds, k * args.stagger, computes[k % len(computes)])
             for k in range(args.jobs)]
    if args.switch_mb is not None and args.switch_mb <= 0:
        raise ValueError(f"--switch-mb {args.switch_mb}: must be positive")
    if args.ps_per_job < 1:
        raise ValueError(f"--ps-per-job {args.ps_per_job}: must be at least 1")
    if args.ps_per_job > 1 and any(s not in MULTI_PS for s in schemes):
        raise ValueError(f"--ps-per-job {args.ps_per_job}: only {', '.join(MULTI_PS)} split a model over "
                         f"several PSes; not {', '.join(s for s in schemes if s not in MULTI_PS)}")
    jobs = place_jobs(topo, specs, args.workers, ps_per_job=args.ps_per_job,
                      switch_bytes=None if args.switch_mb is None else int(args.switch_mb * 1e6))
    kind = SWITCH_KINDS[switch_kind(args)]
    memory = min((topo.nodes[s].memory_bytes for s in topo.programmable_switches()), default=0)
    held = pool_for_memory(memory, kind.lanes, kind.pool_limit)
    if args.pool is None:
        args.pool = held
    elif args.pool > held:
        raise ValueError(f"--pool {args.pool}: the planners give each switch {memory / 1e6:g} MB, which holds "
                         f"{held} aggregators of {kind.lanes} lanes; raise --switch-mb or lower --pool")
    return topo, jobs, specs, schemes


def pool_for_memory(memory_bytes: float, lanes: int, limit: int) -> int:
    """The aggregators a switch with ``memory_bytes`` of aggregator memory holds: ``lanes``
    int32 sums each, a power of two (Tofino masks the hash), at least 1, at most ``limit``
    (the program's registers) — so the pool is the memory the planners placed sub-models in."""
    n = max(1, int(memory_bytes // (4 * lanes)))
    return min(limit, 1 << (n.bit_length() - 1))


def switch_kind(args: argparse.Namespace) -> str:
    """emulation.net.SWITCH_KINDS key for --switch and --arch."""
    return "p4sim-tna" if args.arch == "tna" else args.switch


def calibrate_link_rate(topo: Topology, jobs: list[Job], specs: list[JobSpec], prepared: Mapping[str, PreparedScheme],
                        *, workdir: Path, window: int, seed: int, timeout: float, rto: dict[str, float] | None,
                        pool: int, switch: str, loss: float = 0.0,
                        log: Callable[[str], None] = print) -> Choice:
    """``--link-mbps auto``: one lossless probe round of every job at once, on links too fast to
    matter (PROBE_MBPS), with the scheme whose traffic leans on the CPU most (most bytes over all
    links per byte on its busiest one); with ``loss``, a probe of every scheme at that loss, whose
    CPU time over the scheme's lossless one (the first probe's, scaled by the bytes) scales the CPU
    its rounds need (emulation.calibrate.loss_cpu_factor); then
    emulation.calibrate.choose_link_mbps over every scheme's twin counts (``prepared``)."""
    ref = prepared[next(iter(prepared))].bw_scale
    ref_mbps = bw_scale_for(topo, 1.0) / ref
    traffic: dict[str, Traffic] = {}
    scheme_of: dict[str, str] = {}            # traffic's names -> their scheme
    for name, p in prepared.items():
        for j, x in sorted(p.bounds.items()):
            key = f"{name} job {j}" if len(p.bounds) > 1 else name
            traffic[key], scheme_of[key] = Traffic(x.seconds, x.total_bytes), name
    probe = min(prepared, key=lambda n: min(b.seconds / b.total_bytes for b in prepared[n].bounds.values()))
    probe_specs = [JobSpec(sp.mb, 1) for sp in specs]            # one round, all jobs side by side
    bw_probe = bw_scale_for(topo, PROBE_MBPS)
    runs = dict(window=window, seed=seed, timeout=timeout, rto=rto, pool=pool, switch=switch)

    def prepare(name: str) -> PreparedScheme:
        return prepare_scheme(topo, jobs, probe_specs, name, bw_scale=bw_probe, window=window, seed=seed, pool=pool,
                              switch=switch, log=lambda _: None)

    def probe_total(pp: PreparedScheme) -> float:
        # jobs side by side share one group total; jobs counted alone add up
        totals = {round(b.total_bytes) for b in pp.bounds.values()}
        return pp.bounds[next(iter(pp.bounds))].total_bytes if len(totals) == 1 else sum(
            b.total_bytes for b in pp.bounds.values())

    log(f"[auto] probe: {probe}, one round of every job at {PROBE_MBPS:g} Mb/s (lossless), to time this machine")
    pp = prepare(probe)
    t = time.time()
    run = run_scheme(topo, jobs, probe_specs, probe, loss=0.0, workdir=workdir, bw_scale=bw_probe, log=lambda _: None,
                     prepared=pp, **runs)  # type: ignore[arg-type]
    if not all(r.exact for r in run.jobs):
        raise RuntimeError(f"--link-mbps auto: the probe round of {probe} was not exact")
    seconds = max(r.completion for r in run.jobs)
    total = probe_total(pp)
    log(f"[auto] probe round {seconds:.2f} s ({time.time() - t:.0f} s with the network's set-up), "
        f"{total / 1e6:.1f} MB over all links, {run.jobs[0].cpu_seconds:.2f} s of CPU")
    factors = dict.fromkeys(traffic, 1.0)
    if loss > 0:
        for name in prepared:
            log(f"[auto] probe: {name}'s round at {loss:g} loss, for the CPU time its recovery adds")
            pp_lossy = pp if name == probe else prepare(name)
            lossy = run_scheme(topo, jobs, probe_specs, name, loss=loss, workdir=workdir, bw_scale=bw_probe,
                               log=lambda _: None, prepared=pp_lossy, **runs)  # type: ignore[arg-type]
            if not all(r.exact for r in lossy.jobs):
                raise RuntimeError(f"--link-mbps auto: the probe round of {name} at {loss:g} loss was not exact")
            lossless_cpu = run.jobs[0].cpu_seconds * probe_total(pp_lossy) / total
            factor = loss_cpu_factor(lossless_cpu, lossy.jobs[0].cpu_seconds)
            log(f"[auto] {name} at {loss:g} loss: {max(r.completion for r in lossy.jobs):.2f} s, "
                f"{lossy.jobs[0].cpu_seconds:.2f} s of CPU ({factor:.2f}× its lossless round's)")
            factors.update({key: factor for key, s in scheme_of.items() if s == name})
    return choose_link_mbps(seconds, total, ref_mbps, traffic, loss=loss, cpu_factor=factors)


RTO_MIN, RTO_MAX = 0.2, 0.5      # the hosts' RTO floor and ceiling on LINK_MBPS links (--rto-min/--rto-max)


def host_timers(rto_min: float, rto_max: float, link_mbps: float) -> dict[str, float]:
    """The hosts' RTO settings on links of ``link_mbps``: the initial RTO and the ceiling are
    the given ones at LINK_MBPS (their reference) and grow as slower links stretch every round
    trip (time dilation: a 1 Mb/s fabric is a 20 Mb/s one slowed down 20x, its round trips with
    it); the floor guards against this machine's scheduling delays, which do not stretch, and
    stays."""
    dilation = max(1.0, LINK_MBPS / link_mbps)
    initial = min(max(rto_min, 0.3), rto_max)
    return {"minimum": rto_min, "initial": initial * dilation, "maximum": rto_max * dilation}


def cmd_run(args: argparse.Namespace) -> int:
    try:
        topo, jobs, specs, schemes = check_args(args)
    except ValueError as e:
        print(f"emulation.run: {e}", file=sys.stderr)
        return 2
    why = mininet_unavailable_reason()
    if why:
        print(f"emulation.run: {why}", file=sys.stderr)
        return 2
    out = Path(args.out)
    auto = args.link_mbps == "auto"
    ref_mbps = LINK_MBPS if auto else float(args.link_mbps)
    print(f"{topo.name}: {len(topo.switches())} switches ({', '.join(topo.programmable_switches())} programmable), "
          f"{len(topo.hosts())} hosts, " + ("link rate: auto" if auto else f"{ref_mbps:g} Mb/s links")
          + f"; machine: {machine()}")
    for j, sp in zip(jobs, specs):
        print(f"  {j.name}: workers {', '.join(j.workers)}, PS {', '.join(j.ps)}; {sp.mb} MB in {len(j.submodels)} "
              f"sub-models, {sp.rounds} rounds from t={sp.start:g} s")
    common = dict(window=args.window, seed=args.seed + 1, pool=args.pool, switch=switch_kind(args))
    runs_with = dict(common)
    ref_scale = bw_scale_for(topo, ref_mbps)
    prepared = {s: prepare_scheme(topo, jobs, specs, s, bw_scale=ref_scale, log=print, **common)  # type: ignore[arg-type]
                for s in schemes}
    notes: list[str] = []
    if auto:
        try:
            choice = calibrate_link_rate(topo, jobs, specs, prepared, workdir=out / "probe", timeout=args.timeout,
                                         rto=host_timers(args.rto_min, args.rto_max, PROBE_MBPS),
                                         loss=max(args.losses), log=print,
                                         **runs_with)  # type: ignore[arg-type]
        except (RuntimeError, ValueError) as e:
            print(f"emulation.run: {e}", file=sys.stderr)
            return 1
        args.link_mbps = choice.link_mbps
        why_rate = choice.explain(f"a probe round on {PROBE_MBPS:g} Mb/s links ({machine()})")
        print(why_rate)
        notes.append(why_rate)
    link_mbps = float(args.link_mbps)
    bw_scale = bw_scale_for(topo, link_mbps)
    rto = host_timers(args.rto_min, args.rto_max, link_mbps)
    if link_mbps < LINK_MBPS:
        timers = (f"hosts' RTO: initial {rto['initial']:.2f} s, ceiling {rto['maximum']:.2f} s ({LINK_MBPS:g}/"
                  f"{link_mbps:g} times those at {LINK_MBPS:g} Mb/s: slower links stretch the round trips), "
                  f"floor {rto['minimum']:g} s")
        print(timers)
        notes.append(timers)
    runs: list[SchemeRun] = []
    rows: list[dict[str, Any]] = []
    per_scheme = sum(s.rounds for s in specs)
    several = len(args.losses) > 1
    with tqdm(total=len(schemes) * len(args.losses) * per_scheme, unit="round", disable=args.quiet,
              file=sys.stderr) as bar:
        for scheme in schemes:
            for loss in args.losses:
                label = f"{scheme} at {loss:g} loss" if several else scheme
                bar.set_description(label)
                shown = bar.n
                run = run_scheme(topo, jobs, specs, scheme, loss=loss, workdir=out / "runs", bw_scale=bw_scale,
                                 timeout=args.timeout, rto=rto, log=tqdm.write, progress=bar.update,
                                 prepared=prepared[scheme], jitter=args.jitter, **runs_with)  # type: ignore[arg-type]
                bar.update(shown + per_scheme - bar.n)          # rounds a failed job never reported
                if several:
                    run.label = label
                runs.append(run)
                new = summarise(run, specs, loss, link_mbps)
                for n in pace_notes(new):
                    tqdm.write(f"[{label}] {n}")
                rows += new
    if several:
        add_x_lossless(rows)
    write_rounds(runs, out)
    title = (f"{topo.name}, {args.jobs} job(s) × {args.workers} workers, {args.mb} MB, loss {', '.join(map(str, args.losses))}, "
             f"{link_mbps:g} Mb/s links{' (auto)' if auto else ''}; {machine()}")
    png = f"{args.topology}.png"
    write_outputs(rows, runs, out, title, png, notes + pace_notes(rows))
    print((out / "summary.md").read_text())
    print(f"wrote {out / 'results.csv'}, {out / 'rounds.csv'}, {out / 'summary.md'}, {out / png}")
    return 0 if all(r["exact"] for r in rows) else 1


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m emulation.run",
        description="Run INA schemes on an emulated network: Mininet hosts and links, p4sim switches running "
                    "p4src/v1model/ina.p4, plans from controller.schemes installed over P4Runtime, worker and PS "
                    "agents in the hosts. Each scheme gets a fresh network; every job runs its rounds with fresh "
                    "gradients and every worker's result is checked exact. Needs root and Mininet.",
        epilog="example: python -m emulation.run fattree --jobs 2 --schemes ps,atp,esa,goat --rounds 5 --mb 0.25")
    ap.add_argument("topology", nargs="?", default="fattree", choices=list(TOPOLOGIES),
                    help="; ".join(f"{n}: {d}" for n, (_, d) in TOPOLOGIES.items()))
    ap.add_argument("--switch", choices=["p4sim", "bmv2"], default="p4sim",
                    help="the switch program runner: p4sim (default) or bmv2's simple_switch_grpc with p4c's "
                         "build of the same program (needs both on PATH; see docker/)")
    ap.add_argument("--arch", choices=["v1model", "tna"], default="v1model",
                    help="v1model (default): p4src/v1model/ina.p4 installed over P4Runtime; tna: "
                         "p4src/tna/ina.p4 (32 lanes per packet) installed over BfRuntime, as on Tofino")
    ap.add_argument("--k", type=int, default=4, help="fat-tree arity / leaf-spine size (default 4)")
    ap.add_argument("--hosts-per-edge", type=int, default=None,
                    help="hosts under each edge/leaf switch (fattree default k/2; more makes jobs share ToRs)")
    ap.add_argument("--programmable", type=float, default=0.2,
                    help="fraction of programmable switches (fattree, leaf-spine; GOAT: 20%%)")
    ap.add_argument("--jobs", type=int, default=1, help="jobs running at once (default 1)")
    ap.add_argument("--workers", type=int, default=6, help="workers per job (default 6)")
    ap.add_argument("--mb", default="2", help="gradient size per worker in MB (fp32); a comma list gives each "
                                              "job its own (cycled), e.g. 0.25,0.5")
    ap.add_argument("--stagger", type=float, default=0.0, help="job k starts k × this many seconds late")
    ap.add_argument("--compute", default="0", metavar="S[,S...]",
                    help="each worker's computation per round in seconds, before it sends the round's gradients "
                         "(a comma list gives each job its own, cycled; default 0)")
    ap.add_argument("--jitter", type=float, default=0.0, metavar="S",
                    help="each worker adds its own U(0, S) seconds to its computation every round, so a job's "
                         "workers reach the switch at different times (ESA §7.2.1; default 0)")
    ap.add_argument("--ps-per-job", type=int, default=1,
                    help="parameter servers per job (InArt: the plan splits each model over them; "
                         "each PS's part runs as job id + 1000·k in the results)")
    ap.add_argument("--schemes", default="goat,atp", help=f"comma list of: {', '.join(DEPLOYABLE)}")
    ap.add_argument("--switch-mb", type=float, default=None,
                    help="aggregator memory of each programmable switch in MB, as the planners see it "
                         "(default: half of the largest model per job)")
    ap.add_argument("--pool", type=int, default=None,
                    help="aggregators per switch (a power of two; default: the program's registers, "
                         "16384 v1model, 8192 tna). Small pools make jobs contend for them (ESA's setting)")
    ap.add_argument("--loss", default="0",
                    help="drop rate of every switch port (e.g. 0.01), or a comma-separated list (0,0.01,0.05): "
                         "each scheme then runs at every rate over the same links, and each row's x_lossless is "
                         "its mean round over the same scheme and job's round at rate 0 (when 0 is listed); "
                         "--link-mbps auto then keeps the highest rate's rounds link-bound")
    ap.add_argument("--link-mbps", default=str(LINK_MBPS), metavar="MBPS|auto",
                    help=f"rate of the fastest link (Mb/s, default {LINK_MBPS:g}); others scale with it. auto: a "
                         f"probe round on {PROBE_MBPS:g} Mb/s links times this machine, and the rate is chosen so "
                         "that every scheme's busiest link needs 1.6x the CPU time of its round (with --loss: "
                         "each scheme's round at the highest loss, probed too; time dilation: "
                         "slower links, the same comparison, the links the bottleneck); it is printed with the "
                         "reason. Every run reports whether its busiest link was at least 80%% busy (pace: links) "
                         "or not (pace: CPU, the times measure this machine)")
    ap.add_argument("--window", type=int, default=DEFAULT_WINDOW,
                    help=f"first copies awaiting a result per worker (default {DEFAULT_WINDOW}, as "
                         "benchmarks/bench_loss.py; make run-fattree runs 8); retransmitted fragments, and first "
                         "copies unanswered for 1.5 path RTTs, run beside the window, up to as many again. In the "
                         "in-process twin (bench_loss.py, 1.3 Mb/s) 10 did better than 8 at 5%% loss (GOAT / ATP "
                         "1.77 / 1.92x vs 1.97 / 2.15x the lossless round) and as well at 1%%; lossless, on a 2-core "
                         "machine, make run-fattree's ARO and InArt rounds were ~8%% slower with 10")
    ap.add_argument("--timeout", type=float, default=300.0, help="per-round limit (s)")
    ap.add_argument("--rto-min", type=float, default=RTO_MIN,
                    help="floor of the hosts' retransmission timeout (s, default 0.2, Linux TCP's): most "
                         "losses are found from later fragments' results, not by the timer, and a lower floor "
                         "fires spuriously when the machine is busy (0.03: 278-382 resends in a lossless "
                         "5-round GOAT run at load 10, 0.2: none)")
    ap.add_argument("--rto-max", type=float, default=RTO_MAX,
                    help="ceiling of the hosts' retransmission timeout (s, default 0.5) on 20 Mb/s links; "
                         "slower links scale it and the initial RTO (0.3 s) by 20/rate, as they stretch every "
                         "round trip (at 1 Mb/s a 0.5 s ceiling, below the round trip of a window, set off "
                         "timeout storms). An aggregate's round-trip includes waiting for the other workers "
                         "(and their recoveries), which inflates TCP's estimate under loss; the ceiling keeps "
                         "recovery prompt")
    ap.add_argument("--rounds", type=int, default=1,
                    help="all-reduce rounds per job, each with fresh gradients (training iterations)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="results/fattree", help="output folder (default results/fattree)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--switch-procs", type=int, default=0, metavar="N",
                    help="run the p4sim switches in N `p4sim serve-many` processes instead of one "
                         "process each (default 0: one each)")
    args = ap.parse_args(argv)
    if args.switch_procs < 0 or (args.switch_procs and args.switch == "bmv2"):
        ap.error("--switch-procs: N >= 0, and only with p4sim switches")
    EmuNet.default_switch_procs = args.switch_procs
    os.chdir(Path(__file__).resolve().parent.parent)   # agents run `-m emulation.agents` from the repo
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
