"""What the language's values do: operators, comparisons, indexing, unpacking, display.

Numbers follow Python (exact integers, within :data:`gradcli.limits.MAX_INT_DIGITS`; ``1 / 0``
is ``inf`` as in torch), tensors follow torch; anything else given to an operator is a
``GradTypeError`` naming its type. :class:`UserFunction` is the value of a ``lambda``.
Python exceptions that escape an operation become the matching :mod:`gradcli.errors` error
(:func:`translate_exception`). Nothing here recurses on how deeply values nest.
"""

from __future__ import annotations

import math
import operator

from ..autograd.node import Node
from ..autograd.tensor import Tensor
from ..ops.registry import BINARY_OPERATORS
from ..backend.dtypes import Size, device as _device, dtype as _dtype
from ..errors import GradcliError, GradTypeError, LimitError, ShapeError
from ..limits import MAX_INT_DIGITS, check_int
from ..ops.reduction import ReturnTypes


class UserFunction:
    """A ``lambda NAME: expr`` from the program; calling it evaluates the body in the evaluator."""

    __slots__ = ("param", "body", "evaluator", "scope")

    def __init__(self, param: str, body, evaluator, scope=None):
        # scope: the enclosing lambda's parameters, so that ``lambda a: lambda b: a * b`` works
        self.param, self.body, self.evaluator, self.scope = param, body, evaluator, scope

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
        return self.evaluator.evaluate(self.body, scope)

    def __repr__(self) -> str:
        return f"<lambda {self.param}>"


def type_name(obj) -> str:
    """How messages name the type of a value: ``Tensor``, ``AddBackward0``, ``function``, ``int``..."""
    if isinstance(obj, Tensor):
        return "Tensor"
    if isinstance(obj, Node):
        return obj.name_for_repr()
    if isinstance(obj, UserFunction):
        return "function"
    return type(obj).__name__


# ------------------------------------------------------------------------------ operators

_NUMERIC = (int, float, bool, Tensor)
_COMPARES = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
             "!=": operator.ne}
_FLIPPED = {"<": operator.gt, "<=": operator.ge, ">": operator.lt, ">=": operator.le}


def check_operand(v, op, allow_none=False):
    if isinstance(v, _NUMERIC) or (allow_none and v is None):
        return
    if op in ("==", "!=") and isinstance(v, (str, _dtype, _device, Size, tuple, list, Node)):
        return
    raise GradTypeError(f"unsupported operand type for {op}: '{type_name(v)}'")


def binary_op(op, a, b):
    """``a op b`` for ``op`` in ``+ - * / @ **``."""
    if a.__class__ is Tensor and b.__class__ is Tensor:  # the common case: no checks to make
        return BINARY_OPERATORS[op](a, b)  # the function the op declared for its operator
    check_operand(a, op)
    check_operand(b, op)
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


def unary_op(op, v):
    """``-v`` or ``+v``."""
    check_operand(v, op)
    return -v if op == "-" else +v


def compare(op, a, b):
    """``a op b`` for ``op`` in ``< <= > >= == !=`` (a number against a tensor compares elementwise)."""
    check_operand(a, op, allow_none=True)
    check_operand(b, op, allow_none=True)
    fn = _COMPARES[op]
    if not isinstance(a, Tensor) and isinstance(b, Tensor):
        return _FLIPPED.get(op, fn)(b, a)
    return fn(a, b)


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


# ------------------------------------------------------------------------------ indexing and unpacking

def subscript(obj, index):
    """``obj[i, j, ...]``; ``index`` is the list of index values (ints, slices, None, ...)."""
    key = index[0] if len(index) == 1 else tuple(index)
    if isinstance(obj, Tensor):
        return obj[key]
    if isinstance(obj, (tuple, list, Size, ReturnTypes)):
        if not isinstance(key, (int, slice)) or isinstance(key, bool):
            raise GradTypeError(f"{type_name(obj)} indices must be integers or slices")
        try:
            return obj[key]
        except IndexError:  # a torch.Size's index is a dimension (kind "shape"); a tuple's, a value's
            cls = ShapeError if isinstance(obj, Size) else GradTypeError
            raise cls(f"{type_name(obj)} index out of range") from None
    raise GradTypeError(f"'{type_name(obj)}' object is not subscriptable")


def unpack(value, count):
    """The ``count`` items of ``value`` for ``a, b = value`` (a tensor unpacks along its first dim)."""
    if isinstance(value, Tensor):
        if value.ndim == 0:
            raise GradTypeError("iteration over a 0-d tensor")
        items = [value[i] for i in range(value.shape[0])]
    elif isinstance(value, (tuple, list)):
        items = list(value)
    else:
        raise GradTypeError(f"cannot unpack non-iterable {type_name(value)} object")
    if len(items) != count:
        raise GradTypeError(f"{'too many' if len(items) > count else 'not enough'} values to unpack "
                            f"(expected {count}, got {len(items)})")
    return items


# ------------------------------------------------------------------------------ display

def display(value) -> str:
    """What ``print`` writes for a value (strings as they are, everything else its repr)."""
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


# ------------------------------------------------------------------------------ Python's exceptions

def translate_exception(exc: Exception) -> GradcliError:
    """The gradcli error for a Python exception that escaped an operation."""
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
