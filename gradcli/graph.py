"""``gradcli graph``: the backward graph of the last value, as the seed articles draw it.

Every node is collected once by an iterative walk from the root's ``grad_fn`` along
``next_functions`` (never recursive: chains of 100,000 nodes are fine). Renderings:

- ``tree`` (default): the graph as an indented tree; a node reached a second time (a shared
  sub-graph) is shown as a reference ``(see #3)``, and indentation stops growing past
  ``MAX_INDENT`` levels so that a long chain stays readable instead of drifting off-screen.
- ``dot`` (Graphviz), ``mermaid`` and ``json`` text; ``-o FILE`` writes ``.dot``, or ``.svg``/
  ``.png`` through Graphviz's ``dot`` program where it is installed.

Edges point from a node to the node that consumes its gradient's input, as in
``next_functions``: ``MeanBackward0 -> AddBackward0 -> AccumulateGrad``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from .errors import DeviceError, GradTypeError, UsageError

MAX_INDENT = 24
FORMATS = ("tree", "dot", "mermaid", "json")


class GraphNode:
    __slots__ = ("id", "node", "name", "variable", "shape", "saved", "edges")

    def __init__(self, id, node, name, variable, shape, saved):
        self.id, self.node, self.name, self.variable, self.shape, self.saved = id, node, name, variable, shape, saved
        self.edges: list[tuple[int, int]] = []   # (child id, input index), in next_functions order


def collect(root, names: dict[int, str]) -> list[GraphNode]:
    """All nodes reachable from ``root`` (a grad_fn), numbered in breadth-first order.

    ``names`` maps ``id(tensor)`` of named leaves and ``id(grad_fn)`` of named results to the
    variable name."""
    from .node import AccumulateGrad
    index: dict[int, GraphNode] = {}
    order: list[GraphNode] = []

    def visit(node) -> GraphNode:
        g = index.get(id(node))
        if g is None:
            if isinstance(node, AccumulateGrad):
                var = node.variable
                shape = list(var.shape) if var is not None else None
                variable = names.get(id(var)) if var is not None else None
            else:
                shape = getattr(node, "_shape", None)
                shape = list(shape) if shape is not None else None
                variable = names.get(id(node))
            g = GraphNode(len(order), node, node.name_for_repr(), variable, shape, _saved_shapes(node))
            index[id(node)] = g
            order.append(g)
        return g

    visit(root)
    i = 0
    while i < len(order):  # breadth-first over a growing list: iterative
        g = order[i]
        i += 1
        for k, (child, _) in enumerate(g.node.next_functions):
            if child is not None:
                g.edges.append((visit(child).id, k))
    return order


def _saved_shapes(node):
    """Shapes of the values the node saved for backward: a list, 'freed', or None (nothing)."""
    saved = getattr(node, "_saved", None)
    if saved is None:
        return "freed" if (any(getattr(node, "save_inputs", ())) or getattr(node, "save_result", False)) else None
    try:
        inputs, result = saved
    except (TypeError, ValueError):
        return None
    out = []
    for name, value in zip(getattr(node, "input_names", ()), inputs):
        if value is not None and hasattr(value, "shape"):
            out.append(f"{name}: {list(value.shape)}")
    if result is not None and hasattr(result, "shape"):
        out.append(f"result: {list(result.shape)}")
    return out or None


def label(g: GraphNode, show_saved: bool = False, sep: str = " ") -> str:
    parts = [g.name]
    if g.variable:
        parts.append(g.variable)
    if g.shape is not None:
        parts.append(str(g.shape))
    if show_saved and g.saved:
        parts.append("saved " + ("freed" if g.saved == "freed" else ", ".join(g.saved)))
    return sep.join(parts)


# -- renderings ----------------------------------------------------------------------------------

def tree_lines(nodes: list[GraphNode], show_saved: bool = False) -> list[str]:
    """Indented tree, depth-first in next_functions order; repeated nodes become references."""
    if not nodes:
        return []
    lines = []
    shown = set()
    # stack entries: (node id, prefix for this line, prefix for its children, depth)
    stack = [(0, "", "", 0)]
    while stack:
        nid, head, rest, depth = stack.pop()
        g = nodes[nid]
        if nid in shown:
            lines.append(f"{head}(see #{nid}: {g.name})")
            continue
        shown.add(nid)
        more = f"  [depth {depth}]" if depth > MAX_INDENT else ""
        lines.append(f"{head}#{nid} {label(g, show_saved)}{more}")
        children = g.edges
        flat = depth >= MAX_INDENT  # stop indenting: children share this level
        for pos in range(len(children) - 1, -1, -1):
            child, _ = children[pos]
            last = pos == len(children) - 1
            if flat:
                stack.append((child, rest + ("└─ " if last else "├─ "), rest, depth + 1))
            else:
                stack.append((child, rest + ("└── " if last else "├── "),
                              rest + ("    " if last else "│   "), depth + 1))
    return lines


def to_dot(nodes: list[GraphNode], show_saved: bool = False) -> str:
    out = ["digraph gradcli {", '  rankdir="TB";', '  node [shape=box, style="rounded,filled", fontname="monospace"];']
    for g in nodes:
        fill = "lightblue" if g.name == "AccumulateGrad" else "lightgray" if g.id == 0 else "white"
        text = label(g, show_saved, sep="\n").replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        out.append(f'  n{g.id} [label="{text}", fillcolor="{fill}"];')
    for g in nodes:
        for child, k in g.edges:
            out.append(f'  n{g.id} -> n{child} [label="{k}"];' if len(g.edges) > 1 else f"  n{g.id} -> n{child};")
    out.append("}")
    return "\n".join(out) + "\n"


def to_mermaid(nodes: list[GraphNode], show_saved: bool = False) -> str:
    out = ["graph TD"]
    for g in nodes:
        text = label(g, show_saved, sep="<br/>").replace('"', "#quot;")
        out.append(f'  n{g.id}["{text}"]')
    for g in nodes:
        for child, _ in g.edges:
            out.append(f"  n{g.id} --> n{child}")
    return "\n".join(out) + "\n"


def to_json(nodes: list[GraphNode], show_saved: bool = False) -> dict:
    return {
        "root": 0 if nodes else None,
        "nodes": [{"id": g.id, "name": g.name, "variable": g.variable, "shape": g.shape,
                   **({"saved": g.saved} if show_saved else {})} for g in nodes],
        "edges": [{"from": g.id, "to": child, "input": k} for g in nodes for child, k in g.edges],
    }


# -- the command ---------------------------------------------------------------------------------

def graph_of(result):
    """The nodes of the last value's backward graph, with variable names from the program."""
    from .tensor import Tensor
    last = result.last_value
    if not isinstance(last, Tensor):
        raise GradTypeError("the program's last value is not a tensor, so it has no backward graph")
    names: dict[int, str] = {}
    for name, t in result.tensors:
        names.setdefault(id(t.grad_fn) if t.grad_fn is not None else id(t), name)
    if last.grad_fn is None:
        if last.requires_grad:
            from .node import AccumulateGrad
            return collect(last._accumulator() if hasattr(last, "_accumulator") else AccumulateGrad(last), names)
        return []
    return collect(last.grad_fn, names)


def run_graph(opts, fmt: str = "tree", output: str | None = None, show_saved: bool = False) -> int:
    from .commands import run_program
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    ext = os.path.splitext(output)[1].lower() if output else None
    if output and ext not in (".dot", ".gv", ".svg", ".png"):
        raise UsageError(f"-o writes .dot, .svg or .png files, not {output!r}")
    src, program, interp, result = run_program(opts)
    if result.error is not None:
        raise result.error
    nodes = graph_of(result)
    if output:
        dot = to_dot(nodes, show_saved)
        if ext in (".dot", ".gv"):
            _write(output, dot)
        else:
            _render(dot, output, ext[1:])
        if not opts.json:
            print(f"wrote {output} ({len(nodes)} nodes)")
    if opts.json:
        from . import render
        print(render.json_document(result, device=opts.device, dtype=opts.dtype,
                                   extra={"graph": to_json(nodes, show_saved)}))
        return 0
    if output:
        return 0
    if fmt == "dot":
        sys.stdout.write(to_dot(nodes, show_saved))
    elif fmt == "mermaid":
        sys.stdout.write(to_mermaid(nodes, show_saved))
    elif fmt == "json":
        import json
        print(json.dumps(to_json(nodes, show_saved), indent=1))
    else:
        lines = tree_lines(nodes, show_saved)
        if not lines:
            print("(no graph: the last value does not require grad)")
        else:
            sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _render(dot: str, path: str, fmt: str) -> None:
    exe = shutil.which("dot")
    if exe is None:
        raise DeviceError(f"cannot write {path}: Graphviz's 'dot' program is not installed",
                          hint="install Graphviz (Debian/Ubuntu: sudo apt install graphviz; macOS: brew install "
                               "graphviz), or write DOT text with -o graph.dot")
    try:
        proc = subprocess.run([exe, f"-T{fmt}", "-o", path], input=dot.encode(), capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeviceError(f"Graphviz's dot failed: {exc}") from None
    if proc.returncode != 0:
        raise DeviceError(f"Graphviz's dot failed: {proc.stderr.decode(errors='replace').strip()[:500]}")
