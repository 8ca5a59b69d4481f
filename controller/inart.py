"""InArt: in-network aggregation with route selection in a multi-PS architecture.

InArt (WWW '24, §3-§4) picks, for one training job with several parameter servers (PSs):

* ``x_s``: the fraction of the model that PS ``s`` owns (``Σ_s x_s = 1``);
* for every worker ``w`` and PS ``s``: whether ``w``'s gradients for ``s`` are aggregated at
  the PS (``y^{s,w}``) or at one programmable switch ``v`` (``y_v^{s,w}``, at most one switch,
  §3.2 "INA constraints");
* one path per flow: worker→PS (direct), worker→switch, switch→PS (``q_p``);

so as to maximise the per-worker gradient sending rate ``f`` under switch aggregation capacity
``C(v)``, PS ingress capacity ``B(s)`` and link capacity ``B(e)`` (minus background ``c``/``b``),
Eq. (1). A worker sends ``f·x_s`` to PS ``s``; every flow on a link, into a switch or into a PS
carries that rate, and a switch that aggregates anything for ``s`` sends one flow of ``f·x_s``
to ``s`` (``z_v^s``).

Linearisation used throughout (why: Eq. (1)/(2)/(5) multiply ``f``, ``x_s`` and the 0/1
variables). Substituting rates ``r_s = f·x_s`` and flow rates ``r_s·y`` / ``r_s·q`` / ``r_s·z``
turns every relaxation into a linear program whose optimum is exactly that of the relaxation:

* **LP-InArt, Eq. (5)** with a fixed split: add ``r_s = x_s·f``; its optimum ``f~`` is the
  paper's upper bound for Eq. (1) at that split;
* the same LP with ``x`` free: the relaxation of the whole of Eq. (1) (an upper bound on any
  integral plan with any split);
* **Eq. (2)** (L-InArt's model: switch and PS capacity only, no links, no routes).

Variants (``solve_inart(..., variant=...)``):

``"l-inart"``   the paper's two-phase InArt: phase 1 (L-InArt, Alg. 1) splits the model by
                solving Eq. (2) -- the LP's dual values are the KKT/Lagrange multipliers of
                Eq. (3)-(4) and are reported in ``plan.extra["lagrange"]``; among equally
                good splits the one closest to capacity-proportional is taken (Eq. (2) has
                no routes, so with equal PS capacities it is often degenerate). Phase 2 is
                R-InArt at that fixed split.
``"r-inart"``   (default, scheme ``"inart"``) both phases at once: the split is taken from
                the LP relaxation of the whole of Eq. (1) (links included; ties broken
                towards the capacity-proportional split, as above), then R-InArt rounds;
                since ``x_s`` is a free variable here, the split is re-optimised for the
                rounded routes (a |S|-variable LP). On Fig. 1 every variant reaches 8/3 with
                a 50/50 split, above the paper's 2.5 at 60/40; exhaustive search over all
                placements shows 8/3 is the integral optimum of that wiring.
``"equal-split"`` (scheme ``"inart-equal"``) ``x_s = 1/|S|`` then R-InArt: the paper's first
                benchmark (§5.1.2, "R-InArt" in Figs. 2-5).

R-InArt (Alg. 2): solve LP-InArt (Eq. (5)), then randomised rounding: for each (s, w) pick
the aggregation location PS/``v`` with probabilities ``y~``; then a path for each chosen flow
with probabilities ``q~`` (conditional on the location), and one switch→PS path per used
``(v, s)`` (``z^s_v = 1``). The rounded plan's rate is ``min`` over resources of
residual capacity / load (so it is always feasible; the paper instead states a bi-criteria
violation bound). Rounding is repeated ``rounds`` times with a seeded generator and the best
plan is kept (why: one draw has high variance). One alteration follows each draw: a switch
left aggregating a single worker's flow for a PS saves nothing, so that flow is marked as
aggregated at the PS (same route, less switch load).

Feasible route sets ``P`` (§3.1 leaves them open): all shortest paths between the two ends
(hosts never transit), at most ``k_paths`` per pair; a switch ``v`` is a candidate
aggregation point for (s, w) when it is programmable with spare capacity and lies within
``max_detour`` extra hops of a shortest w→s route. Links are full duplex: capacity per
direction, and only the gradient direction (towards the PSs) is loaded, as in Eq. (1).

The same machinery expresses the paper's other benchmarks (§5.1.2) so that all are scored in
one model: ``aggregation="tor"`` with an equal split is ATP (best-effort aggregation at each
worker's ToR, least-loaded routes to the PSs), ``aggregation="none"`` is LBMM (load-balanced
routing without INA).
"""
from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

import numpy as np

from controller.model import Job, ModelError, Plan, Topology, task_key
from controller.schemes import SchemeFn, register
from controller.solver import Limits, LinearModel, Solution, solve

Variant = Literal["r-inart", "l-inart", "equal-split"]
Aggregation = Literal["any", "tor", "none"]
VARIANTS: tuple[str, ...] = ("r-inart", "l-inart", "equal-split")
SCHEME_OF_VARIANT = {"r-inart": "inart", "l-inart": "l-inart", "equal-split": "inart-equal"}

Path = tuple[str, ...]
Arc = tuple[str, str]
INF = math.inf
_EPS = 1e-9
_TIE = 1e-5          # weight of the split tie-break in the relaxations' objective


# ----------------------------------------------------------------------------- LP helper
_LP_TIME_LIMIT = 600.0   # s per LP; the 54-host fat-tree relaxations solve in about a second


def _solve_lp(lp: LinearModel, inst: "_Instance") -> Solution:
    """Maximise. Interior point with crossover: a vertex like simplex, about twice as fast on
    the fat-tree relaxations (which are highly degenerate for simplex)."""
    return solve(lp, maximize=True, limits=Limits(_LP_TIME_LIMIT, method="ipm", verbose=inst.verbose))


# ----------------------------------------------------------------------------- instance
@dataclass
class _Instance:
    """Resources, candidate aggregation switches and route sets of one (topology, job)."""
    topo: Topology
    workers: list[str]
    ps: list[str]
    switch_cap: dict[str, float]            # residual C(v) - c(v) of candidate switches
    ps_cap: dict[str, float]                # residual B(s) - b(s)
    arc_cap: dict[Arc, float]               # residual B(e) - b(e), per direction
    cand: dict[tuple[str, str], list[str]]  # (s, w) -> switches that may aggregate w for s
    direct: dict[tuple[str, str], list[Path]] = field(default_factory=dict)   # (s, w)
    up: dict[tuple[str, str], list[Path]] = field(default_factory=dict)       # (v, w)
    down: dict[tuple[str, str], list[Path]] = field(default_factory=dict)     # (v, s)
    verbose: bool = False                                                     # solver log


def _bfs(topo: Topology, src: str) -> dict[str, int]:
    """Hop distances from ``src``; hosts other than ``src`` are reached but never expanded."""
    dist = {src: 0}
    q = deque([src])
    while q:
        u = q.popleft()
        if u != src and topo.nodes[u].kind == "host":
            continue
        for v in topo.neighbors(u):
            if v not in dist:
                dist[v] = dist[u] + 1
                q.append(v)
    return dist


def _shortest_paths(topo: Topology, a: str, b: str, dist_b: Mapping[str, int], k: int) -> list[Path]:
    """Up to ``k`` shortest a→b paths in deterministic (link) order; hosts do not transit."""
    if a not in dist_b:
        return []
    out: list[Path] = []

    def walk(path: list[str]) -> None:
        if len(out) >= k:
            return
        u = path[-1]
        if u == b:
            out.append(tuple(path))
            return
        for v in topo.neighbors(u):
            if dist_b.get(v) == dist_b[u] - 1 and (v == b or topo.nodes[v].kind == "switch"):
                path.append(v)
                walk(path)
                path.pop()

    walk([a])
    return out


def _arcs(path: Path) -> list[Arc]:
    return list(zip(path, path[1:]))


def _residual(cap: float, used: float) -> float:
    return max(0.0, cap - used)


def _build_instance(topo: Topology, job: Job, aggregation: Aggregation, k_paths: int,
                    max_detour: int, background: Mapping[str, float], verbose: bool = False) -> _Instance:
    workers, ps = list(dict.fromkeys(job.workers)), list(dict.fromkeys(job.ps))
    if not workers or not ps:
        raise ModelError(f"job {job.name}: InArt needs at least one worker and one PS")
    for n in workers + ps:
        if n not in topo.nodes:
            raise ModelError(f"job {job.name}: node {n} is not in topology {topo.name}")
    if set(workers) & set(ps):
        raise ModelError(f"job {job.name}: a host cannot be both worker and PS")
    # Background usage: node names, or "u->v" (one direction) / "u-v" (both) for links.
    bg_arc: dict[Arc, float] = {}
    for key, used in background.items():
        if "->" in key:
            u, v = key.split("->")
            bg_arc[(u, v)] = bg_arc.get((u, v), 0.0) + used
        elif "-" in key and key not in topo.nodes:
            u, v = key.split("-", 1)
            for arc in ((u, v), (v, u)):
                bg_arc[arc] = bg_arc.get(arc, 0.0) + used
    arc_cap: dict[Arc, float] = {}
    for l in topo.links:
        for arc in ((l.a, l.b), (l.b, l.a)):
            arc_cap[arc] = _residual(l.capacity_gbps, bg_arc.get(arc, 0.0))
    # B(s): the PS's processing capacity, and never more than its NICs can take in.
    ps_cap = {}
    for s in ps:
        nic = sum(l.capacity_gbps for l in topo.links_of(s))
        own = topo.nodes[s].capacity_gbps or INF
        ps_cap[s] = _residual(min(own, nic), background.get(s, 0.0))
    # C(v): capacity 0 on a programmable switch means "not limited" (model.py).
    switch_cap = {}
    for v in topo.programmable_switches():
        c = _residual(topo.nodes[v].capacity_gbps or INF, background.get(v, 0.0))
        if c > _EPS:
            switch_cap[v] = c
    dist = {n: _bfs(topo, n) for n in ps + list(switch_cap)}
    dist_w = {w: _bfs(topo, w) for w in workers}
    cand: dict[tuple[str, str], list[str]] = {}
    for s in ps:
        for w in workers:
            if w not in dist[s]:
                raise ModelError(f"job {job.name}: no route from {w} to PS {s}")
            if aggregation == "none":
                cand[(s, w)] = []
            elif aggregation == "tor":
                tor = topo.tor_of(w)
                cand[(s, w)] = [tor] if tor in switch_cap else []
            else:
                d = dist[s][w]
                cand[(s, w)] = [v for v in switch_cap
                                if dist_w[w].get(v, INF) + dist[v].get(s, INF) <= d + max_detour]
    inst = _Instance(topo, workers, ps, switch_cap, ps_cap, arc_cap, cand, verbose=verbose)
    for s in ps:
        for w in workers:
            inst.direct[(s, w)] = _shortest_paths(topo, w, s, dist[s], k_paths)
            for v in cand[(s, w)]:
                if (v, w) not in inst.up:
                    inst.up[(v, w)] = _shortest_paths(topo, w, v, dist[v], k_paths)
                if (v, s) not in inst.down:
                    inst.down[(v, s)] = _shortest_paths(topo, v, s, dist[s], k_paths)
    return inst


# ----------------------------------------------------------------------------- relaxations
@dataclass
class _Relaxation:
    """Solution of Eq. (5) (``links=True``) or Eq. (2) (``links=False``) in rate form."""
    status: str
    f: float                                              # f of the solution returned
    bound: float                                          # upper bound on the optimum of f
    r: dict[str, float]                                   # r_s = f·x_s
    direct: dict[tuple[str, str], list[float]]            # (s, w) -> rate per direct path
    up: dict[tuple[str, str, str], list[float]]           # (s, v, w) -> rate per w→v path
    down: dict[tuple[str, str], list[float]]              # (s, v) -> rate per v→s path
    duals: dict[str, float]                               # capacity rows -> multiplier


def _relax(inst: _Instance, split: Mapping[str, float] | None, links: bool,
           prefer: Mapping[str, float] | None = None) -> _Relaxation:
    """Max ``f`` over the relaxation. ``split`` fixes ``x``; ``links=False`` drops link rows and
    routes (Eq. (2)). ``prefer``: among optimal splits, take the one closest (L1) to these
    fractions (why: Eq. (2) is often degenerate in ``x``)."""
    lp = LinearModel()
    f = lp.var(cost=1.0)
    r = {s: lp.var() for s in inst.ps}
    lp.row([(r[s], 1.0) for s in inst.ps] + [(f, -1.0)], 0.0, 0.0)           # Σ x_s = 1
    if split is not None:
        for s in inst.ps:
            lp.row([(r[s], 1.0), (f, -split.get(s, 0.0))], 0.0, 0.0)
    one = [()]  # Eq. (2): one route-less "path" per flow
    cols_d: dict[tuple[str, str], list[int]] = {}
    cols_u: dict[tuple[str, str, str], list[int]] = {}
    cols_z: dict[tuple[str, str], list[int]] = {}
    on_arc: dict[Arc, list[int]] = {}
    on_switch: dict[str, list[int]] = {v: [] for v in inst.switch_cap}
    into_ps: dict[str, list[int]] = {s: [] for s in inst.ps}

    def cols(paths: Sequence[Path]) -> list[int]:
        out = []
        for p in (paths if links else one):
            c = lp.var()
            out.append(c)
            for a in _arcs(p):
                on_arc.setdefault(a, []).append(c)
        return out

    for s in inst.ps:
        for w in inst.workers:
            cols_d[(s, w)] = cols(inst.direct[(s, w)])
            into_ps[s] += cols_d[(s, w)]
            terms = [(c, 1.0) for c in cols_d[(s, w)]]
            for v in inst.cand[(s, w)]:
                if (s, v) not in cols_z:
                    cols_z[(s, v)] = cols(inst.down[(v, s)])
                    into_ps[s] += cols_z[(s, v)]
                    # z_v^s <= 1, i.e. the aggregate flow carries at most r_s
                    lp.row([(c, 1.0) for c in cols_z[(s, v)]] + [(r[s], -1.0)], hi=0.0)
                cu = cols_u[(s, v, w)] = cols(inst.up[(v, w)])
                on_switch[v] += cu
                terms += [(c, 1.0) for c in cu]
                # y_v^{s,w} <= z_v^s
                lp.row([(c, 1.0) for c in cu] + [(c, -1.0) for c in cols_z[(s, v)]], hi=0.0)
            lp.row(terms + [(r[s], -1.0)], 0.0, 0.0)           # y + Σ_v y_v = 1
    cap_rows: dict[str, int] = {}
    for v, cs in on_switch.items():
        if cs and inst.switch_cap[v] < INF:
            cap_rows[f"switch:{v}"] = lp.row([(c, 1.0) for c in cs], hi=inst.switch_cap[v])
    for s, cs in into_ps.items():
        if inst.ps_cap[s] < INF:
            cap_rows[f"ps:{s}"] = lp.row([(c, 1.0) for c in cs], hi=inst.ps_cap[s])
    if links:
        for a, cs in on_arc.items():
            cap_rows[f"link:{a[0]}->{a[1]}"] = lp.row([(c, 1.0) for c in cs], hi=inst.arc_cap[a])
    if prefer is not None:
        # Tie-break among (near-)optimal splits: a tiny penalty on Σ_s |r_s - prefer_s·f|, so
        # one solve suffices. Σ_s |.| <= 2f, so it costs at most a factor (1 - 2·_TIE) of f.
        for s in inst.ps:
            d = lp.var(cost=-_TIE)
            lp.row([(d, 1.0), (r[s], -1.0), (f, prefer[s])], lo=0.0)
            lp.row([(d, 1.0), (r[s], 1.0), (f, -prefer[s])], lo=0.0)
    sol = _solve_lp(lp, inst)
    if sol.status != "optimal":
        raise ModelError(f"InArt relaxation is {sol.status}")
    x, duals, status = sol.values, sol.row_duals, sol.status
    get = lambda cs: [max(0.0, float(x[c])) for c in cs]
    fv = float(x[f])
    return _Relaxation(
        status, fv, fv / (1 - 2 * _TIE) if prefer is not None else fv,
        {s: max(0.0, float(x[r[s]])) for s in inst.ps},
        {k: get(v) for k, v in cols_d.items()}, {k: get(v) for k, v in cols_u.items()},
        {k: get(v) for k, v in cols_z.items()},
        {name: float(duals[i]) if i < len(duals) else 0.0 for name, i in cap_rows.items()})


# ----------------------------------------------------------------------------- rounding
@dataclass
class _Rounded:
    agg: dict[tuple[str, str], str | None]         # (s, w) -> switch or None (at the PS)
    up: dict[tuple[str, str], Path]                # (s, w) -> worker→switch or worker→PS path
    down: dict[tuple[str, str], Path]              # (s, v) -> switch→PS path, z_v^s = 1


def _pick(rng: np.random.Generator, weights: Sequence[float]) -> int:
    """Index drawn with probability proportional to ``weights`` (first one if all are 0)."""
    tot = float(sum(weights))
    if tot <= _EPS:
        return 0
    u = rng.random() * tot
    acc = 0.0
    for i, wt in enumerate(weights):
        acc += wt
        if u < acc:
            return i
    return len(weights) - 1


def _round(inst: _Instance, rel: _Relaxation, active: Sequence[str],
           rng: np.random.Generator) -> _Rounded:
    """One randomised rounding of Alg. 2 (lines 5-28), then one alteration: a switch that
    ended up aggregating a single worker's flow for a PS saves nothing (one flow in, one
    out), so that flow is marked as aggregated at the PS on the same route (why: it frees
    switch capacity and never raises any load)."""
    agg: dict[tuple[str, str], str | None] = {}
    up: dict[tuple[str, str], Path] = {}
    down: dict[tuple[str, str], Path] = {}
    for s in active:
        for w in inst.workers:
            cands = inst.cand[(s, w)]
            d = rel.direct[(s, w)]
            weights = [sum(d)] + [sum(rel.up[(s, v, w)]) for v in cands]
            i = _pick(rng, weights)
            if i == 0:      # y^{s,w} = 1: to the PS, path by q~^{s,w}
                agg[(s, w)] = None
                up[(s, w)] = inst.direct[(s, w)][_pick(rng, d)]
            else:           # y_v^{s,w} = 1: INA rule on v, path by q~^{v,w}
                v = cands[i - 1]
                agg[(s, w)] = v
                up[(s, w)] = inst.up[(v, w)][_pick(rng, rel.up[(s, v, w)])]
                if (s, v) not in down:                           # z_v^s = 1, path by q~^{s,v}
                    down[(s, v)] = inst.down[(v, s)][_pick(rng, rel.down[(s, v)])]
    members: dict[tuple[str, str], list[str]] = {}
    for (s, w), v in agg.items():
        if v is not None:
            members.setdefault((s, v), []).append(w)
    for (s, v), ws in members.items():
        if len(ws) == 1:
            w = ws[0]
            agg[(s, w)] = None
            up[(s, w)] = up[(s, w)] + down.pop((s, v))[1:]
    return _Rounded(agg, up, down)


def _flow_counts(inst: _Instance, rd: _Rounded) -> dict[str, dict[str, int]]:
    """Resource -> PS -> number of flows of rate f·x_s it carries (Eq. (1) left-hand sides)."""
    cnt: dict[str, dict[str, int]] = {}

    def add(res: str, s: str) -> None:
        d = cnt.setdefault(res, {})
        d[s] = d.get(s, 0) + 1

    for (s, w), v in rd.agg.items():
        for a in _arcs(rd.up[(s, w)]):
            add(f"link:{a[0]}->{a[1]}", s)
        add(f"switch:{v}" if v else f"ps:{s}", s)
    for (s, v), p in rd.down.items():
        for a in _arcs(p):
            add(f"link:{a[0]}->{a[1]}", s)
        add(f"ps:{s}", s)
    return cnt


def _capacity(inst: _Instance, res: str) -> float:
    kind, name = res.split(":", 1)
    if kind == "switch":
        return inst.switch_cap[name]
    if kind == "ps":
        return inst.ps_cap[name]
    u, v = name.split("->")
    return inst.arc_cap[(u, v)]


def _rate_fixed(inst: _Instance, cnt: Mapping[str, Mapping[str, int]],
                split: Mapping[str, float]) -> tuple[float, str]:
    """Largest f with f·Σ_s x_s·n_s <= capacity on every resource, and the bottleneck."""
    best, where = INF, ""
    for res, per in cnt.items():
        load = sum(split[s] * n for s, n in per.items())
        if load > _EPS:
            rate = _capacity(inst, res) / load
            if rate < best:
                best, where = rate, res
    return best, where


def _resplit(inst: _Instance, cnt: Mapping[str, Mapping[str, int]],
             active: Sequence[str]) -> tuple[float, dict[str, float]]:
    """Best split for fixed integral routes: max Σ r_s s.t. Σ_s n_s r_s <= cap (small LP)."""
    lp = LinearModel()
    r = {s: lp.var(cost=1.0) for s in active}
    for res, per in cnt.items():
        terms = [(r[s], float(n)) for s, n in per.items() if s in r and n]
        if terms:
            lp.row(terms, hi=_capacity(inst, res))
    sol = _solve_lp(lp, inst)
    f, x = sol.objective or 0.0, sol.values
    if sol.status != "optimal" or f <= _EPS:
        return 0.0, {s: 1.0 / len(active) for s in active}
    return f, {s: max(0.0, float(x[r[s]])) / f for s in active}


def _merge_singles(rd: _Rounded) -> _Rounded:
    """The alteration of :func:`_round`: a switch aggregating one worker's flow for a PS
    saves nothing, so that flow is aggregated at the PS on the same route."""
    members: dict[tuple[str, str], list[str]] = {}
    for (s, w), v in rd.agg.items():
        if v is not None:
            members.setdefault((s, v), []).append(w)
    agg, up, down = dict(rd.agg), dict(rd.up), dict(rd.down)
    for (s, v), ws in members.items():
        if len(ws) == 1:
            w = ws[0]
            agg[(s, w)] = None
            up[(s, w)] = up[(s, w)] + down.pop((s, v))[1:]
    for key in [k for k in down if k not in members]:
        del down[key]
    return _Rounded(agg, up, down)


def _improve(inst: _Instance, rd: _Rounded, split: Mapping[str, float], active: Sequence[str],
             max_moves: int = 2000) -> _Rounded:
    """Local search after rounding (an alteration beside Alg. 2's): while some (s, w) flow
    crossing the bottleneck resource can move -- to another aggregation location (the PS or a
    candidate switch) or another of its routes -- so that the bottleneck carries less and
    every resource the move loads stays above the current rate, make the best such move (the
    one leaving its most loaded touched resource the most headroom). Each move either raises
    ``f`` or takes one resource off the set at the bottleneck rate, so it ends; it never
    lowers ``f``. Why: independent rounding of a relaxation that spreads each flow thinly over
    many switches opens many aggregates (z_v^s = 1) into the PS; on the 54-host fat-tree the
    best of 16 draws was below ATP's ToR-only plan, a feasible point of the same model."""
    agg, up, down = dict(rd.agg), dict(rd.up), dict(rd.down)
    members: dict[tuple[str, str], set[str]] = {}
    for (s, w), v in agg.items():
        if v is not None:
            members.setdefault((s, v), set()).add(w)
    load: dict[str, float] = {}
    cap: dict[str, float] = {}

    def res_of(s: str, w: str, v: str | None, path: Path) -> list[str]:
        return [f"link:{a}->{b}" for a, b in _arcs(path)] + [f"switch:{v}" if v else f"ps:{s}"]

    def down_res(s: str, path: Path) -> list[str]:
        return [f"link:{a}->{b}" for a, b in _arcs(path)] + [f"ps:{s}"]

    def bump(res: Sequence[str], x: float) -> None:
        for r in res:
            load[r] = load.get(r, 0.0) + x
            if r not in cap:
                cap[r] = _capacity(inst, r)

    for (s, w), v in agg.items():
        bump(res_of(s, w, v, up[(s, w)]), split[s])
    for (s, v), p in down.items():
        bump(down_res(s, p), split[s])

    def rate(r: str) -> float:
        return cap[r] / load[r] if load.get(r, 0.0) > _EPS else INF

    for _ in range(max_moves):
        where = min(load, key=rate)
        f = rate(where)
        if f == INF:
            break
        best: tuple[float, tuple] | None = None
        for (s, w), v in agg.items():
            x = split[s]
            if x <= _EPS:
                continue
            old = res_of(s, w, v, up[(s, w)])
            old_down = down_res(s, down[(s, v)]) if v is not None and members[(s, v)] == {w} else []
            removed = old + old_down
            if where not in removed:
                continue
            options: list[tuple[str | None, Path, Path | None]] = [
                (None, p, None) for p in inst.direct[(s, w)]]
            for u in inst.cand[(s, w)]:
                if (s, u) in down and members.get((s, u)) and (u != v or members[(s, u)] != {w}):
                    downs: list[Path | None] = [None]          # joins an open aggregate
                else:
                    downs = list(inst.down[(u, s)])
                options += [(u, p, d) for p in inst.up[(u, w)] for d in downs]
            for u, p, d in options:
                added = res_of(s, w, u, p) + (down_res(s, d) if d is not None else [])
                delta: dict[str, float] = {}
                for r in removed:
                    delta[r] = delta.get(r, 0.0) - x
                for r in added:
                    delta[r] = delta.get(r, 0.0) + x
                if delta.get(where, 0.0) >= -_EPS:
                    continue
                worst = INF
                for r, dx in delta.items():
                    if dx > _EPS:
                        c = cap[r] if r in cap else _capacity(inst, r)
                        worst = min(worst, c / (load.get(r, 0.0) + dx))
                if worst <= f * (1 + 1e-9):
                    continue
                if best is None or worst > best[0]:
                    best = (worst, (s, w, v, u, p, d, removed, added))
        if best is None:
            break
        s, w, v, u, p, d, removed, added = best[1]
        bump(removed, -split[s])
        bump(added, split[s])
        if v is not None:
            members[(s, v)].discard(w)
            if not members[(s, v)]:
                del members[(s, v)]
                del down[(s, v)]
        agg[(s, w)], up[(s, w)] = u, p
        if u is not None:
            members.setdefault((s, u), set()).add(w)
            if d is not None:
                down[(s, u)] = d
    return _merge_singles(_Rounded(agg, up, down))


# ----------------------------------------------------------------------------- public API
def proportional_split(topology: Topology, job: Job) -> dict[str, float]:
    """x_s proportional to the PSs' ingress capacity (equal when all are equal or unlimited)."""
    caps = []
    for s in job.ps:
        nic = sum(l.capacity_gbps for l in topology.links_of(s))
        caps.append(min(topology.nodes[s].capacity_gbps or INF, nic))
    tot = sum(caps)
    return {s: c / tot for s, c in zip(job.ps, caps)}


def _even(inst: _Instance) -> dict[str, float]:
    return {s: 1.0 / len(inst.ps) for s in inst.ps}


def _l_inart(inst: _Instance, topology: Topology, job: Job) -> tuple[dict[str, float], float, dict[str, float]]:
    rel = _relax(inst, None, links=False, prefer=proportional_split(topology, job))
    split = {s: rel.r[s] / rel.f for s in inst.ps} if rel.f > _EPS else _even(inst)
    return split, rel.bound, rel.duals


def l_inart_split(topology: Topology, job: Job, *, aggregation: Aggregation = "any",
                  k_paths: int = 8, max_detour: int = 0,
                  background: Mapping[str, float] | None = None, verbose: bool = False
                  ) -> tuple[dict[str, float], float, dict[str, float]]:
    """Phase 1, L-InArt (Alg. 1, Eq. (2)): the model split ``x``.

    Returns ``(split, f2, multipliers)``: the split, the optimum of Eq. (2) (an upper bound
    that ignores links) and the Lagrange multipliers of its switch/PS capacity constraints
    (the KKT multipliers ``ρ_v``, ``θ_s`` of Eq. (3), from the LP duals)."""
    inst = _build_instance(topology, job, aggregation, k_paths, max_detour, background or {}, verbose)
    return _l_inart(inst, topology, job)


def solve_inart(topology: Topology, job: Job, *, seed: int = 0, variant: Variant = "r-inart",
                aggregation: Aggregation = "any", rounds: int = 16, k_paths: int = 8,
                max_detour: int = 0, background: Mapping[str, float] | None = None,
                any_split_bound: bool = True, scheme: str | None = None, verbose: bool = False,
                improve: bool = True) -> Plan:
    """Plan one job with InArt (§4): model split, aggregation switch and route per flow.

    Tasks are named by ``model.task_key(job, s)`` ("job/ps" for a multi-PS job).
    ``plan.split``: PS -> x_s. ``plan.paths[task][w]``: the worker→PS route of w's gradients
    for that PS (through the aggregation switch when there is one).
    ``plan.aggregation_node[w][task]``: that switch, or ``None`` when the PS aggregates.
    ``plan.extra["switch_paths"][task][v]``: the route of v's aggregate to the PS.
    ``plan.rates[task] = f·x_s`` (Gb/s each worker sends to that PS); ``plan.objective = f``.
    ``plan.bound``: LP-InArt's ``f~`` (Eq. (5)) at the plan's split (``"l-inart"``,
    ``"equal-split"``) or over all splits (``"r-inart"``), so ``objective <= bound``;
    ``extra["bound_any_split"]`` is the latter for every variant (skipped when
    ``any_split_bound`` is false, to save one LP). ``background``: capacity used by other
    traffic (§3.1, c(v), b(s), b(e)) in Gb/s, keyed by node name, ``"u->v"`` (one link
    direction) or ``"u-v"`` (both). ``rounds``: rounding trials, best kept; ``seed`` makes
    the plan reproducible; ``improve``: the local search after rounding (:func:`_improve`;
    ``extra["rounded_rate"]`` is the rate before it)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown InArt variant {variant!r}; one of {', '.join(VARIANTS)}")
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    t0 = time.perf_counter()
    inst = _build_instance(topology, job, aggregation, k_paths, max_detour, dict(background or {}), verbose)
    extra: dict[str, Any] = {"variant": variant, "aggregation": aggregation, "rounds": rounds,
                             "k_paths": k_paths, "max_detour": max_detour, "seed": seed}
    if variant == "r-inart" or any_split_bound:
        # x is free here; among equally good splits prefer the capacity-proportional one, as
        # L-InArt does (why: the relaxation is degenerate in x, e.g. on Fig. 1 with 2 workers)
        joint = _relax(inst, None, links=True, prefer=proportional_split(topology, job))
        extra["bound_any_split"] = joint.bound
    if variant == "r-inart":
        rel = joint
        split = {s: rel.r[s] / rel.f for s in inst.ps} if rel.f > _EPS else _even(inst)
        extra["lp_split"] = dict(split)
    else:
        if variant == "l-inart":
            split, extra["eq2_rate"], extra["lagrange"] = _l_inart(inst, topology, job)
        else:
            split = _even(inst)
        rel = _relax(inst, split, links=True)
    active = [s for s in inst.ps if split[s] > _EPS]
    rng = np.random.default_rng(seed)
    best: tuple[float, _Rounded, dict[str, float], str] | None = None
    def evaluate(rd: _Rounded, given: dict[str, float]) -> tuple[float, dict[str, float], str]:
        """A rounding's rate, split (R-InArt re-splits over the PSes) and bottleneck."""
        cnt = _flow_counts(inst, rd)
        if variant == "r-inart":
            f, sp = _resplit(inst, cnt, active)
            sp = {s: sp.get(s, 0.0) for s in inst.ps}
            return f, sp, _rate_fixed(inst, cnt, sp)[1]
        f, where = _rate_fixed(inst, cnt, given)
        return f, given, where

    for _ in range(rounds):
        rd = _round(inst, rel, active, rng)
        f, sp, where = evaluate(rd, split)
        if best is None or f > best[0] + 1e-12:
            best = (f, rd, sp, where)
    assert best is not None
    if improve:
        f0, rd0, sp0, _ = best
        rd = _improve(inst, rd0, sp0, active)
        f, sp, where = evaluate(rd, sp0)
        extra["rounded_rate"] = f0
        if f > f0 + 1e-12:
            best = (f, rd, sp, where)
    f, rd, sp, where = best
    if f == INF:   # nothing constrains the rounded plan (cannot happen with finite links)
        raise ModelError("InArt: the rounded plan is unconstrained; give finite capacities")
    tasks = {s: task_key(job, s) for s in inst.ps}
    paths: dict[str, dict[str, list[str]]] = {}
    agg_node: dict[str, dict[str, str | None]] = {w: {} for w in inst.workers}
    switch_paths: dict[str, dict[str, list[str]]] = {}
    for (s, w), v in rd.agg.items():
        route = list(rd.up[(s, w)])
        if v is not None:
            route += list(rd.down[(s, v)][1:])
        paths.setdefault(tasks[s], {})[w] = route
        agg_node[w][tasks[s]] = v
    for (s, v), p in rd.down.items():
        switch_paths.setdefault(tasks[s], {})[v] = list(p)
    cnt = _flow_counts(inst, rd)
    extra.update(switch_paths=switch_paths, bottleneck=where, ina="explicit",
                 objective_name="throughput",
                 loads_gbps={res: sum(f * sp[s] * n for s, n in per.items())
                             for res, per in sorted(cnt.items())})
    return Plan(scheme=scheme or SCHEME_OF_VARIANT[variant], jobs=[job.name],
                aggregation_node=agg_node, paths=paths,
                rates={tasks[s]: f * sp[s] for s in inst.ps}, split=dict(sp), objective=f,
                bound=rel.bound, status="heuristic", solve_seconds=time.perf_counter() - t0,
                extra=extra)


# ----------------------------------------------------------------------------- registry
def _scheme(variant: Variant) -> SchemeFn:
    def run(topology: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
        """InArt plans one job (§3.1: other jobs are background traffic). Results: each PS's
        part leaves its PS once, to a switch holding every worker or a relay switch that
        multicasts it (controller.deploy)."""
        if len(jobs) != 1:
            raise ModelError(f"{SCHEME_OF_VARIANT[variant]} plans one job at a time, got {len(jobs)}")
        opts = {k: v for k, v in options.items()
                if k in ("seed", "aggregation", "rounds", "k_paths", "max_detour", "background",
                         "any_split_bound", "verbose", "improve")}
        return solve_inart(topology, jobs[0], variant=variant, **opts)
    run.__name__ = f"inart_{variant.replace('-', '_')}"
    return run


for _v in VARIANTS:
    register(SCHEME_OF_VARIANT[_v])(_scheme(_v))  # type: ignore[arg-type]
