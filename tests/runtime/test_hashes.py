import random

import pytest

from p4sim.runtime import hashes
from p4sim.runtime.hashes import (compute, crc, csum16, hash_fields, pack_fields, tna_crc,
                                  tna_hash_output, v1model_hash)

CHECK = b"123456789"


def _reflect(v, w):
    return int(format(v, f"0{w}b")[::-1], 2)


def reference_crc(data, width, poly, init, xorout, refin, refout):
    """Bit-at-a-time Rocksoft-model CRC, independent of the table-driven code."""
    mask = (1 << width) - 1
    reg = init
    for byte in data:
        if refin:
            byte = _reflect(byte, 8)
        for i in range(7, -1, -1):
            top = (reg >> (width - 1)) & 1
            reg = (reg << 1) & mask
            if top ^ ((byte >> i) & 1):
                reg ^= poly
    if refout:
        reg = _reflect(reg, width)
    return reg ^ xorout


@pytest.mark.parametrize("name, value", [
    ("crc16", 0xBB3D),               # CRC-16/ARC
    ("crc16_custom", 0xBB3D),
    ("crc32", 0xCBF43926),
    ("crc32_custom", 0xCBF43926),
    ("crc8_custom", 0xF4),           # CRC-8
    ("crc8", 0xF4),
    ("crcCCITT", 0x29B1),            # CRC-16/CCITT-FALSE
    ("crc64", 0x6C40DF5F0B497347),   # CRC-64/ECMA-182 (tna CRC64)
])
def test_catalogue_check_values(name, value):
    assert compute(name, CHECK) == value


@pytest.mark.parametrize("args, value", [
    ((0x1021, 16, 0, 0, True, True), 0x2189),                       # KERMIT
    ((0x1021, 16, 0x1D0F), 0xE5CC),                                 # AUG-CCITT
    ((0x04C11DB7, 32, 0xFFFFFFFF, 0xFFFFFFFF), 0xFC891918),         # BZIP2
    ((0x1EDC6F41, 32, 0xFFFFFFFF, 0xFFFFFFFF, True, True), 0xE3069283),  # CRC-32C
    ((0x05, 5, 0x1F, 0x1F, True, True), 0x19),                      # CRC-5/USB
    ((0x09, 5, 0x09), 0x00),                                        # CRC-5/EPC-C1G2
    ((0x1B, 64, (1 << 64) - 1, (1 << 64) - 1, True, True), 0xB90956C775A41001),  # GO-ISO
    ((0x8005, 16), 0xFEE8),                                         # BUYPASS
])
def test_generic_crc_check_values(args, value):
    assert crc(*args)(CHECK) == value


def test_generic_crc_matches_bitwise_reference():
    rng = random.Random(1)
    for _ in range(60):
        width = rng.choice([1, 3, 5, 7, 8, 12, 16, 17, 24, 31, 32, 40, 64])
        mask = (1 << width) - 1
        poly = rng.randrange(1 << width) | 1
        init, xorout = rng.randrange(mask + 1), rng.randrange(mask + 1)
        refin, refout = rng.random() < 0.5, rng.random() < 0.5
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 12)))
        assert crc(poly, width, init, xorout, refin, refout)(data) == \
            reference_crc(data, width, poly, init, xorout, refin, refout)
    assert crc(0x8005, 16) is crc(0x8005, 16)        # one table per parameter set


def test_bmv2_crc64_custom_default_parameters():
    assert compute("crc64_custom", CHECK) == reference_crc(CHECK, 64, 0x1B, 0, 0, True, True)


def test_empty_input():
    assert compute("crc32", b"") == 0
    assert compute("crc16", b"") == 0
    assert compute("csum16", b"") == 0xFFFF
    assert compute("xor16", b"") == 0 and compute("identity", b"") == 0


def test_pack_fields_is_msb_first_with_trailing_padding():
    assert pack_fields([(0x5, 4), (0xABC, 12), (1, 1)]) == bytes([0x5A, 0xBC, 0x80])
    assert pack_fields([(0x1FF, 8)]) == b"\xff"                     # values are masked
    assert pack_fields([]) == b""
    assert pack_fields([(1, 1), (0, 7), (0x1234, 16)]) == b"\x80\x12\x34"


def test_csum16_internet_checksum():
    ipv4 = bytes.fromhex("45000073000040004011" "0000" "c0a80001c0a800c7")
    assert csum16(ipv4) == 0xB861
    with_sum = ipv4[:10] + (0xB861).to_bytes(2, "big") + ipv4[12:]
    assert csum16(with_sum) == 0                                    # verifies to 0
    assert compute("csum16", b"\x01") == compute("csum16", b"\x01\x00") == 0xFEFF
    assert compute("cksum16", ipv4) == 0xB861
    assert csum16(b"\xff\xff" * 70000) == 0                         # carries fold


def test_xor_and_identity():
    assert compute("xor16", b"\x12\x34\x56") == 0x1234 ^ 0x5600
    assert compute("xor32", b"\x01\x02\x03\x04\x05") == 0x01020304 ^ 0x05000000
    assert compute("xor8", b"\x0f\xf0\x01") == 0xFE
    assert compute("identity", b"\x01\x02\x03") == 0x010203
    assert compute("identity", bytes(range(1, 11))) == 0x0102030405060708   # first 8 bytes


def test_hash_fields_and_v1model_hash():
    fields = [(0x0A000001, 32), (0x0A000002, 32), (6, 8), (80, 16)]
    data = pack_fields(fields)
    assert hash_fields("crc32", fields) == compute("crc32", data)
    h = compute("crc16", data)
    assert v1model_hash("crc16", fields, 10, 100, 16) == 10 + h % 100
    assert v1model_hash("crc16", fields, 0, 0, 8) == h & 0xFF        # max 0: no modulo
    # identity over a 4-bit field sees the padded byte, as bmv2 does
    assert hash_fields("identity", [(0x5, 4)]) == 0x50


def test_unknown_algorithm():
    with pytest.raises(ValueError, match="unknown hash algorithm"):
        compute("md5", b"")
    with pytest.raises(ValueError):
        crc(1, 0)


def test_tna_predefined_and_custom_polynomials():
    assert hashes.crc_function(hashes.TNA_PREDEFINED["CRC16"])(CHECK) == 0xBB3D
    assert hashes.crc_function(hashes.TNA_PREDEFINED["CRC32"])(CHECK) == 0xCBF43926
    # CRCPolynomial<bit<32>>(0x04C11DB7, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF)
    assert tna_crc(0x04C11DB7, 32, True, 0xFFFFFFFF, 0xFFFFFFFF)(CHECK) == 0xCBF43926
    assert tna_crc(0x1021, 16, False, 0xFFFF, 0)(CHECK) == 0x29B1
    # reversed: bf-utils loads init straight into the reflected register
    data = b"\x12\x34\x56"
    reg = 0x00B2
    rpoly = _reflect(0x1021, 16)
    for b in data:
        reg ^= b
        for _ in range(8):
            reg = (reg >> 1) ^ rpoly if reg & 1 else reg >> 1
    assert tna_crc(0x1021, 16, True, 0x00B2, 0)(data) == reg


def test_tna_hash_output_width_adaptation():
    assert tna_hash_output(0xABCD, 16, 8) == 0xCD
    assert tna_hash_output(0xABCD, 16, 8, msb=True) == 0xAB
    assert tna_hash_output(0xABCD, 16, 16) == 0xABCD
    assert tna_hash_output(0xABCD, 16, 32) == 0xABCDABCD
    assert tna_hash_output(0xABCD, 16, 24) == 0xCDABCD
    assert tna_hash_output(0xABCD, 16, 32, extend=False) == 0xABCD
