"""The simple statements of a program: what each does, as generator methods of the evaluator.

:class:`Statements` is a mixin of :class:`gradcli.lang.evaluator.Evaluator`: each method runs
one statement (``scope`` None at the program's top level, else the variables of a call) and
evaluates its expressions with ``yield from self._eval_gen(...)``, so that a call of one of the
program's functions inside them runs on the evaluator's frame stack, not Python's.
:data:`STATEMENTS` maps each statement class to its method.
"""

from __future__ import annotations

from ..autograd.grad_mode import STATE as _GRAD, _DecoratorContextManager, inference_mode, no_grad, set_grad_enabled
from ..autograd.tensor import Tensor
from ..errors import CheckFailed, GradcliError, GradNameError, GradTypeError
from ..ops.registry import INPLACE_OPERATORS
from . import modules, sandbox
from .ast import Assert, Assign, Attribute, AugAssign, Del, ExprStmt, FunctionDef, Import, ImportFrom, Name, Pass, SetItem
from .modules import Module
from .values import (
    _MISSING, BuiltinRef, UserFunction, binary_op, display, subscript, translate_exception, type_name, unpack,
)

_EMPTY: dict = {}  # the (never written) local scope of the program's top level

# Python's __future__ features (all of them mandatory by Python 3.11 but annotations, which changes nothing here)
_FUTURE_FEATURES = frozenset(("nested_scopes", "generators", "division", "absolute_import", "with_statement",
                              "print_function", "unicode_literals", "barry_as_FLUFL", "generator_stop", "annotations"))


class Check:
    """One ``assert`` of the program: its line, whether it held, its message."""
    __slots__ = ("line", "passed", "message")

    def __init__(self, line, passed, message):
        self.line, self.passed, self.message = line, passed, message


class Pending:
    """A call of one of the program's functions, handed by an expression to the frame stack
    (:meth:`Evaluator._drive`) instead of being made by a Python call."""
    __slots__ = ("fn", "args", "kwargs")

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs


class Statements:
    """The simple statements (a mixin of the evaluator; see the module docstring)."""
    def _assign(self, stmt, scope):
        value = yield from self._eval_gen(stmt.value, scope or _EMPTY)
        if stmt.unpack:
            try:
                values = unpack(value, len(stmt.targets))
            except GradTypeError as err:
                raise err.at(stmt.line, stmt.column)
            for name, v in zip(stmt.targets, values):
                self._assign_name(name, v, scope)
        else:
            self._assign_name(stmt.targets[0], value, scope)
        return value

    def _expr_stmt(self, stmt, scope):
        return (yield from self._eval_gen(stmt.value, scope or _EMPTY))

    def _aug_assign(self, stmt, scope):
        target = stmt.target
        local = scope or _EMPTY
        obj = index = None
        if isinstance(target, Name):
            current = self._lookup(target.id, target, local)
        elif isinstance(target, Attribute):
            obj = yield from self._eval_gen(target.value, local)
            current = self._at(sandbox.attribute, target, obj, target.attr)
        else:
            obj = yield from self._eval_gen(target.value, local)
            index = []
            for part in target.index:
                index.append((yield from self._eval_gen(part, local)))
            current = self._at(subscript, target, obj, index)  # x[i] += v: Python's x[i] = x[i].__iadd__(v)
        value = yield from self._eval_gen(stmt.value, local)
        if isinstance(current, Tensor) and stmt.op in INPLACE_OPERATORS:  # in place, as torch: w.data -= g
            call = self._call
            (self._invoke if call is None else call)(INPLACE_OPERATORS[stmt.op], (current, value), {}, stmt)
            result = current
        else:
            result = self._at(binary_op, stmt, stmt.op, current, value)
        if isinstance(target, Name):
            self._assign_name(target.id, result, scope)
        elif isinstance(target, Attribute):
            if result is not current:
                self._at(sandbox.set_attribute, stmt, obj, target.attr, result)
        else:
            self._at(sandbox.set_item, stmt, obj, index, result)
        return None

    def _set_item(self, stmt, scope):
        local = scope or _EMPTY
        target = stmt.target
        obj = yield from self._eval_gen(target.value, local)
        if isinstance(target, Attribute):
            value = yield from self._eval_gen(stmt.value, local)
            self._at(sandbox.set_attribute, stmt, obj, target.attr, value)
            return value
        index = []
        for part in target.index:
            index.append((yield from self._eval_gen(part, local)))
        value = yield from self._eval_gen(stmt.value, local)
        self._at(sandbox.set_item, stmt, obj, index, value)
        return value

    @staticmethod
    def _at(fn, node, *args):
        try:
            return fn(*args)
        except GradcliError as err:
            raise err.at(node.line, node.column)
        except (ArithmeticError, ValueError, TypeError, IndexError) as exc:
            raise translate_exception(exc).at(node.line, node.column) from None

    def _assert(self, stmt, scope):
        local = scope or _EMPTY
        value = yield from self._eval_gen(stmt.test, local)
        message = None
        if stmt.msg is not None:
            message = yield from self._eval_gen(stmt.msg, local)
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
        return None

    def _del(self, stmt, scope):
        table = self.env if scope is None else scope
        for name, node in zip(stmt.names, stmt.targets):
            if name not in table:
                raise self._unknown(name, node, scope)
            del table[name]
        return None
        yield

    def _pass(self, stmt, scope):
        return None
        yield

    def _import(self, stmt, scope):
        try:
            module = modules.import_module(stmt.module)
        except GradcliError as err:
            raise err.at(stmt.line, stmt.column)
        if stmt.alias is not None:
            self._assign_name(stmt.alias, module, scope)
        else:  # import torch.nn.functional binds torch
            root = stmt.module.split(".")[0]
            self._assign_name(root, Module.of(root), scope)
        return None
        yield

    def _import_from(self, stmt, scope):
        if stmt.module == "__future__":  # ``from __future__ import print_function`` (Python 2-era code): nothing to do
            for name, _ in stmt.names:
                if name not in _FUTURE_FEATURES:
                    raise GradNameError(f"future feature {name} is not defined").at(stmt.line, stmt.column)
            return None
        try:
            for name, alias in stmt.names:
                if name == "*":
                    for key, value in modules.members(modules.import_module(stmt.module).name).items():
                        self._assign_name(key, value, scope)
                    continue
                self._assign_name(alias or name, modules.import_from(stmt.module, name), scope)
        except GradcliError as err:
            raise err.at(stmt.line, stmt.column)
        return None
        yield

    def _function_def(self, stmt, scope):
        local = scope or _EMPTY
        params = []
        for p in stmt.params:
            default = _MISSING if p.default is None else (yield from self._eval_gen(p.default, local))
            params.append((p.name, default))
        fn = UserFunction(stmt.name, params, stmt.body, False, self, scope if scope else None)  # live: sees later names
        for node in reversed(stmt.decorators):  # the innermost first, as Python applies them
            decorator = yield from self._eval_gen(node, local)
            fn = yield from self._decorate(fn, decorator, node)
        self._assign_name(stmt.name, fn, scope)
        return None

    def _decorate(self, fn, decorator, node):
        if isinstance(decorator, BuiltinRef) and isinstance(decorator.fn, type) and issubclass(decorator.fn, no_grad):
            decorator = decorator.fn()  # @torch.no_grad without ()
        if isinstance(decorator, _DecoratorContextManager) and isinstance(fn, UserFunction):
            if isinstance(decorator, set_grad_enabled):  # as torch: the decorator form leaves the mode alone
                _GRAD.enabled = decorator._prev
            # the grad mode during the call (inference_mode's flag is inference on, that is grad off)
            mode = (not decorator._mode) if isinstance(decorator, inference_mode) else decorator._mode
            return UserFunction(fn.name, fn.params, fn.body, fn.is_lambda, self, fn.closure, mode)
        if isinstance(decorator, UserFunction):
            return (yield Pending(decorator, (fn,), {}))
        raise GradTypeError(f"unsupported decorator ({type_name(decorator)}): gradcli has @torch.no_grad(), "
                            "@torch.enable_grad() and the program's own functions").at(node.line, node.column)


STATEMENTS = {
    Assign: Statements._assign,
    ExprStmt: Statements._expr_stmt,
    AugAssign: Statements._aug_assign,
    SetItem: Statements._set_item,
    Assert: Statements._assert,
    Del: Statements._del,
    Pass: Statements._pass,
    Import: Statements._import,
    ImportFrom: Statements._import_from,
    FunctionDef: Statements._function_def,
}
