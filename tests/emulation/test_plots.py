"""The run figure (emulation.plots) from small synthetic CSVs: no Mininet."""
import csv
from pathlib import Path

from emulation.plots import main, mean_sd, plot_run, read_rows, round_stats, schemes_in_order

RESULTS = [
    {"scheme": "atp", "job": "1", "jct_s": "4.0", "mean_round_s": "2.0", "ideal_round_s": "1.6", "ps_rx_mb": "6.4",
     "ina_fraction": "0.3", "worker_resent": "10", "preemptions": "0"},
    {"scheme": "atp", "job": "2", "jct_s": "3.0", "mean_round_s": "1.5", "ideal_round_s": "1.6", "ps_rx_mb": "6.0",
     "ina_fraction": "0.35", "worker_resent": "8", "preemptions": "0"},
    {"scheme": "esa", "job": "1", "jct_s": "3.5", "mean_round_s": "1.75", "ideal_round_s": "1.6", "ps_rx_mb": "5.0",
     "ina_fraction": "0.6", "worker_resent": "30", "preemptions": "12"},
    {"scheme": "esa", "job": "2", "jct_s": "3.3", "mean_round_s": "1.65", "ideal_round_s": "1.6", "ps_rx_mb": "5.2",
     "ina_fraction": "0.62", "worker_resent": "31", "preemptions": "9"},
]
ROUNDS = [{"scheme": s, "job": j, "round": str(r), "seconds": str(t)}
          for s, j, ts in (("atp", "1", (2.1, 1.9)), ("atp", "2", (1.6, 1.4)), ("esa", "1", (1.8, 1.7)),
                           ("esa", "2", (1.7, 1.6)))
          for r, t in enumerate(ts)]


def _write(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)


def test_round_stats_over_every_round_and_the_ideal():
    stats = round_stats(RESULTS, ROUNDS)
    assert list(stats) == ["atp", "esa"]
    assert abs(stats["atp"]["mean"] - 1.75) < 1e-9
    assert stats["atp"]["sd"] > 0
    assert stats["esa"]["ideal"] == 1.6


def test_round_stats_fall_back_to_results_without_rounds():
    assert abs(round_stats(RESULTS, [])["esa"]["mean"] - 1.7) < 1e-9


def test_mean_sd_ignores_missing_values():
    assert mean_sd([1.0, float("nan"), 3.0]) == (2.0, mean_sd([1.0, 3.0])[1])
    assert mean_sd([]) == (mean_sd([])[0], 0.0)


def test_schemes_keep_first_seen_order():
    assert schemes_in_order(list(reversed(RESULTS))) == ["esa", "atp"]


def test_plot_run_writes_a_png(tmp_path):
    plot_run(RESULTS, ROUNDS, tmp_path / "run.png", "two jobs")
    assert (tmp_path / "run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_redraw_from_a_run_folder(tmp_path):
    _write(tmp_path / "results.csv", RESULTS)
    _write(tmp_path / "rounds.csv", ROUNDS)
    (tmp_path / "summary.md").write_text("# synthetic run\n")
    assert main([str(tmp_path), "--png", "fattree.png"]) == 0
    assert (tmp_path / "fattree.png").stat().st_size > 0
    assert len(read_rows(tmp_path / "results.csv")) == 4


def test_redraw_without_results_fails_cleanly(tmp_path):
    assert main([str(tmp_path)]) == 2
