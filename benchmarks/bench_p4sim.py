"""p4sim packet-processing throughput: prints packets/s for the benchmark programs.

  l3_router.p4     3 tables (LPM with 10k prefixes → exact next hop → exact smac), TTL, csum16
  registers64.p4   64 register read-modify-writes per packet

Packets go through Switch.process (parser → ingress → PRE → egress → deparser), the same path
the port loop and the STF runner use; socket I/O is not included. Each program runs on the
Python backend (the reference) and, when a C compiler is available, on the C backend
(p4sim/runtime/native.py), side by side with the ratio.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.machine import describe  # noqa: E402
from p4sim import Switch, load_program  # noqa: E402
from p4sim.errors import CompileError  # noqa: E402
from p4control.model import ActionCall, Exact, Lpm, TableEntry  # noqa: E402

HERE = Path(__file__).resolve().parent


def _ipv4_packet(dst: int) -> bytes:
    eth = bytes.fromhex("00aabbccddee") + bytes.fromhex("001122334455") + b"\x08\x00"
    ip = bytes([0x45, 0, 0, 20, 0, 1, 0, 0, 64, 17, 0, 0]) + (0x0A000001).to_bytes(4, "big") + dst.to_bytes(4, "big")
    return eth + ip + bytes(26)


def bench_l3(n: int, backend: str = "python") -> float:
    sw = Switch(load_program(str(HERE / "p4" / "l3_router.p4")), backend=backend)
    rng = random.Random(1)
    prefixes = set()
    while len(prefixes) < 10000:
        plen = rng.choice((16, 24, 24, 24, 32))
        prefixes.add(((rng.getrandbits(32) >> (32 - plen)) << (32 - plen), plen))
    for i, (value, plen) in enumerate(sorted(prefixes)):
        sw.table_insert("Ing.ipv4_lpm", TableEntry({"hdr.ipv4.dst": Lpm(value, plen)},
                                                   ActionCall("Ing.set_nexthop", {"nexthop": i % 64})))
    for nh in range(64):
        sw.table_insert("Ing.nexthop", TableEntry({"meta.nexthop": Exact(nh)},
                                                  ActionCall("Ing.set_port_dmac", {"port": nh % 8, "dmac": 0x020000000000 + nh})))
    for port in range(8):
        sw.table_insert("Ing.smac", TableEntry({"sm.egress_spec": Exact(port)},
                                               ActionCall("Ing.set_smac", {"smac": 0x0a0000000000 + port})))
    pool = sorted(prefixes)
    packets = [_ipv4_packet(pool[rng.randrange(len(pool))][0] | 1) for _ in range(1000)]
    assert sw.process(0, packets[0]), "benchmark packet was dropped"
    return _run(sw, packets, n)


def bench_registers(n: int, backend: str = "python") -> float:
    sw = Switch(load_program(str(HERE / "p4" / "registers64.p4")), backend=backend)
    eth = bytes.fromhex("00aabbccddee001122334455") + b"\x88\xb5"
    packets = [eth + (i % 1024).to_bytes(4, "big") + (i).to_bytes(4, "big") for i in range(1000)]
    assert sw.process(0, packets[0])
    return _run(sw, packets, n)


def _run(sw: Switch, packets: list[bytes], n: int) -> float:
    process = sw.process
    m = len(packets)
    t0 = time.perf_counter()
    for i in range(n):
        process(1, packets[i % m])
    return n / (time.perf_counter() - t0)


def side_by_side(label: str, fn, n: int) -> None:  # type: ignore[no-untyped-def]
    """One line: the Python backend, the C backend and their ratio (or why C did not run)."""
    py = fn(n, "python")
    try:
        c = fn(n * 4, "c")
    except CompileError as e:
        print(f"{label}: python {py:,.0f} packets/s; c: not run ({e})")
        return
    print(f"{label}: python {py:,.0f} packets/s, c {c:,.0f} packets/s ({c / py:.1f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=50000, help="packets per benchmark (Python backend; "
                                                        "the C backend runs 4x as many)")
    args = ap.parse_args()
    print(describe())
    side_by_side("l3_router (3 tables, 10k LPM prefixes)", bench_l3, args.n)
    side_by_side("registers64 (64 register RMW/packet)  ", bench_registers, args.n // 5)


if __name__ == "__main__":
    main()
