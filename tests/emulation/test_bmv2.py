"""The emulation on bmv2's simple_switch_grpc (emulation/bmv2.py): command lines and argument
checks always; a real GOAT run on Mininet where simple_switch_grpc and p4c-bm2-ss are installed
(docker/ has them; CI does not)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from emulation.bmv2 import bmv2_unavailable_reason, simple_switch_command


def test_each_switch_gets_its_ports_grpc_address_and_own_thrift_port() -> None:
    cmd = simple_switch_command(3, {2: "edge1-eth2", 1: "edge1-eth1"}, "127.0.0.1:50001", 9091)
    assert cmd[:6] == ["simple_switch_grpc", "--device-id", "3", "--thrift-port", "9091", "--no-p4"]
    assert cmd[6:10] == ["-i", "1@edge1-eth1", "-i", "2@edge1-eth2"]
    assert cmd[10:] == ["--", "--grpc-server-addr", "127.0.0.1:50001", "--cpu-port", "255"]


def test_run_refuses_bmv2_without_the_tools_or_with_loss(capsys: pytest.CaptureFixture[str]) -> None:
    from emulation.run import main
    rc = main(["fattree", "--switch", "bmv2", "--loss", "0.01", "--schemes", "goat"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    if bmv2_unavailable_reason():
        assert "needs" in err and "on PATH" in err
    else:
        assert "--loss needs --switch p4sim" in err


@pytest.mark.skipif(os.geteuid() != 0 or bmv2_unavailable_reason() is not None or shutil.which("mn") is None,
                    reason=bmv2_unavailable_reason() or "needs root and Mininet")
def test_goat_round_on_bmv2_is_exact(tmp_path: Path) -> None:
    from emulation.experiment import JobSpec, build_topology, place_jobs
    from emulation.schemes import run_scheme

    topo = build_topology("fattree", k=2, hosts_per_edge=2, programmable=1.0)
    specs = [JobSpec(0.01, 2)]
    jobs = place_jobs(topo, specs, 3)
    run = run_scheme(topo, jobs, specs, "goat", loss=0.0, workdir=tmp_path, bw_scale=5000, window=8, seed=1,
                     timeout=60, switch="bmv2", log=lambda _: None)
    assert all(r.exact for r in run.jobs), run.jobs[0].workers
