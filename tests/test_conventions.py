"""Command-line conventions, through the real command: --version, shell completion, help with an
example per command, shared options on every command that runs a program, error kinds, device
names, the ops table's arity column, and the examples' ``# gradcli: --seed N`` header."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from gradcli._version import __version__

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gradcli(*args, **env_vars):
    env = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1", COLUMNS="100")
    env.pop("GRADCLI_DEVICE", None)
    env.update(env_vars)
    return subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, stdin=subprocess.DEVNULL, timeout=300)


def test_version():
    for flag in ("--version", "-V"):
        p = gradcli(flag)
        assert (p.returncode, p.stdout, p.stderr) == (0, f"gradcli {__version__}\n", "")


def test_completion_is_offered_and_shown():
    p = gradcli("--help")
    assert "--install-completion" in p.stdout and "--show-completion" in p.stdout
    # typer detects the shell from the parent process: run it from bash (``; true``: not exec'd)
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.run(["bash", "-c", f"{sys.executable} -m gradcli --show-completion; true"], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=300)
    assert "_gradcli_completion" in p.stdout and "complete " in p.stdout, p


@pytest.mark.parametrize("command", ["eval", "check", "graph", "ops"])
def test_help_has_an_example(command):
    p = gradcli(command, "--help")
    assert p.returncode == 0
    assert re.search(r"Examples?:", p.stdout)
    assert f"gradcli {command} " in p.stdout


@pytest.mark.parametrize("command", ["eval", "check", "graph"])
def test_shared_options_on_every_command_that_runs_a_program(command):
    text = gradcli(command, "--help").stdout
    for flag in ("--dtype", "--no-backward", "--precision", "--seed", "--device", "--json"):
        assert flag in text, flag
    p = gradcli(command, "y = (x * 2).sum()", "-g", "x=rand(2)", "--dtype", "float64", "--seed", "3",
                "--precision", "2", "--no-backward", "--device", "cpu", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["dtype"] == "float64"


def test_check_honours_dtype_with_a_note():
    p = gradcli("check", "sum(x * x)", "-g", "x=ones(2)", "--dtype", "float32", "--json")
    doc = json.loads(p.stdout)
    assert doc["dtype"] == "float32" and "not float64" in doc["note"]


@pytest.mark.parametrize("program, kind, message", [
    ("x.sum(5)", "shape", "Dimension out of range (expected to be in range of [-1, 0], but got 5)"),
    ("t = (1, 2); t[5]", "type", "tuple index out of range"),
    ("x.shape[3]", "shape", "Size index out of range"),
])
def test_error_kinds_match_the_error(program, kind, message):
    p = gradcli("eval", program, "-g", "x=ones(2)", "--json")
    assert p.returncode == 2
    assert json.loads(p.stdout)["error"]["kind"] == kind
    assert json.loads(p.stdout)["error"]["message"] == message


def test_dimension_out_of_range_is_an_index_error_as_in_torch():
    import gradcli as gc
    with pytest.raises(IndexError, match="Dimension out of range"):
        gc.ones(2).sum(5)
    torch = pytest.importorskip("torch")
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2).sum(5)


@pytest.mark.parametrize("device, message", [
    ("tpu", "Expected one of cpu, cuda device type at start of device string: tpu"),
    ("mps", "Expected one of cpu, cuda device type at start of device string: mps"),
    ("cuda:x", "Invalid device string: 'cuda:x'"),
])
def test_an_unknown_device_is_bad_input(device, message):
    for how in (["--device", device], []):
        env = {} if how else {"GRADCLI_DEVICE": device}
        p = gradcli("eval", "x", "-g", "x=ones(2)", *how, "--json", **env)
        assert p.returncode == 2, p
        assert json.loads(p.stdout)["error"]["kind"] == "usage"
        assert p.stderr == f"error: {message}\nhint: --device takes cpu, cuda or cuda:N\n"


def test_ops_has_the_arity_column_its_help_promises():
    assert "arity" in gradcli("ops", "--help").stdout
    p = gradcli("ops", COLUMNS="400")  # wide enough that no signature wraps
    header = next(line for line in p.stdout.splitlines() if "signature" in line).split()
    assert header[:2] == ["signature", "arity"]
    rows = {r["name"]: r["arity"] for r in json.loads(gradcli("ops", "--json").stdout)["functions"]}
    for name in ("mul", "sum", "where"):
        line = next(line for line in p.stdout.splitlines() if line.startswith(f" {name}("))
        assert line.split(")", 1)[1].split()[0] == str(rows[name]) if ")" in line else False


def test_the_seed_header_of_an_example_is_honoured():
    path = "examples/seed2_partial.grad"
    assert "# gradcli: --seed 0" in open(os.path.join(ROOT, path)).read()
    data = lambda *a: json.loads(gradcli("eval", "-f", path, "--json", *a).stdout)["variables"][0]["data"]
    assert data() == data("--seed", "0")
    assert data("--seed", "1") != data()
