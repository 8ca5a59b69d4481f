"""End-to-end tests of the P4Runtime server: a real compiled switch, the server on 127.0.0.1
and a gRPC client (tests/p4rt/client.py) on the ``p4runtime`` package bindings in this process.
Here: the service basics, arbitration, pipeline configuration, interoperability and the
conversion helpers; tables in test_p4runtime_server_tables.py, externs, the PRE and packet I/O in
test_p4runtime_server_externs.py (the shared harness: tests/p4rt/server_harness.py).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

import p4sim.p4runtime  # noqa: F401  (protobuf backend first)

from p4.v1 import p4runtime_pb2 as pb  # noqa: E402
from p4rt.client import Client, RpcFailure, entity  # noqa: E402
from p4rt.server_harness import (ACL_T, CONST_T, DEVICE_ID, EXACT_T, GET, INSERT, LPM_T, MAC1, PROGRAM,  # noqa: E402
                                 SET, Code, client, ethernet, harness, loader, p4i, source,  # noqa: F401
                                 table_entries)

from p4sim import load_program  # noqa: E402
from p4sim.p4runtime import P4RuntimeServer  # noqa: E402


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
