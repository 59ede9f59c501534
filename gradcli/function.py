"""Recording operations, and the table of user-facing functions.

``apply(NodeClass, inputs, attrs)`` runs the node's forward on the inputs' arrays
and, when grad mode is on and an input requires grad, records a node whose
``next_functions`` point at the inputs' ``grad_fn`` (or ``AccumulateGrad``).

``@function(...)`` registers a user-facing function (``mul``, ``sum``...): its
free and method forms, signature, help text and the grad_fn names it creates.
That registry is the one list the interpreter's whitelist, ``Tensor`` methods
and ``gradcli ops`` read.
"""

from __future__ import annotations

from .errors import DeviceError, GradTypeError
from .grad_mode import STATE as _GRAD
from .node import new_node
from .tensor import Tensor

_NO_EDGE = (None, 0)


def apply(cls, inputs, attrs=(), arrays=None):
    """Run ``cls.forward`` and record a ``cls`` node when a gradient must flow."""
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
                raise DeviceError(
                    f"Expected all tensors to be on the same device, but found at least two devices, "
                    f"{b.name} and {backend.name}!")
            if own_arrays:
                arrays.append(x._data)
            if x._requires_grad:
                needs_grad = True
        elif own_arrays:
            arrays.append(x)
    data = cls.forward(backend.xp, *arrays, *attrs)
    if needs_grad and _GRAD.enabled:
        edges = tuple(
            ((x.grad_fn or x._accumulator()), 0) if x.__class__ is Tensor and x._requires_grad else _NO_EDGE
            for x in inputs)
        shapes = tuple(getattr(a, "shape", ()) for a in arrays) if cls.save_sizes else None
        return Tensor._make(data, backend, new_node(cls, inputs, data, attrs, shapes, edges))
    return Tensor._make(data, backend)


def backend_of(*xs):
    for x in xs:
        if x.__class__ is Tensor:
            return x._backend
    from .backend import NUMPY
    return NUMPY


# -- the function table ------------------------------------------------------------------

class FunctionInfo:
    """One user-facing function: what ``gradcli ops`` prints and the interpreter allows."""

    __slots__ = ("name", "fn", "method", "signature", "grad_fns", "doc", "differentiable", "category")

    def __init__(self, name, fn, method, signature, grad_fns, doc, differentiable, category):
        self.name = name
        self.fn = fn
        self.method = method
        self.signature = signature
        self.grad_fns = grad_fns
        self.doc = doc
        self.differentiable = differentiable
        self.category = category

    @property
    def arity(self) -> int:
        """Number of tensor arguments (the leading positional ones)."""
        params = self.signature.split("(", 1)[1].rstrip(")")
        count = 0
        for p in params.split(","):
            p = p.strip()
            if not p or "=" in p or p.startswith("*") and p != "*tensors":
                break
            count += 1
        return count


FUNCTIONS: dict[str, FunctionInfo] = {}


def function(signature: str, *, method: bool | str = True, grad_fns=(), differentiable: bool = True,
             category: str = "math", name: str | None = None):
    """Register a user-facing function. ``method=True`` also makes it a Tensor method of the same name."""
    def register(fn):
        fname = name or signature.split("(", 1)[0]
        doc = (fn.__doc__ or "").strip().split("\n")[0]
        FUNCTIONS[fname] = FunctionInfo(fname, fn, method, signature, tuple(grad_fns), doc,
                                        differentiable, category)
        if method:
            attr = fname if method is True else method
            setattr(Tensor, attr, fn)
        return fn
    return register


def as_tensor_arg(x, like: Tensor | None = None, what: str = "argument") -> Tensor:
    """Accept a Tensor, or a Python number/list, for an argument that must be a tensor."""
    if x.__class__ is Tensor:
        return x
    if isinstance(x, (bool, int, float, list, tuple)):
        from .creation import tensor
        device = str(like.device) if like is not None else None
        return tensor(x, device=device)
    raise GradTypeError(f"{what} must be a Tensor or a number, not {type(x).__name__}")
