"""Elementwise operations: arithmetic, unary math, comparisons and in-place updates.

Each ``define_node`` is one derivatives.yaml entry: the grad_fn name PyTorch uses,
the forward on arrays, and one formula per input. Broadcasting inputs are
summed back to their shapes by the node base (``broadcasts=True``).
"""

from __future__ import annotations

import numpy as _np

from ..backend import dtypes as _dt
from ..errors import GradTypeError, ShapeError
from ..autograd.function import _devices_differ, apply, apply1, apply2, record_number
from .registry import BROADCASTS as _BROADCASTS, as_tensor_arg, op
from ..autograd.grad_mode import STATE as _GRAD
from ..limits import LIMITS, TRACK_BYTES, check_numel
from ..autograd.node import define_node, formula_helpers
from ..autograd.tensor import Tensor
from ..autograd.views import rebase, writable
from .inplace import scalar_type as _scalar_type

_SCALARS = (int, float, bool)
_NDARRAY = _np.ndarray



# -- checks shared by the binary ops -------------------------------------------------------------

def _operands(a, b, name: str):
    """Check operands, broadcast-compatibility and promote dtypes as torch does.

    Returns ``(a, b, arrays)``; ``arrays`` is None unless a cast was needed.
    """
    ta, tb = a.__class__ is Tensor, b.__class__ is Tensor
    if ta and tb:
        if a._backend is not b._backend:
            raise _devices_differ(a._backend, b._backend)
        da, db = a._data, b._data
        if da.shape != db.shape:
            _check_broadcast(da.shape, db.shape)
        if da.dtype == db.dtype:
            return None
        target = _dt.result_type((a, b))
        xp = a._backend.xp
        dt = a._backend.dtype(target)
        return [da if da.dtype == dt else xp.astype(da, dt), db if db.dtype == dt else xp.astype(db, dt)]
    t, s = (a, b) if ta else (b, a)
    if not isinstance(s, _SCALARS) or t.__class__ is not Tensor:
        bad = s if t.__class__ is Tensor else t
        raise GradTypeError(f"{name}(): unsupported operand type {type(bad).__name__}")
    cat = t.dtype.category
    scat = 0 if s is True or s is False else (1 if isinstance(s, int) else 2)
    if scat > cat:
        target = _dt.result_type((t, s))
        xp = t._backend.xp
        cast = xp.astype(t._data, t._backend.dtype(target))
        s = float(s) if scat == 2 else int(s)
        return [cast, s] if ta else [s, cast]
    return None




def _check_broadcast(sa, sb) -> None:
    """Shapes must broadcast, and the result must fit the element limit (checked before numpy
    allocates it: ``ones(100000, 1) + ones(1, 100000)`` is refused, not attempted). The shape
    found is kept per pair of shapes (a program broadcasts the same few pairs again and again);
    the limits, which may change, are checked every time."""
    out = _BROADCASTS.get((sa, sb))
    if out is None:
        out = _broadcast_shape(sa, sb)
        if len(_BROADCASTS) >= 4096:
            _BROADCASTS.clear()
        _BROADCASTS[(sa, sb)] = out
    check_numel(out)


def _broadcast_shape(sa, sb) -> tuple:
    for i in range(1, min(len(sa), len(sb)) + 1):
        x, y = sa[-i], sb[-i]
        if x != y and x != 1 and y != 1:
            dim = max(len(sa), len(sb)) - i
            raise ShapeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                             f"at non-singleton dimension {dim}")
    long, short = (sa, sb) if len(sa) >= len(sb) else (sb, sa)
    pad = len(long) - len(short)
    return tuple(d if i < pad else max(d, short[i - pad]) for i, d in enumerate(long))


def _binary(cls, a, b, attrs, name):
    """Every binary op's path from its function (``torch.add(x, row)``, ``x.mul(2)``, ``2 / x``'s
    product): nothing to check or cast for two tensors of one dtype whose shapes are equal or a pair
    seen to broadcast to one of them (no result larger than an operand: no limit to check), nor for
    a floating NumPy tensor and a Python number (the number recorded with no edge, as torch's
    wrapped number); the rest through ``_operands``'s checks and promotion."""
    if a.__class__ is Tensor:
        da = a._data
        kind = b.__class__
        if kind is Tensor:
            db = b._data
            if da.dtype == db.dtype:
                sa, sb = da.shape, db.shape
                if sa == sb or _BROADCASTS.get((sa, sb)) in (sa, sb):
                    return apply2(cls, a, b, da, db, attrs)
        elif (kind is float or kind is int) and da.__class__ is _NDARRAY and da.dtype.kind == "f":
            return record_number(cls, a, b, da, cls.forward(a._backend.xp, da, b, *attrs), attrs)
    return apply(cls, (a, b), attrs, _operands(a, b, name))


# -- binary arithmetic -------------------------------------------------------------------

AddBackward0 = define_node(
    "AddBackward0", inputs=("self", "other"), attrs=("alpha",), broadcasts=True,
    forward=lambda xp, a, b, alpha: a + b if alpha == 1 else a + alpha * b,
    self="grad", other="grad if alpha == 1 else grad * alpha")


# The Scalar overloads torch's derivative formulas record (``self + 1``, ``grad * 2``): under
# create_graph, gradcli's formulas record them too (``_GRAD.formula``); elsewhere a number is
# wrapped into a tensor, as torch's Python operators do (AddBackward0, MulBackward0).
AddBackward1 = define_node("AddBackward1", attrs=("other", "alpha"), self="grad",
                           forward=lambda xp, a, other, alpha: a + alpha * other)
SubBackward1 = define_node("SubBackward1", attrs=("other", "alpha"), self="grad",
                           forward=lambda xp, a, other, alpha: a - alpha * other)
MulBackward1 = define_node("MulBackward1", attrs=("other",), self="grad * other",
                           forward=lambda xp, a, other: a * other)
_FLOATS = (int, float)


def _scalar_overload(cls, input, other, attrs):
    """In a formula under create_graph, ``tensor op number`` as torch's Scalar overload node."""
    if _GRAD.formula and other.__class__ in _FLOATS and input.__class__ is Tensor and \
            input.dtype.is_floating_point:
        return apply(cls, (input,), attrs)
    return None


@op(AddBackward0, AddBackward1, operator="a + b", reflected=True, fast=True, inplace="a += b")
def add(input, other, *, alpha=1):
    """Elementwise sum, broadcasting: input + alpha * other."""
    if _GRAD.formula:
        out = _scalar_overload(AddBackward1, input, other, (other, alpha))
        if out is not None:
            return out
    return _binary(AddBackward0, input, other, (alpha,), "add")


RsubBackward1 = define_node(
    "RsubBackward1", inputs=("self",), attrs=("other", "alpha"),
    forward=lambda xp, a, other, alpha: other - (a if alpha == 1 else alpha * a),
    self="-grad if alpha == 1 else -grad * alpha")


def _no_bool_sub(a, b):
    bools = [t.__class__ is Tensor and t.dtype.name == "bool" for t in (a, b)]
    if all(bools):
        raise GradTypeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                            "Use the `^` or `logical_xor()` operator instead.")
    if any(bools):
        raise GradTypeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def rsub(input, other, *, alpha=1):
    """other - alpha * input, with ``other`` a number (what ``2 - x`` runs)."""
    if isinstance(other, _SCALARS):
        _no_bool_sub(input, other)
        arrays = _operands(input, other, "rsub")
        return apply(RsubBackward1, (input,), (other, alpha), None if arrays is None else [arrays[0]])
    return sub(as_tensor_arg(other, input), input, alpha=alpha)


SubBackward0 = define_node(
    "SubBackward0", inputs=("self", "other"), attrs=("alpha",), broadcasts=True,
    forward=lambda xp, a, b, alpha: a - b if alpha == 1 else a - alpha * b,
    self="grad", other="-grad if alpha == 1 else -grad * alpha")


@op(SubBackward0, SubBackward1, RsubBackward1, operator="a - b", reflected=rsub, fast=True, inplace="a -= b")
def sub(input, other, *, alpha=1):
    """Elementwise difference, broadcasting: input - alpha * other."""
    if _GRAD.formula:
        out = _scalar_overload(SubBackward1, input, other, (other, alpha))
        if out is not None:
            return out
    if input.__class__ is not Tensor and other.__class__ is Tensor:
        # torch.sub(2, x) wraps the number: SubBackward0 with a None edge (``2 - x`` is RsubBackward1)
        input = as_tensor_arg(input, other)
    _no_bool_sub(input, other)
    return _binary(SubBackward0, input, other, (alpha,), "sub")


MulBackward0 = define_node(
    "MulBackward0", inputs=("self", "other"), broadcasts=True, forward=lambda xp, a, b: a * b,
    self="grad * other", other="grad * self")


@op(MulBackward0, MulBackward1, operator="a * b", reflected=True, fast=True, inplace="a *= b")
def mul(input, other):
    """Elementwise product, broadcasting."""
    if _GRAD.formula:
        out = _scalar_overload(MulBackward1, input, other, (other,))
        if out is not None:
            return out
    return _binary(MulBackward0, input, other, (), "mul")


DivBackward0 = define_node(
    "DivBackward0", inputs=("self", "other"), broadcasts=True, forward=lambda xp, a, b: a / b,
    self="grad / other", other="-grad * ((self / other) / other)")


# torch's __rtruediv__: ``2 / x`` is reciprocal(x) * 2
@op(DivBackward0, operator="a / b", reflected=lambda a, b: mul(reciprocal(a), b), fast=True, inplace="a /= b")
def div(input, other):
    """Elementwise quotient, broadcasting (true division: integers give floats)."""
    if input.__class__ is not Tensor:
        # torch.div(2, x) wraps the number: DivBackward0 with a None edge (``2 / x`` is reciprocal(x) * 2)
        input = as_tensor_arg(input, other)
    if other.__class__ is Tensor and not other.dtype.is_floating_point and not input.dtype.is_floating_point:
        input = input.to(_dt.DEFAULTS.float)
    elif other.__class__ is not Tensor and not input.dtype.is_floating_point:
        input = input.to(_dt.DEFAULTS.float)
    return _binary(DivBackward0, input, other, (), "div")


NegBackward0 = define_node("NegBackward0", forward=lambda xp, a: -a, self="-grad")


@op(NegBackward0, operator="-a", inplace=True)
def neg(input):
    """Elementwise negation."""
    return apply(NegBackward0, (input,))


PowBackward0 = define_node(
    "PowBackward0", attrs=("exponent",), forward=lambda xp, a, e: a ** e,
    self="F.zeros_like(grad) if exponent == 0 else F.mul_(F.mul_(self ** (exponent - 1), exponent), grad)")
PowBackward1 = define_node(
    "PowBackward1", inputs=("self", "exponent"), broadcasts=True, forward=lambda xp, a, e: a ** e,
    self="F.where(exponent == 0, 0.0, grad * (exponent * self ** (exponent - 1)))",
    exponent="grad * F.where(F.logical_and(self == 0, exponent >= 0), 0.0, result * F.log(self))")
PowBackward2 = define_node(
    "PowBackward2", inputs=("exponent",), attrs=("self",), forward=lambda xp, e, base: base ** e,
    # 0 ** x: torch's gradient is 0 where x >= 0 (not 0 * log 0 = nan)
    exponent="grad * (result * scalar_log(self)) if self != 0 else "
             "grad * F.where(exponent >= 0, 0.0, result * scalar_log(self))")


@op(PowBackward0, PowBackward1, PowBackward2, operator="a ** b", reflected=lambda a, b: pow(b, a), inplace=True)
def pow(input, exponent):
    """input ** exponent; either side may be a number."""
    if input.__class__ is not Tensor:
        if not isinstance(input, _SCALARS):
            raise GradTypeError(f"pow(): unsupported base type {type(input).__name__}")
        arrays = _operands(exponent, input, "pow")
        return apply(PowBackward2, (exponent,), (input,), None if arrays is None else [arrays[0]])
    if exponent.__class__ is Tensor:
        if input.dtype.name == "bool" and exponent.dtype.name == "bool":
            raise GradTypeError('"pow" not implemented for \'Bool\'')
        return _binary(PowBackward1, input, exponent, (), "pow")
    if not isinstance(exponent, _SCALARS):
        raise GradTypeError(f"pow(): unsupported exponent type {type(exponent).__name__}")
    if input.dtype.name == "bool" and isinstance(exponent, bool):  # stays bool, as torch (numpy gives int8)
        xp = input._backend.xp
        return Tensor._make(xp.asarray(input._data, copy=True) if exponent else xp.ones_like(input._data),
                            input._backend)
    if not input.dtype.is_floating_point and isinstance(exponent, int) and exponent < 0:
        raise GradTypeError("Integers to negative integer powers are not allowed.")
    arrays = _operands(input, exponent, "pow")
    return apply(PowBackward0, (input,), (exponent,), None if arrays is None else [arrays[0]])


@op(PowBackward0, inplace=True)
def square(input):
    """input ** 2 (recorded as PowBackward0, as torch does)."""
    return pow(input, 2)


# -- unary math ------------------------------------------------------------------------------

def _unary(name, grad_fn, forward, formula, doc, keep_int=False, operator=None, namespaces=("torch",), inplace=True,
           reuses_grad=False):
    """One declaration for a unary elementwise op: its node (``grad_fn``, ``forward``, the
    derivative ``formula`` of ``self``, ``reuses_grad`` as define_node's) and its function, which
    computes in the default float dtype unless ``keep_int``."""
    cls = define_node(grad_fn, forward=forward, self=formula, reuses_grad=reuses_grad)

    def unary_op(input):
        if input.__class__ is not Tensor:
            raise GradTypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        data = input._data
        if not keep_int and (data.__class__ is not _ndarray or data.dtype.kind != "f") \
                and not input.dtype.is_floating_point:  # abs and relu keep integers, as torch
            input = input.to(_dt.DEFAULTS.float)
            data = input._data
        return apply1(cls, input, data)  # apply's one-tensor path, directly
    unary_op.__name__ = unary_op.__qualname__ = name
    unary_op.__doc__ = doc
    return op(cls, operator=operator, namespaces=namespaces, inplace=inplace)(unary_op)


def _sigmoid(xp, x):
    """1 / (1 + e) where x >= 0 and e / (1 + e) below, e = exp(-|x|): exp of a non-positive number
    only, so large |x| neither overflows nor warns. A NumPy array's in place, 7 ufunc calls
    (the general form's 8, several with Python scalars), bit for bit the same."""
    if x.__class__ is _ndarray and x.ndim:
        e = _np.abs(x)
        _np.negative(e, e)
        _np.exp(e, e)
        d = e + 1.0
        out = _np.reciprocal(d)
        _np.divide(e, d, out, where=_np.signbit(x))  # the negatives (-0.0: 1 / 2 either way)
        return out
    e = xp.exp(-xp.abs(x))
    d = 1 + e
    return xp.where(x >= 0, 1 / d, e / d)


def _relu(xp, x):
    """max(x, 0), NaN kept: a float NumPy array's in one ufunc call (0 for -0.0, as the general form)."""
    if x.__class__ is _ndarray and x.ndim and x.dtype.kind == "f":
        return _np.maximum(x, 0)
    return xp.where(x <= 0, xp.zeros_like(x), x)


_ndarray = _np.ndarray


exp = _unary("exp", "ExpBackward0", lambda xp, x: xp.exp(x), "grad * result", "Elementwise e**x.")
log = _unary("log", "LogBackward0", lambda xp, x: xp.log(x), "grad / self", "Natural logarithm.")
log1p = _unary("log1p", "Log1PBackward0", lambda xp, x: xp.log1p(x), "grad / (self + 1)", "log(1 + x), accurate for small x.")
sqrt = _unary("sqrt", "SqrtBackward0", lambda xp, x: xp.sqrt(x), "grad / (2 * result)", "Square root.")
rsqrt = _unary("rsqrt", "RsqrtBackward0", lambda xp, x: 1 / xp.sqrt(x), "-0.5 * grad * result ** 3", "1 / sqrt(x).")
abs = _unary("abs", "AbsBackward0", lambda xp, x: xp.abs(x), "grad * F.sgn(self)", "Absolute value.",
             keep_int=True, operator="abs(a)")
sin = _unary("sin", "SinBackward0", lambda xp, x: xp.sin(x), "F.mul_(F.cos(self), grad)", "Sine.")
cos = _unary("cos", "CosBackward0", lambda xp, x: xp.cos(x), "grad * -F.sin(self)", "Cosine.")
tan = _unary("tan", "TanBackward0", lambda xp, x: xp.tan(x), "grad * (1 + result ** 2)", "Tangent.")
tanh = _unary("tanh", "TanhBackward0", lambda xp, x: xp.tanh(x), "F.tanh_backward(grad, result)", "Hyperbolic tangent.", namespaces=("torch", "torch.nn.functional"))
sigmoid = _unary("sigmoid", "SigmoidBackward0", _sigmoid, "F.sigmoid_backward(grad, result)",
                  "Logistic sigmoid 1 / (1 + e**-x).", namespaces=("torch", "torch.nn.functional"))
# relu(nan) is nan and passes the gradient (torch's threshold_backward zeroes only where result <= 0)
relu = _unary("relu", "ReluBackward0", _relu,
              "F.threshold_backward(grad, result, 0)", "max(x, 0), elementwise.", keep_int=True, namespaces=("torch", "torch.nn.functional"),
              reuses_grad=True)
reciprocal = _unary("reciprocal", "ReciprocalBackward0", lambda xp, x: 1 / x, "-grad * (result * result)", "1 / x.")
SignBackward0 = define_node(
    "SignBackward0", forward=lambda xp, x: xp.where(x == x, xp.sign(x), xp.zeros_like(x)),  # sign(nan) is 0
    self="F.zeros_like(grad)")


@op(SignBackward0, inplace=True)
def sign(input):
    """-1, 0 or 1 by the sign of each element (zero gradient)."""
    return apply(SignBackward0, (input,))


SgnBackward0 = define_node(
    "SgnBackward0", forward=lambda xp, x: xp.where(x == x, xp.sign(x), xp.zeros_like(x)), self="F.zeros_like(grad)")


@op(SgnBackward0, inplace=True)
def sgn(input):
    """sign for real tensors (torch's complex-aware form, what abs's derivative uses)."""
    return apply(SgnBackward0, (input,))


# torch's fused backward ops, recorded when a tanh or sigmoid gradient is differentiated again
# (create_graph): their own derivatives are derivatives.yaml's tanh_backward/sigmoid_backward.
TanhBackwardBackward0 = define_node(
    "TanhBackwardBackward0", inputs=("grad_output", "output"), forward=lambda xp, g, y: g * (1 - y * y),
    grad_output="F.tanh_backward(grad, output)", output="grad * (-2 * output * grad_output)")
SigmoidBackwardBackward0 = define_node(
    "SigmoidBackwardBackward0", inputs=("grad_output", "output"), forward=lambda xp, g, y: g * (1 - y) * y,
    grad_output="F.sigmoid_backward(grad, output)", output="grad * grad_output * (-2 * output + 1)")


ThresholdBackwardBackward0 = define_node(
    "ThresholdBackwardBackward0", inputs=("grad_output", "self"), attrs=("threshold",),
    forward=lambda xp, g, x, threshold: xp.where(x <= threshold, xp.zeros_like(g), g),
    grad_output="F.threshold_backward(grad, self, threshold)", self="F.zeros_like(grad)")


def threshold_backward(grad_output, self, threshold):
    return apply(ThresholdBackwardBackward0, (grad_output, self), (threshold,))


def tanh_backward(grad_output, output):
    return apply(TanhBackwardBackward0, (grad_output, output))


def sigmoid_backward(grad_output, output):
    return apply(SigmoidBackwardBackward0, (grad_output, output))


# -- clamp, maximum, minimum, where --------------------------------------------------------------

ClampBackward1 = define_node(
    "ClampBackward1", forward=lambda xp, x, lo, hi: xp.clip(x, lo, hi), attrs=("min", "max"),
    self="F.where(clamp_mask(F, self, min, max), grad, 0.0)")
ClampBackward0 = define_node(
    "ClampBackward0", inputs=("self", "min", "max"), broadcasts=True,
    forward=lambda xp, x, lo, hi: xp.minimum(xp.maximum(x, lo) if lo is not None else x, hi) if hi is not None
    else xp.maximum(x, lo),
    self="F.where(clamp_mask(F, self, min, max), grad, 0.0)",
    min="F.where(self < min, grad, 0.0)",
    max="F.where(self > max, grad, 0.0)")


def clamp_mask(F, x, lo, hi):
    if lo is None:
        return x <= hi
    if hi is None:
        return x >= lo
    return F.logical_and(x >= lo, x <= hi)


formula_helpers(clamp_mask=clamp_mask)


@op(ClampBackward1, ClampBackward0, inplace=True)
def clamp(input, min=None, max=None):
    """Limit values to [min, max]; either bound may be None, a number or a tensor."""
    if min is None and max is None:
        raise GradTypeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    for bound, name in ((min, "min"), (max, "max")):
        if bound is not None and bound.__class__ is not Tensor and not isinstance(bound, (int, float)):
            raise GradTypeError(f"clamp(): argument '{name}' must be Number or Tensor, not {type(bound).__name__}")
    if min.__class__ is Tensor or max.__class__ is Tensor:
        lo = None if min is None else as_tensor_arg(min, input)
        hi = None if max is None else as_tensor_arg(max, input)
        operands = [t for t in (input, lo, hi) if t is not None]
        try:
            out_shape = _broadcast_shapes(*(t.shape for t in operands))
        except ShapeError:  # numpy reports the mismatch below
            out_shape = ()
        check_numel(out_shape)
        target = _dt.result_type(operands)  # a 0-d bound does not widen input's dtype, as torch
        if any(t.dtype.name != target for t in operands):
            dt = input._backend.dtype(target)
            xp = input._backend.xp
            arrays = [None if t is None else t._data if t.dtype.name == target else xp.astype(t._data, dt)
                      for t in (input, lo, hi)]
            return apply(ClampBackward0, (input, lo, hi), (), arrays)
        return apply(ClampBackward0, (input, lo, hi))
    if not input.dtype.is_floating_point and (isinstance(min, float) or isinstance(max, float)):
        input = input.to(_dt.DEFAULTS.float)  # torch: float bounds on an integer tensor give the default float
    return apply(ClampBackward1, (input,), (min, max))


@op(ClampBackward1, ClampBackward0, inplace=True)
def clip(input, min=None, max=None):
    """Alias of clamp (records ClampBackward1, or ClampBackward0 with tensor bounds)."""
    return clamp(input, min, max)


ClampMinBackward0 = define_node("ClampMinBackward0", attrs=("min",), forward=lambda xp, x, lo: xp.maximum(x, lo),
                                self="F.where(self >= min, grad, 0.0)")
ClampMinBackward1 = define_node("ClampMinBackward1", inputs=("self", "min"), broadcasts=True,
                                forward=lambda xp, x, lo: xp.maximum(x, lo),
                                self="F.where(self >= min, grad, 0.0)", min="F.where(self < min, grad, 0.0)")
ClampMaxBackward0 = define_node("ClampMaxBackward0", attrs=("max",), forward=lambda xp, x, hi: xp.minimum(x, hi),
                                self="F.where(self <= max, grad, 0.0)")
ClampMaxBackward1 = define_node("ClampMaxBackward1", inputs=("self", "max"), broadcasts=True,
                                forward=lambda xp, x, hi: xp.minimum(x, hi),
                                self="F.where(self <= max, grad, 0.0)", max="F.where(self > max, grad, 0.0)")


def _one_bound(name, scalar_cls, tensor_cls, input, bound):
    if bound.__class__ is Tensor:
        return _binary(tensor_cls, input, bound, (), name)
    if isinstance(bound, bool) or not isinstance(bound, (int, float)):
        raise GradTypeError(f"{name}(): argument '{name[-3:]}' must be Number or Tensor, not {type(bound).__name__}")
    if not input.dtype.is_floating_point and isinstance(bound, float):
        input = input.to(_dt.DEFAULTS.float)
    return apply(scalar_cls, (input,), (bound,))


@op(ClampMinBackward0, ClampMinBackward1, inplace=True)
def clamp_min(input, min):
    """max(x, min) elementwise: clamp with a lower bound only (ClampMinBackward0; a tensor bound: 1)."""
    return _one_bound("clamp_min", ClampMinBackward0, ClampMinBackward1, input, min)


@op(ClampMaxBackward0, ClampMaxBackward1, inplace=True)
def clamp_max(input, max):
    """min(x, max) elementwise: clamp with an upper bound only (ClampMaxBackward0; a tensor bound: 1)."""
    return _one_bound("clamp_max", ClampMaxBackward0, ClampMaxBackward1, input, max)


MaximumBackward0 = define_node(
    "MaximumBackward0", forward=lambda xp, a, b: xp.maximum(a, b), inputs=("self", "other"), broadcasts=True,
    # torch's masked_fill(self < other, 0): where a NaN is compared, both inputs get the gradient
    self="F.where(self == other, grad / 2, F.where(self < other, 0.0, grad))",
    other="F.where(self == other, grad / 2, F.where(self > other, 0.0, grad))")
MinimumBackward0 = define_node(
    "MinimumBackward0", forward=lambda xp, a, b: xp.minimum(a, b), inputs=("self", "other"), broadcasts=True,
    self="F.where(self == other, grad / 2, F.where(self > other, 0.0, grad))",
    other="F.where(self == other, grad / 2, F.where(self < other, 0.0, grad))")


@op(MaximumBackward0)
def maximum(input, other):
    """Elementwise maximum of two tensors (ties split the gradient)."""
    other = as_tensor_arg(other, input)
    return _binary(MaximumBackward0, input, other, (), "maximum")


@op(MinimumBackward0)
def minimum(input, other):
    """Elementwise minimum of two tensors (ties split the gradient)."""
    other = as_tensor_arg(other, input)
    return _binary(MinimumBackward0, input, other, (), "minimum")


WhereBackward0 = define_node(
    "WhereBackward0", inputs=("self", "other"), attrs=("condition",), broadcasts=True,
    forward=lambda xp, a, b, cond: xp.where(cond, a, b),
    self="F.where(condition, grad, 0.0)", other="F.where(condition, 0.0, grad)")


MaskedFillBackward0 = define_node(
    "MaskedFillBackward0", attrs=("mask", "value"), self="F.masked_fill(grad, mask, 0)", broadcasts=True,
    forward=lambda xp, x, mask, value: xp.where(mask, xp.asarray(value, dtype=x.dtype), x))
MaskedFillBackward1 = define_node(
    "MaskedFillBackward1", inputs=("self", "value"), attrs=("mask",), self="F.masked_fill(grad, mask, 0)",
    broadcasts=True,
    value="F.sum(F.where(mask, grad, 0.0))",
    forward=lambda xp, x, value, mask: xp.where(mask, xp.astype(value, x.dtype), x))


@op(MaskedFillBackward0, MaskedFillBackward1, inplace=True)
def masked_fill(input, mask, value):
    """``value`` where the bool ``mask`` (broadcast to the input's shape) is true; a 0-d tensor
    value gets the sum of the gradient there (MaskedFillBackward1)."""
    if mask.__class__ is not Tensor or mask.dtype.name != "bool":
        kind = type(mask).__name__ if mask.__class__ is not Tensor else _scalar_type(mask.dtype)
        raise GradTypeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {kind}")
    m = mask._data
    if m.shape == input._data.shape:  # the usual call: a mask of the input's shape is its own broadcast
        if mask._backend is input._backend:
            if value.__class__ is Tensor:
                return _masked_fill_tensor(input, m, value)
            return apply(MaskedFillBackward0, (input,), (m, value))
    xp = input._backend.xp
    try:  # a mask of more dims broadcasts the result (the gradient is summed back to the input)
        m = xp.broadcast_to(mask._data, _broadcast_shapes(input.shape, mask.shape))
    except (ValueError, ShapeError):
        raise ShapeError(f"The size of tensor a ({mask.shape[-1] if mask.ndim else 1}) must match the size of "
                         f"tensor b ({input.shape[-1] if input.ndim else 1}) at non-singleton dimension "
                         f"{_builtins_max(input.ndim, mask.ndim) - 1}") from None
    if value.__class__ is Tensor:
        return _masked_fill_tensor(input, m, value)
    return apply(MaskedFillBackward0, (input,), (m, value))


def _masked_fill_tensor(input, m, value):
    if value.ndim:
        raise ShapeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                         f"{value.ndim} dimension(s).")
    return apply(MaskedFillBackward1, (input, value), (m,))


def _builtins_max(a, b):
    return a if a > b else b


@op(WhereBackward0, method=False)
def where(condition, input, other):
    """Pick input where condition is true, else other (either may be a number)."""
    if condition.__class__ is not Tensor or condition.dtype.name != "bool":
        raise GradTypeError("where expected condition to be a boolean tensor")
    if input.__class__ is not Tensor and other.__class__ is not Tensor:
        from .creation import tensor
        input = tensor(input, device=str(condition.device))
    if input.__class__ is not Tensor:
        input = _scalar_like(input, other)
    if other.__class__ is not Tensor:
        other = _scalar_like(other, input)
    shape = condition._data.shape
    if input._data.shape != shape or other._data.shape != shape:
        check_numel(_broadcast_shapes(condition.shape, input.shape, other.shape))
    else:  # the usual call, equal shapes: check_numel where it could refuse (empty, or big)
        n = condition._data.size
        if not n or n > LIMITS.max_elements or n * LIMITS.itemsize >= TRACK_BYTES:
            check_numel(shape)
    # xp.where broadcasts the condition too; the inputs keep their shapes, so that their
    # gradients are summed back to them
    return apply(WhereBackward0, (input, other), (condition._data,), _operands(input, other, "where"))


def _scalar_like(value, like: Tensor) -> Tensor:
    from .creation import tensor
    if like.dtype.is_floating_point or isinstance(value, bool):
        dtype = like.dtype
    else:  # a float next to an integer tensor gives the default float, as torch (never 0.5 -> 0)
        dtype = _dt.DEFAULTS.float if isinstance(value, float) else None
    return tensor(value, dtype=dtype, device=str(like.device))


def _broadcast_shapes(*shapes):
    out = []
    for dims in _zip_right(shapes):
        size = 1
        for d in dims:
            if d != 1:
                if size != 1 and d != size:
                    raise ShapeError("shape mismatch: objects cannot be broadcast to a single shape")
                size = d
        out.append(size)
    return tuple(reversed(out))


def _zip_right(shapes):
    n = max(len(s) for s in shapes)
    for i in range(1, n + 1):
        yield [s[-i] if i <= len(s) else 1 for s in shapes]


# -- comparisons (never differentiable) ------------------------------------------------------------

def _comparison(name, symbol, forward, flipped):
    """One declaration for a comparison: ``a < b`` on arrays is ``forward``; with the number
    first it is the ``flipped`` comparison (``2 < x`` is ``x > 2``)."""
    def compare(input, other):
        if input.__class__ is not Tensor:
            return _COMPARISONS[flipped](other, input)
        arrays = _operands(input, other, name)
        a, b = arrays if arrays is not None else (input._data,
                                                  other._data if other.__class__ is Tensor else other)
        return Tensor._make(forward(a, b), input._backend)
    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = f"Elementwise input {symbol} other, as a bool tensor (never differentiable)."
    _COMPARISONS[name] = compare
    return op(operator=f"a {symbol} b", differentiable=False, category="comparison")(compare)


_COMPARISONS: dict = {}
lt = _comparison("lt", "<", lambda a, b: a < b, flipped="gt")
le = _comparison("le", "<=", lambda a, b: a <= b, flipped="ge")
gt = _comparison("gt", ">", lambda a, b: a > b, flipped="lt")
ge = _comparison("ge", ">=", lambda a, b: a >= b, flipped="le")
eq = _comparison("eq", "==", lambda a, b: a == b, flipped="eq")
ne = _comparison("ne", "!=", lambda a, b: a != b, flipped="ne")


def _bool_op(name, symbol, fn_name, operator):
    def logical(input, other):
        xp = input._backend.xp
        if other.__class__ is not Tensor:  # torch takes no numbers here (numpy would make an object array of None)
            raise GradTypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
        if other._backend is not input._backend:
            raise _devices_differ(input._backend, other._backend)
        if other.shape != input.shape:
            _check_broadcast(input.shape, other.shape)
        # numbers are true where non-zero (the array API's logical functions take bools only)
        a, b = (t._data if t.dtype.name == "bool" else xp.astype(t._data, input._backend.dtype("bool"))
                for t in (input, other))
        return Tensor._make(getattr(xp, fn_name)(a, b), input._backend)
    logical.__name__ = logical.__qualname__ = name
    logical.__doc__ = f"Elementwise logical {symbol} of two tensors."
    return op(operator=operator, differentiable=False, category="comparison")(logical)


logical_and = _bool_op("logical_and", "and", "logical_and", "a & b")
logical_or = _bool_op("logical_or", "or", "logical_or", "a | b")


# -- in-place updates -----------------------------------------------------------------------------------

ZeroBackward0 = define_node("ZeroBackward0", forward=lambda xp, x: xp.zeros_like(x), self="F.zeros_like(grad)")


@op(ZeroBackward0, category="in-place")
def zero_(input):
    """Fill with zeros in place; on a non-leaf its gradient is zero from here on (ZeroBackward0)."""
    input._check_inplace()
    old = Tensor._make(input._data, input._backend, input.grad_fn)  # the tensor as it was: its edge
    writable(input)[...] = 0
    input._bump()
    if input._requires_grad and _GRAD.enabled:
        rebase(input, apply(ZeroBackward0, (old,)).grad_fn)
    return input


# -- ternary: lerp, addcmul, addcdiv (three tensors broadcast together) ---------------------------------

from ..errors import RuntimeTypeError  # noqa: E402  (here: this section is the ternary ops' own)

# torch's TypeMeta names, which its dtype checks print ("expected dtype float ... got dtype double")
_TYPE_META = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
              "int32": "int", "bool": "bool"}


def _ternary(name, tensors, arg_names):
    """Three tensor arguments on one device whose shapes broadcast (torch's pairwise message, the
    shapes folded in argument order as TensorIterator does), the result checked against the limits."""
    for t, arg in zip(tensors, arg_names):
        if t.__class__ is not Tensor:
            raise GradTypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(t).__name__}")
    out = tensors[0]._data.shape
    for t in tensors[1:]:
        if t._data.shape != out:
            out = _broadcast_shape(tuple(out), tuple(t._data.shape))
    check_numel(out)


def _lerp_number(xp, a, b, weight):
    """torch's lerp kernel: from ``a`` for a small weight, from ``b`` otherwise (each exact at its
    end), the weight in the tensors' dtype."""
    w = xp.asarray(weight, dtype=a.dtype)
    d = b - a
    return a + w * d if -0.5 < weight < 0.5 else b - d * (1 - w)


def _lerp_tensor(xp, a, b, w):
    d = b - a
    return xp.where(xp.abs(w) < 0.5, a + w * d, b - d * (1 - w))


LerpBackward0 = define_node(
    "LerpBackward0", inputs=("self", "end"), attrs=("weight",), broadcasts=True, forward=_lerp_number,
    self="grad * (1 - weight)", end="grad * weight")
LerpBackward1 = define_node(
    "LerpBackward1", inputs=("self", "end", "weight"), broadcasts=True, forward=_lerp_tensor,
    # F.filled: torch's C++ ``1 - weight`` (SubBackward0 with no edge for the 1 under create_graph)
    self="grad * (F.filled(1, weight) - weight)", end="grad * weight", weight="grad * (end - self)")


@op(LerpBackward0, LerpBackward1, inplace=True)
def lerp(input, end, weight):
    """input + weight * (end - input), broadcasting; ``weight`` a number or a tensor."""
    number = weight.__class__ is not Tensor
    if number and not isinstance(weight, _SCALARS):
        raise GradTypeError(f"lerp(): argument 'weight' must be Tensor or Number, not {type(weight).__name__}")
    _ternary("lerp", (input, end) if number else (input, end, weight), ("input", "end", "weight"))
    dtype = input.dtype.name
    if end.dtype.name != dtype:
        raise RuntimeTypeError(f"expected dtype {_TYPE_META.get(dtype, dtype)} for `end` but got dtype "
                               f"{_TYPE_META.get(end.dtype.name, end.dtype.name)}")
    if not number and weight.ndim and weight.dtype.name != dtype:  # a 0-d weight is cast, as torch's CPU scalar
        raise RuntimeTypeError(f"expected dtype {_TYPE_META.get(dtype, dtype)} for `weight` but got dtype "
                               f"{_TYPE_META.get(weight.dtype.name, weight.dtype.name)}")
    if not input.dtype.is_floating_point:
        raise GradTypeError(f'"lerp_kernel_{"scalar" if number else "tensor"}" not implemented for '
                            f"'{_scalar_type(input.dtype)}'")
    if number:
        return apply(LerpBackward0, (input, end), (weight,))
    arrays = None
    if weight.dtype.name != dtype:
        arrays = [input._data, end._data, input._backend.xp.astype(weight._data, input._data.dtype)]
    return apply(LerpBackward1, (input, end, weight), (), arrays)


AddcmulBackward0 = define_node(
    "AddcmulBackward0", inputs=("self", "tensor1", "tensor2"), attrs=("value",), broadcasts=True,
    forward=lambda xp, a, b, c, value: a + value * b * c,  # torch's order: self + ((value * t1) * t2)
    self="grad", tensor1="grad * (tensor2 * value)", tensor2="grad * (tensor1 * value)")
AddcdivBackward0 = define_node(
    "AddcdivBackward0", inputs=("self", "tensor1", "tensor2"), attrs=("value",), broadcasts=True,
    forward=lambda xp, a, b, c, value: a + value * b / c,
    self="grad", tensor1="grad * (F.filled(value, tensor2) / tensor2)",
    tensor2="-grad * (value * tensor1 / (tensor2 * tensor2))")


def _addc(name, cls, input, tensor1, tensor2, value):
    """addcmul/addcdiv: the three tensors promoted together (a 0-d one does not widen the others),
    ``value`` (a number) in their dtype: truncated for integers, as torch casts the Scalar."""
    if value.__class__ is Tensor and value.numel() == 1:
        value = value.item()
    if not isinstance(value, _SCALARS):
        raise GradTypeError(f"{name}(): argument 'value' must be Number, not {type(value).__name__}")
    tensors = (input, tensor1, tensor2)
    _ternary(name, tensors, ("input", "tensor1", "tensor2"))
    if name == "addcdiv" and not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeTypeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
            "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
            "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
            "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
            "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    target = _dt.result_type(tensors)
    if target == "bool":
        raise GradTypeError(f"\"{name}_cpu_out\" not implemented for 'Bool'")
    if not _dt.by_name(target).is_floating_point:
        value = int(value)
    arrays = None
    if any(t.dtype.name != target for t in tensors):
        dt, xp = input._backend.dtype(target), input._backend.xp
        arrays = [t._data if t.dtype.name == target else xp.astype(t._data, dt) for t in tensors]
    return apply(cls, tensors, (value,), arrays)


@op(AddcmulBackward0, inplace=True)
def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, broadcasting."""
    return _addc("addcmul", AddcmulBackward0, input, tensor1, tensor2, value)


@op(AddcdivBackward0, inplace=True)
def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2, broadcasting (true division; two integer tensors are refused)."""
    return _addc("addcdiv", AddcdivBackward0, input, tensor1, tensor2, value)
