"""ESA §7.2: job completion time of multi-job INA on one 64-server switch.

Runs the chunk-level model of ``experiments/esa_model.py`` (its docstring says what is
simulated and which parameters are ours) over ESA's sweeps: Fig. 8 (2-8 jobs of 8 workers)
and Fig. 9 (8 jobs of 2-8 workers) for all-A, all-B and 1:1 mixes of DNN A and B, five
schemes (SwitchML, ATP, ESA and ESA's two straw-men of §7.3), and writes ESA's metrics beside
the paper's: average JCT, its speed-ups, switch memory utilisation (Fig. 10) and the gain of
priorities (Fig. 11).

``python -m experiments.esa_jct [--quick]`` writes results/esa/esa_jct.{csv,md,png}.
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

from experiments.esa_model import (DNN, DNN_A, DNN_B, MB, SCHEMES, SEND_ORDER, AggregatorPool,  # noqa: F401
                                   Outcome, SimConfig, SimResult, Simulator, encode_priority,
                                   esa_priority, simulate)

# ESA's reported numbers (§7.2.2, §7.3): speedups of ESA's average JCT, and utilisation ratios.
PAPER = {
    "max_speedup_vs_switchml": 1.89,      # Fig. 8, "up to"
    "max_speedup_vs_atp": 1.35,           # Fig. 8, "up to"
    # Fig. 11 (8 jobs x 8 workers): speedup over ATP of ESA, Straw1, Straw2
    "fig11_A": {"esa": 1.35, "straw1": 1.19, "straw2": 1.19},
    "fig11_AB": {"esa": 1.22, "straw1": 1.05, "straw2": 1.05},
    # Fig. 10 (8 jobs x 8 workers): ESA's utilisation over SwitchML's and ATP's
    "fig10_A": {"switchml": 2.27, "atp": 1.45},
    "fig10_B": {"switchml": 1.9, "atp": 1.28},
}


# ----------------------------------------------------------------------------- experiment
@dataclass(frozen=True)
class Point:
    """One workload of the sweep: model mix, number of jobs, workers per job, seed."""
    mix: str
    n_jobs: int
    workers: int
    seed: int


def sweep_points(quick: bool, seeds: int) -> list[Point]:
    """Fig. 8 (jobs 2..8, 8 workers each) and Fig. 9 (8 jobs, 2..8 workers), for all-A,
    all-B and 1:1 mixes; ``quick`` keeps every mix at 8x8 but sweeps only all-A."""
    sizes = (2, 4, 8) if quick else (2, 4, 6, 8)
    pts: list[Point] = []
    for mix in ("A", "B", "AB"):
        sweep_mixes = ("A",) if quick else ("A", "B", "AB")
        shapes = {(8, 8)}
        if mix in sweep_mixes:
            shapes |= {(n, 8) for n in sizes} | {(8, w) for w in sizes}
        for n_jobs, workers in sorted(shapes):
            pts += [Point(mix, n_jobs, workers, s) for s in range(seeds)]
    return pts


def run_sweep(points: Sequence[Point], base: SimConfig, schemes: Sequence[str] = SCHEMES,
              progress: bool = True) -> list[dict[str, Any]]:
    """Simulate every scheme on every point; one row per (point, scheme)."""
    from tqdm import tqdm
    rows = []
    todo = [(p, s) for p in points for s in schemes]
    for p, scheme in tqdm(todo, desc="esa_jct", unit="sim", disable=not progress, file=sys.stderr):
        cfg = replace(base, mix=p.mix, n_jobs=p.n_jobs, workers=p.workers, seed=p.seed)
        r = simulate(cfg, scheme)
        rows.append({"mix": p.mix, "n_jobs": p.n_jobs, "workers": p.workers, "seed": p.seed,
                     "scheme": scheme, "avg_jct_ms": r.avg_jct_us / 1e3,
                     "utilization": r.avg_utilization, **r.stats})
    return rows


def _mean(rows: Iterable[dict[str, Any]], key: str) -> float:
    vals = [r[key] for r in rows]
    return sum(vals) / len(vals) if vals else math.nan


def _table(rows: list[dict[str, Any]], mix: str, n_jobs: int, workers: int) -> dict[str, dict[str, float]]:
    """scheme -> mean JCT / utilisation over seeds at one point."""
    out = {}
    for s in SCHEMES:
        sel = [r for r in rows if (r["mix"], r["n_jobs"], r["workers"], r["scheme"]) == (mix, n_jobs, workers, s)]
        if sel:
            out[s] = {"jct": _mean(sel, "avg_jct_ms"), "util": _mean(sel, "utilization"),
                      "fallback": _mean(sel, "fallback"), "preempt": _mean(sel, "preempt")}
    return out


def summarize(rows: list[dict[str, Any]], base: SimConfig, quick: bool) -> str:
    """Markdown: our numbers beside ESA's (§7.2.2, §7.3)."""
    L = [f"# ESA §7.2 JCT simulation ({'quick' if quick else 'full'} run)", "",
         f"One switch, {base.link_gbps:g} Gb/s links, base RTT {base.rtt_us:g} µs + host turnaround "
         f"{base.host_delay_us:g} µs (BDP {base.bdp_mb:.2f} MB per job), {base.memory_mb:g} MB of "
         f"aggregators = {base.blocks} blocks of {base.chunk_packets} x {base.payload_bytes} B, "
         f"{base.packet_bytes}-byte packets, {base.iterations} iterations per job, jitter U(0, "
         f"{base.jitter_us:g} µs) per partition, job start U(0, {base.start_spread_us:g} µs). "
         f"Seeds per point: {len({r['seed'] for r in rows})}. Model and simplifications: module "
         "docstring of `experiments/esa_model.py`.", "",
         "## Average JCT at 8 jobs x 8 workers (ms; lower is better)", "",
         "| mix | " + " | ".join(SCHEMES) + " | ESA speedup vs SwitchML | vs ATP |",
         "|---|" + "---|" * (len(SCHEMES) + 2)]
    for mix in ("A", "B", "AB"):
        t = _table(rows, mix, 8, 8)
        if len(t) == len(SCHEMES):
            L.append(f"| {mix} | " + " | ".join(f"{t[s]['jct']:.3f}" for s in SCHEMES) +
                     f" | {t['switchml']['jct'] / t['esa']['jct']:.2f}x | {t['atp']['jct'] / t['esa']['jct']:.2f}x |")
    L += ["", "## Priority scheduling (ESA Fig. 11): speedup over ATP at 8x8", "",
          "| mix | scheme | ours | paper |", "|---|---|---|---|"]
    for mix, key in (("A", "fig11_A"), ("AB", "fig11_AB")):
        t = _table(rows, mix, 8, 8)
        for s in ("esa", "straw1", "straw2"):
            if s in t and "atp" in t:
                L.append(f"| {mix} | {s} | {t['atp']['jct'] / t[s]['jct']:.2f}x | {PAPER[key][s]:.2f}x |")
    L += ["", "## Switch memory utilisation (ESA Fig. 10): ESA's over the baseline's, 8x8", "",
          "| mix | baseline | ours | paper | (ESA utilisation, ours) |", "|---|---|---|---|---|"]
    for mix, key in (("A", "fig10_A"), ("B", "fig10_B")):
        t = _table(rows, mix, 8, 8)
        for s in ("switchml", "atp"):
            if s in t and "esa" in t:
                L.append(f"| {mix} | {s} | {t['esa']['util'] / t[s]['util']:.2f}x | {PAPER[key][s]:.2f}x "
                         f"| {t['esa']['util']:.2f} |")
    points = sorted({(r["mix"], r["n_jobs"], r["workers"]) for r in rows})
    best_ml = max(((_table(rows, *p)["switchml"]["jct"] / _table(rows, *p)["esa"]["jct"]), p) for p in points)
    best_atp = max(((_table(rows, *p)["atp"]["jct"] / _table(rows, *p)["esa"]["jct"]), p) for p in points)
    L += ["", "## Largest ESA speedup over the sweep (ESA Fig. 8-9, \"up to\")", "",
          "| versus | ours (mix, jobs, workers) | paper |", "|---|---|---|",
          f"| SwitchML | {best_ml[0]:.2f}x {best_ml[1]} | {PAPER['max_speedup_vs_switchml']:.2f}x |",
          f"| ATP | {best_atp[0]:.2f}x {best_atp[1]} | {PAPER['max_speedup_vs_atp']:.2f}x |",
          "", "## Sweeps (average JCT, ms)", ""]
    for label, fixed in (("jobs (8 workers each)", "workers"), ("workers per job (8 jobs)", "n_jobs")):
        var = "n_jobs" if fixed == "workers" else "workers"
        for mix in ("A", "B", "AB"):
            xs = sorted({r[var] for r in rows if r["mix"] == mix and r[fixed] == 8})
            if len(xs) < 2:
                continue
            L += [f"By {label}, mix {mix}:", "", f"| {var} | " + " | ".join(SCHEMES) + " |",
                  "|---|" + "---|" * len(SCHEMES)]
            for x in xs:
                p = (mix, x, 8) if var == "n_jobs" else (mix, 8, x)
                t = _table(rows, *p)
                L.append(f"| {x} | " + " | ".join(f"{t[s]['jct']:.3f}" for s in SCHEMES) + " |")
            L.append("")
    L += ["## Counters at 8x8, mix A (mean per run)", "",
          "| scheme | PS fallbacks | preemptions |", "|---|---|---|"]
    t = _table(rows, "A", 8, 8)
    for s in SCHEMES:
        if s in t:
            L.append(f"| {s} | {t[s]['fallback']:.0f} | {t[s]['preempt']:.0f} |")
    return "\n".join(L) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, var, fixed, title in ((axes[0], "n_jobs", "workers", "Fig. 8 shape: JCT vs jobs (mix A)"),
                                  (axes[1], "workers", "n_jobs", "Fig. 9 shape: JCT vs workers/job (mix A)")):
        xs = sorted({r[var] for r in rows if r["mix"] == "A" and r[fixed] == 8})
        for s in SCHEMES:
            ys = []
            for x in xs:
                p = ("A", x, 8) if var == "n_jobs" else ("A", 8, x)
                ys.append(_table(rows, *p).get(s, {}).get("jct", math.nan))
            ax.plot(xs, ys, marker="o", label=s)
        ax.set_xlabel("jobs" if var == "n_jobs" else "workers per job")
        ax.set_ylabel("average JCT (ms)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax = axes[2]
    labels, ours, paper = [], [], []
    for mix, key in (("A", "fig11_A"), ("AB", "fig11_AB")):
        t = _table(rows, mix, 8, 8)
        for s in ("esa", "straw1", "straw2"):
            if s in t and "atp" in t:
                labels.append(f"{mix}\n{s}")
                ours.append(t["atp"]["jct"] / t[s]["jct"])
                paper.append(PAPER[key][s])
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], ours, 0.4, label="ours")
    ax.bar([i + 0.2 for i in x], paper, 0.4, label="ESA paper", hatch="//", alpha=0.6)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("speedup of average JCT over ATP")
    ax.set_title("Fig. 11 shape: priority scheduling, 8 jobs x 8 workers", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.esa_jct", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="coarse chunks, one seed, A-only sweeps (< 60 s)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per point (default 1 quick, 2 full)")
    ap.add_argument("--chunk-packets", type=int, default=None,
                    help="packets per simulated chunk (default 256 quick, 64 full)")
    ap.add_argument("--out", type=Path, default=Path("results/esa"))
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    seeds = args.seeds or (1 if args.quick else 2)
    base = SimConfig(chunk_packets=args.chunk_packets or (256 if args.quick else 64))
    t0 = time.perf_counter()
    rows = run_sweep(sweep_points(args.quick, seeds), base, progress=not args.no_progress)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "esa_jct.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    md = summarize(rows, base, args.quick)
    md += f"\nWall time: {time.perf_counter() - t0:.1f} s.\n"
    (args.out / "esa_jct.md").write_text(md)
    plot(rows, args.out / "esa_jct.png")
    print(md)
    print(f"wrote {args.out}/esa_jct.csv, esa_jct.md, esa_jct.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
