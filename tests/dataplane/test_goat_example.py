"""GOAT's motivating example (GOAT §III-B, Fig. 2; slides) on three in-process p4sim switches.

Topology: W1, W2 on S1; W3, W4 on S2; S1-S3, S2-S3, S1-S2; the PS on S3. One aggregator per
switch, 4 workers × 3 fragments (A, B, C). ATP-style placement (aggregate at the workers' ToR,
then at the PS's ToR; aggregators held until the result returns) with the asynchronous order of
Fig. 2(b): the PS receives 7 fragments. GOAT's schedule (A→S1, B→S2, C→S3): 3. Both exact.
"""
from __future__ import annotations

import numpy as np
import pytest

from controller.ina_tables import InaTables
from hostlib.protocol import Flags, InaHeader, build_frame, parse_frame
from p4sim import Switch
from p4sim.fabric import Fabric

from .ina_harness import lanes_of, program

PS_IP = "10.0.9.1"
JOB = 7
SUB = 1
FRAGS = {"A": 0, "B": 1, "C": 2}
WORKER_SWITCH = {0: "S1", 1: "S1", 2: "S2", 3: "S2"}
NODE = {"S1": 1, "S2": 2, "S3": 3}


def _build(arch: str, placement: str) -> tuple[Fabric, dict[str, InaTables]]:
    fab = Fabric()
    tables = {}
    for name in ("S1", "S2", "S3"):
        sw = Switch(program(arch))
        fab.add_switch(name, sw)
        t = InaTables(sw)
        t.add_node(NODE[name], pool_base=0, pool_size=1)          # one aggregator per switch
        t.add_job(JOB, preemption=False, hold_until_result=True)
        t.add_release(JOB, NODE[name], pool_base=0, pool_size=1)
        tables[name] = t
    fab.link("S1", 3, "S3", 1)
    fab.link("S2", 3, "S3", 2)
    fab.link("S1", 4, "S2", 4)
    for w, sw in WORKER_SWITCH.items():
        fab.attach(f"W{w + 1}", sw, 1 + w % 2)
    fab.attach("PS", "S3", 3)
    # L3: the PS behind S3; workers behind their ToR
    tables["S1"].add_lpm(PS_IP, 32, 3)
    tables["S2"].add_lpm(PS_IP, 32, 3)
    tables["S3"].add_lpm(PS_IP, 32, 3)
    for w, sw in WORKER_SWITCH.items():
        ip = f"10.0.0.{w + 1}"
        tables[sw].add_lpm(ip, 32, 1 + w % 2)
        tables["S3"].add_lpm(ip, 32, 1 if sw == "S1" else 2)
        tables["S2" if sw == "S1" else "S1"].add_lpm(ip, 32, 3)
    if placement == "atp":
        tables["S1"].level_to_node(JOB, 1, next_node=3, next_fan_in=4)
        tables["S2"].level_to_node(JOB, 2, next_node=3, next_fan_in=4)
        tables["S3"].level_to_ps(JOB, 3)
    else:
        for name in ("S1", "S2", "S3"):
            tables[name].level_to_ps(JOB, NODE[name])
        # pinned paths to the assigned aggregation node
        tables["S1"].add_route(JOB, 4, node_id=2)
        tables["S1"].add_route(JOB, 3, node_id=3)
        tables["S2"].add_route(JOB, 4, node_id=1)
        tables["S2"].add_route(JOB, 3, node_id=3)
    return fab, tables


def _run(arch: str, placement: str, order: list[tuple[int, str]]) -> tuple[Fabric, dict, dict]:
    fab, _ = _build(arch, placement)
    k = lanes_of(arch)
    rng = np.random.default_rng(11)
    grads = {(w, f): rng.integers(-1000, 1000, k).astype(np.int32) for w in range(4) for f in FRAGS}
    ps_frames = []
    for w, f in order:
        if placement == "atp":
            node, fan_in = NODE[WORKER_SWITCH[w]], 2
        else:
            node, fan_in = {"A": 1, "B": 2, "C": 3}[f], 4
        h = InaHeader.for_worker(JOB, node, SUB, FRAGS[f], w, fan_in)
        frame = build_frame(h, grads[w, f], src_ip=f"10.0.0.{w + 1}", dst_ip=PS_IP)
        ps_frames += fab.send(f"W{w + 1}", frame).get("PS", [])
    # the PS completes aggregation: sum contributions per fragment, never counting a worker twice
    sums: dict[int, np.ndarray] = {}
    bitmaps: dict[int, int] = {}
    for data in ps_frames:
        pkt = parse_frame(data, k)
        frag = pkt.header.fragment_id
        assert bitmaps.get(frag, 0) & pkt.header.bitmap == 0
        bitmaps[frag] = bitmaps.get(frag, 0) | pkt.header.bitmap
        sums[frag] = sums.get(frag, np.zeros(k, np.int64)) + pkt.lanes
    expected = {i: sum(grads[w, f].astype(np.int64) for w in range(4)) for f, i in FRAGS.items()}
    return fab, {"ps_fragments": len(ps_frames), "bitmaps": bitmaps}, {"sums": sums, "expected": expected}


@pytest.mark.parametrize("arch", ["v1model", "tna"])
def test_atp_placement_with_asynchronous_arrivals_sends_7_to_ps(arch: str) -> None:
    # S1 sees A1 B1 C1 A2 B2 C2 and S2 sees A3 B3 C3 A4 B4 C4, interleaved as in Fig. 2(b)
    order = [(0, "A"), (2, "A"), (0, "B"), (2, "B"), (0, "C"), (2, "C"),
             (1, "A"), (3, "A"), (1, "B"), (3, "B"), (1, "C"), (3, "C")]
    fab, stats, res = _run(arch, "atp", order)
    assert stats["ps_fragments"] == 7
    assert all(b == 0b1111 for b in stats["bitmaps"].values()) and len(stats["bitmaps"]) == 3
    for i, total in res["expected"].items():
        assert np.array_equal(res["sums"][i], total)
    assert sum(fab.sent_by.values()) == 17                    # GOAT: communication overhead 17


@pytest.mark.parametrize("arch", ["v1model", "tna"])
def test_goat_schedule_sends_3_to_ps(arch: str) -> None:
    # S1 sees A1 A2 B1 B2 C1 C2 A3 A4 (Fig. 2(c))
    order = [(0, "A"), (1, "A"), (0, "B"), (1, "B"), (0, "C"), (1, "C"),
             (2, "A"), (3, "A"), (2, "B"), (3, "B"), (2, "C"), (3, "C")]
    fab, stats, res = _run(arch, "goat", order)
    assert stats["ps_fragments"] == 3
    assert all(b == 0b1111 for b in stats["bitmaps"].values())
    for i, total in res["expected"].items():
        assert np.array_equal(res["sums"][i], total)
    assert sum(fab.sent_by.values()) == 13                    # GOAT: 17 → 13 (-24 %)


@pytest.mark.parametrize("arch", ["v1model", "tna"])
def test_returning_result_releases_held_aggregators(arch: str) -> None:
    fab, tables = _build(arch, "atp")
    k = lanes_of(arch)
    one = np.ones(k, np.int32)
    for w in range(4):
        h = InaHeader.for_worker(JOB, NODE[WORKER_SWITCH[w]], SUB, 0, w, 2)
        fab.send(f"W{w + 1}", build_frame(h, one, src_ip=f"10.0.0.{w + 1}", dst_ip=PS_IP))
    # all three aggregators are held: a new fragment collides everywhere and reaches the PS
    h = InaHeader.for_worker(JOB, 1, SUB, 1, 0, 2)
    got = fab.send("W1", build_frame(h, one, src_ip="10.0.0.1", dst_ip=PS_IP))
    assert len(got["PS"]) == 1 and Flags.COLLISION in parse_frame(got["PS"][0], k).header.flags
    # the PS returns fragment 0's result to W1 through S3 and S1: both release
    res = InaHeader(JOB, 0, SUB, 0, 255, 4, 4, 0, 0b1111, Flags.RESULT)
    got = fab.send("PS", build_frame(res, 4 * one, src_ip=PS_IP, dst_ip="10.0.0.1"))
    assert len(got["W1"]) == 1
    h2 = InaHeader.for_worker(JOB, 1, SUB, 2, 0, 2)
    assert fab.send("W1", build_frame(h2, one, src_ip="10.0.0.1", dst_ip=PS_IP)) == {}   # S1 free again
