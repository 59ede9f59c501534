"""In-place variants derived from op declarations: ``exp_`` from ``exp``, ``clamp_`` from ``clamp``.

``@op(..., inplace=True)`` makes ``name_``: the out-of-place function runs, its result is
written into the tensor, and the tensor takes the result's node as its grad_fn (torch's
rebase_history: ``y.exp_()`` records ExpBackward0; on a view, CopySlices on the base). As in
torch, an overwritten input that the node saved is saved as a copy (``original_self``: sin_,
pow_, mul_ by a tensor), and a saved result is the tensor itself, so changing it in place again
fails its backward with torch's "modified by an inplace operation" message.
"""

from __future__ import annotations

import weakref

from ..autograd.function import apply1
from ..autograd.grad_mode import STATE as _GRAD, no_grad
from ..autograd.node import replace_saved
from ..autograd.tensor import Tensor
from ..autograd.views import ViewInfo, check_inplace, rebase, writable
from ..errors import GradTypeError, RuntimeTypeError, ShapeError

# The in-place functions torch has at module level (``torch.exp_(x)``); the others are methods only.
TORCH_FUNCTIONS = frozenset(
    "relu_ exp_ log_ sigmoid_ tanh_ sin_ cos_ sqrt_ abs_ neg_ clamp_ clamp_min_ clamp_max_ clip_ "
    "square_ reciprocal_ log1p_ tan_ rsqrt_".split())


def inplace_variant(outplace, name: str):
    """The function ``name`` (``exp_``) that runs ``outplace`` (``exp``) and writes the result into
    its first argument."""
    def inplace(input, *args, **kwargs):
        if input.__class__ is not Tensor:
            raise GradTypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        check_inplace(input)  # Tensor._check_inplace's checks, without its per-call import
        if _GRAD.enabled and (input._requires_grad or _any_requires_grad(args, kwargs)):
            _record(input, outplace, args, kwargs)
        else:
            with no_grad():
                result = outplace(input, *args, **kwargs)
            _write(input, result)
            input._bump()
        return input
    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = f"In-place {outplace.__name__}: writes the result into the tensor (its version goes up)."
    inplace.__wrapped__ = outplace  # its signature is the out-of-place op's (inspect.signature follows
    #                                 __wrapped__: read when asked, not at import for every variant)
    return inplace


def _any_requires_grad(args, kwargs) -> bool:
    return any(a.__class__ is Tensor and a._requires_grad for a in (*args, *kwargs.values()))


def _record(input: Tensor, outplace, args, kwargs) -> None:
    """torch's rebase_history: ``input`` now holds the output of the out-of-place op's node."""
    result = outplace(input, *args, **kwargs)
    node = result.grad_fn
    if node is not None and _saves_self(node, input):
        _save_original(node, input)  # torch's original_self: a clone, in the graph
    _write(input, result)
    input._bump()
    if node is None:
        return
    rebase(input, node)
    if getattr(node, "_sr", None) is not None:  # the result it saved is this tensor now: its version counter guards it
        node._sr = input._data
        vc = input._vc
        # torch names the view's node of the moment (AsStridedBackward0) in the "modified" error
        # while that node lives (held by the view, or by ops that used the view since)
        node._vr = (vc, vc[0], weakref.ref(input.grad_fn)) if input._view.__class__ is ViewInfo else (vc, vc[0])


def _saves_self(node, t) -> bool:
    """Did ``node`` save ``t`` as its first input? Read from the slots recording fills (``_s0`` for up
    to two inputs, ``_sx`` beyond): a slot never set would cost a miss through Node.__getattr__."""
    try:
        if node._k <= 2:
            return node._s0 is t
        sx = node._sx
    except AttributeError:  # a hand-written node class
        sx = getattr(node, "_sx", None)
        if sx is None:
            return getattr(node, "_s0", None) is t
    return sx is not None and sx[0][0] is t


_CLONE = [None]  # shape.CloneBackward0


def _save_original(node, t: Tensor) -> None:
    """Save a clone of ``t`` (``t.clone()``: CloneBackward0, in the graph) where ``node`` saved ``t``
    as its first input, at the clone's version (0: it is new), as ``replace_saved`` does."""
    cls = _CLONE[0]
    if cls is None:
        from .shape import CloneBackward0  # not at import: the registry loads this module mid-declaration
        cls = _CLONE[0] = CloneBackward0
    clone = apply1(cls, t, t._data)
    if node._k <= 2 and node._s0 is t:
        node._s0, node._v0 = clone, 0
    else:
        replace_saved(node, t, clone)


def _write(input: Tensor, result: Tensor) -> None:
    data, into = result._data, input._data
    if data.shape != into.shape and tuple(data.shape) != tuple(into.shape):
        raise ShapeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape "
                         f"{list(result.shape)}")
    dtype = data.dtype
    if dtype is not into.dtype and dtype != into.dtype and input.dtype.category < result.dtype.category:
        raise RuntimeTypeError(f"result type {scalar_type(result.dtype)} can't be cast to the desired output "
                               f"type {scalar_type(input.dtype)}")
    writable(input)[...] = data


def scalar_type(dtype) -> str:
    """torch's ScalarType name of a dtype (what its messages print): Float, Double, Long..."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "bool": "Bool"}.get(dtype.name, dtype.name.capitalize())
