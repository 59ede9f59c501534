"""Arithmetic chains read straight from the text: the fast path's lane for expressions.

Nearly every token of a long program is part of an expression, and the LALR driver
(:mod:`gradcli.lang.fastpath`) spends a few microseconds on each: a match of the whole
tokenizer pattern, a token, the postlexer, a shift and two or three reductions. So the driver,
each time it shifts a token after which the grammar's ``arith`` may start (an ``=``, a ``(``,
a ``,``, ``return``...: the states of :func:`entry_states`), asks :meth:`ChainReader.read`
for the arith that starts after it. The reader reads the text itself, without tokens, by the
grammar's ``arith`` and the most common of its ``primary`` forms (names, numbers, strings,
``True``/``False``/``None``, ``...``, parentheses, tuples, lists, attributes, calls with
positional and keyword arguments, indexing and slices; inside brackets, comparisons too), and
makes the node with the builder's own functions (``arith`` climbs the precedence, ``call``,
``attribute``, ``name_node``...); the driver pushes that node as the value of an ``arith`` and
reads on from where the reader stopped: at the first token that cannot continue the chain (a
newline, ``=``, ``<``, ``if``, a closing bracket...).

The reader gives up on anything else: a keyword in an operand's place (``not``, ``lambda``,
``if``...), a dict, a comprehension, a chained comparison, a newline or a backslash inside
the chain, an f-string, a literal the postlexer checks for its length
(:data:`~gradcli.lang.postlex.LONG_LITERAL`), a literal the builder refuses, a bare name
before ``=`` (perhaps a keyword argument of a call the driver is reading). The driver then
goes on with the next token as before: nothing is lost but the time.

Why the tree is the same as Lark's: the reader's chains are arith chains of the grammar, and
it builds the builder's nodes for them. The grammar is LALR(1) without conflicts, hence
unambiguous: if the parse with the reader's arith in place of its tokens succeeds, it is a
derivation of the text, the only one, the one Lark's path finds; if it fails, the fast path
declines as for any error. The postlexer sees none of the reader's tokens: it would have done
nothing with them (they hold no newline, no ``;``, no keyword, no long literal, and brackets
that close), which is why the driver never asks after a token that leaves it work to do
(:attr:`~gradcli.lang.postlex.PostLexer.BUSY_AFTER`). Each token is the one the fast path's
tokenizer (Lark's terminals, in Lark's order) reads there: the reader tries, at each position,
only the terminals that can start with the character there, in the same order
(:meth:`ChainReader._how`).
"""

from __future__ import annotations

import re

from ..errors import GradSyntaxError
from .builder import BINARY_STRENGTH, name_node, number_node
from .postlex import KEYWORD_TERMINALS, LONG_LITERAL, UNSUPPORTED_KEYWORDS, Token

# The grammar's rule the reader reads, and what its chains are made of (grammar/gradcli.lark):
# the rules (by their symbol) and aliases (builder methods) it makes nodes of.
ARITH = "arith"
_FORMS = {ARITH: {"arith"}, "kwarg": {"kwarg"}, "comparison": {"lt", "le", "gt", "ge", "eq", "ne"},
          "primary": {"name", "number", "string", "true", "false", "none", "ellipsis", "paren", "tuple", "list",
                      "attribute", "call", "subscript"}, "slice": {"slice"}}
# the comparisons the reader reads inside brackets (one to a test: "a < b < c" is an error), and
# the builder's methods for them
_COMPARISONS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
_SIGNS = ("-", "+")
# where the reader is in a chain
_OPERAND, _AFTER, _ATTRIBUTE = "operand", "after an operand", "after a dot"
# the brackets a chain can be in (the kind of a frame)
# (a "(" is a _PAREN until a "," makes it a _TUPLE)
_PAREN, _TUPLE, _LIST, _CALL, _INDEX = "(", "tuple", "[", "call", "index"
_CLOSING = {_PAREN: ")", _TUPLE: ")", _LIST: "]", _CALL: ")", _INDEX: "]"}
_SEPARATORS = frozenset((",", ":", ")", "]"))  # what ends a part of a bracket
_NOTHING = re.compile("(?!)").match  # the matcher of a character no terminal starts with
_COMPILE_AFTER = 32  # tokens of a first character read with the whole pattern (see ChainReader._later)
_new = tuple.__new__  # a Token made without its class's constructor (Python code of namedtuple's)


def entry_states(states: dict, rules: list, busy_after) -> dict:
    """``{state: the state after an arith there}`` for the LALR ``states`` (the fast path's plain
    tables: symbol -> next state, or a reduction's negative number) where an ``arith`` can start
    and that are entered by shifting a token after which the postlexer has nothing left to do
    (not one of ``busy_after``). None at all where the grammar's ``rules`` (the plain tables':
    symbol, size, alias...) lack a form the reader makes: a grammar it does not know."""
    made: dict = {}
    for rule in rules:
        made.setdefault(rule[0], set()).add(rule[2])
    if any(not names <= made.get(symbol, set()) for symbol, names in _FORMS.items()):
        return {}
    nonterminals = set(made)
    shifted_by = {}  # each state's accessing symbol (in an LR automaton, one per state)
    for row in states.values():
        for symbol, action in row.items():
            if action >= 0:
                shifted_by[action] = symbol
    return {state: row[ARITH] for state, row in states.items()
            if ARITH in row and state in shifted_by
            and shifted_by[state] not in nonterminals and shifted_by[state] not in busy_after}


def space_characters(spaces: str, flags: int) -> str:
    """The ASCII characters that the ignored spaces' pattern matches (others: no terminal starts
    with them, and the reader gives up there)."""
    return "".join(ch for ch in map(chr, range(128)) if re.fullmatch(f"(?:{spaces})+", ch, flags))


class ChainReader:
    """Reads an arith chain from the text (see the module docstring) with the grammar's
    terminals (the fast path's tables: each one's name, pattern, first characters and literal
    text) and the AST builder."""

    def __init__(self, terminals: list, spaces: str, ignore, flags: int, builder, whole) -> None:
        """``spaces``: the characters of the ignored spaces (:func:`space_characters`); ``whole``:
        the match of the tokenizer's pattern (all the terminals, spaces before them)."""
        if flags & re.IGNORECASE:  # first characters compared as they are
            raise ValueError("the chains need case-sensitive terminals")
        self.terminals = terminals
        self.flags = flags
        # a token's code: a literal's text ("+", "(") or a pattern's terminal name ("NAME")
        self.codes = {name: name if literal is None else literal for name, _, _, literal in terminals}
        self.names = {code: name for name, code in self.codes.items()}
        self.spaces = spaces
        self.ignored = frozenset(name for name in ignore if name in self.codes)  # "\\\n"
        self.dispatch: dict = {}  # first character -> how to read the token there (:meth:`_how`)
        self.patterns: dict = {}  # the terminals that can start with a character -> their pattern's match
        # The binary operators, one token each for all their uses: arith reads only their text.
        self.binary = {op: Token(self.names[op], op, 0, 0, 0, 0, 0, 0) for op in BINARY_STRENGTH}
        self.reserved = frozenset(KEYWORD_TERMINALS) | UNSUPPORTED_KEYWORDS
        self.constants = {"True": builder.true, "False": builder.false, "None": builder.none}
        self.comparisons = {op: getattr(builder, name) for op, name in _COMPARISONS.items()}
        self.builder = builder
        self.whole = whole

    def _how(self, ch: str) -> tuple:
        """How to read a token that starts with ``ch``: ``(code, match, follow)``. The terminals
        tried are those that can start with ``ch``, in the order of the whole pattern: the first
        that matches is the one the whole pattern matches; ``match`` matches them, and its
        ``lastgroup`` names the one that matched where ``code`` is None (one terminal only: its
        code). Where they are all literals and ``ch`` is one of them, ``follow`` holds the
        characters that the longer ones go on with after ``ch`` (none: it is one character); a
        token is that character where the next one is not one of them (``+`` but for ``+=``),
        without a match; else ``follow`` is None. Where an ignored terminal can start with
        ``ch`` (a backslash before a newline: the chain may go on after it), a match that never
        matches: the reader gives up there. Made on first use."""
        candidates = [t for t in self.terminals if (t[3][:1] == ch if t[3] is not None else
                                                     t[2] is None or re.match(t[2], ch, self.flags))]
        if any(t[0] in self.ignored for t in candidates):
            candidates = []
        literals = [literal for _, _, _, literal in candidates]
        if ch in literals and None not in literals:
            code, follow = ch, "".join(sorted({literal[1] for literal in literals if len(literal) > 1}))
        else:
            code, follow = self.codes[candidates[0][0]] if len(candidates) == 1 else None, None
        how = self.dispatch[ch] = (code, self._later(ch, candidates) if candidates else _NOTHING, follow)
        return how

    def _later(self, ch: str, candidates: list):
        """A match of the whole tokenizer pattern (compiled already), standing in for the
        ``candidates``' own pattern until ``ch`` has started :data:`_COMPILE_AFTER` tokens; then
        that pattern is compiled and put in the table. A short program compiles none (they cost
        a few hundred microseconds of a start), a long one those it reads a lot with."""
        uses = 0

        def match(text: str, pos: int):
            nonlocal uses
            uses += 1
            if uses == _COMPILE_AFTER:
                code, _, follow = self.dispatch[ch]
                self.dispatch[ch] = (code, self._pattern(candidates), follow)
            return self.whole(text, pos)
        return match

    def _pattern(self, candidates: list):
        """The match of a pattern of the ``candidates`` terminals, in their order; one per set of
        terminals (names' first letters are many, their terminals few)."""
        key = tuple(name for name, _, _, _ in candidates)
        if key not in self.patterns:
            if len(candidates) == 1:
                self.patterns[key] = re.compile(candidates[0][1], self.flags).match
            else:
                self.patterns[key] = re.compile("|".join(f"(?:{regexp})(?P<{name}>)" for name, regexp, _, _
                                                         in candidates), self.flags).match
        return self.patterns[key]

    def read(self, text: str, after) -> tuple:
        """``(node, position)``: the arith that starts after the token ``after`` (its node, and
        where in ``text`` the token after it starts); where the reader cannot tell, ``(None,
        position)``: asked again before that position, it would give up again where it did
        (inside the brackets opened there), and a driver that asked it after every token in
        them would read their tokens again and again (``(((...`` 100,000 deep, never closed)."""
        return self._read(text, after.end_pos, after.end_line, after.end_pos - after.end_column + 1)

    def _read(self, text: str, pos: int, line: int, line_start: int):
        """:meth:`read` from ``pos`` on ``line`` (which starts at ``line_start``): one loop over
        the tokens, the brackets on an explicit stack of frames (nothing recursive)."""
        frames: list = []  # the brackets open around the chain being read, innermost last (see _frame)
        try:
            return self._chain(text, pos, line, line_start, frames)
        except (GradSyntaxError, IndexError):  # a literal or call the builder refuses; the text's end
            return _give_up(frames)

    def _chain(self, text: str, pos: int, line: int, line_start: int, frames: list):
        """The loop of :meth:`_read`."""
        dispatch, spaces, codes, binary, reserved = self.dispatch, self.spaces, self.codes, self.binary, self.reserved
        comparisons = self.comparisons
        before = line_start - 1  # where the line starts, less one: a position's column is position - before
        arith = self.builder.arith
        items: list = []  # the chain being read: operands, operators and signs, as arith takes them
        node = None  # the operand being read (trailers may follow it)
        state = _OPERAND
        plain = False  # whether the chain so far is one name (a keyword argument's, if "=" follows)
        while True:
            ch = text[pos]
            while ch in spaces:
                pos += 1
                ch = text[pos]
            try:
                code, match, follow = dispatch[ch]
            except KeyError:
                code, match, follow = self._how(ch)
            if follow is not None and text[pos + 1] not in follow:  # the one character ch
                end = pos + 1
            else:
                found = match(text, pos)
                if found is None:
                    return _give_up(frames)
                end = found.end()
                if code is None or follow:
                    code = codes[found.lastgroup]
            if state is _AFTER:
                if code in binary:
                    items.append(node)
                    items.append(binary[code])
                    state = _OPERAND
                elif code == "(":
                    frames.append(_frame(_CALL, items, node, pos))
                    items = []
                    state = _OPERAND
                elif code == ".":
                    state = _ATTRIBUTE
                elif code == "[":
                    frames.append(_frame(_INDEX, items, node, pos))
                    items = []
                    state = _OPERAND
                else:  # the chain ends here
                    items.append(node)
                    value = arith(*items) if len(items) > 1 else node
                    if not frames:
                        if plain and code == "=":  # perhaps a keyword argument: the driver's way
                            return _give_up(frames)
                        return value, pos
                    frame = frames[-1]
                    compared = frame[7] is not None
                    if compared:  # the right side of a comparison
                        value = frame[7](frame[8], value)
                        frame[7] = None
                        plain = False
                    if code in comparisons:  # the left side of one
                        if compared:  # "a < b < c"
                            return _give_up(frames)
                        frame[7], frame[8] = comparisons[code], value
                        items = []
                        state = _OPERAND
                    elif frame[0] is _PAREN and code == ")":  # (a): a itself
                        items = frames.pop()[1]
                        node = value
                    elif code == "=" and frame[0] is _CALL and plain and frame[4] is None:  # a keyword argument
                        frame[4] = self._token("NAME", node.id, line, node.column, before + node.end_column)
                        items = []
                        state = _OPERAND
                    else:
                        done = self._part(frame, value, code, line, pos - before, end)
                        if done is None:
                            return _give_up(frames)
                        if done is False:  # another part follows
                            items = []
                            state = _OPERAND
                        else:  # the bracket closed
                            node = done
                            items = frames.pop()[1]
                plain = False
            elif state is _OPERAND:
                if code == "NAME":
                    value = text[pos:end]
                    if value in reserved:
                        constant = self.constants.get(value)
                        if constant is None:
                            return _give_up(frames)
                        node = constant(self._token(KEYWORD_TERMINALS[value], value, line, pos - before, end))
                    else:
                        node = name_node(value, line, pos - before, line, end - before)
                        plain = not items
                    state = _AFTER
                elif code == "NUMBER":
                    if end - pos > LONG_LITERAL:
                        return _give_up(frames)
                    node = number_node(text[pos:end], line, pos - before, line, end - before)
                    state = _AFTER
                elif code == "(" or code == "[":  # a bracketed expression, a tuple or a list
                    frames.append(_frame(_PAREN if code == "(" else _LIST, items,
                                         self._token(self.names[code], code, line, pos - before, end), pos))
                    items = []
                elif code in _SIGNS:
                    items.append(self._token(self.names[code], code, line, pos - before, end))
                elif code == "STRING":
                    value = text[pos:end]
                    if value[0] in "fF" or "\n" in value or end - pos > LONG_LITERAL:
                        return _give_up(frames)  # f-strings leave fields to parse: the driver's way
                    node = self.builder.string(self._token("STRING", value, line, pos - before, end))
                    state = _AFTER
                elif code == "...":
                    node = self.builder.ellipsis(self._token(self.names[code], code, line, pos - before, end))
                    state = _AFTER
                elif frames and not items and code in _SEPARATORS:  # an empty part
                    done = (self._part(frames[-1], None, code, line, pos - before, end)
                            if frames[-1][7] is None else None)  # (not a comparison's right side)
                    if done is None:
                        return _give_up(frames)
                    if done is not False:  # the bracket closed
                        node = done
                        items = frames.pop()[1]
                        state = _AFTER
                else:
                    return _give_up(frames)
            else:  # _ATTRIBUTE: the name after a dot
                value = text[pos:end]
                if code != "NAME" or value in reserved:
                    return _give_up(frames)
                node = self.builder.attribute(node, None, self._token("NAME", value, line, pos - before, end))
                state = _AFTER
            pos = end

    @staticmethod
    def _token(name: str, value: str, line: int, column: int, end: int) -> Token:
        """The token ``value`` of terminal ``name`` at ``column`` of ``line``, ending at offset
        ``end`` of the text: for the builder's methods that take tokens."""
        return _new(Token, (name, value, end - len(value), line, column, line, column + len(value), end))

    def _part(self, frame: list, value, code: str, line: int, column: int, end: int):
        """A part of a bracket's frame ends (an argument, an item, an index or a part of a slice:
        ``value``, None where it is empty) at ``code`` (at ``column``): False where another part
        follows, the node of the bracket where it closes, None where the reader cannot tell."""
        kind, slicing = frame[0], frame[6]
        if kind is _INDEX and (code == ":" or slicing is not None):  # a slice: [start] : [stop] [: [step]]
            if code == ":":
                colon = self._token(self.names[code], code, line, column, end)
                if slicing is None:
                    frame[6] = [value, colon, None, None]
                    return False
                if slicing[3] is not None:  # a third colon
                    return None
                slicing[2:] = [value, colon]
                return False
            start, first, stop, second = slicing
            frame[6] = None
            value = (self.builder.slice(start, first, value, None, None) if second is None else
                     self.builder.slice(start, first, stop, second, value))
        elif value is None:  # "f()", "f(a,)", "()", "(a,)", "[]", "[a,]", "x[0,]" (not "x[]", "f(,)", "f(a=)")
            if code != _CLOSING[kind] or frame[4] is not None or kind is _INDEX and not frame[3]:
                return None
            return self._close(frame, code, line, column, end)
        if code == ",":
            if kind is _PAREN:  # (a, ...): a tuple
                frame[0] = _TUPLE
            self._argument(frame, value)
            return False
        if code == _CLOSING[kind]:
            self._argument(frame, value)
            return self._close(frame, code, line, column, end)
        return None

    def _argument(self, frame: list, value) -> None:
        """One more argument (or index) of a frame's call (or indexing)."""
        keyword = frame[4]
        if keyword is not None:
            frame[4] = None
            value = self.builder.kwarg(keyword, value)
        frame[3].append(value)

    def _close(self, frame: list, code: str, line: int, column: int, end: int):
        """The node of a frame's call, indexing, tuple or list, closed by ``code`` at ``column``."""
        kind, _, head, parts = frame[:4]
        close = self._token(self.names[code], code, line, column, end)
        if kind is _CALL:
            return self.builder.call(head, None, *parts, close)
        if kind is _INDEX:
            return self.builder.subscript(head, None, *parts, close)
        if kind is _LIST:
            return self.builder.list(head, *parts, close)
        return self.builder.tuple(head, *parts, close)  # "()" too (a _PAREN, still)


def _frame(kind: str, enclosing: list, head, at: int) -> list:
    """A bracket open around the chain being read: ``[kind, the enclosing chain, the called or
    indexed node (the opening token of a bracketed expression, tuple or list), the arguments or
    items read so far, a keyword argument's name token or None, where the bracket is, the slice
    being read or None ([start, colon, stop, second colon]), the builder's method of a comparison
    whose right side is being read (or None) and its left side]``."""
    return [kind, enclosing, head, [], None, at, None, None, None]


def _give_up(frames: list) -> tuple:
    """What :meth:`ChainReader.read` gives where it cannot tell: ``(None, where the innermost
    bracket open is)`` (-1: none)."""
    return None, frames[-1][5] if frames else -1
