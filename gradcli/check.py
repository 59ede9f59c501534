"""``gradcli check``: analytic gradients against central finite differences.

The program is parsed once and run in float64. The leaves it checks are the tensors that
require grad and are leaves when a name is first bound to them (``-g`` declarations and
assignments such as ``w = tensor([...], requires_grad=True)``); each is known by its name and
binding order, so that every re-run finds "the same" leaf.

- Analytic: ``autograd.grad`` of the last value (summed when it is not a scalar) with respect to
  those leaves, so hooks and every engine rule take part, and ``.grad`` is left alone.
- Numerical: for each element of each leaf, the program runs again with that element moved by
  ``+eps`` and ``-eps`` (the perturbation is applied when the name is bound, before anything
  uses it) and ``(f(x+eps) - f(x-eps)) / 2eps``, with ``f`` the sum of the last value.

A leaf passes when every element satisfies ``|analytic - numeric| <= atol + rtol * |numeric|``.
Random constructors are seeded (``--seed``, else 0) so that every run sees the same values.
"""

from __future__ import annotations

import sys

from .errors import GradTypeError, LimitError

MAX_EVALUATIONS = 200_000


class LeafCheck:
    __slots__ = ("name", "shape", "max_abs", "max_rel", "passed", "analytic", "numeric")

    def __init__(self, name, shape, max_abs, max_rel, passed, analytic, numeric):
        self.name, self.shape, self.max_abs, self.max_rel = name, shape, max_abs, max_rel
        self.passed, self.analytic, self.numeric = passed, analytic, numeric

    def record(self) -> dict:
        return {"leaf": self.name, "shape": self.shape, "max_abs_error": _num(self.max_abs),
                "max_rel_error": _num(self.max_rel), "passed": self.passed}


def _num(x: float):
    import math
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _interpreter_class():
    from .interpreter import Interpreter
    from .tensor import Tensor

    class PerturbingInterpreter(Interpreter):
        """Records the requiring-grad leaves as names are bound, and moves one element of one
        of them (``perturb = (leaf number, flat index, delta)``) before the program uses it."""

        def __init__(self, perturb=None, **kwargs):
            super().__init__(**kwargs)
            self.perturb = perturb
            self.leaves: list[tuple[str, Tensor]] = []
            self._seen: set[int] = set()

        def _bind(self, name, value):
            if value.__class__ is Tensor and value.grad_fn is None and value.requires_grad \
                    and id(value) not in self._seen:
                self._seen.add(id(value))
                number = len(self.leaves)
                self.leaves.append((name, value))
                if self.perturb is not None and self.perturb[0] == number:
                    _nudge(value, self.perturb[1], self.perturb[2])
            super()._bind(name, value)

    return PerturbingInterpreter


def _nudge(t, flat_index: int, delta: float) -> None:
    backend = t._backend
    host = backend.to_host(t._data).copy()
    host.reshape(-1)[flat_index] += delta
    t._data = backend.from_host(host) if backend.xp is not sys.modules.get("numpy") else host


def run_check(opts, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3) -> int:
    import numpy as np

    from . import session, syntax
    from .commands import run_program  # noqa: F401  (same error plumbing as eval)
    from .engine import grad as autograd_grad
    from .tensor import Tensor

    if not eps > 0:
        raise GradTypeError("--eps must be a positive number")
    if opts.seed is None:
        opts.seed = 0
    source = session.read_source(opts)
    opts.source, opts.file = source.text, None
    program = syntax.parse(source.text, filename=source.name)
    session.check_program_size(program)
    decls = session.parse_declarations(opts)
    cls = _interpreter_class()

    def run_once(perturb=None):
        session.configure(opts)
        interp = cls(perturb=perturb, auto_backward=False)
        result = session.execute(interp, decls, program)
        if result.error is not None:
            result.error.source_text = source.text
            raise result.error
        return interp, result

    def value_of(result) -> float:
        last = result.last_value
        return float(np.sum(last._backend.to_host(last._data), dtype=np.float64))

    interp, result = run_once()
    last = result.last_value
    if not isinstance(last, Tensor):
        raise GradTypeError("the program's last value is not a tensor: end the program with the expression "
                            "to check, e.g. sum(sin(x) * x)")
    leaves = list(interp.leaves)
    if not leaves:
        raise GradTypeError("no leaf requires grad: declare one with -g, e.g. -g 'x=rand(3)', or create it "
                            "with requires_grad=True")
    if not last.requires_grad:
        raise GradTypeError("the last value does not depend on any leaf that requires grad")
    total = sum(t.numel() for _, t in leaves)
    if 2 * total > MAX_EVALUATIONS:
        raise LimitError(f"checking {total} leaf elements needs {2 * total} runs of the program; the limit is "
                         f"{MAX_EVALUATIONS}", hint="check smaller leaves (finite differences cost two runs per element)")
    target = last if last.numel() == 1 else last.sum()
    if target.ndim:
        target = target.reshape(())
    analytic = session._with_numpy_quiet(lambda: autograd_grad(
        [target], [t for _, t in leaves], allow_unused=True, materialize_grads=True))

    checks = []
    for number, (name, t) in enumerate(leaves):
        a = np.asarray(t._backend.to_host(analytic[number]._data), dtype=np.float64).reshape(-1)
        numeric = np.empty(t.numel(), dtype=np.float64)
        for i in range(t.numel()):
            _, hi = run_once((number, i, eps))
            _, lo = run_once((number, i, -eps))
            numeric[i] = (value_of(hi) - value_of(lo)) / (2 * eps)
        with np.errstate(all="ignore"):
            diff = np.abs(a - numeric)
            rel = diff / np.maximum(np.abs(numeric), np.finfo(np.float64).tiny)
            ok = bool(np.all(diff <= atol + rtol * np.abs(numeric)))
        checks.append(LeafCheck(name, list(t.shape), float(diff.max(initial=0.0)),
                                float(np.where(diff == 0, 0.0, rel).max(initial=0.0)), ok,
                                a.reshape(t.shape), numeric.reshape(t.shape)))
    passed = all(c.passed for c in checks)
    if opts.json:
        from . import render
        print(render.json_document(result, device=opts.device, dtype=opts.dtype,
                                   extra={"gradcheck": [c.record() for c in checks],
                                          "tolerances": {"eps": eps, "atol": atol, "rtol": rtol}}))
    else:
        _print_table(checks, eps, atol, rtol)
    for c in checks:
        if not c.passed:
            print(f"check failed: the gradient of {c.name} differs from finite differences "
                  f"(max abs error {c.max_abs:.3g}, max rel error {c.max_rel:.3g})", file=sys.stderr)
    if not passed:
        return 1
    return 1 if any(not c.passed for c in result.checks) else 0


def _print_table(checks, eps, atol, rtol) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from .render import _console
    table = Table(box=box.SIMPLE_HEAVY, pad_edge=False,
                  title=f"gradient check (eps={eps:g}, atol={atol:g}, rtol={rtol:g})", title_justify="left")
    for col in ("leaf", "shape", "max abs error", "max rel error", "result"):
        table.add_column(col, no_wrap=True)
    for c in checks:
        table.add_row(c.name, str(c.shape), f"{c.max_abs:.3e}", f"{c.max_rel:.3e}",
                      Text("pass", style="green") if c.passed else Text("FAIL", style="bold red"))
    _console().print(table)
