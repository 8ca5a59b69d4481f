"""bf-rt.json, read: the tables, keys, actions and data fields a BfRuntime client and server
agree on, indexed by id and by name.

Both ends resolve every id through this index (the server for what it receives, the client for
what it sends), so nothing depends on how a compiler numbered things. Table names are the SDE's
fully qualified ones (``pipe.InaIngress.ina_node``); :meth:`BfRtInfo.table` also accepts a
unique suffix (``InaIngress.ina_node``, ``ina_node``), as the SDE's Python client does.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

import p4control.errors as errors

# bf-rt.json scalar types and their widths in bits ("bytes" carries its own width)
_TYPE_WIDTH = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "int32": 32, "int64": 64,
               "bool": 1, "string": 0, "float": 32}

MATCH_PRIORITY = "$MATCH_PRIORITY"
REGISTER_INDEX = "$REGISTER_INDEX"
MAX_MATCH_PRIORITY = (1 << 24) - 1          # Tofino TCAM priorities are 24 bits


def _width(t: dict[str, Any]) -> int:
    if t.get("type") == "bytes":
        return int(t["width"])
    return _TYPE_WIDTH.get(t.get("type", ""), 0)


@dataclass
class KeySpec:
    id: int
    name: str
    match_type: str                  # "Exact", "Ternary", "LPM", "Range", "Optional"
    type: str                        # "bytes", "uint32", ...
    width: int
    mandatory: bool = False


@dataclass
class DataSpec:
    id: int
    name: str
    type: str                        # "bytes", "uint16", "bool", "string", ...
    width: int
    repeated: bool = False
    mandatory: bool = False
    read_only: bool = False
    choices: list[str] = field(default_factory=list)


@dataclass
class ActionSpec:
    id: int
    name: str
    scope: str                       # "TableAndDefault", "TableOnly", "DefaultOnly"
    data: list[DataSpec]

    def param(self, name: str) -> DataSpec:
        for d in self.data:
            if d.name == name:
                return d
        raise errors.NotFound(f"action {self.name} has no parameter '{name}'")


@dataclass
class TableSpec:
    id: int
    name: str
    table_type: str                  # "MatchAction_Direct", "Register", "PortConfigure", ...
    size: int
    keys: list[KeySpec]
    actions: list[ActionSpec]
    data: list[DataSpec]             # table-level data (registers, fixed tables)
    has_const_default_action: bool = False
    is_const_table: bool = False

    def key(self, name: str) -> KeySpec:
        for k in self.keys:
            if k.name == name:
                return k
        raise errors.NotFound(f"table {self.name} has no key field '{name}'")

    def key_by_id(self, fid: int) -> KeySpec:
        for k in self.keys:
            if k.id == fid:
                return k
        raise errors.NotFound(f"table {self.name} has no key field with id {fid}")

    def action(self, name: str) -> ActionSpec:
        for a in self.actions:
            if a.name == name:
                return a
        hits = [a for a in self.actions if a.name.endswith("." + name)]
        if len(hits) == 1:
            return hits[0]
        raise errors.NotFound(f"table {self.name} has no action '{name}'")

    def action_by_id(self, aid: int) -> ActionSpec:
        for a in self.actions:
            if a.id == aid:
                return a
        raise errors.NotFound(f"table {self.name} has no action with id {aid}")

    def datum(self, name: str) -> DataSpec:
        for d in self.data:
            if d.name == name:
                return d
        raise errors.NotFound(f"table {self.name} has no data field '{name}'")

    def datum_by_id(self, fid: int) -> DataSpec:
        for d in self.data:
            if d.id == fid:
                return d
        raise errors.NotFound(f"table {self.name} has no data field with id {fid}")


def _data_spec(d: dict[str, Any]) -> DataSpec:
    # table-level data wraps each field in "singleton" with the flags outside it; action
    # parameters are flat
    inner = d.get("singleton", d)
    t = inner.get("type", {})
    return DataSpec(int(inner["id"]), inner["name"], t.get("type", "bytes"), _width(t),
                    bool(inner.get("repeated", False)),
                    bool(d.get("mandatory", inner.get("mandatory", False))),
                    bool(d.get("read_only", inner.get("read_only", False))),
                    list(t.get("choices", [])))


def _table_spec(t: dict[str, Any]) -> TableSpec:
    keys = [KeySpec(int(k["id"]), k["name"], k.get("match_type", "Exact"),
                    k.get("type", {}).get("type", "bytes"), _width(k.get("type", {})),
                    bool(k.get("mandatory", False))) for k in t.get("key", [])]
    actions = [ActionSpec(int(a["id"]), a["name"], a.get("action_scope", "TableAndDefault"),
                          [_data_spec(d) for d in a.get("data", [])])
               for a in t.get("action_specs", [])]
    data = [_data_spec(d) for d in t.get("data", []) if "singleton" in d or "id" in d]
    # bf-p4c marks a table with const entries by its "ConstTable" attribute; older
    # schemas (and p4sim's before it wrote bf-p4c's) by "is_const_table"
    const = bool(t.get("is_const_table", False)) or "ConstTable" in (t.get("attributes") or [])
    return TableSpec(int(t["id"]), t["name"], t.get("table_type", ""), int(t.get("size", 0)),
                     keys, actions, data, bool(t.get("has_const_default_action", False)), const)


class BfRtInfo:
    """The tables of one or more bf-rt.json documents (a program's and the device's fixed ones)."""

    def __init__(self, docs: Iterable[dict[str, Any] | bytes | str]) -> None:
        self.by_id: dict[int, TableSpec] = {}
        self.by_name: dict[str, TableSpec] = {}
        for doc in docs:
            if isinstance(doc, (bytes, str)):
                doc = json.loads(doc)
            for t in doc.get("tables", []):
                spec = _table_spec(t)
                if spec.id in self.by_id:
                    raise errors.InvalidArgument(
                        f"bf-rt.json: table id {spec.id} used by {self.by_id[spec.id].name} and {spec.name}")
                self.by_id[spec.id] = spec
                self.by_name[spec.name] = spec

    def table(self, name: str) -> TableSpec:
        spec = self.by_name.get(name)
        if spec is not None:
            return spec
        hits = [t for n, t in self.by_name.items() if n.endswith("." + name)]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise errors.NotFound(f"no table named '{name}'")
        raise errors.InvalidArgument(f"table name '{name}' is ambiguous: "
                                     + ", ".join(sorted(t.name for t in hits)))

    def table_by_id(self, tid: int) -> TableSpec:
        spec = self.by_id.get(tid)
        if spec is None:
            raise errors.NotFound(f"no table with id {tid}")
        return spec

    def tables(self) -> list[TableSpec]:
        return list(self.by_id.values())
