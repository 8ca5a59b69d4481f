"""The training example end to end on Mininet: 2 workers × 3 steps of torch DDP whose gradient
buckets cross p4sim switches as INA fragments (GOAT plan installed over P4Runtime), every
step's INA mean checked against gloo's mean of the same local gradients, then the same
training with gloo over the same hosts. Skipped when not root or without Mininet."""
from __future__ import annotations

from pathlib import Path

from mininet_guard import require_mininet, running_net

require_mininet()

from controller.deploy import ina_fraction  # noqa: E402
from emulation.install import install  # noqa: E402
from emulation.train import fragments_sent, ina_job, plan_and_deploy, run_jobs, run_mode, setup  # noqa: E402
from training.train_digits import ModelSpec  # noqa: E402

STEPS = 3


def test_two_workers_train_through_p4sim_switches_like_gloo(tmp_path: Path) -> None:
    topo, jobs = setup(2, k=2, hosts_per_edge=2, programmable=1.0)
    fd = plan_and_deploy(topo, jobs, "goat")
    dep = fd.jobs[0]
    assert dep.ina_switches, "GOAT placed no sub-model on a switch"
    with running_net(topo, tmp_path / "logs") as net:
        assert install(net, fd.ops) > 0
        spec = ina_job(dep)
        extra = ["--timeout", "60"]
        ina = run_mode(net, dep, spec, "ina", tmp_path / "runs", steps=STEPS, verify=True, timeout=80, extra=extra)
        gloo = run_mode(net, dep, spec, "gloo", tmp_path / "runs", steps=STEPS, timeout=60, extra=extra)
    for ranks in (ina["rows"], gloo["rows"]):
        assert [len(r) for r in ranks] == [STEPS, STEPS]
    for rank in ina["rows"]:
        for row in rank:
            assert 0 <= row["grad_ratio"] <= 1.0, row          # within the rounding bound of gloo
    assert [r["loss"] for r in ina["rows"][0]] == [r["loss"] for r in ina["rows"][1]]
    assert ina["rows"][0][0]["loss"] == gloo["rows"][0][0]["loss"]
    # the switches did the aggregation: the PS completed nothing that arrived plain
    assert [w["rounds"] for w in ina["workers"]] == [2 * STEPS] * 2      # scale + values, per step
    frags = fragments_sent(ina)
    assert ina_fraction(ina["ps"]["received"], frags) > 0.9, ina["ps"]
    assert ina["ps"]["incomplete"] == 0


def test_training_through_lossy_switches_matches_gloo(tmp_path: Path) -> None:
    """2 % loss on every switch port: INA recovers every fragment (retransmissions happen) and
    each step's INA mean stays within the rounding bound of gloo's; gloo (TCP) trains the same."""
    topo, jobs = setup(2, k=2, hosts_per_edge=2, programmable=1.0)
    fd = plan_and_deploy(topo, jobs, "goat")
    dep = fd.jobs[0]
    with running_net(topo, tmp_path / "logs", drop_rate=0.02, seed=5) as net:
        assert install(net, fd.ops) > 0
        spec = ina_job(dep)
        extra = ["--timeout", "60"]
        ina = run_mode(net, dep, spec, "ina", tmp_path / "runs", steps=STEPS, verify=True, timeout=120, extra=extra)
        gloo = run_mode(net, dep, spec, "gloo", tmp_path / "runs", steps=STEPS, timeout=120, extra=extra)
    for rank in ina["rows"]:
        assert len(rank) == STEPS
        for row in rank:
            assert 0 <= row["grad_ratio"] <= 1.0, row
    assert [len(r) for r in gloo["rows"]] == [STEPS, STEPS]
    assert [r["loss"] for r in ina["rows"][0]] == [r["loss"] for r in ina["rows"][1]]
    assert sum(w["resent"] for w in ina["workers"]) > 0                 # loss happened and was repaired


def test_two_jobs_train_at_once_sharing_a_small_pool(tmp_path: Path) -> None:
    """Two jobs (an MLP and a CNN, 2 workers each) train at the same time through the same
    switches under ESA with 4 aggregators per switch: their fragments compete for the
    aggregators (preemption and collisions), and every step of each job still gets the exact
    mean (within the rounding bound of gloo's) and the same loss on both ranks."""
    models = [ModelSpec("mlp"), ModelSpec("cnn")]
    topo, jobs = setup(2, models=models, k=2, hosts_per_edge=3, programmable=1.0)
    fd = plan_and_deploy(topo, jobs, "esa", models, pool_size=4)
    with running_net(topo, tmp_path / "logs") as net:
        assert install(net, fd.ops) > 0
        res = run_jobs(net, fd.jobs, [ina_job(d) for d in fd.jobs], "ina", tmp_path / "runs", steps=STEPS,
                       verify=True, timeout=120, extras=[[*m.cli_args(), "--timeout", "60"] for m in models])
    contested = 0
    for ina in res:
        assert [len(r) for r in ina["rows"]] == [STEPS, STEPS]
        assert all(0 <= row["grad_ratio"] <= 1.0 for rank in ina["rows"] for row in rank)
        assert [r["loss"] for r in ina["rows"][0]] == [r["loss"] for r in ina["rows"][1]]
        # whatever the PS still holds open at the end belongs to the rounds it keeps (its newest
        # two): a retransmission that collided after its fragment completed in a switch opens an
        # entry nothing completes, and the next round retires it; nothing older leaks
        last = max(w["last_round"] for w in ina["workers"])
        assert all(last - 1 <= r <= last for r in ina["ps"]["incomplete_rounds"]), (ina["ps"], last)
        received = ina["ps"]["received"]
        contested += received.get("preempted", 0) + received.get("collision", 0)
    assert contested > 0, [ina["ps"] for ina in res]
