"""In-place variants derived from op declarations: ``exp_`` from ``exp``, ``clamp_`` from ``clamp``.

``@op(..., inplace=True)`` makes ``name_``: the out-of-place function runs, its result is
written into the tensor, and the tensor takes the result's node as its grad_fn (torch's
rebase_history: ``y.exp_()`` records ExpBackward0; on a view, CopySlices on the base). As in
torch, an overwritten input that the node saved is saved as a copy (``original_self``: sin_,
pow_, mul_ by a tensor), and a saved result is the tensor itself, so changing it in place again
fails its backward with torch's "modified by an inplace operation" message.
"""

from __future__ import annotations

import operator as _operator
import weakref

import numpy as _np

from ..autograd.function import apply1
from ..backend.numpy_fast import number_array
from ..autograd.grad_mode import STATE as _GRAD, no_grad
from ..autograd.node import replace_saved
from ..autograd.tensor import Tensor
from ..autograd.views import ViewInfo, check_inplace, rebase, unrecorded_array, writable
from ..errors import AutogradError, DeviceError, GradTypeError, RuntimeTypeError, ShapeError
from .registry import BROADCASTS

# The in-place functions torch has at module level (``torch.exp_(x)``); the others are methods only.
TORCH_FUNCTIONS = frozenset(
    "relu_ exp_ log_ sigmoid_ tanh_ sin_ cos_ sqrt_ abs_ neg_ clamp_ clamp_min_ clamp_max_ clip_ "
    "square_ reciprocal_ log1p_ tan_ rsqrt_".split()
    + "exp2_ log2_ log10_ sinh_ cosh_ asin_ acos_ atan_ erf_ floor_ ceil_ trunc_ round_ frac_".split()
    + "asinh_ acosh_ atanh_ expm1_ erfc_ deg2rad_ rad2deg_ xlogy_ arcsin_ arccos_ arctan_ arcsinh_ arccosh_ "
      "arctanh_ negative_ fix_ nan_to_num_ logit_ sinc_".split())


def inplace_variant(outplace, name: str, into=None):
    """The function ``name`` (``exp_``) that runs ``outplace`` (``exp``) and writes the result into
    its first argument. ``into``: the array operator in place (``operator.isub`` for ``sub_``) of an
    op whose operator is its array operator (``fast=True``): with no gradient to record, a float
    NumPy tensor (not a view) and a tensor operand of its dtype and shape (or one that broadcasts to
    it) or a Python number, the op runs into the tensor's array, the out-of-place op's values
    without its result (an optimizer's ``p -= lr * g`` under no_grad, ``p.add_(g)``)."""
    def inplace(input, *args, **kwargs):
        if into is not None and len(args) == 1 and input.__class__ is Tensor \
                and not (input._requires_grad and _GRAD.enabled) and _into(into, input, args[0], kwargs):
            return input
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


def _into(into, input: Tensor, other, kwargs) -> bool:
    """``into(input's array, other's)`` where that is the whole of the in-place op (see
    inplace_variant); False, with nothing done, where it is not. add_'s and sub_'s ``alpha`` (a
    Python number, with a tensor operand): the operand scaled first, as the op's forward does."""
    da = input._data
    if da.__class__ is not _ndarray or da.dtype.kind != "f" or da.dtype is _F16:  # (float16: opmath)
        return False
    alpha = 1
    if kwargs:
        alpha = kwargs.get("alpha", 1)
        if len(kwargs) != 1 or into not in _ALPHA or alpha.__class__ is not float and alpha.__class__ is not int:
            return False
    kind = other.__class__
    if kind is Tensor:
        if other._requires_grad and _GRAD.enabled:  # (the input's, the caller has checked)
            return False
        db = other._data
        if db.__class__ is not _ndarray or db.dtype != da.dtype or other._backend is not input._backend:
            return False
        sa, sb = da.shape, db.shape
        if sa != sb and BROADCASTS.get((sa, sb)) != sa:
            return False
        if alpha != 1:
            db = number_array(alpha, da.dtype) * db
    elif alpha != 1:
        return False
    elif kind is float or kind is int:
        db = number_array(other, da.dtype)
    else:
        return False
    if unrecorded_array(input) is None:  # a view, a read-only array
        return False
    into(da, db)
    input._bump()
    return True


_ndarray = _np.ndarray
_F16 = _np.dtype(_np.float16)
_ALPHA = frozenset((_operator.iadd, _operator.isub))  # the ops with an alpha: add_, sub_


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


# -- out=: a torch function's result written into tensors the caller gives ---------------------------

_OUT_RESIZED = ("An output with one or more elements was resized since it had shape {old}, which does not match "
                "the required output shape {new}. This behavior is deprecated, and in a future PyTorch release "
                "outputs will not be resized unless they have zero elements. You can explicitly reuse an out "
                "tensor t by resizing it, inplace, to zero elements with t.resize_(0).")


def takes_out(fn) -> bool:
    """Whether ``fn`` is a ``torch.*`` function whose ``out=`` :func:`call_with_out` provides (every
    one of the op table's but the in-place ones and those with an ``out`` of their own)."""
    from .registry import BY_FUNCTION
    info = BY_FUNCTION.get(fn)
    return info is not None and "torch" in info.namespaces and info.category != "in-place" and \
        not any(p.lstrip("*").split("=")[0] == "out" for p in info.parameters)


def call_with_out(fn, out, *args, **kwargs):
    """``fn(*args, **kwargs, out=out)`` as torch's ``out=`` variants run: nothing recorded (with grad
    mode on, no argument and no ``out`` may require grad: torch's error), the result computed,
    then written into ``out`` (a tensor, or a tuple of them for a function of several results:
    ``values, indices``), cast to its dtype where torch casts (never a float into an integer
    tensor), resized with torch's warning where it had another shape; returns ``out``."""
    from .registry import BY_FUNCTION
    name = BY_FUNCTION[fn].name
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if o.__class__ is not Tensor:
            raise GradTypeError(f"{name}(): argument 'out' must be Tensor, not {type(o).__name__}")
    if _GRAD.enabled and (_any_requires_grad(args, kwargs) or _any_requires_grad(outs, {}) or any(
            isinstance(a, (list, tuple)) and _any_requires_grad(a, {}) for a in args)):
        raise AutogradError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                            f"but one of the arguments requires grad.")
    result = fn(*args, **kwargs)
    results = tuple(result) if isinstance(result, tuple) else (result,)
    if len(results) != len(outs) or any(r.__class__ is not Tensor for r in results):
        raise GradTypeError(f"{name}(): argument 'out' must be a tuple of {len(results)} Tensors")
    for o, r in zip(outs, results):
        _write_out(o, r)
    return out


def _write_out(out: Tensor, result: Tensor) -> None:
    if out._backend is not result._backend:
        raise DeviceError(f"Expected out tensor to have device {result.device}, but got {out.device} instead")
    check_inplace(out)
    if tuple(out.shape) != tuple(result.shape):
        if out._view is not None:
            raise ShapeError(f"out= is a view of shape {list(out.shape)}, and the result's shape is "
                             f"{list(result.shape)}: gradcli resizes only a tensor that is not a view")
        if out.numel():
            from ..autograd.warn import warn
            warn(_OUT_RESIZED.format(old=list(out.shape), new=list(result.shape)))
        out._data = out._backend.xp.zeros(result._data.shape, dtype=out._data.dtype)  # torch's resize_
    _write(out, result)
    out._bump()
