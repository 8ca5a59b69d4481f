"""Who sets the pace of an emulated run (emulation.calibrate), the link rate ``--link-mbps auto``
chooses from a probe, and sub-models sent interleaved (emulation.run.interleave_submodels).
Pure: no Mininet, no timing."""
from __future__ import annotations

from dataclasses import replace

import pytest

from controller.deploy import DEFAULT_POOL, deploy_jobs
from emulation.calibrate import BUSY_LINK_BOUND, Traffic, choose_link_mbps, machine, nice_floor, pace_note
from emulation.experiment import JobSpec, build_topology, place_jobs
from emulation.inprocess import run_jobs as run_inprocess
from emulation.run import interleave_submodels, main, plan_scheme
from hostlib.worker import FragmentLabel


@pytest.mark.parametrize("x,want", [(10.85, 10.0), (123.4, 120.0), (0.0567, 0.056), (20.0, 20.0), (9.99, 9.9)])
def test_rates_round_down_to_two_significant_digits(x: float, want: float) -> None:
    assert nice_floor(x) == pytest.approx(want)
    assert nice_floor(x) <= x


def test_no_rate_from_nothing() -> None:
    with pytest.raises(ValueError):
        nice_floor(0.0)
    with pytest.raises(ValueError):
        choose_link_mbps(0.0, 1e6, 20.0, {"goat": Traffic(1.0, 1e6)})


def test_the_chosen_rate_keeps_every_busiest_link_busier_than_the_cpu() -> None:
    # a probe moved 100 MB over all links in 4 s (25 MB/s); at 20 Mb/s goat's busiest link takes
    # 2.5 s of a round moving 90 MB in all, ps's 6 s of 150 MB
    traffic = {"goat": Traffic(2.5, 90e6), "ps": Traffic(6.0, 150e6)}
    c = choose_link_mbps(4.0, 100e6, 20.0, traffic, headroom=1.6)
    for name, t in traffic.items():
        cpu = t.total_bytes / 25e6
        assert t.seconds * 20.0 / c.link_mbps >= 1.6 * cpu        # the link needs >= headroom × the CPU
    # goat leans on the CPU most (3.6 s of CPU for 2.5 s of busiest link at 20 Mb/s): it decides
    assert c.deciding == "goat"
    assert c.cpu_seconds == pytest.approx(90e6 / 25e6)
    exact = 20.0 * 2.5 / (1.6 * 3.6)
    assert c.link_mbps == nice_floor(exact)
    assert c.ideal_seconds == pytest.approx(2.5 * 20.0 / c.link_mbps)
    assert f"{c.link_mbps:g} Mb/s" in c.explain("probe")


def test_pace_notes_name_the_cpu_below_the_bound_and_the_links_above() -> None:
    cpu = pace_note(BUSY_LINK_BOUND - 0.3, 1.97, "goat job 1")
    assert "CPU-bound" in cpu and "50%" in cpu and "1.97×" in cpu and machine() in cpu
    links = pace_note(BUSY_LINK_BOUND + 0.1, 1.05, "goat job 1")
    assert "link-bound" in links and "90%" in links and "CPU" not in links


def test_interleaved_chunks_deal_the_submodels_in_turn() -> None:
    parents, chunks = interleave_submodels([130, 64, 0, 200], 64, 1)
    assert parents == [0, 1, 3, 0, 3, 0, 3, 3]
    assert chunks == [64, 64, 64, 64, 64, 2, 64, 8]
    for g, size in enumerate([130, 64, 0, 200]):
        assert sum(c for p, c in zip(parents, chunks) if p == g) == size
    assert interleave_submodels([130, 64], 64, 0) == ([0, 1], [130, 64])


def test_interleaved_submodels_stay_exact_and_put_the_same_bytes_on_every_link() -> None:
    """GOAT's sub-models aggregate at different switches; cut into chunks labelled like their
    sub-model and sent in turn, every round is still exact and every link carries what it
    carried before (only the order changes)."""
    topo = build_topology("fattree", k=4)
    spec = JobSpec(4 * 64 * 64 * 4 * 4 / 1e6, 1)               # 4 sub-models of 16 fragments each
    jobs = place_jobs(topo, [spec], 6)
    fd = deploy_jobs(topo, jobs, plan_scheme("goat", topo, jobs), total_elements={"job1": int(spec.mb * 1e6 / 4)},
                     pool_size=DEFAULT_POOL)
    dep = fd.jobs[0]
    assert len({lab.node_id for lab in dep.labels[dep.workers[0]]}) > 1      # several aggregation nodes
    parents, chunks = interleave_submodels(dep.submodel_sizes, 64, 4)
    assert len(chunks) > len(dep.submodel_sizes)
    cfg = dep.job_config
    chunked = replace(dep, submodel_sizes=chunks,
                      labels={w: [labs[g] for g in parents] for w, labs in dep.labels.items()},
                      job_config=replace(cfg, submodel_nodes=None if cfg.submodel_nodes is None else
                                         {c: cfg.submodel_nodes[g] for c, g in enumerate(parents)
                                          if g in cfg.submodel_nodes}))
    assert all(isinstance(lab, FragmentLabel) for lab in chunked.labels[dep.workers[0]])
    before = run_inprocess(topo, fd, rounds={dep.job_id: 2})[0]
    after = run_inprocess(topo, replace(fd, jobs=[chunked]), rounds={dep.job_id: 2})[0]
    assert before.exact and after.exact and len(after.rounds) == 2
    assert after.ps_received.get("plain", 0) == before.ps_received.get("plain", 0) == 0
    assert after.report.link_bytes == before.report.link_bytes


@pytest.mark.parametrize("rate,what", [("fast", "a rate in Mb/s or auto"), ("2000", "(0, 1000]"), ("0", "(0, 1000]")])
def test_link_rate_must_be_a_rate_or_auto(rate: str, what: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fattree", "--link-mbps", rate]) == 2
    err = capsys.readouterr().err
    assert "--link-mbps" in err and what in err and len(err.strip().splitlines()) == 1
