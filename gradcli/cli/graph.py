"""``gradcli graph``: run the program, remembering names, and draw the last value's graph.

"The last value" is the value of the last statement that produced a tensor (an expression or
an assignment; ``print``, ``assert``, ``del`` and calls that return None, such as
``out.backward()``, are skipped), so a program that ends by printing its results still has one.
The drawing itself (tree, DOT, Mermaid, JSON, Graphviz) is :mod:`gradcli.present.graph`.
"""

from __future__ import annotations

import os
import sys

from ..autograd.tensor import Tensor
from ..errors import GradcliError, GradTypeError, UsageError
from ..lang.evaluator import Evaluator, Observer
from ..limits import settle
from ..present.graph import (
    FORMATS, GRAPHVIZ_FORMATS, OUTPUTS, GraphNode, _render, _write, collect, print_tree, text_in, to_dot,
    to_json,
)


# -- running a program, remembering names --------------------------------------------------------

class Tracer(Observer):
    """Watches a run (an :class:`~gradcli.lang.evaluator.Observer`): remembers the name bound to
    each tensor's node (its grad_fn, or the tensor itself for a leaf), the value each name holds
    last, and the last value that was a tensor (and the last one that requires grad), with the
    position of its statement. A name bound again to another tensor (``h = tanh(h @ w)`` in an
    RNN) is told apart by primes: ``h``, ``h'``, ``h''``, then ``h'4``, ``h'5``..."""

    def __init__(self):
        # id(grad_fn or leaf tensor) -> (that object, kept alive so the id stays its own; name)
        self.bound: dict[int, tuple[object, str]] = {}
        self.values: dict[str, object] = {}
        self.where: dict[str, tuple] = {}   # name -> (line, column) of its last binding
        self._bindings: dict[str, int] = {}
        self.last_tensor = self.last_graph = None
        self.last_tensor_line = self.last_tensor_column = None
        self.last_graph_line = self.last_graph_column = None

    def before_statement(self, stmt):
        self._stmt = stmt

    def on_bind(self, name, value):
        self.values[name] = value
        stmt = getattr(self, "_stmt", None)
        self.where[name] = (stmt.line, stmt.column) if stmt is not None else (None, None)
        if isinstance(value, Tensor):
            key = value.grad_fn if value.grad_fn is not None else value
            if id(key) not in self.bound:
                k = self._bindings.get(name, 0)
                self._bindings[name] = k + 1
                self.bound[id(key)] = (key, name + ("'" * k if k <= 3 else f"'{k}"))

    def after_statement(self, stmt, value):
        if isinstance(value, Tensor):
            self.last_tensor = value
            self.last_tensor_line, self.last_tensor_column = stmt.line, stmt.column
            if value.requires_grad:
                self.last_graph = value
                self.last_graph_line, self.last_graph_column = stmt.line, stmt.column

    def name_of(self, obj):
        entry = self.bound.get(id(obj))
        return entry[1] if entry is not None and entry[0] is obj else None

    def named(self, name: str, option: str):
        """The tensor ``name`` holds at the end of the run (``--root``/``--of``), or a usage error."""
        value = self.values.get(name)
        if not isinstance(value, Tensor):
            known = sorted(n for n, v in self.values.items() if isinstance(v, Tensor))
            what = "is not a tensor" if name in self.values else "is not a variable of the program"
            raise UsageError(f"{option} {name}: {name} {what}",
                             hint=f"tensors the program binds: {', '.join(known)}" if known else None)
        return value


# -- the command ---------------------------------------------------------------------------------

NO_GRAPH_HINT = "name the value to draw with --root NAME, or end the program with it, e.g. mean(x * w + 2)"


def graph_of(tracer: Tracer, roots=()) -> list[GraphNode]:
    """The nodes of the backward graph of the ``roots`` named (default: the last value that
    requires grad). No graph at all is a usage error (exit 2)."""
    if roots:
        tensors = [(name, tracer.named(name, "--root")) for name in roots]
    elif tracer.last_graph is not None:
        tensors = [(None, tracer.last_graph)]
    elif tracer.last_tensor is None:
        raise GradTypeError("the program computes no tensor, so there is no backward graph to draw",
                            hint=NO_GRAPH_HINT)
    else:
        raise GradTypeError("no value of the program requires grad, so there is no backward graph to draw",
                            hint="declare a leaf with -g NAME=INIT or create one with requires_grad=True")
    starts = []
    for name, t in tensors:
        if t.grad_fn is not None:
            starts.append(t.grad_fn)
        elif t.requires_grad:  # a leaf: its AccumulateGrad alone
            edge = t._accumulator()
            if edge is None:  # a view made under no_grad: it requires grad, with no gradient edge
                what = f"--root {name}: {name}" if name else "the last value"
                raise GradTypeError(f"{what} is a view made under no_grad: it requires grad but has no backward "
                                    f"graph", hint=NO_GRAPH_HINT)
            starts.append(edge)
        else:
            raise GradTypeError(f"--root {name}: {name} does not require grad, so it has no backward graph",
                                hint=NO_GRAPH_HINT)
    return collect(starts, tracer.name_of)


def run_graph(opts, fmt: str = "tree", output: str | None = None, show_saved: bool = False, roots=()) -> int:
    result = None
    try:
        result, nodes = _graph(opts, fmt, output, show_saved, roots or ())
    except GradcliError as err:
        return report_json(opts, result, err, {"graph": None})
    settle()
    from ..present import tables as render
    if opts.json:
        print(render.json_document(result, device=opts.device, dtype=opts.dtype,
                                   extra={"graph": to_json(nodes, show_saved)}))
        if result.error is not None:  # too large for --max-output: the values were left out
            sys.stdout.flush()
            return result.error.exit_code
    elif output:
        print(f"wrote {output} ({len(nodes)} node{'s' if len(nodes) != 1 else ''})")
    elif fmt == "tree":
        print_tree(nodes, show_saved)
    else:
        sys.stdout.write(text_in(fmt, nodes, show_saved))
    sys.stdout.flush()
    return 0


def _graph(opts, fmt, output, show_saved, roots):
    if fmt not in FORMATS:
        hint = (f"to draw an image, write it to a file: -o graph.{fmt}" if fmt in GRAPHVIZ_FORMATS else None)
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}", hint=hint)
    written = output_format(output, fmt) if output else None
    from . import session
    prepared = session.prepare(opts)
    tracer = Tracer()
    evaluator = Evaluator(auto_backward=False, observers=[tracer])
    result = session.run_prepared(opts, prepared, evaluator, configure_first=False)
    try:
        if result.error is not None:
            raise result.error
        nodes = graph_of(tracer, roots)
        if output:
            if written in FORMATS:
                _write(output, text_in(written, nodes, show_saved))
            else:
                _render(to_dot(nodes, show_saved), output, written)
    except GradcliError as err:
        err.partial_result = result
        raise
    return result, nodes


def output_format(output: str, fmt: str) -> str:
    """The format ``-o FILE`` writes, from its extension: tree/dot/mermaid/json text, or any
    format Graphviz's ``dot -T`` writes. Checked before the program runs: a bad extension or a
    folder that does not exist is bad input (exit 2), whatever the format."""
    ext = os.path.splitext(output)[1].lower().lstrip(".")
    written = OUTPUTS.get(ext) or (ext if ext in GRAPHVIZ_FORMATS else None)
    if written is None:
        raise UsageError(f"-o cannot tell a format from {output!r}: use .dot/.gv, .mmd, .json, .txt, or an "
                         f"image Graphviz writes ({', '.join(sorted(GRAPHVIZ_FORMATS))})")
    if fmt != "tree" and fmt != written:
        raise UsageError(f"--format {fmt} does not match -o {output} (the file's extension decides its format)")
    folder = os.path.dirname(output)
    if folder and not os.path.isdir(folder):
        raise UsageError(f"cannot write {output}: the folder {folder} does not exist")
    return written


def report_json(opts, result, err, extra: dict) -> int:
    """Under --json, one document with the run so far, the error and ``extra``; else re-raise
    (the command's guard prints the message). The exit code."""
    if not opts.json:
        raise err
    settle()
    from ..present import tables as render
    result = result if result is not None else getattr(err, "partial_result", None)
    print(render.json_document(result, device=opts.device, dtype=opts.dtype, error=err, extra=extra))
    if result is not None:
        render.print_failed_checks(result)
    render.print_error(err, getattr(err, "source_text", None))
    return err.exit_code
