"""Who sets the pace of an emulated run (emulation.calibrate), the link rate ``--link-mbps auto``
chooses from a probe, and GOAT's sub-models on the wire interleaved (hostlib.protocol.send_order).
Pure: no Mininet, no timing."""
from __future__ import annotations

import numpy as np
import pytest

from controller.deploy import DEFAULT_POOL, deploy_jobs
from emulation.calibrate import (BUSY_LINK_BOUND, HEADROOM, LOSS_HEADROOM, Traffic, busy_seconds, choose_link_mbps, cpu_busy_seconds,
                                 loss_cpu_factor, machine, nice_floor, pace_note)
from emulation.experiment import JobSpec, build_topology, place_jobs
from emulation.inprocess import run_jobs as run_inprocess
from emulation.report import add_x_lossless
from emulation.run import host_timers, main
from emulation.schemes import plan_scheme
from hostlib.protocol import frame_fields
from hostlib.worker import Worker


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


def test_goat_workers_keep_every_aggregation_node_busy_from_the_first_window() -> None:
    """GOAT's sub-models aggregate at different switches; a Worker interleaves them, so its
    first window already goes to every one of those nodes (not one node's links at a time), and
    every round stays exact."""
    topo = build_topology("fattree", k=4)
    spec = JobSpec(4 * 64 * 64 * 4 * 4 / 1e6, 1)               # 4 sub-models of 16 fragments each
    jobs = place_jobs(topo, [spec], 6)
    fd = deploy_jobs(topo, jobs, plan_scheme("goat", topo, jobs), total_elements={"job1": int(spec.mb * 1e6 / 4)},
                     pool_size=DEFAULT_POOL)
    dep = fd.jobs[0]
    labels = dep.labels[dep.workers[0]]
    nodes = {lab.node_id for lab, size in zip(labels, dep.submodel_sizes) if size}
    assert len(nodes) > 1                                       # several aggregation nodes
    wk = Worker(dep.job_id, 0, "10.0.0.16", "10.0.0.1", labels, window=len(dep.submodel_sizes), native=False)
    wk.push(np.zeros(sum(dep.submodel_sizes), dtype=np.float32), dep.submodel_sizes)
    first = wk.start(0.0)
    assert {frame_fields(f, 64)[2] for f in first} == nodes
    run = run_inprocess(topo, fd, rounds={dep.job_id: 2})[0]
    assert run.exact and len(run.rounds) == 2 and run.ps_received.get("plain", 0) == 0


@pytest.mark.parametrize("rate,what", [("fast", "a rate in Mb/s or auto"), ("2000", "(0, 1000]"), ("0", "(0, 1000]")])
def test_link_rate_must_be_a_rate_or_auto(rate: str, what: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fattree", "--link-mbps", rate]) == 2
    err = capsys.readouterr().err
    assert "--link-mbps" in err and what in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("loss,what", [("0,x", "comma-separated list of numbers"), ("0,1.5", "drop rates in [0, 1)"),
                                       ("0.01,0.01", "listed twice"), ("-0.1", "drop rates in [0, 1)")])
def test_loss_is_a_rate_or_a_list_of_rates(loss: str, what: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fattree", "--loss", loss]) == 2
    err = capsys.readouterr().err
    assert "--loss" in err and what in err and len(err.strip().splitlines()) == 1


def test_busy_cpu_time_leaves_idle_and_iowait_out() -> None:
    stat = ("cpu  100 20 30 5000 40 6 4 10 0 0\n"
            "cpu0 50 10 15 2500 20 3 2 5 0 0\n"
            "intr 12345\n")
    assert busy_seconds(stat, 100) == pytest.approx((100 + 20 + 30 + 6 + 4 + 10) / 100)
    with pytest.raises(ValueError):
        busy_seconds("intr 1\n", 100)
    assert cpu_busy_seconds() > 0


def test_a_lossy_round_scales_the_cpu_time_and_so_slows_the_rate() -> None:
    assert loss_cpu_factor(2.0, 3.0) == pytest.approx(1.5)
    assert loss_cpu_factor(2.0, 1.5) == 1.0              # never faster than the lossless rate
    with pytest.raises(ValueError):
        loss_cpu_factor(0.0, 1.0)
    traffic = {"goat": Traffic(2.5, 90e6)}
    plain = choose_link_mbps(4.0, 100e6, 20.0, traffic)
    lossy = choose_link_mbps(4.0, 100e6, 20.0, traffic, loss=0.01, cpu_factor=1.5)
    assert lossy.cpu_seconds == pytest.approx(1.5 * plain.cpu_seconds)
    # a lossy run's links need LOSS_HEADROOM (2) × the scaled CPU time, a lossless one's HEADROOM (1.6)
    assert (HEADROOM, LOSS_HEADROOM) == (1.6, 2.0) and (plain.headroom, lossy.headroom) == (1.6, 2.0)
    assert lossy.link_mbps == nice_floor(20.0 * 2.5 / (2.0 * 1.5 * 90e6 / 25e6))
    assert lossy.link_mbps < plain.link_mbps
    assert choose_link_mbps(4.0, 100e6, 20.0, traffic, 1.6, loss=0.01, cpu_factor=1.5).link_mbps == \
        nice_floor(20.0 * 2.5 / (1.6 * 1.5 * 90e6 / 25e6))
    assert "0.01 loss (1.50× the lossless round's CPU time" in lossy.explain("probe")
    assert "loss" not in plain.explain("probe")
    with pytest.raises(ValueError):
        choose_link_mbps(4.0, 100e6, 20.0, traffic, cpu_factor=0.5)


def test_each_scheme_scales_its_own_cpu_time_at_loss() -> None:
    """Recoveries differ by scheme (ATP's through the PS): each name has its own lossy CPU factor,
    and the slowest rate any of them needs is chosen."""
    traffic = {"goat": Traffic(2.5, 90e6), "atp": Traffic(5.0, 90e6)}
    one = choose_link_mbps(4.0, 100e6, 20.0, traffic, loss=0.05, cpu_factor=1.5)
    assert one.deciding == "goat"                       # its busiest link needs half of ATP's
    each = choose_link_mbps(4.0, 100e6, 20.0, traffic, loss=0.05, cpu_factor={"goat": 1.5, "atp": 4.0})
    assert each.deciding == "atp" and each.cpu_factor == 4.0
    assert each.link_mbps == nice_floor(20.0 * 5.0 / (2.0 * 4.0 * 90e6 / 25e6)) < one.link_mbps
    with pytest.raises(ValueError, match="no cpu_factor for atp"):
        choose_link_mbps(4.0, 100e6, 20.0, traffic, cpu_factor={"goat": 1.5})
    with pytest.raises(ValueError, match="of atp: at least 1"):
        choose_link_mbps(4.0, 100e6, 20.0, traffic, cpu_factor={"goat": 1.5, "atp": 0.9})


def test_each_row_gets_its_round_over_the_lossless_one() -> None:
    rows = [{"scheme": "goat", "job": 1, "loss": 0.0, "mean_round_s": 0.8},
            {"scheme": "goat", "job": 1, "loss": 0.01, "mean_round_s": 1.0},
            {"scheme": "atp", "job": 1, "loss": 0.01, "mean_round_s": 2.0}]
    add_x_lossless(rows)
    assert [r["x_lossless"] for r in rows] == [1.0, 1.25, ""]


def test_slower_links_stretch_the_initial_rto_and_its_ceiling_not_its_floor() -> None:
    assert host_timers(0.2, 0.5, 20.0) == {"minimum": 0.2, "initial": 0.3, "maximum": 0.5}
    assert host_timers(0.2, 0.5, 1000.0) == {"minimum": 0.2, "initial": 0.3, "maximum": 0.5}
    slow = host_timers(0.2, 0.5, 2.0)
    assert slow["minimum"] == 0.2
    assert slow["initial"] == pytest.approx(3.0) and slow["maximum"] == pytest.approx(5.0)
