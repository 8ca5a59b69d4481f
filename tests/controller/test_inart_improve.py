"""InArt's local search after rounding: the plan is at least as good as ATP's ToR-only plan,
a feasible point of the same model, on InArt's own fabric (k=6 fat-tree, every switch
programmable), and never worse than the rounding it starts from."""
import pytest

from controller.inart import solve_inart
from emulation.experiment import JobSpec, build_topology, place_jobs


def _setting(capacities: bool):
    topo = build_topology("inart")
    if not capacities:            # links only, as the twin models the fabric
        for n in topo.nodes.values():
            n.capacity_gbps = 0.0
    return topo, place_jobs(topo, [JobSpec(0.25, 1)], 12, ps_per_job=2)[0]


@pytest.mark.parametrize("capacities", [False, True])
def test_inart_not_below_atp_on_inart_fattree(capacities):
    topo, job = _setting(capacities)
    atp = solve_inart(topo, job, variant="equal-split", aggregation="tor", any_split_bound=False)
    plan = solve_inart(topo, job)
    assert plan.objective <= plan.bound + 1e-9
    assert plan.objective >= plan.extra["rounded_rate"] - 1e-12
    assert plan.objective >= atp.objective - 1e-12
    if not capacities:
        # the best of 16 independent roundings alone stayed below ATP here (2/3 of its rate)
        assert plan.extra["rounded_rate"] < atp.objective
        assert plan.objective > 1.25 * atp.objective


def test_improve_can_be_turned_off():
    topo, job = _setting(False)
    plan = solve_inart(topo, job, improve=False)
    assert "rounded_rate" not in plan.extra
