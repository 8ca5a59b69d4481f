"""The robustness fuzz of benchmarks/fuzz_ina.py, short: a few thousand random and mutated frames
through each INA program (no exception, no hang, the protected job's partial untouched) and
~200 malformed P4Runtime requests (spec status codes only, the server still answers)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.fuzz_ina import fuzz_frames, fuzz_p4runtime, main  # noqa: E402

SEED = 20261125


@pytest.mark.parametrize("arch", ["v1model", "tna"])
def test_fuzz_frames(arch: str) -> None:
    rep = fuzz_frames(arch, frames=4000, seed=SEED, seconds=6.0)
    assert rep.count >= 500, rep.summary()
    assert rep.outcomes["dropped"] and rep.outcomes["forwarded"] and rep.outcomes["replicated"], rep.summary()
    assert rep.violations == [], "\n".join(rep.violations)


@pytest.mark.parametrize("arch", ["v1model", "tna"])
def test_fuzz_p4runtime(arch: str) -> None:
    rep = fuzz_p4runtime(arch, requests=200, seed=SEED, seconds=4.0)
    assert rep.count >= 50, rep.summary()
    assert rep.outcomes["write OK"] and rep.outcomes["write UNKNOWN"], rep.summary()
    assert rep.violations == [], "\n".join(rep.violations)


def test_fuzz_command_line_replays_one_frame_and_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--arch", "tna", "--seed", "1", "--replay-frame", "5", "--replay-request", "5"]) == 0
    out = capsys.readouterr().out
    assert "tna frame 5:" in out and "tna request 5:" in out and "0 violations" in out


def test_a_hanging_frame_is_reported_with_its_index(monkeypatch: pytest.MonkeyPatch) -> None:
    from p4sim import Switch

    real = Switch.process
    calls = []

    def process(self, port, data):  # the 4th fuzz frame never returns
        calls.append(1)
        if len(calls) == 4 + 3:     # after the protected job's 3 fragments
            while True:
                pass
        return real(self, port, data)
    monkeypatch.setattr(Switch, "process", process)
    rep = fuzz_frames("tna", frames=10, seed=SEED, frame_timeout=0.5)
    assert len(rep.violations) == 1 and f"hang: frame seed={SEED} index=3 " in rep.violations[0]


def test_a_read_past_its_deadline_frees_the_server() -> None:
    """Found by the fuzz: a wildcard read of v1model's agg_lanes (2^20 cells, minutes with the
    pure-Python protobuf backend) kept the server's lock after the client's deadline, so every
    later Write and Read timed out too; the server now drops a read whose client has gone."""
    import time

    from benchmarks.fuzz_ina import P4rtFixture, _pb, call, check_alive

    pb, _, _ = _pb()
    fx = P4rtFixture("v1model")
    try:
        lanes = next(r for r in fx.p4info.registers if r.preamble.name.endswith("agg_lanes"))
        req = pb.ReadRequest(device_id=1)
        req.entities.add().register_entry.register_id = lanes.preamble.id
        assert call(fx, "read", req, timeout=0.5) == ("DEADLINE_EXCEEDED", [])
        # The whole read takes minutes (about 100 s for 2^20 cells on an idle fast machine, more
        # on a slow or busy one); a server that kept its lock would answer nothing for that long.
        # 30 s is far more than a few small requests ever take, and well under the read.
        t0 = time.monotonic()
        assert check_alive(fx, timeout=30.0) is None
        assert time.monotonic() - t0 < 30.0
        one = pb.ReadRequest(device_id=1)
        e = one.entities.add().register_entry
        e.register_id, e.index.index = lanes.preamble.id, 5
        assert call(fx, "read", one, timeout=30.0) == ("OK", [])
    finally:
        fx.close()


def test_fuzz_bfrt() -> None:
    """benchmarks/fuzz_bfrt.py, short: malformed BfRuntime requests to p4sim's BfRt server get
    documented statuses only, and a valid insert/read/delete works afterwards."""
    from benchmarks.fuzz_bfrt import fuzz_bfrt

    rep = fuzz_bfrt(requests=300, seed=SEED, seconds=6.0)
    assert rep.count >= 50, rep.summary()
    assert rep.violations == [], "\n".join(rep.violations)
