"""A testbed file and ``python -m controller deploy | status | reset`` against real switches:
``p4sim serve`` with BfRuntime (TNA) and with P4Runtime (v1model), restarted in between."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from controller.bfrt_target import BfRtTarget
from controller.model import ModelError
from controller import testbed as testbed_file
from netns import ServeProcess

ROOT = Path(__file__).resolve().parents[2]
TNA = ROOT / "p4src" / "tna" / "ina.p4"
V1 = ROOT / "p4src" / "v1model" / "ina.p4"


def _testbed(tna_addr: str, v1_addr: str) -> dict:
    return {
        "name": "two-switch-lab",
        "switches": [
            {"name": "tof1", "arch": "tna", "address": tna_addr, "device_id": 0, "switch_id": 1,
             "memory_mb": 4,
             "ports": [{"port": "1/0", "dev_port": 128, "speed": "100G", "fec": "rs"},
                       {"port": "2/0", "dev_port": 136, "speed": "100G", "fec": "rs"},
                       {"port": "31/0", "dev_port": 60, "speed": "100G", "fec": "rs"}]},
            {"name": "bmv", "arch": "v1model", "address": v1_addr, "device_id": 1,
             "switch_id": 2, "memory_mb": 4,
             "ports": [{"port": "1/0", "dev_port": 1, "speed": "10G"},
                       {"port": "2/0", "dev_port": 2, "speed": "10G"},
                       {"port": "3/0", "dev_port": 3, "speed": "10G"}]}],
        "hosts": [
            {"name": "w1", "ip": "10.1.0.1", "mac": "0c:42:a1:00:00:01", "switch": "tof1",
             "port": "1/0", "role": "worker"},
            {"name": "w2", "ip": "10.1.0.2", "mac": "0c:42:a1:00:00:02", "switch": "tof1",
             "port": "2/0", "role": "worker"},
            {"name": "w3", "ip": "10.1.0.3", "mac": "0c:42:a1:00:00:03", "switch": "bmv",
             "port": "2/0", "role": "worker"},
            {"name": "ps", "ip": "10.1.0.9", "mac": "0c:42:a1:00:00:09", "switch": "bmv",
             "port": "3/0", "role": "ps"}],
        "links": [{"a": "tof1", "a_port": "31/0", "b": "bmv", "b_port": "1/0"}],
    }


def _controller(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def _serve(program: Path, *extra: str) -> tuple[ServeProcess, str]:
    proc = ServeProcess([sys.executable, "-m", "p4sim", "serve", str(program), *extra])
    line = proc.wait_ready(120)
    kind = "bfrt" if "--bfrt-addr" in extra else "grpc"
    return proc, line.split(f" {kind} ", 1)[1].split()[0]


@pytest.fixture
def lab(tmp_path) -> Iterator[dict]:
    procs: dict[str, ServeProcess] = {}
    try:
        procs["tof1"], tna_addr = _serve(TNA, "--arch", "tna", "--device-id", "0",
                                         "--bfrt-addr", "127.0.0.1:0")
        procs["bmv"], v1_addr = _serve(V1, "--device-id", "1", "--grpc-addr", "127.0.0.1:0")
        net = tmp_path / "lab.json"
        net.write_text(json.dumps(_testbed(tna_addr, v1_addr)))
        topo, job, plan = tmp_path / "topo.json", tmp_path / "job.json", tmp_path / "plan.json"
        r = _controller("topo", "testbed", str(net), "-o", str(topo))
        assert r.returncode == 0, r.stderr
        job.write_text(json.dumps([
            {"name": "j1", "workers": ["w1", "w2", "w3"], "ps": ["ps"], "job_id": 1,
             "submodels": [{"name": "g", "size_mb": 0.01}]}]))
        r = _controller("plan", "atp", "--topology", str(topo), "--job", str(job), "-o", str(plan))
        assert r.returncode == 0, r.stderr
        yield {"procs": procs, "net": net, "job": job, "plan": plan, "tna_addr": tna_addr,
               "args": ["--network", str(net), "--plan", str(plan), "--job", str(job)]}
    finally:
        for p in procs.values():
            p.stop()


def _lines(out: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in out.strip().splitlines())


def test_deploy_is_idempotent_and_restores_a_restarted_switch(lab) -> None:
    r = _controller("deploy", *lab["args"])
    assert r.returncode == 0, r.stdout + r.stderr
    first = _lines(r.stdout)
    assert "3 ports configured" in first["tof1"] and "to insert" in first["tof1"]
    assert "to insert" in first["bmv"]
    with BfRtTarget(lab["tna_addr"]) as t:
        assert t.port_get(136)["$SPEED"] == "BF_SPEED_100G"
        assert t.port_get(136)["$FEC"] == "BF_FEC_TYP_REED_SOLOMON"
        jobs = [e for n in t.info.tables if n.endswith("ina_job") for e in t.table_entries(n)]
        assert [e.action.args for e in jobs] == [{"preemption": 0, "hold_until_result": 1}]   # ATP

    r = _controller("deploy", *lab["args"])                     # nothing left to write
    assert r.returncode == 0 and all(v.endswith("in sync") for v in _lines(r.stdout).values()), r.stdout

    lab["procs"]["tof1"].stop()                                  # the Tofino restarts empty
    proc, addr = _serve(TNA, "--arch", "tna", "--device-id", "0", "--bfrt-addr", lab["tna_addr"])
    lab["procs"]["tof1"] = proc
    r = _controller("status", *lab["args"])
    assert r.returncode == 1 and "0 entries" in _lines(r.stdout)["tof1"], r.stdout
    assert _lines(r.stdout)["bmv"].endswith("in sync")
    r = _controller("deploy", *lab["args"])
    assert r.returncode == 0 and "3 ports configured" in _lines(r.stdout)["tof1"], r.stdout
    assert _lines(r.stdout)["bmv"].endswith("in sync")
    r = _controller("status", *lab["args"])
    assert r.returncode == 0 and all(v.endswith("in sync") for v in _lines(r.stdout).values())


def test_reset_removes_the_job_and_status_without_a_plan_counts(lab) -> None:
    assert _controller("deploy", *lab["args"]).returncode == 0
    r = _controller("reset", "j1", *lab["args"])
    assert r.returncode == 0, r.stdout + r.stderr
    r = _controller("status", "--network", str(lab["net"]))
    assert r.returncode == 0
    assert all(v.startswith("0 entries, 0 multicast groups") for v in _lines(r.stdout).values()), r.stdout
    r = _controller("reset", "nope", *lab["args"])
    assert r.returncode == 2 and "no job named 'nope'" in r.stderr


def test_an_unreachable_switch_is_reported_and_the_others_are_done(lab, tmp_path) -> None:
    doc = json.loads(lab["net"].read_text())
    doc["switches"][0]["address"] = "127.0.0.1:1"                 # nothing listens there
    net = tmp_path / "partly-down.json"
    net.write_text(json.dumps(doc))
    r = _controller("deploy", "--network", str(net), "--plan", str(lab["plan"]),
                    "--job", str(lab["job"]), "--timeout", "2")
    assert r.returncode == 1
    lines = _lines(r.stdout)
    assert lines["tof1"].startswith("unreachable") and "\n" not in lines["tof1"]
    assert "to insert" in lines["bmv"]


def test_a_v1model_switch_named_by_a_p4info_file(lab, tmp_path) -> None:
    """The controller deploys from a P4Info file as ``p4sim p4info`` (or p4c) writes it, as it does
    from the P4Info the switch runs; a file that is not one is that switch's one-line error."""
    p4info = tmp_path / "ina.p4info.txt"
    r = subprocess.run([sys.executable, "-m", "p4sim", "p4info", str(V1), "-o", str(p4info)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(lab["net"].read_text())
    doc["switches"][1]["p4info"] = p4info.name                    # relative to the testbed file
    lab["net"].write_text(json.dumps(doc))
    r = _controller("deploy", *lab["args"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "to insert" in _lines(r.stdout)["bmv"]
    p4info.write_text("not a P4Info")
    r = _controller("status", "--network", str(lab["net"]))
    assert r.returncode == 1
    assert f"{p4info}: not a P4Info (text, binary or JSON)" in _lines(r.stdout)["bmv"]


@pytest.mark.parametrize("change, message", [
    (lambda d: d["switches"][0].update(arch="psa"), "switches[0].arch: 'psa' is not one of tna, v1model"),
    (lambda d: d["switches"][0]["ports"][0].update(speed="7G"), "switches[0].ports[0].speed: '7G'"),
    (lambda d: d["switches"][0]["ports"][1].update(dev_port=128), "switches[0].ports[1].dev_port: 128 is also port 1/0"),
    (lambda d: d["hosts"][1].update(port="1/0"), "hosts[1]: port 1/0 of tof1 is already used by host w1"),
    (lambda d: d["hosts"][0].update(mac="xx"), "hosts[0].mac: 'xx' is not a MAC address"),
    (lambda d: d["links"][0].update(b="nowhere"), "links[0]: unknown switch 'nowhere'"),
    (lambda d: d["switches"][1].update(switch_id=1), "switches[1].switch_id: 1 is also the id of switch 'tof1'"),
    (lambda d: d.update(extra=1), "$: unknown field 'extra'"),
    (lambda d: d["switches"][0].update(p4info="x.txt"), "switches[0].p4info: only for v1model switches"),
])
def test_bad_testbed_files_are_one_line_errors(change, message) -> None:
    doc = _testbed("127.0.0.1:1", "127.0.0.1:2")
    change(doc)
    with pytest.raises(ModelError) as err:
        testbed_file.testbed_from_dict(doc, "lab.json")
    assert str(err.value) .startswith("lab.json: ") and message in str(err.value), str(err.value)


def test_the_example_testbed_loads_and_gives_a_plannable_topology() -> None:
    tb = testbed_file.load_testbed(ROOT / "docs" / "testbed-wedge100bf.json")
    topo = tb.topology()
    assert all(s.arch == "tna" for s in tb.switches.values())
    for link in topo.links:
        assert link.capacity_gbps > 0
    assert topo.meta["addresses"]


def test_bad_json_reports_line_and_column(tmp_path) -> None:
    bad = tmp_path / "lab.json"
    bad.write_text('{"name": "x",\n "switches": [,]}')
    r = _controller("topo", "testbed", str(bad))
    assert r.returncode == 2 and r.stderr.strip().startswith(f"{bad}:2:")
