"""Resource limits: checked before allocation, exit 3 (tensors, time) or 2 (program size), with
messages that say how to raise them."""

import contextlib
import io
import json
import time

import pytest

from gradcli.cli import main


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["eval", *args, "--json"])
    return code, json.loads(out.getvalue()), err.getvalue()


BIG = [
    "ones(100000, 100000)", "zeros(10**6, 10**6)", "full((10**5, 10**5), 1.0)", "rand(10**12)", "randn(10**6, 10**6)",
    "eye(10**6)", "arange(1e12)", "arange(0, 10**12, 1)", "linspace(0, 1, 10**12)", "tensor(1.).expand(10**6, 10**6)",
    "ones(10**6, 1) + ones(1, 10**6)", "ones(10**6, 1) * ones(10**6)", "maximum(ones(10**6, 1), ones(1, 10**6))",
    "where(ones(10**6, 1) > 0, ones(1, 10**6), 0.)", "outer(ones(10**6), ones(10**6))",
    "ones(10**6, 1) @ ones(1, 10**6)", "mm(ones(10**6, 1), ones(1, 10**6))", "cat([ones(10**6), ones(10**6)])",
    "stack([ones(10**6), ones(10**6)])", "ones_like(ones(1).expand(10**6, 10**6))", "ones(2).reshape(10**6, -1)",
    "logical_and(ones(10**6, 1) > 0, ones(1, 10**6) > 0)", "logical_or(ones(10**6, 1) > 0, ones(1, 10**6) > 0)",
    "ones(10**6, 1) == ones(1, 10**6)", "ones(10**6, 1) < ones(10**6)", "clamp(ones(10**6, 1), ones(1, 10**6))",
    "clamp(ones(10**6, 1), max=ones(1, 10**6))", "pow(ones(10**6, 1), ones(1, 10**6))",
    "allclose(ones(10**6, 1), ones(1, 10**6))", "ones(1, 1000)[zeros(1000, 1000, dtype=long)]",
    "ones(2, 1000)[zeros(1000, 2, dtype=long)]", "ones(1000, 2)[:, zeros(1000, 2, dtype=long)]",
    "x = ones(2, 1000, requires_grad=True)\ny = x[ones(2, 1000) > 0].reshape(2, 1000)[zeros(1000, 2, dtype=long)]",
    "ones(10**6, 10**6, 0)", "zeros(0).reshape(10**6, 10**6, 0)", "zeros(1, 1, 0).expand(10**6, 10**6, 0)",
    "arange(0, 1, 1e-300)", "ones(10**30)", "eye(10**30)", "ones(1000, 1000, 1) @ ones(1000, 1, 1000)",
    "matmul(ones(2000, 1, 1, 1), ones(1000, 1, 1))", "cat([ones(500000), ones(500001)])",
]


@pytest.mark.parametrize("program", BIG)
def test_large_results_are_refused_before_allocation(program):
    code, doc, err = run(program, "--max-elements", "1000000")
    assert (code, doc["error"]["kind"]) in ((3, "limit"), (2, "shape")), doc["error"]
    if code == 3:
        assert "over the limit of 1,000,000" in doc["error"]["message"]
        assert "raise it with --max-elements N" in err


def test_limit_messages_stay_short_for_absurd_shapes():
    code, doc, _ = run("ones(10**40, 10**40)")
    assert code == 3
    assert doc["error"]["message"] == ("a tensor of shape (<41-digit number>, <41-digit number>) has about 10**80 "
                                       "elements, over the limit of 268,435,456")
    code, doc, _ = run("ones(10**6, 10**6, 0)")
    assert doc["error"]["message"] == ("a tensor of shape (1000000, 1000000, 0) has no elements, but its other "
                                       "dimensions multiply to 1,000,000,000,000, over the limit of 268,435,456")


def test_an_empty_tensor_with_a_modest_shape_is_fine():
    code, doc, _ = run("ones(1000, 0)")
    assert code == 0 and doc["variables"][0]["shape"] == [1000, 0]


def test_advanced_indexing_within_the_limit_still_works():
    code, doc, _ = run("y = ones(3, 4)[[[0], [2], [1]], [1, 3, 0, 2]]", "--max-elements", "12")
    assert code == 0 and doc["variables"][0]["shape"] == [3, 4]
    code, doc, _ = run("y = ones(3, 4)[[[0], [2], [1], [0]], [1, 3, 0, 2]]", "--max-elements", "12")
    assert code == 3 and "shape (4, 4) has 16 elements" in doc["error"]["message"]
    code, doc, _ = run("y = ones(3, 4)[ones(3, 4) > 0]", "--max-elements", "12")
    assert code == 0 and doc["variables"][0]["shape"] == [12]


def test_default_limit_and_raising_it():
    code, doc, _ = run("ones(2**14, 2**14 + 1)")  # just over 2**28
    assert code == 3 and "over the limit of 268,435,456" in doc["error"]["message"]
    code, doc, _ = run("ones(1000, 1001)", "--max-elements", "1000000")
    assert code == 3
    code, doc, _ = run("ones(1000, 1001)", "--max-elements", "2000000")
    assert code == 0


def test_timeout_stops_a_long_program():
    program = "x = ones(200, 200, requires_grad=True)\n" + "y = (x @ x).tanh().sum()\n" * 200_000
    start = time.perf_counter()
    code, doc, err = run(program, "--timeout", "1", "--max-statements", "10000000")
    assert code == 3 and doc["error"]["kind"] == "limit"
    assert "ran longer than --timeout 1 s" in doc["error"]["message"]
    assert time.perf_counter() - start < 60  # it stopped instead of running to the end


def test_timeout_keeps_the_programs_output():
    # Once the alarm has stopped the program, the output is written in full: the variables so far and
    # the line that was running (a later tick of the alarm used to cut the JSON down to a bare error).
    # (--timeout counts the parse too: 3 s leaves a loaded machine time to parse and make x, and the
    # 2,000 products, ~50 ms each, still run far past it)
    program = "x = ones(600, 600, requires_grad=True)\n" + "y = (x @ x @ x).sum()\n" * 2_000
    code, doc, err = run(program, "--timeout", "3")
    assert code == 3 and doc["error"]["kind"] == "limit"
    assert [v["name"] for v in doc["variables"]] == ["x", "y"][:len(doc["variables"])]
    assert doc["variables"] and doc["error"]["line"] >= 2
    assert "ran longer than --timeout 3 s" in err


def test_program_size_and_statement_caps():
    code, doc, err = run("x = 1\n" * 11, "--max-statements", "10")
    # counted while parsing: refused at the 11th, however long the rest of the program is
    assert code == 2 and doc["error"]["message"] == "the program has more than 10 statements, over the limit of 10"
    assert "--max-statements" in err
    code, doc, err = run("with no_grad():\n    a = 1\n    b = 2\nc = 3", "--max-statements", "3")
    assert code == 2  # statements inside with blocks count
    code, doc, err = run("x = 1", "--max-program-size", "3")
    assert code == 2 and "program size limit of 3 bytes" in doc["error"]["message"]
    assert "--max-program-size" in err
    code, _, _ = run("x = 1", "--max-statements", "0")
    assert code == 2
