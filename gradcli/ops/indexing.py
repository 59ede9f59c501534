"""Indexing: ``x[key]`` decomposed as torch does it.

Working left to right, an int becomes ``select`` (SelectBackward0), a slice
``slice`` (SliceBackward0; a bare ``:`` inside a tuple is skipped), ``None``
``unsqueeze``; integer lists and bool/integer tensors are gathered last in one
advanced-index op (IndexBackward0). A key that records nothing is an alias.
"""

from __future__ import annotations

import re

from ..backend import NUMPY as _NUMPY, _dtype_name, backend_of_array
from ..errors import GradTypeError, ShapeError
from ..autograd.function import apply
from .registry import op
from ..limits import check_numel
from ..autograd.node import define_node
from ..autograd.tensor import Tensor, _wrap_dim
from .shape import AliasBackward0, unsqueeze

SelectBackward0 = define_node("SelectBackward0", attrs=("key",),
                              self="F.embed(grad, self_sizes, key, False)",
                              forward=lambda xp, x, key: x[key])
SliceBackward0 = define_node("SliceBackward0", attrs=("key",),
                             self="F.embed(grad, self_sizes, key, False)",
                             forward=lambda xp, x, key: x[key])
IndexBackward0 = define_node("IndexBackward0", attrs=("key",),
                             self="F.embed(grad, self_sizes, key, True)",
                             forward=lambda xp, x, key: _gather(xp, x, key))
# Double backward of indexing: place a gradient into zeros; its own backward indexes again.
SliceBackwardBackward0 = define_node("SliceBackwardBackward0", attrs=("shape", "key"),
                                     self="F.take(grad, key)",
                                     forward=lambda xp, g, shape, key: _embed(xp, g, shape, key, False))
IndexPutBackward0 = define_node("IndexPutBackward0", attrs=("shape", "key"),
                                self="F.take(grad, key)",
                                forward=lambda xp, g, shape, key: _embed(xp, g, shape, key, True))


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
    out[key] = g
    return out


def embed(grad, shape, key, accumulate):
    return apply(IndexPutBackward0 if accumulate else SliceBackwardBackward0, (grad,), (shape, key))


def index_with_key(x, key):
    return apply(IndexBackward0, (x,), (key,))


@op(SliceBackward0, category="shape")
def narrow(input, dim, start, length):
    """``length`` elements of ``dim`` from ``start`` (a view: SliceBackward0)."""
    key = (slice(None),) * dim + (slice(start, start + length),) + _rest(dim, input.ndim)
    return apply(SliceBackward0, (input,), (key,))


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


def getitem(x: Tensor, key):
    """``x[key]`` for ints, slices, None, ..., integer lists and bool/integer tensors."""
    single = not isinstance(key, tuple)
    items = [key] if single else list(key)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise GradTypeError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(i) for i in items if i is not Ellipsis)
    if x.ndim == 0 and used and items[0] is not Ellipsis and (isinstance(items[0], slice) or (
            isinstance(items[0], int) and not isinstance(items[0], bool))):
        _select(x, 0, 0) if isinstance(items[0], int) else _slice(x, 0, items[0])  # torch's 0-dim messages
    if used > x.ndim:
        raise ShapeError(f"too many indices for tensor of dimension {x.ndim}")
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
            if single or item != slice(None):
                out = _slice(out, d, item)
                recorded = True
            d += 1
        elif _is_advanced(item):
            advanced.append((d, _index_array(out, item)))
            d += _consumed(item)
        elif isinstance(item, (int, Tensor)) and not isinstance(item, bool):
            out = _select(out, d, int(item), position)  # torch names the index's position in the key
            recorded = True
        elif isinstance(item, bool):
            raise GradTypeError("indexing with a bare True/False is not supported")
        else:
            raise GradTypeError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                                f"Variables are valid indices (got {type(item).__name__})")
    if advanced:
        _check_index_size(out.shape, advanced)
        full = [slice(None)] * out.ndim
        for dim, arr in reversed(advanced):
            span = arr.ndim if _is_mask(arr) else 1
            full[dim:dim + span] = [arr]
        return apply(IndexBackward0, (out,), (tuple(full),))
    if not recorded:
        return apply(AliasBackward0, (out,))
    return out


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
    if x.ndim == 0:
        raise ShapeError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                         "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    size = x.shape[dim]
    if not -size <= index < size:
        raise ShapeError(f"index {index} is out of bounds for dimension {dim if position is None else position} "
                         f"with size {size}")
    return apply(SelectBackward0, (x,), ((slice(None),) * dim + (index % size,) + _rest(dim, x.ndim),))


def _slice(x, dim, item):
    if x.ndim == 0:
        raise ShapeError("slice() cannot be applied to a 0-dim tensor.")
    if item.step is not None and item.step <= 0:
        raise ShapeError("step must be greater than zero")
    for part in (item.start, item.stop, item.step):
        if part is not None and (isinstance(part, bool) or not isinstance(part, int)):
            raise GradTypeError("slice indices must be integers or None")
    return apply(SliceBackward0, (x,), ((slice(None),) * dim + (item,) + _rest(dim, x.ndim),))


def _index_array(x, item):
    xp = x._backend.xp
    if isinstance(item, Tensor):
        arr = item._data
        if item.dtype.name == "bool":
            return arr
        if item.dtype.category != 1:
            raise GradTypeError("tensors used as indices must be long, int, byte or bool tensors")
        return arr
    flat = _flatten_list(item)
    if any(isinstance(v, bool) for v in flat) and all(isinstance(v, bool) for v in flat):
        return xp.asarray(item, dtype=x._backend.dtype("bool"))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in flat):
        raise GradTypeError("tensors used as indices must be long, int, byte or bool tensors")
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
        raise ShapeError(re.sub(r"for axis \d+", "for dimension 0", str(exc))) from None


Tensor.__getitem__ = _checked_getitem


@op(SelectBackward0, category="shape")
def select(input, dim, index):
    """The slice at ``index`` along ``dim`` (that dim removed)."""
    return _select(input, _wrap_dim(dim, input.ndim), int(index))


