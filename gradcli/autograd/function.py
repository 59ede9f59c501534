"""Recording operations: run a node's forward and, where a gradient must flow, record the node.

``apply(NodeClass, inputs, attrs)`` runs the node's forward on the inputs' arrays
and, when grad mode is on and an input requires grad, records a node whose
``next_functions`` point at the inputs' ``grad_fn`` (or ``AccumulateGrad``).
"""

from __future__ import annotations

from ..errors import DeviceError
from .grad_mode import STATE as _GRAD
from .node import BLANK, PACK_SAVED, SAVED_HOOKS, SIZES, _sequence, new_node, note_edge_nrs, sizes
from ..limits import TRACK_BYTES as _TRACK_BYTES, track as _track
from .tensor import Tensor, _ndarray_type, inference_saved

_NO_EDGE = (None, 0)
_new = object.__new__
_seq = _sequence.__next__
_make = Tensor._make
_ndarray = _ndarray_type
_sizes = SIZES.get  # node.sizes's look-up, inline on the hot paths (a miss calls sizes)
# An input's gradient edge is ``(x._fn if x._view is None else x.grad_fn) or x._accumulator()``: the
# slot itself where the tensor is not a view (the ``grad_fn`` property, a Python call, is ~0.15 us of
# a recorded op on CPython 3.11, which does not specialise property reads); a view's ``_fn`` may be
# unset (its base changed in place), which the property mends.


def _devices_differ(a, b):
    """torch's TensorIterator message: the first non-CPU device among the operands comes first
    (``cpu + cuda`` and ``cuda + cpu`` both say "cuda:0 and cpu")."""
    if a.device_type == "cpu" and b.device_type != "cpu":
        a, b = b, a
    return DeviceError(f"Expected all tensors to be on the same device, but found at least two devices, "
                       f"{a.name} and {b.name}!")


def apply(cls, inputs, attrs=(), arrays=None):
    """Run ``cls.forward`` and record a ``cls`` node when a gradient must flow."""
    k = len(inputs)
    if k == 2 and cls._arity == 2:
        a, b = inputs
        if a.__class__ is Tensor and b.__class__ is Tensor:
            if arrays is None:
                arrays = (a._data, b._data)
            return apply2(cls, a, b, arrays[0], arrays[1], attrs)
    elif k == 1 and cls._arity == 1:
        a = inputs[0]
        if a.__class__ is Tensor:
            return apply1(cls, a, a._data if arrays is None else arrays[0], attrs)
    elif k == 3 and cls._mask_plans is not None:  # lerp, addcmul, addcdiv, addmm, where...: three tensors
        a, b, c = inputs
        if a.__class__ is Tensor and b.__class__ is Tensor and c.__class__ is Tensor:
            if arrays is None:
                return apply3(cls, a, b, c, a._data, b._data, c._data, attrs)
            return apply3(cls, a, b, c, arrays[0], arrays[1], arrays[2], attrs)
    return _apply_general(cls, inputs, attrs, arrays)


def apply3(cls, a, b, c, da, db, dc, attrs=()):
    """``apply`` for three tensor inputs whose arrays (after any casts) are ``da``, ``db``, ``dc``
    (lerp, addcmul, addcdiv, addmm: the usual three)."""
    backend = a._backend
    if b._backend is not backend or c._backend is not backend:
        raise _devices_differ(backend, b._backend if b._backend is not backend else c._backend)
    data = cls.forward(backend.xp, da, db, dc, *attrs)
    if (a._requires_grad or b._requires_grad or c._requires_grad) and _GRAD.enabled:
        return _record3(cls, a, b, c, da, db, dc, data, attrs, backend)
    return _make(data, backend)


def apply2(cls, a, b, da, db, attrs=()):
    """``apply`` for two tensor inputs whose arrays (after any casts) are ``da`` and ``db``."""
    backend = a._backend
    if b._backend is not backend:
        raise _devices_differ(a._backend, b._backend)
    return record2(cls, a, b, da, db, cls.forward(backend.xp, da, db, *attrs), attrs)


def _result(data, backend, node):
    """``Tensor._make(data, backend, node)`` for a recorded op's result: a plain function with an
    ndarray's path first, cheaper than the classmethod (grad mode is on: never an inference tensor)."""
    if data.__class__ is not _ndarray:  # a NumPy scalar (a full reduction), another backend's array
        return _make(data, backend, node)
    if data.nbytes >= _TRACK_BYTES:  # counted against --max-memory
        _track(data)
    t = _new(Tensor)
    t._data = data
    t._backend = backend
    t._requires_grad = True
    t._fn = node
    t._grad = None
    t._vc = None
    t._acc = None
    t._hooks = None
    t._retains_grad = False
    t._view = None
    return t


def record2(cls, a, b, da, db, data, attrs=()):
    """The result of a two-tensor op already computed as ``data``: a node when a gradient must flow."""
    backend = a._backend
    if a._requires_grad:
        c0 = (a._fn if a._view is None else a.grad_fn) or a._accumulator()
        mask = 1
    elif b._requires_grad:
        c0 = None
        mask = 0
    else:
        return _make(data, backend)
    if b._requires_grad:
        c1 = (b._fn if b._view is None else b.grad_fn) or b._accumulator()
        mask += 2
    else:
        c1 = None
    if not _GRAD.enabled:
        return _make(data, backend)
    node = _new(BLANK)  # filled in as one class, then made a cls (node.BLANK)
    node._n0 = c0
    node._n1 = c1
    node._nx = node._sx = None  # _sx: set, so that getattr(node, "_sx", None) never raises (slow)
    node._k = 2
    save0, save1, save_result = cls._mask_plans[mask]
    if save0:
        node._s0 = a
        vc = a._vc
        if vc.__class__ is not list and vc is not None:  # an inference tensor cannot be saved
            raise inference_saved()
        node._v0 = 0 if vc is None else vc[0]
        node._live = True
    else:
        node._s0 = None
        node._live = True if save_result else None
    if save1:
        node._s1 = b
        vc = b._vc
        if vc.__class__ is not list and vc is not None:
            raise inference_saved()
        node._v1 = 0 if vc is None else vc[0]
        node._live = True
    else:
        node._s1 = None
    node._sr = data if save_result else None
    node._vr = None  # set only when the output is changed in place (Tensor._link_saved_result)
    node._attrs = attrs
    node._pre_hooks = None
    node._retain = None
    shape = data.shape
    if cls.save_sizes:
        sa, sb = da.shape, db.shape
        # Sizes only where a formula reads them or a gradient must be summed back to a
        # broadcast input's shape; equal shapes (the common case) need nothing.
        node._shapes = sizes((sa, sb)) if cls.needs_sizes or (c0 is not None and sa != shape) or \
            (c1 is not None and sb != shape) else None
    else:
        node._shapes = None
    kept = _sizes(shape)
    node._shape = kept if kept is not None else sizes(shape)  # the output's shape, for `gradcli graph`
    node._seq = _seq()
    node.__class__ = cls
    if SAVED_HOOKS:  # inside autograd.graph.saved_tensors_hooks
        PACK_SAVED[0](node)
    if a._view is not None or b._view is not None:  # an input may be output k > 0 of its grad_fn
        note_edge_nrs(node, (a, b))
    return _result(data, backend, node)


def record_number(cls, a, s, da, data, attrs=()):
    """The result of ``a OP s`` (``s`` a Python number, ``a`` a tensor) already computed as ``data``:
    a node of ``cls`` whose second input is the number itself, with no edge (torch wraps the
    number in a tensor that does not require grad: the same ``next_functions``). What every
    binary operator with a number operand records (``y * 1.0001``, ``w - 0.1 * g``)."""
    backend = a._backend
    if not a._requires_grad or not _GRAD.enabled:
        return _make(data, backend)
    c0 = (a._fn if a._view is None else a.grad_fn) or a._accumulator()
    node = _new(BLANK)  # filled in as one class, then made a cls (node.BLANK)
    node._n0 = c0
    node._n1 = None
    node._nx = node._sx = None  # _sx: set, so that getattr(node, "_sx", None) never raises (slow)
    node._k = 2
    save0, save1, save_result = cls._mask_plans[1]
    if save0:
        node._s0 = a
        vc = a._vc
        if vc.__class__ is not list and vc is not None:  # an inference tensor cannot be saved
            raise inference_saved()
        node._v0 = 0 if vc is None else vc[0]
        node._live = True
    else:
        node._s0 = None
        node._live = True if (save_result or save1) else None
    node._s1 = s if save1 else None
    node._v1 = None
    node._sr = data if save_result else None
    node._vr = None  # set only when the output is changed in place (Tensor._link_saved_result)
    node._attrs = attrs
    node._pre_hooks = None
    node._retain = None
    node._shapes = sizes((da.shape, ())) if cls.needs_sizes else None
    shape = data.shape
    kept = _sizes(shape)
    node._shape = kept if kept is not None else sizes(shape)
    node._seq = _seq()
    node.__class__ = cls
    if SAVED_HOOKS:
        PACK_SAVED[0](node)
    if a._view is not None:
        note_edge_nrs(node, (a, s))
    return _result(data, backend, node)


def apply1(cls, a, da, attrs=()):
    """``apply`` for one tensor input whose array (after any cast) is ``da``."""
    backend = a._backend
    data = cls.forward(backend.xp, da, *attrs)
    if not a._requires_grad or not _GRAD.enabled:
        return _make(data, backend)
    c0 = (a._fn if a._view is None else a.grad_fn) or a._accumulator()
    node = _new(BLANK)  # filled in as one class, then made a cls (node.BLANK)
    node._n0 = c0
    node._n1 = None
    node._nx = node._sx = None  # _sx: set, so that getattr(node, "_sx", None) never raises (slow)
    node._k = 1
    save0, save_result = cls._mask_plans[1]
    if save0:
        node._s0 = a
        vc = a._vc
        if vc.__class__ is not list and vc is not None:  # an inference tensor cannot be saved
            raise inference_saved()
        node._v0 = 0 if vc is None else vc[0]
        node._live = True
    else:
        node._s0 = None
        node._live = True if save_result else None
    node._s1 = None
    node._sr = data if save_result else None
    node._vr = None  # set only when the output is changed in place (Tensor._link_saved_result)
    node._attrs = attrs
    node._pre_hooks = None
    node._retain = None
    node._shapes = sizes((da.shape,)) if cls.save_sizes else None
    shape = getattr(data, "shape", None)
    kept = _sizes(shape)
    node._shape = kept if kept is not None or shape is None else sizes(shape)
    node._seq = _seq()
    node.__class__ = cls
    if SAVED_HOOKS:  # inside autograd.graph.saved_tensors_hooks
        PACK_SAVED[0](node)
    if a._view is not None:
        note_edge_nrs(node, (a,))
    return _result(data, backend, node)


def _apply_general(cls, inputs, attrs=(), arrays=None):
    backend = None
    needs_grad = False
    own_arrays = arrays is None
    if own_arrays:
        arrays = []
    for x in inputs:
        if x.__class__ is Tensor:
            b = x._backend
            if backend is None:
                backend = b
            elif b is not backend:
                raise _devices_differ(backend, b)
            if own_arrays:
                arrays.append(x._data)
            if x._requires_grad:
                needs_grad = True
        elif own_arrays:
            arrays.append(x)
    data = cls.forward(backend.xp, *arrays, *attrs)
    if needs_grad and _GRAD.enabled:
        if cls._mask_plans is not None and len(inputs) > 2:
            return _record_n(cls, inputs, arrays, data, attrs, backend)
        edges = tuple(
            (((x._fn if x._view is None else x.grad_fn) or x._accumulator()), x.output_nr)
            if x.__class__ is Tensor and x._requires_grad else _NO_EDGE
            for x in inputs)
        shapes = tuple(getattr(a, "shape", ()) for a in arrays) if cls.save_sizes else None
        return Tensor._make(data, backend, new_node(cls, inputs, data, attrs, shapes, edges))
    return Tensor._make(data, backend)


def guard_attrs(out, *tensors):
    """``out`` (returned): its node (of a ``guarded`` class) keeps the arrays of ``tensors`` among its
    attributes (an index, a mask, a target) where torch saves the tensors themselves, so backward
    checks them as saved inputs: changed in place since, it fails with torch's message, and the
    graph, once freed by a backward, is refused a second one. Arguments that are not tensors (a
    weight left None) are passed over; with no tensor (indices from a list, a copy the op made),
    the arrays are the node's own: only the freed graph is refused. An inference tensor cannot be
    saved."""
    node = out._fn if out.__class__ is Tensor else None
    if node is not None and node.guarded:
        guards = ()
        for t in tensors:
            if t.__class__ is Tensor:
                guards += (t, _saved_version(t))
        node._guards = guards or None
        node._live = True
    return out


def _saved_version(x):
    """A saved tensor's version (an inference tensor cannot be saved)."""
    vc = x._vc
    if vc.__class__ is not list and vc is not None:
        raise inference_saved()
    return 0 if vc is None else vc[0]


def _finish_n(node, cls, attrs, shapes, shape):
    """The slots ``_record3`` and ``_record_n`` set alike, after the edges and the save plan; then
    the node (a BLANK until here) becomes a ``cls``."""
    node._attrs = attrs
    node._pre_hooks = None
    node._retain = None
    node._shapes = None if shapes is None else sizes(shapes)
    node._shape = None if shape is None else sizes(shape)
    node._seq = _seq()
    node.__class__ = cls
    if SAVED_HOOKS:
        PACK_SAVED[0](node)


def _record3(cls, a, b, c, da, db, dc, data, attrs, backend):
    """``_record_n`` for three tensors, unrolled (apply3's recording)."""
    mask = 0
    c0 = c1 = c2 = None
    if a._requires_grad:
        c0 = (a._fn if a._view is None else a.grad_fn) or a._accumulator()
        if c0 is not None:
            mask = 1
    if b._requires_grad:
        c1 = (b._fn if b._view is None else b.grad_fn) or b._accumulator()
        if c1 is not None:
            mask |= 2
    if c._requires_grad:
        c2 = (c._fn if c._view is None else c.grad_fn) or c._accumulator()
        if c2 is not None:
            mask |= 4
    node = _new(BLANK)  # (node.BLANK)
    node._k = 3
    node._n0, node._n1, node._nx = c0, c1, (c2,)
    p0, p1, p2, save_result = cls._mask_plans[mask]
    node._sr = data if save_result else None
    node._vr = None
    node._s0 = node._s1 = None
    if p0 or p1 or p2:
        node._sx = ((a if p0 else None, b if p1 else None, c if p2 else None),
                    (_saved_version(a) if p0 else None, _saved_version(b) if p1 else None,
                     _saved_version(c) if p2 else None))
        node._live = True
    else:
        node._sx = None
        node._live = True if save_result else None
    _finish_n(node, cls, attrs, (da.shape, db.shape, dc.shape) if cls.save_sizes else None, data.shape)
    if a._view is not None or b._view is not None or c._view is not None:
        note_edge_nrs(node, (a, b, c))
    return _result(data, backend, node)


def _record_n(cls, inputs, arrays, data, attrs, backend):
    """``new_node`` for three or four inputs (lerp, addcmul, where, clamp with tensor bounds), as
    apply1 and record2 record one or two: the children and the save plan by the mask of inputs
    that need a gradient, each saved input with its version, the output numbers only where an
    input is a view. (Plain loops: a generator expression costs more than the work it does.)"""
    children = []
    mask = 0
    bit = 1
    views = False
    for x in inputs:
        child = None
        if x.__class__ is Tensor and x._requires_grad:
            child = (x._fn if x._view is None else x.grad_fn) or x._accumulator()
            if child is not None:
                mask |= bit
            if x._view is not None:
                views = True
        children.append(child)
        bit <<= 1
    node = _new(BLANK)  # (node.BLANK)
    node._k = len(children)
    node._n0, node._n1 = children[0], children[1]
    node._nx = tuple(children[2:])
    plan = cls._mask_plans[mask]
    save_result = plan[-1]
    node._sr = data if save_result else None
    node._vr = None
    node._s0 = node._s1 = None
    if True in plan[:-1]:
        values, versions = [], []
        for x, saved in zip(inputs, plan):
            if saved and x.__class__ is Tensor:
                vc = x._vc
                if vc.__class__ is not list and vc is not None:  # an inference tensor cannot be saved
                    raise inference_saved()
                values.append(x)
                versions.append(0 if vc is None else vc[0])
            else:
                values.append(x if saved else None)
                versions.append(None)
        node._sx = (tuple(values), tuple(versions))
        node._live = True
    else:
        node._sx = None
        node._live = True if save_result else None
    _finish_n(node, cls, attrs, tuple([a.shape if a.__class__ is _ndarray else getattr(a, "shape", ()) for a in arrays])
              if cls.save_sizes else None, getattr(data, "shape", None))
    if views:
        note_edge_nrs(node, inputs)
    return _result(data, backend, node)


def backend_of(*xs):
    for x in xs:
        if x.__class__ is Tensor:
            return x._backend
    from ..backend import NUMPY
    return NUMPY
