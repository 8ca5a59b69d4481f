"""How long the controller waits for a switch before it calls the switch stuck.

A deadline must mean "the server is not answering", never "this machine is slow": it grows with
the work a request asks for. Small requests (arbitration, a write, a one-entry read) get
``request`` seconds; a pipeline push gets ``pipeline`` (a software switch may compile the
program with a C compiler first, a Tofino loads a binary); a wildcard read gets ``request`` plus
``per_entry`` for every entry or register cell it can return (a P4Runtime server on the
pure-Python protobuf backend answers about 10k cells/s); a batch of writes likewise per update.

``$INA_DEADLINE_SCALE`` multiplies every deadline (e.g. 4 on an emulated or heavily shared
machine); the targets also take a :class:`Deadlines` of their own.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

from p4control.errors import ControlPlaneError

SCALE_ENV = "INA_DEADLINE_SCALE"


@dataclass(frozen=True)
class Deadlines:
    request: float = 30.0       # seconds for any small request
    pipeline: float = 600.0     # SetForwardingPipelineConfig (compile/load on the switch)
    per_entry: float = 0.002    # extra seconds per entry or cell a read may return, per update written

    def read(self, entries: int) -> float:
        """The deadline of a read that may return ``entries`` entries or cells."""
        return self.request + self.per_entry * max(0, entries)

    def write(self, updates: int) -> float:
        """The deadline of one Write carrying ``updates`` updates."""
        return self.request + self.per_entry * max(0, updates)

    def scaled(self, factor: float) -> "Deadlines":
        return replace(self, request=self.request * factor, pipeline=self.pipeline * factor,
                       per_entry=self.per_entry * factor)

    @classmethod
    def for_request_timeout(cls, timeout: float | None) -> "Deadlines":
        """The defaults with ``request`` set to ``timeout`` (the targets' ``timeout=`` argument;
        None keeps the default) and ``$INA_DEADLINE_SCALE`` applied."""
        base = cls() if timeout is None else cls(request=timeout)
        return base.scaled(env_scale())


def env_scale() -> float:
    raw = os.environ.get(SCALE_ENV, "")
    if not raw:
        return 1.0
    try:
        factor = float(raw)
    except ValueError:
        factor = -1.0
    if not factor > 0:
        raise ControlPlaneError(f"{SCALE_ENV}={raw!r}: expected a positive number")
    return factor
