"""A P4Runtime v1 gRPC server over a p4sim :class:`~p4sim.Switch`.

Usage (the runner supplies the hooks)::

    server = P4RuntimeServer(switch, device_id=1, loader=loader,
                             packet_out_handler=inject_on_cpu_port)
    port = server.start("0.0.0.0:9559")
    ...                                   # data plane: server.send_packet_in(cpu_port_bytes)
    server.stop()

* ``loader(source: bytes, p4info) -> Switch`` compiles a device config (the P4 source text) for
  SetForwardingPipelineConfig. It must only build the switch; the server calls
  ``on_switch_change(new_switch)`` once the pipeline is committed (VERIFY never commits).
* ``packet_out_handler(data: bytes)`` receives the packet_out controller header followed by the
  payload of every PacketOut from a primary client; it injects it on the CPU port (it takes
  ``switch.lock`` itself: the server never holds it while calling hooks).
* ``send_packet_in(data)`` takes a packet the switch sent to the CPU port (packet_in header +
  payload) and streams it to the primary client(s); ``send_digest(name, values)`` does the same
  for digests and is installed as ``switch.on_digest``.

Spec notes / simplifications:

* Write supports CONTINUE_ON_ERROR only (ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC are optional and
  answered with UNIMPLEMENTED). Failed updates make the RPC fail with UNKNOWN and one p4.v1.Error
  per update in the google.rpc.Status details; Read reports failed requests the same way.
* Digests: every digest the data plane emits goes out at once as a one-element DigestList to
  the primary client(s), whether or not a DigestEntry was configured; DigestEntry writes are
  validated and stored for reads, and DigestListAck messages are accepted and ignored.
* Roles: every role has full pipeline access; role.config is not interpreted.
* RECONCILE_AND_COMMIT keeps the state only if the program is unchanged (else UNIMPLEMENTED,
  which the spec allows); VERIFY_AND_SAVE + COMMIT swap in a fresh switch like VERIFY_AND_COMMIT.
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from concurrent import futures
from typing import Any, Callable, Iterable, Iterator

from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (selects the protobuf backend first)
from p4control.errors import ControlPlaneError
from p4sim.errors import P4SIM_ERRORS
from p4sim.p4info import build_p4info
from p4sim.p4runtime.arbitration import Arbiter, ArbitrationError, StreamSession
from p4control.p4runtime.convert import (P4InfoIndex, digest_struct_to_p4data, packet_in_message,
                                         packet_out_bytes)
from p4sim.p4runtime.handlers import Pipeline, iter_entity, write_update

import grpc  # noqa: E402
from google.protobuf import any_pb2  # noqa: E402
from google.rpc import code_pb2, status_pb2  # noqa: E402
from p4.config.v1 import p4info_pb2  # noqa: E402
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc  # noqa: E402

log = logging.getLogger("p4sim.p4runtime")

P4RUNTIME_API_VERSION = "1.3.0"

Loader = Callable[[bytes, p4info_pb2.P4Info], Any]
_SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest
_GetType = p4runtime_pb2.GetForwardingPipelineConfigRequest
_READ_CHUNK = 1000  # entities per ReadResponse message
_CANCEL_CHECK = 256  # entities read between checks that the Read RPC is still active


class _RpcError(Exception):
    """An RPC-level failure (before any update/entity is looked at)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _grpc_code(err: BaseException) -> grpc.StatusCode:
    if isinstance(err, ControlPlaneError):
        return getattr(grpc.StatusCode, err.grpc_code, grpc.StatusCode.UNKNOWN)
    return grpc.StatusCode.INTERNAL


def _p4_error(err: BaseException | None) -> p4runtime_pb2.Error:
    if err is None:
        return p4runtime_pb2.Error(canonical_code=code_pb2.OK)
    return p4runtime_pb2.Error(canonical_code=_grpc_code(err).value[0], message=str(err))


def _abort_with_details(context: grpc.ServicerContext, message: str,
                        errors: Iterable[p4runtime_pb2.Error]) -> None:
    """Fail the RPC with UNKNOWN and a google.rpc.Status carrying one p4.v1.Error each."""
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message=message)
    for e in errors:
        detail = any_pb2.Any()
        detail.Pack(e)
        status.details.append(detail)
    context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    context.set_code(grpc.StatusCode.UNKNOWN)
    context.set_details(message)


def _program_source(switch: Any) -> bytes:
    """The P4 source of a switch (its device config), if the switch exposes its program."""
    for attr in ("program", "prog"):
        prog = getattr(switch, attr, None)
        source = getattr(prog, "source", None)
        if isinstance(source, str):
            return source.encode("utf-8")
        if isinstance(source, bytes):
            return source
    return b""


def p4info_mismatch(given: p4info_pb2.P4Info, ours: p4info_pb2.P4Info) -> str | None:
    """Why a client's P4Info does not describe the program we compiled (None if it does).

    Ids, names and the widths/kinds that shape the wire format must agree; annotations,
    aliases, documentation and sizes may differ.
    """
    def objects(p: p4info_pb2.P4Info, kind: str) -> dict[int, str]:
        return {o.preamble.id: o.preamble.name for o in getattr(p, kind)}

    for kind in ("tables", "actions", "counters", "direct_counters", "meters", "direct_meters",
                 "registers", "digests", "controller_packet_metadata", "value_sets"):
        a, b = objects(given, kind), objects(ours, kind)
        if a != b:
            diff = sorted(set(a.items()) ^ set(b.items()))[:3]
            return f"{kind} differ from the compiled program (id, name): {diff}"
    ours_tables = {t.preamble.id: t for t in ours.tables}
    for t in given.tables:
        fields = [(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields]
        expect = [(m.id, m.name, m.bitwidth, m.match_type)
                  for m in ours_tables[t.preamble.id].match_fields]
        if fields != expect:
            return f"table {t.preamble.name}: match fields differ from the compiled program"
        if {r.id for r in t.action_refs} != {r.id for r in ours_tables[t.preamble.id].action_refs}:
            return f"table {t.preamble.name}: actions differ from the compiled program"
    ours_actions = {a.preamble.id: a for a in ours.actions}
    for a in given.actions:
        params = [(p.id, p.name, p.bitwidth) for p in a.params]
        if params != [(p.id, p.name, p.bitwidth) for p in ours_actions[a.preamble.id].params]:
            return f"action {a.preamble.name}: parameters differ from the compiled program"
    ours_cpm = {c.preamble.id: c for c in ours.controller_packet_metadata}
    for c in given.controller_packet_metadata:
        if ([(m.id, m.bitwidth) for m in c.metadata]
                != [(m.id, m.bitwidth) for m in ours_cpm[c.preamble.id].metadata]):
            return f"controller header {c.preamble.name}: metadata differ from the program"
    return None


class P4RuntimeServer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """P4Runtime service for one device (``device_id``) backed by a p4sim switch."""

    def __init__(self, switch: Any | None, device_id: int = 1, *,
                 loader: Loader | None = None,
                 packet_out_handler: Callable[[bytes], Any] | None = None,
                 device_config: bytes | None = None,
                 on_switch_change: Callable[[Any], Any] | None = None,
                 max_workers: int = 32) -> None:
        self.device_id = device_id
        self.loader = loader
        self.packet_out_handler = packet_out_handler
        self.on_switch_change = on_switch_change
        self._max_workers = max_workers
        self._arbiter = Arbiter(device_id)
        # Lock order: self._lock (pipeline/config) before switch.lock; hooks and the packet
        # paths (send_packet_in/send_digest) never take self._lock, so the data plane cannot
        # deadlock against a Write that holds both.
        self._lock = threading.RLock()
        self._pipeline: Pipeline | None = None
        self._saved: Pipeline | None = None      # VERIFY_AND_SAVE, waiting for COMMIT
        self._list_ids = itertools.count(1)
        self._server: grpc.Server | None = None
        if switch is not None:
            source = device_config if device_config is not None else _program_source(switch)
            p4info = build_p4info(switch.info)
            self._install(Pipeline(switch, p4info, P4InfoIndex.build(p4info, switch.info),
                                   source))

    # ================================================================= lifecycle

    def start(self, address: str = "0.0.0.0:9559") -> int:
        """Listen on ``address`` (port 0: any free port) and return the bound port."""
        if self._server is not None:
            raise RuntimeError("the P4Runtime server is already started")
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=self._max_workers,
                                       thread_name_prefix="p4rt"),
            options=[("grpc.max_receive_message_length", 256 << 20),
                     ("grpc.max_send_message_length", 256 << 20),
                     # without this a second server on a busy port "binds" silently (Linux)
                     ("grpc.so_reuseport", 0)])
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self, server)
        port = server.add_insecure_port(address)
        if port == 0:
            raise OSError(f"cannot listen on {address}")
        server.start()
        self._server = server
        log.info("P4Runtime server for device %d listening on port %d", self.device_id, port)
        return port

    def stop(self, grace: float | None = 0.5) -> None:
        """Close every stream and stop serving."""
        self._arbiter.close_all()
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None

    @property
    def switch(self) -> Any | None:
        """The switch of the committed pipeline (None before one is set)."""
        p = self._pipeline
        return p.switch if p is not None else None

    @property
    def p4info(self) -> p4info_pb2.P4Info | None:
        p = self._pipeline
        return p.p4info if p is not None else None

    # ================================================================= data plane hooks

    def send_packet_in(self, payload_with_header: bytes) -> bool:
        """Stream a CPU-port packet to the primary client(s); False if nobody got it."""
        p = self._pipeline
        if p is None:
            return False
        try:
            msg = packet_in_message(p.index.packet_in, bytes(payload_with_header))
        except ControlPlaneError as e:
            log.warning("dropping packet-in: %s", e)
            return False
        return self._to_primaries(p4runtime_pb2.StreamMessageResponse(packet=msg))

    def send_digest(self, name: str, values: dict[str, int]) -> bool:
        """Stream one digest message (struct type ``name``) to the primary client(s)."""
        p = self._pipeline
        if p is None:
            return False
        digest_id = p.index.digest_ids.get(name)
        if digest_id is None:
            log.warning("dropping digest of unknown type %s", name)
            return False
        resp = p4runtime_pb2.StreamMessageResponse()
        resp.digest.digest_id = digest_id
        resp.digest.list_id = next(self._list_ids)
        resp.digest.timestamp = time.time_ns()
        resp.digest.data.append(digest_struct_to_p4data(p.index.digests[digest_id], values))
        return self._to_primaries(resp)

    def _to_primaries(self, resp: p4runtime_pb2.StreamMessageResponse) -> bool:
        sent = False
        for session in self._arbiter.primaries():
            sent = session.send(resp) or sent
        return sent

    # ================================================================= pipeline

    def _install(self, pipeline: Pipeline) -> None:
        self._pipeline = pipeline
        try:  # the Switch API's digest hook; a switch without one simply never digests
            pipeline.switch.on_digest = self.send_digest
        except AttributeError:
            pass

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise _RpcError(grpc.StatusCode.NOT_FOUND, f"unknown device id {device_id}")

    def _check_primary(self, role: str, election_id: p4runtime_pb2.Uint128 | None) -> None:
        eid = (election_id.high, election_id.low) if election_id is not None else None
        if not self._arbiter.is_primary(role, eid):
            raise _RpcError(grpc.StatusCode.PERMISSION_DENIED,
                            "not the primary controller (arbitrate on StreamChannel first; the "
                            "request's election_id must be the primary's)")

    def _require_pipeline(self) -> Pipeline:
        p = self._pipeline
        if p is None:
            raise _RpcError(grpc.StatusCode.FAILED_PRECONDITION,
                            "no forwarding pipeline config has been set")
        return p

    # ================================================================= RPCs

    def Capabilities(self, request: p4runtime_pb2.CapabilitiesRequest,
                     context: grpc.ServicerContext) -> p4runtime_pb2.CapabilitiesResponse:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=P4RUNTIME_API_VERSION)

    def Write(self, request: p4runtime_pb2.WriteRequest,
              context: grpc.ServicerContext) -> p4runtime_pb2.WriteResponse:
        try:
            self._check_device(request.device_id)
            self._check_primary(request.role, request.election_id
                                if request.HasField("election_id") else None)
            with self._lock:
                p = self._require_pipeline()
                if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                    raise _RpcError(grpc.StatusCode.UNIMPLEMENTED,
                                    "only CONTINUE_ON_ERROR atomicity is supported")
                errors = [self._apply(p, u) for u in request.updates]
        except _RpcError as e:
            context.abort(e.code, str(e))
        if any(e is not None for e in errors):
            _abort_with_details(context, "one or more updates failed",
                                [_p4_error(e) for e in errors])
        return p4runtime_pb2.WriteResponse()

    @staticmethod
    def _apply(p: Pipeline, update: p4runtime_pb2.Update) -> BaseException | None:
        try:
            write_update(p, update)
            return None
        except ControlPlaneError as e:
            return e
        except Exception as e:  # never let a bug take the server down
            log.exception("internal error while applying an update")
            return e

    def Read(self, request: p4runtime_pb2.ReadRequest,
             context: grpc.ServicerContext) -> Iterator[p4runtime_pb2.ReadResponse]:
        results: list[p4runtime_pb2.Entity] = []
        errors: list[BaseException | None] = []
        try:
            self._check_device(request.device_id)
            with self._lock:
                p = self._require_pipeline()
                with p.switch.lock:  # one consistent snapshot for the whole batch
                    for entity in request.entities:
                        try:
                            found = []
                            for e in iter_entity(p, entity):
                                found.append(e)
                                # a wildcard read of a large register takes seconds to minutes:
                                # stop (and free the lock) once the client is gone
                                if len(found) % _CANCEL_CHECK == 0 and not context.is_active():
                                    raise _RpcError(grpc.StatusCode.CANCELLED,
                                                    "the read was cancelled or ran past its deadline")
                            results.extend(found)
                            errors.append(None)
                        except _RpcError:
                            raise
                        except ControlPlaneError as e:
                            errors.append(e)
                        except Exception as e:
                            log.exception("internal error while reading")
                            errors.append(e)
        except _RpcError as e:
            context.abort(e.code, str(e))
        for i in range(0, len(results), _READ_CHUNK):
            yield p4runtime_pb2.ReadResponse(entities=results[i:i + _READ_CHUNK])
        if any(e is not None for e in errors):
            _abort_with_details(context, "one or more read requests failed",
                                [_p4_error(e) for e in errors])

    def SetForwardingPipelineConfig(self, request: _SetAction, context: grpc.ServicerContext
                                    ) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        try:
            self._check_device(request.device_id)
            self._check_primary(request.role, request.election_id
                                if request.HasField("election_id") else None)
            with self._lock:
                self._set_pipeline(request)
        except _RpcError as e:
            context.abort(e.code, str(e))
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _set_pipeline(self, request: _SetAction) -> None:
        action = request.action
        has_config = request.HasField("config")
        if action == _SetAction.COMMIT:
            if has_config:
                raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                                "COMMIT takes no config (it commits the saved one)")
            if self._saved is None:
                raise _RpcError(grpc.StatusCode.NOT_FOUND, "no saved config to commit")
            self._commit(self._saved)
            self._saved = None
            return
        if action not in (_SetAction.VERIFY, _SetAction.VERIFY_AND_SAVE,
                          _SetAction.VERIFY_AND_COMMIT, _SetAction.RECONCILE_AND_COMMIT):
            raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                            f"unsupported SetForwardingPipelineConfig action {action}")
        if not has_config or not request.config.HasField("p4info"):
            raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT, "config with a p4info is required")
        config = request.config
        cookie = config.cookie.cookie if config.HasField("cookie") else None
        current = self._pipeline
        if (action == _SetAction.RECONCILE_AND_COMMIT and current is not None
                and current.device_config == config.p4_device_config):
            if p4info_mismatch(config.p4info, build_p4info(current.switch.info)):
                raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                                "the p4info does not match the running program")
            current.p4info = config.p4info  # same program: keep the forwarding state
            current.cookie = cookie
            return
        if action == _SetAction.RECONCILE_AND_COMMIT and current is not None:
            raise _RpcError(grpc.StatusCode.UNIMPLEMENTED,
                            "RECONCILE_AND_COMMIT cannot preserve state across a program "
                            "change; use VERIFY_AND_COMMIT")
        pipeline = self._load(config, cookie)
        if action == _SetAction.VERIFY_AND_SAVE:
            self._saved = pipeline
        elif action != _SetAction.VERIFY:
            self._commit(pipeline)

    def _load(self, config: p4runtime_pb2.ForwardingPipelineConfig,
              cookie: int | None) -> Pipeline:
        if self.loader is None:
            raise _RpcError(grpc.StatusCode.UNIMPLEMENTED,
                            "this server cannot load new programs (no loader)")
        try:
            switch = self.loader(config.p4_device_config, config.p4info)
        except P4SIM_ERRORS as e:
            raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                            f"cannot realize the device config: {e}") from None
        except UnicodeDecodeError as e:
            raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                            f"the device config must be P4 source text (UTF-8): {e}") from None
        except Exception as e:
            log.exception("loader failed")
            raise _RpcError(grpc.StatusCode.INTERNAL, f"loading the program failed: {e}") \
                from None
        ours = build_p4info(switch.info)
        why = p4info_mismatch(config.p4info, ours)
        if why:
            raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"p4info mismatch: {why}")
        return Pipeline(switch, config.p4info, P4InfoIndex.build(ours, switch.info),
                        config.p4_device_config, cookie)

    def _commit(self, pipeline: Pipeline) -> None:
        self._install(pipeline)
        if self.on_switch_change is not None:
            self.on_switch_change(pipeline.switch)
        log.info("forwarding pipeline committed (%d bytes of device config)",
                 len(pipeline.device_config))

    def GetForwardingPipelineConfig(self, request: _GetType, context: grpc.ServicerContext
                                    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        try:
            self._check_device(request.device_id)
        except _RpcError as e:
            context.abort(e.code, str(e))
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        p = self._pipeline
        if p is None:
            return resp  # spec: config unset when none is known
        config = resp.config
        if p.cookie is not None:
            config.cookie.cookie = p.cookie
        rtype = request.response_type
        if rtype in (_GetType.ALL, _GetType.P4INFO_AND_COOKIE):
            config.p4info.CopyFrom(p.p4info)
        if rtype in (_GetType.ALL, _GetType.DEVICE_CONFIG_AND_COOKIE):
            config.p4_device_config = p.device_config
        if p.cookie is None and rtype == _GetType.COOKIE_ONLY:
            config.SetInParent()
        return resp

    # ================================================================= stream

    def StreamChannel(self, request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],
                      context: grpc.ServicerContext
                      ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        session = StreamSession(context.peer())
        context.add_callback(session.close)   # RPC over (cancelled, deadline, server stop)
        reader = threading.Thread(target=self._read_stream, args=(session, request_iterator),
                                  name=f"p4rt-stream-{context.peer()}", daemon=True)
        reader.start()
        try:
            for item in session.outgoing():
                if isinstance(item, ArbitrationError):
                    context.abort(item.code, str(item))
                yield item
        finally:
            self._arbiter.remove(session)

    def _read_stream(self, session: StreamSession,
                     requests: Iterator[p4runtime_pb2.StreamMessageRequest]) -> None:
        try:
            for req in requests:
                try:
                    if not self._stream_message(session, req):
                        return
                except Exception:  # a bug must not kill the stream silently
                    log.exception("stream %s: internal error", session.peer)
                    self._stream_error(session, code_pb2.INTERNAL, "internal error", other=req)
        except Exception as e:  # the client went away (cancelled / connection lost)
            log.debug("stream %s ended: %s", session.peer, e)
        finally:
            session.close()

    def _stream_message(self, session: StreamSession,
                        req: p4runtime_pb2.StreamMessageRequest) -> bool:
        """Handle one client stream message; False ends the stream."""
        kind = req.WhichOneof("update")
        if kind == "arbitration":
            try:
                self._arbiter.update(session, req.arbitration)
            except ArbitrationError as e:
                session.close(e)
                return False
        elif kind == "packet":
            self._packet_out(session, req.packet)
        elif kind == "digest_ack":
            pass  # acks only matter for de-duplication, which p4sim does not do
        else:
            self._stream_error(session, code_pb2.UNIMPLEMENTED,
                               f"unsupported stream message {kind}", other=req)
        return True

    def _packet_out(self, session: StreamSession, packet: p4runtime_pb2.PacketOut) -> None:
        if not session.arbitrated:
            self._stream_error(session, code_pb2.FAILED_PRECONDITION,
                               "send a MasterArbitrationUpdate first", packet=packet)
            return
        if not self._arbiter.session_is_primary(session):
            self._stream_error(session, code_pb2.PERMISSION_DENIED,
                               "only the primary controller may send packets", packet=packet)
            return
        p = self._pipeline
        if p is None:
            self._stream_error(session, code_pb2.FAILED_PRECONDITION,
                               "no forwarding pipeline config has been set", packet=packet)
            return
        try:
            data = packet_out_bytes(p.index.packet_out, packet)
        except ControlPlaneError as e:
            self._stream_error(session, _grpc_code(e).value[0], str(e), packet=packet)
            return
        if self.packet_out_handler is None:
            log.warning("dropping packet-out: no packet_out_handler")
            return
        try:
            self.packet_out_handler(data)
        except Exception as e:
            log.exception("packet_out_handler failed")
            self._stream_error(session, code_pb2.INTERNAL, f"packet-out failed: {e}",
                               packet=packet)

    @staticmethod
    def _stream_error(session: StreamSession, code: int, message: str, *,
                      packet: p4runtime_pb2.PacketOut | None = None,
                      other: p4runtime_pb2.StreamMessageRequest | None = None) -> None:
        resp = p4runtime_pb2.StreamMessageResponse()
        resp.error.canonical_code = code
        resp.error.message = message
        if packet is not None:
            resp.error.packet_out.packet_out.CopyFrom(packet)
        elif other is not None:
            resp.error.other.SetInParent()
        session.send(resp)


__all__ = ["P4RuntimeServer", "P4RUNTIME_API_VERSION", "p4info_mismatch"]
