"""End-to-end tests of the P4Runtime server (see test_p4runtime_server.py): table entries --
exact, LPM, ternary/range/optional, const and default entries, bytestring checks and per-update
errors.
"""
from __future__ import annotations

import pytest

import p4sim.p4runtime  # noqa: F401  (protobuf backend first)

from p4.v1 import p4runtime_pb2 as pb  # noqa: E402
from p4rt.client import RpcFailure, entity  # noqa: E402
from p4rt.server_harness import (ACL_T, CONST_T, DELETE, EXACT_T, INSERT, LPM_T, MAC1, MODIFY, Code,  # noqa: E402
                                 client, ethernet, expect_error, expect_update_errors, harness, ipv4,  # noqa: F401
                                 p4i, table_entries)


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
