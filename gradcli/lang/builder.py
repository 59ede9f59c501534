"""The AST builder: a Lark ``Transformer`` with one method per grammar rule, each building a node.

It is embedded in the LALR parser (``Lark(..., transformer=ASTBuilder())``, see
:mod:`gradcli.lang.parser`): Lark calls a method each time the parser reduces a rule, so the
tree is built bottom-up by the parser's own explicit stack and nothing here recurses on the
program's depth (a standalone ``transform()`` would). Each method is named after its rule or
the rule's ``-> alias`` in ``grammar/gradcli.lark`` and receives the rule's children as
arguments (``@v_args(inline=True)``): the nodes it built for sub-rules, and the tokens that the
grammar keeps (``!rule``) for their positions. An optional part that is absent (``[...]``)
comes as None.

Checks that the grammar cannot express are made here, with their messages: assignment
targets, ``del`` targets, repeated keyword arguments, keywords used as names, number literals
and string escapes. This module imports lark: the parser loads it lazily.
"""

from __future__ import annotations

import re
from typing import Any

from lark import Transformer, v_args

from ..errors import GradSyntaxError
from .ast import (
    Assert, Assign, Attribute, AugAssign, BinOp, Call, Compare, Const, Del, EllipsisLit,
    ExprStmt, Lambda, ListExpr, Name, Node, Num, Program, Slice, Str, Subscript, TupleExpr,
    SetItem, UnaryOp, With,
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


@v_args(inline=True)
class ASTBuilder(Transformer):
    """Builds the AST while Lark's LALR parser reduces rules (see the module docstring)."""

    # ----------------------------------------------------------------- program / statements
    def start(self, *statements):
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
        elif isinstance(target, Subscript):  # x[i] = v: torch's item assignment
            return _span(SetItem(target, value), target, value)
        elif isinstance(target, Attribute):
            raise _error_at(f"cannot assign to {_describe_target(target)}: only names can be "
                            "assigned (use an in-place method such as .zero_() or .copy_() "
                            "under no_grad(), or .requires_grad_())", target)
        else:
            raise _error_at(f"cannot assign to {_describe_target(target)}", target)
        node = Assign([n.id for n in names], value, unpack, target_nodes=list(names))
        return _span(node, target, value)

    def aug_assign(self, target, op, value):
        if not isinstance(target, (Name, Attribute, Subscript)):
            what = "a tuple" if isinstance(target, TupleExpr) else _describe_target(target)
            raise _error_at(f"cannot use {op.value} on {what}: the target must be a name "
                            "or an attribute", target)
        return _span(AugAssign(target, op.value[:-1], value), target, value)  # "+=" -> "+"

    def assert_stmt(self, keyword, test, _comma, msg):
        return _span(Assert(test, msg), keyword, msg if msg is not None else test)

    def del_stmt(self, keyword, target):
        names = target.items if isinstance(target, TupleExpr) else [target]
        for item in names:
            if not isinstance(item, Name):
                raise _error_at(f"cannot delete {_describe_target(item)}: del takes names", item)
        return _span(Del([n.id for n in names], targets=list(names)), keyword, target)

    def with_stmt(self, keyword, context, _colon, *body):
        return _span(With(context, list(body)), keyword, body[-1])

    # ----------------------------------------------------------------------- expressions
    def tuple(self, *parts):  # items, and the brackets and commas of "(a, b)"
        items = [p for p in parts if isinstance(p, Node)]
        return _span(TupleExpr(items), parts[0], parts[-1])

    def list(self, *parts):  # "[", items and commas (an absent trailing comma: None), "]"
        items = [p for p in parts if isinstance(p, Node)]
        return _span(ListExpr(items), parts[0], parts[-1])

    def paren(self, _open, value, _close):
        return value

    def lambdef(self, keyword, param, _colon, body):
        _check_name(param)
        return _span(Lambda(param.value, body), keyword, body)

    def neg(self, minus, operand):
        return _span(UnaryOp("-", operand), minus, operand)

    def pos(self, plus, operand):
        return _span(UnaryOp("+", operand), plus, operand)

    def add(self, left, right):
        return _span(BinOp("+", left, right), left, right)

    def sub(self, left, right):
        return _span(BinOp("-", left, right), left, right)

    def mul(self, left, right):
        return _span(BinOp("*", left, right), left, right)

    def div(self, left, right):
        return _span(BinOp("/", left, right), left, right)

    def matmul(self, left, right):
        return _span(BinOp("@", left, right), left, right)

    def pow(self, left, right):
        return _span(BinOp("**", left, right), left, right)

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
        return _span(Call(func, args, kwargs, kwarg_positions=positions), func, close)

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
        return _span(Name(token.value), token, token)

    def number(self, token):
        return _span(Num(_number_value(token)), token, token)

    def string(self, token):
        return _span(Str(_decode_string(token)), token, token)

    def true(self, token):
        return _span(Const(True), token, token)

    def false(self, token):
        return _span(Const(False), token, token)

    def none(self, token):
        return _span(Const(None), token, token)

    def ellipsis(self, token):
        return _span(EllipsisLit(), token, token)


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


def _number_value(token: Any) -> int | float:
    """A NUMBER token's value: a float if it has a "." or an exponent, else an int."""
    text = token.value
    if "." in text or "e" in text or "E" in text:
        return float(text)
    digits = text.replace("_", "")
    if len(digits) > 1 and digits[0] == "0" and digits.strip("0"):
        raise _error_at("leading zeros in decimal integer literals are not permitted", token)
    if len(digits) > 4000:
        raise _error_at("integer literal is too long", token)
    return int(digits)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"',
            "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[xuU]|.)", re.S)


def _decode_string(token: Any) -> str:
    """Decode a STRING token's escapes (never with eval): \\n \\t \\r \\0 \\\\ \\' \\" \\a \\b
    \\f \\v \\xhh \\uhhhh \\Uhhhhhhhh; an unknown escape keeps its backslash, as in Python."""
    body = token.value[1:-1]
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
