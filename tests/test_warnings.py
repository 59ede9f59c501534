"""Issue 13 E: torch's UserWarnings, with torch's text, at the user's line; in the CLI on stderr as
Python prints a warning (with the program's line) and in the JSON document's "warnings" list."""

import json
import warnings

import pytest

import gradcli as gc
from gradcli.cli import main

torch = pytest.importorskip("torch")


def _caught(m, fn):
    """(category, message without torch's "(Triggered internally ...)" tail, file) per warning."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            fn(m)
        except RuntimeError as exc:
            seen.append(warnings.WarningMessage(f"raised: {exc}", RuntimeError, "", 0))
    return [(w.category.__name__, str(w.message).split(" (Triggered internally")[0], w.filename) for w in seen
            if w.category is not RuntimeWarning]  # (NumPy's 0/0 RuntimeWarnings are not torch's)


def _same(fn):
    ours, theirs = _caught(gc, fn), _caught(torch, fn)
    assert [w[:2] for w in ours] == [w[:2] for w in theirs]
    return ours, theirs


def _non_leaf_grad(m):
    x = m.ones(2, requires_grad=True)
    y = x * 2
    y.grad  # noqa: B018 - the warning is the point
    z = x * 3
    z.retain_grad()
    z.grad  # noqa: B018 - retained: no warning
    x.grad  # noqa: B018 - a leaf: no warning


def test_non_leaf_grad_warns_at_the_users_line():
    ours, _ = _same(_non_leaf_grad)
    assert len(ours) == 1 and ours[0][0] == "UserWarning" and ours[0][2] == __file__
    assert ours[0][1].startswith("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed.")


TORCH_CYCLE = """
import warnings, torch
x = torch.ones(2, requires_grad=True)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    torch.autograd.grad((x * x).sum(), x, create_graph=True)
    (x * x).sum().backward(create_graph=True)
print(len(seen)); print(str(seen[0].message).split(" (Triggered internally")[0])
"""


def test_backward_with_create_graph_warns_of_the_cycle():
    # torch warns once per process (TORCH_WARN_ONCE): its text comes from a fresh one
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", TORCH_CYCLE], capture_output=True, text=True, timeout=300)
    count, message = proc.stdout.rstrip("\n").split("\n", 1)

    def case(m):
        x = m.ones(2, requires_grad=True)
        m.autograd.grad((x * x).sum(), x, create_graph=True)  # no warning: autograd.grad
        (x * x).sum().backward(create_graph=True)
    ours = _caught(gc, case)
    assert count == "1" and [w[:2] for w in ours] == [("UserWarning", message)] and ours[0][2] == __file__


def test_detect_anomaly_warnings_and_failing_node():
    def case(m):
        x = m.zeros(1, requires_grad=True)
        with m.autograd.detect_anomaly():
            y = x.sqrt()
            (y * 0).sum().backward()
    ours, theirs = _same(case)
    assert ours[0][1] == ("Anomaly Detection has been enabled. This mode will increase the runtime and should "
                          "only be enabled for debugging.")
    assert ours[1][1].startswith("Error detected in SqrtBackward0. Traceback of forward call that caused the "
                                 "error:\n")
    assert "y = x.sqrt()" in ours[1][1] and "y = x.sqrt()" in theirs[1][1]
    assert ours[2][1] == "raised: Function 'SqrtBackward0' returned nan values in its 0th output."


def test_anomaly_mode_hint_and_modified_tensor():
    def case(m):
        x = m.ones(2, requires_grad=True).clone()
        y = x * x
        with m.autograd.detect_anomaly(check_nan=False):
            x.mul_(2)
            y.sum().backward()
    ours, theirs = _same(case)
    assert ours[-1][1].endswith("Hint: the backtrace further above shows the operation that failed to compute "
                                "its gradient. The variable in question was changed in there or anywhere later. "
                                "Good luck!")
    assert ours[-2][1] == ("Error detected in MulBackward0. No forward pass information available. Enable "
                           "detect anomaly during forward pass for more information.")  # made before the block


def test_anomaly_trace_names_the_forward_line():
    def case(m):
        x = m.ones(2, requires_grad=True).clone()
        with m.autograd.detect_anomaly():
            y = x * x
            x.mul_(2)
            y.sum().backward()
    ours, theirs = _same(case)
    assert "y = x * x" in ours[1][1] and "y = x * x" in theirs[1][1]


def test_set_detect_anomaly_forms():
    def states(m):
        out = [m.is_anomaly_enabled(), m.is_anomaly_check_nan_enabled()]
        with m.autograd.set_detect_anomaly(True, check_nan=False):
            out += [m.is_anomaly_enabled(), m.is_anomaly_check_nan_enabled()]
        out += [m.is_anomaly_enabled(), m.is_anomaly_check_nan_enabled()]
        m.autograd.set_detect_anomaly(True)
        out.append(m.is_anomaly_enabled())
        m.autograd.set_detect_anomaly(False)
        out.append(m.is_anomaly_enabled())
        return out
    assert states(gc) == states(torch)


def test_del_grad():
    x = gc.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    del x.grad
    assert x.grad is None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


PROGRAM = """x = ones(2, requires_grad=True)
y = x * 2
print(y.grad)
print(y.grad)
y.sum().backward(create_graph=True)
"""


def test_cli_warnings_on_stderr_and_in_json(capsys):
    code = main(["eval", PROGRAM, "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)
    assert [(w["line"], w["category"]) for w in doc["warnings"]] == [(3, "UserWarning"), (4, "UserWarning"),
                                                                      (5, "UserWarning")]
    assert doc["warnings"][0]["message"].startswith("The .grad attribute of a Tensor that is not a leaf")
    assert doc["warnings"][2]["message"].startswith("Using backward() with create_graph=True")
    lines = err.splitlines()
    assert lines[0].startswith("<source>:3: UserWarning: The .grad attribute of a Tensor that is not a leaf")
    assert lines[1] == "  print(y.grad)"
    assert lines[4].startswith("<source>:5: UserWarning: Using backward() with create_graph=True")
    assert len(lines) == 6


def test_cli_without_warnings_has_an_empty_list(capsys):
    assert main(["eval", "x = ones(2, requires_grad=True); (x * 2).sum().backward(); x.grad", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["warnings"] == [] and err == ""
