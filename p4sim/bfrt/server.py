"""A BfRuntime gRPC server over a p4sim :class:`~p4sim.Switch` running a TNA program.

What a client sees is what bf_switchd's BfRuntime server offers for the same program:

* ``SetForwardingPipelineConfig``: ``BIND`` binds a subscribed client to the program (needed
  before Read/Write); ``VERIFY`` checks a config; ``VERIFY_AND_WARM_INIT_BEGIN[_AND_END]``
  loads a new program (a profile's ``binary`` is the P4 source for p4sim; ``bfruntime_info``,
  if given, must describe the same tables, and its ids are then the ones served).
  ``GetForwardingPipelineConfig`` returns the program's bf-rt.json and, as ``non_p4_config``,
  the fixed tables ($PORT, $pre.mgid, $pre.node).
* Write/Read of match-action entries (``$MATCH_PRIORITY``: lower wins), default entries,
  table clear (DELETE without key), register cells by ``$REGISTER_INDEX`` (paired registers:
  one data field per member; reads give one value per pipe: p4sim has one pipe), register reset
  (DELETE without key), ``$pre.node``/``$pre.mgid`` onto the switch's PRE, ``$PORT`` (speed, FEC,
  lanes, enable... checked against the SDE's enum strings and stored), table usage.
* Batches: CONTINUE_ON_ERROR tries every update; ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC undo the
  batch at the first failure (the switch lock is held for the whole batch, so packets see the
  state before or after it). A failed Write ends with UNKNOWN, a one-line message naming the
  first failure, and one ``bfrt_proto.Error`` per update in the google.rpc.Status details.
* StreamChannel: the Subscribe handshake (answered with status OK, or ALREADY_EXISTS for a
  client id in use / NOT_FOUND for another device); a client's binding ends with its stream.

The schema served is the one bf-p4c writes for the program (:mod:`p4sim.bfrt.bfrt_json`), or a
given compiler bf-rt.json (``BfRtServer(bfrt_json=...)``, ``p4sim serve --bfrt-json FILE``)
whose ids, names and annotations are served unchanged once every table, key, action and field
in it has been matched by name with the program's. Tables bf-p4c lists that p4sim does not
model (``<hash>.configure/compute/algorithm``, ``snapshot.*``, ``$PORT_METADATA``,
``tbl_dbg_counter``) are listed; requests to them answer UNIMPLEMENTED.

Not modelled: counters, meters, action profiles/selectors, digests, idle timeouts, LAGs,
$PORT's effect on forwarding ($PORT_ENABLE does not stop frames), multiple pipes.
"""
from __future__ import annotations

import copy
import logging
import os
import queue
import tempfile
import threading
from concurrent import futures
from pathlib import Path
from typing import Any, Callable, Iterator

import grpc
from google.rpc import code_pb2, status_pb2

import p4control.bfrt.codec as codec
import p4control.errors as errors
from p4control.bfrt.proto import pb, pb_grpc
from p4control.bfrt.schema import MATCH_PRIORITY, MAX_MATCH_PRIORITY, BfRtInfo, DataSpec, TableSpec
from p4control.model import ActionCall, TableEntry
from p4sim.errors import P4SIM_ERRORS

from .bfrt_json import fixed_bfrt_info, key_field_name, pipeline_name, program_bfrt_info

log = logging.getLogger("p4sim.bfrt")

_Set = pb.SetForwardingPipelineConfigRequest
_READ_CHUNK = 1000
Undo = Callable[[], None]
Loader = Callable[[bytes], Any]


class _NotApplied(errors.ControlPlaneError):
    """An update of an all-or-nothing batch that was skipped or undone."""

    grpc_code = "ABORTED"


class _RpcError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _grpc_code(err: BaseException) -> grpc.StatusCode:
    if isinstance(err, errors.ControlPlaneError):
        return getattr(grpc.StatusCode, err.grpc_code, grpc.StatusCode.UNKNOWN)
    return grpc.StatusCode.INTERNAL


def _rpc_code_value(code: grpc.StatusCode) -> int:
    return code.value[0]


def default_loader(arch: str = "tna", include_dirs: list[str] | None = None,
                   name: str = "program.p4") -> Loader:
    """Compile P4 source text (a profile's ``binary``) into a new Switch."""
    def load(source: bytes) -> Any:
        from p4sim import Switch, load_program

        with tempfile.TemporaryDirectory(prefix="p4sim-bfrt-") as tmp:
            path = os.path.join(tmp, name)
            Path(path).write_bytes(source)
            return Switch(load_program(path, arch=arch, include_dirs=list(include_dirs or [])))
    return load


# tables bf-p4c lists that p4sim shows but does not model: requests to them answer UNIMPLEMENTED
UNSUPPORTED_TYPES = ("DynHashAlgorithm", "DynHashConfigure", "DynHashCompute", "SnapshotCfg",
                     "SnapshotTrigger", "SnapshotData", "SnapshotLiveness", "PortMetadata",
                     "TblDbgCnt")


def _width_of(spec: Any) -> tuple[str, int]:
    return spec.type, spec.width


class _Pipeline:
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
                                          bfruntime_info=_json_bytes(self.json))
        cfg.profiles.add(profile_name=self.pipe, binary=self.switch.program.source.encode(),
                         pipe_scope=[0, 1, 2, 3])
        return cfg


def _unsupported(spec: TableSpec) -> errors.Unimplemented:
    return errors.Unimplemented(f"{spec.name}: {spec.table_type} tables are not supported by p4sim "
                                "(listed as bf-p4c lists them)")


def _json_bytes(doc: dict[str, Any]) -> bytes:
    import json

    return json.dumps(doc, indent=1).encode()


class BfRtServer(pb_grpc.BfRuntimeServicer):
    """The BfRuntime service of one device. ``ports``: dev ports that exist ($PORT refuses
    others; None: any 9-bit port). ``on_switch_change(new_switch)`` is called when a new program
    is committed (the port loop swaps it in)."""

    def __init__(self, switch: Any, *, device_id: int = 0, p4_name: str | None = None,
                 loader: Loader | None = None, ports: set[int] | None = None,
                 on_switch_change: Callable[[Any], None] | None = None,
                 bfrt_json: dict[str, Any] | None = None,
                 include_dirs: list[str] | tuple[str, ...] = ()) -> None:
        name = p4_name or Path(switch.program.path).stem
        self._lock = threading.RLock()           # before switch.lock
        self.device_id = device_id
        self.include_dirs = list(include_dirs)
        self.pipeline = _Pipeline(switch, name, bfrt_json, strict=bfrt_json is not None,
                                  include_dirs=self.include_dirs)
        self.loader = loader or default_loader(name=Path(switch.program.path).name)
        self.known_ports = ports
        self.on_switch_change = on_switch_change
        self.port_config: dict[int, dict[str, Any]] = {}
        self.pre_nodes: dict[int, tuple[int, list[int]]] = {}   # node id -> (rid, dev ports)
        self.pre_groups: dict[int, list[tuple[int, int | None]]] = {}  # mgid -> [(node, l1 xid)]
        self._streams: dict[int, queue.Queue] = {}               # subscribed client ids
        self._bound: dict[int, str] = {}                         # client id -> p4 name
        self._server: grpc.Server | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self, address: str = "127.0.0.1:50052", max_workers: int = 8) -> int:
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers),
                                   options=[("grpc.max_receive_message_length", 64 << 20),
                                            ("grpc.max_send_message_length", 64 << 20)])
        pb_grpc.add_BfRuntimeServicer_to_server(self, self._server)
        port = self._server.add_insecure_port(address)
        if port == 0:
            raise OSError(f"cannot listen on {address}")
        self._server.start()
        return port

    def stop(self, grace: float | None = 0.5) -> None:
        for q in list(self._streams.values()):
            q.put(None)
        if self._server is not None:
            self._server.stop(grace)

    @property
    def switch(self) -> Any:
        return self.pipeline.switch

    # ------------------------------------------------------------------ checks
    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise _RpcError(grpc.StatusCode.NOT_FOUND, f"no device {device_id} (this is device {self.device_id})")

    def _check_bound(self, client_id: int, p4_name: str) -> None:
        bound = self._bound.get(client_id)
        if bound is None:
            raise _RpcError(grpc.StatusCode.FAILED_PRECONDITION,
                            f"client {client_id} is not bound to a program "
                            "(SetForwardingPipelineConfig BIND first)")
        if p4_name and p4_name != self.pipeline.p4_name:
            raise _RpcError(grpc.StatusCode.NOT_FOUND, f"no program '{p4_name}' on device "
                            f"{self.device_id} (it runs '{self.pipeline.p4_name}')")

    @staticmethod
    def _abort(context: grpc.ServicerContext, code: grpc.StatusCode, message: str,
               details: list[Any] | None = None) -> None:
        message = " ".join(message.split())            # one line, whatever the cause said
        if details:
            status = status_pb2.Status(code=_rpc_code_value(code), message=message)
            for d in details:
                status.details.add().Pack(d)
            context.abort_with_status(_RichStatus(code, message, status))
        context.abort(code, message)

    # ------------------------------------------------------------------ Write
    def Write(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._check_device(request.target.device_id)
            self._check_bound(request.client_id, request.p4_name)
        except _RpcError as e:
            self._abort(context, e.code, str(e))
        atomic = request.atomicity != pb.WriteRequest.CONTINUE_ON_ERROR
        results: list[BaseException | None] = []
        with self._lock:
            p = self.pipeline
            undo: list[Undo] = []
            with p.switch.lock:
                for i, update in enumerate(request.updates):
                    if atomic and any(r is not None for r in results):
                        results.append(_NotApplied("not applied: the batch was rolled back"))
                        continue
                    try:
                        undo.extend(self._apply(p, update))
                        results.append(None)
                    except errors.ControlPlaneError as e:
                        results.append(e)
                    except Exception as e:  # a p4sim bug: report it on this update, keep serving
                        log.exception("update %d failed unexpectedly", i)
                        results.append(errors.ControlPlaneError(f"internal error: {type(e).__name__}: {e}"))
                failed = [(i, e) for i, e in enumerate(results) if e is not None]
                if failed and atomic:
                    for u in reversed(undo):
                        u()
                    results = [e if e is not None else _NotApplied("undone: the batch was rolled back")
                               for e in results]
        if not failed:
            return pb.WriteResponse()
        i, first = failed[0]
        n_failed = sum(not isinstance(e, _NotApplied) for e in results)
        code = grpc.StatusCode.UNKNOWN
        details = []
        for e in results:
            if e is None:
                details.append(pb.Error(canonical_code=code_pb2.OK))
            else:
                # an undone update says so by its code alone: a client's metadata limit (16 KiB
                # by default) must hold one Error per update of a large batch
                text = "" if isinstance(e, _NotApplied) else str(e)
                details.append(pb.Error(canonical_code=_rpc_code_value(_grpc_code(e)), message=text))
        self._abort(context, code, f"{n_failed} of {len(results)} updates failed"
                    f"{' (batch rolled back)' if atomic else ''}; "
                    f"update {i}: {_grpc_code(first).name}: {first}", details)

    def _apply(self, p: _Pipeline, update: Any) -> list[Undo]:
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
            return self._write_match(p, spec, te, utype, what)
        if spec.table_type == "Register":
            return self._write_register(p, spec, te, utype, what)
        if spec.table_type == "PortConfigure":
            return self._write_port(spec, te, utype, what)
        if spec.table_type in ("PreNode", "PreMgid"):
            return self._write_pre(spec, te, update, what)
        raise _unsupported(spec)

    # ---- match-action tables
    def _match(self, p: _Pipeline, spec: TableSpec, te: Any, what: str) -> tuple[dict[str, Any], int]:
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

    def _action(self, spec: TableSpec, data: Any, what: str) -> ActionCall:
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

    def _write_match(self, p: _Pipeline, spec: TableSpec, te: Any, utype: int, what: str) -> list[Undo]:
        sw, name = p.switch, p.tables[spec.id]
        if te.is_default_entry:
            old = sw.table_get_default(name)
            if utype in (pb.Update.DELETE, pb.Update.RESET):
                sw.table_reset_default(name)
            elif utype in (pb.Update.INSERT, pb.Update.MODIFY, pb.Update.INSERT_OR_MODIFY):
                call = self._action(spec, te.data, what)
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
        match, priority = self._match(p, spec, te, what)
        if utype == pb.Update.DELETE:
            old = sw.table_get(name, match, priority)
            sw.table_delete(name, match, priority)
            return [lambda: sw.table_insert(name, old)]
        call = self._action(spec, te.data, what)
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
    def _register_fields(self, p: _Pipeline, spec: TableSpec) -> tuple[str, list[DataSpec], bool]:
        name = p.tables[spec.id]
        reg = p.switch.info.registers[name]
        order = [f"{name}.{f}" for f, _ in (reg.fields or [("f1", reg.bitwidth)])]
        return name, [spec.datum(n) for n in order], bool(reg.fields)

    def _write_register(self, p: _Pipeline, spec: TableSpec, te: Any, utype: int, what: str) -> list[Undo]:
        sw = p.switch
        name, fields, paired = self._register_fields(p, spec)
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

    # ---- $PORT
    def _port_key(self, spec: TableSpec, te: Any, what: str) -> int:
        if len(te.key.fields) != 1:
            raise errors.InvalidArgument(f"{what}: the key is $DEV_PORT alone")
        port = codec.int_key(spec.key_by_id(te.key.fields[0].field_id), te.key.fields[0], what)
        if self.known_ports is not None and port not in self.known_ports:
            raise errors.InvalidArgument(f"{what}: dev port {port} does not exist on this switch "
                                         f"(ports: {', '.join(map(str, sorted(self.known_ports)))})")
        if self.known_ports is None and port >> 9:
            raise errors.InvalidArgument(f"{what}: dev port {port} is not a 9-bit port")
        return port

    def _write_port(self, spec: TableSpec, te: Any, utype: int, what: str) -> list[Undo]:
        if not te.key.fields and utype == pb.Update.DELETE:
            saved = dict(self.port_config)
            self.port_config.clear()
            return [lambda: self.port_config.update(saved)]
        port = self._port_key(spec, te, what)
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

    # ---- $pre.node / $pre.mgid
    def _pre_snapshot(self) -> Undo:
        nodes, groups = copy.deepcopy(self.pre_nodes), copy.deepcopy(self.pre_groups)

        def restore() -> None:
            stale = set(self.pre_groups) - set(groups)
            self.pre_nodes, self.pre_groups = nodes, groups
            for g in stale:
                self.switch.pre.delete_group(g)
            for g in groups:
                self._publish(g)
        return restore

    def _publish(self, mgid: int) -> None:
        reps: list[tuple[int, int]] = []
        for node, _xid in self.pre_groups[mgid]:
            rid, ports = self.pre_nodes[node]
            reps.extend((port, rid) for port in sorted(set(ports)))
        self.switch.pre.set_group(mgid, reps)

    def _write_pre(self, spec: TableSpec, te: Any, update: Any, what: str) -> list[Undo]:
        undo = self._pre_snapshot()
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
                        self._publish(g)
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
            self.switch.pre.delete_group(key)
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
            self._publish(key)
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

    # ------------------------------------------------------------------ Read
    def Read(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            self._check_device(request.target.device_id)
            self._check_bound(request.client_id, request.p4_name)
            out: list[Any] = []
            with self._lock:
                p = self.pipeline
                with p.switch.lock:
                    for ent in request.entities:
                        out.extend(self._read(p, ent))
        except _RpcError as e:
            self._abort(context, e.code, str(e))
            return
        except errors.ControlPlaneError as e:
            self._abort(context, _grpc_code(e), str(e))
            return
        for i in range(0, max(len(out), 1), _READ_CHUNK):
            yield pb.ReadResponse(entities=out[i:i + _READ_CHUNK])

    def _read(self, p: _Pipeline, ent: Any) -> list[Any]:
        kind = ent.WhichOneof("entity")
        if kind == "table_usage":
            spec = p.info.table_by_id(ent.table_usage.table_id)
            n = len(self._read_table(p, spec, pb.TableEntry(table_id=spec.id)))
            return [pb.Entity(table_usage=pb.TableUsage(table_id=spec.id, usage=n))]
        if kind != "table_entry":
            raise errors.Unimplemented(f"reading {kind} entities")
        spec = p.info.table_by_id(ent.table_entry.table_id)
        return [pb.Entity(table_entry=e) for e in self._read_table(p, spec, ent.table_entry)]

    def _read_table(self, p: _Pipeline, spec: TableSpec, te: Any) -> list[Any]:
        what = spec.name
        if spec.table_type.startswith("MatchAction"):
            sw, name = p.switch, p.tables[spec.id]
            if te.is_default_entry:
                call = sw.table_get_default(name)
                out = pb.TableEntry(table_id=spec.id, is_default_entry=True)
                self._fill_action(spec, call, out.data)
                return [out]
            if te.key.fields:
                match, priority = self._match(p, spec, te, what)
                entries = [sw.table_get(name, match, priority)]
            else:
                entries = sw.table_entries(name)
            return [self._entry_proto(p, spec, e) for e in entries]
        if spec.table_type == "Register":
            name, fields, paired = self._register_fields(p, spec)
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
        if spec.table_type == "PortConfigure":
            keys = [self._port_key(spec, te, what)] if te.key.fields else sorted(self.port_config)
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
        if spec.table_type in ("PreNode", "PreMgid"):
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
        raise _unsupported(spec)

    def _fill_action(self, spec: TableSpec, call: ActionCall, data: Any) -> None:
        act = spec.action(call.name)
        data.action_id = act.id
        for ds in act.data:
            data.fields.append(codec.data_field(ds, call.args[ds.name], spec.name))

    def _entry_proto(self, p: _Pipeline, spec: TableSpec, entry: TableEntry) -> Any:
        out = pb.TableEntry(table_id=spec.id)
        back = {v: k for k, v in p.keys[spec.id].items()}
        for name, m in entry.match.items():
            out.key.fields.append(codec.key_field(spec.key(back[name]), m, spec.name))
        if any(k.name == MATCH_PRIORITY for k in spec.keys):
            ks = spec.key(MATCH_PRIORITY)
            out.key.fields.add(field_id=ks.id).exact.value = codec.encode_int(
                MAX_MATCH_PRIORITY + 1 - entry.priority, 32, spec.name)
        self._fill_action(spec, entry.action, out.data)
        return out

    # ------------------------------------------------------------------ pipeline config
    def SetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._check_device(request.device_id)
            return self._set_pipeline(request)
        except _RpcError as e:
            self._abort(context, e.code, str(e))
        except P4SIM_ERRORS as e:
            code = _grpc_code(e) if isinstance(e, errors.ControlPlaneError) else grpc.StatusCode.INVALID_ARGUMENT
            self._abort(context, code, str(e))

    def _set_pipeline(self, request: Any) -> Any:
        action = request.action
        if action == _Set.BIND:
            if len(request.config) != 1:
                raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT, "BIND takes exactly one config (the p4_name)")
            if request.client_id not in self._streams:
                raise _RpcError(grpc.StatusCode.FAILED_PRECONDITION,
                                f"client {request.client_id} has not subscribed on the stream channel")
            name = request.config[0].p4_name
            if name != self.pipeline.p4_name:
                raise _RpcError(grpc.StatusCode.NOT_FOUND, f"no program '{name}' on device "
                                f"{self.device_id} (it runs '{self.pipeline.p4_name}')")
            self._bound[request.client_id] = name
            return pb.SetForwardingPipelineConfigResponse()
        if action in (_Set.WARM_INIT_END, _Set.RECONCILE_AND_WARM_INIT_END):
            if action == _Set.RECONCILE_AND_WARM_INIT_END:
                raise _RpcError(grpc.StatusCode.UNIMPLEMENTED, "RECONCILE_AND_WARM_INIT_END")
            return pb.SetForwardingPipelineConfigResponse(
                set_forwarding_pipeline_config_response_type=pb.WARM_INIT_FINISHED)
        if action not in (_Set.VERIFY, _Set.VERIFY_AND_WARM_INIT_BEGIN, _Set.VERIFY_AND_WARM_INIT_BEGIN_AND_END):
            raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"unknown action {action}")
        if len(request.config) != 1:
            raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                            f"p4sim runs one program per device; got {len(request.config)} configs")
        cfg = request.config[0]
        if not cfg.p4_name:
            raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT, "config without p4_name")
        if len(cfg.profiles) != 1 or not cfg.profiles[0].binary:
            raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                            "give one profile whose binary is the P4 source (p4sim compiles it)")
        import json

        given = json.loads(cfg.bfruntime_info) if cfg.bfruntime_info else None
        new_switch = self.loader(cfg.profiles[0].binary)
        pipeline = _Pipeline(new_switch, cfg.p4_name, given, include_dirs=self.include_dirs)
        if action == _Set.VERIFY:
            return pb.SetForwardingPipelineConfigResponse()
        with self._lock:
            self.pipeline = pipeline
            self.pre_nodes.clear()
            self.pre_groups.clear()
            # the requesting client is bound to the new program; others must bind again
            self._bound = {request.client_id: cfg.p4_name} if request.client_id in self._streams else {}
        if self.on_switch_change is not None:
            self.on_switch_change(new_switch)
        log.info("loaded program %s", cfg.p4_name)
        kind = pb.WARM_INIT_FINISHED if action == _Set.VERIFY_AND_WARM_INIT_BEGIN_AND_END else pb.WARM_INIT_STARTED
        resp = pb.SetForwardingPipelineConfigResponse(set_forwarding_pipeline_config_response_type=kind)
        for q in list(self._streams.values()):
            q.put(pb.StreamMessageResponse(set_forwarding_pipeline_config_response=resp))
        return resp

    def GetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._check_device(request.device_id)
        except _RpcError as e:
            self._abort(context, e.code, str(e))
        with self._lock:
            resp = pb.GetForwardingPipelineConfigResponse()
            resp.config.append(self.pipeline.config())
            resp.non_p4_config.bfruntime_info = _json_bytes(fixed_bfrt_info())
            return resp

    # ------------------------------------------------------------------ stream channel
    def StreamChannel(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        out: queue.Queue = queue.Queue()
        client: list[int] = []                    # set once subscribed

        def reader() -> None:
            try:
                for msg in request_iterator:
                    kind = msg.WhichOneof("update")
                    if kind == "subscribe":
                        out.put(self._subscribe(msg, out, client))
                    # digest acks: p4sim sends no digests over BfRt
            except grpc.RpcError:
                pass
            finally:
                out.put(None)

        threading.Thread(target=reader, daemon=True, name="bfrt-stream").start()
        try:
            while True:
                msg = out.get()
                if msg is None or not context.is_active():
                    return
                yield msg
        finally:
            with self._lock:
                for cid in client:
                    if self._streams.get(cid) is out:
                        del self._streams[cid]
                        self._bound.pop(cid, None)

    def _subscribe(self, msg: Any, out: queue.Queue, client: list[int]) -> Any:
        sub = pb.Subscribe()
        sub.CopyFrom(msg.subscribe)
        code, text = code_pb2.OK, ""
        with self._lock:
            if msg.subscribe.device_id != self.device_id:
                code, text = code_pb2.NOT_FOUND, f"no device {msg.subscribe.device_id}"
            elif msg.client_id in self._streams and self._streams[msg.client_id] is not out:
                code, text = code_pb2.ALREADY_EXISTS, f"client id {msg.client_id} is in use"
            else:
                self._streams[msg.client_id] = out
                if msg.client_id not in client:
                    client.append(msg.client_id)
        sub.status.code = code
        sub.status.message = text
        return pb.StreamMessageResponse(subscribe=sub)


class _RichStatus(grpc.Status):
    def __init__(self, code: grpc.StatusCode, details: str, status: status_pb2.Status) -> None:
        self.code = code
        self.details = details
        self.trailing_metadata = (("grpc-status-details-bin", status.SerializeToString()),)


def serve_bfrt(switch: Any, addr: str = "127.0.0.1:50052", **kw: Any) -> grpc.Server:
    """Start a BfRuntime server for ``switch`` on ``addr`` (port 0: any free port); keyword
    arguments go to :class:`BfRtServer`. The returned gRPC server also carries ``.servicer``
    (the BfRtServer: $PORT and PRE state) and ``.port`` (the port it listens on)."""
    servicer = BfRtServer(switch, **kw)
    port = servicer.start(addr)
    server = servicer._server
    assert server is not None
    server.servicer = servicer  # type: ignore[attr-defined]
    server.port = port          # type: ignore[attr-defined]
    return server


__all__ = ["BfRtServer", "serve_bfrt", "default_loader"]
