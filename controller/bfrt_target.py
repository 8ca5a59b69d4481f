"""Install plans on Tofino switches over BfRuntime gRPC: a target for
:class:`controller.ina_tables.InaTables`.

Talks to bf_switchd's BfRuntime server (SDE) or p4sim's (``python -m p4sim serve --arch tna --bfrt-addr``). The
session follows the SDE's client: subscribe on the stream channel, optionally push a program
(SetForwardingPipelineConfig), fetch the device's bf-rt.json (GetForwardingPipelineConfig), bind
to the program. Every table, key, action and data field is resolved by name through that
bf-rt.json; ids are never assumed. ``info`` is a :class:`~p4control.model.ProgramInfo`
built from it, so InaTables' suffix lookups (``ina_node``, ``node_id``) work unchanged.

Writes go out one WriteRequest per call, or, inside ``with target.batch():``, as few requests as
possible (``batch_size`` updates each), all-or-nothing by default (ROLLBACK_ON_ERROR). A refused
write raises :class:`BfRtTargetError` whose message is one line naming the update and the
server's reason.

Bindings: the SDE's ``bfrt_grpc.bfruntime_pb2`` when importable, else ours generated from
``p4control/bfrt/bfruntime.proto`` (same wire format); see :mod:`p4control.bfrt.proto`.
"""
from __future__ import annotations

import contextlib
import json
import queue
from typing import Any, Iterator

from dataclasses import dataclass

from p4control.bfrt import codec  # first: p4control.bfrt fixes the protobuf backend
from p4control.bfrt.proto import pb, pb_grpc
from p4control.bfrt.schema import (MATCH_PRIORITY, MAX_MATCH_PRIORITY, REGISTER_INDEX, BfRtInfo,
                                   TableSpec)
from p4control.errors import ControlPlaneError
from p4control.model import (ActionCall, ActionInfo, ActionParam, ActionRef, KeyField,
                             ProgramInfo, RegisterInfo, TableEntry, TableInfo)

import grpc  # noqa: E402
from google.rpc import code_pb2, status_pb2  # noqa: E402

from .deadlines import Deadlines  # noqa: E402
from .grpc_stream import StreamChannel  # noqa: E402

_MATCH_KIND = {"Exact": "exact", "Ternary": "ternary", "LPM": "lpm", "Range": "range",
               "Optional": "optional"}
ALL_PIPES = 0xFFFF
PIPES = 4              # a Tofino 1 Wedge100BF-32X has four pipes: a register read answers per pipe


class BfRtTargetError(ControlPlaneError):
    """The switch refused a request; the message is one line with the server's reason."""


@dataclass(frozen=True)
class BfRtProgram:
    """A program to load with SetForwardingPipelineConfig: its bf-rt.json and one profile (the
    pipeline the program's ``Switch`` is given, e.g. ``pipe``) with that profile's binary (for a
    p4sim server, the P4 source; p4sim's ``bfrt_json.program_bfrt_info`` and ``pipeline_name``
    give the other two)."""
    p4_name: str
    bfrt_json: dict[str, Any]
    profile_name: str
    binary: bytes


def program_info_from_bfrt(info: BfRtInfo) -> ProgramInfo:
    """The control-plane view InaTables needs, from bf-rt.json: P4 tables and registers under
    their bf-rt names (``pipe.InaIngress.ina_node``), key fields without $MATCH_PRIORITY."""
    out = ProgramInfo(arch="tna")
    for spec in info.tables():
        if spec.table_type.startswith("MatchAction"):
            keys = [KeyField(k.name, k.width, _MATCH_KIND[k.match_type])  # type: ignore[arg-type]
                    for k in spec.keys if k.name != MATCH_PRIORITY]
            refs = [ActionRef(a.name, table_only=a.scope == "TableOnly",
                              default_only=a.scope == "DefaultOnly") for a in spec.actions]
            for a in spec.actions:
                out.actions.setdefault(a.name, ActionInfo(a.name, [ActionParam(d.name, d.width) for d in a.data]))
            out.tables[spec.name] = TableInfo(spec.name, keys, refs, ActionCall("NoAction"),
                                              default_is_const=spec.has_const_default_action,
                                              has_const_entries=spec.is_const_table, size=spec.size)
        elif spec.table_type == "Register":
            prefix = spec.name.split(".", 1)[1] + "." if "." in spec.name else ""
            fields = [(d.name[len(prefix):] if d.name.startswith(prefix) else d.name, d.width)
                      for d in spec.data]
            paired = not (len(fields) == 1 and fields[0][0] == "f1")
            out.registers[spec.name] = RegisterInfo(spec.name, sum(w for _, w in fields), spec.size,
                                                    fields=fields if paired else [])
    return out


class BfRtTarget:
    """One BfRuntime session with one device, bound to one program."""

    def __init__(self, address: str, *, device_id: int = 0, client_id: int = 1,
                 p4_name: str | None = None, push_program: BfRtProgram | None = None,
                 timeout: float | None = None, deadlines: Deadlines | None = None,
                 batch_size: int = 1000, atomic: bool = True) -> None:
        """``push_program``: a program to load with SetForwardingPipelineConfig first (then
        bound under its own ``p4_name``). ``timeout``: seconds for a small request (default
        30; ``deadlines`` sets every kind: a program load, batches and large reads get longer)."""
        self.address = address
        self.device_id = device_id
        self.client_id = client_id
        self.deadlines = deadlines or Deadlines.for_request_timeout(timeout)
        self.timeout = self.deadlines.request
        self.batch_size = batch_size
        self.atomicity = pb.WriteRequest.ROLLBACK_ON_ERROR if atomic else pb.WriteRequest.CONTINUE_ON_ERROR
        self.channel = grpc.insecure_channel(address, options=[
            ("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)])
        self.stub = pb_grpc.BfRuntimeStub(self.channel)
        self._pending: list[tuple[Any, str]] | None = None   # inside batch()
        self._stream = StreamChannel(self.stub.StreamChannel, "bfrt-client-stream")
        try:
            self._subscribe()
            if push_program is not None:
                self._push(push_program)
                p4_name = push_program.p4_name
            self._load_info(p4_name)
            self._set(pb.SetForwardingPipelineConfigRequest.BIND,
                      [pb.ForwardingPipelineConfig(p4_name=self.p4_name)], "bind")
        except BaseException:
            self.close()
            raise
        self.pre = _Replication(self)

    # ------------------------------------------------------------------ session
    def _subscribe(self) -> None:
        req = pb.StreamMessageRequest(client_id=self.client_id)
        req.subscribe.device_id = self.device_id
        req.subscribe.notifications.enable_port_status_change_notifications = False
        self._stream.send(req)
        try:
            msg = self._stream.receive(self.timeout)
        except queue.Empty:
            raise BfRtTargetError(f"{self.address}: no answer to subscribe in {self.timeout} s") from None
        if isinstance(msg, grpc.RpcError):
            raise BfRtTargetError(f"{self.address}: stream channel: {msg.code().name}: {msg.details()}")
        if msg.subscribe.status.code != code_pb2.OK:
            raise BfRtTargetError(f"{self.address}: subscribe as client {self.client_id} refused: "
                                  f"{code_pb2.Code.Name(msg.subscribe.status.code)}: {msg.subscribe.status.message}")

    def _push(self, program: BfRtProgram) -> None:
        cfg = pb.ForwardingPipelineConfig(p4_name=program.p4_name,
                                          bfruntime_info=json.dumps(program.bfrt_json).encode())
        cfg.profiles.add(profile_name=program.profile_name, binary=program.binary,
                         pipe_scope=[0, 1, 2, 3])
        self._set(pb.SetForwardingPipelineConfigRequest.VERIFY_AND_WARM_INIT_BEGIN_AND_END, [cfg],
                  "load program")

    def _set(self, action: int, configs: list[Any], what: str) -> None:
        req = pb.SetForwardingPipelineConfigRequest(device_id=self.device_id, client_id=self.client_id,
                                                    action=action, config=configs)
        self._call(self.stub.SetForwardingPipelineConfig, req, what, self.deadlines.pipeline)

    def _load_info(self, p4_name: str | None) -> None:
        resp = self._call(self.stub.GetForwardingPipelineConfig,
                          pb.GetForwardingPipelineConfigRequest(device_id=self.device_id,
                                                                client_id=self.client_id),
                          "get pipeline config")
        configs = {c.p4_name: c for c in resp.config}
        if p4_name is None:
            if len(configs) != 1:
                raise BfRtTargetError(f"{self.address}: device runs {sorted(configs) or 'no program'}; "
                                      "give p4_name")
            p4_name = next(iter(configs))
        if p4_name not in configs:
            raise BfRtTargetError(f"{self.address}: no program '{p4_name}' (device runs {sorted(configs)})")
        docs = [configs[p4_name].bfruntime_info]
        if resp.non_p4_config.bfruntime_info:
            docs.append(resp.non_p4_config.bfruntime_info)
        self.p4_name = p4_name
        self.bfrt = BfRtInfo(docs)
        self.info: ProgramInfo = program_info_from_bfrt(self.bfrt)

    def _call(self, rpc: Any, req: Any, what: str, deadline: float | None = None) -> Any:
        try:
            return rpc(req, timeout=self.timeout if deadline is None else deadline)
        except grpc.RpcError as e:
            raise BfRtTargetError(f"{self.address}: {what}: {_reason(e)}") from None

    def close(self) -> None:
        self._stream.close()
        self.channel.close()

    def __enter__(self) -> "BfRtTarget":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ writes
    @contextlib.contextmanager
    def batch(self) -> Iterator["BfRtTarget"]:
        """Collect the writes made inside; send them on exit (nested batches join the outer)."""
        if self._pending is not None:
            yield self
            return
        self._pending = []
        try:
            yield self
            pending, self._pending = self._pending, None
            self._send(pending)
        finally:
            self._pending = None

    def _update(self, utype: int, entry: Any, what: str) -> None:
        upd = pb.Update(type=utype)
        upd.entity.table_entry.CopyFrom(entry)
        if self._pending is not None:
            self._pending.append((upd, what))
        else:
            self._send([(upd, what)])

    def _send(self, updates: list[tuple[Any, str]]) -> None:
        for start in range(0, len(updates), self.batch_size):
            chunk = updates[start:start + self.batch_size]
            req = pb.WriteRequest(client_id=self.client_id, atomicity=self.atomicity,
                                  p4_name=self.p4_name, updates=[u for u, _ in chunk])
            req.target.device_id = self.device_id
            req.target.pipe_id = ALL_PIPES
            try:
                self.stub.Write(req, timeout=self.deadlines.write(len(chunk)))
            except grpc.RpcError as e:
                raise BfRtTargetError(f"{self.address}: {_write_reason(e, [w for _, w in chunk])}") from None

    def _entry(self, spec: TableSpec) -> Any:
        return pb.TableEntry(table_id=spec.id)

    def _key(self, spec: TableSpec, entry: Any, match: dict[str, Any], priority: int, what: str) -> None:
        for name, m in match.items():
            entry.key.fields.append(codec.key_field(spec.key(name), m, what))
        if any(k.name == MATCH_PRIORITY for k in spec.keys):
            if not 1 <= priority <= MAX_MATCH_PRIORITY + 1:
                raise BfRtTargetError(f"{what}: priority {priority} is not in 1..{MAX_MATCH_PRIORITY + 1}")
            # larger wins in p4sim/P4Runtime terms, lower $MATCH_PRIORITY wins on Tofino
            entry.key.fields.append(codec.key_field(spec.key(MATCH_PRIORITY),
                                                    MAX_MATCH_PRIORITY + 1 - priority, what))

    def _action(self, spec: TableSpec, entry: Any, call: ActionCall, what: str) -> None:
        act = spec.action(call.name)
        entry.data.action_id = act.id
        unknown = set(call.args) - {d.name for d in act.data}
        if unknown:
            raise BfRtTargetError(f"{what}: action {act.name} has no parameter(s) {sorted(unknown)}")
        for d in act.data:
            if d.name not in call.args:
                raise BfRtTargetError(f"{what}: action {act.name} needs {d.name}")
            entry.data.fields.append(codec.data_field(d, call.args[d.name], what))

    def _spec(self, table: str) -> TableSpec:
        try:
            return self.bfrt.table(table)
        except ControlPlaneError as e:
            raise BfRtTargetError(f"{self.address}: {e}") from None

    # ------------------------------------------------------------------ the InaTables target API
    def table_insert(self, table: str, entry: TableEntry) -> None:
        self._write_entry(pb.Update.INSERT, table, entry, f"insert into {table}")

    def table_modify(self, table: str, entry: TableEntry) -> None:
        self._write_entry(pb.Update.MODIFY, table, entry, f"modify {table}")

    def _write_entry(self, utype: int, table: str, entry: TableEntry, what: str) -> None:
        spec = self._spec(table)
        te = self._entry(spec)
        try:
            self._key(spec, te, entry.match, entry.priority, what)
            self._action(spec, te, entry.action, what)
        except ControlPlaneError as e:
            raise BfRtTargetError(f"{self.address}: {e}") from None
        self._update(utype, te, what)

    def table_delete(self, table: str, match: dict[str, Any], priority: int = 0) -> None:
        spec = self._spec(table)
        te = self._entry(spec)
        self._key(spec, te, match, priority, f"delete from {table}")
        self._update(pb.Update.DELETE, te, f"delete from {table}")

    def table_set_default(self, table: str, call: ActionCall) -> None:
        spec = self._spec(table)
        te = self._entry(spec)
        te.is_default_entry = True
        self._action(spec, te, call, f"default action of {table}")
        self._update(pb.Update.MODIFY, te, f"default action of {table}")

    def table_clear(self, table: str) -> None:
        """Delete every entry (BfRt: DELETE without a key). On a register: reset every cell."""
        spec = self._spec(table)
        self._update(pb.Update.DELETE, self._entry(spec), f"clear {table}")

    def table_entries(self, table: str) -> list[TableEntry]:
        """The entries of a match-action table as the switch holds them."""
        spec = self._spec(table)
        out = []
        for te in self._read(spec, self._entry(spec), f"read {table}"):
            match: dict[str, Any] = {}
            priority = 0
            for k in te.key.fields:
                ks = spec.key_by_id(k.field_id)
                if ks.name == MATCH_PRIORITY:
                    priority = MAX_MATCH_PRIORITY + 1 - codec.int_key(ks, k, table)
                else:
                    m = codec.key_match(ks, k, table)
                    if m is not None:
                        match[ks.name] = m
            act = spec.action_by_id(te.data.action_id)
            args = {}
            for f in te.data.fields:
                d = next(d for d in act.data if d.id == f.field_id)
                args[d.name] = codec.data_value(d, f, table)
            out.append(TableEntry(match, ActionCall(act.name, args), priority))
        return out

    def _read(self, spec: TableSpec, te: Any, what: str) -> list[Any]:
        req = pb.ReadRequest(client_id=self.client_id, p4_name=self.p4_name)
        req.target.device_id = self.device_id
        req.target.pipe_id = ALL_PIPES
        te.table_flags.from_hw = True
        req.entities.add(table_entry=te)
        # a wildcard read (no key) may return the whole table, in every pipe
        entries = 1 if te.key.fields else max(1, spec.size) * PIPES
        try:
            return [e.table_entry for resp in self.stub.Read(req, timeout=self.deadlines.read(entries))
                    for e in resp.entities]
        except grpc.RpcError as e:
            raise BfRtTargetError(f"{self.address}: {what}: {_reason(e)}") from None

    # ------------------------------------------------------------------ registers
    def _register(self, name: str) -> TableSpec:
        spec = self._spec(name)
        if spec.table_type != "Register":
            raise BfRtTargetError(f"{self.address}: {spec.name} is a {spec.table_type} table, not a register")
        return spec

    def _index_entry(self, spec: TableSpec, index: int, what: str) -> Any:
        te = self._entry(spec)
        te.key.fields.append(codec.key_field(spec.key(REGISTER_INDEX), index, what))
        return te

    def register_read_pipes(self, name: str, index: int) -> list[int | tuple[int, ...]]:
        """A register cell in every pipe (one value per pipe; a paired cell as a tuple of its
        fields in bf-rt.json order)."""
        spec = self._register(name)
        what = f"read {spec.name}[{index}]"
        entries = self._read(spec, self._index_entry(spec, index, what), what)
        if len(entries) != 1:
            raise BfRtTargetError(f"{self.address}: {what}: {len(entries)} entries in the answer")
        per_field: dict[int, list[int]] = {}
        for f in entries[0].data.fields:
            per_field.setdefault(f.field_id, []).append(codec.data_value(spec.datum_by_id(f.field_id), f, what))
        columns = [per_field.get(d.id, []) for d in spec.data]
        pipes = min(len(c) for c in columns) if columns else 0
        if len(spec.data) == 1:
            return list(columns[0][:pipes])
        return [tuple(c[p] for c in columns) for p in range(pipes)]

    def register_read(self, name: str, index: int, pipe: int = 0) -> int | tuple[int, ...]:
        """A register cell (unsigned bits) as seen by one pipe (default: the first)."""
        return self.register_read_pipes(name, index)[pipe]

    def register_write(self, name: str, index: int, value: int | tuple[int, ...]) -> None:
        spec = self._register(name)
        what = f"write {spec.name}[{index}]"
        te = self._index_entry(spec, index, what)
        values = value if isinstance(value, tuple) else (value,)
        if len(values) != len(spec.data):
            raise BfRtTargetError(f"{what}: the register has {len(spec.data)} field(s)")
        for d, v in zip(spec.data, values):
            te.data.fields.append(codec.data_field(d, v & ((1 << d.width) - 1), what))
        self._update(pb.Update.MODIFY, te, what)

    def register_reset(self, name: str) -> None:
        """Every cell back to the register's initial value, in every pipe."""
        self._register(name)
        self.table_clear(name)

    # ------------------------------------------------------------------ ports
    def port_add(self, dev_port: int, speed: str, fec: str = "BF_FEC_TYP_NONE", *,
                 enable: bool = True, replace: bool = False, **fields: Any) -> None:
        """Add (``replace``: add or modify) a port: ``speed``/``fec`` are the SDE's enum strings
        (``BF_SPEED_100G``, ``BF_FEC_TYP_REED_SOLOMON``); ``fields`` other $PORT data by name
        without the ``$`` (``N_LANES=4``, ``AUTO_NEGOTIATION="PM_AN_FORCE_DISABLE"``)."""
        spec = self._spec("$PORT")
        what = f"$PORT {dev_port}"
        te = self._entry(spec)
        te.key.fields.append(codec.key_field(spec.key("$DEV_PORT"), dev_port, what))
        values = {"$SPEED": speed, "$FEC": fec, "$PORT_ENABLE": enable}
        values.update({f"${k.upper()}": v for k, v in fields.items()})
        try:
            for name, v in values.items():
                te.data.fields.append(codec.data_field(spec.datum(name), v, what))
        except ControlPlaneError as e:
            raise BfRtTargetError(f"{self.address}: {e}") from None
        self._update(pb.Update.INSERT_OR_MODIFY if replace else pb.Update.INSERT, te, what)

    def port_delete(self, dev_port: int) -> None:
        spec = self._spec("$PORT")
        te = self._entry(spec)
        te.key.fields.append(codec.key_field(spec.key("$DEV_PORT"), dev_port, "$PORT"))
        self._update(pb.Update.DELETE, te, f"$PORT {dev_port} delete")

    def port_get(self, dev_port: int) -> dict[str, Any]:
        """A port's configuration and state, by $PORT field name."""
        spec = self._spec("$PORT")
        te = self._entry(spec)
        te.key.fields.append(codec.key_field(spec.key("$DEV_PORT"), dev_port, "$PORT"))
        entries = self._read(spec, te, f"read $PORT {dev_port}")
        return {spec.datum_by_id(f.field_id).name: codec.data_value(spec.datum_by_id(f.field_id), f, "$PORT")
                for f in entries[0].data.fields}


def _reason(e: grpc.RpcError) -> str:
    return " ".join(f"{e.code().name}: {e.details()}".split())


def _write_reason(e: grpc.RpcError, whats: list[str]) -> str:
    """One line: each failed update as 'what: CODE: message' (from the bfrt_proto.Error per
    update in the status details), or the RPC's own status when there are none."""
    raw = dict(e.trailing_metadata() or ()).get("grpc-status-details-bin")
    parts = []
    if raw:
        for i, detail in enumerate(status_pb2.Status.FromString(raw).details):
            err = pb.Error()
            if detail.Unpack(err) and err.canonical_code not in (code_pb2.OK, code_pb2.ABORTED):
                what = whats[i] if i < len(whats) else f"update {i}"
                parts.append(f"{what}: {code_pb2.Code.Name(err.canonical_code)}: {err.message}")
    if not parts:
        return f"write of {len(whats)} update(s): {_reason(e)}"
    rolled = " (nothing applied)" if len(whats) > 1 else ""
    return " ".join(("; ".join(parts) + rolled).split())


class _Replication:
    """The PRE part of the target API: a multicast group as $pre.node entries (one per replica
    id, holding that id's ports) and a $pre.mgid entry listing them. Node ids are derived from
    the group (group * 256 + i), so re-installing a plan reuses them."""

    def __init__(self, target: BfRtTarget) -> None:
        self.target = target

    def insert_group(self, group_id: int, replicas: list[tuple[int, int]]) -> None:
        t = self.target
        by_rid: dict[int, list[int]] = {}
        for port, rid in replicas:
            by_rid.setdefault(rid, []).append(port)
        if len(by_rid) > 256:
            raise BfRtTargetError(f"multicast group {group_id}: more than 256 replica ids")
        node_spec, mgid_spec = t._spec("$pre.node"), t._spec("$pre.mgid")
        nodes = []
        with t.batch():
            for i, (rid, ports) in enumerate(by_rid.items()):
                node = group_id * 256 + i
                what = f"$pre.node {node} (group {group_id}, rid {rid})"
                te = t._entry(node_spec)
                te.key.fields.append(codec.key_field(node_spec.key("$MULTICAST_NODE_ID"), node, what))
                te.data.fields.append(codec.data_field(node_spec.datum("$MULTICAST_RID"), rid, what))
                te.data.fields.append(codec.data_field(node_spec.datum("$MULTICAST_LAG_ID"), [], what))
                te.data.fields.append(codec.data_field(node_spec.datum("$DEV_PORT"), ports, what))
                t._update(pb.Update.INSERT, te, what)
                nodes.append(node)
            what = f"$pre.mgid {group_id}"
            te = t._entry(mgid_spec)
            te.key.fields.append(codec.key_field(mgid_spec.key("$MGID"), group_id, what))
            te.data.fields.append(codec.data_field(mgid_spec.datum("$MULTICAST_NODE_ID"), nodes, what))
            te.data.fields.append(codec.data_field(mgid_spec.datum("$MULTICAST_NODE_L1_XID_VALID"),
                                                   [False] * len(nodes), what))
            te.data.fields.append(codec.data_field(mgid_spec.datum("$MULTICAST_NODE_L1_XID"),
                                                   [0] * len(nodes), what))
            t._update(pb.Update.INSERT, te, what)

    def _group_nodes(self, group_id: int) -> tuple[Any, list[int]]:
        """The group's $pre.mgid key entry and the multicast node ids it lists."""
        t = self.target
        spec = t._spec("$pre.mgid")
        te = t._entry(spec)
        te.key.fields.append(codec.key_field(spec.key("$MGID"), group_id, "$pre.mgid"))
        [entry] = t._read(spec, te, f"read $pre.mgid {group_id}")
        nodes = next(codec.data_value(spec.datum_by_id(f.field_id), f, "$pre.mgid")
                     for f in entry.data.fields if f.field_id == spec.datum("$MULTICAST_NODE_ID").id)
        return te, list(nodes)

    def group_ids(self) -> list[int]:
        """Every multicast group the device holds ($pre.mgid entries)."""
        t = self.target
        spec = t._spec("$pre.mgid")
        key_id = spec.key("$MGID").id
        return sorted(codec.int_key(spec.key("$MGID"), k, "$pre.mgid")
                      for e in t._read(spec, t._entry(spec), "read $pre.mgid")
                      for k in e.key.fields if k.field_id == key_id)

    def delete_group(self, group_id: int) -> None:
        """Remove a group: its $pre.mgid entry, then its $pre.node entries."""
        t = self.target
        te, nodes = self._group_nodes(group_id)
        node_spec = t._spec("$pre.node")
        with t.batch():
            t._update(pb.Update.DELETE, te, f"delete $pre.mgid {group_id}")
            for node in nodes:
                ne = t._entry(node_spec)
                ne.key.fields.append(codec.key_field(node_spec.key("$MULTICAST_NODE_ID"), node, "$pre.node"))
                t._update(pb.Update.DELETE, ne, f"delete $pre.node {node}")

    def get_group(self, group_id: int) -> list[tuple[int, int]]:
        """(port, rid) replicas of a group, read back from $pre.mgid and $pre.node."""
        t = self.target
        node_spec = t._spec("$pre.node")
        _, node_ids = self._group_nodes(group_id)
        out = []
        for node in node_ids:
            te = t._entry(node_spec)
            te.key.fields.append(codec.key_field(node_spec.key("$MULTICAST_NODE_ID"), node, "$pre.node"))
            [n] = t._read(node_spec, te, f"read $pre.node {node}")
            vals = {node_spec.datum_by_id(f.field_id).name: codec.data_value(node_spec.datum_by_id(f.field_id), f, "$pre.node")
                    for f in n.data.fields}
            out.extend((port, vals["$MULTICAST_RID"]) for port in vals["$DEV_PORT"])
        return out
