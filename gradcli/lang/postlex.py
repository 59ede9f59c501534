"""The postlexer: Python-style indentation, brackets and keywords, between Lark's lexer and parser.

It turns the whitespace after each newline into ``_INDENT``/``_DEDENT`` tokens, drops newlines
inside ``( )``, ``[ ]`` and ``{ }``, and turns names that are keywords back into keyword tokens (the
contextual lexer reads ``with`` as a NAME where a name may stand). Python keywords the language
does not have are rejected here. It does not import lark: the fast path (:mod:`gradcli.lang.fastpath`)
runs it on its own light tokens; Lark's path uses :class:`gradcli.lang.lark_adapter.GradIndenter`,
the same class mixed into lark's ``Indenter`` and making lark tokens (``postlex.GradIndenter``
still names it, imported on first use).
"""

from __future__ import annotations

import keyword
from collections import namedtuple

from ..errors import GradSyntaxError
from ..limits import LIMITS, MAX_NUMBER_CHARS, MAX_STRING_ESCAPES, statements_error

_LONG_NUMBER = None


def prescan(text: str) -> None:
    """Refuse, before Lark's lexer runs, a run of digits or a line of escapes too long for it: its
    regular expressions repeat a group per digit ("_?\\d") and per escape, and Python's ``re`` keeps
    state for each repetition (a 10 MiB number took 3.5 GB before it reached :func:`_check_literal`).
    Linear in the text; the limits are :func:`_check_literal`'s."""
    m = _long_number(text)
    if m is not None:
        line = text.count("\n", 0, m.start()) + 1
        column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        raise GradSyntaxError(f"this number literal has more than {MAX_NUMBER_CHARS:,} characters, the limit",
                              line=line, column=column)
    if text.count("\\") > MAX_STRING_ESCAPES:
        for i, line_text in enumerate(text.split("\n"), 1):
            n = line_text.count("\\")
            if n > MAX_STRING_ESCAPES:
                raise GradSyntaxError(f"this line has {n:,} backslashes (string escapes), over the limit of "
                                      f"{MAX_STRING_ESCAPES:,}", line=i, column=line_text.index("\\") + 1)


def _long_number(text: str):
    """The first run of digits (and ``_``) longer than MAX_NUMBER_CHARS that starts a token (no word
    character before it), as the match of ``(?<!\\w)\\d[\\d_]{N}``, or None. Searched without the
    lookbehind, which costs ``re`` a test at every character (two thirds of the search of a long
    program); a run found after a word character is skipped whole: no position in it can match."""
    global _LONG_NUMBER, _WORD, _RUN
    if text.isascii() and _ZEROS not in text.translate(_DIGITS_AS_ZEROS):  # no run that long of [0-9_]
        return None  # (a tenth of the search's time on a long program: ~1 ms a megabyte)
    if _LONG_NUMBER is None:
        import re
        _LONG_NUMBER = re.compile(r"\d[\d_]{%d}" % MAX_NUMBER_CHARS)
        _WORD, _RUN = re.compile(r"\w"), re.compile(r"[\d_]*")
    pos = 0
    while True:
        m = _LONG_NUMBER.search(text, pos)
        if m is None or m.start() == 0 or not _WORD.match(text, m.start() - 1):
            return m
        pos = _RUN.match(text, m.end()).end()


_WORD = _RUN = None
# ASCII digits and "_" as "0", everything else as it is: a run of MAX_NUMBER_CHARS + 1 of them is
# _ZEROS (\d also matches other scripts' digits: a text that is not ASCII takes the search)
_DIGITS_AS_ZEROS = str.maketrans(dict.fromkeys("123456789_", "0"))
_ZEROS = "0" * (MAX_NUMBER_CHARS + 1)


# The length from which a literal is checked by _check_literal (shorter ones are within its limits).
LONG_LITERAL = 1000


def _check_literal(token) -> None:
    """Refuse, before the builder converts it, a number literal longer than limits.MAX_NUMBER_CHARS
    (int() of megabytes of digits is quadratic) or a string with more than MAX_STRING_ESCAPES
    escapes (decoding millions of them takes gigabytes; a long plain string costs only its text)."""
    value = token.value
    if token.type == "NUMBER":
        if len(value) > MAX_NUMBER_CHARS:
            raise GradSyntaxError(f"this number literal has {len(value):,} characters, over the limit of "
                                  f"{MAX_NUMBER_CHARS:,}", line=token.line, column=token.column)
    elif len(value) > MAX_STRING_ESCAPES and value.count("\\") > MAX_STRING_ESCAPES:
        raise GradSyntaxError(f"this string literal has {value.count(chr(92)):,} escapes, over the limit of "
                              f"{MAX_STRING_ESCAPES:,}", line=token.line, column=token.column)

# Terminal names (see the grammar) and how messages name them.
OPEN = {"LPAR": "(", "LSQB": "[", "LBRACE": "{"}
CLOSE = {"RPAR": "(", "RSQB": "[", "RBRACE": "{"}   # a closing bracket -> the opening one it matches
KEYWORD_TERMINALS = {name: name.upper() for name in (
    "with", "assert", "del", "lambda", "True", "False", "None", "if", "elif", "else", "for", "in",
    "while", "break", "continue", "def", "return", "pass", "and", "or", "not", "is", "import",
    "from", "as")}
UNSUPPORTED_KEYWORDS = frozenset(keyword.kwlist) - set(KEYWORD_TERMINALS)
# What the message for an unsupported keyword (class, try, global, yield...) says the language has.
SUPPORTED_STATEMENTS = ("if/elif/else, for, while, break, continue, def, return, lambda, with, "
                        "import, from ... import, assert, del, pass")


# A token as the fast path makes it: a named tuple (cheap to build with tuple.__new__) with a Lark
# token's fields, in the order of lark's ``Token(...)`` arguments: all that the postlexer and the
# AST builder read.
Token = namedtuple("Token", "type value start_pos line column end_line end_column end_pos")


class PostLexer:
    """Python-style indentation (what lark's Indenter does), plus: an open-bracket stack (for
    "'(' was never closed"), no assertion on a stray closing bracket (the parser reports
    it), a GradSyntaxError for a bad dedent or an indented first line, and keywords the
    contextual lexer read as names turned back into keywords (or rejected, for Python
    keywords the language does not have)."""

    NL_type = "_NEWLINE"
    OPEN_PAREN_types = list(OPEN)
    CLOSE_PAREN_types = list(CLOSE)
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    SEMICOLON_type = "SEMICOLON"
    tab_len = 8
    # The tokens after which it has more to do before it reads the next one (the indentation after
    # a newline, a statement counted after ";"): the fast path's chains never read on after them.
    BUSY_AFTER = frozenset((NL_type, INDENT_type, DEDENT_type, SEMICOLON_type))
    # The token class it makes (keywords, indents, dedents): the fast path's light tuple here,
    # lark's Token in lark_adapter.GradIndenter.
    Token = Token

    def __init__(self) -> None:
        super().__init__()
        self.brackets: list = []  # the open brackets' tokens, innermost last

    def process(self, stream):
        self.paren_level = 0
        self.indent_level = [0]
        self.brackets = []
        return self._process(stream)

    def _at_end_of(self, token, type_: str, value: str):
        return self.Token(type_, value, token.end_pos, token.end_line, token.end_column,
                     token.end_line, token.end_column, token.end_pos)

    def handle_NL(self, token):
        if self.brackets:
            return
        yield token
        indent_str = token.value.rsplit("\n", 1)[1] if "\n" in token.value else ""
        indent = 0
        for ch in indent_str:
            indent = (indent // self.tab_len + 1) * self.tab_len if ch == "\t" else indent + 1
        if indent > self.indent_level[-1]:
            self.indent_level.append(indent)
            yield self._at_end_of(token, self.INDENT_type, indent_str)
        else:
            while indent < self.indent_level[-1]:
                self.indent_level.pop()
                yield self._at_end_of(token, self.DEDENT_type, indent_str)
            if indent != self.indent_level[-1]:
                raise GradSyntaxError(
                    "unindent does not match any outer indentation level",
                    line=token.end_line, column=token.end_column)

    def _process(self, stream):
        """The tokens of ``stream`` with the indentation's tokens added and keywords made (see the
        class). Half a million tokens go through here for a long program: the loop reads only
        local names (the class's and the module's constants copied in once)."""
        token = None
        first = True
        budget = LIMITS.max_statements  # --max-statements, counted while parsing (stops early)
        content = semicolon = heading = False
        nl_type, semicolon_type, brackets, make = self.NL_type, self.SEMICOLON_type, self.brackets, self.Token
        keywords, unsupported, opening, closing = KEYWORD_TERMINALS, UNSUPPORTED_KEYWORDS, OPEN, CLOSE
        for token in stream:
            ttype = token.type
            if ttype == nl_type:
                first = False
                if content and not brackets and not heading:  # a line of statements ended: one more
                    budget -= 1
                    if budget < 0:
                        raise statements_error(LIMITS.max_statements, more=True)
                content = semicolon = False
                yield from self.handle_NL(token)
                continue
            if semicolon and not brackets:  # "a; b": the ";" ended a statement
                budget -= 1
            if not content:  # "else:" and "@decorator" lines are parts of the statement they head
                heading = token.value == "else" or token.value == "@"
            content, semicolon = True, ttype == semicolon_type
            if (ttype == "NUMBER" or ttype == "STRING") and len(token.value) > LONG_LITERAL:
                _check_literal(token)
            if first:
                first = False
                if token.column != 1:
                    raise GradSyntaxError("unexpected indent", line=token.line,
                                          column=token.column)
            if ttype == "NAME":
                value = token.value
                if value in keywords:  # a keyword where it cannot be: the parser says so
                    token = make(keywords[value], value, token.start_pos, token.line,
                                 token.column, token.end_line, token.end_column, token.end_pos)
                elif value in unsupported:
                    raise GradSyntaxError(f"'{value}' is not part of the gradcli language (its "
                                          f"statements: {SUPPORTED_STATEMENTS})",
                                          line=token.line, column=token.column)
            yield token
            # After the parser took the token: on an error, the stack is as before it.
            if ttype in opening:
                brackets.append(token)
            elif ttype in closing and brackets:
                brackets.pop()
        while len(self.indent_level) > 1:
            self.indent_level.pop()
            if token is None:
                yield self.Token(self.DEDENT_type, "", 0, 1, 1, 1, 1, 0)
            else:
                yield self._at_end_of(token, self.DEDENT_type, "")


def __getattr__(name: str):
    """``postlex.GradIndenter``: the lark adapter's postlexer, imported (with lark) on first use."""
    if name == "GradIndenter":
        from .lark_adapter import GradIndenter
        return GradIndenter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
