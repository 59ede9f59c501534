"""The ``gradcli`` command line (SPEC §1): eval, check, graph, ops.

Every command funnels through ``_guard``, which turns a ``GradcliError`` into one
message on stderr (or the JSON document's ``error``) and the SPEC's exit code,
and any other exception into an "internal error" without a traceback unless
``--debug`` is given.
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional

import typer

from .errors import GradcliError, UsageError

EXAMPLES = """
Examples:

  gradcli eval 'mean(x + temp + 2)' -l 'x=ones(2,2)' -g 'temp=zeros(2,2)'

  gradcli eval -f examples/seed0_variable.grad --json

  echo 'w = tensor([1., 2., 3.], requires_grad=True); d = mean(w)' | gradcli eval
"""

app = typer.Typer(
    add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False,
    no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]},
    help="See and check automatic differentiation from a terminal: PyTorch's autograd, "
         "as tables, JSON and graphs." + EXAMPLES.replace("\n\n", "\n\n\b\n", 1),
)

# -- options shared by eval, check and graph ------------------------------------------------

SourceArg = typer.Argument(None, metavar="[SOURCE]", help="Program text: one expression or statements.",
                           show_default=False)
FileOpt = typer.Option(None, "-f", "--file", help="Read the program from FILE ('-' for stdin).",
                       show_default=False)
LeafOpt = typer.Option(None, "-l", "--leaf", metavar="NAME=INIT",
                       help="Declare a leaf before the program runs, e.g. -l 'x=ones(2,2)'.", show_default=False)
GradOpt = typer.Option(None, "-g", "--grad", metavar="NAME=INIT",
                       help="Declare a leaf that requires grad, e.g. -g 'w=rand(3)'.", show_default=False)
DeviceOpt = typer.Option("cpu", "--device", envvar="GRADCLI_DEVICE", help="cpu, cuda or cuda:N.")
DtypeOpt = typer.Option("float32", "--dtype", help="Default float dtype: float32 or float64.")
SeedOpt = typer.Option(None, "--seed", help="Seed for rand/randn.", show_default=False)
JsonOpt = typer.Option(False, "--json", help="Print one JSON document on stdout.")
NoBackOpt = typer.Option(False, "--no-backward", help="Do not run backward automatically.")
PrecOpt = typer.Option(4, "--precision", help="Digits after the point when printing values.")
MaxElOpt = typer.Option(None, "--max-elements", help="Refuse tensors larger than this (default 2**28).",
                        show_default=False)
TimeoutOpt = typer.Option(None, "--timeout", help="Stop after this many seconds (exit 3).", show_default=False)
DebugOpt = typer.Option(False, "--debug", help="Show Python tracebacks for internal errors.", hidden=True)


def _options(source, file, leaf, grad, device, dtype, seed, json_, no_backward, precision, max_elements,
             timeout, debug):
    from .session import Options
    if dtype not in ("float32", "float64"):
        raise UsageError(f"--dtype must be float32 or float64, not {dtype!r}")
    return Options(source=source, file=file, leaves=list(leaf or []), grads=list(grad or []),
                   device=device, dtype=dtype, seed=seed, no_backward=no_backward, precision=precision,
                   max_elements=max_elements, timeout=timeout, json=json_, debug=debug)


def _guard(opts, body) -> int:
    """Run ``body()``; map errors to messages and exit codes."""
    from . import render
    source_text = None
    try:
        with _timeout(opts.timeout):
            return body()
    except GradcliError as err:
        source_text = getattr(err, "source_text", None)
        _report(opts, err, source_text)
        return err.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug in gradcli: say so, without a traceback
        if opts.debug:
            raise
        from .errors import GradcliError as _E
        err = _E(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)")
        err.kind, err.exit_code = "internal", 3
        _report(opts, err, None)
        return 3


def _report(opts, err, source_text) -> None:
    from . import render
    if opts.json:
        print(render.json_document(None, device=opts.device, dtype=opts.dtype, error=err))
    print(render.error_text(err, source_text), file=sys.stderr)


class _timeout:
    """``--timeout``: a wall-clock limit raising LimitError (exit 3) via SIGALRM where available."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        import signal
        if self.seconds and hasattr(signal, "SIGALRM"):
            def expire(signum, frame):
                from .errors import LimitError
                raise LimitError(f"the program ran longer than --timeout {self.seconds:g} s")
            self._old = signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, float(self.seconds))
        return self

    def __exit__(self, *exc):
        import signal
        if self.seconds and hasattr(signal, "SIGALRM"):
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old)
        return False


def run_program(opts, on_print=None):
    """The shared pipeline; attaches the source to errors so they can show the line."""
    from . import session
    source = None
    try:
        source = session.read_source(opts)
        opts.source, opts.file = source.text, None
        src, program, interp, result = session.run(opts, on_print=on_print)
    except GradcliError as err:
        err.source_text = source.text if source is not None and err.line is not None else None
        raise
    if result.error is not None:
        result.error.source_text = src.text
    return src, program, interp, result


# -- eval ----------------------------------------------------------------------------------------

@app.command("eval", help="Evaluate a program, run backward, and print every variable's data, grad, "
                          "grad_fn and next_functions." + EXAMPLES)
def eval_cmd(
    source: Optional[str] = SourceArg, file: Optional[str] = FileOpt, leaf: Optional[List[str]] = LeafOpt,
    grad: Optional[List[str]] = GradOpt, device: str = DeviceOpt, dtype: str = DtypeOpt,
    seed: Optional[int] = SeedOpt, json_: bool = JsonOpt, no_backward: bool = NoBackOpt,
    precision: int = PrecOpt, max_elements: Optional[int] = MaxElOpt, timeout: Optional[float] = TimeoutOpt,
    debug: bool = DebugOpt,
) -> None:
    opts = None

    def body():
        from . import render
        live = None if opts.json else (lambda text: print(text, flush=False))
        src, program, interp, result = run_program(opts, on_print=live)
        if opts.json:
            print(render.json_document(result, device=opts.device, dtype=opts.dtype, error=result.error))
            render.print_failed_checks(result)
            if result.error is not None:
                print(render.error_text(result.error, src.text), file=sys.stderr)
        else:
            render.print_table(result)
            render.print_notes(result)
            if result.error is not None:
                sys.stdout.flush()
                print(render.error_text(result.error, src.text), file=sys.stderr)
        if result.error is not None:
            return result.error.exit_code
        return 1 if any(not c.passed for c in result.checks) else 0

    try:
        opts = _options(source, file, leaf, grad, device, dtype, seed, json_, no_backward, precision,
                        max_elements, timeout, debug)
    except GradcliError as err:
        from .session import Options
        opts = Options(json=json_)
        _report(opts, err, None)
        raise typer.Exit(err.exit_code)
    raise typer.Exit(_guard(opts, body))


# -- check, graph, ops ------------------------------------------------------------------------------

@app.command("check", help="Compare each leaf's analytic gradient of the last value with central finite "
                           "differences (in float64). Exit 0 when all agree, 1 otherwise.\n\n\b\nExample:\n"
                           "  gradcli check 'sum(sin(x) * x)' -g 'x=rand(3)'")
def check_cmd(
    source: Optional[str] = SourceArg, file: Optional[str] = FileOpt, leaf: Optional[List[str]] = LeafOpt,
    grad: Optional[List[str]] = GradOpt, device: str = DeviceOpt, seed: Optional[int] = SeedOpt,
    eps: float = typer.Option(1e-6, "--eps", help="Finite-difference step."),
    atol: float = typer.Option(1e-5, "--atol", help="Absolute tolerance."),
    rtol: float = typer.Option(1e-3, "--rtol", help="Relative tolerance."),
    json_: bool = JsonOpt, precision: int = PrecOpt, max_elements: Optional[int] = MaxElOpt,
    timeout: Optional[float] = TimeoutOpt, debug: bool = DebugOpt,
) -> None:
    opts = _options(source, file, leaf, grad, device, "float64", seed, json_, True, precision, max_elements,
                    timeout, debug)

    def body():
        from .check import run_check
        return run_check(opts, eps=eps, atol=atol, rtol=rtol)
    raise typer.Exit(_guard(opts, body))


@app.command("graph", help="Draw the backward graph of the last value: a tree (default), DOT, Mermaid or "
                           "JSON; -o writes .dot/.svg/.png.\n\n\b\nExample:\n"
                           "  gradcli graph 'mean(x * w + 2)' -l 'x=ones(2,2)' -g 'w=rand(2,2)' --format dot")
def graph_cmd(
    source: Optional[str] = SourceArg, file: Optional[str] = FileOpt, leaf: Optional[List[str]] = LeafOpt,
    grad: Optional[List[str]] = GradOpt, device: str = DeviceOpt, dtype: str = DtypeOpt,
    seed: Optional[int] = SeedOpt,
    format: str = typer.Option("tree", "--format", help="tree, dot, mermaid or json."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to FILE (.dot, .svg, .png).",
                                         show_default=False),
    show_saved: bool = typer.Option(False, "--saved", help="Show saved values' shapes on nodes."),
    json_: bool = JsonOpt, max_elements: Optional[int] = MaxElOpt, timeout: Optional[float] = TimeoutOpt,
    debug: bool = DebugOpt,
) -> None:
    opts = _options(source, file, leaf, grad, device, dtype, seed, json_, True, 4, max_elements, timeout, debug)

    def body():
        from .graph import run_graph
        return run_graph(opts, fmt=format, output=output, show_saved=show_saved)
    raise typer.Exit(_guard(opts, body))


@app.command("ops", help="List every function: name, method form, arity, the grad_fn it creates and its "
                         "derivative.")
def ops_cmd(json_: bool = JsonOpt) -> None:
    from .session import Options
    opts = Options(json=json_)

    def body():
        from .oplist import run_ops
        return run_ops(json_output=json_)
    raise typer.Exit(_guard(opts, body))


def main(argv=None) -> int:
    """Console entry point. Click usage errors keep exit code 2 and, under --json, a JSON document."""
    from typer._click import exceptions as click_exc
    argv = list(sys.argv[1:] if argv is None else argv)
    from .fastcli import run as run_fast
    rc = run_fast(app, argv)
    if rc is not None:
        return rc
    try:
        rc = app(args=argv, prog_name="gradcli", standalone_mode=False)
        return rc if isinstance(rc, int) else 0
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        print("aborted", file=sys.stderr)
        return 130
    except click_exc.ClickException as exc:
        if "--json" in argv:
            from . import render
            err = UsageError(exc.format_message())
            print(render.json_document(None, error=err))
        exc.show()
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
