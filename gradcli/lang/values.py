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
from ..errors import GradcliError, GradKeyError, GradTypeError, LimitError, ShapeError
from ..limits import MAX_INT_DIGITS, check_int, check_output, check_sequence
from ..ops.reduction import ReturnTypes


_MISSING = object()  # a parameter without a default


class UserFunction:
    """A ``def`` or ``lambda`` of the program. ``params``: ``[(name, default or _MISSING)]``;
    ``body``: statements (``def``) or one expression (``lambda``, ``is_lambda``); ``closure``:
    the enclosing function's variables (None at top level); ``grad_mode``: True/False when a
    decorator (``@torch.no_grad()``) sets grad mode during the call. The program's calls run it
    on the evaluator's own frame stack; calling it from Python (a hook the engine runs) goes
    through :meth:`Evaluator.call_function`."""

    __slots__ = ("name", "params", "body", "is_lambda", "evaluator", "closure", "grad_mode")

    def __init__(self, name, params, body, is_lambda, evaluator, closure=None, grad_mode=None):
        self.name, self.params, self.body, self.is_lambda = name, params, body, is_lambda
        self.evaluator, self.closure, self.grad_mode = evaluator, closure, grad_mode

    def __call__(self, *args, **kwargs):
        return self.evaluator.call_function(self, args, kwargs)

    def bind(self, args, kwargs) -> dict:
        """The call's local variables: parameters bound as Python binds them, with its messages."""
        name, params = self.name, self.params
        scope = dict(self.closure) if self.closure else {}
        if len(args) > len(params):
            raise GradTypeError(f"{name}() takes {len(params)} positional argument"
                                f"{'' if len(params) == 1 else 's'} but {len(args)} were given")
        names = [p for p, _ in params]
        for key in kwargs:
            if key not in names:
                raise GradTypeError(f"{name}() got an unexpected keyword argument '{key}'")
        for i, (param, default) in enumerate(params):
            if i < len(args):
                if param in kwargs:
                    raise GradTypeError(f"{name}() got multiple values for argument '{param}'")
                scope[param] = args[i]
            elif param in kwargs:
                scope[param] = kwargs[param]
            elif default is not _MISSING:
                scope[param] = default
            else:
                missing = [p for j, (p, d) in enumerate(params[i:], i)
                           if j >= len(args) and p not in kwargs and d is _MISSING]
                quoted = " and ".join(", ".join(f"'{m}'" for m in missing).rsplit(", ", 1))
                raise GradTypeError(f"{name}() missing {len(missing)} required positional argument"
                                    f"{'' if len(missing) == 1 else 's'}: {quoted}")
        return scope

    def __repr__(self) -> str:
        return f"<function {self.name}>"


class BuiltinRef:
    """A whitelisted function used as a value (``act = F.relu``, ``isinstance(x, float)``,
    ``from torch import ones``): calling it calls the function, through the sandbox."""

    __slots__ = ("name", "fn")

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def __call__(self, *args, **kwargs):
        from .sandbox import call
        return call(self.fn, args, kwargs)

    def __eq__(self, other):
        return isinstance(other, BuiltinRef) and other.fn is self.fn

    def __hash__(self):
        return hash(self.fn)

    def __repr__(self) -> str:
        return f"<built-in function {self.name}>"


class TypeOf:
    """What ``type(value)`` gives a program: it prints as Python's ``<class 'float'>`` (torch's
    names for torch's types: ``<class 'torch.Tensor'>``), equals the builtin that names the same
    type (``type(x) == float``), and ``isinstance`` takes it; it is not callable and has no members."""

    __slots__ = ("cls", "label")

    def __init__(self, cls, label):
        self.cls, self.label = cls, label

    def __eq__(self, other):
        if isinstance(other, TypeOf):
            return other.cls is self.cls
        if isinstance(other, BuiltinRef):
            from .sandbox import python_type
            return python_type(other) is self.cls
        return False

    def __hash__(self):
        return hash(self.cls)

    def __repr__(self) -> str:
        return f"<class '{self.label}'>"


def type_name(obj) -> str:
    """How messages name the type of a value: ``Tensor``, ``AddBackward0``, ``function``, ``int``..."""
    if isinstance(obj, Tensor):
        return "Tensor"
    if isinstance(obj, Node):
        return obj.name_for_repr()
    if isinstance(obj, (UserFunction, BuiltinRef)):
        return "function"
    return getattr(type(obj), "type_label", type(obj).__name__)  # a module: "module"


# ------------------------------------------------------------------------------ operators

_NUMERIC = (int, float, bool, Tensor)
_COMPARES = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
             "!=": operator.ne}
_FLIPPED = {"<": operator.gt, "<=": operator.ge, ">": operator.lt, ">=": operator.le}


def check_operand(v, op, allow_none=False):
    if isinstance(v, _NUMERIC) or (allow_none and v is None):
        return
    if op in ("==", "!=") and isinstance(v, (str, _dtype, _device, Size, tuple, list, Node, TypeOf, BuiltinRef)):
        return
    raise GradTypeError(f"unsupported operand type for {op}: '{type_name(v)}'")


_SEQUENCES = (str, list, tuple)
# Short paths of binary_op, each what its general path does for these operands: a tensor with a
# number (Python's operator: the tensor's own), two numbers (``+ - *``: Python's, within the int cap).
_PLAIN = frozenset((int, float, Tensor))
_TENSOR_NUMBER = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
                  "**": operator.pow, "%": operator.mod, "//": operator.floordiv}
# binary_op's first case, by the class of the operand on the right of a tensor: the operators whose
# declared function takes it as it is (every one a tensor; those of _TENSOR_NUMBER a Python number,
# ``x * 1.5``). The evaluator's walks test it inline: ``op in DIRECT_OPERATORS[b.__class__]``.
_NUMBER_OPERATORS = frozenset(op for op in _TENSOR_NUMBER if op in BINARY_OPERATORS)


class _ByClass(dict):
    """A class's operators, none for a class not listed (a subscript: cheaper than ``.get`` on the hot path)."""
    __slots__ = ()

    def __missing__(self, key):
        return ()


DIRECT_OPERATORS = _ByClass({Tensor: BINARY_OPERATORS.keys(), float: _NUMBER_OPERATORS, int: _NUMBER_OPERATORS})
_NUMBER_NUMBER = {"+": lambda a, b: check_int(a + b), "-": lambda a, b: check_int(a - b),
                  "*": lambda a, b: check_int(a * b)}
MAX_SEQUENCE = 10_000_000  # the longest string or list an operator may build


def binary_op(op, a, b):
    """``a op b`` for ``op`` in ``+ - * / @ ** % //``."""
    ca, cb = a.__class__, b.__class__
    if ca is Tensor and op in DIRECT_OPERATORS[cb]:
        # the common cases, a tensor with a tensor or a Python number: the function the op declared
        # for its operator (what Tensor's operator is, without Python's dispatch to it)
        return BINARY_OPERATORS[op](a, b)
    if ca in _PLAIN and cb in _PLAIN:  # a tensor and a number, or two numbers: what the checks below allow
        fn = (_TENSOR_NUMBER if ca is Tensor or cb is Tensor else _NUMBER_NUMBER).get(op)
        if fn is not None:
            return fn(a, b)
    if isinstance(a, _SEQUENCES) or isinstance(b, _SEQUENCES):
        return _sequence_op(op, a, b)
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
    if op in ("%", "//"):
        if isinstance(a, Tensor) or isinstance(b, Tensor):  # remainder and floor_divide (2 % x: reflected)
            return a % b if op == "%" else a // b
        if b == 0:
            raise GradTypeError("integer modulo by zero" if op == "%" else "integer division or modulo by zero")
        return a % b if op == "%" else a // b
    raise GradTypeError(f"unsupported operator {op}")


def _sequence_op(op, a, b):
    """Strings, lists and tuples: ``+`` joins, ``*`` repeats (within :data:`MAX_SEQUENCE`),
    ``str % values`` formats (:mod:`gradcli.lang.formatting`)."""
    if op == "%" and isinstance(a, str):
        from .formatting import percent_format
        return percent_format(a, b)
    if op == "+" and type(a) is type(b):
        if len(a) + len(b) > MAX_SEQUENCE:
            raise LimitError(f"a {type(a).__name__} of more than {MAX_SEQUENCE:,} items")
        check_sequence(len(a) + len(b), 1 if isinstance(a, str) else 8)
        return a + b
    if op == "*":
        seq, n = (a, b) if isinstance(a, _SEQUENCES) else (b, a)
        if isinstance(n, int) and not isinstance(n, bool) and isinstance(seq, _SEQUENCES):
            if len(seq) * max(n, 0) > MAX_SEQUENCE:
                raise LimitError(f"a {type(seq).__name__} of more than {MAX_SEQUENCE:,} items")
            check_sequence(len(seq) * max(n, 0), 1 if isinstance(seq, str) else 8)
            return seq * n
    bad = a if not isinstance(a, _SEQUENCES) else b
    raise GradTypeError(f"unsupported operand types for {op}: '{type_name(a)}' and '{type_name(b)}'"
                        if bad is not None else f"unsupported operand type for {op}")


def unary_op(op, v):
    """``-v`` or ``+v``."""
    check_operand(v, op)
    return -v if op == "-" else +v


def compare(op, a, b):
    """``a op b`` for ``op`` in ``< <= > >= == != in not in is is not`` (a number against a
    tensor compares elementwise)."""
    if op == "is":
        return a is b
    if op == "is not":
        return a is not b
    if op == "in" or op == "not in":
        found = contains(b, a)
        return found if op == "in" else not found
    if isinstance(a, str) and isinstance(b, str):
        return _COMPARES[op](a, b)
    check_operand(a, op, allow_none=True)
    check_operand(b, op, allow_none=True)
    fn = _COMPARES[op]
    if not isinstance(a, Tensor) and isinstance(b, Tensor):
        return _FLIPPED.get(op, fn)(b, a)
    return fn(a, b)


def contains(container, item) -> bool:
    """``item in container``: lists, tuples, ranges, strings, sizes, and tensors (as torch: any
    element equal)."""
    if isinstance(container, Tensor):
        if not isinstance(item, (Tensor, int, float, bool)):
            raise GradTypeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type_name(item)}")
        return bool((container == item).any().item()) if hasattr(container, "any") else any(
            v == (item.item() if isinstance(item, Tensor) else item) for v in _flat(container.tolist()))
    if isinstance(container, str):
        if not isinstance(item, str):
            raise GradTypeError(f"'in <string>' requires string as left operand, not {type_name(item)}")
        return item in container
    if isinstance(container, range):
        return isinstance(item, (int, float)) and item in container  # arithmetic, not a scan
    if isinstance(container, (list, tuple, Size)):
        return any(v is item or truth(compare("==", v, item)) for v in container)
    if type(container) is dict or type(container) is _DICT_KEYS:
        return hashable(item) in container
    if type(container) is _DICT_VALUES or type(container) is _DICT_ITEMS:
        return any(v is item or truth(compare("==", v, item)) for v in container)
    raise GradTypeError(f"argument of type '{type_name(container)}' is not iterable")


def _flat(values):
    stack, out = [values], []
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        else:
            out.append(v)
    return out


def truth(value) -> bool:
    """Python's truth of a value, as ``if``/``while``/``and``/``not`` read it (a tensor: only one
    element, as torch)."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise GradTypeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(value.item())
    try:
        return bool(value)
    except (TypeError, ValueError) as exc:
        raise GradTypeError(str(exc)) from None


_DICT_KEYS, _DICT_VALUES, _DICT_ITEMS = type({}.keys()), type({}.values()), type({}.items())
_ITERABLE = (list, tuple, range, str, Size, dict, _DICT_KEYS, _DICT_VALUES, _DICT_ITEMS,
             enumerate, zip, type(reversed([])), type(iter(range(0))), type(reversed(range(0))), type(iter([])),
             type(iter(())), type(iter("")))


def iterate(value):
    """An iterator over ``value`` for ``for`` and comprehensions: Python's sequences, and a tensor
    along its first dimension (``x.unbind(0)``, one UnbindBackward0 node, as torch's ``__iter__``)."""
    if isinstance(value, Tensor):
        return iter(value)
    if isinstance(value, ReturnTypes):
        return iter(tuple(value))
    if isinstance(value, _ITERABLE):
        return iter(value)
    raise GradTypeError(f"'{type_name(value)}' object is not iterable")


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

def setitem(obj, index, value) -> None:
    """``obj[i, j, ...] = value``: tensors only (the language has no mutable lists)."""
    if not isinstance(obj, Tensor):
        raise GradTypeError(f"'{type_name(obj)}' object does not support item assignment")
    obj[index[0] if len(index) == 1 else tuple(index)] = value


def subscript(obj, index):
    """``obj[i, j, ...]``; ``index`` is the list of index values (ints, slices, None, ...)."""
    key = index[0] if len(index) == 1 else tuple(index)
    if isinstance(obj, Tensor):
        return obj[key]
    if type(obj) is dict:
        return dict_get(obj, key)
    if isinstance(obj, (tuple, list, Size, ReturnTypes)):
        if not isinstance(key, (int, slice)) or isinstance(key, bool):
            raise GradTypeError(f"{type_name(obj)} indices must be integers or slices")
        if key.__class__ is slice:  # a copy: a large one is checked against the memory budget first
            check_sequence(len(range(*key.indices(len(obj)))), 8)
        try:
            return obj[key]
        except IndexError:  # a torch.Size's index is a dimension (kind "shape"); a tuple's, a value's
            cls = ShapeError if isinstance(obj, Size) else GradTypeError
            raise cls(f"{type_name(obj)} index out of range") from None
    raise GradTypeError(f"'{type_name(obj)}' object is not subscriptable")


MAX_KEY_DEPTH = 100  # tuples in a dict key nested deeper are refused: Python's hash of a
# tuple recurses in C without a guard (a tuple nested 10**6 deep crashes the interpreter)


def hashable(key):
    """``key`` as a dict key: Python's hashable values (numbers, strings, None, tuples of them,
    tensors by identity as in torch), else Python's TypeError. Tuples are walked first with an
    explicit stack, so that ``hash`` never meets one nested deeper than MAX_KEY_DEPTH."""
    if type(key) is tuple:
        stack = [(key, 1)]
        while stack:
            item, depth = stack.pop()
            if depth > MAX_KEY_DEPTH:
                raise GradTypeError(f"a dict key of tuples nested more than {MAX_KEY_DEPTH} deep")
            stack.extend((x, depth + 1) for x in item if type(x) is tuple)
    try:
        hash(key)
    except TypeError:
        raise GradTypeError(f"unhashable type: '{type_name(key)}'") from None
    return key


def make_dict(args):
    """``{k0: v0, k1: v1, ...}`` from the evaluated ``[k0, v0, k1, v1, ...]`` (a later key wins)."""
    return {hashable(args[i]): args[i + 1] for i in range(0, len(args), 2)}


def dict_get(d: dict, key):
    """``d[key]``: Python's KeyError, as a bad-input error naming the key."""
    try:
        return d[hashable(key)]
    except KeyError:
        raise GradKeyError(f"KeyError: {key!r}" if isinstance(key, (str, int, float, tuple)) or key is None
                           else f"KeyError: {type_name(key)} key not in the dict") from None


def unpack(value, count):
    """The ``count`` items of ``value`` for ``a, b = value`` (a tensor unpacks as torch's iterator:
    ``unbind(0)``, one UnbindBackward0; a dict gives its keys, as Python)."""
    if isinstance(value, Tensor):
        items = list(iter(value))
    elif isinstance(value, (tuple, list, dict)):
        items = list(value)
    else:
        raise GradTypeError(f"cannot unpack non-iterable {type_name(value)} object")
    if len(items) != count:
        raise GradTypeError(f"{'too many' if len(items) > count else 'not enough'} values to unpack "
                            f"(expected {count}, got {len(items)})")
    return items


# ------------------------------------------------------------------------------ display

def display(value, limit: int | None = None) -> str:
    """What ``print`` and ``str`` write for a value, as Python's: its ``str`` (a string as it is, a
    device as ``cpu``, where its repr is ``device(type='cpu')``), the items of a list, tuple or dict
    by their repr; a LimitError rather than a text over ``limit`` characters (``--max-output``)."""
    if isinstance(value, str):
        text = value
    elif type(value) is list or type(value) is tuple or type(value) is dict:
        text = _repr_nested(value, limit)
    else:
        text = str(value)
    if limit is not None:
        check_output(len(text), "the printed text", limit)
    return text


def repr_text(value) -> str:
    """What Python's ``repr`` writes for a value (``repr()``, ``!r`` in a format): a list, tuple or
    dict as :func:`display` writes it (its items by their repr, without recursion)."""
    if type(value) is list or type(value) is tuple or type(value) is dict:
        return display(value)
    return repr(value)


class _Punct(str):
    """A bracket or separator while :func:`_repr_nested` writes a list out."""


def _repr_nested(value, limit: int | None = None) -> str:
    """``repr`` of nested lists and tuples with an explicit stack: Python's own fails (RecursionError)
    past about 1,000 levels, and a program can build a list 10,000 deep. A list that contains
    itself (``xs.append(xs)``) shows ``[...]`` there, as Python's does. Pieces are joined every
    few thousand, so the text costs about its own length in memory, and it stops with a LimitError
    once past ``limit`` characters (a list of 10**6 long strings would take gigabytes)."""
    chunks, parts = [], []
    stack = [value]
    open_ids: set = set()
    size = 0
    limit = limit if limit is not None else float("inf")
    while stack:
        if len(parts) >= 4096:
            chunks.append("".join(parts))
            parts.clear()
            if size > limit:
                check_output(size, "the printed text", limit)
        item = stack.pop()
        if item.__class__ is _Punct:
            piece = str.__str__(item)
        elif item.__class__ is _Closed:
            open_ids.discard(item.id)
            piece = item.text
        elif type(item) is dict:
            if id(item) in open_ids:
                piece = "{...}"
            else:
                open_ids.add(id(item))
                piece = "{"
                if size + 6 * len(item) > limit:  # each pair takes ": ", ", " and a character each side
                    check_output(size + 6 * len(item), "the printed text", limit)
                stack.append(_Closed(id(item), "}"))
                pairs = list(item.items())
                for i in range(len(pairs) - 1, -1, -1):
                    stack.extend((pairs[i][1], _COLON, pairs[i][0]))
                    if i:
                        stack.append(_COMMA)
        elif type(item) is list or type(item) is tuple:
            is_list = type(item) is list
            if id(item) in open_ids:
                piece = "[...]" if is_list else "(...)"
            else:
                open_ids.add(id(item))
                piece = "[" if is_list else "("
                if size + 3 * len(item) > limit:  # each item takes a character and ", " at least
                    check_output(size + 3 * len(item), "the printed text", limit)
                stack.append(_Closed(id(item), "]" if is_list else ",)" if len(item) == 1 else ")"))
                for i in range(len(item) - 1, -1, -1):
                    stack.append(item[i])
                    if i:
                        stack.append(_COMMA)
        else:
            piece = repr(item)
        parts.append(piece)
        size += len(piece)
    chunks.append("".join(parts))
    return "".join(chunks)


_COMMA = _Punct(", ")
_COLON = _Punct(": ")


class _Closed:
    """The end of a list or tuple while :func:`_repr_nested` writes it out."""
    __slots__ = ("id", "text")

    def __init__(self, id_, text):
        self.id, self.text = id_, text


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
