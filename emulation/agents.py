"""Worker and PS agents as processes inside Mininet hosts, over UDP (hostlib.drivers.run_udp).

    python -m emulation.agents worker --config FILE
    python -m emulation.agents ps --config FILE

The config (JSON, written by :func:`worker_config` / :func:`ps_config`) names the agent, its
addresses and plan labels, and a start protocol: the agent binds its socket, builds its
gradient, writes ``ready_file``, waits for ``go_file`` (holding a wall-clock start time, so all
agents begin together), runs, and writes its report as JSON to ``out``:

* worker: completion ``seconds``, ``exact`` (its result == Σ of every worker's fixed-point
  gradient, regenerated from the seeds), fragments ``sent``/``resent``, ``results`` received,
  packets and bytes sent/received on its socket;
* PS: what it received by kind (plain, partial, switch_result, collision, resend, ...), results
  and reminders sent, packets/bytes received. The PS runs until SIGTERM or ``timeout``.
"""
from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from controller.deploy import slot_function
from controller.esa_priority import JobProgress
from hostlib.drivers import UdpTransport, run_udp
from hostlib.layers import LayerRelease
from hostlib.protocol import encode_fragments, fragment_layout
from hostlib.ps import JobConfig, ParameterServer
from hostlib.rto import RtoEstimator
from hostlib.worker import NODE_TRIES, FragmentLabel, Worker
from hostlib.worker_group import WorkerGroup

UDP_OVERHEAD = 14 + 20 + 8          # Ethernet + IPv4 + UDP: bytes on the wire per datagram


class CountingTransport(UdpTransport):
    """UdpTransport that counts datagrams and wire bytes each way (batched calls included, so
    run_udp keeps its many-frames-per-system-call path)."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.counts = {"tx_packets": 0, "tx_bytes": 0, "rx_packets": 0, "rx_bytes": 0}

    def _count(self, way: str, frames: list[bytes]) -> None:
        self.counts[f"{way}_packets"] += len(frames)
        self.counts[f"{way}_bytes"] += sum(len(f) for f in frames)

    def send(self, frame: bytes) -> None:
        super().send(frame)
        self._count("tx", [frame])

    def send_many(self, frames: Iterable[bytes]) -> None:
        frames = list(frames)
        super().send_many(frames)
        self._count("tx", frames)

    def recv(self, timeout: float) -> bytes | None:
        frame = super().recv(timeout)
        if frame is not None:
            self._count("rx", [frame])
        return frame

    def recv_many(self, timeout: float, max_frames: int | None = None) -> list[bytes]:
        frames = super().recv_many(timeout, max_frames)
        self._count("rx", frames)
        return frames


ROUND_SEED_STRIDE = 1_000_003      # round r's gradient of the worker seeded s: gradient(s + r * stride)


def round_seeds(seeds: Sequence[int], rnd: int) -> list[int]:
    return [s + rnd * ROUND_SEED_STRIDE for s in seeds]


def gradient(seed: int, n: int) -> np.ndarray:
    """A worker's gradient: reproducible from its seed, so anyone can compute the exact sum."""
    return np.random.default_rng(seed).normal(0.0, 4.0, n)


def expected_fixed(seeds: Sequence[int], sizes: Sequence[int], lanes: int, scale_bits: int = 16) -> np.ndarray:
    """Σ over workers of their fixed-point gradients, encoded as the Worker encodes them
    (``encode_fragments``: K lanes per fragment, each sub-model starting a new fragment), in
    gradient order."""
    n = sum(sizes)
    _, _, start, stop = fragment_layout(sizes, lanes)
    used = np.arange(lanes) < (stop - start)[:, None]       # the lanes holding values, row by row
    total = np.zeros(n, dtype=np.int64)
    for seed in seeds:
        total += encode_fragments(gradient(seed, n), sizes, scale_bits, lanes)[used]
    return total


def _rto(cfg: dict[str, Any]) -> RtoEstimator:
    r = cfg.get("rto", {})
    return RtoEstimator(initial=r.get("initial", 0.3), minimum=r.get("minimum", 0.1), maximum=r.get("maximum", 2.0))


def _wait_go(cfg: dict[str, Any]) -> float:
    """Signal readiness, then sleep until the start time the orchestrator wrote."""
    Path(cfg["ready_file"]).write_text("ready\n")
    go = Path(cfg["go_file"])
    deadline = time.time() + cfg.get("start_timeout", 120.0)
    while not go.exists() or not go.read_text().strip():
        if time.time() > deadline:
            raise TimeoutError("no go signal")
        time.sleep(0.01)
    t0 = float(go.read_text())
    time.sleep(max(0.0, t0 - time.time()))
    return t0


def round_labels(labels: Sequence[FragmentLabel], priorities: Sequence[Sequence[int]] | None,
                 rnd: int, fan_ins: Sequence[Sequence[int]] | None = None) -> list[FragmentLabel]:
    """The labels of round ``rnd``: ESA recomputes sub-model priorities as the job progresses
    (``priorities[rnd][submodel]``), GOAT-Async the fan-in of the round's participants
    (``fan_ins[rnd][submodel]``); without them the plan's labels stay."""
    out = list(labels)
    if priorities:
        row = priorities[min(rnd, len(priorities) - 1)]
        out = [replace(lab, priority=int(p)) for lab, p in zip(out, row)]
    if fan_ins:
        out = [replace(lab, fan_in=int(f)) for lab, f in zip(out, fan_ins[rnd])]
    return out


def measured_labels(labels: Sequence[FragmentLabel], progress: JobProgress | None,
                    unit: float = 1.0) -> list[FragmentLabel]:
    """ESA: the labels with the priorities Eq. 1 gives from what this worker measured of its
    job so far (``progress``; sub-model i is layer i + 1), as bytes of P × ``unit`` (the
    planner's, common to all jobs); without ``progress`` the labels stay."""
    if progress is None:
        return list(labels)
    return [replace(lab, priority=b) for lab, b in zip(labels, progress.priority_bytes(len(labels), unit))]


def job_progress(esa: dict[str, Any] | None) -> JobProgress | None:
    """The worker's measurements for ESA's Eq. 1 from its config's ``esa`` entry (rounds,
    priors for round 0), or None where the scheme is not ESA."""
    if not esa:
        return None
    return JobProgress(comm_prior=float(esa["comm_prior"]), comp_prior=float(esa["comp_prior"]),
                       rounds_total=esa.get("rounds"))


# a round's computation is the forward pass, then backpropagation, about twice as long (one
# pass for the activations' gradients, one for the weights')
FORWARD_SHARE = 1.0 / 3.0


def layer_release_times(sizes: Sequence[int], start: float, compute: float) -> list[float]:
    """When a layered worker's sub-models (``sizes`` in model order: sub-model 0 is the front
    layer) have their gradients, computing for ``compute`` seconds from ``start``: the k-th time
    is when the last k + 1 are done, the backward pass covering the model from its last layer
    at an even rate per parameter (hostlib.layers.LayerRelease's times)."""
    total = sum(sizes) or 1
    backward_from = start + FORWARD_SHARE * compute
    done, times = 0, []
    for size in reversed(sizes):
        done += size
        times.append(backward_from + (1.0 - FORWARD_SHARE) * compute * done / total)
    return times


def compute_seconds(compute: float, jitter: float, seed: int, rnd: int) -> float:
    """A worker's computation (forward and backward pass) before round ``rnd``'s gradients:
    the job's ``compute`` seconds plus a U(0, ``jitter``) delay of its own, seeded (ESA §7.2.1's
    per-worker send jitter: workers of one job arrive at the switch at different times)."""
    if jitter <= 0:
        return compute
    return compute + random.Random(seed * 7919 + rnd).uniform(0.0, jitter)


def _round_over(cfg: dict[str, Any], participants: Sequence[int], rnd: int) -> bool:
    """Whether every participant of round ``rnd`` has logged it in its progress file."""
    for w in participants:
        try:
            lines = Path(cfg["peer_progress"][str(w)]).read_text().split()
        except OSError:
            return False
        if str(rnd) not in lines:
            return False
    return True


def _poll(cond: Any, timeout: float) -> bool:
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            return False
        time.sleep(0.005)
    return True


def _progress(cfg: dict[str, Any], rnd: int) -> None:
    if cfg.get("progress_file"):
        with open(cfg["progress_file"], "a") as f:       # the orchestrator's progress bar
            f.write(f"{rnd}\n")


_COUNTS = ("sent", "resent", "fast_resent", "results", "duplicate_results", "queries_answered", "overflowed")


def run_worker(cfg: dict[str, Any]) -> dict[str, Any]:
    """``rounds`` all-reduce rounds back to back (a round starts once the previous one's results
    are all in, as in synchronous training), each with fresh gradients; then keep answering
    the PS (queries for a result another worker lost) until the orchestrator's finish file.
    The job starts ``start_delay`` seconds after the common start time. ``cfg["parts"]``: one
    entry per job part this host works for — one, or one per PS of a job split over several
    PSes (InArt), each its own Worker (job id, PS, labels, sub-models, seeds), all on one socket
    and in lockstep. Reports per part, keyed by job id."""
    lanes, parts = cfg["lanes"], cfg["parts"]
    workers = [Worker(p["job_id"], p["worker_id"], p["ps_ip"], cfg["ip"],
                      [FragmentLabel(*lab) for lab in p["labels"]], mac=cfg["mac"], lanes=lanes,
                      window=cfg.get("window", 8), rto=_rto(cfg), node_tries=cfg.get("node_tries", NODE_TRIES),
                      loss_detection=cfg.get("loss_detection", "rack"), layered=cfg.get("layered", False),
                      slot_of=None if p.get("slot_pools") is None else slot_function(
                          p["job_id"], {int(n): (b, s) for n, (b, s) in p["slot_pools"].items()}))
               for p in parts]
    layered = cfg.get("layered", False)
    if layered and len(parts) > 1:
        raise ValueError("a layered job's model is on one PS: one part per host")
    agent: Any = workers[0] if len(workers) == 1 else WorkerGroup(workers)
    tr = CountingTransport(cfg["ip"], lanes=lanes)
    records: list[list[dict[str, Any]]] = [[] for _ in parts]
    unchecked: list[tuple[dict[str, Any], dict[str, Any], int, np.ndarray]] = []   # (record, part, round, result)
    timeout = cfg.get("timeout", 300.0)
    joined = cfg.get("participants")              # GOAT-Async: who takes part in each round
    progress = [job_progress(p.get("esa")) for p in parts]     # ESA: Eq. 1's inputs, measured
    try:
        t0 = _wait_go(cfg)
        time.sleep(cfg.get("start_delay", 0.0))
        start = time.time()
        for rnd in range(cfg.get("rounds", 1)):
            if joined is not None and parts[0]["worker_id"] not in joined[rnd]:
                # still computing when the round closed (Alg. 2): this worker sits it out, and
                # starts its next round once this one is over (as it would on receiving the new
                # parameters: a newer round would reclaim the aggregators this one still uses),
                # answering the PS about its last round meanwhile
                t = time.time()
                over = lambda: _round_over(cfg, joined[rnd], rnd)      # noqa: E731
                finished = (run_udp(agent, tr, timeout, stop=over) if workers[0].round >= 0
                            else _poll(over, timeout))
                for rec in records:
                    rec.append({"round": rnd, "seconds": time.time() - t, "done": finished, "exact": True,
                                "joined": False, **dict.fromkeys(_COUNTS, 0)})
                _progress(cfg, rnd)
                if not finished:
                    break
                continue
            comp = compute_seconds(cfg.get("compute", 0.0), cfg.get("jitter", 0.0), parts[0]["seed"], rnd)
            # layered: the round goes out after the forward pass, each sub-model as
            # backpropagation computes it (times from the push: run_udp's clock starts there)
            wait = comp * FORWARD_SHARE if layered else comp
            releases = layer_release_times(parts[0]["submodel_sizes"], -wait, comp) if layered else None
            if wait > 0:
                t = time.time()          # computing; still answering the PS about the last round
                if workers[0].round >= 0:
                    run_udp(agent, tr, wait, stop=lambda: time.time() - t >= wait)
                time.sleep(max(0.0, wait - (time.time() - t)))
            for p, wk, prog in zip(parts, workers, progress):
                wk.labels = dict(enumerate(measured_labels(round_labels(
                    [FragmentLabel(*lab) for lab in p["labels"]], p.get("priorities"), rnd, p.get("round_fan_in")),
                    prog, (p.get("esa") or {}).get("unit", 1.0))))
                sizes = p["submodel_sizes"]
                wk.push(gradient(round_seeds([p["seed"]], rnd)[0], sum(sizes)), sizes, round=rnd,
                        ready=0 if layered else None)
            t = time.time()
            finished = run_udp(agent if releases is None else LayerRelease(agent, releases), tr, timeout)
            comm = time.time() - t
            for p, rec, wk, prog in zip(parts, records, workers, progress):
                st = wk.stats
                if prog is not None:
                    prog.record_finish(time.time(), start)      # the job's priority, not this worker's
                rec.append({"round": rnd, "seconds": comm, "compute_seconds": comp,
                            "priorities": [wk.labels[g].priority for g in sorted(wk.labels)],
                            "done": bool(finished and wk.done()),
                            "exact": False, "sent": st.sent, "resent": st.resent, "fast_resent": st.fast_resent,
                            "results": st.results, "duplicate_results": st.duplicate_results,
                            "queries_answered": st.queries_answered, "overflowed": len(st.overflowed),
                            "joined": True, "timers": _timers(rto=wk.rto, resend_rtt=wk.resend_rtt,
                                                              retry_rtt=wk.retry_rtt)})
                if finished:
                    unchecked.append((rec[-1], p, rnd, wk.result_fixed()))
            _progress(cfg, rnd)
            if not finished:
                break
        seconds = time.time() - start
        Path(cfg["done_file"]).write_text("done\n")
        finish = Path(cfg["finish_file"])
        run_udp(agent, tr, cfg.get("linger", 120.0), stop=finish.exists)
    finally:
        tr.close()
    # checked once every agent is done: the check's CPU time must not slow the rounds (on a
    # 2-core machine it did: 44 ms per worker and round before expected_fixed was vectorised)
    for row, p, rnd, result in unchecked:
        seeds = round_seeds(p["all_seeds"], rnd)
        row["exact"] = bool(np.array_equal(result, expected_fixed(
            seeds if joined is None else [seeds[i] for i in joined[rnd]], p["submodel_sizes"], lanes)))
    jobs = {}
    for p, rounds in zip(parts, records):
        total = {k: sum(r[k] for r in rounds) for k in _COUNTS}
        jobs[str(p["job_id"])] = {
            "role": "worker", "host": cfg["host"], "worker_id": p["worker_id"],
            "done": len(rounds) == cfg.get("rounds", 1) and all(r["done"] for r in rounds),
            "exact": bool(rounds) and all(r["exact"] for r in rounds), "seconds": seconds,
            "start_lag": start - t0, "fragments": sum(-(-n // lanes) for n in p["submodel_sizes"]),
            "rounds": rounds, **total, **tr.counts, "send_dropped": tr.send_dropped}
    return {"role": "worker", "host": cfg["host"], "jobs": jobs}


def run_ps(cfg: dict[str, Any]) -> dict[str, Any]:
    lanes = cfg["lanes"]
    jobs = {}
    for jid, j in cfg["jobs"].items():
        sub_nodes = j.get("submodel_nodes")
        joined = j.get("participants")
        reach = j.get("node_workers")
        jobs[int(jid)] = JobConfig({int(w): (ip, mac) for w, (ip, mac) in j["workers"].items()},
                                   {int(n): ip for n, ip in j.get("reminder_via", {}).items()},
                                   None if sub_nodes is None else {int(s): list(v) for s, v in sub_nodes.items()},
                                   None if joined is None else {int(r): list(v) for r, v in joined.items()},
                                   int(j.get("result_via", 0)),
                                   None if reach is None else {int(n): list(ws) for n, ws in reach.items()})
    ps = ParameterServer(cfg["ip"], jobs, mac=cfg["mac"], lanes=lanes, timeout=_rto(cfg))
    stop = {"flag": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__("flag", True))
    tr = CountingTransport(cfg["ip"], lanes=lanes)
    try:
        _wait_go(cfg)
        run_udp(ps, tr, cfg.get("timeout", 300.0), stop=lambda: stop["flag"])
    finally:
        tr.close()
    st = ps.stats
    return {"role": "ps", "host": cfg["host"], "received": dict(st.received), "results_sent": st.results_sent,
            "results_resent": st.results_resent, "results_relayed": st.results_relayed, "reminders": st.reminders,
            "queries": st.queries, "completed": st.completed, "incomplete": len(ps.incomplete()), **tr.counts,
            "send_dropped": tr.send_dropped,
            "timers": _timers(timeout=ps.timeout, answer_rtt=ps.answer_rtt, resend_spread=ps.resend_spread)}


def _timers(**estimators: RtoEstimator) -> dict[str, dict[str, float | None]]:
    """Each estimator's smoothed RTT and RTO (s) as it ended: what the timers had learnt."""
    return {name: {"srtt": None if r.srtt is None else round(r.srtt, 6), "rto": round(r.rto, 6)}
            for name, r in estimators.items()}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulation.agents")
    ap.add_argument("role", choices=["worker", "ps"])
    ap.add_argument("--config", required=True)
    args = ap.parse_args(argv)
    cfg = json.loads(Path(args.config).read_text())
    report = run_worker(cfg) if args.role == "worker" else run_ps(cfg)
    text = json.dumps(report, indent=1)
    Path(cfg["out"]).write_text(text + "\n")
    print(text)
    # a worker host reports per job part (InArt's split runs several parts on one host)
    return 0 if args.role == "ps" or all(j["exact"] for j in report["jobs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
