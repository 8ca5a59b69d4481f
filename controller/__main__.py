"""Command line: build topologies and jobs, run a scheme, check a plan.

    python -m controller topo leaf-spine --spines 10 --leaves 10 --hosts 50 \\
        --programmable-fraction 0.2 --seed 1 -o T.json
    python -m controller job --topology T.json --model alexnet --workers 35 --ps last:1 \\
        --submodels 8 -o J.json
    python -m controller plan atp --topology T.json --job J.json -o PLAN.json
    python -m controller check PLAN.json --topology T.json --job J.json
    python -m controller schemes

On a testbed (docs/testbed.md: switches, their ports and control addresses, hosts, links):

    python -m controller topo testbed LAB.json -o T.json          # the planners' topology
    python -m controller deploy --network LAB.json --plan PLAN.json --job J.json
    python -m controller status --network LAB.json [--plan PLAN.json --job J.json]
    python -m controller reset JOB --network LAB.json --plan PLAN.json --job J.json

Exit status: 0 fine, 1 the checked plan has violations (check) or a switch could not be
reached or refused a write (deploy, reset; status: a switch unreachable or not in the plan's
state), 2 bad input (one line on stderr: ``file: what is wrong``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from . import profiles, topologies
from .check import evaluate_plan, format_report
TESTBED_POOL = 4096    # fits both programs' aggregator registers
from .model import (Job, ModelError, Plan, Topology, load_json, load_jobs, load_plan,
                    load_topology, save_json)
from .schemes import SchemeUnavailable, available, run_scheme
from .testbed import load_testbed


class UsageError(Exception):
    """Bad command-line values; reported as one line, exit 2."""


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _fabric_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--link-gbps", type=float, default=100.0)
    p.add_argument("--link-gbps-range", type=_floats, help="LO,HI: link rates drawn uniformly (seeded)")
    p.add_argument("--pipelines", type=int, default=1, help="pipes per switch; ports split evenly")
    p.add_argument("--memory-mb", type=float, default=64.0, help="aggregator memory per programmable switch (MB)")
    p.add_argument("--switch-capacity-gbps", type=float, default=0.0, help="aggregation capacity (0: unlimited)")
    p.add_argument("--ps-capacity-gbps", type=float, default=0.0, help="PS processing capacity (0: unlimited)")
    p.add_argument("--force-programmable", type=_names, default=[], help="switches that must be programmable")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--programmable-fraction", type=float, default=None,
                   help="fraction of switches made programmable, drawn with --seed (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", help="output file (default: stdout)")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m controller", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    topo = sub.add_parser("topo", help="generate a topology")
    kinds = topo.add_subparsers(dest="kind", required=True)
    ls = kinds.add_parser("leaf-spine", help="two-tier Clos (GOAT: 10/10/50, ARO: 24/24/576)")
    ls.add_argument("--spines", type=int, required=True)
    ls.add_argument("--leaves", type=int, required=True)
    g = ls.add_mutually_exclusive_group(required=True)
    g.add_argument("--hosts-per-leaf", type=int)
    g.add_argument("--hosts", type=int, help="total hosts, spread evenly over the leaves")
    _fabric_options(ls)
    _common(ls)
    ft = kinds.add_parser("fat-tree", help="k-ary fat-tree (GOAT: k=8, 6 hosts per edge)")
    ft.add_argument("--k", type=int, required=True)
    g = ft.add_mutually_exclusive_group()
    g.add_argument("--hosts-per-edge", type=int)
    g.add_argument("--hosts", type=int, help="total hosts, spread evenly over the edge switches")
    _fabric_options(ft)
    _common(ft)
    gt = kinds.add_parser("goat-testbed", help="GOAT Fig. 4: 3 switches, 8 workers, 1 PS")
    gt.add_argument("--link-gbps", type=float, default=100.0)
    gt.add_argument("--memory-mb", type=float, default=20.0)
    _common(gt)
    it = kinds.add_parser("inart-testbed", help="InArt Fig. 1: 2 switches, 6 workers, 2 PSs")
    it.add_argument("--link-gbps", type=float, default=100.0)
    it.add_argument("--switch-capacity-gbps", type=float, default=0.0)
    it.add_argument("--ps-capacity-gbps", type=float, default=0.0)
    _common(it)
    tb = kinds.add_parser("testbed", help="the topology of a testbed file (docs/testbed.md)")
    tb.add_argument("network", help="testbed file (JSON)")
    tb.add_argument("-o", "--output", help="output file (default: stdout)")
    ift = kinds.add_parser("inart-fattree", help="InArt §5.3.1: k=6 fat-tree, 20 Mb/s links")
    ift.add_argument("--heterogeneous", action="store_true", help="links uniform in 10-30 Mb/s")
    _common(ift)

    job = sub.add_parser("job", help="build a job (or append one to a job list)")
    job.add_argument("--topology", required=True)
    job.add_argument("--model", required=True, help=f"one of: {', '.join(sorted(profiles.PROFILES))}")
    job.add_argument("--workers", default="auto",
                     help="auto | all-but-ps | N | random:N | first:N | last:N | h1,h2,...")
    job.add_argument("--ps", default="auto", help="same forms as --workers (auto: role ps, else last host)")
    job.add_argument("--submodels", type=int, default=1)
    job.add_argument("--sizes", type=_floats, help="explicit sub-model sizes (MB, before --scale)")
    job.add_argument("--split", choices=("equal", "random"), default="equal")
    job.add_argument("--scale", type=float, default=1.0, help="size factor (InArt emulation: 0.001)")
    job.add_argument("--name")
    job.add_argument("--job-id", type=int)
    job.add_argument("--priority", type=int, default=0)
    job.add_argument("--seed", type=int, default=0)
    job.add_argument("--append", action="store_true",
                     help="add to the job list in --output, keeping its hosts out of this job")
    job.add_argument("-o", "--output")

    plan = sub.add_parser("plan", help="run a scheme")
    plan.add_argument("scheme")
    plan.add_argument("--topology", required=True)
    plan.add_argument("--job", required=True)
    plan.add_argument("--seed", type=int, default=0)
    plan.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                      help="scheme option (VALUE parsed as JSON when it parses)")
    plan.add_argument("--verbose", action="store_true", help="show the LP/MILP solver's log on stdout")
    plan.add_argument("-o", "--output")

    chk = sub.add_parser("check", help="check a plan; exit 1 on any violation")
    chk.add_argument("plan")
    chk.add_argument("--topology", required=True)
    chk.add_argument("--job", required=True)
    chk.add_argument("--json", action="store_true", help="print the report as JSON")

    sub.add_parser("schemes", help="list the available schemes")

    def fleet(name: str, help_text: str, plan_required: bool) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--network", required=True, help="testbed file (docs/testbed.md)")
        p.add_argument("--plan", required=plan_required, help="plan (python -m controller plan)")
        p.add_argument("--job", required=plan_required, help="the plan's job list")
        p.add_argument("--pool", type=int, default=TESTBED_POOL,
                       help="aggregators per switch, a power of two no larger than the program's "
                            f"registers (default {TESTBED_POOL})")
        p.add_argument("--timeout", type=float, default=None,
                       help="seconds for a small control request (default 30; a pipeline push and "
                            "large reads get longer; $INA_DEADLINE_SCALE multiplies every deadline)")
        return p
    dep = fleet("deploy", "configure ports and install a plan on every switch of a testbed, "
                "writing only what differs (idempotent; restores a restarted switch)", True)
    dep.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    fleet("status", "show what every switch holds and, with --plan, what differs from the plan", False)
    rst = fleet("reset", "remove one job from the switches (the other jobs of the plan stay)", True)
    rst.add_argument("job_name", metavar="JOB", help="name of the job to remove")
    return ap


def _emit(obj: Any, output: str | None) -> None:
    if output:
        save_json(obj, output)
    else:
        print(json.dumps(obj, indent=2))


def cmd_topo(a: argparse.Namespace) -> None:
    if a.kind == "testbed":
        _emit(load_testbed(a.network).topology().to_dict(), a.output)
        return
    fabric = a.kind in ("leaf-spine", "fat-tree")
    frac = 1.0 if a.programmable_fraction is None else a.programmable_fraction
    try:
        if fabric:
            kw: dict[str, Any] = dict(
                link_gbps=a.link_gbps, pipelines=a.pipelines, memory_bytes=int(a.memory_mb * 1e6),
                link_gbps_range=tuple(a.link_gbps_range) if a.link_gbps_range else None,
                switch_capacity_gbps=a.switch_capacity_gbps, ps_capacity_gbps=a.ps_capacity_gbps,
                programmable_fraction=frac, force_programmable=a.force_programmable, seed=a.seed)
            if kw["link_gbps_range"] is not None and len(kw["link_gbps_range"]) != 2:
                raise UsageError("--link-gbps-range takes LO,HI")
            if a.kind == "leaf-spine":
                t = topologies.leaf_spine(a.spines, a.leaves, a.hosts_per_leaf, hosts=a.hosts, **kw)
            else:
                t = topologies.fat_tree(a.k, a.hosts_per_edge, hosts=a.hosts, **kw)
        elif a.kind == "inart-fattree":
            t = topologies.inart_fattree(a.heterogeneous, a.seed, programmable_fraction=frac)
        else:
            if a.kind == "goat-testbed":
                t = topologies.goat_testbed(link_gbps=a.link_gbps, memory_bytes=int(a.memory_mb * 1e6))
            else:
                t = topologies.inart_testbed(link_gbps=a.link_gbps, switch_capacity_gbps=a.switch_capacity_gbps,
                                             ps_capacity_gbps=a.ps_capacity_gbps)
            if a.programmable_fraction is not None:
                topologies.set_programmable(t, a.programmable_fraction, a.seed)
    except ValueError as e:
        raise UsageError(f"topo {a.kind}: {e}") from None
    _emit(t.to_dict(), a.output)


def cmd_job(a: argparse.Namespace) -> None:
    topo = _topology(a.topology)
    existing: list[Job] = []
    if a.append:
        if not a.output:
            raise UsageError("job --append needs --output")
        if Path(a.output).exists():
            existing = _jobs(a.output)
    taken = [h for j in existing for h in j.workers + j.ps]
    job_id = a.job_id if a.job_id is not None else len(existing) + 1
    try:
        job = profiles.make_job(topo, a.model, workers=a.workers, ps=a.ps, submodels=a.submodels,
                                sizes=a.sizes, split=a.split, scale=a.scale, name=a.name,
                                job_id=job_id, priority=a.priority, seed=a.seed, exclude=taken)
    except (ValueError, KeyError) as e:
        raise UsageError(f"job: {e.args[0] if e.args else e}") from None
    if any(j.name == job.name for j in existing):
        raise UsageError(f"{a.output}: already has a job named {job.name}; pass --name")
    jobs = existing + [job]
    _emit([j.to_dict() for j in jobs] if a.append else job.to_dict(), a.output)


# ---------------------------------------------------------------- JSON shapes of the input files
# The model's loaders check values; these shapes only say where an object or a list must be, so
# that a list in place of an object is reported with its JSON path instead of a Python
# TypeError ("list indices must be integers or slices, not str").


class _Obj:
    """A JSON object; the listed fields, where present, have the given shapes."""

    def __init__(self, fields: dict[str, Any] | None = None) -> None:
        self.fields = fields or {}


class _Map:
    """A JSON object whose every value has one shape (names chosen by the file)."""

    def __init__(self, value: Any = None) -> None:
        self.value = value


class _List:
    """A JSON list whose every item has one shape (None: any)."""

    def __init__(self, item: Any = None) -> None:
        self.item = item


_TOPOLOGY = _Obj({"nodes": _List(_Obj({"port_pipe": _Map()})), "links": _List(_Obj()),
                  "meta": _Obj()})
_JOB = _Obj({"workers": _List(), "ps": _List(), "submodels": _List(_Obj()), "meta": _Obj()})
_PLAN = _Obj({"jobs": _List(), "submodel_switches": _Map(_List()),
              "aggregation_node": _Map(_Map()), "paths": _Map(_Map(_List())), "rates": _Map(),
              "split": _Map(), "extra": _Obj()})


def _json_type(v: Any) -> str:
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, bool):
        return "a boolean"
    if v is None:
        return "null"
    return "a number"


def _check_shape(value: Any, shape: Any, path: str, source: str) -> None:
    if shape is None:
        return
    if isinstance(shape, (_Obj, _Map)) and not isinstance(value, dict):
        raise ModelError(f"{source}: {path}: expected an object, got {_json_type(value)}")
    if isinstance(shape, _List) and not isinstance(value, list):
        raise ModelError(f"{source}: {path}: expected a list, got {_json_type(value)}")
    if isinstance(shape, _Obj):
        for key, sub in shape.fields.items():
            if key in value:
                _check_shape(value[key], sub, f"{path}.{key}", source)
    elif isinstance(shape, _Map):
        for key, v in value.items():
            _check_shape(v, shape.value, f"{path}.{key}", source)
    else:
        for i, v in enumerate(value):
            _check_shape(v, shape.item, f"{path}[{i}]", source)


def _read_json(path: str) -> Any:
    try:
        return load_json(path)
    except UnicodeDecodeError as e:  # load_json reports unreadable and invalid JSON files
        raise ModelError(f"{path}: not UTF-8 text (byte {e.start})") from None


def _topology(path: str) -> Topology:
    _check_shape(_read_json(path), _TOPOLOGY, "topology", path)
    return load_topology(path)


def _jobs(path: str) -> list[Job]:
    d = _read_json(path)
    if isinstance(d, list):   # a job file holds one job object or a list of them
        _check_shape(d, _List(_JOB), "jobs", path)
    else:
        _check_shape(d, _JOB, "job", path)
    return load_jobs(path)


def _plan(path: str) -> Plan:
    _check_shape(_read_json(path), _PLAN, "plan", path)
    return load_plan(path)


def _load_inputs(topo_path: str, job_path: str) -> tuple[Topology, list[Job]]:
    topo = _topology(topo_path)
    jobs = _jobs(job_path)
    for j in jobs:
        j.validate(topo, source=job_path)
    return topo, jobs


# ---------------------------------------------------------------- scheme options (--opt)
# The schemes read their options with dict.get, so a misspelt key or a wrong type would be
# ignored or misread silently (repair=maybe is truthy); the CLI checks them first. Each entry:
# option -> (what it takes, check). Schemes not listed here get their options unchecked.


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _optional(what: str, check: Any) -> tuple[str, Any]:
    return f"{what} or null", lambda v: v is None or check(v)


def _one_of(*values: str) -> tuple[str, Any]:
    return " | ".join(values), lambda v: v in values


_INT = ("an integer", _is_int)
_COUNT = ("an integer >= 0", lambda v: _is_int(v) and v >= 0)
_NUM = ("a number", _is_num)
_POS = ("a number > 0", lambda v: _is_num(v) and v > 0)
_BOOL = ("true | false", lambda v: isinstance(v, bool))
_NUM_MAP = ("a JSON object of numbers", lambda v: isinstance(v, dict) and all(map(_is_num, v.values())))
_BACKEND = _one_of("highs", "cbc")
_COMMON_OPTS = {"seed": _INT, "verbose": _BOOL}
_GOAT_OPTS = {**_COMMON_OPTS, "objective": _one_of("eq1", "eq4"),
              "candidates": _one_of("all", "on_path")}
_KRGS_OPTS = {"repair": _BOOL, "k_rule": _one_of("floor", "ceil")}
_ARO_OPTS = {**_COMMON_OPTS, "pipelines": _optional("an integer >= 1", lambda v: _is_int(v) and v >= 1),
             "quantize": _optional("an integer >= 1", lambda v: _is_int(v) and v >= 1),
             "sro": _optional(*_BOOL), "app_alpha": _optional(*_NUM), "mu": _NUM,
             "beta": _optional(*_NUM_MAP), "time_limit": _POS, "gap": _optional(*_NUM),
             "work_conserving": _optional(*_BOOL), "solver": _BACKEND}
_INART_OPTS = {**_COMMON_OPTS, "aggregation": _one_of("any", "tor", "none"), "rounds": _COUNT,
               "k_paths": ("an integer >= 1", lambda v: _is_int(v) and v >= 1),
               "max_detour": _COUNT, "background": _optional(*_NUM_MAP),
               "any_split_bound": _BOOL}
SCHEME_OPTIONS: dict[str, dict[str, tuple[str, Any]]] = {
    **{name: _COMMON_OPTS for name in ("ps", "geryon", "atp", "switchml", "esa", "grid",
                                       "aggtree", "lbmm", "random")},
    "k-sgd": {**_COMMON_OPTS, "k": ("an integer >= 1", lambda v: _is_int(v) and v >= 1)},
    "goat": {**_GOAT_OPTS, **_KRGS_OPTS, "backend": _BACKEND},
    "goat-ilp": {**_GOAT_OPTS, "solver": _BACKEND, "time_limit": _POS},
    "goat-lp": {**_GOAT_OPTS, "backend": _BACKEND},
    "goat-async": {**_GOAT_OPTS, **_KRGS_OPTS,
                   "history": ("a JSON object of numbers per worker, or a list of numbers",
                               lambda v: (isinstance(v, dict) and all(map(_is_num, v.values())))
                               or (isinstance(v, list) and all(map(_is_num, v)))),
                   "loss_gap": _NUM, "epsilon": _NUM, "sigma2": _NUM,
                   "n": _optional(*_COUNT), "rounds": _optional(*_COUNT)},
    "aro": _ARO_OPTS, "aro-acc": _ARO_OPTS,
    "inart": _INART_OPTS, "inart-equal": _INART_OPTS, "l-inart": _INART_OPTS,
}


def _parse_opts(items: Sequence[str], scheme: str | None = None) -> dict[str, Any]:
    """``KEY=VALUE`` items (VALUE read as JSON when it parses), checked against ``scheme``'s
    options when it has a declared set."""
    accepted = SCHEME_OPTIONS.get(scheme or "")
    opts: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--opt {item!r}: expected KEY=VALUE")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        if accepted is not None:
            if key not in accepted:
                raise UsageError(f"--opt {item}: scheme {scheme} has no option {key!r} "
                                 f"(options: {', '.join(sorted(accepted))})")
            what, check = accepted[key]
            if not check(parsed):
                raise UsageError(f"--opt {item}: {key} takes {what}")
        opts[key] = parsed
    return opts


def cmd_plan(a: argparse.Namespace) -> None:
    options = {"seed": a.seed, **_parse_opts(a.opt, a.scheme)}
    topo, jobs = _load_inputs(a.topology, a.job)
    if a.verbose:
        options["verbose"] = True
    try:
        plan = run_scheme(a.scheme, topo, jobs, options)
    except SchemeUnavailable as e:
        raise UsageError(str(e)) from None
    except ValueError as e:
        raise UsageError(f"plan {a.scheme}: {e}") from None
    _emit(plan.to_dict(), a.output)


def cmd_check(a: argparse.Namespace) -> int:
    topo, jobs = _load_inputs(a.topology, a.job)
    plan = _plan(a.plan)
    report = evaluate_plan(plan, topo, jobs)
    if a.json:
        print(json.dumps({"ok": report.ok, "objective_name": report.objective_name,
                          "metrics": report.metrics,
                          "violations": [{"kind": v.kind, "message": v.message} for v in report.violations]},
                         indent=2))
    else:
        for line in format_report(report):
            print(line)
        print(f"{a.plan}: {'OK' if report.ok else f'{len(report.violations)} violation(s)'}")
    return 0 if report.ok else 1


def cmd_fleet(a: argparse.Namespace) -> int:
    from .fleet import plan_ops, sync_testbed
    if a.pool < 1 or a.pool & (a.pool - 1):
        raise UsageError(f"--pool {a.pool}: a power of two")
    testbed = load_testbed(a.network)
    ops = None
    if a.plan or a.job:
        if not (a.plan and a.job):
            raise UsageError(f"{a.cmd}: --plan and --job go together")
        jobs, plan = _jobs(a.job), _plan(a.plan)
        if a.cmd == "reset":
            if a.job_name not in {j.name for j in jobs}:
                raise UsageError(f"{a.job}: no job named '{a.job_name}' "
                                 f"(jobs: {', '.join(j.name for j in jobs)})")
            jobs = [j for j in jobs if j.name != a.job_name]
        try:
            ops = plan_ops(testbed, jobs, plan, pool_size=a.pool)
        except (ValueError, KeyError) as e:
            raise UsageError(f"{a.plan}: cannot deploy on {a.network}: {e}") from None
    dry = a.cmd == "status" or getattr(a, "dry_run", False)
    reports = sync_testbed(testbed, ops, dry_run=dry, timeout=a.timeout)
    verb = "to configure" if dry else "configured"
    for r in reports:
        print(r.line(verb))
    failed = any(not r.reachable or r.error for r in reports)
    if a.cmd == "status":
        failed = failed or any(r.diff is not None and not r.diff.empty for r in reports)
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        if a.cmd == "topo":
            cmd_topo(a)
        elif a.cmd == "job":
            cmd_job(a)
        elif a.cmd == "plan":
            cmd_plan(a)
        elif a.cmd == "check":
            return cmd_check(a)
        elif a.cmd in ("deploy", "status", "reset"):
            return cmd_fleet(a)
        else:
            print("\n".join(available()))
    except (ModelError, UsageError) as e:
        print(e, file=sys.stderr)
        return 2
    except OSError as e:       # e.g. an output file that cannot be written
        print(f"{e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
