"""InaTables installs the INA program's tables over real P4Runtime (gRPC) into a p4sim server."""
from __future__ import annotations

import numpy as np
import pytest

from controller.ina_tables import InaTables
from controller.p4runtime_target import P4RuntimeTarget, P4RuntimeTargetError
from hostlib.protocol import Flags, InaHeader, build_frame, parse_frame
from p4sim import Switch
from p4sim.p4info import build_p4info
from p4sim.p4runtime.server import P4RuntimeServer
from p4sim.serve import make_loader

from .ina_harness import PROGRAMS, PS_IP, lanes_of, program, worker_ip


@pytest.fixture
def server():
    loader = make_loader(program=str(PROGRAMS["v1model"][0]), arch="v1model", include_dirs=[],
                         cpu_port=None, seed=0)
    srv = P4RuntimeServer(Switch(program("v1model")), device_id=1, loader=loader)
    port = srv.start("127.0.0.1:0")
    yield srv, f"127.0.0.1:{port}"
    srv.stop()


def test_plan_installed_over_p4runtime_aggregates(server) -> None:
    srv, address = server
    k = lanes_of("v1model")
    with P4RuntimeTarget(address) as target:         # names the tables by the switch's P4Info
        t = InaTables(target)
        t.add_node(1, pool_base=0, pool_size=64)
        t.add_job(1)
        t.add_lpm(PS_IP, 32, 10)
        for w in range(2):
            t.add_lpm(worker_ip(w), 32, w + 1)
        t.add_result_group(1, [(w + 1, worker_ip(w), w) for w in range(2)])
        t.level_to_multicast(1, 1, group=1)
        with pytest.raises(P4RuntimeTargetError, match="ALREADY_EXISTS"):
            t.add_job(1)
    sw = srv.switch
    frames = [build_frame(InaHeader.for_worker(1, 1, 0, 5, w, 2), np.full(k, w + 1, np.int32),
                          src_ip=worker_ip(w), dst_ip=PS_IP) for w in range(2)]
    assert sw.process(1, frames[0]) == []
    out = [(p, parse_frame(d, k)) for p, d in sw.process(2, frames[1])]
    assert sorted(p for p, _ in out) == [1, 2]
    assert all(Flags.RESULT in pkt.header.flags and np.all(pkt.lanes == 3) for _, pkt in out)


def test_pipeline_pushed_over_p4runtime_replaces_the_program(server) -> None:
    srv, address = server
    before = srv.switch
    prog = program("v1model")
    with P4RuntimeTarget(address, build_p4info(prog.info), device_config=prog.source.encode()) as target:
        InaTables(target).add_job(3, preemption=True)
    assert srv.switch is not before
    assert [e.action.args for e in srv.switch.table_entries("InaIngress.ina_job")] == [
        {"preemption": 1, "hold_until_result": 0}]


def test_a_second_controller_with_a_lower_election_id_is_refused(server) -> None:
    _, address = server
    p4info = build_p4info(program("v1model").info)
    with P4RuntimeTarget(address, p4info, election_id=(0, 5)):
        with pytest.raises(P4RuntimeTargetError, match="not primary"):
            P4RuntimeTarget(address, p4info, election_id=(0, 2))
