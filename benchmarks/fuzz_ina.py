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
import struct
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from controller.ina_tables import InaTables  # noqa: E402
from hostlib.protocol import (HEADER_LEN, INA_UDP_PORT, INA_VERSION, InaHeader,  # noqa: E402
                              build_frame)
from p4sim import Program, Switch, load_program  # noqa: E402

# the checks and harness, and the P4Runtime request generator, live in their own modules; their
# names are this fuzzer's (benchmarks/fuzz_bfrt.py imports some of them from here)
from benchmarks.fuzz_checks import (LARGE_READ, PATIENCE, Exchange, FrameTimeout, Report,  # noqa: E402,F401
                                    _status_of, bad_status, call, drive_requests, frame_alarm,
                                    patient_call, wildcard_cells)
from benchmarks.fuzz_p4rt_requests import (DEVICE, ELECTION, _entity, _p4data, _pb,  # noqa: E402,F401
                                           _rand_bytes, _rand_id, _table_entry, _width_bytes,
                                           make_request)

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
