"""An emulation agent's exit status: 0 when every job part it ran was exact, 1 otherwise (a
worker host reports per job part; reading a top-level "exact" used to crash every worker at exit)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulation import agents


@pytest.mark.parametrize("exacts, status", [([True], 0), ([True, True], 0), ([True, False], 1)])
def test_worker_exit_status_covers_every_job_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  exacts: list[bool], status: int) -> None:
    report = {"role": "worker", "host": "h1",
              "jobs": {str(job): {"exact": exact} for job, exact in enumerate(exacts, 1)}}
    monkeypatch.setattr(agents, "run_worker", lambda cfg: report)
    cfg = tmp_path / "h1.config.json"
    cfg.write_text(json.dumps({"out": str(tmp_path / "h1.json")}))
    assert agents.main(["worker", "--config", str(cfg)]) == status
    assert json.loads((tmp_path / "h1.json").read_text()) == report
