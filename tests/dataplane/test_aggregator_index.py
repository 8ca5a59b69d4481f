"""controller.deploy.aggregator_index names the aggregator the v1model program gives a fragment
(what SwitchML's workers follow to reuse a slot only after its result)."""
from __future__ import annotations

import numpy as np

from controller.deploy import aggregator_index

from .ina_harness import InaSwitch


def test_the_index_is_where_the_program_puts_the_partial() -> None:
    sw = InaSwitch("v1model", workers=2, node_id=7, pool_size=48)     # not a power of two: mod, not mask
    for sub, frag in ((0, 0), (3, 12345), (2, 99)):
        sw.send(sw.fragment(0, 2, fragment_id=frag, submodel_id=sub), np.ones(sw.lanes, np.int32))
        want = aggregator_index(1, 7, sub, frag, 0, 48)
        assert sw.register("agg_owner", want) == (1 << 64) | (7 << 48) | (sub << 32) | frag
