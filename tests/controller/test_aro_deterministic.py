"""ARO's plan is the same in every process: the unfolded graph (hence the MILP's variable order,
which picks among equal optima) does not follow Python's per-process string hashing."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = """
import hashlib, json
from controller.schemes import run_scheme
from emulation.experiment import JobSpec, build_topology, place_jobs
topo = build_topology("fattree", k=4, programmable=0.2, seed=0)
jobs = place_jobs(topo, [JobSpec(0.25, 1), JobSpec(0.25, 1)], 6)
plan = run_scheme("aro", topo, jobs)
print(hashlib.md5(json.dumps(sorted((k, str(v)) for k, v in plan.paths.items())).encode()).hexdigest())
"""


def test_aro_plans_alike_under_any_string_hashing() -> None:
    digests = set()
    for seed in ("1", "2", "3"):
        out = subprocess.run([sys.executable, "-c", PLAN], cwd=ROOT, capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PYTHONHASHSEED": seed})
        assert out.returncode == 0, out.stderr[-2000:]
        digests.add(out.stdout.strip())
    assert len(digests) == 1, digests
