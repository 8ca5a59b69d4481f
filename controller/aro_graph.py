"""ARO's network model: unfolded up-down task graphs, INP/OP decoupling, pruning, route scoring.

ARO (Luo et al., "Releasing the Power of In-Network Aggregation With Aggregator-Aware Routing
Optimization", §III-A) plans routes on a *directed* graph derived from a Clos network:

* **Unfolding (Fig. 4).** Only shortest worker→PS paths are candidates. In a Clos network they
  are valley-free: tiers rise to a turning switch and then fall. Every switch on a task's paths
  therefore has one orientation for that task: ``up`` (its next hops are higher) or ``dn`` (it is
  the turning point or below it). The unfolded copies ``S^up`` / ``S^dn`` of one physical switch
  are distinct nodes, which is what makes the graph loop-free (a worker under the PS's leaf
  attaches straight to ``L^dn``, as in the paper).
* **Decoupling (Fig. 5).** A programmable switch with ``P`` pipelines becomes ``P`` input
  pipelines (INP, where aggregation happens) and one output pipeline (OP). A link ``u→S`` enters
  the INP of the pipe that owns S's port on that link, so flows entering different pipes are
  never aggregated together. Other switches are common switches (CS).

Each :class:`TaskGraph` is one task's unfolded, decoupled DAG; edges carry the physical directed
link they use (``None`` for the virtual INP→OP edges, which have no capacity, Eq. 10).

This module also holds the independent route scorer (:func:`route_loads`, :func:`best_rates`)
used to turn any set of paths (ARO's or a baseline's) into per-link flow counts under
aggregation semantics and then into optimal rates; it does not use the MILP.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

from controller.model import Job, ModelError, Topology, task_key
from controller.solver import INF, Limits, LinearModel, solve

Edge = tuple[str, str]            # (source node id, target node id) in a task graph
PhysLink = tuple[str, str]        # directed physical link (u, v)
_RATE_LP_TIME_LIMIT = 120.0      # s; a rate LP has one column per task and solves in milliseconds


# ----------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Task:
    """One aggregation task (§III-B): the workers of ``job`` sending to one PS ``D[i]``."""
    name: str
    job: str
    ps: str
    workers: tuple[str, ...]
    beta: float = 1.0               # weight of the task's job in Eq. (3)


def make_tasks(jobs: list[Job], beta: Mapping[str, float] | None = None) -> list[Task]:
    """One task per (job, PS) pair. A job with several PSs is an SJMT job (Eq. 2).

    Task names are the job name when the job has one PS, else ``"<job>/<ps>"``.
    """
    tasks: list[Task] = []
    for j in jobs:
        if not j.ps:
            raise ModelError(f"job {j.name}: no parameter server")
        for ps in j.ps:
            name = task_key(j, ps)
            workers = tuple(w for w in j.workers if w != ps)   # a PS's own gradient needs no route
            b = 1.0 if beta is None else float(beta.get(j.name, 1.0))
            tasks.append(Task(name, j.name, ps, workers, b))
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ModelError("duplicate task names (job names must be unique)")
    return tasks


def jobs_of(tasks: list[Task]) -> dict[str, list[Task]]:
    out: dict[str, list[Task]] = {}
    for t in tasks:
        out.setdefault(t.job, []).append(t)
    return out


# ----------------------------------------------------------------------------- topology facts
def tiers(topology: Topology) -> dict[str, int]:
    """Tier of every node: hosts 0, ToRs 1, ... (BFS distance to the nearest host)."""
    tier = {h: 0 for h in topology.hosts()}
    q = deque(tier)
    while q:
        u = q.popleft()
        for v in topology.neighbors(u):
            if v not in tier:
                tier[v] = tier[u] + 1
                q.append(v)
    return tier


def pipe_map(topology: Topology, pipelines: int | None = None) -> tuple[dict[PhysLink, int], dict[str, int]]:
    """Ingress pipe of every (switch, neighbour) pair and the pipe count of every switch.

    With ``pipelines=None`` a switch's own ``pipelines`` / ``port_pipe`` are used (unmapped ports
    go to pipe 0). With an override P, or when a multi-pipe switch has no ``port_pipe``, ports are
    split into P contiguous blocks by port number (Tofino maps ports to pipes in blocks).
    """
    pipe: dict[PhysLink, int] = {}
    count: dict[str, int] = {}
    for s in topology.switches():
        node = topology.nodes[s]
        p = max(1, pipelines if pipelines is not None else node.pipelines)
        count[s] = p
        links = topology.links_of(s)
        if pipelines is None and node.port_pipe:
            for l in links:
                pipe[(s, l.other(s))] = node.port_pipe.get(l.port_of(s), 0) % p
            continue
        order = sorted(range(len(links)), key=lambda k: (links[k].port_of(s), k))
        for rank, k in enumerate(order):
            pipe[(s, links[k].other(s))] = rank * p // max(1, len(links))
    return pipe, count


def capacities(topology: Topology) -> dict[PhysLink, float]:
    caps: dict[PhysLink, float] = {}
    for l in topology.links:
        caps[(l.a, l.b)] = l.capacity_gbps
        caps[(l.b, l.a)] = l.capacity_gbps
    return caps


def down_hosts(topology: Topology, tier: Mapping[str, int]) -> dict[str, frozenset[str]]:
    """Hosts reachable from each switch by going strictly down; equal sets = interchangeable AAs."""
    memo: dict[str, frozenset[str]] = {}

    def go(u: str) -> frozenset[str]:
        if u in memo:
            return memo[u]
        if tier[u] == 0:
            memo[u] = frozenset([u])
            return memo[u]
        acc: set[str] = set()
        for v in topology.neighbors(u):
            if tier[v] < tier[u]:
                acc |= go(v)
        memo[u] = frozenset(acc)
        return memo[u]

    return {s: go(s) for s in topology.switches()}


# ----------------------------------------------------------------------------- task graph
@dataclass
class TaskGraph:
    """One task's unfolded, decoupled DAG (node ids: ``w:H``, ``ps:H``, ``cs:S^o``, ``inp:S^o:p``, ``op:S^o``)."""
    task: Task
    kind: dict[str, str]                       # id -> "w" | "ps" | "cs" | "inp" | "op"
    phys: dict[str, str]                       # id -> physical node
    succ: dict[str, list[str]]
    pred: dict[str, list[str]]
    link: dict[Edge, PhysLink | None]          # edge -> physical directed link (None: INP->OP)
    tier: dict[str, int] = field(default_factory=dict)   # physical switch -> tier (for grouping)

    @property
    def edges(self) -> list[Edge]:
        return list(self.link)

    def worker_id(self, w: str) -> str:
        return f"w:{w}"

    @property
    def ps_id(self) -> str:
        return f"ps:{self.task.ps}"

    def inps(self) -> list[str]:
        return [n for n, k in self.kind.items() if k == "inp"]

    def aggregator_switches(self) -> set[str]:
        return {self.phys[n] for n in self.inps()}

    def switch_nodes(self, switch: str) -> list[str]:
        return [n for n in self.kind if self.kind[n] in ("cs", "inp", "op") and self.phys[n] == switch]

    def topo_order(self) -> list[str]:
        indeg = {n: len(self.pred[n]) for n in self.kind}
        q = deque(sorted(n for n, d in indeg.items() if d == 0))
        order = []
        while q:
            u = q.popleft()
            order.append(u)
            for v in self.succ[u]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    q.append(v)
        if len(order) != len(self.kind):
            raise ModelError(f"task {self.task.name}: unfolded graph has a cycle")
        return order

    def max_flows(self) -> dict[str, int]:
        """Most flows of the task each node may send (worker 1, INP ≤ 1, CS/OP sum of inputs).

        These are the upper bounds of the ``y`` variables (Eq. 4) and the APP scores' inputs.
        """
        mf: dict[str, int] = {}
        for n in self.topo_order():
            k = self.kind[n]
            inflow = sum(mf[u] for u in self.pred[n])
            mf[n] = 1 if k == "w" else (min(1, inflow) if k == "inp" else inflow)
        return mf

    def restricted(self, drop: Iterable[str]) -> "TaskGraph | None":
        """The graph without the ``drop`` node ids, trimmed to nodes on some worker→PS path.

        Returns None when a worker is cut off from the PS.
        """
        dropped = set(drop)
        keep = {n for n in self.kind if n not in dropped}
        # forward from workers, backward from the PS
        fwd = _reachable({n for n in keep if self.kind[n] == "w"}, self.succ, keep)
        bwd = _reachable({self.ps_id} if self.ps_id in keep else set(), self.pred, keep)
        alive = fwd & bwd
        if any(self.worker_id(w) not in alive for w in self.task.workers):
            return None
        # an OP whose INPs were all dropped is gone too (it is not reachable)
        kind = {n: k for n, k in self.kind.items() if n in alive}
        link = {e: l for e, l in self.link.items() if e[0] in alive and e[1] in alive}
        succ = {n: [v for v in self.succ[n] if v in alive] for n in kind}
        pred = {n: [u for u in self.pred[n] if u in alive] for n in kind}
        return TaskGraph(self.task, kind, {n: self.phys[n] for n in kind}, succ, pred, link, self.tier)


def build_task_graph(topology: Topology, task: Task, *, tier: Mapping[str, int],
                     pipe: Mapping[PhysLink, int], aggregators: set[str]) -> TaskGraph:
    """Unfold the Clos network for ``task`` (Fig. 4) and decouple its aggregators (Fig. 5)."""
    nodes = topology.nodes
    ps = task.ps
    if ps not in nodes or nodes[ps].kind != "host":
        raise ModelError(f"task {task.name}: PS {ps} is not a host of {topology.name}")
    # hop distance to the PS, never transiting hosts
    dist = {ps: 0}
    q = deque([ps])
    while q:
        u = q.popleft()
        for v in topology.neighbors(u):
            if v not in dist and nodes[v].kind == "switch":
                dist[v] = dist[u] + 1
                q.append(v)
    # physical shortest-path DAG from the workers
    phys_succ: dict[str, set[str]] = {}
    seen: set[str] = set()
    for w in task.workers:
        if w not in nodes or nodes[w].kind != "host":
            raise ModelError(f"task {task.name}: worker {w} is not a host of {topology.name}")
        first = [v for v in topology.neighbors(w) if v in dist]
        if not first:
            raise ModelError(f"task {task.name}: worker {w} cannot reach PS {ps}")
        d0 = min(dist[v] for v in first)
        phys_succ[w] = {v for v in first if dist[v] == d0}
        # sorted: the graph's node order becomes the model's variable order, and a MILP with
        # several optima returns the one that order favours — a set's order (string hashing,
        # per process) made ARO's plan differ from run to run
        stack = [v for v in sorted(phys_succ[w]) if v not in seen]
        seen.update(stack)
        while stack:
            u = stack.pop()
            nxt = {v for v in topology.neighbors(u) if v in dist and dist[v] == dist[u] - 1
                   and (nodes[v].kind == "switch" or v == ps)}
            phys_succ[u] = nxt
            for v in sorted(nxt):
                if v != ps and v not in seen:
                    seen.add(v)
                    stack.append(v)
    # orientation: up while the next hops are higher, dn from the turning point on
    orient: dict[str, str] = {}
    for s, nxt in phys_succ.items():
        if nodes[s].kind != "switch":
            continue
        ups = {tier[v] > tier[s] for v in nxt}
        if len(ups) != 1:
            raise ModelError(f"task {task.name}: switch {s} has both up and down next hops; "
                             "not a Clos (up-down) network")
        orient[s] = "up" if ups.pop() else "dn"
    for u, nxt in phys_succ.items():
        for v in nxt:
            if orient.get(u) == "dn" and orient.get(v) == "up":
                raise ModelError(f"task {task.name}: shortest path {u}->{v} is a valley; "
                                 "not a Clos (up-down) network")

    kind: dict[str, str] = {}
    physmap: dict[str, str] = {}
    link: dict[Edge, PhysLink | None] = {}

    def add(nid: str, k: str, p: str) -> str:
        kind[nid] = k
        physmap[nid] = p
        return nid

    def out_id(u: str) -> str:
        if u in task.workers:
            return add(f"w:{u}", "w", u)
        o = orient[u]
        if u in aggregators:
            return add(f"op:{u}^{o}", "op", u)
        return add(f"cs:{u}^{o}", "cs", u)

    def in_id(v: str, frm: str) -> str:
        if v == ps:
            return add(f"ps:{v}", "ps", v)
        o = orient[v]
        if v in aggregators:
            inp = add(f"inp:{v}^{o}:{pipe[(v, frm)]}", "inp", v)
            link[(inp, add(f"op:{v}^{o}", "op", v))] = None      # virtual edge, no capacity
            return inp
        return add(f"cs:{v}^{o}", "cs", v)

    for u, nxt in phys_succ.items():
        for v in sorted(nxt):
            link[(out_id(u), in_id(v, u))] = (u, v)
    succ: dict[str, list[str]] = {n: [] for n in kind}
    pred: dict[str, list[str]] = {n: [] for n in kind}
    for a, b in link:
        succ[a].append(b)
        pred[b].append(a)
    for n in kind:
        succ[n].sort()
        pred[n].sort()
    return TaskGraph(task, kind, physmap, succ, pred, link,
                     {s: tier[s] for s in orient})


# ----------------------------------------------------------------------------- APP (§III-C)
def inp_scores(g: TaskGraph) -> dict[str, int]:
    """APP score of each INP: the most flows its upstream neighbours may send into it (Fig. 6)."""
    mf = g.max_flows()
    return {n: sum(mf[u] for u in g.pred[n]) for n in g.inps()}


def score_variance(scores: Iterable[float]) -> float:
    """Σ (s − mean)² over an aggregator's INP scores; Fig. 6: [5, 1] → 8, [2, 4] → 2."""
    a = np.asarray(list(scores), dtype=float)
    return float(np.sum((a - a.mean()) ** 2)) if a.size else 0.0


def aggregator_variance(g: TaskGraph, pipes: Mapping[str, int]) -> dict[str, float]:
    """Per aggregator switch: sum of squared deviations of its P INP scores (Fig. 6's "variance").

    Pipes that receive nothing of the task count as score 0: they are INPs of the switch too.
    """
    scores = inp_scores(g)
    per: dict[str, list[float]] = {}
    for n, s in scores.items():
        per.setdefault(g.phys[n], []).append(float(s))
    out = {}
    for sw, vals in per.items():
        out[sw] = score_variance(vals + [0.0] * max(0, pipes[sw] - len(vals)))
    return out


def aa_groups(g: TaskGraph, dh: Mapping[str, frozenset[str]]) -> dict[tuple, list[str]]:
    """Alternative-aggregator groups of a task graph: switches above the ToRs that share a tier,
    an orientation and the set of hosts below them (all spines of a leaf-spine; the aggregation
    switches of one pod or the cores of a fat-tree)."""
    groups: dict[tuple, set[str]] = {}
    for n, k in g.kind.items():
        if k in ("cs", "op"):
            s = g.phys[n]
            if g.tier[s] >= 2:
                groups.setdefault((g.tier[s], n.rsplit("^", 1)[1], dh[s]), set()).add(s)
    return {k: sorted(v) for k, v in groups.items()}


def app_select(graphs: list[TaskGraph], pipes: Mapping[str, int], dh: Mapping[str, frozenset[str]],
               alpha: float) -> dict[str, set[str]]:
    """Aggregator pre-pruning (APP, §III-C): per task and AA group keep ``max(1, ⌊α n⌋)`` of the
    group's ``n`` aggregators, least INP-score variance first, handed out round robin across tasks.

    The list of AAs of a group is shared by the tasks in order, so later tasks first get the AAs
    earlier tasks did not take; it is refilled when it holds nothing the current task may still
    take. Returns task name -> aggregator switches to drop from that task's graph.
    (Deviation: the paper keeps ⌊α n⌋, which is 0 for n = 1; we keep at least one.)
    """
    pools: dict[tuple, list[str]] = {}
    drop: dict[str, set[str]] = {}
    for g in graphs:
        aggs = g.aggregator_switches()
        var = aggregator_variance(g, pipes)
        drop[g.task.name] = set()
        for key, members in aa_groups(g, dh).items():
            cand_all = [s for s in members if s in aggs]
            n = len(cand_all)
            k = max(1, math.floor(alpha * n + 1e-9))
            if n <= k:
                continue
            gk = (key[0], key[2])   # the AA list is shared regardless of the task's orientation
            chosen: list[str] = []
            refilled = False
            while len(chosen) < k:
                pool = pools.setdefault(gk, [])
                cand = [s for s in pool if s in cand_all and s not in chosen]
                if not cand:
                    if refilled:
                        break
                    pools[gk] = sorted(set(pool) | set(cand_all))
                    refilled = True
                    continue
                refilled = False
                best = min(cand, key=lambda s: (var[s], s))
                pool.remove(best)
                chosen.append(best)
            drop[g.task.name] |= set(cand_all) - set(chosen)
    return drop


def drop_switches(g: TaskGraph, switches: set[str]) -> TaskGraph | None:
    return g.restricted(n for n in g.kind if g.kind[n] != "w" and g.kind[n] != "ps"
                        and g.phys[n] in switches)


def sro_stage1_drop(g: TaskGraph, dh: Mapping[str, frozenset[str]]) -> set[str]:
    """SRO stage 1 (§III-C): the INA-agnostic switches of every AA group that has an aggregator."""
    aggs = g.aggregator_switches()
    out: set[str] = set()
    for members in aa_groups(g, dh).values():
        if any(s in aggs for s in members):
            out |= {s for s in members if s not in aggs}
    return out


# ----------------------------------------------------------------------------- route scoring
def route_loads(topology: Topology, task: Task, paths: Mapping[str, list[str]], *,
                pipe: Mapping[PhysLink, int], aggregators: set[str]) -> dict[PhysLink, int]:
    """Flows of ``task`` on each directed link when its workers use ``paths`` (worker → PS).

    Aggregation semantics: flows of the task that enter an aggregator through the same ingress
    pipe leave it as one flow, which must then follow one path (otherwise ModelError). The PS
    host does not aggregate.
    """
    ident_next: dict[tuple, str] = {}
    on_link: dict[PhysLink, set[tuple]] = {}
    for w in task.workers:
        path = paths.get(w)
        if not path or path[0] != w or path[-1] != task.ps:
            raise ModelError(f"task {task.name}: worker {w} has no path to {task.ps}")
        ident: tuple = ("w", w)
        for u, v in zip(path, path[1:]):
            if v not in topology.nodes or u not in topology.nodes:
                raise ModelError(f"task {task.name}: unknown node on path of {w}")
            topology.link(u, v)   # raises KeyError when there is no such link
            prev = ident_next.setdefault((ident, u), v)
            if prev != v:
                raise ModelError(f"task {task.name}: flow {ident} leaves {u} towards both {prev} and {v}")
            on_link.setdefault((u, v), set()).add(ident)
            if v in aggregators and v != task.ps:
                ident = ("agg", v, pipe[(v, u)])
    return {l: len(s) for l, s in on_link.items()}


def best_rates(tasks: list[Task], loads: Mapping[str, Mapping[PhysLink, int]],
               caps: Mapping[PhysLink, float], mu: float = 0.001,
               fixed: Mapping[str, float] | None = None) -> tuple[dict[str, float], float]:
    """Optimal rates for fixed routes (an LP), and the objective of Eq. (1)/(2)/(3).

    One job: maximise ``Σ r`` (Eq. 1/2). Several jobs: ``min_s β_s Σ_{i∈T_s} r_i + μ Σ_s β_s Σ r``
    (Eq. 3). Capacity: ``Σ_i load_i(l) r_i ≤ b_l`` (Eq. 10 with y fixed). ``fixed`` pins rates.
    """
    jobs = jobs_of(tasks)
    multi = len(jobs) > 1
    lp = LinearModel()
    col: dict[str, int] = {}
    for t in tasks:
        ub = min((caps[l] / c for l, c in loads[t.name].items() if c), default=0.0)
        lo, hi = (fixed[t.name], fixed[t.name]) if fixed and t.name in fixed else (0.0, ub)
        col[t.name] = lp.var(lo, hi, cost=(mu if multi else 1.0) * t.beta)
    by_link: dict[PhysLink, list[tuple[int, float]]] = {}
    for t in tasks:
        for l, c in loads[t.name].items():
            if c:
                by_link.setdefault(l, []).append((col[t.name], float(c)))
    for l, terms in by_link.items():
        lp.row(terms, hi=caps[l])
    if multi:
        m = lp.var(0.0, INF, cost=1.0)            # min_s β_s Σ r of Eq. (3)
        for ts in jobs.values():
            lp.row([(col[t.name], -t.beta) for t in ts] + [(m, 1.0)], hi=0.0)
    sol = solve(lp, maximize=True, limits=Limits(_RATE_LP_TIME_LIMIT))
    if not sol.has_solution:
        raise ModelError(f"rate LP is {sol.status}")
    x = sol.values
    rates = {t.name: max(0.0, x[col[t.name]]) for t in tasks}
    return rates, objective_value(tasks, rates, mu)


def objective_value(tasks: list[Task], rates: Mapping[str, float], mu: float = 0.001) -> float:
    """The paper's objective for given rates: Eq. (1)/(2) for one job, Eq. (3) for several."""
    jobs = jobs_of(tasks)
    per_job = [sum(t.beta * rates.get(t.name, 0.0) for t in ts) for ts in jobs.values()]
    if len(per_job) == 1:
        return sum(rates.get(t.name, 0.0) for t in tasks)
    return min(per_job) + mu * sum(per_job)


def valley_free(path: list[str], tier: Mapping[str, int]) -> bool:
    """True when tiers strictly rise and then strictly fall along ``path`` (up-down routing)."""
    t = [tier[n] for n in path]
    k = 0
    while k + 1 < len(t) and t[k + 1] > t[k]:
        k += 1
    while k + 1 < len(t) and t[k + 1] < t[k]:
        k += 1
    return k == len(t) - 1


def _reachable(start: set[str], edges: Mapping[str, Iterable[str]], keep: set[str]) -> set[str]:
    """Nodes of ``keep`` reachable from ``start`` along ``edges`` (BFS)."""
    seen = set(start)
    q = deque(start)
    while q:
        u = q.popleft()
        for v in edges[u]:
            if v in keep and v not in seen:
                seen.add(v)
                q.append(v)
    return seen
