"""Command line: ``python -m p4sim {stf,p4info,serve,serve-many,compile,bfrt-json} ...``."""
from __future__ import annotations

import sys

USAGE = """usage: python -m p4sim COMMAND ...

commands:
  stf PROGRAM.p4 TEST.stf [--arch v1model|tna] [-I DIR]...   run an STF test
  p4info PROGRAM.p4 [--arch ...] [-o FILE] [--format text|binary|json]
  serve PROGRAM.p4 --arch v1model --device-id N --grpc-addr HOST:PORT -i PORT@IFACE ...
        (--arch tna --bfrt-addr HOST:PORT: BfRuntime, Tofino's control API)
  serve-many CONFIG.json | --switch 'PROGRAM.p4 SERVE-ARGS...' ...   several switches, one process
  bfrt-json PROGRAM.p4 [-I DIR]... [-o FILE] [--fixed]         a TNA program's bf-rt.json
  compile PROGRAM.p4 [--arch ...] [-I DIR]...                 check a program, print the generated Python
  cache [--clear]                                             the C backend's build cache: show or empty it

  stf, compile and serve take --backend {auto,python,c} (default $P4SIM_BACKEND, else auto):
  run the program in Python, compiled to C, or in C when it is fully supported (auto)
"""


def _compile_main(argv: list[str]) -> int:
    import argparse

    from . import CompileError, Switch, load_program
    ap = argparse.ArgumentParser(prog="python -m p4sim compile")
    ap.add_argument("program")
    ap.add_argument("--arch", default="v1model", choices=["v1model", "tna"])
    ap.add_argument("-I", dest="include_dirs", action="append", default=[])
    ap.add_argument("-q", "--quiet", action="store_true", help="only check the program")
    args = ap.parse_args(argv)
    try:
        prog = load_program(args.program, args.arch, args.include_dirs)
        Switch(prog)  # the run-time objects (tables, default actions...) are checked too
    except CompileError as e:
        print(e, file=sys.stderr)
        return 2
    if not args.quiet:
        print(prog.python_source)
    return 0


def _bfrt_json_main(argv: list[str]) -> int:
    import argparse

    from . import CompileError, load_program
    ap = argparse.ArgumentParser(
        prog="python -m p4sim bfrt-json",
        description="Write the bf-rt.json (BfRuntime schema) of a TNA program, with bf-p4c's "
                    "names; ids are p4sim's (clients resolve names, never ids).")
    ap.add_argument("program")
    ap.add_argument("-I", dest="include_dirs", action="append", default=[])
    ap.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    ap.add_argument("--fixed", action="store_true",
                    help="write the device's fixed tables ($PORT, $pre.mgid, $pre.node) instead")
    ap.add_argument("--compare", metavar="BF_RT_JSON",
                    help="compare with a compiler's bf-rt.json (names, types, keys, actions, "
                         "data; not ids): one line per difference, exit 1 if any")
    args = ap.parse_args(argv)
    import json

    from .bfrt.bfrt_json import compare, dumps, fixed_bfrt_info, pipeline_name, program_bfrt_info
    if args.fixed:
        doc = fixed_bfrt_info()
    else:
        try:
            prog = load_program(args.program, "tna", args.include_dirs)
        except CompileError as e:
            print(e, file=sys.stderr)
            return 2
        doc = program_bfrt_info(prog, pipeline_name(prog.source), include_dirs=args.include_dirs)
    if args.compare:
        try:
            with open(args.compare, encoding="utf-8") as fh:
                theirs = json.load(fh)
        except (OSError, ValueError) as e:
            print(f"p4sim bfrt-json: error: cannot read {args.compare}: {e}", file=sys.stderr)
            return 2
        diffs = compare(doc, theirs)
        for line in diffs:
            print(line)
        print(f"{args.program}: bf-rt.json {'differs in ' + str(len(diffs)) + ' places' if diffs else 'agrees'} "
              f"with {args.compare}", file=sys.stderr)
        return 1 if diffs else 0
    text = dumps(doc)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            print(f"p4sim bfrt-json: error: cannot write {args.output}: {e.strerror}", file=sys.stderr)
            return 2
    return 0


def _cache_main(argv: list[str]) -> int:
    import argparse

    from .errors import CompileError
    from .runtime.native import cache_dir, cache_entries, cache_limit_bytes, prune_cache
    ap = argparse.ArgumentParser(
        prog="python -m p4sim cache",
        description="Show the C backend's build cache ($P4SIM_CACHE_DIR, default ~/.cache/p4sim): "
                    "one shared library per distinct program, the least recently used removed "
                    "beyond $P4SIM_CACHE_MAX_MB (default 512).")
    ap.add_argument("--clear", action="store_true", help="remove every cached build")
    args = ap.parse_args(argv)
    try:
        limit = cache_limit_bytes()
    except CompileError as e:
        print(f"p4sim cache: error: {e}", file=sys.stderr)
        return 2
    if args.clear:
        removed = prune_cache(0)
        print(f"{cache_dir()}: removed {len(removed)} build(s)")
        return 0
    entries = cache_entries()
    total = sum(size for _, size, _ in entries)
    print(f"{cache_dir()}: {len(entries)} build(s), {total / 2**20:.1f} MB "
          f"(bound {limit / 2**20:.0f} MB)")
    return 0


def _take_backend_option(args: list[str]) -> list[str]:
    """Remove ``--backend X`` / ``--backend=X`` from ``args`` and export it as
    ``$P4SIM_BACKEND``."""
    import os

    from .runtime.native import BACKENDS
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--backend" or a.startswith("--backend="):
            if a == "--backend":
                if i + 1 >= len(args):
                    raise ValueError("--backend needs a value (auto, python or c)")
                value = args[i + 1]
                i += 2
            else:
                value = a.split("=", 1)[1]
                i += 1
            if value not in BACKENDS:
                raise ValueError(f"--backend must be one of {', '.join(BACKENDS)}, not {value!r}")
            os.environ["P4SIM_BACKEND"] = value
            continue
        out.append(a)
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd in ("stf", "compile"):
        # every Switch these commands build picks the backend up from the environment
        try:
            rest = _take_backend_option(rest)
        except ValueError as e:
            print(f"p4sim {cmd}: error: {e}", file=sys.stderr)
            return 2
    if cmd == "stf":
        from .stf.runner import main as stf_main
        return stf_main(rest)
    if cmd == "p4info":
        from .p4info import main as p4info_main
        return p4info_main(rest)
    if cmd == "serve":
        from .serve import main as serve_main
        return serve_main(rest)
    if cmd == "serve-many":
        from .serve_many import main as serve_many_main
        return serve_many_main(rest)
    if cmd == "compile":
        return _compile_main(rest)
    if cmd == "bfrt-json":
        return _bfrt_json_main(rest)
    if cmd == "cache":
        return _cache_main(rest)
    print(f"p4sim: unknown command '{cmd}'\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
