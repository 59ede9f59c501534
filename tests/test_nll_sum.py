"""nll_loss's (and so cross_entropy's) reduction adds the picked values in torch's order: its
cascade of partial sums (groups of 16 rows, row 0 last), so that the loss has torch's bits for every
batch size; before, NumPy's pairwise sum differed in the last place for most batches of 3 rows or
more. Ignored rows (ignore_index) add nothing and pass nothing up; with class weights the total
weight is torch's cascade of the weights too (the saved ``total_weight``, hence the gradient). A loss
of zero is +0.0, and no row kept gives NaN without NumPy's warning, as torch's."""

import numpy as np
import pytest

import gradcli as gc
from gradcli.ops import nn_functional as NF

torch = pytest.importorskip("torch")

SIZES = [1, 2, 3, 8, 9, 15, 16, 17, 18, 31, 32, 33, 100, 255, 256, 257, 258, 4096, 4097, 4113, 5000]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_loss_has_torchs_bits(n, dtype):
    rng = np.random.default_rng(n)
    for scale in (1e-3, 1.0, 1e3):
        c = 4
        x = (rng.standard_normal((n, c)) * scale).astype(dtype)
        t = rng.integers(0, c, n)
        for reduction in ("mean", "sum"):
            got = NF.nll_loss(gc.tensor(x), gc.tensor(t), reduction=reduction)
            want = torch.nn.functional.nll_loss(torch.tensor(x), torch.tensor(t), reduction=reduction)
            assert str(got.dtype) == str(want.dtype)
            assert got.item() == want.item(), (n, scale, reduction)


@pytest.mark.parametrize("n", [1, 5, 40])
def test_a_zero_loss_is_positive_zero(n):
    x, t = np.zeros((n, 3), np.float32), np.zeros(n, np.int64)
    for reduction in ("mean", "sum"):
        got = NF.nll_loss(gc.tensor(x), gc.tensor(t), reduction=reduction).item()
        want = torch.nn.functional.nll_loss(torch.tensor(x), torch.tensor(t), reduction=reduction).item()
        assert str(got) == str(want) == "0.0"


def test_cross_entropy_takes_the_same_sum():
    rng = np.random.default_rng(1)
    x, t = rng.standard_normal((40, 5)).astype(np.float32), rng.integers(0, 5, 40)
    logp = torch.log_softmax(torch.tensor(x), 1)
    got = NF.cross_entropy(gc.tensor(x), gc.tensor(t))
    # the same log-probabilities through both nll_loss reductions: equal where the logits' are
    want = torch.nn.functional.nll_loss(torch.tensor(np.asarray(NF.log_softmax(gc.tensor(x), 1).tolist(),
                                                                np.float32)), torch.tensor(t))
    assert got.item() == want.item()
    assert abs(got.item() - torch.nn.functional.nll_loss(logp, torch.tensor(t)).item()) < 1e-6
    got.backward() if got.requires_grad else None


@pytest.mark.parametrize("n", [1, 7, 16, 17, 33, 257, 1000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weighted", [False, True])
def test_ignored_rows_and_weights_as_torch(n, dtype, weighted):
    import warnings
    rng = np.random.default_rng(n + 1000 * weighted)
    c = 5
    for ignored_share in (0.0, 0.3, 1.0):
        x = (rng.standard_normal((n, c)) * 100).astype(dtype)
        t = rng.integers(0, c, n)
        t[rng.random(n) < ignored_share] = -100
        w = (rng.random(c) * 3).astype(dtype) if weighted else None
        for reduction in ("mean", "sum"):
            gx, tx = gc.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                got = NF.nll_loss(gx, gc.tensor(t), weight=None if w is None else gc.tensor(w), reduction=reduction)
            want = torch.nn.functional.nll_loss(tx, torch.tensor(t), weight=None if w is None else torch.tensor(w),
                                                reduction=reduction)
            assert str(got.item()) == str(want.item()), (ignored_share, reduction)
            if reduction == "mean":
                assert float(got.grad_fn._saved_total_weight) == want.grad_fn._saved_total_weight.item()
            if want.item() == want.item():  # (NaN: no row kept)
                got.backward()
                want.backward()
                assert np.array_equal(np.asarray(gx.grad.tolist(), dtype), tx.grad.numpy())


def test_every_rows_cascade_is_the_general_cascade_bit_for_bit():
    """With every row kept, the cascade is taken a level at a time (groups of 16 summed at once);
    it adds in the same order as the row-by-row form that ignored rows take, at every size around
    the levels' boundaries."""
    rng = np.random.default_rng(7)
    sizes = [*range(17, 300), 4095, 4096, 4097, 4111, 4112, 4113, 65535, 65536, 65537, 65553, 1048577]
    for n in sizes:
        for dtype in (np.float32, np.float64):
            d = (rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3])).astype(dtype)
            fast = NF._cascade_sum(d)
            general = NF._cascade_sum(d, np.arange(n))
            assert type(fast) is type(general) and fast == general, (n, dtype)
