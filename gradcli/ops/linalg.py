"""Matrix products. ``matmul`` decomposes into mm/mv/dot/bmm and views exactly as torch does,
so the graph a learner sees (``SqueezeBackward4``, ``UnsafeViewBackward0``...) is torch's."""

from __future__ import annotations

import numpy as _np

from ..errors import GradTypeError, KernelTypeError, RuntimeTypeError, ShapeError
from ..autograd.function import apply, apply1, apply2, apply3
from ..autograd.tensor import Tensor, _wrap_dim
from .registry import op
from ..limits import check_flops, check_numel
from ..autograd.node import define_node, formula_helpers
from .pointwise import _TYPE_META, MulBackward0, _broadcast_shapes, _check_broadcast, _is_kind, _operands, \
    _tensor_arguments
from .shape import (SqueezeBackward4, UnsafeViewBackward0, UnsqueezeBackward0, ViewBackward0, _unsafe_view, clone,
                    expand, reshape, squeeze, t, transpose, unsqueeze, view_of)

_NDARRAY = _np.ndarray

MmBackward0 = define_node("MmBackward0", inputs=("self", "mat2"),
                          self="F.mm(grad, F.t(mat2))", mat2="F.mm(F.t(self), grad)",
                          forward=lambda xp, a, b: xp.matmul(a, b))
MvBackward0 = define_node("MvBackward0", inputs=("self", "vec"),
                          self="F.outer(grad, vec)", vec="F.mv(F.t(self), grad)",
                          forward=lambda xp, a, v: xp.matmul(a, v))
DotBackward0 = define_node("DotBackward0", inputs=("self", "tensor"),
                           self="grad * tensor", tensor="grad * self",
                           forward=lambda xp, a, b: xp.sum(a * b))
BmmBackward0 = define_node("BmmBackward0", inputs=("self", "mat2"),
                           self="F.bmm(grad, F.mT(mat2))", mat2="F.bmm(F.mT(self), grad)",
                           forward=lambda xp, a, b: xp.matmul(a, b))


_CPP_NAMES = _TYPE_META  # torch's C++ type names, as its dtype checks print them
_SCALAR_TYPES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
                 "bool": "Bool"}


def _same_dtype(a, b, name):
    """torch's three wordings (mm's C++ type names, mv's addmv, dot's ScalarTypes)."""
    if a.dtype.name != b.dtype.name:
        x, y = a.dtype.name, b.dtype.name
        if name == "mm":
            raise GradTypeError(f"expected m1 and m2 to have the same dtype, but got: {_CPP_NAMES.get(x, x)} != "
                                f"{_CPP_NAMES.get(y, y)}")
        if name == "mv":
            v = _SCALAR_TYPES.get(y, y)
            raise GradTypeError(f"addmv input tensors must have the same dtype, but got {v}, "
                                f"{_SCALAR_TYPES.get(x, x)}, and {v}")
        raise GradTypeError(f"{name} : expected both vectors to have same dtype, but found {_SCALAR_TYPES.get(x, x)} "
                            f"and {_SCALAR_TYPES.get(y, y)}")


def _matrix_shapes(da, db, first: str, got: bool) -> tuple:
    """(n, k, m) of an (n, k) @ (k, m) product of two matrices, or torch's message: mm's ("self
    must be a matrix") and addmm's (which names mat1 and says "got N-D tensor")."""
    if da.ndim != 2 or db.ndim != 2:
        bad = da.ndim if da.ndim != 2 else db.ndim
        raise ShapeError(f"{first if da.ndim != 2 else 'mat2'} must be a matrix" + (f", got {bad}-D tensor" if got else ""))
    (n, k), (k2, m) = da.shape, db.shape
    if k != k2:
        raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    return n, k, m


@op(MmBackward0, category="linalg")
def mm(input, mat2):
    """Matrix product of two 2-d tensors."""
    _matrix_shapes(input._data, mat2._data, "self", False)
    return _mm(input, mat2)


def _mm(input, mat2):
    """MmBackward0 recorded on two matrices whose shapes were checked (mm's, and matmul's paths):
    the dtypes, the limits (a result no larger than an operand needs none), the time it takes."""
    da, db = input._data, mat2._data
    if da.dtype != db.dtype:
        _same_dtype(input, mat2, "mm")
    (n, k), m = da.shape, db.shape[1]
    if n * m > da.size and n * m > db.size:
        check_numel((n, m))
    check_flops(2 * n * k * m, "this matrix product")
    return apply2(MmBackward0, input, mat2, da, db)


@op(MvBackward0, category="linalg")
def mv(input, vec):
    """Matrix-vector product."""
    da, dv = input._data, vec._data
    if da.ndim != 2 or dv.ndim != 1:
        raise ShapeError(f"vector + matrix @ vector expected, got {dv.ndim}, {da.ndim}, {dv.ndim}")
    (n, k), k2 = da.shape, dv.shape[0]
    if k != k2:
        raise ShapeError(f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({k2})")
    if da.dtype != dv.dtype:
        _same_dtype(input, vec, "mv")
    return apply2(MvBackward0, input, vec, da, dv)


def _trace(xp, x):
    """The diagonal's sum as torch's trace_cpu adds it: in order, float32 in double and float16 in
    float (its acc_type), rounded once; integers to int64."""
    d = x.diagonal() if hasattr(x, "diagonal") else xp.linalg.diagonal(x)
    if x.__class__ is _np.ndarray:
        kind = x.dtype
        if kind.kind != "f":
            return _np.array(d.sum(dtype=_np.int64))
        wide = _np.float64 if kind.itemsize >= 4 else _np.float32
        total = _np.add.accumulate(d.astype(wide))[-1] if d.size else wide(0)
        return _np.array(total, dtype=kind)
    return xp.sum(d, dtype=None if _is_kind(xp, d, "f") else xp.int64)


def trace_grad(F, grad, sizes):
    """trace_backward as torch's: zeros of the matrix's size, the gradient at every (columns + 1)-th
    element (the main diagonal, flat), viewed as the matrix."""
    rows, cols = sizes
    count = min(rows, cols)
    flat = F.embed(F.expand(F.reshape(grad, (1,)), (count,)), (rows * cols,), _flat_diagonal(count, cols), False)
    return F.reshape(flat, tuple(sizes))


def _flat_diagonal(count, cols):
    key = (count, cols)
    found = _FLAT_DIAGONALS.get(key)
    if found is None:
        if len(_FLAT_DIAGONALS) >= 256:
            _FLAT_DIAGONALS.clear()
        index = _np.arange(0, count * (cols + 1), cols + 1)
        index.flags.writeable = False
        found = _FLAT_DIAGONALS[key] = (index,)
    return found


_FLAT_DIAGONALS: dict = {}


formula_helpers(trace_grad=trace_grad)
TraceBackward0 = define_node("TraceBackward0", forward=_trace, self="trace_grad(F, grad, self_sizes)")


@op(TraceBackward0, category="linalg")
def trace(input):
    """The sum of a matrix's main diagonal (integers: int64)."""
    if input.__class__ is not Tensor:
        raise GradTypeError(f"trace(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.ndim != 2:
        raise ShapeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input.dtype.name == "bool":
        raise KernelTypeError('"trace" not implemented for \'Bool\'')
    return apply1(TraceBackward0, input, input._data)


def _cross(xp, a, b, dim):
    """The cross product along ``dim`` (length 3), broadcasting: torch's kernel's products
    (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0), as two takes, one product and one difference:
    (a1 a2 a0 a2 a0 a1) * (b2 b0 b1 b1 b2 b0), its first half less its second (4 calls, 4 kernels
    on a GPU; np.cross's set-up and a stack of the components took 7 to 11)."""
    key = (xp, a.ndim, dim)
    found = _CROSS.get(key)
    if found is None:
        if len(_CROSS) >= 256:
            _CROSS.clear()
        ahead = (slice(None),) * dim
        found = _CROSS[key] = (xp.asarray(_np.array([1, 2, 0, 2, 0, 1])), xp.asarray(_np.array([2, 0, 1, 1, 2, 0])),
                               ahead + (slice(0, 3),), ahead + (slice(3, 6),))
    of_a, of_b, first, second = found
    products = xp.take(a, of_a, axis=dim) * xp.take(b, of_b, axis=dim)
    return products[first] - products[second]


_CROSS: dict = {}  # (namespace, ndim, dim): the takes' positions and the halves' keys


def cross_of(F, a, b, dim):
    """A formula's ``linalg_cross(a, b, dim)``."""
    return cross(a, b, dim) if F.differentiable else _cross(F.xp, a, b, dim)


formula_helpers(cross_of=cross_of)
LinalgCrossBackward0 = define_node(
    "LinalgCrossBackward0", inputs=("self", "other"), attrs=("dim",), broadcasts=True, forward=_cross,
    self="cross_of(F, other, grad, dim)", other="cross_of(F, grad, self, dim)")


@op(LinalgCrossBackward0, category="linalg")
def cross(input, other, dim=None):
    """The cross product of vectors of length 3 along ``dim`` (None: the first dim of length 3,
    with torch's deprecation warning), broadcasting the other dims."""
    if input.__class__ is not Tensor or other.__class__ is not Tensor:
        _tensor_arguments("cross", input, other)
    da, db = input._data, other._data
    if da.ndim != db.ndim:
        raise ShapeError("linalg.cross: inputs must have the same number of dimensions.")
    if dim is None:
        import warnings
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = next((d for d, n in enumerate(input.shape) if n == 3), None)
        if dim is None:
            raise ShapeError("no dimension of size 3 in input")
    d = _wrap_dim(dim, da.ndim)
    if da.shape[d] != 3 or db.shape[d] != 3:
        raise ShapeError(f"linalg.cross: inputs dimension {d} must have length 3. Got {da.shape[d]} and "
                         f"{db.shape[d]}")
    arrays = _operands(input, other, "cross")
    if arrays is None:
        return apply2(LinalgCrossBackward0, input, other, da, db, (d,))
    return apply2(LinalgCrossBackward0, input, other, arrays[0], arrays[1], (d,))


@op(DotBackward0, category="linalg")
def dot(input, tensor):
    """Inner product of two 1-d tensors."""
    da, db = input._data, tensor._data
    if da.ndim != 1 or db.ndim != 1:
        raise ShapeError(f"1D tensors expected, but got {da.ndim}D and {db.ndim}D tensors")
    n, n2 = da.shape[0], db.shape[0]
    if n != n2:
        raise ShapeError(f"inconsistent tensor size, expected tensor [{n}] and src "
                         f"[{n2}] to have the same number of elements, but got "
                         f"{n} and {n2} elements respectively")
    if da.dtype != db.dtype:
        _same_dtype(input, tensor, "dot")
    return apply2(DotBackward0, input, tensor, da, db)


@op(BmmBackward0, category="linalg")
def bmm(input, mat2):
    """Batched matrix product of two 3-d tensors of one batch size (also matmul's batched path)."""
    a, b = input._data, mat2._data
    if a.ndim != 3 or b.ndim != 3:
        raise ShapeError(f"batch{1 if a.ndim != 3 else 2} must be a 3D tensor")
    if b.shape[:2] != (a.shape[0], a.shape[2]):
        raise ShapeError(f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
                         f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    if a.dtype != b.dtype:
        x, y = input.dtype.name, mat2.dtype.name
        raise RuntimeTypeError(f"expected scalar type {_SCALAR_TYPES.get(x, x)} but found {_SCALAR_TYPES.get(y, y)}")
    (batch, rows, inner), cols = a.shape, b.shape[2]
    check_flops(2 * batch * rows * inner * cols, "this batched matrix product")
    return apply2(BmmBackward0, input, mat2, a, b)


@op(MulBackward0, ViewBackward0, category="linalg")
def outer(input, vec2):
    """Outer product of two 1-d tensors (torch computes it as input.reshape(-1, 1) * vec2: a view of
    a vector as a column is always possible, so reshape's ViewBackward0 is recorded directly)."""
    for arg, v in (("self", input), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise ShapeError(f"outer: Expected 1-D argument {arg}, but got {v._data.ndim}-D")
    n = input._data.shape[0]
    check_numel((n, vec2._data.shape[0]))
    column = view_of(ViewBackward0, input, ((n, 1),))
    if column._data.dtype == vec2._data.dtype:  # shapes and limits checked: mul's node, directly
        return apply2(MulBackward0, column, vec2, column._data, vec2._data)
    return column * vec2


@op(MmBackward0, MvBackward0, DotBackward0, BmmBackward0, category="linalg", operator="a @ b",
    reflected=lambda a, b: matmul(b, a))
def matmul(input, other):
    """Matrix product with torch's rules for 1-d, 2-d and batched operands (the @ operator), recorded
    as torch's decomposition: views (recorded directly where torch's own is a view) around mm/mv/dot."""
    da, db = input._data, other._data
    a, b = da.ndim, db.ndim
    if a == 0 or b == 0:
        raise ShapeError(f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D")
    if a == 1 and b == 1:
        return dot(input, other)
    if a == 2 and b == 1:
        return mv(input, other)
    if a == 1 and b == 2:
        _inner(da.shape[0], db.shape[0], (1, da.shape[0]), db.shape)
        return _squeeze0_(_mm(view_of(UnsqueezeBackward0, input, (0,)), other))
    if a == 2 and b == 2:
        return mm(input, other)
    if _should_fold(input, other, da, db):
        if a >= 3:  # fold the batch into rows: (..., n, k) -> (N, k)
            lead, k = da.shape[:-1], da.shape[-1]
            if b == 2:  # (a vector: mv's own message, on the folded matrix, as torch)
                _inner(k, db.shape[0], da.shape, db.shape)
            if da.__class__ is _NDARRAY and da.size and da.flags.c_contiguous:  # reshape's view, directly
                folded = view_of(ViewBackward0, input, ((da.size // k, k),))
            else:
                folded = reshape(input, -1, k)
            if b == 1:
                return _unsafe_view(mv(folded, other), lead)
            return _unsafe_view(_mm(folded, other), lead + (db.shape[-1],))
        # torch: (b.mT @ a.mT).mT through the folded path
        if a == 1:
            _inner(input.shape[0], other.shape[-2], input.shape, other.shape)
            bt = _unsafe_view(clone(transpose(other, -1, -2)), (-1, other.shape[-2]))
            out = mv(bt, input)
            return _unsafe_view(out, other.shape[:-2] + (other.shape[-1],))
        _inner(input.shape[-1], other.shape[-2], input.shape, other.shape)
        bt = clone(transpose(other, -1, -2))
        folded = _unsafe_view(bt, (-1, other.shape[-2]))
        out = _unsafe_view(mm(folded, t(input)), other.shape[:-2] + (other.shape[-1], input.shape[0]))
        return clone(transpose(out, -1, -2))
    return _batched(input, other)


def _squeeze0_(product):
    """torch's ``product.squeeze_(0)`` on the (1, m) product of matmul's 1-d @ 2-d: the product itself,
    squeezed in place, so not a view of anything, at version 1, its grad_fn SqueezeBackward4 to the
    product's MmBackward0. The product is matmul's own, seen by nobody else: its squeezed form is
    recorded as a new tensor over the same memory, which then takes the in-place change's version."""
    out = apply1(SqueezeBackward4, product, product._data, (product._data.shape[1:],))
    out._bump()
    return out


def _should_fold(input, other, da, db) -> bool:
    """torch's should_fold: multiply the larger operand (3-d or more, against one of 1 or 2 dims) as
    one matrix through mm/mv rather than as a batch through bmm: always where the smaller one requires
    grad, never for a matrix on the left, else where the larger one's leading dims can be merged
    without a copy (strides, as torch reads them; an empty one always)."""
    a, b = da.ndim, db.ndim
    larger = a >= b
    if not ((a if larger else b) >= 3 and (b if larger else a) <= 2):
        return False
    if (other if larger else input)._requires_grad:
        return True
    if a == 2:
        return False
    big = da if larger else db
    strides = getattr(big, "strides", None)
    if big.size == 0 or strides is None:
        return True
    shape = big.shape
    if not larger:  # torch folds other.mT
        shape, strides = shape[:-2] + shape[:-3:-1], strides[:-2] + strides[:-3:-1]
    # its first n - 1 dims merge into one without a copy
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _inner(k1, k2, sa, sb):
    if k1 != k2:
        raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({_fmt(sa)} and {_fmt(sb)})")


def _fmt(shape):
    if len(shape) == 1:
        return f"1x{shape[0]}"
    rows = 1
    for s in shape[:-1]:
        rows *= s
    return f"{rows}x{shape[-1]}"


def _batched(input, other):
    """torch's batched matmul: both operands expanded to the broadcast batch and folded into one bmm
    (a vector on the right as a column), or, for 3-d operands whose batch of 1 requires grad, that
    batch squeezed away first (torch's shortcut for the gradient's sake)."""
    da, db = input._data, other._data
    a, b = da.ndim, db.ndim
    n, m1, batch1 = (da.shape[-2] if a > 1 else 1), da.shape[-1], da.shape[:max(a - 2, 0)]
    m2, p = (db.shape[-2], db.shape[-1]) if b > 1 else (db.shape[0], 1)
    batch2 = db.shape[:max(b - 2, 0)]
    if a == 3 and b == 3 and batch1[0] != batch2[0]:
        if batch1[0] == 1 and input._requires_grad:
            return matmul(squeeze(input, 0), other)
        if batch2[0] == 1 and other._requires_grad:
            return matmul(input, squeeze(other, 0))
    _check_broadcast(batch1, batch2)  # torch's "The size of tensor a (4) must match ..."
    batch = _broadcast_shapes(batch1, batch2)
    flat = 1
    for s in batch:
        flat *= s
    if m1 != m2:
        raise ShapeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                         f"[{flat}, {m1}] but got: [{flat}, {m2}].")
    out_shape = batch + ((n,) if a > 1 else ()) + ((p,) if b > 1 else ())
    check_numel(out_shape)
    check_flops(2 * flat * n * m1 * p, "this batched matrix product")
    left = reshape(expand(input, *(batch + (n, m1))), flat, n, m1)
    if b == 1:
        right = unsqueeze(reshape(expand(other, *(batch + (m2,))), flat, m2), 2)
        return _unsafe_view(squeeze(bmm(left, right), -1), out_shape)
    right = reshape(expand(other, *(batch + (m2, p))), flat, m2, p)
    return _unsafe_view(bmm(left, right), out_shape)


# -- addmm: beta * input + alpha * mat1 @ mat2 (F.linear's node with a bias) -------------------------

AddmmBackward0 = define_node(
    "AddmmBackward0", inputs=("self", "mat1", "mat2"), attrs=("beta", "alpha"), broadcasts=True,
    forward=lambda xp, c, a, b, beta, alpha: (c if beta == 1 else beta * c) + (
        xp.matmul(a, b) if alpha == 1 else alpha * xp.matmul(a, b)),
    self="grad if beta == 1 else grad * beta",  # torch's maybe_multiply
    mat1="F.mm(grad, F.t(mat2)) if alpha == 1 else F.mm(grad, F.t(mat2)) * alpha",
    mat2="F.mm(F.t(mat1), grad) if alpha == 1 else F.mm(F.t(mat1), grad) * alpha")


@op(AddmmBackward0, category="linalg")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2), input broadcasting to the product's shape."""
    da, db = mat1._data, mat2._data
    n, k, m = _matrix_shapes(da, db, "mat1", True)
    shape = tuple(input._data.shape)
    if len(shape) > 2:
        input.expand(n, m)  # torch's message: fewer sizes than the tensor has dims
    if shape and shape[-1] not in (1, m) or len(shape) == 2 and shape[0] not in (1, n):
        raise ShapeError(f"The expanded size of the tensor ({m if shape and shape[-1] not in (1, m) else n}) must "
                         f"match the existing size ({shape[-1] if shape and shape[-1] not in (1, m) else shape[0]}) "
                         f"at non-singleton dimension {1 if shape and shape[-1] not in (1, m) else 0}.  "
                         f"Target sizes: [{n}, {m}].  Tensor sizes: {list(shape)}")
    if da.dtype != db.dtype:
        _same_dtype(mat1, mat2, "mm")
    check_flops(2 * n * k * m, "this matrix product")
    if input.__class__ is Tensor and mat1.__class__ is Tensor and mat2.__class__ is Tensor:
        return apply3(AddmmBackward0, input, mat1, mat2, input._data, da, db, (beta, alpha))
    return apply(AddmmBackward0, (input, mat1, mat2), (beta, alpha))


@op(UnsafeViewBackward0, MulBackward0, category="linalg")
def kron(input, other):
    """The Kronecker product: every element of ``input`` times the whole of ``other``, laid out in
    blocks (torch's: both viewed with interleaved ones, multiplied, viewed as the product's shape)."""
    _tensor_arguments("kron", input, other)
    n = max(input.ndim, other.ndim)
    pa, pb = n - input.ndim, n - other.ndim
    a_shape, b_shape, out_shape = [], [], []
    for i in range(n):
        sa = input.shape[i - pa] if i >= pa else 1
        sb = other.shape[i - pb] if i >= pb else 1
        a_shape += [sa, 1]
        b_shape += [1, sb]
        out_shape.append(sa * sb)
    return _unsafe_view(_unsafe_view(input, a_shape) * _unsafe_view(other, b_shape), out_shape)

