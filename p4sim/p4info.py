"""P4Info generation from a :class:`~p4control.model.ProgramInfo` (reading P4Info files, and the
ProgramInfo a P4Info describes: :mod:`p4control.p4runtime.p4info`).

Ids follow p4c's control-plane id assignment (p4lang/p4c ``control-plane/p4RuntimeSymbolTable``)
so that a controller built against ``p4c --p4runtime-files`` output sees the same numbers:

* every object has a 32-bit id ``prefix << 24 | low24``; the 8-bit prefix is the resource type
  of ``p4.config.v1.P4Ids.Prefix`` (ACTION 0x01, TABLE 0x02, VALUE_SET 0x03,
  CONTROLLER_HEADER 0x04, COUNTER 0x12, DIRECT_COUNTER 0x13, METER 0x14, DIRECT_METER 0x15,
  REGISTER 0x16, DIGEST 0x17);
* an ``@id(N)`` annotation wins; N without a prefix gets the type prefix OR-ed in, N with a
  different prefix is an error;
* the other names of a type are taken in byte-wise sorted order (p4c keeps them in a
  ``std::map<cstring>``); each name is hashed with Jenkins one-at-a-time; on collision with an
  id already assigned the *hash value* is incremented (linear probing, 32-bit wrap-around) and
  the id rebuilt from its low 24 bits;
* match fields, action parameters and controller-header fields are numbered 1..n in
  declaration order (an ``@id`` on a key element is honoured, as p4c's FieldIdAllocator does).

Aliases are the shortest unique dot-separated suffix among all symbol names, as in p4c.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from p4control.model import ProgramInfo, StructField
from p4control.p4runtime.p4info import format_p4info, map_value, p4info_message_class
from p4sim.errors import P4SIM_ERRORS, CompileError

from p4.config.v1 import p4info_pb2, p4types_pb2  # noqa: E402  (after the backend choice: p4control.p4runtime)

Prefix = p4info_pb2.P4Ids

# Resource types in p4c's symbol-table order; the order only matters for @id collisions.
ACTION = Prefix.ACTION
TABLE = Prefix.TABLE
VALUE_SET = Prefix.VALUE_SET
CONTROLLER_HEADER = Prefix.CONTROLLER_HEADER
COUNTER = Prefix.COUNTER
DIRECT_COUNTER = Prefix.DIRECT_COUNTER
METER = Prefix.METER
DIRECT_METER = Prefix.DIRECT_METER
REGISTER = Prefix.REGISTER
DIGEST = Prefix.DIGEST

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "lpm": p4info_pb2.MatchField.LPM,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_COUNTER_UNITS = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}
_METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}

# Annotations p4c consumes itself instead of copying them into the P4Info.
_CONSUMED_ANNOTATIONS = {"name", "id", "brief", "description", "hidden"}
_ANNOTATION_RE = re.compile(r"^\s*@?\s*([A-Za-z_][A-Za-z0-9_]*)\s*(.*)$", re.S)


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash on 32-bit unsigned arithmetic (p4c's name hash)."""
    h = 0
    for byte in data:
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


# ---------------------------------------------------------------- annotations


def _annotation_name(text: str) -> tuple[str, str]:
    m = _ANNOTATION_RE.match(text)
    if not m:
        return "", text
    return m.group(1), m.group(2).strip()


def _normalize_annotation(text: str) -> str:
    text = text.strip()
    return text if text.startswith("@") else "@" + text


def _has_annotation(annotations: Iterable[str], name: str) -> bool:
    return any(_annotation_name(a)[0] == name for a in annotations)


def explicit_id(annotations: Iterable[str]) -> int | None:
    """The value of an ``@id(N)`` annotation, or None."""
    for a in annotations:
        name, body = _annotation_name(a)
        if name != "id":
            continue
        m = re.fullmatch(r"\(\s*(0[xX][0-9a-fA-F_]+|[0-9_]+)\s*\)", body)
        if not m:
            raise CompileError(f"@id annotation must have one unsigned integer argument: {a}")
        return int(m.group(1).replace("_", ""), 0)
    return None


def _passthrough_annotations(annotations: Iterable[str]) -> list[str]:
    return [_normalize_annotation(a) for a in annotations
            if _annotation_name(a)[0] not in _CONSUMED_ANNOTATIONS]


# ---------------------------------------------------------------- id assignment


@dataclass
class _Symbol:
    kind: int
    name: str
    explicit: int | None


class SymbolTable:
    """p4c's P4RuntimeSymbolTable: collects symbols, then assigns ids type by type."""

    def __init__(self) -> None:
        self._symbols: dict[int, dict[str, _Symbol]] = {}
        self._ids: dict[tuple[int, str], int] = {}
        self._assigned: set[int] = set()

    def add(self, kind: int, name: str, annotations: Iterable[str] = ()) -> None:
        table = self._symbols.setdefault(kind, {})
        if name in table:
            return  # duplicates are fine (e.g. an action shared by several tables)
        user_id = explicit_id(annotations)
        if user_id is not None:
            if user_id > 0xFFFFFFFF:
                raise CompileError(f"{name}: @id {user_id:#x} does not fit in 32 bits")
            prefix_mask = 0xFF << 24
            if user_id & prefix_mask and user_id & prefix_mask != kind << 24:
                raise CompileError(f"{name}: @id {user_id:#010x} has the wrong 8-bit prefix")
            user_id |= kind << 24
            if user_id in self._assigned:
                raise CompileError(f"@id {user_id:#010x} is assigned to multiple declarations")
            self._assigned.add(user_id)
            self._ids[(kind, name)] = user_id
        table[name] = _Symbol(kind, name, user_id)

    def compute_ids(self) -> None:
        for kind in sorted(self._symbols):
            pending = sorted((s.name for s in self._symbols[kind].values() if s.explicit is None),
                             key=lambda n: n.encode())
            for name in pending:
                start = value = jenkins_one_at_a_time(name.encode())
                while True:
                    candidate = (kind << 24) | (value & 0xFFFFFF)
                    if candidate not in self._assigned:
                        break
                    value = (value + 1) & 0xFFFFFFFF
                    if value == start:
                        raise CompileError(f"no P4Runtime id left for {name}")
                self._assigned.add(candidate)
                self._ids[(kind, name)] = candidate

    def id(self, kind: int, name: str) -> int:
        return self._ids[(kind, name)]

    def names(self) -> list[str]:
        return [name for table in self._symbols.values() for name in table]


def _alias_table(names: Iterable[str]) -> dict[str, str]:
    """Shortest unique dot-component suffix of every name (p4c's P4SymbolSuffixSet)."""
    unique = list(dict.fromkeys(names))
    counts: dict[tuple[str, ...], int] = {}
    for name in unique:
        parts = tuple(name.split("."))
        for k in range(1, len(parts) + 1):
            counts[parts[-k:]] = counts.get(parts[-k:], 0) + 1
    aliases = {}
    for name in unique:
        parts = tuple(name.split("."))
        k = 1
        while k < len(parts) and counts[parts[-k:]] >= 2:
            k += 1
        aliases[name] = ".".join(parts[-k:])
    return aliases


def _field_ids(explicit: Sequence[int | None]) -> list[int]:
    """p4c's FieldIdAllocator: user @ids first, the rest numbered from 1 skipping used ids.

    The running index also advances past fields that carry an explicit id, exactly as p4c does.
    """
    used = {i for i in explicit if i is not None}
    if len(used) != len([i for i in explicit if i is not None]) or 0 in used:
        raise CompileError("field @id values must be unique and non-zero")
    ids: list[int] = []
    index = 1
    for user_id in explicit:
        if user_id is not None:
            ids.append(user_id)
            index += 1
            continue
        while index in used:
            index += 1
        used.add(index)
        ids.append(index)
    return ids


# ---------------------------------------------------------------- P4Info construction


def _is_hidden(obj: object) -> bool:
    return _has_annotation(getattr(obj, "annotations", ()), "hidden")


def _canonical_bytes(value: int) -> bytes:
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _bit_type_spec(bitwidth: int, signed: bool = False) -> p4types_pb2.P4DataTypeSpec:
    spec = p4types_pb2.P4DataTypeSpec()
    if signed:
        spec.bitstring.int.bitwidth = bitwidth
    else:
        spec.bitstring.bit.bitwidth = bitwidth
    return spec


def _struct_spec(type_info: p4types_pb2.P4TypeInfo, name: str,
                 fields: Sequence[StructField]) -> p4types_pb2.P4DataTypeSpec:
    struct = map_value(type_info.structs, name)
    del struct.members[:]
    for f in fields:
        member = struct.members.add()
        member.name = f.name
        member.type_spec.CopyFrom(_bit_type_spec(f.bitwidth))
    spec = p4types_pb2.P4DataTypeSpec()
    spec.struct.name = name
    return spec


def exposed_actions(info: ProgramInfo) -> dict[str, bool]:
    """The actions p4c's P4Info lists, each mapped to whether it keeps its parameters.

    p4c serializes the actions that survive its front end (``frontends/p4/frontend.cpp``):
    ``InlineActions`` inlines every action called from another action's body,
    ``LocalizeAllActions`` gives each user (a table, or one call in an apply block) its own
    copy, ``RemoveActionParameters`` turns the directional parameters of a table's copy, and
    *all* parameters of a directly called copy, into locals, and ``RemoveAllUnusedDeclarations``
    drops what nothing references any more. The serializer then keeps the first copy of each
    control-plane name (``control-plane/p4RuntimeSerializer.cpp``, ``addAction``); a control's
    tables come before its apply block, so a table's copy wins over a direct call's.

    Hence: an action used by a table keeps its directionless parameters (``ActionInfo.params``
    already leaves out directional ones); an action only called from an apply block is listed
    with no parameters; an action only called from other actions, or never used, is absent.
    """
    exposed: dict[str, bool] = {}
    for t in info.tables.values():
        for ref in t.actions:
            exposed[ref.name] = True
    for name in info.direct_calls:
        exposed.setdefault(name, False)
    return exposed


def build_p4info(info: ProgramInfo) -> p4info_pb2.P4Info:
    """Build the P4Info message describing ``info``'s control-plane API."""
    tables = {n: t for n, t in info.tables.items() if not _is_hidden(t)}
    exposed = exposed_actions(info)
    actions = {n: a for n, a in info.actions.items() if n in exposed and not _is_hidden(a)}
    counters = {n: c for n, c in info.counters.items() if not c.direct_table}
    direct_counters = {n: c for n, c in info.counters.items() if c.direct_table}
    meters = {n: m for n, m in info.meters.items() if not m.direct_table}
    direct_meters = {n: m for n, m in info.meters.items() if m.direct_table}

    symbols = SymbolTable()
    for a in actions.values():
        symbols.add(ACTION, a.name, a.annotations)
    for t in tables.values():
        symbols.add(TABLE, t.name, t.annotations)
    for v in info.value_sets.values():
        symbols.add(VALUE_SET, v.name, getattr(v, "annotations", ()))
    # p4c hashes the header *type* name; the preamble then shows the annotation's name.
    for h in info.controller_headers.values():
        symbols.add(CONTROLLER_HEADER, h.type_name, getattr(h, "annotations", ()))
    for c in counters.values():
        symbols.add(COUNTER, c.name, c.annotations)
    for c in direct_counters.values():
        symbols.add(DIRECT_COUNTER, c.name, c.annotations)
    for m in meters.values():
        symbols.add(METER, m.name, m.annotations)
    for m in direct_meters.values():
        symbols.add(DIRECT_METER, m.name, m.annotations)
    for r in info.registers.values():
        symbols.add(REGISTER, r.name, r.annotations)
    for d in info.digests.values():
        symbols.add(DIGEST, d.name, getattr(d, "annotations", ()))
    symbols.compute_ids()
    aliases = _alias_table(symbols.names())

    def preamble(msg, kind: int, name: str, annotations: Iterable[str] = ()) -> None:
        msg.preamble.id = symbols.id(kind, name)
        msg.preamble.name = name
        msg.preamble.alias = aliases[name]
        msg.preamble.annotations.extend(_passthrough_annotations(annotations))

    p4info = p4info_pb2.P4Info()
    p4info.pkg_info.arch = info.arch

    for t in tables.values():
        msg = p4info.tables.add()
        preamble(msg, TABLE, t.name, t.annotations)
        field_ids = _field_ids([explicit_id(k.annotations) for k in t.keys])
        for fid, key in zip(field_ids, t.keys):
            mf = msg.match_fields.add()
            mf.id = fid
            mf.name = key.name
            mf.bitwidth = key.bitwidth
            mf.annotations.extend(_passthrough_annotations(key.annotations))
            if key.match_kind in _MATCH_TYPES:
                mf.match_type = _MATCH_TYPES[key.match_kind]
            else:  # architecture-specific match kind
                mf.other_match_type = key.match_kind
        for ref in t.actions:
            ar = msg.action_refs.add()
            ar.id = symbols.id(ACTION, ref.name)
            annotations = list(ref.annotations)
            # p4c lists the scope annotations on the reference too
            for flag, scope_name in ((ref.table_only, "tableonly"),
                                     (ref.default_only, "defaultonly")):
                if flag and not _has_annotation(annotations, scope_name):
                    annotations.append("@" + scope_name)
            ar.annotations.extend(_passthrough_annotations(annotations))
            if ref.table_only and ref.default_only:
                raise CompileError(f"table {t.name}: action {ref.name} is both "
                                   "@tableonly and @defaultonly")
            ar.scope = (p4info_pb2.ActionRef.TABLE_ONLY if ref.table_only else
                        p4info_pb2.ActionRef.DEFAULT_ONLY if ref.default_only else
                        p4info_pb2.ActionRef.TABLE_AND_DEFAULT)
        if t.default_is_const:
            msg.const_default_action_id = symbols.id(ACTION, t.default_action.name)
        if t.default_action.name in actions:  # current p4c always records the initial default
            default = msg.initial_default_action
            default.action_id = symbols.id(ACTION, t.default_action.name)
            params = actions[t.default_action.name].params
            for pid, param in zip(_field_ids([None] * len(params)), params):
                value = t.default_action.args.get(param.name, 0)
                default.arguments.add(param_id=pid, value=_canonical_bytes(value))
        if t.direct_counter and t.direct_counter in direct_counters:
            msg.direct_resource_ids.append(symbols.id(DIRECT_COUNTER, t.direct_counter))
        if t.direct_meter and t.direct_meter in direct_meters:
            msg.direct_resource_ids.append(symbols.id(DIRECT_METER, t.direct_meter))
        msg.size = t.size
        if t.has_const_entries:
            msg.is_const_table = True
        if t.const_entries:
            msg.has_initial_entries = True

    for a in actions.values():
        msg = p4info.actions.add()
        preamble(msg, ACTION, a.name, a.annotations)
        params = a.params if exposed[a.name] else []
        for pid, param in zip(_field_ids([None] * len(params)), params):
            p = msg.params.add()
            p.id = pid
            p.name = param.name
            p.bitwidth = param.bitwidth

    for c in counters.values():
        msg = p4info.counters.add()
        preamble(msg, COUNTER, c.name, c.annotations)
        msg.spec.unit = _COUNTER_UNITS[c.unit]
        msg.size = c.size
    for c in direct_counters.values():
        msg = p4info.direct_counters.add()
        preamble(msg, DIRECT_COUNTER, c.name, c.annotations)
        msg.spec.unit = _COUNTER_UNITS[c.unit]
        if c.direct_table in tables:
            msg.direct_table_id = symbols.id(TABLE, c.direct_table)
    for m in meters.values():
        msg = p4info.meters.add()
        preamble(msg, METER, m.name, m.annotations)
        msg.spec.unit = _METER_UNITS[m.unit]
        msg.size = m.size
    for m in direct_meters.values():
        msg = p4info.direct_meters.add()
        preamble(msg, DIRECT_METER, m.name, m.annotations)
        msg.spec.unit = _METER_UNITS[m.unit]
        if m.direct_table in tables:
            msg.direct_table_id = symbols.id(TABLE, m.direct_table)

    for h in info.controller_headers.values():
        msg = p4info.controller_packet_metadata.add()
        msg.preamble.id = symbols.id(CONTROLLER_HEADER, h.type_name)
        msg.preamble.name = h.name  # P4Info uses the annotation's name, not the type name
        msg.preamble.alias = h.name
        msg.preamble.annotations.append(f'@controller_header("{h.name}")')
        for mid, f in zip(_field_ids([None] * len(h.fields)), h.fields):
            md = msg.metadata.add()
            md.id = mid
            md.name = f.name
            md.bitwidth = f.bitwidth

    for v in info.value_sets.values():
        msg = p4info.value_sets.add()
        preamble(msg, VALUE_SET, v.name, getattr(v, "annotations", ()))
        msg.size = v.size
        for mid, f in zip(_field_ids([None] * len(v.fields)), v.fields):
            mf = msg.match.add()
            mf.id = mid
            if f.name:  # a bit<W> element type has a single unnamed field
                mf.name = f.name
            mf.bitwidth = f.bitwidth
            mf.match_type = p4info_pb2.MatchField.EXACT

    for r in info.registers.values():
        msg = p4info.registers.add()
        preamble(msg, REGISTER, r.name, r.annotations)
        if r.fields:                   # a struct element (TNA paired registers), as p4c writes it
            msg.type_spec.CopyFrom(_struct_spec(p4info.type_info, r.struct_name,
                                                [StructField(n, w) for n, w in r.fields]))
        else:
            msg.type_spec.CopyFrom(_bit_type_spec(r.bitwidth, r.signed))
        msg.size = r.size

    for d in info.digests.values():
        msg = p4info.digests.add()
        preamble(msg, DIGEST, d.name, getattr(d, "annotations", ()))
        msg.type_spec.CopyFrom(_struct_spec(p4info.type_info, d.name, d.fields))

    return p4info


# ---------------------------------------------------------------- comparison


def p4info_differences(ours: Any, theirs: Any) -> list[str]:
    """Entity-by-entity differences between two P4Infos (matched by kind and name), one line
    each: ``ours`` is p4sim's, ``theirs`` p4c's (e.g. ``p4c-bm2-ss --p4runtime-files``)."""
    def describe(kind: str, e: Any) -> tuple:
        base = (e.preamble.id, e.preamble.alias)
        if kind == "tables":
            return base + (tuple((m.id, m.name, m.bitwidth, m.match_type, m.other_match_type)
                                 for m in e.match_fields),
                           tuple(r.id for r in e.action_refs), tuple(r.scope for r in e.action_refs),
                           e.const_default_action_id, tuple(e.direct_resource_ids), e.size,
                           e.is_const_table)
        if kind == "actions":
            return base + (tuple((p.id, p.name, p.bitwidth) for p in e.params),)
        if kind == "controller_packet_metadata":
            return base + (tuple((m.id, m.name, m.bitwidth) for m in e.metadata),)
        if kind in ("counters", "meters"):
            return base + (e.spec.unit, e.size)
        if kind in ("direct_counters", "direct_meters"):
            return base + (e.spec.unit, e.direct_table_id)
        if kind == "registers":
            return base + (e.size, e.type_spec.SerializeToString())
        return base
    kinds = ["tables", "actions", "counters", "direct_counters", "meters", "direct_meters",
             "registers", "digests", "controller_packet_metadata", "value_sets"]
    out = []
    for kind in kinds:
        a = {e.preamble.name: describe(kind, e) for e in getattr(ours, kind)}
        b = {e.preamble.name: describe(kind, e) for e in getattr(theirs, kind)}
        for name in sorted(set(a) | set(b)):
            if name not in b:
                out.append(f"{kind} {name}: only in p4sim's P4Info")
            elif name not in a:
                out.append(f"{kind} {name}: only in p4c's P4Info")
            elif a[name] != b[name]:
                out.append(f"{kind} {name}: p4sim {a[name]} != p4c {b[name]}")
    return out


# ---------------------------------------------------------------- command line


def _compare(p4info: p4info_pb2.P4Info, path: str) -> int:
    from google.protobuf import text_format

    cls = p4info_message_class()
    try:
        with open(path, encoding="utf-8") as f:
            theirs = text_format.Parse(f.read(), cls())
    except text_format.ParseError as exc:
        print(f"p4sim p4info: {path}: not a P4Info in text format: {exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError:
        print(f"p4sim p4info: {path}: not a P4Info in text format (not UTF-8)", file=sys.stderr)
        return 2
    diff = p4info_differences(cls.FromString(p4info.SerializeToString()), theirs)
    for line in diff:
        print(f"{path}: {line}")
    if not diff:
        print(f"{path}: p4sim's P4Info agrees entity by entity")
    return 1 if diff else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m p4sim p4info PROGRAM.p4 [--arch A] [-I DIR]... [-o FILE] [--format F]``."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["p4info"]:  # accept being handed the whole sub-command line
        args_in = args_in[1:]
    parser = argparse.ArgumentParser(prog="p4sim p4info",
                                     description="Write the P4Info of a P4_16 program.")
    parser.add_argument("program", help="P4_16 source file")
    parser.add_argument("--arch", choices=["v1model", "tna"], default="v1model")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[],
                        metavar="DIR", help="add DIR to the include search path")
    parser.add_argument("-o", "--output", metavar="FILE", help="output file (default stdout)")
    parser.add_argument("--format", choices=["text", "binary", "json"], default="text")
    parser.add_argument("--compare", metavar="P4INFO.txtpb",
                        help="instead of writing, compare with a P4Info in text format (e.g. "
                             "p4c's --p4runtime-files output): one line per difference, exit 1 "
                             "if any")
    args = parser.parse_args(args_in)

    from p4sim import load_program  # late: the front end is heavy and unneeded for --help

    try:
        program = load_program(args.program, arch=args.arch, include_dirs=args.include_dirs)
        p4info = build_p4info(program.info)
        if args.compare:
            return _compare(p4info, args.compare)
        data = format_p4info(p4info, args.format)
    except P4SIM_ERRORS as exc:
        print(f"p4sim p4info: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"p4sim p4info: {exc.filename or args.program}: {exc.strerror}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "wb") as out:
            out.write(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
