"""Batched port I/O (recvmmsg/sendmmsg) on real veths: same frames, order, VLAN tags and
counters as one call per frame; the per-frame fallback (P4SIM_BATCH_IO=0) is what the other
port tests exercise when run with that variable."""
from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest

from netns import veth_topology  # noqa: F401 (fixture)
from p4sim import ports as ports_mod
from p4sim.pcap import read_pcap
from p4sim.ports import Port

ETHERTYPE = 0x88B6


def frame(seq: int, size: int = 60) -> bytes:
    body = b"batchio" + struct.pack("!I", seq)
    return (bytes.fromhex("02aabbccddee020000000001") + struct.pack("!H", ETHERTYPE) + body
            + bytes(max(0, size - 14 - len(body))))


def seq_of(data: bytes) -> int | None:
    off = 16 if data[12:14] == b"\x81\x00" else 12
    if data[off:off + 2] != struct.pack("!H", ETHERTYPE) or data[off + 2:off + 9] != b"batchio":
        return None
    return struct.unpack("!I", data[off + 9:off + 13])[0]


def test_recv_and_send_batches_on_a_veth(veth_topology, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if ports_mod._MMSG is None:
        pytest.skip("recvmmsg/sendmmsg not available here (or P4SIM_BATCH_IO=0)")
    topo = veth_topology()
    h1 = topo.add_host("h1")
    topo.wait_up()
    s1 = topo.socket(h1)
    port = Port(1, h1.switch_if, pcap_path=str(tmp_path / "p.pcap"))
    port.open()
    try:
        assert port._bio is not None
        # 150 frames from the host (more than two batches), every 10th VLAN-tagged, sizes vary
        sent = []
        for i in range(150):
            f = frame(i, 60 + (i * 37) % 1400)
            if i % 10 == 0:
                f = f[:12] + b"\x81\x00\x20\x07" + f[12:]
            sent.append(f)
            s1.send(f)
        got: list[bytes] = []
        deadline = time.monotonic() + 60     # generous: a slow or busy machine is not a failure
        while len(got) < 150 and time.monotonic() < deadline:
            batch = port.recv_batch()
            assert len(batch) <= 64
            got += [f for f in batch if seq_of(f) is not None]
            if not batch:
                time.sleep(0.01)
        assert got == sent                      # order, bytes and VLAN tags restored
        # no frame of ours twice (other traffic of the host's, e.g. IPv6 solicitations, may be queued)
        assert [f for f in port.recv_batch() if seq_of(f) is not None] == []
        # 150 frames out in one call: split in batches, all on the wire in order
        out = [frame(1000 + i, 60 + (i * 53) % 1400) for i in range(150)]
        assert port.send_batch(out) == 150
        back = s1.recv_all(5.0, match=lambda d: (seq_of(d) or 0) >= 1000, count=150)
        assert back == out
        c = port.counters
        assert c.tx_packets == 150 and c.tx_bytes == sum(map(len, out)) and c.tx_errors == 0
        assert c.rx_packets >= 150
        # a frame the kernel refuses (shorter than an Ethernet header) is counted, the rest go
        assert port.send_batch([out[0], b"\x01\x02", out[1]]) == 2
        assert c.tx_errors == 1 and c.tx_packets == 152
        assert s1.recv_all(3.0, match=lambda d: (seq_of(d) or 0) >= 1000, count=2) == out[:2]
    finally:
        port.close()
    on_wire = [f for _, f in read_pcap(str(tmp_path / "p.pcap")) if seq_of(f) is not None]
    assert on_wire == sent + out + out[:2]
