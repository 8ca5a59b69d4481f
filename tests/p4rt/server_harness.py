"""The P4Runtime server under test, wired like the runner wires it: a real compiled switch
(tests/p4rt/p4rt_test.p4), the server on 127.0.0.1 and a gRPC client (tests/p4rt/client.py),
with the fixtures and helpers the test_p4runtime_server*.py modules share.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

import p4sim.p4runtime  # noqa: F401  (protobuf backend first)

import grpc  # noqa: E402
from p4.v1 import p4runtime_pb2 as pb  # noqa: E402
from p4rt.client import Client, RpcFailure, entity  # noqa: E402

from p4sim import Switch, load_program  # noqa: E402
from p4sim.p4runtime import P4RuntimeServer  # noqa: E402

PROGRAM = Path(__file__).parent / "p4rt_test.p4"
COUNTERS_METERS_PROGRAM = Path(__file__).parent / "counters_meters.p4"
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
