"""ARO: aggregator-aware routing optimisation for INA in Clos networks (Luo et al., §III).

Public API
----------
``solve_aro(topology, jobs, *, accelerated, ...) -> Plan``
    Routes every aggregation task (one per (job, PS)) on its unfolded up-down graph
    (:mod:`controller.aro_graph`) and sets the task rates. ``plan.paths[task][worker]`` is the
    physical node list worker → ... → PS, ``plan.rates[task]`` is in Gb/s, ``plan.objective`` is
    Eq. (1) (SJST), Eq. (2) (SJMT, one job) or Eq. (3) (MJMT) in Gb/s, ``plan.bound`` an upper
    bound on it where one was proven.
``solve_bruteforce(topology, jobs, ...) -> Plan``
    Exact optimum for tiny instances by enumerating every consistent routing (independent of the
    MILP; used to check it).
Schemes ``"aro"`` (the exact model) and ``"aro-acc"`` (SRO + APP + QSR) are registered in
:mod:`controller.schemes` when it is importable.

The model (Eqs. 4–10) and how it is solved without a bilinear solver
---------------------------------------------------------------------
Variables per task ``i``: integer flow counts ``y[i]_e`` on the edges of its graph (Eq. 4),
binary ``x[i]_u`` per INP (Eq. 6, it is the count on the virtual INP→OP edge, Eq. 8); each worker
sends one flow (Eq. 5); an INP outputs one flow iff something enters it (Eq. 7, written per
incoming edge as ``y_e ≤ U_e x`` — the disaggregated big-M, tighter than the paper's ``1/M Σ``
form); OPs and CSs conserve flows (Eq. 9). Capacity (Eq. 10) ``Σ_i y[i]_e r[i] ≤ b_e`` is the only
bilinear constraint. The paper hands the MIQP to Gurobi; we use two *exact* MILP
reformulations and HiGHS:

1. **Common-rate model (CR).** When every job has one task, the max–min part of the objective is
   reached with ``r[i] = m / β_i`` for all tasks. Writing ``z = 1/m`` turns Eq. (10) into the
   linear ``Σ_i y[i]_e / β_i ≤ b_e z``; minimising ``z`` is a MILP whose optimum is exactly the
   best ``m`` (this is the whole problem for SJST, Eq. 1).
2. **Binary-expansion model (BX).** For the general objectives (Eq. 2 with several tasks sharing
   the workers, and the work-conserving ``μ`` term of Eq. 3), each integer ``y_e ≤ U_e`` is
   written in ``⌈log2(U_e+1)⌉`` bits ``y_e = Σ_k 2^k β_k`` and every product ``β_k r`` by a
   McCormick variable ``g_k ≥ r − R(1 − β_k)``, ``g_k ≥ L β_k``, ``g_k ≥ 0``. Because ``g`` only
   appears on the left of ``≤`` capacity rows, the least feasible ``g`` is the product itself, so
   the MILP is an exact reformulation of the MIQP (for continuous ``r``) and of the paper's IQP
   (for quantized ``r``). ``U_e`` is the number of flows that can reach the edge (≤ the number
   of upstream workers), which keeps the bit count small. For MJMT with single-task jobs the BX
   model is started from the CR optimum ``m*`` and its routing: any optimum of Eq. (3) has
   ``m ≥ OBJ_feasible − μ·Σβ r̄``, which gives tight per-task lower bounds ``L`` (exactness holds).

Acceleration (§III-C, Table II)
-------------------------------
* **QSR** — rates take values in ``{0, …, N}·b̄/N`` (Eq. 11, default ``N = 100``); capacities
  become ``⌊b_e N / b̄⌋`` (the paper writes ``⌈·⌉``; floor keeps the plan feasible in Gb/s). In the
  CR model this is exactly flooring ``m`` to the quantum; in the BX model ``r`` is integer.
* **APP** — per task keep ``max(1, ⌊α n⌋)`` aggregators of each alternative-aggregator group,
  lowest INP-score variance first, round robin across tasks (``α = 0.6``).
* **SRO** — stage 1 solves without the INA-agnostic members of AA groups that have aggregators;
  stage 2 drops the INPs stage 1 left unused (``x = 0``), restores the other switches, and
  solves again with stage 1's throughput as a lower bound and stage 1's routing as start.

Routes are generated from ``y`` by Algorithm 1 (a DFS that consumes one unit of ``y`` per hop and
reuses an INP's established path to the PS). Final rates are the LP optimum for those routes
(for QSR the quantized model's rates are kept in ``plan.extra["qsr_rates"]``).
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping


from controller.aro_graph import (Edge, PhysLink, Task, TaskGraph, app_select, best_rates,
                                  build_task_graph, capacities, down_hosts, drop_switches,
                                  jobs_of, make_tasks, objective_value, pipe_map, route_loads,
                                  sro_stage1_drop, tiers)
from controller.model import Job, Plan, Topology
from controller.solver import INF, Limits, LinearModel, Solution, solve


# ----------------------------------------------------------------------------- the routing part
@dataclass
class _Routing:
    """Columns of one task's routing variables (Eqs. 4–9)."""
    y: dict[Edge, int]                 # edge -> column of y (INP->OP: the x of Eq. 6)
    ub: dict[Edge, int]                # edge -> U_e, the most flows that can use it


def _add_routing(m: LinearModel, g: TaskGraph) -> _Routing:
    mf = g.max_flows()
    cols: dict[Edge, int] = {}
    ubs: dict[Edge, int] = {}
    for e, ln in g.link.items():
        u = 1 if ln is None else mf[e[0]]
        ubs[e] = u
        cols[e] = m.var(0.0, float(u), integer=True)
    for n, k in g.kind.items():
        out = [cols[(n, v)] for v in g.succ[n]]
        inn = [cols[(u, n)] for u in g.pred[n]]
        if k == "w":                                    # Eq. (5): one flow per worker
            m.row([(c, 1.0) for c in out], 1.0, 1.0)
        elif k == "inp":                                # Eqs. (7)-(8): x = 1 iff any input
            x = out[0]
            for u in g.pred[n]:
                m.row([(cols[(u, n)], 1.0), (x, -float(ubs[(u, n)]))], hi=0.0)
            m.row([(x, 1.0)] + [(c, -1.0) for c in inn], hi=0.0)
        elif k in ("cs", "op"):                         # Eq. (9): conservation
            m.row([(c, 1.0) for c in inn] + [(c, -1.0) for c in out], 0.0, 0.0)
    return _Routing(cols, ubs)


def _links_of(graphs: Mapping[str, TaskGraph]) -> dict[PhysLink, list[tuple[str, Edge]]]:
    out: dict[PhysLink, list[tuple[str, Edge]]] = {}
    for name, g in graphs.items():
        for e, ln in g.link.items():
            if ln is not None:
                out.setdefault(ln, []).append((name, e))
    return out


@dataclass
class _Sol:
    y: dict[str, dict[Edge, int]]
    rates: dict[str, float] | None      # model rates in Gb/s (None: derive from routes)
    bound: float | None                 # upper bound on the objective (Gb/s)
    status: str
    seconds: float
    stages: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Problem:
    tasks: list[Task]
    caps: dict[PhysLink, float]
    pipe: dict[PhysLink, int]
    aggregators: set[str]
    mu: float
    quantum: float | None               # QSR: Gb/s per rate unit (b̄/N); None = continuous
    seed: int
    gap: float
    solver: str
    verbose: bool = False

    def limits(self, time_limit: float) -> Limits:
        return Limits(time_limit, self.gap, self.seed, verbose=self.verbose)

    @property
    def multi_job(self) -> bool:
        return len(jobs_of(self.tasks)) > 1

    def rate_cap(self, g: TaskGraph) -> float:
        """An upper bound on a task's rate: no worker's first link / the PS's last link is wider."""
        firsts = [self.caps[ln] for e, ln in g.link.items() if ln is not None and g.kind[e[0]] == "w"]
        lasts = [self.caps[ln] for e, ln in g.link.items() if ln is not None and e[1] == g.ps_id]
        return min(firsts + lasts)


def _extract(res: Solution, routing: Mapping[str, _Routing]) -> dict[str, dict[Edge, int]]:
    return {t: {e: int(round(res.values[c])) for e, c in r.y.items()} for t, r in routing.items()}


def _solve_common_rate(p: _Problem, graphs: Mapping[str, TaskGraph], ratio: Mapping[str, float], *,
                       m_lb: float | None, start: Mapping[str, Mapping[Edge, int]] | None,
                       time_limit: float) -> tuple[Solution, dict[str, dict[Edge, int]], float | None, float | None]:
    """CR model: min z s.t. Eqs. (4)-(9) and Σ_i ratio_i y[i]_e ≤ b_e z; returns (result, y, m, m_ub)."""
    m = LinearModel()
    routing = {t: _add_routing(m, g) for t, g in graphs.items()}
    z = m.var(0.0, 1.0 / m_lb if m_lb else INF, cost=1.0)
    for ln, uses in _links_of(graphs).items():
        m.row([(routing[t].y[e], ratio[t]) for t, e in uses] + [(z, -p.caps[ln])], hi=0.0)
    st = None
    if start is not None:
        st = [0.0] * m.num_cols
        zmax = 0.0
        loads: dict[PhysLink, float] = {}
        for t, r in routing.items():
            for e, c in r.y.items():
                v = start[t].get(e, 0)
                st[c] = float(v)
                ln = graphs[t].link[e]
                if ln is not None:
                    loads[ln] = loads.get(ln, 0.0) + ratio[t] * v
        for ln, ld in loads.items():
            zmax = max(zmax, ld / p.caps[ln])
        st[z] = zmax
    res = solve(m, maximize=False, limits=p.limits(time_limit), start=st, backend=p.solver)
    if not res.has_solution:
        return res, {}, None, None
    y = _extract(res, routing)
    zv = res.values[z]
    mval = 1.0 / zv if zv > 0 else None
    m_ub = 1.0 / res.bound if res.bound and res.bound > 0 else None
    res.objective = mval
    return res, y, mval, m_ub


def _solve_bx(p: _Problem, graphs: Mapping[str, TaskGraph], *, r_lo: Mapping[str, float],
              r_hi: Mapping[str, float], obj_lo: float | None, m_bounds: tuple[float, float | None],
              start: tuple[Mapping[str, Mapping[Edge, int]], Mapping[str, float]] | None,
              time_limit: float) -> tuple[Solution, dict[str, dict[Edge, int]], dict[str, float]]:
    """BX model: the exact binary-expansion MILP of Eqs. (2)/(3)-(10); rates in Gb/s or quanta."""
    q = p.quantum or 1.0
    m = LinearModel()
    tasks = {t.name: t for t in p.tasks if t.name in graphs}
    jobs = jobs_of(list(tasks.values()))
    multi = len(jobs) > 1
    routing = {t: _add_routing(m, g) for t, g in graphs.items()}
    lo = {t: (math.ceil(r_lo[t] / q - 1e-9) if p.quantum else r_lo[t]) for t in graphs}
    hi = {t: (math.floor(r_hi[t] / q + 1e-9) if p.quantum else r_hi[t]) for t in graphs}
    rc = {t: m.var(float(lo[t]), float(hi[t]), integer=bool(p.quantum),
                   cost=(p.mu * tasks[t].beta if multi else 1.0)) for t in graphs}
    mcol = None
    if multi:
        mlo, mhi = m_bounds
        mcol = m.var(mlo / q, (mhi / q) if mhi is not None else INF, cost=1.0)
        for ts in jobs.values():
            m.row([(mcol, 1.0)] + [(rc[t.name], -t.beta) for t in ts], hi=0.0)
    if obj_lo is not None:   # a known feasible objective: a valid cut that helps pruning
        cols = list(rc.values()) + ([mcol] if mcol is not None else [])
        m.row([(c, m.cost[c]) for c in cols], lo=obj_lo / q)
    prod: dict[tuple[str, Edge], list[tuple[int, int, int]]] = {}   # (bit col, g col, weight)
    cap_terms: dict[PhysLink, tuple[list[int], list[float]]] = {}
    for t, g in graphs.items():
        R, L = float(hi[t]), float(lo[t])
        for e, ln in g.link.items():
            if ln is None:
                continue
            U = routing[t].ub[e]
            y = routing[t].y[e]
            if U <= 1:
                bits = [(y, 1)]
            else:
                bits = [(m.var(0.0, 1.0, integer=True), 1 << k) for k in range(U.bit_length())]
                m.row([(y, 1.0)] + [(b, -float(w)) for b, w in bits], 0.0, 0.0)
            terms = []
            for b, w in bits:
                gk = m.var(0.0, R)
                m.row([(gk, 1.0), (rc[t], -1.0), (b, -R)], lo=-R)   # g ≥ r − R(1−b)
                if L > 0:
                    m.row([(gk, 1.0), (b, -L)], lo=0.0)           # g ≥ L b
                terms.append((b, gk, w))
            prod[(t, e)] = terms
            ci, cv = cap_terms.setdefault(ln, ([], []))
            ci.extend(gk for _, gk, _ in terms)
            cv.extend(float(w) for _, _, w in terms)
    for ln, (ci, cv) in cap_terms.items():
        cap = math.floor(p.caps[ln] / q + 1e-9) if p.quantum else p.caps[ln]
        m.row(zip(ci, cv), hi=float(cap))
    st = None
    if start is not None:
        sy, sr = start
        st = [0.0] * m.num_cols
        for t, r in routing.items():
            for e, c in r.y.items():
                st[c] = float(sy[t].get(e, 0))
            st[rc[t]] = min(max(sr[t] / q, lo[t]), hi[t])
            if p.quantum:
                st[rc[t]] = float(math.floor(st[rc[t]] + 1e-9))
        for (t, e), terms in prod.items():
            v = int(sy[t].get(e, 0))
            for b, gk, w in terms:
                bit = 1.0 if (len(terms) == 1 and v) or (len(terms) > 1 and v & w) else 0.0
                if len(terms) > 1:
                    st[b] = bit
                st[gk] = st[rc[t]] * bit
        if mcol is not None:
            st[mcol] = min(sum(tasks[t.name].beta * st[rc[t.name]] for t in ts) for ts in jobs.values())
    res = solve(m, maximize=True, limits=p.limits(time_limit), start=st, backend=p.solver)
    if not res.has_solution:
        return res, {}, {}
    rates = {t: res.values[rc[t]] * q for t in graphs}
    if res.objective is not None:
        res.objective *= q
    if res.bound is not None:
        res.bound *= q
    return res, _extract(res, routing), rates


def _routes_and_rates(p: _Problem, topology: Topology, graphs: Mapping[str, TaskGraph],
                      y: Mapping[str, Mapping[Edge, int]]) -> tuple[dict[str, dict[str, list[str]]], dict[str, float], float]:
    paths = {t: generate_routes(graphs[t], y[t]) for t in graphs}
    loads = {t.name: route_loads(topology, t, paths[t.name], pipe=p.pipe, aggregators=p.aggregators)
             for t in p.tasks}
    rates, obj = best_rates(p.tasks, loads, p.caps, p.mu)
    return paths, rates, obj


def _optimize(p: _Problem, topology: Topology, graphs: Mapping[str, TaskGraph], *,
              m_lb: float | None, start: Mapping[str, Mapping[Edge, int]] | None,
              time_limit: float, work_conserving: bool, label: str) -> _Sol:
    """Solve Eqs. (1)/(2)/(3) s.t. (4)-(10) on ``graphs``: CR first, then BX where needed."""
    t0 = time.perf_counter()
    stages: list[dict[str, Any]] = []
    jobs = jobs_of(p.tasks)
    single_task_jobs = all(len(ts) == 1 for ts in jobs.values())
    # CR: exact max-min for single-task jobs; an equal-split feasible start otherwise
    ratio = {t.name: 1.0 / (t.beta * len(jobs[t.job])) for t in p.tasks}
    res, y, mval, m_ub = _solve_common_rate(p, graphs, ratio, m_lb=m_lb, start=start,
                                            time_limit=time_limit)
    stages.append({"stage": f"{label}:CR", "status": res.status, "seconds": round(res.seconds, 3),
                   "m": mval, "m_ub": m_ub})
    if not y:
        raise RuntimeError(f"ARO {label}: common-rate model returned no solution ({res.status})")
    status = res.status
    if single_task_jobs and len(jobs) == 1:
        t = p.tasks[0].name
        r = mval
        if p.quantum:
            r = math.floor(mval / p.quantum + 1e-9) * p.quantum
        return _Sol(y, {t: r}, m_ub, status, time.perf_counter() - t0, stages)
    if single_task_jobs and not work_conserving:
        return _Sol(y, None, None, status if status != "optimal" else "optimal-maxmin",
                    time.perf_counter() - t0, stages)
    # BX: the exact objective, started from CR's routing
    _, rates0, obj0 = _routes_and_rates(p, topology, graphs, y)
    if p.quantum:
        rates0 = {t: math.floor(r / p.quantum + 1e-9) * p.quantum for t, r in rates0.items()}
        obj0 = objective_value(p.tasks, rates0, p.mu)
    r_hi = {t: p.rate_cap(g) for t, g in graphs.items()}
    s_ub = sum(tk.beta * r_hi[tk.name] for tk in p.tasks)
    if single_task_jobs:
        # any optimum of Eq. (3) has m ≥ obj0 − μ Σβ r̄, so every task rate is bounded below
        m_lo = max(0.0, obj0 - p.mu * s_ub) if p.multi_job else 0.0
        r_lo = {tk.name: m_lo / tk.beta for tk in p.tasks}
        m_hi = m_ub * (1 + 1e-6) if (m_ub and status == "optimal") else None
    else:
        m_lo, m_hi = 0.0, None
        r_lo = {t: 0.0 for t in graphs}
    left = max(1.0, time_limit - (time.perf_counter() - t0))
    res2, y2, rates2 = _solve_bx(p, graphs, r_lo=r_lo, r_hi=r_hi, obj_lo=obj0 * (1 - 1e-7),
                                 m_bounds=(m_lo, m_hi), start=(y, rates0), time_limit=left)
    stages.append({"stage": f"{label}:BX", "status": res2.status, "seconds": round(res2.seconds, 3),
                   "objective": res2.objective, "bound": res2.bound})
    # CR's dual bound caps m for single-task jobs, so m_ub + μ Σβ r̄ also bounds Eq. (3)
    bounds = [b for b in (res2.bound, (m_ub + p.mu * s_ub) if (single_task_jobs and m_ub) else None)
              if b is not None]
    bound = min(bounds) if bounds else None
    if not y2:
        return _Sol(y, rates0, bound, "feasible", time.perf_counter() - t0, stages)
    st = "optimal" if res2.status == "optimal" and (status == "optimal" or not single_task_jobs) else "feasible"
    return _Sol(y2, rates2, bound, st, time.perf_counter() - t0, stages)


# ----------------------------------------------------------------------------- Algorithm 1
def generate_routes(g: TaskGraph, y: Mapping[Edge, int]) -> dict[str, list[str]]:
    """Algorithm 1: worker paths from the solved ``y`` (physical node lists, worker → PS).

    A DFS from each worker follows edges with remaining ``y > 0`` (smallest next node first) and
    consumes one unit per hop; once a path reaches an INP (or the PS) that already has a path to
    the PS, it reuses that path, because the INP merges the flows of the task into one. (The
    paper's line 18 reads "R[l[j]] ≠ nil"; recording the first path of each INP is what the text
    describes, so we test for nil.)
    """
    rem = {e: int(v) for e, v in y.items() if v > 0}
    R: dict[str, list[str]] = {g.ps_id: [g.ps_id]}
    out: dict[str, list[str]] = {}
    for w in g.task.workers:
        path: list[str] = []
        u = g.worker_id(w)
        while u not in R:
            path.append(u)
            nxt = [v for v in g.succ[u] if rem.get((u, v), 0) > 0]
            if not nxt:
                raise RuntimeError(f"task {g.task.name}: y leaves {u} without a next hop")
            v = min(nxt)
            rem[(u, v)] -= 1
            u = v
        path.extend(R[u])
        for j in range(1, len(path)):
            if g.kind[path[j]] == "inp" and path[j] not in R:
                R[path[j]] = path[j:]
        phys: list[str] = []
        for n in path:
            if not phys or phys[-1] != g.phys[n]:
                phys.append(g.phys[n])
        out[w] = phys
    return out


# ----------------------------------------------------------------------------- public API
def _setup(topology: Topology, jobs: list[Job], pipelines: int | None, beta: Mapping[str, float] | None,
           aggregators: set[str] | None) -> tuple[list[Task], dict[str, int], dict[PhysLink, int], dict[str, int], set[str], dict[str, TaskGraph]]:
    tasks = make_tasks(jobs, beta)
    tier = tiers(topology)
    pipe, npipes = pipe_map(topology, pipelines)
    aggs = set(aggregators) if aggregators is not None else set(topology.programmable_switches())
    graphs = {t.name: build_task_graph(topology, t, tier=tier, pipe=pipe, aggregators=aggs)
              for t in tasks}
    return tasks, tier, pipe, npipes, aggs, graphs


def solve_aro(topology: Topology, jobs: list[Job], *, accelerated: bool = False,
              pipelines: int | None = None, seed: int = 0,
              quantize: int | None = None, sro: bool | None = None, app_alpha: float | None = None,
              mu: float = 0.001, beta: Mapping[str, float] | None = None,
              time_limit: float = 600.0, gap: float | None = None,
              work_conserving: bool | None = None, aggregators: set[str] | None = None,
              solver: str = "highs", verbose: bool = False) -> Plan:
    """Route and rate all aggregation tasks of ``jobs`` with ARO (§III).

    ``accelerated=False`` solves the exact model (Eqs. 1-10, continuous rates, ARO-RAW in
    Table II) to optimality; ``accelerated=True`` is ARO-ACC: SRO + APP (``α = 0.6``) + QSR
    (``N = 100``). ``quantize`` / ``sro`` / ``app_alpha`` set the three accelerations one by one
    (the other rows of Table II). ``pipelines`` overrides every aggregator's pipe count (ports
    map to pipes in contiguous blocks). ``work_conserving`` solves the μ term of Eq. (3) exactly
    (BX stage; default on for the exact model, off for ARO-ACC, whose MJMT rates are then the
    LP optimum for its max-min routing). ``solver`` is "highs" (default) or "cbc" (via PuLP).
    ``time_limit`` (s) bounds each MILP stage; a stage stopped by it leaves status "feasible".
    """
    t0 = time.perf_counter()
    if accelerated:
        quantize = 100 if quantize is None else quantize
        sro = True if sro is None else sro
        app_alpha = 0.6 if app_alpha is None else app_alpha
    sro = bool(sro)
    # the exact scheme also solves Eq. (3)'s μ term exactly (BX); ARO-ACC LP-polishes the rates of
    # its max-min routing instead (the μ term is ≤ μ·Σβr, 0.1 % of the objective by default)
    wc = (not accelerated) if work_conserving is None else work_conserving
    tasks, tier, pipe, npipes, aggs, graphs = _setup(topology, jobs, pipelines, beta, aggregators)
    caps = capacities(topology)
    bbar = max(caps[ln] for g in graphs.values() for ln in g.link.values() if ln is not None)  # Eq. (11)
    p = _Problem(tasks, caps, pipe, aggs, mu, (bbar / quantize) if quantize else None, seed,
                 gap if gap is not None else (1e-4 if accelerated else 1e-6), solver, verbose)
    extra: dict[str, Any] = {"tasks": {t.name: {"job": t.job, "ps": t.ps, "workers": list(t.workers)}
                                       for t in tasks},
                             "variant": _variant_name(sro, app_alpha, quantize),
                             "quantize_N": quantize, "app_alpha": app_alpha, "sro": sro,
                             "pipelines": pipelines, "mu": mu, "ina": "pipes"}
    if beta is not None:
        extra["beta"] = dict(beta)
    dh = down_hosts(topology, tier)
    if app_alpha is not None:
        drop = app_select(list(graphs.values()), npipes, dh, app_alpha)
        extra["app_dropped"] = {t: sorted(s) for t, s in drop.items()}
        for t, d in drop.items():
            if d:
                g2 = drop_switches(graphs[t], d)
                if g2 is None:           # the pruning cut a worker off: keep the task's graph
                    extra.setdefault("app_skipped", []).append(t)
                else:
                    graphs[t] = g2
    stages: list[dict[str, Any]] = []
    start = None
    m_lb = None
    if sro:
        g1 = {}
        for t, g in graphs.items():
            d = sro_stage1_drop(g, dh)
            g1[t] = (drop_switches(g, d) if d else None) or g
        s1 = _optimize(p, topology, g1, m_lb=None, start=None, time_limit=time_limit,
                       work_conserving=False, label="SRO1")
        stages += s1.stages
        # INPs of the stage-1 model left without traffic (x = 0); INPs stage 1 could not see are kept
        unused = {t: {n for n in g1[t].inps() if s1.y[t].get((n, g1[t].succ[n][0]), 0) == 0}
                  for t in graphs}
        for t in graphs:
            g2 = graphs[t].restricted(unused[t])
            if g2 is not None:
                graphs[t] = g2
        extra["sro_unused_inps"] = {t: len(u) for t, u in unused.items()}
        start = s1.y
        m_lb = _stage_m(p, s1)
    sol = _optimize(p, topology, graphs, m_lb=m_lb, start=start, time_limit=time_limit,
                    work_conserving=wc, label="ARO")
    stages += sol.stages
    paths, rates, obj = _routes_and_rates(p, topology, graphs, sol.y)
    if p.quantum and sol.rates is not None:
        extra["qsr_rates"] = {t: math.floor(r / p.quantum + 1e-6) * p.quantum for t, r in sol.rates.items()}
        extra["qsr_objective"] = objective_value(tasks, extra["qsr_rates"], mu)
    extra["stages"] = stages
    extra["model_rates"] = sol.rates
    exact = not (sro or app_alpha is not None or quantize)
    bound = sol.bound if exact else None
    status = sol.status if exact else ("heuristic" if sol.status.startswith("optimal") else sol.status)
    if exact and bound is not None and bound < obj:
        bound = obj
    return Plan(scheme="aro-acc" if accelerated else "aro", jobs=[j.name for j in jobs],
                paths=paths, rates=rates, objective=obj, bound=bound, status=status,
                solve_seconds=time.perf_counter() - t0, extra=extra)


def _stage_m(p: _Problem, s: _Sol) -> float | None:
    """Stage-1 throughput as a lower bound for stage 2 (CR's m)."""
    for st in s.stages:
        if st["stage"].endswith(":CR") and st.get("m"):
            return st["m"] * (1 - 1e-7)
    return None


def _variant_name(sro: bool, app: float | None, n: int | None) -> str:
    if sro and app is not None and n:
        return "ARO-ACC"
    if sro:
        return "ARO-SRO"
    if app is not None:
        return "ARO-APP"
    return "ARO-QSR" if n else "ARO-RAW"


def solve_bruteforce(topology: Topology, jobs: list[Job], *, pipelines: int | None = None,
                     mu: float = 0.001, beta: Mapping[str, float] | None = None,
                     aggregators: set[str] | None = None, limit: int = 200_000) -> Plan:
    """The exact optimum by enumeration, for tiny instances (checks the MILP independently).

    For each task, every *consistent* routing is enumerated: each flow that reaches a node picks
    one of its shortest-path next hops, and the flows an aggregator's pipe merges pick together
    (the unit of choice is a flow after aggregation, as in Algorithm 1). Each combination of task
    routings is scored by :func:`route_loads` and the rate LP :func:`best_rates`.
    """
    t0 = time.perf_counter()
    tasks, tier, pipe, npipes, aggs, graphs = _setup(topology, jobs, pipelines, beta, aggregators)
    caps = capacities(topology)
    per_task = [list(_enumerate_task(graphs[t.name], pipe, aggs)) for t in tasks]
    total = math.prod(len(x) for x in per_task)
    if total > limit:
        raise ValueError(f"brute force: {total} routings exceed limit {limit}")
    best: tuple[float, dict, dict] | None = None
    for combo in itertools.product(*per_task):
        loads = {t.name: route_loads(topology, t, c, pipe=pipe, aggregators=aggs)
                 for t, c in zip(tasks, combo)}
        rates, obj = best_rates(tasks, loads, caps, mu)
        if best is None or obj > best[0] + 1e-9:
            best = (obj, {t.name: c for t, c in zip(tasks, combo)}, rates)
    assert best is not None
    return Plan(scheme="aro-bruteforce", jobs=[j.name for j in jobs], paths=best[1], rates=best[2],
                objective=best[0], bound=best[0], status="optimal",
                solve_seconds=time.perf_counter() - t0, extra={"routings": total})


def _enumerate_task(g: TaskGraph, pipe: Mapping[PhysLink, int], aggs: set[str]):
    """All consistent worker→PS path sets of one task on its shortest-path DAG.

    Shortest paths make the DAG layered by hop distance to the PS, so flows move one level at a
    time: every flow at the current level picks a next hop, and flows arriving at the same
    aggregator pipe merge into one flow (which then chooses once for all its workers).
    """
    ps = g.task.ps
    nxt: dict[str, list[str]] = {}
    for ln in g.link.values():
        if ln is not None and ln[1] not in nxt.setdefault(ln[0], []):
            nxt[ln[0]].append(ln[1])
    dist: dict[str, int] = {ps: 0}

    def d(u: str) -> int:
        if u not in dist:
            dist[u] = 1 + d(nxt[u][0])
        return dist[u]

    Flow = tuple[str, tuple[tuple[str, ...], ...]]          # (current node, partial worker paths)
    init: list[Flow] = [(w, ((w,),)) for w in g.task.workers]

    def rec(flows: list[Flow]):
        level = max((d(at) for at, _ in flows), default=0)
        if level == 0:
            yield flows
            return
        movers = [f for f in flows if d(f[0]) == level]
        rest = [f for f in flows if d(f[0]) != level]
        for choice in itertools.product(*[nxt[at] for at, _ in movers]):
            merged: dict[tuple, Flow] = {}
            moved: list[Flow] = []
            for (at, members), v in zip(movers, choice):
                ext = tuple(m + (v,) for m in members)
                if v in aggs and v != ps:
                    key = (v, pipe[(v, at)])
                    merged[key] = (v, merged[key][1] + ext) if key in merged else (v, ext)
                else:
                    moved.append((v, ext))
            yield from rec(rest + moved + list(merged.values()))

    for final in rec(init):
        yield {m[0]: list(m) for _, members in final for m in members}


# ----------------------------------------------------------------------------- scheme registration
from controller.schemes import register  # noqa: E402  (registry imports this module lazily)


def _options_kwargs(options: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("pipelines", "seed", "quantize", "sro", "app_alpha", "mu", "beta", "time_limit", "gap",
            "work_conserving", "solver", "verbose")
    return {k: options[k] for k in keys if k in options}


@register("aro")
def aro_scheme(topology: Topology, jobs: list[Job], options: dict) -> Plan:
    """Scheme "aro": the exact model (ARO-RAW of Table II). Results: a merge point holding
    every worker multicasts them; otherwise the PS sends each once to a relay switch that
    multicasts it (controller.deploy)."""
    return solve_aro(topology, jobs, accelerated=False, **_options_kwargs(options))


@register("aro-acc")
def aro_acc_scheme(topology: Topology, jobs: list[Job], options: dict) -> Plan:
    """Scheme "aro-acc": SRO + APP + QSR (ARO-ACC of Table II)."""
    return solve_aro(topology, jobs, accelerated=True, **_options_kwargs(options))
