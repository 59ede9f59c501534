"""Hostile and random input never escapes the contract: for every input, the exit code is 0-3,
stderr has no traceback, stdout under --json is exactly one JSON document, and the run ends
within --timeout. Programs are built from the grammar's constructs by hypothesis, then mutated
(tokens deleted, swapped, duplicated; random characters and bytes; huge literals; deep nesting), and
well-typed programs run through eval, check and graph. Runs in-process (cli.main) for speed."""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gradcli.cli import main
from gradcli.ops.registry import FUNCTIONS

FUZZ = settings(max_examples=250, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def run_json(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--json", "--timeout", "10", "--max-elements", "100000", "--max-steps", "20000"])
    return code, out.getvalue(), err.getvalue()


def assert_contract(args):
    code, out, err = run_json(args)
    assert code in (0, 1, 2, 3), (code, args, err)
    assert "Traceback (most recent call last)" not in err, err  # (a program may well say "Traceback")
    doc = json.loads(out)  # exactly one document: json.loads fails on trailing data
    assert set(doc) >= {"version", "variables", "printed", "checks", "backward", "error"}
    if code in (2, 3):
        assert doc["error"] is not None and doc["error"]["kind"] != "internal", doc["error"]
    if code == 0:
        assert doc["error"] is None
    return code, doc


# -- programs from the grammar ---------------------------------------------------------------------
# Each construct of grammar/gradcli.lark: statements (assignment, unpacking, augmented assignment to a
# name or an attribute, expression, print, assert with a message, del, with blocks nested two deep,
# several on a line with ";", comments, backslash continuations) and expressions (every operator and
# comparison, unary signs, calls with keywords, methods, attribute chains, subscripts with slices,
# None, ... and lists, list, tuple and dict literals, lambdas, strings with escapes, numbers of every
# form); `with EXPR as NAME:` blocks.

NAMES = ["x", "w", "y", "z"]
FUNCS = sorted(FUNCTIONS)
METHODS = ["sum", "mean", "exp", "t", "reshape", "unsqueeze", "detach", "backward", "retain_grad", "zero_",
           "register_hook", "requires_grad_", "add_", "mul_", "grad", "grad_fn", "data", "shape", "T", "is_leaf",
           "requires_grad", "item", "size", "numel", "to", "clone", "softmax", "max", "norm", "expand"]
ATTR_CHAINS = [".grad_fn", ".grad_fn.next_functions", ".grad_fn.next_functions[0][0]", ".grad_fn.name()",
               ".grad_fn.next_functions[0][0].variable", ".data", ".grad", ".T", ".shape[0]", ".dtype",
               ".dtype.is_floating_point", ".device", ".requires_grad", ".is_leaf"]
KEYWORDS = ["dim=0", "dim=-1", "keepdim=True", "requires_grad=True", "retain_graph=True", "create_graph=True",
            "dtype=float64", "dtype=long", "alpha=2", "p=2", "correction=0", "min=0", "max=1.", "gradient=x",
            "inputs=[x]", "allow_unused=True", "sep=', '"]
numbers = st.one_of(
    st.integers(-3, 5).map(str),
    st.sampled_from(["0", "0.5", "1e3", "2.", ".25", "1_000", "1e-300", "1e308", "3.14159", "0.0", "1E+2",
                     "1_0.5_0"]))
strings = st.sampled_from(['"s"', "'single'", r'"esc\n\t\\ \"q\""', r"'\x41\u00e9'", '""', r'"\0"',
                           '"__import__(\'os\')"', r'"\U0001F600"'])
subscripts = st.sampled_from(["0", "-1", ":", "1:", ":1", "::2", "::-1", "0:2:1", "None", "...", "[0, 1]", "0, 1",
                              "..., None", "None, :", "x > 0", "[True, False]", "[[0], [1]]", "1, ..."])


def exprs():
    atoms = st.one_of(st.sampled_from(NAMES), numbers, strings,
                      st.sampled_from(["True", "False", "None", "...", "inf", "nan", "pi", "float64"]))

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "@", "**", "<", "<=", ">", ">=", "==", "!="]),
                      inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(inner, st.sampled_from(["+", "*", "**"]), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
            st.tuples(st.sampled_from(["-", "+", "--", "-+"]), inner).map("".join),
            st.tuples(st.sampled_from(FUNCS), st.lists(inner, max_size=3), st.lists(st.sampled_from(KEYWORDS),
                      max_size=2, unique_by=lambda k: k.split("=")[0]))
              .map(lambda t: f"{t[0]}({', '.join(t[1] + t[2])})"),
            st.tuples(inner, st.sampled_from(METHODS)).map(lambda t: f"({t[0]}).{t[1]}"),
            st.tuples(inner, st.sampled_from(METHODS), st.lists(inner, max_size=2),
                      st.lists(st.sampled_from(KEYWORDS), max_size=1))
              .map(lambda t: f"({t[0]}).{t[1]}({', '.join(t[2] + t[3])})"),
            st.tuples(inner, st.sampled_from(ATTR_CHAINS)).map(lambda t: f"({t[0]}){t[1]}"),
            st.tuples(inner, subscripts).map(lambda t: f"({t[0]})[{t[1]}]"),
            st.tuples(st.sampled_from(["g", "x", "print"]), inner).map(lambda t: f"(lambda {t[0]}: {t[1]})"),
            st.lists(inner, max_size=3).map(lambda items: f"[{', '.join(items)}]"),
            st.lists(inner, max_size=3).map(lambda items: f"({', '.join(items)}{',' if len(items) == 1 else ''})"),
            st.tuples(inner, st.sampled_from(KEYWORDS)).map(lambda t: f"ones(2, {t[1]}) * {t[0]}"),
            # the PyTorch spellings: boolean logic, conditionals, membership, comprehensions, f-strings
            st.tuples(inner, st.sampled_from(["and", "or", "%", "//", "in", "not in", "is", "is not"]), inner)
              .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map(lambda v: f"(not {v})"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
            st.tuples(inner, st.sampled_from(["range(3)", "x", "[1, 2]", "w", "enumerate(x)", "zip(x, w)"]),
                      st.sampled_from(["", " if i", " if i > 0"]))
              .map(lambda t: f"[{t[0]} for i in {t[1]}{t[2]}]"),
            st.tuples(inner, st.sampled_from(["", ":.4f", "!r", ":>8", ":d", ":{x}"])).map(lambda t: f"f'v={{{t[0]}{t[1]}}}'"),
            st.tuples(st.sampled_from(['"%.3f"', '"%d %s"', '"{} {}".format']), inner).map(lambda t: f"{t[0]} % ({t[1]})"
                                                                                          if "%" in t[0] else f"{t[0]}({t[1]})"),
            st.tuples(st.sampled_from(["torch", "F", "t", "np", "math"]), st.sampled_from(FUNCS + ["pi", "float32", "sqrt"]),
                      st.lists(inner, max_size=2)).map(lambda t: f"{t[0]}.{t[1]}({', '.join(t[2])})"),
            st.tuples(inner, inner).map(lambda t: f"(lambda a, b=2: {t[0]})({t[1]})"),
            # dict literals, their subscripts and methods (keys may be unhashable: a clean error)
            st.lists(st.tuples(inner, inner), max_size=3)
              .map(lambda pairs: "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"),
            st.tuples(inner, inner, st.sampled_from(["[{k}]", ".get({k})", ".items()", ".keys()", ".values()",
                                                      ".pop({k})", "", ".get({k}, 0)"]))
              .map(lambda t: "{" + f"{t[0]}: {t[1]}" + "}" + t[2].format(k=t[0])),
        )
    return st.recursive(atoms, extend, max_leaves=10)


def statements():
    e = exprs()
    target = st.sampled_from(NAMES)
    simple = st.one_of(
        st.tuples(target, e).map(lambda t: f"{t[0]} = {t[1]}"),
        e, e.map(lambda v: f"print({v})"),
        st.tuples(e, st.sampled_from(["", ', "message"', ", x"])).map(lambda t: f"assert {t[0]}{t[1]}"),
        st.lists(target, min_size=1, max_size=2).map(lambda ns: "del " + ", ".join(ns)),
        st.tuples(target, target, e).map(lambda t: f"{t[0]}, {t[1]} = {t[2]}"),
        st.tuples(target, e).map(lambda t: f"{t[0]}, = {t[1]}"),
        st.tuples(target, st.sampled_from(["", ".data", ".grad"]), st.sampled_from(["+=", "-=", "*=", "/="]), e)
          .map(lambda t: f"{t[0]}{t[1]} {t[2]} {t[3]}"),
        st.tuples(target, e).map(lambda t: f"{t[0]}.backward({t[1]})"),
        st.tuples(target, e).map(lambda t: f"{t[0]} = grad({t[1]}, [x], allow_unused=True)"),
    )
    line = st.one_of(
        simple, simple,
        st.lists(simple, min_size=2, max_size=3).map("; ".join),
        st.tuples(simple, st.sampled_from(["  # comment", "#", " ;"])).map("".join),
        simple.map(lambda v: v.replace(" = ", " = \\\n    ", 1)),
    )
    contexts = st.sampled_from(["no_grad()", "enable_grad()", "set_grad_enabled(False)", "set_grad_enabled(True)",
                                "x", "1"])
    block = st.tuples(contexts, st.sampled_from(["", " as g", " as x"]), st.lists(line, min_size=1, max_size=3)) \
        .map(lambda t: f"with {t[0]}{t[1]}:\n" + "\n".join("    " + s for s in t[2]))
    nested = st.tuples(contexts, contexts, st.lists(line, min_size=1, max_size=2), line) \
        .map(lambda t: f"with {t[0]}:\n    with {t[1]}:\n" + "\n".join("        " + s for s in t[2]) + f"\n    {t[3]}")
    control = st.one_of(
        st.tuples(e, st.lists(line, min_size=1, max_size=2), st.lists(line, max_size=2))
          .map(lambda t: f"if {t[0]}:\n" + "\n".join("    " + s for s in t[1])
               + ("\nelif x is None:\n    pass\nelse:\n" + "\n".join("    " + s for s in t[2]) if t[2] else "")),
        st.tuples(st.sampled_from(["i", "i, j"]), st.sampled_from(["range(3)", "x", "w", "enumerate(w)", "zip(x, w)",
                                                                   "[x, w]", "e"]), st.lists(line, min_size=1, max_size=2),
                  st.sampled_from(["", "    break", "    continue", "    if i: break"]))
          .map(lambda t: f"for {t[0]} in {t[1]}:\n" + "\n".join("    " + s for s in t[2]) + ("\n" + t[3] if t[3] else "")),
        st.tuples(e, line).map(lambda t: f"n = 0\nwhile {t[0]}:\n    n += 1\n    {t[1]}\n    if n > 3:\n        break"),
        st.tuples(st.sampled_from(["", "@torch.no_grad()\n", "@no_grad()\n", "@x\n"]), e, e)
          .map(lambda t: f"import torch\n{t[0]}def f(a, b=1):\n    return {t[1]}\nz = f({t[2]}) + f(x, b=2)"),
        st.sampled_from(["import torch", "import torch as t", "import torch.nn.functional as F", "import numpy as np",
                         "import math", "from torch import ones, mean as m", "from torch.autograd import grad, backward",
                         "import os", "from torch import nn", "import torch.optim as optim", "from torch import *",
                         "def f(n):\n    return f(n)\nf(1)", "while True:\n    pass", "x.grad = None",
                         "x.requires_grad = False", "l = [1]\nl[0] += 2\nl.append(x)"]),
    )
    return st.one_of(line, line, line, block, nested, control, control)


programs = st.lists(statements(), min_size=1, max_size=6).map("\n".join)
DECLS = ["-g", "x=ones(2, 2)", "-g", "w=tensor([1., 2.])", "-l", "y=zeros(2)"]
COMMANDS = st.sampled_from(["eval", "eval", "eval", "check", "graph"])


@FUZZ
@given(program=programs, command=COMMANDS)
def test_generated_programs(program, command):
    assert_contract([command, program, *DECLS])


# Well-typed programs reach deeper: every value is a (2, 2) matrix, a (2,) vector or a scalar built
# from the declared leaves, so the ops, backward, grad, hooks, no_grad and in-place updates all run
# and the output (tables, JSON, graphs, gradient checks) is drawn for real.

def typed_exprs():
    mats = st.deferred(lambda: st.one_of(
        st.sampled_from(["x", "x.T", "x.detach()", "ones(2, 2)", "x2"]),
        st.tuples(st.sampled_from(["exp", "sin", "tanh", "sigmoid", "relu", "abs", "neg", "square", "cos",
                                   "log1p(abs({}))", "sqrt(abs({}) + 1)", "clamp({}, min=-0.5)",
                                   "softmax({}, 1)", "log_softmax({}, 0)", "{}.t()", "{}.clone()",
                                   "{}.reshape(4).reshape(2, 2)", "{}[[1, 0]]", "{}[:, :]", "{}[..., None][:, :, 0]",
                                   "({} * 2)", "({} ** 2)", "(-{})", "({} / 3)", "{}.unsqueeze(0)[0]"]), mats)
          .map(lambda t: t[0].format(t[1]) if "{}" in t[0] else f"{t[0]}({t[1]})"),
        st.tuples(mats, st.sampled_from(["+", "-", "*", "/"]), st.one_of(mats, vecs)).map(lambda t: f"({' '.join(t)})"),
        st.tuples(mats, mats).map(lambda t: f"({t[0]} @ {t[1]})"),
        st.tuples(mats, mats).map(lambda t: f"where({t[0]} > 0, {t[0]}, {t[1]})"),
        st.tuples(st.sampled_from(["maximum", "minimum", "mm"]), mats, mats).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        st.tuples(vecs, vecs).map(lambda t: f"stack([{t[0]}, {t[1]}])"),
        st.tuples(vecs, vecs).map(lambda t: f"outer({t[0]}, {t[1]})"),
    ))
    vecs = st.deferred(lambda: st.one_of(
        st.sampled_from(["w", "w.detach()", "tensor([0.5, -1.])", "w2"]),
        st.tuples(st.sampled_from(["sum({}, 0)", "mean({}, dim=1)", "amax({}, 1)", "{}[0]", "{}[:, 1]",
                                   "logsumexp({}, 1)", "norm({}, dim=0)", "prod({}, 1)", "var({}, 0)", "{}.max(1).values",
                                   "mv({}, w)", "({} @ w)"]), mats).map(lambda t: t[0].format(t[1])),
        st.tuples(st.sampled_from(["exp", "tanh", "relu", "reciprocal({} + 3)", "({} * w)", "({} - 1)", "({} + w)"]),
                  vecs).map(lambda t: t[0].format(t[1]) if "{}" in t[0] else f"{t[0]}({t[1]})"),
    ))
    scalars = st.one_of(
        st.tuples(st.sampled_from(["sum", "mean", "norm", "amax", "std", "logsumexp({}.reshape(-1), 0)",
                                   "({}.sum() * 0.5)", "{}.pow(2).sum()", "({}.mean() ** 2)"]), st.one_of(mats, vecs))
          .map(lambda t: t[0].format(t[1]) if "{}" in t[0] else f"{t[0]}({t[1]})"),
        st.tuples(vecs, vecs).map(lambda t: f"dot({t[0]}, {t[1]})"),
    )
    return mats, vecs, scalars


@st.composite
def typed_programs(draw):
    mats, vecs, scalars = typed_exprs()
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["mat", "vec", "scalar", "backward", "grad", "hook", "no_grad", "update",
                                     "retain", "print", "assert"]))
        if kind == "mat":
            lines.append(f"x2 = {draw(mats)}")
        elif kind == "vec":
            lines.append(f"w2 = {draw(vecs)}")
        elif kind == "scalar":
            lines.append(f"s = {draw(scalars)}")
        elif kind == "backward":
            lines.append(f"({draw(scalars)}).backward(retain_graph={draw(st.booleans())})")
        elif kind == "grad":
            lines.append(f"g, = grad({draw(scalars)}, [x], create_graph={draw(st.booleans())}, allow_unused=True)")
        elif kind == "hook":
            lines.append(f"h = x.register_hook(lambda g: g * {draw(st.sampled_from(['2', '0', 'nan', '-1']))})")
        elif kind == "no_grad":
            lines.append(f"with no_grad():\n    x2 = {draw(mats)}\n    w.add_(0.1)")
        elif kind == "update":
            lines.append(draw(st.sampled_from(["x.data.sub_(0.1 * ones(2, 2))", "x.grad.zero_()", "w.data.mul_(2)",
                                               "x.requires_grad_(True)", "del x2", "h.remove()"])))
        elif kind == "retain":
            lines.append("x2 = x * 2\nx2.retain_grad()")
        elif kind == "print":
            lines.append(f"print({draw(st.one_of(mats, vecs, scalars))}, x.grad, w.grad)")
        else:
            lines.append(f"assert allclose({draw(vecs)}, {draw(vecs)}, atol=10.), 'close enough'")
    lines.append(draw(st.one_of(scalars, mats)))
    return "\n".join(lines)


TYPED_DECLS = ["-g", "x=tensor([[0.5, -1.], [2., 0.25]])", "-g", "w=tensor([1., -2.])", "-l", "x2=ones(2, 2)",
               "-l", "w2=zeros(2)"]


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(program=typed_programs(), command=COMMANDS, anomaly=st.booleans())
def test_well_typed_programs(program, command, anomaly):
    code, doc = assert_contract([command, program, *TYPED_DECLS, *(["--detect-anomaly"] if anomaly else [])])
    if doc["error"] is not None:  # well-typed and well-shaped: x.grad may be None, h not yet defined...
        assert doc["error"]["kind"] in ("autograd", "check", "type", "name"), (program, doc["error"])


HUGE = ["9" * 400, "9" * 5000, "1e999", "0." + "0" * 300 + "1", "10**10**10", "ones(10**9)", "2**64", "(2**64)**64",
        "ones(10**5, 10**5)", "arange(10**12)", "x.expand(10**6, 2, 2)", "-" * 5000 + "1", "(" * 3000 + "1" + ")" * 3000,
        "[" * 2000 + "]" * 2000, "x" + ".T" * 5000, "x" + "[0]" * 300, "'" + "a" * 20000 + "'", "f" * 10000]


@st.composite
def mutated(draw):
    text = draw(programs)
    tokens = text.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").replace(".", " . ").split(" ")
    for _ in range(draw(st.integers(1, 4))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["delete", "swap", "duplicate", "insert", "char", "huge", "nest"]))
        if op == "delete":
            del tokens[i]
        elif op == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "duplicate":
            tokens.insert(i, tokens[i] * draw(st.integers(1, 3)))
        elif op == "insert":
            tokens.insert(i, draw(st.sampled_from(["(", ")", "[", "]", ":", "lambda", "**", "=", "\n", "    ", "\t",
                                                  "#", '"', "\\", "__class__", ".", ",", "with", "@", ";", "\r",
                                                  "\n    ", "\n\t", "import", "...", "'", "\\\n", "\x0c", "+="])))
        elif op == "char":  # one arbitrary character, anywhere (control characters, surrogates, NUL...)
            word = tokens[i]
            k = draw(st.integers(0, len(word)))
            tokens[i] = word[:k] + draw(st.characters(codec=None)) + word[k:]
        elif op == "huge":
            tokens.insert(i, draw(st.sampled_from(HUGE)))
        else:  # wrap one token in deep nesting
            depth = draw(st.integers(1, 3000))
            kind = draw(st.sampled_from(["()", "[]", "-", "neg()", "(lambda g: )(1)"]))
            if kind == "-":
                tokens[i] = "-" * depth + tokens[i]
            else:
                head, tail = kind.split(")", 1) if kind.endswith("(1)") else (kind[:-1], kind[-1])
                tokens[i] = head * depth + tokens[i] + (")" + tail if kind.endswith("(1)") else tail) * depth
    return " ".join(tokens)


@FUZZ
@given(program=mutated(), command=COMMANDS)
def test_mutated_programs(program, command):
    assert_contract([command, program, *DECLS])


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(program=programs, data=st.data())
def test_corrupted_bytes(program, data):
    # The program as UTF-8 with bytes flipped, dropped or inserted, read from a file: either it still
    # decodes (and runs or fails cleanly) or it is "not UTF-8 text" (exit 2).
    raw = bytearray(program.encode())
    for _ in range(data.draw(st.integers(1, 5))):
        k = data.draw(st.integers(0, max(0, len(raw) - 1)))
        byte = data.draw(st.integers(0, 255))
        op = data.draw(st.sampled_from(["set", "insert", "delete"]))
        if op == "set" and raw:
            raw[k] = byte
        elif op == "insert":
            raw.insert(k, byte)
        elif raw:
            del raw[k]
    with tempfile.NamedTemporaryFile("wb", suffix=".grad", delete=False) as fh:
        fh.write(bytes(raw))
    try:
        code, doc = assert_contract(["eval", "-f", fh.name, *DECLS])
        try:
            bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            assert code == 2 and "is not UTF-8 text" in doc["error"]["message"]
    finally:
        os.unlink(fh.name)


@FUZZ
@given(text=st.text(max_size=200))
def test_random_text(text):
    assert_contract(["eval", text, *DECLS])


TOKENS = ["x", "w", "1", "2.5", "(", ")", "[", "]", ",", ":", ".", "+", "-", "*", "/", "**", "@", "=", "==", "lambda",
          "with", "no_grad", "print", "assert", "del", "sum", "grad", "backward", "\n", "    ", ";", "None", "...",
          '"a"', "#c", "requires_grad", "True", "__class__", "_data"]


@FUZZ
@given(soup=st.lists(st.sampled_from(TOKENS), max_size=40))
def test_token_soup(soup):
    assert_contract(["eval", " ".join(soup), *DECLS])


@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.binary(max_size=300))
def test_random_bytes_from_a_file(data):
    with tempfile.NamedTemporaryFile("wb", suffix=".grad", delete=False) as fh:
        fh.write(data)
    try:
        code, _ = assert_contract(["eval", "-f", fh.name])
        if b"\x00" in data:
            assert code == 2
    finally:
        os.unlink(fh.name)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(depth=st.integers(1, 20_000), kind=st.sampled_from(["(", "[", "-", "neg(", "f(", "lambda a: "]))
def test_deep_nesting(depth, kind):
    closing = {"(": ")", "[": "]", "-": "", "neg(": ")", "f(": ")", "lambda a: ": ""}[kind]
    assert_contract(["eval", kind * depth + "x" + closing * depth, *DECLS])


def test_values_nested_10000_deep_print_and_compare_without_recursion():
    deep = "[" * 10_000 + "]" * 10_000
    code, doc = assert_contract(["eval", f"print({deep}, ((1,),))\nassert False, {deep}", *DECLS])
    assert code == 1 and doc["printed"] == [deep + " ((1,),)"] and doc["checks"][0]["message"] == deep
    code, doc = assert_contract(["eval", f"a = {deep}\nb = {deep}\na == b", *DECLS])
    assert code == 3 and doc["error"]["message"].startswith("maximum recursion depth exceeded")


BAD_ARGUMENTS = ["None", "2.5", "True", "'s'", "[1, 2]", "(1, 2)", "lambda g: g", "...", "x.grad_fn", "[x, x]"]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_function_refuses_wrong_arguments_cleanly(name):
    # Numbers, None, lambdas, strings and lists where an op takes a tensor: a type or shape error (or a
    # result, where torch takes a number too), never an op reaching into them as if they were tensors.
    info = FUNCTIONS[name]
    params = [p for p in info.signature.split("(", 1)[1].rstrip(")").split(", ") if p and p != "*"]
    slots = min(len(params), 3)
    for position in range(slots):
        for bad in BAD_ARGUMENTS:
            args = ["x"] * slots
            args[position] = bad
            programs = [f"{name}({', '.join(args[:k])})" for k in range(position + 1, slots + 1)]
            if info.method and position > 0:
                programs.append(f"x.{name}({', '.join(args[1:])})")
            for program in programs:
                code, doc = assert_contract(["eval", program, *DECLS])
                if code == 2 and "must be Tensor" in doc["error"]["message"]:
                    assert doc["error"]["message"].startswith(f"{name}(): argument '"), doc["error"]


def test_wrong_argument_messages_are_torchs():
    for program, message in [("mean(2.5)", "mean(): argument 'input' (position 1) must be Tensor, not float"),
                             ("dot(x, [1, 2])", "dot(): argument 'tensor' (position 2) must be Tensor, not list"),
                             ("detach(None)", "detach(): argument 'input' (position 1) must be Tensor, not NoneType"),
                             ("clamp(lambda g: g, x)", "clamp(): argument 'input' (position 1) must be Tensor, not function"),
                             ("logical_and(x, None)", "logical_and(): argument 'other' (position 2) must be Tensor, not NoneType"),
                             ("sum(x * 2).backward(inputs=[1])",
                              "all inputs have to be Tensors or GradientEdges, but got int"),
                             ("sum(x * 2).backward(inputs=[])", "`inputs` argument to `backward()` cannot be empty.")]:
        code, doc = assert_contract(["eval", program, *DECLS])
        assert (code, doc["error"]["kind"], doc["error"]["message"]) == (2, "type", message)


def test_every_command_keeps_the_contract_in_a_real_process():
    bad = ["sum(x", "x.__class__", "ones(10**10)", "backward(x)", "\x01\x7f", "assert False"]
    for command in ("eval", "check", "graph"):
        for program in bad:
            proc = subprocess.run([sys.executable, "-m", "gradcli", command, program, "-g", "x=ones(2)", "--json"],
                                  capture_output=True, text=True, timeout=120)
            assert proc.returncode in (1, 2, 3), (command, program, proc.stderr)
            assert "Traceback" not in proc.stderr
            json.loads(proc.stdout)
