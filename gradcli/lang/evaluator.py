"""Running a parsed program against the engine (SPEC §2-§3): the evaluator.

:class:`Evaluator` runs statements one by one and evaluates expressions with explicit stacks:
a 10,000-deep nesting, a 100,000-term sum or ``with`` blocks nested 500 deep never touch
Python's recursion limit; blocks (``if``, loops, ``with``) run on a stack of frames, and calls
of the program's own functions on the driver's stack of generators (:meth:`Evaluator._drive`).
What each statement and each kind of expression does is looked up in one table per kind
(:data:`_BLOCKS`, :data:`gradcli.lang.statements.STATEMENTS`, :data:`_EXPRESSIONS`). An
expression that runs again (in a loop or a function) is compiled once to flat code
(:mod:`gradcli.lang.code`) and kept: a loop's statements cost a few microseconds each beyond
their ops (``benchmarks/bench_loop.py``). Values and operators are :mod:`gradcli.lang.values`;
everything a program can name or call goes through :mod:`gradcli.lang.sandbox`.

Commands watch a run through :class:`Observer` objects (``Evaluator(observers=[...])``):
``gradcli graph`` remembers names and the last tensor (:mod:`gradcli.cli.graph`), ``gradcli
check`` numbers leaves and wraps backward calls (:mod:`gradcli.cli.check`).
"""

from __future__ import annotations

import gc
import weakref
from functools import partial

from ..autograd.engine import detect_anomaly, set_detect_anomaly
from ..autograd.grad_mode import STATE as _GRAD, _DecoratorContextManager
from ..autograd.introspection import saved_tensors_hooks
from ..autograd.tensor import Tensor
from ..errors import GradcliError, GradNameError, GradSyntaxError, GradTypeError, LimitError
from ..limits import (DEADLINE, LIMITS, POLL_STEPS, check_output, poll, poll_memory, start_run,
                      timeout_error)
from . import modules, sandbox
from ..ops.inplace import call_with_out, takes_out
from ..ops.registry import BINARY_OPERATORS
from .ast import (
    Assign, Attribute, BinOp, BoolOp, Break, Call, Compare, Const, Continue, EllipsisLit, ExprStmt, For,
    FormattedValue, FString, If, IfExp, Lambda, ListComp, ListExpr, Name, Not, Num, Return, Slice, Str, Subscript,
    TupleExpr, UnaryOp, While, With, DictExpr,
)
from .code import APPLY, ATTRIBUTE, BINARY, CALL, COMPARE, CONST, JUMP, JUMP_UNLESS, NAME, SHORT, UNARY, compile_expression
from .implicit_backward import run_implicit_backward
from .modules import Module
from .statements import _EMPTY, STATEMENTS as _STATEMENTS, Check, Pending as _Pending, Statements  # noqa: F401
from .sandbox import CONSTANTS, EXPLICIT_BACKWARD, PYTHON_BUILTINS, TENSOR_ATTRS, TENSOR_METHODS, registered_builtins, suggest
from .values import (
    _MISSING, MAX_SEQUENCE, DIRECT_OPERATORS, BuiltinRef, UserFunction, binary_op, compare, display, iterate,
    make_dict, subscript,
    translate_exception, truth, type_name, unary_op, unpack,
)


# What ``with`` accepts: torch's grad-mode forms and the autograd context managers.
CONTEXT_MANAGERS = (_DecoratorContextManager, detect_anomaly, set_detect_anomaly, saved_tensors_hooks)


# ------------------------------------------------------------------------------ results

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

class _Push:
    """What a combine step returns when the node's value is another node's (``a and b``, ``x if c
    else y``): the walk evaluates that node in its place."""
    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node


_BACKWARD, _GRAD_FN = EXPLICIT_BACKWARD  # backward() and grad(): the program differentiates itself

# Kinds of block frames (statement stacks) besides a plain block.
_WITH, _FOR, _WHILE, _IF = "with", "for", "while", "if"
_DONE = object()



# What evaluating an expression may raise, and the error it becomes at the expression's node.
_LOCATED = (GradcliError, RecursionError, ArithmeticError, ValueError, TypeError, IndexError, MemoryError)


def _located(exc: BaseException, n) -> GradcliError:
    """``exc`` as gradcli's error at ``n``'s line and column: its own errors as they are, a
    RecursionError (a hook calling itself, values nested too deeply) as a limit, Python's
    arithmetic/value/type/index/memory errors as the SPEC's kinds (translate_exception)."""
    if isinstance(exc, GradcliError):
        return exc.at(n.line, n.column)
    if isinstance(exc, RecursionError):
        return LimitError("maximum recursion depth exceeded: a hook that calls itself (directly "
                          "or through backward()), or values nested too deeply").at(n.line, n.column)
    return translate_exception(exc).at(n.line, n.column)

class Evaluator(Statements):
    """Evaluates statements one by one, keeping variables in order of first binding.

    Control flow and calls never use Python's recursion: each block runs on an explicit stack
    of frames (:meth:`_block_gen`), expressions on an explicit stack of nodes (:meth:`_eval_gen`),
    and a call of the program's own function is a request (:class:`_Pending`) that the driver
    (:meth:`_drive`) answers by pushing a new generator on its stack, within ``--max-depth``.
    Every statement and loop iteration is a step, within ``--max-steps``."""

    def __init__(self, *, on_print=None, auto_backward: bool = True, observers=()):
        self.env: dict[str, object] = {}
        self.order: dict[str, None] = {}  # names in order of first binding (a dict: O(1) to look up)
        self.on_print = on_print
        self.auto_backward = auto_backward
        self.result = RunResult()
        self.explicit_backward = False
        self.last_stmt = None
        self.last_value = None
        self.steps = 0
        self._next_check = 0  # the step at which _check_steps runs next
        self.depth = 0
        self.builtins = dict(registered_builtins())
        self.builtins["print"] = _weakly(self._print)
        self.printed_chars = 0
        self.observers = list(observers)
        call = None
        if self.observers:
            call = _weakly(self._invoke)
            for observer in reversed(self.observers):
                call = partial(observer.on_call, call_next=call)
        # the first observer's on_call, ..., then the call itself; None: no observer, the call is
        # self._invoke (a bound method made at each call: one kept would be a reference cycle)
        self._call = call
        self._codes: dict = {}  # expression node -> its code, for those that run again (loops, functions)
        self._hot = False  # whether the statement running now is in a loop or a function

    # ----------------------------------------------------------------- running a program
    def run(self, program) -> RunResult:
        """Run every statement; stop at the first error (recorded in ``result.error``)."""
        try:
            self._drive(self._block_gen(program.body, None))
            if self.explicit_backward:
                self.result.backward = "explicit"
            elif self.auto_backward:
                run_implicit_backward(self.result, self.last_stmt, self.last_value)
        except GradcliError as err:
            self.result.error = err
            if self.explicit_backward:
                self.result.backward = "explicit"
        except RecursionError:
            self.result.error = LimitError("maximum recursion depth exceeded (values or hooks nested too deeply)")
        self.result.variables = [(n, self.env[n]) for n in self.order if n in self.env and _listed(self.env[n])]
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

    def evaluate(self, node, scope=None):
        """An expression's value (its calls of the program's functions run on the driver)."""
        return self._drive(self._eval_gen(node, scope if scope is not None else _EMPTY))

    def call_function(self, fn, args, kwargs):
        """Call one of the program's functions from Python (a hook run by backward)."""
        return self._drive(self._function_gen(fn, args, kwargs))

    def _drive(self, gen):
        """Run ``gen`` and the calls it requests, each a generator on this explicit stack; an
        error raised in a callee is thrown into its caller at the call, as Python would."""
        stack = [gen]
        value = error = None
        while True:
            current = stack[-1]
            try:
                if error is not None:
                    request, error = current.throw(error), None
                else:
                    request = current.send(value)
            except StopIteration as stop:
                stack.pop()
                if not stack:
                    return stop.value
                value = stop.value
                continue
            except Exception as exc:
                stack.pop()
                if not stack:
                    raise
                error, value = exc, None
                continue
            stack.append(self._function_gen(request.fn, request.args, request.kwargs))
            value = None

    def _tick(self, node) -> None:
        self.steps += 1
        if self.steps >= self._next_check:  # one comparison a step: the checks below are rare
            self._check_steps(node)

    def _check_steps(self, node) -> None:
        """Every POLL_STEPS steps (and the first): ``--max-steps``, and the memory that small
        tensors, lists and strings hold (:func:`gradcli.limits.poll_memory`)."""
        if self.steps > LIMITS.max_steps:
            raise LimitError(f"the program ran more than {LIMITS.max_steps:,} steps (statements and loop "
                             "iterations): an endless loop?", hint="raise it with --max-steps N"
                             ).at(node.line, node.column)
        self._next_check = min(self.steps + POLL_STEPS, LIMITS.max_steps + 1)
        if self.steps == 1:  # the program's first step: what the process holds now is not its
            start_run()
        try:
            poll_memory()
        except LimitError as exc:
            raise exc.at(node.line, node.column) from None

    def _function_gen(self, fn, args, kwargs):
        """One call of a program's function: its frame, within ``--max-depth``, in the grad mode
        its decorator asks for."""
        if self.depth >= LIMITS.max_depth:
            raise LimitError(f"maximum recursion depth exceeded: calls nested more than {LIMITS.max_depth:,} "
                             f"deep (in {fn.name})", hint="raise it with --max-depth N")
        scope = fn.bind(args, kwargs)
        self.depth += 1
        previous = _GRAD.enabled
        if fn.grad_mode is not None:
            _GRAD.enabled = fn.grad_mode
        try:
            if fn.is_lambda:
                self._hot = True  # a function's body runs again: its code is kept
                return (yield from self._eval_gen(fn.body, scope))
            return (yield from self._block_gen(fn.body, scope))
        finally:
            self.depth -= 1
            if fn.grad_mode is not None:
                _GRAD.enabled = previous

    # ----------------------------------------------------------------- blocks
    def _block_gen(self, body, scope):
        """Run a block (``scope`` None: the program's top level, else a call's variables) on an
        explicit stack of frames ``[statements, next index, kind, state, top, hot]``: nested
        blocks, loops and ``with`` never recurse. ``top``: the frame's statements are the
        program's own top-level ones (not in a function, loop or ``if``); ``hot``: they may run
        again (in a loop or a function), so their expressions' code is kept. Returns the value
        of a ``return``."""
        frames = [[body, 0, None, None, scope is None, scope is not None]]
        local = scope if scope is not None else _EMPTY
        try:
            while frames:
                frame = frames[-1]
                stmts = frame[0]
                i = frame[1]
                if i >= len(stmts):
                    kind = frame[2]
                    if kind is _FOR:
                        stmt, iterator = frame[3]
                        item = next(iterator, _DONE)
                        if item is _DONE:
                            frames.pop()
                        else:
                            self.steps += 1
                            if self.steps >= self._next_check:
                                self._check_steps(stmt)
                            target = stmt.target
                            if target.__class__ is Name:
                                self._assign_name(target.id, item, scope)
                            else:
                                self._bind_target(target, item, scope, stmt)
                            frame[1] = 0
                        continue
                    if kind is _WHILE:
                        stmt = frame[3]
                        self.steps += 1
                        if self.steps >= self._next_check:
                            self._check_steps(stmt)
                        self._hot = True
                        test = yield from self._eval_gen(stmt.test, local)
                        if self._truth(test, stmt.test):
                            frame[1] = 0
                        else:
                            frames.pop()
                        continue
                    frames.pop()
                    if kind is _WITH:
                        frame[3].__exit__(None, None, None)
                    continue
                frame[1] = i + 1
                stmt = stmts[i]
                self.steps += 1  # a step (--max-steps); the checks run every POLL_STEPS steps
                if self.steps >= self._next_check:
                    self._check_steps(stmt)
                self._hot = frame[5]
                execute = _STATEMENTS.get(stmt.__class__)
                if execute is None:  # a statement that opens or leaves a block
                    if stmt.__class__ is Return:
                        if scope is None:
                            if frame[4]:
                                self.last_stmt, self.last_value = stmt, None
                            raise GradSyntaxError("'return' outside function").at(stmt.line, stmt.column)
                        return None if stmt.value is None else (yield from self._eval_gen(stmt.value, scope))
                    yield from self._block_statement(stmt, scope, frames, frame)
                    continue
                # a simple statement (inline: this is the evaluator's most frequent path)
                if DEADLINE.expired and DEADLINE.live:  # --timeout or Ctrl-C: the signal's exception may have been swallowed
                    if DEADLINE.interrupted:
                        raise KeyboardInterrupt
                    raise timeout_error().at(stmt.line, stmt.column)
                top = frame[4]
                observed = scope is None and self.observers
                if observed:
                    for observer in self.observers:
                        observer.before_statement(stmt)
                if top:
                    self.last_stmt = stmt
                cls = stmt.__class__  # the two most frequent statements inline: one generator less
                if cls is Assign and not stmt.unpack:
                    value = yield from self._eval_gen(stmt.value, local)
                    self._assign_name(stmt.targets[0], value, scope)
                elif cls is ExprStmt:
                    value = yield from self._eval_gen(stmt.value, local)
                else:
                    value = yield from execute(self, stmt, scope)
                if top:
                    self.last_value = value
                if observed:
                    for observer in self.observers:
                        observer.after_statement(stmt, value)
            return None
        finally:
            for frame in reversed(frames):
                if frame[2] is _WITH:
                    frame[3].__exit__(None, None, None)

    def _block_statement(self, stmt, scope, frames, frame):
        """A statement that opens a block (pushed on ``frames``) or leaves a loop."""
        cls = stmt.__class__
        if frame[4]:
            self.last_stmt, self.last_value = stmt, None
        if cls is Break or cls is Continue:
            self._leave_loop(frames, stmt)
            return
        rule = _BLOCKS.get(cls)
        if rule is None:
            raise GradTypeError(f"unsupported statement {type(stmt).__name__}").at(stmt.line, stmt.column)
        new = yield from rule(self, stmt, scope)
        if new is not None:
            kind = new[2]
            new.append(frame[4] and kind is _WITH)  # top: the program's own level (a with block's too)
            new.append(frame[5] or kind is _FOR or kind is _WHILE)  # hot: runs again
            frames.append(new)

    @staticmethod
    def _leave_loop(frames, stmt) -> None:
        """``break``/``continue``: unwind to the innermost loop (leaving ``with`` blocks on the way)."""
        while frames and frames[-1][2] not in (_FOR, _WHILE):
            frame = frames.pop()
            if frame[2] is _WITH:
                frame[3].__exit__(None, None, None)
        if not frames:
            word = "break" if stmt.__class__ is Break else "continue"
            raise GradSyntaxError(f"'{word}' outside loop").at(stmt.line, stmt.column)
        if stmt.__class__ is Break:
            frames.pop()
        else:
            frames[-1][1] = len(frames[-1][0])

    def _if_gen(self, stmt, scope):
        test = yield from self._eval_gen(stmt.test, scope or _EMPTY)
        branch = stmt.body if self._truth(test, stmt.test) else stmt.orelse
        return [branch, 0, _IF, None] if branch else None

    def _for_gen(self, stmt, scope):
        value = yield from self._eval_gen(stmt.iter, scope or _EMPTY)
        try:
            iterator = iterate(value)
        except GradcliError as err:
            raise err.at(stmt.iter.line, stmt.iter.column)
        return [stmt.body, len(stmt.body), _FOR, (stmt, iterator)]  # at its end: the first item

    def _while_gen(self, stmt, scope):
        return [stmt.body, len(stmt.body), _WHILE, stmt]  # at its end: the first test
        yield  # a generator, as every block rule

    def _with_gen(self, stmt, scope):
        ctx = yield from self._eval_gen(stmt.context, scope or _EMPTY)
        if isinstance(ctx, BuiltinRef) and ctx.fn in (sandbox.no_grad, sandbox.enable_grad):
            ctx = ctx.fn()
        if not isinstance(ctx, CONTEXT_MANAGERS):
            raise GradTypeError("with expects no_grad(), enable_grad(), set_grad_enabled(flag), inference_mode(), "
                                "detect_anomaly() or saved_tensors_hooks(pack, unpack), "
                                f"not {type_name(ctx)}").at(stmt.context.line, stmt.context.column)
        entered = ctx.__enter__()
        if stmt.target:  # with EXPR as NAME: what __enter__ gave (None for grad modes)
            self._assign_name(stmt.target.id, entered, scope)
        return [stmt.body, 0, _WITH, ctx]

    def _truth(self, value, node) -> bool:
        try:
            return truth(value)
        except GradcliError as err:
            raise err.at(node.line, node.column)

    # ----------------------------------------------------------------- binding names
    def _bind(self, name: str, value) -> None:
        if name not in self.env:
            self.order.pop(name, None)  # bound again after del: it moves to the end
            self.order[name] = None
        self.env[name] = value
        for observer in self.observers:
            observer.on_bind(name, value)

    def _assign_name(self, name, value, scope) -> None:
        if scope is not None:
            scope[name] = value
        elif name in self.env and not self.observers:  # bound again, nobody watching: the usual case in a loop
            self.env[name] = value
        else:
            self._bind(name, value)

    def _bind_target(self, target, value, scope, stmt) -> None:
        """Bind a loop's target (a name or nested tuples of names) to ``value``; explicit stack."""
        stack = [(target, value)]
        while stack:
            node, v = stack.pop()
            if node.__class__ is Name:
                self._assign_name(node.id, v, scope)
                continue
            try:
                items = unpack(v, len(node.items))
            except GradcliError as err:
                raise err.at(stmt.line, stmt.column)
            stack.extend(reversed(list(zip(node.items, items))))

    # ----------------------------------------------------------------- expressions
    def _eval_gen(self, node, scope):
        """Evaluate an expression: one that runs again (in a loop or a function) by its code
        (:mod:`gradcli.lang.code`, compiled once and kept) on a stack of values, one that runs
        once by walking its tree (:meth:`_walk_gen`); no recursion on depth. A call of one of the program's functions is a :class:`_Pending`
        that this generator hands to the driver; its value comes back at the ``yield``."""
        code = self._codes.get(node)
        if code is None:
            if not self._hot:
                return (yield from self._walk_gen(node, scope))
            code = self._codes[node] = compile_expression(node, _EXPRESSIONS)
        values: list = []
        push = values.append
        pop = values.pop
        env = self.env
        i, end, n = 0, len(code), node
        try:
            while i < end:
                op, n, arg = code[i]
                i += 1
                if op == NAME:
                    if arg in scope:
                        push(scope[arg])
                    elif arg in env:
                        push(env[arg])
                    else:
                        push(self._lookup(arg, n, scope))
                elif op == CONST:
                    push(arg)
                elif op == BINARY:
                    b = pop()
                    a = values[-1]
                    if a.__class__ is Tensor and arg in DIRECT_OPERATORS[b.__class__]:
                        values[-1] = BINARY_OPERATORS[arg](a, b)
                    else:
                        values[-1] = binary_op(arg, a, b)
                elif op == ATTRIBUTE:
                    obj = values[-1]
                    get = TENSOR_ATTRS.get(arg) if obj.__class__ is Tensor else None
                    values[-1] = get(obj) if get is not None else sandbox.attribute(obj, arg)
                elif op == CALL:
                    if arg:
                        args = values[-arg:]
                        del values[-arg:]
                    else:
                        args = []
                    value = self._eval_call(n, args, scope)
                    if value.__class__ is _Pending:
                        value = yield value
                    push(value)
                elif op == APPLY:
                    count, combine = arg
                    if count:
                        args = values[-count:]
                        del values[-count:]
                    else:
                        args = []
                    push(combine(self, n, args, scope))
                elif op == COMPARE:
                    b = pop()
                    values[-1] = compare(arg, values[-1], b)
                elif op == UNARY:
                    values[-1] = unary_op(arg, values[-1])
                elif op == SHORT:
                    if truth(values[-1]) == (n.op == "or"):  # "or" stops at a true value, "and" at a false one
                        i = arg
                    else:
                        pop()
                elif op == JUMP_UNLESS:
                    if not truth(pop()):
                        i = arg
                elif op == JUMP:
                    i = arg
                else:  # LISTCOMP
                    push((yield from self._listcomp_gen(n, scope)))
        except _LOCATED as exc:
            raise _located(exc, n) from None
        return values[-1]

    def _walk_gen(self, node, scope):
        """Evaluate an expression once, walking its tree (explicit stack; no recursion on depth):
        for those that run once (compiling them first would cost more than the walk).

        Stack entries are ``(node, None, 0)`` for a node to visit, and ``(node, combine,
        count)`` once its ``count`` children are being evaluated; their values are then the
        last ``count`` entries of ``values``, and ``combine`` makes the node's value of them
        (or a :class:`_Push` of the node whose value it is, or a :class:`_Pending` call that
        this generator hands to the driver). Leaves (names, literals) have their value at once;
        operators, names and numbers (most of a long expression) are handled inline.

        A long expression (from :data:`_PAUSE_AFTER` operators on) is walked with the cyclic
        collector paused, as the parser and the backward engine pause it: everything its ops
        allocate lives on in the graph, so the collections the allocations trigger would only
        traverse the growing graph and the program's tree (half the walk of a 100,000-term
        expression). It runs again while one of the program's own functions or a
        comprehension runs (code whose garbage can grow without bound), and once the walk ends."""
        pause = _CollectorPause()
        try:
            return (yield from self._walk(node, scope, pause))
        finally:
            pause.resume()

    def _walk(self, node, scope, pause):
        stack = [(node, None, 0)]
        values: list = []
        push = stack.append
        pop = stack.pop
        env = self.env
        builtins = self.builtins
        call_leaf = self._call  # None: no observer sees the calls (the inline call below)
        operators = 0
        while stack:
            n, combine, count = pop()
            if combine is None:
                cls = n.__class__
                if cls is BinOp:
                    operators += 1
                    if operators == _PAUSE_AFTER:
                        pause.pause()
                    elif operators == _FREEZE_AFTER:
                        pause.long = True
                    right = n.right
                    rc = right.__class__
                    left = n.left
                    lc = left.__class__
                    if (lc is Name or lc is Num) and (rc is Name or rc is Num):
                        # two leaves (``x * 1.5``, ``x - y``): their values, then the operator, here
                        if lc is Num:
                            a = left.value
                        else:
                            name = left.id
                            a = env[name] if name in env and name not in scope else self._lookup(name, left, scope)
                        if rc is Num:
                            b = right.value
                        else:
                            name = right.id
                            b = env[name] if name in env and name not in scope else self._lookup(name, right, scope)
                        op = n.op
                        try:
                            if a.__class__ is Tensor and op in DIRECT_OPERATORS[b.__class__]:
                                values.append(BINARY_OPERATORS[op](a, b))
                            else:
                                values.append(binary_op(op, a, b))
                        except _LOCATED as exc:
                            raise _located(exc, n) from None
                        continue
                    push((n, _BINARY, 2))
                    # a leaf operand: its value is taken once the left one is made
                    push((right, _LEAF if rc is Num or rc is Name else None, 0))
                    push((left, None, 0))
                    continue
                if cls is Name:
                    name = n.id
                    values.append(env[name] if name in env and name not in scope else self._lookup(name, n, scope))
                    continue
                if cls is Num:
                    values.append(n.value)
                    continue
                if cls is Call and call_leaf is None and not n.kwargs and len(n.args) == 1:
                    # a function of one leaf (``sin(x)``, ``exp(y)``), no observer: _eval_call's
                    # look-up and the call, here, without the stack entries of the general path
                    func, arg = n.func, n.args[0]
                    ac = arg.__class__
                    if func.__class__ is Name and (ac is Name or ac is Num):
                        name = func.id
                        fn = builtins.get(name) if name not in env and name not in scope else None
                        if fn is not None:
                            if ac is Num:
                                a = arg.value
                            else:
                                name = arg.id
                                a = env[name] if name in env and name not in scope else self._lookup(name, arg, scope)
                            try:
                                values.append(self._invoke(fn, [a], {}, n))
                            except _LOCATED as exc:
                                raise _located(exc, n) from None
                            continue
                rule = _EXPRESSIONS.get(cls)
                if rule is None:
                    if cls is ListComp:
                        pause.resume()
                        try:
                            values.append((yield from self._listcomp_gen(n, scope)))
                        except GradcliError as err:
                            raise err.at(n.line, n.column)
                        pause.again()
                        continue
                    raise GradTypeError(f"unsupported expression {cls.__name__}")
                children, combine = rule
                if children is None:  # a leaf
                    values.append(combine(self, n, (), scope))
                    continue
                kids = children(n)
                push((n, combine, len(kids)))
                for child in reversed(kids):
                    push((_NONE_CHILD, None, 0) if child is None else (child, None, 0))
                continue
            if combine is _BINARY:  # binary_op, its common case inline
                b = values.pop()
                a = values[-1]
                op = n.op
                try:
                    if a.__class__ is Tensor and op in DIRECT_OPERATORS[b.__class__]:
                        values[-1] = BINARY_OPERATORS[op](a, b)
                    else:
                        values[-1] = binary_op(op, a, b)
                except _LOCATED as exc:
                    raise _located(exc, n) from None
                continue
            if combine is _LEAF:  # a number or a name, as above
                if n.__class__ is Num:
                    values.append(n.value)
                else:
                    name = n.id
                    values.append(env[name] if name in env and name not in scope else self._lookup(name, n, scope))
                continue
            try:
                if count:
                    args = values[len(values) - count:]
                    del values[len(values) - count:]
                else:
                    args = []
                value = combine(self, n, args, scope)
                if value.__class__ is _Pending:
                    pause.resume()
                    value = yield value
                    pause.again()
                elif value.__class__ is _Push:
                    push((value.node, None, 0))
                    continue
                values.append(value)
            except _LOCATED as exc:
                raise _located(exc, n) from None
        return values[-1]

    def _listcomp_gen(self, n, scope):
        """``[elt for t in it if c for ...]``: the clauses' iterators on an explicit stack, in a
        scope of their own (its names do not leak, as in Python 3)."""
        local = dict(scope)
        generators = n.generators
        self._hot = True  # its clauses and element run once an item: their code is kept
        out: list = []
        first = yield from self._eval_gen(generators[0].iter, local)
        iterators = [iterate(first)]
        while iterators:
            item = next(iterators[-1], _DONE)
            if item is _DONE:
                iterators.pop()
                continue
            level = len(iterators) - 1
            clause = generators[level]
            self._tick(clause)
            self._bind_target(clause.target, item, local, clause)
            keep = True
            for condition in clause.ifs:
                test = yield from self._eval_gen(condition, local)
                if not self._truth(test, condition):
                    keep = False
                    break
            if not keep:
                continue
            if level + 1 < len(generators):
                inner = yield from self._eval_gen(generators[level + 1].iter, local)
                iterators.append(iterate(inner))
                continue
            out.append((yield from self._eval_gen(n.elt, local)))
            if len(out) > MAX_SEQUENCE:
                raise LimitError(f"a list of more than {MAX_SEQUENCE:,} items")
        return out

    def _lookup(self, name, node, scope):
        if name in scope:
            return scope[name]
        if name in self.env:
            return self.env[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in PYTHON_BUILTINS and name in self.builtins:
            return BuiltinRef(name, self.builtins[name])
        if name in self.builtins:
            raise GradTypeError(f"'{name}' is a function: call it, e.g. {name}(...)").at(node.line, node.column)
        raise self._unknown(name, node, scope)

    def _unknown(self, name, node, scope=None):
        candidates = set(self.env) | set(CONSTANTS) | set(self.builtins) | set(scope or ())
        return GradNameError(f"name '{name}' is not defined{suggest(name, candidates)}").at(node.line, node.column)

    # ----------------------------------------------------------------- calls
    def _eval_call(self, n, args, scope):
        """A call: ``args`` (a list of its own) holds the values of the object (a method's),
        the positional arguments, then the keyword arguments' values."""
        func = n.func
        kwargs = {}
        if n.kwargs:
            first = len(args) - len(n.kwargs)
            for (key, _), value in zip(n.kwargs, args[first:]):
                kwargs[key] = value
            del args[first:]
        if func.__class__ is Attribute:
            obj = args[0]
            name = func.attr
            if name == "backward" or name == "grad":
                self.explicit_backward = True
            if obj.__class__ is Module:  # torch.ones(2), F.relu(x)
                return self._call_value(modules.member(obj, name), args[1:], kwargs, n)
            fn = TENSOR_METHODS.get(name) if obj.__class__ is Tensor else None
            if kwargs and "out" in kwargs and fn is not None:  # out= is the torch functions' (torch.add), not methods'
                raise GradTypeError(f"{name}() got an unexpected keyword argument 'out'")
            if fn is None:
                fn = sandbox.method(obj, name)
            call = self._call  # the object is the first argument
            return (self._invoke if call is None else call)(fn, args, kwargs, n)
        if func.__class__ is Name:
            name = func.id
            if name in scope or name in self.env:
                target = scope[name] if name in scope else self.env[name]
                return self._call_value(target, args, kwargs, n)
            fn = self.builtins.get(name)
            if fn is None:
                raise GradNameError(f"unknown function '{name}'{suggest(name, self.builtins)}")
            call = self._call
            return (self._invoke if call is None else call)(fn, args, kwargs, n)
        return self._call_value(args[0], args[1:], kwargs, n)

    def _call_value(self, target, args, kwargs, n):
        """Call a value: one of the program's functions (on the frame stack) or a whitelisted one."""
        if target.__class__ is UserFunction:
            return _Pending(target, args, kwargs)
        if target.__class__ is BuiltinRef:
            call = self._call
            return (self._invoke if call is None else call)(target.fn, args, kwargs, n)
        raise GradTypeError(f"'{type_name(target)}' object is not callable")

    def _invoke(self, fn, args, kwargs, node):
        """The call itself, once the observers have seen it."""
        if DEADLINE.expired:
            poll()
        for v in args:  # sandbox.check_arguments, inline
            if isinstance(v, str):
                sandbox.check_arguments(args, None)
                break
        target = fn
        if kwargs:
            sandbox.check_arguments((), kwargs)
            if "out" in kwargs and takes_out(fn):  # torch.add(x, y, out=result)
                out = kwargs.pop("out")
                if out is not None:
                    target = partial(call_with_out, fn, out)
        if fn is _BACKWARD or fn is _GRAD_FN:
            self.explicit_backward = True
        try:  # sandbox.call, inline (a frame less on every call)
            return target(*args, **kwargs)
        except GradcliError:
            raise
        except (TypeError, AttributeError, KeyError) as exc:
            return sandbox.failed_call(fn, target, args, kwargs, exc)

    def _print(self, *args, sep=" ", end="\n", flush=False):
        left = LIMITS.max_output - self.printed_chars  # --max-output bounds all the printed text
        text = str(sep).join(display(a, left) for a in args)
        check_output(len(text), "the printed text", left)
        self.printed_chars += len(text) + 1
        self.result.printed.append(text)
        if self.on_print is not None:
            self.on_print(text + ("" if end == "\n" else str(end)))
        return None


def _listed(value) -> bool:
    """Whether a variable is listed in the results (modules and ``def`` functions are not)."""
    return not (value.__class__ is Module or value.__class__ is BuiltinRef
                or (value.__class__ is UserFunction and not value.is_lambda))


# ------------------------------------------------------------------------------ the dispatch tables


# Statements that open a block: their rule returns the new frame (``return``, ``break`` and
# ``continue`` are the block loop's own).
_BLOCKS = {
    If: Evaluator._if_gen,
    For: Evaluator._for_gen,
    While: Evaluator._while_gen,
    With: Evaluator._with_gen,
}


class _NoneChild:
    """Stands for an absent part of a slice (``x[1:]``) on the walk's stack."""
    __slots__ = ()
    line = column = 0


_NONE_CHILD = _NoneChild()

# Markers of the walk's stack entries that Evaluator._walk_gen handles inline: a BinOp's
# operator once its operands are made, and a leaf operand (a number or a name).
_BINARY, _LEAF = object(), object()

# How many operators into one expression's walk the cyclic collector is paused (see
# Evaluator._walk_gen): enough that ordinary expressions never pause it.
_PAUSE_AFTER = 2000
_FREEZE_AFTER = 20_000  # operators: a walk this long freezes what it made when it resumes the collector


def _weakly(method):
    """``method``, bound to an evaluator, through a weak reference to it: what the evaluator keeps
    of its own methods (its ``print`` builtin, the end of its call chain). A bound method kept by
    its own object is a reference cycle, which would leave the evaluator -- its variables and their
    whole graph -- to the cyclic collector (a full collection: ~0.16 s after a 100,000-term program)
    instead of reference counting once the last reference to it goes."""
    func, ref = method.__func__, weakref.ref(method.__self__)

    def call(*args, **kwargs):
        return func(ref(), *args, **kwargs)
    call.__name__, call.__qualname__, call.__doc__ = func.__name__, func.__qualname__, func.__doc__
    return call


class _CollectorPause:
    """The cyclic collector paused for a part of one walk: :meth:`pause` stops it (where it
    runs), :meth:`resume` starts it again (where this paused it), :meth:`again` stops it again
    after a resume."""
    __slots__ = ("paused", "long")

    def __init__(self):
        self.paused = None  # None: never paused; True: paused now; False: resumed for a while
        self.long = False  # set by the walk from _FREEZE_AFTER operators on

    def pause(self) -> None:
        if self.paused is None and gc.isenabled():
            gc.disable()
            self.paused = True

    def resume(self) -> None:
        if self.paused:
            if self.long:
                # What the walk made is alive (the graph) and holds no cycles, yet the first
                # young collection would traverse all of it (~0.09 s after 100,000 terms) and
                # older ones again: out of the collector's way, as the parse's tree is (session's
                # _freeze_long_program; reference counting still frees it)
                gc.freeze()
            gc.enable()
            self.paused = False

    def again(self) -> None:
        if self.paused is False and gc.isenabled():
            gc.disable()
            self.paused = True


def _call_children(n):
    func = n.func
    if func.__class__ is Name:  # a function: looked up by name when called
        head = ()
    elif func.__class__ is Attribute:  # a method: its object is evaluated, the name looked up
        head = (func.value,)
    else:
        head = (func,)
    return (*head, *n.args, *(v for _, v in n.kwargs))


def _lambda_children(n):
    return tuple(p.default for p in n.params if p.default is not None)


def _make_lambda(ev, n, defaults, scope):
    values = iter(defaults)
    params = [(p.name, _MISSING if p.default is None else next(values)) for p in n.params]
    return UserFunction("<lambda>", params, n.body, True, ev, scope if scope else None)


def _bool_op(ev, n, args, scope):
    left = args[0]
    if truth(left) == (n.op == "or"):  # "or" stops at a true value, "and" at a false one
        return left
    return _Push(n.right)


def _fstring_children(n):
    return tuple(p.value for p in n.parts if p.__class__ is FormattedValue)


def _fstring(ev, n, args, scope):
    from .formatting import format_value  # only programs with f-strings need it (start-up time)
    values = iter(args)
    out = []
    for part in n.parts:
        if part.__class__ is FormattedValue:
            out.append(format_value(next(values), part.spec, part.conversion))
        else:
            out.append(part.value)
    text = "".join(out)
    if len(text) > MAX_SEQUENCE:
        raise LimitError(f"a string of more than {MAX_SEQUENCE:,} characters")
    return text


# node class -> (children, combine): ``children(node)`` lists the sub-expressions to evaluate
# first (None: a leaf), ``combine(evaluator, node, their values, scope)`` gives the node's value.
# The walk (Evaluator._walk_gen) reads all of it; the compiler (gradcli.lang.code) has its own
# instructions for the frequent kinds and one APPLY of this table's combine for the rest.
_EXPRESSIONS = {
    Name: (None, lambda ev, n, args, scope: ev._lookup(n.id, n, scope)),
    Num: (None, lambda ev, n, args, scope: n.value),
    Str: (None, lambda ev, n, args, scope: n.value),
    Const: (None, lambda ev, n, args, scope: n.value),
    EllipsisLit: (None, lambda ev, n, args, scope: Ellipsis),
    Lambda: (_lambda_children, _make_lambda),
    _NoneChild: (None, lambda ev, n, args, scope: None),
    BinOp: (lambda n: (n.left, n.right), lambda ev, n, args, scope: binary_op(n.op, args[0], args[1])),
    UnaryOp: (lambda n: (n.operand,), lambda ev, n, args, scope: unary_op(n.op, args[0])),
    Compare: (lambda n: (n.left, n.right), lambda ev, n, args, scope: compare(n.op, args[0], args[1])),
    BoolOp: (lambda n: (n.left,), _bool_op),
    Not: (lambda n: (n.operand,), lambda ev, n, args, scope: not truth(args[0])),
    IfExp: (lambda n: (n.test,), lambda ev, n, args, scope: _Push(n.body if truth(args[0]) else n.orelse)),
    FString: (_fstring_children, _fstring),
    Attribute: (lambda n: (n.value,), lambda ev, n, args, scope: sandbox.attribute(args[0], n.attr)),
    Call: (_call_children, Evaluator._eval_call),
    Subscript: (lambda n: (n.value, *n.index), lambda ev, n, args, scope: subscript(args[0], args[1:])),
    Slice: (lambda n: (n.start, n.stop, n.step), lambda ev, n, args, scope: slice(*args)),
    ListExpr: (lambda n: tuple(n.items), lambda ev, n, args, scope: list(args)),
    TupleExpr: (lambda n: tuple(n.items), lambda ev, n, args, scope: tuple(args)),
    DictExpr: (lambda n: tuple(x for pair in zip(n.keys, n.values) for x in pair),
               lambda ev, n, args, scope: make_dict(args)),
}
