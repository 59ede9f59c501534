"""The parser's speed work (issue 16): one grammar rule for an arithmetic chain, whose tree the
builder makes by precedence climbing, and the fast path (gradcli.lang.fastpath) that drives
Lark's table with its own tokenizer. Both must change nothing a user sees: the trees (with every
position) and every error message, line, column and hint are Lark's path's, which the tests here
compare against (Python's own parser for precedence and associativity)."""

from __future__ import annotations

import ast as pyast
import gc
import random
from pathlib import Path

import pytest

from gradcli.errors import GradSyntaxError, UsageError
from gradcli.lang import builder
from gradcli.lang import parser as syntax
from gradcli.lang.ast import BinOp, Node, Num, UnaryOp, walk
from gradcli.limits import LIMITS

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------ helpers

def dump(node) -> list:
    """Every node of a tree in pre-order: its class, fields and four positions (explicit stack)."""
    out, stack = [], [node]
    while stack:
        v = stack.pop()
        if isinstance(v, Node):
            out.append((type(v).__name__, v.line, v.column, v.end_line, v.end_column))
            for name in reversed(list(v._fields) + list(v._keyword_fields)):
                if name not in ("source", "filename"):
                    stack.append(getattr(v, name))
        elif isinstance(v, (list, tuple)):
            out.append(("[", len(v)))
            stack.extend(reversed(v))
        else:
            out.append(repr(v))
    return out


def lark_path(text: str):
    """The tree by Lark's own lexer and parser loop (the path every error is worded by)."""
    del builder.PENDING_FIELDS[:]
    return syntax._get_parser().parse(text)


_FAST = []


def fast_parser(chains: bool = True):
    """A fast path built from Lark's parser (by way of its plain tables); without its chains'
    reader where ``chains`` is False (every expression through the LALR table then)."""
    from gradcli.lang.fastpath import FastPath
    from gradcli.lang.postlex import PostLexer
    fast = FastPath.from_lark(syntax._get_parser(), PostLexer())
    if not chains:
        fast.lanes = {}
    return fast


def fast_path(text: str):
    """The tree by the fast path, or None where it declines."""
    if not _FAST:
        _FAST.append(fast_parser())
    del builder.PENDING_FIELDS[:]
    return _FAST[0].parse(text)


def outcome(source: str):
    try:
        return "ok", dump(syntax.parse(source))
    except GradSyntaxError as err:
        return "error", err.message, err.line, err.column, err.hint


def program_texts() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").glob("**/*.grad"))]
    texts += [
        "y = -x ** 2 * w + b @ c - d / 2 % 3 // 4\n",
        "z = 2 ** -1 ** 2 * +3 - - -x\n",
        "if a < b and not c or d is not None:\n    y = f(x, k=1)[0:2, ...].sum(dim=1)\nelse:\n    pass\n",
        "for i, (a, b) in enumerate(zip(xs, ys)):\n    total += a * b  # comment\n\n\n",
        "def f(x, y=2):\n    return lambda g: g * x ** y\n",
        "s = f'{x!r:.4f} and {{braces}}' + \"\"\"doc\nstring\"\"\" + 'a\\tb'\n",
        "x = [i * 2 for i in range(3) if i > 0]; d = {'a': 1, 'b': [1, 2]}\n",
        "w = (1 +\n     2) \\\n    * 3\n",
        "with torch.no_grad() as g:\n    w -= 0.1 * w.grad\n",
        "from torch import ones as o, zeros\nimport torch.nn.functional as F\nassert x.shape == (2, 2), 'm'\n",
        "x = 1_000 + 1. + .5 + 1e-3 + 2.5E+10\ndel x\n",
        "@torch.no_grad()\ndef g():\n    while True:\n        break\n",
    ]
    return texts


# ------------------------------------------------------------------------------ precedence climbing

def py_shape(node):
    """Python's tree of an arithmetic expression, as (op, left, right) / (sign, operand) / leaf."""
    ops = {pyast.Add: "+", pyast.Sub: "-", pyast.Mult: "*", pyast.Div: "/", pyast.MatMult: "@",
           pyast.Mod: "%", pyast.FloorDiv: "//", pyast.Pow: "**", pyast.USub: "-", pyast.UAdd: "+",
           pyast.Lt: "<", pyast.Eq: "=="}
    if isinstance(node, pyast.BinOp):
        return (ops[type(node.op)], py_shape(node.left), py_shape(node.right))
    if isinstance(node, pyast.UnaryOp):
        return (ops[type(node.op)], py_shape(node.operand))
    if isinstance(node, pyast.Compare):
        return (ops[type(node.ops[0])], py_shape(node.left), py_shape(node.comparators[0]))
    if isinstance(node, pyast.Name):
        return node.id
    return node.value


def grad_shape(node):
    if isinstance(node, BinOp) or type(node).__name__ == "Compare":
        return (node.op, grad_shape(node.left), grad_shape(node.right))
    if isinstance(node, UnaryOp):
        return (node.op, grad_shape(node.operand))
    return node.id if hasattr(node, "id") else node.value


def random_expression(rnd: random.Random, depth: int = 0) -> str:
    parts = []
    for i in range(rnd.randint(1, 7)):
        if i:
            parts.append(rnd.choice(["+", "-", "*", "/", "@", "%", "//", "**"]))
        signs = "".join(rnd.choice("-+") for _ in range(rnd.choice([0, 0, 0, 1, 2])))
        atom = rnd.choice(["a", "b", "c", "1", "2"])
        if depth < 2 and rnd.random() < 0.2:
            atom = "(" + random_expression(rnd, depth + 1) + ")"
        parts.append(signs + atom)
    text = " ".join(parts)
    if depth == 0 and rnd.random() < 0.2:
        text += rnd.choice([" < ", " == "]) + random_expression(rnd, 1)
    return text


@pytest.mark.parametrize("seed", range(4))
def test_arithmetic_chains_have_pythons_precedence_and_associativity(seed):
    rnd = random.Random(seed)
    for _ in range(300):
        text = random_expression(rnd)
        expected = py_shape(pyast.parse(text, mode="eval").body)
        assert grad_shape(syntax.parse(text).body[0].value) == expected, text


@pytest.mark.parametrize("text, expected", [
    ("-x**2", ("-", ("**", "x", 2))),
    ("a - b - c", ("-", ("-", "a", "b"), "c")),
    ("a @ b * c", ("*", ("@", "a", "b"), "c")),
    ("2 ** -1", ("**", 2, ("-", 1))),
    ("a ** b ** c", ("**", "a", ("**", "b", "c"))),
    ("-a * b", ("*", ("-", "a"), "b")),
    ("2 ** -1 ** 2 * 3", ("*", ("**", 2, ("-", ("**", 1, 2))), 3)),
    ("a + b * c ** -d // e", ("+", "a", ("//", ("*", "b", ("**", "c", ("-", "d"))), "e"))),
    ("- + -x", ("-", ("+", ("-", "x")))),
])
def test_the_cases_named_in_the_grammar(text, expected):
    assert grad_shape(syntax.parse(text).body[0].value) == expected


def test_chain_nodes_span_their_operands_and_signs():
    # columns:  1234567890123456
    value = syntax.parse("y = -x ** 2 * w + 3").body[0].value
    assert (value.op, value.column, value.end_column) == ("+", 5, 20)
    product = value.left
    assert (product.op, product.column, product.end_column) == ("*", 5, 16)
    neg = product.left
    assert isinstance(neg, UnaryOp) and (neg.column, neg.end_column) == (5, 12)
    power = neg.operand
    assert (power.op, power.column, power.end_column) == ("**", 6, 12)
    assert isinstance(value.right, Num) and (value.right.column, value.right.end_column) == (19, 20)


def test_a_chain_costs_one_reduction_per_operator():
    """What the flat rule is for: the old levels (sum, product, factor, power, atom) are gone,
    and `x * 1.5 + y` reduces once per operand and once per operator, plus the chain."""
    grammar = syntax.grammar_text()
    for level in ("?sum:", "?product:", "!?factor:", "?power:", "!?atom:"):
        assert level not in grammar
    rules = [r for r in syntax._get_parser().rules if r.origin.name.startswith("__arith")]
    assert rules and all(len(r.expansion) <= 4 for r in rules)


# ------------------------------------------------------------------------------ the fast path

@pytest.mark.parametrize("index", range(len(program_texts())))
def test_the_fast_path_builds_lark_paths_tree(index):
    text = program_texts()[index]
    text = text if text.endswith("\n") else text + "\n"
    expected = dump(lark_path(text))
    fast = fast_path(text)
    assert fast is not None, text
    assert dump(fast) == expected


def test_the_fast_path_agrees_on_random_programs():
    rnd = random.Random(16)
    for _ in range(200):
        lines = [f"v{i} = {random_expression(rnd)}" for i in range(rnd.randint(1, 4))]
        text = "\n".join(lines) + "\n"
        assert dump(fast_path(text)) == dump(lark_path(text)), text


@pytest.mark.parametrize("text", [
    "x = (1 +\n",            # never closed
    "x = 1 +\n",              # an operator with nothing after it
    "y = a < b < c\n",        # chained comparison
    "x = 1 $ 2\n",            # a character no terminal matches
    "  x = 1\n",              # unexpected indent
    "class A: pass\n",        # a Python keyword the language lacks
    "f(a=1, a=2)\n",          # an error from the AST builder
    "x = 'abc\n",             # unterminated string
    "if x:\ny = 1\n",         # expected an indented block
])
def test_the_fast_path_declines_every_error(text):
    assert fast_path(text) is None


def test_the_fast_path_declines_what_only_the_contextual_lexer_reads():
    """After a name, Lark's contextual lexer tries only what may follow one, so `isnot` is read
    as `is not` (and `inplace` as `in place`). The fast path reads names: it declines, and Lark's
    path gives its tree as ever."""
    assert fast_path("x isnot y\n") is None
    long = "z = " + " + ".join(["x"] * 6000) + "\nw = x isnot y\n"
    assert len(long) > syntax.FAST_PATH_MIN_CHARS
    assert syntax.parse(long).body[1].value.op == "is not"


def big_program(terms: int) -> str:
    cycle = ["x * 1.5", "sin(x)", "y / 2", "x * y", "exp(y) * 0.5", "(x - y) * 2"]
    return "z = " + " + ".join(cycle[i % 6] for i in range(terms)) + "\n"


@pytest.mark.parametrize("error, where", [
    ("$", "middle"), (")", "end"), ("+", "end"), ("if", "middle"), ("'", "end"), ("< y < x", "end"),
    ("(", "middle"), ("\n  w = 1", "end"), ("\nbreak", "end"), ("\nprint(f'{x +}')", "end"),
])
def test_long_programs_keep_every_error_exactly(monkeypatch, error, where):
    """A long program goes to the fast path first; whatever its error, parse() raises what
    Lark's path raises: the same message, line, column and hint."""
    body = big_program(4000)
    if where == "middle":  # after a "+" half-way, between two terms
        at = body.index(" + ", len(body) // 2) + 3
        text = body[:at] + error + " " + body[at:]
    else:
        text = body[:-1] + error
    assert len(text) > syntax.FAST_PATH_MIN_CHARS
    with_fast = outcome(text)
    assert with_fast[0] == "error"
    monkeypatch.setattr(syntax, "FAST_PATH_MIN_CHARS", 10 ** 12)
    assert with_fast == outcome(text)


def test_long_programs_take_the_fast_path(monkeypatch):
    """Without the fast path's cached tables (see test_parse_cache.py for with), only long texts
    take it, built from Lark's parser."""
    real = syntax._get_parser()
    monkeypatch.setattr(syntax, "_load_fast", lambda: None)
    monkeypatch.setattr(syntax, "_fast", None)
    monkeypatch.setattr(syntax, "_fast_from_lark", True)
    calls = []

    class Spy:  # Lark's parser, counting its parses
        def __getattr__(self, name):
            return getattr(real, name)

        def parse(self, text, *args, **kwargs):
            calls.append(len(text))
            return real.parse(text, *args, **kwargs)

    monkeypatch.setattr(syntax, "_parser", Spy())
    syntax.parse("y = x * 2\n")  # short, no fast path yet: Lark's path
    assert calls == [len("y = x * 2\n")] and syntax._fast is False
    program = syntax.parse(big_program(3000))  # long: the fast path is built and parses it
    assert len(calls) == 1 and len(program.body) == 1 and syntax._fast
    syntax.parse("y = x * 3\n")  # once built, it parses short texts too
    assert len(calls) == 1
    syntax.parse(big_program(3000) + "w = x isnot y\n")  # declined: Lark's path
    assert len(calls) == 2


def test_a_100k_term_mixed_program():
    terms = 100_000
    text = big_program(terms)
    program = syntax.parse(text)
    # nodes per term of the cycle: x * 1.5 (3), sin(x) (3), y / 2 (3), x * y (3),
    # exp(y) * 0.5 (5), (x - y) * 2 (5); then the 99,999 sums, the program, the assignment, z
    per_term = [3, 3, 3, 3, 5, 5]
    expected = sum(per_term[i % 6] for i in range(terms)) + (terms - 1) + 3
    assert sum(1 for _ in walk(program)) == expected
    top = program.body[0].value
    assert isinstance(top, BinOp) and top.op == "+" and (top.column, top.end_column) == (5, len(text))
    last = top.right  # term 99,999: x * y
    assert (last.op, last.left.id, last.right.id) == ("*", "x", "y")
    assert (last.column, last.end_column) == (len(text) - 5, len(text))
    assert top.left.left.right.func.id == "sin"  # term 99,997: sin(x)


def test_the_collector_is_paused_only_while_parsing():
    assert gc.isenabled()
    syntax.parse(big_program(10))
    assert gc.isenabled()
    with pytest.raises(GradSyntaxError):
        syntax.parse("x = (")
    assert gc.isenabled()
    gc.disable()
    try:
        syntax.parse(big_program(10))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_limits_raised_on_the_fast_path_are_the_limits(monkeypatch):
    """--max-statements is counted by the postlexer while parsing: the fast path lets its
    error through as it is."""
    text = "x = 1\n" * 5000
    monkeypatch.setattr(LIMITS, "max_statements", 100)
    with pytest.raises(UsageError) as fast:
        syntax.parse(text)
    monkeypatch.setattr(syntax, "FAST_PATH_MIN_CHARS", 10 ** 12)
    with pytest.raises(UsageError) as lark:
        syntax.parse(text)
    assert str(fast.value) == str(lark.value) == "the program has more than 100 statements, over the limit of 100"


def test_a_terminal_that_starts_with_a_space_turns_the_fast_path_off():
    from lark.lexer import PatternRE, PatternStr, TerminalDef

    from gradcli.lang.fastpath import _check_spaces_start_nothing
    spaces = [TerminalDef("WS", PatternRE(r"[\t \f]+"))]
    _check_spaces_start_nothing(spaces, [TerminalDef("NAME", PatternRE(r"\w+")),
                                         TerminalDef("PLUS", PatternStr("+"))], 0)
    for bad in (TerminalDef("ARROW", PatternStr(" ->")), TerminalDef("PAD", PatternRE(r"\s*=")),
                TerminalDef("TABBED", PatternRE(r"\t\w"))):
        with pytest.raises(ValueError, match=bad.name):
            _check_spaces_start_nothing(spaces, [bad], 0)


def test_the_fast_path_runs_on_a_parser_loaded_from_lark_s_cache(tmp_path, monkeypatch):
    from gradcli.lang.fastpath import FastPath
    from gradcli.lang.postlex import GradIndenter
    monkeypatch.setenv("GRADCLI_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GRADCLI_NO_CACHE", raising=False)
    fresh, _ = syntax._build_parser()  # analyses the grammar and writes the cache
    cached, _ = syntax._build_parser()  # reads it
    assert len(list(tmp_path.iterdir())) == 1
    text = big_program(50) + "w = f(x, k=-2 ** 3)[0]\n"
    trees = []
    for lark in (fresh, cached):
        del builder.PENDING_FIELDS[:]
        trees.append(dump(FastPath.from_lark(lark, GradIndenter()).parse(text)))
    assert trees[0] == trees[1] == dump(lark_path(text))


# ------------------------------------------------------------------------------ the tokenizer's lookaheads

@pytest.mark.parametrize("pattern, expected", [
    (r"(?:\d+)?\.\d|\d+", r"\.\d"),          # an optional part first: what can follow it too
    (r"[fF]?'x'|'''y'''", "'Ff"),
    (r"(?:#[^\n]*)?\n", "\\\n\\#"),
    (r"\+", None),                            # a literal first: re rejects it by that already
    (r"[^\W\d]\w*", None),                    # a class first: the same
    (r"a?", None),                            # it can match the empty string
    (r"(?:[^a]b)?c", None),                   # a negated class: not told
])
def test_the_lookahead_holds_every_first_character(pattern, expected):
    from gradcli.lang.fastpath import _first_class
    assert _first_class(pattern, 0) == expected
    assert _first_class(pattern, __import__("re").IGNORECASE) is None


def test_every_token_starts_with_a_character_its_lookahead_holds():
    """Each lookahead of the fast path's pattern, against the first character of every token that
    Lark's own lexer reads from the corpus (a lookahead that missed one would lose the token)."""
    import re

    from lark.lexer import BasicLexer

    from gradcli.lang.fastpath import _first_class
    lark = syntax._get_parser()
    lexer = BasicLexer(lark.lexer_conf)
    guards = {t.name: _first_class(t.pattern.to_regexp(), lark.lexer_conf.g_regex_flags)
              for t in lexer.terminals}
    assert {name for name, g in guards.items() if g} >= {"STRING", "NUMBER", "_NEWLINE"}
    seen = set()
    for text in program_texts() + ["x = f'{a}' + F\"b\" + 1_0.5e-3 + .5\n# c\n"]:
        for token in lark.lex(text if text.endswith("\n") else text + "\n"):
            guard = guards.get(token.type)
            if guard:
                assert re.match(f"[{guard}]", token.value), (token.type, token.value)
                seen.add(token.type)
    assert seen >= {"STRING", "NUMBER", "_NEWLINE"}


# ------------------------------------------------------------------------------ the driver's reductions

COVERAGE_TEXTS = [  # with program_texts(): every builder method the fast path's table calls
    "a = x not in y; b = x in y; c = x is y; d = x is not y; e = ...; f = not x\n",
    "g = {}; h = (); i = (1,); j = []; k = [1, 2,]; l = (1, 2,); m = {'a': 1, 'b': 2,}\n",
    "n = x[::2, 1:, :3, ::, 1:2:3, None]; o = x if y else z; p = x or y and z\n",
    "q = x <= y; r = x >= y; s = x != y; t = x > y; u = True; v = False; w = None\n",
    "a, b = c; d, = e; x[0] = 1; x.grad = None; x += 1; del a, b\n",
    "for i in range(3):\n    continue\nwhile x:\n    pass\nelse_ = 1\n",
    "if a:\n    pass\nelif b:\n    pass\nelif c:\n    pass\nelse:\n    pass\n",
    "def f(a, b=1,):\n    return\ndef g():\n    return a, b\nh = lambda: 1; k = lambda a, b=2: a\n",
    "from m import (a, b as c,)\nfrom m.n import *\nimport a.b as c, d\nassert x\n",
    "y = sum(x * x for x in xs if x > 0 if x < 9); z = [a for a, b in c for d in e]\n",
    "y = f(a, c) if False else f(a, b, k=1, j=2,)\n",
    "with a:\n    pass\nwith b as c: pass\n@d\n@e.f(1)\ndef g(): pass\n",
    "s = 'a\\n' + \"b\" + f'{x}' + '''c''' + x.y.z[0](1)[2]\n",
]


def _spy_on_reductions(fast, seen: set) -> None:
    """Wrap every reduction function of the fast path's table to record (its name, its kind)."""
    for row in fast.table:
        for symbol, action in list(row.items()):
            if action.__class__ is tuple and action[2] is not None:
                size, origin, function, kind = action

                def spy(*args, _function=function, _key=(function.__name__, kind)):
                    seen.add(_key)
                    return _function(*args)
                row[symbol] = (size, origin, spy, kind)


def test_every_kind_of_reduction_is_in_the_table():
    from gradcli.lang import fastpath
    fast = fast_parser()
    kinds = {action[3] for row in fast.table for action in row.values() if action.__class__ is tuple}
    assert kinds == {fastpath._UNIT, fastpath._CALL, fastpath._CALL_ONE, fastpath._LIST,
                     fastpath._LIST_ONE, fastpath._GROW}


def test_every_builder_method_the_table_calls_builds_lark_paths_tree():
    """Each reduction the driver makes by calling a builder method (directly, through a child
    filter, or in place on the stack's top) is exercised here, and every tree equals Lark's.
    The chains' reader is off: it makes most of the expressions itself (test_parse_chains.py)."""
    fast = fast_parser(chains=False)
    methods = {name for name in vars(builder.ASTBuilder) if not name.startswith("_")}
    in_table = {action[2].__name__ for row in fast.table for action in row.values()
                if action.__class__ is tuple and action[2] is not None} & methods
    seen: set = set()
    _spy_on_reductions(fast, seen)
    for text in program_texts() + COVERAGE_TEXTS:
        text = text if text.endswith("\n") else text + "\n"
        del builder.PENDING_FIELDS[:]
        tree = fast.parse(text)
        assert tree is not None, text
        assert dump(tree) == dump(lark_path(text)), text
    called = {name for name, _kind in seen}
    assert in_table - called == set()
    assert in_table >= {"name", "number", "call", "arith", "paren", "attribute", "subscript"}


MUTATIONS = ["(", ")", "[", "]", ",", ":", "=", "+", "**", "-", "not", "in", "is", "lambda", "if",
             "else", "\n", "\n    ", "'", "f'{", "}", "1.5", "x", ".", ";", "...", "@", "\\\n", "#"]


def mutated(rnd: random.Random, text: str, edits: list = MUTATIONS) -> str:
    """``text`` with one to three random edits: a span deleted, a token inserted, a span doubled."""
    for _ in range(rnd.randint(1, 3)):
        i = rnd.randrange(len(text) + 1)
        j = min(len(text), i + rnd.randint(0, 6))
        edit = rnd.randrange(3)
        if edit == 0:
            text = text[:i] + text[j:]
        elif edit == 1:
            text = text[:i] + rnd.choice(edits) + text[i:]
        else:
            text = text[:j] + text[i:j] + text[j:]
    return text if text.endswith("\n") else text + "\n"


def fuzz_edited(monkeypatch, rnd: random.Random, sources: list, rounds: int, edits: list = MUTATIONS) -> int:
    """Edit programs of ``sources`` (most edits make them wrong): on each, the fast path either
    declines or gives exactly Lark's tree, and parse() says exactly what Lark's path alone says.
    How many the fast path parsed."""
    fast = fast_parser()
    agreed = 0
    for _ in range(rounds):
        text = mutated(rnd, rnd.choice(sources), edits)
        del builder.PENDING_FIELDS[:]
        tree = fast.parse(text)
        if tree is not None:
            agreed += 1
            assert dump(tree) == dump(lark_path(text)), text
        monkeypatch.setattr(syntax, "_fast", fast)
        with_fast = outcome(text)
        monkeypatch.setattr(syntax, "_fast", False)
        monkeypatch.setattr(syntax, "_fast_from_lark", False)
        assert outcome(text) == with_fast, text
    return agreed


def test_mutated_programs_give_lark_paths_tree_or_decline(monkeypatch):
    """Fuzz: edited programs of the corpus (see fuzz_edited)."""
    agreed = fuzz_edited(monkeypatch, random.Random(17), program_texts() + COVERAGE_TEXTS, 600)
    assert agreed > 50  # the edits leave some programs valid: those were compared too


def test_the_prescan_finds_long_numbers_as_its_lookbehind_pattern_does():
    """prescan's search for over-long numbers skips the lookbehind (speed); it finds what
    ``(?<!\\w)\\d[\\d_]{N}`` finds, where a long run follows a word character too."""
    import re

    from gradcli.lang.postlex import _long_number
    from gradcli.limits import MAX_NUMBER_CHARS as n
    reference = re.compile(r"(?<!\w)\d[\d_]{%d}" % n)
    long = "1" * (n + 1)
    texts = ["x = " + long, "x" + long, "x" + long + " + " + long, "é" + long + "\n(" + long,
             "_" + long + "_" + long, "a = 1\n" + long[:-1] + "\n", long, "y = " + "1_" * n,
             "x" + long + "+" + "2" * n, "z" * 10 + "9" * (3 * n) + " " + "9" * (n + 5),
             # the ASCII pre-check: runs one short, of "_" alone, and other scripts' digits (\d's)
             "x = " + long[:-1], "x = " + "_" * (n + 3), "x = \u0661" + long[:-1], "\u0661" * (n + 1),
             "x = " + "\u0661" * n]
    for text in texts:
        found, expected = _long_number(text), reference.search(text)
        assert (found and found.span()) == (expected and expected.span()), text[:20]


def test_a_long_programs_tree_is_frozen_out_of_the_collectors_way():
    """session.prepare freezes what is alive after a long program's parse (its tree above all:
    the collector would traverse it in its next collections); a short program's run freezes
    nothing. Refcounting still frees the tree once the run drops it."""
    from gradcli.cli import session
    gc.unfreeze()
    try:
        session.prepare(session.Options(source="y = x * 2\n", grads=["x=ones(2)"]))
        assert gc.get_freeze_count() == 0
        text = big_program(20_000)
        assert len(text) >= session.FREEZE_MIN_CHARS
        prepared = session.prepare(session.Options(source=text, grads=["x=ones(2)", "y=ones(2)"]))
        nodes = sum(1 for _ in walk(prepared.program))
        assert gc.get_freeze_count() >= nodes
        frozen = gc.get_freeze_count()
        del prepared  # its nodes are freed (and leave the frozen generation) all the same
        assert gc.get_freeze_count() <= frozen - nodes
    finally:
        gc.unfreeze()
