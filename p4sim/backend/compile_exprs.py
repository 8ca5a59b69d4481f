"""Compiler methods for expressions: typing, coercion, members, operators and casts.
Mixed into :class:`p4sim.backend.compiler.Compiler`.
"""
from __future__ import annotations

from typing import Any

from ..frontend import ast
from ..frontend.types import (BitT, BoolT, DontCareT, EnumT, ErrorT, InfIntT, P4Type, same_type,
                              StackT, StringT, StructT, TupleT, TypeVar, VoidT)
from .codewriter import CodeWriter
from .context import BodyCtx, contains_call, _err


class Expressions:
    """Expressions (a mixin of Compiler; state set up there)."""

    # ======================================================================== expressions
    def type_of(self, e: ast.Expr, ctx: BodyCtx) -> tuple[str, P4Type]:
        """Type of an expression without emitting code (compiles into a scratch writer)."""
        scratch = BodyCtx(CodeWriter(), ctx.scope, ctx.kind, ctx.prefix, ctx.ret,
                          in_parser=ctx.in_parser, packet_py=ctx.packet_py)
        saved = self._fresh
        try:
            return self.compile_expr(e, scratch)
        finally:
            self._fresh = saved

    def expr_as(self, e: ast.Expr, t: P4Type, ctx: BodyCtx) -> str:
        """Compile ``e`` and convert it implicitly to ``t`` (int literals, list → struct/header)."""
        if isinstance(e, (ast.ListExpr, ast.StructExpr)) and isinstance(t, (StructT, TupleT)):
            return self._compile_initializer(e, t, ctx)
        code, et = self.compile_expr(e, ctx, expected=t)
        return self.coerce(code, et, t, e)

    def coerce(self, code: str, et: P4Type, t: P4Type, node: Any) -> str:
        if isinstance(t, (TypeVar, DontCareT)):
            return code
        if isinstance(t, BitT):
            if isinstance(et, InfIntT):
                return self._const_fit(code, t)
            if isinstance(et, BitT) and et == t:
                return code
            if isinstance(et, EnumT) and et.underlying == t:
                raise _err(node, f"cannot use enum {et} as {t} without a cast")
        elif isinstance(t, InfIntT):
            if isinstance(et, (InfIntT, BitT)):
                return code
        elif same_type(t, et):
            return code
        elif isinstance(t, EnumT) and isinstance(et, EnumT) and t is et:
            return code
        elif isinstance(t, ErrorT) and isinstance(et, ErrorT):
            return code
        elif isinstance(t, StructT) and isinstance(et, StructT) and t.name == et.name:
            return code
        raise _err(node, f"type mismatch: expected {t}, got {et}")

    def _const_fit(self, code: str, t: BitT) -> str:
        try:
            v = int(code, 0)
        except ValueError:
            return self._wrap_code(code, t)
        return str(self._wrap(v, t))

    def _wrap_code(self, code: str, t: BitT) -> str:
        if t.signed:
            half = 1 << (t.width - 1)
            return f"((({code}) + {half} & {t.mask}) - {half})"
        return f"(({code}) & {t.mask})"

    def _compile_initializer(self, e: ast.Expr, t: P4Type, ctx: BodyCtx) -> str:
        if isinstance(t, TupleT):
            if not isinstance(e, ast.ListExpr) or len(e.items) != len(t.elements):
                raise _err(e, f"initializer does not match {t}")
            return "(" + "".join(self.expr_as(i, et, ctx) + ", " for i, et in zip(e.items, t.elements)) + ")"
        assert isinstance(t, StructT)
        if isinstance(e, ast.ListExpr):
            if len(e.items) != len(t.fields):
                raise _err(e, f"{t.name} has {len(t.fields)} fields, initializer has {len(e.items)}")
            pairs = list(zip([n for n, _ in t.fields], e.items))
        else:
            assert isinstance(e, ast.StructExpr)
            names = [n for n, _ in t.fields]
            given = [n for n, _ in e.fields]
            if sorted(given) != sorted(names):
                raise _err(e, f"initializer for {t.name} must set exactly the fields {', '.join(names)}")
            pairs = list(e.fields)
        tmp = self.fresh("init")
        ctx.w.line(f"{tmp} = {t.py_class}()")
        for n, ie in pairs:
            ft = t.field_type(n)
            ctx.w.line(f"{tmp}.{n} = {self.copy_if_compound(self.expr_as(ie, ft, ctx), ft)}")
        if t.is_header:
            ctx.w.line(f"{tmp}._v = True")
        return tmp

    def compile_expr(self, e: ast.Expr, ctx: BodyCtx, lvalue: bool = False,
                     expected: P4Type | None = None) -> tuple[str, P4Type]:
        if isinstance(e, ast.IntLit):
            if e.width is not None:
                t = BitT(e.width, e.signed)
                return str(self._wrap(e.value, t)), t
            return str(e.value), InfIntT()
        if isinstance(e, ast.BoolLit):
            return ("True" if e.value else "False"), BoolT()
        if isinstance(e, ast.StringLit):
            return repr(e.value), StringT()
        if isinstance(e, ast.Name):
            b = (self.globals if e.top_level else ctx.scope).lookup(e.name)
            if b is None:
                raise _err(e, f"unknown name '{e.name}'")
            if b.kind in ("value", "const"):
                if b.kind == "const" and isinstance(b.value, tuple):
                    return repr(b.value), b.type
                return b.py, b.type
            if b.kind == "match_kind":
                return repr(b.value), self.match_kind_type
            if b.kind == "table":
                return b.py, b.type
            if b.kind in ("extern", "instance", "packet_in", "packet_out"):
                return b.py, b.type
            raise _err(e, f"'{e.name}' is not a value")
        if isinstance(e, ast.TypeMember):
            v, t = self._const(e, ctx.scope)
            return str(v), t
        if isinstance(e, ast.Member):
            return self._compile_member(e, ctx, lvalue)
        if isinstance(e, ast.Index):
            base, bt = self.compile_expr(e.expr, ctx, lvalue)
            if not isinstance(bt, StackT):
                raise _err(e, f"a value of type {bt} cannot be indexed")
            ok, idx, _ = self.try_const(e.index, ctx.scope)
            if ok:
                if not isinstance(idx, int) or not 0 <= idx < bt.size:
                    raise _err(e, f"index {idx} out of range for {bt}")
                return f"{base}.items[{idx}]", bt.element
            return f"stack_get({base}, {self._stack_index(e.index, ctx)})", bt.element
        if isinstance(e, ast.Slice):
            base, bt = self.compile_expr(e.expr, ctx)
            if not isinstance(bt, BitT):
                raise _err(e, f"a value of type {bt} cannot be sliced")
            hi = self.const_eval(e.high, ctx.scope)
            lo = self.const_eval(e.low, ctx.scope)
            self._check_slice(e, bt, hi, lo)
            width = hi - lo + 1
            code = f"(({base} >> {lo}) & {(1 << width) - 1})" if lo else f"({base} & {(1 << width) - 1})"
            return code, BitT(width)
        if isinstance(e, ast.Call):
            code, t = self.compile_call(e, ctx, statement=False)
            if isinstance(t, VoidT):
                raise _err(e, "call returns no value")
            return code, t
        if isinstance(e, ast.BinOp):
            return self._compile_binop(e, ctx)
        if isinstance(e, ast.UnaryOp):
            return self._compile_unary(e, ctx)
        if isinstance(e, ast.Cast):
            return self._compile_cast(e, ctx)
        if isinstance(e, ast.Conditional):
            cond = self.expr_as(e.cond, BoolT(), ctx)
            (a, ta), then_lines = self._compile_lazy(lambda: self.compile_expr(e.then, ctx), ctx)
            (b, tb), else_lines = self._compile_lazy(lambda: self.compile_expr(e.otherwise, ctx), ctx)
            t = self._unify(ta, tb, e)
            a = self.coerce(a, ta, t, e.then)
            b = self.coerce(b, tb, t, e.otherwise)
            if not then_lines and not else_lines:
                return f"({a} if {cond} else {b})", t
            # an operand with statements (table apply, call with out arguments): only the
            # chosen one is evaluated
            tmp = self.fresh("c")
            ctx.w.line(f"if {cond}:")
            with ctx.w.indent():
                ctx.w.lines.extend(then_lines)
                ctx.w.line(f"{tmp} = {a}")
            ctx.w.line("else:")
            with ctx.w.indent():
                ctx.w.lines.extend(else_lines)
                ctx.w.line(f"{tmp} = {b}")
            return tmp, t
        if isinstance(e, ast.ListExpr):
            if isinstance(expected, (StructT, TupleT)):
                return self._compile_initializer(e, expected, ctx), expected
            items = [self.compile_expr(i, ctx) for i in e.items]
            return "(" + "".join(c + ", " for c, _ in items) + ")", TupleT([t for _, t in items])
        if isinstance(e, ast.StructExpr):
            if isinstance(expected, StructT):
                return self._compile_initializer(e, expected, ctx), expected
            raise _err(e, "a structure initializer needs a known target type here")
        if isinstance(e, ast.This):
            raise _err(e, "`this` is only supported inside RegisterAction bodies")
        if isinstance(e, ast.DontCare):
            return "0", DontCareT()
        if isinstance(e, ast.ConstructorCall):
            raise _err(e, "constructor calls are only allowed in instantiations")
        raise _err(e, f"unsupported expression {type(e).__name__}")

    def _compile_member(self, e: ast.Member, ctx: BodyCtx, lvalue: bool) -> tuple[str, P4Type]:
        # table apply results: t.apply().hit / .miss / .action_run
        if isinstance(e.expr, ast.Call) and isinstance(e.expr.func, ast.Member) and e.expr.func.member == "apply":
            bb = self._binding_of(e.expr.func.expr, ctx)
            if bb is not None and bb.kind == "table":
                if e.member in ("hit", "miss"):
                    trec, idx = self.compile_table_apply(e.expr.func.expr, ctx)
                    hit = ctx.scope.lookup(f"$hit:{idx}").py
                    return (hit if e.member == "hit" else f"(not {hit})"), BoolT()
                if e.member == "action_run":
                    raise _err(e, "action_run can only be used in a switch statement")
                raise _err(e, f"table apply result has no member '{e.member}'")
        # enum / error members written as Name.member where Name is a type
        if isinstance(e.expr, ast.Name):
            b = ctx.scope.lookup(e.expr.name)
            if b is not None and b.kind == "type":
                v, t = self._const(ast.TypeMember(ast.NamedTypeRef(e.expr.name, pos=e.pos), e.member, pos=e.pos), ctx.scope)
                return str(v), t
        base, bt = self.compile_expr(e.expr, ctx, lvalue)
        if isinstance(bt, StructT):
            ft = bt.field_type(e.member)
            if ft is None:
                raise _err(e, f"{bt.kind} {bt.name} has no field '{e.member}'")
            return f"{base}.{e.member}", ft
        if isinstance(bt, StackT):
            m = e.member
            if m == "next":
                return f"stack_get({base}, {base}.nxt)", bt.element
            if m == "last":
                return f"stack_get({base}, {base}.nxt - 1)", bt.element
            if m == "size":
                return str(bt.size), BitT(32)
            if m == "lastIndex":
                return f"(({base}.nxt - 1) & 0xffffffff)", BitT(32)
            if m == "nextIndex":
                return f"{base}.nxt", BitT(32)
            raise _err(e, f"header stack has no member '{m}'")
        raise _err(e, f"a value of type {bt} has no member '{e.member}'")

    def _compile_lazy(self, compile_fn: Any, ctx: BodyCtx) -> tuple[Any, list[str]]:
        """Compile an operand that P4 evaluates only conditionally (right of && / ||, arms of
        ?:). Returns compile_fn's result and the statements the operand needs (a table apply,
        a call with out arguments), indented one level deeper than the current code."""
        saved = ctx.w
        sub = CodeWriter()
        sub.level = saved.level + 1
        ctx.w = sub
        try:
            result = compile_fn()
        finally:
            ctx.w = saved
        return result, sub.lines

    def _unify(self, ta: P4Type, tb: P4Type, node: Any) -> P4Type:
        if isinstance(ta, InfIntT):
            return tb
        if isinstance(tb, InfIntT):
            return ta
        if same_type(ta, tb) or (isinstance(ta, StructT) and ta is tb) or (isinstance(ta, EnumT) and ta is tb) \
                or (isinstance(ta, ErrorT) and isinstance(tb, ErrorT)):
            return ta
        raise _err(node, f"type mismatch: {ta} and {tb}")

    def _compile_binop(self, e: ast.BinOp, ctx: BodyCtx) -> tuple[str, P4Type]:
        op = e.op
        ok, v, t = self.try_const(e, ctx.scope)
        if ok and not isinstance(t, TupleT):
            return (repr(v) if not isinstance(v, bool) else str(v)), t
        if op in ("&&", "||"):
            a = self.expr_as(e.left, BoolT(), ctx)
            b, lines = self._compile_lazy(lambda: self.expr_as(e.right, BoolT(), ctx), ctx)
            if not lines:
                return f"({a} {'and' if op == '&&' else 'or'} {b})", BoolT()
            # the right operand needs statements: run them only when it is evaluated
            tmp = self.fresh("sc")
            ctx.w.line(f"{tmp} = {a}")
            ctx.w.line(f"if {'' if op == '&&' else 'not '}{tmp}:")
            with ctx.w.indent():
                ctx.w.lines.extend(lines)
                ctx.w.line(f"{tmp} = {b}")
            return tmp, BoolT()
        inits = (ast.ListExpr, ast.StructExpr)
        if op in ("==", "!=") and isinstance(e.left, inits) != isinstance(e.right, inits):
            # `hdr.h == {1, 2}`: the initializer takes the type of the other side
            known, init = (e.right, e.left) if isinstance(e.left, inits) else (e.left, e.right)
            kc, kt = self.compile_expr(known, ctx)
            ic, it = self.expr_as(init, kt, ctx), kt
            (a, ta), (b, tb) = ((kc, kt), (ic, it)) if known is e.left else ((ic, it), (kc, kt))
        else:
            a, ta = self.compile_expr(e.left, ctx)
            if contains_call(e.right) and not self.try_const(e.left, ctx.scope)[0]:
                # P4 evaluates left to right: the left operand's value is taken before a call
                # on the right (inlined as statements before this expression) can change it
                tmp = self.fresh("lhs")
                ctx.w.line(f"{tmp} = {self.copy_if_compound(a, ta)}")
                a = tmp
            b, tb = self.compile_expr(e.right, ctx)
        if op in ("<<", ">>"):
            if not isinstance(ta, BitT):
                raise _err(e, f"left operand of {op} must have a fixed width (got {ta}); cast it")
            if isinstance(tb, BitT) and tb.signed:
                raise _err(e, f"shift amount must be unsigned")
            if not isinstance(tb, (BitT, InfIntT)):
                raise _err(e, f"shift amount must be an integer")
            if op == "<<":
                return self._wrap_code(f"{a} << {b}", ta), ta
            if ta.signed:
                return f"({a} >> {b})", ta
            return f"({a} >> {b})", ta
        if op in ("==", "!="):
            t = self._unify(ta, tb, e)
            if isinstance(t, (StructT, StackT)):
                return f"({'' if op == '==' else 'not '}{a}.p4_eq({b}))", BoolT()
            if isinstance(t, TupleT) and any(isinstance(x, (StructT, StackT)) for x in t.elements):
                raise _err(e, f"comparing values of type {t} is not supported")
            a = self.coerce(a, ta, t, e.left)
            b = self.coerce(b, tb, t, e.right)
            return f"({a} {op} {b})", BoolT()
        if op == "++":
            if not isinstance(ta, BitT) or not isinstance(tb, BitT):
                raise _err(e, f"++ needs operands of fixed width (got {ta} and {tb})")
            bb = f"({b} & {tb.mask})" if tb.signed else b
            aa = f"({a} & {ta.mask})" if ta.signed else a
            rt = BitT(ta.width + tb.width, ta.signed)
            code = f"(({aa} << {tb.width}) | {bb})"
            return (self._wrap_code(code, rt) if rt.signed else code), rt
        t = self._unify(ta, tb, e)
        if isinstance(t, InfIntT):
            raise _err(e, f"operands of {op} need a fixed width; cast one of them")
        if not isinstance(t, BitT):
            if op in ("<", ">", "<=", ">=") and isinstance(t, (BitT,)):
                pass
            raise _err(e, f"operator {op} is not defined on {t}")
        a = self.coerce(a, ta, t, e.left)
        b = self.coerce(b, tb, t, e.right)
        if op in ("<", ">", "<=", ">="):
            return f"({a} {op} {b})", BoolT()
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})", t
        if op in ("+", "-", "*"):
            return self._wrap_code(f"{a} {op} {b}", t), t
        if op in ("/", "%"):
            if t.signed:
                raise _err(e, f"{op} on signed values is not supported")
            return f"_div({a}, {b})" if op == "/" else f"_mod({a}, {b})", t
        if op in ("|+|", "|-|"):
            pyop = "+" if op == "|+|" else "-"
            if t.signed:
                lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
            else:
                lo, hi = 0, t.mask
            v = self.fresh("sat")        # a conditional, not min/max calls: hot in INA lanes
            return f"({hi} if ({v} := {a} {pyop} {b}) > {hi} else {lo} if {v} < {lo} else {v})", t
        raise _err(e, f"unsupported operator {op}")

    def _compile_unary(self, e: ast.UnaryOp, ctx: BodyCtx) -> tuple[str, P4Type]:
        ok, v, t = self.try_const(e, ctx.scope)
        if ok and not isinstance(t, TupleT):
            return (repr(v) if not isinstance(v, bool) else str(v)), t
        a, t = self.compile_expr(e.expr, ctx)
        if e.op == "!":
            if not isinstance(t, BoolT):
                raise _err(e, f"! needs a bool operand (got {t})")
            return f"(not {a})", t
        if not isinstance(t, BitT):
            raise _err(e, f"operator {e.op} is not defined on {t}")
        if e.op == "~":
            return (f"(~{a})" if t.signed else f"({a} ^ {t.mask})"), t
        if e.op == "-":
            return self._wrap_code(f"-{a}", t), t
        return a, t

    def _compile_cast(self, e: ast.Cast, ctx: BodyCtx) -> tuple[str, P4Type]:
        if self.arch == "tna" and isinstance(e.expr, ast.Cast):
            from .tofino_rules import check_nested_cast
            check_nested_cast(self, e, ctx)
        tt = self.resolve_type(e.type_ref, ctx.scope)
        if isinstance(e.expr, (ast.ListExpr, ast.StructExpr)) and isinstance(tt, (StructT, TupleT)):
            return self._compile_initializer(e.expr, tt, ctx), tt
        a, t = self.compile_expr(e.expr, ctx)
        if isinstance(tt, BitT):
            if isinstance(t, BitT):
                if t == tt:
                    return a, tt
                if t.signed and not tt.signed:
                    return f"({a} & {tt.mask})", tt
                if not t.signed and tt.signed:
                    return self._wrap_code(a, tt), tt
                if tt.width >= t.width:
                    return a, tt
                return self._wrap_code(a, tt), tt
            if isinstance(t, InfIntT):
                return self._const_fit(a, tt), tt
            if isinstance(t, BoolT):
                if tt.width != 1 or tt.signed:
                    raise _err(e, "bool can only be cast to bit<1>")
                return f"int({a})", tt
            if isinstance(t, EnumT) and t.underlying is not None:
                return self._compile_cast_bits(a, t.underlying, tt), tt
            raise _err(e, f"cannot cast {t} to {tt}")
        if isinstance(tt, BoolT):
            if isinstance(t, BitT) and t.width == 1 and not t.signed:
                return f"({a} != 0)", tt
            if isinstance(t, BoolT):
                return a, tt
            if isinstance(t, InfIntT):
                return f"({a} != 0)", tt
            raise _err(e, f"cannot cast {t} to bool")
        if isinstance(tt, EnumT) and tt.underlying is not None:
            if isinstance(t, (BitT, InfIntT)):
                return self.coerce(a, t, tt.underlying, e) if isinstance(t, InfIntT) else a, tt
        if isinstance(tt, InfIntT) and isinstance(t, (InfIntT, BitT)):
            return a, tt
        if same_type(t, tt) or t is tt:
            return a, tt
        raise _err(e, f"cannot cast {t} to {tt}")

    def _compile_cast_bits(self, a: str, t: BitT, tt: BitT) -> str:
        if t == tt:
            return a
        if t.signed and not tt.signed:
            return f"({a} & {tt.mask})"
        return self._wrap_code(a, tt)
