"""Model profiles (gradient sizes as the papers give them) and Job construction.

Sizes are MB (10^6 bytes) of one worker's gradient per iteration. Where a paper gives the
number, its section is cited; the few not in any paper are parameter count x 4 bytes (fp32),
from the torchvision/HuggingFace parameter counts, and say so.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Sequence

from .model import Job, SubModel, Topology


@dataclass(frozen=True)
class Profile:
    name: str
    size_mb: float
    source: str
    meta: dict[str, Any] = field(default_factory=dict)


PROFILES: dict[str, Profile] = {p.name: p for p in [
    Profile("resnet18", 44.0, "GOAT §VII-B (testbed workload) and slides"),
    Profile("resnet34", 87.2, "not in the papers (GOAT Fig. 5 names it): 21.8 M params x 4 B"),
    Profile("resnet50", 98.0, "GOAT §III-B, §VII-B and slides"),
    Profile("resnet50-inart", 97.0, "InArt §5.2.1 (its ResNet-50 size; 97 KB scaled in §5.3.1)"),
    Profile("vgg16", 528.0, "GOAT slides ('VGG-16: 528MB'); ESA §6 uses VGG16 without a size"),
    Profile("vgg19", 548.0, "InArt §5.2.1 (548 KB scaled in §5.3.1)"),
    Profile("alexnet", 221.0, "GOAT §VII-D: each simulated worker sends 221 MB, 'the gradient size of AlexNet'"),
    Profile("lstm", 1627.0, "InArt §5.3.1: 1627 KB after the 1000x scale-down"),
    Profile("bert", 440.0, "InArt §1: BERT ~110 M parameters, x 4 B; GOAT §IV-D: ~2 MB per PyTorch sub-model",
            {"typical_submodel_mb": 2.0}),
    Profile("densenet121", 31.9, "not in the papers (GOAT Fig. 5 names it): 7.98 M params x 4 B"),
    Profile("densenet169", 56.6, "not in the papers (GOAT Fig. 5 names it): 14.15 M params x 4 B"),
    Profile("densenet201", 80.1, "not in the papers (GOAT Fig. 5 names it): 20.01 M params x 4 B"),
    # ESA §7.2 simulation DNNs: two equal layers, each split into two tensor partitions.
    Profile("esa-dnn-a", 16.0, "ESA §7.2: DNN A, 4 partitions of 4 MB, 0.32 ms compute per layer",
            {"partitions": 4, "compute_ms_per_layer": 0.32, "layers": 2}),
    Profile("esa-dnn-b", 8.0, "ESA §7.2: DNN B, 4 partitions of 2 MB, 0.64 ms compute per layer",
            {"partitions": 4, "compute_ms_per_layer": 0.64, "layers": 2}),
]}

# InArt §5.3.1 shrinks every size (and rate) by this factor for bmv2.
INART_EMULATION_SCALE = 1e-3


def profile(name: str) -> Profile:
    try:
        return PROFILES[name.lower()]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(sorted(PROFILES))}") from None


def split_sizes(total_mb: float, n: int | None = None, sizes: Sequence[float] | None = None, *,
                mode: str = "equal", seed: int = 0) -> list[float]:
    """Sizes of the sub-models a model is partitioned into (GOAT §III-B: by layers or finer).

    ``sizes`` given: used as is (they define the model size). Otherwise ``n`` parts, "equal"
    or "random" (seeded, each part at least a quarter of the mean, so no part is empty)."""
    if sizes is not None:
        if not sizes or any(s <= 0 for s in sizes):
            raise ValueError("sub-model sizes must be positive")
        return [float(s) for s in sizes]
    if n is None or n < 1:
        raise ValueError("number of sub-models must be >= 1")
    if mode == "equal":
        return [total_mb / n] * n
    if mode == "random":
        rng = random.Random(seed)
        w = [0.25 + rng.random() for _ in range(n)]
        return [total_mb * x / sum(w) for x in w]
    raise ValueError(f"unknown split mode {mode!r} (equal, random)")


def select_hosts(topology: Topology, spec: str, *, exclude: Sequence[str] = (), role: str = "",
                 seed: int = 0) -> list[str]:
    """Hosts named by a selection spec, in topology order unless drawn at random.

    * ``"auto"``: hosts whose role is ``role`` if any, else every host not excluded;
    * ``"all"`` / ``"all-but-ps"``: every host not excluded;
    * ``"N"`` or ``"random:N"``: N hosts drawn with ``seed`` among those not excluded;
    * ``"first:N"`` / ``"last:N"``: the first / last N of those not excluded;
    * ``"a,b,c"``: exactly these hosts."""
    pool = [h for h in topology.hosts() if h not in set(exclude)]
    spec = spec.strip()
    if spec == "auto":
        tagged = [h for h in pool if role and topology.nodes[h].role == role]
        return tagged or pool
    if spec in ("all", "all-but-ps"):
        return pool
    kind, _, count = spec.partition(":")
    if kind.isdigit() and not count:
        kind, count = "random", kind
    if kind in ("random", "first", "last"):
        if not count.isdigit():
            raise ValueError(f"host selection {spec!r}: expected {kind}:N")
        n = int(count)
        if n > len(pool):
            raise ValueError(f"host selection {spec!r}: only {len(pool)} hosts available")
        if kind == "first":
            return pool[:n]
        if kind == "last":
            return pool[len(pool) - n:]
        picked = set(random.Random(seed).sample(pool, n))
        return [h for h in pool if h in picked]
    names = [x.strip() for x in spec.split(",") if x.strip()]
    bad = [h for h in names if h not in topology.nodes or topology.nodes[h].kind != "host"]
    if bad:
        raise ValueError(f"host selection: {', '.join(bad)} not hosts of {topology.name}")
    return names


def make_job(topology: Topology, model: str, *, workers: str | Sequence[str] = "auto",
             ps: str | Sequence[str] = "auto", submodels: int = 1,
             sizes: Sequence[float] | None = None, split: str = "equal", scale: float = 1.0,
             name: str | None = None, job_id: int = 1, priority: int = 0, seed: int = 0,
             exclude: Sequence[str] = ()) -> Job:
    """A Job on `topology`: the PS(s) are chosen first, then the workers among the other hosts.

    ``ps="auto"`` takes hosts with role "ps" (testbeds) or else the last host; ``workers="auto"``
    takes hosts with role "worker" or else all remaining ones. ``scale`` multiplies sizes
    (InArt emulation: ``INART_EMULATION_SCALE``). ``exclude`` keeps hosts of other jobs out.
    Sub-models are named g0, g1, ...; a profile's meta goes into ``job.meta``."""
    prof = profile(model)
    if isinstance(ps, str):
        ps_list = (select_hosts(topology, "last:1", exclude=exclude)
                   if ps == "auto" and not any(topology.nodes[h].role == "ps" for h in topology.hosts())
                   else select_hosts(topology, ps, exclude=exclude, role="ps", seed=seed))
    else:
        ps_list = list(ps)
    if isinstance(workers, str):
        w_list = select_hosts(topology, workers, exclude=list(exclude) + ps_list, role="worker", seed=seed + 1)
    else:
        w_list = list(workers)
    if not ps_list or not w_list:
        raise ValueError("a job needs at least one PS and one worker")
    parts = split_sizes(prof.size_mb * scale, submodels if sizes is None else None,
                        None if sizes is None else [s * scale for s in sizes], mode=split, seed=seed)
    subs = [SubModel(f"g{i}", round(s, 9)) for i, s in enumerate(parts)]
    meta = dict(prof.meta, profile_mb=prof.size_mb, scale=scale, source=prof.source)
    job = Job(name or f"{prof.name}-{job_id}", w_list, ps_list, subs, model=prof.name,
              priority=priority, job_id=job_id, meta=meta)
    job.validate(topology)
    return job


def submodels_needed(model_mb: float, memory_bytes: int) -> int:
    """Switches needed to hold a whole model (GOAT §III-B: ResNet-50 98 MB on 64 MB -> 2;
    §VII-B: 44 MB / 98 MB on ~20 MB -> 3 / 5)."""
    return math.ceil(model_mb * 1e6 / memory_bytes)
