"""Mininet with the switches in shared ``p4sim serve-many`` processes
(``EmuNet(switch_procs=N)``, ``python -m emulation.run --switch-procs N``): a GOAT plan
installed over P4Runtime gives exact all-reduce results as with one process per switch.
k=2 fat-tree, two hosts per edge: 5 switches in 2 processes."""
from __future__ import annotations

from pathlib import Path

import pytest
from mininet_guard import require_mininet, running_net

require_mininet()
from emulation.net import EmuNet  # noqa: E402

from controller.deploy import deploy_plan  # noqa: E402
from controller.schemes import run_scheme  # noqa: E402
from emulation.install import install  # noqa: E402
from emulation.jobs import run_allreduce  # noqa: E402
from emulation.schemes import fattree_setup  # noqa: E402

MB = 0.01


def test_goat_exact_with_switches_in_two_processes(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EmuNet, "default_switch_procs", 2)
    topo, job = fattree_setup(2, 3, MB, programmable_fraction=1.0, hosts_per_edge=2)
    with running_net(topo, tmp_path / "logs") as net:
        sws = net.switches()
        assert len(sws) == 5
        pids = {sw.proc.pid for sw in sws}
        assert len(pids) == 2 and pids == {p.pid for p in net.group_procs}
        assert len({sw.grpc_port for sw in sws}) == 5
        plan = run_scheme("goat", topo, [job])
        dep = deploy_plan(topo, job, plan, total_elements=int(MB * 1e6 / 4))
        assert install(net, dep.ops) > 0
        res = run_allreduce(net, dep, tmp_path / "run", window=4, seed=3, timeout=40,
                            rto={"initial": 0.3, "minimum": 0.1, "maximum": 1.0})
        assert all(sw.proc.poll() is None for sw in sws)
    assert [w["done"] for w in res.workers] == [True] * 3
    assert res.exact, res.workers
    assert res.switch_tx > 0
    assert all(p.poll() is not None for p in net.group_procs), "group processes stopped"


def test_switch_procs_refused_for_bmv2() -> None:
    with pytest.raises(ValueError):
        EmuNet(None, switch="bmv2", switch_procs=1)  # type: ignore[arg-type]
