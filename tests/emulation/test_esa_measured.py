"""ESA's workers relabel their fragments each round with Eq. 1 on what they measured, and the
orchestrator hands them the inputs (rounds, priors) and each job's compute time."""
from __future__ import annotations

from pathlib import Path

import pytest

from controller.esa_priority import JobProgress, priority_byte
from emulation.agents import compute_seconds, job_progress, measured_labels
from emulation.experiment import JobSpec, build_topology, place_jobs
from emulation.jobs import _agent_configs
from emulation.schemes import esa_inputs, prepare_scheme
from hostlib.worker import FragmentLabel

LABELS = [FragmentLabel(3, 2, 9), FragmentLabel(3, 2, 9), FragmentLabel(0, 1, 9), FragmentLabel(5, 4, 9)]


def test_measured_labels_keep_nodes_and_fan_ins_and_rank_front_layers_first() -> None:
    prog = JobProgress(comm_prior=2.0, comp_prior=1.0, rounds_total=2)
    out = measured_labels(LABELS, prog, unit=100.0)
    assert [(l.node_id, l.fan_in) for l in out] == [(l.node_id, l.fan_in) for l in LABELS]
    # T = 2 rounds × 3 s, Comm/Comp 2, L = 4: P(l) = 1/6 × 4/l × 2 = 4/3, 2/3, 4/9, 1/3
    assert [l.priority for l in out] == [133, 67, 44, 33] == [priority_byte(8 / 6 / l, 100.0) for l in (1, 2, 3, 4)]
    assert measured_labels(LABELS, None) == LABELS


def test_priority_rises_as_the_job_nears_its_end_and_with_its_comm_share() -> None:
    prog = job_progress({"rounds": 3, "comm_prior": 1.0, "comp_prior": 1.0})
    first = prog.priority_bytes(4, 50.0)
    prog.record(comp_seconds=1.0, comm_seconds=1.0)
    prog.record(comp_seconds=1.0, comm_seconds=1.0)
    last = prog.priority_bytes(4, 50.0)
    assert all(b > a for a, b in zip(first, last))          # 1 round left instead of 3
    heavy = job_progress({"rounds": 3, "comm_prior": 4.0, "comp_prior": 1.0})
    light = job_progress({"rounds": 3, "comm_prior": 1.0, "comp_prior": 4.0})
    assert heavy.priority_bytes(4, 50.0)[0] > light.priority_bytes(4, 50.0)[0]
    assert job_progress(None) is None


def test_compute_seconds_adds_a_seeded_jitter_per_worker() -> None:
    assert compute_seconds(0.5, 0.0, 7, 0) == 0.5
    a = [compute_seconds(0.5, 0.2, seed, 1) for seed in range(20)]
    assert all(0.5 <= x <= 0.7 for x in a) and len(set(a)) > 1
    assert a == [compute_seconds(0.5, 0.2, seed, 1) for seed in range(20)]     # reproducible
    assert compute_seconds(0.5, 0.2, 3, 1) != compute_seconds(0.5, 0.2, 3, 2)


def test_esa_workers_get_their_jobs_inputs_and_compute_time(tmp_path: Path) -> None:
    topo = build_topology("fattree", k=4, hosts_per_edge=4)
    specs = [JobSpec(0.1, 3, compute=0.4), JobSpec(0.2, 2, compute=0.1)]
    jobs = place_jobs(topo, specs, 4)
    prep = prepare_scheme(topo, jobs, specs, "esa", bw_scale=1000.0, window=8, seed=1, pool=8, log=lambda _: None)
    by_id = {j.job_id: s for j, s in zip(jobs, specs)}
    esa = esa_inputs(prep.deployment, by_id, prep.bounds, jitter=0.2)
    assert esa[1]["rounds"] == 3 and esa[1]["comm_prior"] == prep.bounds[1].seconds
    assert esa[1]["comp_prior"] == pytest.approx(0.5) and esa[2]["comp_prior"] == pytest.approx(0.2)
    # one unit for both jobs: the highest last-round front-layer P of the two maps to 254
    tops = [JobProgress(esa[j]["comm_prior"], esa[j]["comp_prior"], esa[j]["rounds"]).last_round_priority(4)
            for j in (1, 2)]
    assert esa[1]["unit"] == esa[2]["unit"] == pytest.approx(254 / max(tops))
    cfgs = _agent_configs(prep.deployment, tmp_path, window=8, seeds=[[1, 2, 3, 4], [5, 6, 7, 8]], timeout=10.0,
                          rto=None, rounds={1: 3, 2: 2}, starts={1: 0.0, 2: 0.0}, priorities={},
                          compute={1: 0.4, 2: 0.1}, jitter=0.2, esa=esa)
    for dep in prep.deployment.jobs:
        for w in dep.workers:
            role, cfg = cfgs[w]
            assert role == "worker" and cfg["compute"] == by_id[dep.job_id].compute and cfg["jitter"] == 0.2
            assert cfg["parts"][0]["esa"] == esa[dep.job_id]
