"""Run p4sim's STF runner over p4c's public v1model STF corpus and print a pass rate.

    .venv/bin/python benchmarks/stf_corpus.py SAMPLES_DIR [--p4c-root P4C] [-j N] [--timeout S]
                                             [--format markdown|csv] [--recursive] [-k SUBSTR]

SAMPLES_DIR is a directory of p4c's ``testdata/p4_16_samples`` (nothing of it is part of this
project; extract it elsewhere, e.g.::

    mkdir -p /tmp/p4c && git --git-dir=P4C.git archive HEAD testdata/p4_16_samples p4include \\
        backends/bmv2 | tar -x -C /tmp/p4c
    .venv/bin/python benchmarks/stf_corpus.py /tmp/p4c/testdata/p4_16_samples --p4c-root /tmp/p4c

Selection: every ``NAME.p4`` with a ``NAME.stf`` beside it whose text matches p4c's own
v1model pattern ``include.*v1model.p4`` (``V1_INCLUDE_PATTERNS`` of backends/bmv2/CMakeLists.txt).
Only the top level of SAMPLES_DIR unless ``--recursive``.

Expected failures: with ``--p4c-root P4C``, the ``.p4`` paths listed in every
``set(XFAIL_TESTS ...)`` and ``list(APPEND XFAIL_TESTS ...)`` block of the CMake files under
``P4C/backends/bmv2`` (``CMakeLists.txt``, ``*.cmake``) are the tests p4c itself expects to fail on
bmv2; they are excluded (matched by their path relative to ``testdata/p4_16_samples``, and listed
with ``--show-excluded``). Without ``--p4c-root`` nothing is excluded.

Each test runs ``python -m p4sim stf PROG.p4 PROG.stf -I DIR_OF_PROG`` in its own subprocess
with a timeout and is classified by exit status and output:

- ``pass``: exit 0 (every expectation of the .stf met);
- ``fail``: exit 1 (the program ran, some expectation was not met: a semantic mismatch);
- ``rejected``: exit 2 with a clear one-line error (``file:line:col: message``), no traceback;
- ``crash``: a Python traceback anywhere in the output (always a p4sim bug), or any other exit;
- ``timeout``: still running after ``--timeout`` seconds.

The pass percentage is ``pass / selected`` (selected = v1model + .stf − expected failures).
The exit status is 0 when the percentage is at least ``--min-pass`` (default 0) and there is no
crash, 1 otherwise.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

V1MODEL_PATTERN = re.compile(r"include.*v1model\.p4")
KINDS = ("pass", "fail", "rejected", "crash", "timeout")
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    name: str
    kind: str
    seconds: float
    message: str


def find_tests(samples: Path, recursive: bool) -> list[Path]:
    pattern = "**/*.p4" if recursive else "*.p4"
    out = []
    for prog in sorted(samples.glob(pattern)):
        if not prog.with_suffix(".stf").is_file():
            continue
        try:
            text = prog.read_text(errors="replace")
        except OSError:
            continue
        if V1MODEL_PATTERN.search(text):
            out.append(prog)
    return out


_XFAIL_BLOCK = re.compile(r"(?:set|list)\s*\(\s*(?:APPEND\s+)?XFAIL_TESTS\b(.*?)\)",
                          re.S | re.I)


def read_xfails(p4c_root: Path) -> set[str]:
    """Paths (relative to testdata/p4_16_samples) p4c's bmv2 CMake files mark as XFAIL."""
    bmv2 = p4c_root / "backends" / "bmv2"
    if not bmv2.is_dir():
        raise SystemExit(f"error: {bmv2} is not a directory (--p4c-root must be a p4c checkout)")
    files = sorted(bmv2.rglob("CMakeLists.txt")) + sorted(bmv2.rglob("*.cmake"))
    out: set[str] = set()
    for f in files:
        text = f.read_text(errors="replace")
        text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
        for m in _XFAIL_BLOCK.finditer(text):
            for tok in m.group(1).split():
                tok = tok.strip('"')
                key = "testdata/p4_16_samples/"
                if tok.endswith(".p4") and key in tok:
                    out.add(tok.split(key, 1)[1])
    return out


def _first_error(stdout: str, stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if "Traceback (most recent call last)" in stderr + stdout:
        # the exception line, and the innermost p4sim frame
        frames = [ln.strip() for ln in lines if ln.strip().startswith("File ")]
        where = ""
        for fr in reversed(frames):
            if "p4sim" in fr:
                m = re.search(r'File "([^"]*)", line (\d+), in (\S+)', fr)
                if m:
                    where = f" [{Path(m.group(1)).name}:{m.group(2)} {m.group(3)}]"
                break
        return (lines[-1] if lines else "traceback") + where
    if lines:
        return lines[0]
    for ln in stdout.splitlines():
        if "FAIL" in ln.upper() or "mismatch" in ln or "expected" in ln:
            return ln.strip()
    out = [ln for ln in stdout.splitlines() if ln.strip()]
    return out[-1] if out else ""


def run_one(prog: Path, samples: Path, timeout: float, python: str) -> Result:
    name = str(prog.relative_to(samples))
    cmd = [python, "-m", "p4sim", "stf", str(prog), str(prog.with_suffix(".stf")),
           "-I", str(prog.parent)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        return Result(name, "timeout", time.monotonic() - t0, f"still running after {timeout:g} s")
    dt = time.monotonic() - t0
    msg = _first_error(p.stdout, p.stderr)
    if "Traceback (most recent call last)" in p.stdout + p.stderr:
        kind = "crash"
    elif p.returncode == 0:
        kind, msg = "pass", ""
    elif p.returncode == 1:
        kind = "fail"
        fails = [ln.strip() for ln in p.stdout.splitlines()
                 if ln.strip() and not re.match(r"\d+ passed, \d+ failed$", ln.strip())]
        msg = fails[0] if fails else msg
    elif p.returncode == 2:
        kind = "rejected"
    else:
        kind, msg = "crash", f"exit status {p.returncode}: {msg}"
    return Result(name, kind, dt, msg)


def _cell(s: str, width: int = 160) -> str:
    s = s.replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= width else s[:width - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Run p4sim's STF runner on every v1model program with a .stf in a directory "
                    "of p4c's p4_16_samples; print pass/fail/rejected/crash/timeout counts, the "
                    "pass percentage and a table of the failures.",
        epilog="Expected failures come from the XFAIL_TESTS lists of --p4c-root's "
               "backends/bmv2 CMake files (see the module docstring).")
    ap.add_argument("samples", type=Path, help="directory of p4c's testdata/p4_16_samples")
    ap.add_argument("--p4c-root", type=Path, default=None,
                    help="p4c checkout: exclude the tests its backends/bmv2 CMake files mark as "
                         "expected failures (XFAIL_TESTS)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="tests run in parallel (default 1)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds per test (default 60)")
    ap.add_argument("--recursive", action="store_true",
                    help="also the subdirectories of SAMPLES (parser-inline/, ...)")
    ap.add_argument("-k", dest="filter", default=None,
                    help="only tests whose name contains this substring")
    ap.add_argument("--format", choices=("markdown", "csv"), default="markdown",
                    help="table of failures (default markdown)")
    ap.add_argument("--all", action="store_true", help="list every test, not only the failures")
    ap.add_argument("--show-excluded", action="store_true",
                    help="list the expected failures that were excluded")
    ap.add_argument("--min-pass", type=float, default=0.0,
                    help="exit 1 when the pass percentage is below this (default 0)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter that runs p4sim (default: this one)")
    args = ap.parse_args(argv)

    samples = args.samples.resolve()
    if not samples.is_dir():
        print(f"error: {samples} is not a directory", file=sys.stderr)
        return 2
    tests = find_tests(samples, args.recursive)
    xfails = read_xfails(args.p4c_root.resolve()) if args.p4c_root else set()
    excluded = [t for t in tests if str(t.relative_to(samples)) in xfails]
    tests = [t for t in tests if str(t.relative_to(samples)) not in xfails]
    if args.filter:
        tests = [t for t in tests if args.filter in t.name]
    if not tests:
        print("error: no v1model program with a .stf found", file=sys.stderr)
        return 2

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        results = list(ex.map(lambda p: run_one(p, samples, args.timeout, args.python), tests))
    wall = time.monotonic() - t0

    counts = {k: sum(r.kind == k for r in results) for k in KINDS}
    pct = 100.0 * counts["pass"] / len(results)
    print(f"p4c STF corpus: {samples}")
    print(f"selected {len(results)} v1model programs with a .stf "
          f"({len(excluded)} expected failures of p4c's bmv2 excluded"
          f"{'' if args.p4c_root else ': no --p4c-root'})")
    if args.show_excluded:
        for t in excluded:
            print(f"  excluded: {t.relative_to(samples)}")
    print("  ".join(f"{k} {counts[k]}" for k in KINDS))
    print(f"pass rate: {counts['pass']}/{len(results)} = {pct:.1f} %   ({wall:.0f} s wall, "
          f"{args.jobs} job{'s' if args.jobs != 1 else ''})")

    rows = [r for r in results if args.all or r.kind != "pass"]
    if rows:
        print()
        if args.format == "csv":
            import csv
            w = csv.writer(sys.stdout)
            w.writerow(["test", "result", "seconds", "first line of error"])
            for r in rows:
                w.writerow([r.name, r.kind, f"{r.seconds:.1f}", r.message])
        else:
            print("| test | result | s | first line of error |")
            print("|---|---|---|---|")
            for r in rows:
                print(f"| {r.name} | {r.kind} | {r.seconds:.1f} | {_cell(r.message)} |")
    return 0 if pct >= args.min_pass and counts["crash"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
