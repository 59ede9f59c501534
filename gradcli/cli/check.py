"""``gradcli check``: analytic gradients against central finite differences.

The program is parsed once and run in float64 (random constructors seeded with ``--seed``,
else 0, so that every run sees the same values), first once as written, then twice more per
element of every leaf it checks, with that element moved by ``+eps`` and ``-eps``.

Which leaves: every tensor that requires grad and is a leaf when a name is bound to it (``-g``
declarations, ``w = tensor([...], requires_grad=True)``), or when a named leaf is made to
require grad (``x.requires_grad_()``). Leaves are known by the order in which that happens, so
each run finds "the same" leaf; the perturbation is applied at that moment, before the program
uses the new leaf, so values computed from it earlier stay constants, as for autograd.

What is differentiated, and the analytic gradient it is compared with:

- A program that never calls ``backward`` (``autograd.grad`` calls are part of computing its
  values, e.g. for second derivatives): the last value, summed when it is not a scalar. "The
  last value" is that of the last statement that produced a tensor (print, assert, del and
  calls returning None are skipped). After the run, check calls ``backward`` on it with a
  gradient of ones (as eval's auto-backward would for a scalar) and compares each leaf's
  ``.grad`` (zeros where None) with ``(f(x+eps) - f(x-eps)) / 2eps``, ``f`` the sum of the last
  value. Hooks take part, so a hook that changes a gradient makes the check fail.
- A program that calls ``backward`` itself: what those calls put in each leaf's ``.grad``. Each
  call ``root.backward(gradient)`` accumulates the gradient of ``sum(root * gradient)`` (of
  ``root`` for a one-element root without a gradient), with the roots' values as computed at
  the call and ``gradient`` a constant; ``inputs=`` limits the leaves it counts for. For each
  leaf the analytic gradient is its ``.grad`` right after the last call that counts for it,
  minus what ``.grad`` held before the first call that counts; a call counts from the last time
  the program reset ``.grad`` (``zero_()``, or any change made outside ``backward``) before it.
  The numeric gradient is the finite difference of the sum of those calls' values. Each run
  starts from scratch, so gradients never leak between runs.

  Values computed after a leaf's data was changed in place (an SGD step ``w.data.sub_(...)``)
  are differentiated with respect to the leaf's initial value, which is what finite
  differences measure: check one step, not a training loop.

A leaf passes when every element satisfies ``|analytic - numeric| <= atol + rtol * |numeric|``
(``numpy.allclose``'s rule). The program's own asserts (from the first run) are reported as
eval reports them, and a failed one makes the exit code 1 as well.
"""

from __future__ import annotations

import sys
from functools import lru_cache

from ..autograd.tensor import Tensor
from ..autograd.views import edgeless
from ..errors import GradcliError, GradTypeError, LimitError, UsageError
from ..lang.evaluator import Evaluator
from ..lang.sandbox import BUILTINS, TENSOR_METHODS
from .graph import Tracer

MAX_EVALUATIONS = 200_000
# A leaf with more elements is checked on an evenly spaced sample of this many (first and last
# included), and the output says so: 2 runs of the program per element checked.
MAX_CHECKED_ELEMENTS = 1_000


class LeafCheck:
    __slots__ = ("name", "shape", "dtype", "max_abs", "max_rel", "passed", "analytic", "numeric", "worst", "lines",
                 "sampled", "calls", "why")

    def __init__(self, name, shape, dtype, analytic, numeric, atol, rtol, indices=None):
        """``indices``: the flat indices of the elements compared, when only a sample was."""
        import numpy as np
        self.name, self.shape, self.dtype = name, shape, dtype
        self.analytic, self.numeric = analytic, numeric
        self.lines = None  # the lines of the backward() calls checked (explicit mode)
        self.sampled = None if indices is None else len(indices)
        self.calls = []    # their (line, column), first first
        self.why = None    # a known reason finite differences disagree (see explain.py)
        a, n = analytic.reshape(-1), numeric.reshape(-1)
        if indices is not None:
            a = a[indices]
        with np.errstate(all="ignore"):
            diff = np.abs(a - n)
            diff[np.isnan(diff)] = np.inf     # a NaN on either side, or infinities of opposite signs
            diff[a == n] = 0.0                # equal infinities (a NaN fails, as in torch.allclose)
            rel = np.where(diff == 0, 0.0, diff / np.abs(n))
            rel[np.isnan(rel)] = np.inf
            ok = (diff == 0) | (np.isfinite(diff) & (diff <= atol + rtol * np.abs(n)))
            self.passed = bool(np.all(ok))
        if a.size:
            k = int(np.argmax(diff))
            self.max_abs, self.max_rel = float(diff[k]), float(np.max(rel))
            flat = k if indices is None else int(indices[k])
            self.worst = (list(int(i) for i in np.unravel_index(flat, shape)) if shape else [], float(a[k]), float(n[k]))
        else:
            self.max_abs = self.max_rel = 0.0
            self.worst = None

    def record(self) -> dict:
        worst = None if self.worst is None else \
            {"index": self.worst[0], "analytic": _num(self.worst[1]), "numeric": _num(self.worst[2])}
        record = {"leaf": self.name, "shape": self.shape, "max_abs_error": _num(self.max_abs),
                  "max_rel_error": _num(self.max_rel), "passed": self.passed, "worst": worst}
        if self.lines is not None:
            record["backward_lines"] = self.lines
        if self.sampled is not None:
            record["elements_checked"] = self.sampled
        if self.why:
            record["why"] = self.why
        return record


def _num(x: float):
    import math
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _float(x) -> str:
    import math
    return "nan" if math.isnan(x) else "inf" if math.isinf(x) else f"{x:.3e}"


# -- watching the runs: leaves, perturbations, backward calls ------------------------------------------------------

class BackwardCall:
    """One ``backward`` call of the program: its line, the value whose gradient it accumulates
    (``sum(root * gradient)`` over its roots, at the call), and the leaves ``inputs=`` limits it to."""

    __slots__ = ("line", "value", "inputs", "column")

    def __init__(self, line, value, inputs, column=None):
        self.line, self.value, self.inputs, self.column = line, value, inputs, column


class LeafState:
    """The main run's account of one leaf's ``.grad`` across backward calls (explicit mode)."""

    __slots__ = ("baseline", "counted", "snapshot")

    def __init__(self):
        self.baseline = None   # .grad before the first counted call (None: nothing)
        self.counted = []      # indices of the calls that count for this leaf
        self.snapshot = None   # .grad right after the last call (None: it was None)


class Checker(Tracer):
    """Watches a run (an :class:`~gradcli.lang.evaluator.Observer`; a :class:`Tracer`, for the
    last value): numbers the leaves to check as they appear, moves one element of one of them
    (``perturb = (leaf number, flat index, delta)``) at that moment, and records the program's
    backward calls; with ``track_grads`` also each leaf's ``.grad`` around them."""

    def __init__(self, perturb=None, track_grads=False, situations=None):
        super().__init__()
        self.situations = situations  # an explain.Situations (the main run only)
        self.perturb = perturb
        self.track_grads = track_grads
        self.leaves: list[tuple[str, Tensor]] = []
        self.leaf_lines: list[int | None] = []  # where each became a leaf to check (None: -g)
        self.states: list[LeafState] = []
        self.calls: list[BackwardCall] = []
        self._seen: set[int] = set()
        self._named: dict[int, tuple[Tensor, str]] = {}  # floating leaves bound before requiring grad
        self._line = None

    def before_statement(self, stmt):
        super().before_statement(stmt)
        self._line = stmt.line

    def on_bind(self, name, value):
        super().on_bind(name, value)
        if value.__class__ is Tensor and value.grad_fn is None and id(value) not in self._seen:
            if value._requires_grad and not edgeless(value):
                self._add_leaf(name, value)
            elif id(value) not in self._named and value.dtype.is_floating_point:
                self._named[id(value)] = (value, name)

    def _add_leaf(self, name, t):
        self._seen.add(id(t))
        number = len(self.leaves)
        self.leaves.append((name, t))
        self.leaf_lines.append(self._line)
        if self.track_grads:
            self.states.append(LeafState())
        if self.perturb is not None and self.perturb[0] == number:
            _nudge(t, self.perturb[1], self.perturb[2])

    def on_call(self, fn, args, kwargs, node, call_next):
        if self.situations is not None:
            self.situations.on_call(fn, args, kwargs, getattr(node, "line", None) or self._line)
        if fn is TENSOR_METHODS["requires_grad_"]:
            out = call_next(fn, args, kwargs, node)
            t = args[0] if args else None
            entry = self._named.get(id(t))
            if entry is not None and entry[0] is t and t._requires_grad and t.grad_fn is None \
                    and id(t) not in self._seen:
                self._add_leaf(entry[1], t)
            return out
        if fn is TENSOR_METHODS["backward"] or fn is BUILTINS["backward"]:
            call = self._describe(fn, args, kwargs, node)
            if call is None:  # arguments it may refuse: let it say so; if it does not, say so later
                out = call_next(fn, args, kwargs, node)
                self.calls.append(BackwardCall(getattr(node, "line", None) or self._line, None, None))
                return out
            before = self._grads() if self.track_grads else None
            out = call_next(fn, args, kwargs, node)
            self.calls.append(call)
            if self.track_grads:
                self._account(call, before)
            return out
        return call_next(fn, args, kwargs, node)

    def _describe(self, fn, args, kwargs, node):
        import numpy as np
        try:
            bound = _signature(fn).bind(*args, **kwargs)
        except TypeError:
            return None
        a = bound.arguments
        roots = a.get("self", a.get("tensors"))
        gradient = a.get("gradient")
        if gradient is None:
            gradient = a.get("grad_tensors")
        roots = list(roots) if isinstance(roots, (list, tuple)) else [roots]
        if gradient is None:
            gradients = [None] * len(roots)
        else:
            gradients = list(gradient) if isinstance(gradient, (list, tuple)) else [gradient]
        if len(gradients) != len(roots) or not all(isinstance(r, Tensor) for r in roots):
            return None
        value = 0.0
        for r, g in zip(roots, gradients):
            if g is None:
                value += float(np.sum(_host(r)))
            elif isinstance(g, (int, float)) and r.numel() == 1:
                value += float(g) * float(np.sum(_host(r)))
            elif isinstance(g, Tensor) and g.shape == r.shape:
                value += float(np.sum(_host(r) * _host(g)))
            else:
                return None
        inputs = a.get("inputs")
        if inputs is not None:
            inputs = {id(t) for t in (inputs if isinstance(inputs, (list, tuple)) else [inputs])}
        return BackwardCall(getattr(node, "line", self._line) or self._line, value, inputs,
                            getattr(node, "column", None) or 1)

    def _grads(self):
        return [None if t._grad is None else _host(t._grad) for _, t in self.leaves]

    def _account(self, call, before):
        index = len(self.calls) - 1
        after = self._grads()
        for (_, t), state, b, g in zip(self.leaves, self.states, before, after):
            if not _same(b, state.snapshot):  # the program reset or changed .grad since
                state.baseline, state.counted = b, []
            if call.inputs is None or id(t) in call.inputs:
                state.counted.append(index)
            state.snapshot = g


def _checking_run(perturb=None, track_grads=False, situations=None):
    """A :class:`Checker` and the evaluator it watches."""
    checker = Checker(perturb, track_grads, situations)
    return checker, Evaluator(auto_backward=False, observers=[checker])


@lru_cache(maxsize=None)
def _signature(fn):
    """The signature that a backward call's arguments bind to (Tensor.backward's, or the
    backward() function's)."""
    import inspect
    return inspect.signature(fn)


def _host(t):
    import numpy as np
    return np.array(t._backend.to_host(t._data), dtype=np.float64)


def _same(a, b) -> bool:
    import numpy as np
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def _nudge(t, flat_index: int, delta: float) -> None:
    """Move one element of ``t`` in place (views of it see the change, as they would in torch)."""
    import numpy as np
    data = t._data
    index = tuple(int(i) for i in np.unravel_index(flat_index, tuple(data.shape)))
    try:
        if not getattr(getattr(data, "flags", None), "writeable", True):
            raise ValueError("read-only")
        data[index] = data[index] + delta
    except (ValueError, TypeError, AttributeError):  # a read-only or immutable array: replace it
        backend = t._backend
        copy = np.array(backend.to_host(data), copy=True)
        copy[index] += delta
        t._data = backend.from_host(copy)


# -- the command ---------------------------------------------------------------------------------

class Plan:
    """What the checks measure, decided by the first run."""

    __slots__ = ("explicit", "description", "counted", "where", "source", "of")

    def __init__(self, explicit, description, counted, where=(None, None), source=None, of=None):
        self.explicit, self.description, self.counted, self.of = explicit, description, counted, of
        self.where = where    # (line, column) of the value differentiated (implicit mode)
        self.source = source  # the program's text, for the caret under that position

    def value_tensor(self, checker):
        """The tensor differentiated in a run (implicit mode)."""
        return checker.values.get(self.of) if self.of else checker.last_tensor

    def position(self, check):
        """Where a failed leaf's gradient comes from: its first backward() call, or the value."""
        if self.explicit and check.calls:
            return check.calls[0]
        return self.where

    def value(self, checker, number: int) -> float:
        """The function whose gradient with respect to leaf ``number`` is checked, in a run."""
        import numpy as np
        if self.explicit:
            calls = checker.calls
            return float(sum(calls[i].value for i in self.counted[number]))
        last = checker.values.get(self.of) if self.of else checker.last_tensor
        return float(np.sum(np.asarray(last._backend.to_host(last._data), dtype=np.float64)))


def run_check(opts, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3, wrt=()) -> int:
    from ..present import tables as render
    result = None
    try:
        result, checks, notes, plan = _check(opts, eps, atol, rtol, wrt)
    except GradcliError as err:
        from ..limits import settle
        from .graph import report_json
        settle()
        if not opts.json:
            partial = getattr(err, "partial_result", None)
            if partial is not None and partial.printed:
                print(render.terminal_text("\n".join(partial.printed)))
        return report_json(opts, result, err, {"gradcheck": []})
    from ..limits import settle
    settle()
    failure = _failure(checks, plan, result)
    if opts.json:
        extra = {"gradcheck": [c.record() for c in checks],
                 "gradcheck_of": plan.description,
                 "tolerances": {"eps": eps, "atol": atol, "rtol": rtol}}
        if notes:
            result.note = "; ".join(([result.note] if result.note else []) + notes)
        print(render.json_document(result, device=opts.device, dtype=opts.dtype, error=failure, extra=extra))
    else:
        if result.printed:
            print(render.terminal_text("\n".join(result.printed)))
        _print_table(checks, plan, eps, atol, rtol)
        if result.checks:
            _print_asserts(result)
        for note in notes:
            print(f"note: {note}")
    sys.stdout.flush()
    if failure is not None:
        render.print_error(failure, plan.source)
    elif result.error is not None:  # the document was too large for --max-output (its values left out)
        return result.error.exit_code
    return 0 if failure is None else failure.exit_code


def _failure(checks, plan, result):
    """The JSON ``error`` (kind "check", exit 1) when a gradient differs, placed at the value
    differentiated (or the first backward() call of the first leaf that failed); else None."""
    from ..errors import CheckFailed
    bad = [c for c in checks if not c.passed]
    if not bad:
        return None
    first = bad[0]
    detail = "; ".join(f"{c.name}: max abs error {_float(c.max_abs)}, max rel error {_float(c.max_rel)}"
                       + (f", {c.why}" if c.why else "") for c in bad)
    names = ", ".join(c.name for c in bad)
    message = (f"the gradient{'s' if len(bad) > 1 else ''} of {names} "
               f"differ{'' if len(bad) > 1 else 's'} from finite differences ({detail})")
    line, column = plan.position(first)
    return CheckFailed(message, line=line, column=column)


def _check(opts, eps, atol, rtol, wrt=()):
    import math

    import numpy as np

    from . import session

    for flag, value in (("--eps", eps), ("--atol", atol), ("--rtol", rtol)):
        if not (value >= 0 and math.isfinite(value)) or (flag == "--eps" and value == 0):
            raise UsageError(f"{flag} must be a {'positive' if flag == '--eps' else 'non-negative'} number, "
                             f"not {value:g}")
    prepared = session.prepare(opts)
    if opts.seed is None:  # every run sees the same random values
        opts.seed = 0
        session.configure(opts)
    from .explain import Situations
    situations = Situations(eps)
    if ".data" in prepared.source.text:
        situations.on_data(_first_line(prepared.source.text, ".data"))
    checker, evaluator = _checking_run(track_grads=True, situations=situations)
    result = session.run_prepared(opts, prepared, evaluator, configure_first=False)

    def fail(err):
        err.partial_result = result
        if err.line is not None and getattr(err, "source_text", None) is None:
            err.source_text = prepared.source.text
        return err

    if result.error is not None:
        raise fail(result.error)
    leaves = _distinct_names(checker.leaves, checker.leaf_lines)
    if not leaves:
        raise fail(GradTypeError("no leaf requires grad: declare one with -g, e.g. -g 'x=rand(3)', or create it "
                                 "with requires_grad=True and bind it to a name"))
    notes = []
    unwanted = _unwanted(leaves, wrt)
    if checker.calls and not opts.of:  # the program runs backward itself: check what its calls accumulated
        odd = next((c for c in checker.calls if c.value is None), None)
        if odd is not None:
            raise fail(GradTypeError("check cannot tell which value this backward() call differentiates "
                                     "(give it a tensor, and a gradient tensor of the same shape or none)",
                                     line=odd.line, column=1))
        counted = [state.counted for state in checker.states]
        lines = sorted({checker.calls[i].line for c in counted for i in c if checker.calls[i].line})
        plan = Plan(True, "the program's backward() calls" +
                    (f" (line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))})" if lines else ""),
                    counted, source=prepared.source.text)
        analytic = []
        for (name, t), state in zip(leaves, checker.states):
            g = state.snapshot if state.snapshot is not None else np.zeros(t.shape)
            if state.baseline is not None:
                g = g - state.baseline
            analytic.append(np.asarray(g, dtype=np.float64))
        skipped = {number for number, c in enumerate(counted) if not c and number not in unwanted}
        if skipped:
            names = [leaves[number][0] for number in sorted(skipped)]
            notes.append(f"not checked: {', '.join(names)} (no backward() call accumulates into "
                         f"{'their' if len(names) > 1 else 'its'} .grad)")
    else:
        last, line, column = checker.last_tensor, checker.last_tensor_line, checker.last_tensor_column
        what = f"the last value (line {line})"
        if opts.of:
            last = checker.named(opts.of, "--of")
            line, column = checker.where.get(opts.of, (None, None))
            what = f"{opts.of} (line {line})"
            for _, t in leaves:  # the program's own backward() calls do not count here
                t._grad = None
        if last is None:
            raise fail(GradTypeError("the program computes no tensor to check",
                                     hint="end the program with the value to differentiate, e.g. sum(sin(x) * x)"))
        if not last.requires_grad:
            raise fail(GradTypeError(f"{what} does not require grad: it "
                                     "does not depend on any leaf that requires grad, or was computed under no_grad",
                                     hint="end the program with the value to differentiate, e.g. sum(sin(x) * x)",
                                     line=line, column=column))
        plan = Plan(False, what + ("" if last.numel() == 1 else ", summed"), None, (line, column),
                    prepared.source.text, opts.of)
        from ..ops.creation import ones_like
        try:
            session._with_numpy_quiet(lambda: last.backward(ones_like(last)))
        except GradcliError as err:
            err.at(line, column)
            if "second time" in err.message:
                err.hint = ("check differentiates the last value; the program's own grad() call freed its "
                            "graph: pass retain_graph=True to it")
            err.source_text = prepared.source.text
            raise fail(err)
        result.backward = "auto"
        analytic = [np.zeros(t.shape) if t.grad is None else
                    np.asarray(t._backend.to_host(t.grad._data), dtype=np.float64) for _, t in leaves]
        skipped = set()
    skipped |= unwanted
    narrow = sorted({name for name, t in leaves if t.dtype.name != "float64"})
    if narrow:
        notes.append(f"{', '.join(narrow)} {'is' if len(narrow) == 1 else 'are'} not float64: finite differences "
                     f"in lower precision are inaccurate (leave out dtype= so that check's float64 applies)")

    checked = [(number, name, t) for number, (name, t) in enumerate(leaves) if number not in skipped]
    samples = {number: _sample(t.numel()) for number, _, t in checked}
    for number, name, t in checked:
        if samples[number] is not None:
            notes.append(f"{name}: {MAX_CHECKED_ELEMENTS:,} of its {t.numel():,} elements checked (evenly spaced, "
                         f"first and last included), to bound the runs of the program")
    total = sum(t.numel() if samples[number] is None else len(samples[number]) for number, _, t in checked)
    if 2 * total > MAX_EVALUATIONS:
        raise fail(LimitError(f"checking {total:,} leaf elements needs {2 * total:,} runs of the program; the "
                              f"limit is {MAX_EVALUATIONS:,}",
                              hint="check smaller leaves (finite differences cost two runs per element)"))

    def run_perturbed(number, index, delta) -> float:
        run, evaluator = _checking_run(perturb=(number, index, delta))
        res = session.run_prepared(opts, prepared, evaluator)
        if res.error is not None:
            err = res.error
            err.message = f"while moving element {index} of {leaves[number][0]} by {delta:+g}: {err.message}"
            raise fail(err)
        if len(run.leaves) <= number or len(run.calls) != len(checker.calls) or \
                (not plan.explicit and plan.value_tensor(run) is None):
            raise fail(GradTypeError(f"moving element {index} of {leaves[number][0]} by {delta:+g} changed what "
                                     "the program computes, so finite differences cannot be taken"))
        return plan.value(run, number)

    checks = []
    checker.situations = None
    for number, name, t in checked:
        indices = samples[number]
        elements = range(t.numel()) if indices is None else indices
        numeric = np.empty(len(elements), dtype=np.float64)
        for j, i in enumerate(elements):
            hi = run_perturbed(number, int(i), eps)
            lo = run_perturbed(number, int(i), -eps)
            numeric[j] = (hi - lo) / (2 * eps)
        shape = list(t.shape)
        check = LeafCheck(name, shape, t.dtype.name, analytic[number].reshape(t.shape),
                          numeric if indices is not None else numeric.reshape(t.shape), atol, rtol, indices)
        if not check.passed and situations.found:
            check.why = "; ".join(situations.found)
        if plan.explicit:
            check.lines = sorted({checker.calls[i].line for i in plan.counted[number]})
            check.calls = [(checker.calls[i].line, checker.calls[i].column) for i in plan.counted[number]]
        checks.append(check)
    return result, checks, notes, plan


def _sample(count: int):
    """None (every element) up to MAX_CHECKED_ELEMENTS, else that many evenly spaced flat indices."""
    if count <= MAX_CHECKED_ELEMENTS:
        return None
    import numpy as np
    return np.unique(np.linspace(0, count - 1, MAX_CHECKED_ELEMENTS).round().astype(np.int64))


def _first_line(text: str, needle: str):
    for number, line in enumerate(text.split("\n"), 1):
        if needle in line.split("#")[0]:
            return number
    return None


def _unwanted(leaves, wrt) -> set:
    """The numbers of the leaves ``--wrt`` leaves out (none without it); an unknown name is bad input."""
    if not wrt:
        return set()
    base = [name.split(" (")[0] for name, _ in leaves]
    missing = [w for w in wrt if w not in base]
    if missing:
        raise UsageError(f"--wrt {missing[0]}: {missing[0]} is not a leaf that requires grad",
                         hint=f"the leaves check can check: {', '.join(dict.fromkeys(base))}")
    return {number for number, name in enumerate(base) if name not in wrt}


def _distinct_names(leaves, lines):
    """The leaves, with a name bound to several of them told apart by line: ``w (line 4)``."""
    from collections import Counter
    counts = Counter(name for name, _ in leaves)
    return [(name if counts[name] == 1 else f"{name} ({'line ' + str(line) if line else 'command line'})", t)
            for (name, t), line in zip(leaves, lines)]


def _print_table(checks, plan, eps, atol, rtol) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from ..present.tables import _console, fit_print, natural_width, show
    console = _console()
    console.print(Text(f"gradient check of {plan.description} (eps={eps:g}, atol={atol:g}, rtol={rtol:g})",
                       style="bold"), soft_wrap=True)
    def table(why: bool):
        out = Table(box=box.SIMPLE_HEAVY, pad_edge=False)
        for col in ("leaf", "result", "shape", "max abs error", "max rel error", "worst: analytic vs numeric"):
            out.add_column(col, no_wrap=True)
        if why:
            out.add_column("why", style="yellow", min_width=20)
        for c in checks:
            worst = "" if c.worst is None else f"{c.worst[0]}: {c.worst[1]:.6g} vs {c.worst[2]:.6g}"
            out.add_row(c.name, Text("pass", style="green") if c.passed else Text("FAIL", style="bold red"),
                        str(c.shape), _float(c.max_abs), _float(c.max_rel), worst, *([c.why or ""] if why else []))
        return out

    explained = [c for c in checks if c.why]
    if explained and natural_width(console, table(False)) + 24 <= console.width:
        show(console, table(True))  # the reason in the row, wrapped between words
    else:
        fit_print(console, table(False))
        for c in explained:
            show(console, Text(f"{c.name}: {c.why}", style="yellow"))


def _print_asserts(result) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from ..present.tables import _console, escape_controls, show
    table = Table(box=box.SIMPLE_HEAVY, pad_edge=False, title="checks", title_justify="left")
    for col in ("line", "result", "message"):
        table.add_column(col)
    for c in result.checks:
        table.add_row(str(c.line), Text("pass", style="green") if c.passed else Text("FAIL", style="bold red"),
                      Text(escape_controls(c.message or "")))
    show(_console(), table)
