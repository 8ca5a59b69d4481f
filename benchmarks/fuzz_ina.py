"""Seeded, time-bounded robustness fuzz of the INA programs on p4sim and of p4sim's P4Runtime server.

Data plane: N random and mutated frames go through each INA program (v1model K=64, TNA K=32) on
an in-process p4sim ``Switch`` with jobs installed the way ``tests/dataplane/ina_harness.py``
does it: valid INA frames built with hostlib, then bit flips, truncation, extension, random
header field values (flags, node ids, worker ids, fan-in 0/huge, counts, bitmaps, rounds,
priorities, unknown versions, other job ids) and fully random bytes, on random ingress ports.
Checks per frame:

* ``Switch.process`` never raises: p4sim documents no exception for a bad frame (a frame its
  parser rejects -- too short, a failed ``verify`` -- is dropped, returns ``[]``); any exception
  is a violation;
* no hang: each frame runs under a wall-clock bound (``--frame-timeout``, enforced with
  ``SIGALRM`` in the main thread, measured otherwise);
* every output is a ``(port, bytes)`` pair;
* isolation: a second, "protected" job (job 2 on node 2, whose aggregator pool is disjoint
  from the fuzzed node 1's) has a partial aggregate in the switch before the fuzz; every
  register cell of the aggregator slots holding that partial must be unchanged after it (other
  jobs may claim the free aggregators of node 2: a pool belongs to a node, not to a job).  The protocol has no
  authentication, so a frame claiming job 2 may legitimately touch that partial, and ESA
  preemption (and its priority downgrading) lets a *preemptive* job's frame take or modify
  another job's aggregator by design.  The fuzz therefore never sends a frame that the INA
  parser would read as job 2, nor one of the preemptive fuzz job (3) addressed to node 2: after
  mutation, such a frame's job (node) field is rewritten (``_unclaim``).  Everything else --
  non-preemptive job 1 frames on node 2 (collisions), unknown jobs, results, reminders,
  resends, unknown versions -- is fuzzed and must leave the partial alone.

P4Runtime: ``P4RuntimeServer`` runs in-process on the same program and the raw gRPC stub sends
malformed Write and Read requests built from the program's P4Info and then mutated (random or
off-by-one table / match field / action / param ids, value widths, prefix lengths, masks,
ranges, priorities, update types, atomicity, missing or wrong election id, wrong device id,
register / counter / meter / PRE / digest / unsupported entity kinds, mutated serialized
requests and random bytes that happen to decode as a request).  Every answer must be OK or a
status from the P4Runtime spec's set (INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, OUT_OF_RANGE,
RESOURCE_EXHAUSTED, PERMISSION_DENIED, FAILED_PRECONDITION, UNIMPLEMENTED, or UNKNOWN for a
batch whose per-update ``p4.v1.Error`` codes are themselves in that set) -- never INTERNAL,
never a hang -- and a valid Write and Read must still work afterwards.  A request that runs past
its deadline (10 s) is sent again with ``PATIENCE`` seconds: if it is answered then, it
is counted as "slow" and its status checked like any other (a slow or busy machine is not a
finding); only a server that does not answer within ``PATIENCE`` is stuck.  A
wildcard read of more than LARGE_READ register cells (v1model's agg_lanes has 2^20; p4sim's
pure-Python protobuf answers about 10k cells/s) gets a short deadline instead; running past it
is allowed, but the server must then answer a valid Write and Read at once (found by this fuzz:
the server used to finish such a read, holding its lock for minutes, after the client had gone).

Frame i and request i are generated from ``numpy.random.default_rng([seed, i])``; a violation
prints ``seed`` and the index, and ``--replay-frame I`` / ``--replay-request I`` re-sends just
that one to a fresh switch / server.  Exit status 1 on any violation.

    .venv/bin/python benchmarks/fuzz_ina.py --frames 100000 --seconds 600 --seed 1 --arch both
"""
from __future__ import annotations

import argparse
import signal
import struct
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from controller.ina_tables import InaTables  # noqa: E402
from hostlib.protocol import (HEADER_LEN, INA_UDP_PORT, INA_VERSION, InaHeader,  # noqa: E402
                              build_frame)
from p4sim import Program, Switch, load_program  # noqa: E402

PROGRAMS = {"v1model": (ROOT / "p4src" / "v1model" / "ina.p4", 64),
            "tna": (ROOT / "p4src" / "tna" / "ina.p4", 32)}
FUZZ_JOB, PREEMPT_JOB, PROTECTED_JOB, UNKNOWN_JOB = 1, 3, 2, 4
FUZZ_NODE, PROTECTED_NODE = 1, 2
POOL = 64                              # aggregators per node; node 1: [0, 64), node 2: [64, 128)
WORKERS = 4
PS_IP, PS_PORT = "10.0.1.1", 10
INA_OFF = 14 + 20 + 8                  # where the INA parser finds the header (IPv4 without options)
JOB_OFF, NODE_OFF = INA_OFF + 2, INA_OFF + 4
_PROGRAMS: dict[str, Program] = {}


def program(arch: str) -> Program:
    if arch not in _PROGRAMS:
        _PROGRAMS[arch] = load_program(str(PROGRAMS[arch][0]), arch=arch)
    return _PROGRAMS[arch]


def worker_ip(w: int) -> str:
    return f"10.0.0.{w + 1}"


# ====================================================================== data plane

def make_switch(arch: str) -> Switch:
    """A switch with fuzz job 1 (non-preemptive) and job 3 (preemptive, held until its result
    passes back) on node 1, and the protected job 2 on node 2 with its own pool."""
    sw = Switch(program(arch))
    t = InaTables(sw)
    for w in range(WORKERS):
        t.add_lpm(worker_ip(w), 32, w + 1, dmac=0x020000000000 + w)
    t.add_lpm(PS_IP, 32, PS_PORT, dmac=0x02000000FFFF)
    t.add_node(FUZZ_NODE, pool_base=0, pool_size=POOL)
    t.add_node(PROTECTED_NODE, pool_base=POOL, pool_size=POOL)
    members = [(w + 1, worker_ip(w), 0x020000000000 + w) for w in range(WORKERS)]
    for job, preempt, hold in ((FUZZ_JOB, False, False), (PREEMPT_JOB, True, True), (PROTECTED_JOB, False, False)):
        t.add_job(job, preempt, hold_until_result=hold)
        t.add_result_group(job, members, rid_base=job * 100)
    t.level_to_multicast(FUZZ_JOB, FUZZ_NODE, FUZZ_JOB)
    t.level_to_node(PREEMPT_JOB, FUZZ_NODE, next_node=7, next_fan_in=2)
    t.level_to_ps(PREEMPT_JOB, 7)
    t.add_release(PREEMPT_JOB, FUZZ_NODE, pool_base=0, pool_size=POOL)
    t.level_to_multicast(PROTECTED_JOB, PROTECTED_NODE, PROTECTED_JOB)
    return sw


def protected_partial(sw: Switch, lanes: int) -> None:
    """Worker 0's fragment of job 2 on node 2 (fan-in 4): absorbed, a partial aggregate."""
    for frag in (11, 12, 13):
        h = InaHeader.for_worker(PROTECTED_JOB, PROTECTED_NODE, 5, frag, 0, WORKERS, priority=3, round=9)
        out = sw.process(1, build_frame(h, np.arange(1, lanes + 1, dtype=np.int32) * frag,
                                        src_ip=worker_ip(0), dst_ip=PS_IP))
        assert out == [], "the protected fragment must be absorbed"


def pool_snapshot(sw: Switch, slots: range | list[int] = range(POOL, 2 * POOL)) -> dict[tuple[str, int], Any]:
    """Every register cell of the given aggregator slots (default: node 2's pool): the slot's
    cell of pool-sized registers, and its ``lanes`` cells of registers that much larger."""
    pool_cells = min(r.size for r in sw.registers.values())
    snap = {}
    for name, reg in sw.registers.items():
        per = reg.size // pool_cells
        for slot in slots:
            for i in range(slot * per, (slot + 1) * per):
                snap[(name, i)] = sw.register_read(name, i)
    return snap


def protected_slots(sw: Switch, lanes: int) -> list[int]:
    """Send the protected partial; return the aggregator slots it occupies."""
    empty = pool_snapshot(sw)
    protected_partial(sw, lanes)
    full = pool_snapshot(sw)
    pool_cells = min(r.size for r in sw.registers.values())
    slots = sorted({i // (sw.registers[n].size // pool_cells) for (n, i) in empty if empty[(n, i)] != full[(n, i)]})
    assert len(slots) == 3, slots
    return slots


def _pick(rng: np.random.Generator, choices: tuple[int, ...], bits: int, p_random: float = 0.3) -> int:
    if rng.random() < p_random:
        return int(rng.integers(0, 1 << bits, dtype=np.uint64))
    return int(choices[rng.integers(len(choices))])


def _header_bytes(rng: np.random.Generator) -> bytes:
    """An INA header with any value in every field (struct-packed: no hostlib validation)."""
    worker = _pick(rng, (0, 1, 2, 3, 31, 32, 255), 8)
    version = INA_VERSION if rng.random() < 0.85 else int(rng.integers(0, 16))
    flags = int(rng.integers(0, 256)) if rng.random() < 0.6 else int(rng.choice([0, 1, 2, 4, 8, 16, 32, 64, 128]))
    return struct.pack("!BBHHHIBBBBII", (version << 4) | int(rng.integers(0, 16) if rng.random() < 0.1 else 0),
                       flags,
                       _pick(rng, (FUZZ_JOB, FUZZ_JOB, PREEMPT_JOB, PREEMPT_JOB, UNKNOWN_JOB, 0, 0xFFFF), 16),
                       _pick(rng, (FUZZ_NODE, FUZZ_NODE, PROTECTED_NODE, 7, 0, 0xFFFF), 16),
                       _pick(rng, (0, 1, 5, 0xFFFF), 16),
                       _pick(rng, (0, 1, 7, 11, 12, 0xFFFFFFFF), 32),
                       worker,
                       _pick(rng, (0, 1, 2, WORKERS, 32, 255), 8),
                       _pick(rng, (0, 1, 2, 255), 8),
                       _pick(rng, (0, 1, 3, 128, 255), 8),
                       _pick(rng, (1 << (worker % 32), 0, 0xFFFFFFFF), 32),
                       _pick(rng, (0, 1, 9, 0xFFFFFFFF), 32))


def _lanes(rng: np.random.Generator, k: int) -> np.ndarray:
    r = rng.random()
    if r < 0.2:
        return rng.choice(np.array([0, 1, -1, 2**31 - 1, -2**31], np.int64), size=k).astype(np.int32)
    return rng.integers(-2**31, 2**31, size=k, dtype=np.int64).astype(np.int32)


def _valid_frame(rng: np.random.Generator, k: int) -> bytes:
    w = int(rng.integers(WORKERS))
    h = InaHeader.for_worker(int(rng.choice([FUZZ_JOB, PREEMPT_JOB])), FUZZ_NODE, int(rng.integers(3)),
                             int(rng.integers(16)), w, int(rng.integers(1, WORKERS + 1)),
                             priority=int(rng.integers(4)), round=int(rng.integers(3)))
    return build_frame(h, _lanes(rng, k), src_ip=worker_ip(w), dst_ip=PS_IP,
                       src_mac=0x0A0000000000 + w, dst_mac=0x0B0000000000)


KINDS = ("valid", "fields", "bitflip", "truncate", "extend", "random", "lanes_len", "wrong_port")


def make_frame(seed: int, index: int, k: int) -> tuple[str, int, bytes]:
    """Frame ``index`` of the run with ``seed``: (kind, ingress port, bytes)."""
    rng = np.random.default_rng([seed, index])
    kind = KINDS[int(rng.integers(len(KINDS)))]
    frame = _valid_frame(rng, k)
    if kind == "fields":
        frame = frame[:INA_OFF] + _header_bytes(rng) + frame[INA_OFF + HEADER_LEN:]
    elif kind == "bitflip":
        b = bytearray(frame if rng.random() < 0.5 else frame[:INA_OFF] + _header_bytes(rng) + frame[INA_OFF + HEADER_LEN:])
        for pos in rng.integers(0, len(b) * 8, size=int(rng.integers(1, 9))):
            b[pos >> 3] ^= 1 << int(pos & 7)
        frame = bytes(b)
    elif kind == "truncate":
        frame = frame[:int(rng.integers(0, len(frame)))]
    elif kind == "extend":
        frame = frame + rng.integers(0, 256, size=int(rng.integers(1, 300)), dtype=np.uint8).tobytes()
    elif kind == "random":
        frame = rng.integers(0, 256, size=int(rng.integers(0, 400)), dtype=np.uint8).tobytes()
        if rng.random() < 0.5 and len(frame) >= 38:    # random bytes that reach the INA parser
            b = bytearray(frame)
            b[12:14] = b"\x08\x00"
            b[14] = 0x45
            b[20:22] = b"\x00\x00"
            b[23] = 17
            b[36:38] = struct.pack("!H", INA_UDP_PORT)
            frame = bytes(b)
    elif kind == "lanes_len":       # a valid header with too few / too many lane bytes
        frame = frame[:INA_OFF] + _header_bytes(rng) + frame[INA_OFF + HEADER_LEN:][:int(rng.integers(0, 4 * k + 8))]
    port = int(rng.integers(1, WORKERS + 1))
    if kind == "wrong_port" or rng.random() < 0.05:
        port = int(rng.choice([0, PS_PORT, 511, int(rng.integers(0, 512))]))
    return kind, port, _unclaim(frame)


def _unclaim(frame: bytes) -> bytes:
    """Never job 2, never preemptive job 3 on node 2 (see the module docstring)."""
    if len(frame) < NODE_OFF + 2:
        return frame
    job, node = struct.unpack_from("!HH", frame, JOB_OFF)
    if job == PROTECTED_JOB:
        return frame[:JOB_OFF] + struct.pack("!H", FUZZ_JOB) + frame[JOB_OFF + 2:]
    if job == PREEMPT_JOB and node == PROTECTED_NODE:
        return frame[:NODE_OFF] + struct.pack("!H", FUZZ_NODE) + frame[NODE_OFF + 2:]
    return frame


class FrameTimeout(Exception):
    pass


@dataclass
class Report:
    what: str
    count: int = 0
    seconds: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)

    def violation(self, msg: str) -> None:
        self.violations.append(msg)

    def summary(self) -> str:
        rate = self.count / self.seconds if self.seconds else 0.0
        unit = "frames" if "frames" in self.what else "requests"
        return (f"{self.what}: {self.count} {unit} in {self.seconds:.2f} s = {rate:,.0f} {unit}/s; "
                f"outcomes {dict(sorted(self.outcomes.items()))}; violations {len(self.violations)}")


@contextmanager
def frame_alarm(seconds: float) -> Iterator[Callable[[bool], None]]:
    """Yields ``arm(on)``: arm(True) starts a ``seconds`` SIGALRM bound that raises FrameTimeout,
    arm(False) stops it.  An outer ITIMER_REAL (pytest-timeout's signal method) is suspended
    meanwhile and re-armed with what is left of it afterwards; if it is tighter than
    ``seconds``, or off the main thread, arm does nothing and the outer bound / the measured
    per-frame time is what catches a slow frame."""
    outer = signal.getitimer(signal.ITIMER_REAL)[0]
    if threading.current_thread() is not threading.main_thread() or 0 < outer <= seconds:
        yield lambda on: None
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise FrameTimeout(f"no answer in {seconds} s")
    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, 0)
    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        yield lambda on: signal.setitimer(signal.ITIMER_REAL, seconds if on else 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - t0), 0.001))


def fuzz_frames(arch: str, frames: int, seed: int, seconds: float | None = None,
                frame_timeout: float = 2.0, first: int = 0) -> Report:
    k = PROGRAMS[arch][1]
    rep = Report(f"{arch} frames")
    sw = make_switch(arch)
    slots = protected_slots(sw, k)
    before = pool_snapshot(sw, slots)
    deadline = None if seconds is None else time.perf_counter() + seconds
    max_frame = 0.0

    t0 = time.perf_counter()
    with frame_alarm(frame_timeout) as arm:
        for i in range(first, first + frames):
            if deadline is not None and time.perf_counter() > deadline:
                break
            kind, port, data = make_frame(seed, i, k)
            t1 = time.perf_counter()
            try:
                arm(True)
                try:
                    out = sw.process(port, data)
                finally:
                    arm(False)
            except FrameTimeout:
                rep.outcomes["hang"] += 1
                rep.violation(f"{arch}: hang: frame seed={seed} index={i} ({kind}, port {port}) took over "
                              f"{frame_timeout} s; frame {data.hex()}")
                break           # the switch may be left mid-packet: stop here
            except Exception as e:  # noqa: BLE001 -- any exception is the finding
                rep.outcomes["exception"] += 1
                rep.violation(f"{arch}: frame seed={seed} index={i} ({kind}, port {port}) raised "
                              f"{type(e).__name__}: {e}; frame {data.hex()}")
                continue
            finally:
                dt = time.perf_counter() - t1
                max_frame = max(max_frame, dt)
                rep.count += 1
            if dt > frame_timeout:
                rep.violation(f"{arch}: frame seed={seed} index={i} took {dt:.2f} s")
            if not isinstance(out, list) or not all(
                    isinstance(p, int) and isinstance(d, (bytes, bytearray)) for p, d in out):
                rep.violation(f"{arch}: frame seed={seed} index={i}: output is not [(port, bytes)]: {out!r:.200}")
            rep.outcomes[("dropped", "forwarded")[len(out)] if len(out) < 2 else "replicated"] += 1
    rep.seconds = time.perf_counter() - t0
    after = pool_snapshot(sw, slots)
    changed = [key for key in before if before[key] != after[key]]
    if changed:
        rep.violation(f"{arch}: isolation: {len(changed)} register cells of the protected job's partials (slots {slots}) "
                      f"changed during seed={seed} frames {first}..{first + rep.count - 1}, e.g. "
                      + ", ".join(f"{n}[{i}] {before[(n, i)]} -> {after[(n, i)]}" for n, i in changed[:4]))
    rep.outcomes["max_frame_ms"] = round(max_frame * 1000, 1)
    return rep


# ====================================================================== P4Runtime

_SPEC_CODES = ("OK", "INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "OUT_OF_RANGE", "RESOURCE_EXHAUSTED",
               "PERMISSION_DENIED", "FAILED_PRECONDITION", "UNIMPLEMENTED")
ELECTION = (0, 1)
DEVICE = 1


def _pb():
    import p4sim.p4runtime.server  # noqa: F401  (selects the protobuf backend first)
    from p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc
    return p4runtime_pb2, p4runtime_pb2_grpc, p4data_pb2


class P4rtFixture:
    """A P4RuntimeServer on the INA program, a raw stub and a primary arbitration stream."""

    def __init__(self, arch: str) -> None:
        import grpc
        from p4sim.p4runtime.server import P4RuntimeServer
        pb, pb_grpc, _ = _pb()
        self.arch = arch
        self.srv = P4RuntimeServer(make_switch(arch), device_id=DEVICE)
        port = self.srv.start("127.0.0.1:0")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = pb_grpc.P4RuntimeStub(self.channel)
        import queue
        self._q: queue.Queue = queue.Queue()
        self._stream = self.stub.StreamChannel(iter(self._q.get, None))
        req = pb.StreamMessageRequest()
        req.arbitration.device_id = DEVICE
        req.arbitration.election_id.high, req.arbitration.election_id.low = ELECTION
        self._q.put(req)
        first = next(self._stream)
        assert first.arbitration.status.code == 0, first
        self.p4info = self.srv.p4info

    def close(self) -> None:
        self._q.put(None)
        self._stream.cancel()
        self.channel.close()
        self.srv.stop()


def _rand_bytes(rng: np.random.Generator, n: int) -> bytes:
    return rng.integers(0, 256, size=max(n, 0), dtype=np.uint8).tobytes()


def _width_bytes(rng: np.random.Generator, bits: int) -> bytes:
    n = (bits + 7) // 8
    r = rng.random()
    if r < 0.6:
        v = int(rng.integers(0, 1 << min(bits, 62), dtype=np.uint64)) if bits else 0
        return v.to_bytes(n, "big") if n else b""
    if r < 0.7:
        return b""
    if r < 0.8:
        return b"\x00" * int(rng.integers(1, 4)) + _rand_bytes(rng, n)   # leading zeros: still valid
    return _rand_bytes(rng, int(rng.choice([n + 1, max(n - 1, 0), int(rng.integers(0, 40))])))


def _rand_id(rng: np.random.Generator, valid: list[int]) -> int:
    r = rng.random()
    if valid and r < 0.8:
        return int(rng.choice(valid))
    if valid and r < 0.9:
        return int(rng.choice(valid)) + int(rng.choice([-1, 1, 1 << 24]))  & 0xFFFFFFFF
    return int(rng.integers(0, 1 << 32, dtype=np.uint64))


def _table_entry(rng: np.random.Generator, info: Any, te: Any) -> None:
    tables = list(info.tables)
    tid = _rand_id(rng, [t.preamble.id for t in tables])
    te.table_id = tid
    table = next((t for t in tables if t.preamble.id == tid), tables[int(rng.integers(len(tables)))])
    for mf in table.match_fields:
        if rng.random() < 0.1:
            continue
        m = te.match.add()
        m.field_id = mf.id if rng.random() < 0.9 else _rand_id(rng, [f.id for f in table.match_fields])
        mtype = mf.match_type if rng.random() < 0.85 else int(rng.integers(1, 6))
        if mtype == 2:
            m.exact.value = _width_bytes(rng, mf.bitwidth)
        elif mtype == 3:
            m.ternary.value = _width_bytes(rng, mf.bitwidth)
            m.ternary.mask = _width_bytes(rng, mf.bitwidth)
        elif mtype == 4:
            m.lpm.value = _width_bytes(rng, mf.bitwidth)
            m.lpm.prefix_len = int(rng.choice([0, 1, mf.bitwidth, mf.bitwidth + 1, -1,
                                               int(rng.integers(-2**31, 2**31))]))
        elif mtype == 5:
            m.range.low = _width_bytes(rng, mf.bitwidth)
            m.range.high = _width_bytes(rng, mf.bitwidth)
        else:
            m.optional.value = _width_bytes(rng, mf.bitwidth)
    if rng.random() < 0.05:
        m = te.match.add()      # a duplicate / extra field
        m.field_id = _rand_id(rng, [f.id for f in table.match_fields])
        m.exact.value = _rand_bytes(rng, 2)
    if rng.random() < 0.85:
        aids = [a.id for a in table.action_refs]
        aid = _rand_id(rng, aids)
        actions = {a.preamble.id: a for a in info.actions}
        act = te.action.action
        act.action_id = aid
        params = list(actions[aid].params) if aid in actions else []
        for p in params:
            if rng.random() < 0.1:
                continue
            pm = act.params.add()
            pm.param_id = p.id if rng.random() < 0.9 else _rand_id(rng, [q.id for q in params])
            pm.value = _width_bytes(rng, p.bitwidth)
        if rng.random() < 0.05:
            pm = act.params.add()
            pm.param_id = int(rng.integers(0, 1 << 32, dtype=np.uint64))
            pm.value = _rand_bytes(rng, 3)
    elif rng.random() < 0.3:
        te.action.action_profile_member_id = int(rng.integers(0, 100))
    te.priority = int(rng.choice([0, 0, 1, 10, -1, int(rng.integers(-2**31, 2**31))]))
    if rng.random() < 0.1:
        te.is_default_action = True
    if rng.random() < 0.05:
        te.idle_timeout_ns = int(rng.integers(0, 1 << 40))
    if rng.random() < 0.05:
        te.counter_data.packet_count = int(rng.integers(-5, 5))
    if rng.random() < 0.05:
        te.metadata = _rand_bytes(rng, int(rng.integers(0, 20)))
    if rng.random() < 0.03:
        te.is_const = True


def _p4data(rng: np.random.Generator, d: Any) -> None:
    r = rng.random()
    if r < 0.6:
        d.bitstring = _rand_bytes(rng, int(rng.integers(0, 20)))
    elif r < 0.7:
        d.bool = True
    elif r < 0.8:
        d.struct.members.add().bitstring = _rand_bytes(rng, 4)
    elif r < 0.9:
        d.tuple.members.add().bitstring = _rand_bytes(rng, 4)
    # else: unset


def _entity(rng: np.random.Generator, info: Any, e: Any, for_read: bool) -> None:
    kind = rng.choice(["table_entry"] * 5 + ["register_entry", "counter_entry", "meter_entry",
                                             "direct_counter_entry", "direct_meter_entry",
                                             "packet_replication_engine_entry", "digest_entry",
                                             "action_profile_member", "action_profile_group",
                                             "value_set_entry", "extern_entry", "none"])
    if kind == "table_entry":
        _table_entry(rng, info, e.table_entry)
        if for_read and rng.random() < 0.5:
            e.table_entry.ClearField("action")
    elif kind == "register_entry":
        re = e.register_entry
        re.register_id = _rand_id(rng, [r.preamble.id for r in info.registers])
        if rng.random() < 0.8:
            re.index.index = int(rng.choice([0, 1, 63, 8191, 8192, 16384, 1 << 20, -1,
                                             int(rng.integers(-2**62, 2**62))]))
        if not for_read or rng.random() < 0.2:
            _p4data(rng, re.data)
    elif kind == "counter_entry":
        ce = e.counter_entry
        ce.counter_id = _rand_id(rng, [c.preamble.id for c in info.counters])
        ce.index.index = int(rng.integers(-3, 1 << 16))
        ce.data.packet_count = int(rng.integers(-3, 100))
    elif kind == "meter_entry":
        me = e.meter_entry
        me.meter_id = _rand_id(rng, [m.preamble.id for m in info.meters])
        me.index.index = int(rng.integers(-3, 100))
        me.config.cir, me.config.pir = (int(x) for x in rng.integers(-10, 1000, size=2))
        me.config.cburst, me.config.pburst = (int(x) for x in rng.integers(-10, 1000, size=2))
    elif kind == "direct_counter_entry":
        _table_entry(rng, info, e.direct_counter_entry.table_entry)
        e.direct_counter_entry.data.byte_count = int(rng.integers(-3, 100))
    elif kind == "direct_meter_entry":
        _table_entry(rng, info, e.direct_meter_entry.table_entry)
        e.direct_meter_entry.config.cir = int(rng.integers(-3, 100))
    elif kind == "packet_replication_engine_entry":
        pre = e.packet_replication_engine_entry
        if rng.random() < 0.6:
            g = pre.multicast_group_entry
            g.multicast_group_id = int(rng.choice([0, 1, 2, 5, 0xFFFF, int(rng.integers(0, 1 << 32, dtype=np.uint64))]))
            for _ in range(int(rng.integers(0, 5))):
                rp = g.replicas.add()
                rp.instance = int(rng.integers(0, 1 << 32, dtype=np.uint64))
                if rng.random() < 0.7:
                    rp.egress_port = int(rng.integers(0, 1 << 32, dtype=np.uint64))
                else:
                    rp.port = _rand_bytes(rng, int(rng.integers(0, 6)))
                if rng.random() < 0.05:
                    rp.backup_replicas.add().port = b"\x03"
        elif rng.random() < 0.8:
            c = pre.clone_session_entry
            c.session_id = int(rng.integers(0, 600))
            c.class_of_service = int(rng.integers(0, 10))
            c.packet_length_bytes = int(rng.integers(-5, 100))
            rp = c.replicas.add()
            rp.egress_port = int(rng.integers(0, 1 << 10))
    elif kind == "digest_entry":
        d = e.digest_entry
        d.digest_id = _rand_id(rng, [x.preamble.id for x in info.digests])
        d.config.max_timeout_ns = int(rng.integers(-5, 10**9))
        d.config.max_list_size = int(rng.integers(-5, 100))
        d.config.ack_timeout_ns = int(rng.integers(-5, 10**9))
    elif kind == "action_profile_member":
        e.action_profile_member.action_profile_id = int(rng.integers(0, 1 << 32, dtype=np.uint64))
    elif kind == "action_profile_group":
        e.action_profile_group.group_id = int(rng.integers(0, 100))
    elif kind == "value_set_entry":
        e.value_set_entry.value_set_id = int(rng.integers(0, 1 << 32, dtype=np.uint64))
    elif kind == "extern_entry":
        e.extern_entry.extern_type_id = int(rng.integers(0, 1 << 32, dtype=np.uint64))
    # "none": an Entity with nothing set


def make_request(seed: int, index: int, info: Any) -> tuple[str, Any]:
    """Request ``index`` of the run with ``seed``: ("write" | "read", the request message)."""
    pb, _, _ = _pb()
    rng = np.random.default_rng([seed, 1 << 20, index])
    r = rng.random()
    if r < 0.06:                                   # random bytes decoded as a message, where it parses
        cls = pb.WriteRequest if rng.random() < 0.5 else pb.ReadRequest
        for _ in range(20):
            try:
                msg = cls.FromString(_rand_bytes(rng, int(rng.integers(0, 64))))
                return ("write" if cls is pb.WriteRequest else "read"), msg
            except Exception:  # noqa: BLE001 -- did not parse: try other bytes
                continue
        return "read", pb.ReadRequest(device_id=DEVICE)
    write = r < 0.7
    if write:
        req = pb.WriteRequest(device_id=DEVICE)
        req.election_id.high, req.election_id.low = ELECTION
        for _ in range(int(rng.choice([1, 1, 1, 2, 3, 0]))):
            u = req.updates.add()
            u.type = int(rng.choice([1, 1, 2, 3, 0, 4, 1000]) if rng.random() < 0.98 else rng.integers(-5, 5))
            _entity(rng, info, u.entity, for_read=False)
        x = rng.random()
        if x < 0.04:
            req.ClearField("election_id")
        elif x < 0.08:
            req.election_id.low = int(rng.integers(2, 1 << 40))
        elif x < 0.1:
            req.device_id = int(rng.integers(2, 1 << 40))
        elif x < 0.12:
            req.atomicity = int(rng.integers(1, 5))
        elif x < 0.14:
            req.role = "fuzz-role"
    else:
        req = pb.ReadRequest(device_id=DEVICE if rng.random() < 0.95 else int(rng.integers(0, 1 << 40)))
        for _ in range(int(rng.choice([1, 1, 2, 0]))):
            e = req.entities.add()
            if rng.random() < 0.1:
                e.table_entry.table_id = 0          # wildcard read of every table
            else:
                _entity(rng, info, e, for_read=True)
    if rng.random() < 0.15:                         # byte-level mutation of the serialized request
        raw = bytearray(req.SerializeToString())
        if raw:
            for pos in rng.integers(0, len(raw) * 8, size=int(rng.integers(1, 4))):
                raw[pos >> 3] ^= 1 << int(pos & 7)
            try:
                req = type(req).FromString(bytes(raw))
            except Exception:  # noqa: BLE001 -- no longer parses: keep the unmutated one
                pass
    return ("write" if write else "read"), req


def _status_of(err: Any, error_type: Any = None) -> tuple[str, list[str]]:
    """The gRPC code of a failed call, and the per-update / per-entity codes of an UNKNOWN batch
    (``error_type``: the protocol's Error message; P4Runtime's by default)."""
    from google.rpc import code_pb2, status_pb2
    if error_type is None:
        error_type = _pb()[0].Error
    code = err.code().name
    inner: list[str] = []
    if code == "UNKNOWN":
        for k, v in err.trailing_metadata() or ():
            if k == "grpc-status-details-bin":
                st = status_pb2.Status.FromString(v)
                for d in st.details:
                    e = error_type()
                    d.Unpack(e)
                    inner.append(code_pb2.Code.Name(e.canonical_code))
    return code, inner


def bad_status(code: str, inner: list[str], allowed: tuple[str, ...], batch_allowed: tuple[str, ...] = ()) -> bool:
    """Whether an answer is outside what the protocol allows: a code not in ``allowed``, or an
    UNKNOWN batch without per-update errors or with one not in ``allowed + batch_allowed``."""
    if code == "UNKNOWN":
        return not inner or any(c not in allowed + batch_allowed for c in inner)
    return code not in allowed


LARGE_READ = 4096    # register cells: p4sim's pure-Python protobuf answers ~10k cells/s


def wildcard_cells(req: Any, info: Any) -> int:
    """How many register cells a ReadRequest's wildcard register reads cover."""
    sizes = {r.preamble.id: r.size for r in info.registers}
    cells = 0
    for e in getattr(req, "entities", ()):
        if e.WhichOneof("entity") == "register_entry":
            re = e.register_entry
            if re.register_id == 0:
                cells += sum(sizes.values())
            elif not re.HasField("index"):
                cells += sizes.get(re.register_id, 0)
    return cells


def call(fx: Any, kind: str, req: Any, timeout: float) -> tuple[str, list[str]]:
    """Send a Write or Read through ``fx.stub`` (P4Runtime or BfRuntime: the RPCs are named
    alike); its outcome as (code, per-update codes), errors decoded with ``fx.error_type``."""
    import grpc
    try:
        if kind == "write":
            fx.stub.Write(req, timeout=timeout)
        else:
            for _ in fx.stub.Read(req, timeout=timeout):
                pass
        return "OK", []
    except grpc.RpcError as e:
        return _status_of(e, getattr(fx, "error_type", None))


# Seconds a request may take before the server counts as stuck: generous, so that a slow or
# busy machine is never a finding (a small request takes milliseconds on an idle one).
PATIENCE = 120.0


def patient_call(fx: Any, kind: str, req: Any, timeout: float,
                 patience: float = PATIENCE) -> tuple[str, list[str], str]:
    """`call` with `timeout`; a request past it is sent again with `patience` seconds. Returns
    (code, per-update codes, a note for the outcome count: " (slow)" when the second try
    answered). A write sent twice may find its own first copy applied (ALREADY_EXISTS and the
    like), which the spec's set allows anyway."""
    code, inner = call(fx, kind, req, timeout)
    if code != "DEADLINE_EXCEEDED":
        return code, inner, ""
    code, inner = call(fx, kind, req, patience)
    return code, inner, "" if code == "DEADLINE_EXCEEDED" else " (slow: answered past its deadline)"


def check_alive(fx: P4rtFixture, timeout: float = 30.0) -> str | None:
    """A valid Write (insert + delete of an ina_job entry) and Read still work; None if so."""
    pb, _, _ = _pb()
    table = next(t for t in fx.p4info.tables if t.preamble.name.endswith("ina_job"))
    action = next(a for a in fx.p4info.actions if a.preamble.name.endswith("job_config"))
    w = pb.WriteRequest(device_id=DEVICE)
    w.election_id.high, w.election_id.low = ELECTION
    u = w.updates.add()
    u.type = pb.Update.INSERT
    te = u.entity.table_entry
    te.table_id = table.preamble.id
    te.match.add(field_id=table.match_fields[0].id).exact.value = (0xBEEF).to_bytes(2, "big")
    te.action.action.action_id = action.preamble.id
    for p in action.params:
        te.action.action.params.add(param_id=p.id, value=b"\x01")
    for utype in (pb.Update.DELETE, pb.Update.INSERT, pb.Update.DELETE):   # first DELETE: absent is fine
        u.type = utype
        code, inner = call(fx, "write", w, timeout)
        if code != "OK" and not (utype == pb.Update.DELETE and inner == ["NOT_FOUND"]):
            return f"valid {pb.Update.Type.Name(utype)} answered {code} {inner}"
    r = pb.ReadRequest(device_id=DEVICE)
    r.entities.add().table_entry.table_id = table.preamble.id
    code, inner = call(fx, "read", r, timeout)
    return None if code == "OK" else f"valid Read answered {code} {inner}"


Exchange = Callable[[int], "tuple[str, Any, str, list[str], str]"]


def drive_requests(rep: Report, where: str, first: int, requests: int, seconds: float | None,
                   exchange: Exchange, allowed: tuple[str, ...], batch_allowed: tuple[str, ...],
                   alive: Callable[[], str | None]) -> None:
    """The fuzzers' loop: `exchange(i)` sends request i and returns (kind, request, status, the
    batch's inner statuses, a note for the outcome count); every status outside `allowed` is a
    violation, and the server must still answer a valid request (`alive`) at the end."""
    deadline = None if seconds is None else time.perf_counter() + seconds
    t0 = time.perf_counter()
    for i in range(first, first + requests):
        if deadline is not None and time.perf_counter() > deadline:
            break
        kind, req, code, inner, note = exchange(i)
        rep.count += 1
        rep.outcomes[f"{kind} {code}{note}"] += 1
        for c in inner:
            rep.outcomes[f"  {kind} batch {c}"] += 1
        if bad_status(code, inner, allowed, batch_allowed):
            rep.violation(f"{where} request index={i} ({kind}) answered {code} {inner}: {str(req)[:600]!r}")
    rep.seconds = time.perf_counter() - t0
    problem = alive()
    if problem is not None:
        rep.violation(f"{where} after requests {first}..{first + rep.count - 1}: {problem}")


def fuzz_p4runtime(arch: str, requests: int, seed: int, seconds: float | None = None,
                   timeout: float = 10.0, first: int = 0, large_timeout: float = 0.5) -> Report:
    rep = Report(f"{arch} P4Runtime requests")
    fx = P4rtFixture(arch)
    where = f"{arch}: P4Runtime seed={seed}"

    def exchange(i: int) -> tuple[str, Any, str, list[str], str]:
        kind, req = make_request(seed, i, fx.p4info)
        large = kind == "read" and wildcard_cells(req, fx.p4info) > LARGE_READ
        if not large:
            code, inner, note = patient_call(fx, kind, req, timeout)
            return kind, req, code, inner, note
        code, inner = call(fx, kind, req, large_timeout)
        note = " (large wildcard read)"
        if code == "DEADLINE_EXCEEDED":
            # a wildcard read of a large register legitimately takes long (seconds to
            # minutes): the client gives up, and the server must drop it and answer the
            # next request at once instead of holding its lock until the read is done
            code, note = "OK", " (large wildcard read past its deadline, dropped)"
            alive = check_alive(fx)
            if alive is not None:
                rep.violation(f"{where} request index={i}: after a large wildcard read "
                              f"ran past its {large_timeout} s deadline: {alive}")
        return kind, req, code, inner, note

    try:
        drive_requests(rep, where, first, requests, seconds, exchange, _SPEC_CODES, (),
                       lambda: check_alive(fx))
    finally:
        fx.close()
    return rep


# ====================================================================== command line

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=100000, help="frames per program (default 100000)")
    ap.add_argument("--requests", type=int, default=2000, help="P4Runtime requests per program (default 2000)")
    ap.add_argument("--seconds", type=float, default=None,
                    help="time limit per program for each of the two parts (default: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arch", choices=["v1model", "tna", "both"], default="both")
    ap.add_argument("--frame-timeout", type=float, default=2.0, help="seconds one frame may take (default 2)")
    ap.add_argument("--replay-frame", type=int, default=None, metavar="I",
                    help="send only frame I of --seed to a fresh switch and print it")
    ap.add_argument("--replay-request", type=int, default=None, metavar="I",
                    help="send only request I of --seed to a fresh server and print it")
    args = ap.parse_args(argv)
    archs = ["v1model", "tna"] if args.arch == "both" else [args.arch]
    reports = []
    for arch in archs:
        if args.replay_frame is not None or args.replay_request is not None:
            if args.replay_frame is not None:
                kind, port, data = make_frame(args.seed, args.replay_frame, PROGRAMS[arch][1])
                print(f"{arch} frame {args.replay_frame}: {kind}, port {port}, {data.hex()}")
                reports.append(fuzz_frames(arch, 1, args.seed, first=args.replay_frame,
                                           frame_timeout=args.frame_timeout))
            if args.replay_request is not None:
                fx = P4rtFixture(arch)
                try:
                    print(f"{arch} request {args.replay_request}:", make_request(args.seed, args.replay_request, fx.p4info))
                finally:
                    fx.close()
                reports.append(fuzz_p4runtime(arch, 1, args.seed, first=args.replay_request))
            continue
        reports.append(fuzz_frames(arch, args.frames, args.seed, args.seconds, args.frame_timeout))
        print(reports[-1].summary(), flush=True)
        reports.append(fuzz_p4runtime(arch, args.requests, args.seed, args.seconds))
        print(reports[-1].summary(), flush=True)
    violations = [v for r in reports for v in r.violations]
    for v in violations:
        print("VIOLATION", v)
    print(f"{len(violations)} violations (reproduce: --seed {args.seed} --replay-frame/--replay-request INDEX)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
