"""The batch paths of hostlib give the bytes and errors of the per-fragment ones: fixed-point
encoding of whole gradients, header arrays and frame buffers, batch decoding, the agents' fast
header parsing, and the UDP transport's batched socket calls."""
from __future__ import annotations

import random
import socket

import numpy as np
import pytest

from hostlib import protocol as P
from hostlib.drivers import MmsgSocket, UdpTransport, _batched_io, run_udp
from hostlib.ps import JobConfig, ParameterServer
from hostlib.rto import RtoEstimator
from hostlib.worker import FragmentLabel, Worker

from loopback import require_loopback_udp

BIG = 32767.99998          # just inside int32 at scale 2^16


def _per_fragment(values: np.ndarray, sizes: list[int], scale_bits: int, lanes: int, clip: bool) -> np.ndarray:
    """The reference: encode_lanes fragment by fragment, every sub-model starting a new one."""
    rows, off = [], 0
    for size in sizes:
        for s in range(off, off + size, lanes):
            rows.append(P.encode_lanes(values[s:min(s + lanes, off + size)], scale_bits, lanes, clip))
        off += size
    return np.array(rows, dtype=np.int32).reshape(len(rows), lanes)


def _error(fn, *args, **kw) -> str | None:
    try:
        fn(*args, **kw)
    except P.ProtocolError as e:
        return str(e)
    return None


@pytest.mark.parametrize("sizes", [[200], [64, 64], [0, 130, 0, 1, 63, 65], [], [0]])
@pytest.mark.parametrize("lanes", [64, 16, 5])
def test_encode_fragments_equals_encode_lanes_per_fragment(sizes: list[int], lanes: int) -> None:
    rng = np.random.default_rng(len(sizes) * 100 + lanes)
    v = rng.normal(0, 1000, sum(sizes))
    edges = np.array([BIG, -BIG, 0.0, -0.0, 2**-17, -(2**-17), 0.5 / 65536, 1.5 / 65536])
    v[:min(v.size, edges.size)] = edges[:min(v.size, edges.size)]
    for scale in (0, 16, 20):
        w = v / (1 << max(0, scale - 16)) if scale > 16 else v      # keep 2^20 in range
        got = P.encode_fragments(w, sizes, scale, lanes)
        want = _per_fragment(w, sizes, scale, lanes, False)
        assert got.dtype == np.int32 and got.shape == want.shape and np.array_equal(got, want)
    sub, frag, start, stop = P.fragment_layout(sizes, lanes)
    ref, off = [], 0
    for s, size in enumerate(sizes):
        ref += [(s, f, b, min(b + lanes, off + size)) for f, b in enumerate(range(off, off + size, lanes))]
        off += size
    assert list(zip(sub.tolist(), frag.tolist(), start.tolist(), stop.tolist())) == ref


def test_encode_fragments_float32_and_default_single_submodel() -> None:
    g = np.random.default_rng(3).normal(0, 1, 1000).astype(np.float32)
    assert np.array_equal(P.encode_fragments(g), _per_fragment(g, [1000], 16, 64, False))
    with pytest.raises(ValueError, match="add up"):
        P.encode_fragments(g, [999])


@pytest.mark.parametrize("clip", [False, True])
def test_encode_fragments_raises_what_the_first_refused_fragment_raises(clip: bool) -> None:
    sizes, lanes = [10, 30, 20], 8
    cases = {
        "overflow": {12: 1e9},
        "nan": {33: np.nan},
        "inf": {3: -np.inf},
        "overflow then nan": {9: 5e4, 45: np.nan},
        "nan then overflow": {11: np.nan, 50: -5e4},
        "both in one fragment": {16: 5e4, 17: np.nan},
        "overflow at the last lane": {59: -40000.0},
    }
    for name, bad in cases.items():
        v = np.linspace(-3, 3, sum(sizes))
        for i, x in bad.items():
            v[i] = x
        want = _error(_per_fragment, v, sizes, 16, lanes, clip)
        got = _error(P.encode_fragments, v, sizes, 16, lanes, clip)
        assert got == want, name
        if want is None:         # clip: out-of-range values saturate, row for row as before
            assert np.array_equal(P.encode_fragments(v, sizes, 16, lanes, clip), _per_fragment(v, sizes, 16, lanes, clip))
    assert _error(P.encode_fragments, np.array([40000.0, -40000.0]), [2], 16, 4, True) is None
    assert P.encode_fragments(np.array([40000.0, -40000.0]), [2], 16, 4, True)[0, :2].tolist() == [P.INT32_MAX, P.INT32_MIN]


def test_header_array_and_build_frames_equal_build_frame() -> None:
    rng = np.random.default_rng(5)
    n, k = 37, 16
    lanes = rng.integers(P.INT32_MIN, P.INT32_MAX, (n, k), dtype=np.int64, endpoint=True).astype(np.int32)
    lanes[0] = P.INT32_MAX
    lanes[1] = P.INT32_MIN
    node = rng.integers(0, 1 << 16, n)
    hdr = P.header_array(n, job_id=65535, node_id=node, submodel_id=3, fragment_id=np.arange(n) + (1 << 32) - n,
                         worker_id=31, fan_in=255, count=1, priority=200, bitmap=1 << 31,
                         flags=int(P.Flags.RESEND | P.Flags.OVERFLOW), round=(1 << 32) - 1)
    addr = dict(src_ip="10.1.2.3", dst_ip="10.9.8.7", src_mac="02:00:00:00:00:0a", dst_mac=0x020000000001)
    buf = P.build_frames(hdr, lanes, **addr)
    step = len(buf) // n
    for i in range(n):
        h = P.InaHeader(65535, int(node[i]), 3, (1 << 32) - n + i, 31, 255, 1, 200, 1 << 31,
                        P.Flags.RESEND | P.Flags.OVERFLOW, (1 << 32) - 1)
        assert buf[i * step:(i + 1) * step] == P.build_frame(h, lanes[i], **addr)
        assert P.pack_header(65535, int(node[i]), 3, (1 << 32) - n + i, 31, 255, 1, 200, 1 << 31,
                             int(h.flags), (1 << 32) - 1) == h.pack()
    with pytest.raises(P.ProtocolError, match="fragment_id=4294967296 does not fit in 32 bits"):
        P.header_array(2, job_id=1, node_id=1, submodel_id=1, fragment_id=[0, 1 << 32], worker_id=0, fan_in=1)
    with pytest.raises(P.ProtocolError, match="node_id=-1 does not fit"):
        P.header_array(1, job_id=1, node_id=-1, submodel_id=1, worker_id=0, fan_in=1)
    with pytest.raises(P.ProtocolError, match="round=4294967296 does not fit"):
        P.pack_header(1, 1, 1, 1, 0, 1, round=1 << 32)
    assert P.build_frames(P.header_array(0, job_id=1, node_id=1, submodel_id=0, worker_id=0, fan_in=1),
                          np.zeros((0, k), np.int32), **addr) == b""


def _frames(n: int, k: int, seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        h = P.InaHeader(int(rng.integers(1, 1 << 16)), int(rng.integers(0, 1 << 16)), int(rng.integers(0, 9)), i,
                        int(rng.integers(0, 256)), int(rng.integers(0, 256)), int(rng.integers(0, 256)),
                        int(rng.integers(0, 256)), int(rng.integers(0, 1 << 32)), P.Flags(int(rng.integers(0, 64))),
                        int(rng.integers(0, 1 << 32)))
        lanes = rng.integers(P.INT32_MIN, P.INT32_MAX, k, endpoint=True, dtype=np.int64).astype(np.int32)
        out.append(P.build_frame(h, lanes, src_ip="10.0.0.1", dst_ip=f"10.0.1.{i % 250}", src_port=1000 + i))
    return out


def test_parse_frames_and_frame_fields_equal_parse_frame() -> None:
    k = 8
    frames = _frames(50, k)
    hdr, lanes = P.parse_frames(frames, k)
    assert lanes.dtype == np.int32 and lanes.shape == (50, k)
    for i, f in enumerate(frames):
        pkt = P.parse_frame(f, k)
        h = pkt.header
        fields = (int(h.flags), h.job_id, h.node_id, h.submodel_id, h.fragment_id, h.worker_id, h.fan_in, h.count,
                  h.priority, h.bitmap, h.round)
        assert tuple(int(hdr[i][name]) for name in ("flags", "job_id", "node_id", "submodel_id", "fragment_id",
                                                     "worker_id", "fan_in", "count", "priority", "bitmap",
                                                     "round")) == fields
        assert np.array_equal(lanes[i], pkt.lanes)
        got = P.frame_fields(f, k)
        assert got[:-1] == fields and np.array_equal(P.frame_lanes(f, got[-1], k), pkt.lanes)
        assert (pkt.src_port, pkt.dst_ip) == (1000 + i, f"10.0.1.{i % 250}")
    assert P.parse_frames([], k)[1].shape == (0, k)
    bad = bytearray(frames[3])
    bad[P.ETH_IP_UDP_LEN] = 0x10                             # version 1
    with pytest.raises(P.ProtocolError, match="frame 3"):
        P.parse_frames(frames[:3] + [bytes(bad)], k)
    with pytest.raises(P.ProtocolError, match="frame 1 has"):
        P.parse_frames([frames[0], frames[1][:-1]], k)


def test_frame_fields_refuses_what_parse_frame_refuses() -> None:
    k = 8
    good = bytearray(_frames(1, k)[0])
    variants = {"short": good[:60], "lanes short": good[:-1], "not ipv4": good[:12] + b"\x86\xdd" + good[14:],
                "not udp": good[:23] + b"\x06" + good[24:], "port": good[:36] + b"\x00\x35" + good[38:],
                "version": good[:42] + b"\x30" + good[43:], "ok": good}
    for name, f in variants.items():
        want = _error(P.parse_frame, bytes(f), k)
        assert _error(P.frame_fields, bytes(f), k) == want, name
        assert (want is None) == (name == "ok")


def test_worker_frames_equal_the_per_fragment_construction() -> None:
    """Every first copy, resend and result copy of a multi-sub-model round, byte for byte as
    InaHeader.for_worker + encode_lanes + build_frame make them."""
    k, sizes = 8, [20, 0, 8, 3]
    labels = {0: FragmentLabel(3, 4, 9), 2: FragmentLabel(0, 4), 3: FragmentLabel(65535, 2, 255)}
    g = np.random.default_rng(1).normal(0, 10, sum(sizes))
    wk = Worker(9, 2, "10.0.9.1", "10.0.0.3", labels, mac="02:00:00:00:00:03", gateway_mac=7, lanes=k,
                window=100, rto=RtoEstimator(initial=1.0))
    wk.push(g, sizes, round=41)
    sent = wk.start(0.0)
    addr = dict(src_ip="10.0.0.3", dst_ip="10.0.9.1", src_mac="02:00:00:00:00:03", dst_mac=7)
    want, frames, off = [], [], 0
    for sub, size in enumerate(sizes):
        for f, s in enumerate(range(off, off + size, k)):
            lab = labels[sub]
            lanes = P.encode_lanes(g[s:min(s + k, off + size)], 16, k)
            want.append((sub, f, lanes))
            h = P.InaHeader.for_worker(9, lab.node_id, sub, f, 2, lab.fan_in, lab.priority, round=41)
            frames.append(P.build_frame(h, lanes, **addr))
        off += size
    # sent in send_order: sub-models interleaved in proportion to their sizes, each in fragment order
    order = P.send_order(sizes, k).tolist()
    assert [want[i][:2] for i in order] == [(0, 0), (0, 1), (2, 0), (3, 0), (0, 2)]   # at 1/6, 1/2 (x3), 5/6
    assert sent == [frames[i] for i in order]
    want = [want[i] for i in order]
    resent = wk.on_timer(1.0)
    for (sub, f, lanes), frame in zip(want, resent):
        lab = labels[sub]        # a first try goes to the node as a RETRY; without one, to the PS
        node, flags = (lab.node_id, P.Flags.RETRY) if lab.node_id else (0, P.Flags.RESEND)
        h = P.InaHeader.for_worker(9, node, sub, f, 2, lab.fan_in, lab.priority, flags, 41)
        assert frame == P.build_frame(h, lanes, **addr)
    # a result, then the PS's query for it: answered with the result copy
    res = np.arange(k, dtype=np.int32) - 4
    h = P.InaHeader(9, 0, 3, 0, 255, 2, 2, 0, 0b111, P.Flags.RESULT | P.Flags.OVERFLOW, 41)
    wk.on_frame(P.build_frame(h, res, src_ip="10.0.9.1", dst_ip="10.0.0.3"), 1.1)
    assert np.array_equal(wk.result_fixed()[28:31], res[:3])
    q = P.InaHeader(9, 0, 3, 0, 2, 0, 0, 0, 0, P.Flags.REMINDER, 41)
    (copy,) = wk.on_frame(P.build_frame(q, np.zeros(k, np.int32), src_ip="10.0.9.1", dst_ip="10.0.0.3"), 1.2)
    lanes = np.zeros(k, np.int32)
    lanes[:3] = res[:3]
    h = P.InaHeader.for_worker(9, 0, 3, 0, 2, 2, 255, P.Flags.RESULT | P.Flags.RESEND | P.Flags.OVERFLOW, 41)
    assert copy == P.build_frame(h, lanes, **addr)


def test_worker_push_errors_leave_the_round_untouched() -> None:
    wk = Worker(1, 0, "10.0.9.1", "10.0.0.1", [FragmentLabel(0, 2)], lanes=4)
    wk.push(np.ones(6))
    with pytest.raises(P.ProtocolError, match="finite"):
        wk.push(np.array([1.0, np.nan]))
    assert wk.round == 0 and len(wk.start(0.0)) == 2
    bad = Worker(1, 32, "10.0.9.1", "10.0.0.1", [FragmentLabel(0, 2)], lanes=4)
    with pytest.raises(P.ProtocolError, match="worker_id 32"):
        bad.push(np.ones(4))


def test_on_frames_equals_on_frame_one_by_one() -> None:
    k, n = 8, 40
    ips = {0: "10.0.0.1", 1: "10.0.0.2"}

    def agents() -> tuple[ParameterServer, list[Worker]]:
        ps = ParameterServer("10.0.9.1", {4: JobConfig({w: (ip, 0) for w, ip in ips.items()})}, lanes=k)
        wks = []
        for w in ips:
            wk = Worker(4, w, "10.0.9.1", ips[w], [FragmentLabel(0, 2)], lanes=k, window=6)
            wk.push(np.random.default_rng(w).normal(0, 1, n * k))
            wks.append(wk)
        return ps, wks

    ps_a, wks_a = agents()
    ps_b, wks_b = agents()
    pending = [f for wk in wks_a for f in wk.start(0.0)]
    assert pending == [f for wk in wks_b for f in wk.start(0.0)]
    while pending:
        out_a = ps_a.on_frames(pending, 0.0)
        out_b = [r for f in pending for r in ps_b.on_frame(f, 0.0)]
        assert out_a == out_b
        pending = []
        for w, ip in ips.items():
            mine = [f for f in out_a if P.parse_frame(f, k).dst_ip == ip]
            got = wks_a[w].on_frames(mine, 0.0)
            assert got == [r for f in mine for r in wks_b[w].on_frame(f, 0.0)]
            pending += got
    assert all(wk.done() for wk in wks_a) and np.array_equal(wks_a[0].result_fixed(), wks_b[1].result_fixed())


# ---------------------------------------------------------------------- UDP
def _net() -> str:
    return f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"


def _mmsg_or_skip(mmsg: bool) -> None:
    """Skips where the platform has no sendmmsg/recvmmsg (MmsgSocket.create gives None only
    then; any other failure of it raises and fails the test)."""
    if mmsg:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            if MmsgSocket.create(s, 4, 64) is None:
                pytest.skip("no sendmmsg/recvmmsg here")


@pytest.mark.parametrize("mmsg", [False, True], ids=["sendto", "sendmmsg"])
def test_udp_send_many_and_recv_many_carry_what_send_and_recv_carry(mmsg: bool) -> None:
    _mmsg_or_skip(mmsg)
    k, net = 8, _net()
    require_loopback_udp(f"{net}.1", f"{net}.2")
    a = UdpTransport(f"{net}.1", lanes=k, batch=16, mmsg=mmsg)
    b = UdpTransport(f"{net}.2", lanes=k, batch=16, mmsg=mmsg)
    assert (a._mmsg is not None) == mmsg
    try:
        frames = []
        for i in range(40):
            h = P.InaHeader(1, 2, 3, i, 0, 2, 1, 0, 1, P.Flags(0), 5)
            frames.append(P.build_frame(h, np.full(k, i - 20, np.int32), src_ip=f"{net}.1", dst_ip=f"{net}.2"))
        a.send_many(frames[:39])
        a.send(frames[39])
        got: list[bytes] = []
        while len(got) < 40:
            batch = b.recv_many(1.0)
            assert batch and len(batch) <= 16 or len(got) + len(batch) == 40
            got += batch
        # the receiver sees the sender's frame with its own address as destination (what the
        # per-frame recv built before: build_frame(header, lanes, src_ip, dst_ip=ours, src_port))
        for f, g in zip(frames, got):
            pkt = P.parse_frame(f, k)
            assert g == P.build_frame(pkt.header, pkt.lanes, src_ip=f"{net}.1", dst_ip=f"{net}.2",
                                      src_port=P.INA_UDP_PORT)
        assert b.recv_many(0.01) == [] and b.recv(0.01) is None
        # not INA (too short, another version) is dropped; a reserved nibble is cleared as before
        raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        raw.bind((f"{net}.3", 0))
        payload = frames[0][P.ETH_IP_UDP_LEN:]
        for d in (b"hello", b"\x10" + payload[1:], b"\x2f" + payload[1:] + b"trailing"):
            raw.sendto(d, (f"{net}.2", P.INA_UDP_PORT))
        raw.close()
        got = []
        for _ in range(20):
            got += b.recv_many(0.1)
            if got:
                break
        assert len(got) == 1 and P.parse_frame(got[0], k).header == P.parse_frame(frames[0], k).header
        assert got[0][P.ETH_IP_UDP_LEN] == 0x20 and len(got[0]) == len(frames[0])
    finally:
        a.close()
        b.close()


def test_run_udp_uses_per_frame_calls_of_a_transport_that_overrides_them() -> None:
    """A subclass counting in send/recv (emulation.agents.CountingTransport) keeps seeing every
    frame: run_udp falls back to the single-frame calls for it."""

    class Counting(UdpTransport):
        def __init__(self, *a, **kw) -> None:            # type: ignore[no-untyped-def]
            super().__init__(*a, **kw)
            self.sent = self.received = 0

        def send(self, frame: bytes) -> None:
            super().send(frame)
            self.sent += 1

        def recv(self, timeout: float) -> bytes | None:
            f = super().recv(timeout)
            self.received += f is not None
            return f

    k, net = 4, _net()
    require_loopback_udp(f"{net}.1", f"{net}.2")
    trs = [Counting(f"{net}.1", lanes=k), UdpTransport(f"{net}.2", lanes=k)]
    recv_many, send_many = _batched_io(trs[0])
    assert recv_many != trs[0].recv_many and send_many != trs[0].send_many
    assert _batched_io(trs[1]) == (trs[1].recv_many, trs[1].send_many)
    import threading
    rto = RtoEstimator(initial=0.5, minimum=0.2, maximum=1.0)
    wk = Worker(2, 0, f"{net}.2", f"{net}.1", [FragmentLabel(0, 1)], lanes=k, window=4, rto=rto)
    wk.push(np.arange(10 * k, dtype=float))
    ps = ParameterServer(f"{net}.2", {2: JobConfig({0: (f"{net}.1", 0)})}, lanes=k, timeout=rto)
    t = threading.Thread(target=run_udp, args=(ps, trs[1], 10.0, wk.done))
    t.start()
    try:
        assert run_udp(wk, trs[0], 10.0)
    finally:
        t.join(15)
        for tr in trs:
            tr.close()
    assert np.array_equal(wk.result_fixed(), (np.arange(10 * k) * 65536).astype(np.int64))
    assert trs[0].sent == 10 + wk.stats.resent and trs[0].received >= 10


def test_send_many_through_sendmmsg_waits_then_counts_a_drop_like_send() -> None:
    """sendmmsg finding the socket buffer full: wait, retry that datagram once, else drop and
    count it (as ``send`` does) and go on with the rest."""
    _mmsg_or_skip(True)
    k, net = 4, _net()
    require_loopback_udp(f"{net}.1", f"{net}.2")
    tx, rx = UdpTransport(f"{net}.1", lanes=k, mmsg=True), UdpTransport(f"{net}.2", lanes=k, mmsg=True)
    real, calls = tx._mmsg.send, []

    def full_twice(rows, offset, length, port):          # type: ignore[no-untyped-def]
        calls.append(len(rows))
        return 0 if len(calls) <= 2 else real(rows, offset, length, port)

    tx._mmsg.send = full_twice
    frames = [P.build_frame(P.InaHeader(1, 0, 0, i, 0, 1), np.full(k, i, np.int32), src_ip=f"{net}.1",
                            dst_ip=f"{net}.2") for i in range(5)]
    try:
        tx.send_many(frames)
        assert tx.send_dropped == 1 and calls[:2] == [5, 1]       # the retry is for one datagram
        got: list[bytes] = []
        for _ in range(20):
            got += rx.recv_many(0.1)
            if len(got) == 4:
                break
        assert [P.parse_frame(f, k).header.fragment_id for f in got] == [1, 2, 3, 4]
    finally:
        tx.close()
        rx.close()


def test_ps_on_frames_with_odd_frames_in_the_batch_matches_on_frame() -> None:
    """A batch that is not all hostlib-layout frames (garbage, IPv4 options, another job, a
    RESEND, a late copy) goes frame by frame: the same replies, results and counters."""
    k = 8
    cfg = {4: JobConfig({0: ("10.0.0.1", 0), 1: ("10.0.0.2", 0)}, {3: "10.0.0.1"})}

    def frame(job: int, frag: int, worker: int, flags: P.Flags = P.Flags(0), value: int = 1) -> bytes:
        h = P.InaHeader(job, 0 if flags & P.Flags.RESEND else 3, 0, frag, worker, 2, 1, 0, 1 << worker, flags)
        return P.build_frame(h, np.full(k, value * (worker + 1), np.int32), src_ip="10.0.0.9", dst_ip="10.0.9.1")

    plain = frame(4, 1, 1)
    with_options = plain[:14] + bytes([0x46]) + plain[15:34] + bytes(4) + plain[34:]     # IHL 6: valid, not batchable
    batches = [
        [frame(4, 0, 0), frame(4, 0, 1), frame(4, 0, 1), frame(9, 0, 0), b"garbage"],
        [frame(4, 1, 0), with_options, frame(4, 1, 1, P.Flags.RESEND)],
        [frame(4, 2, 1, P.Flags.RESEND), frame(4, 2, 0), frame(4, 2, 1)],
    ]
    a = ParameterServer("10.0.9.1", cfg, lanes=k)
    b = ParameterServer("10.0.9.1", cfg, lanes=k)
    for batch in batches:
        assert a.on_frames(batch, 0.5) == [r for f in batch for r in b.on_frame(f, 0.5)]
    assert a.stats == b.stats
    assert a.stats.received == {"plain": 7, "foreign": 1, "invalid": 1, "late": 2, "resend": 2}
    assert a.stats.results_resent == 1 and a.stats.completed == 3
    for frag in range(3):
        assert np.array_equal(a.result(4, 0, frag), b.result(4, 0, frag))
    assert a.incomplete() == b.incomplete() and a.next_deadline() == b.next_deadline()


@pytest.mark.parametrize("sizes", [[24], [20], [8, 16, 3], [5, 0, 13, 8], [0, 0]])
def test_worker_result_fixed_puts_each_result_at_its_fragment(sizes: list[int]) -> None:
    k = 8
    wk = Worker(1, 0, "10.0.9.1", "10.0.0.1", dict.fromkeys(range(len(sizes)), FragmentLabel(0, 2)), lanes=k,
                window=100)
    wk.push(np.zeros(sum(sizes)), sizes)
    wk.start(0.0)
    rng = np.random.default_rng(sum(sizes))
    want, off = np.zeros(sum(sizes), np.int64), 0
    order = []
    for sub, size in enumerate(sizes):
        for f, s in enumerate(range(off, off + size, k)):
            lanes = rng.integers(P.INT32_MIN, P.INT32_MAX, k, endpoint=True, dtype=np.int64).astype(np.int32)
            n = min(k, off + size - s)
            want[s:s + n] = lanes[:n]                       # padding lanes of a result are not gradient
            h = P.InaHeader(1, 0, sub, f, 255, 2, 2, 0, 0b11, P.Flags.RESULT)
            order.append((s, n, P.build_frame(h, lanes, src_ip="10.0.9.1", dst_ip="10.0.0.1")))
        off += size
    partial = np.zeros_like(want)
    for s, n, frame in reversed(order):                     # any arrival order
        wk.on_frame(frame, 0.1)
        partial[s:s + n] = want[s:s + n]
        assert np.array_equal(wk.result_fixed(), partial)   # what arrived, zeros elsewhere
    assert wk.done() and np.array_equal(wk.result_fixed(), want)
    assert np.array_equal(wk.result(), want / 65536.0)


def test_ps_on_frames_defers_results_to_the_end_of_the_batch_with_the_same_bytes() -> None:
    """Completions inside on_frames are computed together at the end of the batch: a RESEND
    answered from a result completed earlier in the same batch, saturation, a late copy, a
    completion through a resend stand-in and a new round in the middle all give on_frame's
    frames, in on_frame's order."""
    k = 8
    cfg = {4: JobConfig({0: ("10.0.0.1", 0), 1: ("10.0.0.2", "02:00:00:00:00:02")}, {3: "10.0.0.1"})}

    def frame(frag: int, worker: int, value: int, flags: P.Flags = P.Flags(0), rnd: int = 0) -> bytes:
        h = P.InaHeader(4, 0 if flags & P.Flags.RESEND else 3, 1, frag, worker, 2, 1, 0, 1 << worker, flags, rnd)
        return P.build_frame(h, np.full(k, value, np.int32), src_ip="10.0.0.9", dst_ip="10.0.9.1")

    big = P.INT32_MAX - 5
    batches = [
        [frame(0, 0, 1), frame(0, 1, 2), frame(0, 1, 2, P.Flags.RESEND), frame(1, 0, big), frame(1, 1, big),
         frame(0, 0, 1), frame(2, 1, -big), frame(2, 0, -big, P.Flags.OVERFLOW)],
        [frame(3, 0, 7, P.Flags.RESEND), frame(3, 1, 8), frame(4, 0, 1, rnd=1), frame(4, 1, 1, rnd=1),
         frame(1, 0, big, P.Flags.RESEND)],
    ]
    a = ParameterServer("10.0.9.1", cfg, lanes=k)
    b = ParameterServer("10.0.9.1", cfg, lanes=k)
    for batch in batches:
        got = a.on_frames(batch, 0.25)
        assert all(isinstance(f, bytes) for f in got)
        assert got == [r for f in batch for r in b.on_frame(f, 0.25)]
    assert a.stats == b.stats and a.stats.completed == 5 and a.stats.results_resent == 2
    # round 0 is now the previous round: a worker that lost its saturated result is still served
    sat = [P.parse_frame(f, k) for f in a.on_frames([frame(1, 1, 0, P.Flags.RESEND), frame(1, 1, 0, P.Flags.RESEND)],
                                                    0.3)]
    assert [(p.dst_ip, p.header.round, p.header.flags) for p in sat] == [("10.0.0.2", 0, P.Flags.RESULT | P.Flags.OVERFLOW)] * 2
    assert all(p.lanes.tolist() == [P.INT32_MAX] * k for p in sat)
    for frag, rnd in ((0, 0), (1, 0), (2, 0), (3, 0), (4, 1)):
        ra, rb = a.result(4, 1, frag, rnd), b.result(4, 1, frag, rnd)
        assert ra is not None and ra.dtype == np.int32 and np.array_equal(ra, rb)
    assert a.result(4, 1, 1, 0).tolist() == [P.INT32_MAX] * k and a.result(4, 1, 2, 0).tolist() == [P.INT32_MIN] * k
    assert a.result(4, 1, 3, 0).tolist() == [15] * k
