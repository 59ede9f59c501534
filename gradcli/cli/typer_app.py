"""The ``gradcli`` command line (SPEC §1): eval, check, graph, ops.

The typer application is built from the option table in :mod:`gradcli.cli.commands`, so that
``--help``, shell completion-style parsing and usage errors come from typer, while
:func:`main` first offers the command line to :mod:`gradcli.cli.fast`, which binds plain
command lines from the same table without importing typer (start-up is part of the product).
"""

from __future__ import annotations

import inspect
import sys
from typing import List, Optional

import typer

from . import commands
from .commands import COMMANDS, EXAMPLES, OPTIONS
from ..errors import UsageError

app = typer.Typer(
    add_completion=True, rich_markup_mode="rich", pretty_exceptions_enable=False,
    no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]},
    help="See and check automatic differentiation from a terminal: PyTorch's autograd, "
         "as tables, JSON and graphs." + EXAMPLES.replace("\n\n", "\n\n\b\n", 1),
)


def _version(value: bool) -> None:
    if value:
        from .._version import __version__
        print(f"gradcli {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(version: Optional[bool] = typer.Option(None, "--version", "-V", callback=_version, is_eager=True,
                                                 help="Print gradcli's version and exit.")) -> None:
    """See and check automatic differentiation from a terminal."""


def _parameter(opt) -> inspect.Parameter:
    """A typer parameter (default and annotation) for one row of the option table."""
    if not opt.flags:
        info = typer.Argument(opt.default, metavar=opt.metavar, help=opt.help, show_default=False)
    else:
        info = typer.Option(opt.default, *opt.flags, help=opt.help, metavar=opt.metavar, envvar=opt.envvar,
                            hidden=opt.hidden, show_default=opt.default is not None and opt.type is not bool)
    annotation = List[opt.type] if opt.multiple else opt.type
    if opt.default is None:
        annotation = Optional[annotation]
    return inspect.Parameter(opt.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=info,
                             annotation=annotation)


def _register(name: str, command) -> None:
    params = [_parameter(OPTIONS[o]) for o in command.options]

    def callback(**kwargs) -> None:
        raise typer.Exit(commands.run(name, kwargs))

    callback.__name__ = f"{name}_cmd"
    callback.__signature__ = inspect.Signature(params)
    callback.__annotations__ = {p.name: p.annotation for p in params}
    app.command(name, help=command.help)(callback)


for _name, _command in COMMANDS.items():
    _register(_name, _command)


def main(argv=None) -> int:
    """The whole command line: the fast path where it applies, else typer (see gradcli.cli.fast)."""
    from .fast import main as fast_main
    return fast_main(argv)


def _pipe_errors_propagate() -> None:
    """Rich (typer's help) ends a closed pipe with its own ``exit 1``; let the BrokenPipeError
    through instead, so that the closed pipe ends with 141 as everywhere else."""
    from rich.console import Console

    def on_broken_pipe(self):
        raise BrokenPipeError(32, "Broken pipe")
    Console.on_broken_pipe = on_broken_pipe


def typer_main(argv: list[str]) -> int:
    """Parse with typer. Click usage errors keep exit code 2 and, under --json, a JSON document."""
    from typer._click import exceptions as click_exc
    _pipe_errors_propagate()
    try:
        rc = app(args=argv, prog_name="gradcli", standalone_mode=False)
        return rc if isinstance(rc, int) else 0
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:  # click's own closed-pipe handling ends in sys.exit(1)
        from typer._click.utils import PacifyFlushWrapper
        if isinstance(sys.stdout, PacifyFlushWrapper):
            from .fast import pipe_closed
            return pipe_closed()
        raise
    except typer.Abort:
        print("aborted", file=sys.stderr)
        return 130
    except click_exc.ClickException as exc:
        if "--json" in argv:
            from ..present import tables as render
            print(render.json_document(None, error=UsageError(exc.format_message())))
        exc.show()
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(typer_main(sys.argv[1:]))
