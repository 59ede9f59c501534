"""Run a parsed ``.grad`` program against the engine (SPEC §2-§3).

The evaluator walks expressions with an explicit stack (a 10,000-deep nesting or
a 100,000-term sum never touches Python's recursion limit) and reaches the engine
only through whitelists: the function table (``gradcli.ops.registry.FUNCTIONS``) plus
a few language builtins, and fixed member tables per type. There is no ``eval``,
no ``getattr`` on a user's string, and no value from which Python itself is
reachable: an unknown name or member is a ``GradNameError`` with a suggestion.
"""

from __future__ import annotations

import difflib
import math
import operator

from .. import ops as _ops  # noqa: F401  (the op table must be loaded)
from . import ast as S
from ..backend.dtypes import DTYPES, Size, device as _device, dtype as _dtype
from ..autograd.engine import backward as _backward, grad as _grad
from ..errors import GradcliError, GradNameError, GradTypeError, LimitError, ShapeError
from ..ops.registry import FUNCTIONS
from ..autograd.grad_mode import enable_grad, no_grad, set_grad_enabled, STATE as _GRAD
from ..limits import MAX_INT_DIGITS, check_int
from ..autograd.node import AccumulateGrad, Node, RemovableHandle
from ..ops.reduction import ReturnTypes
from ..autograd.tensor import Tensor


class UserFunction:
    """A ``lambda NAME: expr`` from the program; calling it evaluates the body in the interpreter."""

    __slots__ = ("param", "body", "interp", "scope")

    def __init__(self, param: str, body, interp: "Interpreter", scope=None):
        # scope: the enclosing lambda's parameters, so that ``lambda a: lambda b: a * b`` works
        self.param, self.body, self.interp, self.scope = param, body, interp, scope

    def __call__(self, *args, **kwargs):
        if kwargs and (args or set(kwargs) != {self.param}):
            bad = next((k for k in kwargs if k != self.param), self.param)
            raise GradTypeError(f"<lambda>() got an unexpected keyword argument '{bad}'" if bad != self.param
                                else f"<lambda>() got multiple values for argument '{bad}'")
        if len(args) + len(kwargs) != 1:
            raise GradTypeError(f"<lambda>() takes 1 positional argument but {len(args)} were given" if args
                                else f"<lambda>() missing 1 required positional argument: '{self.param}'")
        scope = dict(self.scope) if self.scope else {}
        scope[self.param] = args[0] if args else kwargs[self.param]
        return self.interp.evaluate(self.body, scope)

    def __repr__(self) -> str:
        return f"<lambda {self.param}>"


# -- the whitelists ------------------------------------------------------------------------------

_TENSOR_ATTRS = ("data", "grad", "grad_fn", "requires_grad", "is_leaf", "shape", "dtype", "device", "ndim",
                 "T", "mT", "retains_grad", "is_cuda")
_TENSOR_METHODS = ("backward", "retain_grad", "register_hook", "requires_grad_", "detach", "detach_",
                   "zero_", "item", "tolist", "size", "dim", "numel", "to", "cpu", "cuda", "double", "float",
                   "long")
TENSOR_ATTRS = {name: operator.attrgetter(name) for name in _TENSOR_ATTRS}
TENSOR_METHODS = {name: getattr(Tensor, name) for name in _TENSOR_METHODS}
TENSOR_METHODS.update({name: info.fn for name, info in FUNCTIONS.items() if info.method is True})
TENSOR_METHODS["__getitem__"] = Tensor.__getitem__


def register_hook(self, hook):
    # Only the program's own lambdas are hooks: anything else would fail inside backward.
    if self.requires_grad and not isinstance(hook, UserFunction):
        raise GradTypeError(f"register_hook expects a function such as lambda g: g * 2, not {_type_name(hook)}")
    return Tensor.register_hook(self, hook)


TENSOR_METHODS["register_hook"] = register_hook

NODE_ATTRS = {"next_functions": operator.attrgetter("next_functions"),
              "variable": lambda n: n.variable if isinstance(n, AccumulateGrad) else _no_member(n, "variable")}
NODE_METHODS = {"name": Node.name}
HANDLE_METHODS = {"remove": RemovableHandle.remove}
RETURN_ATTRS = {"values": operator.itemgetter(0), "indices": operator.itemgetter(1)}
DTYPE_ATTRS = {"is_floating_point": operator.attrgetter("is_floating_point")}
SIZE_METHODS = {"numel": Size.numel}


def _no_member(obj, name):
    raise GradNameError(f"'{_type_name(obj)}' object has no attribute '{name}'")


def _lang_backward(tensors, gradient=None, retain_graph=None, create_graph=False, grad_tensors=None, inputs=None):
    _backward(tensors, gradient if gradient is not None else grad_tensors, retain_graph, create_graph, inputs)


def _set_grad_enabled(mode):
    return set_grad_enabled(mode)


BUILTINS = {
    "backward": _lang_backward,
    "grad": _grad,
    "no_grad": no_grad,
    "enable_grad": enable_grad,
    "set_grad_enabled": _set_grad_enabled,
    "is_grad_enabled": lambda: _GRAD.enabled,
    "len": len,
    "float": float,
    "int": int,
}
BUILTINS.update({name: info.fn for name, info in FUNCTIONS.items() if not name.endswith("_")})
CONSTANTS = {name: d for name, d in DTYPES.items()}
CONSTANTS.update({"float": DTYPES["float32"], "double": DTYPES["float64"], "long": DTYPES["int64"],
                  "inf": math.inf, "nan": math.nan, "pi": math.pi, "e": math.e})
# 'float' as a dtype constant would shadow the function; keep it a function, as in Python.
del CONSTANTS["float"]
_EXPLICIT = {"backward", "grad"}


def _type_name(obj) -> str:
    if isinstance(obj, Tensor):
        return "Tensor"
    if isinstance(obj, Node):
        return obj.name_for_repr()
    if isinstance(obj, UserFunction):
        return "function"
    return type(obj).__name__


def _suggest(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


# -- results ---------------------------------------------------------------------------------------

class Check:
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


# -- the interpreter --------------------------------------------------------------------------------

class Interpreter:
    """Evaluates statements one by one, keeping variables in order of first binding."""

    def __init__(self, *, on_print=None, auto_backward: bool = True):
        self.env: dict[str, object] = {}
        self.order: list[str] = []
        self.on_print = on_print
        self.auto_backward = auto_backward
        self.result = RunResult()
        self.explicit_backward = False
        self.last_stmt = None
        self.last_value = None
        self.builtins = dict(BUILTINS)
        self.builtins["print"] = self._print
        self.builtins["backward"] = self._explicit(_lang_backward)
        self.builtins["grad"] = self._explicit(_grad)

    # -- statements --------------------------------------------------------------------------
    def run(self, program: S.Program) -> RunResult:
        """Run every statement; stop at the first error (recorded in ``result.error``)."""
        try:
            self._run_block(program.body)
            self._maybe_auto_backward()
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
                raise GradTypeError(f"{where}: only tensors can require grad, got {_type_name(value)}")
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
                if isinstance(stmt, S.With):
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
                                f"not {_type_name(ctx)}").at(stmt.context.line, stmt.context.column)
        return ctx

    def _exec(self, stmt) -> None:
        self.last_stmt = stmt
        self.last_value = None
        if isinstance(stmt, S.Assign):
            value = self.evaluate(stmt.value)
            if stmt.unpack:
                values = self._unpack(value, len(stmt.targets), stmt)
                for name, v in zip(stmt.targets, values):
                    self._bind(name, v)
            else:
                self._bind(stmt.targets[0], value)
            self.last_value = value
        elif isinstance(stmt, S.ExprStmt):
            self.last_value = self.evaluate(stmt.value)
        elif isinstance(stmt, S.AugAssign):
            self._aug_assign(stmt)
        elif isinstance(stmt, S.Assert):
            self._assert(stmt)
        elif isinstance(stmt, S.Del):
            for name, node in zip(stmt.names, stmt.targets):
                if name not in self.env:
                    raise self._unknown(name, node)
                del self.env[name]
        else:
            raise GradTypeError(f"unsupported statement {type(stmt).__name__}").at(stmt.line, stmt.column)

    def _bind(self, name: str, value) -> None:
        if name not in self.env and name not in self.order:
            self.order.append(name)
        elif name not in self.env:
            self.order.remove(name)
            self.order.append(name)
        self.env[name] = value

    def _unpack(self, value, count, stmt):
        if isinstance(value, Tensor):
            if value.ndim == 0:
                raise GradTypeError("iteration over a 0-d tensor").at(stmt.line, stmt.column)
            items = [value[i] for i in range(value.shape[0])]
        elif isinstance(value, (tuple, list)):
            items = list(value)
        else:
            raise GradTypeError(f"cannot unpack non-iterable {_type_name(value)} object").at(stmt.line, stmt.column)
        if len(items) != count:
            raise GradTypeError(f"{'too many' if len(items) > count else 'not enough'} values to unpack "
                                f"(expected {count}, got {len(items)})").at(stmt.line, stmt.column)
        return items

    def _aug_assign(self, stmt) -> None:
        target = stmt.target
        if isinstance(target, S.Name):
            current = self._lookup(target.id, target, {})
        else:
            current = self.evaluate(target)
        value = self.evaluate(stmt.value)
        if isinstance(current, Tensor):
            method = {"+": "add_", "-": "sub_", "*": "mul_", "/": "div_"}[stmt.op]
            self._call(TENSOR_METHODS[method], (current, value), {}, stmt)
            result = current
        else:
            result = self._binop(stmt.op, current, value, stmt)
            if isinstance(target, S.Attribute):
                raise GradTypeError("can only update tensors in place through an attribute").at(stmt.line, stmt.column)
        if isinstance(target, S.Name):
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
        text = message if isinstance(message, str) or message is None else _display(message)
        self.result.checks.append(Check(stmt.line, passed, text))

    def _maybe_auto_backward(self) -> None:
        if self.explicit_backward:
            self.result.backward = "explicit"
            return
        if not self.auto_backward:
            return
        stmt = self.last_stmt
        if not isinstance(stmt, (S.Assign, S.ExprStmt)) or _is_print(stmt):
            return
        value = self.last_value
        if not isinstance(value, Tensor) or not value.requires_grad:
            return
        if value.numel() != 1:
            named = isinstance(stmt, S.Assign) and not stmt.unpack
            name = stmt.targets[0] if named else "y"
            how = (f"pass a gradient: {name}.backward(ones_like({name}))" if named else
                   "name it and pass a gradient: y = ...; y.backward(ones_like(y))")
            self.result.note = (f"{name if named else 'the result'} has shape {list(value.shape)}, so backward "
                                f"was not run: gradients are implicit only for one-element tensors. Reduce it "
                                f"(sum(), mean()) or {how}")
            return
        try:
            value.backward()
        except GradcliError as err:
            raise err.at(stmt.line, stmt.column)
        self.result.backward = "auto"

    # -- expressions ------------------------------------------------------------------------------
    def evaluate(self, node, scope=None):
        """Evaluate an expression iteratively (explicit stack; no recursion on depth).

        Stack entries are ``(node, -1)`` for a node to visit, and ``(node, count)`` once its
        ``count`` children are being evaluated; their values are then the last ``count`` entries
        of ``values``. Binary operators, the bulk of long programs, take a shorter path."""
        scope = scope if scope is not None else {}
        stack = [(node, -1)]
        values: list = []
        push = stack.append
        pop = stack.pop
        BinOp, Name, Num = S.BinOp, S.Name, S.Num
        while stack:
            n, count = pop()
            cls = n.__class__
            if count < 0:
                if cls is Name:
                    values.append(self._lookup(n.id, n, scope))
                elif cls is BinOp:
                    push((n, 2))
                    push((n.right, -1))
                    push((n.left, -1))
                elif cls is Num or cls is S.Str or cls is S.Const:
                    values.append(n.value)
                elif cls is S.EllipsisLit:
                    values.append(Ellipsis)
                elif cls is S.Lambda:
                    values.append(UserFunction(n.param, n.body, self, scope))
                else:
                    children = self._children(n)
                    push((n, len(children)))
                    for child in reversed(children):
                        push((_NONE_CHILD, 0) if child is None else (child, -1))
                continue
            if n is _NONE_CHILD:
                values.append(None)
                continue
            try:
                if cls is BinOp:
                    b = values.pop()
                    a = values.pop()
                    values.append(self._binop(n.op, a, b, n))
                    continue
                args = values[len(values) - count:] if count else []
                if count:
                    del values[len(values) - count:]
                values.append(self._combine(n, args, scope))
            except GradcliError as err:
                raise err.at(n.line, n.column)
            except RecursionError:
                raise LimitError("maximum recursion depth exceeded: a lambda or hook that calls itself (directly "
                                 "or through backward()), or values nested too deeply").at(n.line, n.column) from None
            except (ArithmeticError, ValueError, TypeError, IndexError, MemoryError) as exc:
                raise _translate(exc).at(n.line, n.column) from None
        return values[-1]

    @staticmethod
    def _children(n):
        cls = n.__class__
        if cls is S.BinOp or cls is S.Compare:
            return (n.left, n.right)
        if cls is S.UnaryOp:
            return (n.operand,)
        if cls is S.Attribute:
            return (n.value,)
        if cls is S.Call:
            head = () if n.func.__class__ is S.Name else (n.func.value,) if n.func.__class__ is S.Attribute \
                else (n.func,)
            return (*head, *n.args, *(v for _, v in n.kwargs))
        if cls is S.Subscript:
            return (n.value, *n.index)
        if cls is S.Slice:
            return (n.start, n.stop, n.step)
        if cls is S.ListExpr or cls is S.TupleExpr:
            return tuple(n.items)
        raise GradTypeError(f"unsupported expression {cls.__name__}")

    def _combine(self, n, args, scope):
        cls = n.__class__
        if cls is S.BinOp:
            return self._binop(n.op, args[0], args[1], n)
        if cls is S.UnaryOp:
            v = args[0]
            _check_operand(v, n.op)
            return -v if n.op == "-" else +v
        if cls is S.Compare:
            return self._compare(n.op, args[0], args[1])
        if cls is S.Attribute:
            return self._member(args[0], n.attr, n)
        if cls is S.Call:
            return self._eval_call(n, args, scope)
        if cls is S.Subscript:
            return self._subscript(args[0], args[1:])
        if cls is S.Slice:
            return slice(*args)
        if cls is S.ListExpr:
            return list(args)
        if cls is S.TupleExpr:
            return tuple(args)
        raise GradTypeError(f"unsupported expression {cls.__name__}")

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
        return GradNameError(f"name '{name}' is not defined{_suggest(name, candidates)}").at(node.line, node.column)

    def _binop(self, op, a, b, node):
        if a.__class__ is Tensor and b.__class__ is Tensor:  # the common case: no checks to make
            return _TENSOR_BINOPS[op](a, b)
        _check_operand(a, op)
        _check_operand(b, op)
        if op == "+":
            return check_int(a + b)
        if op == "-":
            return check_int(a - b)
        if op == "*":
            return check_int(a * b)
        if op == "/":
            if not isinstance(a, Tensor) and not isinstance(b, Tensor) and b == 0:
                return math.copysign(math.inf, a) if a else math.nan
            return a / b
        if op == "@":
            if not isinstance(a, Tensor) or not isinstance(b, Tensor):
                raise GradTypeError("@ needs two tensors")
            return a @ b
        if op == "**":
            if not isinstance(a, Tensor) and not isinstance(b, Tensor):
                return _scalar_pow(a, b)
            return a ** b
        raise GradTypeError(f"unsupported operator {op}")

    @staticmethod
    def _compare(op, a, b):
        _check_operand(a, op, allow_none=True)
        _check_operand(b, op, allow_none=True)
        fn = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
              "!=": operator.ne}[op]
        if not isinstance(a, Tensor) and isinstance(b, Tensor):
            flipped = {"<": operator.gt, "<=": operator.ge, ">": operator.lt, ">=": operator.le}.get(op, fn)
            return flipped(b, a)
        return fn(a, b)

    def _member(self, obj, name, node):
        table = _attrs_for(obj)
        if table is not None and name in table:
            return table[name](obj)
        methods = _methods_for(obj)
        if methods is not None and name in methods:
            raise GradTypeError(f"'{name}' is a method: call it, e.g. .{name}()")
        raise GradNameError(f"'{_type_name(obj)}' has no member '{name}'"
                            f"{_suggest(name, list(table or ()) + list(methods or ()))}")

    def _eval_call(self, n, args, scope):
        func = n.func
        nkw = len(n.kwargs)
        kwargs = {}
        if nkw:
            for (key, _), value in zip(n.kwargs, args[len(args) - nkw:]):
                kwargs[key] = value
            args = args[:len(args) - nkw]
        if func.__class__ is S.Name:
            name = func.id
            if name in scope or name in self.env:
                target = scope[name] if name in scope else self.env[name]
                if not isinstance(target, UserFunction):
                    raise GradTypeError(f"'{_type_name(target)}' object is not callable")
                return self._call(target, args, kwargs, n)
            fn = self.builtins.get(name)
            if fn is None:
                raise GradNameError(f"unknown function '{name}'{_suggest(name, self.builtins)}")
            return self._call(fn, args, kwargs, n)
        if func.__class__ is S.Attribute:
            obj, args = args[0], args[1:]
            name = func.attr
            methods = _methods_for(obj)
            if methods is None or name not in methods:
                attrs = _attrs_for(obj)
                if attrs is not None and name in attrs:
                    raise GradTypeError(f"'{name}' is an attribute, not a method: use .{name} without ()")
                raise GradNameError(f"'{_type_name(obj)}' has no method '{name}'"
                                    f"{_suggest(name, list(methods or ()) + list(attrs or ()))}")
            if name == "backward" or name == "grad":
                self.explicit_backward = True
            return self._call(methods[name], (obj, *args), kwargs, n)
        target = args[0]
        if not isinstance(target, UserFunction):
            raise GradTypeError(f"'{_type_name(target)}' object is not callable")
        return self._call(target, args[1:], kwargs, n)

    def _call(self, fn, args, kwargs, node):
        for v in (*args, *kwargs.values()):
            if isinstance(v, str) and len(v) > 10_000:
                raise LimitError("string argument too long")
        try:
            return fn(*args, **kwargs)
        except GradcliError:
            raise
        except TypeError as exc:
            raise GradTypeError(_wrong_argument(fn, args, kwargs) or _clean_type_error(exc)) from None
        except (AttributeError, KeyError):  # an op reached into a number, None or a lambda as if a tensor
            message = _wrong_argument(fn, args, kwargs)
            if message is None:
                raise
            raise GradTypeError(message) from None

    def _subscript(self, obj, index):
        key = index[0] if len(index) == 1 else tuple(index)
        if isinstance(obj, Tensor):
            return obj[key]
        if isinstance(obj, (tuple, list, Size, ReturnTypes)):
            if not isinstance(key, (int, slice)) or isinstance(key, bool):
                raise GradTypeError(f"{_type_name(obj)} indices must be integers or slices")
            try:
                return obj[key]
            except IndexError:
                raise ShapeError(f"{_type_name(obj)} index out of range") from None
        raise GradTypeError(f"'{_type_name(obj)}' object is not subscriptable")

    def _print(self, *args, sep=" ", end="\n"):
        text = str(sep).join(_display(a) for a in args)
        self.result.printed.append(text)
        if self.on_print is not None:
            self.on_print(text + ("" if end == "\n" else str(end)))
        return None

    def _explicit(self, fn):
        def call(*args, **kwargs):
            self.explicit_backward = True
            return fn(*args, **kwargs)
        return call


class _NoneChild:
    __slots__ = ()
    line = column = 0


_NONE_CHILD = _NoneChild()


def _member_tables(obj):
    """``(attributes, methods)`` the language allows on ``obj`` (either may be None)."""
    for cls, attrs, methods in (
            (Tensor, TENSOR_ATTRS, TENSOR_METHODS), (Node, NODE_ATTRS, NODE_METHODS),
            (ReturnTypes, RETURN_ATTRS, None), (_dtype, DTYPE_ATTRS, None),
            (RemovableHandle, None, HANDLE_METHODS), (Size, None, SIZE_METHODS)):
        if isinstance(obj, cls):
            return attrs, methods
    return None, None


def _attrs_for(obj):
    return _member_tables(obj)[0]


def _methods_for(obj):
    return _member_tables(obj)[1]


_NUMERIC = (int, float, bool, Tensor)
_TENSOR_BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
                  "@": operator.matmul, "**": operator.pow}


def _check_operand(v, op, allow_none=False):
    if isinstance(v, _NUMERIC) or (allow_none and v is None):
        return
    if op in ("==", "!=") and isinstance(v, (str, _dtype, _device, Size, tuple, list, Node)):
        return
    raise GradTypeError(f"unsupported operand type for {op}: '{_type_name(v)}'")


def _scalar_pow(a, b):
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1 and b * math.log10(abs(a)) >= MAX_INT_DIGITS:
        raise LimitError(f"{_int_text(a)} ** {_int_text(b)} has more than {MAX_INT_DIGITS:,} digits",
                         hint="integers are exact in the language: use floats (2.0 ** 1000 rather than "
                              "2 ** 1000) for approximate values")
    try:
        return check_int(a ** b)
    except ZeroDivisionError:
        return math.inf


def _int_text(v) -> str:
    text = repr(v) if not isinstance(v, int) or -10 ** 30 < v < 10 ** 30 else f"<{len(str(abs(v)))}-digit integer>"
    return f"({text})" if text.startswith("-") else text


def _is_print(stmt) -> bool:
    return (isinstance(stmt, S.ExprStmt) and isinstance(stmt.value, S.Call)
            and isinstance(stmt.value.func, S.Name) and stmt.value.func.id == "print")


def _display(value) -> str:
    if isinstance(value, str):
        return value
    if type(value) is list or type(value) is tuple:
        return _repr_nested(value)
    return repr(value)


class _Punct(str):
    """A bracket or separator while :func:`_repr_nested` writes a list out."""


def _repr_nested(value) -> str:
    """``repr`` of nested lists and tuples with an explicit stack: Python's own fails (RecursionError)
    past about 1,000 levels, and a program can build a list 10,000 deep."""
    parts = []
    stack = [value]
    while stack:
        item = stack.pop()
        if item.__class__ is _Punct:
            parts.append(item)
        elif type(item) is list or type(item) is tuple:
            is_list = type(item) is list
            parts.append("[" if is_list else "(")
            stack.append(_Punct("]" if is_list else ",)" if len(item) == 1 else ")"))
            for i in range(len(item) - 1, -1, -1):
                stack.append(item[i])
                if i:
                    stack.append(_Punct(", "))
        else:
            parts.append(repr(item))
    return "".join(parts)


_TENSOR_PARAMS = frozenset(("input", "other", "self", "mat2", "vec", "vec2", "tensor", "condition", "exponent"))
_INFO_BY_FN = {info.fn: info for info in FUNCTIONS.values()}


def _wrong_argument(fn, args, kwargs):
    """torch's message for an op given something other than a tensor where it takes one, e.g.
    ``mean(2.5)``: "mean(): argument 'input' (position 1) must be Tensor, not float"; or None.
    Used once an op has failed: ops that accept numbers there (``pow(2, x)``) never get here."""
    info = _INFO_BY_FN.get(fn)
    if info is None:
        return None
    params = [p.split("=")[0].strip() for p in info.signature.split("(", 1)[1].rstrip(")").split(",")]
    given = []
    for position, param in enumerate(params):
        if param.startswith("*") or position >= len(args):
            break
        given.append((param, position + 1, args[position]))
    given += [(param, None, kwargs[param]) for param in params if param in kwargs]
    wrong = [g for g in given if g[0] in _TENSOR_PARAMS and not isinstance(g[2], Tensor)]
    if not wrong:
        return None
    param, position, value = next((g for g in wrong if not isinstance(g[2], (bool, int, float))), wrong[0])
    where = "" if position is None else f" (position {position})"
    return f"{info.name}(): argument '{param}'{where} must be Tensor, not {_type_name(value)}"


def _clean_type_error(exc: TypeError) -> str:
    text = str(exc)
    for prefix in ("_lang_backward()", "Tensor.", "_to()"):
        text = text.replace(prefix, prefix.lstrip("_").replace("lang_", ""))
    return text


def _translate(exc: Exception) -> GradcliError:
    if isinstance(exc, MemoryError):
        return LimitError("out of memory: the tensors are too large for this machine",
                          hint="lower --max-elements or use smaller shapes")
    if isinstance(exc, ZeroDivisionError):
        return GradTypeError(str(exc))
    if isinstance(exc, (ValueError, IndexError)):
        return ShapeError(str(exc))
    if isinstance(exc, OverflowError):
        return LimitError(str(exc))
    return GradTypeError(str(exc))
