"""CLI: topo/job/plan/check round trip, exit codes, one-line errors for bad input files."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def files(tmp_path, capsys):
    t, j = tmp_path / "T.json", tmp_path / "J.json"
    assert run(capsys, "topo", "leaf-spine", "--spines", "2", "--leaves", "3", "--hosts", "6",
               "--programmable-fraction", "0.5", "--seed", "1", "-o", str(t))[0] == 0
    assert run(capsys, "job", "--topology", str(t), "--model", "resnet50", "--workers", "all-but-ps",
               "--ps", "last:1", "--submodels", "3", "-o", str(j))[0] == 0
    return tmp_path, t, j


@pytest.mark.parametrize("argv, switches, hosts", [
    (["leaf-spine", "--spines", "10", "--leaves", "10", "--hosts", "50"], 20, 50),
    (["leaf-spine", "--spines", "24", "--leaves", "24", "--hosts-per-leaf", "24", "--pipelines", "4"], 48, 576),
    (["fat-tree", "--k", "8", "--hosts-per-edge", "6", "--programmable-fraction", "0.2"], 80, 192),
    (["goat-testbed"], 3, 9),
    (["inart-testbed"], 2, 8),
    (["inart-fattree", "--heterogeneous"], 45, 54),
])
def test_topo_kinds(capsys, tmp_path, argv, switches, hosts):
    out = tmp_path / "t.json"
    assert run(capsys, "topo", *argv, "-o", str(out))[0] == 0
    d = json.loads(out.read_text())
    kinds = [n["kind"] for n in d["nodes"]]
    assert kinds.count("switch") == switches and kinds.count("host") == hosts


def test_topo_to_stdout_and_bad_values(capsys):
    rc, out, _ = run(capsys, "topo", "goat-testbed")
    assert rc == 0 and json.loads(out)["name"] == "goat-testbed"
    rc, _, err = run(capsys, "topo", "fat-tree", "--k", "5")
    assert rc == 2 and err.count("\n") == 1 and "even" in err


def test_plan_and_check_round_trip(files, capsys):
    tmp, t, j = files
    for scheme in ("geryon", "atp", "switchml", "esa", "grid", "aggtree", "lbmm", "k-sgd", "random"):
        p = tmp / f"{scheme}.json"
        assert run(capsys, "plan", scheme, "--topology", str(t), "--job", str(j), "--seed", "2", "-o", str(p))[0] == 0
        rc, out, _ = run(capsys, "check", str(p), "--topology", str(t), "--job", str(j))
        assert rc == 0 and out.strip().endswith("OK"), out
    rc, out, _ = run(capsys, "check", str(tmp / "atp.json"), "--topology", str(t), "--job", str(j), "--json")
    rep = json.loads(out)
    assert rc == 0 and rep["ok"] and rep["objective_name"] == "gina_cost" and "gina_cost" in rep["metrics"]


def test_check_fails_on_violation(files, capsys):
    tmp, t, j = files
    p = tmp / "p.json"
    run(capsys, "plan", "geryon", "--topology", str(t), "--job", str(j), "-o", str(p))
    d = json.loads(p.read_text())
    d["objective"] += 1
    first = next(iter(d["paths"]))
    w = next(iter(d["paths"][first]))
    d["paths"][first][w] = d["paths"][first][w][:1] + d["paths"][first][w][2:]     # skip a hop
    p.write_text(json.dumps(d))
    rc, out, _ = run(capsys, "check", str(p), "--topology", str(t), "--job", str(j))
    assert rc == 1 and "VIOLATION no_link" in out and "VIOLATION objective_mismatch" in out


def test_options_and_unknown_scheme(files, capsys):
    tmp, t, j = files
    rc, out, _ = run(capsys, "plan", "k-sgd", "--topology", str(t), "--job", str(j), "--opt", "k=2")
    assert rc == 0 and json.loads(out)["extra"]["k"] == {"resnet50-1": 2}
    rc, _, err = run(capsys, "plan", "nope", "--topology", str(t), "--job", str(j))
    assert rc == 2 and err.startswith("scheme nope is not available") and err.count("\n") == 1
    rc, _, err = run(capsys, "plan", "k-sgd", "--topology", str(t), "--job", str(j), "--opt", "k=99")
    assert rc == 2 and "k-sgd" in err
    rc, _, err = run(capsys, "plan", "geryon", "--topology", str(t), "--job", str(j), "--opt", "novalue")
    assert rc == 2 and "KEY=VALUE" in err


def test_job_append(files, capsys):
    tmp, t, _ = files
    jl = tmp / "jobs.json"
    for model in ("resnet18", "vgg16"):
        rc, _, err = run(capsys, "job", "--topology", str(t), "--model", model, "--workers", "2",
                         "--ps", "random:1", "--append", "-o", str(jl))
        assert rc == 0, err
    jobs = json.loads(jl.read_text())
    assert [x["job_id"] for x in jobs] == [1, 2]
    assert not set(jobs[0]["workers"] + jobs[0]["ps"]) & set(jobs[1]["workers"] + jobs[1]["ps"])
    rc, _, err = run(capsys, "job", "--topology", str(t), "--model", "gpt5", "-o", str(tmp / "x.json"))
    assert rc == 2 and "unknown model" in err


BAD_TOPOLOGIES = {
    "missing.json": None,
    "syntax.json": '{"nodes": [',
    "nofield.json": '{"name": "x", "links": []}',
    "list.json": '[1, 2]',
    "badlink.json": '{"nodes": [{"name": "a", "kind": "host"}], "links": [{"a": "a", "b": "z", "capacity_gbps": 1}]}',
    "badcap.json": '{"nodes": [{"name": "a", "kind": "host"}, {"name": "s", "kind": "switch"}],'
                   ' "links": [{"a": "a", "b": "s", "capacity_gbps": "fast"}]}',
    "badkind.json": '{"nodes": [{"name": "a", "kind": "router"}], "links": []}',
    "extra.json": '{"nodes": [{"name": "a", "kind": "host", "colour": 1}], "links": []}',
    "badpipe.json": '{"nodes": [{"name": "s", "kind": "switch", "port_pipe": {"x": 0}}], "links": []}',
}


@pytest.mark.parametrize("name", sorted(BAD_TOPOLOGIES))
def test_bad_topology_file(files, capsys, name):
    tmp, _, j = files
    bad = tmp / name
    if BAD_TOPOLOGIES[name] is not None:
        bad.write_text(BAD_TOPOLOGIES[name])
    for argv in (["plan", "geryon", "--topology", str(bad), "--job", str(j)],
                 ["job", "--topology", str(bad), "--model", "resnet50"]):
        rc, out, err = run(capsys, *argv)
        assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith(str(bad) + ":"), err


@pytest.mark.parametrize("content, words", [
    ('{"name": "j"}', "missing field"),
    ('[]', "no job"),
    ('{"name": "j", "workers": ["h1", "zz"], "ps": ["h6"], "submodels": [{"name": "g", "size_mb": 1}]}',
     "zz is not a host"),
    ('{"name": "j", "workers": ["h1"], "ps": ["h6"], "submodels": [{"name": "g", "size_mb": -1}]}', "size_mb"),
    ('{"name": "j", "workers": ["h1"], "ps": [], "submodels": [{"name": "g", "size_mb": 1}]}', "ps must be"),
    ('{"name": "j", "workers": ["h1"], "ps": ["h1"], "submodels": [{"name": "g", "size_mb": 1}]}', "both worker"),
])
def test_bad_job_file(files, capsys, content, words):
    tmp, t, _ = files
    bad = tmp / "badjob.json"
    bad.write_text(content)
    rc, _, err = run(capsys, "plan", "geryon", "--topology", str(t), "--job", str(bad))
    assert rc == 2 and err.startswith(str(bad) + ":") and words in err and err.count("\n") == 1


@pytest.mark.parametrize("content", ['[1]', '{"scheme": "x", "colour": 2}', '{"jobs": []'])
def test_bad_plan_file(files, capsys, content):
    tmp, t, j = files
    bad = tmp / "badplan.json"
    bad.write_text(content)
    rc, _, err = run(capsys, "check", str(bad), "--topology", str(t), "--job", str(j))
    assert rc == 2 and err.startswith(str(bad) + ":") and err.count("\n") == 1


def test_module_entry_point(files):
    tmp, t, j = files
    r = subprocess.run([sys.executable, "-m", "controller", "check", str(tmp / "nothere.json"),
                        "--topology", str(t), "--job", str(j)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "nothere.json" in r.stderr
    r = subprocess.run([sys.executable, "-m", "controller", "schemes"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 and "geryon" in r.stdout.split()
