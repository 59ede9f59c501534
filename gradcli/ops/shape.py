"""Shape and layout: view/reshape, transpose, permute, squeeze, expand, cat, stack, clone, to."""

from __future__ import annotations

import functools
import operator as _operator

import numpy as _np

from ..backend import NUMPY, dtypes as _dt
from ..errors import DimensionError, GradTypeError, KernelTypeError, ShapeError
from ..autograd.function import apply, apply1
from ..autograd.grad_mode import STATE
from .registry import alias, op
from ..limits import LIMITS, TRACK_BYTES, check_numel
from ..autograd import node as _node
from ..autograd.node import EDGE_NRS, PACK_SAVED, SAVED_HOOKS, Node, define_node
from ..autograd.tensor import Tensor, _ndarray_type, _wrap_dim, is_inference_vc
from ..autograd.views import rebase, view_of, writable

_ndarray = _ndarray_type
_concatenate = NUMPY.xp.concatenate  # NumPy's own (a C function)


# A view op's forward: the ndarray's own method where the array is NumPy's (what the namespace's
# function calls, one Python call less on every view), the array API's function otherwise.
def _reshape_forward(xp, x, shape):
    return x.reshape(shape) if x.__class__ is _ndarray else xp.reshape(x, shape)


ViewBackward0 = define_node("ViewBackward0", self="F.reshape(grad, self_sizes)",
                            forward=_reshape_forward, attrs=("shape",))
# reshape of a tensor that is not contiguous but whose strides take the shape: torch's _reshape_alias
ReshapeAliasBackward0 = define_node("ReshapeAliasBackward0", self="F.reshape(grad, self_sizes)",
                                    forward=_reshape_forward, attrs=("shape",))
UnsafeViewBackward0 = define_node("UnsafeViewBackward0", self="F.reshape(grad, self_sizes)",
                                  forward=_reshape_forward, attrs=("shape",))
AliasBackward0 = define_node("AliasBackward0", self="grad", forward=lambda xp, x: x)


def _clone(xp, x):
    """torch's clone (preserve_format): a copy whose strides keep the order of ``x``'s, made dense
    (torch's infer_dense_strides: dims ordered by stride, a 0 stride -- an expanded dim -- keeping
    its place, ties by size): ``x.t().clone()`` is a transposed copy, an expanded tensor's a
    row-major one (NumPy's own order-keeping copy would put its 0-stride dims innermost)."""
    if x.__class__ is not _ndarray_type or x.flags.c_contiguous or x.ndim < 2:
        return xp.asarray(x, copy=True)
    key = (x.shape, x.strides)
    order = _DENSE_ORDER.get(key)
    if order is None:
        if len(_DENSE_ORDER) >= 256:
            _DENSE_ORDER.clear()
        order = _DENSE_ORDER[key] = _dense_order(x.shape, x.strides)
    if not order:
        return _np.array(x, order="C")
    out = _np.empty([x.shape[d] for d in order], x.dtype).transpose(_np.argsort(order))
    out[...] = x
    return out


_DENSE_ORDER: dict = {}  # (shape, strides) -> _dense_order's


def _dense_order(sizes, strides):
    """torch's infer_dense_strides: the dims from outermost to innermost (() for row-major order)."""
    strides = [abs(st) for st in strides]
    perm = list(range(len(sizes) - 1, -1, -1))  # innermost first
    for i in range(1, len(sizes)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            a, b = strides[perm[d0]], strides[perm[d1]]
            if a == 0 or b == 0:
                continue
            if a < b:
                break
            if a > b or sizes[perm[d0]] > sizes[perm[d1]]:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
    order = perm[::-1]  # outermost first
    return () if order == sorted(order) else tuple(order)


CloneBackward0 = define_node("CloneBackward0", self="grad", forward=_clone)
# What a leaf's .grad is under create_graph=True: torch copies the first gradient into a new tensor
# (copy_ onto an empty one, whose edge is None), so x.grad prints grad_fn=<CopyBackwards>.
# copy_ (``dst.copy_(src)``, ``x[0:2] = v``) records it too: src's gradient is summed back to its shape.
CopyBackwards = define_node("CopyBackwards", inputs=("self", "src"), self="F.zeros_like(grad)", src="grad",
                            broadcasts=True,
                            forward=lambda xp, dst, src: xp.asarray(xp.broadcast_to(src, dst.shape), copy=True))
CopyBackwards.name = lambda self: "torch::autograd::CopyBackwards"  # a C++ node in torch, named so
FillBackward2 = define_node("FillBackward2", attrs=("value",), self="F.zeros_like(grad)",
                            forward=lambda xp, x, value: xp.full_like(x, value))
FillBackward3 = define_node("FillBackward3", inputs=("self", "value"), self="F.zeros_like(grad)",
                            value="F.sum_to(grad, value_sizes)",
                            forward=lambda xp, x, value: xp.asarray(xp.broadcast_to(value, x.shape), copy=True))
TransposeBackward0 = define_node("TransposeBackward0", attrs=("dim0", "dim1"),
                                 self="F.transpose(grad, dim0, dim1)",
                                 forward=lambda xp, x, d0, d1: x.swapaxes(d0, d1) if x.__class__ is _ndarray else
                                 xp.permute_dims(x, _swap(x.ndim, d0, d1)))
TBackward0 = define_node("TBackward0", self="F.t(grad)",
                         forward=lambda xp, x: x if x.ndim < 2 else
                         x.transpose() if x.__class__ is _ndarray else xp.permute_dims(x, (1, 0)))
PermuteBackward0 = define_node("PermuteBackward0", attrs=("dims",),
                               self="F.permute(grad, inverse_permutation(dims))",
                               forward=lambda xp, x, dims: x.transpose(dims) if x.__class__ is _ndarray else
                               xp.permute_dims(x, dims))
UnsqueezeBackward0 = define_node("UnsqueezeBackward0", attrs=("dim",), self="F.squeeze(grad, dim)",
                                 forward=lambda xp, x, dim: xp.expand_dims(x, axis=dim))
_squeeze_forward = _reshape_forward
SqueezeBackward0 = define_node("SqueezeBackward0", attrs=("shape",), self="F.reshape(grad, self_sizes)",
                               forward=_squeeze_forward)
SqueezeBackward1 = define_node("SqueezeBackward1", attrs=("shape",), self="F.reshape(grad, self_sizes)",
                               forward=_squeeze_forward)
SqueezeBackward2 = define_node("SqueezeBackward2", attrs=("shape",), self="F.reshape(grad, self_sizes)",
                               forward=_squeeze_forward)
SqueezeBackward4 = define_node("SqueezeBackward4", attrs=("shape",), self="F.reshape(grad, self_sizes)",
                               forward=_squeeze_forward)
ExpandBackward0 = define_node("ExpandBackward0", attrs=("shape",), self="F.sum_to(grad, self_sizes)",
                              forward=lambda xp, x, shape: xp.broadcast_to(x, shape))
ToCopyBackward0 = define_node("ToCopyBackward0", attrs=("dtype",), self="F.cast(grad, self)",
                              forward=lambda xp, x, dtype: xp.astype(x, dtype, copy=True))


DiagonalBackward0 = define_node(
    "DiagonalBackward0", attrs=("offset", "dim1", "dim2"),
    self="F.embed(F.permute(grad, diagonal_perm(self_sizes, dim1, dim2)), self_sizes, "
         "diagonal_key(self_sizes, offset, dim1, dim2), False)",
    forward=lambda xp, x, offset, d1, d2: x.diagonal(offset, d1, d2) if x.__class__ is _ndarray else
    _diagonal(xp, x, offset, d1, d2))


def _diagonal(xp, x, offset, d1, d2):
    """NumPy's diagonal is a view (read-only, made writable by in-place ops on it)."""
    if hasattr(xp, "diagonal") and xp.__name__.startswith(("numpy", "cupy")):
        return xp.diagonal(x, offset, d1, d2)
    out = x[tuple(k if k.__class__ is slice else xp.asarray(k) for k in diagonal_key(x.shape, offset, d1, d2))]
    return xp.permute_dims(out, inverse_permutation(diagonal_perm(x.shape, d1, d2)))


@functools.lru_cache(maxsize=256)
def diagonal_key(sizes, offset, d1, d2):
    """The advanced-index key that picks the diagonal (its elements where indexing puts them).
    Kept per arguments (every backward of a diagonal asks again); its index arrays are read-only."""
    import numpy as np
    n = max(0, min(sizes[d1] - max(-offset, 0), sizes[d2] - max(offset, 0)))
    i = np.arange(n)
    key = [slice(None)] * len(sizes)
    key[d1], key[d2] = i + max(-offset, 0), i + max(offset, 0)
    key[d1].flags.writeable = key[d2].flags.writeable = False
    return tuple(key)


def diagonal_perm(sizes, d1, d2):
    """Moves the diagonal's dim (last in ``diagonal``) to where advanced indexing puts it."""
    rest = len(sizes) - 2
    at = min(d1, d2) if abs(d1 - d2) == 1 else 0
    order = list(range(rest))
    order.insert(at, rest)
    return tuple(order)


def _swap(ndim, d0, d1):
    perm = list(range(ndim))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return tuple(perm)


def inverse_permutation(dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


from ..autograd.node import formula_helpers  # noqa: E402

formula_helpers(inverse_permutation=inverse_permutation, diagonal_perm=diagonal_perm, diagonal_key=diagonal_key)


def _shape_arg(shape):
    """Accept ``reshape(2, 3)``, ``reshape((2, 3))`` and ``reshape([2, 3])``."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    for s in shape:  # the usual case: plain ints (bool's class is not int), checked without a call
        if s.__class__ is not int:
            break
    else:
        return tuple(shape)
    out = []
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, int):
            if isinstance(s, Tensor) and s.dtype.category == 1 and s.numel() == 1:
                s = int(s.item())
            else:
                raise GradTypeError(f"shape must be a sequence of ints, got {type(s).__name__}")
        out.append(s)
    return tuple(out)


def _infer(shape, numel, original):
    if shape.count(-1) > 1:
        raise ShapeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s != -1:
            if s < 0:
                raise ShapeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise ShapeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise ShapeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    if numel == 0:
        check_numel(shape)  # an empty tensor viewed as (10**6, 10**6, 0) could never be printed
    return shape


def _plain_shape(input, shape):
    """``shape`` (``reshape(2, 2)`` or ``reshape((2, 2))``) when it is the usual call: plain
    positive ints whose product is the input's size, so nothing needs inferring or checking
    (``_infer`` gives the same tuple); None otherwise."""
    if len(shape) == 1 and shape[0].__class__ in (tuple, list):
        shape = shape[0]
    n = 1
    for s in shape:
        if s.__class__ is not int or s <= 0:
            return None
        n *= s
    return tuple(shape) if n == input._data.size else None


@op(ViewBackward0, ReshapeAliasBackward0, UnsafeViewBackward0, category="shape")
def reshape(input, *shape):
    """Same data in a new shape (one dim may be -1); a copy where the strides do not allow a view."""
    return _reshaped(input, _plain_shape(input, shape) or _infer(_shape_arg(shape), input.numel(), input.shape))


def _reshaped(input, shape):
    """``reshape`` to a checked shape of the input's size: a view where the strides allow one
    (ViewBackward0 of a contiguous tensor, else torch's ReshapeAliasBackward0)."""
    if _viewable(input, shape):
        contiguous = getattr(getattr(input._data, "flags", None), "c_contiguous", True)
        return view_of(ViewBackward0 if contiguous else ReshapeAliasBackward0, input, (shape,))
    # as torch: a contiguous copy, then a view of it nobody else can see (x.t().reshape(-1))
    return apply(UnsafeViewBackward0, (apply(CloneBackward0, (input,)),), (shape,))


def _viewable(t, shape) -> bool:
    """Can ``t``'s data take ``shape`` without a copy (torch's rule for view, which numpy shares)?
    A C-contiguous array can take any shape of its size (the caller checked the size)."""
    flags = getattr(t._data, "flags", None)
    if flags is not None and flags.c_contiguous:
        return True
    try:
        t._backend.xp.reshape(t._data, shape, copy=False)
    except (ValueError, AttributeError):
        return False
    except TypeError:  # a namespace without reshape(copy=): assume it can
        return True
    return True


@op(ViewBackward0, category="shape")
def view(input, *shape):
    """Same data in a new shape (one dim may be -1)."""
    plain = _plain_shape(input, shape)
    if plain is None:
        if len(shape) == 1 and isinstance(shape[0], (str, _dt.dtype)):
            raise GradTypeError("view(dtype) is not supported")
        plain = _infer(_shape_arg(shape), input.numel(), input.shape)
    shape = plain
    if not _viewable(input, shape):
        raise ShapeError("view size is not compatible with input tensor's size and stride (at least one "
                         "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return view_of(ViewBackward0, input, (shape,))


@op(ViewBackward0, ReshapeAliasBackward0, UnsafeViewBackward0, category="shape")
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one."""
    if input.ndim == 0:
        return reshape(input, 1)
    s, e = _wrap_dim(start_dim, input.ndim), _wrap_dim(end_dim, input.ndim)
    if s > e:
        raise ShapeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input  # torch returns the tensor itself
    shape = input._data.shape
    merged = 1
    for d in shape[s:e + 1]:
        merged *= d
    return _reshaped(input, shape[:s] + (merged,) + shape[e + 1:])


def _unsafe_view(input, shape):
    return apply(UnsafeViewBackward0, (input,), (tuple(shape),))


@op(TransposeBackward0, category="shape")
def transpose(input, dim0, dim1):
    """Swap two dims."""
    n = input.ndim
    return view_of(TransposeBackward0, input, (_wrap_dim(dim0, n), _wrap_dim(dim1, n)))


@op(TBackward0, category="shape")
def t(input):
    """Transpose a matrix (a 0-d or 1-d tensor is returned as is)."""
    if input.ndim > 2:
        raise ShapeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return view_of(TBackward0, input)


@op(PermuteBackward0, category="shape")
def permute(input, *dims):
    """Reorder dims."""
    dims = _shape_arg(dims)
    n = input._data.ndim
    seen = 0
    for d in dims:  # the usual call: each dim once, none negative (a bitmask of those seen)
        if d.__class__ is not int or not 0 <= d < n:
            break
        seen |= 1 << d
    else:
        if seen == (1 << n) - 1 and len(dims) == n:
            return view_of(PermuteBackward0, input, (dims,))
    if len(dims) != n:
        raise ShapeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                         f"the length of the desired ordering of dimensions i.e. input.dim() = {n} "
                         f"is not equal to len(dims) = {len(dims)}")
    wrapped = tuple(_wrap_dim(d, n) for d in dims)
    if len(set(wrapped)) != n:
        raise ShapeError("permute(): duplicate dims are not allowed.")
    return view_of(PermuteBackward0, input, (wrapped,))


@op(PermuteBackward0, AliasBackward0, category="shape")
def movedim(input, source, destination):
    """Move the dims ``source`` (an int or a sequence) to the places ``destination``, the others
    keeping their order: torch's permutation (PermuteBackward0; a 0-d tensor: an alias)."""
    n = input.ndim
    if source.__class__ is int and destination.__class__ is int and n:  # one dim: taken out, put back
        s, d = _wrap_dim(source, n), _wrap_dim(destination, n)
        order = list(range(n))
        del order[s]
        order.insert(d, s)
        return view_of(PermuteBackward0, input, (tuple(order),))
    src = _ints("movedim", "source", source)
    dst = _ints("movedim", "destination", destination)
    if len(src) != len(dst):
        raise ShapeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
                         f"the same number of dims as destination ({list(dst)} dims)")
    src = tuple(_wrap_dim(d, n) for d in src)
    dst = tuple(_wrap_dim(d, n) for d in dst)
    for what, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise ShapeError(f"movedim: repeated dim in `{what}` ({list(dims)})")
    if n == 0:
        return view_of(AliasBackward0, input)
    order = [-1] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = tuple(next(rest) if o == -1 else o for o in order)
    return view_of(PermuteBackward0, input, (order,))


@op(ViewBackward0, CloneBackward0, category="shape")
def ravel(input):
    """The elements as one dim, in row-major order: ``contiguous().view(-1)`` (a view where the
    tensor is contiguous, else a copy: ViewBackward0 of CloneBackward0)."""
    if not _is_contiguous(input):
        input = _contiguous(input)
    elif not _viewable(input, (input.numel(),)):  # a backend without strides (array-api-strict): a copy
        # nobody else sees, viewed whatever its layout (its reshape may copy again)
        return view_of(ViewBackward0, apply(CloneBackward0, (input,)), ((input.numel(),),))
    return view(input, -1)


alias("moveaxis", movedim)
alias("swapaxes", transpose)
alias("swapdims", transpose)


def _T(self):
    if self.ndim == 2:
        return permute(self, 1, 0)
    return permute(self, *reversed(range(self.ndim)))


Tensor.T = property(_T)
Tensor.mT = property(lambda self: transpose(self, -2, -1))


@op(UnsqueezeBackward0, category="shape")
def unsqueeze(input, dim):
    """Insert a dim of size 1 at ``dim``."""
    return view_of(UnsqueezeBackward0, input, (_wrap_dim(dim, input._data.ndim + 1),))


@op(SqueezeBackward0, SqueezeBackward1, SqueezeBackward2, category="shape")
def squeeze(input, dim=None):
    """Remove dims of size 1 (all of them, or those in ``dim``)."""
    shape = input._data.shape
    if dim.__class__ is int:  # the usual call: one dim (its size 1 or not, SqueezeBackward1 records it)
        d = _wrap_dim(dim, len(shape))
        return view_of(SqueezeBackward1, input, (shape[:d] + shape[d + 1:] if shape and shape[d] == 1 else shape,))
    if dim is None:
        cls, drop = SqueezeBackward0, {i for i, s in enumerate(shape) if s == 1}
    elif isinstance(dim, (list, tuple)):
        cls = SqueezeBackward2
        drop = {d for d in (_wrap_dim(x, input.ndim) for x in dim) if shape and shape[d] == 1}
    else:
        cls = SqueezeBackward1
        d = _wrap_dim(dim, input.ndim)
        drop = {d} if shape and shape[d] == 1 else set()
    return view_of(cls, input, (tuple(s for i, s in enumerate(shape) if i not in drop),))


def _squeeze4(input, dim):
    shape = input._data.shape
    return view_of(SqueezeBackward4, input, (tuple(s for i, s in enumerate(shape) if i != dim),))


@op(ExpandBackward0, category="shape")
def expand(input, *sizes):
    """Broadcast to a larger shape without copying (-1 keeps a dim)."""
    return _expand(input, _shape_arg(sizes))


def _expand(input, sizes):
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise ShapeError(f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(sizes)}): the number of "
                         f"sizes provided ({len(sizes)}) must be greater or equal to the number of "
                         f"dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    for i in range(lead):
        if sizes[i] < 0:
            raise ShapeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                             f"non-existing dimension {i}")
    out = list(sizes)
    n = 1
    for i in range(lead):
        n *= sizes[i]
    for i, have in enumerate(shape, lead):
        s = sizes[i]
        if s == -1:
            s = out[i] = have
        elif have != s and have != 1:
            raise ShapeError(f"The expanded size of the tensor ({s}) must match the existing size ({have}) "
                             f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                             f"{list(shape)}")
        n *= s
    out = tuple(out)
    if not n or n > LIMITS.max_elements or n * LIMITS.itemsize >= TRACK_BYTES:  # check_numel's conditions
        check_numel(out)
    return view_of(ExpandBackward0, input, (out,))


def _other(name: str, other) -> Tensor:
    """``other`` of ``x.<name>_as(other)``: a tensor, or torch's message."""
    if not isinstance(other, Tensor):
        raise GradTypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    return other


@op(ExpandBackward0, category="shape")
def broadcast_to(input, *size):
    """``input`` broadcast to ``size`` without copying: ``expand(size)``, as torch's (-1 keeps a dim);
    the function takes the size as one tuple or list, the method as ints too."""
    if input.__class__ is not Tensor:
        raise GradTypeError(f"broadcast_to(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        for pos, s in enumerate(size[0], 1):
            if isinstance(s, bool) or not isinstance(s, int) and not isinstance(s, Tensor):
                raise GradTypeError(f"broadcast_to(): argument 'size' failed to unpack the object at pos {pos} with "
                                    f"error \"type must be tuple of ints,but got {type(s).__name__}\"")
    return _expand(input, _shape_arg(size))


@op(ExpandBackward0, category="shape")
def expand_as(input, other):
    """Expand to ``other``'s shape."""
    return _expand(input, _other("expand_as", other)._data.shape)


@op(ViewBackward0, category="shape", namespaces=())
def view_as(input, other):
    """A view with ``other``'s shape."""
    return view(input, tuple(_other("view_as", other)._data.shape))


@op(ViewBackward0, ReshapeAliasBackward0, UnsafeViewBackward0, category="shape", namespaces=())
def reshape_as(input, other):
    """Same data in ``other``'s shape (a copy where the strides do not allow a view)."""
    return reshape(input, tuple(_other("reshape_as", other)._data.shape))


@op(DiagonalBackward0, category="shape")
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal (``offset`` above it when positive) of the planes of ``dim1`` and ``dim2``: a view."""
    n = input.ndim
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise ShapeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return view_of(DiagonalBackward0, input, (int(offset), d1, d2))


@op(CloneBackward0, category="shape")
def clone(input):
    """A copy with its own storage (gradient flows through)."""
    return apply(CloneBackward0, (input,))


@op(method=False, differentiable=False, category="autograd")
def detach(input):
    """The same data, cut from the graph (requires_grad=False)."""
    return Tensor.detach(input)


@op(differentiable=False, category="autograd")
def is_inference(input):
    """Whether the tensor is an inference tensor: made under inference_mode, or a view or detach of one."""
    return is_inference_vc(input._vc)


@op(ToCopyBackward0, category="device", name="to")
def _to(input, *args, dtype=None, device=None, copy=False):
    """Convert dtype and/or move to a device; differentiable (ToCopyBackward0)."""
    for a in args:
        if isinstance(a, _dt.dtype) or (isinstance(a, str) and a.replace("torch.", "") in _dt.DTYPES):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        else:
            device = a
    target = input
    if device is not None and str(_dt.device(str(device))) != input._backend.name and not (
            str(device) == "cuda" and input._backend.name == "cuda:0"):
        from .device import to_device
        target = to_device(target, str(device))
    if dtype is not None:
        d = _dt.by_name(dtype)
        if d.name != target.dtype.name or copy:
            if d.is_floating_point or not target._requires_grad:
                target = apply(ToCopyBackward0, (target,), (target._backend.dtype(d.name),))
            else:  # an integer or bool result carries no gradient: nothing recorded, as torch
                target = Tensor._make(ToCopyBackward0.forward(target._backend.xp, target._data,
                                                              target._backend.dtype(d.name)), target._backend)
    return target


@op(ToCopyBackward0, category="device", namespaces=())
def type_as(input, other):
    """Cast to ``other``'s dtype (this tensor itself where it has it already)."""
    return _to(input, _other("type_as", other).dtype)


Tensor.double = lambda self: _to(self, "float64")
Tensor.float = lambda self: _to(self, "float32")
Tensor.half = lambda self: _to(self, "float16")
Tensor.long = lambda self: _to(self, "int64")
Tensor.int = lambda self: _to(self, "int32")
Tensor.bool = lambda self: _to(self, "bool")


def _is_contiguous(self, memory_format=None) -> bool:
    """Whether the elements lie in row-major order with no gaps (size-1 dims aside), as torch's strides say."""
    flags = getattr(self._data, "flags", None)
    return True if flags is None else bool(flags.c_contiguous)


def _contiguous(self, memory_format=None):
    """This tensor where it is contiguous already, else a row-major copy of it (CloneBackward0, as torch)."""
    if _is_contiguous(self):
        return self
    return apply1(CloneBackward0, self, self._backend.xp.ascontiguousarray(self._data))


Tensor.is_contiguous = _is_contiguous
Tensor.contiguous = _contiguous
Tensor.is_floating_point = lambda self: self.dtype.is_floating_point
Tensor.cpu = lambda self: _to(self, device="cpu")
Tensor.cuda = lambda self, device=None: _to(self, device="cuda" if device is None else
                                            (f"cuda:{device}" if isinstance(device, int) else device))


# -- cat and stack: variadic nodes -----------------------------------------------------------------------

class CatBackward0(Node):
    """Backward of cat: each input gets its slice of ``grad`` along ``dim``."""

    __slots__ = ()
    derivatives = (("tensors", "grad.narrow(dim, offset_i, size_i) for each input"),)
    input_names = ("tensors",)
    attr_names = ("dim",)

    def apply(self, grad, F, differentiable):
        dim, sizes, casts = self._attrs
        return _cast_back(F.cat_slices(grad, dim, sizes), casts, F, differentiable)


class StackBackward0(Node):
    """Backward of stack: each input gets ``grad.select(dim, i)``."""

    __slots__ = ()
    derivatives = (("tensors", "grad.select(dim, i) for each input i"),)
    input_names = ("tensors",)
    attr_names = ("dim",)

    def apply(self, grad, F, differentiable):
        dim, count, casts = self._attrs
        if not differentiable:  # each input's part of the gradient: a view of it (..., not a 0-d scalar)
            lead = (slice(None),) * dim
            return _cast_back([grad[lead + (i, Ellipsis)] for i in range(count)], casts, F, differentiable)
        parts = F.cat_slices(grad, dim, [1] * count)
        return _cast_back([F.reshape(p, tuple(s for i, s in enumerate(p.shape) if i != dim)) for p in parts],
                          casts, F, differentiable)


def _cast_back(parts, casts, F, differentiable):
    """Inputs of mixed dtypes (cat of float32 and float64): each gets its gradient in its own dtype,
    as torch's cat/stack backward does (no ToCopyBackward0 nodes in the forward graph)."""
    if casts is None:
        return parts
    if differentiable:
        return [p if p.dtype.name == name else p.to(name) for p, name in zip(parts, casts)]
    dtype = F.backend.dtype
    return [p if p.dtype == dtype(name) else F.backend.xp.astype(p, dtype(name)) for p, name in zip(parts, casts)]


def _record_variadic(cls, tensors, data, attrs):
    """The result of cat/stack: one node with an edge per input (None where no gradient flows)."""
    backend = tensors[0]._backend
    if not STATE.enabled:
        return Tensor._make(data, backend)
    edges = []
    wanted = False
    for t in tensors:
        if t._requires_grad:
            wanted = True
            edges.append(((t.grad_fn or t._accumulator()), 0 if t._view is None else t.output_nr))
        else:
            edges.append(_NO_EDGE)
    if not wanted:
        return Tensor._make(data, backend)
    node = _new(cls)  # new_node's fields for a node that saves nothing
    k = node._k = len(edges)
    node._n0 = edges[0][0]
    node._n1 = edges[1][0] if k > 1 else None
    node._nx = tuple([e[0] for e in edges[2:]]) if k > 2 else None
    for e in edges:
        if e[1]:
            EDGE_NRS[node] = tuple([e[1] for e in edges])
            break
    node._s0 = node._s1 = node._sx = node._sr = node._vr = node._live = node._shapes = None
    node._attrs = attrs
    node._pre_hooks = None
    node._retain = None
    node._shape = _node.sizes(data.shape)
    node._seq = _node._next_seq()
    if SAVED_HOOKS:
        PACK_SAVED[0](node)
    return Tensor._make(data, backend, node)


_new = object.__new__


_NO_EDGE = (None, 0)

import builtins as _builtins  # noqa: E402

builtins_any = _builtins.any


def _tensor_list(tensors, name):
    """The tensors of cat/stack, checked: a non-empty list or tuple of tensors on one device."""
    if tensors.__class__ is not list and (isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple))):
        raise GradTypeError(f"{name}() expects a list or tuple of tensors")
    if not tensors:
        raise ShapeError("torch.cat(): expected a non-empty list of Tensors" if name == "cat" else
                         f"{name} expects a non-empty TensorList")
    backend = None
    for t in tensors:
        if t.__class__ is not Tensor and not isinstance(t, Tensor):
            raise GradTypeError(f"{name}(): expected Tensor as element, but got {type(t).__name__}")
        if backend is None:
            backend = t._backend
    for t in tensors:
        if t._backend is not backend:
            from ..errors import DeviceError
            raise DeviceError(f"Expected all tensors to be on the same device, but found at least two "
                              f"devices, {backend.name} and {t._backend.name}!")
    return list(tensors)


def _promoted(tensors):
    """The inputs' arrays in their common dtype, and the dtype names their gradients go back to
    (None when all already share one)."""
    dtype = tensors[0]._data.dtype
    arrays = []
    for t in tensors:
        data = t._data
        if data.dtype != dtype:
            break
        arrays.append(data)
    else:  # one dtype: nothing to promote (the usual case)
        return arrays, None
    target = _dt.result_type([Tensor._make(t._backend.xp.reshape(t._data, (1,)) if t.ndim == 0 else t._data,
                                           t._backend) for t in tensors])
    if all(t.dtype.name == target for t in tensors):
        return [t._data for t in tensors], None
    backend = tensors[0]._backend
    dt = backend.dtype(target)
    return ([t._data if t.dtype.name == target else backend.xp.astype(t._data, dt) for t in tensors],
            tuple(t.dtype.name for t in tensors))


def _check_elements(shape, n) -> None:
    """``check_numel(shape)`` (``n``: its product) where it could refuse: an empty shape, or more
    elements than the limit or the memory budget's tracking size allow."""
    if not n or n > LIMITS.max_elements or n * LIMITS.itemsize >= TRACK_BYTES:
        check_numel(shape)


@op(CatBackward0, method=False, category="shape")
def cat(tensors, dim=0):
    """Join tensors along an existing dim."""
    tensors = _tensor_list(tensors, "cat")
    ref = tensors[0]
    shape = ref._data.shape
    if not shape:
        raise ShapeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap_dim(dim, len(shape))
    sizes = []
    for i, t in enumerate(tensors):
        other = t._data.shape
        if other != shape and (len(other) != len(shape) or builtins_any(
                [a != b for j, (a, b) in enumerate(zip(other, shape)) if j != d])):
            raise ShapeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                             f"{_mismatch(ref, t, d)} but got size {_mismatch(t, ref, d)} for tensor number "
                             f"{i} in the list.")
        sizes.append(other[d])
    out_shape = list(shape)
    out_shape[d] = total = sum(sizes)
    n = total
    for i, s in enumerate(shape):
        if i != d:
            n *= s
    _check_elements(out_shape, n)
    arrays, casts = _promoted(tensors)
    data = ref._backend.xp.concat(arrays, axis=d)
    return _record_variadic(CatBackward0, tensors, data, (d, sizes, casts))


def _mismatch(a, b, d):
    for j, (x, y) in enumerate(zip(a.shape, b.shape)):
        if j != d and x != y:
            return x
    return a.ndim


@op(StackBackward0, method=False, category="shape")
def stack(tensors, dim=0):
    """Join tensors along a new dim."""
    tensors = _tensor_list(tensors, "stack")
    ref = tensors[0]
    shape = ref._data.shape
    d = _wrap_dim(dim, len(shape) + 1)
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise ShapeError(f"stack expects each tensor to be equal size, but got {list(ref.shape)} at "
                             f"entry 0 and {list(t.shape)} at entry {i}")
    n = len(tensors)
    for s in shape:
        n *= s
    _check_elements([len(tensors), *shape], n)
    arrays, casts = _promoted(tensors)
    return _record_variadic(StackBackward0, tensors, _stack(ref._backend.xp, arrays, shape, d),
                            (d, len(tensors), casts))


def _stack(xp, arrays, shape, d):
    """np.stack of arrays of one shape and dtype as np.stack computes it (each array given the
    new dim, all concatenated along it), without its Python-level checks; other arrays: xp.stack."""
    new = shape[:d] + (1,) + shape[d:]
    parts = []
    for a in arrays:
        if a.__class__ is not _ndarray:
            return xp.stack(arrays, axis=d)
        parts.append(a.reshape(new))
    return _concatenate(parts, axis=d)


# -- in-place copies -------------------------------------------------------------------------------

@op(CopyBackwards, category="in-place")
def copy_(input, src):
    """Copy ``src`` (broadcast, cast to this dtype) into this tensor, in place (CopyBackwards)."""
    if not isinstance(src, Tensor):
        raise GradTypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.dtype.name != input.dtype.name:
        src = _to(src, input.dtype.name) if src._requires_grad else Tensor._make(
            src._backend.xp.astype(src._data, input._data.dtype), src._backend)
    _broadcastable(src, input)
    input._check_inplace()
    if STATE.enabled and (input._requires_grad or src._requires_grad):
        old = Tensor._make(input._data, input._backend, input.grad_fn)  # the tensor as it was: its edge
        old._requires_grad = input._requires_grad
        result = apply(CopyBackwards, (old, src))
        writable(input)[...] = result._data
        rebase(input, result.grad_fn)
    else:
        writable(input)[...] = src._data
    input._bump()
    return input


def _broadcastable(src, dst) -> None:
    a, b = tuple(src.shape), tuple(dst.shape)
    ok = len(a) <= len(b) and all(x in (1, y) for x, y in zip(reversed(a), reversed(b)))
    if not ok:
        raise ShapeError(f"output with shape {list(b)} doesn't match the broadcast shape "
                             f"{_broadcast_shape(a, b)}" if _compatible(a, b) else
                             f"The size of tensor a ({b[-1] if b else 1}) must match the size of tensor b "
                             f"({a[-1] if a else 1}) at non-singleton dimension {max(len(a), len(b)) - 1}")


def _compatible(a, b) -> bool:
    return all(x == y or 1 in (x, y) for x, y in zip(reversed(a), reversed(b)))


def _broadcast_shape(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return [max(x, y) for x, y in zip(a, b)]


@op(FillBackward2, FillBackward3, category="in-place")
def fill_(input, value):
    """Fill with ``value`` in place; its gradient is zero from here on (FillBackward2; a 0-d tensor
    value gets the sum of the gradient: FillBackward3)."""
    tensor_value = isinstance(value, Tensor)
    if tensor_value and value.ndim:
        raise ShapeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                         f"dimensions.")
    if tensor_value:
        return overwrite_(input, lambda: value._data, FillBackward3, (value,))
    return overwrite_(input, lambda: value, FillBackward2, (), (value,))


def overwrite_(input, values, cls, others=(), attrs=()):
    """``input``'s values replaced in place by ``values()`` (fill_, uniform_, normal_: called once the
    in-place checks pass), and where a gradient flows, ``cls``'s node on the tensor as it was and
    ``others`` recorded on it, as torch's rebase_history does."""
    input._check_inplace()
    old = Tensor._make(input._data, input._backend, input.grad_fn)  # the tensor as it was: its edge
    old._requires_grad = input._requires_grad
    writable(input)[...] = values()
    input._bump()
    if STATE.enabled and (input._requires_grad or any(o._requires_grad for o in others)):
        rebase(input, apply(cls, (old, *others), attrs).grad_fn)
    return input


# -- flip, roll, tril, triu: new tensors (never views), the elements moved or masked -----------------

def _flip(xp, x, dims):
    """``x`` reversed along ``dims``, copied (NumPy's flip is a view; torch's result is a new tensor)."""
    out = xp.flip(x, axis=dims)
    return out.copy() if out.__class__ is _ndarray else xp.asarray(out, copy=True)


def unroll(shifts):
    """RollBackward0's shifts: the forward's, negated (the dims reversed with them, as torch's formula)."""
    return tuple(-s for s in reversed(shifts))


formula_helpers(unroll=unroll)

FlipBackward0 = define_node("FlipBackward0", attrs=("dims",), self="F.flip(grad, dims)", forward=_flip)
RollBackward0 = define_node("RollBackward0", attrs=("shifts", "dims"), self="F.roll(grad, unroll(shifts), dims[::-1])",
                            forward=lambda xp, x, shifts, dims: xp.roll(x, shifts, axis=dims) if dims else
                            xp.roll(x, shifts[0]))
TrilBackward0 = define_node("TrilBackward0", attrs=("diagonal",), self="F.tril(grad, diagonal)",
                            forward=lambda xp, x, diagonal: xp.tril(x, k=diagonal))
TriuBackward0 = define_node("TriuBackward0", attrs=("diagonal",), self="F.triu(grad, diagonal)",
                            forward=lambda xp, x, diagonal: xp.triu(x, k=diagonal))


def _index(value):
    """``value`` as an int where torch takes it as one (an int, a NumPy integer, an integer 0-d
    tensor: ``__index__``, never a bool), else None."""
    if value.__class__ is int:
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        return None
    try:
        return _operator.index(value)
    except TypeError:  # a float tensor, one of several elements
        return None


def _ints(name, arg, value):
    """An int, or a list or tuple of ints, as a tuple (torch's IntArrayRef arguments)."""
    if value.__class__ is int:
        return (value,)
    if value.__class__ is tuple:  # already a tuple of plain ints: itself
        for v in value:
            if v.__class__ is not int:
                break
        else:
            return value
    items = [value] if _index(value) is not None else value
    out = [_index(i) for i in items] if isinstance(items, (list, tuple)) else [None]
    if None in out:
        raise GradTypeError(f"{name}(): argument '{arg}' must be tuple of ints, not {type(value).__name__}")
    return tuple(out)


def _wrap_dims(dims, ndim):
    """``dims`` made non-negative, each once (torch's error for a repeated one)."""
    out = tuple(_wrap_dim(d, ndim) for d in dims)
    for i, d in enumerate(out):
        if d in out[:i]:
            raise ShapeError(f"dim {d} appears multiple times in the list of dims")
    return out


@op(FlipBackward0, category="shape")
def flip(input, dims, *more_dims):
    """Reverse the order of elements along ``dims`` (a list or tuple; the method also takes ints, x.flip(0, 1))."""
    if more_dims:
        if _index(dims) is None:
            raise GradTypeError(f"flip() takes 1 positional argument but {1 + len(more_dims)} were given")
        dims = (dims, *more_dims)
    d = _wrap_dims(_ints("flip", "dims", dims), input.ndim)
    return apply(FlipBackward0, (input,), (d if input.ndim else (),))  # a 0-d tensor has nothing to flip


@op(RollBackward0, category="shape")
def roll(input, shifts, dims=None):
    """Shift elements along ``dims`` by ``shifts``, wrapping around (ints or tuples; no dims: the flattened tensor)."""
    if shifts.__class__ is int and input.__class__ is Tensor:  # x.roll(1), x.roll(1, 0): plain ints, as parsed below
        if dims is None:
            return apply1(RollBackward0, input, input._data, ((shifts,), ()))
        if dims.__class__ is int and input._data.ndim:
            return apply1(RollBackward0, input, input._data, ((shifts,), (_wrap_dim(dims, input._data.ndim),)))
    shifts = _ints("roll", "shifts", shifts)
    dims = () if dims is None else _ints("roll", "dims", dims)
    if not shifts:
        raise ShapeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return apply(RollBackward0, (input,), (shifts, ()))
    if len(shifts) != len(dims):
        raise ShapeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if not input.ndim:
        raise DimensionError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    return apply(RollBackward0, (input,), (shifts, tuple(_wrap_dim(d, input.ndim) for d in dims)))


def _triangle(name, cls, input, diagonal):
    k = _index(diagonal)
    if k is None:
        raise GradTypeError(f"{name}(): argument 'diagonal' must be int, not {type(diagonal).__name__}")
    if input.ndim < 2:
        raise ShapeError(f"{name}: input tensor must have at least 2 dimensions")
    return apply(cls, (input,), (k,))


@op(TrilBackward0, category="shape", inplace=True)
def tril(input, diagonal=0):
    """The lower triangle of the last two dims (on and below ``diagonal``), zeros above it."""
    return _triangle("tril", TrilBackward0, input, diagonal)


@op(TriuBackward0, category="shape", inplace=True)
def triu(input, diagonal=0):
    """The upper triangle of the last two dims (on and above ``diagonal``), zeros below it."""
    return _triangle("triu", TriuBackward0, input, diagonal)


def repeat_backward(F, grad, repeats, sizes):
    """torch's repeat_backward: the leading new dims summed away, then one reshape that splits
    each repeated dim into (repeat, size) and one sum over the repeats."""
    if 0 in repeats:
        return F.zeros(sizes, grad)
    for _ in range(len(repeats) - len(sizes)):
        grad = F.sum(grad, (0,), False)
    lead = len(repeats) - len(sizes)
    grad_size, sum_dims = [], []
    for d, size in enumerate(sizes):
        if repeats[d + lead] != 1:
            grad_size.append(repeats[d + lead])
            sum_dims.append(len(grad_size) - 1)
        grad_size.append(size)
    if sum_dims:
        grad = F.sum(F.reshape(grad, tuple(grad_size)), tuple(sum_dims), False)
    return grad


formula_helpers(repeat_backward=repeat_backward)

RepeatBackward0 = define_node(
    "RepeatBackward0", attrs=("repeats",), self="repeat_backward(F, grad, repeats, self_sizes)",
    forward=lambda xp, x, repeats: xp.tile(xp.reshape(x, (1,) * (len(repeats) - x.ndim) + tuple(x.shape)), repeats))


@op(RepeatBackward0, category="shape", namespaces=())
def repeat(input, *repeats):
    """The tensor tiled ``repeats`` times along each dim (extra leading dims for extra repeats): a copy."""
    sizes = _shape_arg(repeats)
    if len(sizes) < input.ndim:
        raise ShapeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    shape = (1,) * (len(sizes) - input.ndim) + tuple(input.shape)
    out = [s * r for s, r in zip(shape, sizes)]
    if any(n < 0 for n in out):
        bad = next(n for n in out if n < 0)
        raise ShapeError(f"Trying to create tensor with negative dimension {bad}: {out}")
    check_numel(out)
    return apply(RepeatBackward0, (input,), (sizes,))


@op(RepeatBackward0, category="shape")
def tile(input, *dims):
    """The tensor repeated ``dims`` times along each dim, as ``repeat`` (RepeatBackward0), with ones
    put before ``dims`` when it has fewer entries than the tensor has dims (``tile(x, (2, 1))``,
    ``x.tile(2, 1)``)."""
    reps = _ints("tile", "dims", dims[0] if len(dims) == 1 else dims)
    return repeat(input, (1,) * (input.ndim - len(reps)) + reps)


@op(FlipBackward0, category="shape")
def fliplr(input):
    """The columns (dim 1) in reverse order: ``flip(input, [1])``."""
    if input.ndim < 2:
        raise ShapeError("Input must be >= 2-d.")
    return flip(input, [1])


@op(FlipBackward0, category="shape")
def flipud(input):
    """The rows (dim 0) in reverse order: ``flip(input, [0])``."""
    if input.ndim < 1:
        raise ShapeError("Input must be >= 1-d.")
    return flip(input, [0])


@op(ViewBackward0, ReshapeAliasBackward0, UnsafeViewBackward0, category="shape")
def unflatten(input, dim, sizes):
    """``dim`` split into ``sizes`` (one of them may be -1), as a view where the strides allow."""
    sizes = _ints("unflatten", "sizes", sizes)
    d = _wrap_dim(dim, input.ndim)
    if not sizes:
        raise ShapeError("unflatten: sizes must be non-empty")
    size = input.shape[d]
    known = 1
    for n in sizes:
        if n != -1:
            known *= n
    if sizes.count(-1) > 1 or (-1 not in sizes and known != size) or (-1 in sizes and (known == 0 or size % known)):
        raise ShapeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
                         f"({size}) in the input tensor")
    sizes = tuple(size // known if n == -1 else n for n in sizes)
    return reshape(input, tuple(input.shape[:d]) + sizes + tuple(input.shape[d + 1:]))


# -- diag, diag_embed --------------------------------------------------------------------------

def _diag_embed(xp, x, offset, d1, d2):
    """Zeros with ``x``'s last dim on the diagonal (``offset`` above it) of the planes of the
    output's dims ``d1`` and ``d2``."""
    k = x.shape[-1]
    pad = offset if offset >= 0 else -offset
    n = k + pad
    if x.__class__ is _ndarray_type:
        out = xp.zeros(tuple(x.shape[:-1]) + (n, n), dtype=x.dtype)
        if k:
            i = xp.arange(k)
            rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
            out[..., rows, cols] = x
    else:  # no assignment through index arrays in the array API: the values picked where the diagonal is
        values = xp.concat([x, xp.zeros(tuple(x.shape[:-1]) + (pad,), dtype=x.dtype)], axis=-1) if pad else x
        values = xp.expand_dims(values, axis=-1 if offset >= 0 else -2)
        out = xp.where(xp.eye(n, k=offset, dtype=xp.bool), values, xp.zeros((), dtype=x.dtype))
    ndim = out.ndim
    if (d1, d2) != (ndim - 2, ndim - 1):
        out = xp.moveaxis(out, (ndim - 2, ndim - 1), (d1, d2))
    return out


def diagonal_of(F, grad, offset, d1, d2):
    """A formula's ``grad.diagonal(offset, d1, d2)`` (diag_embed's backward)."""
    if F.differentiable:
        return diagonal(grad, offset, d1, d2)
    return DiagonalBackward0.forward(F.xp, grad, offset, d1, d2)


formula_helpers(diagonal_of=diagonal_of)
DiagEmbedBackward0 = define_node("DiagEmbedBackward0", attrs=("offset", "dim1", "dim2"), forward=_diag_embed,
                                 self="diagonal_of(F, grad, offset, dim1, dim2)")
# torch.diag of a matrix is diagonal_copy: DiagonalBackward0's formula under torch's name for the copy
DiagonalBackward0_copy = define_node(
    "DiagonalBackward0_copy", attrs=("offset", "dim1", "dim2"), self=DiagonalBackward0.derivatives[0][1],
    forward=lambda xp, x, offset, d1, d2: xp.asarray(DiagonalBackward0.forward(xp, x, offset, d1, d2), copy=True))


@op(DiagEmbedBackward0, category="shape")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose planes of ``dim1`` and ``dim2`` (the output's) hold ``input``'s last dim on their
    diagonal (``offset`` above it), zeros elsewhere."""
    n = input.ndim + 1
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise ShapeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if not input.ndim:
        raise DimensionError("Dimension out of range (expected to be in range of [-1, 0], but got -1)")
    size = input.shape[-1] + abs(offset)
    check_numel(tuple(input.shape[:-1]) + (size, size))
    return apply(DiagEmbedBackward0, (input,), (int(offset), d1, d2))


@op(DiagEmbedBackward0, DiagonalBackward0_copy, category="shape")
def diag(input, diagonal=0):
    """A vector on a matrix's diagonal (``diagonal`` above it), or a matrix's diagonal as a vector (a copy)."""
    if input.ndim not in (1, 2):
        raise ShapeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    return apply(DiagonalBackward0_copy, (input,), (int(diagonal), 0, 1))


# -- rot90, repeat_interleave ------------------------------------------------------------------------

def _rot90(xp, x, k, dims):
    """torch's rot90: a quarter turn from dim0 towards dim1, ``k`` times: flip(dim1) then a transpose
    (k = 1), flip both (2), flip(dim0) then a transpose (3), a contiguous copy (0). The flips copy,
    the transposes are views of the copy, as torch's strides are."""
    d0, d1 = dims
    k %= 4
    if k == 0:
        return _np.array(x, order="C") if x.__class__ is _ndarray_type else xp.asarray(x, copy=True)
    if k == 2:
        return _flip(xp, x, (d0, d1))
    out = _flip(xp, x, d1 if k == 1 else d0)
    order = list(range(x.ndim))
    order[d0], order[d1] = d1, d0
    return xp.permute_dims(out, tuple(order))


def rot90_of(F, grad, k, dims):
    """derivatives.yaml's ``grad.rot90(-k, dims)``: under create_graph, the op (Rot90Backward0)."""
    return rot90(grad, -k, dims) if F.differentiable else _rot90(F.xp, grad, -k, dims)


formula_helpers(rot90_of=rot90_of)
Rot90Backward0 = define_node("Rot90Backward0", attrs=("k", "dims"), self="rot90_of(F, grad, k, dims)", forward=_rot90)


@op(Rot90Backward0, category="shape")
def rot90(input, k=1, dims=(0, 1)):
    """The tensor turned by ``k`` quarter turns in the plane of ``dims``, from the first towards the
    second (a new tensor)."""
    if k.__class__ is not int:
        turns = _index(k)
        if turns is None:
            raise GradTypeError(f"rot90(): argument 'k' (position 2) must be int, not {type(k).__name__}")
        k = turns
    dims = _ints("rot90", "dims", dims)
    n = input.ndim
    if len(dims) != 2:
        raise ShapeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if n < 2:
        raise ShapeError(f"expected total dims >= 2, but got total dims = {n}")
    wrapped = (_wrap_dim(dims[0], n), _wrap_dim(dims[1], n))
    if wrapped[0] == wrapped[1]:
        raise ShapeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    return apply(Rot90Backward0, (input,), (k, wrapped))


@op(ViewBackward0, CloneBackward0, ExpandBackward0, UnsqueezeBackward0, category="shape")
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element repeated ``repeats`` times along ``dim`` (None: of the flattened tensor); a tensor
    of repeats gives each slice its own count (an index_select). Alone, ``repeat_interleave(repeats)``
    is the indices 0, 1, ... each repeated its count."""
    if repeats is None:  # torch.repeat_interleave(repeats): the indices
        return _repeat_indices(input, output_size)
    x = input if dim is not None else flatten(input)
    d = _wrap_dim(dim if dim is not None else 0, input._data.ndim)
    if repeats.__class__ is Tensor:
        from .indexing import index_select
        if repeats.ndim == 0 or repeats.ndim == 1 and repeats.shape[0] == 1:
            repeats = expand(reshape(repeats, 1), x.shape[d])
        elif repeats.ndim == 1:
            if repeats.shape[0] != x.shape[d]:
                raise ShapeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                                 f"{repeats.shape[0]} and input.size({d}) = {x.shape[d]}")
        else:
            raise ShapeError("repeats must be 0-dim or 1-dim tensor")
        return index_select(x, d, _repeat_indices(repeats, output_size))
    count = repeats if repeats.__class__ is int else _index(repeats)
    if count is None:
        raise GradTypeError(f"repeat_interleave(): argument 'repeats' (position 2) must be Tensor, not "
                            f"{type(repeats).__name__}")
    if count < 0:
        raise ShapeError("Repeats must be non-negative")
    if output_size is not None and output_size != x.shape[d] * count:
        raise ShapeError(f"repeat_interleave: Invalid output_size, expected {x.shape[d] * count} but got {output_size}")
    # torch's: x.unsqueeze(d + 1).expand(..., count, ...).clone().flatten(d, d + 1); the sizes are
    # known good, so each view is recorded directly (five nodes, as torch's)
    shape = x._data.shape
    check_numel(shape[:d + 1] + (count,) + shape[d + 1:])
    x = view_of(UnsqueezeBackward0, x, (d + 1,))
    x = view_of(ExpandBackward0, x, (shape[:d + 1] + (count,) + shape[d + 1:],))
    x = apply1(CloneBackward0, x, x._data)
    return view_of(ViewBackward0, x, (shape[:d] + (shape[d] * count,) + shape[d + 1:],))


def _repeat_indices(repeats, output_size):
    """torch.repeat_interleave(repeats): 0..n-1, each index i repeated repeats[i] times (int64)."""
    if repeats.__class__ is not Tensor:
        raise GradTypeError(f"repeat_interleave(): argument 'repeats' (position 1) must be Tensor, not "
                            f"{type(repeats).__name__}")
    if repeats.ndim != 1:
        raise ShapeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype.name not in ("int64", "int32"):
        from .inplace import scalar_type
        raise KernelTypeError(f'"repeat_interleave_cpu" not implemented for \'{scalar_type(repeats.dtype)}\'')
    counts = repeats._backend.to_host(repeats._data)
    if counts.size and counts.min() < 0:
        raise ShapeError("repeats can not be negative")
    total = int(counts.sum())
    if output_size is not None and output_size != total:
        raise ShapeError("allocated size does not match required size")
    check_numel((total,))
    out = _np.repeat(_np.arange(counts.size, dtype=_np.int64), counts.astype(_np.int64))
    return Tensor._make(repeats._backend.from_host(out), repeats._backend)
