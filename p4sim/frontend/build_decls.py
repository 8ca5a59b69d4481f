"""Lark tree → ``ast`` nodes, part one: types and declarations (constants, variables,
instantiations, externs, functions, actions, structured types, enums, parsers, controls, tables).

A mixin of :class:`p4sim.frontend.parser._Builder`, which supplies the position and error
helpers (``_pos``, ``_fail``) and, through :mod:`p4sim.frontend.build_exprs`, ``_int_literal``.
"""
from __future__ import annotations

from lark import Token, v_args

from . import ast


class _DeclBuilder:
    """Types and declarations of the tree → ``ast`` transformer."""

    # -- types
    @v_args(meta=True)
    def type_ref(self, meta, items):
        return items[0]

    @v_args(meta=True)
    def bool_type(self, meta, items):
        return ast.SimpleTypeRef("bool", pos=self._pos(meta))

    @v_args(meta=True)
    def error_type(self, meta, items):
        return ast.SimpleTypeRef("error", pos=self._pos(meta))

    @v_args(meta=True)
    def string_type(self, meta, items):
        return ast.SimpleTypeRef("string", pos=self._pos(meta))

    @v_args(meta=True)
    def bit_type_1(self, meta, items):
        return ast.BitTypeRef(None, False, pos=self._pos(meta))

    @v_args(meta=True)
    def int_type_inf(self, meta, items):
        return ast.InfIntTypeRef(pos=self._pos(meta))

    @v_args(meta=True)
    def bit_type(self, meta, items):
        return ast.BitTypeRef(items[2], False, pos=self._pos(meta))

    @v_args(meta=True)
    def int_type(self, meta, items):
        return ast.BitTypeRef(items[2], True, pos=self._pos(meta))

    @v_args(meta=True)
    def varbit_type(self, meta, items):
        return ast.VarbitTypeRef(items[2], pos=self._pos(meta))

    @v_args(meta=True)
    def width(self, meta, items):
        item = items[0]
        if isinstance(item, Token):
            if item.type == "INTEGER":
                return self._int_literal(item)
            return ast.Name(item.value, pos=self._pos(item))
        return item

    @v_args(meta=True)
    def type_name(self, meta, items):
        return ast.NamedTypeRef(str(items[-1]), pos=self._pos(meta))

    @v_args(meta=True)
    def specialized_type(self, meta, items):
        base = items[0]
        return ast.NamedTypeRef(base.name, items[2], pos=self._pos(meta))

    @v_args(meta=True)
    def stack_type(self, meta, items):
        return ast.StackTypeRef(items[0], items[1], pos=self._pos(meta))

    @v_args(meta=True)
    def tuple_type(self, meta, items):
        return ast.TupleTypeRef(items[2], pos=self._pos(meta))

    def type_args(self, items):
        return list(items)

    @v_args(meta=True)
    def type_arg(self, meta, items):
        it = items[0]
        if isinstance(it, Token):
            return ast.SimpleTypeRef("_" if it.type == "DONTCARE" else "void", pos=self._pos(it))
        return it

    @v_args(meta=True)
    def type_or_void(self, meta, items):
        it = items[0]
        if isinstance(it, Token):
            return ast.SimpleTypeRef("void", pos=self._pos(it))
        return it

    @v_args(meta=True)
    def void_type(self, meta, items):
        return ast.SimpleTypeRef("void", pos=self._pos(meta))

    def type_params(self, items):
        return [str(t) for t in items[1:-1]]

    # -- declarations
    @v_args(meta=True)
    def constant_decl(self, meta, items):
        annos, _kw, t, n, v = items
        return ast.ConstDecl(str(n), t, v, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def variable_decl(self, meta, items):
        annos, t, n, init = items
        return ast.VarDecl(str(n), t, init, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def instantiation(self, meta, items):
        annos, t, args, n = items
        return ast.Instantiation(str(n), t, args, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def instantiation_init(self, meta, items):
        annos, t, args, n, *members = items
        return ast.Instantiation(str(n), t, args, members, annotations=annos, pos=self._pos(meta))

    def param_list(self, items):
        return [p for p in items if p is not None]

    @v_args(meta=True)
    def param(self, meta, items):
        annos, direction, t, n, default = items
        return ast.Param(str(n), direction or "", t, default, annotations=annos, pos=self._pos(meta))

    def direction(self, items):
        return str(items[0])

    @v_args(meta=True)
    def extern_object(self, meta, items):
        annos, _kw, head, *methods = items
        tparams = []
        for a in head.args:
            if not isinstance(a, ast.NamedTypeRef) or a.args:
                self._fail(meta, f"extern {head.name}: type parameters must be plain names")
            tparams.append(a.name)
        return ast.ExternObject(head.name, tparams, methods, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def extern_function(self, meta, items):
        annos, _kw, proto = items
        proto.annotations = annos + proto.annotations
        return ast.ExternFunction(proto.name, proto, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def method(self, meta, items):
        annos, proto = items
        proto.annotations = annos
        return proto

    @v_args(meta=True)
    def abstract_method(self, meta, items):
        annos, _kw, proto = items
        proto.annotations = annos
        proto.abstract = True
        return proto

    @v_args(meta=True)
    def constructor(self, meta, items):
        annos, n, params = items
        return ast.FunctionProto(str(n), ast.SimpleTypeRef("void"), [], params, is_constructor=True,
                                 annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def function_proto(self, meta, items):
        ret, n, tparams, params = items
        return ast.FunctionProto(str(n), ret, tparams or [], params, pos=self._pos(meta))

    @v_args(meta=True)
    def function_decl(self, meta, items):
        annos, proto, body = items
        proto.annotations = annos
        return ast.FunctionDecl(proto.name, proto, body, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def action_decl(self, meta, items):
        annos, _kw, n, params, body = items
        return ast.ActionDecl(str(n), params, body, annotations=annos, pos=self._pos(meta))

    def _struct_like(self, meta, items, kind):
        annos, _kw, n, *fields = items
        return ast.StructLikeDecl(str(n), kind, fields, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def header_decl(self, meta, items):
        return self._struct_like(meta, items, "header")

    @v_args(meta=True)
    def header_union_decl(self, meta, items):
        return self._struct_like(meta, items, "header_union")

    @v_args(meta=True)
    def struct_decl(self, meta, items):
        return self._struct_like(meta, items, "struct")

    @v_args(meta=True)
    def struct_field(self, meta, items):
        annos, t, n = items
        return ast.FieldDecl(str(n), t, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def enum_decl(self, meta, items):
        annos, _kw, n, *members = items
        return ast.EnumDecl(str(n), [str(m) for m in members if m is not None],
                            annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def serializable_enum_decl(self, meta, items):
        annos, _kw, base, n, *members = items
        members = [m for m in members if m is not None]
        return ast.EnumDecl(str(n), [m[0] for m in members], base, [m[1] for m in members],
                            annotations=annos, pos=self._pos(meta))

    def enum_member(self, items):
        return (str(items[0]), items[1])

    @v_args(meta=True)
    def typedef_decl(self, meta, items):
        annos, _kw, t, n = items
        return ast.TypedefDecl(str(n), t, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def newtype_decl(self, meta, items):
        annos, _kw, t, n = items
        return ast.TypedefDecl(str(n), t, True, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def error_decl(self, meta, items):
        return ast.ErrorDecl("error", [str(m) for m in items[1:] if m is not None], pos=self._pos(meta))

    @v_args(meta=True)
    def match_kind_decl(self, meta, items):
        return ast.MatchKindDecl("match_kind", [str(m) for m in items[1:] if m is not None],
                                 pos=self._pos(meta))

    @v_args(meta=True)
    def package_type_decl(self, meta, items):
        return self._block_type("package", meta, items)

    # -- parsers
    def _block_type(self, kind: str, meta, items) -> ast.BlockTypeDecl:
        annos, _kw, n, tparams, params = items
        return ast.BlockTypeDecl(str(n), kind, tparams or [], params, annotations=annos,
                                 pos=self._pos(meta))

    @v_args(meta=True)
    def parser_type(self, meta, items):
        return self._block_type("parser", meta, items)

    def parser_type_decl(self, items):
        return items[0]

    @v_args(meta=True)
    def parser_decl(self, meta, items):
        head, ctor, *rest = items
        local_decls = [r for r in rest if not isinstance(r, ast.ParserState)]
        states = [r for r in rest if isinstance(r, ast.ParserState)]
        return ast.ParserDecl(head.name, head.type_params, head.params, ctor or [], local_decls,
                              states, annotations=head.annotations, pos=head.pos)

    @v_args(meta=True)
    def value_set_decl(self, meta, items):
        annos, _kw, _lt, targs, _gt, size, n = items
        elem = targs[0] if len(targs) == 1 else ast.TupleTypeRef(targs)
        return ast.ValueSetDecl(str(n), elem, size, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def parser_state(self, meta, items):
        annos, _kw, n, *rest = items
        trans = rest[-1] if rest and isinstance(rest[-1], ast.Transition) else None
        stmts = [r for r in rest if r is not None and not isinstance(r, ast.Transition)]
        return ast.ParserState(str(n), stmts, trans, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def transition_direct(self, meta, items):
        return ast.Transition(str(items[1]), pos=self._pos(meta))

    @v_args(meta=True)
    def transition_select(self, meta, items):
        exprs, cases = items[1]
        return ast.Transition(None, exprs, cases, pos=self._pos(meta))

    def select_expr(self, items):
        _kw, exprs, *cases = items
        return (exprs, cases)

    @v_args(meta=True)
    def select_case(self, meta, items):
        return ast.SelectCase(items[0], str(items[1]), pos=self._pos(meta))

    def keyset(self, items):
        return items[0]

    @v_args(meta=True)
    def simple_keyset(self, meta, items):
        it = items[0]
        if isinstance(it, ast.Keyset):
            return it
        if isinstance(it, ast.DontCare):
            return ast.KsDefault(pos=it.pos)
        if isinstance(it, ast.DefaultExpr):
            return ast.KsDefault(pos=it.pos)
        return ast.KsExpr(it, pos=self._pos(meta))

    @v_args(meta=True)
    def ks_mask(self, meta, items):
        return ast.KsMask(items[0], items[2], pos=self._pos(meta))

    @v_args(meta=True)
    def ks_range(self, meta, items):
        return ast.KsRange(items[0], items[2], pos=self._pos(meta))

    @v_args(meta=True)
    def ks_default(self, meta, items):
        return ast.KsDefault(pos=self._pos(meta))

    ks_dontcare = ks_default

    @v_args(meta=True)
    def tuple_keyset(self, meta, items):
        return ast.KsTuple(list(items), pos=self._pos(meta))

    # -- controls
    @v_args(meta=True)
    def control_type(self, meta, items):
        return self._block_type("control", meta, items)

    def control_type_decl(self, items):
        return items[0]

    @v_args(meta=True)
    def control_decl(self, meta, items):
        head, ctor, *rest = items
        body = rest[-1]
        local_decls = [r for r in rest[:-2]]
        return ast.ControlDecl(head.name, head.type_params, head.params, ctor or [], local_decls,
                               body, annotations=head.annotations, pos=head.pos)

    @v_args(meta=True)
    def table_decl(self, meta, items):
        annos, _kw, n, *props = items
        return ast.TableDecl(str(n), props, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def table_key(self, meta, items):
        annos, _kw, *elems = items
        return ast.TableProperty("key", elems, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def table_actions(self, meta, items):
        annos, _kw, *refs = items
        return ast.TableProperty("actions", refs, annotations=annos, pos=self._pos(meta))

    @v_args(meta=True)
    def table_entries(self, meta, items):
        annos, const, _kw, *entries = items
        return ast.TableProperty("entries", entries, const is not None, annotations=annos,
                                 pos=self._pos(meta))

    @v_args(meta=True)
    def table_custom(self, meta, items):
        annos, const, n, value = items
        return ast.TableProperty(str(n), value, const is not None, annotations=annos,
                                 pos=self._pos(meta))

    @v_args(meta=True)
    def key_element(self, meta, items):
        e, mk, annos = items
        return ast.KeyElement(e, str(mk), annos, pos=self._pos(meta))

    @v_args(meta=True)
    def action_ref(self, meta, items):
        annos, n, args = items
        return ast.ActionRefNode(str(n), args, annos, pos=self._pos(meta))

    @v_args(meta=True)
    def table_entry(self, meta, items):
        annos, const, _prio_kw, prio, keyset, action, annos2 = items
        return ast.EntryNode(keyset, action, prio, const is not None, annos + annos2,
                             pos=self._pos(meta))
