"""Drawing a backward graph, as the seed articles draw it (what ``gradcli graph`` prints).

Every node is collected once by an iterative walk from the root's ``grad_fn`` along
``next_functions`` (never recursive: chains of 100,000 nodes are fine). A node's label carries
its grad_fn name, the variable name the program bound to its output (the first name bound, if
several), and its output's shape; a leaf's ``AccumulateGrad`` carries the leaf's name and
shape; ``--show-saved`` adds the shapes of the values the node saved for backward (or
"freed" once a backward without ``retain_graph`` released them). Renderings:

- ``tree`` (default): an indented tree drawn here line by line (rich's own Tree recurses on
  depth); a node reached a second time (a shared sub-graph) is shown once and then as a
  reference ``(see #3: AddBackward0)``; a branch deeper than the width allows (4 columns a
  level, at most ``MAX_INDENT`` levels) ends in ``#25 AddBackward0 (continued below)`` and goes
  on below as a block of its own, headed ``#25 AddBackward0 ...  [depth 25]``.
- ``dot`` (Graphviz), ``mermaid`` and ``json`` text; ``-o FILE`` writes ``.dot``/``.gv``,
  ``.mmd``, ``.json``, or ``.svg``/``.png`` through Graphviz's ``dot`` program where it is
  installed (exit 3 with a hint where it is not).

Edges point from a node to the node that receives its gradient for one input, as in
``next_functions``: ``MeanBackward0 -> AddBackward0 -> AccumulateGrad``; an edge carries the
input's position where a node has several.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from ..errors import DeviceError

MAX_INDENT = 24
FORMATS = ("tree", "dot", "mermaid", "json")
# -o: file extension -> the format written (None: DOT rendered by Graphviz)
OUTPUTS = {"dot": "dot", "gv": "dot", "mmd": "mermaid", "json": "json", "txt": "tree"}
# -o: the image and document formats Graphviz's dot writes (dot -T...), by file extension
GRAPHVIZ_FORMATS = frozenset({"svg", "svgz", "png", "pdf", "jpg", "jpeg", "gif", "ps", "eps", "bmp", "tif",
                              "tiff", "webp", "ico", "pic", "vml", "xdot", "plain", "canon", "imap",
                              "cmapx", "fig", "vrml", "wbmp"})
GRAPHVIZ_HINT = ("install Graphviz, which provides 'dot' (Debian/Ubuntu: the package graphviz, "
                 "sudo apt-get install graphviz; macOS: brew install graphviz), "
                 "or write DOT text with -o graph.dot")


class GraphNode:
    __slots__ = ("id", "node", "name", "variable", "shape", "saved", "edges", "root")

    def __init__(self, id, node, name, variable, shape, saved):
        self.id, self.node, self.name, self.variable, self.shape, self.saved = id, node, name, variable, shape, saved
        self.root = False  # one of the values drawn (--root)
        self.edges: list[tuple[int, int]] = []   # (child id, input index), in next_functions order


def collect(root, name_of=lambda obj: None) -> list[GraphNode]:
    """All nodes reachable from ``root`` (a grad_fn, or a list of them: the roots are then nodes
    0, 1, ...), numbered in breadth-first order.

    ``name_of(obj)`` gives the variable name bound to a node, or to a leaf tensor."""
    from ..autograd.node import AccumulateGrad
    index: dict[int, GraphNode] = {}
    order: list[GraphNode] = []

    def visit(node) -> GraphNode:
        g = index.get(id(node))
        if g is None:
            if isinstance(node, AccumulateGrad):
                var = node.variable
                shape = list(var.shape) if var is not None else None
                variable = name_of(var) if var is not None else None
            else:
                shape = getattr(node, "_shape", None)
                shape = list(shape) if shape is not None else None
                variable = name_of(node)
            g = GraphNode(len(order), node, node.name_for_repr(), variable, shape, _saved_shapes(node))
            index[id(node)] = g
            order.append(g)
        return g

    for r in (root if isinstance(root, list) else [root]):
        visit(r).root = True
    i = 0
    while i < len(order):  # breadth-first over a growing list: iterative
        g = order[i]
        i += 1
        for k, (child, _) in enumerate(g.node.next_functions):
            if child is not None:
                g.edges.append((visit(child).id, k))
    return order


def _saved_shapes(node):
    """Shapes of the values the node saved for backward: a list, "freed", or None (nothing)."""
    live = getattr(node, "_live", None)
    if live is None:
        return None
    if live is False:
        return "freed"
    inputs, result = node._saved
    out = [f"{name}: {list(value.shape)}" for name, value in zip(node.input_names, inputs)
           if value is not None and hasattr(value, "shape")]
    if result is not None and hasattr(result, "shape"):
        out.append(f"result: {list(result.shape)}")
    return out or None


def label_parts(g: GraphNode, show_saved: bool = False) -> list[str]:
    parts = [g.name]
    if g.variable:
        parts.append(g.variable)
    if g.shape is not None:
        parts.append(str(g.shape))
    if show_saved and g.saved:
        parts.append("saved " + ("freed" if g.saved == "freed" else ", ".join(g.saved)))
    return parts


def label(g: GraphNode, show_saved: bool = False, sep: str = " ") -> str:
    return sep.join(label_parts(g, show_saved))


# -- renderings ----------------------------------------------------------------------------------

def indent_limit(columns: int) -> int:
    """Levels of indentation a tree may use at ``columns`` columns (4 columns a level, leaving
    about 40 for the labels), between 4 and :data:`MAX_INDENT`."""
    return max(4, min(MAX_INDENT, (columns - 40) // 4))


def tree_rows(nodes: list[GraphNode], limit: int = MAX_INDENT):
    """The tree, depth-first in next_functions order, as ``(prefix, node id, kind, depth)`` rows:
    kind ``"node"``, ``"see"`` (a node already shown: a reference) or ``"below"`` (the branch
    goes on ``limit`` levels deeper than its block's top: it is drawn below as a block of its
    own, starting from that node, so that a deep graph never outgrows the width)."""
    if not nodes:
        return
    shown, pending = set(), set()  # pending: to be drawn in a block below
    blocks = [(g.id, 0) for g in nodes if g.root] or [(0, 0)]
    k = 0
    while k < len(blocks):
        start, base = blocks[k]
        k += 1
        if start in shown:
            continue
        # stack entries: (node id, prefix of this line, prefix of its children's lines, depth)
        stack = [(start, "", "", base)]
        while stack:
            nid, head, rest, depth = stack.pop()
            if nid in shown or (nid in pending and nid != start):
                yield head, nid, "see", depth
                continue
            if depth - base >= limit and nid != start:
                yield head, nid, "below", depth
                pending.add(nid)
                blocks.append((nid, depth))
                continue
            shown.add(nid)
            yield head, nid, "node", depth
            children = nodes[nid].edges
            for pos in range(len(children) - 1, -1, -1):
                last = pos == len(children) - 1
                stack.append((children[pos][0], rest + ("└── " if last else "├── "),
                              rest + ("    " if last else "│   "), depth + 1))


def tree_lines(nodes: list[GraphNode], show_saved: bool = False, limit: int = MAX_INDENT) -> list[str]:
    lines = []
    for head, nid, kind, depth in tree_rows(nodes, limit):
        g = nodes[nid]
        if kind == "see":
            lines.append(f"{head}(see #{nid}: {g.name})")
        elif kind == "below":
            lines.append(f"{head}#{nid} {g.name} (continued below)")
        else:
            if not head and depth:
                lines.append("")
            more = f"  [depth {depth}]" if not head and depth else ""
            lines.append(f"{head}#{nid} {label(g, show_saved)}{more}")
    return lines


def print_tree(nodes: list[GraphNode], show_saved: bool = False, file=None) -> None:
    """The tree, fitted to the width (:func:`indent_limit`): on a terminal in colour (grad_fn
    names, variable names, shapes), else plain."""
    from .tables import width
    file = file or sys.stdout
    limit = indent_limit(width(file))
    is_tty = hasattr(file, "isatty") and file.isatty()
    if not is_tty or os.environ.get("NO_COLOR"):
        lines = tree_lines(nodes, show_saved, limit)
        file.write("\n".join(lines) + "\n")
        return
    from rich.text import Text

    from .tables import _console
    console = _console(file)
    out = Text()
    for head, nid, kind, depth in tree_rows(nodes, limit):
        g = nodes[nid]
        if kind == "node" and not head and depth:
            out.append("\n")
        out.append(head, style="dim")
        if kind == "see":
            out.append(f"(see #{nid}: {g.name})\n", style="dim italic")
            continue
        out.append(f"#{nid} ", style="dim")
        out.append(g.name, style="blue" if g.name == "AccumulateGrad" else "cyan")
        if kind == "below":
            out.append(" (continued below)\n", style="dim italic")
            continue
        if g.variable:
            out.append(f" {g.variable}", style="bold")
        if g.shape is not None:
            out.append(f" {g.shape}")
        if show_saved and g.saved:
            out.append(" saved " + ("freed" if g.saved == "freed" else ", ".join(g.saved)), style="magenta")
        if not head and depth:
            out.append(f"  [depth {depth}]", style="dim")
        out.append("\n")
    console.print(out, end="", soft_wrap=True)


def _dot_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(nodes: list[GraphNode], show_saved: bool = False) -> str:
    out = ["digraph gradcli {", '  rankdir="TB";',
           '  node [shape=box, style="rounded,filled", fontname="monospace"];']
    for g in nodes:
        fill = "lightblue" if g.name == "AccumulateGrad" else "lightgray" if g.root else "white"
        text = "\\n".join(_dot_string(p) for p in label_parts(g, show_saved))
        out.append(f'  n{g.id} [label="{text}", fillcolor="{fill}"];')
    for g in nodes:
        several = len(g.edges) > 1
        for child, k in g.edges:
            out.append(f'  n{g.id} -> n{child} [label="{k}"];' if several else f"  n{g.id} -> n{child};")
    out.append("}")
    return "\n".join(out) + "\n"


def to_mermaid(nodes: list[GraphNode], show_saved: bool = False) -> str:
    out = ["graph TD"]
    for g in nodes:
        text = "<br/>".join(p.replace('"', "#quot;") for p in label_parts(g, show_saved))
        out.append(f'  n{g.id}["{text}"]')
    for g in nodes:
        several = len(g.edges) > 1
        for child, k in g.edges:
            out.append(f"  n{g.id} -->|{k}| n{child}" if several else f"  n{g.id} --> n{child}")
    return "\n".join(out) + "\n"


def to_json(nodes: list[GraphNode], show_saved: bool = False) -> dict:
    return {
        "root": 0 if nodes else None,
        "roots": [g.id for g in nodes if g.root],
        "nodes": [{"id": g.id, "name": g.name, "variable": g.variable, "shape": g.shape,
                   **({"saved": g.saved} if show_saved else {})} for g in nodes],
        "edges": [{"from": g.id, "to": child, "input": k} for g in nodes for child, k in g.edges],
    }


def json_text(nodes: list[GraphNode], show_saved: bool = False) -> str:
    """The JSON graph, one line per node and per edge."""
    from .tables import dump_document
    return dump_document(to_json(nodes, show_saved)) + "\n"


def text_in(fmt: str, nodes: list[GraphNode], show_saved: bool) -> str:
    if fmt == "dot":
        return to_dot(nodes, show_saved)
    if fmt == "mermaid":
        return to_mermaid(nodes, show_saved)
    if fmt == "json":
        return json_text(nodes, show_saved)
    return "\n".join(tree_lines(nodes, show_saved)) + "\n"


def _write(path: str, text: str) -> None:
    from .files import write_text
    write_text(path, text)


def _render(dot: str, path: str, fmt: str) -> None:
    exe = shutil.which("dot")
    if exe is None:
        raise DeviceError(f"cannot write {path}: Graphviz's 'dot' program is not installed", hint=GRAPHVIZ_HINT)
    from .files import destination, write_atomically
    destination(path)  # a bad path is refused before Graphviz runs

    def fill(tmp):
        # dot writes to the temporary file (an absolute path, given as -o<path>: never read as an
        # option, whatever the user's file is called); it is renamed into place once complete
        try:
            proc = subprocess.run([exe, f"-T{fmt}", f"-o{tmp}"], input=dot.encode(), capture_output=True,
                                  timeout=300)
        except subprocess.TimeoutExpired:
            raise DeviceError("Graphviz's dot ran for more than 300 s", hint="write DOT text with -o graph.dot") from None
        except OSError as exc:
            raise DeviceError(f"cannot run Graphviz's dot ({exe}): {exc.strerror or exc}") from None
        if proc.returncode != 0:
            detail = proc.stderr.decode(errors="replace").strip()[:500]
            raise DeviceError(f"Graphviz's dot failed (exit {proc.returncode})" + (f": {detail}" if detail else ""))
    write_atomically(path, fill)
