"""InArt rate experiment (experiments/inart_rates.py) on the testbed: the Fig. 1 numbers and
the report/plot plumbing."""
from __future__ import annotations

import pytest

from experiments.inart_rates import PAPER, SCHEMES, plot, run_cases, summarize, cases_testbed


def test_testbed_rates_and_report(tmp_path):
    rows = run_cases(cases_testbed()[-2:], progress=False)       # 5 and 6 workers
    rate = {(r["workers"], r["scheme"]): r["rate_gbps"] for r in rows}
    assert rate[(6, "lbmm")] == pytest.approx(PAPER["fig1_units"]["lbmm"])
    assert rate[(6, "atp")] == pytest.approx(PAPER["fig1_units"]["atp"])
    assert rate[(6, "inart")] >= PAPER["fig1_units"]["inart"]
    for n in (5, 6):    # the paper's ordering: InArt >= R-InArt (equal split) >= ATP >= LBMM
        assert rate[(n, "inart")] >= rate[(n, "inart-equal")] - 1e-9 >= rate[(n, "atp")] - 2e-9
        assert rate[(n, "atp")] >= rate[(n, "lbmm")] - 1e-9
    for r in rows:
        if r["scheme"] not in ("lbmm", "atp-all-tor"):        # the LP-based schemes
            assert r["rate_gbps"] <= r["lp_bound_gbps"] + 1e-9
    md = summarize(rows, quick=True)
    assert "| inart |" in md and "26.2" in md
    plot(rows, tmp_path / "rates.png")
    assert (tmp_path / "rates.png").stat().st_size > 0
    assert set(r["scheme"] for r in rows) == set(SCHEMES)
