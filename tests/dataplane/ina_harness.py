"""Shared set-up for packet-level tests of the INA programs on p4sim."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from controller.ina_tables import InaTables
from hostlib.protocol import Flags, InaHeader, InaPacket, build_frame, parse_frame
from p4sim import Program, Switch, load_program

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = {
    "v1model": (ROOT / "p4src" / "v1model" / "ina.p4", 64),
    "tna": (ROOT / "p4src" / "tna" / "ina.p4", 32),
}
PS_IP, PS_PORT = "10.0.1.1", 10


@lru_cache(maxsize=None)
def program(arch: str) -> Program:
    path, _ = PROGRAMS[arch]
    return load_program(str(path), arch=arch)


def lanes_of(arch: str) -> int:
    return PROGRAMS[arch][1]


def worker_ip(w: int) -> str:
    return f"10.0.0.{w + 1}"


def worker_port(w: int) -> int:
    return w + 1


class InaSwitch:
    """One INA switch with workers 0..n-1 on ports 1..n and the PS on port 10."""

    def __init__(self, arch: str, workers: int = 4, node_id: int = 1, pool_size: int = 64,
                 preemption: bool = False, job_id: int = 1, result: str = "multicast") -> None:
        self.arch = arch
        self.lanes = lanes_of(arch)
        self.sw = Switch(program(arch))
        self.t = InaTables(self.sw)
        self.node_id = node_id
        for w in range(workers):
            self.t.add_lpm(worker_ip(w), 32, worker_port(w), dmac=0x020000000000 + w)
        self.t.add_lpm(PS_IP, 32, PS_PORT, dmac=0x02000000FFFF)
        self.t.add_node(node_id, pool_base=0, pool_size=pool_size)
        self.add_job(job_id, preemption, workers, result)

    def add_job(self, job_id: int, preemption: bool, workers: int, result: str = "multicast") -> None:
        self.t.add_job(job_id, preemption)
        if result == "multicast":
            group = job_id
            self.t.add_result_group(group, [(worker_port(w), worker_ip(w), 0x020000000000 + w) for w in range(workers)],
                                    rid_base=job_id * 100)
            self.t.level_to_multicast(job_id, self.node_id, group)
        else:
            self.t.level_to_ps(job_id, self.node_id)

    def send(self, header: InaHeader, lanes: np.ndarray, src_ip: str | None = None, in_port: int | None = None,
             dst_ip: str = PS_IP) -> list[tuple[int, bytes]]:
        w = header.worker_id if header.worker_id < 32 else 0
        frame = build_frame(header, lanes, src_ip=src_ip or worker_ip(w), dst_ip=dst_ip,
                            src_mac=0x0A0000000000 + w, dst_mac=0x0B0000000000)
        return self.sw.process(in_port if in_port is not None else worker_port(w), frame)

    def parse(self, out: list[tuple[int, bytes]]) -> list[tuple[int, InaPacket]]:
        return [(p, parse_frame(d, self.lanes)) for p, d in out]

    def fragment(self, worker: int, fan_in: int, fragment_id: int = 7, submodel_id: int = 3, job_id: int = 1,
                 node_id: int | None = None, priority: int = 0, flags: Flags = Flags(0),
                 round: int = 0) -> InaHeader:
        return InaHeader.for_worker(job_id, self.node_id if node_id is None else node_id, submodel_id,
                                    fragment_id, worker, fan_in, priority, flags, round)

    def register(self, short: str, index: int) -> int:
        names = [n for n in self.sw.info.registers if n.endswith("." + short) or n == short]
        assert len(names) == 1, names
        return self.sw.register_read(names[0], index)


def random_lanes(rng: np.random.Generator, k: int, bound: int = 1 << 20) -> np.ndarray:
    return rng.integers(-bound, bound, size=k, dtype=np.int64).astype(np.int32)
