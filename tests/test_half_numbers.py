"""A float16 tensor times or over a Python number, as torch's CPU kernels compute it: in float32
with the number a float32, rounded to float16 once, forward and backward (MulBackward0's and
DivBackward0's gradient by the number). NumPy's float16 loop rounds the number to float16 first:
before, a quarter to a third of the elements differed from torch. Addition and subtraction of a
number already agreed (torch rounds the number to the tensor's dtype there) and stay as they were."""

import random

import numpy as np
import pytest

import gradcli as gc

torch = pytest.importorskip("torch")

CASES = {
    "x * c": lambda L, x: x * 1.3, "c * x": lambda L, x: 1.3 * x, "x / c": lambda L, x: x / 1.3,
    "c / x": lambda L, x: 1.3 / x, "x.mul(c)": lambda L, x: x.mul(0.1), "div(x, c)": lambda L, x: L.div(x, 3.7),
    "mul_": lambda L, x: (x * 1).mul_(1.3), "div_": lambda L, x: (x * 1).div_(0.7),
    "chain": lambda L, x: (x * 0.1) / 0.3 * 7.1, "x * int": lambda L, x: x * 3, "x + c": lambda L, x: x + 1.3,
    "x - c": lambda L, x: x - 1.3, "x * x": lambda L, x: x * x,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_float16_with_numbers_as_torch(name):
    rng = random.Random(1)
    values = [rng.uniform(0.1, 10) for _ in range(2000)]
    seed = [rng.uniform(-3, 3) for _ in range(2000)]
    gx = gc.tensor(values, dtype=gc.float16, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.float16, requires_grad=True)
    got, want = CASES[name](gc, gx), CASES[name](torch, tx)
    got.backward(gc.tensor(seed, dtype=gc.float16))
    want.backward(torch.tensor(seed, dtype=torch.float16))
    assert str(got.dtype) == str(want.dtype) == "torch.float16" and str(gx.grad.dtype) == "torch.float16"
    assert np.array_equal(np.asarray(got.tolist(), np.float32), want.detach().float().numpy())
    assert np.array_equal(np.asarray(gx.grad.tolist(), np.float32), tx.grad.float().numpy())
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__


def test_the_number_is_shown_as_given():
    y = gc.tensor([1.5], dtype=gc.float16, requires_grad=True) * 1.3
    assert y.grad_fn._saved_other.item() == 1.3


def test_second_derivatives_keep_the_dtype():
    x = gc.tensor([1.5, 2.5], dtype=gc.float16, requires_grad=True)
    (g,) = gc.autograd.grad((x * x * 1.3).sum(), x, create_graph=True)
    (h,) = gc.autograd.grad(g.sum(), x)
    tx = torch.tensor([1.5, 2.5], dtype=torch.float16, requires_grad=True)
    (tg,) = torch.autograd.grad((tx * tx * 1.3).sum(), tx, create_graph=True)
    (th,) = torch.autograd.grad(tg.sum(), tx)
    assert g.tolist() == tg.tolist() and h.tolist() == th.tolist() and str(h.dtype) == "torch.float16"
