"""Running one program file as ``gradcli test`` does, in isolation, inside the current process.

Each file goes through the same pipeline as ``gradcli eval -f FILE`` (:func:`gradcli.cli.session.run`:
read, configure the engine, parse, evaluate, automatic backward), inside
:class:`~gradcli.cli.session.engine_state` and ``--timeout``'s alarm, so every file starts from the
same engine state (grad mode on, anomaly mode off, default dtype, limits, print precision, the
random generator seeded with ``--seed``) whichever files ran before it in the process, and leaves
none behind. With ``--gradcheck`` the file is then checked as ``gradcli check -f FILE`` checks it
(:mod:`gradcli.cli.check`, in float64).

Outcomes, as pytest's: *passed*; *failed* (an ``assert`` did not hold, or a gradient differs from
finite differences); *error* (the file could not be read, a syntax error, an evaluation error, a
limit or the timeout). A failed assert whose test is a call shows the values it was called with
(``where: allclose(tensor([2., 4.]), tensor([3., 6.]))``), as pytest shows an assertion's operands.
The result holds only plain data, so that it pickles from a worker process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ...errors import GradcliError
from ...lang.evaluator import Evaluator, Observer

PASSED, FAILED, ERROR = "passed", "failed", "error"


@dataclass
class Settings:
    """What every file runs with (the command line's options, checked once)."""
    seed: int | None = None  # None: 0, unless the session reads a seed from the file itself
    timeout: float | None = 60.0
    dtype: str = "float32"
    gradcheck: bool = False
    eps: float = 1e-6
    atol: float = 1e-5
    rtol: float = 1e-3
    max_elements: int | None = None
    max_program_size: int | None = None
    max_statements: int | None = None
    debug: bool = False


class Problem:
    """One failure or error of a file: where, what, and the caret-style report for people."""

    __slots__ = ("kind", "line", "column", "message", "text", "where")

    def __init__(self, kind, line, column, message, text, where=None):
        self.kind, self.line, self.column, self.message, self.text = kind, line, column, message, text
        self.where = where  # a failed assert's call with its values, when its test is a call

    def record(self) -> dict:
        record = {"kind": self.kind, "line": self.line, "column": self.column, "message": self.message}
        if self.where is not None:
            record["where"] = self.where
        return record


class FileResult:
    """What happened to one file: its outcome, time, asserts, gradient checks and problems."""

    __slots__ = ("index", "path", "classname", "name", "outcome", "time", "checks", "gradcheck",
                 "failures", "error", "printed")

    def __init__(self, item):
        self.index, self.path, self.classname, self.name = item.index, item.display, item.classname, item.name
        self.outcome, self.time = PASSED, 0.0
        self.checks: list[dict] = []      # every assert: line, passed, message
        self.gradcheck: list[dict] = []   # with --gradcheck: one record per leaf (gradcli check's)
        self.failures: list[Problem] = []
        self.error: Problem | None = None
        self.printed: list[str] = []

    def record(self) -> dict:
        """The file's entry in ``--json``'s document."""
        return {"path": self.path, "outcome": self.outcome, "time": round(self.time, 6),
                "checks": self.checks, "gradcheck": self.gradcheck,
                "failures": [p.record() for p in self.failures],
                "error": None if self.error is None else self.error.record(), "printed": self.printed}


def run_file(item, settings: Settings) -> FileResult:
    """Run ``item``'s program (and its gradient check); never raises for anything the program does."""
    from ..session import engine_state
    res = FileResult(item)
    start = time.perf_counter()
    source = [None]  # the text, once read: error reports quote its lines
    try:
        with engine_state(), _time_limit(settings.timeout):
            _run(item, settings, res, source)
    except GradcliError as err:  # before the program ran (reading, parsing) or --timeout's alarm
        _error(res, err, source[0] or getattr(err, "source_text", None))
    except Exception as exc:  # a bug in gradcli: one file's error, not the end of the run
        if settings.debug:
            raise
        err = GradcliError(f"internal error: {type(exc).__name__}: {exc}")
        err.kind = "internal"
        _error(res, err, None)
    res.time = time.perf_counter() - start
    return res


def _time_limit(seconds):
    """``--timeout``'s alarm for one file, the one every command uses: ``cli.interrupts.guarded``
    where it exists (issue 17 replaces ``commands._Timeout`` with it), else ``commands._Timeout``."""
    try:
        from ..interrupts import guarded
    except ImportError:
        from ..commands import _Timeout as guarded
    return guarded(seconds)


def _run(item, settings: Settings, res: FileResult, source: list) -> None:
    from .. import session
    opts = _options(settings, file=item.path)
    prepared = session.prepare(opts)  # session.run's steps, with an observer added
    if opts.seed is None:  # neither --seed nor a header in the file set it: 0, for every file alike
        from ...ops.creation import manual_seed
        opts.seed = 0
        manual_seed(0)
    src = prepared.source
    source[0] = src.text
    operands = _AssertOperands()
    result = session.run_prepared(opts, prepared, Evaluator(observers=[operands]), configure_first=False)
    res.printed = list(result.printed)
    res.checks = [{"line": c.line, "passed": c.passed, "message": c.message} for c in result.checks]
    for c in result.checks:
        if not c.passed:
            message = "assertion failed" + (f": {c.message}" if c.message else "")
            _fail(res, "assert", c.line, None, message, src.text, operands.failed.get(c.line))
    if result.error is not None:
        err = result.error
        if err.kind == "check":  # an assert that stops the program (SPEC §1), unless counted above
            if not any(p.line == err.line for p in res.failures):
                _fail(res, "assert", err.line, err.column, err.message, src.text, operands.failed.get(err.line))
        else:
            _error(res, err, src.text)
        return
    if settings.gradcheck:
        _gradcheck(settings, res, src.text, opts.seed)


def _options(settings: Settings, **program):
    from ..commands import options
    return options(seed=settings.seed, dtype=settings.dtype, timeout=settings.timeout,
                   max_elements=settings.max_elements, max_program_size=settings.max_program_size,
                   max_statements=settings.max_statements, **program)


def _gradcheck(settings: Settings, res: FileResult, text: str, seed: int) -> None:
    """``gradcli check`` on the program (float64, no automatic backward); a mismatch is a failure,
    a program it cannot check (no leaf requires grad...) an error, as ``gradcli check`` exits 2."""
    from ..check import _check as check_program  # the body of `gradcli check`, without its printing
    from ..check import _float
    opts = _options(settings, source=text)
    opts.dtype, opts.no_backward, opts.seed = "float64", True, seed  # the seed the file ran with
    try:
        _, checks, _, _ = check_program(opts, settings.eps, settings.atol, settings.rtol)
    except GradcliError as err:
        err.message = f"gradcheck: {err.message}"
        _error(res, err, text)
        return
    res.gradcheck = [c.record() for c in checks]
    for c in checks:
        if not c.passed:
            where = f" (backward() on line{'s' if len(c.lines) > 1 else ''} {', '.join(map(str, c.lines))})" \
                if c.lines else ""
            worst = "" if c.worst is None else \
                f"; worst element {c.worst[0]}: analytic {c.worst[1]:.6g} vs numeric {c.worst[2]:.6g}"
            message = (f"gradcheck: the gradient of {c.name} differs from finite differences{where} "
                       f"(max abs error {_float(c.max_abs)}, max rel error {_float(c.max_rel)}){worst}")
            _fail(res, "gradcheck", c.lines[0] if c.lines else None, None, message, text)


def _fail(res: FileResult, kind, line, column, message, text, where=None) -> None:
    from ...errors import CheckFailed
    if column is None and line is not None and text is not None:
        lines = text.split("\n")
        if 1 <= line <= len(lines):  # the caret under the statement's first character
            column = len(lines[line - 1]) - len(lines[line - 1].lstrip()) + 1
    err = CheckFailed(message, line=line, column=column)
    report = _report("FAILED", res.path, err, text) + (f"\nwhere: {where}" if where else "")
    res.failures.append(Problem(kind, line, column, message, report, where))
    if res.outcome == PASSED:
        res.outcome = FAILED


def _error(res: FileResult, err: GradcliError, text) -> None:
    message = err.message if err.message.startswith(f"{err.kind} ") else f"{err.kind} error: {err.message}"
    res.error = Problem(err.kind, err.line, err.column, err.message,
                        _report("ERROR", res.path, err, text, message))
    res.outcome = ERROR


def _report(label: str, path: str, err: GradcliError, text, message=None) -> str:
    """``LABEL path:line:column: message`` and then the source line with a caret under the column
    and the hint, as ``gradcli eval`` writes an error (its own renderer, minus its first lines)."""
    from ...present.tables import error_text
    where = path if err.line is None else f"{path}:{err.line}" + (f":{err.column}" if err.column else "")
    body = error_text(err, text).split("\n")[1:]
    body = [line for line in body if not line.startswith("  --> ")]
    return "\n".join([f"{label} {where}: {message or err.message}"] + body)


class _AssertOperands(Observer):
    """Keeps, for an ``assert`` whose test is a call that returns false (``assert allclose(x.grad,
    2 * x)``), the call with its arguments' values, as pytest shows a failed assertion's operands:
    ``where: allclose(tensor([2., 4.]), tensor([3., 6.]))``. Values are written out only then, and
    at that moment (a later in-place update cannot change what is shown)."""

    def __init__(self):
        self.test = None
        self.failed: dict[int, str] = {}  # line -> the call with its values

    def before_statement(self, stmt):
        from ...lang.ast import Assert
        self.test = stmt.test if stmt.__class__ is Assert else None

    def on_call(self, fn, args, kwargs, node, call_next):
        out = call_next(fn, args, kwargs, node)
        if node is self.test and node is not None and not _truth(out):
            from ...lang.values import display
            shown = [display(a) for a in args] + [f"{k}={display(v)}" for k, v in kwargs.items()]
            self.failed[node.line] = f"{getattr(fn, '__name__', 'call')}({', '.join(shown)})"
        return out


def _truth(value) -> bool:
    from ...autograd.tensor import Tensor
    try:
        return bool(value.item()) if isinstance(value, Tensor) and value.numel() == 1 else bool(value)
    except Exception:  # the assert itself will say what is wrong with it
        return True
