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
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tqdm import tqdm

from controller.model import Job, Topology
from controller.schemes import available
from hostlib.protocol import MAX_WORKERS
from hostlib.worker import DEFAULT_WINDOW

from .bmv2 import bmv2_unavailable_reason
from .calibrate import (PROBE_MBPS, Choice, Traffic, choose_link_mbps, loss_cpu_factor, machine,
                        parse_link_mbps)
from .experiment import LINK_MBPS, TOPOLOGIES, JobSpec, bw_scale_for, build_topology, place_jobs
from .net import SWITCH_KINDS, EmuNet, mininet_unavailable_reason
from .report import add_x_lossless, pace_notes, summarise, write_outputs, write_rounds
from .schemes import DEPLOYABLE, MULTI_PS, PreparedScheme, SchemeRun, prepare_scheme, run_scheme


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
                                 prepared=prepared[scheme], jitter=args.jitter, serialize=args.serialize,
                                 **runs_with)  # type: ignore[arg-type]
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
                    help="aggregators per switch (a power of two; default: what --switch-mb holds, 64-lane "
                         "aggregators of 256 B on v1model, 32-lane of 128 B on tna, at most the program's "
                         "registers; more than that is refused). Small pools make jobs contend for them "
                         "(ESA's setting)")
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
    ap.add_argument("--serialize", action="store_true",
                    help="the switches hold every frame for its time on the link (store and forward at the link "
                         "rate, p4sim serve --tx-mbps/--rx-mbps), as a real link does: htb alone paces frames "
                         "but hands each over at once, so a round trip can be shorter than one frame's time; "
                         "with it a window of frames, and aggregator memory, matter as on real links")
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
    if args.serialize and args.switch == "bmv2":
        ap.error("--serialize: p4sim switches only (bmv2 has no link model)")
    if args.switch_procs < 0 or (args.switch_procs and args.switch == "bmv2"):
        ap.error("--switch-procs: N >= 0, and only with p4sim switches")
    EmuNet.default_switch_procs = args.switch_procs
    os.chdir(Path(__file__).resolve().parent.parent)   # agents run `-m emulation.agents` from the repo
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
