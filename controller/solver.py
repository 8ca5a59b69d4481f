"""The one door to the LP/MILP solvers: HiGHS through highspy, and CBC through PuLP for cross-checks.

Every call is self-contained: it builds a fresh solver object, states its own limits
(:class:`Limits`: time, gap, seed) and reports its status. Nothing here sets a process-wide
option: in particular never HiGHS's ``threads``, which a recent HiGHS refuses once its global
scheduler has started (so the result would depend on which solver call came first in the
process). Output, HiGHS's start-up banner included, stays off unless ``Limits.verbose``.

Status vocabulary (:attr:`Solution.status`):

- ``"optimal"``: proved optimal (within ``Limits.mip_rel_gap`` for a MILP);
- ``"feasible"``: a limit stopped the search; ``values`` is the best solution found;
- ``"infeasible"``, ``"unbounded"``: proved so;
- ``"no_solution"``: stopped (limit or numerical trouble) without any feasible solution.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Iterable, Sequence

import highspy
import numpy as np

INF = math.inf
LP_METHODS = ("choose", "simplex", "ipm")


@dataclass(frozen=True)
class Limits:
    """What one solver call may spend, and how it reports."""
    time_limit: float               # seconds of wall time; a MILP stopped by it is "feasible"
    mip_rel_gap: float = 1e-4       # relative gap at which a MILP counts as optimal
    seed: int = 0                   # HiGHS random_seed: the same seed gives the same search
    method: str = "choose"          # LP algorithm: "choose", "simplex" or "ipm"
    verbose: bool = False           # solver log (and HiGHS's banner) on stdout

    def __post_init__(self) -> None:
        if not self.time_limit > 0:
            raise ValueError(f"time_limit must be > 0 seconds, got {self.time_limit}")
        if not 0 <= self.mip_rel_gap < 1:
            raise ValueError(f"mip_rel_gap must be in [0, 1), got {self.mip_rel_gap}")
        if self.method not in LP_METHODS:
            raise ValueError(f"method must be one of {', '.join(LP_METHODS)}, got {self.method!r}")


@dataclass
class Solution:
    status: str                     # see the module docstring
    values: np.ndarray              # column values (zeros when there is no solution)
    objective: float | None         # in the model's own sense; None without a solution
    bound: float | None             # best proved bound (MILP dual bound; the optimum for an LP)
    row_duals: np.ndarray           # LP row duals (empty for a MILP or without a solution)
    seconds: float

    @property
    def has_solution(self) -> bool:
        return self.status in ("optimal", "feasible")


class LinearModel:
    """A (mixed-integer) linear program, built column by column and row by row (CSR rows)."""

    def __init__(self) -> None:
        self.col_lo: list[float] = []
        self.col_hi: list[float] = []
        self.cost: list[float] = []
        self.integer: list[bool] = []
        self.row_lo: list[float] = []
        self.row_hi: list[float] = []
        self.start: list[int] = [0]
        self.index: list[int] = []
        self.value: list[float] = []

    def var(self, lo: float = 0.0, hi: float = INF, *, cost: float = 0.0, integer: bool = False) -> int:
        """Add a column; returns its index."""
        self.col_lo.append(float(lo))
        self.col_hi.append(float(hi))
        self.cost.append(float(cost))
        self.integer.append(bool(integer))
        return len(self.cost) - 1

    def row(self, terms: Iterable[tuple[int, float]], lo: float = -INF, hi: float = INF) -> int:
        """Add ``lo <= Σ coef·x[col] <= hi`` over ``(col, coef)`` terms; returns the row's index."""
        for col, coef in terms:
            self.index.append(col)
            self.value.append(float(coef))
        self.start.append(len(self.index))
        self.row_lo.append(float(lo))
        self.row_hi.append(float(hi))
        return len(self.row_lo) - 1

    @property
    def num_cols(self) -> int:
        return len(self.cost)

    @property
    def num_rows(self) -> int:
        return len(self.row_lo)

    @property
    def size(self) -> dict[str, int]:
        return {"cols": self.num_cols, "int_cols": int(sum(self.integer)), "rows": self.num_rows}

    def objective_of(self, values: Sequence[float] | np.ndarray) -> float:
        return float(np.dot(self.cost, values))


def _new_highs(verbose: bool) -> highspy.Highs:
    """A HiGHS instance that prints nothing unless ``verbose``.

    highspy's ``Highs`` wrapper registers its callbacks in its constructor, and HiGHS >= 1.16
    logs its banner on that first call, before any option can be set. The extension's own class
    (``_Highs``, what the wrapper derives from) has the same solver API without the callbacks,
    which nothing here uses, and prints only once output is enabled.
    """
    core = getattr(highspy.highs, "_Highs", None) if hasattr(highspy, "highs") else None
    h = core() if core is not None and not verbose else highspy.Highs()
    h.setOptionValue("output_flag", bool(verbose))
    return h


def _status(h: highspy.Highs, integer: bool) -> str:
    ms = h.getModelStatus()
    S = highspy.HighsModelStatus
    if ms == S.kOptimal:
        return "optimal"
    if ms == S.kInfeasible:
        return "infeasible"
    if ms in (S.kUnbounded, S.kUnboundedOrInfeasible):
        return "unbounded" if ms == S.kUnbounded else "infeasible"
    feasible = h.getInfo().primal_solution_status == 2          # kSolutionStatusFeasible
    return "feasible" if feasible and integer else "no_solution"


def solve(model: LinearModel, *, maximize: bool, limits: Limits,
          start: Sequence[float] | None = None, then_minimize: Sequence[float] | None = None,
          backend: str = "highs") -> Solution:
    """Optimise ``model``; ``start`` is a feasible MILP start (HiGHS only).

    ``then_minimize``: a second objective minimised over the optimal face of the first (the
    first kept within a relative 1e-7), for a lexicographic optimum; the returned objective and
    bound stay those of the first. ``backend``: "highs" (default) or "cbc" (PuLP's bundled CBC,
    for cross-checks).
    """
    if backend == "cbc":
        return _solve_cbc(model, maximize, limits, then_minimize)
    if backend != "highs":
        raise ValueError(f"unknown solver backend {backend!r} (use 'highs' or 'cbc')")
    t0 = time.perf_counter()
    integer = any(model.integer)
    h = _new_highs(limits.verbose)
    h.setOptionValue("time_limit", float(limits.time_limit))
    h.setOptionValue("random_seed", int(limits.seed))
    h.setOptionValue("mip_rel_gap", float(limits.mip_rel_gap))
    if limits.method != "choose":
        h.setOptionValue("solver", limits.method)
    lp = highspy.HighsLp()
    lp.num_col_ = model.num_cols
    lp.num_row_ = model.num_rows
    lp.col_cost_ = np.array(model.cost, dtype=float)
    lp.col_lower_ = np.array(model.col_lo, dtype=float)
    lp.col_upper_ = np.array(model.col_hi, dtype=float)
    lp.row_lower_ = np.array(model.row_lo, dtype=float)
    lp.row_upper_ = np.array(model.row_hi, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = model.num_cols
    lp.a_matrix_.num_row_ = model.num_rows
    lp.a_matrix_.start_ = np.array(model.start, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(model.index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(model.value, dtype=float)
    if integer:
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
                           for b in model.integer]
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    h.passModel(lp)
    if start is not None and integer:
        sol = highspy.HighsSolution()
        sol.col_value = [float(v) for v in start]
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    status = _status(h, integer)
    if status not in ("optimal", "feasible"):
        return Solution(status, np.zeros(model.num_cols), None, None, np.zeros(0), time.perf_counter() - t0)
    info = h.getInfo()
    solution = h.getSolution()
    values = np.array(solution.col_value)
    objective = float(info.objective_function_value)
    bound = float(info.mip_dual_bound) if integer else objective
    if not math.isfinite(bound):
        bound = None
    duals = np.zeros(0) if integer else np.array(solution.row_dual)
    if then_minimize is not None and status == "optimal":
        # second phase on the optimal face, warm-started from the first
        cost = np.array(model.cost)
        nz = np.flatnonzero(cost).astype(np.int32)
        tol = _face_tol(objective)
        lo, hi = (objective - tol, INF) if maximize else (-INF, objective + tol)
        h.addRow(lo, hi, len(nz), nz, cost[nz])
        h.changeObjectiveSense(highspy.ObjSense.kMinimize)
        h.changeColsCost(model.num_cols, np.arange(model.num_cols, dtype=np.int32),
                         np.array(then_minimize, dtype=float))
        h.setOptionValue("time_limit", float(limits.time_limit))
        h.run()
        if _status(h, integer) == "optimal":
            values = np.array(h.getSolution().col_value)
    return Solution(status, values, objective, bound, duals, time.perf_counter() - t0)


def _face_tol(z: float) -> float:
    """Slack on the first objective while optimising the second over its optimal face."""
    return 1e-7 * max(1.0, abs(z))


def _solve_cbc(model: LinearModel, maximize: bool, limits: Limits,
               then_minimize: Sequence[float] | None) -> Solution:
    import pulp
    t0 = time.perf_counter()
    prob = pulp.LpProblem("model", pulp.LpMaximize if maximize else pulp.LpMinimize)
    xs = [prob.add_variable(f"c{k}", lowBound=None if lo == -INF else lo, upBound=None if hi == INF else hi,
                            cat=pulp.LpInteger if z else pulp.LpContinuous)
          for k, (lo, hi, z) in enumerate(zip(model.col_lo, model.col_hi, model.integer))]

    def linear(coefs: Sequence[float]) -> pulp.LpAffineExpression:
        return pulp.lpSum(c * xs[k] for k, c in enumerate(coefs) if c)

    prob += linear(model.cost)
    for r in range(model.num_rows):
        a, b = model.start[r], model.start[r + 1]
        expr = pulp.lpSum(model.value[k] * xs[model.index[k]] for k in range(a, b))
        lo, hi = model.row_lo[r], model.row_hi[r]
        if lo == hi:
            prob += expr == lo, f"r{r}"
        else:
            if lo > -INF:
                prob += expr >= lo, f"r{r}l"
            if hi < INF:
                prob += expr <= hi, f"r{r}u"
    with warnings.catch_warnings():     # PuLP 3 deprecates its bundled CBC, the only one here
        warnings.simplefilter("ignore", DeprecationWarning)
        cbc = pulp.PULP_CBC_CMD(msg=limits.verbose, timeLimit=limits.time_limit,
                                gapRel=limits.mip_rel_gap)

    def run() -> str:
        prob.solve(cbc)
        st = pulp.LpStatus[prob.status]
        if st == "Optimal":
            if getattr(prob, "sol_status", pulp.LpSolutionOptimal) == pulp.LpSolutionIntegerFeasible:
                return "feasible"               # stopped with an incumbent, not proven optimal
            return "optimal"
        return {"Infeasible": "infeasible", "Unbounded": "unbounded"}.get(st, "no_solution")

    status = run()
    if status not in ("optimal", "feasible"):
        return Solution(status, np.zeros(model.num_cols), None, None, np.zeros(0), time.perf_counter() - t0)
    values = np.array([x.value() or 0.0 for x in xs])
    objective = model.objective_of(values)
    if then_minimize is not None and status == "optimal":
        tol = _face_tol(objective)
        prob += (linear(model.cost) >= objective - tol) if maximize else (linear(model.cost) <= objective + tol)
        prob.sense = pulp.LpMinimize
        prob.setObjective(linear(then_minimize))
        if run() == "optimal":
            values = np.array([x.value() or 0.0 for x in xs])
    bound = objective if status == "optimal" else None
    return Solution(status, values, objective, bound, np.zeros(0), time.perf_counter() - t0)
