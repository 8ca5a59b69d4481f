"""hostlib.native against the Python cores: the same frames, the same results, the same
counters — on p4sim fabrics (GOAT, ATP, ESA plans) with seeded loss and duplication, on a
node-0 job with seeded loss, duplication and reordering, and for real over UDP loopback with
workers and a PS in separate processes."""
from __future__ import annotations

import contextlib
import ctypes
import heapq
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from hostlib import native
from hostlib import protocol as P
from hostlib.drivers import UdpTransport, native_udp, run_on_fabric, run_udp
from hostlib.native import constants, library, structs
from hostlib.ps import JobConfig, ParameterServer
from hostlib.rto import RETRY_MIN, RtoEstimator
from hostlib.worker import FAST_RETRANSMIT_AFTER, STALE_AFTER, FragmentLabel, Worker
from hostlib.worker_group import WorkerGroup

from loopback import require_loopback_udp

from .fabric3 import SIZES, build


def _no_compiler_reason() -> str | None:
    """Why the C data path cannot be built here for reasons outside the project: no compiler
    (the one hostlib.native builds with: ``$CC``, else ``cc``), or the native path turned off
    (``INAHOST_NATIVE=0``). None when it must build: then a build or load failure fails."""
    if os.environ.get("INAHOST_NATIVE", "1") == "0":
        return "native data path disabled by INAHOST_NATIVE=0"
    cc = os.environ.get("CC") or "cc"
    if shutil.which(cc) is None:
        return f"no C compiler ({cc}; set $CC to choose one)"
    return None


NO_COMPILER = _no_compiler_reason()
pytestmark = pytest.mark.skipif(NO_COMPILER is not None, reason=NO_COMPILER or "")


@pytest.fixture(autouse=True, scope="module")
def _native_built() -> None:
    """A compiler is here, so the C data path must compile and load: its failure is this suite's."""
    if not native.available():
        pytest.fail(f"a C compiler is present but the native data path is unavailable: "
                    f"{native.unavailable_reason()}", pytrace=False)


class Recorder:
    """An agent that logs every call and the frames it returned, in order."""

    def __init__(self, agent: Any, log: list, name: str) -> None:
        self.agent, self.log, self.name = agent, log, name

    def _rec(self, what: str, now: float, out: list[bytes]) -> list[bytes]:
        self.log.append((self.name, what, now, tuple(out)))
        return out

    def start(self, now: float) -> list[bytes]:
        return self._rec("start", now, self.agent.start(now))

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        return self._rec("frame", now, self.agent.on_frame(frame, now))

    def on_timer(self, now: float) -> list[bytes]:
        return self._rec("timer", now, self.agent.on_timer(now))

    def next_deadline(self) -> float | None:
        return self.agent.next_deadline()


def _fabric_run(mode: str, native_path: bool, loss: float, dup: float, seed: int, rounds: int = 2,
                recovery: int | None = None, relay: bool = False) -> tuple:
    s = build(mode, pool={"goat": 1024, "esa": 4, "atp": 2}[mode], priorities=(200, 120, 60, 10), seed=seed,
              relay=relay)
    if recovery is not None:
        for wk in s.workers.values():
            wk.recovery = recovery
    log: list = []
    ps_agent: Any = native.NativePs(s.ps) if native_path else s.ps
    wk_agents: dict[str, Any] = {h: native.NativeWorker(wk) if native_path else wk for h, wk in s.workers.items()}
    every = {(h, tor): loss for h, (tor, _) in s.fabric.hosts.items()}
    every.update({(tor, h): loss for h, (tor, _) in s.fabric.hosts.items()})
    every.update({(a, b): loss for (a, _), (b, _) in s.fabric.links.items()})
    dups = {k: dup for k in every}
    rng = np.random.default_rng(seed + 100)
    results, lost = [], 0
    for rnd in range(rounds):
        if rnd:
            for h, wk in s.workers.items():
                if native_path:
                    wk_agents[h].finish()
                s.grads[h] = rng.normal(0.0, 4.0, sum(SIZES))
                wk.push(s.grads[h], SIZES)
        agents = {"PS": Recorder(ps_agent, log, "PS"),
                  **{h: Recorder(a, log, h) for h, a in wk_agents.items()}}
        rep = run_on_fabric(s.fabric, agents, 120.0, loss=every, duplicate=dups, seed=seed * 10 + rnd)
        lost += rep.lost + rep.duplicated
        if native_path:
            for a in wk_agents.values():
                a.finish()
        assert s.all_done()
        for h, wk in s.workers.items():
            assert np.array_equal(wk.result_fixed(), s.expected_fixed(wk.job_id)), (mode, rnd, h)
        results.append({h: wk.result_fixed() for h, wk in s.workers.items()})
    if native_path:
        ps_agent.finish()
        # the C side did the common case; the uncommon went to the Python cores
        w_native = sum(a.native_frames for a in wk_agents.values())
        assert w_native > 0 and (ps_agent.native_frames > 0 or mode != "atp")
        if loss:
            assert sum(a.python_frames for a in wk_agents.values()) + ps_agent.python_frames > 0
        elif mode == "goat":
            assert sum(a.python_frames for a in wk_agents.values()) == ps_agent.python_frames == 0
    stats = (dict(s.ps.stats.received), s.ps.stats.results_sent, s.ps.stats.results_resent, s.ps.stats.reminders,
             s.ps.stats.queries, s.ps.stats.completed, s.ps.stats.results_relayed,
             {h: wk.stats for h, wk in s.workers.items()}, sorted(s.ps._entries), sorted(s.ps._open))
    ps_results = {k: (None if e.result is None else e.result.tolist(), e.overflow) for k, e in s.ps._entries.items()}
    return log, results, stats, ps_results, lost


@pytest.mark.parametrize("mode", ["goat", "atp", "esa"])
@pytest.mark.parametrize("loss,dup,seed", [(0.0, 0.0, 1), (0.05, 0.05, 2), (0.12, 0.1, 3)])
def test_fabric_native_and_python_cores_emit_the_same_frames(mode: str, loss: float, dup: float, seed: int) -> None:
    py = _fabric_run(mode, False, loss, dup, seed)
    nat = _fabric_run(mode, True, loss, dup, seed)
    assert len(py[0]) == len(nat[0])
    for a, b in zip(py[0], nat[0]):
        assert a == b
    for a, b in zip(py[1], nat[1]):
        assert a.keys() == b.keys() and all(np.array_equal(a[h], b[h]) for h in a)
    assert py[2] == nat[2]
    assert py[3] == nat[3]
    if loss:
        assert py[4] > 0 and py[2][0] != {}       # losses happened and reached the PS's recovery


@pytest.mark.parametrize("mode", ["goat", "esa"])
def test_relayed_results_native_and_python_cores_emit_the_same_frames(mode: str) -> None:
    """Results the PS relays through S3 (RELAY, node 3) reach the workers, exact under loss
    and duplication; C's workers take them as the PS's, as Python's do."""
    py = _fabric_run(mode, False, 0.12, 0.1, 3, relay=True)
    nat = _fabric_run(mode, True, 0.12, 0.1, 3, relay=True)
    assert py[0] == nat[0] and py[2] == nat[2] and py[3] == nat[3]
    assert py[2][6] > 0                                   # results_relayed

@pytest.mark.parametrize("mode", ["goat", "atp"])
@pytest.mark.parametrize("recovery", [0, 1])
def test_recovery_bound_native_and_python_cores_emit_the_same_frames(mode: str, recovery: int) -> None:
    """Retransmitted fragments beyond the recovery bound hold window slots again, in C as in
    Python (0: every one does)."""
    py = _fabric_run(mode, False, 0.12, 0.1, 3, recovery=recovery)
    nat = _fabric_run(mode, True, 0.12, 0.1, 3, recovery=recovery)
    assert py[0] == nat[0] and py[2] == nat[2] and py[3] == nat[3]
    assert py[0] != _fabric_run(mode, False, 0.12, 0.1, 3)[0]     # the bound changed what was sent


def test_a_switch_result_of_a_resent_fragment_samples_its_path_in_c_as_in_python() -> None:
    """A sub-model path's srtt learnt too short: RACK resends its first copies before their
    results; a switch's result answers the first copy, so it is sampled while no first copy of
    the sub-model sent after it was answered unretransmitted — the C core as the Python one."""
    wip = "10.0.0.2"

    def result(sub: int, frag: int, node: int) -> bytes:
        h = P.InaHeader(5, node, sub, frag, 255, 4, 4, 0, 0b1111, P.Flags.RESULT)
        return P.build_frame(h, np.full(64, frag + 1, np.int32), src_ip="10.0.9.1", dst_ip=wip)

    def run(native_path: bool) -> tuple:
        wk = Worker(5, 1, "10.0.9.1", wip, [FragmentLabel(2, 4), FragmentLabel(3, 4)], lanes=64, window=3,
                    rto=RtoEstimator(initial=0.01, minimum=0.001, maximum=0.05))
        wk.push(np.zeros(6 * 64), [3 * 64, 3 * 64])
        wk._path_srtt, wk._path_rttvar = [0.0005, 0.002], [0.0, 0.0]     # sub-model 0's too short
        a: Any = native.NativeWorker(wk) if native_path else wk
        # B0 answered within sub-model 0's srtt (A0 and A1 not presumed lost yet), B1 after it
        out = [a.start(0.0), a.on_frame(result(1, 0, 3), 0.0004), a.on_frame(result(1, 1, 3), 0.003),
               a.on_timer(0.003),                                   # RACK: sub-model 0's 0 and 1
               a.on_frame(result(0, 0, 2), 0.004),                  # sampled: 4 ms
               a.on_frame(result(0, 2, 2), 0.0045),                 # sent at 0.003, not resent: 1.5 ms
               a.on_frame(result(0, 1, 2), 0.005)]                  # not: a later one was answered in time
        if native_path:
            a.finish()
        return out, wk._path_srtt, wk._path_rttvar, wk.stats
    py, nat = run(False), run(True)
    assert py == nat
    assert py[3].resent == 2
    assert py[1][0] == pytest.approx(0.875 * (0.875 * 0.0005 + 0.125 * 0.004) + 0.125 * 0.0015)


# ---------------------------------------------------------------------- node 0, reordering
def _simulate(agents: dict[str, Any], rng: random.Random, loss: float, dup: float, done: Any, log: list) -> None:
    """Deliver every frame to the agent at its IPv4 destination after a random delay (so frames
    overtake each other), dropping or duplicating some; fire the agents' timers."""
    q: list = []
    seq = 0

    def send(t: float, frames: list[bytes]) -> None:
        nonlocal seq
        for f in frames:
            copies = 0 if rng.random() < loss else (2 if rng.random() < dup else 1)
            for _ in range(copies):
                seq += 1
                heapq.heappush(q, (t + rng.uniform(1e-5, 2e-3), seq, P.int_to_ip(int.from_bytes(f[30:34], "big")), f))

    now = 0.0
    for name, a in agents.items():
        out = a.start(now)
        log.append((name, "start", out))
        send(now, out)
    while not done():
        deadlines = [(d, name) for name, a in agents.items() if (d := a.next_deadline()) is not None]
        t_frame = q[0][0] if q else float("inf")
        t_timer, who = min(deadlines) if deadlines else (float("inf"), None)
        assert min(t_frame, t_timer) < 100.0, "stalled"
        if t_frame <= t_timer:
            now, _, dst, f = heapq.heappop(q)
            if dst in agents:
                out = agents[dst].on_frame(f, now)
                log.append((dst, "frame", now, out))
                send(now, out)
        else:
            now = t_timer
            out = agents[who].on_timer(now)
            log.append((who, "timer", now, out))
            send(now, out)


def _want(grads: list[np.ndarray], sizes: list[int], k: int) -> np.ndarray:
    offs = np.cumsum([0, *sizes])
    return sum(np.concatenate([P.encode_fragments(g[o:o + s], None, 16, k).reshape(-1)[:s]
                               for o, s in zip(offs, sizes)]).astype(np.int64) for g in grads)


def _node0_run(native_path: bool, n_workers: int, seed: int, loss: float, dup: float, rounds: int = 3,
               scale: float = 8.0) -> tuple:
    """Workers and a PS of a no-switch job (node 0) on a simulated network that drops,
    duplicates and reorders (random per-frame delays), with the agents' timers. ``scale``: the
    gradients' standard deviation (large ones saturate the sums: OVERFLOW results)."""
    k, ps_ip = 16, "10.0.9.1"
    ips = [f"10.0.0.{w + 1}" for w in range(n_workers)]
    rto = dict(initial=0.004, minimum=0.002, maximum=0.05)
    ps = ParameterServer(ps_ip, {3: JobConfig({w: (ips[w], 0) for w in range(n_workers)})}, lanes=k,
                         timeout=RtoEstimator(**rto))
    wks = [Worker(3, w, ps_ip, ips[w], {0: FragmentLabel(0, n_workers), 1: FragmentLabel(0, n_workers, 9)},
                  lanes=k, window=5, rto=RtoEstimator(**rto)) for w in range(n_workers)]
    agents: dict[str, Any] = {ps_ip: native.NativePs(ps) if native_path else ps}
    for w, wk in zip(wks, ips):
        agents[wk] = native.NativeWorker(w) if native_path else w
    rng = random.Random(seed)
    grng = np.random.default_rng(seed)
    log: list = []
    sizes = [150, 77]
    for rnd in range(rounds):
        grads = [np.clip(grng.normal(0, scale, sum(sizes)), -30000, 30000) for _ in wks]
        for w, g in zip(wks, grads):
            if native_path:
                agents[w.ip].finish()
            w.push(g, sizes)
        _simulate(agents, rng, loss, dup, lambda: all(a.done() for a in list(agents.values())[1:]), log)
        want = np.clip(_want(grads, sizes, k), -2**31, 2**31 - 1)       # the PS saturates, as a switch would
        for w in wks:
            if native_path:
                agents[w.ip].finish()
            assert np.array_equal(w.result_fixed(), want), (rnd, w.worker_id)
    if native_path:
        agents[ps_ip].finish()
        assert agents[ps_ip].native_frames > 0 and all(agents[w.ip].native_frames > 0 for w in wks)
        assert agents[ps_ip].python_frames > 0 or not loss       # RESENDs go to the Python core
    return log, dict(ps.stats.received), ps.stats.completed, [w.stats for w in wks], sorted(ps._entries)


@pytest.mark.parametrize("n_workers,seed,loss,dup,scale", [(2, 1, 0.0, 0.0, 8.0), (2, 2, 0.1, 0.1, 8.0),
                                                           (3, 3, 0.05, 0.2, 8.0), (3, 4, 0.2, 0.05, 8.0),
                                                           (3, 5, 0.1, 0.0, 20000.0)])
def test_node0_loss_duplication_reordering_same_frames(n_workers: int, seed: int, loss: float, dup: float,
                                                       scale: float) -> None:
    py = _node0_run(False, n_workers, seed, loss, dup, scale=scale)
    nat = _node0_run(True, n_workers, seed, loss, dup, scale=scale)
    if scale > 10000:
        assert all(st.overflowed for st in py[3])             # saturated sums came back flagged
    assert len(py[0]) == len(nat[0])
    for a, b in zip(py[0], nat[0]):
        assert a == b
    assert py[1:] == nat[1:]
    if loss:
        assert py[1].get("resend", 0) > 0


def _group_run(native_path: bool, seed: int, loss: float, dup: float) -> tuple:
    """Two jobs (3 and 4), each with its own PS, on the same two hosts: each host one
    WorkerGroup (InArt's split job), over the reordering network of ``_simulate``."""
    k, hosts = 8, ["10.0.0.1", "10.0.0.2"]
    rto = dict(initial=0.004, minimum=0.002, maximum=0.05)
    pss = {job: ParameterServer(f"10.0.9.{job}", {job: JobConfig({w: (hosts[w], 0) for w in range(2)})}, lanes=k,
                                timeout=RtoEstimator(**rto)) for job in (3, 4)}
    groups = [WorkerGroup([Worker(job, w, f"10.0.9.{job}", hosts[w], [FragmentLabel(0, 2)], lanes=k, window=4,
                                  rto=RtoEstimator(**rto)) for job in (3, 4)]) for w in range(2)]
    grng = np.random.default_rng(seed)
    grads = {(job, w): grng.normal(0, 3.0, 90 + 10 * job) for job in (3, 4) for w in range(2)}
    for w, g in enumerate(groups):
        for job, wk in g.workers.items():
            wk.push(grads[job, w])
    agents: dict[str, Any] = {f"10.0.9.{job}": native.NativePs(ps) if native_path else ps for job, ps in pss.items()}
    for h, g in zip(hosts, groups):
        agents[h] = native.NativeGroup(g) if native_path else g
    log: list = []
    _simulate(agents, random.Random(seed), loss, dup, lambda: all(agents[h].done() for h in hosts), log)
    for h in hosts:
        if native_path:
            agents[h].finish()
    for ip in ("10.0.9.3", "10.0.9.4"):
        if native_path:
            agents[ip].finish()
    for job in (3, 4):
        want = _want([grads[job, 0], grads[job, 1]], [90 + 10 * job], k)
        assert all(np.array_equal(g.workers[job].result_fixed(), want) for g in groups)
    return log, [dict(ps.stats.received) for ps in pss.values()], [wk.stats for g in groups for wk in g.workers.values()]


@pytest.mark.parametrize("seed,loss,dup", [(1, 0.0, 0.0), (2, 0.1, 0.1)])
def test_worker_group_native_and_python_same_frames(seed: int, loss: float, dup: float) -> None:
    py = _group_run(False, seed, loss, dup)
    nat = _group_run(True, seed, loss, dup)
    assert len(py[0]) == len(nat[0]) and all(a == b for a, b in zip(py[0], nat[0]))
    assert py[1:] == nat[1:]


# ---------------------------------------------------------------------- encoding
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
def test_push_encodes_the_same_frames_natively(dtype: type) -> None:
    rng = np.random.default_rng(5)
    g = (rng.normal(0, 100.0, 1000) if dtype != np.int16 else rng.integers(-3000, 3000, 1000)).astype(dtype)
    g[:3] = [0.5, 1.5, -2.5] if dtype != np.int16 else [1, 2, 3]      # ties round to even, as np.rint
    labels = [FragmentLabel(3, 4, 7), FragmentLabel(0, 4), FragmentLabel(9, 2, 200)]
    sizes = [130, 0, 870]
    labels_map = {0: labels[0], 2: labels[2]}
    a = Worker(2, 5, "10.0.0.9", "10.0.0.1", labels_map, lanes=32, scale_bits=12, native=False, mac=7, gateway_mac=9)
    b = Worker(2, 5, "10.0.0.9", "10.0.0.1", labels_map, lanes=32, scale_bits=12, native=True, mac=7, gateway_mac=9)
    a.push(g, sizes, round=4)
    b.push(g, sizes, round=4)
    assert a._cur.wire == b._cur.wire and len(a._cur.wire) == len(a._cur) * (42 + 24 + 128)


@pytest.mark.parametrize("scale_bits", [0, 7, 16, 30])
def test_float32_edges_encode_as_numpy_does(scale_bits: int) -> None:
    """The vectorized float32 path against numpy's rint on the values where float32 rounding,
    int32's range and the SIMD tail could go wrong; a fragment it refuses is redone exactly."""
    if not native.available():
        pytest.skip(f"no native data path: {native.unavailable_reason()}")
    top = 2.0 ** (31 - scale_bits)
    edges = [0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, 1e-45, -1e-45, 1e-38, 3.0e38, -3.0e38,
             np.nextafter(np.float32(top), np.float32(0)), -top, np.float32(top) / 2 + 0.5, 0.49999997]
    rng = np.random.default_rng(scale_bits)
    g = np.concatenate([np.array(edges * 3, dtype=np.float32), rng.normal(0, top / 8, 301).astype(np.float32)])
    sizes = [g.size]
    tpl = P.header_array(1, job_id=3, node_id=1, submodel_id=0, fragment_id=0, worker_id=0, fan_in=2, bitmap=1,
                         round=1)
    for clip in (True, False):
        for lanes in (13, 16):
            pre = P.frame_prefix("10.0.0.2", "10.0.0.1", 0, 0, P.INA_UDP_PORT, 64, P.HEADER_LEN + 4 * lanes)
            got = native.encode_round(g, sizes, scale_bits, lanes, clip, tpl, pre)
            try:
                want = P.build_frames(P.header_array(-(-g.size // lanes), job_id=3, node_id=1, submodel_id=0,
                                                     fragment_id=np.arange(-(-g.size // lanes)), worker_id=0,
                                                     fan_in=2, bitmap=1, round=1),
                                      P.encode_fragments(g, sizes, scale_bits, lanes, clip),
                                      src_ip="10.0.0.2", dst_ip="10.0.0.1")
            except P.ProtocolError:
                assert got is None and not clip
                continue
            assert got == want


def test_push_errors_are_the_python_paths() -> None:
    for native_path in (False, True):
        wk = Worker(2, 1, "10.0.0.9", "10.0.0.1", [FragmentLabel(1, 2)], lanes=8, native=native_path)
        with pytest.raises(P.ProtocolError, match="overflows int32"):
            wk.push(np.array([1.0, 1e9]))
        with pytest.raises(P.ProtocolError, match="finite"):
            wk.push(np.array([np.nan, 1.0]))
        clip = Worker(2, 1, "10.0.0.9", "10.0.0.1", [FragmentLabel(1, 2)], lanes=8, native=native_path, clip=True)
        clip.push(np.array([1e9, -1e9, 2.0]))
        assert P.parse_frame(clip._cur.frame(0), 8).lanes[:3].tolist() == [2**31 - 1, -2**31, 2 << 16]
        bad = Worker(2, 1, "10.0.0.9", "10.0.0.1", [FragmentLabel(70000, 2)], lanes=8, native=native_path)
        with pytest.raises(P.ProtocolError, match="node_id=70000"):
            bad.push(np.ones(3))


# ---------------------------------------------------------------------- build
def test_cache_key_is_the_source_not_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INAHOST_CACHE_DIR", str(tmp_path / "cache"))
    first = native.build()
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    for name in library.SOURCES:
        shutil.copy(library.SOURCE_DIR / name, copy / name)
    monkeypatch.setattr(library, "SOURCE_DIR", copy)
    assert native.build() == first and first.parent == tmp_path / "cache"
    (copy / "ps.c").write_text((copy / "ps.c").read_text() + "\n/* changed */\n")
    assert native.build() != first


def test_every_c_file_beside_the_package_is_built() -> None:
    """The two builds (the data path, and AF_XDP against libxdp) compile the C files they list:
    none is left out (nor a stale one kept), and only the AF_XDP one needs libxdp."""
    from hostlib.native import xdp
    here = {p.name for p in library.SOURCE_DIR.iterdir() if p.suffix in (".c", ".h")}
    assert here == set(library.SOURCES) | set(xdp.SOURCES) and library.GENERATED_HEADER not in here
    assert "xdp.c" not in library.SOURCES


def test_the_library_has_every_shared_constant_as_python_does() -> None:
    """The C's constants come from constants.h, generated from the Python values: the library
    reports each as it was compiled, and every one equals Python's (names included)."""
    got = library.library_constants(native.load())
    want = {**constants.shared_constants(), **constants.system_constants()}
    assert got == want
    assert {"F_RESULT", "FAST_RETRANSMIT_AFTER", "STALE_AFTER", "RETRY_MIN", "EV_GAP", "K_OVERLAP"} <= set(got)
    assert got["STALE_AFTER"] == STALE_AFTER and got["RETRY_MIN"] == RETRY_MIN
    assert got["FAST_RETRANSMIT_AFTER"] == FAST_RETRANSMIT_AFTER and got["F_RETRY"] == P.Flags.RETRY
    assert [got[f"K_{k.upper()}"] for k in constants.KINDS] == list(range(len(constants.KINDS)))


def test_the_c_sources_spell_no_shared_constant() -> None:
    """One source: a shared constant is #defined only in the generated header, never in a C file."""
    import re
    names = set(constants.shared_constants())
    defined = {(p.name, m.group(1)) for p in library.SOURCE_DIR.iterdir() if p.suffix in (".c", ".h")
               for m in re.finditer(r"^\s*#\s*define\s+(\w+)", p.read_text(), re.M) if m.group(1) in names}
    assert not defined


def test_struct_mirrors_match_the_library_field_by_field() -> None:
    """Every field of every mirrored struct at C's offset; two fields of one type swapped (same
    size) are caught, as is a field C does not have."""
    lib = native.load()
    assert structs.layout_mismatches(lib) == []
    assert set(structs.library_layout(lib)) == {m.c_name for m in structs.MIRRORS}

    class SwappedRto(ctypes.Structure):
        c_name = "Rto"
        _fields_ = [(n, ctypes.c_double) for n in ("initial", "minimum", "maximum", "max_backoff", "rttvar", "srtt")]
        _fields_ += [("has_srtt", ctypes.c_int64)]

    class RenamedRto(ctypes.Structure):
        c_name = "Rto"
        _fields_ = [(n, ctypes.c_double) for n in ("initial", "minimum", "maximum", "max_backoff", "srtt", "var")]
        _fields_ += [("has_srtt", ctypes.c_int64)]

    assert ctypes.sizeof(SwappedRto) == ctypes.sizeof(structs.CRto)
    assert structs.layout_mismatches(lib, [SwappedRto]) == ["Rto.rttvar: at 40 in C, at 32 in ctypes",
                                                           "Rto.srtt: at 32 in C, at 40 in ctypes"]
    assert structs.layout_mismatches(lib, [RenamedRto]) == ["Rto.rttvar: at 40 in C, missing in ctypes",
                                                           "Rto.var: missing in C, at 40 in ctypes"]


def test_concurrent_first_builds_compile_once(tmp_path: Path) -> None:
    code = "from hostlib import native; print(native.build())"
    env = {**os.environ, "INAHOST_CACHE_DIR": str(tmp_path / "c")}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env,
                              cwd=Path(__file__).resolve().parents[2]) for _ in range(3)]
    outs = {p.communicate(timeout=300)[0].strip() for p in procs}
    assert len(outs) == 1 and all(p.returncode == 0 for p in procs)
    assert [f.name for f in (tmp_path / "c").iterdir() if f.suffix == ".so"] == [Path(outs.pop()).name]


def test_without_a_compiler_hostlib_falls_back_to_python(tmp_path: Path) -> None:
    code = ("import logging; logging.basicConfig(level=logging.WARNING)\n"
            "from hostlib import native; from hostlib.drivers import UdpTransport, native_udp\n"
            "from hostlib.worker import Worker, FragmentLabel\n"
            "print(native.available())\n"
            "w = Worker(1, 0, '127.0.0.1', '127.0.0.2', [FragmentLabel(0, 1)], lanes=4); w.push([1.0, 2.0])\n"
            "print(len(w._cur.wire))\n")
    env = {**os.environ, "CC": str(tmp_path / "no-such-cc"), "INAHOST_CACHE_DIR": str(tmp_path / "c")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", str(42 + 24 + 16)]
    assert r.stderr.count("native data path unavailable") == 1 and "no C compiler" in r.stderr


# ---------------------------------------------------------------------- UDP loopback
def _net() -> str:
    return f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"


def _ps_proc(ip: str, ips: list[str], ready: Any, stop: Any, q: Any) -> None:
    tr = UdpTransport(ip, lanes=16)
    ps = ParameterServer(ip, {4: JobConfig({w: (a, 0) for w, a in enumerate(ips)})}, lanes=16,
                         timeout=RtoEstimator(initial=0.5, minimum=0.2, maximum=1.0))
    assert native_udp(ps, tr)
    ready.set()
    run_udp(ps, tr, 120.0, stop=stop.is_set)
    q.put(("ps", dict(ps.stats.received), ps.stats.completed, len(ps.incomplete())))
    tr.close()


def _worker_proc(w: int, ip: str, ps_ip: str, n_workers: int, rounds: int, window: int, q: Any) -> None:
    tr = UdpTransport(ip, lanes=16)
    wk = Worker(4, w, ps_ip, ip, [FragmentLabel(0, n_workers)], lanes=16, window=window,
                rto=RtoEstimator(initial=0.5, minimum=0.2, maximum=1.0))
    out = []
    for rnd in range(rounds):
        wk.push(np.random.default_rng(100 * rnd + w).normal(0, 10.0, 20_000))
        assert native_udp(wk, tr)
        if not run_udp(wk, tr, 60.0):
            raise RuntimeError(f"worker {w} round {rnd} timed out")
        out.append(wk.result_fixed())
    q.put(("worker", w, out, wk.stats.sent, tr._native_rings().io.gso))
    tr.close()


# window 256: more fragments than one UDP_SEGMENT send takes (64 or 128 segments, as probed)
@pytest.mark.parametrize("n_workers, window", [(2, 64), (3, 64), (2, 256)])
def test_udp_loopback_allreduce_in_processes_is_exact(n_workers: int, window: int) -> None:
    net = _net()
    ps_ip, ips = f"{net}.1", [f"{net}.{w + 2}" for w in range(n_workers)]
    ctx = mp.get_context("fork")
    ready, stop, q = ctx.Event(), ctx.Event(), ctx.Queue()
    rounds = 3
    procs = [ctx.Process(target=_ps_proc, args=(ps_ip, ips, ready, stop, q))]
    procs[0].start()
    assert ready.wait(60)
    procs += [ctx.Process(target=_worker_proc, args=(w, ips[w], ps_ip, n_workers, rounds, window, q))
              for w in range(n_workers)]
    for p in procs[1:]:
        p.start()
    try:
        reports = [q.get(timeout=120) for _ in range(n_workers)]
        stop.set()
        reports.append(q.get(timeout=60))
    finally:
        stop.set()
        for p in procs:
            p.join(30)
    frags = -(-20_000 // 16)
    for rnd in range(rounds):
        want = sum(P.encode_fragments(np.random.default_rng(100 * rnd + w).normal(0, 10.0, 20_000), None, 16, 16)
                   .reshape(-1)[:20_000].astype(np.int64) for w in range(n_workers))
        for r in reports[:-1]:
            assert np.array_equal(r[2][rnd], want), (rnd, r[1])
    # segments per UDP_SEGMENT send: 0 without GSO (INAHOST_GSO=0), else what the kernel takes
    assert {r[4] for r in reports[:-1]} <= {0, 64, 128}
    ps = reports[-1]
    assert ps[2] == rounds * frags and ps[3] == 0
    assert ps[1].get("plain", 0) == rounds * frags * n_workers


@contextlib.contextmanager
def _c_worker_beside_a_socket(rto: float, values: int, run_for: float) -> Iterator[tuple[Worker, Any, str]]:
    """A worker (job 4, one sub-model of node 0, window 2, 16 lanes) run by the C loop on a
    thread over real UDP, and a plain socket standing in for its PS: (worker, socket, its IP)."""
    import socket
    import threading
    net = _net()
    ps_ip, ip = f"{net}.1", f"{net}.2"
    require_loopback_udp(ps_ip, ip)
    ps_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ps_sock.bind((ps_ip, P.INA_UDP_PORT))
    tr = UdpTransport(ip, lanes=16)
    ps_sock.settimeout(5.0)
    wk = Worker(4, 1, ps_ip, ip, [FragmentLabel(0, 2)], lanes=16, window=2,
                rto=RtoEstimator(initial=rto, minimum=rto, maximum=rto))
    wk.push(np.arange(values, dtype=float))
    assert native_udp(wk, tr)
    t = threading.Thread(target=run_udp, args=(wk, tr, run_for))
    t.start()
    try:
        yield wk, ps_sock, ip
    finally:
        t.join(10)
        tr.close()
        ps_sock.close()


def test_the_native_loop_answers_a_header_only_query() -> None:
    """The PS's query comes without lanes (docs/protocol.md): the C receive loop hands it to the
    Python core, which answers with the worker's RESEND of that fragment, over real UDP."""
    with _c_worker_beside_a_socket(5.0, 64, 3.0) as (wk, ps_sock, ip):
        firsts = [ps_sock.recvfrom(4096)[0] for _ in range(2)]          # the window's first copies
        assert [P.InaHeader.unpack(f[:24]).fragment_id for f in firsts] == [0, 1]
        query = P.InaHeader(4, 0, 0, 1, 1, 0, 0, 0, 0, P.Flags.REMINDER, 0)
        ps_sock.sendto(query.pack(), (ip, P.INA_UDP_PORT))                # 24 bytes: no lanes
        answer = ps_sock.recvfrom(4096)[0]
        h = P.InaHeader.unpack(answer[:24])
        assert (h.fragment_id, h.flags, h.node_id, h.bitmap) == (1, P.Flags.RESEND, 0, 0b10)
        assert answer[24:] == firsts[1][24:] and wk.stats.queries_answered == 1


def test_the_native_loop_asks_with_the_header_alone() -> None:
    """A fragment of node 0 that times out is asked for (docs/protocol.md): the C loop sends
    the INA header alone, RESEND with count 0, over real UDP; the results end the round."""
    with _c_worker_beside_a_socket(0.05, 32, 5.0) as (wk, ps_sock, ip):
        firsts = [ps_sock.recvfrom(4096)[0] for _ in range(2)]          # the window's first copies
        ask = ps_sock.recvfrom(4096)[0]                                 # fragment 0's probe
        h = P.InaHeader.unpack(ask[:24])
        assert len(ask) == 24
        assert (h.fragment_id, h.flags, h.node_id, h.count, h.bitmap) == (0, P.Flags.RESEND, 0, 0, 0b10)
        assert replace(h, flags=P.Flags(0), count=1) == P.InaHeader.unpack(firsts[0][:24])
        for frag in (0, 1):
            res = P.InaHeader(4, 0, 0, frag, 255, 2, 2, 0, 0b11, P.Flags.RESULT, 0)
            ps_sock.sendto(res.pack() + np.zeros(16, ">i4").tobytes(), (ip, P.INA_UDP_PORT))
    assert wk.done() and wk.stats.resent >= 1


def test_counting_transport_keeps_its_counts_under_the_native_loop() -> None:
    """A subclass that counts frames in ``counts`` (emulation.agents.CountingTransport) runs
    the C loop, which keeps the counts."""

    class Counting(UdpTransport):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            self.counts = {"tx_packets": 0, "tx_bytes": 0, "rx_packets": 0, "rx_bytes": 0}

        def send_many(self, frames: Any) -> None:
            frames = list(frames)
            super().send_many(frames)
            self.counts["tx_packets"] += len(frames)

    k, net = 8, _net()
    trs = [Counting(f"{net}.1", lanes=k), Counting(f"{net}.2", lanes=k)]
    wk = Worker(2, 0, f"{net}.2", f"{net}.1", [FragmentLabel(0, 1)], lanes=k, window=4,
                rto=RtoEstimator(initial=0.5, minimum=0.2, maximum=1.0))
    wk.push(np.arange(10 * k, dtype=float))
    ps = ParameterServer(f"{net}.2", {2: JobConfig({0: (f"{net}.1", 0)})}, lanes=k,
                         timeout=RtoEstimator(initial=0.5, minimum=0.2, maximum=1.0))
    assert native_udp(wk, trs[0]) and native_udp(ps, trs[1])
    import threading
    t = threading.Thread(target=run_udp, args=(ps, trs[1], 10.0, wk.done))
    t.start()
    try:
        assert run_udp(wk, trs[0], 10.0)
    finally:
        t.join(15)
        for tr in trs:
            tr.close()
    flen = 42 + 24 + 4 * k
    assert trs[0].counts == {"tx_packets": 10, "tx_bytes": 10 * flen, "rx_packets": 10, "rx_bytes": 10 * flen}
    assert trs[1].counts == trs[0].counts
    assert np.array_equal(wk.result_fixed(), (np.arange(10 * k) * 65536).astype(np.int64))


def test_worker_groups_over_udp_loopback_are_exact() -> None:
    """Two jobs with a PS each, two hosts each running one WorkerGroup on one socket (the C
    loop of a group), in threads; three rounds."""
    import threading
    k, net = 16, _net()
    ps_ips, hosts = {3: f"{net}.3", 4: f"{net}.4"}, [f"{net}.1", f"{net}.2"]
    rto = dict(initial=0.5, minimum=0.2, maximum=1.0)
    trs = {ip: UdpTransport(ip, lanes=k) for ip in [*ps_ips.values(), *hosts]}
    pss = {job: ParameterServer(ip, {job: JobConfig({w: (hosts[w], 0) for w in range(2)})}, lanes=k,
                                timeout=RtoEstimator(**rto)) for job, ip in ps_ips.items()}
    groups = [WorkerGroup([Worker(job, w, ps_ips[job], hosts[w], [FragmentLabel(0, 2)], lanes=k, window=32,
                                  rto=RtoEstimator(**rto)) for job in (3, 4)]) for w in range(2)]
    assert all(native_udp(g, trs[h]) for g, h in zip(groups, hosts))
    stop = threading.Event()
    ps_threads = [threading.Thread(target=run_udp, args=(pss[j], trs[ip], 60.0, stop.is_set)) for j, ip in ps_ips.items()]
    for t in ps_threads:
        t.start()
    results: dict = {}

    def host(w: int) -> None:
        for rnd in range(3):
            for job, wk in groups[w].workers.items():
                wk.push(np.random.default_rng(1000 * rnd + 10 * job + w).normal(0, 5.0, 3000 + job))
            assert run_udp(groups[w], trs[hosts[w]], 30.0)
            results[w, rnd] = {job: wk.result_fixed() for job, wk in groups[w].workers.items()}

    threads = [threading.Thread(target=host, args=(w,)) for w in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        stop.set()
        for t in ps_threads:
            t.join(30)
        for tr in trs.values():
            tr.close()
    for rnd in range(3):
        for job in (3, 4):
            gs = [np.random.default_rng(1000 * rnd + 10 * job + w).normal(0, 5.0, 3000 + job) for w in range(2)]
            want = _want(gs, [3000 + job], k)
            assert all(np.array_equal(results[w, rnd][job], want) for w in range(2)), (rnd, job)
    assert all(ps.stats.completed == 3 * -(-(3000 + j) // k) for j, ps in pss.items())


@pytest.mark.parametrize("k", [1, 1024])
def test_udp_loopback_with_few_and_many_lanes(k: int) -> None:
    """GSO batches stay under 64 KiB a send whatever the frame size (1024 lanes: 4 KiB frames)."""
    import threading
    net = _net()
    rto = dict(initial=0.5, minimum=0.2, maximum=1.0)
    trs = [UdpTransport(f"{net}.{i}", lanes=k) for i in (1, 2, 3)]
    ps = ParameterServer(trs[0].ip, {5: JobConfig({0: (trs[1].ip, 0), 1: (trs[2].ip, 0)})}, lanes=k,
                         timeout=RtoEstimator(**rto))
    wks = [Worker(5, w, trs[0].ip, trs[1 + w].ip, [FragmentLabel(0, 2)], lanes=k, window=100, rto=RtoEstimator(**rto))
           for w in range(2)]
    grads = [np.random.default_rng(w).normal(0, 2.0, 150 * k + 3) for w in range(2)]
    for wk, g in zip(wks, grads):
        wk.push(g)
    done = lambda: all(wk.done() for wk in wks)          # noqa: E731
    threads = [threading.Thread(target=run_udp, args=(ps, trs[0], 30.0, done))]
    threads += [threading.Thread(target=run_udp, args=(wk, trs[1 + i], 30.0)) for i, wk in enumerate(wks)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(40)
    finally:
        for tr in trs:
            tr.close()
    want = _want(grads, [150 * k + 3], k)
    assert all(wk.done() and np.array_equal(wk.result_fixed(), want) for wk in wks)
    assert sum(wk.stats.resent for wk in wks) == 0


def test_a_result_presumes_lost_the_sub_models_of_its_node_in_c_as_in_python() -> None:
    """Two of three sub-models share node 2: a switch's result of one presumes the other's
    overtaken fragments lost (no resend at once), not the third sub-model's; a later result of
    its own sub-model fast-retransmits (a RETRY) — the C core as the Python one."""
    wip = "10.0.0.2"

    def result(sub: int, frag: int, node: int) -> bytes:
        h = P.InaHeader(5, node, sub, frag, 255, 4, 4, 0, 0b1111, P.Flags.RESULT)
        return P.build_frame(h, np.full(64, frag + 1, np.int32), src_ip="10.0.9.1", dst_ip=wip)

    def run(native_path: bool) -> tuple:
        wk = Worker(5, 1, "10.0.9.1", wip, [FragmentLabel(2, 4), FragmentLabel(3, 4), FragmentLabel(2, 4)],
                    lanes=64, window=6, rto=RtoEstimator(initial=0.01, minimum=0.001, maximum=0.05))
        wk.push(np.zeros(6 * 64), [2 * 64, 2 * 64, 2 * 64])
        a: Any = native.NativeWorker(wk) if native_path else wk
        out = [a.start(0.0), a.on_frame(result(2, 0, 2), 0.001), a.on_frame(result(0, 1, 2), 0.002)]
        if native_path:
            a.finish()
        return out, wk.stats, wk._later_results, wk._recovering
    py, nat = run(False), run(True)
    assert py == nat
    # sent A0 B0 C0 A1 B1 C1: C0's result presumes A0 lost (no resend); A1's (same sub-model)
    # then resends it; B0 (node 3) is left alone
    assert py[0][1] == [] and py[2][1] == 0
    retx = [(h.submodel_id, h.fragment_id, h.flags) for f in py[0][1] + py[0][2]
            for h in [P.parse_frame(f, 64).header] if h.flags]
    assert retx == [(0, 0, P.Flags.RETRY)] and py[1].fast_resent == 1


@pytest.mark.parametrize("kind", ["resend", "ask"])
@pytest.mark.parametrize("relay", [False, True])
def test_resends_of_completed_fragments_are_answered_in_c_as_in_python(relay: bool, kind: str) -> None:
    """RESENDs or asks of a fragment the PS completed: one that crossed the result (sent within
    the query round trip after it) is dropped, a later one gets the result again; with a
    relaying node, the first worker's gets it alone, a second worker's the relay again. C
    answers them itself (no hand-off), with the frames and counters of the Python core."""
    ips = ["10.0.0.2", "10.0.0.3", "10.0.0.4"]
    cfg = JobConfig({w: (ip, 0) for w, ip in enumerate(ips)}, reminder_via={3: "10.0.7.7"} if relay else {},
                    result_via=3 if relay else 0)

    def frame(w: int, frag: int, flags: P.Flags, rnd: int = 2) -> bytes:
        h = P.InaHeader.for_worker(4, 0, 0, frag, w, 3, flags=flags, round=rnd)
        if flags and kind == "ask":
            return P.build_header_only(replace(h, count=0), src_ip=ips[w], dst_ip="10.0.9.1")
        return P.build_frame(h, np.full(16, 1000 * (w + 1) + frag, np.int32), src_ip=ips[w], dst_ip="10.0.9.1")

    def run(native_path: bool) -> tuple:
        ps = ParameterServer("10.0.9.1", {4: cfg}, lanes=16, timeout=RtoEstimator(initial=1.0, minimum=0.5))
        ps.query_rtt.sample(0.2)
        a: Any = native.NativePs(ps) if native_path else ps
        out = [a.on_frame(frame(w, f, P.Flags(0)), 0.0) for f in range(2) for w in range(3)]   # both complete
        out += [a.on_frame(frame(1, 0, P.Flags.RESEND), 0.1),          # crossed the result
                a.on_frame(frame(1, 0, P.Flags.RESEND), 0.5),          # lost it: again
                a.on_frame(frame(2, 0, P.Flags.RESEND), 0.6),          # a second worker: relay again
                a.on_frame(frame(0, 1, P.Flags.RESEND), 0.7),
                a.on_frame(frame(0, 1, P.Flags.RESEND, rnd=0), 0.8)]  # a round before the window: stale
        handed = a.python_frames if native_path else 0
        if native_path:
            a.finish()
        st = ps.stats
        return out, dict(st.received), st.results_resent, st.results_relayed, st.results_sent, handed, \
            {k: (e.relay_state, e.completed_at) for k, e in ps.export_state().entries.items()}
    py, nat = run(False), run(True)
    assert py[:5] == nat[:5] and py[6] == nat[6]
    assert nat[5] == 0                                   # no hand-off: C answered every RESEND
    assert py[1][kind] == 5 and py[1]["crossed"] == 1 and py[1]["stale"] == 1 and py[2] == 3
    assert py[0][6] == [] and len(py[0][7]) == 1
