"""The native (C) backend: build the C translation of a v1model or tna program and run packets in it.

``load_native(program)`` generates C (p4sim/backend/cgen.py), compiles it with the system C
compiler into a shared library cached under ``$P4SIM_CACHE_DIR`` (default
``~/.cache/p4sim``) keyed by the SHA-256 of the generated C, the flags and the compiler's
identity (never by where the P4 file lies: a pipeline pushed into a fresh temporary directory
reuses the build), and loads it with ctypes. The cache (the project's shared one, ``cbuild``)
keeps the most recently used builds within ``$P4SIM_CACHE_MAX_MB`` (default 512);
``python -m p4sim cache`` shows or clears it. :class:`NativePipeline` has V1ModelPipeline's
``process(port, data)`` contract; one C call per unicast or dropped packet.

Control-plane state stays in the Python objects: register cells live in C arrays that the
Python ``Register`` exposes as its ``values`` (no copies), tables are compiled into a C
snapshot whenever their ``generation`` changed, multicast groups are read from ``sw.pre``.
"""
from __future__ import annotations

import ctypes
import logging
import os
from array import array
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

from cbuild import Build, BuildCache, BuildError, megabytes_from_env

from ..backend.cgen import CProgram, CUnsupported, generate_c
from ..errors import CompileError
from .rt import DataplaneError
from ..arch.tna import MAX_PASSES as TNA_MAX_PASSES
from ..arch.tna import PORT_METADATA_BYTES, UNSET_PORT
from .tna import leave

if TYPE_CHECKING:
    from ..program import Program
    from .switch import Switch
    from .tables import Table

log = logging.getLogger("p4sim.native")

CFLAGS = ["-O2", "-shared", "-fPIC", "-fwrapv", "-Wall"]
BACKENDS = ("auto", "python", "c")
DEFAULT_BACKEND = "auto"       # C where supported (identical outputs), else Python
REPLICATION = 5            # v1model instance_type of a multicast copy
ERROR = -3                 # P4_ERROR of the generated C: the program raised a DataplaneError
# p4_tna_ingress's info[] (the enum in cgen.tna_pipeline_functions)
(TNA_UCAST, TNA_MCAST, TNA_RID, TNA_BYPASS, TNA_DROP, TNA_RESUBMIT, TNA_RESUBMIT_LEN, TNA_CLONE,
 TNA_SESSION, TNA_MIRROR_LEN, TNA_LEN, TNA_INFO_COUNT) = range(12)
_U64 = (1 << 64) - 1


class NativeUnavailable(CompileError):
    """No usable C toolchain (or the build failed): the Python backend must be used."""


def resolve_backend(requested: str | None) -> tuple[str, bool]:
    """The backend to use and whether it was asked for explicitly (argument or
    ``$P4SIM_BACKEND``) rather than the default."""
    choice = requested or os.environ.get("P4SIM_BACKEND") or ""
    explicit = bool(choice)
    choice = choice or DEFAULT_BACKEND
    if choice not in BACKENDS:
        raise CompileError(f"unknown backend '{choice}' (choose from {', '.join(BACKENDS)})")
    return choice, explicit


CACHE_MAX_MB = 512              # default bound of the build cache (``$P4SIM_CACHE_MAX_MB``)
CACHE_PREFIX = "p4sim"          # build file names: p4sim-<key>.so


def cache_dir() -> Path:
    return Path(os.environ.get("P4SIM_CACHE_DIR") or Path.home() / ".cache" / "p4sim")


def cache_limit_bytes() -> int:
    try:
        return megabytes_from_env("P4SIM_CACHE_MAX_MB", CACHE_MAX_MB)
    except ValueError as e:
        raise CompileError(str(e)) from None


def _cache(directory: Path | None = None, limit_bytes: int | None = None) -> BuildCache:
    return BuildCache(directory or cache_dir(), CACHE_PREFIX,
                      cache_limit_bytes() if limit_bytes is None else limit_bytes)


def cache_entries(directory: Path | None = None) -> list[tuple[Path, int, float]]:
    """The cached builds as (path, bytes, last use), most recently used first."""
    return [(e.path, e.size, e.last_use) for e in _cache(directory, 0).entries()]


def prune_cache(limit_bytes: int | None = None, keep: Path | None = None,
                directory: Path | None = None) -> list[Path]:
    """Remove the least recently used builds until the cache fits ``limit_bytes`` (default:
    ``cache_limit_bytes()``); ``keep`` (the build just made or used) is never removed, and a
    0 limit removes everything else. Returns the removed paths."""
    return _cache(directory, limit_bytes).prune(keep=keep)


BuildResult = Build           # path, and the compiler's warnings ("" from the cache)


def build_shared_library(source: str, origin: str | None = None) -> BuildResult:
    """Compile ``source`` into a shared library, or reuse the cached one (``origin``: the
    P4 program, named in errors)."""
    try:
        return _cache().build({"program.c": source}, CFLAGS, what="the generated code")
    except BuildError as e:
        raise NativeUnavailable(str(e), origin) from None


class NativeProgram:
    """A loaded shared library for one program (shared by every Switch of that program)."""

    def __init__(self, cprog: CProgram, build: BuildResult) -> None:
        self.cprog = cprog
        self.build = build
        lib = ctypes.CDLL(str(build.path))
        vp, u64, i64 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int64
        pu64 = ctypes.POINTER(ctypes.c_uint64)
        lib.p4_new.restype = vp
        lib.p4_new.argtypes = []
        lib.p4_free.restype = None
        lib.p4_free.argtypes = [vp]
        lib.p4_bind_register.restype = None
        lib.p4_bind_register.argtypes = [vp, i64, vp]
        lib.p4_table_load.restype = ctypes.c_int
        lib.p4_table_load.argtypes = [vp, i64, i64, i64, i64, i64, vp, i64, vp, i64, vp]
        lib.p4_error.restype = ctypes.c_char_p
        lib.p4_error.argtypes = [vp]
        if cprog.arch == "tna":
            lib.p4_tna_process.restype = i64
            lib.p4_tna_process.argtypes = [vp, u64, ctypes.c_char_p, i64, u64, vp, vp]
            lib.p4_tna_ingress.restype = i64
            lib.p4_tna_ingress.argtypes = [vp, u64, ctypes.c_char_p, i64, ctypes.c_char_p, u64, u64,
                                           vp, vp]
            lib.p4_tna_egress.restype = i64
            lib.p4_tna_egress.argtypes = [vp, u64, u64, ctypes.c_char_p, i64, vp]
            lib.p4_pass_data.restype = vp
            lib.p4_pass_data.argtypes = [vp, i64]
        else:
            lib.p4_process.restype = i64
            lib.p4_process.argtypes = [vp, u64, ctypes.c_char_p, i64, vp, pu64]
            lib.p4_ingress.restype = i64
            lib.p4_ingress.argtypes = [vp, u64, ctypes.c_char_p, i64, u64, pu64]
            lib.p4_egress.restype = i64
            lib.p4_egress.argtypes = [vp, u64, u64, u64, u64, vp]
        self.lib = lib


def load_native(program: "Program") -> NativeProgram:
    """The program's native build (generated and compiled once per Program object).
    Raises CUnsupported or NativeUnavailable."""
    cached = program.__dict__.get("_p4sim_native")
    if isinstance(cached, Exception):
        raise cached
    if cached is not None:
        return cached
    try:
        cprog = generate_c(program.compiled, program.path)
        native = NativeProgram(cprog, build_shared_library(cprog.source, program.path))
    except (CUnsupported, NativeUnavailable) as e:
        program.__dict__["_p4sim_native"] = e
        raise
    except OSError as e:          # dlopen of a broken cache entry, for one
        err = NativeUnavailable(f"cannot load the native build: {e}")
        program.__dict__["_p4sim_native"] = err
        raise err from None
    program.__dict__["_p4sim_native"] = native
    return native


def native_pipeline(sw: "Switch", native: NativeProgram) -> "NativePipeline":
    """The pipeline of ``sw`` on its program's C build (V1ModelPipeline's or TnaPipeline's
    contract)."""
    if native.cprog.arch == "tna":
        return NativeTnaPipeline(sw, native)
    return NativePipeline(sw, native)


class NativePipeline:
    """V1ModelPipeline's contract on the compiled C program (the tna subclass below shares
    the switch state, registers and tables)."""

    def __init__(self, sw: "Switch", native: NativeProgram) -> None:
        self.sw = sw
        self.native = native
        lib = native.lib
        self._lib = lib
        self._handle = lib.p4_new()
        if not self._handle:
            raise MemoryError("p4_new")
        self._finalizer = _Finalizer(lib, self._handle)
        cprog = native.cprog
        for spec in cprog.registers:
            reg = sw.registers[spec.name]
            lib.p4_bind_register(self._handle, spec.index, reg.use_shared_storage())
        self._tables: list[tuple[int, "Table", int]] = []
        for spec in cprog.tables:
            self._tables.append((spec.index, sw.tables[spec.name], spec.max_args))
            sw.tables[spec.name].on_change = self._mark_stale
        self._loaded_gen: dict[int, int] = {}
        self._stale = True
        self._arg = ctypes.c_uint64(0)
        self._argp = ctypes.pointer(self._arg)
        self._out_size = 0
        self._ensure_out(2048)
        self._timestamps = cprog.reads_timestamps
        self._bind_entry_points(lib)

    def _bind_entry_points(self, lib: ctypes.CDLL) -> None:
        self._process = lib.p4_process
        self._ingress = lib.p4_ingress
        self._egress = lib.p4_egress

    def _mark_stale(self) -> None:
        self._stale = True

    def _ensure_out(self, frame_len: int) -> None:
        need = frame_len + self.native.cprog.max_header_bytes + 64
        if need > self._out_size:
            size = max(need, 65536)
            self._out = ctypes.create_string_buffer(size)
            self._out_addr = ctypes.addressof(self._out)
            self._out_size = size

    # ------------------------------------------------------------------ tables
    def _refresh_tables(self) -> None:
        self._stale = False
        for index, table, nargs in self._tables:
            if self._loaded_gen.get(index) != table.generation:
                self._load_table(index, table, nargs)
                self._loaded_gen[index] = table.generation

    def _load_table(self, index: int, table: "Table", nargs: int) -> None:
        mode, groups, default = table.dataplane_plan()
        nkeys = len(table.info.keys)
        records = array("Q")
        masks_out = array("Q")
        pad = [0] * nargs
        count = 0
        for g, (masks, entries) in enumerate(groups):
            masks_out.extend(masks)
            for e in entries:
                lo = [0] * nkeys
                hi = [_U64] * nkeys
                for pos, low, high in e.ranges:
                    lo[pos], hi[pos] = low, high
                action, args, _ = e.result
                rec = [g, *e.values, *(e.masks if mode == "priority" else masks), *lo, *hi,
                       action, *args, *pad[len(args):]]
                records.extend(rec)
                count += 1
        d_action, d_args, _ = default
        dargs = array("Q", [*d_args, *pad[len(d_args):]] or [0])
        if not records:
            records.append(0)
        if not masks_out:
            masks_out.append(0)
        rc = self._lib.p4_table_load(
            self._handle, index, 0 if mode == "groups" else 1, nkeys, nargs, count,
            records.buffer_info()[0], len(groups) if mode == "groups" else 0,
            masks_out.buffer_info()[0], d_action, dargs.buffer_info()[0])
        if rc != 0:
            raise MemoryError(f"loading table {table.name} into the native backend")

    # ------------------------------------------------------------------ packets
    def _begin(self, n: int) -> None:
        """Before a packet of n bytes: tables up to date, the output buffer large enough."""
        if self._stale:
            self._refresh_tables()
        if n + self.native.cprog.max_header_bytes + 64 > self._out_size:
            self._ensure_out(n)

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        n = len(data)
        self._begin(n)
        if self._timestamps:
            return self._process_with_timestamps(port, data)
        r = self._process(self._handle, port, data, n, self._out_addr, self._argp)
        if r >= 0:
            return [(self._arg.value, ctypes.string_at(self._out_addr, r))]
        if r == -1:
            return []
        if r == ERROR:
            self._raise()
        return self._replicate(self._arg.value)

    def _raise(self) -> None:
        # what the Python backend raises at the same point of the program
        raise DataplaneError(self._lib.p4_error(self._handle).decode())

    def _now_us(self) -> int:
        return int(self.sw.now() * 1e6) & 0xFFFFFFFFFFFF

    def _process_with_timestamps(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        # The clock is read exactly where V1ModelPipeline reads it: once at ingress, once per
        # egress copy.
        decision = self._ingress(self._handle, port, data, len(data), self._now_us(), self._argp)
        if decision == ERROR:
            self._raise()
        if decision == 0:
            return []
        if decision == 2:
            return self._replicate(self._arg.value)
        eport = self._arg.value
        r = self._egress(self._handle, eport, 0, 0, self._now_us(), self._out_addr)
        if r == ERROR:
            self._raise()
        return [(eport, ctypes.string_at(self._out_addr, r))] if r >= 0 else []

    def _replicate(self, group: int) -> list[tuple[int, bytes]]:
        out = []
        for eport, rid in self.sw.pre.multicast_replicas(group):
            ts = self._now_us() if self._timestamps else 0
            r = self._egress(self._handle, eport, rid, REPLICATION, ts, self._out_addr)
            if r == ERROR:
                self._raise()
            if r >= 0:
                out.append((eport, ctypes.string_at(self._out_addr, r)))
        return out


class NativeTnaPipeline(NativePipeline):
    """TnaPipeline's contract on the compiled C program: C runs each ingress and egress pass
    (the usual unicast packet in one call); resubmits, mirror copies, multicast replicas and
    the pass limit are driven here in TnaPipeline's order."""

    def _bind_entry_points(self, lib: ctypes.CDLL) -> None:
        self._tna_process = lib.p4_tna_process
        self._tna_ingress = lib.p4_tna_ingress
        self._tna_egress = lib.p4_tna_egress
        self._info = (ctypes.c_uint64 * TNA_INFO_COUNT)()
        self._info_addr = ctypes.addressof(self._info)
        self._resubmit_addr = lib.p4_pass_data(self._handle, 0)
        self._mirror_addr = lib.p4_pass_data(self._handle, 1)

    def _tstamp(self) -> int:
        # read where TnaPipeline reads it (once per ingress pass), only if the program can see it
        return int(self.sw.now() * 1e9) & 0xFFFFFFFFFFFF if self._timestamps else 0

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        n = len(data)
        self._begin(n)
        info = self._info
        r = self._tna_process(self._handle, port, data, n, self._tstamp(), self._out_addr,
                              self._info_addr)
        if r >= 0:
            return [(info[TNA_UCAST], ctypes.string_at(self._out_addr, r))]
        if r == -1:
            return []
        if r == ERROR:
            self._raise()
        out: list[tuple[int, bytes]] = []
        work: deque = deque()
        self._after_ingress(port, data, 0, ctypes.string_at(self._out_addr, info[TNA_LEN]), work, out)
        while work:
            item = work.popleft()
            if item[0] == "ingress":
                self._ingress_pass(*item[1:], work, out)
            else:
                self._egress_pass(*item[1:], work, out)
        return out

    def _ingress_pass(self, port: int, data: bytes, resubmit_data: bytes | None, passes: int,
                      work: deque, out: list) -> None:
        """A resubmitted (resubmit data) or recirculated (None) packet's next ingress pass."""
        self._ensure_out(len(data))
        port_md = (resubmit_data or b"").ljust(PORT_METADATA_BYTES, b"\0")[:PORT_METADATA_BYTES]
        r = self._tna_ingress(self._handle, port, data, len(data), port_md, int(resubmit_data is not None),
                              self._tstamp(), self._out_addr, self._info_addr)
        if r == ERROR:
            self._raise()
        self._after_ingress(port, data, passes, ctypes.string_at(self._out_addr, r), work, out)

    def _after_ingress(self, port: int, data: bytes, passes: int, deparsed: bytes,
                       work: deque, out: list) -> None:
        """TnaPipeline._ingress after the deparser: mirror copies, resubmit, drop, multicast
        and unicast, in its order."""
        info = self._info
        sw = self.sw
        if info[TNA_CLONE]:
            mirror_hdr = ctypes.string_at(self._mirror_addr, info[TNA_MIRROR_LEN])
            for eport, rid in sw.pre.clone_replicas(info[TNA_SESSION]):
                work.append(("egress", eport, rid, mirror_hdr + deparsed, passes))
        if info[TNA_RESUBMIT]:
            if passes < TNA_MAX_PASSES:
                resubmit_data = ctypes.string_at(self._resubmit_addr, info[TNA_RESUBMIT_LEN])
                work.append(("ingress", port, data, resubmit_data, passes + 1))
            return
        if info[TNA_DROP] & 1:
            return
        targets: list[tuple[int, int]] = []
        if info[TNA_MCAST]:
            targets.extend(sw.pre.multicast_replicas(info[TNA_MCAST]))
        if info[TNA_UCAST] != UNSET_PORT:
            targets.append((info[TNA_UCAST], info[TNA_RID]))
        bypass = info[TNA_BYPASS]
        for eport, rid in targets:
            if bypass:
                leave(eport, deparsed, passes, work, out)
            else:
                work.append(("egress", eport, rid, deparsed, passes))

    def _egress_pass(self, eport: int, rid: int, data: bytes, passes: int, work: deque, out: list) -> None:
        self._ensure_out(len(data))
        r = self._tna_egress(self._handle, eport, rid, data, len(data), self._out_addr)
        if r == ERROR:
            self._raise()
        if r >= 0:
            leave(eport, ctypes.string_at(self._out_addr, r), passes, work, out)


class _Finalizer:
    """Frees the C switch state when the pipeline goes away."""

    def __init__(self, lib: ctypes.CDLL, handle: int) -> None:
        self._free = lib.p4_free
        self._handle = handle

    def __del__(self) -> None:
        if self._handle:
            self._free(self._handle)
            self._handle = 0


__all__ = ["BACKENDS", "DEFAULT_BACKEND", "NativePipeline", "NativeProgram", "NativeTnaPipeline",
           "NativeUnavailable", "build_shared_library", "load_native", "native_pipeline",
           "resolve_backend"]
