"""Views and in-place updates through them, as PyTorch's autograd tracks them.

A view (a slice, ``select``, ``view``, ``transpose``, ``expand``...) shares its
base's storage (NumPy views do) and version counter. It remembers its *root*
base (torch's ``_base``) and the chain of view ops from the root to itself:
``(node class, input sizes, attrs)`` per step, which is torch's ``view_fn``.

An in-place op on a view rebases history as torch's ``rebase_history`` does: the
op's node ``fn`` (recorded on the view as it was) is wrapped in a ``CopySlices``
that becomes the base's ``grad_fn``; its first edge is the base's old gradient
edge, the others ``fn``'s. Every live view of the base (the modified one
included) then gets a fresh ``AsStridedBackward0`` leading to the base's new
``grad_fn``, as torch regenerates a view's ``grad_fn`` once its base's version
moved. torch does that lazily when ``grad_fn`` is read; here it is done eagerly
for the views still alive (a weak set per base), which shows the same graph.
"""

from __future__ import annotations

import re
import weakref

from ..errors import AutogradError
from .grad_mode import STATE as _GRAD
from .node import EDGE_NRS, Node, _FREED, _sequence
from .tensor import Tensor

LEAF_VIEW = "a view of a leaf Variable that requires grad is being used in an in-place operation."
NO_GRAD_VIEW = ("A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
                "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
                "your code by moving both the view and the inplace either both inside the no_grad block "
                "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
                "to be tracked).")
OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single "
           "memory location. Please clone() the tensor before performing the operation.")
DETACH_VIEW = ("Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
               "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
               "buckets, and hence detach_() cannot be called on these gradients. To fix this error, please "
               "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")


class ViewInfo:
    """What a view knows of its base: the root tensor, the view ops from it, how it was made.
    ``output_nr``: which output of its grad_fn the view is (``unbind``'s rows: their index);
    ``multi``: made by a function that returns several views, or a view of such a view (torch's
    MULTI_OUTPUT_NODE creation meta), which may not be modified in place while grad mode is on."""

    __slots__ = ("base", "chain", "no_grad", "output_nr", "multi")

    def __init__(self, base, chain, no_grad, output_nr=0, multi=False):
        self.base = base
        self.chain = chain
        self.no_grad = no_grad
        self.output_nr = output_nr
        self.multi = multi


# Live views of each root base, for regenerating their grad_fn after an in-place change:
# {id(root): [weakref(root), [weakref(view)...], prune size]}; the entry goes when the root dies,
# dead views' references are pruned as the list grows (Tensor's == is elementwise, so weak sets
# and weak-keyed dicts cannot hold tensors).
_LIVE: dict = {}
_new = object.__new__


def _register(root, view) -> None:
    entry = _LIVE.get(id(root))
    if entry is None or entry[0]() is not root:
        key = id(root)
        entry = _LIVE[key] = [weakref.ref(root, lambda _, key=key: _LIVE.pop(key, None)), [], 16]
    refs = entry[1]
    refs.append(weakref.ref(view))
    if len(refs) > entry[2]:
        refs[:] = [r for r in refs if r() is not None]
        entry[2] = max(16, 2 * len(refs))


def _live_views(root):
    entry = _LIVE.get(id(root))
    if entry is None or entry[0]() is not root:
        return ()
    return [t for t in (r() for r in entry[1]) if t is not None]


def make_view(out: Tensor, input: Tensor, cls, attrs=(), output_nr: int = 0) -> Tensor:
    """Mark ``out`` (computed by view op ``cls`` from ``input``) as a view of ``input``'s root;
    ``output_nr`` > 0 (or a multi-output op's output 0, ``multi_view``) for one of several views."""
    if out is input:
        return out
    info = input._view
    if info.__class__ is ViewInfo:
        root, chain, no_grad, multi = info.base, info.chain, info.no_grad, info.multi
    else:
        root, chain, no_grad, multi = input, (), False, False
    vc = root._vc
    if vc is None:
        vc = root._vc = [0]
    out._vc = vc
    # ViewInfo(...), without its __init__ call: every view op of every program comes here
    view = _new(ViewInfo)
    view.base = root
    view.chain = chain + ((cls, tuple(input._data.shape), attrs),)
    view.no_grad = no_grad or (not _GRAD.enabled and input._requires_grad)
    view.output_nr = output_nr
    view.multi = multi
    out._view = view
    _register(root, out)
    return out


def multi_view(out: Tensor, input: Tensor, cls, attrs, output_nr: int) -> Tensor:
    """``out`` is output ``output_nr`` of a function returning several views of ``input`` (unbind,
    split); ``cls``/``attrs``: the single-view op that makes the same view (for CopySlices)."""
    make_view(out, input, cls, attrs, output_nr)
    out._view.multi = True
    return out


MULTI_VIEW = ("Output {} of {} is a view and is being modified inplace. This view is the output of a function "
              "that returns multiple views. Such functions do not allow the output views to be modified "
              "inplace. You should replace the inplace operation by an out-of-place one.")


def base_of(t: Tensor):
    info = t._view
    return info.base if info.__class__ is ViewInfo else None


# -- before an in-place change --------------------------------------------------------------------

def check_inplace(t: Tensor) -> None:
    """torch's checks before ``t`` changes in place, then link saved outputs to the version counter."""
    info = t._view
    if info.__class__ is ViewInfo:
        if _GRAD.enabled:
            if info.no_grad:
                raise AutogradError(NO_GRAD_VIEW)
            if info.multi and t.grad_fn is not None:
                raise AutogradError(MULTI_VIEW.format(info.output_nr, re.sub(r"Backward\d*$", "", t.grad_fn.name())))
            base = info.base
            if base._requires_grad and base.grad_fn is None:
                raise AutogradError(LEAF_VIEW)
        strides = getattr(t._data, "strides", None)
        if strides is not None and any(s == 0 and n > 1 for s, n in zip(strides, t._data.shape)):
            raise AutogradError(OVERLAP)
        info.base._link_saved_result()
    elif _GRAD.enabled and t._requires_grad and t.grad_fn is None:
        raise AutogradError("a leaf Variable that requires grad is being used in an in-place operation.")
    t._link_saved_result()


def writable(t: Tensor):
    """``t``'s array, made writable if it is a read-only NumPy view (``expand`` of a clone
    that overlaps nothing is still read-only in NumPy)."""
    data = t._data
    flags = getattr(data, "flags", None)
    if flags is not None and not flags.writeable:
        try:
            flags.writeable = True
        except ValueError:
            raise AutogradError(OVERLAP) from None
    return data


# -- after an in-place change ----------------------------------------------------------------------

def rebase(t: Tensor, fn) -> None:
    """``t`` was changed in place by the op whose node is ``fn`` (recorded on ``t`` as it was):
    give ``t`` (and its base, and the base's other views) their new history, as torch does."""
    info = t._view
    if info.__class__ is not ViewInfo:
        _move_retain(t, fn)
        t.grad_fn = fn
        t._requires_grad = True
        _refresh_views(t)
        return
    base = info.base
    edge = (base.grad_fn or base._accumulator()) if base._requires_grad else None
    copy = CopySlices(edge, fn, info.chain, tuple(base._data.shape))
    _move_retain(base, copy)
    base.grad_fn = copy
    base._requires_grad = True
    _refresh_views(base)


def _move_retain(t: Tensor, node) -> None:
    """torch moves a tensor's retain_grad to its new grad_fn when it is changed in place."""
    if t._retains_grad and t.grad_fn is not None:
        old = t.grad_fn
        if old._retain is not None and old._retain() is t:
            old._retain = None
        node._retain = weakref.ref(t)


def _refresh_views(base: Tensor) -> None:
    if base.grad_fn is None:
        return
    for view in _live_views(base):
        node = AsStridedBackward0(base.grad_fn, view._view.chain, tuple(view._data.shape))
        if view.grad_fn is not None:
            _move_retain(view, node)
        view.grad_fn = node
        view._requires_grad = True
        view._view.output_nr = 0


def refresh_after_data_change(t: Tensor) -> None:
    """Views of ``t`` whose base got a new grad_fn some other way (``x[idx] = v``'s IndexPut)."""
    _refresh_views(t)


# -- the two nodes ------------------------------------------------------------------------------------

def _init(node, children, live=None):
    k = len(children)
    node._k = k
    node._n0 = children[0] if k > 0 else None
    node._n1 = children[1] if k > 1 else None
    node._nx = tuple(children[2:]) if k > 2 else None
    node._s0 = node._s1 = node._sx = node._sr = None
    node._live = live
    node._attrs = ()
    node._pre_hooks = None
    node._retain = None
    node._shapes = None
    node._seq = next(_sequence)


def _replay(chain, g, F, differentiable):
    """The view of ``g`` (shaped like the root) that ``chain`` describes."""
    if differentiable:
        from .function import apply
        for cls, _, attrs in chain:
            g = apply(cls, (g,), attrs)
        return g
    xp = F.backend.xp
    for cls, _, attrs in chain:
        g = cls.forward(xp, g, *attrs)
    return g


def _embed(chain, g, F):
    """A gradient of the view's shape placed into zeros of the root's shape: each view op's own
    backward formula, last op first (what torch's AsStridedBackward0 computes)."""
    for cls, sizes, attrs in reversed(chain):
        g = cls.formulas[0](F, g, None, None, sizes, *attrs)
    return g


class AsStridedBackward0(Node):
    """The grad_fn of a view whose base was changed in place: the view's gradient into the base's shape."""

    __slots__ = ("_chain", "_view_shape")
    input_names = ("self",)
    derivatives = (("self", "grad placed at the view's elements of zeros(base sizes)"),)

    def __init__(self, base_fn, chain, view_shape):
        _init(self, (base_fn,))
        self._chain = chain
        self._view_shape = view_shape
        self._shape = view_shape

    def apply(self, grad, F, differentiable):
        return (_embed(self._chain, grad, F),)


class CopySlices(Node):
    """The base's grad_fn after an in-place op on one of its views (torch's ``CopySlices``):
    the base's gradient outside the view passes through; inside, the wrapped op's backward."""

    __slots__ = ("fn", "_chain")
    input_names = ("self",)
    derivatives = (("self", "grad outside the view; fn's gradient inside it"),)

    def __init__(self, base_edge, fn, chain, base_shape):
        _init(self, (base_edge,) + tuple(fn._children()[1:]), live=True)
        nrs = EDGE_NRS.get(fn)
        if nrs is not None and any(nrs[1:]):
            EDGE_NRS[self] = (0,) + nrs[1:]
        if base_edge is None:  # fn computes its first input's gradient only where the base needs one
            fn._n0 = None
        self.fn = fn
        self._chain = chain
        self._shape = base_shape

    def name(self) -> str:
        return "torch::autograd::CopySlices"

    def name_for_repr(self) -> str:
        return "CopySlices"

    def apply(self, grad, F, differentiable):
        if self._live is False:
            raise AutogradError(_FREED)
        chain = self._chain
        region = _replay(chain, grad, F, differentiable)
        if differentiable:
            region = region * 1  # torch clones the slice before handing it to fn
        res = self.fn.apply(region, F, differentiable)
        inside = res[0]
        if self._n0 is None:
            first = None
        else:
            if inside is None:
                inside = F.zeros_like(region)
            if differentiable:  # torch: a copy of grad with fn's gradient copied into the view (CopySlices)
                first = F.copy_into_view(grad, chain, inside)
            else:
                mask = _embed(chain, _ones(region, F), F)
                first = F.where(mask != 0, _embed(chain, inside, F), grad)
        return (first, *res[1:])


def _ones(region, F):
    data = getattr(region, "_data", region)
    return F.backend.xp.ones(tuple(data.shape), dtype=data.dtype)


def is_view(t: Tensor) -> bool:
    return t._view.__class__ is ViewInfo
