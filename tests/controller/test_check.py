"""The checker recomputes GOAT's objective and catches every violation kind on hand-made plans."""
from __future__ import annotations


import pytest

from controller.check import KINDS, check_plan, evaluate_plan
from controller.model import Job, Plan, SubModel
from controller.topologies import leaf_spine

# 2 spines, 3 leaves; h1 h2 on leaf1, h3 h4 on leaf2, h5 h6 on leaf3; links 10 Gb/s, 64 MB each.
TOPO = leaf_spine(2, 3, 2, link_gbps=10.0)
JOB = Job("j", ["h1", "h2", "h3"], ["h5"], [SubModel("g0", 40.0), SubModel("g1", 40.0)])


def kinds(plan: Plan, topo=TOPO, jobs=None) -> set[str]:
    return {v.kind for v in check_plan(plan, topo, jobs or [JOB])}


def placement() -> Plan:
    return Plan("goat", ["j"], submodel_switches={"g0": ["leaf1"], "g1": ["spine1"]},
                aggregation_node={"h1": {"g0": "leaf1", "g1": "spine1"},
                                  "h2": {"g0": "leaf1", "g1": "spine1"},
                                  "h3": {"g0": None, "g1": "spine1"}},
                objective=680.0, extra={"objective_name": "gina_cost"})


def routing() -> Plan:
    return Plan("aro", ["j"], paths={"j": {"h1": ["h1", "leaf1", "spine1", "leaf3", "h5"],
                                           "h2": ["h2", "leaf1", "spine1", "leaf3", "h5"],
                                           "h3": ["h3", "leaf2", "spine2", "leaf3", "h5"]}},
                rates={"j": 10.0}, objective=10.0)


def test_gina_objective_by_hand():
    r = evaluate_plan(placement(), TOPO, [JOB])
    assert r.ok, r.violations
    m = r.metrics
    # g0: workers 1 + 1 + 4 hops, leaf1 -> PS 3 hops; g1: 2 + 2 + 2, spine1 -> PS 2; x 40 MB
    assert m["gina_cost"] == pytest.approx((6 + 3) * 40 + (6 + 2) * 40)
    # Eq. 4: g0 leaf1 (2 - 1) * 3, g1 spine1 (3 - 1) * 2; and Eq. 2 - Eq. 4 = Eq. 1
    assert m["gina_reduction"] == pytest.approx((1 * 3 + 2 * 2) * 40)
    assert m["ps_inbound_mb"] == pytest.approx(3 * 40) and m["total_mb"] == pytest.approx(240)
    assert m["in_network_mb"] == pytest.approx(120)
    assert r.objective_name == "gina_cost"


def test_eq_aliases_and_objective_mismatch():
    p = placement()
    p.extra["objective_name"] = "eq4"
    p.objective = 280.0
    assert kinds(p) == set()
    p.objective = 281.0
    assert kinds(p) == {"objective_mismatch"}
    p.extra["objective_name"] = "bogus"
    assert kinds(p) == {"unknown_objective"}


def test_forward_to_two_level():
    p = placement()
    p.submodel_switches["g0"] = ["leaf1", "leaf3"]
    p.extra["forward_to"] = {"g0": {"leaf1": "leaf3"}}
    p.objective = None
    r = evaluate_plan(p, TOPO, [JOB])
    assert r.ok
    # g0: leaf1 -> leaf3 (2 hops), leaf3 -> PS (1); PS now gets one g0 stream from leaf3 + h3
    assert r.metrics["gina_cost"] == pytest.approx((6 + 2 + 1) * 40 + 8 * 40)
    p.extra["forward_to"] = {"g0": {"leaf1": "leaf3", "leaf3": "leaf1"}}
    assert "forward_to" in kinds(p)
    p.extra["forward_to"] = {"g0": {"leaf1": "spine2"}}
    assert "forward_to" in kinds(p)


@pytest.mark.parametrize("breaker, kind", [
    (lambda p: p.submodel_switches.__setitem__("g0", ["leaf1", "h6"]), "not_programmable"),
    (lambda p: p.submodel_switches.__setitem__("nope", ["leaf1"]), "unknown_submodel"),
    (lambda p: p.submodel_switches.__setitem__("g0", ["ghost"]), "unknown_node"),
    (lambda p: p.aggregation_node["h3"].pop("g1"), "missing_assignment"),
    (lambda p: p.aggregation_node["h1"].__setitem__("g0", "spine2"), "not_candidate"),
    (lambda p: p.aggregation_node.__setitem__("h5", {"g0": None, "g1": None}), "unknown_worker"),
    (lambda p: p.submodel_switches.__setitem__("g1", ["spine1", "leaf1"]), "memory"),
    (lambda p: p.extra.__setitem__("memory_partition", {"leaf1": {"j": 30e6}, "spine1": {"j": 64e6}}),
     "memory_partition"),
    (lambda p: setattr(p, "jobs", ["j", "other"]), "unknown_job"),
])
def test_placement_violations(breaker, kind):
    p = placement()
    p.objective = None
    breaker(p)
    assert kind in kinds(p)


def test_memory_needs_whole_submodel():
    p = placement()
    p.objective = None
    p.submodel_switches["g1"] = ["leaf1"]          # 40 + 40 MB on a 64 MB switch
    for w in ("h1", "h2", "h3"):
        p.aggregation_node[w]["g1"] = "leaf1" if w != "h3" else None
    assert kinds(p) == {"memory"}
    assert kinds(p, leaf_spine(2, 3, 2, link_gbps=10.0, memory_bytes=80_000_000)) == set()


def test_not_programmable_switch():
    topo = leaf_spine(2, 3, 2, link_gbps=10.0, programmable_fraction=0.6, force_programmable=["leaf1", "spine1"])
    plain = next(s for s in topo.switches() if s not in topo.programmable_switches())
    p = placement()
    p.submodel_switches["g0"] = ["leaf1", plain]
    assert "not_programmable" in kinds(p, topo)


def test_routing_valid_and_aggregation_semantics():
    r = evaluate_plan(routing(), TOPO, [JOB])
    assert r.ok, r.violations                    # every link carries one merged flow
    assert r.metrics["throughput"] == 10 and r.metrics["max_link_utilization"] == pytest.approx(1)
    p = routing()
    p.extra["ina"] = "none"                      # three flows into the PS link
    assert kinds(p) == {"capacity"}
    p.rates["j"] = p.objective = 10 / 3
    assert kinds(p) == set()
    p = routing()
    p.extra["aggregators"] = ["spine1"]          # leaf1 no longer merges h1 and h2
    assert kinds(p) == {"capacity"}


def test_pipes_limit_aggregation():
    topo = leaf_spine(2, 3, 2, link_gbps=10.0, pipelines=4)
    # leaf1: h1 port 1 (pipe 0), h2 port 2 (pipe 1): not merged; leaf3 spines on pipes 2 and 3
    assert kinds(routing(), topo) == {"capacity"}
    p = routing()
    p.rates["j"] = p.objective = 5.0
    assert kinds(p, topo) == set()


def test_explicit_stream_aggregators():
    p = routing()
    p.extra.update(ina="explicit", stream_aggregator={"j": {"h1": "spine1", "h2": "spine1", "h3": None}})
    p.rates["j"] = p.objective = 5.0             # leaf1->spine1 and leaf3->h5 carry 2 flows
    assert kinds(p) == set()
    p.rates["j"] = p.objective = 6.0
    assert kinds(p) == {"capacity"}
    p.rates["j"] = p.objective = 5.0
    p.extra["stream_aggregator"]["j"]["h3"] = "spine1"     # h3 goes via spine2
    assert kinds(p) == {"aggregator_not_on_path"}
    # InArt's form: aggregation_node keyed by task (here by the PS name) means the same
    q = routing()
    q.aggregation_node = {"h1": {"h5": "spine1"}, "h2": {"h5": "spine1"}, "h3": {"h5": None}}
    q.paths = {"h5": q.paths["j"]}
    q.rates = {"h5": 5.0}
    q.objective = 5.0
    assert kinds(q) == set()


def test_switch_and_ps_capacity():
    topo = leaf_spine(2, 3, 2, link_gbps=10.0, switch_capacity_gbps=5.0, ps_capacity_gbps=5.0)
    p = routing()
    p.rates["j"] = p.objective = 5.0
    # leaf1 aggregates 2 x 5 Gb/s > 5; the PS receives one flow of 5: fine
    assert kinds(p, topo) == {"switch_capacity"}
    p.extra["ina"] = "none"
    p.rates["j"] = p.objective = 3.0             # no aggregation; PS gets 3 x 3 = 9 > 5
    assert kinds(p, topo) == {"ps_capacity"}


@pytest.mark.parametrize("path, kind", [
    (["h2", "leaf1", "spine1", "leaf3", "h5"], "path_start"),
    (["h1", "leaf1", "spine1", "leaf3", "h6"], "path_end"),
    (["h1", "leaf1", "leaf3", "h5"], "no_link"),
    (["h1", "leaf1", "spine1", "leaf1", "spine1", "leaf3", "h5"], "loop"),
    (["h1", "leaf1", "h2", "leaf1", "spine1", "leaf3", "h5"], "host_transit"),
    (["h1", "leaf1", "spine1", "leaf2", "spine2", "leaf3", "h5"], "valley"),
    (["h1", "leaf1", "ghost", "leaf3", "h5"], "unknown_node"),
    ("h1-leaf1", "malformed"),
])
def test_path_violations(path, kind):
    p = routing()
    p.paths["j"]["h1"] = path
    assert kind in kinds(p)


def test_valley_check_can_be_disabled_and_split_after_aggregation():
    p = routing()
    p.paths["j"]["h1"] = ["h1", "leaf1", "spine1", "leaf2", "spine2", "leaf3", "h5"]
    p.extra["up_down"] = False
    assert "valley" not in kinds(p)
    p = routing()
    p.paths["j"]["h2"] = ["h2", "leaf1", "spine2", "leaf3", "h5"]      # merged at leaf1, then split
    assert "split_after_aggregation" in kinds(p)


def test_missing_pieces():
    p = routing()
    del p.paths["j"]["h3"]
    assert kinds(p) == {"missing_path"}
    p = routing()
    p.rates = {}
    p.objective = None
    assert kinds(p) == {"missing_rate"}
    p = routing()
    p.paths["nope"] = {}
    assert "unknown_task" in kinds(p)
    p = routing()
    p.paths["j"]["h5"] = ["h5", "leaf3", "h5"]
    assert "unknown_worker" in kinds(p)


def test_multi_ps_split_and_tasks():
    job = Job("j", ["h1", "h2", "h3"], ["h5", "h6"], [SubModel("g0", 10.0)])
    pa = {w: [w, "leaf1" if w != "h3" else "leaf2", "spine1", "leaf3"] for w in job.workers}
    p = Plan("inart", ["j"], paths={"j/h5": {w: q + ["h5"] for w, q in pa.items()},
                                    "j/h6": {w: q + ["h6"] for w, q in pa.items()}},
             rates={"j/h5": 4.0, "j/h6": 6.0}, split={"h5": 0.4, "h6": 0.6}, objective=10.0)
    r = evaluate_plan(p, TOPO, [job])
    assert r.ok, r.violations and r.metrics["throughput"] == 10
    p.split = {"h5": 0.5, "h6": 0.6}
    assert kinds(p, jobs=[job]) == {"split"}
    p.split = {"h5": 1.0, "h6": 0.0}
    del p.paths["j/h6"]
    p.rates["j/h6"] = 0.0
    p.objective = 4.0
    assert kinds(p, jobs=[job]) == set()          # a task with no share needs no paths


def test_multi_job_throughput_objective():
    a = Job("a", ["h1"], ["h5"], [SubModel("g0", 1.0)])
    b = Job("b", ["h3"], ["h6"], [SubModel("g0", 1.0)])
    p = Plan("aro", ["a", "b"], paths={"a": {"h1": ["h1", "leaf1", "spine1", "leaf3", "h5"]},
                                       "b": {"h3": ["h3", "leaf2", "spine2", "leaf3", "h6"]}},
             rates={"a": 4.0, "b": 6.0}, objective=4.0 + 0.001 * 10)
    r = evaluate_plan(p, TOPO, [a, b])
    assert r.ok, r.violations


def test_every_kind_is_documented():
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "controller-schemas.md").read_text()
    missing = [k for k in KINDS if f"`{k}`" not in doc]
    assert not missing, f"violation kinds not in docs/controller-schemas.md: {missing}"
