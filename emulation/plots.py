"""Figures of an emulation run, drawn from its CSV rows (results.csv, rounds.csv).

    python -m emulation.plots results/fattree [--title TEXT]     # redraw <dir>/<topology>.png

Every panel that compares schemes puts the schemes on the vertical axis, one label each, in
the same order in every panel, so labels never overlap and a scheme reads across the figure.
A bar is the mean over the scheme's jobs (and runs), each job a marker on it, error bars one
standard deviation over the rounds and runs. Rows may come from ``csv.DictReader`` (strings)
or from ``emulation.report.summarise`` (numbers); a ``run`` column, where present, names repeated
runs of the same setting.
"""
from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from matplotlib.ticker import MaxNLocator

from .compare import BASELINE, REFERENCE, summarise_schemes

Row = Mapping[str, Any]
JOB_MARKERS = "o^sDv<>pP*"


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(value: Any) -> float:
    """A CSV cell as a number (NaN when empty or not numeric)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def schemes_in_order(rows: Iterable[Row]) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        seen.setdefault(str(r["scheme"]), None)
    return list(seen)


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard deviation (0 for fewer than two values) of the non-NaN values."""
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return math.nan, 0.0
    return statistics.fmean(vals), (statistics.stdev(vals) if len(vals) > 1 else 0.0)


def round_stats(results: Sequence[Row], rounds: Sequence[Row]) -> dict[str, dict[str, float]]:
    """Per scheme: mean round time and its standard deviation over every (run, job, round) of
    rounds.csv (results.csv's mean_round_s where no rounds are given), and the link-rate ideal
    (ideal_round_s, mean over jobs and runs)."""
    out = {}
    for s in schemes_in_order(results):
        per_round = [num(r["seconds"]) for r in rounds if r["scheme"] == s]
        if not per_round:
            per_round = [num(r["mean_round_s"]) for r in results if r["scheme"] == s]
        mean, sd = mean_sd(per_round)
        ideal, _ = mean_sd([num(r.get("ideal_round_s")) for r in results if r["scheme"] == s])
        out[s] = {"mean": mean, "sd": sd, "ideal": ideal}
    return out


def scheme_colors(schemes: Sequence[str]) -> dict[str, str]:
    return {s: f"C{i % 10}" for i, s in enumerate(schemes)}


def scheme_bars(ax: Any, results: Sequence[Row], key: str, schemes: Sequence[str], colors: Mapping[str, str],
                *, xlabel: str, fmt: str = "{:.2f}") -> None:
    """Per scheme one horizontal bar, the mean of ``key`` over its jobs and runs, with one
    standard deviation over the runs (per job, averaged) and a marker per job."""
    jobs = sorted({str(r["job"]) for r in results}, key=lambda j: (len(j), j))
    for y, s in enumerate(schemes):
        mine = [r for r in results if r["scheme"] == s]
        mean, _ = mean_sd([num(r[key]) for r in mine])
        spread = [mean_sd([num(r[key]) for r in mine if str(r["job"]) == j])[1] for j in jobs]
        sd = statistics.fmean(spread) if spread else 0.0
        ax.barh(y, mean, color=colors[s], alpha=0.75, xerr=sd or None, error_kw={"elinewidth": 1, "capsize": 3})
        right = mean + sd
        if len(jobs) > 1:
            for k, j in enumerate(jobs):
                v, _ = mean_sd([num(r[key]) for r in mine if str(r["job"]) == j])
                ax.plot(v, y, JOB_MARKERS[k % len(JOB_MARKERS)], color="black", ms=4,
                        label=f"job {j}" if y == 0 else None)
                right = max(right, v) if not math.isnan(v) else right
        if not math.isnan(mean):          # the value right of the bar, its error bar and its markers
            ax.annotate(fmt.format(mean), (right, y), xytext=(5, 0), textcoords="offset points", va="center",
                        fontsize=7)
    _scheme_axis(ax, schemes)
    ax.set_xlabel(xlabel)
    ax.margins(x=0.18)
    ax.xaxis.set_major_locator(MaxNLocator(5))


def legend_below(ax: Any) -> None:
    """The axes' legend under its x label, so it covers no bar."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)


def _scheme_axis(ax: Any, schemes: Sequence[str]) -> None:
    ax.set_yticks(range(len(schemes)), schemes)
    ax.invert_yaxis()                       # first scheme on top, as in the tables
    ax.grid(axis="x", alpha=0.3)


def round_vs_ideal(ax: Any, stats: Mapping[str, Mapping[str, float]], schemes: Sequence[str],
                   colors: Mapping[str, str]) -> None:
    """Per scheme its mean round (± sd over rounds and runs) above a grey bar for its link-rate
    ideal, labelled with their ratio."""
    h = 0.38
    for y, s in enumerate(schemes):
        st = stats[s]
        ax.barh(y - h / 2, st["mean"], h, color=colors[s], xerr=st["sd"] or None, error_kw={"elinewidth": 1, "capsize": 3},
                label="measured (± sd over rounds)" if y == 0 else None)
        if not math.isnan(st["ideal"]):
            ax.barh(y + h / 2, st["ideal"], h, color="0.8", hatch="//", edgecolor="0.5",
                    label="link-rate ideal" if y == 0 else None)
            ratio = st["mean"] / st["ideal"] if st["ideal"] else math.nan
            ax.annotate(f"{ratio:.2f}×", (st["mean"] + st["sd"], y - h / 2), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=7)
    _scheme_axis(ax, schemes)
    ax.set_xlabel("mean round time (s); × = ratio to the ideal")
    ax.margins(x=0.15)
    ax.xaxis.set_major_locator(MaxNLocator(5))


def rounds_over_time(ax: Any, rounds: Sequence[Row], schemes: Sequence[str], colors: Mapping[str, str]) -> None:
    """Per scheme the time of each round (mean over jobs and runs), rounds numbered from 1 on
    integer ticks; the legend outside the axes."""
    for s in schemes:
        by_round: dict[int, list[float]] = {}
        for r in rounds:
            if r["scheme"] == s:
                by_round.setdefault(int(num(r["round"])), []).append(num(r["seconds"]))
        xs = sorted(by_round)
        ax.plot([x + 1 for x in xs], [statistics.fmean(by_round[x]) for x in xs], "o-", ms=3, color=colors[s],
                label=s)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round")
    ax.set_ylabel("s (mean over jobs)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def plot_run(results: Sequence[Row], rounds: Sequence[Row], path: Path, title: str) -> None:
    """The figure of one emulation run (``results``: results.csv rows, ``rounds``: rounds.csv
    rows): first each scheme's mean JCT against the plain PS's and ATP's, then mean round vs link-rate ideal, JCT, time per round, PS ingress, in-network fraction,
    resends and preemptions."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    schemes = schemes_in_order(results)
    colors = scheme_colors(schemes)
    height = 2.2 + 0.32 * len(schemes)
    fig = plt.figure(figsize=(15, 3 * height))
    grid = fig.add_gridspec(3, 3, wspace=0.45, hspace=0.55)
    a_cmp = fig.add_subplot(grid[0, :])
    (a_round, a_jct, a_time), (a_ps, a_ina, a_resend) = [[fig.add_subplot(grid[r, c]) for c in range(3)]
                                                         for r in (1, 2)]
    speedups(a_cmp, results, colors)
    round_vs_ideal(a_round, round_stats(results, rounds), schemes, colors)
    a_round.set_title("round time vs its link-rate ideal", fontsize=10)
    legend_below(a_round)
    scheme_bars(a_jct, results, "jct_s", schemes, colors, xlabel="job completion time (s)")
    a_jct.set_title("JCT: mean over jobs, marker per job", fontsize=10)
    legend_below(a_jct)
    if rounds:
        rounds_over_time(a_time, rounds, schemes, colors)
    a_time.set_title("time per round", fontsize=10)
    scheme_bars(a_ps, results, "ps_rx_mb", schemes, colors, xlabel="MB reaching the PS per job")
    a_ps.set_title("PS ingress", fontsize=10)
    scheme_bars(a_ina, results, "ina_fraction", schemes, colors, xlabel="share of fragments aggregated by switches")
    a_ina.set_title("aggregated in network", fontsize=10)
    a_ina.set_xlim(0, 1.15)
    _resends(a_resend, results, schemes)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def speedups(ax: Any, results: Sequence[Row], colors: Mapping[str, str]) -> None:
    """The run's verdict: per scheme (and loss) its mean JCT, labelled with its speed-up over
    the plain PS and ATP and the link-rate ideals' speed-up over the PS (emulation.compare)."""
    summary = summarise_schemes(results)
    several = len({s.loss for s in summary}) > 1
    names = [s.scheme + (f" at {s.loss:g}" if several else "") for s in summary]
    for y, s in enumerate(summary):
        ax.barh(y, s.jct, color=colors.get(s.scheme, "C0"), alpha=0.8)
        parts = [f"{s.jct:.2f} s"]
        if s.scheme != BASELINE and not math.isnan(s.vs_ps):
            parts.append(f"{s.vs_ps:.2f}× {BASELINE}")
        if s.scheme != REFERENCE and not math.isnan(s.vs_atp):
            parts.append(f"{s.vs_atp:.2f}× {REFERENCE}")
        if s.scheme != BASELINE and not math.isnan(s.ideal_vs_ps):
            parts.append(f"ideal {s.ideal_vs_ps:.2f}× {BASELINE}")
        if s.pace and s.pace != "links":
            parts.append(f"{s.pace}-bound")
        ax.annotate(", ".join(parts), (s.jct, y), xytext=(5, 0), textcoords="offset points", va="center", fontsize=8)
    _scheme_axis(ax, names)
    ax.set_xlabel(f"mean job completion time (s); N× {BASELINE}: how many times faster than the plain PS")
    ax.set_title("what in-network aggregation buys: each scheme against the plain PS and ATP", fontsize=11)
    ax.margins(x=0.45)


def _resends(ax: Any, results: Sequence[Row], schemes: Sequence[str]) -> None:
    """Per scheme the fragments workers resent and the partials ESA swapped out to the PS
    (summed over jobs, mean over runs)."""
    h = 0.38
    runs = max(1, len({str(r.get("run", "")) for r in results}))
    for y, s in enumerate(schemes):
        mine = [r for r in results if r["scheme"] == s]
        resent = sum(num(r["worker_resent"]) for r in mine) / runs
        pre = sum(num(r.get("preemptions", 0)) for r in mine) / runs
        ax.barh(y - h / 2, resent, h, color="C7", label="worker resends" if y == 0 else None)
        ax.barh(y + h / 2, pre, h, color="C3", label="ESA preemptions" if y == 0 else None)
    _scheme_axis(ax, schemes)
    ax.set_xlabel("count per run (all jobs)")
    ax.set_title("resends and preemptions", fontsize=10)
    ax.xaxis.set_major_locator(MaxNLocator(4))
    legend_below(ax)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulation.plots",
                                 description="Redraw an emulation run's figure from its results.csv and rounds.csv.")
    ap.add_argument("dir", type=Path, help="the run's --out folder (e.g. results/fattree)")
    ap.add_argument("--png", default=None, help="file name in DIR (default: the existing *.png, else run.png)")
    ap.add_argument("--title", default=None, help="figure title (default: summary.md's heading)")
    args = ap.parse_args(argv)
    results_csv, rounds_csv = args.dir / "results.csv", args.dir / "rounds.csv"
    if not results_csv.exists():
        print(f"emulation.plots: no {results_csv}", file=sys.stderr)
        return 2
    png = args.png or next((p.name for p in sorted(args.dir.glob("*.png"))), "run.png")
    title = args.title
    if title is None:
        summary = args.dir / "summary.md"
        first = summary.read_text().splitlines()[0] if summary.exists() else ""
        title = first.lstrip("# ") or str(args.dir)
    plot_run(read_rows(results_csv), read_rows(rounds_csv) if rounds_csv.exists() else [], args.dir / png, title)
    print(f"wrote {args.dir / png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
