"""The commands (SPEC §1) as plain functions, and the one table of their options.

``cli.py`` builds the typer application from :data:`COMMANDS` (help, ``--help``, shell-style
errors); :mod:`gradcli.cli.fast` binds plain command lines from the same table without
importing typer at all, which is what keeps ``gradcli eval`` within twice the start-up time of
``python -c "import numpy"``. Each command returns its exit code; every error becomes one
message on stderr (or the JSON document's ``error``) and the SPEC's exit code, never a
traceback unless ``--debug`` is given.
"""

from __future__ import annotations

import sys
from ..errors import GradcliError, UsageError

EXAMPLES = """
Examples:

  gradcli eval 'mean(x + temp + 2)' -l 'x=ones(2,2)' -g 'temp=zeros(2,2)'

  gradcli eval -f examples/seed0_variable.grad --json

  echo 'w = tensor([1., 2., 3.], requires_grad=True); d = mean(w)' | gradcli eval
"""


# -- the option table ------------------------------------------------------------------------------

class Opt:
    """One command-line parameter. ``name`` is the keyword the command function receives; an
    option without ``flags`` is the positional SOURCE. (A plain class: a dataclass costs
    start-up time for nothing here.)"""

    __slots__ = ("name", "flags", "type", "default", "help", "metavar", "envvar", "multiple", "hidden")

    def __init__(self, name: str, flags: tuple = (), type: type = str, default=None, help: str = "",
                 metavar: str | None = None, envvar: str | None = None, multiple: bool = False,
                 hidden: bool = False):
        self.name, self.flags, self.type, self.default, self.help = name, flags, type, default, help
        self.metavar, self.envvar, self.multiple, self.hidden = metavar, envvar, multiple, hidden


class Command:
    __slots__ = ("run", "help", "options")

    def __init__(self, run: str, help: str, options: tuple):
        self.run = run          # the function in this module
        self.help = help
        self.options = options  # names in OPTIONS, in --help order


def _opts(*opts: Opt) -> dict:
    return {o.name: o for o in opts}


OPTIONS = _opts(
    Opt("source", help="Program text: one expression or statements.", metavar="SOURCE"),
    Opt("file", ("-f", "--file"), metavar="FILE", help="Read the program from FILE ('-' for stdin)."),
    Opt("leaf", ("-l", "--leaf"), multiple=True, metavar="NAME=INIT",
        help="Declare a leaf before the program runs, e.g. -l 'x=ones(2,2)'."),
    Opt("grad", ("-g", "--grad"), multiple=True, metavar="NAME=INIT",
        help="Declare a leaf that requires grad, e.g. -g 'w=rand(3)'."),
    Opt("device", ("--device",), default="cpu", metavar="DEVICE", envvar="GRADCLI_DEVICE", help="cpu, cuda or cuda:N."),
    Opt("dtype", ("--dtype",), metavar="DTYPE",
        help="Default float dtype: float32 or float64 (default float32; check: float64)."),
    Opt("seed", ("--seed",), int, metavar="N", help="Seed for rand/randn."),
    Opt("json_", ("--json",), bool, False, help="Print one JSON document on stdout."),
    Opt("no_backward", ("--no-backward",), bool, False, help="Do not run backward automatically."),
    Opt("precision", ("--precision",), int, 4, metavar="N", help="Digits after the point when printing values."),
    Opt("max_elements", ("--max-elements",), int, metavar="N", help="Refuse tensors larger than this (default 2**28)."),
    Opt("timeout", ("--timeout",), float, metavar="SECONDS",
        help="Stop after this many seconds (exit 3); default 60, 0 for no limit."),
    Opt("max_memory", ("--max-memory",), metavar="BYTES",
        help="Refuse to hold more memory than this: arrays, lists, strings (default 4G or half the RAM; suffixes K, M, G)."),
    Opt("max_output", ("--max-output",), int, metavar="N",
        help="Refuse to print more than N characters, or a JSON document larger (default 16 MiB)."),
    Opt("max_program_size", ("--max-program-size",), int, metavar="BYTES",
        help="Refuse programs larger than this (default 10 MiB)."),
    Opt("max_statements", ("--max-statements",), int, metavar="N",
        help="Refuse programs with more statements than this (default 1,000,000)."),
    Opt("max_steps", ("--max-steps",), int, metavar="N",
        help="Stop after this many executed statements and loop iterations (default 10,000,000; exit 3)."),
    Opt("max_depth", ("--max-depth",), int, metavar="N",
        help="Stop when the program's functions nest deeper than this (default 1,000; exit 3)."),
    Opt("detect_anomaly", ("--detect-anomaly",), bool, False,
        help="Fail at the first backward node that returns NaN, naming it (torch.autograd.detect_anomaly)."),
    Opt("debug", ("--debug",), bool, False, hidden=True, help="Show Python tracebacks for internal errors."),
    Opt("eps", ("--eps",), float, 1e-6, metavar="E", help="Finite-difference step."),
    Opt("atol", ("--atol",), float, 1e-5, metavar="A", help="Absolute tolerance."),
    Opt("rtol", ("--rtol",), float, 1e-3, metavar="R", help="Relative tolerance."),
    Opt("format", ("--format",), default="tree", metavar="FORMAT", help="tree, dot, mermaid or json."),
    Opt("output", ("-o", "--output"), metavar="FILE",
        help="Write to FILE: .dot, .mmd, .json, or .svg/.png through Graphviz's dot."),
    Opt("root", ("--root",), multiple=True, metavar="NAME",
        help="Draw the graph of variable NAME (repeatable); default: the last value that requires grad."),
    Opt("of", ("--of",), metavar="NAME",
        help="Differentiate variable NAME instead of the last value."),
    Opt("wrt", ("--wrt",), multiple=True, metavar="NAME", help="Check only leaf NAME (repeatable)."),
    Opt("wide", ("--wide", "--full"), bool, False,
        help="One table with every column, however wide (default: the columns that fit, details below)."),
    Opt("show_saved", ("--show-saved", "--saved"), bool, False,
        help="Show the shapes of the values each node saved for backward."),
    # gradcli test (gradcli/cli/testing)
    Opt("paths", multiple=True, metavar="PATHS",
        help="Program files, and directories searched for *.grad files (default: the current directory)."),
    Opt("keyword", ("-k",), metavar="EXPR",
        help="Run the files whose path contains these words: -k 'hooks and not slow'."),
    Opt("jobs", ("-j", "--jobs"), int, metavar="N", help="Worker processes (default: the machine's cores)."),
    Opt("shard", ("--shard",), metavar="K/N", help="Run the K-th of N deterministic parts of the suite (CI matrices)."),
    Opt("junit_xml", ("--junit-xml",), metavar="FILE", help="Write a JUnit XML report for CI test reporters."),
    Opt("gradcheck", ("--gradcheck",), bool, False,
        help="Also compare each program's gradients with finite differences, as gradcli check does."),
    Opt("exitfirst", ("-x", "--exitfirst"), bool, False, help="Stop at the first failure or error."),
    Opt("test_seed", ("--seed",), int, metavar="N", help="Seed for rand/randn, the same for every file (default 0)."),
    Opt("test_timeout", ("--timeout",), float, 60.0, metavar="SECONDS",
        help="Time limit per file (an error; 0: none)."),
)

_PROGRAM = ("source", "file", "leaf", "grad", "device", "dtype", "seed", "no_backward", "precision")
_LIMITS = ("max_elements", "max_program_size", "max_statements", "max_steps", "max_depth", "timeout", "max_memory", "max_output",
           "detect_anomaly", "debug")

COMMANDS = {
    "eval": Command(
        "eval_command",
        "Evaluate a program, run backward, and print every variable's data, grad, grad_fn and "
        "next_functions." + EXAMPLES,
        _PROGRAM + ("of", "wide", "json_") + _LIMITS),
    "check": Command(
        "check_command",
        "Compare each leaf's analytic gradient of the last value (summed), or what the program's own "
        "backward() calls put in .grad, with central finite differences (in float64). Exit 0 when all "
        "agree, 1 otherwise.\n\n\b\nExample:\n"
        "  gradcli check 'sum(sin(x) * x)' -g 'x=rand(3)'",
        _PROGRAM + ("of", "wrt", "eps", "atol", "rtol", "json_") + _LIMITS),
    "graph": Command(
        "graph_command",
        "Draw the backward graph of the last value: a tree (default), DOT, Mermaid or JSON; -o writes "
        ".dot/.svg/.png.\n\n\b\nExample:\n"
        "  gradcli graph 'mean(x * w + 2)' -l 'x=ones(2,2)' -g 'w=rand(2,2)' --format dot",
        _PROGRAM + ("root", "format", "output", "show_saved", "json_") + _LIMITS),
    "ops": Command(
        "ops_command",
        "List every function: signature, arity (tensor inputs), method form or operator, the grad_fn it "
        "creates and its derivative formula per input.\n\n\b\nExample:\n  gradcli ops --json",
        ("json_",)),
    "test": Command(
        "test_command",
        "Run every *.grad program under PATHS, each in isolation, as a test: its asserts must hold (and, "
        "with --gradcheck, its gradients agree with finite differences). Exit 0 when all pass, 1 when one "
        "fails or has an error, 2 on bad usage or when no program is found.\n\n\b\nExamples:\n"
        "  gradcli test tests/grad -j 4 --junit-xml report.xml\n"
        "  gradcli test --shard 2/3 -k 'hooks and not slow' --gradcheck",
        ("paths", "keyword", "jobs", "shard", "junit_xml", "json_", "gradcheck", "exitfirst", "test_seed",
         "test_timeout", "dtype", "eps", "atol", "rtol", "max_elements", "max_program_size", "max_statements",
         "debug")),
}


def run(name: str, kwargs: dict) -> int:
    """Run command ``name`` with bound keyword arguments; its exit code."""
    return globals()[COMMANDS[name].run](**kwargs)


# -- shared plumbing -----------------------------------------------------------------------------

def options(source=None, file=None, leaf=None, grad=None, device="cpu", dtype=None, seed=None,
            json_=False, no_backward=False, precision=4, max_elements=None, timeout=None, debug=False,
            max_program_size=None, max_statements=None, detect_anomaly=False, max_memory=None,
            max_output=None, max_steps=None, max_depth=None, of=None, wide=False):
    from . import validate
    from .session import Options
    dtype = dtype or "float32"
    device = validate.device(device)  # garbage (control characters, a megabyte) first
    if not _known_device(device):
        _bad_device(device)
    if dtype not in ("float32", "float64"):
        raise UsageError(f"--dtype must be float32 or float64, not {dtype!r}")
    return Options(source=source, file=file, leaves=list(leaf or []), grads=list(grad or []),
                   device=device, dtype=dtype, seed=validate.seed(seed),
                   no_backward=no_backward, precision=precision,
                   max_elements=validate.positive("--max-elements", max_elements),
                   timeout=validate.timeout(timeout), json=json_, debug=debug,
                   max_program_size=validate.positive("--max-program-size", max_program_size),
                   max_statements=validate.positive("--max-statements", max_statements),
                   detect_anomaly=detect_anomaly, max_memory=validate.size("--max-memory", max_memory),
                   max_output=validate.positive("--max-output", max_output),
                   max_steps=validate.positive("--max-steps", max_steps),
                   max_depth=validate.positive("--max-depth", max_depth), of=of, wide=wide)


def _known_device(device) -> bool:
    """A device name gradcli knows (whether it is there is the backend's question, exit 3)."""
    name, _, index = (device or "cpu").partition(":")
    return (name in ("cpu", "cuda") and (not index or (index.isdigit() and name == "cuda"))) \
        or device == "array_api_strict"  # the tests' second array namespace


def _bad_device(device) -> None:
    """A malformed device string is bad input (exit 2), with torch's own wording from the backend."""
    from ..backend import get_backend
    from ..errors import DeviceError
    message = f"--device must be cpu, cuda or cuda:N, not {device!r}"
    try:
        get_backend(device)
    except DeviceError as err:
        message = err.message
    raise UsageError(message, hint="--device takes cpu, cuda or cuda:N")


def _with_options(body, **kwargs) -> int:
    """Build Options (a bad option is a usage error, reported like any other) and guard ``body``."""
    try:
        opts = options(**kwargs)
    except GradcliError as err:
        from .session import Options
        opts = Options(json=kwargs.get("json_", False))
        report(opts, err, None)
        return err.exit_code
    return guard(opts, lambda: body(opts))


def guard(opts, body) -> int:
    """Run ``body()``; map errors to messages and exit codes."""
    from .interrupts import guarded
    from .session import engine_state
    try:
        with engine_state(), guarded(opts.timeout):
            return body()
    except GradcliError as err:
        report(opts, err, getattr(err, "source_text", None))
        return err.exit_code
    except KeyboardInterrupt:
        return interrupted(opts.json)
    except MemoryError:  # an allocation no estimate foresaw: a limit, not a bug
        from ..errors import LimitError
        err = LimitError("out of memory: the run needs more memory than this machine (or its ulimit) allows",
                         hint="lower --max-memory so such runs are refused before they start")
        report(opts, err, None)
        return err.exit_code
    except BrokenPipeError:  # the reader went away (``| head``): nothing more can be said there
        from .fast import PipeClosed
        raise PipeClosed() from None
    except Exception as exc:  # a bug in gradcli: say so, without a traceback
        if opts.debug:
            raise
        err = GradcliError(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)")
        err.kind, err.exit_code = "internal", 3
        report(opts, err, None)
        return 3


def interrupted(json_output: bool) -> int:
    """Ctrl-C before any output: exit 130 with one line (and, under --json, one JSON document)."""
    err = GradcliError("interrupted")
    err.kind, err.exit_code = "interrupted", 130
    if json_output:
        from ..present import tables as render
        _quietly(lambda: print(render.json_document(None, error=err), flush=True))
    _quietly(lambda: print("interrupted", file=sys.stderr, flush=True))
    return 130


def _quietly(write) -> None:
    """A write whose failure (stderr on /dev/full, a closed pipe) must not change the exit code."""
    try:
        write()
    except (OSError, ValueError):
        pass


def report(opts, err, source_text) -> None:
    from ..present import tables as render
    if opts.json:
        print(render.json_document(None, device=opts.device, dtype=opts.dtype, error=err))
    _quietly(lambda: render.print_error(err, source_text))


# -- the commands --------------------------------------------------------------------------------

def _printer():
    """``print`` in a program: its text as it is, but on a terminal with control characters escaped
    (a program must not be able to clear, retitle or write the clipboard of the terminal)."""
    from ..present.tables import terminal_text
    return lambda text: print(terminal_text(text), flush=False)


def eval_command(**kwargs) -> int:
    def body(opts):
        from ..limits import settle
        from ..present import tables as render
        from . import session
        from .fast import keep_to_exit
        live = None if opts.json else _printer()
        src, program, interp, result = session.run(opts, on_print=live)
        keep_to_exit(program, interp)
        settle()  # from here on the output is written in full, whatever the alarm or Ctrl-C
        session.print_warnings(result, src)
        if opts.json:
            print(render.json_document(result, device=opts.device, dtype=opts.dtype, error=result.error))
            render.print_failed_checks(result)
            if result.error is not None:
                render.print_error(result.error, src.text)
        else:
            render.print_table(result, wide=opts.wide)
            render.print_notes(result)
            if result.error is not None:
                sys.stdout.flush()
                render.print_error(result.error, src.text)
        if result.error is not None:
            return result.error.exit_code
        return 1 if any(not c.passed for c in result.checks) else 0
    return _with_options(body, **kwargs)


def check_command(*, eps, atol, rtol, wrt=None, **kwargs) -> int:
    def body(opts):
        from .check import run_check
        return run_check(opts, eps=eps, atol=atol, rtol=rtol, wrt=wrt or ())
    kwargs["dtype"] = kwargs.get("dtype") or "float64"
    return _with_options(body, **kwargs)


def graph_command(*, format, output, show_saved, root=None, **kwargs) -> int:
    def body(opts):
        from .graph import run_graph
        return run_graph(opts, fmt=format, output=output, show_saved=show_saved, roots=root)
    return _with_options(body, **kwargs)


def ops_command(*, json_=False) -> int:
    from .session import Options

    def body():
        from ..present.catalog import run_ops
        return run_ops(json_output=json_)
    return guard(Options(json=json_), body)


def test_command(**kwargs) -> int:
    from .session import Options

    def body():
        from .testing.command import run_tests
        return run_tests(**kwargs)
    return guard(Options(json=kwargs.get("json_", False), debug=kwargs.get("debug", False)), body)
