"""The twin as the papers' simulator: workers that compute (seeded jitter) before every round,
ESA priorities measured per job, links at their emulated rates, the single-switch setting of
ESA §7.2, and emulation.twin's SchemeRun that emulation.report reads like a Mininet run's."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from controller.esa_priority import JobProgress
from controller.topologies import single_switch
from emulation.experiment import JobSpec, build_topology, bw_scale_for, place_jobs
from emulation.report import summarise
from emulation.reproduce import Setting
from emulation.run import RTO_MAX, RTO_MIN, host_timers
from emulation.twin import run_scheme_twin
from hostlib.drivers import native_udp
from hostlib.worker import FragmentLabel, Worker

# 3 jobs × 4 workers under one switch, a pool they contend for, computation and jitter
SETTING = Setting("3 jobs", "esa", ("esa", "atp"), jobs=3, workers=4, mb=(0.02, 0.04), rounds=2, pool=8,
                  topology="single", hosts_per_edge=15, programmable=1.0, compute=(0.05, 0.1), jitter=0.02,
                  link_mbps=20.0, loss_detection="dupack")


def _run(scheme: str, setting: Setting = SETTING, seed: int = 1):
    topo = setting.topology_built(0)
    specs = setting.specs()
    jobs = place_jobs(topo, specs, setting.workers, switch_bytes=10**9)
    run = run_scheme_twin(topo, jobs, specs, scheme, bw_scale=bw_scale_for(topo, 20.0), window=setting.window,
                          seed=seed, rto=host_timers(RTO_MIN, RTO_MAX, 20.0), pool=setting.pool,
                          jitter=setting.jitter, loss_detection=setting.loss_detection, log=lambda _: None,
                          layered=setting.layered)
    return run, summarise(run, specs, 0.0, 20.0)


@pytest.mark.parametrize("scheme", ["esa", "atp"])
def test_layered_workers_overlap_backpropagation_with_sending(scheme: str) -> None:
    """Workers that send each sub-model as backpropagation computes it (the last layer first)
    finish every round exact and sooner than workers that compute, then send; no job beats
    the round floor that overlap allows."""
    plain = _run(scheme)[1]
    layered = _run(scheme, replace(SETTING, layered=True))[1]
    assert all(r["exact"] for r in plain + layered)
    mean = lambda rows: sum(r["jct_s"] for r in rows) / len(rows)     # noqa: E731
    assert mean(layered) < mean(plain)
    assert all(r["jct_s"] >= r["jct_floor_s"] for r in layered)
    assert all(lay["jct_floor_s"] < p["jct_floor_s"] for lay, p in zip(layered, plain))


def test_single_switch_puts_the_pses_under_a_relay_switch_without_memory() -> None:
    topo = single_switch(8, ps_hosts=2, link_gbps=100.0)
    assert topo.programmable_switches() == ["tor1", "tor2"]
    assert topo.nodes["tor2"].memory_bytes == 0 and topo.nodes["tor1"].memory_bytes > 0
    assert {topo.tor_of(h) for h in topo.hosts()[:8]} == {"tor1"} and {topo.tor_of(h) for h in topo.hosts()[8:]} == {"tor2"}
    assert topo.link("tor1", "tor2").capacity_gbps == 1000.0          # non-blocking: every host link together
    jobs = place_jobs(topo, [JobSpec(0.01, 1), JobSpec(0.01, 1)], 4, switch_bytes=4096)
    assert {j.ps[0] for j in jobs} == {"h9", "h10"}
    assert topo.nodes["tor2"].memory_bytes == 0 and topo.nodes["tor1"].memory_bytes == 4096
    # the bandwidth scale follows the host links, not the trunk
    assert bw_scale_for(topo, 20.0) == pytest.approx(100e3 / 20.0)
    with pytest.raises(ValueError):
        single_switch(0)
    assert build_topology("single", hosts_per_edge=64, k=8).nodes["tor2"].memory_bytes == 0


def test_a_job_records_its_rounds_from_its_clock() -> None:
    p = JobProgress(comm_prior=1.0, comp_prior=0.5, rounds_total=3)
    p.record_finish(2.0, started_at=0.0)            # 2 s period: 0.5 s computing, 1.5 s communicating
    p.record_finish(3.0, started_at=0.0)
    assert (p.comp_s, p.comm_s) == ([0.5, 0.5], [1.5, 0.5])
    assert p.comm_comp_ratio() == pytest.approx(1.0)


def test_workers_compute_before_every_round_and_esa_labels_are_the_jobs() -> None:
    run, rows = _run("esa")
    assert all(r["exact"] for r in rows) and len(rows) == 3
    # a partial swapped out to the PS is the PS's task, though the switch held it for a while
    assert all(0 < r["switch_results"] < r["ina_fraction"] for r in rows)
    # the eviction log sees every partial the PSes got swapped out, and who took its aggregator
    assert all(r["evicted"] == r["preemptions"] > 0 and 0 < r["victim_share"] < 1 for r in rows)
    assert sum(r["evicted"] for r in rows) == sum(r["evictions_caused"] for r in rows)
    both = {(r["job"], int(o)) for r in rows for o in str(r["ping_pong_with"]).split()}
    assert all((b, a) in both for a, b in both)
    for res, spec in zip(run.jobs, SETTING.specs()):
        for w in res.workers:
            comp = [r["compute_seconds"] for r in w["rounds"]]
            assert all(spec.compute <= c <= spec.compute + SETTING.jitter for c in comp)
            assert len(set(comp)) == len(comp)                      # a draw per round
            # the job's time covers its computation and its rounds' communication
            assert w["seconds"] >= sum(comp) + sum(r["seconds"] for r in w["rounds"]) - 1e-9
        # one priority per job and round: every worker labels its fragments alike, up to a few
        # percent (a worker whose last result came late, through the PS, measured a longer round)
        for r in range(SETTING.rounds):
            rows_r = [w["rounds"][r]["priorities"] for w in res.workers]
            assert all(0 < p <= 254 for row in rows_r for p in row)
            assert all(max(col) - min(col) <= max(1, 0.05 * max(col)) for col in zip(*rows_r)), rows_r
    # the jitter differs per worker (the Mininet agents' seeded draws)
    first = run.jobs[0].workers
    assert len({w["rounds"][0]["compute_seconds"] for w in first}) == len(first)


def test_the_twin_is_deterministic_and_reads_like_an_emulated_run() -> None:
    a, rows_a = _run("atp")
    b, rows_b = _run("atp")
    assert [r["jct_s"] for r in rows_a] == [r["jct_s"] for r in rows_b]
    for r in rows_a:
        assert r["exact"] and r["ps_rx_mb"] > 0 and 0 <= r["ina_fraction"] <= 1 and not math.isnan(r["jct_s"])
        assert r["busy_share"] > 0 and r["link_busy"]
    _, rows_c = _run("atp", seed=2)
    assert [r["jct_s"] for r in rows_c] != [r["jct_s"] for r in rows_a]


def test_the_twin_runs_p4sim_only() -> None:
    topo = SETTING.topology_built(0)
    jobs = place_jobs(topo, SETTING.specs(), 4, switch_bytes=10**9)
    with pytest.raises(ValueError, match="p4sim"):
        run_scheme_twin(topo, jobs, SETTING.specs(), "esa", bw_scale=1.0, window=8, seed=0, rto={}, pool=8,
                        switch="bmv2", log=lambda _: None)


def test_loss_detection_is_checked_and_dupack_keeps_to_the_python_worker() -> None:
    label = [FragmentLabel(1, 2)]
    with pytest.raises(ValueError, match="loss detection"):
        Worker(1, 0, "10.0.0.9", "10.0.0.1", label, loss_detection="tcp")
    wk = Worker(1, 0, "10.0.0.9", "10.0.0.1", label, loss_detection="dupack")
    assert wk._fast_after == 3
    assert native_udp(wk, object()) is False
    from hostlib.native.worker import NativeWorker      # refuses before it loads the C library
    with pytest.raises(ValueError, match="rack"):
        NativeWorker(wk)


def test_switchml_workers_reuse_a_slot_only_after_its_result() -> None:
    # each job owns its slice of the pool and its workers follow the program's aggregator index:
    # nothing collides, nothing goes to the PS (SwitchML has no PS path)
    _, rows = _run("switchml", replace(SETTING, schemes=("switchml",)))
    assert all(r["exact"] and r["ps_rx_mb"] == 0 and r["ina_fraction"] == 1.0 and r["worker_resent"] == 0
               for r in rows)


def test_aggregation_and_ps_capacities_pace_the_twin() -> None:
    # InArt's fat-tree: switches aggregate at 9 Mb/s, PSes process 20 Mb/s (links 20 Mb/s)
    topo = build_topology("inart")
    specs = [JobSpec(0.25, 1)]
    jobs = place_jobs(topo, specs, 3, switch_bytes=10**9)   # one ToR's hosts: it aggregates, multicasts
    from controller.deploy import deploy_jobs
    from emulation.inprocess import run_jobs
    from emulation.schemes import plan_scheme
    fd = deploy_jobs(topo, jobs, plan_scheme("switchml", topo, jobs), total_elements={jobs[0].name: 62500})
    seconds = {}
    for capacities in (False, True):
        res = run_jobs(topo, fd, rounds={1: 1}, bw_scale=1.0, capacities=capacities, until=600,
                       loss_detection="dupack")[0]
        assert res.exact
        seconds[capacities] = res.rounds[0]["seconds"]
    # three workers' 20 Mb/s streams meet a 9 Mb/s aggregation unit: over 6x slower
    assert seconds[True] > 5 * seconds[False]
