"""add_, sub_, mul_ and div_ (and ``+=``, ``-=``, ``*=``, ``/=``) with no gradient to record run
into the tensor's own array (ops/inplace.py, ``_into``): an optimizer's ``p -= lr * g`` under
no_grad. The tensor keeps its array, its version goes up by one, and the values are the out-of-place
op's bit for bit and torch's; every call the shortcut does not take (a gradient to record, a view,
another dtype, a larger result, alpha, float16, integers) still behaves as torch."""

from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc
from helpers import same_bits

torch = pytest.importorskip("torch")

P = [[0.5, -1.25, 3.0], [2.0, 0.75, -0.1]]
G = [[0.1, 0.2, -0.3], [1e-3, 7.0, 0.25]]
ROW = [0.3, -2.0, 1.5]

# (label, the in-place call, the out-of-place op it must equal)
CALLS = [
    ("p -= g", lambda p, g, r: p.__isub__(g), lambda p, g, r: p - g),
    ("p += g", lambda p, g, r: p.__iadd__(g), lambda p, g, r: p + g),
    ("p *= g", lambda p, g, r: p.__imul__(g), lambda p, g, r: p * g),
    ("p /= g", lambda p, g, r: p.__itruediv__(g), lambda p, g, r: p / g),
    ("p.sub_(g)", lambda p, g, r: p.sub_(g), lambda p, g, r: p - g),
    ("p.add_(row)", lambda p, g, r: p.add_(r), lambda p, g, r: p + r),
    ("p.mul_(row)", lambda p, g, r: p.mul_(r), lambda p, g, r: p * r),
    ("p.div_(row)", lambda p, g, r: p.div_(r), lambda p, g, r: p / r),
    ("p.mul_(0.9)", lambda p, g, r: p.mul_(0.9), lambda p, g, r: p * 0.9),
    ("p -= 0.1", lambda p, g, r: p.__isub__(0.1), lambda p, g, r: p - 0.1),
    ("p += 3", lambda p, g, r: p.__iadd__(3), lambda p, g, r: p + 3),
    ("p /= 7", lambda p, g, r: p.__itruediv__(7), lambda p, g, r: p / 7),
    ("p.sub_(g, alpha=0.1)", lambda p, g, r: p.sub_(g, alpha=0.1), lambda p, g, r: p.sub(g, alpha=0.1)),
    ("p.add_(row, alpha=3)", lambda p, g, r: p.add_(r, alpha=3), lambda p, g, r: p.add(r, alpha=3)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("label, call, outplace", CALLS, ids=[c[0] for c in CALLS])
def test_under_no_grad_the_op_runs_into_the_tensors_array(label, call, outplace, dtype):
    results = {}
    for m in (gc, torch):
        dt = getattr(m, dtype)
        p = m.tensor(P, dtype=dt, requires_grad=True)
        g, row = m.tensor(G, dtype=dt), m.tensor(ROW, dtype=dt)
        with m.no_grad():
            want = outplace(p, g, row)
            if m is gc:
                array = p._data
            out = call(p, g, row)
        assert out is p and p.grad_fn is None and p.requires_grad and p.is_leaf, label
        assert p._version == 1, label
        if m is gc:
            assert p._data is array  # the tensor's own array, written in place
            same_bits(p._data, want._data)
        results[m] = np.asarray(p.detach().tolist())
    if "alpha" in label:  # torch fuses the multiply-add (one rounding); the op's forward rounds twice
        np.testing.assert_allclose(results[gc], results[torch], rtol=1e-6)
    else:
        np.testing.assert_array_equal(results[gc], results[torch])


def test_a_tensor_that_requires_no_grad_takes_it_with_grad_mode_on():
    for m in (gc, torch):
        buf = m.tensor([1.0, 2.0])
        buf.mul_(0.5).add_(m.tensor([1.0, 1.0]))
        assert buf.tolist() == [1.5, 2.0] and buf._version == 2 and buf.grad_fn is None


def _sgd(m):
    """Ten steps of ``w -= lr * w.grad`` on a linear model: the weights and w's version."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 3)).astype(np.float32), rng.standard_normal((8, 1)).astype(np.float32)
    w = m.tensor(np.full((3, 1), 0.1, np.float32), requires_grad=True)
    b = m.tensor(np.zeros(1, np.float32), requires_grad=True)
    xs, ys = m.tensor(x), m.tensor(y)
    for _ in range(10):
        loss = ((xs @ w + b - ys) ** 2).mean()
        loss.backward()
        with m.no_grad():
            w -= 0.1 * w.grad
            b.sub_(0.1 * b.grad)
            w.grad = None
            b.grad = None
    return np.asarray(w.detach().tolist(), np.float32), np.asarray(b.detach().tolist(), np.float32), w._version


def test_an_sgd_loop_under_no_grad_is_the_general_paths_and_torchs(monkeypatch):
    """The shortcut's weights are the general in-place path's bit for bit (the shortcut turned off),
    and torch's to float32 rounding (the matrix products' sums are ordered differently)."""
    from gradcli.ops import inplace
    fast = _sgd(gc)
    monkeypatch.setattr(inplace, "_into", lambda into, input, other, kwargs: False)
    general = _sgd(gc)
    theirs = _sgd(torch)
    same_bits(fast[0], general[0])
    same_bits(fast[1], general[1])
    np.testing.assert_allclose(fast[0], theirs[0], rtol=1e-6)
    np.testing.assert_allclose(fast[1], theirs[1], rtol=1e-6)
    assert fast[2] == general[2] == theirs[2] == 10


@pytest.mark.parametrize("case", [
    "grad on, leaf", "grad on, other requires grad", "a view", "alpha with a number", "another dtype",
    "a larger result",
    "float16", "integers", "a bool tensor",
])
def test_the_calls_it_does_not_take_behave_as_torch(case):
    """Each of these goes through the op's general in-place path: its result, error and message are
    torch's."""
    outcome = {}
    for m in (gc, torch):
        try:
            if case == "grad on, leaf":
                p = m.tensor([1.0, 2.0], requires_grad=True)
                p -= m.tensor([1.0, 1.0])
            elif case == "grad on, other requires grad":
                p = m.tensor([1.0, 2.0])
                q = m.tensor([0.5, 0.5], requires_grad=True)
                p += q
                outcome[m, "grad_fn"] = p.grad_fn.name()
            elif case == "a view":
                base = m.tensor([[1.0, 2.0], [3.0, 4.0]])
                p = base[0]
                p *= 2
                outcome[m, "base"] = base.tolist()
            elif case == "alpha with a number":
                p = m.tensor([1.0, 2.0])
                p.sub_(0.3, alpha=0.5)
            elif case == "another dtype":
                p = m.tensor([1.0, 2.0])
                p += m.tensor([1.0, 1.0], dtype=m.float64)
            elif case == "a larger result":
                p = m.tensor([1.0, 2.0])
                p += m.tensor([[1.0, 1.0], [2.0, 2.0]])
            elif case == "float16":
                p = m.tensor([1.0, 2.0], dtype=m.float16)
                p *= 1.1
            elif case == "integers":
                p = m.tensor([1, 2])
                p /= 2
            elif case == "a bool tensor":
                p = m.tensor([1.0, 2.0])
                p -= m.tensor([True, False])
            outcome[m] = (p.tolist(), p._version)
        except Exception as err:  # noqa: BLE001 (the message is what is compared)
            outcome[m] = str(err).split("\n")[0]
    assert outcome[gc] == outcome[torch]
    if (gc, "grad_fn") in outcome:
        assert outcome[gc, "grad_fn"] == outcome[torch, "grad_fn"]
    if (gc, "base") in outcome:
        assert outcome[gc, "base"] == outcome[torch, "base"]


def test_the_shortcut_is_what_runs_under_no_grad(monkeypatch):
    from gradcli.ops import inplace
    taken = []
    real = inplace._into
    monkeypatch.setattr(inplace, "_into",
                        lambda into, input, other, kwargs: taken.append(real(into, input, other, kwargs)) or taken[-1])
    p = gc.tensor([1.0, 2.0], requires_grad=True)
    with gc.no_grad():
        p -= gc.tensor([0.5, 0.5])
        p.mul_(2)
        p.sub_(gc.tensor([0.5, 0.5]), alpha=0.1)
        p.add_(1.0, alpha=2)  # a number with alpha: refused (torch scales the number in double)
    assert taken == [True, True, True, False]
    assert p.tolist() == pytest.approx([2.95, 4.95], rel=1e-6)
    with pytest.raises(gc.AutogradError):
        p += 1  # a leaf that requires grad, grad mode on: not offered; torch's error
    assert taken == [True, True, True, False]


def test_a_saved_output_changed_under_no_grad_fails_its_backward_as_torch():
    """exp saves its output: ``y += 1`` under no_grad (the shortcut) still hands exp's node the
    version counter, and the backward fails with torch's message."""
    messages = []
    for m in (gc, torch):
        x = m.tensor([0.5, 1.5], requires_grad=True)
        y = x.exp()
        with m.no_grad():
            y += 1
        assert y._version == 1
        with pytest.raises(RuntimeError) as err:
            y.sum().backward()
        messages.append(str(err.value).split(";")[0])
    assert messages[0] == messages[1]
    assert "modified by an inplace operation" in messages[0]


def test_zero_with_nothing_to_record_as_torch():
    """zero_ takes the same shortcut (an optimizer's ``p.grad.zero_()``): torch's values, versions
    and grad_fn, and a saved output zeroed under no_grad still fails its backward."""
    for m in (gc, torch):
        w = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        (w * w).sum().backward()
        g = w.grad
        before = g._version  # (torch's is 1 here: its input buffer added w's two gradients in place)
        with m.no_grad():
            assert g.zero_() is g and w.zero_() is w
        assert g.tolist() == w.tolist() == [[0.0, 0.0], [0.0, 0.0]]
        assert g._version == before + 1 and w._version == 1 and w.grad_fn is None and w.requires_grad
        buf = m.tensor([5.0, -0.0])
        buf.zero_()  # grad mode on, nothing requires grad
        assert buf.tolist() == [0.0, 0.0] and str(buf.tolist()) == "[0.0, 0.0]" and buf._version == 1
        y = m.tensor([0.5], requires_grad=True).exp()
        with m.no_grad():
            y.zero_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
