"""The Tofino SDE's own Python client (``bfrt_grpc.client``, unchanged) against
``p4sim serve --arch tna --bfrt-addr``: a session as a user scripts a Wedge100BF switch.

It runs wherever the SDE's Python packages are importable, e.g.::

    PYTHONPATH=$SDE_INSTALL/lib/python3.X/site-packages/tofino:$SDE_INSTALL/lib/python3.X/site-packages/tofino/bfrt_grpc \\
        python -m pytest tests/bfrt/test_sde_client.py

(the second entry because the SDE's generated ``bfruntime_pb2_grpc`` imports ``bfruntime_pb2``
as a top-level module). Nothing of the SDE is part of this project.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

# p4sim's protocol modules need protobuf's pure-Python backend, chosen before protobuf loads:
# the SDE's client would load it first otherwise, and break the other test modules of a run
import p4sim.p4runtime  # noqa: F401,E402

try:
    import bfrt_grpc.client as gc  # type: ignore[import-not-found]
except ImportError:
    pytest.skip("the SDE's bfrt_grpc package is not importable", allow_module_level=True)

from netns import ServeProcess

ROOT = Path(__file__).resolve().parents[2]
TNA = ROOT / "p4src" / "tna" / "ina.p4"
P4_NAME = "ina"


@pytest.fixture(scope="module")
def switch() -> Iterator[str]:
    proc = ServeProcess([sys.executable, "-m", "p4sim", "serve", str(TNA), "--arch", "tna",
                         "--device-id", "0", "--bfrt-addr", "127.0.0.1:0"])
    try:
        line = proc.wait_ready(120)
        yield line.split(" bfrt ", 1)[1].split()[0]
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def session(switch: str) -> Iterator[tuple[Any, Any, Any]]:
    """Subscribe, bind and fetch bfrt_info, as every SDE script begins."""
    iface = gc.ClientInterface(switch, client_id=0, device_id=0, num_tries=3)
    iface.bind_pipeline_config(P4_NAME)
    info = iface.bfrt_info_get(P4_NAME)
    yield iface, info, gc.Target(device_id=0, pipe_id=0xFFFF)
    iface.tear_down_stream()


def _entries(table: Any, target: Any, keys: list[Any] | None = None) -> list[tuple[dict, dict]]:
    return [(d.to_dict(), k.to_dict()) for d, k in table.entry_get(target, keys, {"from_hw": True})]


def test_bfrt_info_lists_the_programs_tables_and_the_devices(session) -> None:
    _, info, _ = session
    assert info.p4_name_get() == P4_NAME
    names = set(info.table_name_list_get())
    for want in ("pipe.InaIngress.ina_job", "pipe.InaIngress.forwarding.ipv4_lpm",
                 "pipe.InaIngress.aggregator.owner_hi", "pipe.InaIngress.agg_hash.compute",
                 "pipe.snapshot.ingress_trigger", "pipe.InaIngressParser.$PORT_METADATA",
                 "tbl_dbg_counter", "$PORT", "$pre.mgid", "$pre.node"):
        assert want in names, want
    # the client also resolves unique suffixes, as scripts use them
    assert info.table_get("ina_job").info.name_get() == "pipe.InaIngress.ina_job"


def test_exact_table_add_read_back_modify_delete(session) -> None:
    _, info, target = session
    job = info.table_get("pipe.InaIngress.ina_job")
    key = job.make_key([gc.KeyTuple("hdr.ina.job_id", 7)])
    job.entry_add(target, [key], [job.make_data([gc.DataTuple("preemption", 1),
                                                 gc.DataTuple("hold_until_result", 0)],
                                                "InaIngress.job_config")])
    [(data, k)] = _entries(job, target, [key])
    assert data["action_name"] == "InaIngress.job_config"
    assert (data["preemption"], data["hold_until_result"]) == (1, 0)
    assert k["hdr.ina.job_id"]["value"] == 7
    job.entry_mod(target, [key], [job.make_data([gc.DataTuple("preemption", 0),
                                                 gc.DataTuple("hold_until_result", 1)],
                                                "InaIngress.job_config")])
    [(data, _)] = _entries(job, target, [key])
    assert (data["preemption"], data["hold_until_result"]) == (0, 1)
    job.entry_del(target, [key])
    assert _entries(job, target) == []


def test_lpm_and_ternary_tables_add_and_read_back(session) -> None:
    _, info, target = session
    lpm = info.table_get("pipe.InaIngress.forwarding.ipv4_lpm")
    lpm.entry_add(target, [lpm.make_key([gc.KeyTuple("hdr.ipv4.dst_addr", 0x0A000000, prefix_len=8)])],
                  [lpm.make_data([gc.DataTuple("port", 3), gc.DataTuple("dmac", 0x020000000003)],
                                 "InaIngress.forwarding.set_nhop")])
    [(data, key)] = _entries(lpm, target)
    assert key["hdr.ipv4.dst_addr"] == {"value": 0x0A000000, "prefix_len": 8}
    assert (data["action_name"], data["port"], data["dmac"]) == ("InaIngress.forwarding.set_nhop", 3, 0x020000000003)
    route = info.table_get("pipe.InaIngress.forwarding.ina_route")
    rkey = route.make_key([gc.KeyTuple("hdr.ina.job_id", 1),
                           gc.KeyTuple("hdr.ina.node_id", 0x0100, mask=0xFF00),
                           gc.KeyTuple("$MATCH_PRIORITY", 10)])
    route.entry_add(target, [rkey], [route.make_data([gc.DataTuple("port", 5), gc.DataTuple("dmac", 9)],
                                                     "InaIngress.forwarding.route")])
    [(data, key)] = _entries(route, target, [rkey])
    assert key["hdr.ina.node_id"] == {"value": 0x0100, "mask": 0xFF00}
    assert key["$MATCH_PRIORITY"]["value"] == 10 and data["port"] == 5
    lpm.entry_del(target)                         # no key: clears the table
    route.entry_del(target)
    assert _entries(lpm, target) == [] and _entries(route, target) == []


def test_batch_wildcard_read_usage_and_clear(session) -> None:
    _, info, target = session
    level = info.table_get("pipe.InaIngress.ina_level")
    keys = [level.make_key([gc.KeyTuple("hdr.ina.job_id", 2), gc.KeyTuple("hdr.ina.node_id", n)])
            for n in range(1, 6)]
    datas = [level.make_data([gc.DataTuple("group", 40 + n)], "InaIngress.to_multicast")
             for n in range(1, 6)]
    level.entry_add(target, keys, datas)          # one WriteRequest, five updates
    got = sorted((k["hdr.ina.node_id"]["value"], d["group"]) for d, k in _entries(level, target))
    assert got == [(n, 40 + n) for n in range(1, 6)]
    assert next(level.usage_get(target)) == 5
    level.entry_del(target)
    assert next(level.usage_get(target)) == 0


def test_duplicate_add_is_refused_with_the_sdes_error(session) -> None:
    _, info, target = session
    node = info.table_get("pipe.InaIngress.ina_node")
    key = node.make_key([gc.KeyTuple("hdr.ina.node_id", 3), gc.KeyTuple("meta.pipe", 0)])
    data = node.make_data([gc.DataTuple("pool_base", 0), gc.DataTuple("pool_mask", 63)],
                          "InaIngress.aggregate")
    node.entry_add(target, [key], [data])
    with pytest.raises(gc.BfruntimeReadWriteRpcException) as err:
        node.entry_add(target, [key], [data])
    assert "ALREADY_EXISTS" in str(err.value.sub_errors_get()) or "ALREADY_EXISTS" in str(err.value)
    assert len(_entries(node, target)) == 1
    node.entry_del(target, [key])


def test_default_entry_set_get_reset(session) -> None:
    _, info, target = session
    smac = info.table_get("pipe.InaEgress.smac")
    smac.default_entry_set(target, smac.make_data([gc.DataTuple("mac", 0x0200000000AA)],
                                                  "InaEgress.set_smac"))
    [(data, _)] = [(d.to_dict(), k) for d, k in smac.default_entry_get(target)]
    assert (data["action_name"], data["mac"], data["is_default_entry"]) == ("InaEgress.set_smac", 0x0200000000AA, True)
    smac.default_entry_reset(target)
    [(data, _)] = [(d.to_dict(), k) for d, k in smac.default_entry_get(target)]
    assert data["action_name"] == "NoAction"


def test_registers_read_from_hw_give_one_value_per_pipe_as_a_list(session) -> None:
    _, info, target = session
    reg = info.table_get("pipe.InaIngress.aggregator.owner_hi")
    field = "InaIngress.aggregator.owner_hi.f1"
    key = reg.make_key([gc.KeyTuple("$REGISTER_INDEX", 17)])
    reg.entry_add(target, [key], [reg.make_data([gc.DataTuple(field, 0xDEADBEEF)])])
    [(data, k)] = _entries(reg, target, [key])
    assert k["$REGISTER_INDEX"]["value"] == 17
    assert isinstance(data[field], list) and data[field][0] == 0xDEADBEEF   # p4sim: one pipe
    reg.entry_del(target)                          # no key: every cell back to its initial value
    [(data, _)] = _entries(reg, target, [key])
    assert data[field] == [0]


def test_a_paired_lane_register_reads_both_halves_per_pipe(session) -> None:
    """K = 32 lanes in 16 paired registers: lane_0 holds lane 0 (`lo`) and lane 16 (`hi`)."""
    _, info, target = session
    reg = info.table_get("pipe.InaIngress.lanes.lane_0")
    lo, hi = "InaIngress.lanes.lane_0.lo", "InaIngress.lanes.lane_0.hi"
    key = reg.make_key([gc.KeyTuple("$REGISTER_INDEX", 5)])
    reg.entry_add(target, [key], [reg.make_data([gc.DataTuple(lo, 7), gc.DataTuple(hi, 0x7FFFFFFF)])])
    [(data, _)] = _entries(reg, target, [key])
    assert (data[lo], data[hi]) == ([7], [0x7FFFFFFF])
    reg.entry_del(target)
    [(data, _)] = _entries(reg, target, [key])
    assert (data[lo], data[hi]) == ([0], [0])


def test_pre_multicast_nodes_and_groups(session) -> None:
    _, info, target = session
    node = info.table_get("$pre.node")
    mgid = info.table_get("$pre.mgid")
    node.entry_add(target, [node.make_key([gc.KeyTuple("$MULTICAST_NODE_ID", 1001)])],
                   [node.make_data([gc.DataTuple("$MULTICAST_RID", 7),
                                    gc.DataTuple("$MULTICAST_LAG_ID", int_arr_val=[]),
                                    gc.DataTuple("$DEV_PORT", int_arr_val=[128, 136])])])
    mgid.entry_add(target, [mgid.make_key([gc.KeyTuple("$MGID", 12)])],
                   [mgid.make_data([gc.DataTuple("$MULTICAST_NODE_ID", int_arr_val=[1001]),
                                    gc.DataTuple("$MULTICAST_NODE_L1_XID_VALID", bool_arr_val=[False]),
                                    gc.DataTuple("$MULTICAST_NODE_L1_XID", int_arr_val=[0])])])
    [(data, _)] = _entries(node, target)
    assert (data["$MULTICAST_RID"], data["$DEV_PORT"]) == (7, [128, 136])
    [(data, key)] = _entries(mgid, target)
    assert key["$MGID"]["value"] == 12 and data["$MULTICAST_NODE_ID"] == [1001]
    mgid.entry_del(target, [mgid.make_key([gc.KeyTuple("$MGID", 12)])])
    node.entry_del(target, [node.make_key([gc.KeyTuple("$MULTICAST_NODE_ID", 1001)])])
    assert _entries(mgid, target) == [] and _entries(node, target) == []


def test_port_add_read_and_delete(session) -> None:
    _, info, target = session
    port = info.table_get("$PORT")
    key = port.make_key([gc.KeyTuple("$DEV_PORT", 128)])
    port.entry_add(target, [key], [port.make_data([gc.DataTuple("$SPEED", str_val="BF_SPEED_100G"),
                                                   gc.DataTuple("$FEC", str_val="BF_FEC_TYP_RS"),
                                                   gc.DataTuple("$PORT_ENABLE", bool_val=True)])])
    [(data, _)] = _entries(port, target, [key])
    assert (data["$SPEED"], data["$FEC"], data["$PORT_ENABLE"]) == ("BF_SPEED_100G", "BF_FEC_TYP_RS", True)
    with pytest.raises(gc.BfruntimeReadWriteRpcException):
        port.entry_add(target, [port.make_key([gc.KeyTuple("$DEV_PORT", 129)])],
                       [port.make_data([gc.DataTuple("$SPEED", str_val="BF_SPEED_7G")])])
    port.entry_del(target, [key])


def test_tables_p4sim_only_lists_answer_not_supported(session) -> None:
    _, info, target = session
    cfg = info.table_get("pipe.snapshot.cfg")
    with pytest.raises(gc.BfruntimeReadWriteRpcException) as err:
        _entries(cfg, target)
    assert "not supported" in str(err.value.grpc_error_get().details())
