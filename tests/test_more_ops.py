"""torch's functions added after the op table's first round: inverse hyperbolics, expm1, erfc,
deg2rad/rad2deg, logaddexp/logaddexp2, xlogy (and its number overloads), trace, movedim/moveaxis,
ravel, and torch's other spellings (arcsin, multiply, swapaxes...): values, gradients, grad_fn
names and next_functions against torch, in place too, and torch's messages."""

import math
import re

import numpy as np
import pytest

import gradcli as gc
from helpers import assert_close_or_none, clean_engine_state  # noqa: F401

torch = pytest.importorskip("torch")

X = [[0.9, 1.2, -0.4], [0.7, 1.4, 2.5]]
Y = [[0.5, 2.0, 1.5], [1.5, 0.25, 3.0]]


def _names(t):
    fn = t.grad_fn
    if fn is None:
        return None
    nexts = [None if f is None else type(f).__name__ for f, _ in fn.next_functions]
    return type(fn).__name__, nexts


def _run(lib, fn, dtype):
    dt = getattr(lib, dtype)
    x = lib.tensor(X, dtype=dt, requires_grad=True)
    y = lib.tensor(Y, dtype=dt, requires_grad=True)
    out = fn(lib, x, y)
    names = _names(out)
    out.backward(lib.ones_like(out))
    grads = [None if t.grad is None else np.array(t.grad.tolist()) for t in (x, y)]
    return np.array(out.detach().tolist()), names, grads


CASES = {
    "asinh": lambda L, x, y: L.asinh(x),
    "acosh": lambda L, x, y: L.acosh(y + 1),
    "atanh": lambda L, x, y: L.atanh(x * 0.3),
    "expm1": lambda L, x, y: L.expm1(x),
    "erfc": lambda L, x, y: L.erfc(x),
    "deg2rad": lambda L, x, y: L.deg2rad(x),
    "rad2deg": lambda L, x, y: x.rad2deg(),
    "logaddexp": lambda L, x, y: L.logaddexp(x, y),
    "logaddexp2": lambda L, x, y: L.logaddexp2(x, y[0]),
    "xlogy": lambda L, x, y: L.xlogy(x, y),
    "xlogy zero": lambda L, x, y: L.xlogy(x * 0, y),
    "xlogy number self": lambda L, x, y: L.xlogy(2.5, y),
    "xlogy number other": lambda L, x, y: L.xlogy(x, 3),
    "xlogy method": lambda L, x, y: x.xlogy(y[1]),
    "trace": lambda L, x, y: L.trace(x),
    "trace method": lambda L, x, y: x.t().trace() * y.trace(),
    "movedim": lambda L, x, y: L.movedim(x.reshape(1, 2, 3), (0, 1), (2, 0)),
    "movedim int": lambda L, x, y: x.reshape(1, 2, 3).movedim(-1, 0),
    "moveaxis": lambda L, x, y: L.moveaxis(x.reshape(1, 2, 3), 0, 2),
    "ravel": lambda L, x, y: x.ravel(),
    "ravel transposed": lambda L, x, y: x.t().ravel(),
    "swapaxes": lambda L, x, y: L.swapaxes(x, 0, 1),
    "swapdims": lambda L, x, y: x.swapdims(1, 0),
    "arcsin": lambda L, x, y: L.arcsin(x * 0.5),
    "arccos": lambda L, x, y: x.mul(0.5).arccos(),
    "arctan": lambda L, x, y: L.arctan(x),
    "arcsinh": lambda L, x, y: L.arcsinh(x),
    "arccosh": lambda L, x, y: L.arccosh(y + 1),
    "arctanh": lambda L, x, y: L.arctanh(x * 0.3),
    "arctan2": lambda L, x, y: L.arctan2(x, y),
    "negative": lambda L, x, y: L.negative(x),
    "absolute": lambda L, x, y: x.absolute(),
    "fix": lambda L, x, y: L.fix(x * 2),
    "multiply": lambda L, x, y: L.multiply(x, y),
    "multiply number": lambda L, x, y: x.multiply(2),
    "subtract": lambda L, x, y: L.subtract(x, y, alpha=2),
    "subtract number": lambda L, x, y: L.subtract(x, 2),
    "divide": lambda L, x, y: L.divide(x, y),
    "divide floor": lambda L, x, y: L.divide(x, y, rounding_mode="floor"),
    "true_divide": lambda L, x, y: x.true_divide(y),
    # in place, on a result (a leaf that requires grad refuses, as torch)
    "expm1_": lambda L, x, y: L.expm1_(x * 1),
    "erfc_": lambda L, x, y: (x * 1).erfc_(),
    "deg2rad_": lambda L, x, y: (x * 1).deg2rad_(),
    "xlogy_": lambda L, x, y: (x * 1).xlogy_(y),
    "arcsin_": lambda L, x, y: (x * 0.5).arcsin_(),
    "multiply_": lambda L, x, y: (x * 1).multiply_(y),
    "subtract_": lambda L, x, y: (x * 1).subtract_(y),
    "divide_": lambda L, x, y: (x * 1).divide_(y),
    "negative_": lambda L, x, y: L.negative_(x * 1),
    # the second round: shapes, NaN-aware arithmetic and reductions
    "tile": lambda L, x, y: L.tile(x, (2,)),
    "tile method": lambda L, x, y: x.tile(2, 1, 1),
    "fliplr": lambda L, x, y: L.fliplr(x),
    "flipud": lambda L, x, y: L.flipud(x),
    "unflatten": lambda L, x, y: L.unflatten(x, 1, (3, 1)),
    "unflatten method": lambda L, x, y: x.unflatten(-1, (-1, 1)),
    "diff": lambda L, x, y: L.diff(x),
    "diff n2 dim0": lambda L, x, y: L.diff(x, n=2, dim=0),
    "diff n0": lambda L, x, y: L.diff(x, n=0),
    "diff prepend append": lambda L, x, y: L.diff(x, prepend=y[:, :1], append=y),
    "nan_to_num": lambda L, x, y: L.nan_to_num(x / (x - x[0, 0]), posinf=7.0),
    "nan_to_num_": lambda L, x, y: (x * 1).nan_to_num_(),
    "fmax": lambda L, x, y: L.fmax(x, y),
    "fmin": lambda L, x, y: L.fmin(x, y[1]),
    "copysign": lambda L, x, y: L.copysign(y, x),
    "copysign number": lambda L, x, y: L.copysign(x, -1.0),
    "copysign_": lambda L, x, y: (x * 1).copysign_(y - 1),
    "nansum": lambda L, x, y: L.nansum(x),
    "nansum dim": lambda L, x, y: x.nansum(1, keepdim=True),
    "nanmean": lambda L, x, y: L.nanmean(x),
    "nanmean dim": lambda L, x, y: L.nanmean(x, 0),
    "diag of a vector": lambda L, x, y: L.diag(x[0], 1),
    "diag of a matrix": lambda L, x, y: L.diag(x, -1),
    "diag method": lambda L, x, y: x.diag(1),
    "diag_embed": lambda L, x, y: L.diag_embed(x, -1, 0, 2),
    "cross": lambda L, x, y: L.cross(x, y, dim=1),
    "cross broadcast": lambda L, x, y: x.cross(y[:1], dim=-1),
    # the third round: turns, repeats, Kronecker products, logit, sinc
    "rot90": lambda L, x, y: L.rot90(x),
    "rot90 k3 dims": lambda L, x, y: L.rot90(x, 3, [1, 0]),
    "rot90 method k2": lambda L, x, y: x.rot90(2),
    "rot90 k0": lambda L, x, y: L.rot90(x, 0),
    "rot90 negative k 3d": lambda L, x, y: L.rot90(x.reshape(1, 2, 3), -1, (2, -3)),
    "repeat_interleave": lambda L, x, y: L.repeat_interleave(x, 2),
    "repeat_interleave dim": lambda L, x, y: x.repeat_interleave(3, dim=1),
    "repeat_interleave transposed": lambda L, x, y: x.t().repeat_interleave(2, dim=-1),
    "repeat_interleave tensor": lambda L, x, y: x.repeat_interleave(L.tensor([2, 0]), dim=0),
    "repeat_interleave one repeat": lambda L, x, y: x.repeat_interleave(L.tensor(2), dim=1),
    "kron": lambda L, x, y: L.kron(x, y),
    "kron vector matrix": lambda L, x, y: L.kron(x[0], y),
    "kron method": lambda L, x, y: x.kron(y[1].reshape(3, 1)),
    "logit": lambda L, x, y: L.logit(x * 0.3 + 0.5),
    "logit outside": lambda L, x, y: L.logit(x),
    "logit eps": lambda L, x, y: x.logit(0.2),
    "logit_": lambda L, x, y: (x * 0.1 + 0.5).logit_(),
    "sinc": lambda L, x, y: L.sinc(x),
    "sinc_": lambda L, x, y: (x * 1).sinc_(),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_against_torch(name, dtype):
    ours = _run(gc, CASES[name], dtype)
    theirs = _run(torch, CASES[name], dtype)
    rtol = 2e-7 if dtype == "float32" else 1e-15
    np.testing.assert_allclose(ours[0], theirs[0], rtol=rtol * 4, atol=0)
    assert ours[1] == theirs[1]
    assert_close_or_none(ours[2], theirs[2], rtol=rtol * 8, atol=1e-30)


SPECIAL = [math.inf, -math.inf, math.nan, 0.0, -0.0, 1.0, -1.0, 30.0, -30.0, 1e-8, 2.0]


@pytest.mark.parametrize("name", ["asinh", "acosh", "atanh", "expm1", "erfc", "deg2rad", "rad2deg"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_unary_special_values_as_torch(name, dtype):
    ours = getattr(gc, name)(gc.tensor(SPECIAL, dtype=getattr(gc, dtype)))
    theirs = getattr(torch, name)(torch.tensor(SPECIAL, dtype=getattr(torch, dtype)))
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(np.array(ours.tolist()), theirs.numpy().astype(np.float64),
                               rtol={"float16": 1e-3, "float32": 2e-7, "float64": 1e-15}[dtype])


def test_binary_special_values_as_torch():
    a = [math.inf, -math.inf, math.nan, 0.0, 1.0, 0.0, 0.0, -2.0, 1e30]
    b = [math.inf, -math.inf, 1.0, math.nan, 0.0, 0.0, -1.0, 3.0, -1e30]
    for name in ("logaddexp", "logaddexp2", "xlogy"):
        ours = getattr(gc, name)(gc.tensor(a), gc.tensor(b))
        theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
        np.testing.assert_allclose(np.array(ours.tolist()), theirs.numpy(), rtol=2e-7, err_msg=name)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_xlogy_gradients_at_zero_as_torch(dtype):
    """derivatives.yaml: xlogy(grad, y) where x = 0 too (log y), but 0 where x = 0 and y <= 0; a
    number y: masked only when it is not above 0."""
    a = [0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 0.0]
    b = [2.0, 0.0, -1.0, math.nan, 0.0, -1.0, math.inf]
    seen = []
    for lib in (gc, torch):
        dt = getattr(lib, dtype)
        x = lib.tensor(a, dtype=dt, requires_grad=True)
        y = lib.tensor(b, dtype=dt, requires_grad=True)
        lib.xlogy(x, y).backward(lib.tensor([0.5, 1, 2, 3, 4, 5, 6], dtype=dt))
        grads = [np.array(x.grad.tolist()), np.array(y.grad.tolist())]
        for number in (3, 0, -2.5):
            z = lib.tensor(a, dtype=dt, requires_grad=True)
            lib.xlogy(z, number).sum().backward()
            grads.append(np.array(z.grad.tolist()))
        seen.append(grads)
    for ours, theirs in zip(*seen):
        np.testing.assert_array_equal(ours, theirs)


def test_nan_aware_ops_at_nan_and_inf_as_torch():
    a = [[math.nan, 1.0, math.inf], [-math.inf, 0.0, 2.0]]
    b = [0.5, math.nan, -1.0]
    calls = [lambda L, w, v: L.nan_to_num(w), lambda L, w, v: L.nan_to_num(w, nan=2.0, posinf=5.0, neginf=-3),
             lambda L, w, v: L.fmax(w, v), lambda L, w, v: L.fmin(v, w), lambda L, w, v: L.copysign(w, v),
             lambda L, w, v: L.nansum(w), lambda L, w, v: L.nansum(w, 1), lambda L, w, v: L.nanmean(w, 0),
             lambda L, w, v: L.nanmean(v, keepdim=True)]
    for call in calls:
        seen = []
        for lib in (gc, torch):
            w = lib.tensor(a, dtype=lib.float64, requires_grad=True)
            v = lib.tensor(b, dtype=lib.float64, requires_grad=True)
            out = call(lib, w, v)
            out.backward(lib.ones_like(out))
            seen.append([np.array(out.tolist())] + [None if t.grad is None else np.array(t.grad.tolist()) for t in (w, v)])
        for ours, theirs in zip(*seen):
            assert (ours is None) == (theirs is None)
            if ours is not None:
                np.testing.assert_array_equal(ours, theirs)


def test_integers_give_the_default_float_as_torch():
    for name in ("asinh", "expm1", "erfc", "deg2rad", "rad2deg"):
        assert getattr(gc, name)(gc.tensor([1, 2])).dtype.name == "float32"
    assert gc.xlogy(gc.tensor([1, 0]), gc.tensor([2, 3])).tolist() == pytest.approx(
        torch.xlogy(torch.tensor([1, 0]), torch.tensor([2, 3])).tolist())
    assert gc.xlogy(gc.tensor([1, 0]), gc.tensor([2, 3])).dtype.name == "float32"
    assert gc.trace(gc.tensor([[1, 2], [3, 4]])).dtype.name == "int64"
    assert gc.trace(gc.tensor([[1, 2], [3, 4]], dtype=gc.int32)).dtype.name == "int64"
    assert gc.trace(gc.ones(2, 3, dtype=gc.float16)).dtype.name == "float16"


def test_trace_adds_in_order_in_double_as_torch():
    rng = np.random.default_rng(3)
    for n in (3, 9, 17, 100):
        values = rng.standard_normal((n, n)).astype(np.float32) * 1000
        ours = gc.trace(gc.tensor(values.tolist())).item()
        theirs = torch.trace(torch.tensor(values)).item()
        assert ours == theirs


SECOND = ["diag of a vector", "diag_embed", "cross", "cross broadcast", "tile", "diff", "diff prepend append", "nan_to_num", "fmax", "fmin", "copysign", "copysign number",
          "nansum dim", "nanmean dim", "asinh", "acosh", "atanh", "expm1", "erfc", "deg2rad", "rad2deg", "logaddexp", "logaddexp2", "xlogy",
          "xlogy zero", "xlogy number self", "xlogy number other", "trace method", "movedim", "ravel transposed"]


@pytest.mark.parametrize("name", SECOND)
def test_second_derivatives_as_torch(name):
    """create_graph: the gradient's own graph (its grad_fn) and the second derivative, as torch."""
    results = []
    for lib in (gc, torch):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        y = lib.tensor(Y, dtype=lib.float64, requires_grad=True)
        out = CASES[name](lib, x, y)
        first = lib.autograd.grad((out * out).sum(), (x, y), create_graph=True, allow_unused=True)
        total = sum(g.sum() for g in first if g is not None)
        total.backward()
        results.append(([None if g is None else (np.array(g.tolist()), type(g.grad_fn).__name__) for g in first],
                        [None if t.grad is None else np.array(t.grad.tolist()) for t in (x, y)]))
    for ours, theirs in zip(results[0][0] + results[0][1], results[1][0] + results[1][1]):
        assert (ours is None) == (theirs is None)
        if isinstance(ours, tuple):
            np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
            assert ours[1] == theirs[1]
        elif ours is not None:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-300)


def test_second_order_xlogy_and_trace_as_torch():
    results = []
    for lib in (gc, torch):
        x = lib.tensor(X, requires_grad=True)
        y = lib.tensor(Y, requires_grad=True)
        (gx,) = lib.autograd.grad(lib.xlogy(x, y).sum(), y, create_graph=True)
        gx.sum().backward()
        results.append((np.array(gx.tolist()), np.array(x.grad.tolist()), type(gx.grad_fn).__name__))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)
    assert results[0][2] == results[1][2]


@pytest.mark.parametrize("call, message", [
    (lambda L: L.logaddexp(L.tensor([1, 2]), L.tensor([3, 4])), "\"logaddexp_cpu\" not implemented for 'Long'"),
    (lambda L: L.logaddexp(L.tensor([1.0]), 2.0),
     "logaddexp(): argument 'other' (position 2) must be Tensor, not float"),
    (lambda L: L.trace(L.ones(2, 2, 2)), "trace: expected a matrix, but got tensor with dim 3"),
    (lambda L: L.trace(L.tensor(1.0)), "trace: expected a matrix, but got tensor with dim 0"),
    (lambda L: L.trace(L.tensor([[True]])), "\"trace\" not implemented for 'Bool'"),
    (lambda L: L.movedim(L.ones(2, 3, 4), 0, 5),
     "Dimension out of range (expected to be in range of [-3, 2], but got 5)"),
    (lambda L: L.movedim(L.ones(2, 3, 4), (0, 0), (1, 2)), "movedim: repeated dim in `source` ([0, 0])"),
    (lambda L: L.movedim(L.ones(2, 3, 4), (0, 1), (2, 2)), "movedim: repeated dim in `destination` ([2, 2])"),
    (lambda L: L.movedim(L.ones(2, 3, 4), (0, 1), (1,)),
     "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same number of "
     "dims as destination ([1] dims)"),
    (lambda L: L.diag(L.ones(2, 2, 2)), "diag(): Supports 1D or 2D tensors. Got 3D"),
    (lambda L: L.cross(L.ones(2, 2), L.ones(2, 2), dim=0),
     "linalg.cross: inputs dimension 0 must have length 3. Got 2 and 2"),
    (lambda L: L.cross(L.ones(2, 3), L.ones(3), dim=1), "linalg.cross: inputs must have the same number of dimensions."),
    (lambda L: L.fliplr(L.ones(2)), "Input must be >= 2-d."),
    (lambda L: L.flipud(L.tensor(1.0)), "Input must be >= 1-d."),
    (lambda L: L.unflatten(L.ones(2, 3), 1, (2, 2)),
     "unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in the input tensor"),
    (lambda L: L.unflatten(L.ones(2, 3), 1, ()), "unflatten: sizes must be non-empty"),
    (lambda L: L.diff(L.ones(2, 3), n=-1), "order must be non-negative but got -1"),
    (lambda L: L.diff(L.tensor(1.0)), "diff expects input to be at least one-dimensional"),
    (lambda L: L.diff(L.ones(2, 3), append=L.zeros(2)), "diff expects prepend or append to be the same dimension as input"),
    (lambda L: L.nanmean(L.tensor([1, 2])),
     "nanmean(): expected input to have floating point or complex dtype but got Long"),
    (lambda L: L.fmax(L.ones(2), 1.0), "fmax(): argument 'other' (position 2) must be Tensor, not float"),
    (lambda L: L.tensor([1.0], requires_grad=True).asinh_(),
     "a leaf Variable that requires grad is being used in an in-place operation."),
])
def test_messages_as_torch(call, message):
    with pytest.raises(Exception) as theirs:
        call(torch)
    assert message in str(theirs.value)
    with pytest.raises(gc.GradcliError if hasattr(gc, "GradcliError") else Exception) as ours:
        call(gc)
    assert message in str(ours.value)


@pytest.mark.parametrize("name", ["asinh_", "acosh_", "atanh_", "arcsinh_", "arccosh_", "arctanh_"])
def test_inplace_inverse_hyperbolics_record_torchs_node_without_a_derivative(name):
    outplace = name.replace("arc", "a").rstrip("_")
    seen = []
    for lib in (gc, torch):
        x = lib.tensor([0.5, 0.25], requires_grad=True)
        y = x * 1 + (1 if "cosh" in name else 0)
        out = getattr(y, name)()
        assert out is y and type(out.grad_fn).__name__ == outplace.capitalize() + "Backward1"
        seen.append(_names(out))
        with pytest.raises(Exception, match=f"the derivative for 'inplace version of {outplace}' is not implemented."):
            out.sum().backward()
        with lib.no_grad():
            z = lib.tensor([0.5, 0.25]) + (1 if "cosh" in name else 0)
            getattr(z, name)()
        np.testing.assert_allclose(np.array(z.tolist()), np.array(getattr(lib, outplace)(
            lib.tensor([0.5, 0.25]) + (1 if "cosh" in name else 0)).tolist()))
    assert seen[0] == seen[1]


def test_movedim_of_a_0d_tensor_is_an_alias():
    for lib in (gc, torch):
        x = lib.tensor(2.0, requires_grad=True)
        assert type(lib.movedim(x * 1, 0, 0).grad_fn).__name__ == "AliasBackward0"


def test_aliases_are_listed_and_reach_the_language(tmp_path):
    from gradcli.ops.registry import FUNCTIONS
    assert FUNCTIONS["multiply"].grad_fns == FUNCTIONS["mul"].grad_fns
    assert FUNCTIONS["arcsin"].doc.startswith("Alias of asin")
    from gradcli.cli import main
    import io
    import contextlib
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["eval", "import torch\ny = torch.xlogy(x, torch.expm1(x)).sum() + torch.trace(x.arcsinh())",
                     "-g", "x=ones(2,2)", "--json"])
    assert code == 0
    import json
    doc = json.loads(out.getvalue())
    x = torch.ones(2, 2, requires_grad=True)
    (torch.xlogy(x, torch.expm1(x)).sum() + torch.trace(x.arcsinh())).backward()
    grads = {v["name"]: v["grad"] for v in doc["variables"]}
    np.testing.assert_allclose(np.array(grads["x"]), x.grad.numpy(), rtol=1e-6)


def test_movedim_orders_as_torch():
    """Every single dim moved anywhere, and pairs of dims, on tensors of 1 to 4 dims: torch's order."""
    import itertools
    for n in range(1, 5):
        sizes = tuple(range(2, 2 + n))
        for s, d in itertools.product(range(-n, n), repeat=2):
            assert gc.ones(*sizes).movedim(s, d).shape == tuple(torch.ones(*sizes).movedim(s, d).shape)
        if n >= 2:
            for src in itertools.permutations(range(n), 2):
                for dst in itertools.permutations(range(-n, 0), 2):
                    ours = gc.movedim(gc.ones(*sizes), src, list(dst))
                    assert ours.shape == tuple(torch.movedim(torch.ones(*sizes), src, list(dst)).shape)


@pytest.mark.parametrize("call", [
    lambda L, x, y: L.div(x, y, rounding_mode=None),
    lambda L, x, y: x.div(2.5, rounding_mode=None),
    lambda L, x, y: L.div(L.tensor([[3, 4, 5], [6, 7, 8]]), y, rounding_mode=None),
    lambda L, x, y: L.divide(x, y[0], rounding_mode=None),
    lambda L, x, y: (x * 1).div_(y, rounding_mode=None),
    lambda L, x, y: L.div(x, y),
    lambda L, x, y: L.div(x, y, rounding_mode="floor"),
])
def test_an_explicit_rounding_mode_none_records_divbackward2_as_torch(call):
    """torch records DivBackward2 whenever rounding_mode is passed, None included (true division,
    DivBackward0's gradients); left out, DivBackward0."""
    seen = []
    for lib in (gc, torch):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        y = lib.tensor(Y, dtype=lib.float64, requires_grad=True)
        out = call(lib, x, y)
        names = _names(out)
        out.backward(lib.ones_like(out))
        seen.append((np.array(out.tolist()), names, [None if t.grad is None else np.array(t.grad.tolist())
                                                     for t in (x, y)]))
    (a, na, ga), (b, nb, gb) = seen
    np.testing.assert_allclose(a, b, rtol=1e-15)
    assert na == nb
    assert_close_or_none(ga, gb, rtol=1e-15)


def test_div_signature_reads_as_torchs():
    from gradcli.ops.registry import FUNCTIONS
    assert FUNCTIONS["div"].signature == "div(input, other, *, rounding_mode=None)"


def test_cross_without_dim_takes_the_first_dim_of_length_3_and_warns_as_torch():
    for lib in (gc, torch):
        a = lib.tensor([[1.0, 2, 3], [4, 5, 6]])
        with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg is deprecated"):
            out = lib.cross(a, a.flip(1))
        assert out.tolist() == [[-4.0, 8.0, -4.0], [-10.0, 20.0, -10.0]]
    assert gc.cross(gc.tensor([[1, 2, 3]]), gc.tensor([[4, 5, 6]]), dim=1).dtype.name == "int64"


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("call", [lambda L, t: L.logit(t), lambda L, t: L.logit(t, 0.3), lambda L, t: t.logit(-1.0),
                                  lambda L, t: L.sinc(t), lambda L, t: L.sinc(t * 3)])
@pytest.mark.parametrize("create_graph", [False, True])
def test_logit_sinc_special_values_and_second_derivatives_as_torch(dtype, call, create_graph):
    """torch's kernels at 0, 1, outside [0, 1] and NaN (logit: NaN or 0 gradients outside, as
    logit_backward, or as its infinitely differentiable form under create_graph), and its graph of
    the gradient (sinc_backward's where, logit's SubBackward0 for 1 - x)."""
    values = [0.0, 1.0, -0.5, 0.25, 1.5, math.nan, 0.05, 0.97, -2.0, 3.5, 1e-8]
    seen = []
    for lib in (gc, torch):
        dt = getattr(lib, dtype)
        x = lib.tensor(values, dtype=dt, requires_grad=True)
        out = call(lib, x)
        seed = lib.arange(float(len(values)), dtype=dt) - 3
        g, = lib.autograd.grad((out * seed).sum(), x, create_graph=create_graph)
        names = None
        if create_graph:
            names, queue = [], [g.grad_fn]
            while queue:
                node = queue.pop(0)
                names.append(None if node is None else type(node).__name__.split("::")[-1])
                if node is not None:
                    queue.extend(f for f, _ in node.next_functions)
        seen.append((np.array(out.detach().tolist()), np.array(g.detach().tolist()), names, type(out.grad_fn).__name__))
    (ours, our_grad, our_names, our_node), (theirs, their_grad, their_names, their_node) = seen
    rtol = {"float16": 2e-3, "float32": 3e-7, "float64": 0}[dtype]
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=0)
    np.testing.assert_allclose(our_grad, their_grad, rtol=rtol * 2, atol=0)
    assert (our_names, our_node) == (their_names, their_node)


@pytest.mark.parametrize("call, message", [
    (lambda L, x: L.rot90(x, 1, [0]), "expected total rotation dims == 2, but got dims = 1"),
    (lambda L, x: L.rot90(x[0]), "expected total dims >= 2, but got total dims = 1"),
    (lambda L, x: L.rot90(x, 1, [0, -2]), "expected rotation dims to be different, but got dim0 = 0 and dim1 = -2"),
    (lambda L, x: L.rot90(x, 1, [0, 2]), "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda L, x: L.rot90(x, 1.5), "rot90(): argument 'k' (position 2) must be int, not float"),
    (lambda L, x: x.repeat_interleave(-1), "Repeats must be non-negative"),
    (lambda L, x: x.repeat_interleave(L.tensor([1, 2, 3]), dim=0),
     "repeats must have the same size as input along dim, but got repeats.size(0) = 3 and input.size(0) = 2"),
    (lambda L, x: x.repeat_interleave(L.tensor([[1]]), dim=0), "repeats must be 0-dim or 1-dim tensor"),
    (lambda L, x: x.repeat_interleave(2, dim=0, output_size=5), "repeat_interleave: Invalid output_size, expected 4 but got 5"),
    (lambda L, x: L.repeat_interleave(L.tensor([1.0, 2.0])), "\"repeat_interleave_cpu\" not implemented for 'Float'"),
    (lambda L, x: L.repeat_interleave(L.tensor([1, -2])), "repeats can not be negative"),
])
def test_messages_as_torch(call, message):
    with pytest.raises(Exception, match="^" + re.escape(message)):
        call(torch, torch.ones(2, 3))
    with pytest.raises(Exception, match="^" + re.escape(message)):
        call(gc, gc.ones(2, 3))


def test_repeat_interleave_of_repeats_alone_is_the_indices():
    for counts in ([2, 0, 3], [], [1]):
        ours = gc.repeat_interleave(gc.tensor(counts, dtype=gc.int64))
        theirs = torch.repeat_interleave(torch.tensor(counts, dtype=torch.int64))
        assert ours.tolist() == theirs.tolist() and ours.dtype.name == "int64"


@pytest.mark.parametrize("make", [lambda x: x.t(), lambda x: x.t()[::2], lambda x: x[:, ::2],
                                  lambda x: x.unsqueeze(0).expand(2, 2, 3), lambda x: x.t().unsqueeze(0).expand(2, 3, 2),
                                  lambda x: x.reshape(1, 2, 3).permute(2, 0, 1), lambda x: x.flip(1)])
def test_clone_keeps_torchs_stride_order(make):
    """clone (preserve_format) lays the copy out as torch's infer_dense_strides does, which the views
    of the copy show: a transposed copy of a transposed tensor, row-major for an expanded one."""
    seen = []
    for lib in (gc, torch):
        c = make(lib.arange(6.0).reshape(2, 3)).clone()
        outcomes = []
        for view in (lambda t: t.view(-1), lambda t: t.t().reshape(-1) if t.ndim == 2 else t.transpose(0, 1).view(-1)):
            try:
                outcomes.append(view(c).tolist())
            except Exception as exc:  # noqa: BLE001 - where the strides forbid a view: the message
                outcomes.append(str(exc).split(".")[0])
        seen.append([c.is_contiguous()] + outcomes)
    assert seen[0] == seen[1]
