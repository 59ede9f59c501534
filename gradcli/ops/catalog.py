"""``gradcli ops``: every function, read from the op table the engine itself uses.

Each row comes from the op's declaration in :data:`gradcli.ops.registry.FUNCTIONS`: its name,
the signature read from the function itself, the method form, the operator spelling, the node
classes it records and their derivative formula per input, exactly as the engine runs them.
Nothing here is a second list to keep in sync.
"""

from __future__ import annotations

from . import registry


def node_class(name: str):
    """The node class called ``name`` (every node class registers itself in NODE_CLASSES)."""
    from ..autograd.node import NODE_CLASSES
    return NODE_CLASSES.get(name)


def method_form(info) -> str | None:
    """``x.add(other, *, alpha=1)``: the method, with the arguments after the tensor it is called on."""
    if not info.method:
        return None
    name = info.name if info.method is True else info.method
    rest = info.parameters[1:]
    if rest and rest[0] == "*":  # nothing positional is left before the keyword-only ones
        rest = rest[1:]
    return f"x.{name}({', '.join(rest)})"


def nodes_of(info) -> tuple[tuple, str | None]:
    """The node classes a function records, and where they come from when it is not itself
    (an in-place op records the node of its out-of-place form: ``y.add_(1)`` gives AddBackward0)."""
    if info.nodes or info.category != "in-place":
        return info.nodes, None
    outplace = registry.FUNCTIONS.get(info.name.rstrip("_"))
    if outplace is None:
        return (), None
    return outplace.nodes, outplace.name


def rows() -> list[dict]:
    out = []
    for info in registry.FUNCTIONS.values():
        nodes, via = nodes_of(info)
        grad_fns = [cls.__name__ for cls in nodes]
        derivatives = {cls.__name__: dict(cls.derivatives) for cls in nodes}
        out.append({
            "name": info.name, "signature": info.signature, "arguments": info.parameters,
            "method": method_form(info), "operator": info.operator, "arity": info.arity,
            "category": info.category, "differentiable": info.differentiable, "grad_fns": grad_fns,
            "grad_fns_of": via, "derivatives": derivatives, "doc": info.doc,
        })
    return out
