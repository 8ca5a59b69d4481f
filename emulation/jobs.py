"""Deployed jobs on a Mininet network (emulation.net): every job's PS and worker agents
(emulation.agents) as processes in their hosts, started together and run for their rounds
(:func:`run_jobs`, :func:`run_allreduce`), each job's result (:class:`RoundResult`), and what
the switch interfaces counted on every link meanwhile (its busiest link, the machine's CPU time).
"""
from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from controller.deploy import Deployment, FabricDeployment, slot_pools
from hostlib.worker import DEFAULT_WINDOW, NODE_TRIES, NODE_TRIES_KEPT

from .bounds import LANES, link_bits_per_s, round_fan_ins
from .calibrate import cpu_busy_seconds
from .inprocess import job_seeds
from .net import EmuNet


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
                   node_tries: int = NODE_TRIES, loss_detection: str = "rack",
                   slots: bool = True, layered: bool = False) -> dict[str, tuple[str, dict]]:
    """host → (role, config) for every PS and worker of every job (PSes on one host merged).
    ``participants``: job → per round the worker ids taking part (GOAT-Async); the fan-in a
    worker's packets carry then counts that round's participants at its node. ``compute``: job →
    its workers' computation per round (s), each worker adding its own U(0, ``jitter``);
    ``esa``: job → the inputs its workers need to evaluate ESA's Eq. 1 on what they measure
    (emulation.agents.job_progress); ``node_tries``: each worker's retransmissions of a fragment
    to its node before the PS (hostlib.worker); ``slots``: SwitchML's workers follow the
    program's aggregator indexes (controller.deploy.slot_pools; v1model's hash only);
    ``layered``: workers send layer by layer as backpropagation computes them (hostlib.layers)."""
    go, finish = workdir / "go", workdir / "finish"
    most = max(rounds.values())
    common = {"lanes": lanes, "go_file": str(go), "timeout": timeout, "rto": rto or {}, "finish_file": str(finish),
              "node_tries": node_tries, "loss_detection": loss_detection, "layered": layered}
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
        pools = slot_pools(dep) if slots else None
        slot_cfg = None if pools is None else {str(n): list(p) for n, p in pools.items()}
        for i, w in enumerate(dep.workers):
            part = dict(job_id=dep.job_id, worker_id=i, ps_ip=a[dep.ps].ip,
                        labels=[[l.node_id, l.fan_in, l.priority] for l in dep.labels[w]],
                        submodel_sizes=list(dep.submodel_sizes), seed=seeds[k][i], all_seeds=seeds[k],
                        priorities=None if prio is None else [list(row) for row in prio],
                        round_fan_in=None if joined is None else
                        [list(row) for row in round_fan_ins(dep, w, joined)],
                        esa=(esa or {}).get(dep.job_id),
                        # SwitchML's hosts reuse a slot only after its result (v1model's hash)
                        slot_pools=slot_cfg)
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


def run_jobs(net: EmuNet, fd: FabricDeployment, workdir: Path, *, rounds: Mapping[int, int],
             window: int = DEFAULT_WINDOW, seed: int = 1, timeout: float = 300.0, rto: dict[str, float] | None = None,
             starts: Mapping[int, float] | None = None, priorities: Mapping[int, list[list[int]]] | None = None,
             participants: Mapping[int, list[list[int]]] | None = None,
             progress: Callable[[int], None] | None = None, compute: Mapping[int, float] | None = None,
             jitter: float = 0.0, esa: Mapping[int, dict[str, Any]] | None = None,
             loss_detection: str = "rack", layered: bool = False) -> list[RoundResult]:
    """Every job of ``fd`` at once: PSes and workers as processes in their hosts, job ``j``
    running ``rounds[j]`` rounds from ``starts[j]`` s after the common start (``timeout``
    bounds each round). ``progress(n)`` is called as rounds complete (n: newly completed
    rounds, summed over jobs); ``loss_detection``: the workers' (hostlib.worker.LOSS_DETECTION);
    ``layered``: they send layer by layer (hostlib.layers). One result per job, in ``fd.jobs`` order."""
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
                          node_tries=NODE_TRIES_KEPT if net.arch == "v1model" else NODE_TRIES,
                          loss_detection=loss_detection, slots=net.arch == "v1model", layered=layered)
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
