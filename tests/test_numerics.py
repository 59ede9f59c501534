"""NaN and infinity: propagate as in PyTorch, print as PyTorch prints them, are JSON strings, and
raise no warnings; --detect-anomaly names the first backward node that returns NaN."""

import contextlib
import io
import json

import pytest

from gradcli.cli import main

torch_ = None


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["eval", *args, "--json"])
    return code, json.loads(out.getvalue()), err.getvalue()


def test_log_of_zero_division_by_zero_and_zero_times_inf():
    program = ("x = tensor([0., 1., -1.], requires_grad=True)\n"
               "y = log(x)\nprint(y)\nprint(1 / x)\nprint(tensor([0.]) * tensor([float_inf]))\n"
               "s = log(x).sum()\ns.backward()\nprint(x.grad)")
    code, doc, err = run(program.replace("float_inf", "1e999"))
    assert code == 0, doc["error"]
    assert doc["printed"] == ["tensor([-inf, 0., nan], grad_fn=<LogBackward0>)",
                              "tensor([inf,  1., -1.], grad_fn=<MulBackward0>)",
                              "tensor([nan])", "tensor([inf,  1., -1.])"]
    assert err == ""  # no numpy RuntimeWarning leaks
    x = doc["variables"][0]
    assert x["grad"] == ["inf", 1.0, -1.0]
    assert doc["variables"][1]["data"] == ["-inf", 0.0, "nan"]


def test_printing_mixed_values_like_torch():
    code, doc, _ = run("print(tensor([1e400 * 0, 1e400, -1e400, 1.5]))\nprint(tensor([1e10, 1e400 * 0]))")
    assert doc["printed"] == ["tensor([   nan,    inf,   -inf, 1.5000])", "tensor([1.0000e+10,        nan])"]


def test_nan_gradients_from_sqrt_and_division():
    code, doc, _ = run("x = tensor([0., 4.], requires_grad=True)\nsqrt(x).sum()")
    assert doc["variables"][0]["grad"] == ["inf", 0.25]
    code, doc, _ = run("x = tensor([0., 2.], requires_grad=True)\n(x / 0).sum()")
    assert doc["variables"][0]["grad"] == ["inf", "inf"]


def test_detect_anomaly_names_the_node():
    code, doc, err = run("x = zeros(2, requires_grad=True)\nlog(x).sum() * 0", "--detect-anomaly")
    assert code == 3
    assert doc["error"]["kind"] == "autograd"
    assert doc["error"]["message"] == "Function 'LogBackward0' returned nan values in its 0th output."
    code, doc, _ = run("x = zeros(2, requires_grad=True)\nlog(x).sum() * 0")
    assert code == 0  # without the flag, NaN just propagates


def test_detect_anomaly_agrees_with_torch():
    torch = pytest.importorskip("torch")
    x = torch.zeros(2, requires_grad=True)
    with torch.autograd.detect_anomaly(), pytest.warns(UserWarning):
        with pytest.raises(RuntimeError) as info:
            (torch.sqrt(x - 1).sum() * 0).backward()
    code, doc, _ = run("x = zeros(2, requires_grad=True)\n(sqrt(x - 1).sum() * 0)", "--detect-anomaly")
    assert doc["error"]["message"] == str(info.value)
