"""The language's dict literals and ``with EXPR as NAME:``: what a program prints equals what
Python (with torch) prints for the same code, and bad uses fail cleanly (exit 2, a line)."""

import contextlib
import io
import json

import pytest

from gradcli.cli.fast import main

torch = pytest.importorskip("torch")


def run_gradcli(program, capsys):
    code = main(["eval", program, "--json"])
    doc = json.loads(capsys.readouterr().out)
    return code, doc


def run_python(program):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(program, {})  # noqa: S102  (test programs, fixed strings)
    return out.getvalue().splitlines()


PROGRAMS = {
    "literals and subscripts": (
        'import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\n'
        'd = {"a": 1, "b": x * 2, 3: "three", (1, 2): None,}\n'
        'print(d["a"], d[3], d[(1, 2)], len(d), "b" in d, "z" in d, 3 in d.keys(), 1 in d.values())\n'
        'print(d)\nprint({}, {1: {2: [3, {}]}}, {"k": (1,)})\n'),
    "iteration and methods": (
        'd = {"w": 2, "v": 3}\nfor k in d:\n    print(k)\nfor k, v in d.items():\n    print(k, v)\n'
        'print(list(d.keys()), list(d.values()), d.get("zz", 5), d.get("w"), d.get("q"))\n'
        'print(d.keys(), d.values(), d.items())\n'
        'print([k * v for k, v in zip(d, d.values())], sum(d.values()), max(d), sorted(d) if False else 0)\n'),
    "assignment and mutation": (
        'd = {}\nd["a"] = 1\nd["a"] = 2\nd[(1, "b")] = [1]\nprint(d, d.pop("a"), d)\n'
        'd.update({"z": 0})\nprint(d)\nk, = {"only": 1}\nprint(k)\n'),
    "multi-line literal": 'd = {\n    "a": 1,\n    "b": 2\n}\nprint(d, len(d))\n',
    "tensors in a dict": (
        'import torch\nw = torch.tensor([1.0, 2.0], requires_grad=True)\nparams = {"w": w, "b": torch.zeros(1)}\n'
        'loss = (params["w"] ** 2).sum()\nloss.backward()\nfor name, p in params.items():\n'
        '    print(name, p.grad)\n'),
    "with as": (
        'import torch\nx = torch.ones(2, requires_grad=True)\nwith torch.no_grad() as g:\n    y = x * 2\n'
        'print(g, y.requires_grad)\nwith torch.enable_grad() as h:\n    print(h, (x * 2).requires_grad)\n'
        'with torch.set_grad_enabled(False) as s:\n    print(s, torch.is_grad_enabled())\n'
        'with torch.inference_mode() as i:\n    print(i, torch.ones(1).is_inference())\n'),
    "with as in a function": (
        'import torch\ndef f(x):\n    with torch.no_grad() as ctx:\n        out = x * 2\n    return out, ctx\n'
        'print(f(torch.ones(1, requires_grad=True)))\n'),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_prints_what_python_prints(name, capsys):
    program = PROGRAMS[name]
    expected = run_python(program)
    code, doc = run_gradcli(program, capsys)
    assert code == 0, doc["error"]
    assert "\n".join(doc["printed"]).splitlines() == expected


@pytest.mark.parametrize("program,message,line", [
    ('d = {"a": 1}\nprint(d["b"])', "KeyError: 'b'", 2),
    ("d = {[1]: 2}", "unhashable type: 'list'", 1),
    ("d = {}\nd[{}] = 1", "unhashable type: 'dict'", 2),
    ("t = ()\nfor i in range(200):\n    t = (t,)\nd = {t: 1}", "a dict key of tuples nested more than 100 deep", 4),
    ('d = {"a": 1}\nd.__class__', "'dict' has no member '__class__'", 2),
    ('d = {"a": 1}\nd.setdefault("b", 2)', "'dict' has no method 'setdefault'", 2),
    ('d = {"a": 1\nprint(d)', None, None),
    ("with no_grad() as 3:\n    pass", "expected a name", 1),
    ("with no_grad() as a, b:\n    pass", "expected ':'", 1),
])
def test_bad_uses_fail_cleanly(program, message, line, capsys):
    code, doc = run_gradcli(program, capsys)
    assert code == 2
    if message is not None:
        assert message in doc["error"]["message"]
        assert doc["error"]["line"] == line


def test_a_dict_key_nested_deep_does_not_crash(capsys):
    """Python's hash of a tuple nested 10**5 deep recurses in C: refused before hashing."""
    code, doc = run_gradcli("t = ()\nfor i in range(100000):\n    t = (t,)\nprint(t in {1: 2})", capsys)
    assert code == 2 and "nested more than 100 deep" in doc["error"]["message"]
