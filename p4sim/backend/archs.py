"""Architecture elaboration: map the `main` package instance onto compiled blocks.

v1model: ``V1Switch(Parser, VerifyChecksum, Ingress, Egress, ComputeChecksum, Deparser) main``.
TNA: ``Pipeline(IngressParser, Ingress, IngressDeparser, EgressParser, Egress,
EgressDeparser) pipe; Switch(pipe) main``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..arch import tna as tna_arch
from ..arch import v1model as v1model_arch
from ..frontend import ast
from ..frontend.types import BlockT, StructT
from p4control import model
from .context import _err

if TYPE_CHECKING:
    from .compiler import Compiler

V1MODEL_ROLES = v1model_arch.ROLES
TNA_ROLES = tna_arch.ROLES



def _block_decl(c: "Compiler", arg: ast.Expr):
    if isinstance(arg, ast.ConstructorCall) and isinstance(arg.type_ref, ast.NamedTypeRef):
        b = c.globals.lookup(arg.type_ref.name)
        if b is not None and isinstance(b.type, BlockT):
            return b.decl
    raise _err(arg, "expected an instantiation of a parser or control, e.g. MyIngress()")


def elaborate(c: "Compiler", main: ast.Instantiation) -> None:
    pkg = main.type_ref.name if isinstance(main.type_ref, ast.NamedTypeRef) else "?"
    if c.arch == "v1model":
        if pkg != "V1Switch":
            raise _err(main, f"v1model programs must instantiate V1Switch as main, not {pkg}"
                             " (use --arch tna for TNA programs)")
        args = [a.value for a in main.args]
        if len(args) != 6:
            raise _err(main, f"V1Switch takes 6 blocks, got {len(args)}")
        roles = V1MODEL_ROLES
    elif c.arch == "tna":
        from .tofino_rules import check_hash_uses, check_salu_limits
        check_hash_uses(c.program)
        check_salu_limits(c.program)
        if pkg != "Switch":
            raise _err(main, f"TNA programs must instantiate Switch(pipe) as main, not {pkg}")
        if len(main.args) != 1:
            raise _err(main, "p4sim supports a single-pipeline TNA Switch(pipe)")
        pipe_arg = main.args[0].value
        if isinstance(pipe_arg, ast.Name):
            pb = c.globals.lookup(pipe_arg.name)
            if pb is None or pb.kind != "instance":
                raise _err(pipe_arg, f"unknown pipeline instance '{pipe_arg.name}'")
            pipe = pb.decl
            pipe_args = pipe.args
            ptype = pipe.type_ref
        elif isinstance(pipe_arg, ast.ConstructorCall):
            pipe_args, ptype = pipe_arg.args, pipe_arg.type_ref
        else:
            raise _err(pipe_arg, "Switch needs a Pipeline instance")
        if not isinstance(ptype, ast.NamedTypeRef) or ptype.name != "Pipeline":
            raise _err(pipe_arg, "Switch's argument must be a Pipeline")
        args = [a.value for a in pipe_args]
        if len(args) != 6:
            raise _err(pipe_arg, f"Pipeline takes 6 blocks, got {len(args)}")
        roles = TNA_ROLES
    else:
        raise _err(main, f"unknown architecture {c.arch}")
    decls = [_block_decl(c, a) for a in args]
    c.block_prefixes = {role: d.name for role, d in zip(roles, decls)}
    # header/metadata types come from the first parser's parameters
    for role, arg in zip(roles, args):
        c.blocks[role] = c.instantiate_block(arg, c.globals, role)
    _collect_controller_headers(c)
    if c.arch == "v1model":
        _collect_field_lists(c)


def _collect_field_lists(c: "Compiler") -> None:
    """@field_list(N, ...) on user metadata fields, nested structs included (as p4c): what
    resubmit/recirculate/clone preserve. Fields are recorded as dotted paths from the metadata."""
    params = c.blocks["ingress"].params
    if len(params) < 2:
        return
    meta_t = params[1][2]
    if isinstance(meta_t, StructT):
        _collect_struct_field_lists(c, meta_t, "")


def _collect_struct_field_lists(c: "Compiler", t: StructT, prefix: str) -> None:
    decl_b = c.globals.lookup(t.name)
    decl = decl_b.decl if decl_b else None
    if not isinstance(decl, ast.StructLikeDecl):
        return
    for f, (_, ft) in zip(decl.fields, t.fields):
        path = prefix + f.name
        for a in f.annotations:
            if a.name == "field_list":
                for part in a.body.split(","):
                    part = part.strip()
                    if not part:
                        continue
                    try:
                        idx = int(part, 0)
                    except ValueError:
                        ok, v, _ = c.try_const(ast.Name(part, pos=a.pos), c.globals)
                        if not ok:
                            raise _err(a, f"@field_list index '{part}' is not a constant")
                        idx = v
                    c.field_lists.setdefault(idx, []).append(path)
        if isinstance(ft, StructT) and ft.kind == "struct":
            _collect_struct_field_lists(c, ft, path + ".")


def _collect_controller_headers(c: "Compiler") -> None:
    for name, t in c.types.items():
        if isinstance(t, StructT) and t.is_header:
            for a in t.annotations:
                if a.name == "controller_header":
                    which = a.string_arg()
                    if which not in ("packet_in", "packet_out"):
                        raise _err(a, '@controller_header must be "packet_in" or "packet_out"')
                    c.info.controller_headers[which] = model.ControllerHeader(
                        which, t.name, [model.StructField(n, c._cp_width(ft, a)) for n, ft in t.fields])
