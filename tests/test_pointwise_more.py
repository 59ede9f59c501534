"""The second batch of pointwise ops (exp2, log2, log10, sinh, cosh, asin, acos, atan, erf, floor,
ceil, trunc, round, frac, atan2, hypot, fmod, remainder and ``%``, floor_divide and ``//``, div's
rounding modes, isnan, isinf, isfinite, logical_not): in the language against torch's printed
output, torch's NotImplemented node for floor division, erf's own kernel against the C library's,
the array-API fallbacks on array-api-strict, and torch's errors. The oracle, gradcheck, in-place
and benchmark tables cover each op's values, gradients and graphs."""

import json
import math
import warnings

import numpy as np
import pytest

import gradcli as gc
from gradcli.cli import main
from gradcli.ops import catalog, registry
from helpers import clean_engine_state, error_text, graph_names  # noqa: F401
from test_lang_pytorch import same_as_torch

torch = pytest.importorskip("torch")

PROGRAM = """
import torch
x = torch.tensor([[-2.5, -0.75, 0.5], [1.25, 3.0, 4.5]], requires_grad=True)
y = torch.tensor([1.5, -2.0, 0.5], requires_grad=True)
r = x % 2
print(r, 2 % x, x // 2, 2 // x)
print(x % y, torch.remainder(x, -1.5), torch.fmod(x, y), x.fmod(-1.5), torch.div(x, y, rounding_mode="trunc"))
a = torch.atan2(x, y)
h = torch.hypot(x, y)
print(a, h)
print(x.floor(), x.ceil(), torch.trunc(x), x.round(), torch.round(x, decimals=1), x.frac())
print(torch.isnan(x).any(), torch.isinf(x / 0).all(), torch.isfinite(x).all(), x.isnan().sum(), torch.logical_not(x > 0))
print(torch.exp2(x), torch.log2(x.abs()), torch.log10(x.abs()), torch.sinh(x), torch.cosh(x), torch.atan(x))
print(torch.erf(x), torch.asin(x / 5), torch.acos(x / 5))
loss = (r * a + h + x % y + torch.fmod(x, y) + torch.exp2(x) + torch.erf(x) + torch.asin(x / 5) + x.frac()).sum()
loss = loss + (x.floor() + x.round(decimals=1)).sum()
loss.backward()
print(loss, x.grad, y.grad)
i = torch.tensor([7, -7, 3])
print(i % 3, -7 % i, i // 2, 7 // i, i % 2.5, 2.5 // i, i.floor(), torch.div(i, 2, rounding_mode="trunc"))
w = x.detach().clone()
w %= 1.5
print(w)
w //= 0.5
print(w)
z = x * 1
z %= 1.25
print(z, z.grad_fn.name(), z.grad_fn.next_functions[0][0].name())
"""


def test_a_program_with_the_new_ops_prints_what_torch_prints():
    same_as_torch(PROGRAM)


def test_floor_division_without_a_gradient_fails_backward_as_in_torch():
    code, doc = _eval("x = tensor([0.5, 2.5], requires_grad=True)\ny = x // 2\nprint(y)\ny.sum().backward()")
    assert code == 3 and doc["printed"] == [str(torch.tensor([0.5, 2.5], requires_grad=True) // 2)]
    assert doc["error"]["message"] == "derivative for aten::floor_divide is not implemented"
    code, doc = _eval("x = tensor([0.5, 2.5], requires_grad=True)\n(2 % x).sum().backward()")
    assert code == 3 and doc["error"]["message"] == "derivative for aten::remainder is not implemented"


def _eval(program):
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["eval", program, "--json"])
    return code, json.loads(out.getvalue())


NOT_IMPLEMENTED = {
    "tensors": lambda L, x, y: L.floor_divide(x, y), "operator": lambda L, x, y: x // y,
    "number": lambda L, x, y: x // 2, "number_first": lambda L, x, y: 2 // x,
    "constant_divisor": lambda L, x, y: L.floor_divide(x, y.detach()),
    "constant_dividend": lambda L, x, y: x.detach().floor_divide(y),
    "int_divisor": lambda L, x, y: x // L.tensor([2, -3]),
    "number_remainder": lambda L, x, y: 2 % x, "number_remainder_fn": lambda L, x, y: L.remainder(-3, y),
    "in_place": lambda L, x, y: (x * 1).floor_divide_(y),
}


@pytest.mark.parametrize("name", sorted(NOT_IMPLEMENTED))
def test_not_implemented_nodes_match_torchs(name):
    """Values, requires_grad and the graph (an edge for each operand that requires grad, only),
    and backward's error."""
    seen = []
    for L in (gc, torch):
        x = L.tensor([0.5, -2.5], requires_grad=True)
        y = L.tensor([1.5, 0.75], requires_grad=True)
        out = NOT_IMPLEMENTED[name](L, x, y)
        with pytest.raises(RuntimeError) as info:
            out.sum().backward()
        seen.append((out.tolist(), out.requires_grad, graph_names(out), error_text(info.value).replace("_ is", " is")))
    assert seen[0] == seen[1]
    assert seen[0][2][0][0] == "NotImplemented"


def test_erf_is_the_c_librarys_on_numpy_and_within_a_few_ulps_of_it_elsewhere():
    """erf has no NumPy kernel: math.erf element by element on NumPy arrays; gradcli's series and
    continued fraction (what other backends run) against it."""
    from gradcli.ops.pointwise import _erf_series
    xs = np.concatenate([np.linspace(-7, 7, 20001), np.geomspace(1e-300, 1e-3, 200), [2.5, np.nextafter(2.5, 3)]])
    want = np.array([math.erf(v) for v in xs])
    assert np.array_equal(np.asarray(gc.erf(gc.tensor(xs.tolist(), dtype=gc.float64))._data), want)
    xs32 = xs.astype(np.float32)
    want32 = np.array([math.erf(v) for v in xs32.tolist()]).astype(np.float32)
    assert np.array_equal(np.asarray(gc.erf(gc.tensor(xs32.tolist()))._data), want32)
    got = _erf_series(np, xs)
    ulps = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 6, xs[np.argmax(ulps)]
    assert _erf_series(np, xs.astype(np.float32)).dtype == np.float32
    values = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 6.0, -5.9]
    special = gc.erf(gc.tensor(values))
    assert str(special) == str(torch.erf(torch.tensor(values)))
    assert np.signbit(np.asarray(special._data)).tolist() == [False, False, True, True, False, False, True]


FALLBACKS = {  # the array API has no fmod, exp2 nor erf: gradcli's own forms on array-api-strict
    "fmod": lambda a, b: gc.fmod(a * 3, b), "fmod_number": lambda a, b: gc.fmod(a * 3, -0.7),
    "remainder": lambda a, b: (a * 3) % b, "remainder_number": lambda a, b: (a * 3) % 0.7 + 2 % b.detach(),
    "exp2": lambda a, b: gc.exp2(a), "erf": lambda a, b: gc.erf(a * 2), "atan2": gc.atan2, "hypot": gc.hypot,
    "floor_divide": lambda a, b: (a * 3 // b).detach() + a, "div_trunc": lambda a, b: gc.div(a * 3, b, rounding_mode="trunc") + a,
    "rounding": lambda a, b: a.floor() + a.ceil() + a.trunc() + (a * 3).round() + a.round(decimals=1) + (a * 3).frac(),
    "predicates": lambda a, b: gc.where(gc.isnan(a / b) | gc.isinf(b) | gc.logical_not(gc.isfinite(a)), a, b),
    "inverse_trig": lambda a, b: gc.asin(a / 3) + gc.acos(a / 3) + gc.atan(a) + gc.sinh(a) + gc.cosh(a),
    "logs": lambda a, b: gc.log2(b.abs()) + gc.log10(b.abs()),
}


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_array_api_strict_gives_the_cpu_values_and_gradients(name):
    pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(sum(map(ord, name)))
    a_values, b_values = rng.uniform(-2.5, 2.5, (2, 3)), rng.uniform(0.5, 2.0, (3,)) * np.array([1, -1, 1])
    results = []
    for device in ("cpu", "array_api_strict"):
        a = gc.tensor(a_values.tolist(), dtype=gc.float64, device=device, requires_grad=True)
        b = gc.tensor(b_values.tolist(), dtype=gc.float64, device=device, requires_grad=True)
        out = FALLBACKS[name](a, b)
        grads = gc.autograd.grad([out.sum()], [a, b], allow_unused=True, materialize_grads=True)
        results.append([np.asarray(t._backend.to_host(t._data)) for t in (out, *grads)])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


ERRORS = [
    "L.atan2(L.ones(2), 2)", "L.atan2(2, L.ones(2))", "L.hypot(L.ones(2), 2)", "L.hypot(L.tensor([1, 2]), L.tensor([3, 4]))",
    "L.fmod(2, L.ones(2))", "L.fmod(L.ones(2), 'a')", "L.tensor([1, 2]) % 0", "L.tensor([1, 2]) // 0",
    "L.fmod(L.tensor([1, 2]), L.tensor([1, 0]))", "L.remainder(3, L.tensor([1, 0]))",
    "L.div(L.tensor([1, 2]), 0, rounding_mode='trunc')", "L.div(L.ones(2), 2, rounding_mode='round')",
    "L.tensor([True]) % L.tensor([True])", "L.tensor([True]) // True", "L.fmod(L.tensor([True]), True)",
    "L.floor(L.tensor([True]))", "L.round(L.tensor([True]))", "L.frac(L.tensor([1, 2]))",
    "L.round(L.tensor([1, 2]), decimals=1)", "L.tensor([1, 2]).atan2_(L.tensor([1, 1]))",
    "L.tensor([1, 2]).remainder_(2.5)", "L.ones(2) % L.ones(3)",
]


@pytest.mark.parametrize("src", ERRORS)
def test_errors_match_torch(src):
    seen = []
    for L in (gc, torch):
        with pytest.raises(Exception) as info:
            eval(src, {"L": L})  # noqa: S307 (fixed test expressions)
        seen.append((error_text(info.value), type(info.value)))
    assert seen[0][0] == seen[1][0]
    assert issubclass(seen[0][1], seen[1][1])  # the builtin torch raises (TypeError, NotImplementedError...)


def test_gradcli_ops_lists_the_new_ops():
    rows = {r["name"]: r for r in catalog.rows()}
    grad_fns = {
        "exp2": ["Exp2Backward0"], "log2": ["Log2Backward0"], "log10": ["Log10Backward0"], "sinh": ["SinhBackward0"],
        "cosh": ["CoshBackward0"], "asin": ["AsinBackward0"], "acos": ["AcosBackward0"], "atan": ["AtanBackward0"],
        "erf": ["ErfBackward0"], "floor": ["FloorBackward0"], "ceil": ["CeilBackward0"], "trunc": ["TruncBackward0"],
        "round": ["RoundBackward0", "RoundBackward1"], "frac": ["FracBackward0"], "atan2": ["Atan2Backward0"],
        "hypot": ["HypotBackward0"], "fmod": ["FmodBackward0", "FmodBackward1"],
        "remainder": ["RemainderBackward0", "RemainderBackward1"], "div": ["DivBackward0", "DivBackward2"],
        "floor_divide": [], "isnan": [], "isinf": [], "isfinite": [], "logical_not": [],
    }
    for name, names in grad_fns.items():
        assert rows[name]["grad_fns"] == names, name
        assert rows[name]["differentiable"] == bool(names), name
    assert rows["remainder"]["operator"] == "a % b" and rows["floor_divide"]["operator"] == "a // b"
    assert rows["remainder_"]["operator"] == "a %= b" and rows["floor_divide_"]["operator"] == "a //= b"
    assert rows["floor_divide_"]["differentiable"] is False and rows["round"]["signature"] == "round(input, *, decimals=None)"
    for name in grad_fns:  # torch's method and module function, where torch has them
        assert hasattr(gc.Tensor, name) and hasattr(gc, name)
        assert (name + "_" in registry.NAMESPACES["torch"]) == hasattr(torch, name + "_"), name


def test_operators_reach_the_ops_with_numbers_on_either_side():
    x, t = gc.tensor([-2.5, 0.5, 3.0], requires_grad=True), torch.tensor([-2.5, 0.5, 3.0], requires_grad=True)
    for fn in (lambda v: v % 2, lambda v: 2 % v, lambda v: v // 2, lambda v: 2.5 // v, lambda v: v % -0.75,
               lambda v: True % v, lambda v: v // v.detach()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            o, w = fn(x), fn(t)
        assert str(o) == str(w)


# torch's pow by a number specialises 0.5, 2, 3, -0.5, -1, -2 on float32/float64 (sqrt, x*x, x*x*x,
# 1/sqrt, 1/x, 1/(x*x)); any other exponent is its vectorised pow, and its vectorised sqrt is not
# IEEE's either (1% of random doubles differ in the last bit): no bits to match for those.
# (exponent, forward's bits, backward's bits): the backward's power is exponent - 1
POWERS = [(2, True, True), (2.0, True, True), (3, True, True), (-1, True, True), (-2, True, False),
          (4, False, True), (0.5, False, False), (-0.5, False, False), (1.5, False, False)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent, forward, backward", POWERS)
def test_pow_by_a_number_bit_exact(dtype, exponent, forward, backward):
    """PowBackward0's forward and ``exponent * self.pow(exponent - 1)`` (a square's as ``self * 2``,
    one pass fewer) with torch's bits on random values and the special ones, plain and under
    create_graph, where torch's kernels are exact."""
    rng = np.random.default_rng(7)
    data = np.concatenate([rng.standard_normal(200) * 50, [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 6e4, 1.5]])
    data = data.astype(dtype)
    seed = rng.standard_normal(data.shape).astype(dtype)
    x, t = gc.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y, ty = x ** exponent, t ** exponent
        if forward:
            np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
        else:  # within torch's kernels' own error
            np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=4e-7 if dtype == "float32" else 1e-15)
        (y * gc.tensor(seed)).sum().backward()
        (ty * torch.tensor(seed)).sum().backward()
        g, = gc.autograd.grad((x ** exponent).sum(), x, create_graph=True)
    tg, = torch.autograd.grad((t ** exponent).sum(), t, create_graph=True)
    assert graph_names(g) == graph_names(tg)
    if backward:
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
        np.testing.assert_array_equal(g.detach().numpy(), tg.detach().numpy())
    else:  # within torch's pow's own error
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=4e-7 if dtype == "float32" else 1e-15)
