"""Baseline schemes the papers compare against, registered in ``controller.schemes``.

Two families, matching the two plan views the checker knows (see ``controller.check``):

* GOAT's baselines (GOAT §VII-A) fill the placement view — which switch aggregates which
  worker's sub-model, with the GOAT memory model — and report ``gina_cost`` (GOAT Eq. 1):
  ps (no INA at all: the parameter-server baseline), geryon, atp, esa, switchml, k-sgd. They also fill the routing view (paths, one common worker
  rate), so the routing simulators can run them too.
* ARO's and InArt's baselines fill the routing view only and report ``throughput``:
  grid, aggtree, random, lbmm.

Multi-PS jobs are split equally across their PSs (InArt §5.1.2 does so for its baselines);
all jobs share one worker sending rate f, the largest the links, switch aggregation
capacities and PS capacities allow (rates[task] = f x share of the task).
"""
from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .esa_priority import eq1_priority
from .model import Job, Plan, Topology, submodel_key, task_key
from .schemes import register

Path = list[str]


# ---------------------------------------------------------------------------- tasks and loads
@dataclass
class _Task:
    key: str
    job: Job
    ps: str
    share: float                    # fraction of the job's model sent to this PS


def _tasks(jobs: list[Job]) -> list[_Task]:
    return [_Task(task_key(j, p), j, p, 1.0 / len(j.ps)) for j in jobs for p in j.ps]


class _Net:
    """Loads in units of the common sending rate f, with an undo journal for trial moves."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.link: dict[tuple[str, str], float] = defaultdict(float)
        self.agg: dict[str, float] = defaultdict(float)     # traffic a switch aggregates
        self.ps: dict[str, float] = defaultdict(float)      # traffic into a PS
        self._log: list[tuple[dict, Any, float]] = []
        self._paths: dict[tuple[str, str], list[Path]] = {}

    def bump(self, table: dict, key: Any, delta: float) -> None:
        self._log.append((table, key, table[key]))
        table[key] += delta

    def mark(self) -> int:
        return len(self._log)

    def undo(self, mark: int) -> None:
        while len(self._log) > mark:
            table, key, old = self._log.pop()
            table[key] = old

    def commit(self) -> None:
        self._log.clear()

    def rate(self) -> float:
        """Largest f every link / aggregating switch / PS can carry (inf when nothing is loaded)."""
        f = math.inf
        for (u, v), load in self.link.items():
            if load > 0:
                f = min(f, self.topo.link(u, v).capacity_gbps / load)
        for table in (self.agg, self.ps):
            for n, load in table.items():
                cap = self.topo.nodes[n].capacity_gbps
                if load > 0 and cap > 0:
                    f = min(f, cap / load)
        return f

    def shortest(self, u: str, v: str) -> list[Path]:
        if (u, v) not in self._paths:
            self._paths[(u, v)] = self.topo.shortest_paths(u, v)
        return self._paths[(u, v)]

    def headroom(self, path: Path, share: float) -> float:
        """Bottleneck rate the path would leave if one more flow of `share` used it."""
        return min(self.topo.link(a, b).capacity_gbps / (self.link[(a, b)] + share)
                   for a, b in zip(path, path[1:]))


Chooser = Callable[[_Net, _Task, str, str], Path]     # (net, task, from node, worker) -> path to PS
Merges = Callable[[_Task, str, str], bool]            # (task, worker, switch) -> aggregates here?


def least_loaded(net: _Net, task: _Task, u: str, w: str) -> Path:
    """Shortest path with the most headroom, first on ties (Geryon / LBMM / InArt's ATP:
    'routed to the PSs from the ToR switches with the least link load', AggTree's b/(w+1))."""
    return max(net.shortest(u, task.ps), key=lambda p: net.headroom(p, task.share))


def _route_worker(net: _Net, task: _Task, w: str, merges: Merges, choose: Chooser,
                  groups: dict[tuple[str, int], Path]) -> Path:
    """Send worker w's stream of `task`, merging it at aggregating switches (per ingress pipe):
    a stream that reaches an existing merged flow joins it; a new merged flow picks its own
    route onward. Returns the worker's full path."""
    path: Path = [w]
    pending: list[tuple[tuple[str, int], int]] = []        # new groups and where they start in path
    u = w
    while True:
        step = choose(net, task, u, w)
        joined = False
        for a, b in zip(step, step[1:]):
            net.bump(net.link, (a, b), task.share)
            path.append(b)
            if b == task.ps:
                net.bump(net.ps, b, task.share)
                break
            if merges(task, w, b):
                net.bump(net.agg, b, task.share)
                key = (b, net.topo.port_pipe_of(b, net.topo.link(a, b).port_of(b)))
                if key in groups:
                    path.extend(groups[key][1:])
                    joined = True
                else:
                    pending.append((key, len(path) - 1))
                    u = b
                break
        else:
            raise AssertionError("a chosen path must end at the PS")
        if joined or path[-1] == task.ps:
            break
    for key, start in pending:
        groups[key] = path[start:]
    return path


@dataclass
class _Routing:
    paths: dict[str, dict[str, Path]] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def _route_all(topo: Topology, jobs: list[Job], merges: Merges, choose: Chooser,
               extra: dict[str, Any]) -> _Routing:
    net = _Net(topo)
    out = _Routing(extra=dict(extra))
    for t in _tasks(jobs):
        groups: dict[tuple[str, int], Path] = {}
        out.paths[t.key] = {w: _route_worker(net, t, w, merges, choose, groups) for w in t.job.workers}
        net.commit()                  # no trial moves here: drop the undo journal
    _set_rates(out, net, jobs)
    return out


def _set_rates(out: _Routing, net: _Net, jobs: list[Job]) -> None:
    f = net.rate()
    f = 0.0 if math.isinf(f) else f
    out.rates = {t.key: f * t.share for t in _tasks(jobs)}
    out.extra["worker_rate_gbps"] = f


def _throughput(rates: dict[str, float], jobs: list[Job], mu: float = 0.001) -> float:
    """ARO Eq. 1-3 with beta = 1: one job's summed task rates, or min + mu * sum over jobs."""
    per_job = [sum(rates[task_key(j, p)] for p in j.ps) for j in jobs]
    return per_job[0] if len(per_job) == 1 else min(per_job) + mu * sum(per_job)


def _tors(topo: Topology) -> set[str]:
    return {topo.tor_of(h) for h in topo.hosts()}


# ---------------------------------------------------------------------------- placement view
@dataclass
class _Placement:
    x: dict[str, list[str]] = field(default_factory=dict)
    y: dict[str, dict[str, str | None]] = field(default_factory=dict)
    forward_to: dict[str, dict[str, str]] = field(default_factory=dict)
    partition: dict[str, dict[str, float]] = field(default_factory=dict)


def _place(topo: Topology, jobs: list[Job], candidates: Callable[[Job, str], list[str]],
           budget: Callable[[str, Job], float], second_level: bool) -> _Placement:
    """First fit: each worker's gradient of sub-model g goes to the first candidate switch that
    already holds g or still has memory for all of it (GOAT §IV-B memory model), else the PS.
    Sub-models are visited in model order, workers in job order. With `second_level`, the PS's
    programmable ToR also takes g and the first-level switches forward their aggregates to it
    (ATP: 'the near-PS switch aggregates all gradients of downstream switches', GOAT §III-B)."""
    out = _Placement()
    used: dict[tuple[str, str], float] = defaultdict(float)        # (switch, job) -> bytes
    total: dict[str, float] = defaultdict(float)
    multi = len(jobs) > 1

    def take(s: str, j: Job, need: float) -> bool:
        if total[s] + need > topo.nodes[s].memory_bytes or used[(s, j.name)] + need > budget(s, j):
            return False
        total[s] += need
        used[(s, j.name)] += need
        return True

    for j in jobs:
        for sub in j.submodels:
            key, need = submodel_key(j, sub, multi), sub.size_mb * 1e6
            holders: list[str] = []
            for w in j.workers:
                node = next((s for s in candidates(j, w) if s in holders or take(s, j, need)), None)
                if node is not None and node not in holders:
                    holders.append(node)
                out.y.setdefault(w, {})[key] = node
            if second_level and holders:
                top = topo.tor_of(j.ps[0])
                if topo.nodes[top].programmable and (top in holders or take(top, j, need)):
                    fwd = {s: top for s in holders if s != top}
                    if fwd:
                        out.forward_to[key] = fwd
                    if top not in holders:
                        holders.append(top)
            if holders:
                out.x[key] = holders
    for (s, jn), b in used.items():
        out.partition.setdefault(s, {})[jn] = budget(s, next(j for j in jobs if j.name == jn))
    return out


def gina_cost(topo: Topology, jobs: list[Job], pl: _Placement) -> float:
    """GOAT Eq. 1 for a placement: sub-model size x (worker -> aggregation node hops + hops
    from each holding switch to where it sends its aggregate)."""
    dist: dict[str, dict[str, int]] = {}

    def d(a: str, b: str) -> int:
        if b not in dist:
            dist[b] = topo.hop_distances(b)
        return dist[b][a]

    cost, multi = 0.0, len(jobs) > 1
    for j in jobs:
        for sub in j.submodels:
            key = submodel_key(j, sub, multi)
            hops = sum(d(w, pl.y[w][key] or j.ps[0]) for w in j.workers)
            hops += sum(d(s, pl.forward_to.get(key, {}).get(s, j.ps[0])) for s in pl.x.get(key, []))
            cost += sub.size_mb * hops
    return cost


def _placement_plan(name: str, topo: Topology, jobs: list[Job], pl: _Placement,
                    routing: _Routing, extra: dict[str, Any]) -> Plan:
    ex = dict(routing.extra, objective_name="gina_cost", **extra)
    if pl.forward_to:
        ex["forward_to"] = pl.forward_to
    return Plan(scheme=name, jobs=[j.name for j in jobs], submodel_switches=pl.x,
                aggregation_node=pl.y, paths=routing.paths, rates=routing.rates,
                objective=gina_cost(topo, jobs, pl), status="heuristic", extra=ex)


def _routing_plan(name: str, jobs: list[Job], routing: _Routing) -> Plan:
    return Plan(scheme=name, jobs=[j.name for j in jobs], paths=routing.paths,
                rates=routing.rates, objective=_throughput(routing.rates, jobs),
                status="heuristic", extra=dict(routing.extra, objective_name="throughput"))


def _no_merge(task: _Task, w: str, s: str) -> bool:
    return False


def _merge_at(switches: Iterable[str]) -> Merges:
    allowed = set(switches)
    return lambda task, w, s: s in allowed


# ---------------------------------------------------------------------------- GOAT's baselines
def _geryon_like(name: str, topo: Topology, jobs: list[Job], extra: dict[str, Any]) -> Plan:
    pl = _Placement(y={w: {submodel_key(j, s, len(jobs) > 1): None for s in j.submodels}
                       for j in jobs for w in j.workers})
    routing = _route_all(topo, jobs, _no_merge, least_loaded, {"ina": "none"})
    return _placement_plan(name, topo, jobs, pl, routing, extra)


@register("geryon")
def geryon(topo: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """Geryon (GOAT §VII-A, [57]): no INA; every worker's gradients go to the PS over the
    shortest path with the most headroom ('shortest path ... under resource constraints')."""
    return _geryon_like("geryon", topo, jobs, {})


@register("k-sgd")
def k_sgd(topo: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """K-SGD (GOAT §VII-A/§VII-C, [53]): the PS aggregates the K fastest workers each epoch
    and drops stragglers. No paper says where K-SGD aggregates; as in the original K-sync SGD
    it is a PS algorithm, so routing/placement is Geryon's (no INA). K is ``options["k"]``
    (default ceil(|W|/2), our choice), recorded per job in ``extra["k"]`` for the simulators."""
    ks = {}
    for j in jobs:
        k = int(options.get("k", math.ceil(len(j.workers) / 2)))
        if not 1 <= k <= len(j.workers):
            raise ValueError(f"k-sgd: k={k} is not in 1..{len(j.workers)} for job {j.name}")
        ks[j.name] = k
    return _geryon_like("k-sgd", topo, jobs, {"k": ks})


def _atp_placement(topo: Topology, jobs: list[Job]) -> _Placement:
    def on_path(j: Job, w: str) -> list[str]:
        return [s for s in topo.shortest_path(w, j.ps[0])[1:-1] if topo.nodes[s].programmable]
    return _place(topo, jobs, on_path, lambda s, j: math.inf, second_level=True)


def _atp_routing(topo: Topology, jobs: list[Job]) -> _Routing:
    tors = sorted(s for s in _tors(topo) if topo.nodes[s].programmable)
    return _route_all(topo, jobs, _merge_at(tors), least_loaded, {"ina": "pipes", "aggregators": tors})


@register("atp")
def atp(topo: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """ATP. Placement as GOAT §VII-A ran it: along the worker's shortest path to the PS, the
    first programmable switch with memory for the sub-model aggregates it; the PS's
    programmable ToR aggregates the switches' partial results (two-level, GOAT §III-B).
    Routing as ATP deploys (ARO §II-C, InArt §5.1.2): aggregation on programmable ToRs
    only, aggregated flows take the least-loaded shortest path to the PS. Results: a
    to_multicast node multicasts its own; the PS sends each result it completes once, to a
    relay switch that multicasts it back past the holding ToRs, releasing their aggregators
    (controller.deploy: relay-only node; unicast where no switch qualifies; the PS's own ToR
    does not hold, its aggregate's result passing it first)."""
    return _placement_plan("atp", topo, jobs, _atp_placement(topo, jobs), _atp_routing(topo, jobs), {})


@register("ps")
def parameter_server(topo: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """No in-network aggregation: every worker sends its whole gradient along its shortest path
    to the PS, which aggregates everything — the baseline all the papers' figures start from.
    Results: one unicast per worker from the PS, as a BytePS-style PS sends them."""
    pl = _place(topo, jobs, lambda j, w: [], lambda s, j: 0.0, second_level=False)
    return _placement_plan("ps", topo, jobs, pl, _route_all(topo, jobs, _no_merge, least_loaded, {"ina": "none"}), {})


def esa_priorities(jobs: list[Job]) -> dict[str, dict[str, float]]:
    """ESA §5.4 Eq. 1 per sub-model: P_j(l) = 1/T_j * L_j/l * Comm_j/Comp_j, with l the 1-based
    sub-model (layer) index, L_j the number of sub-models, T_j the remaining time
    (``job.meta["remaining_time"]``, default 1) and Comm_j/Comp_j (``job.meta["comm_comp_ratio"]``,
    default 1): what the planner knows up front. The formula is controller.esa_priority's; the
    emulated workers re-evaluate it each round on what they measured (its JobProgress)."""
    prio: dict[str, dict[str, float]] = {}
    for j in jobs:
        t = float(j.meta.get("remaining_time", 1.0))
        cc = float(j.meta.get("comm_comp_ratio", 1.0))
        n = len(j.submodels)
        prio[j.name] = {s.name: eq1_priority(l + 1, n, t, cc) for l, s in enumerate(j.submodels)}
    return prio


@register("esa")
def esa(topo: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """ESA: ATP's placement and routing (its preemption happens in the data plane). Records
    each sub-model's priority (:func:`esa_priorities`, ESA §5.4 Eq. 1); ``job.priority`` is
    kept as the static part. Results travel as ATP's: once from the PS, multicast by a relay
    switch (ESA §5.2: the last switch multicasts the result to the workers)."""
    extra = {"priority": esa_priorities(jobs), "static_priority": {j.name: j.priority for j in jobs}}
    return _placement_plan("esa", topo, jobs, _atp_placement(topo, jobs), _atp_routing(topo, jobs), extra)


@register("switchml")
def switchml(topo: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """SwitchML (GOAT §II-B: aggregation on the workers' ToR only; ESA §2.1: switch memory
    statically partitioned, one region per job). Each programmable ToR splits its memory
    equally among the jobs with workers under it; sub-models that do not fit go to the PS.
    Results: a ToR holding every worker multicasts them; otherwise the PS sends each once to a
    relay switch that multicasts it (controller.deploy)."""
    sharing: dict[str, set[str]] = defaultdict(set)
    for j in jobs:
        for w in j.workers:
            sharing[topo.tor_of(w)].add(j.name)

    def tor(j: Job, w: str) -> list[str]:
        s = topo.tor_of(w)
        return [s] if topo.nodes[s].programmable else []

    pl = _place(topo, jobs, tor, lambda s, j: topo.nodes[s].memory_bytes // len(sharing[s]),
                second_level=False)
    aggs = {task_key(j, p): sorted({s for w in j.workers for s in tor(j, w)}) for j in jobs for p in j.ps}
    merges: Merges = lambda task, w, s: s in aggs[task.key]
    routing = _route_all(topo, jobs, merges, least_loaded, {"ina": "pipes", "aggregators": aggs})
    return _placement_plan("switchml", topo, jobs, pl, routing, {"memory_partition": pl.partition})


# ---------------------------------------------------------------------------- ARO / InArt baselines
def _random_chooser(seed: int) -> Chooser:
    rng = random.Random(seed)

    def choose(net: _Net, task: _Task, u: str, w: str) -> Path:
        paths = net.shortest(u, task.ps)
        beyond = 2 if net.topo.nodes[u].kind == "host" else 1       # skip the worker's own ToR
        with_agg = [p for p in paths if any(net.topo.nodes[s].programmable for s in p[beyond:-1])]
        return rng.choice(with_agg or paths)
    return choose


@register("random")
def random_scheme(topo: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """RANDOM (ARO §IV-A): ATP upgraded to partial deployments — every programmable switch
    aggregates (per pipe) and flows follow random ECMP shortest paths, taking a random
    programmable upper-tier switch when one is on some shortest path. Seeded by ``seed``."""
    routing = _route_all(topo, jobs, _merge_at(topo.programmable_switches()),
                         _random_chooser(int(options.get("seed", 0))), {"ina": "pipes"})
    return _routing_plan("random", jobs, routing)


@register("aggtree")
def aggtree(topo: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """AggTree as ARO ran it (§II-C, §IV-A): flows — raw or already aggregated — are routed
    one by one on the shortest path with the most available bandwidth, b/(w+1) per link, and
    every programmable switch aggregates (pipeline-unaware in intent, pipe-limited in effect)."""
    routing = _route_all(topo, jobs, _merge_at(topo.programmable_switches()), least_loaded, {"ina": "pipes"})
    return _routing_plan("aggtree", jobs, routing)


@register("lbmm")
def lbmm(topo: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """LBMM, Load Balance Min-Min (InArt §2.1, §5.1.2, [13]): no INA, model split equally
    over the PSs, every (worker, PS) flow on a shortest path. Min-min order: of the flows not
    yet placed, the one whose best path leaves the most headroom goes first, on that path.
    InArt only describes it; this is the textbook min-min over link loads."""
    net = _Net(topo)
    out = _Routing(extra={"ina": "none"})
    todo = [(t, w) for t in _tasks(jobs) for w in t.job.workers]
    while todo:
        best = max(range(len(todo)), key=lambda i: max(net.headroom(p, todo[i][0].share)
                                                       for p in net.shortest(todo[i][1], todo[i][0].ps)))
        t, w = todo.pop(best)
        out.paths.setdefault(t.key, {})[w] = _route_worker(net, t, w, _no_merge, least_loaded, {})
    _set_rates(out, net, jobs)
    return _routing_plan("lbmm", jobs, out)


@register("grid")
def grid(topo: Topology, jobs: list[Job], options: dict[str, Any]) -> Plan:
    """GRID (ARO §II-C/§IV-A, GOAT ref [12]): each worker's stream is aggregated at most once,
    at one aggregator or the PS. Candidates as ARO restricts them for up-down routing: the
    programmable switches on some shortest worker->PS path (own ToR, upper tiers, PS ToR).
    GRID solves an LP and rounds it; without a solver we choose greedily per worker the
    candidate that keeps the common rate highest, then the one adding the least traffic into
    the PS, then the least traffic overall (so workers consolidate on few aggregators, as ARO
    observes of GRID)."""
    net = _Net(topo)
    out = _Routing(extra={"ina": "explicit"})
    chosen: dict[str, dict[str, str | None]] = {}
    for t in _tasks(jobs):
        groups: dict[tuple[str, int], Path] = {}
        mine = chosen.setdefault(t.key, {})
        merges: Merges = lambda task, w, s: mine.get(w) == s

        def via(net: _Net, task: _Task, u: str, w: str) -> Path:
            a = mine.get(w)
            if u == w and a is not None:
                return least_loaded_to(net, w, a, task.share) + least_loaded(net, task, a, w)[1:]
            return least_loaded(net, task, u, w)

        d_ps = topo.hop_distances(t.ps)
        out.paths[t.key] = {}
        for w in t.job.workers:
            d_w = topo.hop_distances(w)
            cands: list[str | None] = [
                s for s in topo.programmable_switches()
                if s in d_w and s in d_ps and d_w[s] + d_ps[s] == d_w[t.ps]] + [None]
            best: tuple[float, float, float] | None = None
            for a in cands:
                mine[w] = a
                mark = net.mark()
                before, ps_before = sum(net.link.values()), net.ps[t.ps]
                _route_worker(net, t, w, merges, via, dict(groups))
                # rate first; then less traffic into the PS, then less traffic overall
                score = (net.rate(), ps_before - net.ps[t.ps], before - sum(net.link.values()))
                net.undo(mark)
                if best is None or score > best:
                    best, pick = score, a
            mine[w] = pick
            out.paths[t.key][w] = _route_worker(net, t, w, merges, via, groups)
            net.commit()
    out.extra["stream_aggregator"] = chosen
    _set_rates(out, net, jobs)
    return _routing_plan("grid", jobs, out)


def least_loaded_to(net: _Net, u: str, v: str, share: float) -> Path:
    """Least-loaded shortest path between two arbitrary nodes."""
    return max(net.shortest(u, v), key=lambda p: net.headroom(p, share))
