"""The fast path's chains reader (gradcli.lang.chains): it reads arith chains straight from the
text, and must change nothing a user sees. Every tree here is compared with Lark's path's (node
types, fields and the four positions of every node), and with the fast path's without the
reader; every error with what Lark's path alone says."""

from __future__ import annotations

import random

import pytest

from gradcli.errors import UsageError
from gradcli.lang import builder
from gradcli.lang import parser as syntax
from gradcli.lang.ast import BinOp
from gradcli.lang.postlex import PostLexer
from gradcli.limits import LIMITS
from test_parse_fast import (COVERAGE_TEXTS, MUTATIONS, big_program, dump, fast_parser, fuzz_edited,
                             lark_path, program_texts)


def reading(fast) -> list:
    """Wrap the fast path's reader to record what each read gave: (node class name or None, the
    text after the token it read after)."""
    reads = []
    real = fast.chains.read

    def read(text, after):
        node, at = real(text, after)
        reads.append((node and type(node).__name__, text[after.end_pos:after.end_pos + 12]))
        return node, at
    fast.chains.read = read
    return reads


def tree(fast, text: str):
    del builder.PENDING_FIELDS[:]
    return fast.parse(text)


# ------------------------------------------------------------------------------ expressions

ATOMS = ["a", "b", "x1", "_y", "é", "1", "2.5", "1_000", ".5", "1e-3", "2E+10", "1.", "'s'", '"t\\n"', "'''u'''",
         "True", "False", "None", "...", "f'{a}'"]


def rarely(rnd: random.Random, usual, wrong):
    """``usual``, or one time in fifty ``wrong`` (a program with an error, for the reader to give up on)."""
    return rnd.choice(wrong) if rnd.random() < 0.02 else usual


def random_operand(rnd: random.Random, depth: int) -> str:
    """An operand: an atom or a bracketed expression, with trailers (attributes, calls with
    positional and keyword arguments, indexing and slices) and signs; a few are wrong."""
    roll = rnd.random()
    if depth < 2 and roll < 0.15:
        text = "(" + random_chain(rnd, depth + 1) + ")"
    elif depth < 2 and roll < 0.2:  # a list or a tuple
        opening = rnd.choice("[(")
        text = opening + listed(rnd, [random_chain(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]) + \
            {"[": "]", "(": ")"}[opening]
    else:
        text = rnd.choice(ATOMS)
    for _ in range(rnd.choice([0, 0, 0, 1, 1, 2]) if not text[0].isdigit() else 0):  # "1.sum": no attribute
        kind = rnd.random()
        if kind < 0.3:
            text += "." + rarely(rnd, rnd.choice(["sum", "grad", "T"]), ["if", "None"])
        elif kind < 0.7 and depth < 2:
            args = [random_chain(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
            args += [rarely(rnd, name, ["True", "(k)", "k"]) + rnd.choice(["=", " = "]) + random_chain(rnd, depth + 1)
                     for name in rnd.sample(["k", "dim", "j"], rnd.choice([0, 0, 1, 2]))]
            text += "(" + listed(rnd, args) + ")"
        elif depth < 2:
            index = [rnd.choice([random_chain(rnd, depth + 1), random_chain(rnd, depth + 1), "None", "...",
                                 random_chain(rnd, depth + 1) + ":", "1:2", ":", "::-1", ":a:", "a:b:c", " : "])
                     for _ in range(rnd.randint(1, 2))]
            text += "[" + listed(rnd, index) + "]"
    return "".join(rnd.choice("-+") for _ in range(rnd.choice([0, 0, 0, 1, 2]))) + text


def listed(rnd: random.Random, items: list) -> str:
    """Items separated by commas, perhaps with a comma after the last."""
    return ", ".join(items) + (rnd.choice(["", ","]) if items else "")


def random_chain(rnd: random.Random, depth: int = 0) -> str:
    parts = [random_operand(rnd, depth)]
    for _ in range(rnd.choice([0, 1, 1, 2, 3, 5])):
        parts.append(rnd.choice(["+", "-", "*", "/", "@", "%", "//", "**"]))
        parts.append(random_operand(rnd, depth))
    text = rnd.choice([" ", ""]).join(parts)
    if depth and rnd.random() < 0.05:
        text += " " + rnd.choice(["<", "==", "if a else", "and", "not in"]) + " " + random_operand(rnd, depth)
    return text


CONTEXTS = [
    "y = {}", "{}", "f({})", "f(a, k={})", "return_ = [{}]", "x[{}] = 1", "a, b = {}, {}", "y = {} < {}",
    "assert {}, {}", "y = {} if {} else {}", "g = lambda a: {}", "y = [{} for i in {}]", "d = {{{}: {}}}",
    "if {}:\n    y = {}\nelse:\n    y = {}", "for i in {}:\n    print({})", "x += {}", "print({}); y = {}",
    "def h(a=1):\n    return {}", "while {}:\n    break", "with {} as w:\n    pass", "del x\ny = not {}",
    "y = ({},)", "y = {} in {}", "y = {} is not {}", "y = -{}", "y = {}[{}:]", "@d({})\ndef h():\n    pass",
]


def random_program(rnd: random.Random) -> str:
    lines = []
    for _ in range(rnd.randint(1, 4)):
        context = rnd.choice(CONTEXTS)
        lines.append(context.format(*(random_chain(rnd) for _ in range(context.count("{}")))))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(6))
def test_random_expressions_in_every_context_give_lark_paths_tree(seed):
    """Chains of every operand the reader knows and some it does not (slices, tuples, keyword
    arguments, f-strings, keywords, comparisons inside brackets), in every kind of statement:
    the fast path gives Lark's tree, or declines exactly where Lark's path finds an error."""
    rnd = random.Random(seed)
    fast, plain = fast_parser(), fast_parser(chains=False)
    reads = reading(fast)
    compared = 0
    for _ in range(150):
        text = random_program(rnd)
        try:
            expected = dump(lark_path(text))
        except Exception:
            expected = None
        got, without = tree(fast, text), tree(plain, text)
        if got is None:  # the fast path declines no more than it did without the reader
            assert without is None, text
            continue
        compared += 1
        assert dump(got) == dump(without) == expected, text
    assert compared > 60
    assert sum(node is not None for node, _ in reads) > 200
    assert sum(node is None for node, _ in reads) > 20  # and it gave up on some


def test_every_program_of_the_corpus_gives_lark_paths_tree_with_the_reader():
    fast = fast_parser()
    reads = reading(fast)
    for text in program_texts() + COVERAGE_TEXTS:
        text = text if text.endswith("\n") else text + "\n"
        assert dump(tree(fast, text)) == dump(lark_path(text)), text
    made = {node for node, _ in reads}
    assert made >= {"BinOp", "Name", "Num", "Str", "Call", "Attribute", "Subscript", "Const",
                    "EllipsisLit", "TupleExpr", "ListExpr", None}


@pytest.mark.parametrize("text, made, where", [
    ("y = x * 1.5 + sin(x) - -2 ** y[0, 1,] @ f(a, k=2,)\n", "BinOp", "\n"),
    ("y = f()\n", "Call", "\n"),
    ("y = (((x)))\n", "Name", "\n"),
    ("y = a.b.c(d)[e]\n", "Subscript", "\n"),
    ("y = 'a' 'b'\n", "Str", "'b'"),  # the parser then refuses the second string
    ("y = a if b else c\n", "Name", "if b"),
    ("y = a < b\n", "Name", "< b"),
    ("y = x  # note\n", "Name", "# note"),
    ("y = True + None\n", "BinOp", "\n"),
    ("y = (a, b), [c, (d,)], (), [], [e,] + x\n", "TupleExpr", ", [c"),
    ("y = x[1:2, :, ::, 1:, :2, ::3, 1:2:3, ...,][:][::-1] * 2\n", "BinOp", "\n"),
    ("y = where(x > 0, x, -x)[a == b:c != d] + f((a < b) < c, a >= b, k=a <= b)\n", "BinOp", "\n"),
])
def test_where_a_chain_ends(text, made, where):
    """The reader reads the longest chain it can and stops before the first token that cannot
    continue it: what follows is read by the driver."""
    fast = fast_parser()
    node, at = fast.chains.read(text, fast_first_token(fast, text, "="))
    assert type(node).__name__ == made and text[at:].startswith(where)


def fast_first_token(fast, text: str, value: str):
    """The fast path's token ``value`` (its first one) in ``text``."""
    return next(t for t in fast._tokens(text, []) if t.value == value)


@pytest.mark.parametrize("text", [
    "y = x[1:2:3:4]\n",      # not a slice
    "y = f(1:2)\n",
    "y = {a: b}\n",          # a dict
    "y = [a for a in b]\n",  # a comprehension
    "y = f(a < b < c)\n",    # a chained comparison
    "y = f(a < b = 1)\n",
    "y = f(a <)\n",
    "y = f(lambda: 1)\n",    # a keyword in an operand's place
    "y = f(x for x in y)\n",  # a generator
    "y = f'{x}'\n",          # an f-string: its fields are parsed later
    "y = f(a,\n  b)\n",      # a newline inside brackets
    "y = 'a\\\nb'\n",        # no: a backslash-newline in a string is not a string here
    "y = x \\\n + 1\n",       # a backslash-newline: the chain may go on after it
    "y = f(k=1, k=2)\n",     # the builder refuses it (the driver's path then words the error)
    "y = 0777\n",            # leading zeros
    "y = " + "1" * 1001 + "\n",  # a literal the postlexer checks
    "y = f((k)=1)\n",        # not a keyword argument
    "y = x[]\n",
    "y = -\n",
])
def test_the_reader_gives_up_where_it_cannot_tell(text):
    fast = fast_parser()
    assert fast.chains.read(text, fast_first_token(fast, text, "="))[0] is None


def test_a_bare_name_before_equals_is_left_to_the_driver():
    """After the "(" of a call the driver reads (its callee is not a chain the reader read),
    ``k=1`` is a keyword argument: the reader gives up on the name ``k`` before "=", and the
    driver reads it, whatever the call."""
    text = "y = {}[a](k=1, j=b + 1)\n"
    fast = fast_parser()
    reads = reading(fast)
    assert dump(tree(fast, text)) == dump(lark_path(text))
    assert (None, "k=1, j=b + 1") in reads


# ------------------------------------------------------------------------------ the tokens

def test_the_reader_reads_the_tokenizers_tokens():
    """At the start of every token of the corpus (and of some unusual texts), the terminals the
    reader tries for the character there (in the whole pattern's order) match the token the
    tokenizer reads, to the same end."""
    fast = fast_parser()
    reader = fast.chains
    texts = program_texts() + COVERAGE_TEXTS + [
        "x = a**=b //= c //d ** e *f ... .5 .e 1.e5 1_0 f'a' F\"b\" fx rb'c' é1 @= != == <= >= -= +=\n",
        "y = a\\\n + \t\fb # c\n\n  \n",
    ]
    checked = 0
    for text in texts:
        text = text if text.endswith("\n") else text + "\n"
        for token in fast._tokens(text, []):
            start = token.start_pos
            code, match, follow = reader.dispatch.get(text[start]) or reader._how(text[start])
            if follow is not None and text[start + 1] not in follow:
                found_code, end = code, start + 1
            else:
                found = match(text, start)
                found_code = reader.codes[found.lastgroup] if code is None or follow else code
                end = found.end()
            assert (found_code, end) == (reader.codes[token.type], token.end_pos), (text, token)
            if follow:  # the match of the literals, without the shortcut, agrees too
                found = match(text, start)
                assert (reader.codes[found.lastgroup], found.end()) == (found_code, end)
            checked += 1
    assert checked > 1000


def test_the_first_characters_of_every_terminal_are_told():
    """The reader tries a terminal only where it can start: that needs its first characters
    (NAME's "[^\\W\\d]" is a negated class: told as such)."""
    from gradcli.lang.fastpath import _first_chars, tables_from_lark
    tables = tables_from_lark(syntax._get_parser())
    firsts = {name: first for name, _, first, _ in tables["terminals"]}
    assert firsts["NAME"] == r"[^\W\d]"
    assert all(first is not None for first in firsts.values()), firsts
    assert _first_chars(r"(?:#[^\n]*)?\n", 0) == "[\\\n\\#]"
    assert _first_chars(r"a?", 0) is None


# ------------------------------------------------------------------------------ where it reads

def test_the_reader_never_reads_after_a_token_the_postlexer_has_work_after():
    """After a newline, an indent, a dedent (indentation to count) and ";" (a statement to count),
    the postlexer has work left before the next token: the driver never asks the reader there."""
    fast = fast_parser()
    shifted_by = {}
    for row in fast.table:
        for symbol, action in row.items():
            if action.__class__ is int:
                shifted_by[action] = symbol
    assert fast.lanes
    assert {shifted_by[state] for state in fast.lanes}.isdisjoint(
        {"_NEWLINE", "_INDENT", "_DEDENT", "SEMICOLON"})
    assert {shifted_by[state] for state in fast.lanes} >= {"EQUAL", "LPAR", "COMMA", "RETURN"}


@pytest.mark.parametrize("line", ["x = 1; y = a + b", "a + b; c + d;", "f(a); g(b)", "if a: b + c; d",
                                  "y = (a +\n b); z = c"])
@pytest.mark.parametrize("limit", [99, 100, 150, 199, 200, 201])
def test_statements_are_counted_as_lark_paths_count_them(monkeypatch, line, limit):
    """--max-statements is counted by the postlexer: the chains it does not see change nothing."""
    text = (line + "\n") * 100
    monkeypatch.setattr(LIMITS, "max_statements", limit)
    results = []
    for fast in (fast_parser(), False):
        monkeypatch.setattr(syntax, "_fast", fast)
        monkeypatch.setattr(syntax, "_fast_from_lark", False)
        try:
            results.append(("ok", dump(syntax.parse(text))))
        except UsageError as err:
            results.append(("limit", str(err)))
    assert results[0] == results[1]


# ------------------------------------------------------------------------------ long and deep

def test_a_long_chain_is_one_read():
    fast = fast_parser()
    reads = reading(fast)
    text = big_program(20_000)
    program = tree(fast, text)
    assert dump(program) == dump(lark_path(text))
    assert reads == [("BinOp", text[3:15])]
    assert isinstance(program.body[0].value, BinOp)


@pytest.mark.parametrize("text", [
    "y = " + "(" * 10_000 + "x * 2" + ")" * 10_000 + "\n",
    "y = " + "neg(" * 10_000 + "x" + ")" * 10_000 + "\n",
    "y = x" + "[0]" * 10_000 + ".sum()" * 10_000 + "\n",
    "y = " + "-" * 10_000 + "x ** " * 10_000 + "2\n",
])
def test_deep_nesting_is_read_without_recursion(text):
    fast = fast_parser()
    reads = reading(fast)
    assert dump(tree(fast, text)) == dump(fast_parser(chains=False).parse(text))
    assert reads[0][0] is not None


CHAIN_MUTATIONS = ["(", ")", "[", "]", ",", "=", "==", "+", "**", "-", "*", "//", "k=", "f(", ".", ":", "\n",
                   "\\\n", "'", "True", "if", "x", "1", " ", "\t", "#", ";", "..."]


def test_mutated_chains_give_lark_paths_tree_or_lark_paths_error(monkeypatch):
    """Fuzz: programs of long chains, edited (see test_parse_fast.fuzz_edited), with the fast
    path's reader."""
    rnd = random.Random(18)
    sources = [random_program(rnd) for _ in range(40)] + [big_program(40), "y = f(a, k=b[0] ** -c.d, j=(e))\n"]
    assert fuzz_edited(monkeypatch, rnd, sources, 500, MUTATIONS + CHAIN_MUTATIONS) > 50


def test_a_grammar_without_a_form_the_reader_makes_has_no_reader():
    """The reader knows the grammar's arith and primary forms; a grammar that lacks one of them
    (its alias gone) is not one it knows: the driver never asks it."""
    from gradcli.lang.chains import entry_states
    from gradcli.lang.fastpath import tables_from_lark
    tables = tables_from_lark(syntax._get_parser())
    assert tables["lanes"] == entry_states(tables["states"], tables["rules"], PostLexer.BUSY_AFTER) != {}
    for alias in ("ellipsis", "kwarg", "arith", "subscript"):
        rules = [rule for rule in tables["rules"] if rule[2] != alias]
        assert entry_states(tables["states"], rules, PostLexer.BUSY_AFTER) == {}


@pytest.mark.parametrize("text, where", [
    ("y = " + "(" * 5000 + "{x: 1}" + ")" * 5000 + "\n", "({x"),
    ("y = " + "f(" * 5000 + "k=1, k=2" + ")" * 5000 + "\n", "(k=1"),
    ("y = " + "(" * 5000 + "\n", "(\n"),
])
def test_where_the_reader_gives_up_it_is_not_asked_again_inside(text, where):
    """Where the reader gives up inside brackets, it says where the innermost one opened: the
    driver does not ask it again before there (it would read the same tokens again, for each
    bracket: quadratic in the depth). Lark's path decides as before."""
    fast = fast_parser()
    reads = reading(fast)
    got = tree(fast, text)
    assert len(reads) < 10, reads[:10]  # not one a bracket
    assert dump(got) == dump(tree(fast_parser(chains=False), text))  # a tree, or None for both
    node, at = fast.chains.read(text, fast_first_token(fast, text, "="))
    assert node is None and text[at:].startswith(where)


def test_a_short_program_compiles_no_pattern_of_its_own():
    """The reader reads a character's first tokens with the tokenizer's whole pattern (compiled
    already) and compiles the pattern of the terminals that can start with it only after many:
    a short program's start compiles none; a long program's trees are the same."""
    fast = fast_parser()
    text = "y = x.grad * 2 + f(a, k=1.5)[0:2] ** -b\nz = (y - 1,)\n"
    assert dump(tree(fast, text)) == dump(lark_path(text))
    assert fast.chains.patterns == {}
    text = big_program(200)
    assert dump(tree(fast, text)) == dump(lark_path(text))
    assert set(fast.chains.patterns) >= {("NAME",), ("NUMBER",)}
