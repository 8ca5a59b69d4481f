"""Registry of planning schemes: name -> ``fn(topology, jobs, options) -> Plan``.

Modules register with ``@register("name")``. The registry imports the modules that provide
schemes lazily, so a scheme module that is missing only makes its own schemes unavailable;
any other import failure is a bug in that module and propagates.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

from .model import Job, Plan, Topology

SchemeFn = Callable[[Topology, list[Job], dict[str, Any]], Plan]
SCHEMES: dict[str, SchemeFn] = {}

# Where each known scheme lives; unknown names make every provider load before giving up.
PROVIDERS: dict[str, tuple[str, ...]] = {
    "controller.baselines": ("ps", "geryon", "atp", "switchml", "esa", "grid", "aggtree", "lbmm",
                             "k-sgd", "random"),
    "controller.goat": ("goat", "goat-ilp", "goat-lp", "goat-async"),
    "controller.aro": ("aro", "aro-acc"),
    "controller.inart": ("inart", "inart-equal", "l-inart"),
}


class SchemeUnavailable(LookupError):
    """The scheme is not registered (its module is missing or does not define it)."""


def register(name: str) -> Callable[[SchemeFn], SchemeFn]:
    """Decorator: ``@register("atp") def atp(topology, jobs, options) -> Plan``."""
    def deco(fn: SchemeFn) -> SchemeFn:
        if name in SCHEMES and SCHEMES[name] is not fn:
            raise ValueError(f"scheme {name!r} is registered twice")
        SCHEMES[name] = fn
        return fn
    return deco


def _load(module: str) -> bool:
    """Import a provider; False only when that very module does not exist."""
    try:
        importlib.import_module(module)
        return True
    except ModuleNotFoundError as e:
        if e.name == module:
            return False
        raise


def load_all() -> list[str]:
    """Import every provider that exists; returns the missing ones."""
    return [m for m in PROVIDERS if not _load(m)]


def get_scheme(name: str) -> SchemeFn:
    if name not in SCHEMES:
        owners = [m for m, names in PROVIDERS.items() if name in names]
        for m in owners or list(PROVIDERS):
            _load(m)
    if name not in SCHEMES:
        missing = [m for m in PROVIDERS if name in PROVIDERS[m]]
        why = f" (module {missing[0]} is not installed)" if missing and not _exists(missing[0]) else ""
        raise SchemeUnavailable(f"scheme {name} is not available{why}; available: "
                                f"{', '.join(available()) or 'none'}")
    return SCHEMES[name]


def _exists(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def available() -> list[str]:
    load_all()
    return sorted(SCHEMES)


def run_scheme(name: str, topology: Topology, jobs: list[Job],
               options: dict[str, Any] | None = None) -> Plan:
    """Look a scheme up and run it; the plan's scheme and jobs fields are filled if left empty."""
    plan = get_scheme(name)(topology, jobs, dict(options or {}))
    if not plan.scheme:
        plan.scheme = name
    if not plan.jobs:
        plan.jobs = [j.name for j in jobs]
    return plan
