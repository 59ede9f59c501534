"""The parser's fast path: Lark's own terminals and LALR table, driven without Lark's per-token layers.

A 100,000-term program is half a million tokens, and Lark's lexer and parser loop cost several
microseconds a token (a regex match for each token and each run of spaces, a ``Token`` built in
Python, a line counter, a method call per token and per reduction, a hash of the rule for each
callback). :class:`FastPath` does the same work in two tight loops:

- the tokenizer: one compiled regular expression made of the grammar's terminals, in the order and
  with the patterns Lark's lexer uses for them (``BasicLexer`` of the parser's own
  ``lexer_conf``), matched at each position in turn by its scanner, the ignored spaces skipped
  in the same match; each alternative is written so that ``re`` rejects it by its first
  character (the terminal's name is an empty group after its pattern, and a pattern that starts
  with an optional part gets a lookahead for the characters it can start with); tokens are
  light tuples with a Lark token's fields;
- the postlexer (:class:`~gradcli.lang.postlex.GradIndenter`, the same one as Lark's path);
- the LALR driver: Lark's parse table and its callbacks (the embedded AST builder), shifting and
  reducing as Lark's ``ParserState.feed_token`` does, with each rule's callback looked up once.
  The table is a list of rows (dicts by terminal) indexed by state; each reduction is made one of
  a few kinds when the table is built (:func:`_reduction`), so that the driver does the least
  for the common ones: a ``?rule`` of one symbol only moves the state; a rule the builder takes
  as it is calls the builder's method itself (a name, a number: one Python call, not the two or
  three of wrappers); a rule of one symbol replaces the stack's top in place; a repetition's
  next step (an arithmetic chain's ``op operand``) grows the list below it in place;
- the chains' reader (:mod:`gradcli.lang.chains`): after a shift into a state where an
  arithmetic chain can start (an ``=``, a ``(``, a ``,``...), it reads the chain straight from
  the text, with no tokens, postlexer or table steps, and the driver pushes its node and tells
  the tokenizer where to go on; most of a long program's tokens are read so (100,000 mixed terms:
  1.2 s -> 0.5 s); where the reader cannot tell, the driver reads on as before.

The tables come from a loaded Lark parser (:func:`tables_from_lark`) as plain data -- the combined
pattern, the ignored and newline terminals, the LALR action/goto table, and per rule what Lark's
parse-tree builder does around the builder's method (``?rule`` with one child, tokens filtered
out or kept by ``!rule``, absent ``[...]`` parts, ``_rule`` spliced, ``-> alias``, children
inline) -- which :mod:`gradcli.lang.parser` caches with ``marshal``; :class:`FastPath` is built
from them without importing lark.

The grammar stays the only definition of the language: nothing here knows a terminal or a rule
(the chains' reader knows the ``arith`` rule and its operands: see its module).
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
import sys
from typing import Any

from ..errors import GradcliError, GradSyntaxError
# The fast path's token: a named tuple with a Lark token's fields (made by tuple.__new__).
from .postlex import Token

# The plain tables' format: bump it when what tables_from_lark writes changes meaning.
TABLES_FORMAT = 5


class _NoFastPath(Exception):
    """The fast path cannot tell: Lark's path parses the text (and words any error)."""


class FastPath:
    """The tokenizer and LALR driver for one grammar (see the module docstring), built from
    plain tables (:func:`tables_from_lark`) without importing lark."""

    def __init__(self, tables: dict, indenter, builder=None) -> None:
        if builder is None:
            from .builder import ASTBuilder
            builder = ASTBuilder()
        self.regex = re.compile(tables["pattern"], tables["flags"])
        self.ignore = frozenset(tables["ignore"])
        self.newline_types = frozenset(tables["newline_types"])
        self.indenter = indenter
        self.start_state, self.end_state = tables["start_state"], tables["end_state"]
        reductions = [_reduction(rule, builder) for rule in tables["rules"]]
        rows = {state: {symbol: action if action >= 0 else reductions[-1 - action]
                        for symbol, action in row.items()}
                for state, row in tables["states"].items()}
        # A list indexed by state (Lark numbers them 0, 1, ...): the driver's lookups are two
        # subscripts, a row's missing symbol a KeyError (the parser does not take the token there).
        self.table = [rows.get(state, {}) for state in range(max(rows, default=0) + 1)]
        # The chains' reader, and the states after which the driver asks it for an arith (none
        # where the grammar has no arith, or terminals it cannot read by their first character).
        from .chains import ChainReader
        try:
            self.chains = ChainReader(tables["terminals"], tables["space_characters"], tables["ignore"],
                                      tables["flags"], builder, self.regex.match)
        except ValueError:
            self.chains = None
        self.lanes = tables["lanes"] if self.chains else {}

    @classmethod
    def from_lark(cls, lark, indenter, builder=None) -> "FastPath":
        """The fast path of a loaded Lark parser (its plain tables made on the way)."""
        return cls(tables_from_lark(lark), indenter, builder)

    def parse(self, text: str) -> Any:
        """The AST of ``text`` (the value of the grammar's start rule), or None where the fast path
        cannot tell (any error: Lark's path then parses ``text`` and reports it)."""
        jump: list = []  # where the tokenizer goes on after a chain the reader read
        try:
            return self._drive(self.indenter.process(self._tokens(text, jump)), text, jump)
        except GradSyntaxError:
            return None
        except (GradcliError, MemoryError, KeyboardInterrupt):  # limits, --timeout: as they are
            raise
        except Exception:  # _NoFastPath, and anything unforeseen: Lark's path decides
            return None

    def _tokens(self, text: str, jump: list):
        """Lark's tokens of ``text``, the ignored ones (spaces) left out; line and column counted
        as Lark's LineCounter does. The matches come from the pattern's scanner, each anchored
        where the last one ended (a character no terminal matches stops it). Where the driver
        put a position in ``jump`` after an ordinary token (the end of a chain the reader read
        after it, on the same line), the next match is made there."""
        new, Tok = tuple.__new__, Token
        ignore, newline_types = self.ignore, self.newline_types
        special = ignore | newline_types  # one test for most tokens
        end = line_start = 0
        line = 1
        scanner = self.regex.scanner
        scan = scanner(text).match
        while True:
            m = scan()
            if m is None:
                break
            ttype = m.lastgroup
            start = m.end(1)  # after the spaces before it
            end = m.end()
            if ttype not in special:
                token = new(Tok, (ttype, text[start:end], start, line, start - line_start + 1,
                                  line, end - line_start + 1, end))
            else:
                value = text[start:end]
                if ttype in newline_types and "\n" in value:  # (no chain is read after it)
                    end_line = line + value.count("\n")
                    end_start = start + value.rindex("\n") + 1
                    if ttype not in ignore:
                        yield new(Tok, (ttype, value, start, line, start - line_start + 1,
                                        end_line, end - end_start + 1, end))
                    line, line_start = end_line, end_start
                    continue
                if ttype in ignore:
                    continue
                token = new(Tok, (ttype, value, start, line, start - line_start + 1,
                                  line, end - line_start + 1, end))
            yield token
            if jump:
                end = jump.pop()
                scan = scanner(text, end).match
        if end != len(text):  # a character no terminal matches
            raise _NoFastPath

    def _drive(self, tokens, text: str, jump: list) -> Any:
        """Shift and reduce as Lark's LALR parser does (``ParserState.feed_token``), calling the
        same callbacks; the input ends with Lark's "$END" token. A reduction is ``(size, rule's
        symbol, function, kind)`` (:func:`_reduction`); the kinds that pop one value or grow a
        list replace the top of the stacks in place, with no list of children made. After a
        shift into a state where an arith can start (``lanes``), the chains' reader reads it
        from the text, if it can: its node is pushed as the arith's value, and ``jump`` tells the
        tokenizer where to go on; where it cannot, it is not asked again before the position it
        says (``wait``)."""
        table, lanes, chains = self.table, self.lanes, self.chains
        wait = -1
        state = self.start_state
        states = [state]
        values: list = []
        try:
            for token in tokens:
                ttype = token[0]  # its type
                action = table[state][ttype]
                while action.__class__ is not int:  # reduce
                    size, origin, function, kind = action
                    if kind is _UNIT:  # a ?rule of one symbol: the value stays, the state moves
                        pass
                    elif kind is _CALL_ONE:  # one child, given inline
                        values[-1] = function(values[-1])
                    elif kind is _GROW:  # a repetition's next step: the list so far grows in place
                        grown = values[-size]
                        grown += values[1 - size:]
                        del values[1 - size:]
                        del states[1 - size:]
                    elif kind is _LIST_ONE:  # one child, given as a list
                        values[-1] = function(values[-1:])
                    else:
                        if size:
                            children = values[-size:]
                            del values[-size:]
                            del states[-size:]
                        else:
                            children = []
                        values.append(function(*children) if kind is _CALL else function(children))
                        state = table[states[-1]][origin]
                        states.append(state)
                        action = table[state][ttype]
                        continue
                    # the reduced rule's value is on top, in place of its first symbol's
                    state = states[-1] = table[states[-2]][origin]
                    action = table[state][ttype]
                states.append(action)  # shift
                values.append(token)
                state = action
                if state in lanes and token[7] > wait:  # (its end_pos)
                    node, at = chains.read(text, token)
                    if node is None:
                        wait = at
                    else:
                        values.append(node)
                        state = lanes[state]
                        states.append(state)
                        jump.append(at)
        except KeyError:  # the parser does not take this token here
            raise _NoFastPath from None
        return self._end(states, values)

    def _end(self, states: list, values: list) -> Any:
        """Lark's "$END": reduce until the start rule's value is made (a few steps, not hot)."""
        table, end_state = self.table, self.end_state
        while True:
            action = table[states[-1]].get("$END")
            if action.__class__ is not tuple:
                raise _NoFastPath
            size, origin, function, kind = action
            if kind is _UNIT:
                states[-1] = table[states[-2]][origin]
            else:
                children = values[-size:] if size else []
                if size:
                    del values[-size:]
                    del states[-size:]
                if kind is _GROW:
                    grown = children[0]
                    grown += children[1:]
                    value = grown
                elif kind is _CALL or kind is _CALL_ONE:
                    value = function(*children)
                else:
                    value = function(children)
                values.append(value)
                states.append(table[states[-1]][origin])
            if states[-1] == end_state:
                return values[-1]


# The kinds of reduction (:func:`_reduction`), compared by identity in the driver.
_UNIT = "unit"  # a ?rule of one symbol: no call, the state moves
_CALL = "call"  # the builder's method, called with the children inline
_CALL_ONE = "call one"  # _CALL of a rule of one symbol: its value replaces the top in place
_LIST = "list"  # a function of the list of children (filtered, spliced, ?rule's one-child case)
_LIST_ONE = "list one"  # _LIST of a rule of one symbol
_GROW = "grow"  # a repetition's next step: its children appended to the list below them


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


def _first_class(regexp: str, flags: int) -> str | None:
    """The body of a character class (``a-z\\d"``) holding every character a match of
    ``regexp`` can start with, for a lookahead that rejects the alternative at once: None where
    ``re`` rejects it by its first character already (it starts with a literal or a class),
    where it can match the empty string, or where its first characters cannot be told (a
    negated class, case-insensitive flags, anything unforeseen: no lookahead, nothing lost)."""
    c = _sre()[0]
    parsed = _parsed(regexp, flags)
    if parsed is None or parsed and parsed[0][0] in (c.LITERAL, c.IN):
        return None
    pieces = _first_of(parsed)
    if pieces is None or any(p.startswith("^") for p in pieces):
        return None
    return "".join(pieces)


def _first_chars(regexp: str, flags: int) -> str | None:
    """A pattern of one character that matches every character a match of ``regexp`` can start
    with (``[a-z\\d"]|[^\\W\\d]``), or None where it can match the empty string or its first
    characters cannot be told (case-insensitive flags, anything unforeseen)."""
    parsed = _parsed(regexp, flags)
    pieces = None if parsed is None else _first_of(parsed)
    if pieces is None:
        return None
    positive = "".join(p for p in pieces if not p.startswith("^"))
    return "|".join(([f"[{positive}]"] if positive else []) + [f"[{p}]" for p in pieces if p.startswith("^")])


def _first_of(parsed) -> list | None:
    """The class pieces of :func:`_first_pieces` (sorted, each once), or None where they cannot
    be told or the pattern can match the empty string."""
    pieces, nullable = _first_pieces(parsed, _sre()[0])
    if pieces is None or nullable or not pieces:
        return None
    return sorted(set(pieces))


def _sre():
    """Python's regular expression parser and its constants (private modules, moved in 3.11)."""
    try:
        from re import _constants as c, _parser as sre_parse
    except ImportError:  # Python 3.10
        import sre_constants as c
        import sre_parse
    return c, sre_parse


def _parsed(regexp: str, flags: int):
    """``regexp`` parsed by Python's parser, the non-capturing groups around it all taken off;
    None under case-insensitive flags (its first characters are not told)."""
    c, sre_parse = _sre()
    if flags & re.IGNORECASE:
        return None
    parsed = list(sre_parse.parse(regexp, flags))
    while parsed and parsed[0][0] is c.SUBPATTERN and len(parsed) == 1:  # (?:...) around it all
        parsed = list(parsed[0][1][-1])
    return parsed


# The character categories a class may name, as a class writes them.
_CATEGORIES = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
               "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}


def _first_pieces(items, c):
    """(class pieces a match of the parsed sequence ``items`` can start with, or None where not
    known; whether it can match the empty string). A piece is part of a class's body; a negated
    class is one piece, its body after a "^". Recursive on the pattern's nesting: the grammar's
    own terminals, a few levels deep."""
    pieces: list = []
    for op, av in items:
        if op is c.LITERAL:
            return pieces + [re.escape(chr(av))], False
        if op is c.IN:
            negated = bool(av) and av[0][0] is c.NEGATE
            body = []
            for kind, value in av[1:] if negated else av:
                if kind is c.LITERAL:
                    body.append(re.escape(chr(value)))
                elif kind is c.RANGE:
                    body.append(f"{re.escape(chr(value[0]))}-{re.escape(chr(value[1]))}")
                elif kind is c.CATEGORY and str(value) in _CATEGORIES:
                    body.append(_CATEGORIES[str(value)])
                else:  # anything else
                    return None, False
            return pieces + (["^" + "".join(body)] if negated else body), False
        if op is c.SUBPATTERN:
            if av[1] & re.IGNORECASE:
                return None, False
            sub, nullable = _first_pieces(av[-1], c)
        elif op is c.BRANCH:
            sub, nullable = [], False
            for alternative in av[1]:
                more, empty = _first_pieces(alternative, c)
                if more is None:
                    return None, False
                sub += more
                nullable = nullable or empty
        elif op is c.MAX_REPEAT or op is c.MIN_REPEAT:
            sub, nullable = _first_pieces(av[2], c)
            nullable = nullable or av[0] == 0
        elif op is c.AT:  # an anchor: it matches no character
            continue
        else:
            return None, False
        if sub is None:
            return None, False
        pieces += sub
        if not nullable:
            return pieces, False
    return pieces, True


def tables_from_lark(lark) -> dict:
    """Everything the fast path needs from a loaded Lark parser, as plain data (str, int, bool,
    None, lists, tuples, dicts: what ``marshal`` and JSON write), so that it can be cached on
    disk and the fast path built later without lark. Raises ValueError where the grammar or
    the parser is one the fast path does not handle (then there is no fast path)."""
    from lark.lexer import BasicLexer, PatternStr
    from lark.parse_tree_builder import maybe_create_child_filter
    from lark.parsers.lalr_analysis import Shift

    from .chains import entry_states, space_characters
    from .postlex import PostLexer
    conf = lark.lexer_conf
    if conf.callbacks or conf.use_bytes:  # lexer callbacks would change tokens: never fast
        raise ValueError("the fast path needs a lexer without callbacks")
    if lark.options.propagate_positions or lark.options.ambiguity not in ("auto", "resolve"):
        raise ValueError("the fast path builds no parse-tree metadata")
    lexer = BasicLexer(conf)
    scanner = lexer.scanner  # the terminals in Lark's order, keywords folded into NAME
    ignore, newline_types = set(lexer.ignore_types), set(lexer.newline_types)
    spaces = [t for t in scanner.terminals if t.name in ignore and t.name not in newline_types]
    tokens = [t for t in scanner.terminals if t not in spaces]
    _check_spaces_start_nothing(spaces, tokens, conf.g_regex_flags)
    skip = "|".join(t.pattern.to_regexp() for t in spaces)
    # Group 1 (empty) marks where the token starts, after the spaces; each terminal's name is an
    # empty group after its pattern (the last group a match closes: its ``lastgroup``), so that
    # each alternative starts with its pattern's first character or class, which ``re`` checks
    # before it tries the alternative (a group first would make it try them all, one by one).
    # An alternative that starts otherwise (an optional part, a nested choice) gets a lookahead
    # for the characters it can start with, where they can be told (:func:`_first_class`).
    alternatives, terminals = [], []
    for t in tokens:
        regexp = t.pattern.to_regexp()
        first = _first_class(regexp, conf.g_regex_flags)
        guard = f"(?=[{first}])" if first is not None else ""
        alternatives.append(f"{guard}(?:{regexp})(?P<{t.name}>)")
        # for the chains' tokenizer (gradcli.lang.chains): each terminal, the characters it can
        # start with (None: not told) and its text if it is a literal
        terminals.append((str(t.name), regexp, _first_chars(regexp, conf.g_regex_flags),
                          str(t.pattern.value) if isinstance(t.pattern, PatternStr) else None))
    # The spaces are matched possessively where re can (Python 3.11): never given back, which
    # changes nothing (no terminal starts with a space, checked above) and spares re the
    # bookkeeping of a repetition it could backtrack into.
    possessive = "+" if sys.version_info >= (3, 11) else ""
    pattern = str(f"(?:{skip})*{possessive}()(?:" + "|".join(alternatives) + ")")
    # Keywords that NAME's pattern also matches come out as NAME, as from the contextual lexer
    # in a state where a name may stand: the postlexer turns them into keywords; it must
    # know them all.
    from .postlex import KEYWORD_TERMINALS
    folded = {t.pattern.value for t in lexer.terminals
              if isinstance(t.pattern, PatternStr) and t not in scanner.terminals}
    if not folded <= set(KEYWORD_TERMINALS):
        raise ValueError(f"keywords the postlexer does not know: {folded - set(KEYWORD_TERMINALS)}")
    state = lark.parse_interactive("").parser_state.parse_conf
    if any(not hasattr(key, "origin") for key in state.callbacks):  # callbacks on terminals
        raise ValueError("the fast path needs a parser without terminal callbacks")
    placeholders = lark.options.maybe_placeholders
    rules, index = [], {}
    for rule in state.callbacks:  # what Lark's ParseTreeBuilder wraps around each callback
        options = rule.options
        name = rule.alias or options.template_source or rule.origin.name
        made = maybe_create_child_filter(rule.expansion, options.keep_all_tokens, False,
                                         options.empty_indices if placeholders else None)
        if made is None:
            keep = None
        elif len(made.args) == 2:  # partial(ChildFilterLALR, to_include, nones_to_add)
            keep = ([(int(i), bool(e), int(n)) for i, e, n in made.args[0]], int(made.args[1]))
        else:  # partial(ChildFilterLALR_NoPlaceholders, [(i, to_expand)]): no [...] in the rule
            keep = ([(int(i), bool(expand), 0) for i, expand in made.args[0]], 0)
        index[rule] = len(rules)
        rules.append((str(rule.origin.name), len(rule.expansion), str(name),
                      bool(options.expand1 and not rule.alias), keep))
    states = {}
    for number, actions in state.states.items():
        states[int(number)] = {str(symbol): int(arg) if action is Shift else -1 - index[arg]
                          for symbol, (action, arg) in actions.items()}
    return {"format": TABLES_FORMAT, "pattern": pattern, "flags": int(conf.g_regex_flags),
            "ignore": sorted(map(str, ignore)), "newline_types": sorted(map(str, newline_types)),
            "start_state": int(state.start_state), "end_state": int(state.end_state),
            "rules": rules, "states": states, "terminals": terminals,
            "space_characters": space_characters(skip, conf.g_regex_flags),
            "lanes": entry_states(states, rules, PostLexer.BUSY_AFTER)}


def _reduction(rule, builder):
    """``(size, rule's symbol, function, kind)`` for one rule of the plain tables (the kinds are
    listed above): the builder's method of the rule's name (or alias), wrapped as Lark's
    parse-tree builder wraps it (``?rule`` with one child gives the child; the children the
    grammar filters out left out, absent ``[...]`` parts as None, ``_rule``'s children spliced
    into its parent's). A rule of no method gives its children as a list (only ``_rule``s,
    whose parents splice them). Where no wrapping is needed the method itself is the function
    (one Python call a reduction, not three)."""
    origin, size, name, expand1, keep = rule
    method = getattr(builder, name, None) if not name.startswith("_") else None
    if expand1 and size == 1 and (keep is None or keep == ([(0, False, 0)], 0)):
        return (size, origin, None, _UNIT)
    if (keep is not None and method is None and origin.startswith("_") and not expand1
            and size >= 2 and keep[1] == 0
            and [tuple(x) for x in keep[0]] == [(0, True, 0)] + [(i, False, 0) for i in range(1, size)]):
        # a repetition's next step (``__arith_star: __arith_star OP primary``): the list so far
        # grows by the step's children (in place, as Lark's child filter grows it)
        return (size, origin, None, _GROW)
    if method is not None and keep is None and not expand1:
        return (size, origin, method, _CALL_ONE if size == 1 else _CALL)
    if method is None:
        if not origin.startswith("_"):
            def call(children, name=name):
                raise _NoFastPath(name)  # Lark would build a Tree here: Lark's path
        else:
            def call(children):
                return children
    else:
        def call(children, method=method):
            return method(*children)
    built = call
    if expand1:
        def expanded(children, call=call):
            return children[0] if len(children) == 1 else call(children)
        built = expanded
    if keep is not None:
        include, append_none = keep
        include = tuple(tuple(x) for x in include)
        if method is not None and not expand1:  # the filtered children straight to the method
            return (size, origin, _filtered_call(method, include, append_none),
                    _LIST_ONE if size == 1 else _LIST)

        def built(children, inner=built, include=include, append_none=append_none):
            return inner(_filter(children, include, append_none))
    built.__name__ = built.__qualname__ = name  # the rule (or alias) it builds
    return (size, origin, built, _LIST_ONE if size == 1 else _LIST)


def _filtered_call(method, include: tuple, append_none: int):
    """The builder's ``method`` called with a rule's children filtered (:func:`_filter`): its
    common case (``call``, ``paren``, ``attribute``...) without the generic wrappers' calls."""
    def built(children):
        return method(*_filter(children, include, append_none))
    built.__name__ = built.__qualname__ = method.__name__  # what it builds, for tracebacks and tests
    return built


def _filter(children: list, include: tuple, append_none: int) -> list:
    """A rule's children as Lark's child filter gives them to the builder: the ones the grammar
    keeps (``include``: (index, splice it, Nones before it)), ``_rule`` children spliced, absent
    ``[...]`` parts as None (``append_none`` at the end)."""
    filtered = []
    for i, expand, add_none in include:
        if add_none:
            filtered += [None] * add_none
        if expand:
            if filtered:
                filtered += children[i]
            else:  # a left-recursive list: grown in place, as Lark does
                filtered = children[i]
        else:
            filtered.append(children[i])
    if append_none:
        filtered += [None] * append_none
    return filtered
