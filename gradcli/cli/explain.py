"""Why ``check`` may disagree with finite differences where nothing is wrong: the situations in
which autograd's gradient and a finite difference legitimately differ, noticed while the program
runs (``check`` puts them in the failing leaf's row and JSON record as ``why``).

- detach(), no_grad / set_grad_enabled(False), ``.data`` updates: autograd ignores that path, a
  finite difference does not.
- relu, abs, clamp, max/min/maximum/minimum evaluated at their kink (within ``eps`` of it): the
  gradient there is a convention (torch's subgradient), the finite difference the average slope.
- integer steps (sign, comparisons used as values): zero gradient almost everywhere, a jump
  where the step falls within ``eps``.
"""

from __future__ import annotations

KINKS = {"relu": "relu", "abs": "abs", "clamp": "clamp", "clip": "clamp", "max": "max", "min": "min",
         "maximum": "maximum", "minimum": "minimum", "amax": "amax", "amin": "amin"}
STEPS = {"sign", "floor", "ceil", "round", "trunc", "gt", "lt", "ge", "le", "eq", "ne"}
DETACH = {"detach", "detach_", "no_grad", "set_grad_enabled"}


class Situations:
    """What a run did that makes finite differences disagree with autograd, in order, once each."""

    def __init__(self, eps: float):
        self.eps = eps
        self.found: list[str] = []

    def add(self, text: str) -> None:
        if text not in self.found:
            self.found.append(text)

    def on_call(self, fn, args, kwargs, line) -> None:
        name = getattr(fn, "__name__", "")
        where = f" (line {line})" if line else ""
        if name in DETACH:
            self.add(f"{name}() on line {line} cuts the graph: autograd ignores that path, finite differences do not"
                     if line else f"{name}() cuts the graph")
        elif name in STEPS:
            self.add(f"{name}{where} is a step: zero gradient, but a jump within eps of its threshold")
        elif name in KINKS and self._at_kink(KINKS[name], args, kwargs):
            self.add(f"{name}{where} is evaluated at its kink, where the gradient is a convention "
                     "(torch's subgradient) and finite differences average the two slopes")

    def on_data(self, line) -> None:
        self.add(f".data on line {line} changes values outside autograd" if line else
                 ".data changes values outside autograd")

    def _at_kink(self, kind, args, kwargs) -> bool:
        import numpy as np
        tensors = [a for a in args if hasattr(a, "_data")]
        if not tensors:
            return False
        x = _host(tensors[0])
        eps = self.eps
        if kind in ("relu", "abs"):
            return bool(np.any(np.abs(x) <= eps))
        if kind == "clamp":
            bounds = [kwargs.get("min"), kwargs.get("max"), *args[1:3]]
            return any(b is not None and not hasattr(b, "_data") and bool(np.any(np.abs(x - float(b)) <= eps))
                       for b in bounds)
        if kind in ("maximum", "minimum") or (kind in ("max", "min") and len(tensors) > 1):
            if len(tensors) < 2:
                return False
            y = _host(tensors[1])
            try:
                return bool(np.any(np.abs(x - y) <= eps))
            except ValueError:
                return False
        # max/min/amax/amin reductions: ties at the extreme
        flat = np.sort(x.reshape(-1))
        return flat.size > 1 and (flat[-1] - flat[-2] <= eps or flat[1] - flat[0] <= eps)


def _host(t):
    import numpy as np
    return np.asarray(t._backend.to_host(t._data), dtype=np.float64)
