"""The machine a benchmark ran on, printed first by every benchmark: numbers are only
comparable within one run on one machine (machines of the same kind differ 2-4x)."""
from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def describe() -> str:
    """One line: CPU model, cores, load, Python."""
    try:
        load = "load %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        load = "load unknown"
    return (f"machine: {cpu_model()}, {os.cpu_count()} cores ({load}), "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}")


if __name__ == "__main__":
    print(describe())
