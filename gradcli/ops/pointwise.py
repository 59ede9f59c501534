"""Elementwise operations: arithmetic, unary math, comparisons and in-place updates.

Each ``define_node`` is one derivatives.yaml entry: the grad_fn name PyTorch uses,
the forward on arrays, and one formula per input. Broadcasting inputs are
summed back to their shapes by the node base (``broadcasts=True``).
"""

from __future__ import annotations

import math as _math
import operator as _operator

import numpy as _np

from ..backend import dtypes as _dt
from ..backend.numpy_fast import EXP_NEG_SAFE as _EXP_NEG_SAFE, half_by_number as _half_by_number, least as _least, \
    scalars as _scalars
from ..errors import AutogradError, GradTypeError, KernelTypeError, RuntimeTypeError, ShapeError
from ..autograd.function import _devices_differ, apply, apply1, apply2, apply3, guard_attrs, record_number
from .registry import BROADCASTS as _BROADCASTS, FUNCTIONS, alias as _alias, as_tensor_arg, op
from ..autograd.grad_mode import STATE as _GRAD
from ..limits import LIMITS, TRACK_BYTES, check_numel
from ..autograd.node import define_node, formula_helpers
from ..autograd.tensor import Tensor
from ..autograd.views import rebase, unrecorded_array, writable
from .inplace import inplace_variant, scalar_type as _scalar_type

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
    check_numel(_broadcast_pair(sa, sb))


def _broadcast_pair(sa, sb) -> tuple:
    """``_broadcast_shape`` of two shape tuples, kept per pair."""
    out = _BROADCASTS.get((sa, sb))
    if out is None:
        out = _broadcast_shape(sa, sb)
        if len(_BROADCASTS) >= 4096:
            _BROADCASTS.clear()
        _BROADCASTS[(sa, sb)] = out
    return out


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
_FLOATS = (int, float)


def _by_number(ufunc, operator):
    """A forward ``operator(a, b)``, but a float16 NumPy array and a Python number as torch's kernel
    computes them (half_by_number: in float32, rounded once)."""
    def forward(xp, a, b):
        if a.__class__ is _NDARRAY and a.dtype is _F16 and (b.__class__ is float or b.__class__ is int):
            return _half_by_number(ufunc, a, b)
        return operator(a, b)
    return forward


_ADD_NUMBER, _SUB_NUMBER = _by_number(_np.add, _operator.add), _by_number(_np.subtract, _operator.sub)
AddBackward1 = define_node(
    "AddBackward1", attrs=("other", "alpha"), self="grad",
    forward=lambda xp, a, other, alpha: _ADD_NUMBER(xp, a, other if alpha == 1 else alpha * other))
SubBackward1 = define_node(
    "SubBackward1", attrs=("other", "alpha"), self="grad",
    forward=lambda xp, a, other, alpha: _SUB_NUMBER(xp, a, other if alpha == 1 else alpha * other))
MulBackward1 = define_node("MulBackward1", attrs=("other",), self="grad * other",
                           forward=_by_number(_np.multiply, _operator.mul))


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
    "MulBackward0", inputs=("self", "other"), broadcasts=True, forward=_by_number(_np.multiply, _operator.mul),
    self="grad * other", other="grad * self")
MulBackward0.opmath_number = True  # a number saved as ``other`` meets the gradient as torch's kernel


@op(MulBackward0, MulBackward1, operator="a * b", reflected=True, fast=True, inplace="a *= b")
def mul(input, other):
    """Elementwise product, broadcasting."""
    if _GRAD.formula:
        out = _scalar_overload(MulBackward1, input, other, (other,))
        if out is not None:
            return out
    return _binary(MulBackward0, input, other, (), "mul")


DivBackward0 = define_node(
    "DivBackward0", inputs=("self", "other"), broadcasts=True, forward=_by_number(_np.true_divide, _operator.truediv),
    self="grad / other", other="-grad * ((self / other) / other)")
DivBackward0.opmath_number = True
# div with a rounding_mode argument: a zero gradient for "trunc" and "floor", DivBackward0's for an
# explicit None (torch's div_tensor_*_backward with and without a rounding mode)
DivBackward2 = define_node(
    "DivBackward2", inputs=("self", "other"), attrs=("rounding_mode",), broadcasts=True,
    forward=lambda xp, a, b, rounding_mode: divide_rounded(xp, a, b, rounding_mode),
    self="grad / other if rounding_mode is None else F.zeros_like(grad)",
    other="-grad * ((self / other) / other) if rounding_mode is None else F.zeros_like(grad)")


DivBackward2.opmath_number = True


class _NotGiven:
    """A keyword's default that reads as None (``gradcli ops``, help) yet tells an explicit None
    apart: torch records another node whenever the argument is given, None included."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "None"


_NOT_GIVEN = _NotGiven()


# torch's __rtruediv__: ``2 / x`` is reciprocal(x) * 2
@op(DivBackward0, DivBackward2, operator="a / b", reflected=lambda a, b: mul(reciprocal(a), b), fast=True,
    inplace="a /= b")
def div(input, other, *, rounding_mode=_NOT_GIVEN):
    """Elementwise quotient, broadcasting (true division: integers give floats); rounding_mode
    "trunc" or "floor" rounds it, in the operands' dtype (DivBackward2, a zero gradient); an
    explicit rounding_mode=None is true division recorded as DivBackward2, as torch."""
    if rounding_mode is _NOT_GIVEN:
        rounding_mode, cls = None, DivBackward0
    else:
        cls = DivBackward2
    if rounding_mode is not None:
        if rounding_mode not in ("trunc", "floor"):
            raise RuntimeTypeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                                   f"'{rounding_mode}'")
        return _divide("div", f"div_{rounding_mode}_cpu", input, other, DivBackward2, DivBackward2, DivBackward2,
                       (rounding_mode,))
    if input.__class__ is not Tensor:
        # torch.div(2, x) wraps the number: DivBackward0 with a None edge (``2 / x`` is reciprocal(x) * 2)
        input = as_tensor_arg(input, other)
    if other.__class__ is Tensor and not other.dtype.is_floating_point and not input.dtype.is_floating_point:
        input = input.to(_dt.DEFAULTS.float)
    elif other.__class__ is not Tensor and not input.dtype.is_floating_point:
        input = input.to(_dt.DEFAULTS.float)
    return _binary(cls, input, other, () if cls is DivBackward0 else (None,), "div")


NegBackward0 = define_node("NegBackward0", forward=lambda xp, a: -a, self="-grad")


@op(NegBackward0, operator="-a", inplace=True)
def neg(input):
    """Elementwise negation."""
    return apply(NegBackward0, (input,))


def pow_by_number(xp, a, e):
    """``a ** e`` for a number ``e`` with torch's kernels. On float32 and float64 torch specialises
    some exponents, and three of them round otherwise than a general power: ``x * x * x`` for 3,
    ``1 / (x * x)`` for -2, ``1 / sqrt(x)`` for -0.5 (0.5, 2 and -1 are sqrt, square and reciprocal
    in NumPy too). Other exponents and dtypes: ``a ** e`` (torch's std::pow)."""
    if e == 3 or e == -2 or e == -0.5:
        dtype = getattr(a, "dtype", None)
        if (dtype == xp.float32 or dtype == xp.float64) and e.__class__ is not bool:
            if e == 3:
                return a * a * a
            return 1 / (a * a) if e == -2 else 1 / xp.sqrt(a)
    return a ** e


def pow_factor(F, self, exponent):
    """pow_backward's ``exponent * self.pow(exponent - 1)``. On arrays, ``self.pow(1)`` is ``self``
    (torch's pow by 1 is a copy), so a square's factor is one product, ``self * 2``: the same values
    with one pass over the data fewer. Under create_graph, torch's nodes (PowBackward0, MulBackward1)."""
    if F.differentiable:
        return F.mul_(self ** (exponent - 1), exponent)
    if exponent == 2 and (exponent.__class__ is int or exponent.__class__ is float):
        return self * exponent
    return F.mul_(pow_by_number(F.xp, self, exponent - 1), exponent)


formula_helpers(pow_factor=pow_factor)
PowBackward0 = define_node(
    "PowBackward0", attrs=("exponent",), forward=pow_by_number,
    self="F.zeros_like(grad) if exponent == 0 else F.mul_(pow_factor(F, self, exponent), grad)")
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
           reuses_grad=False, kernel=None):
    """One declaration for a unary elementwise op: its node (``grad_fn``, ``forward``, the
    derivative ``formula`` of ``self``, ``reuses_grad`` as define_node's) and its function, which
    computes in the default float dtype unless ``keep_int``. ``kernel``: the name of torch's CPU
    kernel, for the dtypes it has none for (torch's "not implemented" message): bool where
    ``keep_int`` (floor: "floor_vml_cpu"), else every integer dtype too (frac: "frac_cpu")."""
    cls = define_node(grad_fn, forward=forward, self=formula, reuses_grad=reuses_grad)

    plain = keep_int and kernel is None  # every dtype as it is (abs, relu)

    def unary_op(input):
        if input.__class__ is Tensor:  # the usual call, a float NumPy tensor: nothing to check or cast
            data = input._data
            if plain or data.__class__ is _ndarray and data.dtype.kind == "f":
                return apply1(cls, input, data)  # apply's one-tensor path, directly
        input, data = _unary_input(name, input, keep_int, kernel)
        return apply1(cls, input, data)
    unary_op.__name__ = unary_op.__qualname__ = name
    unary_op.__doc__ = doc
    return op(cls, operator=operator, namespaces=namespaces, inplace=inplace)(unary_op)


def _unary_input(name, input, keep_int, kernel):
    """A unary op's input and its array, as ``_unary`` describes: checked, integers cast to the
    default float unless ``keep_int``, the dtypes without ``kernel`` refused."""
    if input.__class__ is not Tensor:
        raise GradTypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    data = input._data
    if (not keep_int or kernel is not None) and (data.__class__ is not _ndarray or data.dtype.kind != "f") \
            and not input.dtype.is_floating_point:  # abs and relu keep integers, as torch
        if kernel is not None and (not keep_int or input.dtype.name == "bool"):
            raise KernelTypeError(f'"{kernel}" not implemented for \'{_scalar_type(input.dtype)}\'')
        if not keep_int:
            input = input.to(_dt.DEFAULTS.float)
            data = input._data
    return input, data


_ONE = (1,)
_F16, _F32 = _np.dtype(_np.float16), _np.dtype(_np.float32)


def _sigmoid(xp, x):
    """torch's kernel, 1 / (1 + exp(-x)): a float32/float64 NumPy array's in 4 ufunc calls in
    place (``_one_plus_exp_neg``). float16 is computed in float32 and rounded once, as torch's
    kernel does (its opmath)."""
    if x.__class__ is _ndarray:
        if x.dtype is _F16:
            return _sigmoid(xp, x.astype(_F32)).astype(_F16)
        c = _scalars(x, _ONE)  # 1 as a 0-d array of x's dtype (float32/64, one dim or more), else None
        if c is not None:
            d = _one_plus_exp_neg(x, c[0])[0]
            return _np.divide(c[0], d, d)
        with _np.errstate(over="ignore"):  # a 0-d array
            return 1 / (1 + _np.exp(-x))
    return 1 / (1 + xp.exp(-x))  # another backend's (CuPy's: torch's CUDA kernel is the same formula)


def _one_plus_exp_neg(x, one):
    """``(1 + exp(-x), plain)`` for a float32/float64 NumPy array of one dim or more, a new array
    (sigmoid's and silu's denominator); ``plain``: every exp(-x) is finite, as its least element
    shows (x above ``EXP_NEG_SAFE``). Else exp runs with NumPy's overflow warning off: inf there,
    where torch's kernels give 0 (sigmoid) and -0.0 (silu) silently."""
    e = _np.negative(x)
    plain = bool(x.size) and _least(x) > _EXP_NEG_SAFE[x.dtype]  # (NaN: not above)
    if plain:
        _np.exp(e, e)
    else:
        with _np.errstate(over="ignore"):
            _np.exp(e, e)
    return _np.add(e, one, e), plain


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


# -- more unary math: powers of 2, logs, hyperbolic and inverse trigonometric, erf, rounding ------------

_API_KINDS = {"f": "real floating", "b": "bool"}


def _is_kind(xp, a, kind) -> bool:
    """Whether array ``a`` is of NumPy's dtype ``kind`` ("f", "b"), on any backend."""
    found = getattr(a.dtype, "kind", None)  # NumPy's and CuPy's dtypes; array-api-strict's have none
    return found == kind if found is not None else xp.isdtype(a.dtype, _API_KINDS[kind])


def _exp2(xp, x):
    exp2 = getattr(xp, "exp2", None)  # NumPy's and CuPy's; the array API has only powers
    return exp2(x) if exp2 is not None else 2.0 ** x


_TWO_OVER_SQRT_PI = 2 / _math.sqrt(_math.pi)  # torch's 2.0 / sqrt(M_PI), in erf's derivative
_ERF_SPLIT = 2.5  # below it erf's series, above it erfc's continued fraction: each converged there


def _erf(xp, x):
    """The error function: on a NumPy array the C library's (``math.erf``, element by element: on a
    small tensor 30 times faster than the series below, and no slower on a large one, whose ~150
    passes over the array cost more than the loop). Elsewhere, within 6 float64 ulps of it, from
    array functions alone (the array API has none). Below |x| = 2.5: 2/sqrt(pi) exp(-x^2) sum_n (2x^2)^n x / (2n+1)!!, a series of
    positive terms (none cancels, as in erf's Taylor series); above: 1 - erfc(|x|), erfc
    by its continued fraction exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / ...))),
    40 levels deep. Computed in float64, rounded once to the tensor's dtype."""
    if x.__class__ is _ndarray:
        erf = _math.erf
        out = _np.array([erf(v) for v in x.ravel().tolist()], dtype=_np.float64).reshape(x.shape)
        return out if x.dtype == _np.float64 else out.astype(x.dtype)
    special = _cuda_special(xp)
    if special is not None:  # CUDA's own erf/erff, one kernel (the series below is ~150)
        return special.erf(x)
    return _erf_series(xp, x)


def _cuda_special(xp):
    """``cupyx.scipy.special`` where ``xp`` is CuPy's namespace, else None."""
    if getattr(xp, "_cupy", None) is None:
        return None
    try:
        from cupyx.scipy import special
    except ImportError:
        return None
    return special


def _erf_series(xp, x):
    """``_erf`` from array functions (see there)."""
    dtype = x.dtype
    x64 = x if dtype == xp.float64 else xp.astype(x, xp.float64)
    a = xp.abs(x64)
    near = xp.minimum(a, _ERF_SPLIT)  # each branch on values it converges for (no overflow)
    a2 = near * near
    total = xp.ones_like(near)
    for n in range(35, -1, -1):  # 1 + 2a^2/3 (1 + 2a^2/5 (1 + ...)), innermost first (6 ulps, not 11)
        total = 1 + total * (2 * a2) / (2 * n + 3)
    out = _TWO_OVER_SQRT_PI * near * xp.exp(-a2) * total
    if bool(xp.any(a > _ERF_SPLIT)):  # erf is 1 in float64 from 6 on: clipped there
        far = xp.clip(a, _ERF_SPLIT, 6.0)
        fraction = far
        for n in range(40, 0, -1):
            fraction = far + (n / 2) / fraction
        erfc = xp.exp(-far * far) / (_math.sqrt(_math.pi) * fraction)
        out = xp.where(a > _ERF_SPLIT, 1 - erfc, out)
    out = xp.copysign(out, x64)  # erf(-0.0) is -0.0; NaN stays NaN
    return out if dtype == xp.float64 else xp.astype(out, dtype)


def _erfc(xp, x):
    """erfc as ``_erf``: on a NumPy array the C library's (``math.erfc``, element by element); CUDA's
    own; elsewhere from ``_erf``'s two parts in float64, rounded once: 1 - erf(x) below |x| = 2.5,
    the continued fraction above (2 minus it for negative x), where 1 - erf would cancel."""
    if x.__class__ is _ndarray:
        erfc = _math.erfc
        out = _np.array([erfc(v) for v in x.ravel().tolist()], dtype=_np.float64).reshape(x.shape)
        return out if x.dtype == _np.float64 else out.astype(x.dtype)
    special = _cuda_special(xp)
    if special is not None:
        return special.erfc(x)
    dtype = x.dtype
    x64 = x if dtype == xp.float64 else xp.astype(x, xp.float64)
    a = xp.abs(x64)
    far = xp.clip(a, _ERF_SPLIT, 27.0)  # erfc is 0 in float64 from 27 on
    fraction = far
    for n in range(40, 0, -1):
        fraction = far + (n / 2) / fraction
    tail = xp.exp(-far * far) / (_math.sqrt(_math.pi) * fraction)
    tail = xp.where(a > 27.0, xp.zeros_like(tail), tail)
    out = xp.where(a > _ERF_SPLIT, xp.where(x64 < 0, 2 - tail, tail), 1 - _erf_series(xp, x64))
    return out if dtype == xp.float64 else xp.astype(out, dtype)


def _scaled(xp, x, c):
    """``x * c`` for a Python float ``c``, as torch's kernel with a wrapped number: in the array's
    dtype, float16 in float32 rounded once (half_by_number)."""
    if x.__class__ is _ndarray and x.dtype is _F16:
        return _half_by_number(_np.multiply, x, c)
    return x * c


def scaled(F, grad, c):
    """A formula's ``grad * c`` (deg2rad_backward), with torch's float16 arithmetic on arrays."""
    return grad * c if F.differentiable else _scaled(F.xp, grad, c)


def _integers_kept(fn):
    """The forward of a rounding op: ``fn`` on floats, integers returned as they are (a copy), as torch."""
    return lambda xp, x: fn(xp, x) if _is_kind(xp, x, "f") else xp.asarray(x, copy=True)


exp2 = _unary("exp2", "Exp2Backward0", _exp2, "grad * result * 0.6931471805599453", "2 ** x, elementwise.")
log2 = _unary("log2", "Log2Backward0", lambda xp, x: xp.log2(x), "grad / (self * 0.6931471805599453)",
              "Base-2 logarithm.")
log10 = _unary("log10", "Log10Backward0", lambda xp, x: xp.log10(x), "grad / (self * 2.3025850929940456)",
               "Base-10 logarithm.")
sinh = _unary("sinh", "SinhBackward0", lambda xp, x: xp.sinh(x), "F.mul_(F.cosh(self), grad)", "Hyperbolic sine.")
cosh = _unary("cosh", "CoshBackward0", lambda xp, x: xp.cosh(x), "F.mul_(F.sinh(self), grad)", "Hyperbolic cosine.")
asin = _unary("asin", "AsinBackward0", lambda xp, x: xp.asin(x), "grad * F.rsqrt(-self * self + 1)", "Arcsine.")
acos = _unary("acos", "AcosBackward0", lambda xp, x: xp.acos(x), "grad * -F.rsqrt(-self * self + 1)", "Arccosine.")
atan = _unary("atan", "AtanBackward0", lambda xp, x: xp.atan(x), "grad / (self * self + 1)", "Arctangent.")
# derivatives.yaml's formulas, operation for operation
asinh = _unary("asinh", "AsinhBackward0", lambda xp, x: xp.asinh(x), "grad * F.rsqrt(self ** 2 + 1)",
               "Inverse hyperbolic sine.", inplace=False)
acosh = _unary("acosh", "AcoshBackward0", lambda xp, x: xp.acosh(x), "grad * F.rsqrt(self ** 2 - 1)",
               "Inverse hyperbolic cosine (NaN below 1).", inplace=False)
atanh = _unary("atanh", "AtanhBackward0", lambda xp, x: xp.atanh(x), "grad * 1 / (1 - self ** 2)",
               "Inverse hyperbolic tangent (+-inf at +-1, NaN beyond).", inplace=False)


def _inplace_not_implemented(outplace, grad_fn):
    """``<name>_`` for an op whose in-place form torch records as ``grad_fn`` (AsinhBackward1) with no
    derivative: the result is written in place, and a backward through it fails with torch's
    message (derivatives.yaml's not_implemented("inplace version of asinh"))."""
    name = outplace.__name__
    cls = define_node(grad_fn, forward=FUNCTIONS[name].nodes[0].forward,
                      self=f"not_implemented_inplace('{name}')")

    def recorded(input):
        input, data = _unary_input(name, input, False, None)
        return apply1(cls, input, data)
    recorded.__name__ = name
    op(cls, category="in-place", name=name + "_", namespaces=("torch",), differentiable=False)(
        inplace_variant(recorded, name + "_"))
    return FUNCTIONS[name + "_"].fn


def not_implemented_inplace(name):
    raise AutogradError(f"the derivative for 'inplace version of {name}' is not implemented.")


asinh_ = _inplace_not_implemented(asinh, "AsinhBackward1")
acosh_ = _inplace_not_implemented(acosh, "AcoshBackward1")
atanh_ = _inplace_not_implemented(atanh, "AtanhBackward1")
expm1 = _unary("expm1", "Expm1Backward0", lambda xp, x: xp.expm1(x), "grad * (result + 1)",
               "e**x - 1, accurate for small x.")
# torch's 2.0 / sqrt(M_PI) * exp(-(self.pow(2))) * grad, with its operand order (MulBackward1, then MulBackward0)
erf = _unary("erf", "ErfBackward0", _erf, "1.1283791670955126 * F.exp(-(self ** 2)) * grad", "The error function.")
erfc = _unary("erfc", "ErfcBackward0", _erfc, "-1.1283791670955126 * F.exp(-(self ** 2)) * grad",
              "The complementary error function 1 - erf(x), accurate where erf(x) is near 1.")
# torch's M_PI_180 and M_180_PI: the tensor times the constant (deg2rad_backward: the gradient times it)
_PI_180, _180_PI = 0.017453292519943295, 57.29577951308232
deg2rad = _unary("deg2rad", "Deg2RadBackward0", lambda xp, x: _scaled(xp, x, _PI_180), "scaled(F, grad, 0.017453292519943295)",
                 "Degrees to radians: x * pi / 180.")
rad2deg = _unary("rad2deg", "Rad2DegBackward0", lambda xp, x: _scaled(xp, x, _180_PI), "scaled(F, grad, 57.29577951308232)",
                 "Radians to degrees: x * 180 / pi.")


def _sinc(xp, x):
    """torch's kernel: 1 at 0, else sin(pi x) / (pi x), pi in the dtype; float16 in float32, rounded
    once (its opmath)."""
    if x.dtype == getattr(xp, "float16", None):
        return xp.astype(_sinc(xp, xp.astype(x, xp.float32)), x.dtype)
    p = x * _math.pi
    with _np.errstate(invalid="ignore"):  # 0 / 0 at 0 (NumPy's), replaced below
        out = xp.sin(p) / p
    return xp.where(x == 0, xp.ones_like(out), out)


def sinc_grad(F, grad, self):
    """torch's sinc_backward: where(pi x^2 == 0, 0, grad * ((pi x cos(pi x) - sin(pi x)) / (pi x^2)))."""
    self_pi = scaled(F, self, _math.pi)
    self_squared_pi = scaled(F, self * self, _math.pi)
    out = grad * ((self_pi * F.cos(self_pi) - F.sin(self_pi)) / self_squared_pi)
    return F.where(self_squared_pi == 0.0, 0.0, out)


def _lo_hi(x, eps):
    """logit's clamp: eps and 1 - eps in the dtype, as torch's kernel makes them."""
    kind = getattr(x.dtype, "type", float)
    lo = kind(eps)
    return lo, kind(1) - lo


def _bounds(x, eps):
    """``_lo_hi`` of a NumPy array as two 0-d arrays of its dtype, kept per (dtype, eps): a ufunc
    takes a 0-d array as it is, a NumPy scalar through a conversion (0.47 -> 0.26 us a clip)."""
    key = (x.dtype, eps)
    found = _BOUNDS.get(key)
    if found is None:
        if len(_BOUNDS) >= 64:
            _BOUNDS.clear()
        found = _BOUNDS[key] = tuple(_np.asarray(b) for b in _lo_hi(x, eps))
    return found


_BOUNDS: dict = {}
_CLIP = _np._core.umath.clip  # np.clip's ufunc, without np.clip's Python wrapper (NaN stays NaN)


def _logit(xp, x, eps):
    """torch's kernel: log(x / (1 - x)), x clamped to [eps, 1 - eps] first unless eps is None or
    negative (NaN stays NaN); each step rounded to the dtype, float16's too."""
    if eps is not None and eps >= 0:
        if x.__class__ is _ndarray:
            x = _CLIP(x, *_bounds(x, eps))
        else:
            lo, hi = _lo_hi(x, eps)
            x = xp.where(x < lo, lo, xp.where(x > hi, hi, x))
    return xp.log(x / (1 - x))  # (inf at 1, NaN beyond: NumPy warns where torch is silent, as log does)


def logit_grad(F, grad, self, eps):
    """derivatives.yaml's: under create_graph, infinitely_differentiable_logit_backward (the
    gradient where self is within [eps, 1 - eps], or [0, 1] without eps; 0, or NaN, elsewhere);
    else logit_backward's kernel (which leaves NaN where self is NaN, and knows no eps below 0)."""
    if F.differentiable:
        lo, hi = (0.0, 1.0) if eps is None else (eps, 1 - eps)
        inside = F.logical_and(self >= lo, self <= hi)  # (its 1 - self a C++ one: SubBackward0)
        return F.where(inside, grad / (self * (F.filled(1, self) - self)), _math.nan if eps is None else 0.0)
    out = grad / (self * (1 - self))
    plain = eps is None or eps < 0  # NaN outside [0, 1]; with eps, 0 outside [eps, 1 - eps]
    fill = _math.nan if plain else 0.0
    if out.__class__ is _ndarray and self.__class__ is _ndarray:  # in place (NaN is not outside)
        lo, hi = _bounds(self, 0.0 if plain else eps)
        outside = _np.less(self, lo)
        outside |= _np.greater(self, hi)
        _np.putmask(out, outside, fill)
        return out
    lo, hi = (0, 1) if plain else _lo_hi(self, eps)
    return F.where(F.logical_or(self < lo, self > hi), fill, out)


formula_helpers(sinc_grad=sinc_grad, logit_grad=logit_grad)
sinc = _unary("sinc", "SincBackward0", _sinc, "sinc_grad(F, grad, self)",
              "The normalised sinc function sin(pi x) / (pi x), 1 at 0.", namespaces=("torch", "torch.special"))
LogitBackward0 = define_node("LogitBackward0", attrs=("eps",), forward=_logit, self="logit_grad(F, grad, self, eps)")


@op(LogitBackward0, inplace=True, namespaces=("torch", "torch.special"))
def logit(input, eps=None):
    """log(x / (1 - x)), the inverse of sigmoid; ``eps``: x clamped to [eps, 1 - eps] first."""
    input, data = _unary_input("logit", input, False, None)
    if eps is not None and (isinstance(eps, bool) or not isinstance(eps, (int, float))):
        raise GradTypeError(f"logit(): argument 'eps' (position 2) must be float, not {type(eps).__name__}")
    return apply1(LogitBackward0, input, data, (None if eps is None else float(eps),))


# Rounding: a zero gradient; integers keep their dtype and values, bool has no kernel (torch's message)
floor = _unary("floor", "FloorBackward0", _integers_kept(lambda xp, x: xp.floor(x)), "F.zeros_like(grad)",
               "Round down to an integer value.", keep_int=True, kernel="floor_vml_cpu")
ceil = _unary("ceil", "CeilBackward0", _integers_kept(lambda xp, x: xp.ceil(x)), "F.zeros_like(grad)",
              "Round up to an integer value.", keep_int=True, kernel="ceil_vml_cpu")
trunc = _unary("trunc", "TruncBackward0", _integers_kept(lambda xp, x: xp.trunc(x)), "F.zeros_like(grad)",
               "Round toward zero to an integer value.", keep_int=True, kernel="trunc_vml_cpu")
frac = _unary("frac", "FracBackward0", lambda xp, x: x - xp.trunc(x), "grad",
              "The fractional part, x - trunc(x) (floats only).", kernel="frac_cpu")


def _round_decimals(xp, x, decimals):
    """torch's kernel: 10 ** |decimals| in the tensor's dtype (float for half), then
    nearbyint(x * p) / p, or nearbyint(x / p) * p for negative decimals (halves to even)."""
    work = x if x.dtype != getattr(xp, "float16", None) else xp.astype(x, xp.float32)
    p = xp.asarray(10.0 ** (decimals if decimals >= 0 else -decimals), dtype=work.dtype)
    out = xp.round(work * p) / p if decimals >= 0 else xp.round(work / p) * p
    return out if out.dtype == x.dtype else xp.astype(out, x.dtype)


RoundBackward0 = define_node("RoundBackward0", forward=_integers_kept(lambda xp, x: xp.round(x)),
                             self="F.zeros_like(grad)")
RoundBackward1 = define_node("RoundBackward1", attrs=("decimals",), forward=_round_decimals, self="F.zeros_like(grad)")


@op(RoundBackward0, RoundBackward1, inplace=True)
def round(input, *, decimals=None):
    """Round to the nearest integer, halves to even; to ``decimals`` places when given (RoundBackward1)."""
    # decimals=None rather than torch's 0: torch records RoundBackward1 whenever decimals is passed, 0 included
    if decimals is None:
        input, data = _unary_input("round", input, True, "round_vml_cpu")
        return apply1(RoundBackward0, input, data)
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise GradTypeError(f"round(): argument 'decimals' must be int, not {type(decimals).__name__}")
    input, data = _unary_input("round", input, False, "round_cpu")
    return apply1(RoundBackward1, input, data, (decimals,))


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


# -- two-argument math: atan2, hypot, remainders, floor division ----------------------------------------

def _tensor_arguments(name, input, other):
    """torch's message for a number where atan2 and hypot take only tensors."""
    for value, which in ((input, "'input' (position 1)"), (other, "'other' (position 2)")):
        if value.__class__ is not Tensor:
            raise GradTypeError(f"{name}(): argument {which} must be Tensor, not {type(value).__name__}")


def atan2_reciprocal(F, a, b):
    """torch's atan2_backward: 1 / (a * a + b * b), 0 where that sum is 0 (atan2(0, 0))."""
    d = a * a + b * b
    return F.masked_fill(F.reciprocal(d), d == 0, 0)


Atan2Backward0 = define_node(
    "Atan2Backward0", inputs=("self", "other"), broadcasts=True, forward=lambda xp, a, b: xp.atan2(a, b),
    self="grad * other * atan2_reciprocal(F, self, other)",
    other="grad * -self * atan2_reciprocal(F, self, other)")
HypotBackward0 = define_node(
    "HypotBackward0", inputs=("self", "other"), broadcasts=True, forward=lambda xp, a, b: xp.hypot(a, b),
    self="grad * self / result", other="grad * other / result")


@op(Atan2Backward0, inplace=True)
def atan2(input, other):
    """The angle of the point (other, input): arctan(input / other) in the right quadrant, broadcasting."""
    _tensor_arguments("atan2", input, other)
    if not input.dtype.is_floating_point and not other.dtype.is_floating_point:
        input = input.to(_dt.DEFAULTS.float)  # integers give the default float, as torch
    return _binary(Atan2Backward0, input, other, (), "atan2")


@op(HypotBackward0, inplace=True)
def hypot(input, other):
    """sqrt(input ** 2 + other ** 2), broadcasting, without overflow (floats only)."""
    _tensor_arguments("hypot", input, other)
    kind = _dt.result_type((input, other))
    if _dt.DTYPES[kind].category < 2:
        raise KernelTypeError(f'"hypot_cpu" not implemented for \'{_scalar_type(_dt.DTYPES[kind])}\'')
    return _binary(HypotBackward0, input, other, (), "hypot")


def _logaddexp(xp, a, b):
    """log(exp(a) + exp(b)): NumPy's ufunc, torch's kernel's operations (the larger plus
    log1p(exp(-|a - b|)); equal infinities as they are)."""
    return xp.logaddexp(a, b)


def _logaddexp2(xp, a, b):
    """log2(2**a + 2**b), as ``_logaddexp`` (CuPy and NumPy have it; else from logaddexp)."""
    fn = getattr(xp, "logaddexp2", None)
    return fn(a, b) if fn is not None else xp.logaddexp(a * _LN2, b * _LN2) / _LN2


_LN2 = 0.6931471805599453
LogaddexpBackward0 = define_node(
    "LogaddexpBackward0", inputs=("self", "other"), broadcasts=True, forward=_logaddexp,
    self="grad / (1 + F.exp(other - self))", other="grad / (1 + F.exp(self - other))")
Logaddexp2Backward0 = define_node(
    "Logaddexp2Backward0", inputs=("self", "other"), broadcasts=True, forward=_logaddexp2,
    self="grad / (1 + 2 ** (other - self))", other="grad / (1 + 2 ** (self - other))")


def _logaddexp_op(name, cls, input, other):
    _tensor_arguments(name, input, other)
    kind = _dt.result_type((input, other))
    if _dt.DTYPES[kind].category < 2:
        raise KernelTypeError(f'"{name}_cpu" not implemented for \'{_scalar_type(_dt.DTYPES[kind])}\'')
    return _binary(cls, input, other, (), name)


@op(LogaddexpBackward0)
def logaddexp(input, other):
    """log(exp(input) + exp(other)), computed without overflow, broadcasting (floats only)."""
    return _logaddexp_op("logaddexp", LogaddexpBackward0, input, other)


@op(Logaddexp2Backward0)
def logaddexp2(input, other):
    """log2(2 ** input + 2 ** other), computed without overflow, broadcasting (floats only)."""
    return _logaddexp_op("logaddexp2", Logaddexp2Backward0, input, other)


def xlogy_forward(xp, x, y):
    """torch's kernel: NaN where y is NaN, else 0 where x is 0, else x * log(y) (log(0) is -inf, log
    of a negative NaN: silently), in the dtype of the tensor operand (a number is cast to it). On
    NumPy the usual case -- every y above 0, no x zero, as the least y and ``all`` show -- is just
    log and a product."""
    if not hasattr(x, "dtype"):
        x = xp.asarray(x, dtype=y.dtype)
    if y.__class__ is _ndarray or y.__class__ is float or y.__class__ is int:
        if x.__class__ is _ndarray:
            return _xlogy_numpy(x, y)
    if x.dtype == xp.float32 or x.dtype == xp.float64:
        special = _cuda_special(xp)  # CUDA: scipy's xlogy, torch's cases (NaN for a NaN y, else 0 at x = 0), one kernel
        if special is not None and (not hasattr(y, "dtype") or y.dtype == x.dtype):
            return special.xlogy(x, y if hasattr(y, "dtype") else x.dtype.type(y))
    if not hasattr(y, "dtype"):
        y = xp.asarray(y, dtype=x.dtype)
    out = xp.where(x == 0, xp.zeros_like(x * y), x * xp.log(y))
    return xp.where(xp.isnan(y), y, out)


def _xlogy_numpy(x, y):
    if y.__class__ is not _ndarray:  # a number: its log in the tensor's dtype (torch casts it first)
        y = x.dtype.type(y)
        if y > 0:
            out = _np.multiply(x, _np.log(y))
            return out if x.all() else _np.where(x == 0, _ZERO[out.dtype], out)
        y = _np.asarray(y)
    if y.size and _least(y) > 0:  # (NaN: not above 0)
        out = _np.multiply(x, _np.log(y))
        if x.all():
            return out
    else:
        with _np.errstate(divide="ignore", invalid="ignore"):
            out = _np.multiply(x, _np.log(y))
    out = _np.where(x == 0, _ZERO[out.dtype], out)
    return _np.where(_np.isnan(y), y, out) if y.dtype.kind == "f" else out


_ZERO = {_np.dtype(t): _np.zeros((), t) for t in ("float16", "float32", "float64")}


# derivatives.yaml's: at x = 0, y <= 0 the gradient is 0 (the derivative along x = 0), else xlogy(grad, y)
XlogyBackward0 = define_node(
    "XlogyBackward0", inputs=("self", "other"), broadcasts=True, forward=xlogy_forward,
    self="F.masked_fill(F.xlogy(grad, other), F.logical_and(self == 0, other <= 0), 0)",
    other="grad * self / other")
XlogyBackward1 = define_node(  # a number as ``self``
    "XlogyBackward1", inputs=("other",), attrs=("self",), forward=lambda xp, y, x: xlogy_forward(xp, x, y),
    other="grad * self / other")
XlogyBackward2 = define_node(  # a number as ``other``
    "XlogyBackward2", attrs=("other",), forward=xlogy_forward,
    self="F.xlogy(grad, other) if other > 0 else F.masked_fill(F.xlogy(grad, other), self == 0, 0)")


@op(XlogyBackward0, XlogyBackward1, XlogyBackward2, inplace=True)
def xlogy(input, other):
    """input * log(other), 0 where input is 0 (unless other is NaN), broadcasting; either side may
    be a number; integers give the default float."""
    if input.__class__ is Tensor and (other.__class__ is float or other.__class__ is int):
        data = input._data
        if data.__class__ is _ndarray and data.dtype.kind == "f":  # the usual call: nothing to cast
            return apply1(XlogyBackward2, input, data, (other,))
    if input.__class__ is not Tensor:
        if other.__class__ is not Tensor or not isinstance(input, _SCALARS):
            raise GradTypeError(f"xlogy(): argument 'input' must be Tensor or Number, not {type(input).__name__}")
        other = _float_operand(other, input)
        return apply(XlogyBackward1, (other,), (input,))
    if other.__class__ is not Tensor:
        if not isinstance(other, _SCALARS):
            raise GradTypeError(f"xlogy(): argument 'other' must be Tensor or Number, not {type(other).__name__}")
        return apply(XlogyBackward2, (_float_operand(input, other),), (other,))
    return _binary_to_float(XlogyBackward0, input, other, "xlogy")


def _binary_to_float(cls, input, other, name):
    """``_binary`` for two tensors of an op whose integer (or bool) operands give the default float
    (xlogy, copysign): the float tensors as _binary takes them, else both cast after its checks."""
    if input.dtype.is_floating_point or other.dtype.is_floating_point:
        return _binary(cls, input, other, (), name)
    _operands(input, other, name)  # (devices, broadcasting)
    dt, xp = input._backend.dtype(_dt.DEFAULTS.float.name), input._backend.xp
    return apply(cls, (input, other), (), [xp.astype(input._data, dt), xp.astype(other._data, dt)])


def _float_operand(t, number):
    """``t`` in the dtype that ``t`` and the number promote to, made floating (the default float)."""
    kind = _dt.result_type((t, number))
    if _dt.DTYPES[kind].category < 2:
        kind = _dt.DEFAULTS.float
    return t if t.dtype.name == kind else t.to(kind)


def _fmax(xp, a, b, name="fmax", pick=None):
    """fmax/fmin: NumPy's and CuPy's ufunc; elsewhere maximum/minimum with a NaN giving way to the other."""
    fn = getattr(xp, name, None)
    if fn is not None:
        return fn(a, b)
    out = (pick or xp.maximum)(a, b)
    return xp.where(xp.isnan(b), a, xp.where(xp.isnan(a), b, out))


FmaxBackward0 = define_node(  # derivatives.yaml's: the gradient to the operand fmax took (self on ties)
    "FmaxBackward0", inputs=("self", "other"), broadcasts=True, forward=_fmax,
    self="F.masked_fill(grad, F.logical_not(F.logical_or(self >= other, F.isnan(other))), 0)",
    other="F.masked_fill(grad, F.logical_or(self >= other, F.isnan(other)), 0)")
FminBackward0 = define_node(
    "FminBackward0", inputs=("self", "other"), broadcasts=True,
    forward=lambda xp, a, b: _fmax(xp, a, b, "fmin", xp.minimum),
    self="F.masked_fill(grad, F.logical_not(F.logical_or(self <= other, F.isnan(other))), 0)",
    other="F.masked_fill(grad, F.logical_or(self <= other, F.isnan(other)), 0)")


@op(FmaxBackward0)
def fmax(input, other):
    """The larger of two tensors elementwise, a NaN losing to a number (NaN only where both are), broadcasting."""
    _tensor_arguments("fmax", input, other)
    return _binary(FmaxBackward0, input, other, (), "fmax")


@op(FminBackward0)
def fmin(input, other):
    """The smaller of two tensors elementwise, a NaN losing to a number (NaN only where both are), broadcasting."""
    _tensor_arguments("fmin", input, other)
    return _binary(FminBackward0, input, other, (), "fmin")


def copysign_grad(F, grad, self, result):
    """copysign_tensor_self_backward: grad * (result / self), 0 where self is 0."""
    return grad * F.masked_fill(result / self, self == 0, 0)


formula_helpers(copysign_grad=copysign_grad)
CopysignBackward0 = define_node(
    "CopysignBackward0", inputs=("self", "other"), broadcasts=True, forward=lambda xp, a, b: xp.copysign(a, b),
    self="copysign_grad(F, grad, self, result)", other="F.zeros_like(other)")
CopysignBackward1 = define_node(
    "CopysignBackward1", attrs=("other",), forward=lambda xp, a, b: xp.copysign(a, xp.asarray(b, dtype=a.dtype)),
    self="copysign_grad(F, grad, self, result)")


@op(CopysignBackward0, CopysignBackward1, inplace=True)
def copysign(input, other):
    """The magnitude of ``input`` with the sign of ``other`` (a tensor or a number), broadcasting;
    integers give the default float."""
    if input.__class__ is not Tensor:
        raise GradTypeError(f"copysign(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if other.__class__ is not Tensor:
        if not isinstance(other, _SCALARS):
            raise GradTypeError(f"copysign(): argument 'other' must be Tensor or Number, not {type(other).__name__}")
        return apply(CopysignBackward1, (_float_operand(input, other),), (other,))
    return _binary_to_float(CopysignBackward0, input, other, "copysign")


def _nan_to_num(xp, x, nan, posinf, neginf):
    """torch's kernel: NaN to ``nan``, +-inf to ``posinf``/``neginf`` (default: the dtype's largest
    and lowest values), integers as they are."""
    if not _is_kind(xp, x, "f"):
        return xp.asarray(x, copy=True)
    if x.__class__ is _ndarray:  # NumPy's own, the same rules (a copy where every element is finite)
        if _np.isfinite(x).all():
            return x.copy()
        with _np.errstate(over="ignore", invalid="ignore"):
            return _np.nan_to_num(x, nan=0.0 if nan is None else nan, posinf=posinf, neginf=neginf)
    info = xp.finfo(x.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    with _np.errstate(over="ignore"):  # a replacement beyond the dtype: inf, as torch's cast
        hi, lo, fill = (xp.asarray(v, dtype=x.dtype) for v in (hi, lo, 0.0 if nan is None else nan))
    out = xp.where(xp.isnan(x), fill, x)
    out = xp.where(out == float("inf"), hi, out)
    return xp.where(out == float("-inf"), lo, out)


NanToNumBackward0 = define_node(
    "NanToNumBackward0", attrs=("nan", "posinf", "neginf"), forward=_nan_to_num,
    self="grad * F.mask(F.isfinite(self), grad)")


@op(NanToNumBackward0, inplace=True)
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (default 0 and the dtype's
    largest and lowest values); the gradient flows where the input is finite."""
    if input.__class__ is not Tensor:
        raise GradTypeError(f"nan_to_num(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    for what, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if value is not None and not isinstance(value, (int, float)):
            raise GradTypeError(f"nan_to_num(): argument '{what}' must be float, not {type(value).__name__}")
    return apply(NanToNumBackward0, (input,), (nan, posinf, neginf))


def _fmod(xp, a, b):
    """C's fmod: the remainder of the truncated division, with the dividend's sign, exact. The
    array API has only Python's remainder (the divisor's sign): fmod is then that of |a| and |b|,
    given a's sign (array-api-strict)."""
    fmod = getattr(xp, "fmod", None)
    if fmod is not None:
        return fmod(a, b)
    r = xp.remainder(xp.abs(a), xp.abs(b) if hasattr(b, "shape") else (-b if b < 0 else b))
    return xp.copysign(r, a) if _is_kind(xp, r, "f") else xp.where(a < 0, -r, r)


def _remainder(xp, a, b):
    """torch's remainder: fmod moved by one divisor where its sign differs from the divisor's. A zero
    keeps fmod's sign (NumPy's remainder gives it the divisor's: -0.0 % 2 is 0.0 there, -0.0 in torch)."""
    if a.__class__ is _ndarray and a.dtype.kind == "f":
        # NumPy's remainder is that formula (npy_divmod) but for a zero's sign (the divisor's): 3 calls, not 7
        out = _np.remainder(a, b)
        if out.__class__ is _ndarray:
            _np.copysign(out, a, out=out, where=out == 0)
            return out
    mod = _fmod(xp, a, b)
    return xp.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


def divide_rounded(xp, a, b, mode):
    """``a / b`` rounded as div's ``rounding_mode``: "floor" is floor division (NumPy's, torch's
    algorithm); "trunc" is trunc(a / b) on floats, as torch, and exact on integers."""
    if mode is None:  # div(..., rounding_mode=None): DivBackward0's true division
        return DivBackward0.forward(xp, a, b)
    if mode == "floor":
        return xp.floor_divide(a, b)
    if _is_kind(xp, a, "f") or isinstance(b, float) or hasattr(b, "dtype") and _is_kind(xp, b, "f"):
        return xp.trunc(a / b)
    q = xp.floor_divide(a, b)
    return xp.where((q * b != a) & ((a < 0) != (b < 0)), q + 1, q)  # floor, moved up where it went below


def not_implemented(aten):
    raise AutogradError(f"derivative for {aten} is not implemented")


formula_helpers(atan2_reciprocal=atan2_reciprocal, not_implemented=not_implemented, scaled=scaled,
                not_implemented_inplace=not_implemented_inplace)


def _not_implemented(aten, inputs, forward, attrs=()):
    """torch's node for an op derivatives.yaml has no formula for (floor_divide, a number's remainder
    by a tensor): recorded like any other, named NotImplemented whatever the op, and its backward
    fails with torch's error when it is reached. It has an edge for each operand that requires grad,
    and no other (``grad_edges_only``: a tensor that does not is kept as a number is). Each use is a
    class of its own under that one name (the node table keeps the last); the ops list none of them:
    they have no gradient to show."""
    text = f"not_implemented('{aten}')"
    cls = define_node("NotImplemented", inputs=inputs, attrs=attrs, forward=forward, **{i: text for i in inputs})
    cls.grad_edges_only = True
    return cls


FmodBackward0 = define_node("FmodBackward0", attrs=("other",), forward=_fmod, self="grad")
FmodBackward1 = define_node("FmodBackward1", inputs=("self", "other"), broadcasts=True, forward=_fmod,
                            self="grad", other="-grad * F.div_rounded(self, other, 'trunc')")
RemainderBackward0 = define_node("RemainderBackward0", attrs=("other",), forward=_remainder, self="grad")
RemainderBackward1 = define_node("RemainderBackward1", inputs=("self", "other"), broadcasts=True,
                                 forward=_remainder, self="grad",
                                 other="-grad * F.div_rounded(self, other, 'floor')")
# the number first (2 % x, 2 // x): a 0-d array of the result's dtype, kept as the node's attribute
_REMAINDER_OF_NUMBER = _not_implemented("aten::remainder", ("other",), lambda xp, b, a: _remainder(xp, a, b),
                                        attrs=("self",))
_FLOOR_DIVIDE_NUMBER = _not_implemented("aten::floor_divide", ("other",), lambda xp, b, a: xp.floor_divide(a, b),
                                        attrs=("self",))
_FLOOR_DIVIDE_BY_NUMBER = _not_implemented("aten::floor_divide", ("self",), lambda xp, a, b: xp.floor_divide(a, b),
                                           attrs=("other",))
_FLOOR_DIVIDE = _not_implemented("aten::floor_divide", ("self", "other"), lambda xp, a, b: xp.floor_divide(a, b))


def _divide(name, kernel, input, other, tensor_cls, number_cls, number_first=None, attrs=()):
    """fmod, remainder, floor_divide and div's rounding modes: ``tensor_cls`` records a tensor
    divisor, ``number_cls`` a number (its attribute, or a wrapped number with no edge where it has two
    inputs), ``number_first`` a number divided by a tensor (None: torch takes none). Operands are
    promoted as torch's; bool results have no ``kernel`` (torch's message), and an integer division by
    zero fails as torch's does."""
    if input.__class__ is Tensor and other.__class__ is Tensor:  # the usual call: two float NumPy tensors
        da, db = input._data, other._data  # of one dtype whose shapes are equal or a pair seen to broadcast
        if da.__class__ is _ndarray and db.__class__ is _ndarray and da.dtype.kind == "f" and da.dtype == db.dtype:
            sa, sb = da.shape, db.shape  # (nothing to promote, check or cast: no integer division by zero)
            if (sa == sb or _BROADCASTS.get((sa, sb)) in (sa, sb)) and not getattr(tensor_cls, "grad_edges_only", False):
                return apply2(tensor_cls, input, other, da, db, attrs)
    elif (other.__class__ is float or other.__class__ is int) and input.__class__ is Tensor \
            and number_cls._arity == 1:  # a float NumPy tensor and a number: its attribute
        da = input._data
        if da.__class__ is _ndarray and da.dtype.kind == "f":
            return apply1(number_cls, input, da, (other, *attrs))
    if input.__class__ is not Tensor and number_first is not None and other.__class__ is Tensor \
            and isinstance(input, _SCALARS):
        number = as_tensor_arg(input, other)  # torch's wrapped number: the tensor's dtype unless of a higher kind
        a, b = _operands(number, other, name) or (number._data, other._data)
        _check_division(kernel, number, other, other._backend.xp, b)
        if number_first._arity == 2:
            return apply(number_first, (number, other), attrs, [a, b])
        return apply(number_first, (other,), (a, *attrs), [b])
    if input.__class__ is not Tensor or other.__class__ is not Tensor and not isinstance(other, _SCALARS):
        got = f"{type(input).__name__}, {type(other).__name__}" + (", rounding_mode=str" if attrs else "")
        raise GradTypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected "
                            f"one of:\n" + "".join(f" * ({s})\n" for s in _SIGNATURES[name]))
    arrays = _operands(input, other, name)
    a, b = arrays if arrays is not None else (input._data, other._data if other.__class__ is Tensor else other)
    _check_division(kernel, input, other, input._backend.xp, b)
    if other.__class__ is Tensor:
        if getattr(tensor_cls, "grad_edges_only", False) and not (input._requires_grad and other._requires_grad):
            if other._requires_grad:
                return apply(number_first, (other,), (a, *attrs), [b])
            return apply(number_cls, (input,), (b, *attrs), [a])
        return apply(tensor_cls, (input, other), attrs, [a, b])
    if number_cls._arity == 2:
        return apply(number_cls, (input, other), attrs, [a, b])
    return apply(number_cls, (input,), (b, *attrs), [a])


# torch's overloads, as its message for arguments that fit none lists them (without its per-overload details)
_SIGNATURES = {
    "fmod": ("Tensor input, Tensor other, *, Tensor out = None", "Tensor input, Number other, *, Tensor out = None"),
    "remainder": ("Tensor input, Tensor other, *, Tensor out = None", "Number self, Tensor other",
                  "Tensor input, Number other, *, Tensor out = None"),
    "floor_divide": ("Tensor input, Tensor other, *, Tensor out = None", "Tensor input, Number other"),
    "div": ("Tensor input, Tensor other, *, Tensor out = None",
            "Tensor input, Tensor other, *, str rounding_mode, Tensor out = None",
            "Tensor input, Number other, *, str rounding_mode"),
}


def _check_division(kernel, input, other, xp, b):
    """No bool kernel, and no integer division by zero (``b``: the divisor's array or number)."""
    category = _dt.DTYPES[_dt.result_type((input, other))].category
    if category == 2:
        return
    if category == 0:
        raise KernelTypeError(f'"{kernel}" not implemented for \'Bool\'')
    if (b == 0) if not hasattr(b, "shape") else bool(xp.any(b == 0)):
        raise RuntimeTypeError("ZeroDivisionError")


@op(FmodBackward0, FmodBackward1, inplace=True)
def fmod(input, other):
    """The remainder of the division truncated toward zero (C's fmod): the dividend's sign."""
    return _divide("fmod", "fmod_cpu", input, other, FmodBackward1, FmodBackward0)


@op(RemainderBackward0, RemainderBackward1, operator="a % b", reflected=lambda a, b: remainder(b, a),
    inplace="a %= b")
def remainder(input, other):
    """Python's modulus, ``input % other``: the remainder of the floor division, the divisor's sign."""
    return _divide("remainder", "remainder_cpu", input, other, RemainderBackward1, RemainderBackward0,
                   _REMAINDER_OF_NUMBER)


# torch records a NotImplemented node (its output requires grad) whose backward fails: no gradient
@op(operator="a // b", reflected=lambda a, b: floor_divide(b, a), inplace="a //= b", differentiable=False)
def floor_divide(input, other):
    """``input // other``: the quotient rounded down (torch has no gradient for it)."""
    return _divide("floor_divide", "div_floor_cpu", input, other, _FLOOR_DIVIDE, _FLOOR_DIVIDE_BY_NUMBER,
                   _FLOOR_DIVIDE_NUMBER)


WhereBackward0 = define_node(
    "WhereBackward0", guarded=True, inputs=("self", "other"), attrs=("condition",), broadcasts=True,
    forward=lambda xp, a, b, cond: xp.where(cond, a, b),
    self="F.where(condition, grad, 0.0)", other="F.where(condition, 0.0, grad)")


MaskedFillBackward0 = define_node(
    "MaskedFillBackward0", guarded=True, attrs=("mask", "value"), self="F.masked_fill(grad, mask, 0)", broadcasts=True,
    forward=lambda xp, x, mask, value: xp.where(mask, xp.asarray(value, dtype=x.dtype), x))
MaskedFillBackward1 = define_node(
    "MaskedFillBackward1", guarded=True, inputs=("self", "value"), attrs=("mask",), self="F.masked_fill(grad, mask, 0)",
    broadcasts=True,
    value="F.sum(F.where(mask, grad, 0.0))",
    forward=lambda xp, x, value, mask: xp.where(mask, xp.astype(value, x.dtype), x))


@op(MaskedFillBackward0, MaskedFillBackward1, inplace=True)
def masked_fill(input, mask, value):
    """``value`` where the bool ``mask`` (broadcast to the input's shape) is true; a 0-d tensor
    value gets the sum of the gradient there (MaskedFillBackward1). The node keeps the mask, as
    torch saves it (``guard_attrs``)."""
    return guard_attrs(_masked_fill(input, mask, value), mask)


def _masked_fill(input, mask, value):
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
    # gradients are summed back to them; the node keeps the condition, as torch saves it
    return guard_attrs(apply(WhereBackward0, (input, other), (condition._data,), _operands(input, other, "where")),
                       condition)


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


def _predicate(name, forward, doc):
    """One declaration for a test of each element (``isnan``): a bool tensor, never differentiable."""
    def predicate(input):
        if input.__class__ is not Tensor:
            raise GradTypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        return Tensor._make(forward(input._backend.xp, input._data), input._backend)
    predicate.__name__ = predicate.__qualname__ = name
    predicate.__doc__ = doc
    return op(differentiable=False, category="comparison")(predicate)


# integers and bools are never NaN nor infinite: x != x is all False for them (what isnan is for floats)
isnan = _predicate("isnan", lambda xp, x: xp.isnan(x) if _is_kind(xp, x, "f") else x != x,
                   "True where an element is NaN.")
isinf = _predicate("isinf", lambda xp, x: xp.isinf(x) if _is_kind(xp, x, "f") else x != x,
                   "True where an element is infinite, of either sign.")
isfinite = _predicate("isfinite", lambda xp, x: xp.isfinite(x) if _is_kind(xp, x, "f") else x == x,
                      "True where an element is neither infinite nor NaN.")
logical_not = _predicate("logical_not", lambda xp, x: xp.logical_not(x) if _is_kind(xp, x, "b") else x == 0,
                         "Elementwise logical not: True where an element is zero (or False).")


# -- in-place updates -----------------------------------------------------------------------------------

ZeroBackward0 = define_node("ZeroBackward0", forward=lambda xp, x: xp.zeros_like(x), self="F.zeros_like(grad)")


@op(ZeroBackward0, category="in-place")
def zero_(input):
    """Fill with zeros in place; on a non-leaf its gradient is zero from here on (ZeroBackward0)."""
    record = input._requires_grad and _GRAD.enabled
    data = None if record else unrecorded_array(input)
    if data is not None:  # nothing to record, not a view (an optimizer's grad.zero_())
        data.fill(0)
        input._bump()
        return input
    input._check_inplace()
    if record:
        old = Tensor._make(input._data, input._backend, input.grad_fn)  # the tensor as it was: its edge
    writable(input)[...] = 0
    input._bump()
    if record:
        rebase(input, apply(ZeroBackward0, (old,)).grad_fn)
    return input


# -- ternary: lerp, addcmul, addcdiv (three tensors broadcast together) ---------------------------------

# torch's TypeMeta names, which its dtype checks print ("expected dtype float ... got dtype double")
_TYPE_META = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
              "int32": "int", "bool": "bool"}


def _ternary(name, a, b, c, arg_names) -> bool:
    """Tensor arguments ``a``, ``b`` and ``c`` (``_PAIR``: two) whose shapes broadcast (torch's pairwise
    message, the shapes folded in argument order as TensorIterator does), a result larger than every
    operand checked against the limits. Returns whether they are NumPy arrays of one floating dtype
    (the usual call: nothing to promote)."""
    if a.__class__ is not Tensor or b.__class__ is not Tensor or c is not _PAIR and c.__class__ is not Tensor:
        for t, arg in zip((a, b, c), arg_names):
            if t is not _PAIR and t.__class__ is not Tensor:
                raise GradTypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(t).__name__}")
    da, db = a._data, b._data
    out = sa = da.shape
    sb = db.shape
    if sb != out:
        out = _broadcast_pair(out, sb)
    dtype = da.dtype
    same = da.__class__ is _ndarray and db.__class__ is _ndarray and dtype.kind == "f" and db.dtype == dtype
    if c is _PAIR:
        if out != sa and out != sb:
            check_numel(out)
        return same
    dc = c._data
    sc = dc.shape
    if sc != out:
        out = _broadcast_pair(out, sc)
    if out != sa and out != sb and out != sc:
        check_numel(out)
    return same and dc.__class__ is _ndarray and dc.dtype == dtype


_PAIR = object()  # _ternary's third argument for two tensors (lerp with a number weight)


def _lerp_number(xp, a, b, weight):
    """torch's lerp kernel: from ``a`` for a small weight, from ``b`` otherwise (each exact at its
    end), the weight in the tensors' dtype."""
    w = xp.asarray(weight, dtype=a.dtype)
    d = b - a
    return a + w * d if -0.5 < weight < 0.5 else b - d * (1 - w)


def _lerp_tensor(xp, a, b, w):
    """``_lerp_number`` with a weight per element: each element from its own end. A few NumPy
    weights all on one side (the usual: one weight, or a row of them) take that side's formula
    alone, the same values as the ``where`` of both."""
    d = b - a
    if w.__class__ is _ndarray and 0 < w.size <= 16:
        weights = w.ravel().tolist()  # (a NaN weight gives NaN from either formula)
        if -0.5 < min(weights) and max(weights) < 0.5:
            return a + w * d
        for v in weights:
            if -0.5 < v < 0.5:
                break
        else:
            one = _scalars(w, _ONE)  # 1 as a 0-d array of w's dtype: the same bits, less conversion
            return b - d * ((1 if one is None else one[0]) - w)
    return xp.where(xp.abs(w) < 0.5, a + w * d, b - d * (1 - w))


_ONE = (1,)


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
    if _ternary("lerp", input, end, _PAIR if number else weight, ("input", "end", "weight")):
        if number:  # one float dtype: nothing to check or cast
            return apply2(LerpBackward0, input, end, input._data, end._data, (weight,))
        return apply3(LerpBackward1, input, end, weight, input._data, end._data, weight._data)
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
    if _ternary(name, input, tensor1, tensor2, ("input", "tensor1", "tensor2")):
        # one float dtype: nothing to promote
        return apply3(cls, input, tensor1, tensor2, input._data, tensor1._data, tensor2._data, (value,))
    tensors = (input, tensor1, tensor2)
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


# -- torch's other spellings -------------------------------------------------------------------

for _name, _target in (("arcsin", asin), ("arccos", acos), ("arctan", atan), ("arctan2", atan2), ("negative", neg),
                       ("absolute", abs), ("fix", trunc), ("multiply", mul), ("subtract", sub), ("divide", div),
                       ("true_divide", div)):
    _alias(_name, _target, inplace=True)
for _name, _target in (("arcsinh", asinh), ("arccosh", acosh), ("arctanh", atanh)):
    _alias(_name, _target)
    _alias(_name + "_", FUNCTIONS[_target.__name__ + "_"].fn)
for _name, _target in (("greater", gt), ("greater_equal", ge), ("less", lt), ("less_equal", le), ("not_equal", ne)):
    _alias(_name, _target)
del _name, _target
