"""Per-entity Write and Read handling for the BfRuntime server.

:class:`Pipeline` is one loaded program: the switch, the BfRt schema served for it and how the
schema's names map onto the switch's tables and registers. :class:`FixedTables` is what every
device has whatever its program: the ``$PORT`` configuration and the PRE's ``$pre.node`` /
``$pre.mgid`` entries (the switch's PRE holds only the replication lists built from them).

``write_update`` applies one update and returns how to undo it (the server undoes an
all-or-nothing batch at its first failure); ``read_entity`` answers one entity of a Read. Both
raise :mod:`p4control.errors` exceptions whose ``grpc_code`` the server reports per update / per
request. The caller holds the server's lock and the switch's lock.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import p4control.bfrt.codec as codec
import p4control.errors as errors
from p4control.bfrt.proto import pb
from p4control.bfrt.schema import MATCH_PRIORITY, MAX_MATCH_PRIORITY, BfRtInfo, DataSpec, TableSpec
from p4control.model import ActionCall, TableEntry

from .bfrt_json import fixed_bfrt_info, key_field_name, pipeline_name, program_bfrt_info

Undo = Callable[[], None]

# tables bf-p4c lists that p4sim shows but does not model: requests to them answer UNIMPLEMENTED
UNSUPPORTED_TYPES = ("DynHashAlgorithm", "DynHashConfigure", "DynHashCompute", "SnapshotCfg",
                     "SnapshotTrigger", "SnapshotData", "SnapshotLiveness", "PortMetadata",
                     "TblDbgCnt")


def _width_of(spec: Any) -> tuple[str, int]:
    return spec.type, spec.width


def json_bytes(doc: dict[str, Any]) -> bytes:
    """A bf-rt.json document as the bytes ``bfruntime_info`` carries."""
    return json.dumps(doc, indent=1).encode()


class Pipeline:
    """One loaded program: the switch, its BfRt schema and how schema names map to it.

    ``bfrt_json``: a schema to serve instead of p4sim's own (a compiler's bf-rt.json: its ids,
    names and annotations are served as they are). Its tables are mapped onto the program's by
    name; every table, key field, action, parameter and data field it names must be the
    program's, with the same match kind and width. ``strict``: the program may have nothing the
    schema lacks either (``serve --bfrt-json``); otherwise (a pushed config) the schema may
    describe a subset."""

    def __init__(self, switch: Any, p4_name: str, bfrt_json: dict[str, Any] | None = None, *,
                 strict: bool = False, include_dirs: list[str] | tuple[str, ...] = ()) -> None:
        if switch.program.arch != "tna":
            raise errors.InvalidArgument(f"BfRuntime serves TNA programs; this one is {switch.program.arch}")
        self.switch = switch
        self.p4_name = p4_name
        self.pipe = pipeline_name(switch.program.source)
        ours = program_bfrt_info(switch.program, self.pipe, include_dirs=include_dirs)
        self.json = bfrt_json if bfrt_json is not None else ours
        if not isinstance(self.json, dict) or not isinstance(self.json.get("tables"), list):
            raise errors.InvalidArgument("bf-rt.json: not a BfRt schema (no \"tables\" list)")
        try:
            self.info = BfRtInfo([self.json, fixed_bfrt_info()])
        except (KeyError, TypeError, ValueError) as e:
            raise errors.InvalidArgument(f"bf-rt.json: malformed table entry ({type(e).__name__}: {e})") from None
        self.tables: dict[int, str] = {}          # schema table id -> p4sim table/register name
        self.keys: dict[int, dict[str, str]] = {}  # table id -> bf-rt key name -> p4sim key name
        self._bind(BfRtInfo([ours]), strict)

    def _bind(self, ours: BfRtInfo, strict: bool) -> None:
        info = self.switch.info
        for spec in self.info.tables():
            if spec.name.startswith("$"):
                continue
            mine = ours.by_name.get(spec.name)
            if mine is None:
                raise errors.InvalidArgument(f"bf-rt.json: table {spec.name} is not in the program")
            if spec.table_type != mine.table_type:
                raise errors.InvalidArgument(f"bf-rt.json: table {spec.name} is a {spec.table_type} "
                                             f"table, the program's is {mine.table_type}")
            if spec.table_type in UNSUPPORTED_TYPES:
                continue
            local = spec.name.split(".", 1)[1] if spec.name.startswith(self.pipe + ".") else spec.name
            if spec.table_type == "Register":
                want = {d.name: _width_of(d) for d in mine.data}
                have = {d.name: _width_of(d) for d in spec.data}
                if have != want:
                    raise errors.InvalidArgument(f"bf-rt.json: register {spec.name} has data fields "
                                                 f"{sorted(have)}, the program {sorted(want)}")
            elif spec.table_type.startswith("MatchAction"):
                t = info.tables[local]
                self.keys[spec.id] = {key_field_name(k.name): k.name for k in t.keys}
                want = {k.name: (k.match_type, k.width) for k in mine.keys}
                have = {k.name: (k.match_type, k.width) for k in spec.keys}
                if have != want:
                    diff = sorted(set(have.items()) ^ set(want.items()))
                    raise errors.InvalidArgument(f"bf-rt.json: table {spec.name}: key fields differ "
                                                 f"from the program's ({', '.join(n for n, _ in diff)})")
                theirs = {a.name: {d.name: _width_of(d) for d in a.data} for a in spec.actions}
                mine_a = {a.name: {d.name: _width_of(d) for d in a.data} for a in mine.actions}
                for a, params in theirs.items():
                    if a not in mine_a:
                        raise errors.InvalidArgument(f"bf-rt.json: table {spec.name}: action {a} "
                                                     "is not one of the program's for it")
                    if params != mine_a[a]:
                        raise errors.InvalidArgument(f"bf-rt.json: table {spec.name}: action {a} has "
                                                     f"parameters {params}, the program's {mine_a[a]}")
                if strict and set(mine_a) - set(theirs):
                    raise errors.InvalidArgument(f"bf-rt.json: table {spec.name} lacks the program's "
                                                 f"actions {', '.join(sorted(set(mine_a) - set(theirs)))}")
            else:
                raise errors.InvalidArgument(f"bf-rt.json: table type {spec.table_type} of {spec.name} is not supported")
            self.tables[spec.id] = local
        if strict:
            missing = sorted(set(ours.by_name) - set(self.info.by_name))
            if missing:
                raise errors.InvalidArgument(f"bf-rt.json: the program's table {missing[0]} is not in it"
                                             + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else ""))

    def config(self) -> Any:
        cfg = pb.ForwardingPipelineConfig(p4_name=self.p4_name,
                                          bfruntime_info=json_bytes(self.json))
        cfg.profiles.add(profile_name=self.pipe, binary=self.switch.program.source.encode(),
                         pipe_scope=[0, 1, 2, 3])
        return cfg


@dataclass
class FixedTables:
    """The state of the tables every device has ($PORT, $pre.node, $pre.mgid). ``known_ports``:
    the dev ports that exist ($PORT and PRE nodes refuse others; None: any 9-bit port). It
    outlives a program load, except the PRE entries, which the server clears then."""

    known_ports: set[int] | None = None
    port_config: dict[int, dict[str, Any]] = field(default_factory=dict)
    pre_nodes: dict[int, tuple[int, list[int]]] = field(default_factory=dict)   # node id -> (rid, dev ports)
    pre_groups: dict[int, list[tuple[int, int | None]]] = field(default_factory=dict)  # mgid -> [(node, l1 xid)]

    def clear_pre(self) -> None:
        self.pre_nodes.clear()
        self.pre_groups.clear()

    # ---- $PORT
    def port_key(self, spec: TableSpec, te: Any, what: str) -> int:
        if len(te.key.fields) != 1:
            raise errors.InvalidArgument(f"{what}: the key is $DEV_PORT alone")
        port = codec.int_key(spec.key_by_id(te.key.fields[0].field_id), te.key.fields[0], what)
        if self.known_ports is not None and port not in self.known_ports:
            raise errors.InvalidArgument(f"{what}: dev port {port} does not exist on this switch "
                                         f"(ports: {', '.join(map(str, sorted(self.known_ports)))})")
        if self.known_ports is None and port >> 9:
            raise errors.InvalidArgument(f"{what}: dev port {port} is not a 9-bit port")
        return port

    def write_port(self, spec: TableSpec, te: Any, utype: int, what: str) -> list[Undo]:
        if not te.key.fields and utype == pb.Update.DELETE:
            saved = dict(self.port_config)
            self.port_config.clear()
            return [lambda: self.port_config.update(saved)]
        port = self.port_key(spec, te, what)
        what = f"{what} dev port {port}"
        old = self.port_config.get(port)

        def restore() -> None:
            if old is None:
                self.port_config.pop(port, None)
            else:
                self.port_config[port] = old
        if utype == pb.Update.DELETE:
            if old is None:
                raise errors.NotFound(f"{what}: the port was not added")
            del self.port_config[port]
            return [restore]
        values: dict[str, Any] = {}
        for f in te.data.fields:
            ds = spec.datum_by_id(f.field_id)
            if ds.read_only:
                raise errors.InvalidArgument(f"{what}: {ds.name} is read-only")
            values[ds.name] = codec.data_value(ds, f, what)
        if utype == pb.Update.INSERT or (utype == pb.Update.INSERT_OR_MODIFY and old is None):
            if old is not None:
                raise errors.AlreadyExists(f"{what}: the port is already added")
            if "$SPEED" not in values:
                raise errors.InvalidArgument(f"{what}: adding a port needs $SPEED")
            cfg = {"$FEC": "BF_FEC_TYP_NONE", "$N_LANES": 1, "$PORT_ENABLE": False,
                   "$AUTO_NEGOTIATION": "PM_AN_DEFAULT", "$LOOPBACK_MODE": "BF_LPBK_NONE",
                   "$TX_MTU": 10240, "$RX_MTU": 10240}
        elif utype in (pb.Update.MODIFY, pb.Update.INSERT_OR_MODIFY):
            if old is None:
                raise errors.NotFound(f"{what}: the port was not added")
            cfg = dict(old)
        else:
            raise errors.Unimplemented(f"{what}: update type {pb.Update.Type.Name(utype)}")
        cfg.update(values)
        if cfg["$SPEED"] == "BF_SPEED_NONE":
            raise errors.InvalidArgument(f"{what}: $SPEED BF_SPEED_NONE cannot be configured")
        if cfg["$FEC"] in ("BF_FEC_TYP_REED_SOLOMON", "BF_FEC_TYP_RS") and \
                cfg["$SPEED"] in ("BF_SPEED_1G", "BF_SPEED_10G", "BF_SPEED_40G"):
            raise errors.InvalidArgument(f"{what}: Reed-Solomon FEC is not available at {cfg['$SPEED']}")
        self.port_config[port] = cfg
        return [restore]

    def read_port(self, spec: TableSpec, te: Any, what: str) -> list[Any]:
        keys = [self.port_key(spec, te, what)] if te.key.fields else sorted(self.port_config)
        out = []
        for port in keys:
            cfg = self.port_config.get(port)
            if cfg is None:
                raise errors.NotFound(f"{what}: dev port {port} was not added")
            e = pb.TableEntry(table_id=spec.id)
            e.key.fields.add(field_id=spec.keys[0].id).exact.value = codec.encode_int(port, 32, what)
            up = cfg["$PORT_ENABLE"] and (self.known_ports is None or port in self.known_ports)
            for ds in spec.data:
                val = up if ds.name == "$PORT_UP" else cfg.get(ds.name)
                if val is not None:
                    e.data.fields.append(codec.data_field(ds, val, what))
            out.append(e)
        return out

    # ---- $pre.node / $pre.mgid
    def _pre_snapshot(self, switch: Any) -> Undo:
        nodes, groups = copy.deepcopy(self.pre_nodes), copy.deepcopy(self.pre_groups)

        def restore() -> None:
            stale = set(self.pre_groups) - set(groups)
            self.pre_nodes, self.pre_groups = nodes, groups
            for g in stale:
                switch.pre.delete_group(g)
            for g in groups:
                self._publish(switch, g)
        return restore

    def _publish(self, switch: Any, mgid: int) -> None:
        reps: list[tuple[int, int]] = []
        for node, _xid in self.pre_groups[mgid]:
            rid, ports = self.pre_nodes[node]
            reps.extend((port, rid) for port in sorted(set(ports)))
        switch.pre.set_group(mgid, reps)

    def write_pre(self, switch: Any, spec: TableSpec, te: Any, update: Any, what: str) -> list[Undo]:
        undo = self._pre_snapshot(switch)
        utype = update.type
        if len(te.key.fields) != 1:
            raise errors.InvalidArgument(f"{what}: the key is {spec.keys[0].name} alone")
        key = codec.int_key(spec.key_by_id(te.key.fields[0].field_id), te.key.fields[0], what)
        values = {spec.datum_by_id(f.field_id).name: codec.data_value(spec.datum_by_id(f.field_id), f, what)
                  for f in te.data.fields}
        if spec.table_type == "PreNode":
            what = f"{what} node {key}"
            users = [g for g, members in self.pre_groups.items() if any(n == key for n, _ in members)]
            if utype == pb.Update.DELETE:
                if key not in self.pre_nodes:
                    raise errors.NotFound(f"{what}: no such node")
                if users:
                    raise errors.FailedPrecondition(f"{what}: still a member of multicast group(s) {users}")
                del self.pre_nodes[key]
                return [undo]
            if values.get("$MULTICAST_LAG_ID"):
                raise errors.Unimplemented(f"{what}: LAG members")
            if utype == pb.Update.INSERT:
                if key in self.pre_nodes:
                    raise errors.AlreadyExists(f"{what}: the node exists")
                if "$MULTICAST_RID" not in values:
                    raise errors.InvalidArgument(f"{what}: a node needs $MULTICAST_RID")
                ports = values.get("$DEV_PORT", [])
                self._check_ports(ports, what)
                self.pre_nodes[key] = (values["$MULTICAST_RID"], list(ports))
            elif utype == pb.Update.MODIFY:
                if key not in self.pre_nodes:
                    raise errors.NotFound(f"{what}: no such node")
                rid, ports = self.pre_nodes[key]
                ports = values.get("$DEV_PORT", ports)
                self._check_ports(ports, what)
                self.pre_nodes[key] = (values.get("$MULTICAST_RID", rid), list(ports))
                try:
                    for g in users:
                        self._publish(switch, g)
                except errors.ControlPlaneError:
                    undo()
                    raise
            else:
                raise errors.Unimplemented(f"{what}: update type {pb.Update.Type.Name(utype)}")
            return [undo]
        # $pre.mgid
        what = f"{what} group {key}"
        if utype == pb.Update.DELETE:
            if key not in self.pre_groups:
                raise errors.NotFound(f"{what}: no such multicast group")
            del self.pre_groups[key]
            switch.pre.delete_group(key)
            return [undo]
        nodes = values.get("$MULTICAST_NODE_ID", [])
        valid = values.get("$MULTICAST_NODE_L1_XID_VALID", [False] * len(nodes))
        xids = values.get("$MULTICAST_NODE_L1_XID", [0] * len(nodes))
        if not len(nodes) == len(valid) == len(xids):
            raise errors.InvalidArgument(f"{what}: $MULTICAST_NODE_ID, _L1_XID_VALID and _L1_XID "
                                         "must have the same length")
        members = [(n, x if v else None) for n, v, x in zip(nodes, valid, xids)]
        for n, _ in members:
            if n not in self.pre_nodes:
                raise errors.NotFound(f"{what}: node {n} does not exist")
        old = self.pre_groups.get(key)
        if utype == pb.Update.INSERT:
            if old is not None:
                raise errors.AlreadyExists(f"{what}: the group exists")
            new = members
        elif utype == pb.Update.MODIFY:
            if old is None:
                raise errors.NotFound(f"{what}: no such multicast group")
            new = members
        elif utype == pb.Update.MODIFY_INC:
            if old is None:
                raise errors.NotFound(f"{what}: no such multicast group")
            if te.table_flags.mod_del:
                gone = {n for n, _ in members}
                missing = gone - {n for n, _ in old}
                if missing:
                    raise errors.NotFound(f"{what}: node(s) {sorted(missing)} are not members")
                new = [m for m in old if m[0] not in gone]
            else:
                new = old + members
        else:
            raise errors.Unimplemented(f"{what}: update type {pb.Update.Type.Name(utype)}")
        ids = [n for n, _ in new]
        if len(set(ids)) != len(ids):
            raise errors.InvalidArgument(f"{what}: a node appears twice")
        for n in ids:   # a node is one branch of one multicast tree on Tofino
            other = [g for g, ms in self.pre_groups.items() if g != key and any(m == n for m, _ in ms)]
            if other:
                raise errors.AlreadyExists(f"{what}: node {n} already belongs to group {other[0]}")
        self.pre_groups[key] = new
        try:
            self._publish(switch, key)
        except errors.ControlPlaneError:
            undo()
            raise
        return [undo]

    def _check_ports(self, ports: list[int], what: str) -> None:
        for port in ports:
            if self.known_ports is not None and port not in self.known_ports:
                raise errors.InvalidArgument(f"{what}: dev port {port} does not exist on this switch")
            if port >> 9:
                raise errors.InvalidArgument(f"{what}: dev port {port} is not a 9-bit port")

    def read_pre(self, spec: TableSpec, te: Any, what: str) -> list[Any]:
        store: dict[int, Any] = self.pre_nodes if spec.table_type == "PreNode" else self.pre_groups
        if te.key.fields:
            k = codec.int_key(spec.key_by_id(te.key.fields[0].field_id), te.key.fields[0], what)
            if k not in store:
                raise errors.NotFound(f"{what}: no entry {k}")
            keys = [k]
        else:
            keys = sorted(store)
        out = []
        for k in keys:
            e = pb.TableEntry(table_id=spec.id)
            e.key.fields.add(field_id=spec.keys[0].id).exact.value = codec.encode_int(k, spec.keys[0].width, what)
            if spec.table_type == "PreNode":
                rid, ports = store[k]
                vals = {"$MULTICAST_RID": rid, "$DEV_PORT": ports, "$MULTICAST_LAG_ID": []}
            else:
                ms = store[k]
                vals = {"$MULTICAST_NODE_ID": [n for n, _ in ms],
                        "$MULTICAST_NODE_L1_XID_VALID": [x is not None for _, x in ms],
                        "$MULTICAST_NODE_L1_XID": [x or 0 for _, x in ms]}
            for ds in spec.data:
                if ds.name in vals:
                    e.data.fields.append(codec.data_field(ds, vals[ds.name], what))
            out.append(e)
        return out


def _unsupported(spec: TableSpec) -> errors.Unimplemented:
    return errors.Unimplemented(f"{spec.name}: {spec.table_type} tables are not supported by p4sim "
                                "(listed as bf-p4c lists them)")


# ------------------------------------------------------------------ Write
def write_update(p: Pipeline, fixed: FixedTables, update: Any) -> list[Undo]:
    """Apply one ``bfrt_proto.Update``; the returned callables, run in reverse, undo it."""
    kind = update.entity.WhichOneof("entity")
    if kind == "table_operation":
        spec = p.info.table_by_id(update.entity.table_operation.table_id)
        if update.entity.table_operation.table_operations_type not in ("SyncRegisters", "SyncCounters", "UpdateHitState"):
            raise errors.Unimplemented(f"table operation '{update.entity.table_operation.table_operations_type}' on {spec.name}")
        return []                            # p4sim state is always in sync
    if kind != "table_entry":
        raise errors.Unimplemented(f"writing {kind} entities")
    te = update.entity.table_entry
    spec = p.info.table_by_id(te.table_id)
    what = f"{spec.name}"
    utype = update.type
    if utype == pb.Update.UNSPECIFIED:
        raise errors.InvalidArgument(f"{what}: update type is unspecified")
    if spec.table_type.startswith("MatchAction"):
        return _write_match(p, spec, te, utype, what)
    if spec.table_type == "Register":
        return _write_register(p, spec, te, utype, what)
    if spec.table_type == "PortConfigure":
        return fixed.write_port(spec, te, utype, what)
    if spec.table_type in ("PreNode", "PreMgid"):
        return fixed.write_pre(p.switch, spec, te, update, what)
    raise _unsupported(spec)


# ---- match-action tables
def _match(p: Pipeline, spec: TableSpec, te: Any, what: str) -> tuple[dict[str, Any], int]:
    names = p.keys[spec.id]
    match: dict[str, Any] = {}
    priority = 0
    seen: set[int] = set()
    for k in te.key.fields:
        ks = spec.key_by_id(k.field_id)
        if k.field_id in seen:
            raise errors.InvalidArgument(f"{what}: key field {ks.name} given twice")
        seen.add(k.field_id)
        if ks.name == MATCH_PRIORITY:
            mp = codec.int_key(ks, k, what)
            if mp > MAX_MATCH_PRIORITY:
                raise errors.InvalidArgument(f"{what}: $MATCH_PRIORITY {mp} is above {MAX_MATCH_PRIORITY}")
            priority = MAX_MATCH_PRIORITY + 1 - mp    # p4sim: larger wins
            continue
        m = codec.key_match(ks, k, what)
        if m is not None:
            match[names[ks.name]] = m
    for ks in spec.keys:
        if ks.id not in seen and (ks.mandatory or ks.match_type == "Exact"):
            raise errors.InvalidArgument(f"{what}: missing key field {ks.name}")
    return match, priority


def _action(spec: TableSpec, data: Any, what: str) -> ActionCall:
    if not data.action_id:
        raise errors.InvalidArgument(f"{what}: no action given")
    act = spec.action_by_id(data.action_id)
    args: dict[str, int] = {}
    for f in data.fields:
        ds = next((d for d in act.data if d.id == f.field_id), None)
        if ds is None:
            raise errors.InvalidArgument(f"{what}: action {act.name} has no data field with id {f.field_id}")
        args[ds.name] = codec.data_value(ds, f, f"{what}: action {act.name}")
    missing = [d.name for d in act.data if d.name not in args]
    if missing:
        raise errors.InvalidArgument(f"{what}: action {act.name} needs {', '.join(missing)}")
    return ActionCall(act.name, args)


def _write_match(p: Pipeline, spec: TableSpec, te: Any, utype: int, what: str) -> list[Undo]:
    sw, name = p.switch, p.tables[spec.id]
    if te.is_default_entry:
        old = sw.table_get_default(name)
        if utype in (pb.Update.DELETE, pb.Update.RESET):
            sw.table_reset_default(name)
        elif utype in (pb.Update.INSERT, pb.Update.MODIFY, pb.Update.INSERT_OR_MODIFY):
            call = _action(spec, te.data, what)
            a = spec.action(call.name)
            if a.scope == "TableOnly":
                raise errors.InvalidArgument(f"{what}: action {a.name} cannot be the default action")
            sw.table_set_default(name, call)
        else:
            raise errors.Unimplemented(f"{what}: update type {pb.Update.Type.Name(utype)} of a default entry")
        return [lambda: sw.table_set_default(name, old)]
    if utype == pb.Update.DELETE and not te.key.fields:
        before = [e for e in sw.table_entries(name) if not e.is_const]
        sw.table_clear(name)

        def refill() -> None:
            sw.table_clear(name)
            for e in before:
                sw.table_insert(name, e)
        return [refill]
    match, priority = _match(p, spec, te, what)
    if utype == pb.Update.DELETE:
        old = sw.table_get(name, match, priority)
        sw.table_delete(name, match, priority)
        return [lambda: sw.table_insert(name, old)]
    call = _action(spec, te.data, what)
    if spec.action(call.name).scope == "DefaultOnly":
        raise errors.InvalidArgument(f"{what}: action {call.name} is for the default entry only")
    entry = TableEntry(match, call, priority)
    exists = True
    try:
        old = sw.table_get(name, match, priority)
    except errors.NotFound:
        exists = False
    if utype == pb.Update.INSERT or (utype == pb.Update.INSERT_OR_MODIFY and not exists):
        sw.table_insert(name, entry)
        return [lambda: sw.table_delete(name, match, priority)]
    if utype in (pb.Update.MODIFY, pb.Update.INSERT_OR_MODIFY):
        sw.table_modify(name, entry)
        return [lambda: sw.table_modify(name, old)]
    raise errors.Unimplemented(f"{what}: update type {pb.Update.Type.Name(utype)}")


# ---- registers
def _register_fields(p: Pipeline, spec: TableSpec) -> tuple[str, list[DataSpec], bool]:
    name = p.tables[spec.id]
    reg = p.switch.info.registers[name]
    order = [f"{name}.{f}" for f, _ in (reg.fields or [("f1", reg.bitwidth)])]
    return name, [spec.datum(n) for n in order], bool(reg.fields)


def _write_register(p: Pipeline, spec: TableSpec, te: Any, utype: int, what: str) -> list[Undo]:
    sw = p.switch
    name, fields, paired = _register_fields(p, spec)
    if te.is_default_entry:
        raise errors.InvalidArgument(f"{what}: registers have no default entry")
    if not te.key.fields:
        if utype not in (pb.Update.DELETE, pb.Update.RESET):
            raise errors.InvalidArgument(f"{what}: missing key field $REGISTER_INDEX")
        reg = sw.registers[name]
        saved = [reg.cp_read(i) for i in range(reg.size)]
        sw.register_reset(name)

        def restore() -> None:
            for i, v in enumerate(saved):
                reg.cp_write(i, v)
        return [restore]
    if len(te.key.fields) != 1:
        raise errors.InvalidArgument(f"{what}: a register key is $REGISTER_INDEX alone")
    index = codec.int_key(spec.key_by_id(te.key.fields[0].field_id), te.key.fields[0], what)
    old = sw.register_read(name, index)
    if utype in (pb.Update.DELETE, pb.Update.RESET):
        initial = sw.registers[name].initial
        sw.register_write(name, index, initial)
        return [lambda: sw.register_write(name, index, old)]
    if utype not in (pb.Update.INSERT, pb.Update.MODIFY, pb.Update.INSERT_OR_MODIFY):
        raise errors.Unimplemented(f"{what}: update type {pb.Update.Type.Name(utype)}")
    values = list(old) if paired else [old]
    given = False
    for f in te.data.fields:
        pos = next((i for i, d in enumerate(fields) if d.id == f.field_id), None)
        if pos is None:
            raise errors.InvalidArgument(f"{what}: no data field with id {f.field_id}")
        values[pos] = codec.data_value(fields[pos], f, what)
        given = True
    if not given:
        raise errors.InvalidArgument(f"{what}: no data fields to write")
    sw.register_write(name, index, tuple(values) if paired else values[0])
    return [lambda: sw.register_write(name, index, old)]


# ------------------------------------------------------------------ Read
def read_entity(p: Pipeline, fixed: FixedTables, ent: Any) -> list[Any]:
    """The ``bfrt_proto.Entity`` messages that answer one requested entity."""
    kind = ent.WhichOneof("entity")
    if kind == "table_usage":
        spec = p.info.table_by_id(ent.table_usage.table_id)
        n = len(_read_table(p, fixed, spec, pb.TableEntry(table_id=spec.id)))
        return [pb.Entity(table_usage=pb.TableUsage(table_id=spec.id, usage=n))]
    if kind != "table_entry":
        raise errors.Unimplemented(f"reading {kind} entities")
    spec = p.info.table_by_id(ent.table_entry.table_id)
    return [pb.Entity(table_entry=e) for e in _read_table(p, fixed, spec, ent.table_entry)]


def _read_table(p: Pipeline, fixed: FixedTables, spec: TableSpec, te: Any) -> list[Any]:
    what = spec.name
    if spec.table_type.startswith("MatchAction"):
        sw, name = p.switch, p.tables[spec.id]
        if te.is_default_entry:
            call = sw.table_get_default(name)
            out = pb.TableEntry(table_id=spec.id, is_default_entry=True)
            _fill_action(spec, call, out.data)
            return [out]
        if te.key.fields:
            match, priority = _match(p, spec, te, what)
            entries = [sw.table_get(name, match, priority)]
        else:
            entries = sw.table_entries(name)
        return [_entry_proto(p, spec, e) for e in entries]
    if spec.table_type == "Register":
        return _read_register(p, spec, te, what)
    if spec.table_type == "PortConfigure":
        return fixed.read_port(spec, te, what)
    if spec.table_type in ("PreNode", "PreMgid"):
        return fixed.read_pre(spec, te, what)
    raise _unsupported(spec)


def _read_register(p: Pipeline, spec: TableSpec, te: Any, what: str) -> list[Any]:
    name, fields, paired = _register_fields(p, spec)
    reg = p.switch.registers[name]
    if te.key.fields:
        idx = [codec.int_key(spec.key_by_id(te.key.fields[0].field_id), te.key.fields[0], what)]
    else:
        idx = list(range(reg.size))
    out = []
    for i in idx:
        v = p.switch.register_read(name, i)
        vals = list(v) if paired else [v]
        e = pb.TableEntry(table_id=spec.id)
        e.key.fields.add(field_id=spec.keys[0].id).exact.value = codec.encode_int(i, 32, what)
        for ds, val in zip(fields, vals):   # one value per pipe; p4sim has one pipe
            e.data.fields.append(codec.data_field(ds, val & ((1 << ds.width) - 1), what))
        out.append(e)
    return out


def _fill_action(spec: TableSpec, call: ActionCall, data: Any) -> None:
    act = spec.action(call.name)
    data.action_id = act.id
    for ds in act.data:
        data.fields.append(codec.data_field(ds, call.args[ds.name], spec.name))


def _entry_proto(p: Pipeline, spec: TableSpec, entry: TableEntry) -> Any:
    out = pb.TableEntry(table_id=spec.id)
    back = {v: k for k, v in p.keys[spec.id].items()}
    for name, m in entry.match.items():
        out.key.fields.append(codec.key_field(spec.key(back[name]), m, spec.name))
    if any(k.name == MATCH_PRIORITY for k in spec.keys):
        ks = spec.key(MATCH_PRIORITY)
        out.key.fields.add(field_id=ks.id).exact.value = codec.encode_int(
            MAX_MATCH_PRIORITY + 1 - entry.priority, 32, spec.name)
    _fill_action(spec, entry.action, out.data)
    return out
