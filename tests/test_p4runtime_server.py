"""End-to-end tests of the P4Runtime server: a real compiled switch, the server on 127.0.0.1
and a gRPC client (tests/p4rt/client.py) on the ``p4runtime`` package bindings in this process.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import p4sim.p4runtime  # noqa: F401  (protobuf backend first)

import grpc  # noqa: E402
from p4.v1 import p4runtime_pb2 as pb  # noqa: E402
from p4rt.client import Client, RpcFailure, entity  # noqa: E402

from p4sim import Switch, load_program  # noqa: E402
from p4sim.p4info import map_value  # noqa: E402
from p4sim.p4runtime import P4RuntimeServer  # noqa: E402

PROGRAM = Path(__file__).parent / "p4rt" / "p4rt_test.p4"
COUNTERS_METERS_PROGRAM = Path(__file__).parent / "p4rt" / "counters_meters.p4"
CPU_PORT = 255
DEVICE_ID = 1
INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE
SET = pb.SetForwardingPipelineConfigRequest
GET = pb.GetForwardingPipelineConfigRequest
Code = grpc.StatusCode

EXACT_T, LPM_T, ACL_T, CONST_T, LEARN_T = (f"MyIngress.{t}" for t in
                                           ("exact_t", "lpm_t", "acl_t", "const_t", "learn_t"))
MAC1 = bytes.fromhex("020000000001")  # canonical: no leading zero byte


def ethernet(dst: bytes, src: bytes = bytes.fromhex("00000000000a"), ethertype: int = 0x0800,
             payload: bytes = b"") -> bytes:
    return dst + src + ethertype.to_bytes(2, "big") + payload


def ipv4(src: str, dst: str, ttl: int = 64, proto: int = 17) -> bytes:
    def addr(a: str) -> bytes:
        return bytes(int(x) for x in a.split("."))
    return (bytes([0x45, 0, 0, 20, 0, 0, 0, 0, ttl, proto, 0, 0]) + addr(src) + addr(dst))


def load(path: str):
    return Switch(load_program(path, arch="v1model"), cpu_port=CPU_PORT)


def loader(source: bytes, p4info) -> object:
    """A runner-style loader: the device config is the P4 source text."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "program.p4")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source.decode("utf-8"))
        return load(path)


class Harness:
    """A switch behind a started server, wired like the runner wires them."""

    def __init__(self, switch) -> None:
        self.switch = switch
        self.outputs: list[tuple[int, bytes]] = []
        self.server = P4RuntimeServer(switch, DEVICE_ID, loader=loader,
                                      packet_out_handler=self.packet_out,
                                      on_switch_change=self._use)
        self.port = self.server.start("127.0.0.1:0")
        self.address = f"127.0.0.1:{self.port}"

    def _use(self, switch) -> None:
        self.switch = switch

    def _dispatch(self, outputs) -> None:
        for port, data in outputs:
            if port == CPU_PORT:
                self.server.send_packet_in(data)
            else:
                self.outputs.append((port, data))

    def packet_out(self, data: bytes) -> None:
        with self.switch.lock:
            self._dispatch(self.switch.process(CPU_PORT, data))

    def inject(self, port: int, data: bytes) -> None:
        with self.switch.lock:
            self._dispatch(self.switch.process(port, data))

    def wait_outputs(self, n: int, timeout: float = 5.0) -> list[tuple[int, bytes]]:
        deadline = time.monotonic() + timeout
        while len(self.outputs) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return list(self.outputs)


@pytest.fixture(scope="module")
def source() -> bytes:
    return PROGRAM.read_bytes()


@pytest.fixture
def harness():
    h = Harness(load(str(PROGRAM)))
    yield h
    h.server.stop()


@pytest.fixture
def client(harness):
    c = Client(harness.address, DEVICE_ID)
    assert c.arbitrate((0, 10)).status.code == 0
    yield c
    c.close()


@pytest.fixture
def p4i(client):
    return client.p4info()


def expect_update_errors(client: Client, *updates: pb.Update) -> list[Code]:
    """Write ``updates`` expecting the batch to fail; return each update's code."""
    with pytest.raises(RpcFailure) as info:
        client.write(*updates)
    assert info.value.code == Code.UNKNOWN
    assert len(info.value.errors) == len(updates)
    return info.value.codes


def expect_error(client: Client, update_type: int, ent: pb.Entity) -> Code:
    (code,) = expect_update_errors(client, pb.Update(type=update_type, entity=ent))
    return code


def table_entries(client: Client, table_id: int = 0, **kw) -> list[pb.TableEntry]:
    return [e.table_entry for e in client.read(entity(table_entry=pb.TableEntry(
        table_id=table_id, **kw)))]


# ====================================================================== service basics


def test_capabilities(harness):
    c = Client(harness.address)
    try:
        assert c.stub.Capabilities(pb.CapabilitiesRequest()).p4runtime_api_version == "1.3.0"
    finally:
        c.close()


def test_get_forwarding_pipeline_config(harness, source):
    c = Client(harness.address)
    try:
        full = c.get_config(GET.ALL).config
        assert full.p4_device_config == source
        assert {t.preamble.name for t in full.p4info.tables} >= {EXACT_T, LPM_T, ACL_T}
        assert not full.HasField("cookie")
        only_cookie = c.get_config(GET.COOKIE_ONLY)
        assert only_cookie.HasField("config") and not only_cookie.config.HasField("p4info")
        p4info_only = c.get_config(GET.P4INFO_AND_COOKIE).config
        assert p4info_only.HasField("p4info") and not p4info_only.p4_device_config
        device_only = c.get_config(GET.DEVICE_CONFIG_AND_COOKIE).config
        assert device_only.p4_device_config == source and not device_only.HasField("p4info")
        with pytest.raises(RpcFailure) as info:
            Client(harness.address, device_id=7).get_config()
        assert info.value.code == Code.NOT_FOUND
    finally:
        c.close()


# ====================================================================== arbitration


def test_arbitration_primary_and_backup(harness):
    a, b = Client(harness.address), Client(harness.address)
    try:
        ans = a.arbitrate((0, 10))
        assert ans.status.code == 0 and (ans.election_id.high, ans.election_id.low) == (0, 10)
        ans = b.arbitrate((0, 5))
        assert ans.status.code == Code.ALREADY_EXISTS.value[0]
        assert ans.election_id.low == 10  # the primary's election id

        p4i = a.p4info()
        te = p4i.table_entry(EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})},
                             p4i.action("MyIngress.forward", port=2))
        with pytest.raises(RpcFailure) as info:
            b.insert(entity(table_entry=te))
        assert info.value.code == Code.PERMISSION_DENIED
        with pytest.raises(RpcFailure) as info:  # right stream, wrong election id
            a.write(pb.Update(type=INSERT, entity=entity(table_entry=te)), election_id=(0, 9))
        assert info.value.code == Code.PERMISSION_DENIED
        with pytest.raises(RpcFailure) as info:
            b.set_config(SET.VERIFY_AND_COMMIT, p4i.msg, PROGRAM.read_bytes())
        assert info.value.code == Code.PERMISSION_DENIED
        a.insert(entity(table_entry=te))
        assert len(b.read(entity(table_entry=pb.TableEntry(table_id=te.table_id)))) == 1

        # the primary leaves: the backup is promoted and told so
        a.close()
        promoted = b.next("arbitration")
        assert promoted.arbitration.status.code == 0
        b.delete(entity(table_entry=te))
        # a higher election id takes over; the old primary hears it is now a backup
        c = Client(harness.address)
        assert c.arbitrate((1, 0)).status.code == 0
        assert b.next("arbitration").arbitration.status.code == Code.ALREADY_EXISTS.value[0]
        c.close()
    finally:
        a.close()
        b.close()


def test_arbitration_errors_end_the_stream(harness):
    c = Client(harness.address)
    try:
        assert c.arbitrate((0, 1), device_id=99) is None
        assert c.stream_error.code() == Code.NOT_FOUND
    finally:
        c.close()
    a, b = Client(harness.address), Client(harness.address)
    try:
        assert a.arbitrate((0, 3)).status.code == 0
        assert b.arbitrate((0, 3)) is None
        assert b.stream_error.code() == Code.INVALID_ARGUMENT
        # a client without election id is a backup; with no primary the status is NOT_FOUND
        a.close()
        d = Client(harness.address)
        assert d.arbitrate(None).status.code == Code.NOT_FOUND.value[0]
        d.close()
    finally:
        a.close()
        b.close()


def test_roles_are_arbitrated_separately(harness):
    a, b = Client(harness.address), Client(harness.address)
    try:
        assert a.arbitrate((0, 10)).status.code == 0
        assert b.arbitrate((0, 5), role="other").status.code == 0
        te = a.p4info().table_entry(EXACT_T, {"hdr.ethernet.dstAddr": ("exact",
                                                                         {"value": MAC1})},
                                    a.p4info().action("NoAction"))
        b.insert(entity(table_entry=te))
    finally:
        a.close()
        b.close()


def test_rpc_level_checks(harness, client, p4i):
    te = p4i.table_entry(EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})},
                         p4i.action("NoAction"))
    wrong_device = Client(harness.address, device_id=2)
    with pytest.raises(RpcFailure) as info:
        wrong_device.write(pb.Update(type=INSERT, entity=entity(table_entry=te)),
                           election_id=(0, 10))
    assert info.value.code == Code.NOT_FOUND
    with pytest.raises(RpcFailure) as info:
        wrong_device.read(entity(table_entry=pb.TableEntry()))
    assert info.value.code == Code.NOT_FOUND
    wrong_device.close()
    with pytest.raises(RpcFailure) as info:
        client.write(pb.Update(type=INSERT, entity=entity(table_entry=te)),
                     atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    assert info.value.code == Code.UNIMPLEMENTED


# ====================================================================== tables


def test_exact_entry_lifecycle_and_forwarding(harness, client, p4i):
    match = {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})}
    te = p4i.table_entry(EXACT_T, match, p4i.action("MyIngress.forward", port=3),
                         controller_metadata=42, metadata=b"cookie")
    client.insert(entity(table_entry=te))
    (read,) = table_entries(client, te.table_id)
    assert read == te

    harness.inject(1, ethernet(MAC1))
    assert harness.wait_outputs(1)[0][0] == 3

    te2 = p4i.table_entry(EXACT_T, match, p4i.action("MyIngress.forward", port=4))
    client.modify(entity(table_entry=te2))
    (read,) = table_entries(client, te.table_id)
    assert read.action == te2.action and read.controller_metadata == 0
    # a MODIFY without action changes nothing
    client.modify(entity(table_entry=p4i.table_entry(EXACT_T, match)))
    assert table_entries(client, te.table_id)[0].action == te2.action
    # DELETE ignores the (here invalid) action
    bogus = p4i.table_entry(EXACT_T, match, pb.Action(action_id=12345))
    client.delete(entity(table_entry=bogus))
    assert table_entries(client, te.table_id) == []
    assert expect_error(client, DELETE, entity(table_entry=te)) == Code.NOT_FOUND


def test_lpm_entries(client, p4i):
    te = p4i.table_entry(LPM_T, {"hdr.ipv4.dstAddr": ("lpm", {"value": bytes([10, 0, 0, 0]),
                                                               "prefix_len": 8})},
                         p4i.action("MyIngress.forward", port=1))
    client.insert(entity(table_entry=te))
    (read,) = table_entries(client, te.table_id)
    assert read.match[0].lpm.value == bytes([10, 0, 0, 0]) and read.match[0].lpm.prefix_len == 8
    bad_bits = p4i.table_entry(LPM_T, {"hdr.ipv4.dstAddr": ("lpm", {"value": bytes([10, 0, 0, 1]),
                                                                     "prefix_len": 8})},
                               p4i.action("MyIngress.drop"))
    zero_len = p4i.table_entry(LPM_T, {"hdr.ipv4.dstAddr": ("lpm", {"value": b"\x00",
                                                                     "prefix_len": 0})},
                               p4i.action("MyIngress.drop"))
    defaultonly = p4i.table_entry(LPM_T, {"hdr.ipv4.dstAddr": ("lpm", {"value": b"\x0b\0\0\0",
                                                                        "prefix_len": 8})},
                                  p4i.action("NoAction"))
    assert expect_update_errors(
        client, *(pb.Update(type=INSERT, entity=entity(table_entry=t))
                  for t in (bad_bits, zero_len, defaultonly, te))) == [
        Code.INVALID_ARGUMENT, Code.INVALID_ARGUMENT, Code.PERMISSION_DENIED, Code.ALREADY_EXISTS]


def test_ternary_range_optional_entries_and_priorities(harness, client, p4i):
    acl = p4i.table_id(ACL_T)
    high = p4i.table_entry(ACL_T, {
        "hdr.ipv4.srcAddr": ("ternary", {"value": bytes([10, 0, 0, 0]),
                                         "mask": bytes([255, 0, 0, 0])}),
        "hdr.ipv4.ttl": ("range", {"low": b"\x10", "high": b"\x40"}),
        "hdr.ipv4.protocol": ("optional", {"value": b"\x11"}),
    }, p4i.action("MyIngress.forward", port=5), priority=20)
    low = p4i.table_entry(ACL_T, {}, p4i.action("MyIngress.forward", port=6), priority=10)
    client.write(*(pb.Update(type=INSERT, entity=entity(table_entry=t)) for t in (high, low)))
    read = table_entries(client, acl)
    assert sorted(e.priority for e in read) == [10, 20]
    assert next(e for e in read if e.priority == 20) == high
    assert [e.priority for e in table_entries(client, acl, priority=10)] == [10]
    # the higher priority entry wins; a packet it does not match falls through to the other
    harness.inject(1, ethernet(MAC1, payload=ipv4("10.1.2.3", "192.168.0.1", ttl=32)))
    harness.inject(1, ethernet(MAC1, payload=ipv4("10.1.2.3", "192.168.0.1", ttl=100)))
    assert [p for p, _ in harness.wait_outputs(2)] == [5, 6]

    masked = p4i.table_entry(ACL_T, {"hdr.ipv4.srcAddr": ("ternary", {
        "value": b"\x0a\x00\x00\x01", "mask": b"\xff\x00\x00\x00"})},
        p4i.action("MyIngress.drop"), priority=5)
    no_priority = p4i.table_entry(ACL_T, {}, p4i.action("MyIngress.drop"))
    full_range = p4i.table_entry(ACL_T, {"hdr.ipv4.ttl": ("range", {"low": b"\x00",
                                                                     "high": b"\xff"})},
                                 p4i.action("MyIngress.drop"), priority=5)
    inverted = p4i.table_entry(ACL_T, {"hdr.ipv4.ttl": ("range", {"low": b"\x09",
                                                                   "high": b"\x08"})},
                               p4i.action("MyIngress.drop"), priority=5)
    assert expect_update_errors(
        client, *(pb.Update(type=INSERT, entity=entity(table_entry=t))
                  for t in (masked, no_priority, full_range, inverted))) == [
        Code.INVALID_ARGUMENT] * 4


def test_wildcard_read_of_all_tables_includes_const_entries(client, p4i):
    te = p4i.table_entry(EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})},
                         p4i.action("MyIngress.drop"))
    client.insert(entity(table_entry=te))
    read = table_entries(client, 0)
    by_table = {e.table_id: e for e in read}
    assert by_table[te.table_id] == te
    const = by_table[p4i.table_id(CONST_T)]
    assert const.is_const and const.match[0].exact.value == b"\x88\xcc"
    defaults = table_entries(client, 0, is_default_action=True)
    assert len(defaults) == len(p4i.tables) and all(e.is_default_action for e in defaults)


def test_const_table_is_read_only(client, p4i):
    te = p4i.table_entry(CONST_T, {"hdr.ethernet.etherType": ("exact", {"value": b"\x08\x06"})},
                         p4i.action("MyIngress.drop"))
    existing = p4i.table_entry(CONST_T, {"hdr.ethernet.etherType": ("exact",
                                                                     {"value": b"\x88\xcc"})},
                               p4i.action("NoAction"))
    assert expect_update_errors(
        client, pb.Update(type=INSERT, entity=entity(table_entry=te)),
        pb.Update(type=MODIFY, entity=entity(table_entry=existing)),
        pb.Update(type=DELETE, entity=entity(table_entry=existing))) == [
        Code.PERMISSION_DENIED] * 3


def test_default_entries(harness, client, p4i):
    exact = p4i.table_id(EXACT_T)
    (default,) = table_entries(client, exact, is_default_action=True)
    assert default.action.action.action_id == p4i.action_id("NoAction")
    new_default = pb.TableEntry(table_id=exact, is_default_action=True)
    new_default.action.action.CopyFrom(p4i.action("MyIngress.forward", port=7))
    client.modify(entity(table_entry=new_default))
    assert table_entries(client, exact, is_default_action=True) == [new_default]
    harness.inject(1, ethernet(bytes.fromhex("0000000000ff"), ethertype=0x1234))
    assert harness.wait_outputs(1)[0][0] == 7
    # MODIFY without an action restores the program's default
    client.modify(entity(table_entry=pb.TableEntry(table_id=exact, is_default_action=True)))
    assert table_entries(client, exact, is_default_action=True) == [default]

    def default_of(table: str, action: pb.Action | None) -> pb.Entity:
        te = pb.TableEntry(table_id=p4i.table_id(table), is_default_action=True)
        if action is not None:
            te.action.action.CopyFrom(action)
        return entity(table_entry=te)

    with_match = default_of(EXACT_T, p4i.action("NoAction"))
    with_match.table_entry.match.add(field_id=1).exact.value = MAC1
    assert expect_update_errors(
        client,
        pb.Update(type=MODIFY, entity=default_of(CONST_T, p4i.action("MyIngress.drop"))),
        pb.Update(type=MODIFY, entity=default_of(ACL_T, p4i.action("MyIngress.to_cpu"))),
        pb.Update(type=INSERT, entity=default_of(EXACT_T, p4i.action("NoAction"))),
        pb.Update(type=MODIFY, entity=with_match),
    ) == [Code.PERMISSION_DENIED, Code.PERMISSION_DENIED, Code.INVALID_ARGUMENT,
          Code.INVALID_ARGUMENT]


def test_bytestrings_are_range_checked_and_read_back_canonical(client, p4i):
    padded = p4i.table_entry(EXACT_T, {"hdr.ethernet.dstAddr": ("exact",
                                                                 {"value": b"\x00" * 7 + b"\x05"})},
                             p4i.action("MyIngress.forward", port=b"\x00\x00\x02"))
    client.insert(entity(table_entry=padded))
    (read,) = table_entries(client, padded.table_id)
    assert read.match[0].exact.value == b"\x05"
    assert read.action.action.params[0].value == b"\x02"

    def exact_entry(value: bytes, port: bytes = b"\x01") -> pb.Entity:
        return entity(table_entry=p4i.table_entry(
            EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": value})},
            p4i.action("MyIngress.forward", port=port)))

    assert expect_update_errors(client, *(pb.Update(type=INSERT, entity=e) for e in (
        exact_entry(b"\x01" + b"\x00" * 6),          # 49 bits for a bit<48>
        exact_entry(b""),                            # empty
        exact_entry(MAC1, port=b"\x02\x00"),         # 10 bits for a bit<9>
    ))) == [Code.OUT_OF_RANGE, Code.OUT_OF_RANGE,
            Code.INVALID_ARGUMENT]   # action parameters: the spec's TableEntry section says so


def test_malformed_table_entries(client, p4i):
    good_action = p4i.action("MyIngress.forward", port=1)
    match = {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})}

    unknown_table = pb.TableEntry(table_id=0x02FFFFFF)
    unknown_field = p4i.table_entry(EXACT_T, match, good_action)
    unknown_field.match[0].field_id = 9
    missing_exact = p4i.table_entry(EXACT_T, {}, good_action)
    wrong_kind = p4i.table_entry(EXACT_T, {"hdr.ethernet.dstAddr": ("lpm", {
        "value": MAC1, "prefix_len": 48})}, good_action)
    foreign_action = p4i.table_entry(EXACT_T, match, p4i.action("MyIngress.learn"))
    missing_param = p4i.table_entry(EXACT_T, match, pb.Action(
        action_id=p4i.action_id("MyIngress.forward")))
    no_action = p4i.table_entry(EXACT_T, match)
    is_const = p4i.table_entry(EXACT_T, match, good_action, is_const=True)
    priority = p4i.table_entry(EXACT_T, match, good_action, priority=3)
    idle = p4i.table_entry(EXACT_T, match, good_action, idle_timeout_ns=10)
    counter_on_plain_table = p4i.table_entry(EXACT_T, match, good_action)
    counter_on_plain_table.counter_data.packet_count = 1
    codes = expect_update_errors(client, *(pb.Update(type=INSERT, entity=entity(table_entry=t))
                                           for t in (unknown_table, unknown_field,
                                                     missing_exact, wrong_kind, foreign_action,
                                                     missing_param, no_action, is_const,
                                                     priority, idle,
                                                     counter_on_plain_table)))
    assert codes == [Code.INVALID_ARGUMENT] * 11
    assert table_entries(client, p4i.table_id(EXACT_T)) == []


def test_mixed_batch_reports_each_update(client, p4i):
    def entry(mac: bytes) -> pb.Entity:
        return entity(table_entry=p4i.table_entry(
            EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": mac})}, p4i.action("NoAction")))

    ok, dup, other = entry(MAC1), entry(MAC1), entry(b"\x02")
    member = entity(action_profile_member=pb.ActionProfileMember(action_profile_id=1))
    with pytest.raises(RpcFailure) as info:
        client.write(pb.Update(type=INSERT, entity=ok), pb.Update(type=INSERT, entity=dup),
                     pb.Update(type=INSERT, entity=member), pb.Update(type=INSERT, entity=other),
                     pb.Update(type=INSERT, entity=pb.Entity()),
                     pb.Update(type=pb.Update.UNSPECIFIED, entity=other))
    assert info.value.code == Code.UNKNOWN
    assert info.value.codes == [Code.OK, Code.ALREADY_EXISTS, Code.UNIMPLEMENTED, Code.OK,
                                Code.INVALID_ARGUMENT, Code.INVALID_ARGUMENT]
    assert len(table_entries(client, p4i.table_id(EXACT_T))) == 2


def test_bad_action_parameters_are_refused_per_update_and_change_nothing(harness, client, p4i):
    fwd = p4i.action_id("MyIngress.forward")
    match = {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})}

    def insert(*params: tuple[int, bytes], mac: bytes = MAC1) -> pb.Update:
        action = pb.Action(action_id=fwd)
        for pid, value in params:
            action.params.add(param_id=pid, value=value)
        return pb.Update(type=INSERT, entity=entity(table_entry=p4i.table_entry(
            EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": mac})}, action)))

    client.insert(entity(table_entry=p4i.table_entry(EXACT_T, match,
                                                     p4i.action("MyIngress.forward", port=4))))
    before = table_entries(client, p4i.table_id(EXACT_T))
    modify = insert((1, b"\x02"), (1, b"\x03"))
    modify.type = pb.Update.MODIFY
    default = pb.Update(type=pb.Update.MODIFY, entity=entity(table_entry=pb.TableEntry(
        table_id=p4i.table_id(EXACT_T), is_default_action=True,
        action=pb.TableAction(action=pb.Action(action_id=fwd)))))
    with pytest.raises(RpcFailure) as info:
        client.write(insert(mac=b"\x02"),                          # port missing
                     insert((1, b"\x01"), (7, b"\x01"), mac=b"\x03"),  # unknown id 7
                     insert((1, b"\x01"), (1, b"\x02"), mac=b"\x04"),  # port twice
                     insert((1, b"\x02\x00"), mac=b"\x05"),         # 10 bits for bit<9>
                     insert((1, b""), mac=b"\x06"),                  # empty bytestring
                     modify,                                           # bad MODIFY
                     default,                                          # bad default entry
                     insert((1, b"\x07"), mac=b"\x07"))               # fine
    assert info.value.code == Code.UNKNOWN
    assert info.value.codes == [Code.INVALID_ARGUMENT] * 7 + [Code.OK]
    messages = [e.message for e in info.value.errors[:7]]
    where = "table MyIngress.exact_t: action MyIngress.forward: "
    assert messages[0] == where + "missing parameter(s) port (id 1)"
    assert messages[1] == where + "unknown parameter id 7 (ids: 1 port)"
    assert messages[2] == where + "parameter port (id 1) given twice"
    assert messages[3] == where + "parameter port: 0x0200 does not fit in 9 bits"
    assert messages[4] == where + "parameter port: empty byte string"
    assert messages[5] == where + "parameter port (id 1) given twice"
    assert messages[6] == where + "missing parameter(s) port (id 1)"
    assert all("\n" not in m for m in messages)
    # only the good update changed anything
    after = table_entries(client, p4i.table_id(EXACT_T))
    assert len(after) == len(before) + 1
    assert [e for e in after if e.match[0].exact.value != b"\x07"] == before
    (default_read,) = table_entries(client, p4i.table_id(EXACT_T), is_default_action=True)
    assert default_read.action.action.action_id == p4i.action_id("NoAction")


def test_action_to_proto_refuses_incomplete_calls(p4i, harness):
    # the encoder the controller's P4Runtime target uses: no silent 0, no dropped argument
    from p4control.errors import InvalidArgument
    from p4sim.p4info import build_p4info
    from p4control.p4runtime.convert import P4InfoIndex, action_to_proto, table_entry_to_proto
    from p4control.model import ActionCall, Exact, TableEntry

    info = harness.switch.info
    index = P4InfoIndex.build(build_p4info(info), info)
    table = next(t for t in index.tables.values() if t.name == EXACT_T)
    key = "hdr.ethernet.dstAddr"
    ok = table_entry_to_proto(index, table, TableEntry({key: Exact(1)},
                                                       ActionCall("MyIngress.forward", {"port": 3})))
    assert [(p.param_id, p.value) for p in ok.action.action.params] == [(1, b"\x03")]
    for call, msg in [
        (ActionCall("MyIngress.forward", {}), "action MyIngress.forward: missing parameter(s) port"),
        (ActionCall("MyIngress.forward", {"port": 1, "prot": 2}),
         "action MyIngress.forward: unknown parameter(s) prot (parameters: 1 port)"),
        (ActionCall("MyIngress.forward", {"port": 512}),
         "action MyIngress.forward: parameter port = 512 does not fit in bit<9>"),
        (ActionCall("MyIngress.forward", {"port": -1}),
         "action MyIngress.forward: parameter port = -1 does not fit in bit<9>"),
        (ActionCall("MyIngress.nosuch", {}), "action MyIngress.nosuch is not in the P4Info"),
        (ActionCall("MyIngress.learn", {}), "action MyIngress.learn is not an action of the table"),
    ]:
        with pytest.raises(InvalidArgument) as ei:
            table_entry_to_proto(index, table, TableEntry({key: Exact(1)}, call))
        assert str(ei.value) == f"table {EXACT_T}: {msg}"
    with pytest.raises(InvalidArgument, match="^action MyIngress.forward: missing"):
        action_to_proto(index, ActionCall("MyIngress.forward", {}))
    with pytest.raises(KeyError, match="has no parameter"):
        p4i.action("MyIngress.forward", port=1, prot=2)


def test_read_errors_are_reported_per_request(client, p4i):
    with pytest.raises(RpcFailure) as info:
        client.read(entity(table_entry=pb.TableEntry(table_id=p4i.table_id(EXACT_T))),
                    entity(table_entry=pb.TableEntry(table_id=0x02000001)),
                    pb.Entity(),
                    entity(value_set_entry=pb.ValueSetEntry(value_set_id=1)))
    assert info.value.code == Code.UNKNOWN
    assert info.value.codes == [Code.OK, Code.INVALID_ARGUMENT, Code.INVALID_ARGUMENT,
                                Code.UNIMPLEMENTED]


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


# ====================================================================== pipeline config


def test_set_forwarding_pipeline_config(harness, client, p4i, source):
    te = entity(table_entry=p4i.table_entry(
        EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})},
        p4i.action("MyIngress.drop")))
    client.insert(te)
    old_switch = harness.switch

    # VERIFY changes nothing
    client.set_config(SET.VERIFY, p4i.msg, source)
    assert harness.switch is old_switch and len(table_entries(client)) == 2

    # RECONCILE_AND_COMMIT with the same program keeps the forwarding state
    client.set_config(SET.RECONCILE_AND_COMMIT, p4i.msg, source, cookie=7)
    assert harness.switch is old_switch and len(table_entries(client)) == 2
    assert client.get_config(GET.COOKIE_ONLY).config.cookie.cookie == 7

    # VERIFY_AND_COMMIT loads a fresh switch: the state is gone, the const entry is back
    client.set_config(SET.VERIFY_AND_COMMIT, p4i.msg, source, cookie=8)
    assert harness.switch is not old_switch
    assert [e.table_id for e in table_entries(client)] == [p4i.table_id(CONST_T)]
    assert client.get_config().config.cookie.cookie == 8

    # VERIFY_AND_SAVE + COMMIT
    client.set_config(SET.VERIFY_AND_SAVE, p4i.msg, source, cookie=9)
    assert client.get_config(GET.COOKIE_ONLY).config.cookie.cookie == 8
    client.set_config(SET.COMMIT)
    assert client.get_config(GET.COOKIE_ONLY).config.cookie.cookie == 9

    # the packet path follows the new switch
    client.insert(entity(table_entry=p4i.table_entry(
        EXACT_T, {"hdr.ethernet.dstAddr": ("exact", {"value": MAC1})},
        p4i.action("MyIngress.forward", port=9))))
    harness.inject(1, ethernet(MAC1))
    assert harness.wait_outputs(1)[0][0] == 9


def test_set_forwarding_pipeline_config_errors(client, p4i, source):
    def expect(code: Code, *args, **kw) -> None:
        with pytest.raises(RpcFailure) as info:
            client.set_config(*args, **kw)
        assert info.value.code == code, info.value

    renamed = type(p4i.msg)()
    renamed.CopyFrom(p4i.msg)
    renamed.tables[0].preamble.id += 1
    expect(Code.INVALID_ARGUMENT, SET.VERIFY_AND_COMMIT, renamed, source)
    expect(Code.INVALID_ARGUMENT, SET.VERIFY_AND_COMMIT, p4i.msg, b"this is not P4 {")
    expect(Code.INVALID_ARGUMENT, SET.VERIFY_AND_COMMIT, p4i.msg, b"\xff\xfe")
    expect(Code.INVALID_ARGUMENT, SET.VERIFY_AND_COMMIT)  # no config
    expect(Code.NOT_FOUND, SET.COMMIT)                     # nothing saved
    expect(Code.INVALID_ARGUMENT, SET.COMMIT, p4i.msg, source)
    expect(Code.INVALID_ARGUMENT, SET.UNSPECIFIED, p4i.msg, source)
    other = source.replace(b"size = 512;", b"size = 256;")
    assert other != source
    expect(Code.UNIMPLEMENTED, SET.RECONCILE_AND_COMMIT, p4i.msg, other)
    # the running pipeline is untouched by all of the above
    assert client.get_config(GET.DEVICE_CONFIG_AND_COOKIE).config.p4_device_config == source


def test_server_without_pipeline(source):
    server = P4RuntimeServer(None, DEVICE_ID, loader=loader)
    port = server.start("127.0.0.1:0")
    c = Client(f"127.0.0.1:{port}")
    try:
        assert not c.get_config().HasField("config")
        assert c.arbitrate((0, 1)).status.code == 0
        for call in (lambda: c.read(entity(table_entry=pb.TableEntry())),
                     lambda: c.write(pb.Update(type=INSERT, entity=entity(
                         table_entry=pb.TableEntry(table_id=1))))):
            with pytest.raises(RpcFailure) as info:
                call()
            assert info.value.code == Code.FAILED_PRECONDITION
        from p4sim.p4info import build_p4info
        p4info = build_p4info(load_program(str(PROGRAM)).info)
        c.set_config(SET.VERIFY_AND_COMMIT, p4info, source, cookie=1)
        assert server.switch is not None
        assert len(c.read(entity(table_entry=pb.TableEntry()))) == 1  # the const entry
    finally:
        c.close()
        server.stop()


# ====================================================================== interoperability

FINSY_CLIENT = r'''
import asyncio, sys
from pathlib import Path
import finsy as fy

address, p4info, program = sys.argv[1:4]

async def main():
    opts = fy.SwitchOptions(p4info=Path(p4info), p4blob=Path(program), initial_election_id=20)
    async with fy.Switch("sw", address, opts) as sw:
        assert sw.is_primary
        await sw.write([+fy.P4TableEntry(
            "MyIngress.exact_t", match=fy.P4TableMatch({"hdr.ethernet.dstAddr": 0x020000000001}),
            action=fy.P4TableAction("MyIngress.forward", port=3))])
        async for entry in sw.read(fy.P4TableEntry("MyIngress.exact_t")):
            print("ENTRY", sorted(entry.match.values()), entry.action.name,
                  entry.action.args)
        await sw.write([fy.P4RegisterEntry("MyIngress.pkt_count", index=1, data=77)])
        async for reg in sw.read(fy.P4RegisterEntry("MyIngress.pkt_count", index=1)):
            print("REGISTER", reg.data)

asyncio.run(main())
'''


def test_finsy_client_interoperates(harness, tmp_path):
    """finsy (an independent P4Runtime client, with its own bindings, hence its own process)
    loads the pipeline from our text P4Info and the P4 source, then writes and reads."""
    if importlib.util.find_spec("finsy") is None:  # never import it here: clashing bindings
        pytest.skip("finsy is not installed")
    from p4sim.p4info import build_p4info, format_p4info

    p4info = tmp_path / "p4rt_test.p4info.txtpb"
    p4info.write_bytes(format_p4info(build_p4info(harness.switch.info), "text"))
    before = harness.switch
    env = dict(os.environ)
    env.pop("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", None)  # finsy brings modern bindings
    proc = subprocess.run([sys.executable, "-c", FINSY_CLIENT, harness.address, str(p4info),
                           str(PROGRAM)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"ENTRY [{0x020000000001}] forward {{'port': 3}}" in proc.stdout, proc.stdout
    assert "REGISTER 77" in proc.stdout
    assert harness.switch is not before  # finsy installed the pipeline (new cookie)


# ====================================================================== conversion helpers

from p4control.errors import OutOfRange  # noqa: E402
from p4control.p4runtime.convert import (bytes_to_int, int_to_bytes, pack_header,  # noqa: E402
                                         signed_bytes_to_int, signed_int_to_bytes, unpack_header)


# The examples of the P4Runtime spec's "Bytestrings" section.
@pytest.mark.parametrize("signed,width,data,value", [
    (False, 8, b"\x63", 99), (False, 16, b"\x00\x63", 99), (False, 16, b"\x63", 99),
    (False, 16, b"\x30\x64", 12388), (False, 16, b"\x00\x30\x64", 12388),
    (False, 12, b"\x00\x63", 99), (False, 12, b"\x00\x00\x63", 99),
    (True, 8, b"\x63", 99), (True, 8, b"\x9d", -99), (True, 8, b"\xff\x9d", -99),
    (True, 12, b"\xfd\x1d", -739), (True, 16, b"\x00\x00", 0), (True, 16, b"\x00", 0),
])
def test_valid_bytestrings(signed, width, data, value):
    decode = signed_bytes_to_int if signed else bytes_to_int
    assert decode(data, width) == value
    encoded = (signed_int_to_bytes if signed else int_to_bytes)(value)
    assert decode(encoded, width) == value and len(encoded) <= len(data)


@pytest.mark.parametrize("signed,width,data", [
    (False, 8, b"\x01\x63"), (False, 8, b""), (False, 16, b"\x01\x00\x63"),
    (False, 12, b"\x10\x63"), (False, 12, b"\x01\x00\x63"), (False, 12, b"\x00\x40\x63"),
    (True, 8, b"\x00\x9d"), (True, 12, b"\x8d\x1d"), (True, 16, b""),
])
def test_invalid_bytestrings(signed, width, data):
    with pytest.raises(OutOfRange):
        (signed_bytes_to_int if signed else bytes_to_int)(data, width)


def test_controller_header_packing():
    data = pack_header([(9, 0x1FF), (7, 0)]) + b"payload"
    assert data[:2] == b"\xff\x80"
    assert unpack_header([9, 7], data) == ([0x1FF, 0], b"payload")
    assert pack_header([(3, 5)]) == b"\xa0"  # padded to a byte
