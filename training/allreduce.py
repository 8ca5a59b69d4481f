"""All-reduce of flat float vectors through the INA network, for data-parallel training.

One :class:`InaAllReduce` per training process: it owns a :class:`hostlib.shards.ShardedWorker`
(a :class:`hostlib.worker.Worker` and a UDP socket on the worker's address per thread), and every
:meth:`InaAllReduce.allreduce` call is two consecutive protocol rounds of the same job:

1. **Scale round.** Switches only add int32 lanes, so the workers agree on a fixed-point scale
   first. Each worker contributes a one-hot histogram of the binary exponent of its vector's
   largest magnitude (``max|g| < 2^e``); the sum's highest occupied bin is the job-wide
   ``e_max``. A sum can compute a maximum this way because every worker adds exactly 1 to
   exactly one bin.
2. **Value round.** Every worker encodes with ``s = 30 - ceil(log2 N) - e_max`` fractional
   bits: each encoded value is at most ``2^(e_max + s)`` in magnitude after rounding to nearest, so
   the sum of N of them is at most ``N * 2^(e_max + s) <= 2^30`` and cannot overflow int32 —
   with no clipping, whatever the gradients' range (per-call, i.e. per-bucket, scaling). The
   decoded sum differs from the exact sum of the inputs by at most ``N * 2^-(s + 1)``
   per element (:func:`sum_error_bound`), i.e. relative to the largest magnitude about
   ``2^-(30 - ceil(log2 N))``.

Every worker sees the same scale-round result, so every decision taken from it (the scale, or
refusing non-finite or absurdly large gradients) is the same on every worker and no worker is
left waiting in a round the others abandoned. If a value round still comes back flagged
``OVERFLOW`` (it cannot with the scale above; the switch saturates and flags rather than wrap)
the round is redone with a smaller scale — all workers see the same flag — and never returned
as a silently wrong sum.

The wire format is hostlib's (``Worker.push``/``result_fixed``); this module only chooses the
scale and the sub-model split. The vector is cut into the deployment's sub-models in proportion
to the sizes the plan was made for (:meth:`InaJob.split`), so any length — a DDP bucket, the
scale histogram — uses the plan's aggregation nodes.
"""
from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from hostlib.protocol import DEFAULT_LANES, MAX_WORKERS
from hostlib.ps import JobConfig
from hostlib.rto import RtoEstimator
from hostlib.shards import ShardedPs, ShardedWorker
from hostlib.worker import DEFAULT_WINDOW, FragmentLabel

EXP_MIN = -64                 # magnitudes below 2^EXP_MIN share the lowest bin (s is then ~90 bits)
HIST_LANES = 128              # bins for exponents EXP_MIN .. EXP_MIN + 126, and one "unscalable" lane
EXP_MAX = EXP_MIN + HIST_LANES - 2
SUM_BITS = 30                 # N encoded values of magnitude <= 2^(SUM_BITS - ceil(log2 N)) sum within int32


class GradientRangeError(ValueError):
    """Some worker's vector is not finite, or too large to scale (>= 2^EXP_MAX); raised on every
    worker of the call, since all of them see the same scale round."""


class AllReduceTimeout(TimeoutError):
    """A round did not complete within the all-reduce's timeout."""


def ceil_log2(n: int) -> int:
    return max(0, (int(n) - 1).bit_length())


def scale_bits_for(max_exponent: int, n_workers: int) -> int:
    """Fractional bits for values below ``2^max_exponent`` summed over ``n_workers``: the
    largest ``s`` with ``n_workers * 2^(max_exponent + s) <= 2^30`` (no int32 overflow)."""
    return SUM_BITS - ceil_log2(n_workers) - int(max_exponent)


def sum_error_bound(n_workers: int, scale_bits: int) -> float:
    """Largest |decoded INA sum - exact sum| per element before the final float32 cast: each
    of the N encodings rounds to nearest, half a unit of ``2^-scale_bits`` at most."""
    return n_workers * math.ldexp(0.5, -scale_bits)


def _exponent(m: float) -> int:
    """``e`` with ``m < 2^e`` (``m`` > 0, finite)."""
    return math.frexp(m)[1]


# ---------------------------------------------------------------------- the job
@dataclass
class InaJob:
    """What the PS and every worker need to know about one INA job; JSON-serialisable.

    ``workers[w]``: worker w's (IP, MAC); ``labels[w]``: its plan label per sub-model
    (node id, fan-in, priority; node 0: the PS aggregates); ``submodel_sizes``: the gradient
    split the plan was made for; ``reminder_via``/``submodel_nodes``/``result_via``/``node_workers``: as in
    :class:`hostlib.ps.JobConfig`; ``rto``: RtoEstimator arguments for both sides; ``first_round``:
    the round the workers start at. Switches take a first copy of a round older than the one
    their aggregator holds for the same key as a stale duplicate, so a job that runs again on
    switches still holding its state continues its round numbers (docs/protocol.md, "Rounds").
    """
    job_id: int
    ps_ip: str
    workers: list[tuple[str, str | int]]
    labels: list[list[FragmentLabel]]
    submodel_sizes: list[int]
    reminder_via: dict[int, str] = field(default_factory=dict)
    submodel_nodes: dict[int, list[int]] | None = None
    lanes: int = DEFAULT_LANES
    ps_mac: str | int = 0
    rto: dict[str, float] = field(default_factory=lambda: {"initial": 0.3, "minimum": 0.05, "maximum": 2.0})
    result_via: int = 0
    node_workers: dict[int, list[int]] | None = None
    first_round: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.first_round < 1 << 31:
            raise ValueError(f"first round {self.first_round}: in 0..2^31-1")
        if not 1 <= len(self.workers) <= MAX_WORKERS:
            raise ValueError(f"{len(self.workers)} workers: an INA job has 1..{MAX_WORKERS}")
        if len(self.labels) != len(self.workers):
            raise ValueError(f"{len(self.labels)} label lists for {len(self.workers)} workers")
        if not self.submodel_sizes or any(s < 0 for s in self.submodel_sizes) or sum(self.submodel_sizes) <= 0:
            raise ValueError(f"sub-model sizes {self.submodel_sizes}: need non-negative sizes, total > 0")
        if any(len(lab) != len(self.submodel_sizes) for lab in self.labels):
            raise ValueError("every worker needs one label per sub-model")

    @property
    def n_workers(self) -> int:
        return len(self.workers)

    def job_config(self) -> JobConfig:
        return JobConfig({w: (ip, mac) for w, (ip, mac) in enumerate(self.workers)}, dict(self.reminder_via),
                         None if self.submodel_nodes is None else {s: list(v) for s, v in self.submodel_nodes.items()},
                         result_via=self.result_via,
                         node_workers=None if self.node_workers is None else
                         {n: list(ws) for n, ws in self.node_workers.items()})

    def split(self, length: int) -> list[int]:
        """Sub-model sizes for a vector of ``length`` values, proportional to the plan's
        (cumulative rounding, so they add up exactly; a sub-model may get none)."""
        total = sum(self.submodel_sizes)
        cum = np.cumsum(self.submodel_sizes)
        bounds = [0] + [int(round(length * c / total)) for c in cum[:-1]] + [length]
        return [b - a for a, b in zip(bounds, bounds[1:])]

    def rto_estimator(self) -> RtoEstimator:
        return RtoEstimator(**self.rto)

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["labels"] = [[[lab.node_id, lab.fan_in, lab.priority] for lab in labs] for labs in self.labels]
        d["workers"] = [list(w) for w in self.workers]
        d["reminder_via"] = {str(k): v for k, v in self.reminder_via.items()}
        d["submodel_nodes"] = None if self.submodel_nodes is None else {str(k): v for k, v in self.submodel_nodes.items()}
        d["node_workers"] = None if self.node_workers is None else {str(k): v for k, v in self.node_workers.items()}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "InaJob":
        return cls(int(d["job_id"]), d["ps_ip"], [(ip, mac) for ip, mac in d["workers"]],
                   [[FragmentLabel(*lab) for lab in labs] for labs in d["labels"]], list(d["submodel_sizes"]),
                   {int(k): v for k, v in d.get("reminder_via", {}).items()},
                   None if d.get("submodel_nodes") is None else
                   {int(k): list(v) for k, v in d["submodel_nodes"].items()},
                   int(d.get("lanes", DEFAULT_LANES)), d.get("ps_mac", 0), dict(d.get("rto", {})) or
                   {"initial": 0.3, "minimum": 0.05, "maximum": 2.0},
                   int(d.get("result_via", 0)),
                   None if d.get("node_workers") is None else
                   {int(k): list(v) for k, v in d["node_workers"].items()},
                   int(d.get("first_round", 0)))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "InaJob":
        return cls.from_dict(json.loads(Path(path).read_text()))

    @classmethod
    def loopback(cls, n_workers: int, net: str = "127.0.10", *, job_id: int = 1,
                 lanes: int = DEFAULT_LANES, submodels: int = 1) -> "InaJob":
        """PS at ``net.1``, worker w at ``net.(w+2)``, no switch: every fragment is labelled
        node 0, so the PS aggregates (the same protocol, minus the network). ``submodels``: equal
        parts of the gradient, e.g. one per thread of hosts sharded over threads (hostlib.shards)."""
        return cls(job_id, f"{net}.1", [(f"{net}.{w + 2}", 0) for w in range(n_workers)],
                   [[FragmentLabel(0, n_workers)] * submodels for _ in range(n_workers)], [1] * submodels,
                   lanes=lanes)


# ---------------------------------------------------------------------- worker side
@dataclass
class AllReduceStats:
    calls: int = 0
    rounds: int = 0
    redone: int = 0               # value rounds redone after an OVERFLOW flag
    sent: int = 0                 # fragments sent (first copies, all rounds)
    resent: int = 0               # fragments retransmitted (all rounds)
    seconds: float = 0.0          # wall time inside allreduce()
    scale_seconds: float = 0.0    # of which in scale rounds
    last_round: int = -1          # the last protocol round of the job this worker ran
    # per call: [seconds, fragments resent, values] (where a slow or resending call sits)
    per_call: list[list[float]] = field(default_factory=list)


class InaAllReduce:
    """Worker ``worker_id`` of ``job``: sum (or mean) of a float vector over all workers.

    Blocking; one call at a time (a lock serialises callers). Every worker of the job must make
    the same sequence of calls with vectors of the same lengths, as with any collective.

    Between calls a background thread keeps answering the PS: under loss another worker may
    still miss a result of the last round, and the PS then queries this worker for its copy
    (ESA §5.3 case 2). Without it, a worker busy elsewhere — computing, or in another
    collective that waits for the lagging worker — would leave that worker stuck for good.
    """

    # s: the idle server's own check of its stop condition; a call takes the socket back at once
    # (it wakes the server), so this only bounds a missed wake-up. Polling every 2 ms instead cost
    # each call 1.6 ms on average to stop the server, 9 % of a training step (2 calls of 1 and
    # 3.4 MB, loopback, 2-core AMD EPYC)
    IDLE_POLL = 0.05

    def __init__(self, job: InaJob, worker_id: int, *, window: int = DEFAULT_WINDOW, timeout: float = 60.0,
                 threads: int = 1) -> None:
        if not 0 <= worker_id < job.n_workers:
            raise ValueError(f"worker id {worker_id} not in 0..{job.n_workers - 1}")
        self.job, self.worker_id, self.timeout = job, worker_id, timeout
        ip, mac = job.workers[worker_id]
        # the job's sub-models over ``threads`` threads, each with its own socket (hostlib.shards);
        # one thread: one Worker and one socket
        self.worker = ShardedWorker(job.job_id, worker_id, job.ps_ip, ip, job.labels[worker_id], threads, mac=mac,
                                    lanes=job.lanes, native=None, window=window, rto=job.rto_estimator(),
                                    scale_bits=0)
        self.worker.round = job.first_round - 1          # push() starts the next one
        self.stats = AllReduceStats()
        self.last_scale_bits: int | None = None
        self._lock = threading.Lock()
        self._idle_stop = threading.Event()
        self._idle: threading.Thread | None = None

    @property
    def n_workers(self) -> int:
        return self.job.n_workers

    def allreduce(self, values: np.ndarray, *, average: bool = False, out: np.ndarray | None = None) -> np.ndarray:
        """The element-wise sum (``average``: mean) over the job's workers, as float32.

        Exact up to the fixed-point rounding: per element at most
        ``sum_error_bound(N, self.last_scale_bits)`` from the exact sum (divided by N for the
        mean), before the float32 cast. ``out`` (float32, as many elements as ``values``; may be
        ``values`` itself) receives the result, which is returned: a staging buffer is then
        written in place instead of through a new array."""
        if out is not None and (out.dtype != np.float32 or out.size != np.size(values)
                                or not out.flags.c_contiguous):
            raise ValueError(f"out: {out.size} {out.dtype} values for {np.size(values)} inputs; "
                             "needs contiguous float32 of the same size")
        v = np.asarray(values)
        if v.dtype not in (np.float32, np.float64):
            v = v.astype(np.float64)
        v = v.ravel()             # float32 stays float32: the encoder reads it as it is
        result = np.empty(v.size, dtype=np.float32) if out is None else out
        with self._lock:
            self._stop_idle()
            t, resent = time.monotonic(), self.stats.resent
            try:
                # decoded straight into ``result`` once the value round is complete (``out`` may be
                # ``values`` itself: the round's first copies hold what it read)
                return self._allreduce(v, float(self.n_workers) if average else 1.0, result)
            finally:
                took = time.monotonic() - t
                self.stats.calls += 1
                self.stats.seconds += took
                self.stats.per_call.append([round(took, 4), self.stats.resent - resent, v.size])
                self._start_idle()

    def _allreduce(self, v: np.ndarray, divisor: float, out: np.ndarray) -> np.ndarray:
        n = self.n_workers
        t = time.monotonic()
        self._round(self._histogram(v), 0)
        counts = self.worker.result_fixed()
        self.stats.scale_seconds += time.monotonic() - t
        if counts[-1] > 0:
            raise GradientRangeError(f"{int(counts[-1])} of {n} workers have non-finite values or magnitudes "
                                     f">= 2^{EXP_MAX}: nothing to aggregate in fixed point")
        if int(counts.sum()) != n:
            raise RuntimeError(f"scale round counted {int(counts.sum())} workers, the job has {n}")
        e_max = EXP_MIN + int(np.flatnonzero(counts)[-1])
        s = scale_bits_for(e_max, n)
        for _ in range(3):
            # negative s (enormous values): pre-scale by an exact power of two instead, since
            # the Worker's scale is a left shift
            self._round(np.ldexp(v, s) if s < 0 else v, max(s, 0))
            if not self.worker.overflowed:
                self.last_scale_bits = s
                # each sum times 2^-s over the divisor, rounded once to float32 (one pass in C)
                return self.worker.result_into(out, s, divisor)
            self.stats.redone += 1          # every worker saw the same flag: all redo it
            s -= 2
        raise OverflowError(f"INA result still saturated at scale 2^{s + 2}: not returning a wrong sum")

    @staticmethod
    def _histogram(v: np.ndarray) -> np.ndarray:
        h = np.zeros(HIST_LANES)
        m = max(float(v.max()), -float(v.min())) if v.size else 0.0      # max |v|, no |v| array
        if not math.isfinite(m):
            h[-1] = 1
        elif m == 0.0:
            h[0] = 1
        else:
            e = _exponent(m)
            if e > EXP_MAX:
                h[-1] = 1
            else:
                h[max(e, EXP_MIN) - EXP_MIN] = 1
        return h

    def _round(self, values: np.ndarray, scale_bits: int) -> None:
        """One protocol round of ``values`` at ``scale_bits`` (its sum: ``self.worker``'s result)."""
        wk = self.worker
        wk.scale_bits = scale_bits
        wk.push(values, self.job.split(values.size))
        if not wk.run(self.timeout):
            raise AllReduceTimeout(f"worker {self.worker_id}: round {wk.round} incomplete after {self.timeout:g} s "
                                   f"({wk.results} results received)")
        self.stats.rounds += 1
        self.stats.last_round = wk.round
        self.stats.sent += wk.sent
        self.stats.resent += wk.resent

    def _start_idle(self) -> None:
        """Answer the PS in the background until the next call (or close)."""
        if self.worker.round < 0:
            return
        self._idle_stop.clear()
        self._idle = threading.Thread(
            target=self.worker.serve, args=(self._idle_stop.is_set, math.inf, self.IDLE_POLL),
            daemon=True, name=f"ina-worker-{self.worker_id}-idle")
        self._idle.start()

    def _stop_idle(self) -> None:
        if self._idle is not None:
            self._idle_stop.set()
            self.worker.wake()
            self._idle.join()
            self._idle = None

    def serve(self, stop: Callable[[], bool], timeout: float = 60.0) -> None:
        """Keep answering the PS (queries about the last round: another worker may have lost
        its result) until ``stop()``; call before leaving the job."""
        with self._lock:
            self._stop_idle()
            if self.worker.round >= 0:
                self.worker.serve(stop, timeout)

    def close(self) -> None:
        with self._lock:
            self._stop_idle()
        self.worker.close()

    def __enter__(self) -> "InaAllReduce":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---------------------------------------------------------------------- PS side
def serve_ps(job: InaJob, stop: Callable[[], bool], *, timeout: float = 3600.0, threads: int = 1,
             on_ready: Callable[[], None] | None = None) -> ShardedPs:
    """Run the job's parameter server on ``job.ps_ip`` until ``stop()`` (or ``timeout`` s), its
    sub-models over ``threads`` threads (hostlib.shards); returns it (``.stats``). ``on_ready`` is
    called once its sockets are bound."""
    ps = ShardedPs(job.ps_ip, {job.job_id: job.job_config()}, threads, mac=job.ps_mac, lanes=job.lanes,
                   native=None, timeout=job.rto_estimator())
    try:
        if on_ready is not None:
            on_ready()
        ps.serve(stop, timeout)
    finally:
        ps.close()
    return ps

