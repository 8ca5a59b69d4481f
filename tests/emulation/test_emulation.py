"""End to end on Mininet: p4sim switches (``p4sim serve``), a GOAT plan installed over
P4Runtime, worker/PS agents as processes in the hosts, exact all-reduce results.

k=2 fat-tree with two hosts per edge switch: 5 switches, 4 hosts (3 workers + the PS), every
switch programmable with memory for half the model, a 10 kB gradient. Skipped only when not
root or when Mininet is not installed / cannot build a network here.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Iterator

import pytest
from mininet_guard import require_mininet, running_net

require_mininet()
from emulation.net import EmuNet  # noqa: E402

from controller.deploy import deploy_plan, ina_fraction  # noqa: E402
from controller.schemes import run_scheme  # noqa: E402
from emulation.install import install  # noqa: E402
from emulation.jobs import run_allreduce  # noqa: E402
from emulation.schemes import fattree_setup  # noqa: E402

MB = 0.01


def _run_emulated(topo, jobs, specs, scheme: str, tmp_path: Path, *, loss: float, rto_max: float,
                  timeout: float, **kw):
    """emulation.schemes' run_scheme on a fresh Mininet net (window 4, pool 64)."""
    from emulation.schemes import run_scheme

    return run_scheme(topo, jobs, specs, scheme, loss=loss, workdir=tmp_path, bw_scale=5000, window=4,
                      seed=2, timeout=timeout, pool=64, rto={"initial": 0.3, "minimum": 0.1, "maximum": rto_max},
                      **kw)


@pytest.fixture
def k2(tmp_path: Path) -> Iterator[tuple[EmuNet, object, object]]:
    topo, job = fattree_setup(2, 3, MB, programmable_fraction=1.0, hosts_per_edge=2)
    with running_net(topo, tmp_path / "logs") as net:
        yield net, topo, job


def test_goat_plan_on_mininet_gives_exact_results(k2, tmp_path: Path) -> None:
    net, topo, job = k2
    plan = run_scheme("goat", topo, [job])
    dep = deploy_plan(topo, job, plan, total_elements=int(MB * 1e6 / 4))
    assert dep.ina_switches, "GOAT placed no sub-model on a switch"
    assert install(net, dep.ops) > 0
    res = run_allreduce(net, dep, tmp_path / "run", window=4, seed=3, timeout=40,
                        rto={"initial": 0.3, "minimum": 0.1, "maximum": 1.0})
    assert [w["done"] for w in res.workers] == [True] * 3
    assert res.exact, res.workers
    frags = sum(w["fragments"] for w in res.workers)
    assert ina_fraction(res.ps["received"], frags) > 0.5        # switches did aggregate
    assert res.switch_tx > 0


UDP_ECHO = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 7007))
while True:
    data, peer = s.recvfrom(2048)
    s.sendto(data, peer)
"""
UDP_PING = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
least = None
for i in range(20):
    t = time.monotonic()
    s.sendto(bytes(1400), (sys.argv[1], 7007))
    try:
        s.recvfrom(2048)
    except socket.timeout:
        continue                   # the echo server may not be up yet
    rtt = (time.monotonic() - t) * 1e3
    least = rtt if least is None else min(least, rtt)
    time.sleep(0.05)
print("least", least, "ms")
"""


def test_links_that_serialize_hold_each_frame_for_its_time_on_the_link(tmp_path: Path) -> None:
    """``EmuNet(serialize=True)``: a UDP echo between two hosts of one edge switch crosses 2
    links each way at 2 Mb/s, so its 1442-byte frames take at least 4 x 5.8 ms (htb alone paces
    them but hands each over at once); an all-reduce over such links is still exact."""
    topo, job = fattree_setup(2, 3, MB, programmable_fraction=1.0, hosts_per_edge=2)
    hosts = set(topo.hosts())
    a, b = next(pair for pair in ([n for n in topo.neighbors(s) if n in hosts] for s in topo.switches())
                if len(pair) == 2)
    edge = topo.neighbors(a)[0]
    with running_net(topo, tmp_path / "logs", bw_scale=50_000, serialize=True) as net:
        assert all("--rx-mbps" in sw.command() for sw in net.switches() if sw.name == edge)
        plan = run_scheme("goat", topo, [job])
        dep = deploy_plan(topo, job, plan, total_elements=int(MB * 1e6 / 4))
        assert install(net, dep.ops) > 0                        # routes too
        echo = net.host(b).popen([sys.executable, "-c", UDP_ECHO])
        try:
            out = net.host(a).cmd(f"{sys.executable} -c '{UDP_PING}' {net.addresses[b].ip}")
        finally:
            echo.kill()
            echo.wait()
        rtt = re.search(r"least ([\d.]+) ms", out)
        assert rtt and float(rtt.group(1)) >= 4 * 1442 * 8 / 2e6 * 1e3, out
        res = run_allreduce(net, dep, tmp_path / "run", window=4, seed=3, timeout=60,
                            rto={"initial": 0.5, "minimum": 0.2, "maximum": 2.0})
    assert res.exact and all(w["done"] for w in res.workers), res.workers


@pytest.mark.parametrize("scheme", ["goat", "atp"])
def test_five_rounds_at_one_percent_loss_per_port_are_all_exact(scheme: str, tmp_path: Path) -> None:
    """Training-length run (issue: rounds mixed, loss stalled recovery): 5 rounds with fresh
    gradients, every switch port dropping 1 % of frames; every round exact on every worker."""
    topo, job = fattree_setup(2, 3, MB, programmable_fraction=1.0, hosts_per_edge=2)
    with running_net(topo, tmp_path / "logs", drop_rate=0.01, seed=7) as net:
        plan = run_scheme(scheme, topo, [job])
        dep = deploy_plan(topo, job, plan, total_elements=int(MB * 1e6 / 4))
        assert install(net, dep.ops) > 0
        res = run_allreduce(net, dep, tmp_path / "run", window=4, seed=3, timeout=60, rounds=5,
                            rto={"initial": 0.3, "minimum": 0.1, "maximum": 1.0})
    rounds = res.per_round()
    assert len(rounds) == 5 and all(r["exact"] for r in rounds), rounds
    assert res.exact and all(w["done"] for w in res.workers)
    assert sum(r["worker_resent"] for r in rounds) > 0            # loss did happen and was repaired


@pytest.mark.parametrize("scheme", ["ps", "atp", "esa", "switchml", "goat", "goat-async", "aro", "inart"])
def test_two_jobs_sharing_switches_on_mininet_are_exact(scheme: str, tmp_path: Path) -> None:
    """Every scheme the emulation deploys, two jobs at once (interleaved under the same ToRs,
    the second starting later), 2 rounds each, as `python -m emulation.run --jobs 2` runs them."""
    from emulation.experiment import JobSpec, build_topology, place_jobs

    topo = build_topology("fattree", k=2, hosts_per_edge=4, programmable=1.0)
    specs = [JobSpec(MB, 2), JobSpec(MB, 2, start=0.2)]
    jobs = place_jobs(topo, specs, 2)
    run = _run_emulated(topo, jobs, specs, scheme, tmp_path, loss=0.0, rto_max=1.0, timeout=40, log=lambda _: None)
    assert [r.job for r in run.jobs] == [1, 2]
    for res in run.jobs:
        assert len(res.per_round()) == 2 and res.exact, res.workers
    if scheme != "ps":
        assert run.deployment.ina_switches


def test_layered_workers_on_mininet_send_as_backpropagation_computes(tmp_path: Path) -> None:
    """ESA's §7.2.1 hosts: each worker computes, pushes its round after the forward pass and
    sends each sub-model as backpropagation computes it (hostlib.layers), two jobs, 2 rounds,
    every round exact."""
    from emulation.experiment import JobSpec, build_topology, place_jobs

    topo = build_topology("fattree", k=2, hosts_per_edge=4, programmable=1.0)
    specs = [JobSpec(MB, 2, compute=0.3), JobSpec(MB, 2, start=0.1, compute=0.3)]
    jobs = place_jobs(topo, specs, 2)
    run = _run_emulated(topo, jobs, specs, "esa", tmp_path, loss=0.0, rto_max=1.0, timeout=40, log=lambda _: None,
                        layered=True, loss_detection="dupack")
    assert run.layered
    for res in run.jobs:
        assert len(res.per_round()) == 2 and res.exact, res.workers
        assert all(r["compute_seconds"] >= 0.3 for w in res.workers for r in w["rounds"])


@pytest.mark.parametrize("scheme", ["goat", "esa"])
def test_tna_program_installed_over_bfrt_on_mininet_is_exact_under_loss(scheme: str, tmp_path: Path) -> None:
    """`python -m emulation.run --arch tna`: the TNA program in p4sim, plans installed over
    BfRuntime as on Tofino, two jobs, 2 rounds at 1 % loss per port."""
    from emulation.experiment import JobSpec, build_topology, place_jobs

    topo = build_topology("fattree", k=2, hosts_per_edge=4, programmable=1.0)
    specs = [JobSpec(MB, 2), JobSpec(MB, 2, start=0.2)]
    jobs = place_jobs(topo, specs, 2)
    lines: list[str] = []
    run = _run_emulated(topo, jobs, specs, scheme, tmp_path, loss=0.01, rto_max=0.5, timeout=60,
                        switch="p4sim-tna", log=lines.append)
    assert any("over BfRuntime" in line for line in lines), lines
    assert run.lanes == 32
    for res in run.jobs:
        assert len(res.per_round()) == 2 and res.exact, res.workers
    assert run.deployment.ina_switches


def test_inart_splits_a_job_over_two_parameter_servers_exactly(tmp_path: Path) -> None:
    """`--ps-per-job 2`: one job's model split over two PSes as InArt plans it, each worker
    running one Worker per PS part on one socket; 2 rounds at 1 % loss, every part exact."""
    from emulation.experiment import JobSpec, build_topology, place_jobs

    topo = build_topology("fattree", k=4, programmable=0.2, seed=0)    # InArt gives both PSes a share here
    specs = [JobSpec(MB, 2)]
    jobs = place_jobs(topo, specs, 4, ps_per_job=2)
    run = _run_emulated(topo, jobs, specs, "inart", tmp_path, loss=0.01, rto_max=0.5, timeout=60, log=lambda _: None)
    assert [r.job for r in run.jobs] == [1, 1001]
    assert [d.ps for d in run.deployment.jobs] == jobs[0].ps
    for res in run.jobs:
        assert len(res.per_round()) == 2 and res.exact, res.workers
