"""From a plan to data-plane configuration: table operations, fragment labels, PS config.

Pure: no I/O. ``deploy_plan`` turns (Topology, Job, Plan) into a :class:`Deployment` — per
switch a list of :class:`TableOp` (calls of :class:`controller.ina_tables.InaTables` methods,
applied with :func:`apply_ops` to an in-process switch or over P4Runtime), per worker the
:class:`hostlib.worker.FragmentLabel` of each sub-model, and the PS's
:class:`hostlib.ps.JobConfig`. Used by the Mininet emulation (emulation/install.py).

What gets installed for a job with a single PS:

* **L3**: a /32 LPM route for every host on every switch. The next hop is the first hop of
  ``Topology.shortest_path`` (BFS in link order). In Clos fabrics that takes the first uplink
  everywhere, so the path a→b is the reverse of b→a — ATP needs this: the PS's result must
  pass back through the switch that holds the aggregator to release it.
* **INA**: every switch that aggregates (a GOAT node y, an ATP first level or its
  ``forward_to`` second level) gets its switch id as node id (``ina_node``), the job
  (``ina_job``; ATP: hold-until-result plus ``ina_release``) and a level (``ina_level``):
  ``to_node`` for ATP's two-level plans, ``to_multicast`` when a node collects every worker's
  contribution of all its sub-models (GOAT; the result is final there), else ``to_ps`` (the PS
  adds the partial to the contributions other workers sent it directly).
* **Pinned routes**: where a worker's aggregation node is not on its shortest path to the PS
  (GOAT's detours), ``ina_route`` entries on the switches of a shortest path worker → node
  whose LPM next hop differs. They match (job, node, worker id, flags 0): only first copies, so
  aggregates leaving the node (worker id 255) and ``COLLISION`` fallbacks follow the LPM routes
  to the PS.
* **Routing plans** (ARO, InArt and the routing baselines give each worker's path, not a
  placement): programmable switches where a job's paths merge aggregate (InArt: the switch the
  plan names for the worker), each level sending its partial to the next merging switch on the
  path (``to_node``, fan-in = the workers whose paths pass it), the last to the PS or, holding
  every worker, multicasting the result. ``ina_route`` entries matching (job, node, flags 0 or
  ``COLLISION``) keep first copies and partials on the plan's paths up to each level; what
  leaves the last level follows the LPM routes.
* **Several jobs** (:func:`deploy_jobs`): per-job operations merged per switch; pools shared
  under one node id per switch, or SwitchML's static partition (a node id and pool slice per
  job); disjoint multicast replica ids; ESA priorities scaled over all jobs.
* **Reminder routes**: every aggregation node gets a ``reminder_via`` host for the PS's
  reminders (preferably a worker it aggregates for); where that host's LPM route from the PS
  misses the node, ``ina_route`` entries matching (job, node, flags = REMINDER, ingress port)
  pin the reminder along a shortest path PS → node. The ingress port keeps the pin from
  catching the reminder again on its way on from the node. A ``to_multicast`` node also gets
  the same pins for ``RELAY``; the one whose busiest link carries the fewest copies of a
  relayed result, then whose relays cross the fewest links, multicasts the PS's results
  (``JobConfig.result_via``). A plan without such a node gets a relay node on a programmable
  switch, one the job aggregates at too (a node of its own there, past the switch's pipes'
  ids), except for ATP, whose held aggregators need a relay that aggregates nothing.
  ``JobConfig.node_workers`` tells the PS whose contributions each node can hold (a worker's
  first node and the levels after it), so it reminds only nodes that can hold one it lacks.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from hostlib.protocol import Flags
from hostlib.ps import JobConfig
from hostlib.worker import FragmentLabel

from .model import Job, Plan, SubModel, Topology, submodel_key, task_key

DEFAULT_POOL = 16384            # aggregators per node: INA_POOL_SIZE of p4src/v1model/ina.p4
PIPE_NODE_STRIDE = 4096         # node id of pipe p of a multi-pipeline switch: its id + p × this
PIPE_SEP = ".pipe"              # an aggregation unit on a multi-pipeline switch: "<switch>.pipe<p>"
RELAY_SUFFIX = ".relay"         # a relay unit on a switch whose unit there aggregates for the job


def ingress_unit(topo: Topology, switch: str, prev: str) -> tuple[str, int]:
    """Where what ``switch`` receives from ``prev`` may aggregate: the switch itself, or on a
    multi-pipeline switch its ingress pipe (ARO §II-B: flows entering on different pipes do not
    meet) as ``(<switch>.pipe<p>, p)``."""
    if topo.nodes[switch].pipelines <= 1:
        return switch, 0
    pipe = topo.port_pipe_of(switch, topo.link(prev, switch).port_of(switch))
    return f"{switch}{PIPE_SEP}{pipe}", pipe


@dataclass(frozen=True)
class TableOp:
    """One call ``InaTables.<method>(*args, **kwargs)``."""
    method: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def of(method: str, *args: Any, **kwargs: Any) -> "TableOp":
        return TableOp(method, args, tuple(sorted(kwargs.items())))

    def __str__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"{self.method}({', '.join(parts)})"


def apply_ops(tables: Any, ops: Iterable[TableOp]) -> int:
    """Run ``ops`` on an InaTables (or anything with the same methods); returns how many."""
    n = 0
    for op in ops:
        getattr(tables, op.method)(*op.args, **dict(op.kwargs))
        n += 1
    return n


@dataclass(frozen=True)
class HostAddress:
    ip: str
    mac: str


def host_addresses(topo: Topology) -> dict[str, HostAddress]:
    """The addresses a testbed gives its hosts (``topo.meta["addresses"]``: host → {ip, mac},
    see controller.testbed); otherwise 10.0.x.y and 02:00:00:00:xx:yy for the i-th host
    (1-based, topology order), y in 1..254 so no address looks like a network or broadcast
    address."""
    given = topo.meta.get("addresses") or {}
    if given:
        return {h: HostAddress(given[h]["ip"], given[h]["mac"]) for h in topo.hosts()}
    out = {}
    for i, h in enumerate(topo.hosts(), start=1):
        x, y = divmod(i - 1, 254)
        out[h] = HostAddress(f"10.0.{x}.{y + 1}", f"02:00:00:00:{i >> 8 & 0xFF:02x}:{i & 0xFF:02x}")
    return out


def next_hops(topo: Topology) -> dict[str, dict[str, str]]:
    """switch → host → neighbour to forward to (first hop of a BFS shortest path)."""
    hops: dict[str, dict[str, str]] = {}
    for s in topo.switches():
        hops[s] = {h: topo.shortest_path(s, h)[1] for h in topo.hosts()}
    return hops


def lpm_path(topo: Topology, hops: Mapping[str, Mapping[str, str]], src: str, dst: str) -> list[str]:
    """The node sequence a packet from host ``src`` to host ``dst`` takes over the LPM routes."""
    path = [src, topo.tor_of(src)]
    while path[-1] != dst:
        if len(path) > len(topo.nodes) + 1:
            raise RuntimeError(f"routing loop {src} -> {dst}: {path}")
        path.append(hops[path[-1]][dst])
    return path


@dataclass
class Deployment:
    """Everything needed to run one job of a plan on a fabric."""
    scheme: str
    job_id: int
    ps: str
    workers: list[str]                            # index = worker id
    addresses: dict[str, HostAddress]
    submodel_sizes: list[int]                     # gradient elements per sub-model
    labels: dict[str, list[FragmentLabel]]        # worker host → one label per sub-model
    job_config: JobConfig
    ops: dict[str, list[TableOp]]                 # switch → table operations, in order
    node_ids: dict[str, int] = field(default_factory=dict)   # aggregating switch → node id
    levels: dict[str, str] = field(default_factory=dict)     # aggregating switch → level kind
    # copies per link (from, to) of one result the PS relays (none: results are unicast)
    relayed: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def ina_switches(self) -> list[str]:
        return sorted(self.node_ids, key=self.node_ids.get)   # type: ignore[arg-type]


def submodel_elements(job: Job, total_elements: int) -> list[int]:
    """Split ``total_elements`` gradient values over the job's sub-models in proportion to
    their sizes (every sub-model gets at least one)."""
    sizes = [s.size_mb for s in job.submodels]
    total = sum(sizes)
    out = [max(1, int(round(total_elements * s / total))) for s in sizes]
    out[-1] = max(1, total_elements - sum(out[:-1]))
    return out


# first-copy pins compare every flag but RETRY: a worker's retry (rule 8) takes its first copy's path
_FIRST_COPY_MASK = 0xFF & ~int(Flags.RETRY)


def _node_workers(y: Mapping[str, Sequence[str | None]], levels: Mapping[str, tuple]) -> dict[str, set[str]]:
    """Node → the workers whose contributions can reach it: at a worker's first node for a
    sub-model and every level that node's aggregates (and collided fragments) go on to."""
    reach: dict[str, set[str]] = {}
    for w, nodes in y.items():
        for n in nodes:
            seen: set[str] = set()
            while n is not None and n in levels and n not in seen:
                seen.add(n)
                reach.setdefault(n, set()).add(w)
                n = levels[n][1] if levels[n][0] == "to_node" else None
    return reach


def _placement_levels(topo: Topology, job: Job, plan: Plan, subs: list[str]) -> tuple[
        dict[str, list[str | None]], dict[tuple[str, int], int], dict[tuple[str, int], int], dict[str, tuple]]:
    """Placement plans (GOAT, ATP, ...): y (worker → sub-model → first node), the fan-in of
    each (node, sub-model), that of second levels, and each node's level."""
    hold = plan.scheme == "atp"
    forward_to: dict[str, dict[str, str]] = plan.extra.get("forward_to", {}) or {}
    # y: worker → sub-model index → aggregating switch (None: the PS)
    y: dict[str, list[str | None]] = {
        w: [plan.aggregation_node.get(w, {}).get(k) for k in subs] for w in job.workers}

    # fan-in of each (first-level node, sub-model) and the second level it forwards to
    fan: dict[tuple[str, int], int] = {}
    for w in job.workers:
        for i, n in enumerate(y[w]):
            if n is not None:
                fan[(n, i)] = fan.get((n, i), 0) + 1
    second: dict[tuple[str, int], str] = {}
    for (n, i) in fan:
        t = forward_to.get(subs[i], {}).get(n)
        if t is not None and t != n:
            second[(n, i)] = t

    # ina_level is per (job, node), not per sub-model: a node may forward to a next level only
    # if it does so for every sub-model it aggregates, with the same next node and fan-in
    fan2: dict[tuple[str, int], int] = {}
    for (n, i), t in second.items():
        fan2[(t, i)] = fan2.get((t, i), 0) + fan[(n, i)]
    for (t, i) in list(fan2):
        # a second level that also aggregates its own workers directly (ATP: the PS's ToR)
        # completes when both kinds arrived: one fan-in for the partials and the direct labels
        fan2[(t, i)] += fan.get((t, i), 0)
    for (t, i) in fan2:
        if (t, i) in fan:
            fan[(t, i)] = fan2[(t, i)]
    levels: dict[str, tuple] = {}
    first_subs: dict[str, list[int]] = {}
    for (n, i) in fan:
        first_subs.setdefault(n, []).append(i)
    n_workers = len(job.workers)
    for n, idx in first_subs.items():
        targets = {(second.get((n, i)), fan2.get((second.get((n, i)), i), 0)) for i in idx}
        if len(targets) == 1 and next(iter(targets))[0] is not None:
            t, f = next(iter(targets))
            levels[n] = ("to_node", t, f)
        elif not hold and all(fan[(n, i)] == n_workers for i in idx):
            levels[n] = ("to_multicast",)
        else:
            levels[n] = ("to_ps",)
    for (n, i), t in second.items():
        if levels[n][0] == "to_node" and t not in levels:
            full = all(f == n_workers for (tt, _), f in fan2.items() if tt == t)
            levels[t] = ("to_multicast",) if full and not hold else ("to_ps",)
    # a second level whose sources fell back to to_ps gets no traffic; drop it unless first-level
    used = {lv[1] for lv in levels.values() if lv[0] == "to_node"} | set(first_subs)
    levels = {n: lv for n, lv in levels.items() if n in used}

    return y, fan, fan2, levels


def _routing_levels(topo: Topology, job: Job, plan: Plan, hops: Mapping[str, Mapping[str, str]],
                    n_subs: int) -> tuple[dict[str, list[str | None]], dict[tuple[str, int], int],
                                          dict[str, tuple], dict[str, dict[str, str]],
                                          dict[str, tuple[str, int]]]:
    """Routing plans (ARO, InArt, ...): every worker's path to the PS is given; programmable
    switches (InArt: the one the plan names for the worker) where flows of the job merge aggregate, each level passing its partial to the
    next merging switch on the path (multi-stage aggregation), the last one to the PS or, when
    it has every worker, multicasting the result. Returns y, fan-ins, levels and the pins
    {node: {switch: next hop}} that keep first copies and partials on the plan's paths up to
    each node, and the units on multi-pipeline switches (unit → (switch, pipe))."""
    ps = job.ps[0]
    paths = plan.paths.get(task_key(job, ps)) or plan.paths.get(ps)
    if not paths:
        raise ValueError(f"plan {plan.scheme}: no paths for job {job.name}")
    nxt: dict[str, str] = {}
    split: set[str] = set()                 # units where the job's paths diverge: no merging
    units: dict[str, tuple[str, int]] = {}  # unit → (switch, ingress pipe); a single-pipe switch is its own
    hops_of: dict[str, list[tuple[str, str]]] = {}      # worker → (unit, switch) along its path
    for w in job.workers:
        p = paths.get(w)
        if not p or p[0] != w or p[-1] != ps:
            raise ValueError(f"plan {plan.scheme}: job {job.name}: path of {w} must run from {w} to {ps}")
        for prev, a, b in zip(p, p[1:-1], p[2:]):
            u, pipe = ingress_unit(topo, a, prev)
            units[u] = (a, pipe)
            hops_of.setdefault(w, []).append((u, a))
            if nxt.setdefault(u, b) != b:
                split.add(u)
    # explicit plans (InArt) name each worker's aggregation switch per task; otherwise every
    # programmable switch on the path may aggregate (ARO's INPs: a multi-pipeline switch only
    # what enters on one pipe)
    named = {w: plan.aggregation_node.get(w, {}).get(task_key(job, ps), "") for w in job.workers}
    # a plan without INA (LBMM, ``extra["ina"] == "none"``): no switch aggregates, the PS does
    no_ina = plan.extra.get("ina") == "none"
    chain = {w: [u for u, s in hops_of.get(w, []) if topo.nodes[s].programmable and u not in split
                 and not no_ina and (not plan.aggregation_node or s == named[w])] for w in job.workers}
    feeds: dict[str, set[str]] = {}          # switch → distinct inputs (workers or lower switches)
    under: dict[str, int] = {}               # switch → workers whose path passes it
    for w, c in chain.items():
        for prev, s in zip([w] + c, c):
            feeds.setdefault(s, set()).add(prev)
            under[s] = under.get(s, 0) + 1
    merging = {s for s, f in feeds.items() if len(f) >= 2}
    kept = {w: [s for s in c if s in merging] for w, c in chain.items()}
    levels: dict[str, tuple] = {}
    for c in kept.values():
        for s, t in zip(c, c[1:] + [None]):
            if t is not None:
                levels[s] = ("to_node", t, under[t])
            else:
                levels[s] = ("to_multicast",) if under[s] == len(job.workers) else ("to_ps",)
    y = {w: [c[0] if c else None] * n_subs for w, c in kept.items()}
    fan = {(s, i): under[s] for s in levels for i in range(n_subs)}
    pins: dict[str, dict[str, str]] = {}
    for w in job.workers:
        p = paths[w]
        for node in kept[w]:
            k = p.index(units[node][0])
            # the worker's own next hops: at a switch where the job's paths split, another
            # worker's (nxt) would send this one's copies and partials past its node
            for a, b in zip(p[1:k], p[2:k + 1]):
                if hops[a][ps] != b:
                    pins.setdefault(node, {})[a] = b
    return y, fan, levels, pins, {u: units[u] for u in levels}


def priority_bytes(priorities: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, int]]:
    """ESA priorities (any positive scale, e.g. :func:`controller.baselines.esa_priorities`) as
    the header's 8-bit field: proportional, the largest of all jobs 254 (255 marks ATP's held
    aggregators), every one at least 1 so even the lowest can claim a free aggregator."""
    top = max((p for subs in priorities.values() for p in subs.values()), default=0.0)
    if top <= 0:
        return {j: {s: 1 for s in subs} for j, subs in priorities.items()}
    return {j: {s: max(1, min(254, round(254 * p / top))) for s, p in subs.items()}
            for j, subs in priorities.items()}


def esa_priority_schedule(jobs: list[Job], rounds: Mapping[str, int]) -> dict[str, list[list[int]]]:
    """ESA's priorities recomputed every round, as its scheduler does while jobs progress: in
    round r job j has ``rounds[j] - r`` rounds left, each costing time ∝ its model size, so
    T_j = (rounds left) × size (Eq. 1's remaining time); 8-bit values scaled over the jobs still
    running. Returns job → round → sub-model (model order) → priority byte."""
    from .baselines import esa_priorities          # baselines registers schemes: import late
    out: dict[str, list[list[int]]] = {j.name: [] for j in jobs}
    for r in range(max(rounds.values(), default=0)):
        live = [replace(j, meta={**j.meta, "remaining_time": (rounds[j.name] - r) * j.total_mb})
                for j in jobs if r < rounds[j.name]]
        scaled = priority_bytes(esa_priorities(live))
        for j in live:
            out[j.name].append([scaled[j.name][s.name] for s in j.submodels])
    return out


def deploy_plan(topo: Topology, job: Job, plan: Plan, *, total_elements: int,
                pool_size: int = DEFAULT_POOL, multi_job: bool = False, node_base: int = 0,
                pools: Mapping[str, tuple[int, int]] | None = None, rid_base: int = 1,
                priorities: Mapping[str, int] | None = None,
                relayed: Mapping[tuple[str, str], int] | None = None) -> Deployment:
    """Configuration for ``job`` under ``plan`` (single-PS jobs; see the module docstring).

    Several jobs on one fabric (:func:`deploy_jobs`): ``node_base`` is added to every switch
    id this job uses as node id (so each job can get its own ``ina_node`` entry and pool),
    ``pools`` gives a switch's (pool_base, pool_size) for this job (default (0, pool_size)),
    ``rid_base`` the first multicast replica id of this job's groups, ``priorities`` the
    8-bit ESA priority of each sub-model (by name; default: from ``plan.extra["priority"]``),
    and ``relayed`` the copies per link the jobs before put there relaying their results (their
    deployments' ``relayed``, summed)."""
    if len(job.ps) != 1:
        raise ValueError(f"job {job.name}: deploy_plan supports one PS, not {len(job.ps)}")
    ps = job.ps[0]
    scheme = plan.scheme
    hold = scheme == "atp"                 # ATP keeps aggregators until the result passes back
    preempt = scheme == "esa"
    addr = host_addresses(topo)
    hops = next_hops(topo)
    sid = {s: node_base + topo.nodes[s].switch_id for s in topo.switches()}
    top_pipe = max(topo.nodes[s].pipelines for s in topo.switches())      # a relay unit's id is past the pipes
    if node_base + max(topo.nodes[s].switch_id for s in topo.switches()) + PIPE_NODE_STRIDE * top_pipe > 0xFFFF:
        raise ValueError(f"job {job.name}: node ids from base {node_base} do not fit 16 bits")
    pool_of = lambda n: (pools or {}).get(n, (0, pool_size))          # noqa: E731
    if priorities is None:
        prio = plan.extra.get("priority", {})
        priorities = priority_bytes(prio).get(job.name, {}) if prio else {}
    wid = {w: i for i, w in enumerate(job.workers)}
    subs = [submodel_key(job, s, multi_job) for s in job.submodels]

    n_workers = len(job.workers)
    by_submodel = any(k in subs for nodes in plan.aggregation_node.values() for k in nodes)
    units: dict[str, tuple[str, int]] = {}       # multi-pipeline switches: unit → (switch, pipe)
    if by_submodel or not plan.paths:
        y, fan, fan2, levels = _placement_levels(topo, job, plan, subs)
        tree_pins: dict[str, dict[str, str]] = {}
        multi = [n for n in levels if topo.nodes[n].pipelines > 1]
        if multi:
            raise ValueError(f"plan {scheme}: placement plans aggregate per switch, but {', '.join(multi)} "
                             "has several pipelines (only routing plans deploy per pipe)")
    else:
        y, fan, levels, tree_pins, units = _routing_levels(topo, job, plan, hops, len(subs))
        fan2 = {}
    sw = lambda n: units.get(n, (n, 0))[0]                    # noqa: E731  unit → its switch
    relay_ids: dict[str, int] = {}                            # a relay unit beside the job's own: its id

    def uid(n: str) -> int:
        """A unit's node id: its switch's id, plus its pipe's stride on a multi-pipeline switch."""
        return relay_ids.get(n) or sid[sw(n)] + PIPE_NODE_STRIDE * units.get(n, (n, 0))[1]
    port = lambda a, b: topo.link(a, b).port_of(a)            # noqa: E731

    def from_ps(s: str) -> tuple[str, int]:
        """The unit of switch ``s`` that what the PS sends to it (reminders, relays) enters."""
        return ingress_unit(topo, s, topo.shortest_path(ps, s)[-2])
    for w, nodes in y.items():
        for n in nodes:
            if n is not None and not topo.nodes[sw(n)].programmable:
                raise ValueError(f"plan {scheme}: {w} aggregates at {n}, which is not programmable")
    by_switch = {sw(n): lv for n, lv in levels.items()}
    # ATP holds an aggregator until the PS's result passes back — except at the PS's own ToR:
    # the result passes there first, a PS turnaround after the aggregate, so holding it there
    # buys nothing, and it would keep the results from a relay (no relay's tree passes it)
    holding = {s for s in by_switch if hold and s != topo.tor_of(ps)}
    relayed = {} if relayed is None else relayed
    relay_only = _relay_only_node(topo, hops, job, by_switch,
                                  {sw(n): ws for n, ws in _node_workers(y, levels).items() if sw(n) in holding}, hold,
                                  relayed)
    if relay_only is not None:
        # a relay on a multi-pipeline switch: the pipe the PS's results enter on
        at, (relay_only, pipe) = relay_only, from_ps(relay_only)
        if relay_only in levels:
            # the job aggregates on that unit: the relay is a second node there, with an id past
            # the switch's pipes (ina_level is keyed by node; rule 1 needs no aggregator)
            relay_only = f"{at}{RELAY_SUFFIX}"
            relay_ids[relay_only] = sid[at] + PIPE_NODE_STRIDE * topo.nodes[at].pipelines
        if relay_only != at:
            units[relay_only] = (at, pipe)
        levels[relay_only] = ("to_multicast",)

    ops: dict[str, list[TableOp]] = {s: [] for s in topo.switches()}
    for s in topo.switches():
        for h in topo.hosts():
            ops[s].append(TableOp.of("add_lpm", addr[h].ip, 32, port(s, hops[s][h]), dmac=addr[h].mac))
        node_s = topo.nodes[s]
        if node_s.programmable and node_s.pipelines > 1:
            # which pipe each port feeds (ina_port_pipe; unmapped ports: pipe 0)
            for p_, pipe in sorted(node_s.port_pipe.items()):
                if pipe:
                    ops[s].append(TableOp.of("set_port_pipe", p_, pipe))
    configured: set[str] = set()
    for n, lv in levels.items():
        node, at = uid(n), sw(n)
        base, size = pool_of(at)
        pipe = units.get(n, (n, 0))[1]
        if pipe:
            # each pipe has a memory of its own: pipe p's pool is the p-th block of the register
            base += pipe * size
            if base + size > DEFAULT_POOL:
                raise ValueError(f"plan {scheme}: {n}'s pool ends at {base + size}, beyond the "
                                 f"program's {DEFAULT_POOL} aggregators (pool {size} per pipe)")
            ops[at].append(TableOp.of("add_node", node, pool_base=base, pool_size=size, pipe=pipe))
        else:
            ops[at].append(TableOp.of("add_node", node, pool_base=base, pool_size=size))
        if at not in configured:            # a switch aggregating on several pipes: the job once
            configured.add(at)
            ops[at].append(TableOp.of("add_job", job.job_id, preemption=preempt, hold_until_result=at in holding))
        if at in holding and n != relay_only:
            ops[at].append(TableOp.of("add_release", job.job_id, node, pool_base=base, pool_size=size))
        if lv[0] == "to_node":
            ops[at].append(TableOp.of("level_to_node", job.job_id, node, next_node=uid(lv[1]), next_fan_in=lv[2]))
        elif lv[0] == "to_multicast":
            members = [(port(at, hops[at][w]), addr[w].ip, addr[w].mac) for w in job.workers]
            # one group per (job, node): the switch id keeps groups distinct across nodes
            ops[at].append(TableOp.of("add_result_group", job.job_id, members, rid_base=rid_base))
            ops[at].append(TableOp.of("level_to_multicast", job.job_id, node, job.job_id))
        else:
            ops[at].append(TableOp.of("level_to_ps", job.job_id, node))

    # pinned routes: worker first copies (flags 0) labelled n must pass n
    pinned: set[tuple[str, int, int]] = set()
    for w in job.workers:
        to_ps = lpm_path(topo, hops, w, ps)
        for n in {n for n in y[w] if n is not None}:
            if sw(n) in to_ps:
                continue
            path = topo.shortest_path(w, sw(n))
            for a, b in zip(path[1:-1], path[2:]):
                if hops[a][ps] != b and (a, uid(n), wid[w]) not in pinned:
                    pinned.add((a, uid(n), wid[w]))
                    ops[a].append(TableOp.of("add_route", job.job_id, port(a, b), addr[ps].mac,
                                             node_id=uid(n), worker_id=wid[w], flags=0,
                                             flags_mask=_FIRST_COPY_MASK))
    # routing plans: first copies and partials (flags 0) and fragments a collision sent on
    # (COLLISION) headed for node n follow the plan's paths up to n
    for n, at in tree_pins.items():
        for a, b in at.items():
            for flags in (0, int(Flags.COLLISION)):
                ops[a].append(TableOp.of("add_route", job.job_id, port(a, b), addr[ps].mac, node_id=uid(n),
                                         flags=flags, flags_mask=_FIRST_COPY_MASK))
    for n, lv in levels.items():
        if lv[0] == "to_node" and not tree_pins and sw(lv[1]) not in _downstream(topo, hops, sw(n), ps):
            raise ValueError(f"plan {scheme}: next level {lv[1]} of {n} is not on {n}'s route to the PS")

    prio = [int(priorities.get(sub.name, 0)) for sub in job.submodels]
    labels = {w: [FragmentLabel(uid(n), fan[(n, i)], prio[i]) if n is not None
                  else FragmentLabel(0, n_workers, prio[i]) for i, n in enumerate(y[w])] for w in job.workers}
    # reminders: from the PS along a shortest path to the node, then on to a host that ignores
    # them; pinned (flags == REMINDER, ingress port) where the host's LPM route leaves that path
    via: dict[int, str] = {}
    others = [h for h in topo.hosts() if h not in job.workers and h != ps]
    for n in levels:
        mine = [w for w in job.workers if n in y[w]]
        for h in mine + [w for w in job.workers if w not in mine] + others:
            pins = _reminder_pins(topo, hops, ps, sw(n), h)
            if pins is not None:
                break
        else:
            raise ValueError(f"plan {scheme}: no reminder route from {ps} through {n}")
        via[uid(n)] = addr[h].ip
        # a node multicasting to every worker also relays the PS's results (rule 1), which take
        # the reminders' path to it (OVERFLOW may be set: not matched)
        kinds: list[dict[str, int]] = [{"flags": int(Flags.REMINDER)}]
        if levels[n][0] == "to_multicast":
            kinds.append({"flags": int(Flags.RELAY), "flags_mask": 0xFF & ~int(Flags.OVERFLOW)})
        for a, (in_port, out_port) in pins.items():
            for kind in kinds:
                ops[a].append(TableOp.of("add_route", job.job_id, out_port, addr[h].mac, node_id=uid(n),
                                         ingress_port=in_port, priority=2, **kind))
    sub_nodes = {i: sorted({uid(n) for n in levels if (n, i) in fan or (n, i) in fan2}) for i in range(len(subs))}
    # the PS's results go once through the multicasting node whose busiest link carries the
    # fewest copies, then whose relays cross the fewest links (any of the job's: rule 1 needs
    # no aggregator); an edge node's tree climbs back up the fabric's busiest links, and at 1 %
    # loss, where those links and not the PS's set the pace, relaying through GOAT's node of
    # each sub-model made the twin's rounds 3 % slower (on a multi-pipeline switch, only a unit
    # on the pipe the PS's relays enter)
    relays = [n for n in levels if levels[n][0] == "to_multicast" and from_ps(sw(n))[1] == units.get(n, (n, 0))[1]]
    relay = min(relays, key=lambda n: (*_relay_load(topo, hops, ps, sw(n), job.workers, relayed), uid(n))) \
        if relays else None
    cfg = JobConfig({wid[w]: (addr[w].ip, addr[w].mac) for w in job.workers}, via, sub_nodes,
                    result_via=0 if relay is None else uid(relay),
                    node_workers={uid(n): sorted(wid[w] for w in ws) for n, ws in _node_workers(y, levels).items()})
    return Deployment(scheme, job.job_id, ps, list(job.workers), addr,
                      submodel_elements(job, total_elements), labels, cfg, ops,
                      {n: uid(n) for n in levels},
                      {n: "relay" if n == relay_only else lv[0] for n, lv in levels.items()},
                      {} if relay is None else _relay_copies(topo, hops, ps, sw(relay), job.workers))


@dataclass
class FabricDeployment:
    """Several jobs of one plan on one fabric: one :class:`Deployment` per job and the
    merged table operations of every switch."""
    scheme: str
    jobs: list[Deployment]
    ops: dict[str, list[TableOp]]
    pool_sizes: dict[str, int]                  # aggregating switch → aggregators (all jobs)

    @property
    def ina_switches(self) -> list[str]:
        return sorted({s for d in self.jobs for s in d.node_ids})


MAX_WORKERS_PER_GROUP = 256         # replica ids per job's multicast group (rid_base stride)
PART_JOB_ID_STRIDE = 1000           # the k-th PS's part of a multi-PS job: job id + k × this


def expand_multi_ps(jobs: list[Job], plan: Plan, total_elements: Mapping[str, int]
                    ) -> tuple[list[Job], Plan, dict[str, int]]:
    """A job with several PSes (InArt's split) as one single-PS *part* per PS: the part towards
    PS p is named ``job@p``, has job id ``job_id + k·PART_JOB_ID_STRIDE`` (k: p's position in
    ``job.ps``), the same workers, and ``plan.split[p]`` of every sub-model (normalised over the
    job's PSes; equal shares when the plan gives none; a PS with share 0 gets no part). The plan
    is returned with its tasks (``job/p``) renamed to the parts; single-PS jobs pass unchanged."""
    if all(len(j.ps) == 1 for j in jobs):
        return list(jobs), plan, dict(total_elements)
    out = Plan.from_dict(plan.to_dict())
    parts: list[Job] = []
    elements: dict[str, int] = {}
    rename: dict[str, str] = {}
    for j in jobs:
        if len(j.ps) == 1:
            parts.append(j)
            elements[j.name] = total_elements[j.name]
            continue
        shares = {p: float(plan.split.get(p, 1.0)) for p in j.ps}
        total = sum(shares.values())
        if total <= 0:
            raise ValueError(f"plan {plan.scheme}: job {j.name}: its PSes' shares add up to {total}")
        for k, p in enumerate(j.ps):
            x = shares[p] / total
            if x <= 0:
                continue
            name = f"{j.name}@{p}"
            rename[task_key(j, p)] = name
            parts.append(Job(name, list(j.workers), [p], [SubModel(s.name, s.size_mb * x) for s in j.submodels],
                             j.model, j.priority, j.job_id + PART_JOB_ID_STRIDE * k,
                             dict(j.meta, parent=j.name, ps_share=x)))
            elements[name] = max(1, round(total_elements[j.name] * x))
    out.jobs = [p.name for p in parts]
    out.paths = {rename.get(t, t): v for t, v in plan.paths.items()}
    out.rates = {rename.get(t, t): v for t, v in plan.rates.items()}
    out.aggregation_node = {w: {rename.get(t, t): n for t, n in m.items()}
                            for w, m in plan.aggregation_node.items()}
    return parts, out, elements


def deploy_jobs(topo: Topology, jobs: list[Job], plan: Plan, *, total_elements: Mapping[str, int],
                pool_size: int = DEFAULT_POOL, partition: bool | None = None) -> FabricDeployment:
    """Configuration for every job of ``plan`` on one fabric.

    Every aggregating switch has ``pool_size`` aggregators (a power of two: Tofino masks the
    hash). Jobs share them — one node id per switch, fragments of all jobs hashed over the
    whole pool, as ATP and ESA do — or, with ``partition`` (default: SwitchML, which partitions
    statically), each job aggregating on a switch gets an equal power-of-two slice under a node
    id of its own (switch id + 256 × job position). Multicast replica ids are disjoint per job;
    ESA priorities are scaled to 8 bits over all jobs together, so jobs compare as Eq. 1 says."""
    if pool_size < 1 or pool_size & (pool_size - 1):
        raise ValueError(f"pool size {pool_size}: a power of two")
    if not jobs:
        raise ValueError("deploy_jobs: no jobs")
    jobs, plan, total_elements = expand_multi_ps(jobs, plan, total_elements)
    partition = plan.scheme == "switchml" if partition is None else partition
    multi = len(jobs) > 1
    prio = priority_bytes(plan.extra.get("priority", {}) or {})
    pools = {s: pool_size for s in topo.switches()}
    # which jobs may aggregate at each switch (to split partitioned pools among them only)
    users: dict[str, list[int]] = {}
    for k, j in enumerate(jobs):
        keys = {submodel_key(j, sub, multi) for sub in j.submodels}
        here = {n for w in j.workers for g, n in plan.aggregation_node.get(w, {}).items() if g in keys and n}
        here |= {t for g, fwd in (plan.extra.get("forward_to") or {}).items() if g in keys for t in fwd.values()}
        for s in here:
            users.setdefault(s, []).append(k)
    deps = []
    relayed: dict[tuple[str, str], int] = {}      # copies per link of the results relayed so far
    for k, j in enumerate(jobs):
        if partition:
            # a switch no job aggregates at may still relay results (rule 1: no aggregator)
            slices = {s: (0, pools[s]) for s in topo.switches() if s not in users}
            for s, ks in users.items():
                size = 1 << ((pools[s] // len(ks)).bit_length() - 1)
                slices[s] = (ks.index(k) * size if k in ks else 0, size)
            node_base = 256 * (k + 1)
        else:
            slices, node_base = {s: (0, pools[s]) for s in topo.switches()}, 0
        if len(j.workers) > MAX_WORKERS_PER_GROUP:
            raise ValueError(f"job {j.name}: at most {MAX_WORKERS_PER_GROUP} workers per job")
        deps.append(deploy_plan(topo, j, plan, total_elements=total_elements[j.name], multi_job=multi,
                                node_base=node_base, pools=slices, rid_base=1 + MAX_WORKERS_PER_GROUP * k,
                                priorities=prio.get(j.name, {}), relayed=relayed))
        for ab, n in deps[-1].relayed.items():
            relayed[ab] = relayed.get(ab, 0) + n
    ops: dict[str, list[TableOp]] = {}
    for s in topo.switches():
        seen: set[str] = set()
        merged = []
        for d in deps:                  # the same L3 route or shared node entry once per switch
            for op in d.ops[s]:
                if str(op) not in seen:
                    seen.add(str(op))
                    merged.append(op)
        ops[s] = merged
    used = {n: pools.get(n, pool_size) for d in deps for n in d.node_ids}     # n: a switch or a pipe's unit
    return FabricDeployment(plan.scheme, deps, ops, used)


def _relay_copies(topo: Topology, hops: Mapping[str, Mapping[str, str]], ps: str, node: str,
                  workers: Iterable[str]) -> dict[tuple[str, str], int]:
    """Copies of one result relayed through ``node`` per link: one on each link of a shortest
    path from the PS, one per worker beyond a link of the node's multicast tree (its replicas
    follow the LPM routes)."""
    copies: dict[tuple[str, str], int] = {}
    for w in workers:
        at = node
        while at != w:
            copies[(at, hops[at][w])] = copies.get((at, hops[at][w]), 0) + 1
            at = hops[at][w]
    path = topo.shortest_path(ps, node)
    for ab in zip(path, path[1:]):
        copies[ab] = copies.get(ab, 0) + 1
    return copies


def _relay_load(topo: Topology, hops: Mapping[str, Mapping[str, str]], ps: str, node: str,
                workers: Iterable[str], relayed: Mapping[tuple[str, str], int]) -> tuple[int, int]:
    """What a result relayed through ``node`` puts on the fabric beside the copies other jobs'
    relays put there (``relayed``): the most copies one link then carries, and the links it
    crosses."""
    copies = _relay_copies(topo, hops, ps, node, workers)
    return max((n + relayed.get(ab, 0) for ab, n in copies.items()), default=0), len(copies)


def _relay_only_node(topo: Topology, hops: Mapping[str, Mapping[str, str]], job: Job,
                     levels: Mapping[str, tuple], reach: Mapping[str, set[str]], hold: bool,
                     relayed: Mapping[tuple[str, str], int]) -> str | None:
    """A programmable switch to multicast the PS's results of a job whose plan aggregates in
    the network but has no node holding every worker (ATP, ESA, SwitchML and the routing plans
    when the workers spread over several ToRs): a ``RELAY`` arrives complete and needs no
    aggregator (rule 1), so any programmable switch will do, one the job aggregates at too
    (there the relay is a node of its own); the one whose busiest link carries the fewest
    copies (with those of the jobs deployed before, ``relayed``), then one the job does not
    aggregate at, then whose relays cross the fewest links, is taken. None when the plan
    aggregates nowhere (the plain PS keeps unicast results, as a BytePS-style PS does), already
    multicasts, or no switch qualifies. Where aggregators are held until the result passes back
    (ATP), the relay must be a switch the job does not aggregate at, and every holding level
    must lie on its multicast tree towards each worker it aggregates for, or it would never be
    released."""
    if not levels or any(lv[0] == "to_multicast" for lv in levels.values()):
        return None
    ps = job.ps[0]

    def releases_all(node: str) -> bool:
        return all(n in _downstream(topo, hops, node, w) for n, ws in reach.items() for w in ws)

    candidates = [s for s in topo.programmable_switches() if not hold or (s not in levels and releases_all(s))]
    if not candidates:
        return None

    def rank(n: str) -> tuple[int, bool, int, int]:
        # among equally loaded trees, a switch the job does not aggregate at: the job's own
        # traffic already crosses those it does (InArt's k=6 fat-tree: 0.86 s vs 1.06 s ideal)
        busiest, links = _relay_load(topo, hops, ps, n, job.workers, relayed)
        return busiest, n in levels, links, topo.nodes[n].switch_id
    return min(candidates, key=rank)


def _reminder_pins(topo: Topology, hops: Mapping[str, Mapping[str, str]], ps: str, node: str,
                   host: str) -> dict[str, tuple[int, int]] | None:
    """Pins {switch: (ingress port, egress port)} that take a reminder from ``ps`` along a
    shortest path to ``node`` and then, over the LPM routes, to ``host``; None if that walk
    loops or misses the node."""
    path = topo.shortest_path(ps, node)
    pins = {a: (prev, b) for prev, a, b in zip(path, path[1:-1], path[2:]) if hops[a][host] != b}
    prev, at, seen, passed = ps, path[1], set(), False
    while at != host:
        if (prev, at) in seen:
            return None
        seen.add((prev, at))
        passed |= at == node
        pin = pins.get(at)
        prev, at = at, pin[1] if pin is not None and pin[0] == prev else hops[at][host]
    port = lambda a, b: topo.link(a, b).port_of(a)            # noqa: E731
    return {a: (port(a, p), port(a, b)) for a, (p, b) in pins.items()} if passed else None


def _downstream(topo: Topology, hops: Mapping[str, Mapping[str, str]], s: str, dst: str) -> list[str]:
    """Switches from switch ``s`` to host ``dst`` over the LPM routes (``s`` included)."""
    path = [s]
    while path[-1] != dst:
        path.append(hops[path[-1]][dst])
    return path[:-1]


def aggregator_index(job_id: int, node_id: int, submodel_id: int, fragment_id: int, pool_base: int,
                     pool_size: int) -> int:
    """The aggregator the v1model program gives a fragment at a node: ``pool_base`` + CRC-32 of
    (job id, node id, fragment, sub-model: 16, 16, 32 and 16 bits, big-endian) mod ``pool_size``
    (p4src/v1model/aggregator.p4)."""
    key = (job_id.to_bytes(2, "big") + node_id.to_bytes(2, "big") + fragment_id.to_bytes(4, "big")
           + submodel_id.to_bytes(2, "big"))
    return pool_base + zlib.crc32(key) % pool_size


def node_pools(dep: Deployment) -> dict[int, tuple[int, int]] | None:
    """node id → (pool base, pool size) as ``dep`` installs them; None where a node id has
    pools that differ per pipe (an aggregator then depends on the port a fragment comes in on)."""
    pools: dict[int, set[tuple[int, int]]] = {}
    for ops in dep.ops.values():
        for op in ops:
            if op.method == "add_node":
                kw = dict(op.kwargs)
                pools.setdefault(op.args[0], set()).add((kw["pool_base"], kw["pool_size"]))
    if any(len(p) > 1 for p in pools.values()):
        return None
    return {node: next(iter(p)) for node, p in pools.items()}


def slot_pools(dep: Deployment) -> dict[int, tuple[int, int]] | None:
    """The pools whose aggregators ``dep``'s workers reuse only after their results: SwitchML's
    (its hosts own their slots: a fragment waits for the one before it in the same slot), None
    for every other scheme or where pools differ per pipe."""
    return node_pools(dep) if dep.scheme == "switchml" else None


def slot_function(job_id: int, pools: Mapping[int, tuple[int, int]]) -> Callable[[int, int, int], int]:
    """(node id, sub-model, fragment) → its aggregator at that node (v1model), for a SwitchML
    worker's slot discipline (hostlib.worker.Worker's ``slot_of``); ``pools``: node_pools'."""
    def slot(node_id: int, submodel_id: int, fragment_id: int) -> int:
        base, size = pools[node_id]
        return aggregator_index(job_id, node_id, submodel_id, fragment_id, base, size)
    return slot


def ina_fraction(ps_received: Mapping[str, int], worker_fragments: int) -> float:
    """Share of the workers' first copies that switches aggregated: 1 - (plain + collision
    fragments the PS received) / (fragments all workers sent)."""
    direct = ps_received.get("plain", 0) + ps_received.get("collision", 0)
    return 1.0 - direct / worker_fragments if worker_fragments else 0.0


__all__ = ["TableOp", "apply_ops", "HostAddress", "host_addresses", "next_hops", "lpm_path",
           "Deployment", "deploy_plan", "FabricDeployment", "deploy_jobs", "expand_multi_ps", "PART_JOB_ID_STRIDE", "priority_bytes", "esa_priority_schedule",
           "submodel_elements", "ina_fraction", "DEFAULT_POOL", "aggregator_index", "node_pools", "slot_pools", "slot_function"]
