"""Values on the BfRuntime wire, both ways, checked against their bf-rt.json specs.

Integers travel as big-endian byte strings of the field's width rounded up to bytes; bools,
strings and arrays in their own ``DataField`` members (see bfruntime.proto). Shared by the
p4sim server and the controller's client so both agree on every encoding.
"""
from __future__ import annotations

from typing import Any

import p4control.errors as errors

from .proto import pb
from .schema import DataSpec, KeySpec


def nbytes(width: int) -> int:
    return max(1, (width + 7) // 8)


def encode_int(value: int, width: int, what: str) -> bytes:
    if not isinstance(value, int) or isinstance(value, bool):
        raise errors.InvalidArgument(f"{what}: {value!r} is not an integer")
    if value < 0 or value >> width:
        raise errors.InvalidArgument(f"{what}: value {value} does not fit {width} bits")
    return value.to_bytes(nbytes(width), "big")


def decode_int(raw: bytes, width: int, what: str) -> int:
    value = int.from_bytes(raw, "big")
    if value >> width:
        raise errors.InvalidArgument(f"{what}: value 0x{raw.hex()} does not fit {width} bits")
    return value


# ---------------------------------------------------------------- data fields

def data_field(spec: DataSpec, value: Any, what: str) -> Any:
    """A ``DataField`` carrying ``value`` (int, bool, str, or a list for repeated fields)."""
    f = pb.DataField(field_id=spec.id)
    if spec.repeated:
        if not isinstance(value, (list, tuple)):
            raise errors.InvalidArgument(f"{what}: {spec.name} takes a list")
        if spec.type == "bool":
            f.bool_arr_val.val.extend(bool(v) for v in value)
        else:
            for v in value:
                encode_int(v, spec.width or 32, what)   # range check only
            f.int_arr_val.val.extend(value)
    elif spec.type == "bool":
        f.bool_val = bool(value)
    elif spec.type == "string":
        if spec.choices and value not in spec.choices:
            raise errors.InvalidArgument(f"{what}: {spec.name} must be one of {', '.join(spec.choices)}; got {value!r}")
        f.str_val = value
    else:
        f.stream = encode_int(value, spec.width, f"{what}: {spec.name}")
    return f


def data_value(spec: DataSpec, f: Any, what: str) -> Any:
    """The value a ``DataField`` carries, checked against ``spec``."""
    kind = f.WhichOneof("value")
    where = f"{what}: data field {spec.name}"
    if spec.repeated:
        if spec.type == "bool":
            if kind != "bool_arr_val":
                raise errors.InvalidArgument(f"{where} takes a bool array, got {kind}")
            return list(f.bool_arr_val.val)
        if kind != "int_arr_val":
            raise errors.InvalidArgument(f"{where} takes an int array, got {kind}")
        vals = list(f.int_arr_val.val)
        for v in vals:
            if spec.width and v >> spec.width:
                raise errors.InvalidArgument(f"{where}: {v} does not fit {spec.width} bits")
        return vals
    if spec.type == "bool":
        if kind != "bool_val":
            raise errors.InvalidArgument(f"{where} takes a bool, got {kind}")
        return f.bool_val
    if spec.type == "string":
        if kind != "str_val":
            raise errors.InvalidArgument(f"{where} takes a string, got {kind}")
        if spec.choices and f.str_val not in spec.choices:
            raise errors.InvalidArgument(f"{where}: '{f.str_val}' is not one of {', '.join(spec.choices)}")
        return f.str_val
    if kind != "stream":
        raise errors.InvalidArgument(f"{where} takes a byte string, got {kind}")
    return decode_int(f.stream, spec.width, where)


# ---------------------------------------------------------------- key fields

def key_field(spec: KeySpec, match: Any, what: str) -> Any:
    """A ``KeyField`` from a match value (``Exact``/``Ternary``/``Lpm``/``Range``/
    ``Optional`` of :mod:`p4control.model`) or a plain int for an exact field."""
    from p4control.model import Exact, Lpm, Optional, Range, Ternary

    where = f"{what}: key field {spec.name}"
    k = pb.KeyField(field_id=spec.id)
    if isinstance(match, int):
        match = Exact(match)
    if isinstance(match, Exact) and spec.match_type in ("Exact", "Ternary", "LPM", "Optional"):
        if spec.match_type == "Exact":
            k.exact.value = encode_int(match.value, spec.width, where)
            return k
        full = (1 << spec.width) - 1
        match = {"Ternary": Ternary(match.value, full), "LPM": Lpm(match.value, spec.width),
                 "Optional": Optional(match.value)}[spec.match_type]
    if isinstance(match, Ternary) and spec.match_type == "Ternary":
        k.ternary.value = encode_int(match.value, spec.width, where)
        k.ternary.mask = encode_int(match.mask, spec.width, where)
    elif isinstance(match, Lpm) and spec.match_type == "LPM":
        k.lpm.value = encode_int(match.value, spec.width, where)
        k.lpm.prefix_len = match.prefix_len
    elif isinstance(match, Range) and spec.match_type == "Range":
        k.range.low = encode_int(match.low, spec.width, where)
        k.range.high = encode_int(match.high, spec.width, where)
    elif isinstance(match, Optional) and spec.match_type == "Optional":
        k.optional.value = encode_int(match.value, spec.width, where)
        k.optional.is_valid = True
    else:
        raise errors.InvalidArgument(f"{where} is {spec.match_type}; cannot match it with {match!r}")
    return k


def key_match(spec: KeySpec, k: Any, what: str) -> Any:
    """The match value of a ``KeyField`` (None: an Optional field left as wildcard)."""
    from p4control.model import Exact, Lpm, Optional, Range, Ternary

    where = f"{what}: key field {spec.name}"
    kind = k.WhichOneof("match_type")
    want = {"Exact": "exact", "Ternary": "ternary", "LPM": "lpm", "Range": "range",
            "Optional": "optional"}.get(spec.match_type)
    if kind != want:
        raise errors.InvalidArgument(f"{where} is {spec.match_type}, the request gives {kind}")
    w = spec.width
    if kind == "exact":
        return Exact(decode_int(k.exact.value, w, where))
    if kind == "ternary":
        return Ternary(decode_int(k.ternary.value, w, where), decode_int(k.ternary.mask, w, where))
    if kind == "lpm":
        if not 0 <= k.lpm.prefix_len <= w:
            raise errors.InvalidArgument(f"{where}: prefix length {k.lpm.prefix_len} is not in 0..{w}")
        return Lpm(decode_int(k.lpm.value, w, where), k.lpm.prefix_len)
    if kind == "range":
        return Range(decode_int(k.range.low, w, where), decode_int(k.range.high, w, where))
    if not k.optional.is_valid:
        return None
    return Optional(decode_int(k.optional.value, w, where))


def int_key(spec: KeySpec, k: Any, what: str) -> int:
    """An exact integer key (``$REGISTER_INDEX``, ``$DEV_PORT``, ``$MGID``...)."""
    if k.WhichOneof("match_type") != "exact":
        raise errors.InvalidArgument(f"{what}: key field {spec.name} is an exact match")
    return decode_int(k.exact.value, spec.width or 32, f"{what}: key field {spec.name}")
