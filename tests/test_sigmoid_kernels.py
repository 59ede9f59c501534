"""sigmoid and silu as torch's CPU kernels compute them: 1 / (1 + exp(-x)) and x / (1 + exp(-x)),
float16 in float32 and rounded once; where exp(-x) overflows, torch's values (0, -0.0; NaN for
silu(-inf)) with no NumPy warning. Against torch within a few ulps (NumPy's exp and torch's
vectorised one differ by an ulp on some inputs, which 1 + e and the quotient can double); float16
element for element but for a few elements (one float32 ulp can move a half's rounding)."""

import math
import warnings

import numpy as np
import pytest

import gradcli as gc
from gradcli.ops import nn_functional as NF

torch = pytest.importorskip("torch")

FUNCTIONS = {"sigmoid": (gc.sigmoid, lambda t: torch.sigmoid(t)), "silu": (NF.silu, lambda t: torch.nn.functional.silu(t))}
DTYPES = {"float16": (gc.float16, torch.float16), "float32": (gc.float32, torch.float32),
          "float64": (gc.float64, torch.float64)}


def _values(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 6).tolist()


def _run(fn, lib_tensor, backward_ones):
    out = fn(lib_tensor)
    out.backward(backward_ones(out))
    return out, lib_tensor.grad


def _both(name, dtype, values):
    g_fn, t_fn = FUNCTIONS[name]
    gd, td = DTYPES[dtype]
    gx = gc.tensor(values, dtype=gd, requires_grad=True)
    tx = torch.tensor(values, dtype=td, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's overflow/invalid warnings: torch is silent
        g_out, g_grad = _run(g_fn, gx, gc.ones_like)
    t_out, t_grad = _run(t_fn, tx, torch.ones_like)
    as_np = lambda v: np.asarray(v.tolist(), dtype=np.float64)  # noqa: E731
    return as_np(g_out), as_np(g_grad), as_np(t_out.detach()), as_np(t_grad)


def _ulps(a, b, dtype):
    """Distance in units of the last place of ``dtype`` between two arrays of its values."""
    np_dtype = np.dtype(dtype)
    return np.abs(a - b) / np.spacing(np.abs(b).astype(np_dtype)).astype(np.float64)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_values_and_gradients_as_torch(name, dtype):
    g_out, g_grad, t_out, t_grad = _both(name, dtype, _values())
    assert (_ulps(g_out, t_out, dtype) <= 4).all()
    # the gradients' 1 - sigmoid cancels where sigmoid is near 1 (a few ulps of sigmoid become many
    # of the gradient, in torch's formula as here): within a few epsilons (they are at most ~1.1)
    assert (np.abs(g_grad - t_grad) <= 4 * np.finfo(dtype).eps).all()
    if dtype == "float16":  # the half-precision steps this replaced differed in a tenth of the elements
        assert int((g_out != t_out).sum()) <= 20 and int((g_grad != t_grad).sum()) <= 20


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("values", [[-100.0, -90.0, 0.0, -0.0, 3.0], [-800.0, 1.0], [float("nan"), 1.0],
                                    [float("-inf"), 2.0], [float("inf"), -1.0]])
def test_overflow_region_as_torch_silently(name, dtype, values):
    """Where exp(-x) overflows torch's kernel gives exactly 0 (sigmoid) and -0.0 (silu), and
    silu(-inf) is NaN; the fast path's check (the least element) sends such inputs to the same
    formula with NumPy's warnings off."""
    g_fn, t_fn = FUNCTIONS[name]
    gd, td = DTYPES[dtype]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = g_fn(gc.tensor(values, dtype=gd)).tolist()
    want = t_fn(torch.tensor(values, dtype=td)).tolist()
    for g, t in zip(got, want):
        if t != t or math.isinf(t) or t == 0 or t == 1:  # NaN, infinities, zeros with their sign, exactly
            assert str(g) == str(t)
        else:
            assert _ulps(np.array([g]), np.array([t]), dtype)[0] <= 4


def test_empty_and_two_dimensional():
    assert gc.sigmoid(gc.zeros(0)).shape == (0,)
    assert NF.silu(gc.zeros(2, 0)).shape == (2, 0)
    x = [[0.45, -0.3], [0.2, 0.8]]
    assert np.allclose(NF.silu(gc.tensor(x)).tolist(), torch.nn.functional.silu(torch.tensor(x)).tolist(), rtol=0,
                       atol=1e-7)


@pytest.mark.parametrize("value", [-100.0, -1.0, 0.0, 2.0, float("nan")])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_zero_dim(value, dtype):
    gd, td = DTYPES[dtype]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = gc.tensor(value, dtype=gd).sigmoid()
    want = torch.tensor(value, dtype=td).sigmoid()
    assert got.shape == () and str(got.dtype) == str(want.dtype)
    g, t = got.item(), want.item()
    assert (g != g and t != t) or (g == t if t in (0.0, 0.5) else abs(g - t) <= 4 * np.spacing(np.array(t, dtype)))
