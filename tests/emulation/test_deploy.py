"""controller/deploy.py (pure): plan → table operations, labels and PS config, checked by
walking the installed routes (no Mininet needed)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from controller.deploy import (TableOp, apply_ops, deploy_plan, host_addresses, ina_fraction, next_hops,
                               submodel_elements)
from controller.model import Job, SubModel
from controller.schemes import run_scheme
from controller.topologies import fat_tree
from emulation.experiment import bw_scale_for, place_jobs
from emulation.reproduce import settings
from emulation.schemes import prepare_scheme


def _setup(fraction: float):
    topo = fat_tree(4, programmable_fraction=fraction, memory_bytes=1_000_000, seed=0)
    hosts = topo.hosts()
    job = Job("j", hosts[:6], [hosts[-1]], [SubModel(f"g{i}", 0.5) for i in range(4)], job_id=1)
    return topo, job


def _walk(topo, dep, worker: str, node_id: int) -> list[str]:
    """Switches a first copy labelled ``node_id`` from ``worker`` visits until that node absorbs
    it or it reaches the PS: pinned route (job, node, worker) first, else the /32 LPM."""
    wid = dep.workers.index(worker)
    ps_ip = dep.addresses[dep.ps].ip
    port_to = {s: {l.port_of(s): l.other(s) for l in topo.links_of(s)} for s in topo.switches()}
    at, seen = topo.tor_of(worker), []
    while at in port_to:
        seen.append(at)
        if dep.node_ids.get(at) == node_id:
            return seen
        ops = dep.ops[at]
        pin = [o for o in ops if o.method == "add_route" and dict(o.kwargs)["node_id"] == node_id
               and dict(o.kwargs).get("worker_id") == wid and dict(o.kwargs)["flags"] == 0]
        lpm = [o for o in ops if o.method == "add_lpm" and o.args[0] == ps_ip]
        at = port_to[at][pin[0].args[1] if pin else lpm[0].args[2]]
        assert len(seen) < 20, seen
    return seen + [at]


@pytest.mark.parametrize("scheme,fraction", [("goat", 0.2), ("atp", 0.2), ("goat", 1.0), ("atp", 1.0)])
def test_every_first_copy_reaches_its_aggregation_node(scheme: str, fraction: float) -> None:
    topo, job = _setup(fraction)
    dep = deploy_plan(topo, job, run_scheme(scheme, topo, [job]), total_elements=4000)
    assert dep.ina_switches
    for w in job.workers:
        for lab in dep.labels[w]:
            path = _walk(topo, dep, w, lab.node_id)
            if lab.node_id:
                assert dep.node_ids[path[-1]] == lab.node_id
            else:
                assert path[-1] == dep.ps
    # fan-in of a (node, sub-model) = the workers labelled with it (or the partials' total)
    for i in range(len(job.submodels)):
        by_node: dict[int, int] = {}
        for w in job.workers:
            lab = dep.labels[w][i]
            if lab.node_id:
                by_node[lab.node_id] = by_node.get(lab.node_id, 0) + 1
        for w in job.workers:
            lab = dep.labels[w][i]
            if lab.node_id:
                assert lab.fan_in >= by_node[lab.node_id]
    assert sum(dep.submodel_sizes) == 4000


def test_goat_on_sparse_fat_tree_multicasts_and_pins_detours() -> None:
    topo, job = _setup(0.2)
    dep = deploy_plan(topo, job, run_scheme("goat", topo, [job]), total_elements=4000)
    assert set(dep.levels.values()) == {"to_multicast"}
    assert any(o.method == "add_route" for ops in dep.ops.values() for o in ops)
    atp = deploy_plan(topo, job, run_scheme("atp", topo, [job]), total_elements=4000)
    # ATP aggregates to the PS and holds its aggregators until the result passes back; the
    # PS's results leave it once, through a switch that only multicasts them (rule 1)
    holding = [s for s, lv in atp.levels.items() if lv == "to_ps"]
    relays = [s for s, lv in atp.levels.items() if lv == "relay"]
    assert holding and len(relays) == 1
    assert all(("add_release" in [o.method for o in atp.ops[s]]) for s in holding)
    relay = relays[0]
    assert "add_release" not in [o.method for o in atp.ops[relay] if o.args and o.args[0] == job.job_id]
    assert atp.job_config.result_via == atp.node_ids[relay]
    assert atp.job_config.node_workers is not None and atp.node_ids[relay] not in atp.job_config.node_workers
    # its replicas pass every holding switch on their way to the workers it aggregates for
    hops = next_hops(topo)
    for w in job.workers:
        at, replica_path = relay, []
        while at != w:
            replica_path.append(at)
            at = hops[at][w]
        for s in holding:
            if any(lab.node_id == atp.node_ids[s] for lab in atp.labels[w]):
                assert s in replica_path
    plain = deploy_plan(topo, job, run_scheme("ps", topo, [job]), total_elements=4000)
    assert plain.job_config.result_via == 0 and not plain.levels     # BytePS-style: unicast results


def test_atp_two_level_fan_in() -> None:
    topo, job = _setup(1.0)
    dep = deploy_plan(topo, job, run_scheme("atp", topo, [job]), total_elements=4000)
    to_node = [dict(o.kwargs) for ops in dep.ops.values() for o in ops if o.method == "level_to_node"]
    assert to_node and all(k["next_fan_in"] == len(job.workers) for k in to_node)


def test_helpers() -> None:
    topo, job = _setup(0.2)
    a = host_addresses(topo)
    assert a["h1"].ip == "10.0.0.1" and len({x.ip for x in a.values()}) == len(a)
    assert sum(submodel_elements(job, 10)) == 10 and min(submodel_elements(job, 10)) >= 1
    assert ina_fraction({"plain": 25, "collision": 5}, 100) == pytest.approx(0.7)

    class Rec:
        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def __getattr__(self, name: str):
            return lambda *a, **k: self.calls.append((name, a, k))
    r = Rec()
    assert apply_ops(r, [TableOp.of("add_lpm", "10.0.0.1", 32, 2, dmac="02:00:00:00:00:01")]) == 1
    assert r.calls == [("add_lpm", ("10.0.0.1", 32, 2), {"dmac": "02:00:00:00:00:01"})]


def _walk_reminder(topo, dep, node_id: int, flags: int = 0x08) -> list[str]:
    """Switches a PS reminder (``flags``: or a relayed result, 0x40) for ``node_id`` visits
    before it reaches its ``reminder_via`` host: a pinned route (node, flags, ingress port)
    first, else the /32 LPM to that host."""
    dst = dep.job_config.reminder_via[node_id]
    port_to = {s: {l.port_of(s): l.other(s) for l in topo.links_of(s)} for s in topo.switches()}
    prev, at, seen = dep.ps, topo.tor_of(dep.ps), []
    while at in port_to:
        seen.append(at)
        in_port = topo.link(at, prev).port_of(at)
        pin = [o for o in dep.ops[at] if o.method == "add_route" and dict(o.kwargs)["node_id"] == node_id
               and dict(o.kwargs)["flags"] == flags and dict(o.kwargs)["ingress_port"] == in_port]
        lpm = [o for o in dep.ops[at] if o.method == "add_lpm" and o.args[0] == dst]
        prev, at = at, port_to[at][pin[0].args[1] if pin else lpm[0].args[2]]
        assert len(seen) < 20, seen
    assert dep.addresses[at].ip == dst
    return seen


@pytest.mark.parametrize("scheme,fraction", [("goat", 0.2), ("atp", 0.2), ("goat", 1.0), ("atp", 1.0),
                                             ("esa", 0.5)])
def test_every_aggregation_node_is_on_its_reminder_route(scheme: str, fraction: float) -> None:
    """The PS can drain every node that may hold a partial, detour nodes included."""
    topo, job = _setup(fraction)
    dep = deploy_plan(topo, job, run_scheme(scheme, topo, [job]), total_elements=4000)
    assert set(dep.job_config.reminder_via) == set(dep.node_ids.values())
    for sw, node_id in dep.node_ids.items():
        assert sw in _walk_reminder(topo, dep, node_id)


@pytest.mark.parametrize("scheme,fraction", [("goat", 0.2), ("goat", 1.0), ("atp", 1.0), ("aro", 0.5)])
def test_results_are_relayed_through_a_multicasting_node_of_their_submodel(scheme: str, fraction: float) -> None:
    """`result_via`: where the job has a `to_multicast` node, the PS relays its results
    through one — the one whose busiest link carries the fewest copies (the sparse fat-tree's
    GOAT plan multicasts at two edge switches and a core: the core) — and a RELAY frame from
    the PS passes it (so rule 1 multicasts it). ATP's levels multicast nothing, but its PS's ToR
    does not hold (the result passes it first), so a relay-only switch whose tree passes the
    holding worker ToRs multicasts its results."""
    topo, job = _setup(fraction)
    dep = deploy_plan(topo, job, run_scheme(scheme, topo, [job]), total_elements=4000)
    cfg, level = dep.job_config, {dep.node_ids[s]: lv for s, lv in dep.levels.items()}
    multicasting = [n for n, lv in level.items() if lv in ("to_multicast", "relay")]
    assert multicasting and cfg.result_via
    if scheme == "atp":
        holding = [s for s, ops in dep.ops.items() for o in ops if o.method == "add_job"
                   and dict(o.kwargs)["hold_until_result"]]
        assert holding and topo.tor_of(job.ps[0]) in dep.levels and topo.tor_of(job.ps[0]) not in holding
    for node_id in [cfg.result_via] if cfg.result_via else []:
        sw = next(s for s, n in dep.node_ids.items() if n == node_id)
        assert level[node_id] in ("to_multicast", "relay") and sw in _walk_reminder(topo, dep, node_id, flags=0x40)
        if scheme == "goat" and fraction == 0.2:
            assert sorted(s[:4] for s, lv in dep.levels.items()) == ["core", "edge", "edge"] and sw.startswith("core")


def _prepared(setting, scheme: str, seed: int = 0):
    topo, specs = setting.topology_built(seed), setting.specs()
    jobs = place_jobs(topo, specs, setting.workers)
    return topo, prepare_scheme(topo, jobs, specs, scheme, bw_scale=bw_scale_for(topo, 20.0), window=setting.window,
                                seed=1, pool=setting.pool, log=lambda _: None)


def test_a_plan_aggregating_at_every_programmable_switch_still_relays_its_results() -> None:
    """ARO's first job on the 4-pipe leaf-spine aggregates at every programmable switch; its
    results still leave the PS once, through a unit of a switch it aggregates at (the pipe the
    PS's relays enter), and the relayed round is exact (prepare_scheme's link-rate ideal runs one
    in process and raises otherwise), its busiest link not the PS's."""
    s = next(x for x in settings() if x.name == "ARO leaf-spine, 4 pipes")
    topo, prepared = _prepared(s, "aro")
    for d in prepared.deployment.jobs:
        relay = next(n for n, lv in d.levels.items() if lv == "relay")
        assert d.job_config.result_via == d.node_ids[relay]
        assert not prepared.bounds[d.job_id].link.startswith(f"{d.ps}→")
    first = prepared.deployment.jobs[0]
    switches = {n.split(".")[0] for n in first.levels}
    assert switches == set(topo.programmable_switches())


def test_a_relay_on_a_unit_the_job_aggregates_at_is_a_node_of_its_own() -> None:
    """InArt on run-fattree's fabric (seed 4: one programmable core): the PS's relays enter the
    core where the job aggregates, so the relay there gets an id past the switch's pipes."""
    s = replace(next(x for x in settings() if x.name == "InArt fat-tree, 2 PSes"), ps_per_job=1, jobs=2)
    topo, prepared = _prepared(s, "inart", seed=4)
    beside = [(d, n) for d in prepared.deployment.jobs for n in d.levels if n.endswith(".relay")]
    assert beside
    for d, n in beside:
        switch = topo.nodes[n.removesuffix(".relay")]
        assert switch.name in d.levels and d.levels[switch.name] != "relay"
        assert d.job_config.result_via == d.node_ids[n] == switch.switch_id + 4096 * switch.pipelines


@pytest.mark.parametrize("scheme,fraction", [("goat", 0.2), ("atp", 0.2), ("atp", 1.0), ("esa", 0.5), ("aro", 0.5)])
def test_node_workers_are_the_workers_whose_contributions_reach_each_node(scheme: str, fraction: float) -> None:
    """`node_workers` (whom the PS reminds a node for): a worker's label node for each
    sub-model and every level that node sends its aggregates on to, nothing else."""
    topo, job = _setup(fraction)
    dep = deploy_plan(topo, job, run_scheme(scheme, topo, [job]), total_elements=4000)
    nxt = {}
    for ops in dep.ops.values():
        for o in ops:
            if o.method == "level_to_node":
                nxt[o.args[1]] = dict(o.kwargs)["next_node"]
    want: dict[int, set[int]] = {}
    for i, w in enumerate(dep.workers):
        for lab in dep.labels[w]:
            n = lab.node_id
            while n:
                want.setdefault(n, set()).add(i)
                n = nxt.get(n, 0)
    assert {n: set(ws) for n, ws in dep.job_config.node_workers.items()} == want
    if scheme == "atp" and fraction == 1.0:
        assert nxt and all(want[n] == set(range(len(job.workers))) for n in nxt.values())


# A routing plan's partial leaving a level must reach the next level's node: the pins along the
# way are the worker's own path's next hops. ARO's plan (sets inside) depends on the hash seed,
# and with one of them two jobs' paths split at a switch before core2 and the pin took another
# worker's next hop: every fragment of one job stranded a contribution at core2 (37 s rounds).
_WALK_PARTIALS = """
from controller.deploy import deploy_jobs
from emulation.experiment import JobSpec, build_topology, place_jobs
from emulation.schemes import plan_scheme
topo = build_topology("fattree", k=4, hosts_per_edge=4, programmable=0.2, seed=0)
jobs = place_jobs(topo, [JobSpec(0.25, 1), JobSpec(0.25, 1)], 6)
fd = deploy_jobs(topo, jobs, plan_scheme("aro", topo, jobs), total_elements={j.name: 62500 for j in jobs},
                 pool_size=256)
port_to = {s: {l.port_of(s): l.other(s) for l in topo.links_of(s)} for s in topo.switches()}
for dep in fd.jobs:
    ps_ip = dep.addresses[dep.ps].ip
    for s, ops in fd.ops.items():
        for op in ops:
            if op.method == "level_to_node" and op.args[0] == dep.job_id:
                target = dict(op.kwargs)["next_node"]
                at, seen = s, []
                while at in port_to and dep.node_ids.get(at) != target or at == s:
                    seen.append(at)
                    mine = fd.ops[at]
                    pin = [o for o in mine if o.method == "add_route" and o.args[0] == dep.job_id
                           and dict(o.kwargs).get("node_id") == target and dict(o.kwargs).get("flags") == 0
                           and dict(o.kwargs).get("worker_id") is None]
                    lpm = [o for o in mine if o.method == "add_lpm" and o.args[0] == ps_ip]
                    at = port_to[at][pin[0].args[1] if pin else lpm[0].args[2]]
                    assert len(seen) < 20, seen
                assert dep.node_ids.get(at) == target, (dep.job_id, s, target, seen, at)
"""


@pytest.mark.parametrize("hash_seed", ["1", "2", "3"])
def test_routing_plan_partials_reach_their_next_level(hash_seed: str) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", _WALK_PARTIALS], cwd=root, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
