"""Matrix products (ops/linalg.py) on the paths that record their nodes directly: every matmul
case against torch (values, gradients, the graph's grad_fn names, second derivatives), contiguous
and not, the limits on a result larger than its operands, and torch's messages."""

from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc
from gradcli.errors import GradcliError, LimitError
from gradcli.limits import LIMITS

torch = pytest.importorskip("torch")


def _names(node):
    if node is None:
        return None
    return (node.name(), [_names(n) for n, _ in node.next_functions])


def _values(shape, seed):
    return (np.random.default_rng(seed).standard_normal(shape)).round(3).tolist()


SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)), ((2, 2, 3), (3, 4)),
          ((2, 2, 3), (3,)), ((2, 3), (4, 3, 2)), ((3,), (2, 3, 2)), ((2, 2, 3), (2, 3, 4)),
          ((2, 1, 2, 3), (3, 2)), ((1, 2, 3), (2, 3, 2)), ((0, 2, 3), (3, 2)), ((2, 0, 3), (3, 2))]


def _leaf(m, shape, seed, dtype):
    if 0 in shape:
        return m.zeros(*shape, dtype=getattr(m, dtype), requires_grad=True)
    return m.tensor(_values(shape, seed), dtype=getattr(m, dtype), requires_grad=True)


def _run(m, sa, sb, dtype, transpose_first=False, fn=None):
    if transpose_first:  # a non-contiguous operand: a leaf with its last two dims swapped, transposed
        a = _leaf(m, sa[:-2] + (sa[-1], sa[-2]), 1, dtype)
        left = a.transpose(-1, -2)
    else:
        a = left = _leaf(m, sa, 1, dtype)
    b = _leaf(m, sb, 2, dtype)
    out = (fn or (lambda p, q: p @ q))(left, b)
    seed = m.tensor(np.random.default_rng(3).standard_normal(tuple(out.shape)).round(3), dtype=out.dtype)
    grads = m.autograd.grad([(out * seed).sum()], [a, b], create_graph=True)
    second = None
    if all(g.requires_grad for g in grads):
        second = m.autograd.grad([(grads[0] * grads[0]).sum() + grads[1].sum()], [a, b], allow_unused=True)
        second = [None if s is None else np.asarray(s.tolist()) for s in second]
    return {"out": np.asarray(out.detach().tolist()), "shape": list(out.shape), "graph": _names(out.grad_fn),
            "grads": [np.asarray(g.detach().tolist()) for g in grads], "second": second,
            "grad graphs": [_names(g.grad_fn) for g in grads]}


def _same(ours, theirs, rtol):
    assert ours["shape"] == theirs["shape"]
    assert ours["graph"] == theirs["graph"]
    assert ours["grad graphs"] == theirs["grad graphs"]
    np.testing.assert_allclose(ours["out"], theirs["out"], rtol=rtol, atol=rtol)
    for g, h in zip(ours["grads"], theirs["grads"]):
        np.testing.assert_allclose(g, h, rtol=rtol, atol=rtol)
    assert (ours["second"] is None) == (theirs["second"] is None)
    for g, h in zip(ours["second"] or (), theirs["second"] or ()):
        assert (g is None) == (h is None)
        if g is not None:
            np.testing.assert_allclose(g, h, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("sa,sb", SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_matches_torch(sa, sb, dtype):
    rtol = 1e-5 if dtype == "float32" else 1e-12
    _same(_run(gc, sa, sb, dtype), _run(torch, sa, sb, dtype), rtol)
    # twice: a second call of the same shapes records the same graph
    _same(_run(gc, sa, sb, dtype), _run(torch, sa, sb, dtype), rtol)


@pytest.mark.parametrize("sa,sb", [((2, 2, 3), (3, 4)), ((2, 2, 3), (3,)), ((2, 3), (3, 4)), ((3, 3), (3,)),
                                   ((2, 3), (2, 3, 2))])
def test_matmul_of_a_non_contiguous_operand_matches_torch(sa, sb):
    _same(_run(gc, sa, sb, "float64", transpose_first=True), _run(torch, sa, sb, "float64", transpose_first=True),
          1e-12)


@pytest.mark.parametrize("name,sa,sb", [("mm", (2, 3), (3, 4)), ("mv", (2, 3), (3,)), ("dot", (3,), (3,)),
                                        ("outer", (3,), (2,)), ("outer", (1,), (1,))])
def test_named_products_match_torch(name, sa, sb):
    for dtype, rtol in (("float32", 1e-5), ("float64", 1e-12)):
        fn = lambda p, q: getattr(torch if isinstance(p, torch.Tensor) else gc, name)(p, q)  # noqa: E731
        _same(_run(gc, sa, sb, dtype, fn=fn), _run(torch, sa, sb, dtype, fn=fn), rtol)


def test_outer_of_strided_and_mixed_dtype_vectors_matches_torch():
    for make in (lambda m: (m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True), None),):
        got = []
        for m in (gc, torch):
            x, _ = make(m)
            col = x[:, 1]  # a strided vector (a view)
            w = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, requires_grad=True)
            out = m.outer(col, w)
            out.backward(m.ones_like(out))
            got.append((out.tolist(), str(out.dtype), _names(out.grad_fn), x.grad.tolist(), w.grad.tolist()))
        assert got[0] == got[1]


def test_products_larger_than_their_operands_are_checked(monkeypatch):
    col, row = gc.ones(3, 1, requires_grad=True), gc.ones(1, 3, requires_grad=True)
    v = gc.ones(3, requires_grad=True)
    assert (col @ row).shape == (3, 3) and gc.outer(v, v).shape == (3, 3)
    monkeypatch.setattr(LIMITS, "max_elements", 8)
    for fn in (lambda: col @ row, lambda: gc.mm(col, row), lambda: gc.outer(v, v),
               lambda: gc.ones(2, 3, 1) @ gc.ones(1, 3)):
        with pytest.raises(LimitError, match="elements, over the limit of 8"):
            fn()
    # no larger than an operand: allowed
    assert (gc.ones(2, 2) @ gc.ones(2, 2)).shape == (2, 2)


@pytest.mark.parametrize("call", [
    lambda m: m.mm(m.ones(2, 3), m.ones(2, 3)), lambda m: m.mm(m.ones(2, 3), m.ones(3, 2, dtype=m.float64)),
    lambda m: m.mm(m.ones(3), m.ones(3, 2)), lambda m: m.mv(m.ones(2, 3), m.ones(2)),
    lambda m: m.mv(m.ones(2, 3), m.ones(3, dtype=m.float64)), lambda m: m.dot(m.ones(3), m.ones(2)),
    lambda m: m.dot(m.ones(3), m.ones(3, dtype=m.float64)), lambda m: m.dot(m.ones(2, 3), m.ones(3)),
    lambda m: m.ones(3) @ m.ones(2, 3), lambda m: m.ones(2, 2, 3) @ m.ones(2, 3),
    lambda m: m.ones(2, 3) @ m.ones(3, 2, dtype=m.float64), lambda m: m.outer(m.ones(2, 2), m.ones(2)),
    lambda m: m.ones(2, 2, 3) @ m.ones(2),
], ids=["mm shapes", "mm dtypes", "mm vector", "mv shapes", "mv dtypes", "dot sizes", "dot dtypes", "dot 2d",
        "1d@2d", "3d@2d", "2d dtypes", "outer 2d", "3d@1d"])
def test_errors_keep_torchs_messages(call):
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(GradcliError) as ours:
        call(gc)
    assert str(ours.value) == str(theirs.value)
