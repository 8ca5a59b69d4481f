"""emulation.reproduce's pure parts: settings, the claims from synthetic rows, the table and
figures it writes (no Mininet)."""
import csv

import pytest

from emulation.reproduce import (Claim, claims, main, per_run, plot_comparison, settings, verdict, write_claims,
                                 write_csv)


def _row(comparison, setting, scheme, job, run, **kw):
    base = {"comparison": comparison, "setting": setting, "scheme": scheme, "job": job, "run": run, "mb": 0.2,
            "jct_s": 4.0, "mean_round_s": 2.0, "ideal_round_s": 1.8, "ps_rx_mb": 5.0, "ina_fraction": 0.5,
            "preemptions": 0, "worker_resent": 0, "exact": True}
    return {**base, **kw}


ROWS = (
    [_row("esa", "3 jobs", "esa", j, r, jct_s=3.0 + j / 10, preemptions=20) for j in (1, 2, 3) for r in (0, 1)]
    + [_row("esa", "3 jobs", "atp", j, r, jct_s=3.6 + j / 10) for j in (1, 2, 3) for r in (0, 1)]
    + [_row("esa", "3 jobs", "switchml", j, r, jct_s=3.3 + j / 10) for j in (1, 2, 3) for r in (0, 1)]
    + [_row("goat", "GOAT fat-tree", "goat", 1, 0, ps_rx_mb=1.0, mean_round_s=1.5, ina_fraction=0.9),
       _row("goat", "GOAT fat-tree", "atp", 1, 0, ps_rx_mb=5.0, mean_round_s=2.0, ina_fraction=0.3)]
    + [_row("aro", "ARO fat-tree, 2 jobs", "aro", j, 0, mean_round_s=1.0) for j in (1, 2)]
    + [_row("aro", "ARO fat-tree, 2 jobs", "random", j, 0, mean_round_s=2.0) for j in (1, 2)]
    # InArt's job split over two PSes: parts 1 and 1001 are one job
    + [_row("inart", "InArt fat-tree, 2 PSes", "inart", 1, 0, mean_round_s=1.0, ps_rx_mb=1.0, jct_s=2.0),
       _row("inart", "InArt fat-tree, 2 PSes", "inart", 1001, 0, mean_round_s=1.2, ps_rx_mb=1.5, jct_s=2.4),
       _row("inart", "InArt fat-tree, 2 PSes", "atp", 1, 0, mean_round_s=2.0, ps_rx_mb=5.0)]
)


def test_settings_scale_and_quick_is_smaller():
    full, quick = settings(), settings(quick=True)
    assert {s.comparison for s in full} == {"esa", "goat", "aro", "inart"}
    emulated = [s for s in full if s.comparison == "esa" and "emulation" in s.instruments]
    assert [s.jobs for s in emulated] == [2, 3, 4, 3, 4, 3, 4]
    # §7.2 on 16 servers, with its memory and with memory below the jobs' round trips: the
    # emulation's links serialize every frame there, as the twin's do
    assert [(s.pool, s.serialize) for s in emulated if s.name.startswith("§7.2")] == [(64, True)] * 2 + [(8, True)] * 2
    # ESA §7.2 at its scale: the twin only, one switch, 8 workers per job, up to 8 jobs
    scaled = [s for s in full if s.instruments == ("twin",) and s.comparison == "esa" and not s.layered]
    assert {s.workers for s in scaled} == {8}
    assert [s.jobs for s in scaled] == [2, 3, 4, 8, 3, 4]
    # and with memory below the contending jobs' round trips, as §7.2's is at 8 jobs
    assert [s.pool for s in scaled] == [16, 16, 16, 16, 8, 8] and "BDPs" in scaled[-1].name
    # the 16-server ones with scarce memory also layer by layer (the twin only)
    layered = [s for s in full if s.layered]
    assert [(s.jobs, s.pool, s.instruments) for s in layered] == [(3, 8, ("twin",)), (4, 8, ("twin",))]
    assert {s.topology for s in scaled} == {"single"} and all(s.loss_detection == "dupack" for s in scaled)
    # ARO's multi-pipeline leaf-spine and InArt's k=6 fat-tree: the twin only
    assert {(s.comparison, s.topology) for s in full if s.instruments == ("twin",) and s.comparison != "esa"} == {
        ("aro", "leaf-spine-4pipe"), ("inart", "inart")}
    assert sum(len(s.schemes) for s in quick) < sum(len(s.schemes) for s in full)
    esa = next(s for s in full if s.comparison == "esa" and s.jobs == 3)
    assert len({sp.mb for sp in esa.specs()}) == 3          # jobs of different sizes
    assert "3 job(s)" in esa.describe() and "pool 8" in esa.describe()


def test_per_run_averages_jobs_and_merges_a_jobs_parts():
    assert per_run(ROWS, "3 jobs", "atp", "jct_s") == pytest.approx([3.8, 3.8])
    assert per_run(ROWS, "InArt fat-tree, 2 PSes", "inart", "ps_rx_mb") == [2.5]       # parts' PS ingress add up
    assert per_run(ROWS, "InArt fat-tree, 2 PSes", "inart", "mean_round_s") == [1.2]   # the slower part


def test_verdict():
    assert verdict(1.2, 1.1) == "yes"
    assert verdict(1.05, 1.1) == "direction only"
    assert verdict(0.9, 1.1) == "no"


def test_claims_from_rows():
    found = {c.claim: c for c in claims(ROWS, {"3 jobs": "fat-tree, 3 jobs"})}
    atp = next(c for k, c in found.items() if k.startswith("ESA avg JCT better than ATP"))
    assert atp.emulation.startswith("1.19x") and atp.agrees == "yes" and atp.setting == "fat-tree, 3 jobs"
    sml = next(c for k, c in found.items() if "SwitchML" in k)
    assert sml.agrees == "direction only" and "PS ingress" in sml.reason and "swapped out 20" in sml.reason
    ps = next(c for k, c in found.items() if k.startswith("GOAT PS ingress"))
    assert ps.emulation.startswith("80% lower") and ps.agrees == "yes"
    aro = next(c for k, c in found.items() if k.startswith("ARO throughput over RANDOM"))
    assert aro.emulation.startswith("2.00x") and aro.agrees == "direction only"
    assert any(k.startswith("INART communication time below ATP") for k in found)


def test_esa_reason_names_a_link_that_did_not_pace_the_run_and_preemptions_per_task():
    """Memory-bound rows: the busiest link half busy, 60 fragments per worker and 90 preemptions
    per job: 1.5 per aggregation task, more than once, so the reason says the aggregators thrash."""
    extra = dict(link_busy="50% leaf2→spine1", busy_share=0.5, workers=4, worker_fragments=240)
    rows = ([_row("esa", "3 jobs", "esa", j, 0, jct_s=5.0, preemptions=90, **extra) for j in (1, 2, 3)]
            + [_row("esa", "3 jobs", "atp", j, 0, jct_s=4.5, **extra) for j in (1, 2, 3)])
    atp = next(c for c in claims(rows, {}) if c.claim.startswith("ESA avg JCT better than ATP"))
    assert atp.agrees == "no"
    assert "was 50% busy in atp's run: not the limit" in atp.reason
    assert "1.50 times per aggregation task (more than once" in atp.reason
    busy = [{**r, "busy_share": 0.96} for r in rows]
    assert "the links, not aggregator memory, set the pace" in next(
        c for c in claims(busy, {}) if c.claim.startswith("ESA avg JCT better than ATP")).reason


def test_esa_reason_says_when_the_baseline_leaves_no_room_for_the_target():
    """SwitchML at 1.05x the least JCT any scheme could reach: a 1.2x gain cannot appear."""
    rows = ([_row("esa", "3 jobs", "esa", j, 0, jct_s=4.1, jct_floor_s=4.0) for j in (1, 2, 3)]
            + [_row("esa", "3 jobs", "switchml", j, 0, jct_s=4.2, jct_floor_s=4.0) for j in (1, 2, 3)]
            + [_row("esa", "3 jobs", "atp", j, 0, jct_s=6.0, jct_floor_s=4.0) for j in (1, 2, 3)])
    found = {c.claim.split(" (")[0]: c for c in claims(rows, {})}
    sml = found["ESA avg JCT better than SwitchML"]
    assert sml.agrees == "direction only"
    assert "below 4.00 s here" in sml.reason and "1.05x that, so no scheme can be 1.2x faster" in sml.reason
    assert found["ESA avg JCT better than ATP"].agrees == "yes" and not found["ESA avg JCT better than ATP"].reason


def test_esa_setting_is_memory_bound_with_computing_workers():
    esa = next(s for s in settings() if s.comparison == "esa" and s.jobs == 3)
    topo = esa.topology_built()
    assert len(topo.programmable_switches()) == len(topo.switches())
    assert all(sp.compute == 0.5 for sp in esa.specs()) and esa.jitter > 0 and esa.link_mbps == 20.0
    assert "all programmable" in esa.describe() and "compute 0.5 s + U(0,0.5) s" in esa.describe()
    assert 4 * (esa.workers + 1) <= len(topo.hosts())                  # room for the 4-job setting


def test_write_claims_and_plots(tmp_path):
    found = [Claim("ESA avg JCT better than ATP", "up to 1.35x", "1.02x", "3 jobs", "direction only",
                   "ATP already runs at 1.05x its ideal")]
    write_claims(found, tmp_path, ["Machine: test"])
    with open(tmp_path / "claims.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["agrees"] == "direction only" and rows[0]["paper"] == "up to 1.35x"
    md = (tmp_path / "claims.md").read_text()
    assert "| ESA avg JCT better than ATP | up to 1.35x | 1.02x | 3 jobs | direction only |" in md
    assert "ATP already runs at 1.05x its ideal" in md and "Machine: test" in md
    write_csv(ROWS, tmp_path / "runs.csv")
    for comparison in ("esa", "goat", "aro", "inart"):
        plot_comparison(ROWS, comparison, tmp_path / f"{comparison}.png", comparison)
        assert (tmp_path / f"{comparison}.png").read_bytes()[:4] == b"\x89PNG"


def test_from_csv_rewrites_the_claims(tmp_path):
    write_csv(ROWS, tmp_path / "runs.csv")
    write_claims([], tmp_path, ["Machine: test", "", "Settings:", "", "* esa, 3 jobs: fat-tree, 3 jobs, 8 Mb/s links"])
    assert main(["--from-csv", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "claims.md").read_text()
    assert "Machine: test" in md and "| fat-tree, 3 jobs, 8 Mb/s links |" in md
    assert (tmp_path / "esa.png").exists() and (tmp_path / "inart.png").exists()
