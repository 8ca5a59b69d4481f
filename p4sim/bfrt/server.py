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

The servicer here holds the RPC entry points; :mod:`p4sim.bfrt.handlers` applies and reads one
entity at a time and :mod:`p4sim.bfrt.arbitration` keeps the clients' subscriptions and bindings.
"""
from __future__ import annotations

import json
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

import p4control.errors as errors
from p4control.bfrt.proto import pb, pb_grpc
from p4sim.errors import P4SIM_ERRORS

from .arbitration import Clients, RpcError
from .bfrt_json import fixed_bfrt_info
from .handlers import UNSUPPORTED_TYPES  # noqa: F401  (part of this module's API)
from .handlers import FixedTables, Pipeline, Undo, json_bytes, read_entity, write_update

log = logging.getLogger("p4sim.bfrt")

_Set = pb.SetForwardingPipelineConfigRequest
_READ_CHUNK = 1000
Loader = Callable[[bytes], Any]


class _NotApplied(errors.ControlPlaneError):
    """An update of an all-or-nothing batch that was skipped or undone."""

    grpc_code = "ABORTED"


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
        self.pipeline = Pipeline(switch, name, bfrt_json, strict=bfrt_json is not None,
                                 include_dirs=self.include_dirs)
        self.loader = loader or default_loader(name=Path(switch.program.path).name)
        self.fixed = FixedTables(known_ports=ports)
        self.on_switch_change = on_switch_change
        self.clients = Clients(device_id, self._lock)
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
        self.clients.close_all()
        if self._server is not None:
            self._server.stop(grace)

    @property
    def switch(self) -> Any:
        return self.pipeline.switch

    # the fixed tables' state, as the device shows it
    @property
    def known_ports(self) -> set[int] | None:
        return self.fixed.known_ports

    @property
    def port_config(self) -> dict[int, dict[str, Any]]:
        return self.fixed.port_config

    @property
    def pre_nodes(self) -> dict[int, tuple[int, list[int]]]:
        return self.fixed.pre_nodes

    @property
    def pre_groups(self) -> dict[int, list[tuple[int, int | None]]]:
        return self.fixed.pre_groups

    # ------------------------------------------------------------------ checks
    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"no device {device_id} (this is device {self.device_id})")

    def _check_bound(self, client_id: int, p4_name: str) -> None:
        self.clients.check_bound(client_id, p4_name, self.pipeline.p4_name)

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
        except RpcError as e:
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
                        undo.extend(write_update(p, self.fixed, update))
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
                        out.extend(read_entity(p, self.fixed, ent))
        except RpcError as e:
            self._abort(context, e.code, str(e))
            return
        except errors.ControlPlaneError as e:
            self._abort(context, _grpc_code(e), str(e))
            return
        for i in range(0, max(len(out), 1), _READ_CHUNK):
            yield pb.ReadResponse(entities=out[i:i + _READ_CHUNK])

    # ------------------------------------------------------------------ pipeline config
    def SetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._check_device(request.device_id)
            return self._set_pipeline(request)
        except RpcError as e:
            self._abort(context, e.code, str(e))
        except P4SIM_ERRORS as e:
            code = _grpc_code(e) if isinstance(e, errors.ControlPlaneError) else grpc.StatusCode.INVALID_ARGUMENT
            self._abort(context, code, str(e))

    def _set_pipeline(self, request: Any) -> Any:
        action = request.action
        if action == _Set.BIND:
            if len(request.config) != 1:
                raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "BIND takes exactly one config (the p4_name)")
            self.clients.bind(request.client_id, request.config[0].p4_name, self.pipeline.p4_name)
            return pb.SetForwardingPipelineConfigResponse()
        if action in (_Set.WARM_INIT_END, _Set.RECONCILE_AND_WARM_INIT_END):
            if action == _Set.RECONCILE_AND_WARM_INIT_END:
                raise RpcError(grpc.StatusCode.UNIMPLEMENTED, "RECONCILE_AND_WARM_INIT_END")
            return pb.SetForwardingPipelineConfigResponse(
                set_forwarding_pipeline_config_response_type=pb.WARM_INIT_FINISHED)
        if action not in (_Set.VERIFY, _Set.VERIFY_AND_WARM_INIT_BEGIN, _Set.VERIFY_AND_WARM_INIT_BEGIN_AND_END):
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"unknown action {action}")
        if len(request.config) != 1:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                           f"p4sim runs one program per device; got {len(request.config)} configs")
        cfg = request.config[0]
        if not cfg.p4_name:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "config without p4_name")
        if len(cfg.profiles) != 1 or not cfg.profiles[0].binary:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                           "give one profile whose binary is the P4 source (p4sim compiles it)")
        given = json.loads(cfg.bfruntime_info) if cfg.bfruntime_info else None
        new_switch = self.loader(cfg.profiles[0].binary)
        pipeline = Pipeline(new_switch, cfg.p4_name, given, include_dirs=self.include_dirs)
        if action == _Set.VERIFY:
            return pb.SetForwardingPipelineConfigResponse()
        with self._lock:
            self.pipeline = pipeline
            self.fixed.clear_pre()
            # the requesting client is bound to the new program; others must bind again
            self.clients.loaded(request.client_id, cfg.p4_name)
        if self.on_switch_change is not None:
            self.on_switch_change(new_switch)
        log.info("loaded program %s", cfg.p4_name)
        kind = pb.WARM_INIT_FINISHED if action == _Set.VERIFY_AND_WARM_INIT_BEGIN_AND_END else pb.WARM_INIT_STARTED
        resp = pb.SetForwardingPipelineConfigResponse(set_forwarding_pipeline_config_response_type=kind)
        self.clients.broadcast(pb.StreamMessageResponse(set_forwarding_pipeline_config_response=resp))
        return resp

    def GetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._check_device(request.device_id)
        except RpcError as e:
            self._abort(context, e.code, str(e))
        with self._lock:
            resp = pb.GetForwardingPipelineConfigResponse()
            resp.config.append(self.pipeline.config())
            resp.non_p4_config.bfruntime_info = json_bytes(fixed_bfrt_info())
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
                        out.put(self.clients.subscribe(msg, out, client))
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
            self.clients.leave(out, client)


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
