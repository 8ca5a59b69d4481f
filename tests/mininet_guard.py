"""``require_mininet()`` at the top of a test module skips the whole module unless it runs as
root with Mininet installed (Debian's ``mininet`` package). Only what is truly absent skips: an
exception from the project's own code (importing ``emulation.net``, building a topology) fails."""
from __future__ import annotations

import importlib.util
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

# where Debian's package puts it (emulation.net adds this to a venv's path the same way)
DEBIAN_DIST_PACKAGES = Path("/usr/lib/python3/dist-packages")


def mininet_absent_reason() -> str | None:
    """Why Mininet cannot run here for reasons outside the project (None if it can)."""
    if os.geteuid() != 0:
        return "Mininet needs root"
    if importlib.util.find_spec("mininet") is None and not (DEBIAN_DIST_PACKAGES / "mininet").is_dir():
        return "Mininet is not installed (Debian package mininet)"
    if shutil.which("mnexec") is None:
        return "mnexec (Debian package mininet) not found"
    return None


def require_mininet() -> None:
    why = mininet_absent_reason()
    if why:
        pytest.skip(why, allow_module_level=True)


@contextmanager
def running_net(topo: Any, log_dir: Path, *, bw_scale: float = 5000, serialize: bool = False,
                **switch_options: Any) -> Iterator[Any]:
    """A started EmuNet of ``topo`` (20 Mb/s links unless ``bw_scale`` says otherwise), stopped
    on the way out whatever happens."""
    from emulation.net import EmuNet

    net = EmuNet(topo, bw_scale=bw_scale, log_dir=log_dir, serialize=serialize)
    if switch_options:
        net.with_switch_options(**switch_options)
    try:
        net.build()
        net.start(timeout=60)
        yield net
    finally:
        net.stop()                      # our PIDs only, then Mininet's nodes and links
