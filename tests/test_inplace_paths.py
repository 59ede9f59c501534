"""The shared in-place variant (ops/inplace.py) on the paths its shortcuts take: torch's
original_self saved for nodes of one, two and three inputs, the write's shape and dtype errors,
and the version counters, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc
from gradcli.errors import GradcliError

torch = pytest.importorskip("torch")

X = [[0.5, -1.25], [2.0, 0.75]]
LO = [[0.0, -1.0], [1.0, 0.0]]
HI = [[1.0, 0.0], [1.5, 2.0]]


def _run(m, fn):
    leaf = m.tensor(X, dtype=m.float64, requires_grad=True)
    others = [m.tensor(v, dtype=m.float64, requires_grad=True) for v in (LO, HI)]
    y = leaf * 1
    out = fn(y, *others)
    assert out is y
    cot = m.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=m.float64)
    (g, *gs) = m.autograd.grad([(y * cot).sum()], [leaf, *others], create_graph=True, allow_unused=True)
    h = m.autograd.grad([(g * g).sum()], [leaf], allow_unused=True)[0] if g.requires_grad else None
    saved = y.grad_fn._saved_self if hasattr(y.grad_fn, "_saved_self") else None
    return {
        "values": np.round(np.asarray(y.detach().tolist()), 12).tolist(),
        "version": y._version,
        "grad_fn": y.grad_fn.name(),
        "next": [None if n is None else n.name() for n, _ in y.grad_fn.next_functions],
        "g": np.round(np.asarray(g.detach().tolist()), 12).tolist(),
        "others": [None if x is None else np.round(np.asarray(x.detach().tolist()), 12).tolist() for x in gs],
        "h": None if h is None else np.round(np.asarray(h.tolist()), 10).tolist(),
        "saved is y": saved is y,
        "saved": None if saved is None else np.round(np.asarray(saved.detach().tolist()), 12).tolist(),
        "saved grad_fn": None if saved is None or saved.grad_fn is None else saved.grad_fn.name(),
    }


@pytest.mark.parametrize("fn", [
    lambda y, lo, hi: y.clamp_(lo, hi),            # three inputs: self saved among several
    lambda y, lo, hi: y.clamp_(min=lo),            # two tensor inputs
    lambda y, lo, hi: y.mul_(lo),                  # two inputs, self saved for other's gradient
    lambda y, lo, hi: y.sin_(),                    # one input
    lambda y, lo, hi: y.pow_(3),                   # one input and a number
    lambda y, lo, hi: y.exp_(),                    # saves its result, not self
    lambda y, lo, hi: y.add_(hi, alpha=2),         # saves nothing
], ids=["clamp tensors", "clamp min tensor", "mul tensor", "sin", "pow", "exp", "add alpha"])
def test_original_self_and_gradients_match_torch(fn):
    assert _run(gc, fn) == _run(torch, fn)


def test_the_write_refuses_a_larger_result_and_a_wider_dtype_as_torch():
    for m in (gc, torch):
        row = m.tensor([1.0, 2.0], requires_grad=True) * 1
        with pytest.raises((RuntimeError, GradcliError), match=r"output with shape \[2\] doesn't match the "
                                                                r"broadcast shape \[2, 2\]"):
            row.add_(m.ones(2, 2))
        assert row._version == 0
        ints = m.tensor([1, 2])
        with pytest.raises((RuntimeError, GradcliError), match="result type Float can't be cast to the desired "
                                                               "output type Long"):
            ints.mul_(1.5)
        assert ints.tolist() == [1, 2]
    # a narrower result is cast into the tensor, as torch does
    for m in (gc, torch):
        d = m.tensor([1.5, 2.5], dtype=m.float64)
        d.add_(m.tensor([1.0, 1.0], dtype=m.float32))
        assert d.dtype == m.float64 and d.tolist() == [2.5, 3.5] and d._version == 1


def test_the_write_keeps_the_tensors_own_array_and_its_views():
    y = gc.tensor(X, requires_grad=True) * 1
    before = y._data
    view = y[0]
    y.abs_()
    assert y._data is before
    assert view.tolist() == [0.5, 1.25] and view._version == y._version == 1
