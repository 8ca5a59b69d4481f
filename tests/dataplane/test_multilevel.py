"""Two-level aggregation across two in-process switches: ToR partials, then a result multicast."""
from __future__ import annotations

import numpy as np
import pytest

from controller.ina_tables import InaTables
from hostlib.protocol import Flags, InaHeader, build_frame, parse_frame
from p4sim import Switch
from p4sim.fabric import Fabric

from .ina_harness import lanes_of, program

PS_IP = "10.0.9.1"


@pytest.mark.parametrize("arch", ["v1model", "tna"])
def test_two_level_aggregation_then_multicast_to_all_workers(arch: str) -> None:
    k = lanes_of(arch)
    fab = Fabric()
    t = {}
    for name, node in (("S1", 1), ("S2", 2)):
        sw = Switch(program(arch))
        fab.add_switch(name, sw)
        t[name] = InaTables(sw)
        t[name].add_node(node, pool_base=0, pool_size=32)
        t[name].add_job(1)
    fab.link("S1", 9, "S2", 9)
    fab.attach("PS", "S2", 10)
    for w in range(4):
        fab.attach(f"W{w}", "S1" if w < 2 else "S2", 1 + w)
    ip = [f"10.0.0.{w + 1}" for w in range(4)]
    # routes: S1 reaches W0/W1 directly, everything else via S2; S2 the reverse
    for w in range(4):
        t["S1"].add_lpm(ip[w], 32, 1 + w if w < 2 else 9)
        t["S2"].add_lpm(ip[w], 32, 1 + w if w >= 2 else 9)
    t["S1"].add_lpm(PS_IP, 32, 9)
    t["S2"].add_lpm(PS_IP, 32, 10)
    t["S1"].level_to_node(1, 1, next_node=2, next_fan_in=4)        # level 1: W0+W1 at S1
    t["S2"].add_result_group(5, [(3, ip[2], 0), (4, ip[3], 0), (9, ip[0], 0), (9, ip[1], 0)])
    t["S2"].level_to_multicast(1, 2, group=5)                        # level 2: everything at S2

    rng = np.random.default_rng(5)
    grads = [rng.integers(-5000, 5000, k).astype(np.int32) for _ in range(4)]
    got: dict[str, list[bytes]] = {}
    for w in (0, 2, 1, 3):
        node, fan_in = (1, 2) if w < 2 else (2, 4)
        h = InaHeader.for_worker(1, node, 0, 42, w, fan_in)
        for host, frames in fab.send(f"W{w}", build_frame(h, grads[w], src_ip=ip[w], dst_ip=PS_IP)).items():
            got.setdefault(host, []).extend(frames)
    assert "PS" not in got
    expected = sum(g.astype(np.int64) for g in grads)
    assert sorted(got) == ["W0", "W1", "W2", "W3"]
    for w in range(4):
        (frame,) = got[f"W{w}"]
        pkt = parse_frame(frame, k)
        assert pkt.dst_ip == ip[w] and Flags.RESULT in pkt.header.flags
        assert pkt.header.bitmap == 0b1111 and pkt.header.count == 4
        assert np.array_equal(pkt.lanes.astype(np.int64), expected)
    assert fab.sent_by == {"S1": 3, "S2": 4}      # S1: one partial up + two results down; S2: 4 replicas
