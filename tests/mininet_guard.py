"""``require_mininet()`` at the top of a test module skips the whole module unless it runs as
root with a Mininet that can build networks here (Debian's ``mininet`` package)."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest


def require_mininet() -> None:
    if os.geteuid() != 0:
        pytest.skip("Mininet needs root", allow_module_level=True)
    try:
        from emulation.net import mininet_unavailable_reason
    except ImportError as e:            # Debian package mininet missing
        pytest.skip(f"Mininet not importable: {e}", allow_module_level=True)
    why = mininet_unavailable_reason()
    if why:
        pytest.skip(why, allow_module_level=True)


@contextmanager
def running_net(topo: Any, log_dir: Path, **switch_options: Any) -> Iterator[Any]:
    """A started EmuNet of ``topo`` (20 Mb/s links), stopped on the way out whatever happens;
    the test is skipped if Mininet itself cannot create the network here."""
    from emulation.net import EmuNet

    net = EmuNet(topo, bw_scale=5000, log_dir=log_dir)
    if switch_options:
        net.with_switch_options(**switch_options)
    try:
        try:
            net.build()
        except Exception as e:
            pytest.skip(f"Mininet cannot build a network: {e}")
        net.start(timeout=60)
        yield net
    finally:
        net.stop()                      # our PIDs only, then Mininet's nodes and links
