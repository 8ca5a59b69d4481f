"""Packets/s of the INA data-plane programs on p4sim (v1model K=64, TNA K=32).

8 workers, fan-in 8, fragments spread over a 4096-aggregator pool; every packet is parsed,
aggregated (claim / add / complete with multicast of the result to 8 workers) and deparsed.
Both programs also run on the C backend (p4sim/runtime/native.py) when a C compiler is
available: both numbers and the ratio are printed.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.machine import describe  # noqa: E402
from controller.ina_tables import InaTables  # noqa: E402
from hostlib.protocol import InaHeader, build_frame  # noqa: E402
from p4sim import Switch, load_program  # noqa: E402
from p4sim.errors import CompileError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 8


def bench(arch: str, lanes: int, fragments: int, backend: str = "python") -> tuple[float, float]:
    sw = Switch(load_program(str(ROOT / "p4src" / arch / "ina.p4"), arch=arch), backend=backend)
    t = InaTables(sw)
    t.add_node(1, pool_base=0, pool_size=4096)
    t.add_job(1)
    t.add_result_group(1, [(w + 1, f"10.0.0.{w + 1}", w) for w in range(WORKERS)])
    t.level_to_multicast(1, 1, 1)
    t.add_lpm("10.0.1.1", 32, 10)
    rng = np.random.default_rng(0)
    frames = []
    for f in range(fragments):
        for w in range(WORKERS):
            h = InaHeader.for_worker(1, 1, 0, f, w, WORKERS)
            frames.append((w + 1, build_frame(h, rng.integers(-1000, 1000, lanes).astype(np.int32),
                                             src_ip=f"10.0.0.{w + 1}", dst_ip="10.0.1.1")))
    process = sw.process
    outputs = 0
    t0 = time.perf_counter()
    for port, frame in frames:
        outputs += len(process(port, frame))
    dt = time.perf_counter() - t0
    assert outputs == fragments * WORKERS, outputs
    pps = len(frames) / dt
    return pps, pps * (20 + 4 * lanes) * 8 / 1e9


def main() -> None:
    print(describe())
    for arch, lanes, n in (("v1model", 64, 1500), ("tna", 32, 1500)):
        pps, gbps = bench(arch, lanes, n)
        line = (f"{arch:8s} INA (K={lanes:2d}, 8 workers): python {pps:,.0f} packets/s in, "
                f"{gbps * 1000:,.1f} Mb/s of gradient payload")
        try:
            cpps, cgbps = bench(arch, lanes, n, backend="c")
            line += (f"; c {cpps:,.0f} packets/s, {cgbps * 1000:,.1f} Mb/s "
                     f"({cpps / pps:.1f}x)")
        except CompileError as e:
            line += f"; c: not run ({e})"
        print(line)


if __name__ == "__main__":
    main()
