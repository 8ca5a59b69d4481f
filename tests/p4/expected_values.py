"""Reference calculations for the expected packets of the STF corpus.

Plain Python (zlib/struct only, never p4sim): run ``python tests/p4/expected_values.py`` to print
the packet hex that the ``expect`` lines of the .stf files contain. Semantics follow bmv2's
simple_switch (P4_16 spec arithmetic; bmv2 hash/checksum algorithms).
"""
from __future__ import annotations

import zlib


def pack(fields: list[tuple[int, int]]) -> str:
    """Concatenate (width, value) fields MSB-first into upper-case hex."""
    total = sum(w for w, _ in fields)
    assert total % 8 == 0, total
    acc = 0
    for w, v in fields:
        acc = (acc << w) | (v & ((1 << w) - 1))
    return f"{acc:0{total // 4}X}"


def signed(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def sat_add_u(a: int, b: int, w: int) -> int:
    return min(a + b, (1 << w) - 1)


def sat_sub_u(a: int, b: int, w: int) -> int:
    return max(a - b, 0)


def sat_s(v: int, w: int) -> int:
    return max(min(v, (1 << (w - 1)) - 1), -(1 << (w - 1)))


def arith(a: int, b: int, c: int, d: int) -> str:
    m8, m16, m64 = 0xFF, 0xFFFF, (1 << 64) - 1
    s = signed(a, 8)
    s1 = signed(s - 100, 8)
    t = (c & ~0x00F0) | (0xA << 4)
    res = [
        (3, (a & 7) + 7),
        (13, (c & 0x1FFF) * 3),
        (48, (d & ((1 << 48) - 1)) + 0xFFFFFFFFFFFF),
        (64, d * 3),
        (64, d + 0x8000000000000001),
        (8, s1),
        (8, s1 >> 2),                      # Python >> on negative ints is arithmetic
        (8, sat_add_u(a, b, 8)),
        (8, sat_sub_u(a, b, 8)),
        (8, sat_s(s + 100, 8)),
        (8, sat_s(s - 100, 8)),
        (8, (a << 3) & m8),
        (8, a >> 2),
        (16, (c << (b & 0xF)) & m16),
        (8, (a << b) & m8),
        (8, (c >> 4) & 0xFF),
        (16, t & m16),
        (16, (a << 8) | b),
        (8, ((a & 0xF) << 4) | (b >> 4)),
        (8, c & m8),
        (8, s1 & m8),
        (16, s1 & m16),
        (1, int(a > b)),
        (1, b & 1),
        (1, int(s1 < 0)),
        (1, int(d > 0x7FFFFFFFFFFFFFFF)),
        (4, 0),
        (8, -a),
        (8, ~a),
        (8, signed(s1 * 3, 8)),
        (8, (a & 0xF0) | (b ^ 0x0F)),
    ]
    return pack([(8, a), (8, b), (16, c), (64, d & m64)]) + " " + pack(res)


def crc16_arc(data: bytes) -> int:
    """bmv2 "crc16": polynomial 0x8005, reflected in and out, init 0, no final xor."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def csum16(data: bytes) -> int:
    """Internet checksum (RFC 1071): ones' complement of the ones' complement sum."""
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def xor16(data: bytes) -> int:
    """bmv2 "xor16": xor of the big-endian 16-bit words, a short tail padded with zeros."""
    if len(data) % 2:
        data += b"\0"
    v = 0
    for i in range(0, len(data), 2):
        v ^= int.from_bytes(data[i:i + 2], "big")
    return v


def hashes(a: int, b: int, c: int, d: int) -> str:
    data = a.to_bytes(4, "big") + b.to_bytes(2, "big") + bytes([c, d])
    out = [
        (16, crc16_arc(data) % 65536),
        (32, zlib.crc32(data) % (1 << 32)),
        (16, csum16(data) % 65536),
        (32, int.from_bytes(data[:4], "big") % (1 << 32)),   # identity of {a}
        (16, xor16(data) % 65536),
        (16, 7 + zlib.crc32(data[4:]) % 1000),
    ]
    return pack([(32, a), (16, b), (8, c), (8, d)]) + " " + pack(out)


def ipv4(ttl: int, checksum: int | None = None, total_len: int = 24) -> str:
    """An IPv4 header without options: id 0x1234, DF, protocol UDP, 192.168.0.1 -> .2.
    The checksum is computed when not given."""
    def hdr(cs: int) -> bytes:
        return (bytes([0x45, 0x00]) + total_len.to_bytes(2, "big") + bytes([0x12, 0x34, 0x40, 0x00])
                + bytes([ttl, 0x11]) + cs.to_bytes(2, "big") + bytes([192, 168, 0, 1, 192, 168, 0, 2]))
    if checksum is None:
        checksum = csum16(hdr(0))
    return hdr(checksum).hex().upper()


def main() -> None:
    assert crc16_arc(b"123456789") == 0xBB3D       # CRC-16/ARC check value
    assert zlib.crc32(b"123456789") == 0xCBF43926  # CRC-32 check value
    print("# arith.stf")
    for a, b, c, d in [(0xF5, 0x09, 0x1234, 0xFFFFFFFFFFFFFFF0), (0x10, 0x03, 0xFFFF, 1),
                       (0x80, 0x80, 0x0000, 0x8000000000000000), (0x7F, 0x01, 0xABCD, 0)]:
        print(arith(a, b, c, d))
    print("# hash.stf")
    for a, b, c, d in [(0x0A000001, 0x1F90, 0x06, 0x00), (0xFFFFFFFF, 0x0000, 0x80, 0x7F),
                       (0x12345678, 0x9ABC, 0xDE, 0xF0)]:
        print(hashes(a, b, c, d))
    print("# checksum.stf")
    print("ttl 64 valid:", ipv4(64), " after ttl-1:", ipv4(63))
    print("ttl 64 bad checksum:", ipv4(64, 0xBAD0), " recomputed:", ipv4(64))
    print("ttl 1 valid:", ipv4(1), " after:", ipv4(0))


if __name__ == "__main__":
    main()
