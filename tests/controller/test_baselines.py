"""Every baseline's plan passes the independent checker; paper examples where they pin numbers."""
from __future__ import annotations

import pytest

from controller.check import evaluate_plan
from controller.model import Job, Plan, SubModel
from controller.profiles import make_job
from controller.schemes import PROVIDERS, SCHEMES, get_scheme, run_scheme
from controller.topologies import fat_tree, goat_testbed, inart_testbed, leaf_spine

BASELINES = PROVIDERS["controller.baselines"]


def instances():
    ls = leaf_spine(2, 3, 2, link_gbps=10.0, programmable_fraction=0.6, seed=1, memory_bytes=30_000_000)
    yield "leaf-spine", ls, [make_job(ls, "resnet50", ps="h6", workers="all-but-ps", submodels=4)]
    pipes = leaf_spine(3, 4, 3, pipelines=4, programmable_fraction=0.5, seed=2, force_programmable=["leaf4"])
    yield "pipes", pipes, [make_job(pipes, "alexnet", ps="h12", workers="8", submodels=3, seed=5)]
    ft = fat_tree(4, programmable_fraction=0.4, seed=3)
    yield "fat-tree", ft, [make_job(ft, "resnet18", ps="h16", workers="all-but-ps", submodels=2)]
    gt = goat_testbed()
    yield "goat-testbed", gt, [make_job(gt, "resnet50", submodels=5)]
    it = inart_testbed(link_gbps=6, switch_capacity_gbps=6, ps_capacity_gbps=4)
    yield "inart-testbed", it, [make_job(it, "resnet50-inart", submodels=2)]
    mj = leaf_spine(2, 4, 3, programmable_fraction=0.5, seed=4)
    a = make_job(mj, "vgg16", ps="h12", workers="first:5", submodels=6, name="a")
    b = make_job(mj, "resnet50", ps="h11", workers="first:5", submodels=2, name="b", job_id=2,
                 exclude=a.workers + a.ps)
    yield "multi-job", mj, [a, b]


CASES = [(name, topo, jobs) for name, topo, jobs in instances()]


@pytest.mark.parametrize("scheme", BASELINES)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_baseline_passes_checker(scheme, case):
    _, topo, jobs = case
    plan = run_scheme(scheme, topo, jobs, {"seed": 3})
    report = evaluate_plan(plan, topo, jobs)
    assert report.ok, [str(v) for v in report.violations]
    assert plan.scheme == scheme and plan.jobs == [j.name for j in jobs]
    assert plan.objective is not None and report.objective_name in ("gina_cost", "throughput")
    assert all(r > 0 for r in plan.rates.values())
    # round trip through JSON keeps the verdict
    again = Plan.from_dict(plan.to_dict())
    assert evaluate_plan(again, topo, jobs).ok


def test_registry():
    for s in BASELINES:
        assert s in SCHEMES and get_scheme(s) is SCHEMES[s]


def test_inart_fig1_lbmm_rate():
    """InArt Fig. 1(a): LBMM, no INA, 6 workers on 2 PSs of capacity 4 -> rate 4/3."""
    topo = inart_testbed(link_gbps=6, switch_capacity_gbps=6, ps_capacity_gbps=4)
    job = make_job(topo, "resnet50-inart")
    plan = run_scheme("lbmm", topo, [job], {})
    assert plan.objective == pytest.approx(4 / 3)
    assert plan.rates == {"resnet50-inart-1/ps1": pytest.approx(2 / 3), "resnet50-inart-1/ps2": pytest.approx(2 / 3)}


def test_geryon_is_ps_bound_and_places_nothing():
    topo = leaf_spine(2, 3, 2, link_gbps=10.0)
    job = make_job(topo, "resnet50", ps="h6", workers="all-but-ps", submodels=2)
    plan = run_scheme("geryon", topo, [job], {})
    assert plan.rates[job.name] == pytest.approx(10 / 5)       # five streams into the PS link
    assert not plan.submodel_switches
    assert all(v is None for row in plan.aggregation_node.values() for v in row.values())
    r = evaluate_plan(plan, topo, [job])
    assert r.metrics["ps_inbound_mb"] == pytest.approx(5 * 98) and r.metrics["in_network_mb"] == 0


def test_atp_first_fit_two_level_on_goat_testbed():
    """GOAT testbed: 20 MB switches; ATP puts each 19.6 MB ResNet-50 sub-model on the workers'
    ToRs while memory lasts, the PS ToR (s3) aggregating their partial results."""
    topo = goat_testbed()
    job = make_job(topo, "resnet50", submodels=5)
    plan = run_scheme("atp", topo, [job], {})
    assert plan.submodel_switches["g0"] == ["s1", "s2", "s3"]
    assert plan.extra["forward_to"]["g0"] == {"s1": "s3", "s2": "s3"}
    assert all(plan.aggregation_node[w]["g1"] is None for w in job.workers)   # memory is gone
    assert plan.objective == pytest.approx(gina_cost_by_hand(topo, job, plan))
    r = evaluate_plan(plan, topo, [job])
    assert r.metrics["ps_inbound_mb"] == pytest.approx(19.6 * (1 + 4 * 8))


def gina_cost_by_hand(topo, job, plan) -> float:
    total = 0.0
    for s in job.submodels:
        for w in job.workers:
            total += s.size_mb * len(topo.shortest_path(w, plan.aggregation_node[w][s.name] or "ps")[1:])
        for sw in plan.submodel_switches.get(s.name, []):
            dst = plan.extra.get("forward_to", {}).get(s.name, {}).get(sw, "ps")
            total += s.size_mb * len(topo.shortest_path(sw, dst)[1:])
    return total


def test_switchml_partitions_memory_between_jobs():
    topo = leaf_spine(1, 2, 4, memory_bytes=40_000_000)
    a = Job("a", ["h1", "h2"], ["h5"], [SubModel("g0", 15.0), SubModel("g1", 15.0)])
    b = Job("b", ["h3", "h4"], ["h6"], [SubModel("g0", 15.0)], job_id=2)
    plan = run_scheme("switchml", topo, [a, b], {})
    assert plan.extra["memory_partition"]["leaf1"] == {"a": 20_000_000, "b": 20_000_000}
    assert plan.submodel_switches == {"a/g0": ["leaf1"], "b/g0": ["leaf1"]}     # a/g1 does not fit
    assert evaluate_plan(plan, topo, [a, b]).ok


def test_esa_priorities_follow_eq1():
    topo = leaf_spine(2, 2, 2)
    job = make_job(topo, "resnet50", submodels=4, workers="first:3", ps="h4")
    job.meta.update(remaining_time=2.0, comm_comp_ratio=3.0)
    plan = run_scheme("esa", topo, [job], {})
    pr = plan.extra["priority"][job.name]
    assert pr["g0"] == pytest.approx(0.5 * 4 / 1 * 3) and pr["g3"] == pytest.approx(0.5 * 4 / 4 * 3)


def test_k_sgd_records_k():
    topo = leaf_spine(2, 2, 3)
    job = make_job(topo, "resnet18", ps="h6", workers="all-but-ps")
    assert run_scheme("k-sgd", topo, [job], {}).extra["k"] == {job.name: 3}
    assert run_scheme("k-sgd", topo, [job], {"k": 4}).extra["k"] == {job.name: 4}
    with pytest.raises(ValueError):
        run_scheme("k-sgd", topo, [job], {"k": 9})


def test_grid_aggregates_at_most_once_on_shortest_paths():
    topo = leaf_spine(2, 3, 3, programmable_fraction=1.0)
    job = make_job(topo, "resnet50", ps="h9", workers="all-but-ps")
    plan = run_scheme("grid", topo, [job], {})
    agg = plan.extra["stream_aggregator"][job.name]
    for w, path in plan.paths[job.name].items():
        assert len(path) == len(topo.shortest_path(w, "h9"))
        assert agg[w] is None or agg[w] in path
    # with every switch programmable GRID beats sending everything to the PS
    assert plan.objective > run_scheme("geryon", topo, [job], {}).rates[job.name]


def test_random_is_seeded():
    topo = leaf_spine(4, 4, 3, programmable_fraction=0.5, seed=1)
    job = make_job(topo, "resnet50", ps="h12", workers="all-but-ps")
    p1, p2 = (run_scheme("random", topo, [job], {"seed": 5}) for _ in range(2))
    assert p1.paths == p2.paths
    assert any(run_scheme("random", topo, [job], {"seed": s}).paths != p1.paths for s in range(6, 12))


def test_aggtree_uses_spine_aggregators():
    """ARO Fig. 1: with L1, L2 and S1 aggregating, 5 workers reach rate 1 instead of 1/5."""
    topo = leaf_spine(2, 4, 2, link_gbps=1.0, programmable_fraction=0.0,
                      force_programmable=["leaf2", "leaf3", "spine1"])
    job = Job("j", ["h3", "h4", "h5", "h6", "h7"], ["h1"], [SubModel("g0", 1.0)])
    assert run_scheme("geryon", topo, [job], {}).rates["j"] == pytest.approx(1 / 5)
    plan = run_scheme("aggtree", topo, [job], {})
    assert evaluate_plan(plan, topo, [job]).ok and plan.rates["j"] == pytest.approx(1.0)
    # GRID aggregates each stream at most once: 1/2, as in ARO Fig. 3(b)
    assert run_scheme("grid", topo, [job], {}).rates["j"] == pytest.approx(0.5)
