"""The binary ops' shared shortcuts (ops/registry.py's operator path, ops/pointwise.py's ``_binary``)
give what the general path gives: torch's values, gradients, grad_fn names and next_functions, with
broadcast operands and Python numbers, and the limits still refuse a result that grows."""

from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc
from gradcli.errors import AutogradError, LimitError, ShapeError
from gradcli.limits import LIMITS
from gradcli.ops import registry

torch = pytest.importorskip("torch")

X = [[0.9, 1.2], [0.7, 1.4]]
ROW = [0.75, 1.25]
COL = [[0.5], [1.5]]

BINARY = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
    "add": lambda a, b: a.add(b), "sub": lambda a, b: a.sub(b), "mul": lambda a, b: a.mul(b),
    "div": lambda a, b: a.div(b), "add alpha": lambda a, b: a.add(b, alpha=2), "pow": lambda a, b: a.pow(b),
}


def _names(node):
    """grad_fn names down the graph, depth first: (name, [children...])."""
    if node is None:
        return None
    return (node.name(), [_names(n) for n, _ in node.next_functions])


def _leaves(lib, *values, dtype=None):
    return [lib.tensor(v, requires_grad=True, dtype=dtype) for v in values]


def _compare(fn, *values, dtype_name="float32", seed=None):
    outs = {}
    for lib in (gc, torch):
        dtype = getattr(lib, dtype_name)
        leaves = _leaves(lib, *values, dtype=dtype)
        out = fn(*leaves)
        grad = lib.tensor(np.asarray(seed if seed is not None else np.ones(np.shape(out.tolist()))).tolist(),
                          dtype=out.dtype)
        out.backward(grad)
        outs[lib.__name__] = (out, leaves)
    (ours, our_leaves), (theirs, their_leaves) = outs["gradcli"], outs["torch"]
    np.testing.assert_allclose(np.asarray(ours.detach().tolist()), theirs.detach().numpy(), rtol=2e-7)
    assert str(ours.dtype) == str(theirs.dtype)
    assert _names(ours.grad_fn) == _names(theirs.grad_fn)
    for a, b in zip(our_leaves, their_leaves):
        np.testing.assert_allclose(np.asarray(a.grad.tolist()), b.grad.numpy(), rtol=1e-6)
        assert list(a.grad.shape) == list(b.grad.shape)


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("shapes", [(X, ROW), (ROW, X), (X, COL), (COL, X), (X, X), (ROW, [2.0])],
                         ids=["x,row", "row,x", "x,col", "col,x", "x,x", "row,1"])
def test_broadcasting_pairs_match_torch_twice(name, shapes):
    """The first call of a pair of shapes takes the general path (and fills the broadcast table),
    the second the shortcut: both are torch's."""
    registry.BROADCASTS.clear()
    for _ in range(2):
        _compare(BINARY[name], *shapes)
        _compare(BINARY[name], *shapes, dtype_name="float64")


def test_shortcut_is_taken_only_for_pairs_seen_to_broadcast():
    registry.BROADCASTS.clear()
    x, row = _leaves(gc, X, ROW)
    out = x + row
    assert registry.BROADCASTS[((2, 2), (2,))] == (2, 2)
    out2 = x + row
    assert out2.grad_fn.name() == "AddBackward0" and out2.grad_fn._shapes == ((2, 2), (2,))
    np.testing.assert_array_equal(out._data, out2._data)


def test_a_result_larger_than_both_operands_is_still_checked(monkeypatch):
    """(3, 1) + (1, 3) is (3, 3): seen before, it still goes through the limits each time."""
    registry.BROADCASTS.clear()
    col = gc.ones(3, 1, requires_grad=True)
    row = gc.ones(1, 3, requires_grad=True)
    assert (col + row).shape == (3, 3)
    assert col.mul(row).shape == (3, 3)
    monkeypatch.setattr(LIMITS, "max_elements", 8)
    with pytest.raises(LimitError, match="has 9 elements, over the limit of 8"):
        col + row
    with pytest.raises(LimitError, match="has 9 elements, over the limit of 8"):
        col.mul(row)
    # a result no larger than an operand that exists needs no check
    assert (gc.ones(2, 2) + gc.ones(2)).shape == (2, 2)


def test_a_pair_that_does_not_broadcast_keeps_torchs_message():
    a, b = gc.ones(2, 3), gc.ones(2)
    for _ in range(2):
        with pytest.raises(ShapeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\) "
                                 r"at non-singleton dimension 1"):
            a + b


@pytest.mark.parametrize("fn", [
    lambda x: x.mul(1.5), lambda x: x.add(2), lambda x: x.sub(0.5), lambda x: x.div(4),
    lambda x: torch_or(x).div(x, 3), lambda x: 1.5 / x, lambda x: x.add(2, alpha=3), lambda x: x.sub(1.5, alpha=2),
    lambda x: 2 / (x * 3), lambda x: x.pow(2),
], ids=["mul", "add", "sub", "div", "torch.div", "rtruediv", "add alpha", "sub alpha", "rtruediv chain", "pow"])
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_tensor_and_number_through_functions_match_torch(fn, dtype_name):
    _compare(fn, X, dtype_name=dtype_name)


def torch_or(x):
    return torch if isinstance(x, torch.Tensor) else gc


def test_number_operand_saves_the_number_and_has_a_none_edge():
    x = gc.tensor(X, requires_grad=True)
    out = x.div(4.0)
    assert out.grad_fn.name() == "DivBackward0"
    assert out.grad_fn.next_functions[1] == (None, 0)
    assert out.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"
    y = 1.5 / x
    assert y.grad_fn.name() == "MulBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "ReciprocalBackward0"
    assert y.grad_fn.next_functions[1] == (None, 0)


@pytest.mark.parametrize("fn", [lambda x: 1.5 / x, lambda x: x.div(3) * x, lambda x: (x + ROW_T(x)) * x.mul(2)],
                         ids=["rtruediv", "div number", "broadcast"])
def test_second_derivatives_match_torch(fn):
    got = {}
    for lib in (gc, torch):
        x = lib.tensor(X, requires_grad=True, dtype=lib.float64)
        (g,) = lib.autograd.grad([fn(x).sum()], [x], create_graph=True)
        (gg,) = lib.autograd.grad([g.sum()], [x])
        got[lib.__name__] = (np.asarray(g.detach().tolist()), np.asarray(gg.tolist()), _names(g.grad_fn))
    np.testing.assert_allclose(got["gradcli"][0], got["torch"][0], rtol=1e-12)
    np.testing.assert_allclose(got["gradcli"][1], got["torch"][1], rtol=1e-12)
    assert got["gradcli"][2] == got["torch"][2]


def ROW_T(x):
    return (torch if isinstance(x, torch.Tensor) else gc).tensor(ROW, dtype=x.dtype)


def test_int_and_promoting_pairs_take_the_general_path():
    """Integers, bool numbers and mixed dtypes: torch's promotion, through ``_operands``."""
    cases = [
        (lambda L: L.tensor([[1, 2], [3, 4]]) + L.tensor([1, 2])),
        (lambda L: L.tensor([[1, 2], [3, 4]]) * 1.5),
        (lambda L: L.tensor([[1.0, 2.0]]) + L.tensor([1, 2])),
        (lambda L: L.tensor([[1.0, 2.0]], dtype=L.float64) * L.tensor([2.0, 3.0])),
        (lambda L: L.tensor([[1.0, 2.0]]).mul(True)),
        (lambda L: L.tensor([1, 2]).div(2)),
    ]
    for case in cases:
        ours, theirs = case(gc), case(torch)
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.numpy())


def test_no_grad_and_versions_through_the_shortcuts():
    x, row = _leaves(gc, X, ROW)
    x + row  # the pair is known now
    with gc.no_grad():
        out = x + row
    assert out.grad_fn is None and not out.requires_grad
    y = x * 1
    z = y * row
    y.mul_(2)  # MulBackward0 of z saved y: its backward now fails as torch's does
    with pytest.raises(AutogradError, match="modified by an inplace operation"):
        z.sum().backward()


def test_sum_to_on_arrays_is_the_sum_kernels_sum_and_reshape():
    """ArrayMath.sum_to: the reductions (the sum kernel's, in torch's order) and the reshape,
    exactly (values, dtype, shape)."""
    from gradcli.backend import NUMPY
    from gradcli.backend.cascade import torch_sum
    from gradcli.ops.formulas import ArrayMath
    F = ArrayMath(NUMPY)
    rng = np.random.default_rng(0)
    for shape, target in [((2, 2), (2,)), ((2, 2), (1, 2)), ((2, 2), (2, 1)), ((3, 4, 5), (4, 1)),
                          ((3, 4, 5), ()), ((3, 4, 5), (1, 1, 1)), ((2, 3), (2, 3)), ((4, 1, 3), (1, 3)),
                          ((5,), ()), ((5,), (1,))]:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(shape).astype(dtype)
            lead = len(shape) - len(target)
            keep = tuple(lead + i for i, s in enumerate(target) if s == 1 and shape[lead + i] != 1)
            want = x
            if keep:
                want = torch_sum(want, keep, True)
            if lead:
                want = torch_sum(want, tuple(range(lead)))
            want = np.reshape(want, target)
            got = F.sum_to(x, target)
            assert type(got) is type(want) and got.dtype == want.dtype and got.shape == target
            np.testing.assert_array_equal(got, want)
            assert F.sum_to(x, list(target)).shape == target


DIVISIONS = {
    "%": lambda a, b: a % b, "remainder": lambda a, b: _lib(a).remainder(a, b), "fmod": lambda a, b: _lib(a).fmod(a, b),
    "floor_divide": lambda a, b: _lib(a).floor_divide(a, b),
    "div floor": lambda a, b: a.div(b, rounding_mode="floor"), "div trunc": lambda a, b: a.div(b, rounding_mode="trunc"),
}
SIGNED = [[-0.0, 2.5], [-3.5, 7.0]]


def _lib(t):
    return torch if isinstance(t, torch.Tensor) else gc


@pytest.mark.parametrize("name", list(DIVISIONS))
@pytest.mark.parametrize("values", [(X, ROW), (SIGNED, [[1.5, -2.0], [-0.0, 0.0]]), (SIGNED, ROW), (ROW, SIGNED)],
                         ids=["x,row", "zeros", "signed,row", "row,signed"])
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_division_family_of_two_float_tensors_matches_torch(name, values, dtype_name):
    """fmod, remainder, floor_divide and div's rounding modes on two float tensors of one dtype take
    the shortcut (equal shapes, or a pair seen to broadcast): torch's values, signs of zero, NaN and
    inf for a zero divisor, gradients and grad_fn, on the first call and the second."""
    registry.BROADCASTS.clear()
    for _ in range(2):
        got = []
        for lib in (gc, torch):
            a, b = (lib.tensor(v, dtype=getattr(lib, dtype_name), requires_grad=name not in ("floor_divide",))
                    for v in values)
            out = DIVISIONS[name](a, b)
            grads = None
            if out.requires_grad:
                out.backward(lib.ones_like(out))
                grads = [a.grad, b.grad]
            got.append((out, grads))
        (ours, our_grads), (theirs, their_grads) = got
        np.testing.assert_array_equal(np.asarray(ours.detach().tolist()), theirs.detach().numpy())
        np.testing.assert_array_equal(np.signbit(np.asarray(ours.detach().tolist())),
                                      np.signbit(theirs.detach().numpy()))
        assert _names(ours.grad_fn) == _names(theirs.grad_fn)
        if their_grads is not None:
            for g, h in zip(our_grads, their_grads):
                np.testing.assert_array_equal(np.asarray(g.tolist()), h.numpy())


@pytest.mark.parametrize("name", ["%", "fmod"])
@pytest.mark.parametrize("number", [1.5, -2, 0.0])
def test_division_family_by_a_number_matches_torch(name, number):
    got = []
    for lib in (gc, torch):
        a = lib.tensor(SIGNED, requires_grad=True)
        out = DIVISIONS[name](a, number)
        out.backward(lib.ones_like(out))
        got.append((np.asarray(out.detach().tolist()), _names(out.grad_fn), np.asarray(a.grad.tolist())))
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(np.signbit(got[0][0]), np.signbit(got[1][0]))
    assert got[0][1] == got[1][1]
    np.testing.assert_array_equal(got[0][2], got[1][2])


def test_division_family_still_checks_integers_and_mixed_dtypes():
    from gradcli.errors import RuntimeTypeError
    with pytest.raises(RuntimeTypeError, match="ZeroDivisionError"):
        gc.tensor([3, 4]) % gc.tensor([1, 0])
    with pytest.raises(RuntimeTypeError, match="ZeroDivisionError"):
        gc.tensor([3, 4]) % 0
    mixed = gc.tensor([3.5, -4.0], dtype=gc.float64) % gc.tensor([2.0, 3.0])
    assert str(mixed.dtype) == "torch.float64"
    np.testing.assert_array_equal(np.asarray(mixed.tolist()), [1.5, 2.0])


# -- a Python number operand as a kept 0-d array of the tensor's dtype (numpy_fast.number_array) --

NUMBERS = [1.3, 0.1, 3, -2, 1e-50, -1e-50, 16777217, 2 ** 53 + 1, 2 ** 60 + 1, 1e30, 3e38, 1e300, 0.0, -0.0, 7,
           float("inf"), float("-inf"), float("nan"), 1e-3]


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_number_operands_give_torchs_bits(dtype_name):
    """Every fast operator with a number on either side, for numbers whose cast is plain and those
    kept as numbers (zeros and their sign, NaN, infinities, beyond the dtype's range, large ints):
    the same bits as torch, signs of zeros included."""
    import random
    random.seed(0)
    values = [random.uniform(-10, 10) for _ in range(300)] + [0.0, -0.0, 1e-40]
    x, t = gc.tensor(values, dtype=getattr(gc, dtype_name)), torch.tensor(values, dtype=getattr(torch, dtype_name))
    calls = [lambda a, c: a * c, lambda a, c: c * a, lambda a, c: a + c, lambda a, c: c + a, lambda a, c: a - c,
             lambda a, c: a / c]
    with np.errstate(all="ignore"):
        for _ in range(2):  # the second time from the kept arrays
            for c in NUMBERS:
                for call in calls:
                    got = np.asarray(call(x, c).tolist())
                    want = call(t, c).double().numpy()
                    same = (got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)
                    assert same.all(), (c, call(x, c), call(t, c))


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_number_operands_give_torchs_gradient_bits(dtype_name):
    """The backward of ``a * c``, ``c * a`` and ``a / c`` (the number as the gradient's operand, a
    kept 0-d array where its cast is plain): torch's bits, for every number of NUMBERS, with a
    gradient of random values flowing in."""
    import random
    random.seed(1)
    values = [random.uniform(-10, 10) for _ in range(300)]
    seed = [random.uniform(-3, 3) for _ in range(300)]
    calls = [lambda a, c: a * c, lambda a, c: c * a, lambda a, c: a / c]
    with np.errstate(all="ignore"):
        for _ in range(2):  # the second time from the kept arrays
            for c in NUMBERS:
                for call in calls:
                    grads = []
                    for lib in (gc, torch):
                        dtype = getattr(lib, dtype_name)
                        x = lib.tensor(values, dtype=dtype, requires_grad=True)
                        call(x, c).backward(lib.tensor(seed, dtype=dtype))
                        grads.append(np.asarray(x.grad.tolist()))
                    got, want = grads
                    same = (got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)
                    assert same.all(), (c, got[~same][:3], want[~same][:3])


def test_number_array_keeps_plain_casts_only():
    from gradcli.backend.numpy_fast import number_array
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    a = number_array(1.5, f32)
    assert a.__class__ is np.ndarray and a.shape == () and a.dtype == f32 and not a.flags.writeable
    assert number_array(1.5, f32) is a and number_array(1.5, f64).dtype == f64
    for kept_as_is in (0.0, -0.0, 0, float("nan"), 1e39, 2 ** 53 + 1, -(2 ** 60)):
        assert number_array(kept_as_is, f32) is kept_as_is
    assert number_array(1e39, f64).dtype == f64  # within float64's range
    assert number_array(1.5, np.dtype(np.float16)) == 1.5 and number_array(2, np.dtype(np.int64)) == 2
