"""Install plans on switches over P4Runtime: a target for :class:`controller.ina_tables.InaTables`.

Works with any P4Runtime v1 server: ``python -m p4sim serve`` and bmv2's
``simple_switch_grpc``. Tables, keys and actions are named through a P4Info: the one given
(``p4c --p4runtime-files`` or ``python -m p4sim p4info`` output, read with
:func:`p4control.p4runtime.p4info.load_p4info`), else the one the switch runs
(GetForwardingPipelineConfig). With a ``device_config`` the pipeline (that P4Info and the
device config: for p4sim the P4 source, for bmv2 the p4c JSON) is installed first with
SetForwardingPipelineConfig.
"""
from __future__ import annotations

import queue
from typing import Any

from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (selects the protobuf backend first)
from p4control.errors import ControlPlaneError
from p4control.model import ActionCall, ProgramInfo, TableEntry
from p4control.p4runtime.convert import (P4InfoIndex, default_entry_to_proto, match_from_proto,
                                         match_to_proto, table_action_from_proto,
                                         table_entry_to_proto)
from p4control.p4runtime.p4info import program_info_from_p4info

import grpc  # noqa: E402
from google.rpc import code_pb2, status_pb2  # noqa: E402
from p4.config.v1 import p4info_pb2  # noqa: E402
from p4.v1 import p4runtime_pb2 as pb  # noqa: E402
from p4.v1 import p4runtime_pb2_grpc  # noqa: E402

from .deadlines import Deadlines  # noqa: E402
from .grpc_stream import StreamChannel  # noqa: E402


class P4RuntimeTargetError(ControlPlaneError):
    """The switch refused a request; the message carries the gRPC status and details."""


class P4RuntimeTarget:
    def __init__(self, address: str, p4info: p4info_pb2.P4Info | None = None, *, device_id: int = 1,
                 election_id: tuple[int, int] = (0, 1), device_config: bytes | None = None,
                 timeout: float | None = None, deadlines: Deadlines | None = None) -> None:
        """``p4info``: the program's P4Info (None: the one the switch runs). ``device_config``:
        push ``p4info`` with this device config first (needs ``p4info``). ``timeout``: seconds
        for a small request (default 30; ``deadlines`` sets every kind: a pipeline push and
        large reads get longer, see controller.deadlines)."""
        if device_config is not None and p4info is None:
            raise ValueError("a pipeline push (device_config) needs the P4Info that goes with it")
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.deadlines = deadlines or Deadlines.for_request_timeout(timeout)
        self.timeout = self.deadlines.request
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._stream = StreamChannel(self.stub.StreamChannel, "p4runtime-client-stream")
        try:
            self._become_primary()
            if device_config is not None:
                assert p4info is not None
                self._set_pipeline(p4info, device_config)
            self.p4info = p4info if p4info is not None else self._device_p4info()
        except BaseException:
            self.close()
            raise
        self.info: ProgramInfo = program_info_from_p4info(self.p4info)
        self.index = P4InfoIndex.build(self.p4info, self.info)
        self._table_ids = {m.name: tid for tid, m in self.index.tables.items()}
        self.pre = _Replication(self)

    # ------------------------------------------------------------------ session
    def _become_primary(self) -> None:
        req = pb.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        self._stream.send(req)
        try:
            msg = self._stream.receive(self.timeout)
        except queue.Empty:
            raise P4RuntimeTargetError(f"{self.address}: no arbitration answer in {self.timeout} s") from None
        if isinstance(msg, grpc.RpcError):
            raise P4RuntimeTargetError(f"{self.address}: stream closed: {msg.code().name} {msg.details()}")
        if msg.arbitration.status.code != 0:
            raise P4RuntimeTargetError(f"{self.address}: not primary for device {self.device_id} "
                                       f"(election id {self.election_id})")

    def _set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        req = pb.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.high, req.election_id.low = self.election_id
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        self._call(self.stub.SetForwardingPipelineConfig, req, "SetForwardingPipelineConfig",
                   self.deadlines.pipeline)

    def _device_p4info(self) -> p4info_pb2.P4Info:
        """The P4Info of the program the switch runs."""
        req = pb.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=pb.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        resp = self._call(self.stub.GetForwardingPipelineConfig, req, "GetForwardingPipelineConfig")
        if not resp.config.HasField("p4info"):
            raise P4RuntimeTargetError(f"{self.address}: device {self.device_id} runs no program "
                                       "(give its P4Info and device config to install one)")
        return resp.config.p4info

    def _call(self, rpc: Any, req: Any, what: str, deadline: float | None = None) -> Any:
        try:
            return rpc(req, timeout=self.timeout if deadline is None else deadline)
        except grpc.RpcError as e:
            reason = _update_errors(e) or f"{e.code().name}: {e.details()}"
            raise P4RuntimeTargetError(f"{self.address}: {what}: {reason}") from None

    def _write(self, update_type: int, entity: pb.Entity, what: str) -> None:
        req = pb.WriteRequest(device_id=self.device_id)
        req.election_id.high, req.election_id.low = self.election_id
        req.updates.add(type=update_type, entity=entity)
        self._call(self.stub.Write, req, what)

    def close(self) -> None:
        self._stream.close()
        self.channel.close()

    def __enter__(self) -> "P4RuntimeTarget":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ the InaTables target API
    def _table(self, name: str):
        try:
            return self.index.tables[self._table_ids[name]]
        except KeyError:
            raise P4RuntimeTargetError(f"no table named '{name}' in the program") from None

    def table_insert(self, table: str, entry: TableEntry) -> None:
        meta = self._table(table)
        ent = pb.Entity(table_entry=table_entry_to_proto(self.index, meta, entry))
        self._write(pb.Update.INSERT, ent, f"insert into {table}")

    def table_set_default(self, table: str, call: ActionCall) -> None:
        meta = self._table(table)
        ent = pb.Entity(table_entry=default_entry_to_proto(self.index, meta, call))
        self._write(pb.Update.MODIFY, ent, f"default action of {table}")

    def table_modify(self, table: str, entry: TableEntry) -> None:
        meta = self._table(table)
        ent = pb.Entity(table_entry=table_entry_to_proto(self.index, meta, entry))
        self._write(pb.Update.MODIFY, ent, f"modify {table}")

    def table_delete(self, table: str, match: dict[str, Any], priority: int = 0) -> None:
        meta = self._table(table)
        te = pb.TableEntry(table_id=meta.id, priority=priority)
        te.match.extend(match_to_proto(meta, match))
        self._write(pb.Update.DELETE, pb.Entity(table_entry=te), f"delete from {table}")

    def _read(self, entity: pb.Entity, what: str, entries: int = 1) -> list[pb.Entity]:
        """``entries``: how many entries the answer may hold (its deadline grows with them)."""
        req = pb.ReadRequest(device_id=self.device_id)
        req.entities.append(entity)
        try:
            return [e for resp in self.stub.Read(req, timeout=self.deadlines.read(entries))
                    for e in resp.entities]
        except grpc.RpcError as e:
            raise P4RuntimeTargetError(f"{self.address}: {what}: {e.code().name}: {e.details()}") from None

    def table_entries(self, table: str) -> list[TableEntry]:
        """The entries of a table as the switch holds them (const entries included)."""
        meta = self._table(table)
        out = []
        entity = pb.Entity(table_entry=pb.TableEntry(table_id=meta.id))
        for e in self._read(entity, f"read {table}", max(1, meta.info.size)):
            te = e.table_entry
            call = table_action_from_proto(self.index, meta, te.action, default=False)
            out.append(TableEntry(match_from_proto(meta, te.match), call, te.priority,
                                  is_const=te.is_const))
        return out


def _update_errors(e: grpc.RpcError) -> str:
    """A failed Write is UNKNOWN with one p4.v1.Error per update in the status details (P4Runtime
    spec §12.3); show those codes and messages."""
    raw = dict(e.trailing_metadata() or ()).get("grpc-status-details-bin")
    if not raw:
        return ""
    parts = []
    for detail in status_pb2.Status.FromString(raw).details:
        err = pb.Error()
        if detail.Unpack(err) and err.canonical_code != code_pb2.OK:
            parts.append(f"{code_pb2.Code.Name(err.canonical_code)}: {err.message}")
    return "; ".join(parts)


class _Replication:
    """The PRE part of the target API: multicast groups as PacketReplicationEngineEntry."""

    def __init__(self, target: P4RuntimeTarget) -> None:
        self.target = target

    def insert_group(self, group_id: int, replicas: list[tuple[int, int]]) -> None:
        ent = pb.Entity()
        group = ent.packet_replication_engine_entry.multicast_group_entry
        group.multicast_group_id = group_id
        for port, rid in replicas:
            group.replicas.add(egress_port=port, instance=rid)
        self.target._write(pb.Update.INSERT, ent, f"multicast group {group_id}")

    def _group_entity(self, group_id: int) -> pb.Entity:
        ent = pb.Entity()
        ent.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = group_id
        return ent

    def get_group(self, group_id: int) -> list[tuple[int, int]]:
        """(port, rid) replicas of a group."""
        ents = self.target._read(self._group_entity(group_id), f"read multicast group {group_id}")
        return [(r.egress_port, r.instance) for e in ents
                for r in e.packet_replication_engine_entry.multicast_group_entry.replicas]

    def group_ids(self) -> list[int]:
        ents = self.target._read(self._group_entity(0), "read multicast groups")
        return sorted(e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id
                      for e in ents)

    def delete_group(self, group_id: int) -> None:
        self.target._write(pb.Update.DELETE, self._group_entity(group_id), f"delete multicast group {group_id}")
