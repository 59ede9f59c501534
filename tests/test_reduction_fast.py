"""The NumPy fast forms of reductions, softmax, the losses, sigmoid and relu (ops/reduction.py,
ops/nn_functional.py, ops/pointwise.py, ops/formulas.py): each is the same operations as its
general form, so the same bits; the calls that take them (a float tensor, one int dim) give
torch's values, gradients and nodes; the calls that do not (errors, ignored targets, NaN) still
take the general path."""

from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc
from gradcli.backend import NUMPY
from gradcli.backend.cascade import torch_sum
from gradcli.ops import FUNCTIONS, nn_functional as NF, pointwise as PW, reduction as R
from gradcli.ops.formulas import ArrayMath
from helpers import same_bits as _bits

xp = NUMPY.xp
AM = ArrayMath(NUMPY)
F = {name: info.fn for name, info in FUNCTIONS.items() if info.category == "functional"}
SPECIAL = [0.0, -0.0, 1e-30, -1e-30, 20.0, -20.0, 90.0, -90.0, 1e30, -1e30]


def _arrays():
    rng = np.random.default_rng(7)
    out = []
    for dtype in (np.float32, np.float64):
        out.append(rng.standard_normal((3, 5)).astype(dtype) * 4)
        out.append(rng.standard_normal((2, 3, 4)).astype(dtype))
        out.append(np.array(SPECIAL, dtype).reshape(2, 5))
    return out


# -- the same operations as the general forms -------------------------------------------------------

@pytest.mark.parametrize("k", range(6))
def test_forwards_are_their_general_forms_bit_for_bit(k):
    x = _arrays()[k]
    with np.errstate(all="ignore"):
        for dim in range(x.ndim):
            e = np.exp(x - np.max(x, axis=dim, keepdims=True))
            _bits(R._softmax(xp, x, dim), e / np.sum(e, axis=dim, keepdims=True))
            d = x - np.max(x, axis=dim, keepdims=True)
            _bits(R._log_softmax(xp, x, dim), d - np.log(np.sum(np.exp(d), axis=dim, keepdims=True)))
            m = np.max(x, axis=dim, keepdims=True)
            lse = np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True)) + m
            _bits(R._logsumexp(xp, x, (dim,), True), lse)
            _bits(R._logsumexp(xp, x, (dim,), False), np.squeeze(lse, dim))
            for keep in (False, True):  # (sums in torch's order: tests/test_cascade.py)
                total = torch_sum(x, (dim,), keep)
                _bits(R._mean(xp, x, (dim,), keep), total / x.dtype.type(x.shape[dim]))
                _bits(R.SumBackward1.forward(xp, x, (dim,), keep), total)
                reduced = np.sum(x, axis=dim)
                _bits(AM.unsqueeze_dims(reduced, (dim,), x.ndim), np.expand_dims(reduced, dim))
            for correction in (0, 1, 0.5):
                for keep in (False, True):
                    n = x.shape[dim]
                    mean = np.add.reduce(x, dim, keepdims=True)
                    mean /= n
                    want = np.add.reduce((x - mean) ** 2, dim, keepdims=keep) / x.dtype.type(n - correction)
                    _bits(R._var(xp, x, (dim,), correction, keep), want)
                    _bits(R._std(xp, x, (dim,), correction, keep), np.sqrt(want))
        _bits(PW._sigmoid(xp, x), 1 / (1 + np.exp(-x)))  # torch's kernel (test_sigmoid_kernels: its values)
        _bits(PW._relu(xp, x), np.where(x <= 0, np.zeros_like(x), x))


def test_full_var_is_a_numpy_scalar_of_the_dtype_and_no_dof_is_numpys():
    x = _arrays()[3]  # float64
    mean = np.add.reduce(x, None, keepdims=True) / x.size
    _bits(R._mean(xp, x, None, False), np.mean(x))
    got = R._var(xp, x, None, 1, False)
    assert type(got) is np.float64 and got == np.add.reduce((x - mean) ** 2, None) / (x.size - 1)
    one = np.array([[2.0], [3.0]])
    with pytest.warns(RuntimeWarning):  # no degrees of freedom: np.var's own answer (and warning)
        got = R._var(xp, one, (1,), 1, False)
    with pytest.warns(RuntimeWarning):
        _bits(got, np.var(one, axis=(1,), ddof=1))


@pytest.mark.parametrize("k", range(6))
def test_array_backwards_are_their_general_forms_bit_for_bit(k):
    x = _arrays()[k]
    rng = np.random.default_rng(k)
    with np.errstate(all="ignore"):
        for dim in range(x.ndim):
            g = rng.standard_normal(x.shape).astype(x.dtype)
            y = R._softmax(xp, x, dim)
            _bits(AM.softmax_backward(g, y, dim), y * (g - np.sum(g * y, axis=dim, keepdims=True)))
            y = R._log_softmax(xp, x, dim)
            _bits(AM.log_softmax_backward(g, y, dim), g - xp.exp(y) * np.sum(g, axis=dim, keepdims=True))  # the namespace's exp
            y = PW._sigmoid(xp, x)
            _bits(AM.sigmoid_backward(g, y), g * (1 - y) * y)
            y = PW._relu(xp, x)
            _bits(AM.threshold_backward(g, y, 0), np.where(y <= 0, np.zeros_like(g), g))
            gr = rng.standard_normal(np.delete(x.shape, dim)).astype(x.dtype)
            kept = np.expand_dims(gr, dim)
            mean = np.add.reduce(x, dim, keepdims=True)
            mean /= x.shape[dim]
            _bits(R.var_backward(AM, gr, x, (dim,), 1, False), (2.0 / (x.shape[dim] - 1)) * kept * (x - mean))
            r = R._logsumexp(xp, x, (dim,), False)
            _bits(R.logsumexp_backward(AM, gr, x, r, (dim,), False),
                  np.broadcast_to(kept, x.shape) * np.exp(x - np.expand_dims(r, dim)))
            r = R._vector_norm(xp, x, 2, (dim,), False)
            _bits(r, np.sqrt(np.sum(np.abs(x) * np.abs(x), axis=(dim,))))
            rk = np.expand_dims(r, dim)
            _bits(R.norm_backward(AM, gr, x, 2, r, (dim,), False),
                  kept * np.where(rk == 0, np.asarray(0, dtype=x.dtype), x / rk))
            r = np.max(x, axis=dim)
            mask = (x == np.expand_dims(r, dim)).astype(x.dtype)
            _bits(R.amax_backward(AM, gr, x, r, (dim,), False),
                  np.broadcast_to(kept, x.shape) * mask / np.sum(mask, axis=dim, keepdims=True))
        g0 = np.asarray(x.dtype.type(-1.5))
        r = np.asarray(np.max(x))
        mask = (x == r).astype(x.dtype)
        # torch's zeros with grad / count at the maximum: the general form's product only in the sign
        # of its zeros (-0.0 there for a negative grad)
        _bits(R.evenly_distribute(AM, g0, x, r), np.where(mask == 1, g0 / np.sum(mask), x.dtype.type(0)))
        np.testing.assert_array_equal(R.evenly_distribute(AM, g0, x, r), mask * (g0 / np.sum(mask)))


def test_bce_forward_and_backward_are_their_general_forms_bit_for_bit():
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        x = np.concatenate([rng.uniform(0, 1, 8), [0.0, 1.0, 1e-13, 1 - 1e-7]]).astype(dtype).reshape(3, 4)
        t = rng.uniform(0, 1, (3, 4)).astype(dtype)
        with np.errstate(divide="ignore"):
            want = (t - 1) * np.maximum(np.log1p(-x), -100.0) - t * np.maximum(np.log(x), -100.0)
        for code in (0, 1, 2):
            _bits(NF._bce_forward(xp, x, t, None, code), want if code == 0 else want.mean() if code == 1 else want.sum())
            g = np.asarray(dtype(0.75)) if code else rng.standard_normal((3, 4)).astype(dtype)
            floor = (1 - x) * x
            out = g * (x - t) / np.where(floor > 1e-12, floor, dtype(1e-12))
            _bits(NF.bce_grad(AM, g, x, t, None, code), out / x.size if code == 1 else out)


# -- the calls that take them, against torch -------------------------------------------------------

torch_calls = [
    ("sum", lambda x: x.sum(-1)), ("mean", lambda x: x.mean(1, keepdim=True)), ("var", lambda x: x.var(-1)),
    ("std", lambda x: x.std(0, keepdim=True)), ("logsumexp", lambda x: x.logsumexp(-1)),
    ("softmax", lambda x: x.softmax(-1)), ("log_softmax", lambda x: x.log_softmax(0)),
    ("max", lambda x: x.max(1).values), ("min", lambda x: x.min(-1, keepdim=True).values),
    ("amax", lambda x: x.amax(1)), ("amin", lambda x: x.amin()), ("max_all", lambda x: x.max()),
    ("norm", lambda x: x.norm(dim=1)), ("norm_all", lambda x: x.norm()),
    ("sigmoid", lambda x: x.sigmoid()), ("relu", lambda x: x.relu()),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, call", torch_calls, ids=[c[0] for c in torch_calls])
def test_values_gradients_and_nodes_match_torch(name, call, dtype):
    torch = pytest.importorskip("torch")
    values = [[0.9, -1.2, 0.9, 0.3], [-0.7, 1.4, 2.0, 2.0], [0.0, -3.5, 1.25, -0.5]]
    ours = gc.tensor(values, dtype=dtype, requires_grad=True)
    theirs = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    a, b = call(ours), call(theirs)
    assert type(a.grad_fn).__name__ == type(b.grad_fn).__name__
    assert a.dtype.name == str(b.dtype).replace("torch.", "") and tuple(a.shape) == tuple(b.shape)
    tol = dict(rtol=2e-6, atol=1e-7) if dtype == "float32" else dict(rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.array(a.tolist()), b.detach().numpy(), **tol)
    seed = np.linspace(-1.5, 1.0, int(np.prod(tuple(b.shape)))).reshape(tuple(b.shape))  # negatives: -0.0 shows
    a.backward(gc.tensor(seed.tolist(), dtype=dtype))
    b.backward(torch.tensor(seed, dtype=getattr(torch, dtype)))
    np.testing.assert_allclose(np.array(ours.grad.tolist()), theirs.grad.numpy(), **tol)
    assert np.array_equal(np.signbit(ours.grad._data), np.signbit(theirs.grad.numpy()))


def test_max_min_over_a_dim_give_zero_not_minus_zero_where_not_selected():
    x = gc.tensor([[0.9, 1.2], [0.7, 1.4]], requires_grad=True)
    (x.max(1).values * -1).sum().backward()
    assert x.grad.tolist() == [[0.0, -1.0], [0.0, -1.0]]
    assert not np.signbit(x.grad._data[:, 0]).any()  # torch's +0.0 (the general form gave -0.0)


@pytest.mark.parametrize("row", [[float("inf"), 1.0], [float("-inf"), 1.0], [float("-inf"), float("-inf")],
                                 [float("nan"), 1.0], [float("inf"), float("-inf")], [1e30, -1e30]])
def test_infinite_and_nan_rows_as_torch(row):
    torch = pytest.importorskip("torch")
    ours, theirs = gc.tensor([row, [0.5, 2.0]]), torch.tensor([row, [0.5, 2.0]])
    with np.errstate(all="ignore"):
        for name in ("softmax", "log_softmax", "logsumexp"):
            got, want = np.array(getattr(ours, name)(1).tolist()), getattr(theirs, name)(1).numpy()
            assert np.array_equal(np.isnan(got), np.isnan(want)), name  # torch's NaN rows, and only those
            np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-7, equal_nan=True, err_msg=name)


# -- nll_loss: the usual call's single check, and the calls it leaves to the general path --------------

def _nll_pair(target, **kw):
    torch = pytest.importorskip("torch")
    values = [[0.2, -1.0, 0.5], [1.5, 0.3, -0.2], [-0.7, 0.1, 0.9], [0.4, 0.4, -2.0]]
    ours, theirs = gc.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    a = F["nll_loss"](ours, gc.tensor(target), **kw)
    b = torch.nn.functional.nll_loss(theirs, torch.tensor(target), **kw)
    return ours, theirs, a, b


@pytest.mark.parametrize("target, kw", [
    ([1, 0, 2, 2], {}), ([1, 0, 2, 2], {"reduction": "sum"}), ([1, 0, 2, 2], {"reduction": "none"}),
    ([1, -100, 2, -100], {}), ([1, 0, 2, 1], {"ignore_index": 1}), ([1, 0, 2, 1], {"ignore_index": -1}),
    ([1, 0, 2, 2], {"ignore_index": 7}), ([1, 0, 2, 2], {"weight": [0.5, 2.0, 1.5]}),
    ([-100, -100, -100, -100], {}),
])
def test_nll_loss_values_gradients_and_total_weight_as_torch(target, kw):
    torch = pytest.importorskip("torch")
    if "weight" in kw:
        ours, theirs = None, None
        values = [[0.2, -1.0, 0.5], [1.5, 0.3, -0.2], [-0.7, 0.1, 0.9], [0.4, 0.4, -2.0]]
        ours, theirs = gc.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
        a = F["nll_loss"](ours, gc.tensor(target), weight=gc.tensor(kw["weight"]))
        b = torch.nn.functional.nll_loss(theirs, torch.tensor(target), weight=torch.tensor(kw["weight"]))
    else:
        ours, theirs, a, b = _nll_pair(target, **kw)
    assert type(a.grad_fn).__name__ == type(b.grad_fn).__name__ == "NllLossBackward0"
    if kw.get("reduction") != "none":  # (torch saves 0 there, and its ignore_index as an unsigned int)
        assert float(a.grad_fn._saved_total_weight) == b.grad_fn._saved_total_weight.item()
    np.testing.assert_allclose(np.array(a.tolist()), b.detach().numpy(), rtol=2e-6, equal_nan=True)
    seed = [2.0, -1.0, 0.5, 3.0] if kw.get("reduction") == "none" else -0.75
    a.backward(gc.tensor(seed))
    b.backward(torch.tensor(seed))
    np.testing.assert_allclose(np.array(ours.grad.tolist()), theirs.grad.numpy(), rtol=2e-6)
    assert np.array_equal(np.signbit(ours.grad._data), np.signbit(theirs.grad.numpy()))


@pytest.mark.parametrize("target, bad", [([1, 0, 3, 2], 3), ([1, 0, 2, 9], 9), ([1, -1, 2, 0], -1),
                                         ([1, -5, 7, 0], -5)])
def test_nll_loss_out_of_range_targets_name_the_first_as_torch(target, bad):
    torch = pytest.importorskip("torch")
    x = gc.tensor(np.zeros((4, 3)).tolist(), requires_grad=True)
    with pytest.raises(gc.ShapeError, match=rf"^Target {bad} is out of bounds\.$"):
        F["nll_loss"](x, gc.tensor(target))
    with pytest.raises((IndexError, RuntimeError), match=rf"Target {bad} is out of bounds"):
        torch.nn.functional.nll_loss(torch.zeros(4, 3), torch.tensor(target))
    with pytest.raises(gc.ShapeError, match=rf"^Target {bad} is out of bounds\.$"):
        F["cross_entropy"](x, gc.tensor(target))


def test_cross_entropy_nodes_and_gradient_as_torch():
    torch = pytest.importorskip("torch")
    values = [[0.2, -1.0, 0.5], [1.5, 0.3, -0.2]]
    ours, theirs = gc.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    a = F["cross_entropy"](ours, gc.tensor([2, 0]))
    b = torch.nn.functional.cross_entropy(theirs, torch.tensor([2, 0]))
    assert a.grad_fn.name() == b.grad_fn.name() == "NllLossBackward0"
    assert a.grad_fn.next_functions[0][0].name() == b.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
    a.backward()
    b.backward()
    np.testing.assert_allclose(np.array(ours.grad.tolist()), theirs.grad.numpy(), rtol=2e-6, atol=1e-8)


def test_bce_refuses_nan_input_as_torch():
    torch = pytest.importorskip("torch")
    x, t = [0.5, float("nan")], [1.0, 0.0]
    with pytest.raises(RuntimeError, match="^all elements of input should be between 0 and 1$"):
        torch.nn.functional.binary_cross_entropy(torch.tensor(x), torch.tensor(t))
    with pytest.raises(gc.ShapeError, match="^all elements of input should be between 0 and 1$"):
        F["binary_cross_entropy"](gc.tensor(x), gc.tensor(t))
    both = ([0.0, 1.0], [0.0, 1.0]), ([0.0, 1.0], [1.0, 0.0])  # 0 and 1 pass (logs floored at -100)
    for x, t in both:
        want = torch.nn.functional.binary_cross_entropy(torch.tensor(x), torch.tensor(t)).item()
        assert F["binary_cross_entropy"](gc.tensor(x), gc.tensor(t)).item() == want


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_inside_the_open_interval_records_what_the_general_path_records(reduction):
    """binary_cross_entropy of inputs strictly inside (0, 1) computes without np.errstate and
    records its node directly: the same bits, node, saved values and gradients as the general
    path (taken here by an input holding an exact 0), and no warning either way."""
    import warnings
    rng = np.random.default_rng(11)
    for dtype in ("float32", "float64"):
        x = rng.uniform(0.01, 0.99, (3, 4))
        t = rng.uniform(0, 1, (3, 4))
        edge = x.copy()
        edge[0, 0] = 0.0
        for values, direct in ((x, True), (edge, False)):
            a = gc.tensor(values.tolist(), dtype=dtype, requires_grad=True)
            b = gc.tensor(t.tolist(), dtype=dtype, requires_grad=True)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                out = F["binary_cross_entropy"](a, b, reduction=reduction)
                want = NF._bce_forward(xp, a._data, b._data, None, NF._REDUCTIONS[reduction])
                _bits(out._data, np.asarray(want))
                assert out.grad_fn.name() == "BinaryCrossEntropyBackward0"
                assert out.grad_fn._saved_weight is None
                assert out.grad_fn._saved_reduction == NF._REDUCTIONS[reduction]
                assert out.grad_fn._saved_self is a and out.grad_fn._saved_target is b
                assert [f for f, _ in out.grad_fn.next_functions] == [a.grad_fn or a._accumulator(),
                                                                      b.grad_fn or b._accumulator()]
                out.backward(gc.ones_like(out))
            assert a.grad is not None and b.grad is not None
            if direct:
                torch = pytest.importorskip("torch")
                ta = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
                tb = torch.tensor(t, dtype=getattr(torch, dtype), requires_grad=True)
                tout = torch.nn.functional.binary_cross_entropy(ta, tb, reduction=reduction)
                tout.backward(torch.ones_like(tout))
                rtol = 2e-6 if dtype == "float32" else 1e-12
                np.testing.assert_allclose(np.array(out.tolist()), tout.detach().numpy(), rtol=rtol)
                np.testing.assert_allclose(np.array(a.grad.tolist()), ta.grad.numpy(), rtol=rtol)
                np.testing.assert_allclose(np.array(b.grad.tolist()), tb.grad.numpy(), rtol=rtol)


def test_nll_backward_places_the_same_bits_as_the_zero_d_division():
    """nll_loss's usual backward divides the 0-d gradient as a Python float (no ufunc call): the
    double quotient rounded to float16/32 is the dtype's own correctly rounded quotient, so every
    gradient is g / -total_weight's bits (and -g's for reduction="sum"), signs, zeros and
    subnormals included."""
    rng = np.random.default_rng(5)
    specials = [0.0, -0.0, float("inf"), float("nan"), 1e-45, 3e-39, 65504.0]
    for dtype in (np.float16, np.float32, np.float64):
        for trial in range(600):
            n, c = int(rng.integers(1, 3000 if trial % 2 else 200)), int(rng.integers(1, 4))
            t = rng.integers(0, c, n)
            scale = 10.0 ** float(rng.integers(-5, 5) if dtype == np.float16 else rng.integers(-40, 40))
            value = specials[trial] if trial < len(specials) else rng.standard_normal() * scale
            with np.errstate(over="ignore", under="ignore"):
                g = np.asarray(value).astype(dtype)
            for code in (1, 2):
                want = np.zeros((n, c), dtype)
                want[np.arange(n), t] = g / -float(n) if code == 1 else -g
                _bits(NF.nll_grad(AM, g, (n, c), t, None, float(n), -100, code), want)
