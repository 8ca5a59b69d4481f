"""Compiler methods for statements and calls: blocks, switch, return, assignment, action
inlining, table and instance apply, functions. Mixed into
:class:`p4sim.backend.compiler.Compiler`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..frontend import ast
from ..frontend.types import (ApplyResultT, bit_width, BitT, BlockT, BoolT, EnumT, ErrorT,
                              ExternT, InfIntT, P4Type, StackT, StructT, VoidT)
from .codewriter import CodeWriter
from .context import (ActionRecord, Binding, BodyCtx, CompiledBlock, contains_call,
                      contains_return, _err, expr_text, _ReturnSignal, Scope, TableRecord)


class Statements:
    """Statements and calls (a mixin of Compiler; state set up there)."""

    def compile_block_stmt(self, b: ast.Block, ctx: BodyCtx) -> None:
        outer = ctx.scope
        ctx.scope = Scope(outer)
        try:
            self.compile_items(b.items, ctx)
        finally:
            ctx.scope = outer

    def compile_items(self, items: list[ast.Node], ctx: BodyCtx) -> None:
        """Statements and local declarations, in the current scope."""
        for item in items:
            if isinstance(item, (ast.VarDecl, ast.ConstDecl, ast.Instantiation)):
                self.compile_local_decl(item, ctx)
            else:
                self.compile_stmt(item, ctx)

    def compile_stmt(self, s: ast.Stmt, ctx: BodyCtx) -> None:
        with ctx.w.at(s.pos):
            self._compile_stmt(s, ctx)

    def _compile_stmt(self, s: ast.Stmt, ctx: BodyCtx) -> None:
        w = ctx.w
        if isinstance(s, ast.Block):
            self.compile_block_stmt(s, ctx)
        elif isinstance(s, ast.Assign):
            if s.op is not None:
                self.compile_compound_assign(s, ctx)
            else:
                self.compile_assign(s.target, s.value, ctx)
        elif isinstance(s, ast.CallStmt):
            self.compile_call(s.call, ctx, statement=True)
        elif isinstance(s, ast.If):
            cond = self.expr_as(s.cond, BoolT(), ctx)
            w.line(f"if {cond}:")
            with w.indent():
                self.compile_stmt(s.then, ctx)
            if s.otherwise is not None:
                w.line("else:")
                with w.indent():
                    self.compile_stmt(s.otherwise, ctx)
        elif isinstance(s, ast.Empty):
            pass
        elif isinstance(s, ast.Exit):
            if ctx.kind == "function":
                raise _err(s, "exit is not allowed in a function")
            w.line("raise ExitBlock()")
        elif isinstance(s, ast.Return):
            self.compile_return(s, ctx)
        elif isinstance(s, ast.Switch):
            self.compile_switch(s, ctx)
        elif isinstance(s, ast.DirectApply):
            self.compile_direct_apply(s, ctx)
        else:
            raise _err(s, f"unsupported statement {type(s).__name__}")

    def compile_return(self, s: ast.Return, ctx: BodyCtx) -> None:
        r = ctx.ret
        r.used = True
        if ctx.in_parser:
            raise _err(s, "return is not allowed in a parser")
        if r.mode == "break":
            if s.value is not None:
                raise _err(s, "an action cannot return a value")
            ctx.w.line("break")
            return
        if r.value_var is not None:
            if s.value is None:
                raise _err(s, "this function must return a value")
            val = self.expr_as(s.value, r.value_type, ctx)  # type: ignore[attr-defined]
            vals = [self.copy_if_compound(val, r.value_type)] + r.out_names  # type: ignore[attr-defined]
            ctx.w.line(f"return ({', '.join(vals)},)" if r.out_names else f"return {vals[0]}")
            return
        if s.value is not None:
            raise _err(s, "a control or void function cannot return a value")
        if r.out_names:
            ctx.w.line(f"return ({', '.join(r.out_names)},)")
        else:
            ctx.w.line("return")

    def compile_switch(self, s: ast.Switch, ctx: BodyCtx) -> None:
        w = ctx.w
        e = s.expr
        is_action_run = isinstance(e, ast.Member) and e.member == "action_run"
        if is_action_run:
            if not (isinstance(e.expr, ast.Call) and isinstance(e.expr.func, ast.Member)
                    and e.expr.func.member == "apply"):
                raise _err(e, "action_run must be read from a table apply: t.apply().action_run")
            trec, idx_var = self.compile_table_apply(e.expr.func.expr, ctx)
            actions = trec.actions
            conds: list[tuple[list[str], ast.Block | None]] = []
            pending: list[str] = []
            seen = set()
            for c in s.cases:
                if c.label is None:
                    pending.append("True")
                else:
                    if not isinstance(c.label, ast.Name):
                        raise _err(c, "switch on action_run needs action names as labels")
                    idx = next((i for i, a in enumerate(actions) if a.decl.name == c.label.name), None)
                    if idx is None:
                        raise _err(c, f"'{c.label.name}' is not an action of table {trec.decl.name}")
                    if idx in seen:
                        raise _err(c, f"duplicate switch label '{c.label.name}'")
                    seen.add(idx)
                    pending.append(f"{idx_var} == {idx}")
                if c.body is not None:
                    conds.append((pending, c.body))
                    pending = []
            if pending:
                conds.append((pending, None))
        else:
            val, t = self.compile_expr(e, ctx)
            if not isinstance(t, (BitT, EnumT, ErrorT, InfIntT)):
                raise _err(e, f"cannot switch on a value of type {t}")
            tmp = self.fresh("sw")
            w.line(f"{tmp} = {val}")
            conds = []
            pending = []
            for c in s.cases:
                if c.label is None:
                    pending.append("True")
                else:
                    lv = self.expr_as(c.label, t, ctx)
                    pending.append(f"{tmp} == {lv}")
                if c.body is not None:
                    conds.append((pending, c.body))
                    pending = []
            if pending:
                conds.append((pending, None))
        first = True
        for cs, body in conds:
            cond = "True" if "True" in cs else " or ".join(cs)
            w.line(f"{'if' if first else 'elif'} {cond}:")
            first = False
            with w.indent():
                if body is not None:
                    self.compile_block_stmt(body, ctx)

    # ---------------------------------------------------------------- assignment
    def compile_assign(self, target: ast.Expr, value: ast.Expr, ctx: BodyCtx) -> None:
        tt = self.lvalue_type(target, ctx)
        if isinstance(value, ast.DontCare):
            return
        if contains_call(value):
            # P4 evaluates the left-hand side first: a call on the right (hoisted before the
            # assignment) must not see its effects on a stack index of the left.
            target = self._freeze_indexes(target, ctx)
        code = self.expr_as(value, tt, ctx)
        self.assign_to(target, self.copy_if_compound(code, tt), ctx)

    def compile_compound_assign(self, s: ast.Assign, ctx: BodyCtx) -> None:
        """``a op= b`` is ``a = a op b`` with ``a`` evaluated once (P4_16 v1.2.4, 11.1)."""
        if isinstance(s.value, ast.DontCare):
            raise _err(s.value, f"'_' cannot be the right-hand side of '{s.op}='")
        self.lvalue_type(s.target, ctx)
        target = self._freeze_indexes(s.target, ctx)
        value = ast.BinOp(s.op, target, s.value, pos=s.pos)
        self.compile_assign(target, value, ctx)

    def lvalue_type(self, target: ast.Expr, ctx: BodyCtx) -> P4Type:
        _, t = self.type_of(target, ctx)
        return t

    def assign_to(self, target: ast.Expr, code: str, ctx: BodyCtx) -> None:
        """Emit `target = code` (code already has target's type)."""
        w = ctx.w
        if isinstance(target, ast.DontCare):
            return
        if isinstance(target, ast.Name):
            b = ctx.scope.lookup(target.name)
            if b is None:
                raise _err(target, f"unknown name '{target.name}'")
            if b.kind != "value":
                raise _err(target, f"cannot assign to '{target.name}'")
            if not b.writable:
                raise _err(target, f"cannot assign to '{target.name}': it is a read-only (in) parameter")
            if isinstance(b.decl, ast.Param) and isinstance(b.type, (StructT, StackT)):
                # a struct/header/stack parameter is the caller's object (inout/out are passed
                # by reference): assign in place, rebinding the local would lose the write
                tmp = self.fresh("asg")
                w.line(f"{tmp} = {code}")
                if isinstance(b.type, StackT):
                    w.line(f"{b.py}.items[:] = {tmp}.items; {b.py}.nxt = {tmp}.nxt")
                else:
                    for n in [n for n, _ in b.type.fields] + (["_v"] if b.type.is_header else []):
                        w.line(f"{b.py}.{n} = {tmp}.{n}")
                return
            w.line(f"{b.py} = {code}")
            return
        if isinstance(target, ast.Member):
            base, bt = self.compile_expr(target.expr, ctx, lvalue=True)
            self._check_writable(target.expr, ctx)
            if isinstance(bt, StackT):
                raise _err(target, f"cannot assign to stack property '{target.member}'")
            w.line(f"{base}.{target.member} = {code}")
            return
        if isinstance(target, ast.Index):
            self._check_writable(target.expr, ctx)
            base, bt = self.compile_expr(target.expr, ctx, lvalue=True)
            if not isinstance(bt, StackT):
                raise _err(target, "only header stacks can be indexed")
            ok, idx, _ = self.try_const(target.index, ctx.scope)
            if ok:
                if not 0 <= idx < bt.size:
                    raise _err(target, f"index {idx} out of range for {bt}")
                w.line(f"{base}.items[{idx}] = {code}")
            else:
                w.line(f"stack_set({base}, {self._stack_index(target.index, ctx)}, {code})")
            return
        if isinstance(target, ast.Slice):
            base_code, bt = self.compile_expr(target.expr, ctx)
            if not isinstance(bt, BitT):
                raise _err(target, "only bit<N>/int<N> values can be sliced")
            hi = self.const_eval(target.high, ctx.scope)
            lo = self.const_eval(target.low, ctx.scope)
            self._check_slice(target, bt, hi, lo)
            width = hi - lo + 1
            m = ((1 << width) - 1) << lo
            keep = bt.mask & ~m
            new = f"(({base_code} & {keep}) | (({code}) << {lo}))" if lo else f"(({base_code} & {keep}) | ({code}))"
            if bt.signed:
                new = self._wrap_code(new, bt)
            self.assign_to(target.expr, new, ctx)
            return
        raise _err(target, "expression cannot be assigned to")

    def _freeze_indexes(self, target: ast.Expr, ctx: BodyCtx) -> ast.Expr:
        """``target`` with each run-time stack index replaced by a local holding its value now."""
        if isinstance(target, ast.Index):
            base = self._freeze_indexes(target.expr, ctx)
            if self.try_const(target.index, ctx.scope)[0]:
                return replace(target, expr=base)
            tmp = self.fresh("ix")
            ctx.w.line(f"{tmp} = {self._stack_index(target.index, ctx)}")
            ctx.scope.define(f"${tmp}", Binding("value", BitT(32), py=tmp))
            return replace(target, expr=base, index=ast.Name(f"${tmp}", pos=target.index.pos))
        if isinstance(target, (ast.Member, ast.Slice)):
            return replace(target, expr=self._freeze_indexes(target.expr, ctx))
        return target

    def _stack_index(self, e: ast.Expr, ctx: BodyCtx) -> str:
        """A run-time stack index: any bit<N> or int<N> expression (or an int constant); a
        negative one is out of range like a too large one (stack_get/stack_set)."""
        code, t = self.compile_expr(e, ctx, expected=BitT(32))
        if isinstance(t, BitT):
            return code
        return self.coerce(code, t, BitT(32), e)

    def _check_writable(self, e: ast.Expr, ctx: BodyCtx) -> None:
        while isinstance(e, (ast.Member, ast.Index, ast.Slice)):
            e = e.expr
        if isinstance(e, ast.Name):
            b = ctx.scope.lookup(e.name)
            if b is not None and b.kind == "value" and not b.writable:
                raise _err(e, f"cannot assign to a field of '{e.name}': it is a read-only (in) parameter")

    @staticmethod
    def _check_slice(node: Any, t: BitT, hi: Any, lo: Any) -> None:
        if not isinstance(hi, int) or not isinstance(lo, int):
            raise _err(node, "slice bounds must be constants")
        if not (0 <= lo <= hi < t.width):
            raise _err(node, f"slice [{hi}:{lo}] out of range for {t}")

    # ======================================================================== calls
    def compile_call(self, call: ast.Call, ctx: BodyCtx, statement: bool) -> tuple[str, P4Type]:
        """Compile a call; statements emit code and return ("", VoidT) or a value expression."""
        f = call.func
        from . import externs
        # method calls: x.m(...)
        if isinstance(f, ast.Member):
            m = f.member
            base = f.expr
            # table.apply()
            if m == "apply":
                bb = self._binding_of(base, ctx)
                if bb is not None and bb.kind == "table":
                    if call.args:
                        raise _err(call, "table.apply() takes no arguments")
                    trec, idx_var = self.compile_table_apply(base, ctx)
                    return idx_var, ApplyResultT(trec.decl)
                if bb is not None and bb.kind == "instance":
                    return self.compile_instance_apply(bb, call, ctx, statement)
            bb = self._binding_of(base, ctx)
            if bb is not None and bb.kind in ("packet_in", "packet_out", "extern"):
                return externs.compile_method_call(self, bb, m, call, ctx, statement)
            # header / stack / union methods
            code, t = self.compile_expr(base, ctx, lvalue=m in ("setValid", "setInvalid", "push_front", "pop_front"))
            if m in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes") \
                    and isinstance(t, (StructT, StackT)):
                if call.args:
                    raise _err(call, f"{m}() takes no arguments")
                try:
                    bits = bit_width(t)  # no varbit: min and max sizes are the same
                except TypeError:
                    raise _err(call, f"{m}(): {t} has no fixed size") from None
                return str(bits if m.endswith("Bits") else (bits + 7) // 8), InfIntT()
            if isinstance(t, StructT) and t.is_header:
                if call.args:
                    raise _err(call, f"{m}() takes no arguments")
                if m == "isValid":
                    return f"{code}._v", BoolT()
                if m in ("setValid", "setInvalid"):
                    self._check_writable(base, ctx)
                    if not statement:
                        raise _err(call, f"{m}() returns nothing")
                    if m == "setInvalid":
                        ctx.w.line(f"{code}._v = False")
                    else:
                        # bmv2: setValid on an invalid header leaves fields as they are (zero-initialized)
                        ctx.w.line(f"{code}._v = True")
                        for sib in self.union_siblings(base, ctx):
                            ctx.w.line(f"{sib}._v = False")
                    return "", VoidT()
            if isinstance(t, StructT) and t.kind == "header_union" and m == "isValid":
                return f"{code}.isValid()", BoolT()
            if isinstance(t, StackT) and m in ("push_front", "pop_front"):
                if len(call.args) != 1:
                    raise _err(call, f"{m} takes one argument")
                n = self.const_eval(call.args[0].value, ctx.scope)
                ctx.w.line(f"{code}.{m}({n})")
                return "", VoidT()
            raise _err(call, f"unknown method '{m}' on a value of type {t}")
        if isinstance(f, ast.Name):
            b = ctx.scope.lookup(f.name) if not f.top_level else self.globals.lookup(f.name)
            if b is None:
                raise _err(f, f"unknown function or action '{f.name}'")
            if b.kind == "action":
                if not statement:
                    raise _err(call, "an action call is a statement, not an expression")
                if ctx.kind == "function":
                    raise _err(call, "actions cannot be called from functions")
                if ctx.kind == "control":  # recorded for the P4Info (p4sim.p4info)
                    self.info.direct_calls.add(self._register_action(b.decl).name)
                self.inline_action(b.decl, call.args, ctx, call, from_table=False)
                return "", VoidT()
            if b.kind == "function":
                return self.compile_function_call(b.decl, call, ctx, statement)
            if b.kind == "extern_function":
                return externs.compile_extern_function(self, f.name, b.decl, call, ctx, statement)
        raise _err(call, f"'{expr_text(f)}' cannot be called")

    def union_siblings(self, e: ast.Expr, ctx: BodyCtx) -> list[str]:
        """Other members of the header union that ``e`` is a member of (a union holds at most
        one valid member, so making one valid invalidates the rest)."""
        if not isinstance(e, ast.Member):
            return []
        _, ut = self.type_of(e.expr, ctx)
        if not (isinstance(ut, StructT) and ut.kind == "header_union"):
            return []
        base, _ = self.compile_expr(e.expr, ctx, lvalue=True)
        return [f"{base}.{n}" for n, _ in ut.fields if n != e.member]

    def _binding_of(self, e: ast.Expr, ctx: BodyCtx) -> Binding | None:
        if isinstance(e, ast.Name):
            return (self.globals if e.top_level else ctx.scope).lookup(e.name)
        return None

    # ---------------------------------------------------------------- argument binding
    def bind_args(self, params: list[ast.Param], args: list[ast.Argument], call: Any, what: str) -> list[tuple[ast.Param, ast.Expr | None]]:
        """Match call arguments (positional or named) to parameters; None for omitted @optional."""
        named = any(a.name for a in args)
        result: dict[str, ast.Expr | None] = {}
        if named:
            if not all(a.name for a in args):
                raise _err(call, "either all arguments are named or none")
            pnames = {p.name for p in params}
            for a in args:
                if a.name not in pnames:
                    raise _err(a, f"{what} has no parameter '{a.name}'")
                result[a.name] = a.value
        else:
            if len(args) > len(params):
                raise _err(call, f"{what} takes {len(params)} arguments, got {len(args)}")
            for p, a in zip(params, args):
                result[p.name] = a.value
        out = []
        for p in params:
            if p.name in result:
                out.append((p, result[p.name]))
            elif p.default is not None:
                out.append((p, p.default))
            elif ast.find_annotation(p.annotations, "optional") is not None:
                out.append((p, None))
            else:
                raise _err(call, f"{what}: missing argument for parameter '{p.name}'")
        return out

    # ---------------------------------------------------------------- actions
    def inline_action(self, rec: ActionRecord, args: list[ast.Argument], ctx: BodyCtx, call: Any,
                      from_table: bool, arg_codes: list[str] | None = None) -> None:
        """Inline an action body. Directional params come from ``args`` (for a table: the
        arguments bound in its actions list); directionless ones from ``args`` too for direct
        calls, or from ``arg_codes`` (control-plane data) for tables."""
        d = rec.decl
        w = ctx.w
        ascope = Scope(rec.scope)
        copy_out: list[tuple[ast.Expr, str]] = []
        if from_table:
            data_params = [p for p in d.params if not p.direction]
            assert arg_codes is not None and len(arg_codes) == len(data_params)
            for p, code in zip(data_params, arg_codes):
                t = self.resolve_type(p.type_ref, rec.scope)
                pyn = self.unique_local(p.name)
                w.line(f"{pyn} = {self._from_cp_code(code, t)}")
                ascope.define(p.name, Binding("value", t, py=pyn, writable=True, decl=p))
        dir_params = [p for p in d.params if p.direction] if from_table else d.params
        if dir_params or not from_table:
            bound = self.bind_args(dir_params, args, call, f"action {d.name}")
            for p, a in bound:
                t = self.resolve_type(p.type_ref, rec.scope)
                pyn = self.unique_local(p.name)
                if a is None:
                    raise _err(call, f"action {d.name}: missing argument for '{p.name}'")
                if p.direction in ("out", "inout"):
                    self._check_lvalue(a, ctx)
                if p.direction == "out":
                    w.line(f"{pyn} = {self.default_value_code(t)}")
                else:
                    code = self.expr_as(a, t, ctx)
                    # copy-in (P4 calling convention): an inout struct is a copy too, so that
                    # writes through another path (e.g. the control's own parameter) are
                    # overwritten at copy-out, as in p4c/bmv2
                    w.line(f"{pyn} = {self.copy_if_compound(code, t)}")
                ascope.define(p.name, Binding("value", t, py=pyn, writable=p.direction != "in", decl=p))
                if p.direction in ("out", "inout"):
                    copy_out.append((a, pyn))
        actx = BodyCtx(w, ascope, "action", rec.prefix, _ReturnSignal("break"))
        if copy_out:
            # `exit` (here, in a called action or a table applied here) still copies out
            # out/inout parameters (P4_16 spec, exit statement)
            w.line("try:")
            with w.indent():
                self._compile_action_body(d.body, actx)
            w.line("except ExitBlock:")
            with w.indent():
                for a, pyn in copy_out:
                    self.assign_to(a, pyn, ctx)
                w.line("raise")
        else:
            self._compile_action_body(d.body, actx)
        for a, pyn in copy_out:
            self.assign_to(a, pyn, ctx)

    def _compile_action_body(self, body: ast.Block, actx: BodyCtx) -> None:
        w = actx.w
        if contains_return(body):
            w.line("while True:")
            with w.indent():
                self.compile_block_stmt(body, actx)
                w.line("break")
        else:
            self.compile_block_stmt(body, actx)

    def _from_cp_code(self, code: str, t: P4Type) -> str:
        if isinstance(t, BoolT):
            return f"bool({code})"
        if isinstance(t, BitT) and t.signed:
            return self._wrap_code(code, t)
        return code

    def _check_lvalue(self, e: ast.Expr, ctx: BodyCtx) -> None:
        if isinstance(e, ast.DontCare):
            return              # `_` for an out argument: the value is discarded
        base = e
        while isinstance(base, (ast.Member, ast.Index, ast.Slice)):
            base = base.expr
        if not isinstance(base, ast.Name):
            raise _err(e, "argument for an out/inout parameter must be assignable")
        b = ctx.scope.lookup(base.name)
        if b is None or b.kind != "value":
            raise _err(e, "argument for an out/inout parameter must be assignable")
        if not b.writable:
            raise _err(e, f"'{base.name}' is read-only (in) and cannot be passed as out/inout")

    # ---------------------------------------------------------------- tables
    def compile_table_apply(self, base: ast.Expr, ctx: BodyCtx) -> tuple[TableRecord, str]:
        b = self._binding_of(base, ctx)
        if b is None or b.kind != "table":
            raise _err(base, f"'{expr_text(base)}' is not a table")
        trec: TableRecord = b.info
        w = ctx.w
        keys = []
        for ke, kt in zip(trec.key_exprs, trec.key_types):
            code, t = self.compile_expr(ke, ctx)
            if isinstance(t, BoolT):
                code = f"int({code})"
            elif isinstance(t, BitT) and t.signed:
                code = f"({code} & {t.mask})"
            keys.append(code)
        res = self.fresh("r")
        idx = self.fresh("ai")
        w.line(f"{idx}, {res}_args, {res}_e = {trec.py}.lookup(({''.join(k + ', ' for k in keys)}))")
        if trec.direct_counter_py:
            w.line(f"{trec.py}.count({res}_e, _ctx.packet_length)")
        first = True
        for i, a in enumerate(trec.actions):
            w.line(f"{'if' if first else 'elif'} {idx} == {i}:")
            first = False
            with w.indent():
                nparams = sum(1 for p in a.decl.params if not p.direction)
                codes = [f"{res}_args[{j}]" for j in range(nparams)]
                self.inline_action(a, trec.bound_args[i], ctx, base, from_table=True, arg_codes=codes)
        # hit flag and action index live in Python locals for .hit/.miss/action_run
        self._last_apply = (idx, f"({res}_e is not None)")
        ctx.scope.define(f"$hit:{idx}", Binding("value", BoolT(), py=f"({res}_e is not None)"))
        return trec, idx

    # ---------------------------------------------------------------- nested blocks
    def compile_direct_apply(self, s: ast.DirectApply, ctx: BodyCtx) -> None:
        """``T.apply(args)`` for a control or parser type T without constructor parameters: as
        p4c's InstantiateDirectCalls, a fresh instance of T at this site, named T in the control
        plane (``@name("T")``), then applied."""
        t = self.resolve_type(s.type_ref, ctx.scope)
        if not isinstance(t, BlockT) or t.kind not in ("control", "parser") or not isinstance(
                t.decl, (ast.ControlDecl, ast.ParserDecl)):
            raise _err(s, f"'{t}' is not a control or parser declaration: .apply() needs one")
        if t.kind == "parser" and not ctx.in_parser:
            raise _err(s, "a parser can only be applied from a parser")
        if ctx.kind in ("action", "function"):
            raise _err(s, f"{t.decl.name}.apply() is not allowed in an {ctx.kind}")
        if getattr(t.decl, "ctor_params", None):
            raise _err(s, f"{t.decl.name} has constructor parameters: instantiate it to apply it")
        name = t.decl.name
        blk = self.compile_block(t.decl, [], f"{ctx.prefix}.{name}" if ctx.prefix else name,
                                 "nested", s, ctx.scope)
        b = Binding("instance", t, py=blk.py_func, decl=s, info=blk)
        call = ast.Call(ast.Member(ast.Name(name, pos=s.pos), "apply", pos=s.pos), s.args, pos=s.pos)
        self.compile_instance_apply(b, call, ctx, statement=True)

    def compile_instance_apply(self, b: Binding, call: ast.Call, ctx: BodyCtx, statement: bool) -> tuple[str, P4Type]:
        blk: CompiledBlock = b.info
        if blk.kind == "parser" and not ctx.in_parser:
            raise _err(call, "a parser can only be applied from a parser")
        params = [p for p in blk.decl.params]
        bound = self.bind_args(params, call.args, call, f"{blk.decl.name}.apply")
        arg_codes = []
        copy_back = []
        packet = None
        for (p, a), (d, _, t) in zip(bound, blk.params):
            if a is None:
                raise _err(call, f"missing argument '{p.name}'")
            if isinstance(t, ExternT) and t.name == "packet_in":
                pb = self._binding_of(a, ctx)
                if pb is None or pb.kind != "packet_in":
                    raise _err(a, f"argument '{p.name}' must be the parser's packet_in")
                packet = pb.py
                arg_codes.append(packet)
                continue
            if d in ("out", "inout"):
                self._check_lvalue(a, ctx)
            code = self.expr_as(a, t, ctx)
            if isinstance(t, (StructT, StackT)):
                arg_codes.append(code if d in ("inout", "out") else f"{code}.copy()")
            else:
                arg_codes.append(code)
                if d in ("out", "inout"):
                    copy_back.append(a)
        if packet is not None:
            # a sub-parser continues from our offset and we continue from where it accepted;
            # its reject (ParserReject) ends the whole parse, as in P4
            ctx.w.line(f"{packet}.off = off")
        if copy_back:
            tmp = self.fresh("o")
            ctx.w.line(f"{tmp} = {blk.py_func}({', '.join(arg_codes)})")
            for i, a in enumerate(copy_back):
                self.assign_to(a, f"{tmp}[{i}]", ctx)
        else:
            ctx.w.line(f"{blk.py_func}({', '.join(arg_codes)})")
        if packet is not None:
            ctx.w.line(f"off = {packet}.off")
        return "", VoidT()

    # ---------------------------------------------------------------- functions
    def compile_function_call(self, d: ast.FunctionDecl, call: ast.Call, ctx: BodyCtx,
                              statement: bool) -> tuple[str, P4Type]:
        py, ret_t, params = self._emit_function(d)
        bound = self.bind_args(d.proto.params, call.args, call, f"function {d.name}")
        codes = []
        outs = []
        for (p, a), (pd, pt) in zip(bound, params):
            if a is None:
                raise _err(call, f"missing argument '{p.name}'")
            if pd in ("out", "inout"):
                self._check_lvalue(a, ctx)
            if pd == "out":
                codes.append(self.default_value_code(pt))
            else:
                c = self.expr_as(a, pt, ctx)
                codes.append(self.copy_if_compound(c, pt) if pd == "in" or pd == "" else c)
            if pd in ("out", "inout") and not (pd == "inout" and isinstance(pt, (StructT, StackT))):
                outs.append(a)
        callcode = f"{py}({', '.join(codes)})"
        if not outs:
            if isinstance(ret_t, VoidT):
                if not statement:
                    raise _err(call, f"function {d.name} returns no value")
                ctx.w.line(callcode)
                return "", VoidT()
            if statement:
                ctx.w.line(callcode)
                return "", VoidT()
            return callcode, ret_t
        tmp = self.fresh("f")
        ctx.w.line(f"{tmp} = {callcode}")
        off = 0 if isinstance(ret_t, VoidT) else 1
        for i, a in enumerate(outs):
            self.assign_to(a, f"{tmp}[{i + off}]", ctx)
        if isinstance(ret_t, VoidT):
            return "", VoidT()
        return f"{tmp}[0]", ret_t

    def _emit_function(self, d: ast.FunctionDecl) -> tuple[str, P4Type, list[tuple[str, P4Type]]]:
        key = id(d)
        cached = self.functions_emitted.get(key)
        scope = Scope(self.globals)
        if d.proto.type_params:
            raise _err(d, "generic functions are not supported")
        ret_t = self.resolve_type(d.proto.return_type, scope)
        params = []
        pynames = []
        outs = []
        for p in d.proto.params:
            t = self.resolve_type(p.type_ref, scope)
            pyn = self.unique_local(p.name)
            params.append((p.direction, t))
            pynames.append(pyn)
            scope.define(p.name, Binding("value", t, py=pyn, writable=p.direction in ("out", "inout"), decl=p))
            if p.direction in ("out", "inout") and not (p.direction == "inout" and isinstance(t, (StructT, StackT))):
                outs.append(pyn)
        if cached is not None:
            return cached, ret_t, params  # type: ignore[return-value]
        py = self.unique_py("fn_" + d.name)
        self.functions_emitted[key] = py
        w = CodeWriter()
        ret = _ReturnSignal("python", outs, None if isinstance(ret_t, VoidT) else "ret")
        ret.value_type = ret_t  # type: ignore[attr-defined]
        ctx = BodyCtx(w, scope, "function", "", ret)
        w.line(f"def {py}({', '.join(pynames)}):")
        with w.indent():
            self.compile_block_stmt(d.body, ctx)
            if isinstance(ret_t, VoidT):
                if outs:
                    w.line(f"return ({', '.join(outs)},)")
            else:
                w.line(f"raise DataplaneError('function {d.name} ended without return')")
        self.w_funcs.lines.extend(w.lines)
        self.w_funcs.line("")
        return py, ret_t, params
