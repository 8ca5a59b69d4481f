"""ESA's priority (ESA §5.4, Eq. 1) in one place, for the planner and for the worker agents.

    P_j(l) = 1/T_j × L_j/l × Comm_j/Comp_j

l: the gradient's layer (1 = the front layer, which the next forward pass needs first), L_j:
the job's number of layers, T_j: its remaining time (or, unknown, an estimate from the service
it has attained so far), Comm_j/Comp_j: its communication/computation ratio, which ESA
measures from the previous iteration. The planner (:func:`controller.baselines.esa_priorities`)
evaluates it on what it knows up front; a worker evaluates it each round on what it measured
(:class:`JobProgress`) and writes :func:`priority_byte` into its fragments' headers.

Each job computes its priority alone (the product form needs no normalisation across jobs,
§5.4), so the 8-bit header value is a fixed function of P, not a rank among jobs: linear,
P × ``unit`` with one unit for all jobs (the planner's, from what it knows up front:
:func:`priority_unit`), so the switch's downgrading (halving the byte, §5.4) halves P, as
the paper means it. (A logarithmic byte, tried first, made halving divide P by 2^10; it
preempted about as often: the encoding is not what makes ESA's aggregators thrash.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

MAX_PRIORITY = 254              # 255 marks an aggregator ATP holds (p4src aggregator.p4)
MIN_COMPUTE_S = 1e-3            # a job with no measured computation: its ratio as if 1 ms


def eq1_priority(layer: int, layers: int, remaining_time: float, comm_comp_ratio: float) -> float:
    """ESA Eq. 1 for the gradients of ``layer`` (1-based) of a job with ``layers`` layers."""
    if not 1 <= layer <= layers:
        raise ValueError(f"layer {layer}: not in 1..{layers}")
    if remaining_time <= 0 or comm_comp_ratio <= 0:
        raise ValueError(f"remaining time {remaining_time} and Comm/Comp {comm_comp_ratio} must be positive")
    return (1.0 / remaining_time) * (layers / layer) * comm_comp_ratio


def priority_byte(priority: float, unit: float) -> int:
    """The header's 8-bit priority for Eq. 1's value: P × ``unit``, in 1..254 (0 never: even
    the lowest may claim a free aggregator; 255 is ATP's)."""
    return max(1, min(MAX_PRIORITY, round(priority * unit)))


def priority_unit(highest: float) -> float:
    """The unit that maps ``highest`` (the largest Eq. 1 value the planner expects of any job)
    to 254: every job then encodes its own P with it, comparably."""
    if highest <= 0 or not math.isfinite(highest):
        raise ValueError(f"highest priority {highest}: must be positive and finite")
    return MAX_PRIORITY / highest


@dataclass
class JobProgress:
    """What a worker has measured of its job, round by round, and its priors for round 0.

    ``rounds_total``: the rounds the job will run (None: unknown, so T_j is estimated from the
    attained service, as ESA does when the training time is not known). ``comm_prior`` /
    ``comp_prior``: seconds of one round's communication (e.g. the plan's link-rate ideal) and
    computation before any round has been measured."""
    comm_prior: float
    comp_prior: float
    rounds_total: int | None = None
    comm_s: list[float] = field(default_factory=list)      # measured, one per finished round
    comp_s: list[float] = field(default_factory=list)
    last_finish: float | None = None                       # when the last recorded round ended

    def record(self, comp_seconds: float, comm_seconds: float) -> None:
        self.comp_s.append(comp_seconds)
        self.comm_s.append(comm_seconds)

    def record_finish(self, finished_at: float, started_at: float) -> None:
        """Record a round from the job's clock: its period is the time since the previous round's
        results (``started_at``, the job's start, for the first), its computation the job's
        expected one (``comp_prior``), its communication the rest. Every worker of a job gets its
        results at about the same moment (multicast) and expects the same computation, so they
        record about the same values and label their fragments with one priority, the job's
        (§5.4: each job computes its own), not one skewed by a worker's own jitter (a worker whose
        last result came late, through the PS, measures a round a few percent longer)."""
        since = started_at if self.last_finish is None else self.last_finish
        period = max(finished_at - since, MIN_COMPUTE_S)
        comp = max(self.comp_prior, MIN_COMPUTE_S)
        self.record(comp, max(period - comp, MIN_COMPUTE_S))
        self.last_finish = finished_at

    @property
    def rounds_done(self) -> int:
        return len(self.comm_s)

    def comm_comp_ratio(self) -> float:
        """The previous round's communication over its computation (the priors before one)."""
        comm = self.comm_s[-1] if self.comm_s else self.comm_prior
        comp = self.comp_s[-1] if self.comp_s else self.comp_prior
        return max(comm, MIN_COMPUTE_S) / max(comp, MIN_COMPUTE_S)

    def round_time(self) -> float:
        """One round's time: the mean of those measured, else the priors."""
        if self.comm_s:
            return (sum(self.comm_s) + sum(self.comp_s)) / self.rounds_done
        return max(self.comm_prior + self.comp_prior, MIN_COMPUTE_S)

    def attained_service(self) -> float:
        """Seconds the job has run so far (computation and communication)."""
        return sum(self.comm_s) + sum(self.comp_s)

    def remaining_time(self) -> float:
        """T_j: rounds left × the measured round time when the job's length is known; else the
        attained service (a job that has run long is expected to run long: least attained
        service first), at least one round's time."""
        if self.rounds_total is not None:
            return max(1, self.rounds_total - self.rounds_done) * self.round_time()
        return max(self.attained_service(), self.round_time())

    def priorities(self, layers: int) -> list[float]:
        """Eq. 1 for each layer, front first, from what has been measured so far."""
        t, cc = self.remaining_time(), self.comm_comp_ratio()
        return [eq1_priority(l, layers, t, cc) for l in range(1, layers + 1)]

    def priority_bytes(self, layers: int, unit: float) -> list[int]:
        return [priority_byte(p, unit) for p in self.priorities(layers)]

    def last_round_priority(self, layers: int) -> float:
        """The front layer's P in the job's last round if every round takes the priors' time:
        the highest it is expected to reach (for :func:`priority_unit`)."""
        t = max(self.comm_prior + self.comp_prior, MIN_COMPUTE_S)
        return eq1_priority(1, layers, t, self.comm_comp_ratio())


__all__ = ["eq1_priority", "priority_byte", "priority_unit", "JobProgress", "MAX_PRIORITY", "MIN_COMPUTE_S"]
