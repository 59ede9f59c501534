"""The AST builder: one method per grammar rule, each building a node.

It is embedded in the LALR parser (``Lark(..., transformer=LarkASTBuilder())``, see
:mod:`gradcli.lang.parser`): Lark calls a method each time the parser reduces a rule, so the
tree is built bottom-up by the parser's own explicit stack and nothing here recurses on the
program's depth (a standalone ``transform()`` would). Each method is named after its rule or
the rule's ``-> alias`` in ``grammar/gradcli.lark`` and receives the rule's children as
arguments (lark's ``@v_args(inline=True)``, which :mod:`gradcli.lang.lark_adapter` applies; the
fast path calls them the same way): the nodes it built for sub-rules, and the tokens that the
grammar keeps (``!rule``) for their positions. An optional part that is absent (``[...]``)
comes as None.

Checks that the grammar cannot express are made here, with their messages: assignment
targets, ``del`` targets, repeated keyword arguments, keywords used as names, number literals
and string escapes. This module does not import lark (the fast path builds with it without lark).
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import GradSyntaxError
from .ast import (
    Assert, Assign, Attribute, AugAssign, BinOp, BoolOp, Break, Call, Compare, Comprehension, Const,
    Continue, Del, EllipsisLit, ExprStmt, FormattedValue, FString, FunctionDef, If, IfExp, Import,
    ImportFrom, Lambda, ListComp, ListExpr, Name, Node, Not, Num, Param, Pass, Program, Return,
    SetItem, Slice, Stmt, Str, Subscript, TupleExpr, UnaryOp, While, With, For, DictExpr,
)
from .postlex import KEYWORD_TERMINALS, UNSUPPORTED_KEYWORDS


def _span(node: Node, first: Any, last: Any) -> Node:
    """Give ``node`` the position of ``first``'s start and ``last``'s end (tokens or nodes)."""
    node.line = first.line
    node.column = first.column
    node.end_line = last.end_line
    node.end_column = last.end_column
    return node


def _error_at(message: str, where: Any) -> GradSyntaxError:
    return GradSyntaxError(message, line=where.line, column=where.column)


class ASTBuilder:
    """Builds the AST while Lark's LALR parser reduces rules (see the module docstring)."""

    # ----------------------------------------------------------------- program / statements
    def start(self, *statements):
        statements = _flatten(statements)
        program = Program(list(statements))
        if statements:
            return _span(program, statements[0], statements[-1])
        program.line = program.column = program.end_line = program.end_column = 1
        return program

    def expr_stmt(self, value):
        return _span(ExprStmt(value), value, value)

    def assign(self, target, value):
        if isinstance(target, Name):
            names, unpack = [target], False
        elif isinstance(target, (TupleExpr, ListExpr)):
            names, unpack = target.items, True
            if not names:
                raise _error_at("cannot assign to an empty tuple", target)
            for item in names:
                if not isinstance(item, Name):
                    raise _error_at(f"cannot assign to {_describe_target(item)}: "
                                    "only plain names can be unpacked into", item)
        elif isinstance(target, (Attribute, Subscript)):  # x.grad = None    xs[0] = 1
            return _span(SetItem(target, value), target, value)
        else:
            raise _error_at(f"cannot assign to {_describe_target(target)}", target)
        node = Assign([n.id for n in names], value, unpack, target_nodes=list(names))
        return _span(node, target, value)

    def aug_assign(self, target, op, value):
        if not isinstance(target, (Name, Attribute, Subscript)):
            what = "a tuple" if isinstance(target, TupleExpr) else _describe_target(target)
            raise _error_at(f"cannot use {op.value} on {what}: the target must be a name, "
                            "an attribute or an indexed element", target)
        return _span(AugAssign(target, op.value[:-1], value), target, value)  # "+=" -> "+"

    def assert_stmt(self, keyword, test, _comma, msg):
        return _span(Assert(test, msg), keyword, msg if msg is not None else test)

    def del_stmt(self, keyword, target):
        names = target.items if isinstance(target, TupleExpr) else [target]
        for item in names:
            if not isinstance(item, Name):
                raise _error_at(f"cannot delete {_describe_target(item)}: del takes names", item)
        return _span(Del([n.id for n in names], targets=list(names)), keyword, target)

    def with_stmt(self, keyword, context, _as, name, _colon, *body):
        body = _flatten(body)
        target = () if name is None else _span(Name(name.value), name, name)
        return _span(With(context, body, target=target), keyword, body[-1])

    def pass_stmt(self, keyword):
        return _span(Pass(), keyword, keyword)

    def break_stmt(self, keyword):
        return _span(Break(), keyword, keyword)

    def continue_stmt(self, keyword):
        return _span(Continue(), keyword, keyword)

    def return_stmt(self, keyword, value):
        return _span(Return(value), keyword, value if value is not None else keyword)

    # ----------------------------------------------------------------------- imports
    def dotted(self, *names):
        for name in names:
            _check_name(name)
        return _Dotted(".".join(n.value for n in names), names[0], names[-1])

    def dotted_as(self, dotted, alias):
        if alias is not None:
            _check_name(alias)
        return _Dotted(dotted.name, dotted.first, alias or dotted.last, alias.value if alias else None)

    def import_as(self, name, alias):
        for token in (name, alias):
            if token is not None:
                _check_name(token)
        return _Dotted(name.value, name, alias or name, alias.value if alias else None)

    def import_stmt(self, keyword, *parts):
        # "import a, b as c" is one Import per module, as Python binds them one by one
        nodes = [_span(Import(p.name, p.alias), keyword if i == 0 else p.first, p.last)
                 for i, p in enumerate(q for q in parts if isinstance(q, _Dotted))]
        return nodes[0] if len(nodes) == 1 else _Many(nodes)

    def from_stmt(self, keyword, module, _import, *parts):
        names = [(p.name, p.alias) for p in parts if isinstance(p, _Dotted)]
        if not names:  # from x import *
            names = [("*", None)]
        last = [p for p in parts if p is not None][-1]
        return _span(ImportFrom(module.name, names), keyword, last.last if isinstance(last, _Dotted) else last)

    # ----------------------------------------------------------------------- compound statements
    def if_stmt(self, keyword, test, _colon, *rest):
        body = [r for r in rest if isinstance(r, (Node, _Many))]
        clauses = [r for r in rest if isinstance(r, _Clause)]
        orelse: list = []
        # elif chains become nested Ifs, built from the last clause back (no recursion)
        for clause in reversed(clauses):
            if clause.test is None:
                orelse = clause.body
            else:
                inner = _span(If(clause.test, clause.body, orelse), clause.keyword, (orelse or clause.body)[-1])
                orelse = [inner]
        return _span(If(test, _flatten(body), orelse), keyword, (orelse or body)[-1])

    def elif_clause(self, keyword, test, _colon, *body):
        return _Clause(keyword, test, _flatten(body))

    def else_clause(self, keyword, _colon, *body):
        return _Clause(keyword, None, _flatten(body))

    def for_target(self, *parts):
        items = [p for p in parts if isinstance(p, Node)]
        commas = [p for p in parts if p is not None and not isinstance(p, Node)]
        target = items[0] if len(items) == 1 and not commas else _span(TupleExpr(items), items[0], parts[-1] if parts[-1] is not None else items[-1])
        _check_target(target)
        return target

    def for_stmt(self, keyword, target, _in, iterable, _colon, *body):
        body = _flatten(body)
        return _span(For(target, iterable, body), keyword, body[-1])

    def while_stmt(self, keyword, test, _colon, *body):
        body = _flatten(body)
        return _span(While(test, body), keyword, body[-1])

    def decorator(self, at, value, *_newline):
        return _Decorator(at, value)

    def parameter(self, name, default):
        _check_name(name)
        return _span(Param(name.value, default), name, default if default is not None else name)

    def funcdef(self, *parts):
        decorators = [p for p in parts if isinstance(p, _Decorator)]
        tokens = [p for p in parts if p is not None and not isinstance(p, (Node, _Decorator))]
        def_token, name = tokens[0], tokens[1]
        _check_name(name)
        params = _check_params([p for p in parts if isinstance(p, Param)])
        body = _flatten([p for p in parts if isinstance(p, (Stmt, _Many))])
        first = decorators[0].at if decorators else def_token
        node = FunctionDef(name.value, params, body, [d.value for d in decorators])
        return _span(node, first, body[-1])

    # ----------------------------------------------------------------------- expressions
    def ifexp(self, body, test, orelse):
        return _span(IfExp(test, body, orelse), body, orelse)

    def or_test(self, left, right):
        return _span(BoolOp("or", left, right), left, right)

    def and_test(self, left, right):
        return _span(BoolOp("and", left, right), left, right)

    def not_test(self, keyword, operand):
        return _span(Not(operand), keyword, operand)

    def in_(self, left, right):
        return _span(Compare("in", left, right), left, right)

    def not_in(self, left, right):
        return _span(Compare("not in", left, right), left, right)

    def is_(self, left, right):
        return _span(Compare("is", left, right), left, right)

    def is_not(self, left, right):
        return _span(Compare("is not", left, right), left, right)

    def comp_for(self, keyword, target, _in, iterable, *ifs):
        node = Comprehension(target, iterable, [c for c in ifs if c is not None])
        return _span(node, keyword, ifs[-1] if ifs else iterable)

    def comp_if(self, _keyword, test):
        return test

    def listcomp(self, open_, elt, *rest):
        *generators, close = rest
        return _span(ListComp(elt, list(generators)), open_, close)

    def call_genexp(self, func, _open, elt, *rest):  # sum(x for x in xs): the list, then the call
        *generators, close = rest
        comp = _span(ListComp(elt, list(generators)), elt, close)
        return _span(Call(func, [comp], [], kwarg_positions=[]), func, close)

    def fstring(self, token):
        return _span(_fstring(token), token, token)

    def tuple(self, *parts):  # items, and the brackets and commas of "(a, b)"
        items = [p for p in parts if isinstance(p, Node)]
        return _span(TupleExpr(items), parts[0], parts[-1])

    def list(self, *parts):  # "[", items and commas (an absent trailing comma: None), "]"
        items = [p for p in parts if isinstance(p, Node)]
        return _span(ListExpr(items), parts[0], parts[-1])

    def dict(self, *parts):  # "{", key ":" value pairs with commas (absent trailing comma: None), "}"
        items = [p for p in parts if isinstance(p, Node)]
        return _span(DictExpr(items[0::2], items[1::2]), parts[0], parts[-1])

    def paren(self, _open, value, _close):
        return value

    def lambdef(self, keyword, *rest):
        body = rest[-1]
        params = _check_params([p for p in rest[:-1] if isinstance(p, Param)])
        return _span(Lambda(params, body), keyword, body)

    def arith(self, *items):
        """A chain of operands, unary signs and binary operators (``-x ** 2 * y + z``), in source
        order: the tree with Python's precedence and associativity, by precedence climbing on two
        explicit stacks (operands, and operators not applied yet), so a 100,000-term chain costs
        the parser one reduction per operator and nothing here recurses. A token right after an
        operand is a binary operator; any other token is a sign of the operand that follows."""
        operands: list = []
        tokens: list = []  # operators and signs not applied yet, innermost last
        strengths: list = [0]  # how tightly each binds, above a floor that is never reached
        new, node_class = _new, Node  # the module's names as locals: read per item of the chain
        binding, sign = _BINDING, _SIGN_STRENGTH
        after_operand = False
        for item in items:
            if after_operand:  # a binary operator (the grammar puts one after every operand)
                strength, applied = binding[item.value]
                while strengths[-1] >= applied:
                    token = tokens.pop()
                    right = operands.pop()
                    if strengths.pop() == sign:  # _apply, inline
                        node = new(UnaryOp)
                        node.line, node.column = token.line, token.column
                        node.end_line, node.end_column = right.end_line, right.end_column
                        node.op, node.operand = token.value, right
                        operands.append(node)
                    else:
                        left = operands[-1]
                        node = new(BinOp)
                        node.line, node.column = left.line, left.column
                        node.end_line, node.end_column = right.end_line, right.end_column
                        node.op, node.left, node.right = token.value, left, right
                        operands[-1] = node
                tokens.append(item)
                strengths.append(strength)
                after_operand = False
            elif isinstance(item, node_class):
                operands.append(item)
                after_operand = True
            else:  # a sign: applied once its operand, and any ** on it, is built
                tokens.append(item)
                strengths.append(sign)
        while tokens:
            _apply((strengths.pop(), tokens.pop()), operands)
        return operands[0]

    def lt(self, left, right):
        return _span(Compare("<", left, right), left, right)

    def le(self, left, right):
        return _span(Compare("<=", left, right), left, right)

    def gt(self, left, right):
        return _span(Compare(">", left, right), left, right)

    def ge(self, left, right):
        return _span(Compare(">=", left, right), left, right)

    def eq(self, left, right):
        return _span(Compare("==", left, right), left, right)

    def ne(self, left, right):
        return _span(Compare("!=", left, right), left, right)

    def attribute(self, value, _dot, attr):
        return _span(Attribute(value, attr.value), value, attr)

    def call(self, func, _open, *arguments_and_close):
        *arguments, close = arguments_and_close
        args: list = []
        kwargs: list = []
        positions: list = []
        seen: set = set()
        for item in arguments:
            if isinstance(item, _Kwarg):
                if item.name in seen:
                    raise GradSyntaxError(f"keyword argument repeated: {item.name}",
                                          line=item.line, column=item.column)
                seen.add(item.name)
                kwargs.append((item.name, item.value))
                positions.append((item.line, item.column))
            elif isinstance(item, Node):
                if kwargs:
                    raise _error_at("positional argument follows keyword argument", item)
                args.append(item)
        node = _new(Call)  # a call per few terms of a long program: Node's constructor skipped
        node.func, node.args, node.kwargs, node.kwarg_positions = func, args, kwargs, positions
        return _span(node, func, close)

    def kwarg(self, name, value):
        _check_name(name)
        return _Kwarg(name.value, value, name.line, name.column)

    def subscript(self, value, _open, *index_and_close):
        *index, close = index_and_close
        return _span(Subscript(value, [i for i in index if isinstance(i, Node)]), value, close)

    def slice(self, start, colon, stop, second_colon, step):  # absent parts are None
        parts = [p for p in (start, colon, stop, second_colon, step) if p is not None]
        return _span(Slice(start, stop, step), parts[0], parts[-1])

    # ----------------------------------------------------------------------------- atoms
    def name(self, token):
        return name_node(token.value, token.line, token.column, token.end_line, token.end_column)

    def number(self, token):
        return number_node(token.value, token.line, token.column, token.end_line, token.end_column)

    def string(self, token):
        if token.value[0] in "fF":  # f"...": an f-string
            return _span(_fstring(token), token, token)
        return _span(Str(_decode_string(token)), token, token)

    def true(self, token):
        return _span(Const(True), token, token)

    def false(self, token):
        return _span(Const(False), token, token)

    def none(self, token):
        return _span(Const(None), token, token)

    def ellipsis(self, token):
        return _span(EllipsisLit(), token, token)


# How tightly the operators of an arithmetic chain bind (builder.arith), as in Python.
BINARY_STRENGTH = {"+": 1, "-": 1, "*": 2, "/": 2, "@": 2, "%": 2, "//": 2, "**": 4}
_SIGN_STRENGTH = 3  # unary - and +: tighter than *, looser than ** (-x**2 == -(x**2))
_POWER_STRENGTH = 4
# Per binary operator: its strength, and the least strength of the operators before it that are
# applied before it is pushed: what binds at least as tightly, but for ** (right-associative:
# a**b**c == a**(b**c)) only what binds tighter.
_BINDING = {op: (strength, strength + (strength == _POWER_STRENGTH)) for op, strength in BINARY_STRENGTH.items()}


def _apply(pending: tuple, operands: list) -> None:
    """Apply an operator of :meth:`ASTBuilder.arith` to the operands on top of the stack."""
    strength, token = pending
    right = operands.pop()
    if strength == _SIGN_STRENGTH:
        node = _span(_new(UnaryOp), token, right)
        node.op, node.operand = token.value, right
    else:
        left = operands.pop()
        node = _span(_new(BinOp), left, right)
        node.op, node.left, node.right = token.value, left, right
    operands.append(node)


# The nodes made on every operand and operator (BinOp, UnaryOp, Name, Num) are made with
# ``_new(cls)`` and their fields set here, without Node's generic constructor, which checks and
# loops over the fields: a few microseconds a node, a third of the parse of a 100,000-term program.
_new = object.__new__


def name_node(value: str, line: int, column: int, end_line: int, end_column: int) -> Name:
    """The Name of a NAME token (its text and position): :meth:`ASTBuilder.name`, and what the fast
    path's chains (:mod:`gradcli.lang.chains`) make without a token."""
    node = _new(Name)
    node.line, node.column, node.end_line, node.end_column = line, column, end_line, end_column
    node.id = value
    return node


def number_node(text: str, line: int, column: int, end_line: int, end_column: int) -> Num:
    """The Num of a NUMBER token (its text and position), as :func:`name_node`."""
    node = _new(Num)
    node.line, node.column, node.end_line, node.end_column = line, column, end_line, end_column
    node.value = _number_value(text, line, column)
    return node


class _Dotted:
    """A dotted module name (and its alias) while an import is being built."""
    __slots__ = ("name", "first", "last", "alias")

    def __init__(self, name, first, last, alias=None):
        self.name, self.first, self.last, self.alias = name, first, last, alias


class _Many:
    """Several statements from one (``import a, b``), spliced into the enclosing block."""
    __slots__ = ("nodes",)

    def __init__(self, nodes):
        self.nodes = nodes


class _Clause:
    """An ``elif``/``else`` clause while its ``if`` is being built (test None for else)."""
    __slots__ = ("keyword", "test", "body")

    def __init__(self, keyword, test, body):
        self.keyword, self.test, self.body = keyword, test, body


class _Decorator:
    __slots__ = ("at", "value")

    def __init__(self, at, value):
        self.at, self.value = at, value


def _flatten(statements) -> list:
    """The statements of a block, with ``_Many`` groups spliced in."""
    out: list = []
    for s in statements:
        if isinstance(s, _Many):
            out.extend(s.nodes)
        elif s is not None:
            out.append(s)
    return out


def _check_target(target) -> None:
    """A loop's target: names, or tuples of them (``for i, (a, b) in ...``); explicit stack."""
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, (TupleExpr, ListExpr)):
            if not node.items:
                raise _error_at("cannot assign to an empty tuple", node)
            stack.extend(node.items)
        elif not isinstance(node, Name):
            raise _error_at(f"cannot assign to {_describe_target(node)}: a loop binds names", node)


def _check_params(params: list) -> list:
    seen: set = set()
    has_default = False
    for p in params:
        if p.name in seen:
            raise _error_at(f"duplicate argument '{p.name}' in function definition", p)
        seen.add(p.name)
        if p.default is not None:
            has_default = True
        elif has_default:
            raise _error_at("parameter without a default follows parameter with a default", p)
    return params


class _Kwarg:
    """A keyword argument while its call is being built (never in the finished AST)."""
    __slots__ = ("name", "value", "line", "column")

    def __init__(self, name: str, value: Node, line: int, column: int) -> None:
        self.name, self.value, self.line, self.column = name, value, line, column


def _describe_target(node: Node) -> str:
    if isinstance(node, Attribute):
        return "an attribute"
    if isinstance(node, Subscript):
        return "an indexed element"
    if isinstance(node, Call):
        return "a function call"
    if isinstance(node, (Num, Str, Const, EllipsisLit)):
        return "a literal"
    if isinstance(node, Lambda):
        return "a lambda"
    if isinstance(node, Compare):
        return "a comparison"
    if isinstance(node, (ListExpr, TupleExpr)):
        return "a nested list or tuple"
    return "an expression"


def _check_name(token: Any) -> None:
    if token.value in KEYWORD_TERMINALS or token.value in UNSUPPORTED_KEYWORDS:
        raise _error_at(f"'{token.value}' is a keyword and cannot be used as a name", token)


def _number_value(text: str, line: int, column: int) -> int | float:
    """A NUMBER token's value: a float if it has a "." or an exponent, else an int; errors at
    the token's line and column."""
    if "." in text or "e" in text or "E" in text:
        return float(text)
    digits = text.replace("_", "")
    if len(digits) > 1 and digits[0] == "0" and digits.strip("0"):
        raise GradSyntaxError("leading zeros in decimal integer literals are not permitted",
                              line=line, column=column)
    if len(digits) > 4000:
        raise GradSyntaxError("integer literal is too long", line=line, column=column)
    return int(digits)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"',
            "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[xuU]|.)", re.S)


def _decode_string(token: Any) -> str:
    """Decode a STRING token's escapes (never with eval): \\n \\t \\r \\0 \\\\ \\' \\" \\a \\b
    \\f \\v \\xhh \\uhhhh \\Uhhhhhhhh; an unknown escape keeps its backslash, as in Python."""
    quotes = 3 if token.value[:3] in ('"""', "\'\'\'") else 1  # a LONG_STRING's triple quotes
    body = token.value[quotes:-quotes]
    if "\\" not in body:
        return body

    def replace(match: re.Match) -> str:
        esc = match.group(1)
        head = esc[0]
        if head in "xuU":
            if len(esc) == 1:
                raise GradSyntaxError(f"truncated \\{head} escape in string",
                                      line=token.line, column=token.column + 1 + match.start())
            code = int(esc[1:], 16)
            if code > 0x10FFFF:
                raise GradSyntaxError(f"invalid escape \\{esc} in string (not a code point)",
                                      line=token.line, column=token.column + 1 + match.start())
            return chr(code)
        return _ESCAPES.get(esc, "\\" + esc)

    return _ESCAPE_RE.sub(replace, body)


# ------------------------------------------------------------------------------ f-strings

# The replacement fields of f-strings met during a parse, as (FormattedValue, source, line,
# column): their expressions are parsed by the parser once the enclosing program is parsed
# (the LALR parser is not re-entrant), then filled in. See parser.parse.
PENDING_FIELDS: list = []


def _fstring(token: Any) -> FString:
    """``f"a{x!r:.4f}b"`` -> FString([Str('a'), FormattedValue(<x, filled later>, 'r', '.4f'),
    Str('b')]). ``{{``/``}}`` are braces; the literal parts are decoded like strings."""
    body = token.value[2:-1]
    parts: list = []
    literal: list = []
    literal_at = 0  # where the literal part being gathered starts in the body
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if not literal:
            literal_at = i
        if ch in "{}" and body[i + 1:i + 2] == ch:
            literal.append(ch)
            i += 2
            continue
        if ch == "}":
            raise _fstring_error("single '}' is not allowed", token, i)
        if ch != "{":
            literal.append(ch)
            i += 1
            continue
        if literal:
            parts.append(_literal_part(literal, token, literal_at))
            literal = []
        end, expr_end, conversion, spec = _field_extent(body, i, token)
        expr = body[i + 1:expr_end]
        if not expr.strip():
            raise _fstring_error("f-string: empty expression not allowed", token, i)
        field = FormattedValue(None, conversion, spec, line=token.line, column=token.column + 2 + i)
        PENDING_FIELDS.append((field, expr, token.line, token.column + 3 + i))
        parts.append(field)
        i = end + 1
    if literal:
        parts.append(_literal_part(literal, token, literal_at))
    return FString(parts)


def _literal_part(literal: list, token: Any, at: int) -> Str:
    """A literal part of an f-string, decoded like a string, at its place in the token (the body
    starts after ``f"``)."""
    return Str(_decode_text("".join(literal), token), line=token.line, column=token.column + 2 + at)


def _field_extent(body: str, start: int, token: Any):
    """Where the field opened at ``start`` ends: (index of its '}', end of the expression,
    conversion, format spec). Brackets and quotes inside the expression are skipped."""
    depth, quote = 0, None
    i = start + 1
    expr_end = conversion_at = None
    while i < len(body):
        ch = body[i]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}" and depth:
            depth -= 1
        elif depth == 0 and ch == "!" and body[i + 1:i + 2] != "=" and conversion_at is None:
            expr_end = expr_end or i
            conversion_at = i
        elif depth == 0 and ch == ":" :
            expr_end = expr_end or i
            close = body.find("}", i)
            if close < 0:
                break
            spec = body[i + 1:close]
            if "{" in spec:
                raise _fstring_error("f-string: nested fields in a format spec are not supported", token, i)
            return close, expr_end, _conversion(body, conversion_at, i, token), spec
        elif depth == 0 and ch == "}":
            return i, expr_end or i, _conversion(body, conversion_at, i, token), ""
        i += 1
    raise _fstring_error("f-string: expecting '}'", token, start)


def _conversion(body: str, at, end: int, token: Any) -> str:
    if at is None:
        return ""
    text = body[at + 1:end]
    if text not in ("r", "s"):
        raise _fstring_error("f-string: invalid conversion character: expected 'r' or 's'", token, at)
    return text


def _fstring_error(message: str, token: Any, offset: int) -> GradSyntaxError:
    return GradSyntaxError(message, line=token.line, column=token.column + 2 + offset)


class _Text:
    """A string's text standing in for a token, for :func:`_decode_string`."""
    __slots__ = ("value", "line", "column")

    def __init__(self, value, line, column):
        self.value, self.line, self.column = value, line, column


def _decode_text(text: str, token: Any) -> str:
    return _decode_string(_Text('"' + text + '"', token.line, token.column))
