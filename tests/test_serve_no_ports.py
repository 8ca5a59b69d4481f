"""`python -m p4sim serve PROGRAM.p4 --grpc-addr ...` without -i: a control-plane-only switch
(as simple_switch_grpc runs without interfaces). No root or network namespaces needed."""
from __future__ import annotations

import subprocess

import pytest

import p4sim.p4runtime  # noqa: F401  (protobuf backend first)
from netns import REPO, ServeProcess, serve_command
from p4rt.client import Client, entity

from p4.v1 import p4runtime_pb2 as pb  # noqa: E402

L2_P4 = REPO / "tests" / "p4serve" / "l2.p4"
CPU_PORT = 255
MAC = bytes.fromhex("020000000002")


@pytest.fixture
def served():
    argv = serve_command(L2_P4, [], "--grpc-addr", "127.0.0.1:0", "--cpu-port", str(CPU_PORT),
                         "--device-id", "3")
    with ServeProcess(argv) as sv:
        line = sv.wait_ready()
        client = Client(f"127.0.0.1:{sv.grpc_port}", device_id=3)
        try:
            yield sv, line, client
        finally:
            client.close()


def test_control_plane_only_switch(served):
    sv, line, client = served
    assert " on ports none grpc 127.0.0.1:" in line and "device-id 3" in line
    assert client.arbitrate((0, 1)).status.code == 0
    p4i = client.p4info()

    # P4Runtime works: an entry is written and read back
    te = p4i.table_entry("L2Ingress.dmac", {"hdr.ethernet.dstAddr": ("exact", {"value": MAC})},
                         p4i.action("L2Ingress.to_cpu"))
    client.insert(entity(table_entry=te))
    (read,) = [e.table_entry for e in client.read(entity(table_entry=pb.TableEntry(
        table_id=p4i.table_id("L2Ingress.dmac"))))]
    assert read.action.action.action_id == p4i.action_id("L2Ingress.to_cpu")

    # PacketOut still runs the pipeline: to the CPU port it comes back as a PacketIn ...
    frame = MAC + bytes.fromhex("020000000001") + b"\x08\x00" + b"payload"
    client.packet_out(frame, egress_port=CPU_PORT, _pad=0)
    pin = client.next("packet")
    assert pin is not None and pin.packet.payload == frame
    # ... and one to a port that does not exist is dropped, the switch keeps serving
    client.packet_out(frame, egress_port=1, _pad=0)
    client.packet_out(frame, egress_port=CPU_PORT, _pad=0)
    assert client.next("packet").packet.payload == frame
    assert sv.proc.poll() is None
    assert sv.stop() == 0
    assert "Traceback" not in sv.output


def test_neither_ports_nor_grpc_is_refused():
    r = subprocess.run(serve_command(L2_P4, []), capture_output=True, text=True, timeout=60,
                       cwd=REPO)
    assert r.returncode == 2
    assert r.stderr.strip() == ("p4sim serve: error: no ports and no --grpc-addr: give -i "
                                "PORTNUM@IFACE, or --grpc-addr HOST:PORT for a "
                                "control-plane-only switch")
