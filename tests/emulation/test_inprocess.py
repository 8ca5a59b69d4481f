"""Deployments run on in-process p4sim fabrics (emulation/inprocess.py): every switch of a k=4
fat-tree runs the v1model INA program as the controller programmed it, with seeded loss on
every switch port, over several rounds."""
from __future__ import annotations

import pytest

from controller.deploy import deploy_plan
from controller.schemes import run_scheme
from emulation.inprocess import run_rounds
from emulation.schemes import fattree_setup

MB = 0.02          # 5,000 values per worker: 79 fragments of 64 lanes


def _deployment(scheme: str):
    topo, job = fattree_setup(4, 6, MB)
    return topo, deploy_plan(topo, job, run_scheme(scheme, topo, [job]), total_elements=int(MB * 1e6 / 4))


def test_goat_lossless_rounds_never_reach_the_ps() -> None:
    topo, dep = _deployment("goat")
    res = run_rounds(topo, dep, rounds=2)
    assert res.exact and len(res.rounds) == 2
    assert res.ps_received == {} and all(r["worker_resent"] == 0 for r in res.rounds)


@pytest.mark.parametrize("scheme", ["goat", "atp", "esa"])
@pytest.mark.parametrize("loss,seed", [(0.01, 1), (0.05, 2)])
def test_rounds_under_loss_on_every_port_are_exact(scheme: str, loss: float, seed: int) -> None:
    topo, dep = _deployment(scheme)
    res = run_rounds(topo, dep, rounds=3, loss=loss, seed=seed)
    assert len(res.rounds) == 3 and res.exact, res.rounds
    assert res.report.lost > 0
    # GOAT's partials stranded by a lost first copy are completed by the workers' retries at
    # their nodes (rule 8), a lost result answered from the node's kept one: the PS, which sees
    # nothing of the network's work, hears only of what two retries did not fix (the third try),
    # here nothing at 1 %. ATP and ESA aggregate only at the few programmable ToRs here (most
    # fragments reach the PS plain, so retries find nothing of their key there and go to the PS
    # as RESENDs), and the PS sees a lost first copy there as a gap in that worker's later ones
    # and completes the fragment from its queries
    if scheme == "goat":
        assert sum(r["worker_resent"] for r in res.rounds) > 0
        assert res.ps_stats.completed < sum(r["worker_resent"] for r in res.rounds) / 10, res.ps_stats
    else:
        assert res.ps_stats.queries > 0, res.ps_stats
