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

from ..autograd.grad_mode import STATE as _GRAD, no_grad
from ..autograd.node import replace_saved
from ..autograd.tensor import Tensor
from ..autograd.views import is_view, rebase, writable
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
        input._check_inplace()
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
        replace_saved(node, input, _clone(input))  # torch's original_self: a clone, in the graph
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
        node._vr = (vc, vc[0], weakref.ref(input.grad_fn)) if is_view(input) else (vc, vc[0])


def _saves_self(node, t) -> bool:
    sx = getattr(node, "_sx", None)
    return sx[0][0] is t if sx is not None else getattr(node, "_s0", None) is t


def _clone(t: Tensor) -> Tensor:
    from .registry import FUNCTIONS
    return FUNCTIONS["clone"].fn(t)


def _write(input: Tensor, result: Tensor) -> None:
    if tuple(result._data.shape) != tuple(input._data.shape):
        raise ShapeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape "
                         f"{list(result.shape)}")
    if result._data.dtype != input._data.dtype and input.dtype.category < result.dtype.category:
        raise RuntimeTypeError(f"result type {scalar_type(result.dtype)} can't be cast to the desired output "
                               f"type {scalar_type(input.dtype)}")
    writable(input)[...] = result._data


def scalar_type(dtype) -> str:
    """torch's ScalarType name of a dtype (what its messages print): Float, Double, Long..."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "bool": "Bool"}.get(dtype.name, dtype.name.capitalize())
