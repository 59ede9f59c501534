"""The op registry: one declaration per op, and the one table everything else reads.

An op is its node class(es) (made by ``define_node``: grad_fn name, forward, one derivative
formula per input) and the user-facing function decorated with ``@op``::

    MulBackward0 = define_node("MulBackward0", inputs=("self", "other"), broadcasts=True,
                               forward=lambda xp, a, b: a * b,
                               self="grad * other", other="grad * self")

    @op(MulBackward0, operator="a * b", reflected=True, fast=True)
    def mul(input, other):
        \"\"\"Elementwise product, broadcasting.\"\"\"
        return _binary(MulBackward0, input, other, (), "mul")

From that, and nothing else: the Tensor method (``x.mul(y)``), the operators (``a * b`` and
``2 * a``), the interpreter's whitelist, ``gradcli ops`` (signature read from the function's
own parameters, grad_fn names, formulas, doc) and the docs. See ``docs/ADDING_AN_OP.md``.
"""

from __future__ import annotations

import functools as _functools
import inspect

import numpy as _np
import operator as _operator

from ..autograd.factory import tensor
from ..backend.numpy_fast import number_array
from ..autograd.function import record2, record_number
from ..autograd.grad_mode import STATE as _GRAD_STATE
from ..autograd.tensor import Tensor
from ..errors import GradcliError, GradTypeError

# How each spelling of an operator reaches Python's data model. A binary operator's reflected
# form (``2 * a``) is ``__r<name>__``; the in-place ones are ``__i<name>__``.
_DUNDERS = {
    "a + b": "add", "a - b": "sub", "a * b": "mul", "a / b": "truediv", "a @ b": "matmul", "a ** b": "pow",
    "a < b": "lt", "a <= b": "le", "a > b": "gt", "a >= b": "ge", "a == b": "eq", "a != b": "ne",
    "a & b": "and", "a | b": "or", "-a": "neg", "abs(a)": "abs", "a % b": "mod", "a // b": "floordiv",
    "a += b": "iadd", "a -= b": "isub", "a *= b": "imul", "a /= b": "itruediv", "a %= b": "imod",
    "a //= b": "ifloordiv",
}
# The array operation each fast operator path runs (``fast=True``): the operator itself.
_ARRAY_OPERATORS = {"a + b": _operator.add, "a - b": _operator.sub, "a * b": _operator.mul,
                    "a / b": _operator.truediv}
# ... and in place, for their in-place variants' fast path (``p -= lr * g`` under no_grad: inplace.py)
_IN_PLACE = {"a + b": _operator.iadd, "a - b": _operator.isub, "a * b": _operator.imul,
             "a / b": _operator.itruediv}


class Op:
    """One user-facing function: what ``gradcli ops`` prints and the interpreter allows."""

    __slots__ = ("name", "fn", "method", "nodes", "doc", "differentiable", "category", "operator", "namespaces",
                 "alias_of")

    def __init__(self, name, fn, method, nodes, doc, differentiable, category, operator, namespaces=("torch",)):
        self.name = name
        self.fn = fn
        self.method = method            # True, a method name other than ``name``, or False
        self.nodes = nodes              # the node classes it records
        self.doc = doc
        self.differentiable = differentiable
        self.category = category
        self.operator = operator        # its spelling as an operator ("a + b"), or None
        self.namespaces = namespaces    # the modules a program reaches it in ("torch": also a bare name)
        self.alias_of = None            # torch's other spelling of this op: that op's name (see ``alias``)

    @property
    def grad_fns(self) -> tuple:
        return tuple(cls.__name__ for cls in self.nodes)

    @property
    def parameters(self) -> list[str]:
        """``["input", "other", "*", "alpha=1"]``: the function's own parameters, as written."""
        return parameter_texts(self.fn)

    @property
    def sizes_parameter(self) -> str | None:
        """For an op whose method takes its sizes one by one after the tensor (``*dims``:
        ``x.permute(1, 0)``, ``flip(input, dims, *more_dims)``), the name torch gives the sequence
        they make (``dims``); else None (``zeros(*size)`` has no tensor before its sizes)."""
        params = self.parameters
        if any(p[:1] == "*" and p[:2] != "**" and p != "*" for p in params[1:]):
            return params[1].lstrip("*")
        return None

    @property
    def signature(self) -> str:
        """``add(input, other, *, alpha=1)``: read from the function's own parameters."""
        return f"{self.name}({', '.join(self.parameters)})"

    @property
    def arity(self) -> int:
        """Number of tensor arguments (the leading positional ones; ``*tensors`` counts as one)."""
        count = 0
        for p in inspect.signature(self.fn).parameters.values():
            if p.kind is p.VAR_POSITIONAL and p.name == "tensors":
                return count + 1
            if p.kind is not p.POSITIONAL_OR_KEYWORD or p.default is not p.empty:
                break
            count += 1
        return count


def parameter_texts(fn) -> list[str]:
    """The parameters of ``fn`` as a ``def`` spells them, without annotations (``*`` before the
    keyword-only ones where no ``*args`` stands)."""
    texts, star = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            texts.append("*")
        star = star or p.kind in (p.VAR_POSITIONAL, p.KEYWORD_ONLY)
        texts.append(str(p.replace(annotation=p.empty)))
    return texts


FUNCTIONS: dict[str, Op] = {}        # by name, in declaration order
BY_FUNCTION: dict = {}               # the function object -> its Op
BINARY_OPERATORS: dict = {}          # "+" -> the function ``a + b`` runs when ``a`` is a tensor
INPLACE_OPERATORS: dict = {}         # "+" -> the function ``a += b`` runs on a tensor ``a``
NAMESPACES: dict = {}                # "torch.nn.functional" -> {name: Op}: what ``F.<name>`` reaches


def op(*nodes, method: bool | str = True, operator: str | None = None, reflected=None, fast: bool = False,
       differentiable: bool = True, category: str = "math", name: str | None = None,
       namespaces: tuple = ("torch",), inplace: bool | str = False):
    """Register ``fn`` as a user-facing op.

    ``namespaces``: the PyTorch modules a program reaches it through (``import torch.nn.functional
    as F; F.relu(x)``). ``"torch"`` (the default) makes it ``torch.<name>`` and a bare name of the
    dialect (``relu(x)``); an op of ``("torch.nn.functional",)`` alone is only ``F.<name>``, as
    ``mse_loss`` is in PyTorch. Any module path works (``"torch.autograd"``, ``"torch.cuda"``).

    ``nodes``: the node classes it records. ``method``: also a Tensor method (True: of the same
    name; a string: under that name). ``operator``: its spelling as an operator (a key of
    ``_DUNDERS``); ``reflected``: for a binary operator, what ``2 * a`` runs: True for the
    op itself with the tensor first (commutative ops), or a function ``(tensor, other)``.
    ``fast``: the operator on two tensors of one dtype, shape and device is exactly the array
    operator on their arrays (the op's defaults for its attributes), so it may skip the
    checks, casts and broadcasting of the general function: the per-op fast path.
    ``inplace``: also register its in-place variant ``<name>_`` (a Tensor method, and
    ``torch.<name>_`` where torch has one), derived by ``ops/inplace.py``; a string is the
    variant's operator spelling (``"a += b"``).
    """
    def register(fn):
        fname = name or fn.__name__
        doc = (fn.__doc__ or "").strip().split("\n")[0]
        plain = fn
        fn = _with_numpy_names(fn, fname)
        info = Op(fname, fn, method, tuple(nodes), doc, differentiable, category, operator, tuple(namespaces))
        FUNCTIONS[fname] = info
        for module in info.namespaces:
            NAMESPACES.setdefault(module, {})[fname] = info
        BY_FUNCTION[fn] = info
        BY_FUNCTION[plain] = info
        if method:
            setattr(Tensor, fname if method is True else method, fn)
        if operator is not None:
            _install_operator(info, reflected, fast)
        if inplace:
            _register_inplace(fn, fname, inplace, differentiable, _IN_PLACE.get(operator) if fast else None)
        return fn
    return register


def _register_inplace(fn, fname: str, inplace, differentiable: bool = True, into=None) -> None:
    from .inplace import TORCH_FUNCTIONS, inplace_variant
    iname = fname + "_"
    # the variant has a gradient where its out-of-place op has one (floor_divide_ has none)
    op(operator=inplace if isinstance(inplace, str) else None, category="in-place", name=iname,
       namespaces=("torch",) if iname in TORCH_FUNCTIONS else (), differentiable=differentiable)(
        inplace_variant(fn, iname, into))


def alias(name: str, target, *, inplace: bool = False):
    """torch's other spelling of a registered op (``torch.multiply`` for ``mul``, ``x.arcsin()``
    for ``asin``): the op itself under ``name`` -- its nodes, its checks, its messages, its
    namespaces -- as a function and a method, and ``name_`` in place where torch has that too
    (``inplace``: ``x.multiply_(y)`` records MulBackward0)."""
    info = BY_FUNCTION[target]
    own = f"{info.name}("

    @_functools.wraps(target)  # (its signature: inspect follows __wrapped__)
    def fn(*args, **kwargs):
        try:
            return target(*args, **kwargs)
        except GradcliError as err:  # a message naming the op names the spelling called, as torch's
            if err.message.startswith(own):
                err.message = name + err.message[len(info.name):]
                err.args = (err.message,)
            raise
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Alias of {info.name}: {info.doc}"
    fn = op(*info.nodes, differentiable=info.differentiable, category=info.category, namespaces=info.namespaces,
            inplace=inplace)(fn)
    FUNCTIONS[name].alias_of = info.name
    if inplace:
        FUNCTIONS[name + "_"].alias_of = info.name + "_"
    return fn


def module_form(module: str, fn, name: str | None = None) -> None:
    """A module's own spelling of a registered op (``F.relu(x, inplace=False)`` beside
    ``torch.relu(x)``; ``name``: under another name, ``torch.special.expit`` for sigmoid): what
    ``module.<name>`` reaches, listed as the op it calls."""
    like = FUNCTIONS[fn.__name__]
    NAMESPACES.setdefault(module, {})[name or fn.__name__] = Op(
        like.name, fn, False, like.nodes, like.doc, like.differentiable, like.category, None, (module,))


_NO_AXIS = {"norm"}  # torch's Tensor.norm takes no axis=


def _with_numpy_names(fn, name):
    """torch's NumPy-style keyword aliases, ``axis=`` for ``dim=`` and ``keepdims=`` for
    ``keepdim=``, for an op with a ``dim`` parameter (its signature, shown by ``gradcli ops``,
    stays torch's own)."""
    params = _parameter_names(fn)
    if "dim" not in params or "axis" in params or name in _NO_AXIS:
        return fn

    @_functools.wraps(fn)
    def aliased(*args, **kwargs):
        if not kwargs:  # the usual call, x.sum(1): no dict to unpack again
            return fn(*args)
        if "axis" in kwargs or "keepdims" in kwargs:
            for alias, real in (("axis", "dim"), ("keepdims", "keepdim")):
                if alias in kwargs:
                    if real in kwargs:
                        raise GradTypeError(f"{name}() received both '{real}' and its alias '{alias}'")
                    kwargs[real] = kwargs.pop(alias)
        return fn(*args, **kwargs)
    return aliased


def _parameter_names(fn) -> frozenset:
    """The names of ``fn``'s parameters (those ``inspect.signature`` lists, in no order), read
    from its code object where it has one: every op is registered at import, and building a
    Signature for each cost ~3 ms of every start."""
    fn = inspect.unwrap(fn, stop=lambda f: hasattr(f, "__signature__"))
    code = getattr(fn, "__code__", None)
    if code is None or hasattr(fn, "__signature__"):
        return frozenset(inspect.signature(fn).parameters)
    count = (code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS)
             + bool(code.co_flags & inspect.CO_VARKEYWORDS))
    return frozenset(code.co_varnames[:count])


def _install_operator(info: Op, reflected, fast: bool) -> None:
    spelling = info.operator
    dunder = _DUNDERS[spelling]
    fn = info.fn
    if fast:
        fn = _fast_operator(info)
    setattr(Tensor, f"__{dunder}__", fn)
    symbol = spelling.split()[1] if spelling.startswith("a ") else None
    if dunder.startswith("i"):
        INPLACE_OPERATORS[symbol[:-1]] = info.fn
    elif symbol is not None:
        BINARY_OPERATORS[symbol] = fn
    if reflected is not None:
        # ``2 * a`` is ``a * 2`` for a commutative op: the same (fast) function
        setattr(Tensor, f"__r{dunder}__", fn if reflected is True else reflected)


# Broadcast shapes of pairs of shapes that broadcast, (shape a, shape b) -> result's shape: filled by
# the binary ops' general path (ops/pointwise.py's _check_broadcast, which also checks the limits).
BROADCASTS: dict = {}


# The fast path's arrays: NumPy's (the CPU backend's). CuPy's and array-api-strict's take the general
# function (array-api-strict warns when its dtypes meet NumPy's).
_NDARRAY = _np.ndarray
_F16 = _np.dtype(_np.float16)


def _fast_operator(info: Op):
    """``Tensor.__mul__`` and friends, shared by every binary operator declared ``fast=True``:
    two tensors of one floating dtype and device whose shapes are equal (what a chain of arithmetic
    is made of) or broadcast to one of the two (``x + row``: a pair of shapes the general path has
    checked before, and a result no larger than an operand, so no limit to check), or a tensor and
    a Python number (``y * 1.0001``, ``w - 0.1 * g``: the tensor's dtype wins, by torch's rule and
    NumPy's for Python scalars), go straight to the array operator and the recording (``record2``
    keeps a broadcast input's shape for the backward's sum_to); anything else (a new pair of
    shapes, a result larger than both, promotion, integers, errors, a formula running under
    create_graph, where torch records its Scalar overloads) takes the op's function."""
    cls = info.nodes[0]
    compute = _ARRAY_OPERATORS[info.operator]
    general = info.fn
    defaults = inspect.signature(general).parameters
    attrs = tuple(defaults[a].default for a in cls.attr_names)
    grad_state = _GRAD_STATE
    broadcasts = BROADCASTS

    def operator(a, b):
        kind = b.__class__
        da = a._data
        if da.__class__ is _NDARRAY and da.dtype.kind == "f" and not grad_state.formula:
            if kind is Tensor:
                db = b._data
                if da.dtype == db.dtype and a._backend is b._backend:
                    sa, sb = da.shape, db.shape
                    if sa == sb or broadcasts.get((sa, sb)) in (sa, sb):
                        return record2(cls, a, b, da, db, compute(da, db), attrs)
            elif (kind is float or kind is int) and da.dtype is not _F16:  # (float16: the op's kernel, in float32)
                return record_number(cls, a, b, da, compute(da, number_array(b, da.dtype)), attrs)
        return general(a, b)
    operator.__name__ = operator.__qualname__ = f"__{_DUNDERS[info.operator]}__"
    operator.__doc__ = general.__doc__
    return operator


def as_tensor_arg(x, like: Tensor | None = None, what: str = "argument") -> Tensor:
    """Accept a Tensor, or a Python number/list, for an argument that must be a tensor."""
    if x.__class__ is Tensor:
        return x
    if isinstance(x, (bool, int, float, list, tuple)):
        device = str(like.device) if like is not None else None
        return tensor(x, device=device)
    raise GradTypeError(f"{what} must be a Tensor or a number, not {type(x).__name__}")
