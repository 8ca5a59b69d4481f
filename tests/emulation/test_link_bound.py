"""The link-rate ideal of emulation.bounds (``link_bounds``): what one lossless round of a plan
puts on every link, counted on the in-process twin, at the links' rate. On make run-fattree's
setup (two jobs of 6 workers on a k=4 fat-tree with 4 hosts per edge, all links equal) the
busiest links are known by hand: GOAT's node core2 takes all of pod 1's 8 workers over the one
link agg1→core2; the plain PS takes all 12 workers' fragments over core1→agg7 (the first
uplinks everywhere lead there)."""
from __future__ import annotations

import pytest

from controller.deploy import DEFAULT_POOL, deploy_jobs
from emulation.experiment import JobSpec, bw_scale_for, build_topology, place_jobs
from emulation.bounds import host_link_round_seconds, link_bounds
from emulation.schemes import ASYNC, async_history, async_participants, plan_scheme

MB = 0.02          # 5,000 values per worker: 4 sub-models of 20 fragments
LINK_MBPS = 20.0


def _bounds(scheme: str, specs: list[JobSpec]):
    topo = build_topology("fattree", k=4, hosts_per_edge=4)
    jobs = place_jobs(topo, specs, 6, switch_bytes=int(2 * MB * 1e6))
    if scheme == ASYNC:
        async_history(jobs, 1)
    plan = plan_scheme(scheme, topo, jobs)
    joined = {j.job_id: async_participants(plan, j, sp.rounds) for j, sp in zip(jobs, specs)} \
        if scheme == ASYNC else None
    fd = deploy_jobs(topo, jobs, plan, total_elements={j.name: int(sp.mb * 1e6 / 4) for j, sp in zip(jobs, specs)},
                     pool_size=DEFAULT_POOL)
    host_link = host_link_round_seconds(fd.jobs[0].submodel_sizes, LINK_MBPS)
    return link_bounds(topo, fd, specs, bw_scale=bw_scale_for(topo, LINK_MBPS), participants=joined), host_link


@pytest.mark.parametrize("scheme,link,workers", [("goat", "agg1→core2", 8), ("ps", "core1→agg7", 12)])
def test_jobs_side_by_side_share_the_busiest_link(scheme: str, link: str, workers: int) -> None:
    bounds, host_link = _bounds(scheme, [JobSpec(MB, 2)] * 2)
    assert set(bounds) == {1, 2}
    for b in bounds.values():
        assert b.link == link
        assert b.seconds == pytest.approx(workers * host_link)     # that many workers' frames


def test_a_job_starting_later_counts_alone() -> None:
    bounds, host_link = _bounds("goat", [JobSpec(MB, 2), JobSpec(MB, 2, start=1.0)])
    # job 1's 4 workers in pod 1 (job 2's 4 are not on the link at the same time)
    assert all(b.link == "agg1→core2" and b.seconds == pytest.approx(4 * host_link) for b in bounds.values())


def test_goat_async_rounds_run_their_participants_only() -> None:
    bounds, host_link = _bounds(ASYNC, [JobSpec(MB, 2)] * 2)
    for b in bounds.values():
        # results go to every worker of both jobs (core2 copies them per worker), first copies
        # come from the round's participants only: the downlink core2→agg1 is the busiest
        assert b.link == "core2→agg1"
        assert b.seconds == pytest.approx(8 * host_link)


@pytest.mark.parametrize("scheme", ["atp", "esa", "switchml", "aro", "inart"])
def test_never_below_a_workers_own_link(scheme: str) -> None:
    bounds, host_link = _bounds(scheme, [JobSpec(MB, 1)] * 2)
    assert all(b.seconds >= host_link for b in bounds.values())



def test_a_job_split_over_two_parameter_servers_counts_both_parts() -> None:
    """InArt's --ps-per-job 2: each PS's part runs as its own job id on the same worker hosts
    (the twin runs the parts one after the other and adds their bytes)."""
    topo = build_topology("fattree", k=4, programmable=0.2, seed=0)
    specs = [JobSpec(MB, 1)]
    jobs = place_jobs(topo, specs, 4, ps_per_job=2)
    fd = deploy_jobs(topo, jobs, plan_scheme("inart", topo, jobs), total_elements={jobs[0].name: int(MB * 1e6 / 4)},
                     pool_size=DEFAULT_POOL)
    bounds = link_bounds(topo, fd, specs, bw_scale=bw_scale_for(topo, LINK_MBPS))
    assert set(bounds) == {1, 1001}
    whole = host_link_round_seconds([n for d in fd.jobs for n in d.submodel_sizes], LINK_MBPS)
    # a worker sends both parts over its one host link: the bound is at least the whole model
    assert all(b.seconds >= whole for b in bounds.values())
