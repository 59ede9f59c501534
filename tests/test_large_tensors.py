"""Large-tensor fast paths give what the general ones give, bit for bit.

Row-wise kernels run by blocks of rows on threads (gradcli/backend/rows.py) give the whole-array
kernel's result: softmax, log_softmax, logsumexp and their gradients, at the real size threshold
and, with the threshold and block size made tiny, on awkward shapes (blocks that do not divide the
rows, one row a block, rows of infinities and NaN, 3-d, float64). relu's backward by bits is
np.where's; a matrix product of a broadcast gradient is NumPy's."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import gradcli as gc
from gradcli.backend import rows
from helpers import same_bits
from gradcli.ops import reduction as R
from gradcli.ops.formulas import ArrayMath
from gradcli.backend import NUMPY

AM = ArrayMath(NUMPY)


def _bits(a, b):
    """Equal bit for bit, same dtype and shape (a NaN's sign aside: blocks of other shapes can take
    other loops of NumPy's, which set it by operand order)."""
    same_bits(a, b, nan_signs=False)


def _cases(x, dim):
    """Each row-wise computation of x along ``dim``: name -> a function of nothing."""
    y = R._softmax(np, x, dim)
    ly = R._log_softmax(np, x, dim)
    grad = np.cos(x * 3).astype(x.dtype)
    lse = R._logsumexp(np, x, (dim,), True)
    row_grad = np.sin(lse).astype(x.dtype)
    flat_grad = np.broadcast_to(x.dtype.type(0.25), lse.shape[:-1])  # mean's backward: a broadcast
    return {
        "softmax": lambda: R._softmax(np, x, dim),
        "log_softmax": lambda: R._log_softmax(np, x, dim),
        "logsumexp": lambda: R._logsumexp(np, x, (dim,), True),
        "logsumexp dropped": lambda: R._logsumexp(np, x, (dim,), False),
        "softmax grad": lambda: AM.softmax_backward(grad, y, dim),
        "log_softmax grad": lambda: AM.log_softmax_backward(grad, ly, dim),
        "logsumexp grad": lambda: R.logsumexp_backward(AM, row_grad, x, lse, (dim,), True),
        "logsumexp grad, broadcast": lambda: R.logsumexp_backward(AM, flat_grad, x, lse[..., 0], (dim,), False),
    }


def _inputs():
    rng = np.random.default_rng(3)
    out = []
    for dtype in (np.float32, np.float64):
        out.append(rng.standard_normal((37, 11)).astype(dtype) * 5)
        out.append(rng.standard_normal((4, 9, 6)).astype(dtype))
        special = rng.standard_normal((12, 5)).astype(dtype)
        special[2] = np.inf
        special[3, 1] = -np.inf
        special[5, 2] = np.nan
        special[7] = -np.inf
        special[9, 0] = 1e30
        out.append(special)
    return out


def _whole_and_blocked(monkeypatch, cases, step_rows, width):
    """Each case computed on the whole arrays, then by blocks of ``step_rows`` rows on 3 threads."""
    monkeypatch.setattr(rows, "MIN_ELEMENTS", 1 << 40)
    whole = {name: f() for name, f in cases.items()}
    monkeypatch.setattr(rows, "MIN_ELEMENTS", 16)
    monkeypatch.setattr(rows, "BLOCK_ELEMENTS", step_rows * width)
    monkeypatch.setattr(rows, "THREADS", 3)
    return whole, {name: f() for name, f in cases.items()}


@pytest.mark.parametrize("k", range(6))
@pytest.mark.parametrize("step", [1, 3, 8])
def test_blocks_on_threads_give_the_whole_array_bit_for_bit(monkeypatch, k, step):
    x = _inputs()[k]
    with np.errstate(all="ignore"):
        whole, blocked = _whole_and_blocked(monkeypatch, _cases(x, x.ndim - 1), step, x.shape[-1])
    for name in whole:
        _bits(blocked[name], whole[name])


def test_at_the_real_size_threshold_the_blocks_are_the_whole_array(monkeypatch):
    x = np.linspace(-3.0, 3.0, (rows.MIN_ELEMENTS // 1000 + 1) * 1000, dtype=np.float32).reshape(-1, 1000)
    x[7, 3] = np.inf
    x[9] = -np.inf
    with np.errstate(all="ignore"):
        blocked = {name: f() for name, f in _cases(x, 1).items()}
        monkeypatch.setattr(rows, "MIN_ELEMENTS", 1 << 40)
        whole = {name: f() for name, f in _cases(x, 1).items()}
    for name in whole:
        _bits(blocked[name], whole[name])


def test_other_dims_and_layouts_are_left_to_the_caller(monkeypatch):
    """Blocks are rows of the last dim of C-contiguous arrays, two blocks at least; anything else
    is None: the caller computes the whole at once."""
    monkeypatch.setattr(rows, "BLOCK_ELEMENTS", 4)
    calls = []

    def fn(x, dim):
        calls.append(x.shape)
        return np.exp(x)

    x = np.ones((6, 4), np.float32)
    for dim, a in ((0, x), (1, x.T.copy().T), ((0, 1), x), (0, x[0]), (1, x[:1])):
        assert rows.by_rows(fn, dim, a.shape, a) is None
    assert not calls
    out = rows.by_rows(fn, 1, x.shape, x)
    assert calls == [(1, 4)] * 6 and out.shape == x.shape and np.array_equal(out, np.exp(x))


@pytest.mark.parametrize("value, expected", [
    ("1", 1), ("3", 3), ("4,2", 4), (" 2 ", 2), ("0003", 3),
    ("0", None), ("", None), ("-2", None), ("1.5", None), ("two", None), ("9" * 5000, None),
])
def test_omp_num_threads_sets_how_many_threads_share_the_blocks(value, expected):
    """OMP_NUM_THREADS, as torch and OpenBLAS read it (the first of a nested list); anything that is
    not a positive count leaves the default (the cores this process may use, at most 8)."""
    default = rows.threads({})
    assert 1 <= default <= 8
    assert rows.threads({"OMP_NUM_THREADS": value}) == (default if expected is None else expected)


def test_on_one_thread_the_blocks_run_in_order_with_no_pool(monkeypatch):
    monkeypatch.setattr(rows, "THREADS", 1)
    monkeypatch.setattr(rows, "BLOCK_ELEMENTS", 8)
    monkeypatch.setattr(rows, "_POOL", [None, None])
    seen = []

    def fn(x, dim):
        seen.append(float(x[0, 0]))
        return x * 2

    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    assert np.array_equal(rows.by_rows(fn, 1, x.shape, x), x * 2)
    assert seen == [0.0, 8.0, 16.0, 24.0] and rows._POOL == [None, None]


def test_a_run_under_omp_num_threads_1_starts_no_thread_of_ours():
    code = ("import threading, numpy as np, gradcli\n"
            "from gradcli.backend import rows\n"
            "x = gradcli.tensor(np.ones((2048, 1024), np.float32), requires_grad=True)\n"
            "x.log_softmax(1).sum().backward()\n"
            "print(rows.THREADS, sorted(t.name for t in threading.enumerate() if t.name.startswith('gradcli')))\n")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "1 []"


def test_an_error_state_set_by_the_caller_holds_on_the_threads(monkeypatch):
    monkeypatch.setattr(rows, "MIN_ELEMENTS", 4)
    monkeypatch.setattr(rows, "BLOCK_ELEMENTS", 2)
    x = np.full((8, 2), np.inf, np.float32)
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError):
            R._softmax(np, x, 1)  # inf - inf, on whichever thread


def test_softmax_of_a_large_tensor_agrees_with_torch():
    torch = pytest.importorskip("torch")
    data = np.linspace(-2.0, 2.0, (rows.MIN_ELEMENTS // 500) * 1000, dtype=np.float32).reshape(-1, 1000)
    x = gc.tensor(data, requires_grad=True)
    loss = (x.softmax(dim=1) * x).sum() + x.logsumexp(dim=1).mean()
    loss.backward()
    t = torch.from_numpy(data).requires_grad_()
    tl = (t.softmax(dim=1) * t).sum() + t.logsumexp(dim=1).mean()
    tl.backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-4)  # float32 sums of 2M terms, in two orders


# -- the matrix-product case's backward: relu's mask by bits, a broadcast gradient copied for BLAS ----

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_relu_backward_by_bits_is_where_bit_for_bit(dtype):
    rng = np.random.default_rng(5)
    n = 3 * 4096
    x = rng.standard_normal(n).astype(dtype)
    x[:8] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30, -1e-30, 0.0]
    grad = rng.standard_normal(n).astype(dtype)
    grad[8:16] = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, -1.0, 1.0]
    grad[16:24] = grad[8:16]
    x[8:24] = np.tile([1.0, -1.0], 8)
    for shape in ((n,), (3, 64, 64)):
        xs, gs = x.reshape(shape), grad.reshape(shape)
        for t in (0, 0.5):
            got = AM.threshold_backward(gs, xs, t)
            want = np.where(xs <= t, 0, gs)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.base is None  # its own memory, as np.where's: a leaf's .grad takes it, uncopied
            ints = {2: np.int16, 4: np.int32, 8: np.int64}[want.dtype.itemsize]
            assert np.array_equal(got.view(ints), want.view(ints))  # NaN payloads and signs too
    strided = AM.threshold_backward(grad.reshape(96, 128).T, x.reshape(96, 128).T, 0)
    assert np.array_equal(strided, np.where(x.reshape(96, 128).T <= 0, 0, grad.reshape(96, 128).T), equal_nan=True)


def test_a_broadcast_gradient_in_a_product_is_copied_with_the_same_result():
    rng = np.random.default_rng(6)
    w = rng.standard_normal((300, 200)).astype(np.float32)
    h = rng.standard_normal((257, 200)).astype(np.float32)
    for g in (np.broadcast_to(np.float32(0.37), (257, 300)), np.broadcast_to(w[:, 0], (257, 300))):
        _bits(AM.mm(g, w), np.matmul(g, w))
        _bits(AM.mm(h.T, g), np.matmul(h.T, g))
        _bits(AM.mm(h.T, g), np.matmul(h.T, np.ascontiguousarray(g)))


# -- a gradient only the engine holds is written over by the formula of its one-input node ----------

def _program_grads(build, size):
    """x.grad and the retained gradients of ``build(x)`` (a list of tensors to sum, and the tensors
    whose .grad to keep), x of ``size`` elements as rows of 8."""
    data = np.cos(np.arange(size, dtype=np.float32)).reshape(-1, 8) * 3
    x = gc.tensor(data, requires_grad=True)
    outs, kept = build(x)
    for t in kept:
        t.retain_grad()
    total = outs[0]
    for o in outs[1:]:
        total = total + o
    (total * total).sum().backward()
    return [x.grad.numpy()] + [t.grad.numpy() for t in kept]


BUILDS = {
    "relu": lambda x: ([(x * 2).relu()], []),
    "relu, its input's gradient kept": lambda x: (lambda y: ([y.relu()], [y]))(x * 2),
    "relu, its gradient kept": lambda x: (lambda r: ([r], [r]))((x * 2).relu()),
    "two relus of one gradient": lambda x: (lambda y: ([y.relu(), (-y).relu()], [y]))(x * 2),
    "softmax": lambda x: ([(x * 2).softmax(1) * x], []),
    "softmax, its gradient kept": lambda x: (lambda s: ([s * x], [s]))((x * 2).softmax(1)),
    "log_softmax": lambda x: ([(x * 2).log_softmax(1) * x], []),
    "log_softmax, its gradient kept": lambda x: (lambda s: ([s * x], [s]))((x * 2).log_softmax(1)),
}


@pytest.mark.parametrize("name", list(BUILDS))
@pytest.mark.parametrize("size", [64, 8 * 4096])
def test_a_spare_gradient_written_over_gives_the_same_gradients(monkeypatch, name, size):
    """Against the same program with no gradient ever lent (the size to lend made unreachable):
    the same bits, and a gradient that a tensor keeps (retain_grad) or another node still needs is
    never the one written over."""
    from gradcli.autograd import node
    monkeypatch.setattr(rows, "MIN_ELEMENTS", 1024)
    got = _program_grads(BUILDS[name], size)
    monkeypatch.setattr(node, "_REUSE_SIZE", 1 << 62)
    want = _program_grads(BUILDS[name], size)
    for a, b in zip(got, want):
        _bits(a, b)


@pytest.mark.parametrize("op", ["relu", "softmax"])
def test_a_grad_fn_posthook_sees_the_gradient_its_node_received(monkeypatch, op):
    """A hook on the node's grad_fn reads its grad_outputs after the formula ran: the walk holds that
    gradient for it, so the formula does not write its result there."""
    from gradcli.autograd import node
    monkeypatch.setattr(rows, "MIN_ELEMENTS", 1024)

    def run():
        x = gc.tensor(np.cos(np.arange(8 * 4096, dtype=np.float32)).reshape(-1, 8), requires_grad=True)
        y = x * 2
        out = y.relu() if op == "relu" else y.softmax(1)
        seen = []
        out.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(grad_outputs[0].numpy().copy()))
        (out * x).sum().backward()  # out's gradient, x, is not 0 where relu's is
        return x.grad.numpy(), seen[0]

    got = run()
    monkeypatch.setattr(node, "_REUSE_SIZE", 1 << 62)
    want = run()
    for a, b in zip(got, want):
        _bits(a, b)
