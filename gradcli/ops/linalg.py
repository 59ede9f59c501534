"""Matrix products. ``matmul`` decomposes into mm/mv/dot/bmm and views exactly as torch does,
so the graph a learner sees (``SqueezeBackward4``, ``UnsafeViewBackward0``...) is torch's."""

from __future__ import annotations

from ..errors import ShapeError, GradTypeError
from ..autograd.function import apply
from .registry import op
from ..limits import check_flops, check_numel
from ..autograd.node import define_node
from .pointwise import MulBackward0
from .shape import ViewBackward0, _squeeze4, _unsafe_view, clone, expand, reshape, transpose, t, unsqueeze

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


_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
              "bool": "bool"}
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


@op(MmBackward0, category="linalg")
def mm(input, mat2):
    """Matrix product of two 2-d tensors."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise ShapeError(f"{'self' if input.ndim != 2 else 'mat2'} must be a matrix")
    (n, k), (k2, m) = input._data.shape, mat2._data.shape  # the arrays' own shapes: no Size objects
    if k != k2:
        raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    _same_dtype(input, mat2, "mm")
    check_numel((n, m))
    check_flops(2 * n * k * m, "this matrix product")
    return apply(MmBackward0, (input, mat2))


@op(MvBackward0, category="linalg")
def mv(input, vec):
    """Matrix-vector product."""
    if input.ndim != 2 or vec.ndim != 1:
        raise ShapeError(f"vector + matrix @ vector expected, got {vec.ndim}, {input.ndim}, {vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise ShapeError(f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}x{input.shape[1]}), "
                         f"vec ({vec.shape[0]})")
    _same_dtype(input, vec, "mv")
    return apply(MvBackward0, (input, vec))


@op(DotBackward0, category="linalg")
def dot(input, tensor):
    """Inner product of two 1-d tensors."""
    if input.ndim != 1 or tensor.ndim != 1:
        raise ShapeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input.shape[0] != tensor.shape[0]:
        raise ShapeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                         f"[{tensor.shape[0]}] to have the same number of elements, but got "
                         f"{input.shape[0]} and {tensor.shape[0]} elements respectively")
    _same_dtype(input, tensor, "dot")
    return apply(DotBackward0, (input, tensor))


def bmm(input, mat2):
    """3-d product (matmul's batched path, and bmm's backward under create_graph)."""
    check_flops(2 * max(input.shape[0], mat2.shape[0]) * input.shape[1] * input.shape[2] * mat2.shape[2],
                "this batched matrix product")
    return apply(BmmBackward0, (input, mat2))


@op(MulBackward0, ViewBackward0, category="linalg")
def outer(input, vec2):
    """Outer product of two 1-d tensors (torch computes it as input.reshape(-1, 1) * vec2)."""
    for arg, v in (("self", input), ("vec2", vec2)):
        if v.ndim != 1:
            raise ShapeError(f"outer: Expected 1-D argument {arg}, but got {v.ndim}-D")
    check_numel((input.shape[0], vec2.shape[0]))
    return reshape(input, -1, 1) * vec2


@op(MmBackward0, MvBackward0, DotBackward0, BmmBackward0, category="linalg", operator="a @ b",
    reflected=lambda a, b: matmul(b, a))
def matmul(input, other):
    """Matrix product with torch's rules for 1-d, 2-d and batched operands (the @ operator)."""
    a, b = input.ndim, other.ndim
    if a == 0 or b == 0:
        raise ShapeError(f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D")
    if a == 1 and b == 1:
        return dot(input, other)
    if a == 2 and b == 1:
        return mv(input, other)
    if a == 1 and b == 2:
        _inner(input.shape[0], other.shape[0], (1, input.shape[0]), other.shape)
        return _squeeze4(mm(unsqueeze(input, 0), other), 0)
    if a == 2 and b == 2:
        return mm(input, other)
    if a >= 3 and b <= 2:
        # fold the batch into rows: (..., n, k) -> (N, k)
        lead = input.shape[:-1]
        folded = reshape(input, -1, input.shape[-1])
        if b == 1:
            _inner(input.shape[-1], other.shape[0], input.shape, other.shape)
            return _unsafe_view(mv(folded, other), lead)
        _inner(input.shape[-1], other.shape[0], input.shape, other.shape)
        return _unsafe_view(mm(folded, other), lead + (other.shape[-1],))
    if a <= 2 and b >= 3:
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
    from .pointwise import _broadcast_shapes
    if input.ndim == 1:
        input = unsqueeze(input, 0)
    squeeze_last = other.ndim == 1
    if squeeze_last:
        other = unsqueeze(other, -1)
    n, k = input.shape[-2:]
    k2, m = other.shape[-2:]
    if k != k2:
        raise ShapeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                         f"[{other.shape[0]}, {k}] but got: [{other.shape[0]}, {k2}].")
    from .pointwise import _check_broadcast
    _check_broadcast(tuple(input.shape[:-2]), tuple(other.shape[:-2]))  # torch's "The size of tensor a (4) ..."
    batch = _broadcast_shapes(input.shape[:-2], other.shape[:-2])
    check_numel(batch + (n, m))
    flat = 1
    for s in batch:
        flat *= s
    check_flops(2 * flat * n * k * m, "this batched matrix product")
    a = reshape(expand(input, *(batch + (n, k))), flat, n, k)
    b = reshape(expand(other, *(batch + (k, m))), flat, k, m)
    out = _unsafe_view(bmm(a, b), batch + (n, m))
    return out
