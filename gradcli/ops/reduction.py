"""Reductions (sum, mean, prod, max, norm, var...) and the softmax family.

Backward formulas that need more than one line live here as functions of ``F``
(registered as formula helpers), written only in ``F`` calls and operators so
they run on arrays and, under ``create_graph``, on tensors alike.
"""

from __future__ import annotations

import builtins as _builtins
import operator as _operator
from functools import partial as _partial

import numpy as _np

from ..backend import all_finite, array_max, array_mean, array_sum, dtypes as _dt, rows as _rows
from ..backend.cascade import SUM_FROM, torch_sum
from ..backend.numpy_fast import MAX_ACROSS_FROM, SUM_ACROSS_FROM, along_axis_flat, along_axis_key, along_rows, \
    intp_scalar, reversed_key
from ..backend.rows import by_rows
from ..errors import GradIndexError, GradTypeError, RuntimeTypeError, ShapeError
from ..autograd.function import apply, apply1
from .registry import op
from .pointwise import maximum as _maximum, minimum as _minimum  # max(x, y) and min(x, y)
from .pointwise import DivBackward0, _is_kind
from .inplace import scalar_type as _scalar_type
from .formulas import cumulative, scalar_log
from ..autograd.node import define_node, formula_helpers
from ..autograd.tensor import Tensor, _wrap_dim


_ndarray = _np.ndarray
_INT64 = _np.dtype("int64")
_ADD = _np.add.reduce
_MAX = _np.maximum.reduce
_subtract = _np.subtract
_exp = _np.exp
_log = _np.log
_sqrt = _np.sqrt


def _numel(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def _count(sizes, dim) -> int:
    n = 1
    for d in dim:
        n *= sizes[d]
    return n


def sum_backward(F, grad, sizes, dim, keepdim):
    """Broadcast a reduced gradient back over the reduced dims."""
    if dim is None:
        return F.expand(grad, sizes)
    if not keepdim:
        grad = F.unsqueeze_dims(grad, dim, len(sizes))
    return F.expand(grad, sizes)


def _keep(F, t, sizes, dim, keepdim):
    """``t`` reduced over ``dim`` reshaped to broadcast against the input."""
    if dim is None:
        return t
    return t if keepdim else F.unsqueeze_dims(t, dim, len(sizes))


def evenly_distribute(F, grad, self, result):
    """Gradient of a full max/min: split evenly between all elements equal to the result."""
    if not F.differentiable and self.__class__ is _ndarray and result == result:
        # not NaN (the NaN term below adds only zeros): torch's zeros with grad / count where the
        # maximum is (+0.0 elsewhere, where the product below gives -0.0 for a negative grad)
        equal = self == result
        return _np.where(equal, grad / _ADD(equal.astype(grad.dtype), None), grad.dtype.type(0))
    if F.differentiable:  # torch's CPU form: zeros.masked_fill_(mask, grad / mask.sum()) (MaskedFillBackward1)
        nan = bool((result != result).item())
        equal = self != self if nan else self == result
        return F.masked_fill(F.zeros(self.shape, grad), equal, grad / F.sum(F.mask(equal, grad)))
    mask = F.mask(self == result, grad)
    # a NaN result came from the NaNs: they share the gradient (torch's evenly_distribute_backward)
    mask = mask + F.mask(F.logical_and(self != self, result != result), grad)
    return mask * (grad / F.sum(mask))


def amax_backward(F, grad, self, result, dim, keepdim):
    if not F.differentiable and self.__class__ is _ndarray and grad.__class__ is _ndarray and self.ndim \
            and grad.dtype == self.dtype:
        # arrays: the same operations with the reduced ones broadcast, not expanded, in one buffer
        if not keepdim:
            kept = _kept_shape(self.shape, dim)
            result, grad = result.reshape(kept), grad.reshape(kept)
        mask = (self == result).astype(grad.dtype)
        count = _ADD(mask, dim, None, None, True) if mask.size < SUM_ACROSS_FROM \
            else along_rows(_np.add, mask, dim, True)
        mask *= grad
        mask /= count
        return mask
    sizes = tuple(self.shape)
    mask = F.mask(self == _keep(F, result, sizes, dim, keepdim), grad)
    count = F.sum(mask, dim, True) if dim is not None else F.sum(mask)
    return sum_backward(F, grad, sizes, dim, keepdim) * mask / count


def select_backward_mask(F, grad, sizes, dim, keepdim, indices):
    """Gradient of max/min along a dim: only the selected index receives it."""
    xp = F.backend.xp
    idx = indices if keepdim else xp.expand_dims(indices, axis=dim)
    if grad.__class__ is _ndarray and not F.differentiable:  # torch's zeros scattered with grad
        return _np.where(_positions(sizes, dim) == idx, grad.reshape(idx.shape), grad.dtype.type(0))
    positions = xp.reshape(xp.arange(sizes[dim]), tuple(sizes[dim] if i == dim else 1 for i in range(len(sizes))))
    dtype = grad._data.dtype if isinstance(grad, Tensor) else grad.dtype  # a tensor under create_graph
    onehot = F.constant(xp.astype(positions == idx, dtype))
    return sum_backward(F, grad, sizes, (dim,), keepdim) * onehot


def _kept_shape(sizes, dim):
    """``sizes`` with the reduced ``dim`` (a tuple; None: all) kept as 1s."""
    if dim is None:
        return (1,) * len(sizes)
    if len(dim) == 1:
        d = dim[0]
        return sizes[:d] + (1,) + sizes[d + 1:]
    return tuple(1 if i in dim else s for i, s in enumerate(sizes))


def _positions(sizes, dim):
    """0, 1, ... sizes[dim] - 1 along ``dim`` (1 elsewhere), to compare with max/min's indices."""
    key = (sizes[dim], dim, len(sizes))
    found = _POSITIONS.get(key)
    if found is None:
        if len(_POSITIONS) >= 1024:
            _POSITIONS.clear()
        found = _POSITIONS[key] = _np.arange(sizes[dim]).reshape(
            tuple(sizes[dim] if i == dim else 1 for i in range(len(sizes))))
        found.flags.writeable = False  # shared by every backward of that shape
    return found


_POSITIONS: dict = {}


def prod_backward(F, grad, self, result, dim, keepdim):
    """torch's prod_backward, branch for branch (its graph under create_graph is torch's): no zero
    in the input is ``grad * (result / self)``, a zero takes the exclusive-cumprod path that stays
    exact with zeros (two zeros of a full product give zeros directly when no graph is made)."""
    sizes = tuple(self.shape)
    if not sizes:
        return grad
    if dim is None:
        grad = F.expand(grad, sizes)
    elif not keepdim:
        grad, result = F.unsqueeze_dims(grad, dim, len(sizes)), F.unsqueeze_dims(result, dim, len(sizes))
    zeros = F.count_zeros(self)
    if zeros == 0:
        return grad * (result / self)
    if dim is not None:
        return prod_safe_zeros_backward(F, grad, self, dim[0])
    if zeros > 1 and not F.differentiable:
        return F.zeros_like(self)
    flat = prod_safe_zeros_backward(F, F.reshape(grad, (-1,)), F.reshape(self, (-1,)), 0)
    return F.reshape(flat, sizes)


def prod_safe_zeros_backward(F, grad, inp, dim):
    """Each element's product of the others as (exclusive cumprod) * (reversed exclusive cumprod)."""
    n = inp.shape[dim]
    if _numel(inp.shape) == 0:
        return F.expand(grad, tuple(inp.shape))
    ones = F.zeros_like(F.narrow(inp, dim, 0, 1)) + 1
    exclusive_normal = F.cumprod(F.cat([ones, F.narrow(inp, dim, 0, n - 1)], dim), dim)
    narrow_reverse = F.flip(F.narrow(inp, dim, 1, n - 1), dim)
    exclusive_reverse = F.flip(F.cumprod(F.cat([ones, narrow_reverse], dim), dim), dim)
    return grad * (exclusive_normal * exclusive_reverse)


def cumsum_backward(F, grad, dim):
    """torch's cumsum_backward: the gradient summed from the end (flip, cumsum, flip); a slice of one
    element passes it as it is."""
    if _numel(grad.shape) <= 1 or grad.shape[dim] == 1:
        return grad
    return F.flip(F.cumsum(F.flip(grad, dim), dim), dim)


def cumprod_backward(F, grad, self, result, dim):
    """torch's cumprod_backward, branch for branch (under create_graph its graph is torch's): without
    a zero, the reversed cumsum of result * grad divided by the input; with zeros, the products
    without dividing: on arrays torch's O(n) masks, under create_graph its O(n^2) loop. The gradient
    is cast to the input's dtype (``dtype=``), where torch's engine casts it."""
    sizes = tuple(self.shape)
    if _numel(sizes) <= 1 or sizes[dim] == 1:
        return F.cast(grad, self)
    if F.count_zeros(self) == 0:
        w = result * grad
        return F.cast(F.flip(F.cumsum(F.flip(w, dim), dim), dim) / self, self)
    if not F.differentiable:
        return F.cast(_cumprod_zeros_backward(F, grad, self, result, dim), self)
    n = sizes[dim]
    out = F.zeros_like(self)
    ones = F.zeros_like(F.narrow(self, dim, 0, 1)) + 1
    for k in range(n):  # omitted[j] = d result[k + j] / d self[k]
        if k == 0:
            omitted = F.cat([ones, F.cumprod(F.narrow(self, dim, 1, n - 1), dim)], dim)
        else:
            until = F.prod(F.narrow(self, dim, 0, k), (dim,), True)
            if k == n - 1:
                omitted = until
            else:
                after = F.cumprod(F.narrow(self, dim, k + 1, n - k - 1), dim)
                omitted = F.cat([until, F.expand(until, tuple(after.shape)) * after], dim)
        out = F.select_copy_(out, dim, k, F.sum(F.narrow(grad, dim, k, n - k) * omitted, (dim,)))
    return F.cast(out, self)


def _cumprod_zeros_backward(F, grad, x, result, dim):
    """torch's O(n) gradient of cumprod for an input with zeros (no graph): before a slice's first
    zero z1 the usual formula on result * grad cut there; at z1, sum_j grad_j * prod(x[z1+1..j])
    over j up to the next zero, times the product before z1; after it, 0."""
    xp = F.backend.xp
    n = x.shape[dim]
    zero = x == 0
    count = F.cumsum(xp.astype(zero, xp.int64), dim)  # zeros up to each position, itself included
    before = count == 0
    w = F.where(before, result * grad, 0.0)
    # divided where the formula is kept only (by 1 elsewhere: no 0 / 0 to warn about)
    out = F.where(before, F.flip(F.cumsum(F.flip(w, dim), dim), dim) / F.where(before, x, 1.0), 0.0)
    span = count == 1  # [z1, z2)
    first = F.logical_and(zero, span)
    between = F.logical_and(span, xp.logical_not(zero))
    tail = F.sum(F.cumprod(F.where(between, x, 1.0), dim) * F.where(span, grad, 0.0), (dim,), True)
    # the product before z1: result one place before it (exactly: a sum of it and zeros), 1 at the start
    edge = F.narrow(first, dim, 0, 1)
    ahead = F.cat([F.narrow(first, dim, 1, n - 1), xp.zeros_like(edge)], dim)
    prev = F.sum(F.where(ahead, result, 0.0), (dim,), True) + xp.astype(edge, result.dtype)
    return F.where(first, tail * prev, out)


def norm_backward(F, grad, self, ord, result, dim, keepdim):
    """torch's norm_backward by its branches (p = 0, 1, 2, inf, < 1, < 2, else) and operand order."""
    if ord == 2 and not F.differentiable and self.__class__ is _ndarray and grad.__class__ is _ndarray \
            and self.ndim and grad.dtype == self.dtype:  # the p = 2 branch below, broadcast, in one buffer
        if dim is not None and not keepdim:
            kept = _kept_shape(self.shape, dim)
            result, grad = result.reshape(kept), grad.reshape(kept)
        out = _np.where(result == 0, 0, self / result)
        out *= grad
        return out
    sizes = tuple(self.shape)
    g = _keep(F, grad, sizes, dim, keepdim)
    r = _keep(F, result, sizes, dim, keepdim)
    if ord == 0:
        return F.zeros_like(self)
    if ord == 1:
        return F.sgn(self) * g
    if ord == 2:
        return g * F.masked_fill(self / r, r == 0, 0)  # torch's (self / norm).masked_fill_(norm == 0, 0)
    if ord in (float("inf"), float("-inf")):
        mask = F.mask(F.abs(self) == r, grad)
        count = F.sum(mask, dim, True) if dim is not None else F.sum(mask)
        return F.sgn(self) * ((g / count) * mask)
    if ord < 1:
        return F.sgn(self) * F.masked_fill(F.abs(self) ** (ord - 1), self == 0, 0) * g * r ** (1 - ord)
    scaled = F.sgn(self) * F.abs(self) ** (ord - 1) if ord < 2 else self * F.abs(self) ** (ord - 2)
    return scaled * F.masked_fill(g / r ** (ord - 1), r == 0, 0)


def var_backward(F, grad, self, dim, correction, keepdim):
    """torch's var_backward: ``(2 / dof) * grad * (self - mean)``, the reduced gradient unsqueezed
    (not expanded) and broadcast. A full reduction without degrees of freedom gives nan where
    self == mean and inf elsewhere; over ``dim``, 2 / dof is taken as it is (inf at 0, negative
    below), as torch does."""
    sizes = tuple(self.shape)
    n = _numel(sizes) if dim is None else _count(sizes, dim)
    dof = n - correction
    if dof > 0 and not F.differentiable and self.__class__ is _ndarray and grad.__class__ is _ndarray \
            and self.ndim and self.dtype.kind == "f" and self.dtype.itemsize >= 4 and grad.dtype == self.dtype:
        # F.mean's sum and division, then the same products, in one buffer
        mean = _ADD(self, dim, None, None, True)
        mean /= n
        if dim is not None and not keepdim:
            grad = grad.reshape(_kept_shape(sizes, dim))
        out = self - mean
        out *= (2.0 / dof) * grad
        return out
    mean = F.mean(self, dim, True) if dim is not None else F.mean(self)  # as torch: MeanBackward1/0
    if dim is None and dof <= 0:
        return grad * F.where(self == mean, float("nan"), F.zeros_like(self) + float("inf"))
    if dim is not None and not keepdim and len(sizes) > 1:
        grad = F.unsqueeze_dims(grad, dim, len(sizes))
    return (2.0 / dof if dof else float("inf")) * grad * (self - mean)


def logsumexp_backward(F, grad, self, result, dim, keepdim):
    if not F.differentiable and self.__class__ is _ndarray and grad.__class__ is _ndarray and self.ndim \
            and grad.dtype == self.dtype:  # the same operations, the gradient broadcast, in one buffer
        if not keepdim:
            kept = _kept_shape(self.shape, dim)
            result, grad = result.reshape(kept), grad.reshape(kept)
        if self.size >= _rows.MIN_ELEMENTS:  # by blocks of rows, each through the lines below
            out = by_rows(_partial(logsumexp_backward, F, keepdim=True), dim, self.shape, grad, self, result)
            if out is not None:
                return out
        out = self - result
        _exp(out, out)
        out *= grad
        return out
    sizes = tuple(self.shape)
    return sum_backward(F, grad, sizes, dim, keepdim) * F.exp(self - _keep(F, result, sizes, dim, keepdim))


formula_helpers(sum_backward=sum_backward, evenly_distribute=evenly_distribute, amax_backward=amax_backward,
                select_backward_mask=select_backward_mask, prod_backward=prod_backward,
                cumsum_backward=cumsum_backward, cumprod_backward=cumprod_backward,
                norm_backward=norm_backward, var_backward=var_backward,
                logsumexp_backward=logsumexp_backward, numel=_numel, count=_count, scalar_log=scalar_log)

# -- forwards the nodes below name -----------------------------------------------------------------

def _logsumexp(xp, x, dim, keepdim):
    if x.__class__ is _ndarray and x.ndim and x.size:
        if x.size >= _rows.MIN_ELEMENTS:  # by blocks of rows, each through this function (a row's
            # infinite max is shifted by 0 in its block as in the whole array)
            out = by_rows(_partial(_logsumexp, xp, keepdim=True), dim, _kept_shape(x.shape, dim), x)
            if out is not None:
                return out if keepdim else out.reshape(_without(out.shape, dim))
        m = _MAX(x, dim, None, None, True) if x.size < MAX_ACROSS_FROM else along_rows(_np.maximum, x, dim, True)
        total = float(_ADD(m, None))
        if total - total == 0:  # every max finite (an inf or nan makes this nan): no shift to fix
            e = x - m
            _exp(e, e)
            out = _ADD(e, dim, None, None, True) if x.size < SUM_ACROSS_FROM else along_rows(_np.add, e, dim, True)
            _log(out, out)
            out += m  # log(sum(exp(x - m))) + m, the general path's operations in its order
            return out if keepdim else out.reshape(_without(out.shape, dim))
    if x.size == 0:  # an empty sum: log(0) = -inf, as torch (numpy's max of nothing raises)
        out = xp.full(tuple(1 if i in dim else s for i, s in enumerate(x.shape)), -xp.inf, dtype=x.dtype)
        return out if keepdim else xp.reshape(out, _without(out.shape, dim))
    m = array_max(xp, x, dim, True)
    if not all_finite(m):  # a row of infinities (or nan) is shifted by 0, not by itself
        m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    out = xp.log(array_sum(xp, xp.exp(x - m), dim, True)) + m
    if not keepdim:
        out = xp.reshape(out, _without(out.shape, dim))
    return out


def _without(shape, dim):
    """``shape`` without the dims ``dim`` (a tuple): a keepdim=False result's shape."""
    return tuple(s for i, s in enumerate(shape) if i not in dim)


def _softmax(xp, x, dim):
    """exp(x - max) / sum(exp(x - max)) along ``dim`` (torch's kernel: NaN for a row whose max is
    infinite); a NumPy array's in place, 5 ufunc calls and one new array."""
    if x.__class__ is _ndarray and x.ndim and x.size:
        if x.size >= _rows.MIN_ELEMENTS:  # by blocks of rows, each through the lines below
            out = by_rows(_partial(_softmax, xp), dim, x.shape, x)
            if out is not None:
                return out
        small = x.size < MAX_ACROSS_FROM  # (along_rows would not copy: the reductions themselves)
        e = x - (_MAX(x, dim, None, None, True) if small else along_rows(_np.maximum, x, dim, True))
        _exp(e, e)
        e /= _ADD(e, dim, None, None, True) if small else along_rows(_np.add, e, dim, True)
        return e
    if x.size == 0:  # nothing to normalise (numpy's max of an empty axis would raise)
        return xp.asarray(x, copy=True)
    e = xp.exp(x - array_max(xp, x, dim, True))
    return e / array_sum(xp, e, dim, True)


def _log_softmax(xp, x, dim):
    """(x - max) - log(sum(exp(x - max))) along ``dim``: torch's kernel operation for operation (a
    row holding +inf or NaN is all NaN there, and here)."""
    if x.__class__ is _ndarray and x.ndim and x.size:
        if x.size >= _rows.MIN_ELEMENTS:  # by blocks of rows, each through the lines below
            out = by_rows(_partial(_log_softmax, xp), dim, x.shape, x)
            if out is not None:
                return out
        small = x.size < MAX_ACROSS_FROM  # (along_rows would not copy: the reductions themselves)
        d = x - (_MAX(x, dim, None, None, True) if small else along_rows(_np.maximum, x, dim, True))
        s = _ADD(_exp(d), dim, None, None, True) if small else along_rows(_np.add, _exp(d), dim, True)
        _log(s, s)
        d -= s
        return d
    if x.size == 0:
        return xp.asarray(x, copy=True)
    d = x - array_max(xp, x, dim, True)
    return d - xp.log(array_sum(xp, xp.exp(d), dim, True))


def _var(xp, x, dim, correction, keepdim, root=False):
    """Variance (``root``: its square root) over ``dim`` (None: everything): the mean, then the
    squared deviations from it summed and divided by n - correction. A float32/float64 NumPy
    array takes that two-pass arithmetic without np.var's wrapper (7 ufunc calls, in place);
    anything else, and no degrees of freedom left (NumPy warns, gives inf or nan), np.var itself."""
    if x.__class__ is _ndarray and x.ndim and x.dtype.kind == "f" and x.dtype.itemsize >= 4 \
            and correction.__class__ in (int, float):
        n = x.size if dim is None else _count(x.shape, dim)
        dof = n - correction
        if dof > 0:
            d = along_rows(_np.add, x, dim, True)
            d /= n
            d = x - d
            d *= d
            out = along_rows(_np.add, d, dim, keepdim)
            if out.__class__ is _ndarray:
                out /= dof
                return _sqrt(out, out) if root else out
            out = out / dof  # a full reduction: a NumPy scalar of x's dtype (dof: a weak Python number)
            return _sqrt(out) if root else out
    if root:
        return xp.std(x, axis=dim, correction=correction, keepdims=keepdim)
    return xp.var(x, axis=dim, correction=correction, keepdims=keepdim)


def _mean(xp, x, dim, keepdim):
    """array_mean with ``dim`` already a valid tuple (or None): a float32/float64 NumPy array's sum
    divided in place by the count, mean_of's operations without its check of the axes."""
    if x.__class__ is _ndarray and x.dtype.kind == "f" and x.dtype.itemsize >= 4:
        n = x.size if dim is None else _count(x.shape, dim)
        if n:
            out = _ADD(x, dim, None, None, keepdim) if x.size < SUM_FROM else torch_sum(x, dim, keepdim)
            if out.__class__ is _ndarray:
                out /= n
                return out
            return out / n
    return array_mean(xp, x, dim, keepdim)


def _std(xp, x, dim, correction, keepdim):
    return _var(xp, x, dim, correction, keepdim, True)


# -- nodes ---------------------------------------------------------------------------------------------

SumBackward0 = define_node("SumBackward0", self="F.expand(grad, self_sizes)",
                           forward=lambda xp, x: torch_sum(x) if x.__class__ is _ndarray and x.size >= SUM_FROM
                           else array_sum(xp, x))
SumBackward1 = define_node("SumBackward1", attrs=("dim", "keepdim"),
                           self="sum_backward(F, grad, self_sizes, dim, keepdim)",
                           forward=lambda xp, x, dim, keepdim: (
                               _ADD(x, dim, None, None, keepdim) if x.size < SUM_FROM
                               else torch_sum(x, dim, keepdim))
                           if x.__class__ is _ndarray else array_sum(xp, x, dim, keepdim))
MeanBackward0 = define_node("MeanBackward0", self="F.expand(grad / numel(self_sizes), self_sizes)",
                            forward=lambda xp, x: _mean(xp, x, None, False))
MeanBackward1 = define_node("MeanBackward1", attrs=("dim", "keepdim"),
                            self="sum_backward(F, grad, self_sizes, dim, keepdim) / count(self_sizes, dim)",
                            forward=lambda xp, x, dim, keepdim: _mean(xp, x, dim, keepdim))
ProdBackward0 = define_node("ProdBackward0", self="prod_backward(F, grad, self, result, None, False)",
                            forward=lambda xp, x: xp.prod(x))
ProdBackward1 = define_node("ProdBackward1", attrs=("dim", "keepdim"),
                            self="prod_backward(F, grad, self, result, dim, keepdim)",
                            forward=lambda xp, x, dim, keepdim: xp.prod(x, axis=dim, keepdims=keepdim))
CumsumBackward0 = define_node("CumsumBackward0", attrs=("dim",), self="cumsum_backward(F, grad, dim)",
                              forward=cumulative)
CumprodBackward0 = define_node("CumprodBackward0", attrs=("dim",), self="cumprod_backward(F, grad, self, result, dim)",
                               forward=lambda xp, x, dim: cumulative(xp, x, dim, True))
MaxBackward1 = define_node("MaxBackward1", self="evenly_distribute(F, grad, self, result)",
                           forward=lambda xp, x: array_max(xp, x))
MinBackward1 = define_node("MinBackward1", self="evenly_distribute(F, grad, self, result)",
                           forward=lambda xp, x: xp.min(x))
MaxBackward0 = define_node("MaxBackward0", attrs=("dim", "keepdim", "indices"),
                           self="select_backward_mask(F, grad, self_sizes, dim, keepdim, indices)",
                           forward=lambda xp, x, dim, keepdim, indices: array_max(xp, x, dim, keepdim))
MinBackward0 = define_node("MinBackward0", attrs=("dim", "keepdim", "indices"),
                           self="select_backward_mask(F, grad, self_sizes, dim, keepdim, indices)",
                           forward=lambda xp, x, dim, keepdim, indices: xp.min(x, axis=dim, keepdims=keepdim))
AmaxBackward0 = define_node("AmaxBackward0", attrs=("dim", "keepdim"),
                            self="amax_backward(F, grad, self, result, dim, keepdim)",
                            forward=lambda xp, x, dim, keepdim: array_max(xp, x, dim, keepdim))
AminBackward0 = define_node("AminBackward0", attrs=("dim", "keepdim"),
                            self="amax_backward(F, grad, self, result, dim, keepdim)",
                            forward=lambda xp, x, dim, keepdim: xp.min(x, axis=dim, keepdims=keepdim))
LinalgVectorNormBackward0 = define_node(
    "LinalgVectorNormBackward0", attrs=("ord", "dim", "keepdim"),
    self="norm_backward(F, grad, self, ord, result, dim, keepdim)",
    forward=lambda xp, x, ord, dim, keepdim: _vector_norm(xp, x, ord, dim, keepdim))
VarBackward0 = define_node("VarBackward0", attrs=("dim", "correction", "keepdim"),
                           self="var_backward(F, grad, self, dim, correction, keepdim)",
                           forward=_var)
StdBackward0 = define_node(
    "StdBackward0", attrs=("dim", "correction", "keepdim"),
    self="var_backward(F, F.masked_fill(grad / (result * 2), result == 0, 0), self, dim, correction, keepdim)",
    forward=_std)
LogsumexpBackward0 = define_node("LogsumexpBackward0", attrs=("dim", "keepdim"),
                                 self="logsumexp_backward(F, grad, self, result, dim, keepdim)",
                                 forward=_logsumexp)
SoftmaxBackward0 = define_node("SoftmaxBackward0", attrs=("dim",),
                               self="F.softmax_backward(grad, result, dim)",
                               forward=_softmax, reuses_grad=True)
LogSoftmaxBackward0 = define_node("LogSoftmaxBackward0", attrs=("dim",),
                                  self="F.log_softmax_backward(grad, result, dim)",
                                  forward=_log_softmax, reuses_grad=True)
# torch's fused _softmax_backward_data / _log_softmax_backward_data, recorded when those gradients
# are differentiated again (create_graph), with derivatives.yaml's formulas for both inputs.
SoftmaxBackwardDataBackward0 = define_node(
    "SoftmaxBackwardDataBackward0", inputs=("grad_output", "output"), attrs=("dim",),
    forward=lambda xp, g, y, dim: y * (g - array_sum(xp, g * y, dim, True)),
    grad_output="F.softmax_backward(grad, output, dim)",
    output="grad * (grad_output - F.sum(grad_output * output, (dim,), True)) "
           "- grad_output * F.sum(grad * output, (dim,), True)")
LogSoftmaxBackwardDataBackward0 = define_node(
    "LogSoftmaxBackwardDataBackward0", inputs=("grad_output", "output"), attrs=("dim",),
    forward=lambda xp, g, y, dim: g - xp.exp(y) * array_sum(xp, g, dim, True),
    grad_output="grad - F.sum(grad * F.exp(output), (dim,), True)",
    output="-F.sum(grad_output, (dim,), True) * F.exp(output) * grad")


def softmax_backward(grad_output, output, dim):
    return apply(SoftmaxBackwardDataBackward0, (grad_output, output), (dim,))


def log_softmax_backward(grad_output, output, dim):
    return apply(LogSoftmaxBackwardDataBackward0, (grad_output, output), (dim,))


def _vector_norm(xp, x, ord, dim, keepdim):
    if ord == 2:  # x * x is |x| * |x|, bit for bit
        return xp.sqrt(array_sum(xp, x * x, dim, keepdim))
    a = xp.abs(x)
    if ord == 1:
        return array_sum(xp, a, dim, keepdim)
    if ord == float("inf"):
        return xp.max(a, axis=dim, keepdims=keepdim)
    if ord == float("-inf"):
        return xp.min(a, axis=dim, keepdims=keepdim)
    if ord == 0:
        return xp.sum(xp.astype(a != 0, x.dtype), axis=dim, keepdims=keepdim)
    return xp.sum(a ** ord, axis=dim, keepdims=keepdim) ** (1.0 / ord)


# -- functions ----------------------------------------------------------------------------------------

# ``(d,)`` for every dim an array can have: the attributes of softmax's and log_softmax's nodes,
# shared rather than made per call (a tuple kept by every node adds to the cyclic collector's work)
_DIM_ATTRS = tuple((d,) for d in range(64))


def _float_dim(input, dim):
    """The call most programs make, a float tensor on NumPy and one int ``dim`` in range of its
    (one or more) dims: that dim made non-negative, so the op can skip its general argument
    handling (casts, sequences of dims, 0-d rules, errors). None for anything else."""
    if dim.__class__ is int and input.__class__ is Tensor:
        data = input._data
        if data.__class__ is _ndarray and data.dtype.kind == "f":
            n = data.ndim
            if -n <= dim < n:
                return dim + n if dim < 0 else dim
    return None


def dims(dim, ndim: int):
    """Normalise ``dim`` (int or sequence) to a sorted tuple of non-negative dims."""
    if dim.__class__ is int:  # the usual ``x.sum(1)``
        return (_wrap_dim(dim, ndim),)
    if isinstance(dim, (list, tuple)):
        out = tuple(sorted({_wrap_dim(d, ndim) for d in dim}))
        if len(out) != len(dim):
            seen = [_wrap_dim(d, ndim) for d in dim]
            twice = next(d for i, d in enumerate(seen) if d in seen[:i])
            raise GradTypeError(f"dim {twice} appears multiple times in the list of dims")
        return out
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise GradTypeError(f"dim must be an int or a tuple of ints, not {type(dim).__name__}")
    return (_wrap_dim(dim, ndim),)


def _float_input(name, input):
    if not input.dtype.is_floating_point:
        raise GradTypeError(f"{name}(): could not infer output dtype. Input dtype must be either a floating "
                            f"point or complex dtype. Got: {_dt_name(input)}")


def _dt_name(t):
    return {"int64": "Long", "int32": "Int", "bool": "Bool"}.get(t.dtype.name, t.dtype.name)


def _cast_for(input, dtype):
    """``dtype=`` of a reduction: the input cast to it first (torch casts inside sum/mean/prod's own
    node; here the cast is its own ToCopyBackward0 node before it, with the same values and gradients)."""
    if dtype is None or input.__class__ is not Tensor:
        return input
    return input.to(_dt.by_name(dtype))


def _reduce_scalar_dim(x, dim):
    """torch allows dim 0/-1 on a 0-d tensor; numpy does not: reduce over nothing."""
    return dim if x.ndim else None


@op(SumBackward0, SumBackward1, category="reduction")
def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum of all elements, or over ``dim`` (an int or a tuple); ``dtype``: compute and return in it."""
    d = _float_dim(input, dim) if dtype is None else None
    if d is not None:
        return apply1(SumBackward1, input, input._data, ((d,), keepdim is True or bool(keepdim)))
    input = _cast_for(input, dtype)
    if input.dtype.name == "bool":
        input = input.to("int64")
    if dim is None:
        out = apply(SumBackward0, (input,))
        return out if not keepdim else out.reshape((1,) * input.ndim)
    d = dims(dim, input.ndim)
    return apply(SumBackward1, (input,), (_reduce_scalar_dim(input, d), bool(keepdim)))


def _nansum(xp, x, dim, keepdim):
    """sum with NaNs as zeros, in sum's order (integers: int64)."""
    if _is_kind(xp, x, "f"):
        x = xp.where(xp.isnan(x), xp.zeros_like(x), x)
        return array_sum(xp, x, dim, keepdim)
    return array_sum(xp, xp.astype(x, xp.int64), dim, keepdim)


NansumBackward0 = define_node(  # nansum_backward: sum's, zero where the input is NaN
    "NansumBackward0", attrs=("dim", "keepdim"), forward=_nansum,
    self="sum_backward(F, grad, self_sizes, dim, keepdim) * F.mask(F.logical_not(F.isnan(self)), grad)")


@op(NansumBackward0, category="reduction")
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero, of everything or over ``dim``; ``dtype``: compute and return in it."""
    input = _cast_for(input, dtype)
    d = None if dim is None else _reduce_scalar_dim(input, dims(dim, input.ndim))
    return apply1(NansumBackward0, input, input._data, (d, bool(keepdim)))


@op(DivBackward0, NansumBackward0, category="reduction")
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean of the elements that are not NaN, of everything or over ``dim``: nansum over their count."""
    input = _cast_for(input, dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeTypeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                               f"{_scalar_type(input.dtype)}")
    d = None if dim is None else _reduce_scalar_dim(input, dims(dim, input.ndim))
    total = apply1(NansumBackward0, input, input._data, (d, bool(keepdim)))
    # the count of numbers: torch's isnan(x).logical_not().sum(dim, keepdim), an int64 that the
    # division promotes to the input's dtype (counted in int64, then cast: the same divisor)
    xp = input._backend.xp
    count = array_sum(xp, xp.astype(xp.logical_not(xp.isnan(input._data)), xp.int64), d, bool(keepdim))
    return total / Tensor._make(xp.astype(xp.asarray(count), input._data.dtype), input._backend)


@op(MeanBackward0, MeanBackward1, category="reduction")
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Arithmetic mean of all elements, or over ``dim``; ``dtype``: compute and return in it."""
    d = _float_dim(input, dim) if dtype is None else None
    if d is not None:
        return apply1(MeanBackward1, input, input._data, ((d,), keepdim is True or bool(keepdim)))
    input = _cast_for(input, dtype)
    _float_input("mean", input)
    if dim is None and not keepdim:
        return apply(MeanBackward0, (input,))
    d = tuple(range(input.ndim)) if dim is None else dims(dim, input.ndim)
    return apply(MeanBackward1, (input,), (_reduce_scalar_dim(input, d), bool(keepdim)))


@op(ProdBackward0, ProdBackward1, category="reduction")
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product of all elements, or over one ``dim``; ``dtype``: compute and return in it."""
    input = _cast_for(input, dtype)
    if dim is None:
        return apply(ProdBackward0, (input,))
    if isinstance(dim, (list, tuple)):
        raise GradTypeError("prod(): argument 'dim' must be int, not tuple")
    return apply(ProdBackward1, (input,), (_reduce_scalar_dim(input, dims(dim, input.ndim)), bool(keepdim)))


def _scan(name, cls, input, dim, dtype):
    """cumsum/cumprod: one int ``dim``; computed in ``dtype`` if given (integers and bools: int64, as
    torch), the cast array handed to the node, whose edge stays the input's (torch casts inside the op)."""
    d = dim
    if d.__class__ is not int:
        try:  # a NumPy integer, an integer 0-d tensor (never a bool), as torch
            d = None if isinstance(d, bool) else _operator.index(d)
        except TypeError:
            d = None
        if d is None:
            raise GradTypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    d = _wrap_dim(d, input.ndim)
    target = _dt.by_name(dtype).name if dtype is not None else None if input.dtype.is_floating_point else "int64"
    if target is None or target == input.dtype.name:
        return apply(cls, (input,), (d,))
    backend = input._backend
    return apply(cls, (input,), (d,), [backend.xp.astype(input._data, backend.dtype(target))])


@op(CumsumBackward0, category="reduction")
def cumsum(input, dim, *, dtype=None):
    """Running sum along ``dim``; ``dtype``: compute and return in it (integers give int64)."""
    return _scan("cumsum", CumsumBackward0, input, dim, dtype)


@op(CumprodBackward0, category="reduction")
def cumprod(input, dim, *, dtype=None):
    """Running product along ``dim`` (its gradient exact with zeros); ``dtype``: compute and return in it."""
    return _scan("cumprod", CumprodBackward0, input, dim, dtype)


class ReturnTypes(tuple):
    """``torch.return_types.<name>(values=..., indices=...)``: ``ReturnTypes("sort", v, i)`` is an
    instance of the class named ``sort`` (one per name, made on first use), as torch's types."""

    __slots__ = ()
    _name = "max"
    _classes: dict = {}

    def __new__(cls, name, values, indices):
        sub = ReturnTypes._classes.get(name)
        if sub is None:
            sub = ReturnTypes._classes[name] = type(name, (ReturnTypes,), {"__slots__": (), "_name": name})
        return tuple.__new__(sub, (values, indices))

    def __getnewargs__(self):  # copy and pickle rebuild it through __new__'s arguments
        return (self._name, self[0], self[1])

    def __repr__(self):
        return f"torch.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]


def _max_min(name, input, dim, keepdim, full_cls, dim_cls, ret_cls, pair):
    if dim is None:
        if input.numel() == 0:
            raise ShapeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                             f"Specify the reduction dim with the 'dim' argument.")
        return apply(full_cls, (input,))
    d = _float_dim(input, dim)
    if d is not None and input._data.shape[d]:  # a float NumPy tensor, one int dim, not empty
        data = input._data
        keep = keepdim is True or bool(keepdim)
        indices = data.argmax(d, keepdims=keep) if name == "max" else data.argmin(d, keepdims=keep)
        values = apply1(dim_cls, input, data, (d, keep, indices))
        return ret_cls(name, values, Tensor._make(indices.astype(_INT64), input._backend))  # a copy: the node keeps its own
    if isinstance(dim, Tensor):
        return pair(input, dim)
    d = _wrap_dim(dim, input.ndim)
    _nonempty(name, input, (d,), False)
    xp = input._backend.xp
    data = input._data
    if data.ndim == 0:
        idx = xp.zeros((), dtype=xp.int64)
        values = input.clone()
        return ret_cls(name, values, Tensor._make(idx, input._backend))
    arg = xp.argmax if name == "max" else xp.argmin
    indices = arg(data, axis=d, keepdims=bool(keepdim))
    values = apply(dim_cls, (input,), (d, bool(keepdim), indices))
    return ret_cls(name, values, Tensor._make(xp.astype(indices, xp.int64), input._backend))


@op(MaxBackward1, MaxBackward0, category="reduction")
def max(input, dim=None, keepdim=False):
    """Largest element; with ``dim``, (values, indices) along it; with a tensor, the elementwise maximum."""
    return _max_min("max", input, dim, keepdim, MaxBackward1, MaxBackward0, ReturnTypes, _maximum)


@op(MinBackward1, MinBackward0, category="reduction")
def min(input, dim=None, keepdim=False):
    """Smallest element; with ``dim``, (values, indices) along it; with a tensor, the elementwise minimum."""
    return _max_min("min", input, dim, keepdim, MinBackward1, MinBackward0, ReturnTypes, _minimum)


@op(AmaxBackward0, category="reduction")
def amax(input, dim=(), keepdim=False):
    """Maximum over ``dim`` (all dims by default); ties share the gradient evenly."""
    return apply(AmaxBackward0, (input,), _amax_args("amax", input, dim, keepdim))


@op(AminBackward0, category="reduction")
def amin(input, dim=(), keepdim=False):
    """Minimum over ``dim`` (all dims by default); ties share the gradient evenly."""
    return apply(AminBackward0, (input,), _amax_args("amin", input, dim, keepdim))


_ALL_DIMS = [tuple(range(n)) for n in range(65)]


def _amax_args(name, input, dim, keepdim):
    """amax/amin's (dims, keepdim): every dim for (), [] or None; torch's errors for an empty one."""
    keep = keepdim is True or bool(keepdim)
    d = _float_dim(input, dim)
    if d is not None and input._data.shape[d]:
        return (d,), keep
    every = dim is None or dim == () or dim == []
    n = input.ndim
    d = (_ALL_DIMS[n] if n < 65 else tuple(range(n))) if every else dims(dim, n)
    _nonempty(name, input, d, every)
    return _reduce_scalar_dim(input, d), keep


def _nonempty(name, input, d, all_dims):
    """torch refuses a max/min over an empty dim (numpy would raise a ValueError of its own)."""
    if all_dims and input.numel() == 0:
        raise ShapeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                         f"Specify the reduction dim with the 'dim' argument.")
    for i in d:
        if input.ndim and input.shape[i] == 0:
            raise ShapeError(f"{name}(): Expected reduction dim {i} to have non-zero size.")


@op(LinalgVectorNormBackward0, category="reduction")
def norm(input, p="fro", dim=None, keepdim=False):
    """Vector p-norm over all elements or ``dim`` (p: 'fro', a number, inf)."""
    if not input.dtype.is_floating_point:
        raise GradTypeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                            f"Got {_dt_name(input)}")
    ord = 2 if p in ("fro", None) else p
    if isinstance(ord, str):
        raise GradTypeError(f"norm(): unsupported p={p!r}; use 'fro' or a number")
    ord = float(ord)
    if ord == int(ord) if abs(ord) != float("inf") else False:
        ord = int(ord)
    d = None if dim is None else dims(dim, input.ndim)  # None: torch's full reduction (no unsqueeze)
    return apply(LinalgVectorNormBackward0, (input,), (ord, _reduce_scalar_dim(input, d), bool(keepdim)))


def _var_args(input, dim, unbiased, correction, keepdim):
    if unbiased is None and correction is None:
        d = _float_dim(input, dim)
        if d is not None:
            return ((d,), 1, keepdim is True or bool(keepdim))
    if not input.dtype.is_floating_point:
        raise GradTypeError("std and var only support floating point and complex dtypes")
    if isinstance(dim, bool):  # var(x, False): the old unbiased positional form
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    d = None if dim is None else dims(dim, input.ndim)  # None: torch's full reduction (mean(), no unsqueeze)
    return (_reduce_scalar_dim(input, d), correction, bool(keepdim))


@op(VarBackward0, category="reduction")
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over all elements or ``dim`` (Bessel-corrected by default)."""
    return apply(VarBackward0, (input,), _var_args(input, dim, unbiased, correction, keepdim))


@op(StdBackward0, category="reduction")
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over all elements or ``dim`` (Bessel-corrected by default)."""
    return apply(StdBackward0, (input,), _var_args(input, dim, unbiased, correction, keepdim))


@op(LogsumexpBackward0, category="reduction")
def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(x))) over ``dim``, computed stably."""
    d = _float_dim(input, dim)
    if d is not None:
        return apply1(LogsumexpBackward0, input, input._data, ((d,), keepdim is True or bool(keepdim)))
    if not input.dtype.is_floating_point:
        input = input.to(_dt.DEFAULTS.float)
    d = dims(dim, input.ndim)
    return apply(LogsumexpBackward0, (input,), (_reduce_scalar_dim(input, d), bool(keepdim)))


@op(SoftmaxBackward0, category="reduction", namespaces=("torch", "torch.nn.functional"))
def softmax(input, dim=None, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``; ``dtype``: cast the input to it first, as torch."""
    d = _float_dim(input, dim) if dtype is None else None
    if d is not None:
        return apply1(SoftmaxBackward0, input, input._data, _DIM_ATTRS[d])
    dim = _implicit_dim("softmax", input, dim)
    input = _cast_for(input, dtype)
    if input.ndim == 0:
        return apply(SoftmaxBackward0, (input.reshape((1,)),), (0,)).reshape(())
    return apply(SoftmaxBackward0, (_floating(input),), (_wrap_dim(dim, input.ndim),))


@op(LogSoftmaxBackward0, category="reduction", namespaces=("torch", "torch.nn.functional"))
def log_softmax(input, dim=None, dtype=None):
    """log(softmax(x)) along ``dim``, computed stably; ``dtype``: cast the input to it first, as torch."""
    d = _float_dim(input, dim) if dtype is None else None
    if d is not None:
        return apply1(LogSoftmaxBackward0, input, input._data, _DIM_ATTRS[d])
    dim = _implicit_dim("log_softmax", input, dim)
    input = _cast_for(input, dtype)
    if input.ndim == 0:
        return apply(LogSoftmaxBackward0, (input.reshape((1,)),), (0,)).reshape(())
    return apply(LogSoftmaxBackward0, (_floating(input),), (_wrap_dim(dim, input.ndim),))


def _implicit_dim(name, input, dim):
    """F.softmax(x) without dim: torch's deprecated implicit choice (0 for 0-, 1- and 3-d inputs,
    else 1), with its warning."""
    if dim is not None:
        return dim
    import warnings
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  f"as an argument.", UserWarning, stacklevel=3)
    return 0 if getattr(input, "ndim", 0) in (0, 1, 3) else 1


def _floating(t):
    return t if t.dtype.is_floating_point else t.to(_dt.DEFAULTS.float)


@op(differentiable=False, category="reduction")
def all(input, dim=None, keepdim=False):
    """True where every element is non-zero (over ``dim`` if given)."""
    xp = input._backend.xp
    axis = None if dim is None else dims(dim, input.ndim)
    return Tensor._make(xp.all(input._data, axis=axis, keepdims=keepdim), input._backend)


@op(differentiable=False, category="reduction")
def any(input, dim=None, keepdim=False):
    """True where some element is non-zero (over ``dim`` if given)."""
    xp = input._backend.xp
    axis = None if dim is None else dims(dim, input.ndim)
    return Tensor._make(xp.any(input._data, axis=axis, keepdims=keepdim), input._backend)


def _arg_extreme(input, dim, keepdim, pick):
    xp = input._backend.xp
    if dim is None:
        if input.numel() == 0:
            raise ShapeError(f"{pick}(): Expected reduction dim to be specified for input.numel() == 0.")
        flat = xp.reshape(input._data, (-1,))
        out = getattr(xp, pick)(flat)
        out = xp.reshape(xp.asarray(out, dtype=input._backend.dtype("int64")), (1,) * input.ndim if keepdim else ())
        return Tensor._make(out, input._backend)
    d = _wrap_dim(dim, _builtins.max(input.ndim, 1))
    data = input._data if input.ndim else xp.reshape(input._data, (1,))
    out = xp.asarray(getattr(xp, pick)(data, axis=d, keepdims=keepdim), dtype=input._backend.dtype("int64"))
    return Tensor._make(out if input.ndim else xp.reshape(out, ()), input._backend)


@op(differentiable=False, category="reduction")
def argmax(input, dim=None, keepdim=False):
    """Index of the largest element (over ``dim`` if given; of the flattened tensor otherwise)."""
    return _arg_extreme(input, dim, keepdim, "argmax")


@op(differentiable=False, category="reduction")
def argmin(input, dim=None, keepdim=False):
    """Index of the smallest element (over ``dim`` if given; of the flattened tensor otherwise)."""
    return _arg_extreme(input, dim, keepdim, "argmin")


# -- sort, topk, kthvalue, median: values picked by a sort's indices ----------------------------------
#
# One stable sort serves them all (ties keep their order, NaN is the largest, as torch's stable=True);
# each node keeps the indices it picked, and its backward scatters the gradient back to them
# (torch's value_selecting_reduction_backward).

def _pick(xp, x, dim, indices, keepdim=True):
    """``x``'s values at ``indices`` along ``dim`` (``indices`` without that dim: one per row)."""
    if x.__class__ is _ndarray and x.ndim:  # NumPy: take_along_axis's indexing, as one take of the flat positions
        if keepdim or indices.ndim:
            return x.take(along_axis_flat(x.shape, dim, indices, keepdim))
        shape = indices.shape
        return x[along_axis_key(x.shape, dim, indices.reshape(shape[:dim] + (1,) + shape[dim:]))].reshape(shape)
    if x.ndim == 0:
        return xp.asarray(x, copy=True)
    idx = indices if keepdim else xp.expand_dims(indices, axis=dim)
    out = xp.take_along_axis(x, idx, axis=dim)
    return out if keepdim else xp.squeeze(out, axis=dim)


def _sorted_indices(xp, x, dim, descending):
    """Stable sort order along ``dim``; descending: of the flipped array, flipped back, so that
    ties still keep their order and NaN comes first."""
    if x.__class__ is _ndarray:  # NumPy: the same sorts, the flips as basic keys (the result a view)
        if not descending:
            return x.argsort(axis=dim, stable=True)
        key = reversed_key(x.ndim, dim)
        order = x[key].argsort(axis=dim, stable=True)  # (n - 1) - order: in place, a 0-d n - 1
        return _subtract(intp_scalar(x.shape[dim] - 1), order, out=order)[key]
    if not descending:
        return xp.argsort(x, axis=dim, stable=True)
    n = x.shape[dim]
    return (n - 1) - xp.flip(xp.argsort(xp.flip(x, axis=dim), axis=dim, stable=True), axis=dim)


def _median_all(xp, x):
    flat = xp.reshape(x, (-1,))
    if flat.shape[0] == 0:
        return xp.asarray(float("nan"), dtype=x.dtype)
    ordered = xp.sort(flat, stable=True)
    last = ordered[-1]  # NaN sorts last: any NaN makes the median NaN, as torch's
    return last if bool(last != last) else ordered[(flat.shape[0] - 1) // 2]


SortBackward0 = define_node("SortBackward0", attrs=("dim", "indices"),
                            self="F.value_selecting(grad, dim, indices, self_sizes, True)",
                            forward=_pick)
SortBackward1 = define_node("SortBackward1", attrs=("dim", "indices"),  # sort(stable=...): torch's sort.stable
                            self="F.value_selecting(grad, dim, indices, self_sizes, True)",
                            forward=_pick)
TopkBackward0 = define_node("TopkBackward0", attrs=("dim", "indices"),
                            self="F.value_selecting(grad, dim, indices, self_sizes, True)",
                            forward=_pick)
KthvalueBackward0 = define_node("KthvalueBackward0", attrs=("dim", "keepdim", "indices"),
                                self="F.value_selecting(grad, dim, indices, self_sizes, keepdim)",
                                forward=lambda xp, x, dim, keepdim, indices: _pick(xp, x, dim, indices, keepdim))
MedianBackward0 = define_node("MedianBackward0", self="evenly_distribute(F, grad, self, result)",
                              forward=lambda xp, x: _median_all(xp, x))
MedianBackward1 = define_node("MedianBackward1", attrs=("dim", "keepdim", "indices"),
                              self="F.value_selecting(grad, dim, indices, self_sizes, keepdim)",
                              forward=lambda xp, x, dim, keepdim, indices: _pick(xp, x, dim, indices, keepdim))


def _sort_dim(input, dim):
    d = _wrap_dim(dim, input.ndim)
    xp = input._backend.xp
    if input.ndim == 0:  # a 0-d tensor is its own sort: index 0
        return d, xp.zeros((), dtype=xp.int64)
    return d, _sorted_indices(xp, input._data, d, False)


def _k_of(fn, k):
    if isinstance(k, bool) or not isinstance(k, int):
        raise GradTypeError(f"{fn}(): argument 'k' (position 1) must be int, not {type(k).__name__}")
    return k


def _selected(name, cls, input, d, indices, attrs_before=()):
    """The values at ``indices`` (recorded as ``cls``) and the indices, as torch.return_types.<name>."""
    if indices.__class__ is _ndarray:  # NumPy: as below; the copies C-contiguous (the indices may be a reversed view)
        if indices.dtype != _INT64:
            indices = indices.astype(_INT64)
        elif not indices.flags.c_contiguous:  # a view of the sort's order: the node's own copy, read faster by _pick
            indices = indices.copy()
        attrs = attrs_before + (indices,)
        values = apply1(cls, input, input._data, attrs) if input.__class__ is Tensor else apply(cls, (input,), attrs)
        return ReturnTypes(name, values, Tensor._make(indices.copy(), input._backend))
    xp = input._backend.xp
    indices = xp.astype(indices, xp.int64, copy=False)  # (the tensor returned gets its own copy below)
    values = apply(cls, (input,), attrs_before + (indices,))
    return ReturnTypes(name, values, Tensor._make(xp.asarray(indices, copy=True), input._backend))


@op(SortBackward0, SortBackward1, category="reduction")
def sort(input, dim=-1, descending=False, *, stable=None):
    """(values, indices) sorted along ``dim``; a stable sort always (ties keep their order, NaN largest).
    Passing ``stable`` records SortBackward1, as torch's sort.stable overload."""
    d = _wrap_dim(dim, input.ndim)
    xp = input._backend.xp
    if input.ndim == 0:
        indices = xp.zeros((), dtype=xp.int64)
    else:
        indices = _sorted_indices(xp, input._data, d, bool(descending))
    return _selected("sort", SortBackward0 if stable is None else SortBackward1, input, d, indices, (d,))


@op(differentiable=False, category="reduction")
def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim`` (a stable sort always)."""
    return sort(input, dim, descending).indices


@op(TopkBackward0, category="reduction")
def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the ``k`` largest (``largest=False``: smallest) along ``dim``, in sorted order."""
    k = _k_of("topk", k)
    ndim = input.ndim
    d = _wrap_dim(dim, ndim)
    size = input._data.shape[d] if ndim else 1
    if not 0 <= k <= size:
        raise ShapeError("selected index k out of range")
    xp = input._backend.xp
    if ndim == 0:
        indices = xp.zeros((), dtype=xp.int64)
    else:
        indices = _sorted_indices(xp, input._data, d, largest is True or bool(largest))
        if k != size:
            indices = indices[(slice(None),) * d + (slice(0, k),)]
    return _selected("topk", TopkBackward0, input, d, indices, (d,))


def _has_nan(xp, t) -> bool:
    """Whether a floating tensor holds a NaN (a NumPy array's by one dot product: np.isnan(x).any() is two calls)."""
    data = t._data
    if data.__class__ is _ndarray:
        if data.dtype.kind != "f" or not data.size:
            return False
        # the sum of the squares is NaN exactly where an element is (every term is NaN, or >= 0
        # or +inf: no inf - inf), one dot product, cheaper than a reduction (np.minimum.reduce)
        flat = data.reshape(-1)
        total = flat.dot(flat)
        return bool(total != total)
    return t.dtype.is_floating_point and bool(xp.any(xp.isnan(data)))


def _kth(name, cls, input, k, dim, keepdim):
    """The k-th smallest (1-based) along ``dim``; median: the lower middle one, NaN where a row has one."""
    ndim = input.ndim
    d = _wrap_dim(dim, ndim)
    xp = input._backend.xp
    keep = keepdim is True or bool(keepdim)
    if ndim == 0:
        indices = xp.zeros((), dtype=xp.int64)
    else:
        size = input._data.shape[d]
        if name == "median" and size == 0:
            raise GradIndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
        if k is None:
            k = (size - 1) // 2 + 1
        elif not 1 <= k <= size:
            raise ShapeError(f"kthvalue(): selected number k out of range for dimension {d}")
        order = _sorted_indices(xp, input._data, d, False)
        lead = (slice(None),) * d
        if name == "median" and _has_nan(xp, input):
            # a row with NaN: its first NaN (sorted last)
            position = xp.full(tuple(s for i, s in enumerate(input.shape) if i != d), k - 1, dtype=xp.int64)
            nans = xp.sum(xp.astype(xp.isnan(input._data), xp.int64), axis=d)
            position = xp.where(nans > 0, size - nans, position)
            indices = xp.take_along_axis(order, xp.expand_dims(position, axis=d), axis=d)
            if not keep:
                indices = xp.squeeze(indices, axis=d)
        else:  # the k-th of every row: one position along d
            indices = order[lead + (slice(k - 1, k),)] if keep else order[lead + (k - 1,)]
    return _selected(name, cls, input, d, indices, (d, keep))


@op(KthvalueBackward0, category="reduction")
def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the ``k``-th smallest element along ``dim`` (``k`` from 1)."""
    return _kth("kthvalue", KthvalueBackward0, input, _k_of("kthvalue", k), dim, keepdim)


@op(MedianBackward0, MedianBackward1, category="reduction")
def median(input, dim=None, keepdim=False):
    """The lower median of all elements; with ``dim``, (values, indices) along it. NaN propagates."""
    if dim is None:
        return apply(MedianBackward0, (input,))
    return _kth("median", MedianBackward1, input, None, dim, keepdim)
