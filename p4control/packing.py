"""Bit strings of fields packed back to back, MSB first: P4's hash input (bmv2's buffer), and
P4Runtime's packet-in / packet-out controller headers."""
from __future__ import annotations

from typing import Iterable


def pack_fields(fields: Iterable[tuple[int, int]]) -> bytes:
    """Concatenate ``(value, width_bits)`` pairs MSB first and zero-pad the end to a whole
    number of bytes (bmv2's hash/checksum input buffer). Values are masked to their width."""
    acc = 0
    nbits = 0
    for value, width in fields:
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    pad = -nbits % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")
