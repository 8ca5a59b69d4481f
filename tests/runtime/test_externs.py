import pytest

from p4control import errors
from p4sim.runtime.externs import (GREEN, RED, TNA_COLORS, YELLOW, Counter, Meter, Register)


# ---------------------------------------------------------------- registers

def test_register_read_write_truncates_and_ignores_out_of_range():
    r = Register("ingress.r", 4, 8)
    write = r.write                                   # callers may cache the bound method
    write(1, 0x1FF)
    assert r.read(1) == 0xFF
    write(4, 7)                                       # out of range: ignored (bmv2)
    assert r.values == [0, 0xFF, 0, 0]
    assert r.read(4) == 0                             # out of range: default ...
    assert r.read(9, 42) == 42                        # ... i.e. "destination unchanged"


def test_signed_register_wraps():
    r = Register("r", 2, 8, signed=True, initial=-1)
    assert r.values == [-1, -1]
    r.write(0, 200)
    assert r.read(0) == -56
    r.write(1, -129)
    assert r.read(1) == 127
    r.cp_write(0, 0xFF)                               # two's complement bytes accepted
    assert r.cp_read(0) == -1
    r.cp_write(0, -128)
    assert r.cp_read(0) == -128
    for bad in (-129, 256):
        with pytest.raises(errors.InvalidArgument):
            r.cp_write(0, bad)


def test_register_control_plane_errors_and_reset():
    r = Register("r", 3, 16, initial=5)
    assert r.values == [5, 5, 5]
    r.cp_write(2, 0xFFFF)
    assert r.cp_read(2) == 0xFFFF
    with pytest.raises(errors.OutOfRange):
        r.cp_read(3)
    with pytest.raises(errors.OutOfRange):
        r.cp_write(3, 0)
    with pytest.raises(errors.InvalidArgument):
        r.cp_read(-1)
    with pytest.raises(errors.InvalidArgument):
        r.cp_write(0, 0x10000)
    with pytest.raises(errors.InvalidArgument):
        r.cp_write(0, -1)
    with pytest.raises(errors.InvalidArgument):
        r.cp_write(0, "1")
    r.reset()
    assert r.values == [5, 5, 5]


# ---------------------------------------------------------------- counters

def test_counter():
    c = Counter("c", 2, "packets_and_bytes")
    c.count(0, 100)
    c.count(0, 50)
    c.count(2, 10)                                    # out of range: ignored (bmv2)
    assert c.read(0) == (2, 150) and c.read(1) == (0, 0)
    c.write(1, 3, 30)
    assert c.read(1) == (3, 30)
    with pytest.raises(errors.OutOfRange):
        c.read(2)
    with pytest.raises(errors.OutOfRange):
        c.write(2, 0, 0)
    with pytest.raises(errors.InvalidArgument):
        c.read(-1)
    with pytest.raises(errors.InvalidArgument):
        c.write(0, -1, 0)
    c.reset()
    assert c.read(0) == (0, 0)
    with pytest.raises(ValueError):
        Counter("c", 1, "furlongs")


# ---------------------------------------------------------------- meters

def test_unconfigured_meter_is_green_and_out_of_range_returns_default():
    m = Meter("m", 2, "bytes")
    assert m.execute(0, 1500, 0.0) == GREEN
    assert m.execute(2, 1500, 0.0, default=RED) == RED
    assert m.get_rates(0) is None


def test_packet_meter_trtcm_sequence():
    m = Meter("m", 1, "packets")
    m.set_rates(0, cir=1000, cburst=2, pir=2000, pburst=3)   # per second
    assert m.get_rates(0) == (1000, 2, 2000, 3)
    colors = [m.execute(0, 999, 0.0) for _ in range(5)]
    # buckets start full: P=3, C=2
    assert colors == [GREEN, GREEN, YELLOW, RED, RED]
    # 1 ms later: PIR +2 tokens, CIR +1 token
    assert [m.execute(0, 1, 0.001) for _ in range(3)] == [GREEN, YELLOW, RED]
    # a long pause refills both buckets only up to their bursts
    assert [m.execute(0, 1, 10.0) for _ in range(4)] == [GREEN, GREEN, YELLOW, RED]


def test_byte_meter_and_red_consumes_nothing():
    m = Meter("m", 1, "bytes")
    m.set_rates(0, cir=0, cburst=1000, pir=0, pburst=1500)
    assert m.execute(0, 1600, 0.0) == RED          # > PIR bucket: nothing consumed
    assert m.execute(0, 1200, 0.0) == YELLOW       # fits PIR (1500 -> 300), not CIR
    assert m.execute(0, 300, 0.0) == GREEN         # PIR 300 -> 0, CIR 1000 -> 700
    assert m.execute(0, 1, 5.0) == RED             # zero rates never refill


def test_meter_time_origin_and_backwards_time():
    m = Meter("m", 1, "packets")
    m.set_rates(0, 1_000_000, 1, 1_000_000, 1)     # one token per microsecond
    assert m.execute(0, 0, 100.0) == GREEN         # origin = first execution
    assert m.execute(0, 0, 100.0) == RED
    assert m.execute(0, 0, 99.0) == RED            # clock going back adds nothing
    assert m.execute(0, 0, 100.000002) == GREEN
    m.reset_time_origin(0.0)
    assert m.time_origin == 0.0


def test_meter_configuration_errors_and_resets():
    m = Meter("m", 2, "bytes", kind="direct", colors=TNA_COLORS)
    with pytest.raises(errors.InvalidArgument, match="CIR"):
        m.set_rates(0, 2000, 10, 1000, 10)
    with pytest.raises(errors.InvalidArgument):
        m.set_rates(0, -1, 10, 1000, 10)
    with pytest.raises(errors.InvalidArgument):
        m.set_rates(0, 1.5, 10, 1000, 10)
    with pytest.raises(errors.OutOfRange):
        m.set_rates(2, 1, 1, 1, 1)
    with pytest.raises(errors.InvalidArgument):
        m.set_rates(-1, 1, 1, 1, 1)
    with pytest.raises(errors.OutOfRange):
        m.get_rates(2)
    with pytest.raises(errors.InvalidArgument):
        m.set_rates_cli(0, [(1.0, 1)])
    with pytest.raises(errors.InvalidArgument):
        m.set_rates_cli(0, [(1.0, -1), (2.0, 1)])
    m.set_rates_cli(1, [(0.5, 10), (1.0, 20)])      # bmv2 CLI: units per microsecond
    assert m.get_rates(1) == (500_000, 10, 1_000_000, 20)
    assert m.execute(1, 25, 0.0) == TNA_COLORS[2]   # tna RED is 3
    assert m.execute(1, 15, 0.0) == TNA_COLORS[1]
    m.reset_rates(1)
    assert m.execute(1, 10**6, 0.0) == TNA_COLORS[0]
    m.set_rates(0, 1, 1, 1, 1)
    m.reset()
    assert m.get_rates(0) is None and m.time_origin is None
    with pytest.raises(ValueError):
        Meter("m", 1, "packets_and_bytes")
    with pytest.raises(ValueError):
        Meter("m", 1, "bytes", kind="sideways")
