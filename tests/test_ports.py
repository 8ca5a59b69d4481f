"""Ports, impairments, pcap capture and `python -m p4sim serve` on real veth interfaces."""
from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from netns import REPO, ServeProcess, serve_command, veth_topology  # noqa: F401 (fixture)
from p4sim.pcap import PcapWriter, read_pcap
from p4sim.dataplane import DataplaneLoop
from p4sim.links import Impairer, Impairment, Serializer
from p4sim.ports import Port, PortError

FWD_P4 = REPO / "tests" / "p4serve" / "fwd.p4"
TEST_ETHERTYPE = 0x88B5  # IEEE local experimental: nothing else on the wire uses it


def frame(dst: str, src: str, seq: int, payload: bytes = b"", tag: bytes = b"p4simtst") -> bytes:
    body = tag + struct.pack("!I", seq) + payload
    body += bytes(max(0, 46 - len(body)))
    return (bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", ""))
            + struct.pack("!H", TEST_ETHERTYPE) + body)


def seq_of(data: bytes) -> int | None:
    if len(data) < 26 or data[12:14] != struct.pack("!H", TEST_ETHERTYPE) \
            or data[14:22] != b"p4simtst":
        return None
    return struct.unpack("!I", data[22:26])[0]


def is_test_frame(data: bytes) -> bool:
    return seq_of(data) is not None


# ------------------------------------------------------------------------------ impairments

def test_impairment_validation() -> None:
    with pytest.raises(ValueError):
        Impairment(drop_rate=1.5)
    with pytest.raises(ValueError):
        Impairment(delay_ms=-1)
    assert not Impairment().active
    assert Impairment(jitter_ms=1).active
    # an inactive impairment is not attached to the port at all (fast path)
    assert Port(1, "lo", impairment=Impairment()).impairer is None


def test_impairment_seeded_drop_ratio() -> None:
    imp = Impairment(drop_rate=0.25, seed=42)
    r1, r2, r3 = Impairer(imp, 1), Impairer(imp, 1), Impairer(imp, 2)
    d1 = [r1.decide(0.0) is None for _ in range(20000)]
    d2 = [r2.decide(0.0) is None for _ in range(20000)]
    d3 = [r3.decide(0.0) is None for _ in range(20000)]
    assert d1 == d2, "same seed and port must give the same drops"
    assert d1 != d3, "different ports must draw independently"
    for d in (d1, d3):
        assert abs(sum(d) / len(d) - 0.25) < 0.015
    assert all(Impairer(Impairment(drop_rate=1.0), 1).decide(0.0) is None for _ in range(100))


def test_impairment_delay_and_jitter_bounds() -> None:
    fixed = Impairer(Impairment(delay_ms=30), 1)
    assert fixed.decide(100.0) == pytest.approx(100.030)
    jit = Impairer(Impairment(delay_ms=10, jitter_ms=4, seed=3), 1)
    delays = [(jit.decide(0.0) or 0.0) * 1000 for _ in range(5000)]
    assert min(delays) >= 6.0 and max(delays) <= 14.0
    assert max(delays) - min(delays) > 7.0  # really spread over the interval
    clamp = Impairer(Impairment(delay_ms=1, jitter_ms=5, seed=3), 1)
    assert all((clamp.decide(5.0) or 0.0) >= 5.0 for _ in range(1000))


# ------------------------------------------------------------------------------ pcap

def test_pcap_writer_readable_by_scapy(tmp_path: Path) -> None:
    from scapy.all import Ether, rdpcap  # test-time only

    path = tmp_path / "p.pcap"
    frames = [frame("02:00:00:00:00:02", "02:00:00:00:00:01", i, bytes([i]) * i)
              for i in range(5)]
    frames.append(bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:09") / (b"x" * 60)))
    t0 = 1_700_000_000.25
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(f, ts=t0 + i * 0.001)
        assert w.count == len(frames)
    pkts = rdpcap(str(path))
    assert [bytes(p) for p in pkts] == frames
    assert float(pkts[0].time) == pytest.approx(t0, abs=1e-6)
    assert float(pkts[3].time) == pytest.approx(t0 + 0.003, abs=1e-6)
    assert pkts[5][Ether].src == "02:00:00:00:00:09"
    assert [f for _, f in read_pcap(str(path))] == frames
    # writes after close are ignored, not an error (late frames during shutdown)
    w.write(b"late")
    assert len(rdpcap(str(path))) == len(frames)


def test_pcap_snaplen(tmp_path: Path) -> None:
    path = tmp_path / "s.pcap"
    with PcapWriter(str(path), snaplen=20) as w:
        w.write(bytes(range(60)), ts=1.999_999_9)  # usec rounding carries into the second
    (ts, data), = read_pcap(str(path))
    assert data == bytes(range(20)) and ts == pytest.approx(2.0)


# ------------------------------------------------------------------------------ dataplane loop
# Fake ports on AF_UNIX datagram socketpairs exercise the loop without root or interfaces.

class FakePort(Port):
    def __init__(self, number: int, **kw: object) -> None:
        super().__init__(number, f"fake{number}", **kw)  # type: ignore[arg-type]
        self.sent: list[tuple[float, bytes]] = []
        self.peer: socket.socket | None = None

    def open(self) -> None:
        if self.sock is None:
            self.sock, self.peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.sock.setblocking(False)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            self.peer.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)

    def close(self) -> None:
        super().close()
        if self.peer is not None:
            self.peer.close()
            self.peer = None

    def recv(self) -> bytes | None:
        assert self.sock is not None
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return None
        self.counters.rx_packets += 1
        return data

    def send(self, frame: bytes) -> bool:
        self.sent.append((time.monotonic(), frame))
        self.counters.tx_packets += 1
        return True

    def inject(self, data: bytes) -> None:
        """A frame arriving from the wire."""
        assert self.peer is not None
        self.peer.send(data)


class FakeSwitch:
    """1 <-> 2; frames starting with b'CPU' go to the CPU port (99); from the CPU port the
    first byte is the output port."""

    def __init__(self, tag: bytes = b"") -> None:
        self.lock = threading.RLock()
        self.tag = tag
        self.seen: list[int] = []

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        assert self.lock._is_owned()  # type: ignore[attr-defined]
        self.seen.append(port)
        if data == b"boom":
            raise RuntimeError("bad packet")
        if port == 99:
            return [(data[0], data[1:])]
        if data.startswith(b"CPU"):
            return [(99, data)]
        return [(3 - port, data + self.tag)]


def wait_for(cond, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.005)


def test_loop_forwarding_cpu_and_reload() -> None:
    p1, p2 = FakePort(1), FakePort(2)
    to_cpu: list[bytes] = []
    loop = DataplaneLoop(FakeSwitch(), [p1, p2], cpu_port=99, cpu_handler=to_cpu.append)
    with loop:
        for i in range(50):
            p1.inject(b"a%03d" % i)
        p2.inject(b"back")
        p1.inject(b"CPU hello")
        p1.inject(b"boom")  # a failing packet must not kill the loop
        wait_for(lambda: len(p2.sent) == 50 and len(p1.sent) == 1 and to_cpu)
        assert [f for _, f in p2.sent] == [b"a%03d" % i for i in range(50)]
        assert p1.sent[0][1] == b"back" and to_cpu == [b"CPU hello"]
        loop.inject_cpu(bytes([2]) + b"packet-out")  # synchronous: sent on return
        assert p2.sent[-1][1] == b"packet-out"
        loop.set_switch(FakeSwitch(tag=b"+v2"))
        p1.inject(b"new")
        wait_for(lambda: len(p2.sent) == 52)
        assert p2.sent[-1][1] == b"new+v2"
        wait_for(lambda: loop.counters.process_errors == 1)
        assert loop.running
    assert not loop.running and p1.sock is None
    assert loop.counters.to_cpu == 1 and loop.counters.from_cpu == 1
    assert "1@fake1" in loop.stats_line()


def test_loop_rejects_bad_port_sets() -> None:
    with pytest.raises(ValueError):
        DataplaneLoop(FakeSwitch(), [FakePort(1), FakePort(1)])
    with pytest.raises(ValueError):
        DataplaneLoop(FakeSwitch(), [FakePort(1)], cpu_port=1)
    loop = DataplaneLoop(FakeSwitch(), [FakePort(1)])
    with pytest.raises(RuntimeError):
        loop.inject_cpu(b"x")
    loop.stop()


def test_loop_delay_keeps_fifo_order() -> None:
    p1 = FakePort(1)
    p2 = FakePort(2, impairment=Impairment(delay_ms=40))
    with DataplaneLoop(FakeSwitch(), [p1, p2]):
        t0 = time.monotonic()
        for i in range(100):
            p1.inject(b"%04d" % i)
        wait_for(lambda: len(p2.sent) == 100)
    assert [f for _, f in p2.sent] == [b"%04d" % i for i in range(100)]
    assert p2.sent[0][0] - t0 >= 0.039
    assert p2.counters.dropped == 0


def test_serializer_is_store_and_forward() -> None:
    link = Serializer(8e6)                        # 1000 bytes take 1 ms
    assert link.arrival(1.0, 1000) == pytest.approx(1.001)
    assert link.arrival(1.0, 500) == pytest.approx(1.0015)      # behind the first frame
    assert link.arrival(2.0, 1000) == pytest.approx(2.001)      # an idle link again
    with pytest.raises(ValueError):
        Serializer(0)


def test_loop_serializes_both_links_of_a_frame() -> None:
    # in over a link from a host (rx), out over a link to the next hop (tx), both 8 Mb/s: the
    # k-th of a burst of 1000-byte frames is all in after k+1 ms, and out 1 ms after that at best
    p1 = FakePort(1, rx_mbps=8)
    p2 = FakePort(2, tx_mbps=8)
    n = 30
    with DataplaneLoop(FakeSwitch(), [p1, p2]):
        t0 = time.monotonic()
        for i in range(n):
            p1.inject(b"%04d" % i + bytes(996))
        wait_for(lambda: len(p2.sent) == n)
    assert [f[:4] for _, f in p2.sent] == [b"%04d" % i for i in range(n)]
    for k, (t, _) in enumerate(p2.sent):
        assert t - t0 >= (k + 2) * 1e-3 - 1e-4, (k, t - t0)


def test_loop_jitter_may_reorder_but_delivers_all() -> None:
    p1 = FakePort(1)
    p2 = FakePort(2, impairment=Impairment(delay_ms=10, jitter_ms=8, seed=5))
    with DataplaneLoop(FakeSwitch(), [p1, p2]):
        for i in range(200):
            p1.inject(b"%04d" % i)
        wait_for(lambda: len(p2.sent) == 200)
    got = [f for _, f in p2.sent]
    assert sorted(got) == [b"%04d" % i for i in range(200)]


def test_loop_drop_rate_is_seeded() -> None:
    def run() -> list[bytes]:
        p1 = FakePort(1)
        p2 = FakePort(2, impairment=Impairment(drop_rate=0.3, seed=11))
        with DataplaneLoop(FakeSwitch(), [p1, p2]):
            for i in range(1000):
                p1.inject(b"%04d" % i)
            wait_for(lambda: len(p2.sent) + p2.counters.dropped == 1000)
        return [f for _, f in p2.sent]

    first, second = run(), run()
    assert first == second
    assert 620 <= len(first) <= 780


def test_port_open_errors() -> None:
    with pytest.raises(PortError, match="no such interface"):
        Port(1, "nonexistent0").open()


def test_serve_loader_compiles_source(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The P4Runtime loader compiles source bytes from a temp file (includes next to the
    original program still resolve); swapping the dataplane is DataplaneLoop.set_switch."""
    import p4sim
    from p4sim.serve import make_loader

    calls: list[tuple[str, str, list[str]]] = []

    def fake_load(path: str, arch: str = "v1model", include_dirs: list[str] = []) -> str:
        calls.append((Path(path).read_text(), arch, list(include_dirs)))
        return "prog"

    class NewSwitch(FakeSwitch):
        def __init__(self, prog: str, cpu_port: int | None = None, seed: int = 0) -> None:
            super().__init__(tag=b"+new")
            self.args = (prog, cpu_port, seed)

    monkeypatch.setattr(p4sim, "load_program", fake_load, raising=False)
    monkeypatch.setattr(p4sim, "Switch", NewSwitch, raising=False)
    p1, p2 = FakePort(1), FakePort(2)
    prog_dir = tmp_path / "src"
    loader = make_loader(program=str(prog_dir / "x.p4"), arch="tna", include_dirs=["/inc"],
                         cpu_port=99, seed=3)
    old = FakeSwitch()
    with DataplaneLoop(old, [p1, p2], cpu_port=99) as loop:
        new = loader(b"control C() { apply {} }", object())
        assert isinstance(new, NewSwitch) and new.args == ("prog", 99, 3)
        assert calls == [("control C() { apply {} }", "tna", ["/inc", str(prog_dir)])]
        assert loop.switch is old  # the server commits later (on_switch_change)
        loop.set_switch(new)
        p1.inject(b"after")
        wait_for(lambda: len(p2.sent) == 1)
        assert p2.sent[0][1] == b"after+new"


# ------------------------------------------------------------------------------ serve CLI

def run_serve(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    argv = serve_command(FWD_P4, [], *args)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=REPO)


@pytest.mark.parametrize("args, message", [
    (["-i", "x@lo"], "PORTNUM@IFACE"),
    (["-i", "1"], "PORTNUM@IFACE"),
    ([], "no ports"),
    (["-i", "1@nonexistent0"], "no such interface"),
    (["-i", "1@lo", "-i", "1@lo"], "twice"),
    (["-i", "1@lo", "--cpu-port", "1"], "CPU port"),
    (["-i", "1@lo", "--drop-rate", "2"], "drop rate"),
    (["-i", "1@lo", "--grpc-addr", "nohost"], "HOST:PORT"),
    (["-i", "1@lo", "--impair", "5:drop=0.1"], "unknown port"),
    (["-i", "1@lo", "--tx-mbps", "1:0"], "MBPS > 0"),
    (["-i", "1@lo", "--tx-mbps", "1"], "PORTNUM:MBPS"),
    (["-i", "1@lo", "--rx-mbps", "2:10"], "--rx-mbps for unknown port"),
    (["-i", "1@lo", "--bogus"], "unrecognized"),
])
def test_serve_bad_arguments(args: list[str], message: str) -> None:
    r = run_serve(*args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


def test_serve_bad_program(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text("this is not P4;\n")
    argv = serve_command(bad, [(1, "lo")])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 2, r.stderr
    assert "bad.p4" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(serve_command(tmp_path / "missing.p4", [(1, "lo")]),
                       capture_output=True, text=True, timeout=60, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr


# ------------------------------------------------------------------------------ integration

H1_MAC, H2_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"


@pytest.fixture
def two_hosts(veth_topology):  # type: ignore[no-untyped-def]
    topo = veth_topology()
    topo.add_host("h1", mac=H1_MAC)
    topo.add_host("h2", mac=H2_MAC)
    topo.wait_up()
    return topo


def test_real_ports_with_fake_switch(veth_topology, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """AF_PACKET ports on veths, in process: promiscuous receive, no re-ingestion of our own
    transmissions, VLAN tags restored, pcap of both directions."""
    topo = veth_topology()
    h1 = topo.add_host("h1", mac=H1_MAC)
    h2 = topo.add_host("h2", mac=H2_MAC)
    topo.wait_up()
    s1, s2 = topo.socket(h1), topo.socket(h2)
    p1 = Port(1, h1.switch_if, pcap_path=str(tmp_path / "p1.pcap"))
    p2 = Port(2, h2.switch_if, pcap_path=str(tmp_path / "p2.pcap"))
    sw = FakeSwitch()
    with DataplaneLoop(sw, [p1, p2]) as loop:
        # unicast to a MAC that is nobody's: only promiscuous mode lets us see it
        sent = [frame("02:aa:bb:cc:dd:ee", H1_MAC, i) for i in range(30)]
        for f in sent:
            s1.send(f)
        got = s2.recv_all(5.0, match=is_test_frame, count=30)
        assert got == sent
        tagged = (bytes.fromhex("02aabbccddee020000000001") + b"\x81\x00\x20\x07"
                  + frame(H2_MAC, H1_MAC, 99)[12:])
        s2.send(tagged)
        assert s1.recv_all(3.0, match=lambda d: d[12:14] == b"\x81\x00", count=1) == [tagged]
        time.sleep(0.2)
        # each test frame was processed once: our own transmissions are not ingested again
        assert sum(1 for f in s2.recv_all(0.2) if is_test_frame(f)) == 0
        c = loop.port_counters()
    assert sw.seen.count(2) >= 1 and c[2]["tx_packets"] >= 30
    ours = [f for _, f in read_pcap(str(tmp_path / "p1.pcap")) if is_test_frame(f)
            or f[12:14] == b"\x81\x00"]
    assert ours == sent + [tagged]
    ours2 = [f for _, f in read_pcap(str(tmp_path / "p2.pcap")) if is_test_frame(f)
             or f[12:14] == b"\x81\x00"]
    assert ours2 == sent + [tagged]
    assert loop.counters.processed == sum(1 for _ in sw.seen)


def test_serve_forwards_real_frames(two_hosts, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    topo = two_hosts
    h1, h2 = topo.hosts["h1"], topo.hosts["h2"]
    s1, s2 = topo.socket(h1), topo.socket(h2)
    pcap_dir = tmp_path / "pcap"
    argv = serve_command(FWD_P4, [(1, h1.switch_if), (2, h2.switch_if)],
                         "--pcap-dir", str(pcap_dir), "--log-level", "info")
    with ServeProcess(argv) as sv:
        line = sv.wait_ready()
        assert f"1@{h1.switch_if}" in line and "grpc none" in line
        n = 20
        for i in range(n):
            s1.send(frame(H2_MAC, H1_MAC, i))
        got = s2.recv_all(5.0, match=is_test_frame, count=n)
        assert [seq_of(f) for f in got] == list(range(n)), sv.output
        assert got[0] == frame(H2_MAC, H1_MAC, 0)  # byte for byte
        for i in range(n, n + 5):
            s2.send(frame(H1_MAC, H2_MAC, i))
        back = s1.recv_all(5.0, match=is_test_frame, count=5)
        assert [seq_of(f) for f in back] == list(range(n, n + 5)), sv.output
        # VLAN-tagged frames: veth offloads the tag into metadata; it must be put back
        tagged = (bytes.fromhex("020000000002020000000001") + b"\x81\x00\x00\x2a"
                  + frame(H2_MAC, H1_MAC, 999)[12:])
        s1.send(tagged)
        vl = s2.recv_all(3.0, match=lambda d: d[12:14] == b"\x81\x00", count=1)
        assert vl == [tagged], sv.output
        rc = sv.stop()
    assert rc == 0, sv.output
    assert "Traceback" not in sv.output
    # pcap per port, both directions
    from scapy.all import rdpcap

    p1 = [bytes(p) for p in rdpcap(str(pcap_dir / f"{h1.switch_if}.pcap"))]
    p2 = [bytes(p) for p in rdpcap(str(pcap_dir / f"{h2.switch_if}.pcap"))]
    assert [seq_of(f) for f in p1 if is_test_frame(f)] == list(range(n + 5))
    assert frame(H2_MAC, H1_MAC, 3) in p1 and frame(H2_MAC, H1_MAC, 3) in p2
    assert frame(H1_MAC, H2_MAC, n) in p2 and frame(H1_MAC, H2_MAC, n) in p1


def test_serve_drop_rate_and_delay(two_hosts) -> None:  # type: ignore[no-untyped-def]
    topo = two_hosts
    h1, h2 = topo.hosts["h1"], topo.hosts["h2"]
    s1, s2 = topo.socket(h1), topo.socket(h2)
    argv = serve_command(FWD_P4, [(1, h1.switch_if), (2, h2.switch_if)],
                         "--drop-rate", "0.3", "--delay-ms", "30", "--seed", "7",
                         "--log-level", "warning")
    with ServeProcess(argv) as sv:
        sv.wait_ready()
        # latency first (one frame at a time, some may be dropped)
        lat = []
        for i in range(10):
            t0 = time.monotonic()
            s1.send(frame(H2_MAC, H1_MAC, 10_000 + i))
            got = s2.recv_all(0.3, match=is_test_frame, count=1)
            if got:
                lat.append(time.monotonic() - t0)
        assert lat and min(lat) >= 0.029, lat
        n = 400
        for i in range(n):
            s1.send(frame(H2_MAC, H1_MAC, i))
            if i % 50 == 49:
                time.sleep(0.02)  # do not overrun the kernel queues of a Python switch
        got = s2.recv_all(10.0, match=lambda d: (seq_of(d) or 10**9) < n, count=n, idle=1.0)
        seqs = [seq_of(f) for f in got]
        assert seqs == sorted(seqs), "a fixed delay without jitter keeps FIFO order"
        # binomial(400, 0.7): mean 280, sd ~9.2; +-5 sd
        assert 234 <= len(seqs) <= 326, (len(seqs), sv.output)
        assert sv.stop() == 0, sv.output
