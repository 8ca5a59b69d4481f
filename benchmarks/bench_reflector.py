"""Hosts alone: N workers on hostlib's native data path against a C switch stand-in, next to gloo.

The reflector (benchmarks/reflector.c) binds the PS address and does what a switch aggregating
the job at its multicast level does: it sums the workers' int32 lanes per fragment and sends each
complete aggregate to every worker, one datagram per worker. It costs memory bandwidth and a
socket, nothing else, so the rates measure the hosts: encoding, the worker's C loop, the kernel's
UDP path and decoding. Every party is its own process (fork): the reflector, and one per worker
(Worker + UdpTransport, run_udp's C loop). Then gloo all-reduces a tensor of the same size
between the same number of processes on 127.0.0.1 (torch.distributed, in place: no per-round
clone).

Printed per run: Gb/s of gradient per host (4 bytes per element, one host's gradient per
round, over the slowest worker's wall time) and per core (the same bits over each worker
process's CPU seconds, user + system, averaged over workers; the reflector's CPU is reported
beside, as a switch's is not the hosts'). ``--veth`` also runs the INA part across a veth pair
between two network namespaces this benchmark creates and deletes (root only): there every
datagram is sent and read on its own, as on a real interface, where loopback batches them
(UDP GSO/GRO, as hostlib's native path does on lo). ``--xdp`` runs each worker in a namespace
of its own on a bridge whose namespace holds the reflector, on AF_XDP (hostlib.xdp) and on its
UDP socket, alternating, and prints the ratio of the medians.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.machine import cpu_seconds, describe, gloo_all_reduce, thread_counts  # noqa: E402
from benchmarks.netns import enter, star, veth_pair  # noqa: E402
from hostlib import native  # noqa: E402
from hostlib.protocol import DEFAULT_LANES, MAX_WORKERS  # noqa: E402

K = DEFAULT_LANES
JOB = 11
NODE = 1                      # the label's aggregation node: a switch's, so results come from "it"


def _reflector_proc(ps_ip: str, ips: list[str], threads: int, netns: str | None, ready: Any, stop: Any,
                    q: Any) -> None:
    enter(netns)
    from benchmarks.reflector import Reflector
    # one reflector per thread, each aggregating its sub-models (hostlib.shards' steering)
    refls = [Reflector(ps_ip, ips, shard=(t, threads)) for t in range(threads)]
    for r in refls:
        r.start()
    ready.set()
    stop.wait()
    c = cpu_seconds()                   # every thread's: the C loops' included
    stats: dict[str, int] = {}
    for r in refls:
        r.close()
        for k, v in r.stats.as_dict().items():
            stats[k] = stats.get(k, 0) + v
    q.put(("reflector", c, stats, refls[0].gso))


def _worker_proc(w: int, ip: str, ps_ip: str, workers: int, n: int, rounds: int, window: int, threads: int,
                 netns: str | None, io: str, go: Any, q: Any) -> None:
    enter(netns)
    from hostlib.rto import RtoEstimator
    from hostlib.shards import ShardedWorker, equal_parts
    from hostlib.worker import FragmentLabel
    # the gradient in one sub-model per thread, each a shard of its own
    sizes = equal_parts(n, threads)
    wk = ShardedWorker(JOB, w, ps_ip, ip, [FragmentLabel(NODE, workers)] * threads, threads, lanes=K,
                       window=window, rto=RtoEstimator(initial=1.0, minimum=0.5, maximum=2.0), io=io)
    g = np.random.default_rng(w).normal(0.0, 1.0, n).astype(np.float32)
    go.wait()
    wk.push(g, sizes)                            # warm-up round: library, pages, caches
    if not wk.run(120.0):
        raise RuntimeError(f"worker {w}: warm-up round timed out")
    c0, t0, resent = cpu_seconds(), time.perf_counter(), 0
    for _ in range(rounds):
        wk.push(g, sizes)
        if not wk.run(120.0):
            raise RuntimeError(f"worker {w}: a round timed out")
        resent += wk.resent
    q.put(("worker", cpu_seconds() - c0, time.perf_counter() - t0, resent))
    wk.close()


def _line(what: str, n: int, rounds: int, walls: list[float], cpus: list[float]) -> tuple[float, float]:
    bits = n * 32 * rounds
    host, core = bits / max(walls) / 1e9, float(np.mean([bits / c for c in cpus])) / 1e9
    print(f"{what:<58} {host:8.3f} Gb/s per host {core:8.3f} Gb/s per core  {rounds / max(walls):7.2f} rounds/s")
    return host, core


def bench_ina(n: int, rounds: int, workers: int, window: int, ps_ip: str, ips: list[str], threads: int = 1,
              netns: tuple[str, list[str]] | None = None, label: str = "loopback",
              io: str = "socket") -> tuple[float, float]:
    """``netns``: the reflector's namespace and each worker's; ``io``: the workers' transports
    (hostlib.xdp.open_transport)."""
    ctx = mp.get_context("fork")
    ready, stop, go, q = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Queue()
    sw_ns, host_ns = netns if netns else (None, [None] * workers)
    refl = ctx.Process(target=_reflector_proc, args=(ps_ip, ips, threads, sw_ns, ready, stop, q))
    refl.start()
    if not ready.wait(60):
        raise RuntimeError("the reflector did not start")
    procs = [ctx.Process(target=_worker_proc, args=(w, ips[w], ps_ip, workers, n, rounds, window, threads,
                                                    host_ns[w], io, go, q))
             for w in range(workers)]
    for p in procs:
        p.start()
    time.sleep(0.3)                              # every worker bound before the first fragment
    go.set()
    try:
        reports = [q.get(timeout=600) for _ in range(workers)]
    finally:
        stop.set()
    _, refl_cpu, st, gso = q.get(timeout=60)
    for p in [*procs, refl]:
        p.join(60)
    walls, cpus = [r[2] for r in reports], [r[1] for r in reports]
    what = (f"INA, reflector, {label}{' (GSO/GRO)' if gso else ''}, {workers} workers, {n * 4 / 2**20:.1f} MB, "
            f"W={window}{f', {threads} threads' if threads > 1 else ''}")
    out = _line(what, n, rounds, walls, cpus)
    print(f"    reflector: {refl_cpu:.2f} CPU s ({n * 32 * (rounds + 1) * workers / refl_cpu / 1e9:.3f} Gb/s of "
          f"contributions per core), {st['completed']} aggregates, {st['results_sent']} result datagrams, "
          f"{st['answered_retries']} retries answered, {st['duplicates']} duplicates, {st['send_dropped']} send "
          f"drops; workers resent {sum(r[3] for r in reports)} fragments")
    return out


def bench_gloo(n: int, rounds: int, workers: int) -> tuple[float, float] | None:
    reports = gloo_all_reduce(workers, n, rounds)
    if reports is None:
        return None
    return _line(f"gloo all-reduce, 127.0.0.1, {workers} processes, {n * 4 / 2**20:.1f} MB", n, rounds,
                 [r[1] for r in reports], [r[0] for r in reports])


def bench_star(n: int, rounds: int, workers: int, window: int, repeat: int) -> None:
    """The workers on AF_XDP and on their sockets, alternating, each worker in a namespace of its
    own on a bridge whose namespace holds the reflector; the ratio of the medians."""
    from hostlib.native.xdp import unavailable_reason
    reason = unavailable_reason()
    if reason:
        print(f"AF_XDP: not run ({reason})")
        return
    runs: dict[str, list[tuple[float, float]]] = {"xdp": [], "socket": []}
    try:
        with star(workers) as s:
            ips, spaces = [h[1] for h in s.hosts], [h[0] for h in s.hosts]
            for _ in range(repeat):
                for io in runs:
                    runs[io].append(bench_ina(n, rounds, workers, window, s.hub_ip, ips, 1, (s.hub, spaces),
                                              f"bridge, workers on {'AF_XDP' if io == 'xdp' else 'UDP sockets'}",
                                              io))
    except (OSError, subprocess.SubprocessError) as e:
        print(f"AF_XDP: not run ({str(getattr(e, 'stderr', '') or e).strip()})")
        return
    med = {io: (float(np.median([r[0] for r in v])), float(np.median([r[1] for r in v]))) for io, v in runs.items()}
    print(f"{'workers on AF_XDP / on sockets (bridge), median of %d' % repeat:<58} {med['xdp'][0] / med['socket'][0]:8.2f}x "
          f"per host {med['xdp'][1] / med['socket'][1]:8.2f}x per core")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench_reflector.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=8.0, help="gradient size in MB of float32 (default 8)")
    ap.add_argument("--rounds", type=int, default=5, help="timed all-reduce rounds, after one warm-up (default 5)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes, and gloo ranks (default 2)")
    ap.add_argument("--window", type=int, default=64,
                    help="worker window: fragments awaiting a result, per thread (default 64)")
    ap.add_argument("--veth", action="store_true",
                    help="also across a veth pair between two network namespaces made for the run (root)")
    ap.add_argument("--xdp", action="store_true",
                    help="also with each worker in a network namespace of its own around a bridge (root): "
                         "on AF_XDP (hostlib.xdp) and on its UDP socket, side by side")
    ap.add_argument("--no-gloo", action="store_true", help="leave out the gloo baseline")
    ap.add_argument("--threads", type=thread_counts, default=[1],
                    help="threads per worker and for the reflector, or a comma-separated list to compare "
                         "(e.g. 1,2,4): the gradient is cut into one sub-model per thread (default 1)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of INA and gloo, alternating; medians printed when more than one (default 1)")
    args = ap.parse_args(argv)
    if not 1 <= args.workers <= MAX_WORKERS:
        ap.error(f"--workers {args.workers}: must be in 1..{MAX_WORKERS}")
    if args.rounds < 1 or args.window < 1 or args.repeat < 1 or not args.mb > 0:
        ap.error("--rounds, --window and --repeat must be at least 1, --mb positive")
    threads = args.threads
    n = int(args.mb * 2**20 / 4)
    print(describe())
    if not native.available():
        print(f"the native data path is unavailable here: {native.unavailable_reason()}")
        return 1
    print(f"hostlib native data path, {K} lanes per fragment; per core = gradient bits / the worker "
          f"process's CPU seconds")
    ina: dict[int, list[tuple[float, float]]] = {t: [] for t in threads}
    gloo: list[tuple[float, float]] = []
    for _ in range(args.repeat):             # side by side: machines of a kind differ, and so do minutes
        for t in threads:
            net = f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"      # not another run's addresses
            ina[t].append(bench_ina(n, args.rounds, args.workers, args.window, f"{net}.1",
                                    [f"{net}.{w + 2}" for w in range(args.workers)], t))
        if not args.no_gloo:
            g = bench_gloo(n, args.rounds, args.workers)
            if g:
                gloo.append(g)
    if args.veth:
        try:
            with veth_pair(args.workers) as (namespaces, ps_ip, ips):
                bench_ina(n, args.rounds, args.workers, args.window, ps_ip, ips, threads[0],
                          (namespaces[0], [namespaces[1]] * args.workers), "veth")
        except (OSError, subprocess.SubprocessError) as e:
            detail = getattr(e, "stderr", "") or e
            print(f"veth: not run ({str(detail).strip()})")
    if args.xdp:
        bench_star(n, args.rounds, args.workers, args.window, args.repeat)
    median = lambda runs, i: float(np.median([r[i] for r in runs]))     # noqa: E731
    if args.repeat > 1 or len(threads) > 1:
        for t in threads:
            what = f"INA over the reflector (loopback), {t} thread{'s' if t > 1 else ''}, median of {args.repeat}"
            speedup = f"  {median(ina[t], 0) / median(ina[threads[0]], 0):5.2f}x {threads[0]} thread(s)" \
                if t != threads[0] else ""
            print(f"{what:<58} {median(ina[t], 0):8.3f} Gb/s per host {median(ina[t], 1):8.3f} Gb/s per core{speedup}")
        if gloo:
            print(f"{'gloo all-reduce, median of %d' % len(gloo):<58} {median(gloo, 0):8.3f} Gb/s per host "
                  f"{median(gloo, 1):8.3f} Gb/s per core")
    if gloo:
        for t in threads:
            what = f"INA over the reflector (loopback), {t} thread{'s' if t > 1 else ''} / gloo, per host"
            print(f"{what:<58} {median(ina[t], 0) / median(gloo, 0):8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
