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
``grad_fn`` when its ``grad_fn`` is next read, as torch's VariableHooks::grad_fn
regenerates it: the live views (a weak set per base) have their ``_fn`` slot
emptied, the old node kept in ``ViewInfo.stale`` until then (it lives on as in
torch, which a later "modified by an inplace operation" error may name), and
the ``Tensor.grad_fn`` property, finding the slot unset, calls :func:`regenerate`.

Views made by a function returning several views (unbind, split) or made under
no_grad (torch's MULTI_OUTPUT_NODE and NO_GRAD_MODE creation metas) get no new
history: once their version moved, reading their ``grad_fn`` raises torch's
"its base or another view of its base has been modified inplace". ``grad_fn``
is read on every recorded op, so such a view's is set to
None when the version moves (the old node kept in ``ViewInfo.stale``): every use
then goes through ``Tensor._accumulator`` (``x.grad_fn or x._accumulator()``),
which calls :func:`view_edge` here, as do ``is_leaf`` and the language's
``.grad_fn``. A view made under no_grad of a tensor that requires grad requires
grad itself (``derived``) but has no gradient edge, as in torch.
"""

from __future__ import annotations

import re
import weakref

from ..errors import AutogradError
from .grad_mode import STATE as _GRAD
from . import node as _node
from .node import BLANK, EDGE_NRS, PACK_SAVED, SAVED_HOOKS, Node, _FREED, sizes
from . import tensor as _tensor_module
from .function import _result, apply1 as _apply1
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
    ``no_grad``/``multi``: torch's creation meta NO_GRAD_MODE (made under no_grad; ``inference``
    too for INFERENCE_MODE) or MULTI_OUTPUT_NODE (made by a function that returns several views),
    inherited by views of the view; such a view may not be modified in place while grad mode is on, nor used once its base
    was. ``version``: the version counter's value when it was made; ``stale``: its grad_fn before
    the version moved; ``derived``: made under no_grad of a tensor that requires grad, so it
    requires grad too, with no gradient edge (until ``requires_grad_(True)``)."""

    __slots__ = ("base", "chain", "no_grad", "output_nr", "multi", "inference", "version", "stale", "derived")

    def __init__(self, base, chain, no_grad, output_nr=0, multi=False):
        self.base = base
        self.chain = chain
        self.no_grad = no_grad
        self.output_nr = output_nr
        self.multi = multi
        self.inference = False
        self.version = 0
        self.stale = None
        self.derived = False


# Live views of each root base, for regenerating their grad_fn after an in-place change:
# {id(root): [weakref(root), [weakref(view)...], prune size]}; dead views' references are pruned
# as the list grows, and the entries of dead roots when the table doubles since its last sweep
# (a callback on each root's death cost more than the rest of a view of a fresh result; an id
# reused by a new root finds the old entry's reference dead and replaces it). Tensor's == is
# elementwise, so weak sets and weak-keyed dicts cannot hold tensors.
_LIVE: dict = {}
_SWEEP = [1024]  # the table's size that triggers the next sweep
_new = object.__new__
_ref = weakref.ref


def _new_entry(root):
    if len(_LIVE) >= _SWEEP[0]:
        _sweep()
    entry = _LIVE[id(root)] = [_ref(root), [], 16]
    return entry


def _sweep() -> None:
    """Drop the entries of roots that died; the next sweep when the live ones have doubled."""
    for key in [key for key, entry in _LIVE.items() if entry[0]() is None]:
        del _LIVE[key]
    _SWEEP[0] = max(1024, 2 * len(_LIVE))


def _prune(entry) -> None:
    """Drop the dead views' references once the list doubled since the last pruning."""
    refs = entry[1]
    refs[:] = [r for r in refs if r() is not None]
    entry[2] = max(16, 2 * len(refs))


def _live_views(root):
    entry = _LIVE.get(id(root))
    if entry is None or entry[0]() is not root:
        return ()
    return [t for t in (r() for r in entry[1]) if t is not None]


def view_of(cls, input: Tensor, attrs=()) -> Tensor:
    """Record the single-view op ``cls`` on ``input``: every view op's one path (``view``,
    ``transpose``, ``select``, ``x[0]``, ``expand``...). The result shares the input's storage
    and version counter and is a view of its root.

    A view's node saves nothing (its formula reads the input's sizes and its own attributes), so
    it is made here as ``function.apply1`` makes a node that saves nothing, without apply1's save
    plan (tests/test_view_fast.py checks that the two make the same node); a view op whose
    formula reads a saved value goes through apply1."""
    plain = _PLAIN.get(cls)
    if plain is None:
        plain = _PLAIN[cls] = cls._arity == 1 and cls._mask_plans is not None and not any(cls._mask_plans[1])
    if not plain:
        return make_view(_apply1(cls, input, input._data, attrs), input, cls, attrs)
    da = input._data
    backend = input._backend
    data = cls.forward(backend.xp, da, *attrs)
    if not input._requires_grad or not _GRAD.enabled:
        return make_view(_make(data, backend), input, cls, attrs)
    node = _new(BLANK)  # (as function.record2 makes its nodes: node.BLANK)
    node._n0 = (input._fn if input._view is None else input.grad_fn) or input._accumulator()  # (function.py's form)
    node._n1 = node._nx = node._sx = node._s0 = node._s1 = node._sr = node._vr = node._live = None
    node._k = 1
    node._attrs = attrs
    node._pre_hooks = None
    node._retain = None
    node._shapes = sizes((da.shape,)) if cls.save_sizes else None
    node._shape = sizes(data.shape)
    node._seq = _node._next_seq()  # the anomaly mode's counter when it is on
    node.__class__ = cls
    if SAVED_HOOKS:  # inside autograd.graph.saved_tensors_hooks
        PACK_SAVED[0](node)
    info = input._view
    if info is not None:  # the input may be output k > 0 of its grad_fn (a row of unbind)
        nr = input.output_nr
        if nr:
            EDGE_NRS[node] = (nr,)
    return make_view(_result(data, backend, node), input, cls, attrs)


_PLAIN: dict = {}  # view node class -> does it save nothing (so view_of may make its node)?


def make_view(out: Tensor, input: Tensor, cls, attrs=(), output_nr: int = 0, multi: bool = False) -> Tensor:
    """Mark ``out`` (computed by view op ``cls`` from ``input``) as a view of ``input``'s root;
    ``multi``: made by a function returning several views (``multi_views`` does that for all of them).
    ViewInfo's fields are set without a call of its ``__init__``."""
    if out is input:
        return out
    info = input._view
    step = (cls, sizes(input._data.shape), attrs)  # (the input's shape: the shared tuple, as nodes keep)
    view = _new(ViewInfo)
    if info.__class__ is ViewInfo:
        view.base = root = info.base
        view.chain = info.chain + (step,)
        no_grad, view_multi, inference = info.no_grad, info.multi, info.inference
    else:
        view.base = root = input
        view.chain = (step,)
        no_grad = view_multi = inference = False
    vc = root._vc
    if vc is None:
        vc = root._vc = [0]
    out._vc = vc
    if not inference:  # torch's propagate_creation_meta: a new meta other than DEFAULT wins, but INFERENCE stays
        state = _GRAD
        if state.inference:
            no_grad, view_multi, inference = True, False, True
        elif not state.enabled:
            no_grad, view_multi = True, False
        elif multi:
            no_grad, view_multi = False, True
    view.no_grad = no_grad
    view.multi = view_multi
    view.inference = inference
    view.version = vc[0]
    view.stale = None
    out._view = view
    if out._fn is None:  # torch numbers the outputs of a recorded node only
        view.output_nr = 0
        if input._requires_grad:  # made under no_grad: requires grad, no edge
            out._requires_grad = view.derived = True
        else:
            view.derived = False
    else:
        view.output_nr = output_nr
        view.derived = False
    entry = _LIVE.get(id(root))  # registered among the root's live views
    if entry is None or entry[0]() is not root:
        entry = _new_entry(root)
    refs = entry[1]
    refs.append(_ref(out))
    if len(refs) > entry[2]:
        _prune(entry)
    return out


def multi_views(input: Tensor, arrays, node, cls, keys) -> tuple:
    """The outputs of a function returning several views of ``input`` (unbind, split, chunk):
    output ``i`` holds ``arrays[i]``, has ``node`` (None when nothing is recorded) as grad_fn and
    ``i`` as output_nr, and is the view ``cls`` with attribute ``keys[i]`` makes (for CopySlices).
    What ``make_view(..., output_nr=i, multi=True)`` gives each, with what the outputs share (root,
    version counter, creation meta, the chain up to the input, the live-view list) found once."""
    info = input._view
    shape = sizes(input._data.shape)
    if info.__class__ is ViewInfo:
        root, prefix = info.base, info.chain
        no_grad, multi, inference = info.no_grad, info.multi, info.inference
    else:
        root, prefix = input, ()
        no_grad = multi = inference = False
    if not inference:  # make_view's propagation of the creation meta, for multi=True
        state = _GRAD
        if state.inference:
            no_grad, multi, inference = True, False, True
        elif not state.enabled:
            no_grad, multi = True, False
        else:
            no_grad, multi = False, True
    vc = root._vc
    if vc is None:
        vc = root._vc = [0]
    version = vc[0]
    derived = node is None and input._requires_grad  # made under no_grad: requires grad, no edge
    entry = _LIVE.get(id(root))
    if entry is None or entry[0]() is not root:
        entry = _new_entry(root)
    refs = entry[1]
    backend = input._backend
    outs = []
    for i, data in enumerate(arrays):
        out = _make(data, backend, node)
        out._vc = vc
        view = out._view = _new(ViewInfo)
        view.base = root
        view.chain = prefix + ((cls, shape, (keys[i],)),)
        view.no_grad = no_grad
        view.multi = multi
        view.inference = inference
        view.version = version
        view.stale = None
        view.output_nr = 0 if node is None else i
        view.derived = derived
        if derived:
            out._requires_grad = True
        refs.append(_ref(out))
        outs.append(out)
    if len(refs) > entry[2]:
        _prune(entry)
    return tuple(outs)


_make = Tensor._make


MULTI_SUFFIX = (" This view is the output of a function that returns multiple views. Such functions do not allow "
                "the output views to be modified inplace. You should replace the inplace operation by an "
                "out-of-place one.")
NO_GRAD_SUFFIX = NO_GRAD_VIEW[NO_GRAD_VIEW.index(" Given"):]
INFERENCE_SUFFIX = NO_GRAD_SUFFIX.replace("no_grad block", "inference_mode block")


def rebase_error(t: Tensor, indirect: bool) -> AutogradError:
    """torch's handle_view_on_rebase: why the history of ``t`` (a view made under no_grad or by a
    function returning several views) cannot be rebased; ``indirect``: its base or another view
    of it was modified, not ``t`` itself."""
    info = t._view
    node = t.grad_fn or info.stale
    what = "its base or another view of its base has been" if indirect else "is being"
    if info.no_grad or node is None:
        prefix = "A view was created in" if node is None else \
            f"Output {info.output_nr} of {_short(node)} is a view of a view which was created in"
        msg = f"{prefix} inference mode and {what} modified inplace in normal mode." if info.inference else \
            f"{prefix} no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        msg = f"Output {info.output_nr} of {_short(node)} is a view and {what} modified inplace."
    suffix = MULTI_SUFFIX if info.multi else INFERENCE_SUFFIX if info.inference else NO_GRAD_SUFFIX
    return AutogradError(msg + suffix)


def _short(node) -> str:
    return re.sub(r"Backward\d*$", "", node.name())


def base_of(t: Tensor):
    info = t._view
    return info.base if info.__class__ is ViewInfo else None


# -- before an in-place change --------------------------------------------------------------------

def check_inplace(t: Tensor) -> None:
    """torch's checks before ``t`` changes in place, then link saved outputs to the version counter."""
    info = t._view
    if info.__class__ is ViewInfo:
        if _GRAD.enabled:
            if (info.no_grad or info.multi) and t._requires_grad:
                raise rebase_error(t, indirect=False)
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


def unrecorded_array(t: Tensor):
    """For an in-place change of ``t`` that records no gradient (the caller has checked: grad mode
    off, or nothing involved requires grad): ``t``'s NumPy array where ``t`` is not a view and the
    array is writable, with what is left of check_inplace's duties done (a node that saved ``t``
    as its output gets the version counter); None for anything else, which takes the general path.
    The caller writes into the array, then bumps the version."""
    if t._view is not None:
        return None
    data = t._data
    if data.__class__ is not _NDARRAY or not data.flags.writeable:
        return None
    if t._fn is not None:
        t._link_saved_result()
    return data


_NDARRAY = __import__("numpy").ndarray


def writable(t: Tensor):
    """``t``'s array, made writable if it is a read-only NumPy view (``expand`` of a clone
    that overlaps nothing is still read-only in NumPy). CuPy's arrays have no read-only flag."""
    data = t._data
    flags = getattr(data, "flags", None)
    if flags is not None and not getattr(flags, "writeable", True):
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
        t._fn = fn
        t._requires_grad = True
        _refresh_views(t)
        return
    base = info.base
    edge = (base.grad_fn or base._accumulator()) if base._requires_grad else None
    copy = CopySlices(edge, fn, info.chain, tuple(base._data.shape))
    _move_retain(base, copy)
    base._fn = copy
    base._requires_grad = True
    _refresh_views(base)
    t.grad_fn  # noqa: B018 - torch's rebase_history reads it: the modified view's new node, now


def _move_retain(t: Tensor, node, old=False) -> None:
    """torch moves a tensor's retain_grad to its new grad_fn (``old``: its grad_fn until now)."""
    if old is False:
        old = t.grad_fn
    if t._retains_grad and old is not None:
        if old._retain is not None and old._retain() is t:
            old._retain = None
        node._retain = weakref.ref(t)


_GRAD_FN = Tensor.__dict__["_fn"]  # the slot itself: reading it never regenerates


def _refresh_views(base: Tensor) -> None:
    """The base's live views need a new history: those made by one view op under grad mode get a
    fresh AsStridedBackward0 to the base's gradient edge when their grad_fn is next read (their
    slot is emptied, the old node kept until then, as torch's view keeps it); the others are stale."""
    if not base._requires_grad:
        return
    for view in _live_views(base):
        info = view._view
        view._requires_grad = True  # it requires grad as its base does
        if info.no_grad or info.multi:  # stale: raises when used
            continue
        try:
            old = _GRAD_FN.__get__(view, Tensor)
        except AttributeError:
            continue  # already waiting for its next read, with its oldest node
        info.stale = old
        _GRAD_FN.__delete__(view)


def regenerate(t: Tensor):
    """``t.grad_fn`` read while ``_fn`` is unset (the property): a view whose base changed since it
    was last read gets its AsStridedBackward0 now, as torch's VariableHooks::grad_fn does."""
    info = t._view
    base = info.base
    node = AsStridedBackward0(base.grad_fn or base._accumulator(), info.chain, tuple(t._data.shape))
    old, info.stale = info.stale, None
    _move_retain(t, node, old)
    t._fn = node
    info.output_nr = 0
    return node


def on_bump(t: Tensor) -> None:
    """After ``t``'s version moved (an in-place change, in grad mode or not): the live views of its
    root made under no_grad or by a multi-view function become stale (their grad_fn is put aside:
    see the module's docstring); outside grad mode, where no in-place op rebases history, the
    others get their fresh AsStridedBackward0 now, as torch gives them when next read."""
    info = t._view
    root = info.base if info.__class__ is ViewInfo else t
    views = _live_views(root)
    if not views:
        return
    for view in views:
        info = view._view
        if (info.no_grad or info.multi) and view.grad_fn is not None:
            info.stale = view.grad_fn
            view._fn = None
            view._requires_grad = True
    if not _GRAD.enabled:
        _refresh_views(root)


def _is_stale(t: Tensor) -> bool:
    """torch's VariableHooks::grad_fn test for a no_grad or multi-view view: its version moved
    since it was made, and it had a history or its base requires grad."""
    info = t._view
    return (info.no_grad or info.multi) and t._vc[0] != info.version and \
        (info.stale is not None or t.grad_fn is not None or info.base._requires_grad)


def resolve(t: Tensor) -> None:
    """What torch does on reading a view's grad_fn: raise if the view is stale (see ``_is_stale``)."""
    if t._view.__class__ is ViewInfo and _is_stale(t):
        raise rebase_error(t, indirect=True)


def grad_fn_unreadable(t: Tensor) -> bool:
    """Would reading ``t.grad_fn`` raise (torch's repr then shows ``grad_fn=<Invalid>``)?"""
    return t._view.__class__ is ViewInfo and _is_stale(t)


def edgeless(t: Tensor) -> bool:
    """A tensor that requires grad with no grad_fn and no AccumulateGrad either: a view made under
    no_grad (or a stale one): not a leaf whose gradient a check could compare."""
    return t._view.__class__ is ViewInfo and (t._view.derived or _is_stale(t))


def grad_fn_of(t: Tensor):
    """``t.grad_fn`` as torch reads it (the language's ``.grad_fn``): a stale view raises."""
    if t.grad_fn is None and t._view is not None:
        resolve(t)
    return t.grad_fn


def view_edge(t: Tensor):
    """The gradient edge of a view with no grad_fn that requires grad (``Tensor._accumulator`` of
    a view): none for one made under no_grad (``derived``), its own AccumulateGrad after
    ``requires_grad_(True)``; a stale one raises as torch does."""
    if t._view.__class__ is not ViewInfo:  # detached in place
        return t._leaf_accumulator()
    resolve(t)
    if t._view.derived:
        return None
    return t._leaf_accumulator()


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
    node._seq = _node._next_seq()


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

    __slots__ = ("fn", "_chain", "_alive")
    input_names = ("self",)
    derivatives = (("self", "grad outside the view; fn's gradient inside it"),)

    @property
    def _live(self):
        return self._alive

    @_live.setter
    def _live(self, value) -> None:
        """Released after its backward (without retain_graph): torch's CopySlices::release_variables
        drops ``fn`` too, and with it the nodes only ``fn`` led to (the first edge of an in-place op
        on a view, whose name a later "modified by an inplace operation" error would otherwise give)."""
        self._alive = value
        if value is False:
            self.fn = None

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


_tensor_module.ON_BUMP[0] = on_bump
