"""`python -m p4sim serve-many`: two switches in one process, each with its own ports,
P4Runtime server, device id and tables (veths in namespaces; root)."""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

import p4sim.p4runtime  # noqa: F401  (protobuf backend first)
from netns import REPO, ServeProcess, veth_topology  # noqa: F401 (fixture)
from p4rt.client import Client, RpcFailure, entity

from p4.v1 import p4runtime_pb2 as pb  # noqa: E402

L2_P4 = REPO / "tests" / "p4serve" / "l2.p4"
ETHERTYPE = 0x88B6  # local experimental, not l2.p4's tag type: frames pass unchanged
MACS = {k: f"02:00:00:00:00:0{k}" for k in range(1, 5)}


def frame(dst: int, src: int, seq: int) -> bytes:
    mac = lambda k: bytes.fromhex(MACS[k].replace(":", ""))  # noqa: E731
    return mac(dst) + mac(src) + struct.pack("!H", ETHERTYPE) + b"srvmany" + struct.pack(
        "!I", seq) + bytes(35)


def seq_of(data: bytes) -> int | None:
    if len(data) < 25 or data[12:21] != struct.pack("!H", ETHERTYPE) + b"srvmany":
        return None
    return struct.unpack("!I", data[21:25])[0]


def serve_many(*argv: str) -> list[str]:
    return [sys.executable, "-m", "p4sim", "serve-many", *argv]


def install_forward(client: Client, mac: str, port: int) -> None:
    p4i = client.p4info()
    te = p4i.table_entry("L2Ingress.dmac",
                         {"hdr.ethernet.dstAddr": ("exact",
                                                   {"value": bytes.fromhex(mac.replace(":", ""))})},
                         p4i.action("L2Ingress.forward", port=port))
    client.insert(entity(table_entry=te))


def dmac_entries(client: Client) -> int:
    p4i = client.p4info()
    return len(client.read(entity(table_entry=pb.TableEntry(
        table_id=p4i.table_id("L2Ingress.dmac")))))


def test_two_switches_one_process(veth_topology, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    topo = veth_topology()
    hosts = [topo.add_host(f"h{k}", mac=MACS[k]) for k in range(1, 5)]
    topo.wait_up()
    h1, h2, h3, h4 = hosts
    config = tmp_path / "switches.json"
    config.write_text(json.dumps({"log_level": "info", "switches": [
        [str(L2_P4), "--device-id", "1", "--grpc-addr", "127.0.0.1:0", "--cpu-port", "255",
         "-i", f"1@{h1.switch_if}", "-i", f"2@{h2.switch_if}"],
        # the second one as a shell-quoted string, with its own pcap directory
        f"{L2_P4} --device-id 2 --grpc-addr 127.0.0.1:0 --cpu-port 255 "
        f"-i 1@{h3.switch_if} -i 2@{h4.switch_if} --pcap-dir {tmp_path / 'pcap'}",
    ]}))
    with ServeProcess(serve_many(str(config))) as sv:
        sv.wait_ready()
        # one ready line per switch (serve's format), then the line for all
        deadline = time.monotonic() + 30
        while not any("p4sim: serve-many: 2 switches serving" in l for l in sv.lines):
            assert time.monotonic() < deadline and sv.proc.poll() is None, sv.output
            time.sleep(0.05)
        ready = [l for l in sv.lines if l.startswith("p4sim: serving")]
        assert len(ready) == 2, sv.output
        assert "device-id 1" in ready[0] and f"1@{h1.switch_if}" in ready[0]
        assert "device-id 2" in ready[1] and f"2@{h4.switch_if}" in ready[1]
        pids = {re.search(r"pid (\d+)", l).group(1) for l in ready}  # type: ignore[union-attr]
        assert pids == {str(sv.proc.pid)}, "both switches in the serve-many process"
        ports = [int(re.search(r"grpc 127\.0\.0\.1:(\d+)", l).group(1)) for l in ready]  # type: ignore[union-attr]
        assert ports[0] != ports[1]

        c1 = Client(f"127.0.0.1:{ports[0]}", device_id=1)
        c2 = Client(f"127.0.0.1:{ports[1]}", device_id=2)
        try:
            assert c1.arbitrate((0, 1)).status.code == 0
            assert c2.arbitrate((0, 1)).status.code == 0
            # each server is its own device: the other's device id is refused
            wrong = Client(f"127.0.0.1:{ports[0]}", device_id=2)
            try:
                with pytest.raises(RpcFailure):
                    dmac_entries(wrong)
            finally:
                wrong.close()

            install_forward(c1, MACS[2], 2)
            assert dmac_entries(c1) == 1 and dmac_entries(c2) == 0
            s1, s2, s3, s4 = (topo.socket(h) for h in hosts)
            for i in range(10):
                s1.send(frame(2, 1, i))
                s3.send(frame(4, 3, 100 + i))
            got = s2.recv_all(5.0, match=lambda d: seq_of(d) is not None, count=10)
            assert [seq_of(f) for f in got] == list(range(10)), sv.output
            assert got[0] == frame(2, 1, 0)
            # switch 2 has no entry yet: its default action drops
            assert s4.recv_all(0.5, match=lambda d: seq_of(d) is not None) == []

            install_forward(c2, MACS[4], 2)
            assert dmac_entries(c1) == 1 and dmac_entries(c2) == 1
            for i in range(10):
                s3.send(frame(4, 3, 200 + i))
            got4 = s4.recv_all(5.0, match=lambda d: seq_of(d) is not None, count=10)
            assert [seq_of(f) for f in got4] == list(range(200, 210)), sv.output
            # nothing crossed between the switches
            assert s2.recv_all(0.3, match=lambda d: (seq_of(d) or 0) >= 100) == []

            # PacketOut/PacketIn go to the right switch too
            c2.packet_out(frame(3, 4, 7), egress_port=1, _pad=0)
            assert [seq_of(f) for f in s3.recv_all(3.0, match=lambda d: seq_of(d) == 7,
                                                   count=1)] == [7]
        finally:
            c1.close()
            c2.close()
        assert sv.stop() == 0, sv.output
    assert "Traceback" not in sv.output
    pcaps = sorted(p.name for p in (tmp_path / "pcap").iterdir())
    assert pcaps == sorted([f"{h3.switch_if}.pcap", f"{h4.switch_if}.pcap"])


@pytest.mark.parametrize("args, message", [
    ([], "no switches"),
    (["--switch", "tests/p4serve/fwd.p4 -i 1@lo", "--switch", "tests/p4serve/fwd.p4 -i 1@lo"],
     "switch 1: interface 'lo' belongs to switch 0 too"),
    (["--switch", "tests/p4serve/fwd.p4 --bogus"], "switch 0: unrecognized arguments"),
    (["/nonexistent/sw.json"], "cannot read"),
])
def test_serve_many_bad_arguments(args: list[str], message: str) -> None:
    r = subprocess.run(serve_many(*args), capture_output=True, text=True, timeout=60, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("switch_args, message", [
    # no such interface: the --bfrt-json check must refuse the switch before its ports are opened
    (["--bfrt-json", "bf-rt.json", "-i", "1@no-such-if0"],
     "--bfrt-json is the schema BfRuntime serves: add --bfrt-addr"),
    (["--bfrt-addr", "127.0.0.1:0"], "--bfrt-addr serves TNA programs: add --arch tna"),
    (["--grpc-addr", "nowhere"], "bad --grpc-addr 'nowhere': expected HOST:PORT"),
    (["-i", "lo"], "bad -i 'lo': expected PORTNUM@IFACE, e.g. 1@veth1"),
])
def test_serve_many_checks_a_switchs_arguments_as_serve_does(switch_args: list[str],
                                                             message: str) -> None:
    """One checker for both commands: a switch of serve-many is refused with serve's message."""
    program = "tests/p4serve/fwd.p4"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    serve = subprocess.run([sys.executable, "-m", "p4sim", "serve", program, *switch_args],
                           capture_output=True, text=True, timeout=60, cwd=REPO, env=env)
    many = subprocess.run(serve_many("--switch", " ".join([program, *switch_args])),
                          capture_output=True, text=True, timeout=60, cwd=REPO, env=env)
    assert serve.returncode == many.returncode == 2, (serve.stderr, many.stderr)
    assert serve.stderr.strip() == f"p4sim serve: error: {message}"
    assert many.stderr.strip() == f"p4sim serve-many: error: switch 0: {message}"
