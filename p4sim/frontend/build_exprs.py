"""Lark tree → ``ast`` nodes, part two: statements and expressions (literals, names,
operators, calls, arguments).

A mixin of :class:`p4sim.frontend.parser._Builder`, which supplies the position and error
helpers (``_pos``, ``_fail``).
"""
from __future__ import annotations

import re

from lark import Token, v_args

from . import ast


class _ExprBuilder:
    """Statements and expressions of the tree → ``ast`` transformer."""

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
