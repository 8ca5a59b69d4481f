"""Bring switches to a plan's state idempotently: read what a switch holds, compare it with
what the plan's table operations would write, and write only the difference.

The wanted state of a switch is obtained by running its :class:`~controller.deploy.TableOp`
list through :class:`~controller.ina_tables.InaTables` over a :class:`StateRecorder` (a target
that records instead of writing), so it uses the exact names, keys and encodings the switch
itself would receive. A switch restarted empty is fully re-installed; one already in the plan's
state gets no write at all; entries the plan no longer has are deleted. Targets are the
controller's BfRt and P4Runtime back ends (they read entries and multicast groups back).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from p4control.model import ActionCall, ProgramInfo, TableEntry

from .deploy import TableOp, apply_ops
from .ina_tables import InaTables

EntryKey = tuple[str, int]            # (canonical match text, priority)


def entry_key(entry: TableEntry) -> EntryKey:
    match = ";".join(f"{k}={entry.match[k]!r}" for k in sorted(entry.match))
    return match, entry.priority


@dataclass
class SwitchState:
    """Entries per table (by key) and multicast groups (sorted (port, rid) replicas)."""
    entries: dict[str, dict[EntryKey, TableEntry]] = field(default_factory=dict)
    groups: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def entry_count(self) -> int:
        return sum(len(t) for t in self.entries.values())


class StateRecorder:
    """A target that records writes into a :class:`SwitchState` (``pre`` records groups)."""

    def __init__(self, info: ProgramInfo) -> None:
        self.info = info
        self.state = SwitchState()
        self.pre = self

    def table_insert(self, table: str, entry: TableEntry) -> None:
        entries = self.state.entries.setdefault(table, {})
        key = entry_key(entry)
        if key in entries and entries[key].action != entry.action:
            raise ValueError(f"{table}: the plan writes two actions for one key {key[0]}")
        entries[key] = entry

    def table_set_default(self, table: str, call: ActionCall) -> None:
        raise ValueError(f"{table}: default actions are not part of a plan's state")

    def insert_group(self, group_id: int, replicas: list[tuple[int, int]]) -> None:
        if group_id in self.state.groups:
            raise ValueError(f"multicast group {group_id} is written twice by the plan")
        self.state.groups[group_id] = sorted(replicas)


def wanted_state(info: ProgramInfo, ops: Iterable[TableOp]) -> SwitchState:
    recorder = StateRecorder(info)
    apply_ops(InaTables(recorder), ops)
    return recorder.state


def managed_tables(info: ProgramInfo) -> list[str]:
    """The tables a plan owns: every table whose entries the control plane may change."""
    return sorted(n for n, t in info.tables.items() if not t.has_const_entries)


def read_state(target: Any, tables: Iterable[str]) -> SwitchState:
    state = SwitchState()
    for t in tables:
        state.entries[t] = {entry_key(e): e for e in target.table_entries(t) if not e.is_const}
    for g in target.pre.group_ids():
        state.groups[g] = sorted(target.pre.get_group(g))
    return state


@dataclass
class Diff:
    inserts: list[tuple[str, TableEntry]] = field(default_factory=list)
    modifies: list[tuple[str, TableEntry]] = field(default_factory=list)
    deletes: list[tuple[str, TableEntry]] = field(default_factory=list)
    group_writes: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    group_changes: set[int] = field(default_factory=set)   # existing groups to replace
    group_deletes: list[int] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.inserts or self.modifies or self.deletes or self.group_writes
                    or self.group_deletes)

    def summary(self) -> str:
        if self.empty:
            return "in sync"
        return (f"{len(self.inserts)} to insert, {len(self.modifies)} to modify, "
                f"{len(self.deletes)} to delete, {len(self.group_writes)} multicast groups to "
                f"write, {len(self.group_deletes)} to delete")


def diff_states(want: SwitchState, have: SwitchState) -> Diff:
    d = Diff()
    for table in sorted(set(want.entries) | set(have.entries)):
        w, h = want.entries.get(table, {}), have.entries.get(table, {})
        for key, entry in w.items():
            if key not in h:
                d.inserts.append((table, entry))
            elif h[key].action != entry.action:
                d.modifies.append((table, entry))
        d.deletes.extend((table, e) for key, e in h.items() if key not in w)
    for g, replicas in want.groups.items():
        if have.groups.get(g) != replicas:
            d.group_writes[g] = replicas
            if g in have.groups:
                d.group_changes.add(g)
    d.group_deletes = sorted(g for g in have.groups if g not in want.groups)
    return d


def apply_diff(target: Any, d: Diff) -> int:
    """Write ``d`` (deletes first, so a replaced entry never collides); returns the writes.
    Inside the target's batch where it has one (BfRt: all-or-nothing)."""
    batch = getattr(target, "batch", None)
    n = 0
    if batch is not None:
        with batch():
            n = _apply(target, d)
    else:
        n = _apply(target, d)
    return n


def _apply(target: Any, d: Diff) -> int:
    n = 0
    for table, e in d.deletes:
        target.table_delete(table, e.match, e.priority)
        n += 1
    for g in d.group_deletes + sorted(d.group_changes):
        target.pre.delete_group(g)
        n += 1
    for table, e in d.modifies:
        target.table_modify(table, e)
        n += 1
    for table, e in d.inserts:
        target.table_insert(table, e)
        n += 1
    for g, replicas in sorted(d.group_writes.items()):
        target.pre.insert_group(g, replicas)
        n += 1
    return n


def sync_switch(target: Any, ops: Iterable[TableOp], *, dry_run: bool = False) -> Diff:
    """Make ``target`` hold exactly the state ``ops`` describe; returns what differed."""
    want = wanted_state(target.info, ops)
    have = read_state(target, managed_tables(target.info))
    d = diff_states(want, have)
    if not dry_run and not d.empty:
        apply_diff(target, d)
    return d


__all__ = ["SwitchState", "StateRecorder", "Diff", "wanted_state", "read_state", "diff_states",
           "apply_diff", "sync_switch", "managed_tables", "entry_key"]
