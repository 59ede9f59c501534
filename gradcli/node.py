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
import re

from .errors import AutogradError

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
          "after they have already been freed). Saved intermediate values of the graph are freed "
          "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
          "backward through the graph a second time or if you need to access saved tensors after "
          "calling backward.")

_sequence = itertools.count()


class Node:
    """A backward function: takes the gradient of its output, returns one per input.

    ``next_functions`` holds, per input, ``(node, 0)`` for an input that needs a
    gradient and ``(None, 0)`` otherwise, exactly as PyTorch shows it.
    """

    __slots__ = ("next_functions", "_saved", "_attrs", "_versions", "_pre_hooks", "_retain",
                 "_shapes", "_seq", "_shape", "__weakref__")

    # Filled in per class by define_node:
    formulas: tuple = ()        # per input: compiled formula, or None where none flows
    derivatives: tuple = ()     # per input: (input name, formula text)
    input_names: tuple = ()
    attr_names: tuple = ()
    save_inputs: tuple = ()     # per input: does any formula read it?
    save_result: bool = False
    save_sizes: bool = False
    broadcasts: bool = False    # elementwise op whose gradients must be summed back to input shapes

    def name(self) -> str:
        return type(self).__name__

    def name_for_repr(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name_for_repr()}>"

    # -- saved values ----------------------------------------------------------------
    def _unpack(self, differentiable: bool):
        """The arguments after ``grad`` for this node's formulas: inputs, result, sizes, attrs."""
        saved = self._saved
        if saved is None:
            raise AutogradError(_FREED)
        inputs, result = saved
        versions = self._versions
        args = []
        for i, value in enumerate(inputs):
            if versions is not None and versions[i] is not None and value._version[0] != versions[i]:
                raise AutogradError(_version_message(value, self, versions[i]))
            if differentiable or value is None or not hasattr(value, "_data"):
                args.append(value)
            else:
                args.append(value._data)
        if result is not None and differentiable:
            from .tensor import Tensor
            result = Tensor._make(result, self._result_backend(), self)
        args.append(result)
        shapes = self._shapes
        if shapes is None:
            args.extend(None for _ in self.input_names)
        else:
            args.extend(shapes)
        args.extend(self._attrs)
        return args

    def _result_backend(self):
        for value in self._saved[0]:
            backend = getattr(value, "_backend", None)
            if backend is not None:
                return backend
        from .backend import NUMPY
        return NUMPY

    def _release(self) -> None:
        """Free saved values after a backward without ``retain_graph``."""
        if self._saved is not None and self._saved is not _NOTHING:
            self._saved = None

    def apply(self, grad, F, differentiable: bool):
        """Gradients for each input (None where no gradient flows)."""
        args = self._unpack(differentiable) if self._saved is not _NOTHING else _nothing_args(self)
        grads = []
        for formula, (fn, _) in zip(self.formulas, self.next_functions):
            if fn is None or formula is None:
                grads.append(None)
            else:
                grads.append(formula(F, grad, *args))
        if self.broadcasts and self._shapes is not None:
            for i, g in enumerate(grads):
                if g is not None and tuple(g.shape) != self._shapes[i]:
                    grads[i] = F.sum_to(g, self._shapes[i])
        return grads


_NOTHING = ((), None)


def _nothing_args(node: Node):
    shapes = node._shapes
    return [*(None for _ in node.input_names), None,
            *(shapes if shapes is not None else (None for _ in node.input_names)), *node._attrs]


def _version_message(value, node: Node, expected: int) -> str:
    shape = "[" + ", ".join(str(s) for s in value._data.shape) + "]"
    kind = {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor"}.get(
        value.dtype.name, "Tensor")
    # torch names the op without its "Backward0" suffix, and says nothing more for a leaf
    which = "" if value.grad_fn is None else \
        f", which is output 0 of {re.sub(r'Backward[0-9]*$', '', value.grad_fn.name())},"
    return (f"one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [torch.{kind} {shape}]{which} is at version "
            f"{value._version[0]}; expected version {expected} instead.")


class AccumulateGrad(Node):
    """The sink for a leaf that requires grad: adds incoming gradients into ``leaf.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()
        self._saved = _NOTHING
        self._attrs = ()
        self._versions = None
        self._pre_hooks = None
        self._retain = None
        self._shapes = None
        self._seq = -1

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def name_for_repr(self) -> str:
        return "AccumulateGrad"


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

NODE_CLASSES: dict[str, type] = {}


def define_node(name: str, *, inputs=("self",), attrs=(), broadcasts: bool = False,
                forward=None, doc: str = "", **derivatives: str) -> type:
    """Create the node class ``name`` with one derivative formula per input.

    ``derivatives`` maps input names to formula text; an input without a formula
    (or with ``"non_differentiable"``) receives no gradient.
    """
    params = ["F", "grad", *inputs, "result", *(f"{i}_sizes" for i in inputs), *attrs]
    compiled, texts, used, uses = [], [], set(), []
    for inp in inputs:
        text = derivatives.pop(inp, None)
        if text is None or text == "non_differentiable":
            compiled.append(None)
            texts.append((inp, "non_differentiable"))
            uses.append(frozenset())
            continue
        code = compile(text, f"<{name}.{inp}>", "eval")
        used.update(code.co_names)
        uses.append(frozenset(code.co_names))
        # Formulas are static text from this package's op table, never user input.
        compiled.append(eval(f"lambda {', '.join(params)}: ({text})", _FORMULA_GLOBALS))  # noqa: S307
        texts.append((inp, text))
    if derivatives:
        raise TypeError(f"{name}: formulas for unknown inputs {sorted(derivatives)}")
    cls = type(name, (Node,), {
        "__slots__": (),
        "__doc__": doc or f"Backward of {name[:-len('Backward0')] or name}.",
        "formulas": tuple(compiled),
        "derivatives": tuple(texts),
        "input_names": tuple(inputs),
        "attr_names": tuple(attrs),
        "save_inputs": tuple(i in used for i in inputs),
        "save_result": "result" in used,
        "save_sizes": broadcasts or any(f"{i}_sizes" in used for i in inputs),
        "broadcasts": broadcasts,
        "_uses": tuple(uses),
        "_plans": {},
    })
    if forward is not None:
        cls.forward = staticmethod(forward)
    NODE_CLASSES[name] = cls
    return cls


_FORMULA_GLOBALS: dict = {"__builtins__": {}}


def formula_helpers(**helpers) -> None:
    """Names (beyond ``F``) that formulas may use, such as ``math``."""
    _FORMULA_GLOBALS.update(helpers)


def _save_plan(cls, edges):
    """Which inputs (and whether the result) to save: only what the formulas of the inputs that
    need a gradient read, as PyTorch does (``x.mul_(2)`` saves nothing of ``x``, so modifying
    ``x`` in place afterwards is fine). Cached per class and pattern of needed inputs."""
    plans = cls.__dict__.get("_plans")
    if plans is None:  # a hand-written node class: its declared saves
        return cls.save_inputs, cls.save_result
    key = tuple(e[0] is not None for e in edges)
    plan = plans.get(key)
    if plan is None:
        needed = set()
        for names, wanted in zip(cls._uses, key):
            if wanted:
                needed |= names
        plan = plans[key] = (tuple(i in needed for i in cls.input_names), "result" in needed)
    return plan


def new_node(cls: type, inputs, out_data, attrs, shapes, edges):
    """Instantiate a node for a recorded op; called by ``ops.apply``."""
    node = object.__new__(cls)
    node.next_functions = edges
    save, save_result = _save_plan(cls, edges)
    saved_inputs = tuple(x if s else None for x, s in zip(inputs, save)) if any(save) else ()
    if saved_inputs:
        node._versions = tuple(getattr(x, "_version", (None,))[0] if x is not None else None
                               for x in saved_inputs)
        node._saved = (saved_inputs, out_data if save_result else None)
    elif save_result:
        node._versions = None
        node._saved = ((None,) * len(inputs), out_data)
    else:
        node._versions = None
        node._saved = _NOTHING
    node._attrs = attrs
    node._pre_hooks = None
    node._retain = None
    node._shapes = shapes
    node._shape = getattr(out_data, "shape", None)  # the output's shape, for `gradcli graph`
    node._seq = next(_sequence)
    return node
