"""Build and load the C data path: the C files beside this module and the generated
``constants.h``, compiled together at first use through the project's build cache (cbuild)
and loaded with ctypes.

Build: ``cc -O3 -shared -fPIC`` into ``$INAHOST_CACHE_DIR`` (default ``~/.cache/ina-host``),
named by the SHA-256 of the sources, the flags and the compiler's identity; concurrent first
builds (emulation agents starting together) wait for one compiler run; the cache keeps the
most recently used builds within ``$INAHOST_CACHE_MAX_MB`` (default 64). Loading checks the
library against its Python mirrors: every struct field's offset and every shared constant.
No compiler, a failed build, or ``INAHOST_NATIVE=0``: :func:`available` is False and hostlib
runs the Python cores (one log line says why); a failed check raises MirrorMismatch.
"""
from __future__ import annotations

import ctypes
import logging
import os
import threading
from pathlib import Path
from typing import Any

from cbuild import BuildCache, BuildError, megabytes_from_env

from .constants import header, shared_constants, system_constants
from .structs import layout_mismatches

log = logging.getLogger("hostlib.native")

SOURCE_DIR = Path(__file__).parent
SOURCES = ("inahost.h", "encode.c", "worker.c", "ps.c", "udp.c", "layout.c")
GENERATED_HEADER = "constants.h"
CFLAGS = ["-O3", "-shared", "-fPIC", "-ffp-contract=off", "-Wall"]   # no FMA: doubles as Python computes them
LIBS = ["-lm"]
CACHE_MAX_MB = 64


class NativeUnavailable(RuntimeError):
    """The C data path cannot be built or loaded here."""


class MirrorMismatch(RuntimeError):
    """The C library and its Python mirrors disagree (a struct field's offset, a struct's size,
    a shared constant): a defect of the sources, not of the machine, so it is raised wherever
    the library is asked for rather than falling back to the Python cores."""


def cache() -> BuildCache:
    directory = Path(os.environ.get("INAHOST_CACHE_DIR") or Path.home() / ".cache" / "ina-host")
    try:
        limit = megabytes_from_env("INAHOST_CACHE_MAX_MB", CACHE_MAX_MB)
    except ValueError as e:
        raise NativeUnavailable(str(e)) from None
    return BuildCache(directory, "inahost", limit)


def sources() -> dict[str, str]:
    """The files the library is compiled from, by name: the C sources read from
    ``SOURCE_DIR`` and the header generated from the Python constants."""
    out = {name: (SOURCE_DIR / name).read_text() for name in SOURCES}
    out[GENERATED_HEADER] = header()
    return out


def build() -> Path:
    """The shared library, compiled now or taken from the cache."""
    try:
        return cache().build(sources(), CFLAGS, LIBS, what="the native host data path").path
    except BuildError as e:
        raise NativeUnavailable(str(e)) from None


_P, _D, _I = ctypes.c_void_p, ctypes.c_double, ctypes.c_int64
_SIGNATURES: dict[str, tuple[list[Any], Any]] = {
    "ina_field": ([_I, _P, _P, _P], ctypes.c_int),
    "ina_sizeof": ([ctypes.c_char_p], _I),
    "ina_constant": ([_I, _P, _P], ctypes.c_int),
    "ina_encode_frames": ([_P, _I, _P, _I, _I, _I, _I, _P, _P, _P], ctypes.c_int),
    "ina_decode_results": ([_P, _I, _P, _P, _P, _I, _D, _D, _P], None),
    "ina_worker_fill": ([_P, _D], None),
    "ina_worker_timer": ([_P, _D], None),
    "ina_worker_frame": ([_P, _P, _I, _D], ctypes.c_int),
    "ina_worker_next_deadline": ([_P], _D),
    "ina_ps_new": ([_I, _I, _I], _P),
    "ina_ps_free": ([_P], None),
    "ina_ps_job": ([_P, _I], _P),
    "ina_ps_set_newest": ([_P, _I, _I], None),
    "ina_ps_take": ([_P, _I, _I, _I, _I, _P, _P, _P], _I),
    "ina_ps_mark_py": ([_P, _I, _I, _I, _I], _I),
    "ina_ps_collect": ([_P, _I, _D, _I, _P, _P, _P, _P], _I),
    "ina_ps_live": ([_P, _I, _D], _I),
    "ina_ps_next_deadline": ([_P], _D),
    "ina_ps_frame": ([_P, _P, _I, _D], ctypes.c_int),
    "ina_ps_gap": ([_P, _I, _I, _I, _I, _I, _D], ctypes.c_int),
    "ina_io_new": ([_I, _I, _I, _I, _I, _I], _P),
    "ina_io_free": ([_P], None),
    "ina_io_send": ([_P, _P, _I], ctypes.c_int),
    "ina_io_poll": ([_P, _D], ctypes.c_int),
    "ina_worker_udp": ([_P, _P, _D, _D, _D, _I], ctypes.c_int),
    "ina_group_udp": ([_P, _I, _P, _D, _D, _D, _I], ctypes.c_int),
    "ina_ps_udp": ([_P, _P, _D, _D, _D], ctypes.c_int),
}


def library_constants(lib: Any) -> dict[str, float]:
    """Every shared constant as the library was compiled with it (``ina_constant``)."""
    out = {}
    name, value = ctypes.c_char_p(), ctypes.c_double()
    i = 0
    while lib.ina_constant(i, ctypes.byref(name), ctypes.byref(value)):
        out[name.value.decode()] = value.value
        i += 1
    return out


def constant_mismatches(lib: Any) -> list[str]:
    """Shared constants whose value differs between the library and Python (empty: none)."""
    want = {**shared_constants(), **system_constants()}
    got = library_constants(lib)
    return [f"{n}: {got.get(n, 'missing')} in C, {want.get(n, 'missing')} in Python"
            for n in sorted(want.keys() | got.keys()) if got.get(n) != want.get(n)]


_lib: Any = None
_lib_error: str | None = None
_lib_mismatch: MirrorMismatch | None = None
_lib_lock = threading.Lock()


def load() -> Any:
    """The loaded library (built on the first call), or None where it is unavailable; raises
    MirrorMismatch where it differs from its Python mirrors."""
    global _lib, _lib_error, _lib_mismatch
    with _lib_lock:
        if _lib_mismatch is not None:
            raise _lib_mismatch
        if _lib is not None or _lib_error is not None:
            return _lib
        if os.environ.get("INAHOST_NATIVE", "1") == "0":
            _lib_error = "disabled by INAHOST_NATIVE=0"
            return None
        try:
            lib = ctypes.CDLL(str(build()))
        except (NativeUnavailable, OSError) as e:
            _lib_error = str(e)
            log.warning("hostlib: native data path unavailable (%s); using the Python cores", e)
            return None
        for name, (args, res) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
        problems = layout_mismatches(lib) + constant_mismatches(lib)
        if problems:
            _lib_mismatch = MirrorMismatch("the native host data path differs from its Python mirrors: "
                                           + "; ".join(problems))
            raise _lib_mismatch
        _lib = lib
        return lib


def require() -> Any:
    """The loaded library, or NativeUnavailable saying why not."""
    lib = load()
    if lib is None:
        raise NativeUnavailable(_lib_error or "native data path unavailable")
    return lib


def available() -> bool:
    """Whether the C data path is built and loaded (building it on the first call)."""
    return load() is not None


def unavailable_reason() -> str | None:
    load()
    return _lib_error
