"""The oracle: every op, and random composed programs, run in gradcli and in PyTorch; values,
gradients, grad_fn names and next_functions must agree. Skipped where torch is not installed."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradcli as gc
from helpers import assert_matches_torch, graph_names

torch = pytest.importorskip("torch")


def pair(array, requires_grad=True, dtype="float32"):
    a = np.asarray(array, dtype=dtype)
    return (gc.tensor(a.tolist(), dtype=getattr(gc, dtype), requires_grad=requires_grad),
            torch.tensor(a.tolist(), dtype=getattr(torch, dtype), requires_grad=requires_grad))


def run_both(fn, *arrays, requires_grad=None, dtype="float32"):
    requires_grad = requires_grad or [True] * len(arrays)
    ours, theirs = zip(*(pair(a, rg, dtype) for a, rg in zip(arrays, requires_grad)))
    out_o, out_t = fn(gc, *ours), fn(torch, *theirs)
    return ours, theirs, out_o, out_t


def compare(fn, *arrays, requires_grad=None, dtype="float32", atol=1e-5, rtol=1e-4):
    ours, theirs, out_o, out_t = run_both(fn, *arrays, requires_grad=requires_grad, dtype=dtype)
    assert_matches_torch(out_o, out_t, atol=atol, rtol=rtol)
    assert out_o.requires_grad == out_t.requires_grad
    assert graph_names(out_o) == graph_names(out_t)
    if out_t.requires_grad:
        cot = np.random.default_rng(0).standard_normal(tuple(out_t.shape)).astype(dtype)
        out_o.backward(gc.tensor(cot.tolist(), dtype=out_o.dtype))
        out_t.backward(torch.tensor(cot))
        for o, t in zip(ours, theirs):
            if t.grad is None:
                assert o.grad is None
            else:
                assert_matches_torch(o.grad, t.grad, atol=atol, rtol=rtol)
    return out_o, out_t


R = np.random.default_rng(42)
A = R.uniform(0.5, 2.0, (2, 3))
B = R.uniform(0.5, 2.0, (2, 3))
V3 = R.uniform(0.5, 2.0, (3,))
M34 = R.uniform(-1, 1, (3, 4))
SIGNED = R.uniform(-2, 2, (2, 3))

OPS = {
    # pointwise binary, with broadcasting and Python scalars
    "add": (lambda L, a, b: a + b, (A, V3)), "add_alpha": (lambda L, a, b: L.add(a, b, alpha=2), (A, B)),
    "sub": (lambda L, a, b: a - b, (A, V3)), "rsub": (lambda L, a: 2 - a, (A,)),
    "sub_scalar": (lambda L, a: a - 2, (A,)), "mul": (lambda L, a, b: a * b, (A, B)),
    "mul_scalar": (lambda L, a: a * 3, (A,)), "rmul_scalar": (lambda L, a: 3 * a, (A,)),
    "div": (lambda L, a, b: a / b, (A, V3)), "rdiv": (lambda L, a: 2 / a, (A,)),
    "neg": (lambda L, a: -a, (A,)), "pow_scalar": (lambda L, a: a ** 3, (A,)),
    "pow_tensor": (lambda L, a, b: a ** b, (A, B)), "rpow": (lambda L, a: 2 ** a, (A,)),
    "square": (lambda L, a: L.square(a), (A,)),
    # pointwise unary
    **{name: ((lambda n: lambda L, a: getattr(L, n)(a))(name), (A,)) for name in
       ("exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "reciprocal")},
    "abs": (lambda L, a: L.abs(a), (SIGNED,)), "relu": (lambda L, a: L.relu(a), (SIGNED,)),
    "clamp": (lambda L, a: L.clamp(a, -0.5, 0.5), (SIGNED,)), "clamp_min": (lambda L, a: L.clamp(a, min=0.1), (SIGNED,)),
    "clamp_tensor": (lambda L, a, b: L.clamp(a, min=b), (SIGNED, B - 1)),
    "maximum": (lambda L, a, b: L.maximum(a, b), (SIGNED, B - 1)), "minimum": (lambda L, a, b: L.minimum(a, b), (SIGNED, B - 1)),
    "where": (lambda L, a, b: L.where(a > 0, a, b), (SIGNED, B)),
    "where_broadcast": (lambda L, a, b: L.where(L.ones(4, 2, 3) > 0, a, b), (V3, SIGNED)),
    "where_scalar": (lambda L, a: L.where(a > 0, a, 0.0), (SIGNED,)),
    # reductions
    "sum": (lambda L, a: a.sum(), (A,)), "sum_dim": (lambda L, a: a.sum(1, keepdim=True), (A,)),
    "sum_dims": (lambda L, a: L.sum(a, (0, 1)), (A,)), "mean": (lambda L, a: a.mean(), (A,)),
    "mean_dim": (lambda L, a: a.mean(0), (A,)), "prod": (lambda L, a: a.prod(), (A,)),
    "prod_dim": (lambda L, a: a.prod(1), (A,)), "max": (lambda L, a: a.max(), (A,)),
    "max_dim": (lambda L, a: a.max(1).values, (A,)), "min_dim": (lambda L, a: L.min(a, 0, keepdim=True)[0], (A,)),
    "amax": (lambda L, a: L.amax(a, 1), (A,)), "amin": (lambda L, a: L.amin(a, 0), (A,)),
    "norm": (lambda L, a: a.norm(), (A,)), "norm_dim": (lambda L, a: L.norm(a, dim=1), (A,)),
    "var": (lambda L, a: a.var(), (A,)), "std_dim": (lambda L, a: a.std(1), (A,)),
    "logsumexp": (lambda L, a: L.logsumexp(a, 1), (A,)), "softmax": (lambda L, a: L.softmax(a, 1), (A,)),
    "log_softmax": (lambda L, a: L.log_softmax(a, 0), (A,)),
    # linear algebra
    "mm": (lambda L, a, b: L.mm(a, b), (A, M34)), "mv": (lambda L, a, b: L.mv(a, b), (A, V3)),
    "dot": (lambda L, a, b: L.dot(a, b), (V3, V3 * 2)), "outer": (lambda L, a, b: L.outer(a, b), (V3, V3)),
    "matmul": (lambda L, a, b: a @ b, (A, M34)), "matmul_1d": (lambda L, a, b: a @ b, (V3, M34)),
    "matmul_vec": (lambda L, a, b: a @ b, (A, V3)),
    "matmul_batched": (lambda L, a, b: a @ b, (np.stack([A, B]), M34)),
    # shape
    "reshape": (lambda L, a: a.reshape(3, 2), (A,)), "view": (lambda L, a: a.view(-1), (A,)),
    "transpose": (lambda L, a: a.transpose(0, 1), (A,)), "t": (lambda L, a: a.t(), (A,)),
    "T": (lambda L, a: a.T, (A,)), "permute": (lambda L, a: a.permute(1, 0), (A,)),
    "unsqueeze": (lambda L, a: a.unsqueeze(1), (A,)), "squeeze": (lambda L, a: a.unsqueeze(0).squeeze(), (A,)),
    "squeeze_dim": (lambda L, a: a.unsqueeze(0).squeeze(0), (A,)),
    "expand": (lambda L, a: a.expand(4, 3), (V3,)), "flatten": (lambda L, a: a.flatten(), (A,)),
    "cat": (lambda L, a, b: L.cat([a, b], 1), (A, B)), "stack": (lambda L, a, b: L.stack([a, b]), (A, B)),
    "clone": (lambda L, a: a.clone(), (A,)), "detach": (lambda L, a, b: a.detach() * b, (A, B)),
    # indexing
    "select": (lambda L, a: a[1], (A,)), "select_2": (lambda L, a: a[:, 2], (A,)),
    "slice": (lambda L, a: a[:, 1:], (A,)), "slice_step": (lambda L, a: a[:, ::2], (A,)),
    "index_list": (lambda L, a: a[[1, 0, 1]], (A,)), "index_none": (lambda L, a: a[None], (A,)),
    "ellipsis": (lambda L, a: a[..., 0], (A,)), "negative": (lambda L, a: a[-1, -1], (A,)),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_torch(name):
    fn, arrays = OPS[name]
    compare(fn, *arrays)


@pytest.mark.parametrize("name", ["add", "mul", "div", "mm", "sum_dim", "softmax", "cat", "select", "pow_tensor"])
def test_op_matches_torch_float64(name):
    fn, arrays = OPS[name]
    compare(fn, *arrays, dtype="float64", atol=1e-10, rtol=1e-10)


def test_next_functions_arity_and_none_entries():
    _, _, o, t = run_both(lambda L, a: 2 - a, A)
    assert graph_names(o) == graph_names(t) == [("RsubBackward1", [("AccumulateGrad", 0)]), ("AccumulateGrad", [])]
    _, _, o, t = run_both(lambda L, a: a * 3, A)
    assert graph_names(o)[0] == graph_names(t)[0] == ("MulBackward0", [("AccumulateGrad", 0), (None, 0)])
    _, _, o, t = run_both(lambda L, a, b: a + b, A, B, requires_grad=[False, True])
    assert graph_names(o)[0] == graph_names(t)[0] == ("AddBackward0", [(None, 0), ("AccumulateGrad", 0)])


def test_dtype_promotion_matches_torch():
    for dt_a, dt_b in [("float32", "float64"), ("float64", "float32")]:
        (a, ta), (b, tb) = pair(A, dtype=dt_a), pair(B, dtype=dt_b)
        assert (a * b).dtype.name == str((ta * tb).dtype).replace("torch.", "")
    i_o, i_t = gc.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    assert str(i_o.dtype) == str(i_t.dtype) == "torch.int64"
    assert (i_o * 1.5).dtype.name == str((i_t * 1.5).dtype).replace("torch.", "")
    assert (i_o / 2).dtype.name == str((i_t / 2).dtype).replace("torch.", "")


# -- random composed programs -------------------------------------------------------------------

UNARY_SAFE = ["sin", "cos", "tanh", "sigmoid", "exp_small", "square", "neg", "softplus_like", "sum_keep", "mean_keep",
              "t_twice", "abs_shift"]
BINARY_SAFE = ["add", "sub", "mul", "div_safe", "maximum_shift"]


def apply_unary(L, name, x):
    if name == "exp_small":
        return L.exp(x * 0.1)
    if name == "softplus_like":
        return L.log(1 + L.exp(x * 0.5))
    if name == "sum_keep":
        return x.sum(-1, keepdim=True) + x
    if name == "mean_keep":
        return x - x.mean(0, keepdim=True)
    if name == "t_twice":
        return x.t().t()
    if name == "abs_shift":
        return L.abs(x) + 1
    return getattr(L, name)(x) if name != "neg" else -x


def apply_binary(L, name, x, y):
    if name == "add":
        return x + y
    if name == "sub":
        return x - y
    if name == "mul":
        return x * y
    if name == "div_safe":
        return x / (y * y + 1)
    return L.maximum(x, y + 0.001)


program_steps = st.lists(
    st.one_of(st.tuples(st.just("u"), st.sampled_from(UNARY_SAFE), st.integers(0, 10)),
              st.tuples(st.just("b"), st.sampled_from(BINARY_SAFE), st.integers(0, 10), st.integers(0, 10))),
    min_size=1, max_size=12)


def run_program(L, leaves, steps):
    values = list(leaves)
    for step in steps:
        if step[0] == "u":
            values.append(apply_unary(L, step[1], values[step[2] % len(values)]))
        else:
            values.append(apply_binary(L, step[1], values[step[2] % len(values)], values[step[3] % len(values)]))
    return values[-1].sum() + values[-1].mean() * 0.5


@settings(max_examples=60, deadline=None, derandomize=True)
@given(steps=program_steps, seed=st.integers(0, 1000), mask=st.lists(st.booleans(), min_size=3, max_size=3))
def test_random_programs_match_torch(steps, seed, mask):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1, 1, (3, 3)) for _ in range(3)]
    requires = [m or i == 0 for i, m in enumerate(mask)]
    ours, theirs = zip(*(pair(a, rg, "float64") for a, rg in zip(arrays, requires)))
    out_o = run_program(gc, ours, steps)
    out_t = run_program(torch, theirs, steps)
    assert_matches_torch(out_o, out_t, atol=1e-9, rtol=1e-9)
    assert graph_names(out_o) == graph_names(out_t)
    if out_t.requires_grad:
        out_o.backward()
        out_t.backward()
        for o, t in zip(ours, theirs):
            if t.grad is None:
                assert o.grad is None
            else:
                assert_matches_torch(o.grad, t.grad, atol=1e-9, rtol=1e-9)
