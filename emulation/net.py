"""A small fluent API over Mininet for p4sim switches (in the spirit of p4-utils).

    net = (EmuNet(topology, bw_scale=5000)
           .with_switch_options(drop_rate=0.0, seed=1)
           .build()
           .start())               # every switch serving, hosts configured
    try:
        net.host("h1").cmd("ping -c1 10.0.0.2")
    finally:
        net.stop()

* :class:`P4simSwitch` is a Mininet ``Switch`` that runs ``python -m p4sim serve`` in the root
  namespace on its interfaces, with the port numbers of our :class:`controller.model.Topology`
  (Mininet names them ``NAME-ethPORT``) and a P4Runtime server on 127.0.0.1.
* ``EmuNet(..., switch_procs=N)`` (``python -m emulation.run --switch-procs N``) runs the
  switches in N shared ``python -m p4sim serve-many`` processes instead (dealt round-robin,
  each switch with the same ``serve`` arguments, ports, P4Runtime address and device id).
* Hosts get 10.0.x.y/8 and 02:00:.. MACs (``controller.deploy.host_addresses``), static ARP for
  every other host (the switches route on IPv4 only), offloads off (a user-space switch sees
  unsegmented frames with real checksums only then), no IPv6 (no stray ND/MLD packets) and
  ``accept_local`` (multicast results may carry the receiver's own IP as source).
* Links are TCLinks whose bandwidth is the topology's capacity divided by ``bw_scale``
  (InArt scales 100 Gb/s to 100 Mb/s, i.e. 1000x; the default 5000x gives 20 Mb/s, which a
  2-core machine running 20 Python switches can roughly keep up with). htb paces a link's
  frames but hands each to the far end at once; ``EmuNet(..., serialize=True)`` has the p4sim
  switches also hold every frame for its time on the link (store and forward: ``p4sim serve
  --tx-mbps``, and ``--rx-mbps`` on ports facing hosts), so a round trip takes as long as on a
  real link of that rate, and a window of frames in flight matters as it does there.
* :meth:`EmuNet.stop` ends only what it started: the p4sim processes and agent processes by
  their PIDs, then ``Mininet.stop()`` (never Mininet's global clean-up command).
* One network at a time per machine: Mininet names interfaces ``NODE-ethN`` in the root
  namespace, so two nets of the same topology would collide (and tearing one down could take
  the other's links). :meth:`EmuNet.build` waits for an exclusive lock (``LOCK_FILE``) that
  :meth:`EmuNet.stop` releases, so concurrent experiments and tests queue instead.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable

MININET_PATHS = ("/usr/lib/python3/dist-packages",)
LOCK_FILE = Path("/run/lock/ina-emulation.lock") if Path("/run/lock").is_dir() else Path("/tmp/ina-emulation.lock")


def _import_mininet() -> None:
    """Debian's mininet is built for the system Python; appending (not prepending) its
    dist-packages lets our venv's own packages win while ``mininet`` still resolves."""
    for p in MININET_PATHS:
        if p not in sys.path and os.path.isdir(os.path.join(p, "mininet")):
            sys.path.append(p)


_import_mininet()
from mininet.link import TCLink  # noqa: E402
from mininet.log import lg  # noqa: E402
from mininet.net import Mininet  # noqa: E402
from mininet.node import Host, Switch  # noqa: E402

from controller.deploy import HostAddress, host_addresses  # noqa: E402
from controller.model import Topology  # noqa: E402

from .bmv2 import simple_switch_command  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PROGRAM = REPO / "p4src" / "v1model" / "ina.p4"
TNA_PROGRAM = REPO / "p4src" / "tna" / "ina.p4"
READY = "p4sim: serving"


def mininet_unavailable_reason() -> str | None:
    """Why a Mininet net cannot be built here (None if it can)."""
    if os.geteuid() != 0:
        return "Mininet needs root"
    if not any(os.access(os.path.join(d, "mnexec"), os.X_OK) for d in os.environ.get("PATH", "").split(":")):
        return "mnexec (Debian package mininet) not found"
    return None


def terminate(proc: subprocess.Popen) -> None:
    """End a process we started: SIGTERM, then SIGKILL if it is still there after 10 s."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class P4simSwitch(Switch):
    """A Mininet switch node running ``python -m p4sim serve`` on its interfaces."""

    arch = "v1model"              # the program's architecture, and so its control API
    lanes = 64                    # gradient lanes per packet of the program
    pool_limit = 16384            # aggregators its registers hold
    api_option = "--grpc-addr"    # P4Runtime

    def __init__(self, name: str, device_id: int = 1, grpc_port: int = 0, program: str | Path = PROGRAM,
                 log_dir: str | Path | None = None, drop_rate: float = 0.0, delay_ms: float = 0.0,
                 jitter_ms: float = 0.0, seed: int = 0, pcap_dir: str | Path | None = None,
                 **params: Any) -> None:
        params.setdefault("inNamespace", False)       # root namespace: gRPC on 127.0.0.1
        Switch.__init__(self, name, dpid=f"{device_id:016x}", **params)
        self.device_id = device_id
        self.grpc_port = grpc_port or free_tcp_port()
        self.program = Path(program)
        self.log_path = Path(log_dir or "/tmp") / f"p4sim-{name}-{os.getpid()}.log"
        self.impair = (drop_rate, delay_ms, jitter_ms, seed)
        self.pcap_dir = pcap_dir
        # port -> (Mb/s, whether its peer is a host): the links p4sim serializes (EmuNet's serialize)
        self.serialized: dict[int, tuple[float, bool]] = {}
        self.proc: subprocess.Popen | None = None

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def command(self) -> list[str]:
        drop, delay, jitter, seed = self.impair
        cmd = [sys.executable, "-m", "p4sim", "serve", str(self.program), "--arch", self.arch,
               "--device-id", str(self.device_id), self.api_option, self.grpc_addr, "--log-level", "info",
               "--drop-rate", str(drop), "--delay-ms", str(delay), "--jitter-ms", str(jitter), "--seed", str(seed)]
        for port, intf in sorted(self.intfs.items()):
            if intf.name != "lo":
                cmd += ["-i", f"{port}@{intf.name}"]
        for port, (mbps, host_peer) in sorted(self.serialized.items()):
            cmd += ["--tx-mbps", f"{port}:{mbps:g}"] + (["--rx-mbps", f"{port}:{mbps:g}"] if host_peer else [])
        if self.pcap_dir:
            cmd += ["--pcap-dir", str(self.pcap_dir)]
        return cmd

    def start(self, controllers: Iterable[Any] = ()) -> None:
        for intf in self.intfList():
            if intf.name != "lo":
                _quiet_intf(intf.name)
        if getattr(self, "in_group", False):
            return  # EmuNet runs it in a shared `p4sim serve-many` process (switch_procs)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "w")
        # start_new_session: SIGINT to the experiment does not reach the switch before we stop it
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                     start_new_session=True)
        log.close()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        retries = 3
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                # the free port we picked was taken before the switch bound it: pick another
                if retries and "cannot listen" in self.log_tail() and not getattr(self, "in_group", False):
                    retries -= 1
                    self.grpc_port = free_tcp_port()
                    self.start()
                    continue
                raise RuntimeError(f"p4sim switch {self.name} exited: {self.log_tail()}")
            # this switch's own line: a serve-many log holds one ready line per switch
            if any(line.startswith(READY) and f" device-id {self.device_id} " in line
                   for line in self.log_path.read_text(errors="replace").splitlines()):
                return
            time.sleep(0.1)
        raise RuntimeError(f"p4sim switch {self.name} not ready after {timeout} s: {self.log_tail()}")

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return "(no log)"

    def dump_counters(self) -> None:
        """SIGUSR1: p4sim logs its port counters (at warning level, so they reach the log)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)

    def stop_process(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            terminate(proc)

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 (Mininet's signature)
        self.stop_process()
        Switch.stop(self, deleteIntfs)


class P4simTnaSwitch(P4simSwitch):
    """p4sim running the TNA program (p4src/tna/ina.p4), controlled over BfRuntime as a Tofino
    is: ``grpc_addr`` is then its BfRt address."""

    arch = "tna"
    lanes = 32
    pool_limit = 8192
    api_option = "--bfrt-addr"

    def __init__(self, name: str, program: str | Path = TNA_PROGRAM, **params: Any) -> None:
        super().__init__(name, program=program, **params)


class Bmv2Switch(P4simSwitch):
    """A Mininet switch node running bmv2's ``simple_switch_grpc`` (emulation/bmv2.py); the
    program arrives over P4Runtime. No loss, delay or pcap options: those are p4sim's."""

    def __init__(self, name: str, **params: Any) -> None:
        impair = [params.get(k) for k in ("drop_rate", "delay_ms", "jitter_ms", "pcap_dir")]
        if any(impair):
            raise ValueError(f"{name}: bmv2 has no loss, delay or capture options (use the p4sim switch)")
        super().__init__(name, **params)
        self.thrift_port = free_tcp_port()

    def command(self) -> list[str]:
        ports = {p: i.name for p, i in self.intfs.items() if i.name != "lo"}
        return simple_switch_command(self.device_id, ports, self.grpc_addr, self.thrift_port)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"bmv2 switch {self.name} exited: {self.log_tail()}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.grpc_port)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"bmv2 switch {self.name} not serving P4Runtime after {timeout} s: {self.log_tail()}")


SWITCH_KINDS: dict[str, type[P4simSwitch]] = {"p4sim": P4simSwitch, "p4sim-tna": P4simTnaSwitch,
                                              "bmv2": Bmv2Switch}


def _quiet_intf(name: str, netns_cmd: Any = None) -> None:
    """Offloads off and IPv6 off on an interface (in the root namespace unless ``netns_cmd``,
    a Mininet ``node.cmd``, runs it in a host)."""
    cmds = [f"ethtool -K {name} tx off rx off gso off tso off gro off",
            f"sysctl -qw net.ipv6.conf.{name}.disable_ipv6=1"]
    for c in cmds:
        if netns_cmd is not None:
            netns_cmd(c + " >/dev/null 2>&1")
        else:
            subprocess.run(c.split(), capture_output=True)


class EmuNet:
    """A Mininet network built from a :class:`controller.model.Topology`."""

    default_switch_procs = 0      # switch_procs when not given (emulation.run --switch-procs)

    def __init__(self, topology: Topology, *, bw_scale: float | None = 5000.0,
                 log_dir: str | Path | None = None, switch: str = "p4sim",
                 switch_procs: int | None = None, serialize: bool = False) -> None:
        if switch not in SWITCH_KINDS:
            raise ValueError(f"switch kind {switch!r}: choose from {', '.join(SWITCH_KINDS)}")
        if serialize and (switch == "bmv2" or not bw_scale):
            raise ValueError("serialize: p4sim switches on links with a rate (a bw_scale) only")
        self.serialize = serialize
        # 0: one `p4sim serve` process per switch; N >= 1: the switches share N
        # `p4sim serve-many` processes (fewer interpreters; the default comes from the class)
        self.switch_procs = self.default_switch_procs if switch_procs is None else switch_procs
        if self.switch_procs < 0 or (self.switch_procs and switch == "bmv2"):
            raise ValueError(f"switch_procs {self.switch_procs}: >= 0, and p4sim switches only")
        self.group_procs: list[subprocess.Popen] = []
        self._switch_objs: list[Any] = []
        self.switch_cls = SWITCH_KINDS[switch]
        self.topology = topology
        self.bw_scale = bw_scale
        self.log_dir = Path(log_dir) if log_dir else Path("/tmp") / f"ina-emulation-{os.getpid()}"
        self.addresses: dict[str, HostAddress] = host_addresses(topology)
        self.switch_opts: dict[str, Any] = {}
        self.net: Mininet | None = None
        self.procs: list[subprocess.Popen] = []      # agent processes we started in hosts
        self._lock_fd: int | None = None

    # ------------------------------------------------------------------ fluent configuration
    def with_switch_options(self, **opts: Any) -> "EmuNet":
        """drop_rate, delay_ms, jitter_ms, seed, pcap_dir: passed to every ``p4sim serve``."""
        self.switch_opts.update(opts)
        return self

    def link_mbps(self, gbps: float) -> float | None:
        return None if not self.bw_scale else gbps * 1000.0 / self.bw_scale

    def set_bw_scale(self, bw_scale: float) -> "EmuNet":
        """Re-rate every link of the running net (links become capacity / ``bw_scale``): the
        htb class each TCLink end got at build time is changed in place, nothing else is touched
        (TCIntf.config would also turn the offloads back on). Needs a net built with a scale."""
        assert self.net is not None and self.bw_scale, "build() with a bandwidth scale first"
        if self.serialize:
            raise RuntimeError("the switches serialize at the rates they started with: build a new net")
        for link, l in zip(self.net.links, self.topology.links):
            mbps = l.capacity_gbps * 1000.0 / bw_scale
            for intf in (link.intf1, link.intf2):
                out = intf.node.cmd(f"tc class change dev {intf.name} parent 5:0 classid 5:1 htb "
                                    f"rate {mbps:f}Mbit burst 15k 2>&1")
                if out.strip():
                    raise RuntimeError(f"re-rating {intf.name} to {mbps:g} Mb/s: {out.strip()}")
        self.bw_scale = bw_scale
        return self

    def build(self, lock_timeout: float = 1800.0) -> "EmuNet":
        self._lock(lock_timeout)
        self._remove_stale_links()
        topo = self.topology
        net = Mininet(topo=None, controller=None, host=Host, switch=P4simSwitch, link=TCLink,
                      build=False, autoSetMacs=False, autoStaticArp=False, waitConnected=False)
        self.net = net
        for s in topo.switches():
            net.addSwitch(s, cls=self.switch_cls, device_id=topo.nodes[s].switch_id, log_dir=self.log_dir,
                          **self.switch_opts)
        for h in topo.hosts():
            a = self.addresses[h]
            net.addHost(h, ip=f"{a.ip}/8", mac=a.mac)
        hosts = set(topo.hosts())
        level = lg.level
        lg.setLevel(logging.CRITICAL)     # htb's harmless "quantum ... is big" goes to error()
        try:
            for l in topo.links:
                bw = self.link_mbps(l.capacity_gbps)
                params: dict[str, Any] = {"bw": bw} if bw else {}
                net.addLink(l.a, l.b, port1=l.a_port, port2=l.b_port, cls=TCLink, **params)
                if self.serialize:
                    for end, port, peer in ((l.a, l.a_port, l.b), (l.b, l.b_port, l.a)):
                        if end not in hosts:
                            net.get(end).serialized[port] = (bw, peer in hosts)
        finally:
            lg.setLevel(level)
        net.build()
        return self

    def start(self, timeout: float = 120.0) -> "EmuNet":
        assert self.net is not None, "build() first"
        for sw in self.switches():
            sw.in_group = self.switch_procs > 0
        self.net.start()                          # P4simSwitch.start launches every switch
        if self.switch_procs:
            self._start_groups()
        for sw in self.switches():
            sw.wait_ready(timeout)
        for h in self.topology.hosts():
            node = self.net.get(h)
            for intf in node.intfList():
                if intf.name != "lo":
                    _quiet_intf(intf.name, node.cmd)
            node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
            # A switch's multicast RESULT keeps the source IP of the fragment that completed
            # it, so that worker receives a packet "from itself": Linux drops such martians
            # unless accept_local is on (and rp_filter off) on the receiving interface.
            for intf in node.intfList():
                if intf.name != "lo":
                    node.cmd(f"sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.{intf.name}.rp_filter=0 "
                             f"net.ipv4.conf.all.accept_local=1 net.ipv4.conf.{intf.name}.accept_local=1")
            # static ARP for every other host: the switches only route IPv4
            node.cmd("; ".join(f"arp -s {a.ip} {a.mac}" for o, a in self.addresses.items() if o != h))
        return self

    def _start_groups(self) -> None:
        """``switch_procs`` processes of ``p4sim serve-many``, the switches dealt round-robin;
        each switch's ``proc`` and ``log_path`` become its group's."""
        sws = self.switches()
        n = min(self.switch_procs, len(sws))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for g in range(n):
            members = sws[g::n]
            config = self.log_dir / f"p4sim-group{g}-{os.getpid()}.json"
            # serve's arguments of each switch: its command() after `python -m p4sim serve`
            config.write_text(json.dumps({"log_level": "info",
                                          "switches": [sw.command()[4:] for sw in members]}))
            log_path = self.log_dir / f"p4sim-group{g}-{os.getpid()}.log"
            with open(log_path, "w") as log:
                proc = subprocess.Popen([sys.executable, "-m", "p4sim", "serve-many", str(config)],
                                        stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                        start_new_session=True)
            self.group_procs.append(proc)
            for sw in members:
                sw.proc, sw.log_path = proc, log_path

    # ------------------------------------------------------------------ access
    def switches(self) -> list[P4simSwitch]:
        assert self.net is not None
        return [self.net.get(s) for s in self.topology.switches()]

    def switch(self, name: str) -> P4simSwitch:
        assert self.net is not None
        return self.net.get(name)

    def impairment_drops(self) -> int | None:
        """Frames the switches' ``--drop-rate`` impairment dropped, summed over every port, from
        the counters each p4sim process logs when it stops (call after :meth:`stop`; switches
        log at info level so that line is kept). None: no p4sim log holds them (bmv2)."""
        paths = {Path(sw.log_path) for sw in self._switch_objs if getattr(sw, "log_path", None) is not None}
        total, found = 0, False
        for path in paths:
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                if "stopped; counters:" in line:
                    found = True
                    total += sum(int(m) for m in re.findall(r" drop=(\d+)", line))
        return total if found else None

    def host(self, name: str) -> Host:
        assert self.net is not None
        return self.net.get(name)

    def popen(self, host: str, cmd: list[str], **kwargs: Any) -> subprocess.Popen:
        """Start ``cmd`` in ``host``'s namespace; tracked, and ended by :meth:`stop`. Its hostlib
        agents use UDP sockets whatever ``INAHOST_IO`` says: AF_XDP sends past the qdisc that
        paces the host's link, so the emulated rates would not hold."""
        kwargs["env"] = {**(kwargs.get("env") or os.environ), "INAHOST_IO": "socket"}
        proc = self.host(host).popen(cmd, cwd=str(REPO), **kwargs)
        self.procs.append(proc)
        return proc

    @property
    def bmv2(self) -> bool:
        return self.switch_cls is Bmv2Switch

    @property
    def arch(self) -> str:
        return self.switch_cls.arch

    @property
    def lanes(self) -> int:
        return self.switch_cls.lanes

    def _lock(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s) until no other EmuNet of this machine is built."""
        if self._lock_fd is not None:
            return
        fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
        deadline = time.time() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.time() > deadline:
                    os.close(fd)
                    raise TimeoutError(f"another emulated network held {LOCK_FILE} for {timeout:.0f} s") from None
                time.sleep(0.5)
        self._lock_fd = fd

    def _remove_stale_links(self) -> None:
        """Under the lock no other net exists, so a root-namespace interface named like one of
        ours is a leftover of a run that was killed while stopping: delete it (its veth peer
        goes with it), or Mininet fails with "File exists"."""
        for l in self.topology.links:
            for node, port in ((l.a, l.a_port), (l.b, l.b_port)):
                name = f"{node}-eth{port}"
                if Path(f"/sys/class/net/{name}").exists():
                    subprocess.run(["ip", "link", "del", name], capture_output=True)

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)               # closing drops the flock
            self._lock_fd = None

    # ------------------------------------------------------------------ shutdown
    def stop(self) -> None:
        """Idempotent; ends only our processes (by PID), then Mininet's own nodes and links."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass
        self.procs.clear()
        net, self.net = self.net, None
        if net is not None:                        # kept past stop(): impairment_drops reads their logs
            self._switch_objs = [net.get(sw) for sw in self.topology.switches() if sw in net.nameToNode]
        try:
            if net is None:
                return
            for sw in net.switches:               # before Mininet deletes their interfaces
                if isinstance(sw, P4simSwitch):
                    sw.stop_process()
            for proc in self.group_procs:         # serve-many processes no switch holds yet
                terminate(proc)
            net.stop()
        finally:
            self._unlock()

    def __enter__(self) -> "EmuNet":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
