"""Hash and checksum algorithms of v1model (as bmv2 computes them) and tna.

Input: P4 hashes a list of fields of arbitrary widths. bmv2 (src/bm_sim/calculations.cpp,
``BufBuilder``) deparses the fields back to back, MSB first, into one bit string and pads only
the end with zero bits up to a byte boundary; :func:`pack_fields` builds that buffer and
:func:`hash_fields` hashes it.

Algorithms (bmv2 names, all byte-oriented over that buffer):

=============  =========================================================================
crc16          CRC-16/ARC: poly 0x8005, init 0, reflected in/out, xorout 0 (check 0xBB3D)
crc16_custom   same parameters by default (bmv2 lets the CLI change them)
crc32          CRC-32: poly 0x04C11DB7, init/xorout 0xFFFFFFFF, reflected (check 0xCBF43926)
crc32_custom   same parameters by default
crc8_custom    CRC-8: poly 0x07, init 0, not reflected, xorout 0 (check 0xF4)
crc64_custom   poly 0x1B, init 0, reflected, xorout 0 (bmv2 default)
crcCCITT       poly 0x1021, init 0xFFFF, not reflected, xorout 0 (CRC-16/CCITT-FALSE, 0x29B1)
csum16         RFC 1071 ones' complement sum of big-endian 16-bit words (odd tail padded
               with a zero byte), complemented; ``cksum16`` is the same function
xor16 / xor32  XOR of big-endian 16/32-bit words, the tail zero-padded on the right
identity       the first min(8, len) bytes as a big-endian integer
=============  =========================================================================

CRC parameters follow the Rocksoft/"reveng" model: ``init`` is the value of the MSB-first
register, as in bmv2's ``crc_custom`` (so for a reflected CRC the register starts at
reflect(init)).
"""
from __future__ import annotations

import binascii
import sys
import zlib
from array import array
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable

from p4control.packing import pack_fields  # shared with P4Runtime's packet-in/out headers


def _reflect(value: int, width: int) -> int:
    return int(f"{value:0{width}b}"[::-1], 2) if width else 0


_LITTLE = sys.byteorder == "little"
_REFLECT8 = bytes(_reflect(i, 8) for i in range(256))


@dataclass(frozen=True)
class CrcSpec:
    """A CRC in the Rocksoft model. ``poly`` omits the x**width term."""
    width: int
    poly: int
    init: int = 0
    xorout: int = 0
    reflect_in: bool = False
    reflect_out: bool = False


@lru_cache(maxsize=None)
def crc_function(spec: CrcSpec) -> Callable[[bytes], int]:
    """A table-driven function computing ``spec`` over bytes (table built once per spec)."""
    w = spec.width
    mask = (1 << w) - 1
    if spec.reflect_in and spec.reflect_out:
        # Reflected register: LSB first, no per-byte bit reversal needed.
        rpoly = _reflect(spec.poly, w)
        table = []
        for i in range(256):
            r = i
            for _ in range(8):
                r = (r >> 1) ^ rpoly if r & 1 else r >> 1
            table.append(r)
        start = _reflect(spec.init & mask, w)
        xorout = spec.xorout

        def crc_reflected(data: bytes) -> int:
            r = start
            for b in data:
                r = table[(r ^ b) & 0xFF] ^ (r >> 8)
            return r ^ xorout
        return crc_reflected

    # MSB-first register. Widths below 8 run in an 8-bit register shifted left by `shift`.
    shift = max(0, 8 - w)
    rw = w + shift
    rmask = (1 << rw) - 1
    top = 1 << (rw - 1)
    poly = spec.poly << shift
    table = []
    for i in range(256):
        r = i << (rw - 8)
        for _ in range(8):
            r = ((r << 1) ^ poly) & rmask if r & top else (r << 1) & rmask
        table.append(r)
    start = (spec.init & mask) << shift
    hi = rw - 8
    refl_in, refl_out, xorout = spec.reflect_in, spec.reflect_out, spec.xorout

    def crc_msb_first(data: bytes) -> int:
        if refl_in:
            data = data.translate(_REFLECT8)
        r = start
        for b in data:
            r = table[((r >> hi) ^ b) & 0xFF] ^ ((r << 8) & rmask)
        r >>= shift
        if refl_out:
            r = _reflect(r, w)
        return r ^ xorout
    return crc_msb_first


def crc(poly: int, width: int, init: int = 0, xorout: int = 0, reflect_in: bool = False,
        reflect_out: bool = False) -> Callable[[bytes], int]:
    """Generic CRC of any width >= 1 (cached per parameter set)."""
    if width < 1:
        raise ValueError("CRC width must be >= 1")
    return crc_function(CrcSpec(width, poly, init, xorout, reflect_in, reflect_out))


# ---------------------------------------------------------------------- non-CRC algorithms

def csum16(data: bytes) -> int:
    """Internet checksum (RFC 1071) as bmv2's csum16/cksum16."""
    if len(data) & 1:
        data += b"\x00"
    words = array("H", data)             # native order: sum in C, fix byte order after
    if _LITTLE:
        words.byteswap()
    s = sum(words)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _xor_words(nbytes: int) -> Callable[[bytes], int]:
    def xor_hash(data: bytes) -> int:
        tail = -len(data) % nbytes
        v = int.from_bytes(data + b"\x00" * tail, "big")
        mask = (1 << (8 * nbytes)) - 1
        out = 0
        while v:
            out ^= v & mask
            v >>= 8 * nbytes
        return out
    return xor_hash


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big")


# ---------------------------------------------------------------------- named algorithms

CRC16 = CrcSpec(16, 0x8005, 0, 0, True, True)
CRC32 = CrcSpec(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
CRC8 = CrcSpec(8, 0x07)
CRC64_BMV2 = CrcSpec(64, 0x1B, 0, 0, True, True)
CRC_CCITT = CrcSpec(16, 0x1021, 0xFFFF)
CRC64_ECMA = CrcSpec(64, 0x42F0E1EBA9EA3693)      # tna CRC64 (bf-utils "crc_64")


def _zlib_crc32(data: bytes) -> int:
    return zlib.crc32(data)


def _crc_ccitt(data: bytes) -> int:
    return binascii.crc_hqx(data, 0xFFFF)        # C implementation of the same CRC


ALGORITHMS: dict[str, Callable[[bytes], int]] = {
    "crc16": crc_function(CRC16),
    "crc16_custom": crc_function(CRC16),
    "crc32": _zlib_crc32,
    "crc32_custom": _zlib_crc32,
    "crc8_custom": crc_function(CRC8),
    "crc64_custom": crc_function(CRC64_BMV2),
    "crcCCITT": _crc_ccitt,
    "csum16": csum16,
    "cksum16": csum16,
    "xor8": _xor_words(1),
    "xor16": _xor_words(2),
    "xor32": _xor_words(4),
    "identity": identity,
    # tna HashAlgorithm_t predefined CRCs (bf-p4c maps them to bf-utils crc_8/16/32/64)
    "crc8": crc_function(CRC8),
    "crc64": crc_function(CRC64_ECMA),
}


def compute(algorithm: str, data_bytes: bytes) -> int:
    """Hash ``data_bytes`` with a named algorithm (see the module table)."""
    try:
        fn = ALGORITHMS[algorithm]
    except KeyError:
        raise ValueError(f"unknown hash algorithm {algorithm!r}; known: "
                         f"{sorted(ALGORITHMS)}") from None
    return fn(data_bytes)


def hash_fields(algorithm: str, fields: Iterable[tuple[int, int]]) -> int:
    """Hash a P4 field list given as ``(value, width_bits)`` pairs, bmv2 style."""
    return compute(algorithm, pack_fields(fields))


def v1model_hash(algorithm: str, fields: Iterable[tuple[int, int]], base: int, max_value: int,
                 out_width: int) -> int:
    """v1model ``hash(out, algo, base, data, max)``: bmv2 computes base + (h % max) and
    truncates to the destination width. ``max_value`` 0 is taken as "no modulo" (bmv2 would
    divide by zero)."""
    h = hash_fields(algorithm, fields)
    if max_value:
        h %= max_value
    return (base + h) & ((1 << out_width) - 1)


# ---------------------------------------------------------------------- tna

def tna_crc(coeff: int, width: int, reverse: bool, init: int, xor: int) -> Callable[[bytes], int]:
    """The CRC of tna ``CRCPolynomial<bit<width>>(coeff, reversed, msb, extended, init, xor)``.

    ``coeff`` is the polynomial without its leading x**width term; ``reverse`` (the P4
    ``reversed`` argument) reflects input and output. bf-utils (dynamic_hash/
    bfn_hash_algorithm.c, calculate_crc) loads ``init`` into the register as is, i.e. into the
    *reflected* register when reversed, hence the conversion to the Rocksoft init here."""
    return crc_function(tna_crc_spec(coeff, width, reverse, init, xor))


def tna_crc_spec(coeff: int, width: int, reverse: bool, init: int, xor: int) -> CrcSpec:
    """The Rocksoft parameters of a tna CRCPolynomial (see :func:`tna_crc`)."""
    if width < 1:
        raise ValueError("CRC width must be >= 1")
    rocksoft_init = _reflect(init, width) if reverse else init
    return CrcSpec(width, coeff, rocksoft_init, xor, reverse, reverse)


def tna_hash_output(value: int, value_width: int, out_width: int, msb: bool = False,
                    extend: bool = True) -> int:
    """Fit a ``value_width``-bit hash into ``Hash<bit<out_width>>``: narrower outputs take the
    low bits (or the high bits if ``msb``); wider outputs repeat the hash if ``extend`` (bf-p4c
    turns it on by default for CRCs), else zero-extend."""
    if out_width <= value_width:
        return value >> (value_width - out_width) if msb else value & ((1 << out_width) - 1)
    if not extend:
        return value
    # bf-utils copies the hash into the more significant bytes again and again, keeping the
    # hash itself in the low bits.
    out = value
    filled = value_width
    while filled < out_width:
        out = (out << value_width) | value
        filled += value_width
    return out & ((1 << out_width) - 1)


# bf-p4c maps tna HashAlgorithm_t CRC8/CRC16/CRC32/CRC64 to bf-utils' crc_8, crc_16, crc_32 and
# crc_64, i.e. CRC-8, CRC-16/ARC, CRC-32 and CRC-64/ECMA-182.
TNA_PREDEFINED: dict[str, CrcSpec] = {
    "CRC8": CRC8,
    "CRC16": CRC16,
    "CRC32": CRC32,
    "CRC64": CRC64_ECMA,
}

__all__ = ["pack_fields", "CrcSpec", "crc_function", "crc", "csum16", "identity", "compute",
           "hash_fields", "v1model_hash", "tna_crc", "tna_crc_spec", "tna_hash_output", "ALGORITHMS",
           "TNA_PREDEFINED", "CRC16", "CRC32", "CRC8", "CRC_CCITT", "CRC64_BMV2", "CRC64_ECMA"]
