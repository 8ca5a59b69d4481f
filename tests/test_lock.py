"""requirements.lock pins every dependency of pyproject.toml, and the project's venv is built from it."""
from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _lock() -> dict[str, str]:
    pins: dict[str, str] = {}
    for n, line in enumerate((ROOT / "requirements.lock").read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==([A-Za-z0-9.+!_-]+)", line)
        assert m, f"requirements.lock:{n}: not an exact pin: {line!r}"
        pins[canonicalize_name(m.group(1))] = m.group(2)
    return pins


def test_every_declared_dependency_is_pinned_within_its_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = list(project["project"]["dependencies"])
    for extra in project["project"].get("optional-dependencies", {}).values():
        declared += extra
    declared += project["build-system"]["requires"]
    pins = _lock()
    for spec in declared:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is in pyproject.toml but not in requirements.lock: run `make lock`"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"requirements.lock pins {req.name}=={pins[name]} outside pyproject.toml's {req.specifier}"


@pytest.mark.skipif(Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
                    reason="checks the project's own .venv (scripts/setup.sh); this is another environment")
def test_the_project_venv_has_exactly_the_locked_versions():
    wrong = {}
    for name, version in _lock().items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = None
        if have != version:
            wrong[name] = (version, have)
    assert not wrong, f"locked vs installed: {wrong}; run scripts/setup.sh"
