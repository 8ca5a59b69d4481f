"""A small synchronous P4Runtime test client on the ``p4runtime`` package bindings.

Importing it selects the pure-Python protobuf backend first (see p4sim/p4runtime/__init__.py).
"""
from __future__ import annotations

import os
import queue
import threading
from typing import Iterable

os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

import grpc  # noqa: E402
from google.rpc import status_pb2  # noqa: E402
from p4.config.v1 import p4info_pb2  # noqa: E402
from p4.v1 import p4runtime_pb2 as pb  # noqa: E402
from p4.v1 import p4runtime_pb2_grpc  # noqa: E402


class RpcFailure(Exception):
    """A failed unary RPC: its code, message and per-update/per-entity p4.v1.Error details."""

    def __init__(self, err: grpc.RpcError) -> None:
        self.code = err.code()
        self.message = err.details()
        self.errors: list[pb.Error] = []
        for key, value in err.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                status = status_pb2.Status.FromString(value)
                for detail in status.details:
                    e = pb.Error()
                    detail.Unpack(e)
                    self.errors.append(e)
        super().__init__(f"{self.code}: {self.message}")

    @property
    def codes(self) -> list[grpc.StatusCode]:
        """The canonical code of each p4.v1.Error, as grpc.StatusCode."""
        by_value = {c.value[0]: c for c in grpc.StatusCode}
        return [by_value[e.canonical_code] for e in self.errors]


class P4Info:
    """Name -> id lookups over a P4Info message, as a controller would build them."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.msg = p4info
        self.tables = {t.preamble.name: t for t in p4info.tables}
        self.actions = {a.preamble.name: a for a in p4info.actions}
        self.registers = {r.preamble.name: r for r in p4info.registers}
        self.counters = {c.preamble.name: c for c in p4info.counters}
        self.digests = {d.preamble.name: d for d in p4info.digests}
        self.cpm = {c.preamble.name: c for c in p4info.controller_packet_metadata}

    def table_id(self, name: str) -> int:
        return self.tables[name].preamble.id

    def action_id(self, name: str) -> int:
        return self.actions[name].preamble.id

    def field_id(self, table: str, field: str) -> int:
        return next(m.id for m in self.tables[table].match_fields if m.name == field)

    def action(self, name: str, **params: int | bytes) -> pb.Action:
        a = self.actions[name]
        unknown = set(params) - {p.name for p in a.params}
        if unknown:  # a typo must not quietly drop a parameter from the request
            raise KeyError(f"action {name} has no parameter(s) {', '.join(sorted(unknown))}")
        msg = pb.Action(action_id=a.preamble.id)
        for p in a.params:
            value = params[p.name]
            if isinstance(value, int):
                value = value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
            msg.params.add(param_id=p.id, value=value)
        return msg

    def table_entry(self, table: str, match: dict | None = None,
                    action: pb.Action | None = None, priority: int = 0,
                    **kw) -> pb.TableEntry:
        """``match`` maps a field name to a FieldMatch oneof name and its fields, e.g.
        ``{"hdr.ipv4.dstAddr": ("lpm", {"value": b"\\x0a", "prefix_len": 8})}``."""
        te = pb.TableEntry(table_id=self.table_id(table), priority=priority, **kw)
        for name, (kind, fields) in (match or {}).items():
            fm = te.match.add(field_id=self.field_id(table, name))
            getattr(fm, kind).CopyFrom(getattr(pb.FieldMatch, kind.capitalize()
                                               if kind != "lpm" else "LPM")(**fields))
        if action is not None:
            te.action.action.CopyFrom(action)
        return te


class Client:
    """One controller connection: unary RPC helpers plus a background StreamChannel reader."""

    def __init__(self, address: str, device_id: int = 1) -> None:
        self.device_id = device_id
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.election_id: tuple[int, int] | None = None
        self.role = ""
        self._requests: queue.Queue = queue.Queue()
        self.responses: queue.Queue = queue.Queue()
        self.stream_error: grpc.RpcError | None = None
        self._stream = None
        self._reader: threading.Thread | None = None

    # ---------------------------------------------------------------- stream

    def open_stream(self) -> None:
        self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for resp in self._stream:
                self.responses.put(resp)
        except grpc.RpcError as e:
            self.stream_error = e
        self.responses.put(None)  # end of stream

    def send(self, req: pb.StreamMessageRequest) -> None:
        self._requests.put(req)

    def arbitrate(self, election_id: tuple[int, int] | None = (0, 1), role: str | None = None,
                  device_id: int | None = None) -> pb.MasterArbitrationUpdate | None:
        """Send a MasterArbitrationUpdate and return the server's answer to it (None if the
        stream ended instead)."""
        if self._stream is None:
            self.open_stream()
        req = pb.StreamMessageRequest()
        req.arbitration.device_id = self.device_id if device_id is None else device_id
        if election_id is not None:
            req.arbitration.election_id.high, req.arbitration.election_id.low = election_id
        if role is not None:
            req.arbitration.role.name = role
            self.role = role
        self.election_id = election_id
        self.send(req)
        resp = self.next("arbitration")
        return resp.arbitration if resp is not None else None

    def next(self, kind: str, timeout: float = 5.0) -> pb.StreamMessageResponse | None:
        """The next stream message of ``kind`` (others are skipped); None at end of stream."""
        while True:
            resp = self.responses.get(timeout=timeout)
            if resp is None:
                self.responses.put(None)
                return None
            if resp.WhichOneof("update") == kind:
                return resp

    def packet_out(self, payload: bytes, **metadata: int) -> None:
        cpm = {m.name: m.id for m in self.p4info().cpm["packet_out"].metadata}
        req = pb.StreamMessageRequest()
        req.packet.payload = payload
        for name, value in metadata.items():
            req.packet.metadata.add(metadata_id=cpm[name],
                                    value=value.to_bytes(max(1, (value.bit_length() + 7) // 8),
                                                         "big"))
        self.send(req)

    # ---------------------------------------------------------------- unary RPCs

    def _call(self, method, request):
        try:
            return method(request, timeout=60)
        except grpc.RpcError as e:
            raise RpcFailure(e) from None

    def write(self, *updates: pb.Update, atomicity: int = 0,
              election_id: tuple[int, int] | None = None) -> None:
        req = pb.WriteRequest(device_id=self.device_id, role=self.role, atomicity=atomicity)
        eid = election_id or self.election_id
        if eid is not None:
            req.election_id.high, req.election_id.low = eid
        req.updates.extend(updates)
        self._call(self.stub.Write, req)

    def insert(self, entity: pb.Entity) -> None:
        self.write(pb.Update(type=pb.Update.INSERT, entity=entity))

    def modify(self, entity: pb.Entity) -> None:
        self.write(pb.Update(type=pb.Update.MODIFY, entity=entity))

    def delete(self, entity: pb.Entity) -> None:
        self.write(pb.Update(type=pb.Update.DELETE, entity=entity))

    def read(self, *entities: pb.Entity) -> list[pb.Entity]:
        req = pb.ReadRequest(device_id=self.device_id, entities=entities)
        try:
            return [e for resp in self.stub.Read(req, timeout=60) for e in resp.entities]
        except grpc.RpcError as e:
            raise RpcFailure(e) from None

    def get_config(self, response_type: int = 0
                   ) -> pb.GetForwardingPipelineConfigResponse:
        return self._call(self.stub.GetForwardingPipelineConfig,
                          pb.GetForwardingPipelineConfigRequest(device_id=self.device_id,
                                                                response_type=response_type))

    def set_config(self, action: int, p4info: p4info_pb2.P4Info | None = None,
                   device_config: bytes | None = None, cookie: int | None = None) -> None:
        req = pb.SetForwardingPipelineConfigRequest(device_id=self.device_id, action=action,
                                                    role=self.role)
        if self.election_id is not None:
            req.election_id.high, req.election_id.low = self.election_id
        if p4info is not None:
            req.config.p4info.CopyFrom(p4info)
        if device_config is not None:
            req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        self._call(self.stub.SetForwardingPipelineConfig, req)

    def p4info(self) -> P4Info:
        return P4Info(self.get_config(pb.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
                      .config.p4info)

    def close(self) -> None:
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
        if self._reader is not None:
            self._reader.join(timeout=5)
        self.channel.close()


def entity(**kw) -> pb.Entity:
    return pb.Entity(**kw)


def updates(kind: int, entities: Iterable[pb.Entity]) -> list[pb.Update]:
    return [pb.Update(type=kind, entity=e) for e in entities]
