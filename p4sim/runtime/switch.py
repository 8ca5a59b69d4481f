"""A running switch: the compiled program's state plus the control-plane API.

See p4sim/API.md for the contract the STF runner, the P4Runtime server and the port loop use.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

import p4control.errors as errors
from p4sim.errors import CompileError
from . import hashes
from .externs import Counter, Meter, Register, StructRegister
from p4control.model import ActionCall, FieldMatch, ProgramInfo, TableEntry
from .pre import PacketReplicationEngine
from .rt import DataplaneError, PacketContext, register_twice_message
from .tables import Table

if TYPE_CHECKING:
    from ..program import Program


class _TnaHash:
    """A tna ``Hash<W>`` instance: algorithm fixed at construction."""

    __slots__ = ("fn", "width", "out_width", "msb", "extend")

    def __init__(self, algorithm: str, poly: dict | None, width: int) -> None:
        self.out_width = width
        self.msb = False
        self.extend = True
        if poly is not None:
            self.fn = hashes.tna_crc(poly["coeff"], poly["width"], poly["reversed"], poly["init"], poly["xor"])
            self.width = poly["width"]
            self.msb = poly["msb"]
            self.extend = poly["extended"]
        elif algorithm == "identity":
            self.fn = None
            self.width = width
        else:
            name = {"crc8": "crc8", "crc16": "crc16", "crc32": "crc32", "crc64": "crc64",
                    "xor8": "xor8", "xor16": "xor16", "xor32": "xor32", "random": "random"}.get(algorithm)
            if name is None or name not in hashes.ALGORITHMS:
                raise CompileError(f"Hash algorithm {algorithm} is not supported")
            self.fn = hashes.ALGORITHMS[name]
            self.width = {"crc8": 8, "crc16": 16, "crc32": 32, "crc64": 64, "xor8": 8, "xor16": 16,
                          "xor32": 32, "random": 32}[name]

    def get(self, fields: tuple) -> int:
        if self.fn is None:  # identity: the data itself, truncated
            v = 0
            for value, w in fields:
                v = (v << w) | value
            return v & ((1 << self.out_width) - 1)
        h = self.fn(hashes.pack_fields(fields))
        return hashes.tna_hash_output(h, self.width, self.out_width, self.msb, self.extend)


class Switch:
    def __init__(self, program: "Program", cpu_port: int | None = None, seed: int = 0,
                 now: Callable[[], float] = time.monotonic, backend: str | None = None) -> None:
        """``backend``: "python" (the reference), "c" (the program compiled to C; an
        unsupported program or no C compiler is a CompileError) or "auto" (C when possible,
        else Python with one log line saying why); default ``$P4SIM_BACKEND``, else
        :data:`p4sim.runtime.native.DEFAULT_BACKEND`."""
        self.program = program
        native = self._native_program(program, backend)
        self.backend = "c" if native is not None else "python"
        self.info: ProgramInfo = program.info
        self.cpu_port = cpu_port
        self.lock = threading.RLock()
        self.now = now
        self.pre = PacketReplicationEngine()
        self.on_digest: Callable[[str, dict[str, int]], None] | None = None
        self.rng = random.Random(seed)
        self.tables: dict[str, Table] = {}
        self.registers: dict[str, Register] = {}
        self.counters: dict[str, Counter] = {}
        self.meters: dict[str, Meter] = {}
        self._direct_counter_tables: dict[str, str] = {}
        ns: dict[str, Any] = {"__name__": f"p4sim_generated"}
        self._install_helpers(ns)
        for obj in program.compiled.objects:
            made = ns[obj.py_name] = self._make_object(obj.kind, obj.params)
            if native is not None and obj.kind in ("register", "struct_register"):
                made.use_shared_storage()       # before the Python code binds `values`
            if obj.kind in ("register", "struct_register"):
                # generated code indexes the value list directly (see backend/externs.py)
                ns[obj.py_name + "_values"] = made.values
                ns[obj.py_name + "_size"] = made.size
        exec(program.code, ns)
        for obj in program.compiled.objects:
            if obj.kind == "struct_register":      # its element class exists only now
                ns[obj.py_name].bind_class(ns[obj.params["struct_class"]])
        self.ns = ns
        if native is not None:
            from .native import native_pipeline
            self.pipeline: Any = native_pipeline(self, native)
        elif program.arch == "v1model":
            from .v1model import V1ModelPipeline
            self.pipeline = V1ModelPipeline(self)
        else:
            from .tna import TnaPipeline
            self.pipeline = TnaPipeline(self)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _native_program(program: "Program", backend: str | None) -> Any:
        """The program's C build when the chosen backend is (and can be) C, else None."""
        from . import native
        choice, explicit = native.resolve_backend(backend)
        if choice == "python":
            return None
        try:
            return native.load_native(program)
        except (native.CUnsupported, native.NativeUnavailable) as e:
            if choice == "c":
                raise
            level = logging.WARNING if explicit else logging.INFO
            native.log.log(level, "p4sim: %s: using the Python backend: %s", program.path,
                           getattr(e, "message", str(e)))
            return None

    def _make_object(self, kind: str, p: dict[str, Any]) -> Any:
        if kind == "table":
            t = Table(self.info.tables[p["name"]], self.info.actions)
            t.install_const_entries()
            self.tables[p["name"]] = t
            return t
        if kind == "register":
            r = Register(p["name"], p["size"], p["bitwidth"], p["signed"], p["initial"])
            self.registers[p["name"]] = r
            return r
        if kind == "struct_register":
            r = StructRegister(p["name"], p["size"], p["fields"], p["initial"])
            self.registers[p["name"]] = r
            return r
        if kind == "counter":
            c = Counter(p["name"], p["size"], p["unit"])
            self.counters[p["name"]] = c
            return c
        if kind == "direct_counter":
            table = p.get("table")
            if table is None:
                raise CompileError(f"direct counter {p['name']} is not attached to any table")
            self._direct_counter_tables[p["name"]] = table
            return None
        if kind == "meter":
            m = Meter(p["name"], p["size"], p["unit"])
            self.meters[p["name"]] = m
            return m
        if kind == "tna_hash":
            return _TnaHash(p["algorithm"], p["poly"], p["width"])
        raise CompileError(f"internal error: unknown runtime object kind {kind}")

    def _install_helpers(self, ns: dict[str, Any]) -> None:
        rng = self.rng
        ns["_rng"] = rng
        ns["_ctx"] = PacketContext()
        ns["_now"] = self.now

        def v1hash(algo: str, data: bytes, base: int, max_value: int, width: int) -> int:
            # bmv2: base + (hash % max); max 0 is taken as "no modulo"
            h = rng.getrandbits(32) if algo == "random" else hashes.compute(algo, data)
            if max_value:
                h %= max_value
            return (base + h) & ((1 << width) - 1)

        def checksum(algo: str, data: bytes, with_payload: bool, width: int) -> int:
            if with_payload:
                data += ns["_ctx"].payload
            return hashes.compute(algo, data) & ((1 << width) - 1)

        def rand(lo: int, hi: int) -> int:
            return lo if hi <= lo else rng.randint(lo, hi)

        def reg_exec(reg: Register, index: int) -> int:
            _claim(reg)
            return reg.read(index)

        def reg_write(reg: Register, index: int, value: int) -> None:
            _claim(reg)
            reg.write(index, value)

        def _claim(reg: Register) -> None:
            # Tofino: a register's single stateful ALU runs once per packet pass.
            passed = ns["_ctx"].register_pass
            if reg.name in passed:
                raise DataplaneError(register_twice_message(reg.name))
            passed.add(reg.name)

        def fmt(msg: str, data: tuple) -> str:
            vals = [v for v, _ in data]
            try:
                return msg.format(*vals)
            except (IndexError, KeyError, ValueError):
                return f"{msg} {vals}"

        ns.update(_v1hash=v1hash, _checksum=checksum, _random=rand, _reg_exec=reg_exec,
                  _reg_write=reg_write, _claim=_claim, _fmt=fmt,
                  _csum16=hashes.csum16)

    # ------------------------------------------------------------------ data plane
    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet received on ``port``; return the packets sent, in order."""
        return self.pipeline.process(port, bytes(data))

    def emit_digest(self, name: str, value: Any) -> None:
        if self.on_digest is not None:
            self.on_digest(name, struct_to_dict(value))

    # ------------------------------------------------------------------ tables
    def _table(self, name: str) -> Table:
        t = self.tables.get(name)
        if t is None:
            raise errors.NotFound(f"no table named '{name}'")
        return t

    def table_insert(self, table: str, entry: TableEntry) -> None:
        self._table(table).insert(entry)

    def table_modify(self, table: str, entry: TableEntry) -> None:
        self._table(table).modify(entry)

    def table_delete(self, table: str, match: dict[str, FieldMatch], priority: int = 0) -> None:
        self._table(table).delete(match, priority)

    def table_entries(self, table: str) -> list[TableEntry]:
        return self._table(table).entries()

    def table_get(self, table: str, match: dict[str, FieldMatch], priority: int = 0) -> TableEntry:
        return self._table(table).get(match, priority)

    def table_set_default(self, table: str, call: ActionCall) -> None:
        self._table(table).set_default(call)

    def table_reset_default(self, table: str) -> None:
        self._table(table).reset_default()

    def table_get_default(self, table: str) -> ActionCall:
        return self._table(table).default

    def table_clear(self, table: str) -> None:
        self._table(table).clear()

    def direct_counter_read(self, table: str, match: dict[str, FieldMatch], priority: int = 0) -> tuple[int, int]:
        return self._table(table).read_counter(match, priority)

    def direct_counter_write(self, table: str, match: dict[str, FieldMatch], priority: int,
                             packets: int, nbytes: int) -> None:
        self._table(table).write_counter(match, priority, packets, nbytes)

    # ------------------------------------------------------------------ registers, counters, meters
    def _register(self, name: str) -> Register | StructRegister:
        r = self.registers.get(name)
        if r is None:
            raise errors.NotFound(f"no register named '{name}'")
        return r

    def register_read(self, name: str, index: int) -> int | tuple[int, ...]:
        return self._register(name).cp_read(index)

    def register_write(self, name: str, index: int, value: int | tuple[int, ...]) -> None:
        self._register(name).cp_write(index, value)

    def register_reset(self, name: str) -> None:
        self._register(name).reset()

    def _counter(self, name: str) -> Counter:
        c = self.counters.get(name)
        if c is None:
            if name in self._direct_counter_tables:
                raise errors.InvalidArgument(f"'{name}' is a direct counter; read it through its table entries")
            raise errors.NotFound(f"no counter named '{name}'")
        return c

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        return self._counter(name).read(index)

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        self._counter(name).write(index, packets, nbytes)

    def counter_reset(self, name: str) -> None:
        self._counter(name).reset()

    def meter_set_rates(self, name: str, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        m = self.meters.get(name)
        if m is None:
            raise errors.NotFound(f"no meter named '{name}'")
        m.set_rates(index, cir, cburst, pir, pburst)


def struct_to_dict(value: Any) -> dict[str, Any]:
    """Field values of a generated struct/header object (nested structs become dicts)."""
    out: dict[str, Any] = {}
    for f in value.p4_fields:
        v = getattr(value, f)
        out[f] = struct_to_dict(v) if hasattr(v, "p4_fields") else v
    return out
