"""Sending layer by layer as backpropagation computes the gradients: the layered Worker's order
and release gate, LayerRelease's timing, the twin's overlap and the round floor it implies."""
from __future__ import annotations

import numpy as np
import pytest

from hostlib.layers import LayerRelease
from hostlib.protocol import Flags, InaHeader, build_frame, fragment_layout, layer_order, parse_frame
from hostlib.rto import RtoEstimator
from hostlib.worker import FragmentLabel, Worker

K = 8
PS_IP, IP = "10.0.9.1", "10.0.0.2"


def _layered(window: int = 4) -> Worker:
    return Worker(5, 1, PS_IP, IP, [FragmentLabel(2, 4, 10 * s) for s in range(3)], lanes=K, window=window,
                  layered=True, rto=RtoEstimator(initial=1.0, minimum=0.5, maximum=2.0))


def _sent(frames: list[bytes]) -> list[tuple[int, int]]:
    return [(h.submodel_id, h.fragment_id) for f in frames for h in [parse_frame(f, K).header]]


def _result(sub: int, frag: int) -> bytes:
    h = InaHeader(5, 2, sub, frag, 255, 4, 4, 0, 0b1111, Flags.RESULT)
    return build_frame(h, np.zeros(K, dtype=np.int32), src_ip=PS_IP, dst_ip=IP)


def test_layer_order_sends_the_last_sub_model_first_each_in_fragment_order() -> None:
    sizes = [2 * K, K, 3 * K]
    sub, frag, _, _ = fragment_layout(sizes, K)
    order = layer_order(sizes, K)
    assert [(int(sub[i]), int(frag[i])) for i in order] == [(2, 0), (2, 1), (2, 2), (1, 0), (0, 0), (0, 1)]


def test_a_layered_worker_sends_only_what_was_released() -> None:
    wk = _layered()
    wk.push(np.zeros(6 * K), [2 * K, K, 3 * K], ready=0)
    assert wk.start(0.0) == []                                  # nothing computed yet
    assert _sent(wk.release(1, 0.1)) == [(2, 0), (2, 1), (2, 2)]   # the last layer's gradients
    assert wk.next_deadline() is not None
    assert _sent(wk.release(2, 0.2)) == [(1, 0)]                 # the window of 4 is full now
    out = wk.on_frame(_result(2, 0), 0.25)
    assert _sent(out) == []                                      # the front layer is not computed yet
    assert _sent(wk.release(3, 0.3)) == [(0, 0)]
    for sub, frag in [(2, 1), (2, 2), (1, 0), (0, 0), (0, 1)]:
        wk.on_frame(_result(sub, frag), 0.4)
    assert wk.done()


def test_ready_and_release_are_for_layered_workers() -> None:
    wk = Worker(5, 1, PS_IP, IP, [FragmentLabel(2, 4)], lanes=K)
    with pytest.raises(ValueError, match="layered"):
        wk.push(np.zeros(K), ready=0)
    wk.push(np.zeros(K))
    with pytest.raises(ValueError, match="layered"):
        wk.release(1, 0.0)
    assert not _layered().c_capable                   # the C worker interleaves sub-models


def test_layer_release_releases_each_sub_model_at_its_time() -> None:
    wk = _layered(window=8)
    wk.push(np.zeros(6 * K), [2 * K, K, 3 * K], ready=0)
    agent = LayerRelease(wk, [0.5, 0.7, 1.0])
    assert agent.start(0.0) == [] and agent.next_deadline() == 0.5
    assert _sent(agent.on_timer(0.6)) == [(2, 0), (2, 1), (2, 2)]
    assert agent.next_deadline() == pytest.approx(0.7)          # before any fragment's RTO
    assert _sent(agent.on_timer(1.2)) == [(1, 0), (0, 0), (0, 1)]   # both due: both go
    with pytest.raises(ValueError, match="decrease"):
        LayerRelease(wk, [1.0, 0.5])
    with pytest.raises(ValueError, match="layered"):
        LayerRelease(Worker(5, 1, PS_IP, IP, [FragmentLabel(2, 4)], lanes=K), [0.0])


def test_release_times_follow_backpropagation_and_bound_the_round() -> None:
    from emulation.agents import FORWARD_SHARE, layer_release_times
    from emulation.bounds import host_link_round_seconds, round_floor

    sizes = [100, 300]                                   # the front layer, then the last one
    times = layer_release_times(sizes, 10.0, 0.9)
    assert times == pytest.approx([10.3 + 0.6 * 0.75, 10.9])    # the last layer (3/4 of it) first
    assert FORWARD_SHARE == pytest.approx(1 / 3)
    link = host_link_round_seconds(sizes, 1.0, 64)
    assert round_floor(sizes, 0.9, 1.0, 64) == pytest.approx(0.9 + link)
    front = host_link_round_seconds([100], 1.0, 64)
    layered = round_floor(sizes, 0.9, 1.0, 64, layered=True)
    assert layered == pytest.approx(max(0.3 + 0.45 + link, 0.9 + front))
    assert layered < 0.9 + link                           # overlap: less than computing, then sending
