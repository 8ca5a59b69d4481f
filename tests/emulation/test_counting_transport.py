"""The emulation agents' frame counts: each frame sent is counted once, however it leaves.

hostlib.native's UDP loop sends the Python core's frames with the base class's ``send_many``
and counts them itself; a few frames fall back to single sends, which must not reach the
subclass's counting ``send`` as well (they did: an emulated 5 % GOAT run's PS reported 1.5x the
frames it sent)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from emulation.agents import CountingTransport
from hostlib.drivers import UdpTransport
from hostlib.protocol import Flags, InaHeader, build_frame

from loopback import require_loopback_udp

K = 8


def _frames(n: int, src: str, dst: str) -> list[bytes]:
    return [build_frame(InaHeader(1, 0, 0, i, 0, 1, 1, 0, 1, Flags(0)), np.zeros(K, np.int32), src_ip=src,
                        dst_ip=dst) for i in range(n)]


@pytest.mark.parametrize("n", [1, 2, 8])       # below and above UdpTransport.MMSG_MIN
def test_counting_transport_counts_each_frame_once(n: int) -> None:
    net = f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"
    require_loopback_udp(f"{net}.1", f"{net}.2")
    tx, rx = CountingTransport(f"{net}.1", lanes=K), UdpTransport(f"{net}.2", lanes=K)
    try:
        frames = _frames(n, f"{net}.1", f"{net}.2")
        UdpTransport.send_many(tx, frames)          # as hostlib.native's loop sends (it counts those)
        assert tx.counts["tx_packets"] == 0
        tx.send_many(frames)
        assert tx.counts["tx_packets"] == n
        tx.send(frames[0])
        assert tx.counts["tx_packets"] == n + 1
        assert len(rx.recv_many(1.0)) + sum(len(rx.recv_many(0.2)) for _ in range(3)) == 2 * n + 1
    finally:
        tx.close()
        rx.close()
