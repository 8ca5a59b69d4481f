"""What the C generator's parts share: the supported subset's limits, the specs it hands the
runtime (:class:`CProgram`, registers, hashes, tables), :class:`CUnsupported`, the value
kinds and small helpers. See :mod:`p4sim.backend.cgen` for the design.
"""
from __future__ import annotations

import ast as pyast
import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..errors import CompileError
from ..frontend import ast as p4ast
from ..runtime import hashes
from .compiler import CompiledProgram


MAX_INT_BITS = 127         # the widest P4 value held in an __int128 without losing its sign

# v1model extern functions and methods the C backend does not implement: the P4-level scan
# names them with their position before the generated code is looked at.
_UNSUPPORTED_CALLS = {
    "clone": "clone", "clone3": "clone3", "clone_preserving_field_list": "clone",
    "resubmit": "resubmit", "resubmit_preserving_field_list": "resubmit",
    "recirculate": "recirculate", "recirculate_preserving_field_list": "recirculate",
    "digest": "digest", "random": "random", "log_msg": "log_msg",
    "assert": "assert", "assume": "assume", "count": "counter.count", "execute_meter": "meter",
    "read": None, "write": None,
}

# hash / checksum algorithms implemented in C, with their C enum value
_ALGORITHMS = {"crc32": 1, "crc32_custom": 1, "crc16": 2, "crc16_custom": 2, "csum16": 3,
               "cksum16": 3, "identity": 4, "xor16": 5, "crcCCITT": 6}

_U64 = (1 << 64) - 1

# the architecture blocks a program must have, in pipeline order
ARCH_ROLES = {
    "v1model": ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser"),
    "tna": ("ingress_parser", "ingress", "ingress_deparser", "egress_parser", "egress",
            "egress_deparser"),
}
PARSER_ROLES = ("parser", "ingress_parser", "egress_parser")
DEPARSER_ROLES = ("deparser", "ingress_deparser", "egress_deparser")

# tna Hash<W> algorithms as p4sim/runtime/switch.py's _TnaHash computes them: a CRC (by its
# Rocksoft parameters) or XOR of big-endian words of this many bytes
_TNA_CRCS = {"crc8": hashes.CRC8, "crc16": hashes.CRC16, "crc32": hashes.CRC32,
             "crc64": hashes.CRC64_ECMA}
_TNA_XORS = {"xor8": 1, "xor16": 2, "xor32": 4}


class CUnsupported(CompileError):
    """The program uses a construct the C backend does not implement (the caller falls back
    to the Python backend, or reports this one line when the C backend was forced)."""

    def __init__(self, construct: str, file: str | None = None, line: int | None = None,
                 col: int | None = None) -> None:
        super().__init__(f"unsupported for the C backend: {construct}", file, line, col)
        self.construct = construct


@dataclass
class RegisterSpec:
    py_name: str          # generated-code name prefix (R_..., with _values/_size suffixes)
    name: str             # control-plane name
    size: int
    bitwidth: int
    signed: bool
    index: int            # slot in the C switch's register pointer array
    # tna Register<struct>: the element class and its (name, width, signed) fields, stored in
    # C as one 64-bit word per field (externs.StructRegister.use_shared_storage)
    struct_class: str | None = None
    fields: list[tuple[str, int, bool]] = field(default_factory=list)

    @property
    def wide(self) -> bool:
        return self.bitwidth > 64


@dataclass
class HashSpec:
    """A tna ``Hash<W>`` instance: ``kind`` "crc" (``crc`` set), "xor" (``xor_bytes``) or
    "identity"; the output is fitted to ``out_width`` as hashes.tna_hash_output does."""
    py_name: str
    index: int
    kind: str
    out_width: int
    value_width: int
    crc: hashes.CrcSpec | None = None
    xor_bytes: int = 0
    msb: bool = False
    extend: bool = True


@dataclass
class TableSpec:
    py_name: str
    name: str
    index: int
    nkeys: int
    max_args: int


@dataclass
class CProgram:
    """The C translation of one program plus what the runtime needs to drive it."""
    source: str
    registers: list[RegisterSpec]
    tables: list[TableSpec]
    max_header_bytes: int           # most bytes the deparsers of one pass can emit, together
    reads_timestamps: bool          # the program reads a timestamp the pipeline sets per pass
    arch: str = "v1model"

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()


# ----------------------------------------------------------------------------- value kinds
# The translator tracks what each Python name holds:
INT = "int"                 # an integer or bool (C: i128)
PKTIN, PKTOUT, BUF, ARGS, ENTRY = "pktin", "pktout", "buf", "args", "entry"
RESULTS = "results:"        # results:N, the out/inout results of a P4 function (C: i128[N])


def _ptr(cls: str) -> str:          # a reference to a struct object (C: CLS *)
    return "ptr:" + cls


def _val(cls: str) -> str:          # a struct object owned by this local (C: CLS)
    return "val:" + cls


def _cls_of(kind: str) -> str | None:
    return kind.split(":", 1)[1] if kind.startswith(("ptr:", "val:")) else None


@dataclass
class _Func:
    name: str
    node: pyast.FunctionDef
    param_kinds: list[str] | None = None
    returns_value: bool = False
    result_count: int = 0         # > 0: returns a tuple of that many ints (out/inout results)
    locals: dict[str, str] = field(default_factory=dict)




def _may_raise(e: pyast.expr) -> bool:
    """Whether an expression calls a runtime helper that can raise a DataplaneError."""
    return any(isinstance(n, pyast.Call) and isinstance(n.func, pyast.Name) and n.func.id == "_reg_exec"
               for n in pyast.walk(e))


def _c_string(text: str) -> str:
    """A C string literal of ``text``."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _scan_p4_blocks(comp: CompiledProgram, path: str) -> None:
    """Name unsupported extern calls with their P4 position, from the arch blocks' syntax."""
    for blk in comp.blocks.values():
        decl = blk.decl
        if decl is None:
            continue
        found = _find_unsupported(decl)
        if found is not None:
            name, pos = found
            raise CUnsupported(name, pos.file if pos else path, pos.line if pos else None,
                               pos.col if pos else None)


def _find_unsupported(node: Any) -> tuple[str, Any] | None:
    from dataclasses import fields as dc_fields
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(reversed(n))
            continue
        if not isinstance(n, p4ast.Node):
            continue
        if isinstance(n, p4ast.Call):
            fn = n.func
            name = fn.name if isinstance(fn, p4ast.Name) else None
            if name is not None and _UNSUPPORTED_CALLS.get(name):
                return f"{_UNSUPPORTED_CALLS[name]}()", n.pos
            if isinstance(fn, p4ast.Member) and fn.member in ("count", "execute_meter"):
                return f"{_UNSUPPORTED_CALLS[fn.member]}", n.pos
        if isinstance(n, p4ast.StackTypeRef):
            return "header stacks", n.pos
        for f in dc_fields(n):
            if f.name != "pos" and f.init:
                stack.append(getattr(n, f.name))
    return None
