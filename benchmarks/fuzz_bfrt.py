"""Malformed BfRuntime requests against p4sim's BfRt server (the TNA INA program).

    python benchmarks/fuzz_bfrt.py [--requests 5000] [--seed 0] [--seconds S] [--replay I]

Request ``i`` comes from ``numpy.random.default_rng([seed, i])``: random or mutated table and
field ids, key and data widths, register indices, fixed tables ($PORT, $pre.*), update types,
atomicity, a wrong device, program name or client id, and random bytes decoded as requests where
they parse. Every answer must be OK or a status the server documents (INVALID_ARGUMENT,
NOT_FOUND, ALREADY_EXISTS, OUT_OF_RANGE, FAILED_PRECONDITION, UNIMPLEMENTED, RESOURCE_EXHAUSTED,
or UNKNOWN for a refused batch, with one ``bfrt_proto.Error`` per update: the failing one's
code, ABORTED for the others of an all-or-nothing batch) — never INTERNAL from
a Python exception, never a hang — and afterwards the server must still insert, read and delete
a valid entry. Exit status 1 on any violation, each printed with its (seed, index).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fuzz_ina import (Report, _rand_bytes, _rand_id, _width_bytes, patient_call,  # noqa: E402
                                  drive_requests, make_switch)

# PERMISSION_DENIED: a write to a table with const entries (the TNA program's register tables)
ALLOWED = ("OK", "INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "OUT_OF_RANGE", "RESOURCE_EXHAUSTED",
           "FAILED_PRECONDITION", "UNIMPLEMENTED", "PERMISSION_DENIED")
CLIENT = 1


class BfRtFixture:
    """A BfRtServer on the TNA INA program and a bound BfRtTarget (for its stub and schema)."""

    def __init__(self) -> None:
        from controller.bfrt_target import BfRtTarget
        from p4sim.bfrt.server import BfRtServer
        self.srv = BfRtServer(make_switch("tna"))
        port = self.srv.start("127.0.0.1:0")
        self.target = BfRtTarget(f"127.0.0.1:{port}", client_id=CLIENT)
        self.stub, self.schema = self.target.stub, self.target.bfrt
        self.p4_name = self.target.p4_name
        from p4control.bfrt.proto import pb
        self.error_type = pb.Error

    def close(self) -> None:
        self.target.close()
        self.srv.stop()


def _field_id(rng: np.random.Generator, ids: list[int]) -> int:
    return _rand_id(rng, ids) & 0xFFFFFFFF


def _table_entry(rng: np.random.Generator, fx: BfRtFixture, te: Any) -> None:
    specs = fx.schema.tables()
    spec = specs[int(rng.integers(0, len(specs)))]
    te.table_id = _rand_id(rng, [s.id for s in specs]) if rng.random() < 0.2 else spec.id
    for k in spec.keys:
        if rng.random() < 0.1:
            continue                                            # a key field missing
        f = te.key.fields.add(field_id=_field_id(rng, [k.id]) if rng.random() < 0.1 else k.id)
        kind = rng.choice(["exact", "ternary", "lpm", "range", "optional"]) if rng.random() < 0.15 \
            else k.match_type.lower()
        width = k.width or 32
        if kind == "exact":
            f.exact.value = _width_bytes(rng, width)
        elif kind == "ternary":
            f.ternary.value, f.ternary.mask = _width_bytes(rng, width), _width_bytes(rng, width)
        elif kind == "lpm":
            f.lpm.value = _width_bytes(rng, width)
            f.lpm.prefix_len = int(rng.integers(-1, width + 3))
        elif kind == "range":
            f.range.low, f.range.high = _width_bytes(rng, width), _width_bytes(rng, width)
        else:
            f.optional.value, f.optional.is_valid = _width_bytes(rng, width), bool(rng.random() < 0.5)
    if spec.actions and rng.random() < 0.8:
        act = spec.actions[int(rng.integers(0, len(spec.actions)))]
        te.data.action_id = _field_id(rng, [a.id for a in spec.actions]) if rng.random() < 0.1 else act.id
        for d in act.data:
            if rng.random() < 0.9:
                te.data.fields.add(field_id=d.id, stream=_width_bytes(rng, d.width or 32))
    for d in spec.data:
        if rng.random() < 0.7:
            f = te.data.fields.add(field_id=_field_id(rng, [d.id]) if rng.random() < 0.1 else d.id)
            r = rng.random()
            if d.type == "string" or r < 0.1:
                f.str_val = str(rng.choice(d.choices)) if d.choices and rng.random() < 0.7 else "BF_BOGUS"
            elif d.type == "bool" or r < 0.2:
                f.bool_val = bool(rng.random() < 0.5)
            elif d.repeated:
                f.int_arr_val.val.extend(int(x) for x in rng.integers(0, 600, size=int(rng.integers(0, 5))))
            else:
                f.stream = _width_bytes(rng, d.width or 32)
    if rng.random() < 0.1:
        te.is_default_entry = True


def make_request(seed: int, index: int, fx: BfRtFixture) -> tuple[str, Any]:
    """Request ``index`` of ``seed``: ("write" | "read", message)."""
    from p4control.bfrt.proto import pb
    rng = np.random.default_rng([seed, index])
    write = rng.random() < 0.6
    req = pb.WriteRequest() if write else pb.ReadRequest()
    req.client_id = CLIENT if rng.random() < 0.95 else int(rng.integers(0, 1 << 32, dtype=np.uint64))
    req.p4_name = fx.p4_name if rng.random() < 0.95 else "other"
    req.target.device_id = 0 if rng.random() < 0.95 else int(rng.integers(1, 1 << 32, dtype=np.uint64))
    req.target.pipe_id = 0xFFFF
    for _ in range(int(rng.integers(0, 4))):
        if write:
            u = req.updates.add(type=int(rng.integers(0, 6)))
            _table_entry(rng, fx, u.entity.table_entry)
        else:
            _table_entry(rng, fx, req.entities.add().table_entry)
    if write:
        req.atomicity = int(rng.integers(0, 4))
    if rng.random() < 0.05:                         # random bytes, where they parse as a request
        try:
            req = type(req).FromString(_rand_bytes(rng, int(rng.integers(1, 64))))
        except Exception:
            pass
    return ("write" if write else "read"), req


def check_alive(fx: BfRtFixture) -> str | None:
    """A valid insert, read and delete through the controller's back end; None if they work."""
    from controller.ina_tables import InaTables
    from p4control.model import Exact
    try:
        tables = InaTables(fx.target)
        name = tables._table("ina_job")
        probe = {tables._key(name, "job_id"): Exact(0xBEEF)}

        def probes() -> list[Any]:
            return [e for e in fx.target.table_entries(name) if e.match == probe]
        for e in probes():                            # a fuzz request may have inserted it
            fx.target.table_delete(name, e.match)
        tables.add_job(0xBEEF)
        found = probes()
        fx.target.table_delete(name, probe)
        return None if len(found) == 1 else f"valid insert read back {len(found)} times"
    except Exception as e:                           # noqa: BLE001 (any failure is the finding)
        return f"valid insert/read/delete failed: {type(e).__name__}: {e}"


def fuzz_bfrt(requests: int, seed: int, seconds: float | None = None, timeout: float = 10.0,
              first: int = 0) -> Report:
    rep = Report("tna BfRuntime requests")
    fx = BfRtFixture()

    def exchange(i: int) -> tuple[str, Any, str, list[str], str]:
        kind, req = make_request(seed, i, fx)
        code, inner, note = patient_call(fx, kind, req, timeout)
        return kind, req, code, inner, note

    try:
        # in a refused all-or-nothing batch the updates not at fault are ABORTED
        drive_requests(rep, f"BfRt seed={seed}", first, requests, seconds, exchange, ALLOWED,
                       ("ABORTED",), lambda: check_alive(fx))
    finally:
        fx.close()
    return rep

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/fuzz_bfrt.py",
                                 description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=None, help="stop after this long")
    ap.add_argument("--replay", type=int, default=None, metavar="I", help="send request I of --seed alone")
    args = ap.parse_args(argv)
    if args.replay is not None:
        rep = fuzz_bfrt(1, args.seed, first=args.replay)
    else:
        rep = fuzz_bfrt(args.requests, args.seed, args.seconds)
    print(rep.summary())
    for v in rep.violations:
        print("VIOLATION", v)
    return 1 if rep.violations else 0


if __name__ == "__main__":
    sys.exit(main())
