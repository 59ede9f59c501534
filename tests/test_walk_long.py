"""The evaluator's walk of an expression that runs once (Evaluator._walk_gen): operators, names and
numbers handled inline, and the cyclic collector paused along a long expression (issue 16's
100,000-term programs). Values, gradients and errors must be what the general path gives; the
collector must run again around the program's own functions and once the walk ends."""

from __future__ import annotations

import gc

import pytest

from gradcli.errors import GradNameError, GradTypeError
from gradcli.lang import evaluator as evaluator_module
from gradcli.lang import parser
from gradcli.lang.evaluator import Evaluator, Observer

MIXED = ["x * 1.5", "sin(x)", "y / 2", "x * y", "exp(y) * 0.5", "(x - y) * 2", "-x ** 2", "3 - y"]


def chain(n: int) -> str:
    return " + ".join(MIXED[i % len(MIXED)] for i in range(n))


def run(source: str, observers=()):
    ev = Evaluator(auto_backward=False, observers=observers)
    result = ev.run(parser.parse(source))
    return ev, result


def leaves() -> str:
    return "x = tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)\n" \
           "y = tensor([[1.5, 0.75], [-0.5, 3.0]], requires_grad=True)\n"


@pytest.mark.parametrize("n", [7, 3001])  # below and above the collector's pause
def test_a_long_chain_has_torch_s_value_and_gradients(n):
    torch = pytest.importorskip("torch")
    ev, result = run(leaves() + f"s = {chain(n)}\nz = s.sum()\nz.backward()\n")
    assert result.error is None
    x = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    y = torch.tensor([[1.5, 0.75], [-0.5, 3.0]], requires_grad=True)
    names = {"x": x, "y": y, "sin": torch.sin, "exp": torch.exp}
    s = eval(MIXED[0], names)
    for i in range(1, n):  # term by term, in the chain's order (Python cannot compile the chain)
        s = s + eval(MIXED[i % len(MIXED)], names)
    s.sum().backward()
    for mine, theirs in ((ev.env["s"], s), (ev.env["x"].grad, x.grad), (ev.env["y"].grad, y.grad)):
        assert flat(mine) == pytest.approx(flat(theirs), rel=1e-5)


def flat(tensor) -> list:
    return [v for row in tensor.tolist() for v in row]


def test_the_walk_and_the_kept_code_agree_on_numbers_and_names():
    """The same expression at the top level (walked) and in a function (compiled and kept)."""
    expr = "a - b * 2 + 7 // 2 - a / 4 + b ** 2 - -a % 3 + (a - b) * (b - a) - 1.5 * a"
    expr = " + ".join([expr] * 300)  # 4,800 operators: the walk pauses the collector
    ev, result = run(f"a = 5\nb = 3\nw = {expr}\ndef f(a, b):\n    return {expr}\nk = f(5, 3)\n")
    assert result.error is None
    a, b = 5, 3
    assert ev.env["w"] == ev.env["k"] == eval(expr)


class CollectorWatch(Observer):
    """Records, at each call of a function or method, its name and whether the collector runs."""

    def __init__(self):
        self.seen = []

    def on_call(self, fn, args, kwargs, node, call_next):
        self.seen.append((getattr(fn, "__name__", "?"), gc.isenabled()))
        return call_next(fn, args, kwargs, node)


def test_the_collector_is_paused_along_a_long_expression_only():
    watch = CollectorWatch()
    n = evaluator_module._PAUSE_AFTER
    terms = " + ".join(["x * 2"] * 10 + ["sin(x)"] + ["x * 2"] * (n + 10) + ["f(x)", "cos(x)"])
    source = "x = ones(2)\ndef f(v):\n    return tan(v)\n" + f"s = {terms}\nt = sin(x) + x\n"
    assert gc.isenabled()
    ev, result = run(source, [watch])
    assert result.error is None
    assert gc.isenabled()
    # ones: before; sin: in the walk (paused: the walk meets the chain's operators, all of them,
    # before its first term); tan: in the program's own function (on again); cos: back in the
    # walk (paused again); sin in the next, short statement: on
    assert watch.seen == [("ones", True), ("sin", False), ("tan", True), ("cos", False), ("sin", True)]
    short = CollectorWatch()
    run("x = ones(2)\ns = " + " + ".join(["sin(x)"] * (n // 2)) + "\n", [short])
    assert short.seen and all(on for _, on in short.seen)


def test_an_error_in_a_long_expression_is_located_and_the_collector_runs_again():
    n = evaluator_module._PAUSE_AFTER + 500
    source = "x = ones(2)\n" + "s = " + " + ".join(["x * 2"] * n) + " + nope * 3\n"
    ev, result = run(source)
    assert isinstance(result.error, GradNameError)
    assert result.error.message.startswith("name 'nope' is not defined")
    assert (result.error.line, result.error.column) == (2, 5 + len(" + ".join(["x * 2"] * n)) + 3)
    assert gc.isenabled()
    source = "x = ones(2)\n" + "s = " + " + ".join(["x * 2"] * n) + " + 'a'\n"
    ev, result = run(source)
    assert isinstance(result.error, GradTypeError)
    assert (result.error.line, result.error.column) == (2, 5)  # the outermost +: its node's start
    assert gc.isenabled()


def test_a_collector_already_off_stays_off():
    gc.disable()
    try:
        n = evaluator_module._PAUSE_AFTER + 10
        ev, result = run("x = 2\n" + "s = " + " + ".join(["x * 2"] * n) + "\n")
        assert result.error is None and ev.env["s"] == 4 * n
        assert not gc.isenabled()
    finally:
        gc.enable()


class PassThrough(Observer):
    """Sees every call and changes nothing: with it, each call takes the general path."""

    def on_call(self, fn, args, kwargs, node, call_next):
        return call_next(fn, args, kwargs, node)


CALLS = [
    "z = sin(x) + exp(y) * 0.5",  # the inline call: a function of one leaf
    "z = cos(2)",  # a number argument: the function's own message
    "z = sin('a')",  # a string argument: the sandbox's check, then the message
    "z = sin(q)",  # an unknown argument, located at it
    "z = sinn(x)",  # an unknown function, with a suggestion
    "sin = 3\nz = sin(x)",  # a variable named as the function: not callable
    "def exp(t):\n    return t * 3\nz = exp(x)",  # the program's own function first
    "z = [sin(t) for t in (x, y)]",  # a comprehension's own name
    "z = abs(-2) + len(x) + float(y.sum())",  # Python's builtins
    "z = x.sum()\nw = backward(z)",  # unknown: backward is a method
    "z = exp(x, 2)",  # two arguments: not the inline path's
]


@pytest.mark.parametrize("source", CALLS)
def test_the_inline_call_of_one_leaf_gives_what_the_general_path_gives(source):
    """Without an observer a function of one leaf is called inline (Evaluator._walk); with one,
    through _eval_call: the same values, the same errors at the same places."""
    prelude = "x = tensor([0.5, -1.0], requires_grad=True)\ny = tensor([1.5, 0.75])\n"
    (ev1, r1), (ev2, r2) = run(prelude + source), run(prelude + source, [PassThrough()])
    assert type(r1.error) is type(r2.error)
    if r1.error is not None:
        assert (r1.error.message, r1.error.line, r1.error.column) == (r2.error.message, r2.error.line, r2.error.column)
    assert set(ev1.env) == set(ev2.env)
    for name, value in ev1.env.items():
        other = ev2.env[name]
        if hasattr(value, "tolist"):
            assert value.tolist() == other.tolist()
            assert type(value.grad_fn).__name__ == type(other.grad_fn).__name__
        elif isinstance(value, (int, float, list)):
            assert repr(value) == repr(other)


def test_the_inline_call_reports_each_error_exactly():
    prelude = "x = tensor([0.5, -1.0], requires_grad=True)\n"
    ev, result = run(prelude + "z = x + sin(q)\n")
    assert (result.error.message, result.error.line, result.error.column) == \
        ("name 'q' is not defined; did you mean 'eq'?", 2, 13)
    ev, result = run(prelude + "z = x + sinn(x)\n")
    assert (result.error.message, result.error.line, result.error.column) == \
        ("unknown function 'sinn'; did you mean 'sin'?", 2, 9)
    ev, result = run(prelude + "z = x + cos(2)\n")
    assert (result.error.message, result.error.column) == ("cos(): argument 'input' must be Tensor, not int", 9)
