"""``gradcli ops``: every function, read from the op table the engine itself uses.

Each row comes from :data:`gradcli.function.FUNCTIONS` (name, signature, method form, the
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
    """The node class called ``name``: from define_node's registry, else a hand-written subclass."""
    from .node import NODE_CLASSES, Node
    cls = NODE_CLASSES.get(name)
    if cls is not None:
        return cls
    stack = list(Node.__subclasses__())
    while stack:
        c = stack.pop()
        if c.__name__ == name:
            return c
        stack.extend(c.__subclasses__())
    return None


def rows() -> list[dict]:
    from .function import FUNCTIONS
    out = []
    for info in FUNCTIONS.values():
        method = None
        if info.method:
            method = f"x.{info.name if info.method is True else info.method}(...)"
        derivatives = {}
        for grad_fn in info.grad_fns:
            cls = node_class(grad_fn)
            derivatives[grad_fn] = {inp: text for inp, text in getattr(cls, "derivatives", ())} if cls else {}
        out.append({
            "name": info.name, "signature": info.signature, "method": method,
            "operator": OPERATORS.get(info.name), "arity": info.arity, "category": info.category,
            "differentiable": info.differentiable, "grad_fns": list(info.grad_fns),
            "derivatives": derivatives, "doc": info.doc,
        })
    return out


def run_ops(json_output: bool = False) -> int:
    data = rows()
    if json_output:
        import json

        from . import __version__
        print(json.dumps({"version": __version__, "functions": data}, indent=1, ensure_ascii=False))
        return 0
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from .render import _console
    table = Table(box=box.SIMPLE_HEAVY, pad_edge=False, title=f"{len(data)} functions", title_justify="left")
    table.add_column("signature", style="bold", overflow="fold")
    table.add_column("method / operator", overflow="fold")
    table.add_column("grad_fn", style="cyan", overflow="fold")
    table.add_column("derivative", overflow="fold")
    for r in data:
        forms = " ".join(x for x in (r["method"], r["operator"]) if x) or "-"
        if not r["grad_fns"]:
            deriv = Text("not differentiable" if not r["differentiable"] else "(no graph node)", style="dim")
            table.add_row(r["signature"], forms, "-", deriv)
            continue
        for k, (grad_fn, formulas_by_input) in enumerate(r["derivatives"].items()):
            formula = "; ".join(f"{i}: {v}" for i, v in formulas_by_input.items()) or "-"
            table.add_row(r["signature"] if k == 0 else "", forms if k == 0 else "", grad_fn, formula)
    _console().print(table)
    return 0
