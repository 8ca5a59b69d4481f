"""bf-rt.json, written: a TNA program's BfRuntime schema, and the device's fixed tables.

Names follow bf-p4c: a table or register is ``<pipeline>.<control path>.<name>``
(``pipe.InaIngress.ina_node``, where ``pipe`` is the ``Pipeline`` instance that ``Switch``
takes), actions keep their P4Info names (``InaIngress.aggregate``), key fields are the key
expressions (``hdr.ina.node_id``; ``x.isValid()`` becomes ``x.$valid``), action data fields the
parameter names, and a register's data fields ``<control path>.<register>.f1``, or one field
per member of a struct (paired) register, ``<control path>.<register>.<member>``. Tables with
ternary, range or optional keys get the ``$MATCH_PRIORITY`` key (lower value wins, as on
Tofino); registers have the ``$REGISTER_INDEX`` key.

Everything else is as bf-p4c writes it for Tofino 1 (``python -m p4sim bfrt-json --compare``
against ``p4src/tna/ina.bf-rt.json`` finds no difference): key fields not mandatory,
``ConstTable`` for tables with ``const entries``, P4Info annotations (``@stage(7)``,
``@defaultonly``), register data fields annotated ``$bfrt_field_class: register_data`` (a read
answers one value per pipe), and the tables bf-p4c adds: ``<hash>.algorithm``/``configure``/
``compute`` for each ``Hash`` extern, the snapshot tables, the ingress parser's
``$PORT_METADATA`` and ``tbl_dbg_counter`` (see :mod:`p4sim.bfrt.externs`).

Ids follow bf-p4c too: a kind prefix byte over the Jenkins hash of the fully qualified name
(``pipe.InaIngress.ina_node``), actions their P4Info ids, fields bf-p4c's fixed ids
(``$MATCH_PRIORITY`` 65537, ``$REGISTER_INDEX`` 65557...). Only the snapshot tables' ids differ
from bf-p4c's. Clients should still resolve names through the bf-rt.json the device serves
(GetForwardingPipelineConfig), never hard-code ids.

The fixed tables (``$PORT``, ``$pre.mgid``, ``$pre.node``) carry the SDE's names, ids and enum
strings; only the fields p4sim models are listed.
"""
from __future__ import annotations

import json
import re
from typing import Any

import p4control.errors as errors
from p4control.bfrt.schema import MATCH_PRIORITY, REGISTER_INDEX
from p4control.model import ProgramInfo
from p4sim.frontend.types import bit_width
from p4sim.p4info import build_p4info, jenkins_one_at_a_time
from p4.config.v1 import p4info_pb2  # noqa: I001  (after p4sim.p4info: it picks the protobuf backend)

# Tofino 1 as bf-p4c describes it
STAGES = 12
LOGICAL_TABLES_PER_STAGE = 16
MAX_CHANNELS = 288                          # $PORT_METADATA rows: one per channel
PORT_WIDTH = 9
PORT_METADATA_BITS = 64                     # phase-0 data

# bf-p4c's fixed field ids (BF_RT_DATA_* in its bfruntime.h, from 1 << 16)
MATCH_PRIORITY_ID = 65537
REGISTER_INDEX_ID = 65557
PORT_METADATA_PORT_ID = 65575               # $DEFAULT_FIELD is the next one
HASH_ROTATE_ID = 65577                      # seed, msb, extend, pre_defined, user_defined follow
HASH_VALUE_ID = 65583
HASH_START_BIT_ID = 65584                   # length, order follow
SNAP_START_STAGE_ID = 65587                 # end_stage follows
SNAP_ID = {n: 65589 + i for i, n in enumerate([
    "enable", "trigger_state", "timer_enable", "timer_trigger", "timer_value_usecs", "field_info",
    "control_info", "table_info", "meter_alu_info", "stage_id", "prev_stage_trigger",
    "ingress_trigger_mode", "local_stage_trigger", "next_table_id", "next_table_name",
    "enabled_next_tables", "global_execute_tables", "enabled_global_execute_tables",
    "long_branch_tables", "enabled_long_branch_tables", "deparser_error", "table_id",
    "table_name", "meter_table_name", "meter_alu_operation_type", "match_hit_handle",
    "table_hit", "table_inhibited", "table_executed", "field_name", "valid_stages", "thread",
    "ingress_capture", "egress_capture", "ghost_capture"])}
DEBUG_CNT_ID = 65626                        # type, value follow

REGISTER_DATA_ANNOTATION = {"name": "$bfrt_field_class", "value": "register_data"}

# the SDE's hash algorithms (bf-utils): the non-CRC kinds, then every CRC variant
HASH_ALGORITHMS = [
    "IDENTITY", "RANDOM", "XOR", "CRC_8", "CRC_8_DARC", "CRC_8_I_CODE", "CRC_8_ITU",
    "CRC_8_MAXIM", "CRC_8_ROHC", "CRC_8_WCDMA", "CRC_16", "CRC_16_BYPASS", "CRC_16_DDS_110",
    "CRC_16_DECT", "CRC_16_DECT_R", "CRC_16_DECT_X", "CRC_16_DNP", "CRC_16_EN_13757",
    "CRC_16_GENIBUS", "CRC_16_MAXIM", "CRC_16_MCRF4XX", "CRC_16_RIELLO", "CRC_16_T10_DIF",
    "CRC_16_TELEDISK", "CRC_16_USB", "X_25", "XMODEM", "MODBUS", "KERMIT", "CRC_CCITT_FALSE",
    "CRC_AUG_CCITT", "CRC_32", "CRC_32_BZIP2", "CRC_32C", "CRC_32D", "CRC_32_MPEG", "POSIX",
    "CRC_32Q", "JAMCRC", "XFER", "CRC_64", "CRC_64_GO_ISO", "CRC_64_WE", "CRC_64_JONES"]

_P4INFO_MATCH = {p4info_pb2.MatchField.EXACT: "Exact", p4info_pb2.MatchField.LPM: "LPM",
                 p4info_pb2.MatchField.TERNARY: "Ternary", p4info_pb2.MatchField.RANGE: "Range",
                 p4info_pb2.MatchField.OPTIONAL: "Optional"}
_SCOPES = {p4info_pb2.ActionRef.TABLE_AND_DEFAULT: "TableAndDefault",
           p4info_pb2.ActionRef.TABLE_ONLY: "TableOnly",
           p4info_pb2.ActionRef.DEFAULT_ONLY: "DefaultOnly"}

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


def _int_type(kind: str, default: Any = None) -> dict[str, Any]:
    t: dict[str, Any] = {"type": kind}
    if default is not None:
        t["default_value"] = default
    return t


def _enum_type(choices: list[str], default: str | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"type": "string", "choices": list(choices)}
    if default is not None:
        t["default_value"] = default
    return t


def _singleton(fid: int, name: str, type_: dict[str, Any], *, mandatory: bool = False,
               read_only: bool = False, repeated: bool = False,
               annotations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"mandatory": mandatory, "read_only": read_only,
            "singleton": {"id": fid, "name": name, "repeated": repeated,
                          "annotations": list(annotations or []), "type": type_}}


def _container(fid: int, name: str, items: list[dict[str, Any]], *, read_only: bool = False,
               annotations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"mandatory": False, "read_only": read_only,
            "singleton": {"id": fid, "name": name, "repeated": True,
                          "annotations": list(annotations or []), "container": items}}


def _key(fid: int, name: str, type_: dict[str, Any], *, mandatory: bool = False,
         match_type: str = "Exact", annotations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"id": fid, "name": name, "repeated": False, "annotations": list(annotations or []),
            "mandatory": mandatory, "match_type": match_type, "type": type_}


def _table(name: str, tid: int, table_type: str, size: int, *,
           annotations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    # bf-p4c writes "annotations" only for tables made from a P4Info object that has them
    t: dict[str, Any] = {"name": name, "id": tid, "table_type": table_type, "size": size}
    if annotations is not None:
        t["annotations"] = annotations
    t["depends_on"] = []
    return t


def _annotations(texts: Any) -> list[dict[str, str]]:
    """P4Info annotation strings as bf-rt.json annotation objects (bf-p4c keeps the text)."""
    return [{"name": a} for a in texts]


class _Ids:
    """bf-p4c's ids: a kind prefix in the top byte and the Jenkins hash of the fully qualified
    name below it (as P4Info ids, but the names carry the pipeline), probing on a collision."""

    def __init__(self) -> None:
        self.used: set[int] = set()

    def __call__(self, prefix: int, name: str) -> int:
        start = value = jenkins_one_at_a_time(name.encode())
        while True:
            candidate = (prefix << 24) | (value & 0xFFFFFF)
            if candidate not in self.used:
                self.used.add(candidate)
                return candidate
            value = (value + 1) & 0xFFFFFFFF
            if value == start:
                raise errors.InvalidArgument(f"bf-rt.json: no id left for {name}")


def _match_tables(info: ProgramInfo, p4info: Any, pipeline: str, ids: _Ids) -> list[dict[str, Any]]:
    actions = {a.preamble.id: a for a in p4info.actions}
    out = []
    for t in p4info.tables:
        name = t.preamble.name
        table = _table(f"{pipeline}.{name}", ids(0x02, f"{pipeline}.{name}"), "MatchAction_Direct",
                       t.size, annotations=_annotations(t.preamble.annotations))
        table["has_const_default_action"] = t.const_default_action_id != 0
        keys, priority = [], False
        for mf in t.match_fields:
            kind = _P4INFO_MATCH.get(mf.match_type, "Exact")
            priority |= kind in ("Ternary", "Range", "Optional")
            # bf-p4c: key fields are never mandatory (the driver defaults them to 0)
            keys.append(_key(mf.id, key_field_name(mf.name), _bytes_type(mf.bitwidth),
                             match_type=kind, annotations=_annotations(mf.annotations)))
        if priority:
            keys.append(_key(MATCH_PRIORITY_ID, MATCH_PRIORITY, _int_type("uint32")))
        table["key"] = keys
        specs = []
        for ref in t.action_refs:
            act = actions[ref.id]
            specs.append({"id": act.preamble.id, "name": act.preamble.name,
                          "action_scope": _SCOPES[ref.scope],
                          "annotations": _annotations(ref.annotations),
                          "data": [{"id": p.id, "name": p.name, "repeated": False,
                                    "mandatory": True, "read_only": False,
                                    "annotations": _annotations(p.annotations),
                                    "type": _bytes_type(p.bitwidth)} for p in act.params]})
        table["action_specs"] = specs
        table["data"] = []
        table["supported_operations"] = []
        table["attributes"] = ["EntryScope"] + (["ConstTable"] if t.is_const_table else [])
        out.append(table)
    return out


def _registers(info: ProgramInfo, p4info: Any, pipeline: str, ids: _Ids) -> list[dict[str, Any]]:
    out = []
    for r in p4info.registers:
        reg = info.registers[r.preamble.name]
        full = f"{pipeline}.{r.preamble.name}"
        table = _table(full, ids(0x8B, full), "Register", r.size)
        table["key"] = [_key(REGISTER_INDEX_ID, REGISTER_INDEX, _int_type("uint32"), mandatory=True)]
        # the annotation tells clients (the SDE's bfrt_grpc) that a read answers one value per
        # pipe, so they present the field as a list
        table["data"] = [_singleton(i + 1, f"{r.preamble.name}.{f}", _bytes_type(w), mandatory=True,
                                    annotations=[REGISTER_DATA_ANNOTATION])
                         for i, (f, w) in enumerate(reg.fields or [("f1", reg.bitwidth)])]
        table["supported_operations"] = ["Sync"]
        table["attributes"] = []
        out.append(table)
    return out


def _hash_tables(h: Any, pipeline: str, ids: _Ids) -> list[dict[str, Any]]:
    name = f"{pipeline}.{h.path}"
    low = ids(0x8F, name) & 0xFFFFFF          # the P4Info Hash instance's id
    cfg_id, cmp_id, alg_id = (0x95 << 24) | low, (0x96 << 24) | low, (0x97 << 24) | low
    ids.used.update((cfg_id, cmp_id, alg_id))
    alg = _table(f"{name}.algorithm", alg_id, "DynHashAlgorithm", 1, annotations=[])
    alg["depends_on"] = [cfg_id]
    alg["key"] = []
    alg["data"] = [_singleton(HASH_ROTATE_ID, "rotate", _int_type("uint32", 0)),
                   _singleton(HASH_ROTATE_ID + 1, "seed", _int_type("uint32", 0)),
                   _singleton(HASH_ROTATE_ID + 2, "msb", _int_type("bool", False)),
                   _singleton(HASH_ROTATE_ID + 3, "extend", _int_type("bool", False))]

    def param(fid: int, pname: str, type_: dict[str, Any], mandatory: bool = False) -> dict[str, Any]:
        return {"id": fid, "name": pname, "repeated": False, "mandatory": mandatory,
                "read_only": False, "annotations": [], "type": type_}
    alg["action_specs"] = [
        {"id": HASH_ROTATE_ID + 4, "name": "pre_defined", "action_scope": "TableAndDefault",
         "annotations": [], "data": [param(1, "algorithm_name", _enum_type(HASH_ALGORITHMS, "RANDOM"))]},
        {"id": HASH_ROTATE_ID + 5, "name": "user_defined", "action_scope": "TableAndDefault",
         "annotations": [],
         "data": [param(1, "reverse", _int_type("bool", False)),
                  param(2, "polynomial", _int_type("uint64"), mandatory=True),
                  param(3, "init", _int_type("uint64", 0)),
                  param(4, "final_xor", _int_type("uint64", 0)),
                  param(5, "hash_bit_width", _int_type("uint64"))]}]
    alg["supported_operations"] = []
    alg["attributes"] = []
    cfg = _table(f"{name}.configure", cfg_id, "DynHashConfigure", 1, annotations=[])
    cfg["key"] = []
    data, constants = [], 0
    for i, f in enumerate(h.fields):
        items = [_singleton(HASH_START_BIT_ID, "start_bit", _int_type("uint64", 0)),
                 _singleton(HASH_START_BIT_ID + 1, "length", _int_type("uint64", f.width)),
                 _singleton(HASH_START_BIT_ID + 2, "order", _int_type("uint64"), mandatory=True)]
        fname, annotations = f.name, None
        if f.constant:     # bf-p4c: constant<n>_<width>_<value>, n counting the constants
            fname = f"constant{constants}_{f.width}_{f.name}"
            constants += 1
            annotations = [{"name": "bfrt_p4_constant"}]
        data.append(_container(i + 1, fname, items, annotations=annotations))
    cfg["data"] = data
    cfg["supported_operations"] = []
    cfg["attributes"] = []
    cmp_ = _table(f"{name}.compute", cmp_id, "DynHashCompute", 1, annotations=[])
    cmp_["depends_on"] = [cfg_id]
    cmp_["key"] = [_key(i + 1, f.name, _bytes_type(f.width)) for i, f in enumerate(h.fields)
                   if not f.constant]
    cmp_["data"] = [_singleton(HASH_VALUE_ID, "hash_value", _bytes_type(h.width), read_only=True)]
    cmp_["supported_operations"] = []
    cmp_["attributes"] = []
    cmp_["read_only"] = True
    return [alg, cfg, cmp_]


def _snapshot_tables(snapshot: dict[str, list[Any]], pipeline: str, ids: _Ids) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    name = f"{pipeline}.snapshot"
    cfg: dict[str, Any] | None = None
    # bf-p4c lists the egress snapshot first (its P4Info order); the first one makes .cfg
    for gress in ("egress", "ingress"):
        if gress not in snapshot:
            continue
        fields = snapshot[gress]
        low = ids(0x91, f"{pipeline}.{gress}.snapshot") & 0xFFFFFF
        if cfg is None:
            cfg = _table(f"{name}.cfg", (0x91 << 24) | low, "SnapshotCfg", STAGES)
            cfg["key"] = [_key(SNAP_START_STAGE_ID, "start_stage", _int_type("uint32", 0)),
                          _key(SNAP_START_STAGE_ID + 1, "end_stage", _int_type("uint32", STAGES - 1))]
            cfg["data"] = [
                _singleton(SNAP_ID["timer_enable"], "timer_enable", _int_type("bool", False)),
                _singleton(SNAP_ID["timer_value_usecs"], "timer_value_usecs", _int_type("uint32")),
                _singleton(SNAP_ID["ingress_trigger_mode"], "ingress_trigger_mode",
                           _enum_type(["INGRESS", "GHOST", "INGRESS_GHOST", "ANY"], "INGRESS")),
                _singleton(SNAP_ID["thread"], "thread", _enum_type(["INGRESS", "EGRESS", "ALL"]),
                           mandatory=True),
                *(_singleton(SNAP_ID[c], c, _int_type("uint32"), read_only=True, repeated=True)
                  for c in ("ingress_capture", "egress_capture", "ghost_capture"))]
            cfg["supported_operations"] = []
            cfg["attributes"] = []
            out.append(cfg)
        stage_key = [_key(SNAP_START_STAGE_ID, "stage", _int_type("uint32", 0), mandatory=True)]
        trig = _table(f"{name}.{gress}_trigger", (0x92 << 24) | low, "SnapshotTrigger", STAGES)
        trig["key"] = stage_key
        trig["data"] = [_singleton(SNAP_ID["enable"], "enable", _int_type("bool", False)),
                        _singleton(SNAP_ID["trigger_state"], "trigger_state",
                                   _enum_type(["PASSIVE", "ARMED", "FULL"]), read_only=True,
                                   repeated=True)]
        for f in fields:
            trig["data"].append(_singleton(f.id, f"trig.{f.name}", _bytes_type(f.width)))
            trig["data"].append(_singleton(f.id + 0x8000, f"trig.{f.name}_mask", _bytes_type(f.width)))
        trig["supported_operations"] = []
        trig["attributes"] = []
        out.append(trig)
        cfg["depends_on"].append(trig["id"])
        data = _table(f"{name}.{gress}_data", (0x93 << 24) | low, "SnapshotData", STAGES)
        data["key"] = [dict(stage_key[0])]
        ro = {"read_only": True}
        table_info = [_singleton(SNAP_ID["table_name"], "table_name", _int_type("string"), **ro),
                      _singleton(SNAP_ID["match_hit_handle"], "match_hit_handle", _int_type("uint32"), **ro),
                      *(_singleton(SNAP_ID[b], b, _int_type("bool"), **ro)
                        for b in ("table_hit", "table_inhibited", "table_executed"))]
        data["data"] = [
            _singleton(SNAP_ID["prev_stage_trigger"], "prev_stage_trigger", _int_type("bool", False), **ro),
            _singleton(SNAP_ID["timer_trigger"], "timer_trigger", _int_type("bool", False), **ro),
            _singleton(SNAP_ID["local_stage_trigger"], "local_stage_trigger", _int_type("bool", False), **ro),
            _singleton(SNAP_ID["next_table_name"], "next_table_name", _int_type("string"), **ro),
            _container(SNAP_ID["table_info"], "table_info", table_info, read_only=True),
            *(_singleton(f.id, f.name, _bytes_type(f.width), **ro) for f in fields)]
        data["supported_operations"] = []
        data["attributes"] = []
        out.append(data)
        live = _table(f"{name}.{gress}_liveness", (0x94 << 24) | low, "SnapshotLiveness", 0)
        live["key"] = [_key(SNAP_ID["field_name"], "field_name", _int_type("string"), mandatory=True)]
        live["data"] = [_singleton(SNAP_ID["valid_stages"], "valid_stages", _int_type("uint32"),
                                   read_only=True, repeated=True)]
        live["supported_operations"] = []
        live["attributes"] = []
        out.append(live)
    return out


def _port_metadata_table(ext: Any, pipeline: str, ids: _Ids) -> dict[str, Any]:
    name = f"{pipeline}.{ext.parser_name}.$PORT_METADATA"
    table = _table(name, ids(0x90, name), "PortMetadata", MAX_CHANNELS, annotations=[])
    table["key"] = [_key(PORT_METADATA_PORT_ID, f"{ext.intrinsic_md}.ingress_port",
                         _bytes_type(PORT_WIDTH), mandatory=True)]
    if ext.port_metadata is not None:      # port_metadata_unpack<T>: T's fields, all needed
        table["data"] = [_singleton(i + 1, n, _bytes_type(bit_width(t)), mandatory=True)
                         for i, (n, t) in enumerate(ext.port_metadata.fields)]
    else:
        table["data"] = [_singleton(PORT_METADATA_PORT_ID + 1, "$DEFAULT_FIELD",
                                    _bytes_type(PORT_METADATA_BITS))]
    table["supported_operations"] = []
    table["attributes"] = []
    return table


def _debug_counter_table() -> dict[str, Any]:
    table = _table("tbl_dbg_counter", 0x99 << 24, "TblDbgCnt", STAGES * LOGICAL_TABLES_PER_STAGE)
    table["key"] = [_key(DEBUG_CNT_ID, "tbl_name", _int_type("string"), mandatory=True)]
    table["data"] = [_singleton(DEBUG_CNT_ID + 1, "type",
                                _enum_type(["DISABLED", "TBL_MISS", "TBL_HIT", "GW_TBL_MISS",
                                            "GW_TBL_HIT", "GW_TBL_INHIBIT"], "TBL_HIT")),
                     _singleton(DEBUG_CNT_ID + 2, "value", _int_type("uint64", 0))]
    table["supported_operations"] = []
    table["attributes"] = []
    return table


def program_bfrt_info(program: Any, pipeline: str | None = None, *,
                      include_dirs: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The bf-rt.json document of a loaded TNA program, as bf-p4c writes it for Tofino 1: match
    tables, registers, then each ``Hash``'s algorithm/configure/compute tables, the snapshot
    tables, the ingress parser's ``$PORT_METADATA`` and ``tbl_dbg_counter`` (bf-p4c always
    writes the last one: 12 stages x 16 logical tables).

    ``program``: a :class:`~p4sim.program.Program` (everything), or only its
    :class:`ProgramInfo` (match tables and registers: what the other tables need is not in it).
    ``pipeline``: the table prefix (default: the program's ``Switch`` argument, else ``pipe``).
    """
    info: ProgramInfo = program if isinstance(program, ProgramInfo) else program.info
    if pipeline is None:
        pipeline = pipeline_name(program.source) if hasattr(program, "source") else "pipe"
    p4info = build_p4info(info)
    ids = _Ids()
    tables = _match_tables(info, p4info, pipeline, ids) + _registers(info, p4info, pipeline, ids)
    if not isinstance(program, ProgramInfo):
        from .externs import program_externs

        ext = program_externs(program, include_dirs)
        for h in ext.hashes:
            tables += _hash_tables(h, pipeline, ids)
        tables += _snapshot_tables(ext.snapshot, pipeline, ids)
        if ext.parser_name:
            tables.append(_port_metadata_table(ext, pipeline, ids))
        tables.append(_debug_counter_table())
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
    """Every difference between two bf-rt.json documents (p4sim's first, the compiler's second),
    one line each, ids aside: tables, their keys, actions, data fields and containers matched by
    name, then every property (types, widths, defaults, choices, ``mandatory``, ``read_only``,
    ``repeated``, annotations, attributes, operations, ``has_const_default_action``...), the
    order of named things, properties only one side has, ``depends_on`` (by table name) and
    ``learn_filters``. Ids are left out: clients resolve names."""
    out: list[str] = []

    def names_by_id(doc: dict[str, Any]) -> dict[int, str]:
        return {t.get("id"): t.get("name") for t in doc.get("tables", [])}

    ids = (names_by_id(ours), names_by_id(theirs))

    def name_of(x: Any) -> str | None:
        if isinstance(x, dict):
            if isinstance(x.get("name"), str):
                return x["name"]
            inner = x.get("singleton")
            if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                return inner["name"]
        return None

    def show(v: Any) -> str:
        text = json.dumps(v, sort_keys=True)
        return text if len(text) <= 120 else text[:117] + "..."

    def diff(where: str, a: Any, b: Any, label: str = "") -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for k in list(b) + [k for k in a if k not in b]:
                if k == "id":
                    continue
                sub = f"{where}: {k}"
                if k not in a:
                    out.append(f"{sub}: only in the compiler's bf-rt.json ({show(b[k])})")
                elif k not in b:
                    out.append(f"{sub}: only in p4sim's bf-rt.json ({show(a[k])})")
                elif k == "depends_on" and isinstance(a[k], list) and isinstance(b[k], list):
                    da = [ids[0].get(i, f"id {i}") for i in a[k]]
                    db = [ids[1].get(i, f"id {i}") for i in b[k]]
                    if da != db:
                        out.append(f"{sub}: {show(da)} vs {show(db)}")
                elif k != "annotations" and isinstance(a[k], list) and a[k] + b[k] and \
                        all(name_of(x) is not None for x in a[k] + b[k]):
                    diff(where, a[k], b[k], k)           # named things say what they are
                else:
                    diff(sub, a[k], b[k], k)
            return
        if label != "annotations" and isinstance(a, list) and isinstance(b, list) and (a or b) and \
                all(name_of(x) is not None for x in a + b):
            na, nb = [name_of(x) for x in a], [name_of(x) for x in b]
            if len(set(na)) == len(na) and len(set(nb)) == len(nb):
                ia, ib = dict(zip(na, a)), dict(zip(nb, b))
                what = {"tables": "table", "key": "key", "action_specs": "action",
                        "container": "field"}.get(label, "field")
                base = "" if where == "bf-rt.json" else f"{where}: "
                for n in nb:
                    if n not in ia:
                        out.append(f"{base}{what} {n}: only in the compiler's bf-rt.json")
                for n in na:
                    if n not in ib:
                        out.append(f"{base}{what} {n}: only in p4sim's bf-rt.json")
                common_a = [n for n in na if n in ib]
                common_b = [n for n in nb if n in ia]
                if common_a != common_b:
                    first = next(i for i, (x, y) in enumerate(zip(common_a, common_b)) if x != y)
                    out.append(f"{base}order of {label}: {common_a[first]} "
                               f"vs {common_b[first]} at position {first}")
                for n in common_b:
                    diff(f"{base}{what} {n}", ia[n], ib[n])
                return
        if a != b or type(a) is not type(b):
            out.append(f"{where}: {show(a)} vs {show(b)}")

    diff("bf-rt.json", ours, theirs)
    return out
