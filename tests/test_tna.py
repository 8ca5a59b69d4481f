"""TNA pipeline: intrinsic metadata prefixes, RegisterAction, Hash, multicast, drop_ctl."""
from pathlib import Path

import pytest

from p4sim import Switch, load_program
from p4sim.arch.tna import MAX_PASSES
from p4sim.runtime import hashes
from p4control.model import ActionCall, Exact, TableEntry
from p4sim.runtime.rt import DataplaneError

HERE = Path(__file__).parent
ETH_AGG = bytes.fromhex("ffffffffffff0000000000aa88b5")


def agg(slot: int, value: int) -> bytes:
    return ETH_AGG + slot.to_bytes(2, "big") + value.to_bytes(4, "big") + bytes(7)


@pytest.fixture
def sw() -> Switch:
    s = Switch(load_program(str(HERE / "p4tna" / "agg_basic.p4"), arch="tna"))
    s.pre.insert_group(1, [(2, 7), (3, 8)])
    return s


def test_register_action_accumulates_and_multicasts(sw: Switch) -> None:
    assert sw.process(1, agg(5, 100)) == []            # first fragment: absorbed (drop_ctl)
    outs = sw.process(4, agg(5, 23))                    # second: result multicast to group 1
    assert [p for p, _ in outs] == [2, 3]
    for (port, data), rid in zip(outs, (7, 8)):
        assert data[6:12] == rid.to_bytes(6, "big")     # egress saw egress_rid
        body = data[14:]
        assert int.from_bytes(body[6:10], "big") == 123  # sum from the RegisterAction
        crc = hashes.hash_fields("crc16", [(5, 16), (23, 32)])
        assert int.from_bytes(body[10:12], "big") == crc
        assert body[12] == 0                            # counter wrapped
    assert sw.register_read("Ig.sums", 5) == 123
    assert sw.register_read("Ig.counts", 5) == 0


def test_unicast_via_table_and_unset_port_drops(sw: Switch) -> None:
    plain = bytes.fromhex("0000000000010000000000aa0800") + bytes(20)
    assert sw.process(1, plain) == []                   # no port set → dropped
    sw.table_insert("Ig.fwd", TableEntry({"hdr.ethernet.dst": Exact(1)}, ActionCall("Ig.forward", {"port": 9})))
    assert sw.process(1, plain) == [(9, plain)]


def test_register_accessed_twice_in_one_pass_is_refused(tmp_path: Path) -> None:
    src = (HERE / "p4tna" / "agg_basic.p4").read_text().replace(
        "hdr.agg.count = bump.execute(hdr.agg.slot);",
        "hdr.agg.count = bump.execute(hdr.agg.slot); hdr.agg.count = bump.execute(hdr.agg.slot);")
    p = tmp_path / "twice.p4"
    p.write_text(src)
    s = Switch(load_program(str(p), arch="tna"))
    with pytest.raises(DataplaneError, match="accessed twice"):
        s.process(1, agg(1, 1))


def test_sub_parsers_continue_from_the_callers_offset() -> None:
    s = Switch(load_program(str(HERE / "p4tna" / "subparser.p4"), arch="tna"))
    eth = bytes.fromhex("0000000000020000000000019999")
    assert s.process(5, eth + bytes([3, 0]) + b"pay") == [(2, eth + bytes([4, 5]) + b"pay")]
    plain = bytes.fromhex("0000000000020000000000010800") + b"xyz"
    assert s.process(5, plain) == [(2, plain)]


def test_paired_register_cells_update_in_place() -> None:
    s = Switch(load_program(str(HERE / "p4tna" / "pair_register.p4"), arch="tna"))
    eth = bytes.fromhex("0000000000020000000000019999")
    # tag = (depth, cell index): cell 1 starts at {sum 100, count 0}
    (port, out), = s.process(5, eth + bytes([7, 1]))
    assert port == 2 and out[14:16] == bytes([107, 5])
    (_, out), = s.process(6, eth + bytes([3, 1]))
    assert out[14] == 110
    assert s.register_read("Ig.pairs", 1) == (110, 2)
    assert s.register_read("Ig.pairs", 0) == (100, 0)
    s.register_write("Ig.pairs", 0, (5, 9))
    assert s.register_read("Ig.pairs", 0) == (5, 9)


def test_paired_register_cells_over_p4runtime() -> None:
    import p4sim.p4runtime  # noqa: F401  (protobuf backend first)
    from p4.v1 import p4runtime_pb2 as pb
    from p4rt.client import Client, entity

    from p4sim.p4info import build_p4info
    from p4sim.p4runtime import P4RuntimeServer

    prog = load_program(str(HERE / "p4tna" / "pair_register.p4"), arch="tna")
    srv = P4RuntimeServer(Switch(prog), device_id=1)
    port = srv.start("127.0.0.1:0")
    client = Client(f"127.0.0.1:{port}")
    try:
        client.arbitrate((0, 1))
        rid = next(r.preamble.id for r in build_p4info(prog.info).registers if r.preamble.name == "Ig.pairs")
        write = pb.RegisterEntry(register_id=rid)
        write.index.index = 2
        write.data.bitstring = ((7 << 32) | 9).to_bytes(8, "big")        # sum 7, count 9
        client.modify(entity(register_entry=write))
        assert srv.switch.register_read("Ig.pairs", 2) == (7, 9)
        read = pb.RegisterEntry(register_id=rid)
        read.index.index = 1
        (got,) = client.read(entity(register_entry=read))
        assert int.from_bytes(got.register_entry.data.bitstring, "big") == (100 << 32)
    finally:
        srv.stop()


ETH_LOOP = bytes.fromhex("0000000000010000000000aa88b6")


def loop_frame(slot: int, value: int) -> bytes:
    return ETH_LOOP + bytes(2) + slot.to_bytes(2, "big") + value.to_bytes(4, "big") + bytes(6)


def test_recirculation_port_sends_the_packet_through_egress_into_ingress_again() -> None:
    s = Switch(load_program(str(HERE / "p4tna" / "recirculate.p4"), arch="tna"))
    [(port, out)] = s.process(3, loop_frame(7, 5))
    body = out[14:]
    assert port == 1
    assert (body[0], body[1]) == (3, 3)                    # three ingress passes, three egress passes
    assert int.from_bytes(body[8:12], "big") == 15         # the register cell added in every pass
    assert int.from_bytes(body[12:14], "big") == 68        # the last pass came in on the recirculation port
    assert s.register_read("Ig.sums", 7) == 15


def test_recirculations_past_the_pass_limit_are_dropped(tmp_path: Path) -> None:
    src = (HERE / "p4tna" / "recirculate.p4").read_text().replace("hdr.loop.passes < 3", "hdr.loop.passes < 200")
    p = tmp_path / "forever.p4"
    p.write_text(src)
    s = Switch(load_program(str(p), arch="tna"))
    assert s.process(3, loop_frame(2, 1)) == []
    assert s.register_read("Ig.sums", 2) == 1 + MAX_PASSES   # the first pass and MAX_PASSES more
