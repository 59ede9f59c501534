"""The op registry: every user-facing function, the one list everything else reads.

``@function(...)`` registers a user-facing function (``mul``, ``sum``...): its
free and method forms, signature, help text and the grad_fn names it creates.
The interpreter's whitelist, ``Tensor`` methods and ``gradcli ops`` read it.
"""

from __future__ import annotations

from ..autograd.factory import tensor
from ..autograd.tensor import Tensor
from ..errors import GradTypeError


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
        device = str(like.device) if like is not None else None
        return tensor(x, device=device)
    raise GradTypeError(f"{what} must be a Tensor or a number, not {type(x).__name__}")
