"""Control-plane deadlines grow with the work a request asks for, and scale by environment."""
from __future__ import annotations

import pytest

from controller.deadlines import SCALE_ENV, Deadlines
from p4control.errors import ControlPlaneError


def test_reads_and_batches_get_time_per_entry() -> None:
    d = Deadlines(request=30.0, pipeline=600.0, per_entry=0.002)
    assert d.read(1) == pytest.approx(30.002)
    assert d.read(8192 * 4) == pytest.approx(30.0 + 65.536)     # a wildcard register read, 4 pipes
    assert d.write(1000) == pytest.approx(32.0)
    assert d.read(-5) == 30.0


def test_the_request_timeout_and_the_environment_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCALE_ENV, raising=False)
    assert Deadlines.for_request_timeout(None) == Deadlines()
    assert Deadlines.for_request_timeout(5.0).request == 5.0
    assert Deadlines.for_request_timeout(5.0).pipeline == Deadlines().pipeline
    monkeypatch.setenv(SCALE_ENV, "4")
    d = Deadlines.for_request_timeout(5.0)
    assert (d.request, d.pipeline, d.per_entry) == (20.0, 4 * Deadlines().pipeline, 4 * Deadlines().per_entry)


@pytest.mark.parametrize("bad", ["0", "-2", "fast", "nan"])
def test_a_bad_scale_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv(SCALE_ENV, bad)
    with pytest.raises(ControlPlaneError, match=f"{SCALE_ENV}={bad!r}: expected a positive number"):
        Deadlines.for_request_timeout(None)
