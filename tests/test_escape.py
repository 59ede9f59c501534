"""Attempts to reach Python from a program: each exits 2, does nothing, and says why."""

import contextlib
import io
import json

import pytest

from gradcli.cli import main

ATTEMPTS = [
    "x.__class__", "x.__dict__", "x.__class__.__mro__", "__import__('os')", "__builtins__", "x.grad_fn.__init__",
    "y = x * 2; y.grad_fn.__class__", "y = x * 2; y.grad_fn._saved", "y = x * 2; y.grad_fn.formulas",
    "print.__self__", "print.__call__", "(lambda g: g).__globals__", "(lambda g: g).__code__",
    "f = lambda g: g; f.__closure__", "x.data.ctypes", "x._data", "x._backend", "x._version", "x.numpy()",
    "x.__array__()", "eval('1')", "exec('import os')", "compile('1', 'f', 'eval')", "open('/etc/passwd')",
    "getattr(x, 'data')", "globals()", "locals()", "vars(x)", "dir(x)", "type(x).__mro__",
    "type(x).mro()", "type(x)('1')", "type(1.5)('2')", "type(x).__subclasses__()", "type(type(x)).__call__", "import os", "from os import path",
    "os.system('true')", "x.register_hook.__self__", "h = x.register_hook(lambda g: g); h._hooks",
    "h = x.register_hook(lambda g: g); h.__class__", "x.shape.__class__", "x.dtype.__class__", "x.device.__class__",
    "(lambda: print)()", "import os", "from torch import os", "import torch; torch.__dict__",
    "import torch.nn.functional as F; F.__class__", "f'{x.__class__}'", "f'{x!r:{x}}'", "'{0.__class__}'.format(x)",
    "'{0[0]}'.format(x)", "def f(): return x.__class__\nf()", "[c for c in x.__class__]", "@x.__class__\ndef f(): pass",
    "import math; math.__spec__", "import numpy as np; np.load('f')", "from torch import *; __import__",
    "torch = 1; import sys", "lambda: (yield)", "sorted([1], key=x.__class__)", "'%s' % x.__class__", "(lambda g: __import__)(1)", "'__import__'.join", "ones(2).__add__(x)", "sum.__module__",
    "x.T.__setattr__", "x.grad_fn.next_functions.__class__", "max(x, 0).values.__class__", "[].append",
    "(1).real", "'abc'.upper()", "None.__class__", "x.requires_grad.__class__", "_", "__name__", "__file__",
]


def run(program):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["eval", program, "-g", "x=ones(2)", "--json"])
    return code, json.loads(out.getvalue()), err.getvalue()


@pytest.mark.parametrize("program", ATTEMPTS)
def test_escape_attempt_exits_2(program):
    code, doc, err = run(program)
    assert code == 2, (program, doc["error"])
    assert doc["error"]["kind"] in ("name", "type", "syntax", "usage"), doc["error"]
    assert "Traceback" not in err


def test_strings_are_only_strings(capsys):
    code, doc, _ = run("s = '__import__(\"os\").system(\"echo pwned\")'\nprint(s)")
    assert code == 0
    assert doc["printed"] == ['__import__("os").system("echo pwned")']


def test_a_hook_that_tries_to_escape_fails_when_it_runs():
    code, doc, _ = run("h = x.register_hook(lambda g: g.__class__)\nsum(x * 2)")
    assert code == 2
    assert "__class__" in doc["error"]["message"]


def test_keyword_tricks():
    for program in ["ones(2, **{'a': 1})", "ones(*[2])", "ones(2, __class__=1)", "sum(x, dim=0, out=x)"]:
        code, doc, _ = run(program)
        assert code == 2, (program, doc["error"])


def test_huge_integer_powers_are_refused_not_computed():
    for program in ["2 ** 10 ** 10", "10 ** 10 ** 10 ** 10", "(2 ** 64) ** (2 ** 64)", "(-3) ** 10 ** 9"]:
        code, doc, _ = run(program)
        assert code == 3 and doc["error"]["kind"] == "limit", (program, doc)
        assert "has more than 4,300 digits" in doc["error"]["message"]
    code, doc, err = run("2 ** 10 ** 10")
    assert doc["error"]["message"] == "2 ** 10000000000 has more than 4,300 digits"
    assert "use floats (2.0 ** 1000 rather than 2 ** 1000)" in err
    code, doc, _ = run("(-7) ** 10 ** 40")  # a huge operand is named by its size, not printed
    assert doc["error"]["message"] == "(-7) ** <41-digit integer> has more than 4,300 digits"


def test_integers_up_to_4300_digits_are_exact():
    code, doc, _ = run("print(10 ** 4299 * 9)\nprint(2 ** 100 * 3)")
    assert code == 0 and doc["printed"] == ["9" + "0" * 4299, str(2 ** 100 * 3)]
    code, doc, _ = run("10 ** 4300")
    assert code == 3


def test_repeated_squaring_of_a_huge_integer_stops_at_the_cap():
    # Each squaring doubles the digits: without a cap the 20th would run for hours inside one C call,
    # where --timeout cannot interrupt it.
    program = "a = 10 ** 1000\n" + "a = a * a\n" * 20
    code, doc, _ = run(program)
    assert code == 3 and doc["error"] == {"kind": "limit", "message": "an integer result has more than 4,300 digits",
                                          "line": 4, "column": 5}
    for program in ["a = 10 ** 4000; a + a * 10 ** 400", "a = 10 ** 4000; a -= 10 ** 4299 * -10",
                    "a = 10 ** 4000\na *= a"]:
        code, doc, _ = run(program)
        assert code == 3 and "more than 4,300 digits" in doc["error"]["message"], program


def test_only_the_programs_lambdas_can_be_hooks():
    # Anything else would only fail inside backward (it used to be an internal error there).
    for hook, kind in [("1", "int"), ("x", "Tensor"), ("no_grad()", "no_grad"), ("x.grad_fn", "NoneType")]:
        code, doc, _ = run(f"h = x.register_hook({hook})\nsum(x * 3)")
        assert code == 2, hook
        assert doc["error"]["message"] == f"register_hook expects a function such as lambda g: g * 2, not {kind}"
    code, doc, _ = run("print")  # a builtin is not a value that can be passed around
    assert code == 2 and doc["error"]["message"] == "'print' is a function: call it, e.g. print(...)"


def test_lambdas_are_called_as_python_calls_them():
    cases = {
        "f = lambda g: g\nf(1, 2)": "<lambda>() takes 1 positional argument but 2 were given",
        "f = lambda g: g\nf()": "<lambda>() missing 1 required positional argument: 'g'",
        "f = lambda g: g\nf(x=1)": "<lambda>() got an unexpected keyword argument 'x'",
        "f = lambda g: g\nf(1, g=2)": "<lambda>() got multiple values for argument 'g'",
    }
    for program, message in cases.items():
        code, doc, _ = run(program)
        assert (code, doc["error"]["message"]) == (2, message), program
    code, doc, _ = run("f = lambda a: lambda b: a * b\nprint(f(2)(3), (lambda g: g + 1)(g=1))")
    assert code == 0 and doc["printed"] == ["6 2"]


def test_recursion_through_lambdas_and_hooks_is_stopped():
    for program in ["f = lambda g: f(g)\nf(1)", "f = lambda g: g(g)\nf(f)",
                    "y = x * 2\nh = y.register_hook(lambda g: y.backward(g, retain_graph=True))\n"
                    "y.sum().backward(retain_graph=True)",
                    "h = x.register_hook(lambda g: grad(sum(x * 2), [x], create_graph=True)[0])\n"
                    "sum(x * 3).backward(create_graph=True)"]:
        code, doc, err = run(program)
        assert code == 3 and doc["error"]["kind"] == "limit", program
        assert doc["error"]["message"].startswith("maximum recursion depth exceeded")
        assert "Traceback" not in err
