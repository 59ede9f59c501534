"""Graph nodes (PyTorch's ``grad_fn`` objects) and how they are made from formulas.

Derivatives are data, as in PyTorch's ``derivatives.yaml``: each node class is
built by ``define_node`` from one formula string per input, e.g. for
``MulBackward0``::

    self:  grad * other
    other: grad * self

A formula is an expression over ``grad``, the op's inputs (``self``, ``other``,
...), its output (``result``), the inputs' shapes (``self_sizes``) and the op's
attributes (``dim``, ``keepdim``...), with array functions reached through ``F``.
The engine evaluates it with ``F`` bound to plain array math for ordinary
backward, or to gradcli's own differentiable functions under
``create_graph=True``, which is how higher derivatives come for free (Chainer's
idea). The names a formula mentions decide what the forward pass saves, so a node
keeps alive exactly what its backward needs, and frees it after backward.
"""

from __future__ import annotations

import itertools
import linecache
import re
import sys as _sys
import weakref
from types import FunctionType as _FunctionType

from ..errors import AutogradError
from .tensor import Detached, Tensor, _ndarray_type, inference_saved
from ..backend.numpy_fast import HalfOpmath as _HalfOpmath, number_array as _number_array

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
          "after they have already been freed). Saved intermediate values of the graph are freed "
          "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
          "backward through the graph a second time or if you need to access saved tensors after "
          "calling backward.")

_sequence = itertools.count()
_next_seq = _sequence.__next__  # the engine's anomaly mode swaps in one that records the stack

# The shapes a node keeps (its output's, its inputs' sizes: tuples of ints, or tuples of them), one
# tuple per distinct value. A new tuple is tracked by the cyclic collector until a collection has
# looked at it: kept on a node it counts towards the next collection and is traversed in it, as the
# node is -- a recorded 2x2 op kept one (the output's shape), repeat_interleave's five nodes fifteen,
# each costing about as much collector time as its op's ufunc. The shared one was looked at long ago.
SIZES: dict = {}
_SIZES_MAX = 4096  # distinct values kept at most (then the table starts again)


def sizes(value):
    """``value`` (a shape, or a tuple of shapes: ints only -- equal floats or bools would stand in
    for them), as the one tuple kept per distinct value (:data:`SIZES`)."""
    found = SIZES.get(value)
    if found is None:
        if len(SIZES) >= _SIZES_MAX:
            SIZES.clear()
        SIZES[value] = found = value
    return found


NODE_CLASSES: dict[str, type] = {}  # every node class by name: define_node's and hand-written ones
# Called with each node class made from now on (introspection installs its ``_saved_*`` fields:
# a class-level ``__getattr__`` would cost every node attribute read its specialised path).
NEW_CLASS_HOOKS: list = []
# autograd.graph.saved_tensors_hooks: the (pack, unpack) pairs in force, innermost last, and the
# function (gradcli.autograd.introspection.pack_saved) that packs a new node's saved tensors
SAVED_HOOKS: list = []
PACK_SAVED = [None]
# The output numbers of a node's edges, for the few nodes with an input that is not output 0 of
# its grad_fn (a row of ``unbind``, a part of ``split``): {node: (output_nr per input)}. Kept
# beside the node rather than in it so that recording, the hot path, pays nothing for it.
EDGE_NRS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def specialised(fn):
    """``fn`` again, with a code object of its own: each node class's copy of its ``apply``.

    CPython (3.11 on) specialises each attribute access in a code object to the type it meets
    there, per instruction and in the code object itself. Node classes are many (one per op) and
    all keep their fields in Node's slots, so one ``_apply_2`` reading the saved values of a
    MulBackward0, then an AddBackward0, then a DivBackward0... meets a new class at the same
    instructions node after node and runs them on the generic path. A copy per class keeps its
    reads specialised to that class. It is the same function: same bytecode, globals, defaults
    and closure. (Making nodes has the same problem, solved otherwise: see BLANK.)"""
    copy = _FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__, copy.__doc__, copy.__module__ = fn.__qualname__, fn.__doc__, fn.__module__
    return copy


class Node:
    """A backward function: takes the gradient of its output, returns one per input.

    ``next_functions`` holds, per input, ``(node, 0)`` for an input that needs a
    gradient and ``(None, 0)`` otherwise, exactly as PyTorch shows it.

    Layout (the hot path of recording and backward, so no per-node tuples or dicts,
    and one object per recorded op for the cyclic GC to track): the children of the
    first two inputs sit in ``_n0``/``_n1`` (``_nx``: a tuple of the rest, for
    three or more inputs; ``_k`` is the number of inputs); the saved inputs in
    ``_s0``/``_s1`` with their version counters at save time in ``_v0``/``_v1``
    (``_sx = (values, versions)`` for three or more inputs), the saved result array
    in ``_sr``; ``_live`` is None when nothing is saved, True while saved values are
    held and False once backward has freed them. ``_guards`` (set only on the nodes of a class
    declared ``guarded``, by ``function.guard_attrs``): ``(tensor, version, ...)`` for the
    tensors whose arrays are among its attributes (an index, a mask, a target), which torch saves.
    """

    __slots__ = ("_n0", "_n1", "_nx", "_k", "_s0", "_s1", "_sx", "_v0", "_v1", "_sr", "_vr", "_live",
                 "_attrs", "_pre_hooks", "_retain", "_shapes", "_seq", "_shape", "_guards", "__weakref__")

    # Filled in per class by define_node:
    formulas: tuple = ()        # per input: compiled formula, or None where none flows
    derivatives: tuple = ()     # per input: (input name, formula text)
    input_names: tuple = ()
    attr_names: tuple = ()
    save_inputs: tuple = ()     # per input: does any formula read it?
    save_result: bool = False
    save_sizes: bool = False
    broadcasts: bool = False    # elementwise op whose gradients must be summed back to input shapes
    # a Python number ``other`` is an operand of the gradient (mul, div): a float16 gradient meets it in
    # float32 (torch's opmath), a float32/64 one as the forward's kept 0-d array (number_array)
    opmath_number: bool = False
    needs_sizes: bool = False   # some formula reads an input's sizes
    _arity: int = -1            # number of inputs of a define_node class (-1: hand-written)
    _mask_plans = None
    multi_output: bool = False  # a node with several outputs (MultiOutputNode)
    guarded: bool = False       # attributes hold arrays of tensors torch saves (define_node's ``guarded``)

    def __init_subclass__(cls, register: bool = True, **kwargs):
        super().__init_subclass__(**kwargs)
        if register:  # a second class under a name already taken keeps the first in the table
            NODE_CLASSES[cls.__name__] = cls
        for hook in NEW_CLASS_HOOKS:  # introspection's torch fields (``_saved_self``...) as properties
            hook(cls)

    def name(self) -> str:
        return type(self).__name__

    def name_for_repr(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name_for_repr()}>"

    @property
    def next_functions(self) -> tuple:
        nrs = EDGE_NRS.get(self)
        if nrs is None:
            return tuple((c, 0) for c in self._children())
        return tuple(zip(self._children(), nrs))

    def _children(self) -> tuple:
        """Per input, the node its gradient goes to (None where none flows)."""
        k = self._k
        if k == 1:
            return (self._n0,)
        if k == 2:
            return (self._n0, self._n1)
        if k == 0:
            return ()
        return (self._n0, self._n1) + self._nx

    # -- saved values ----------------------------------------------------------------
    @property
    def _saved(self):
        """``(saved inputs, saved result)``; None once freed (what ``gradcli graph --saved`` shows)."""
        live = self._live
        if live is False:
            return None
        if live is None:
            return _NOTHING
        k = self._k
        if k > 2:
            values = self._sx[0] if self._sx is not None else (None,) * k
        else:
            values = (self._s0, self._s1)[:k]
        return values, self._sr

    def _result_backend(self):
        values = self._saved[0] if self._live else ()
        for value in values:
            backend = getattr(value, "_backend", None)
            if backend is not None:
                return backend
        from ..backend import NUMPY
        return NUMPY

    def _release(self) -> None:
        """Free saved values after a backward without ``retain_graph``."""
        if self._live:
            self._live = False
            self._s0 = self._s1 = self._sx = self._sr = None

    def apply(self, grad, F, differentiable: bool):
        """Gradients for each input (None where no gradient flows); set per class by define_node."""
        raise NotImplementedError(f"{type(self).__name__} has no backward")


_NOTHING = ((), None)


def _version_message(value, node: Node, expected: int) -> str:
    return _modified_message(value._data, value.grad_fn, value._version_now(), expected)


def _modified_message(data, producer, now: int, expected: int) -> str:
    shape = "[" + ", ".join(str(s) for s in data.shape) + "]"
    kind = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "float16": "torch.HalfTensor",
            "int64": "torch.LongTensor", "int32": "torch.IntTensor",
            "bool": "CPUBoolType"}.get(str(data.dtype), "torch.Tensor")  # (a bool tensor: its legacy name)
    # torch names the op without its "Backward0" suffix, and says nothing more for a leaf
    which = "" if producer is None else \
        f", which is output 0 of {re.sub(r'Backward[0-9]*$', '', producer.name())},"
    return (f"one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{kind} {shape}]{which} is at version "
            f"{now}; expected version {expected} instead. {_hint()}")


def _hint() -> str:
    from .engine import ANOMALY
    if ANOMALY.enabled:
        return ("Hint: the backtrace further above shows the operation that failed to compute its gradient. "
                "The variable in question was changed in there or anywhere later. Good luck!")
    return ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
            "with torch.autograd.set_detect_anomaly(True, check_nan=False).")


def _check_detached(x, node) -> None:
    if x._view.seq > node._seq:  # detached in place after this node saved it
        raise AutogradError("Trying to use a saved tensor that has been detached in-place, i.e. with "
                            ".detach_().This is not supported, please use out-of-place `.detach()` instead")


def _result_modified(node: Node, result):
    """The check torch makes on a saved output: ``node._vr`` is ``(version counter, version at
    save)``, set by ``Tensor._link_saved_result`` before the output is first changed in place, or by
    an in-place op that saved its own output (``exp_``)."""
    counter, expected, *view_node = node._vr  # a third item: a weak reference to the view's node
    producer = (view_node[0]() if view_node else None) or node
    return AutogradError(_modified_message(result, producer, counter[0], expected))


class _Blank(Node, register=False):
    """What every recording path fills a new node in as, before it becomes its op's class: see BLANK."""
    __slots__ = ()


# The recording paths (function.record2, record_number, apply1, views.view_of) make a new node as a
# BLANK, store its ~16 slots, and only then give it its op's class (``node.__class__ = cls``: every
# define_node class has Node's layout). CPython (3.11 on) specialises each attribute store to the
# type it meets there, per instruction: stored as their own classes, the nodes of every op met the
# same instructions in turn (record2 makes a MulBackward0, then an AddBackward0...) and took the
# generic path, 2.7x the time (~0.53 us a node against ~0.2; the class assignment costs ~0.06).
BLANK = _Blank


class AccumulateGrad(Node):
    """The sink for a leaf that requires grad: adds incoming gradients into ``leaf.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self._n0 = self._n1 = self._nx = None
        self._k = 0
        self._s0 = self._s1 = self._sx = self._sr = None
        self._live = None
        self._attrs = ()
        self._pre_hooks = None
        self._retain = None
        self._shapes = None
        self._seq = 1 << 62  # torch gives AccumulateGrad the highest priority (UINT64_MAX)

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def name_for_repr(self) -> str:
        return "AccumulateGrad"

    def __lt__(self, other) -> bool:
        # The engine's ready queue orders nodes by sequence number, AccumulateGrad first, as
        # torch does; between two AccumulateGrads torch's priority queue sees a tie, and so
        # does ours (heap entries compare equal), which gives torch's order of leaf hooks.
        return False


class MultiOutputNode(Node):
    """A node with several outputs (``unbind``, ``split``), as torch's: each output tensor has it as
    ``grad_fn`` with its own ``output_nr``, an edge into it is ``(node, output_nr)``, and the engine
    gives it one gradient slot per output (None for an output that got none). Tensor hooks and
    ``retain_grad`` of an output are kept per output: ``_pre_hooks`` and ``_retain`` are dicts by
    output number. Subclasses implement ``apply(grads, F, differentiable)`` over the slots."""

    __slots__ = ("_nout",)
    multi_output = True

    def hooks_of(self, nr: int) -> dict:
        """The tensor hooks of output ``nr`` (created on first use)."""
        table = self._pre_hooks
        if table is None:
            table = self._pre_hooks = {}
        return table.setdefault(nr, {})

    def retain(self, nr: int, tensor) -> None:
        if self._retain is None:
            self._retain = {}
        self._retain[nr] = weakref.ref(tensor)


def note_edge_nrs(node: Node, inputs) -> None:
    """Record the output numbers of ``node``'s edges when an input is not output 0 of its grad_fn
    (called by recording only for inputs that are views: multi-output results always are)."""
    for x in inputs:  # the usual views (of a leaf, a reshape) are output 0: nothing to note
        if x.__class__ is Tensor and x._view is not None and x._requires_grad and x.output_nr:
            EDGE_NRS[node] = tuple(x.output_nr if x.__class__ is Tensor and x._requires_grad else 0 for x in inputs)
            return


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "id")
    _ids = itertools.count()

    def __init__(self, hooks: dict, hook):
        self._hooks = hooks
        self.id = next(self._ids)
        hooks[self.id] = hook

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __repr__(self) -> str:
        return "<torch.utils.hooks.RemovableHandle>"


# -- building node classes from formulas ---------------------------------------------------



def define_node(name: str, *, inputs=("self",), attrs=(), broadcasts: bool = False,
                forward=None, doc: str = "", reuses_grad: bool = False, guarded: bool = False,
                **derivatives: str) -> type:
    """Create the node class ``name`` with one derivative formula per input.

    ``derivatives`` maps input names to formula text; an input without a formula
    (or with ``"non_differentiable"``) receives no gradient. ``reuses_grad``: the formula of a
    one-input node may write its result into the gradient it runs on, when nothing else holds
    that (``F.spare``, set by ``_reusing``). ``guarded``: some attributes hold the arrays
    of tensors torch saves (an index, a mask, a target: the op calls ``function.guard_attrs``),
    checked before the backward runs as saved inputs are (``_guarded``).
    """
    params = ["F", "grad", *inputs, "result", *(f"{i}_sizes" for i in inputs), *attrs]
    specs, texts, used, uses = [], [], set(), []
    for inp in inputs:
        text = derivatives.pop(inp, None)
        if text is None or text == "non_differentiable":
            specs.append(None)
            texts.append((inp, "non_differentiable"))
            uses.append(frozenset())
            continue
        # the names it reads (and any other identifier in its text: a superset that only the
        # inputs', "result" and "<input>_sizes" are looked up in); compiled on first use (_Formulas)
        read = frozenset(_IDENTIFIERS(text))
        used.update(read)
        uses.append(read)
        specs.append((name, inp, params, text))
        texts.append((inp, text))
    if derivatives:
        raise TypeError(f"{name}: formulas for unknown inputs {sorted(derivatives)}")
    k = len(inputs)
    # (each class its own copy of the apply function: see specialised)
    apply = _reusing(specialised(_apply_1)) if reuses_grad and k == 1 else specialised(_APPLY.get(k, _apply_n))
    cls = type(name, (Node,), {
        "__slots__": (),
        "__doc__": doc or f"Backward of {name[:-len('Backward0')] or name}.",
        "formulas": _Formulas(tuple(specs)),
        "derivatives": tuple(texts),
        "input_names": tuple(inputs),
        "attr_names": tuple(attrs),
        "save_inputs": tuple(i in used for i in inputs),
        "save_result": "result" in used,
        "save_sizes": broadcasts or any(f"{i}_sizes" in used for i in inputs),
        "needs_sizes": any(f"{i}_sizes" in used for i in inputs),
        "broadcasts": broadcasts,
        "_uses": tuple(uses),
        "_arity": k,
        "guarded": guarded,
        "apply": specialised(_guarded(apply)) if guarded else apply,
    })
    # Save plans by bit mask of the inputs that need a gradient (bit i: input i), for the
    # recording fast path: (save input 0, save input 1, save result) for up to two inputs; the
    # general path (new_node) reads those of three and four inputs (lerp, addcmul: 8 and 16 plans).
    if k <= 4:
        cls._mask_plans = tuple(_plan_for(cls, tuple(bool(m >> i & 1) for i in range(k))) for m in range(1 << k))
    if forward is not None:
        cls.forward = staticmethod(forward)
    return cls


# -- backward: one plain function per number of inputs ----------------------------------------
#
# Each checks that the saved values still exist and were not modified in place since, unpacks
# them (arrays for plain backward, tensors under ``create_graph``), calls the class's formulas
# for the inputs that need a gradient, and sums broadcast gradients back to the inputs' shapes.
# One, two and three inputs (nearly every op) have their own, with no per-call loops.

def _saved_value(node, x, version, differentiable):
    """A saved input for a formula: its array (or the tensor itself under create_graph), after
    checking that it was not changed in place since it was saved."""
    vc = x._vc
    if vc is not None and vc[0] != version:
        raise AutogradError(_version_message(x, node, version))
    if x._view.__class__ is Detached:
        _check_detached(x, node)
    return x if differentiable else x._data


def _saved_result(node, F, differentiable):
    result = node._sr
    if result is not None:
        try:  # None on most nodes (set only for outputs changed in place); unset on hand-written ones
            vr = node._vr
        except AttributeError:
            vr = None
        if vr is not None and vr[0][0] != vr[1]:
            raise _result_modified(node, result)
        if differentiable:
            result = Tensor._make(result, F.backend, node)
    return result


_NUMBERS = (int, float)


def _wrapped_number(value, grad, F):
    """A saved Python number under create_graph: torch saved it as a wrapped-number tensor, so
    ``grad * other`` records MulBackward0 with a None edge (not the Scalar overload)."""
    return Tensor._make(F.backend.xp.asarray(value, dtype=grad._data.dtype), F.backend)


def _apply_1(node, grad, F, differentiable):
    if node._live is False:
        raise AutogradError(_FREED)
    x0 = node._s0
    if x0.__class__ is Tensor:  # saved: check it was not changed in place since (inlined: hot)
        vc = x0._vc
        if vc is not None and vc[0] != node._v0:
            raise AutogradError(_version_message(x0, node, node._v0))
        if x0._view.__class__ is Detached:
            _check_detached(x0, node)
        if not differentiable:
            x0 = x0._data
    result = node._sr  # the saved array as it is, unless it may have changed or must be a tensor
    if result is not None and (differentiable or getattr(node, "_vr", None) is not None):
        result = _saved_result(node, F, differentiable)
    shapes = node._shapes
    z0 = None if shapes is None else shapes[0]
    f = node.formulas[0]
    if f is None or node._n0 is None:
        return (None,)
    attrs = node._attrs
    g0 = f(F, grad, x0, result, z0, *attrs) if attrs else f(F, grad, x0, result, z0)
    if node.broadcasts and shapes is not None and g0 is not None and g0.shape != z0:
        g0 = F.sum_to(g0, z0)
    return (g0,)


def _reusing(apply):
    """``apply`` (a class's _apply_1), with ``grad`` lent to the formula (``F.spare``) when it is a
    large NumPy array that only the backward's walk holds: the references are then the walk's,
    this function's and getrefcount's argument (a tensor, a view, another node's pending gradient,
    a hook's argument, the walk's capture would each add one)."""
    def apply_1_reusing(node, grad, F, differentiable):
        if not differentiable and grad.__class__ is _ndarray and grad.size >= _REUSE_SIZE \
                and _getrefcount(grad) == 3 and grad.base is None:
            F.spare = grad
            try:
                return apply(node, grad, F, differentiable)
            finally:
                F.spare = None
        return apply(node, grad, F, differentiable)
    return apply_1_reusing


_REUSE_SIZE = 4096  # a smaller gradient is not lent: no formula saves anything on it
_ndarray = _ndarray_type  # NumPy arrays: the ones a formula may write into
_F16 = __import__("numpy").dtype("float16")
_getrefcount = _sys.getrefcount


def _apply_2(node, grad, F, differentiable):
    if node._live is False:
        raise AutogradError(_FREED)
    x0 = node._s0
    if x0.__class__ is Tensor:
        vc = x0._vc
        if vc is not None and vc[0] != node._v0:
            raise AutogradError(_version_message(x0, node, node._v0))
        if x0._view.__class__ is Detached:
            _check_detached(x0, node)
        if not differentiable:
            x0 = x0._data
    elif differentiable and x0.__class__ in _NUMBERS:
        x0 = _wrapped_number(x0, grad, F)
    x1 = node._s1
    if x1.__class__ is Tensor:
        vc = x1._vc
        if vc is not None and vc[0] != node._v1:
            raise AutogradError(_version_message(x1, node, node._v1))
        if x1._view.__class__ is Detached:
            _check_detached(x1, node)
        if not differentiable:
            x1 = x1._data
    elif x1.__class__ in _NUMBERS:
        if differentiable:
            x1 = _wrapped_number(x1, grad, F)
        elif grad.__class__ is _ndarray and node.opmath_number:  # grad * other, grad / other
            # float16: as torch's kernels (opmath); float32/64: the number as a 0-d array of the
            # gradient's dtype, the forward's operand (the same bits under NEP 50, half the call)
            x1 = _HalfOpmath(x1) if grad.dtype is _F16 else _number_array(x1, grad.dtype)
    result = node._sr  # the saved array as it is, unless it may have changed or must be a tensor
    if result is not None and (differentiable or getattr(node, "_vr", None) is not None):
        result = _saved_result(node, F, differentiable)
    shapes = node._shapes
    z0, z1 = (None, None) if shapes is None else shapes
    f0, f1 = node.formulas
    attrs = node._attrs
    if attrs:
        g0 = None if f0 is None or node._n0 is None else f0(F, grad, x0, x1, result, z0, z1, *attrs)
        g1 = None if f1 is None or node._n1 is None else f1(F, grad, x0, x1, result, z0, z1, *attrs)
    else:
        g0 = None if f0 is None or node._n0 is None else f0(F, grad, x0, x1, result, z0, z1)
        g1 = None if f1 is None or node._n1 is None else f1(F, grad, x0, x1, result, z0, z1)
    if node.broadcasts and shapes is not None:
        if g0 is not None and g0.shape != z0:
            g0 = F.sum_to(g0, z0)
        if g1 is not None and g1.shape != z1:
            g1 = F.sum_to(g1, z1)
    return (g0, g1)


def _apply_n(node, grad, F, differentiable):
    """Three or more inputs (``clamp`` with tensor bounds, ``cat``...)."""
    if node._live is False:
        raise AutogradError(_FREED)
    k = node._k
    values, versions = node._sx if node._sx is not None else ((None,) * k, None)
    xs = [_saved_value(node, x, versions[i], differentiable) if x.__class__ is Tensor else x
          for i, x in enumerate(values)]
    result = node._sr  # the saved array as it is, unless it may have changed or must be a tensor
    if result is not None and (differentiable or getattr(node, "_vr", None) is not None):
        result = _saved_result(node, F, differentiable)
    shapes = node._shapes if node._shapes is not None else (None,) * k
    args = (F, grad, *xs, result, *shapes, *node._attrs)
    children = node._children()
    grads = [None if f is None or child is None else f(*args) for f, child in zip(node.formulas, children)]
    if node.broadcasts and node._shapes is not None:
        for i, (g, z) in enumerate(zip(grads, shapes)):
            if g is not None and g.shape != z:
                grads[i] = F.sum_to(g, z)
    return grads


def _apply_3(node, grad, F, differentiable):
    """``_apply_n`` for three inputs (lerp, addcmul, addcdiv, addmm, where), unrolled."""
    if node._live is False:
        raise AutogradError(_FREED)
    saved = node._sx
    if saved is None:
        x0 = x1 = x2 = None
    else:
        (x0, x1, x2), (v0, v1, v2) = saved
        if x0.__class__ is Tensor:
            x0 = _saved_value(node, x0, v0, differentiable)
        if x1.__class__ is Tensor:
            x1 = _saved_value(node, x1, v1, differentiable)
        if x2.__class__ is Tensor:
            x2 = _saved_value(node, x2, v2, differentiable)
    result = node._sr  # the saved array as it is, unless it may have changed or must be a tensor
    if result is not None and (differentiable or getattr(node, "_vr", None) is not None):
        result = _saved_result(node, F, differentiable)
    shapes = node._shapes
    z0, z1, z2 = (None, None, None) if shapes is None else shapes
    args = (F, grad, x0, x1, x2, result, z0, z1, z2, *node._attrs)
    f0, f1, f2 = node.formulas
    g0 = None if f0 is None or node._n0 is None else f0(*args)
    g1 = None if f1 is None or node._n1 is None else f1(*args)
    g2 = None if f2 is None or node._nx[0] is None else f2(*args)
    if node.broadcasts and shapes is not None:
        if g0 is not None and g0.shape != z0:
            g0 = F.sum_to(g0, z0)
        if g1 is not None and g1.shape != z1:
            g1 = F.sum_to(g1, z1)
        if g2 is not None and g2.shape != z2:
            g2 = F.sum_to(g2, z2)
    return (g0, g1, g2)


_APPLY = {1: _apply_1, 2: _apply_2, 3: _apply_3}


def _guarded(apply):
    """``apply`` for a node class whose attributes hold the arrays of tensors torch saves (gather's
    index, masked_fill's mask, nll_loss's target): first, as for a saved input, a graph already
    freed is refused, and a tensor changed in place since the op fails backward with torch's message
    (the array the formula would read is not the one the forward used)."""
    def guarded(node, grad, F, differentiable):
        if node._live is False:
            raise AutogradError(_FREED)
        try:
            guards = node._guards
        except AttributeError:  # recorded by a path that keeps no tensor (a number, an array of its own)
            guards = None
        if guards is not None:  # (tensor, version, tensor, version...): mostly one
            t = guards[0]
            vc = t._vc
            if vc is not None and vc[0] != guards[1]:
                raise AutogradError(_version_message(t, node, guards[1]))
            for i in range(2, len(guards), 2):
                t, version = guards[i], guards[i + 1]
                vc = t._vc
                if vc is not None and vc[0] != version:
                    raise AutogradError(_version_message(t, node, version))
        return apply(node, grad, F, differentiable)
    guarded.__name__ = guarded.__qualname__ = f"guarded_{apply.__name__}"
    return guarded


class _Formulas:
    """A node class's ``formulas``, compiled on first use: the op table declares ~100 node classes
    at import and a run uses a few, so compiling every formula into its function up front cost
    ~4 ms of every start. The first read (``node.formulas`` or ``cls.formulas``) compiles them and
    puts the tuple on the class in this descriptor's place, so later reads are a plain class
    attribute. (Its names are read at declaration from its text, without compiling it; a test
    compiles every declared formula.)"""

    __slots__ = ("specs",)

    def __init__(self, specs: tuple):
        self.specs = specs  # per input: (node name, input name, parameters, text), or None

    def __get__(self, node, cls):
        formulas = tuple(None if spec is None else _compile_formula(*spec) for spec in self.specs)
        if cls.__dict__.get("formulas") is self:
            cls.formulas = formulas
        return formulas


def _compile_formula(node_name: str, input_name: str, params, text: str):
    """A formula as a function named after its node and input (``MulBackward0.other``), compiled
    under that file name with its text registered in ``linecache``, so that a traceback through
    it reads ``File "<MulBackward0.other>", line 2, in MulBackward0.other`` and shows the formula."""
    filename = f"<{node_name}.{input_name}>"
    source = f"lambda {', '.join(params)}: (\n    {text})\n"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    # Formulas are static text from this package's op declarations, never user input.
    fn = eval(compile(source, filename, "eval"), _FORMULA_GLOBALS)  # noqa: S307
    label = f"{node_name}.{input_name}"
    fn.__code__ = fn.__code__.replace(co_name=label, co_qualname=label)
    fn.__name__ = fn.__qualname__ = label
    return fn


# No builtins in formulas, but the import hook: C code called from a formula imports through the
# calling frame's builtins (CuPy builds a ufunc's kernel at its first use with a dtype, and imports
# then; without __import__ there, every first CUDA backward died with KeyError: '__import__').
_FORMULA_GLOBALS: dict = {"__builtins__": {"__import__": __import__}}
_IDENTIFIERS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").findall  # a formula's names, without compiling it (start-up)


def formula_helpers(**helpers) -> None:
    """Names (beyond ``F``) that formulas may use, such as ``math``."""
    _FORMULA_GLOBALS.update(helpers)


def _plan_for(cls, key):
    needed = set()
    for names, wanted in zip(cls._uses, key):
        if wanted:
            needed |= names
    return tuple(i in needed for i in cls.input_names) + ("result" in needed,)


def _save_plan(cls, children):
    """Which inputs (and whether the result) to save: only what the formulas of the inputs that
    need a gradient read, as PyTorch does (``x.mul_(2)`` saves nothing of ``x``, so modifying
    ``x`` in place afterwards is fine). Returns ``(save per input, save result)``."""
    if "_uses" not in cls.__dict__:  # a hand-written node class: its declared saves
        return cls.save_inputs, cls.save_result
    key = tuple(c is not None for c in children)
    if cls._mask_plans is not None:  # up to four inputs: precomputed by define_node
        full = cls._mask_plans[sum(1 << i for i, wanted in enumerate(key) if wanted)]
    else:
        full = _plan_for(cls, key)
    return full[:-1], full[-1]


def _version_of(x):
    vc = x._vc
    if vc.__class__ is not list and vc is not None:  # an inference tensor cannot be saved
        raise inference_saved()
    return 0 if vc is None else vc[0]


def set_children(node: Node, children) -> None:
    """Store the per-input children (nodes or None) in the node's edge slots."""
    k = len(children)
    node._k = k
    node._n0 = children[0] if k > 0 else None
    node._n1 = children[1] if k > 1 else None
    node._nx = tuple(children[2:]) if k > 2 else None


def new_node(cls: type, inputs, out_data, attrs, shapes, edges):
    """Instantiate a node for a recorded op (the general path; ``function.apply`` has fast ones).

    ``edges`` are ``next_functions`` entries, ``(node or None, output_nr)`` per input."""
    node = object.__new__(cls)
    children = tuple([e[0] for e in edges])
    k = len(children)  # set_children, inlined
    node._k = k
    node._n0 = children[0] if k > 0 else None
    node._n1 = children[1] if k > 1 else None
    node._nx = children[2:] if k > 2 else None
    for e in edges:
        if e[1]:
            EDGE_NRS[node] = tuple([e[1] for e in edges])
            break
    save, save_result = _save_plan(cls, children)
    if save_result or True in save:
        _store_saved(node, inputs, save, out_data if save_result else None, save_result)
    else:  # nothing to save (cat, stack...): _store_saved's first case, inlined
        node._sr = node._vr = node._s0 = node._s1 = node._sx = node._live = None
    node._attrs = attrs
    node._pre_hooks = None
    node._retain = None
    node._shapes = None if shapes is None else sizes(shapes)
    shape = getattr(out_data, "shape", None)  # the output's shape, for `gradcli graph`
    node._shape = None if shape is None else sizes(shape)
    node._seq = _next_seq()
    if SAVED_HOOKS:
        PACK_SAVED[0](node)
    return node


def _store_saved(node: Node, inputs, save, result, save_result: bool) -> None:
    node._sr = result
    node._vr = None
    if not any(save):
        node._s0 = node._s1 = node._sx = None
        node._live = True if save_result else None
        return
    node._live = True
    values = tuple(x if s else None for x, s in zip(inputs, save))
    versions = tuple(_version_of(x) if x.__class__ is Tensor else None for x in values)
    if len(values) > 2:
        node._s0 = node._s1 = None
        node._sx = (values, versions)
        return
    node._sx = None
    node._s0 = values[0]
    node._v0 = versions[0]
    if len(values) > 1:
        node._s1 = values[1]
        node._v1 = versions[1]
    else:
        node._s1 = None


def replace_saved(node: Node, old, new) -> None:
    """An in-place op's node saved its first input ``old`` (``self``), which the op is about to
    overwrite: save ``new`` (torch's ``original_self``, a clone) there instead, at ``new``'s version.
    ``old`` saved as another input (``y *= y``'s ``other``) stays, and fails backward as in torch."""
    if getattr(node, "_sx", None) is not None:
        values, versions = node._sx
        if values[0] is old:
            node._sx = ((new,) + values[1:], (_version_of(new),) + versions[1:])
    elif getattr(node, "_s0", None) is old:
        node._s0, node._v0 = new, _version_of(new)
