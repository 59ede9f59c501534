"""The fast paths of roll, scatter/gather and the sort family (topk, sort, kthvalue, median) give
torch's values, gradients, grad_fn names, next_functions and errors, on the calls they take
(plain ints, small C-contiguous arrays) and on those they route away (tuples, negative and
repeated shifts, 0-d and empty tensors, non-contiguous inputs, bad indices, NaN rows)."""

from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc
from gradcli.backend.numpy_fast import along_axis_flat, along_axis_key, roll_positions

torch = pytest.importorskip("torch")

X = [[0.5, -1.5, 2.0, 0.25], [3.0, 1.0, -0.75, 1.5], [-2.0, 0.125, 0.875, -0.5]]


def _pair(values, grad=True, dtype="float32"):
    return (gc.tensor(values, dtype=getattr(gc, dtype), requires_grad=grad),
            torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=grad))


def _same(g, t):
    assert list(g.shape) == list(t.shape)
    assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    got, want = g.detach().numpy(), t.detach().numpy()
    np.testing.assert_array_equal(got, want)  # NaN where NaN
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0.0 where -0.0


def _names(node):
    return [(None if f is None else f.name(), n) for f, n in node.next_functions]


def _check(fn, values=X, grad=True, transpose=False):
    """``fn(lib, x)`` on both libraries: the result (or each of a pair), its grad_fn, its
    next_functions and, where it needs one, x's gradient (a weighted sum, so that positions count)."""
    g, t = _pair(values, grad)
    gi, ti = (g.t(), t.t()) if transpose else (g, t)
    rg, rt = fn(gc, gi), fn(torch, ti)
    rg = rg if isinstance(rg, tuple) else (rg,)
    rt = rt if isinstance(rt, tuple) else (rt,)
    for a, b in zip(rg, rt):
        _same(a, b)
    if not grad:
        return
    a, b = rg[0], rt[0]
    assert a.grad_fn.name() == b.grad_fn.name()
    assert _names(a.grad_fn) == _names(b.grad_fn)
    if b.numel():
        w = np.arange(1, b.numel() + 1, dtype=np.float32).reshape(tuple(b.shape)).tolist()
        with np.errstate(invalid="ignore"):  # inf - inf in the sum (TIES): NumPy's warning, not torch's
            (a * gc.tensor(w)).sum().backward()
        (b * torch.tensor(w)).sum().backward()
        _same(g.grad, t.grad)


def _error(fn, values=X):
    g, t = _pair(values)
    with pytest.raises(Exception) as want:
        fn(torch, t)
    with pytest.raises(Exception) as got:
        fn(gc, g)
    assert str(got.value) == str(want.value)


# -- roll ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shifts,dims", [
    (1, 0), (1, None), (-1, 0), (-5, 1), (7, -1), (0, 0), (13, None), (-3, None), (2, -2),
    ((1,), (0,)), ((1, -2), (0, 1)), ((1, 2), (0, 0)), ([2], [1]), ((5,), None)])
@pytest.mark.parametrize("transpose", [False, True])
def test_roll(shifts, dims, transpose):
    _check(lambda L, x: x.roll(shifts) if dims is None else x.roll(shifts, dims), transpose=transpose)
    _check(lambda L, x: L.roll(x, shifts) if dims is None else L.roll(x, shifts, dims), transpose=transpose)


def test_roll_0d_empty_and_large():
    _check(lambda L, x: x.roll(1), values=2.5)
    _check(lambda L, x: x.roll(-4), values=2.5)
    _check(lambda L, x: x.roll(1, 0), values=[])
    _check(lambda L, x: x.roll(1), values=[[]])
    big = np.arange(5000, dtype=np.float32).reshape(50, 100).tolist()  # past the cached positions' size
    _check(lambda L, x: x.roll(3, 1), values=big)
    _check(lambda L, x: x.roll(-7), values=big)


def test_roll_errors():
    _error(lambda L, x: x.roll(1, 2))
    _error(lambda L, x: x.roll(1, -3))
    _error(lambda L, x: x.roll((1, 2), 0))
    _error(lambda L, x: x.roll(1, 0), values=2.5)


def test_roll_positions_are_np_roll():
    for shape in [(1,), (5,), (2, 3), (3, 1, 4)]:
        a = np.arange(int(np.prod(shape))).reshape(shape) * 10
        for shift, axis in [(1, None), (-8, None), (2, 0), (-1, -1), ((1, 2), (0, -1)), ((1, 1), (0, 0))]:
            try:
                want = np.roll(a, shift, axis)
            except Exception:
                assert roll_positions(shape, shift, axis) is None
                continue
            positions = roll_positions(shape, shift, axis)
            np.testing.assert_array_equal(a.take(positions), want)
            assert not positions.flags.writeable
    assert roll_positions((2, 2), 1.0, 0) is None and roll_positions((2, 2), True, 0) is None
    assert roll_positions((2, 2), [1], [0]) is None and roll_positions((2, 2), 1, np.int64(0)) is None


# -- gather and scatter ----------------------------------------------------------------------------

def test_along_axis_flat_is_the_key():
    rng = np.random.default_rng(0)
    for shape in [(4,), (2, 3), (3, 1, 4), (2, 3, 2, 2)]:
        x = rng.standard_normal(shape)
        for axis in range(len(shape)):
            for _ in range(4):
                ishape = tuple(int(rng.integers(1, n + 1)) if d != axis else int(rng.integers(0, 5))
                               for d, n in enumerate(shape))
                index = rng.integers(0, shape[axis], ishape)
                np.testing.assert_array_equal(x.take(along_axis_flat(shape, axis, index)),
                                              x[along_axis_key(ishape, axis, index)])
            if len(shape) > 1:
                index = rng.integers(0, shape[axis], shape[:axis] + shape[axis + 1:])
                np.testing.assert_array_equal(x.take(along_axis_flat(shape, axis, index, False)),
                                              x[along_axis_key(shape, axis, index, False)])


IDX = [[2, 0, 1, 0], [1, 2, 0, 2]]


@pytest.mark.parametrize("transpose", [False, True])
def test_scatter_gather(transpose):
    src = np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5).tolist()
    for dim, idx in [(0, IDX), (1, [[3, 0], [1, 1], [2, 3]]), (-1, [[0], [3], [1]]), (0, [[1, 1, 1, 1]])]:
        if transpose:
            idx = [[v % 3 for v in row] for row in zip(*idx)] if dim == 0 else idx
            if dim != 0:
                continue
            dim = 1
        for accumulate in (False, True):
            def fn(L, x, dim=dim, idx=idx, accumulate=accumulate):
                s = L.tensor(src, requires_grad=True)[:len(idx), :len(idx[0])] if not accumulate else \
                    L.tensor(src, requires_grad=True)[:len(idx), :len(idx[0])]
                i = L.tensor(idx)
                return x.scatter_add(dim, i, s) if accumulate else x.scatter(dim, i, s)
            _check(fn, transpose=transpose)
        _check(lambda L, x, dim=dim, idx=idx: x.scatter(dim, L.tensor(idx), 2.5), transpose=transpose)
        _check(lambda L, x, dim=dim, idx=idx: x.gather(dim, L.tensor(idx)), transpose=transpose)
        _check(lambda L, x, dim=dim, idx=idx: (x * 1).scatter_(dim, L.tensor(idx), x[:len(idx), :len(idx[0])] * 3),
               transpose=transpose)
        _check(lambda L, x, dim=dim, idx=idx: (x * 1).scatter_add_(dim, L.tensor(idx), x[:len(idx), :len(idx[0])]),
               transpose=transpose)


def test_scatter_src_larger_than_index_and_empty_index():
    big = np.arange(24, dtype=np.float32).reshape(4, 6).tolist()
    _check(lambda L, x: x.scatter(1, L.tensor([[1, 0], [0, 3]]), L.tensor(big)))
    _check(lambda L, x: x.scatter_add(0, L.tensor([[1, 0], [0, 2]]), L.tensor(big)))
    _check(lambda L, x: x.scatter(0, L.tensor([[]], dtype=L.int64), L.tensor(big)))
    _check(lambda L, x: x.gather(1, L.tensor([[], [], []], dtype=L.int64)))


def test_scatter_errors():
    src = [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]
    _error(lambda L, x: x.scatter(0, L.tensor([[3, 0, 1, 0]]), L.tensor(src)))
    _error(lambda L, x: x.scatter(1, L.tensor([[-1, 0]]), L.tensor(src)))
    _error(lambda L, x: x.scatter_add(0, L.tensor([[1, 5]]), L.tensor(src)))
    _error(lambda L, x: x.scatter_add(0, L.tensor([[1, 0]]), L.tensor(src, dtype=L.float64)))
    _error(lambda L, x: x.scatter(0, L.tensor([[1, 0]]), L.tensor(src, dtype=L.float64)))
    _error(lambda L, x: x.scatter_add(0, L.tensor([[1, 0]]), 2.0))
    _error(lambda L, x: x.scatter(2, L.tensor([[1, 0]]), L.tensor(src)))
    _error(lambda L, x: x.gather(1, L.tensor([[4]])))
    _error(lambda L, x: x.scatter(0, L.tensor([[1.0, 0.0]]), L.tensor(src)))


# -- topk, sort, kthvalue, median --------------------------------------------------------------------

TIES = [[1.0, -0.0, 0.0, 1.0, 2.0], [float("inf"), 0.0, -0.0, -float("inf"), 0.0], [3.0, 3.0, 3.0, -1.0, 3.0]]
NANS = [[1.0, float("nan"), 0.0, 2.0, -1.0], [0.5, 0.25, -0.5, 4.0, 1.0], [float("nan"), 1.0, float("nan"), 0.0, 2.0]]


def test_sort_family():
    values = X
    for dim in (0, 1, -1):
        n = len(values) if dim == 0 else len(values[0])
        for k in (0, 1, 2, n):
            for largest in (True, False):
                _check(lambda L, x: tuple(x.topk(k, dim, largest)), values)
        for keepdim in (False, True):
            _check(lambda L, x: tuple(x.median(dim, keepdim)), values)
            _check(lambda L, x: tuple(x.kthvalue(n, dim, keepdim)), values)
        for descending in (False, True):
            _check(lambda L, x: tuple(x.sort(dim, descending)), values)
    _check(lambda L, x: x.median(), values)
    _check(lambda L, x: tuple(x.topk(2)), values, transpose=True)
    _check(lambda L, x: tuple(x.median(1)), values, transpose=True)


@pytest.mark.parametrize("values", [TIES, NANS], ids=["ties", "nans"])
def test_sort_family_ties_and_nans(values):
    """Ties and NaN: gradcli's order is torch's stable sort's (NaN largest, ties in their order),
    which torch's own topk, kthvalue and median need not follow: their indices are checked against
    torch's stable sort, their values against torch's."""
    g, t = _pair(values, grad=False)
    for dim in (0, 1):
        n = t.shape[dim]
        for descending in (False, True):
            _check(lambda L, x: tuple(x.sort(stable=True, dim=dim, descending=descending)), values)
        up = torch.sort(t, dim=dim, stable=True).indices
        down = torch.sort(t, dim=dim, descending=True, stable=True).indices
        for k in (1, 2, n):
            for largest, order in ((True, down), (False, up)):
                got = g.topk(k, dim, largest)
                want = torch.topk(t, k, dim, largest)
                np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
                np.testing.assert_array_equal(got.indices.numpy(), order.narrow(dim, 0, k).numpy())
        for k in range(1, n + 1):
            got = g.kthvalue(k, dim)
            np.testing.assert_array_equal(got.values.numpy(), torch.kthvalue(t, k, dim).values.numpy())
            np.testing.assert_array_equal(got.indices.numpy(), up.select(dim, k - 1).numpy())
        got, want = g.median(dim), torch.median(t, dim)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        nans = t.isnan().sum(dim)
        position = torch.where(nans > 0, n - nans, torch.full_like(nans, (n - 1) // 2))
        np.testing.assert_array_equal(got.indices.numpy(), up.gather(dim, position.unsqueeze(dim)).squeeze(dim).numpy())
    np.testing.assert_array_equal(g.median().numpy(), t.median().numpy())


def test_sort_family_small_shapes_and_errors():
    _check(lambda L, x: tuple(x.topk(1)), values=1.5)
    _check(lambda L, x: tuple(x.median(0)), values=1.5)
    _check(lambda L, x: tuple(x.topk(2)), values=[0.5, 3.0, -1.0])
    _check(lambda L, x: tuple(x.median(0)), values=[0.5, float("nan"), -1.0])
    _check(lambda L, x: tuple(x.median(0, True)), values=[0.5, 3.0, -1.0, 2.0])
    _check(lambda L, x: tuple(x.topk(0, 1)), values=[[], []])
    _error(lambda L, x: x.topk(5))
    _error(lambda L, x: x.topk(-1))
    _error(lambda L, x: x.topk(2, 2))
    _error(lambda L, x: x.median(1), values=[[], []])
    _error(lambda L, x: x.kthvalue(5, 1))
