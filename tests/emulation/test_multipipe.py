"""Multi-pipeline switches (ARO §II-B) on the in-process twin: a routing plan aggregates per
ingress pipe (one node id and pool per pipe, ``ina_port_pipe`` mapping the ports), and flows
entering a switch on different pipes are not aggregated together."""
from __future__ import annotations

from controller.deploy import PIPE_NODE_STRIDE, deploy_plan
from controller.model import Job, Plan, SubModel
from controller.topologies import leaf_spine
from emulation.experiment import build_topology
from emulation.inprocess import run_rounds


def _setup():
    # 4 spines, 4 leaves, 2 hosts each; spine1 and the PS's leaf programmable, 4 pipes: a spine's
    # port j (leaf j) is pipe j-1; a leaf's ports 1-2 (hosts) pipe 0, 3 (spine1) pipe 1
    topo = leaf_spine(4, 4, 2, programmable_fraction=0.0, force_programmable=["spine1", "leaf4"], pipelines=4)
    workers = ["h1", "h2", "h3", "h4"]
    job = Job("j", workers, ["h8"], [SubModel(f"g{i}", 0.25) for i in range(2)], job_id=1)
    paths = {w: [w, "leaf1" if w in ("h1", "h2") else "leaf2", "spine1", "leaf4", "h8"] for w in workers}
    return topo, job, Plan("aro", ["j"], paths={"j": paths})


def test_a_spine_aggregates_each_pipe_apart_and_the_ps_leaf_merges_them() -> None:
    topo, job, plan = _setup()
    dep = deploy_plan(topo, job, plan, total_elements=2000, pool_size=64)
    sid = topo.nodes["spine1"].switch_id
    leaf4 = topo.nodes["leaf4"].switch_id + PIPE_NODE_STRIDE * 1
    assert dep.node_ids == {"spine1.pipe0": sid, "spine1.pipe1": sid + PIPE_NODE_STRIDE, "leaf4.pipe1": leaf4}
    assert dep.levels == {"spine1.pipe0": "to_node", "spine1.pipe1": "to_node", "leaf4.pipe1": "to_multicast"}
    assert [lab.node_id for lab in dep.labels["h1"]] == [sid, sid]
    assert [(lab.node_id, lab.fan_in) for lab in dep.labels["h3"]] == [(sid + PIPE_NODE_STRIDE, 2)] * 2
    nodes = [op for op in dep.ops["spine1"] if op.method == "add_node"]
    # each pipe its own node entry and its own block of the register
    assert sorted((op.args[0], dict(op.kwargs).get("pipe", 0), dict(op.kwargs)["pool_base"]) for op in nodes) == \
        [(sid, 0, 0), (sid + PIPE_NODE_STRIDE, 1, 64)]
    pipes = {op.args for op in dep.ops["spine1"] if op.method == "set_port_pipe"}
    assert pipes == {(2, 1), (3, 2), (4, 3)}
    assert not [op for op in dep.ops["leaf1"] if op.method == "set_port_pipe"]     # not programmable

    res = run_rounds(topo, dep, rounds=1)
    assert res.exact
    by_link: dict[tuple[str, str], int] = {}
    for (a, b, _), n in res.report.link_bytes.items():
        by_link[(a, b)] = by_link.get((a, b), 0) + n
    # leaf1 (not programmable) sends two workers' streams up; spine1 merges them into one per
    # pipe, so two partials (not one) go down to the PS's leaf, which merges those: the PS gets none
    one_stream = by_link[("h1", "leaf1")]
    assert by_link[("leaf1", "spine1")] > 1.9 * one_stream
    assert 1.9 * one_stream < by_link[("spine1", "leaf4")] < 2.1 * one_stream
    assert by_link.get(("leaf4", "h8"), 0) < 0.1 * one_stream


def test_the_same_paths_on_single_pipe_switches_merge_at_the_spine() -> None:
    topo, job, plan = _setup()
    for s in topo.switches():
        topo.nodes[s].pipelines, topo.nodes[s].port_pipe = 1, {}
    dep = deploy_plan(topo, job, plan, total_elements=2000, pool_size=64)
    assert dep.levels == {"spine1": "to_multicast"}
    by_link: dict[tuple[str, str], int] = {}
    res = run_rounds(topo, dep, rounds=1)
    assert res.exact
    for (a, b, _), n in res.report.link_bytes.items():
        by_link[(a, b)] = by_link.get((a, b), 0) + n
    assert by_link.get(("spine1", "leaf4"), 0) < 0.1 * by_link[("h1", "leaf1")]


def test_leaf_spine_4pipe_topology() -> None:
    topo = build_topology("leaf-spine-4pipe", k=8, hosts_per_edge=4, programmable=0.2, seed=1)
    assert "leaf8" in topo.programmable_switches() and len(topo.programmable_switches()) == 3
    assert all(topo.nodes[s].pipelines == 4 for s in topo.switches())
    assert topo.port_pipe_of("spine1", 3) == 1 and topo.port_pipe_of("leaf8", 12) == 3
