"""Indexing: ``x[key]`` decomposed as torch does it.

Working left to right, an int becomes ``select`` (SelectBackward0), a slice
``slice`` (SliceBackward0; a bare ``:`` inside a tuple is skipped), ``None``
``unsqueeze``; integer lists and bool/integer tensors are gathered last in one
advanced-index op (IndexBackward0). A key that records nothing is an alias.
"""

from __future__ import annotations

import re

import numpy as _np

from ..backend import NUMPY as _NUMPY, _dtype_name, _host_index, backend_of_array
from ..backend.numpy_fast import along_axis_flat, along_axis_key

_ndarray = _np.ndarray
from ..errors import AutogradError, GradcliError, GradIndexError, GradTypeError, RuntimeTypeError, ShapeError, TypeIndexError
from ..autograd.function import apply, apply2, guard_attrs
from .registry import op
from ..limits import check_numel
from ..autograd.node import NODE_CLASSES, define_node, formula_helpers
from ..autograd.tensor import Tensor, _wrap_dim
from .shape import AliasBackward0, unsqueeze, view_of
from . import shape as _shape
from .pointwise import _broadcast_shape, SubBackward0
from . import pointwise as _pointwise

SelectBackward0 = define_node("SelectBackward0", attrs=("key",),
                              self="F.embed(grad, self_sizes, key, False, True)",
                              forward=lambda xp, x, key: x[key])
SliceBackward0 = define_node("SliceBackward0", attrs=("key",),
                             self="F.embed(grad, self_sizes, key, False)",
                             forward=lambda xp, x, key: x[key])
IndexBackward0 = define_node("IndexBackward0", attrs=("key",), guarded=True,
                             self="F.embed(grad, self_sizes, key, True)",
                             forward=lambda xp, x, key: _gather(xp, x, key))
# Double backward of indexing: place a gradient into zeros; its own backward indexes again.
SliceBackwardBackward0 = define_node("SliceBackwardBackward0", attrs=("shape", "key"),
                                     self="F.take(grad, key)",
                                     forward=lambda xp, g, shape, key: _embed(xp, g, shape, key, False))
SelectBackwardBackward0 = define_node("SelectBackwardBackward0", attrs=("shape", "key"),  # select's, as torch
                                      self="F.take(grad, key)",
                                      forward=lambda xp, g, shape, key: _embed(xp, g, shape, key, False))
# index_put (``x[idx] = v``, and the double backward of ``x[idx]``): the indexed positions of
# ``self`` get ``values`` (added to them with accumulate), so ``self``'s gradient there is zero.
IndexPutBackward0 = define_node(
    "IndexPutBackward0", guarded=True, inputs=("self", "values"), attrs=("key", "accumulate"), broadcasts=True,
    self="grad if accumulate else grad - F.embed(F.take(grad, key), self_sizes, key, False)",
    values="F.take(grad, key)",
    forward=lambda xp, x, v, key, accumulate: _index_put(xp, x, v, key, accumulate))


def _rest(dim, ndim):
    """A key's tail after ``dim``: the array API indexes with full keys only (NumPy pads them)."""
    return (Ellipsis,) if dim + 1 < ndim else ()


def _is_mask(arr) -> bool:
    return _dtype_name(arr.dtype) == "bool"


def _gather(xp, x, key):
    """``x[key]`` for advanced indexing: NumPy directly, other namespaces through their backend."""
    if xp is _NUMPY.xp:
        return x[key]
    return backend_of_array(x).gather(x, key)


def _embed(xp, g, shape, key, accumulate):
    out = xp.zeros(shape, dtype=g.dtype)
    if accumulate:  # repeated indices add up (index_put_ with accumulate=True)
        result = backend_of_array(g).scatter_add(out, key, g)
        return out if result is None else result
    if xp is _NUMPY.xp:
        out[key] = g
        return out
    return backend_of_array(g).put(out, key, g)


def _index_put(xp, x, v, key, accumulate):
    out = xp.asarray(x, copy=True)
    if accumulate:
        result = backend_of_array(out).scatter_add(out, key, v)
        return out if result is None else result
    if xp is _NUMPY.xp:
        out[key] = v
        return out
    return backend_of_array(out).put(out, key, v)


def embed(grad, shape, key, accumulate, select=False):
    if accumulate:
        zeros = Tensor._make(grad._backend.xp.zeros(shape, dtype=grad._data.dtype), grad._backend)
        return apply(IndexPutBackward0, (zeros, grad), (key, True))
    return apply(SelectBackwardBackward0 if select else SliceBackwardBackward0, (grad,), (shape, key))


def index_with_key(x, key):
    return apply(IndexBackward0, (x,), (key,))


@op(SliceBackward0, category="shape")
def narrow(input, dim, start, length):
    """``length`` elements of ``dim`` from ``start`` (a view: SliceBackward0)."""
    if not input._data.ndim:
        raise ShapeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = _wrap_dim(dim, input.ndim)
    size = input.shape[dim]
    if not -size <= start <= size:
        raise GradIndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    start = start + size if start < 0 else start
    if length < 0 or start + length > size:
        raise ShapeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    key = (slice(None),) * dim + (slice(start, start + length),) + _rest(dim, input.ndim)
    return view_of(SliceBackward0, input, (key,))


@op(SubBackward0, SliceBackward0, _shape.CatBackward0, _shape.CopyBackwards, category="shape")
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim``: ``x[1:] - x[:-1]`` (two slices and a
    SubBackward0), repeated; ``prepend``/``append`` are joined on first (cat); bool tensors give
    where neighbours differ; ``n=0`` a copy."""
    if input.__class__ is not Tensor:
        raise GradTypeError(f"diff(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input.ndim:
        raise ShapeError("diff expects input to be at least one-dimensional")
    if n.__class__ is not int:
        raise GradTypeError(f"diff(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise ShapeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.ndim)
    for extra in (prepend, append):
        if extra is not None and (extra.__class__ is not Tensor or extra.ndim != input.ndim):
            raise ShapeError("diff expects prepend or append to be the same dimension as input")
    if prepend is not None or append is not None:
        input = _shape.cat([t for t in (prepend, input, append) if t is not None], d)
    if n == 0:  # torch's zeros_like(input).copy_(input): CopyBackwards
        return _shape.copy_(Tensor._make(input._backend.xp.zeros_like(input._data), input._backend), input)
    for _ in range(n):
        size = input.shape[d]
        if size == 0:
            break
        later, earlier = narrow(input, d, 1, size - 1), narrow(input, d, 0, size - 1)
        input = _pointwise.ne(later, earlier) if input.dtype.name == "bool" else _pointwise.sub(later, earlier)
    return input


def _is_advanced(item) -> bool:
    if isinstance(item, Tensor):
        return item.ndim > 0 or item.dtype.name == "bool"
    return isinstance(item, list)


def _consumed(item) -> int:
    if item is None:
        return 0
    if isinstance(item, Tensor) and item.dtype.name == "bool":
        return item.ndim
    return 1


def _index_tensors(key) -> list:
    """The tensors of an advanced key, which torch saves with the node (bool masks too; a list
    becomes a new tensor): ``guard_attrs`` checks them before backward."""
    return [k for k in (key if key.__class__ is tuple else (key,)) if k.__class__ is Tensor and _is_advanced(k)]


def getitem(x: Tensor, key):
    """``x[key]`` for ints, slices, None, ..., integer lists and bool/integer tensors."""
    if key.__class__ is int:  # x[0]: one select (what _decompose records, without its passes)
        return _select(x, 0, key, 0)
    if key.__class__ is tuple and 0 < len(key) <= x._data.ndim:
        out = _basic(x, key)
        if out is not None:
            return out
    out, full, recorded = _decompose(x, key)
    if full is not None:
        return guard_attrs(apply(IndexBackward0, (out,), (full,)), *_index_tensors(key))
    if not recorded:
        return view_of(AliasBackward0, out)
    return out


def _basic(x: Tensor, key: tuple):
    """``x[key]`` for a tuple of ints and slices, no more than ``x`` has dims (``x[:, 1]``,
    ``x[0, 1:]``): recorded left to right as ``_decompose`` does; None for any other item."""
    for item in key:
        if item.__class__ is not int and item.__class__ is not slice:
            return None
    out, d = x, 0
    for position, item in enumerate(key):
        if item.__class__ is int:
            out = _select(out, d, item, position)
        else:
            if item != _ALL:  # a bare ``:`` inside a tuple records nothing
                out = _slice(out, d, item)
            d += 1
    return view_of(AliasBackward0, out) if out is x else out


_ALL = slice(None)


def _decompose(x: Tensor, key, skip_full: bool = False):
    """``x[key]`` as torch splits it: the view the basic items (ints, slices, None) make, recorded
    left to right, and the advanced items' full key on that view (None when there are none)."""
    single = not isinstance(key, tuple)
    items = [key] if single else list(key)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise GradTypeError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(i) for i in items if i is not Ellipsis)
    if x.ndim == 0 and used and items[0] is not Ellipsis and (isinstance(items[0], slice) or (
            isinstance(items[0], int) and not isinstance(items[0], bool))):
        _select(x, 0, 0) if isinstance(items[0], int) else _slice(x, 0, items[0])  # torch's 0-dim messages
    if used > x.ndim:
        raise GradIndexError(f"too many indices for tensor of dimension {x.ndim}")
    at = next((i for i, item in enumerate(items) if item is Ellipsis), None)
    if at is not None:
        items[at:at + 1] = [slice(None)] * (x.ndim - used)
        single = False
    out, d = x, 0
    advanced = []
    recorded = False
    for position, item in enumerate(items):
        if item is None:
            out = unsqueeze(out, d)
            d += 1
            recorded = True
        elif isinstance(item, slice):
            if skip_full and _covers(item, out.shape[d] if d < out.ndim else None):
                pass  # set_item's slice optimization: a slice over the whole dim is no slice
            elif single or item != slice(None):
                out = _slice(out, d, item)
                recorded = True
            d += 1
        elif _is_advanced(item):
            advanced.append((d, _index_array(out, item)))
            _check_mask(out.shape, d, advanced[-1][1])
            d += _consumed(item)
        elif isinstance(item, (int, Tensor)) and not isinstance(item, bool):
            out = _select(out, d, int(item), position)  # torch names the index's position in the key
            recorded = True
        elif isinstance(item, bool):
            raise GradTypeError("indexing with a bare True/False is not supported")
        else:
            raise GradTypeError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                                f"Variables are valid indices (got {type(item).__name__})")
    if not advanced:
        return out, None, recorded
    _check_index_size(out.shape, advanced)
    full = [slice(None)] * out.ndim
    for dim, arr in reversed(advanced):
        span = arr.ndim if _is_mask(arr) else 1
        full[dim:dim + span] = [arr]
    return out, tuple(full), recorded


def _check_mask(shape, dim, arr) -> None:
    """torch's IndexError for a bool mask whose shape does not match the dims it indexes."""
    if not _is_mask(arr):
        return
    for i, n in enumerate(arr.shape):
        if dim + i >= len(shape) or shape[dim + i] != n:
            raise GradIndexError(f"The shape of the mask {list(arr.shape)} at index {i} does not match the shape "
                                 f"of the indexed tensor {list(shape)} at index {dim + i}")


def _covers(item: slice, size) -> bool:
    return (size is not None and item.start in (None, 0) and item.step in (None, 1)
            and (item.stop is None or (isinstance(item.stop, int) and item.stop >= size)))


def _check_index_size(shape, advanced) -> None:
    """The result of advanced indexing must fit the element limit: checked before numpy gathers
    (``x[zeros(10000, 10000, dtype=long)]`` on a (1, 10000) tensor would have 10**12 elements)."""
    index_shapes, consumed = [], set()
    for dim, arr in advanced:
        if _is_mask(arr):
            index_shapes.append((int(backend_of_array(arr).xp.count_nonzero(arr)),))
            consumed.update(range(dim, dim + arr.ndim))
        else:
            index_shapes.append(tuple(arr.shape))
            consumed.add(dim)
    out = []
    for i in range(1, max(len(s) for s in index_shapes) + 1):
        size = 1
        for s in index_shapes:
            d = s[-i] if i <= len(s) else 1
            if d != 1:
                if size != 1 and d != size:
                    return  # the indices do not broadcast: numpy reports it
                size = d
        out.append(size)
    check_numel(out + [n for i, n in enumerate(shape) if i not in consumed])


def _select(x, dim, index, position=None):
    shape = x._data.shape
    if not shape:
        raise GradIndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                         "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    size = shape[dim]
    if not -size <= index < size:
        raise GradIndexError(f"index {index} is out of bounds for dimension {dim if position is None else position} "
                         f"with size {size}")
    # a trailing ... keeps NumPy's result a view even when it is 0-d
    return view_of(SelectBackward0, x, ((slice(None),) * dim + (index % size, Ellipsis),))


def _slice(x, dim, item):
    if x.ndim == 0:
        raise GradIndexError("slice() cannot be applied to a 0-dim tensor.")
    if item.step is not None and item.step <= 0:
        raise ShapeError("step must be greater than zero")
    for part in (item.start, item.stop, item.step):
        if part is not None and (isinstance(part, bool) or not isinstance(part, int)):
            raise GradTypeError("slice indices must be integers or None or have an __index__ method")
    return view_of(SliceBackward0, x, ((slice(None),) * dim + (item,) + _rest(dim, x.ndim),))


def _index_array(x, item):
    xp = x._backend.xp
    if isinstance(item, Tensor):
        arr = item._data
        if item.dtype.name == "bool":
            return arr
        if item.dtype.category != 1:
            raise TypeIndexError("tensors used as indices must be long, int, byte or bool tensors")
        return arr
    flat = _flatten_list(item)
    if any(isinstance(v, bool) for v in flat) and all(isinstance(v, bool) for v in flat):
        return xp.asarray(item, dtype=x._backend.dtype("bool"))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in flat):
        raise TypeIndexError("tensors used as indices must be long, int, byte or bool tensors")
    return xp.asarray(item, dtype=x._backend.dtype("int64"))


def _flatten_list(item):
    out, stack = [], [item]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            out.append(v)
    return out


def _checked_getitem(self, key):
    try:
        return getitem(self, key)
    except IndexError as exc:  # numpy's words for an integer-list index out of range, in torch's
        if isinstance(exc, GradcliError):
            raise
        raise GradIndexError(re.sub(r"for axis \d+", "for dimension 0", str(exc))) from None


Tensor.__getitem__ = _checked_getitem


@op(SelectBackward0, category="shape")
def select(input, dim, index):
    """The slice at ``index`` along ``dim`` (that dim removed)."""
    shape = input._data.shape
    if not shape:
        raise GradIndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, len(shape))
    size = shape[d]
    if index.__class__ is not int:
        index = int(index)
    if not -size <= index < size:
        raise GradIndexError(f"select(): index {index} out of range for tensor of size {list(shape)} "
                             f"at dimension {d}")
    return _select(input, d, index)




# -- item assignment --------------------------------------------------------------------------------

def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value`` as torch's ``set_item``: the basic items make a view (slices covering a
    whole dim skipped) that ``value`` is copied into (CopySlices on ``x``), or filled with a 0-d
    value; advanced items an ``index_put_`` on that view (IndexPutBackward0)."""
    if key is False:
        return
    value = _value_tensor(x, value)
    out, full, _ = _decompose(x, key, skip_full=True)
    if full is None:
        _copy_to(out, value)
        return
    stripped = _strip_leading_ones(value.shape)
    if stripped != tuple(value.shape):
        value = value.view(stripped)
    if value.dtype.name != out.dtype.name:
        value = value.to(out.dtype.name)
    index_put_(out, full, value, _index_tensors(key))


def _copy_to(dst: Tensor, src: Tensor) -> None:
    """torch's ``copy_to``: equal shapes copy, a 0-d value fills, anything else is viewed without
    its leading 1-dims and expanded to the destination first (ViewBackward0, ExpandBackward0)."""
    from .shape import copy_, fill_
    if tuple(dst.shape) == tuple(src.shape):
        copy_(dst, src)
    elif src.ndim == 0:
        fill_(dst, src)
    else:
        src = src.view(_strip_leading_ones(src.shape))
        if tuple(src.shape) != tuple(dst.shape):
            src = src.expand(*dst.shape)  # torch's expand messages when it does not fit
        copy_(dst, src)


def _strip_leading_ones(shape):
    shape = tuple(shape)
    i = 0
    while i < len(shape) and shape[i] == 1:
        i += 1
    return shape[i:]


def _value_tensor(x: Tensor, value) -> Tensor:
    """A Python number (or list) as a tensor of ``x``'s dtype and device, as torch's setitem."""
    if isinstance(value, Tensor):
        return value
    from ..autograd.factory import tensor as _tensor
    try:
        return _tensor(value, dtype=x.dtype.name, device=str(x.device))
    except (TypeError, ValueError):
        raise GradTypeError(f"can't assign a {type(value).__name__} to a {_type_name(x)}") from None


def _type_name(x: Tensor) -> str:
    kind = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}.get(x.dtype.name, "")
    return f"torch.{kind}Tensor"


def index_put_(x: Tensor, key, value: Tensor, kept=()) -> Tensor:
    """``x[key] = value`` for an advanced key, in place (recorded as IndexPutBackward0); ``kept``:
    the index tensors of the key, checked before backward as torch's saved indices."""
    from ..autograd.grad_mode import STATE
    from ..autograd.views import rebase, writable
    x._check_inplace()
    if STATE.enabled and (x._requires_grad or value._requires_grad):
        old = Tensor._make(x._data, x._backend, x.grad_fn)  # x as it was: its edge
        old._requires_grad = x._requires_grad
        result = guard_attrs(apply(IndexPutBackward0, (old, value), (key, False)), *kept)
        writable(x)[...] = result._data
        rebase(x, result.grad_fn)
    else:
        writable(x)[key] = value._data
    x._bump()
    return x


Tensor.__setitem__ = lambda self, key, value: setitem(self, key, value)


# -- index_select, gather, scatter: an index tensor along one dim --------------------------------------
#
# Each is an advanced key on the arrays (``_dim_key``): the index along ``dim``, the positions
# 0..n-1 along every other dim, so one NumPy indexing (or ``add.at``) does the work on any backend
# that indexes as NumPy does. The index is an attr, not an input: torch gives it no edge.

def _dim_key(xp, dim, index):
    """The advanced key that picks ``x[..., index[i, j, ...], ...]`` at ``dim`` for every position
    of ``index`` (gather's rule): ``index`` at ``dim``, broadcast positions elsewhere."""
    if index.__class__ is _ndarray:  # the positions kept per shape (numpy_fast's, as take_along_axis's)
        return along_axis_key(index.shape, dim, index)
    ndim = index.ndim
    return tuple(index if d == dim else _positions(xp, index.shape[d], d, ndim) for d in range(ndim))


def _positions(xp, n, d, ndim):
    """0..n-1 along dim ``d`` of ``ndim`` dims, made once per namespace (on a GPU each is a kernel)."""
    key = (xp, n, d, ndim)
    found = _POSITIONS.get(key)
    if found is None:
        if len(_POSITIONS) >= 256:
            _POSITIONS.clear()
        shape = [1] * ndim
        shape[d] = n
        found = _POSITIONS[key] = xp.reshape(xp.arange(n), tuple(shape))
    return found


_POSITIONS: dict = {}


def _scalar_view(xp, x):
    """A 0-d array as 1-d: torch's gather/scatter treat a 0-d tensor as one element."""
    return xp.reshape(x, (1,)) if x.ndim == 0 else x


def gather_array(xp, x, dim, index):
    if x.__class__ is _ndarray and index.__class__ is _ndarray and index.ndim == x.ndim != 0:
        # NumPy: _gather's indexing by _dim_key's key, as one take of the flat positions (the
        # index in range: gather checked it, a formula's is the forward's)
        return x.take(along_axis_flat(x.shape, dim, index))
    if x.ndim == 0:
        return xp.reshape(_gather(xp, _scalar_view(xp, x), (_scalar_view(xp, index),)), ())
    return _gather(xp, x, _dim_key(xp, dim, index))


def scatter_array(xp, x, dim, index, src, accumulate=False):
    """``x`` with ``src`` (an array of at least ``index``'s shape, or a number) written, or added,
    at ``index`` along ``dim``; a new array."""
    if x.__class__ is _ndarray and index.__class__ is _ndarray and index.ndim == x.ndim != 0 \
            and getattr(src, "ndim", x.ndim) == x.ndim:  # NumPy, no 0-d operand: the lines below, direct
        out = x.copy(order="K")  # (xp.asarray(x, copy=True)'s layout)
        if src.__class__ is _ndarray and src.shape != index.shape:
            src = src[tuple(slice(0, n) for n in index.shape)]
        if accumulate:
            _np.add.at(out, along_axis_key(index.shape, dim, index), src)  # the NumPy backend's scatter_add
        elif out.flags.c_contiguous:  # the key's assignment as one put at the flat positions (index in range)
            out.put(along_axis_flat(x.shape, dim, index), src)
        else:
            out[along_axis_key(index.shape, dim, index)] = src
        return out
    shape = x.shape
    out = xp.asarray(_scalar_view(xp, x), copy=True)
    index = _scalar_view(xp, index)
    key = _dim_key(xp, dim, index)
    if hasattr(src, "shape"):
        src = _scalar_view(xp, src)
        if src.shape != index.shape:  # the part of src the index covers
            src = src[tuple(slice(0, n) for n in index.shape)]
    backend = backend_of_array(out)
    if accumulate:
        result = backend.scatter_add(out, key, src)
        out = out if result is None else result
    elif backend.native:
        out[key] = src
    else:  # the array API assigns through integer arrays nowhere: on the host (correct, not fast)
        host = _np.array(backend.to_host(out))
        host[_host_index(backend, key)] = _np.asarray(backend.to_host(src)) if hasattr(src, "shape") else src
        out = backend.from_host(host)
    return xp.reshape(out, shape) if out.shape != shape else out


def index_add_array(xp, x, dim, index, source):
    if x.__class__ is _ndarray and x.ndim and source.ndim:  # NumPy, no 0-d operand: the lines below, direct
        out = x.copy(order="K")  # (xp.asarray(x, copy=True)'s layout)
        _np.add.at(out, (_ALL,) * dim + (index,), source)  # the NumPy backend's scatter_add
        return out
    out = xp.asarray(_scalar_view(xp, x), copy=True)
    if source.ndim == 0:
        source = xp.reshape(source, (1,))
    result = backend_of_array(out).scatter_add(out, (slice(None),) * dim + (index,), source)
    out = out if result is None else result
    return xp.reshape(out, x.shape) if out.shape != x.shape else out


def index_select_array(xp, x, dim, index):
    if x.ndim == 0:
        return xp.reshape(_gather(xp, xp.reshape(x, (1,)), (index,)), index.shape)
    return _gather(xp, x, (slice(None),) * dim + (index,))


IndexSelectBackward0 = define_node(
    "IndexSelectBackward0", guarded=True, attrs=("dim", "index"),
    self="F.index_add(F.zeros(self_sizes, grad), dim, index, grad)",  # torch's index_select_backward
    forward=lambda xp, x, dim, index: index_select_array(xp, x, dim, index))
IndexAddBackward0 = define_node(
    "IndexAddBackward0", guarded=True, inputs=("self", "source"), attrs=("dim", "index", "alpha"),
    self="grad",
    source="index_add_source(F, grad, dim, index, source_sizes, alpha)",
    forward=lambda xp, x, s, dim, index, alpha: index_add_array(xp, x, dim, index, s if alpha == 1 else s * alpha))
GatherBackward0 = define_node(
    "GatherBackward0", guarded=True, attrs=("dim", "index"),
    self="F.scatter_add(F.zeros(self_sizes, grad), dim, index, grad)",  # torch's gather_backward
    forward=lambda xp, x, dim, index: gather_array(xp, x, dim, index))
ScatterBackward0 = define_node(
    "ScatterBackward0", guarded=True, inputs=("self", "src"), attrs=("dim", "index"),
    self="F.scatter(grad, dim, index, 0)", src="src_grad(F, grad, dim, index, src_sizes, 'ScatterBackward0')",
    forward=lambda xp, x, src, dim, index: scatter_array(xp, x, dim, index, src))
ScatterBackward1 = define_node(
    "ScatterBackward1", guarded=True, attrs=("dim", "index", "value"),
    self="F.scatter(grad, dim, index, 0)",
    forward=lambda xp, x, dim, index, value: scatter_array(xp, x, dim, index, value))
ScatterAddBackward0 = define_node(
    "ScatterAddBackward0", guarded=True, inputs=("self", "src"), attrs=("dim", "index"),
    self="grad", src="src_grad(F, grad, dim, index, src_sizes, 'ScatterAddBackward0')",
    forward=lambda xp, x, src, dim, index: scatter_array(xp, x, dim, index, src, True))


def src_grad(F, grad, dim, index, src_sizes, name):
    """torch's ``grad.gather(dim, index)`` for scatter's src: index-shaped, so a src larger than the
    index fails backward as torch's engine fails it (it checks every gradient's shape)."""
    if tuple(index.shape) != tuple(src_sizes):
        raise AutogradError(f"Function {name} returned an invalid gradient at index 1 - got {list(index.shape)} "
                            f"but expected shape compatible with {list(src_sizes)}")
    return F.gather(grad, dim, index)


def index_add_source(F, grad, dim, index, source_sizes, alpha):
    """torch's ``maybe_multiply(grad.index_select(dim, index).expand_as(source), alpha)`` (a 0-d
    source: the one selected element, as a 0-d gradient)."""
    out = F.index_select(grad, dim, index)
    out = F.expand(out, source_sizes) if source_sizes else F.reshape(out, ())
    return out if alpha == 1 else out * alpha


formula_helpers(src_grad=src_grad, index_add_source=index_add_source)


def _index_arg(fn, index, arg="index", position=2):
    if not isinstance(index, Tensor):
        raise GradTypeError(f"{fn}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {type(index).__name__}")
    if index.dtype.name not in ("int64", "int32"):
        expected = "int32 or int64" if fn == "index_select" else "int32/int64"
        raise RuntimeTypeError(f"{fn}(): Expected dtype {expected} for index")
    return index._data


def _index_range(xp, index):
    """The least and greatest index (a small NumPy array's from its list: two reductions cost more)."""
    if index.__class__ is _ndarray and index.size <= 64:
        values = index.ravel().tolist()
        return min(values), max(values)
    if index.__class__ is _ndarray:
        return int(xp.min(index)), int(xp.max(index))
    # one copy from the device for both (each int() of a GPU array waits for the device)
    low, high = _np.asarray(backend_of_array(index).to_host(xp.stack([xp.min(index), xp.max(index)]))).tolist()
    return low, high


def _check_bounds(xp, index, size, dim):
    """torch's "index 4 is out of bounds for dimension 1 with size 4" (negative indices too)."""
    if index.size:
        low, high = _index_range(xp, index)
        if low < 0 or high >= size:
            raise ShapeError(f"index {low if low < 0 else high} is out of bounds for dimension {dim} with size {size}")


def _check_gather_shapes(fn, self_shape, dim, index, src_shape=None):
    """torch's gather/scatter shape rules: one number of dims; index no larger than self (but at
    ``dim``) and than src."""
    sizes = index.shape
    if sizes == self_shape and (src_shape is None or sizes == src_shape) and sizes:
        return  # the usual call: index, self (and src) of one shape
    ndim = max(len(self_shape), 1)
    if max(index.ndim, 1) != ndim:
        raise ShapeError(f"Index tensor must have the same number of dimensions as {'input' if fn == 'gather' else 'self'} tensor")
    if src_shape is not None and max(len(src_shape), 1) != ndim:
        raise ShapeError("Index tensor must have the same number of dimensions as src tensor")
    if not index.ndim:
        return
    sizes = list(index.shape)
    if any(sizes[d] > self_shape[d] for d in range(ndim) if d != dim) or (
            src_shape is not None and any(sizes[d] > src_shape[d] for d in range(ndim))):
        if fn == "gather":
            bad = next(d for d in range(ndim) if d != dim and sizes[d] > self_shape[d])
            raise ShapeError(f"Size does not match at dimension {bad} expected index {sizes} to be no larger than "
                             f"self {list(self_shape)} apart from dimension {dim}")
        raise ShapeError(f"Expected index {sizes} to be no larger than self {list(self_shape)} apart from dimension "
                         f"{dim} and to be no larger size than src {list(src_shape)}")


@op(IndexSelectBackward0)
def index_select(input, dim, index):
    """The entries of ``input`` at the 1-d ``index`` along ``dim`` (copies, in the index's order)."""
    data = _index_arg("index_select", index)
    d = _wrap_dim(dim, input.ndim)
    if data.ndim > 1:
        raise GradIndexError("index_select(): Index is supposed to be a vector")
    xp = input._backend.xp
    _check_bounds_select(xp, data, input.shape[d] if input.ndim else 1)
    return guard_attrs(apply(IndexSelectBackward0, (input,), (d, data if data.ndim == 1 else xp.reshape(data, (-1,)))),
                       index)


def _check_bounds_select(xp, index, size):
    if index.size:
        low, high = _index_range(xp, index)
        if low < 0 or high >= size:
            bad = low if low < 0 else high
            raise ShapeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")


@op(IndexAddBackward0)
def index_add(input, dim, index, source, *, alpha=1):
    """``input`` with ``alpha * source``'s slices added at the 1-d ``index`` along ``dim`` (repeats add up)."""
    data = _index_arg("index_add", index)
    d = _wrap_dim(dim, input.ndim)
    n = data.size
    if (source.shape[d] if source.ndim else 1) != n:
        raise ShapeError(f"index_add_(): Number of indices ({n}) should be equal to source.size(dim): "
                         f"({source.shape[d] if source.ndim else 1}), for dim: {d}")
    xp = input._backend.xp
    _check_bounds(xp, data, input.shape[d] if input.ndim else 1, d)
    out = apply(IndexAddBackward0, (input, source), (d, data if data.ndim == 1 else xp.reshape(data, (-1,)), alpha))
    return guard_attrs(out, index) if source._requires_grad else out  # (only source's gradient reads it)


@op(GatherBackward0, NODE_CLASSES["ExpandBackward0"], NODE_CLASSES["ViewBackward0"], category="indexing")
def take_along_dim(input, indices, dim=None):
    """The values at ``indices`` along ``dim``, the two broadcast against each other in every other
    dim (torch's _take_along_dim_helper: the input expanded, ExpandBackward0 even to its own shape,
    then gather), or of the flattened input without ``dim`` (``input.view(-1).gather(0, indices.view(-1))``).
    The indices are broadcast only where their shape changes (they need no node)."""
    if input.__class__ is not Tensor:
        raise GradTypeError(f"take_along_dim(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
    if indices.__class__ is not Tensor:
        raise GradTypeError(f"take_along_dim(): argument 'indices' (position 2) must be Tensor, not "
                            f"{type(indices).__name__}")
    if indices._data.dtype is not _INT64 and indices.dtype.name != "int64":
        raise RuntimeTypeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                               f"{_SCALAR_NAMES.get(indices.dtype.name, indices.dtype.name)}")
    if dim is None:
        return gather(_shape.view(input, -1), 0, _shape.view(indices, -1))
    shape, ishape = input._data.shape, indices._data.shape
    if len(shape) != len(ishape):
        raise ShapeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                         f"but got {len(shape)} dimensions for input, and {len(ishape)} dimensions for indices")
    d = _wrap_dim(dim, len(shape))
    if shape[:d] == ishape[:d] and shape[d + 1:] == ishape[d + 1:]:  # the usual call: nothing to broadcast
        input_shape = shape
    else:
        index_shape = _broadcast_shape(shape[:d] + ishape[d:d + 1] + shape[d + 1:], ishape)
        input_shape = _broadcast_shape(ishape[:d] + shape[d:d + 1] + ishape[d + 1:], shape)
        if index_shape != ishape:
            indices = _shape._expand(indices, index_shape)
    # gather's own steps, its argument checks done above: the indices' bounds (before any node),
    # the expand, then the node. torch's node saves a copy of the indices: changed in place
    # afterwards, its backward neither fails nor sees the change (gather's own would fail), and a
    # second backward is refused as for any saved tensor (guard_attrs with no tensor: its own copy)
    xp = input._backend.xp
    _check_bounds(xp, indices._data, shape[d], d)
    return guard_attrs(apply(GatherBackward0, (_shape._expand(input, input_shape),),
                             (d, xp.asarray(indices._data, copy=True))))


_INT64 = _np.dtype("int64")
_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int32": "Int", "bool": "Bool"}


@op(GatherBackward0)
def gather(input, dim, index, *, sparse_grad=False):
    """``out[i][j] = input[index[i][j]][j]`` for dim 0 (and so on): values picked along ``dim``."""
    data = _index_arg("gather", index)
    d = _wrap_dim(dim, input.ndim)
    _check_gather_shapes("gather", input.shape, d, data)
    _check_bounds(input._backend.xp, data, input.shape[d] if input.ndim else 1, d)
    return guard_attrs(apply(GatherBackward0, (input,), (d, data)), index)


def _scatter(fn, input, dim, index, src, accumulate):
    data = _index_arg(fn, index)
    x = input._data  # its shapes and dtype read from the arrays (the tensors' properties cost more)
    d = _wrap_dim(dim, x.ndim)
    tensor_src = src.__class__ is Tensor or isinstance(src, Tensor)
    if accumulate and not tensor_src:
        raise GradTypeError(f"scatter_add(): argument 'src' (position 3) must be Tensor, not {type(src).__name__}")
    _check_gather_shapes("scatter", x.shape, d, data, src._data.shape if tensor_src else None)
    if tensor_src and src._data.dtype is not x.dtype and src.dtype.name != input.dtype.name:
        raise RuntimeTypeError(f"{fn}(): Expected self.dtype to be equal to src.dtype")
    _check_bounds(input._backend.xp, data, x.shape[d] if x.ndim else 1, d)
    if not tensor_src:
        return guard_attrs(apply(ScatterBackward1, (input,), (d, data, src)), index)
    cls = ScatterAddBackward0 if accumulate else ScatterBackward0
    if input.__class__ is Tensor and src.__class__ is Tensor:  # apply's own two-tensor path, direct
        out = apply2(cls, input, src, x, src._data, (d, data))
    else:
        out = apply(cls, (input, src), (d, data))
    # (torch saves the index where a formula reads it: scatter_add's for src's gradient only)
    return guard_attrs(out, index) if not accumulate or src._requires_grad else out


@op(ScatterBackward0, ScatterBackward1, inplace=True)
def scatter(input, dim, index, src=None, *, value=None):
    """``input`` with ``src``'s values (a tensor, or one number) written at ``index`` along ``dim``."""
    if src is None:
        src = value
    return _scatter("scatter", input, dim, index, src, False)


@op(ScatterAddBackward0, inplace=True)
def scatter_add(input, dim, index, src):
    """``input`` with ``src``'s values added at ``index`` along ``dim`` (repeated indices add up)."""
    return _scatter("scatter", input, dim, index, src, True)


MaskedSelectBackward0 = define_node(
    "MaskedSelectBackward0", guarded=True, attrs=("mask",), broadcasts=True,
    self="F.embed(grad, mask.shape, mask, False)",  # zeros of the broadcast shape, grad where the mask is
    forward=lambda xp, x, mask: _gather(xp, xp.broadcast_to(x, mask.shape), mask))


@op(MaskedSelectBackward0)
def masked_select(input, mask):
    """The elements where the bool ``mask`` (broadcast with the input) is true, as a 1-d tensor."""
    if not isinstance(mask, Tensor):
        raise GradTypeError(f"masked_select(): argument 'mask' (position 1) must be Tensor, not {type(mask).__name__}")
    if mask.dtype.name != "bool":
        raise RuntimeTypeError("masked_select: expected BoolTensor for mask")
    a, b = tuple(mask.shape), tuple(input.shape)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    for d in reversed(range(n)):  # torch's words, from the last dim: mask is ``a``, the input ``b``
        if a[d] != b[d] and a[d] != 1 and b[d] != 1:
            raise ShapeError(f"The size of tensor a ({a[d]}) must match the size of tensor b ({b[d]}) at "
                             f"non-singleton dimension {d}")
    shape = tuple(max(i, j) if i and j else 0 for i, j in zip(a, b))
    return guard_attrs(apply(MaskedSelectBackward0, (input,), (input._backend.xp.broadcast_to(mask._data, shape),)),
                       mask)
