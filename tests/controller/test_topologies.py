"""Topology generators: the papers' sizes, port numbering, JSON round trips; profiles and jobs."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from controller.model import Topology
from controller.profiles import PROFILES, make_job, profile, select_hosts, split_sizes, submodels_needed
from controller.topologies import (fat_tree, goat_testbed, inart_fattree, inart_testbed, leaf_spine,
                                   pick_programmable, set_programmable)


def roles(t: Topology) -> Counter:
    return Counter(n.role for n in t.nodes.values() if n.kind == "switch")


def test_goat_leaf_spine():
    t = leaf_spine(10, 10, hosts=50, programmable_fraction=0.2, seed=1)
    assert roles(t) == {"spine": 10, "leaf": 10}
    assert len(t.hosts()) == 50 and len(t.links) == 50 + 100
    assert t.meta["hosts_per_leaf"] == [5] * 10
    assert len(t.programmable_switches()) == 4          # 20 % of 20 (GOAT §VII-D)
    assert all(t.nodes[s].memory_bytes == 64_000_000 for s in t.programmable_switches())
    assert all(t.nodes[s].memory_bytes == 0 for s in t.switches() if not t.nodes[s].programmable)


def test_aro_leaf_spine_pipes():
    t = leaf_spine(24, 24, 24, programmable_fraction=0.2, pipelines=4, force_programmable=["leaf1"])
    assert len(t.switches()) == 48 and len(t.hosts()) == 576
    prog = t.programmable_switches()
    assert len(prog) == 9 and "leaf1" in prog            # ARO Fig. 7: 9 aggregators
    leaf = t.nodes["leaf1"]
    assert leaf.pipelines == 4 and sorted(Counter(leaf.port_pipe.values()).values()) == [12] * 4
    # hosts occupy ports 1..24, spines 25..48: contiguous blocks of 12 per pipe
    assert t.port_pipe_of("leaf1", t.link("h1", "leaf1").port_of("leaf1")) == 0
    assert t.port_pipe_of("leaf1", t.link("leaf1", "spine24").port_of("leaf1")) == 3


def test_fat_tree_sizes():
    t = fat_tree(8, 6, programmable_fraction=0.2, seed=2)   # GOAT §VII-D
    assert roles(t) == {"core": 16, "aggregation": 32, "edge": 32}
    assert len(t.hosts()) == 192 and len(t.programmable_switches()) == 16
    assert len(t.links) == 192 + 32 * 4 + 32 * 4
    canon = fat_tree(8)
    assert len(canon.hosts()) == 128
    six = fat_tree(6)                                        # InArt §5.3.1
    assert roles(six) == {"core": 9, "aggregation": 18, "edge": 18} and len(six.hosts()) == 54


def test_fat_tree_wiring():
    t = fat_tree(4)
    for c in t.meta["cores"]:                               # each core reaches every pod once
        pods = [next(i for i, p in enumerate(t.meta["pods"]) if a in p["aggregation"])
                for a in t.neighbors(c)]
        assert sorted(pods) == [0, 1, 2, 3]
    lv = [t.tier_level(n) for n in t.shortest_path("h1", "h16")]
    assert lv == [0, 1, 2, 3, 2, 1, 0]


def test_inart_fattree():
    t = inart_fattree()
    assert len(t.hosts()) == 54 and all(l.capacity_gbps == pytest.approx(0.02) for l in t.links)
    assert all(t.nodes[s].capacity_gbps == pytest.approx(0.009) for s in t.switches())
    assert all(t.nodes[h].capacity_gbps == pytest.approx(0.02) for h in t.hosts())
    het = inart_fattree(heterogeneous=True, seed=3)
    caps = [l.capacity_gbps for l in het.links]
    assert min(caps) >= 0.01 and max(caps) <= 0.03 and len(set(caps)) > 1


def test_testbeds():
    g = goat_testbed()
    assert len(g.switches()) == 3 and len(g.hosts()) == 9
    assert Counter(g.nodes[h].role for h in g.hosts()) == {"worker": 8, "ps": 1}
    assert {frozenset((l.a, l.b)) for l in g.links if l.a.startswith("s") and l.b.startswith("s")} == \
        {frozenset(p) for p in (("s1", "s2"), ("s1", "s3"), ("s2", "s3"))}
    assert g.tor_of("ps") == "s3" and g.tor_of("w1") == "s1" and g.tor_of("w8") == "s2"
    assert all(g.nodes[s].memory_bytes == 20_000_000 for s in g.switches())
    i = inart_testbed(link_gbps=6, switch_capacity_gbps=6, ps_capacity_gbps=4)
    assert len(i.switches()) == 2 and len(i.hosts()) == 8
    assert Counter(i.nodes[h].role for h in i.hosts()) == {"worker": 6, "ps": 2}
    assert i.nodes["ps1"].capacity_gbps == 4 and i.nodes["v1"].capacity_gbps == 6


ALL = [lambda: leaf_spine(3, 4, 2, pipelines=2, programmable_fraction=0.5, seed=4),
       lambda: fat_tree(4, programmable_fraction=0.25), inart_fattree, goat_testbed, inart_testbed]


@pytest.mark.parametrize("make", ALL)
def test_ports_ids_and_round_trip(make):
    t = make()
    ports: dict[str, list[int]] = {n: [] for n in t.nodes}
    for l in t.links:
        ports[l.a].append(l.a_port)
        ports[l.b].append(l.b_port)
    for n, ps in ports.items():
        assert sorted(ps) == list(range(1, len(ps) + 1)), n
    ids = sorted(t.nodes[s].switch_id for s in t.switches())
    assert ids == list(range(1, len(ids) + 1))
    assert all(t.nodes[h].switch_id == 0 for h in t.hosts())
    d = json.loads(json.dumps(t.to_dict()))
    back = Topology.from_dict(d, "x.json")
    assert back.to_dict() == t.to_dict()


def test_programmable_selection():
    sw = [f"s{i}" for i in range(10)]
    a, b = pick_programmable(sw, 0.3, 7), pick_programmable(sw, 0.3, 7)
    assert a == b and len(a) == 3
    assert set(pick_programmable(sw, 0.1, 1, force=["s9", "s8"])) == {"s8", "s9"}
    with pytest.raises(ValueError):
        pick_programmable(sw, 1.5, 0)
    t = set_programmable(goat_testbed(), 0.34, 0)
    assert len(t.programmable_switches()) == 1


def test_generator_errors():
    with pytest.raises(ValueError):
        fat_tree(5)
    with pytest.raises(ValueError):
        leaf_spine(2, 2, 3, hosts=6)
    with pytest.raises(ValueError):
        leaf_spine(2, 2)


def test_profiles_and_jobs():
    assert profile("alexnet").size_mb == 221 and profile("ResNet50").size_mb == 98
    assert profile("resnet18").size_mb == 44 and profile("vgg19").size_mb == 548
    assert all(p.source for p in PROFILES.values())
    assert submodels_needed(98, 64_000_000) == 2 and submodels_needed(98, 20_000_000) == 5
    assert split_sizes(100, 4) == [25.0] * 4
    r = split_sizes(100, 5, mode="random", seed=3)
    assert sum(r) == pytest.approx(100) and len(set(r)) == 5
    t = leaf_spine(2, 3, 2)
    assert select_hosts(t, "first:2") == ["h1", "h2"] and select_hosts(t, "last:1") == ["h6"]
    assert select_hosts(t, "3", seed=1) == select_hosts(t, "random:3", seed=1)
    with pytest.raises(ValueError):
        select_hosts(t, "h1,nope")
    job = make_job(t, "resnet50", ps="h6", workers="all-but-ps", submodels=4)
    assert job.ps == ["h6"] and len(job.workers) == 5 and job.total_mb == pytest.approx(98)
    g = make_job(goat_testbed(), "resnet18", submodels=3)
    assert g.ps == ["ps"] and g.workers == [f"w{i}" for i in range(1, 9)]
    scaled = make_job(inart_fattree(), "vgg19", ps="random:4", workers="all-but-ps", scale=1e-3, seed=2)
    assert len(scaled.ps) == 4 and len(scaled.workers) == 50 and scaled.total_mb == pytest.approx(0.548)
