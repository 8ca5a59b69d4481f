"""What an emulated run writes: results.csv (:func:`summarise`: one row per scheme and job),
rounds.csv (:func:`round_rows`: one per round), summary.md (emulation.compare's comparison, the
per-job table, notes on who set the pace) and a PNG (emulation.plots).
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from controller.deploy import ina_fraction

from .bounds import host_link_round_seconds, round_floor, spec_of
from .calibrate import BUSY_LINK_BOUND, pace_note
from .compare import comparison_markdown
from .experiment import JobSpec
from .plots import plot_run

if TYPE_CHECKING:
    from .schemes import SchemeRun


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
            # no scheme's JCT can be shorter: each round the slowest worker's computation, then a
            # worker's frames back to back on its own link (layered: as they are computed)
            "jct_floor_s": round(n_rounds * round_floor(dep.submodel_sizes, compute, link_mbps, run.lanes,
                                                        run.layered), 3),
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
            # aggregation tasks (fragment × round) whose result a switch multicast without the PS:
            # unlike ina_fraction, a partial swapped out to the PS (ESA) makes its task the PS's;
            # ATP's results all pass its PS, by design
            "switch_results": round(1.0 - res.ps.get("completed", 0) / (frags / len(res.workers)), 4)
            if frags and res.workers else "",
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
            # the twin's eviction log (ESA): emulation.twin.EvictionLog
            **res.extra.get("evictions", {}),
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
                   "busiest_link", "ratio_to_host_link", "link_busy", "pace", "exact", "ps_rx_mb", "ina_fraction",
                   "switch_results", "preemptions", "worker_resent", "dropped", "resends_per_drop", "ina_switches"]


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
    lines += ["", "jct_s: the job's slowest worker, from the job's start (its first round's computation included) to the last result of its last round "
              "(mean_round_s: that over the rounds; per round: rounds.csv); jct_floor_s: the least JCT any scheme could reach (each round the slowest worker's computation, then a worker's frames back to back on its own link; a layered worker's sub-models from when backpropagation computes them); ideal_round_s: the link-rate ideal, "
              "the busiest link's bytes in a lossless round of the plan (jobs side by side) at its rate "
              "(busiest_link: which one); ratio_to_ideal: mean round / that; ratio_to_host_link: mean round / a "
              "worker's frames back to back on its own link (the ideal of a fabric sharing no link); link_busy: the "
              "link that carried the most (at its rate) from the start until every worker was done, measured on "
              "the switch interfaces, and the share of that time it was busy; pace: links if that share was at least "
              f"{BUSY_LINK_BOUND:.0%}, else CPU (the machine, not the links, set the round times); exact: every worker, every round; ps_rx: what "
              "reached the job's PS (bytes with Ethernet/IPv4/UDP headers); ina_fraction: share of the workers' "
              "fragments that switches aggregated (not received plain by the PS); switch_results: share of the "
              "aggregation tasks (fragment × round) whose result a switch multicast without the PS (a partial "
              "swapped out to the PS makes its task the PS's; ATP's results all pass its PS); preemptions: partials the "
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
