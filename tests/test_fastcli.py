"""The start-up fast path binds a command line exactly as typer would (both read the option
table in gradcli.cli.commands), and hands anything else (help, unknown options, bad values) to typer."""

import subprocess
import sys

import pytest
import typer

from gradcli.cli import fast as fastcli
from gradcli.cli import app
from gradcli.cli.commands import COMMANDS

CASES = [
    ["eval", "mean(x)", "-l", "x=ones(2)"],
    ["eval", "-f", "prog.grad", "--json", "--seed", "3", "--dtype", "float64"],
    ["eval", "x", "-g", "a=ones(1)", "--grad=b=zeros(2)", "-l", "c=1", "--precision", "6", "--no-backward"],
    ["eval", "--timeout", "2.5", "--max-elements", "100", "--device", "cpu", "--", "-x"],
    ["check", "sum(x*x)", "-g", "x=rand(3)", "--eps", "1e-4", "--atol", "1e-6"],
    ["graph", "mean(x)", "-g", "x=ones(2)", "--format", "dot"],
    ["ops", "--json"],
    ["ops"],
]


def _norm(params):
    return {k: (None if v in ((), []) else list(v) if isinstance(v, tuple) else v) for k, v in params.items()}


def _typer_params(argv):
    command = typer.main.get_command(app).commands[argv[0]]
    return command.make_context(argv[0], list(argv[1:])).params


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c[:2]) for c in CASES])
def test_fast_path_binds_like_typer(argv, monkeypatch):
    monkeypatch.delenv("GRADCLI_DEVICE", raising=False)
    fast = fastcli.parse(COMMANDS[argv[0]], argv[1:])
    assert fast is not None
    assert _norm(fast) == _norm(_typer_params(argv))


def test_every_command_is_registered_with_typer():
    assert sorted(c.name for c in app.registered_commands) == sorted(COMMANDS)


def test_env_var_default(monkeypatch):
    monkeypatch.setenv("GRADCLI_DEVICE", "cuda:1")
    assert fastcli.parse(COMMANDS["eval"], ["1"])["device"] == "cuda:1"
    assert fastcli.parse(COMMANDS["eval"], ["1", "--device", "cpu"])["device"] == "cpu"
    assert _typer_params(["eval", "1"])["device"] == "cuda:1"


@pytest.mark.parametrize("args", [
    ["-h"], ["--help"], ["1", "--bogus"], ["1", "--seed", "x"], ["1", "--seed"], ["1", "2"],
    ["1", "--json=yes"], ["1", "--seed", "1", "--seed", "2"], ["-lx=1", "1"],
])
def test_anything_unusual_goes_to_typer(args):
    assert fastcli.parse(COMMANDS["eval"], args) is None


def test_unknown_command_goes_to_typer():
    assert fastcli.run(["evil", "1"]) is None
    assert fastcli.run([]) is None


def test_plain_eval_does_not_import_typer():
    code = ("import sys, io, contextlib\n"
            "from gradcli.cli.fast import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    rc = main(['eval', 'mean(x)', '-g', 'x=ones(2)', '--json'])\n"
            "print(rc, 'typer' in sys.modules, 'pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "False", "False"]


_GC_PROBE = """
import sys, gc, io, contextlib
sys.argv = ["/venv/bin/gradcli"] + sys.argv[1:]   # as the console script sees itself
import gradcli
paused = not gc.isenabled()
from gradcli.cli import commands, fast
seen = []
real_run = commands.run
def spy(name, kwargs):
    seen.append(gc.isenabled())
    return real_run(name, kwargs)
commands.run = spy
with contextlib.redirect_stdout(io.StringIO()):
    try:
        rc = fast.main()
    except SystemExit as exc:  # typer's --help
        rc = exc.code
print(paused, seen, gc.isenabled(), rc)
"""


@pytest.mark.parametrize("argv, commands_seen, rc", [
    (["eval", "y = mean(x)", "-g", "x=ones(2)", "--json"], "[True]", "0"),
    (["ops", "--json"], "[True]", "0"),
    (["eval", "--help"], "[]", "0"),
])
def test_start_up_pauses_the_collector_and_commands_run_with_it_on(argv, commands_seen, rc):
    """Run as the command, the imports run with the cyclic GC paused; every command (the fast
    path's or typer's) runs with it back on, and it stays on."""
    out = subprocess.run([sys.executable, "-c", _GC_PROBE, *argv], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", commands_seen, "True", rc]


def test_library_import_leaves_the_collector_alone():
    code = "import gc, gradcli; from gradcli.cli.fast import main; print(gc.isenabled())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True"]


_KEEP_PROBE = """
import sys, gc, weakref
from gradcli.cli import fast
from gradcli.lang.evaluator import Evaluator
made = []
real_init = Evaluator.__init__
def spy(self, *args, **kwargs):
    real_init(self, *args, **kwargs)
    made.append(weakref.ref(self))
Evaluator.__init__ = spy
sys.argv = ["gradcli", "eval", "z = (x * 2).sum()", "-g", "x=ones(2)", "--json"]
real_exit = fast.os._exit
def exit_(rc):
    sys.stderr.write(f"{rc} {len(fast._KEPT)} {[ref() is not None for ref in made]}\\n")
    sys.stderr.flush()
    real_exit(rc)
fast.os._exit = exit_
fast.command()
"""


def test_the_command_keeps_the_program_and_its_graph_to_its_exit():
    """Run as the command (which ends with os._exit), eval hands its program and evaluator to
    keep_to_exit: they are not freed one by one before the exit."""
    done = subprocess.run([sys.executable, "-c", _KEEP_PROBE], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.split("\n")[-2] == "0 2 [True]"  # the marker None, then (program, evaluator)


def test_a_host_calling_main_keeps_nothing(capsys):
    from gradcli.cli import fast
    before = list(fast._KEPT)
    assert fast.main(["eval", "z = (x * 2).sum()", "-g", "x=ones(2)", "--json"]) == 0
    assert fast._KEPT == before == []
