"""The backward engine: one loop over the graph in dependency order.

1. Walk the graph from the roots once (an explicit stack, never recursion) and
   count, for every node, how many edges lead into it.
2. Pop ready nodes (all their consumers done) in PyTorch's order, most recently
   created first; run tensor hooks, keep retained grads, call the node's
   formulas, and add each input's gradient into that input's buffer.
3. ``AccumulateGrad`` nodes add into ``leaf.grad``; ``autograd.grad`` instead
   captures the gradients of the requested inputs and touches no ``.grad``.

Without ``create_graph`` gradients flow as plain arrays with grad mode off;
with it they flow as tensors through differentiable formulas, so the result has
a graph of its own.
"""

from __future__ import annotations

import gc as _gc
import sys as _sys
from heapq import heappop, heappush
from operator import attrgetter

from ..backend import NUMPY, SEVERAL as _SEVERAL, backend_of_array as _backend_of_array
from ..errors import ArgumentValueError, AutogradError, GradTypeError, RuntimeTypeError, ShapeError
from ..limits import DEADLINE as _DEADLINE, poll as _poll
from .grad_mode import STATE as _GRAD
from .introspection import NODE_HOOKS as _NODE_HOOKS, POST_ACCUMULATE as _POST_ACCUMULATE
from .introspection import run_post_accumulate, run_posthooks, run_prehooks
from .node import EDGE_NRS as _EDGE_NRS, AccumulateGrad
from .tensor import Tensor

_UNUSED = ("The differentiated Tensor at index {} appears to not have been used in the graph. "
           "Set allow_unused=True if this is the desired behavior.")


# The namespaces formulas are evaluated against (``F``: array math, or differentiable ops under
# create_graph) belong to the op layer above; ``gradcli.ops.formulas`` hands its factory over here
# when it is imported, so the engine never imports upward.
_FORMULA_MATH = [None]


def use_formula_math(math_for) -> None:
    """Set the ``math_for(differentiable, backend)`` factory of formula namespaces."""
    _FORMULA_MATH[0] = math_for


class _Anomaly:
    """Anomaly mode (``enabled``, ``check_nan``). While it is on, every recorded node keeps the
    Python stack that created it (``TRACES``, by sequence number), for the warning torch gives when
    that node's backward fails; switching it is done here so that no op pays for a check."""

    __slots__ = ("_enabled", "check_nan")

    def __init__(self):
        self._enabled = False
        self.check_nan = True

    @property
    def enabled(self) -> bool:
        return self._enabled

    @enabled.setter
    def enabled(self, mode) -> None:
        mode = bool(mode)
        if mode != self._enabled:
            from . import function, node
            function._seq = node._next_seq = _traced_seq if mode else node._sequence.__next__
            TRACES.clear()
        self._enabled = mode


ANOMALY = _Anomaly()
TRACES: dict = {}


def _traced_seq() -> int:
    from .node import _sequence
    from .warn import user_stack
    n = next(_sequence)
    TRACES[n] = user_stack()
    return n


def is_anomaly_enabled() -> bool:
    return ANOMALY.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return ANOMALY.check_nan


class detect_anomaly:
    """``torch.autograd.detect_anomaly``: inside, a backward node whose output has a NaN fails
    (with ``check_nan``), and a failing node's forward stack is given as a warning."""

    __slots__ = ("_prev", "check_nan")

    def __init__(self, check_nan: bool = True):
        from .warn import ANOMALY_ENABLED, warn
        self.check_nan = check_nan
        warn(ANOMALY_ENABLED)

    def __enter__(self):
        self._prev = (ANOMALY.enabled, ANOMALY.check_nan)
        ANOMALY.enabled, ANOMALY.check_nan = True, self.check_nan

    def __exit__(self, *exc):
        ANOMALY.enabled, ANOMALY.check_nan = self._prev
        return False


class set_detect_anomaly:
    """``torch.autograd.set_detect_anomaly(mode, check_nan=True)``: sets the mode when called; as a
    context manager, the previous one comes back at the end of the block."""

    __slots__ = ("_prev",)

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = (ANOMALY.enabled, ANOMALY.check_nan)
        ANOMALY.enabled, ANOMALY.check_nan = bool(mode), bool(check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        ANOMALY.enabled, ANOMALY.check_nan = self._prev
        return False


def _apply_anomalous(node, g, F, create_graph):
    """``node.apply`` in anomaly mode: the NaN check, and torch's warning naming the failing node
    with the stack that created it."""
    try:
        grads = node.apply(g, F, create_graph)
        if ANOMALY.check_nan:
            _check_nan(node, grads)
    except Exception:
        from .warn import warn
        trace = TRACES.get(node._seq)
        warn(f"Error detected in {node.name()}. No forward pass information available. Enable detect anomaly "
             f"during forward pass for more information." if trace is None else
             f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{trace}")
        raise
    return grads


def _check_nan(node, grads) -> None:
    for i, g in enumerate(grads):
        if g is None:
            continue
        data = g._data if isinstance(g, Tensor) else g
        xp = g._backend.xp if isinstance(g, Tensor) else _backend_of_array(g).xp
        if bool(xp.any(xp.isnan(data))):
            # torch's wording, "0th" included
            raise AutogradError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """``torch.autograd.backward``: accumulate gradients of ``tensors`` into the leaves' ``.grad``."""
    tensors = _as_list(tensors)
    roots = _roots(tensors, grad_tensors, create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    targets = None
    if inputs is not None:
        inputs = _as_list(inputs) if isinstance(inputs, (Tensor, list, tuple)) else [inputs]
        if not inputs:
            raise RuntimeTypeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:
            if not isinstance(t, Tensor):
                raise GradTypeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")
        targets = [_input_node(t) for t in inputs]
        for t in inputs:  # a non-leaf input's gradient goes into its .grad: torch makes it retain grad
            if t.grad_fn is not None:
                t.retain_grad()
    if create_graph:
        from .warn import CREATE_GRAPH_CYCLE, warn
        warn(CREATE_GRAPH_CYCLE)
    _execute(roots, bool(retain_graph), bool(create_graph), targets, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """``torch.autograd.grad``: the gradients of ``outputs`` with respect to ``inputs``, as a tuple."""
    if materialize_grads and allow_unused is False:
        raise ArgumentValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                                 "but got: allow_unused=False.")
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    if not inputs:
        raise RuntimeTypeError("`inputs` argument to `grad()` cannot be empty.")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t._requires_grad:
            raise AutogradError("One of the differentiated Tensors does not require grad")
    roots = _roots(outputs, grad_outputs, create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    targets = [_input_node(t) for t in inputs]
    captured = _execute(roots, bool(retain_graph), bool(create_graph), targets, accumulate=False)
    result = []
    for index, t in enumerate(inputs):
        g = _captured(captured, t)
        if g is None:
            if materialize_grads:
                zeros = Tensor._make(t._backend.xp.zeros_like(t._data), t._backend)
                result.append(zeros.requires_grad_() if create_graph else zeros)  # torch's zeros_like(..., requires_grad=create_graph)
                continue
            if not allow_unused:
                raise AutogradError(_UNUSED.format(index))
            result.append(None)
        else:
            result.append(g if isinstance(g, Tensor) else Tensor._make(g, t._backend))
    return tuple(result)


# -- roots and targets --------------------------------------------------------------------

def _as_list(x):
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _input_node(t: Tensor):
    return t.grad_fn if t.grad_fn is not None else t._accumulator()


def _captured(captured, t: Tensor):
    """The gradient captured for input ``t``: its slot when its grad_fn has several outputs."""
    g = captured.get(_input_node(t))
    if g is not None and g.__class__ is list:
        return g[t.output_nr]
    return g


def _slots(node):
    """A fresh input buffer for a multi-output node: one gradient slot per output."""
    return [None] * node._nout


def _add_slot(buffers, child, nr, g) -> None:
    slots = buffers.get(child)
    if slots is None:
        slots = buffers[child] = _slots(child)
    slots[nr] = g if slots[nr] is None else slots[nr] + g


def _slot_hooks(node, slots, create_graph: bool):
    """Tensor hooks and retain_grad of a multi-output node's outputs, each on its own slot."""
    hooks = node._pre_hooks
    retain = node._retain
    for nr, g in enumerate(slots):
        if g is None:
            continue
        if hooks and hooks.get(nr):
            slots[nr] = g = _run_hooks(hooks[nr], g, create_graph)
        if retain and nr in retain:
            _retain(retain[nr], g, create_graph)
    return slots


def _first_grad(g):
    """A gradient of the buffer ``g`` (a multi-output node's slots: the first that is set)."""
    if g.__class__ is list:
        return next(x for x in g if x is not None)
    return g


def _roots(tensors, grad_tensors, create_graph):
    """``(node, gradient, output_nr)`` per output. A seed given as a tensor of the output's shape,
    dtype and device (``backward(outs, ones)``) is used as it is, and one seed object repeated for
    many outputs (``[ones] * n``) is checked once per shape and dtype."""
    if grad_tensors is not None and not isinstance(grad_tensors, (list, tuple)):
        grad_tensors = [grad_tensors]
    if grad_tensors is not None and len(grad_tensors) != len(tensors):
        raise GradTypeError(f"grad_tensors has {len(grad_tensors)} entries but there are "
                            f"{len(tensors)} tensors")
    roots = []
    push = roots.append
    seed = seed_data = seed_shape = seed_dtype = seed_backend = None  # the last seed used as it is
    for i, t in enumerate(tensors):
        if t.__class__ is not Tensor and not isinstance(t, Tensor):
            raise GradTypeError(f"element {i} of tensors is not a Tensor")
        node = ((t._fn if t._view is None else t.grad_fn) or t._accumulator()) if t._requires_grad else None
        if node is None:  # a view made under no_grad requires grad but has no gradient edge
            raise AutogradError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        info = t._view  # t.output_nr, inlined
        nr = 0 if info is None else getattr(info, "output_nr", 0)
        g = None if grad_tensors is None else grad_tensors[i]
        if g is seed and not create_graph:  # the seed of the previous output again (``[ones] * n``)
            data = t._data
            if data.dtype is seed_dtype and data.shape == seed_shape and t._backend is seed_backend:
                push((node, seed_data, nr))
                continue
        if g.__class__ is Tensor and not create_graph:  # the usual seed (``backward(outs, ones)``), inlined
            data = t._data
            gd = g._data
            if gd.shape == data.shape and g._backend is t._backend and gd.dtype == data.dtype:
                seed, seed_data, seed_shape, seed_dtype, seed_backend = g, gd, gd.shape, data.dtype, t._backend
                push((node, gd, nr))
                continue
        push((node, _root_grad(t, g, i, create_graph), nr))
    return roots


def _root_grad(t: Tensor, g, i: int, create_graph: bool):
    backend = t._backend
    if g is None:
        if t._data.size != 1:
            raise AutogradError("grad can be implicitly created only for scalar outputs")
        g = backend.xp.ones_like(t._data)
        return Tensor._make(g, backend) if create_graph else g
    if not isinstance(g, Tensor):
        from .factory import tensor as _tensor
        g = _tensor(g, dtype=t.dtype, device=str(t.device))
    if tuple(g._data.shape) != tuple(t._data.shape):
        raise ShapeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                         f"output[{i}] has a shape of {t.shape}.")
    if g._backend is not backend:
        raise AutogradError(f"grad_output[{i}] is on device {g.device} but output[{i}] is on {t.device}")
    if create_graph:
        return g
    data = g._data
    return data if data.dtype == t._data.dtype else backend.xp.astype(data, t._data.dtype)


# -- the walk -------------------------------------------------------------------------------

def _dependencies(nodes):
    """Edge counts into every node reachable from ``nodes`` (the roots' nodes, each once), and
    whether some node has three or more AccumulateGrad children (what makes the ready queue's
    ties between leaves depend on its layout: see ``_execute``)."""
    deps = dict.fromkeys(nodes, 0)
    stack = list(nodes)
    get = deps.get
    push = stack.append
    pop = stack.pop
    crowded = False
    while stack:
        node = pop()
        k = node._k
        if k == 1:  # one input (unary ops, views, reductions): inlined
            child = node._n0
            if child is not None:
                count = get(child)
                if count is None:
                    deps[child] = 1
                    push(child)
                else:
                    deps[child] = count + 1
            continue
        if k == 2:  # two inputs (binary ops): the lines above once per input, unrolled on purpose (no tuple, no loop)
            child = node._n0
            if child is not None:
                count = get(child)
                if count is None:
                    deps[child] = 1
                    push(child)
                else:
                    deps[child] = count + 1
            child = node._n1
            if child is not None:
                count = get(child)
                if count is None:
                    deps[child] = 1
                    push(child)
                else:
                    deps[child] = count + 1
            continue
        if not k:
            continue
        children = node._children()
        if sum(child.__class__ is AccumulateGrad for child in children) > 2:
            crowded = True
        for child in children:
            if child is not None:
                count = get(child)
                if count is None:
                    deps[child] = 1
                    push(child)
                else:
                    deps[child] = count + 1
    return deps, crowded


def _needed(targets, deps):
    """Nodes from which some target is reachable: the only ones autograd.grad runs."""
    parents = {}
    for node in deps:
        for child in node._children():
            if child is not None:
                parents.setdefault(child, []).append(node)
    needed = set()
    stack = [t for t in targets if t is not None]
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        stack.extend(parents.get(node, ()))
    return needed


def _execute(roots, retain_graph: bool, create_graph: bool, targets, accumulate: bool):
    """Run the graph's backward from ``roots`` (``(node, gradient, output_nr)`` triples).

    Ready nodes run in torch's order: highest sequence number first, AccumulateGrad
    before anything else (ties between them resolved by the same binary-heap
    algorithm as torch's ``std::priority_queue``). A node that is the only one
    ready goes next without passing through the heap (a chain never touches it).

    An ordinary ``backward()`` (no ``inputs``, no create_graph, no anomaly mode, no hooks on
    grad_fn objects) takes ``_walk_plain``; everything else ``_walk_general``.

    The cyclic GC is paused for the walk: backward allocates many short-lived
    objects but creates no cyclic garbage of its own (the graph is acyclic and
    freed by reference counting), so collections here would traverse the whole
    graph for nothing. It is re-enabled (if it was) when the walk ends, however it ends.
    """
    buffers = {}
    firsts = []  # the roots' nodes, each once, in the order they first appear
    repeated = False
    bget = buffers.get
    for node, g, nr in roots:
        prev = bget(node)
        if prev is None:
            firsts.append(node)
        else:
            repeated = True
        if node.multi_output:
            _add_slot(buffers, node, nr, g)
        else:
            buffers[node] = g if prev is None else prev + g
    deps, crowded = _dependencies(firsts)
    needed = None
    target_set = None
    if targets is not None:
        target_set = set(targets)
        needed = _needed(target_set, deps)
        # Recount dependencies inside the needed subgraph only.
        deps = {n: 0 for n in deps if n in needed}
        for n in deps:
            for child in n._children():
                if child is not None and child in deps:
                    deps[child] += 1

    # the roots no edge leads into
    ready = [n for n in firsts if not deps[n]] if needed is None else \
        [n for n in firsts if n in needed and not deps[n]]
    if repeated:  # torch's GraphRoot makes a root ready at its last edge: that order, for ties
        last = {root[0]: i for i, root in enumerate(roots)}
        ready.sort(key=last.__getitem__)

    backend = roots[0][0].variable._backend if isinstance(roots[0][0], AccumulateGrad) else None
    plain = target_set is None and not create_graph and not ANOMALY.enabled and not _HOOKED_ANY
    # The plain walk pops the ready roots off the end of a sorted list: the heap's order when their
    # sequence numbers differ (at most one AccumulateGrad), without a push and a pop per root.
    stack = sorted(ready, key=_SEQ) if plain and not crowded else []
    if len(stack) > 1 and stack[-2]._seq == _ACC_SEQ:  # two leaves among the roots: a tie
        stack = []
    heap = []
    if not stack:
        for node in ready:
            heappush(heap, (-node._seq, node))
    prev_mode = _GRAD.enabled
    _GRAD.enabled = create_graph
    _GRAD.formula = False  # True only around a formula under create_graph
    gc_was_enabled = _gc.isenabled()
    if gc_was_enabled:
        _gc.disable()
    try:
        if plain:
            return _walk_plain(stack, heap, buffers, deps, retain_graph, accumulate) or {}
        return _walk_general(heap, buffers, deps, retain_graph, create_graph, target_set, needed, accumulate,
                             backend)
    finally:
        _GRAD.enabled = prev_mode
        _GRAD.formula = False
        if gc_was_enabled:
            _gc.enable()


_SEQ = attrgetter("_seq")
_ACC_SEQ = 1 << 62  # AccumulateGrad's sequence number (node.AccumulateGrad)


def _tensor_hooks(node, g, create_graph: bool):
    """The hooks and retain_grad of the tensor(s) whose gradient ``g`` is, before ``node`` runs."""
    if node.multi_output:
        return g if node._pre_hooks is None and node._retain is None else _slot_hooks(node, g, create_graph)
    if node._pre_hooks:
        g = _run_hooks(node._pre_hooks, g, create_graph)
    if node._retain is not None:
        _retain(node._retain, g, create_graph)
    return g


def _walk_plain(stack, heap, buffers, deps, retain_graph: bool, accumulate: bool):
    """The walk of an ordinary ``backward()``, in the same order as ``_walk_general`` but with
    none of its per-node checks for targets, create_graph, anomaly mode or hooks: at the first node
    with a tensor hook (or a leaf's, or a post-accumulate hook) the general walk takes over.

    ``stack``: the nodes ready at the start, by sequence number, the next one last (a fan-out of
    many outputs: each pops off the end); ``heap``: the nodes made ready on the way. A node made
    ready by a node of one or two inputs waits in ``nxt`` (of two, the one ahead; the other goes
    to the heap) and runs next unless a top is ahead of it: a chain, or an add whose newer operand
    runs first and then its leaf, never touches the heap. Sequence numbers differ but for
    AccumulateGrads (at most one starts in ``stack``, and it runs first; one made ready runs right
    after the node that readied it, with at most one sibling -- the first of two stays first), so
    the merged order is the one priority queue's; between the AccumulateGrads a node of three or
    more inputs makes ready the heap gives the same order whatever else it holds while there are at
    most two (more: ``crowded``, a heap of everything from the start).
    """
    several = _SEVERAL[0]  # a graph may span devices: each node's math from its gradient's backend
    math_for = _FORMULA_MATH[0]
    F = None
    pop = buffers.pop
    bget = buffers.get
    spop = stack.pop
    deadline = _DEADLINE
    nxt = None
    node = spop() if stack else heappop(heap)[1] if heap else None
    while True:  # (a loop that ends in a plain jump back: CPython 3.11 readies a function's specialised
        # instructions after 8 calls or at such a jump, and ``while node is not None`` ends in a
        # conditional one, so that one backward of a long chain of one-input nodes ran unspecialised)
        if node is None:
            break
        if deadline.expired:  # --timeout: a swallowed alarm is raised again here
            _poll()
        k = node._k
        if node._pre_hooks or (node._retain is not None and node.multi_output) or not k and (
                node.__class__ is AccumulateGrad and (_POST_ACCUMULATE or node.variable is not None and
                                                      node.variable._hooks)):
            # A hook (user code) runs here; one may register a grad_fn hook, which the general
            # walk honours from then on: it takes over, with this node and everything ready.
            for ready in stack:
                heappush(heap, (-ready._seq, ready))
            return _walk_general(heap, buffers, deps, retain_graph, False, None, None, accumulate, None, node)
        g = pop(node, None)
        if g is None:
            grads = None
        elif not k:
            grads = None
            if node.__class__ is AccumulateGrad and accumulate:
                _accumulate(node.variable, g, False)
            g = None
        else:
            if node._retain is not None:  # retain_grad (no user code)
                _retain(node._retain, g, False)
            if F is None or several:
                F = math_for(False, _array_backend(_first_grad(g)))
            grads = node.apply(g, F, False)
            g = None
            if not retain_graph and node._live:  # free saved values (Node._release, inlined)
                node._live = False
                node._s0 = node._s1 = node._sx = node._sr = None
        if k == 1:  # one input (most nodes): the loop below, unrolled on purpose (~0.3 us a node)
            child = node._n0
            if child is not None:
                if grads is not None:
                    cg = grads[0]
                    grads = None
                    if cg is not None:
                        if child.multi_output:  # into the slot the edge names
                            nrs = _EDGE_NRS.get(node)
                            _add_slot(buffers, child, 0 if nrs is None else nrs[0], cg)
                        else:
                            prev = bget(child)
                            if prev is None:
                                buffers[child] = cg
                            elif prev.__class__ is _ndarray and _getrefcount(prev) == _OWNED \
                                    and prev.base is None and prev.shape == cg.shape and prev.dtype == cg.dtype:
                                prev += cg  # only this walk holds ``prev``: add in place
                            else:
                                buffers[child] = prev + cg
                            prev = None
                        cg = None
                count = deps[child] - 1
                deps[child] = count
                if not count:
                    nxt = child  # (whether it runs next: below)
        elif k:
            children = (node._n0, node._n1) if k == 2 else node._children()
            for i in range(k):
                child = children[i]
                if child is None:
                    continue
                if grads is not None:
                    cg = grads[i]
                    if cg is not None:
                        if child.multi_output:
                            nrs = _EDGE_NRS.get(node)
                            _add_slot(buffers, child, 0 if nrs is None else nrs[i], cg)
                        else:
                            prev = bget(child)
                            if prev is None:
                                buffers[child] = cg
                            elif prev.__class__ is _ndarray and _getrefcount(prev) == _OWNED \
                                    and prev.base is None and prev.shape == cg.shape and prev.dtype == cg.dtype:
                                prev += cg
                            else:
                                buffers[child] = prev + cg
                            prev = None
                        cg = None
                count = deps[child] - 1
                deps[child] = count
                if not count:
                    if k == 2:  # the first of the two (or the later one, if it is ahead) waits in nxt
                        if nxt is None:
                            nxt = child
                        elif child._seq > nxt._seq:
                            heappush(heap, (-nxt._seq, nxt))
                            nxt = child
                        else:  # (two leaves: a tie, the first one stays first)
                            heappush(heap, (-child._seq, child))
                    elif nxt is None and not heap and (not stack or child._seq > stack[-1]._seq):
                        nxt = child
                    else:
                        if nxt is not None:
                            heappush(heap, (-nxt._seq, nxt))
                            nxt = None
                        heappush(heap, (-child._seq, child))
            grads = children = None
        if nxt is not None:
            seq = nxt._seq
            if heap and -heap[0][0] > seq or stack and stack[-1]._seq > seq:  # something ready is ahead
                heappush(heap, (-seq, nxt))
                node = spop() if stack and stack[-1]._seq > -heap[0][0] else heappop(heap)[1]
            else:
                node = nxt
            nxt = None
        elif heap:
            node = spop() if stack and stack[-1]._seq > -heap[0][0] else heappop(heap)[1]
        elif stack:
            node = spop()
        else:
            node = None


def _walk_general(ready, buffers, deps, retain_graph: bool, create_graph: bool, target_set, needed,
                  accumulate: bool, backend, node=None):
    """Every other walk: ``autograd.grad`` and ``inputs=`` (targets), create_graph, anomaly mode,
    hooks (and what remains of a plain walk once one is met: ``node`` goes first). ``ready``: a
    heap of the nodes ready at the start. Returns the gradients captured for the targets."""
    captured = {}
    math_for = _FORMULA_MATH[0]
    F = None
    several = _SEVERAL[0]  # a graph may span devices: each node's math from its gradient's backend
    anomaly = ANOMALY.enabled
    in_place = not create_graph
    pop = buffers.pop
    bget = buffers.get
    if node is None:
        node = heappop(ready)[1] if ready else None
    nxt = None
    while node is not None:
        if _DEADLINE.expired:  # --timeout: a swallowed alarm is raised again here
            _poll()
        g = pop(node, None)
        if g is not None and (node.multi_output or node._pre_hooks or node._retain is not None):
            g = _tensor_hooks(node, g, create_graph)
        k = node._k
        hooked = _HOOKED_ANY and node in _NODE_HOOKS  # grad_fn.register_hook/register_prehook
        if hooked and k and g is not None:
            g = run_prehooks(node, g, _array_backend(_first_grad(g)), create_graph)
        if not k:
            if node.__class__ is AccumulateGrad and g is not None:
                leaf = node.variable
                if leaf is not None and leaf._hooks:  # a leaf's hooks run before capture too
                    g = _run_hooks(leaf._hooks, g, create_graph)
                if hooked:
                    g = run_prehooks(node, g, _array_backend(g), create_graph)
                if target_set is not None and node in target_set:
                    captured[node] = g
                if accumulate:
                    _accumulate(leaf, g, create_graph)
                    if _POST_ACCUMULATE:
                        run_post_accumulate(leaf)
                if hooked:
                    run_posthooks(node, (), g, _array_backend(g), create_graph)
        else:
            if target_set is not None and g is not None and node in target_set:
                captured[node] = g
            if g is None:
                grads = None
            else:
                if F is None or several:
                    F = math_for(create_graph, _backend_of(node, _first_grad(g), backend))
                if create_graph:  # torch's Scalar overloads inside formulas (False otherwise)
                    _GRAD.formula = True
                held = g if hooked else None  # posthooks read g: held, no formula may reuse it (node.py)
                grads = node.apply(g, F, create_graph) if not anomaly else \
                    _apply_anomalous(node, g, F, create_graph)
                held = None
                if create_graph:
                    _GRAD.formula = False
                if hooked:
                    grads = run_posthooks(node, grads, g, _array_backend(_first_grad(g)), create_graph)
                g = None
                if not retain_graph and node._live:  # free saved values (Node._release, inlined)
                    node._live = False
                    node._s0 = node._s1 = node._sx = node._sr = None
            for i in range(k):
                child = node._n0 if i == 0 else node._n1 if i == 1 else node._nx[i - 2]
                if child is None or (needed is not None and child not in needed):
                    continue
                if grads is not None:
                    cg = grads[i]
                    if cg is not None and child.multi_output:  # into the slot the edge names
                        nrs = _EDGE_NRS.get(node)
                        _add_slot(buffers, child, 0 if nrs is None else nrs[i], cg)
                        cg = None
                    if cg is not None:
                        prev = bget(child)
                        if prev is None:
                            buffers[child] = cg
                        elif in_place and prev.__class__ is _ndarray and _getrefcount(prev) == _OWNED \
                                and prev.base is None and prev.shape == cg.shape and prev.dtype == cg.dtype:
                            prev += cg  # only this walk holds ``prev``: add in place
                        else:
                            buffers[child] = prev + cg
                        prev = cg = None
                count = deps[child] - 1
                deps[child] = count
                if not count:
                    if nxt is None and not ready:
                        nxt = child
                    else:
                        if nxt is not None:
                            heappush(ready, (-nxt._seq, nxt))
                            nxt = None
                        heappush(ready, (-child._seq, child))
            grads = None
        if nxt is not None:
            node = nxt
            nxt = None
        elif ready:
            node = heappop(ready)[1]
        else:
            node = None
    return captured


_ndarray = type(NUMPY.xp.empty(0))
_HOOKED_ANY = _NODE_HOOKS.data  # the weak table's dict: an emptiness test in C, per node
_getrefcount = _sys.getrefcount
_OWNED = 3  # references to a gradient buffer only the walk holds: the dict, ``prev``, getrefcount's argument


def _backend_of(node, g, fallback):
    backend = getattr(g, "_backend", None)
    if backend is not None:
        return backend
    return _backend_of_array(g)


def _as_tensor(g, create_graph: bool, backend=None):
    if create_graph:
        return g
    from ..backend import NUMPY
    return Tensor._make(g, backend or NUMPY)


def _run_hooks(hooks, g, create_graph: bool):
    backend = _array_backend(g)
    for hook in list(hooks.values()):
        t = g if create_graph else Tensor._make(g, backend)
        out = hook(t)
        if out is None:
            continue
        if not isinstance(out, Tensor):
            raise GradTypeError(f"expected Variable, but hook returned '{type(out).__name__}'")
        name = getattr(hook, "__name__", "<lambda>")  # the language's lambdas print as Python's do
        if tuple(out.shape) != tuple(t.shape):
            raise ShapeError(f"hook '{name}' has changed the size of value")
        if out.dtype.name != t.dtype.name:
            raise GradTypeError(f"hook '{name}' has changed the type of value (was {_type_name(t)} got "
                                f"{_type_name(out)})")
        g = out if create_graph else out._data
    return g


def _type_name(t: Tensor) -> str:
    """torch's legacy type name, as its hook messages print it: torch.FloatTensor, torch.cuda.DoubleTensor."""
    kind = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "bool": "Bool"}.get(t.dtype.name, "")
    return f"torch.{'cuda.' if t.is_cuda else ''}{kind}Tensor"


def _array_backend(g):
    backend = getattr(g, "_backend", None)
    if backend is not None:
        return backend
    return _backend_of_array(g)


def _retain(ref, g, create_graph: bool) -> None:
    t = ref()
    if t is None:
        return
    new = g if create_graph else Tensor._make(t._backend.xp.asarray(g, copy=True), t._backend)
    if t._grad is None:
        t._grad = new if not create_graph else g
    else:
        t._grad = t._grad + new


def _accumulate(leaf: Tensor, g, create_graph: bool) -> None:
    """Add ``g`` (already through the leaf's hooks) into ``leaf.grad``."""
    if create_graph:  # grad mode is on: torch copies the first gradient, then adds out of place
        leaf._grad = _copy_graph(g) if leaf._grad is None else leaf._grad + g
        return
    if g.shape != leaf._data.shape:  # defensive: formulas return input-shaped gradients
        raise ShapeError(f"gradient of shape {tuple(g.shape)} for a leaf of shape {tuple(leaf.shape)}")
    current = leaf._grad
    if current is None:
        # Steal a gradient array that nothing but this walk references (torch does the same):
        # references are the walk's ``g``, this function's ``g`` and getrefcount's argument.
        if g.__class__ is _ndarray and _getrefcount(g) == _OWNED and g.base is None \
                and g.dtype == leaf._data.dtype and g.flags.writeable:
            leaf._grad = Tensor._make(g, leaf._backend)
        else:
            leaf._grad = Tensor._make(_copy(g, leaf), leaf._backend)
    elif current._data.shape == g.shape and getattr(getattr(current._data, "flags", None), "writeable", True):
        # in place, as torch (grad mode is off here): the .grad object a user holds sees the sum,
        # even one with a grad_fn of its own from an earlier create_graph=True backward
        current._data += g
        current._bump()
    else:
        leaf._grad = current + Tensor._make(g, leaf._backend)


def _copy_graph(g: Tensor) -> Tensor:
    """torch's first ``.grad`` under create_graph: a copy, recorded as CopyBackwards when ``g`` has a graph."""
    xp = g._backend.xp
    if not g._requires_grad:
        return Tensor._make(xp.asarray(g._data, copy=True), g._backend)
    from .function import apply
    from .node import NODE_CLASSES
    return apply(NODE_CLASSES["CopyBackwards"], (Tensor._make(xp.empty_like(g._data), g._backend), g))


def _copy(g, leaf):
    xp = leaf._backend.xp
    out = xp.asarray(g, dtype=leaf._data.dtype, copy=True)
    return out
