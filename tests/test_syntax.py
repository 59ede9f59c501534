"""The .grad language front end (SPEC §2 the language, §5 limits): what parses, into what.

Trees are compared through ``shape``, a compact nested-tuple view (for the shallow trees
written here only; deep trees are checked with ``walk``/``postorder``, which never recurse):

    Name -> its id          Num -> its value        Str -> ("str", value)
    Const -> ("const", v)   EllipsisLit -> "..."
    BinOp/Compare -> (op, left, right)              UnaryOp -> (op, operand)
    Call -> ("call", func, [args], [(kw, value)])   Attribute -> (".", value, attr)
    Subscript -> ("[]", value, [index])             Slice -> ("slice", start, stop, step)
    ListExpr -> ("list", [...])  TupleExpr -> ("tuple", [...])  Lambda -> ("lambda", p, body)
    Assign -> ("=", [targets], value, unpack)       AugAssign -> ("+=", target, value)
    ExprStmt -> its value   Assert -> ("assert", test, msg)   With -> ("with", ctx, [body])
    Del -> ("del", [names])
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from gradcli.lang import parser as syntax
from gradcli.errors import GradSyntaxError
from gradcli.lang.ast import (
    Assert, Assign, Attribute, AugAssign, BinOp, Call, Compare, Const, Del, EllipsisLit, Expr,
    ExprStmt, Lambda, ListExpr, Name, Node, Num, Program, Slice, Str, Subscript, TupleExpr,
    UnaryOp, With, postorder, walk,
)
from gradcli.lang.parser import parse
from gradcli.lang.syntax_errors import format_error_context


# ------------------------------------------------------------------------------ helpers

def shape(node):
    """Nested-tuple view of a SHALLOW tree (recursive: only for the small trees in this file)."""
    if isinstance(node, list):
        return [shape(n) for n in node]
    if node is None:
        return None
    if isinstance(node, Name):
        return node.id
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Str):
        return ("str", node.value)
    if isinstance(node, Const):
        return ("const", node.value)
    if isinstance(node, EllipsisLit):
        return "..."
    if isinstance(node, (BinOp, Compare)):
        return (node.op, shape(node.left), shape(node.right))
    if isinstance(node, UnaryOp):
        return (node.op, shape(node.operand))
    if isinstance(node, Call):
        return ("call", shape(node.func), shape(node.args), [(k, shape(v)) for k, v in node.kwargs])
    if isinstance(node, Attribute):
        return (".", shape(node.value), node.attr)
    if isinstance(node, Subscript):
        return ("[]", shape(node.value), shape(node.index))
    if isinstance(node, Slice):
        return ("slice", shape(node.start), shape(node.stop), shape(node.step))
    if isinstance(node, ListExpr):
        return ("list", shape(node.items))
    if isinstance(node, TupleExpr):
        return ("tuple", shape(node.items))
    if isinstance(node, Lambda):
        names = [p.name for p in node.params]
        return ("lambda", names[0] if len(names) == 1 else names, shape(node.body))
    if isinstance(node, Assign):
        return ("=", node.targets, shape(node.value), node.unpack)
    if isinstance(node, AugAssign):
        return (node.op + "=", shape(node.target), shape(node.value))
    if isinstance(node, ExprStmt):
        return shape(node.value)
    if isinstance(node, Assert):
        return ("assert", shape(node.test), shape(node.msg))
    if isinstance(node, With):
        return ("with", shape(node.context), shape(node.body))
    if isinstance(node, Del):
        return ("del", node.names)
    raise AssertionError(f"unexpected node {node!r}")


def body(source: str) -> list:
    return shape(parse(source).body)


def stmt(source: str):
    (only,) = parse(source).body
    return shape(only)


def expr(source: str):
    (only,) = parse(source).body
    assert isinstance(only, ExprStmt)
    return shape(only.value)


def error(source: str) -> GradSyntaxError:
    with pytest.raises(GradSyntaxError) as info:
        parse(source)
    return info.value


# ------------------------------------------------------------------------------ statements

@pytest.mark.parametrize("source, expected", [
    ("a = 1", ("=", ["a"], 1, False)),
    ("a, b = t", ("=", ["a", "b"], "t", True)),
    ("gx, = grad(y, [x])", ("=", ["gx"], ("call", "grad", ["y", ("list", ["x"])], []), True)),
    ("(a, b) = t", ("=", ["a", "b"], "t", True)),
    ("a, b = b, a", ("=", ["a", "b"], ("tuple", ["b", "a"]), True)),
    ("t = 1, 2", ("=", ["t"], ("tuple", [1, 2]), False)),
    ("a += 1", ("+=", "a", 1)),
    ("a -= b", ("-=", "a", "b")),
    ("a *= 2", ("*=", "a", 2)),
    ("a /= 2", ("/=", "a", 2)),
    ("w.data -= 0.1 * w.grad", ("-=", (".", "w", "data"), ("*", 0.1, (".", "w", "grad")))),
    ("print(x, y)", ("call", "print", ["x", "y"], [])),
    ("y.backward()", ("call", (".", "y", "backward"), [], [])),
    ("x", "x"),
    ("1, 2", ("tuple", [1, 2])),
    ("assert ok", ("assert", "ok", None)),
    ('assert allclose(g, 0.25), "even"',
     ("assert", ("call", "allclose", ["g", 0.25], []), ("str", "even"))),
    ("del a", ("del", ["a"])),
    ("del a, b", ("del", ["a", "b"])),
    ("del a,", ("del", ["a"])),
    ("with no_grad(): z = w * 2", ("with", ("call", "no_grad", [], []), [("=", ["z"], ("*", "w", 2), False)])),
])
def test_statement_forms(source, expected):
    assert stmt(source) == expected


def test_the_spec_example_parses():
    program = parse(
        "x = ones(2, 2)                          # a leaf\n"
        "temp = zeros(2, 2, requires_grad=True)  # a leaf that requires grad\n"
        "w = tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "y = x + temp + 2\n"
        "y = y.mean()\n"
        "y.backward()\n"
        "print(temp.grad, y.grad_fn, y.grad_fn.next_functions)\n"
        "temp.grad.zero_()\n"
        "w.data.sub_(0.1 * w.grad)\n"
        "h = w.register_hook(lambda g: g * 2)\n"
        "with no_grad():\n"
        "    z = w * 2\n"
        "gx, = grad(y, [temp], create_graph=True)   # torch.autograd.grad\n"
        'assert allclose(temp.grad, 0.25), "mean spreads the gradient evenly"\n'
    )
    kinds = [type(s).__name__ for s in program.body]
    assert kinds == ["Assign"] * 5 + ["ExprStmt"] * 4 + ["Assign", "With", "Assign", "Assert"]
    assert shape(program.body[1]) == ("=", ["temp"], ("call", "zeros", [2, 2], [("requires_grad", ("const", True))]), False)
    assert shape(program.body[9]) == ("=", ["h"], ("call", (".", "w", "register_hook"), [("lambda", "g", ("*", "g", 2))], []), False)
    assert shape(program.body[11]) == ("=", ["gx"], ("call", "grad", ["y", ("list", ["temp"])], [("create_graph", ("const", True))]), True)
    assert program.body[12].end_line == 14 and program.filename == "<program>"


def test_assign_keeps_target_nodes_with_positions():
    (a,) = parse("a, bb = t").body
    assert [(n.id, n.line, n.column) for n in a.target_nodes] == [("a", 1, 1), ("bb", 1, 4)]
    (d,) = parse("del a, bb").body
    assert d.names == ["a", "bb"] and [n.column for n in d.targets] == [5, 8]


def test_empty_programs():
    for source in ["", "\n", "   \n\n", "# only a comment", "# a\n\n  # b\n"]:
        program = parse(source)
        assert isinstance(program, Program) and program.body == []
    assert parse("x", filename="f.grad").filename == "f.grad"
    assert parse("x").source == "x"


# ------------------------------------------------------------------------------ expressions

@pytest.mark.parametrize("source, expected", [
    ("1", 1), ("1_000", 1000), ("0", 0), ("1.", 1.0), (".5", 0.5), ("1.5", 1.5), ("1e-3", 0.001),
    ("2.5E+2", 250.0), ("1.e2", 100.0), ("True", ("const", True)), ("False", ("const", False)),
    ("None", ("const", None)), ("...", "..."),
    ("'a'", ("str", "a")), ('"b"', ("str", "b")), ("''", ("str", "")),
    (r"'a\nb\t\\\'\"'", ("str", "a\nb\t\\'\"")), (r'"\x41\u00e9\U0001F600\0"', ("str", "A\u00e9\U0001F600\0")),
    (r"'\q'", ("str", "\\q")), ('"it\'s"', ("str", "it's")),
    ("[]", ("list", [])), ("[1, 2]", ("list", [1, 2])), ("[1, 2,]", ("list", [1, 2])),
    ("[[1], [2]]", ("list", [("list", [1]), ("list", [2])])),
    ("()", ("tuple", [])), ("(a,)", ("tuple", ["a"])), ("(a, b)", ("tuple", ["a", "b"])),
    ("(a, b,)", ("tuple", ["a", "b"])), ("(a)", "a"), ("((a))", "a"),
    ("f()", ("call", "f", [], [])),
    ("f(x, dim=1, keepdim=True)", ("call", "f", ["x"], [("dim", 1), ("keepdim", ("const", True))])),
    ("f(x,)", ("call", "f", ["x"], [])), ("f(a=1,)", ("call", "f", [], [("a", 1)])),
    ("f(x == 1)", ("call", "f", [("==", "x", 1)], [])),
    ("f(g)(h)", ("call", ("call", "f", ["g"], []), ["h"], [])),
    ("x.grad.zero_()", ("call", (".", (".", "x", "grad"), "zero_"), [], [])),
    ("y.grad_fn.next_functions", (".", (".", "y", "grad_fn"), "next_functions")),
    ("x.T", (".", "x", "T")),
    ("x[0]", ("[]", "x", [0])),
    ("x[0,]", ("[]", "x", [0])),
    ("x[0, 1:3]", ("[]", "x", [0, ("slice", 1, 3, None)])),
    ("x[:, None]", ("[]", "x", [("slice", None, None, None), ("const", None)])),
    ("x[..., -1]", ("[]", "x", ["...", ("-", 1)])),
    ("x[::2]", ("[]", "x", [("slice", None, None, 2)])),
    ("x[1::]", ("[]", "x", [("slice", 1, None, None)])),
    ("x[:-1:]", ("[]", "x", [("slice", None, ("-", 1), None)])),
    ("x[a:b:c]", ("[]", "x", [("slice", "a", "b", "c")])),
    ("x[[0, 2]]", ("[]", "x", [("list", [0, 2])])),
    ("x[0][1]", ("[]", ("[]", "x", [0]), [1])),
    ("x[i].sum(dim=0)", ("call", (".", ("[]", "x", ["i"]), "sum"), [], [("dim", 0)])),
    ("lambda g: g * 2", ("lambda", "g", ("*", "g", 2))),
    ("lambda g: lambda h: g", ("lambda", "g", ("lambda", "h", "g"))),
    ("f(lambda g: g, x)", ("call", "f", [("lambda", "g", "g"), "x"], [])),
    ("a < b", ("<", "a", "b")), ("a <= b", ("<=", "a", "b")), ("a > b", (">", "a", "b")),
    ("a >= b", (">=", "a", "b")), ("a == b", ("==", "a", "b")), ("a != b", ("!=", "a", "b")),
    ("(a < b) == c", ("==", ("<", "a", "b"), "c")),
    ("ünïcode_näme", "ünïcode_näme"),
])
def test_expression_forms(source, expected):
    assert expr(source) == expected


@pytest.mark.parametrize("source, expected", [
    ("-x**2", ("-", ("**", "x", 2))),                 # ** binds tighter than a unary on its left
    ("2**-1", ("**", 2, ("-", 1))),                   # ... and its right operand may be unary
    ("a**b**c", ("**", "a", ("**", "b", "c"))),       # right-associative
    ("a-b-c", ("-", ("-", "a", "b"), "c")),           # left-associative
    ("a/b/c", ("/", ("/", "a", "b"), "c")),
    ("a@b*c", ("*", ("@", "a", "b"), "c")),           # * / @ share a level, left to right
    ("a*b@c", ("@", ("*", "a", "b"), "c")),
    ("a+b*c", ("+", "a", ("*", "b", "c"))),
    ("(a+b)*c", ("*", ("+", "a", "b"), "c")),
    ("-a*b", ("*", ("-", "a"), "b")),
    ("--a", ("-", ("-", "a"))),
    ("+-a", ("+", ("-", "a"))),
    ("-a.b", ("-", (".", "a", "b"))),                 # attributes bind tightest
    ("a**b.c", ("**", "a", (".", "b", "c"))),
    ("-x[0]**2", ("-", ("**", ("[]", "x", [0]), 2))),
    ("a + b < c * d", ("<", ("+", "a", "b"), ("*", "c", "d"))),
    ("lambda g: g + 1 < 2", ("lambda", "g", ("<", ("+", "g", 1), 2))),
])
def test_precedence_and_associativity(source, expected):
    assert expr(source) == expected


# ------------------------------------------------------------------------------ layout

def test_blocks_and_nesting():
    source = (
        "with no_grad():\n"
        "    a = 1\n"
        "\n"
        "    # a comment at another indent\n"
        "        # and another\n"
        "    with enable_grad():\n"
        "        b = 2\n"
        "        c = 3\n"
        "    d = 4\n"
        "e = 5\n"
    )
    assert body(source) == [
        ("with", ("call", "no_grad", [], []), [
            ("=", ["a"], 1, False),
            ("with", ("call", "enable_grad", [], []), [("=", ["b"], 2, False), ("=", ["c"], 3, False)]),
            ("=", ["d"], 4, False),
        ]),
        ("=", ["e"], 5, False),
    ]


def test_block_variants():
    # dedent by several levels at once, and at the end of the input without a newline
    assert body("with a():\n  with b():\n    x\ny") == [
        ("with", ("call", "a", [], []), [("with", ("call", "b", [], []), ["x"])]), "y"]
    assert body("with a():\n    x") == [("with", ("call", "a", [], []), ["x"])]
    # tabs indent too; the body may be statements separated by ';'
    assert body("with a():\n\tx; y\n\tz\n") == [("with", ("call", "a", [], []), ["x", "y", "z"])]
    # any expression parses as the context: the interpreter checks it
    assert stmt("with set_grad_enabled(False):\n    x") == (
        "with", ("call", "set_grad_enabled", [("const", False)], []), ["x"])


def test_separators_comments_and_line_endings():
    expected = [("=", ["a"], 1, False), ("=", ["b"], 2, False), "c"]
    for source in [
        "a = 1\nb = 2\nc",
        "a = 1; b = 2; c",
        "a = 1; b = 2;\nc;",
        "a = 1  # one\n\n\n# two\nb = 2   \nc\n",
        "a = 1\r\nb = 2\r\nc\r\n",           # CRLF
        "a = 1\rb = 2\rc",                   # lone CR, as Python
        "a = \\\n 1\nb = 2\nc",              # backslash continuation
        "\n\n# header\na = 1\n   \nb = 2\nc\n\n\n",
    ]:
        assert body(source) == expected, source


def test_newlines_inside_brackets_are_ignored():
    source = "y = f(a,   # first\n      b,\n\n  dim=1)\nz = [1,\n2]\n"
    assert body(source) == [("=", ["y"], ("call", "f", ["a", "b"], [("dim", 1)]), False),
                            ("=", ["z"], ("list", [1, 2]), False)]


# ------------------------------------------------------------------------------ positions

def test_node_positions():
    program = parse("x = 1\ny = (a +\n     b2) * f(c, k=d)\n")
    x, y = program.body
    assert (x.line, x.column, x.end_line, x.end_column) == (1, 1, 1, 6)
    mul = y.value
    assert isinstance(mul, BinOp) and mul.op == "*"
    assert (mul.line, mul.column, mul.end_line, mul.end_column) == (2, 6, 3, 21)
    add = mul.left
    assert (add.line, add.column, add.end_line, add.end_column) == (2, 6, 3, 8)
    call = mul.right
    assert (call.line, call.column, call.end_column) == (3, 12, 21)
    assert call.kwarg_positions == [(3, 17)]
    by_id = {n.id: (n.line, n.column) for n in walk(program) if isinstance(n, Name)}
    assert by_id == {"x": (1, 1), "y": (2, 1), "a": (2, 6), "b2": (3, 6), "f": (3, 12),
                     "c": (3, 14), "d": (3, 19)}
    assert (program.line, program.column, program.end_line) == (1, 1, 3)


def test_positions_of_prefix_and_bracketed_nodes():
    (s,) = parse("z = -x[1:2].y + [a] + (b,) + (lambda q: q)").body
    nodes = {type(n).__name__: n for n in walk(s)}
    assert (nodes["UnaryOp"].column, nodes["UnaryOp"].end_column) == (5, 14)
    assert (nodes["Subscript"].column, nodes["Subscript"].end_column) == (6, 12)
    assert (nodes["Slice"].column, nodes["Slice"].end_column) == (8, 11)
    attr = nodes["Attribute"]
    assert attr.end_column - len(attr.attr) == 13  # where the attribute name starts
    assert (nodes["ListExpr"].column, nodes["ListExpr"].end_column) == (17, 20)
    assert (nodes["TupleExpr"].column, nodes["TupleExpr"].end_column) == (23, 27)
    assert (nodes["Lambda"].column, nodes["Lambda"].end_column) == (31, 42)
    (w,) = parse("\n  \nwith a():\n    b\n    c").body
    assert (w.line, w.column, w.end_line, w.end_column) == (3, 1, 5, 6)


def test_positions_count_characters_not_bytes():
    (s,) = parse("é = 'ü🙂' + x").body
    assert s.value.right.column == 12


# ------------------------------------------------------------------------------ errors

@pytest.mark.parametrize("source, message, line, column", [
    # brackets
    ("y = f(x", "'(' was never closed", 1, 6),
    ("y = [1, 2", "'[' was never closed", 1, 5),
    ("y = f(x]", "']' does not match '(' at line 1, column 6", 1, 8),
    ("y = x)", "unmatched ')'", 1, 6),
    ("y = (x))", "unmatched ')'", 1, 8),
    ("with a():\n    ]", "unmatched ']'", 2, 5),
    ("f(x\ny = 2", "unexpected name 'y' — expected ')', ',', '=' or an operator ('(' at line 1, column 2 is still open)", 2, 1),
    # expressions
    ("x = ", "unexpected end of line — expected an expression", 1, 5),
    ("x = = 1", "unexpected '=' — expected an expression", 1, 5),
    ("x = 1 +", "unexpected end of line — expected an expression", 1, 8),
    ("x = 1 2", "unexpected number 2 — expected ',', an operator or end of line", 1, 7),
    ("x = (1 2)", "unexpected number 2 — expected ')', ',' or an operator", 1, 8),
    ("print(x y)", "unexpected name 'y' — expected ')', ',', '=' or an operator", 1, 9),
    ("x.", "unexpected end of line — expected a name", 1, 3),
    ("x[]", "unexpected ']' — expected ':' or an expression", 1, 3),
    ("lambda a, a: a", "duplicate argument 'a' in function definition", 1, 11),
    (")", "unmatched ')'", 1, 1),
    ("x = 1\n* 2", "unexpected '*' — expected a statement", 2, 1),
    ("x = 1;;", "unexpected ';' — expected a statement or end of line", 1, 7),
    ("a < b < c", "chained comparisons such as a < b < c are not supported", 1, 7),
    ("a = b = 1", "chained assignment (a = b = ...) is not supported", 1, 7),
    ("x = 0x10", "invalid number literal '0x10'", 1, 5),
    ("x = 007", "leading zeros in decimal integer literals are not permitted", 1, 5),
    ("x = 1 $ 2", "unexpected character '$'", 1, 7),
    ("x = \x00", "unexpected character U+0000", 1, 5),
    # assignment targets and arguments
    ("x + 1 = 2", "cannot assign to an expression", 1, 1),
    ("f(x) = 2", "cannot assign to a function call", 1, 1),
    ("x[0], y = t", "cannot assign to an indexed element: only plain names can be unpacked into", 1, 1),
    ("1 = x", "cannot assign to a literal", 1, 1),
    ("a, b.c = t", "cannot assign to an attribute: only plain names can be unpacked into", 1, 4),
    ("a, b += 1", "cannot use += on a tuple", 1, 1),
    ("del x.grad", "cannot delete an attribute: del takes names", 1, 5),
    ("f(a=1, b)", "positional argument follows keyword argument", 1, 8),
    ("f(a=1, a=2)", "keyword argument repeated: a", 1, 8),
    # keywords
    ("class A: y", "'class' is not part of the gradcli language (its statements: if/elif/else, for, "
     "while, break, continue, def, return, lambda, with, import, from ... import, assert, del, pass)", 1, 1),
    ("x = yield y", "'yield' is not part of the gradcli language", 1, 5),
    ("try: y", "'try' is not part of the gradcli language", 1, 1),
    ("global x", "'global' is not part of the gradcli language", 1, 1),
    ("x = del", "unexpected 'del' — expected an expression", 1, 5),
    ("x.True", "unexpected 'True' — expected a name", 1, 3),
    ("f(lambda=1)", "unexpected '=' — expected ':' or a name", 1, 9),
    # indentation and blocks
    ("  x = 1", "unexpected indent", 1, 3),
    ("x = 1\n    y = 2", "unexpected indent", 2, 5),
    ("with no_grad():\ny = 1", "expected an indented block after 'with' on line 1", 2, 1),
    ("with no_grad():", "expected an indented block after 'with' on line 1", 1, 16),
    ("with no_grad()\n    y = 1", "unexpected end of line — expected ':', 'as' or an operator", 1, 15),
    ("with no_grad():\n    x = 1\n  y = 2", "unindent does not match any outer indentation level", 3, 3),
    # strings
    ("x = 'abc", "unterminated string", 1, 5),
    ('x = "abc\ny"', "unterminated string", 1, 5),
    (r"x = '\xZZ'", "truncated \\x escape in string", 1, 6),
])
def test_error_messages_and_positions(source, message, line, column):
    err = error(source)
    assert message in err.message
    assert (err.line, err.column) == (line, column)
    assert "\n" not in err.message
    assert err.kind == "syntax" and err.exit_code == 2


def test_error_hint_shows_the_line_and_a_caret():
    err = error("x = 1\ny = (a +\n     b)\nz = [")
    assert err.message == "'[' was never closed"
    assert err.hint == "    z = [\n        ^"
    assert error("a = f(1,, 2)").hint == "    a = f(1,, 2)\n            ^"


def test_format_error_context():
    assert format_error_context("ab\ncd", 2, 2) == "    cd\n     ^"
    assert format_error_context("ab\r\ncd", 1, 3) == "    ab\n      ^"  # may point past the end
    assert format_error_context("ab", 3, 1) == ""
    assert format_error_context("\tx = $", 1, 6, indent="") == "    x = $\n        ^"
    assert format_error_context("漢字 = $", 1, 6, indent="") == "漢字 = $\n       ^"
    assert format_error_context("a\x00b", 1, 3, indent="") == "a?b\n  ^"
    long = "x" * 5000 + "$" + "y" * 5000
    context = format_error_context(long, 1, 5001, width=60)
    source_line, caret_line = context.split("\n")
    assert len(source_line) < 80 and source_line.strip().startswith("...") and source_line.endswith("...")
    assert source_line[caret_line.index("^")] == "$"


# ------------------------------------------------------------------------------ depth and size (SPEC §5)

def _timed(source: str):
    start = time.perf_counter()
    program = parse(source)
    return program, time.perf_counter() - start


def test_a_100k_term_chain_parses_quickly():
    program, seconds = _timed("+".join(["x"] * 100_000))
    assert sum(1 for _ in walk(program)) == 1 + 1 + 99_999 + 100_000  # program, stmt, ops, names
    assert seconds < 10, seconds  # ~1 s on a laptop-class CPU
    top = program.body[0].value
    assert isinstance(top, BinOp) and top.op == "+" and top.end_column == 200_000


@pytest.mark.parametrize("source, nodes", [
    ("(" * 10_000 + "x" + ")" * 10_000, 3),
    ("-" * 10_000 + "x", 10_002 + 1),
    ("x" + ".a" * 10_000, 10_001 + 2),
    ("f(" * 10_000 + "x" + ")" * 10_000, 2 * 10_000 + 1 + 2),
    ("x" + "[0]" * 10_000, 2 * 10_000 + 1 + 2),
    ("**".join(["x"] * 10_000), 2 * 10_000 - 1 + 2),
    ("[" * 10_000 + "]" * 10_000, 10_000 + 2),
    ("lambda a: " * 10_000 + "a", 20_001 + 2),  # each lambda: the Lambda and its Param
    ("with a():\n" + "".join(" " * i + "with a():\n" for i in range(1, 500)) + " " * 500 + "x", 500 * 3 + 3),
], ids=["parens", "unary", "attributes", "calls", "subscripts", "power", "lists", "lambdas", "with-blocks"])
def test_deep_nesting_parses_without_recursion(source, nodes):
    program, seconds = _timed(source)
    assert sum(1 for _ in walk(program)) == nodes
    assert seconds < 5, seconds
    # postorder visits the same nodes, each after its children
    seen = set()
    for node in postorder(program):
        assert all(id(child) in seen for child in syntax.iter_child_nodes(node))
        seen.add(id(node))
    assert len(seen) == nodes
    repr(program.body[0])  # shallow: fine however deep the tree


def test_walk_and_postorder_orders():
    program = parse("y = f(a, k=b)[c] + 1")
    pre = [n.id if isinstance(n, Name) else type(n).__name__ for n in walk(program)]
    assert pre == ["Program", "Assign", "y", "BinOp", "Subscript", "Call", "f", "a", "b", "c", "Num"]
    post = [n.id if isinstance(n, Name) else type(n).__name__ for n in postorder(program)]
    assert post == ["y", "f", "a", "b", "Call", "c", "Subscript", "Num", "BinOp", "Assign", "Program"]
    assert all(isinstance(n, Node) for n in walk(program))


def test_huge_and_hostile_inputs_are_handled():
    ten_mb = 10_000_000
    assert parse("x" * ten_mb).body[0].value.id == "x" * ten_mb
    assert parse('s = "' + "a" * ten_mb + '"').body[0].value.value == "a" * ten_mb
    assert parse("\n" * ten_mb + "x").body[0].value.line == ten_mb + 1
    for source in ["x = " + "1 " * 100_000, "\x00" * ten_mb, "(" * 100_000, "\ud800 = 1",
                   "x = '\ud800' $", bytes(range(256)).decode("latin-1") * 100, "\ufeffx = 1"]:
        err = error(source)
        assert err.line >= 1 and err.column >= 1 and err.hint
        assert len(err.hint) < 400 and len(err.message) < 200


def test_nodes_are_plain_slotted_classes():
    node = parse("x").body[0].value
    assert not hasattr(node, "__dict__")
    assert Num(3).value == 3 and Num(3).line == 0  # hand-built nodes get position 0
    assert Num(3) != Num(3)  # identity equality: nothing recursive
    assert "line=1" in repr(parse("a + b").body[0].value)
    assert isinstance(parse("x").body[0].value, Expr)


def test_non_strings_are_a_programming_error():
    with pytest.raises(TypeError):
        parse(b"x = 1")  # decoding (and non-UTF-8 input) is the CLI's job


# ------------------------------------------------------------------------------ the grammar and the parser

def test_grammar_is_lalr_without_conflicts(caplog):
    """Lark resolves a shift/reduce conflict silently (by shifting; it says so in its debug log,
    as for the dangling else below) and a reduce/reduce one by rule priorities. Neither here: the
    grammar is unambiguous, which the fast path's chains reader relies on (gradcli.lang.chains)."""
    import lark
    old = lark.logger.level
    lark.logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            lark.Lark('start: "i" start | "i" start "e" start | "a"', parser="lalr")
            dangling_else = [r for r in caplog.records if "conflict" in r.getMessage().lower()]
            caplog.clear()
            parser, _ = syntax._build_parser(cache=False)
    finally:
        lark.logger.setLevel(old)
    assert dangling_else  # the log is read
    assert not [r for r in caplog.records if "conflict" in r.getMessage().lower()]
    assert not any(rule.options.priority for rule in parser.rules)
    assert parser.options.parser == "lalr" and parser.options.lexer == "contextual"
    assert syntax.grammar_text() == Path(syntax._REPO_GRAMMAR).read_text(encoding="utf-8")


def test_cache_is_used_and_never_stale(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADCLI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GRADCLI_NO_CACHE", raising=False)
    parser, _ = syntax._build_parser()
    files = list((tmp_path / "cache").iterdir())
    assert len(files) == 1 and files[0].stat().st_size > 0
    assert isinstance(parser.parse("a @ b\n").body[0].value, BinOp)
    # Loaded from the cache: same AST builder and postlexer behaviour.
    parser, _ = syntax._build_parser()
    assert isinstance(parser.parse("with a():\n    b\n").body[0], With)
    # A changed grammar (same file name forced) is rebuilt, never served from the old cache.
    changed = syntax.grammar_text().replace('arith "<" arith                -> lt',
                                            'arith "<" arith                -> gt', 1)
    assert changed != syntax.grammar_text()
    monkeypatch.setattr(syntax, "grammar_text", lambda: changed)
    monkeypatch.setattr(syntax, "_cache_path", lambda grammar: str(files[0]))
    parser, _ = syntax._build_parser()
    assert parser.parse("a < b\n").body[0].value.op == ">"


def test_cache_problems_never_break_the_parser(tmp_path, monkeypatch):
    monkeypatch.delenv("GRADCLI_NO_CACHE", raising=False)
    # a corrupt cache file
    corrupt = tmp_path / "corrupt.lark-cache"
    corrupt.write_bytes(b"garbage\n\x80\x04not a pickle")
    monkeypatch.setattr(syntax, "_cache_path", lambda grammar: str(corrupt))
    parser, _ = syntax._build_parser()
    assert isinstance(parser.parse("x\n").body[0], ExprStmt)
    monkeypatch.undo()
    monkeypatch.delenv("GRADCLI_NO_CACHE", raising=False)
    # a cache "directory" that cannot be created, one that others may write, or none at all
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("GRADCLI_CACHE_DIR", str(blocker / "sub"))
    assert syntax._cache_path("g") is None
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    monkeypatch.setenv("GRADCLI_CACHE_DIR", str(shared))
    assert syntax._cache_path("g") is None
    monkeypatch.setenv("GRADCLI_CACHE_DIR", "relative/dir")
    assert syntax._cache_path("g") is None
    monkeypatch.setenv("GRADCLI_CACHE_DIR", str(tmp_path / "ok"))
    monkeypatch.setenv("GRADCLI_NO_CACHE", "1")
    assert syntax._cache_path("g") is None
    parser, _ = syntax._build_parser()
    assert isinstance(parser.parse("x\n").body[0], ExprStmt)


# ------------------------------------------------------------------------------ fuzz: nothing but GradSyntaxError

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_TOKENS = ["x", "y", "f", "grad", "(", ")", "[", "]", ",", ":", ";", "=", "+=", "-=", "*=", "/=",
           "+", "-", "*", "/", "@", "**", "<", "<=", "==", "!=", ">", ">=", ".", "...", "0", "1.5",
           ".5", "1e-3", "'s'", '"t"', "'", '"', "True", "False", "None", "lambda", "with",
           "assert", "del", "and", "if", "\n", "\n    ", "\n  ", "\t", " ", "#c\n", "\\\n",
           "\r\n", "\r", "\x00", "\ud800", "é", "0x", "\\"]


def _check(source: str) -> None:
    try:
        program = parse(source)
    except GradSyntaxError as err:
        assert err.line >= 1 and err.column >= 1 and err.message and "\n" not in err.message
        for internal in ("__ANON", "RPAR", "LSQB", "_NEWLINE", "$END", "Token("):
            assert internal not in err.message, err.message
        assert isinstance(err.hint, str)
    else:
        assert isinstance(program, Program)
        for node in walk(program):
            assert isinstance(node, Node) and node.line >= 1 and node.column >= 1


_fuzz = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


@_fuzz
@given(st.text(max_size=60))
def test_fuzz_random_text(source):
    _check(source)


@_fuzz
@given(st.lists(st.sampled_from(_TOKENS), max_size=40), st.lists(st.booleans(), max_size=40))
def test_fuzz_token_soup(tokens, spaces):
    _check("".join(t + (" " if s else "") for t, s in zip(tokens, spaces + [False] * len(tokens))))


def test_fstring_literal_parts_have_their_positions():
    """Every node has a position, an f-string's literal parts too (they had line 0: found by
    test_fuzz_token_soup on ``f'x'``)."""
    program = parse('z = f"ab{1}cd{{x}}"')
    found = [(type(n).__name__, n.line, n.column) for n in walk(program)]
    assert found[3:] == [("FString", 1, 5), ("Str", 1, 7), ("FormattedValue", 1, 9), ("Num", 1, 10),
                         ("Str", 1, 12)]
    _check("f'x'")
