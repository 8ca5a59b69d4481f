"""``python -m p4sim serve``: run a P4 program as a switch on Linux interfaces.

    python -m p4sim serve PROGRAM.p4 [--arch v1model|tna] [-I DIR]... [--device-id N]
        [--grpc-addr HOST:PORT] [--bfrt-addr HOST:PORT [--bfrt-json FILE]] [-i PORTNUM@IFACE ...] [--cpu-port N]
        [--drop-rate P] [--delay-ms D] [--jitter-ms J] [--seed S]
        [--impair N:drop=P,delay=D,jitter=J]... [--pcap-dir DIR] [--log-level LEVEL]

Once everything is up, one line ``p4sim: serving PROGRAM on ports 1@eth1,... grpc HOST:PORT``
(`` bfrt HOST:PORT`` follows when BfRuntime is served) goes to stderr (tests and Mininet wait for it). SIGTERM/SIGINT stop the switch cleanly;
SIGUSR1 logs the port counters. Without ``--grpc-addr`` no P4Runtime server is started (the
program then runs with its const entries and default actions only). ``--bfrt-addr`` (TNA
programs only) serves BfRuntime, Tofino's control API, as bf_switchd does (see
:mod:`p4sim.bfrt.server`); it may be given with or without ``--grpc-addr``; ``--bfrt-json FILE``
serves a compiler's bf-rt.json (bf-p4c's ids, names and annotations) instead of p4sim's own,
and refuses to start if it does not describe the program. Without ``-i`` the switch
has no data ports, like ``simple_switch_grpc`` started without interfaces: P4Runtime works
and PacketOut frames still go through the pipeline (outputs to the CPU port come back as
PacketIn, to any other port they are counted and dropped); the ready line says ``ports none``.
Without both there would be nothing to talk to, so that is refused.
Exit status: 0 after a clean stop, 2 for bad arguments / interfaces / programs, 1 for other
failures to start. Several switches in one process: ``python -m p4sim serve-many`` (see
:mod:`p4sim.serve_many`), built on :func:`start_switch`.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
import tempfile
import threading
from typing import Any, Callable, Sequence

from p4sim.dataplane import DataplaneLoop
from p4sim.links import Impairment
from p4sim.ports import Port, PortError

log = logging.getLogger("p4sim.serve")

READY_PREFIX = "p4sim: serving"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_LEVEL_CHOICES = [level.lower() for level in LOG_LEVELS] + list(LOG_LEVELS)


class UsageError(Exception):
    """Bad command line: reported as ``p4sim serve: error: ...`` with exit status 2."""


def _parse_port_map(spec: str) -> tuple[int, str]:
    m = re.fullmatch(r"(\d+)@(\S+)", spec)
    if not m:
        raise UsageError(f"bad -i {spec!r}: expected PORTNUM@IFACE, e.g. 1@veth1")
    num = int(m.group(1))
    if num >= 1 << 16:
        raise UsageError(f"bad -i {spec!r}: port number too large")
    return num, m.group(2)


def _parse_addr(spec: str, option: str = "--grpc-addr") -> tuple[str, int]:
    m = re.fullmatch(r"(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d+)", spec)
    if not m or int(m.group(2)) > 65535:
        raise UsageError(f"bad {option} {spec!r}: expected HOST:PORT")
    return m.group(1), int(m.group(2))


def _parse_impair(spec: str, base: Impairment) -> tuple[int, Impairment]:
    m = re.fullmatch(r"(\d+):(.*)", spec)
    if not m:
        raise UsageError(f"bad --impair {spec!r}: expected N:drop=P,delay=D,jitter=J")
    vals = {"drop": base.drop_rate, "delay": base.delay_ms, "jitter": base.jitter_ms}
    for item in filter(None, m.group(2).split(",")):
        key, _, val = item.partition("=")
        if key not in vals:
            raise UsageError(f"bad --impair {spec!r}: unknown key {key!r}")
        try:
            vals[key] = float(val)
        except ValueError:
            raise UsageError(f"bad --impair {spec!r}: {val!r} is not a number") from None
    try:
        return int(m.group(1)), Impairment(vals["drop"], vals["delay"], vals["jitter"],
                                           base.seed)
    except ValueError as e:
        raise UsageError(f"bad --impair {spec!r}: {e}") from None


def _parse_rates(specs: list[str], option: str) -> dict[int, float]:
    rates: dict[int, float] = {}
    for spec in specs:
        m = re.fullmatch(r"(\d+):([0-9.eE+-]+)", spec)
        try:
            rate = float(m.group(2)) if m else 0.0
        except ValueError:
            rate = 0.0
        if not m or not rate > 0:
            raise UsageError(f"bad {option} {spec!r}: expected PORTNUM:MBPS with MBPS > 0, e.g. 1:20")
        if int(m.group(1)) in rates:
            raise UsageError(f"{option} for port {m.group(1)} given twice")
        rates[int(m.group(1))] = rate
    return rates


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits itself; route through UsageError
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="p4sim serve", description="Run a P4 program as a software switch.")
    p.add_argument("program", help="P4_16 source file")
    p.add_argument("--arch", choices=["v1model", "tna"], default="v1model")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="include directory (repeatable)")
    p.add_argument("--device-id", type=int, default=1)
    p.add_argument("--grpc-addr", default=None, metavar="HOST:PORT",
                   help="P4Runtime listen address (port 0: any free port)")
    p.add_argument("--bfrt-addr", default=None, metavar="HOST:PORT",
                   help="BfRuntime listen address, TNA programs only (port 0: any free port)")
    p.add_argument("--bfrt-json", default=None, metavar="FILE",
                   help="serve this bf-rt.json (e.g. bf-p4c's) instead of p4sim's own; it must "
                        "describe the program (names, keys, actions, fields)")
    p.add_argument("-i", dest="interfaces", action="append", default=[],
                   metavar="PORTNUM@IFACE",
                   help="bind a switch port to an interface (none: a control-plane-only switch)")
    p.add_argument("--cpu-port", type=int, default=None)
    p.add_argument("--drop-rate", type=float, default=0.0,
                   help="egress drop probability of every port")
    p.add_argument("--delay-ms", type=float, default=0.0, help="egress delay of every port")
    p.add_argument("--jitter-ms", type=float, default=0.0,
                   help="uniform +/- jitter on the delay (may reorder frames)")
    p.add_argument("--seed", type=int, default=0, help="seed of impairments and random()")
    p.add_argument("--impair", action="append", default=[], metavar="N:drop=P,delay=D,...",
                   help="impairment of one port, overriding the global ones (repeatable)")
    p.add_argument("--tx-mbps", action="append", default=[], metavar="N:MBPS",
                   help="serialize what port N sends at MBPS, as its link would: a frame reaches "
                        "the peer once its last bit is across (repeatable)")
    p.add_argument("--rx-mbps", action="append", default=[], metavar="N:MBPS",
                   help="serialize what port N receives at MBPS, for a link whose far end does "
                        "not (a host's): a frame is processed once its last bit is in (repeatable)")
    p.add_argument("--pcap-dir", default=None, help="write IFACE.pcap per port here")
    p.add_argument("--backend", choices=["auto", "python", "c"], default=None,
                   help="execute the program in Python (the reference), compiled to C, or C "
                        "when possible (auto); default $P4SIM_BACKEND, else auto")
    p.add_argument("--log-level", default="info", choices=LOG_LEVEL_CHOICES)
    return p


def _make_ports(args: argparse.Namespace) -> list[Port]:
    try:
        base = Impairment(args.drop_rate, args.delay_ms, args.jitter_ms, args.seed)
    except ValueError as e:
        raise UsageError(str(e)) from None
    per_port = dict(_parse_impair(s, base) for s in args.impair)
    tx_mbps = _parse_rates(args.tx_mbps, "--tx-mbps")
    rx_mbps = _parse_rates(args.rx_mbps, "--rx-mbps")
    if not args.interfaces and args.grpc_addr is None and args.bfrt_addr is None:
        raise UsageError("no ports and no --grpc-addr: give -i PORTNUM@IFACE, or --grpc-addr "
                         "HOST:PORT for a control-plane-only switch")
    seen_nums: set[int] = set()
    seen_ifs: set[str] = set()
    ports = []
    for spec in args.interfaces:
        num, ifname = _parse_port_map(spec)
        if num in seen_nums:
            raise UsageError(f"port {num} given twice")
        if ifname in seen_ifs:
            raise UsageError(f"interface {ifname!r} given twice")
        if args.cpu_port is not None and num == args.cpu_port:
            raise UsageError(f"port {num} is the CPU port (--cpu-port)")
        seen_nums.add(num)
        seen_ifs.add(ifname)
        if not os.path.exists(f"/sys/class/net/{ifname}"):
            raise UsageError(f"no such interface: {ifname!r} (for -i {spec})")
        pcap = os.path.join(args.pcap_dir, f"{ifname}.pcap") if args.pcap_dir else None
        ports.append(Port(num, ifname, impairment=per_port.pop(num, base), tx_mbps=tx_mbps.pop(num, None),
                          rx_mbps=rx_mbps.pop(num, None), pcap_path=pcap))
    for option, left in (("--impair", per_port), ("--tx-mbps", tx_mbps), ("--rx-mbps", rx_mbps)):
        if left:
            raise UsageError(f"{option} for unknown port(s): {sorted(left)}")
    return ports


def parse_switch_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[Port]]:
    """The arguments of one switch, parsed and checked, and its ports. ``p4sim serve`` and every
    switch of ``p4sim serve-many`` come through here, so that both refuse the same mistakes with
    the same one-line message. Raises UsageError."""
    args = build_parser().parse_args(argv)
    if args.grpc_addr is not None:
        _parse_addr(args.grpc_addr)
    if args.bfrt_addr is not None:
        _parse_addr(args.bfrt_addr, "--bfrt-addr")
        if args.arch != "tna":
            raise UsageError("--bfrt-addr serves TNA programs: add --arch tna")
    if args.bfrt_json is not None and args.bfrt_addr is None:
        raise UsageError("--bfrt-json is the schema BfRuntime serves: add --bfrt-addr")
    return args, _make_ports(args)


def make_loader(*, program: str, arch: str, include_dirs: list[str], cpu_port: int | None,
                seed: int, backend: str | None = None) -> Callable[..., Any]:
    """The ``loader`` of the P4Runtime server: compile a device config (P4 source, bytes or
    str) into a new Switch. It only builds the switch; the server commits it through
    ``on_switch_change`` (then the dataplane swaps). Raises ``P4SimError`` (CompileError) for a
    bad program, leaving the running switch untouched."""
    # A reloaded program may #include files next to the original one.
    reload_includes = list(include_dirs) + [os.path.dirname(os.path.abspath(program))]
    reload_name = os.path.basename(program)

    def loader(source: bytes | str, *_unused: Any, **_kw: Any) -> Any:
        from p4sim import Switch, load_program

        text = source.decode("utf-8") if isinstance(source, (bytes, bytearray)) else source
        with tempfile.TemporaryDirectory(prefix="p4sim-reload-") as tmp:
            path = os.path.join(tmp, reload_name)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            new_prog = load_program(path, arch=arch, include_dirs=reload_includes)
        log.info("compiled a new pipeline (%d bytes of source)", len(text))
        # backend only when given, so that Switch stand-ins without it keep working
        extra = {"backend": backend} if backend else {}
        return Switch(new_prog, cpu_port=cpu_port, seed=seed, **extra)

    return loader


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "serve":  # accept both `main(["serve", ...])` and `main([...])`
        argv = argv[1:]
    try:
        args, ports = parse_switch_args(argv)
    except UsageError as e:
        print(f"p4sim serve: error: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    try:
        return _serve(args, ports)
    except UsageError as e:
        print(f"p4sim serve: error: {e}", file=sys.stderr)
        return 2


class StartError(Exception):
    """A switch could not start for a reason other than its arguments (exit status 1)."""


class ServedSwitch:
    """One running switch: its dataplane loop and control servers (:func:`start_switch`)."""

    def __init__(self, args: argparse.Namespace, loop: DataplaneLoop) -> None:
        self.args = args
        self.loop = loop
        self.server: Any = None
        self.bfrt: Any = None
        self.ready_line = ""

    def stop(self) -> None:
        if self.server is not None:
            try:
                self.server.stop()
            except Exception:
                log.exception("stopping the P4Runtime server failed")
        if self.bfrt is not None:
            self.bfrt.stop()
        self.loop.stop()
        log.info("stopped; counters: %s", self.loop.stats_line())


def start_switch(args: argparse.Namespace, ports: list[Port],
                 program_cache: dict[tuple, Any] | None = None) -> ServedSwitch:
    """Load the program, open the ports, start the control servers and the dataplane thread.
    Raises UsageError (bad program, interface, ...) or StartError (cannot listen, ...); on
    success ``ready_line`` is the line to print. Signals are the caller's business.
    ``program_cache`` (serve-many) shares one compiled program among switches that load the
    same file: a Program is immutable, every Switch has its own state."""
    try:
        from p4sim import Switch, load_program
        from p4sim.errors import P4SIM_ERRORS
    except ImportError as e:
        raise StartError(f"the p4sim compiler is not available: {e}") from None

    include_dirs = list(args.include_dirs)
    try:
        key = (os.path.abspath(args.program), args.arch, tuple(include_dirs))
        prog = program_cache.get(key) if program_cache is not None else None
        if prog is None:
            prog = load_program(args.program, arch=args.arch, include_dirs=include_dirs)
            if program_cache is not None:
                program_cache[key] = prog
        backend = getattr(args, "backend", None)
        extra = {"backend": backend} if backend else {}
        switch = Switch(prog, cpu_port=args.cpu_port, seed=args.seed, **extra)
    except (*P4SIM_ERRORS, OSError) as e:
        raise UsageError(f"cannot load {args.program}: {e}") from None
    except Exception as e:  # a compiler bug: still one clear line, details at debug level
        log.debug("loading %s failed", args.program, exc_info=True)
        raise UsageError(f"cannot load {args.program}: internal error: "
                         f"{type(e).__name__}: {e}") from None

    if args.pcap_dir:
        try:
            os.makedirs(args.pcap_dir, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cannot create --pcap-dir {args.pcap_dir!r}: {e}") from None
    loop = DataplaneLoop(switch, ports, cpu_port=args.cpu_port)
    loader = make_loader(program=args.program, arch=args.arch, include_dirs=include_dirs,
                         cpu_port=args.cpu_port, seed=args.seed,
                         backend=getattr(args, "backend", None))

    def on_switch_change(new_switch: Any) -> None:
        loop.set_switch(new_switch)  # atomic: later frames see the committed pipeline
        log.info("pipeline reloaded: the dataplane now runs the new program")

    bfrt: Any = None
    if args.bfrt_addr is not None:
        # built before any port opens: a schema that does not fit the program refuses the start
        from p4sim.bfrt.server import BfRtServer
        schema = _read_bfrt_json(args.bfrt_json) if getattr(args, "bfrt_json", None) else None
        try:
            bfrt = BfRtServer(switch, device_id=args.device_id, loader=loader,
                              ports={p.number for p in ports} if ports else None,
                              on_switch_change=on_switch_change, bfrt_json=schema,
                              # a pushed program is compiled from a temporary file (make_loader)
                              include_dirs=include_dirs + [os.path.dirname(os.path.abspath(args.program))])
        except P4SIM_ERRORS as e:
            where = f"--bfrt-json {args.bfrt_json}" if schema is not None else "BfRuntime"
            raise UsageError(f"{where}: {e}") from None

    try:
        loop.open()
    except PortError as e:
        raise UsageError(str(e)) from None

    served = ServedSwitch(args, loop)
    grpc_text = "none"
    bfrt_text = ""
    try:
        if args.grpc_addr is not None:
            try:
                from p4sim.p4runtime.server import P4RuntimeServer
            except ImportError as e:
                raise StartError(f"P4Runtime server not available: {e}") from None
            source = getattr(prog, "source", None)
            server = P4RuntimeServer(
                switch, args.device_id, loader=loader, packet_out_handler=loop.inject_cpu,
                on_switch_change=on_switch_change,
                device_config=source.encode("utf-8") if isinstance(source, str) else None)
            host, _ = _parse_addr(args.grpc_addr)
            try:
                bound = server.start(args.grpc_addr)
            except Exception as e:  # e.g. address already in use
                raise StartError(f"cannot listen on {args.grpc_addr}: {e}") from None
            served.server = server
            grpc_text = f"{host}:{bound}"
            loop.cpu_handler = server.send_packet_in
        if bfrt is not None:
            host, _ = _parse_addr(args.bfrt_addr, "--bfrt-addr")
            try:
                bfrt_text = f" bfrt {host}:{bfrt.start(args.bfrt_addr)}"
            except Exception as e:  # e.g. address already in use
                raise StartError(f"cannot listen on {args.bfrt_addr}: {e}") from None
            served.bfrt = bfrt
        loop.start()
    except BaseException:
        served.stop()
        raise
    port_text = ",".join(f"{p.number}@{p.ifname}" for p in ports) or "none"
    served.ready_line = (f"{READY_PREFIX} {args.program} on ports {port_text} grpc {grpc_text}"
                         f"{bfrt_text} device-id {args.device_id} pid {os.getpid()}")
    return served


def _read_bfrt_json(path: str) -> dict[str, Any]:
    """A bf-rt.json file for ``--bfrt-json`` (UsageError, one line, if it is not one)."""
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as e:
        raise UsageError(f"--bfrt-json {path}: cannot read it: {e.strerror}") from None
    except ValueError as e:
        raise UsageError(f"--bfrt-json {path}: not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tables"), list):
        raise UsageError(f"--bfrt-json {path}: not a bf-rt.json (no \"tables\" list)")
    return doc


def _serve(args: argparse.Namespace, ports: list[Port]) -> int:
    try:
        served = start_switch(args, ports)
    except StartError as e:
        print(f"p4sim serve: error: {e}", file=sys.stderr)
        return 1
    loop = served.loop
    try:
        stop = threading.Event()

        def on_signal(signum: int, _frame: Any) -> None:
            log.info("signal %d: stopping", signum)
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGUSR1, lambda *_: log.info("counters: %s", loop.stats_line()))

        print(served.ready_line, file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            if not loop.running:
                log.error("dataplane thread died; exiting")
                return 1
        return 0
    finally:
        served.stop()


if __name__ == "__main__":  # `python -m p4sim.serve ...` works even without p4sim/__main__.py
    sys.exit(main())
