"""The entry point, and a start-up fast path for well-formed command lines.

Importing typer and building its click command costs ~20 ms (and ~70 ms more where typer
validates parameters through pydantic), more than evaluating a small program. Start-up is part
of the product (issue 16: the seed example within 1.5x ``python -c "import numpy"``, 1.3x with
``--json``; ``benchmarks/bench_startup.py --installed``), so
:func:`main` first binds the command line itself from the option table in
:mod:`gradcli.cli.commands`, the same table the typer application is built from.

Anything it is not sure about (help, an unknown or malformed option, a value that does not
convert, an option given twice that is not a list) goes to typer, with its own messages and
exit codes.
"""

from __future__ import annotations

import os
import sys


def parse(command, args: list[str]):
    """Keyword arguments for ``command`` (a :class:`gradcli.cli.commands.Command`) from ``args``, or
    None to let typer decide."""
    from .commands import OPTIONS
    opts = [OPTIONS[name] for name in command.options]
    values = {o.name: o.default for o in opts}
    flags = {flag: o for o in opts for flag in o.flags}
    positionals = [o for o in opts if not o.flags]
    given, rest, i = set(), [], 0
    try:
        for o in opts:
            if o.envvar and os.environ.get(o.envvar):
                values[o.name] = o.type(os.environ[o.envvar])
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                rest.extend(args[i:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            flag, eq, inline = arg.partition("=")
            o = flags.get(flag)
            if o is None:
                return None  # -h, --help, unknown options, bundled short flags: typer's job
            if o.type is bool:
                if eq:
                    return None
                values[o.name] = True
            else:
                if not eq:
                    if i >= len(args):
                        return None
                    inline, i = args[i], i + 1
                value = o.type(inline)
                if o.multiple:
                    values[o.name] = (values[o.name] or []) + [value]
                elif o.name in given:
                    return None
                else:
                    values[o.name] = value
            given.add(o.name)
        if positionals and positionals[-1].multiple:  # PATHS...: the last positional takes the rest
            *single, last = positionals
            rest, values[last.name] = rest[:len(single)], [last.type(t) for t in rest[len(single):]] or None
            positionals = single
        if len(rest) > len(positionals):
            return None
        for o, text in zip(positionals, rest):
            values[o.name] = o.type(text)
    except ValueError:
        return None
    return values


def run(argv: list[str]):
    """The exit code of ``argv`` run through the fast path, or None to let typer run it."""
    if argv in (["--version"], ["-V"]):
        from .._version import __version__
        print(f"gradcli {__version__}")
        return 0
    from . import commands
    command = commands.COMMANDS.get(argv[0]) if argv else None
    if command is None:
        return None
    kwargs = parse(command, argv[1:])
    if kwargs is None:
        return None
    _preload(argv[0], kwargs)
    return commands.run(argv[0], kwargs)


def resume_gc() -> None:
    """Turn the cyclic garbage collector back on where start-up paused it (``gradcli/__init__.py``
    does, in the ``gradcli`` process, for the imports), freezing what the imports made out of its
    way: the program itself runs with the collector on as usual. Only for the command's own
    process (:func:`main` without ``argv``): a host that calls ``main(argv)`` keeps its own
    collector settings. Idempotent."""
    if _STARTING[0]:
        _STARTING[0] = False
        import gc
        if not gc.isenabled():
            gc.enable()
            gc.freeze()


_STARTING = [False]  # main() of the command's own process, until resume_gc()
_KEPT: list = []  # what keep_to_exit keeps; [None] first: the process ends at once (command())


def keep_to_exit(*objects) -> None:
    """Keep ``objects`` (a program's tree, its evaluator with the graph) alive until the process
    ends, where it ends at once (:func:`command`): freeing them one by one when the command's
    function returns would only cost time (~60 ms after a 100,000-term program). Anywhere else (a
    host calling :func:`main`, the tests) nothing is kept."""
    if _KEPT:
        _KEPT.append(objects)


def _preload(name: str, kwargs: dict) -> None:
    """Import what a program-running command will need with the cyclic garbage collector
    paused, then freeze those objects out of its way. Imports allocate only long-lived objects
    (modules, classes, functions), so collecting during them is pure cost (~10 ms of a start);
    the program itself runs with the collector on as usual."""
    if name not in ("eval", "check", "graph", "test"):
        resume_gc()
        return
    import gc
    enabled = gc.isenabled()
    gc.disable()
    try:
        from ..lang import evaluator  # noqa: F401
        from ..present import tables as render  # noqa: F401
        from . import session  # noqa: F401
        from ..lang import parser
        parser.preload()  # the fast path's cached tables, or lark where there are none
        # rich is not preloaded: most tables are drawn without it (gradcli.present.plain_table)
    except ImportError:  # let the command report it
        pass
    finally:
        if enabled:
            gc.enable()
            gc.freeze()
        resume_gc()


def main(argv=None) -> int:
    """Console entry point (``gradcli`` and ``python -m gradcli``)."""
    from .interrupts import STATE, give_sigint, hold, release, take_sigint
    as_command = argv is None
    _STARTING[0] = as_command
    argv = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):  # a character the encoding lacks (latin-1) as an escape
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
    old_sigint, old_stderr = take_sigint(), sys.stderr
    sys.stderr = _Diagnostics(old_stderr)
    try:
        try:
            rc = _main(argv)
        except KeyboardInterrupt:  # before a command took over (start-up)
            from .commands import interrupted
            hold()
            rc = interrupted("--json" in argv)
        if as_command:
            _flush(sys.stdout)  # the output complete while SIGINT is held back
        release(keep_held=as_command)
        # Ctrl-C while the output was being written: it was finished, then the process says so
        return 130 if STATE.interrupted and rc is not None and rc < 128 else rc
    finally:
        sys.stderr = old_stderr
        give_sigint(old_sigint)


def command() -> None:
    """The ``gradcli`` console script and ``python -m gradcli``: :func:`main`, then, stdout and
    stderr flushed, the process ends at once with its status (``os._exit``). The interpreter's
    teardown -- freeing every object the program made, one by one, and a full collection among
    them -- is skipped: ~0.3 s after a 100,000-term program, a few ms after a short one. Nothing
    of gradcli's needs it: the commands write and close their files themselves, and no atexit
    handler is registered. (A host calling :func:`main` keeps its own exit.) What the command
    hands :func:`keep_to_exit` is not freed either."""
    _KEPT.append(None)
    rc = main()
    for stream in (sys.stdout, sys.stderr):
        _flush(stream)
    os._exit(0 if rc is None else rc if rc.__class__ is int else 1)


def _flush(stream) -> None:
    try:
        stream.flush()
    except (OSError, ValueError):
        pass


class _Diagnostics:
    """stderr, best effort: a message that cannot be written (stderr on a full disk, /dev/full, a
    closed pipe) is dropped instead of turning the run's exit code into another."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except (OSError, ValueError):
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _main(argv: list[str]) -> int:
    try:
        try:
            rc = run(argv)
        finally:
            resume_gc()  # in case the fast path stopped before the command (typer's turn, --version)
        if rc is not None:
            return rc
        from .typer_app import typer_main
        return typer_main(argv)
    except (BrokenPipeError, PipeClosed):
        return pipe_closed()


class PipeClosed(Exception):
    """The reader of stdout went away. Not an OSError, so that click (the typer path) does not
    turn it into its own ``exit 1``."""


def pipe_closed() -> int:
    """The reader closed the pipe (``gradcli ops --json | head -c 1``): end quietly, with the
    status of a process that SIGPIPE ended (128 + 13), as ``yes | head`` does, so that a
    ``set -o pipefail`` script sees the same thing as with any other producer, and never 1 (a
    failed check). Output still buffered goes to /dev/null, so that the flush at exit does not
    fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass
    return PIPE_STATUS


PIPE_STATUS = 141
