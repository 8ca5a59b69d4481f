"""Command line: ``python -m p4sim {stf,p4info,serve} ...``."""
from __future__ import annotations

import sys

USAGE = """usage: python -m p4sim COMMAND ...

commands:
  stf PROGRAM.p4 TEST.stf [--arch v1model|tna] [-I DIR]...   run an STF test
  p4info PROGRAM.p4 [--arch ...] [-o FILE] [--format text|binary|json]
  serve PROGRAM.p4 --arch v1model --device-id N --grpc-addr HOST:PORT -i PORT@IFACE ...
  compile PROGRAM.p4 [--arch ...] [-I DIR]...                 check a program, print the generated Python
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "stf":
        from .stf.runner import main as stf_main
        return stf_main(rest)
    if cmd == "p4info":
        from .p4info import main as p4info_main
        return p4info_main(rest)
    if cmd == "serve":
        from .serve import main as serve_main
        return serve_main(rest)
    if cmd == "compile":
        return _compile_main(rest)
    print(f"p4sim: unknown command '{cmd}'\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
