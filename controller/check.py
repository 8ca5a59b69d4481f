"""Independent plan checker: recomputes what a plan implies and lists every violated rule.

It shares nothing with the algorithms but the data model (its own BFS, its own flow
accounting), so a scheme cannot pass by reusing its own mistakes. Two views of a plan exist,
and each is checked when the plan fills it:

Placement view (GOAT §IV-B, Eq. 1) — ``submodel_switches`` (x) and ``aggregation_node`` (y)
    x[g] is the set S(g) of programmable switches that aggregate sub-model g; y[w][g] is the
    node that aggregates worker w's gradient of g: a switch of x[g], or None / a PS name for
    the PS. Optional ``extra["forward_to"][g][s] = t`` sends s's partial aggregate to switch t
    instead of the PS (ATP's two-level aggregation); absent, every switch sends to the PS.

    Rules: x holds only programmable switches; every worker of every job has y for every
    sub-model, and y[w][g] lies in x[g] (Eq. 1, constraint 3: y <= x); memory (Eq. 1,
    constraint 4): a switch holds the whole gradient of every sub-model assigned to it, so
    sum_{g: s in x[g]} b(g) * 10^6 <= memory_bytes(s); with ``extra["memory_partition"]
    [s][job] = bytes`` (SwitchML's static partition) each job also stays inside its share and
    the shares inside the switch; forward_to chains stay inside x[g] and end at the PS.

    Metrics, with D(u, v) the hop count of a shortest path (hosts are not transit), b(g) MB,
    and α the job's PS (``job.ps[0]``):
      gina_cost   = sum_g b(g) * ( sum_w D(w, y[w][g]) + sum_{s in x[g]} D(s, next(s)) )
                    the objective of GOAT Eq. 1 (MB x hops; next(s) = α without forward_to).
                    Like Eq. 1 it charges every switch of x[g], used or not.
      ps_inbound_mb = sum_g b(g) * (#workers whose y is the PS + #switches of x[g] that
                    receive anything and send to the PS): the traffic into the PS, GOAT's
                    "aggregation overhead of the PS" (§VII-A).
      gina_reduction = sum_g b(g) sum_{s in x[g]} (#workers y'd to s - 1) * D(s, α): the
                    traffic GOAT Eq. 4 maximises (Eq. 1 = no-INA traffic - Eq. 4).
      in_network_mb = |W| * model size - ps_inbound_mb (GOAT §VII-A "in-network aggregation
                    amount"); communication_mb_hops = gina_cost counting only switches that
                    receive something (GOAT's "communication overhead").

Routing view (ARO §III, InArt §3) — ``paths[task][worker]`` and ``rates[task]`` (Gb/s)
    A task is one (job, PS) pair, named like the job for single-PS jobs and "job/ps"
    otherwise (``model.task_key``); a bare PS name is accepted when the PS serves one job. Every worker of the job has a path for every task (tasks
    whose rate or ``split`` share is 0 may be left out) that starts at the worker, ends at
    the task's PS, follows existing links, repeats no node and crosses hosts never. In Clos
    topologies (``meta["tiers"]``) paths are valley-free: strictly up, then strictly down
    (ARO §III-A); ``extra["up_down"] = false`` turns this off and GOAT-family plans, whose
    model ignores it, default to off.

    Aggregation semantics (``extra["ina"]``):
      "pipes" (default; ARO §III-A): every switch in ``extra["aggregators"]`` (a list, or
          task -> list; default: all programmable switches) merges all flows of one task that enter it through ports of
          the same ingress pipe into a single flow; flows of other pipes stay separate.
      "explicit" (GRID, InArt §3.2: at most one aggregation per stream): worker w's stream of
          task t is merged only at ``extra["stream_aggregator"][t][w]`` (null: nowhere),
          again per ingress pipe. ``aggregation_node[w][t]`` keyed by task names means the
          same and makes "explicit" the default.
      "none": no aggregation (Geryon, LBMM).
    A merged flow has one route: all streams merged at (switch, pipe) must continue on the
    same sub-path. Each flow of task t carries rates[t]; a directed link's load is the sum
    over tasks of rate x distinct flows on it and must not exceed its capacity (both
    directions have the full capacity). A switch with capacity_gbps > 0 may aggregate at most
    that much incoming traffic (InArt C(v)); a PS host with capacity_gbps > 0 may receive at
    most that much (InArt B(s)).

    Metric ``throughput``: per job R = sum of its tasks' rates (ARO Eq. 1/2; InArt f, as
    rates[job@ps] = f * x_s). One job: R; several: min_j beta_j R_j + mu sum_j beta_j R_j
    (ARO Eq. 3) with ``extra["beta"][job]`` (default 1) and ``extra["mu"]`` (default 0.001).

Objective: ``extra["objective_name"]`` names the metric ``plan.objective`` reports
("gina_cost" alias "eq1", "gina_reduction" alias "eq4", "ps_inbound_mb", "in_network_mb",
"communication_mb_hops", "throughput"); without it GOAT-family
schemes default to gina_cost and ARO/InArt-family schemes to throughput. A reported
objective that differs from the recomputed one by more than 1e-6 (relative) is a violation.
"""
from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Iterable

from .model import Job, Plan, Topology

REL_TOL = 1e-6
GINA_FAMILY = {"goat", "goat-async", "krgs", "gina"}
THROUGHPUT_FAMILY = {"aro", "aro-acc", "aro-raw", "aro-sro", "aro-app", "aro-qsr", "inart",
                     "l-inart", "r-inart"}
OBJECTIVES = ("gina_cost", "gina_reduction", "ps_inbound_mb", "communication_mb_hops",
              "in_network_mb", "throughput")
ALIASES = {"eq1": "gina_cost", "eq4": "gina_reduction", "ps_traffic_mb": "ps_inbound_mb"}

# Every violation kind the checker emits, for tests and documentation.
KINDS = (
    "unknown_job", "unknown_node", "unknown_submodel", "unknown_task", "unknown_worker",
    "not_programmable", "missing_assignment", "not_candidate", "forward_to", "memory",
    "memory_partition", "no_path", "missing_path", "path_start", "path_end", "no_link", "loop",
    "host_transit", "valley", "aggregator_not_on_path", "split_after_aggregation",
    "missing_rate", "capacity", "switch_capacity", "ps_capacity", "split", "objective_mismatch",
    "unknown_objective", "malformed",
)


@dataclass(frozen=True)
class Violation:
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass
class Report:
    violations: list[Violation] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    objective_name: str | None = None

    @property
    def ok(self) -> bool:
        return not self.violations


def check_plan(plan: Plan, topology: Topology, jobs: list[Job]) -> list[Violation]:
    """Every rule the plan breaks (empty: the plan is valid). See the module docstring."""
    return evaluate_plan(plan, topology, jobs).violations


def evaluate_plan(plan: Plan, topology: Topology, jobs: list[Job]) -> Report:
    """Violations plus the recomputed metrics of both views."""
    c = _Checker(plan, topology, jobs)
    c.run()
    return c.report


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(a), abs(b))


def _within(load: float, cap: float) -> bool:
    return load <= cap * (1 + REL_TOL) + 1e-12


class _Checker:
    def __init__(self, plan: Plan, topology: Topology, jobs: list[Job]) -> None:
        self.plan, self.topo = plan, topology
        self.report = Report()
        self._dist: dict[str, dict[str, int]] = {}
        by_name = {j.name: j for j in jobs}
        names = plan.jobs or list(by_name)
        self.jobs: list[Job] = []
        for n in names:
            if n in by_name:
                self.jobs.append(by_name[n])
            else:
                self.bad("unknown_job", f"plan names job {n!r}, which is not in the job file")
        self.extra = plan.extra if isinstance(plan.extra, dict) else {}

    def bad(self, kind: str, msg: str) -> None:
        self.report.violations.append(Violation(kind, msg))

    # ---------------------------------------------------------------- shared helpers
    def dist(self, src: str, dst: str) -> int | None:
        """Hop distance; BFS from dst, cached (hosts other than the endpoints are not transit)."""
        if dst not in self._dist:
            d = {dst: 0}
            q = deque([dst])
            while q:
                u = q.popleft()
                if u != dst and self.topo.nodes[u].kind == "host":
                    continue
                for l in self.topo.links_of(u):
                    v = l.b if l.a == u else l.a
                    if v not in d:
                        d[v] = d[u] + 1
                        q.append(v)
            self._dist[dst] = d
        return self._dist[dst].get(src)

    def is_switch(self, n: Any) -> bool:
        return isinstance(n, str) and n in self.topo.nodes and self.topo.nodes[n].kind == "switch"

    def is_prog(self, n: Any) -> bool:
        return self.is_switch(n) and self.topo.nodes[n].programmable

    def run(self) -> None:
        for j in self.jobs:
            for h in j.workers + j.ps:
                node = self.topo.nodes.get(h)
                if node is None or node.kind != "host":
                    self.bad("unknown_node", f"job {j.name}: {h} is not a host of the topology")
        if any(v.kind == "unknown_node" for v in self.report.violations):
            return
        scheme = (self.plan.scheme or "").lower()
        self.tasks = self._tasks()
        y = self.plan.aggregation_node if isinstance(self.plan.aggregation_node, dict) else {}
        inner = {k for row in y.values() if isinstance(row, dict) for k in row}
        # aggregation_node keyed by tasks is the routing view's per-stream aggregator (InArt)
        self.y_by_task = bool(inner) and all(self.resolve_task(k) for k in inner) and \
            not any(k in self._submodel_index() for k in inner)
        if self.plan.submodel_switches or scheme in GINA_FAMILY or (y and not self.y_by_task):
            self.placement()
        if self.plan.paths or self.plan.rates:
            self.routing(default_up_down=scheme not in GINA_FAMILY)
        self.objective(scheme)

    # ---------------------------------------------------------------- placement view
    def _submodel_index(self) -> dict[str, tuple[Job, int]]:
        idx: dict[str, tuple[Job, int]] = {}
        plain: dict[str, list[tuple[Job, int]]] = defaultdict(list)
        for j in self.jobs:
            for i, s in enumerate(j.submodels):
                idx[f"{j.name}/{s.name}"] = (j, i)
                plain[s.name].append((j, i))
        for name, owners in plain.items():
            if len(owners) == 1 and name not in idx:
                idx[name] = owners[0]
        return idx

    def placement(self) -> None:
        idx = self._submodel_index()
        x: dict[tuple[str, int], set[str]] = defaultdict(set)
        if not isinstance(self.plan.submodel_switches, dict):
            self.bad("malformed", "submodel_switches must be an object")
            return
        for key, nodes in self.plan.submodel_switches.items():
            if key not in idx:
                self.bad("unknown_submodel", f"submodel_switches names {key!r}, no sub-model of the plan's jobs")
                continue
            j, i = idx[key]
            for s in nodes if isinstance(nodes, list) else [nodes]:
                if not isinstance(s, str) or s not in self.topo.nodes:
                    self.bad("unknown_node", f"submodel_switches[{key}] names unknown node {s!r}")
                elif not self.is_prog(s):
                    self.bad("not_programmable", f"sub-model {key} is assigned to {s}, which is not a programmable switch")
                else:
                    x[(j.name, i)].add(s)
        fwd = self._forward_to(idx, x)
        y = self.plan.aggregation_node if isinstance(self.plan.aggregation_node, dict) else {}
        known_workers = {w for j in self.jobs for w in j.workers}
        for w in y:
            if w not in known_workers:
                self.bad("unknown_worker", f"aggregation_node has an entry for {w}, not a worker of the plan's jobs")
        gina = reduction = ps_in = comm = total = 0.0
        multi = len(self.jobs) > 1
        for j in self.jobs:
            alpha = j.ps[0]
            for i, sub in enumerate(j.submodels):
                full, b = f"{j.name}/{sub.name}", sub.size_mb
                total += b * len(j.workers)
                xs = x[(j.name, i)]
                used: set[str] = set()
                for w in j.workers:
                    row = y.get(w, {}) if isinstance(y.get(w, {}), dict) else {}
                    if full in row:
                        node = row[full]
                    elif not multi and sub.name in row:
                        node = row[sub.name]
                    elif multi and sub.name in row and idx.get(sub.name) == (j, i):
                        node = row[sub.name]
                    else:
                        self.bad("missing_assignment", f"worker {w} has no aggregation node for sub-model {full}")
                        continue
                    if node is None or node in j.ps:
                        dest = alpha if node is None else node
                    elif node in xs:
                        dest = node
                        used.add(node)
                    else:
                        why = "not a switch of submodel_switches" if node in self.topo.nodes else "unknown"
                        self.bad("not_candidate", f"worker {w} sends sub-model {full} to {node!r} ({why}): y must lie in x")
                        continue
                    d = self.dist(w, dest)
                    if d is None:
                        self.bad("no_path", f"no path from worker {w} to {dest}")
                        continue
                    gina += b * d
                    comm += b * d
                    if dest in j.ps:
                        ps_in += b
                for s in xs:                          # GOAT Eq. 4 (uses D_s(α) as written)
                    n_in = sum(1 for w in j.workers if _y_of(y, w, full, sub.name) == s)
                    reduction += b * (n_in - 1) * (self.dist(s, alpha) or 0)
                nxt = {s: fwd.get((j.name, i), {}).get(s, alpha) for s in xs}
                active = set(used)
                frontier = list(used)
                while frontier:                      # a partial aggregate makes its target active
                    t = nxt[frontier.pop()]
                    if t in xs and t not in active:
                        active.add(t)
                        frontier.append(t)
                for s in sorted(xs):
                    d = self.dist(s, nxt[s])
                    if d is None:
                        self.bad("no_path", f"no path from {s} to {nxt[s]}")
                        continue
                    gina += b * d
                    if s in active:
                        comm += b * d
                        if nxt[s] in j.ps:
                            ps_in += b
        self._memory(x)
        self.report.metrics.update(gina_cost=gina, gina_reduction=reduction, ps_inbound_mb=ps_in,
                                   communication_mb_hops=comm,
                                   total_mb=total, in_network_mb=total - ps_in)

    def _forward_to(self, idx: dict[str, tuple[Job, int]],
                    x: dict[tuple[str, int], set[str]]) -> dict[tuple[str, int], dict[str, str]]:
        raw = self.extra.get("forward_to", {})
        out: dict[tuple[str, int], dict[str, str]] = {}
        if not isinstance(raw, dict):
            self.bad("malformed", "extra.forward_to must be an object")
            return out
        for key, m in raw.items():
            if key not in idx or not isinstance(m, dict):
                self.bad("unknown_submodel", f"extra.forward_to names {key!r}, no sub-model of the plan's jobs")
                continue
            j, i = idx[key]
            xs = x[(j.name, i)]
            for s, t in m.items():
                if s not in xs or not (t in xs or t in j.ps) or s == t:
                    self.bad("forward_to", f"sub-model {key}: {s} -> {t} must go from a switch of x to another switch of x or a PS")
                    continue
                out.setdefault((j.name, i), {})[s] = t
            seen_cycle = False
            for s in list(out.get((j.name, i), {})):
                hops, t = 0, s
                while t in out.get((j.name, i), {}) and hops <= len(xs):
                    t, hops = out[(j.name, i)][t], hops + 1
                if hops > len(xs) and not seen_cycle:
                    self.bad("forward_to", f"sub-model {key}: forward_to has a cycle through {s}")
                    seen_cycle = True
            if seen_cycle:
                out.pop((j.name, i), None)
        return out

    def _memory(self, x: dict[tuple[str, int], set[str]]) -> None:
        jobs = {j.name: j for j in self.jobs}
        use: dict[str, float] = defaultdict(float)
        use_job: dict[tuple[str, str], float] = defaultdict(float)
        for (jn, i), xs in x.items():
            need = jobs[jn].submodels[i].size_mb * 1e6     # bytes: the whole sub-model gradient
            for s in xs:
                use[s] += need
                use_job[(s, jn)] += need
        for s, bytes_ in sorted(use.items()):
            cap = self.topo.nodes[s].memory_bytes
            if not _within(bytes_, cap):
                self.bad("memory", f"{s} holds {bytes_ / 1e6:g} MB of sub-models but has {cap / 1e6:g} MB")
        part = self.extra.get("memory_partition")
        if part is None:
            return
        if not isinstance(part, dict):
            self.bad("malformed", "extra.memory_partition must be an object")
            return
        for s, shares in part.items():
            if s not in self.topo.nodes or not isinstance(shares, dict):
                self.bad("memory_partition", f"memory_partition names unknown switch {s!r}")
                continue
            if not _within(sum(shares.values()), self.topo.nodes[s].memory_bytes):
                self.bad("memory_partition", f"{s}: partitions sum to more than its memory")
        for (s, jn), bytes_ in sorted(use_job.items()):
            share = part.get(s, {}).get(jn) if isinstance(part.get(s), dict) else None
            if share is None or not _within(bytes_, share):
                self.bad("memory_partition", f"job {jn} uses {bytes_ / 1e6:g} MB on {s}, over its partition {share}")

    # ---------------------------------------------------------------- routing view
    def _tasks(self) -> dict[str, tuple[Job, str]]:
        tasks: dict[str, tuple[Job, str]] = {}
        for j in self.jobs:
            for ps in j.ps:
                tasks[j.name if len(j.ps) == 1 else f"{j.name}/{ps}"] = (j, ps)
        return tasks

    def resolve_task(self, key: Any) -> str | None:
        """Canonical task name for a key: the canonical name itself, or a PS of one job."""
        if key in self.tasks:
            return key
        owners = [t for t, (_, ps) in self.tasks.items() if ps == key]
        return owners[0] if len(owners) == 1 else None

    def _by_task(self, table: Any, what: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if not isinstance(table, dict):
            self.bad("malformed", f"{what} must be an object")
            return out
        for k, v in table.items():
            t = self.resolve_task(k)
            if t is None:
                self.bad("unknown_task", f"{what} names task {k!r}, not a (job, PS) of the plan's jobs "
                                         f"(expected one of {sorted(self.tasks)})")
            elif t in out:
                self.bad("malformed", f"{what} gives task {t} twice")
            else:
                out[t] = v
        return out

    def routing(self, default_up_down: bool) -> None:
        tasks = self.tasks
        paths, rates = self._by_task(self.plan.paths, "paths"), self._by_task(self.plan.rates, "rates")
        self._split()
        mode = self.extra.get("ina", "explicit" if self.y_by_task else "pipes")
        if mode not in ("pipes", "explicit", "none"):
            self.bad("malformed", f"extra.ina must be pipes, explicit or none, not {mode!r}")
            return
        aggs = self.extra.get("aggregators")
        per_task = self._by_task(aggs, "extra.aggregators") if isinstance(aggs, dict) else {t: aggs for t in tasks}
        aggregators: dict[str, set[str]] = {}
        for t in tasks:
            listed = per_task.get(t)
            if listed is None:
                aggregators[t] = set(self.topo.programmable_switches())
                continue
            aggregators[t] = set()
            for s in listed:
                if self.is_prog(s):
                    aggregators[t].add(s)
                else:
                    self.bad("not_programmable", f"extra.aggregators lists {s!r}, not a programmable switch")
        explicit: dict[str, Any] = {}
        if mode == "explicit":
            if "stream_aggregator" in self.extra:
                explicit = self._by_task(self.extra["stream_aggregator"], "extra.stream_aggregator")
            elif self.y_by_task:
                for w, row in self.plan.aggregation_node.items():
                    for k, a in row.items():
                        explicit.setdefault(self.resolve_task(k), {})[w] = a
        up_down = bool(self.extra.get("up_down", default_up_down)) and bool(self.topo.meta.get("tiers"))
        link_load: dict[tuple[str, str], float] = defaultdict(float)
        sw_load: dict[str, float] = defaultdict(float)
        ps_load: dict[str, float] = defaultdict(float)
        for t, (j, ps) in tasks.items():
            rate = rates.get(t)
            share = self.plan.split.get(ps) if isinstance(self.plan.split, dict) else None
            optional = rate == 0 or share == 0
            tp = paths.get(t, {})
            if not isinstance(tp, dict):
                self.bad("malformed", f"paths[{t}] must map workers to node lists")
                continue
            for w in tp:
                if w not in j.workers:
                    self.bad("unknown_worker", f"paths[{t}] has a path for {w}, not a worker of job {j.name}")
            if t in paths and not optional and rate is None:
                self.bad("missing_rate", f"task {t} has paths but no rate")
            if rate is not None and (not isinstance(rate, (int, float)) or rate < 0):
                self.bad("missing_rate", f"task {t}: rate {rate!r} is not a number >= 0")
                rate = None
            valid: dict[str, list[str]] = {}
            for w in j.workers:
                p = tp.get(w)
                if p is None:
                    if not optional:
                        self.bad("missing_path", f"worker {w} has no path for task {t}")
                    continue
                if self._path_ok(t, w, ps, p, up_down):
                    valid[w] = p
            sa = explicit.get(t, {}) if isinstance(explicit, dict) else {}
            for w, p in valid.items():
                a = sa.get(w) if isinstance(sa, dict) else None
                if a is not None and (a not in p[1:-1] or not self.is_prog(a)):
                    self.bad("aggregator_not_on_path", f"task {t}: worker {w}'s aggregator {a!r} is not a programmable switch on its path")
            flows = self._flows(t, valid, mode, aggregators[t], sa if isinstance(sa, dict) else {})
            if rate is None:
                continue
            for e, origins in flows["edges"].items():
                link_load[e] += rate * len(origins)
            for s, n in flows["aggregated"].items():
                sw_load[s] += rate * n
            ps_load[ps] += rate * flows["at_ps"]
        util = 0.0
        for (u, v), load in sorted(link_load.items()):
            cap = self.topo.link(u, v).capacity_gbps
            util = max(util, load / cap)
            if not _within(load, cap):
                self.bad("capacity", f"link {u}->{v} carries {load:g} Gb/s over its {cap:g} Gb/s")
        for s, load in sorted(sw_load.items()):
            cap = self.topo.nodes[s].capacity_gbps
            if cap > 0 and not _within(load, cap):
                self.bad("switch_capacity", f"{s} aggregates {load:g} Gb/s over its {cap:g} Gb/s")
        for p, load in sorted(ps_load.items()):
            cap = self.topo.nodes[p].capacity_gbps
            if cap > 0 and not _within(load, cap):
                self.bad("ps_capacity", f"PS {p} receives {load:g} Gb/s over its {cap:g} Gb/s")
        self.report.metrics.update(max_link_utilization=util, ps_inbound_gbps=sum(ps_load.values()))
        self._throughput(tasks, rates)

    def _path_ok(self, t: str, w: str, ps: str, p: Any, up_down: bool) -> bool:
        where = f"task {t}, worker {w}"
        if not isinstance(p, list) or len(p) < 2 or not all(isinstance(n, str) for n in p):
            self.bad("malformed", f"{where}: a path is a list of at least two node names")
            return False
        ok = True
        if p[0] != w:
            self.bad("path_start", f"{where}: path starts at {p[0]}, not at the worker")
            ok = False
        if p[-1] != ps:
            self.bad("path_end", f"{where}: path ends at {p[-1]}, not at PS {ps}")
            ok = False
        unknown = [n for n in p if n not in self.topo.nodes]
        if unknown:
            self.bad("unknown_node", f"{where}: path names unknown nodes {unknown}")
            return False
        if len(set(p)) != len(p):
            self.bad("loop", f"{where}: path visits a node twice: {p}")
            ok = False
        for n in p[1:-1]:
            if self.topo.nodes[n].kind != "switch":
                self.bad("host_transit", f"{where}: path crosses host {n}")
                ok = False
        for u, v in zip(p, p[1:]):
            if v not in self.topo.neighbors(u):
                self.bad("no_link", f"{where}: no link {u}-{v}")
                ok = False
        if ok and up_down:
            levels = [self.topo.tier_level(n) for n in p]
            if None not in levels:
                i = 0
                while i + 1 < len(levels) and levels[i + 1] > levels[i]:
                    i += 1
                while i + 1 < len(levels) and levels[i + 1] < levels[i]:
                    i += 1
                if i != len(levels) - 1:
                    self.bad("valley", f"{where}: path is not up-down: {p}")
                    ok = False
        return ok

    def _flows(self, t: str, paths: dict[str, list[str]], mode: str, aggregators: set[str],
               stream_agg: dict[str, Any]) -> dict[str, Any]:
        """Distinct flows per directed link: a flow is named by where it was last merged
        (its worker if never), so flows merged at the same (switch, pipe) count once."""
        edges: dict[tuple[str, str], set[Any]] = defaultdict(set)
        into: dict[tuple[str, int], set[Any]] = defaultdict(set)
        route: dict[tuple[str, int], tuple[str, ...]] = {}
        at_ps: set[Any] = set()
        reported = set()
        for w, p in paths.items():
            origin: Any = ("worker", w)
            for k in range(1, len(p)):
                u, v = p[k - 1], p[k]
                edges[(u, v)].add(origin)
                if k == len(p) - 1:
                    at_ps.add(origin)
                    break
                merges = (mode == "pipes" and v in aggregators) or \
                         (mode == "explicit" and stream_agg.get(w) == v)
                if not merges:
                    continue
                pipe = self.topo.port_pipe_of(v, self.topo.link(u, v).port_of(v))
                into[(v, pipe)].add(origin)
                origin = ("merged", v, pipe)
                rest = tuple(p[k:])
                if route.setdefault((v, pipe), rest) != rest and (v, pipe) not in reported:
                    reported.add((v, pipe))
                    self.bad("split_after_aggregation", f"task {t}: flows merged at {v} (pipe {pipe}) "
                                                        f"leave on different routes: {list(route[(v, pipe)])} vs {list(rest)}")
        aggregated: dict[str, int] = defaultdict(int)
        for (v, _), origins in into.items():
            aggregated[v] += len(origins)
        return {"edges": edges, "aggregated": aggregated, "at_ps": len(at_ps)}

    def _split(self) -> None:
        split = self.plan.split
        if not split:
            return
        if not isinstance(split, dict):
            self.bad("malformed", "split must be an object")
            return
        for j in self.jobs:
            mine = {p: v for p, v in split.items() if p in j.ps}
            if not mine:
                continue
            if any(not isinstance(v, (int, float)) or v < 0 for v in mine.values()) or \
                    not _close(sum(mine.values()), 1.0):
                self.bad("split", f"job {j.name}: PS shares {mine} must be >= 0 and sum to 1")
        stray = [p for p in split if not any(p in j.ps for j in self.jobs)]
        if stray:
            self.bad("split", f"split names {stray}, not PSs of the plan's jobs")

    def _throughput(self, tasks: dict[str, tuple[Job, str]], rates: dict[str, Any]) -> None:
        per_job: dict[str, float] = defaultdict(float)
        for t, (j, _) in tasks.items():
            r = rates.get(t)
            per_job[j.name] += float(r) if isinstance(r, (int, float)) else 0.0
        if not per_job:
            return
        beta = self.extra.get("beta", {}) if isinstance(self.extra.get("beta", {}), dict) else {}
        mu = float(self.extra.get("mu", 0.001))
        if len(per_job) == 1:
            thr = next(iter(per_job.values()))
        else:
            weighted = [beta.get(n, 1.0) * r for n, r in per_job.items()]
            thr = min(weighted) + mu * sum(weighted)
        self.report.metrics.update(throughput=thr, min_job_rate=min(per_job.values()))

    # ---------------------------------------------------------------- objective
    def objective(self, scheme: str) -> None:
        name = self.extra.get("objective_name")
        name = ALIASES.get(name, name)
        if name is None:
            name = ("gina_cost" if scheme in GINA_FAMILY
                    else "throughput" if scheme in THROUGHPUT_FAMILY else None)
        self.report.objective_name = name
        if name is None or self.plan.objective is None:
            return
        if name not in OBJECTIVES:
            self.bad("unknown_objective", f"objective_name {name!r} is not one of {', '.join(OBJECTIVES)}")
            return
        got = self.report.metrics.get(name)
        if got is None:
            self.bad("objective_mismatch", f"plan reports {name} = {self.plan.objective} but fills no field it is computed from")
        elif not isinstance(self.plan.objective, (int, float)) or not _close(float(self.plan.objective), got):
            self.bad("objective_mismatch", f"plan reports {name} = {self.plan.objective}, recomputed {got:.9g}")


def _y_of(y: dict[str, Any], w: str, full: str, plain: str) -> Any:
    row = y.get(w)
    if not isinstance(row, dict):
        return None
    return row[full] if full in row else row.get(plain)


def format_report(report: Report) -> Iterable[str]:
    """Human-readable lines: violations first, then the metrics."""
    for v in report.violations:
        yield f"VIOLATION {v}"
    for k in sorted(report.metrics):
        yield f"{k} = {report.metrics[k]:.9g}"
    if report.objective_name:
        yield f"objective: {report.objective_name}"
