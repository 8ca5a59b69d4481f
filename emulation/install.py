"""Program every switch of an :class:`emulation.net.EmuNet` with a plan, over P4Runtime
(v1model) or BfRuntime (TNA, as a Tofino is programmed).

The plan → tables translation is :func:`controller.deploy.deploy_plan` (pure); here each
switch's :class:`controller.deploy.TableOp` list goes through
:class:`controller.p4runtime_target.P4RuntimeTarget` or
:class:`controller.bfrt_target.BfRtTarget` + :class:`controller.ina_tables.InaTables`.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping

from controller.deploy import Deployment, TableOp, apply_ops
from controller.ina_tables import InaTables
from controller.p4runtime_target import P4RuntimeTarget
from p4sim import load_program
from p4sim.p4info import build_p4info

from .bmv2 import Bmv2Build, compile_for_bmv2
from .net import PROGRAM, EmuNet

_p4info: Any = None


def p4info() -> Any:
    """The v1model INA program's P4Info (table names and ids), compiled once per process."""
    global _p4info
    if _p4info is None:
        _p4info = build_p4info(load_program(str(PROGRAM), arch="v1model").info)
    return _p4info


def install_ops(grpc_addr: str, device_id: int, ops: list[TableOp], bmv2: Bmv2Build | None = None) -> int:
    """Write ``ops`` to one switch; with ``bmv2`` first push p4c's build of the program."""
    if bmv2 is None:
        target = P4RuntimeTarget(grpc_addr, p4info(), device_id=device_id, timeout=30.0)
    else:     # p4c's own P4Info goes with p4c's device config (same ids as p4sim's)
        target = P4RuntimeTarget(grpc_addr, bmv2.p4info_message(), device_id=device_id,
                                 timeout=30.0, device_config=bmv2.device_config())
    with target:
        return apply_ops(InaTables(target), ops)


def install_ops_bfrt(bfrt_addr: str, device_id: int, ops: list[TableOp]) -> int:
    """Write ``ops`` to one TNA switch over BfRuntime, in one all-or-nothing batch."""
    from controller.bfrt_target import BfRtTarget

    with BfRtTarget(bfrt_addr, device_id=device_id, timeout=30.0) as target, target.batch():
        return apply_ops(InaTables(target), ops)


def install(net: EmuNet, ops: Mapping[str, list[TableOp]], *, workers: int = 4,
            progress: Callable[[str], None] | None = None) -> int:
    """Write ``ops`` (switch → operations) to the switches; returns the number of writes.

    A few switches at a time: each write is a gRPC round trip to a Python server, so
    overlapping them hides latency without starving the switches' packet loops."""
    tna = net.arch == "tna"
    if not tna:
        p4info()                                  # compile before the threads race for it
    build = compile_for_bmv2(PROGRAM) if net.bmv2 else None

    def one(name: str) -> int:
        sw = net.switch(name)
        if tna:
            n = install_ops_bfrt(sw.grpc_addr, sw.device_id, list(ops[name]))
        else:
            n = install_ops(sw.grpc_addr, sw.device_id, list(ops[name]), build)
        if progress:
            progress(f"{name}: {n} entries")
        return n
    with ThreadPoolExecutor(max_workers=workers) as pool:     # bmv2: every switch needs its pipeline
        return sum(pool.map(one, [s for s in ops if ops[s] or build is not None]))


def install_deployment(net: EmuNet, dep: Deployment, **kw: Any) -> int:
    return install(net, dep.ops, **kw)
