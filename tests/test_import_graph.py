"""p4sim's import graph has no cycle, and no p4sim source file is over 1,000 lines; the
control-plane vocabulary (``p4control``) is a leaf that p4sim and the controller import, and the
controller stands without p4sim.

The graph is built from the source with ``ast``, not by importing anything:
every module under ``p4sim/`` is a node; every ``import`` / ``from ... import``
anywhere in a module (top level, inside functions, classes, ``try`` blocks)
is an edge to each ``p4sim`` module it names. Relative imports are resolved
against the importing module's package. Importing a package counts as an edge
to its ``__init__``; ``from pkg import name`` is an edge to ``pkg``'s
``__init__`` (it runs, and the name is looked up there first) and also to
``pkg.name`` when that is a module: ``from . import sibling`` depends on the
package's ``__init__`` too, a cycle wherever that ``__init__`` imports back
(``from .sibling import x`` or ``import pkg.sibling as sibling`` do not). The
parents of a dotted name are not edges: every module would otherwise sit in a
cycle with ``p4sim/__init__``. Protoc output (``bfrt/_generated``) is left out.

Imports under an ``if TYPE_CHECKING:`` block are skipped, explicitly: they
never run, so they cannot create a cycle at import time, and they are the
sanctioned way to name a type from a module above without depending on it.

The layering rules (``controller/`` never imports ``p4sim``; ``p4control/``
imports no other package of this repository) count every import, those under
``TYPE_CHECKING`` too: a package that must install without another may not
name it even for annotations.

hostlib has no import cycle either, counting imports inside functions: its sans-IO cores
(``worker``, ``ps``, ``protocol``) import neither the drivers nor the native data path, not even
for annotations — the drivers choose C or Python, and the native path reaches the cores' state
through their ``export_state``/``import_state``. No hostlib source, Python or C, is over 800
lines.

The emulation is a library under a thin command line: its modules have no import cycle either,
and no module under ``emulation/``, ``benchmarks/`` or ``training/`` imports the command line
(``emulation/run.py``) but for the names it defines itself (its argument checks, the hosts'
timers, the link-rate probe); library code comes from the modules it lives in.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "p4sim"
VOCABULARY = ROOT / "p4control"     # the control-plane vocabulary: client and server side
BUILD_CACHE = ROOT / "cbuild"        # the C build cache: p4sim's backend and hostlib's data path
HOSTLIB = ROOT / "hostlib"
SANS_IO_CORES = ["hostlib.worker", "hostlib.worker_group", "hostlib.ps", "hostlib.protocol"]
CORE_FORBIDDEN = ["hostlib.drivers", "hostlib.native"]      # and every module under them
HOSTLIB_MAX_LINES = 800
CONTROLLER = ROOT / "controller"
EMULATION = ROOT / "emulation"
EMULATION_CLI = EMULATION / "run.py"   # the command line: library code lives beside it
CLI_USERS = [EMULATION, ROOT / "benchmarks", ROOT / "training"]
MAX_LINES = 1000


def _module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(pkg: Path = PKG) -> dict[str, Path]:
    return {
        _module_name(p, pkg.parent): p
        for p in sorted(pkg.rglob("*.py"))
        if "_generated" not in p.parts  # protoc output, not ours to shape
    }


def _our_packages() -> set[str]:
    """Top-level Python packages of this repository (a folder with an ``__init__.py``)."""
    return {p.parent.name for p in ROOT.glob("*/__init__.py")}


def _imported_names(path: Path) -> set[str]:
    """Absolute module names every import in the file names, TYPE_CHECKING ones included
    (relative imports stay inside the file's own package)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
    return names


def _importers_of(pkg: Path, forbidden: set[str]) -> dict[str, list[str]]:
    """File of ``pkg`` → the modules it imports from the top-level packages ``forbidden``."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        if "_generated" in path.parts:
            continue
        bad = sorted(n for n in _imported_names(path) if n.split(".")[0] in forbidden)
        if bad:
            out[str(path.relative_to(ROOT))] = bad
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, type_checking: bool = False):
    """Yield every Import/ImportFrom node, skipping ``if TYPE_CHECKING:`` bodies unless
    ``type_checking``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if not type_checking and isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)  # the else branch does run
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The longest known module that `target` names (a.b.c -> a.b if c is an attribute)."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in modules:
            return name
        parts.pop()
    return None


def build_graph(pkg: Path = PKG, type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of ``pkg`` it imports (``type_checking``: those under
    ``TYPE_CHECKING`` too)."""
    modules = _modules(pkg)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        for node in _imports(tree, type_checking):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    if node.level > 1:
                        base = base[: len(base) - (node.level - 1)]
                    base_name = ".".join(base)
                    src = f"{base_name}.{node.module}" if node.module else base_name
                else:
                    src = node.module or ""
                # `from pkg import mod` runs pkg's __init__ and looks the name up
                # there first: an edge to both.
                targets.append(src)
                for alias in node.names:
                    sub = f"{src}.{alias.name}"
                    if sub in modules:
                        targets.append(sub)
            for t in targets:
                dep = _resolve(t, modules)
                if dep is not None and dep != mod:
                    graph[mod].add(dep)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); only components with a cycle are returned."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


@pytest.mark.parametrize("pkg", [PKG, VOCABULARY, EMULATION, HOSTLIB], ids=lambda p: p.name)
def test_no_import_cycle(pkg: Path):
    cycles = strongly_connected(build_graph(pkg))
    assert not cycles, "import cycles (strongly connected components):\n" + "\n".join(
        "  {" + ", ".join(c) + "}" for c in cycles
    )


@pytest.mark.parametrize("pkg", [PKG, VOCABULARY], ids=lambda p: p.name)
def test_no_file_over_1000_lines(pkg: Path):
    big = {
        str(p.relative_to(ROOT)): n
        for p in _modules(pkg).values()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not big, f"files over {MAX_LINES} lines: {big}"


def test_sans_io_cores_import_no_driver():
    """hostlib's cores are sans-IO: they import neither the drivers nor the native data path
    (which the drivers choose), not inside functions nor for annotations."""
    graph = build_graph(HOSTLIB, type_checking=True)
    assert set(SANS_IO_CORES) <= set(graph)
    assert "hostlib.native.library" in graph                # the walker sees the native package
    bad = {core: sorted(dep for dep in graph[core]
                        if any(dep == f or dep.startswith(f + ".") for f in CORE_FORBIDDEN))
           for core in SANS_IO_CORES}
    assert not any(bad.values()), f"sans-IO cores importing a driver or the native path: {bad}"


def test_no_hostlib_source_over_800_lines():
    """Python and C alike (the native data path's C files included)."""
    big = {str(p.relative_to(ROOT)): n for p in sorted(HOSTLIB.rglob("*")) if p.suffix in (".py", ".c", ".h")
           if (n := len(p.read_text().splitlines())) > HOSTLIB_MAX_LINES}
    assert not big, f"hostlib files over {HOSTLIB_MAX_LINES} lines: {big}"


def test_core_check_sees_function_and_type_checking_imports(tmp_path):
    """The cores' check counts an import inside a function, and one under TYPE_CHECKING."""
    pkg = tmp_path / "hostlib"
    (pkg / "native").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "native" / "__init__.py").write_text("")
    (pkg / "drivers.py").write_text("")
    (pkg / "worker.py").write_text("def push():\n    from . import native\n")
    (pkg / "ps.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .drivers import x\n")
    graph = build_graph(pkg, type_checking=True)
    assert "hostlib.native" in graph["hostlib.worker"] and "hostlib.drivers" in graph["hostlib.ps"]
    assert "hostlib.drivers" not in build_graph(pkg)["hostlib.ps"]


def test_controller_does_not_import_p4sim():
    """The controller deploys onto real switches: it must install and run without the simulator."""
    found = _importers_of(CONTROLLER, {"p4sim"})
    assert not found, f"controller files importing p4sim: {found}"


def test_control_plane_vocabulary_is_a_leaf():
    """p4control is imported by p4sim (server side) and the controller (client side); it imports
    nothing of ours, so neither drags the other in."""
    ours = _our_packages() - {VOCABULARY.name}
    assert {"p4sim", "controller"} <= ours            # the check sees the packages it guards
    found = _importers_of(VOCABULARY, ours)
    assert not found, f"p4control files importing other packages of ours: {found}"


def test_build_cache_is_a_leaf():
    """cbuild is imported by p4sim (its C backend) and hostlib (its native data path); it
    imports nothing of ours, so hostlib does not depend on the simulator for it."""
    ours = _our_packages() - {BUILD_CACHE.name}
    assert {"p4sim", "hostlib"} <= ours
    found = _importers_of(BUILD_CACHE, ours)
    assert not found, f"cbuild files importing other packages of ours: {found}"
    assert _importers_of(PKG, {BUILD_CACHE.name})        # one cache, not one per user
    assert _importers_of(HOSTLIB, {BUILD_CACHE.name})


def test_both_sides_use_the_vocabulary():
    """The point of the leaf: the servers and the controller speak it (no second copy)."""
    assert _importers_of(PKG, {VOCABULARY.name})
    assert _importers_of(CONTROLLER, {VOCABULARY.name})


def test_layering_check_sees_every_import_form(tmp_path):
    """The rule walker counts plain, from and TYPE_CHECKING imports, not relative ones."""
    src = tmp_path / "m.py"
    src.write_text(
        "import p4sim.errors\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from controller.model import Job\n"
        "def f():\n    from . import sibling\n    from hostlib import protocol\n"
    )
    assert _imported_names(src) == {"p4sim.errors", "typing", "controller.model", "hostlib"}


def test_graph_sees_relative_and_nested_imports(tmp_path):
    """The walker itself: a relative import inside a function is an edge; TYPE_CHECKING is not."""
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .b import X\n"
        "def f():\n    from . import c\n"
    )
    names = [
        (n.level, n.module, [a.name for a in n.names]) for n in _imports(ast.parse(src))
    ]
    assert (1, None, ["c"]) in names
    assert (1, "b", ["X"]) not in names


def _defined_names(path: Path) -> set[str]:
    """Names a module defines at its top level (functions, classes, assignments), not those
    it imports."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _cli_imports(path: Path, package: str | None = None) -> list[str]:
    """What ``path`` imports from the emulation's command line (``emulation.run``; ``.run``
    inside the ``emulation`` package): each name of a ``from ... import``, or ``"<module>"``
    where it imports the module itself. ``package``: the file's package, for relative imports
    (by default from its place). Every import counts, TYPE_CHECKING ones too."""
    if package is None:
        package = _module_name(path.parent) if (path.parent / "__init__.py").exists() else ""
    cli, pkg = "emulation.run", "emulation"
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += ["<module>" for a in node.names if a.name == cli]
        elif isinstance(node, ast.ImportFrom):
            module = node.module
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            if module == cli:
                out += [a.name for a in node.names]
            elif module == pkg:
                out += ["<module>" for a in node.names if a.name == "run"]
    return out


def test_library_code_does_not_import_the_emulation_cli():
    """``emulation/run.py`` is the command line: other modules may import what it defines itself
    (its argument checks, the hosts' timers, the link-rate probe), not the library code it uses."""
    own = _defined_names(EMULATION_CLI)
    assert {"main", "check_args", "host_timers"} <= own       # the check reads the command line
    bad = {}
    for pkg in CLI_USERS:
        for path in sorted(pkg.rglob("*.py")):
            if path == EMULATION_CLI:
                continue
            names = [n for n in _cli_imports(path) if n not in own]
            if names:
                bad[str(path.relative_to(ROOT))] = names
    assert not bad, f"modules importing library code from emulation.run (import it from its module): {bad}"


def test_cli_import_check_sees_every_form(tmp_path):
    """The walker counts absolute, relative (inside emulation/) and whole-module imports of the
    command line, and nothing else."""
    src = tmp_path / "m.py"
    src.write_text(
        "import emulation.run\n"
        "from emulation import run, agents\n"
        "from emulation.run import main\n"
        "from emulation.schemes import plan_scheme\n"
        "def f():\n    from emulation.run import link_bounds\n"
        "from .run import RTO_MIN\n"
        "from . import run as cli\n"
        "from .schemes import DEPLOYABLE\n"
    )
    assert sorted(_cli_imports(src, "emulation")) == ["<module>", "<module>", "<module>", "RTO_MIN", "link_bounds",
                                                      "main"]
    assert sorted(_cli_imports(src, "training")) == ["<module>", "<module>", "link_bounds", "main"]
    assert "plan_scheme" not in _defined_names(EMULATION_CLI)
