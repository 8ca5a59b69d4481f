"""GINA as a linear program: the numeric instance of Eq. 1 (distances, sizes, worker classes), its
LP / ILP model, the evaluation of a plan, and the exact (``solve_gina_ilp``) and relaxed
(``relax``, ``solve_gina_lp``) solutions.

The problem, its two objectives and the modelling notes are described in :mod:`controller.goat`,
which re-exports every name of this module.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Mapping, Sequence

import numpy as np

from controller.model import Job, ModelError, Plan, Topology, submodel_key
from controller.solver import Limits, LinearModel, Solution, solve

Objective = Literal["eq1", "eq4"]
Candidates = Literal["all", "on_path"]
_EPS = 1e-7          # LP values below this are zero (solver tolerances are ~1e-9)
_INF = math.inf
_LP_TIME_LIMIT = 600.0       # s per LP solve; the §VII-D relaxations take seconds at most


# ============================================================================ instance


@dataclass(frozen=True)
class WorkerClass:
    """Workers of one job with the same distance vector (interchangeable in Eq. 1)."""
    job: int
    workers: tuple[str, ...]
    dist: np.ndarray            # hops to each switch of ``GinaInstance.switches``, then to the job's PS


@dataclass
class GinaInstance:
    """Numeric form of a GINA instance (one or several jobs sharing switch memory)."""
    jobs: list[Job]
    switches: list[str]                 # S: programmable switches with aggregator memory
    mem_mb: np.ndarray                  # B(s) in MB
    sub_keys: list[str]                 # G: plan keys of the sub-models
    sub_mb: np.ndarray                  # b(g)
    sub_job: np.ndarray                 # job index of each sub-model
    d_s_ps: np.ndarray                  # (jobs, S): D_s(alpha_j)
    classes: list[WorkerClass]
    worker_dist: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)

    @property
    def n_s(self) -> int:
        return len(self.switches)

    def classes_of(self, j: int) -> list[int]:
        return [i for i, c in enumerate(self.classes) if c.job == j]


def build_instance(topology: Topology, jobs: Job | Sequence[Job], *, compress: bool = True) -> GinaInstance:
    """Distances and sizes of Eq. 1 for ``jobs`` on ``topology`` (first PS of each job is alpha)."""
    jobs = [jobs] if isinstance(jobs, Job) else list(jobs)
    if not jobs:
        raise ModelError("GOAT: no job given")
    switches = [s for s in topology.programmable_switches() if topology.nodes[s].memory_bytes > 0]
    mem = np.array([topology.nodes[s].memory_bytes / 1e6 for s in switches], dtype=float)
    from_switch = {s: topology.hop_distances(s) for s in switches}
    keys: list[str] = []
    sizes: list[float] = []
    sub_job: list[int] = []
    d_s_ps = np.full((len(jobs), len(switches)), _INF)
    classes: list[WorkerClass] = []
    worker_dist: dict[tuple[int, str], np.ndarray] = {}
    seen_keys: set[str] = set()
    for j, job in enumerate(jobs):
        if not job.ps:
            raise ModelError(f"job {job.name}: GOAT needs a parameter server (field 'ps')")
        ps = job.ps[0]
        for n in [ps, *job.workers]:
            if n not in topology.nodes:
                raise ModelError(f"job {job.name}: node {n} is not in topology {topology.name}")
        from_ps = topology.hop_distances(ps)
        for i, s in enumerate(switches):
            d_s_ps[j, i] = from_ps.get(s, _INF)
        for sm in job.submodels:
            k = submodel_key(job, sm, len(jobs) > 1)
            if k in seen_keys:
                raise ModelError(f"job {job.name}: sub-model {sm.name} is declared twice")
            seen_keys.add(k)
            keys.append(k)
            sizes.append(float(sm.size_mb))
            sub_job.append(j)
        groups: dict[tuple[float, ...], list[str]] = {}
        for w in job.workers:
            vec = np.array([from_switch[s].get(w, _INF) for s in switches] + [from_ps.get(w, _INF)])
            if not math.isfinite(vec[-1]):
                raise ModelError(f"job {job.name}: worker {w} cannot reach PS {ps}")
            worker_dist[(j, w)] = vec
            key = tuple(vec.tolist()) if compress else (w,)  # type: ignore[assignment]
            groups.setdefault(key, []).append(w)
        for ws in groups.values():
            classes.append(WorkerClass(j, tuple(ws), worker_dist[(j, ws[0])]))
    return GinaInstance(jobs, switches, mem, keys, np.array(sizes), np.array(sub_job, dtype=int),
                        d_s_ps, classes, worker_dist)


# ============================================================================ LP / ILP model


@dataclass
class _Model:
    """GINA's linear model (min ``lp.cost``·x) and where its variables are."""
    lp: LinearModel
    x_col: dict[tuple[int, int], int]             # (g, s) -> column
    u_col: dict[tuple[int, int, int], int]        # (class, g, node) -> column; node == n_s is the PS
    sign: float                                   # objective value = sign * (cost . x)
    cost2: np.ndarray                             # tie-break: PS traffic (MB), to minimise


def _usable(inst: GinaInstance, c: WorkerClass, g: int, s: int, objective: Objective,
            candidates: Candidates, integer: bool) -> bool:
    """May workers of class ``c`` send sub-model ``g`` to switch ``s``? A sub-model larger than
    the switch's memory only fits fractionally: the ILP drops it there (x would be 0 anyway),
    the LP keeps it (Alg. 1 relaxes x to [0, 1] under memory: x = B(s)/b(g) is allowed)."""
    d_ws, d_wa, d_sa = c.dist[s], c.dist[-1], inst.d_s_ps[c.job, s]
    if not (math.isfinite(d_ws) and math.isfinite(d_sa)):
        return False
    if integer and inst.sub_mb[g] > inst.mem_mb[s] + 1e-9:
        return False
    if candidates == "on_path" and d_ws + d_sa != d_wa:
        return False
    # Eq. 1 dominance: a switch farther than the PS never lowers the cost (module docstring);
    # equally far ones are kept so that the Eq. 4 tie-break can prefer them
    return objective == "eq4" or d_ws <= d_wa


def _build_model(inst: GinaInstance, objective: Objective, candidates: Candidates,
                 integer: bool = False) -> _Model:
    n_s = inst.n_s
    lp = LinearModel()
    ps: list[float] = []            # MB reaching the PS (one aggregate per switch, raw from workers)
    x_col: dict[tuple[int, int], int] = {}
    u_col: dict[tuple[int, int, int], int] = {}

    def col(c1: float, c4: float, ub: float, to_ps: float = 0.0) -> int:
        """A column with Eq. 1 cost ``c1`` (min) or Eq. 4 gain ``c4`` (max, so cost -c4)."""
        ps.append(to_ps)
        return lp.var(0.0, ub, cost=c1 if objective == "eq1" else -c4, integer=integer)

    for g, b in enumerate(inst.sub_mb):
        j = int(inst.sub_job[g])
        for ci in inst.classes_of(j):
            c = inst.classes[ci]
            n = float(len(c.workers))
            idx: list[int] = []
            for s in range(n_s):
                if not _usable(inst, c, g, s, objective, candidates, integer):
                    continue
                d_sa = inst.d_s_ps[j, s]
                if (g, s) not in x_col:
                    x_col[(g, s)] = col(b * d_sa, -b * d_sa, 1.0, b)
                u = col(b * c.dist[s], b * d_sa, n)
                u_col[(ci, g, s)] = u
                idx.append(u)
                lp.row([(u, 1.0), (x_col[(g, s)], -n)], hi=0.0)                # y <= x
            u = col(b * c.dist[-1], 0.0, n, b)                              # to the PS
            u_col[(ci, g, n_s)] = u
            idx.append(u)
            lp.row([(i, 1.0) for i in idx], n, n)                           # sum_s y = 1
    for s in range(n_s):
        cols = [(x_col[(g, s)], float(inst.sub_mb[g])) for g in range(len(inst.sub_mb)) if (g, s) in x_col]
        if cols and sum(v for _, v in cols) > inst.mem_mb[s] + 1e-9:          # else never binding
            lp.row(cols, hi=float(inst.mem_mb[s]))
    return _Model(lp, x_col, u_col, 1.0 if objective == "eq1" else -1.0, np.array(ps))


def _solve(m: _Model, backend: str, limits: Limits, tie_break: bool = False) -> Solution:
    """Optimise the chosen objective. With ``tie_break``, then minimise the PS traffic
    (``_Model.cost2``) over the optimal face. Ties are common: a switch exactly as far from a
    worker as the PS costs that worker the same in Eq. 1, yet aggregating there spares the PS.
    The solution's objective is the chosen equation's value (Eq. 1 min or Eq. 4 max)."""
    sol = solve(m.lp, maximize=False, limits=limits, backend=backend,
                then_minimize=m.cost2 if tie_break else None)
    if not sol.has_solution:
        return sol
    return replace(sol, objective=m.sign * sol.objective)      # the first phase's optimum


# ============================================================================ evaluation

def evaluate_plan(topology: Topology, jobs: Job | Sequence[Job], plan: Plan,
                  inst: GinaInstance | None = None) -> dict[str, Any]:
    """Metrics of a GOAT plan (x = ``submodel_switches``, y = ``aggregation_node``, None = PS).

    Returns, in MB x hops: ``eq1`` (communication overhead, Eq. 1), ``eq4`` (traffic removed by
    INA, Eq. 4), ``no_ina`` (everyone to the PS), ``detour``; in MB: ``ps_traffic_mb`` (bytes the
    PS receives: one aggregate per used (sub-model, switch) plus every worker's gradient sent to
    the PS), ``ina_amount_mb`` (total gradient volume minus ``ps_traffic_mb``, as §VII-A defines
    the in-network aggregation amount); memory loads and violations; ``unused`` (x without any
    worker) and ``errors`` (a worker sent to a switch that does not aggregate that sub-model).
    """
    jobs = [jobs] if isinstance(jobs, Job) else list(jobs)
    inst = inst or build_instance(topology, jobs, compress=True)
    s_idx = {s: i for i, s in enumerate(inst.switches)}
    eq1 = eq4 = no_ina = detour = ps_mb = total_mb = 0.0
    load = np.zeros(inst.n_s)
    unused = 0
    errors: list[str] = []
    for g, key in enumerate(inst.sub_keys):
        j = int(inst.sub_job[g])
        b = float(inst.sub_mb[g])
        sw = plan.submodel_switches.get(key, [])
        used: set[str] = set()
        for w in inst.jobs[j].workers:
            d = inst.worker_dist[(j, w)]
            node = plan.aggregation_node.get(w, {}).get(key)
            total_mb += b
            no_ina += d[-1] * b
            if node is None:
                eq1 += d[-1] * b
                ps_mb += b
                continue
            if node not in sw or node not in s_idx:
                errors.append(f"worker {w} sends {key} to {node}, which does not aggregate it")
                eq1 += d[-1] * b
                ps_mb += b
                continue
            s = s_idx[node]
            used.add(node)
            eq1 += d[s] * b
            eq4 += inst.d_s_ps[j, s] * b
            detour += (d[s] + inst.d_s_ps[j, s] - d[-1]) * b
        for node in sw:
            if node not in s_idx:
                errors.append(f"{key} placed on {node}, not a programmable switch with memory")
                continue
            s = s_idx[node]
            load[s] += b
            eq1 += inst.d_s_ps[j, s] * b
            eq4 -= inst.d_s_ps[j, s] * b
            if node in used:
                ps_mb += b
            else:
                unused += 1
    violations = [{"switch": inst.switches[s], "load_mb": float(load[s]), "capacity_mb": float(inst.mem_mb[s])}
                  for s in range(inst.n_s) if load[s] > inst.mem_mb[s] + 1e-6]
    factors = [load[s] / inst.mem_mb[s] for s in range(inst.n_s) if inst.mem_mb[s] > 0]
    return {"eq1": eq1, "eq4": eq4, "no_ina": no_ina, "detour": detour,
            "ps_traffic_mb": ps_mb, "ina_amount_mb": total_mb - ps_mb, "total_gradient_mb": total_mb,
            "memory_load_mb": {inst.switches[s]: float(load[s]) for s in range(inst.n_s) if load[s] > 0},
            "memory_violations": violations, "max_load_factor": float(max(factors, default=0.0)),
            "unused": unused, "errors": errors}


# ============================================================================ exact and relaxed


def _as_jobs(job: Job | Sequence[Job]) -> list[Job]:
    return [job] if isinstance(job, Job) else list(job)


def _plan_from_integral(inst: GinaInstance, m: _Model, vals: np.ndarray, scheme: str) -> Plan:
    plan = Plan(scheme=scheme, jobs=[j.name for j in inst.jobs])
    for g, key in enumerate(inst.sub_keys):
        plan.submodel_switches[key] = [inst.switches[s] for s in range(inst.n_s)
                                       if (g, s) in m.x_col and vals[m.x_col[(g, s)]] > 0.5]
    for ci, c in enumerate(inst.classes):
        for g, key in enumerate(inst.sub_keys):
            if inst.sub_job[g] != c.job:
                continue
            # any split of the class count u over its (interchangeable) workers is optimal
            slots: list[str | None] = []
            for s in range(inst.n_s + 1):
                col_ = m.u_col.get((ci, g, s))
                if col_ is not None:
                    slots += [inst.switches[s] if s < inst.n_s else None] * int(round(vals[col_]))
            slots += [None] * (len(c.workers) - len(slots))       # guards against rounding noise
            for w, node in zip(c.workers, slots):
                plan.aggregation_node.setdefault(w, {})[key] = node
    return plan


def _objective_of(metrics: Mapping[str, Any], objective: Objective) -> float:
    return float(metrics["eq1" if objective == "eq1" else "eq4"])


def solve_gina_ilp(topology: Topology, job: Job | Sequence[Job], *, solver: str = "highs",
                   objective: Objective = "eq1", candidates: Candidates = "all",
                   time_limit: float = 60.0, tie_break: bool = False, verbose: bool = False) -> Plan:
    """Exact GINA (Eq. 1, or Eq. 4 with ``objective="eq4"``); ``solver`` "highs" or "cbc".

    Meant for small instances (the ILP is NP-hard, §IV). ``plan.status`` is "optimal" when proved
    optimal, "feasible" when ``time_limit`` (s) stopped the search with an incumbent. ``plan.objective``
    is the chosen objective's value; ``plan.extra`` holds every metric of ``evaluate_plan``.
    ``tie_break`` re-optimises the other equation over the optimal face (see ``_solve``; off by
    default because the second MIP can take much longer than the first).
    """
    jobs = _as_jobs(job)
    inst = build_instance(topology, jobs)
    m = _build_model(inst, objective, candidates, integer=True)
    sol = _solve(m, solver, Limits(time_limit, verbose=verbose), tie_break)
    if not sol.has_solution:
        return Plan("goat-ilp", [j.name for j in jobs], status=sol.status, solve_seconds=sol.seconds)
    plan = _plan_from_integral(inst, m, sol.values, "goat-ilp")
    met = evaluate_plan(topology, jobs, plan, inst)
    plan.objective = _objective_of(met, objective)
    plan.bound = plan.objective if sol.status == "optimal" else None
    plan.status = sol.status
    plan.solve_seconds = sol.seconds
    plan.extra = {"objective_name": objective, "sense": "min" if objective == "eq1" else "max",
                  "solver": solver, "variables": m.lp.num_cols, "constraints": m.lp.num_rows, **met}
    return plan


@dataclass
class GinaLp:
    """Optimal LP relaxation of GINA: x~ (sub-model, switch) and y~ (class, sub-model, node)."""
    inst: GinaInstance
    model: _Model
    solution: Solution
    objective: Objective
    candidates: Candidates

    def x(self, g: int, s: int) -> float:
        c = self.model.x_col.get((g, s))
        return float(self.solution.values[c]) if c is not None else 0.0

    def y(self, ci: int, g: int, node: int) -> float:
        """y~ of each worker of class ``ci`` (node == n_s is the PS)."""
        c = self.model.u_col.get((ci, g, node))
        n = len(self.inst.classes[ci].workers)
        return float(self.solution.values[c]) / n if c is not None else 0.0


def relax(topology: Topology, job: Job | Sequence[Job], *, objective: Objective = "eq1",
          candidates: Candidates = "all", backend: str = "highs", tie_break: bool = True,
          compress: bool = True, verbose: bool = False) -> GinaLp:
    """Step 1 of Alg. 1: solve the LP relaxation (x, y in [0, 1]) of Eq. 1 / Eq. 4.

    With ``tie_break`` (default) the optimal solution returned is, among the LP optima, one that
    has the least PS traffic (``_solve``); the LP value, hence the bound, is unchanged.
    ``compress=False`` keeps one y per worker (the paper's formulation; same optimum, larger LP).
    """
    inst = build_instance(topology, _as_jobs(job), compress=compress)
    m = _build_model(inst, objective, candidates)
    sol = _solve(m, backend, Limits(_LP_TIME_LIMIT, verbose=verbose), tie_break)
    if sol.status != "optimal":
        raise ModelError(f"GINA LP relaxation is {sol.status}")
    return GinaLp(inst, m, sol, objective, candidates)


def solve_gina_lp(topology: Topology, job: Job | Sequence[Job], *, objective: Objective = "eq1",
                  candidates: Candidates = "all", backend: str = "highs",
                  max_detail: int = 5000, tie_break: bool = True, verbose: bool = False) -> Plan:
    """The LP relaxation of GINA as a Plan: ``bound`` (and ``extra["lp_objective"]``) is the LP
    optimum, a lower bound on Eq. 1 (upper bound on Eq. 4) for every integral plan that respects
    memory. It is a bound, not an installable plan: ``objective`` is None, ``aggregation_node``
    stays empty (a plan checker will report missing assignments), ``submodel_switches`` lists
    the support of x~, fractional values are in ``extra["x"]`` ({sub-model: {switch: x~}}) and,
    when workers x sub-models <= ``max_detail``, ``extra["y"]`` ({worker: {sub-model: {node: y~}}},
    node "PS" for alpha).
    """
    lp = relax(topology, job, objective=objective, candidates=candidates, backend=backend,
               tie_break=tie_break, verbose=verbose)
    return _lp_plan(lp, max_detail)


def _lp_plan(lp: GinaLp, max_detail: int) -> Plan:
    inst = lp.inst
    plan = Plan("goat-lp", [j.name for j in inst.jobs], status="optimal",
                objective=None, bound=lp.solution.objective, solve_seconds=lp.solution.seconds)
    xs: dict[str, dict[str, float]] = {}
    for (g, s), _ in sorted(lp.model.x_col.items()):
        v = lp.x(g, s)
        if v > _EPS:
            xs.setdefault(inst.sub_keys[g], {})[inst.switches[s]] = round(v, 9)
    plan.submodel_switches = {k: sorted(v) for k, v in xs.items()}
    plan.extra = {"objective_name": lp.objective, "sense": "min" if lp.objective == "eq1" else "max",
                  "lp_objective": lp.solution.objective, "relaxation": True,
                  "variables": lp.model.lp.num_cols, "constraints": lp.model.lp.num_rows, "x": xs}
    n_pairs = sum(len(c.workers) for c in inst.classes) * len(inst.sub_keys)
    if n_pairs <= max_detail:
        ys: dict[str, dict[str, dict[str, float]]] = {}
        for (ci, g, node), _ in sorted(lp.model.u_col.items()):
            v = lp.y(ci, g, node)
            if v > _EPS:
                name = inst.switches[node] if node < inst.n_s else "PS"
                for w in inst.classes[ci].workers:
                    ys.setdefault(w, {}).setdefault(inst.sub_keys[g], {})[name] = round(v, 9)
        plan.extra["y"] = ys
    return plan
