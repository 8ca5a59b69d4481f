"""README.md and docs/*.md stay true to the code they describe.

* every ``make TARGET`` quoted in code (inline or fenced) is a target of the Makefile;
* every ``python -m MODULE`` quoted names a module that exists and runs: one of ours with a
  ``main`` (a package through its ``__main__.py``), or an installed one;
* a fenced ``python -m`` command under a heading that names ``make TARGET`` is the command the
  Makefile runs for that target;
* every default quoted for a command-line option — ``--opt`` (default V), ``--opt`` defaults to
  V, or a row of an options table with a *default* column — is the default of the command the
  section is about (the last ``python -m MODULE`` quoted before it in the section, else
  ``python -m emulation.run``); ``DEFAULT_WINDOW`` and ``RTO_MIN`` quoted with a value are the
  code's, and so is the window ``make run-fattree`` is said to run;
* README.md is at most 300 lines, links every document in docs/, and every relative link or
  ``docs/`` path in the documents exists inside the repository (anchors included);
* no document speaks of how it was made: work sessions, issue numbers, the people at work.

Everything is parsed with regular expressions; parsers are read by calling each command's
``main`` with ``ArgumentParser.parse_args`` replaced, so nothing runs.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
ALL = [README, *DOCS]
MAX_README_LINES = 300
DEFAULT_CLI = "emulation.run"

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")
MAKE = re.compile(r"(?:^|[\s;&|(])make\s+([A-Za-z][\w.-]*)")
PYTHON_M = re.compile(r"python3?\s+-m\s+([A-Za-z_][\w.]*)")
TARGET = re.compile(r"^([A-Za-z][\w.-]*)\s*:(?!=)", re.M)
HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOCS_PATH = re.compile(r"(?<![\w/.])docs/[\w./-]*\w")
# `--opt` (default V) / `--opt`, default V / `--opt` defaults to V
INLINE_DEFAULT = re.compile(r"`(--[a-z][\w-]*)`[^`|]{0,25}?\bdefaults?(?:\s+to)?:?\s+`?([^\s`,;:)]+)")
TABLE_ROW = re.compile(r"^\|(.*)\|\s*$", re.M)
FORBIDDEN = re.compile(r"\b(?:session|issue)\s+#?\d|\bother\s+engineers\b|\bthis\s+session\b", re.I)
CONSTANTS = {   # name quoted in the docs -> (module, attribute)
    "DEFAULT_WINDOW": ("hostlib.worker", "DEFAULT_WINDOW"),
    "RTO_MIN": ("emulation.run", "RTO_MIN"),
}
CONSTANT = re.compile(r"\b(" + "|".join(CONSTANTS) + r")`?\s*(?:[,:=]|is)?\s*`?(\d+(?:\.\d+)?)\b")


def load(module: str) -> Any:
    """Import ``module``; skip where it needs Mininet and Debian's package is absent (the
    emulation's modules import it), as the emulation's own tests do."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == "mininet":
            pytest.skip(f"{module} needs Mininet (Debian package mininet), which is not installed")
        raise


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def line_of(s: str, pos: int) -> int:
    return s.count("\n", 0, pos) + 1


def code_snippets(s: str) -> Iterator[tuple[int, str]]:
    """(offset, text) of every fenced block and of every inline code span outside them."""
    spans = []
    for m in FENCE.finditer(s):
        yield m.start(1), m.group(1)
        spans.append((m.start(), m.end()))
    for m in SPAN.finditer(s):
        if not any(a <= m.start() < b for a, b in spans):
            yield m.start(1), m.group(1)


def makefile_targets() -> set[str]:
    return set(TARGET.findall(text(ROOT / "Makefile")))


def our_packages() -> set[str]:
    return {p.parent.name for p in ROOT.glob("*/__init__.py")}


def quoted(pattern: re.Pattern[str]) -> list[tuple[Path, int, str]]:
    """(document, line, first group) of every match of ``pattern`` inside code."""
    out = []
    for doc in ALL:
        s = text(doc)
        for off, code in code_snippets(s):
            for m in pattern.finditer(code):
                out.append((doc, line_of(s, off + m.start()), m.group(1)))
    return out


def where(doc: Path, line: int) -> str:
    return f"{doc.relative_to(ROOT)}:{line}"


# ---------------------------------------------------------------------------- make, python -m
def test_quoted_make_targets_exist() -> None:
    targets = makefile_targets()
    assert {"test", "run-fattree", "setup"} <= targets
    found = quoted(MAKE)
    assert any(t == "test" for _, _, t in found), "README must quote `make test`"
    bad = [f"{where(d, n)}: make {t}" for d, n, t in found if t not in targets]
    assert not bad, "no such Makefile target:\n" + "\n".join(bad)


def module_source(name: str) -> Path | None:
    """The file ``python -m name`` runs, for a module of this repository."""
    base = ROOT.joinpath(*name.split("."))
    if (base / "__init__.py").exists():
        return base / "__main__.py" if (base / "__main__.py").exists() else None
    return base.with_suffix(".py") if base.with_suffix(".py").exists() else None


def runs_main(path: Path) -> bool:
    """``path`` defines ``main`` and calls something under ``if __name__ == "__main__"``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    has_main = any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "main" for n in tree.body)
    guarded = any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)
    return has_main and guarded


def test_quoted_python_modules_run() -> None:
    ours = our_packages()
    found = quoted(PYTHON_M)
    assert any(m == "emulation.run" for _, _, m in found)
    bad = []
    for doc, line, name in found:
        if name.endswith("."):          # a placeholder such as `python -m experiments.<name>`
            continue
        if name.split(".")[0] in ours:
            src = module_source(name)
            if src is None or not runs_main(src):
                bad.append(f"{where(doc, line)}: python -m {name}: no module with a main")
        elif importlib.util.find_spec(name) is None:
            bad.append(f"{where(doc, line)}: python -m {name}: not installed")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------- defaults
class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


@lru_cache(maxsize=None)
def option_defaults(module: str) -> dict[str, Any]:
    """``--option`` → default of ``python -m module`` (and of all its sub-commands)."""
    src = module_source(module)
    mod = load(module + ".__main__" if src is not None and src.name == "__main__.py" else module)

    def capture(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Parsed(self)

    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = capture        # type: ignore[method-assign]
    try:
        mod.main([])
    except _Parsed as p:
        parser = p.parser
    else:
        raise AssertionError(f"{module}.main did not parse arguments")
    finally:
        argparse.ArgumentParser.parse_args = original    # type: ignore[method-assign]
    out: dict[str, Any] = {}

    def walk(ap: argparse.ArgumentParser) -> None:
        for action in ap._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)
            for opt in action.option_strings:
                if opt.startswith("--"):
                    out.setdefault(opt, action.default)
    walk(parser)
    return out


def same(quoted_value: str, default: Any) -> bool | None:
    """Whether a quoted value is the default; None where the quote is a description."""
    q = quoted_value.strip().strip("`").strip()
    try:
        number = float(q)
    except ValueError:
        number = None
    if default is None:
        return None if number is None else False
    if number is None:
        return str(default) == q
    try:
        return float(default) == number
    except (TypeError, ValueError):
        return str(default) == q


def sections(s: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the heading-delimited sections of ``s``."""
    starts = [0] + [m.start() for m in HEADING.finditer(s)] + [len(s)]
    return [(a, b) for a, b in zip(starts, starts[1:]) if b > a]


def cli_at(s: str, pos: int) -> str:
    """The command a default at ``pos`` belongs to: the last ``python -m X`` of its section."""
    start = max(a for a, _ in sections(s) if a <= pos)
    mods = PYTHON_M.findall(s[start:pos])
    return mods[-1] if mods else DEFAULT_CLI


def quoted_defaults() -> list[tuple[Path, int, str, str, str]]:
    """(document, line, command, --option, quoted value) of every default quoted."""
    out = []
    for doc in ALL:
        s = text(doc)
        for m in INLINE_DEFAULT.finditer(s):
            out.append((doc, line_of(s, m.start()), cli_at(s, m.start()), m.group(1), m.group(2)))
        # options tables: a header row with an "option" and a "default" column
        rows = list(TABLE_ROW.finditer(s))
        columns: list[str] | None = None
        for i, row in enumerate(rows):
            cells = [c.strip() for c in row.group(1).split("|")]
            if i and rows[i - 1].end() + 1 < row.start():
                columns = None                           # a new table
            if columns is None:
                low = [c.lower() for c in cells]
                columns = low if "default" in low and "option" in low else []
                continue
            if not columns or set(row.group(1)) <= set("-: |"):
                continue
            opts = re.findall(r"`(--[\w-]+)`", cells[columns.index("option")])
            if not opts:
                continue
            value = cells[columns.index("default")]
            values = [v.strip() for v in value.split(", ")] if len(opts) > 1 and ", " in value else [value] * len(opts)
            if len(values) != len(opts):
                values = [value] * len(opts)
            for opt, v in zip(opts, values):
                out.append((doc, line_of(s, row.start()), cli_at(s, row.start()), opt,
                            re.sub(r"\s*s$", "", v.strip("`").strip())))
    return out


def test_quoted_defaults_are_the_code_defaults() -> None:
    found = quoted_defaults()
    checked = {(cli, opt) for _, _, cli, opt, _ in found}
    for key in (("emulation.run", "--window"), ("emulation.run", "--rto-min")):
        assert key in checked, f"no document quotes the default of {key[0]} {key[1]}"
    bad = []
    for doc, line, cli, opt, value in found:
        defaults = option_defaults(cli)
        if opt not in defaults:
            bad.append(f"{where(doc, line)}: {opt} is no option of python -m {cli}")
            continue
        if same(value, defaults[opt]) is False:
            bad.append(f"{where(doc, line)}: python -m {cli} {opt}: quoted default {value!r}, "
                       f"the code's is {defaults[opt]!r}")
    assert not bad, "\n".join(bad)


def test_the_emulation_defaults_are_the_named_constants() -> None:
    defaults = option_defaults("emulation.run")
    assert defaults["--window"] == load("hostlib.worker").DEFAULT_WINDOW
    assert defaults["--rto-min"] == load("emulation.run").RTO_MIN


def test_quoted_constants() -> None:
    bad = []
    seen = set()
    for doc in ALL:
        s = text(doc)
        for m in CONSTANT.finditer(s):
            module, attr = CONSTANTS[m.group(1)]
            value = getattr(load(module), attr)
            seen.add(m.group(1))
            if float(m.group(2)) != float(value):
                bad.append(f"{where(doc, line_of(s, m.start()))}: {m.group(1)} quoted as {m.group(2)}, is {value}")
    assert "DEFAULT_WINDOW" in seen
    assert not bad, "\n".join(bad)


def test_run_fattree_window_as_quoted() -> None:
    recipe = re.search(r"^run-fattree:.*?(?=^\S|\Z)", text(ROOT / "Makefile"), re.M | re.S)
    assert recipe is not None
    window = re.search(r"--window\s+(\d+)", recipe.group(0))
    assert window is not None
    pattern = re.compile(r"make run-fattree`?\s+runs\s+`?--window\s+(\d+)")
    found = [(doc, m) for doc in ALL for m in pattern.finditer(text(doc))]
    assert found, "no document says which window make run-fattree runs"
    bad = [f"{where(doc, line_of(text(doc), m.start()))}: --window {m.group(1)}, the Makefile runs {window.group(1)}"
           for doc, m in found if m.group(1) != window.group(1)]
    assert not bad, "\n".join(bad)


def recipe_command(target: str) -> list[str]:
    """The tokens of a Makefile target's ``$(PY) -m ...`` command, as a person types it."""
    m = re.search(rf"^{re.escape(target)}:.*?(?=^\S|\Z)", text(ROOT / "Makefile"), re.M | re.S)
    assert m is not None, f"no Makefile target {target}"
    body = m.group(0).replace("\\\n", " ")
    line = next(ln for ln in body.splitlines() if "-m " in ln)
    line = line.replace("$(PY)", "python").replace("$(LINK_MBPS)", "auto")
    return re.sub(r"\$\(if \$\(\w+\),[^)]*\)\s*", "", line).split()


def test_make_commands_as_documented() -> None:
    """A fenced ``python -m`` command under a heading that names ``make TARGET`` is that target's."""
    checked = 0
    for doc in ALL:
        s = text(doc)
        for start, end in sections(s):
            heading = HEADING.match(s, start)
            named = heading and re.search(r"make ([\w-]+)", heading.group(1))
            if not named or named.group(1) not in makefile_targets():
                continue
            for block in FENCE.finditer(s, start, end):
                cmd = block.group(1).replace("\\\n", " ")
                if not re.match(r"\s*python3? -m ", cmd):
                    continue
                want = recipe_command(named.group(1))
                assert cmd.split() == want, (f"{where(doc, line_of(s, block.start()))}: the command shown for "
                                             f"make {named.group(1)} is not the Makefile's:\n{' '.join(want)}")
                checked += 1
    assert checked, "no document shows the command a make target runs"


# ---------------------------------------------------------------------------- README, links, wording
def test_readme_is_short() -> None:
    n = len(text(README).splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES}): move detail to docs/"


def test_readme_indexes_every_document() -> None:
    linked = {Path(t.split("#")[0]) for t in LINK.findall(text(README))}
    missing = [d.name for d in DOCS if Path("docs") / d.name not in linked]
    assert not missing, f"README.md links no {', '.join(missing)}"
    assert Path("CHANGELOG.md") in linked


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    h = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return h.replace(" ", "-")


def test_links_and_paths_exist() -> None:
    bad = []
    for doc in [*ALL, ROOT / "CHANGELOG.md"]:
        s = text(doc)
        for m in LINK.finditer(s):
            target = m.group(1)
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path_part, _, anchor = target.partition("#")
            path = (doc.parent / path_part).resolve()
            if ROOT not in path.parents and path != ROOT:
                bad.append(f"{where(doc, line_of(s, m.start()))}: {target} is outside the repository")
            elif not path.exists():
                bad.append(f"{where(doc, line_of(s, m.start()))}: {target} does not exist")
            elif anchor and path.suffix == ".md":
                anchors = {slug(h) for h in HEADING.findall(text(path))}
                if anchor not in anchors:
                    bad.append(f"{where(doc, line_of(s, m.start()))}: no heading #{anchor} in {path_part}")
        for m in DOCS_PATH.finditer(s):
            if not (ROOT / m.group(0)).exists():
                bad.append(f"{where(doc, line_of(s, m.start()))}: {m.group(0)} does not exist")
        if "../shared" in s:
            bad.append(f"{doc.relative_to(ROOT)}: points outside the repository (../shared)")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("doc", ALL, ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_speak_of_the_product(doc: Path) -> None:
    s = text(doc)
    bad = [f"{where(doc, line_of(s, m.start()))}: {m.group(0)!r}" for m in FORBIDDEN.finditer(s)]
    assert not bad, "documents describe the product, not its making:\n" + "\n".join(bad)
