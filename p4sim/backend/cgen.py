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
from typing import Any

from ..arch.tna import PORT_METADATA_BYTES
from ..frontend.types import BitT, BoolT, EnumT, ErrorT, StructT
from ..runtime import hashes
from .codewriter import POS_MARKER
from .compiler import CompiledProgram, Compiler
from .cgen_pipeline import PipelinesC
from .cgen_prelude import _PRELUDE, _SWITCH_STRUCT, _TABLES_C
from .cgen_stmts import StatementsC
# MAX_INT_BITS, CProgram, CUnsupported and the specs are re-exported: runtime/native.py and
# the tests import them from here.
from .cgen_common import (ARCH_ROLES, ARGS, BUF, _cls_of, CProgram, CUnsupported, DEPARSER_ROLES,
                          ENTRY, _Func, HashSpec, INT, MAX_INT_BITS, PARSER_ROLES, PKTIN, PKTOUT,
                          _ptr, RegisterSpec, RESULTS, _scan_p4_blocks, TableSpec, _TNA_CRCS,
                          _TNA_XORS, _U64, _val)


class _Gen(StatementsC, PipelinesC):
    """One program's translation; statements and pipelines live in the mixins."""

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
