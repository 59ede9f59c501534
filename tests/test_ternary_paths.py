"""The three-tensor ops' shared path (ops/pointwise.py's ``_ternary``, autograd/function.py's
``apply3``/``_record3``, autograd/node.py's ``_apply_3``): torch's values, gradients, grad_fn names,
next_functions and messages for lerp, addcmul, addcdiv and addmm, whichever inputs need a gradient,
with broadcast operands; saved inputs checked for in-place changes; the limits still refuse a
result larger than every operand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gradcli as gc
from gradcli.errors import AutogradError, GradTypeError, LimitError
from gradcli.limits import LIMITS

torch = pytest.importorskip("torch")

X = [[0.9, 1.2], [0.7, 1.4]]
Y = [[1.1, 0.6], [1.3, 0.8]]
ROW = [0.75, 1.25]
COL = [[0.5], [1.5]]

TERNARY = {
    "lerp": lambda a, b, c: a.lerp(b, c),
    "addcmul": lambda a, b, c: a.addcmul(b, c),
    "addcmul value": lambda a, b, c: a.addcmul(b, c, value=0.5),
    "addcdiv": lambda a, b, c: a.addcdiv(b, c, value=-2),
    "addmm": lambda a, b, c: _lib(a).addmm(c, a, b, beta=0.5, alpha=2),  # (bias last: it broadcasts)
    "where": lambda a, b, c: _lib(a).where(b > 1.0, b, c) * a,
}


def _lib(t):
    return torch if isinstance(t, torch.Tensor) else gc


def _names(node):
    """grad_fn names down the graph: (name, [children...]) (None where no gradient flows)."""
    if node is None:
        return None
    return (node.name(), [_names(n) for n, _ in node.next_functions])


def _run(lib, fn, values, wanted, dtype_name):
    dtype = getattr(lib, dtype_name)
    leaves = [lib.tensor(v, dtype=dtype, requires_grad=w) for v, w in zip(values, wanted)]
    out = fn(*leaves)
    if out.requires_grad:
        out.backward(lib.ones_like(out))
    return out, leaves


VALUES = {"x,y,row": (X, Y, ROW), "x,y,x": (X, Y, X), "row,x,col": (ROW, X, COL), "col,y,row": (COL, Y, ROW),
          "x,y,col": (X, Y, COL)}
CASES = [(name, values) for name in TERNARY for values in VALUES
         if name != "addmm" or values.startswith("x,y")]  # addmm: two matrices, then the bias


@pytest.mark.parametrize("name, values", CASES, ids=[f"{n}-{v}" for n, v in CASES])
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_every_subset_of_inputs_needing_a_gradient_matches_torch(name, values, dtype_name):
    for wanted in itertools.product((False, True), repeat=3):
        ours, our_leaves = _run(gc, TERNARY[name], VALUES[values], wanted, dtype_name)
        theirs, their_leaves = _run(torch, TERNARY[name], VALUES[values], wanted, dtype_name)
        np.testing.assert_allclose(np.asarray(ours.detach().tolist()), theirs.detach().numpy(),
                                   rtol=1e-6 if dtype_name == "float32" else 1e-13)
        assert str(ours.dtype) == str(theirs.dtype)
        assert ours.requires_grad == theirs.requires_grad
        assert _names(ours.grad_fn) == _names(theirs.grad_fn)
        for a, b in zip(our_leaves, their_leaves):
            if b.grad is None:
                assert a.grad is None
            else:
                assert list(a.grad.shape) == list(b.grad.shape)
                np.testing.assert_allclose(np.asarray(a.grad.tolist()), b.grad.numpy(),
                                           rtol=1e-6 if dtype_name == "float32" else 1e-13)


@pytest.mark.parametrize("weight", [
    [0.25, -0.25], [0.75, 1.25], [-0.75, 2.0], [0.25, 0.75], [float("nan"), 0.9], [0.9, float("nan")],
    [0.1, float("nan")], [float("nan"), 0.1], [0.5, -0.5], list(np.linspace(-1, 2, 24)),
], ids=["small", "large", "negative large", "mixed", "nan first", "nan last", "small nan", "nan small",
        "halves", "24 weights"])
def test_lerp_takes_each_weights_own_end_as_torch(weight):
    """torch's kernel: ``a + w * (b - a)`` for |w| < 0.5, ``b - (b - a) * (1 - w)`` otherwise, per
    element; a few weights all on one side take that side's formula alone. (torch's compiled kernel
    fuses the multiply and add (FMA), which NumPy cannot: the last bit may differ.)"""
    n = len(weight)
    a = np.linspace(0.3, 2.9, 2 * n).reshape(2, n).tolist()
    b = np.linspace(-1.7, 3.1, 2 * n).reshape(2, n).tolist()
    for dtype_name in ("float32", "float64"):
        got = [lib.lerp(lib.tensor(a, dtype=getattr(lib, dtype_name)), lib.tensor(b, dtype=getattr(lib, dtype_name)),
                        lib.tensor(weight, dtype=getattr(lib, dtype_name))) for lib in (gc, torch)]
        ours, theirs = np.asarray(got[0].tolist()), got[1].numpy()
        eps = np.finfo(getattr(np, dtype_name)).eps
        np.testing.assert_allclose(ours, theirs, rtol=eps, atol=2 * eps * np.nanmax(np.abs(b)))


def test_lerp_with_an_empty_weight_is_empty():
    out = gc.lerp(gc.ones(2, 0, requires_grad=True), gc.zeros(2, 0), gc.zeros(0))
    assert out.shape == (2, 0) and out.grad_fn.name() == "LerpBackward1"


@pytest.mark.parametrize("slot", [0, 1, 2])
def test_a_saved_input_changed_in_place_fails_backward_as_torchs(slot):
    """addcmul saves all three for the gradients of the others; lerp (tensor weight) all three."""
    for fn, node in ((lambda a, b, c: a.addcmul(b, c), "AddcmulBackward0"),
                     (lambda a, b, c: a.lerp(b, c), "LerpBackward1")):
        leaves = [gc.tensor(v, requires_grad=True) for v in (X, Y, ROW)]
        inputs = [t * 1 for t in leaves]
        out = fn(*inputs)
        inputs[slot].mul_(2)
        if node == "AddcmulBackward0" and slot == 0:  # self's gradient is grad: nothing of it saved
            out.sum().backward()
            continue
        with pytest.raises(AutogradError, match=rf"modified by an inplace operation: \[torch.FloatTensor "
                                                rf"\[{'2' if slot == 2 else '2, 2'}\]\], which is output 0 of "
                                                rf"Mul, is at version 1; expected version 0 instead"):
            out.sum().backward()


@pytest.mark.parametrize("name", ["lerp", "addcmul value", "addcdiv", "addmm"])
def test_second_derivatives_match_torch(name):
    got = {}
    for lib in (gc, torch):
        leaves = [lib.tensor(v, requires_grad=True, dtype=lib.float64) for v in (X, Y, ROW)]
        out = TERNARY[name](*leaves)
        grads = lib.autograd.grad([(out * out).sum()], leaves, create_graph=True)
        second = lib.autograd.grad([sum(g.sum() for g in grads)], leaves, allow_unused=True)
        got[lib.__name__] = ([np.asarray(g.detach().tolist()) for g in grads],
                             [None if g is None else np.asarray(g.tolist()) for g in second],
                             [_names(g.grad_fn) for g in grads])
    for ours, theirs in zip(got["gradcli"][0] + got["gradcli"][1], got["torch"][0] + got["torch"][1]):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert got["gradcli"][2] == got["torch"][2]


def test_a_result_larger_than_every_operand_is_checked_against_the_limits(monkeypatch):
    col, row = gc.ones(3, 1, requires_grad=True), gc.ones(1, 3)
    one = gc.ones(1)
    assert gc.addcmul(one, col, row).shape == (3, 3)
    monkeypatch.setattr(LIMITS, "max_elements", 8)
    for call in (lambda: gc.addcmul(one, col, row), lambda: gc.lerp(col, row, 0.5), lambda: gc.lerp(col, row, one)):
        with pytest.raises(LimitError, match="has 9 elements, over the limit of 8"):
            call()
    # a result no larger than an operand that exists needs no check
    assert gc.addcmul(gc.ones(2, 2), gc.ones(2), gc.ones(2, 1)).shape == (2, 2)


@pytest.mark.parametrize("call, message", [
    (lambda x: gc.addcdiv(x, x, None), "addcdiv(): argument 'tensor2' must be Tensor, not NoneType"),
    (lambda x: gc.addcmul(x, 2.0, x), "addcmul(): argument 'tensor1' must be Tensor, not float"),
    (lambda x: gc.lerp(x, [1.0], 0.5), "lerp(): argument 'end' must be Tensor, not list"),
    (lambda x: gc.lerp(1.0, x, x), "lerp(): argument 'input' must be Tensor, not float"),
])
def test_a_non_tensor_argument_is_named(call, message):
    with pytest.raises(GradTypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(gc.ones(2, 2))
