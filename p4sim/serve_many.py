"""``python -m p4sim serve-many``: several switches in one process.

    python -m p4sim serve-many CONFIG.json [--log-level LEVEL]
    python -m p4sim serve-many --switch 'PROGRAM.p4 ARGS...' [--switch '...']... [--log-level LEVEL]

Each switch is described by exactly the arguments of ``python -m p4sim serve`` (program,
``--arch``, ``-I``, ``--device-id``, ``--grpc-addr``, ``--bfrt-addr``, ``--bfrt-json``,
``-i PORTNUM@IFACE``, ``--cpu-port``, ``--drop-rate``/``--delay-ms``/``--jitter-ms``/``--seed``/
``--impair``, ``--pcap-dir``, ``--backend``), checked by the same code
(:func:`p4sim.serve.parse_switch_args`); ``--log-level`` of a switch is ignored (the process has
one). CONFIG.json is ``{"switches": [ARGS, ...], "log_level": "warning"}`` where ARGS is a
list of strings or one shell-quoted string. No interface may belong to two switches.

Every switch has its own program, P4Runtime (and BfRuntime) server, dataplane thread, ports,
impairment streams and pcap files, exactly as if it ran in a ``p4sim serve`` process of its
own; they only share the interpreter (and so the GIL: the switches of one process together
forward about as many frames per second as one ``p4sim serve``; the thread switch interval
is lowered to 0.5 ms so a frame hopping between them does not wait 5 ms for the GIL) and
the compilation of a program file several of them load (a Program is immutable). Once all are up, one ready
line per switch, in the order given and in ``serve``'s format
(``p4sim: serving PROGRAM on ports ... grpc HOST:PORT device-id N pid P``), then
``p4sim: serve-many: N switches serving, pid P``. SIGTERM/SIGINT stop every switch; SIGUSR1
logs the port counters of each. If any switch fails to start, those already started are
stopped and the process exits (2: bad arguments, interfaces or programs; 1: other failures,
e.g. a gRPC address in use), naming the switch (``switch K (device-id N)``).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import signal
import sys
import threading
from typing import Any, Sequence

from p4sim.ports import Port
from p4sim.serve import (LOG_LEVEL_CHOICES, LOG_LEVELS, ServedSwitch, StartError, UsageError,
                         _Parser, parse_switch_args, start_switch)

log = logging.getLogger("p4sim.serve")

ALL_READY = "p4sim: serve-many:"
SWITCH_INTERVAL_S = 0.0005


def _switch_argvs(args: argparse.Namespace) -> tuple[list[list[str]], str | None]:
    argvs: list[list[str]] = []
    level = None
    if args.config is not None:
        try:
            with open(args.config, encoding="utf-8") as fh:
                doc = json.load(fh)
        except OSError as e:
            raise UsageError(f"cannot read {args.config}: {e.strerror}") from None
        except ValueError as e:
            raise UsageError(f"{args.config}: not JSON: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("switches"), list):
            raise UsageError(f'{args.config}: expected {{"switches": [ARGS, ...]}}')
        for k, sw in enumerate(doc["switches"]):
            if isinstance(sw, str):
                argvs.append(shlex.split(sw))
            elif isinstance(sw, list) and all(isinstance(a, str) for a in sw):
                argvs.append(list(sw))
            else:
                raise UsageError(f"{args.config}: switches[{k}]: expected a list of strings "
                                 "or a string of `p4sim serve` arguments")
        level = doc.get("log_level")
        if level is not None and not isinstance(level, str):
            raise UsageError(f"{args.config}: log_level: expected a string")
    argvs += [shlex.split(s) for s in args.switch]
    if not argvs:
        raise UsageError("no switches: give CONFIG.json or --switch 'PROGRAM.p4 ARGS...'")
    return argvs, level


def _name(k: int, a: argparse.Namespace | None) -> str:
    return f"switch {k}" + (f" (device-id {a.device_id})" if a is not None else "")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "serve-many":
        argv = argv[1:]
    p = _Parser(prog="p4sim serve-many",
                description="Run several P4 switches in one process (see the module docs).")
    p.add_argument("config", nargs="?", default=None, help="JSON file: {\"switches\": [...]}")
    p.add_argument("--switch", action="append", default=[], metavar="'PROGRAM ARGS...'",
                   help="one switch: `p4sim serve` arguments in one shell-quoted string")
    p.add_argument("--log-level", default=None, choices=LOG_LEVEL_CHOICES)
    parsed: list[tuple[argparse.Namespace, list[Port]]] = []
    k = -1  # the switch being parsed (-1: the serve-many arguments themselves)
    try:
        args = p.parse_args(argv)
        argvs, cfg_level = _switch_argvs(args)
        owner: dict[str, int] = {}
        for k, sw_argv in enumerate(argvs):
            sw_args, ports = parse_switch_args(sw_argv)
            for port in ports:
                if port.ifname in owner:
                    raise UsageError(f"interface {port.ifname!r} belongs to switch "
                                     f"{owner[port.ifname]} too")
                owner[port.ifname] = k
            parsed.append((sw_args, ports))
    except UsageError as e:
        where = f"{_name(k, None)}: " if k >= 0 else ""
        print(f"p4sim serve-many: error: {where}{e}", file=sys.stderr)
        return 2
    level = (args.log_level or cfg_level or "info").upper()
    if level not in LOG_LEVELS:
        print(f"p4sim serve-many: error: bad log_level {level!r}", file=sys.stderr)
        return 2
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(name)s %(levelname)s: %(message)s")
    return _serve_all(parsed)


def _serve_all(parsed: list[tuple[argparse.Namespace, list[Port]]]) -> int:
    served: list[ServedSwitch] = []
    stop = threading.Event()
    programs: dict[tuple, Any] = {}  # one compilation per program file
    # frames hop between the switches' threads: hand the GIL over sooner than every 5 ms
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        for k, (sw_args, ports) in enumerate(parsed):
            try:
                sv = start_switch(sw_args, ports, programs)
            except UsageError as e:
                print(f"p4sim serve-many: error: {_name(k, sw_args)}: {e}", file=sys.stderr)
                return 2
            except StartError as e:
                print(f"p4sim serve-many: error: {_name(k, sw_args)}: {e}", file=sys.stderr)
                return 1
            served.append(sv)
            thread = getattr(sv.loop, "_thread", None)
            if thread is not None:
                thread.name = f"dataplane-{sw_args.device_id}"

        def on_signal(signum: int, _frame: Any) -> None:
            log.info("signal %d: stopping", signum)
            stop.set()

        def on_usr1(*_: Any) -> None:
            for sv in served:
                log.info("device-id %d counters: %s", sv.args.device_id, sv.loop.stats_line())

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGUSR1, on_usr1)
        for sv in served:
            print(sv.ready_line, file=sys.stderr)
        print(f"{ALL_READY} {len(served)} switches serving, pid {os.getpid()}", file=sys.stderr,
              flush=True)
        while not stop.wait(0.5):
            for sv in served:
                if not sv.loop.running:
                    log.error("device-id %d: dataplane thread died; exiting",
                              sv.args.device_id)
                    return 1
        return 0
    finally:
        for sv in reversed(served):
            sv.stop()


if __name__ == "__main__":
    sys.exit(main())
