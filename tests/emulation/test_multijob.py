"""Several jobs on one fabric: controller.deploy.deploy_jobs (pure) and the in-process twin of
the emulation running every scheme the emulation deploys, jobs sharing switches."""
from __future__ import annotations

import pytest

from controller.deploy import deploy_jobs, esa_priority_schedule, priority_bytes
from controller.schemes import run_scheme
from emulation.experiment import JobSpec, build_topology, place_jobs
from emulation.inprocess import run_jobs
from emulation.schemes import plan_scheme

SPECS = [JobSpec(0.02, 2), JobSpec(0.03, 2, start=0.002)]


def _setup(scheme: str, pool_size: int = 16384):
    # four hosts per edge: interleaved jobs put two workers each under every ToR (fan-in 2)
    topo = build_topology("fattree", k=4, hosts_per_edge=4, programmable=0.2, seed=0)
    jobs = place_jobs(topo, SPECS, 4)
    plan = plan_scheme(scheme, topo, jobs)
    fd = deploy_jobs(topo, jobs, plan, total_elements={j.name: int(s.mb * 1e6 / 4) for j, s in zip(jobs, SPECS)},
                     pool_size=pool_size)
    return topo, jobs, fd


def test_jobs_are_interleaved_on_distinct_hosts_with_their_own_ps() -> None:
    topo = build_topology("fattree", k=4)
    jobs = place_jobs(topo, SPECS, 6)
    hosts = [h for j in jobs for h in j.workers + j.ps]
    assert len(hosts) == len(set(hosts)) == 14
    assert {topo.tor_of(j.workers[0]) for j in jobs} == {"edge1"}       # they share ToRs
    with pytest.raises(ValueError, match="do not fit"):
        place_jobs(topo, SPECS * 2, 4)
    wide = build_topology("fattree", k=4, hosts_per_edge=4)
    for j in place_jobs(wide, SPECS, 6):
        tors = [wide.tor_of(w) for w in j.workers]
        assert tors.count(tors[0]) == 2                            # fan-in 2 at the ToR


def test_shared_pools_use_one_node_id_and_switchml_partitions_them() -> None:
    _, jobs, shared = _setup("atp")
    _, _, part = _setup("switchml")
    both = set(shared.jobs[0].node_ids) & set(shared.jobs[1].node_ids)
    assert both, "the two jobs should meet on some switch"
    for s in both:
        assert shared.jobs[0].node_ids[s] == shared.jobs[1].node_ids[s]
        adds = [op for op in shared.ops[s] if op.method == "add_node"]
        assert len(adds) == 1                              # merged: one pool for both
    # switches both jobs aggregate at (a relay-only switch multicasts results and claims no
    # aggregator: rule 1)
    aggregating = [{s for s, lv in d.levels.items() if lv != "relay"} for d in part.jobs]
    common = aggregating[0] & aggregating[1]
    assert common
    for s in common:
        ids = [d.node_ids[s] for d in part.jobs]
        assert ids[0] != ids[1]
        # (a relay unit there — a node of its own — shares its job's slice and never claims it)
        pools = sorted((dict(op.kwargs)["pool_base"], dict(op.kwargs)["pool_size"])
                       for op in part.ops[s] if op.method == "add_node" and op.args[0] in ids)
        assert len(pools) == 2 and pools[0][0] + pools[0][1] <= pools[1][0]     # disjoint slices
        assert pools[1][0] + pools[1][1] <= part.pool_sizes[s]
    for fd in (shared, part):                              # every /32 route once per switch
        for s, ops in fd.ops.items():
            lpm = [op.args[0] for op in ops if op.method == "add_lpm"]
            assert len(lpm) == len(set(lpm))
        rids = [dict(op.kwargs)["rid_base"] for ops in fd.ops.values() for op in ops if op.method == "add_result_group"]
        assert len(rids) == len(set(rids)) or not rids


def test_esa_priorities_follow_eq1_and_rise_as_a_job_nears_its_end() -> None:
    topo = build_topology("fattree", k=4)
    jobs = place_jobs(topo, [JobSpec(0.1, 4), JobSpec(0.2, 2)], 4)
    sched = esa_priority_schedule(jobs, {"job1": 4, "job2": 2})
    assert [len(sched["job1"]), len(sched["job2"])] == [4, 2]
    for rows in sched.values():
        for row in rows:
            assert all(1 <= p <= 254 for p in row)
            assert row == sorted(row, reverse=True)         # earlier layers first (L/l)
    assert max(max(r) for r in sched["job1"] + sched["job2"]) == 254
    assert sched["job1"][3][0] == 254                       # alone in its last round
    assert priority_bytes({"a": {"x": 2.0, "y": 1.0}, "b": {"x": 0.001}}) == {"a": {"x": 254, "y": 127}, "b": {"x": 1}}


@pytest.mark.parametrize("scheme", ["ps", "atp", "esa", "switchml", "goat", "aro", "inart"])
@pytest.mark.parametrize("loss", [0.0, 0.02])
def test_two_jobs_sharing_switches_are_exact_in_every_round(scheme: str, loss: float) -> None:
    topo, jobs, fd = _setup(scheme)
    results = run_jobs(topo, fd, rounds={1: 2, 2: 2}, loss=loss, seed=3, starts={2: 0.002})
    for res in results:
        assert len(res.rounds) == 2 and res.exact, res.rounds
        assert res.extra["jct"] > 0
        if scheme == "ps":
            assert "switch_result" not in res.ps_received and "partial" not in res.ps_received


def test_esa_preempts_across_jobs_in_a_small_pool_and_stays_exact() -> None:
    """ESA's point: with aggregators scarce, the higher-priority job's fragments swap the
    other's partials out (the PS receives them PREEMPTED) and both jobs still get exact sums."""
    topo, jobs, fd = _setup("esa", pool_size=4)
    sched = esa_priority_schedule(jobs, {j.name: s.rounds for j, s in zip(jobs, SPECS)})
    results = run_jobs(topo, fd, rounds={1: 2, 2: 2}, seed=1, starts={2: 0.0005},
                       priorities={j.job_id: sched[j.name] for j in jobs})
    assert all(r.exact for r in results)
    assert sum(r.ps_received.get("preempted", 0) for r in results) > 0


@pytest.mark.parametrize("scheme", ["aro", "inart"])
def test_routing_plans_aggregate_where_their_paths_merge(scheme: str) -> None:
    """ARO and InArt give paths, not placements: the deployment aggregates where a job's paths
    merge at programmable switches (InArt: at the switch it names), chains levels along the
    paths, and pins first copies and partials onto the plan's paths up to each level."""
    topo = build_topology("fattree", k=4, programmable=0.2, seed=0)
    jobs = place_jobs(topo, SPECS[:1], 6)
    plan = run_scheme(scheme, topo, jobs)
    fd = deploy_jobs(topo, jobs, plan, total_elements={"job1": 5000})
    dep = fd.jobs[0]
    paths = plan.paths["job1"]
    assert dep.levels
    for w in dep.workers:
        lab = dep.labels[w][0]
        on_path = [s for s in paths[w][1:-1] if dep.node_ids.get(s) == lab.node_id]
        assert lab.node_id == 0 or on_path, (w, lab, paths[w])
        if lab.node_id:                     # fan-in: the workers whose paths pass that node
            assert lab.fan_in == sum(on_path[0] in paths[v] for v in dep.workers)
    for n, kind in dep.levels.items():
        if kind == "to_node":
            nxt = next(dict(op.kwargs)["next_node"] for op in fd.ops[n] if op.method == "level_to_node")
            assert nxt in dep.node_ids.values()


def test_a_job_split_over_two_parameter_servers_deploys_as_one_part_per_ps() -> None:
    """InArt's multi-PS split: each PS's share of every sub-model becomes a single-PS part
    (job id + 1000·k) with the plan's paths towards that PS; the parts' sizes add up."""
    from controller.deploy import PART_JOB_ID_STRIDE, expand_multi_ps

    topo = build_topology("fattree", k=4)
    [job] = place_jobs(topo, [JobSpec(0.04, 1)], 4, ps_per_job=2)
    assert len(job.ps) == 2 and not set(job.ps) & set(job.workers)
    plan = plan_scheme("inart", topo, [job])
    total = int(0.04e6 / 4)
    parts, renamed, elements = expand_multi_ps([job], plan, {job.name: total})
    assert [p.job_id for p in parts] == [1, 1 + PART_JOB_ID_STRIDE]
    assert [p.ps for p in parts] == [[job.ps[0]], [job.ps[1]]]
    assert sorted(renamed.paths) == sorted(p.name for p in parts)
    assert abs(sum(elements.values()) - total) <= 1
    shares = [plan.split[p] / sum(plan.split[q] for q in job.ps) for p in job.ps]
    for part, x in zip(parts, shares):
        assert part.total_mb == pytest.approx(job.total_mb * x)
        assert all(renamed.paths[part.name][w][-1] == part.ps[0] for w in job.workers)
    fd = deploy_jobs(topo, [job], plan, total_elements={job.name: total})
    assert [d.job_id for d in fd.jobs] == [1, 1 + PART_JOB_ID_STRIDE]
    assert [d.ps for d in fd.jobs] == job.ps
