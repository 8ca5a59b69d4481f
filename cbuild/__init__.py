"""A cache of C shared libraries built with the system C compiler, for the project's native paths.

p4sim's C backend (``p4sim/runtime/native.py``) and hostlib's native data path
(``hostlib/native``) both compile C at first use and load it with ctypes. They share this module:

* a build is named by the SHA-256 of its sources (names and text), the flags and the
  compiler's identity, never by where the sources lie, so a program pushed into a fresh
  temporary directory, or a copy of the sources, reuses the build;
* it is compiled in a temporary directory inside the cache and renamed into place (atomic),
  and processes that start together (emulation agents on a 2-core machine) wait for one
  compiler run under a per-build ``flock`` instead of running one each;
* the cache keeps the most recently used builds within a bound (a hit refreshes a build's
  modification time; every new build prunes the least recently used beyond the bound).

It imports nothing else of this project (a leaf: ``tests/test_import_graph.py`` checks), so
both p4sim and hostlib may depend on it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

try:
    import fcntl
except ImportError:            # not POSIX: concurrent builders race (harmlessly, see the rename)
    fcntl = None               # type: ignore[assignment]


class BuildError(Exception):
    """No usable C compiler, or the build failed; the message says which, for a user."""


@dataclass
class Build:
    path: Path
    warnings: str          # the compiler's diagnostics when it was built now ("" from the cache)


@dataclass(frozen=True)
class CacheEntry:
    path: Path
    size: int              # bytes
    last_use: float        # its modification time: refreshed by every hit


def compiler() -> tuple[str, str]:
    """Path and identity (its ``--version`` banner) of the C compiler: ``$CC``, else ``cc``."""
    cc = shutil.which(os.environ.get("CC") or "cc")
    if cc is None:
        raise BuildError("no C compiler found (cc; set $CC to choose one)")
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BuildError(f"C compiler {cc} does not run: {e}") from None
    return cc, (out.stdout.splitlines() or [""])[0]


def megabytes_from_env(variable: str, default_mb: float) -> int:
    """A cache bound in bytes from ``$variable`` (megabytes; ``default_mb`` when unset);
    ValueError, naming the variable, when it is not a number."""
    raw = os.environ.get(variable)
    try:
        mb = float(raw) if raw else default_mb
    except ValueError:
        raise ValueError(f"{variable}={raw!r} is not a number of megabytes") from None
    return max(0, int(mb * 2**20))


@dataclass(frozen=True)
class BuildCache:
    """One directory of builds named ``<prefix>-<key>.so``, kept within ``limit_bytes``."""
    directory: Path
    prefix: str
    limit_bytes: int

    def entries(self) -> list[CacheEntry]:
        """The cached builds, most recently used first."""
        out = []
        for path in self.directory.glob(f"{self.prefix}-*.so"):
            try:
                st = path.stat()
            except OSError:         # removed by a concurrent prune
                continue
            out.append(CacheEntry(path, st.st_size, st.st_mtime))
        out.sort(key=lambda e: e.last_use, reverse=True)
        return out

    def prune(self, limit_bytes: int | None = None, keep: Path | None = None) -> list[Path]:
        """Remove the least recently used builds until the cache fits ``limit_bytes`` (default:
        the cache's bound); ``keep`` (the build just made or used) is never removed, and a 0
        limit removes everything else. A library still mapped by a running process stays valid
        after its file is unlinked. Returns the removed paths."""
        limit = self.limit_bytes if limit_bytes is None else limit_bytes
        total = 0
        removed = []
        for e in self.entries():
            if e.path == keep or total + e.size <= limit:
                total += e.size
                continue
            try:
                e.path.unlink()
                removed.append(e.path)
            except FileNotFoundError:
                pass
        return removed

    def build(self, sources: Mapping[str, str], cflags: Sequence[str], libs: Sequence[str] = (),
              what: str = "the C sources", timeout: float = 600) -> Build:
        """The shared library of ``sources`` (file name -> text; every ``.c`` is compiled, the
        others are there to be included), compiled now or taken from the cache. ``what`` names
        the sources in a compiler error. Raises BuildError."""
        cc, ident = compiler()
        key = _key(sources, [*cflags, *libs], ident)
        target = self.directory / f"{self.prefix}-{key[:32]}.so"
        if _touch(target):
            return Build(target, "")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with _BuildLock(self.directory / f".lock-{self.prefix}-{key[:32]}"):
                if _touch(target):      # another process built it while this one waited
                    return Build(target, "")
                warnings = _compile(cc, sources, cflags, libs, self.directory, target, what, timeout)
            self.prune(keep=target)
        except OSError as e:
            raise BuildError(f"cannot build in {self.directory}: {e.strerror or e}") from None
        except subprocess.TimeoutExpired:
            raise BuildError("C compiler timed out") from None
        return Build(target, warnings)


def _key(sources: Mapping[str, str], flags: Sequence[str], ident: str) -> str:
    """What determines the binary: the sources by name and text, the flags, the compiler."""
    parts = [f"{name}\0{text}" for name, text in sorted(sources.items())]
    return hashlib.sha256("\0\0".join([*parts, " ".join(flags), ident]).encode()).hexdigest()


def _touch(target: Path) -> bool:
    """Whether ``target`` is built; if so its last use is now (the least-recently-used bound)."""
    if not target.exists():
        return False
    try:
        os.utime(target)
    except OSError:
        pass                    # a read-only cache still serves its builds
    return True


def _compile(cc: str, sources: Mapping[str, str], cflags: Sequence[str], libs: Sequence[str], directory: Path,
             target: Path, what: str, timeout: float) -> str:
    """Compile into ``target`` (written in a temporary directory beside it, then renamed: atomic,
    so concurrent builders race harmlessly). Returns the compiler's diagnostics."""
    with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as tmp:
        for name, text in sources.items():
            (Path(tmp) / name).write_text(text)
        so_tmp = Path(tmp) / "build.so"
        c_files = [str(Path(tmp) / name) for name in sorted(sources) if name.endswith(".c")]
        r = subprocess.run([cc, *cflags, "-o", str(so_tmp), *c_files, *libs], capture_output=True, text=True,
                           timeout=timeout, cwd=tmp)
        if r.returncode != 0:
            first = next((ln for ln in r.stderr.splitlines() if "error" in ln), r.stderr.strip()[:200])
            raise BuildError(f"C compiler failed on {what}: {first.strip()}")
        os.replace(so_tmp, target)
    return r.stderr


class _BuildLock:
    """An exclusive ``flock`` on a lock file for one build, removed by its holder on release so
    the cache holds only builds. A waiter that wakes on the removed file finds the build done
    (the rename comes first); a newcomer creates a fresh file — two compiler runs at worst, and
    only where the first failed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = None

    def __enter__(self) -> "_BuildLock":
        self.file = open(self.path, "w")
        if fcntl is not None:
            try:
                fcntl.flock(self.file, fcntl.LOCK_EX)
            except OSError:             # a file system without locks: race, harmlessly
                pass
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.file is not None
        try:
            # only the file this holder locked: a newcomer may have made another at the path
            if os.path.samestat(os.fstat(self.file.fileno()), os.stat(self.path)):
                os.unlink(self.path)
        except OSError:
            pass
        self.file.close()
