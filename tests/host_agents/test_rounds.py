"""A worker's rounds: the results buffer a new round takes over from the round it drops."""
from __future__ import annotations

import numpy as np

from .test_agents_unit import K, _result, _worker


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
