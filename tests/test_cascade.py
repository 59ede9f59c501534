"""Sums down many rows in torch's order (``gradcli.backend.cascade``): torch's CPU sum kernel
(SumKernel.cpp's cascade_sum) transcribed here one value at a time, and gradcli's vectorised
form checked against it bit for bit; then against torch itself where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc
from gradcli.backend.cascade import SUM_DOWN_FROM, torch_sum

# -- torch's kernel, one value at a time (the C++ loops as written) -----------------------------


def multi_row_sum(rows, dtype):
    """rows: a list of equal-length lists; each column's cascade (num_levels 4)."""
    size, nrows = len(rows), len(rows[0])
    level_power = max(4, (size - 1).bit_length() // 4 if size > 1 else 0)
    level_step = 1 << level_power
    level_mask = level_step - 1
    acc = [[dtype(0)] * nrows for _ in range(4)]
    i = 0
    while i + level_step <= size:
        for _ in range(level_step):
            for k in range(nrows):
                acc[0][k] = dtype(acc[0][k] + rows[i][k])
            i += 1
        for j in range(1, 4):
            for k in range(nrows):
                acc[j][k] = dtype(acc[j][k] + acc[j - 1][k])
                acc[j - 1][k] = dtype(0)
            if i & (level_mask << (j * level_power)):
                break
    while i < size:
        for k in range(nrows):
            acc[0][k] = dtype(acc[0][k] + rows[i][k])
        i += 1
    for j in range(1, 4):
        for k in range(nrows):
            acc[0][k] = dtype(acc[0][k] + acc[j][k])
    return acc[0]


def row_sum(values, dtype):
    size_ilp = len(values) // 4
    partial = multi_row_sum([values[4 * i:4 * i + 4] for i in range(size_ilp)], dtype) if size_ilp \
        else [dtype(0)] * 4
    for v in values[4 * size_ilp:]:
        partial[0] = dtype(partial[0] + v)
    for k in range(1, 4):
        partial[0] = dtype(partial[0] + partial[k])
    return partial[0]


def outer_sum(a, lanes):
    """a: (n, k) summed down its rows: vectorized_outer_sum (k >= lanes) or scalar_outer_sum."""
    dtype = a.dtype.type
    n, k = a.shape
    block = 4 if k < lanes else 4 * lanes
    out, j = [], 0
    while j + block <= k:
        out += multi_row_sum(a[:, j:j + block].tolist(), dtype)
        j += block
    out += [row_sum(a[:, c].tolist(), dtype) for c in range(j, k)]
    return np.array(out, dtype=a.dtype)


def inner_sum(row, lanes, dtype):
    """One contiguous row: vectorized_inner_sum (``lanes`` or more values) or scalar_inner_sum."""
    n = len(row)
    if n < lanes:
        return row_sum(row, dtype)
    vectors = n // lanes
    acc = [row_sum([row[j * lanes + lane] for j in range(vectors)], dtype) for lane in range(lanes)]
    final = dtype(0)
    for v in row[vectors * lanes:]:
        final = dtype(final + v)
    for lane in range(lanes):
        final = dtype(final + acc[lane])
    return final


LANES = {np.float32: 8, np.float64: 4}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, k", [(256, 2), (257, 1 + 2), (300, 4), (511, 5), (1024, 7), (1000, 8), (700, 9),
                                  (333, 16), (260, 31), (290, 32), (270, 33), (256, 70), (4097, 3), (5000, 2)])
def test_sums_down_rows_add_as_torchs_kernel(dtype, n, k):
    a = (np.random.default_rng(n * k).standard_normal((n, k)) * 100).astype(dtype)
    got = torch_sum(a, 0)
    assert got.dtype == a.dtype and got.shape == (k,)
    np.testing.assert_array_equal(got, outer_sum(a, LANES[dtype]))
    # and not NumPy's order, row after row (the test could not tell them apart otherwise)
    assert not np.array_equal(got, np.add.reduce(a, 0)) or k > 64


def test_more_than_two_to_the_twenty_rows_take_longer_steps():
    """From 2**20 + 1 values a level passes after 32 of them (2 ** (ceil(log2 n) // 4)); row_sum's
    four cascades each see a quarter of the rows, so 2**22 + 4 rows reach it (too many for the
    transcription above: torch itself, single-threaded, is the reference)."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    n = (1 << 22) + 40
    a = (np.random.default_rng(1).standard_normal((n, 2)) * 100).astype(np.float32)
    np.testing.assert_array_equal(torch_sum(a, 0), torch.from_numpy(a).sum(0).numpy())


@pytest.mark.parametrize("shape, axis, keepdims", [
    ((300, 3), 0, True), ((300, 1, 3), (0, 1), False), ((2, 300, 5), 1, False), ((2, 300, 5), (1,), True),
    ((1, 400, 2, 3), 1, False), ((20, 20, 3), (0, 1), False)])
def test_shapes_keepdims_and_leading_dims(shape, axis, keepdims):
    a = (np.random.default_rng(7).standard_normal(shape) * 10).astype(np.float32)
    got = torch_sum(a, axis, keepdims)
    want_numpy = np.add.reduce(a, axis, keepdims=keepdims)
    assert got.shape == want_numpy.shape and got.dtype == want_numpy.dtype
    axes = (axis,) if isinstance(axis, int) else axis
    kept = [d for d in range(a.ndim) if d not in axes]
    moved = np.moveaxis(a, list(axes), list(range(len(axes))))  # reduced dims first, then the kept
    n = int(np.prod([shape[d] for d in axes]))
    columns = moved.reshape(n, -1)
    if kept and kept[0] < max(axes):  # kept dims before the run: each block on its own
        before = int(np.prod([shape[d] for d in kept if d < min(axes)]))
        blocks = a.reshape(before, n, -1)
        want = np.stack([outer_sum(b, 8) for b in blocks])
    else:
        want = outer_sum(columns, 8)
    np.testing.assert_array_equal(got.reshape(-1), want.reshape(-1))


def test_no_negative_zero_and_never_the_input_itself():
    a = np.full((300, 2), -0.0, dtype=np.float32)
    got = torch_sum(a, 0)
    assert np.signbit(got).tolist() == [False, False]  # torch's accumulators start at +0.0
    got[0] = 5
    assert a[0, 0] == 0


@pytest.mark.parametrize("shape, axis", [((300, 2), 1), ((300, 2), None), ((300,), 0), ((20, 2), 0), ((300, 2, 3), (0, 2)),
                                         ((3, 16), 1), ((40,), None)])
def test_other_sums_are_numpys(shape, axis):
    """Along rows of 4 or fewer, or 16 or more (float32) values, down fewer rows than
    SUM_DOWN_FROM, two separate runs of reduced dims: NumPy's sum."""
    a = (np.random.default_rng(3).standard_normal(shape) * 100).astype(np.float32)
    np.testing.assert_array_equal(torch_sum(a, axis), np.add.reduce(a, axis))
    f = a.astype(np.float16)
    np.testing.assert_array_equal(torch_sum(f, axis), np.add.reduce(f, axis))
    t = np.ascontiguousarray(a.T).T  # not C-contiguous
    np.testing.assert_array_equal(torch_sum(t, axis), np.add.reduce(t, axis))
    assert SUM_DOWN_FROM > 20


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [1, 3, 20])
def test_sums_along_rows_of_up_to_two_vectors_add_as_torchs_kernel(dtype, rows):
    """5 to 15 values a row (float64: 7): torch adds them one after another in its own order."""
    lanes = LANES[dtype]
    rng = np.random.default_rng(rows)
    for n in range(1, 2 * lanes):
        a = (rng.standard_normal((rows, n)) * 100).astype(dtype)
        want = np.array([inner_sum(r, lanes, dtype) for r in a.tolist()], dtype=dtype)
        for axis in (1, -1, (1,)):
            got = torch_sum(a, axis)
            assert got.shape == (rows,) and got.dtype == a.dtype
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(torch_sum(a, 1, True), want[:, None])
        flat = a[0]
        total = torch_sum(flat)
        assert isinstance(total, dtype) and total == inner_sum(flat.tolist(), lanes, dtype)
        if rows == 3 and n * rows < 2 * lanes:  # everything of a matrix: its values as one row
            assert torch_sum(a) == inner_sum(a.reshape(-1).tolist(), lanes, dtype)
    a = (rng.standard_normal((rows, 6)) * 100).astype(dtype)
    assert not all(np.array_equal(torch_sum(r), np.add.reduce(r)) for r in a) or rows == 1


# -- against torch ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [256, 300, 1024, 4097])
@pytest.mark.parametrize("k", [2, 3, 5, 8, 16, 33, 70])
def test_sum_mean_and_a_broadcast_gradient_down_a_batch_are_torchs(n, k):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # (torch splits bigger sums over threads: its bits then depend on them)
    rng = np.random.default_rng(n + k)
    for dtype, ours in ((np.float32, gc.float32), (np.float64, gc.float64)):
        a = (rng.standard_normal((n, k)) * 50).astype(dtype)
        r = (rng.standard_normal(k) + 2).astype(dtype)
        T, R = torch.tensor(a, requires_grad=True), torch.tensor(r, requires_grad=True)
        G, Rg = gc.tensor(a.tolist(), dtype=ours, requires_grad=True), gc.tensor(r.tolist(), dtype=ours, requires_grad=True)
        (T / R).backward(torch.ones(n, k, dtype=T.dtype))
        (G / Rg).backward(gc.ones(n, k, dtype=ours))
        for w, g in ((T.sum(0), G.sum(0)), (T.mean(0), G.mean(0)), (T.sum(0, keepdim=True), G.sum(0, keepdim=True)),
                     (R.grad, Rg.grad)):
            np.testing.assert_array_equal(np.array(g.tolist(), dtype=dtype), w.detach().numpy())


@pytest.mark.parametrize("shape", [(5,), (7,), (2, 3), (3, 3), (3, 4), (15,), (4, 3), (2, 7), (1, 9), (9, 1), (3, 1, 5)])
def test_small_sums_and_means_print_torchs_digits(shape):
    """A learner's ``x.sum().item()`` or ``x.mean(-1)`` of a few values (up to 15 float32, 7
    float64): every digit torch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(shape))
    checked = 0
    for dtype, ours in ((np.float32, gc.float32), (np.float64, gc.float64)):
        most = 2 * LANES[dtype] - 1
        for _ in range(20):
            a = (rng.standard_normal(shape) * 10).astype(dtype)
            T, G = torch.tensor(a), gc.tensor(a.tolist(), dtype=ours)
            if a.size <= most:
                assert G.sum().item() == T.sum().item()
                assert G.mean().item() == T.mean().item()
                checked += 1
            if shape[-1] <= most:
                assert G.sum(-1).tolist() == T.sum(-1).tolist()
                assert G.mean(-1, keepdim=True).tolist() == T.mean(-1, keepdim=True).tolist()
                checked += 1
    assert checked >= 20


@pytest.mark.parametrize("shape, target", [((4, 300, 3), (1, 3)), ((6, 300, 2), (1, 1, 2)), ((2, 5, 7), (5, 1)),
                                           ((300, 4, 6), (4, 1)), ((2, 7, 3), (7, 1)), ((3, 7), (3, 1))])
def test_a_broadcast_gradient_is_one_sum_as_torchs_sum_to(shape, target):
    """torch's sum_to sums the leading dims and the target's 1s in one reduction: (4, 300, 3) to
    (1, 3) is one cascade down 1,200 rows, not 300 rows four times and then the four sums; (2, 5, 7)
    to (5, 1) sums each row of 7 in torch's order, then those sums over the 2 in order."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    a = (rng.standard_normal(shape) * 10).astype(np.float32)
    w = (rng.standard_normal(target) + 3).astype(np.float32)
    W = torch.tensor(w, requires_grad=True)
    (torch.tensor(a) / W).backward(torch.ones(shape))
    ours = gc.tensor(w.tolist(), requires_grad=True)
    (gc.tensor(a.tolist()) / ours).backward(gc.ones(*shape))
    np.testing.assert_array_equal(np.array(ours.grad.tolist(), dtype=np.float32), W.grad.numpy())
