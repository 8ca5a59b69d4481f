"""One claims table from every instrument: the papers' headline claims with the number each
instrument measured side by side.

    python -m emulation.claims_table [--twin results/twin] [--emulation results/emulation]
                                     [--chunk results/esa] [--out results/claims.md]

Reads ``runs.csv`` of ``make reproduce-twin`` and ``make reproduce-emulation`` (either may be
missing) and ``esa_jct.csv`` of the chunk-level simulator (``make reproduce``:
experiments.esa_jct, whose 8 jobs × 8 workers mix AB is the twin's "§7.2, 8 jobs"), evaluates
emulation.reproduce's claims on each, and writes one row per claim and setting: claim | paper
| twin | emulation | chunk-level simulator | setting. Where two instruments' numbers differ by
more than 20 %, a line below the table gives what each measured about the run that bounds it
(how far each scheme ran from its link-rate ideal, whether the emulation's links or its CPU set
the pace).
"""
from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .plots import num, read_rows
from .reproduce import Claim, claims, headroom, value

INSTRUMENTS = ("twin", "emulation", "chunk")
HEADS = {"twin": "twin", "emulation": "emulation", "chunk": "chunk-level simulator"}
# the chunk-level simulator's point that stands for a twin setting: (mix, jobs, workers) → setting
CHUNK_POINTS = {("AB", 8, 8): "§7.2, 8 jobs"}
DIFFER = 0.2              # instruments whose numbers differ by more than this get a reason line


@dataclass
class Row:
    claim: str
    paper: str
    setting: str
    measured: dict[str, str] = field(default_factory=dict)     # instrument → its number's text
    agrees: dict[str, str] = field(default_factory=dict)


def leading_number(text: str) -> float:
    """The number a claim's text starts with (a ratio "1.56x" or a reduction "50% lower")."""
    m = re.match(r"\s*(-?\d+(?:\.\d+)?)", text)
    return float(m.group(1)) if m else math.nan


def chunk_claims(path: Path) -> list[Claim]:
    """ESA over ATP and SwitchML at the chunk-level simulator's points that stand for a twin
    setting (:data:`CHUNK_POINTS`), mean JCT over its seeds."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for (mix, jobs, workers), setting in CHUNK_POINTS.items():
        sel = [r for r in rows if (r["mix"], int(r["n_jobs"]), int(r["workers"])) == (mix, jobs, workers)]
        jct = {s: [num(r["avg_jct_ms"]) for r in sel if r["scheme"] == s] for s in ("esa", "atp", "switchml")}
        if not all(jct.values()):
            continue
        mean = {s: sum(v) / len(v) for s, v in jct.items()}
        for base, name, target in (("atp", "ATP", 1.1), ("switchml", "SwitchML", 1.2)):
            ratio = mean[base] / mean["esa"]
            out.append(Claim(f"ESA avg JCT better than {name} ({setting}; target here ≥ {target:g}x)", "",
                             f"{ratio:.2f}x (ESA {mean['esa']:.3f} ms, {base} {mean[base]:.3f} ms; mix {mix})",
                             setting, "yes" if ratio >= target else "direction only" if ratio > 1 else "no"))
    return out


def merged(found: Mapping[str, Sequence[Claim]]) -> list[Row]:
    """Rows keyed by claim text (it names the setting), in the order the instruments list them."""
    rows: dict[str, Row] = {}
    for instrument in INSTRUMENTS:
        for c in found.get(instrument, ()):
            row = rows.setdefault(c.claim, Row(c.claim, c.paper, c.setting))
            row.paper = row.paper or c.paper
            row.measured[instrument] = c.emulation
            row.agrees[instrument] = c.agrees
    return list(rows.values())


def _setting_of(claim: str) -> str:
    inner = claim[claim.rfind("(") + 1:claim.rfind(")")]
    return inner.split(";")[0].strip()


def difference_notes(rows: Sequence[Row], runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """For each row whose instruments differ by more than :data:`DIFFER`, what each measured:
    every scheme's mean round over its link-rate ideal, and the emulation's pace."""
    notes = []
    for row in rows:
        vals = {i: leading_number(t) for i, t in row.measured.items()}
        vals = {i: v for i, v in vals.items() if not math.isnan(v) and v}
        if len(vals) < 2 or max(vals.values()) / min(vals.values()) <= 1 + DIFFER:
            continue
        setting = _setting_of(row.claim)
        parts = []
        for instrument, rs in runs.items():
            mine = [r for r in rs if r["setting"] == setting]
            if not mine:
                continue
            schemes = list(dict.fromkeys(str(r["scheme"]) for r in mine))
            text = ", ".join(f"{s} {headroom(mine, setting, s):.2f}x" for s in schemes)
            paced = {str(r.get("pace", "")) for r in mine} - {""}
            parts.append(f"{instrument}: round / link-rate ideal {text}"
                         + (f"; pace {'/'.join(sorted(paced))}, busiest link "
                            f"{value(mine, setting, schemes[0], 'busy_share'):.0%} busy" if instrument == "emulation"
                            and paced else ""))
        if "chunk" in vals:
            parts.append("chunk-level simulator: a different model (100 Gb/s, chunks of packets, no host "
                         "recovery; experiments/esa_model.py)")
        spread = " vs ".join(f"{i} {row.measured[i].split(' (')[0]}" for i in vals)
        notes.append(f"**{row.claim}**: {spread}. " + "; ".join(parts) + ".")
    return notes


def markdown(rows: Sequence[Row], notes: Sequence[str], sources: Mapping[str, str]) -> str:
    cell = lambda s: str(s).replace("|", "/").replace("\n", " ")       # noqa: E731
    present = [i for i in INSTRUMENTS if any(i in r.measured for r in rows)]
    lines = ["# The papers' headline claims, every instrument", "",
             *[f"* {HEADS[i]}: {src}" for i, src in sources.items()], "",
             "| claim | paper | " + " | ".join(HEADS[i] for i in present) + " |",
             "|---|---|" + "---|" * len(present)]
    for r in rows:
        lines.append(f"| {cell(r.claim)} | {cell(r.paper)} | " + " | ".join(
            cell(f"{r.measured[i]} ({r.agrees[i]})") if i in r.measured else "" for i in present) + " |")
    if notes:
        lines += ["", f"## Where instruments differ by more than {DIFFER:.0%}", ""] + [f"* {n}" for n in notes]
    lines += ["", "Each instrument's own claims.md (results/twin, results/emulation) describes its settings and, "
              "for each disagreement with the paper, what its runs measured.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulation.claims_table", description=__doc__.split("\n\n")[0])
    ap.add_argument("--twin", type=Path, default=Path("results/twin"), help="make reproduce-twin's output")
    ap.add_argument("--emulation", type=Path, default=Path("results/emulation"),
                    help="make reproduce-emulation's output")
    ap.add_argument("--chunk", type=Path, default=Path("results/esa"), help="experiments.esa_jct's output")
    ap.add_argument("--out", type=Path, default=Path("results/claims.md"))
    args = ap.parse_args(argv)
    runs: dict[str, list[dict[str, str]]] = {}
    found: dict[str, list[Claim]] = {}
    sources: dict[str, str] = {}
    for instrument, folder in (("twin", args.twin), ("emulation", args.emulation)):
        if (folder / "runs.csv").exists():
            runs[instrument] = read_rows(folder / "runs.csv")
            found[instrument] = claims(runs[instrument], {})
            sources[instrument] = str(folder / "runs.csv")
    if (args.chunk / "esa_jct.csv").exists():
        found["chunk"] = chunk_claims(args.chunk / "esa_jct.csv")
        sources["chunk"] = str(args.chunk / "esa_jct.csv")
    if not found:
        print(f"emulation.claims_table: none of {args.twin}/runs.csv, {args.emulation}/runs.csv, "
              f"{args.chunk}/esa_jct.csv exists: run make reproduce-twin, reproduce-emulation or reproduce",
              file=sys.stderr)
        return 2
    rows = merged(found)
    text = markdown(rows, difference_notes(rows, runs), sources)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
