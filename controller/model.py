"""Inputs and outputs of the control-plane algorithms: topology, job, plan.

Algorithms are pure functions ``(Topology, Job(s), options) -> Plan``. Everything here
round-trips through JSON (schemas in docs/controller-schemas.md); units are explicit in names:
capacities in Gb/s, memory in bytes (aggregator memory) or aggregator slots where a name says
``_slots``, sizes in MB (10^6 bytes) as the papers give model sizes.
"""
from __future__ import annotations

import json
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal

NodeKind = Literal["host", "switch"]


class ModelError(ValueError):
    """A topology, job or plan file is malformed; the message names the file and the field."""


def _bad_input(source: str, e: Exception) -> ModelError:
    """One clear line for a malformed file (a ModelError already says what is wrong)."""
    if isinstance(e, ModelError):
        return e
    if isinstance(e, KeyError):
        return ModelError(f"{source}: missing field {e}")
    return ModelError(f"{source}: bad field: {e}")


@dataclass
class Node:
    name: str
    kind: NodeKind
    role: str = ""                  # "core", "aggregation", "edge", "spine", "leaf", "worker", "ps"...
    programmable: bool = False      # can aggregate in the data plane
    memory_bytes: int = 0           # aggregator memory (0 for hosts and plain switches)
    pipelines: int = 1              # INP pipelines (ARO); ports map to pipes with port_pipe
    port_pipe: dict[int, int] = field(default_factory=dict)
    capacity_gbps: float = 0.0      # aggregation processing capacity (0: unlimited / not INA)
    switch_id: int = 0              # data-plane id (GOAT aggregation-node id); 0 for hosts


@dataclass
class Link:
    a: str
    b: str
    capacity_gbps: float
    a_port: int = 0
    b_port: int = 0

    def other(self, n: str) -> str:
        return self.b if n == self.a else self.a

    def port_of(self, n: str) -> int:
        return self.a_port if n == self.a else self.b_port


@dataclass
class Topology:
    name: str
    nodes: dict[str, Node]
    links: list[Link]
    meta: dict[str, Any] = field(default_factory=dict)   # generator parameters, seed, tier order

    def __post_init__(self) -> None:
        self._adj: dict[str, list[Link]] = {n: [] for n in self.nodes}
        for l in self.links:
            if l.a not in self.nodes or l.b not in self.nodes:
                raise ModelError(f"topology {self.name}: link {l.a}-{l.b} names an unknown node")
            self._adj[l.a].append(l)
            self._adj[l.b].append(l)

    # ------------------------------------------------------------------ queries
    def hosts(self) -> list[str]:
        return [n for n, v in self.nodes.items() if v.kind == "host"]

    def switches(self) -> list[str]:
        return [n for n, v in self.nodes.items() if v.kind == "switch"]

    def programmable_switches(self) -> list[str]:
        return [n for n, v in self.nodes.items() if v.kind == "switch" and v.programmable]

    def links_of(self, n: str) -> list[Link]:
        return self._adj[n]

    def neighbors(self, n: str) -> list[str]:
        return [l.other(n) for l in self._adj[n]]

    def link(self, a: str, b: str) -> Link:
        for l in self._adj[a]:
            if l.other(a) == b:
                return l
        raise KeyError(f"no link {a}-{b}")

    def shortest_path(self, src: str, dst: str, avoid_hosts: bool = True) -> list[str]:
        """A BFS shortest path (deterministic: neighbours in link order); hosts are not transit."""
        prev: dict[str, str | None] = {src: None}
        q = deque([src])
        while q:
            u = q.popleft()
            if u == dst:
                break
            for v in self.neighbors(u):
                if v in prev:
                    continue
                if avoid_hosts and self.nodes[v].kind == "host" and v != dst:
                    continue
                prev[v] = u
                q.append(v)
        if dst not in prev:
            raise KeyError(f"no path {src} -> {dst}")
        path = [dst]
        while path[-1] != src:
            path.append(prev[path[-1]])  # type: ignore[arg-type]
        return path[::-1]

    def tor_of(self, host: str) -> str:
        """The switch a host attaches to (first switch neighbour)."""
        for v in self.neighbors(host):
            if self.nodes[v].kind == "switch":
                return v
        raise KeyError(f"host {host} has no switch neighbour")

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "meta": self.meta,
                "nodes": [asdict(v) for v in self.nodes.values()],
                "links": [asdict(l) for l in self.links]}

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "<topology>") -> "Topology":
        try:
            nodes = {}
            for nd in d["nodes"]:
                nd = dict(nd)
                nd["port_pipe"] = {int(k): int(v) for k, v in nd.get("port_pipe", {}).items()}
                n = Node(**nd)
                if n.kind not in ("host", "switch"):
                    raise ModelError(f"{source}: node {n.name}: kind must be 'host' or 'switch'")
                if n.name in nodes:
                    raise ModelError(f"{source}: node {n.name} is declared twice")
                nodes[n.name] = n
            links = [Link(**ld) for ld in d["links"]]
            try:
                topo = cls(d.get("name", Path(source).stem), nodes, links, d.get("meta", {}))
            except ModelError as e:
                raise ModelError(f"{source}: {str(e).split(': ', 1)[-1]}") from None
            topo.validate(source)
            return topo
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise _bad_input(source, e) from None

    def validate(self, source: str = "<topology>") -> None:
        """Type checks JSON cannot express (a string capacity would load silently otherwise)."""
        for n in self.nodes.values():
            _need(isinstance(n.name, str) and n.name != "", source, f"node name {n.name!r} must be a non-empty string")
            _need(_is_num(n.memory_bytes) and n.memory_bytes >= 0, source, f"node {n.name}: memory_bytes must be >= 0")
            _need(_is_num(n.capacity_gbps) and n.capacity_gbps >= 0, source, f"node {n.name}: capacity_gbps must be >= 0")
            _need(isinstance(n.pipelines, int) and n.pipelines >= 1, source, f"node {n.name}: pipelines must be an integer >= 1")
            _need(isinstance(n.programmable, bool), source, f"node {n.name}: programmable must be true/false")
            _need(isinstance(n.switch_id, int), source, f"node {n.name}: switch_id must be an integer")
            for port, pipe in n.port_pipe.items():
                _need(0 <= pipe < n.pipelines, source, f"node {n.name}: port {port} maps to pipe {pipe} outside 0..{n.pipelines - 1}")
        for l in self.links:
            _need(_is_num(l.capacity_gbps) and l.capacity_gbps > 0, source, f"link {l.a}-{l.b}: capacity_gbps must be > 0")
            _need(isinstance(l.a_port, int) and isinstance(l.b_port, int), source, f"link {l.a}-{l.b}: ports must be integers")
            _need(l.a != l.b, source, f"link {l.a}-{l.b} is a self-loop")

    # ------------------------------------------------------------------ helpers for algorithms
    def hop_distances(self, src: str) -> dict[str, int]:
        """Hop count from src to every reachable node (BFS; hosts other than src are not transit)."""
        dist = {src: 0}
        q = deque([src])
        while q:
            u = q.popleft()
            if u != src and self.nodes[u].kind == "host":
                continue
            for v in self.neighbors(u):
                if v not in dist:
                    dist[v] = dist[u] + 1
                    q.append(v)
        return dist

    def shortest_paths(self, src: str, dst: str, limit: int = 1024) -> list[list[str]]:
        """All shortest src->dst paths (hosts not transit), in deterministic order, at most `limit`."""
        to_dst = self.hop_distances(dst)
        if src not in to_dst:
            raise KeyError(f"no path {src} -> {dst}")
        out: list[list[str]] = []

        def walk(path: list[str]) -> None:
            if len(out) >= limit:
                return
            u = path[-1]
            if u == dst:
                out.append(list(path))
                return
            for v in self.neighbors(u):
                if to_dst.get(v) == to_dst[u] - 1 and (v == dst or self.nodes[v].kind == "switch"):
                    path.append(v)
                    walk(path)
                    path.pop()

        walk([src])
        return out

    def tier_level(self, n: str) -> int | None:
        """Position of a node's tier in meta["tiers"] (hosts 0, ToR 1, ...); None without tiers."""
        tiers = self.meta.get("tiers")
        if not tiers:
            return None
        node = self.nodes[n]
        if node.kind == "host":
            return 0
        return tiers.index(node.role) if node.role in tiers else None

    def port_pipe_of(self, switch: str, port: int) -> int:
        """Ingress pipe of a port (0 on single-pipe switches or unmapped ports)."""
        node = self.nodes[switch]
        return node.port_pipe.get(port, 0) if node.pipelines > 1 else 0


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _need(cond: bool, source: str, msg: str) -> None:
    if not cond:
        raise ModelError(f"{source}: {msg}")


def task_key(job: "Job", ps: str) -> str:
    """Name of the aggregation task (ARO §III-B) of `job` towards parameter server `ps`.

    A single-PS job's task is named like the job; a multi-PS job has one task per PS, "job/ps".
    Plans key ``paths`` and ``rates`` by these names (the checker also accepts a bare PS name
    when that PS serves a single job of the plan)."""
    return job.name if len(job.ps) == 1 else f"{job.name}/{ps}"


def submodel_key(job: "Job", sub: "SubModel", multi_job: bool) -> str:
    """Key of a sub-model in ``submodel_switches`` / ``aggregation_node``: its name, or "job/name"
    when the plan covers several jobs (the checker accepts both forms where unambiguous)."""
    return f"{job.name}/{sub.name}" if multi_job else sub.name


@dataclass
class SubModel:
    name: str
    size_mb: float                  # gradient size of this sub-model (MB)


@dataclass
class Job:
    name: str
    workers: list[str]
    ps: list[str]                   # parameter servers (InArt may use several)
    submodels: list[SubModel]
    model: str = ""                 # model profile name, e.g. "resnet50"
    priority: int = 0               # ESA: static part of the priority
    job_id: int = 1                 # data-plane job id
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def total_mb(self) -> float:
        return sum(s.size_mb for s in self.submodels)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "<job>") -> "Job":
        try:
            subs = [SubModel(**s) for s in d["submodels"]]
            rest = {k: v for k, v in d.items() if k != "submodels"}
            job = cls(submodels=subs, **rest)
            job.validate(source=source)
            return job
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise _bad_input(source, e) from None

    def validate(self, topology: "Topology | None" = None, source: str = "<job>") -> None:
        """Field types, and (with a topology) that workers and PSs are distinct hosts in it."""
        _need(isinstance(self.name, str) and self.name != "", source, "job name must be a non-empty string")
        _need(isinstance(self.workers, list) and all(isinstance(w, str) for w in self.workers),
              source, f"job {self.name}: workers must be a list of host names")
        _need(isinstance(self.ps, list) and len(self.ps) >= 1 and all(isinstance(p, str) for p in self.ps),
              source, f"job {self.name}: ps must be a non-empty list of host names")
        _need(len(self.submodels) >= 1, source, f"job {self.name}: needs at least one sub-model")
        names = [s.name for s in self.submodels]
        _need(len(set(names)) == len(names), source, f"job {self.name}: sub-model names repeat")
        for s in self.submodels:
            _need(_is_num(s.size_mb) and s.size_mb > 0, source, f"job {self.name}: sub-model {s.name}: size_mb must be > 0")
        _need(len(set(self.workers)) == len(self.workers), source, f"job {self.name}: a worker is listed twice")
        _need(not set(self.workers) & set(self.ps), source, f"job {self.name}: a host is both worker and PS")
        if topology is not None:
            for h in self.workers + self.ps:
                node = topology.nodes.get(h)
                _need(node is not None and node.kind == "host", source,
                      f"job {self.name}: {h} is not a host of topology {topology.name}")


@dataclass
class Plan:
    """What a scheme decided. Fields not used by a scheme stay empty."""
    scheme: str
    jobs: list[str]
    # GOAT: sub-model -> switches that aggregate it (x); worker -> sub-model -> node or None (y)
    submodel_switches: dict[str, list[str]] = field(default_factory=dict)
    aggregation_node: dict[str, dict[str, str | None]] = field(default_factory=dict)
    # routing schemes: task -> worker -> node list (worker ... PS), task -> rate (Gb/s)
    paths: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)
    # InArt: PS -> fraction of the model it owns
    split: dict[str, float] = field(default_factory=dict)
    objective: float | None = None
    bound: float | None = None      # LP relaxation / upper or lower bound where one exists
    status: str = "unknown"         # "optimal", "feasible", "heuristic", "infeasible", ...
    solve_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "<plan>") -> "Plan":
        if not isinstance(d, dict):
            raise ModelError(f"{source}: a plan must be a JSON object")
        try:
            return cls(**d)
        except TypeError as e:
            raise ModelError(f"{source}: bad field: {e}") from None


def load_json(path: str | Path) -> Any:
    p = Path(path)
    try:
        return json.loads(p.read_text())
    except OSError as e:
        raise ModelError(f"{p}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ModelError(f"{p}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None


def save_json(obj: Any, path: str | Path) -> None:
    Path(path).write_text(json.dumps(obj, indent=2, sort_keys=False) + "\n")


def load_topology(path: str | Path) -> Topology:
    return Topology.from_dict(load_json(path), str(path))


def load_job(path: str | Path) -> Job:
    return Job.from_dict(load_json(path), str(path))


def load_jobs(path: str | Path) -> list[Job]:
    """A job file holds one job object or a list of them (multi-job schemes: ESA, ARO MJMT)."""
    d = load_json(path)
    items: Iterable[dict[str, Any]] = d if isinstance(d, list) else [d]
    jobs = [Job.from_dict(x, str(path)) for x in items]
    if not jobs:
        raise ModelError(f"{path}: no job in the file")
    if len({j.name for j in jobs}) != len(jobs):
        raise ModelError(f"{path}: job names repeat")
    return jobs


def load_plan(path: str | Path) -> Plan:
    return Plan.from_dict(load_json(path), str(path))
