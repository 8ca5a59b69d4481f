"""C code generator for v1model and tna programs (the native backend, see p4sim/runtime/native.py).

Input: the :class:`CompiledProgram` the Python code generator produced. That generator checks
and lowers the P4 program in one pass without a separate IR; what it emits is a small, regular
language: actions inlined at their call sites and at table dispatch, P4 locals as locals, every
P4 wrap-around written out as a mask, headers as classes with ``unpack_from``/``pack``. This
module translates that lowered program (parsed with Python's ``ast``) into C, using the
program's type tables (``CompiledProgram.types``) for the layout of headers and structs. The C
code therefore has the reference backend's semantics by construction, without a second P4
front end or type checker.

Value model: every integer expression is evaluated in ``__int128`` (Python ints are unbounded;
all P4 values the supported programs hold fit in 127 bits, and every intermediate the Python
code compares unmasked, e.g. a saturating add, fits too), so comparisons, right shifts and the
masks the Python code applies give the same results. Fields are stored as ``uint64_t`` /
``int64_t`` up to 64 bits and as ``__int128`` up to 127 bits.

Architectures: v1model (bmv2 simple_switch, as p4sim/runtime/v1model.py) and tna (as
p4sim/runtime/tna.py: intrinsic metadata prefixes, RegisterAction with Tofino's one execution
per register per pass, Hash, Resubmit, Mirror, the deparser's Checksum). The C code runs one
pipeline pass per call; the runtime (native.py) drives resubmits, mirrors and multicast copies
in the order the Python pipelines do.

Anything outside the supported subset raises :class:`CUnsupported` naming the construct, so
the caller can fall back to the Python backend.
"""
from __future__ import annotations

import ast as pyast
import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..errors import CompileError
from ..frontend import ast as p4ast
from ..frontend.types import BitT, BoolT, EnumT, ErrorT, StructT
from ..runtime import hashes
from ..runtime.rt import register_twice_message
from .codewriter import POS_MARKER
from .compiler import CompiledProgram, Compiler

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

V1_DROP_PORT = 511
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


class _Gen:
    def __init__(self, comp: CompiledProgram, path: str) -> None:
        self.comp = comp
        self.path = path
        self.module = pyast.parse(comp.source)
        self.classes: dict[str, StructT] = {}
        for t in comp.types.values():
            if isinstance(t, StructT) and getattr(t, "py_class", None):
                self.classes[t.py_class] = t
        self.funcs: dict[str, _Func] = {}
        for node in self.module.body:
            if isinstance(node, pyast.FunctionDef):
                self.funcs[node.name] = _Func(node.name, node)
        self.registers: dict[str, RegisterSpec] = {}
        self.tables: dict[str, TableSpec] = {}
        self.hashes: dict[str, HashSpec] = {}
        self.arch = comp.arch
        self.roles = ARCH_ROLES[comp.arch]
        # bytes of the largest resubmit / mirror field list (tna), sized at generation
        self.resubmit_bytes = 0
        self.mirror_bytes = 0
        self.out: list[str] = []
        self._tmp = 0
        self.used_classes: set[str] = set()

    # ------------------------------------------------------------------ errors
    def fail(self, construct: str, node: Any = None) -> CUnsupported:
        """The error for a construct at a node of the generated code: named by the P4
        position the code generator marked it with, else by the generated line."""
        line = getattr(node, "lineno", None)
        pos = self.p4_position(line) if line else None
        if pos is not None:
            return CUnsupported(construct, *pos)
        where = f" (generated line {line})" if line else ""
        return CUnsupported(construct + where, self.path)

    def p4_position(self, line: int) -> tuple[str, int, int] | None:
        """The P4 file:line:col of generated line `line` (1-based): the nearest position
        marker at or above it within its function or class."""
        lines = self.comp.source.splitlines()
        for text in reversed(lines[:line]):
            if POS_MARKER in text:
                file, ln, col = text.rsplit(POS_MARKER, 1)[1].rsplit(":", 2)
                return file, int(ln), int(col)
            if text.lstrip().startswith(("def ", "class ")):
                return None
        return None

    def fail_decl(self, construct: str, t: StructT) -> CUnsupported:
        pos = getattr(t, "pos", None)
        if pos is not None and pos.line > 0:
            return CUnsupported(construct, pos.file, pos.line, pos.col)
        return CUnsupported(construct, self.path)

    def tmp(self, base: str) -> str:
        self._tmp += 1
        return f"_c{base}{self._tmp}"

    # ------------------------------------------------------------------ objects
    def collect_objects(self) -> None:
        for obj in self.comp.objects:
            p = obj.params
            if obj.kind == "register":
                if p["bitwidth"] > MAX_INT_BITS:
                    raise CUnsupported(f"register {p['name']} of {p['bitwidth']} bits (at most "
                                       f"{MAX_INT_BITS})", self.path)
                self.registers[obj.py_name] = RegisterSpec(obj.py_name, p["name"], p["size"],
                                                           p["bitwidth"], bool(p["signed"]),
                                                           len(self.registers))
            elif obj.kind == "struct_register":
                for fname, width, _ in p["fields"]:
                    if width > 64:
                        raise CUnsupported(f"register {p['name']}: field {fname} of {width} bits "
                                           "(at most 64)", self.path)
                self.used_classes.add(p["struct_class"])
                self.registers[obj.py_name] = RegisterSpec(
                    obj.py_name, p["name"], p["size"], sum(w for _, w, _ in p["fields"]), False,
                    len(self.registers), p["struct_class"], list(p["fields"]))
            elif obj.kind == "table":
                info = self.comp.info.tables[p["name"]]
                for k in info.keys:
                    if k.bitwidth > 64:
                        raise CUnsupported(f"table {info.name}: key {k.name} of {k.bitwidth} bits "
                                           "(at most 64)", self.path)
                nargs = 0
                for ref in info.actions:
                    params = self.comp.info.actions[ref.name].params
                    nargs = max(nargs, len(params))
                    for prm in params:
                        if prm.bitwidth > 64:
                            raise CUnsupported(f"table {info.name}: action parameter "
                                               f"{ref.name}.{prm.name} of {prm.bitwidth} bits "
                                               "(at most 64)", self.path)
                self.tables[obj.py_name] = TableSpec(obj.py_name, info.name, len(self.tables),
                                                     len(info.keys), nargs)
            elif obj.kind == "tna_hash":
                self.hashes[obj.py_name] = self.hash_spec(obj.py_name, p)
            # other objects (counters, meters...) are rejected where the code uses them

    def hash_spec(self, py_name: str, p: dict[str, Any]) -> HashSpec:
        """The C form of a tna Hash instance (switch.py's _TnaHash is the reference)."""
        algo, poly, width = p["algorithm"], p["poly"], p["width"]
        index = len(self.hashes)
        if width > 64:
            raise CUnsupported(f"Hash of {width} bits (at most 64)", self.path)
        if poly is not None:
            if poly["width"] > 64:
                raise CUnsupported(f"CRCPolynomial of {poly['width']} bits (at most 64)", self.path)
            crc = hashes.tna_crc_spec(poly["coeff"], poly["width"], poly["reversed"], poly["init"],
                                      poly["xor"])
            return HashSpec(py_name, index, "crc", width, crc.width, crc=crc, msb=poly["msb"],
                            extend=poly["extended"])
        if algo == "identity":
            return HashSpec(py_name, index, "identity", width, width)
        if algo in _TNA_CRCS:
            crc = _TNA_CRCS[algo]
            return HashSpec(py_name, index, "crc", width, crc.width, crc=crc)
        if algo in _TNA_XORS:
            return HashSpec(py_name, index, "xor", width, 8 * _TNA_XORS[algo],
                            xor_bytes=_TNA_XORS[algo])
        raise CUnsupported(f"Hash algorithm {algo}", self.path)

    # ------------------------------------------------------------------ types
    def field_kind(self, cls: str, name: str, node: Any) -> str:
        t = self.classes.get(cls)
        if t is None:
            raise self.fail(f"values of class {cls}", node)
        for fname, ft in t.fields:
            if fname == name:
                if isinstance(ft, StructT):
                    return _val(ft.py_class)
                if isinstance(ft, (BitT, BoolT, EnumT, ErrorT)):
                    return INT
                raise self.fail(f"field {t.name}.{name} of type {ft}", node)
        if name == "_v" and t.is_header:
            return INT
        raise self.fail(f"field {name} of {t.name}", node)

    def c_field_type(self, ft: Any, where: str) -> str:
        if isinstance(ft, BoolT):
            return "uint8_t"
        if isinstance(ft, (ErrorT,)):
            return "uint64_t"
        if isinstance(ft, EnumT):
            ft = ft.underlying if ft.underlying is not None else BitT(32, False)
        if isinstance(ft, BitT):
            if ft.width > MAX_INT_BITS:
                raise CUnsupported(f"{where} of {ft.width} bits (at most {MAX_INT_BITS})", self.path)
            if ft.width > 64:
                return "i128"
            return "int64_t" if ft.signed else "uint64_t"
        if isinstance(ft, StructT):
            return ft.py_class
        raise CUnsupported(f"{where} of type {ft}", self.path)

    def emit_structs(self) -> list[str]:
        lines: list[str] = []
        done: set[str] = set()

        def emit(t: StructT) -> None:
            if t.py_class in done:
                return
            if t.kind not in ("struct", "header"):
                raise self.fail_decl(f"{t.kind} {t.name}", t)
            if t.is_header and getattr(t, "varbit_field", None) is not None:
                raise self.fail_decl(f"header {t.name} with a varbit field", t)
            for _, ft in t.fields:
                if isinstance(ft, StructT):
                    emit(ft)
            done.add(t.py_class)
            body = [f"    {self.c_field_type(ft, f'field {t.name}.{n}')} {n};" for n, ft in t.fields]
            if t.is_header:
                body.append("    uint8_t _v;")
            if not body:
                body.append("    uint8_t _empty;")
            lines.append(f"typedef struct {t.py_class} {{")
            lines.extend(body)
            lines.append(f"}} {t.py_class};")
            lines.extend(self.struct_helpers(t))

        for cls in sorted(self.used_classes):
            emit(self.classes[cls])
        return lines

    def _leaves(self, t: StructT, path: str) -> list[tuple[str, Any]]:
        return Compiler._leaves(t, path)        # the Python backend's field order, shared

    def struct_helpers(self, t: StructT) -> list[str]:
        c = t.py_class
        lines = []
        # equality, as the generated p4_eq (headers: both invalid are equal)
        conds = []
        for n, ft in t.fields:
            if isinstance(ft, StructT):
                conds.append(f"eq_{ft.py_class}(&a->{n}, &b->{n})")
            else:
                conds.append(f"a->{n} == b->{n}")
        body = " && ".join(conds) or "1"
        if t.is_header:
            body = f"a->_v == b->_v && (!a->_v || ({body}))"
        lines.append(f"static inline int eq_{c}(const {c} *a, const {c} *b) {{ return {body}; }}")
        if t.is_header:
            nbytes = t.width // 8
            lines.append(f"#define NBYTES_{c} {nbytes}")
            unpack = [f"static inline void unpack_{c}({c} *h, const uint8_t *p) {{"]
            pack = [f"static inline void pack_{c}(const {c} *h, uint8_t *p) {{",
                    f"    memset(p, 0, {nbytes});"]
            bit = 0
            for path, ft in self._leaves(t, "h->"[:-2]):
                acc = "h->" + path[2:]
                w = 1 if isinstance(ft, BoolT) else (
                    ft.underlying.width if isinstance(ft, EnumT) else ft.width)
                signed = (isinstance(ft, BitT) and ft.signed) or (
                    isinstance(ft, EnumT) and ft.underlying.signed)
                get = f"p4_get_bits(p, {bit}, {w})"
                if signed:
                    get = f"p4_sext({get}, {w})"
                elif isinstance(ft, BoolT):
                    get = f"({get} != 0)"
                unpack.append(f"    {acc} = {get};")
                pack.append(f"    p4_put_bits(p, {bit}, {w}, (u128)(i128){acc});")
                bit += w
            unpack.append("    h->_v = 1;")
            unpack.append("}")
            pack.append("}")
            lines += unpack + pack
        return lines

    # ------------------------------------------------------------------ function typing
    def type_functions(self) -> None:
        b = self.comp.blocks
        for role in self.roles:
            blk = b.get(role)
            if blk is None:
                raise CUnsupported(f"a {self.arch} program without a {role} block", self.path)
            f = self.funcs[blk.py_func]
            kinds = []
            for d, _, t in blk.params:
                if isinstance(t, StructT):
                    kinds.append(_ptr(t.py_class))
                    self.used_classes.add(t.py_class)
                elif role in PARSER_ROLES and getattr(t, "name", "") == "packet_in":
                    kinds.append(PKTIN)
                elif role in DEPARSER_ROLES and getattr(t, "name", "") == "packet_out":
                    kinds.append(PKTOUT)
                else:
                    raise CUnsupported(f"{role} parameter of type {t}", self.path)
            f.param_kinds = kinds
        pending = [self.funcs[b[r].py_func] for r in self.roles]
        seen: set[str] = set()
        while pending:
            f = pending.pop()
            if f.name in seen:
                continue
            seen.add(f.name)
            for callee in self.infer_locals(f):
                pending.append(callee)
        self.reachable = [f for f in self.funcs.values() if f.name in seen]

    def infer_locals(self, f: _Func) -> list[_Func]:
        args = [a.arg for a in f.node.args.args]
        if f.param_kinds is None or len(args) != len(f.param_kinds):
            raise self.fail(f"call of {f.name} with an unexpected signature", f.node)
        kinds: dict[str, str] = dict(zip(args, f.param_kinds))
        callees: list[_Func] = []

        def set_kind(name: str, kind: str, node: Any) -> None:
            prev = kinds.get(name)
            # an int local may also take a generated function's value (`ret = f(...)`); if
            # that function turns out to return results instead, emit_function refuses it
            if prev is not None and prev.startswith("call:") and kind == INT:
                return
            if prev == INT and kind.startswith("call:"):
                kinds[name] = kind
                return
            if prev is not None and prev != kind:
                # a struct value later referenced, or an int local re-assigned: only the same
                # kind is allowed (C locals have one type)
                raise self.fail(f"local {name} holding both {prev} and {kind}", node)
            kinds[name] = kind

        def visit(stmts: list[pyast.stmt]) -> None:
            for s in stmts:
                if isinstance(s, pyast.Assign):
                    if len(s.targets) != 1:
                        raise self.fail("chained assignment", s)
                    tgt = s.targets[0]
                    if isinstance(tgt, pyast.Tuple):
                        names = [e.id for e in tgt.elts if isinstance(e, pyast.Name)]
                        if len(names) == 3 and self.is_lookup(s.value):
                            set_kind(names[0], INT, s)
                            set_kind(names[1], ARGS, s)
                            set_kind(names[2], ENTRY, s)
                        else:
                            raise self.fail("tuple assignment", s)
                    elif isinstance(tgt, pyast.Name):
                        self.scan_calls(s.value, kinds, callees)
                        v = s.value
                        if (isinstance(v, pyast.Call) and isinstance(v.func, pyast.Name)
                                and v.func.id in self.funcs):
                            # the callee's shape is known only once it is typed: resolved in
                            # emit_function (see results_kind)
                            set_kind(tgt.id, "call:" + v.func.id, s)
                            continue
                        set_kind(tgt.id, self.kind_of(s.value, kinds, for_local=True), s)
                        continue
                    self.scan_calls(s.value, kinds, callees)
                elif isinstance(s, pyast.AugAssign):
                    if isinstance(s.target, pyast.Name):
                        set_kind(s.target.id, INT, s)
                elif isinstance(s, pyast.If):
                    self.scan_calls(s.test, kinds, callees)
                    visit(s.body)
                    visit(s.orelse)
                elif isinstance(s, pyast.While):
                    visit(s.body)
                elif isinstance(s, pyast.Try):
                    visit(s.body)
                    for h in s.handlers:
                        visit(h.body)
                elif isinstance(s, pyast.Expr):
                    self.scan_calls(s.value, kinds, callees)
                elif isinstance(s, pyast.Return) and s.value is not None:
                    if isinstance(s.value, pyast.Tuple):
                        if f.returns_value or (f.result_count and f.result_count != len(s.value.elts)):
                            raise self.fail("a function returning results of several shapes", s)
                        f.result_count = len(s.value.elts)
                    else:
                        if f.result_count:
                            raise self.fail("a function returning results of several shapes", s)
                        f.returns_value = True
                    self.scan_calls(s.value, kinds, callees)
                for sub in pyast.walk(s) if isinstance(s, (pyast.Assign, pyast.Expr, pyast.If, pyast.Return)) else ():
                    if isinstance(sub, pyast.NamedExpr):
                        set_kind(sub.target.id, INT, sub)

        visit(f.node.body)
        f.locals = {k: v for k, v in kinds.items() if k not in args}
        f.params = args  # type: ignore[attr-defined]
        return callees

    def scan_calls(self, e: pyast.expr, kinds: dict[str, str], callees: list[_Func]) -> None:
        for sub in pyast.walk(e):
            if isinstance(sub, pyast.Call) and isinstance(sub.func, pyast.Name) and sub.func.id in self.funcs:
                callee = self.funcs[sub.func.id]
                if sub.keywords:
                    raise self.fail("keyword arguments", sub)
                ks = []
                for a in sub.args:
                    k = self.kind_of(a, kinds, for_local=False)
                    ks.append(_ptr(_cls_of(k)) if _cls_of(k) else k)
                if callee.param_kinds is None:
                    callee.param_kinds = ks
                elif callee.param_kinds != ks:
                    raise self.fail(f"{callee.name} called with different argument types", sub)
                callees.append(callee)

    def is_lookup(self, e: pyast.expr) -> bool:
        return (isinstance(e, pyast.Call) and isinstance(e.func, pyast.Attribute)
                and e.func.attr == "lookup" and isinstance(e.func.value, pyast.Name)
                and e.func.value.id in self.tables)

    def kind_of(self, e: pyast.expr, kinds: dict[str, str], for_local: bool) -> str:
        """What an expression yields. For a local's initializer, a struct-typed attribute or
        name is a reference (Python assignment aliases), a constructor or copy() a value."""
        if isinstance(e, pyast.Name):
            if e.id in kinds:
                k = kinds[e.id]
                if for_local and k.startswith("val:"):
                    return _ptr(k[4:])          # aliasing a struct local
                return k
            return INT
        if isinstance(e, pyast.Attribute):
            if isinstance(e.value, pyast.Name) and e.value.id in kinds and kinds[e.value.id] == PKTIN:
                if e.attr == "buf":
                    return BUF
                return INT
            if isinstance(e.value, pyast.Name) and e.value.id == "_ctx" and e.attr == "std_meta":
                return _ptr(self.sm_class())
            base = self.kind_of(e.value, kinds, for_local=False)
            cls = _cls_of(base)
            if cls is None:
                return INT
            k = self.field_kind(cls, e.attr, e)
            if k.startswith("val:"):
                return _ptr(k[4:]) if for_local else k
            return k
        if isinstance(e, pyast.Subscript):
            reg = self.register_of(e.value)
            if reg is not None and reg.struct_class:
                return _val(reg.struct_class)       # the cell's value (stored back explicitly)
            return INT
        if isinstance(e, pyast.Call):
            if isinstance(e.func, pyast.Name) and e.func.id in self.classes:
                self.used_classes.add(e.func.id)
                return _val(e.func.id)
            if isinstance(e.func, pyast.Attribute) and e.func.attr == "copy":
                k = self.kind_of(e.func.value, kinds, for_local=False)
                cls = _cls_of(k)
                if cls:
                    return _val(cls)
            return INT
        return INT

    def sm_class(self) -> str:
        t = self.comp.types.get("standard_metadata_t")
        if not isinstance(t, StructT):
            raise CUnsupported("a program without standard_metadata_t", self.path)
        return t.py_class

    # ------------------------------------------------------------------ emission
    def generate(self) -> CProgram:
        self.collect_objects()
        self.type_functions()
        funcs = self.reachable
        protos = []
        bodies = []
        for f in funcs:
            proto = self.prototype(f)
            protos.append(proto + ";")
            bodies.append(self.emit_function(f, proto))
        if self.arch == "tna":
            pipeline = self.tna_pipeline_functions()
            # one call can add the ingress prefix, both deparsers' headers, the egress prefix
            # and a mirror header to a packet
            growth = (sum(self.deparser_bytes(r) for r in ("ingress_deparser", "egress_deparser"))
                      + 2 * self.max_prefix_bytes() + self.mirror_bytes)
            uses_ts = self.reads_field("ingress_mac_tstamp", funcs) or any(
                self.classes[cls].name == "ingress_intrinsic_metadata_t"
                for f in funcs for cls in self.struct_uses(f, ("pack", "p4_eq")))
        else:
            pipeline = self.pipeline_functions()
            growth = self.deparser_bytes("deparser")
            uses_ts = self.reads_field("ingress_global_timestamp", funcs) or \
                self.reads_field("egress_global_timestamp", funcs)
        struct_lines = self.emit_structs()
        src = "\n".join([
            # no file name here: the text, and so the build cache's key, depends on the program only
            "/* Generated by p4sim's C backend; do not edit. */",
            _PRELUDE,
            f"#define P4_NREGS {max(1, len(self.registers))}",
            f"#define P4_NTABLES {max(1, len(self.tables))}",
            f"#define P4_RESUBMIT_BYTES {max(1, self.resubmit_bytes)}",
            f"#define P4_MIRROR_BYTES {max(1, self.mirror_bytes)}",
            _SWITCH_STRUCT,
            self.hash_functions(),
            *struct_lines,
            self.struct_register_functions(),
            *protos,
            *bodies,
            pipeline,
            _TABLES_C,
        ]) + "\n"
        return CProgram(src, list(self.registers.values()), list(self.tables.values()),
                        growth, uses_ts, self.arch)

    def struct_register_functions(self) -> str:
        """Load/store of a Register<struct> cell: one 64-bit word per field, the raw bits
        (externs._StructCells is the Python view of the same words)."""
        lines = []
        for reg in self.registers.values():
            if not reg.struct_class:
                continue
            cls, n, i = reg.struct_class, len(reg.fields), reg.index
            lines.append(f"static inline {cls} p4_sreg_load_{i}(p4_switch_t *sw, int64_t ix) {{")
            lines.append(f"    const uint64_t *w = (const uint64_t *)sw->regs[{i}] + ix * {n};")
            lines.append(f"    {cls} v = {{0}};")
            for k, (fname, width, signed) in enumerate(reg.fields):
                get = f"p4_sext((i128)w[{k}], {width})" if signed else f"w[{k}]"
                lines.append(f"    v.{fname} = {get};")
            lines.append("    return v;")
            lines.append("}")
            lines.append(f"static inline void p4_sreg_store_{i}(p4_switch_t *sw, int64_t ix, const {cls} *v) {{")
            lines.append(f"    uint64_t *w = (uint64_t *)sw->regs[{i}] + ix * {n};")
            for k, (fname, width, _) in enumerate(reg.fields):
                lines.append(f"    w[{k}] = (uint64_t)((u128)(i128)v->{fname} & p4_mask({width}));")
            lines.append("}")
        return "\n".join(lines)

    @staticmethod
    def reads_field(name: str, funcs: list[_Func]) -> bool:
        return any(isinstance(n, pyast.Attribute) and n.attr == name
                   for f in funcs for n in pyast.walk(f.node))

    def max_prefix_bytes(self) -> int:
        """The larger intrinsic metadata prefix tna puts in front of a packet."""
        from ..runtime.tna import PORT_METADATA_BYTES
        ig = self.classes[self.tna_class("ingress_intrinsic_metadata_t")].width // 8
        eg = self.classes[self.tna_class("egress_intrinsic_metadata_t")].width // 8
        return max(ig + PORT_METADATA_BYTES, eg)

    def hash_functions(self) -> str:
        """One C function per tna Hash instance; CRC tables are built by p4_program_init."""
        lines = []
        inits = []
        for h in self.hashes.values():
            i = h.index
            if h.kind == "crc":
                c = h.crc
                assert c is not None
                lines.append(f"static p4_crc_t p4_crc_{i};")
                inits.append(f"    p4_crc_init(&p4_crc_{i}, {c.width}, {c.poly & _U64}ULL, "
                             f"{c.init & _U64}ULL, {c.xorout & _U64}ULL, {int(c.reflect_in)}, "
                             f"{int(c.reflect_out)});")
                value = f"p4_crc(&p4_crc_{i}, d, n)"
            elif h.kind == "xor":
                value = f"p4_xor_words(d, n, {h.xor_bytes})"
            else:
                continue              # identity is computed inline (cgen.tna_hash)
            lines.append(f"static inline uint64_t p4_tna_hash_{i}(const uint8_t *d, int64_t n) {{")
            lines.append(f"    return p4_hash_output({value}, {h.value_width}, {h.out_width}, "
                         f"{int(h.msb)}, {int(h.extend)});")
            lines.append("}")
        lines.append("static void p4_program_init(void) {")
        lines.extend(inits)
        lines.append("}")
        return "\n".join(lines)

    def prototype(self, f: _Func) -> str:
        params = ["p4_switch_t *p4sw"]
        for name, kind in zip(f.params, f.param_kinds or []):  # type: ignore[attr-defined]
            params.append(f"{self.c_decl_type(kind, f.node)}{name}")
        if f.result_count:
            params.append("i128 *_results")
        ret = "i128" if f.returns_value else "void"
        return f"static {ret} {f.name}({', '.join(params)})"

    def c_decl_type(self, kind: str, node: Any) -> str:
        if kind == INT:
            return "i128 "
        if kind.startswith("ptr:"):
            self.used_classes.add(kind[4:])
            return f"{kind[4:]} *"
        if kind.startswith("val:"):
            self.used_classes.add(kind[4:])
            return f"{kind[4:]} "
        if kind.startswith(RESULTS):
            return "i128 "
        return {PKTIN: "p4_pktin_t *", PKTOUT: "p4_pktout_t *", BUF: "const uint8_t *",
                ARGS: "const uint64_t *", ENTRY: "int64_t "}[kind]

    def emit_function(self, f: _Func, proto: str) -> str:
        self.f = f
        self.kinds = dict(zip(f.params, f.param_kinds or []))  # type: ignore[attr-defined]
        for name, kind in list(f.locals.items()):
            if kind.startswith("call:"):
                callee = self.funcs[kind[5:]]
                if callee.result_count:
                    f.locals[name] = f"{RESULTS}{callee.result_count}"
                elif callee.returns_value:
                    f.locals[name] = INT
                else:
                    raise self.fail(f"the value of {callee.name}, which returns none", f.node)
        self.kinds.update(f.locals)
        self.try_labels: list[str] = []
        self.used_labels: set[str] = set()
        lines = [proto + " {"]
        for name, kind in f.locals.items():
            if kind.startswith(RESULTS):
                lines.append(f"    i128 {name}[{kind[len(RESULTS):]}] = {{0}};")
                continue
            init = " = 0" if kind in (INT, ENTRY) else " = 0" if kind in (BUF, ARGS) else ""
            if kind.startswith("ptr:") or kind == PKTIN or kind == PKTOUT:
                init = " = 0"
            lines.append(f"    {self.c_decl_type(kind, f.node)}{name}{init};")
            if kind in (INT, ENTRY, BUF, ARGS) or kind.startswith("ptr:"):
                lines.append(f"    (void){name};")
        self.lines = lines
        self.stmts(f.node.body, 1)
        if f.returns_value:
            lines.append("    return 0;")
        lines.append("}")
        return "\n".join(lines)

    def w(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def ret_stmt(self) -> str:
        return "return 0;" if self.f.returns_value else "return;"

    def after_call(self) -> str:
        """What follows a call of a generated function: an error returns at once, an `exit`
        goes on to the enclosing handler."""
        return f"if (p4sw->exit_flag) {{ if (p4sw->exit_flag >= P4_RAISED) {self.ret_stmt()} {self.exit_jump()} }}"

    def exit_jump(self) -> str:
        if self.try_labels:
            self.used_labels.add(self.try_labels[-1])
            return f"goto {self.try_labels[-1]};"
        return "return 0;" if self.f.returns_value else "return;"

    def stmts(self, body: list[pyast.stmt], d: int) -> None:
        for s in body:
            self.stmt(s, d)

    def stmt(self, s: pyast.stmt, d: int) -> None:
        if isinstance(s, pyast.Pass):
            return
        if isinstance(s, pyast.Assign):
            self.assign(s, d)
        elif isinstance(s, pyast.AugAssign):
            op = self.binop_c(s.op, s)
            tgt = self.lvalue(s.target)
            self.w(d, f"{tgt} = {tgt} {op} {self.expr(s.value)};")
        elif isinstance(s, pyast.If):
            if _may_raise(s.test):
                test = self.tmp("t")
                self.w(d, f"int {test} = {self.cond(s.test)}; {self.after_raise()}")
                self.w(d, f"if ({test}) {{")
            else:
                self.w(d, f"if ({self.cond(s.test)}) {{")
            self.stmts(s.body, d + 1)
            if s.orelse:
                self.w(d, "} else {")
                self.stmts(s.orelse, d + 1)
            self.w(d, "}")
        elif isinstance(s, pyast.While):
            if not (isinstance(s.test, pyast.Constant) and s.test.value is True) or s.orelse:
                raise self.fail("a loop other than `while True`", s)
            self.w(d, "for (;;) {")
            self.stmts(s.body, d + 1)
            self.w(d, "}")
        elif isinstance(s, pyast.Break):
            self.w(d, "break;")
        elif isinstance(s, pyast.Continue):
            self.w(d, "continue;")
        elif isinstance(s, pyast.Return):
            if s.value is None:
                self.w(d, "return 0;" if self.f.returns_value else "return;")
            else:
                if isinstance(s.value, pyast.Tuple):
                    parts = [f"_results[{i}] = {self.expr(x)};" for i, x in enumerate(s.value.elts)]
                    self.w(d, "{ " + " ".join(parts) + " return; }")
                    return
                self.w(d, f"return {self.expr(s.value)};")
        elif isinstance(s, pyast.Try):
            self.try_stmt(s, d)
        elif isinstance(s, pyast.Raise):
            self.raise_stmt(s, d)
        elif isinstance(s, pyast.Expr):
            self.expr_stmt(s.value, d)
        else:
            raise self.fail(f"statement {type(s).__name__}", s)

    def try_stmt(self, s: pyast.Try, d: int) -> None:
        """``try: ... except ExitBlock: HANDLER`` -- an `exit` in the body jumps to the
        handler (the out/inout copy-out of the actions it leaves), which ends with a bare
        ``raise`` (the exit goes on) or not (the exit stops here)."""
        ok = (len(s.handlers) == 1 and not s.orelse and not s.finalbody
              and isinstance(s.handlers[0].type, pyast.Name) and s.handlers[0].type.id == "ExitBlock")
        if not ok:
            raise self.fail("exception handling other than `exit`", s)
        handler = [x for x in s.handlers[0].body if not isinstance(x, pyast.Pass)]
        reraise = bool(handler) and isinstance(handler[-1], pyast.Raise) and handler[-1].exc is None
        if reraise:
            handler = handler[:-1]
        if any(isinstance(n, pyast.Raise) and n.exc is None for x in handler for n in pyast.walk(x)):
            raise self.fail("a re-raise inside an exit handler", s)
        label = self.tmp("exit")
        done = self.tmp("done")
        self.try_labels.append(label)
        self.w(d, "{")
        self.stmts(s.body, d + 1)
        self.w(d, "}")
        self.try_labels.pop()
        if label not in self.used_labels:    # no `exit` inside: nothing to handle
            return
        self.w(d, f"goto {done};")
        self.w(d, f"{label}: p4sw->exit_flag = 0;")
        self.w(d, "{")
        self.stmts(handler, d + 1)
        if reraise:
            self.w(d + 1, f"{{ p4sw->exit_flag = P4_EXITING; {self.exit_jump()} }}")
        self.w(d, "}")
        self.w(d, f"{done}: ;")

    def raise_stmt(self, s: pyast.Raise, d: int) -> None:
        exc = s.exc
        name = exc.func.id if isinstance(exc, pyast.Call) and isinstance(exc.func, pyast.Name) else (
            exc.id if isinstance(exc, pyast.Name) else None)
        if name == "ExitBlock":
            self.w(d, f"{{ p4sw->exit_flag = P4_EXITING; {self.exit_jump()} }}")
            return
        if name == "ParserReject" and isinstance(exc, pyast.Call) and len(exc.args) == 2 \
                and (self.f.param_kinds or [None])[0] == PKTIN:
            # a parser or a sub-parser (packet_in first): the reject unwinds every parser up
            # to the pipeline, as the Python exception does
            pkt = self.f.params[0]  # type: ignore[attr-defined]
            self.w(d, f"{{ p4sw->rejected = 1; p4sw->reject_code = {self.expr(exc.args[0])}; "
                      f"{pkt}->off = (int64_t)({self.expr(exc.args[1])}); "
                      f"p4sw->exit_flag = P4_REJECT; {self.ret_stmt()} }}")
            return
        if name == "DataplaneError" and isinstance(exc, pyast.Call) and len(exc.args) == 1 \
                and isinstance(exc.args[0], pyast.Constant) and isinstance(exc.args[0].value, str):
            # the Python backend raises this out of process(): the C pipeline returns an error
            # and the caller raises the same DataplaneError
            self.w(d, self.raise_c(exc.args[0].value))
            return
        raise self.fail(f"raising {name or 'an exception'}", s)

    def raise_c(self, message: str) -> str:
        """C that raises a DataplaneError: the pipeline returns P4_ERROR and the runtime
        raises the error with this message, as the Python backend does at the same point."""
        return f"{{ p4sw->exit_flag = P4_RAISED; p4sw->error = {_c_string(message)}; {self.ret_stmt()} }}"

    def assign(self, s: pyast.Assign, d: int) -> None:
        self.assign_inner(s, d)
        tgt = s.targets[0]
        kind = self.kinds.get(tgt.id, "") if isinstance(tgt, pyast.Name) else ""
        if not kind.startswith(RESULTS) and any(
                isinstance(n, pyast.Call) and isinstance(n.func, pyast.Name) and n.func.id in self.funcs
                for n in pyast.walk(s.value)):
            self.w(d, self.after_call())
        elif _may_raise(s.value):
            self.w(d, self.after_raise())

    def after_raise(self) -> str:
        """What follows an expression that can raise a DataplaneError (the Python exception
        leaves at once: nothing after it may change state)."""
        return f"if (p4sw->exit_flag >= P4_RAISED) {self.ret_stmt()}"

    def assign_inner(self, s: pyast.Assign, d: int) -> None:
        tgt = s.targets[0]
        v = s.value
        if isinstance(tgt, pyast.Tuple):
            call = v
            assert isinstance(call, pyast.Call) and isinstance(call.func, pyast.Attribute)
            spec = self.tables[call.func.value.id]  # type: ignore[attr-defined]
            ai, args, entry = (e.id for e in tgt.elts)  # type: ignore[attr-defined]
            keys = call.args[0] if call.args else None
            if not isinstance(keys, pyast.Tuple) or len(keys.elts) != spec.nkeys:
                raise self.fail(f"table {spec.name}: unexpected key", s)
            if spec.nkeys:
                kv = ", ".join(f"(uint64_t)({self.expr(k)})" for k in keys.elts)
                self.w(d, f"{{ uint64_t _k[{spec.nkeys}] = {{{kv}}};")
                self.w(d + 1, f"{ai} = p4_table_lookup(&p4sw->tables[{spec.index}], _k, &{args}, &{entry}); }}")
            else:
                self.w(d, f"{ai} = p4_table_lookup(&p4sw->tables[{spec.index}], 0, &{args}, &{entry});")
            return
        if isinstance(tgt, pyast.Subscript):
            reg = self.register_of(tgt.value)
            if reg is None:
                raise self.fail("assignment to a subscript", s)
            ix = f"(int64_t)({self.expr(tgt.slice)})"
            if reg.struct_class:
                self.w(d, f"p4_sreg_store_{reg.index}(p4sw, {ix}, &{self.struct_expr(v)});")
            elif reg.wide:
                self.w(d, f"p4_reg_set128((uint64_t *)p4sw->regs[{reg.index}], {ix}, {self.expr(v)});")
            else:
                ct = "int64_t" if reg.signed else "uint64_t"
                self.w(d, f"(({ct} *)p4sw->regs[{reg.index}])[{ix}] = ({ct})({self.expr(v)});")
            return
        if isinstance(tgt, pyast.Name):
            kind = self.kinds.get(tgt.id, INT)
            if kind.startswith(RESULTS):
                call = self.call_generated(v)  # type: ignore[arg-type]
                self.w(d, f"{call[:-1]}, {tgt.id});")
                self.w(d, self.after_call())
                return
            if kind == BUF:
                self.w(d, f"{tgt.id} = {self.f.params[0]}->buf;")  # type: ignore[attr-defined]
                return
            if kind.startswith("ptr:"):
                self.w(d, f"{tgt.id} = &{self.struct_expr(v)};")
                return
            if kind.startswith("val:"):
                self.w(d, f"{tgt.id} = {self.struct_expr(v)};")
                return
            self.w(d, f"{tgt.id} = {self.expr(v)};")
            return
        if isinstance(tgt, pyast.Attribute) and isinstance(tgt.value, pyast.Name) and tgt.value.id == "_ctx":
            self.context_assign(tgt.attr, v, d)
            return
        if isinstance(tgt, pyast.Attribute):
            lv = self.lvalue(tgt)
            k = self.kind_of(tgt, self.kinds, for_local=False)
            if k.startswith("val:"):
                self.w(d, f"{lv} = {self.struct_expr(v)};")
            else:
                self.w(d, f"{lv} = {self.expr(v)};")
            return
        raise self.fail(f"assignment to {type(tgt).__name__}", s)

    def context_assign(self, attr: str, v: pyast.expr, d: int) -> None:
        """``_ctx.<attr> = ...``: what a tna Resubmit/Mirror emit() records for the pipeline
        (p4sim/runtime/tna.py packs the field lists with hashes.pack_fields; so does C)."""
        if self.arch == "tna" and attr == "resubmit_field_list":
            nbytes = self.fill_field_list(v, "p4sw->resubmit_data", d)
            self.resubmit_bytes = max(self.resubmit_bytes, nbytes)
            self.w(d, f"p4sw->resubmit_set = 1; p4sw->resubmit_len = {nbytes};")
            return
        if self.arch == "tna" and attr == "clone_field_list":
            nbytes = self.fill_field_list(v, "p4sw->mirror_data", d)
            self.mirror_bytes = max(self.mirror_bytes, nbytes)
            self.w(d, f"p4sw->mirror_len = {nbytes};")
            return
        if self.arch == "v1model" and attr == "truncate_length":
            # v1model truncate(): only the egress pass's value counts (a new context per pass)
            self.w(d, f"p4sw->truncate_length = (int64_t)({self.expr(v)});")
            return
        if self.arch == "tna" and attr == "clone_session":
            self.w(d, f"p4sw->clone_set = 1; p4sw->clone_session = (uint64_t)({self.expr(v)});")
            return
        raise self.fail(f"packet context attribute {attr} set", v)

    def claim(self, reg: RegisterSpec, d: int) -> None:
        """Tofino: a register's stateful ALU runs once per pass (switch.py's _claim)."""
        self.w(d, f"if (p4sw->claimed[{reg.index}]) {self.raise_c(register_twice_message(reg.name))}")
        self.w(d, f"p4sw->claimed[{reg.index}] = 1;")

    def register_object(self, e: pyast.expr, scalar: bool = False) -> RegisterSpec:
        """The register a runtime helper is called on (``scalar``: one of int cells)."""
        if isinstance(e, pyast.Name) and e.id in self.registers:
            reg = self.registers[e.id]
            if not (scalar and reg.struct_class):
                return reg
        raise self.fail(f"register argument `{pyast.unparse(e)[:60]}`", e)

    def register_load(self, reg: RegisterSpec, ix: str) -> str:
        """Cell ``ix`` (in range) of a register as an i128."""
        if reg.wide:
            v = f"p4_reg_get128((const uint64_t *)p4sw->regs[{reg.index}], {ix})"
            return f"p4_sext({v}, {reg.bitwidth})" if reg.signed else v
        ct = "int64_t" if reg.signed else "uint64_t"
        return f"((i128)(({ct} *)p4sw->regs[{reg.index}])[{ix}])"

    def register_store(self, reg: RegisterSpec, ix: str, value: str) -> str:
        """Register.write's store of ``value`` wrapped to the register's width (a statement)."""
        wrapped = f"((i128)((u128)({value}) & p4_mask({reg.bitwidth})))"
        if reg.signed:
            wrapped = f"p4_sext({wrapped}, {reg.bitwidth})"
        if reg.wide:
            return f"p4_reg_set128((uint64_t *)p4sw->regs[{reg.index}], {ix}, {wrapped});"
        ct = "int64_t" if reg.signed else "uint64_t"
        return f"(({ct} *)p4sw->regs[{reg.index}])[{ix}] = ({ct}){wrapped};"

    def field_list(self, e: pyast.expr) -> list[tuple[pyast.expr, int]]:
        """The (value, width) pairs of a generated field-list tuple."""
        if not isinstance(e, pyast.Tuple):
            raise self.fail(f"field list `{pyast.unparse(e)[:60]}`", e)
        out = []
        for item in e.elts:
            if not (isinstance(item, pyast.Tuple) and len(item.elts) == 2):
                raise self.fail(f"field list item `{pyast.unparse(item)[:60]}`", item)
            width = self.int_const(item.elts[1])
            if not 0 < width <= MAX_INT_BITS:
                raise self.fail(f"a field of {width} bits in a field list", item)
            out.append((item.elts[0], width))
        return out

    def fill_field_list(self, e: pyast.expr, buf: str, d: int) -> int:
        """Write hashes.pack_fields(<field list>) into the byte array ``buf`` (statements at
        depth d); returns its length in bytes."""
        setup, nbytes = self.pack_field_list(e, buf)
        self.w(d, "{ " + " ".join(setup) + " }")
        return nbytes

    def pack_field_list(self, e: pyast.expr, buf: str) -> tuple[list[str], int]:
        """C statements that fill ``buf`` as hashes.pack_fields does: the fields MSB first,
        each masked to its width, zero bits padding the end to a byte."""
        fields = self.field_list(e)
        nbits = sum(w for _, w in fields)
        nbytes = (nbits + 7) // 8
        shift = nbytes * 8 - nbits          # the padding, below the last field
        parts = [f"memset({buf}, 0, {max(nbytes, 1)});"]
        for value, width in reversed(fields):
            parts.append(f"p4_or_shifted({buf}, {nbytes}, (u128)({self.expr(value)}) & p4_mask({width}), "
                         f"{shift});")
            shift += width
        return parts, nbytes

    def expr_stmt(self, e: pyast.expr, d: int) -> None:
        if isinstance(e, pyast.Call):
            fn = e.func
            if isinstance(fn, pyast.Name) and fn.id == "_claim" and len(e.args) == 1:
                self.claim(self.register_object(e.args[0]), d)
                return
            if isinstance(fn, pyast.Name) and fn.id == "_reg_write" and len(e.args) == 3:
                # tna Register.write: claim, then Register.write (wraps to the width)
                reg = self.register_object(e.args[0], scalar=True)
                self.claim(reg, d)
                ix = f"(int64_t)({self.expr(e.args[1])})"
                self.w(d, f"if ({ix} < {reg.size}) {self.register_store(reg, ix, self.expr(e.args[2]))}")
                return
            if isinstance(fn, pyast.Name) and fn.id in self.funcs:
                self.w(d, f"{self.call_generated(e)};")
                self.w(d, self.after_call())
                return
            if isinstance(fn, pyast.Attribute) and fn.attr == "append":
                base = fn.value
                if (isinstance(base, pyast.Name) and self.kinds.get(base.id) == PKTOUT and len(e.args) == 1
                        and isinstance(e.args[0], pyast.Call) and isinstance(e.args[0].func, pyast.Attribute)
                        and e.args[0].func.attr == "pack"):
                    hk = self.kind_of(e.args[0].func.value, self.kinds, for_local=False)
                    cls = _cls_of(hk)
                    h = self.struct_expr(e.args[0].func.value)
                    self.w(d, f"pack_{cls}(&{h}, {base.id}->buf + {base.id}->len); "
                              f"{base.id}->len += NBYTES_{cls};")
                    return
            if isinstance(fn, pyast.Attribute) and fn.attr in ("unpack_from", "unpack"):
                cls = _cls_of(self.kind_of(fn.value, self.kinds, for_local=False))
                h = self.struct_expr(fn.value)
                if fn.attr == "unpack_from" and len(e.args) == 2:
                    self.w(d, f"unpack_{cls}(&{h}, {self.expr(e.args[0])} + (int64_t)({self.expr(e.args[1])}));")
                    return
                if fn.attr == "unpack" and len(e.args) == 1:
                    ptr = self.from_bytes_ptr(e.args[0])
                    if ptr is not None:
                        self.w(d, f"unpack_{cls}(&{h}, {ptr});")
                        return
            if (isinstance(fn, pyast.Attribute) and fn.attr == "count" and isinstance(fn.value, pyast.Name)
                    and fn.value.id.startswith("T_")):
                raise self.fail("direct counters", e)    # a table's counter, counted on a hit
        raise self.fail(f"statement `{pyast.unparse(e)[:60]}`", e)

    def call_generated(self, e: pyast.Call) -> str:
        callee = self.funcs[e.func.id]  # type: ignore[attr-defined]
        args = ["p4sw"]
        for a, k in zip(e.args, callee.param_kinds or []):
            if k.startswith("ptr:"):
                args.append(f"&{self.struct_expr(a)}")
            elif k in (PKTIN, PKTOUT):
                args.append(self.expr_name(a))
            else:
                args.append(self.expr(a))
        return f"{callee.name}({', '.join(args)})"

    def expr_name(self, a: pyast.expr) -> str:
        if not isinstance(a, pyast.Name):
            raise self.fail("a packet argument that is not a name", a)
        return a.id

    # ------------------------------------------------------------------ expressions
    def register_of(self, e: pyast.expr) -> RegisterSpec | None:
        if isinstance(e, pyast.Name) and e.id.endswith("_values"):
            return self.registers.get(e.id[: -len("_values")])
        return None

    def struct_expr(self, e: pyast.expr) -> str:
        """A struct-typed expression as a C lvalue/rvalue of the struct type."""
        if isinstance(e, pyast.Name):
            k = self.kinds.get(e.id, "")
            if k.startswith("ptr:"):
                return f"(*{e.id})"
            if k.startswith("val:"):
                return e.id
            raise self.fail(f"struct value {e.id}", e)
        if isinstance(e, pyast.Attribute):
            if isinstance(e.value, pyast.Name) and e.value.id == "_ctx" and e.attr == "std_meta":
                self.used_classes.add(self.sm_class())
                return f"(*({self.sm_class()} *)p4sw->cur_sm)"
            return f"{self.struct_expr(e.value)}.{e.attr}"
        if isinstance(e, pyast.Subscript):
            reg = self.register_of(e.value)
            if reg is not None and reg.struct_class:
                return f"p4_sreg_load_{reg.index}(p4sw, (int64_t)({self.expr(e.slice)}))"
        if isinstance(e, pyast.Call):
            if isinstance(e.func, pyast.Name) and e.func.id in self.classes and not e.args:
                self.used_classes.add(e.func.id)
                return f"(({e.func.id}){{0}})"
            if isinstance(e.func, pyast.Attribute) and e.func.attr == "copy" and not e.args:
                return self.struct_expr(e.func.value)
        raise self.fail(f"struct expression `{pyast.unparse(e)[:60]}`", e)

    def lvalue(self, e: pyast.expr) -> str:
        if isinstance(e, pyast.Name):
            return e.id
        if isinstance(e, pyast.Attribute):
            if isinstance(e.value, pyast.Name) and self.kinds.get(e.value.id) == PKTIN:
                if e.attr == "off":
                    return f"{e.value.id}->off"
                raise self.fail(f"packet attribute {e.attr}", e)
            return f"{self.struct_expr(e.value)}.{e.attr}"
        raise self.fail(f"assignment target `{pyast.unparse(e)[:60]}`", e)

    def cond(self, e: pyast.expr) -> str:
        c = self.expr(e)
        return c[1:-1] if c.startswith("(") and c.endswith(")") and _balanced(c[1:-1]) else c

    def const(self, v: Any, node: Any) -> str:
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, int):
            if -(1 << 62) < v < (1 << 62):
                return f"((i128){v}LL)" if abs(v) >= (1 << 31) else str(v)
            if -(1 << MAX_INT_BITS) <= v < (1 << MAX_INT_BITS):
                neg = v < 0
                a = -v if neg else v
                s = f"(((i128){a >> 64}ULL << 64) | (i128){a & ((1 << 64) - 1)}ULL)"
                return f"(-{s})" if neg else s
            raise self.fail(f"constant {v} wider than {MAX_INT_BITS} bits", node)
        raise self.fail(f"constant {v!r}", node)

    def binop_c(self, op: pyast.operator, node: Any) -> str:
        m = {pyast.Add: "+", pyast.Sub: "-", pyast.Mult: "*", pyast.BitAnd: "&", pyast.BitOr: "|",
             pyast.BitXor: "^", pyast.LShift: "<<", pyast.RShift: ">>"}
        c = m.get(type(op))
        if c is None:
            raise self.fail(f"operator {type(op).__name__}", node)
        return c

    def expr(self, e: pyast.expr) -> str:
        if isinstance(e, pyast.Constant):
            return self.const(e.value, e)
        if isinstance(e, pyast.Name):
            k = self.kinds.get(e.id)
            if k is None:
                reg_size = e.id.endswith("_size") and self.registers.get(e.id[: -len("_size")])
                if reg_size:
                    return f"((i128){reg_size.size}LL)"
                raise self.fail(f"use of `{e.id}` (an extern or object the C backend lacks)", e)
            if k not in (INT, ENTRY, BUF):
                raise self.fail(f"`{e.id}` used as a value", e)
            return e.id
        if isinstance(e, pyast.Attribute):
            if isinstance(e.value, pyast.Name):
                if self.kinds.get(e.value.id) == PKTIN:
                    if e.attr == "off":
                        return f"{e.value.id}->off"
                    if e.attr == "buf":
                        return f"{e.value.id}->buf"
                if e.value.id == "_ctx" and e.attr == "packet_length":
                    return "((i128)p4sw->packet_length)"
                if e.value.id == "_ctx":
                    raise self.fail(f"packet context attribute {e.attr}", e)
            return f"((i128){self.struct_expr(e.value)}.{e.attr})"
        if isinstance(e, pyast.BinOp):
            a, b = self.expr(e.left), self.expr(e.right)
            if isinstance(e.op, pyast.LShift):
                if isinstance(e.right, pyast.Constant) and isinstance(e.right.value, int) and 0 <= e.right.value < 127:
                    return f"((i128)((u128)({a}) << {e.right.value}))"
                return f"p4_shl({a}, {b})"
            if isinstance(e.op, pyast.RShift):
                if isinstance(e.right, pyast.Constant) and isinstance(e.right.value, int) and 0 <= e.right.value < 127:
                    return f"(({a}) >> {e.right.value})"
                return f"p4_shr({a}, {b})"
            if isinstance(e.op, (pyast.Add, pyast.Sub, pyast.Mult)):
                # unsigned arithmetic: wrap-around instead of signed overflow (the Python code
                # masks every such result, so only the low bits matter there)
                return f"((i128)((u128)({a}) {self.binop_c(e.op, e)} (u128)({b})))"
            return f"({a} {self.binop_c(e.op, e)} {b})"
        if isinstance(e, pyast.UnaryOp):
            a = self.expr(e.operand)
            if isinstance(e.op, pyast.Not):
                return f"(!{a})"
            if isinstance(e.op, pyast.Invert):
                return f"(~{a})"
            if isinstance(e.op, pyast.USub):
                return f"((i128)(-(u128)({a})))"
            if isinstance(e.op, pyast.UAdd):
                return a
        if isinstance(e, pyast.BoolOp):
            op = " && " if isinstance(e.op, pyast.And) else " || "
            return "(" + op.join(self.expr(v) for v in e.values) + ")"
        if isinstance(e, pyast.Compare):
            return self.compare(e)
        if isinstance(e, pyast.IfExp):
            return f"({self.expr(e.test)} ? {self.expr(e.body)} : {self.expr(e.orelse)})"
        if isinstance(e, pyast.NamedExpr):
            return f"({e.target.id} = {self.expr(e.value)})"
        if isinstance(e, pyast.Subscript):
            return self.subscript(e)
        if isinstance(e, pyast.Call):
            return self.call_expr(e)
        raise self.fail(f"expression `{pyast.unparse(e)[:60]}`", e)

    def compare(self, e: pyast.Compare) -> str:
        ops = {pyast.Eq: "==", pyast.NotEq: "!=", pyast.Lt: "<", pyast.LtE: "<=", pyast.Gt: ">",
               pyast.GtE: ">="}
        parts = []
        left = e.left
        for op, right in zip(e.ops, e.comparators):
            if isinstance(op, (pyast.Is, pyast.IsNot)):
                if not (isinstance(right, pyast.Constant) and right.value is None
                        and isinstance(left, pyast.Name) and self.kinds.get(left.id) == ENTRY):
                    raise self.fail("an identity comparison", e)
                parts.append(f"({left.id} {'<' if isinstance(op, pyast.Is) else '>='} 0)")
            else:
                c = ops.get(type(op))
                if c is None:
                    raise self.fail(f"comparison {type(op).__name__}", e)
                parts.append(f"({self.expr(left)} {c} {self.expr(right)})")
            left = right
        return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"

    def subscript(self, e: pyast.Subscript) -> str:
        reg = self.register_of(e.value)
        if reg is not None and not reg.struct_class:
            return self.register_load(reg, f"(int64_t)({self.expr(e.slice)})")
        if isinstance(e.value, pyast.Name) and self.kinds.get(e.value.id, "").startswith(RESULTS):
            return f"{e.value.id}[{self.expr(e.slice)}]"
        if isinstance(e.value, pyast.Name) and self.kinds.get(e.value.id) == ARGS:
            return f"((i128){e.value.id}[{self.expr(e.slice)}])"
        if isinstance(e.value, pyast.Attribute) and e.value.attr == "items":
            raise self.fail("header stacks", e)          # the generated stack's element list
        raise self.fail(f"subscript `{pyast.unparse(e)[:60]}`", e)

    def from_bytes_ptr(self, e: pyast.expr) -> str | None:
        """``int.from_bytes(buf[a:b], 'big')`` → the C pointer to byte a (None if not that)."""
        if (isinstance(e, pyast.Call) and isinstance(e.func, pyast.Attribute) and e.func.attr == "from_bytes"
                and isinstance(e.func.value, pyast.Name) and e.func.value.id == "int" and len(e.args) == 2
                and isinstance(e.args[0], pyast.Subscript) and isinstance(e.args[0].slice, pyast.Slice)):
            sl = e.args[0].slice
            return f"{self.expr(e.args[0].value)} + (int64_t)({self.expr(sl.lower)})"
        return None

    def call_expr(self, e: pyast.Call) -> str:
        fn = e.func
        if isinstance(fn, pyast.Name):
            if fn.id in self.funcs:
                callee = self.funcs[fn.id]
                if not callee.returns_value:
                    raise self.fail(f"value of {fn.id}", e)
                return self.call_generated(e)
            if fn.id == "len" and len(e.args) == 1 and isinstance(e.args[0], pyast.Name) \
                    and self.kinds.get(e.args[0].id) == BUF:
                return f"((i128){self.f.params[0]}->len)"  # type: ignore[attr-defined]
            if fn.id == "int" and len(e.args) == 1:
                return self.expr(e.args[0])
            if fn.id == "bool" and len(e.args) == 1:
                return f"({self.expr(e.args[0])} != 0)"
            if fn.id == "_v1hash" and len(e.args) == 5:
                algo = self.algorithm(e.args[0], e)
                return self.with_bytes(e.args[1], lambda b, n: (
                    f"p4_v1hash({algo}, {b}, {n}, {self.expr(e.args[2])}, {self.expr(e.args[3])}, "
                    f"{self.int_const(e.args[4])})"))
            if fn.id == "_checksum" and len(e.args) == 4:
                algo = self.algorithm(e.args[0], e)
                payload = self.bool_const(e.args[2])
                width = self.int_const(e.args[3])
                return self.with_bytes(e.args[1], lambda b, n: (
                    f"p4_checksum(p4sw, {algo}, {b}, {n}, {int(payload)}, {width})"))
            if fn.id == "_reg_exec" and len(e.args) == 2:
                # tna Register.read: claim, then Register.read (0 out of range)
                reg = self.register_object(e.args[0], scalar=True)
                ix = self.tmp("ix")
                claimed = f"p4sw->claimed[{reg.index}]"
                fail = (f"if ({claimed}) {{ p4sw->exit_flag = P4_RAISED; p4sw->error = "
                        f"{_c_string(register_twice_message(reg.name))}; }}")
                return (f"({{ int64_t {ix} = (int64_t)({self.expr(e.args[1])}); {fail} {claimed} = 1; "
                        f"{ix} < {reg.size} ? {self.register_load(reg, ix)} : (i128)0; }})")
            if fn.id == "_csum16" and len(e.args) == 1:
                return self.with_bytes(e.args[0], lambda b, n: f"((i128)p4_hash(3, {b}, {n}))")
            if fn.id in ("_div", "_mod") and len(e.args) == 2 and isinstance(e.args[1], pyast.Constant) \
                    and isinstance(e.args[1].value, int) and e.args[1].value > 0:
                return f"p4_py{fn.id[1:]}({self.expr(e.args[0])}, {self.expr(e.args[1])})"
        if isinstance(fn, pyast.Attribute):
            if fn.attr == "get" and isinstance(fn.value, pyast.Name) and fn.value.id in self.hashes \
                    and len(e.args) == 1:
                return self.tna_hash(self.hashes[fn.value.id], e.args[0])
            if fn.attr == "isValid" and not e.args:
                return f"((i128){self.struct_expr(fn.value)}._v)"
            if fn.attr == "p4_eq" and len(e.args) == 1:
                cls = _cls_of(self.kind_of(fn.value, self.kinds, for_local=False))
                return f"eq_{cls}(&{self.struct_expr(fn.value)}, &{self.struct_expr(e.args[0])})"
            ptr = self.from_bytes_ptr(e)
            if ptr is not None:
                n = self.slice_len(e.args[0].slice, e)  # type: ignore[attr-defined]
                return f"((i128)p4_load_be({ptr}, {n}))"
        raise self.fail(f"call `{pyast.unparse(e)[:60]}`", e)

    def tna_hash(self, spec: HashSpec, fields: pyast.expr) -> str:
        """``HS_x.get(((value, width), ...))`` as switch.py's _TnaHash.get computes it."""
        if spec.kind == "identity":
            # the fields concatenated (unmasked, as the Python code does), then truncated
            acc = "(u128)0"
            for value, width in self.field_list(fields):
                acc = f"((({acc}) << {width}) | (u128)({self.expr(value)}))"
            return f"((i128)(({acc}) & p4_mask({spec.out_width})))"
        buf = self.tmp("hb")
        setup, nbytes = self.pack_field_list(fields, f"{buf}")
        return (f"({{ uint8_t {buf}[{max(nbytes, 1)}]; {' '.join(setup)} "
                f"(i128)p4_tna_hash_{spec.index}({buf}, {nbytes}); }})")

    def slice_len(self, sl: pyast.Slice, node: Any) -> int:
        # buf[off:off + N]: N must be a constant number of bytes that fits an __int128
        up = sl.upper
        if (isinstance(up, pyast.BinOp) and isinstance(up.op, pyast.Add) and isinstance(up.right, pyast.Constant)
                and pyast.dump(up.left) == pyast.dump(sl.lower) and isinstance(up.right.value, int)
                and 0 < up.right.value <= 15):
            return up.right.value
        raise self.fail("a lookahead wider than 15 bytes", node)

    def algorithm(self, e: pyast.expr, node: Any) -> int:
        if isinstance(e, pyast.Constant) and e.value in _ALGORITHMS:
            return _ALGORITHMS[e.value]
        raise self.fail(f"hash algorithm {pyast.unparse(e)}", node)

    def int_const(self, e: pyast.expr) -> int:
        if isinstance(e, pyast.Constant) and isinstance(e.value, int):
            return e.value
        raise self.fail("a non-constant width", e)

    def bool_const(self, e: pyast.expr) -> bool:
        if isinstance(e, pyast.Constant) and isinstance(e.value, bool):
            return e.value
        raise self.fail("a non-constant flag", e)

    def with_bytes(self, e: pyast.expr, use: Any) -> str:
        """``(terms).to_bytes(n, 'big')`` → a statement expression that fills a byte buffer
        with each term at its bit position (terms are ORed, as the Python ints are)."""
        if not (isinstance(e, pyast.Call) and isinstance(e.func, pyast.Attribute) and e.func.attr == "to_bytes"
                and len(e.args) == 2):
            raise self.fail(f"field list `{pyast.unparse(e)[:60]}`", e)
        n = self.int_const(e.args[0])
        terms: list[tuple[pyast.expr, int]] = []

        def flatten(x: pyast.expr, shift: int) -> None:
            if isinstance(x, pyast.BinOp) and isinstance(x.op, pyast.BitOr):
                flatten(x.left, shift)
                flatten(x.right, shift)
            elif (isinstance(x, pyast.BinOp) and isinstance(x.op, pyast.LShift)
                  and isinstance(x.right, pyast.Constant) and isinstance(x.right.value, int)):
                flatten(x.left, shift + x.right.value)
            else:
                terms.append((x, shift))

        flatten(e.func.value, 0)
        buf = self.tmp("b")
        parts = [f"uint8_t {buf}[{max(n, 1)}]; memset({buf}, 0, {max(n, 1)});"]
        for x, shift in terms:
            if isinstance(x, pyast.Constant) and x.value == 0:
                continue
            parts.append(f"p4_or_shifted({buf}, {n}, (u128)({self.expr(x)}), {shift});")
        return "({ " + " ".join(parts) + " " + use(buf, n) + "; })"

    # ------------------------------------------------------------------ pipeline
    def struct_uses(self, f: _Func, methods: tuple[str, ...]) -> list[str]:
        """The classes of the values whose ``methods`` (e.g. pack: a deparser emit) ``f``
        calls, one entry per call."""
        kinds = dict(zip(f.params, f.param_kinds or []))  # type: ignore[attr-defined]
        kinds.update(f.locals)                           # inferred in type_functions
        out = []
        for n in pyast.walk(f.node):
            if isinstance(n, pyast.Attribute) and n.attr in methods:
                cls = _cls_of(self.kind_of(n.value, kinds, for_local=False))
                if cls is None:
                    raise self.fail(f"{n.attr} of an unknown value", n)
                out.append(cls)
        return out

    def deparser_bytes(self, role: str) -> int:
        """Most bytes the deparser block emits."""
        f = self.funcs[self.comp.blocks[role].py_func]
        return sum(self.classes[cls].width // 8 for cls in self.struct_uses(f, ("pack",)))

    def block_call(self, role: str, args: dict[str, str]) -> str:
        """C calling an architecture block (``args``: the C argument for each parameter
        kind); an error returns P4_ERROR, an `exit` or a parser reject ends just the block."""
        blk = self.comp.blocks[role]
        out = [args[kind] for kind in self.funcs[blk.py_func].param_kinds or []]
        return (f"{blk.py_func}(sw, {', '.join(out)}); "
                f"if (sw->exit_flag == P4_RAISED) return P4_ERROR; sw->exit_flag = 0;")

    # the tna intrinsic metadata the pipeline itself reads or writes: type -> fields used
    _TNA_INTRINSICS = {
        "ingress_intrinsic_metadata_t": ("resubmit_flag", "ingress_port", "ingress_mac_tstamp"),
        "ingress_intrinsic_metadata_from_parser_t": ("parser_err",),
        "ingress_intrinsic_metadata_for_deparser_t": ("drop_ctl",),
        "ingress_intrinsic_metadata_for_tm_t": ("ucast_egress_port", "mcast_grp_a", "rid",
                                                "bypass_egress"),
        "egress_intrinsic_metadata_t": ("egress_port", "egress_rid", "pkt_length"),
        "egress_intrinsic_metadata_from_parser_t": ("parser_err",),
        "egress_intrinsic_metadata_for_deparser_t": ("drop_ctl",),
    }

    def tna_class(self, type_name: str) -> str:
        cls = self.comp.struct_classes.get(type_name)
        t = self.classes.get(cls or "")
        if t is None:
            raise CUnsupported(f"a tna program without {type_name}", self.path)
        have = {n for n, _ in t.fields}
        for f in self._TNA_INTRINSICS.get(type_name, ()):
            if f not in have:
                raise CUnsupported(f"{type_name} without {f}", self.path)
        self.used_classes.add(cls)
        return cls  # type: ignore[return-value]

    def tna_side(self, roles: tuple[str, ...], intrinsics: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
        """One pipeline half of tna.py: one object per P4 type name, shared by every block
        parameter of that type (tna.py's ``objs``). Returns the state struct's member lines
        and the C argument for each parameter kind (``st`` the state pointer)."""
        members: dict[str, str] = {}
        for name in intrinsics:
            members[self.tna_class(name)] = name
        for role in roles:
            for _, _, t in self.comp.blocks[role].params:
                if isinstance(t, StructT):
                    members.setdefault(t.py_class, t.name)
        args = {_ptr(cls): f"&st->m_{cls}" for cls in members}
        args[PKTIN] = "&pkt"
        args[PKTOUT] = "&pout"
        return [f"    {cls} m_{cls};" for cls in members], args

    def tna_parse(self, role: str, args: dict[str, str], from_prsr: str) -> str:
        """C starting a tna pass (``wire``/``wlen``: the packet with its prefix, ``len``: the
        packet's own length) and running its parser (tna.py's _parse): a reject sets the
        error's bit in parser_err; the payload is what the parser left."""
        return f"""    sw->packet_length = len;
    sw->rejected = 0;
    sw->exit_flag = 0;
    memset(sw->claimed, 0, sizeof sw->claimed);
    p4_pktin_t pkt = {{ wire, wlen, 0 }};
    {self.block_call(role, args)}
    if (sw->rejected) st->m_{from_prsr}.parser_err |= p4_parser_err_bit(sw->reject_code);
    sw->payload = wire + pkt.off;
    sw->payload_len = wlen - pkt.off;"""

    def tna_pipeline_functions(self) -> str:
        from ..runtime.tna import PORT_METADATA_BYTES, UNSET_PORT, parser_error_bit
        ig_md, ig_prsr, ig_dprsr, ig_tm, eg_md, eg_prsr, eg_dprsr = (
            self.tna_class(n) for n in self._TNA_INTRINSICS)
        ig_members, ig = self.tna_side(("ingress_parser", "ingress", "ingress_deparser"),
                                       tuple(list(self._TNA_INTRINSICS)[:4]))
        eg_members, eg = self.tna_side(("egress_parser", "egress", "egress_deparser"),
                                       tuple(list(self._TNA_INTRINSICS)[4:]))
        call = self.block_call
        errors = self.comp.errors
        bits = ", ".join(str(parser_error_bit(errors, code)) for code in range(len(errors))) or "0"
        return f"""
typedef struct p4_ig_state_t {{
{chr(10).join(ig_members)}
}} p4_ig_state_t;
typedef struct p4_eg_state_t {{
{chr(10).join(eg_members)}
}} p4_eg_state_t;
typedef struct p4_state_t {{ p4_ig_state_t ig; p4_eg_state_t eg; }} p4_state_t;

/* tna.py's parser_error_bit for each error code */
static const uint64_t p4_parser_err_bits[{max(1, len(errors))}] = {{ {bits} }};
static inline uint64_t p4_parser_err_bit(int64_t code) {{
    if (!code) return 0;
    return code < {len(errors)} ? p4_parser_err_bits[code] : 1;
}}

/* info[] of p4_tna_ingress, read by native.py (TNA_INFO_*) */
enum {{ I_UCAST, I_MCAST, I_RID, I_BYPASS, I_DROP, I_RESUBMIT, I_RESUBMIT_LEN, I_CLONE,
        I_SESSION, I_MIRROR_LEN, I_LEN, I_COUNT }};

/* One ingress pass (tna.py TnaPipeline._ingress up to the deparser): the parser reads the
   intrinsic metadata, the {PORT_METADATA_BYTES} bytes of port_md (port metadata or the resubmit data), then
   the frame. Writes the deparsed packet (headers, then the unparsed rest) to out; returns its
   length or P4_ERROR, the traffic manager's inputs in info. */
int64_t p4_tna_ingress(p4_switch_t *sw, uint64_t port, const uint8_t *data, int64_t len,
                       const uint8_t *port_md, uint64_t resubmit_flag, uint64_t tstamp,
                       uint8_t *out, uint64_t *info) {{
    p4_ig_state_t *st = &((p4_state_t *)sw->state)->ig;
    memset(st, 0, sizeof *st);
    {ig_md} md = {{0}};
    md.resubmit_flag = resubmit_flag;
    md.ingress_port = port;
    md.ingress_mac_tstamp = tstamp & 0xFFFFFFFFFFFFULL;
    md._v = 1;
    int64_t prefix = NBYTES_{ig_md} + {PORT_METADATA_BYTES}, wlen = prefix + len;
    uint8_t *wire = p4_scratch(sw, 0, wlen);
    if (!wire) {{ sw->error = "out of memory"; return P4_ERROR; }}
    pack_{ig_md}(&md, wire);
    memcpy(wire + NBYTES_{ig_md}, port_md, {PORT_METADATA_BYTES});
    memcpy(wire + prefix, data, (size_t)len);
    sw->resubmit_set = sw->clone_set = 0;
    sw->resubmit_len = sw->mirror_len = 0;
{self.tna_parse("ingress_parser", ig, ig_prsr)}
    st->m_{ig_tm}.ucast_egress_port = {UNSET_PORT};
    memset(sw->claimed, 0, sizeof sw->claimed);
    {call("ingress", ig)}
    p4_pktout_t pout = {{ out, 0 }};
    {call("ingress_deparser", ig)}
    memcpy(out + pout.len, sw->payload, (size_t)sw->payload_len);
    info[I_UCAST] = st->m_{ig_tm}.ucast_egress_port;
    info[I_MCAST] = st->m_{ig_tm}.mcast_grp_a;
    info[I_RID] = st->m_{ig_tm}.rid;
    info[I_BYPASS] = st->m_{ig_tm}.bypass_egress;
    info[I_DROP] = st->m_{ig_dprsr}.drop_ctl;
    info[I_RESUBMIT] = (uint64_t)sw->resubmit_set;
    info[I_RESUBMIT_LEN] = (uint64_t)sw->resubmit_len;
    info[I_CLONE] = (uint64_t)sw->clone_set;
    info[I_SESSION] = sw->clone_session;
    info[I_MIRROR_LEN] = (uint64_t)sw->mirror_len;
    info[I_LEN] = (uint64_t)(pout.len + sw->payload_len);
    return pout.len + sw->payload_len;
}}

/* One egress pass (tna.py TnaPipeline._egress) of data, the packet as ingress deparsed it.
   Returns the frame's length (written to out), -1 when drop_ctl dropped it, P4_ERROR. */
int64_t p4_tna_egress(p4_switch_t *sw, uint64_t eport, uint64_t rid, const uint8_t *data,
                      int64_t len, uint8_t *out) {{
    p4_eg_state_t *st = &((p4_state_t *)sw->state)->eg;
    memset(st, 0, sizeof *st);
    {eg_md} md = {{0}};
    md.egress_port = eport;
    md.egress_rid = rid;
    md.pkt_length = (uint64_t)len & 0xFFFF;
    md._v = 1;
    int64_t wlen = NBYTES_{eg_md} + len;
    uint8_t *wire = p4_scratch(sw, 1, wlen);
    if (!wire) {{ sw->error = "out of memory"; return P4_ERROR; }}
    pack_{eg_md}(&md, wire);
    memcpy(wire + NBYTES_{eg_md}, data, (size_t)len);
{self.tna_parse("egress_parser", eg, eg_prsr)}
    st->m_{eg_md} = md;          /* the controls see the pipeline's metadata, not the parser's */
    {call("egress", eg)}
    p4_pktout_t pout = {{ out, 0 }};
    {call("egress_deparser", eg)}
    if (st->m_{eg_dprsr}.drop_ctl & 1) return -1;
    memcpy(out + pout.len, sw->payload, (size_t)sw->payload_len);
    return pout.len + sw->payload_len;
}}

/* The whole pipeline when ingress sends the packet to one port and nothing else (no
   resubmit, mirror or multicast): returns the frame's length (port in info[I_UCAST]), -1 (no
   output), -2 (ingress done, its deparsed packet in out and info filled: the runtime goes
   on as tna.py does) or P4_ERROR. */
int64_t p4_tna_process(p4_switch_t *sw, uint64_t port, const uint8_t *data, int64_t len,
                       uint64_t tstamp, uint8_t *out, uint64_t *info) {{
    static const uint8_t no_port_md[{PORT_METADATA_BYTES}];
    int64_t n = p4_tna_ingress(sw, port, data, len, no_port_md, 0, tstamp, out, info);
    if (n == P4_ERROR) return P4_ERROR;
    if (info[I_RESUBMIT] || info[I_CLONE] || info[I_MCAST]) return -2;
    if (info[I_DROP] & 1) return -1;
    if (info[I_UCAST] == {UNSET_PORT}) return -1;
    if (info[I_BYPASS]) return n;
    uint8_t *deparsed = p4_scratch(sw, 2, n);
    if (!deparsed) {{ sw->error = "out of memory"; return P4_ERROR; }}
    memcpy(deparsed, out, (size_t)n);
    return p4_tna_egress(sw, info[I_UCAST], info[I_RID], deparsed, n, out);
}}

size_t p4_state_size(void) {{ return sizeof(p4_state_t); }}
"""

    def pipeline_functions(self) -> str:
        b = self.comp.blocks
        hdr_t, meta_t, sm_t = (b["parser"].params[i][2].py_class for i in (1, 2, 3))
        sm = self.classes[sm_t]
        names = {n for n, _ in sm.fields}
        for needed in ("ingress_port", "egress_spec", "egress_port", "instance_type",
                       "packet_length", "mcast_grp", "egress_rid", "parser_error",
                       "ingress_global_timestamp", "egress_global_timestamp"):
            if needed not in names:
                raise CUnsupported(f"standard_metadata_t without {needed}", self.path)

        call = self.block_call
        ing = {_ptr(hdr_t): "&st->hdr", _ptr(meta_t): "&st->meta", _ptr(sm_t): "&st->sm", PKTIN: "&pkt"}
        eg = {_ptr(hdr_t): "&st.hdr", _ptr(meta_t): "&st.meta", _ptr(sm_t): "&st.sm", PKTOUT: "&pout"}
        return f"""
typedef struct p4_state_t {{ {hdr_t} hdr; {meta_t} meta; {sm_t} sm; }} p4_state_t;

/* Ingress of one packet (parser, verifyChecksum, ingress). The state stays in the switch for
   the egress calls. Returns P4_DROP, P4_UNICAST (port in *arg) or P4_MULTICAST (group). */
int64_t p4_ingress(p4_switch_t *sw, uint64_t port, const uint8_t *data, int64_t len,
                   uint64_t timestamp, uint64_t *arg) {{
    p4_state_t *st = (p4_state_t *)sw->state;
    memset(st, 0, sizeof *st);
    st->sm.ingress_port = port;
    st->sm.packet_length = (uint64_t)len;
    st->sm.instance_type = 0;
    st->sm.ingress_global_timestamp = timestamp & 0xFFFFFFFFFFFFULL;
    sw->cur_sm = (void *)&st->sm;
    sw->packet_length = len;
    sw->rejected = 0;
    sw->exit_flag = 0;
    p4_pktin_t pkt = {{ data, len, 0 }};
    {call("parser", ing)}
    if (sw->rejected) st->sm.parser_error = (uint64_t)sw->reject_code;
    sw->payload = data + pkt.off;
    sw->payload_len = len - pkt.off;
    {call("verify_checksum", ing)}
    {call("ingress", ing)}
    if (st->sm.mcast_grp) {{ *arg = st->sm.mcast_grp; return P4_MULTICAST; }}
    if (st->sm.egress_spec == {V1_DROP_PORT}) return P4_DROP;
    st->sm.instance_type = 0;
    *arg = st->sm.egress_spec;
    return P4_UNICAST;
}}

/* Egress of one copy of the packet that ingress left (egress, computeChecksum, deparser).
   Returns the frame length written to out, -1 when egress dropped it, P4_ERROR. */
int64_t p4_egress(p4_switch_t *sw, uint64_t eport, uint64_t rid, uint64_t instance_type,
                  uint64_t timestamp, uint8_t *out) {{
    p4_state_t st = *(p4_state_t *)sw->state;
    st.sm.instance_type = instance_type;
    st.sm.egress_port = eport;
    st.sm.egress_rid = rid;
    st.sm.egress_spec = 0;
    st.sm.egress_global_timestamp = timestamp & 0xFFFFFFFFFFFFULL;
    sw->cur_sm = (void *)&st.sm;
    sw->packet_length = (int64_t)st.sm.packet_length;
    sw->exit_flag = 0;
    sw->truncate_length = 0;
    {call("egress", eg)}
    if (st.sm.egress_spec == {V1_DROP_PORT}) return -1;
    {call("compute_checksum", eg)}
    p4_pktout_t pout = {{ out, 0 }};
    {call("deparser", eg)}
    memcpy(out + pout.len, sw->payload, (size_t)sw->payload_len);
    int64_t n = pout.len + sw->payload_len;
    /* truncate(): V1ModelPipeline cuts the deparsed frame to the egress pass's length */
    if (sw->truncate_length && n > sw->truncate_length) n = sw->truncate_length;
    return n;
}}

/* Both halves in one call for the common case (unicast or drop, no timestamps read):
   returns the frame length (port in *arg), -1 (dropped), or -2 (multicast, group in *arg;
   the caller replicates with p4_egress). */
int64_t p4_process(p4_switch_t *sw, uint64_t port, const uint8_t *data, int64_t len,
                   uint8_t *out, uint64_t *arg) {{
    int64_t r = p4_ingress(sw, port, data, len, 0, arg);
    if (r == P4_ERROR) return P4_ERROR;
    if (r == P4_DROP) return -1;
    if (r == P4_MULTICAST) return -2;
    return p4_egress(sw, *arg, 0, 0, 0, out);
}}

size_t p4_state_size(void) {{ return sizeof(p4_state_t); }}
"""


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


def generate_c(comp: CompiledProgram, path: str) -> CProgram:
    """Translate a compiled v1model or tna program to C; :class:`CUnsupported` names what
    is not supported."""
    if comp.arch not in ARCH_ROLES:
        raise CUnsupported(f"the {comp.arch} architecture", path)
    _scan_p4_blocks(comp, path)
    try:
        return _Gen(comp, path).generate()
    except RecursionError:
        raise CUnsupported("an expression nested too deeply", path) from None


# ----------------------------------------------------------------------------- C runtime
_PRELUDE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef __int128 i128;
typedef unsigned __int128 u128;

#define P4_DROP 0
#define P4_UNICAST 1
#define P4_MULTICAST 2
#define P4_ERROR (-3)                    /* a DataplaneError: see p4_error() */

/* p4_switch_t.exit_flag: what unwinds the generated functions (0: nothing) */
#define P4_EXITING 1                     /* `exit`: up to the block's handler */
#define P4_RAISED 2                      /* a DataplaneError: up to the pipeline */
#define P4_REJECT 3                      /* a parser reject: up to the pipeline */

typedef struct p4_pktin_t { const uint8_t *buf; int64_t len; int64_t off; } p4_pktin_t;
typedef struct p4_pktout_t { uint8_t *buf; int64_t len; } p4_pktout_t;

static inline i128 p4_shl(i128 a, i128 b) { return (b < 0 || b >= 128) ? 0 : (i128)((u128)a << (int)b); }
static inline i128 p4_shr(i128 a, i128 b) { return (b < 0 || b >= 127) ? (a < 0 ? -1 : 0) : a >> (int)b; }
static inline i128 p4_pydiv(i128 a, i128 b) { i128 q = a / b; if ((a % b != 0) && ((a < 0) != (b < 0))) q--; return q; }
static inline i128 p4_pymod(i128 a, i128 b) { i128 r = a % b; if (r != 0 && ((r < 0) != (b < 0))) r += b; return r; }
static inline i128 p4_sext(i128 v, int w) { i128 half = (i128)1 << (w - 1); return ((v & (((i128)1 << w) - 1)) ^ half) - half; }

/* Bits [bit, bit+w) of a big-endian byte string, MSB first (w <= 127). */
static inline i128 p4_get_bits(const uint8_t *p, int bit, int w) {
    if ((bit & 7) == 0 && (w & 7) == 0) {
        u128 v = 0;
        for (int i = 0; i < w / 8; i++) v = (v << 8) | p[bit / 8 + i];
        return (i128)v;
    }
    u128 v = 0;
    for (int i = 0; i < w; i++) {
        int b = bit + i;
        v = (v << 1) | ((p[b >> 3] >> (7 - (b & 7))) & 1);
    }
    return (i128)v;
}

static inline void p4_put_bits(uint8_t *p, int bit, int w, u128 v) {
    if ((bit & 7) == 0 && (w & 7) == 0) {
        for (int i = w / 8 - 1; i >= 0; i--) { p[bit / 8 + i] = (uint8_t)v; v >>= 8; }
        return;
    }
    for (int i = w - 1; i >= 0; i--) {
        int b = bit + i;
        if (v & 1) p[b >> 3] |= (uint8_t)(0x80 >> (b & 7));
        v >>= 1;
    }
}

static inline u128 p4_load_be(const uint8_t *p, int n) {
    u128 v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* OR v << shift into an n-byte big-endian buffer (shift counted from the last byte's LSB). */
static inline void p4_or_shifted(uint8_t *buf, int n, u128 v, int shift) {
    if (!v) return;
    int first = shift / 8, last = (shift + 128) / 8;
    if (last > n - 1) last = n - 1;
    for (int i = first; i <= last; i++) {          /* i: byte index from the LSB end */
        int rel = 8 * i - shift;
        uint8_t byte;
        if (rel >= 0) byte = rel < 128 ? (uint8_t)(v >> rel) : 0;
        else byte = -rel < 8 ? (uint8_t)(v << -rel) : 0;
        buf[n - 1 - i] |= byte;
    }
}

static inline i128 p4_reg_get128(const uint64_t *cells, int64_t i) {
    return (i128)(((u128)cells[2 * i + 1] << 64) | cells[2 * i]);
}
static inline void p4_reg_set128(uint64_t *cells, int64_t i, i128 v) {
    cells[2 * i] = (uint64_t)v; cells[2 * i + 1] = (uint64_t)((u128)v >> 64);
}

/* ---- hashes and checksums, as p4sim/runtime/hashes.py (bmv2) computes them */
static uint32_t p4_crc32_table[256];
static uint16_t p4_crc16_table[256];
static uint16_t p4_ccitt_table[256];
static void p4_hash_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t r = i;
        for (int k = 0; k < 8; k++) r = (r & 1) ? (r >> 1) ^ 0xEDB88320u : r >> 1;
        p4_crc32_table[i] = r;
        uint16_t s = (uint16_t)i;
        for (int k = 0; k < 8; k++) s = (s & 1) ? (uint16_t)((s >> 1) ^ 0xA001) : (uint16_t)(s >> 1);
        p4_crc16_table[i] = s;
        uint16_t c = (uint16_t)(i << 8);
        for (int k = 0; k < 8; k++) c = (c & 0x8000) ? (uint16_t)((c << 1) ^ 0x1021) : (uint16_t)(c << 1);
        p4_ccitt_table[i] = c;
    }
}

static inline uint64_t p4_hash(int algo, const uint8_t *d, int64_t n) {
    switch (algo) {
    case 1: { uint32_t r = 0xFFFFFFFFu; for (int64_t i = 0; i < n; i++) r = p4_crc32_table[(r ^ d[i]) & 0xFF] ^ (r >> 8); return r ^ 0xFFFFFFFFu; }
    case 2: { uint16_t r = 0; for (int64_t i = 0; i < n; i++) r = (uint16_t)(p4_crc16_table[(r ^ d[i]) & 0xFF] ^ (r >> 8)); return r; }
    case 3: {
        uint64_t s = 0;
        for (int64_t i = 0; i + 1 < n; i += 2) s += ((uint64_t)d[i] << 8) | d[i + 1];
        if (n & 1) s += (uint64_t)d[n - 1] << 8;
        while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
        return ~s & 0xFFFF;
    }
    case 4: { uint64_t v = 0; for (int64_t i = 0; i < n && i < 8; i++) v = (v << 8) | d[i]; return v; }
    case 5: {
        uint64_t x = 0;
        for (int64_t i = 0; i < n; i += 2) x ^= ((uint64_t)d[i] << 8) | (i + 1 < n ? d[i + 1] : 0);
        return x;
    }
    case 6: { uint16_t r = 0xFFFF; for (int64_t i = 0; i < n; i++) r = (uint16_t)(p4_ccitt_table[((r >> 8) ^ d[i]) & 0xFF] ^ (r << 8)); return r; }
    }
    return 0;
}

/* ---- tna Hash: a CRC as hashes.crc_function computes it (Rocksoft parameters, width <= 64),
   XOR of big-endian words, and hashes.tna_hash_output */
typedef struct p4_crc_t {
    int width, reflected, refl_in, refl_out, shift, hi;
    uint64_t rmask, start, xorout;
    uint64_t table[256];
} p4_crc_t;

static inline u128 p4_mask(int w) { return w >= 128 ? ~(u128)0 : ((u128)1 << w) - 1; }

static inline uint64_t p4_reflect(uint64_t v, int w) {
    uint64_t r = 0;
    for (int i = 0; i < w; i++) { r = (r << 1) | (v & 1); v >>= 1; }
    return r;
}

static inline void p4_crc_init(p4_crc_t *c, int w, uint64_t poly, uint64_t init, uint64_t xorout,
                               int refl_in, int refl_out) {
    uint64_t mask = (uint64_t)p4_mask(w);
    c->width = w; c->xorout = xorout; c->refl_in = refl_in; c->refl_out = refl_out;
    c->reflected = refl_in && refl_out;
    if (c->reflected) {                  /* LSB-first register */
        uint64_t rpoly = p4_reflect(poly, w);
        for (int i = 0; i < 256; i++) {
            uint64_t r = (uint64_t)i;
            for (int k = 0; k < 8; k++) r = (r & 1) ? (r >> 1) ^ rpoly : r >> 1;
            c->table[i] = r;
        }
        c->start = p4_reflect(init & mask, w);
        return;
    }
    /* MSB-first; widths below 8 run in an 8-bit register shifted left */
    int shift = w < 8 ? 8 - w : 0, rw = w + shift;
    uint64_t rmask = (uint64_t)p4_mask(rw), top = 1ULL << (rw - 1), p = poly << shift;
    for (int i = 0; i < 256; i++) {
        uint64_t r = (uint64_t)i << (rw - 8);
        for (int k = 0; k < 8; k++) r = (r & top) ? ((r << 1) ^ p) & rmask : (r << 1) & rmask;
        c->table[i] = r;
    }
    c->start = (init & mask) << shift;
    c->shift = shift; c->hi = rw - 8; c->rmask = rmask;
}

static inline uint64_t p4_crc(const p4_crc_t *c, const uint8_t *d, int64_t n) {
    uint64_t r = c->start;
    if (c->reflected) {
        for (int64_t i = 0; i < n; i++) r = c->table[(r ^ d[i]) & 0xFF] ^ (r >> 8);
        return r ^ c->xorout;
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t b = c->refl_in ? p4_reflect(d[i], 8) : d[i];
        r = c->table[((r >> c->hi) ^ b) & 0xFF] ^ ((r << 8) & c->rmask);
    }
    r >>= c->shift;
    if (c->refl_out) r = p4_reflect(r, c->width);
    return r ^ c->xorout;
}

static inline uint64_t p4_xor_words(const uint8_t *d, int64_t n, int k) {
    uint64_t x = 0;
    for (int64_t i = 0; i < n; i += k) {
        uint64_t word = 0;
        for (int j = 0; j < k; j++) word = (word << 8) | (i + j < n ? d[i + j] : 0);
        x ^= word;
    }
    return x;
}

static inline uint64_t p4_hash_output(uint64_t value, int value_width, int out_width, int msb, int extend) {
    if (out_width <= value_width)
        return msb ? value >> (value_width - out_width) : value & (uint64_t)p4_mask(out_width);
    if (!extend) return value;
    u128 out = value;
    for (int filled = value_width; filled < out_width; filled += value_width)
        out = (out << value_width) | value;
    return (uint64_t)(out & p4_mask(out_width));
}

static inline i128 p4_v1hash(int algo, const uint8_t *d, int64_t n, i128 base, i128 max, int width) {
    i128 h = (i128)p4_hash(algo, d, n);
    if (max) h = p4_pymod(h, max);
    return (base + h) & (((i128)1 << width) - 1);
}
"""

_SWITCH_STRUCT = r"""
typedef struct p4_table_t p4_table_t;
struct p4_table_t {
    int64_t nkeys, nargs, mode;          /* mode 0: hash groups (exact, lpm); 1: ordered scan */
    int64_t default_action;
    uint64_t *default_args;
    int64_t nentries, stride;            /* entry record: group, values, masks, lo, hi, action, args */
    uint64_t *entries;
    int64_t ngroups;
    uint64_t *group_masks;               /* ngroups * nkeys */
    int64_t *group_cap;                  /* per group: power-of-two slot count */
    int64_t **group_slots;               /* per group: entry index + 1, 0 = empty */
};

typedef struct p4_switch_t {
    void *regs[P4_NREGS];
    p4_table_t tables[P4_NTABLES];
    void *state;                         /* p4_state_t: the packet between ingress and egress */
    void *cur_sm;                        /* standard_metadata of the running block */
    int64_t packet_length;
    const uint8_t *payload;
    int64_t payload_len;
    int exit_flag, rejected;             /* exit_flag: P4_EXITING, P4_RAISED, P4_REJECT or 0 */
    int64_t reject_code;
    const char *error;                   /* the DataplaneError's message */
    int64_t truncate_length;             /* v1model truncate() in this egress pass, 0: none */
    uint8_t claimed[P4_NREGS];           /* tna: registers executed in this pass */
    int resubmit_set, clone_set;         /* tna: Resubmit.emit / Mirror.emit in this pass */
    uint64_t clone_session;
    int64_t resubmit_len, mirror_len;
    uint8_t resubmit_data[P4_RESUBMIT_BYTES], mirror_data[P4_MIRROR_BYTES];
    uint8_t *scratch[3];                 /* tna: packets with their prefixes, grown on demand */
    int64_t scratch_cap[3];
} p4_switch_t;

const char *p4_error(p4_switch_t *sw) { return sw->error ? sw->error : ""; }

/* The resubmit (which 0) or mirror (1) field list of the last ingress pass. */
const uint8_t *p4_pass_data(p4_switch_t *sw, int64_t which) {
    return which ? sw->mirror_data : sw->resubmit_data;
}

static inline uint8_t *p4_scratch(p4_switch_t *sw, int i, int64_t need) {
    if (need > sw->scratch_cap[i]) {
        int64_t cap = need < 4096 ? 4096 : 2 * need;
        uint8_t *p = realloc(sw->scratch[i], (size_t)cap);
        if (!p) return 0;
        sw->scratch[i] = p;
        sw->scratch_cap[i] = cap;
    }
    return sw->scratch[i];
}

static inline int64_t p4_table_lookup(p4_table_t *t, const uint64_t *key, const uint64_t **args, int64_t *entry);

static inline uint64_t p4_checksum(p4_switch_t *sw, int algo, const uint8_t *d, int64_t n, int with_payload, int width) {
    uint64_t h;
    if (with_payload) {
        uint8_t *all = malloc((size_t)(n + sw->payload_len) + 1);
        if (!all) return 0;
        memcpy(all, d, (size_t)n);
        memcpy(all + n, sw->payload, (size_t)sw->payload_len);
        h = p4_hash(algo, all, n + sw->payload_len);
        free(all);
    } else {
        h = p4_hash(algo, d, n);
    }
    return width >= 64 ? h : h & ((1ULL << width) - 1);
}
"""

_TABLES_C = r"""
/* ---- tables: a snapshot of the Python Table, loaded whenever the control plane changed it */
static inline uint64_t p4_mix(const uint64_t *k, const uint64_t *m, int64_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (int64_t i = 0; i < n; i++) {
        h ^= (k[i] & m[i]) + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
        h *= 0xFF51AFD7ED558CCDULL;
        h ^= h >> 33;
    }
    return h;
}

static void p4_table_free(p4_table_t *t) {
    for (int64_t g = 0; g < t->ngroups; g++) free(t->group_slots[g]);
    free(t->group_slots); free(t->group_cap); free(t->group_masks);
    free(t->entries); free(t->default_args);
    memset(t, 0, sizeof *t);
}

/* entries: nentries records of `stride` words; group_masks: ngroups * nkeys words. */
int p4_table_load(p4_switch_t *sw, int64_t tid, int64_t mode, int64_t nkeys, int64_t nargs,
                  int64_t nentries, const uint64_t *entries, int64_t ngroups,
                  const uint64_t *group_masks, int64_t default_action,
                  const uint64_t *default_args) {
    p4_table_t *t = &sw->tables[tid];
    p4_table_free(t);
    t->nkeys = nkeys; t->nargs = nargs; t->mode = mode;
    t->stride = 2 + 4 * nkeys + nargs;
    t->nentries = nentries;
    t->default_action = default_action;
    t->default_args = calloc((size_t)(nargs + 1), 8);
    t->entries = malloc((size_t)(nentries * t->stride + 1) * 8);
    t->ngroups = ngroups;
    t->group_masks = malloc((size_t)(ngroups * nkeys + 1) * 8);
    t->group_cap = calloc((size_t)(ngroups + 1), 8);
    t->group_slots = calloc((size_t)(ngroups + 1), sizeof(int64_t *));
    if (!t->default_args || !t->entries || !t->group_masks || !t->group_cap || !t->group_slots) return -1;
    if (nargs) memcpy(t->default_args, default_args, (size_t)nargs * 8);
    if (nentries) memcpy(t->entries, entries, (size_t)(nentries * t->stride) * 8);
    if (ngroups > 0 && nkeys > 0) memcpy(t->group_masks, group_masks, (size_t)(ngroups * nkeys) * 8);
    if (mode != 0) return 0;
    int64_t *count = calloc((size_t)(ngroups + 1), 8);
    if (!count) return -1;
    for (int64_t e = 0; e < nentries; e++) count[t->entries[e * t->stride]]++;
    for (int64_t g = 0; g < ngroups; g++) {
        int64_t cap = 8;
        while (cap < 2 * count[g]) cap <<= 1;
        t->group_cap[g] = cap;
        t->group_slots[g] = calloc((size_t)cap, 8);
        if (!t->group_slots[g]) { free(count); return -1; }
    }
    free(count);
    for (int64_t e = 0; e < nentries; e++) {
        const uint64_t *rec = t->entries + e * t->stride;
        int64_t g = (int64_t)rec[0];
        const uint64_t *masks = t->group_masks + g * nkeys;
        uint64_t mask = (uint64_t)t->group_cap[g] - 1;
        uint64_t s = p4_mix(rec + 1, masks, nkeys) & mask;
        while (t->group_slots[g][s]) s = (s + 1) & mask;
        t->group_slots[g][s] = e + 1;
    }
    return 0;
}

static inline int64_t p4_table_lookup(p4_table_t *t, const uint64_t *key, const uint64_t **args, int64_t *entry) {
    int64_t nk = t->nkeys, stride = t->stride;
    if (t->mode == 0) {
        for (int64_t g = 0; g < t->ngroups; g++) {
            const uint64_t *masks = t->group_masks + g * nk;
            uint64_t mask = (uint64_t)t->group_cap[g] - 1;
            const int64_t *slots = t->group_slots[g];
            for (uint64_t s = p4_mix(key, masks, nk) & mask; slots[s]; s = (s + 1) & mask) {
                const uint64_t *rec = t->entries + (slots[s] - 1) * stride;
                int64_t i = 0;
                while (i < nk && (key[i] & masks[i]) == rec[1 + i]) i++;
                if (i == nk) {
                    *entry = slots[s] - 1;
                    *args = rec + 2 + 4 * nk;
                    return (int64_t)rec[1 + 4 * nk];
                }
            }
        }
    } else {
        for (int64_t e = 0; e < t->nentries; e++) {
            const uint64_t *rec = t->entries + e * stride;
            int64_t i = 0;
            while (i < nk && (key[i] & rec[1 + nk + i]) == rec[1 + i]
                   && key[i] >= rec[1 + 2 * nk + i] && key[i] <= rec[1 + 3 * nk + i]) i++;
            if (i == nk) {
                *entry = e;
                *args = rec + 2 + 4 * nk;
                return (int64_t)rec[1 + 4 * nk];
            }
        }
    }
    *entry = -1;
    *args = t->default_args;
    return t->default_action;
}

p4_switch_t *p4_new(void) {
    static int hash_ready;
    if (!hash_ready) { p4_hash_init(); p4_program_init(); hash_ready = 1; }
    p4_switch_t *sw = calloc(1, sizeof *sw);
    if (!sw) return 0;
    sw->state = calloc(1, p4_state_size());
    if (!sw->state) { free(sw); return 0; }
    return sw;
}

void p4_free(p4_switch_t *sw) {
    for (int t = 0; t < P4_NTABLES; t++) p4_table_free(&sw->tables[t]);
    for (int i = 0; i < 3; i++) free(sw->scratch[i]);
    free(sw->state);
    free(sw);
}

void p4_bind_register(p4_switch_t *sw, int64_t index, void *cells) { sw->regs[index] = cells; }
"""
