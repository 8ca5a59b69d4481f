"""P4Info as a client reads it: files in the formats p4c and p4sim write, and the program they
describe.

``p4c --p4runtime-files X.txt`` and ``python -m p4sim p4info`` (``--format text|binary|json``)
write a P4Info; :func:`load_p4info` reads any of those, :func:`format_p4info` writes them, and
:func:`program_info_from_p4info` gives the :class:`~p4control.model.ProgramInfo` a P4Info
describes (what a controller needs to name tables, keys and actions without the P4 source).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (selects the protobuf backend first)
from p4control.model import (ActionCall, ActionInfo, ActionParam, ActionRef, ControllerHeader,
                             CounterInfo, DigestInfo, KeyField, MeterInfo, ProgramInfo,
                             RegisterInfo, StructField, TableInfo, ValueSetInfo)

from p4.config.v1 import p4info_pb2  # noqa: E402  (after the backend choice)


class P4InfoFileError(ValueError):
    """A file that is not a P4Info in any of the formats p4c and p4sim write."""


def map_value(container, key: str):
    """``container[key]`` of a protobuf map field, created if needed. The old generated code of
    the ``p4runtime`` package loses the map option under the pure-Python backend, so its maps
    show up as repeated ``{key, value}`` entries (the wire format is the same)."""
    if hasattr(container, "get_or_create"):
        return container[key]
    for entry in container:
        if entry.key == key:
            return entry.value
    entry = container.add()
    entry.key = key
    return entry.value


_P4INFO_CLASS = None


def p4info_message_class() -> type:
    """A P4Info class whose map fields (``type_info.structs`` ...) are real maps.

    The ``p4runtime`` package's old generated code, loaded by protobuf 6's pure-Python backend,
    builds those fields as plain repeated ``{key, value}`` entries while the descriptor still
    says "map", which breaks text and JSON printing. Rebuilding the classes in a private
    descriptor pool from the same serialized .proto files gives well-formed ones; the wire
    format is identical, so messages convert with a serialize/parse round trip.
    """
    global _P4INFO_CLASS
    if _P4INFO_CLASS is None:
        from google.protobuf import descriptor_pool, message_factory

        pool = descriptor_pool.DescriptorPool()
        added: set[str] = set()

        def add(fd) -> None:
            if fd.name in added:
                return
            for dep in fd.dependencies:
                add(dep)
            pool.AddSerializedFile(fd.serialized_pb)
            added.add(fd.name)

        add(p4info_pb2.DESCRIPTOR)
        _P4INFO_CLASS = message_factory.GetMessageClass(
            pool.FindMessageTypeByName("p4.config.v1.P4Info"))
    return _P4INFO_CLASS


def format_p4info(p4info: p4info_pb2.P4Info, fmt: str) -> bytes:
    """Serialize ``p4info`` as ``text`` (protobuf text format), ``binary`` or ``json``."""
    from google.protobuf import json_format, text_format

    if fmt == "binary":
        return p4info.SerializeToString()
    printable = p4info_message_class().FromString(p4info.SerializeToString())
    if fmt == "json":
        return (json_format.MessageToJson(printable) + "\n").encode()
    if fmt == "text":
        return text_format.MessageToString(printable).encode()
    raise ValueError(f"unknown P4Info format {fmt!r}")


def load_p4info(path: str | Path) -> p4info_pb2.P4Info:
    """Read a P4Info file: protobuf text format (p4c's ``--p4runtime-files X.txt``), JSON (a
    ``.json`` name) or binary. Raises :class:`P4InfoFileError` for anything else."""
    from google.protobuf import json_format, text_format

    data = Path(path).read_bytes()
    printable = p4info_message_class()()
    p4info = p4info_pb2.P4Info()
    if str(path).endswith(".json"):
        try:
            json_format.Parse(data.decode("utf-8"), printable)
        except (json_format.ParseError, UnicodeDecodeError) as e:
            raise P4InfoFileError(f"{path}: not a P4Info in JSON: {e}") from None
        p4info.ParseFromString(printable.SerializeToString())
    else:
        try:
            text_format.Parse(data.decode("utf-8"), printable)
            p4info.ParseFromString(printable.SerializeToString())
        except (text_format.ParseError, UnicodeDecodeError):
            try:
                p4info.ParseFromString(data)
            except Exception:  # protobuf's DecodeError (its module path varies with the backend)
                raise P4InfoFileError(f"{path}: not a P4Info (text, binary or JSON)") from None
    if not (p4info.tables or p4info.actions or p4info.pkg_info.arch):   # empty: not a program's
        raise P4InfoFileError(f"{path}: not a P4Info (text, binary or JSON)")
    return p4info

_MATCH_KINDS = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}
_COUNTER_UNITS = {p4info_pb2.CounterSpec.PACKETS: "packets", p4info_pb2.CounterSpec.BYTES: "bytes",
                  p4info_pb2.CounterSpec.BOTH: "packets_and_bytes"}
_METER_UNITS = {p4info_pb2.MeterSpec.PACKETS: "packets", p4info_pb2.MeterSpec.BYTES: "bytes"}
_SCOPE_ANNOTATIONS = {"@tableonly", "@defaultonly"}   # P4Info repeats the scope as annotations


def _struct_fields(p4info: p4info_pb2.P4Info, name: str) -> list[StructField]:
    structs = p4info.type_info.structs
    if hasattr(structs, "get_or_create"):
        struct = structs[name] if name in structs else None
    else:  # the old generated code's repeated {key, value} entries (see map_value)
        struct = next((e.value for e in structs if e.key == name), None)
    if struct is None:
        return []
    return [StructField(m.name, _bitwidth(m.type_spec)[0]) for m in struct.members]


def _bitwidth(spec: Any) -> tuple[int, bool]:
    """(width, signed) of a ``bit<W>`` / ``int<W>`` type spec; (0, False) for anything else."""
    if spec.bitstring.HasField("int"):
        return spec.bitstring.int.bitwidth, True
    return spec.bitstring.bit.bitwidth, False


def program_info_from_p4info(p4info: p4info_pb2.P4Info) -> ProgramInfo:
    """The control-plane view a P4Info describes, under its (fully qualified) names.

    A P4Info holds less than the program: a table's default action is the const or initial one
    it records (``NoAction`` when it records none), const entries are not listed, and a
    register of a struct type has the struct's total width."""
    arch = p4info.pkg_info.arch if p4info.pkg_info.arch in ("v1model", "tna") else "v1model"
    info = ProgramInfo(arch=arch)  # type: ignore[arg-type]
    action_names = {a.preamble.id: a.preamble.name for a in p4info.actions}
    for a in p4info.actions:
        info.actions[a.preamble.name] = ActionInfo(
            a.preamble.name, [ActionParam(p.name, p.bitwidth) for p in a.params],
            list(a.preamble.annotations))
    table_names = {t.preamble.id: t.preamble.name for t in p4info.tables}
    direct = {c.preamble.id: c.preamble.name for c in p4info.direct_counters}
    direct.update({m.preamble.id: m.preamble.name for m in p4info.direct_meters})
    for t in p4info.tables:
        keys = [KeyField(m.name, m.bitwidth,
                         _MATCH_KINDS.get(m.match_type, m.other_match_type),  # type: ignore[arg-type]
                         list(m.annotations)) for m in t.match_fields]
        refs = [ActionRef(action_names[r.id], table_only=r.scope == p4info_pb2.ActionRef.TABLE_ONLY,
                          default_only=r.scope == p4info_pb2.ActionRef.DEFAULT_ONLY,
                          annotations=[n for n in r.annotations if n not in _SCOPE_ANNOTATIONS])
                for r in t.action_refs]
        default = ActionCall("NoAction")
        if t.HasField("initial_default_action"):
            d = t.initial_default_action
            params = {p.id: p.name for p in next(
                a.params for a in p4info.actions if a.preamble.id == d.action_id)}
            default = ActionCall(action_names[d.action_id],
                                 {params[arg.param_id]: int.from_bytes(arg.value, "big")
                                  for arg in d.arguments})
        elif t.const_default_action_id:
            default = ActionCall(action_names[t.const_default_action_id])
        resources = [direct[i] for i in t.direct_resource_ids if i in direct]
        counters = {c.preamble.name for c in p4info.direct_counters}
        info.tables[t.preamble.name] = TableInfo(
            t.preamble.name, keys, refs, default,
            default_is_const=bool(t.const_default_action_id),
            has_const_entries=t.is_const_table, size=t.size,
            direct_counter=next((r for r in resources if r in counters), None),
            direct_meter=next((r for r in resources if r not in counters), None),
            annotations=list(t.preamble.annotations))
    for r in p4info.registers:
        width, signed = _bitwidth(r.type_spec)
        fields: list[tuple[str, int]] = []
        struct_name = ""
        if r.type_spec.HasField("struct"):
            struct_name = r.type_spec.struct.name
            fields = [(f.name, f.bitwidth) for f in _struct_fields(p4info, struct_name)]
            width = sum(w for _, w in fields)
        info.registers[r.preamble.name] = RegisterInfo(r.preamble.name, width, r.size, signed,
                                                       list(r.preamble.annotations), fields, struct_name)
    # indexed (size > 0) and direct (attached to a table, size 0) counters and meters
    for kind, units, target, cls in ((p4info.counters, _COUNTER_UNITS, info.counters, CounterInfo),
                                     (p4info.direct_counters, _COUNTER_UNITS, info.counters, CounterInfo),
                                     (p4info.meters, _METER_UNITS, info.meters, MeterInfo),
                                     (p4info.direct_meters, _METER_UNITS, info.meters, MeterInfo)):
        for c in kind:
            direct = c.DESCRIPTOR.fields_by_name.get("direct_table_id") is not None
            target[c.preamble.name] = cls(c.preamble.name, 0 if direct else c.size,
                                          units[c.spec.unit],
                                          table_names.get(c.direct_table_id) if direct else None,
                                          list(c.preamble.annotations))
    for d in p4info.digests:
        info.digests[d.preamble.name] = DigestInfo(
            d.preamble.name, _struct_fields(p4info, d.type_spec.struct.name))
    for h in p4info.controller_packet_metadata:
        info.controller_headers[h.preamble.name] = ControllerHeader(
            h.preamble.name, h.preamble.name, [StructField(m.name, m.bitwidth) for m in h.metadata])
    for v in p4info.value_sets:
        info.value_sets[v.preamble.name] = ValueSetInfo(
            v.preamble.name, v.size, [StructField(m.name, m.bitwidth) for m in v.match])
    return info


__all__ = ["load_p4info", "format_p4info", "program_info_from_p4info", "p4info_message_class",
           "map_value", "P4InfoFileError"]
