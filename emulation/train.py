"""Data-parallel training through p4sim switches in Mininet, INA against gloo.

    python -m emulation.train [--workers 4] [--steps 200] [--topology fattree] [--k 4]
                              [--scheme goat] [--jobs 1] [--model mlp] [--out results/training]

Builds the topology with p4sim switches (emulation.net.EmuNet), places the jobs on it (one per
model of ``--model``, or ``--jobs``; workers interleaved so jobs share ToRs) and plans them for
their models' gradient sizes (training.train_digits's MLP or CNN) as ``emulation.run`` does
(emulation.experiment.place_jobs, emulation.schemes.plan_scheme, controller.deploy.deploy_jobs), and
installs the plan over P4Runtime (emulation.install). Then, in the same network, every job at
once: its PS (``python -m training.ps``) in its host and one ``python -m training.train_digits
--allreduce ina`` per worker host — DDP with the INA communication hook, so every gradient
bucket crosses the switches as INA fragments, the jobs' fragments competing for the same
aggregators — and afterwards the same training with ``--allreduce gloo`` (DDP's own all-reduce,
TCP between the same hosts through the same switches), same seed. Writes under ``--out`` (one
folder per job when there are several, and an overview summary.md): losses.csv (per step: both
losses, both step times, INA's gradient check), training.png (both loss curves, their
difference, time per step), summary.md, and the workers' logs under runs/.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from controller.deploy import DEFAULT_POOL, Deployment, FabricDeployment, deploy_jobs, ina_fraction, lpm_path, next_hops
from controller.model import Job, Topology
from hostlib.protocol import MAX_WORKERS
from training.allreduce import InaJob
from training.launch import MODES, PNG, machine, merge, plot_jobs, read_rows, wait_workers, worker_command, write_report
from training.train_digits import DEFAULT_HIDDEN, MODELS, ModelSpec

from .experiment import LINK_MBPS, TOPOLOGIES, JobSpec, build_topology, bw_scale_for, place_jobs
from .install import install
from .net import EmuNet, mininet_unavailable_reason
from .calibrate import PROBE_MBPS, machine as machine_line, nice_floor, parse_link_mbps
from .bounds import link_bounds
from .run import RTO_MAX, RTO_MIN, host_timers
from .schemes import DEPLOYABLE, plan_scheme

GLOO_PORT = 29500
# --link-mbps auto: a mode's busiest link needs this many times the CPU time its probe step took.
# More than emulation.run's 1.6: a probe step on fast links understates what a step costs on slow
# ones (8 training processes beside 20 switches); with 1.6 (16 Mb/s here) INA's steps ran 1.42x
# their link time and INA 1.31x gloo, at 14 and 9 Mb/s 1.23x and 1.18x (1.49x and 1.54x gloo)
HEADROOM = 2.0


def ina_job(dep: Deployment, rto: dict[str, float] | None = None, first_round: int = 0) -> InaJob:
    """The deployment as the workers' and PS's job description: addresses, plan labels,
    sub-model split, reminder routes (the Worker interleaves the sub-models: protocol.send_order).
    ``rto``: the hosts' timers, by default emulation.run's on LINK_MBPS links (:func:`host_timers`:
    a 0.2 s floor, so the machine's scheduling delays fire no spurious timeouts); ``first_round``:
    where the workers' rounds start (:func:`next_first_round` after a run on the same switches)."""
    a, cfg = dep.addresses, dep.job_config
    nodes = None if cfg.submodel_nodes is None else {g: list(n) for g, n in cfg.submodel_nodes.items()}
    return InaJob(dep.job_id, a[dep.ps].ip, [(a[w].ip, a[w].mac) for w in dep.workers],
                  [list(dep.labels[w]) for w in dep.workers], list(dep.submodel_sizes), dict(cfg.reminder_via),
                  nodes, ps_mac=a[dep.ps].mac, rto=dict(rto or host_timers(RTO_MIN, RTO_MAX, LINK_MBPS)),
                  result_via=cfg.result_via, first_round=first_round,
                  node_workers=None if cfg.node_workers is None else
                  {n: list(ws) for n, ws in cfg.node_workers.items()})


def job_name(dep: Deployment) -> str:
    """The job's name as emulation.experiment.place_jobs gives it (job1, job2, ...)."""
    return f"job{dep.job_id}"


def setup(workers: int, *, topology: str = "fattree", models: Sequence[ModelSpec] = (ModelSpec(),), k: int = 4,
          hosts_per_edge: int | None = None, programmable: float = 0.2, seed: int = 0,
          switch_mb: float | None = None) -> tuple[Topology, list[Job]]:
    """One of emulation.run's topologies with one job per model, each sized for its model's
    gradient (fp32) and ``workers`` workers: workers interleaved over the first hosts (jobs
    share ToRs), the PSes on the last (emulation.experiment.place_jobs). ``switch_mb``: the
    memory the planner may give each programmable switch (default: half the largest model per
    job, so placement matters)."""
    topo = build_topology(topology, k=k, hosts_per_edge=hosts_per_edge, programmable=programmable, seed=seed)
    return topo, place_jobs(topo, [JobSpec(m.n_parameters * 4 / 1e6, 1) for m in models], workers,
                            switch_bytes=None if switch_mb is None else int(switch_mb * 1e6))


def plan_and_deploy(topo: Topology, jobs: Sequence[Job], scheme: str = "goat",
                    models: Sequence[ModelSpec] = (ModelSpec(),), pool_size: int = DEFAULT_POOL) -> FabricDeployment:
    """The controller's plan for ``scheme`` over all jobs, deployed for each model's gradient
    length (job k's configuration is ``.jobs[k]``, every switch's table operations ``.ops``);
    ``pool_size`` aggregators per switch, shared by the jobs as the scheme does."""
    jobs = list(jobs)
    return deploy_jobs(topo, jobs, plan_scheme(scheme, topo, jobs), pool_size=pool_size,
                       total_elements={j.name: m.n_parameters for j, m in zip(jobs, models, strict=True)})


TCP_MSS = 1448             # gloo's TCP segments on a 1500-byte MTU (timestamps on)
TCP_FRAME = 14 + 20 + 32   # Ethernet, IPv4, TCP with timestamps: bytes around a segment, and an ACK's size


@dataclass(frozen=True)
class StepTraffic:
    """What one training step's gradient averaging puts on the busiest link, per mode (wire bytes)."""
    ina_bytes: float          # INA: the plan's busiest link in a lossless value round (in-process twin)
    ina_link: str
    gloo_bytes: float         # gloo's ring all-reduce over the LPM routes (segments and their ACKs)
    gloo_link: str
    workers: int

    @property
    def textbook(self) -> float:
        """Ring all-reduce moves 2(n-1)/n of the model over each worker link each way, INA one model."""
        return 2 * (self.workers - 1) / self.workers

    @property
    def bound(self) -> float:
        """The speedup the links allow on this placement: gloo's busiest link over INA's, in wire
        bytes (INA's 62 header bytes per 256 gradient bytes and TCP's per 1448 included)."""
        return self.gloo_bytes / self.ina_bytes

    def describe(self, mbps: float) -> str:
        at = lambda b: 8 * b / (mbps * 1e6)          # noqa: E731
        return (f"traffic bound per step: ring all-reduce moves 2(n-1)/n = {self.textbook:.2f} models over each "
                f"worker link each way, INA one; on the wire, with headers, over this placement: gloo "
                f"{self.gloo_bytes / 1e6:.2f} MB on its busiest link ({self.gloo_link}, {at(self.gloo_bytes):.2f} s at "
                f"{mbps:g} Mb/s), INA {self.ina_bytes / 1e6:.2f} MB ({self.ina_link}, {at(self.ina_bytes):.2f} s): "
                f"INA can be at most {self.bound:.2f}× faster per step")


def ring_link_bytes(topo: Topology, hosts: Sequence[str], gradient_bytes: float) -> dict[tuple[str, str], float]:
    """Wire bytes per directed link of one ring all-reduce (gloo's algorithm: reduce-scatter then
    all-gather, rank r sending 2(n-1)/n of the gradient to rank r+1) over the LPM routes: TCP
    segments on the way, one ACK per two segments on the way back."""
    n = len(hosts)
    if n < 2:
        return {}
    data = 2 * (n - 1) / n * gradient_bytes
    segments = math.ceil(data / TCP_MSS)
    hops = next_hops(topo)
    out: dict[tuple[str, str], float] = {}
    for r, src in enumerate(hosts):
        path = lpm_path(topo, hops, src, hosts[(r + 1) % n])
        for a, b in zip(path, path[1:]):
            out[(a, b)] = out.get((a, b), 0.0) + data + segments * TCP_FRAME
            out[(b, a)] = out.get((b, a), 0.0) + segments / 2 * TCP_FRAME
    return out


def step_traffic(topo: Topology, fd: FabricDeployment, models: Sequence[ModelSpec]) -> StepTraffic:
    """The first job's :class:`StepTraffic`: INA's value round counted on the in-process twin
    (``fd`` deployed for the model's gradient, a pool that never collides), gloo's ring by route."""
    dep, model = fd.jobs[0], models[0]
    spec = [JobSpec(m.n_parameters * 4 / 1e6, 1) for m in models]
    bound = link_bounds(topo, fd, spec, bw_scale=bw_scale_for(topo, LINK_MBPS))[dep.job_id]
    ring = ring_link_bytes(topo, dep.workers, 4.0 * model.n_parameters)
    busiest = max(ring, key=ring.__getitem__)
    return StepTraffic(bound.busiest_bytes, bound.link, ring[busiest], "→".join(busiest), len(dep.workers))


def _wait_file(path: Path, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.time() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {path.name}: "
                               f"{log.read_text(errors='replace')[-1500:]}")
        if time.time() > deadline:
            raise RuntimeError(f"no {path.name} after {timeout:g} s")
        time.sleep(0.05)


def run_mode(net: EmuNet, dep: Deployment, job: InaJob, mode: str, workdir: Path, *, steps: int,
             verify: bool = False, seed: int = 0, timeout: float = 900.0, extra: Sequence[str] = (),
             progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """One training run in ``net``'s hosts: workers (and for INA the PS) as processes there.
    Returns every rank's rows, and for INA the PS's counters and the workers' all-reduce
    counters."""
    workdir.mkdir(parents=True, exist_ok=True)
    job_file = workdir / "job.json"
    job.save(job_file)
    n = len(dep.workers)
    csvs = [workdir / f"{mode}-rank{r}.csv" for r in range(n)]
    logs = {f"rank{r}": workdir / f"{mode}-rank{r}.log" for r in range(n)}
    for f in csvs + [workdir / "ps.ready", workdir / "ps.json"] + [c.with_suffix(".csv.json") for c in csvs]:
        f.unlink(missing_ok=True)
    ps_proc = None
    procs: dict[str, subprocess.Popen] = {}
    try:
        if mode == "ina":
            ps_log = workdir / "ps.log"
            with open(ps_log, "w") as log:
                ps_proc = net.popen(dep.ps, [sys.executable, "-m", "training.ps", "--job", str(job_file), "--ready",
                                             str(workdir / "ps.ready"), "--out", str(workdir / "ps.json")],
                                    stdout=log, stderr=subprocess.STDOUT)
            _wait_file(workdir / "ps.ready", ps_proc, ps_log, 60)
        master = f"{dep.addresses[dep.workers[0]].ip}:{GLOO_PORT + MODES.index(mode)}"
        for r, host in enumerate(dep.workers):
            # gloo picks its interface from the hostname otherwise, which is not this host's
            env = dict(os.environ, GLOO_SOCKET_IFNAME=net.host(host).defaultIntf().name)
            with open(logs[f"rank{r}"], "w") as log:
                procs[f"rank{r}"] = net.popen(
                    host, worker_command(r, n, master, mode, csvs[r], steps=steps, job_file=job_file,
                                         verify=verify, seed=seed, extra=extra),
                    stdout=log, stderr=subprocess.STDOUT, env=env)
        wait_workers(procs, logs, timeout, progress_csv=csvs[0], progress=progress)
    finally:
        for p in procs.values():                 # ours, by PID (EmuNet.stop would too)
            if p.poll() is None:
                p.kill()
                p.wait(10)
        if ps_proc is not None and ps_proc.poll() is None:
            ps_proc.terminate()                  # SIGTERM: the PS writes its counters and exits
            try:
                ps_proc.wait(20)
            except subprocess.TimeoutExpired:
                ps_proc.kill()
                ps_proc.wait(5)
    out: dict[str, Any] = {"rows": [read_rows(c) for c in csvs]}
    if mode == "ina":
        out["ps"] = json.loads((workdir / "ps.json").read_text()) if (workdir / "ps.json").exists() else {}
        out["workers"] = [json.loads(c.with_suffix(".csv.json").read_text())["ina"] for c in csvs]
    return out


def run_jobs(net: EmuNet, deps: Sequence[Deployment], specs: Sequence[InaJob], mode: str, workdir: Path, *,
             extras: Sequence[Sequence[str]], progress: Callable[[int], None] | None = None,
             **kwargs: Any) -> list[dict[str, Any]]:
    """:func:`run_mode` for every job at once (one thread each, runs under ``workdir/<job>``),
    so the jobs' gradients meet in the switches; ``extras[k]`` is job k's worker options.
    Returns each job's result; the first failure is raised once all have ended."""
    if len(deps) == 1:
        return [run_mode(net, deps[0], specs[0], mode, workdir, extra=extras[0], progress=progress, **kwargs)]
    lock = threading.Lock()

    def report(n: int) -> None:
        with lock:
            progress(n)                     # type: ignore[misc]

    with ThreadPoolExecutor(len(deps)) as pool:
        futures = [pool.submit(run_mode, net, dep, spec, mode, workdir / job_name(dep), extra=extra,
                               progress=report if progress else None, **kwargs)
                   for dep, spec, extra in zip(deps, specs, extras, strict=True)]
        return [f.result() for f in futures]


PROBE_STEPS = 4            # --link-mbps auto: steps per mode on fast links (the first is left out)


def probe_link_mbps(net: EmuNet, deps: Sequence[Deployment], traffic: StepTraffic, workdir: Path, *,
                    modes: Sequence[str], extras: Sequence[Sequence[str]], seed: int, timeout: float,
                    log: Callable[[str], None] = print) -> tuple[float, str, int]:
    """``--link-mbps auto`` for training: a few steps of every mode on ``net`` (built at
    PROBE_MBPS, where the links do not matter) time this machine; the rate is the one at which
    each mode's busiest link (``traffic``) needs HEADROOM × its step's CPU time
    (emulation.calibrate.choose_link_mbps, one "link" per mode). Returns (Mb/s, why, the round
    the next INA run on these switches starts at)."""
    cpu: dict[str, float] = {}
    first_round = 0
    for mode in modes:
        res = run_jobs(net, deps, [ina_job(d, host_timers(RTO_MIN, RTO_MAX, PROBE_MBPS)) for d in deps], mode,
                       workdir / "probe",
                       extras=extras, steps=PROBE_STEPS, seed=seed, timeout=timeout)
        if mode == "ina":
            first_round = next_first_round(res)
        cpu[mode] = sum(max(r[i]["seconds"] for r in res[0]["rows"]) for i in range(1, PROBE_STEPS)) / (PROBE_STEPS - 1)
    wire = {"ina": traffic.ina_bytes, "gloo": traffic.gloo_bytes}
    # the rate at which a mode's busiest link needs HEADROOM × its step's CPU time; the slowest wins
    rates = {m: 8 * wire[m] / (HEADROOM * cpu[m]) / 1e6 for m in modes}
    mode = min(rates, key=rates.__getitem__)
    rate = nice_floor(rates[mode])
    link_s = 8 * wire[mode] / (rate * 1e6)
    why = (f"--link-mbps auto: {rate:g} Mb/s. Probe ({PROBE_STEPS} steps per mode on {PROBE_MBPS:g} Mb/s links, "
           f"{machine_line()}): a step took " + ", ".join(f"{m} {cpu[m]:.2f} s" for m in modes)
           + f" of this machine; at {rate:g} Mb/s {mode}'s busiest link needs {link_s:.2f} s per step "
           f"({link_s / cpu[mode]:.1f}× its CPU time, headroom {HEADROOM:g}), so the links, not the CPU, "
           "set the pace of both modes")
    return rate, why, first_round


def next_first_round(results: Sequence[dict[str, Any]]) -> int:
    """The round an INA run must start at after ``results`` (run_jobs's, mode ina) on the same
    switches: past every round their workers used, since the switches still hold aggregators
    of those rounds and take an older round's first copy of the same key for a stale duplicate."""
    return 1 + max((w.get("last_round", -1) for job in results for w in job.get("workers", [])), default=-1)


def run_training(topo: Topology, jobs: Sequence[Job], out: Path, *, scheme: str = "goat", steps: int = 200,
                 modes: Sequence[str] = MODES, verify: bool = False, seed: int = 0,
                 models: Sequence[ModelSpec] = (ModelSpec(),), pool_size: int = DEFAULT_POOL,
                 link_mbps: float | str = LINK_MBPS, timeout: float = 900.0, loss: float = 0.0,
                 window: int = 8, log: Callable[[str], None] = print,
                 progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Plan, deploy, build the net, install, then train once per mode in it, all jobs at once
    (job k trains ``models[k]``). ``loss``: drop rate of every switch port (INA recovers by
    retransmission, gloo by TCP); ``window``: INA fragments in flight per worker; ``link_mbps``
    "auto": the net is built at PROBE_MBPS, a probe times both modes (:func:`probe_link_mbps`)
    and the links are re-rated before training. Returns per mode the list of the jobs'
    :func:`run_mode` results, the jobs' deployments (``"deployments"``), the link rate
    (``"link_mbps"``, with ``"link_why"`` under auto) and the first job's :class:`StepTraffic`
    (``"traffic"``)."""
    fd = plan_and_deploy(topo, jobs, scheme, models, pool_size)
    deps = fd.jobs
    for dep, model in zip(deps, models, strict=True):
        log(f"[{scheme}] {job_name(dep)}: {len(dep.workers)} workers {', '.join(dep.workers)}, "
            f"PS {dep.ps}; gradient {model.n_parameters} values ({model.kind}) in sub-models "
            f"{dep.submodel_sizes}; aggregation nodes: "
            + (", ".join(f"{n} ({dep.levels[n]})" for n in dep.ina_switches) or "none (the PS aggregates)"))
    t = time.time()
    traffic = step_traffic(topo, plan_and_deploy(topo, jobs, scheme, models, DEFAULT_POOL), models)
    log(f"per-step traffic counted in {time.time() - t:.1f} s; {traffic.describe(LINK_MBPS)} (at {LINK_MBPS:g} Mb/s)")
    auto = link_mbps == "auto"
    rate = PROBE_MBPS if auto else float(link_mbps)
    net = EmuNet(topo, bw_scale=bw_scale_for(topo, rate), log_dir=out / "logs")
    if loss:
        net.with_switch_options(drop_rate=loss, seed=seed + 1)
    results: dict[str, Any] = {"deployments": deps, "traffic": traffic}
    try:
        t = time.time()
        net.build()                     # waits while another emulated network holds the machine's lock
        built = time.time()
        net.start()
        log(f"Mininet net built in {built - t:.1f} s (incl. any wait for another emulation), "
            f"{len(topo.switches())} p4sim switches up in {time.time() - built:.1f} s")
        t = time.time()
        entries = install(net, fd.ops)
        log(f"{entries} table entries over P4Runtime in {time.time() - t:.1f} s")
        extras = [[*m.cli_args(), "--timeout", "120", "--window", str(window)] for m in models]
        first_round = 0
        if auto:
            t = time.time()
            rate, why, first_round = probe_link_mbps(net, deps, traffic, out / "runs", modes=modes, extras=extras,
                                                     seed=seed, timeout=timeout, log=log)
            net.set_bw_scale(bw_scale_for(topo, rate))
            results["link_why"] = why
            log(f"{why} (probe: {time.time() - t:.0f} s)")
        results["link_mbps"] = rate
        log(traffic.describe(rate))
        for mode in modes:
            t = time.time()
            # timers for these links: slower links stretch every round trip (time dilation)
            rto = host_timers(RTO_MIN, RTO_MAX, rate)
            results[mode] = run_jobs(net, deps, [ina_job(d, rto, first_round) for d in deps], mode,
                                     out / "runs", extras=extras, progress=progress, steps=steps,
                                     verify=verify and mode == "ina", seed=seed, timeout=timeout)
            if mode == "ina":
                first_round = next_first_round(results[mode])
            log(f"[{mode}] {steps} steps{f' of {len(deps)} jobs at once' if len(deps) > 1 else ''} "
                f"in {time.time() - t:.1f} s")
    finally:
        net.stop()
    return results


def fragments_sent(res: dict[str, Any]) -> int:
    return sum(w["sent"] for w in res.get("workers", []))


def parse_models(arg: str, hidden: int | None, jobs: int | None) -> list[ModelSpec]:
    """``--model`` (one kind for every job, or a comma list: one per job) and ``--jobs``."""
    kinds = [k.strip() for k in arg.split(",") if k.strip()]
    bad = [k for k in kinds if k not in MODELS]
    if not kinds or bad:
        raise ValueError(f"--model {arg!r}: a kind or a comma list of kinds, each one of {', '.join(MODELS)}")
    n = len(kinds) if jobs is None else jobs
    if n < 1:
        raise ValueError(f"--jobs {jobs}: must be at least 1")
    if len(kinds) not in (1, n):
        raise ValueError(f"--model {arg!r}: {len(kinds)} models for {n} jobs (give one, or one per job)")
    return [ModelSpec(k, DEFAULT_HIDDEN[k] if hidden is None else hidden)
            for k in (kinds * n if len(kinds) == 1 else kinds)]


def check_args(args: argparse.Namespace) -> tuple[list[str], list[ModelSpec], Topology, list[Job]]:
    """The modes, the jobs' models, topology and jobs; ValueError (one line) for arguments
    that cannot work, before any network is built."""
    if args.topology == "fattree" and (args.k < 2 or args.k % 2):
        raise ValueError(f"--k {args.k}: a fat-tree needs an even k >= 2")
    if args.topology == "leaf-spine" and args.k < 1:
        raise ValueError(f"--k {args.k}: a leaf-spine needs k >= 1")
    if not 1 <= args.workers <= MAX_WORKERS:
        raise ValueError(f"--workers {args.workers}: must be in 1..{MAX_WORKERS}")
    if args.hosts_per_edge is not None and args.hosts_per_edge < 1:
        raise ValueError(f"--hosts-per-edge {args.hosts_per_edge}: must be at least 1")
    if args.hidden is not None and args.hidden < 1:
        raise ValueError(f"--hidden {args.hidden}: must be at least 1")
    for name in ("steps",):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} {getattr(args, name)}: must be at least 1")
    if not 0.0 <= args.programmable <= 1.0:
        raise ValueError(f"--programmable {args.programmable}: a fraction in [0, 1]")
    if not 0.0 <= args.loss < 1.0:
        raise ValueError(f"--loss {args.loss}: a drop rate in [0, 1)")
    args.link_mbps = parse_link_mbps(args.link_mbps)
    if not args.timeout > 0:
        raise ValueError(f"--timeout {args.timeout}: must be positive")
    if args.window < 1:
        raise ValueError(f"--window {args.window}: at least 1")
    if args.switch_mb is not None and args.switch_mb <= 0:
        raise ValueError(f"--switch-mb {args.switch_mb:g}: must be positive")
    if not (1 <= args.pool <= DEFAULT_POOL and args.pool & (args.pool - 1) == 0):
        raise ValueError(f"--pool {args.pool}: a power of two in 1..{DEFAULT_POOL} (the program's registers)")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise ValueError(f"--modes {args.modes!r}: a comma list of {', '.join(MODES)}")
    models = parse_models(args.model, args.hidden, args.jobs)
    topo, jobs = setup(args.workers, topology=args.topology, models=models, k=args.k,
                       hosts_per_edge=args.hosts_per_edge, programmable=args.programmable, seed=args.seed,
                       switch_mb=args.switch_mb)
    return modes, models, topo, jobs


def job_report(res: dict[str, Any], k: int, modes: Sequence[str]) -> tuple[list[dict[str, Any]], str]:
    """Job k's losses.csv rows (training.launch.merge) and what its INA run did, in words."""
    rows = merge({m: res[m][k]["rows"] for m in modes})
    if "ina" not in modes:
        return rows, ""
    ina = res["ina"][k]
    frags = fragments_sent(ina)
    received = ina["ps"].get("received", {})
    ws = ina["workers"]
    per_call = sum(w["seconds"] for w in ws) / max(1, sum(w["calls"] for w in ws))
    scale = sum(w["scale_seconds"] for w in ws) / max(1, sum(w["calls"] for w in ws))
    evicted = received.get("preempted", 0)
    return rows, (f"INA: {frags} fragments sent by the workers, {ina_fraction(received, frags):.1%} aggregated in "
                  f"the switches, {sum(w['resent'] for w in ws)} retransmitted"
                  + (f", {evicted} partials preempted to the PS" if evicted else "")
                  + f"; an all-reduce (one DDP bucket) took {per_call * 1e3:.1f} ms on average, "
                  f"{scale * 1e3:.1f} ms of it the scale round.")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m emulation.train",
        description="Train small networks (--model mlp or cnn) on scikit-learn's digits with N workers per job in "
                    "Mininet hosts, gradients averaged through p4sim switches running p4src/v1model/ina.p4 "
                    "(torch DDP with the INA communication hook), then with gloo's all-reduce over the same "
                    "network, same seed; plot the loss curves and report the time per iteration. Several jobs "
                    "(--jobs) train at once and share the switches' aggregators as the scheme plans. Needs root "
                    "and Mininet.",
        epilog="examples: python -m emulation.train --workers 4 --steps 200 --out results/training; "
               "python -m emulation.train --jobs 2 --workers 2 --model mlp,cnn --scheme esa --switch-mb 1 --pool 64 --loss 0.01")
    ap.add_argument("--workers", type=int, default=4, help="training workers per job (default 4)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="training jobs at once, each with its own workers and PS (default: one per --model)")
    ap.add_argument("--steps", type=int, default=200, help="training steps per mode (default 200)")
    ap.add_argument("--topology", default="fattree", choices=list(TOPOLOGIES),
                    help="; ".join(f"{n}: {d}" for n, (_, d) in TOPOLOGIES.items())
                    + " (workers interleaved over the first hosts, the PSes on the last)")
    ap.add_argument("--k", type=int, default=4, help="fat-tree arity / leaf-spine size (default 4)")
    ap.add_argument("--hosts-per-edge", type=int, default=None, help="hosts under each edge/leaf switch")
    ap.add_argument("--programmable", type=float, default=0.2,
                    help="fraction of programmable switches (fattree, leaf-spine; default 0.2)")
    ap.add_argument("--scheme", default="goat", choices=list(DEPLOYABLE),
                    help="aggregation plan (controller.schemes), e.g. goat, atp, esa, inart; ps: no switch aggregates")
    ap.add_argument("--switch-mb", type=float, default=None,
                    help="memory the planner may use on each programmable switch in MB (default: half the largest "
                         "model per job, as emulation.run: not every worker gets a switch)")
    ap.add_argument("--pool", type=int, default=DEFAULT_POOL,
                    help=f"aggregators per switch, shared by the jobs (a power of two, default {DEFAULT_POOL}); "
                         "small pools make jobs contend (ESA preempts)")
    ap.add_argument("--modes", default="ina,gloo", help="comma list of ina, gloo (default both, in that order)")
    ap.add_argument("--verify", action="store_true",
                    help="INA: also average every step's gradients with gloo and check the INA mean against it "
                         "(adds gloo traffic; the reported step time leaves the check out)")
    ap.add_argument("--model", default="mlp",
                    help="mlp (default: 4810 parameters at --hidden 64), cnn (two 3x3 convolutions with "
                         "max-pooling, then hidden-10: 6058 parameters) or wide (64-hidden-hidden-10: 1,126,410 "
                         "parameters at its default --hidden 1024, large enough that moving gradients dominates a "
                         "step: make run-training's model); a comma list gives each job its own")
    ap.add_argument("--hidden", type=int, default=None, help="hidden units of the last layers (default 64; wide: 1024)")
    ap.add_argument("--link-mbps", default=str(LINK_MBPS), metavar="MBPS|auto",
                    help=f"rate of the fastest link in Mb/s (default {LINK_MBPS:g}, as emulation.run); others scale "
                         f"with it. auto: the net starts at {PROBE_MBPS:g} Mb/s, {PROBE_STEPS} steps of each mode time "
                         f"this machine, and the links are re-rated so that each mode's busiest link needs "
                         f"{HEADROOM:g}x its step's CPU time (time dilation: the links, not the CPU, set the pace); "
                         "the rate is printed with the reason")
    ap.add_argument("--window", type=int, default=32,
                    help="INA fragments in flight per worker (default 32)")
    ap.add_argument("--loss", type=float, default=0.0,
                    help="drop rate of every switch port, e.g. 0.01 (INA retransmits, gloo's TCP recovers)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=900.0, help="limit for each mode's run (s)")
    ap.add_argument("--out", default="results/training",
                    help="output folder (default results/training; with several jobs one folder per job in it)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    try:
        modes, models, topo, jobs = check_args(args)
    except ValueError as e:
        ap.error(str(e))
    why = mininet_unavailable_reason()
    if why:
        print(f"emulation.train: {why}", file=sys.stderr)
        return 2
    os.chdir(Path(__file__).resolve().parent.parent)    # processes run `-m training...` from the repo
    from tqdm import tqdm
    out = Path(args.out)
    print(f"{topo.name}: {len(topo.switches())} switches ({', '.join(topo.programmable_switches())} programmable), "
          f"{len(topo.hosts())} hosts, link rate {args.link_mbps if args.link_mbps == 'auto' else f'{args.link_mbps:g} Mb/s'}"
          f"; machine: {machine_line()}")
    with tqdm(total=args.steps * len(modes) * len(jobs), unit="step", disable=args.quiet, file=sys.stderr) as bar:
        res = run_training(topo, jobs, out, scheme=args.scheme, steps=args.steps, modes=modes, verify=args.verify,
                           seed=args.seed, models=models, pool_size=args.pool, link_mbps=args.link_mbps,
                           timeout=args.timeout, loss=args.loss, window=args.window,
                           log=tqdm.write, progress=bar.update)
    args.link_mbps = res["link_mbps"]
    together = f"; {len(jobs)} jobs training at once" if len(jobs) > 1 else ""
    ok = True
    rows_by_job: dict[str, list[dict[str, Any]]] = {}
    overview = [f"# {len(jobs)} digits jobs at once, {topo.name}, {args.scheme} ({machine()})", "",
                "| job | model | INA s/iter | gloo s/iter | final loss INA | final loss gloo | max grad ratio |",
                "|---|---|---|---|---|---|---|"]
    for k, (dep, model) in enumerate(zip(res["deployments"], models)):
        rows, ina_line = job_report(res, k, modes)
        rows_by_job[job_name(dep)] = rows
        setup_line = (f"Machine: {machine()}. Network: {topo.name}, {len(topo.switches())} p4sim switches "
                      f"(v1model ina.p4), fastest link {args.link_mbps:g} Mb/s"
                      + (" (auto: below)" if "link_why" in res else "") + f", {args.loss:.1%} loss per switch "
                      f"port{together}; {args.workers} workers and the PS in Mininet hosts; plan {args.scheme}, "
                      f"{args.pool} aggregators per switch, aggregation at "
                      f"{', '.join(dep.ina_switches) or 'the PS only'}; gloo: TCP between the same hosts. {ina_line}")
        where = out if len(jobs) == 1 else out / job_name(dep)
        notes = [res["link_why"]] if "link_why" in res else []
        if k == 0:
            notes.append(res["traffic"].describe(args.link_mbps))
        s = write_report(where, rows, title=f"digits {model.kind.upper()}, {args.workers} workers, {topo.name}, "
                         f"{args.scheme}" + (f", {job_name(dep)} of {len(jobs)}" if len(jobs) > 1 else ""),
                         setup=setup_line, notes=notes, bound=res["traffic"].bound if k == 0 else None)
        ok &= s.get("max_grad_ratio", 0.0) <= 1.0
        cell = lambda key, fmt: format(s[key], fmt) if key in s else "—"      # noqa: E731
        overview.append(f"| [{job_name(dep)}]({job_name(dep)}/summary.md) | {model.kind} | "
                        f"{cell('ina_s_per_iter', '.4f')} | {cell('gloo_s_per_iter', '.4f')} | "
                        f"{cell('ina_final_loss', '.5f')} | {cell('gloo_final_loss', '.5f')} | "
                        f"{cell('max_grad_ratio', '.3g')} |")
        print((where / "summary.md").read_text())
        print(f"wrote {where / 'losses.csv'}, {where / 'summary.md'}, {where / 'training.png'}")
    if len(jobs) > 1:
        title = f"{len(jobs)} digits jobs at once, {topo.name}, {args.scheme}"
        plot_jobs(out / PNG, rows_by_job, title)
        overview += ["", f"![every job's loss and time per iteration]({PNG})"]
        (out / "summary.md").write_text("\n".join(overview) + "\n")
        print(f"wrote {out / 'summary.md'}, {out / PNG}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
