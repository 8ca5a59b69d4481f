"""Acceptance tests of the compiler: every tests/p4/NAME.p4 runs NAME.stf with no failure, and
every tests/p4/errors/*.p4 is rejected at load time with the message its first line names
(``// expect-error: SUBSTRING``)."""
from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from p4sim.errors import CompileError

P4_DIR = Path(__file__).parent / "p4"
PROGRAMS = sorted(P4_DIR.glob("*.p4"))
REJECTED = sorted((P4_DIR / "errors").glob("*.p4"))
STF_ERRORS = sorted((Path(__file__).parent / "stf_errors").glob("*.stf"))


def test_corpus_is_complete() -> None:
    assert len(PROGRAMS) >= 10 and REJECTED
    for prog in PROGRAMS:
        assert prog.with_suffix(".stf").is_file(), f"{prog.name} has no .stf"


@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_stf(prog: Path) -> None:
    from p4sim.stf.runner import run_stf

    out = io.StringIO()
    passed, failed = run_stf(str(prog), str(prog.with_suffix(".stf")), out=out)
    text = out.getvalue()
    assert failed == 0, text
    assert passed > 0, text
    assert text.splitlines()[-1] == f"{passed} passed, {failed} failed"


def _expected_error(prog: Path) -> str:
    first = prog.read_text().splitlines()[0]
    m = re.match(r"//\s*expect-error:\s*(.*\S)", first)
    assert m, f"{prog.name}: line 1 must be '// expect-error: SUBSTRING'"
    return m.group(1)


@pytest.mark.parametrize("prog", REJECTED, ids=[p.stem for p in REJECTED])
def test_rejected(prog: Path) -> None:
    from p4sim import load_program

    expected = _expected_error(prog)
    with pytest.raises(CompileError) as ei:
        load_program(str(prog))
    err = ei.value
    assert expected.lower() in err.message.lower(), str(err)
    assert err.line is not None and err.line > 1, str(err)
    if err.file is not None:
        assert Path(err.file).name == prog.name, str(err)


# ------------------------------------------------------------------------------------- CLI

def test_cli_pass(capsys: pytest.CaptureFixture[str]) -> None:
    from p4sim.stf.runner import main

    prog = P4_DIR / "control_flow.p4"
    assert main(["stf", str(prog), str(prog.with_suffix(".stf"))]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("passed, 0 failed")


def test_cli_failure_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from p4sim.stf.runner import main

    stf = tmp_path / "wrong.stf"
    stf.write_text("packet 0 01 05 03 00 00\nexpect 1 01 FF\n")
    assert main([str(P4_DIR / "control_flow.p4"), str(stf)]) == 1
    out = capsys.readouterr().out
    assert f"{stf}:2:" in out
    assert out.splitlines()[-1] == "0 passed, 1 failed"


def test_cli_bad_stf(capsys: pytest.CaptureFixture[str]) -> None:
    from p4sim.stf.runner import main

    bad = STF_ERRORS[0]
    assert main([str(P4_DIR / "control_flow.p4"), str(bad)]) == 2
    err = capsys.readouterr().err
    assert re.match(rf"{re.escape(str(bad))}:\d+:\d+: ", err), err


def test_cli_bad_program(capsys: pytest.CaptureFixture[str]) -> None:
    from p4sim.stf.runner import main

    prog = P4_DIR / "errors" / "unknown_identifier.p4"
    assert main([str(prog), str(P4_DIR / "control_flow.stf")]) == 2
    err = capsys.readouterr().err
    assert re.match(rf"{re.escape(str(prog))}:\d+:\d+: ", err), err


def test_cli_unknown_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from p4sim.stf.runner import main

    stf = tmp_path / "t.stf"
    stf.write_text("\nadd no_such_table x:1 a()\n")
    assert main([str(P4_DIR / "control_flow.p4"), str(stf)]) == 2
    assert f"{stf}:2:" in capsys.readouterr().err
