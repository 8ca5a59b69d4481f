"""The link-rate ideal of an emulated run: the least time a lossless round of a deployed plan
can take when no link moves more than its rate (:func:`link_bounds`), counted on the
in-process twin (emulation.inprocess: the real program and the deployment's tables), beside a
worker's frames back to back on its own host link (:func:`host_link_round_seconds`); each
link's emulated rate (:func:`link_bits_per_s`), and the per-round fan-ins a GOAT-Async
worker's packets carry (:func:`round_fan_ins`). Pure: no Mininet.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from controller.deploy import PART_JOB_ID_STRIDE, Deployment, FabricDeployment
from controller.model import Topology
from hostlib.protocol import HEADER_LEN
from hostlib.worker import DEFAULT_WINDOW

from .agents import UDP_OVERHEAD, layer_release_times, round_labels
from .experiment import JobSpec, link_bits_per_s
from .inprocess import run_jobs as run_inprocess

LANES = 64


def round_fan_ins(dep: Deployment, worker: str, joined: list[list[int]]) -> list[list[int]]:
    """Per round, the fan-in ``worker``'s packets carry for each sub-model: how many of that
    round's participants send the sub-model to the same aggregation node (node 0, the PS: the
    plan's label, which the PS does not use)."""
    out = []
    for ids in joined:
        part = [dep.workers[i] for i in ids]
        row = []
        for g, lab in enumerate(dep.labels[worker]):
            row.append(lab.fan_in if lab.node_id == 0 else
                       sum(1 for p in part if dep.labels[p][g].node_id == lab.node_id))
        out.append(row)
    return out


def spec_of(specs: list[JobSpec], job_id: int) -> JobSpec:
    """The spec of job ``job_id`` (ids 1..n as place_jobs gives them), or of the job a multi-PS
    part (id + k·PART_JOB_ID_STRIDE) belongs to."""
    return specs[job_id % PART_JOB_ID_STRIDE - 1]


def host_link_round_seconds(submodel_sizes: list[int], link_mbps: float, lanes: int = LANES) -> float:
    """A worker's frames (Ethernet + IPv4 + UDP + INA header + lanes) back to back on its own
    host link: the round of a fabric where no link is shared (results.csv's host_link_s and
    ratio_to_host_link; the link-rate ideal is link_bounds')."""
    frames = sum(-(-n // lanes) for n in submodel_sizes)
    return frames * (UDP_OVERHEAD + HEADER_LEN + 4 * lanes) * 8 / (link_mbps * 1e6)


def round_floor(submodel_sizes: list[int], compute: float, link_mbps: float, lanes: int = LANES,
                layered: bool = False) -> float:
    """The least time a round can take, its computation included: the computation, then the
    worker's frames back to back on its own link; a layered worker's (hostlib.layers) sub-models
    go as backpropagation computes them, so the round is at least each one's release time plus
    the link time of it and every sub-model sent after it."""
    if not layered:
        return compute + host_link_round_seconds(submodel_sizes, link_mbps, lanes)
    released = layer_release_times(submodel_sizes, 0.0, compute)           # send order: last layer first
    link = [host_link_round_seconds([n], link_mbps, lanes) for n in reversed(submodel_sizes)]
    return max(t + sum(link[k:]) for k, t in enumerate(released))


@dataclass(frozen=True)
class LinkBound:
    """The link-rate ideal of a job's round."""
    seconds: float            # the busiest link's bytes at its rate (mean over the job's rounds)
    link: str                 # that link in the job's first round, "from→to"
    busiest_bytes: float = 0.0   # what that link carries in a round (mean over the rounds)
    total_bytes: float = 0.0     # what all links carry in a round of the jobs running beside it: the
                                 # frames the machine's switches, hosts and kernel handle (emulation.calibrate)

    def at(self, factor: float) -> "LinkBound":
        """The same traffic on links ``factor`` times slower."""
        return replace(self, seconds=self.seconds * factor)


def link_bounds(topo: Topology, fd: FabricDeployment, specs: list[JobSpec], *, bw_scale: float,
                lanes: int = LANES, window: int = DEFAULT_WINDOW,
                participants: Mapping[int, list[list[int]]] | None = None) -> dict[int, LinkBound]:
    """Per job id, the least time a round can take at link rate: every link the job uses has to
    carry what the deployment puts on it in a lossless round — first copies to their aggregation
    nodes, partials, results multicast or unicast by the PS — and no link moves more than its
    rate. The traffic is counted, not modelled: the in-process twin runs one round through the
    real program and ``fd``'s tables, pools included: a fragment that collides goes on to the
    PS on the links here too, so a plan the pools cannot hold has a longer ideal. Jobs that start together with the same size
    and rounds run their rounds side by side, so a shared link carries all of theirs; any other
    job counts alone. GOAT-Async: each round with its participants, the mean over rounds. A
    worker's own host link (:func:`host_link_round_seconds`) is one of the links, so this is
    never less than that."""
    bits_per_s = link_bits_per_s(topo, bw_scale)
    side_by_side = len({(sp.start, sp.mb, sp.rounds) for sp in specs}) == 1
    groups: dict[int, list[Deployment]] = {}        # jobs whose rounds overlap (a job's parts share its spec)
    for dep in fd.jobs:
        groups.setdefault(0 if side_by_side else dep.job_id % PART_JOB_ID_STRIDE, []).append(dep)
    joined = participants or {}
    traffic: dict[tuple, dict[tuple[str, str, int], int]] = {}     # members → link bytes of one round
    bounds: dict[int, LinkBound] = {}
    for deps in groups.values():
        ids = {d.job_id for d in deps}
        per_round: dict[int, list[tuple[float, str, int, int]]] = {d.job_id: [] for d in deps}
        for rnd in range(spec_of(specs, deps[0].job_id).rounds):
            members = {d.job_id: (joined[d.job_id][rnd] if d.job_id in joined else list(range(len(d.workers))))
                       if d.job_id in ids else [] for d in fd.jobs}
            key = tuple((j, tuple(m)) for j, m in sorted(members.items()))
            if key not in traffic:
                traffic[key] = _round_traffic(topo, fd, members, joined, rnd, lanes, window)
            by_link: dict[tuple[str, str], int] = {}
            for (a, b, _), n in traffic[key].items():
                by_link[(a, b)] = by_link.get((a, b), 0) + n
            for d in deps:
                used = [(a, b) for (a, b, j), n in traffic[key].items() if j == d.job_id and n]
                busiest = max(used, key=lambda ab: by_link[ab] / bits_per_s[ab])
                per_round[d.job_id].append((8 * by_link[busiest] / bits_per_s[busiest], "→".join(busiest),
                                            by_link[busiest], sum(by_link.values())))
        for job_id, rows in per_round.items():
            n = len(rows)
            bounds[job_id] = LinkBound(sum(r[0] for r in rows) / n, rows[0][1], sum(r[2] for r in rows) / n,
                                       sum(r[3] for r in rows) / n)
    return bounds


def _round_traffic(topo: Topology, fd: FabricDeployment, members: Mapping[int, list[int]],
                   joined: Mapping[int, list[list[int]]], rnd: int, lanes: int,
                   window: int) -> dict[tuple[str, str, int], int]:
    """Link bytes of one lossless in-process round of ``fd`` with ``members`` (job → worker ids)
    running; a GOAT-Async job carries round ``rnd``'s fan-ins and its PS expects that round's
    participants. The parts of a job split over several PSes share their workers' hosts, which
    the twin runs one agent each on: they run one after the other and their bytes add up (with a
    pool that never collides, no part changes another's traffic). Raises RuntimeError unless
    every running job completes the round exactly."""
    deps = []
    for dep in fd.jobs:
        if dep.job_id in joined:
            labels = {w: round_labels(dep.labels[w], None, rnd, round_fan_ins(dep, w, joined[dep.job_id]))
                      for w in dep.workers}
            dep = replace(dep, labels=labels, job_config=replace(dep.job_config,
                                                                 participants={0: list(members[dep.job_id])}))
        deps.append(dep)
    batches: list[list[int]] = []           # job ids running together: no worker host twice
    for dep in deps:
        if members[dep.job_id]:
            hosts = {dep.workers[i] for i in members[dep.job_id]}
            batch = next((b for b in batches if not any(hosts & set(d.workers) for d in deps if d.job_id in b)), None)
            if batch is None:
                batches.append(batch := [])
            batch.append(dep.job_id)
    total: dict[tuple[str, str, int], int] = {}
    for batch in batches:
        running = {j: (m if j in batch else []) for j, m in members.items()}
        results = run_inprocess(topo, replace(fd, jobs=deps), rounds={d.job_id: 1 for d in deps}, lanes=lanes,
                                window=window, members=running)
        for dep, res in zip(deps, results):
            if running[dep.job_id] and not (len(res.rounds) == 1 and res.exact):
                raise RuntimeError(f"link bound of {fd.scheme}: job {dep.job_id}'s lossless in-process round "
                                   "did not complete exactly")
        for key, n in results[0].report.link_bytes.items():
            total[key] = total.get(key, 0) + n
    return total
