"""Table programming of the INA data plane (p4src/*), one method per table of docs/protocol.md.

``InaTables`` writes through a *target* with p4sim's control-plane API (``table_insert``,
``table_set_default``, ``pre``): an in-process ``p4sim.Switch`` or a P4Runtime client adapter.
Table and action names are resolved by suffix, so the same class programs the v1model program
(``InaIngress.ina_node``) and the TNA one (``InaIngress.ina_node`` in its own control names).
"""
from __future__ import annotations

from typing import Any, Protocol

from p4control.model import ActionCall, Exact, Lpm, ProgramInfo, TableEntry, Ternary


class Target(Protocol):
    info: ProgramInfo

    def table_insert(self, table: str, entry: TableEntry) -> None: ...
    def table_set_default(self, table: str, call: ActionCall) -> None: ...


def _ip(ip: str | int) -> int:
    if isinstance(ip, int):
        return ip
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def _mac(mac: str | int) -> int:
    if isinstance(mac, int):
        return mac
    return int(mac.replace(":", ""), 16)


class InaTables:
    def __init__(self, target: Any) -> None:
        self.target = target
        self.info: ProgramInfo = target.info

    # ------------------------------------------------------------------ name resolution
    def _resolve(self, names: dict[str, Any], short: str, what: str) -> str:
        hits = [n for n in names if n == short or n.endswith("." + short)]
        if len(hits) != 1:
            raise KeyError(f"{what} '{short}': {'not found' if not hits else 'ambiguous: ' + ', '.join(hits)}")
        return hits[0]

    def _table(self, short: str) -> str:
        return self._resolve(self.info.tables, short, "table")

    def _action(self, table: str, short: str) -> str:
        refs = {r.name: r for r in self.info.tables[table].actions}
        return self._resolve(refs, short, f"action of {table}")

    def _key(self, table: str, suffix: str) -> str:
        keys = {k.name: k for k in self.info.tables[table].keys}
        return self._resolve(keys, suffix, f"key of {table}")

    def _params(self, table: str, action: str) -> list[str]:
        t = self._table(table)
        return [p.name for p in self.info.actions[self._action(t, action)].params]

    def _pool_args(self, table: str, action: str, pool_base: int, pool_size: int) -> dict[str, int]:
        """v1model takes the pool size (hash mod size); TNA a mask (Tofino has no modulo)."""
        if "pool_mask" in self._params(table, action):
            if pool_size & (pool_size - 1):
                raise ValueError(f"pool size {pool_size} must be a power of two on this target")
            return {"pool_base": pool_base, "pool_mask": pool_size - 1}
        return {"pool_base": pool_base, "pool_size": pool_size}

    def _insert(self, table: str, match: dict[str, Any], action: str, priority: int = 0, **args: int) -> None:
        t = self._table(table)
        m = {self._key(t, k): v for k, v in match.items()}
        self.target.table_insert(t, TableEntry(m, ActionCall(self._action(t, action), args), priority))

    # ------------------------------------------------------------------ INA tables
    def set_port_pipe(self, port: int, pipe: int) -> None:
        self._insert("ina_port_pipe", {"ingress_port": Exact(port)}, "set_pipe", pipe=pipe)

    def add_node(self, node_id: int, pool_base: int, pool_size: int, pipe: int = 0) -> None:
        """This switch aggregates fragments assigned to ``node_id`` arriving on ``pipe``."""
        self._insert("ina_node", {"node_id": Exact(node_id), "pipe": Exact(pipe)}, "aggregate",
                     **self._pool_args("ina_node", "aggregate", pool_base, pool_size))

    def add_job(self, job_id: int, preemption: bool = False, hold_until_result: bool = False) -> None:
        """Configure a job: ESA preemption, or ATP's hold-until-result (with add_release)."""
        self._insert("ina_job", {"job_id": Exact(job_id)}, "job_config", preemption=int(preemption),
                     hold_until_result=int(hold_until_result))

    def add_release(self, job_id: int, node_id: int, pool_base: int, pool_size: int) -> None:
        """Results of ``job_id`` passing this switch free the aggregator it held as ``node_id``
        in the pool (pool_base, pool_size) that ``add_node`` gave that node."""
        self._insert("ina_release", {"job_id": Exact(job_id)}, "release", node_id=node_id,
                     **self._pool_args("ina_release", "release", pool_base, pool_size))

    def level_to_node(self, job_id: int, node_id: int, next_node: int, next_fan_in: int) -> None:
        self._insert("ina_level", {"job_id": Exact(job_id), "node_id": Exact(node_id)}, "to_node",
                     next_node=next_node, next_fan_in=next_fan_in)

    def level_to_multicast(self, job_id: int, node_id: int, group: int) -> None:
        self._insert("ina_level", {"job_id": Exact(job_id), "node_id": Exact(node_id)}, "to_multicast",
                     group=group)

    def level_to_ps(self, job_id: int, node_id: int) -> None:
        self._insert("ina_level", {"job_id": Exact(job_id), "node_id": Exact(node_id)}, "to_ps")

    def add_route(self, job_id: int, port: int, dmac: str | int = 0, *, node_id: int | None = None,
                  worker_id: int | None = None, flags: int | None = None, ingress_port: int | None = None,
                  priority: int = 1, flags_mask: int = 0xFF) -> None:
        """Pin a path for INA packets of ``job_id``; each optional field narrows the match to
        one next node, one worker, exactly these ``flags`` (e.g. 0: first copies only, so
        fallbacks and aggregates leaving a node follow the LPM routes; ``flags_mask``: the bits
        compared) or one ingress port."""
        match: dict[str, Any] = {"job_id": Exact(job_id)}
        if node_id is not None:
            match["node_id"] = Ternary(node_id, 0xFFFF)
        if worker_id is not None:
            match["worker_id"] = Ternary(worker_id, 0xFF)
        if flags is not None:
            match["flags"] = Ternary(flags & flags_mask, flags_mask)
        if ingress_port is not None:
            match["ingress_port"] = Ternary(ingress_port, 0x1FF)
        self._insert("ina_route", match, "route", priority=priority, port=port, dmac=_mac(dmac))

    # ------------------------------------------------------------------ L3
    def add_lpm(self, prefix: str | int, prefix_len: int, port: int, dmac: str | int = 0) -> None:
        self._insert("ipv4_lpm", {"dst_addr": Lpm(_ip(prefix), prefix_len)}, "set_nhop", port=port, dmac=_mac(dmac))

    def add_ecmp_route(self, prefix: str | int, prefix_len: int, group: int,
                       members: list[tuple[int, str | int]]) -> None:
        n = len(members)
        if "mask" in self._params("ipv4_lpm", "ecmp"):
            if n & (n - 1):
                raise ValueError(f"ECMP groups need 2^k members on this target, got {n}")
            size_arg = {"mask": n - 1}
        else:
            size_arg = {"size": n}
        self._insert("ipv4_lpm", {"dst_addr": Lpm(_ip(prefix), prefix_len)}, "ecmp", group=group, **size_arg)
        for i, (port, dmac) in enumerate(members):
            self._insert("ecmp_member", {"ecmp_group": Exact(group), "ecmp_member": Exact(i)}, "set_nhop",
                         port=port, dmac=_mac(dmac))

    # ------------------------------------------------------------------ results
    def add_result_group(self, group: int, members: list[tuple[int, str | int, str | int]], rid_base: int = 1) -> None:
        """Multicast group ``group`` to workers given as (port, ip, mac); replica ids from rid_base."""
        replicas = []
        for i, (port, ip, mac) in enumerate(members):
            rid = rid_base + i
            replicas.append((port, rid))
            self._insert("result_rewrite", {"egress_rid": Exact(rid)}, "set_result_dst", ip=_ip(ip), mac=_mac(mac))
        self.target.pre.insert_group(group, replicas)

    def set_smac(self, port: int, mac: str | int) -> None:
        self._insert("smac", {"egress_port": Exact(port)}, "set_smac", mac=_mac(mac))
