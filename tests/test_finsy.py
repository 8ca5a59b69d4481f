"""End to end with an independent P4Runtime client: finsy drives `python -m p4sim serve`.

The switch runs as a subprocess on veths whose peers sit in host namespaces; the test talks
to it only through finsy (gRPC) and real frames on the host interfaces.

Process isolation: finsy bundles its own copies of the P4Runtime / google.rpc protobuf
modules, which cannot share a process with the ``p4runtime`` package's bindings that p4sim
uses (``duplicate file name`` in the protobuf descriptor pool). So this module imports neither
p4sim nor finsy at import time. When it is the only test module of the pytest session and no
conflicting module is loaded, the tests run here; otherwise each test re-runs itself in a
child pytest process (``P4SIM_FINSY_CHILD=1``) and reports that result.
"""
from __future__ import annotations

import asyncio
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from netns import REPO, ServeProcess, VethTopology, serve_command, veth_topology  # noqa: F401

L2_P4 = REPO / "tests" / "p4serve" / "l2.p4"
CPU_PORT = 255
DEVICE_ID = 1
TAG_ETHERTYPE = 0x88B5
H1, H2, H3 = "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"
CPU_MAC = "02:00:00:00:00:fe"
BCAST = "ff:ff:ff:ff:ff:ff"
UNKNOWN = "02:00:00:00:00:99"

_CONFLICTING = ("p4.v1.p4runtime_pb2", "p4.config.v1.p4info_pb2", "google.rpc.status_pb2",
                "p4sim.p4runtime")


# ------------------------------------------------------------------------------ isolation

def _must_delegate(request: pytest.FixtureRequest) -> bool:
    if os.environ.get("P4SIM_FINSY_CHILD") == "1":
        return False
    if any(m in sys.modules for m in _CONFLICTING):
        return True
    this = Path(__file__).resolve()
    return any(Path(str(item.fspath)).resolve() != this for item in request.session.items)


def _delegate(request: pytest.FixtureRequest) -> None:
    """Run this very test in a child pytest that loads nothing but this module."""
    node = f"{Path(__file__).resolve()}::{request.node.name}"
    env = dict(os.environ, P4SIM_FINSY_CHILD="1")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "--noconftest",
                        "-p", "no:cacheprovider", "-rs", node],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=280)
    out = r.stdout + r.stderr
    if r.returncode == 0 and " passed" in out:
        return
    if r.returncode == 0 and "skipped" in out:
        reason = [ln for ln in out.splitlines() if "SKIPPED" in ln]
        pytest.skip(f"child pytest skipped: {reason[-1] if reason else out[-300:]}")
    pytest.fail(f"child pytest failed (rc={r.returncode}):\n{out[-6000:]}")


# ------------------------------------------------------------------------------ fixtures

class Served:
    def __init__(self, topo: VethTopology, sv: ServeProcess) -> None:
        self.topo = topo
        self.sv = sv
        self.addr = f"127.0.0.1:{sv.grpc_port}"
        self.sock = {name: topo.socket(name) for name in ("h1", "h2", "h3")}


@pytest.fixture
def served(request: pytest.FixtureRequest, veth_topology):  # type: ignore[no-untyped-def]
    if _must_delegate(request):
        _delegate(request)  # fails or skips this test unless the child passed
        yield None  # the test body sees None: it already passed in the child
        return
    try:
        import finsy  # noqa: F401
    except ImportError as e:
        pytest.skip(f"finsy not installed: {e}")
    topo = veth_topology()
    for name, mac in (("h1", H1), ("h2", H2), ("h3", H3)):
        topo.add_host(name, mac=mac)
    topo.wait_up()
    ports = [(i + 1, topo.hosts[n].switch_if) for i, n in enumerate(("h1", "h2", "h3"))]
    argv = serve_command(L2_P4, ports, "--grpc-addr", "127.0.0.1:0", "--device-id",
                         str(DEVICE_ID), "--cpu-port", str(CPU_PORT), "--log-level", "info")
    sv = ServeProcess(argv)
    try:
        sv.wait_ready(90)
        yield Served(topo, sv)
        rc = sv.stop()
        assert rc == 0, sv.output
        assert "Traceback" not in sv.output, sv.output
    finally:
        sv.stop()


# ------------------------------------------------------------------------------ frames

def mac(s: str) -> bytes:
    return bytes.fromhex(s.replace(":", ""))


def tagged(dst: str, src: str, seq: int) -> bytes:
    tag = struct.pack("!IHH", 0, 0, 0)
    body = tag + b"p4simtst" + struct.pack("!I", seq)
    return mac(dst) + mac(src) + struct.pack("!H", TAG_ETHERTYPE) + body + bytes(40)


def parse_tag(frame: bytes) -> tuple[int, int, int, int] | None:
    """(reg_value, ingress_port, egress_port, seq) of one of our frames, else None."""
    if len(frame) < 34 or frame[12:14] != struct.pack("!H", TAG_ETHERTYPE) \
            or frame[22:30] != b"p4simtst":
        return None
    reg, inp, outp = struct.unpack("!IHH", frame[14:22])
    return reg, inp, outp, struct.unpack("!I", frame[30:34])[0]


def ours(frame: bytes) -> bool:
    return parse_tag(frame) is not None


async def recv(served: Served, host: str, count: int, timeout: float) -> list[bytes]:
    sock = served.sock[host]
    return await asyncio.to_thread(sock.recv_all, timeout, match=ours, count=count)


async def send(served: Served, host: str, frame: bytes) -> None:
    await asyncio.to_thread(served.sock[host].send, frame)


async def until(cond: Callable[[], object], timeout: float, what: str) -> None:
    """Return as soon as ``cond()`` holds; fail after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            pytest.fail(f"{what}: not after {timeout} s")
        await asyncio.sleep(0.001)


# ------------------------------------------------------------------------------ tests

def test_finsy_entries_multicast_register_packet_io_and_arbitration(served: Served | None
                                                                    ) -> None:
    if served is None:
        return
    asyncio.run(asyncio.wait_for(_scenario_main(served), 120))


async def _scenario_main(served: Served) -> None:
    import finsy as fy

    addr = served.addr
    opts = fy.SwitchOptions(device_id=DEVICE_ID, initial_election_id=10)
    dmac = "L2Ingress.dmac"
    key = "hdr.ethernet.dstAddr"
    async with fy.Switch("p4sim", addr, opts) as sw:
        assert sw.is_primary
        assert sw.p4info.exists, "P4Info fetched from the device"
        await sw.insert([
            fy.P4TableEntry(dmac, match=fy.P4TableMatch({key: H2}),
                            action=fy.P4TableAction("L2Ingress.forward", port=2)),
            fy.P4TableEntry(dmac, match=fy.P4TableMatch({key: H3}),
                            action=fy.P4TableAction("L2Ingress.forward", port=3)),
            fy.P4TableEntry(dmac, match=fy.P4TableMatch({key: BCAST}),
                            action=fy.P4TableAction("L2Ingress.flood", group=1)),
            fy.P4TableEntry(dmac, match=fy.P4TableMatch({key: CPU_MAC}),
                            action=fy.P4TableAction("L2Ingress.to_cpu")),
            fy.P4MulticastGroupEntry(1, replicas=[2, 3]),
        ])
        await sw.modify([fy.P4RegisterEntry("L2Ingress.tag_reg", index=0, data=0xABCD)])

        # read back what we wrote
        entries = [e async for e in sw.read(fy.P4TableEntry(dmac))]
        assert len(entries) == 4
        groups = [g async for g in sw.read(fy.P4MulticastGroupEntry(1))]
        assert len(groups) == 1 and sorted(groups[0].replicas) == [2, 3]  # type: ignore
        regs = [r async for r in sw.read(fy.P4RegisterEntry("L2Ingress.tag_reg", index=0))]
        assert len(regs) == 1 and regs[0].data == 0xABCD

        # unicast h1 -> h2 only; the tag shows the register value and both ports
        await send(served, "h1", tagged(H2, H1, 1))
        got = await recv(served, "h2", 1, 5.0)
        assert [parse_tag(f) for f in got] == [(0xABCD, 1, 2, 1)], served.sv.output
        assert await recv(served, "h3", 1, 0.3) == []

        # broadcast -> multicast group 1 -> one copy on each of ports 2 and 3
        await send(served, "h1", tagged(BCAST, H1, 2))
        c2, c3 = await asyncio.gather(recv(served, "h2", 1, 5.0), recv(served, "h3", 1, 5.0))
        assert [parse_tag(f) for f in c2] == [(0xABCD, 1, 2, 2)]
        assert [parse_tag(f) for f in c3] == [(0xABCD, 1, 3, 2)]
        assert await recv(served, "h1", 1, 0.3) == [], "group 1 does not include port 1"

        # unknown destination: the default action drops it
        await send(served, "h1", tagged(UNKNOWN, H1, 3))
        assert await recv(served, "h2", 1, 0.3) == [] and await recv(served, "h3", 1, 0.1) == []

        # a new register value is visible in the next packet
        await sw.modify([fy.P4RegisterEntry("L2Ingress.tag_reg", index=0, data=0x1234)])
        await send(served, "h3", tagged(H2, H3, 4))
        got = await recv(served, "h2", 1, 5.0)
        assert [parse_tag(f) for f in got] == [(0x1234, 3, 2, 4)]

        # PacketIn: frames to CPU_MAC reach the controller with their ingress port
        async def first_packet_in() -> Any:
            async for pkt in sw.read_packets():
                return pkt

        waiter = asyncio.create_task(first_packet_in())
        # finsy drops a PacketIn that arrives before a reader's queue is registered on the
        # Switch (Switch._packet_queues): send only once it is
        await until(lambda: sw._packet_queues or waiter.done(), 5.0, "read_packets registers its queue")
        assert not waiter.done(), f"read_packets ended before any PacketIn: {waiter.exception()!r}"
        await send(served, "h2", tagged(CPU_MAC, H2, 5))
        pin = await asyncio.wait_for(waiter, 5.0)
        assert pin["ingress_port"] == 2
        assert pin.payload[:12] == mac(CPU_MAC) + mac(H2)
        assert parse_tag(pin.payload) == (0x1234, 2, 0, 5)

        # PacketOut: the packet_out header picks the egress port
        md = {m.name: 0 for m in sw.p4info.controller_packet_metadata["packet_out"].metadata}
        md["egress_port"] = 3
        await sw.write([fy.P4PacketOut(tagged(H1, H2, 6), **md)])
        got = await recv(served, "h3", 1, 5.0)
        assert [parse_tag(f) for f in got] == [(0x1234, CPU_PORT, 3, 6)]

        # arbitration: a client with a lower election id is a backup and may not write
        async with fy.Switch("backup", addr, opts(initial_election_id=5)) as backup:
            assert not backup.is_primary
            assert sw.is_primary
            with pytest.raises(fy.P4ClientError) as err:
                await backup.insert([fy.P4TableEntry(
                    dmac, match=fy.P4TableMatch({key: UNKNOWN}),
                    action=fy.P4TableAction("L2Ingress.forward", port=1))])
            assert err.value.code == fy.GRPCStatusCode.PERMISSION_DENIED
            # a backup may still read
            assert len([e async for e in backup.read(fy.P4TableEntry(dmac))]) == 4
        # the refused entry is not there, the primary still writes
        await sw.delete([fy.P4TableEntry(dmac, match=fy.P4TableMatch({key: H3}))])
        assert len([e async for e in sw.read(fy.P4TableEntry(dmac))]) == 3
        await send(served, "h1", tagged(H3, H1, 7))
        assert await recv(served, "h3", 1, 0.3) == []


def test_finsy_pipeline_reload(served: Served | None, tmp_path: Path) -> None:
    if served is None:
        return
    asyncio.run(asyncio.wait_for(_scenario_reload(served, tmp_path), 120))


async def _scenario_reload(served: Served, tmp_path: Path) -> None:
    """SetForwardingPipelineConfig recompiles the P4 source (our device config) and the
    dataplane switches to the new program: its tables start empty."""
    import finsy as fy
    from google.protobuf import text_format

    addr = served.addr
    dmac, key = "L2Ingress.dmac", "hdr.ethernet.dstAddr"
    entry = fy.P4TableEntry(dmac, match=fy.P4TableMatch({key: H2}),
                            action=fy.P4TableAction("L2Ingress.forward", port=2))
    opts = fy.SwitchOptions(device_id=DEVICE_ID, initial_election_id=10)
    async with fy.Switch("p4sim", addr, opts) as sw:
        await sw.insert([entry])
        await send(served, "h1", tagged(H2, H1, 1))
        assert len(await recv(served, "h2", 1, 5.0)) == 1
        p4info_path = tmp_path / "l2.p4info.txtpb"
        p4info_path.write_text(text_format.MessageToString(sw.p4info.p4info))

    # a new primary pushes p4info + source (p4force: even though the cookie may match)
    opts2 = opts(initial_election_id=20, p4info=p4info_path, p4blob=L2_P4.read_bytes(),
                 p4force=True)
    async with fy.Switch("p4sim", addr, opts2) as sw:
        assert sw.is_primary
        assert [e async for e in sw.read(fy.P4TableEntry(dmac))] == [], "new pipeline"
        await send(served, "h1", tagged(H2, H1, 2))
        assert await recv(served, "h2", 1, 0.5) == [], "the new program drops by default"
        await sw.insert([entry])
        await send(served, "h1", tagged(H2, H1, 3))
        got = await recv(served, "h2", 1, 5.0)
        assert [parse_tag(f)[3] for f in got] == [3]  # type: ignore[index]
    assert "pipeline reloaded" in served.sv.output
