"""End-to-end tests of the P4Runtime server (see test_p4runtime_server.py): externs
(registers, counters, direct counters, meters), the packet replication engine, packet I/O and
digests.
"""
from __future__ import annotations

import pytest

import p4sim.p4runtime  # noqa: F401  (protobuf backend first)

from p4.v1 import p4runtime_pb2 as pb  # noqa: E402
from p4rt.client import Client, entity  # noqa: E402
from p4rt.server_harness import (COUNTERS_METERS_PROGRAM, CPU_PORT, DELETE, EXACT_T, INSERT, MAC1, MODIFY,  # noqa: E402
                                 Code, Harness, client, ethernet, expect_error, expect_update_errors,  # noqa: F401
                                 harness, load, p4i, table_entries)

from p4sim.p4info import map_value  # noqa: E402


# ====================================================================== externs


def test_registers(harness, client, p4i):
    reg = p4i.registers["MyIngress.pkt_count"]
    rid = reg.preamble.id
    assert reg.type_spec.bitstring.bit.bitwidth == 32 and reg.size == 8

    def read(index: int | None = None) -> list[pb.RegisterEntry]:
        re = pb.RegisterEntry(register_id=rid)
        if index is not None:
            re.index.index = index
        return [e.register_entry for e in client.read(entity(register_entry=re))]

    assert [e.data.bitstring for e in read()] == [b"\x00"] * 8
    harness.inject(1, ethernet(MAC1))
    harness.inject(1, ethernet(MAC1))
    assert read(0)[0].data.bitstring == b"\x02"

    write = pb.RegisterEntry(register_id=rid)
    write.index.index = 5
    write.data.bitstring = b"\x00\x01\x00"
    client.modify(entity(register_entry=write))
    assert read(5)[0].data.bitstring == b"\x01\x00"
    everything = pb.RegisterEntry(register_id=rid)
    everything.data.bitstring = b"\x07"
    client.modify(entity(register_entry=everything))  # no index: every cell
    assert {e.data.bitstring for e in read()} == {b"\x07"}
    assert {e.register_entry.register_id for e in client.read(
        entity(register_entry=pb.RegisterEntry()))} == {rid}

    too_far = pb.RegisterEntry(register_id=rid)
    too_far.index.index = 8
    too_far.data.bitstring = b"\x01"
    negative = pb.RegisterEntry(register_id=rid)
    negative.index.index = -1
    negative.data.bitstring = b"\x01"
    too_wide = pb.RegisterEntry(register_id=rid)
    too_wide.data.bitstring = b"\x01" + b"\x00" * 4
    no_data = pb.RegisterEntry(register_id=rid)
    assert expect_update_errors(client, *(
        pb.Update(type=MODIFY, entity=entity(register_entry=e))
        for e in (too_far, negative, too_wide, no_data, pb.RegisterEntry(register_id=123))
    ), pb.Update(type=INSERT, entity=entity(register_entry=write))) == [
        Code.OUT_OF_RANGE, Code.INVALID_ARGUMENT, Code.OUT_OF_RANGE, Code.INVALID_ARGUMENT,
        Code.INVALID_ARGUMENT, Code.INVALID_ARGUMENT]


def test_counters(harness, client, p4i):
    cid = p4i.counters["MyIngress.port_counter"].preamble.id
    frame = ethernet(MAC1)
    harness.inject(3, frame)

    def read(index: int | None = None) -> list[pb.CounterEntry]:
        ce = pb.CounterEntry(counter_id=cid)
        if index is not None:
            ce.index.index = index
        return [e.counter_entry for e in client.read(entity(counter_entry=ce))]

    (c3,) = read(3)
    assert (c3.data.packet_count, c3.data.byte_count) == (1, len(frame))
    assert len(read()) == 16

    ce = pb.CounterEntry(counter_id=cid)
    ce.index.index = 3
    ce.data.packet_count, ce.data.byte_count = 100, 2000
    client.modify(entity(counter_entry=ce))
    assert read(3)[0].data == ce.data
    reset = pb.CounterEntry(counter_id=cid)
    reset.data.SetInParent()
    client.modify(entity(counter_entry=reset))
    assert all(e.data.packet_count == 0 for e in read())
    assert expect_error(client, INSERT, entity(counter_entry=ce)) == Code.INVALID_ARGUMENT


@pytest.fixture
def cm_client():
    """A primary client of a switch running counters_meters.p4."""
    h = Harness(load(str(COUNTERS_METERS_PROGRAM)))
    client = Client(h.address)
    client.arbitrate((0, 1))
    yield h, client, client.p4info()
    client.close()
    h.server.stop()


def test_direct_counters(cm_client):
    h, client, p4i = cm_client
    table = "MyIngress.count_t"
    (dc,) = p4i.msg.direct_counters
    assert dc.direct_table_id == p4i.table_id(table)
    assert list(p4i.tables[table].direct_resource_ids) == [dc.preamble.id]
    te = p4i.table_entry(table, {}, p4i.action("MyIngress.forward", port=2), priority=1)
    te.counter_data.packet_count = 5
    client.insert(entity(table_entry=te))
    h.inject(1, ethernet(MAC1))
    assert h.wait_outputs(1)[0][0] == 2

    query = pb.TableEntry(table_id=te.table_id)
    query.counter_data.SetInParent()
    (read,) = [e.table_entry for e in client.read(entity(table_entry=query))]
    assert read.counter_data.packet_count == 6
    assert read.counter_data.byte_count == 14
    assert not table_entries(client, te.table_id)[0].HasField("counter_data")

    dce = pb.DirectCounterEntry()
    dce.table_entry.CopyFrom(p4i.table_entry(table, {}, priority=1))
    dce.data.packet_count, dce.data.byte_count = 9, 99
    client.modify(entity(direct_counter_entry=dce))
    (got,) = client.read(entity(direct_counter_entry=pb.DirectCounterEntry(
        table_entry=pb.TableEntry(table_id=te.table_id))))
    assert got.direct_counter_entry.data == dce.data
    assert got.direct_counter_entry.table_entry.priority == 1

    missing = pb.DirectCounterEntry()
    missing.table_entry.CopyFrom(p4i.table_entry(table, {}, priority=2))
    missing.data.packet_count = 1
    assert expect_update_errors(
        client, pb.Update(type=MODIFY, entity=entity(direct_counter_entry=missing)),
        pb.Update(type=INSERT, entity=entity(direct_counter_entry=dce))) == [
        Code.NOT_FOUND, Code.INVALID_ARGUMENT]


def test_meters(cm_client):
    h, client, p4i = cm_client
    (meter,) = p4i.msg.meters
    assert (meter.size, meter.spec.unit) == (4, 2)  # PACKETS

    def meter_entry(index: int | None = None, **config: int) -> pb.Entity:
        me = pb.MeterEntry(meter_id=meter.preamble.id)
        if index is not None:
            me.index.index = index
        if config:
            me.config.CopyFrom(pb.MeterConfig(**config))
        return entity(meter_entry=me)

    client.modify(meter_entry(2, cir=100, cburst=10, pir=200, pburst=20))
    read = [e.meter_entry for e in client.read(meter_entry())]
    assert [e.index.index for e in read] == [0, 1, 2, 3]
    assert [e.HasField("config") for e in read] == [False, False, True, False]
    assert client.read(meter_entry(2)) == [meter_entry(2, cir=100, cburst=10, pir=200,
                                                       pburst=20)]
    client.modify(meter_entry(cir=1, cburst=1, pir=1, pburst=1))  # every index
    assert all(e.meter_entry.config.pir == 1 for e in client.read(meter_entry()))
    with_counters = meter_entry(1, cir=1, cburst=1, pir=1, pburst=1)
    with_counters.meter_entry.counter_data.SetInParent()
    assert expect_update_errors(client, *(pb.Update(type=t, entity=e) for t, e in (
        (MODIFY, meter_entry(4, cir=1, cburst=1, pir=1, pburst=1)),
        (MODIFY, meter_entry(1, cir=1, cburst=1, pir=1, pburst=1, eburst=5)),
        (INSERT, meter_entry(1, cir=1, cburst=1, pir=1, pburst=1)),
        (MODIFY, meter_entry(1)),
        (MODIFY, with_counters)))) == [
        Code.OUT_OF_RANGE, Code.INVALID_ARGUMENT, Code.INVALID_ARGUMENT, Code.UNIMPLEMENTED,
        Code.UNIMPLEMENTED]
    # the data plane still forwards through the metered action
    client.insert(entity(table_entry=p4i.table_entry(
        "MyIngress.count_t", {}, p4i.action("MyIngress.forward", port=2), priority=1)))
    h.inject(1, ethernet(MAC1))
    assert h.wait_outputs(1)[0][0] == 2


def test_direct_counter_requests_on_a_table_without_one(client, p4i):
    wrong_table = pb.DirectCounterEntry()
    wrong_table.table_entry.CopyFrom(p4i.table_entry(
        EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})}))
    wrong_table.data.packet_count = 1
    assert expect_error(client, MODIFY, entity(direct_counter_entry=wrong_table)) == \
        Code.INVALID_ARGUMENT


# ====================================================================== PRE


def _group(gid: int, *replicas: tuple[int, int], metadata: bytes = b"") -> pb.Entity:
    pre = pb.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = gid
    pre.multicast_group_entry.metadata = metadata
    for port, instance in replicas:
        pre.multicast_group_entry.replicas.add(egress_port=port, instance=instance)
    return entity(packet_replication_engine_entry=pre)


def _session(sid: int, *replicas: tuple[int, int], cos: int = 0, length: int = 0) -> pb.Entity:
    pre = pb.PacketReplicationEngineEntry()
    s = pre.clone_session_entry
    s.session_id, s.class_of_service, s.packet_length_bytes = sid, cos, length
    for port, instance in replicas:
        s.replicas.add(egress_port=port, instance=instance)
    return entity(packet_replication_engine_entry=pre)


def test_multicast_groups(harness, client, p4i):
    client.insert(_group(1, (2, 1), (3, 1), metadata=b"m"))
    (read,) = client.read(_group(0))
    assert read == _group(1, (2, 1), (3, 1), metadata=b"m")
    # the data plane uses it
    client.insert(entity(table_entry=p4i.table_entry(
        EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})},
        p4i.action("MyIngress.set_mcast", group=1))))
    harness.inject(1, ethernet(MAC1))
    assert sorted(p for p, _ in harness.wait_outputs(2)) == [2, 3]

    client.modify(_group(1, (4, 0)))
    assert client.read(_group(1)) == [_group(1, (4, 0))]
    port_bytes = pb.PacketReplicationEngineEntry()
    port_bytes.multicast_group_entry.multicast_group_id = 2
    port_bytes.multicast_group_entry.replicas.add(port=b"\x00\x05", instance=0)
    client.insert(entity(packet_replication_engine_entry=port_bytes))
    assert client.read(_group(2)) == [_group(2, (5, 0))]
    assert expect_update_errors(
        client, pb.Update(type=INSERT, entity=_group(1, (2, 0))),
        pb.Update(type=INSERT, entity=_group(0, (2, 0))),
        pb.Update(type=INSERT, entity=_group(3, (2, 0), (2, 0))),
        pb.Update(type=MODIFY, entity=_group(9, (2, 0))),
        pb.Update(type=DELETE, entity=_group(9))) == [
        Code.ALREADY_EXISTS, Code.INVALID_ARGUMENT, Code.INVALID_ARGUMENT, Code.NOT_FOUND,
        Code.NOT_FOUND]
    client.delete(_group(1))
    client.delete(_group(2))
    assert client.read(_group(0)) == []


def test_clone_sessions(client):
    client.insert(_session(5, (CPU_PORT, 1), cos=2, length=128))
    assert client.read(_session(0)) == [_session(5, (CPU_PORT, 1), cos=2, length=128)]
    client.modify(_session(5, (3, 0)))
    assert client.read(_session(5)) == [_session(5, (3, 0))]
    assert expect_update_errors(
        client, pb.Update(type=INSERT, entity=_session(5, (3, 0))),
        pb.Update(type=INSERT, entity=_session(0, (3, 0))),
        pb.Update(type=DELETE, entity=_session(6))) == [
        Code.ALREADY_EXISTS, Code.INVALID_ARGUMENT, Code.NOT_FOUND]
    client.delete(_session(5))
    assert client.read(_session(0)) == []


# ====================================================================== packet I/O, digests


def test_packet_out_and_packet_in(harness, client, p4i):
    frame = ethernet(MAC1, ethertype=0x1234, payload=b"hello")
    client.packet_out(frame, egress_port=4, _pad=0)
    ((port, data),) = harness.wait_outputs(1)
    assert (port, data) == (4, frame)

    client.insert(entity(table_entry=p4i.table_entry(
        EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})},
        p4i.action("MyIngress.to_cpu"))))
    harness.inject(7, frame)
    packet = client.next("packet").packet
    assert packet.payload == frame
    meta = {m.id: m.name for m in p4i.cpm["packet_in"].metadata}
    assert {meta[m.metadata_id]: m.value for m in packet.metadata} == {
        "ingress_port": b"\x07", "_pad": b"\x00"}


def test_bad_packet_out_gets_a_stream_error(harness, client, p4i):
    client.packet_out(b"x" * 20, egress_port=1)  # _pad missing
    err = client.next("error").error
    assert err.canonical_code == Code.INVALID_ARGUMENT.value[0]
    assert err.packet_out.packet_out.payload == b"x" * 20
    client.packet_out(b"x" * 20, egress_port=1024, _pad=0)  # 11 bits for a bit<9>
    assert client.next("error").error.canonical_code == Code.OUT_OF_RANGE.value[0]
    backup = Client(harness.address)
    try:
        backup.arbitrate((0, 1))
        backup.packet_out(b"y" * 20, egress_port=1, _pad=0)
        assert backup.next("error").error.canonical_code == Code.PERMISSION_DENIED.value[0]
    finally:
        backup.close()
    assert harness.outputs == []


def test_digests(harness, client, p4i):
    digest = p4i.digests["learn_digest_t"]
    struct = map_value(p4i.msg.type_info.structs, "learn_digest_t")
    assert [m.name for m in struct.members] == ["srcAddr", "ingress_port"]
    config = pb.DigestEntry(digest_id=digest.preamble.id)
    config.config.max_list_size = 1
    client.insert(entity(digest_entry=config))
    assert client.read(entity(digest_entry=pb.DigestEntry())) == [entity(digest_entry=config)]

    harness.inject(6, ethernet(MAC1, src=bytes.fromhex("0000000000bb")))
    msg = client.next("digest").digest
    assert msg.digest_id == digest.preamble.id and len(msg.data) == 1
    assert [m.bitstring for m in msg.data[0].struct.members] == [b"\xbb", b"\x06"]
    ack = pb.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = msg.digest_id, msg.list_id
    client.send(ack)

    client.delete(entity(digest_entry=config))
    assert expect_update_errors(
        client, pb.Update(type=DELETE, entity=entity(digest_entry=config)),
        pb.Update(type=INSERT, entity=entity(digest_entry=pb.DigestEntry(digest_id=7)))) == [
        Code.NOT_FOUND, Code.INVALID_ARGUMENT]
