"""The ``F`` namespaces that derivative formulas are evaluated against.

``ArrayMath`` works on raw arrays of one backend (array-API names only, so NumPy,
CuPy and ``array_api_strict`` share it) and is used for ordinary backward.
``TensorMath`` has the same functions built from gradcli's differentiable ops and
is used under ``create_graph=True``, so a gradient has a graph of its own.
Keep the two in step: every formula in the op table may call any name here.
"""

from __future__ import annotations

import math as _math

from ..autograd.engine import use_formula_math
from ..backend import NUMPY as _NUMPY, array_mean, array_sum, rows as _rows
from ..backend.cascade import SUM_FROM, torch_sum
from ..backend.numpy_fast import SUM_ACROSS_FROM, accumulate as _accumulate, along_axis_flat as _along_axis_flat, \
    along_rows
from ..backend.rows import by_rows
from ..limits import check_flops
from .pointwise import _is_kind, _sigmoid, divide_rounded as _divide_rounded, xlogy_forward as _xlogy

_ndarray = type(_NUMPY.xp.empty(0))  # NumPy arrays: where ArrayMath.mul_ may work in place
_ADD_UFUNC, _MULTIPLY = _NUMPY.xp.add, _NUMPY.xp.multiply
_ADD_REDUCE = _NUMPY.xp.add.reduce
_NUMPY_SCALARS = frozenset(type(_NUMPY.xp.dtype(n).type(0)) for n in ("float16", "float32", "float64"))
# Up to this many elements ``F.expand`` (the backward of sum and mean) copies instead of making a
# broadcast view: the same values, 7x cheaper on small tensors, and never more than 32 KiB.
_SMALL_EXPAND = 4096


_ADD = _NUMPY.xp.add.reduce
_subtract = _NUMPY.xp.subtract
_exp = _NUMPY.xp.exp
_where = _NUMPY.xp.where
_bitwise_and = _NUMPY.xp.bitwise_and
_ascontiguousarray = _NUMPY.xp.ascontiguousarray
_int8 = _NUMPY.xp.int8
_empty_like = _NUMPY.xp.empty_like
_INTS = {2: _NUMPY.xp.int16, 4: _NUMPY.xp.int32, 8: _NUMPY.xp.int64}  # a float's bits, by its size
# From this many elements threshold_backward zeroes by bits (_zero_where) rather than np.where.
_ZERO_BY_BITS = 4096
# From this many operations a backward matrix product copies a broadcast operand itself (ArrayMath.mm).
_BLAS_COPY_FLOPS = 1 << 20


def _fresh_pair(grad, y):
    """Two NumPy arrays (not 0-d) of one shape and dtype: a formula may then build its result in
    a buffer of its own with in-place ufuncs, the same operations as its general form."""
    return grad.__class__ is _ndarray and y.__class__ is _ndarray and grad.ndim and grad.shape == y.shape \
        and grad.dtype == y.dtype


def _shape(x):
    return tuple(x.shape)


def _sum_to_axes(shape, target):
    """The dims to sum to reduce ``shape`` to broadcastable ``target``, and whether to keep them
    (kept per pair of shapes: every backward of a broadcast op asks for the same few)."""
    key = (shape, target)
    found = _SUM_TO_AXES.get(key)
    if found is None:
        if len(_SUM_TO_AXES) >= 4096:
            _SUM_TO_AXES.clear()
        found = _SUM_TO_AXES[key] = _axes_of(shape, target)
    return found


_SUM_TO_AXES: dict = {}


def _axes_of(shape, target):
    """torch's sum_to: one sum over the leading dims and the dims ``target`` has as 1, kept where
    there are no leading dims (the result is then ``target``'s shape), else reshaped after."""
    lead = len(shape) - len(target)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(target) if s == 1 and shape[lead + i] != 1)
    return dims, not lead


def cumulative(xp, x, dim, product=False):
    """Running sum (``product``: product) along ``dim``, as torch's CPU kernel runs it: float32 and
    float16 accumulate in float64 and float32 (its acc_type), each value rounded back to the input's
    dtype; a 0-d array is its own cumulative sum."""
    if x.ndim == 0:
        return xp.asarray(x, copy=True)
    if x.__class__ is _ndarray:  # the ufunc's accumulate, which NumPy's cumulative functions end in
        out = _accumulate(_MULTIPLY if product else _ADD_UFUNC, x, dim)
    else:
        fn = getattr(xp, "cumulative_prod" if product else "cumulative_sum", None) or (xp.cumprod if product else xp.cumsum)
        half = getattr(xp, "float16", None)  # array-api-strict has none
        wider = xp.float64 if x.dtype == xp.float32 else xp.float32 if half is not None and x.dtype == half else None
        out = fn(x, axis=dim) if wider is None else xp.astype(fn(x, axis=dim, dtype=wider), x.dtype)
    if not product and _is_kind(xp, out, "f"):
        out += 0.0  # torch's sums start from +0.0: a running sum of -0.0 is +0.0 (out is a new array)
    return out


def _zero_where(cond, a, out=None):
    """``np.where(cond, 0, a)`` for a float array ``a`` and a new bool array ``cond`` (overwritten),
    by a's bits: ANDed with all ones where ``cond`` is False, with zeros (+0.0) where it is True;
    into ``out`` (a itself, or None: a new array, which owns its memory as np.where's would, so that
    a leaf's .grad can take it without a copy). np.where picks element by element with a branch,
    which a relu's mask mispredicts half the time: 7x slower on 2 million elements."""
    mask = cond.view(_int8)  # 1 where a is zeroed, 0 where it is kept
    mask -= 1  # 0 where zeroed, -1 (every bit set, as wide as a's once sign-extended) where kept
    if out is None:
        out = _empty_like(a)
    ints = _INTS[a.dtype.itemsize]
    _bitwise_and(a.view(ints), mask, out.view(ints))
    return out


class ArrayMath:
    """Formula functions on plain arrays of one backend."""

    differentiable = False
    # The gradient a one-input node declared ``reuses_grad`` runs its formula on, when nothing else
    # holds it (a large NumPy array, set around the formula by node._reusing): the formula
    # may write its result into it.
    spare = None

    def __init__(self, backend):
        self.backend = backend
        self.xp = backend.xp
        from . import nn_functional  # made at the first backward: nn_functional imports this module
        self._nn = nn_functional

    # elementwise
    def exp(self, x): return self.xp.exp(x)
    def log(self, x): return self.xp.log(x)
    def sin(self, x): return self.xp.sin(x)
    def cos(self, x): return self.xp.cos(x)
    def sign(self, x): return self.xp.where(x == x, self.xp.sign(x), self.xp.zeros_like(x))  # sign(nan) = 0, as torch
    sgn = sign
    def tanh_backward(self, grad, y): return grad * (1 - y * y)
    def sigmoid_backward(self, grad, y):
        if _fresh_pair(grad, y):  # grad * (1 - y) * y, in one new array
            out = 1 - y
            out *= grad
            out *= y
            return out
        return grad * (1 - y) * y
    def threshold_backward(self, grad, x, t):
        if grad.__class__ is _ndarray:  # a Python 0 is cast to grad's dtype (NumPy's weak scalars)
            if grad.size >= _ZERO_BY_BITS and x.__class__ is _ndarray and x.shape == grad.shape \
                    and grad.dtype.kind == "f":
                return _zero_where(x <= t, grad, grad if grad is self.spare else None)
            return _where(x <= t, 0, grad)
        return self.xp.where(x <= t, self.xp.zeros_like(grad), grad)

    def softmax_backward(self, grad, y, dim):
        if _fresh_pair(grad, y):  # the same operations, in one new array
            if grad.size >= _rows.MIN_ELEMENTS:  # by blocks of rows (into grad, if spare), each as below
                out = by_rows(self.softmax_backward, dim, y.shape, grad, y, out=grad if grad is self.spare else None)
                if out is not None:
                    return out
            out = grad * y
            total = _ADD(out, dim, None, None, True) if out.size < SUM_ACROSS_FROM \
                else along_rows(_ADD_UFUNC, out, dim, True)
            _subtract(grad, total, out)
            out *= y
            return out
        return y * (grad - array_sum(self.xp, grad * y, dim, True))

    def log_softmax_backward(self, grad, y, dim):
        if _fresh_pair(grad, y):
            if grad.size >= _rows.MIN_ELEMENTS:
                out = by_rows(self.log_softmax_backward, dim, y.shape, grad, y,
                              out=grad if grad is self.spare else None)
                if out is not None:
                    return out
            out = _exp(y)
            out *= _ADD(grad, dim, None, None, True) if grad.size < SUM_ACROSS_FROM \
                else along_rows(_ADD_UFUNC, grad, dim, True)
            return _subtract(grad, out, out)
        return grad - self.xp.exp(y) * array_sum(self.xp, grad, dim, True)
    def abs(self, x): return self.xp.abs(x)
    def sigmoid(self, x): return _sigmoid(self.xp, x)
    def tanh(self, x): return self.xp.tanh(x)
    # torch's fused activation backwards (nn_functional's array forms)
    def gelu_backward(self, grad, x, approximate): return self._nn.gelu_grad(self.xp, grad, x, approximate)
    def leaky_relu_backward(self, grad, x, slope, is_result): return self._nn.leaky_relu_grad(self.xp, grad, x, slope)
    def elu_backward(self, grad, x, alpha, is_result): return self._nn.elu_grad(self.xp, grad, x, alpha, is_result)
    def softplus_backward(self, grad, x, beta, threshold): return self._nn.softplus_grad(self.xp, grad, x, beta, threshold)
    def hardtanh_backward(self, grad, x, lo, hi): return self._nn.hardtanh_grad(self.xp, grad, x, lo, hi)
    def log_sigmoid_backward(self, grad, x): return self._nn.log_sigmoid_grad(self.xp, grad, x)
    def sqrt(self, x): return self.xp.sqrt(x)
    def rsqrt(self, x): return 1 / self.xp.sqrt(x)
    def reciprocal(self, x): return 1 / x
    def sinh(self, x): return self.xp.sinh(x)
    def cosh(self, x): return self.xp.cosh(x)
    def div_rounded(self, a, b, mode): return _divide_rounded(self.xp, a, b, mode)
    def xlogy(self, a, b): return _xlogy(self.xp, a, b)
    def isnan(self, x): return self.xp.isnan(x)
    def isfinite(self, x): return self.xp.isfinite(x)
    def logical_or(self, a, b): return self.xp.logical_or(a, b)
    def logical_not(self, a): return self.xp.logical_not(a)

    def where(self, cond, a, b):
        xp = self.xp
        dtype = a.dtype if hasattr(a, "dtype") else b.dtype
        if not hasattr(a, "dtype"):
            a = xp.asarray(a, dtype=dtype)
        if not hasattr(b, "dtype"):
            b = xp.asarray(b, dtype=dtype)
        return xp.where(cond, a, b)

    def zeros_like(self, x): return self.xp.zeros_like(x)

    def mul_(self, fresh, other):
        """``fresh * other``, written into ``fresh`` when that gives the same array: ``fresh`` must
        be an array the formula itself just made (``F.mul_(F.cos(self), grad)``), so the
        product needs no second buffer. Same values as ``fresh * other`` (a commutative product)."""
        if fresh.__class__ is _ndarray and (
                other.__class__ in (int, float) or
                other.__class__ is _ndarray and other.dtype == fresh.dtype and other.shape == fresh.shape):
            fresh *= other
            return fresh
        return fresh * other

    def logical_and(self, a, b): return self.xp.logical_and(a, b)
    def mask(self, cond, like): return self.xp.astype(cond, like.dtype)
    def count_zeros(self, x): return int(self.xp.sum(self.xp.astype(x == 0, self.xp.int64)))

    def narrow(self, x, dim, start, length):
        return x[(slice(None),) * dim + (slice(start, start + length),)]

    def cat(self, arrays, dim): return self.xp.concat(arrays, axis=dim)
    def flip(self, x, dims): return self.xp.flip(x, axis=dims)  # dims: one dim or a tuple (a view)
    def cumsum(self, x, dim): return cumulative(self.xp, x, dim)
    def cumprod(self, x, dim): return cumulative(self.xp, x, dim, True)
    def roll(self, x, shifts, dims):
        """``x`` rolled by ``shifts`` along ``dims`` (tuples); no dims: the flattened array by one shift."""
        return self.xp.roll(x, shifts, axis=dims) if dims else self.xp.roll(x, shifts[0])
    def tril(self, x, diagonal): return self.xp.tril(x, k=diagonal)
    def triu(self, x, diagonal): return self.xp.triu(x, k=diagonal)

    def filled(self, number, like):
        """``number`` where torch's C++ formulas write ``number - t`` or ``number / t`` (a tensor of
        ``like``'s shape filled with it): on arrays the number itself, which broadcasts the same."""
        return number

    def select_copy_(self, out, dim, index, value):
        """``out.select(dim, index).copy_(value)``: ``value`` written into ``out``, returned."""
        out[(slice(None),) * dim + (index,)] = value
        return out

    # shapes
    # (a NumPy array's own methods: what np.reshape and np.squeeze call for it, without their wrappers)
    def reshape(self, x, shape):
        return x.reshape(shape) if x.__class__ is _ndarray else self.xp.reshape(x, tuple(shape))

    def squeeze(self, x, dim):
        return x.squeeze(axis=dim) if x.__class__ is _ndarray else self.xp.squeeze(x, axis=dim)

    def masked_fill(self, x, mask, value):
        return self.xp.where(mask, self.xp.asarray(value, dtype=x.dtype), x)
    def expand(self, x, shape):
        shape = tuple(shape)
        if x.__class__ is _ndarray or x.__class__ in _NUMPY_SCALARS:
            n = 1
            for d in shape:
                n *= d
            if n <= _SMALL_EXPAND:  # a small copy: 0.3 us, where np.broadcast_to's view costs 2 us
                out = _NUMPY.xp.empty(shape, x.dtype)
                out[...] = x
                return out
        return self.xp.broadcast_to(x, shape)
    def transpose(self, x, d0, d1):
        perm = list(range(x.ndim))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return self.xp.permute_dims(x, tuple(perm))
    def permute(self, x, dims): return self.xp.permute_dims(x, tuple(dims))
    def t(self, x):
        if x.ndim < 2:
            return x
        return x.T if x.__class__ is _ndarray else self.xp.permute_dims(x, (1, 0))  # (a matrix's .T: the same view)
    def mT(self, x): return self.transpose(x, -2 % x.ndim, -1 % x.ndim)

    def sum_to(self, x, shape):
        """``x`` summed back to the broadcastable ``shape`` (a broadcast input's gradient), as
        torch's sum_to: one sum over every dim to reduce (on a NumPy array, in torch's order:
        ``torch_sum``), then a reshape where the sum did not already give ``shape``."""
        if shape.__class__ is not tuple:
            shape = tuple(shape)
        xs = x.shape
        if xs.__class__ is not tuple:
            xs = tuple(xs)
        if xs == shape:
            return x
        found = _SUM_TO_AXES.get((xs, shape))
        dims, keep = _sum_to_axes(xs, shape) if found is None else found
        if x.__class__ is _ndarray:
            if dims:
                x = _ADD_REDUCE(x, dims, None, None, keep) if x.size < SUM_FROM else torch_sum(x, dims, keep)
            return x if x.__class__ is _ndarray and x.shape == shape else x.reshape(shape)
        if dims:
            x = array_sum(self.xp, x, dims, keep)
        return self.xp.reshape(x, shape)

    def sum(self, x, dim=None, keepdim=False):
        return array_sum(self.xp, x, dim, keepdim)

    def prod(self, x, dim=None, keepdim=False):
        return self.xp.prod(x, axis=dim, keepdims=keepdim)

    def mean(self, x, dim=None, keepdim=False): return array_mean(self.xp, x, dim, keepdim)

    def unsqueeze_dims(self, x, dims, ndim):
        """Re-insert reduced ``dims`` (sorted, non-negative) so ``x`` broadcasts against the input."""
        if x.__class__ is _ndarray and len(dims) == 1:  # one dim: a reshape, no list to build
            d = dims[0]
            shape = x.shape
            return x.reshape(shape[:d] + (1,) + shape[d:])
        shape = list(_shape(x))
        for d in sorted(dims):
            shape.insert(d, 1)
        return self.xp.reshape(x, tuple(shape))

    # linear algebra
    # The backward's products are estimated against --timeout like the forward's (one C call cannot
    # be interrupted): the gradient of ``a @ b`` is two more products of the same size.
    def mm(self, a, b):
        flops = 2 * a.shape[0] * a.shape[1] * b.shape[-1]
        check_flops(flops, "this matrix product (in backward)")
        if flops >= _BLAS_COPY_FLOPS and a.__class__ is _ndarray:
            # a broadcast (mean's or sum's gradient) has a zero stride, which BLAS cannot take: NumPy
            # copies it then, but more slowly than this (6 ms of a 40 ms product of 2048 x 1024)
            if 0 in a.strides:
                a = _ascontiguousarray(a)
            if 0 in b.strides:
                b = _ascontiguousarray(b)
        return self.xp.matmul(a, b)
    def mv(self, a, v): return self.xp.matmul(a, v)
    def bmm(self, a, b):
        check_flops(2 * max(a.shape[0], b.shape[0]) * a.shape[1] * a.shape[2] * b.shape[2],
                    "this batched matrix product (in backward)")
        return self.xp.matmul(a, b)
    def outer(self, a, b):
        if a.__class__ is _ndarray and b.__class__ is _ndarray:
            return a.reshape(-1, 1) * b  # the same product: b broadcasts as the row it was reshaped to
        return self.xp.reshape(a, (-1, 1)) * self.xp.reshape(b, (1, -1))

    # indexing
    def take(self, x, key): return self.backend.gather(x, key)
    def zeros(self, shape, like): return self.xp.zeros(tuple(shape), dtype=like.dtype)
    def gather(self, x, dim, index): return _indexing().gather_array(self.xp, x, dim, index)
    def scatter(self, x, dim, index, src): return _indexing().scatter_array(self.xp, x, dim, index, src)
    def scatter_add(self, x, dim, index, src): return _indexing().scatter_array(self.xp, x, dim, index, src, True)
    def index_select(self, x, dim, index): return _indexing().index_select_array(self.xp, x, dim, index)
    def index_add(self, x, dim, index, src): return _indexing().index_add_array(self.xp, x, dim, index, src)

    def value_selecting(self, grad, dim, indices, sizes, keepdim):
        """torch's value_selecting_reduction_backward: zeros of the input's ``sizes`` with ``grad``
        scattered at ``indices`` along ``dim`` (sort, topk, kthvalue, median with a dim)."""
        if not sizes:
            return self.xp.reshape(grad, ())
        if grad.__class__ is _ndarray and indices.__class__ is _ndarray:
            # NumPy: the zeros themselves written at the flat positions (no dims put back, no copy)
            sizes = tuple(sizes)
            out = self.xp.zeros(sizes, dtype=grad.dtype)
            out.put(_along_axis_flat(sizes, dim, indices, keepdim), grad)
            return out
        if not keepdim:
            grad, indices = self.xp.expand_dims(grad, axis=dim), self.xp.expand_dims(indices, axis=dim)
        return self.scatter(self.zeros(sizes, grad), dim, indices, grad)

    def embed(self, grad, shape, key, accumulate: bool, select: bool = False):
        """Zeros of ``shape`` with ``grad`` placed at ``key`` (the backward of indexing)."""
        out = self.xp.zeros(tuple(shape), dtype=grad.dtype)
        if accumulate:
            result = self.backend.scatter_add(out, key, grad)
            return out if result is None else result
        if self.backend.native:
            out[key] = grad
            return out
        return self.backend.put(out, key, grad)  # (an array-API namespace: no advanced-index assignment)

    def cat_slices(self, grad, dim, sizes):
        lead = (slice(None),) * dim
        out, start = [], 0
        for size in sizes:  # (the trailing ... : the array API indexes every dim or says which it leaves)
            out.append(grad[lead + (slice(start, start + size), ...)])
            start += size
        return out

    def constant(self, array): return array

    def cast(self, x, like):
        return x if x.dtype == like.dtype else self.xp.astype(x, like.dtype)


class TensorMath:
    """The same functions as ``ArrayMath``, on tensors, recorded in the graph."""

    differentiable = True

    def __init__(self, backend):
        self.backend = backend
        from .. import ops
        self.ops = ops

    def _t(self, x):
        from ..autograd.tensor import Tensor
        return x if isinstance(x, Tensor) else Tensor._make(self.backend.xp.asarray(x), self.backend)

    def exp(self, x): return self.ops.exp(x)
    def log(self, x): return self.ops.log(self._t(x))
    def sin(self, x): return self.ops.sin(x)
    def cos(self, x): return self.ops.cos(x)
    def sign(self, x): return self.ops.sign(x)
    def sgn(self, x): return self.ops.sgn(x)
    def tanh_backward(self, grad, y): return self.ops.tanh_backward(self._t(grad), y)
    def sigmoid_backward(self, grad, y): return self.ops.sigmoid_backward(self._t(grad), y)
    def threshold_backward(self, grad, x, t): return self.ops.threshold_backward(self._t(grad), self._t(x), t)
    def softmax_backward(self, grad, y, dim): return self.ops.softmax_backward(self._t(grad), y, dim)
    def log_softmax_backward(self, grad, y, dim): return self.ops.log_softmax_backward(self._t(grad), y, dim)
    def abs(self, x): return self.ops.abs(x)
    def sigmoid(self, x): return self.ops.sigmoid(x)
    def tanh(self, x): return self.ops.tanh(x)
    def gelu_backward(self, grad, x, approximate): return self.ops.gelu_backward(self._t(grad), x, approximate)
    def leaky_relu_backward(self, grad, x, slope, is_result):
        return self.ops.leaky_relu_backward(self._t(grad), x, slope, is_result)
    def elu_backward(self, grad, x, alpha, is_result): return self.ops.elu_backward(self._t(grad), x, alpha, is_result)
    def softplus_backward(self, grad, x, beta, threshold):
        return self.ops.softplus_backward(self._t(grad), x, beta, threshold)
    def hardtanh_backward(self, grad, x, lo, hi): return self.ops.hardtanh_backward(self._t(grad), x, lo, hi)
    def log_sigmoid_backward(self, grad, x): return self.ops.log_sigmoid_backward(self._t(grad), x)
    def sqrt(self, x): return self.ops.sqrt(x)
    def rsqrt(self, x): return self.ops.rsqrt(x)
    def reciprocal(self, x): return self.ops.reciprocal(x)
    def sinh(self, x): return self.ops.sinh(x)
    def cosh(self, x): return self.ops.cosh(x)
    def div_rounded(self, a, b, mode): return self.ops.div(a, b, rounding_mode=mode)  # DivBackward2, as torch
    def xlogy(self, a, b): return self.ops.xlogy(self._t(a), b)
    def isnan(self, x): return self.ops.isnan(self._t(x))
    def isfinite(self, x): return self.ops.isfinite(self._t(x))
    def logical_or(self, a, b): return self.ops.logical_or(self._t(a), self._t(b))
    def logical_not(self, a): return self.ops.logical_not(self._t(a))
    def where(self, cond, a, b): return self.ops.where(self._t(cond), a, b)
    def zeros_like(self, x): return self.ops.zeros_like(self._t(x))
    def mul_(self, fresh, other): return other * fresh  # torch's operand order: grad * cos(self) is Mul(grad, cos)
    def logical_and(self, a, b): return self.ops.logical_and(self._t(a), self._t(b))
    def mask(self, cond, like): return self._t(cond).to(like.dtype)
    def count_zeros(self, x): return math_for(False, self.backend).count_zeros(self._t(x)._data)
    def narrow(self, x, dim, start, length): return self.ops.narrow(x, dim, start, length)
    def cat(self, tensors, dim): return self.ops.cat([self._t(t) for t in tensors], dim)
    def flip(self, x, dims): return self.ops.flip(x, dims if isinstance(dims, tuple) else (dims,))
    def cumsum(self, x, dim): return self.ops.cumsum(x, dim)
    def cumprod(self, x, dim): return self.ops.cumprod(x, dim)
    def roll(self, x, shifts, dims): return self.ops.roll(x, shifts, dims or None)
    def tril(self, x, diagonal): return self.ops.tril(self._t(x), diagonal)
    def triu(self, x, diagonal): return self.ops.triu(self._t(x), diagonal)

    def filled(self, number, like):
        """torch's ``number - t`` in C++ (``empty_like(t).fill_(number).sub_(t)``): a tensor that
        records no edge, so the subtraction or division is SubBackward0/DivBackward0 with a None."""
        return self.ops.full_like(like, number)

    def select_copy_(self, out, dim, index, value):
        """torch's ``grad_input.select(dim, k).copy_(value)``: CopySlices on ``out``."""
        self.ops.select(out, dim, index).copy_(value)
        return out

    def reshape(self, x, shape): return self.ops.reshape(x, tuple(shape))
    def squeeze(self, x, dim): return self.ops.squeeze(x, dim)
    def masked_fill(self, x, mask, value): return self.ops.masked_fill(self._t(x), self._t(mask), value)
    def expand(self, x, shape): return self.ops.expand(x, tuple(shape))
    def transpose(self, x, d0, d1): return self.ops.transpose(x, d0, d1)
    def permute(self, x, dims): return self.ops.permute(x, tuple(dims))
    def t(self, x): return self.ops.t(x)
    def mT(self, x): return self.ops.transpose(x, -2, -1)

    def sum_to(self, x, shape):
        shape = tuple(shape)
        if _shape(x) == shape:
            return x
        if shape == ():
            return self.ops.sum(x)  # torch's sum_to(grad, []): one SumBackward0
        # torch's at::sum_to: one sum over every reduced dim (keepdim), a view if leading dims went
        reduce, no_leading = _sum_to_axes(_shape(x), shape)
        if reduce:
            x = self.ops.sum(x, reduce, keepdim=True)
        return x if no_leading else self.ops.reshape(x, shape)

    def sum(self, x, dim=None, keepdim=False):
        return self.ops.sum(x) if dim is None and not keepdim else self.ops.sum(x, dim, keepdim=keepdim)

    def prod(self, x, dim=None, keepdim=False):
        if dim is None:
            return self.ops.prod(x)
        out = x
        for d in sorted(dim, reverse=True):
            out = self.ops.prod(out, d, keepdim=True)
        if not keepdim:
            out = self.ops.reshape(out, tuple(s for i, s in enumerate(out.shape) if i not in dim))
        return out

    def mean(self, x, dim=None, keepdim=False):
        return self.ops.mean(x) if dim is None and not keepdim else self.ops.mean(x, dim, keepdim=keepdim)

    def unsqueeze_dims(self, x, dims, ndim):
        """torch's unsqueeze_multiple: one unsqueeze per reduced dim (UnsqueezeBackward0 each)."""
        for d in sorted(dims):
            x = self.ops.unsqueeze(x, d)
        return x

    def mm(self, a, b): return self.ops.mm(a, b)
    def mv(self, a, v): return self.ops.mv(a, v)
    def bmm(self, a, b): return self.ops.bmm(a, b)
    def outer(self, a, b): return self.ops.outer(a, b)

    def take(self, x, key): return self.ops.index_with_key(x, key)
    def zeros(self, shape, like): return self._t(self.backend.xp.zeros(tuple(shape), dtype=like._data.dtype))
    def gather(self, x, dim, index): return self.ops.gather(x, dim, self._t(index))
    def scatter(self, x, dim, index, src): return self.ops.scatter(x, dim, self._t(index), src)
    def scatter_add(self, x, dim, index, src): return self.ops.scatter_add(x, dim, self._t(index), src)
    def index_select(self, x, dim, index): return self.ops.index_select(x, dim, self._t(index))
    def index_add(self, x, dim, index, src): return self.ops.index_add(x, dim, self._t(index), src)

    def value_selecting(self, grad, dim, indices, sizes, keepdim):
        """torch's zeros(sizes).scatter_(dim, indices, grad): ScatterBackward0 (after grad's
        UnsqueezeBackward0 when the dim was not kept)."""
        if not sizes:
            return self.ops.reshape(grad, ())
        if not keepdim:
            grad, indices = self.ops.unsqueeze(grad, dim), self.backend.xp.expand_dims(indices, axis=dim)
        return self.scatter(self.zeros(sizes, grad), dim, indices, grad)

    def embed(self, grad, shape, key, accumulate: bool, select: bool = False):
        return self.ops.embed(grad, tuple(shape), key, accumulate, select)

    def cat_slices(self, grad, dim, sizes):
        out, start = [], 0
        for size in sizes:
            out.append(self.ops.narrow(grad, dim, start, size))
            start += size
        return out

    def constant(self, array): return self._t(array)

    def copy_into_view(self, grad, chain, inside):
        """torch's CopySlices backward under create_graph: ``grad`` copied, then ``inside`` copied
        into the region the view ``chain`` describes (so the gradient's graph has CopySlices)."""
        from .shape import view_of
        result = self.ops.copy_(self.ops.zeros_like(self._t(grad)), grad)
        view = result
        for cls, _, attrs in chain:
            view = view_of(cls, view, attrs)
        view.copy_(inside)
        return result

    def cast(self, x, like):
        return x if x.dtype == like.dtype else x.to(like.dtype)


def _indexing():
    """ops/indexing, where the array forms of gather and scatter live with their ops: imported on
    first use (it imports this module), then kept (an import statement costs ~0.4 us a call)."""
    global _INDEXING
    if _INDEXING is None:
        from . import indexing
        _INDEXING = indexing
    return _INDEXING


_INDEXING = None


_cache: dict = {}


def math_for(differentiable: bool, backend):
    key = (differentiable, backend)
    F = _cache.get(key)
    if F is None:
        F = _cache[key] = (TensorMath if differentiable else ArrayMath)(backend)
    return F


def scalar_log(x: float) -> float:
    if x > 0:
        return _math.log(x)
    return float("-inf") if x == 0 else float("nan")


use_formula_math(math_for)
