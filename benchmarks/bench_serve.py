"""``p4sim serve`` through veths: frames/s offered vs delivered (root, Linux).

The 64-lane register program of ``bench_p4sim.py`` (``p4/registers64.p4``: 64 register
read-modify-writes per packet, every packet out of port 1) runs in a ``p4sim serve``
subprocess bound to two veths of the root namespace; their peers live in a namespace this
benchmark creates (and removes, also on errors or Ctrl-C):

    [ns: src] --veth-- [p4sim port 2]  p4sim  [p4sim port 1] --veth-- [ns: dst]

A paced sender in the namespace offers 60-byte frames at each rate for ``--seconds`` (batched
``sendmmsg`` through ``p4sim.ports.Port``, so the sender is not the bottleneck); delivered is
what the ``dst`` veth counted (its kernel ``rx_packets``), measured over the sending window
after a warm-up (the steady state, not the backlog drained afterwards).

    sudo .venv/bin/python benchmarks/bench_serve.py [--rates 40000,80000,150000] [--seconds 3]

``--bmv2`` runs p4lang's ``simple_switch`` on the same program, ports and load instead (it must
be on PATH with ``p4c-bm2-ss``; build it with logging macros off for a fair comparison):
the side-by-side number the issue tracker asks for.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from benchmarks.machine import describe  # noqa: E402
from p4sim.ports import Port  # noqa: E402

PROGRAM = HERE / "p4" / "registers64.p4"
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def sh(*argv: str, check: bool = True) -> str:
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
    return r.stdout


class Topo:
    def __init__(self) -> None:
        tag = os.getpid() % 100000
        self.ns = f"p4bench{tag}"
        self.sw_in, self.sw_out = f"p4bi{tag}", f"p4bo{tag}"   # root side: switch ports 2, 1
        self.links: list[str] = []

    def __enter__(self) -> "Topo":
        try:
            sh("ip", "netns", "add", self.ns)
            for sw_if, peer in ((self.sw_in, "src"), (self.sw_out, "dst")):
                sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", peer,
                   "netns", self.ns)
                self.links.append(sw_if)
                sh("sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1", check=False)
                sh("ip", "netns", "exec", self.ns, "sysctl", "-qw",
                   "net.ipv6.conf.all.disable_ipv6=1", check=False)
                for ns, name in ((None, sw_if), (self.ns, peer)):
                    pre = ["ip", "netns", "exec", ns] if ns else []
                    sh(*pre, "ethtool", "-K", name, "tx", "off", "rx", "off", "gso", "off",
                       "tso", "off", "gro", "off", check=False)
                    sh(*pre, "ip", "link", "set", name, "up")
            deadline = time.monotonic() + 5
            while any(Path(f"/sys/class/net/{l}/operstate").read_text().strip() != "up"
                      for l in self.links):
                if time.monotonic() > deadline:
                    raise RuntimeError("veths did not come up")
                time.sleep(0.02)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for l in self.links:
            sh("ip", "link", "del", l, check=False)
        sh("ip", "netns", "del", self.ns, check=False)

    def in_ns(self, fn):  # type: ignore[no-untyped-def]
        """Run ``fn()`` in a thread that entered the namespace; sockets keep it."""
        out: list[object] = []

        def work() -> None:
            try:
                with open(f"/var/run/netns/{self.ns}", "rb") as fh:
                    if _libc.setns(fh.fileno(), CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), "setns")
                out.append(fn())
            except BaseException as e:
                out.append(e)

        t = threading.Thread(target=work)
        t.start()
        t.join()
        if isinstance(out[0], BaseException):
            raise out[0]
        return out[0]

    def rx_packets(self, ifname: str) -> int:
        info = json.loads(sh("ip", "-n", self.ns, "-j", "-s", "link", "show", ifname))
        return int(info[0]["stats64"]["rx"]["packets"])


def start_switch(topo: Topo, extra: list[str], per_frame: bool) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "p4sim", "serve", str(PROGRAM), "-i", f"1@{topo.sw_out}",
            "-i", f"2@{topo.sw_in}", "--log-level", "warning", *extra]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if per_frame:
        env["P4SIM_BATCH_IO"] = "0"
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "p4sim: serving" in line:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc
    proc.wait()
    raise RuntimeError(f"p4sim serve exited with {proc.returncode}")


def start_bmv2(topo: Topo) -> subprocess.Popen[str]:
    """simple_switch on PROGRAM (p4c-bm2-ss JSON, cached by the source's mtime), the same
    veths and port numbers as p4sim."""
    for tool in ("simple_switch", "p4c-bm2-ss"):
        if shutil.which(tool) is None:
            raise SystemExit(f"bench_serve --bmv2: {tool} is not on PATH")
    out = REPO / "build" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    json_file = out / (PROGRAM.stem + ".json")
    if not json_file.exists() or json_file.stat().st_mtime < PROGRAM.stat().st_mtime:
        subprocess.run(["p4c-bm2-ss", "--arch", "v1model", "-o", str(json_file), str(PROGRAM)],
                       check=True)
    with socket.socket() as s:                      # a free thrift port
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(["simple_switch", "-i", f"1@{topo.sw_out}", "-i", f"2@{topo.sw_in}",
                             "--thrift-port", str(port), str(json_file)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:             # ready once its thrift server listens
        if proc.poll() is not None:
            raise RuntimeError(f"simple_switch exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("simple_switch did not start within 20 s")


def offer(topo: Topo, sender: Port, rate: float, seconds: float, warmup: float
          ) -> tuple[float, float, int, int]:
    """Send at ``rate`` frames/s; return (offered/s, delivered/s in the window after warm-up,
    frames sent, frames delivered in total)."""
    eth = bytes.fromhex("00aabbccddee001122334455") + b"\x88\xb5"
    frames = [eth + (i % 1024).to_bytes(4, "big") + i.to_bytes(4, "big") + bytes(38)
              for i in range(1024)]
    batch = 32
    send_batch = getattr(sender, "send_batch", None)
    rx0 = topo.rx_packets("dst")
    sent = 0
    t0 = time.monotonic()
    mark = None
    i = 0
    while True:
        now = time.monotonic()
        el = now - t0
        if el >= seconds:
            break
        if mark is None and el >= warmup:
            mark = (now, topo.rx_packets("dst"))
        due = int(el * rate) - sent
        if due <= 0:
            time.sleep(min(0.0005, (sent + 1) / rate - el))
            continue
        n = min(due, batch)
        chunk = [frames[(i + k) & 1023] for k in range(n)]
        if send_batch is not None:
            send_batch(chunk)
        else:  # a p4sim without batched ports
            for f in chunk:
                sender.send(f)
        i += n
        sent += n
    t_end = time.monotonic()
    rx_end = topo.rx_packets("dst")
    assert mark is not None
    delivered_rate = (rx_end - mark[1]) / (t_end - mark[0])
    # let the switch drain its queue, then count everything
    last, stable = -1, 0
    while stable < 3:
        time.sleep(0.1)
        cur = topo.rx_packets("dst")
        stable = stable + 1 if cur == last else 0
        last = cur
    return sent / (t_end - t0), delivered_rate, sent, last - rx0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="40000,80000,150000",
                    help="offered loads in frames/s, comma-separated")
    ap.add_argument("--seconds", type=float, default=3.0, help="sending time per rate")
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--per-frame-io", action="store_true",
                    help="the switch without batched I/O (P4SIM_BATCH_IO=0): one system call "
                         "per frame, as before recvmmsg/sendmmsg")
    ap.add_argument("--bmv2", action="store_true",
                    help="run bmv2 simple_switch on the same program and ports instead of p4sim")
    ap.add_argument("serve_args", nargs="*", help="extra `p4sim serve` arguments (after --)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_serve: needs root (namespaces, raw sockets)", file=sys.stderr)
        return 2
    rates = [float(r) for r in args.rates.split(",")]
    print(describe())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    with Topo() as topo:
        proc = start_bmv2(topo) if args.bmv2 else start_switch(topo, args.serve_args, args.per_frame_io)
        try:
            sender = topo.in_ns(lambda: _open_sender())
            io = "per-frame I/O" if args.per_frame_io else "batched I/O"
            what = "bmv2 simple_switch" if args.bmv2 else f"p4sim serve ({io})"
            print(f"{what}, {PROGRAM.name} (64 register RMW/frame), 60-byte "
                  f"frames, {os.cpu_count()} CPUs, {args.seconds:g} s per rate")
            for rate in rates:
                off, dl, sent, total = offer(topo, sender, rate, args.seconds, args.warmup)
                print(f"offered {off:>9,.0f} frames/s   delivered {dl:>9,.0f} frames/s   "
                      f"({total:,} of {sent:,} frames arrived, "
                      f"{100.0 * total / max(1, sent):.1f} %)", flush=True)
            sender.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return 0


def _open_sender() -> Port:
    p = Port(0, "src")
    p.open()
    return p


if __name__ == "__main__":
    sys.exit(main())
