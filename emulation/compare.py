"""What a run shows first: each scheme's mean JCT beside the plain PS's and ATP's, and why.

Pure (rows in, lines out): ``emulation.run`` opens summary.md and its console output with
:func:`comparison_markdown`, and ``emulation.plots`` draws :func:`comparison` as the figure's
first panel. Rows are results.csv rows (one per scheme and job, numbers or CSV strings); a run
over several losses compares the schemes at each loss separately.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

BASELINE = "ps"            # no in-network aggregation: what every paper starts from
REFERENCE = "atp"          # the INA scheme the other papers compare against
NO_GAIN = 1.05             # a scheme less than this much faster than the PS shows no gain


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _mean(values: Iterable[Any]) -> float:
    vals = [v for v in (_num(x) for x in values) if not math.isnan(v)]
    return statistics.fmean(vals) if vals else math.nan


@dataclass(frozen=True)
class SchemeSummary:
    """One scheme of a run at one loss, its jobs averaged."""
    scheme: str
    loss: float
    jct: float                 # mean job completion time (s)
    ideal: float               # mean link-rate ideal of a round (s)
    ratio_to_ideal: float      # mean round over that ideal
    busiest_link: str          # the link that carried the most in the run (first job's)
    busy: float                # measured busy share of the run's busiest link (first job's)
    pace: str                  # "links" or "CPU"
    ps_rx_mb: float            # mean MB reaching a job's PS
    ina_fraction: float
    preemptions: float
    resent: float              # fragments resent, summed over the jobs
    vs_ps: float = math.nan    # the PS's mean JCT over this one (>1: faster than the PS)
    vs_atp: float = math.nan
    ideal_vs_ps: float = math.nan      # the same ratio of the link-rate ideals


def _measured_link(row: Mapping[str, Any]) -> str:
    """The link that carried the most in the run ("95% a→b" in link_busy), else the ideal's."""
    measured = str(row.get("link_busy", "")).split()
    return measured[-1] if len(measured) == 2 else str(row.get("busiest_link", ""))


def summarise_schemes(rows: Sequence[Mapping[str, Any]]) -> list[SchemeSummary]:
    """Per (scheme, loss) in row order: jobs averaged, with the ratios to the PS and ATP of the
    same loss where the run has them."""
    keys: dict[tuple[str, float], None] = {}
    for r in rows:
        keys.setdefault((str(r["scheme"]), _num(r.get("loss", 0)) or 0.0), None)
    out = []
    for scheme, loss in keys:
        mine = [r for r in rows if str(r["scheme"]) == scheme and (_num(r.get("loss", 0)) or 0.0) == loss]
        def mean(key: str) -> float:
            return _mean(r.get(key) for r in mine)
        out.append(SchemeSummary(
            scheme, loss, mean("jct_s"), mean("ideal_round_s"), mean("ratio_to_ideal"),
            _measured_link(mine[0]), _num(mine[0].get("busy_share")), str(mine[0].get("pace", "")),
            mean("ps_rx_mb"), mean("ina_fraction"), mean("preemptions"),
            sum(_num(r.get("worker_resent", 0)) for r in mine)))
    by_key = {(s.scheme, s.loss): s for s in out}
    done = []
    for s in out:
        ps, atp = by_key.get((BASELINE, s.loss)), by_key.get((REFERENCE, s.loss))
        done.append(replace(s, vs_ps=ps.jct / s.jct if ps else math.nan,
                            vs_atp=atp.jct / s.jct if atp else math.nan,
                            ideal_vs_ps=ps.ideal / s.ideal if ps else math.nan))
    return done


def _x(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.2f}×"


def reason(s: SchemeSummary) -> str:
    """One line on what bounded ``s`` and what it saved against the PS."""
    if s.pace != "links":
        bound = (f"CPU-bound: the busiest link was only {s.busy:.0%} busy, so this measures the machine, "
                 "not the fabric")
    else:
        bound = f"paced by {s.busiest_link} ({s.busy:.0%} busy), {s.ratio_to_ideal:.2f}× its link-rate ideal"
    saved = ""
    if s.scheme != BASELINE and not math.isnan(s.ideal_vs_ps):
        saved = (f"; its ideal is {s.ideal_vs_ps:.2f}× shorter than the PS's" if s.ideal_vs_ps >= NO_GAIN else
                 "; its busiest link carries as much as the PS's does, so the plan cannot beat it here")
    extra = f"; {s.preemptions:.0f} preemptions" if s.preemptions > 0 else ""
    verdict = ""
    if s.scheme != BASELINE and not math.isnan(s.vs_ps):
        verdict = f"{s.vs_ps:.2f}× the PS's speed — " + ("no gain: " if s.vs_ps < NO_GAIN else "")
    return (f"{verdict}{bound}{saved}; PS ingress {s.ps_rx_mb:.2f} MB per job, {s.ina_fraction:.0%} of the fragments "
            f"aggregated in the network; {s.resent:.0f} resends{extra}")


def comparison_markdown(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """summary.md's opening: a table of each scheme's mean JCT and its speed-up over the plain
    PS and ATP (× > 1: faster), the link-rate ideals' ratio beside the measured one, then one
    line per scheme on what bounded it."""
    summary = summarise_schemes(rows)
    several = len({s.loss for s in summary}) > 1
    head = ["scheme"] + (["loss"] if several else []) + [
        "mean JCT (s)", f"× {BASELINE}", f"× {REFERENCE}", f"ideal × {BASELINE}", "round / ideal", "pace"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in summary:
        cells = [s.scheme] + ([f"{s.loss:g}"] if several else []) + [
            f"{s.jct:.2f}", _x(s.vs_ps), _x(s.vs_atp), _x(s.ideal_vs_ps), f"{s.ratio_to_ideal:.2f}", s.pace]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for s in summary:
        name = s.scheme + (f" at {s.loss:g} loss" if several else "")
        lines.append(f"* **{name}**: {reason(s)}.")
    lines += ["", f"× {BASELINE} / × {REFERENCE}: that scheme's mean JCT over this one's (above 1: this one is "
              f"faster); ideal × {BASELINE}: the same ratio of the link-rate ideals, what the links allow; "
              "round / ideal: mean round over its own ideal."]
    return lines


__all__ = ["BASELINE", "REFERENCE", "NO_GAIN", "SchemeSummary", "summarise_schemes", "reason",
           "comparison_markdown"]
