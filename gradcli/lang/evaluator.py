"""Running a parsed program against the engine (SPEC §2-§3): the evaluator.

:class:`Evaluator` runs statements one by one and evaluates expressions with explicit stacks:
a 10,000-deep nesting, a 100,000-term sum or ``with`` blocks nested 500 deep never touch
Python's recursion limit. What each statement and each kind of expression does is looked up
in one table per kind (:data:`_STATEMENTS`, :data:`_EXPRESSIONS`). Values and operators are
:mod:`gradcli.lang.values`; everything a program can name or call goes through
:mod:`gradcli.lang.sandbox`.

Commands watch a run through :class:`Observer` objects (``Evaluator(observers=[...])``):
``gradcli graph`` remembers names and the last tensor (:mod:`gradcli.cli.graph`), ``gradcli
check`` numbers leaves and wraps backward calls (:mod:`gradcli.cli.check`).
"""

from __future__ import annotations

from functools import partial

from ..autograd.grad_mode import no_grad, set_grad_enabled
from ..autograd.tensor import Tensor
from ..errors import CheckFailed, GradcliError, GradNameError, GradTypeError, LimitError
from . import sandbox
from .ast import (
    Assert, Assign, Attribute, AugAssign, BinOp, Call, Compare, Const, Del, EllipsisLit, ExprStmt,
    Lambda, ListExpr, Name, Num, Slice, Str, Subscript, TupleExpr, UnaryOp, With,
)
from .implicit_backward import run_implicit_backward
from ..ops.registry import INPLACE_OPERATORS
from .sandbox import CONSTANTS, EXPLICIT_BACKWARD, registered_builtins, suggest
from .values import (
    UserFunction, binary_op, compare, display, subscript, translate_exception, type_name, unary_op,
    unpack,
)


# ------------------------------------------------------------------------------ results

class Check:
    """One ``assert`` of the program: its line, whether it held, its message."""
    __slots__ = ("line", "passed", "message")

    def __init__(self, line, passed, message):
        self.line, self.passed, self.message = line, passed, message


class RunResult:
    """What a program did: its variables, output, checks, and whether backward ran."""

    def __init__(self):
        self.variables: list[tuple[str, object]] = []
        self.printed: list[str] = []
        self.checks: list[Check] = []
        self.backward = "none"
        self.note: str | None = None
        self.error: GradcliError | None = None
        self.last_value = None

    @property
    def tensors(self):
        return [(n, v) for n, v in self.variables if isinstance(v, Tensor)]


# ------------------------------------------------------------------------------ hooks

class Observer:
    """Watches a run. Subclass it, override what you need, and pass instances to
    ``Evaluator(observers=[...])``; they are called in that order."""

    def on_bind(self, name: str, value) -> None:
        """After ``name`` was bound to ``value`` (assignment, ``+=``, a ``-l``/``-g`` leaf)."""

    def before_statement(self, stmt) -> None:
        """Before a simple statement runs (``with`` blocks: before each statement inside)."""

    def after_statement(self, stmt, value) -> None:
        """After a simple statement ran; ``value`` is what it computed (an assignment's or an
        expression's value; None for ``+=``, ``assert``, ``del``)."""

    def on_call(self, fn, args, kwargs, node, call_next):
        """Around every call of a function or method: return ``call_next(fn, args, kwargs,
        node)`` (the call, through the observers after this one), or what should stand for
        it. ``node`` is the ``Call`` node (the statement, for a ``+=`` on a tensor)."""
        return call_next(fn, args, kwargs, node)


# ------------------------------------------------------------------------------ the evaluator

class Evaluator:
    """Evaluates statements one by one, keeping variables in order of first binding."""

    def __init__(self, *, on_print=None, auto_backward: bool = True, observers=()):
        self.env: dict[str, object] = {}
        self.order: list[str] = []
        self.on_print = on_print
        self.auto_backward = auto_backward
        self.result = RunResult()
        self.explicit_backward = False
        self.last_stmt = None
        self.last_value = None
        self.builtins = dict(registered_builtins())
        self.builtins["print"] = self._print
        self.observers = list(observers)
        call = self._invoke
        for observer in reversed(self.observers):
            call = partial(observer.on_call, call_next=call)
        self._call = call  # the first observer's on_call, ..., then the call itself

    # ----------------------------------------------------------------- running a program
    def run(self, program) -> RunResult:
        """Run every statement; stop at the first error (recorded in ``result.error``)."""
        try:
            self._run_block(program.body)
            if self.explicit_backward:
                self.result.backward = "explicit"
            elif self.auto_backward:
                run_implicit_backward(self.result, self.last_stmt, self.last_value)
        except GradcliError as err:
            self.result.error = err
            if self.explicit_backward:
                self.result.backward = "explicit"
        self.result.variables = [(n, self.env[n]) for n in self.order if n in self.env]
        self.result.last_value = self.last_value
        return self.result

    def run_statement_source(self, name: str, value_node, requires_grad: bool, where: str):
        """Bind a leaf declared on the command line (``-l``/``-g``)."""
        value = self.evaluate(value_node)
        if requires_grad:
            if not isinstance(value, Tensor):
                raise GradTypeError(f"{where}: only tensors can require grad, got {type_name(value)}")
            if value.grad_fn is None:
                value.requires_grad_(True)
        self._bind(name, value)

    def _run_block(self, body) -> None:
        # An explicit stack of (statements, position, context manager) frames: nested
        # ``with`` blocks never recurse.
        frames = [[body, 0, None]]
        try:
            while frames:
                frame = frames[-1]
                stmts, i, _ = frame
                if i >= len(stmts):
                    frames.pop()
                    if frame[2] is not None:
                        frame[2].__exit__(None, None, None)
                    continue
                frame[1] = i + 1
                stmt = stmts[i]
                if isinstance(stmt, With):
                    ctx = self._context(stmt)
                    ctx.__enter__()
                    self.last_stmt = stmt
                    frames.append([stmt.body, 0, ctx])
                    continue
                self._exec(stmt)
        finally:
            for frame in reversed(frames):
                if frame[2] is not None:
                    frame[2].__exit__(None, None, None)

    def _context(self, stmt):
        ctx = self.evaluate(stmt.context)
        if not isinstance(ctx, (no_grad, set_grad_enabled)):
            raise GradTypeError("with expects no_grad(), enable_grad() or set_grad_enabled(flag), "
                                f"not {type_name(ctx)}").at(stmt.context.line, stmt.context.column)
        return ctx

    def _exec(self, stmt) -> None:
        for observer in self.observers:
            observer.before_statement(stmt)
        self.last_stmt = stmt
        self.last_value = None
        execute = _STATEMENTS.get(stmt.__class__)
        if execute is None:
            raise GradTypeError(f"unsupported statement {type(stmt).__name__}").at(stmt.line, stmt.column)
        execute(self, stmt)
        for observer in self.observers:
            observer.after_statement(stmt, self.last_value)

    def _bind(self, name: str, value) -> None:
        if name not in self.env and name not in self.order:
            self.order.append(name)
        elif name not in self.env:
            self.order.remove(name)
            self.order.append(name)
        self.env[name] = value
        for observer in self.observers:
            observer.on_bind(name, value)

    # ----------------------------------------------------------------- statements
    def _assign(self, stmt) -> None:
        value = self.evaluate(stmt.value)
        if stmt.unpack:
            try:
                values = unpack(value, len(stmt.targets))
            except GradTypeError as err:
                raise err.at(stmt.line, stmt.column)
            for name, v in zip(stmt.targets, values):
                self._bind(name, v)
        else:
            self._bind(stmt.targets[0], value)
        self.last_value = value

    def _expr_stmt(self, stmt) -> None:
        self.last_value = self.evaluate(stmt.value)

    def _aug_assign(self, stmt) -> None:
        target = stmt.target
        if isinstance(target, Name):
            current = self._lookup(target.id, target, {})
        else:
            current = self.evaluate(target)
        value = self.evaluate(stmt.value)
        if isinstance(current, Tensor):  # in place, as torch does: w.data -= g
            self._call(INPLACE_OPERATORS[stmt.op], (current, value), {}, stmt)
            result = current
        else:
            result = binary_op(stmt.op, current, value)
            if isinstance(target, Attribute):
                raise GradTypeError("can only update tensors in place through an attribute").at(stmt.line, stmt.column)
        if isinstance(target, Name):
            self._bind(target.id, result)

    def _assert(self, stmt) -> None:
        value = self.evaluate(stmt.test)
        message = None if stmt.msg is None else self.evaluate(stmt.msg)
        if isinstance(value, Tensor):
            if value.numel() != 1:
                raise GradTypeError("Boolean value of Tensor with more than one value is ambiguous "
                                    "(use .all() or allclose)").at(stmt.test.line, stmt.test.column)
            passed = bool(value.item())
        else:
            passed = bool(value)
        text = message if isinstance(message, str) or message is None else display(message)
        self.result.checks.append(Check(stmt.line, passed, text))
        if not passed:  # as Python's assert: the program stops here (exit 1, kind "check")
            raise CheckFailed("assertion failed" + (f": {text}" if text else ""), line=stmt.line,
                              column=stmt.column)

    def _del(self, stmt) -> None:
        for name, node in zip(stmt.names, stmt.targets):
            if name not in self.env:
                raise self._unknown(name, node)
            del self.env[name]

    # ----------------------------------------------------------------- expressions
    def evaluate(self, node, scope=None):
        """Evaluate an expression iteratively (explicit stack; no recursion on depth).

        Stack entries are ``(node, None, 0)`` for a node to visit, and ``(node, combine,
        count)`` once its ``count`` children are being evaluated; their values are then the
        last ``count`` entries of ``values``, and ``combine`` makes the node's value of them.
        Leaves (names, literals, lambdas) have their value at once."""
        scope = scope if scope is not None else {}
        stack = [(node, None, 0)]
        values: list = []
        push = stack.append
        pop = stack.pop
        while stack:
            n, combine, count = pop()
            if combine is None:
                rule = _EXPRESSIONS.get(n.__class__)
                if rule is None:
                    raise GradTypeError(f"unsupported expression {n.__class__.__name__}")
                children, combine = rule
                if children is None:  # a leaf
                    values.append(combine(self, n, (), scope))
                    continue
                kids = children(n)
                push((n, combine, len(kids)))
                for child in reversed(kids):
                    push((_NONE_CHILD, None, 0) if child is None else (child, None, 0))
                continue
            try:
                if count:
                    args = values[len(values) - count:]
                    del values[len(values) - count:]
                else:
                    args = []
                values.append(combine(self, n, args, scope))
            except GradcliError as err:
                raise err.at(n.line, n.column)
            except RecursionError:
                raise LimitError("maximum recursion depth exceeded: a lambda or hook that calls itself (directly "
                                 "or through backward()), or values nested too deeply").at(n.line, n.column) from None
            except (ArithmeticError, ValueError, TypeError, IndexError, MemoryError) as exc:
                raise translate_exception(exc).at(n.line, n.column) from None
        return values[-1]

    def _lookup(self, name, node, scope):
        if name in scope:
            return scope[name]
        if name in self.env:
            return self.env[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in self.builtins:
            raise GradTypeError(f"'{name}' is a function: call it, e.g. {name}(...)").at(node.line, node.column)
        raise self._unknown(name, node, scope)

    def _unknown(self, name, node, scope=None):
        candidates = set(self.env) | set(CONSTANTS) | set(self.builtins) | set(scope or ())
        return GradNameError(f"name '{name}' is not defined{suggest(name, candidates)}").at(node.line, node.column)

    # ----------------------------------------------------------------- calls
    def _eval_call(self, n, args, scope):
        func = n.func
        nkw = len(n.kwargs)
        kwargs = {}
        if nkw:
            for (key, _), value in zip(n.kwargs, args[len(args) - nkw:]):
                kwargs[key] = value
            args = args[:len(args) - nkw]
        if func.__class__ is Name:
            name = func.id
            if name in scope or name in self.env:
                target = scope[name] if name in scope else self.env[name]
                if not isinstance(target, UserFunction):
                    raise GradTypeError(f"'{type_name(target)}' object is not callable")
                return self._call(target, args, kwargs, n)
            fn = self.builtins.get(name)
            if fn is None:
                raise GradNameError(f"unknown function '{name}'{suggest(name, self.builtins)}")
            return self._call(fn, args, kwargs, n)
        if func.__class__ is Attribute:
            obj, args = args[0], args[1:]
            name = func.attr
            fn = sandbox.method(obj, name)
            if name == "backward" or name == "grad":
                self.explicit_backward = True
            return self._call(fn, (obj, *args), kwargs, n)
        target = args[0]
        if not isinstance(target, UserFunction):
            raise GradTypeError(f"'{type_name(target)}' object is not callable")
        return self._call(target, args[1:], kwargs, n)

    def _invoke(self, fn, args, kwargs, node):
        """The call itself, once the observers have seen it."""
        sandbox.check_arguments(args, kwargs)
        if fn is EXPLICIT_BACKWARD[0] or fn is EXPLICIT_BACKWARD[1]:
            self.explicit_backward = True
        return sandbox.call(fn, args, kwargs)

    def _print(self, *args, sep=" ", end="\n"):
        text = str(sep).join(display(a) for a in args)
        self.result.printed.append(text)
        if self.on_print is not None:
            self.on_print(text + ("" if end == "\n" else str(end)))
        return None


# ------------------------------------------------------------------------------ the dispatch tables

_STATEMENTS = {
    Assign: Evaluator._assign,
    ExprStmt: Evaluator._expr_stmt,
    AugAssign: Evaluator._aug_assign,
    Assert: Evaluator._assert,
    Del: Evaluator._del,
}


class _NoneChild:
    """Stands for an absent part of a slice (``x[1:]``) on the evaluation stack."""
    __slots__ = ()
    line = column = 0


_NONE_CHILD = _NoneChild()


def _call_children(n):
    func = n.func
    if func.__class__ is Name:  # a function: looked up by name when called
        head = ()
    elif func.__class__ is Attribute:  # a method: its object is evaluated, the name looked up
        head = (func.value,)
    else:
        head = (func,)
    return (*head, *n.args, *(v for _, v in n.kwargs))


# node class -> (children, combine): ``children(node)`` lists the sub-expressions to evaluate
# first (None: a leaf), ``combine(evaluator, node, their values, scope)`` gives the node's value.
_EXPRESSIONS = {
    Name: (None, lambda ev, n, args, scope: ev._lookup(n.id, n, scope)),
    Num: (None, lambda ev, n, args, scope: n.value),
    Str: (None, lambda ev, n, args, scope: n.value),
    Const: (None, lambda ev, n, args, scope: n.value),
    EllipsisLit: (None, lambda ev, n, args, scope: Ellipsis),
    Lambda: (None, lambda ev, n, args, scope: UserFunction(n.param, n.body, ev, scope)),
    _NoneChild: (None, lambda ev, n, args, scope: None),
    BinOp: (lambda n: (n.left, n.right), lambda ev, n, args, scope: binary_op(n.op, args[0], args[1])),
    UnaryOp: (lambda n: (n.operand,), lambda ev, n, args, scope: unary_op(n.op, args[0])),
    Compare: (lambda n: (n.left, n.right), lambda ev, n, args, scope: compare(n.op, args[0], args[1])),
    Attribute: (lambda n: (n.value,), lambda ev, n, args, scope: sandbox.attribute(args[0], n.attr)),
    Call: (_call_children, lambda ev, n, args, scope: ev._eval_call(n, args, scope)),
    Subscript: (lambda n: (n.value, *n.index), lambda ev, n, args, scope: subscript(args[0], args[1:])),
    Slice: (lambda n: (n.start, n.stop, n.step), lambda ev, n, args, scope: slice(*args)),
    ListExpr: (lambda n: tuple(n.items), lambda ev, n, args, scope: list(args)),
    TupleExpr: (lambda n: tuple(n.items), lambda ev, n, args, scope: tuple(args)),
}
