"""One CLI invocation's pipeline, shared by every command: read the source,
configure the engine, parse, declare the command-line leaves, run.

Commands (``eval``, ``check``, ``graph``) differ only in what they do with the
``RunResult``; reading input and mapping failures to errors happens here once.
"""

from __future__ import annotations

import os
import sys

from ..errors import GradcliError, GradSyntaxError, UsageError


class _Record:
    """A plain record: keyword construction from ``_FIELDS`` and their defaults, ``repr`` and
    ``==`` as a dataclass gives (a dataclass costs ~1 ms of start-up per class for nothing here)."""

    __slots__ = ()
    _FIELDS: dict = {}

    def __init__(self, *args, **kwargs):
        names = list(self._FIELDS)
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes {len(names)} arguments")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in self._FIELDS or key in values:
                raise TypeError(f"{type(self).__name__}() got an unexpected or repeated argument {key!r}")
            values[key] = value
        for name, default in self._FIELDS.items():
            if name not in values:
                if default is _REQUIRED:
                    raise TypeError(f"{type(self).__name__}() missing argument {name!r}")
                values[name] = list(default) if isinstance(default, list) else default
            setattr(self, name, values[name])

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    __hash__ = None


_REQUIRED = object()


class Options(_Record):
    """A command's options, as bound from its command line."""

    _FIELDS = dict(
        source=None, file=None, leaves=[], grads=[], device="cpu", dtype="float32", seed=None,
        no_backward=False, precision=4, max_elements=None, max_program_size=None, max_statements=None,
        max_steps=None, max_depth=None, detect_anomaly=False, timeout=None, max_memory=None,
        max_output=None, json=False, debug=False,
        of=None,     # --of NAME: the value eval's auto-backward and check differentiate
        wide=False,  # --wide: every column in one table
    )
    __slots__ = tuple(_FIELDS)


class Source(_Record):
    _FIELDS = dict(text=_REQUIRED, name=_REQUIRED)
    __slots__ = tuple(_FIELDS)


def read_source(opts: Options, stdin=None) -> Source:
    """Exactly one of SOURCE, ``-f FILE`` (``-f -`` for stdin) or piped stdin."""
    from ..limits import DEFAULT_MAX_PROGRAM_BYTES, LIMITS
    if opts.max_program_size is not None and opts.max_program_size < 1:
        raise UsageError("--max-program-size must be a positive number of bytes")
    LIMITS.max_program_bytes = opts.max_program_size or DEFAULT_MAX_PROGRAM_BYTES
    stdin = stdin if stdin is not None else sys.stdin
    given = [x for x in (opts.source, opts.file) if x is not None]
    if len(given) > 1:
        raise UsageError("give the program either as SOURCE or with -f FILE, not both")
    if opts.source is not None:
        return Source(_check_text(opts.source, "SOURCE"), "<source>")
    if opts.file is not None:
        if opts.file == "-":
            return Source(_read_stream(stdin), "<stdin>")
        return Source(_read_file(opts.file), opts.file)
    if stdin is not None and not _isatty(stdin):
        text = _read_stream(stdin)
        if text:  # an empty, implicit stdin (a script's /dev/null) means no program was given
            return Source(text, "<stdin>")
    raise UsageError("no program given: pass SOURCE, -f FILE, or pipe a program on stdin",
                     hint="example: gradcli eval 'mean(x + 2)' -g 'x=ones(2,2)'")


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return True


def _read_stream(stream) -> str:
    buffer = getattr(stream, "buffer", None)
    try:
        if buffer is not None:
            data = buffer.read(_max_bytes() + 1)
        else:
            data = stream.read(_max_bytes() + 1)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the program from stdin ({exc})") from None
    if isinstance(data, str):
        return _check_text(data, "stdin")
    return _decode(data, "stdin")


def _max_bytes() -> int:
    from ..limits import LIMITS
    return LIMITS.max_program_bytes


def _too_large(where: str):
    return UsageError(f"{where} is larger than the program size limit of {_max_bytes():,} bytes",
                      hint="raise it with --max-program-size BYTES")


def _read_file(path: str) -> str:
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory, not a program file")
    try:
        with open(path, "rb") as fh:
            data = fh.read(_max_bytes() + 1)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    return _decode(data, path)


def _decode(data: bytes, where: str) -> str:
    if len(data) > _max_bytes():
        raise _too_large(where)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        looks = " (it looks like UTF-16)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise UsageError(f"{where} is not UTF-8 text{looks} (invalid byte at offset {exc.start})",
                         hint="save the program as UTF-8") from None
    return _check_text(text, where)


def _check_text(text: str, where: str) -> str:
    if len(text) > _max_bytes():
        raise _too_large(where)
    if "\x00" in text:
        raise UsageError(f"{where} contains NUL bytes: it looks like a binary file, not a program")
    return text.replace("\r\n", "\n").replace("\r", "\n")


class engine_state:
    """Saves the engine's process-wide settings (grad mode, anomaly mode, default dtype and
    device, limits, print precision, the random generator) and puts them back on exit, so that
    a command run in-process (tests, a notebook calling ``gradcli.cli.main``) leaves no trace."""

    def __enter__(self):
        from ..ops import creation
        from ..backend import dtypes
        from ..autograd import grad_mode
        from .. import limits
        from ..autograd.engine import ANOMALY
        from ..autograd.tensor import PRINT_OPTIONS
        L = limits.LIMITS
        self._saved = (grad_mode.STATE.enabled, ANOMALY.enabled, dtypes.DEFAULTS.float,
                       creation.DEFAULT_DEVICE[0], creation._RNG[0], PRINT_OPTIONS.precision,
                       L.max_elements, L.max_program_bytes, L.max_statements, L.max_memory, L.max_output,
                       L.itemsize, L.max_steps, L.max_depth)
        return self

    def __exit__(self, *exc):
        from ..ops import creation
        from ..backend import dtypes
        from ..autograd import grad_mode
        from .. import limits
        from ..autograd.engine import ANOMALY
        from ..autograd.tensor import PRINT_OPTIONS
        L = limits.LIMITS
        (grad_mode.STATE.enabled, ANOMALY.enabled, dtypes.DEFAULTS.float, creation.DEFAULT_DEVICE[0],
         creation._RNG[0], PRINT_OPTIONS.precision, L.max_elements, L.max_program_bytes,
         L.max_statements, L.max_memory, L.max_output, L.itemsize, L.max_steps, L.max_depth) = self._saved
        return False


def configure(opts: Options) -> None:
    """Set the engine's defaults for this run: dtype, device, seed, limits."""
    from ..ops import creation
    from ..backend import dtypes
    from ..autograd import grad_mode
    from .. import limits
    from ..autograd.tensor import PRINT_OPTIONS
    # Every run starts from the same engine state, also when several run in one process.
    from ..autograd.engine import ANOMALY
    grad_mode.STATE.enabled = True
    ANOMALY.enabled = bool(opts.detect_anomaly)
    limits.LIMITS.max_elements = limits.DEFAULT_MAX_ELEMENTS
    limits.LIMITS.max_statements = limits.DEFAULT_MAX_STATEMENTS
    limits.LIMITS.max_memory = opts.max_memory or limits.default_max_memory()
    limits.start_run()  # again at the program's first step; meanwhile -l/-g leaves count from here
    limits.LIMITS.max_output = opts.max_output or limits.DEFAULT_MAX_OUTPUT
    limits.LIMITS.itemsize = 8 if opts.dtype == "float64" else 4
    if opts.max_statements is not None:
        if opts.max_statements < 1:
            raise UsageError("--max-statements must be a positive integer")
        limits.LIMITS.max_statements = opts.max_statements
    for name in ("max_steps", "max_depth"):  # --max-steps, --max-depth
        value = getattr(opts, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be a positive integer")
        setattr(limits.LIMITS, name, value or getattr(limits, f"DEFAULT_{name.upper()}"))
    dtypes.set_default_dtype(opts.dtype)
    if opts.max_elements is not None:
        if opts.max_elements < 1:
            raise UsageError("--max-elements must be a positive integer")
        limits.LIMITS.max_elements = opts.max_elements
    if opts.precision < 0 or opts.precision > 30:
        raise UsageError("--precision must be between 0 and 30")
    PRINT_OPTIONS.precision = opts.precision
    if opts.seed is not None:
        creation.manual_seed(opts.seed)
    device = opts.device or "cpu"
    if device != "cpu":
        from ..backend import get_backend
        get_backend(device)  # fails early, with exit 3, if the device is not there
    creation.DEFAULT_DEVICE[0] = device


class Declaration(_Record):
    _FIELDS = dict(name=_REQUIRED, node=_REQUIRED, requires_grad=_REQUIRED, text=_REQUIRED, flag=_REQUIRED)
    __slots__ = tuple(_FIELDS)


def parse_declarations(opts: Options) -> list[Declaration]:
    from ..lang import parser
    from ..lang.ast import Assign
    decls = []
    for flag, specs, rg in (("--leaf", opts.leaves, False), ("--grad", opts.grads, True)):
        for spec in specs:
            name, eq, init = spec.partition("=")
            name = name.strip()
            if not eq or not name.isidentifier() or not init.strip():
                raise UsageError(f"{flag} expects NAME=INIT, e.g. {flag} 'x=ones(2,2)'; got {spec!r}")
            try:
                program = parser.parse(f"{name} = {init.strip()}", filename=f"{flag} {spec}")
            except GradSyntaxError as err:
                err.message = f"in {flag} {spec}: {err.message}"
                raise
            stmts = program.body
            if len(stmts) != 1 or not isinstance(stmts[0], Assign) or stmts[0].unpack:
                raise UsageError(f"{flag} expects one NAME=INIT, got {spec!r}")
            decls.append(Declaration(name, stmts[0].value, rg, spec, flag))
    return decls


class Prepared:
    """A program read and parsed once, with its ``-l``/``-g`` declarations, ready to run
    (``check`` runs one many times)."""

    __slots__ = ("source", "program", "decls")

    def __init__(self, source, program, decls):
        self.source, self.program, self.decls = source, program, decls


def prepare(opts: Options, stdin=None) -> Prepared:
    """Read, configure and parse. Errors raise, carrying the source where they have a line."""
    from ..lang import parser
    source = None
    try:
        source = read_source(opts, stdin)
        opts.source, opts.file = source.text, None
        if opts.seed is None:
            opts.seed = header_seed(source.text)
        configure(opts)
        _check_declarations_size(opts, source)
        decls = parse_declarations(opts)
        program = parser.parse(source.text, filename=source.name)
        _freeze_long_program(source.text)
        check_program_size(program, len(decls))
    except GradcliError as err:
        err.source_text = source.text if source is not None and err.line is not None else None
        raise
    return Prepared(source, program, decls)


# From this length on, the program's tree is frozen out of the cyclic collector's way once parsed.
FREEZE_MIN_CHARS = 100_000


def _freeze_long_program(text: str) -> None:
    """After a long program's parse (which pauses the collector), freeze what is alive -- its
    tree above all -- out of the cyclic collector's way, as start-up freezes what the imports
    made (``cli/fast.py``): the tree lives as long as the run and holds no cycles (refcounting
    frees it all the same), yet the first young collection after the parse would traverse every
    node (~0.1 s after a 100,000-term program, whose parse takes ~1.2 s), and each older one again."""
    if len(text) >= FREEZE_MIN_CHARS:
        import gc
        if gc.isenabled():
            gc.freeze()


def header_seed(text: str):
    """The seed a ``# gradcli: --seed N`` line in the program's first five lines asks for (the
    examples' header), else None. Only ``--seed`` is read there: a program file sets no limits,
    devices or other options; ``--seed`` on the command line wins."""
    import re
    for line in text.split("\n", 5)[:5]:
        match = re.fullmatch(r"#\s*gradcli:\s*--seed[ =](\d+)\s*", line.strip())
        if match:
            return int(match.group(1))
    return None


def run_prepared(opts: Options, prepared: Prepared, interp, configure_first: bool = True):
    """Run a prepared program in ``interp`` (from a fresh engine state unless the caller has
    just configured it); its RunResult, errors in the program in ``result.error`` with the source."""
    if configure_first:
        configure(opts)
    result = execute(interp, prepared.decls, prepared.program)
    if result.error is not None:
        result.error.source_text = prepared.source.text
    return result


def run(opts: Options, on_print=None, stdin=None):
    """Read, configure, parse and run. Returns ``(source, program, interpreter, result)``.

    Errors before the program runs raise; errors while it runs land in ``result.error``.
    """
    from ..lang.evaluator import Evaluator
    prepared = prepare(opts, stdin)
    interp = Evaluator(on_print=on_print, auto_backward=not opts.no_backward and not opts.of)
    result = run_prepared(opts, prepared, interp, configure_first=False)
    if opts.of and not opts.no_backward and result.error is None:
        _with_numpy_quiet(lambda: backward_of(opts.of, interp, result))
    if not prepared.program.body and result.note is None:
        result.note = "the program is empty: nothing to evaluate"
    return prepared.source, prepared.program, interp, result


def backward_of(name: str, interp, result) -> None:
    """``eval --of NAME``: the auto-backward from variable NAME instead of the last value."""
    from ..autograd.tensor import Tensor
    value = interp.env.get(name)
    if not isinstance(value, Tensor):
        what = "is not a tensor" if name in interp.env else "is not a variable of the program"
        raise UsageError(f"--of {name}: {name} {what}")
    if interp.explicit_backward:
        result.note = f"--of {name} was not used: the program runs backward itself"
    elif not value.requires_grad:
        result.note = f"{name} does not require grad, so backward was not run"
    elif value.numel() != 1:
        result.note = (f"{name} has shape {list(value.shape)}, so backward was not run: gradients are implicit "
                       f"only for one-element tensors. Reduce it (sum(), mean()) or pass a gradient: "
                       f"{name}.backward(ones_like({name}))")
    else:
        try:
            value.backward()
        except GradcliError as err:
            result.error = err
            err.source_text = None
            return
        result.backward = "auto"


def execute(interp, decls, program):
    """Bind the ``-l``/``-g`` leaves, then run the program; its RunResult. A bad declaration
    raises (naming the option); errors in the program land in ``result.error``."""
    for d in decls:
        try:
            interp.run_statement_source(d.name, d.node, d.requires_grad, f"{d.flag} {d.text}")
        except GradcliError as err:
            err.message = f"in {d.flag} {d.text}: {err.message}"
            err.line = err.column = None
            raise
    caught = []
    result = _with_numpy_quiet(lambda: interp.run(program), lambda w: caught.append((w, interp.last_stmt)))
    result.warnings = _program_warnings(caught)
    return result


def _check_declarations_size(opts: Options, source: Source) -> None:
    """``-l``/``-g`` are part of the program: their text counts toward --max-program-size (their
    statements toward --max-statements, in :func:`check_program_size`)."""
    extra = sum(len(spec) for spec in opts.leaves) + sum(len(spec) for spec in opts.grads)
    if extra and len(source.text) + extra > _max_bytes():
        raise UsageError(f"the program and its -l/-g declarations are larger than the program size limit of "
                         f"{_max_bytes():,} bytes", hint="raise it with --max-program-size BYTES")


def check_program_size(program, declarations: int = 0) -> None:
    """The number of statements, ``blocks' bodies and ``-l``/``-g`` declarations included
    (counted without recursion)."""
    from ..lang.ast import For, FunctionDef, If, While, With
    from ..limits import check_statements
    count, stack = declarations, [program.body]
    while stack:
        body = stack.pop()
        count += len(body)
        for stmt in body:
            if isinstance(stmt, (With, For, While, FunctionDef, If)):
                stack.append(stmt.body)
                if isinstance(stmt, If):
                    stack.append(stmt.orelse)
    check_statements(count)


def _with_numpy_quiet(fn, on_warning=None):
    """NumPy warns on log(0), 0/0... (floating-point errors) and on the mean or variance of an empty
    slice (Python RuntimeWarnings); torch returns inf/nan silently, and so do we. torch's own
    UserWarnings (``.grad`` of a non-leaf...) go to ``on_warning`` instead of Python's stderr."""
    import warnings

    import numpy as np
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if on_warning is not None:
            warnings.simplefilter("always", UserWarning)
            warnings.showwarning = lambda message, *rest, **kw: on_warning(message)
        return fn()


def _program_warnings(caught) -> list:
    """``(line, category, message)`` per warning the program raised, at the line of the statement
    that raised it; repeats at one line once, as Python's default filter shows them."""
    out, seen = [], set()
    for message, stmt in caught:
        item = (getattr(stmt, "line", None), type(message).__name__, str(message))
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def print_warnings(result, source) -> None:
    """On stderr, as Python prints a warning: ``FILE:LINE: UserWarning: message`` and the line."""
    from ..present.tables import print_diagnostic
    lines = source.text.splitlines()
    for line, category, message in getattr(result, "warnings", ()):
        text = f"{source.name}:{line}: {category}: {message}"
        if line is not None and 0 < line <= len(lines):
            text += f"\n  {lines[line - 1].strip()}"
        print_diagnostic(text)
