"""Hostile and random input never escapes the contract: for every input, the exit code is 0-3,
stderr has no traceback, stdout under --json is exactly one JSON document, and the run ends
within --timeout. Programs are built from the grammar's constructs by hypothesis, then mutated
(tokens deleted, swapped, duplicated; random bytes; huge literals; deep nesting)."""

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
from gradcli.function import FUNCTIONS

FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def run_json(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--json", "--timeout", "10", "--max-elements", "100000"])
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

NAMES = ["x", "w", "y", "z"]
FUNCS = sorted(FUNCTIONS)
METHODS = ["sum", "mean", "exp", "t", "reshape", "unsqueeze", "detach", "backward", "retain_grad", "zero_",
           "register_hook", "requires_grad_", "add_", "grad", "grad_fn", "data", "shape", "T", "is_leaf"]
numbers = st.one_of(st.integers(-3, 5).map(str), st.sampled_from(["0.5", "1e3", "2.", ".25", "1_000", "1e-300"]))


def exprs():
    atoms = st.one_of(st.sampled_from(NAMES), numbers, st.sampled_from(["True", "False", "None", '"s"', "..."]))

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "@", "**", "<", "==", ">="]), inner)
              .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(st.sampled_from(["-", "+"]), inner).map(lambda t: f"{t[0]}{t[1]}"),
            st.tuples(st.sampled_from(FUNCS), st.lists(inner, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
            st.tuples(inner, st.sampled_from(METHODS)).map(lambda t: f"{t[0]}.{t[1]}"),
            st.tuples(inner, st.sampled_from(METHODS), st.lists(inner, max_size=2))
              .map(lambda t: f"{t[0]}.{t[1]}({', '.join(t[2])})"),
            st.tuples(inner, st.sampled_from(["0", "-1", ":", "1:", "None", "...", "[0, 1]", "0, 1"]))
              .map(lambda t: f"{t[0]}[{t[1]}]"),
            inner.map(lambda e: f"lambda g: {e}"),
            st.lists(inner, max_size=3).map(lambda items: f"[{', '.join(items)}]"),
            st.tuples(inner, st.sampled_from(["requires_grad=True", "dim=0", "keepdim=True", "retain_graph=True"]))
              .map(lambda t: f"ones(2, {t[1]}) * {t[0]}"),
        )
    return st.recursive(atoms, extend, max_leaves=12)


def statements():
    e = exprs()
    simple = st.one_of(
        st.tuples(st.sampled_from(NAMES), e).map(lambda t: f"{t[0]} = {t[1]}"),
        e, e.map(lambda v: f"print({v})"), e.map(lambda v: f"assert {v}"),
        st.sampled_from(NAMES).map(lambda n: f"del {n}"),
        st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES), e).map(lambda t: f"{t[0]}, {t[1]} = {t[2]}"),
    )
    block = st.tuples(st.sampled_from(["no_grad()", "enable_grad()", "set_grad_enabled(False)"]),
                      st.lists(simple, min_size=1, max_size=3)) \
        .map(lambda t: f"with {t[0]}:\n" + "\n".join("    " + s for s in t[1]))
    return st.one_of(simple, simple, block)


programs = st.lists(statements(), min_size=1, max_size=6).map("\n".join)
DECLS = ["-g", "x=ones(2, 2)", "-g", "w=tensor([1., 2.])", "-l", "y=zeros(2)"]


@FUZZ
@given(program=programs)
def test_generated_programs(program):
    assert_contract(["eval", program, *DECLS])


@st.composite
def mutated(draw):
    tokens = draw(programs).replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split(" ")
    for _ in range(draw(st.integers(1, 4))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["delete", "swap", "duplicate", "insert", "huge"]))
        if op == "delete":
            del tokens[i]
        elif op == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "duplicate":
            tokens.insert(i, tokens[i])
        elif op == "insert":
            tokens.insert(i, draw(st.sampled_from(["(", ")", "[", "]", ":", "lambda", "**", "=", "\n", "    ", "\t",
                                                  "#", '"', "\\", "__class__", ".", ",", "with", "@"])))
        else:
            tokens.insert(i, draw(st.sampled_from(["9" * 400, "1e999", "0." + "0" * 300 + "1", "10**10**10",
                                                  "ones(10**9)", "2**64"])))
    return " ".join(tokens)


@FUZZ
@given(program=mutated())
def test_mutated_programs(program):
    assert_contract(["eval", program, *DECLS])


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
                             ("sum(x * 2).backward(inputs=[])", "'inputs' argument to backward() cannot be empty.")]:
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
