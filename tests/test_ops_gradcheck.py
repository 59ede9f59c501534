"""Every function of SPEC §2: the engine's gradient against central finite differences in float64,
over shapes, broadcasting and dim/keepdim drawn by hypothesis."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import gradcli as gc
from gradcli.ops import nn_functional as NF
from helpers import clean_engine_state, gradcheck, leaf  # noqa: F401

SETTINGS = settings(max_examples=15, deadline=None, derandomize=True)


def values(seed, shape, low=-2.0, high=2.0, away_from=None):
    rng = np.random.default_rng(seed)
    v = rng.uniform(low, high, size=shape)
    if away_from is not None:  # keep clear of kinks (abs, relu, clamp, max) so differences are smooth
        v = np.where(np.abs(v - away_from) < 0.1, v + 0.25, v)
    return v


seeds = st.integers(0, 2**32 - 1)
small_shapes = array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)


# -- pointwise binary ops, with broadcasting ----------------------------------------------------

BINARY = {
    "add": lambda a, b: gc.add(a, b), "sub": lambda a, b: gc.sub(a, b), "mul": lambda a, b: gc.mul(a, b),
    "div": lambda a, b: gc.div(a, b), "maximum": gc.maximum, "minimum": gc.minimum,
    "pow": lambda a, b: gc.pow(a, b), "operators": lambda a, b: (a * b - a / b) ** 2 + -a,
    "add_alpha": lambda a, b: gc.add(a, b, alpha=0.5), "rsub": lambda a, b: 2.0 - a * b,
    "atan2": gc.atan2, "hypot": gc.hypot, "fmod": gc.fmod, "remainder": lambda a, b: a % b,
}


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), seed=seeds)
def test_binary(name, shapes, seed):
    sa, sb = shapes.input_shapes
    if name in ("div", "pow", "operators"):
        a, b = leaf(values(seed, sa, 0.5, 2.0)), leaf(values(seed + 1, sb, 0.5, 2.0))
    elif name in ("atan2", "hypot", "fmod", "remainder"):
        # b in (0.5, 2): off atan2's branch cut and hypot's kink at the origin
        a, b = leaf(values(seed, sa, -3.0, 3.0)), leaf(values(seed + 1, sb, 0.5, 2.0) * (-1 if seed % 2 else 1))
        if name in ("fmod", "remainder"):  # each jumps where a / b is an integer: keep clear of those
            q = np.broadcast_arrays(a.detach()._data, b.detach()._data)
            q = q[0] / q[1]
            if np.any(np.abs(q - np.rint(q)) < 0.05):
                return
    elif name in ("maximum", "minimum"):
        a = leaf(values(seed, sa))
        b = leaf(values(seed + 1, sb) + 5.0 * (np.arange(np.prod(sb)).reshape(sb) % 2 - 0.5) * 0.3)
        # ties would make the derivative ill-defined: separate the values
        if np.any(np.abs(np.broadcast_arrays(a.detach()._data, b.detach()._data)[0] -
                         np.broadcast_arrays(a.detach()._data, b.detach()._data)[1]) < 0.05):
            return
    else:
        a, b = leaf(values(seed, sa)), leaf(values(seed + 1, sb))
    gradcheck(BINARY[name], a, b)
    assert a.grad is None  # autograd.grad leaves .grad alone


@pytest.mark.parametrize("scalar_first", [False, True])
@SETTINGS
@given(shape=small_shapes, seed=seeds, c=st.sampled_from([2.0, -1.5, 3, 0.5]))
def test_scalar_operands(scalar_first, shape, seed, c):
    a = leaf(values(seed, shape, 0.5, 2.0))
    if scalar_first:
        gradcheck(lambda x: c - x + c * x + c / x + abs(c) ** x, a)
    else:
        gradcheck(lambda x: x - c + x * c + x / c + x ** c, a)


# -- unary ops ---------------------------------------------------------------------------------

UNARY = {
    "exp": (gc.exp, -2, 2), "log": (gc.log, 0.2, 3), "log1p": (gc.log1p, -0.5, 3), "sqrt": (gc.sqrt, 0.2, 3),
    "rsqrt": (gc.rsqrt, 0.3, 3), "abs": (gc.abs, -2, 2), "sin": (gc.sin, -3, 3), "cos": (gc.cos, -3, 3),
    "tan": (gc.tan, -1.2, 1.2), "tanh": (gc.tanh, -2, 2), "sigmoid": (gc.sigmoid, -3, 3), "relu": (gc.relu, -2, 2),
    "reciprocal": (gc.reciprocal, 0.3, 3), "square": (gc.square, -2, 2), "neg": (gc.neg, -2, 2),
    "clamp": (lambda x: gc.clamp(x, -0.5, 0.7), -2, 2), "clamp_min": (lambda x: gc.clamp(x, min=0.1), -2, 2),
    "clamp_max": (lambda x: gc.clamp(x, max=0.3), -2, 2), "clone": (gc.clone, -2, 2),
    "where": (lambda x: gc.where(x > 0, x * x, -x), -2, 2),
    "clamp_min_fn": (lambda x: gc.clamp_min(x, 0.1), -2, 2), "clamp_max_fn": (lambda x: x.clamp_max(0.3), -2, 2),
    "exp_": (lambda x: (x * 1).exp_(), -2, 2), "sin_": (lambda x: (x * 1).sin_(), -3, 3),
    "pow_": (lambda x: (x * 1).pow_(3), -2, 2), "sigmoid_": (lambda x: (x * 1).sigmoid_(), -3, 3),
    "exp2": (gc.exp2, -2, 2), "log2": (gc.log2, 0.2, 3), "log10": (gc.log10, 0.2, 3), "sinh": (gc.sinh, -2, 2),
    "cosh": (gc.cosh, -2, 2), "asin": (gc.asin, -0.9, 0.9), "acos": (gc.acos, -0.9, 0.9), "atan": (gc.atan, -3, 3),
    "erf": (gc.erf, -3, 3), "frac": (gc.frac, -2, 2), "floor": (gc.floor, -2, 2), "ceil": (gc.ceil, -2, 2),
    "trunc": (gc.trunc, -2, 2), "round": (gc.round, -2, 2), "fmod_number": (lambda x: gc.fmod(x, 0.7), -2, 2),
    "remainder_number": (lambda x: x % 0.7, -2, 2), "atan2_": (lambda x: (x * 1).atan2_(x * x + 0.5), -2, 2),
    # torch.nn.functional's activations
    "gelu": (NF.gelu, -3, 3), "gelu_tanh": (lambda x: NF.gelu(x, approximate="tanh"), -3, 3), "silu": (NF.silu, -3, 3),
    "leaky_relu": (lambda x: NF.leaky_relu(x, 0.2), -2, 2),
    "leaky_relu_inplace": (lambda x: NF.leaky_relu(x * 1, 0.2, inplace=True), -2, 2),
    "elu": (lambda x: NF.elu(x, 0.7), -2, 2), "elu_inplace": (lambda x: NF.elu(x * 1, inplace=True), -2, 2),
    "softplus": (lambda x: NF.softplus(x, 2, 1.5), -2, 2), "hardtanh": (lambda x: NF.hardtanh(x, -0.5, 0.8), -2, 2),
    "relu6": (lambda x: NF.relu6(x * 4), -2, 2), "logsigmoid": (NF.logsigmoid, -3, 3), "softsign": (NF.softsign, -2, 2),
    "tanhshrink": (NF.tanhshrink, -2, 2), "dropout_p1": (lambda x: NF.dropout(x, 1.0), -2, 2),
}
KINKS = {"abs": 0.0, "relu": 0.0, "clamp": (-0.5, 0.7), "clamp_min": 0.1, "clamp_max": 0.3, "where": 0.0,
         "clamp_min_fn": 0.1, "clamp_max_fn": 0.3,
         # the steps of the rounding ops and remainders (a zero gradient elsewhere, or 1)
         "frac": (-1.0, 0.0, 1.0), "floor": (-1.0, 0.0, 1.0), "ceil": (-1.0, 0.0, 1.0), "trunc": (-1.0, 0.0, 1.0),
         "round": (-1.5, -0.5, 0.5, 1.5), "fmod_number": (-1.4, -0.7, 0.7, 1.4),
         "remainder_number": (-1.4, -0.7, 0.0, 0.7, 1.4),
         "leaky_relu": 0.0, "leaky_relu_inplace": 0.0, "elu": 0.0, "elu_inplace": 0.0, "softplus": 0.75,
         "hardtanh": (-0.5, 0.8), "relu6": (0.0, 1.5), "softsign": 0.0}


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(shape=small_shapes, seed=seeds)
def test_unary(name, shape, seed):
    fn, lo, hi = UNARY[name]
    v = values(seed, shape, lo, hi)
    kinks = KINKS.get(name)
    for k in (kinks if isinstance(kinks, tuple) else (kinks,) if kinks is not None else ()):
        v = np.where(np.abs(v - k) < 0.05, k + 0.2, v)
    gradcheck(fn, leaf(v))


# -- reductions, with dim and keepdim -----------------------------------------------------------

@st.composite
def shape_and_dim(draw, min_dims=1):
    shape = draw(array_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=4))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    return shape, dim, draw(st.booleans())


REDUCE_DIM = {
    "sum": lambda x, d, k: gc.sum(x, d, keepdim=k), "mean": lambda x, d, k: gc.mean(x, d, keepdim=k),
    "prod": lambda x, d, k: gc.prod(x, d, keepdim=k), "amax": lambda x, d, k: gc.amax(x, d, keepdim=k),
    "amin": lambda x, d, k: gc.amin(x, d, keepdim=k), "max": lambda x, d, k: gc.max(x, d, keepdim=k).values,
    "min": lambda x, d, k: gc.min(x, d, keepdim=k)[0], "logsumexp": lambda x, d, k: gc.logsumexp(x, d, keepdim=k),
    "softmax": lambda x, d, k: gc.softmax(x, d), "log_softmax": lambda x, d, k: gc.log_softmax(x, d),
    "norm": lambda x, d, k: gc.norm(x, dim=d, keepdim=k), "var": lambda x, d, k: gc.var(x, d, keepdim=k),
    "std": lambda x, d, k: gc.std(x, d, keepdim=k), "sum_tuple": lambda x, d, k: gc.sum(x, (d,), keepdim=k),
    "cumsum": lambda x, d, k: gc.cumsum(x, d), "cumprod": lambda x, d, k: x.cumprod(d),
}


@pytest.mark.parametrize("name", sorted(REDUCE_DIM))
@SETTINGS
@given(sdk=shape_and_dim(), seed=seeds)
def test_reduction_with_dim(name, sdk, seed):
    shape, dim, keepdim = sdk
    if name in ("var", "std") and shape[dim] < 2:
        return  # unbiased variance of one element is nan, as in torch
    v = values(seed, shape, 0.5, 2.0)
    # distinct values: max/min have a unique winner
    v = v + np.arange(v.size).reshape(shape) * 1e-2
    gradcheck(lambda x: REDUCE_DIM[name](x, dim, keepdim), leaf(v))


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "amax", "amin", "norm", "var", "std",
                                  "logsumexp_all"])
@SETTINGS
@given(shape=array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3), seed=seeds)
def test_full_reduction(name, shape, seed):
    v = values(seed, shape, 0.5, 2.0) + np.arange(int(np.prod(shape))).reshape(shape) * 1e-2
    if name in ("var", "std") and v.size < 2:
        return
    fn = {"logsumexp_all": lambda x: gc.logsumexp(x, tuple(range(x.ndim)))}.get(name) or getattr(gc, name)
    if name == "logsumexp_all" and not shape:
        fn = lambda x: gc.logsumexp(x, 0)  # noqa: E731
    gradcheck(fn, leaf(v))


# -- linear algebra ------------------------------------------------------------------------------

@SETTINGS
@given(n=st.integers(1, 4), k=st.integers(1, 4), m=st.integers(1, 4), b=st.integers(1, 3), seed=seeds)
def test_linalg(n, k, m, b, seed):
    A, B = leaf(values(seed, (n, k))), leaf(values(seed + 1, (k, m)))
    v, w = leaf(values(seed + 2, (k,))), leaf(values(seed + 3, (k,)))
    gradcheck(gc.mm, A, B)
    gradcheck(gc.mv, A, v)
    gradcheck(gc.dot, v, w)
    gradcheck(gc.outer, v, leaf(values(seed + 4, (n,))))
    gradcheck(lambda x, y: x @ y, A, B)
    gradcheck(gc.matmul, v, B)  # 1-d @ 2-d
    gradcheck(gc.matmul, A, v)  # 2-d @ 1-d
    gradcheck(gc.matmul, leaf(values(seed, (b, n, k))), B)  # batched @ matrix
    gradcheck(gc.matmul, leaf(values(seed, (b, n, k))), leaf(values(seed + 1, (b, k, m))))


# -- shape ops ----------------------------------------------------------------------------------

@SETTINGS
@given(shape=array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=3), seed=seeds, data=st.data())
def test_shape_ops(shape, seed, data):
    x = leaf(values(seed, shape))
    n = len(shape)
    d0, d1 = data.draw(st.integers(0, n - 1)), data.draw(st.integers(-n, n - 1))
    perm = data.draw(st.permutations(range(n)))
    gradcheck(lambda t: t.reshape(-1), x)
    gradcheck(lambda t: t.view(int(np.prod(shape))), x)
    gradcheck(lambda t: gc.transpose(t, d0, d1), x)
    gradcheck(lambda t: t.permute(*perm), x)
    gradcheck(lambda t: gc.flatten(t), x)
    gradcheck(lambda t: t.unsqueeze(d1).squeeze(), x)
    gradcheck(lambda t: t.unsqueeze(0).expand(2, *shape), x)
    gradcheck(lambda t: gc.cat([t, t * 2], d0), x)
    gradcheck(lambda t: gc.stack([t, t * 2], d1), x)
    if n == 2:
        gradcheck(lambda t: t.t(), x)
        gradcheck(lambda t: t.T, x)


@SETTINGS
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4), seed=seeds, data=st.data())
def test_indexing(shape, seed, data):
    x = leaf(values(seed, shape))
    i = data.draw(st.integers(-shape[0], shape[0] - 1))
    gradcheck(lambda t: t[i], x)
    gradcheck(lambda t: t[1:], x)
    gradcheck(lambda t: t[::2], x)
    gradcheck(lambda t: t[None, ..., 0], x)
    gradcheck(lambda t: t[[0, 1, 0]], x)  # repeated indices accumulate
    if len(shape) >= 2:
        gradcheck(lambda t: t[:, 1], x)
        gradcheck(lambda t: t[0, 1:], x)


def test_broadcast_gradients_are_summed_to_the_leaf_shape():
    a = leaf(np.ones((3, 1)))
    b = leaf(np.arange(4.0))
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,)
    np.testing.assert_allclose(a.grad._data, [[6.0]] * 3)
    np.testing.assert_allclose(b.grad._data, [3.0] * 4)


# -- second derivatives ---------------------------------------------------------------------------

SECOND = {
    "sin*x": lambda x: gc.sin(x) * x, "exp": gc.exp, "log": gc.log, "tanh": gc.tanh, "sigmoid": gc.sigmoid,
    "pow3": lambda x: x ** 3, "div": lambda x: 1.0 / x, "sqrt": gc.sqrt, "softmax": lambda x: gc.softmax(x, -1),
    "mean": lambda x: gc.mean(x * x, 0), "mm": lambda x: x @ x.t(), "norm": lambda x: gc.norm(x) * x,
    "index": lambda x: x[0] * x[-1] * x, "logsumexp": lambda x: gc.logsumexp(x, -1),
}


@pytest.mark.parametrize("name", sorted(SECOND))
def test_second_derivative(name):
    """The gradient built with create_graph=True is itself checked against finite differences."""
    fn = SECOND[name]
    x = leaf(values(7, (2, 3), 0.5, 1.5))
    cot = gc.tensor(np.random.default_rng(1).standard_normal(tuple(fn(x).shape)).tolist(), dtype=gc.float64)

    def first(t):
        (g,) = gc.autograd.grad([fn(t)], [t], grad_outputs=[cot], create_graph=True)
        return g

    gradcheck(first, x, atol=1e-5, rtol=1e-4)


# -- more signatures: p-norms, corrections, tuple dims, tensor bounds, broadcast where --------------

@pytest.mark.parametrize("p", [1, 3, 2.5, "fro", float("inf")])
@SETTINGS
@given(sdk=shape_and_dim(), seed=seeds)
def test_norm_orders(p, sdk, seed):
    shape, dim, keepdim = sdk
    v = values(seed, shape, 0.3, 2.0) * np.where(np.arange(int(np.prod(shape))).reshape(shape) % 2, 1, -1)
    v = v + np.arange(v.size).reshape(shape) * 1e-2 * np.sign(v)  # distinct |x|: inf-norm has one winner
    gradcheck(lambda x: gc.norm(x, p, dim, keepdim), leaf(v))
    gradcheck(lambda x: gc.norm(x, p), leaf(v))


@pytest.mark.parametrize("kw", [{"unbiased": False}, {"correction": 0}, {"correction": 2}, {}])
@SETTINGS
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=3, max_side=4), seed=seeds, keepdim=st.booleans())
def test_var_std_corrections(kw, shape, seed, keepdim):
    x = leaf(values(seed, shape))
    gradcheck(lambda t: gc.var(t, 0, keepdim=keepdim, **kw), x)
    gradcheck(lambda t: gc.std(t, -1, keepdim=keepdim, **kw) + gc.std(t, **kw), x)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "logsumexp", "norm", "var", "std"])
@SETTINGS
@given(shape=array_shapes(min_dims=2, max_dims=3, min_side=2, max_side=3), seed=seeds, keepdim=st.booleans(),
       data=st.data())
def test_reductions_over_several_dims(name, shape, seed, keepdim, data):
    n = len(shape)
    picked = data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=n, unique_by=lambda d: d % n))
    v = values(seed, shape, 0.5, 2.0) + np.arange(int(np.prod(shape))).reshape(shape) * 1e-2
    fn = getattr(gc, name)
    if name == "norm":
        gradcheck(lambda x: fn(x, dim=tuple(picked), keepdim=keepdim), leaf(v))
    else:
        gradcheck(lambda x: fn(x, tuple(picked), keepdim=keepdim), leaf(v))


@SETTINGS
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), seed=seeds, data=st.data())
def test_prod_through_zeros(shape, seed, data):
    """prod's gradient stays exact with one zero in a slice (torch's prod_backward), where result/x fails."""
    v = values(seed, shape, 0.5, 1.5)
    flat = v.reshape(-1)
    flat[data.draw(st.integers(0, flat.size - 1))] = 0.0
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    gradcheck(lambda x: gc.prod(x), leaf(v))
    gradcheck(lambda x: gc.prod(x, dim), leaf(v))


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3), seed=seeds)
def test_clamp_with_tensor_bounds(shapes, seed):
    sx, slo, shi = shapes.input_shapes
    x = leaf(values(seed, sx, -2, 2))
    lo = leaf(values(seed + 1, slo, -1.5, -0.5))
    hi = leaf(values(seed + 2, shi, 0.5, 1.5))
    xs, los, his = np.broadcast_arrays(x._data, lo._data, hi._data)
    if np.min(np.abs(xs - los)) < 0.05 or np.min(np.abs(xs - his)) < 0.05:
        return  # on a bound the derivative is one-sided
    gradcheck(lambda a, b, c: gc.clamp(a, b, c), x, lo, hi)
    gradcheck(lambda a, b: gc.clamp(a, min=b), x, lo)
    gradcheck(lambda a, c: gc.clamp(a, max=c), x, hi)


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3), seed=seeds)
def test_where_broadcasts_all_three(shapes, seed):
    sc, sa, sb = shapes.input_shapes
    cond = gc.tensor((values(seed, sc) > 0).tolist())
    a, b = leaf(values(seed + 1, sa)), leaf(values(seed + 2, sb))
    gradcheck(lambda x, y: gc.where(cond, x, y), a, b)
    gradcheck(lambda x: gc.where(cond, x, 0.5) * x, a)


@SETTINGS
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), seed=seeds, data=st.data())
def test_cat_stack_of_several_inputs(shape, seed, data):
    n = len(shape)
    d = data.draw(st.integers(-n, n - 1))
    xs = [leaf(values(seed + i, shape)) for i in range(3)]
    gradcheck(lambda a, b, c: gc.cat([a, b * c, c], d), *xs)
    s = data.draw(st.integers(-n - 1, n))
    gradcheck(lambda a, b, c: gc.stack([a, b, c * a], s), *xs)
    other = list(shape)
    other[d] = 2
    gradcheck(lambda a, b: gc.cat([a, b], d), xs[0], leaf(values(seed + 5, tuple(other))))


@SETTINGS
@given(shape=array_shapes(min_dims=2, max_dims=3, min_side=2, max_side=4), seed=seeds, data=st.data())
def test_advanced_indexing(shape, seed, data):
    x = leaf(values(seed, shape))
    rows = data.draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=5))
    cols = data.draw(st.lists(st.integers(0, shape[1] - 1), min_size=len(rows), max_size=len(rows)))
    gradcheck(lambda t: t[rows], x)
    gradcheck(lambda t: t[rows, cols], x)  # pairs; repeats accumulate
    gradcheck(lambda t: t[:, cols], x)
    gradcheck(lambda t: t[1:, None, ..., ::2], x)
    mask = gc.tensor((values(seed + 1, shape) > 0).tolist())
    gradcheck(lambda t: t[mask] * 2, x) if bool(mask.any()) else None
    gradcheck(lambda t: t[gc.tensor(rows)], x)


def test_every_spec_function_is_gradchecked():
    """The tables above cover SPEC §2's whole list (so a new op cannot slip past them)."""
    spec = ("add sub mul div neg pow matmul mm mv dot outer exp log log1p sqrt rsqrt abs sin cos tan tanh sigmoid "
            "relu reciprocal square clamp maximum minimum where sum mean prod max min amax amin norm var std "
            "logsumexp softmax log_softmax reshape view transpose t permute unsqueeze squeeze expand flatten cat "
            "stack clone").split()
    import inspect
    source = inspect.getsource(inspect.getmodule(test_every_spec_function_is_gradchecked))
    covered = set(BINARY) | set(UNARY) | set(REDUCE_DIM) | set(SECOND)
    for name in spec:
        assert name in covered or re.search(rf"(gc\.|\.){name}\b", source), f"{name} is never gradchecked"
        assert callable(getattr(gc, name)), name


# -- the helper itself can fail ----------------------------------------------------------------------

def test_gradcheck_catches_a_wrong_derivative():
    """A node whose formula is off by a factor must fail the check (the helper is not vacuous)."""
    from gradcli.autograd.function import apply
    from gradcli.autograd.node import define_node
    wrong = define_node("WrongSinBackward0", self="grad * F.cos(self) * 1.01",
                        forward=lambda xp, x: xp.sin(x))
    x = leaf([0.3, 0.7, 1.1])
    gradcheck(lambda t: apply(gc.autograd.node.NODE_CLASSES["SinBackward0"], (t,)), x)
    with pytest.raises(AssertionError, match="input 0"):
        gradcheck(lambda t: apply(wrong, (t,)), x)
    with pytest.raises(AssertionError, match="shape"):
        gradcheck(lambda t: apply(define_node("WrongShapeBackward0", self="F.sum(grad)",
                                              forward=lambda xp, v: xp.sin(v)), (t,)), x)


# -- higher derivatives of two-input ops, and third derivatives -----------------------------------

SECOND_BINARY = {
    "mul": lambda a, b: a * b * a, "div": lambda a, b: a / b, "pow": lambda a, b: a ** b,
    "maximum": lambda a, b: gc.maximum(a, b) * a, "where": lambda a, b: gc.where(a > 1, a * b, b * b),
    "clamp": lambda a, b: gc.clamp(a * b, 0.8, 1.5) * a, "mv": lambda a, b: gc.mv(a, b[0]) * b[0, 0],
    "dot": lambda a, b: gc.dot(a[0], b[0]) * a[0], "outer": lambda a, b: gc.outer(a[0], b[1]) * a[0, 0],
    "matmul": lambda a, b: (a @ b.t()) @ a, "cat": lambda a, b: gc.cat([a * b, b]) ** 2,
    "stack": lambda a, b: gc.stack([a * b, a], 1) ** 2, "var": lambda a, b: gc.var(a * b, 1),
    "std": lambda a, b: gc.std(a * b), "prod": lambda a, b: gc.prod(a * b, 0),
    "log_softmax": lambda a, b: gc.log_softmax(a * b, 0), "amax": lambda a, b: gc.amax(a * b, 1) * a[:, 0],
}


@pytest.mark.parametrize("name", sorted(SECOND_BINARY))
def test_second_derivative_of_two_inputs(name):
    """Mixed second derivatives: the create_graph gradients of both inputs, checked by differences."""
    fn = SECOND_BINARY[name]
    a = leaf(values(3, (2, 3), 0.6, 1.6) + np.arange(6).reshape(2, 3) * 0.03)
    b = leaf(values(4, (2, 3), 0.6, 1.6) + np.arange(6).reshape(2, 3) * 0.05)
    cot = gc.tensor(np.random.default_rng(2).standard_normal(tuple(fn(a, b).shape)).tolist(), dtype=gc.float64)

    def first(x, y):
        gx, gy = gc.autograd.grad([fn(x, y)], [x, y], grad_outputs=[cot], create_graph=True)
        return gx * 1.5 + gy

    gradcheck(first, a, b, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ["exp", "sin*x", "tanh", "sigmoid", "log", "pow3", "sqrt", "div"])
def test_third_derivative(name):
    fn = SECOND[name]
    x = leaf(values(9, (3,), 0.5, 1.5))

    def second(t):
        (g,) = gc.autograd.grad([fn(t).sum()], [t], create_graph=True)
        (h,) = gc.autograd.grad([g.sum()], [t], create_graph=True)
        return h

    gradcheck(second, x, atol=1e-4, rtol=1e-4)


# -- scans through zeros, flip, roll, tril/triu, lerp, addcmul, addcdiv --------------------------------

@SETTINGS
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), seed=seeds, data=st.data())
def test_cumprod_through_zeros(shape, seed, data):
    """cumprod's gradient with one or two zeros in the input (torch's masks, no division by zero), and
    the create_graph gradient (torch's loop of products) differentiated again."""
    v = values(seed, shape, 0.5, 1.5)
    flat = v.reshape(-1)
    for i in data.draw(st.lists(st.integers(0, flat.size - 1), min_size=1, max_size=2)):
        flat[i] = 0.0
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    gradcheck(lambda x: gc.cumprod(x, dim), leaf(v))
    if shape[dim] == 1:
        return  # one element along dim: the gradient is the cotangent, a constant
    cot = gc.tensor(values(seed + 1, shape).tolist(), dtype=gc.float64)

    def first(t):
        (g,) = gc.autograd.grad([gc.cumprod(t, dim)], [t], grad_outputs=[cot], create_graph=True)
        return g

    gradcheck(first, leaf(v), atol=1e-5, rtol=1e-4)


@SETTINGS
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), seed=seeds, data=st.data())
def test_flip_and_roll(shape, seed, data):
    n = len(shape)
    dims = data.draw(st.lists(st.integers(-n, n - 1), max_size=n, unique_by=lambda d: d % n))
    shifts = data.draw(st.lists(st.integers(-5, 5), min_size=len(dims), max_size=len(dims)))
    flat = data.draw(st.integers(-7, 7))
    x = leaf(values(seed, shape))
    gradcheck(lambda t: gc.flip(t * t, dims), x)
    gradcheck(lambda t: (t * t).roll(shifts, dims) if dims else t.roll(flat), x)


@SETTINGS
@given(shape=array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=4), seed=seeds, k=st.integers(-3, 3))
def test_tril_triu(shape, seed, k):
    x = leaf(values(seed, shape))
    gradcheck(lambda t: gc.tril(t * t, k), x)
    gradcheck(lambda t: (t * t).triu(diagonal=k), x)
    gradcheck(lambda t: (t * 1).tril_(k) * t, x)


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3), seed=seeds,
       weight=st.sampled_from([0.25, 0.5, 0.8, -1.5, 2]))
def test_lerp_addcmul_addcdiv(shapes, seed, weight):
    sa, sb, sc = shapes.input_shapes
    a, b = leaf(values(seed, sa)), leaf(values(seed + 1, sb))
    c = leaf(values(seed + 2, sc, 0.5, 2.0))  # a divisor away from zero
    w = leaf(values(seed + 3, sc, -0.5, 1.5))
    gradcheck(lambda x, y: gc.lerp(x, y, weight), a, b)
    gradcheck(lambda x, y, z: gc.lerp(x, y, z), a, b, w)
    gradcheck(lambda x, y, z: gc.addcmul(x, y, z, value=weight), a, b, c)
    gradcheck(lambda x, y, z: x.addcdiv(y, z, value=weight), a, b, c)


def test_second_derivatives_of_lerp_addcmul_addcdiv():
    a = leaf(values(5, (2, 3), 0.6, 1.6))
    b = leaf(values(6, (3,), 0.6, 1.6))
    c = leaf(values(7, (2, 1), 0.6, 1.6))
    for fn in (lambda x, y, z: gc.lerp(x * y, y, z) * x, lambda x, y, z: gc.addcmul(x, y, z * x, value=-2),
               lambda x, y, z: gc.addcdiv(x * x, y, z, value=0.5)):
        cot = gc.tensor(np.random.default_rng(3).standard_normal(tuple(fn(a, b, c).shape)).tolist(), dtype=gc.float64)

        def first(x, y, z, fn=fn, cot=cot):
            gx, gy, gz = gc.autograd.grad([fn(x, y, z)], [x, y, z], grad_outputs=[cot], create_graph=True)
            return gx.sum() * gy * 1.5 + gz.sum()

        gradcheck(first, a, b, c, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("shape", [(3,), (2, 3), (4, 2, 3)])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_and_addmm(shape, bias):
    """F.linear by each of torch's paths (addmm on the rows, matmul), and addmm with beta and alpha."""
    x, w, b = leaf(values(1, shape)), leaf(values(2, (4, 3))), leaf(values(3, (4,)))
    if bias:
        gradcheck(lambda x, w, b: NF.linear(x, w, b), x, w, b)
    else:
        gradcheck(lambda x, w: NF.linear(x, w), x, w)
    gradcheck(lambda c, a, m: gc.addmm(c, a, m, beta=0.5, alpha=2), leaf(values(4, (4,))), leaf(values(5, (2, 3))),
              leaf(values(6, (3, 4))))


def test_index_and_sort_ops():
    """Finite differences through the index and sort ops (distinct values: no ties to pick between)."""
    x = leaf(values(11, (3, 4)))
    src = leaf(values(12, (2, 4)))
    idx = gc.tensor([[2, 0, 1, 0], [1, 2, 0, 2]])
    gradcheck(lambda t: t.index_select(-1, gc.tensor([3, 0, 3])), x)
    gradcheck(lambda t: t.gather(0, idx), x)
    gradcheck(lambda t, s: t.scatter(0, idx, s), x, src)
    gradcheck(lambda t: t.scatter(1, gc.tensor([[0], [3], [1]]), 0.5), x)
    gradcheck(lambda t, s: gc.scatter_add(t, 0, idx, s), x, src)
    gradcheck(lambda t, s: t.index_add(0, gc.tensor([2, 2]), s, alpha=-1.5), x, src)
    gradcheck(lambda t: t.masked_select(gc.tensor([True, False, True, True])), x)
    gradcheck(lambda t: t.repeat(2, 1, 3), x)
    gradcheck(lambda t: t.sort(-1, descending=True).values, x)
    gradcheck(lambda t: t.topk(2, 0, largest=False).values, x)
    gradcheck(lambda t: t.kthvalue(2, 1, keepdim=True).values, x)
    gradcheck(lambda t: t.median() + t.median(0).values.sum(), x)
    gradcheck(lambda a, b: gc.bmm(a.view(1, 3, 4), b.view(1, 4, 2)), x, src)
