"""A scheme's run on the in-process twin (emulation.inprocess) instead of Mininet: the same plan,
deployment, jobs, computation and ESA priorities as :func:`emulation.schemes.run_scheme`, the
real P4 program in every switch, on a simulated clock with links at their emulated rates.
Deterministic per seed, with no root and no real time: a setting the 2-core machine cannot
emulate in real time (ESA §7.2's 64 servers, the papers' fabrics) runs here at its scale.

The result is a :class:`emulation.schemes.SchemeRun` whose jobs are
:class:`emulation.jobs.RoundResult` s built from what each simulated agent did (the reports a
Mininet agent writes), so emulation.report's rows and the claims table read both instruments
alike. Times are simulated seconds: ``wall_seconds`` is the simulated span, a link's busy time
its bytes at its rate.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from controller.model import Job, Topology
from hostlib.protocol import ETH_IP_UDP_LEN, Flags, ProtocolError, frame_fields
from hostlib.rto import RtoEstimator

from .bounds import spec_of
from .experiment import JobSpec, link_bits_per_s
from .inprocess import run_jobs
from .jobs import RoundResult
from .schemes import PreparedScheme, SchemeRun, esa_inputs, prepare_scheme

# a run stops at this many simulated events (a guard against a run that never settles)
MAX_EVENTS = 60_000_000

_FLAGS_AT = ETH_IP_UDP_LEN + 1                  # the INA header's flags byte in a frame
_PREEMPTED, _REMINDER = int(Flags.PREEMPTED), int(Flags.REMINDER)


class Eviction(NamedTuple):
    """One partial ESA's packet swapping took out of an aggregator."""
    time: float
    switch: str
    evictor_job: int
    evictor_priority: int
    victim_job: int
    victim_task: tuple[int, int, int]      # (sub-model, fragment, round)
    victim_count: int                      # contributions the victim held
    victim_fan_in: int
    victim_priority: int


@dataclass
class EvictionLog:
    """Who evicted whom on the twin's switches (ESA's packet swapping): a frame a switch sends on
    flagged ``PREEMPTED`` without ``REMINDER`` (a reminder's drain evicts nobody) is the victim's
    partial, the frame the switch was processing its evictor."""
    lanes: int = 64
    rows: list[Eviction] = field(default_factory=list)

    def observe(self, t: float, switch: str, frame: bytes, sent: list[bytes]) -> None:
        if len(frame) > _FLAGS_AT and frame[_FLAGS_AT] & _PREEMPTED:
            return                      # a swapped-out partial passing another switch on its way
        for out in sent:
            if len(out) > _FLAGS_AT and out[_FLAGS_AT] & _PREEMPTED and not out[_FLAGS_AT] & _REMINDER:
                try:
                    v, e = frame_fields(out, self.lanes), frame_fields(frame, self.lanes)
                except ProtocolError:
                    continue
                # frame_fields: flags, job, node, sub-model, fragment, worker, fan-in, count, priority, bitmap, round
                self.rows.append(Eviction(t, switch, e[1], e[8], v[1], (v[3], v[4], v[10]), v[7], v[6], v[8]))

    def per_job(self) -> dict[int, dict[str, Any]]:
        """job → evictions it suffered and caused, the mean share of its fan-in a victim partial
        held, tasks of it evicted more than once (a task that took an aggregator back and lost
        it again), and the jobs it swapped aggregators with both ways (ping-pong)."""
        pairs = {(r.evictor_job, r.victim_job) for r in self.rows}
        times = Counter((r.victim_job, r.victim_task) for r in self.rows)
        out: dict[int, dict[str, Any]] = {}
        for job in {j for pair in pairs for j in pair}:
            mine = [r for r in self.rows if r.victim_job == job]
            out[job] = {"evicted": len(mine), "evictions_caused": sum(1 for r in self.rows if r.evictor_job == job),
                        "victim_share": round(sum(r.victim_count / max(1, r.victim_fan_in) for r in mine) / len(mine), 3)
                        if mine else "",
                        "evicted_again": sum(n - 1 for (j, _), n in times.items() if j == job),
                        "ping_pong_with": " ".join(str(o) for o in sorted(
                            a for a, b in pairs if b == job and a != job and (job, a) in pairs))}
        return out


def run_scheme_twin(topo: Topology, jobs: list[Job], specs: list[JobSpec], scheme: str, *, bw_scale: float,
                    window: int, seed: int, rto: dict[str, float], pool: int, jitter: float = 0.0,
                    loss: float = 0.0, loss_detection: str = "rack", prepared: PreparedScheme | None = None,
                    on_round: Callable[[], None] | None = None, log: Callable[[str], None] = print,
                    switch: str = "p4sim", layered: bool = False) -> SchemeRun:
    """``scheme`` planned and deployed for ``jobs`` (or ``prepared``) and run on the twin with
    every link at its capacity / ``bw_scale``; each worker computes its spec's ``compute`` plus
    U(0, ``jitter``) before every round; ``rto``: the hosts' timers (emulation.run.host_timers).
    ``on_round()`` is called as any worker finishes a round. ``switch``: p4sim only (the twin
    runs the v1model program in process); ``layered``: the workers send layer by layer as
    backpropagation computes them (hostlib.layers)."""
    if switch != "p4sim":
        raise ValueError(f"the twin runs p4sim's v1model program, not {switch!r}")
    if prepared is None:
        prepared = prepare_scheme(topo, jobs, specs, scheme, bw_scale=bw_scale, window=window, seed=seed,
                                  pool=pool, log=log)
    fd = prepared.deployment
    spec = {d.job_id: spec_of(specs, d.job_id) for d in fd.jobs}
    evictions = EvictionLog() if scheme == "esa" else None
    results = run_jobs(topo, fd, rounds={i: s.rounds for i, s in spec.items()}, loss=loss, seed=seed,
                       window=window, rto=RtoEstimator(**rto), starts={i: s.start for i, s in spec.items()},
                       priorities={} if scheme == "esa" else prepared.priorities, bw_scale=bw_scale,
                       compute={i: s.compute for i, s in spec.items()}, jitter=jitter,
                       esa=esa_inputs(fd, spec, prepared.bounds, jitter) if scheme == "esa" else None,
                       until=1e6, max_events=MAX_EVENTS, on_round=on_round, loss_detection=loss_detection,
                       observe=None if evictions is None else evictions.observe, capacities=True,
                       layered=layered)
    report = results[0].report if results else None
    rates = link_bits_per_s(topo, bw_scale)
    carried: dict[tuple[str, str], int] = {}
    for (a, b, _), n in (report.link_bytes.items() if report else ()):
        carried[(a, b)] = carried.get((a, b), 0) + n
    busy = {ab: 8 * n / rates[ab] for ab, n in carried.items() if ab in rates}
    busiest = max(busy, key=busy.__getitem__, default=None)
    span = report.now if report else 0.0
    switch_tx = sum(report.switch_frames.values()) if report else 0
    jobs_out = []
    for dep, res in zip(fd.jobs, results):
        if report is not None and not all(w["done"] for w in res.extra["workers"]):
            log(f"[{scheme}] job {dep.job_id}: not done at {span:.1f} simulated s ({report.events} events)")
        ps_in = [(n, b) for (a, b, job), n in (report.link_bytes.items() if report else ()) if b == dep.ps
                 and job == dep.job_id]
        ps = {"received": dict(res.ps_received), "rx_packets": sum(res.ps_received.values()),
              "rx_bytes": sum(n for n, _ in ps_in), "results_sent": getattr(res.ps_stats, "results_sent", 0),
              "completed": getattr(res.ps_stats, "completed", 0)}
        jobs_out.append(RoundResult(scheme, res.extra["workers"], ps, switch_tx, span, job=dep.job_id,
                                    start=spec[dep.job_id].start,
                                    busiest_link="→".join(busiest) if busiest else "",
                                    busiest_link_seconds=busy[busiest] if busiest else 0.0,
                                    extra={} if evictions is None else
                                    {"evictions": evictions.per_job().get(dep.job_id, {"evicted": 0})}))
    return SchemeRun(scheme, jobs_out, fd, sum(len(v) for v in fd.ops.values()), bounds=prepared.bounds,
                     dropped=report.lost if report else None, loss=loss, layered=layered)


__all__ = ["run_scheme_twin", "Eviction", "EvictionLog", "MAX_EVENTS"]
