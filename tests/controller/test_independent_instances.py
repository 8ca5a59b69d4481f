"""An independent audit of the control-plane algorithms against the papers' own formulations.

Every expected value here is computed *from the paper*, never from ``controller/``: tiny GINA
instances are solved by exhaustive enumeration of GOAT's Eq. 1 / Eq. 4 (x and y), the LP
relaxation of Alg. 1 step 1 is written out in PuLP variable by variable, KRGS (Alg. 1) and
GOAT-Async's search (Alg. 2) are replayed by hand on crafted inputs, and ESA's priority
(ESA §5.4 Eq. 1) is evaluated by hand. The planners are then compared with those values.

Papers (text extractions in /work/shared/papers/): 000 = GOAT (ToN 2024), 002 = ESA,
003 = ARO, 004 = InArt. Distances are hop counts of shortest paths (GOAT §IV-A: "the number of
links in the shortest path"); the tiny topologies give every host one link, so no host is
ever a transit node and the distance is unambiguous.
"""
from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pulp
import pytest

from controller import goat
from controller.aro import solve_aro
from controller.baselines import esa_priorities
from controller.model import Job, Link, Node, Plan, SubModel, Topology
from controller.solver import Solution
from controller.topologies import leaf_spine

from .hops import hop_distances

MB = 1_000_000
TOL = 1e-6
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulp")


# =============================================================================== tiny GINA instances


@dataclass
class Tiny:
    """A GINA instance in the paper's notation (GOAT §IV-A, Table I)."""
    topo: Topology
    job: Job
    S: list[str]                        # programmable switches with memory
    B: dict[str, float]                 # B(s), MB
    b: dict[str, float]                 # b(g), MB
    D: dict[str, dict[str, int]]        # D[u][v]: hops of a shortest u-v path

    @property
    def W(self) -> list[str]:
        return self.job.workers

    @property
    def alpha(self) -> str:
        return self.job.ps[0]


def build_tiny(switch_links: list[tuple[str, str]], attach: dict[str, str], ps: str,
               memory_mb: dict[str, float], sizes_mb: list[float], plain: tuple[str, ...] = ()) -> Tiny:
    """Switches joined by ``switch_links``; each host of ``attach`` hangs off one switch.

    Switches in ``memory_mb`` are programmable with that aggregator memory (MB); those in
    ``plain`` are ordinary transit switches. Workers are the hosts other than ``ps``.
    """
    switches = sorted({s for l in switch_links for s in l} | set(attach.values()) | set(memory_mb) | set(plain))
    nodes = {s: Node(s, "switch", programmable=s in memory_mb,
                     memory_bytes=int(round(memory_mb.get(s, 0) * MB)), switch_id=i + 1)
             for i, s in enumerate(switches)}
    for h in attach:
        nodes[h] = Node(h, "host")
    links = [Link(a, c, 100.0) for a, c in switch_links] + [Link(h, s, 100.0) for h, s in attach.items()]
    topo = Topology("tiny", nodes, links)
    workers = [h for h in attach if h != ps]
    job = Job("j", workers, [ps], [SubModel(f"g{i}", float(v)) for i, v in enumerate(sizes_mb)])
    S = [s for s in switches if memory_mb.get(s, 0) > 0]
    D = {u: _bfs(topo, u) for u in nodes}
    return Tiny(topo, job, S, {s: float(memory_mb[s]) for s in S},
                {sm.name: sm.size_mb for sm in job.submodels}, D)


def _bfs(topo: Topology, src: str) -> dict[str, int]:
    """Our own hop distances (plain BFS over the link list; hosts are never expanded)."""
    adj: dict[str, list[str]] = {n: [] for n in topo.nodes}
    for l in topo.links:
        adj[l.a].append(l.b)
        adj[l.b].append(l.a)
    return hop_distances(adj, src, lambda n: topo.nodes[n].kind == "host")


def random_tiny(seed: int) -> Tiny:
    """2-4 switches (a random tree plus maybe one chord, sometimes one plain switch), 2-4
    workers, 1-3 sub-models of 1-4 MB, switch memory 0-5 MB (tight: often < the model)."""
    rng = random.Random(seed)
    n_sw = rng.randint(2, 4)
    sw = [f"s{i}" for i in range(n_sw)]
    links = [(sw[i], sw[rng.randrange(i)]) for i in range(1, n_sw)]
    if n_sw >= 3 and rng.random() < 0.5:
        a, c = rng.sample(sw, 2)
        if (a, c) not in links and (c, a) not in links:
            links.append((a, c))
    plain = (sw[-1],) if n_sw >= 3 and rng.random() < 0.3 else ()
    memory = {s: float(rng.randint(0, 5)) for s in sw if s not in plain}
    n_w = rng.randint(2, 4)
    attach = {"ps": rng.choice(sw), **{f"w{i}": rng.choice(sw) for i in range(n_w)}}
    sizes = [float(rng.randint(1, 4)) for _ in range(rng.randint(1, 3))]
    return build_tiny(links, attach, "ps", memory, sizes, plain)


# ------------------------------------------------------------------------ brute force of Eq. 1 / Eq. 4


@dataclass
class Optimum:
    value: float
    x: dict[str, frozenset[str]]                # g -> S(g) = {s in S : x_g^s = 1}
    y: dict[str, dict[str, str]]                # g -> w -> node (a switch, or alpha)


def eq1_value(t: Tiny, x: dict[str, frozenset[str]], y: dict[str, dict[str, str]]) -> float:
    """GOAT Eq. 1: sum_g ( sum_w sum_{s in S+alpha} y D_w(s) + sum_{s in S} x D_s(alpha) ) b(g)."""
    return sum((sum(t.D[w][y[g][w]] for w in t.W) + sum(t.D[s][t.alpha] for s in x[g])) * t.b[g]
               for g in t.b)


def eq4_value(t: Tiny, x: dict[str, frozenset[str]], y: dict[str, dict[str, str]]) -> float:
    """GOAT Eq. 4: sum_g sum_{s in S} ( sum_w y_{w,g}^s - x_g^s ) D_s(alpha) b(g)."""
    return sum((sum(1 for w in t.W if y[g][w] == s) - 1) * t.D[s][t.alpha] * t.b[g]
               for g in t.b for s in x[g])


def brute_force(t: Tiny, objective: str = "eq1") -> Optimum:
    """Exhaustive GINA (GOAT §IV-B, Eq. 1 constraints) over every x and every y:

        sum_{s in S+alpha} x_g^s >= 1;  sum_{s in S+alpha} y_{w,g}^s = 1;  y_{w,g}^s <= x_g^s;
        sum_g x_g^s b(g) <= B(s) for s in S;  x, y binary.

    x_g^alpha is enumerated too (0 forbids the PS to g's workers). For a fixed x the objective
    and the y constraints separate by g, so each g's y is enumerated once per (S(g), x_g^alpha)
    over every assignment of every worker; x is then enumerated over all subset choices.
    Returns the minimum of Eq. 1 or the maximum of Eq. 4.
    """
    sign = 1.0 if objective == "eq1" else -1.0
    value = eq1_value if objective == "eq1" else eq4_value
    subsets = [frozenset(c) for r in range(len(t.S) + 1) for c in itertools.combinations(t.S, r)]
    best_y: dict[tuple[str, frozenset[str]], tuple[float, dict[str, str]]] = {}
    for g in t.b:
        for sg in subsets:
            for x_alpha in (0, 1):
                nodes = sorted(sg) + ([t.alpha] if x_alpha else [])
                if not nodes:                       # sum_{S+alpha} x_g >= 1 violated
                    continue
                for combo in itertools.product(nodes, repeat=len(t.W)):
                    yg = dict(zip(t.W, combo))
                    v = sign * value(_one(t, g), {g: sg}, {g: yg})
                    if (g, sg) not in best_y or v < best_y[(g, sg)][0] - 1e-12:
                        best_y[(g, sg)] = (v, yg)
    gs = list(t.b)
    best: Optimum | None = None
    for choice in itertools.product(subsets, repeat=len(gs)):
        if any(sum(t.b[g] for g, sg in zip(gs, choice) if s in sg) > t.B[s] + 1e-9 for s in t.S):
            continue
        v = sum(best_y[(g, sg)][0] for g, sg in zip(gs, choice))
        if best is None or v < best.value - 1e-12:
            best = Optimum(v, dict(zip(gs, choice)), {g: best_y[(g, sg)][1] for g, sg in zip(gs, choice)})
    assert best is not None                         # x = 0, everyone to alpha, is always feasible
    best.value *= sign
    return best


def _one(t: Tiny, g: str) -> Tiny:
    """``t`` restricted to sub-model g (for per-g objective terms)."""
    return Tiny(t.topo, t.job, t.S, t.B, {g: t.b[g]}, t.D)


def as_plan(t: Tiny, x: dict[str, frozenset[str]], y: dict[str, dict[str, str]]) -> Plan:
    """Our (x, y) in the planners' Plan form (None = the PS)."""
    p = Plan("audit", [t.job.name])
    p.submodel_switches = {g: sorted(x[g]) for g in t.b}
    p.aggregation_node = {w: {g: (None if y[g][w] == t.alpha else y[g][w]) for g in t.b} for w in t.W}
    return p


def read_plan(t: Tiny, plan: Plan) -> tuple[dict[str, frozenset[str]], dict[str, dict[str, str]]]:
    """(x, y) of a planner's Plan, asserting Eq. 1's constraints: every worker has exactly one
    node per sub-model, y <= x, x only on S, and switch memory."""
    x = {g: frozenset(plan.submodel_switches.get(g, [])) for g in t.b}
    y: dict[str, dict[str, str]] = {g: {} for g in t.b}
    for g in t.b:
        assert x[g] <= set(t.S), (g, x[g])
        for w in t.W:
            assert g in plan.aggregation_node.get(w, {}), f"worker {w} has no node for {g}"
            node = plan.aggregation_node[w][g]
            assert node is None or node in x[g], f"y > x: {w} sends {g} to {node} not in {sorted(x[g])}"
            y[g][w] = t.alpha if node is None else node
    return x, y


def memory_ok(t: Tiny, x: dict[str, frozenset[str]]) -> bool:
    """Eq. 1, fourth constraint: sum_g x_g^s b(g) <= B(s) for every s in S."""
    return all(sum(t.b[g] for g in t.b if s in x[g]) <= t.B[s] + 1e-9 for s in t.S)


# ------------------------------------------------------------------------ the paper's LP relaxation


def paper_lp(t: Tiny) -> float:
    """Alg. 1 step 1 (lines 1-3): Eq. 1 with x, y in [0, 1], one y per worker, every s in
    S + alpha, nothing dropped or strengthened. Solved with PuLP's CBC."""
    prob = pulp.LpProblem("gina_lp", pulp.LpMinimize)
    nodes = t.S + [t.alpha]
    x = {(g, s): pulp.LpVariable(f"x_{g}_{s}", 0, 1) for g in t.b for s in nodes}
    y = {(w, g, s): pulp.LpVariable(f"y_{w}_{g}_{s}", 0, 1) for w in t.W for g in t.b for s in nodes}
    prob += pulp.lpSum((pulp.lpSum(y[w, g, s] * t.D[w][s] for w in t.W for s in nodes)
                        + pulp.lpSum(x[g, s] * t.D[s][t.alpha] for s in t.S)) * t.b[g] for g in t.b)
    for g in t.b:
        prob += pulp.lpSum(x[g, s] for s in nodes) >= 1
        for w in t.W:
            prob += pulp.lpSum(y[w, g, s] for s in nodes) == 1
            for s in nodes:
                prob += y[w, g, s] <= x[g, s]
    for s in t.S:
        prob += pulp.lpSum(x[g, s] * t.b[g] for g in t.b) <= t.B[s]
    assert prob.solve(pulp.PULP_CBC_CMD(msg=False)) == pulp.LpStatusOptimal
    return float(pulp.value(prob.objective))


# ------------------------------------------------------------------------ hand-made corner cases


def corner_no_memory() -> Tiny:
    """Every switch's memory is below the smallest sub-model: no x can be 1, Eq. 1 = NoINA."""
    return build_tiny([("s0", "s1"), ("s1", "s2")], {"ps": "s2", "w0": "s0", "w1": "s0", "w2": "s1"},
                      "ps", {"s0": 1.5, "s1": 1.0, "s2": 0.5}, [2.0, 3.0])


def corner_far_switch() -> Tiny:
    """The only programmable switch (s2) is farther from every worker than the PS is
    (D_w(s2) = 3 > D_w(alpha) = 2): aggregating there can only cost more."""
    return build_tiny([("s0", "s1"), ("s1", "s2")], {"ps": "s0", "w0": "s0", "w1": "s0", "w2": "s0"},
                      "ps", {"s2": 10.0}, [1.0, 2.0], plain=("s0", "s1"))


def corner_ties() -> Tiny:
    """Ties: one worker per leaf, so aggregating at its leaf costs exactly what the PS costs
    (D_w(s) + D_s(alpha) = D_w(alpha)); the spine s0 is on every path but gathers 2 workers."""
    return build_tiny([("s1", "s0"), ("s2", "s0"), ("s3", "s0")], {"ps": "s3", "w0": "s1", "w1": "s2"},
                      "ps", {"s0": 2.0, "s1": 2.0, "s2": 2.0}, [2.0, 2.0])


def corner_detour() -> Tiny:
    """The Eq. 1 optimum needs a detour: 4 workers on ToR s0 (not programmable), the only
    aggregator s1 hangs off s0, off the s0-s2 path to the PS. D_w(s1) = 2, D_s1(alpha) = 3,
    D_w(alpha) = 3: 4*2 + 3 = 11 < 4*3 = 12 per MB."""
    return build_tiny([("s0", "s1"), ("s0", "s2")],
                      {"ps": "s2", "w0": "s0", "w1": "s0", "w2": "s0", "w3": "s0"},
                      "ps", {"s1": 4.0}, [3.0, 1.0], plain=("s0", "s2"))


def corner_memory_choice() -> Tiny:
    """Tight memory forces a choice: s0 (3 MB) can hold g0 (2 MB) or g1 (3 MB), not both;
    s1 (2 MB) only g0. The optimum puts g1 on s0 and g0 on s1."""
    return build_tiny([("s0", "s2"), ("s1", "s2")],
                      {"ps": "s2", "w0": "s0", "w1": "s0", "w2": "s0", "w3": "s1", "w4": "s1"},
                      "ps", {"s0": 3.0, "s1": 2.0}, [2.0, 3.0], plain=("s2",))


CORNERS = {"no_memory": corner_no_memory, "far_switch": corner_far_switch, "ties": corner_ties,
           "detour": corner_detour, "memory_choice": corner_memory_choice}
SEEDS = list(range(36))


def _instance(case: str | int) -> Tiny:
    return CORNERS[case]() if isinstance(case, str) else random_tiny(case)


ALL_CASES = list(CORNERS) + SEEDS


def _no_ina(t: Tiny) -> float:
    """Eq. 2's traffic with everyone sent to alpha: sum_{w,g} D_w(alpha) b(g)."""
    return sum(t.D[w][t.alpha] * t.b[g] for w in t.W for g in t.b)


# =============================================================================== GOAT Eq. 1 / Eq. 4


def test_corner_cases_by_hand() -> None:
    """The hand-made corners have the optimum their docstrings derive (checks the brute force)."""
    t = corner_no_memory()
    assert brute_force(t).value == pytest.approx(_no_ina(t))
    t = corner_far_switch()
    assert brute_force(t).value == pytest.approx(_no_ina(t)) == 3 * 2 * 3.0
    t = corner_detour()
    assert brute_force(t).value == pytest.approx(11 * 3 + 11 * 1)       # both fit: 3 + 1 <= 4
    t = corner_memory_choice()
    opt = brute_force(t)
    # D_w(s) = 1, D_s(alpha) = 2, D_w(alpha) = 3. g1 on s0: 3 MB x (3 x 1 + 2) = 15; g0 on s1:
    # 2 MB x (2 x 1 + 2) = 8; g0 of s0's workers to the PS: 3 x 3 x 2 = 18; g1 of s1's: 2 x 3 x 3
    # = 18. The alternative (g0 on both, g1 to the PS) costs 10 + 8 + 45 = 63.
    assert opt.value == pytest.approx(15 + 8 + 18 + 18)
    assert opt.x == {"g0": frozenset({"s1"}), "g1": frozenset({"s0"})}


@pytest.mark.parametrize("case", ALL_CASES)
def test_gina_ilp_matches_enumeration_of_eq1(case: str | int) -> None:
    """GOAT Eq. 1 (§IV-B): ``solve_gina_ilp`` reaches the enumerated minimum, its plan is
    feasible (every worker one node, y <= x, memory), its reported objective is the plan's
    Eq. 1 value, and Eq. 1 = NoINA + Detour - Eq. 4 holds for it (``evaluate_plan``)."""
    t = _instance(case)
    opt = brute_force(t, "eq1")
    plan = goat.solve_gina_ilp(t.topo, t.job)
    assert plan.status == "optimal"
    x, y = read_plan(t, plan)
    assert memory_ok(t, x)
    assert eq1_value(t, x, y) == pytest.approx(opt.value, abs=TOL)
    assert plan.objective == pytest.approx(opt.value, abs=TOL)
    m = plan.extra
    assert m["eq1"] == pytest.approx(opt.value, abs=TOL)
    assert m["no_ina"] == pytest.approx(_no_ina(t))
    assert m["eq1"] == pytest.approx(m["no_ina"] + m["detour"] - m["eq4"], abs=TOL)


@pytest.mark.parametrize("case", ALL_CASES)
def test_gina_ilp_matches_enumeration_of_eq4(case: str | int) -> None:
    """GOAT Eq. 4 (§IV-C, maximise the traffic removed by INA, same constraints as Eq. 1):
    ``solve_gina_ilp(objective="eq4")`` reaches the enumerated maximum with a feasible plan."""
    t = _instance(case)
    opt = brute_force(t, "eq4")
    plan = goat.solve_gina_ilp(t.topo, t.job, objective="eq4")
    assert plan.status == "optimal"
    x, y = read_plan(t, plan)
    assert memory_ok(t, x)
    assert eq4_value(t, x, y) == pytest.approx(opt.value, abs=TOL)
    assert plan.objective == pytest.approx(opt.value, abs=TOL)


def test_far_switch_separates_eq1_and_eq4() -> None:
    """§IV-C's Eq. 4 has no detour term (Eq. 2-3 assume on-path switches): on
    ``corner_far_switch`` Eq. 4 gains by aggregating at the far switch s2 (3 workers, D_s2(alpha)
    = 3) while Eq. 1 must not use it; both solvers follow their own equation."""
    t = corner_far_switch()
    e4 = brute_force(t, "eq4")
    assert e4.value > 0 and any(e4.x[g] for g in t.b)                  # Eq. 4 aggregates at s2
    p4 = goat.solve_gina_ilp(t.topo, t.job, objective="eq4")
    assert p4.objective == pytest.approx(e4.value)
    assert p4.extra["eq1"] > _no_ina(t)                                # ... and pays a detour
    p1 = goat.solve_gina_ilp(t.topo, t.job)
    assert p1.objective == pytest.approx(_no_ina(t)) and not any(p1.submodel_switches.values())


@pytest.mark.parametrize("seed", range(12))
def test_eq1_identity_on_random_feasible_plans(seed: int) -> None:
    """The module docstring's identity Eq.1 = NoINA + Detour - Eq.4, on arbitrary plans
    (including switches of x that nobody uses): ``evaluate_plan``'s eq1/eq4/no_ina/detour are
    our own sums over the paper's terms."""
    t = random_tiny(100 + seed)
    rng = random.Random(seed)
    for _ in range(5):
        x = {g: frozenset(s for s in t.S if rng.random() < 0.5) for g in t.b}
        y = {g: {w: rng.choice(sorted(x[g]) + [t.alpha]) for w in t.W} for g in t.b}
        m = goat.evaluate_plan(t.topo, t.job, as_plan(t, x, y))
        detour = sum((t.D[w][y[g][w]] + t.D[y[g][w]][t.alpha] - t.D[w][t.alpha]) * t.b[g]
                     for g in t.b for w in t.W if y[g][w] != t.alpha)
        assert m["eq1"] == pytest.approx(eq1_value(t, x, y))
        assert m["eq4"] == pytest.approx(eq4_value(t, x, y))
        assert m["no_ina"] == pytest.approx(_no_ina(t))
        assert m["detour"] == pytest.approx(detour)
        assert m["eq1"] == pytest.approx(_no_ina(t) + detour - eq4_value(t, x, y))
        assert bool(m["memory_violations"]) == (not memory_ok(t, x))
        assert m["unused"] == sum(1 for g in t.b for s in x[g] if all(y[g][w] != s for w in t.W))


@pytest.mark.parametrize("case", ALL_CASES)
def test_lp_bound_is_below_the_ilp_and_is_the_papers_lp(case: str | int) -> None:
    """Alg. 1 step 1: the LP relaxation is a lower bound on Eq. 1's optimum, and
    ``solve_gina_lp``'s bound equals our PuLP model of the paper's relaxation (also where a
    sub-model is larger than a switch's memory: x = B(s)/b(g) there)."""
    t = _instance(case)
    opt = brute_force(t, "eq1").value
    ours = paper_lp(t)
    bound = goat.solve_gina_lp(t.topo, t.job).bound
    assert ours <= opt + TOL
    assert bound == pytest.approx(ours, abs=1e-6)


def test_lp_bound_equals_papers_relaxation_when_a_submodel_exceeds_memory() -> None:
    """Two workers under s0 (B = 1 MB), one 2 MB sub-model, D_w(s0) = 1, D_s0(alpha) = 3,
    D_w(alpha) = 4. The paper's LP sets x = 1/2 (2 x <= 1) and y = 1/2 at s0:
    2 MB x (2 x (0.5 x 1 + 0.5 x 4) + 0.5 x 3) = 13, below the ILP's 2 MB x 2 x 4 = 16 (s0
    cannot hold the sub-model)."""
    t = build_tiny([("s0", "s1"), ("s1", "s2")], {"ps": "s2", "w0": "s0", "w1": "s0"}, "ps",
                   {"s0": 1.0}, [2.0], plain=("s1", "s2"))
    ours = paper_lp(t)
    assert ours == pytest.approx(13.0)
    assert goat.solve_gina_lp(t.topo, t.job).bound == pytest.approx(ours)


# =============================================================================== KRGS (Alg. 1)


def _star(n_leaves: int, memory_mb: float = 10.0, sizes_mb: tuple[float, ...] = (1.0,)) -> Tiny:
    """A plain root r with the PS, programmable leaves s1..sn, worker wi alone under si, so each
    worker is its own class: D_wi(si) = 1, D_wi(sj) = 3 = D_wi(alpha), D_si(alpha) = 2."""
    leaves = [f"s{i}" for i in range(1, n_leaves + 1)]
    return build_tiny([(s, "r") for s in leaves], {"ps": "r", **{f"w{i}": f"s{i}" for i in range(1, n_leaves + 1)}},
                      "ps", {s: memory_mb for s in leaves}, list(sizes_mb), plain=("r",))


def crafted_lp(t: Tiny, x: dict[str, float], y: dict[str, dict[str, float]]) -> goat.GinaLp:
    """KRGS's input (Alg. 1 line 3, {x~, y~}) set by hand for the single sub-model g0:
    x~_g0^s = x[s], y~_{w,g0}^s = y[w][s]. Each worker is its own class (``_star``)."""
    inst = goat.build_instance(t.topo, t.job)
    model = goat._build_model(inst, "eq1", "all")
    vals = np.zeros(model.lp.num_cols)
    s_idx = {s: i for i, s in enumerate(inst.switches)}
    for s, v in x.items():
        vals[model.x_col[(0, s_idx[s])]] = v
    for ci, c in enumerate(inst.classes):
        (w,) = c.workers
        for s, v in y.get(w, {}).items():
            vals[model.u_col[(ci, 0, s_idx[s])]] = v
        vals[model.u_col[(ci, 0, inst.n_s)]] = 1.0 - sum(y.get(w, {}).values())
    sol = Solution("optimal", vals, 1.0, 1.0, np.zeros(0), 0.0)
    return goat.GinaLp(inst, model, sol, "eq1", "all")


def krgs_frequencies(t: Tiny, lp: goat.GinaLp, runs: int) -> tuple[Counter, dict[str, Counter], set[int]]:
    """Over ``runs`` seeds: how often each S(g0) came out, each worker's node, and the k's."""
    sets: Counter = Counter()
    nodes: dict[str, Counter] = {w: Counter() for w in t.W}
    ks: set[int] = set()
    for seed in range(runs):
        plan = goat.krgs(t.topo, t.job, seed, lp=lp)
        x, y = read_plan(t, plan)
        sets[x["g0"]] += 1
        ks.add(plan.extra["k"]["g0"])
        for w in t.W:
            nodes[w][y["g0"][w]] += 1
    return sets, nodes, ks


RUNS = 600
FREQ_TOL = 0.08          # > 4 standard deviations of a frequency over 600 draws


def test_krgs_two_knapsacks_by_hand() -> None:
    """Alg. 1 lines 5-13 and 17-20 on x~ = (0.9, 0.6, 0.5) for (s1, s2, s3):
    k(g) = floor(2.0) = 2; min-max knapsacks {s1} (0.9) and {s2, s3} (1.1) (the other two
    splits have max 1.4 and 1.5); so S(g) = {s1, s2} w.p. 0.6/1.1 = 6/11, {s1, s3} w.p. 5/11.
    Workers: y~_w1 = (0.45, 0.3, 0) -> p = (0.5, 0.5, 0), PS 1 - sum over S(g);
    y~_w2 = (0, 0.6, 0) -> p(s2) = 1; y~_w3 = (0.45, 0, 0.25) -> p = (0.5, 0, 0.5).
    Hence P(w1: s1, s2, PS) = (1/2, 3/11, 5/22), P(w2: s2, PS) = (6/11, 5/11),
    P(w3: s1, s3, PS) = (1/2, 5/22, 3/11)."""
    t = _star(3)
    lp = crafted_lp(t, {"s1": 0.9, "s2": 0.6, "s3": 0.5},
                    {"w1": {"s1": 0.45, "s2": 0.3}, "w2": {"s2": 0.6}, "w3": {"s1": 0.45, "s3": 0.25}})
    sets, nodes, ks = krgs_frequencies(t, lp, RUNS)
    assert ks == {2}
    assert set(sets) <= {frozenset({"s1", "s2"}), frozenset({"s1", "s3"})}
    assert sets[frozenset({"s1", "s2"})] / RUNS == pytest.approx(6 / 11, abs=FREQ_TOL)
    expect = {"w1": {"s1": 1 / 2, "s2": 3 / 11, "ps": 5 / 22}, "w2": {"s2": 6 / 11, "ps": 5 / 11},
              "w3": {"s1": 1 / 2, "s3": 5 / 22, "ps": 3 / 11}}
    for w, dist in expect.items():
        assert set(nodes[w]) <= set(dist), (w, nodes[w])
        for node, p in dist.items():
            assert nodes[w][node] / RUNS == pytest.approx(p, abs=FREQ_TOL), (w, node)


def test_krgs_one_knapsack_and_floor_by_hand() -> None:
    """k(g) = floor(sum_s x~) (Alg. 1 line 6, Eq. 8): x~ = (0.9, 0.6, 0.3) sums to 1.8, so one
    knapsack and S(g) = {s} w.p. x~_s / 1.8 = (1/2, 1/3, 1/6); x~ summing to 0.7 gives k = 0,
    S(g) empty, and every worker goes to the PS (p(alpha) = 1 - 0)."""
    t = _star(3)
    lp = crafted_lp(t, {"s1": 0.9, "s2": 0.6, "s3": 0.3}, {"w1": {"s1": 0.9}, "w2": {"s2": 0.6}})
    sets, nodes, ks = krgs_frequencies(t, lp, RUNS)
    assert ks == {1}
    for s, p in {"s1": 1 / 2, "s2": 1 / 3, "s3": 1 / 6}.items():
        assert sets[frozenset({s})] / RUNS == pytest.approx(p, abs=FREQ_TOL)
    # p(s) = y~/x~ = 1 for the worker's own switch: it goes there exactly when it is chosen
    assert nodes["w1"]["s1"] == sets[frozenset({"s1"})]
    assert nodes["w3"] == Counter({"ps": RUNS})
    lp0 = crafted_lp(t, {"s1": 0.4, "s2": 0.3}, {"w1": {"s1": 0.4}, "w2": {"s2": 0.3}})
    sets0, nodes0, ks0 = krgs_frequencies(t, lp0, 20)
    assert ks0 == {0} and sets0 == Counter({frozenset(): 20})
    assert all(c == Counter({"ps": 20}) for c in nodes0.values())


@pytest.mark.parametrize("case", ALL_CASES)
def test_krgs_plans_are_feasible(case: str | int) -> None:
    """Theorems 1-2: every worker's every sub-model has exactly one node among S(g) + alpha;
    |S(g)| = k(g) distinct switches; the reported objective is the plan's Eq. 1 value and the
    reported memory violations are exactly those of Eq. 1's fourth constraint. With repair the
    plan respects memory, hence costs at least the enumerated optimum."""
    t = _instance(case)
    opt = brute_force(t, "eq1").value
    lp = goat.relax(t.topo, t.job)
    for seed in range(4):
        plan = goat.krgs(t.topo, t.job, seed, lp=lp)
        x, y = read_plan(t, plan)
        for g in t.b:
            assert len(plan.submodel_switches[g]) == len(x[g]) == plan.extra["k"][g]
        assert plan.objective == pytest.approx(eq1_value(t, x, y))
        assert bool(plan.extra["memory_violations"]) == (not memory_ok(t, x))
        rep = goat.krgs(t.topo, t.job, seed, lp=lp, repair=True)
        x, y = read_plan(t, rep)
        assert memory_ok(t, x)
        assert rep.objective == pytest.approx(eq1_value(t, x, y))
        assert rep.objective >= opt - TOL


# =============================================================================== GOAT-Async (Alg. 2)


def _psi_by_hand(k: int, gap: float, eps: float, sigma2: float, n: int) -> float:
    """GOAT Eq. 36: psi(K_m) = 4 K_m^2 (F(x_0) - F(x_*))^2 / (n (eps K_m - sigma^2)^2)."""
    return 4 * k * k * gap * gap / (n * (eps * k - sigma2) ** 2)


def test_psi_is_eq36() -> None:
    """Eq. 36 by hand: K = 2, gap 2, eps 0.5, sigma^2 0.2, n 4: 4*4*4 / (4*0.8^2) = 25; n
    defaults to |W| (Eq. 21's n workers); eps K <= sigma^2 violates Eq. 34 for every T."""
    assert goat.psi(2, goat.PsiParams(loss_gap=2.0, epsilon=0.5, sigma2=0.2, n=4), 10) == pytest.approx(25.0)
    assert goat.psi(3, goat.PsiParams(loss_gap=1.0, epsilon=1.0, sigma2=0.5), 3) == pytest.approx(
        _psi_by_hand(3, 1.0, 1.0, 0.5, 3))
    assert goat.psi(1, goat.PsiParams(epsilon=0.1, sigma2=0.1), 5) == math.inf


def test_choose_k_by_hand_with_default_rounds() -> None:
    """Alg. 2 with p = (1, 2, 4) and M = |W| = 3 rounds (§V-C: "set M as the number of workers").
    Each round h_t = the K-th smallest p'; a worker with p' > h_t ("greater than the completion
    time", §V-C) keeps waiting (p' - h_t), the others restart at p_w.
      K=1: p' (1,2,4) h=1 -> (1,1,3) h=1 -> (1,2,2) h=1 -> H-bar = 1
      K=2: (1,2,4) h=2 -> (1,2,2) h=2 -> (1,2,4) h=2 -> H-bar = 2
      K=3: h = 4 every round -> H-bar = 4
    psi (gap 1, eps 1, sigma^2 0.5, n 3) = 16/3, 64/27, 48/25; H = T H-bar = 5.33, 4.74, 7.68,
    so K_{t+1} = 2 (line 16: the least H)."""
    params = goat.PsiParams(loss_gap=1.0, epsilon=1.0, sigma2=0.5)
    k, info = goat.choose_k([1.0, 2.0, 4.0], lambda kk: goat.psi(kk, params, 3))
    assert info["rounds"] == 3
    per = info["per_K"]
    for kk, h_bar in {1: 1.0, 2: 2.0, 3: 4.0}.items():
        assert per[kk]["H_bar"] == pytest.approx(h_bar)
        assert per[kk]["T"] == pytest.approx(_psi_by_hand(kk, 1.0, 1.0, 0.5, 3))
        assert per[kk]["H"] == pytest.approx(h_bar * _psi_by_hand(kk, 1.0, 1.0, 0.5, 3))
    assert k == 2
    # the epochs themselves (who arrives within h_t)
    assert goat.async_epochs([1.0, 2.0, 4.0], 1, 3) == [(1.0, [0]), (1.0, [0, 1]), (1.0, [0])]
    # the history's order does not matter (§V-C sorts P): the same K for a permutation
    assert goat.choose_k([4.0, 1.0, 2.0], lambda kk: goat.psi(kk, params, 3))[0] == 2


def test_goat_async_counts_eq20_by_hand() -> None:
    """§V-A, Eq. 20: the K_t fastest workers take part (z_w^t = 1) and switch s aggregates
    K_t^s = sum_w sum_g y_{w,g}^s z_w^t gradients. History p = (w1 1, w2 5, w3 2), M = 3:
      K=1: (1,5,2) h=1 -> (1,4,1) h=1 -> (1,3,2) h=1: H-bar = 1
      K=2: (1,5,2) h=2 -> (1,3,2) h=2 -> (1,1,2) h=1: H-bar = 5/3
      K=3: h = 5 every round: H-bar = 5
    psi (gap 1, eps 1, sigma^2 0.5, n 3) = 16/3, 64/27, 48/25, so H = 5.33, 3.95, 9.6: K = 2,
    participants w1 and w3. With the hand-made plan (w1: g0 -> s1, g1 -> PS; w3: g0 -> s1,
    g1 -> s3; the straggler w2 uses s2 for both) K_t^{s1} = 2, K_t^{s3} = 1, the PS 1 (g1),
    and s2 counts nothing."""
    t = _star(3, sizes_mb=(1.0, 1.0))
    x = {"g0": frozenset({"s1", "s2"}), "g1": frozenset({"s2", "s3"})}
    y = {"g0": {"w1": "s1", "w2": "s2", "w3": "s1"}, "g1": {"w1": "ps", "w2": "s2", "w3": "s3"}}
    params = goat.PsiParams(loss_gap=1.0, epsilon=1.0, sigma2=0.5)
    k, info = goat.choose_k([1.0, 5.0, 2.0], lambda kk: goat.psi(kk, params, 3))
    assert [info["per_K"][kk]["H_bar"] for kk in (1, 2, 3)] == pytest.approx([1.0, 5 / 3, 5.0])
    assert k == 2
    plan = goat.goat_async(t.topo, t.job, {"w1": 1.0, "w2": 5.0, "w3": 2.0}, plan=as_plan(t, x, y),
                           psi_params=params)
    a = plan.extra["async"]
    assert a["K_t"] == 2 and a["participants"] == ["w1", "w3"]
    assert a["K_ts"] == {"s1": 2, "s3": 1}
    assert a["K_t_ps"] == {"g1": 1}
    assert plan.submodel_switches == as_plan(t, x, y).submodel_switches     # placement kept


# =============================================================================== ESA (§5.4, Eq. 1)


def test_esa_priorities_by_hand_across_jobs() -> None:
    """ESA Eq. 1: P_j(l) = 1/T_j x L_j/l x Comm_j/Comp_j (l the 1-based layer, L_j the number
    of layers, T_j the remaining time). Job a: 3 layers, T = 4, Comm/Comp = 2 -> P = 1.5,
    0.75, 0.5. Job b: 2 layers, T = 0.5, Comm/Comp = 0.25 -> P = 1.0, 0.5. The three
    intuitions of §5.4 hold: front layers first, then within equal layers the higher
    communication ratio and the shorter remaining time win."""
    a = Job("a", ["h1"], ["h0"], [SubModel(f"l{i}", 1.0) for i in range(3)],
            meta={"remaining_time": 4.0, "comm_comp_ratio": 2.0})
    b = Job("b", ["h2"], ["h0"], [SubModel(f"l{i}", 1.0) for i in range(2)],
            meta={"remaining_time": 0.5, "comm_comp_ratio": 0.25})
    pr = esa_priorities([a, b])
    assert pr["a"] == pytest.approx({"l0": 1.5, "l1": 0.75, "l2": 0.5})
    assert pr["b"] == pytest.approx({"l0": 1.0, "l1": 0.5})
    assert pr["a"]["l0"] > pr["b"]["l0"] > pr["a"]["l1"] > pr["a"]["l2"] == pytest.approx(pr["b"]["l1"])
    # only the factor that changes: halving T_j doubles P; doubling Comm/Comp doubles P
    a.meta["remaining_time"] = 2.0
    b.meta["comm_comp_ratio"] = 0.5
    pr2 = esa_priorities([a, b])
    assert pr2["a"]["l2"] == pytest.approx(2 * pr["a"]["l2"])
    assert pr2["b"]["l1"] == pytest.approx(2 * pr["b"]["l1"])


# =============================================================================== ARO SJST (Eq. 1)


def _leaf_of(topo: Topology, h: str) -> str:
    (leaf,) = [l.other(h) for l in topo.links if h in (l.a, l.b)]
    return leaf


def _cap(topo: Topology) -> dict[tuple[str, str], float]:
    """Directed link capacities (each direction carries the full capacity, ARO Eq. 10)."""
    out: dict[tuple[str, str], float] = {}
    for l in topo.links:
        out[(l.a, l.b)] = out[(l.b, l.a)] = l.capacity_gbps
    return out


def aro_sjst_enumerate(topo: Topology, workers: list[str], ps: str) -> float:
    """ARO SJST (Eq. 1, max r) on a single-pipeline leaf-spine, by enumerating every up-down
    route: a worker under the PS's leaf goes straight to the PS; any other worker goes up to a
    spine and down to the PS's leaf. At a programmable switch every flow of the task that
    enters it leaves as one (Eqs. 7-8, one pipe), so the workers of a programmable leaf form
    one flow with one spine to choose; otherwise each worker chooses its spine. r is the least
    capacity / flow count over directed links (Eq. 10)."""
    spines = list(topo.meta["spines"])
    prog = {n for n, v in topo.nodes.items() if v.kind == "switch" and v.programmable}
    cap = _cap(topo)
    lps = _leaf_of(topo, ps)
    by_leaf: dict[str, list[str]] = {}
    for w in workers:
        by_leaf.setdefault(_leaf_of(topo, w), []).append(w)
    local = by_leaf.pop(lps, [])
    units = [(leaf, ws) for leaf, ws in by_leaf.items() if leaf in prog]
    units += [(leaf, [w]) for leaf, ws in by_leaf.items() if leaf not in prog for w in ws]
    best = 0.0
    for choice in itertools.product(spines, repeat=len(units)):
        flows: Counter = Counter({(w, _leaf_of(topo, w)): 1 for w in workers})
        into: Counter = Counter()
        for (leaf, _), sp in zip(units, choice):
            flows[(leaf, sp)] += 1
            into[sp] += 1
        down = 0
        for sp, n in into.items():
            out = 1 if sp in prog else n
            flows[(sp, lps)] += out
            down += out
        total = down + len(local)
        flows[(lps, ps)] += 1 if (lps in prog and total) else total
        best = max(best, min(cap[e] / n for e, n in flows.items() if n))
    return best


def rate_of_paths(topo: Topology, paths: dict[str, list[str]]) -> float:
    """The rate that routes allow, recomputed from the paths alone: on a directed link a flow
    is identified by the last programmable switch it passed (or its worker); merged flows must
    continue on one route (ARO Alg. 1)."""
    prog = {n for n, v in topo.nodes.items() if v.kind == "switch" and v.programmable}
    cap = _cap(topo)
    on_link: dict[tuple[str, str], set[str]] = {}
    next_hop: dict[tuple[str, str], str] = {}
    for w, p in paths.items():
        ident = w
        for u, v in zip(p, p[1:]):
            if u in prog:
                ident = u
            on_link.setdefault((u, v), set()).add(ident)
            assert next_hop.setdefault((ident, u), v) == v, f"flow merged at {ident} splits at {u}"
    return min(cap[e] / len(ids) for e, ids in on_link.items())


def split_instance() -> tuple[Topology, Job]:
    """ARO's point (§II): 4 workers under leaf2 (not an aggregator), PS under leaf1, both spines
    aggregate, leaf2's uplinks have 10 Gb/s, all else 100. One spine for everyone: 4 flows on
    a 10 Gb/s uplink, r = 2.5; two per spine: r = 5 (each spine sends one flow down)."""
    topo = leaf_spine(2, 2, 5, programmable_fraction=0.0, force_programmable=("spine1", "spine2"))
    for l in topo.links:
        if {l.a, l.b} & {"spine1", "spine2"} and "leaf2" in (l.a, l.b):
            l.capacity_gbps = 10.0
    return topo, Job("a", ["h6", "h7", "h8", "h9"], ["h1"], [SubModel("g", 10.0)])


def random_leaf_spine(seed: int) -> tuple[Topology, Job]:
    """2-3 spines, 3 leaves of 2-3 hosts, heterogeneous links (10-100 Gb/s), one pipeline,
    a random programmable set, 4-5 workers and a PS."""
    rng = random.Random(seed)
    topo = leaf_spine(rng.choice([2, 3]), 3, rng.choice([2, 3]), link_gbps_range=(10.0, 100.0),
                      programmable_fraction=rng.choice([0.2, 0.4, 0.6]), seed=seed)
    hosts = topo.hosts()
    ps = rng.choice(hosts)
    workers = rng.sample([h for h in hosts if h != ps], rng.choice([4, 5]))
    return topo, Job("a", workers, [ps], [SubModel("g", 10.0)])


def test_split_instance_by_hand() -> None:
    """The enumeration gives the hand value r = 5 on ``split_instance``; ARO reaches it only
    by splitting leaf2's workers over both spines."""
    topo, job = split_instance()
    assert aro_sjst_enumerate(topo, job.workers, job.ps[0]) == pytest.approx(5.0)
    plan = solve_aro(topo, [job])
    assert plan.objective == pytest.approx(5.0)
    spines = Counter(p[2] for p in plan.paths["a"].values())
    assert spines == Counter({"spine1": 2, "spine2": 2})


@pytest.mark.parametrize("seed", range(10))
def test_aro_sjst_matches_route_enumeration(seed: int) -> None:
    """ARO Eq. 1 (SJST): the exact model's throughput equals the enumerated optimum over all
    up-down routes, and the plan's own paths allow exactly that rate."""
    topo, job = random_leaf_spine(seed)
    best = aro_sjst_enumerate(topo, job.workers, job.ps[0])
    plan = solve_aro(topo, [job])
    assert plan.status == "optimal"
    assert plan.objective == pytest.approx(best, rel=1e-6)
    assert rate_of_paths(topo, plan.paths["a"]) == pytest.approx(best, rel=1e-6)
