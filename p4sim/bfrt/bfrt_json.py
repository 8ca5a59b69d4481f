"""bf-rt.json, written: a TNA program's BfRuntime schema, and the device's fixed tables.

Names follow bf-p4c: a table or register is ``<pipeline>.<control path>.<name>``
(``pipe.InaIngress.ina_node``, where ``pipe`` is the ``Pipeline`` instance that ``Switch``
takes), actions keep their P4Info names (``InaIngress.aggregate``), key fields are the key
expressions (``hdr.ina.node_id``; ``x.isValid()`` becomes ``x.$valid``), action data fields the
parameter names, and a register's data fields ``<control path>.<register>.f1``, or one field
per member of a struct (paired) register, ``<control path>.<register>.<member>``. Tables with
ternary, range or optional keys get the ``$MATCH_PRIORITY`` key (lower value wins, as on
Tofino); registers have the ``$REGISTER_INDEX`` key.

Ids: tables, actions and registers take their P4Info ids (p4sim numbers them as p4c does: an
8-bit kind prefix and a hash of the name), so they are stable across runs and machines; key
fields and action parameters are numbered 1, 2, ... in declaration order, ``$MATCH_PRIORITY``
is 65537. bf-p4c may number differently: clients must resolve names through the bf-rt.json the
device serves (GetForwardingPipelineConfig), never hard-code ids.

The fixed tables (``$PORT``, ``$pre.mgid``, ``$pre.node``) carry the SDE's names, ids and enum
strings; only the fields p4sim models are listed.
"""
from __future__ import annotations

import json
import re
from typing import Any

from p4sim.p4info import build_p4info
from p4sim.runtime.model import ProgramInfo

from .schema import MATCH_PRIORITY, REGISTER_INDEX

MATCH_PRIORITY_ID = 65537
MAX_MATCH_PRIORITY = (1 << 24) - 1          # Tofino TCAM priorities are 24 bits

PORT_TABLE_ID = 0xFF010001                  # $PORT
PRE_MGID_TABLE_ID = 0xFF020001              # $pre.mgid
PRE_NODE_TABLE_ID = 0xFF020002              # $pre.node

SPEEDS = ["BF_SPEED_NONE", "BF_SPEED_1G", "BF_SPEED_10G", "BF_SPEED_25G", "BF_SPEED_40G",
          "BF_SPEED_40G_NB", "BF_SPEED_40G_NON_BREAKABLE", "BF_SPEED_50G", "BF_SPEED_100G",
          "BF_SPEED_200G", "BF_SPEED_400G"]
FECS = ["BF_FEC_TYP_NONE", "BF_FEC_TYP_FIRECODE", "BF_FEC_TYP_REED_SOLOMON", "BF_FEC_TYP_FC",
        "BF_FEC_TYP_RS"]
AUTONEG = ["PM_AN_DEFAULT", "PM_AN_FORCE_ENABLE", "PM_AN_FORCE_DISABLE"]
LOOPBACK = ["BF_LPBK_NONE", "BF_LPBK_MAC_NEAR", "BF_LPBK_MAC_FAR", "BF_LPBK_PCS_NEAR",
            "BF_LPBK_SERDES_NEAR", "BF_LPBK_SERDES_FAR"]

_MATCH = {"exact": "Exact", "ternary": "Ternary", "lpm": "LPM", "range": "Range",
          "optional": "Optional"}


def pipeline_name(source: str) -> str:
    """The ``Pipeline`` instance ``Switch`` is given in ``main`` (bf-p4c's table prefix)."""
    m = re.search(r"\bSwitch\s*\(\s*(\w+)\s*[,)]\s*main\s*;", source) or \
        re.search(r"\bSwitch\s*\(\s*(\w+)", source)
    return m.group(1) if m else "pipe"


def key_field_name(expr: str) -> str:
    """bf-p4c's name of a key field: the expression, with ``isValid()`` as ``$valid``."""
    return re.sub(r"\.isValid\(\)$", ".$valid", expr)


def _bytes_type(width: int) -> dict[str, Any]:
    return {"type": "bytes", "width": width}


def _singleton(fid: int, name: str, type_: dict[str, Any], *, mandatory: bool = False,
               read_only: bool = False, repeated: bool = False) -> dict[str, Any]:
    return {"mandatory": mandatory, "read_only": read_only,
            "singleton": {"id": fid, "name": name, "repeated": repeated, "annotations": [],
                          "type": type_}}


def program_bfrt_info(info: ProgramInfo, pipeline: str = "pipe") -> dict[str, Any]:
    """The bf-rt.json document of a loaded TNA program (tables and registers)."""
    p4info = build_p4info(info)
    table_ids = {t.preamble.name: t.preamble.id for t in p4info.tables}
    action_ids = {a.preamble.name: a.preamble.id for a in p4info.actions}
    register_ids = {r.preamble.name: r.preamble.id for r in p4info.registers}
    tables: list[dict[str, Any]] = []
    for name, t in info.tables.items():
        if name not in table_ids:                  # @hidden: not part of the control plane
            continue
        keys = [{"id": i + 1, "name": key_field_name(k.name), "repeated": False,
                 "annotations": [], "mandatory": k.match_kind == "exact",
                 "match_type": _MATCH[k.match_kind], "type": _bytes_type(k.bitwidth)}
                for i, k in enumerate(t.keys)]
        if t.needs_priority:
            keys.append({"id": MATCH_PRIORITY_ID, "name": MATCH_PRIORITY, "repeated": False,
                         "annotations": [], "mandatory": True, "match_type": "Exact",
                         "type": {"type": "uint32"}})
        specs = []
        for ref in t.actions:
            act = info.actions[ref.name]
            scope = "TableOnly" if ref.table_only else "DefaultOnly" if ref.default_only \
                else "TableAndDefault"
            specs.append({"id": action_ids[ref.name], "name": ref.name, "action_scope": scope,
                          "annotations": [],
                          "data": [{"id": i + 1, "name": p.name, "repeated": False,
                                    "mandatory": True, "read_only": False, "annotations": [],
                                    "type": _bytes_type(p.bitwidth)}
                                   for i, p in enumerate(act.params)]})
        tables.append({"name": f"{pipeline}.{name}", "id": table_ids[name],
                       "table_type": "MatchAction_Direct", "size": t.size, "annotations": [],
                       "depends_on": [], "has_const_default_action": t.default_is_const,
                       "is_const_table": t.has_const_entries, "key": keys,
                       "action_specs": specs, "data": [], "supported_operations": [],
                       "attributes": ["EntryScope"]})
    for name, r in info.registers.items():
        if name not in register_ids:
            continue
        fields = r.fields or [("f1", r.bitwidth)]
        tables.append({"name": f"{pipeline}.{name}", "id": register_ids[name],
                       "table_type": "Register", "size": r.size, "annotations": [],
                       "depends_on": [],
                       "key": [{"id": 1, "name": REGISTER_INDEX, "repeated": False,
                                "annotations": [], "mandatory": True, "match_type": "Exact",
                                "type": {"type": "uint32"}}],
                       "data": [_singleton(i + 1, f"{name}.{f}", _bytes_type(w))
                                for i, (f, w) in enumerate(fields)],
                       "supported_operations": ["Sync"], "attributes": []})
    return {"schema_version": "1.0.0", "tables": tables, "learn_filters": []}


def fixed_bfrt_info() -> dict[str, Any]:
    """The device's fixed tables that p4sim serves: ports and multicast (PRE)."""
    def choice(values: list[str]) -> dict[str, Any]:
        return {"type": "string", "choices": values}

    dev_port_key = [{"id": 1, "name": "$DEV_PORT", "repeated": False, "annotations": [],
                     "mandatory": True, "match_type": "Exact", "type": {"type": "uint32"}}]
    port = {"name": "$PORT", "id": PORT_TABLE_ID, "table_type": "PortConfigure", "size": 512,
            "key": dev_port_key,
            "data": [_singleton(1, "$SPEED", choice(SPEEDS)),
                     _singleton(2, "$FEC", choice(FECS)),
                     _singleton(3, "$N_LANES", {"type": "uint32", "default_value": 1}),
                     _singleton(4, "$PORT_ENABLE", {"type": "bool", "default_value": False}),
                     _singleton(5, "$AUTO_NEGOTIATION", choice(AUTONEG)),
                     _singleton(6, "$LOOPBACK_MODE", choice(LOOPBACK)),
                     _singleton(7, "$TX_MTU", {"type": "uint32", "default_value": 10240}),
                     _singleton(8, "$RX_MTU", {"type": "uint32", "default_value": 10240}),
                     _singleton(25, "$PORT_UP", {"type": "bool"}, read_only=True)],
            "supported_operations": [], "attributes": []}
    mgid = {"name": "$pre.mgid", "id": PRE_MGID_TABLE_ID, "table_type": "PreMgid",
            "size": 65536,
            "key": [{"id": 1, "name": "$MGID", "annotations": [], "mandatory": True,
                     "match_type": "Exact", "type": {"type": "uint16"}}],
            "data": [_singleton(1, "$MULTICAST_NODE_ID", {"type": "uint32"}, repeated=True),
                     _singleton(2, "$MULTICAST_NODE_L1_XID_VALID", {"type": "bool"}, repeated=True),
                     _singleton(3, "$MULTICAST_NODE_L1_XID", {"type": "uint16"}, repeated=True)],
            "supported_operations": [], "attributes": []}
    node = {"name": "$pre.node", "id": PRE_NODE_TABLE_ID, "table_type": "PreNode",
            "size": 1 << 24,
            "key": [{"id": 1, "name": "$MULTICAST_NODE_ID", "annotations": [],
                     "mandatory": True, "match_type": "Exact", "type": {"type": "uint32"}}],
            "data": [_singleton(1, "$MULTICAST_RID", {"type": "uint16"}, mandatory=True),
                     _singleton(2, "$MULTICAST_LAG_ID", {"type": "uint8"}, repeated=True),
                     _singleton(3, "$DEV_PORT", {"type": "uint32"}, mandatory=True,
                                repeated=True)],
            "supported_operations": [], "attributes": []}
    return {"schema_version": "1.0.0", "tables": [port, mgid, node]}


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"


def compare(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """Differences that matter to a client between two bf-rt.json documents (p4sim's and
    bf-p4c's), one line each: tables (name, type, size), keys (name, match type, width),
    actions (name, scope, parameters) and data fields (name, width). Ids are not compared —
    clients resolve names — and tables only one compiler adds (bf-p4c's ``$``-prefixed fixed
    tables, port metadata, snapshot and debug tables) are left out."""
    def index(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {t["name"]: t for t in doc.get("tables", [])
                if t.get("table_type") in ("MatchAction_Direct", "Register")}

    def width(t: dict[str, Any]) -> Any:
        return t.get("width") if t.get("type") == "bytes" else t.get("type")

    def data_fields(entries: list[dict[str, Any]]) -> dict[str, Any]:
        out = {}
        for d in entries:
            s = d.get("singleton", d)
            out[s["name"]] = width(s["type"])
        return out

    a, b = index(ours), index(theirs)
    diffs = [f"table {n}: only in p4sim's bf-rt.json" for n in sorted(set(a) - set(b))]
    diffs += [f"table {n}: only in the compiler's bf-rt.json" for n in sorted(set(b) - set(a))]
    for name in sorted(set(a) & set(b)):
        x, y = a[name], b[name]
        for field in ("table_type", "size"):
            if x.get(field) != y.get(field):
                diffs.append(f"table {name}: {field} {x.get(field)} vs {y.get(field)}")
        kx = [(k["name"], k["match_type"], width(k["type"])) for k in x.get("key", [])]
        ky = [(k["name"], k["match_type"], width(k["type"])) for k in y.get("key", [])]
        if sorted(kx) != sorted(ky):
            diffs.append(f"table {name}: keys {sorted(kx)} vs {sorted(ky)}")
        ax = {s["name"]: (s.get("action_scope"), data_fields(s.get("data", [])))
              for s in x.get("action_specs", [])}
        ay = {s["name"]: (s.get("action_scope"), data_fields(s.get("data", [])))
              for s in y.get("action_specs", [])}
        for act in sorted(set(ax) | set(ay)):
            if ax.get(act) != ay.get(act):
                diffs.append(f"table {name}: action {act}: {ax.get(act)} vs {ay.get(act)}")
        dx, dy = data_fields(x.get("data", [])), data_fields(y.get("data", []))
        if dx != dy:
            diffs.append(f"table {name}: data fields {dx} vs {dy}")
    return diffs
