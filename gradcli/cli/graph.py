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
    FORMATS, OUTPUTS, GraphNode, _render, _write, collect, print_tree, text_in, to_dot, to_json,
)


# -- running a program, remembering names --------------------------------------------------------

class Tracer(Observer):
    """Watches a run (an :class:`~gradcli.lang.evaluator.Observer`): remembers the name first
    bound to each tensor's node (its grad_fn, or the tensor itself for a leaf), and the last
    value that was a tensor, with the position of its statement."""

    def __init__(self):
        # id(grad_fn or leaf tensor) -> (that object, kept alive so the id stays its own; name)
        self.bound: dict[int, tuple[object, str]] = {}
        self.last_tensor = None
        self.last_tensor_line = self.last_tensor_column = None

    def on_bind(self, name, value):
        if isinstance(value, Tensor):
            key = value.grad_fn if value.grad_fn is not None else value
            if id(key) not in self.bound:
                self.bound[id(key)] = (key, name)

    def after_statement(self, stmt, value):
        if isinstance(value, Tensor):
            self.last_tensor = value
            self.last_tensor_line, self.last_tensor_column = stmt.line, stmt.column

    def name_of(self, obj):
        entry = self.bound.get(id(obj))
        return entry[1] if entry is not None and entry[0] is obj else None


# -- the command ---------------------------------------------------------------------------------

def graph_of(tracer: Tracer) -> list[GraphNode]:
    """The nodes of the last value's backward graph (empty when it does not require grad)."""
    last = tracer.last_tensor
    if last is None:
        raise GradTypeError("the program computes no tensor, so there is no backward graph to draw",
                            hint="end the program with the value to draw, e.g. mean(x * w + 2)")
    if last.grad_fn is not None:
        return collect(last.grad_fn, tracer.name_of)
    if last.requires_grad:  # a leaf: its AccumulateGrad alone
        return collect(last._accumulator(), tracer.name_of)
    return []


def run_graph(opts, fmt: str = "tree", output: str | None = None, show_saved: bool = False) -> int:
    result = None
    try:
        result, nodes = _graph(opts, fmt, output, show_saved)
    except GradcliError as err:
        return report_json(opts, result, err, {"graph": None})
    settle()
    from ..present import tables as render
    failed = 1 if any(not c.passed for c in result.checks) else 0  # the program's own asserts
    if opts.json:
        print(render.json_document(result, device=opts.device, dtype=opts.dtype,
                                   extra={"graph": to_json(nodes, show_saved)}))
        if result.error is not None:  # too large for --max-output: the values were left out
            failed = result.error.exit_code
    elif output:
        print(f"wrote {output} ({len(nodes)} node{'s' if len(nodes) != 1 else ''})")
    elif not nodes:
        print("(no graph: the last value does not require grad)")
    elif fmt == "tree":
        print_tree(nodes, show_saved)
    else:
        sys.stdout.write(text_in(fmt, nodes, show_saved))
    sys.stdout.flush()
    render.print_failed_checks(result)
    return failed


def _graph(opts, fmt, output, show_saved):
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    ext = written = None
    if output:
        ext = os.path.splitext(output)[1].lower()
        if ext not in OUTPUTS:
            raise UsageError(f"-o writes .dot, .svg, .png, .mmd or .json files, not {output!r}")
        written = OUTPUTS[ext] or "dot"
        if fmt != "tree" and fmt != written:
            raise UsageError(f"--format {fmt} does not match -o {output} (the file's extension decides its format)")
    from . import session
    prepared = session.prepare(opts)
    tracer = Tracer()
    evaluator = Evaluator(auto_backward=False, observers=[tracer])
    result = session.run_prepared(opts, prepared, evaluator, configure_first=False)
    try:
        if result.error is not None:
            raise result.error
        nodes = graph_of(tracer)
        if output:
            if OUTPUTS[ext] is None:
                _render(to_dot(nodes, show_saved), output, ext[1:])
            else:
                _write(output, text_in(written, nodes, show_saved))
    except GradcliError as err:
        err.partial_result = result
        raise
    return result, nodes


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
    print(render.error_text(err, getattr(err, "source_text", None)), file=sys.stderr)
    return err.exit_code
