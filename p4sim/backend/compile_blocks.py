"""Compiler methods for architecture elaboration and the blocks it instantiates: parsers,
controls, their constructor parameters, extern instances, actions, tables and const
entries, and local declarations. Mixed into :class:`p4sim.backend.compiler.Compiler`.
"""
from __future__ import annotations

from typing import Any

from ..frontend import ast
from ..frontend.types import (BitT, BlockT, BoolT, DontCareT, EnumT, ErrorT, ExternT, P4Type,
                              StackT, StructT, TableT, VoidT)
from p4control import model
from .codewriter import CodeWriter
from .context import (ActionRecord, Binding, BodyCtx, CompiledBlock, _err, key_name, _py_ident,
                      _ReturnSignal, RuntimeObject, Scope, TableRecord)


class BlockDeclarations:
    """Elaboration, blocks, tables, locals (a mixin of Compiler; state set up there)."""

    def _elaborate_main(self, inst: ast.Instantiation) -> None:
        from . import archs
        archs.elaborate(self, inst)

    def instantiate_block(self, arg: ast.Expr, scope: Scope, role: str, prefix_override: str | None = None) -> CompiledBlock:
        """Compile the parser/control instance given as a package argument."""
        if isinstance(arg, ast.ConstructorCall):
            tr, cargs = arg.type_ref, arg.args
        elif isinstance(arg, ast.Name):
            b = scope.lookup(arg.name)
            if b is None or b.kind != "instance":
                raise _err(arg, f"unknown instance '{arg.name}'")
            tr, cargs = b.decl.type_ref, b.decl.args
        else:
            raise _err(arg, "expected a parser or control instantiation")
        t = self.resolve_type(tr, self.globals)
        if not isinstance(t, BlockT) or t.kind not in ("parser", "control") or not isinstance(
                t.decl, (ast.ParserDecl, ast.ControlDecl)):
            raise _err(arg, f"'{tr.name if isinstance(tr, ast.NamedTypeRef) else tr}' is not a parser or control declaration")
        prefix = prefix_override if prefix_override is not None else t.decl.name
        return self.compile_block(t.decl, cargs, prefix, role, arg)

    def compile_block(self, decl: Any, ctor_args: list[ast.Argument], prefix: str, role: str,
                      site: Any, arg_scope: Scope | None = None) -> CompiledBlock:
        active = self.__dict__.setdefault("_blocks_compiling", [])
        if any(d is decl for d in active):
            raise _err(site, f"{decl.name} is instantiated or applied inside itself (recursion)")
        active.append(decl)
        try:
            return self._compile_block(decl, ctor_args, prefix, role, site, arg_scope)
        finally:
            active.pop()

    def _compile_block(self, decl: Any, ctor_args: list[ast.Argument], prefix: str, role: str,
                       site: Any, arg_scope: Scope | None = None) -> CompiledBlock:
        scope = Scope(self.globals)
        self._bind_ctor_params(decl, ctor_args, scope, site, arg_scope or self.globals)
        py_func = self.unique_py(("parser_" if isinstance(decl, ast.ParserDecl) else "control_") + prefix)
        params = []
        py_params = []
        for p in decl.params:
            t = self.resolve_type(p.type_ref, scope)
            pyn = self.unique_local(p.name)
            params.append((p.direction, p.name, t))
            py_params.append(pyn)
            if isinstance(t, ExternT) and t.name == "packet_in":
                scope.define(p.name, Binding("packet_in", t, py=pyn))
            elif isinstance(t, ExternT) and t.name == "packet_out":
                scope.define(p.name, Binding("packet_out", t, py=pyn))
            else:
                scope.define(p.name, Binding("value", t, py=pyn, writable=p.direction in ("out", "inout"),
                                             decl=p))
        w = CodeWriter()
        out_scalars = [pyn for (d, _, t), pyn in zip(params, py_params)
                       if d in ("out", "inout") and not isinstance(t, (StructT, StackT))]
        ret = _ReturnSignal("python", out_scalars)
        ctx = BodyCtx(w, scope, "parser" if isinstance(decl, ast.ParserDecl) else "control", prefix, ret)
        w.line(f"def {py_func}({', '.join(py_params)}):")
        with w.indent():
            if isinstance(decl, ast.ParserDecl):
                self._compile_parser_body(decl, ctx)
            elif role == "nested":
                for local in decl.locals:
                    self._control_local(local, ctx)
                self.compile_block_stmt(decl.body, ctx)
                if out_scalars:
                    w.line(f"return ({', '.join(out_scalars)},)")
            else:
                # an architecture block: `exit` ends this block (and nothing else)
                w.line("try:")
                with w.indent():
                    for local in decl.locals:
                        self._control_local(local, ctx)
                    self.compile_block_stmt(decl.body, ctx)
                w.line("except ExitBlock:")
                with w.indent():
                    w.line("pass")
                if out_scalars:
                    w.line(f"return ({', '.join(out_scalars)},)")
        self.w_funcs.lines.extend(w.lines)
        self.w_funcs.line("")
        blk = CompiledBlock("parser" if isinstance(decl, ast.ParserDecl) else "control", py_func, decl, params)
        blk.out_scalars = out_scalars  # type: ignore[attr-defined]
        return blk

    def _bind_ctor_params(self, decl: Any, args: list[ast.Argument], scope: Scope, site: Any,
                          arg_scope: Scope) -> None:
        cparams = decl.ctor_params
        if len(args) > len(cparams):
            raise _err(site, f"{decl.name} takes {len(cparams)} constructor arguments, got {len(args)}")
        bound: dict[str, ast.Expr] = {}
        for i, a in enumerate(args):
            name = a.name or cparams[i].name
            bound[name] = a.value
        for p in cparams:
            t = self.resolve_type(p.type_ref, scope)
            if p.name in bound:
                e = bound[p.name]
            elif p.default is not None:
                e = p.default
            else:
                raise _err(site, f"missing constructor argument '{p.name}' of {decl.name}")
            if isinstance(t, (BlockT, ExternT)):
                # an instance passed by name (a control/parser instance, or an extern instance):
                # the parameter is that same instance
                src_scope = arg_scope if p.name in bound else scope
                ib = src_scope.lookup(e.name) if isinstance(e, ast.Name) else None
                want = "instance" if isinstance(t, BlockT) else "extern"
                if ib is None or ib.kind != want or (
                        isinstance(t, BlockT) and t.kind != getattr(ib.info, "kind", None)) or (
                        isinstance(t, ExternT) and getattr(ib.type, "name", None) != t.name):
                    raise _err(e, f"constructor parameter '{p.name}' of type {t} needs the name "
                                  f"of a {t.kind if isinstance(t, BlockT) else t.name} instance")
                scope.define(p.name, ib)
                continue
            v = self.const_eval(e, arg_scope if p.name in bound else scope, t)
            scope.define(p.name, Binding("const", t, py=repr(v), value=v))

    def unique_local(self, name: str) -> str:
        return f"{_py_ident(name)}_{next(self._fresh)}"

    # ======================================================================== control locals
    @staticmethod
    def _check_redeclared(d: ast.Decl, scope: Scope) -> None:
        if d.name in scope.names:
            raise _err(d, f"'{d.name}' is already declared in this scope")

    def _control_local(self, d: ast.Decl, ctx: BodyCtx) -> None:
        scope = ctx.scope
        if not isinstance(d, (ast.VarDecl, ast.ConstDecl)):
            self._check_redeclared(d, scope)
        if isinstance(d, ast.ActionDecl):
            scope.define(d.name, Binding("action", decl=ActionRecord(d, self._fq(ctx.prefix, d), scope, ctx.prefix)))
            self._register_action(scope.lookup(d.name).decl)
        elif isinstance(d, ast.TableDecl):
            self._declare_table(d, ctx)
        elif isinstance(d, ast.Instantiation):
            self._declare_instance(d, ctx)
        elif isinstance(d, (ast.VarDecl, ast.ConstDecl)):
            self.compile_local_decl(d, ctx)
        elif isinstance(d, ast.FunctionDecl):
            scope.define(d.name, Binding("function", decl=d))
        else:
            raise _err(d, f"unsupported declaration in a control: {type(d).__name__}")

    def _register_action(self, rec: ActionRecord) -> model.ActionInfo:
        existing = self.info.actions.get(rec.fq_name)
        if existing is not None:
            return existing
        params = []
        for p in rec.decl.params:
            if p.direction:
                continue
            t = self.resolve_type(p.type_ref, rec.scope)
            a = ast.find_annotation(p.annotations, "name")   # control-plane name, as in p4c
            params.append(model.ActionParam(a.string_arg() if a is not None and a.string_arg() else p.name,
                                            self._cp_width(t, p)))
        ai = model.ActionInfo(rec.fq_name, params, [self._anno_text(a) for a in rec.decl.annotations])
        self.info.actions[rec.fq_name] = ai
        return ai

    @staticmethod
    def _anno_text(a: ast.Annotation) -> str:
        return f"@{a.name}({a.body})" if a.body else f"@{a.name}"

    def _cp_width(self, t: P4Type, node: Any) -> int:
        if isinstance(t, BitT):
            return t.width
        if isinstance(t, BoolT):
            return 1
        if isinstance(t, EnumT) and t.underlying:
            return t.underlying.width
        raise _err(node, f"type {t} cannot be set by the control plane")

    # ---------------------------------------------------------------- instances
    def _declare_instance(self, d: ast.Instantiation, ctx: BodyCtx) -> None:
        t = self.resolve_type(d.type_ref, ctx.scope)
        if isinstance(t, BlockT):
            if t.kind not in ("control", "parser") or not isinstance(t.decl, (ast.ControlDecl, ast.ParserDecl)):
                raise _err(d, f"cannot instantiate {t} here")
            blk = self.compile_block(t.decl, d.args, f"{ctx.prefix}.{d.name}", "nested", d, ctx.scope)
            ctx.scope.define(d.name, Binding("instance", t, py=blk.py_func, decl=d, info=blk))
            return
        if not isinstance(t, ExternT):
            raise _err(d, f"cannot instantiate type {t}")
        from . import externs
        inst = externs.declare_extern_instance(self, d, t, ctx)
        ctx.scope.define(d.name, Binding("extern", inst.type, py=inst.py, decl=d, info=inst))

    def _object(self, py_name: str) -> RuntimeObject:
        return next(o for o in self.objects if o.py_name == py_name)

    def add_object(self, base: str, kind: str, **params: Any) -> str:
        py = self.unique_py(base)
        self.objects.append(RuntimeObject(py, kind, params))
        return py

    # ---------------------------------------------------------------- tables
    def _declare_table(self, d: ast.TableDecl, ctx: BodyCtx) -> None:
        scope = ctx.scope
        fq = self._fq(ctx.prefix, d)
        known = {"key", "actions", "entries", "default_action", "size", "counters", "meters",
                 "implementation", "support_timeout", "idle_timeout_with_auto_delete",
                 "pna_direct_counter", "direct_counter", "psa_direct_counter"}
        for p in d.properties:
            if p.name not in known:
                raise _err(p, f"unknown table property '{p.name}'")
            if p.name == "implementation":
                raise _err(p, "action profiles and selectors (implementation) are not supported")
        keys: list[model.KeyField] = []
        key_exprs: list[ast.Expr] = []
        key_types: list[P4Type] = []
        kp = d.prop("key")
        if kp is not None:
            for ke in kp.value:
                if ke.match_kind not in self.match_kinds:
                    raise _err(ke, f"unknown match kind '{ke.match_kind}'")
                if ke.match_kind not in ("exact", "ternary", "lpm", "range", "optional"):
                    raise _err(ke, f"match kind '{ke.match_kind}' is not supported")
                _, kt = self.type_of(ke.expr, ctx)
                width = self._cp_width(kt if not isinstance(kt, ErrorT) else BitT(32), ke)
                a = ast.find_annotation(ke.annotations, "name")
                kname = a.string_arg() if a is not None else key_name(ke.expr)
                keys.append(model.KeyField(kname, width, ke.match_kind))  # type: ignore[arg-type]
                key_exprs.append(ke.expr)
                key_types.append(kt)
            if sum(1 for k in keys if k.match_kind == "lpm") > 1:
                raise _err(kp, "a table may have at most one lpm key")
        ap = d.prop("actions")
        if ap is None:
            raise _err(d, f"table {d.name} has no actions property")
        actions: list[ActionRecord] = []
        refs: list[model.ActionRef] = []
        bound_args: list[list[ast.Argument]] = []
        for ar in ap.value:
            b = scope.lookup(ar.name)
            if b is None or b.kind != "action":
                raise _err(ar, f"unknown action '{ar.name}' in table {d.name}")
            rec: ActionRecord = b.decl
            n_dir = sum(1 for p in rec.decl.params if p.direction)
            if len(ar.args or []) != n_dir:
                raise _err(ar, f"action {ar.name} in table {d.name}: the actions list must bind its "
                               f"{n_dir} directional parameter(s), it gives {len(ar.args or [])} argument(s)")
            bound_args.append(list(ar.args or []))
            self._register_action(rec)
            actions.append(rec)
            refs.append(model.ActionRef(rec.fq_name,
                                        table_only=ast.find_annotation(ar.annotations, "tableonly") is not None,
                                        default_only=ast.find_annotation(ar.annotations, "defaultonly") is not None,
                                        annotations=[self._anno_text(a) for a in ar.annotations]))
        # default action
        dp = d.prop("default_action")
        if dp is not None:
            default_call = self._table_action_call(dp.value, actions, scope, d, "default_action")
            default_const = dp.is_const
        else:
            b = self.globals.lookup("NoAction")
            if b is None or b.kind != "action":
                raise _err(d, f"table {d.name} has no default_action and NoAction is not declared")
            if all(rec.fq_name != "NoAction" for rec in actions):
                # As p4c: the implicit default NoAction joins the list as @defaultonly.
                self._register_action(b.decl)
                actions.append(b.decl)
                bound_args.append([])
                refs.append(model.ActionRef("NoAction", default_only=True))
            default_call = model.ActionCall("NoAction", {})
            default_const = False
        size = 512 if self.arch == "tna" else 1024     # bf-p4c's default; p4c's for P4Info
        sp = d.prop("size")
        if sp is not None:
            size = self.const_eval(sp.value, scope)
            if not isinstance(size, int) or size <= 0:
                raise _err(sp, "table size must be a positive constant")
        info = model.TableInfo(fq, keys, refs, default_call, default_const, size=size,
                               annotations=[self._anno_text(a) for a in d.annotations])
        ep = d.prop("entries")
        if ep is not None:
            info.has_const_entries = ep.is_const
            for en in ep.value:
                info.const_entries.append(self._const_entry(en, info, actions, key_types, scope, d))
            self._legacy_entry_priorities(ep.value, info)
        rec_py = self.add_object("T_" + fq, "table", name=fq)
        trec = TableRecord(d, info, rec_py, actions, key_exprs, key_types, bound_args=bound_args)
        for pname in ("counters", "meters"):
            p = d.prop(pname)
            if p is None:
                continue
            if not isinstance(p.value, ast.Name):
                raise _err(p, f"table property {pname} must name a direct_counter/direct_meter instance")
            b = scope.lookup(p.value.name)
            if b is None or b.kind != "extern":
                raise _err(p, f"unknown {pname} instance '{p.value.name}'")
            inst = b.info
            if pname == "counters":
                if inst.type.name not in ("direct_counter", "DirectCounter"):
                    raise _err(p, f"'{p.value.name}' is not a direct counter")
                info.direct_counter = inst.fq_name
                self.info.counters[inst.fq_name].direct_table = fq
                trec.direct_counter_py = inst.py
                self._object(inst.py).params["table"] = fq
            else:
                if inst.type.name not in ("direct_meter", "DirectMeter"):
                    raise _err(p, f"'{p.value.name}' is not a direct meter")
                info.direct_meter = inst.fq_name
                self.info.meters[inst.fq_name].direct_table = fq
                trec.direct_meter_py = inst.py
                self._object(inst.py).params["table"] = fq
        self.info.tables[fq] = info
        scope.define(d.name, Binding("table", TableT(d), py=rec_py, decl=d, info=trec))

    def _table_action_call(self, e: ast.Expr, actions: list[ActionRecord], scope: Scope, table: Any,
                           what: str) -> model.ActionCall:
        if isinstance(e, ast.Name):
            name, args = e.name, []
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
            name, args = e.func.name, e.args
        else:
            raise _err(e, f"{what} must be an action call")
        rec = next((a for a in actions if a.decl.name == name), None)
        if rec is None:
            raise _err(e, f"{what} '{name}' is not in the actions of table {table.name}")
        params = [p for p in rec.decl.params if not p.direction]
        if len(args) == len(rec.decl.params) > len(params):
            args = args[len(rec.decl.params) - len(params):]  # directional ones: bound in the actions list
        if len(args) != len(params):
            raise _err(e, f"action {name} takes {len(params)} arguments, {what} gives {len(args)}")
        values = {}
        for p, a in zip(params, args):
            t = self.resolve_type(p.type_ref, rec.scope)
            values[p.name] = self.const_eval(a.value, scope, t) & ((1 << self._cp_width(t, p)) - 1)
        return model.ActionCall(rec.fq_name, values)

    def _const_entry(self, en: ast.EntryNode, info: model.TableInfo, actions: list[ActionRecord],
                     key_types: list[P4Type], scope: Scope, table: Any) -> model.TableEntry:
        ks = en.keyset
        items = ks.items if isinstance(ks, ast.KsTuple) else [ks]
        if len(items) != len(info.keys):
            raise _err(en, f"entry has {len(items)} key values, table {table.name} has {len(info.keys)} keys")
        match: dict[str, model.FieldMatch] = {}
        for k, item in zip(info.keys, items):
            full = (1 << k.bitwidth) - 1
            if isinstance(item, ast.KsDefault):
                continue
            if isinstance(item, ast.KsExpr):
                v = self.const_eval(item.expr, scope) & full
                m: model.FieldMatch = {"exact": lambda: model.Exact(v), "ternary": lambda: model.Ternary(v, full),
                                       "lpm": lambda: model.Lpm(v, k.bitwidth), "range": lambda: model.Range(v, v),
                                       "optional": lambda: model.Optional(v)}[k.match_kind]()
            elif isinstance(item, ast.KsMask):
                v = self.const_eval(item.value, scope) & full
                mask = self.const_eval(item.mask, scope) & full
                if k.match_kind == "ternary":
                    m = model.Ternary(v & mask, mask)
                elif k.match_kind == "lpm":
                    plen = bin(mask).count("1")
                    if mask != (full >> (k.bitwidth - plen) << (k.bitwidth - plen) if plen else 0):
                        raise _err(item, "lpm mask must be a prefix")
                    m = model.Lpm(v & mask, plen)
                else:
                    raise _err(item, f"a mask is not allowed for a {k.match_kind} key")
            elif isinstance(item, ast.KsRange):
                if k.match_kind != "range":
                    raise _err(item, f"a range is not allowed for a {k.match_kind} key")
                m = model.Range(self.const_eval(item.low, scope) & full, self.const_eval(item.high, scope) & full)
            else:
                raise _err(item, "unsupported key value in entry")
            match[k.name] = m
        call = self._table_action_call(
            ast.Call(ast.Name(en.action.name, pos=en.action.pos), en.action.args or [], pos=en.action.pos),
            actions, scope, table, "entry action")
        prio = 0
        if info.needs_priority:
            prio = self.const_eval(en.priority, scope) if en.priority is not None else -1
        return model.TableEntry(match, call, prio, is_const=True)

    @staticmethod
    def _legacy_entry_priorities(entries: list[ast.EntryNode], info: model.TableInfo) -> None:
        """p4c's older `@priority(N)` entry annotation: p4c gives bmv2 N for such an entry and
        its position (1, 2, ...) to the others, and in bmv2 the smaller value wins. Turned into
        p4sim's larger-wins priorities."""
        annos = [ast.find_annotation(en.annotations, "priority") for en in entries]
        if not info.needs_priority or not any(annos) or any(en.priority is not None for en in entries):
            return
        bmv2: list[int] = []
        for i, a in enumerate(annos):
            if a is not None and not a.body.strip().isdigit():
                raise _err(a, "@priority needs a decimal number")
            bmv2.append(int(a.body) if a is not None else i + 1)
        top = max(bmv2) + 1
        for e, b in zip(info.const_entries, bmv2):
            e.priority = top - b

    # ======================================================================== local decls
    def compile_local_decl(self, d: ast.Decl, ctx: BodyCtx) -> None:
        self._check_redeclared(d, ctx.scope)
        if isinstance(d, ast.ConstDecl):
            t = self.resolve_type(d.type_ref, ctx.scope)
            v = self.const_eval(d.value, ctx.scope, t)
            ctx.scope.define(d.name, Binding("const", t, py=repr(v), value=v))
            return
        if isinstance(d, ast.Instantiation):
            self._declare_instance(d, ctx)
            return
        assert isinstance(d, ast.VarDecl)
        t = self.resolve_type(d.type_ref, ctx.scope)
        if isinstance(t, (VoidT, DontCareT, ExternT, BlockT)):
            raise _err(d, f"cannot declare a variable of type {t}")
        pyn = self.unique_local(d.name)
        if d.init is not None:
            code = self.expr_as(d.init, t, ctx)
            ctx.w.line(f"{pyn} = {self.copy_if_compound(code, t)}")
        else:
            ctx.w.line(f"{pyn} = {self.default_value_code(t)}")
        ctx.scope.define(d.name, Binding("value", t, py=pyn, decl=d))

    @staticmethod
    def copy_if_compound(code: str, t: P4Type) -> str:
        if isinstance(t, (StructT, StackT)):
            return f"{code}.copy()"
        return code

    # ======================================================================== statements
