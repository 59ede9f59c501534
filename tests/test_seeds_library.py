"""Every seed article snippet (examples/*.grad) run as plain Python on two libraries: gradcli's
engine (`import gradcli as gc`) and PyTorch. The .grad language is Python-flavoured on purpose,
so each file is also a Python program; what it prints, and the error it stops with, must be the
same in both (grad_fn addresses aside). Without torch, the library run is compared with the
checked-in output of `gradcli eval` instead."""

import json
import re
from pathlib import Path

import pytest

import gradcli as gc

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FILES = sorted(EXAMPLES.glob("*.grad"))
NAMES = ["tensor", "ones", "zeros", "full", "rand", "randn", "arange", "linspace", "eye", "ones_like", "zeros_like",
         "rand_like", "mean", "sum", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt", "matmul", "mm",
         "mv", "dot", "outer", "cat", "stack", "allclose", "no_grad", "enable_grad", "set_grad_enabled", "where",
         "maximum", "minimum", "clamp", "softmax", "log_softmax", "abs", "pow", "max", "min", "prod", "norm"]


def namespace(lib, printed):
    ns = {name: getattr(lib, name) for name in NAMES if hasattr(lib, name)}
    if lib.__name__ == "torch":  # the language's allclose also takes a number, as a convenience
        ns["allclose"] = lambda a, b, **k: lib.allclose(a, lib.as_tensor(b, dtype=a.dtype), **k)
    ns["grad"] = lib.autograd.grad
    ns["backward"] = lambda t, *a, **k: t.backward(*a, **k)
    ns["print"] = lambda *args: printed.append(" ".join(_text(a) for a in args))
    return ns


def _text(value):
    return re.sub(r" object at 0x[0-9a-f]+", "", repr(value) if not isinstance(value, str) else value)


def run(lib, path):
    printed = []
    lib.set_grad_enabled(True)  # a snippet may leave grad mode off (seed4_no_grad does, on purpose)
    try:
        exec(compile(path.read_text(), str(path), "exec"), namespace(lib, printed))  # noqa: S102 (test oracle)
        error = None
    except Exception as exc:  # the error a snippet demonstrates
        error = str(exc).split(" Hint:")[0]
    return printed, error


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_snippet_prints_what_torch_prints(path):
    if "--seed" in path.read_text():
        pytest.skip("uses random values: torch's generator differs")
    ours, our_error = run(gc, path)
    torch = pytest.importorskip("torch")
    theirs, their_error = run(torch, path)
    assert ours == theirs
    assert our_error == their_error


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_library_prints_what_the_cli_prints(path):
    if "--seed" in path.read_text():
        gc.manual_seed(int(re.search(r"--seed (\d+)", path.read_text()).group(1)))
    ours, our_error = run(gc, path)
    expected = json.loads((EXAMPLES / "expected" / f"{path.stem}.json").read_text())
    assert ours == expected["printed"][:len(ours)]
    if expected["error"] is None:
        assert our_error is None
    else:
        assert expected["error"]["message"].startswith(our_error)
