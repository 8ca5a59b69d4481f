"""The project's C build cache (cbuild): one build per distinct source set, however many
processes ask at once; the least recently used builds pruned beyond the bound; nothing but
builds left in the cache directory."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cbuild import BuildCache, BuildError, megabytes_from_env

needs_cc = pytest.mark.skipif(shutil.which(os.environ.get("CC") or "cc") is None, reason="no C compiler")
ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"lib.h": "int twice(int x);\n", "a.c": '#include "lib.h"\nint twice(int x) { return 2 * x; }\n',
           "b.c": '#include "lib.h"\nint four(int x) { return twice(twice(x)); }\n'}


@needs_cc
def test_sources_build_once_and_leave_only_the_build(tmp_path: Path) -> None:
    cache = BuildCache(tmp_path / "c", "t", 1 << 30)
    first = cache.build(SOURCES, ["-O2", "-shared", "-fPIC"])
    os.utime(first.path, (1000, 1000))
    again = cache.build(dict(reversed(SOURCES.items())), ["-O2", "-shared", "-fPIC"])
    assert again.path == first.path and again.warnings == ""
    assert first.path.stat().st_mtime > 1000                 # a hit is a use
    assert [p.name for p in (tmp_path / "c").iterdir()] == [first.path.name]   # no lock, no temp
    import ctypes
    assert ctypes.CDLL(str(first.path)).four(3) == 12        # every .c compiled, the header included
    changed = cache.build({**SOURCES, "lib.h": SOURCES["lib.h"] + "/* changed */\n"}, ["-O2", "-shared", "-fPIC"])
    assert changed.path != first.path


@needs_cc
def test_concurrent_builders_run_the_compiler_once(tmp_path: Path) -> None:
    log = tmp_path / "cc.log"
    cc = tmp_path / "cc"
    cc.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {shutil.which(os.environ.get("CC") or "cc")} "$@"\n')
    cc.chmod(cc.stat().st_mode | stat.S_IXUSR)
    code = ("import sys; from pathlib import Path; from cbuild import BuildCache\n"
            f"print(BuildCache(Path(sys.argv[1]), 't', 1 << 30).build({SOURCES!r}, ['-shared', '-fPIC']).path)\n")
    env = {**os.environ, "CC": str(cc)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "c")], stdout=subprocess.PIPE, text=True,
                              env=env, cwd=ROOT) for _ in range(3)]
    outs = {p.communicate(timeout=300)[0].strip() for p in procs}
    assert len(outs) == 1 and all(p.returncode == 0 for p in procs)
    assert sum("-shared" in line for line in log.read_text().splitlines()) == 1
    assert [p.name for p in (tmp_path / "c").iterdir()] == [Path(outs.pop()).name]


def test_the_least_recently_used_builds_go_beyond_the_bound(tmp_path: Path) -> None:
    for i, name in enumerate(["old", "mid", "new"]):
        f = tmp_path / f"t-{name}.so"
        f.write_bytes(b"x" * 1000)
        os.utime(f, (1000 + i, 1000 + i))
    (tmp_path / "other-x.so").write_bytes(b"x" * 5000)          # another cache's prefix: not ours
    cache = BuildCache(tmp_path, "t", 2500)
    assert [e.path.name for e in cache.entries()] == ["t-new.so", "t-mid.so", "t-old.so"]
    assert [p.name for p in cache.prune()] == ["t-old.so"]
    assert [p.name for p in cache.prune(0, keep=tmp_path / "t-mid.so")] == ["t-new.so"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other-x.so", "t-mid.so"]


def test_errors_name_the_cause(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(BuildError, match="no C compiler"):
        BuildCache(tmp_path, "t", 0).build(SOURCES, [])
    monkeypatch.setenv("SOME_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="SOME_CACHE_MB='lots' is not a number of megabytes"):
        megabytes_from_env("SOME_CACHE_MB", 1)
    monkeypatch.setenv("SOME_CACHE_MB", "2")
    assert megabytes_from_env("SOME_CACHE_MB", 1) == 2 << 20


@needs_cc
def test_a_compile_error_is_reported(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="C compiler failed on the test sources: .*error"):
        BuildCache(tmp_path, "t", 0).build({"bad.c": "int f( {"}, ["-shared", "-fPIC"], what="the test sources")
    assert list(tmp_path.iterdir()) == []
