"""P4_16 source → syntax tree.

Steps: run the system C preprocessor (as p4c does) keeping line markers so every token maps
back to its file and line; cut annotation bodies out of the text (they are free-form token
lists); pre-scan for declared type names; lex and parse with an LALR(1) Lark grammar whose
post-lexer does p4c's type-name lexer feedback; transform the parse tree into ``ast`` nodes.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..errors import CompileError
from . import ast
# Re-exported: the preprocessing passes were part of this module; their old import path works.
from .preprocess import (INCLUDE_DIR, SourceText, cut_annotation_bodies, preprocess,  # noqa: F401
                         scan_type_names)

_GRAMMAR = Path(__file__).resolve().parent / "p4.lark"


# ---------------------------------------------------------------------- lexer feedback
_TYPE_START = {"KW_BIT", "KW_INT", "KW_VARBIT", "KW_BOOL", "KW_ERROR", "KW_STRING", "KW_VOID",
               "KW_TUPLE", "TYPE_IDENTIFIER", "DONTCARE"}


class _PostLex:
    """Retypes tokens using type-name knowledge; see p4.lark's header comment."""

    always_accept = ("IDENTIFIER",)

    def __init__(self) -> None:
        self.type_names: set[str] = set()

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        type_names = self.type_names
        depth_stack: list[int] = []      # bracket depth of open type-argument lists
        depth = 0
        pending: Token | None = None
        prev_type: str | None = None

        def fix(tok: Token) -> Token:
            if tok.type == "IDENTIFIER" and tok.value in type_names:
                tok.type = "TYPE_IDENTIFIER"
            return tok

        it = iter(stream)
        for tok in it:
            tok = fix(tok)
            if pending is not None:
                # pending is a '<' waiting to see what follows it
                if tok.type in _TYPE_START or (tok.type == "IDENTIFIER" and False):
                    pending.type = "LT_TYPE"
                    depth_stack.append(depth)
                elif prev_before_lt in ("KW_BIT", "KW_INT", "KW_VARBIT"):
                    depth_stack.append(depth)
                yield pending
                pending = None
            if tok.type == "LT":
                prev_before_lt = prev_type
                pending = tok
                prev_type = tok.type
                continue
            if tok.type in ("LPAREN", "LSQB", "LBRACE"):
                depth += 1
            elif tok.type in ("RPAREN", "RSQB", "RBRACE"):
                depth -= 1
            elif tok.type == "GT":
                if depth_stack and depth_stack[-1] == depth:
                    depth_stack.pop()
                else:
                    # outside type brackets: '>' '>' with nothing between is a right shift
                    nxt = next(it, None)
                    if nxt is not None and nxt.type == "GT" and nxt.start_pos == tok.end_pos:
                        tok = Token.new_borrow_pos("SHR", ">>", tok)
                        tok.end_pos = nxt.end_pos
                        prev_type = "SHR"
                        yield tok
                        continue
                    prev_type = tok.type
                    yield tok
                    if nxt is None:
                        continue
                    tok = fix(nxt)
                    if tok.type == "LT":
                        prev_before_lt = prev_type
                        pending = tok
                        prev_type = tok.type
                        continue
                    if tok.type in ("LPAREN", "LSQB", "LBRACE"):
                        depth += 1
                    elif tok.type in ("RPAREN", "RSQB", "RBRACE"):
                        depth -= 1
                    elif tok.type == "GT" and depth_stack and depth_stack[-1] == depth:
                        depth_stack.pop()
            prev_type = tok.type
            yield tok
        if pending is not None:
            yield pending


@lru_cache(maxsize=1)
def _lark() -> tuple[Lark, _PostLex]:
    post = _PostLex()
    parser = Lark(_GRAMMAR.read_text(), parser="lalr", lexer="basic", postlex=post,
                  propagate_positions=True, maybe_placeholders=True, cache=True)
    return parser, post


# ---------------------------------------------------------------------- tree → AST
_EXPECT_NAMES = {
    "SEMICOLON": "';'", "LPAREN": "'('", "RPAREN": "')'", "LBRACE": "'{'", "RBRACE": "'}'",
    "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "EQUAL": "'='", "COLON": "':'", "DOT": "'.'",
    "IDENTIFIER": "identifier", "TYPE_IDENTIFIER": "type name", "INTEGER": "integer",
    "LT": "'<'", "GT": "'>'", "LT_TYPE": "'<'",
}


def _describe_expected(expected: set[str]) -> str:
    names = []
    for e in sorted(expected):
        if e.startswith("KW_"):
            names.append(f"'{e[3:].lower()}'")
        elif e in _EXPECT_NAMES:
            names.append(_EXPECT_NAMES[e])
        elif e.startswith("__ANON") or e.startswith("$"):
            continue
        else:
            names.append(e.lower())
    names = sorted(set(names))
    if len(names) > 8:
        names = names[:8] + ["..."]
    return ", ".join(names)


class _Builder(Transformer):
    """Lark tree → ``ast`` nodes. Positions come from the preprocessed-line map."""

    def __init__(self, src: SourceText, bodies: dict[int, str]) -> None:
        super().__init__(visit_tokens=True)
        self.src = src
        self.bodies = bodies

    # -- helpers
    def _pos(self, meta_or_tok) -> ast.Pos:
        line = getattr(meta_or_tok, "line", None)
        col = getattr(meta_or_tok, "column", None)
        if line is None:
            return ast.NOPOS
        return self.src.origin(line, col)

    def _fail(self, where, msg: str):
        p = self._pos(where)
        raise CompileError(msg, p.file, p.line, p.col)

    # -- tokens
    def ANNOTATION(self, tok: Token) -> ast.Annotation:
        return ast.Annotation(tok.value[1:], self.bodies.get(tok.start_pos, ""), self._pos(tok))

    # -- names
    def name(self, items):
        return items[0]

    nontype_name = name

    def annotations(self, items):
        return list(items)

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

    # -- statements
    @v_args(meta=True)
    def block(self, meta, items):
        return ast.Block(list(items), pos=self._pos(meta))

    @v_args(meta=True)
    def assign(self, meta, items):
        return ast.Assign(items[0], items[1], pos=self._pos(meta))

    @v_args(meta=True)
    def compound_assign(self, meta, items):
        target, op, value = items
        return ast.Assign(target, value, op=str(op)[:-1], pos=self._pos(meta))

    @v_args(meta=True)
    def call_stmt(self, meta, items):
        p = self._pos(meta)
        return ast.CallStmt(ast.Call(items[0], items[1], pos=p), pos=p)

    @v_args(meta=True)
    def direct_apply_stmt(self, meta, items):
        # items: annotations, type name, 'apply', arguments (annotations as variable_decl's,
        # so that the LALR parser need not choose before the type name)
        return ast.DirectApply(items[1], items[3], pos=self._pos(meta))

    @v_args(meta=True)
    def generic_call_stmt(self, meta, items):
        p = self._pos(meta)
        return ast.CallStmt(ast.Call(items[0], items[4], items[2], pos=p), pos=p)

    @v_args(meta=True)
    def if_stmt(self, meta, items):
        return ast.If(items[1], items[2], None, pos=self._pos(meta))

    @v_args(meta=True)
    def if_else_stmt(self, meta, items):
        return ast.If(items[1], items[2], items[4], pos=self._pos(meta))

    def block_stmt(self, items):
        return items[-1]  # block annotations (@atomic ...) do not change the semantics here

    @v_args(meta=True)
    def exit_stmt(self, meta, items):
        return ast.Exit(pos=self._pos(meta))

    @v_args(meta=True)
    def return_stmt(self, meta, items):
        return ast.Return(items[1], pos=self._pos(meta))

    @v_args(meta=True)
    def switch_stmt(self, meta, items):
        return ast.Switch(items[1], list(items[2:]), pos=self._pos(meta))

    @v_args(meta=True)
    def switch_case(self, meta, items):
        return ast.SwitchCase(items[0], items[1], pos=self._pos(meta))

    def switch_label(self, items):
        it = items[0]
        if isinstance(it, Token) or isinstance(it, ast.DefaultExpr):
            return None
        return it

    @v_args(meta=True)
    def empty_stmt(self, meta, items):
        return ast.Empty(pos=self._pos(meta))

    # -- expressions
    @v_args(meta=True)
    def cond(self, meta, items):
        return ast.Conditional(items[0], items[1], items[2], pos=self._pos(meta))

    @v_args(meta=True)
    def binop(self, meta, items):
        left, op, right = items
        return ast.BinOp(str(op), left, right, pos=self._pos(op))

    @v_args(meta=True)
    def not_op(self, meta, items):
        return ast.UnaryOp("!", items[0], pos=self._pos(meta))

    @v_args(meta=True)
    def compl_op(self, meta, items):
        return ast.UnaryOp("~", items[0], pos=self._pos(meta))

    @v_args(meta=True)
    def neg_op(self, meta, items):
        return ast.UnaryOp("-", items[1], pos=self._pos(meta))

    @v_args(meta=True)
    def pos_op(self, meta, items):
        return ast.UnaryOp("+", items[1], pos=self._pos(meta))

    @v_args(meta=True)
    def cast(self, meta, items):
        return ast.Cast(items[0], items[1], pos=self._pos(meta))

    @v_args(meta=True)
    def member(self, meta, items):
        return ast.Member(items[0], str(items[1]), pos=self._pos(meta))

    @v_args(meta=True)
    def index(self, meta, items):
        return ast.Index(items[0], items[1], pos=self._pos(meta))

    @v_args(meta=True)
    def slice(self, meta, items):
        return ast.Slice(items[0], items[1], items[2], pos=self._pos(meta))

    lv_member, lv_index, lv_slice = member, index, slice

    @v_args(meta=True)
    def call(self, meta, items):
        return ast.Call(items[0], items[1], pos=self._pos(meta))

    @v_args(meta=True)
    def generic_call(self, meta, items):
        return ast.Call(items[0], items[4], items[2], pos=self._pos(meta))

    def _int_literal(self, tok: Token) -> ast.IntLit:
        text = tok.value.replace("_", "")
        width = None
        signed = False
        m = re.match(r"^([0-9]+)([ws])(.*)$", text)
        if m:
            width = int(m.group(1))
            signed = m.group(2) == "s"
            text = m.group(3)
        try:
            low = text.lower()
            if low.startswith("0x"):
                value = int(low[2:], 16)
            elif low.startswith("0b"):
                value = int(low[2:], 2)
            elif low.startswith("0o"):
                value = int(low[2:], 8)
            elif low.startswith("0d"):
                value = int(low[2:], 10)
            else:
                value = int(low, 10)
        except ValueError:
            self._fail(tok, f"malformed integer literal '{tok.value}'")
        if width is not None:
            if width == 0 and value != 0:
                self._fail(tok, f"integer literal '{tok.value}' does not fit in 0 bits")
            limit = 1 << (width - 1 if signed else width) if width else 1
            if value >= limit:
                self._fail(tok, f"integer literal '{tok.value}' does not fit in {width} bits")
        return ast.IntLit(value, width, signed, pos=self._pos(tok))

    def int_lit(self, items):
        return self._int_literal(items[0])

    @v_args(meta=True)
    def true_lit(self, meta, items):
        return ast.BoolLit(True, pos=self._pos(meta))

    @v_args(meta=True)
    def false_lit(self, meta, items):
        return ast.BoolLit(False, pos=self._pos(meta))

    @v_args(meta=True)
    def string_lit(self, meta, items):
        return ast.StringLit(items[0].value[1:-1], pos=self._pos(meta))

    @v_args(meta=True)
    def name_ref(self, meta, items):
        return ast.Name(str(items[0]), pos=self._pos(meta))

    @v_args(meta=True)
    def top_name_ref(self, meta, items):
        return ast.Name(str(items[0]), True, pos=self._pos(meta))

    @v_args(meta=True)
    def this_ref(self, meta, items):
        return ast.This(pos=self._pos(meta))

    # lvalues build the same nodes as expressions
    lv_name, lv_top, lv_this = name_ref, top_name_ref, this_ref

    @v_args(meta=True)
    def list_expr(self, meta, items):
        return ast.ListExpr(items[0] or [], pos=self._pos(meta))

    @v_args(meta=True)
    def struct_expr(self, meta, items):
        return ast.StructExpr([kv for kv in items if kv is not None], pos=self._pos(meta))

    def kv_pair(self, items):
        return (str(items[0]), items[1])

    @v_args(meta=True)
    def type_member(self, meta, items):
        return ast.TypeMember(items[0], str(items[1]), pos=self._pos(meta))

    @v_args(meta=True)
    def error_member(self, meta, items):
        return ast.TypeMember(ast.SimpleTypeRef("error"), str(items[1]), pos=self._pos(meta))

    @v_args(meta=True)
    def type_call(self, meta, items):
        return ast.ConstructorCall(items[0], items[1], pos=self._pos(meta))

    @v_args(meta=True)
    def dontcare(self, meta, items):
        return ast.DontCare(pos=self._pos(meta))

    @v_args(meta=True)
    def default_expr(self, meta, items):
        return ast.DefaultExpr(pos=self._pos(meta))

    def expr_list(self, items):
        return list(items)

    def arg_list(self, items):
        return [a for a in items if a is not None]

    @v_args(meta=True)
    def argument(self, meta, items):
        return ast.Argument(items[0], pos=self._pos(meta))

    @v_args(meta=True)
    def named_arg(self, meta, items):
        return ast.Argument(items[1], str(items[0]), pos=self._pos(meta))

    @v_args(meta=True)
    def dontcare_arg(self, meta, items):
        p = self._pos(meta)
        return ast.Argument(ast.DontCare(pos=p), pos=p)

    @v_args(meta=True)
    def named_dontcare_arg(self, meta, items):
        p = self._pos(meta)
        return ast.Argument(ast.DontCare(pos=p), str(items[0]), pos=p)

    def start(self, items):
        return [d for d in items if isinstance(d, ast.Decl)]


_UNSUPPORTED_SYNTAX = [
    (re.compile(r"\bfor\s*\("), "for loops (P4_16 v1.2.4) are not supported by p4sim"),
]


def parse_text(src: SourceText) -> ast.Program:
    text, bodies = cut_annotation_bodies(src.text)
    for pattern, message in _UNSUPPORTED_SYNTAX:
        m = pattern.search(text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            p = src.origin(line, col)
            raise CompileError(message, p.file, p.line, p.col)
    parser, post = _lark()
    post.type_names = scan_type_names(text)
    try:
        tree = parser.parse(text)
    except UnexpectedCharacters as e:
        p = src.origin(e.line, e.column)
        raise CompileError(f"syntax error: unexpected character {text[e.pos_in_stream]!r}",
                           p.file, p.line, p.col) from None
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            p = src.origin(len(src.line_map), 0)
            raise CompileError("syntax error: unexpected end of input", p.file, p.line) from None
        p = src.origin(tok.line, tok.column)
        if tok.value == "." and re.match(r"\.\s*apply\s*\(", text[tok.start_pos:]):
            raise CompileError("direct type application (Type.apply(...)) is not supported; "
                               "instantiate the control and apply the instance", p.file, p.line, p.col) from None
        exp = _describe_expected(set(e.expected))
        raise CompileError(f"syntax error: unexpected '{tok.value}'" + (f"; expected {exp}" if exp else ""),
                           p.file, p.line, p.col) from None
    except UnexpectedEOF:
        p = src.origin(len(src.line_map), 0)
        raise CompileError("syntax error: unexpected end of input", p.file, p.line) from None
    except UnexpectedInput as e:  # pragma: no cover - other lark input errors
        p = src.origin(getattr(e, "line", 0), getattr(e, "column", 0))
        raise CompileError(f"syntax error: {e}", p.file, p.line, p.col) from None
    decls = _Builder(src, bodies).transform(tree)
    return ast.Program(decls, _source_files(src))


def _source_files(src: SourceText) -> list[str]:
    """The files read, in order of appearance with the main program last (errors about the
    whole program, such as a missing ``main``, name it). cpp's pseudo-files ``<built-in>`` and
    ``<command-line>`` are left out: no user could open them."""
    files = [f for f in dict.fromkeys(f for f, _ in src.line_map) if not f.startswith("<")]
    if files:
        files.append(files.pop(0))  # cpp's first line marker names the main file
    return files


def parse_file(path: str, include_dirs: list[str] | tuple[str, ...] = (),
               defines: dict[str, str] | None = None) -> ast.Program:
    return parse_text(preprocess(path, include_dirs, defines))
