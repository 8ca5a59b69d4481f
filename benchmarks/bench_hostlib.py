"""Host-agent throughput: prints Gb/s of gradient payload per core for the hot paths of hostlib.

  encode   float32 gradient -> int32 fixed-point lanes -> Ethernet/IPv4/UDP/INA frames
  decode   frames -> header + int32 lanes -> accumulated into a result array
  worker   Worker.push + start + on_frame for every result of one round + result_fixed (sans-IO)
  ps       ParameterServer consuming one round of frames from N workers (sans-IO)
  send     Worker.push + start + UdpTransport.send_many of every first copy (encode + send;
           a second process drains the receiving socket)
  udp      a PS and N workers in separate processes on 127.0.0.0/8, all-reducing over UDP: the
           Python cores (run_udp's Python loop), then hostlib.native's C data path (the
           default; with --threads also with every agent's sub-models sharded over threads,
           hostlib.shards), then gloo's all-reduce of the same vector between N processes on
           127.0.0.1 (torch.distributed, in place), and the ratio native/gloo of their wall-clock rates;
           with --xdp also every agent in a network namespace of its own on a bridge (root),
           on AF_XDP (hostlib.xdp) and then on UDP sockets
  floor    the kernel's part of that all-reduce alone: a round's datagrams sent and read over
           loopback sockets as the C path batches them, with no protocol work, with and without
           GSO/GRO; their system CPU spread over the cores bounds the rate any host path on these
           sockets can reach, printed next to gloo's

"Gradient payload" is 4 bytes per gradient element (float32), whatever the wire carries. The
single-threaded lines are one core by construction (best of --repeat runs, wall time); the UDP
line divides by the CPU seconds all its processes used together, so it is per core even when
the processes share cores with each other (and with whatever else runs on the machine).
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import resource
import select
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.machine import describe, gloo_all_reduce, thread_counts  # noqa: E402
from benchmarks.netns import Star, enter, star  # noqa: E402
from hostlib import native  # noqa: E402
from hostlib import protocol as P  # noqa: E402
from hostlib.drivers import UdpTransport  # noqa: E402
from hostlib.native.constants import SOL_UDP, UDP_GRO  # noqa: E402
from hostlib.native.xdp import unavailable_reason as xdp_unavailable_reason  # noqa: E402
from hostlib.ps import JobConfig, ParameterServer  # noqa: E402
from hostlib.rto import RtoEstimator  # noqa: E402
from hostlib.shards import ShardedPs, ShardedWorker, equal_parts  # noqa: E402
from hostlib.worker import FragmentLabel, Worker  # noqa: E402
from hostlib.worker_tuning import LOOPBACK_WINDOW  # noqa: E402

K = P.DEFAULT_LANES
JOB = 7


def _gradient(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 1.0, n).astype(np.float32)


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _line(name: str, n_values: int, seconds: float, frames: int) -> None:
    gbps = n_values * 32 / seconds / 1e9
    print(f"{name:<56} {gbps:8.3f} Gb/s/core  {frames / seconds:12,.0f} frames/s")


# ---------------------------------------------------------------------- encode / decode
def _encode_per_fragment(g: np.ndarray) -> list[bytes]:
    """One fragment at a time, as hostlib did before the batch functions."""
    out = []
    for f, s in enumerate(range(0, g.size, K)):
        lanes = P.encode_lanes(g[s:s + K], 16, K)
        h = P.InaHeader.for_worker(JOB, 3, 0, f, 1, 2, round=5)
        out.append(P.build_frame(h, lanes, src_ip="10.0.0.2", dst_ip="10.0.0.1"))
    return out


def _encode_batch(g: np.ndarray) -> list[bytes]:
    enc = P.encode_fragments(g, None, 16, K)
    hdr = P.header_array(len(enc), job_id=JOB, node_id=3, submodel_id=0, worker_id=1, fan_in=2, bitmap=1 << 1,
                         round=5)
    buf = P.build_frames(hdr, enc, src_ip="10.0.0.2", dst_ip="10.0.0.1")
    step = len(buf) // len(enc)
    return [buf[i:i + step] for i in range(0, len(buf), step)]


def _decode_per_fragment(frames: list[bytes], n: int) -> np.ndarray:
    acc = np.zeros(n, dtype=np.int64)
    for f in frames:
        pkt = P.parse_frame(f, K)
        s = pkt.header.fragment_id * K
        acc[s:s + K] += pkt.lanes[:min(K, n - s)]
    return acc


def _decode_batch(frames: list[bytes], n: int) -> np.ndarray:
    acc = np.zeros(-(-n // K) * K, dtype=np.int64)
    hdr, lanes = P.parse_frames(frames, K)
    acc.reshape(-1, K)[hdr["fragment_id"]] += lanes
    return acc[:n]


def bench_codec(n: int, repeat: int) -> None:
    g = _gradient(n)
    frames_count = -(-n // K)
    _line("encode, per fragment (encode_lanes+build_frame)", n, _best(lambda: _encode_per_fragment(g), repeat),
          frames_count)
    frames = _encode_per_fragment(g)
    _line("decode, per fragment (parse_frame+add)", n, _best(lambda: _decode_per_fragment(frames, n), repeat),
          frames_count)
    if hasattr(P, "encode_fragments"):
        assert _encode_batch(g) == frames, "batch encoding differs from the per-fragment one"
        _line("encode, batch (encode_fragments+build_frames)", n, _best(lambda: _encode_batch(g), repeat),
              frames_count)
        if native.available():
            tpl = P.header_array(1, job_id=JOB, node_id=3, submodel_id=0, fragment_id=0, worker_id=1, fan_in=2,
                                 bitmap=1 << 1, round=5)
            pre = P.frame_prefix("10.0.0.2", "10.0.0.1", 0, 0, P.INA_UDP_PORT, 64, P.HEADER_LEN + 4 * K)
            enc = lambda: native.encode_round(g, [g.size], 16, K, False, tpl, pre)      # noqa: E731
            assert enc() == b"".join(frames), "native encoding differs from the per-fragment one"
            _line("encode, native (hostlib.native.encode_round)", n, _best(enc, repeat), frames_count)
        assert np.array_equal(_decode_batch(frames, n), _decode_per_fragment(frames, n))
        _line("decode, batch (parse_frames+add)", n, _best(lambda: _decode_batch(frames, n), repeat),
              frames_count)


# ---------------------------------------------------------------------- sans-IO agents
def _rto() -> RtoEstimator:
    # nothing is lost in these runs: a timer must never fire because the machine is slow
    return RtoEstimator(initial=5.0, minimum=5.0, maximum=10.0)


def _result_frames(n: int, worker_ip: str) -> list[bytes]:
    zeros = np.zeros(K, dtype=np.int32)
    return [P.build_frame(P.InaHeader(JOB, 0, 0, f, P.WORKER_AGGREGATE, 2, 2, 0, 0b11, P.Flags.RESULT, 0), zeros,
                          src_ip="10.0.0.1", dst_ip=worker_ip) for f in range(-(-n // K))]


def bench_worker(n: int, repeat: int, window: int) -> None:
    g = _gradient(n)
    results = _result_frames(n, "10.0.0.2")

    def one_round() -> int:
        wk = Worker(JOB, 0, "10.0.0.1", "10.0.0.2", [FragmentLabel(0, 2)], lanes=K, window=window, rto=_rto(), native=False)
        wk.push(g)
        sent = len(wk.start(0.0))
        for r in results:                  # results in order, as a loss-free PS sends them
            sent += len(wk.on_frame(r, 0.0))
        assert wk.done() and sent == len(results) and wk.result_fixed().size == n
        return sent

    _line(f"worker round, sans-IO (push+frames+results, W={window})", n, _best(one_round, repeat), len(results))


def bench_ps(n: int, repeat: int, workers: int) -> None:
    ips = [f"10.0.0.{w + 2}" for w in range(workers)]
    frames = []
    for w in range(workers):
        wk = Worker(JOB, w, "10.0.0.1", ips[w], [FragmentLabel(0, workers)], lanes=K, window=1 << 30,
                    reach=1 << 30, native=False, rto=_rto())
        wk.push(_gradient(n, seed=w))
        frames.append(wk.start(0.0))
    # interleave the workers' fragments, as they arrive at a PS
    arrivals = [f for group in zip(*frames) for f in group]

    def one_round(batch: int) -> None:
        ps = ParameterServer("10.0.0.1", {JOB: JobConfig({w: (ips[w], 0) for w in range(workers)})}, lanes=K,
                             timeout=_rto())
        out = 0
        if batch == 1:
            for f in arrivals:
                out += len(ps.on_frame(f, 0.0))
                ps.next_deadline()         # a driver asks after every frame
        else:
            for i in range(0, len(arrivals), batch):
                out += len(ps.on_frames(arrivals[i:i + batch], 0.0))
                ps.next_deadline()         # ... and after every batch
        assert out == workers * len(frames[0]) and ps.done()

    for batch in (1, 64):
        t = _best(lambda: one_round(batch), repeat)
        how = "on_frame" if batch == 1 else f"on_frames x{batch}"
        _line(f"PS round, sans-IO ({workers} workers, {how})", n * workers, t, 2 * len(arrivals))


# ---------------------------------------------------------------------- UDP loopback
def _cpu() -> np.ndarray:
    """User and system CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return np.array([r.ru_utime, r.ru_stime])


def _no_gso(gso: bool) -> None:
    if not gso:
        os.environ["INAHOST_GSO"] = "0"       # every datagram on its own, as on a real interface


def _udp_ps(ip: str, jobcfg: JobConfig, threads: int, stop: mp.Event, ready: mp.Event, q: mp.Queue, native: bool,
            gso: bool = True, netns: str | None = None, io: str = "socket") -> None:
    _no_gso(gso)
    enter(netns)
    ps = ShardedPs(ip, {JOB: jobcfg}, threads, lanes=K, native=native, io=io,
                   timeout=RtoEstimator(initial=1.0, minimum=0.5, maximum=2.0))
    ready.set()
    c0, at_stop = _cpu(), []

    def stopped() -> bool:
        # the CPU of the rounds, not of handing C's entries to the Python core once stopped
        if stop.is_set() and not at_stop:
            at_stop.append(_cpu())
        return bool(at_stop)
    ps.serve(stopped, 3600.0)
    q.put(("ps", at_stop[0] - c0, ps.stats.received))
    ps.close()


def _udp_worker(w: int, ip: str, ps_ip: str, workers: int, n: int, rounds: int, window: int, threads: int,
                go: mp.Event, q: mp.Queue, native: bool, gso: bool = True, netns: str | None = None,
                io: str = "socket") -> None:
    _no_gso(gso)
    enter(netns)
    # one sub-model per thread, each a shard of its own
    sizes = equal_parts(n, threads)
    wk = ShardedWorker(JOB, w, ps_ip, ip, [FragmentLabel(0, workers)] * threads, threads, lanes=K, window=window,
                       rto=RtoEstimator(initial=1.0, minimum=0.5, maximum=2.0), native=native, io=io)
    g = _gradient(n, seed=w)
    go.wait()
    c0, t0, resent = _cpu(), time.perf_counter(), 0
    for _ in range(rounds):
        wk.push(g, sizes)
        if not wk.run(600.0):
            raise RuntimeError(f"worker {w}: a round timed out")
        resent += wk.resent
    q.put(("worker", _cpu() - c0, time.perf_counter() - t0, resent, wk.result_fixed()[:4].tolist()))
    wk.close()


def _drain_socket(ip: str, expect: int, ready: mp.Event, q: mp.Queue) -> None:
    tr = UdpTransport(ip, lanes=K)
    ready.set()
    got, idle = 0, 0
    while got < expect and idle < 20:       # 20 empty waits of 50 ms: the sender is done
        n = len(tr.recv_many(0.05, 1024))
        got, idle = got + n, 0 if n else idle + 1
    q.put(got)
    tr.close()


def bench_send(n: int, repeat: int) -> None:
    net = f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"
    g = _gradient(n)
    frames = -(-n // K)
    tx = UdpTransport(f"{net}.2", lanes=K)
    best_cpu, best_wall, received = float("inf"), float("inf"), []
    ctx = mp.get_context("fork")
    for _ in range(repeat):
        ready, q = ctx.Event(), ctx.Queue()
        rx = ctx.Process(target=_drain_socket, args=(f"{net}.1", frames, ready, q))
        rx.start()
        ready.wait(30)
        wk = Worker(JOB, 0, f"{net}.1", f"{net}.2", [FragmentLabel(0, 2)], lanes=K, window=1 << 30, reach=1 << 30, native=False,
                    rto=_rto())
        c0, t0 = time.process_time(), time.perf_counter()
        wk.push(g)
        tx.send_many(wk.start(0.0))
        best_cpu = min(best_cpu, time.process_time() - c0)
        best_wall = min(best_wall, time.perf_counter() - t0)
        received.append(q.get(timeout=120))
        rx.join(30)
    tx.close()
    gbits = n * 32 / 1e9
    print(f"{'encode + send, UDP loopback (push+start+send_many)':<56} {gbits / best_cpu:8.3f} Gb/s/core  "
          f"{frames / best_cpu:12,.0f} frames/s  ({gbits / best_wall:.3f} Gb/s wall; receiver got "
          f"{min(received) / frames:.0%} of the datagrams)")


def bench_udp(n: int, rounds: int, workers: int, window: int, native: bool, gso: bool = True, threads: int = 1,
              hosts: Star | None = None, io: str = "socket") -> float:
    """One all-reduce run; returns its wall-clock rate (Gb/s of gradient payload). ``hosts``: the
    PS and workers each in a namespace of its own (benchmarks.netns.star), on transports ``io``;
    default loopback."""
    net = f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"   # not another run's addresses
    ps_ip, ips = f"{net}.1", [f"{net}.{w + 2}" for w in range(workers)]
    spaces: list[str | None] = [None] * (workers + 1)
    if hosts is not None:
        (ps_ip, *ips), spaces = [h[1] for h in hosts.hosts], [h[0] for h in hosts.hosts]
    ctx = mp.get_context("fork")
    stop, ready, go, q = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Queue()
    jobcfg = JobConfig({w: (ips[w], 0) for w in range(workers)})
    procs = [ctx.Process(target=_udp_ps, args=(ps_ip, jobcfg, threads, stop, ready, q, native, gso, spaces[0], io))]
    procs += [ctx.Process(target=_udp_worker, args=(w, ips[w], ps_ip, workers, n, rounds, window, threads, go, q,
                                                    native, gso, spaces[1 + w], io))
              for w in range(workers)]
    procs[0].start()
    ready.wait(30)
    for p in procs[1:]:
        p.start()
    time.sleep(0.5)                      # let the workers bind and encode nothing yet
    go.set()
    reports = [q.get(timeout=3600) for _ in range(workers)]
    stop.set()
    reports.append(q.get(timeout=60))
    for p in procs:
        p.join(60)
    cpu_ps = next(r[1] for r in reports if r[0] == "ps")
    cpu_workers = sum(r[1] for r in reports if r[0] == "worker")
    user, system = cpu_ps + cpu_workers
    cpu = user + system
    wall = max(r[2] for r in reports if r[0] == "worker")
    resent = sum(r[3] for r in reports if r[0] == "worker")
    payload_bits = n * 32 * rounds
    path = ("native" if gso or hosts else "native*") if native else "Python"
    if threads > 1:
        path += f", {threads} threads"
    where = "UDP loopback" if hosts is None else f"bridge, {'AF_XDP' if io == 'xdp' else 'UDP sockets'}"
    print(f"{'%s, %d workers + PS, %.1f MB, W=%d, %s' % (where, workers, n * 4 / 2**20, window, path):<56} "
          f"{payload_bits / cpu / 1e9:8.3f} Gb/s/core  {payload_bits / wall / 1e9:8.3f} Gb/s wall  "
          f"{rounds / wall:6.2f} rounds/s")
    print(f"    CPU s (user+system): PS {cpu_ps.sum():.2f} ({cpu_ps[1]:.2f} system), workers {cpu_workers.sum():.2f} "
          f"({cpu_workers[1]:.2f} system), in {wall:.2f} s wall; {resent} fragments resent")
    if not gso:
        print("    * without UDP GSO/GRO: every datagram sent and read on its own, as on a real interface (Mininet)")
    return payload_bits / wall / 1e9


def bench_star(n: int, rounds: int, workers: int, window: int) -> dict[str, float]:
    """The native all-reduce with every party on its own interface (no GSO/GRO, as on a real
    NIC): on AF_XDP, then on UDP sockets, over the same bridge. Rates by transport."""
    reason = xdp_unavailable_reason()
    if reason:
        print(f"AF_XDP: not run ({reason})")
        return {}
    try:
        with star(workers + 1) as hosts:
            return {io: bench_udp(n, rounds, workers, window, native=True, hosts=hosts, io=io)
                    for io in ("xdp", "socket")}
    except (OSError, subprocess.SubprocessError) as e:
        print(f"AF_XDP: not run ({str(getattr(e, 'stderr', '') or e).strip()})")
        return {}


def _floor_receive(ip: str, gso: bool, expect: int, ready: mp.Event, q: mp.Queue) -> None:
    _no_gso(gso)
    tr = UdpTransport(ip, lanes=K, buffer_bytes=64 << 20)
    need = P.HEADER_LEN + 4 * K
    ready.set()
    c0, got = _cpu(), 0
    if gso:
        # coalesced reads, one system call per up to 64 KiB of datagrams, as the C loops' recvmmsg
        # slots: this process's time is then the kernel's (the kernel splits a process's CPU into
        # user and system by ticks, so a Python call per datagram would hide the system part)
        tr.sock.setsockopt(SOL_UDP, UDP_GRO, 1)
        buf = bytearray(65536)
        # 0.5 s without a datagram: the sender is done (what is missing, the socket dropped)
        while got < expect and select.select([tr.sock], [], [], 0.5 if got else 60.0)[0]:
            while got < expect:
                try:
                    got += tr.sock.recv_into(buf, 0, socket.MSG_DONTWAIT) // need
                except BlockingIOError:
                    break
    else:
        rings = tr._native_rings()       # recvmmsg batches, a system call and a softirq per datagram
        while got < expect and rings.lib.ina_io_poll(rings.handle, 0.5 if got else 60.0) > 0:
            got += 1
    q.put(("receive", _cpu() - c0, got))
    tr.close()


def _floor_send(ip: str, gso: bool, frames: bytes, n: int, rounds: int, q: mp.Queue) -> None:
    _no_gso(gso)
    tr = UdpTransport(ip, lanes=K)
    rings = tr._native_rings()
    base = np.frombuffer(frames, dtype=np.uint8).ctypes.data
    ptrs = (base + np.arange(n, dtype=np.uint64) * (len(frames) // n)).astype(np.uint64)
    c0 = _cpu()
    for _ in range(rounds):
        for i in range(0, n, 1024):       # a window's worth at a time, as the hosts send
            rings.lib.ina_io_send(rings.handle, ptrs[i:].ctypes.data, min(1024, n - i))
            time.sleep(0)                # let the reader run between windows (fewer drops on 2 cores)
    q.put(("send", _cpu() - c0, n * rounds))
    tr.close()


def bench_floor(n: int, rounds: int, workers: int, gso: bool, repeat: int = 3) -> float:
    """The kernel's part of a round, alone: one process sends one worker's first copies (n
    values, K lanes a datagram) ``rounds`` times over loopback as hostlib's C path sends them
    (UDP_SEGMENT batches where ``gso``), another reads them (coalesced where ``gso``), with no
    protocol work. A round of ``workers`` workers and a PS on loopback sends and reads
    2 x workers times as many datagrams (first copies up, one result per worker down), so its
    system CPU, spread over the machine's cores, bounds what any host path on these sockets
    can reach. The cheapest of ``repeat`` tries (a bound: whatever else runs only adds to the
    cost). Returns that bound (Gb/s of gradient, wall)."""
    net = f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"
    frags = -(-n // K)
    headers = P.header_array(frags, job_id=JOB, node_id=0, submodel_id=0, fragment_id=np.arange(frags), worker_id=0,
                             fan_in=workers, priority=0, bitmap=1, round=0)
    frames = P.build_frames(headers, P.encode_fragments(_gradient(n), None, 16, K), src_ip=f"{net}.2",
                            dst_ip=f"{net}.1")
    ctx = mp.get_context("fork")
    tries = []
    for _ in range(repeat):
        ready, q = ctx.Event(), ctx.Queue()
        rx = ctx.Process(target=_floor_receive, args=(f"{net}.1", gso, frags * rounds, ready, q))
        rx.start()
        ready.wait(60)
        tx = ctx.Process(target=_floor_send, args=(f"{net}.2", gso, frames, frags, rounds, q))
        tx.start()
        reports = {r[0]: r[1:] for r in (q.get(timeout=600), q.get(timeout=600))}
        for p in (tx, rx):
            p.join(60)
        (send_cpu, sent), (recv_cpu, got) = reports["send"], reports["receive"]
        # system seconds per datagram, both ends
        tries.append((send_cpu[1] / sent + recv_cpu[1] / max(got, 1), sent, got))
    per_datagram, sent, got = min(tries)
    round_cpu = per_datagram * 2 * workers * frags
    cores = min(os.cpu_count() or 1, workers + 1)
    bound = n * 32 / (round_cpu / cores) / 1e9
    label = "UDP loopback, GSO/GRO" if gso else "UDP loopback, a datagram at a time"
    print(f"{'kernel floor, %s, %.1f MB' % (label, n * 4 / 2**20):<56} {per_datagram * 1e9:8.0f} ns/datagram "
          f"{round_cpu * 1e3:8.2f} ms system CPU a round  <= {bound:.3f} Gb/s wall")
    print(f"    {2 * workers} x {frags:,} datagrams a round ({workers} workers + PS), sent and read once each, "
          f"spread over {cores} cores; cheapest of {repeat} tries of {sent:,} sent, {got:,} read "
          f"({', '.join(f'{t[0] * 1e9:.0f}' for t in tries)} ns)")
    return bound


def bench_gloo(n: int, rounds: int, workers: int) -> float | None:
    """gloo's all-reduce of the same float32 vector between ``workers`` processes on 127.0.0.1,
    in place (no per-round copy); returns its wall-clock rate (Gb/s of gradient payload), None
    without torch."""
    reports = gloo_all_reduce(workers, n, rounds)
    if reports is None:
        return None
    wall = max(r[1] for r in reports)
    gbps = n * 32 * rounds / wall / 1e9
    print(f"{'gloo all-reduce, %d processes on 127.0.0.1, %.1f MB' % (workers, n * 4 / 2**20):<56} "
          f"{n * 32 * rounds / sum(r[0] for r in reports) / 1e9:8.3f} Gb/s/core  {gbps:8.3f} Gb/s wall  "
          f"{rounds / wall:6.2f} rounds/s")
    return gbps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=8.0, help="gradient size in MB of float32 (sans-IO benchmarks)")
    ap.add_argument("--udp-mb", type=float, default=8.0, help="gradient size for the UDP benchmark")
    ap.add_argument("--rounds", type=int, default=3, help="all-reduce rounds in the UDP benchmark")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=thread_counts, default=[1],
                    help="UDP benchmark: also with each worker and the PS sharded over this many threads "
                         "(comma-separated list; the gradient is cut into one sub-model per thread)")
    ap.add_argument("--window", type=int, default=LOOPBACK_WINDOW,
                    help=f"worker window (fragments awaiting a result; default {LOOPBACK_WINDOW}, hostlib's for "
                         "jobs no switch aggregates)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per single-threaded benchmark and per kernel floor (the best is printed)")
    ap.add_argument("--only", default="codec,worker,ps,send,udp,floor", help="comma-separated subset to run")
    ap.add_argument("--skip-python-udp", action="store_true", help="UDP all-reduce: native and gloo only")
    ap.add_argument("--xdp", action="store_true",
                    help="UDP all-reduce: also with the PS and each worker in a network namespace of its own around "
                         "a bridge (root), on AF_XDP (hostlib.xdp) and on UDP sockets, side by side")
    args = ap.parse_args()
    n, only = int(args.mb * 2**20 / 4), set(args.only.split(","))
    print(describe())
    print(f"hostlib, {K} lanes per fragment, numpy {np.__version__}, native data path: "
          f"{'yes' if native.available() else 'no (' + str(native.unavailable_reason()) + ')'}"
          f"{' (UDP GSO/GRO on loopback)' if native.available() and native.loopback_gso('127.0.0.1') else ''}")
    if "codec" in only:
        bench_codec(n, args.repeat)
    if "worker" in only:
        bench_worker(n, args.repeat, args.window)
    if "ps" in only:
        bench_ps(n, args.repeat, args.workers)
    if "send" in only:
        bench_send(n, args.repeat)
    m, ina, star_rates, floors = int(args.udp_mb * 2**20 / 4), None, {}, {}
    if "udp" in only:
        if not args.skip_python_udp:
            bench_udp(m, args.rounds, args.workers, args.window, native=False)
        ina = bench_udp(m, args.rounds, args.workers, args.window, native=True) if native.available() else None
        for t in args.threads:
            if t > 1 and ina is not None:
                # the same hosts with their sub-models sharded over threads (hostlib.shards)
                bench_udp(m, args.rounds, args.workers, args.window, native=True, threads=t)
        if ina is not None and native.loopback_gso("127.0.0.1"):
            # what the same hosts do where every datagram is sent and read on its own (Mininet)
            bench_udp(m, args.rounds, args.workers, args.window, native=True, gso=False)
        star_rates = bench_star(m, args.rounds, args.workers, args.window) if args.xdp and ina is not None else {}
    if "floor" in only and native.available():
        floors = {gso: bench_floor(m, max(args.rounds, 10), args.workers, gso, args.repeat)
                  for gso in ([True, False] if native.loopback_gso("127.0.0.1") else [False])}
    if "udp" in only or floors:
        gloo = bench_gloo(m, args.rounds, args.workers)
        if ina is not None and gloo:
            print(f"{'INA (native) / gloo, wall-clock rate':<56} {ina / gloo:8.2f}x")
            for io, rate in star_rates.items():
                print(f"{'INA on the bridge, %s / gloo' % ('AF_XDP' if io == 'xdp' else 'UDP sockets'):<56} "
                      f"{rate / gloo:8.2f}x")
        for gso, bound in floors.items():
            if gloo:
                print(f"{'kernel floor %s / gloo, at most' % ('(GSO/GRO)' if gso else '(a datagram at a time)'):<56} "
                      f"{bound / gloo:8.2f}x")


if __name__ == "__main__":
    main()
