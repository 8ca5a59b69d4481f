"""What bf-p4c's bf-rt.json says about a TNA program beyond its tables and registers, read from
p4sim's compiled program: the ``Hash`` externs (each gets ``configure``/``compute``/``algorithm``
tables), the fields a snapshot can capture, and the ingress parser's port metadata.

bf-p4c builds these from its P4Info extension (``barefoot/p4info.proto``); p4sim reads them from
the program directly:

* a ``Hash`` instance is named by its control path (``InaIngress.forwarding.ecmp_hash``) and
  described by the field list of its ``get({...})`` call (names as written, widths of the
  fields' types, constants marked);
* snapshot fields are every ``bit<W>``/``int<W>`` field reachable from the ingress and egress
  controls' parameters, in parameter order (``hdr`` headers also get a ``$valid`` bit; bools are
  not fields), numbered from 1 across both controls so that a field with the same name has the
  same id in both, as bf-p4c's ``SnapshotFieldFinder`` does;
* port metadata: the ingress parser's ``ingress_intrinsic_metadata_t`` parameter name (the key
  is ``<name>.ingress_port``) and the type ``port_metadata_unpack<T>`` reads, if it is called.

Nested controls and the field lists of ``get`` calls are not kept by the compiler, so the
program's source is parsed again (about half a second).
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from p4sim.backend.compiler import expr_text
from p4sim.frontend import ast
from p4sim.frontend.parser import parse_file
from p4sim.frontend.types import BitT, EnumT, P4Type, StackT, StructT


@dataclass
class HashField:
    name: str                 # the expression as written (``hdr.ipv4.src_addr``)
    width: int
    constant: bool = False


@dataclass
class HashExtern:
    path: str                 # control path without the pipeline (``InaIngress.agg_hash``)
    width: int                # the hash value's width (``Hash<bit<W>>``)
    fields: list[HashField]


@dataclass
class SnapshotField:
    id: int
    name: str
    width: int


@dataclass
class ProgramExterns:
    hashes: list[HashExtern] = field(default_factory=list)
    snapshot: dict[str, list[SnapshotField]] = field(default_factory=dict)   # gress -> fields
    parser_name: str = ""               # the ingress parser's type name
    intrinsic_md: str = "ig_intr_md"    # its ingress_intrinsic_metadata_t parameter
    port_metadata: StructT | None = None   # T of port_metadata_unpack<T>, if called
    skipped: list[str] = field(default_factory=list)   # what could not be described, and why


def _walk(node: Any) -> Iterator[Any]:
    if isinstance(node, (list, tuple)):
        for x in node:
            yield from _walk(x)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        yield node
        for f in dataclasses.fields(node):
            if f.name not in ("pos", "type", "decl"):
                yield from _walk(getattr(node, f.name))


def parse_again(program: Any, include_dirs: list[str] | tuple[str, ...] = ()) -> ast.Program:
    """The AST of a loaded program. Its file is parsed if it still holds the program's source;
    otherwise (a program pushed over the API, compiled from a temporary file) the source is."""
    path = os.path.abspath(program.path)
    dirs = list(include_dirs) + [os.path.dirname(path)]
    try:
        if Path(path).read_text() == program.source:
            return parse_file(path, dirs)
    except OSError:
        pass
    with tempfile.TemporaryDirectory(prefix="p4sim-bfrt-") as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        Path(copy).write_text(program.source)
        return parse_file(copy, dirs)


def _snapshot_fields(t: P4Type, prefix: str, with_valid: bool, out: list[tuple[str, int]]) -> None:
    if isinstance(t, BitT):
        out.append((prefix, t.width))
    elif isinstance(t, EnumT) and t.underlying is not None:
        out.append((prefix, t.underlying.width))       # a serializable enum is its bits
    elif isinstance(t, StackT):
        for i in range(t.size):
            _snapshot_fields(t.element, f"{prefix}${i}", with_valid, out)
    elif isinstance(t, StructT):
        if t.kind == "header" and with_valid:
            out.append((f"{prefix}.$valid", 1))
        for name, ft in t.fields:
            _snapshot_fields(ft, f"{prefix}.{name}", with_valid, out)
    # bool, varbit, error...: not snapshot fields (bf-p4c only takes bit<W> and int<W>)


def _struct_of(compiled: Any, tr: ast.TypeRef) -> StructT | None:
    if isinstance(tr, ast.NamedTypeRef):
        t = compiled.types.get(tr.name)
        return t if isinstance(t, StructT) else None
    return None


def _field_width(compiled: Any, params: dict[str, StructT], e: ast.Expr) -> int | None:
    """The width of ``param.a.b`` (a field reached from a control parameter), else None."""
    chain: list[str] = []
    while isinstance(e, ast.Member):
        chain.append(e.member)
        e = e.expr
    if not isinstance(e, ast.Name) or e.name not in params:
        return None
    t: Any = params[e.name]
    for member in reversed(chain):
        if not isinstance(t, StructT):
            return None
        t = t.field_type(member)
    if isinstance(t, BitT):
        return t.width
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    return None


def _hash_width(tr: ast.TypeRef) -> int | None:
    if isinstance(tr, ast.NamedTypeRef) and tr.args and isinstance(tr.args[0], ast.BitTypeRef):
        w = tr.args[0].width
        return w.value if isinstance(w, ast.IntLit) else 1 if w is None else None
    return None


def _control_hashes(compiled: Any, controls: dict[str, ast.ControlDecl], decl: ast.ControlDecl,
                    path: str, out: ProgramExterns, depth: int = 0) -> None:
    params = {p.name: s for p in decl.params if (s := _struct_of(compiled, p.type_ref)) is not None}
    calls: dict[str, list[ast.Call]] = {}
    for n in _walk([decl.locals, decl.body]):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Member) and n.func.member == "get" \
                and isinstance(n.func.expr, ast.Name):
            calls.setdefault(n.func.expr.name, []).append(n)
    for local in decl.locals:
        if not isinstance(local, ast.Instantiation) or not isinstance(local.type_ref, ast.NamedTypeRef):
            continue
        name = f"{path}.{local.name}"
        if local.type_ref.name in controls and depth < 16:
            _control_hashes(compiled, controls, controls[local.type_ref.name], name, out, depth + 1)
        elif local.type_ref.name == "Hash":
            width = _hash_width(local.type_ref)
            uses = calls.get(local.name, [])
            if width is None or not uses or not uses[0].args:
                out.skipped.append(f"{name}: no get() call with a field list")
                continue
            arg = uses[0].args[0].value                 # bf-p4c describes the first call
            items = arg.items if isinstance(arg, ast.ListExpr) else [arg]
            fields: list[HashField] = []
            for item in items:
                if isinstance(item, ast.IntLit):
                    if item.width is None:
                        break
                    fields.append(HashField(str(item.value), item.width, constant=True))
                    continue
                w = _field_width(compiled, params, item)
                if w is None:
                    break
                fields.append(HashField(expr_text(item), w))
            else:
                out.hashes.append(HashExtern(name, width, fields))
                continue
            out.skipped.append(f"{name}: cannot describe the field list {expr_text(arg)}")


def program_externs(program: Any, include_dirs: list[str] | tuple[str, ...] = ()) -> ProgramExterns:
    """The hashes, snapshot fields and port metadata of a loaded TNA program."""
    compiled = program.compiled
    out = ProgramExterns()
    # snapshot: ingress then egress, one id per distinct name
    ids: dict[str, int] = {}
    for gress in ("ingress", "egress"):
        block = compiled.blocks.get(gress)
        if block is None:
            continue
        found: list[tuple[str, int]] = []
        for i, (_, pname, ptype) in enumerate(block.params):
            _snapshot_fields(ptype, pname, i == 0, found)
        fields = []
        for name, width in found:
            fid = ids.setdefault(name, len(ids) + 1)
            fields.append(SnapshotField(fid, name, width))
        out.snapshot[gress] = sorted(fields, key=lambda f: f.id)
    parser = compiled.blocks.get("ingress_parser")
    if parser is not None:
        out.parser_name = parser.decl.name
        for _, pname, ptype in parser.params:
            if isinstance(ptype, StructT) and ptype.name == "ingress_intrinsic_metadata_t":
                out.intrinsic_md = pname
    tree = parse_again(program, include_dirs)
    controls = {d.name: d for d in tree.declarations if isinstance(d, ast.ControlDecl)}
    for gress in ("ingress", "egress"):
        block = compiled.blocks.get(gress)
        if block is not None and block.decl.name in controls:
            _control_hashes(compiled, controls, controls[block.decl.name], block.decl.name, out)
    if parser is not None:
        for d in tree.declarations:
            if isinstance(d, ast.ParserDecl) and d.name == parser.decl.name:
                for n in _walk(d.states):
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                            and n.func.name == "port_metadata_unpack" and n.type_args:
                        out.port_metadata = _struct_of(compiled, n.type_args[0])
    return out
