"""Conversions between P4Runtime protobuf messages and the program model (:mod:`p4control.model`).

Everything here is pure (no switch access) and raises :mod:`p4control.errors` control-plane
errors with the status code the P4Runtime spec prescribes, so that p4sim's server can report
them per update (the controller's client uses the same conversions). Byte strings follow the spec's "Bytestrings" section: any length is accepted as long as
the value fits the P4Info bitwidth (leading zero bytes are fine), the empty string is rejected
with OUT_OF_RANGE, and everything the server sends is in canonical (shortest) form.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (selects the protobuf backend first)
from p4control.errors import InvalidArgument, OutOfRange, PermissionDenied
from p4control.packing import pack_fields
from p4control.model import (ActionCall, ActionInfo, ControllerHeader, CounterInfo,
                             DigestInfo, Exact, FieldMatch, KeyField, Lpm, MeterInfo,
                             Optional, ProgramInfo, Range, RegisterInfo, TableEntry,
                             TableInfo, Ternary)

from p4.config.v1 import p4info_pb2  # noqa: E402
from p4.v1 import p4data_pb2, p4runtime_pb2  # noqa: E402

# ---------------------------------------------------------------- byte strings


def bytes_to_int(data: bytes, bitwidth: int, what: str = "value") -> int:
    """Decode an unsigned P4Runtime byte string that must fit in ``bitwidth`` bits."""
    if not data:
        raise OutOfRange(f"{what}: empty byte string")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise OutOfRange(f"{what}: 0x{data.hex()} does not fit in {bitwidth} bits")
    return value


def int_to_bytes(value: int) -> bytes:
    """Canonical (shortest, at least one byte) encoding of an unsigned value."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def signed_bytes_to_int(data: bytes, bitwidth: int, what: str = "value") -> int:
    """Decode a two's complement byte string that must fit in ``int<bitwidth>``."""
    if not data:
        raise OutOfRange(f"{what}: empty byte string")
    value = int.from_bytes(data, "big", signed=True)
    if not -(1 << (bitwidth - 1)) <= value < (1 << (bitwidth - 1)):
        raise OutOfRange(f"{what}: 0x{data.hex()} does not fit in int<{bitwidth}>")
    return value


def signed_int_to_bytes(value: int) -> bytes:
    bits = (value if value >= 0 else ~value).bit_length() + 1  # + sign bit
    return value.to_bytes(max(1, (bits + 7) // 8), "big", signed=True)


# ---------------------------------------------------------------- P4Info index


@dataclass
class TableMeta:
    id: int
    info: TableInfo
    fields: dict[int, KeyField]                 # match field id -> key
    field_ids: dict[str, int]                   # key name -> match field id
    action_scopes: dict[int, int]               # action id -> p4info ActionRef.Scope
    direct_counter_id: int | None = None

    @property
    def name(self) -> str:
        return self.info.name


@dataclass
class ActionMeta:
    id: int
    info: ActionInfo
    params: dict[int, tuple[str, int]]          # param id -> (name, bitwidth)
    param_ids: dict[str, int]

    @property
    def name(self) -> str:
        return self.info.name


@dataclass
class HeaderMeta:
    """A controller header: metadata (id, name, bitwidth) in header field order."""
    id: int
    info: ControllerHeader
    fields: list[tuple[int, str, int]]


@dataclass
class P4InfoIndex:
    """Id-keyed lookups over a P4Info message and the ProgramInfo it was generated from."""
    p4info: p4info_pb2.P4Info
    tables: dict[int, TableMeta] = field(default_factory=dict)
    actions: dict[int, ActionMeta] = field(default_factory=dict)
    action_ids: dict[str, int] = field(default_factory=dict)
    registers: dict[int, RegisterInfo] = field(default_factory=dict)
    counters: dict[int, CounterInfo] = field(default_factory=dict)
    direct_counters: dict[int, CounterInfo] = field(default_factory=dict)
    meters: dict[int, MeterInfo] = field(default_factory=dict)
    digests: dict[int, DigestInfo] = field(default_factory=dict)
    digest_ids: dict[str, int] = field(default_factory=dict)
    packet_in: HeaderMeta | None = None
    packet_out: HeaderMeta | None = None

    @classmethod
    def build(cls, p4info: p4info_pb2.P4Info, info: ProgramInfo) -> "P4InfoIndex":
        index = cls(p4info)
        for a in p4info.actions:
            ai = info.actions[a.preamble.name]
            index.actions[a.preamble.id] = ActionMeta(
                a.preamble.id, ai, {p.id: (p.name, p.bitwidth) for p in a.params},
                {p.name: p.id for p in a.params})
            index.action_ids[ai.name] = a.preamble.id
        direct_counter_ids = {c.preamble.name: c.preamble.id for c in p4info.direct_counters}
        for t in p4info.tables:
            ti = info.tables[t.preamble.name]
            keys = {k.name: k for k in ti.keys}
            index.tables[t.preamble.id] = TableMeta(
                t.preamble.id, ti, {m.id: keys[m.name] for m in t.match_fields},
                {m.name: m.id for m in t.match_fields},
                {r.id: r.scope for r in t.action_refs},
                direct_counter_ids.get(ti.direct_counter) if ti.direct_counter else None)
        for r in p4info.registers:
            index.registers[r.preamble.id] = info.registers[r.preamble.name]
        for c in p4info.counters:
            index.counters[c.preamble.id] = info.counters[c.preamble.name]
        for c in p4info.direct_counters:
            index.direct_counters[c.preamble.id] = info.counters[c.preamble.name]
        for m in p4info.meters:
            index.meters[m.preamble.id] = info.meters[m.preamble.name]
        for d in p4info.digests:
            index.digests[d.preamble.id] = info.digests[d.preamble.name]
            index.digest_ids[d.preamble.name] = d.preamble.id
        for cpm in p4info.controller_packet_metadata:
            header = info.controller_headers.get(cpm.preamble.name)
            if header is None:
                continue
            meta = HeaderMeta(cpm.preamble.id, header,
                              [(m.id, m.name, m.bitwidth) for m in cpm.metadata])
            if cpm.preamble.name == "packet_in":
                index.packet_in = meta
            elif cpm.preamble.name == "packet_out":
                index.packet_out = meta
        return index

    # lookups raising the spec's INVALID_ARGUMENT for ids that are not in the P4Info
    def table(self, table_id: int) -> TableMeta:
        return _lookup(self.tables, table_id, "table")

    def action(self, action_id: int) -> ActionMeta:
        return _lookup(self.actions, action_id, "action")

    def register(self, register_id: int) -> RegisterInfo:
        return _lookup(self.registers, register_id, "register")

    def counter(self, counter_id: int) -> CounterInfo:
        return _lookup(self.counters, counter_id, "counter")

    def meter(self, meter_id: int) -> MeterInfo:
        return _lookup(self.meters, meter_id, "meter")

    def digest(self, digest_id: int) -> DigestInfo:
        return _lookup(self.digests, digest_id, "digest")


def _lookup(mapping: dict, key: int, what: str):
    try:
        return mapping[key]
    except KeyError:
        raise InvalidArgument(f"unknown {what} id {key:#x}") from None


# ---------------------------------------------------------------- match keys


def match_from_proto(table: TableMeta, matches: Iterable[p4runtime_pb2.FieldMatch]
                     ) -> dict[str, FieldMatch]:
    """Validate a P4Runtime match key against the table and convert it to the model."""
    result: dict[str, FieldMatch] = {}
    seen: set[int] = set()
    for m in matches:
        key = table.fields.get(m.field_id)
        if key is None:
            raise InvalidArgument(f"table {table.name}: unknown match field id {m.field_id}")
        if m.field_id in seen:
            raise InvalidArgument(f"table {table.name}: match field {key.name} given twice")
        seen.add(m.field_id)
        kind = m.WhichOneof("field_match_type")
        if kind != key.match_kind:
            raise InvalidArgument(f"table {table.name}: field {key.name} is {key.match_kind}, "
                                  f"got a {kind or 'empty'} match")
        result[key.name] = _field_match(key, m)
    for key in table.info.keys:
        if key.match_kind == "exact" and key.name not in result:
            raise InvalidArgument(f"table {table.name}: exact field {key.name} is missing")
    return result


def _field_match(key: KeyField, m: p4runtime_pb2.FieldMatch) -> FieldMatch:
    w = key.bitwidth
    what = f"field {key.name}"
    if key.match_kind == "exact":
        return Exact(bytes_to_int(m.exact.value, w, what))
    if key.match_kind == "optional":
        return Optional(bytes_to_int(m.optional.value, w, what))
    if key.match_kind == "ternary":
        value = bytes_to_int(m.ternary.value, w, what)
        mask = bytes_to_int(m.ternary.mask, w, what + " mask")
        if mask == 0:
            raise InvalidArgument(f"{what}: a don't-care ternary match must be omitted")
        if value & ~mask:
            raise InvalidArgument(f"{what}: value has bits outside the mask")
        return Ternary(value, mask)
    if key.match_kind == "lpm":
        value = bytes_to_int(m.lpm.value, w, what)
        plen = m.lpm.prefix_len
        if plen <= 0:
            raise InvalidArgument(f"{what}: a don't-care LPM match must be omitted")
        if plen > w:
            raise InvalidArgument(f"{what}: prefix length {plen} exceeds {w} bits")
        if value & ((1 << (w - plen)) - 1):
            raise InvalidArgument(f"{what}: value has bits set beyond the prefix")
        return Lpm(value, plen)
    if key.match_kind == "range":
        low = bytes_to_int(m.range.low, w, what + " low")
        high = bytes_to_int(m.range.high, w, what + " high")
        if low > high:
            raise InvalidArgument(f"{what}: range low bound exceeds high bound")
        if low == 0 and high == (1 << w) - 1:
            raise InvalidArgument(f"{what}: a don't-care range match must be omitted")
        return Range(low, high)
    raise InvalidArgument(f"{what}: unsupported match kind {key.match_kind}")


def match_to_proto(table: TableMeta, match: dict[str, FieldMatch]
                   ) -> list[p4runtime_pb2.FieldMatch]:
    """Canonical P4Runtime match key (wildcards omitted, fields in id order)."""
    out = []
    for name, fm in match.items():
        m = p4runtime_pb2.FieldMatch(field_id=table.field_ids[name])
        if isinstance(fm, Exact):
            m.exact.value = int_to_bytes(fm.value)
        elif isinstance(fm, Optional):
            m.optional.value = int_to_bytes(fm.value)
        elif isinstance(fm, Ternary):
            if fm.mask == 0:
                continue
            m.ternary.value = int_to_bytes(fm.value)
            m.ternary.mask = int_to_bytes(fm.mask)
        elif isinstance(fm, Lpm):
            if fm.prefix_len == 0:
                continue
            m.lpm.value = int_to_bytes(fm.value)
            m.lpm.prefix_len = fm.prefix_len
        elif isinstance(fm, Range):
            width = table.fields[m.field_id].bitwidth
            if fm.low == 0 and fm.high == (1 << width) - 1:
                continue
            m.range.low = int_to_bytes(fm.low)
            m.range.high = int_to_bytes(fm.high)
        out.append(m)
    out.sort(key=lambda m: m.field_id)
    return out


def check_priority(table: TableMeta, priority: int) -> None:
    if table.info.needs_priority:
        if priority <= 0:
            raise InvalidArgument(f"table {table.name}: entries need a priority > 0")
    elif priority != 0:
        raise InvalidArgument(f"table {table.name}: priority must be 0 (no ternary, range or "
                              "optional field)")


# ---------------------------------------------------------------- actions

SCOPE_TABLE_ONLY = p4info_pb2.ActionRef.TABLE_ONLY
SCOPE_DEFAULT_ONLY = p4info_pb2.ActionRef.DEFAULT_ONLY


def table_action_from_proto(index: P4InfoIndex, table: TableMeta,
                            action: p4runtime_pb2.TableAction, *, default: bool) -> ActionCall:
    """Validate a TableAction for an entry (or the default entry when ``default``)."""
    if action.WhichOneof("type") != "action":
        raise InvalidArgument(f"table {table.name} has no action profile: only direct actions "
                              "are accepted")
    scope = table.action_scopes.get(action.action.action_id)
    if scope is None:
        index.action(action.action.action_id)  # unknown id -> its own message
        raise InvalidArgument(f"action {action.action.action_id:#x} is not an action of "
                              f"table {table.name}")
    if default and scope == SCOPE_TABLE_ONLY:
        raise PermissionDenied(f"table {table.name}: action is @tableonly")
    if not default and scope == SCOPE_DEFAULT_ONLY:
        raise PermissionDenied(f"table {table.name}: action is @defaultonly")
    return action_from_proto(index, action.action, table)


def action_from_proto(index: P4InfoIndex, action: p4runtime_pb2.Action,
                      table: TableMeta | None = None) -> ActionCall:
    """Validate an Action message. The spec's TableEntry section asks for INVALID_ARGUMENT when
    a parameter is missing, unknown, given twice or not a valid bytestring for its bitwidth
    (more specific than the Bytestrings section's OUT_OF_RANGE, so it wins here)."""
    meta = index.action(action.action_id)
    where = f"table {table.name}: action {meta.name}" if table else f"action {meta.name}"
    args: dict[str, int] = {}
    for p in action.params:
        spec = meta.params.get(p.param_id)
        if spec is None:
            raise InvalidArgument(f"{where}: unknown parameter id {p.param_id} (ids: "
                                  f"{_param_list(meta)})")
        name, width = spec
        if name in args:
            raise InvalidArgument(f"{where}: parameter {name} (id {p.param_id}) given twice")
        try:
            args[name] = bytes_to_int(p.value, width, f"{where}: parameter {name}")
        except OutOfRange as e:
            raise InvalidArgument(str(e)) from None
    missing = [f"{name} (id {pid})" for pid, (name, _) in sorted(meta.params.items())
               if name not in args]
    if missing:
        raise InvalidArgument(f"{where}: missing parameter(s) {', '.join(missing)}")
    return ActionCall(meta.name, args)


def _param_list(meta: ActionMeta) -> str:
    return ", ".join(f"{pid} {name}" for pid, (name, _) in sorted(meta.params.items())) or "none"


def action_to_proto(index: P4InfoIndex, call: ActionCall,
                    table: TableMeta | None = None) -> p4runtime_pb2.Action:
    """Encode ``call``; the same checks as :func:`action_from_proto`, so a client built on this
    never sends an entry with a parameter left out (it used to become 0) or one dropped."""
    where = f"table {table.name}: " if table else ""
    action_id = index.action_ids.get(call.name)
    if action_id is None:
        raise InvalidArgument(f"{where}action {call.name} is not in the P4Info")
    if table is not None and action_id not in table.action_scopes:
        raise InvalidArgument(f"{where}action {call.name} is not an action of the table")
    meta = index.actions[action_id]
    known = {name: (pid, width) for pid, (name, width) in meta.params.items()}
    unknown = [n for n in call.args if n not in known]
    if unknown:
        raise InvalidArgument(f"{where}action {call.name}: unknown parameter(s) "
                              f"{', '.join(unknown)} (parameters: {_param_list(meta)})")
    missing = [n for n in known if n not in call.args]
    if missing:
        raise InvalidArgument(f"{where}action {call.name}: missing parameter(s) "
                              f"{', '.join(missing)}")
    msg = p4runtime_pb2.Action(action_id=action_id)
    for pid in sorted(meta.params):
        name, width = meta.params[pid]
        value = call.args[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value >> width:
            raise InvalidArgument(f"{where}action {call.name}: parameter {name} = {value!r} "
                                  f"does not fit in bit<{width}>")
        msg.params.add(param_id=pid, value=int_to_bytes(value))
    return msg


def table_entry_to_proto(index: P4InfoIndex, table: TableMeta, entry: TableEntry
                         ) -> p4runtime_pb2.TableEntry:
    msg = p4runtime_pb2.TableEntry(table_id=table.id, priority=entry.priority)
    msg.match.extend(match_to_proto(table, entry.match))
    msg.action.action.CopyFrom(action_to_proto(index, entry.action, table))
    if entry.is_const or table.info.has_const_entries:
        msg.is_const = True
    return msg


def default_entry_to_proto(index: P4InfoIndex, table: TableMeta, call: ActionCall
                           ) -> p4runtime_pb2.TableEntry:
    msg = p4runtime_pb2.TableEntry(table_id=table.id, is_default_action=True)
    msg.action.action.CopyFrom(action_to_proto(index, call, table))
    return msg


# ---------------------------------------------------------------- P4Data


def p4data_to_int(data: p4data_pb2.P4Data, bitwidth: int, signed: bool, what: str) -> int:
    if data.WhichOneof("data") != "bitstring":
        raise InvalidArgument(f"{what}: expected a bitstring P4Data")
    if signed:
        return signed_bytes_to_int(data.bitstring, bitwidth, what)
    return bytes_to_int(data.bitstring, bitwidth, what)


def int_to_p4data(value: int, bitwidth: int, signed: bool) -> p4data_pb2.P4Data:
    if signed:
        if value >= 1 << (bitwidth - 1):  # stored as raw bits: reinterpret as negative
            value -= 1 << bitwidth
        return p4data_pb2.P4Data(bitstring=signed_int_to_bytes(value))
    return p4data_pb2.P4Data(bitstring=int_to_bytes(value & ((1 << bitwidth) - 1)))


def digest_struct_to_p4data(digest: DigestInfo, values: dict[str, int]) -> p4data_pb2.P4Data:
    data = p4data_pb2.P4Data()
    for f in digest.fields:
        value = values.get(f.name, 0) & ((1 << f.bitwidth) - 1)
        data.struct.members.add(bitstring=int_to_bytes(value))
    return data


# ---------------------------------------------------------------- controller headers


def pack_header(fields: Sequence[tuple[int, int]]) -> bytes:
    """Concatenate (bitwidth, value) fields big-endian; pad the last byte with zeros."""
    return pack_fields((value, width) for width, value in fields)


def unpack_header(widths: Sequence[int], data: bytes) -> tuple[list[int], bytes]:
    """Split ``data`` into the header's field values and the remaining payload."""
    total = sum(widths)
    nbytes = (total + 7) // 8
    if len(data) < nbytes:
        raise InvalidArgument(f"packet shorter ({len(data)} bytes) than its {nbytes}-byte "
                              "controller header")
    acc = int.from_bytes(data[:nbytes], "big") >> (nbytes * 8 - total)
    values = []
    for width in reversed(widths):
        values.append(acc & ((1 << width) - 1))
        acc >>= width
    values.reverse()
    return values, data[nbytes:]


def packet_out_bytes(header: HeaderMeta | None, packet: p4runtime_pb2.PacketOut) -> bytes:
    """The bytes to inject on the CPU port: the packet_out header then the payload."""
    if header is None:
        if len(packet.metadata):
            raise InvalidArgument("the program has no packet_out controller header")
        return packet.payload
    given: dict[int, bytes] = {}
    for md in packet.metadata:
        if md.metadata_id in given:
            raise InvalidArgument(f"packet_out metadata id {md.metadata_id} given twice")
        given[md.metadata_id] = md.value
    known = {mid for mid, _, _ in header.fields}
    unknown = set(given) - known
    if unknown:
        raise InvalidArgument(f"unknown packet_out metadata id(s) {sorted(unknown)}")
    fields = []
    for mid, name, width in header.fields:
        if mid not in given:
            raise InvalidArgument(f"packet_out metadata {name} (id {mid}) is missing")
        fields.append((width, bytes_to_int(given[mid], width, f"packet_out metadata {name}")))
    return pack_header(fields) + packet.payload


def packet_in_message(header: HeaderMeta | None, data: bytes) -> p4runtime_pb2.PacketIn:
    """Parse the packet_in header off a CPU-port packet into a PacketIn message."""
    if header is None:
        return p4runtime_pb2.PacketIn(payload=data)
    values, payload = unpack_header([w for _, _, w in header.fields], data)
    msg = p4runtime_pb2.PacketIn(payload=payload)
    for (mid, _, _), value in zip(header.fields, values):
        msg.metadata.add(metadata_id=mid, value=int_to_bytes(value))
    return msg
