"""Matrix products (ops/linalg.py) on the paths that record their nodes directly: every matmul
case against torch (values, gradients, the graph's grad_fn names, second derivatives), contiguous
and not, the limits on a result larger than its operands, and torch's messages."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gradcli as gc
from gradcli.errors import GradcliError, LimitError
from gradcli.limits import LIMITS
from helpers import assert_close_or_none

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


# Where the gradient's own graph (under create_graph) is not yet torch's: torch's mm backward picks its
# formula by the operands' strides (a column-major operand's gradient is a transposed product: two more
# TBackward0), and its squeeze backward is unsqueeze_to (UnsqueezeBackward0, where gradcli's is a view).
# The forward graph, the values and the second derivatives are torch's there too.
GRAD_GRAPH_DIFFERS = {((2, 3), (4, 3, 2)), ((1, 2, 3), (2, 3, 2)), ("transposed", (2, 3), (3, 4))}


def _same(ours, theirs, rtol, key=None):
    assert ours["shape"] == theirs["shape"]
    assert ours["graph"] == theirs["graph"]
    if key not in GRAD_GRAPH_DIFFERS:
        assert ours["grad graphs"] == theirs["grad graphs"]
    np.testing.assert_allclose(ours["out"], theirs["out"], rtol=rtol, atol=rtol)
    for g, h in zip(ours["grads"], theirs["grads"]):
        np.testing.assert_allclose(g, h, rtol=rtol, atol=rtol)
    assert (ours["second"] is None) == (theirs["second"] is None)
    assert_close_or_none(ours["second"] or (), theirs["second"] or (), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("sa,sb", SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_matches_torch(sa, sb, dtype):
    rtol = 1e-5 if dtype == "float32" else 1e-12
    _same(_run(gc, sa, sb, dtype), _run(torch, sa, sb, dtype), rtol, (sa, sb))
    # twice: a second call of the same shapes records the same graph
    _same(_run(gc, sa, sb, dtype), _run(torch, sa, sb, dtype), rtol, (sa, sb))


@pytest.mark.parametrize("sa,sb", [((2, 2, 3), (3, 4)), ((2, 2, 3), (3,)), ((2, 3), (3, 4)), ((3, 3), (3,)),
                                   ((2, 3), (2, 3, 2))])
def test_matmul_of_a_non_contiguous_operand_matches_torch(sa, sb):
    _same(_run(gc, sa, sb, "float64", transpose_first=True), _run(torch, sa, sb, "float64", transpose_first=True),
          1e-12, ("transposed", sa, sb))


@pytest.mark.parametrize("name,sa,sb", [("mm", (2, 3), (3, 4)), ("mv", (2, 3), (3,)), ("dot", (3,), (3,)),
                                        ("outer", (3,), (2,)), ("outer", (1,), (1,))])
def test_named_products_match_torch(name, sa, sb):
    for dtype, rtol in (("float32", 1e-5), ("float64", 1e-12)):
        fn = lambda p, q: getattr(torch if isinstance(p, torch.Tensor) else gc, name)(p, q)  # noqa: E731
        _same(_run(gc, sa, sb, dtype, fn=fn), _run(torch, sa, sb, dtype, fn=fn), rtol)


def test_outer_of_strided_and_mixed_dtype_vectors_matches_torch():
    got = []
    for m in (gc, torch):
        x = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        col = x[:, 1]  # a strided vector (a view)
        w = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, requires_grad=True)
        out = m.outer(col, w)
        out.backward(m.ones_like(out))
        # (torch names the column of a strided vector ReshapeAliasBackward0, its reshape of a
        # non-contiguous view; gradcli's reshape has ViewBackward0 for every view)
        got.append((out.tolist(), str(out.dtype), out.grad_fn.name(), x.grad.tolist(), w.grad.tolist()))
    assert got[0] == got[1]
    v = gc.tensor([1.0, 2.0], requires_grad=True)
    assert _names(gc.outer(v, v).grad_fn) == _names(torch.outer(*[torch.tensor([1.0, 2.0], requires_grad=True)] * 2)
                                                    .grad_fn)


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


FOLD_SHAPES = [((3,), (2, 3, 2)), ((2, 3), (4, 3, 2)), ((2, 2, 3), (3, 4)), ((2, 2, 3), (3,)), ((1, 2, 3), (2, 3, 2)),
               ((2, 2, 3), (1, 3, 2)), ((2, 2, 3), (2, 3, 4)), ((2, 1, 2, 3), (3, 2)), ((2, 3), (1, 3, 2)),
               ((2, 2, 3), (4, 2, 3, 2)), ((3,), (1, 3, 2)), ((2, 2, 2, 3), (3,))]


def _fold_case(m, sa, sb, ga, gb, transposed):
    """Leaves of the shapes (the first transposed from its first two dims swapped), ``a @ b``,
    its graph, and the gradients of a weighted sum."""
    rng = np.random.default_rng(7)
    if transposed and len(sa) >= 3:
        base = m.tensor(rng.standard_normal(sa[1:2] + sa[:1] + sa[2:]).round(3).tolist(), requires_grad=ga)
        a = base.transpose(0, 1)
    else:
        base = a = m.tensor(rng.standard_normal(sa).round(3).tolist(), requires_grad=ga)
    b = m.tensor(rng.standard_normal(sb).round(3).tolist(), requires_grad=gb)
    out = a @ b
    weights = m.tensor(rng.standard_normal(tuple(out.shape)).round(3).tolist())
    (out * weights).sum().backward()
    return (_names(out.grad_fn), np.asarray(out.detach().tolist()),
            [None if t.grad is None else np.asarray(t.grad.tolist()) for t in (base, b)])


@pytest.mark.parametrize("sa,sb", FOLD_SHAPES, ids=[f"{a}@{b}" for a, b in FOLD_SHAPES])
def test_matmul_folds_or_batches_as_torch_decides(sa, sb):
    """torch's should_fold (which operand requires grad, the strides of the larger one) and its
    batched path (a batch of 1 squeezed where it requires grad, a vector on the right as a column)."""
    compared = 0
    for ga, gb, transposed in itertools.product((True, False), (True, False), (False, True)):
        if not (ga or gb):
            continue
        ours, theirs = _fold_case(gc, sa, sb, ga, gb, transposed), _fold_case(torch, sa, sb, ga, gb, transposed)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6)
        assert_close_or_none(ours[2], theirs[2], rtol=1e-5, atol=1e-6)
        # torch's reshape of a strided view that needs no copy is ReshapeAliasBackward0 (or, for a
        # batch of 1 transposed, a view where gradcli's reshape copies): not modelled by reshape yet
        if "ReshapeAlias" not in repr(theirs[0]):
            assert ours[0] == theirs[0], (ga, gb, transposed)
            compared += 1
    assert compared >= 3


def test_vector_at_matrix_is_squeezed_in_place_as_torch():
    """torch's 1-d @ 2-d is ``v.unsqueeze(0).mm(x).squeeze_(0)``: the result is no view, at version 1,
    and an in-place op on it records its own node (not a CopySlices on a base)."""
    seen = []
    for m in (gc, torch):
        x = m.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
        v = m.tensor([1.5, -0.5], requires_grad=True)
        out = v @ x
        row = (out._is_view(), out._base is None, out._version, _names(out.grad_fn))
        out.mul_(m.tensor([2.0, 3.0]))
        out.sum().backward()
        with m.no_grad():
            quiet = v @ x
        seen.append(row + (out._version, out.grad_fn.name(), v.grad.tolist(), x.grad.tolist(), quiet._version,
                           quiet._is_view(), quiet.requires_grad))
    assert seen[0] == seen[1]
    assert seen[0][:3] == (False, True, 1)


def test_array_formulas_t_and_outer_are_numpys():
    """ArrayMath.t and .outer on NumPy arrays: the views and products np.transpose / np.reshape give."""
    from gradcli.backend import NUMPY
    from gradcli.ops.formulas import ArrayMath
    F = ArrayMath(NUMPY)
    rng = np.random.default_rng(5)
    m = rng.standard_normal((3, 2)).astype(np.float32)
    got = F.t(m)
    want = np.transpose(m, (1, 0))
    assert got.shape == want.shape and got.strides == want.strides and np.shares_memory(got, m)
    np.testing.assert_array_equal(got, want)
    v = rng.standard_normal(3)
    assert F.t(v) is v
    for dtype in (np.float32, np.float64):
        a, b = rng.standard_normal(4).astype(dtype), rng.standard_normal(3).astype(dtype)
        got = F.outer(a, b)
        want = np.reshape(a, (-1, 1)) * np.reshape(b, (1, -1))
        assert got.dtype == want.dtype and got.shape == (4, 3)
        np.testing.assert_array_equal(got, want)


def test_array_formulas_reshape_and_squeeze_are_numpys():
    """ArrayMath.reshape / .squeeze on NumPy arrays (every view's backward): np.reshape's and
    np.squeeze's results (shape, strides, view or copy), for tuples, lists and Size-like shapes."""
    from gradcli.backend import NUMPY
    from gradcli.ops.formulas import ArrayMath
    F = ArrayMath(NUMPY)
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    for x in (base, base.T, base[:, 1:3], np.broadcast_to(base[0], (2, 4)), base[None]):
        for shape in (x.shape[::-1], [x.size], (x.size, 1), (-1,)):
            want = np.reshape(x, tuple(shape))
            got = F.reshape(x, shape)
            assert got.shape == want.shape and got.strides == want.strides
            assert np.shares_memory(got, x) == np.shares_memory(want, x)
            np.testing.assert_array_equal(got, want)
    ones = np.ones((1, 3, 1), np.float64)
    for dim in (0, 2, -1, (0, 2)):
        want, got = np.squeeze(ones, axis=dim), F.squeeze(ones, dim)
        assert got.shape == want.shape and got.strides == want.strides and np.shares_memory(got, ones)
    with pytest.raises(ValueError):
        F.squeeze(ones, 1)
    scalar = np.float32(2.5)  # a full reduction's result takes NumPy's own function
    assert F.reshape(scalar, (1,)).shape == (1,)
