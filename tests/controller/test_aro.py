"""ARO (controller/aro.py, controller/aro_graph.py): exactness, up-down routes, pipelines, QSR/APP/SRO."""
from __future__ import annotations

import random

import pytest

from controller.aro import generate_routes, solve_aro, solve_bruteforce
from controller.aro_graph import (app_select, build_task_graph, down_hosts, make_tasks, pipe_map,
                                  score_variance, tiers, valley_free)
from controller.check import evaluate_plan
from controller.model import Job, SubModel
from controller.schemes import get_scheme
from controller.topologies import fat_tree, leaf_spine


def _job(name: str, workers: list[str], ps: list[str]) -> Job:
    return Job(name, workers, ps, [SubModel("g", 10.0)])


def _assert_valid(plan, topo, jobs) -> None:
    """The independent checker accepts the plan and recomputes the same objective."""
    rep = evaluate_plan(plan, topo, jobs)
    assert rep.ok, [str(v) for v in rep.violations]
    assert rep.metrics["throughput"] == pytest.approx(plan.objective, rel=1e-6)
    tier = tiers(topo)
    for per_worker in plan.paths.values():
        for path in per_worker.values():
            assert valley_free(path, tier), path


def _random_instance(seed: int):
    rng = random.Random(seed)
    spines, leaves = rng.choice([(3, 3), (4, 3), (3, 4)])
    topo = leaf_spine(spines, leaves, 3, programmable_fraction=rng.choice([0.3, 0.4, 0.5]),
                      seed=seed, pipelines=rng.choice([1, 2]), link_gbps_range=(10.0, 100.0))
    hosts = topo.hosts()
    kind = seed % 3                       # 0: SJST, 1: SJMT (2 PSs), 2: MJMT (2 jobs)
    if kind == 0:
        ps = rng.sample(hosts, 1)
        jobs = [_job("a", rng.sample([h for h in hosts if h not in ps], 6), ps)]
    elif kind == 1:
        ps = rng.sample(hosts, 2)
        jobs = [_job("a", rng.sample([h for h in hosts if h not in ps], 4), ps)]
    else:
        ps = rng.sample(hosts, 2)
        rest = [h for h in hosts if h not in ps]
        jobs = [_job("a", rng.sample(rest, 4), ps[:1]), _job("b", rng.sample(rest, 4), ps[1:])]
    return topo, jobs


@pytest.mark.parametrize("seed", range(12))
def test_exact_model_equals_enumeration_on_small_leaf_spines(seed):
    topo, jobs = _random_instance(seed)
    brute = solve_bruteforce(topo, jobs, limit=20000)
    plan = solve_aro(topo, jobs, accelerated=False)
    assert plan.status == "optimal"
    assert plan.objective == pytest.approx(brute.objective, rel=1e-6)
    assert plan.bound is not None and plan.bound >= plan.objective * (1 - 1e-6)
    _assert_valid(plan, topo, jobs)


def test_exact_model_on_small_fat_tree():
    topo = fat_tree(4, 1, programmable_fraction=0.4, seed=1, pipelines=2)
    hosts = topo.hosts()
    jobs = [_job("a", [hosts[0], hosts[3], hosts[6]], [hosts[5]])]
    plan = solve_aro(topo, jobs)
    assert plan.objective == pytest.approx(solve_bruteforce(topo, jobs).objective)
    _assert_valid(plan, topo, jobs)


def test_cbc_and_highs_agree():
    topo, jobs = _random_instance(2)   # MJMT: the CR and BX stages both run
    a = solve_aro(topo, jobs, solver="highs")
    b = solve_aro(topo, jobs, solver="cbc")
    assert a.objective == pytest.approx(b.objective, rel=1e-6)


def test_paper_fig1_example_reaches_full_rate():
    """Fig. 1: 5 workers, INA on L1, L2, S1, unit links: ARO's routes give every worker rate 1."""
    topo = leaf_spine(2, 4, 3, link_gbps=1.0, programmable_fraction=0.0)
    for s in ("leaf2", "leaf3", "spine2"):
        topo.nodes[s].programmable = True
    leaf = {l: [h for h in topo.neighbors(l) if topo.nodes[h].kind == "host"] for l in topo.meta["leaves"]}
    workers = leaf["leaf2"][:2] + leaf["leaf3"][:2] + leaf["leaf4"][:1]
    jobs = [_job("a", workers, leaf["leaf1"][:1])]
    plan = solve_aro(topo, jobs)
    assert plan.objective == pytest.approx(1.0)
    _assert_valid(plan, topo, jobs)
    # without any aggregator the PS link carries 5 flows
    for s in ("leaf2", "leaf3", "spine2"):
        topo.nodes[s].programmable = False
    assert solve_aro(topo, jobs).objective == pytest.approx(0.2)


def _one_spine(pipes: int):
    """1 programmable spine; spine ports 1, 2 -> pipe 0 and port 3 -> pipe 1 when pipes = 2."""
    topo = leaf_spine(1, 3, 2, programmable_fraction=0.0, pipelines=pipes)
    topo.nodes["spine1"].programmable = True
    jobs = [_job("a", ["h3", "h5"], ["h1"])]      # h3 under leaf2 (pipe 0), h5 under leaf3 (pipe 1)
    return topo, jobs


def test_flows_in_different_pipes_never_aggregate():
    topo1, jobs = _one_spine(1)
    assert solve_aro(topo1, jobs).objective == pytest.approx(100.0)     # merged at spine1
    topo2, jobs = _one_spine(2)
    plan = solve_aro(topo2, jobs)
    assert plan.objective == pytest.approx(50.0)                        # two flows to leaf1
    assert plan.objective == pytest.approx(solve_bruteforce(topo2, jobs).objective)
    _assert_valid(plan, topo2, jobs)
    # the pipelines override re-maps ports the same way
    assert solve_aro(topo1, jobs, pipelines=2).objective == pytest.approx(50.0)


def test_task_graph_is_unfolded_and_decoupled():
    topo, jobs = _one_spine(2)
    tier, (pipe, _) = tiers(topo), pipe_map(topo)
    (task,) = make_tasks(jobs)
    g = build_task_graph(topo, task, tier=tier, pipe=pipe, aggregators={"spine1"})
    assert set(g.inps()) == {"inp:spine1^dn:0", "inp:spine1^dn:1"}
    assert "cs:leaf2^up" in g.kind and "cs:leaf1^dn" in g.kind
    assert g.link[("inp:spine1^dn:0", "op:spine1^dn")] is None          # virtual edge, no capacity
    assert g.link[("op:spine1^dn", "cs:leaf1^dn")] == ("spine1", "leaf1")


def test_algorithm1_reuses_an_inp_path():
    topo, jobs = _one_spine(1)
    tier, (pipe, _) = tiers(topo), pipe_map(topo)
    (task,) = make_tasks(jobs)
    g = build_task_graph(topo, task, tier=tier, pipe=pipe, aggregators={"spine1"})
    y = {e: 1 for e in g.link}                 # every edge once: both flows meet in INP 0
    routes = generate_routes(g, y)
    assert routes == {"h3": ["h3", "leaf2", "spine1", "leaf1", "h1"],
                      "h5": ["h5", "leaf3", "spine1", "leaf1", "h1"]}


def test_qsr_quantizes_rates_to_multiples_of_bbar_over_n():
    topo = leaf_spine(1, 2, 4, programmable_fraction=0.0)
    jobs = [_job("a", ["h5", "h6", "h7"], ["h1"])]     # 3 flows into the PS link: 100/3
    exact = solve_aro(topo, jobs)
    assert exact.objective == pytest.approx(100 / 3)
    for n, want in ((100, 33.0), (10, 30.0), (3, 100 / 3)):
        plan = solve_aro(topo, jobs, quantize=n)
        q = plan.extra["qsr_rates"]["a"]
        assert q == pytest.approx(want)
        assert (q / (100 / n)) == pytest.approx(round(q / (100 / n)))   # a multiple of b̄/N (Eq. 11)
        assert plan.objective == pytest.approx(exact.objective)          # LP rates on the same routes


def test_score_variance_matches_fig6():
    assert score_variance([5, 1]) == 8.0
    assert score_variance([2, 4]) == 2.0


def _app_topology():
    """Two programmable 2-pipe spines with different port->pipe maps (see test below)."""
    topo = leaf_spine(2, 3, 3, programmable_fraction=0.0, pipelines=2)
    for s in ("spine1", "spine2"):
        topo.nodes[s].programmable = True
    topo.nodes["spine2"].port_pipe = {1: 0, 2: 1, 3: 1}    # spine1 keeps {1: 0, 2: 0, 3: 1}
    return topo


def test_app_keeps_lowest_variance_aggregators_round_robin():
    # workers: 3 under leaf2 (h4-h6), 1 under leaf3 (h7); PS h1 under leaf1.
    # spine1 INP scores (3, 1): variance 2; spine2 (0, 4): variance 8.
    topo = _app_topology()
    jobs = [_job("a", ["h4", "h5", "h6", "h7"], ["h1"]), _job("b", ["h4", "h5", "h6", "h7"], ["h2"])]
    tier, (pipe, npipes) = tiers(topo), pipe_map(topo)
    graphs = [build_task_graph(topo, t, tier=tier, pipe=pipe, aggregators={"spine1", "spine2"})
              for t in make_tasks(jobs)]
    dh = down_hosts(topo, tier)
    # α = 0.5 of n = 2 keeps one: task a the least variance, task b the one left in the list
    assert app_select(graphs, npipes, dh, 0.5) == {"a": {"spine2"}, "b": {"spine1"}}
    assert app_select(graphs, npipes, dh, 1.0) == {"a": set(), "b": set()}
    # floor(α n) with at least one kept
    assert app_select(graphs[:1], npipes, dh, 0.2) == {"a": {"spine2"}}
    plan = solve_aro(topo, jobs[:1], app_alpha=0.5)
    assert plan.extra["app_dropped"] == {"a": ["spine2"]}
    assert all("spine2" not in p for p in plan.paths["a"].values())
    _assert_valid(plan, topo, jobs[:1])


def test_sro_drops_inps_stage_one_left_unused():
    topo = _app_topology()
    topo.nodes["spine2"].programmable = False               # spine2 is a CS: stage 1 drops it
    jobs = [_job("a", ["h4", "h7"], ["h1"])]
    plan = solve_aro(topo, jobs, sro=True)
    # stage 1 routes both flows through spine1 (pipes 0 and 1), so nothing is unused
    assert plan.extra["sro_unused_inps"] == {"a": 0}
    assert [s["stage"] for s in plan.extra["stages"]] == ["SRO1:CR", "ARO:CR"]
    assert plan.objective == pytest.approx(solve_aro(topo, jobs).objective)
    _assert_valid(plan, topo, jobs)


def test_accelerated_plans_are_valid_and_near_exact():
    topo = leaf_spine(6, 6, 4, programmable_fraction=0.4, seed=3, pipelines=2)
    rng = random.Random(3)
    hosts = topo.hosts()
    jobs = [_job("a", rng.sample(hosts[4:], 10), [hosts[0]]), _job("b", rng.sample(hosts[4:], 10), [hosts[1]])]
    exact = solve_aro(topo, jobs)
    acc = solve_aro(topo, jobs, accelerated=True)
    assert acc.status in ("heuristic", "feasible")
    assert acc.objective <= exact.objective * (1 + 1e-6)
    assert acc.extra["variant"] == "ARO-ACC"
    _assert_valid(acc, topo, jobs)
    _assert_valid(exact, topo, jobs)


def test_schemes_are_registered():
    topo, jobs = _one_spine(1)
    assert get_scheme("aro")(topo, jobs, {}).objective == pytest.approx(100.0)
    plan = get_scheme("aro-acc")(topo, jobs, {"seed": 1})
    assert plan.scheme == "aro-acc" and plan.objective == pytest.approx(100.0)
