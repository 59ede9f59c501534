"""`gradcli check`: analytic gradients against central finite differences, for CI."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradcli.cli import main
from gradcli.autograd.node import NODE_CLASSES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def run(capsys, *args):
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *args):
    code, out, err = run(capsys, *args, "--json")
    return code, json.loads(out), err


def gradcheck(doc):
    return {c["leaf"]: c for c in doc["gradcheck"]}


# -- what passes and what fails ----------------------------------------------------------------

def test_correct_gradients_pass_with_a_table(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run(capsys, "sum(x ** 3)", "-g", "x=tensor([0.5, -1.0, 2.0])")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "gradient check of the last value (line 1) (eps=1e-06, atol=1e-05, rtol=0.001)"
    header = next(line for line in lines if "leaf" in line).split()
    assert header[:3] == ["leaf", "result", "shape"]
    row = next(line for line in lines if line.lstrip().startswith("x "))
    assert row.split()[1:3] == ["pass", "[3]"]
    assert "[2]: 12 vs 12" in row  # the worst element: analytic 3 * 2**2 against the numeric value
    assert err == ""


def test_known_gradient_to_finite_difference_accuracy(capsys):
    code, doc, _ = run_json(capsys, "sum(x ** 3)", "-g", "x=tensor([0.5, -1.0, 2.0])", "--atol", "1e-8",
                            "--rtol", "0")
    assert code == 0
    check = gradcheck(doc)["x"]
    assert check["passed"] is True and check["shape"] == [3]
    assert check["max_abs_error"] < 1e-8  # central differences: error ~ eps**2 * f'''
    assert check["worst"]["analytic"] == [0.75, 3.0, 12.0][check["worst"]["index"][0]]  # 3 x**2, exactly


def test_json_has_evals_shape_plus_gradcheck(capsys):
    program = ("w = tensor([1., 2., 3.], requires_grad=True)\n"
               "b = tensor(0.5, requires_grad=True)\n"
               "(w * x).sum() + b ** 2 + mean(exp(w) @ m)")
    code, doc, _ = run_json(capsys, program, "-l", "x=randn(3)", "-l", "m=randn(3, 2)")
    assert code == 0
    assert main(["eval", "1", "--json"]) == 0
    eval_doc = json.loads(capsys.readouterr().out)
    assert list(doc)[:len(eval_doc)] == list(eval_doc)  # eval's keys, in eval's order, then check's
    assert {"gradcheck", "gradcheck_of", "tolerances"} <= set(doc)
    assert doc["dtype"] == "float64" and doc["error"] is None and doc["backward"] == "auto"
    assert [(c["leaf"], c["shape"], c["passed"]) for c in doc["gradcheck"]] == [("w", [3], True), ("b", [], True)]
    assert all(c["max_abs_error"] < 1e-6 for c in doc["gradcheck"])
    assert doc["gradcheck_of"] == "the last value (line 3)"
    assert doc["tolerances"] == {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3}
    grads = {v["name"]: v["grad"] for v in doc["variables"]}
    assert grads["b"] == 1.0  # the analytic gradient is the leaves' .grad, as eval shows it


def test_non_scalar_last_value_is_summed(capsys):
    code, doc, _ = run_json(capsys, "x * x", "-g", "x=tensor([[1., 2., 3.], [4., 5., 6.]])")
    assert code == 0
    assert doc["gradcheck_of"] == "the last value (line 1), summed"
    assert [v["grad"] for v in doc["variables"] if v["name"] == "x"] == [[[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]]]


def test_a_hook_that_doubles_the_gradient_fails(capsys):
    code, doc, err = run_json(capsys, "h = x.register_hook(lambda g: g * 2)\nsum(sin(x) * x)", "-g", "x=rand(3)")
    assert code == 1
    check = gradcheck(doc)["x"]
    assert check["passed"] is False
    assert check["max_rel_error"] == pytest.approx(1.0, rel=1e-6)  # analytic is exactly twice the numeric
    assert check["worst"]["analytic"] == pytest.approx(2 * check["worst"]["numeric"], rel=1e-6)
    assert err.startswith("error: the gradient of x differs from finite differences")


def test_a_broken_derivative_is_caught(capsys, monkeypatch):
    """Replace sin's backward with a wrong formula (grad * sin instead of grad * cos)."""
    sin_node = NODE_CLASSES["SinBackward0"]
    wrong = lambda F, grad, self, *rest: grad * F.sin(self)  # noqa: E731
    monkeypatch.setattr(sin_node, "formulas", (wrong,))
    code, doc, _ = run_json(capsys, "sum(sin(x))", "-g", "x=rand(4)")
    assert code == 1 and gradcheck(doc)["x"]["passed"] is False
    # also when the program runs backward itself
    code, doc, _ = run_json(capsys, "y = sin(x).sum(); y.backward()", "-g", "x=rand(4)")
    assert code == 1 and gradcheck(doc)["x"]["passed"] is False
    monkeypatch.undo()
    code, doc, _ = run_json(capsys, "sum(sin(x))", "-g", "x=rand(4)")
    assert code == 0 and gradcheck(doc)["x"]["passed"] is True


def test_a_broken_second_derivative_is_caught(capsys, monkeypatch):
    """grad(create_graph=True) inside the program: check differentiates the gradient itself."""
    program = "y = sum(sin(x)); g, = grad(y, [x], create_graph=True); sum(g)"
    code, doc, _ = run_json(capsys, program, "-g", "x=tensor([0.5, 1.0, 2.0])")
    assert code == 0 and gradcheck(doc)["x"]["passed"] is True
    cos_node = NODE_CLASSES["CosBackward0"]
    monkeypatch.setattr(cos_node, "formulas", (lambda F, grad, self, *rest: grad * F.sin(self),))  # sign lost
    code, doc, _ = run_json(capsys, program, "-g", "x=tensor([0.5, 1.0, 2.0])")
    assert code == 1 and gradcheck(doc)["x"]["passed"] is False


def test_tolerances_decide(capsys):
    # A loose eps gives a visible truncation error for exp: it passes a loose rtol, fails a tight one.
    code, _, _ = run(capsys, "sum(exp(x))", "-g", "x=ones(2)", "--eps", "1e-2", "--rtol", "1e-3", "--atol", "0")
    assert code == 0
    code, _, _ = run(capsys, "sum(exp(x))", "-g", "x=ones(2)", "--eps", "1e-2", "--rtol", "1e-6", "--atol", "0")
    assert code == 1
    # and atol alone can absorb it
    code, _, _ = run(capsys, "sum(exp(x))", "-g", "x=ones(2)", "--eps", "1e-2", "--rtol", "0", "--atol", "1e-3")
    assert code == 0


def test_random_values_are_the_same_in_every_run(capsys):
    # rand() inside the program must not change between the finite-difference runs.
    code, _, _ = run(capsys, "sum(x * rand(3))", "-g", "x=ones(3)")
    assert code == 0
    code, _, _ = run(capsys, "sum(x * rand(3))", "-g", "x=ones(3)", "--seed", "7")
    assert code == 0


def test_every_leaf_and_unused_leaves(capsys):
    code, doc, _ = run_json(capsys, "sum(a * b)", "-g", "a=tensor([1., 2.])", "-g", "b=tensor([3., 4.])",
                            "-g", "c=ones(2)")
    assert code == 0
    checks = gradcheck(doc)
    assert list(checks) == ["a", "b", "c"]
    assert checks["a"]["worst"]["analytic"] in (3.0, 4.0) and checks["c"]["max_abs_error"] == 0.0


def test_a_name_bound_to_two_leaves_is_told_apart(capsys):
    program = "w = ones(2, requires_grad=True)\nv = w * 3\nw = ones(2, requires_grad=True)\nsum(v * w)"
    code, doc, _ = run_json(capsys, program)
    assert code == 0
    assert [c["leaf"] for c in doc["gradcheck"]] == ["w (line 1)", "w (line 3)"]


def test_requires_grad_later_keeps_earlier_values_constant(capsys):
    # As in torch, y was computed before x required grad: it is a constant, d/dx sum(x * y) = y = 2.
    code, doc, _ = run_json(capsys, "x = ones(3); y = x * 2; x.requires_grad_(); sum(x * y)")
    assert code == 0
    check = gradcheck(doc)["x"]
    assert check["passed"] is True and check["worst"]["analytic"] == 2.0


def test_the_program_is_parsed_once(capsys, monkeypatch):
    import gradcli.lang.parser as syntax
    calls = []
    real = syntax.parse

    def counting(text, *args, **kwargs):
        calls.append(text)
        return real(text, *args, **kwargs)
    monkeypatch.setattr(syntax, "parse", counting)
    code, _, _ = run(capsys, "sum(x * x)", "-g", "x=rand(5)")
    assert code == 0
    assert calls.count("sum(x * x)") == 1  # 1 run + 10 finite-difference runs, one parse


def test_a_float32_leaf_is_noted(capsys):
    code, doc, _ = run_json(capsys, "x = tensor([1., 2.], dtype=float32, requires_grad=True); sum(x * x)")
    assert code == 1  # float32 finite differences with eps=1e-6 are far off
    assert doc["note"] == ("x is not float64: finite differences in lower precision are inaccurate "
                           "(leave out dtype= so that check's float64 applies)")
    assert run(capsys, "x = tensor([1., 2.], requires_grad=True); sum(x * x)")[0] == 0


def test_on_a_second_array_namespace(capsys):
    pytest.importorskip("array_api_strict")
    program = "y = sum(sin(x[1:]) * x[1:]); y.backward(); z = (x * x).mean()"
    code, doc, _ = run_json(capsys, program, "-g", "x=rand(3)", "--device", "array_api_strict")
    assert code == 0 and gradcheck(doc)["x"]["passed"] is True
    code, doc, _ = run_json(capsys, "h = x.register_hook(lambda g: g * 2); (x * x).mean()", "-g", "x=rand(3)",
                            "--device", "array_api_strict")
    assert code == 1 and gradcheck(doc)["x"]["passed"] is False


# -- programs that call backward themselves ------------------------------------------------------

def test_explicit_backward_checks_what_the_program_accumulated(capsys):
    code, doc, err = run_json(capsys, "-f", str(EXAMPLES / "seed3_quickstart.grad"))
    assert code == 0, err
    assert doc["backward"] == "explicit"
    assert doc["gradcheck_of"] == "the program's backward() calls (line 13)"
    check = gradcheck(doc)["x"]
    assert check["passed"] is True and check["backward_lines"] == [13]
    assert check["worst"]["analytic"] == 4.5
    assert doc["checks"] == [{"line": 15, "passed": True, "message": "d(out)/dx is 4.5 everywhere"}]


def test_explicit_backward_counts_calls_since_the_last_reset(capsys):
    # w1: backward twice (accumulates), zeroed, once more: the check is of the last call alone.
    code, doc, _ = run_json(capsys, "-f", str(EXAMPLES / "seed2_accumulate.grad"))
    assert code == 0
    checks = gradcheck(doc)
    assert checks["w1"]["backward_lines"] == [17] and checks["w1"]["passed"] is True
    assert checks["w1"]["worst"]["analytic"] == pytest.approx(1 / 3)
    # accumulation without a reset: both calls count
    code, doc, _ = run_json(capsys, "y = sum(x * x); y.backward(retain_graph=True); y.backward()",
                            "-g", "x=tensor([1., 2.])")
    assert code == 0
    check = gradcheck(doc)["x"]
    assert check["backward_lines"] == [1] and check["worst"]["analytic"] in (4.0, 8.0)
    # a reset after the last call (seed0_variable zeroes temp.grad at its end) does not matter
    code, doc, _ = run_json(capsys, "-f", str(EXAMPLES / "seed0_variable.grad"))
    assert code == 0 and gradcheck(doc)["temp"]["worst"]["analytic"] == 0.25


def test_explicit_backward_with_a_gradient_argument(capsys):
    code, doc, _ = run_json(capsys, "y = x * x\ny.backward(tensor([1., 10.]))", "-g", "x=tensor([1., 2.])")
    assert code == 0
    assert gradcheck(doc)["x"]["passed"] is True
    assert [v["grad"] for v in doc["variables"] if v["name"] == "x"] == [[2.0, 40.0]]


def test_explicit_backward_with_a_hook_fails(capsys):
    # seed4_hooks: the hook doubles the first call's gradient, so .grad is 3, not 2.
    code, doc, err = run_json(capsys, "-f", str(EXAMPLES / "seed4_hooks.grad"))
    assert code == 1
    check = gradcheck(doc)["v"]
    assert check["passed"] is False and check["worst"]["analytic"] == 3.0 and check["worst"]["numeric"] == \
        pytest.approx(2.0)
    assert "the gradient of v differs" in err


def test_backward_inputs_limits_the_leaves_checked(capsys):
    code, doc, _ = run_json(capsys, "y = sum(x * b); y.backward(inputs=[x])", "-g", "x=ones(2)", "-g", "b=ones(2)")
    assert code == 0
    assert [c["leaf"] for c in doc["gradcheck"]] == ["x"]
    assert doc["note"] == "not checked: b (no backward() call accumulates into its .grad)"


def test_every_example_program(capsys):
    """What check says about each example: its exit code (hooks that change a gradient fail)."""
    expected = {"seed0_no_grad_fn": 3, "seed0_variable": 0, "seed2_accumulate": 0, "seed2_partial": 0,
                "seed2_retain_graph": 3, "seed3_quickstart": 0, "seed4_graph": 0, "seed4_hooks": 1,
                "seed4_next_functions": 0, "seed4_no_grad": 2, "seed4_retain_graph": 0, "spec_tour": 1}
    got = {p.stem: run(capsys, "-f", str(p))[0] for p in sorted(EXAMPLES.glob("*.grad"))}
    assert got == expected


# -- the program's own asserts -------------------------------------------------------------------

def test_a_failed_assert_stops_the_check_with_exit_1(capsys):
    program = "s = sum(x * x)\nassert allclose(s, 3.0), 'no'\ns2 = s * 2"
    code, out, err = run(capsys, program, "-g", "x=ones(2)")
    assert code == 1 and out == ""
    assert err.startswith("error: assertion failed: no\n  --> line 2, column 1\n")
    code, doc, err = run_json(capsys, program, "-g", "x=ones(2)")
    assert code == 1 and doc["gradcheck"] == []
    assert doc["checks"] == [{"line": 2, "passed": False, "message": "no"}]
    assert doc["error"] == {"kind": "check", "message": "assertion failed: no", "line": 2, "column": 1}


def test_a_failed_gradient_check_is_a_json_error_of_kind_check(capsys):
    program = "h = x.register_hook(lambda g: g * 2)\ny = sum(x * x)"
    code, doc, err = run_json(capsys, program, "-g", "x=ones(3)")
    assert code == 1 and gradcheck(doc)["x"]["passed"] is False
    assert doc["error"]["kind"] == "check" and (doc["error"]["line"], doc["error"]["column"]) == (2, 1)
    assert doc["error"]["message"].startswith("the gradient of x differs from finite differences (x: max abs")
    assert "  --> line 2, column 1\n   | y = sum(x * x)\n   | ^" in err
    code, doc, _ = run_json(capsys, "y = sum(x * x)", "-g", "x=ones(3)")
    assert code == 0 and doc["error"] is None


def test_a_failed_backward_call_is_placed_at_the_call(capsys):
    program = "h = x.register_hook(lambda g: g * 2)\ny = sum(x * x)\n\nz = 1; y.backward()"
    code, doc, err = run_json(capsys, program, "-g", "x=ones(3)")
    assert code == 1 and (doc["error"]["line"], doc["error"]["column"]) == (4, 8), doc["error"]


def test_passing_asserts_exit_0(capsys):
    code, doc, _ = run_json(capsys, "s = sum(x * x)\nassert (x > 0).all()", "-g", "x=ones(2)")
    assert code == 0 and doc["checks"][0]["passed"] is True
    assert doc["gradcheck_of"] == "the last value (line 1)"  # the assert is not a value


# -- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, code, text", [
    (["x * 2", "-l", "x=ones(2)"], 2, "no leaf requires grad"),
    (["print(1)", "-g", "x=ones(2)"], 2, "the program computes no tensor to check"),
    (["y = x.detach() * 2", "-g", "x=ones(2)"], 2, "does not require grad"),
    (["sum(x) +", "-g", "x=ones(2)"], 2, "error:"),
    (["sum(undefined)", "-g", "x=ones(2)"], 2, "name 'undefined' is not defined"),
    (["x @ ones(3, 3)", "-g", "x=ones(2)"], 2, "error:"),
    (["s = sum(x * x); s.backward(); s.backward()", "-g", "x=ones(2)"], 3, "backward through the graph a second time"),
    (["y = sum(x ** 3); g, = grad(y, [x]); y", "-g", "x=ones(2)"], 3, "pass retain_graph=True to it"),
    (["sum(x)", "-g", "x=ones(2)", "--eps", "0"], 2, "--eps must be a positive number"),
    (["sum(x)", "-g", "x=ones(2)", "--atol", "-1"], 2, "--atol must be a non-negative number"),
])
def test_errors_keep_evals_exit_codes(capsys, args, code, text):
    got, out, err = run(capsys, *args)
    assert got == code, err
    assert text in err


def test_json_error_document_keeps_the_shape(capsys):
    code, doc, err = run_json(capsys, "y = x * 2\nprint(y)\nz = y @ y @ y", "-g", "x=ones(2)")
    assert code == 2
    assert doc["gradcheck"] == [] and doc["error"]["kind"] == "shape" and doc["error"]["line"] == 3
    assert [v["name"] for v in doc["variables"]] == ["x", "y"]  # what ran before the error
    assert doc["printed"] == ["tensor([2., 2.], grad_fn=<MulBackward0>)"]  # float64 is the default here
    code, doc, _ = run_json(capsys, "sum(x) +", "-g", "x=ones(2)")
    assert code == 2 and doc["gradcheck"] == [] and doc["error"]["kind"] == "syntax"


def test_program_output_is_printed_before_the_table(capsys):
    code, out, _ = run(capsys, "print('hello')\nsum(x)", "-g", "x=ones(2)")
    assert code == 0 and out.startswith("hello\ngradient check of the last value (line 2)")


# -- as a process, and in CI -----------------------------------------------------------------------

def cli(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_exit_codes_as_a_process():
    assert cli("check", "sum(sin(x) * x)", "-g", "x=rand(3)").returncode == 0
    proc = cli("check", "h = x.register_hook(lambda g: -g)\nsum(x * x)", "-g", "x=rand(3)")
    assert proc.returncode == 1 and "FAIL" in proc.stdout and "Traceback" not in proc.stderr
    assert cli("check", "sum(x", "-g", "x=rand(3)").returncode == 2
    proc = cli("check", "sum(x)", "-g", "x=rand(3)", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["gradcheck"][0]["passed"] is True


def _shim(tmp_path, prelude=""):
    shim = tmp_path / "gradcli"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "import sys; {prelude}'
                    f'from gradcli.cli import main; sys.exit(main(sys.argv[1:]))" "$@"\n')
    shim.chmod(0o755)
    return shim


def test_ci_script_passes_and_catches_a_broken_derivative(tmp_path):
    """examples/ci.sh as a user's CI runs it; then with a gradcli whose sin derivative is wrong."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["sh", str(EXAMPLES / "ci.sh")], capture_output=True, text=True, timeout=300,
                          env={**env, "GRADCLI": str(_shim(tmp_path))})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "gradcli checks passed"
    broken = ("from gradcli.autograd.node import NODE_CLASSES as N; "
              "N['SinBackward0'].formulas = (lambda F, grad, self, *rest: grad * F.sin(self),); ")
    proc = subprocess.run(["sh", str(EXAMPLES / "ci.sh")], capture_output=True, text=True, timeout=300,
                          env={**env, "GRADCLI": str(_shim(tmp_path, broken))})
    assert proc.returncode == 1
    assert "the gradient of x differs from finite differences" in proc.stderr
    assert "gradcli checks passed" not in proc.stdout
