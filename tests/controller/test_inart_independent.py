"""An independent check of InArt (controller/inart.py) against its paper (004, WWW '24).

Every expected value is derived from the paper's formulation, never from ``controller/inart.py``:

* **Eq. (1)** (the integral problem) is solved by exhaustive enumeration: every aggregation
  location of every (PS s, worker w) gradient (at s, or at one switch v, §3.2 "INA
  constraints"), every route in P, and one route per used (v, s) aggregate (z_v^s = 1). For a
  fixed integral choice the constraints read ``Σ_s (f·x_s)·n_s(e) <= cap(e)`` for each resource
  e (n_s = number of rate-``f·x_s`` flows), so ``max f`` over x is a two-variable LP in the
  products ``f·x_s``, solved here by vertex enumeration; for a fixed split it is
  ``min_e cap(e) / Σ_s x_s·n_s(e)``.
* **Eq. (5)** (LP-InArt, Alg. 2 step 1) with a fixed split is written in the paper's own
  fractional variables y, y_v, z, q. It is bilinear only through ``f``; substituting
  ``λ = 1/f`` turns each capacity row ``f·x_s·Σ(...) <= cap`` into ``x_s·Σ(...) <= λ·cap``, a
  linear program (min λ) -- a different linearisation from the code's rate variables.
* **Eq. (5)/(2) with x free** are written in PuLP in rate form (``R_s = f·x_s``, flows
  ``R_s·y``), built here from the paper variable by variable.
* **L-InArt (Alg. 1, Eq. (2))** is computed by hand on an instance whose Eq. (2) optimum has a
  unique, non-capacity-proportional split.
* **R-InArt (Alg. 2 step 2)** plans are checked for feasibility by recomputing every load from
  the plan's routes, for never beating the Eq. (1) optimum, and for the paper's bi-criteria
  factor (§4.3 "Approximation Performance").

Modelling choices (the paper leaves them open, §3.1): P = all shortest (hop-count) routes, hosts
never transit; a switch v may aggregate (s, w) when it lies on a shortest w→s route (then
``P_{v,w} ∘ P_{s,v}`` are shortest w→s routes too). The paper's routing row
``Σ_p q_p^{s,v} = y_v^{s,w} ∀w`` is read as ``= z_v^s``: taken literally it forces every worker
aggregated on v for s to carry the same y, which Fig. 1(c) contradicts (for S_1, W_1-W_4 at V_1
and W_5, W_6 at V_2). All gradient flows in the instances below run one way on every link
(workers below, PSs above), so whether links are full duplex does not matter.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterator

import pulp
import pytest

from controller.inart import l_inart_split, solve_inart
from controller.model import Job, Link, Node, Plan, SubModel, Topology, task_key

from .hops import hop_distances

TOL = 1e-6
BIG = 100.0                      # link capacity that never binds
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulp")

Path = tuple[str, ...]


# =============================================================================== instances


@dataclass
class Inst:
    """One tiny InArt instance in the paper's notation (§3.1-§3.2)."""
    name: str
    edges: list[tuple[str, str, float]]     # undirected links with capacity B(e)
    hosts: set[str]
    workers: list[str]
    ps: dict[str, float]                    # PS -> B(s) (processing/ingress capacity)
    switch_cap: dict[str, float]            # programmable switch -> C(v)
    background: dict[str, float] = field(default_factory=dict)   # c(v) / b(s) by node name

    # -- paper quantities
    def adj(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for a, b, _ in self.edges:
            out.setdefault(a, []).append(b)
            out.setdefault(b, []).append(a)
        return out

    def C(self, v: str) -> float:
        """Residual switch capacity C(v) - c(v)."""
        return self.switch_cap[v] - self.background.get(v, 0.0)

    def B(self, s: str) -> float:
        """Residual PS capacity B(s) - b(s)."""
        return self.ps[s] - self.background.get(s, 0.0)

    def arc_cap(self) -> dict[tuple[str, str], float]:
        return {arc: c for a, b, c in self.edges for arc in ((a, b), (b, a))}

    # -- the planner's view of the same instance
    def topology(self) -> Topology:
        nodes: dict[str, Node] = {}
        for n in self.adj():
            if n in self.hosts:
                nodes[n] = Node(n, "host", capacity_gbps=self.ps.get(n, 0.0))
            else:
                nodes[n] = Node(n, "switch", programmable=n in self.switch_cap,
                                capacity_gbps=self.switch_cap.get(n, 0.0))
        return Topology(self.name, nodes, [Link(a, b, c) for a, b, c in self.edges])

    def job(self) -> Job:
        return Job("j", list(self.workers), list(self.ps), [SubModel("m", 1.0)])


def _dist(inst: Inst, src: str) -> dict[str, int]:
    """BFS hop distances from ``src``; hosts other than ``src`` are never expanded."""
    return hop_distances(inst.adj(), src, lambda n: n in inst.hosts)


def shortest_routes(inst: Inst, a: str, b: str) -> list[Path]:
    """All shortest a→b routes (P in §3.1), transit through switches only."""
    db, adj, out = _dist(inst, b), inst.adj(), []

    def walk(p: list[str]) -> None:
        u = p[-1]
        if u == b:
            out.append(tuple(p))
            return
        for v in adj[u]:
            if db.get(v) == db[u] - 1 and (v == b or v not in inst.hosts):
                walk(p + [v])

    walk([a])
    return out


def candidates(inst: Inst, s: str, w: str) -> list[str]:
    """Switches v that may aggregate w's gradients for s: on a shortest w→s route."""
    dw, ds = _dist(inst, w), _dist(inst, s)
    return [v for v in inst.switch_cap if inst.C(v) > 0 and dw.get(v, 99) + ds.get(v, 99) == dw[s]]


def tree_2ps() -> Inst:
    """Two ToRs t1 (w1, w2) and t2 (w3) under a core c; ps1 and ps2 hang off c.
    3 switches, 3 workers, 2 PSs, with background load c(c) = 1."""
    return Inst("tree2ps",
                [("w1", "t1", 6), ("w2", "t1", 6), ("w3", "t2", 6), ("t1", "c", 3), ("t2", "c", 6),
                 ("c", "ps1", BIG), ("c", "ps2", BIG)],
                {"w1", "w2", "w3", "ps1", "ps2"}, ["w1", "w2", "w3"], {"ps1": 4.0, "ps2": 2.0},
                {"t1": 3.0, "t2": 2.0, "c": 5.0}, {"c": 1.0})


def diamond_1ps() -> Inst:
    """w1-w3 under t1; t1 reaches top (ps1's switch) through c1 or c2: two shortest routes.
    4 switches, 3 workers, 1 PS."""
    return Inst("diamond",
                [("w1", "t1", 10), ("w2", "t1", 10), ("w3", "t1", 10), ("t1", "c1", 2),
                 ("t1", "c2", 3), ("c1", "top", 4), ("c2", "top", 4), ("top", "ps1", BIG)],
                {"w1", "w2", "w3", "ps1"}, ["w1", "w2", "w3"], {"ps1": 2.5},
                {"t1": 4.0, "c1": 1.0, "c2": 2.0, "top": 3.0})


def split_asym() -> Inst:
    """w1-w4 under a plain switch t; ps2 hangs off t, ps1 off the programmable v behind t.
    Only ps1 can use INA, so the best split is not capacity-proportional (hand computed in
    test_l_inart_split_by_hand)."""
    return Inst("asym",
                [("w1", "t", BIG), ("w2", "t", BIG), ("w3", "t", BIG), ("w4", "t", BIG),
                 ("t", "v", BIG), ("v", "ps1", BIG), ("t", "ps2", BIG)],
                {"w1", "w2", "w3", "w4", "ps1", "ps2"}, ["w1", "w2", "w3", "w4"],
                {"ps1": 4.0, "ps2": 4.0}, {"v": 8.0})


INSTANCES = [tree_2ps, diamond_1ps, split_asym]


# =============================================================================== Eq. (1) by enumeration


def _max_sum(rows: list[tuple[list[int], float]], ps: list[str]) -> Fraction:
    """max Σ_s R_s s.t. Σ_s n_s R_s <= cap on every row, R >= 0 (R_s = f·x_s), by vertices.

    With one or two PSs the optimum is at a vertex of the polygon; every candidate vertex
    (intersection of two rows or of a row with an axis) is tried."""
    rs = [([Fraction(n) for n in ns], Fraction(cap).limit_denominator(10**6)) for ns, cap in rows]
    k = len(ps)
    assert k in (1, 2)
    if k == 1:
        return min(c / ns[0] for ns, c in rs if ns[0] > 0)
    axes = [([Fraction(-1), Fraction(0)], Fraction(0)), ([Fraction(0), Fraction(-1)], Fraction(0))]
    allr = rs + axes
    best = Fraction(-1)
    for (a, c1), (b, c2) in itertools.combinations(allr, 2):
        det = a[0] * b[1] - a[1] * b[0]
        if det == 0:
            continue
        r = [(c1 * b[1] - c2 * a[1]) / det, (a[0] * c2 - b[0] * c1) / det]
        if all(n[0] * r[0] + n[1] * r[1] <= c for n, c in allr):
            best = max(best, r[0] + r[1])
    assert best >= 0, "Eq. (1) with free x is unbounded on this instance"
    return best


@dataclass
class Choice:
    """One integral solution of Eq. (1): the flows each resource carries, per PS."""
    counts: dict[str, dict[str, int]]      # resource -> PS -> n_s


def enumerate_eq1(inst: Inst) -> Iterator[Choice]:
    """Every integral (y, y_v, z, q) of Eq. (1), as per-resource flow counts (§3.2)."""
    S, W = list(inst.ps), inst.workers
    opts: list[list[tuple[str, str | None, Path]]] = []   # per (s, w): (s, v or None, route)
    for s in S:
        for w in W:
            o: list[tuple[str, str | None, Path]] = [(s, None, p) for p in shortest_routes(inst, w, s)]
            for v in candidates(inst, s, w):
                o += [(s, v, p) for p in shortest_routes(inst, w, v)]
            opts.append(o)
    for pick in itertools.product(*opts):
        used = sorted({(s, v) for s, v, _ in pick if v is not None})
        downs = [shortest_routes(inst, v, s) for s, v in used]
        for dp in itertools.product(*downs):
            cnt: dict[str, dict[str, int]] = {}

            def add(res: str, s: str) -> None:
                cnt.setdefault(res, {}).setdefault(s, 0)
                cnt[res][s] += 1

            for s, v, p in pick:
                for a in zip(p, p[1:]):
                    add(f"link:{a[0]}->{a[1]}", s)
                add(f"switch:{v}" if v else f"ps:{s}", s)      # switch / PS capacity rows
            for (s, v), p in zip(used, dp):                     # z_v^s = 1: one aggregate flow
                for a in zip(p, p[1:]):
                    add(f"link:{a[0]}->{a[1]}", s)
                add(f"ps:{s}", s)
            yield Choice(cnt)


def capacity(inst: Inst, res: str) -> float:
    kind, name = res.split(":", 1)
    if kind == "switch":
        return inst.C(name)
    if kind == "ps":
        return inst.B(name)
    a, b = name.split("->")
    return inst.arc_cap()[(a, b)]


@dataclass
class Eq1:
    free: float                             # max f over all x (Eq. (1) as stated)
    fixed: dict[tuple[float, ...], float]   # max f at given splits


def solve_eq1(inst: Inst, splits: list[dict[str, float]]) -> Eq1:
    """Optimum of Eq. (1) with x free, and at each of ``splits``, by enumeration."""
    S = list(inst.ps)
    free, fixed = Fraction(0), {tuple(sp[s] for s in S): 0.0 for sp in splits}
    for ch in enumerate_eq1(inst):
        rows = [([per.get(s, 0) for s in S], capacity(inst, res)) for res, per in ch.counts.items()]
        free = max(free, _max_sum(rows, S))
        for key in fixed:
            f = min(cap / sum(x * n for x, n in zip(key, ns)) for ns, cap in rows
                    if sum(x * n for x, n in zip(key, ns)) > 0)
            fixed[key] = max(fixed[key], f)
    return Eq1(float(free), fixed)


# =============================================================================== Eq. (5) / Eq. (2) in PuLP


def _solve(prob: pulp.LpProblem) -> None:
    assert prob.solve(pulp.PULP_CBC_CMD(msg=False)) == pulp.LpStatusOptimal


def lp_inart_fixed_split(inst: Inst, x: dict[str, float]) -> float:
    """Eq. (5) at split x in the paper's fractional variables, via λ = 1/f (min λ)."""
    prob = pulp.LpProblem("eq5_fixed", pulp.LpMinimize)
    lam = pulp.LpVariable("lam", lowBound=0)
    prob += lam
    V = list(inst.switch_cap)
    y, yv, z, qd, qu, qz = {}, {}, {}, {}, {}, {}
    for s in inst.ps:
        for v in V:
            z[s, v] = pulp.LpVariable(f"z_{s}_{v}", 0, 1)
            qz[s, v] = {p: pulp.LpVariable(f"qz_{s}_{v}_{i}", 0, 1)
                        for i, p in enumerate(shortest_routes(inst, v, s))}
            prob += pulp.lpSum(qz[s, v].values()) == z[s, v]          # Σ_p q^{s,v}_p = z_v^s
        for w in inst.workers:
            y[s, w] = pulp.LpVariable(f"y_{s}_{w}", 0, 1)
            qd[s, w] = {p: pulp.LpVariable(f"qd_{s}_{w}_{i}", 0, 1)
                        for i, p in enumerate(shortest_routes(inst, w, s))}
            prob += pulp.lpSum(qd[s, w].values()) == y[s, w]          # Σ_p q^{s,w}_p = y^{s,w}
            cand = candidates(inst, s, w)
            for v in V:
                yv[s, v, w] = pulp.LpVariable(f"yv_{s}_{v}_{w}", 0, 1 if v in cand else 0)
                qu[s, v, w] = {p: pulp.LpVariable(f"qu_{s}_{v}_{w}_{i}", 0, 1)
                               for i, p in enumerate(shortest_routes(inst, w, v))}
                prob += pulp.lpSum(qu[s, v, w].values()) == yv[s, v, w]
                prob += yv[s, v, w] <= z[s, v]                         # y_v^{s,w} <= z_v^s
            prob += y[s, w] + pulp.lpSum(yv[s, v, w] for v in V) == 1  # y + Σ_v y_v = 1
    for v in V:    # Σ_s f x_s Σ_w y_v^{s,w} <= C(v) - c(v)
        prob += pulp.lpSum(x[s] * yv[s, v, w] for s in inst.ps for w in inst.workers) <= lam * inst.C(v)
    for s in inst.ps:   # f x_s (Σ_w y^{s,w} + Σ_v z_v^s) <= B(s) - b(s)
        prob += x[s] * (pulp.lpSum(y[s, w] for w in inst.workers) + pulp.lpSum(z[s, v] for v in V)) \
            <= lam * inst.B(s)
    load: dict[tuple[str, str], list] = {}
    for s in inst.ps:
        flows = [qz[s, v] for v in V] + [qd[s, w] for w in inst.workers] \
            + [qu[s, v, w] for v in V for w in inst.workers]
        for qs in flows:
            for p, q in qs.items():
                for a in zip(p, p[1:]):
                    load.setdefault(a, []).append(x[s] * q)
    for a, terms in load.items():    # link rows
        prob += pulp.lpSum(terms) <= lam * inst.arc_cap()[a]
    _solve(prob)
    return 1.0 / lam.value()


def lp_rate_form(inst: Inst, links: bool) -> tuple[float, dict[str, float]]:
    """Eq. (5) (``links``) or Eq. (2) (no links, no routes) with x free, in rate form:
    R_s = f·x_s and every fractional variable multiplied by R_s. Returns (f, x)."""
    prob = pulp.LpProblem("eq5_free" if links else "eq2", pulp.LpMaximize)
    R = {s: pulp.LpVariable(f"R_{s}", 0) for s in inst.ps}
    prob += pulp.lpSum(R.values())                                    # f = Σ_s f x_s
    V = list(inst.switch_cap)
    sw: dict[str, list] = {v: [] for v in V}
    into: dict[str, list] = {s: [] for s in inst.ps}
    arc: dict[tuple[str, str], list] = {}

    def flows(tag: str, a: str, b: str) -> list:
        routes = shortest_routes(inst, a, b) if links else [()]
        out = []
        for i, p in enumerate(routes):
            u = pulp.LpVariable(f"{tag}_{i}", 0)
            out.append(u)
            for e in zip(p, p[1:]):
                arc.setdefault(e, []).append(u)
        return out

    Z = {}
    for s in inst.ps:
        for v in V:
            Z[s, v] = flows(f"z_{s}_{v}", v, s)
            prob += pulp.lpSum(Z[s, v]) <= R[s]                        # z <= 1
            into[s] += Z[s, v]
        for w in inst.workers:
            d = flows(f"d_{s}_{w}", w, s)
            into[s] += d
            total = list(d)
            for v in candidates(inst, s, w):
                u = flows(f"u_{s}_{v}_{w}", w, v)
                sw[v] += u
                total += u
                prob += pulp.lpSum(u) <= pulp.lpSum(Z[s, v])           # y_v <= z_v
            prob += pulp.lpSum(total) == R[s]                          # y + Σ_v y_v = 1
    for v in V:
        prob += pulp.lpSum(sw[v]) <= inst.C(v)
    for s in inst.ps:
        prob += pulp.lpSum(into[s]) <= inst.B(s)
    if links:
        for e, us in arc.items():
            prob += pulp.lpSum(us) <= inst.arc_cap()[e]
    _solve(prob)
    f = sum(r.value() for r in R.values())
    return f, {s: R[s].value() / f for s in inst.ps}


# =============================================================================== plan checks


def plan_loads(inst: Inst, plan: Plan) -> dict[str, float]:
    """Every resource's load, recomputed from the plan's routes and rates (Eq. (1) rows)."""
    job, loads = inst.job(), {}

    def add(res: str, r: float) -> None:
        loads[res] = loads.get(res, 0.0) + r

    for s in inst.ps:
        t = task_key(job, s)
        r = plan.rates[t]
        if r <= TOL:
            continue
        for w in inst.workers:
            route, v = plan.paths[t][w], plan.aggregation_node[w][t]
            assert route[0] == w and route[-1] == s
            assert tuple(route) in shortest_routes(inst, w, s)         # q^{s,w} / q^{v,w}∘q^{s,v} in P
            upto = route[:route.index(v) + 1] if v else route
            for a in zip(upto, upto[1:]):
                add(f"link:{a[0]}->{a[1]}", r)
            if v:
                assert v in candidates(inst, s, w)
                add(f"switch:{v}", r)
            else:
                add(f"ps:{s}", r)
        for v, p in plan.extra["switch_paths"].get(t, {}).items():
            assert any(plan.aggregation_node[w][t] == v for w in inst.workers)   # z_v^s needs a y_v
            for a in zip(p, p[1:]):
                add(f"link:{a[0]}->{a[1]}", r)
            add(f"ps:{s}", r)
    return loads


def assert_feasible(inst: Inst, plan: Plan) -> None:
    """Eq. (1)'s constraints hold for the plan at its own rate f."""
    assert sum(plan.split.values()) == pytest.approx(1.0)
    job = inst.job()
    assert plan.objective == pytest.approx(sum(plan.rates[task_key(job, s)] for s in inst.ps), rel=1e-6)
    for s in inst.ps:
        assert plan.rates[task_key(job, s)] == pytest.approx(plan.objective * plan.split[s], abs=1e-7)
    for res, load in plan_loads(inst, plan).items():
        assert load <= capacity(inst, res) + 1e-6, (res, load, capacity(inst, res))


# =============================================================================== tests


@pytest.fixture(scope="module", params=INSTANCES, ids=lambda f: f.__name__)
def case(request: pytest.FixtureRequest) -> tuple[Inst, Eq1, float]:
    """An instance, its Eq. (1) optimum (free x and at the equal split), its Eq. (5) optimum."""
    inst: Inst = request.param()
    even = {s: 1.0 / len(inst.ps) for s in inst.ps}
    eq1 = solve_eq1(inst, [even])
    lp_free, _ = lp_rate_form(inst, links=True)
    return inst, eq1, lp_free


def test_eq5_bound_any_split_matches_independent_lp(case: tuple[Inst, Eq1, float]) -> None:
    """Alg. 2 step 1: LP-InArt over all splits equals our PuLP model, and bounds Eq. (1)."""
    inst, eq1, lp_free = case
    plan = solve_inart(inst.topology(), inst.job(), seed=0, variant="r-inart",
                       background=inst.background)
    assert plan.extra["bound_any_split"] == pytest.approx(lp_free, rel=1e-4)
    assert plan.bound == pytest.approx(lp_free, rel=1e-4)
    assert eq1.free <= lp_free + TOL                 # §4.3: f~ is an upper bound for Eq. (1)


def test_eq5_at_equal_split_matches_lambda_form(case: tuple[Inst, Eq1, float]) -> None:
    """Eq. (5) with x fixed (the paper's first benchmark, §5.1.2): the planner's bound equals
    the λ = 1/f linearisation of the paper's rows, and bounds Eq. (1) at that split."""
    inst, eq1, _ = case
    even = {s: 1.0 / len(inst.ps) for s in inst.ps}
    f_tilde = lp_inart_fixed_split(inst, even)
    plan = solve_inart(inst.topology(), inst.job(), seed=0, variant="equal-split",
                       background=inst.background, any_split_bound=False)
    assert plan.bound == pytest.approx(f_tilde, rel=1e-6)
    assert eq1.fixed[tuple(even.values())] <= f_tilde + TOL
    assert_feasible(inst, plan)
    assert plan.objective <= eq1.fixed[tuple(even.values())] + TOL


@pytest.mark.parametrize("variant", ["r-inart", "l-inart", "equal-split"])
def test_rinart_plans_are_feasible_and_within_eq1_optimum(case: tuple[Inst, Eq1, float], variant: str) -> None:
    """Alg. 2 step 2: the rounded plan satisfies every Eq. (1) row and cannot beat the
    enumerated optimum of Eq. (1) (x free)."""
    inst, eq1, _ = case
    for seed in range(3):
        plan = solve_inart(inst.topology(), inst.job(), seed=seed, variant=variant,
                           background=inst.background)
        assert_feasible(inst, plan)
        assert plan.objective <= eq1.free + TOL


def test_rinart_reaches_eq1_optimum_on_tiny_instances(case: tuple[Inst, Eq1, float]) -> None:
    """With x re-optimised for the rounded routes (the code's "r-inart"), enough rounding trials
    on a tiny instance find an optimal integral plan of Eq. (1)."""
    inst, eq1, _ = case
    best = max(solve_inart(inst.topology(), inst.job(), seed=seed, variant="r-inart", rounds=32,
                           background=inst.background).objective for seed in range(3))
    assert best == pytest.approx(eq1.free, rel=1e-6)


def test_rinart_within_paper_bicriteria_factor(case: tuple[Inst, Eq1, float]) -> None:
    """§4.3: R-InArt violates switch/PS/link capacities by at most 2·log|V|/φ + 2,
    2·log|S|/φ + 2, 2·log|E|/φ + 2 (constants as the paper evaluates them, natural log), with
    φ = min 2·(residual capacity)/(x_s·f~). Our plans scale f down instead of violating, so a
    single draw (rounds=1) must keep f >= f~ / max factor at the same split."""
    inst, _, _ = case
    even = {s: 1.0 / len(inst.ps) for s in inst.ps}
    f_tilde = lp_inart_fixed_split(inst, even)
    caps = [inst.C(v) for v in inst.switch_cap] + [inst.B(s) for s in inst.ps] + [c for *_, c in inst.edges]
    phi = min(2 * c / (even[s] * f_tilde) for c in caps for s in inst.ps)
    sizes = (len(inst.switch_cap), len(inst.ps), len(inst.edges))
    factor = max(2 * math.log(n) / phi + 2 for n in sizes)
    for seed in range(10):
        plan = solve_inart(inst.topology(), inst.job(), seed=seed, variant="equal-split", rounds=1,
                           background=inst.background, any_split_bound=False)
        assert_feasible(inst, plan)
        assert plan.objective >= f_tilde / factor - TOL


def test_l_inart_split_by_hand() -> None:
    """Alg. 1 / Eq. (2) on ``split_asym`` (B(s1) = B(s2) = 4, C(v) = 8, 4 workers, only s1 can
    aggregate in-network, on v). With R_s = f·x_s and A = Σ_w y_v^{s1,w}, z >= A/4:
      s2: 4·R_2 <= 4                     -> R_2 = 1;
      s1: R_1·(4 - A + A/4) <= 4, R_1·A <= 8 -> both tight at A = 16/5: R_1 = 5/2.
    So f = 7/2 and x = (5/7, 2/7) -- unique, and not the capacity-proportional 1/2 : 1/2."""
    inst = split_asym()
    split, f2, mult = l_inart_split(inst.topology(), inst.job())
    assert f2 == pytest.approx(3.5, rel=1e-4)
    assert split["ps1"] == pytest.approx(5 / 7, abs=1e-4)
    assert split["ps2"] == pytest.approx(2 / 7, abs=1e-4)
    f_pulp, x_pulp = lp_rate_form(inst, links=False)               # the same by PuLP
    assert f_pulp == pytest.approx(3.5) and x_pulp["ps1"] == pytest.approx(5 / 7)
    # KKT multipliers of the two binding PS rows and the switch row are positive
    assert mult["ps:ps1"] > TOL and mult["ps:ps2"] > TOL and mult["switch:v"] > TOL
    # Phase 2 keeps that split; Eq. (1) at x = (5/7, 2/7): 3 or 4 workers on v give
    # f = min(4 / (2·5/7), 8 / (3·5/7), 4 / (4·2/7)) = 2.8 (hand), which R-InArt should reach.
    eq1 = solve_eq1(inst, [{"ps1": 5 / 7, "ps2": 2 / 7}])
    assert eq1.fixed[(5 / 7, 2 / 7)] == pytest.approx(2.8)
    assert eq1.free == pytest.approx(3.0)                          # R_1 = 2 (k = 3, 4), R_2 = 1
    plan = solve_inart(inst.topology(), inst.job(), seed=0, variant="l-inart")
    assert plan.split["ps1"] == pytest.approx(5 / 7, abs=1e-4)
    assert_feasible(inst, plan)
    assert plan.objective == pytest.approx(2.8, rel=1e-3)


def test_l_inart_split_tree_matches_independent_eq2() -> None:
    """Eq. (2) with background c(c) = 1 on ``tree_2ps``: the planner's f2 equals our PuLP model."""
    inst = tree_2ps()
    _, f2, _ = l_inart_split(inst.topology(), inst.job(), background=inst.background)
    f_pulp, _ = lp_rate_form(inst, links=False)
    assert f2 == pytest.approx(f_pulp, rel=1e-4)
