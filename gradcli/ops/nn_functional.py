"""``torch.nn.functional``'s losses, each one declaration with torch's node and formulas.

``F.relu``, ``F.sigmoid``, ``F.tanh``, ``F.softmax`` and ``F.log_softmax`` are the pointwise and
reduction ops of the same names (``F.relu`` with torch's ``inplace=``); this family adds the losses
a tensor-autograd tutorial uses.
Their category is "functional": the language maps ``F.<name>`` to them.

Each records what torch records: one node for mse_loss (MseLossBackward0),
binary_cross_entropy(_with_logits) and nll_loss (NllLossBackward0; NllLoss2DBackward0 for 4-d
inputs, a view to 4-d and back for other dims, as torch's nll_loss_nd); l1_loss is torch's
composite (Sub, Abs, then Mean or Sum); cross_entropy is log_softmax then nll_loss, or, with
class probabilities, -(log_softmax * target) summed (and divided by the batch size: DivBackward1);
label smoothing adds torch's smoothing term (MulBackward1, MaskedFillBackward0...).
Formulas follow torch's backward kernels operation for operation (same order of rounding).
Reductions are torch's ints (none 0, mean 1, sum 2), as ``_saved_reduction`` shows them.
"""

from __future__ import annotations

import warnings
from math import prod as _prod

import numpy as _np

from ..autograd.function import apply, apply1, apply2, guard_attrs, record2
from ..autograd.node import NODE_CLASSES, define_node, formula_helpers
from ..autograd.tensor import Tensor
from ..autograd.views import view_of
from ..errors import GradTypeError, KernelTypeError, ShapeError
from .pointwise import MaskedFillBackward0, MulBackward0, MulBackward1, NegBackward0, SubBackward0
from . import linalg as _linalg, pointwise as _pointwise, shape as _shape
from .reduction import LogSoftmaxBackward0, MeanBackward0, SumBackward0, SumBackward1, log_softmax
from .inplace import inplace_variant
from .registry import FUNCTIONS, as_tensor_arg, module_form, op
from ..backend.numpy_fast import greatest as _greatest, least as _least, scalars as _scalars

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
_EPSILON = 1e-12  # binary_cross_entropy_backward's floor for (1 - x) * x


def _reduce(xp, loss, reduction):
    if reduction == 1:
        if loss.__class__ is _ndarray and loss.size and loss.dtype.kind == "f" and loss.dtype.itemsize >= 4:
            return _ADD_REDUCE(loss, None) / loss.size  # mean_of's sum and division, without its layers
        return xp.mean(loss)
    return xp.sum(loss) if reduction == 2 else loss


def _reduction(reduction) -> int:
    if reduction not in _REDUCTIONS:
        raise GradTypeError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


# ------------------------------------------------------------------------------ mse_loss

MseLossBackward0 = define_node(
    "MseLossBackward0", inputs=("self", "target"), attrs=("reduction",), broadcasts=True,
    forward=lambda xp, x, t, reduction: _reduce(xp, (x - t) * (x - t), reduction),
    self="(2.0 / numel(self_sizes) if reduction == 1 else 2.0) * (self - target) * grad",
    target="(2.0 / numel(target_sizes) if reduction == 1 else 2.0) * (target - self) * grad")


def _size_warning(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size (torch.Size({list(target.shape)})) that is different to the input size "
                      f"(torch.Size({list(input.shape)})). This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.", UserWarning, stacklevel=3)


@op(MseLossBackward0, method=False, category="functional",
    namespaces=("torch.nn.functional",))
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mean squared error (x - target)**2, reduced by 'mean', 'sum' or 'none'."""
    target = as_tensor_arg(target, input, "target")
    _size_warning(input, target)
    return apply(MseLossBackward0, (input, target), (_reduction(reduction),))


@op(SubBackward0, NODE_CLASSES["AbsBackward0"], MeanBackward0, SumBackward0, method=False, category="functional",
    namespaces=("torch.nn.functional",))
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mean absolute error |x - target|, reduced by 'mean', 'sum' or 'none' (torch's composite)."""
    target = as_tensor_arg(target, input, "target")
    _size_warning(input, target)
    code = _reduction(reduction)
    loss = (input - target).abs()
    return loss.mean() if code == 1 else loss.sum() if code == 2 else loss


# ------------------------------------------------------------------------------ binary cross-entropy

def _bce_forward(xp, x, t, weight, reduction):
    with _np.errstate(divide="ignore"):  # log(0) is -inf, floored at -100
        loss = _bce_pointwise(xp, x, t)
    if weight is not None:
        loss = loss * weight
    return _reduce(xp, loss, reduction)


def _bce_pointwise(xp, x, t):
    # torch's kernel: (t - 1) * max(log1p(-x), -100) - t * max(log(x), -100)
    if _same_arrays(x, t):  # the same operations in place: 4 arrays fewer
        a = _np.negative(x)
        _np.log1p(a, a)
        _np.maximum(a, -100.0, out=a)
        b = _np.log(x)
        _np.maximum(b, -100.0, out=b)
        loss = t - 1
        loss *= a
        b *= t
        loss -= b
        return loss
    return (t - 1) * xp.maximum(xp.log1p(-x), -100.0) - t * xp.maximum(xp.log(x), -100.0)


def _same_arrays(x, t):
    """Two NumPy arrays (not 0-d) of one dtype and shape: what in-place arithmetic may combine."""
    return x.__class__ is _ndarray and t.__class__ is _ndarray and x.ndim and x.shape == t.shape \
        and x.dtype == t.dtype


def bce_grad(F, grad, x, t, weight, reduction):
    """binary_cross_entropy_backward: grad * (x - t) / max((1 - x) * x, eps), * weight, / numel."""
    if not F.differentiable and weight is None and _same_arrays(x, t) and grad.__class__ is _ndarray \
            and grad.dtype == x.dtype:
        floor = 1 - x  # the same operations in place (fmax: eps for NaN, as the where below)
        floor *= x
        _np.fmax(floor, _EPSILON, floor)
        out = x - t
        out *= grad
        out /= floor
        if reduction == 1:
            out /= _numel(x)
        return out
    floor = (1 - x) * x
    out = grad * (x - t) / F.where(floor > _EPSILON, floor, _EPSILON)
    if weight is not None:
        out = out * F.constant(weight)
    return out / _numel(x) if reduction == 1 else out


def bce_target_grad(F, grad, x, t, weight, reduction):
    """binary_cross_entropy_target_backward: -logit(x) * grad, * weight, / numel (an input of
    exactly 0 or 1 gives an infinite gradient, as torch's, without NumPy's divide warning)."""
    with _np.errstate(divide="ignore"):
        out = -F.log(x / (1 - x)) * grad
    if weight is not None:
        out = out * F.constant(weight)
    return out / _numel(x) if reduction == 1 else out


def _numel(x) -> int:
    n = 1
    for s in x.shape:
        n *= s
    return n


BinaryCrossEntropyBackward0 = define_node(
    "BinaryCrossEntropyBackward0", guarded=True, inputs=("self", "target"), attrs=("weight", "reduction"),
    forward=_bce_forward,
    self="bce_grad(F, grad, self, target, weight, reduction)",
    target="bce_target_grad(F, grad, self, target, weight, reduction)")


def _weight_array(weight, like):
    if weight is None:
        return None
    return as_tensor_arg(weight, like, "weight")._data


def _bce_weight(weight, shape):
    """torch's F.binary_cross_entropy: the weight expanded to the shape it broadcasts to with the
    target's (the view its node saves), with torch's messages where it cannot."""
    have = tuple(weight._data.shape)
    n = max(len(shape), len(have))
    a, b = (1,) * (n - len(shape)) + tuple(shape), (1,) * (n - len(have)) + have
    out = [0] * n
    for i in range(n - 1, -1, -1):
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            raise ShapeError(f"Attempting to broadcast a dimension of length {b[i]} at {i - n}! Mismatching argument at "
                             f"index 1 had torch.Size({list(have)}); but expected shape should be broadcastable to "
                             f"{list(shape)}")
        out[i] = a[i] if b[i] == 1 else b[i]
    if tuple(out) != tuple(shape):
        raise ShapeError(f"output with shape {list(shape)} doesn't match the broadcast shape {out}")
    return weight.expand(tuple(out))


def _same_size(input, target):
    if target._data.shape != input._data.shape:
        raise ShapeError(f"Using a target size (torch.Size({list(target.shape)})) that is different to the input "
                         f"size (torch.Size({list(input.shape)})) is deprecated. Please ensure they have the same size.")


@op(BinaryCrossEntropyBackward0, method=False, category="functional",
    namespaces=("torch.nn.functional",))
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)) for probabilities x in [0, 1] (logs floored at -100)."""
    target = as_tensor_arg(target, input, "target")
    _same_size(input, target)
    x, t = input._data, target._data
    host = input._backend.to_host(x)
    if host.size:
        low, high = _least(host), _greatest(host)
        if not (low >= 0 and high <= 1):  # NaN fails, as torch
            raise ShapeError("all elements of input should be between 0 and 1")
        if 0 < low and high < 1 and weight is None and input._backend is target._backend and _same_arrays(x, t):
            # no log of 0 can happen: the kernel without np.errstate's context (~0.8 us)
            code = _reduction(reduction)
            return record2(BinaryCrossEntropyBackward0, input, target, x, t,
                           _reduce(_np, _bce_pointwise(_np, x, t), code), (None, code))
    if weight.__class__ is Tensor and weight._data.shape != target._data.shape:
        weight = _bce_weight(weight, target._data.shape)
    return guard_attrs(apply(BinaryCrossEntropyBackward0, (input, target),
                          (_weight_array(weight, input), _reduction(reduction))), weight)


def _bce_logits_forward(xp, x, t, weight, pos_weight, reduction):
    # (1 - t) * x - log_sigmoid(x) [* (1 + (pos_weight - 1) * t)], log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|))
    log_sigmoid = xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * ((pos_weight - 1) * t + 1)
    loss = (1 - t) * x - log_sigmoid
    if weight is not None:
        loss = loss * weight
    return _reduce(xp, loss, reduction)


def _log_sigmoid(F, x):
    return F.where(x < 0, x, 0.0) - F.log(1 + F.exp(-F.abs(x)))


def bce_logits_grad(F, grad, x, t, weight, pos_weight, reduction, target_side=False):
    """binary_cross_entropy_with_logits_backward: (sigmoid(x) - t) * grad, with pos_weight
    ((pos_weight * t + 1 - t) * sigmoid(x) - pos_weight * t) * grad; target: -x * grad, with
    pos_weight (log_sigmoid(-x) - pos_weight * log_sigmoid(x)) * grad; then * weight, / numel."""
    if target_side:
        out = -x * grad if pos_weight is None else \
            (_log_sigmoid(F, -x) - _log_sigmoid(F, x) * F.constant(pos_weight)) * grad
    elif pos_weight is None:
        out = (1 / (1 + F.exp(-x)) - t) * grad
    else:
        pt = F.constant(pos_weight) * t
        out = ((pt + 1 - t) * (1 / (1 + F.exp(-x))) - pt) * grad
    if weight is not None:
        out = out * F.constant(weight)
    return out / _numel(x) if reduction == 1 else out


BinaryCrossEntropyWithLogitsBackward0 = define_node(
    "BinaryCrossEntropyWithLogitsBackward0", guarded=True, inputs=("self", "target"), attrs=("weight", "pos_weight", "reduction"),
    forward=_bce_logits_forward,
    self="bce_logits_grad(F, grad, self, target, weight, pos_weight, reduction)",
    target="bce_logits_grad(F, grad, self, target, weight, pos_weight, reduction, True)")


@op(BinaryCrossEntropyWithLogitsBackward0, method=False, category="functional",
    namespaces=("torch.nn.functional",))
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross-entropy on logits (sigmoid inside, computed stably); pos_weight weighs the positives."""
    target = as_tensor_arg(target, input, "target")
    _same_size(input, target)
    return guard_attrs(apply(BinaryCrossEntropyWithLogitsBackward0, (input, target),
                          (_weight_array(weight, input), _weight_array(pos_weight, input), _reduction(reduction))),
                    weight, pos_weight)


# ------------------------------------------------------------------------------ nll_loss, cross_entropy

def _nll_forward(xp, x, target, weight, total_weight, ignore_index, reduction):
    if reduction and weight is None and x.__class__ is _ndarray and x.ndim == 2 and target.__class__ is _ndarray \
            and total_weight == target.shape[0]:  # the usual call: every row picks (_picked's first case)
        picked = x[_rows(target.shape[0]), target]
        rows = None  # (all of them, in order)
    else:
        key, cols = _picked(xp, x.ndim, target, ignore_index, weight, total_weight)
        picked = x[key]
        if weight is not None:
            picked = weight[cols] * picked
        if reduction == 0:
            if x.ndim == 1:
                return xp.reshape(-xp.sum(picked), ())
            out = xp.zeros(target.shape, dtype=x.dtype)
            out[key[:1] + key[2:]] = -picked
            return out
        rows = key[0]
    if x.ndim == 2 and picked.__class__ is _ndarray and picked.dtype.kind == "f" and picked.dtype.itemsize >= 4 \
            and (weight is not None or total_weight <= 16777216):
        # torch's sum (its order of additions over the rows kept), then -(s / w) in Python floats,
        # rounded to the dtype once: for float32 the double quotient of two float32 values (w, a
        # count of rows exact in float32 up to 2**24, or torch's own float32 sum of the weights),
        # rounded to float32, is float32's own correctly rounded quotient (a double holds more than
        # twice float32's digits): the bits of torch's division
        total = -float(_cascade_sum(picked, rows)) or 0.0  # (a zero sum: +0.0, as torch's)
        if reduction == 1:
            if total_weight:
                total = total / total_weight
            else:  # no row kept (0 / 0: NaN), or weights that cancel out: as the dtype divides
                with _np.errstate(divide="ignore", invalid="ignore"):
                    total = _np.float64(total) / _np.float64(total_weight)
        return _np.array(total, picked.dtype)
    if picked.__class__ is _ndarray and picked.ndim == 1:
        # the sum kept as a 1-element array, negated and divided in place (a NumPy scalar's
        # arithmetic costs more than the reduction): the same float32 operations as below
        total = _ADD_REDUCE(picked, 0, None, None, True)
        if reduction == 1:
            total /= -total_weight  # -(s / w) == s / -w; w is cast to the array's dtype (NEP 50)
        else:
            _np.negative(total, total)
        return total.reshape(())
    total = -xp.sum(picked)
    return total / xp.asarray(total_weight, dtype=x.dtype) if reduction == 1 else total


def _cascade_sum(d, rows=None):
    """The sum of the 1-d float array ``d`` (the values nll_loss picks, of the rows ``rows``, in
    order; None: every row, 0 to n - 1) as torch's nll_loss adds them up, bit for bit: a cascade of
    8 partial sums (LossNLL.cpp, for fewer than 2**32 rows). Each value kept adds to the first level
    in order; after the value of a row that is a multiple of 16, that level's sum passes one level
    up (and is zeroed), after a multiple of 256 the next level's too, and so on (row 0 passes
    through every level to the last); an ignored row adds nothing and passes nothing. At the end
    the levels are added from the first to the last. With every row kept and up to 16 rows that is
    ``(d1 + d2 + ... + d[n-1]) + d0``. A NumPy scalar of d's dtype; torch adds the values negated,
    and negation commutes with rounding (the caller takes care of a zero's sign). NumPy's sum would
    pair the values differently from 9 on."""
    n = d.shape[0]
    if rows is None:
        if n <= 16:
            if n <= 2:  # (two values: one addition, without accumulate's array)
                return d[1] + d[0] if n == 2 else d[0]
            return _ACCUMULATE(d[1:])[-1] + d[0]
        return _cascade_of_every_row(d)
    if not n:
        return d.dtype.type(0)
    parts = []
    values, at = d, rows
    step = 16
    for _ in range(7):  # levels 0 to 6: what is left in each, and the sums passed up, with their rows
        ends = _np.flatnonzero(at % step == 0)
        sums = []
        start = 0
        for end in ends.tolist():
            sums.append(_ACCUMULATE(values[start:end + 1])[-1])
            start = end + 1
        if start < values.shape[0]:
            parts.append(_ACCUMULATE(values[start:])[-1])
        values, at = _np.array(sums, d.dtype), at[ends]
        step *= 16
    if values.shape[0]:
        parts.append(_ACCUMULATE(values)[-1])  # the last level keeps all it is given
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


_ACCUMULATE = _np.add.accumulate  # (in order: NumPy's reduce pairs values from 9 on)


def _cascade_of_every_row(d):
    """_cascade_sum of every row (n > 16), a level at a time with no loop over the rows: a level's
    values are row 0's (v0, which passes through every level to the last) and then one for each
    16 ** level rows (``rest``): full groups of 16, then a tail of fewer. Each group's sum, in order,
    passes up; the tail's sum stays as the level's part."""
    n = d.shape[0]
    if n <= 256:  # two levels: (the tail's sum + the groups' sums in order) + v0
        full = (n - 1) >> 4
        end = 1 + (full << 4)
        sums = _group_sums(d[1:end], full)
        total = _ACCUMULATE(sums)[-1] if full > 1 else sums[0]
        if end < n:
            total = _ACCUMULATE(d[end:])[-1] + total
        return total + d[0]
    parts = []
    rest = d[1:]
    for _ in range(7):  # levels 0 to 6; the last keeps all it is given
        k = rest.shape[0]
        full = k >> 4
        end = full << 4
        if end < k:
            parts.append(_ACCUMULATE(rest[end:])[-1])
        if not full:
            rest = None
            break
        rest = _group_sums(rest[:end], full)
    parts.append(d[0] if rest is None else _ACCUMULATE(_np.concatenate((d[:1], rest)))[-1])
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _group_sums(values, full):
    """The sums of ``full`` consecutive groups of 16 of ``values``, each added in order: along the
    groups (accumulate), or for many groups across their transposed copy (a reduction down its 16
    rows adds them in order too, and in 16 whole-array passes; a group of zeros gives +0.0 there,
    -0.0 by accumulate: the loss's zero is +0.0 either way)."""
    groups = values.reshape(full, 16)
    if full < 16:
        return _ACCUMULATE(groups, 1)[:, -1]
    return _ADD_REDUCE(groups.T.copy(), 0)


def _picked(xp, ndim, target, ignore_index, weight, total_weight):
    """Where each target not ignored picks from the input: the index key (batch index, class,
    then the positions of the other dims; just the class for a 1-d input), and the classes."""
    if ndim == 1:
        cols = xp.reshape(target, (-1,))[xp.reshape(target, (-1,)) != ignore_index]
        return (cols,), cols
    if ndim == 2 and target.__class__ is _ndarray and weight is None and total_weight == target.shape[0]:
        # without weights total_weight counts the targets kept: all of them, so every row picks,
        # in order (what the mask and nonzero below find), with no mask to make
        return (_rows(target.shape[0]), target), target
    where = xp.nonzero(target != ignore_index)
    cols = target[where]
    return (where[0], cols) + tuple(where[1:]), cols


def nll_grad(F, grad, sizes, target, weight, total_weight, ignore_index, reduction):
    """nll_loss_backward: -(grad / total_weight) (mean) or -grad, times weight[target], placed at
    each row's target."""
    key, cols = _picked(F.backend.xp, len(sizes), target, ignore_index, weight, total_weight)
    if reduction and weight is None and not F.differentiable:  # arrays: the one value placed directly
        out = F.backend.xp.zeros(tuple(sizes), dtype=grad.dtype)
        if grad.__class__ is _ndarray and grad.dtype.kind == "f" \
                and 0 < total_weight <= (2048 if grad.dtype.itemsize == 2 else 16777216):
            # the 0-d gradient as a Python float: the quotient in double precision, rounded to the
            # array's dtype as it is stored, is the dtype's own correctly rounded quotient (a double
            # holds more than twice a float32's or float16's digits), so the same bits as g / -w,
            # without a ufunc call -- where w, a count of targets, is exact in the dtype as NumPy
            # casts it (integers up to 2048 in float16, 2**24 in float32)
            value = float(grad)
            out[key] = value / -total_weight if reduction == 1 else -value
        elif F.backend.native:
            out[key] = grad / -total_weight if reduction == 1 else -grad  # g / -w is -(g / w), bit for bit
        else:  # an array-API namespace: no advanced-index assignment
            out = F.backend.put(out, key, grad / -total_weight if reduction == 1 else -grad)
        return out
    count = int(cols.shape[0])
    if reduction == 0:
        g = F.take(grad, key[:1] + key[2:]) if len(sizes) > 1 else F.expand(F.reshape(grad, (1,)), (count,))
        value = -g if weight is None else F.constant(-weight[cols]) * g
    else:
        g = -(grad / total_weight) if reduction == 1 else -grad
        g = F.expand(F.reshape(g, (1,)), (count,))
        value = g if weight is None else F.constant(weight[cols]) * g
    return F.embed(value, sizes, key, False)


_NLL = dict(attrs=("target", "weight", "total_weight", "ignore_index", "reduction"), forward=_nll_forward, guarded=True,
            self="nll_grad(F, grad, self_sizes, target, weight, total_weight, ignore_index, reduction)")
NllLossBackward0 = define_node("NllLossBackward0", **_NLL)
NllLoss2DBackward0 = define_node("NllLoss2DBackward0", **_NLL)  # torch's name for (N, C, H, W) inputs



_ADD_REDUCE = _np.add.reduce
_MASK53 = _np.uint64((1 << 53) - 1)
_INT64 = _np.dtype("int64")
_ndarray = _np.ndarray
_arange = _np.arange
_SCALAR_TYPES = {"float32": "Float", "float64": "Double", "float16": "Half", "int32": "Int", "bool": "Bool"}


def _rows(n):
    """0, 1, ..., n - 1 (read-only, kept per n: every nll_loss of a batch size indexes with it)."""
    found = _ROWS.get(n)
    if found is None:
        if len(_ROWS) >= 256:
            _ROWS.clear()
        found = _ROWS[n] = _arange(n)
        found.flags.writeable = False
    return found


_ROWS: dict = {}


def _usual_call(data, t, ignore_index, reduction):
    """NllLossBackward0's attributes for nll_loss's usual call -- (N, C) float logits on NumPy,
    (N,) int64 classes, no weight, a negative ignore_index -- checked by the targets' least element: no
    target negative means none is ignored and every row picks. (A target >= C makes NumPy's
    indexing in the forward raise IndexError before any node is recorded: the general path then
    says which target.) None for any other call."""
    if data.__class__ is _ndarray and t.__class__ is _ndarray and ignore_index.__class__ is int \
            and ignore_index < 0 and reduction.__class__ is str:
        shape = data.shape
        if len(shape) == 2 and t.shape == shape[:1] and shape[0] and t.dtype is _INT64 and data.dtype.kind == "f":
            code = _REDUCTIONS.get(reduction)  # (an int64 array's dtype is NumPy's one int64 dtype object)
            if code is not None and _least(t) >= 0:
                return t, None, float(shape[0]), ignore_index, code
    return None


def _check_nll(input, target):
    if not isinstance(target, Tensor):
        raise GradTypeError(f"nll_loss(): argument 'target' (position 2) must be Tensor, not {type(target).__name__}")
    n, k = input.ndim, target.ndim
    if n == 2 and k == 1 and target._data.shape[0] == input._data.shape[0]:
        pass  # (N, C) logits and (N,) classes: every shape check below passes
    elif n < 1:
        raise ShapeError("input tensor should be 1D or 2D")
    elif n <= 2 and k > 1:
        raise ShapeError("0D or 1D target tensor expected, multi-target not supported")
    elif n == 2:
        raise ShapeError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if k else 0}).")
    elif n == 1 and k != 0:
        raise ShapeError("0D or 1D target tensor expected, multi-target not supported")
    elif n > 2 and tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        raise ShapeError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, got {list(target.shape)}")
    if target._data.dtype is not _INT64 and target.dtype.name != "int64":  # (a NumPy dtype, or another namespace's)
        raise GradTypeError(f"expected target dtype to be Long or Byte, but got "
                            f"{_SCALAR_TYPES.get(target.dtype.name, target.dtype.name)}")


def _valid_targets(host_t, classes, ignore_index):
    """The targets that are not ``ignore_index`` (all of them, without a mask, when every target is
    a class and ignore_index is not one), after torch's bounds check."""
    if host_t.size and not 0 <= ignore_index < classes and _least(host_t) >= 0 \
            and _greatest(host_t) < classes:
        return host_t
    valid = host_t[host_t != ignore_index]
    if valid.size and (_least(valid) < 0 or _greatest(valid) >= classes):  # no mask
        bad = valid[(valid < 0) | (valid >= classes)]
        raise ShapeError(f"Target {int(bad[0])} is out of bounds.")
    return valid


@op(NllLossBackward0, NllLoss2DBackward0, method=False, category="functional",
    namespaces=("torch.nn.functional",))
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood: -input[i, target[i]] (times weight[target]), for log-probabilities;
    inputs (C,), (N, C) or (N, C, d1, ...) with targets (), (N,) or (N, d1, ...)."""
    if weight is None and input.__class__ is Tensor and target.__class__ is Tensor:
        attrs = _usual_call(input._data, target._data, ignore_index, reduction)
        if attrs is not None:
            try:
                return guard_attrs(apply1(NllLossBackward0, input, input._data, attrs), target)
            except IndexError:
                pass  # a target >= C: named below
    _check_nll(input, target)
    code = _reduction(reduction)
    if input.ndim in (3,) or input.ndim > 4:  # torch's nll_loss_nd: as (N, C, 1, -1), the loss viewed back
        n, c = input.shape[0], input.shape[1]
        out = nll_loss(input.view(n, c, 1, -1), target.view(n, 1, -1), weight, ignore_index=ignore_index,
                       reduction=reduction)
        return out.view((n,) + tuple(input.shape[2:])) if code == 0 else out
    host_t = target._backend.to_host(target._data).reshape(-1)
    classes = input._data.shape[1 if input.ndim > 1 else 0]
    valid = _valid_targets(host_t, classes, ignore_index)
    w = _weight_array(weight, input)
    if w is not None and tuple(w.shape) != (classes,):
        raise ShapeError(f"weight tensor should be defined either for all {classes} classes or no classes but got "
                         f"weight tensor of shape: {list(w.shape)}")
    host_w = None if w is None else input._backend.to_host(w)
    if host_w is None:
        total = float(valid.size)
    elif input.ndim == 2 and host_w.dtype.kind == "f" and host_w.dtype.itemsize >= 4:  # torch's cascade, as the loss's
        kept = _rows(host_t.shape[0]) if valid is host_t else _np.flatnonzero(host_t != ignore_index)
        total = float(_cascade_sum(host_w[valid], kept))
    else:
        total = float(host_w[valid].astype(host_w.dtype).sum())
    node = NllLoss2DBackward0 if input.ndim == 4 else NllLossBackward0
    return guard_attrs(apply(node, (input,), (target._data, w, total, ignore_index, code)), target, weight)


formula_helpers(bce_grad=bce_grad, bce_target_grad=bce_target_grad, bce_logits_grad=bce_logits_grad,
                nll_grad=nll_grad)

DivBackward1 = define_node("DivBackward1", attrs=("other",), self="grad / other",
                           forward=lambda xp, x, other: x / other)
# (The C++ forms torch's label smoothing records, MulBackward1 and MaskedFillBackward0, are pointwise's.)


@op(LogSoftmaxBackward0, NllLossBackward0, NllLoss2DBackward0, MulBackward0, SumBackward0, SumBackward1, NegBackward0,
    DivBackward1, MulBackward1, MaskedFillBackward0, method=False, category="functional",
    namespaces=("torch.nn.functional",))
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross-entropy of logits: class indices (log_softmax then nll_loss) or class probabilities;
    label_smoothing mixes in the uniform distribution, as torch."""
    if weight is None and label_smoothing == 0.0 and input.__class__ is Tensor and target.__class__ is Tensor:
        data = input._data
        attrs = _usual_call(data, target._data, ignore_index, reduction)
        if attrs is not None:
            # nll_loss's usual call on (N, C) logits: log_softmax's node over dim 1, then nll_loss's
            # (the general path's nodes; nll_loss names a target >= C itself)
            logp = apply1(LogSoftmaxBackward0, input, data, (1,))
            try:
                return guard_attrs(apply1(NllLossBackward0, logp, logp._data, attrs), target)
            except IndexError:
                return nll_loss(logp, target, ignore_index=ignore_index, reduction=reduction)
    for what, value in (("input", input), ("target", target)):
        if not isinstance(value, Tensor):
            raise GradTypeError(f"cross_entropy(): argument '{what}' (position {1 if what == 'input' else 2}) must be "
                                f"Tensor, not {_type_name(value)}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ShapeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input._data.ndim == 1 else 1
    logp = log_softmax(input, class_dim)
    if target._data.shape == input._data.shape:  # torch: same shape = probabilities
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / input.shape[class_dim]
        return _soft_cross_entropy(logp, target, weight, _reduction(reduction), class_dim)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing > 0:
        smooth = _smooth_loss(logp, target, weight, ignore_index, _reduction(reduction), class_dim)
        loss = apply(MulBackward1, (loss,), (1 - label_smoothing,)) + \
            apply(MulBackward1, (smooth,), (label_smoothing / input.shape[class_dim],))
    return loss


def _type_name(value) -> str:
    return "function" if callable(value) and not isinstance(value, type) else type(value).__name__


def _smooth_loss(logp, target, weight, ignore_index, code, class_dim):
    """torch's label-smoothing term: -(sum over classes of logp [* weight]), ignored targets
    zeroed, then reduced (the mean over the targets kept, or their weights)."""
    if weight is not None:
        shape = [1] * logp.ndim
        shape[class_dim] = logp.shape[class_dim]
        weight = as_tensor_arg(weight, logp, "weight")
        smooth = -(logp * weight.reshape(tuple(shape))).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    ignored = target._data == ignore_index
    smooth = apply(MaskedFillBackward0, (smooth,), (ignored, 0.0))
    if code == 0:
        return smooth
    if code == 2:
        return smooth.sum()
    kept = target._data[~ignored]
    if weight is not None:
        from ..autograd.factory import tensor
        w = weight._backend.to_host(weight._data)[weight._backend.to_host(kept)]
        return smooth.sum() / tensor(w.sum(dtype=w.dtype).item(), dtype=weight.dtype.name)
    from ..autograd.factory import tensor
    return smooth.sum() / tensor(int((~ignored).sum()))


def _soft_cross_entropy(logp, target, weight, code, class_dim):
    """torch's cross_entropy with probabilities: -(logp * target) summed over classes, then reduced."""
    if tuple(target.shape) != tuple(logp.shape):
        raise ShapeError(f"Expected target size {list(logp.shape)}, got {list(target.shape)}")
    if weight is not None:
        shape = [1] * logp.ndim
        shape[class_dim] = logp.shape[class_dim]
        logp = logp * as_tensor_arg(weight, logp, "weight").reshape(tuple(shape))
    product = logp * target
    if code == 0:
        return -product.sum(class_dim)
    total = -product.sum()
    if code == 2:
        return total
    return apply(DivBackward1, (total,), (logp.numel() / logp.shape[class_dim],))


def relu(input, inplace=False):
    """torch.nn.functional.relu: ``inplace=True`` is ``input.relu_()`` (ReluBackward0 either way)."""
    return FUNCTIONS["relu_"].fn(input) if inplace else _pointwise.relu(input)


module_form("torch.nn.functional", relu)


# ------------------------------------------------------------------------------ activations

# Each is one node with torch's name whose formula is torch's fused backward (``F.gelu_backward``...):
# under create_graph that records torch's *BackwardBackward0 node, declared beside it with
# derivatives.yaml's two formulas (grad_output, self). Constants are torch's (M_SQRT1_2, kBeta...).
_SQRT1_2 = 0.7071067811865476
_PDF = 0.3989422804014327  # M_2_SQRTPI * M_SQRT1_2 * 0.5: 1 / sqrt(2 pi)
_GELU_BETA = 0.7978845608028654  # M_SQRT2 * M_2_SQRTPI * 0.5: sqrt(2 / pi)
_GELU_KAPPA = 0.044715


_GELU_TANH = (0.5, 1, _GELU_BETA, _GELU_KAPPA, 3 * _GELU_KAPPA)  # (3 * kappa: Python's product, as below)

# The NumPy forms below (float32/float64 arrays: ``_scalars``) make the general form's operations in
# the same order on the same operands, its Python numbers as 0-d arrays of the input's dtype (the
# same bits), into arrays they made themselves (``out=``): the same values with fewer arrays.
_multiply, _add, _subtract, _divide = _np.multiply, _np.add, _np.subtract, _np.divide
_minimum, _exp, _tanh, _where, _copyto = _np.minimum, _np.exp, _np.tanh, _np.where, _np.copyto


def _gelu(xp, x, approximate):
    if approximate == "tanh":
        c = _scalars(x, _GELU_TANH)
        if c is not None:
            half, one, beta, kappa, _ = c
            a = x * x
            a *= x
            _multiply(kappa, a, a)
            _add(x, a, a)
            _multiply(beta, a, a)
            _tanh(a, a)
            _add(one, a, a)
            out = half * x
            out *= a
            return out
        return 0.5 * x * (1 + xp.tanh(_GELU_BETA * (x + _GELU_KAPPA * (x * x * x))))
    return x * 0.5 * (1 + _pointwise._erf(xp, x * _SQRT1_2))


def gelu_grad(xp, g, x, approximate):
    """gelu_backward: grad * (cdf + x * pdf), or the tanh form's derivative."""
    if approximate == "tanh":
        c = _scalars(x, _GELU_TANH)
        if c is not None:
            half, one, beta, kappa, kappa3 = c
            x_sq = x * x
            t = _multiply(kappa, x_sq)
            t *= x
            _add(x, t, t)
            _multiply(beta, t, t)
            _tanh(t, t)
            d = t * t
            _subtract(one, d, d)  # 1 - t * t
            right = half * x
            right *= d
            _multiply(kappa3, x_sq, x_sq)
            _add(one, x_sq, x_sq)
            _multiply(beta, x_sq, x_sq)
            right *= x_sq
            _add(one, t, t)
            _multiply(half, t, t)
            t += right
            return g * t
        x_sq = x * x
        inner = _GELU_BETA * (x + _GELU_KAPPA * x_sq * x)
        t = xp.tanh(inner)
        right = 0.5 * x * (1 - t * t) * (_GELU_BETA * (1 + 3 * _GELU_KAPPA * x_sq))
        return g * (0.5 * (1 + t) + right)
    cdf = 0.5 * (1 + _pointwise._erf(xp, x * _SQRT1_2))
    return g * (cdf + x * (xp.exp(-0.5 * (x * x)) * _PDF))


def gelu_second(F, x, approximate):
    """gelu''(x) (gelu_double_backward without the gradients): pdf * (2 - x^2), or the tanh form's."""
    if approximate == "tanh":
        x_sq = x * x
        t = F.tanh(_GELU_BETA * (x + _GELU_KAPPA * x_sq * x))
        du = _GELU_BETA * (1 + 3 * _GELU_KAPPA * x_sq)
        return (1 - t * t) * (du + 0.5 * x * (_GELU_BETA * 6 * _GELU_KAPPA * x - 2 * t * du * du))
    return F.exp(-0.5 * (x * x)) * _PDF * (2 - x * x)


def _leaky_relu(xp, x, slope):
    c = _scalars(x, (slope, 0))
    if c is not None:
        out = _multiply(x, c[0])
        _copyto(out, x, where=x > c[1])  # where(x > 0, x, x * slope), as softplus's
        return out
    return xp.where(x > 0, x, x * slope)


def leaky_relu_grad(xp, g, x, slope, is_result=False):
    c = _scalars(g, (slope, 0))  # (g's dtype: the slope multiplies g)
    if c is not None:
        return _where(x > c[1], g, g * c[0])
    return xp.where(x > 0, g, g * slope)


def elu_grad(xp, g, x, alpha, is_result=False):
    """elu_backward (scale and input_scale 1): x is the input, or with ``is_result`` the output."""
    c = _scalars(x, (alpha, 0))
    if c is not None:
        a, zero = c
        neg = x + a if is_result else _exp(x)
        if not is_result:
            _multiply(a, neg, neg)
        return _where(x <= zero, g * neg, g)
    neg = g * (x + alpha) if is_result else g * (alpha * xp.exp(x))
    return xp.where(x <= 0, neg, g)


def softplus_grad(xp, g, x, beta, threshold):
    """g where x * beta > threshold, else g * z / (z + 1), z = exp(x * beta) (``_exp_below``)."""
    c = _scalars(x, (beta, threshold, 1)) if threshold < 80 else None  # (_exp_below's exp of the minimum)
    if c is not None:
        b, th, one = c
        xb = x if beta == 1 else x * b
        z = _minimum(xb, th)
        _exp(z, z)
        return _where(xb > th, g, g * z / _add(z, one))
    xb = x if beta == 1 else x * beta
    z = _exp_below(xp, xb, threshold)
    return xp.where(xb > threshold, g, g * z / (z + 1))


def _exp_below(xp, xb, threshold):
    """exp(x * beta) where softplus uses it (at most ``threshold``; elsewhere x itself is picked):
    exp of at most the threshold where that is finite (the same values where they are used, and no
    overflow to silence with np.errstate, which costs more than the rest), else exp with the
    overflow (to inf, as torch's) silenced."""
    if threshold < 80 and getattr(xb.dtype, "itemsize", 0) >= 4:  # exp(80) is finite in float32 and float64
        return xp.exp(xp.minimum(xb, threshold))
    with _np.errstate(over="ignore", invalid="ignore"):
        return xp.exp(xb)


def _hardtanh_forward(xp, x, lo, hi):
    c = _scalars(x, (lo, hi))
    if c is not None:
        out = _np.maximum(x, c[0])
        return _minimum(out, c[1], out=out)
    return xp.minimum(xp.maximum(x, lo), hi)


def hardtanh_grad(xp, g, x, lo, hi):
    c = _scalars(x, (lo, hi))
    if c is not None:
        lo, hi = c
    return xp.where((x <= lo) | (x >= hi), xp.zeros_like(g), g)


_ZERO_ONE = (0, 1)
_ONE = (1,)
_F16, _F32 = _np.dtype(_np.float16), _np.dtype(_np.float32)


def _logsigmoid(xp, x):
    c = _scalars(x, _ZERO_ONE)
    if c is not None:
        a = _np.abs(x)
        _np.negative(a, a)
        _exp(a, a)
        _np.log1p(a, a)
        return _subtract(_minimum(x, c[0]), a, a)
    return xp.minimum(x, xp.zeros_like(x)) - xp.log1p(xp.exp(-xp.abs(x)))


def log_sigmoid_grad(xp, g, x):
    """log_sigmoid_backward: grad * (max_deriv - sign * z / (1 + z)), z = exp(-|x|)."""
    c = _scalars(x, _ZERO_ONE)
    if c is not None:
        zero, one = c
        z = _np.abs(x)
        _np.negative(z, z)
        _exp(z, z)
        q = _add(one, z)
        _divide(z, q, q)  # z / (1 + z)
        _subtract(one, q, q, where=x < zero)  # 1 - z / (1 + z) where x < 0
        return g * q
    z = xp.exp(-xp.abs(x))
    neg = x < 0
    return g * xp.where(neg, 1 - z / (1 + z), z / (1 + z))


def silu_grad(F, grad, x):
    """torch's infinitely_differentiable_silu_backward: grad * s * (1 + x * (1 - s)), s = sigmoid(x)
    (its ``1 - s`` a C++ one: SubBackward0 under create_graph)."""
    if not F.differentiable and x.__class__ is _ndarray and x.dtype is _F16:  # in float32, as torch's kernel
        return silu_grad(F, grad.astype(_F32), x.astype(_F32)).astype(_F16)
    s = F.sigmoid(x)
    c = None if F.differentiable else _scalars(s, _ZERO_ONE)
    if c is not None:
        one = c[1]
        a = _subtract(one, s)
        _multiply(x, a, a)
        _add(one, a, a)
        return grad * s * a
    return grad * s * (1 + x * (F.filled(1, s) - s))


formula_helpers(gelu_second=gelu_second, silu_grad=silu_grad)

GeluBackward0 = define_node("GeluBackward0", attrs=("approximate",), forward=_gelu,
                            self="F.gelu_backward(grad, self, approximate)")
GeluBackwardBackward0 = define_node(
    "GeluBackwardBackward0", inputs=("grad_output", "self"), attrs=("approximate",), forward=gelu_grad,
    grad_output="F.gelu_backward(grad, self, approximate)",
    self="grad * grad_output * gelu_second(F, self, approximate)")


def _silu(xp, x):
    """torch's kernel, x / (1 + exp(-x)), with _sigmoid's denominator (4 ufunc calls; where exp(-x)
    overflows, silently -0.0, and NaN for -inf, as torch's; float16 in float32, rounded once)."""
    if x.__class__ is _ndarray and x.ndim:
        if x.dtype is _F16:
            return _silu(xp, x.astype(_F32)).astype(_F16)
        c = _scalars(x, _ONE)
        if c is not None:
            d, plain = _pointwise._one_plus_exp_neg(x, c[0])
            if plain:
                return _divide(x, d, d)
            with _np.errstate(invalid="ignore"):  # -inf / inf: NaN, as torch's
                return _divide(x, d, d)
    return x * _pointwise._sigmoid(xp, x)


SiluBackward0 = define_node("SiluBackward0", forward=_silu,
                            self="silu_grad(F, grad, self)")
LeakyReluBackward0 = define_node("LeakyReluBackward0", attrs=("negative_slope",),
                                 forward=_leaky_relu,
                                 self="F.leaky_relu_backward(grad, self, negative_slope, False)")
# leaky_relu_'s node: the derivative read from the result (torch's is_result=true)
LeakyReluBackward1 = define_node("LeakyReluBackward1", attrs=("negative_slope",),
                                 forward=_leaky_relu,
                                 self="F.leaky_relu_backward(grad, result, negative_slope, True)")
LeakyReluBackwardBackward0 = define_node(
    "LeakyReluBackwardBackward0", inputs=("grad_output", "self"), attrs=("negative_slope", "is_result"),
    forward=leaky_relu_grad,
    grad_output="F.leaky_relu_backward(grad, self, negative_slope, is_result)", self="F.zeros_like(grad)")


def _elu(xp, x, alpha):
    c = _scalars(x, (alpha, 0))
    if c is not None:
        a, zero = c
        neg = _minimum(x, zero)
        _np.expm1(neg, neg)
        _multiply(a, neg, neg)
        _copyto(neg, x, where=x > zero)  # where(x > 0, x, neg), as softplus's
        return neg
    return xp.where(x > 0, x, alpha * xp.expm1(xp.minimum(x, xp.zeros_like(x))))


EluBackward0 = define_node("EluBackward0", attrs=("alpha",), forward=_elu,
                           self="F.elu_backward(grad, self, alpha, False)")
EluBackward1 = define_node("EluBackward1", attrs=("alpha",), forward=_elu,
                           self="F.elu_backward(grad, result, alpha, True)")
# elu_double_backward: d/dx of the negative branch, where x < 0 (torch's strict mask)
EluBackwardBackward0 = define_node(
    "EluBackwardBackward0", inputs=("grad_output", "self_or_result"), attrs=("alpha", "is_result"), forward=elu_grad,
    grad_output="F.elu_backward(grad, self_or_result, alpha, is_result)",
    self_or_result="(grad * grad_output if is_result else F.elu_backward(grad * grad_output, self_or_result, alpha, "
                   "False)) * F.mask(self_or_result < 0, grad)")


def _softplus(xp, x, beta, threshold):
    """torch's kernel: x where x * beta > threshold, else log1p(exp(x * beta)) / beta (``_exp_below``);
    beta == 1 multiplies and divides by nothing (x * 1 and y / 1 are x and y)."""
    c = _scalars(x, (beta, threshold)) if threshold < 80 else None  # (_exp_below's exp of the minimum)
    if c is not None:
        b, th = c
        xb = x if beta == 1 else x * b
        out = _minimum(xb, th)
        _exp(out, out)
        _np.log1p(out, out)
        if beta != 1:
            _divide(out, b, out)
        _copyto(out, x, where=xb > th)  # where(xb > th, x, out), out being of x's dtype, shape and layout
        return out
    xb = x if beta == 1 else x * beta
    out = xp.log1p(_exp_below(xp, xb, threshold))
    return xp.where(xb > threshold, x, out if beta == 1 else out / beta)


SoftplusBackward0 = define_node("SoftplusBackward0", attrs=("beta", "threshold"), forward=_softplus,
                                self="F.softplus_backward(grad, self, beta, threshold)")
SoftplusBackwardBackward0 = define_node(
    "SoftplusBackwardBackward0", inputs=("grad_output", "self"), attrs=("beta", "threshold"), forward=softplus_grad,
    grad_output="F.softplus_backward(grad, self, beta, threshold)",
    self="F.sigmoid_backward(grad * grad_output, F.sigmoid(self * beta)) * F.mask(self * beta < threshold, grad) * beta")
HardtanhBackward0 = define_node("HardtanhBackward0", attrs=("min_val", "max_val"),
                                forward=_hardtanh_forward,
                                self="F.hardtanh_backward(grad, self, min_val, max_val)")
HardtanhBackwardBackward0 = define_node(
    "HardtanhBackwardBackward0", inputs=("grad_output", "self"), attrs=("min_val", "max_val"), forward=hardtanh_grad,
    grad_output="F.hardtanh_backward(grad, self, min_val, max_val)", self="F.zeros_like(grad)")
LogSigmoidBackward0 = define_node("LogSigmoidBackward0", forward=_logsigmoid,
                                  self="F.log_sigmoid_backward(grad, self)")
LogSigmoidBackwardBackward0 = define_node(
    "LogSigmoidBackwardBackward0", inputs=("grad_output", "self"), forward=log_sigmoid_grad,
    grad_output="F.log_sigmoid_backward(grad, self)",
    self="grad * grad_output * (F.sigmoid(self) - 1) * F.sigmoid(self)")


# the fused backward ops, as functions: TensorMath's, recording the nodes above
def gelu_backward(grad_output, self, approximate):
    return apply(GeluBackwardBackward0, (grad_output, self), (approximate,))


def leaky_relu_backward(grad_output, self, negative_slope, is_result):
    return apply(LeakyReluBackwardBackward0, (grad_output, self), (negative_slope, is_result))


def elu_backward(grad_output, self_or_result, alpha, is_result):
    return apply(EluBackwardBackward0, (grad_output, self_or_result), (alpha, is_result))


def softplus_backward(grad_output, self, beta, threshold):
    return apply(SoftplusBackwardBackward0, (grad_output, self), (beta, threshold))


def hardtanh_backward(grad_output, self, min_val, max_val):
    return apply(HardtanhBackwardBackward0, (grad_output, self), (min_val, max_val))


def log_sigmoid_backward(grad_output, self):
    return apply(LogSigmoidBackwardBackward0, (grad_output, self))


def _activation(node, input, kernel, attrs=()):
    """``apply(node, (input,), attrs)`` on the activation's input, a float tensor (integers refused
    with torch's ``kernel`` message); a float NumPy tensor, the usual call, goes straight to apply1
    (apply's one-tensor path), as _unary's ops do."""
    if input.__class__ is Tensor:
        data = input._data
        if data.__class__ is _ndarray and data.dtype.kind == "f":
            return apply1(node, input, data, attrs)
    input, data = _pointwise._unary_input(kernel, input, False, kernel)
    return apply1(node, input, data, attrs)


@op(GeluBackward0, method=False, category="functional", namespaces=("torch.nn.functional",))
def gelu(input, approximate="none"):
    """Gaussian error linear unit x * Phi(x); approximate='tanh' uses torch's tanh form."""
    if approximate not in ("none", "tanh"):
        raise ShapeError("approximate argument must be either none or tanh.")
    return _activation(GeluBackward0, input, "GeluKernelImpl", (approximate,))


@op(SiluBackward0, method=False, category="functional", namespaces=("torch.nn.functional",))
def silu(input, inplace=False):
    """x * sigmoid(x) (swish)."""
    if inplace:
        return _SILU_(input)
    return _activation(SiluBackward0, input, "silu_cpu")


def _leaky_relu_(input, negative_slope=0.01):
    return _activation(LeakyReluBackward1, input, "leaky_relu_cpu", (negative_slope,))


@op(LeakyReluBackward0, LeakyReluBackward1, method=False, category="functional", namespaces=("torch.nn.functional",))
def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x."""
    if inplace:
        return _LEAKY_RELU_(input, negative_slope)
    return _activation(LeakyReluBackward0, input, "leaky_relu_cpu", (negative_slope,))


def _elu_(input, alpha=1.0):
    return _activation(EluBackward1, input, "elu_cpu", (alpha,))


@op(EluBackward0, EluBackward1, method=False, category="functional", namespaces=("torch.nn.functional",))
def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    if inplace:
        return _ELU_(input, alpha)
    return _activation(EluBackward0, input, "elu_cpu", (alpha,))


@op(SoftplusBackward0, method=False, category="functional", namespaces=("torch.nn.functional",))
def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, x itself where beta * x > threshold."""
    return _activation(SoftplusBackward0, input, "softplus_cpu", (beta, threshold))


def _hardtanh(input, min_val=-1.0, max_val=1.0):
    if min_val > max_val:
        raise ShapeError("min_val cannot be greater than max_val")
    if input.__class__ is not Tensor:
        raise GradTypeError(f"hardtanh(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype.name == "bool":
        raise KernelTypeError("\"clamp_scalar_cpu\" not implemented for 'Bool'")
    return apply(HardtanhBackward0, (input,), (min_val, max_val))


@op(HardtanhBackward0, method=False, category="functional", namespaces=("torch.nn.functional",))
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val] (its gradient zero at the bounds, as torch's)."""
    return (_HARDTANH_ if inplace else _hardtanh)(input, min_val, max_val)


@op(HardtanhBackward0, method=False, category="functional", namespaces=("torch.nn.functional",))
def relu6(input, inplace=False):
    """min(max(x, 0), 6): torch's hardtanh(x, 0, 6) (HardtanhBackward0)."""
    return (_HARDTANH_ if inplace else _hardtanh)(input, 0.0, 6.0)


@op(LogSigmoidBackward0, method=False, category="functional", namespaces=("torch.nn.functional",))
def logsigmoid(input):
    """log(sigmoid(x)), computed stably."""
    return _activation(LogSigmoidBackward0, input, "log_sigmoid_cpu")


@op(NODE_CLASSES["AbsBackward0"], NODE_CLASSES["AddBackward0"], NODE_CLASSES["DivBackward0"], method=False,
    category="functional", namespaces=("torch.nn.functional",))
def softsign(input):
    """x / (|x| + 1) (torch's composite)."""
    return input / (input.abs() + 1)


@op(NODE_CLASSES["TanhBackward0"], SubBackward0, method=False, category="functional",
    namespaces=("torch.nn.functional",))
def tanhshrink(input):
    """x - tanh(x) (torch's composite)."""
    return input - input.tanh()


# torch's ``F.<name>(x, inplace=True)``: the out-of-place node recorded as an in-place change (the
# machinery of ``@op(inplace=True)``, without the Tensor method ``<name>_`` that torch lacks)
_SILU_ = inplace_variant(silu, "silu_")
_LEAKY_RELU_ = inplace_variant(_leaky_relu_, "leaky_relu_")
_ELU_ = inplace_variant(_elu_, "elu_")
_HARDTANH_ = inplace_variant(_hardtanh, "hardtanh_")


# ------------------------------------------------------------------------------ linear

@op(_linalg.AddmmBackward0, _linalg.MmBackward0, NODE_CLASSES["ViewBackward0"], NODE_CLASSES["UnsafeViewBackward0"],
    NODE_CLASSES["UnsqueezeBackward0"], NODE_CLASSES["SqueezeBackward4"], NODE_CLASSES["TBackward0"], method=False,
    category="functional", namespaces=("torch.nn.functional",))
def linear(input, weight, bias=None):
    """input @ weight.T + bias, recorded as torch records it (addmm on the rows, or matmul)."""
    wt = _shape.t(weight)
    if bias is None:
        return _linalg.matmul(input, wt)
    if input.ndim == 2:
        return _linalg.addmm(bias, input, wt)
    if input.ndim and input.is_contiguous():  # torch's _flatten_nd_linear: the rows as one matrix
        sizes = input._data.shape
        # (view_of: what view(-1, k) and view(*sizes[:-1], m) record, their arguments known good)
        out = _linalg.addmm(bias, view_of(_shape.ViewBackward0, input, ((_prod(sizes[:-1]), sizes[-1]),)), wt)
        return view_of(_shape.ViewBackward0, out, (tuple(sizes[:-1]) + (out._data.shape[-1],),))
    return _linalg.matmul(input, wt) + bias


# ------------------------------------------------------------------------------ dropout

@op(MulBackward0, method=False, category="functional", namespaces=("torch", "torch.nn.functional"))
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (training only);
    torch's CPU dropout: input * (bernoulli(1 - p) / (1 - p)), the mask drawn as torch draws it."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    data = input._data
    if p == 0 or not training or data.size == 0:
        return input  # torch returns the input itself
    from .creation import _gen
    dtype = data.dtype if data.__class__ is _ndarray else _np.dtype(input.dtype.name)
    if p == 1:
        noise = _np.zeros((), dtype=dtype)
    else:
        # bernoulli_(1 - p): one random64 per element, its 53 bits m as a double u = m * 2**-53 kept
        # where u < 1 - p, i.e. m < (1 - p) * 2**53 (scaling by a power of two is exact, and m, below
        # 2**53, is exact as a double); then div_(1 - p): 1 / (1 - p) in the dtype, or 0
        bits = _gen(None).random64(data.size) & _MASK53
        keep = (bits < (1 - p) * 2.0 ** 53).reshape(data.shape)
        noise = _np.multiply(keep, dtype.type(1) / dtype.type(1 - p))  # (bool times the dtype's scalar)
    if data.__class__ is _ndarray and not inplace:  # the product recorded directly (shapes and dtypes agree)
        return apply2(MulBackward0, input, Tensor._make(noise, input._backend), data, noise)
    noise = Tensor._make(input._backend.from_host(noise) if not input._backend.is_numpy else noise, input._backend)
    return input.mul_(noise) if inplace else input * noise
