"""The start-up fast path binds a command line exactly as typer would, and hands anything else
(help, unknown options, bad values) to typer."""

import pytest
import typer

from gradcli import fastcli
from gradcli.cli import app

CASES = [
    ["eval", "mean(x)", "-l", "x=ones(2)"],
    ["eval", "-f", "prog.grad", "--json", "--seed", "3", "--dtype", "float64"],
    ["eval", "x", "-g", "a=ones(1)", "--grad=b=zeros(2)", "-l", "c=1", "--precision", "6", "--no-backward"],
    ["eval", "--timeout", "2.5", "--max-elements", "100", "--device", "cpu", "--", "-x"],
    ["check", "sum(x*x)", "-g", "x=rand(3)", "--eps", "1e-4", "--atol", "1e-6"],
    ["graph", "mean(x)", "-g", "x=ones(2)", "--format", "dot"],
    ["ops", "--json"],
]


def _norm(params):
    return {k: (list(v) if isinstance(v, (list, tuple)) else v) or (None if v in ((), []) else v)
            for k, v in params.items()}


def _typer_params(argv):
    group = typer.main.get_command(app)
    command = group.commands[argv[0]]
    ctx = command.make_context(argv[0], list(argv[1:]))
    return ctx.params


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c[:2]) for c in CASES])
def test_fast_path_binds_like_typer(argv, monkeypatch):
    monkeypatch.delenv("GRADCLI_DEVICE", raising=False)
    callback = next(c.callback for c in app.registered_commands if c.name == argv[0])
    fast = fastcli.parse(callback, argv[1:])
    assert fast is not None
    assert _norm(fast) == _norm(_typer_params(argv))


def test_env_var_default(monkeypatch):
    monkeypatch.setenv("GRADCLI_DEVICE", "cuda:1")
    callback = next(c.callback for c in app.registered_commands if c.name == "eval")
    assert fastcli.parse(callback, ["1"])["device"] == "cuda:1"
    assert fastcli.parse(callback, ["1", "--device", "cpu"])["device"] == "cpu"


@pytest.mark.parametrize("args", [
    ["-h"], ["--help"], ["1", "--bogus"], ["1", "--seed", "x"], ["1", "--seed"], ["1", "2"],
    ["1", "--json=yes"], ["1", "--seed", "1", "--seed", "2"], ["-lx=1", "1"],
])
def test_anything_unusual_goes_to_typer(args):
    callback = next(c.callback for c in app.registered_commands if c.name == "eval")
    assert fastcli.parse(callback, args) is None


def test_unknown_command_goes_to_typer():
    assert fastcli.run(app, ["evil", "1"]) is None
    assert fastcli.run(app, []) is None
