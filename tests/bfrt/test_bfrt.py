"""BfRuntime: p4sim's server (``p4sim serve --arch tna --bfrt-addr``) driven by the controller's
BfRt back end (controller.bfrt_target), and ``p4sim bfrt-json``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from controller.bfrt_target import BfRtProgram, BfRtTarget, BfRtTargetError
from controller.ina_tables import InaTables
from hostlib.protocol import Flags, InaHeader, build_frame, parse_frame
from p4sim import Switch, load_program
from p4sim.bfrt.server import BfRtServer
from dataplane.ina_harness import PROGRAMS, PS_IP, lanes_of, program, worker_ip
from netns import ServeProcess

ROOT = Path(__file__).resolve().parents[2]
TNA = PROGRAMS["tna"][0]
PAIRS = ROOT / "tests" / "p4tna" / "pair_register.p4"


@pytest.fixture
def server():
    srv = BfRtServer(Switch(program("tna")))
    port = srv.start("127.0.0.1:0")
    yield srv, f"127.0.0.1:{port}"
    srv.stop()


def _install_one_job(t: InaTables, workers: int = 2) -> None:
    t.add_node(1, pool_base=0, pool_size=64)
    t.add_job(1)
    t.add_lpm(PS_IP, 32, 10)
    for w in range(workers):
        t.add_lpm(worker_ip(w), 32, w + 1)
    t.add_result_group(1, [(w + 1, worker_ip(w), w) for w in range(workers)])
    t.level_to_multicast(1, 1, group=1)


def _frame(w: int, k: int) -> bytes:
    return build_frame(InaHeader.for_worker(1, 1, 0, 5, w, 2), np.full(k, w + 1, np.int32),
                       src_ip=worker_ip(w), dst_ip=PS_IP)


def test_bfrt_json_names_every_table_and_register_as_bf_p4c_does(tmp_path) -> None:
    out = tmp_path / "bf-rt.json"
    r = subprocess.run([sys.executable, "-m", "p4sim", "bfrt-json", str(TNA), "-o", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    by_name = {t["name"]: t for t in doc["tables"]}
    info = program("tna").info
    assert {f"pipe.{n}" for n in info.tables} <= set(by_name)
    assert {f"pipe.{n}" for n in info.registers} <= set(by_name)
    node = by_name["pipe.InaIngress.ina_node"]
    assert node["table_type"] == "MatchAction_Direct"
    assert [k["name"] for k in node["key"]] == [k.name for k in info.tables["InaIngress.ina_node"].keys]
    lane = next(t for n, t in by_name.items() if n.endswith(".lane_0"))
    assert lane["table_type"] == "Register"
    assert [k["name"] for k in lane["key"]] == ["$REGISTER_INDEX"]
    ids = [t["id"] for t in doc["tables"]]
    assert len(ids) == len(set(ids))


def test_bfrt_json_of_a_bad_program_is_one_line(tmp_path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\n#include <tna.p4>\ncontrol C() { apply { x = 1; } }\n")
    r = subprocess.run([sys.executable, "-m", "p4sim", "bfrt-json", str(bad)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "bad.p4:" in r.stderr


def test_plan_installed_over_bfrt_aggregates_exactly_and_registers_read_back(server) -> None:
    srv, address = server
    k = lanes_of("tna")
    with BfRtTarget(address) as target:
        tables = InaTables(target)
        _install_one_job(tables)
        with pytest.raises(BfRtTargetError, match="ina_job") as err:
            tables.add_job(1)
        assert "\n" not in str(err.value)
        assert [e.action.args for e in target.table_entries(tables._table("ina_node"))] == [
            {"pool_base": 0, "pool_mask": 63}]
        sw = srv.switch
        assert sw.process(1, _frame(0, k)) == []
        lane0 = next(n for n in target.info.registers if n.endswith(".lane_0"))   # lanes 0 and k/2
        partial = [target.register_read(lane0, i) for i in range(64)]
        assert sorted(v for v in partial if any(v)) == [(1, 1)]   # worker 0's values, one aggregator
        out = [(p, parse_frame(d, k)) for p, d in sw.process(2, _frame(1, k))]
        assert sorted(p for p, _ in out) == [1, 2]
        assert all(Flags.RESULT in pkt.header.flags and np.all(pkt.lanes == 3) for _, pkt in out)
        target.register_write(lane0, 7, (12345, -6))
        # BfRt carries a register field as bytes: the client reads int<32> -6 back unsigned
        assert target.register_read(lane0, 7) == (12345, 2**32 - 6)
        assert sw.register_read(lane0.split(".", 1)[1], 7) == (12345, -6)
        target.register_reset(lane0)
        assert target.register_read(lane0, 7) == (0, 0)


def test_ports_and_multicast_groups_through_the_fixed_tables(server) -> None:
    srv, address = server
    with BfRtTarget(address) as target:
        target.port_add(4, "BF_SPEED_100G", "BF_FEC_TYP_RS")
        got = target.port_get(4)
        assert got["$SPEED"] == "BF_SPEED_100G" and got["$FEC"] == "BF_FEC_TYP_RS"
        assert got["$PORT_ENABLE"] is True
        with pytest.raises(BfRtTargetError, match="BF_SPEED_7G"):
            target.port_add(5, "BF_SPEED_7G")
        InaTables(target).add_result_group(9, [(1, worker_ip(0), 0), (3, worker_ip(2), 2)], rid_base=40)
        assert sorted(target.pre.get_group(9)) == sorted(srv.switch.pre.get_group(9))
        target.port_delete(4)
        with pytest.raises(BfRtTargetError):
            target.port_get(4)


def test_a_failed_batch_changes_nothing_and_names_the_update(server) -> None:
    srv, address = server
    with BfRtTarget(address) as target:
        tables = InaTables(target)
        with pytest.raises(BfRtTargetError) as err:
            with target.batch():
                tables.add_job(2)
                tables.add_job(3, preemption=True)
                tables.add_job(2)                     # duplicate: the batch is rolled back
        assert "\n" not in str(err.value) and "ina_job" in str(err.value)
        assert srv.switch.table_entries("InaIngress.ina_job") == []


def test_paired_registers_have_one_data_field_per_member(tmp_path) -> None:
    srv = BfRtServer(Switch(load_program(str(PAIRS), arch="tna")))
    port = srv.start("127.0.0.1:0")
    try:
        with BfRtTarget(f"127.0.0.1:{port}") as target:
            name = next(n for n in target.info.registers if n.endswith(".pairs"))
            assert target.register_read(name, 2) == (100, 0)   # the Register's initial value
            target.register_write(name, 2, (7, 9))
            assert target.register_read(name, 2) == (7, 9)
            assert target.register_read_pipes(name, 2) == [(7, 9)]
    finally:
        srv.stop()


def test_a_client_must_name_the_device_and_the_program(server) -> None:
    _, address = server
    with pytest.raises(BfRtTargetError, match="device 5"):
        BfRtTarget(address, device_id=5)
    with pytest.raises(BfRtTargetError, match="no program 'other'"):
        BfRtTarget(address, p4_name="other")


def test_p4sim_serve_bfrt_survives_a_restart_once_the_plan_is_reinstalled() -> None:
    argv = [sys.executable, "-m", "p4sim", "serve", str(TNA), "--arch", "tna",
            "--device-id", "0", "--bfrt-addr", "127.0.0.1:0"]

    def start() -> tuple[ServeProcess, str]:
        proc = ServeProcess(argv)
        line = proc.wait_ready(120)
        host_port = line.split(" bfrt ", 1)[1].split()[0]
        return proc, host_port

    proc, address = start()
    try:
        with BfRtTarget(address) as target:
            _install_one_job(InaTables(target))
            assert len(target.table_entries(InaTables(target)._table("ina_job"))) == 1
    finally:
        proc.stop()
    proc, address = start()                          # a restarted switch is empty
    try:
        with BfRtTarget(address) as target:
            tables = InaTables(target)
            assert target.table_entries(tables._table("ina_job")) == []
            _install_one_job(tables)
            assert len(target.table_entries(tables._table("ina_job"))) == 1
    finally:
        proc.stop()


def test_serve_refuses_bfrt_for_a_v1model_program() -> None:
    r = subprocess.run([sys.executable, "-m", "p4sim", "serve", str(PROGRAMS["v1model"][0]),
                        "--bfrt-addr", "127.0.0.1:0"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == "p4sim serve: error: --bfrt-addr serves TNA programs: add --arch tna"


def test_bfrt_json_compare_reports_what_a_client_would_see_differently(tmp_path) -> None:
    from p4sim.bfrt.bfrt_json import compare, pipeline_name, program_bfrt_info

    prog = program("tna")
    ours = program_bfrt_info(prog.info, pipeline_name(prog.source))
    theirs = json.loads(json.dumps(ours))
    for t in theirs["tables"]:
        t["id"] += 1                                     # ids may differ: not a difference
    assert compare(ours, theirs) == []
    node = next(t for t in theirs["tables"] if t["name"].endswith("ina_node"))
    node["key"][0]["type"]["width"] += 1
    theirs["tables"] = [t for t in theirs["tables"] if not t["name"].endswith(".lane_1")]
    diffs = compare(ours, theirs)
    assert len(diffs) == 2
    assert any("lane_1: only in p4sim" in d for d in diffs)
    assert "table pipe.InaIngress.ina_node: key hdr.ina.node_id: type: width: 16 vs 17" in diffs
    path = tmp_path / "theirs.json"
    path.write_text(json.dumps(theirs))
    r = subprocess.run([sys.executable, "-m", "p4sim", "bfrt-json", str(TNA), "--compare", str(path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    # the command line writes every table of the program (hashes, snapshot...): those are
    # only in p4sim's here, besides the two differences above
    assert r.returncode == 1 and "table pipe.InaIngress.ina_node: key hdr.ina.node_id" in r.stdout


def test_bfrt_json_compare_sees_flags_annotations_order_and_dependencies() -> None:
    """What a client walking the schema would see: a key's ``mandatory``, a register field's
    annotation, the order of data fields, a property only one side has, ``depends_on`` by name."""
    from p4sim.bfrt.bfrt_json import compare, program_bfrt_info

    ours = program_bfrt_info(program("tna"))
    theirs = json.loads(json.dumps(ours))
    by_name = {t["name"]: t for t in theirs["tables"]}
    by_name["pipe.InaIngress.ina_node"]["key"][0]["mandatory"] = True
    by_name["pipe.InaIngress.lanes.lane_0"]["data"][0]["singleton"]["annotations"] = []
    cfg = by_name["pipe.snapshot.cfg"]
    cfg["data"][0], cfg["data"][1] = cfg["data"][1], cfg["data"][0]
    by_name["pipe.InaIngress.ina_job"]["is_const_table"] = False
    algorithm = by_name["pipe.InaIngress.agg_hash.algorithm"]
    algorithm["depends_on"] = [by_name["pipe.InaIngress.agg_hash.compute"]["id"]]
    diffs = compare(ours, theirs)
    assert len(diffs) == 5, diffs
    assert "table pipe.InaIngress.ina_node: key hdr.ina.node_id: mandatory: false vs true" in diffs
    assert any(d.startswith("table pipe.InaIngress.lanes.lane_0: field InaIngress.lanes.lane_0.lo: "
                            "singleton: annotations: [{") for d in diffs)
    assert any(d.startswith("table pipe.snapshot.cfg: order of data") for d in diffs)
    assert "table pipe.InaIngress.ina_job: is_const_table: only in the compiler's bf-rt.json (false)" in diffs
    assert ('table pipe.InaIngress.agg_hash.algorithm: depends_on: ["pipe.InaIngress.agg_hash.configure"] '
            'vs ["pipe.InaIngress.agg_hash.compute"]') in diffs


COMPILER_BFRT = Path(__file__).resolve().parents[2] / "p4src" / "tna" / "ina.bf-rt.json"


@pytest.mark.skipif(not COMPILER_BFRT.exists(),
                    reason="p4src/tna/ina.bf-rt.json is written by docker/check_with_p4c.sh with "
                           "a Tofino compiler (bf-p4c or the open p4c-barefoot)")
def test_bfrt_json_equals_the_tofino_compilers() -> None:
    """p4sim's bf-rt.json for the INA program against the one the Tofino compiler wrote for it:
    every table (hashes, snapshot, port metadata, debug counters too), key, action, field and
    property; only ids aside. p4sim even computes bf-p4c's ids, snapshot tables' aside."""
    from p4sim.bfrt.bfrt_json import compare, program_bfrt_info
    ours = program_bfrt_info(load_program(str(COMPILER_BFRT.parent / "ina.p4"), arch="tna"))
    theirs = json.loads(COMPILER_BFRT.read_text())
    assert compare(ours, theirs) == []
    ids = {t["name"]: t["id"] for t in ours["tables"]}
    assert [t["name"] for t in theirs["tables"] if ids[t["name"]] != t["id"]] == [
        t["name"] for t in theirs["tables"] if t["name"].startswith("pipe.snapshot.")]


def test_serve_bfrt_json_serves_the_compilers_schema_as_compiled(tmp_path) -> None:
    """``serve --bfrt-json``: bf-p4c's ids and annotations are what a client gets, the plan
    installs through them, and a table p4sim only lists answers UNIMPLEMENTED."""
    import grpc

    from p4control.bfrt.proto import pb

    compiled = json.loads(COMPILER_BFRT.read_text())
    proc = ServeProcess([sys.executable, "-m", "p4sim", "serve", str(TNA), "--arch", "tna",
                         "--device-id", "0", "--bfrt-addr", "127.0.0.1:0",
                         "--bfrt-json", str(COMPILER_BFRT)])
    try:
        address = proc.wait_ready(120).split(" bfrt ", 1)[1].split()[0]
        with BfRtTarget(address) as target:
            served = {t.name: t.id for t in target.bfrt.tables()}
            assert {t["name"]: t["id"] for t in compiled["tables"]}.items() <= served.items()
            _install_one_job(InaTables(target))
            assert len(target.table_entries(InaTables(target)._table("ina_job"))) == 1
            snap = next(t for t in compiled["tables"] if t["name"] == "pipe.snapshot.cfg")
            req = pb.ReadRequest(client_id=target.client_id, target=pb.TargetDevice(device_id=0))
            req.entities.add().table_entry.table_id = snap["id"]
            with pytest.raises(grpc.RpcError) as err:
                list(target.stub.Read(req, timeout=30))
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
            assert "pipe.snapshot.cfg: SnapshotCfg tables are not supported" in err.value.details()
    finally:
        proc.stop()


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["tables"][0]["key"].pop(0), "table pipe.InaIngress.aggregator.ina_pass_kind: key fields differ"),
    (lambda d: d.update(tables=[t for t in d["tables"] if not t["name"].endswith(".ina_job")]),
     "the program's table pipe.InaIngress.ina_job is not in it"),
    (lambda d: d["tables"].append(dict(d["tables"][0], name="pipe.InaIngress.nope", id=7)),
     "table pipe.InaIngress.nope is not in the program"),
])
def test_serve_refuses_a_bfrt_json_that_is_not_the_programs(tmp_path, edit, message) -> None:
    doc = json.loads(COMPILER_BFRT.read_text())
    edit(doc)
    path = tmp_path / "bf-rt.json"
    path.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "p4sim", "serve", str(TNA), "--arch", "tna",
                        "--bfrt-addr", "127.0.0.1:0", "--bfrt-json", str(path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [r.stderr.strip()]       # one line
    assert r.stderr.startswith(f"p4sim serve: error: --bfrt-json {path}: ") and message in r.stderr


def test_a_pushed_program_is_loaded_and_bound_under_its_name() -> None:
    """BfRtTarget loads a program given as bf-rt.json + profile binary (p4sim compiles it above
    the controller), then binds it: the switch is replaced and its registers are named."""
    from p4sim.bfrt.bfrt_json import pipeline_name, program_bfrt_info

    prog = load_program(str(PAIRS), arch="tna")
    srv = BfRtServer(Switch(prog))
    port = srv.start("127.0.0.1:0")
    try:
        before = srv.switch
        pipe = pipeline_name(prog.source)
        push = BfRtProgram("pairs2", program_bfrt_info(prog.info, pipe), pipe, prog.source.encode())
        with BfRtTarget(f"127.0.0.1:{port}", push_program=push) as target:
            assert target.p4_name == "pairs2"
            assert sorted(target.info.registers) == ["pipe.Ig.pairs"]
        assert srv.switch is not before
    finally:
        srv.stop()
