"""bench_hostlib's kernel floor: a round's datagrams through loopback sockets with no protocol
work, the bound any host path on these sockets stays under."""
from __future__ import annotations

import math

import pytest

from hostlib import native

from loopback import require_loopback_udp


def test_the_kernel_floor_is_cheaper_per_datagram_with_gso(capsys: pytest.CaptureFixture[str]) -> None:
    if not native.available():
        pytest.skip(f"no native data path: {native.unavailable_reason()}")
    require_loopback_udp("127.0.0.2")
    from benchmarks import bench_hostlib
    # enough datagrams for the kernel's tick-based split of a process's CPU into user and system
    # to see each side's system time: 5 x 32,768 with GSO (~150 ns each), 5 x 4,096 without (~4 us)
    modes = [True, False] if native.loopback_gso("127.0.0.1") else [False]
    bounds = {gso: bench_hostlib.bench_floor(64 * (32768 if gso else 4096), 5, 2, gso, repeat=2) for gso in modes}
    out = capsys.readouterr().out
    assert all(math.isfinite(b) and b > 0 for b in bounds.values())
    assert "4 x 4,096 datagrams a round (2 workers + PS)" in out and "cheapest of 2 tries of 20,480 sent" in out
    if True in bounds:
        # one UDP_SEGMENT send and one coalesced read carry up to 128 datagrams
        assert bounds[True] > 2 * bounds[False]
