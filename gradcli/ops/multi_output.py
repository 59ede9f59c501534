"""Ops with several outputs: ``unbind``, ``split``, ``chunk`` (and iterating over a tensor).

As in torch, each records ONE node for all its outputs (UnbindBackward0, SplitBackward0,
SplitWithSizesBackward0): output ``i`` has that node as ``grad_fn`` and ``output_nr == i``, so an
op using it has the edge ``(node, i)``. The engine hands the node one gradient per output (None
for an output nothing used), and its backward joins them, zeros where none came: ``stack`` for
unbind, ``cat`` for split, which is also what ``create_graph=True`` records (StackBackward0,
CatBackward0). The outputs are views of the input that may not be modified in place while grad
mode is on (torch's MULTI_OUTPUT_NODE views).
"""

from __future__ import annotations

from ..autograd.grad_mode import STATE as _GRAD
from ..autograd import node as _node
from ..autograd.node import MultiOutputNode, note_edge_nrs
from ..autograd.tensor import Tensor, _wrap_dim
from ..autograd.views import multi_views
from ..errors import DimensionError, GradTypeError, ShapeError
from .indexing import SelectBackward0, SliceBackward0
from .registry import op

_UINT64 = 1 << 64  # torch prints a saved negative dim as the uint64 it is stored in


class _JoinBackward(MultiOutputNode):
    """The backward of a multi-output view op: the outputs' gradients joined along ``dim``."""

    __slots__ = ()
    input_names = ("self",)
    attr_names = ()
    _stack = False  # unbind: stack the parts (a new dim); split: cat them

    def apply(self, grads, F, differentiable):
        if not differentiable:  # zeros of the input's shape, each output's gradient copied into its part
            first = None
            for g in grads:
                if g is not None:
                    first = g
                    break
            out = F.backend.xp.zeros(self._shapes[0], dtype=first.dtype)
            for g, key in zip(grads, self._keys()):
                if g is not None:
                    out[key] = g
            return (out,)
        dim, sizes = self._attrs[0], self._parts()
        first = next(g for g in grads if g is not None)
        parts = [g if g is not None else _zeros(first, size, F, differentiable) for g, size in zip(grads, sizes)]
        from . import cat, stack
        return ((stack if self._stack else cat)(parts, dim),)

    def _keys(self):
        """The index of each output's part in the input (what the forward took)."""
        dim = self._attrs[0]
        lead = (slice(None),) * dim
        if self._stack:
            return [lead + (i, ...) for i in range(self._shapes[0][dim])]
        keys, start = [], 0
        for n in self._sizes():  # (the trailing ... : the array API indexes every dim or says which it leaves)
            keys.append(lead + (slice(start, start + n), ...))
            start += n
        return keys

    def _parts(self):
        """The shape of each output."""
        shape, dim = self._shapes[0], self._attrs[0]
        if self._stack:
            return [shape[:dim] + shape[dim + 1:]] * shape[dim]
        return [shape[:dim] + (n,) + shape[dim + 1:] for n in self._sizes()]


def _zeros(like, shape, F, differentiable):
    """torch's engine gives a missing output gradient as zeros (not requiring grad)."""
    data = like._data if differentiable else like
    zeros = F.backend.xp.zeros(tuple(shape), dtype=data.dtype)
    return Tensor._make(zeros, F.backend) if differentiable else zeros


class UnbindBackward0(_JoinBackward):
    __slots__ = ()
    __doc__ = "Backward of unbind: the rows' gradients stacked along dim (zeros for rows without one)."
    derivatives = (("self", "stack(grads, dim), zeros for outputs without a gradient"),)
    _stack = True


class SplitBackward0(_JoinBackward):
    __slots__ = ()
    __doc__ = "Backward of split (and chunk) by one size: the parts' gradients joined along dim."
    derivatives = (("self", "cat(grads, dim), zeros for outputs without a gradient"),)

    def _sizes(self):
        return self._attrs[3]


class SplitWithSizesBackward0(_JoinBackward):
    __slots__ = ()
    __doc__ = "Backward of split by a list of sizes: the parts' gradients joined along dim."
    derivatives = (("self", "cat(grads, dim), zeros for outputs without a gradient"),)

    def _sizes(self):
        return self._attrs[2]


def _record(cls, input, keys, view_cls, attrs):
    """The outputs ``input[key]`` for each key, all with one ``cls`` node, each a view of ``input``."""
    node = None
    if input._requires_grad and _GRAD.enabled:
        node = object.__new__(cls)
        node._n0 = input.grad_fn or input._accumulator()  # set_children, for one child
        node._n1 = node._nx = None
        node._k = 1
        if input._view is not None:
            note_edge_nrs(node, (input,))
        node._s0 = node._s1 = node._sx = node._sr = None
        node._live = None
        node._attrs = attrs
        node._pre_hooks = None
        node._retain = None
        shape = _node.sizes(input._data.shape)
        node._shapes = _node.sizes((shape,))
        node._shape = shape
        node._nout = len(keys)
        node._seq = _node._next_seq()  # the anomaly mode's counter when it is on
    data = input._data
    return multi_views(input, [data[key] for key in keys], node, view_cls, keys)


def _dim_of(input, dim, what):
    ndim = input._data.ndim
    if ndim == 0:
        if what == "unbind":
            raise DimensionError("Dimension specified as 0 but tensor has no dimensions")
        raise ShapeError(f"{what} expects at least a 1-dimensional tensor")
    return _wrap_dim(dim, ndim)


@op(UnbindBackward0, category="shape")
def unbind(input, dim=0):
    """The slices along ``dim`` (that dim removed), as a tuple of views; one UnbindBackward0 node."""
    d = _dim_of(input, dim, "unbind")
    lead = (slice(None),) * d
    keys = [lead + (i, Ellipsis) for i in range(input._data.shape[d])]
    return _record(UnbindBackward0, input, keys, SelectBackward0, (d, int(dim)))


def _int(value, what):
    if value.__class__ is int:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise GradTypeError(f"{what} must be an int, not {type(value).__name__}")
    return value


def _parts(input, d, sizes):
    keys, start = [], 0
    lead = (slice(None),) * d
    for n in sizes:
        keys.append(lead + (slice(start, start + n), Ellipsis))
        start += n
    return keys


def _by_size(input, split_size, dim, d=None):
    """``split(split_size, dim)``; ``d``: ``dim`` already wrapped (chunk's)."""
    if d is None:
        d = _dim_of(input, dim, "split")
    size = input._data.shape[d]
    if split_size < 0:
        raise ShapeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    if split_size == 0 and size != 0:
        raise ShapeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
    count = max(1, -(-size // split_size)) if split_size else 1
    sizes = [min(split_size, size - i * split_size) for i in range(count)]
    return _record(SplitBackward0, input, _parts(input, d, sizes), SliceBackward0,
                   (d, split_size, int(dim), tuple(sizes)))


def _with_sizes(input, split_sizes, dim):
    d = _dim_of(input, dim, "split")
    sizes = [_int(n, "split_sizes entry") for n in split_sizes]
    if any(n < 0 for n in sizes):
        raise ShapeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                         f"split_sizes={sizes}")
    if sum(sizes) != input.shape[d]:
        raise ShapeError(f"split_with_sizes expects split_sizes to sum exactly to {input.shape[d]} (input "
                         f"tensor's size at dimension {d}), but got split_sizes={sizes}")
    return _record(SplitWithSizesBackward0, input, _parts(input, d, sizes), SliceBackward0,
                   (d, int(dim), tuple(sizes)))


@op(SplitBackward0, SplitWithSizesBackward0, category="shape")
def split(tensor, split_size_or_sections, dim=0):
    """Parts of ``split_size`` along ``dim`` (the last smaller), or of the listed sizes: views."""
    if isinstance(split_size_or_sections, (list, tuple)):
        return _with_sizes(tensor, split_size_or_sections, dim)
    if isinstance(split_size_or_sections, bool) or not isinstance(split_size_or_sections, int):
        raise GradTypeError(f"split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, "
                            f"not {type(split_size_or_sections).__name__}")
    return _by_size(tensor, split_size_or_sections, dim)


@op(SplitBackward0, category="shape")
def chunk(input, chunks, dim=0):
    """At most ``chunks`` equal parts along ``dim`` (the last smaller): views, one SplitBackward0."""
    chunks = _int(chunks, "chunks")
    shape = input._data.shape
    if not shape:
        raise ShapeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise ShapeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, len(shape))
    return _by_size(input, -(-shape[d] // chunks), dim, d)


def _iter(self):
    """``for row in x``: ``iter(x.unbind(0))``, as torch's ``Tensor.__iter__`` (one UnbindBackward0)."""
    if self.ndim == 0:
        raise GradTypeError("iteration over a 0-d tensor")
    return iter(unbind(self, 0))


Tensor.__iter__ = _iter
