"""controller/solver.py: statuses, limits, no process-wide state, no banner."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from controller.solver import INF, Limits, LinearModel, solve


def _knapsack(n: int, seed: int = 1) -> LinearModel:
    """max Σ v x s.t. Σ w x <= W, x binary: a small MILP with a known optimum by DP."""
    rng = np.random.default_rng(seed)
    m = LinearModel()
    values, weights = rng.integers(1, 50, n), rng.integers(1, 30, n)
    cols = [m.var(0, 1, cost=float(v), integer=True) for v in values]
    m.row([(c, float(w)) for c, w in zip(cols, weights)], hi=float(weights.sum() // 2))
    return m


def _knapsack_optimum(m: LinearModel) -> float:
    cap = int(m.row_hi[0])
    best = [0.0] * (cap + 1)
    for v, w in zip(m.cost, m.value):
        for c in range(cap, int(w) - 1, -1):
            best[c] = max(best[c], best[c - int(w)] + v)
    return best[cap]


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_milp_reaches_the_dp_optimum(backend):
    m = _knapsack(25)
    sol = solve(m, maximize=True, limits=Limits(120.0, mip_rel_gap=0.0), backend=backend)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(_knapsack_optimum(m))
    assert m.objective_of(sol.values) == pytest.approx(sol.objective)
    assert sol.bound is not None and sol.bound >= sol.objective - 1e-6


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_infeasible_and_unbounded_are_reported(backend):
    m = LinearModel()
    x = m.var(0, 1)
    m.row([(x, 1.0)], lo=2.0)
    sol = solve(m, maximize=True, limits=Limits(10.0), backend=backend)
    assert sol.status == "infeasible" and not sol.has_solution and sol.objective is None
    m = LinearModel()
    x = m.var(0, INF, cost=1.0)
    sol = solve(m, maximize=True, limits=Limits(10.0), backend=backend)
    assert sol.status in ("unbounded", "infeasible") if backend == "cbc" else sol.status == "unbounded"
    assert not sol.has_solution


def test_lp_gives_duals_and_the_lexicographic_second_objective():
    # max x + y s.t. x + y <= 4, x <= 3: every split is optimal; then minimise x -> (0, 4)
    m = LinearModel()
    x, y = m.var(0, 3, cost=1.0), m.var(0, INF, cost=1.0)
    cap = m.row([(x, 1.0), (y, 1.0)], hi=4.0)
    for method in ("simplex", "ipm"):
        sol = solve(m, maximize=True, limits=Limits(10.0, method=method), then_minimize=[1.0, 0.0])
        assert sol.status == "optimal" and sol.objective == pytest.approx(4.0)
        assert sol.values[x] == pytest.approx(0.0, abs=1e-6) and sol.values[y] == pytest.approx(4.0)
        assert abs(sol.row_duals[cap]) == pytest.approx(1.0)


def test_limits_reject_nonsense():
    with pytest.raises(ValueError, match="time_limit"):
        Limits(0.0)
    with pytest.raises(ValueError, match="method"):
        Limits(1.0, method="barrier")
    with pytest.raises(ValueError, match="backend"):
        solve(LinearModel(), maximize=False, limits=Limits(1.0), backend="gurobi")


def test_every_planner_in_one_process_in_the_order_that_broke():
    """ARO (a MILP, which starts HiGHS's thread scheduler), InArt, GOAT-LP, then the GINA ILP, in
    one fresh process: each reaches optimality and nothing is printed (no HiGHS banner)."""
    script = textwrap.dedent("""
        from controller.aro import solve_aro
        from controller.goat import solve_gina_ilp, solve_gina_lp
        from controller.inart import solve_inart
        from controller.model import Job, SubModel
        from controller.topologies import fat_tree, inart_testbed, leaf_spine
        topo = leaf_spine(2, 3, 2, seed=1)
        hosts = topo.hosts()
        job = Job("j", hosts[:4], [hosts[-1]], [SubModel("g", 10.0)])
        aro = solve_aro(topo, [job])
        it = inart_testbed()
        inart = solve_inart(it, Job("i", [h for h in it.hosts() if h.startswith("w")],
                                    [h for h in it.hosts() if h.startswith("ps")], [SubModel("g", 1.0)]))
        ft = fat_tree(4, 2)
        fh = ft.hosts()
        gjob = Job("g", fh[:6], [fh[-1]], [SubModel("a", 4.0), SubModel("b", 2.0)])
        lp = solve_gina_lp(ft, gjob)
        ilp = solve_gina_ilp(ft, gjob)
        import sys
        print(aro.status, inart.status, lp.status, ilp.status, lp.bound <= ilp.objective + 1e-6,
              file=sys.stderr)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout == "", f"solver output leaked: {out.stdout[:500]!r}"
    assert out.stderr.split() == ["optimal", "heuristic", "optimal", "optimal", "True"], out.stderr[-3000:]
