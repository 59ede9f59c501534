"""The ``.grad`` language front end: source text -> AST (SPEC §2, §5).

``parse(source)`` returns a :class:`Program`. The grammar lives in ``grammar/gradcli.lark``
(installed as ``gradcli/grammar/gradcli.lark``); it is parsed with Lark's LALR(1) parser and
contextual lexer, with the AST built *during* the parse by an embedded transformer, so nothing
here recurses on the depth of the program: a 100,000-term sum or an expression nested 10,000
deep parses without touching the recursion limit. Every syntax error -- whatever the input:
binary garbage, NUL bytes, lone surrogates, huge lines -- is a
:class:`gradcli.errors.GradSyntaxError` with a one-line message, ``line``/``column`` (1-based)
and ``hint`` (the source line with a caret, from :func:`format_error_context`).

AST (plain classes with ``__slots__``; no recursive ``__eq__``/``__repr__``; identity equality)
--------------------------------------------------------------------------------------------
Every node has ``line``, ``column`` (1-based, of its first token; a parenthesised expression
keeps the position of what is inside the parentheses), ``end_line``, ``end_column`` (the column
just after its last token, lark-style: ``x + y`` on line 1 spans columns 1 to 6).

Expressions:

- ``Num(value)``               ``int`` or ``float`` literal (``1``, ``1_000``, ``1.``, ``.5``, ``1e-3``)
- ``Str(value)``               string literal, escapes decoded
- ``Const(value)``             ``True``, ``False`` or ``None``
- ``Name(id)``                 a variable or function name
- ``EllipsisLit()``            ``...``
- ``ListExpr(items)``          ``[a, b]``: items is a list of expressions
- ``TupleExpr(items)``         ``(a, b)``, ``(a,)``, ``()``, and bare ``a, b`` where Python allows it
- ``BinOp(op, left, right)``   op in ``+ - * / @ **``
- ``UnaryOp(op, operand)``     op in ``- +`` (``-1`` is ``UnaryOp('-', Num(1))``)
- ``Compare(op, left, right)`` op in ``< <= > >= == !=`` (one comparison: ``a < b < c`` is an error)
- ``Call(func, args, kwargs)`` func: an expression (usually Name or Attribute); args: list of
                               expressions; kwargs: list of ``(name, expr)`` tuples in source order
                               (no duplicates; never a positional after a keyword);
                               ``kwarg_positions``: list of ``(line, column)`` of each keyword name
- ``Attribute(value, attr)``   ``value.attr``; attr is a str (it ends the node: it starts at
                               ``end_column - len(attr)`` on ``end_line``)
- ``Subscript(value, index)``  ``value[i, j]``: index is a list (len >= 1) whose items are
                               expressions (ints, lists, ``Const(None)``, ``EllipsisLit``, ...)
                               or ``Slice`` nodes; ``x[0,]`` and ``x[0]`` both give ``[Num(0)]``
- ``Slice(start, stop, step)`` ``a:b:c`` inside a subscript; each part an expression or None
- ``Lambda(param, body)``      ``lambda g: g * 2``: param is a str, body an expression

Statements:

- ``Assign(targets, value, unpack, target_nodes)``
                               ``a = e`` -> targets ``['a']``, unpack False;
                               ``a, b = e`` / ``gx, = e`` / ``(a, b) = e`` -> unpack True.
                               targets: list of str; target_nodes: the matching ``Name`` nodes.
                               Only names can be assigned (``w.grad = None`` / ``x[0] = 1`` are
                               syntax errors with a message saying so).
- ``AugAssign(target, op, value)``
                               ``a += e``; target is a ``Name`` or an ``Attribute``; op is the
                               binary operator: ``+ - * /`` (``w.data -= g`` has op ``'-'``)
- ``ExprStmt(value)``          an expression on its own (``print(x)``, ``y.backward()``)
- ``Assert(test, msg)``        ``assert test[, msg]``; msg an expression or None
- ``With(context, body)``      ``with EXPR:`` + block; body is a non-empty list of statements.
                               The parser accepts any expression: the interpreter checks it.
- ``Del(names, targets)``      ``del a, b``: names is a list of str, targets the ``Name`` nodes

``Program(body, source, filename)``: body is the list of top-level statements (possibly empty).

Helpers: :func:`walk` (pre-order, explicit stack), :func:`postorder` (children before their
parent, explicit stack: the order an iterative evaluator wants), :func:`iter_child_nodes`,
:func:`format_error_context`.

Language notes (decisions where SPEC §2 is silent): no chained comparisons or chained
assignment; Python keywords the language does not use (``if``, ``for``, ``and``, ``not``,
``import``, ...) are errors, and so is using a keyword as a name; strings are single-line,
single or double quoted, without prefixes (no ``r""``/``f""``); only decimal numbers (no
``0x10``, no complex); tabs in indentation count to the next multiple of 8, as in Python 2
(consistent use is up to the author); a backslash at the end of a line continues it.
"""

from __future__ import annotations

import keyword
import os
import re
import threading
import unicodedata
from copy import copy
from pathlib import Path
from typing import Any, Iterator

from ..errors import GradcliError, GradSyntaxError

__all__ = [
    "Node", "Expr", "Stmt",
    "Num", "Str", "Const", "Name", "EllipsisLit", "ListExpr", "TupleExpr", "BinOp", "UnaryOp",
    "Compare", "Call", "Attribute", "Subscript", "Slice", "Lambda",
    "Assign", "AugAssign", "ExprStmt", "Assert", "With", "Del", "Program",
    "parse", "walk", "postorder", "iter_child_nodes", "format_error_context", "grammar_text",
]


# =============================================================================== AST nodes

class Node:
    """Base of every AST node. ``_fields`` lists the node's own fields in order;
    ``_child_fields`` those that hold nodes, lists of nodes or ``(name, node)`` pairs.
    Positions default to 0 for nodes built by hand (the parser always sets them)."""

    __slots__ = ("line", "column", "end_line", "end_column")
    _fields: tuple[str, ...] = ()
    _child_fields: tuple[str, ...] = ()

    def _pos(self, line: int, column: int, end_line: int, end_column: int) -> None:
        self.line, self.column, self.end_line, self.end_column = line, column, end_line, end_column

    def __repr__(self) -> str:  # shallow on purpose: trees may be 100,000 deep
        parts = []
        for name in self._fields:
            value = getattr(self, name)
            if isinstance(value, list):
                if len(value) <= 4:
                    text = "[" + ", ".join(_short(v) for v in value) + "]"
                else:
                    text = f"[{len(value)} items]"
            else:
                text = _short(value)
            parts.append(f"{name}={text}")
        parts.append(f"line={self.line}, column={self.column}")
        return f"{type(self).__name__}({', '.join(parts)})"


def _short(value: Any) -> str:
    if isinstance(value, Node):
        return f"<{type(value).__name__}>"
    if isinstance(value, tuple):
        return "(" + ", ".join(_short(v) for v in value) + ")"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Expr(Node):
    """An expression."""
    __slots__ = ()


class Stmt(Node):
    """A statement."""
    __slots__ = ()


# Each class spells out its fields: this is the contract with the interpreter.

class Num(Expr):
    __slots__ = _fields = ("value",)

    def __init__(self, value: int | float, line=0, column=0, end_line=0, end_column=0):
        self.value = value
        self._pos(line, column, end_line, end_column)


class Str(Expr):
    __slots__ = _fields = ("value",)

    def __init__(self, value: str, line=0, column=0, end_line=0, end_column=0):
        self.value = value
        self._pos(line, column, end_line, end_column)


class Const(Expr):
    __slots__ = _fields = ("value",)

    def __init__(self, value: bool | None, line=0, column=0, end_line=0, end_column=0):
        self.value = value
        self._pos(line, column, end_line, end_column)


class Name(Expr):
    __slots__ = _fields = ("id",)

    def __init__(self, id: str, line=0, column=0, end_line=0, end_column=0):  # noqa: A002
        self.id = id
        self._pos(line, column, end_line, end_column)


class EllipsisLit(Expr):
    __slots__ = ()

    def __init__(self, line=0, column=0, end_line=0, end_column=0):
        self._pos(line, column, end_line, end_column)


class ListExpr(Expr):
    __slots__ = _fields = _child_fields = ("items",)

    def __init__(self, items: list, line=0, column=0, end_line=0, end_column=0):
        self.items = items
        self._pos(line, column, end_line, end_column)


class TupleExpr(Expr):
    __slots__ = _fields = _child_fields = ("items",)

    def __init__(self, items: list, line=0, column=0, end_line=0, end_column=0):
        self.items = items
        self._pos(line, column, end_line, end_column)


class BinOp(Expr):
    __slots__ = _fields = ("op", "left", "right")
    _child_fields = ("left", "right")

    def __init__(self, op: str, left: Expr, right: Expr, line=0, column=0, end_line=0,
                 end_column=0):
        self.op, self.left, self.right = op, left, right
        self._pos(line, column, end_line, end_column)


class UnaryOp(Expr):
    __slots__ = _fields = ("op", "operand")
    _child_fields = ("operand",)

    def __init__(self, op: str, operand: Expr, line=0, column=0, end_line=0, end_column=0):
        self.op, self.operand = op, operand
        self._pos(line, column, end_line, end_column)


class Compare(Expr):
    __slots__ = _fields = ("op", "left", "right")
    _child_fields = ("left", "right")

    def __init__(self, op: str, left: Expr, right: Expr, line=0, column=0, end_line=0,
                 end_column=0):
        self.op, self.left, self.right = op, left, right
        self._pos(line, column, end_line, end_column)


class Call(Expr):
    __slots__ = ("func", "args", "kwargs", "kwarg_positions")
    _fields = ("func", "args", "kwargs")
    _child_fields = ("func", "args", "kwargs")

    def __init__(self, func: Expr, args: list, kwargs: list, kwarg_positions: list | None = None,
                 line=0, column=0, end_line=0, end_column=0):
        self.func, self.args, self.kwargs = func, args, kwargs
        self.kwarg_positions = kwarg_positions if kwarg_positions is not None else []
        self._pos(line, column, end_line, end_column)


class Attribute(Expr):
    __slots__ = _fields = ("value", "attr")
    _child_fields = ("value",)

    def __init__(self, value: Expr, attr: str, line=0, column=0, end_line=0, end_column=0):
        self.value, self.attr = value, attr
        self._pos(line, column, end_line, end_column)


class Subscript(Expr):
    __slots__ = _fields = _child_fields = ("value", "index")

    def __init__(self, value: Expr, index: list, line=0, column=0, end_line=0, end_column=0):
        self.value, self.index = value, index
        self._pos(line, column, end_line, end_column)


class Slice(Expr):
    __slots__ = _fields = _child_fields = ("start", "stop", "step")

    def __init__(self, start: Expr | None, stop: Expr | None, step: Expr | None, line=0,
                 column=0, end_line=0, end_column=0):
        self.start, self.stop, self.step = start, stop, step
        self._pos(line, column, end_line, end_column)


class Lambda(Expr):
    __slots__ = _fields = ("param", "body")
    _child_fields = ("body",)

    def __init__(self, param: str, body: Expr, line=0, column=0, end_line=0, end_column=0):
        self.param, self.body = param, body
        self._pos(line, column, end_line, end_column)


class Assign(Stmt):
    __slots__ = ("targets", "value", "unpack", "target_nodes")
    _fields = ("targets", "value", "unpack")
    _child_fields = ("target_nodes", "value")

    def __init__(self, targets: list, value: Expr, unpack: bool, target_nodes: list | None = None,
                 line=0, column=0, end_line=0, end_column=0):
        self.targets, self.value, self.unpack = targets, value, unpack
        self.target_nodes = target_nodes if target_nodes is not None else []
        self._pos(line, column, end_line, end_column)


class AugAssign(Stmt):
    __slots__ = _fields = ("target", "op", "value")
    _child_fields = ("target", "value")

    def __init__(self, target: Expr, op: str, value: Expr, line=0, column=0, end_line=0,
                 end_column=0):
        self.target, self.op, self.value = target, op, value
        self._pos(line, column, end_line, end_column)


class ExprStmt(Stmt):
    __slots__ = _fields = _child_fields = ("value",)

    def __init__(self, value: Expr, line=0, column=0, end_line=0, end_column=0):
        self.value = value
        self._pos(line, column, end_line, end_column)


class Assert(Stmt):
    __slots__ = _fields = _child_fields = ("test", "msg")

    def __init__(self, test: Expr, msg: Expr | None, line=0, column=0, end_line=0, end_column=0):
        self.test, self.msg = test, msg
        self._pos(line, column, end_line, end_column)


class With(Stmt):
    __slots__ = _fields = _child_fields = ("context", "body")

    def __init__(self, context: Expr, body: list, line=0, column=0, end_line=0, end_column=0):
        self.context, self.body = context, body
        self._pos(line, column, end_line, end_column)


class Del(Stmt):
    __slots__ = ("names", "targets")
    _fields = ("names",)
    _child_fields = ("targets",)

    def __init__(self, names: list, targets: list | None = None, line=0, column=0, end_line=0,
                 end_column=0):
        self.names = names
        self.targets = targets if targets is not None else []
        self._pos(line, column, end_line, end_column)


class Program(Node):
    __slots__ = ("body", "source", "filename")
    _fields = _child_fields = ("body",)

    def __init__(self, body: list, source: str = "", filename: str = "<program>", line=0,
                 column=0, end_line=0, end_column=0):
        self.body, self.source, self.filename = body, source, filename
        self._pos(line, column, end_line, end_column)


# =============================================================================== traversal

def iter_child_nodes(node: Node) -> Iterator[Node]:
    """The direct children of ``node``, in source order."""
    for name in node._child_fields:
        value = getattr(node, name)
        if value is None:
            continue
        if isinstance(value, Node):
            yield value
        else:  # a list of nodes, or of (name, node) pairs (Call.kwargs)
            for item in value:
                if isinstance(item, tuple):
                    item = item[1]
                if item is not None:
                    yield item


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree under ``node`` (itself included), pre-order, source order.
    Iterative (explicit stack): safe on trees of any depth."""
    stack = [node]
    pop, extend = stack.pop, stack.extend
    while stack:
        current = pop()
        yield current
        children = list(iter_child_nodes(current))
        children.reverse()
        extend(children)


def postorder(node: Node) -> Iterator[Node]:
    """Every node under ``node``, each after all of its children (left to right): the order
    in which an iterative evaluator computes values. Explicit stack: any depth."""
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        current, expanded = stack.pop()
        if expanded:
            yield current
            continue
        stack.append((current, True))
        children = list(iter_child_nodes(current))
        for child in reversed(children):
            stack.append((child, False))


# =============================================================================== grammar

_PACKAGE_GRAMMAR = ("grammar", "gradcli.lark")                  # inside the installed wheel
_REPO_GRAMMAR = Path(__file__).resolve().parents[2] / "grammar" / "gradcli.lark"


def grammar_text() -> str:
    """The grammar: from the installed package if present, else from the repository."""
    try:
        from importlib.resources import files
        resource = files("gradcli").joinpath(_PACKAGE_GRAMMAR[0]).joinpath(_PACKAGE_GRAMMAR[1])
        if resource.is_file():
            return resource.read_text(encoding="utf-8")
    except Exception:  # pragma: no cover - unusual loaders
        pass
    return _REPO_GRAMMAR.read_text(encoding="utf-8")


# Terminal names (see the grammar) and how messages name them.
_OPEN = {"LPAR": "(", "LSQB": "["}
_CLOSE = {"RPAR": "(", "RSQB": "["}
_KEYWORD_TERMINALS = {"with": "WITH", "assert": "ASSERT", "del": "DEL", "lambda": "LAMBDA",
                      "True": "TRUE", "False": "FALSE", "None": "NONE"}
_UNSUPPORTED_KEYWORDS = frozenset(keyword.kwlist) - set(_KEYWORD_TERMINALS)


def _make_indenter_class():
    from lark.indenter import Indenter
    from lark.lexer import Token

    class GradIndenter(Indenter):
        """Python-style indentation (lark's Indenter), plus: an open-bracket stack (for
        "'(' was never closed"), no assertion on a stray closing bracket (the parser reports
        it), a GradSyntaxError for a bad dedent or an indented first line, and keywords the
        contextual lexer read as names turned back into keywords (or rejected, for Python
        keywords the language does not have)."""

        NL_type = "_NEWLINE"
        OPEN_PAREN_types = list(_OPEN)
        CLOSE_PAREN_types = list(_CLOSE)
        INDENT_type = "_INDENT"
        DEDENT_type = "_DEDENT"
        tab_len = 8

        def __init__(self) -> None:
            super().__init__()
            self.brackets: list = []

        def process(self, stream):
            self.paren_level = 0
            self.indent_level = [0]
            self.brackets = []
            return self._process(stream)

        @staticmethod
        def _at_end_of(token, type_: str, value: str):
            return Token(type_, value, token.end_pos, token.end_line, token.end_column,
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
            token = None
            first = True
            for token in stream:
                ttype = token.type
                if ttype == self.NL_type:
                    first = False
                    yield from self.handle_NL(token)
                    continue
                if first:
                    first = False
                    if token.column != 1:
                        raise GradSyntaxError("unexpected indent", line=token.line,
                                              column=token.column)
                if ttype == "NAME":
                    value = token.value
                    if value in _KEYWORD_TERMINALS:  # a keyword where it cannot be: the parser says so
                        token = Token.new_borrow_pos(_KEYWORD_TERMINALS[value], value, token)
                    elif value in _UNSUPPORTED_KEYWORDS:
                        raise GradSyntaxError(f"'{value}' is not part of the gradcli language",
                                              line=token.line, column=token.column)
                yield token
                # After the parser took the token: on an error, the stack is as before it.
                if ttype in _OPEN:
                    self.brackets.append(token)
                elif ttype in _CLOSE and self.brackets:
                    self.brackets.pop()
            while len(self.indent_level) > 1:
                self.indent_level.pop()
                if token is None:
                    yield Token(self.DEDENT_type, "", 0, 1, 1, 1, 1, 0)
                else:
                    yield self._at_end_of(token, self.DEDENT_type, "")

    return GradIndenter


# =============================================================================== AST builder

_BINOPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@", "pow": "**"}
_COMPARES = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"',
            "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[xuU]|.)", re.S)


def _span(node: Node, first: Any, last: Any) -> Node:
    """Give ``node`` the position of ``first``'s start and ``last``'s end (tokens or nodes)."""
    node.line = first.line
    node.column = first.column
    node.end_line = last.end_line
    node.end_column = last.end_column
    return node


def _error_at(message: str, where: Any) -> GradSyntaxError:
    return GradSyntaxError(message, line=where.line, column=where.column)


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


class _Builder:
    """Embedded transformer: Lark's LALR parser calls one method per reduced rule (named
    after the rule or its ``-> alias``) with the children; each returns an AST node.
    Lark never walks a tree: the parser's own explicit stack does all the nesting."""

    # ----------------------------------------------------------------- program / statements
    def start(self, children):
        program = Program(list(children))
        if children:
            _span(program, children[0], children[-1])
        else:
            program.line = program.column = program.end_line = program.end_column = 1
        return program

    def expr_stmt(self, children):
        (value,) = children
        return _span(ExprStmt(value), value, value)

    def assign(self, children):
        target, value = children
        if isinstance(target, Name):
            nodes, unpack = [target], False
        elif isinstance(target, (TupleExpr, ListExpr)):
            nodes, unpack = target.items, True
            if not nodes:
                raise _error_at("cannot assign to an empty tuple", target)
            for item in nodes:
                if not isinstance(item, Name):
                    raise _error_at(f"cannot assign to {_describe_target(item)}: "
                                    "only plain names can be unpacked into", item)
        elif isinstance(target, (Attribute, Subscript)):
            raise _error_at(f"cannot assign to {_describe_target(target)}: only names can be "
                            "assigned (use an in-place method such as .zero_() or .copy_() "
                            "under no_grad(), or .requires_grad_())", target)
        else:
            raise _error_at(f"cannot assign to {_describe_target(target)}", target)
        node = Assign([n.id for n in nodes], value, unpack, list(nodes))
        return _span(node, target, value)

    def aug_assign(self, children):
        target, op, value = children
        if isinstance(target, Subscript):
            raise _error_at("augmented assignment to an indexed element is not supported", target)
        if not isinstance(target, (Name, Attribute)):
            what = "a tuple" if isinstance(target, TupleExpr) else _describe_target(target)
            raise _error_at(f"cannot use {op.value} on {what}: the target must be a name "
                            "or an attribute", target)
        return _span(AugAssign(target, op.value[:-1], value), target, value)

    def assert_stmt(self, children):
        keyword_tok, test = children[0], children[1]
        msg = children[3] if len(children) > 3 else None
        return _span(Assert(test, msg), keyword_tok, msg if msg is not None else test)

    def del_stmt(self, children):
        keyword_tok, target = children
        items = target.items if isinstance(target, TupleExpr) else [target]
        for item in items:
            if not isinstance(item, Name):
                raise _error_at(f"cannot delete {_describe_target(item)}: del takes names", item)
        return _span(Del([n.id for n in items], list(items)), keyword_tok, target)

    def with_stmt(self, children):
        keyword_tok, context = children[0], children[1]
        body = list(children[3:])
        return _span(With(context, body), keyword_tok, body[-1])

    # ----------------------------------------------------------------------- expressions
    def tuple(self, children):
        items = [c for c in children if isinstance(c, Node)]
        return _span(TupleExpr(items), children[0], children[-1])

    def list(self, children):
        items = [c for c in children if isinstance(c, Node)]
        return _span(ListExpr(items), children[0], children[-1])

    def paren(self, children):
        return children[1]

    def lambdef(self, children):
        keyword_tok, param, _colon, body = children
        _check_name(param)
        return _span(Lambda(param.value, body), keyword_tok, body)

    def neg(self, children):
        op, operand = children
        return _span(UnaryOp("-", operand), op, operand)

    def pos(self, children):
        op, operand = children
        return _span(UnaryOp("+", operand), op, operand)

    def attribute(self, children):
        value, _dot, attr = children
        return _span(Attribute(value, attr.value), value, attr)

    def call(self, children):
        func = children[0]
        args: list = []
        kwargs: list = []
        positions: list = []
        seen: set = set()
        for item in children[2:-1]:
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
        return _span(Call(func, args, kwargs, positions), func, children[-1])

    def kwarg(self, children):
        name, value = children
        _check_name(name)
        return _Kwarg(name.value, value, name.line, name.column)

    def subscript(self, children):
        value = children[0]
        index = [c for c in children[2:-1] if isinstance(c, Node)]
        return _span(Subscript(value, index), value, children[-1])

    def slice(self, children):
        parts: list = [None]
        first = last = None
        for child in children:
            if child is None:
                continue
            if first is None:
                first = child
            last = child
            if isinstance(child, Node):
                parts[-1] = child
            else:  # a ':' token
                parts.append(None)
        parts += [None] * (3 - len(parts))
        return _span(Slice(*parts), first, last)

    # ----------------------------------------------------------------------------- atoms
    def name(self, children):
        (tok,) = children
        return _span(Name(tok.value), tok, tok)

    def number(self, children):
        (tok,) = children
        text = tok.value
        if "." in text or "e" in text or "E" in text:
            value: int | float = float(text)
        else:
            digits = text.replace("_", "")
            if len(digits) > 1 and digits[0] == "0" and digits.strip("0"):
                raise _error_at("leading zeros in decimal integer literals are not permitted", tok)
            if len(digits) > 4000:
                raise _error_at("integer literal is too long", tok)
            value = int(digits)
        return _span(Num(value), tok, tok)

    def string(self, children):
        (tok,) = children
        return _span(Str(_decode_string(tok)), tok, tok)

    def true(self, children):
        return _span(Const(True), children[0], children[0])

    def false(self, children):
        return _span(Const(False), children[0], children[0])

    def none(self, children):
        return _span(Const(None), children[0], children[0])

    def ellipsis(self, children):
        return _span(EllipsisLit(), children[0], children[0])


def _make_binop(op: str):
    def build(self, children):
        left, right = children
        return _span(BinOp(op, left, right), left, right)
    return build


def _make_compare(op: str):
    def build(self, children):
        left, right = children
        return _span(Compare(op, left, right), left, right)
    return build


for _rule, _op in _BINOPS.items():
    setattr(_Builder, _rule, _make_binop(_op))
for _rule, _op in _COMPARES.items():
    setattr(_Builder, _rule, _make_compare(_op))


class _Kwarg:
    """A keyword argument while its call is being built (never in the finished AST)."""
    __slots__ = ("name", "value", "line", "column")

    def __init__(self, name: str, value: Node, line: int, column: int) -> None:
        self.name, self.value, self.line, self.column = name, value, line, column


def _check_name(tok: Any) -> None:
    if tok.value in _KEYWORD_TERMINALS or tok.value in _UNSUPPORTED_KEYWORDS:
        raise _error_at(f"'{tok.value}' is a keyword and cannot be used as a name", tok)


def _decode_string(tok: Any) -> str:
    """Decode a STRING token's escapes (never with eval): \\n \\t \\r \\0 \\\\ \\' \\" \\a \\b
    \\f \\v \\xhh \\uhhhh \\Uhhhhhhhh; an unknown escape keeps its backslash, as in Python."""
    body = tok.value[1:-1]
    if "\\" not in body:
        return body

    def replace(match: re.Match) -> str:
        esc = match.group(1)
        head = esc[0]
        if head in "xuU":
            if len(esc) == 1:
                raise GradSyntaxError(f"truncated \\{head} escape in string",
                                      line=tok.line, column=tok.column + 1 + match.start())
            code = int(esc[1:], 16)
            if code > 0x10FFFF:
                raise GradSyntaxError(f"invalid escape \\{esc} in string (not a code point)",
                                      line=tok.line, column=tok.column + 1 + match.start())
            return chr(code)
        return _ESCAPES.get(esc, "\\" + esc)

    return _ESCAPE_RE.sub(replace, body)


# =============================================================================== parser (lazy, cached)

_lock = threading.RLock()
_parser: Any = None
_indenter: Any = None


def _cache_path(grammar: str) -> str | None:
    """A per-user cache file for Lark's grammar analysis (it saves ~60 ms of start-up), or None
    where no private, writable cache directory can be had: then the grammar is analysed on
    every start. The file name carries a hash of the grammar and of the lark and Python
    versions, and inside the file Lark checks a SHA-256 of grammar text + options + versions
    and rebuilds (rewriting the file) on any mismatch, so a stale grammar is never used; a
    corrupt or unreadable file is ignored, and failing to write it is harmless. The cache is a
    pickle, so only a directory that this user owns and no one else can write is used.
    ``GRADCLI_CACHE_DIR`` chooses the directory (default ``$XDG_CACHE_HOME/gradcli`` or
    ``~/.cache/gradcli``); ``GRADCLI_NO_CACHE=1`` turns the cache off."""
    if os.environ.get("GRADCLI_NO_CACHE"):
        return None
    try:
        import hashlib
        import sys

        import lark
        base = os.environ.get("GRADCLI_CACHE_DIR")
        if not base:
            xdg = os.environ.get("XDG_CACHE_HOME")
            base = os.path.join(xdg, "gradcli") if xdg else os.path.join(
                os.path.expanduser("~"), ".cache", "gradcli")
        if not os.path.isabs(base):  # e.g. "~" could not be expanded: no cache in the cwd
            return None
        os.makedirs(base, mode=0o700, exist_ok=True)
        if hasattr(os, "getuid"):
            st = os.stat(base)
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
        if not os.access(base, os.W_OK | os.X_OK):
            return None
        key = f"{grammar}\0{lark.__version__}\0{sys.version_info[:2]}".encode("utf-8", "replace")
        return os.path.join(base, f"grammar-{hashlib.sha256(key).hexdigest()[:16]}.lark-cache")
    except Exception:
        return None


def _import_lark() -> None:
    """Import lark without the third-party ``regex`` module where that is installed: lark uses
    it only for ``regex=True`` grammars (Unicode property classes), which this grammar is not,
    and importing it costs ~7 ms of every start."""
    import sys
    if "lark" in sys.modules or "regex" in sys.modules:
        return
    sys.modules["regex"] = None  # makes lark's optional ``import regex`` fail fast
    try:
        import lark  # noqa: F401
    finally:
        del sys.modules["regex"]


def _build_parser(cache: bool = True):
    """A new Lark parser (LALR, contextual lexer, embedded AST builder) and its postlexer."""
    _import_lark()
    from lark import Lark
    grammar = grammar_text()
    cache_fn = _cache_path(grammar) if cache else None
    if cache_fn:
        try:
            indenter = _make_indenter_class()()
            return Lark(grammar, cache=cache_fn, **_lark_options(indenter)), indenter
        except Exception:  # a cache problem must never stop the parser from being built
            pass
    indenter = _make_indenter_class()()
    return Lark(grammar, **_lark_options(indenter)), indenter


def _lark_options(indenter) -> dict:
    return dict(parser="lalr", lexer="contextual", postlex=indenter, transformer=_Builder(),
                start="start", maybe_placeholders=True)


def _get_parser():
    global _parser, _indenter
    if _parser is None:
        with _lock:
            if _parser is None:
                _parser, _indenter = _build_parser()
    return _parser


# =============================================================================== parse

def parse(source: str, *, filename: str = "<program>") -> Program:
    """Parse a ``.grad`` program. Raises :class:`GradSyntaxError` (and nothing else) for any
    text that is not a valid program."""
    if not isinstance(source, str):
        raise TypeError(f"parse() needs a str, not {type(source).__name__}")
    parser = _get_parser()
    # CRLF and a lone CR are newlines, as in Python (CRLF -> LF moves no line or column).
    text = source.replace("\r\n", "\n").replace("\r", "\n") if "\r" in source else source
    if not text.endswith("\n"):
        text += "\n"
    with _lock:
        try:
            program = parser.parse(text)
        except GradSyntaxError as exc:
            err = exc
        except RecursionError:  # pragma: no cover - nothing here recurses; a safety net
            err = GradSyntaxError("the program is nested too deeply", line=1, column=1)
        except MemoryError:
            raise
        except GradcliError:  # e.g. --timeout's LimitError, raised by the alarm mid-parse
            raise
        except Exception as exc:  # lark's exceptions and anything unforeseen
            orig = getattr(exc, "orig_exc", None)
            if isinstance(orig, GradcliError) and not isinstance(orig, GradSyntaxError):
                raise orig from None
            try:
                err = _translate_error(exc, parser, text)
            except Exception:  # pragma: no cover - must never happen, but never leak
                err = GradSyntaxError("invalid syntax", line=1, column=1)
        else:
            program.source = source
            program.filename = filename
            return program
    if err.line is None:
        err.line, err.column = 1, 1
    if err.hint is None:
        err.hint = format_error_context(text, err.line, err.column)
    raise err


# =============================================================================== error messages

_EXPR_STARTERS = {"NAME", "NUMBER", "STRING"}
_EXPR_STARTER_TEXT = {"(", "[", "-", "+", "True", "False", "None", "lambda", "..."}
_STATEMENT_KEYWORDS = {"assert", "del", "with"}
_OPERATOR_TEXT = {"+", "-", "*", "/", "@", "**", "<", "<=", ">", ">=", "==", "!=", ".", "(",
                  "[", "+=", "-=", "*=", "/="}
_COMPARE_TEXT = {"<", "<=", ">", ">=", "==", "!="}
_PUNCT_ORDER = [")", "]", ":", ",", "="]


def _terminal_text(parser, name: str) -> str | None:
    """The literal text of a string terminal (``'**'`` for ``__ANON_8``), else None."""
    try:
        pattern = parser.get_terminal(name).pattern
    except Exception:
        return None
    return pattern.value if getattr(pattern, "type", None) == "str" else None


def _clip(text: str, limit: int = 30) -> str:
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text)


def _describe_char(ch: str) -> str:
    if ch.isprintable() and not ch.isspace():
        return f"character '{ch}'"
    return f"character U+{ord(ch):04X}" + (f" ({unicodedata.name(ch)})"
                                           if unicodedata.name(ch, "") else "")


def _describe_token(parser, tok) -> str:
    ttype = tok.type
    if ttype == "$END":
        return "end of input"
    if ttype == "_NEWLINE":
        return "end of line"
    if ttype == "_INDENT":
        return "indent"
    if ttype == "_DEDENT":
        return "dedent"
    if ttype == "NAME":
        return f"name '{_clip(tok.value)}'"
    if ttype == "NUMBER":
        return f"number {_clip(tok.value)}"
    if ttype == "STRING":
        return f"string {_clip(tok.value)}"
    text = _terminal_text(parser, ttype)
    return f"'{_clip(text if text is not None else str(tok.value))}'"


def _describe_expected(parser, accepts: set, in_brackets: bool) -> list[str]:
    """Name what the parser would have accepted, in words: "an expression" for everything
    that can start one, "an operator" for every operator, "a statement" at the start of a
    statement; other tokens quoted, closing brackets first."""
    texts = {name: _terminal_text(parser, name) for name in accepts}
    rest = set(accepts)
    if in_brackets:  # newlines inside brackets are skipped, never expected
        rest -= {"_NEWLINE", "SEMICOLON"}
    statement = any(texts[n] in _STATEMENT_KEYWORDS for n in rest)
    expression = "NUMBER" in rest
    name = "NAME" in rest
    if statement or expression:
        rest = {n for n in rest if n not in _EXPR_STARTERS and texts[n] not in _EXPR_STARTER_TEXT
                and texts[n] not in _STATEMENT_KEYWORDS}
    else:
        rest.discard("NAME")
    operator = any(texts[n] in _OPERATOR_TEXT for n in rest)
    rest = {n for n in rest if texts[n] not in _OPERATOR_TEXT}
    words: list[str] = []
    for punct in _PUNCT_ORDER:
        for n in sorted(rest):
            if texts[n] == punct:
                words.append(f"'{punct}'")
                rest.discard(n)
    words += sorted(f"'{texts[n]}'" for n in rest if texts[n] and n != "SEMICOLON")
    if statement:
        words.append("a statement")
    elif expression:
        words.append("an expression")
    elif name:
        words.append("a name")
    if operator:
        words.append("an operator")
    if "_INDENT" in rest:
        words.append("an indented block")
    if ("_NEWLINE" in rest or "SEMICOLON" in rest) and not (statement and "$END" in rest):
        words.append("end of line")
    if "$END" in rest and not statement:
        words.append("end of input")
    return words


def _join_or(words: list[str]) -> str:
    if len(words) > 5:
        words = words[:4] + ["..."]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " or " + words[-1]


def _accepts(interactive) -> set:
    """Terminals that the parser could take in its current state (each tried on a copy)."""
    from lark.lexer import Token
    from lark.parsers.lalr_parser_state import ParserState
    state = interactive.parser_state
    conf = copy(state.parse_conf)
    conf.callbacks = {}
    result = set()
    for name in state.parse_conf.states[state.position]:
        if not name.isupper():
            continue
        trial = ParserState(conf, state.lexer, list(state.state_stack), list(state.value_stack))
        try:
            trial.feed_token(Token(name, ""), is_end=(name == "$END"))
        except Exception:
            continue
        result.add(name)
    return result


def _replay(parser, text: str, bad) -> Any:
    """Parse ``text`` again up to, not including, the offending token and return the
    interactive parser there: LALR may have reduced on the bad lookahead before noticing, so
    the state the error carries can under-report what was acceptable."""
    interactive = parser.parse_interactive(text)
    try:
        for tok in interactive.iter_parse():
            if tok.type == bad.type and tok.start_pos == bad.start_pos:
                break
    except Exception:  # the lexer/postlexer stopped at the same place
        pass
    return interactive


def _end_position(text: str) -> tuple[int, int]:
    stripped = text.rstrip()
    if not stripped:
        return 1, 1
    line = stripped.count("\n") + 1
    column = len(stripped) - (stripped.rfind("\n") + 1) + 1
    return line, column


def _translate_error(exc: Exception, parser, text: str) -> GradSyntaxError:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken
    from lark.indenter import DedentError

    brackets = list(_indenter.brackets) if _indenter is not None else []

    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if 0 <= exc.pos_in_stream < len(text) else ""
        if ch in "\"'":
            return GradSyntaxError("unterminated string: a string must end on the line it "
                                   "starts on", line=exc.line, column=exc.column)
        if not ch:
            line, column = _end_position(text)
            return GradSyntaxError("unexpected end of input", line=line, column=column)
        return GradSyntaxError(f"unexpected {_describe_char(ch)}", line=exc.line,
                               column=exc.column)

    if isinstance(exc, (UnexpectedToken, UnexpectedEOF)):
        tok = getattr(exc, "token", None)
        if tok is None:
            line, column = _end_position(text)
            return GradSyntaxError("unexpected end of input", line=line, column=column)
        line, column = tok.line, tok.column
        if tok.type == "$END" or line is None:
            line, column = _end_position(text)
        if tok.type == "$END" and brackets:
            opener = brackets[-1]
            return GradSyntaxError(f"'{opener.value}' was never closed", line=opener.line,
                                   column=opener.column)
        if tok.type == "_INDENT":
            return GradSyntaxError("unexpected indent", line=line, column=column)

        interactive = _replay(parser, text, tok)
        brackets = list(_indenter.brackets)  # as replayed, up to (not including) the bad token
        if tok.type in _CLOSE:
            if not brackets:
                return GradSyntaxError(f"unmatched '{tok.value}'", line=line, column=column)
            opener = brackets[-1]
            if _CLOSE[tok.type] != opener.value:
                return GradSyntaxError(
                    f"'{tok.value}' does not match '{opener.value}' at line {opener.line}, "
                    f"column {opener.column}", line=line, column=column)

        accepts = _accepts(interactive)
        desc = _describe_token(parser, tok)
        tok_text = _terminal_text(parser, tok.type)

        if "_INDENT" in accepts and tok.type != "_INDENT":
            where = ""
            for value in reversed(interactive.parser_state.value_stack):
                if getattr(value, "type", None) == "WITH":
                    where = f" after 'with' on line {value.line}"
                    break
            return GradSyntaxError(f"expected an indented block{where}", line=line, column=column)
        if tok_text in _COMPARE_TEXT and "NUMBER" not in accepts:
            return GradSyntaxError(
                f"unexpected '{tok_text}': chained comparisons such as a < b < c are not "
                "supported; compare two values at a time", line=line, column=column)
        if tok.type == "EQUAL" and not brackets and "NUMBER" not in accepts and any(
                getattr(v, "type", None) == "EQUAL" for v in interactive.parser_state.value_stack):
            return GradSyntaxError("unexpected '=': chained assignment (a = b = ...) is not "
                                   "supported", line=line, column=column)

        if tok.type == "NAME" and tok.value in _UNSUPPORTED_KEYWORDS:
            return GradSyntaxError(f"'{tok.value}' is not part of the gradcli language",
                                   line=line, column=column)
        pos = tok.start_pos
        if tok.type == "NAME" and pos and (text[pos - 1].isdigit() or text[pos - 1] == "."):
            start = pos
            while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "._"):
                start -= 1
            literal = text[start: tok.end_pos]
            if literal[:1].isdigit() or literal[:2] in {".0", ".1", ".2", ".3", ".4", ".5", ".6",
                                                        ".7", ".8", ".9"}:
                return GradSyntaxError(f"invalid number literal '{_clip(literal)}' (only decimal "
                                       "numbers such as 12, 1.5, 1e-3)", line=line,
                                       column=column - (pos - start))
        if tok_text == "/" and pos and text[pos - 1] == "/":
            return GradSyntaxError("'//' (floor division) is not supported", line=line,
                                   column=column - 1)

        words = _describe_expected(parser, accepts, bool(brackets))
        message = f"unexpected {desc}"
        if words:
            message += f" \N{EM DASH} expected {_join_or(words)}"
        if brackets and tok.type not in _CLOSE and brackets[-1].line < line:
            opener = brackets[-1]
            message += (f" ('{opener.value}' at line {opener.line}, column {opener.column} "
                        "is still open)")
        return GradSyntaxError(message, line=line, column=column)

    if isinstance(exc, DedentError):  # pragma: no cover - GradIndenter raises its own
        return GradSyntaxError("unindent does not match any outer indentation level",
                               line=1, column=1)
    return GradSyntaxError(f"invalid syntax ({type(exc).__name__})", line=1, column=1)


# =============================================================================== error context

def _char_width(ch: str) -> int:
    if ch == "\t":
        return 4
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def format_error_context(source: str, line: int | None, column: int | None, *,
                         width: int = 100, indent: str = "    ") -> str:
    """The source line ``line`` and a caret under ``column`` (both 1-based), as two lines of
    text, e.g. ``"    y = (x +\\n         ^"``. Long lines are cut to a window of about
    ``width`` characters around the column (marked ``...``); tabs shown as 4 spaces;
    unprintable characters as ``?``. Returns ``""`` if the line does not exist."""
    if not line or line < 1:
        return ""
    column = max(1, column or 1)
    start = 0
    for _ in range(line - 1):
        start = source.find("\n", start)
        if start < 0:
            return ""
        start += 1
    end = source.find("\n", start)
    text = source[start:] if end < 0 else source[start:end]
    text = text.rstrip("\r")
    col = min(column - 1, len(text))  # 0-based; may point just past the end
    lo, hi = 0, len(text)
    prefix = suffix = ""
    if len(text) > width:
        lo = max(0, col - width // 2)
        hi = min(len(text), lo + width)
        lo = max(0, min(lo, hi - width))
        prefix = "..." if lo > 0 else ""
        suffix = "..." if hi < len(text) else ""
    shown = []
    caret_pad = len(prefix)
    for i in range(lo, hi):
        ch = text[i]
        if ch == "\t":
            out = "    "
        elif not ch.isprintable() or 0xD800 <= ord(ch) <= 0xDFFF:
            out = "?"
        else:
            out = ch
        shown.append(out)
        if i < col:
            caret_pad += _char_width(ch) if out != "?" else 1
    return f"{indent}{prefix}{''.join(shown)}{suffix}\n{indent}{' ' * caret_pad}^"
