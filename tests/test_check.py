"""`gradcli check`: analytic gradients against central finite differences, for CI."""

import json

import numpy as np
import pytest

from gradcli.cli import main
from gradcli.node import NODE_CLASSES


def run(capsys, *args):
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_correct_gradients_pass(capsys):
    code, out, err = run(capsys, "sum(sin(x) * x)", "-g", "x=rand(3)")
    assert code == 0, err
    assert "x" in out and "pass" in out and "FAIL" not in out


def test_every_requiring_grad_leaf_is_checked_in_json(capsys):
    program = ("w = tensor([1., 2., 3.], requires_grad=True)\n"
               "b = tensor(0.5, requires_grad=True)\n"
               "(w * x).sum() + b ** 2 + mean(exp(w) @ m)")
    code, out, _ = run(capsys, program, "-l", "x=randn(3)", "-l", "m=randn(3, 2)", "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["dtype"] == "float64"
    assert [(c["leaf"], c["shape"], c["passed"]) for c in doc["gradcheck"]] == [("w", [3], True), ("b", [], True)]
    assert all(c["max_abs_error"] < 1e-6 for c in doc["gradcheck"])
    assert doc["error"] is None


def test_non_scalar_last_value_is_summed(capsys):
    code, out, _ = run(capsys, "x * x", "-g", "x=randn(2, 3)", "--json")
    assert code == 0
    assert json.loads(out)["gradcheck"][0]["passed"] is True


def test_a_hook_that_doubles_the_gradient_fails(capsys):
    code, out, err = run(capsys, "h = x.register_hook(lambda g: g * 2)\nsum(sin(x) * x)", "-g", "x=rand(3)",
                         "--json")
    doc = json.loads(out)
    assert code == 1
    check = doc["gradcheck"][0]
    assert check["passed"] is False
    assert check["max_rel_error"] == pytest.approx(1.0, rel=1e-4)  # analytic is exactly twice the numeric
    assert "check failed: the gradient of x differs from finite differences" in err


def test_a_broken_derivative_is_caught(capsys, monkeypatch):
    """Replace sin's backward with a wrong formula (grad * sin instead of grad * cos)."""
    sin_node = NODE_CLASSES["SinBackward0"]
    wrong = lambda F, grad, self, *rest: grad * F.sin(self)  # noqa: E731
    monkeypatch.setattr(sin_node, "formulas", (wrong,))
    code, out, _ = run(capsys, "sum(sin(x))", "-g", "x=rand(4)", "--json")
    assert code == 1
    assert json.loads(out)["gradcheck"][0]["passed"] is False
    monkeypatch.undo()
    code, out, _ = run(capsys, "sum(sin(x))", "-g", "x=rand(4)", "--json")
    assert code == 0


def test_tolerances_decide(capsys):
    # A loose eps gives a visible truncation error for exp: it passes a loose rtol, fails a tight one.
    code, _, _ = run(capsys, "sum(exp(x))", "-g", "x=ones(2)", "--eps", "1e-2", "--rtol", "1e-3", "--atol", "0")
    assert code == 0
    code, _, _ = run(capsys, "sum(exp(x))", "-g", "x=ones(2)", "--eps", "1e-2", "--rtol", "1e-6", "--atol", "0")
    assert code == 1


def test_random_values_are_the_same_in_every_run(capsys):
    # rand() inside the program must not change between the finite-difference runs.
    code, _, _ = run(capsys, "sum(x * rand(3))", "-g", "x=ones(3)")
    assert code == 0


def test_failed_assert_in_the_program_exits_1(capsys):
    code, _, _ = run(capsys, "assert False, 'no'\nsum(x * x)", "-g", "x=ones(2)")
    assert code == 1


@pytest.mark.parametrize("args, code, text", [
    (["x * 2", "-l", "x=ones(2)"], 2, "no leaf requires grad"),
    (["y = x * 2\nprint(y)", "-g", "x=ones(2)"], 2, "last value is not a tensor"),
    (["sum(x) +", "-g", "x=ones(2)"], 2, "error:"),
    (["sum(undefined)", "-g", "x=ones(2)"], 2, "name 'undefined' is not defined"),
    (["s = sum(x * x); s.backward(); s.backward()", "-g", "x=ones(2)"], 3, "backward through the graph a second time"),
    (["sum(x)", "-g", "x=ones(2)", "--eps", "0"], 2, "--eps must be a positive number"),
])
def test_errors_keep_evals_exit_codes(capsys, args, code, text):
    got, out, err = run(capsys, *args)
    assert got == code
    assert text in err


def test_gradient_matches_finite_differences_exactly_enough():
    """The helper behind the table: a known gradient, d/dx sum(x**3) = 3x**2."""
    from gradcli.check import run_check
    from gradcli.commands import options
    import contextlib
    import io
    opts = options(source="sum(x ** 3)", grad=["x=tensor([0.5, -1.0, 2.0])"], dtype="float64", json_=True,
                   no_backward=True)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert run_check(opts, eps=1e-6, atol=1e-7, rtol=1e-7) == 0
    assert json.loads(buf.getvalue())["gradcheck"][0]["max_abs_error"] < 1e-7
    assert np.allclose(3 * np.array([0.5, -1.0, 2.0]) ** 2, [0.75, 3.0, 12.0])
