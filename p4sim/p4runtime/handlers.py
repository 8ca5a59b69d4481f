"""Per-entity Write and Read handling for the P4Runtime server.

:class:`Pipeline` is everything tied to one committed forwarding pipeline: the switch, the
P4Info index and the bits of P4Runtime state the switch itself does not keep (entry cookies and
metadata, meter and digest configurations, multicast group metadata). ``write_update`` and
``read_entity`` validate a request completely before touching the switch, so that a rejected
update never leaves a half-applied change, and raise :mod:`p4sim.errors` exceptions whose
``grpc_code`` the server reports per update / per read request.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (selects the protobuf backend first)
from p4control.errors import (AlreadyExists, InvalidArgument, NotFound, OutOfRange, PermissionDenied,
                              Unimplemented)
from p4control.p4runtime.convert import (P4InfoIndex, TableMeta, bytes_to_int, check_priority,
                                         default_entry_to_proto, int_to_p4data, match_from_proto,
                                         p4data_to_int, table_action_from_proto,
                                         table_entry_to_proto)
from p4control.model import FieldMatch, TableEntry

from p4.config.v1 import p4info_pb2  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402

Update = p4runtime_pb2.Update
Entity = p4runtime_pb2.Entity

_EntryKey = tuple  # (table name, frozenset(match items), priority) or (table name, "default")


@dataclass
class Pipeline:
    switch: Any
    p4info: p4info_pb2.P4Info          # as the client sent it (read-write symmetry)
    index: P4InfoIndex
    device_config: bytes
    cookie: int | None = None
    entry_meta: dict[_EntryKey, tuple[int, bytes]] = field(default_factory=dict)
    meter_configs: dict[tuple[str, int], p4runtime_pb2.MeterConfig] = field(default_factory=dict)
    digest_configs: dict[int, p4runtime_pb2.DigestEntry.Config] = field(default_factory=dict)
    group_meta: dict[int, bytes] = field(default_factory=dict)


def _entry_key(table: TableMeta, match: dict[str, FieldMatch], priority: int) -> _EntryKey:
    return (table.name, frozenset(match.items()), priority)


def _require_modify(update_type: int, what: str) -> None:
    if update_type != Update.MODIFY:
        raise InvalidArgument(f"{what} only supports MODIFY updates")


def _index_range(what: str, size: int, index_msg: p4runtime_pb2.Index | None) -> range:
    """The indices a (possibly wildcard) Index selects; spec: negative -> INVALID_ARGUMENT,
    too large -> OUT_OF_RANGE."""
    if index_msg is None:
        return range(size)
    i = index_msg.index
    if i < 0:
        raise InvalidArgument(f"{what}: negative index {i}")
    if i >= size:
        raise OutOfRange(f"{what}: index {i} is beyond its size {size}")
    return range(i, i + 1)


def _index_of(msg: Any) -> p4runtime_pb2.Index | None:
    return msg.index if msg.HasField("index") else None


# ====================================================================== writes


def write_update(p: Pipeline, update: p4runtime_pb2.Update) -> None:
    """Apply one Update; raises a ControlPlaneError when it is refused."""
    if update.type not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise InvalidArgument("update type must be INSERT, MODIFY or DELETE")
    kind = update.entity.WhichOneof("entity")
    if kind is None:
        raise InvalidArgument("the update has no entity")
    handler = _WRITERS.get(kind)
    if handler is None:
        raise Unimplemented(f"{kind} is not supported by p4sim")
    handler(p, update.type, getattr(update.entity, kind))


def _write_table_entry(p: Pipeline, utype: int, te: p4runtime_pb2.TableEntry) -> None:
    table = p.index.table(te.table_id)
    if te.is_const:
        raise InvalidArgument("is_const must be false in a write")
    if te.idle_timeout_ns or te.HasField("time_since_last_hit"):
        raise InvalidArgument(f"table {table.name} does not support idle timeout")
    if te.HasField("meter_config") or te.HasField("meter_counter_data"):
        if table.info.direct_meter is None:
            raise InvalidArgument(f"table {table.name} has no direct meter")
        raise Unimplemented("direct meter configuration is not supported by p4sim")
    if te.HasField("counter_data") and table.direct_counter_id is None:
        raise InvalidArgument(f"table {table.name} has no direct counter")
    if te.is_default_action:
        _write_default_entry(p, utype, table, te)
        return

    sw = p.switch
    if table.info.has_const_entries and (utype != Update.MODIFY or te.HasField("action")):
        raise PermissionDenied(f"table {table.name} has const entries: only direct resources "
                               "of its entries can be modified")
    if utype == Update.INSERT and not table.info.keys:
        raise InvalidArgument(f"table {table.name} has no key: only its default entry can be "
                              "written")
    match = match_from_proto(table, te.match)
    check_priority(table, te.priority)
    key = _entry_key(table, match, te.priority)
    counter = _counter_values(te.counter_data) if te.HasField("counter_data") else None

    if utype == Update.DELETE:  # only the key matters; the action may be anything
        with sw.lock:
            sw.table_delete(table.name, match, te.priority)
        p.entry_meta.pop(key, None)
        return

    call = None
    if te.HasField("action"):
        call = table_action_from_proto(p.index, table, te.action, default=False)
    elif utype == Update.INSERT:
        raise InvalidArgument("an INSERT needs an action")
    with sw.lock:
        if utype == Update.INSERT:
            sw.table_insert(table.name, TableEntry(match, call, te.priority))
            if counter is not None:
                try:
                    sw.direct_counter_write(table.name, match, te.priority, *counter)
                except Exception:  # keep the update all-or-nothing
                    sw.table_delete(table.name, match, te.priority)
                    raise
        else:
            existing = sw.table_get(table.name, match, te.priority)  # NOT_FOUND if absent
            if call is not None:
                if existing.is_const:
                    raise PermissionDenied(f"table {table.name}: the entry is const")
                sw.table_modify(table.name, TableEntry(match, call, te.priority))
            if counter is not None:
                sw.direct_counter_write(table.name, match, te.priority, *counter)
    if call is not None:  # MODIFY without an action leaves the cookie alone too
        _store_meta(p, key, te)


def _write_default_entry(p: Pipeline, utype: int, table: TableMeta,
                         te: p4runtime_pb2.TableEntry) -> None:
    if len(te.match) or te.priority:
        raise InvalidArgument("the default entry has no match and priority 0")
    if utype != Update.MODIFY:
        raise InvalidArgument("the default entry can only be modified (INSERT and DELETE are "
                              "not allowed)")
    if table.info.default_is_const:
        raise PermissionDenied(f"table {table.name}: the default action is const")
    if te.HasField("counter_data"):
        raise Unimplemented("direct counters of default entries are not supported by p4sim")
    sw = p.switch
    key = (table.name, "default")
    if te.HasField("action"):
        call = table_action_from_proto(p.index, table, te.action, default=True)
        with sw.lock:
            sw.table_set_default(table.name, call)
        _store_meta(p, key, te)
    else:  # spec: MODIFY without action resets the default entry and its metadata
        with sw.lock:
            sw.table_reset_default(table.name)
        p.entry_meta.pop(key, None)


def _store_meta(p: Pipeline, key: _EntryKey, te: p4runtime_pb2.TableEntry) -> None:
    if te.controller_metadata or te.metadata:
        p.entry_meta[key] = (te.controller_metadata, te.metadata)
    else:
        p.entry_meta.pop(key, None)


def _counter_values(data: p4runtime_pb2.CounterData) -> tuple[int, int]:
    if data.packet_count < 0 or data.byte_count < 0:
        raise InvalidArgument("counter values must be >= 0")
    return data.packet_count, data.byte_count


def _write_register(p: Pipeline, utype: int, re: p4runtime_pb2.RegisterEntry) -> None:
    _require_modify(utype, "RegisterEntry")
    reg = p.index.register(re.register_id)
    if not re.HasField("data"):
        raise InvalidArgument(f"register {reg.name}: data is missing")
    value = p4data_to_int(re.data, reg.bitwidth, reg.signed, f"register {reg.name}")
    indices = _index_range(f"register {reg.name}", reg.size, _index_of(re))
    raw: int | tuple[int, ...] = value & ((1 << reg.bitwidth) - 1)  # the switch stores the bits
    if reg.fields:
        raw = _split_cell(reg, raw)
    with p.switch.lock:
        for i in indices:
            p.switch.register_write(reg.name, i, raw)


def _join_cell(reg: Any, values: tuple[int, ...]) -> int:
    """A struct register cell as one bitstring: fields concatenated MSB first."""
    v = 0
    for (_, width), x in zip(reg.fields, values):
        v = (v << width) | (x & ((1 << width) - 1))
    return v


def _split_cell(reg: Any, value: int) -> tuple[int, ...]:
    out = []
    shift = reg.bitwidth
    for _, width in reg.fields:
        shift -= width
        out.append((value >> shift) & ((1 << width) - 1))
    return tuple(out)


def _write_counter(p: Pipeline, utype: int, ce: p4runtime_pb2.CounterEntry) -> None:
    _require_modify(utype, "CounterEntry")
    counter = p.index.counter(ce.counter_id)
    indices = _index_range(f"counter {counter.name}", counter.size, _index_of(ce))
    if not ce.HasField("data"):
        return  # spec: the value is not modified
    packets, nbytes = _counter_values(ce.data)
    with p.switch.lock:
        for i in indices:
            p.switch.counter_write(counter.name, i, packets, nbytes)


def _write_direct_counter(p: Pipeline, utype: int, dce: p4runtime_pb2.DirectCounterEntry
                          ) -> None:
    _require_modify(utype, "DirectCounterEntry")
    table, match, priority = _direct_counter_key(p, dce.table_entry)
    if not dce.HasField("data"):
        with p.switch.lock:
            p.switch.table_get(table.name, match, priority)  # still NOT_FOUND if absent
        return
    packets, nbytes = _counter_values(dce.data)
    with p.switch.lock:
        p.switch.direct_counter_write(table.name, match, priority, packets, nbytes)


def _direct_counter_key(p: Pipeline, te: p4runtime_pb2.TableEntry
                        ) -> tuple[TableMeta, dict[str, FieldMatch], int]:
    table = p.index.table(te.table_id)
    if table.direct_counter_id is None:
        raise InvalidArgument(f"table {table.name} has no direct counter")
    if te.is_default_action:
        raise Unimplemented("direct counters of default entries are not supported by p4sim")
    match = match_from_proto(table, te.match)
    check_priority(table, te.priority)
    return table, match, te.priority


def _write_meter(p: Pipeline, utype: int, me: p4runtime_pb2.MeterEntry) -> None:
    _require_modify(utype, "MeterEntry")
    meter = p.index.meter(me.meter_id)
    indices = _index_range(f"meter {meter.name}", meter.size, _index_of(me))
    if me.HasField("counter_data"):
        raise Unimplemented("per-color meter counters are not supported by p4sim")
    if not me.HasField("config"):
        raise Unimplemented("resetting a meter to its default configuration is not supported "
                            "by p4sim; write a configuration instead")
    c = me.config
    if c.eburst:
        raise InvalidArgument("eburst must be unset for a two-rate three-color meter")
    if min(c.cir, c.cburst, c.pir, c.pburst) < 0:
        raise InvalidArgument("meter rates and bursts must be >= 0")
    with p.switch.lock:
        for i in indices:
            p.switch.meter_set_rates(meter.name, i, c.cir, c.cburst, c.pir, c.pburst)
    for i in indices:
        p.meter_configs[(meter.name, i)] = p4runtime_pb2.MeterConfig(
            cir=c.cir, cburst=c.cburst, pir=c.pir, pburst=c.pburst)


def _write_digest(p: Pipeline, utype: int, de: p4runtime_pb2.DigestEntry) -> None:
    p.index.digest(de.digest_id)
    exists = de.digest_id in p.digest_configs
    if utype == Update.INSERT and exists:
        raise AlreadyExists(f"digest {de.digest_id:#x} is already configured")
    if utype != Update.INSERT and not exists:
        raise NotFound(f"digest {de.digest_id:#x} is not configured")
    if utype == Update.DELETE:
        del p.digest_configs[de.digest_id]
    else:
        cfg = p4runtime_pb2.DigestEntry.Config()
        cfg.CopyFrom(de.config)
        p.digest_configs[de.digest_id] = cfg


def _write_pre(p: Pipeline, utype: int, pre: p4runtime_pb2.PacketReplicationEngineEntry
               ) -> None:
    kind = pre.WhichOneof("type")
    engine = p.switch.pre
    if kind == "multicast_group_entry":
        g = pre.multicast_group_entry
        if g.multicast_group_id == 0:
            raise InvalidArgument("multicast_group_id must be > 0 in a write")
        with p.switch.lock:
            if utype == Update.DELETE:
                engine.delete_group(g.multicast_group_id)
                p.group_meta.pop(g.multicast_group_id, None)
                return
            replicas = _replicas(g.replicas)
            op = engine.insert_group if utype == Update.INSERT else engine.modify_group
            op(g.multicast_group_id, replicas)
        if g.metadata:
            p.group_meta[g.multicast_group_id] = g.metadata
        else:
            p.group_meta.pop(g.multicast_group_id, None)
    elif kind == "clone_session_entry":
        s = pre.clone_session_entry
        if s.session_id == 0:
            raise InvalidArgument("session_id must be > 0 in a write")
        with p.switch.lock:
            if utype == Update.DELETE:
                engine.delete_clone_session(s.session_id)
                return
            replicas = _replicas(s.replicas)
            op = (engine.insert_clone_session if utype == Update.INSERT
                  else engine.modify_clone_session)
            op(s.session_id, replicas, s.class_of_service, s.packet_length_bytes)
    else:
        raise InvalidArgument("PacketReplicationEngineEntry has no entry set")


def _replicas(replicas: Any) -> list[tuple[int, int]]:
    out = []
    for r in replicas:
        if len(r.backup_replicas):
            raise Unimplemented("backup replicas are not supported by p4sim")
        if r.WhichOneof("port_kind") == "port":
            port = bytes_to_int(r.port, 32, "replica port")
        else:
            port = r.egress_port
        out.append((port, r.instance))
    return out


# ====================================================================== reads


def read_entity(p: Pipeline, entity: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
    """Answer one read request (possibly a wildcard); the caller holds the switch lock."""
    return list(iter_entity(p, entity))


def iter_entity(p: Pipeline, entity: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
    """``read_entity`` one entity at a time (a wildcard read of a large register takes long:
    the caller can stop when its client has gone); errors are raised while iterating."""
    kind = entity.WhichOneof("entity")
    if kind is None:
        raise InvalidArgument("the read request has no entity set")
    handler = _READERS.get(kind)
    if handler is None:
        raise Unimplemented(f"{kind} is not supported by p4sim")
    for msg in handler(p, getattr(entity, kind)):
        yield Entity(**{kind: msg})


def _read_table_entries(p: Pipeline, te: p4runtime_pb2.TableEntry
                        ) -> Iterator[p4runtime_pb2.TableEntry]:
    tables = list(p.index.tables.values()) if te.table_id == 0 else [p.index.table(te.table_id)]
    want_counter = te.HasField("counter_data")
    action_filter = (te.action.action.action_id if te.HasField("action")
                     and te.action.WhichOneof("type") == "action" else 0)
    sw = p.switch
    for table in tables:
        if te.is_default_action:
            msg = default_entry_to_proto(p.index, table, sw.table_get_default(table.name))
            _apply_meta(msg, p.entry_meta.get((table.name, "default")))
            yield msg
            continue
        if len(te.match) and te.table_id:
            match = match_from_proto(table, te.match)
            try:
                entries = [sw.table_get(table.name, match, te.priority)]
            except NotFound:
                entries = []
        else:
            entries = sw.table_entries(table.name)
        for entry in entries:
            if te.priority and entry.priority != te.priority:
                continue
            if action_filter and p.index.action_ids.get(entry.action.name) != action_filter:
                continue
            meta = p.entry_meta.get(_entry_key(table, entry.match, entry.priority))
            if te.controller_metadata and (meta or (0, b""))[0] != te.controller_metadata:
                continue
            if te.metadata and (meta or (0, b""))[1] != te.metadata:
                continue
            msg = table_entry_to_proto(p.index, table, entry)
            _apply_meta(msg, meta)
            if want_counter and table.direct_counter_id is not None:
                packets, nbytes = sw.direct_counter_read(table.name, entry.match, entry.priority)
                msg.counter_data.packet_count = packets
                msg.counter_data.byte_count = nbytes
            yield msg


def _apply_meta(msg: p4runtime_pb2.TableEntry, meta: tuple[int, bytes] | None) -> None:
    if meta:
        msg.controller_metadata, msg.metadata = meta


def _read_registers(p: Pipeline, re: p4runtime_pb2.RegisterEntry
                    ) -> Iterator[p4runtime_pb2.RegisterEntry]:
    regs = (list(p.index.registers.items()) if re.register_id == 0
            else [(re.register_id, p.index.register(re.register_id))])
    for rid, reg in regs:
        index = _index_of(re) if re.register_id else None
        for i in _index_range(f"register {reg.name}", reg.size, index):
            value = p.switch.register_read(reg.name, i)
            if reg.fields:
                value = _join_cell(reg, value)
            msg = p4runtime_pb2.RegisterEntry(register_id=rid)
            msg.index.index = i
            msg.data.CopyFrom(int_to_p4data(value, reg.bitwidth, reg.signed))
            yield msg


def _read_counters(p: Pipeline, ce: p4runtime_pb2.CounterEntry
                   ) -> Iterator[p4runtime_pb2.CounterEntry]:
    counters = (list(p.index.counters.items()) if ce.counter_id == 0
                else [(ce.counter_id, p.index.counter(ce.counter_id))])
    for cid, counter in counters:
        index = _index_of(ce) if ce.counter_id else None
        for i in _index_range(f"counter {counter.name}", counter.size, index):
            packets, nbytes = p.switch.counter_read(counter.name, i)
            msg = p4runtime_pb2.CounterEntry(counter_id=cid)
            msg.index.index = i
            msg.data.packet_count = packets
            msg.data.byte_count = nbytes
            yield msg


def _read_direct_counters(p: Pipeline, dce: p4runtime_pb2.DirectCounterEntry
                          ) -> Iterator[p4runtime_pb2.DirectCounterEntry]:
    te = dce.table_entry
    if te.table_id and len(te.match):
        table, match, priority = _direct_counter_key(p, te)
        keys = [(table, match, priority)]  # NOT_FOUND below if the entry is absent
    else:
        tables = ([p.index.table(te.table_id)] if te.table_id else
                  [t for t in p.index.tables.values() if t.direct_counter_id is not None])
        keys = []
        for table in tables:
            if table.direct_counter_id is None:
                raise InvalidArgument(f"table {table.name} has no direct counter")
            keys.extend((table, e.match, e.priority)
                        for e in p.switch.table_entries(table.name))
    for table, match, priority in keys:
        packets, nbytes = p.switch.direct_counter_read(table.name, match, priority)
        entry = p.switch.table_get(table.name, match, priority)
        msg = p4runtime_pb2.DirectCounterEntry()
        msg.table_entry.CopyFrom(table_entry_to_proto(p.index, table, entry))
        msg.data.packet_count = packets
        msg.data.byte_count = nbytes
        yield msg


def _read_meters(p: Pipeline, me: p4runtime_pb2.MeterEntry) -> Iterator[p4runtime_pb2.MeterEntry]:
    meters = (list(p.index.meters.items()) if me.meter_id == 0
              else [(me.meter_id, p.index.meter(me.meter_id))])
    if me.HasField("counter_data"):
        raise Unimplemented("per-color meter counters are not supported by p4sim")
    for mid, meter in meters:
        index = _index_of(me) if me.meter_id else None
        for i in _index_range(f"meter {meter.name}", meter.size, index):
            msg = p4runtime_pb2.MeterEntry(meter_id=mid)
            msg.index.index = i
            cfg = p.meter_configs.get((meter.name, i))
            if cfg is not None:
                msg.config.CopyFrom(cfg)
            yield msg


def _read_digests(p: Pipeline, de: p4runtime_pb2.DigestEntry
                  ) -> Iterator[p4runtime_pb2.DigestEntry]:
    if de.digest_id:
        p.index.digest(de.digest_id)
        ids = [de.digest_id] if de.digest_id in p.digest_configs else []
    else:
        ids = list(p.digest_configs)
    for did in ids:
        msg = p4runtime_pb2.DigestEntry(digest_id=did)
        msg.config.CopyFrom(p.digest_configs[did])
        yield msg


def _read_pre(p: Pipeline, pre: p4runtime_pb2.PacketReplicationEngineEntry
              ) -> Iterator[p4runtime_pb2.PacketReplicationEngineEntry]:
    kind = pre.WhichOneof("type")
    engine = p.switch.pre
    if kind == "multicast_group_entry":
        gid = pre.multicast_group_entry.multicast_group_id
        groups = engine.groups() if gid == 0 else {gid: engine.get_group(gid)}
        for group_id, replicas in groups.items():
            msg = p4runtime_pb2.PacketReplicationEngineEntry()
            g = msg.multicast_group_entry
            g.multicast_group_id = group_id
            for port, instance in replicas:
                g.replicas.add(egress_port=port, instance=instance)
            if group_id in p.group_meta:
                g.metadata = p.group_meta[group_id]
            yield msg
    elif kind == "clone_session_entry":
        sid = pre.clone_session_entry.session_id
        sessions = engine.clone_sessions() if sid == 0 else [engine.get_clone_session(sid)]
        for session in sessions:
            msg = p4runtime_pb2.PacketReplicationEngineEntry()
            s = msg.clone_session_entry
            s.session_id = session.session_id
            for port, instance in session.replicas:
                s.replicas.add(egress_port=port, instance=instance)
            s.class_of_service = session.class_of_service
            s.packet_length_bytes = session.packet_length_bytes
            yield msg
    else:
        raise InvalidArgument("PacketReplicationEngineEntry has no entry set")


_WRITERS: dict[str, Callable[[Pipeline, int, Any], None]] = {
    "table_entry": _write_table_entry,
    "register_entry": _write_register,
    "counter_entry": _write_counter,
    "direct_counter_entry": _write_direct_counter,
    "meter_entry": _write_meter,
    "digest_entry": _write_digest,
    "packet_replication_engine_entry": _write_pre,
}
_READERS: dict[str, Callable[[Pipeline, Any], Iterator[Any]]] = {
    "table_entry": _read_table_entries,
    "register_entry": _read_registers,
    "counter_entry": _read_counters,
    "direct_counter_entry": _read_direct_counters,
    "meter_entry": _read_meters,
    "digest_entry": _read_digests,
    "packet_replication_engine_entry": _read_pre,
}
