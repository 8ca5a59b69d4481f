"""Lookup throughput of p4sim.runtime.tables.Table.

    .venv/bin/python benchmarks/bench_tables.py [--seconds 1.0]

Prints lookups/s for an exact table (10k entries), an lpm table (10k prefixes) and a ternary
table (1k entries), each probed with a mix of hitting and missing keys.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.machine import describe  # noqa: E402
from p4control.model import (ActionCall, ActionInfo, ActionParam, ActionRef, Exact, KeyField,  # noqa: E402
                             Lpm, TableEntry, TableInfo, Ternary)
from p4sim.runtime.tables import Table  # noqa: E402

ACTIONS = {"NoAction": ActionInfo("NoAction", []),
           "fwd": ActionInfo("fwd", [ActionParam("port", 9)])}


def _table(keys: list[KeyField], size: int) -> Table:
    info = TableInfo("bench", keys, [ActionRef("NoAction"), ActionRef("fwd")],
                     ActionCall("NoAction"), size=size)
    return Table(info, ACTIONS)


def exact_table(rng: random.Random) -> tuple[Table, list[tuple[int, ...]]]:
    t = _table([KeyField("dst", 48, "exact"), KeyField("vlan", 12, "exact")], 10_000)
    keys = []
    while len(t) < 10_000:
        k = (rng.getrandbits(48), rng.getrandbits(12))
        try:
            t.insert(TableEntry({"dst": Exact(k[0]), "vlan": Exact(k[1])},
                                ActionCall("fwd", {"port": rng.getrandbits(9)})))
            keys.append(k)
        except Exception:
            pass
    probes = [rng.choice(keys) if rng.random() < 0.8 else (rng.getrandbits(48), 0)
              for _ in range(4096)]
    return t, probes


def lpm_table(rng: random.Random) -> tuple[Table, list[tuple[int, ...]]]:
    t = _table([KeyField("ip", 32, "lpm")], 10_000)
    lens = [8, 12, 16, 16, 20, 22, 24, 24, 24, 28, 32]
    while len(t) < 10_000:
        plen = rng.choice(lens)
        v = rng.getrandbits(32) >> (32 - plen) << (32 - plen)
        try:
            t.insert(TableEntry({"ip": Lpm(v, plen)}, ActionCall("fwd", {"port": plen})))
        except Exception:
            pass
    probes = [(rng.getrandbits(32),) for _ in range(4096)]
    return t, probes


def ternary_table(rng: random.Random) -> tuple[Table, list[tuple[int, ...]]]:
    # An ACL-like table: src/dst prefixes as ternary masks, protocol and dport exact-or-any.
    t = _table([KeyField("src", 32, "ternary"), KeyField("dst", 32, "ternary"),
                KeyField("proto", 8, "ternary"), KeyField("dport", 16, "ternary")], 1_000)
    masks32 = [0, 0xFF000000, 0xFFFF0000, 0xFFFFFF00, 0xFFFFFFFF]
    while len(t) < 1_000:
        m = {}
        for name, masks in (("src", masks32), ("dst", masks32), ("proto", [0, 0xFF]),
                            ("dport", [0, 0xFFFF])):
            mask = rng.choice(masks)
            if mask:
                m[name] = Ternary(rng.getrandbits(mask.bit_length()) & mask, mask)
        try:
            t.insert(TableEntry(m, ActionCall("fwd", {"port": 1}), rng.randrange(1, 1 << 20)))
        except Exception:
            pass
    probes = [(rng.getrandbits(32), rng.getrandbits(32), rng.choice([6, 17]),
               rng.getrandbits(16)) for _ in range(4096)]
    return t, probes


def bench(name: str, table: Table, probes: list[tuple[int, ...]], seconds: float) -> None:
    lookup = table.lookup
    lookup(probes[0])                      # build lazy structures outside the timing
    n = 0
    hits = sum(lookup(k)[2] is not None for k in probes)
    start = time.perf_counter()
    while True:
        for k in probes:
            lookup(k)
        n += len(probes)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    print(f"{name:<28} {n / elapsed:>12,.0f} lookups/s   ({len(table)} entries, "
          f"{hits / len(probes):.0%} of probes hit)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    print(describe())
    rng = random.Random(2024)
    for name, build in (("exact  (10k entries)", exact_table), ("lpm    (10k prefixes)", lpm_table),
                        ("ternary (1k entries)", ternary_table)):
        t0 = time.perf_counter()
        table, probes = build(rng)
        build_s = time.perf_counter() - t0
        bench(name, table, probes, args.seconds)
        print(f"{'':<28} (built in {build_s:.2f} s)")


if __name__ == "__main__":
    main()
