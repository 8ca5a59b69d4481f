"""Retransmission-timeout estimation shared by the worker and the PS (ESA §6: TCP-style RTO
with a floor, RTO_min, so that ordinary aggregation delay is not mistaken for loss)."""
from __future__ import annotations

from dataclasses import dataclass


RETRY_MIN = 1e-4       # s: a retry never comes sooner than this after the last try


@dataclass
class RtoEstimator:
    """RFC 6298 smoothed RTT / variance; ``rto`` never drops below ``minimum``.

    The "RTT" is what the owner measures: send → result for a worker, entry created → complete
    for the PS (ESA §6). Samples of retransmitted items must not be fed (Karn's rule).
    """
    initial: float = 0.005
    minimum: float = 0.001
    maximum: float = 1.0
    max_backoff: float = 4.0      # an item's timeout grows to at most this many RTOs
    srtt: float | None = None
    rttvar: float = 0.0

    @property
    def rto(self) -> float:
        if self.srtt is None:
            return max(self.initial, self.minimum)
        return min(self.maximum, max(self.minimum, self.srtt + 4.0 * self.rttvar))

    def sample(self, rtt: float) -> None:
        self.srtt, self.rttvar = smoothed(self.srtt, self.rttvar, rtt)

    def backoff(self, current: float, *, floor: bool = True) -> float:
        """Exponential backoff of one item's timeout, capped at ``max_backoff`` RTOs and at
        ``maximum``: losses here are random drops, not congestion, so a fragment unlucky several
        times in a row must not stall its window for seconds. ``floor=False``: no ``minimum``
        either — for retries that start from a measured round trip rather than the floor (an
        unlucky item tries again soon, while doubling keeps an overloaded PS from being flooded:
        an emulated 5 % run capped at the floor resent 11 times per fragment)."""
        doubled = max(self.minimum, 2.0 * current) if floor else 2.0 * current
        return min(self.maximum, self.max_backoff * self.rto, doubled)


def smoothed(srtt: float | None, rttvar: float, rtt: float) -> tuple[float, float]:
    """RFC 6298's update of (srtt, rttvar) with one sample (srtt None: the first)."""
    if srtt is None:
        return rtt, rtt / 2.0
    return 0.875 * srtt + 0.125 * rtt, 0.75 * rttvar + 0.25 * abs(srtt - rtt)
