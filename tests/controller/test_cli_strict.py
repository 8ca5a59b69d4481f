"""CLI strictness: --opt keys and types are checked per scheme, JSON-shape errors name the file
and the JSON path, and no bad input ends in a traceback."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.__main__ import SCHEME_OPTIONS, main

ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def files(tmp_path, capsys):
    t, j = tmp_path / "T.json", tmp_path / "J.json"
    assert run(capsys, "topo", "leaf-spine", "--spines", "2", "--leaves", "3", "--hosts", "6",
               "--seed", "1", "-o", str(t))[0] == 0
    assert run(capsys, "job", "--topology", str(t), "--model", "resnet50", "--workers",
               "all-but-ps", "--ps", "last:1", "--submodels", "2", "-o", str(j))[0] == 0
    return tmp_path, t, j


@pytest.mark.parametrize("scheme, opt, message", [
    ("goat", "nonsense=1", "--opt nonsense=1: scheme goat has no option 'nonsense' (options: "
                           "backend, candidates, k_rule, objective, repair, seed, verbose)"),
    ("goat", "repair=maybe", "--opt repair=maybe: repair takes true | false"),
    ("goat", "repair=1", "--opt repair=1: repair takes true | false"),
    ("goat", "k_rule=round", "--opt k_rule=round: k_rule takes floor | ceil"),
    ("goat-ilp", "time_limit=-5", "--opt time_limit=-5: time_limit takes a number > 0"),
    ("goat-ilp", "solver=gurobi", "--opt solver=gurobi: solver takes highs | cbc"),
    ("k-sgd", "k=two", "--opt k=two: k takes an integer >= 1"),
    ("k-sgd", "k=1.5", "--opt k=1.5: k takes an integer >= 1"),
    ("atp", "seed=x", "--opt seed=x: seed takes an integer"),
    ("atp", "k=2", "--opt k=2: scheme atp has no option 'k' (options: seed, verbose)"),
    ("aro", "beta=[1]", "--opt beta=[1]: beta takes a JSON object of numbers or null"),
    ("inart", "aggregation=all", "--opt aggregation=all: aggregation takes any | tor | none"),
])
def test_bad_scheme_options_are_one_line(files, capsys, scheme, opt, message):
    _, t, j = files
    rc, out, err = run(capsys, "plan", scheme, "--topology", str(t), "--job", str(j), "--opt", opt)
    assert rc == 2 and out == ""
    assert err == message + "\n"


def test_good_scheme_options_are_passed_on(files, capsys):
    tmp, t, j = files
    p = tmp / "p.json"
    rc, _, err = run(capsys, "plan", "goat", "--topology", str(t), "--job", str(j),
                     "--opt", "repair=false", "--opt", "k_rule=ceil", "--opt", "objective=eq4",
                     "-o", str(p))
    assert rc == 0, err
    assert json.loads(p.read_text())["scheme"] == "goat"


def test_every_listed_option_has_a_description_and_a_check():
    for scheme, options in SCHEME_OPTIONS.items():
        assert {"seed", "verbose"} <= set(options), scheme
        for key, (what, check) in options.items():
            assert what and callable(check), (scheme, key)


def _write(path: Path, obj) -> str:
    path.write_text(json.dumps(obj))
    return str(path)


def test_json_shape_errors_name_file_and_path(files, capsys):
    tmp, t, j = files
    job = json.loads(Path(j).read_text())
    topo = json.loads(Path(t).read_text())
    cases = [
        ("jobs.json", [[job]], "job", "jobs[0]: expected an object, got a list"),
        ("jobs.json", [job, {**job, "submodels": [["a", 1]]}], "job",
         "jobs[1].submodels[0]: expected an object, got a list"),
        ("job.json", {**job, "workers": "h1"}, "job", "job.workers: expected a list, got a string"),
        ("job.json", 3, "job", "job: expected an object, got a number"),
        ("topo.json", {**topo, "nodes": {"a": 1}}, "topology",
         "topology.nodes: expected a list, got an object"),
        ("topo.json", {**topo, "links": [[]]}, "topology",
         "topology.links[0]: expected an object, got a list"),
    ]
    for name, obj, which, message in cases:
        path = _write(tmp / name, obj)
        argv = ["plan", "atp", "--topology", path if which == "topology" else str(t),
                "--job", path if which == "job" else str(j)]
        rc, _, err = run(capsys, *argv)
        assert rc == 2 and err == f"{path}: {message}\n", (name, err)


def test_plan_shape_errors(files, capsys):
    tmp, t, j = files
    p = tmp / "plan.json"
    assert run(capsys, "plan", "atp", "--topology", str(t), "--job", str(j), "-o", str(p))[0] == 0
    d = json.loads(p.read_text())
    task = next(iter(d["paths"]))
    d["paths"][task] = [["h1", "s1"]]
    bad = _write(tmp / "bad_plan.json", d)
    rc, _, err = run(capsys, "check", bad, "--topology", str(t), "--job", str(j))
    assert rc == 2 and err == f"{bad}: plan.paths.{task}: expected an object, got a list\n"
    rc, _, err = run(capsys, "check", _write(tmp / "l.json", []), "--topology", str(t),
                     "--job", str(j))
    assert rc == 2 and err == f"{tmp / 'l.json'}: plan: expected an object, got a list\n"


def test_job_append_checks_the_existing_file(files, capsys):
    tmp, t, _ = files
    out = _write(tmp / "list.json", [{"name": "x"}, []])
    rc, _, err = run(capsys, "job", "--topology", str(t), "--model", "resnet50", "--append",
                     "-o", out)
    assert rc == 2 and err == f"{out}: jobs[1]: expected an object, got a list\n"


@pytest.mark.parametrize("content", ["", "{", "[1, 2]", "null", '{"nodes": null}', "\xff"])
def test_no_traceback_for_malformed_files(files, content):
    # through the real entry point: one line on stderr, exit 2, never a traceback
    tmp, t, j = files
    bad = tmp / "bad.json"
    bad.write_bytes(content.encode("latin-1"))
    for argv in (["plan", "atp", "--topology", str(bad), "--job", str(j)],
                 ["plan", "atp", "--topology", str(t), "--job", str(bad)],
                 ["check", str(bad), "--topology", str(t), "--job", str(j)]):
        proc = subprocess.run([sys.executable, "-m", "controller", *argv], cwd=ROOT,
                              capture_output=True, text=True)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith(str(bad)), proc.stderr
