"""Is it the links or this machine that sets the pace, and at which link rate is it the links?

An emulated fabric is a time-dilated one: every switch and host is a process sharing this
machine's cores, so a link rate the machine cannot keep busy measures the CPU, not the network.
Two tools here, both pure (``emulation.run`` and ``emulation.train`` run the probes):

* :func:`pace_note` — after a run: the busiest link's measured busy share and the round's
  ratio to the link-rate ideal say whether the links (busy >= :data:`BUSY_LINK_BOUND`) or the
  CPU set the pace; a CPU-bound run says so in words.
* :func:`choose_link_mbps` — ``--link-mbps auto``: a *probe* runs the experiment once on links
  too fast to matter (:data:`PROBE_MBPS`), so its time is the machine's: the CPU needs
  ``T_cpu = total_bytes / M`` per round, where ``M`` is the bytes per second the machine moved
  over all links in the probe and ``total_bytes`` what all links carry in a round (counted on the
  in-process twin). The rate at which a round's busiest link needs ``HEADROOM × T_cpu`` is the
  fastest at which that link, not the CPU, is the bottleneck; the smallest over the schemes (and
  jobs) is chosen, so every scheme is compared on the same, link-bound, fabric.
* A lossy round costs the machine more than a lossless one (resends, the PS's recovery, every
  frame of it through the switch processes): :func:`loss_cpu_factor` — a probe of each scheme at
  the run's highest loss, whose CPU time (:func:`cpu_busy_seconds`, busy time over all cores, not
  its wall time, which the recovery timers stretch) over that scheme's lossless CPU time scales
  its ``T_cpu``. Per scheme: their recoveries differ (ATP's runs through the PS, GOAT's through
  the switches), and one factor for all left ATP's 5 % rounds CPU-bound (61 % busy).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Mapping

BUSY_LINK_BOUND = 0.8     # below this share of the run the busiest link idled: not what limited it
PROBE_MBPS = 1000.0       # Mininet's TCLink takes at most 1000 Mb/s: still shaped (tc's cost stays in)
HEADROOM = 1.6            # the busiest link needs this many times the CPU's time per round
# ... and this many in a lossy run. Recovery waits on timers and round trips, which a loaded CPU
# stretches even where it has time to spare: at 1.6, GOAT's 5 % rows on the k=4 fat-tree (auto
# chose 4 Mb/s, 2-core AMD EPYC) kept their busiest link 77-82 % busy; at 3.2 Mb/s, 84 %.
LOSS_HEADROOM = 2.0


@dataclass(frozen=True)
class Traffic:
    """One job's lossless round as the in-process twin counts it, at a reference link rate."""
    seconds: float        # the busiest link's bytes at its rate (the link-rate ideal)
    total_bytes: float    # what every link together carries in a round (of the jobs beside it)


@dataclass(frozen=True)
class Choice:
    """What ``--link-mbps auto`` chose, and why."""
    link_mbps: float
    deciding: str                  # the scheme/job whose link rate bound it
    machine_bytes_per_s: float     # M: bytes all links together carried per second in the probe
    cpu_seconds: float             # the deciding round's CPU time at M
    ideal_seconds: float           # its link-rate ideal at link_mbps
    headroom: float
    loss: float = 0.0              # the highest loss the rate must keep link-bound
    cpu_factor: float = 1.0        # a round at that loss over a lossless one, in CPU time

    def explain(self, probe: str) -> str:
        lossy = (f" at {self.loss:g} loss ({self.cpu_factor:.2f}× the lossless round's CPU time, measured "
                 f"by a probe at that loss)" if self.loss else "")
        return (f"--link-mbps auto: {self.link_mbps:g} Mb/s. {probe}: this machine moved "
                f"{self.machine_bytes_per_s * 8 / 1e6:.0f} Mb/s over all links together, so "
                f"{self.deciding}'s round needs {self.cpu_seconds:.2f} s of CPU{lossy}; at {self.link_mbps:g} Mb/s its "
                f"busiest link needs {self.ideal_seconds:.2f} s ({self.ideal_seconds / self.cpu_seconds:.1f}× that, "
                f"headroom {self.headroom:g}), so the links, not the CPU, set the pace")


def nice_floor(x: float) -> float:
    """``x`` rounded down to two significant digits (a rate a person can repeat)."""
    if not x > 0 or not math.isfinite(x):
        raise ValueError(f"rate {x}: must be positive and finite")
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return round(math.floor(x / step + 1e-9) * step, 10)


def choose_link_mbps(probe_seconds: float, probe_total_bytes: float, ref_mbps: float,
                     traffic: Mapping[str, Traffic], headroom: float | None = None, *, loss: float = 0.0,
                     cpu_factor: float | Mapping[str, float] = 1.0) -> Choice:
    """The fastest link rate (Mb/s, two significant digits, rounded down) at which every round
    of ``traffic`` (name → its twin counts at ``ref_mbps``) keeps its busiest link busy for
    ``headroom`` (default :data:`HEADROOM`, :data:`LOSS_HEADROOM` with ``loss``) × the CPU time
    the probe implies (``probe_total_bytes`` over all links took ``probe_seconds`` on this
    machine), times ``cpu_factor`` for rounds at ``loss`` (:func:`loss_cpu_factor`: one for all,
    or name → its own, every name of ``traffic``)."""
    if headroom is None:
        headroom = LOSS_HEADROOM if loss > 0 else HEADROOM
    factors = cpu_factor if isinstance(cpu_factor, Mapping) else dict.fromkeys(traffic, cpu_factor)
    for name, f in factors.items():
        if not f >= 1.0:
            raise ValueError(f"cpu_factor {f} of {name}: at least 1")
    if not probe_seconds > 0 or not probe_total_bytes > 0:
        raise ValueError("the probe moved nothing: cannot calibrate")
    if not traffic:
        raise ValueError("nothing to calibrate for")
    missing = [name for name in traffic if name not in factors]
    if missing:
        raise ValueError(f"no cpu_factor for {', '.join(missing)}")
    machine = probe_total_bytes / probe_seconds
    best: tuple[float, str, float] | None = None
    for name, t in traffic.items():
        cpu = t.total_bytes / machine * factors[name]
        # the ideal grows as the rate drops: seconds(r) = t.seconds × ref / r >= headroom × cpu
        rate = ref_mbps * t.seconds / (headroom * cpu)
        if best is None or rate < best[0]:
            best = (rate, name, cpu)
    rate, name, cpu = best               # type: ignore[misc]
    chosen = nice_floor(rate)
    return Choice(chosen, name, machine, cpu, traffic[name].seconds * ref_mbps / chosen, headroom, loss,
                  factors[name])


def busy_seconds(proc_stat: str, ticks_per_s: float) -> float:
    """CPU time spent busy over all cores (s) from /proc/stat's text: the first ("cpu") line's
    user, nice, system, irq, softirq and steal ticks (idle and iowait left out)."""
    for line in proc_stat.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(v) for v in fields[1:]]
            user, nice, system, _idle, _iowait, irq, softirq, steal = (ticks + [0] * 8)[:8]
            return (user + nice + system + irq + softirq + steal) / ticks_per_s
    raise ValueError("/proc/stat: no 'cpu' line")


def cpu_busy_seconds() -> float:
    """This machine's busy CPU time so far (s, all cores), for differences around a probe."""
    with open("/proc/stat") as f:
        return busy_seconds(f.read(), os.sysconf("SC_CLK_TCK"))


def loss_cpu_factor(lossless_cpu_s: float, lossy_cpu_s: float) -> float:
    """How many times the lossless round's CPU time a lossy round takes (at least 1: a lossy
    round never gets a faster rate than the lossless one)."""
    if not lossless_cpu_s > 0:
        raise ValueError("the lossless probe used no CPU time: cannot scale it")
    return max(1.0, lossy_cpu_s / lossless_cpu_s)


def pace_note(busy: float, ratio_to_ideal: float, what: str) -> str:
    """One line on who set the pace of ``what``: the links (busiest link busy >=
    :data:`BUSY_LINK_BOUND` of the run) or this machine's CPU."""
    if busy >= BUSY_LINK_BOUND:
        return (f"{what}: link-bound — the busiest link was {busy:.0%} busy, mean round {ratio_to_ideal:.2f}× the "
                f"link-rate ideal")
    # not the links: the CPU, or the hosts' sending schedule (window, recovery)
    return (f"{what}: CPU-bound, not link-bound — the busiest link was only {busy:.0%} busy (mean round "
            f"{ratio_to_ideal:.2f}× the link-rate ideal): these times measure this machine ({machine()}) and the "
            f"hosts' sending schedule, not the links; --link-mbps auto picks a rate this machine keeps busy")


def parse_link_mbps(value: str | float, bound: float = PROBE_MBPS) -> float | str:
    """``--link-mbps``: "auto", or a rate in (0, bound] Mb/s; ValueError names what is wrong."""
    if value == "auto":
        return value
    try:
        mbps = float(value)
    except ValueError:
        raise ValueError(f"--link-mbps {value!r}: a rate in Mb/s or auto") from None
    if not 0 < mbps <= bound:
        raise ValueError(f"--link-mbps {mbps:g}: a rate in (0, {bound:g}] Mb/s "
                         "(Mininet's TCLink shapes up to 1000 Mb/s)")
    return mbps


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), or the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    import platform
    return platform.processor() or "unknown CPU"


def machine() -> str:
    """CPU model and core count, for every number a run reports."""
    return f"{cpu_model()}, {os.cpu_count()} cores"


__all__ = ["BUSY_LINK_BOUND", "PROBE_MBPS", "HEADROOM", "LOSS_HEADROOM", "Traffic", "Choice", "nice_floor",
           "choose_link_mbps", "busy_seconds", "cpu_busy_seconds", "loss_cpu_factor", "pace_note", "parse_link_mbps",
           "cpu_model", "machine"]
