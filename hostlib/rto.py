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
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2.0
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt

    def retry_backoff(self, current: float) -> float:
        """The next wait of an item retried after ``current``: doubled, without the floor,
        up to ``max_backoff`` RTOs and ``maximum``. Starting from a measured round trip rather
        than the floor, an unlucky item tries again soon; doubling keeps an overloaded PS from
        being flooded (an emulated 5 % run capped at the floor resent 11 times per fragment)."""
        return min(self.maximum, self.max_backoff * self.rto, 2.0 * current)

    def backoff(self, current: float) -> float:
        """Exponential backoff of one item's timeout, capped at ``max_backoff`` RTOs and at
        ``maximum``: losses here are random drops, not congestion, so a fragment unlucky several
        times in a row must not stall its window for seconds."""
        return min(self.maximum, self.max_backoff * self.rto, max(self.minimum, 2.0 * current))
