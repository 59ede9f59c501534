"""Engine semantics, each as PyTorch shows it (values checked by hand or against torch)."""

import numpy as np
import pytest

import gradcli as gc
from gradcli.errors import AutogradError, GradTypeError, ShapeError


def close(t, expected):
    np.testing.assert_allclose(np.asarray(t._data, dtype=np.float64), expected, rtol=1e-6, atol=1e-7)


def test_leaf_grads_accumulate_across_backward_calls():
    w = gc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    held = None
    for k in range(1, 4):
        (w * w).sum().backward()
        close(w.grad, [2.0 * k, 4.0 * k, 6.0 * k])
        held = held if held is not None else w.grad
    assert held is w.grad  # accumulated in place, as torch: the .grad a user holds sees the sum
    w.grad.zero_()
    close(w.grad, [0, 0, 0])


def test_non_leaf_grad_is_none_unless_retained():
    x = gc.ones(2, requires_grad=True)
    y = x * 2
    z = y * 3
    z.retain_grad()
    z.sum().backward()
    assert y.grad is None and not y.is_leaf and y.grad_fn is not None
    close(z.grad, [1, 1])
    close(x.grad, [6, 6])


def test_retain_graph_and_freed_buffers():
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, [4, 8])
    with pytest.raises(AutogradError, match="^Trying to backward through the graph a second time"):
        y.backward()
    # ops that save nothing can be run twice, as in torch
    s = (x + 2).sum()
    s.backward()
    s.backward()


@pytest.mark.parametrize("make, message", [
    (lambda: gc.ones(2).sum(), "element 0 of tensors does not require grad and does not have a grad_fn"),
    (lambda: gc.ones(2, requires_grad=True) * 2, "grad can be implicitly created only for scalar outputs"),
])
def test_backward_errors(make, message):
    with pytest.raises(AutogradError) as info:
        make().backward()
    assert str(info.value) == message and info.value.exit_code == 3


def test_in_place_errors():
    w = gc.ones(2, requires_grad=True)
    with pytest.raises(AutogradError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        w.add_(1)
    with gc.no_grad():
        w.add_(1)  # allowed under no_grad, as in torch
    close(w, [2, 2])
    w.data.sub_(0.5)  # .data is a view that autograd does not track
    close(w, [1.5, 1.5])
    a = gc.ones(2, requires_grad=True)
    b = a.exp()
    c = b * b
    b.mul_(2)
    with pytest.raises(AutogradError) as info:
        c.sum().backward()
    assert str(info.value) == ("one of the variables needed for gradient computation has been modified by an "
                               "inplace operation: [torch.FloatTensor [2]], which is output 0 of Mul, is at "
                               "version 1; expected version 0 instead.")


def test_requires_grad_only_on_floats():
    with pytest.raises(GradTypeError, match="only Tensors of floating point dtype can require gradients"):
        gc.tensor([1, 2]).requires_grad_()
    with pytest.raises(GradTypeError):
        gc.tensor([1, 2], requires_grad=True)


def test_shape_errors():
    with pytest.raises(ShapeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(4\) at "
                                         r"non-singleton dimension 1"):
        gc.ones(2, 3) + gc.ones(4)
    with pytest.raises(ShapeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x2\)"):
        gc.ones(2, 3) @ gc.ones(4, 2)
    assert ShapeError("x").exit_code == 2


def test_hooks_replace_gradients_and_can_be_removed():
    v = gc.tensor([0.0, 0.0, 0.0], requires_grad=True)
    seen = []
    h = v.register_hook(lambda g: g * 2)
    h2 = v.register_hook(lambda g: seen.append(g.clone()))
    v.backward(gc.tensor([1.0, 2.0, 3.0]))
    close(v.grad, [2, 4, 6])
    close(seen[0], [2, 4, 6])  # hooks run in registration order, each sees the previous one's result
    h.remove()
    h2.remove()
    v.backward(gc.tensor([1.0, 1.0, 1.0]))
    close(v.grad, [3, 5, 7])
    assert len(seen) == 1


def test_hook_on_a_non_leaf():
    x = gc.ones(2, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g + 1)
    y.sum().backward()
    close(x.grad, [6, 6])  # (1 + 1) * 3


def test_grad_mode_context_managers():
    x = gc.ones(2, requires_grad=True)
    with gc.no_grad():
        y = x * 2
        with gc.enable_grad():
            z = x * 2
        with gc.set_grad_enabled(True):
            u = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and u.requires_grad
    with gc.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert gc.is_grad_enabled()


def test_detach_shares_storage_and_stops_gradients():
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    d.add_(1)
    close(x, [2, 3])  # same storage
    y = x * 2
    y.detach_()
    assert y.grad_fn is None and not y.requires_grad
    (x * x.detach()).sum().backward()
    close(x.grad, [2, 3])


def test_in_place_arithmetic_records_like_torch():
    x = gc.ones(2, requires_grad=True)
    y = x * 1
    y.add_(1).mul_(3).sub_(1).div_(2)
    assert y.grad_fn.name() == "DivBackward0"
    y.sum().backward()
    close(x.grad, [1.5, 1.5])
    close(y, [2.5, 2.5])


def test_create_graph_second_and_third_derivatives():
    x = gc.tensor([0.5, 1.5], requires_grad=True, dtype=gc.float64)
    y = (x ** 4).sum()
    (g1,) = gc.autograd.grad(y, [x], create_graph=True)
    close(g1, 4 * np.array([0.5, 1.5]) ** 3)
    (g2,) = gc.autograd.grad(g1.sum(), [x], create_graph=True)
    close(g2, 12 * np.array([0.5, 1.5]) ** 2)
    (g3,) = gc.autograd.grad(g2.sum(), [x])
    close(g3, 24 * np.array([0.5, 1.5]))
    z = gc.sin(x).sum()
    z.backward(create_graph=True)
    gx = x.grad
    assert gx.requires_grad
    x.grad = None
    gx.sum().backward()
    close(x.grad, -np.sin([0.5, 1.5]))


def test_autograd_grad_options():
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    w = gc.tensor([3.0], requires_grad=True)
    y = x * x
    (g,) = gc.autograd.grad(y, [x], grad_outputs=[gc.tensor([1.0, 10.0])], retain_graph=True)
    close(g, [2, 40])
    assert x.grad is None
    with pytest.raises(AutogradError, match="The differentiated Tensor at index 1 appears to not have been used"):
        gc.autograd.grad(y.sum(), [x, w], retain_graph=True)
    gx, gw = gc.autograd.grad(y.sum(), [x, w], allow_unused=True, retain_graph=True)
    assert gw is None
    gx, gw = gc.autograd.grad(y.sum(), [x, w], allow_unused=True, materialize_grads=True)
    close(gw, [0])


def test_a_million_op_chain_back_propagates():
    x = gc.ones(2, requires_grad=True)
    y = x
    for _ in range(500_000):
        y = y * 1.0
        y = y + 0.0
    y.sum().backward()
    close(x.grad, [1, 1])
