"""Emulated INA experiments on Mininet with p4sim switches.

    python -m emulation.run fattree [--k 4] [--workers 6] [--mb 2] [--schemes goat,atp]
                                    [--loss 0] [--rounds 1] [--out results/fattree]

One job (``--workers`` workers on the first hosts, the PS on the last host) on a k-ary
fat-tree whose switches are 20 % programmable (4 of 20 for k=4: GOAT has to choose among
switches that are mostly off the workers' paths, where ATP can only use those on them). Each
switch has memory for half the model (4 sub-models), so placement matters. For every scheme:
plan (controller.schemes), build a fresh Mininet net, install over P4Runtime, run ``--rounds``
all-reduce rounds (fresh gradients each) with the agents in the hosts, check every worker's
result is exact in every round, and
record completion time, what the PS received, the in-network aggregated fraction and switch
transmissions (Linux tx counters of the switches' interfaces). Writes results.csv, rounds.csv
(per round: time, exactness, worker resends), summary.md and fattree.png under ``--out``.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from controller.deploy import Deployment, deploy_plan, ina_fraction
from controller.model import Job, SubModel, Topology
from controller.schemes import run_scheme
from controller.topologies import fat_tree

from .install import install
from .net import EmuNet, mininet_unavailable_reason

LANES = 64


@dataclass
class RoundResult:
    scheme: str
    workers: list[dict[str, Any]]
    ps: dict[str, Any]
    switch_tx: int                      # packets all switches transmitted during the round
    wall_seconds: float
    entries: int = 0
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
                 "worker_fast_resent": sum(w["rounds"][r]["fast_resent"] for w in self.workers)}
                for r in range(n)]


def _tx_packets(net: EmuNet) -> int:
    """Sum of tx_packets of every switch interface (root namespace): what the switches sent."""
    total = 0
    for sw in net.switches():
        for intf in sw.intfList():
            if intf.name == "lo":
                continue
            try:
                total += int(Path(f"/sys/class/net/{intf.name}/statistics/tx_packets").read_text())
            except OSError:
                pass
    return total


def run_allreduce(net: EmuNet, dep: Deployment, workdir: Path, *, window: int = 8, seed: int = 1,
                  timeout: float = 300.0, rto: dict[str, float] | None = None, rounds: int = 1) -> RoundResult:
    """``rounds`` all-reduce rounds of ``dep``'s job: PS and workers as processes in their hosts
    (``timeout`` bounds each round)."""
    workdir.mkdir(parents=True, exist_ok=True)
    for f in workdir.glob("*"):
        if f.is_file():
            f.unlink()
    go = workdir / "go"
    seeds = [seed * 1000 + i for i in range(len(dep.workers))]
    finish = workdir / "finish"
    common = {"lanes": LANES, "job_id": dep.job_id, "go_file": str(go), "timeout": timeout,
              "rto": rto or {}, "rounds": rounds, "finish_file": str(finish)}
    a = dep.addresses
    cfgs: dict[str, tuple[str, dict[str, Any]]] = {}
    cfg = dep.job_config
    cfgs[dep.ps] = ("ps", dict(common, timeout=timeout * rounds + 60, host=dep.ps, ip=a[dep.ps].ip, mac=a[dep.ps].mac, jobs={str(dep.job_id): {
        "workers": {str(w): list(v) for w, v in cfg.workers.items()},
        "reminder_via": {str(n): ip for n, ip in cfg.reminder_via.items()},
        "submodel_nodes": None if cfg.submodel_nodes is None else
        {str(s): list(v) for s, v in cfg.submodel_nodes.items()}}}))
    for i, w in enumerate(dep.workers):
        cfgs[w] = ("worker", dict(common, host=w, worker_id=i, ip=a[w].ip, mac=a[w].mac, ps_ip=a[dep.ps].ip,
                                  labels=[[l.node_id, l.fan_in, l.priority] for l in dep.labels[w]],
                                  submodel_sizes=dep.submodel_sizes, window=window, seed=seeds[i],
                                  all_seeds=seeds))
    procs = {}
    for host, (role, c) in cfgs.items():
        c.update(ready_file=str(workdir / f"{host}.ready"), out=str(workdir / f"{host}.json"),
                 done_file=str(workdir / f"{host}.done"))
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
    tx0 = _tx_packets(net)
    t0 = time.time() + 0.3
    go.write_text(f"{t0}\n")
    # workers finish their rounds, then linger to answer the PS until every one is done
    deadline = time.time() + 0.3 + timeout * rounds + 30
    while time.time() < deadline and not all((workdir / f"{w}.done").exists() or procs[w].poll() is not None
                                             for w in dep.workers):
        time.sleep(0.05)
    wall = time.time() - t0
    finish.write_text("finish\n")
    for w in dep.workers:
        try:
            procs[w].wait(30)
        except Exception:
            procs[w].kill()
    tx1 = _tx_packets(net)
    procs[dep.ps].terminate()                # the PS runs until told; SIGTERM → report
    procs[dep.ps].wait(30)
    reports = {}
    for h in cfgs:
        out = workdir / f"{h}.json"
        if not out.exists():
            raise RuntimeError(f"agent {h} wrote no report: {(workdir / f'{h}.log').read_text()[-2000:]}")
        reports[h] = json.loads(out.read_text())
    return RoundResult(dep.scheme, [reports[w] for w in dep.workers], reports[dep.ps], tx1 - tx0, wall)


def fattree_setup(k: int, workers: int, mb: float, *, programmable_fraction: float = 0.2,
                  submodels: int = 4, seed: int = 0, hosts_per_edge: int | None = None) -> tuple[Topology, Job]:
    """The fat-tree and the job. Switch memory = half the model, so no switch holds it all."""
    topo = fat_tree(k, hosts_per_edge, programmable_fraction=programmable_fraction,
                    memory_bytes=int(mb * 1e6 / 2), seed=seed)
    hosts = topo.hosts()
    if workers + 1 > len(hosts):
        raise ValueError(f"{workers} workers + 1 PS do not fit on {len(hosts)} hosts")
    subs = [SubModel(f"g{i}", mb / submodels) for i in range(submodels)]
    job = Job("allreduce", hosts[:workers], [hosts[-1]], subs, job_id=1)
    job.validate(topo)
    return topo, job


def run_scheme_round(topo: Topology, job: Job, scheme: str, *, mb: float, loss: float, workdir: Path,
                     bw_scale: float, window: int, seed: int, timeout: float, rounds: int = 1,
                     rto: dict[str, float] | None = None, log: Any = print) -> tuple[RoundResult, Deployment]:
    plan = run_scheme(scheme, topo, [job])
    dep = deploy_plan(topo, job, plan, total_elements=int(mb * 1e6 / 4))
    log(f"[{scheme}] aggregation nodes: "
        + (", ".join(f"{n}({dep.levels[n]})" for n in dep.ina_switches) or "none"))
    net = EmuNet(topo, bw_scale=bw_scale, log_dir=workdir / "logs")
    net.with_switch_options(drop_rate=loss, seed=seed)
    try:
        t = time.time()
        net.build().start()
        log(f"[{scheme}] {len(topo.switches())} p4sim switches up in {time.time() - t:.1f} s")
        t = time.time()
        entries = install(net, dep.ops)
        log(f"[{scheme}] {entries} table entries over P4Runtime in {time.time() - t:.1f} s")
        res = run_allreduce(net, dep, workdir / scheme, window=window, seed=seed, timeout=timeout,
                            rounds=rounds, rto=rto)
        res.entries = entries
        res.extra["ina_switches"] = dep.ina_switches
        for r in res.per_round() if rounds > 1 else []:
            log(f"[{scheme}] round {r['round']}: {r['seconds']:.2f} s, exact={r['exact']}, "
                f"worker resends {r['worker_resent']} ({r['worker_fast_resent']} fast)")
        log(f"[{scheme}] completion {res.completion:.2f} s ({rounds} round{'s' * (rounds > 1)}), "
            f"exact={res.exact}, PS received {res.ps['rx_packets']} packets, switch tx {res.switch_tx}")
        return res, dep
    finally:
        net.stop()


def summarise(res: RoundResult, dep: Deployment, mb: float, loss: float) -> dict[str, Any]:
    frags = sum(w["fragments"] for w in res.workers) * max(1, len(res.per_round()))   # all rounds
    return {
        "scheme": res.scheme, "workers": len(res.workers), "mb": mb, "loss": loss,
        "rounds": len(res.per_round()), "completion_s": round(res.completion, 3),
        "mean_round_s": round(res.completion / max(1, len(res.per_round())), 3), "exact": res.exact,
        "ps_rx_packets": res.ps["rx_packets"], "ps_rx_bytes": res.ps["rx_bytes"],
        "ps_rx_mb": round(res.ps["rx_bytes"] / 1e6, 3),
        "ina_fraction": round(ina_fraction(res.ps["received"], frags), 4),
        "switch_tx_packets": res.switch_tx,
        "worker_fragments": frags,
        "worker_resent": sum(w["resent"] for w in res.workers),
        "ps_results_sent": res.ps["results_sent"],
        "ina_switches": " ".join(f"{n}:{dep.levels[n]}" for n in dep.ina_switches),
        "table_entries": res.entries,
    }


def write_rounds(per_round: dict[str, list[dict[str, Any]]], out: Path) -> None:
    """rounds.csv: one row per (scheme, round)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "rounds.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=["scheme", "round", "seconds", "exact", "worker_resent",
                                           "worker_fast_resent"])
        wr.writeheader()
        for scheme, rows in per_round.items():
            for r in rows:
                wr.writerow({"scheme": scheme, **{k: (round(v, 3) if isinstance(v, float) else v)
                                                  for k, v in r.items()}})


def write_outputs(rows: list[dict[str, Any]], out: Path, title: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    cols = ["scheme", "rounds", "completion_s", "mean_round_s", "exact", "ps_rx_mb", "ps_rx_packets", "ina_fraction",
            "switch_tx_packets", "worker_resent", "ina_switches"]
    lines = [f"# {title}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    lines += ["", "completion_s: slowest worker, first send → last result of the last round "
              "(mean_round_s: that over the rounds; per round: rounds.csv); exact: every worker, every "
              "round; ps_rx: what reached the PS "
              "(packets, bytes with Ethernet/IPv4/UDP headers); ina_fraction: share of the workers' "
              "fragments that switches aggregated (not received plain by the PS); switch_tx_packets: "
              "packets all switches transmitted during the round (Linux interface counters).", ""]
    (out / "summary.md").write_text("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    names = [r["scheme"] for r in rows]
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.2))
    for ax, key, label in zip(axes, ["completion_s", "ps_rx_mb", "ina_fraction", "switch_tx_packets"],
                              ["completion (s)", "PS received (MB)", "aggregated in network", "switch tx packets"]):
        ax.bar(names, [r[key] for r in rows], color=["tab:blue", "tab:orange", "tab:green", "tab:red"][:len(rows)])
        ax.set_title(label, fontsize=10)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "fattree.png", dpi=120)
    plt.close(fig)


def cmd_fattree(args: argparse.Namespace) -> int:
    why = mininet_unavailable_reason()
    if why:
        print(f"emulation.run: {why}", file=sys.stderr)
        return 2
    out = Path(args.out)
    topo, job = fattree_setup(args.k, args.workers, args.mb, programmable_fraction=args.programmable,
                              seed=args.seed)
    print(f"fat-tree k={args.k}: {len(topo.switches())} switches ({', '.join(topo.programmable_switches())} "
          f"programmable), {len(topo.hosts())} hosts; workers {', '.join(job.workers)}, PS {job.ps[0]}; "
          f"{args.mb} MB gradient in {len(job.submodels)} sub-models")
    rows = []
    per_round = {}
    ok = True
    for scheme in [s.strip() for s in args.schemes.split(",") if s.strip()]:
        res, dep = run_scheme_round(topo, job, scheme, mb=args.mb, loss=args.loss, workdir=out / "runs",
                                    bw_scale=args.bw_scale, window=args.window, seed=args.seed + 1,
                                    timeout=args.timeout, rounds=args.rounds,
                                    rto={"minimum": args.rto_min, "initial": max(args.rto_min, 0.3)})
        rows.append(summarise(res, dep, args.mb, args.loss))
        per_round[scheme] = res.per_round()
        ok &= res.exact
    write_rounds(per_round, out)
    title = (f"fat-tree k={args.k}, {args.workers} workers, {args.mb} MB, loss {args.loss}, "
             f"links {100_000 / args.bw_scale:g} Mb/s (100 Gb/s / {args.bw_scale:g})")
    write_outputs(rows, out, title)
    print((out / "summary.md").read_text())
    print(f"wrote {out / 'results.csv'}, {out / 'rounds.csv'}, {out / 'summary.md'}, {out / 'fattree.png'}")
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulation.run")
    sub = ap.add_subparsers(dest="experiment", required=True)
    ft = sub.add_parser("fattree", help="one job on a k-ary fat-tree, one all-reduce round per scheme")
    ft.add_argument("--k", type=int, default=4)
    ft.add_argument("--workers", type=int, default=6)
    ft.add_argument("--mb", type=float, default=2.0, help="gradient size per worker (MB, fp32)")
    ft.add_argument("--schemes", default="goat,atp")
    ft.add_argument("--loss", type=float, default=0.0, help="drop rate of every switch port")
    ft.add_argument("--programmable", type=float, default=0.2, help="fraction of programmable switches")
    ft.add_argument("--bw-scale", type=float, default=5000.0, help="link Mb/s = Gb/s * 1000 / scale")
    ft.add_argument("--window", type=int, default=8, help="fragments in flight per worker")
    ft.add_argument("--timeout", type=float, default=300.0, help="per-round limit (s)")
    ft.add_argument("--rto-min", type=float, default=0.1,
                    help="floor of the hosts' retransmission timeout (s); the estimate adapts above it")
    ft.add_argument("--rounds", type=int, default=1,
                    help="all-reduce rounds per scheme, each with fresh gradients (training iterations)")
    ft.add_argument("--seed", type=int, default=0)
    ft.add_argument("--out", default="results/fattree")
    args = ap.parse_args(argv)
    os.chdir(Path(__file__).resolve().parent.parent)   # agents run `-m emulation.agents` from the repo
    return cmd_fattree(args)


if __name__ == "__main__":
    sys.exit(main())
