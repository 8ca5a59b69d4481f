"""ESA §7.2 simulation (experiments/esa_jct.py, experiments/esa_model.py): the switch rules
of §5.2/§5.4 on their own, how a partial left in the switch is noticed and drained (ESA's
reminders, ATP's resends), ATP's hold-until-result rule, and whole runs."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest

from experiments.esa_jct import (DNN_A, DNN_B, SCHEMES, AggregatorPool, SimConfig, Simulator,
                                 encode_priority, esa_priority, run_sweep, simulate, summarize,
                                 Point, plot)


# ----------------------------------------------------------------------------- switch rules
def test_claim_aggregate_and_release():
    pool = AggregatorPool(4, "esa")
    assert pool.offer(1, "T", 10).kind == "claim"
    assert pool.offer(1, "T", 12).kind == "aggregate"
    assert (pool.count[1], pool.prio[1]) == (2, 12)          # priority renewal on aggregation
    assert pool.release(1, "U") == 0 and pool.holder[1] == "T"  # only the holder frees it
    assert pool.release(1, "T") == 2 and pool.holder[1] is None


def test_failed_preemption_halves_the_holders_priority():
    pool = AggregatorPool(1, "esa")
    pool.offer(0, "T", 40)
    for expect in (20, 10, 5, 2, 1, 0):
        out = pool.offer(0, "U", 5 if expect >= 5 else 0)    # never strictly higher here
        assert out.kind == "fallback" and out.evicted is None
        assert pool.prio[0] == expect and pool.holder[0] == "T"
    # once downgraded below the newcomer, the newcomer wins
    assert pool.offer(0, "U", 1).kind == "preempt"


def test_preemption_swaps_out_exactly_the_evicted_partial():
    pool = AggregatorPool(2, "esa")
    for _ in range(3):
        pool.offer(0, "T", 8)                                # T has summed 3 contributions
    pool.offer(1, "X", 200)                                  # another block is untouched
    out = pool.offer(0, "U", 9)
    assert out.kind == "preempt" and out.evicted == ("T", 3)
    assert (pool.holder[0], pool.count[0], pool.prio[0]) == ("U", 1, 9)
    assert (pool.holder[1], pool.count[1], pool.prio[1]) == ("X", 1, 200)


def test_atp_and_straw_men_rules():
    atp = AggregatorPool(1, "atp")
    atp.offer(0, "T", 0)
    assert atp.offer(0, "U", 255).kind == "fallback" and atp.holder[0] == "T"   # FCFS
    s1 = AggregatorPool(1, "straw1")
    s1.offer(0, "T", 0)
    assert s1.offer(0, "U", 0).evicted == ("T", 1)
    s2 = AggregatorPool(1, "straw2", random.Random(1))
    kinds = []
    for i in range(400):
        s2.holder[0], s2.count[0] = "T", 1
        kinds.append(s2.offer(0, f"U{i}", 0).kind)
    assert 0.4 < kinds.count("preempt") / len(kinds) < 0.6


def test_priority_formula():
    # §5.4 Eq. (1): front layers, communication-heavy models, short remaining time go first
    a1 = esa_priority(2.0, 2, 1, DNN_A.comm_comp(100))
    assert DNN_A.comm_comp(100) == pytest.approx(2.0) and DNN_B.comm_comp(100) == pytest.approx(0.5)
    assert a1 == pytest.approx(1 / 2 * 2 / 1 * 2)
    assert a1 > esa_priority(2.0, 2, 2, DNN_A.comm_comp(100)) > esa_priority(2.0, 2, 2, DNN_B.comm_comp(100))
    assert esa_priority(0.5, 2, 1, 2.0) > a1
    assert encode_priority(1e9) == 255 and encode_priority(0.0) == 1
    assert encode_priority(a1) == round(a1 * 64)


# ----------------------------------------------------------------------------- simulation
# 4 jobs x 4 workers on 2.5 MB: the same memory per job (0.625 MB, under the 1 MB
# bandwidth-delay product) as the paper's 8 jobs on 5 MB.
SMALL = SimConfig(n_jobs=4, workers=4, memory_mb=2.5, chunk_packets=256, iterations=2)


def test_every_task_completes_exactly_once():
    for scheme in SCHEMES:
        sim = Simulator(SMALL, scheme)
        res = sim.run()
        total = sum(SMALL.iterations * sim._iter_chunks(j.dnn) for j in sim.jobs)
        assert res.stats["switch_done"] + res.stats["ps_done"] == total
        assert all(not j.tasks for j in sim.jobs)
        if scheme == "switchml":
            assert res.stats["ps_pieces"] == 0
        if scheme == "atp":
            assert res.stats["preempt"] == 0 and res.stats["switch_done"] == 0
        assert all(0 < u <= 1 for u in res.utilization)


def test_deterministic():
    a, b = simulate(SMALL, "esa"), simulate(SMALL, "esa")
    assert a.jct_us == b.jct_us and a.stats == b.stats


def _one_block(scheme: str) -> tuple[Simulator, "object"]:
    """1 job x 2 workers on a single aggregator block; the workers send nothing by themselves
    (the test injects contributions)."""
    cfg = SimConfig(n_jobs=1, workers=2, memory_mb=64 * 256 / 1e6, chunk_packets=64)
    sim = Simulator(cfg, scheme)
    assert cfg.blocks == 1
    job = sim.jobs[0]
    for wk in job.workers:
        wk.chunk = 10**9
    return sim, job


def _stuck_partial(scheme: str) -> tuple[Simulator, "object"]:
    """Worker 0's contribution to chunk 0 collides with another job's task and goes to the
    PS; the block is then freed and worker 1's contribution claims it: a partial nothing
    will complete, and nothing tells the switch that both contributions have arrived."""
    sim, job = _one_block(scheme)
    sim.pool.offer(0, "other", 255)
    sim.at(10.0, sim._arrive, job, 0, 1, 1)
    sim.at(20.0, sim.pool.release, 0, "other")
    sim.at(30.0, sim._arrive, job, 0, 1, 1)
    return sim, job


@pytest.mark.parametrize("scheme", ["esa", "atp"])
def test_a_leftover_partial_waits_for_loss_detection(scheme):
    """No oracle: with no later traffic, only an RTO (ESA §6: at least 1 ms) reveals the
    missing result; until then the partial holds its aggregator."""
    sim, job = _stuck_partial(scheme)
    sim.run_until(900.0)
    task = job.tasks[0]
    assert sim.pool.holder[0] is task and task.at_switch == 1 and task.at_ps == 1
    assert sim.stats["flushed"] == 0 and not task.done
    sim.run_until(1100.0)
    assert sim.stats["timeout"] == 1 and sim.stats["flushed"] == 1 and task.done
    assert sim.pool.holder[0] is None
    if scheme == "atp":       # every worker that sent it retransmits (ATP's resend bit)
        assert sim.stats["resend"] == 2 and sim.stats["ps_pieces"] == 1 + 2
    else:                     # a header-only reminder drains the partial
        assert sim.stats["resend"] == 0 and sim.stats["ps_pieces"] == 2


def test_esa_ps_reminds_after_three_later_packets():
    """ESA's PS "dupACK" (§5.1): three packets of later fragments reach the PS while the
    entry waits; one 64-packet chunk is enough."""
    sim, job = _stuck_partial("esa")
    sim.at(40.0, sim._arrive, job, 1, 1, 1)      # chunk 1 collides (priority not higher)
    sim.run_until(100.0)
    assert sim.stats["ps_dupack"] == 1 and sim.stats["flushed"] == 1
    assert 0 not in job.tasks and sim.stats["timeout"] == 0


def test_worker_dupack_reminder_after_a_later_result():
    """A result of a later chunk reaching the workers reveals the stuck one at once."""
    sim, job = _stuck_partial("esa")
    sim.run_until(35.0)
    later = sim._task(job, 5, 1)
    job.tasks[5] = later
    sim._results(job, later)                    # chunk 5's result arrives first
    assert sim.stats["dupack"] == 1
    sim.run_until(100.0)
    assert sim.stats["flushed"] == 1 and 0 not in job.tasks


@pytest.mark.parametrize("scheme", ["esa", "atp"])
def test_release_of_a_complete_aggregate(scheme):
    """ATP forwards a complete aggregate to the PS and frees the aggregator only when the
    PS's result passes back through the switch (ESA §2.1-2.2); ESA multicasts and frees it
    at once."""
    sim, job = _one_block(scheme)
    sim.at(10.0, sim._arrive, job, 0, 1, 1)
    sim.at(11.0, sim._arrive, job, 0, 1, 1)
    sim.run_until(11.0)
    if scheme == "esa":
        assert sim.pool.holder[0] is None and sim.stats["switch_done"] == 1
        return
    task = job.tasks[0]
    assert sim.pool.holder[0] is task and task.held and sim.stats["switch_done"] == 0
    chunk, hop = sim.cfg.chunk_us, sim.prop
    sim.run_until(11.0 + 2 * (chunk + hop) - 1e-6)    # to the PS and back
    assert sim.pool.holder[0] is task and sim.stats["ps_done"] == 1
    sim.run_until(11.0 + 2 * (chunk + hop) + 1e-6)
    assert sim.pool.holder[0] is None


def test_every_scheme_runs_on_a_contended_instance():
    """Whole runs on 3 seeds finish, with the recovery each scheme has."""
    for seed in range(3):
        for s in SCHEMES:
            r = simulate(replace(SMALL, seed=seed), s)
            assert r.avg_jct_us > 0
            if s == "switchml":
                assert r.stats["flushed"] == r.stats["resend"] == r.stats["ps_pieces"] == 0
            if s == "atp":
                assert r.stats["ps_dupack"] == r.stats["ps_timeout"] == 0


def test_report_and_plot(tmp_path):
    rows = run_sweep([Point("A", 2, 2, 0), Point("A", 2, 4, 0)],
                     replace(SMALL, iterations=1), progress=False)
    assert len(rows) == 2 * len(SCHEMES)
    md = summarize(rows, SMALL, quick=True)
    assert "Largest ESA speedup" in md and "1.89x" in md
    plot(rows, tmp_path / "esa.png")
    assert (tmp_path / "esa.png").stat().st_size > 0
