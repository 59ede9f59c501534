"""``gradcli ops``: every function, read from the op table the engine itself uses.

Each row comes from :data:`gradcli.ops.registry.FUNCTIONS` (name, signature, method form, the
grad_fn names it records) joined with the node classes those names denote (the derivative
formula per input, as written in the table). Nothing here is a second list to keep in sync,
except the spelling of the operators that call these functions.
"""

from __future__ import annotations

# How the language's operators reach the op table.
OPERATORS = {"add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b", "matmul": "a @ b",
             "pow": "a ** b", "neg": "-a", "lt": "a < b", "le": "a <= b", "gt": "a > b", "ge": "a >= b",
             "eq": "a == b", "ne": "a != b"}


def node_class(name: str):
    """The node class called ``name`` (every node class registers itself in NODE_CLASSES)."""
    from ..autograd.node import NODE_CLASSES
    return NODE_CLASSES.get(name)


def arguments(signature: str) -> list[str]:
    """The parameters of a signature such as ``add(input, other, *, alpha=1)``."""
    inner = signature.split("(", 1)[1].rsplit(")", 1)[0]
    return [p.strip() for p in inner.split(",") if p.strip()]


def method_form(info) -> str | None:
    """``x.add(other, *, alpha=1)``: the method, with the arguments after the tensor it is called on."""
    if not info.method:
        return None
    name = info.name if info.method is True else info.method
    rest = arguments(info.signature)[1:]
    if rest and rest[0] == "*":  # nothing positional is left before the keyword-only ones
        rest = rest[1:]
    return f"x.{name}({', '.join(rest)})"


def grad_fns_of(info) -> tuple[tuple, str | None]:
    """The grad_fn names a function records, and where they come from when it is not itself
    (an in-place op records the node of its out-of-place form: ``y.add_(1)`` gives AddBackward0)."""
    from .registry import FUNCTIONS
    if info.grad_fns or info.category != "in-place":
        return info.grad_fns, None
    outplace = FUNCTIONS.get(info.name.rstrip("_"))
    if outplace is None:
        return (), None
    return outplace.grad_fns, outplace.name


def rows() -> list[dict]:
    from .registry import FUNCTIONS
    out = []
    for info in FUNCTIONS.values():
        grad_fns, via = grad_fns_of(info)
        derivatives = {}
        for grad_fn in grad_fns:
            cls = node_class(grad_fn)
            derivatives[grad_fn] = {inp: text for inp, text in getattr(cls, "derivatives", ())} if cls else {}
        out.append({
            "name": info.name, "signature": info.signature, "arguments": arguments(info.signature),
            "method": method_form(info), "operator": OPERATORS.get(info.name), "arity": info.arity,
            "category": info.category, "differentiable": info.differentiable, "grad_fns": list(grad_fns),
            "grad_fns_of": via, "derivatives": derivatives, "doc": info.doc,
        })
    return out
