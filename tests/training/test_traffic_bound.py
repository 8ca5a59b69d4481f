"""make run-training's demo without Mininet: the wide model's size, gloo's ring traffic counted
by route against INA's (the bound on INA's speedup the links allow), the report's speedup line."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from emulation.train import TCP_FRAME, TCP_MSS, StepTraffic, parse_models, ring_link_bytes, setup
from training.launch import write_report
from training.train_digits import ModelSpec


def test_the_wide_model_has_over_a_million_parameters() -> None:
    spec = ModelSpec("wide", 1024)
    model = spec.build(0)
    assert spec.n_parameters == sum(p.numel() for p in model.parameters()) == 1_126_410
    # --hidden left out: each kind's own default
    assert [m.hidden for m in parse_models("wide,mlp", None, None)] == [1024, 64]
    assert parse_models("wide", 256, None)[0] == ModelSpec("wide", 256)


def test_ring_traffic_under_one_tor_by_hand() -> None:
    """4 workers under edge1: rank r sends 2(n-1)/n of the gradient to rank r+1, so every host
    link carries that much up (its segments) plus the ACKs of what it receives, and as much down."""
    topo, jobs = setup(4, hosts_per_edge=4)
    hosts = jobs[0].workers
    assert {topo.tor_of(h) for h in hosts} == {"edge1"}
    grad = 4.0 * 100_000
    data = 1.5 * grad
    segs = math.ceil(data / TCP_MSS)
    ring = ring_link_bytes(topo, hosts, grad)
    for h in hosts:
        assert ring[(h, "edge1")] == pytest.approx(data + segs * TCP_FRAME + segs / 2 * TCP_FRAME)
        assert ring[(("edge1", h))] == pytest.approx(data + segs * TCP_FRAME + segs / 2 * TCP_FRAME)
    assert set(ring) == {(h, "edge1") for h in hosts} | {("edge1", h) for h in hosts}   # nothing leaves the rack


def test_a_ring_crossing_the_pod_boundary_loads_the_uplinks() -> None:
    topo, jobs = setup(4)               # two workers under edge1, two under edge2
    hosts = jobs[0].workers
    ring = ring_link_bytes(topo, hosts, 4e5)
    # h2 → h3 and h4 → h1 cross between the edges: each edge's uplink carries one ring edge's data
    up = [v for (a, b), v in ring.items() if a in ("edge1", "edge2") and b.startswith("agg")]
    assert up and max(up) >= 1.5 * 4e5


def test_bound_and_textbook_ratio() -> None:
    t = StepTraffic(ina_bytes=5.0e6, ina_link="h1→edge1", gloo_bytes=7.5e6, gloo_link="h1→edge1", workers=8)
    assert t.textbook == pytest.approx(1.75)
    assert t.bound == pytest.approx(1.5)
    text = t.describe(10.0)
    assert "1.75" in text and "1.50×" in text and "6.00 s" in text and "4.00 s" in text


def test_the_report_states_the_speedup_next_to_the_bound(tmp_path: Path) -> None:
    rows = [{"step": i, "loss_ina": 2.0 - 0.1 * i, "seconds_ina": 1.0, "loss_gloo": 2.0 - 0.1 * i,
             "seconds_gloo": 1.5, "loss_diff": 0.0, "loss_diff_ulps": 0.0} for i in range(4)]
    s = write_report(tmp_path, rows, title="t", setup="s", notes=["a note"], bound=1.49)
    assert s["speedup"] == pytest.approx(1.5)
    text = (tmp_path / "summary.md").read_text()
    assert "1.50× gloo's speed" in text and "at most 1.49×" in text and "* a note" in text
