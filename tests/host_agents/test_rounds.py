"""A worker's rounds: the results buffer a new round takes over from the round it drops, and
the results decoded into floats."""
from __future__ import annotations

import numpy as np
import pytest

from hostlib import drivers  # noqa: F401  (installs hostlib.native's round decoder)
from hostlib import native
from hostlib import worker as worker_module
from hostlib.worker import FragmentLabel, Worker

from .test_agents_unit import PS_IP, WIP, K, _result, _worker


def test_a_recycled_results_buffer_reads_as_zeros_where_no_result_came() -> None:
    """Round 2 takes over round 0's buffer without clearing it; until a fragment's result comes,
    result_fixed still shows zeros there, not round 0's sum."""
    wk = _worker(n_frags=2)
    for rnd in range(2):
        if rnd:
            wk.push(np.zeros(2 * K))
        wk.start(0.0)
        for frag in range(2):
            wk.on_frame(_result(5, frag, np.full(K, 100 + 10 * rnd + frag), rnd=rnd), 0.001)
        assert wk.done()
    old_buffer = wk._cur.results
    wk.push(np.zeros(2 * K))
    wk.start(0.0)
    assert wk._cur.results is not old_buffer and wk._cur._stale     # round 0's, not round 1's (queries read it)
    wk.on_frame(_result(5, 1, np.full(K, 7), rnd=2), 0.001)
    assert np.array_equal(wk.result_fixed(), np.r_[np.zeros(K), np.full(K, 7)])
    wk.on_frame(_result(5, 0, np.full(K, -3), rnd=2), 0.002)
    assert wk.done() and np.array_equal(wk.result_fixed(), np.r_[np.full(K, -3), np.full(K, 7)])


@pytest.mark.parametrize("decoder", ["native", "numpy"])
@pytest.mark.parametrize("scale_bits, divisor", [(16, 1.0), (40, 3.0), (-5, 2.0)])
def test_result_into_rounds_as_numpy_does(decoder: str, scale_bits: int, divisor: float,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker.result_into: each sum times 2^-scale over the divisor, rounded once to float32, bit
    for bit what numpy's int64 -> float64 -> float32 path gives; in gradient order across
    interleaved sub-models with short last fragments; zeros where a result has not come."""
    if decoder == "native" and not native.available():
        pytest.skip(f"no native data path: {native.unavailable_reason()}")
    decoded = []
    installed = worker_module._round_decoder
    if installed is not None:
        monkeypatch.setattr(worker_module, "_round_decoder", lambda *a: decoded.append(1) or installed(*a))
    sizes = [3 * K + 5, 2 * K + 1]                    # both sub-models end with a short fragment
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)] * 2, lanes=K, window=100, native=decoder == "native")
    wk.push(np.zeros(sum(sizes)), sizes)
    wk.start(0.0)
    rng = np.random.default_rng(scale_bits + 100)
    results = {(s, f): rng.integers(-2**31, 2**31, K) for s in range(2) for f in range(-(-sizes[s] // K))}

    def expected() -> np.ndarray:
        total = wk.result_fixed().astype(np.float64)
        return (np.ldexp(total, -scale_bits) / divisor).astype(np.float32)

    for i, ((s, f), lanes) in enumerate(results.items()):
        wk.on_frame(_result(5, f, lanes, sub=s), 0.001)
        if i == 2:                                    # incomplete: numpy's path, zeros where missing
            got = wk.result_into(np.full(sum(sizes), np.nan, dtype=np.float32), scale_bits, divisor)
            assert np.array_equal(got.view(np.uint32), expected().view(np.uint32))
    assert wk.done()
    got = wk.result_into(np.empty(sum(sizes), dtype=np.float32), scale_bits, divisor)
    assert np.array_equal(got.view(np.uint32), expected().view(np.uint32))
    assert len(decoded) == (decoder == "native")      # the C pass, for a complete round only
    with pytest.raises(ValueError, match="needs contiguous float32"):
        wk.result_into(np.empty(sum(sizes), dtype=np.float64))
