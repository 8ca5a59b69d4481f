"""p4control, the control-plane vocabulary: P4Info files as p4c and p4sim write them, and the
ProgramInfo a client reads from a P4Info (what the controller names tables and actions by)."""
from __future__ import annotations

from pathlib import Path

import pytest

from p4control.p4runtime.p4info import (P4InfoFileError, format_p4info, load_p4info,
                                        program_info_from_p4info)
from p4sim import load_program
from p4sim.p4info import build_p4info

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = [(ROOT / "p4src" / "v1model" / "ina.p4", "v1model"), (ROOT / "p4src" / "tna" / "ina.p4", "tna")]


@pytest.fixture(scope="module", params=PROGRAMS, ids=lambda p: p[1])
def compiled(request):
    path, arch = request.param
    info = load_program(str(path), arch=arch).info
    return info, build_p4info(info)


def test_program_info_from_p4info_names_what_the_compiler_named(compiled) -> None:
    info, p4info = compiled
    read = program_info_from_p4info(p4info)
    assert read.arch == info.arch
    assert set(read.tables) == set(info.tables)
    for name, table in read.tables.items():
        ours = info.tables[name]
        assert (table.keys, table.actions, table.default_action, table.default_is_const,
                table.has_const_entries, table.size) == (
            ours.keys, ours.actions, ours.default_action, ours.default_is_const,
            ours.has_const_entries, ours.size), name
    for name in {ref.name for t in info.tables.values() for ref in t.actions}:
        assert read.actions[name].params == info.actions[name].params, name  # (p4c lists directly
        # called actions without parameters, so only table actions carry theirs)
    assert read.registers == info.registers


@pytest.mark.parametrize("fmt, suffix", [("text", ".txt"), ("binary", ".bin"), ("json", ".json")])
def test_load_p4info_reads_every_format_p4sim_writes(compiled, tmp_path, fmt, suffix) -> None:
    _, p4info = compiled
    path = tmp_path / f"ina{suffix}"
    path.write_bytes(format_p4info(p4info, fmt))
    assert load_p4info(path) == p4info


@pytest.mark.parametrize("content, name", [(b"not a P4Info", "x.txt"), (b"{]", "x.json"), (b"", "x.bin")])
def test_load_p4info_refuses_what_is_not_a_p4info(tmp_path, content, name) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(P4InfoFileError, match=f"^{path}: not a P4Info"):
        load_p4info(path)
