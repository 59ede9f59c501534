"""The whole op suite on a second array backend, compared with the NumPy one.

``array_api_strict`` is a deliberately minimal array-API namespace: it has none of NumPy's
extras (``np.add.at``, ``.astype``/``.copy()`` methods, mixed slice/array indexing) and refuses
to mix its arrays with NumPy's. Running every SPEC §2 function forward and backward on it
(first and second derivatives, hooks, retain_graph, create_graph, indexing backward through
scatter-add, reductions with dim/keepdim, device moves) makes any NumPy-only call in the
engine or the ops fail here on an ordinary machine.

The same parametrized suite runs on CuPy (marked ``gpu``) when ``cupy`` imports and a CUDA
device exists; it skips cleanly otherwise.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import gradcli as gc
from gradcli.backend import NUMPY, backend_of_array, get_backend
from gradcli.errors import AutogradError, DeviceError
from helpers import clean_engine_state  # noqa: F401


def _cuda_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device
        return False


DEVICES = [
    "array_api_strict",
    pytest.param("cuda", marks=[pytest.mark.gpu,
                                pytest.mark.skipif(not _cuda_available(), reason="needs CuPy and a CUDA device")]),
]


@pytest.fixture(params=DEVICES)
def device(request):
    if request.param == "array_api_strict":
        pytest.importorskip("array_api_strict")
    else:
        pytest.importorskip("cupy")
    return request.param


# -- helpers --------------------------------------------------------------------------------------

def host(t):
    """A tensor's values as a NumPy array, checking first that its array is its backend's own."""
    assert backend_of_array(t._data) is t._backend, f"{type(t._data)} array in a {t._backend} tensor"
    return np.asarray(t._backend.to_host(t._data))


def assert_close(got, want, what):
    """Same values (float64 on both sides: NumPy and the other backend agree to rounding)."""
    g, w = host(got), host(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != {w.dtype}"
    if g.dtype.kind == "f":
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=what)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


def make(values, device, requires_grad=True):
    return gc.tensor(values.tolist(), dtype=gc.float64, device=device, requires_grad=requires_grad)


# -- the op table: every SPEC §2 function, with broadcasting and dim/keepdim variants -------------
# name: (function of the inputs, input specs (shape, low, high))

P = (0.5, 2.0)   # positive values (log, sqrt, division, powers)
R = (-2.0, 2.0)

CASES = {
    # arithmetic, with broadcasting and Python numbers
    "add": (lambda a, b: gc.add(a, b), [((2, 3), *R), ((3,), *R)]),
    "add_alpha": (lambda a, b: gc.add(a, b, alpha=0.5), [((2, 3), *R), ((2, 1), *R)]),
    "sub": (lambda a, b: gc.sub(a, b), [((2, 3), *R), ((2, 3), *R)]),
    "sub_scalar": (lambda a: 2.0 - a - 1, [((4,), *R)]),
    "mul": (lambda a, b: gc.mul(a, b), [((3, 1), *R), ((1, 4), *R)]),
    "div": (lambda a, b: gc.div(a, b), [((2, 3), *R), ((3,), *P)]),
    "div_scalar": (lambda a: 2 / a + a / 3, [((3,), *P)]),
    "neg": (lambda a: gc.neg(a), [((2, 2), *R)]),
    "pow": (lambda a, b: gc.pow(a, b), [((2, 3), *P), ((2, 3), *R)]),
    "pow_scalar": (lambda a: a ** 3 + a ** 0.5 + 2.0 ** a, [((5,), *P)]),
    "square": (lambda a: gc.square(a), [((3,), *R)]),
    "operators": (lambda a, b: (a * b - a / b) ** 2 + -a, [((2, 2), *P), ((2, 2), *P)]),
    # unary math
    "exp": (gc.exp, [((2, 3), *R)]),
    "log": (gc.log, [((2, 3), *P)]),
    "log1p": (gc.log1p, [((4,), *P)]),
    "sqrt": (gc.sqrt, [((4,), *P)]),
    "rsqrt": (gc.rsqrt, [((4,), *P)]),
    "abs": (gc.abs, [((2, 3), *R)]),
    "sin": (gc.sin, [((2, 3), *R)]),
    "cos": (gc.cos, [((2, 3), *R)]),
    "tan": (gc.tan, [((2, 3), -1.0, 1.0)]),
    "tanh": (gc.tanh, [((2, 3), *R)]),
    "sigmoid": (gc.sigmoid, [((2, 3), -4.0, 4.0)]),
    "relu": (gc.relu, [((2, 3), *R)]),
    "reciprocal": (gc.reciprocal, [((3,), *P)]),
    "sign": (lambda a: gc.sign(a) * a, [((5,), *R)]),
    "clamp": (lambda a: gc.clamp(a, -0.5, 0.7), [((2, 4), *R)]),
    "clamp_min": (lambda a: gc.clamp(a, min=0.1), [((6,), *R)]),
    "clamp_tensor_bounds": (lambda a, lo, hi: gc.clamp(a, lo, hi), [((2, 3), *R), ((3,), -1.0, 0.0), ((2, 1), 0.0, 1.0)]),
    "maximum": (gc.maximum, [((2, 3), *R), ((3,), *R)]),
    "minimum": (gc.minimum, [((2, 3), *R), ((2, 1), *R)]),
    "where": (lambda a, b: gc.where(a > 0, a * b, b), [((2, 3), *R), ((3,), *R)]),
    "where_scalar": (lambda a: gc.where(a > 0, a, 0.5), [((2, 3), *R)]),
    # reductions, with dim and keepdim
    "sum": (lambda a: gc.sum(a), [((2, 3), *R)]),
    "sum_dim": (lambda a: gc.sum(a, 1), [((2, 3, 2), *R)]),
    "sum_dims_keepdim": (lambda a: gc.sum(a, (0, 2), keepdim=True), [((2, 3, 2), *R)]),
    "mean": (lambda a: gc.mean(a), [((2, 3), *R)]),
    "mean_dim_keepdim": (lambda a: gc.mean(a, -1, keepdim=True), [((2, 3), *R)]),
    "prod": (lambda a: gc.prod(a), [((2, 3), *P)]),
    "prod_dim": (lambda a: gc.prod(a, 0, keepdim=True), [((3, 2), *R)]),
    "max": (lambda a: gc.max(a), [((2, 3), *R)]),
    "max_dim": (lambda a: gc.max(a, 1).values, [((3, 4), *R)]),
    "max_dim_keepdim": (lambda a: gc.max(a, 0, keepdim=True)[0], [((3, 4), *R)]),
    "max_binary": (lambda a, b: gc.max(a, b), [((3,), *R), ((3,), *R)]),
    "min": (lambda a: gc.min(a), [((2, 3), *R)]),
    "min_dim": (lambda a: gc.min(a, -1).values, [((3, 4), *R)]),
    "amax": (lambda a: gc.amax(a, 1), [((3, 4), *R)]),
    "amin": (lambda a: gc.amin(a, (0, 1), keepdim=True), [((3, 4), *R)]),
    "norm": (lambda a: gc.norm(a), [((2, 3), *R)]),
    "norm_p1_dim": (lambda a: gc.norm(a, 1, dim=0), [((2, 3), *R)]),
    "norm_p3": (lambda a: gc.norm(a, 3, dim=1, keepdim=True), [((2, 3), *R)]),
    "norm_inf": (lambda a: gc.norm(a, float("inf")), [((2, 3), *R)]),
    "var": (lambda a: gc.var(a), [((2, 3), *R)]),
    "var_dim": (lambda a: gc.var(a, 1, correction=0, keepdim=True), [((2, 3), *R)]),
    "std": (lambda a: gc.std(a), [((2, 3), *R)]),
    "std_dim": (lambda a: gc.std(a, 0), [((4, 3), *R)]),
    "logsumexp": (lambda a: gc.logsumexp(a, 1), [((2, 3), *R)]),
    "logsumexp_keepdim": (lambda a: gc.logsumexp(a, (0, 1), keepdim=True), [((2, 3), *R)]),
    "softmax": (lambda a: gc.softmax(a, -1), [((2, 3), *R)]),
    "log_softmax": (lambda a: gc.log_softmax(a, 0), [((2, 3), *R)]),
    # linear algebra: every matmul case torch distinguishes
    "matmul_1_1": (gc.matmul, [((3,), *R), ((3,), *R)]),
    "matmul_2_1": (gc.matmul, [((2, 3), *R), ((3,), *R)]),
    "matmul_1_2": (gc.matmul, [((3,), *R), ((3, 2), *R)]),
    "matmul_2_2": (lambda a, b: a @ b, [((2, 3), *R), ((3, 4), *R)]),
    "matmul_3_2": (gc.matmul, [((2, 2, 3), *R), ((3, 2), *R)]),
    "matmul_3_1": (gc.matmul, [((2, 2, 3), *R), ((3,), *R)]),
    "matmul_2_3": (gc.matmul, [((2, 3), *R), ((2, 3, 2), *R)]),
    "matmul_1_3": (gc.matmul, [((3,), *R), ((2, 3, 2), *R)]),
    "matmul_batched_broadcast": (gc.matmul, [((2, 1, 2, 3), *R), ((3, 3, 2), *R)]),
    "mm": (gc.mm, [((2, 3), *R), ((3, 2), *R)]),
    "mv": (gc.mv, [((2, 3), *R), ((3,), *R)]),
    "dot": (gc.dot, [((4,), *R), ((4,), *R)]),
    "outer": (gc.outer, [((3,), *R), ((2,), *R)]),
    # shapes
    "reshape": (lambda a: gc.reshape(a, (3, -1)), [((2, 3), *R)]),
    "reshape_copy": (lambda a: a.t().reshape(-1) * 2, [((2, 3), *R)]),
    "view": (lambda a: a.view(6, 1), [((2, 3), *R)]),
    "transpose": (lambda a: gc.transpose(a, 0, 2), [((2, 3, 2), *R)]),
    "t": (lambda a: gc.t(a), [((2, 3), *R)]),
    "T_mT": (lambda a: a.T * 1 + a.mT.mT.T, [((2, 3, 2), *R)]),
    "permute": (lambda a: gc.permute(a, 2, 0, 1), [((2, 3, 2), *R)]),
    "unsqueeze": (lambda a: gc.unsqueeze(a, 1), [((2, 3), *R)]),
    "squeeze": (lambda a: gc.squeeze(a), [((2, 1, 3), *R)]),
    "squeeze_dim": (lambda a: gc.squeeze(a, 1), [((2, 1, 3), *R)]),
    "expand": (lambda a: a.expand(2, 3, 4), [((3, 1), *R)]),
    "expand_as": (lambda a, b: a.expand_as(b) * b, [((3, 1), *R), ((3, 2), *R)]),
    "flatten": (lambda a: gc.flatten(a, 1), [((2, 3, 2), *R)]),
    "cat": (lambda a, b: gc.cat([a, b, a], 1), [((2, 3), *R), ((2, 1), *R)]),
    "stack": (lambda a, b: gc.stack([a, b], -1), [((2, 3), *R), ((2, 3), *R)]),
    "cat_mixed_dtypes": (lambda a, b: gc.cat([a, b.float()]) * 2, [((2, 3), *R), ((1, 3), *R)]),
    "stack_scalars_mixed_dtypes": (lambda a: gc.stack([a.sum(), a[0].float(), a[1]]), [((2,), *R)]),
    "clone": (lambda a: gc.clone(a) * a, [((2, 3), *R)]),
    "to_float32_and_back": (lambda a: (a.to(gc.float32) * 2).double(), [((3,), *R)]),
    # indexing, including repeated integer indices (backward accumulates: scatter-add)
    "index_int": (lambda a: a[1], [((3, 4), *R)]),
    "index_slices": (lambda a: a[:, 1:3] * a[0:3, ::2][:, :2], [((3, 4), *R)]),
    "index_none_ellipsis": (lambda a: a[..., None, 1], [((3, 4), *R)]),
    "index_list_repeated": (lambda a: a[[0, 2, 0, 0]], [((3, 4), *R)]),
    "index_list_and_slice": (lambda a: a[[1, 1], 1:], [((3, 4), *R)]),
    "index_two_lists": (lambda a: a[[0, 2, 0], [1, 1, 1]], [((3, 4), *R)]),
    "index_tensor": (lambda a: a[gc.tensor([[0, 1], [1, 1]], device=str(a.device))], [((3, 2), *R)]),
    "index_bool_list": (lambda a: a[[True, False, True]] * a[:, [False, True, True, False]].sum(), [((3, 4), *R)]),
    "index_mask": (lambda a: a[a > 0], [((3, 4), *R)]),
    "select_narrow": (lambda a: gc.select(a, 1, 2) + a.narrow(1, 0, 1).squeeze(1), [((3, 4), *R)]),
    # in-place updates of non-leaves
    "inplace": (lambda a, b: (a * 1).mul_(b).add_(a).sub_(1).div_(b), [((2, 3), *R), ((2, 3), *P)]),
    # scans (cumprod through zeros: the create_graph loop), flip, roll, triangles, ternary pointwise ops
    "cumsum_cumprod": (lambda a: gc.cumsum(a, 1) * a.cumprod(-2), [((3, 4), *R)]),
    "cumprod_zeros": (lambda a: gc.cumprod(a * gc.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], dtype=gc.float64,
                                                         device=str(a.device)), 1), [((2, 3), *R)]),
    "flip_roll": (lambda a: gc.flip(a, (0, 2)) * a.roll((1, -1), (1, 2)) + a.roll(2), [((2, 3, 2), *R)]),
    "tril_triu": (lambda a: a.tril(-1) * a + gc.triu(a, 1) + (a * 1).tril_(), [((2, 3, 4), *R)]),
    "lerp": (lambda a, b, w: gc.lerp(a, b, 0.7) * gc.lerp(a, b, w), [((2, 3), *R), ((3,), *R), ((2, 1), 0.0, 1.0)]),
    "addcmul_addcdiv": (lambda a, b, c: gc.addcmul(a, b, c, value=2) * gc.addcdiv(a, b, c, value=-0.5),
                        [((2, 3), *R), ((3,), *R), ((2, 1), *P)]),
}

SPEC_FUNCTIONS = ("add sub mul div neg pow matmul mm mv dot outer exp log log1p sqrt rsqrt abs sin cos tan tanh "
                  "sigmoid relu reciprocal square clamp maximum minimum where sum mean prod max min amax amin norm "
                  "var std logsumexp softmax log_softmax reshape view transpose t permute unsqueeze squeeze expand "
                  "flatten cat stack clone").split()


def test_the_table_covers_every_spec_function():
    import inspect
    source = inspect.getsource(inspect.getmodule(test_the_table_covers_every_spec_function))
    for name in SPEC_FUNCTIONS:
        assert name in CASES or re.search(rf"(gc\.|\.){name}\b", source), f"{name} is not in the table"


def _run(fn, specs, device, seed):
    """Forward, first derivatives (with a fixed upstream gradient) and second derivatives."""
    rng = np.random.default_rng(seed)
    values = [rng.uniform(lo, hi, size=shape) for shape, lo, hi in specs]
    xs = [make(v, device) for v in values]
    out = fn(*xs)
    cot = make(rng.uniform(-1, 1, size=tuple(out.shape)), device, requires_grad=False)
    grads = gc.autograd.grad([out], xs, [cot], create_graph=True, allow_unused=True, materialize_grads=True)
    # a scalar function of the gradients, differentiated again (double backward on the device)
    weights = [make(rng.uniform(-1, 1, size=tuple(g.shape)), device, requires_grad=False) for g in grads]
    differentiable = [g for g in grads if g.requires_grad]
    second = None
    if differentiable:
        total = sum((g * w).sum() for g, w in zip(grads, weights) if g.requires_grad)
        second = gc.autograd.grad([total], xs, allow_unused=True, materialize_grads=True)
    return out, grads, second


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_numpy(device, name):
    fn, specs = CASES[name]
    seed = sum(map(ord, name))
    got_out, got_grads, got_second = _run(fn, specs, device, seed)
    want_out, want_grads, want_second = _run(fn, specs, "cpu", seed)
    assert got_out._backend is get_backend(device)
    assert_close(got_out, want_out, f"{name} forward")
    assert got_out.grad_fn.name() == want_out.grad_fn.name()
    for i, (g, w) in enumerate(zip(got_grads, want_grads)):
        assert g._backend is get_backend(device)
        assert_close(g, w, f"{name} gradient of input {i}")
        assert g.requires_grad == w.requires_grad
    assert (got_second is None) == (want_second is None)
    if want_second is not None:
        for i, (g, w) in enumerate(zip(got_second, want_second)):
            assert_close(g, w, f"{name} second derivative of input {i}")


# functions without a gradient, and the parts of results that have none (indices, bools)
VALUES = {
    "all_any": lambda x: gc.stack([gc.all(x > -1.5), gc.any(x > 1.9), gc.all(x)]),
    "all_any_dim": lambda x: gc.any(x > 0, 1, keepdim=True).long() + gc.all(x < 1.5, 0).long(),
    "logical": lambda x: gc.logical_or(x > 1, gc.logical_and(x, x < 0)),
    "comparisons": lambda x: gc.stack([x < 0, x <= 0.5, x > 0, x >= 0.5, x == x[0], x != x[0]]),
    "max_indices": lambda x: gc.max(x, 1, keepdim=True).indices * 10 + gc.min(x, 0, keepdim=True).indices,
    "max_of_0d": lambda x: gc.max(x.sum(), 0).indices + gc.max(x.sum(), 0).values,
    "sign_and_abs_of_ints": lambda x: gc.abs((x * 10).long()) + gc.sign((x * 10).long()),
    "int_arithmetic": lambda x: (x * 10).long() * 3 - 2 + (x > 0).sum(),
    "bool_pow": lambda x: (x > 0) ** True,
    "zero_": lambda x: x.clone().zero_(),
    "creation_like": lambda x: gc.ones_like(x) + gc.zeros_like(x) + gc.full_like(x, 2.0),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_numpy(device, name):
    rng = np.random.default_rng(sum(map(ord, name)))
    v = rng.uniform(-2, 2, size=(3, 4))
    got = VALUES[name](make(v, device, requires_grad=False))
    want = VALUES[name](make(v, "cpu", requires_grad=False))
    assert got._backend is get_backend(device)
    assert_close(got, want, name)


# -- engine features on the device ------------------------------------------------------------------

def _leaf(device, values=((1.0, -2.0, 3.0), (0.5, 0.25, -1.5))):
    return gc.tensor([list(r) for r in values], dtype=gc.float64, device=device, requires_grad=True)


def test_backward_accumulates_into_grad(device):
    results = {}
    for dev in (device, "cpu"):
        x = _leaf(dev)
        y = (gc.sin(x) * gc.exp(x) + x ** 2).mean()
        y.backward()
        first = host(x.grad).copy()
        grad_object = x.grad
        (x * x).sum().backward()  # accumulates in place: the same .grad object sees the sum
        assert x.grad is grad_object
        assert x.grad._backend is get_backend(dev)
        results[dev] = (first, host(x.grad))
    np.testing.assert_allclose(results[device][0], results["cpu"][0], rtol=1e-12)
    np.testing.assert_allclose(results[device][1], results["cpu"][1], rtol=1e-12)


def test_hooks_and_retain_grad(device):
    results = {}
    for dev in (device, "cpu"):
        x = _leaf(dev)
        seen = []
        x.register_hook(lambda g: g * 2)
        y = x * x
        y.retain_grad()
        h = y.register_hook(lambda g: seen.append(host(g)) or g + 1)
        z = (y * 3).sum()
        z.backward()
        h.remove()
        assert x.grad._backend is get_backend(dev) and y.grad._backend is get_backend(dev)
        results[dev] = (host(x.grad), host(y.grad), seen[0])
    for got, want in zip(results[device], results["cpu"]):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(results[device][1], np.full((2, 3), 4.0))  # retain_grad sees the hook's result


def test_retain_graph_and_freed_graph(device):
    x = _leaf(device)
    y = (gc.exp(x) * x).sum()
    y.backward(retain_graph=True)
    once = host(x.grad).copy()
    y.backward()
    np.testing.assert_allclose(host(x.grad), 2 * once, rtol=1e-12)
    with pytest.raises(AutogradError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_backward_with_gradient_and_grad_of_non_scalar(device):
    x = _leaf(device)
    y = x * gc.tensor([1.0, 2.0, 3.0], dtype=gc.float64, device=device)
    y.backward(gc.tensor([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], dtype=gc.float64, device=device))
    np.testing.assert_allclose(host(x.grad), [[1, 2, 3], [2, 4, 6]])
    with pytest.raises(AutogradError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()


def test_create_graph_grad_of_grad(device):
    x = _leaf(device)
    y = (x ** 3).sum()
    y.backward(create_graph=True)
    assert x.grad.grad_fn is not None and x.grad._backend is get_backend(device)
    (g2,) = gc.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(host(g2), 6 * host(x.detach()), rtol=1e-12)


def test_autograd_grad_unused_inputs(device):
    x, w = _leaf(device), _leaf(device)
    gx, gw = gc.autograd.grad((x * 2).sum(), [x, w], allow_unused=True)
    assert gw is None and gx._backend is get_backend(device)
    _, gw = gc.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)
    assert gw._backend is get_backend(device) and not host(gw).any()


def test_repeated_indices_accumulate_and_double_backward(device):
    x = gc.tensor([1.0, 2.0, 3.0], dtype=gc.float64, device=device, requires_grad=True)
    y = x[[0, 0, 2, 0]]
    (g,) = gc.autograd.grad((y * y).sum(), x, create_graph=True)
    np.testing.assert_allclose(host(g), [6.0, 0.0, 6.0])  # 3 * 2 * x[0], 0, 2 * x[2]
    (gg,) = gc.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(host(gg), [6.0, 0.0, 2.0])
    assert gg._backend is get_backend(device)


def test_detect_anomaly_on_the_device(device):
    x = gc.tensor([0.0, 1.0], dtype=gc.float64, device=device, requires_grad=True)
    with gc.autograd.detect_anomaly():
        with pytest.raises(AutogradError, match="returned nan values"):
            (gc.sqrt(x) * 0).sum().backward()  # 0 * inf


def test_inplace_updates_of_data_and_grad(device):
    x = _leaf(device)
    (x * x).sum().backward()
    x.data.sub_(x.grad * 0.5)  # a gradient step: x - 0.5 * 2x = 0
    assert not host(x.detach()).any()
    x.grad.zero_()
    assert not host(x.grad).any() and x.grad._backend is get_backend(device)


def test_saved_tensor_modified_in_place_is_detected(device):
    x = _leaf(device)
    y = x * 1
    z = (y * y).sum()
    y.add_(1)
    with pytest.raises(AutogradError, match="modified by an inplace operation"):
        z.backward()


# -- moving between devices ----------------------------------------------------------------------------

def test_to_device_and_back_records_tocopy(device):
    x = gc.tensor([1.0, 2.0, 3.0], requires_grad=True)   # on the CPU
    d = x.to(device)
    assert d.grad_fn.name() == "ToCopyBackward0" and d._backend is get_backend(device)
    assert d.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"
    y = (gc.exp(d) * d).to("cpu")
    assert y.grad_fn.name() == "ToCopyBackward0" and y._backend is NUMPY
    y.sum().backward()
    assert x.grad._backend is NUMPY  # the gradient came back to the leaf's device
    v = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    np.testing.assert_allclose(host(x.grad), np.exp(v) * (v + 1), rtol=1e-6)


def test_moving_a_tensor_that_needs_no_grad(device):
    x = gc.tensor([1, 2, 3])
    d = x.to(device)
    assert d.grad_fn is None and not d.requires_grad and d.dtype == gc.int64
    assert d.to(device) is d  # already there: the same tensor, as torch
    assert d.cpu().tolist() == [1, 2, 3]


def test_mixing_devices_in_one_op_fails(device):
    a = gc.tensor([1.0, 2.0], device=device)
    b = gc.tensor([1.0, 2.0])
    for op in (lambda: a + b, lambda: b * a, lambda: gc.cat([a, b]), lambda: gc.maximum(b, a), lambda: a @ b):
        with pytest.raises(DeviceError, match="Expected all tensors to be on the same device, but found at least "
                                              "two devices"):
            op()


def test_tolist_item_and_printing_go_through_the_host(device):
    x = gc.tensor([[1.5, 2.0]], device=device)
    assert x.tolist() == [[1.5, 2.0]] and x[0, 1].item() == 2.0 and float(x.sum()) == 3.5
    text = repr(x * 2)
    assert text.startswith("tensor([[3., 4.]]")


def test_creation_functions_on_the_device(device):
    gc.manual_seed(0)
    made = [gc.ones(2, 3, device=device), gc.zeros(2, device=device), gc.full((2,), 7, device=device),
            gc.rand(3, device=device), gc.randn(2, 2, device=device), gc.arange(5, device=device),
            gc.linspace(0, 1, 5, device=device), gc.eye(3, device=device)]
    x = made[0]
    made += [gc.ones_like(x), gc.zeros_like(x), gc.full_like(x, 2.0), gc.rand_like(x), gc.randn_like(x)]
    for t in made:
        assert t._backend is get_backend(device)
        host(t)
    gc.manual_seed(0)
    on_device = gc.rand(3, device=device).tolist()
    gc.manual_seed(0)
    assert on_device == gc.rand(3).tolist()  # the same draws as on the CPU
    assert gc.allclose(gc.ones(2, device=device), gc.ones(2, device=device))


# -- the command line on the second backend ------------------------------------------------------------

def _cli(capsys, *args):
    from gradcli.cli import main
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.grad"))


def _on_cpu(text):
    return re.sub(r", device='cuda:\d+'", "", text)


def _devices_named_cpu(doc):
    """The document as the CPU writes it: device fields, and tensors printed by the program
    (torch prints ``device='cuda:0'`` in a CUDA tensor's repr)."""
    doc["device"] = "cpu"
    if "printed" in doc:
        doc["printed"] = [_on_cpu(line) for line in doc["printed"]]
    for v in doc.get("variables", []):
        v["device"] = "cpu"
    return doc


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_programs_give_the_same_document(device, path, capsys, monkeypatch):
    """Every example program (interpreter, hooks, retain_graph, printing) on the device: the same
    table and the same JSON document as on the CPU, but for the device names."""
    import json
    want = _cli(capsys, "eval", "-f", str(path), "--seed", "3", "--json")
    got = _cli(capsys, "eval", "-f", str(path), "--seed", "3", "--json", "--device", device)
    assert got[0] == want[0]
    assert _devices_named_cpu(json.loads(got[1])) == json.loads(want[1])
    if device == "cuda":  # wide enough for one table, whose cells are wider on cuda (below)
        monkeypatch.setenv("COLUMNS", "400")
    table = _cli(capsys, "eval", "-f", str(path), "--seed", "3", "--device", device)
    cpu_table = _cli(capsys, "eval", "-f", str(path), "--seed", "3")[1]
    assert table[0] == want[0]
    if device == "cuda":  # the data and grad cells say device='cuda:0', as torch's reprs: columns widen
        table, cpu_table = [re.sub(r"[ ━]+", " ", _on_cpu(t[1] if isinstance(t, tuple) else t))
                            for t in (table, cpu_table)]
        assert table == cpu_table
    else:
        assert table[1] == cpu_table


@pytest.mark.parametrize("program, code", [
    ("sum(sin(x) * x + x ** 3) + logsumexp(x, 0) + sum(x[[0, 0, 1]])", 0),
    ("h = x.register_hook(lambda g: g * 2)\nsum(x * x)", 1),
])
def test_check_on_the_device(device, program, code, capsys):
    got = _cli(capsys, "check", program, "-g", "x=randn(4)", "--seed", "0", "--device", device)
    want = _cli(capsys, "check", program, "-g", "x=randn(4)", "--seed", "0")
    assert got[0] == want[0] == code
    if device == "cuda":  # the errors at rounding level (< 1e-6) are the GPU's rounding, not the CPU's
        got, want = [(c, re.sub(r"\d\.\d{3}e-(?:0[7-9]|[1-9]\d)", "<rounding>", out), err) for c, out, err in (got, want)]
    assert got[1] == want[1]


# -- every case of the op table (benchmarks/bench_ops.py's), on the device ------------------------------

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_ops  # noqa: E402
from gradcli.autograd import factory  # noqa: E402

TABLE = bench_ops.all_cases()[0]


def _table_case(case):
    """One case of the op table on the default device: its output, grad_fn, the leaves' gradients,
    and second derivatives (the gradients' graph on the device), or the error each step raised."""
    bench_ops._INDICES.clear()  # index tensors made on this device
    env = bench_ops.environment(gc)
    out = case.call(gc, env)
    leaves = [t for t in env.values() if t.requires_grad]
    try:
        grads = gc.autograd.grad([out], leaves, [gc.ones_like(out)], create_graph=True, allow_unused=True,
                                 materialize_grads=True)
    except Exception as e:  # noqa: BLE001  (the CPU's error is the device's)
        return out, str(e), None
    differentiable = [g.sum() for g in grads if g.requires_grad]
    if not differentiable:
        return out, grads, None
    try:
        second = gc.autograd.grad([sum(differentiable)], leaves, allow_unused=True, materialize_grads=True)
    except Exception as e:  # noqa: BLE001
        return out, grads, str(e)
    return out, grads, second


@pytest.mark.parametrize("case", TABLE, ids=lambda c: c.label)
def test_op_table_case_on_the_device(device, case, monkeypatch, request):
    """Every function and operator of the op table, called as benchmarks/bench_ops.py calls it (Python
    numbers, broadcasting, keyword forms, in-place variants, F.*), built from leaves made on the device:
    the same values, grad_fn, gradients and second derivatives as on the CPU (float32, so to rounding:
    the device's kernels are not NumPy's)."""
    if device == "array_api_strict" and case.label == "x.t().reshape_as(y)":
        request.applymarker(pytest.mark.xfail(strict=True, reason="array_api_strict has no strides: every array "
                                              "counts as contiguous, so reshape records ViewBackward0"))
    monkeypatch.setattr(bench_ops, "_INDICES", {})
    want = _table_case(case)
    factory.DEFAULT_DEVICE[0] = device
    try:
        got = _table_case(case)
    finally:
        factory.DEFAULT_DEVICE[0] = "cpu"
    assert got[0]._backend is get_backend(device), case.label
    for g, w in ((got[1], want[1]), (got[2], want[2])):
        if isinstance(w, str) or w is None:
            assert g == w, case.label
        else:
            assert not isinstance(g, str), f"{case.label}: {g}"
            assert g is not None, case.label
    for what, g, w in [("output", got[0], want[0])] + [
            (f"{part} {i}", gi, wi) for part, gs, ws in (("gradient", got[1], want[1]), ("second", got[2], want[2]))
            if not isinstance(ws, (str, type(None))) for i, (gi, wi) in enumerate(zip(gs, ws))]:
        assert g._backend is get_backend(device), f"{case.label}: {what} on {g.device}"
        gv, wv = host(g), host(w)
        assert gv.dtype == wv.dtype and gv.shape == wv.shape, f"{case.label}: {what}"
        np.testing.assert_allclose(gv, wv, rtol=2e-6, atol=1e-6, err_msg=f"{case.label}: {what}")
    assert type(got[0].grad_fn).__name__ == type(want[0].grad_fn).__name__


# -- the benchmark's cases at a batch of rows: sizes where the CPU's fast paths take over -----------

@pytest.mark.parametrize("batch", [2, 1024])
def test_benchmark_cases_at_a_batch_of_rows_match_the_cpu(device, batch, monkeypatch):
    """Every case of ``benchmarks/bench_ops.py`` (the whole op table, float32, forward and backward)
    with leaves of ``batch`` rows, on the device and on the CPU. At 1,024 rows the NumPy backend
    takes its size-dependent paths (reductions across many narrow rows, by blocks of rows, nll_loss's
    cascade, in-place updates into the array): none may reach another backend's arrays. A case that
    fails on the CPU fails on the device too."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import bench_ops
    from gradcli.autograd import factory
    monkeypatch.setattr(factory, "DEFAULT_DEVICE", ["cpu"])  # (the leaves' device: set below)
    # float32 sums down 1,024 rows in another order (the CPU adds as torch does, array_api_strict
    # row after row, CuPy by its own tree) can be about the rows times epsilon apart
    rtol = 1e-5 if batch < 64 else 1e-4
    failures = []
    for case in bench_ops.all_cases()[0]:
        results = {}
        for where in ("cpu", device):
            factory.DEFAULT_DEVICE[0] = where
            env = bench_ops.environment(gc, batch=batch)
            try:
                out = case.call(gc, env)
                out.backward(gc.ones_like(out))
            except Exception as e:  # noqa: BLE001  (compared below: both sides fail, or neither)
                results[where] = type(e)
                continue
            results[where] = [("value", out)] + [(f"{name}.grad", t.grad) for name, t in env.items()]
        cpu, other = results["cpu"], results[device]
        if isinstance(cpu, type) or isinstance(other, type):
            if not (isinstance(cpu, type) and isinstance(other, type)):
                failures.append(f"{case.label}: cpu {cpu if isinstance(cpu, type) else 'ran'}, "
                                f"{device} {other if isinstance(other, type) else 'ran'}")
            continue
        for (what, w), (_, g) in zip(cpu, other):
            if (w is None) != (g is None):
                failures.append(f"{case.label}: {what} is {w} on the cpu, {g} on {device}")
            elif w is not None:
                try:
                    assert g._backend is get_backend(device), f"a {g._backend} tensor"
                    got, want = host(g), np.asarray(w._data)
                    assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}"
                    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)
                except AssertionError as e:
                    failures.append(f"{case.label}: {what}: {str(e).strip()[:300]}")
    for label, update in bench_ops.UPDATES.items():  # an optimizer's step: in place, under no_grad
        results = {}
        for where in ("cpu", device):
            p = gc.ones(batch, 2, device=where, requires_grad=True)
            g = gc.full((batch, 2), 1e-3, device=where)
            with gc.no_grad():
                for _ in range(3):
                    update(gc, p, g)
            results[where] = (p, g)
        for (w, g) in zip(results["cpu"], results[device]):
            if g._version != w._version or g._backend is not get_backend(device) \
                    or not np.allclose(host(g), np.asarray(w._data), rtol=1e-6, atol=0):
                failures.append(f"{label}: {host(g)} at version {g._version} on {device}, "
                                f"{np.asarray(w._data)} at {w._version} on the cpu")
    assert not failures, "\n".join(failures)
