"""What a run shows first (emulation.compare) and the pool the planners' memory holds."""
from __future__ import annotations

import argparse

import pytest

from emulation.compare import comparison_markdown, summarise_schemes
from emulation.run import check_args, main, pool_for_memory

def _row(scheme: str, job: int, jct: float, ideal: float, *, loss: float = 0.0, busy: float = 0.95,
         pace: str = "links") -> dict:
    return {"scheme": scheme, "job": job, "loss": loss, "jct_s": jct, "ideal_round_s": ideal,
            "ratio_to_ideal": 1.05, "busiest_link": "core1→agg7", "link_busy": f"{busy:.0%} agg2→core4",
            "busy_share": busy, "pace": pace, "ps_rx_mb": 1.0, "ina_fraction": 0.5, "preemptions": 0,
            "worker_resent": 2}

ROWS = [_row("ps", 1, 12.0, 3.0), _row("ps", 2, 12.0, 3.0), _row("atp", 1, 10.0, 2.5), _row("atp", 2, 10.0, 2.5),
        _row("goat", 1, 8.0, 2.0), _row("goat", 2, 8.0, 2.0), _row("aro", 1, 11.8, 3.0, busy=0.5, pace="CPU"),
        _row("aro", 2, 11.8, 3.0, busy=0.5, pace="CPU")]

def test_speedups_are_over_the_plain_ps_and_atp() -> None:
    by = {s.scheme: s for s in summarise_schemes(ROWS)}
    assert by["goat"].vs_ps == pytest.approx(1.5) and by["goat"].vs_atp == pytest.approx(1.25)
    assert by["atp"].vs_ps == pytest.approx(1.2) and by["goat"].ideal_vs_ps == pytest.approx(1.5)
    assert by["ps"].vs_ps == pytest.approx(1.0)
    assert by["goat"].busiest_link == "agg2→core4"            # measured, not the ideal's

def test_summary_opens_with_the_comparison_and_names_what_bounded_each() -> None:
    lines = comparison_markdown(ROWS)
    assert lines[0].startswith("| scheme | mean JCT (s) | × ps | × atp |")
    goat = next(line for line in lines if line.startswith("| goat |"))
    assert "1.50×" in goat and "1.25×" in goat
    aro = next(line for line in lines if line.startswith("* **aro**"))
    assert "no gain" in aro and "CPU-bound" in aro and "carries as much as the PS's" in aro
    assert "paced by agg2→core4" in next(line for line in lines if line.startswith("* **goat**"))

def test_several_losses_compare_within_each_loss() -> None:
    rows = ROWS[:4] + [_row("ps", 1, 24.0, 3.0, loss=0.01), _row("atp", 1, 12.0, 2.5, loss=0.01)]
    by = {(s.scheme, s.loss): s for s in summarise_schemes(rows)}
    assert by[("atp", 0.01)].vs_ps == pytest.approx(2.0) and by[("atp", 0.0)].vs_ps == pytest.approx(1.2)
    assert "| loss |" in comparison_markdown(rows)[0]

@pytest.mark.parametrize("memory,lanes,limit,pool", [(500_000, 64, 16384, 1024), (500_000, 32, 8192, 2048),
                                                      (100, 64, 16384, 1), (1e9, 64, 16384, 16384)])
def test_the_pool_is_what_the_memory_holds(memory: float, lanes: int, limit: int, pool: int) -> None:
    assert pool_for_memory(memory, lanes, limit) == pool

def test_pool_follows_switch_memory_and_cannot_exceed_it(capsys: pytest.CaptureFixture[str]) -> None:
    parser_args = argparse.Namespace(
        topology="fattree", k=4, hosts_per_edge=4, programmable=0.2, jobs=2, workers=6, mb="0.25", stagger=0.0,
        compute="0", jitter=0.0, ps_per_job=1, schemes="atp,goat", switch_mb=0.5, pool=None, loss="0",
        link_mbps="16", window=8, timeout=300.0, rto_min=0.2, rto_max=0.5, rounds=1, seed=4, switch="p4sim",
        arch="v1model")
    check_args(parser_args)
    assert parser_args.pool == 1024                     # 0.5 MB of 64-lane aggregators
    assert main(["fattree", "--switch-mb", "0.5", "--pool", "4096"]) == 2
    err = capsys.readouterr().err
    assert "--pool 4096" in err and "1024 aggregators" in err and len(err.strip().splitlines()) == 1
