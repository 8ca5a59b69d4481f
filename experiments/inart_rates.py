"""InArt §5: gradient sending rate (Figs. 2, 8, 9) and communication time (Figs. 10, 11).

Every scheme is scored in InArt's model (Eq. (1)): the per-worker sending rate ``f`` that the
plan's routes allow under link, switch-aggregation and PS capacities; the communication time of
one iteration is the gradient size over ``f`` (the paper's emulation numbers follow this:
97 KB at 10.75 Mb/s is 72 ms against the 68 ms of Fig. 10). Every plan is verified by the
independent checker (``controller.check``).

Schemes (§5.1.2):

``inart``        InArt with the split re-optimised jointly with the routes (``solve_inart``
                 variant ``r-inart``; see ``controller/inart.py``)
``l-inart``      the paper's two-phase InArt: L-InArt split (Eq. (2)), then R-InArt
``inart-equal``  equal split, then R-InArt: the paper's "R-InArt" benchmark
``atp``          InArt's ATP: equal split, best-effort aggregation at each worker's ToR
                 (flows that do not fit go to the PS), least-loaded routes; expressed as
                 ``solve_inart(variant="equal-split", aggregation="tor")``, which reproduces
                 Fig. 1(b)'s rate of 2
``lbmm``         load-balanced routing without INA (``controller.baselines``)
``atp-all-tor``  for reference, ``controller.baselines``' ATP (every flow merged at its ToR,
                 no best-effort fallback), scored by the checker

Settings: the testbed of Fig. 1 in its toy units (links 6, switches 6, PSs 4; workers W1..Wn);
the emulation (§5.3.1): k=6 fat-tree, 20 Mb/s links (homogeneous) or U(10, 30) Mb/s
(heterogeneous), PS 20 Mb/s, switch aggregation 9 Mb/s, 4 PSs drawn at random, workers drawn
from the other hosts (the 1000x scaled-down 100 Gb/s setting).

``python -m experiments.inart_rates [--quick]`` writes results/inart/inart_rates.{csv,md,png}.
"""
from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from controller.check import evaluate_plan
from controller.inart import solve_inart
from controller.model import Job, Plan, SubModel, Topology
from controller.schemes import run_scheme
from controller.topologies import inart_fattree, inart_testbed

SCHEMES: tuple[str, ...] = ("inart", "l-inart", "inart-equal", "atp", "lbmm", "atp-all-tor")

# Gradient size per iteration, 1000x scaled (§5.3.1), in MB.
MODELS_MB = {"LSTM": 1.627, "VGG19": 0.548, "ResNet-50": 0.097}

# Numbers the paper states in its text (figures themselves are not in the text).
PAPER: dict[str, dict[str, float]] = {
    # Fig. 1, toy units: LBMM, ATP and InArt on the 2-switch example
    "fig1_units": {"lbmm": 4 / 3, "atp": 2.0, "inart": 2.5},
    # Fig. 2, testbed, 6 workers, VGG19, Gb/s ("R-InArt" = equal split)
    "fig2_gbps": {"inart": 26.2, "inart-equal": 23.1, "atp": 19.25, "lbmm": 15.4},
    # Fig. 8(a), homogeneous, LSTM, Mb/s
    "fig8a_mbps": {"inart": 10.75, "atp": 4.7},
    # Fig. 9(b), heterogeneous, 50 workers, Mb/s
    "fig9b_mbps": {"inart": 8.73, "atp": 4.44},
    # Fig. 10(a), homogeneous, ResNet-50, communication time (s)
    "fig10a_s": {"inart": 0.068, "atp": 0.152, "lbmm": 0.35},
    # Fig. 11(b), heterogeneous, 50 workers, communication time (s)
    "fig11b_s": {"inart": 1.52, "atp": 2.96, "lbmm": 8.13},
}


# ----------------------------------------------------------------------------- schemes
def _run(name: str, topo: Topology, job: Job, seed: int) -> tuple[float, Plan]:
    """Plan ``job`` with one scheme; returns (sending rate f in Gb/s, plan)."""
    if name == "atp":
        plan = solve_inart(topo, job, seed=seed, variant="equal-split", aggregation="tor",
                           any_split_bound=False, scheme="atp")
    elif name == "atp-all-tor":
        plan = run_scheme("atp", topo, [job], {"seed": seed})
    else:
        opts: dict[str, Any] = {"seed": seed}
        if name in ("l-inart", "inart-equal"):
            opts["any_split_bound"] = False      # the same LP as inart's bound: solved once there
        plan = run_scheme(name, topo, [job], opts)
    report = evaluate_plan(plan, topo, [job])
    if report.violations:
        raise AssertionError(f"{name} on {topo.name}: checker found " +
                             "; ".join(str(v) for v in report.violations[:3]))
    return report.metrics["throughput"], plan


# ----------------------------------------------------------------------------- settings
def cases_testbed() -> list[tuple[str, Topology, Job, int]]:
    """Fig. 1's example in its units, with the first n of W1..W6 (Fig. 2's x-axis)."""
    topo = inart_testbed(link_gbps=6, switch_capacity_gbps=6, ps_capacity_gbps=4)
    return [("testbed", topo, Job(f"testbed-{n}w", [f"w{i}" for i in range(1, n + 1)],
                                  ["ps1", "ps2"], [SubModel("VGG19", 548.0)], model="VGG19"), 0)
            for n in range(2, 7)]


def cases_fattree(workers: Sequence[int], seeds: Sequence[int]) -> list[tuple[str, Topology, Job, int]]:
    """§5.3.1: 4 random PSs and n random workers on the k=6 fat-tree, per seed."""
    out = []
    for het in (False, True):
        for seed in seeds:
            topo = inart_fattree(heterogeneous=het, seed=seed)
            hosts = topo.hosts()
            rng = random.Random(seed)
            ps = rng.sample(hosts, 4)
            rest = [h for h in hosts if h not in ps]
            rng.shuffle(rest)
            for n in workers:
                job = Job(f"ft-{n}w", rest[:n], ps, [SubModel("LSTM", MODELS_MB["LSTM"])], model="LSTM")
                out.append(("heterogeneous" if het else "homogeneous", topo, job, seed))
    return out


def run_cases(cases: Sequence[tuple[str, Topology, Job, int]], schemes: Sequence[str] = SCHEMES,
              progress: bool = True) -> list[dict[str, Any]]:
    from tqdm import tqdm
    rows = []
    for setting, topo, job, seed in tqdm(cases, desc="inart_rates", unit="case",
                                         disable=not progress, file=sys.stderr):
        bound_any = math.nan
        for name in schemes:
            t0 = time.perf_counter()
            f, plan = _run(name, topo, job, seed)
            if name == "inart":
                bound_any = plan.extra["bound_any_split"]
            rows.append({"setting": setting, "workers": len(job.workers), "seed": seed,
                         "scheme": name, "rate_gbps": f,
                         "lp_bound_gbps": math.nan if plan.bound is None else plan.bound,
                         "bound_any_split_gbps": bound_any,
                         "split": " ".join(f"{k}:{v:.3f}" for k, v in sorted(plan.split.items())),
                         "bottleneck": plan.extra.get("bottleneck", ""),
                         "seconds": time.perf_counter() - t0})
    return rows


# ----------------------------------------------------------------------------- report
def _mean_rate(rows: list[dict[str, Any]], setting: str, n: int, scheme: str) -> float:
    sel = [r["rate_gbps"] for r in rows if (r["setting"], r["workers"], r["scheme"]) == (setting, n, scheme)]
    return sum(sel) / len(sel) if sel else math.nan


def summarize(rows: list[dict[str, Any]], quick: bool) -> str:
    L = [f"# InArt sending rates ({'quick' if quick else 'full'} run)", "",
         "Rates are InArt's Eq. (1) per-worker gradient sending rate of each scheme's plan "
         "(checked by `controller.check`); communication time = gradient size / rate. "
         "Schemes and settings: docstring of `experiments/inart_rates.py`.", ""]
    n6 = {s: _mean_rate(rows, "testbed", 6, s) for s in SCHEMES}
    L += ["## Testbed (Fig. 1 units: links 6, switch 6, PS 4; 6 workers)", "",
          "| scheme | ours (units) | paper Fig. 1 (units) | ours x LBMM | paper Fig. 2 x LBMM (6 workers, Gb/s) |",
          "|---|---|---|---|---|"]
    for s in SCHEMES:
        p1 = PAPER["fig1_units"].get(s)
        p2 = PAPER["fig2_gbps"].get(s)
        c1 = "" if p1 is None else f"{p1:.3f}"
        c2 = "" if p2 is None else f"{p2 / PAPER['fig2_gbps']['lbmm']:.2f} ({p2:g})"
        L.append(f"| {s} | {n6[s]:.3f} | {c1} | {n6[s] / n6['lbmm']:.2f} | {c2} |")
    L += ["", "By number of workers (Fig. 2 shape, units):", "",
          "| workers | " + " | ".join(SCHEMES) + " |", "|---|" + "---|" * len(SCHEMES)]
    for n in sorted({r["workers"] for r in rows if r["setting"] == "testbed"}):
        L.append(f"| {n} | " + " | ".join(f"{_mean_rate(rows, 'testbed', n, s):.3f}" for s in SCHEMES) + " |")
    for setting in ("homogeneous", "heterogeneous"):
        ns = sorted({r["workers"] for r in rows if r["setting"] == setting})
        if not ns:
            continue
        L += ["", f"## Fat-tree, {setting} links (Fig. 9 shape: rate in Mb/s vs workers)", "",
              "| workers | " + " | ".join(SCHEMES) + " | LP bound (any split) |",
              "|---|" + "---|" * (len(SCHEMES) + 1)]
        for n in ns:
            b = [r["bound_any_split_gbps"] for r in rows if (r["setting"], r["workers"], r["scheme"]) == (setting, n, "inart")]
            L.append(f"| {n} | " + " | ".join(f"{1e3 * _mean_rate(rows, setting, n, s):.2f}" for s in SCHEMES) +
                     f" | {1e3 * sum(b) / len(b):.2f} |")
    nmax = max((r["workers"] for r in rows if r["setting"] != "testbed"), default=None)
    if nmax is not None:
        L += ["", f"## Against the paper's emulation numbers ({nmax} workers)", "",
              "| figure | metric | scheme | ours | paper |", "|---|---|---|---|---|"]

        def rate(setting: str, s: str) -> float:
            return _mean_rate(rows, setting, nmax, s)

        for fig, setting, key in (("8(a)", "homogeneous", "fig8a_mbps"), ("9(b)", "heterogeneous", "fig9b_mbps")):
            for s, p in PAPER[key].items():
                L.append(f"| {fig} | rate, Mb/s | {s} | {1e3 * rate(setting, s):.2f} | {p:g} |")
        for fig, setting, key, model in (("10(a)", "homogeneous", "fig10a_s", "ResNet-50"),
                                         ("11(b)", "heterogeneous", "fig11b_s", "LSTM")):
            for s, p in PAPER[key].items():
                t = MODELS_MB[model] * 8e-3 / rate(setting, s)
                L.append(f"| {fig} | {model} comm. time, s | {s} | {t:.3f} | {p:g} |")
        het = {s: rate("heterogeneous", s) for s in SCHEMES}
        L += ["", "Headline ratios (heterogeneous, largest worker count):", "",
              "| claim | ours | paper |", "|---|---|---|",
              f"| InArt rate over ATP | +{100 * (het['inart'] / het['atp'] - 1):.0f}% | +97% |",
              f"| InArt comm. time vs ATP | -{100 * (1 - het['atp'] / het['inart']):.0f}% | -49% |",
              f"| InArt comm. time vs LBMM | -{100 * (1 - het['lbmm'] / het['inart']):.0f}% | -81% |"]
    L += ["", "Gradient sizes (1000x scaled): " + ", ".join(f"{m} {v * 1e3:g} KB" for m, v in MODELS_MB.items()) +
          ". In Eq. (1) the rate does not depend on the model, so Fig. 8's three models share one rate "
          "here; Figs. 10-11 follow from it."]
    return "\n".join(L) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    settings = [s for s in ("testbed", "homogeneous", "heterogeneous") if any(r["setting"] == s for r in rows)]
    fig, axes = plt.subplots(1, len(settings), figsize=(5 * len(settings), 4.2), squeeze=False)
    for ax, setting in zip(axes[0], settings):
        ns = sorted({r["workers"] for r in rows if r["setting"] == setting})
        scale, unit = (1.0, "units") if setting == "testbed" else (1e3, "Mb/s")
        for s in SCHEMES:
            ax.plot(ns, [scale * _mean_rate(rows, setting, n, s) for n in ns], marker="o", label=s)
        if setting == "testbed":
            for s, p in PAPER["fig1_units"].items():
                ax.scatter([6], [p], marker="*", s=120, color="k", zorder=5)
            ax.annotate("paper Fig. 1", (6, PAPER["fig1_units"]["inart"]), textcoords="offset points",
                        xytext=(-70, 8), fontsize=8)
        else:
            key = "fig8a_mbps" if setting == "homogeneous" else "fig9b_mbps"
            for s, p in PAPER[key].items():
                ax.scatter([max(ns)], [p], marker="*", s=120, color="k", zorder=5)
            ax.annotate("paper (InArt, ATP)", (max(ns), PAPER[key]["inart"]), textcoords="offset points",
                        xytext=(-100, 8), fontsize=8)
        ax.set_xlabel("workers")
        ax.set_ylabel(f"sending rate ({unit})")
        ax.set_title({"testbed": "Testbed, Fig. 1 units (Fig. 2 shape)",
                      "homogeneous": "Fat-tree k=6, 20 Mb/s (Fig. 9a shape)",
                      "heterogeneous": "Fat-tree k=6, 10-30 Mb/s (Fig. 9b shape)"}[setting], fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.inart_rates", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10/30/50 workers, one seed (< 60 s)")
    ap.add_argument("--seeds", type=int, default=None, help="fat-tree seeds (default 1 quick, 3 full)")
    ap.add_argument("--out", type=Path, default=Path("results/inart"))
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    seeds = range(args.seeds or (1 if args.quick else 3))
    workers = (10, 30, 50) if args.quick else (10, 20, 30, 40, 50)
    t0 = time.perf_counter()
    rows = run_cases(cases_testbed() + cases_fattree(workers, seeds), progress=not args.no_progress)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "inart_rates.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    md = summarize(rows, args.quick) + f"\nWall time: {time.perf_counter() - t0:.1f} s.\n"
    (args.out / "inart_rates.md").write_text(md)
    plot(rows, args.out / "inart_rates.png")
    print(md)
    print(f"wrote {args.out}/inart_rates.csv, inart_rates.md, inart_rates.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
