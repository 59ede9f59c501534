"""What a program can reach: the whitelists of functions, constants and members.

A program reaches the engine only through these tables: the function table
(``gradcli.ops.registry.FUNCTIONS``) plus a few language builtins (:data:`BUILTINS`), named
constants (:data:`CONSTANTS`), and fixed member tables per type (tensor attributes and methods,
graph nodes, handles, dtypes, sizes). There is no ``eval``, no ``getattr`` on a user's string,
and no value from which Python itself is reachable: an unknown name or member is a
``GradNameError`` with a suggestion. :func:`call` runs a whitelisted function and turns a
wrong argument into torch's message.
"""

from __future__ import annotations

import math
import operator
import re

from ..autograd.engine import backward as _backward, grad as _grad
from ..autograd.grad_mode import STATE as _GRAD, enable_grad, no_grad, set_grad_enabled
from ..autograd.grad_mode import inference_mode, is_inference_mode_enabled
from ..autograd.introspection import saved_fields, saved_tensors_hooks
from ..autograd.node import AccumulateGrad, Node, RemovableHandle
from ..autograd.tensor import Tensor
from ..autograd.views import grad_fn_of
from ..backend.dtypes import DTYPES, Size, device as _device, dtype as _dtype, get_default_dtype, set_default_dtype
from ..backend.generator import Generator
from ..errors import GradcliError, GradNameError, GradTypeError, LimitError, ShapeError
from ..limits import check_sequence
from ..ops import registry
from ..ops.reduction import ReturnTypes
from .modules import Module, member
from .values import BuiltinRef, TypeOf, UserFunction, iterate, repr_text, truth, type_name

# ------------------------------------------------------------------------------ members

_TENSOR_ATTRS = ("data", "grad", "grad_fn", "requires_grad", "is_leaf", "shape", "dtype", "device", "ndim",
                 "T", "mT", "retains_grad", "is_cuda", "volatile")
_TENSOR_METHODS = ("backward", "retain_grad", "register_hook", "register_post_accumulate_grad_hook",
                   "requires_grad_", "detach", "detach_",
                   "zero_", "item", "tolist", "size", "dim", "numel", "to", "cpu", "cuda", "double", "float",
                   "half", "long", "int", "bool", "contiguous", "is_contiguous", "is_floating_point")
TENSOR_ATTRS = {name: operator.attrgetter(name) for name in _TENSOR_ATTRS}
TENSOR_ATTRS["grad_fn"] = grad_fn_of  # a view whose base changed in place may refuse, as torch's
TENSOR_METHODS: dict = {}  # filled from the op registry by registered_builtins()


def register_hook(self, hook):
    # Only the program's own lambdas are hooks: anything else would fail inside backward.
    if self.requires_grad and not isinstance(hook, (UserFunction, BuiltinRef)):
        raise GradTypeError(f"register_hook expects a function such as lambda g: g * 2, not {type_name(hook)}")
    return Tensor.register_hook(self, hook)


def _user_hook(hook):
    # Only the program's own functions are hooks: anything else would fail inside backward.
    if not isinstance(hook, UserFunction):
        raise GradTypeError(f"a hook must be a function such as lambda grad_inputs, grad_outputs: None, "
                            f"not {type_name(hook)}")
    return hook


def register_post_accumulate_grad_hook(self, hook):
    return Tensor.register_post_accumulate_grad_hook(self, _user_hook(hook))


def _no_member(obj, name):
    raise GradNameError(f"'{type_name(obj)}' object has no attribute '{name}'")


class _NodeAttrs(dict):
    """The node attributes a program may read: the fixed ones, and any ``_saved_<field>`` that the
    node's class declares (``gradcli.autograd.introspection.saved_fields``), torch's names."""

    def __contains__(self, name):
        return dict.__contains__(self, name) or (
            isinstance(name, str) and name.startswith("_saved_") and name[7:].isidentifier())

    def __getitem__(self, name):
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        return lambda n: _saved_field(n, name)


def _saved_field(node, name):
    if name[7:] not in saved_fields(type(node)):
        _no_member(node, name)
    return getattr(node, name)


NODE_ATTRS = _NodeAttrs({"next_functions": operator.attrgetter("next_functions"),
                         "variable": lambda n: n.variable if isinstance(n, AccumulateGrad) else _no_member(n, "variable"),
                         "metadata": operator.attrgetter("metadata")})
NODE_METHODS = {"name": lambda n: n.name(), "register_hook": lambda n, fn: Node.register_hook(n, _user_hook(fn)),
                "register_prehook": lambda n, fn: Node.register_prehook(n, _user_hook(fn))}
HANDLE_METHODS = {"remove": RemovableHandle.remove}
RETURN_ATTRS = {"values": operator.itemgetter(0), "indices": operator.itemgetter(1)}
DTYPE_ATTRS = {"is_floating_point": operator.attrgetter("is_floating_point")}
DEVICE_ATTRS = {"type": operator.attrgetter("type"), "index": operator.attrgetter("index")}
SIZE_METHODS = {"numel": Size.numel}
GENERATOR_METHODS = {"manual_seed": Generator.manual_seed, "initial_seed": Generator.initial_seed,
                     "seed": Generator.seed}

def _str_format(self, *args, **kwargs):
    from .formatting import str_format
    return str_format(self, *args, **kwargs)


def _str_join(self, items):
    items = _sized(items)
    if not all(isinstance(i, str) for i in items):
        raise GradTypeError("join() expects strings")
    return self.join(items)


def _list_extend(self, items):
    self.extend(_sized(items))


STR_METHODS = {"format": _str_format, "join": _str_join}
LIST_METHODS = {"append": list.append, "extend": _list_extend, "pop": list.pop, "insert": list.insert,
                "index": list.index, "count": list.count, "clear": list.clear, "reverse": list.reverse}
TUPLE_METHODS = {"index": tuple.index, "count": tuple.count}


def _dict_get(self, key, default=None):
    from .values import hashable
    return self.get(hashable(key), default)


def _dict_pop(self, key, *default):
    from .values import dict_get, hashable
    if default:
        return self.pop(hashable(key), default[0])
    value = dict_get(self, key)
    del self[key]
    return value


DICT_METHODS = {"items": dict.items, "keys": dict.keys, "values": dict.values, "get": _dict_get, "pop": _dict_pop,
                "update": lambda self, other: self.update(_checked_dict(other)), "clear": dict.clear}


def _checked_dict(other):
    if type(other) is not dict:
        raise GradTypeError(f"update() expects a dict, not {type_name(other)}")
    return other
# Attributes a program may assign: ``w.grad = None``, ``x.requires_grad = True``, ``w.data = ...``.
TENSOR_SETTABLE = ("grad", "requires_grad", "data")

# type -> (attributes, methods) the language allows on its values (either may be None)
_MEMBER_TABLES = ((Tensor, TENSOR_ATTRS, TENSOR_METHODS), (Node, NODE_ATTRS, NODE_METHODS),
                  (ReturnTypes, RETURN_ATTRS, None), (_dtype, DTYPE_ATTRS, None), (_device, DEVICE_ATTRS, None),
                  (RemovableHandle, None, HANDLE_METHODS), (Size, None, SIZE_METHODS),
                  (Generator, None, GENERATOR_METHODS),
                  (str, None, STR_METHODS), (list, None, LIST_METHODS), (tuple, None, TUPLE_METHODS),
                  (dict, None, DICT_METHODS))


def _member_tables(obj):
    """``(attributes, methods)`` the language allows on ``obj`` (either may be None)."""
    for cls, attrs, methods in _MEMBER_TABLES:
        if isinstance(obj, cls):
            return attrs, methods
    return None, None


def attribute(obj, name):
    """``obj.name`` (not called); a module's member (``torch.float32``, ``F.relu``)."""
    if obj.__class__ is Module:
        return member(obj, name)
    attrs, methods = _member_tables(obj)
    if attrs is not None and name in attrs:
        return attrs[name](obj)
    if methods is not None and name in methods:
        raise GradTypeError(f"'{name}' is a method: call it, e.g. .{name}()")
    raise GradNameError(f"'{type_name(obj)}' has no member '{name}'"
                        f"{suggest(name, list(attrs or ()) + list(methods or ()))}")


def method(obj, name):
    """The function that ``obj.name(...)`` calls, with ``obj`` as its first argument."""
    attrs, methods = _member_tables(obj)
    if methods is None or name not in methods:
        if attrs is not None and name in attrs:
            raise GradTypeError(f"'{name}' is an attribute, not a method: use .{name} without ()")
        raise GradNameError(f"'{type_name(obj)}' has no method '{name}'"
                            f"{suggest(name, list(methods or ()) + list(attrs or ()))}")
    return methods[name]


# difflib's matching is quadratic in the names' length: the did-you-mean hint looks only at names of
# sensible length and similar size, and at a bounded number of them (a hostile program's 600 KB name
# or 10**5 variables must not turn an error message into minutes of work).
HINT_MAX_LENGTH = 64
HINT_MAX_CANDIDATES = 2000


def set_attribute(obj, name, value):
    """``obj.name = value``: only a tensor's ``grad``, ``requires_grad`` and ``data``."""
    if isinstance(obj, Tensor) and name in TENSOR_SETTABLE:
        if name == "requires_grad" and not isinstance(value, bool):
            raise GradTypeError(f"requires_grad must be a bool, not {type_name(value)}")
        if name != "requires_grad" and not (value is None and name == "grad") and not isinstance(value, Tensor):
            raise GradTypeError(f"assigned {name} expected to be a Tensor or None but got {type_name(value)}")
        setattr(obj, name, value)
        return
    raise GradNameError(f"cannot assign to '{name}' of a {type_name(obj)}: a program may assign "
                        f"{', '.join('.' + n for n in TENSOR_SETTABLE)} of a tensor")


def set_item(obj, index, value):
    """``obj[i] = value``: a list's element, a dict's key, or a tensor's elements (torch's item assignment)."""
    if isinstance(obj, list):
        key = index[0] if len(index) == 1 else None
        if not isinstance(key, (int, slice)) or isinstance(key, bool):
            raise GradTypeError("list indices must be integers or slices")
        try:
            obj[key] = value
        except IndexError:
            raise ShapeError("list assignment index out of range") from None
        return
    if isinstance(obj, Tensor):
        obj[index[0] if len(index) == 1 else tuple(index)] = value
        return
    if type(obj) is dict:
        from .values import hashable
        obj[hashable(index[0] if len(index) == 1 else tuple(index))] = value
        return
    raise GradTypeError(f"'{type_name(obj)}' object does not support item assignment")


def suggest(name: str, candidates) -> str:
    if len(name) > HINT_MAX_LENGTH:
        return ""
    near = []
    for c in candidates:
        if abs(len(c) - len(name)) <= 3 and len(c) <= HINT_MAX_LENGTH:
            near.append(c)
            if len(near) >= HINT_MAX_CANDIDATES:
                break
    import difflib  # only for a name that is not there: not at start-up
    close = difflib.get_close_matches(name, near, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


# ------------------------------------------------------------------------------ functions and constants

def _lang_backward(tensors, gradient=None, retain_graph=None, create_graph=False, grad_tensors=None, inputs=None):
    _backward(tensors, gradient if gradient is not None else grad_tensors, retain_graph, create_graph, inputs)


def _set_grad_enabled(mode):
    return set_grad_enabled(mode)


_MAX_LIST = 10_000_000


def _sized(items):
    if isinstance(items, range) and len(items) > _MAX_LIST:
        raise LimitError(f"a list of {len(items):,} items: over the limit of {_MAX_LIST:,}")
    if hasattr(items, "__len__"):  # a copy (a range's: a pointer and an int object an item)
        check_sequence(len(items), 8 + 32 * isinstance(items, range))
    out = []
    for item in iterate(items):
        out.append(item)
        if len(out) > _MAX_LIST:
            raise LimitError(f"a list of more than {_MAX_LIST:,} items")
    return out


def _has_tensor(args) -> bool:
    return any(isinstance(a, Tensor) for a in args)


def _python_or_op(name, python):
    """``sum``/``max``/``min``/``abs``/``round``: torch's op on a tensor, Python's on numbers and lists."""
    def fn(*args, **kwargs):
        if _has_tensor(args[:1]) or (name in ("max", "min") and len(args) == 2 and _has_tensor(args)):
            return registry.FUNCTIONS[name].fn(*args, **kwargs)
        if name == "abs":
            return python(*args)
        if name == "round":  # round(2.567, 2), round(x, ndigits=1)
            return python(*args, **kwargs)
        items = _sized(args[0]) if len(args) == 1 else list(args)
        if name == "sum":
            total = args[1] if len(args) > 1 else kwargs.get("start", 0)
            for v in items:
                total = total + v
            return total
        return python(items, **{k: v for k, v in kwargs.items() if k == "default"})
    fn.__name__ = name
    return fn


def _range(*args):
    for a in args:
        if not isinstance(a, int) or isinstance(a, bool):
            raise GradTypeError(f"'{type_name(a)}' object cannot be interpreted as an integer")
    return range(*args)


def _isinstance(obj, types):
    kinds = types if isinstance(types, tuple) else (types,)
    for kind in kinds:
        cls = kind.cls if isinstance(kind, TypeOf) else python_type(kind) if isinstance(kind, BuiltinRef) else kind
        if not isinstance(cls, type):
            raise GradTypeError("isinstance() arg 2 must be a type or tuple of types")
        if isinstance(obj, cls):
            return True
    return False


def python_type(ref: BuiltinRef):
    """The Python type a builtin names where it is one (``float``, ``list``, ``str``, ``torch.Tensor``),
    else its function."""
    if ref.name == "Tensor":  # torch.Tensor, a constructor here
        return Tensor
    return _TYPES.get(ref.fn, ref.fn)


# type(value)'s label where Python's own name is not what torch's Python shows
_TYPE_LABELS = {Tensor: "torch.Tensor", _dtype: "torch.dtype", Size: "torch.Size", _device: "torch.device",
                UserFunction: "function",
                BuiltinRef: "builtin_function_or_method", type(None): "NoneType", TypeOf: "type"}


def _type(value):
    """``type(value)``, as a value a program can print and compare (see ``values.TypeOf``)."""
    cls = type(value)
    if isinstance(value, Node):
        return TypeOf(cls, value.name_for_repr())
    if isinstance(value, Module):
        return TypeOf(Module, "module")
    label = _TYPE_LABELS.get(cls)
    if label is None:
        label = "torch.return_types." + value._name if isinstance(value, ReturnTypes) else cls.__name__
    return TypeOf(cls, label)


def _str(value=""):
    from .values import display
    return display(value)


def _sorted(items, reverse=False, key=None):
    items = _sized(items)
    return sorted(items, key=key, reverse=bool(reverse))


# Python's builtins a program may use as values too (``isinstance(x, float)``, ``map``-free code)
PYTHON_BUILTINS = {
    "range": _range, "len": len, "enumerate": lambda items, start=0: enumerate(iterate(items), start),
    "zip": lambda *its: zip(*(iterate(i) for i in its)), "list": lambda items=(): _sized(items),
    "tuple": lambda items=(): tuple(_sized(items)), "isinstance": _isinstance, "str": _str,
    "round": _python_or_op("round", round), "bool": lambda v=False: truth(v), "sorted": _sorted, "type": _type,
    "repr": repr_text,
    "reversed": lambda items: reversed(_sized(items)), "float": float, "int": int,
    "sum": _python_or_op("sum", sum), "max": _python_or_op("max", max), "min": _python_or_op("min", min),
    "abs": _python_or_op("abs", abs), "any": None, "all": None,
}


def _any_or_all(name, python):
    """``any``/``all``: torch's on a tensor, Python's (bounded, tensors' truth) on anything else."""
    def fn(items, *args, **kwargs):
        if isinstance(items, Tensor):
            return registry.FUNCTIONS[name].fn(items, *args, **kwargs)
        return python(truth(i) for i in _sized(items))
    fn.__name__ = name
    return fn


PYTHON_BUILTINS["any"] = _any_or_all("any", any)
PYTHON_BUILTINS["all"] = _any_or_all("all", all)
_TYPES = {PYTHON_BUILTINS["list"]: list, PYTHON_BUILTINS["tuple"]: tuple, _str: str,
          PYTHON_BUILTINS["bool"]: bool}

def _tensor_query(name, query):
    """``torch.<name>(input)`` for a question asked of a tensor (``torch.numel(x)``), torch's message otherwise."""
    def fn(input):
        if not isinstance(input, Tensor):
            raise GradTypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
        return query(input)
    fn.__name__ = name
    return fn


BUILTINS = {
    "is_tensor": lambda obj: isinstance(obj, Tensor),
    "numel": _tensor_query("numel", Tensor.numel),
    "is_floating_point": _tensor_query("is_floating_point", lambda t: t.dtype.is_floating_point),
    "get_default_dtype": get_default_dtype,
    "set_default_dtype": set_default_dtype,  # (each run starts from --dtype again)
    "backward": _lang_backward,
    "grad": _grad,
    "no_grad": no_grad,
    "enable_grad": enable_grad,
    "set_grad_enabled": _set_grad_enabled,
    "is_grad_enabled": lambda: _GRAD.enabled,
    "inference_mode": inference_mode,
    "is_inference_mode_enabled": is_inference_mode_enabled,
    "saved_tensors_hooks": lambda pack_hook, unpack_hook: saved_tensors_hooks(_user_hook(pack_hook),
                                                                              _user_hook(unpack_hook)),
}
# (``print`` is the evaluator's own: it writes to the run's output.)
_LANGUAGE_BUILTINS = dict(BUILTINS)
_READ_FROM = [None]  # (the registry's table, its size) when BUILTINS and TENSOR_METHODS were filled


def registered_builtins() -> dict:
    """The builtins, with every registered op, read from the op registry as it is now: an op
    declared after import (a test's, a plugin's) is reachable at once. ``BUILTINS`` and
    ``TENSOR_METHODS`` are updated in place, so references to them stay valid."""
    functions = registry.FUNCTIONS
    key = (id(functions), len(functions))
    if _READ_FROM[0] != key:
        BUILTINS.clear()
        BUILTINS.update(_LANGUAGE_BUILTINS)
        BUILTINS.update({name: info.fn for name, info in functions.items()
                         if not name.endswith("_") and "torch" in info.namespaces})
        BUILTINS.update({name: PYTHON_BUILTINS[name] for name in ("sum", "max", "min", "abs", "round", "any", "all")
                         if name in BUILTINS})  # torch's on tensors, Python's on numbers
        BUILTINS.update({name: fn for name, fn in PYTHON_BUILTINS.items() if name not in BUILTINS})
        TENSOR_METHODS.clear()
        TENSOR_METHODS.update({name: getattr(Tensor, name) for name in _TENSOR_METHODS})
        TENSOR_METHODS.update({name: info.fn for name, info in functions.items() if info.method is True})
        TENSOR_METHODS["__getitem__"] = Tensor.__getitem__
        TENSOR_METHODS["register_hook"] = register_hook
        TENSOR_METHODS["register_post_accumulate_grad_hook"] = register_post_accumulate_grad_hook
        _READ_FROM[0] = key
    return BUILTINS

# The builtins that run backward: a program that calls one (or the method .backward()) gets no
# implicit backward at its end.
EXPLICIT_BACKWARD = (BUILTINS["backward"], BUILTINS["grad"])

CONSTANTS = {name: d for name, d in DTYPES.items()}
CONSTANTS.update({"float": DTYPES["float32"], "double": DTYPES["float64"], "long": DTYPES["int64"],
                  "half": DTYPES["float16"],
                  "inf": math.inf, "nan": math.nan, "pi": math.pi, "e": math.e})
# 'float' as a dtype constant would shadow the function; keep it a function, as in Python.
del CONSTANTS["float"]


# ------------------------------------------------------------------------------ calling

def check_arguments(args, kwargs):
    """Refuse arguments no function needs (a string of more than 10,000 characters)."""
    for v in args:
        if isinstance(v, str) and len(v) > 10_000:
            raise LimitError("string argument too long")
    if kwargs:
        check_arguments(tuple(kwargs.values()), None)


def call(fn, args, kwargs):
    """``fn(*args, **kwargs)`` for a whitelisted ``fn``, its argument mistakes in torch's words."""
    try:
        return fn(*args, **kwargs)
    except GradcliError:
        raise
    except (TypeError, AttributeError, KeyError) as exc:
        return failed_call(fn, fn, args, kwargs, exc)


def failed_call(fn, target, args, kwargs, exc: Exception):
    """After ``target(*args, **kwargs)`` (``fn``, or ``fn`` with its ``out=`` bound) raised ``exc`` (a
    TypeError, AttributeError or KeyError): the call again where torch's keyword for a sequence of
    sizes was given (``x.view(size=(2, 3))``), else the error in torch's words, raised."""
    moved = sequence_keyword(fn, args, kwargs) if kwargs and exc.__class__ is TypeError else None
    if moved is not None:
        return call(target, *moved)
    err = call_error(fn, args, kwargs, exc)
    if err is exc:
        raise exc
    raise err from None


# torch's keyword for the sizes a shape op takes as ``*args`` where it is not the parameter's own name
_SEQUENCE_KEYWORDS = {"view": "size", "expand": "size"}


def sequence_keyword(fn, args, kwargs):
    """``(args, kwargs)`` for an op that takes its sizes as ``*args`` (``x.view(2, 3)``) called with
    torch's keyword for them (``x.view(size=(2, 3))``, ``torch.permute(x, dims=(1, 0))``,
    ``x.new_ones(size=(2,))``): the sequence moved to its place; None for any other call. Only tried
    once the call has failed: Python refuses that keyword before the op runs."""
    info = registry.BY_FUNCTION.get(fn)
    param = None if info is None or len(args) != 1 else info.sizes_parameter
    key = None if param is None else _SEQUENCE_KEYWORDS.get(info.name, param)
    if key not in kwargs:
        return None
    rest = dict(kwargs)
    return (args[0], rest.pop(key)), rest


def call_error(fn, args, kwargs, exc: Exception) -> Exception:
    """The error for ``fn(*args, **kwargs)`` having raised ``exc`` (a TypeError, or an AttributeError
    or KeyError where an op reached into a number, None or a lambda as if a tensor): torch's
    words for a wrong argument, or ``exc`` itself where there is nothing better to say."""
    message = _wrong_argument(fn, args, kwargs)
    if isinstance(exc, TypeError):
        return GradTypeError(message or _clean_type_error(exc))
    return exc if message is None else GradTypeError(message)


_TENSOR_PARAMS = frozenset(("input", "other", "self", "mat1", "mat2", "vec", "vec2", "tensor", "condition", "exponent"))


def _wrong_argument(fn, args, kwargs):
    """torch's message for an op given something other than a tensor where it takes one, e.g.
    ``mean(2.5)``: "mean(): argument 'input' (position 1) must be Tensor, not float"; or None.
    Used once an op has failed: ops that accept numbers there (``pow(2, x)``) never get here."""
    info = registry.BY_FUNCTION.get(fn)
    if info is None:
        return None
    params = [p.split("=")[0] for p in info.parameters]
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
    return f"{info.name}(): argument '{param}'{where} must be Tensor, not {type_name(value)}"


def _clean_type_error(exc: TypeError) -> str:
    """Python's words for a wrong call, with gradcli's own function names as torch's: ``_to()`` is
    ``to()`` (but ``broadcast_to()`` stays), ``_lang_backward()`` is ``backward()``."""
    return _INNER_NAMES.sub(lambda m: m.group(0)[1:].replace("lang_", ""), str(exc))


_INNER_NAMES = re.compile(r"(?<![A-Za-z0-9_])(?:_lang_backward|_to)\(\)")


registered_builtins()  # the tables as the ops declared at import make them
