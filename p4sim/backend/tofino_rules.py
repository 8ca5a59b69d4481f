"""Tofino 1 rules that p4sim enforces for TNA programs (``--arch tna``) so that CI catches what
the Tofino compiler (bf-p4c / p4c-barefoot) would refuse. Only rules that can be decided on one
construct are checked here; stage, memory and hash-unit fit need the real compiler.

* RegisterAction bodies must map onto one stateful ALU (SALU) instruction:
  - no shift, multiplication, division or modulo (Tofino 1's SALU has none; constant
    expressions are folded by the compiler and allowed);
  - at most 2 comparisons (the SALU has 2 comparison units; ``a == b`` and ``a != b`` are one
    comparison, as are ``a < b`` and ``a >= b``), none against the constant -2^31 (the back end
    negates a comparison's constant, and 2^31 is not a constant the SALU can hold — bfas:
    "constant value 2147483648 too large for stateful alu"; ``x != -2^31`` is ``x >= -(2^31-1)``);
  - at most 2 different updates of each register word (``value``, or each half of a paired
    register), each one operation on two operands (register word, metadata/header field or
    constant): the SALU has two ALUs per word; the result is one output value (the signature
    has at most one ``out`` parameter), and at most 2 different non-zero constants are output
    (they are driven through the high word's two ALUs; 0 is what an undriven output reads —
    bfas: "instruction slot ... used multiple times");
  - only assignments, ``if``/``else``, blocks and local declarations as statements.
* A register index (RegisterAction.execute, Register.read/write) is a plain field, a
  constant, or a ``Hash.get()`` result: arithmetic such as ``base + hash`` goes into a
  metadata field in an earlier action.
* Nested casts: three levels are refused, and so is widening a value that an inner cast
  narrowed (``(bit<32>)(bit<8>)x`` with ``x`` wider than 8 bits).
* A stateful ALU reads at most 2 PHV fields over all the RegisterActions of its register
  (bf-p4c: "requires more than 2 PHV inputs"): pass one input field per use, filled earlier.
* An action drives at most one stateful-ALU output (bf-p4c: "At most one stateful ALU
  operation with a given address is allowed per action"): one ``x = ra.execute(i)`` per action.
* A gateway (an ``if`` in a control's apply block) compares a field with a constant, or two
  fields for (in)equality, but cannot order two fields (bf-p4c: "one operand ... must be
  constant"): compute the difference into a field first, or compare inside a RegisterAction.

These checks run only for TNA programs; v1model programs are unaffected.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..frontend import ast
from ..frontend.types import BitT
from .context import BodyCtx, Scope, _err

if TYPE_CHECKING:
    from .compiler import Compiler

_NO_SALU_OP = {"<<": "shift", ">>": "shift", "*": "multiplication", "/": "division",
               "%": "modulo"}
_RELATIONS = {"==", "!=", "<", ">", "<=", ">="}
_ALU_OPS = {"+", "-", "|+|", "|-|", "&", "|", "^"}
SALU_COMPARISONS = 2
SALU_ALUS_PER_WORD = 2
SALU_PHV_INPUTS = 2
SALU_CONSTANT_OUTPUTS = 2
SALU_UNNEGATABLE = -(1 << 31)      # a comparison's constant is negated into a signed 32-bit one



def _render(e: Any) -> str:
    """A position-free rendering of an expression (to tell equal comparisons and updates)."""
    if isinstance(e, ast.IntLit):
        return str(e.value)
    if isinstance(e, ast.BoolLit):
        return str(e.value).lower()
    if isinstance(e, ast.Name):
        return e.name
    if isinstance(e, ast.Member):
        return f"{_render(e.expr)}.{e.member}"
    if isinstance(e, ast.TypeMember):
        return f"{getattr(e.type_ref, 'name', '?')}.{e.member}"
    if isinstance(e, ast.Slice):
        return f"{_render(e.expr)}[{_render(e.high)}:{_render(e.low)}]"
    if isinstance(e, ast.Index):
        return f"{_render(e.expr)}[{_render(e.index)}]"
    if isinstance(e, ast.BinOp):
        return f"({_render(e.left)} {e.op} {_render(e.right)})"
    if isinstance(e, ast.UnaryOp):
        return f"({e.op}{_render(e.expr)})"
    if isinstance(e, ast.Cast):
        tr = e.type_ref
        w = getattr(tr, "width", None)
        return f"(({getattr(tr, 'name', '') or ('bit' if w is not None else '?')}{w or ''}){_render(e.expr)})"
    if isinstance(e, ast.Call):
        return f"{_render(e.func)}({', '.join(_render(a.value) for a in e.args)})"
    return type(e).__name__


def _is_const(c: "Compiler", e: ast.Expr, scope: "Scope") -> bool:
    if isinstance(e, (ast.IntLit, ast.BoolLit)):
        return True
    try:
        ok, _, _ = c.try_const(e, scope)
    except Exception:          # a non-constant expression may fail to fold in any way
        return False
    return bool(ok)


# ============================================================================ RegisterAction
class _SaluCheck:
    def __init__(self, c: "Compiler", what: str, fn: ast.FunctionDecl, scope: "Scope") -> None:
        self.c = c
        self.what = what
        self.scope = scope
        params = fn.proto.params
        self.value = params[0].name
        self.rv = params[1].name if len(params) > 1 else None
        self.comparisons: dict[tuple, ast.Expr] = {}
        self.updates: dict[str, dict[str, ast.Node]] = {}
        self.constant_outputs: dict[int, ast.Node] = {}
        self.locals: set[str] = set()

    # ------------------------------------------------------------ statements
    def stmt(self, s: ast.Node) -> None:
        if isinstance(s, ast.Block):
            for item in s.items:
                self.stmt(item)
        elif isinstance(s, ast.Assign):
            self.assign(s)
        elif isinstance(s, ast.If):
            self.cond(s.cond)
            self.stmt(s.then)
            if s.otherwise is not None:
                self.stmt(s.otherwise)
        elif isinstance(s, ast.VarDecl):
            self.locals.add(s.name)
            if s.init is not None:
                self.expr(s.init)
        elif isinstance(s, (ast.Empty, ast.ConstDecl)):
            pass
        elif isinstance(s, ast.Return) and s.value is None:
            pass
        else:
            kind = {ast.CallStmt: "a method call", ast.Switch: "a switch statement",
                    ast.Exit: "exit", ast.Return: "return with a value"}.get(type(s), type(s).__name__)
            raise _err(s, f"{self.what}: {kind} cannot run in Tofino 1's stateful ALU (a "
                          "RegisterAction body holds assignments and if/else only)")

    def assign(self, s: ast.Assign) -> None:
        value = s.value
        if s.op is not None:                       # `x op= y` is `x = x op y`
            self.forbidden_op(s.op, s)
            value = ast.BinOp(s.op, s.target, s.value, pos=s.pos)
        self.expr(value)
        if isinstance(s.target, ast.Name) and s.target.name == self.rv:
            self.constant_output(value, s)
        word = self.register_word(s.target)
        if word is None:
            return
        if not self.one_alu_op(value):
            raise _err(s.value, f"{self.what}: expression too complex for Tofino 1's stateful "
                                f"ALU: an update of '{_render(s.target)}' is one operation on two "
                                "operands (register word, field or constant); compute the rest "
                                "in an earlier action into a metadata field")
        ups = self.updates.setdefault(word, {})
        ups.setdefault(_render(value), s)
        if len(ups) > SALU_ALUS_PER_WORD:
            raise _err(s, f"{self.what}: {len(ups)} different updates of '{word}', Tofino 1's "
                          f"stateful ALU has {SALU_ALUS_PER_WORD} ALUs per register word")

    def constant_output(self, value: ast.Expr, s: ast.Assign) -> None:
        ok, v, _ = self.c.try_const(value, self.scope)
        if not ok or not isinstance(v, int) or v == 0:
            return
        self.constant_outputs.setdefault(v, s)
        if len(self.constant_outputs) > SALU_CONSTANT_OUTPUTS:
            raise _err(s, f"{self.what}: outputs {len(self.constant_outputs)} different non-zero "
                          f"constants, Tofino 1's stateful ALU drives at most "
                          f"{SALU_CONSTANT_OUTPUTS} (through its high word's ALUs); let one of "
                          "the answers be 0, which an output the ALU does not drive reads")

    def register_word(self, target: ast.Expr) -> str | None:
        if isinstance(target, ast.Name) and target.name == self.value:
            return self.value
        if (isinstance(target, ast.Member) and isinstance(target.expr, ast.Name)
                and target.expr.name == self.value):
            return f"{self.value}.{target.member}"
        return None

    def operand(self, e: ast.Expr) -> bool:
        if _is_const(self.c, e, self.scope):
            return True
        if isinstance(e, ast.Cast):
            return self.operand(e.expr)
        if isinstance(e, (ast.Name, ast.Member, ast.Slice)):
            return True
        return False

    def one_alu_op(self, e: ast.Expr) -> bool:
        if self.operand(e):
            return True
        if isinstance(e, ast.Cast):
            return self.one_alu_op(e.expr)
        if isinstance(e, ast.UnaryOp) and e.op in ("~", "-"):
            return self.operand(e.expr)
        if isinstance(e, ast.BinOp) and e.op in _ALU_OPS:
            return self.operand(e.left) and self.operand(e.right)
        if isinstance(e, ast.Conditional):      # predicated: each arm is an update of its own
            return self.one_alu_op(e.then) and self.one_alu_op(e.otherwise)
        return False

    # ------------------------------------------------------------ expressions
    def forbidden_op(self, op: str, node: ast.Node) -> None:
        if op in _NO_SALU_OP:
            raise _err(node, f"{self.what}: '{op}' ({_NO_SALU_OP[op]}) in a RegisterAction: "
                             f"Tofino 1's stateful ALU has no {_NO_SALU_OP[op]} (its operations are "
                             "add, subtract, saturating add/subtract, and/or/xor/not, min/max and "
                             "compare); compute it outside the RegisterAction and pass it in "
                             "through metadata")

    def expr(self, e: Any) -> None:
        if not isinstance(e, ast.Expr) or _is_const(self.c, e, self.scope):
            return
        if isinstance(e, ast.BinOp):
            self.forbidden_op(e.op, e)
            if e.op in _RELATIONS:
                self.comparison(e)
            self.expr(e.left)
            self.expr(e.right)
        elif isinstance(e, ast.UnaryOp):
            self.expr(e.expr)
        elif isinstance(e, ast.Cast):
            self.expr(e.expr)
        elif isinstance(e, ast.Conditional):
            self.cond(e.cond)
            self.expr(e.then)
            self.expr(e.otherwise)
        elif isinstance(e, (ast.Slice, ast.Member, ast.Index)):
            self.expr(e.expr)
        elif isinstance(e, ast.Call):
            for a in e.args:
                self.expr(a.value)

    def cond(self, e: ast.Expr) -> None:
        self.expr(e)

    def comparison(self, e: ast.BinOp) -> None:
        for side in (e.left, e.right):
            ok, v, _ = self.c.try_const(side, self.scope)
            if ok and v == SALU_UNNEGATABLE:
                raise _err(e, f"{self.what}: a comparison with -2^31: the Tofino back end negates "
                              "the constant into 2^31, which the stateful ALU cannot hold (bfas: "
                              "'constant value 2147483648 too large'); compare with "
                              "-(2^31 - 1) instead (x != -2^31 is x >= -(2^31 - 1))")
        a, b = _render(e.left), _render(e.right)
        if e.op in ("==", "!="):
            key: tuple = ("eq", frozenset((a, b)))
        elif e.op in ("<", ">="):
            key = ("lt", a, b)
        else:                                      # a > b is b < a; a <= b is !(b < a)
            key = ("lt", b, a)
        self.comparisons.setdefault(key, e)
        if len(self.comparisons) > SALU_COMPARISONS:
            raise _err(e, f"{self.what}: {len(self.comparisons)} comparisons, Tofino 1's stateful "
                          f"ALU has {SALU_COMPARISONS} comparison units (a == b and a != b count once)")


def check_register_action(c: "Compiler", d: ast.Instantiation, fn: ast.FunctionDecl,
                          scope: "Scope") -> None:
    """Refuse a TNA RegisterAction body that one Tofino 1 stateful ALU instruction cannot run."""
    _SaluCheck(c, f"RegisterAction {d.name}", fn, scope).stmt(fn.body)


# ============================================================================ register index
def _plain_field(e: ast.Expr) -> bool:
    if isinstance(e, ast.Name):
        return True
    if isinstance(e, ast.Member):
        return _plain_field(e.expr)
    if isinstance(e, ast.Slice):
        return _plain_field(e.expr)
    if isinstance(e, ast.Cast):                    # a width change of a field, not a computation
        return _plain_field(e.expr)
    return False


def _hash_get(e: ast.Expr, ctx: "BodyCtx") -> bool:
    if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Member) and e.func.member == "get"
            and isinstance(e.func.expr, ast.Name)):
        return False
    b = ctx.scope.lookup(e.func.expr.name)
    return b is not None and b.kind == "extern" and getattr(b.info.type, "name", None) == "Hash"


def check_register_index(c: "Compiler", call: ast.Call, what: str, e: ast.Expr,
                         ctx: "BodyCtx") -> None:
    """A Tofino 1 register index is a plain field, a constant or a Hash.get() result."""
    if _plain_field(e) or _hash_get(e, ctx) or _is_const(c, e, ctx.scope):
        return
    raise _err(e, f"{what}: the register index '{_render(e)}' is too complex for Tofino 1: "
                  "use a plain field, a constant or a Hash.get() result (compute the index into "
                  "a metadata field in an earlier action, e.g. hash, then mask, then add the base)")


# ============================================================================ nested casts
def _cast_width(c: "Compiler", e: ast.Cast, ctx: "BodyCtx") -> BitT | None:
    t = c.resolve_type(e.type_ref, ctx.scope)
    return t if isinstance(t, BitT) else None


def check_nested_cast(c: "Compiler", e: ast.Cast, ctx: "BodyCtx") -> None:
    """bf-p4c simplifies two nested casts unless the inner one narrows a value the outer one
    widens again; it refuses three or more levels. Constant expressions are folded first."""
    mid = e.expr
    if not isinstance(mid, ast.Cast) or _is_const(c, e, ctx.scope):
        return
    hint = "consider simplifying the nested casts (cast once, or slice, into a metadata field)"
    if isinstance(mid.expr, ast.Cast):
        raise _err(e, f"expression '{_render(e)}' is too complex for Tofino 1: three nested casts; "
                      + hint)
    outer_t, mid_t = _cast_width(c, e, ctx), _cast_width(c, mid, ctx)
    if outer_t is None or mid_t is None or outer_t.signed or mid_t.signed:
        return
    _, inner_t = c.type_of(mid.expr, ctx)
    if not isinstance(inner_t, BitT) or inner_t.signed:
        return
    if outer_t.width > mid_t.width and mid_t.width < inner_t.width:
        raise _err(e, f"expression '{_render(e)}' is too complex for Tofino 1: the inner cast "
                      f"narrows bit<{inner_t.width}> to bit<{mid_t.width}> and the outer one widens "
                      f"it to bit<{outer_t.width}>; " + hint)


# ============================================================================ Hash.get in expressions
def _children(n: Any):
    if not isinstance(n, ast.Node) and not isinstance(n, ast.Annotation):
        return
    for f in getattr(n, "__dataclass_fields__", {}):
        if f in ("pos", "type", "decl"):
            continue
        v = getattr(n, f, None)
        items = v if isinstance(v, (list, tuple)) else [v]
        for x in items:
            if isinstance(x, tuple):
                yield from (y for y in x if isinstance(y, ast.Node))
            elif isinstance(x, ast.Node):
                yield x


def _type_name(tr: Any) -> str | None:
    return getattr(tr, "name", None) or getattr(getattr(tr, "base", None), "name", None)


def check_hash_uses(program: ast.Program) -> None:
    """bf-p4c turns ``Hash.get()`` into the hash unit's output only where it is the whole value
    of an assignment (or a register index); inside an expression (``base + hash.get(...)``,
    ``hash.get(...) & mask``) it stops with an internal error. Assign it to a field first."""
    for d in program.declarations:
        if not isinstance(d, (ast.ControlDecl, ast.ParserDecl)):
            continue
        hashes = {x.name for x in d.locals
                  if isinstance(x, ast.Instantiation) and _type_name(x.type_ref) == "Hash"}
        if hashes:
            _walk_hash(d, None, hashes)


def _is_hash_get(e: Any, hashes: set[str]) -> bool:
    return (isinstance(e, ast.Call) and isinstance(e.func, ast.Member) and e.func.member == "get"
            and isinstance(e.func.expr, ast.Name) and e.func.expr.name in hashes)


def _walk_hash(n: Any, parent: Any, hashes: set[str]) -> None:
    if _is_hash_get(n, hashes):
        p = parent
        ok = ((isinstance(p, ast.Assign) and p.op is None and p.value is n)
              or (isinstance(p, ast.VarDecl) and p.init is n)
              or (isinstance(p, ast.Argument) and p.value is n))   # an extern argument (index)
        if not ok:
            raise _err(n, f"{n.func.expr.name}.get() inside an expression is not supported by "
                          "Tofino's compiler (it stops with an internal error): assign the hash to "
                          "a metadata field of its own, then mask or add to that field in a later "
                          "action")
    for ch in _children(n):
        _walk_hash(ch, n, hashes)


# ============================================================================ whole-program rules
_ORDERING = {"<", "<=", ">", ">="}


def _const_names(program: ast.Program) -> set[str]:
    return {d.name for d in program.declarations if isinstance(d, ast.ConstDecl)}


def _constant(e: Any, consts: set[str]) -> bool:
    """A literal, a declared constant, or arithmetic of those (the compiler folds it)."""
    if isinstance(e, (ast.IntLit, ast.BoolLit)):
        return True
    if isinstance(e, ast.Name):
        return e.name in consts
    if isinstance(e, ast.Cast):
        return _constant(e.expr, consts)
    if isinstance(e, ast.UnaryOp):
        return _constant(e.expr, consts)
    if isinstance(e, ast.BinOp):
        return _constant(e.left, consts) and _constant(e.right, consts)
    return False


def _field_root(e: Any) -> Any:
    while isinstance(e, (ast.Slice, ast.Cast)):
        e = e.expr
    return e


def _walk(n: Any):
    yield n
    for ch in _children(n):
        yield from _walk(ch)


def _register_action_inputs(ra: ast.Instantiation, consts: set[str]) -> dict[str, Any]:
    """The PHV fields a RegisterAction body reads: every field reference other than its own
    parameters (the register word, the output) and locals, and other than constants."""
    fns = [m for m in ra.members if isinstance(m, ast.FunctionDecl)]
    own = {p.name for f in fns for p in f.proto.params}
    own |= {n.name for f in fns for n in _walk(f.body) if isinstance(n, ast.VarDecl)}
    found: dict[str, Any] = {}
    for f in fns:
        for n in _walk(f.body):
            if isinstance(n, ast.Member):
                root = n
                while isinstance(root, ast.Member):
                    root = root.expr
                if isinstance(root, ast.Name) and root.name not in own and root.name not in consts:
                    found.setdefault(_render(n), n)
    # a member chain is reported once, by its longest form (meta.resubmit.x, not meta.resubmit)
    return {k: v for k, v in found.items()
            if not any(o != k and o.startswith(k + ".") for o in found)}


def _is_execute(e: Any, register_actions: set[str]) -> bool:
    return (isinstance(e, ast.Call) and isinstance(e.func, ast.Member)
            and e.func.member == "execute" and isinstance(e.func.expr, ast.Name)
            and e.func.expr.name in register_actions)


def check_salu_limits(program: ast.Program) -> None:
    """Per control: a register's RegisterActions read at most 2 PHV fields together; an action
    body assigns at most one RegisterAction output; apply-block conditions do not order two
    fields."""
    consts = _const_names(program)
    for d in program.declarations:
        if not isinstance(d, ast.ControlDecl):
            continue
        ras = [x for x in d.locals
               if isinstance(x, ast.Instantiation) and _type_name(x.type_ref) == "RegisterAction"]
        inputs: dict[str, dict[str, Any]] = {}
        for ra in ras:
            if not ra.args:
                continue
            reg = _render(_field_root(ra.args[0].value))
            seen = inputs.setdefault(reg, {})
            for name, node in _register_action_inputs(ra, consts).items():
                seen.setdefault(name, node)
                if len(seen) > SALU_PHV_INPUTS:
                    raise _err(node, f"RegisterAction {ra.name}: register {reg}'s stateful ALU "
                                     f"would read {len(seen)} PHV fields ({', '.join(sorted(seen))}); "
                                     f"Tofino 1's reads at most {SALU_PHV_INPUTS} over all its "
                                     "RegisterActions: copy what each pass needs into one "
                                     "metadata field earlier")
        names = {ra.name for ra in ras}
        for a in d.locals:
            if isinstance(a, ast.ActionDecl):
                outputs = [n for n in _walk(a.body)
                           if isinstance(n, (ast.Assign, ast.VarDecl))
                           and _is_execute(n.value if isinstance(n, ast.Assign) else n.init, names)]
                if len(outputs) > 1:
                    raise _err(outputs[1], f"action {a.name}: {len(outputs)} RegisterAction outputs; "
                                           "a Tofino 1 action drives at most one stateful-ALU "
                                           "output: give each its own action")
        for n in _walk(d.body):
            if isinstance(n, ast.If):
                for e in _walk(n.cond):
                    if (isinstance(e, ast.BinOp) and e.op in _ORDERING
                            and not _constant(e.left, consts) and not _constant(e.right, consts)):
                        raise _err(e, f"condition '{_render(e.left)} {e.op} {_render(e.right)}' orders two fields; a Tofino 1 "
                                      "gateway compares a field with a constant (or two fields "
                                      "for equality): compute the difference into a field in "
                                      "an earlier action, or compare inside a RegisterAction")
