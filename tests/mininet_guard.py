"""``require_mininet()`` at the top of a test module skips the whole module unless it runs as
root with a Mininet that can build networks here (Debian's ``mininet`` package)."""
from __future__ import annotations

import os

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
