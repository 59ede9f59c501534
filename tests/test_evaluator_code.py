"""Expressions compiled to flat code (gradcli/lang/code.py) and kept for loops and functions.

The same expression must give the same value and the same errors whether it runs once at the
top level (compiled, not kept), in a loop (kept, run again) or in a function; the short-circuit
forms evaluate only what Python evaluates; nesting depth never reaches Python's recursion limit.
"""

import json
import random
import warnings

import pytest

from gradcli.cli.fast import main as cli_main
from gradcli.lang import parser
from gradcli.lang.code import CALL, JUMP, JUMP_UNLESS, NAME, SHORT, compile_expression
from gradcli.lang.evaluator import _EXPRESSIONS


def run(source, *args, capsys):
    code = cli_main(["eval", source, "--json", "--no-backward", *args])
    return code, json.loads(capsys.readouterr().out)


def _random_expression(rng, depth):
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(["a", "b", "c", "0", "1", "2", "True", "False", "None"])
    kind = rng.randrange(6)
    x, y = _random_expression(rng, depth - 1), _random_expression(rng, depth - 1)
    if kind == 0:
        return f"({x} {rng.choice(['and', 'or'])} {y})"
    if kind == 1:
        return f"({x} if {_random_expression(rng, depth - 1)} else {y})"
    if kind == 2:
        return f"(not {x})"
    if kind == 3:
        return f"({x} {rng.choice(['==', '!='])} {y})"
    if kind == 4:
        return f"[{x}, {y}][{rng.choice(['0', '1', '-1'])}]"
    return f"({x} is None)"


def test_short_circuit_and_conditional_expressions_match_python(capsys):
    rng = random.Random(16)
    exprs = [_random_expression(rng, 4) for _ in range(150)]
    env = {"a": 0, "b": 3, "c": None}
    with warnings.catch_warnings():  # Python warns of `1 is None`; the language allows it
        warnings.simplefilter("ignore", SyntaxWarning)
        want = [repr(eval(e, {}, dict(env))) for e in exprs]  # noqa: S307 (our own generated text)
    body = "\n".join(f"    out.append({e})" for e in exprs)
    # the top level (compiled once), then a loop (kept code, run twice)
    program = "a = 0\nb = 3\nc = None\n" + "\n".join(f"print({e})" for e in exprs) + \
        f"\nfor _ in range(2):\n    out = []\n{body}\n    print(out)\n"
    code, doc = run(program, capsys=capsys)
    assert code == 0, doc["error"]
    assert doc["printed"][:len(exprs)] == want
    assert doc["printed"][len(exprs):] == ["[" + ", ".join(want) + "]"] * 2


def test_only_the_needed_operands_run(capsys):
    program = """calls = []
def f(tag, value):
    calls.append(tag)
    return value
for i in range(3):
    x = f("a", 0) and f("b", 1)
    y = f("c", 1) or f("d", 1)
    z = f("e", 5) if f("t", i == 1) else f("g", 6)
    w = f("h", 0) or f("k", 0) and f("m", 1)
print(calls, x, y, z, w)
"""
    code, doc = run(program, capsys=capsys)
    assert code == 0, doc["error"]
    per = ["a", "c", "t", "g", "h", "k"]
    second = ["a", "c", "t", "e", "h", "k"]
    assert doc["printed"] == [f"{per + second + per} 0 1 6 0"]


def test_errors_in_kept_code_point_at_the_node(capsys):
    code, doc = run("for i in range(3):\n    y = i if i < 2 else i + nope", capsys=capsys)
    assert code == 2
    assert doc["error"]["kind"] == "name"
    assert (doc["error"]["line"], doc["error"]["column"]) == (2, 29)
    code, doc = run("xs = [1, 2]\nfor i in range(3):\n    y = 1 + xs[i]", capsys=capsys)
    assert code == 2 and (doc["error"]["line"], doc["error"]["column"]) == (3, 13)
    code, doc = run("for i in range(3):\n    y = (i - 2 and 1) or ones(2) + 'a'", capsys=capsys)
    assert code == 2 and doc["error"]["kind"] == "type" and doc["error"]["line"] == 2


def test_the_programs_functions_called_from_kept_code(capsys):
    program = """def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
total = 0
for i in range(12):
    total = total + (fib(i) if i % 2 == 0 else -fib(i))
sq = [fib(k) * 2 for k in range(8) if k % 3 != 1]
print(total, sq)
"""
    fib = [0, 1]
    for _ in range(20):
        fib.append(fib[-1] + fib[-2])
    total = sum(fib[i] if i % 2 == 0 else -fib[i] for i in range(12))
    code, doc = run(program, capsys=capsys)
    assert code == 0, doc["error"]
    assert doc["printed"] == [f"{total} {[fib[k] * 2 for k in range(8) if k % 3 != 1]}"]


def test_deep_expressions_in_a_loop(capsys):
    depth = 3000  # far past Python's recursion limit, as nested code would need
    expr = "1"
    for _ in range(depth):
        expr = f"(1 + {expr})" if len(expr) % 2 else f"-(-{expr} - 1)"
    code, doc = run(f"for i in range(2):\n    y = {expr}\nprint(y)", capsys=capsys)
    assert code == 0, doc["error"]
    assert doc["printed"] == [str(depth + 1)]


def test_code_is_post_order_with_jumps():
    program = parser.parse("y = (a or f(b)) if c else d")
    code = compile_expression(program.body[0].value, _EXPRESSIONS)
    ops = [i[0] for i in code]
    assert ops == [NAME, JUMP_UNLESS, NAME, SHORT, NAME, CALL, JUMP, NAME]
    assert code[1][2] == 7 and code[6][2] == 8 and code[3][2] == 6  # else, end, end of the or


def test_kept_code_is_only_for_repeated_expressions():
    from gradcli.cli.session import engine_state
    from gradcli.lang.evaluator import Evaluator
    program = parser.parse("a = 1 + 2\nfor i in range(3):\n    b = a * i\ndef g(x):\n    return x + 1\nc = g(a)")
    with engine_state():
        ev = Evaluator(auto_backward=False)
        assert ev.run(program).error is None
    kept = {type(node).__name__ for node in ev._codes}
    top = program.body[0].value
    assert top not in ev._codes and program.body[3].value not in ev._codes  # ran once at the top level
    assert program.body[1].body[0].value in ev._codes  # the loop's
    assert program.body[2].body[0].value in ev._codes  # the function's return value
    assert kept == {"BinOp"}


@pytest.mark.parametrize("steps,code", [(7, 0), (6, 3)])
def test_max_steps_still_counts_every_statement_and_iteration(steps, code, capsys):
    # 1 (the for) + 3 iterations + 3 statements = 7
    assert run("for i in range(3):\n    x = i if i else -i", "--max-steps", str(steps), capsys=capsys)[0] == code
