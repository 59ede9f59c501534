"""Engine semantics, each as PyTorch shows it (values checked by hand or against torch)."""

import numpy as np
import pytest

import gradcli as gc
from gradcli.errors import AutogradError, GradTypeError, ShapeError
from helpers import clean_engine_state, error_text, plain  # noqa: F401


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


HINT = (" Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
        "torch.autograd.set_detect_anomaly(True, check_nan=False).")


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
                               "version 1; expected version 0 instead." + HINT)


def test_requires_grad_only_on_floats():
    # torch words the method and the constructors differently
    with pytest.raises(GradTypeError, match="^only Tensors of floating point dtype can require gradients$"):
        gc.tensor([1, 2]).requires_grad_()
    for make in (lambda: gc.tensor([1, 2], requires_grad=True), lambda: gc.arange(3, requires_grad=True),
                 lambda: gc.ones(2, dtype=gc.int64, requires_grad=True), lambda: gc.full((2,), 3, requires_grad=True)):
        with pytest.raises(GradTypeError, match="^Only Tensors of floating point and complex dtype can require "
                                                "gradients$"):
            make()
    t = gc.tensor([1, 2])
    t.requires_grad_(False)  # turning it off is always fine
    assert not t.requires_grad


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
    """1,000,000 recorded ops in one chain: backward is a loop, not a recursion (no RecursionError)."""
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    one, zero = gc.ones(2), gc.zeros(2)
    y = x
    for _ in range(500_000):
        y = y * one
        y = y + zero
    assert y.grad_fn.name() == "AddBackward0" and y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    (y * y).sum().backward()
    close(x.grad, [2, 4])
    assert y.grad_fn.next_functions[0][0]._saved is None  # buffers freed on the way
    del y


# -- in-place changes and the values backward needs ------------------------------------------------

MODIFIED = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[torch.FloatTensor [2]], which is output 0 of {}, is at version 1; expected version 0 instead." + HINT)


@pytest.mark.parametrize("op, change, producer", [
    ("exp", lambda b: b.add_(1), "Exp"),
    ("sigmoid", lambda b: b.zero_(), "Sigmoid"),
    ("tanh", lambda b: b.detach().mul_(2), "Tanh"),  # a detached alias shares the version counter
    ("sqrt", lambda b: b.sub_(gc.ones(2)), "Sqrt"),
])
def test_a_saved_output_changed_in_place_fails_backward(op, change, producer):
    """exp/sigmoid/tanh/sqrt save their output; changing it must fail backward (never wrong gradients)."""
    a = gc.tensor([1.0, 2.0], requires_grad=True)
    b = getattr(gc, op)(a)
    change(b)
    with pytest.raises(AutogradError) as info:
        b.sum().backward()
    assert str(info.value) == MODIFIED.format(producer)


def test_a_saved_output_changed_under_no_grad_fails_too_but_data_does_not():
    a = gc.tensor([1.0, 2.0], requires_grad=True)
    b = a.exp()
    with gc.no_grad():
        b.mul_(3)
    with pytest.raises(AutogradError, match="output 0 of Exp, is at version 1"):
        b.sum().backward()
    c = a.exp()
    c.data.mul_(3)  # .data has its own version counter: torch does not notice, nor do we
    c.sum().backward()
    close(a.grad, 3 * np.exp([1.0, 2.0]))


def test_in_place_by_a_tensor_requiring_grad_uses_the_original_values():
    x = gc.tensor([1.0, 1.0], requires_grad=True)
    b = gc.tensor([2.0, 3.0], requires_grad=True)
    a = x * 1
    a.mul_(b)
    a.div_(b * 2)
    a.sum().backward()
    close(x.grad, [0.5, 0.5])
    close(b.grad, [0.0, 0.0])  # (x*b)/(2b) does not depend on b
    assert a.grad_fn.name() == "DivBackward0"
    assert [n.name() for n, _ in a.grad_fn.next_functions] == ["MulBackward0", "MulBackward0"]


def test_zero_on_a_non_leaf_records_zero_backward():
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.zero_()
    assert y.grad_fn.name() == "ZeroBackward0"
    assert plain(y.grad_fn.next_functions) == "((<MulBackward0>, 0),)"
    (y + x).sum().backward()
    close(x.grad, [1, 1])


def test_leaf_grad_under_create_graph_is_a_copy():
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    assert plain(x.grad) == "tensor([2., 4.], grad_fn=<CopyBackwards>)"
    assert plain(x.grad.grad_fn.next_functions) == "((None, 0), (<AddBackward0>, 0))"
    g = x.grad
    (x * x).sum().backward()  # grad mode off: added in place into the same tensor, grad_fn kept
    assert x.grad is g and plain(g) == "tensor([4., 8.], grad_fn=<CopyBackwards>)"
    y = gc.ones(2, requires_grad=True)
    y.sum().backward(create_graph=True)  # no graph to copy: a plain tensor that can be zeroed
    y.grad.zero_()
    close(y.grad, [0, 0])


# -- hooks -------------------------------------------------------------------------------------------

def test_hook_errors_use_torch_words():
    x = gc.ones(2, requires_grad=True)
    h = x.register_hook(lambda g: g.sum())
    with pytest.raises(ShapeError, match="^hook '<lambda>' has changed the size of value$"):
        (x * 2).sum().backward()
    h.remove()
    y = x * 2
    y.register_hook(lambda g: g.double())
    with pytest.raises(GradTypeError, match=r"^hook '<lambda>' has changed the type of value \(was "
                                            r"torch.FloatTensor got torch.DoubleTensor\)$"):
        y.sum().backward()

    def three(g):
        return 3
    x.register_hook(three)
    with pytest.raises(GradTypeError, match="^expected Variable, but hook returned 'int'$"):
        (x * 2).sum().backward()


def test_retain_grad_sees_the_hooked_gradient_whatever_the_order():
    for first_retain in (True, False):
        x = gc.ones(2, requires_grad=True)
        y = x * 2
        if first_retain:
            y.retain_grad()
        y.register_hook(lambda g: g * 10)
        if not first_retain:
            y.retain_grad()
        y.sum().backward()
        close(y.grad, [10, 10])
        close(x.grad, [20, 20])


def test_hook_returning_none_keeps_the_gradient_and_sees_accumulated_input():
    x = gc.ones(2, requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    (y + y * 3).sum().backward()  # y's hook sees the sum of both uses, once
    assert seen == [[4.0, 4.0]]
    close(x.grad, [8, 8])


# -- autograd.grad and backward(inputs=) ---------------------------------------------------------

def test_autograd_grad_more_forms():
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    z = y * 3
    gy, gx = gc.autograd.grad(z.sum(), [y, x], retain_graph=True)  # a non-leaf input too
    close(gy, [3, 3])
    close(gx, [6, 12])
    (g,) = gc.autograd.grad([z.sum(), y.sum()], [x], retain_graph=True)  # several outputs add up
    close(g, [8, 16])
    (g,) = gc.autograd.grad(y, x, grad_outputs=gc.ones(2))  # single tensors, not lists
    close(g, [2, 4])
    with pytest.raises(AutogradError, match="^Trying to backward through the graph a second time"):
        y.sum().backward()  # grad without retain_graph freed y's buffers
    with pytest.raises(AutogradError, match="^One of the differentiated Tensors does not require grad$"):
        gc.autograd.grad((x * 2).sum(), [x, gc.ones(2)])
    with pytest.raises(ShapeError, match=r"^Mismatch in shape: grad_output\[0\] has a shape of torch.Size\(\[3\]\) "
                                         r"and output\[0\] has a shape of torch.Size\(\[2\]\).$"):
        gc.autograd.grad([x * 2], [x], grad_outputs=[gc.ones(3)])


def test_backward_inputs_accumulates_only_there():
    x = gc.tensor(2.0, requires_grad=True)
    w = gc.tensor(3.0, requires_grad=True)
    (x * w).backward(inputs=[x])
    close(x.grad, 3)
    assert w.grad is None


# -- the same scenarios in torch ---------------------------------------------------------------

SCENARIOS = {
    "accumulate": "x = L.tensor([1., 2.], requires_grad=True)\nfor _ in range(3):\n    (x * x).sum().backward()\n"
                  "r = x.grad",
    "retain_graph": "x = L.tensor([1., 2.], requires_grad=True); y = (x.exp() * x).sum(); "
                    "y.backward(retain_graph=True); y.backward(); r = x.grad",
    "ops_without_saves_twice": "x = L.ones(2, requires_grad=True); s = (x + 2).sum(); s.backward(); s.backward(); "
                               "r = x.grad",
    "non_leaf_grad": "x = L.ones(2, requires_grad=True); y = x * 2; z = y * 3; z.retain_grad(); z.sum().backward(); "
                     "r = (y.grad, z.grad, y.is_leaf, z.retains_grad, y.retains_grad)",
    "retain_twice": "x = L.ones(2, requires_grad=True); y = x * 2; y.retain_grad(); z = y * 3; "
                    "z.sum().backward(retain_graph=True); g = y.grad; z.sum().backward(); r = (g is y.grad, y.grad)",
    "hooks_order": "x = L.ones(2, requires_grad=True); y = x * 2; a = y.register_hook(lambda g: g * 2); "
                   "b = y.register_hook(lambda g: g + 1); y.sum().backward(); r = x.grad",
    "leaf_hooks_with_grad": "x = L.ones(2, requires_grad=True); x.register_hook(lambda g: g * 10); "
                            "r = L.autograd.grad((x * 2).sum(), [x])",
    "hook_removed": "x = L.ones(2, requires_grad=True); h = x.register_hook(lambda g: g * 2); h.remove(); h.remove(); "
                    "(x * 2).sum().backward(); r = x.grad",
    "hook_in_place": "x = L.ones(2, requires_grad=True); y = x * 2; y.register_hook(lambda g: g * 2); y.add_(1); "
                     "y.sum().backward(); r = x.grad",
    "no_grad": "x = L.ones(2, requires_grad=True)\nwith L.no_grad():\n    y = x * 2\n    with L.enable_grad():\n"
               "        z = x * 2\nr = (y.requires_grad, y.grad_fn, z.grad_fn, L.is_grad_enabled())",
    "set_grad_enabled": "x = L.ones(2, requires_grad=True)\nwith L.set_grad_enabled(False):\n    y = x * 2\n"
                        "L.set_grad_enabled(False); z = x * 2; L.set_grad_enabled(True); w = x * 2\n"
                        "r = (y.requires_grad, z.requires_grad, w.requires_grad)",
    "no_grad_in_place_on_leaf": "x = L.ones(2, requires_grad=True); y = x * x\nwith L.no_grad():\n    x.mul_(2)\n"
                                "r = (x, x.is_leaf, x.grad_fn)",
    "detach": "x = L.tensor([1., 2.], requires_grad=True); d = x.detach(); d.add_(1); "
              "r = (x, d, d.requires_grad, d.is_leaf)",
    "detach_": "x = L.ones(2, requires_grad=True); y = x * 2; y.detach_(); r = (y, y.is_leaf, y.grad_fn)",
    "data": "x = L.ones(2, requires_grad=True); y = x * x; x.data.mul_(5); y.sum().backward(); "
            "r = (x, x.grad, x.data.requires_grad)",
    "data_assign": "x = L.ones(2, requires_grad=True); (x * 2).sum().backward(); x.data = L.zeros(3); r = (x, x.grad)",
    "zero_grad": "x = L.ones(2, requires_grad=True); (x * 3).sum().backward(); x.grad.zero_(); "
                 "(x * 3).sum().backward(); r = x.grad",
    "in_place_chain": "x = L.ones(2, requires_grad=True); y = x * 1; y.add_(1).mul_(3).sub_(1).div_(2); "
                      "y.sum().backward(); r = (y, x.grad, y.grad_fn.next_functions)",
    "iadd": "x = L.ones(2, requires_grad=True); y = x * 2; y += 1; y *= 3; y.sum().backward(); r = (y, x.grad)",
    "self_mul_in_place_error": "x = L.ones(2, requires_grad=True); y = x * 2; y *= y; y.sum().backward()",
    "in_place_leaf_no_grad": "x = L.ones(2); x.add_(L.ones(2, requires_grad=True)); r = (x, x.is_leaf)",
    "second": "x = L.tensor([0.5, 1.5], requires_grad=True); (g,) = L.autograd.grad((x ** 4).sum(), [x], "
              "create_graph=True); (h,) = L.autograd.grad(g.sum(), [x], create_graph=True); "
              "(k,) = L.autograd.grad(h.sum(), [x]); r = (g, h, k)",
    "second_via_backward": "x = L.tensor([0.5, 1.5], requires_grad=True); L.sin(x).sum().backward(create_graph=True); "
                           "g = x.grad; x.grad = None; g.sum().backward(); r = (g, x.grad)",
    "allow_unused": "x = L.ones(2, requires_grad=True); w = L.ones(1, requires_grad=True); "
                    "r = L.autograd.grad((x * 2).sum(), [x, w], allow_unused=True)",
    "materialize": "x = L.ones(2, requires_grad=True); w = L.ones(1, requires_grad=True); "
                   "r = L.autograd.grad((x * 2).sum(), [x, w], allow_unused=True, materialize_grads=True)",
    "implicit_scalar_1elem": "x = L.tensor([[2.]], requires_grad=True); (x * x).backward(); r = x.grad",
    "gradient_other_dtype": "x = L.tensor(2., requires_grad=True); (x * x).backward(L.tensor(3., dtype=L.float64)); "
                            "r = x.grad",
    "broadcast_grad_shape": "a = L.ones(3, 1, requires_grad=True); b = L.arange(4.).requires_grad_(); "
                            "(a * b).sum().backward(); r = (a.grad, b.grad)",
    "shared_leaf_node": "x = L.ones(2, requires_grad=True); "
                        "r = (x * 2).grad_fn.next_functions[0][0] is (x * 3).grad_fn.next_functions[0][0]",
    "grad_fn_names": "x = L.ones(2, 2, requires_grad=True); y = (x @ x.t()).exp().mean(); "
                     "r = (y.grad_fn, y.grad_fn.next_functions, y.grad_fn.next_functions[0][0].next_functions)",
    "max_ties": "x = L.tensor([1., 3., 3.], requires_grad=True); (x.max() + x.amax(0) + x.max(0)[0]).backward(); "
                "r = x.grad",
    "kinks": "x = L.tensor([-1., 0., 1.], requires_grad=True); (L.abs(x) + L.relu(x) + L.clamp(x, 0., 1.) + "
             "L.maximum(x, L.zeros(3))).sum().backward(); r = x.grad",
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_matches_torch(name):
    torch = pytest.importorskip("torch")
    results = []
    for L in (gc, torch):
        ns = {"L": L}
        try:
            exec(SCENARIOS[name], ns)  # noqa: S102 (fixed test programs)
            results.append(plain(ns["r"]))
        except Exception as exc:  # noqa: BLE001 (the same error is the same behaviour)
            results.append("error: " + error_text(exc))
    assert results[0] == results[1]
    assert not results[0].startswith("error") or name.endswith("_error")


def test_grad_mode_managers_are_decorators_too():
    @gc.no_grad()
    def doubled(t):
        return t * 2

    @gc.enable_grad()
    def tripled(t):
        return t * 3

    x = gc.ones(2, requires_grad=True)
    assert not doubled(x).requires_grad and gc.is_grad_enabled()
    with gc.no_grad():
        assert tripled(x).requires_grad and not gc.is_grad_enabled()


def test_backward_gradient_must_be_a_tensor():
    x = gc.ones(2, requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(GradTypeError, match="gradient must be a Tensor or None, not int"):
        y.backward(5)
    y.backward(gc.tensor(5.0))
    close(x.grad, [10, 10])
