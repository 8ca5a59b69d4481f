"""GOAT: gradient scheduling with collaborative in-network aggregation (Fang et al., IEEE/ACM ToN 2024).

The GINA problem (paper §IV-B, Eq. 1) decides, for every sub-model gradient g, which programmable
switches aggregate it (``x_g^s``) and, for every worker w, to which aggregation node (a switch or
the PS alpha) w sends g (``y_{w,g}^s``):

    min  sum_g ( sum_w sum_{s in S+alpha} y_{w,g}^s D_w(s)  +  sum_{s in S} x_g^s D_s(alpha) ) b(g)
    s.t. sum_{s in S+alpha} x_g^s >= 1                  (every sub-model has an aggregation node)
         sum_{s in S+alpha} y_{w,g}^s = 1               (every worker picks exactly one node)
         y_{w,g}^s <= x_g^s                             (... among the nodes that aggregate g)
         sum_g x_g^s b(g) <= B(s)          for s in S   (switch memory)
         x, y binary

The objective is the *communication overhead* in MB x hops: non-aggregated gradients carried from
workers to their aggregation node plus aggregated gradients carried from switches to the PS.
§IV-C rewrites it as Eq. 4, the maximisation of the traffic removed by in-network aggregation,

    max  sum_g sum_{s in S} ( sum_w y_{w,g}^s - x_g^s ) D_s(alpha) b(g)

Exactly (see ``evaluate_plan``):  Eq.1 = NoINA + Detour - Eq.4, where NoINA = sum_{w,g} D_w(alpha) b(g)
(every worker sends straight to the PS) and Detour = sum y (D_w(s) + D_s(alpha) - D_w(alpha)) b(g).
The two problems are therefore equivalent when workers only use switches on a shortest path to
the PS (``candidates="on_path"``), which is what the paper's derivation (Eq. 2-3) assumes; without
that restriction Eq. 4 ignores detours and happily sends every worker to the switch farthest from
the PS, so ``objective="eq1"`` is the default and ``"eq4"`` is offered for fidelity.

Modelling notes (all exact, i.e. they do not change the optimum of Eq. 1):
* ``x_g^alpha`` costs nothing, so it is fixed to 1; the first constraint then always holds.
* In the ILP, a sub-model larger than a switch's memory has no ``x``/``y`` there (memory forces
  x = 0). The LP keeps them, as Alg. 1's relaxation does (x = B(s)/b(g) is feasible), so its
  bound is the paper's; KRGS may then round such a switch into S(g), which ``repair`` undoes.
* With Eq. 1, a worker never gains from a switch farther from it than the PS is
  (``D_w(s) > D_w(alpha)``): moving it to the PS keeps feasibility and lowers the cost, so those
  ``y`` variables are dropped.
* Workers of a job with identical distance vectors (same rack) are interchangeable: they are
  grouped into classes and ``u_{c,g}^s = sum_{w in c} y_{w,g}^s`` (integer in the ILP) replaces
  the individual ``y``; ``u <= |c| x`` is the aggregated Eq. 1 constraint. For the LP any optimal
  ``u`` gives the optimal per-worker ``y = u / |c|``; for the ILP any split of ``u`` is optimal.

Eq. 1 has many optima (a switch exactly as far from a worker as the PS costs that worker the same),
and which one the LP solver returns decides how much KRGS aggregates in the network. ``relax``
therefore minimises, over the LP's optimal face, the PS traffic (one aggregate per switch plus
every worker sent to the PS) as a second objective; the LP bound is unchanged (``tie_break``).

Algorithms: ``solve_gina_ilp`` (exact: HiGHS, or CBC through PuLP), ``solve_gina_lp`` (the LP relaxation:
a lower bound on Eq. 1, an upper bound on Eq. 4), ``krgs`` (Alg. 1, randomized rounding with
knapsacks, optional repair) and ``goat_async`` / ``choose_k`` (Alg. 2, §V). All are pure and
seeded; schemes "goat", "goat-ilp", "goat-lp" and "goat-async" are registered at the bottom.

Distances are hop counts of shortest paths (hosts are not transit nodes); sizes are MB as in
``SubModel.size_mb``; switch memory B(s) is ``Node.memory_bytes / 1e6`` MB.
"""
from __future__ import annotations

import math
import time
from typing import Any, Literal, Mapping, Sequence

import numpy as np

# the GINA instance, its LP / ILP and Alg. 2 live in their own modules; their names are GOAT's
from controller.goat_async import PsiParams, async_epochs, choose_k, psi  # noqa: F401
from controller.goat_ilp import (_EPS, _INF, _LP_TIME_LIMIT, Candidates, GinaInstance, GinaLp,  # noqa: F401
                                 Objective, WorkerClass, _as_jobs, _build_model, _lp_plan, _Model,
                                 _objective_of, _plan_from_integral, _solve, _usable, build_instance,
                                 evaluate_plan, relax, solve_gina_ilp, solve_gina_lp)
from controller.model import Job, ModelError, Plan, Topology, submodel_key  # noqa: F401
from controller.solver import Limits, LinearModel, Solution, solve  # noqa: F401


# ============================================================================ KRGS (Alg. 1)


def theorem_factor(n: int, nu: float) -> float:
    """The rounding factor 2(1 + rho) of Theorems 5/6, rho from Eq. 17 (Chernoff, prob. <= 1/n).

    rho = (ln n + sqrt(ln^2 n + 8 nu ln n)) / (2 nu) solves exp(-rho^2 nu / (2 + rho)) = 1/n; the
    factor 2 comes from Lemma 3 (E[x^] <= 2 x~). For n < 2 the bound degenerates to rho = 0.
    """
    if n < 2 or nu <= 0:
        return 2.0 if nu > 0 else _INF
    ln = math.log(n)
    rho = (ln + math.sqrt(ln * ln + 8.0 * nu * ln)) / (2.0 * nu)
    return 2.0 * (1.0 + rho)


def min_max_partition(values: Sequence[float], k: int) -> list[list[int]]:
    """Alg. 1 line 7: put items into ``k`` knapsacks minimising the largest knapsack sum.

    Exact min-max partition is NP-hard (multiprocessor scheduling); we use LPT (largest item into
    the currently lightest knapsack), a 4/3-approximation that is exact for the common k <= 2 with
    few items. Ties are broken by item index, so the result is deterministic.
    """
    if k <= 0:
        return []
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    bins: list[list[int]] = [[] for _ in range(k)]
    sums = [0.0] * k
    for i in order:
        b = min(range(k), key=lambda a: (sums[a], a))
        bins[b].append(i)
        sums[b] += values[i]
    return bins


def krgs(topology: Topology, job: Job | Sequence[Job], seed: int = 0, *,
         k_rule: Literal["floor", "ceil"] = "floor", objective: Objective = "eq1",
         candidates: Candidates = "all", repair: bool = False, backend: str = "highs",
         tie_break: bool = True, lp: GinaLp | None = None, verbose: bool = False) -> Plan:
    """KRGS, Alg. 1: LP relaxation, knapsack-based rounding of x, randomized choice of y.

    Step 2: for each sub-model g, ``k(g) = floor(sum_s x~_g^s)`` (the paper's text and Lemma 3,
    Eq. 8; the IWQoS slides print a ceiling, available as ``k_rule="ceil"``), the positive x~_g^s
    are split into k(g) knapsacks with min-max sum (``min_max_partition``) and one switch is drawn
    from each knapsack a with probability x~_g^s / S_a. Step 3: each worker draws switch
    s in S(g) with p(s) = y~_{w,g}^s / x~_g^s and the PS with 1 - sum p(s). When several switches
    of S(g) carry the same workers' LP mass these p(s) can sum above 1 (Alg. 1 does not say what
    to do); we then renormalise over S(g) and count it in ``extra["p_renormalised"]``.

    Every (worker, sub-model) ends with exactly one node (Theorems 1-2; the PS is the fallback).
    Memory is *not* guaranteed: Theorem 5 bounds the overload by ``extra["theorem5_memory_factor"]``
    with probability >= 1 - 1/|S|; ``extra["memory_violations"]`` and ``extra["max_load_factor"]``
    report what happened. ``extra["approx_ratio"]`` is the achieved objective over the LP bound
    (Eq. 1: KRGS / LP; Eq. 4: LP / KRGS; >= 1 whenever the plan respects memory, possibly below 1
    when it overloads a switch), ``extra["theorem6_objective_factor"]`` the
    Theorem 6 factor instantiated as Theorem 5 is (n = |W||S|, nu = 2 LP / largest single term).

    ``repair=True`` makes the plan memory-feasible: (1) switches of S(g) that no worker chose are
    dropped (Eq. 1 only decreases); (2) while a switch is overloaded, the sub-model whose removal
    from it costs least per MB freed is removed; its workers there go to the cheapest remaining
    node of S(g) + PS, or g is opened on a switch with enough free memory when that is cheaper.
    Cost: O(#removals x |G_s| x |S| x |W|) arithmetic, i.e. milliseconds at §VII-D scale. Step
    (2)'s change of Eq. 1 is ``extra["repair"]["objective_increase"]`` (it can be negative when
    rounding had sent workers to a poor switch). Measured: +0.1 % on average (+0.8 % at most)
    on the §VII-D leaf-spine/fat-tree jobs; on deliberately memory-tight toy instances +3.6 %
    on average (+15 % at most), the repaired plan ending 5 % (at most 23 %) above the ILP.
    """
    t0 = time.perf_counter()
    jobs = _as_jobs(job)
    lp = lp if lp is not None else relax(topology, jobs, objective=objective, candidates=candidates,
                                         backend=backend, tie_break=tie_break, verbose=verbose)
    inst = lp.inst
    rng = np.random.default_rng(seed)
    n_s = inst.n_s
    plan = Plan("goat", [j.name for j in inst.jobs], status="heuristic")
    ks: dict[str, int] = {}
    knap_sums: list[float] = []
    chosen: list[list[int]] = []
    # ---- Step 2: assign switches to sub-model gradients (Alg. 1 lines 5-13)
    for g, key in enumerate(inst.sub_keys):
        sw = [s for s in range(n_s) if lp.x(g, s) > _EPS]
        xv = [lp.x(g, s) for s in sw]
        tot = sum(xv)
        k = math.floor(tot + 1e-6) if k_rule == "floor" else math.ceil(tot - 1e-6)
        k = min(k, len(sw))
        ks[key] = k
        picked: list[int] = []
        for items in min_max_partition(xv, k):
            sa = sum(xv[i] for i in items)
            knap_sums.append(sa)
            probs = np.array([xv[i] for i in items]) / sa
            picked.append(sw[items[int(rng.choice(len(items), p=probs))]])
        chosen.append(sorted(picked))
        plan.submodel_switches[key] = [inst.switches[s] for s in sorted(picked)]
    # ---- Step 3: aggregation node of each worker's sub-model gradient (Alg. 1 lines 15-20)
    renorm = 0
    for ci, c in enumerate(inst.classes):
        for w in c.workers:
            for g, key in enumerate(inst.sub_keys):
                if inst.sub_job[g] != c.job:
                    continue
                p = np.array([lp.y(ci, g, s) / lp.x(g, s) for s in chosen[g]])
                if p.sum() > 1.0 + 1e-9:
                    p = p / p.sum()
                    renorm += 1
                r = rng.random()
                cum = np.cumsum(p)
                i = int(np.searchsorted(cum, r, side="right"))
                plan.aggregation_node.setdefault(w, {})[key] = inst.switches[chosen[g][i]] if i < len(p) else None
    met = evaluate_plan(topology, inst.jobs, plan, inst)
    extra: dict[str, Any] = {}
    if repair:
        extra["repair"] = _repair(inst, plan, objective)
        met = evaluate_plan(topology, inst.jobs, plan, inst)
    plan.objective = _objective_of(met, objective)
    plan.bound = lp.solution.objective
    plan.solve_seconds = time.perf_counter() - t0     # includes the LP when it was solved here
    n_workers = sum(len(j.workers) for j in inst.jobs)
    big_b = float(inst.sub_mb.max()) if len(inst.sub_mb) else 1.0
    nu_mem = 2.0 * float(inst.mem_mb.min()) / big_b if n_s else 0.0
    extra.update({
        "objective_name": objective, "sense": "min" if objective == "eq1" else "max", "seed": seed,
        "k_rule": k_rule, "lp_objective": lp.solution.objective, "lp_seconds": lp.solution.seconds,
        "approx_ratio": _ratio(plan.objective, lp.solution.objective, objective),
        "k": ks, "min_knapsack_sum": min(knap_sums, default=None), "p_renormalised": renorm,
        "theorem5_memory_factor": theorem_factor(n_s, nu_mem),
        "theorem6_objective_factor": (theorem_factor(n_workers * n_s, 2.0 * lp.solution.objective
                                                     / _largest_term(inst)) if objective == "eq1" else None),
        **met})
    plan.extra = extra
    return plan


def _ratio(obj: float, lp_obj: float, objective: Objective) -> float | None:
    num, den = (obj, lp_obj) if objective == "eq1" else (lp_obj, obj)
    if den <= 1e-12:
        return 1.0 if abs(num) <= 1e-12 else None
    return num / den


def _largest_term(inst: GinaInstance) -> float:
    """Largest single summand of Eq. 1 (the Chernoff normalisation of Theorem 6)."""
    best = 1e-12
    for g, b in enumerate(inst.sub_mb):
        j = int(inst.sub_job[g])
        for c in inst.classes:
            if c.job == j:
                best = max(best, b * float(np.max(c.dist[np.isfinite(c.dist)])))
        d = inst.d_s_ps[j][np.isfinite(inst.d_s_ps[j])]
        if len(d):
            best = max(best, b * float(d.max()))
    return best


def _repair(inst: GinaInstance, plan: Plan, objective: Objective) -> dict[str, Any]:
    """Make ``plan`` respect switch memory (see ``krgs``); returns what it changed and cost.

    Costs are Eq. 1's even when Eq. 4 was optimised: the repair moves traffic, and Eq. 1 measures
    traffic (for on-path candidates the two differ by a constant).
    """
    t0 = time.perf_counter()
    s_idx = {s: i for i, s in enumerate(inst.switches)}
    key_g = {k: g for g, k in enumerate(inst.sub_keys)}

    def node_cost(j: int, w: str, node: str | None) -> float:
        d = inst.worker_dist[(j, w)]
        return float(d[-1] if node is None else d[s_idx[node]])

    def total() -> float:
        tot = 0.0
        for g, key in enumerate(inst.sub_keys):
            j, b = int(inst.sub_job[g]), float(inst.sub_mb[g])
            tot += b * sum(inst.d_s_ps[j, s_idx[s]] for s in plan.submodel_switches[key])
            tot += b * sum(node_cost(j, w, plan.aggregation_node[w][key]) for w in inst.jobs[j].workers)
        return tot

    before = float(total())
    # (1) drop switches that aggregate nobody's gradient: frees memory, lowers Eq. 1
    pruned = 0
    for g, key in enumerate(inst.sub_keys):
        j = int(inst.sub_job[g])
        used = {plan.aggregation_node[w][key] for w in inst.jobs[j].workers}
        keep = [s for s in plan.submodel_switches[key] if s in used]
        pruned += len(plan.submodel_switches[key]) - len(keep)
        plan.submodel_switches[key] = keep
    after_prune = float(total())
    load = np.zeros(inst.n_s)
    for g, key in enumerate(inst.sub_keys):
        for s in plan.submodel_switches[key]:
            load[s_idx[s]] += inst.sub_mb[g]
    removed = moved = opened = 0
    while True:
        over = [s for s in range(inst.n_s) if load[s] > inst.mem_mb[s] + 1e-9]
        if not over:
            break
        s = over[0]
        sname = inst.switches[s]
        best: tuple[float, int, str | None, dict[str, str | None]] | None = None
        for key, sws in plan.submodel_switches.items():
            if sname not in sws:
                continue
            g = key_g[key]
            j, b = int(inst.sub_job[g]), float(inst.sub_mb[g])
            movers = [w for w in inst.jobs[j].workers if plan.aggregation_node[w][key] == sname]
            rest: list[str | None] = [t for t in sws if t != sname] + [None]
            # option A: every mover to its cheapest remaining node of S(g) or the PS
            base = {w: min(rest, key=lambda t, w=w: node_cost(j, w, t)) for w in movers}
            dest = base
            delta = b * sum(node_cost(j, w, base[w]) - node_cost(j, w, sname) for w in movers)
            delta -= b * inst.d_s_ps[j, s]
            new_sw: str | None = None
            # option B: open g on a switch with room for it, when that serves the movers better
            for t in range(inst.n_s):
                tname = inst.switches[t]
                if tname in sws or load[t] + b > inst.mem_mb[t] + 1e-9 or not math.isfinite(inst.d_s_ps[j, t]):
                    continue
                dest_b = {w: min([base[w], tname], key=lambda v, w=w: node_cost(j, w, v)) for w in movers}
                if tname not in dest_b.values():
                    continue
                d_b = b * sum(node_cost(j, w, dest_b[w]) - node_cost(j, w, sname) for w in movers)
                d_b += b * (inst.d_s_ps[j, t] - inst.d_s_ps[j, s])
                if d_b < delta - 1e-12:
                    delta, dest, new_sw = d_b, dest_b, tname
            score = delta / b
            if best is None or score < best[0] - 1e-12:
                best = (score, g, new_sw, dest)
        assert best is not None
        _, g, new_sw, dest = best
        key = inst.sub_keys[g]
        plan.submodel_switches[key] = [t for t in plan.submodel_switches[key] if t != sname]
        load[s] -= inst.sub_mb[g]
        removed += 1
        if new_sw is not None:
            plan.submodel_switches[key] = sorted(plan.submodel_switches[key] + [new_sw])
            load[s_idx[new_sw]] += inst.sub_mb[g]
            opened += 1
        for w, t in dest.items():
            plan.aggregation_node[w][key] = t
            moved += 1
    after = float(total())
    return {"pruned_unused": pruned, "removed": removed, "opened": opened, "moved_workers": moved,
            "objective_before": before, "objective_after_prune": after_prune, "objective_after": after,
            "objective_increase": after - after_prune, "seconds": time.perf_counter() - t0}


# ============================================================================ GOAT-Async (Alg. 2)


def goat_async(topology: Topology, job: Job, history: Mapping[str, float] | Sequence[float], *,
               seed: int = 0, psi_params: PsiParams = PsiParams(), rounds: int | None = None,
               plan: Plan | None = None, **krgs_options: Any) -> Plan:
    """GOAT for asynchronous training (§V): KRGS placement plus K_t from Alg. 2 (``choose_k``).

    ``history`` maps each worker to its last gradient interval p_w (or lists them in
    ``job.workers`` order). The K_t fastest workers participate (z_w^t = 1, §V-A); ``extra["async"]``
    holds K_t, the participants, K_t^s per switch as Eq. 20 sums it (sum over w, g of y z), the
    per-(switch, sub-model) counts a switch waits for, the PS's counts, and Alg. 2's table.
    ``plan`` reuses an existing GOAT plan instead of running KRGS.
    """
    t0 = time.perf_counter()
    if isinstance(history, Mapping):
        missing = [w for w in job.workers if w not in history]
        if missing:
            raise ModelError(f"GOAT-Async: no history for workers {missing}")
        hist = [float(history[w]) for w in job.workers]
    else:
        hist = [float(v) for v in history]
        if len(hist) != len(job.workers):
            raise ModelError(f"GOAT-Async: {len(hist)} history values for {len(job.workers)} workers")
    k, info = choose_k(hist, lambda kk: psi(kk, psi_params, len(job.workers)), rounds)
    base = plan if plan is not None else krgs(topology, job, seed, **krgs_options)
    out = Plan.from_dict(base.to_dict())
    out.scheme = "goat-async"
    out.solve_seconds = time.perf_counter() - t0         # Alg. 2, plus KRGS when run here
    order = sorted(range(len(job.workers)), key=lambda i: (hist[i], i))
    part = [job.workers[i] for i in order[:k]]
    per_sub: dict[str, dict[str, int]] = {}
    at_ps: dict[str, int] = {}
    for w in part:
        for g, node in out.aggregation_node.get(w, {}).items():
            if node is None:
                at_ps[g] = at_ps.get(g, 0) + 1
            else:
                cnt = per_sub.setdefault(node, {})
                cnt[g] = cnt.get(g, 0) + 1
    out.extra = dict(out.extra)
    out.extra["async"] = {"K_t": k, "participants": part,
                          "K_ts": {s: sum(v.values()) for s, v in per_sub.items()},
                          "K_tsg": per_sub, "K_t_ps": at_ps,
                          "alg2": {str(kk): v for kk, v in info["per_K"].items()}, "rounds": info["rounds"]}
    return out


# ============================================================================ scheme registry

from controller.schemes import register  # noqa: E402  (schemes imports this module lazily)


def _common(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"objective": options.get("objective", "eq1"), "candidates": options.get("candidates", "all"),
            "verbose": bool(options.get("verbose", False))}


@register("goat")
def _scheme_goat(topology: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """KRGS (Alg. 1). Options: seed (0), repair (True: a plan for switches must fit their memory;
    false gives Alg. 1's raw rounding), k_rule, objective, candidates, backend. Results: a node
    holding every worker of a sub-model multicasts it; what the PS completes leaves it once,
    relayed through such a node (controller.deploy)."""
    return krgs(topology, jobs, int(options.get("seed", 0)), repair=bool(options.get("repair", True)),
                k_rule=options.get("k_rule", "floor"), backend=options.get("backend", "highs"),
                **_common(options))


@register("goat-ilp")
def _scheme_goat_ilp(topology: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """Exact GINA. Options: solver ("highs" or "cbc"), time_limit (60 s), objective, candidates."""
    return solve_gina_ilp(topology, jobs, solver=options.get("solver", "highs"),
                          time_limit=options.get("time_limit", 60.0), **_common(options))


@register("goat-lp")
def _scheme_goat_lp(topology: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """LP relaxation (bound). Options: backend ("highs" or "cbc"), objective, candidates."""
    return solve_gina_lp(topology, jobs, backend=options.get("backend", "highs"), **_common(options))


@register("goat-async")
def _scheme_goat_async(topology: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """GOAT-Async (Alg. 2) for one job. Options: history ({worker: p_w}; else job.meta["history"];
    else all equal), loss_gap / epsilon / sigma2 / n (psi, Eq. 36), rounds, plus "goat"'s options.
    Results travel as GOAT's, to each round's participants."""
    if len(jobs) != 1:
        raise ModelError("goat-async plans one job at a time (Alg. 2 is per job)")
    job = jobs[0]
    history = options.get("history") or job.meta.get("history") or {w: 1.0 for w in job.workers}
    defaults = PsiParams()
    params = PsiParams(float(options.get("loss_gap", defaults.loss_gap)),
                       float(options.get("epsilon", defaults.epsilon)),
                       float(options.get("sigma2", defaults.sigma2)), options.get("n"))
    return goat_async(topology, job, history, seed=int(options.get("seed", 0)), psi_params=params,
                      rounds=options.get("rounds"), repair=bool(options.get("repair", True)),
                      k_rule=options.get("k_rule", "floor"), **_common(options))
