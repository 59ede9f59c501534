"""Inference tensors (made under ``inference_mode``) against torch: which tensors are, what may
be done with them outside inference mode (ops that save nothing, clone) and what fails with
torch's exception and words (saving one for backward, in-place changes, requires_grad_,
``_version``), nested ``inference_mode(False)``, and the CLI's exit code and JSON error."""

import json

import numpy as np
import pytest

import gradcli as gc

torch = pytest.importorskip("torch")


def flags(lib):
    x = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        a = lib.ones(2)
        b = x * 2
        c = lib.ones(2, requires_grad=True)
        inside = [a.is_inference(), b.is_inference(), b.requires_grad, c.requires_grad, c.is_inference(),
                  lib.is_inference(a), x.is_inference(), a.view(2).is_inference(), (a * 2).is_inference()]
        with lib.inference_mode(False):
            e, f = lib.ones(2), a * 2
            nested = [e.is_inference(), f.is_inference(), lib.is_grad_enabled(), lib.is_inference_mode_enabled()]
        a.mul_(2)  # in place inside inference mode: allowed
    outside = [a.tolist(), a.requires_grad, a.grad_fn is None, a.clone().is_inference(), a.detach().is_inference(),
               a[0].is_inference(), a.view(2).is_inference(), a.sum().is_inference(), c.is_leaf,
               (c * 2).grad_fn.name(), (a.clone() * x).requires_grad, (x + a).grad_fn.name(),
               lib.cat([a, x]).grad_fn.name(), lib.where(a > 0, x, a).grad_fn.name(),
               (lib.sigmoid(a) * x).grad_fn.name(), a.unbind()[1].is_inference()]
    with lib.no_grad():
        made = lib.ones(1).is_inference()
    return inside, nested, outside, made


def test_which_tensors_are_inference_tensors():
    assert flags(gc) == flags(torch)


SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode "
         "in computation tracked by autograd. To work around this, you can make a clone to get a normal "
         "tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")
INPLACE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get "
           "a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more "
           "details.")


@pytest.mark.parametrize("code,message", [
    ("a * x", SAVED), ("x * a", SAVED), ("(x * a).sum()", SAVED), ("x.exp() * a", SAVED),
    ("x.sigmoid() * a", SAVED), ("lib.mm(a.view(1, 2), x.view(2, 1))", SAVED), ("x.pow(a)", SAVED),
    ("x.clamp(a, a + 1)", SAVED), ("nested", SAVED),
    ("a.mul_(2)", INPLACE), ("a.add_(1)", INPLACE), ("a.view(2).sub_(1)", INPLACE),
    ("a.copy_(x)", INPLACE), ("a.fill_(1.0)", INPLACE), ("setitem", INPLACE), ("no_grad inplace", INPLACE),
    ("a.requires_grad_()", "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."),
    ("a._version", "Inference tensors do not track version counter."),
])
def test_errors_as_torch(code, message):
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        with lib.inference_mode():
            a = lib.full((2,), 2.0)
        try:
            if code == "nested":
                with lib.inference_mode(), lib.inference_mode(False):
                    a * x
            elif code == "setitem":
                a[0] = 5.0
            elif code == "no_grad inplace":
                with lib.no_grad():
                    a.mul_(2)
            else:
                eval(code, {"a": a, "x": x, "lib": lib})  # noqa: S307  (test code, fixed strings)
        except RuntimeError as exc:
            return exc, a.tolist()
        return None, a.tolist()
    (ge, gv), (te, tv) = run(gc), run(torch)
    assert type(te) is RuntimeError and str(te) == message
    assert isinstance(ge, RuntimeError) and str(ge) == message
    assert gv == tv  # the failed op changed nothing


def test_detach_outside_is_an_inference_tensor_that_may_change():
    """torch's quirk: ``detach()`` of one outside inference mode is an inference tensor with a
    version counter of its own, changed in place without complaint (and the data is shared)."""
    def run(lib):
        with lib.inference_mode():
            a = lib.full((2,), 2.0)
        d = a.detach()
        d.mul_(3)
        x = lib.ones(2, requires_grad=True)
        try:
            x * d
        except RuntimeError as exc:
            saved = str(exc)
        return d.is_inference(), d._version, a.tolist(), saved
    assert run(gc) == run(torch)


def test_clone_is_a_normal_tensor_with_gradients():
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with lib.inference_mode():
            w = lib.tensor([0.5, -1.0, 2.0]) * 3
        y = (x * w.clone()).exp().sum() + (x + w).sum()  # add saves nothing: an inference operand is fine
        y.backward()
        v = w.clone()
        v.mul_(2)
        return x.grad, v, w.is_inference(), v.is_inference()
    (gg, gv, gi, gvi), (tg, tv, ti, tvi) = run(gc), run(torch)
    np.testing.assert_allclose(gg.numpy(), tg.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gv.numpy(), tv.numpy())
    assert (gi, gvi) == (ti, tvi) == (True, False)


def test_decorated_function_makes_inference_tensors():
    def run(lib):
        @lib.inference_mode()
        def f(t):
            return t * 2

        out = f(lib.ones(2, requires_grad=True))
        return out.is_inference(), out.requires_grad
    assert run(gc) == run(torch) == (True, False)


def test_cli_exit_code_and_json(capsys):
    from gradcli.cli.fast import main
    program = ("import torch\nx = torch.ones(2, requires_grad=True)\nwith torch.inference_mode():\n"
               "    a = torch.ones(2)\nprint(a.is_inference(), torch.is_inference(a.clone()))\ny = x * a\n")
    code = main(["eval", program, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3
    assert doc["printed"] == ["True False"]
    assert doc["error"] == {"kind": "autograd", "message": SAVED, "line": 6, "column": 5}
    code = main(["eval", "import torch\nwith torch.inference_mode():\n    a = torch.ones(2)\na.add_(1)\n"])
    captured = capsys.readouterr()
    assert code == 3 and INPLACE in captured.err
