"""The parser's fast path: Lark's own terminals and LALR table, driven without Lark's per-token layers.

A 100,000-term program is half a million tokens, and Lark's lexer and parser loop cost several
microseconds a token (a regex match for each token and each run of spaces, a ``Token`` built in
Python, a line counter, a method call per token and per reduction, a hash of the rule for each
callback). :class:`FastPath` does the same work in two tight loops:

- the tokenizer: one compiled regular expression made of the grammar's terminals, in the order and
  with the patterns Lark's lexer uses for them (``BasicLexer`` of the parser's own
  ``lexer_conf``), matched at each position in turn, the ignored spaces skipped in the same
  match; tokens are light tuples with a Lark token's fields;
- the postlexer (:class:`~gradcli.lang.postlex.GradIndenter`, the same one as Lark's path);
- the LALR driver: Lark's parse table and its callbacks (the embedded AST builder), shifting and
  reducing as Lark's ``ParserState.feed_token`` does, with each rule's callback looked up once.

The grammar stays the only definition of the language: nothing here knows a terminal or a rule.
It differs from Lark's path in one way only: the contextual lexer tries, in each parser state,
just the terminals that state accepts, and this tokenizer tries them all (in the same order). On
a text that both read without error they read the same tokens: a terminal that matches first among
all terminals also matches first among those a state accepts, and a token the state does not
accept stops the fast path. So any problem at all -- a character no terminal matches, a token
the parser rejects, a syntax error from the postlexer or the AST builder -- makes
:meth:`FastPath.parse` return None, and :func:`gradcli.lang.parser.parse` parses the text again
with Lark's path, whose result (or error message, line, column and hint) is the answer: errors
are exactly what Lark's path says, at the price of a second parse of a program that has one.
"""

from __future__ import annotations

import re
from collections import namedtuple
from itertools import chain
from typing import Any

from ..errors import GradcliError, GradSyntaxError


# A token as the fast path makes it: a named tuple (cheap to build with tuple.__new__) with a Lark
# token's fields, all that the postlexer and the AST builder read.
Token = namedtuple("Token", "type value start_pos line column end_line end_column end_pos")


class _NoFastPath(Exception):
    """The fast path cannot tell: Lark's path parses the text (and words any error)."""


class FastPath:
    """The tokenizer and LALR driver for one Lark parser (see the module docstring)."""

    def __init__(self, lark, indenter) -> None:
        from lark.lexer import BasicLexer, PatternStr
        conf = lark.lexer_conf
        if conf.callbacks or conf.use_bytes:  # lexer callbacks would change tokens: never fast
            raise ValueError("the fast path needs a lexer without callbacks")
        lexer = BasicLexer(conf)
        scanner = lexer.scanner  # the terminals in Lark's order, keywords folded into NAME
        self.ignore = frozenset(lexer.ignore_types)
        self.newline_types = frozenset(lexer.newline_types)
        spaces = [t for t in scanner.terminals if t.name in self.ignore and t.name not in self.newline_types]
        tokens = [t for t in scanner.terminals if t not in spaces]
        _check_spaces_start_nothing(spaces, tokens, conf.g_regex_flags)
        skip = "|".join(t.pattern.to_regexp() for t in spaces)
        self.regex = re.compile(f"(?:{skip})*(?:" + "|".join(
            f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in tokens) + ")", conf.g_regex_flags)
        # Keywords that NAME's pattern also matches come out as NAME, as from the contextual lexer
        # in a state where a name may stand: the postlexer turns them into keywords; it must
        # know them all.
        from .postlex import KEYWORD_TERMINALS
        folded = {t.pattern.value for t in lexer.terminals
                  if isinstance(t.pattern, PatternStr) and t not in scanner.terminals}
        if not folded <= set(KEYWORD_TERMINALS):
            raise ValueError(f"keywords the postlexer does not know: {folded - set(KEYWORD_TERMINALS)}")
        self.indenter = indenter
        state = lark.parse_interactive("").parser_state.parse_conf
        self.start_state, self.end_state = state.start_state, state.end_state
        self.table = _compile_table(state.states, state.callbacks)

    def parse(self, text: str) -> Any:
        """The AST of ``text`` (the value of the grammar's start rule), or None where the fast path
        cannot tell (any error: Lark's path then parses ``text`` and reports it)."""
        try:
            return self._drive(self.indenter.process(self._tokens(text)))
        except GradSyntaxError:
            return None
        except (GradcliError, MemoryError, KeyboardInterrupt):  # limits, --timeout: as they are
            raise
        except Exception:  # _NoFastPath, and anything unforeseen: Lark's path decides
            return None

    def _tokens(self, text: str):
        """Lark's tokens of ``text``, the ignored ones (spaces) left out; line and column counted
        as Lark's LineCounter does."""
        new, Tok, match = tuple.__new__, Token, self.regex.match
        ignore, newline_types = self.ignore, self.newline_types
        pos = line_start = 0
        line = 1
        size = len(text)
        while pos < size:
            m = match(text, pos)  # anchored: garbage stops it at once (finditer would search on)
            if m is None:  # a character no terminal matches
                raise _NoFastPath
            ttype = m.lastgroup
            start, end = m.span(ttype)  # after the spaces before it
            value = m.group(ttype)
            if ttype in newline_types and "\n" in value:
                end_line = line + value.count("\n")
                end_start = start + value.rindex("\n") + 1
            else:
                end_line, end_start = line, line_start
            if ttype not in ignore:
                yield new(Tok, (ttype, value, start, line, start - line_start + 1,
                                end_line, end - end_start + 1, end))
            pos, line, line_start = end, end_line, end_start

    def _drive(self, tokens) -> Any:
        """Shift and reduce as Lark's LALR parser does, calling the same callbacks; the input
        ends with Lark's "$END" token."""
        table, end_state = self.table, self.end_state
        states = [self.start_state]
        values: list = []
        for token in chain(tokens, _END):
            ttype = token.type
            while True:
                action = table[states[-1]].get(ttype)
                if action is None:
                    raise _NoFastPath
                if action.__class__ is int:  # shift
                    states.append(action)
                    values.append(token)
                    break
                size, origin, callback = action  # reduce
                if callback is None:  # a unit rule: the value stays, the state moves
                    states[-1] = table[states[-2]][origin]
                else:
                    children = values[-size:] if size else []
                    if size:
                        del values[-size:]
                        del states[-size:]
                    values.append(callback(children))
                    states.append(table[states[-1]][origin])
                if ttype == "$END" and states[-1] == end_state:
                    return values[-1]
        raise _NoFastPath


_END = (Token("$END", "", 0, 1, 1, 1, 1, 0),)


def _check_spaces_start_nothing(spaces: list, tokens: list, flags: int) -> None:
    """The tokenizer skips the ignored spaces (``[\\t \\f]+``) before each token, where Lark
    matches them as tokens of their own: the same tokens as long as no other terminal can start
    with a character that starts spaces. Checked for every terminal when the fast path is built:
    exactly for a literal, by trying each such character followed by a sample of what could
    come next for a pattern (the grammar's patterns -- names, numbers, strings, newlines -- are
    simple enough for that)."""
    space = re.compile("|".join(t.pattern.to_regexp() for t in spaces), flags)
    starts = [chr(c) for c in range(1, 0x3001) if space.match(chr(c))]
    tails = ["", "a", "0", ".", "\n", "#", '"', "'", " ", "\t", "(", "=", "\\\n", "f'", 'f"']
    for t in tokens:
        if t.pattern.type == "str":
            bad = t.pattern.value[:1] in starts
        else:
            pattern = re.compile(t.pattern.to_regexp(), flags)
            bad = any(pattern.match(ch + tail) for ch in starts for tail in tails)
        if bad:
            raise ValueError(f"terminal {t.name} may start with a character that starts ignored spaces")


def _compile_table(states: dict, callbacks: dict) -> dict:
    """Lark's parse table as ``{state: {symbol: action}}`` with an int for a shift (or a goto)
    and ``(size, rule's symbol, callback)`` for a reduction: no rule hashed while parsing. A
    precedence level with nothing but its operand (``?comparison: arith``) gives the operand
    itself: its callback is None (the driver leaves the value where it is)."""
    from lark.parse_tree_builder import ExpandSingleChild
    from lark.parsers.lalr_analysis import Shift
    if any(not hasattr(key, "origin") for key in callbacks):  # callbacks on terminals
        raise ValueError("the fast path needs a parser without terminal callbacks")
    by_rule = {id(rule): cb for rule, cb in callbacks.items()}
    table = {}
    for state, actions in states.items():
        row = {}
        for symbol, (action, arg) in actions.items():
            if action is Shift:
                row[symbol] = arg
            else:
                callback = by_rule.get(id(arg)) or callbacks[arg]
                if type(callback) is ExpandSingleChild and len(arg.expansion) == 1:
                    callback = None  # returns its one child
                row[symbol] = (len(arg.expansion), arg.origin.name, callback)
        table[state] = row
    return table
