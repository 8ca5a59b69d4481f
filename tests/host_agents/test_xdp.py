"""AF_XDP (hostlib.xdp): workers and a PS, each in a network namespace of its own on a bridge,
all-reduce exactly through AF_XDP sockets — on the C loops and on the Python cores, in native
and generic XDP, next to peers on plain sockets — while the rest of the interface's traffic
still reaches the kernel. Root, ``ip`` and libxdp/libbpf are needed; without them the tests
skip with the reason."""
from __future__ import annotations

import errno
import shutil
import socket
import subprocess
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
import pytest

from benchmarks.netns import Star, inside, star
from hostlib import protocol as P
from hostlib.drivers import UdpTransport, native_udp
from hostlib.native import xdp as native_xdp
from hostlib.ps import JobConfig, ParameterServer
from hostlib.rto import RtoEstimator
from hostlib.shards import ShardedWorker
from hostlib.worker import FragmentLabel, Worker
from hostlib.xdp import XdpTransport, XdpUnavailable, open_transport

from .udp_threads import run_workers, serving

K = 16
N = 20_000
JOB = 4


def _skip_reason() -> str | None:
    if shutil.which("ip") is None:
        return "no ip(8)"
    return native_xdp.unavailable_reason()


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


@contextmanager
def _star(subnet: str, queues: int = 1) -> Iterator[Star]:
    """The PS and two workers, each in a namespace of its own on a bridge; skips where the
    kernel refuses BPF to root (a sandbox without CAP_BPF)."""
    with star(3, subnet=subnet, queues=queues) as s:
        ns, ip = s.hosts[0]
        try:
            with inside(ns):
                XdpTransport(ip, lanes=K).close()
        except XdpUnavailable as e:
            if e.errno != errno.EPERM:
                raise
            pytest.skip(f"this kernel refuses BPF here: {e}")
        yield s


@pytest.fixture
def net() -> Iterator[Star]:
    with _star("10.79.0") as s:
        yield s


def _rto() -> RtoEstimator:
    return RtoEstimator(initial=0.5, minimum=0.2, maximum=1.0)


def _transport(ns: str, ip: str, io: str, native: bool = True, **kwargs: Any) -> UdpTransport:
    with inside(ns):
        if io == "socket":
            return UdpTransport(ip, lanes=K, native=None if native else False)
        return XdpTransport(ip, lanes=K, native=None if native else False, **kwargs)


def _allreduce(s: Star, ios: tuple[str, str, str], native: bool = True, rounds: int = 2,
               **kwargs: Any) -> tuple[list[Worker], ParameterServer, list[UdpTransport]]:
    """The PS on host 0 and two workers on hosts 1 and 2, on the transports ``ios``; checks every
    round's sums against numpy's."""
    (ps_ns, ps_ip), *hosts = s.hosts
    trs = [_transport(ns, ip, io, native, **kwargs) for (ns, ip), io in zip(s.hosts, ios)]
    try:
        ps = ParameterServer(ps_ip, {JOB: JobConfig({w: (ip, 0) for w, (_, ip) in enumerate(hosts)})}, lanes=K,
                             timeout=_rto())
        workers = [Worker(JOB, w, ps_ip, ip, [FragmentLabel(0, 2)], lanes=K, window=32, rto=_rto(), native=native)
                   for w, (_, ip) in enumerate(hosts)]
        for a, tr in zip([ps, *workers], trs):
            assert native_udp(a, tr) == native
        with serving(ps, trs[0], 60.0):
            for rnd in range(rounds):
                grads = [np.random.default_rng(10 * rnd + w).normal(0, 10.0, N) for w in range(2)]
                for wk, g in zip(workers, grads):
                    wk.push(g)
                assert run_workers(workers, trs[1:], 30.0) == [True, True], f"round {rnd} did not complete"
                want = sum(P.encode_fragments(g, None, 16, K).reshape(-1)[:N].astype(np.int64) for g in grads)
                for wk in workers:
                    assert np.array_equal(wk.result_fixed(), want)
        return workers, ps, trs
    except BaseException:
        for tr in trs:
            tr.close()
        raise


@pytest.mark.parametrize("mode", ["native", "generic"])
def test_workers_and_ps_all_reduce_exactly_over_af_xdp(net: Star, mode: str) -> None:
    workers, ps, trs = _allreduce(net, ("xdp",) * 3, mode=mode)
    try:
        infos = [tr.info() for tr in trs]
        assert all(i["mode"] == mode for i in infos)
        # every fragment went through the C rings: sent, and read, as datagrams of the XSK
        frags = -(-N // K)
        assert ps.stats.completed == 2 * frags and not ps.incomplete()
        # only a worker's first window, sent before the PS's frames showed its MAC, took the kernel
        assert infos[0]["kernel_sent"] == 0
        assert all(0 < i["kernel_sent"] <= 32 for i in infos[1:])
    finally:
        for tr in trs:
            tr.close()


def test_every_receive_queue_has_a_socket() -> None:
    """An interface of two queues: the kernel spreads the datagrams over both, and each queue's
    AF_XDP socket (one UMEM) takes its share; none goes the kernel's way but a worker's first
    window, sent before the PS's frames showed its MAC."""
    with _star("10.79.2", queues=2) as s:
        workers, ps, trs = _allreduce(s, ("xdp",) * 3, rounds=1)
        infos = [tr.info() for tr in trs]
        for tr in trs:
            tr.close()
    assert ps.stats.completed == -(-N // K)
    assert all(i["queues"] == 2 and i["kernel_received"] == 0 for i in infos)


def test_the_python_cores_run_on_the_same_rings(net: Star) -> None:
    """run_udp's Python loop (XdpTransport(native=False)) reads and sends through the AF_XDP rings too."""
    _, _, trs = _allreduce(net, ("xdp",) * 3, native=False, rounds=1)
    for tr in trs:
        tr.close()


def test_af_xdp_hosts_and_socket_hosts_interoperate(net: Star) -> None:
    """The PS on a socket, one worker on AF_XDP, the other on a socket: the frames on the wire
    are the kernel's, both ways."""
    _, _, trs = _allreduce(net, ("socket", "xdp", "socket"), rounds=1)
    for tr in trs:
        tr.close()


def test_other_traffic_still_reaches_the_kernel_and_the_program_goes_with_the_socket(net: Star) -> None:
    (ns, ip), (peer_ns, _) = net.hosts[0], net.hosts[1]
    tr = _transport(ns, ip, "xdp")
    try:
        assert "prog/xdp" in subprocess.run(["ip", "-n", ns, "-d", "link", "show", "eth0"], capture_output=True,
                                            text=True, check=True).stdout
        # ARP passes (the peer resolves our address), and so does UDP to another port
        with inside(ns):
            other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            other.bind((ip, P.INA_UDP_PORT + 1))
            other.settimeout(5)
        with inside(peer_ns):
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            tx.sendto(b"not INA", (ip, P.INA_UDP_PORT + 1))
            assert other.recvfrom(64)[0] == b"not INA"
        finally:
            other.close()
            tx.close()
    finally:
        tr.close()
    assert "xdp" not in subprocess.run(["ip", "-n", ns, "-d", "link", "show", "eth0"], capture_output=True,
                                       text=True, check=True).stdout


def test_open_transport_probes_and_falls_back(net: Star) -> None:
    ns, ip = net.hosts[0]
    with inside(ns):
        auto = open_transport(ip, lanes=K, io="auto")
    try:
        assert isinstance(auto, XdpTransport)
    finally:
        auto.close()
    lo = open_transport("127.0.0.1", port=0, lanes=K, io="auto")          # loopback: the socket path
    try:
        assert type(lo) is UdpTransport
    finally:
        lo.close()
    with pytest.raises(XdpUnavailable, match="loopback"):
        open_transport("127.0.0.1", port=0, lanes=K, io="xdp")
    with pytest.raises(XdpUnavailable, match="no sharding"):
        with inside(ns):
            open_transport(ip, lanes=K, io="xdp", shard=(0, 2))
    with pytest.raises(ValueError, match="host I/O 'dpdk'"):
        open_transport(ip, io="dpdk")
    with inside(ns):
        ephemeral = XdpTransport(ip, port=0, lanes=K)          # the program filters the port the kernel chose
    try:
        assert ephemeral.port == ephemeral.sock.getsockname()[1] != 0
    finally:
        ephemeral.close()


def test_a_sharded_worker_takes_its_transport_by_io(net: Star) -> None:
    ns, ip = net.hosts[1]
    with inside(ns):
        wk = ShardedWorker(JOB, 0, net.hosts[0][1], ip, [FragmentLabel(0, 2)], 1, lanes=K, io="xdp")
    try:
        assert isinstance(wk.transports[0], XdpTransport)
    finally:
        wk.close()


def test_a_counting_subclass_counts_each_frame_once(net: Star, monkeypatch: pytest.MonkeyPatch) -> None:
    """``INAHOST_IO=xdp`` makes open_transport build the AF_XDP class it is given; one that counts
    (as the emulation's agents do on sockets) counts each frame once, whichever of the single
    and batch calls moved it."""
    from emulation.agents import CountingTransport

    class CountingXdp(CountingTransport, XdpTransport):
        pass
    monkeypatch.setenv("INAHOST_IO", "xdp")
    (ns_a, ip_a), (ns_b, ip_b) = net.hosts[0], net.hosts[1]
    with inside(ns_a):
        a = open_transport(ip_a, lanes=K, classes=(CountingTransport, CountingXdp))
    b = _transport(ns_b, ip_b, "xdp")
    try:
        assert isinstance(a, CountingXdp)

        def frame(src: str, dst: str, frag: int) -> bytes:
            return P.build_frame(P.InaHeader.for_worker(JOB, 0, 0, frag, 0, 2), np.arange(K, dtype=np.int32),
                                 src_ip=src, dst_ip=dst)
        a.send(frame(ip_a, ip_b, 0))
        a.send_many([frame(ip_a, ip_b, f) for f in (1, 2)])
        got = b.recv_many(5.0)
        while len(got) < 3 and (more := b.recv_many(2.0)):
            got += more
        assert sorted(P.parse_frame(f, K).header.fragment_id for f in got) == [0, 1, 2]
        b.send_many([frame(ip_b, ip_a, f) for f in (3, 4)])
        back = [a.recv(5.0)]
        while len(back) < 2 and (more := a.recv_many(2.0)):
            back += more
        assert len(back) == 2 and all(f is not None for f in back)
        assert a.counts == {"tx_packets": 3, "tx_bytes": 3 * len(got[0]), "rx_packets": 2,
                            "rx_bytes": 2 * len(got[0])}
    finally:
        a.close()
        b.close()
    monkeypatch.setenv("INAHOST_IO", "dpdk")
    with pytest.raises(ValueError, match="INAHOST_IO=dpdk: expected one of socket, xdp, auto"):
        open_transport(ip_a, lanes=K)
