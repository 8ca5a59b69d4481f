"""emulation.claims_table: every instrument's numbers in one table, and a reason line wherever
two of them differ by more than 20 %."""
import csv

from emulation.claims_table import chunk_claims, leading_number, main
from emulation.reproduce import write_csv


def _row(setting, scheme, job, jct, **kw):
    return {"comparison": "esa", "setting": setting, "scheme": scheme, "job": job, "run": 0, "mb": 0.2,
            "jct_s": jct, "mean_round_s": jct / 3, "ideal_round_s": 0.5, "ps_rx_mb": 1.0, "ina_fraction": 0.5,
            "preemptions": 0, "worker_resent": 0, "exact": True, "busy_share": 0.4, "pace": "CPU", **kw}


def _runs(folder, esa_jct):
    folder.mkdir(parents=True)
    write_csv([_row("3 jobs", "esa", j, esa_jct) for j in (1, 2, 3)]
              + [_row("3 jobs", s, j, 3.0) for s in ("atp", "switchml") for j in (1, 2, 3)], folder / "runs.csv")


def test_numbers_side_by_side_and_differences_explained(tmp_path) -> None:
    _runs(tmp_path / "twin", 2.0)             # ESA 1.5x both baselines on the twin
    _runs(tmp_path / "emu", 2.7)              # 1.11x in the emulation: they differ by more than 20 %
    chunk = tmp_path / "esa"
    chunk.mkdir()
    with open(chunk / "esa_jct.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["mix", "n_jobs", "workers", "seed", "scheme", "avg_jct_ms"])
        w.writeheader()
        for seed in (0, 1):
            w.writerows([{"mix": "AB", "n_jobs": 8, "workers": 8, "seed": seed, "scheme": s, "avg_jct_ms": v}
                         for s, v in (("esa", 4.0), ("atp", 6.0), ("switchml", 3.0))])
    out = tmp_path / "claims.md"
    assert main(["--twin", str(tmp_path / "twin"), "--emulation", str(tmp_path / "emu"), "--chunk", str(chunk),
                 "--out", str(out)]) == 0
    text = out.read_text()
    assert "| claim | paper | twin | emulation | chunk-level simulator |" in text
    line = next(l for l in text.splitlines() if l.startswith("| ESA avg JCT better than ATP (3 jobs"))
    assert "1.50x" in line and "1.11x" in line and "up to 1.35x" in line
    assert "## Where instruments differ by more than 20%" in text
    note = next(l for l in text.splitlines() if l.startswith("* **ESA avg JCT better than ATP (3 jobs"))
    assert "twin 1.50x vs emulation 1.11x" in note and "pace CPU" in note
    # the chunk-level simulator's 8x8 mix AB stands for the twin's §7.2 with 8 jobs
    assert [(c.claim.split(" (")[0], c.emulation.split(" ")[0]) for c in chunk_claims(chunk / "esa_jct.csv")] == [
        ("ESA avg JCT better than ATP", "1.50x"), ("ESA avg JCT better than SwitchML", "0.75x")]


def test_nothing_to_merge_is_one_line(tmp_path, capsys) -> None:
    assert main(["--twin", str(tmp_path / "a"), "--emulation", str(tmp_path / "b"), "--chunk", str(tmp_path / "c"),
                 "--out", str(tmp_path / "x.md")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_leading_number() -> None:
    assert leading_number("1.56x (ESA 2.40 s)") == 1.56 and leading_number("50% lower (0.7 vs 1.5)") == 50
    assert leading_number("no data") != leading_number("no data")          # nan
