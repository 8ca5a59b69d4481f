"""A plan onto a testbed's switches: ``python -m controller deploy | status | reset``.

Each switch of a :class:`~controller.testbed.Testbed` is reached over its own API (TNA:
BfRuntime through :class:`~controller.bfrt_target.BfRtTarget`; v1model: P4Runtime through
:class:`~controller.p4runtime_target.P4RuntimeTarget`), its ports are configured from the
testbed (BfRt ``$PORT``: speed, FEC, enabled), and its tables are brought to the plan's state by
:func:`controller.sync.sync_switch` (read, compare, write the difference). Running ``deploy``
twice writes nothing the second time; after a switch restarts, ``deploy`` restores it.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from p4control.errors import ControlPlaneError

from .deploy import DEFAULT_POOL, TableOp, deploy_jobs
from .model import Job, Plan
from .sync import Diff, managed_tables, read_state, sync_switch
from .testbed import SwitchConfig, Testbed

def job_elements(job: Job) -> int:
    """Gradient elements of a job (4-byte fixed-point values of its sub-models, MB = 10^6 B)."""
    return max(1, int(job.total_mb * 1e6 / 4))


def plan_ops(testbed: Testbed, jobs: list[Job], plan: Plan, *,
             pool_size: int = DEFAULT_POOL) -> dict[str, list[TableOp]]:
    """Switch → the table operations of ``plan`` for ``jobs`` (no jobs: every switch empty)."""
    if not jobs:
        return {s: [] for s in testbed.switches}
    topo = testbed.topology()
    for j in jobs:
        j.validate(topo, source=f"job {j.name}")
    fd = deploy_jobs(topo, jobs, plan, total_elements={j.name: job_elements(j) for j in jobs},
                     pool_size=pool_size)
    return {s: fd.ops.get(s, []) for s in testbed.switches}


@contextlib.contextmanager
def connect(sw: SwitchConfig, *, timeout: float | None = None) -> Iterator[Any]:
    """A control session with one switch (closed on exit)."""
    if sw.arch == "tna":
        from .bfrt_target import BfRtTarget
        target: Any = BfRtTarget(sw.address, device_id=sw.device_id, timeout=timeout)
    else:
        from p4control.p4runtime.p4info import P4InfoFileError, load_p4info

        from .p4runtime_target import P4RuntimeTarget
        try:
            p4info = load_p4info(sw.p4info) if sw.p4info else None   # None: the switch's own
        except OSError as e:
            raise ControlPlaneError(f"p4info {sw.p4info}: cannot read: {e.strerror}") from None
        except P4InfoFileError as e:
            raise ControlPlaneError(str(e)) from None
        target = P4RuntimeTarget(sw.address, p4info, device_id=sw.device_id, timeout=timeout)
    try:
        yield target
    finally:
        target.close()


def ports_up(target: Any, sw: SwitchConfig, *, dry_run: bool = False) -> int:
    """Add every testbed port of a TNA switch that is missing or configured otherwise
    (speed/FEC change: delete and add, as the SDE requires); returns the ports written."""
    if sw.arch != "tna":
        return 0                   # P4Runtime has no port configuration; the target's own CLI does
    written = 0
    for p in sw.ports.values():
        try:
            have = target.port_get(p.dev_port)
        except ControlPlaneError:
            have = None
        if have is not None and (have["$SPEED"], have["$FEC"], have["$PORT_ENABLE"]) == \
                (p.bf_speed, p.bf_fec, True):
            continue
        if not dry_run:
            if have is not None:
                target.port_delete(p.dev_port)
            target.port_add(p.dev_port, p.bf_speed, p.bf_fec)
        written += 1
    return written


@dataclass
class SwitchReport:
    name: str
    reachable: bool
    error: str = ""
    ports_written: int = 0
    entries: int = 0              # managed entries the switch holds (after the change)
    groups: int = 0
    diff: Diff | None = None

    def line(self, verb: str) -> str:
        if not self.reachable:
            return f"{self.name}: unreachable: {self.error}"
        if self.error:
            return f"{self.name}: {self.error}"
        d = self.diff.summary() if self.diff is not None else "no plan given"
        ports = f", {self.ports_written} ports {verb}" if self.ports_written else ""
        return f"{self.name}: {self.entries} entries, {self.groups} multicast groups; {d}{ports}"


def sync_testbed(testbed: Testbed, ops: Mapping[str, list[TableOp]] | None, *,
                 dry_run: bool = False, timeout: float | None = None) -> list[SwitchReport]:
    """Configure ports and bring every switch to ``ops`` (None: only report what is there).
    ``dry_run``: compare and report, write nothing. A switch that cannot be reached or refuses
    a write is reported; the others are still done."""
    reports = []
    for name, sw in testbed.switches.items():
        try:
            with connect(sw, timeout=timeout) as target:
                rep = SwitchReport(name, True)
                try:
                    rep.ports_written = ports_up(target, sw, dry_run=dry_run or ops is None)
                    if ops is not None:
                        rep.diff = sync_switch(target, ops[name], dry_run=dry_run)
                    have = read_state(target, managed_tables(target.info))
                    rep.entries, rep.groups = have.entry_count(), len(have.groups)
                except ControlPlaneError as e:
                    rep.error = str(e)
        except ControlPlaneError as e:
            rep = SwitchReport(name, False, str(e))
        reports.append(rep)
    return reports


__all__ = ["plan_ops", "connect", "ports_up", "sync_testbed", "SwitchReport", "job_elements"]
