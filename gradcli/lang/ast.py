"""The AST of a ``.grad`` program: the node classes, and walking a tree without recursion.

The parser (:mod:`gradcli.lang.parser`) builds these nodes; the evaluator
(:mod:`gradcli.lang.evaluator`) runs them. This is the contract between the two.

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
- ``DictExpr(keys, values)``   ``{k: v, ...}``: two lists of expressions of one length
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
- ``Lambda(params, body)``     ``lambda a, b=1: a * b``: params a list of ``Param``, body an expression
- ``Param(name, default)``     a parameter of a ``def`` or ``lambda``; default an expression or None
- ``BoolOp(op, left, right)``  ``and`` / ``or`` (short-circuit: the evaluator evaluates ``right``
                               only when it needs it)
- ``Not(operand)``             ``not x``
- ``IfExp(test, body, orelse)``  ``body if test else orelse`` (only the chosen branch runs)
- ``ListComp(elt, generators)``  ``[elt for t in it if c ...]``; generators: list of ``Comprehension``
- ``Comprehension(target, iter, ifs)``  one ``for ... in ... if ...`` clause; target as in ``For``
- ``FString(parts)``           ``f"a{x:.4f}"``: parts are ``Str`` nodes and ``FormattedValue``
- ``FormattedValue(value, conversion, spec)``  ``{value!r:spec}``; conversion ``''``/``'r'``/``'s'``

Statements:

- ``Assign(targets, value, unpack, target_nodes)``
                               ``a = e`` -> targets ``['a']``, unpack False;
                               ``a, b = e`` / ``gx, = e`` / ``(a, b) = e`` -> unpack True.
                               targets: list of str; target_nodes: the matching ``Name`` nodes.
                               Only names can be assigned this way (``w.grad = None`` is a
                               syntax error with a message saying so; ``x[0] = 1`` is a SetItem).
- ``SetItem(target, value)``   ``x[i] = e``: target is the ``Subscript`` (torch's item assignment)
- ``AugAssign(target, op, value)``
                               ``a += e``; target a ``Name``, ``Attribute`` or ``Subscript``; op the
                               binary operator: ``+ - * /`` (``w.data -= g`` has op ``'-'``)
- ``ExprStmt(value)``          an expression on its own (``print(x)``, ``y.backward()``)
- ``Assert(test, msg)``        ``assert test[, msg]``; msg an expression or None
- ``With(context, body)``      ``with EXPR [as NAME]:`` + block; body is a non-empty list of statements;
                               ``target``: the Name after ``as`` (``()`` without one).
                               The parser accepts any expression: the interpreter checks it.
- ``Del(names, targets)``      ``del a, b``: names is a list of str, targets the ``Name`` nodes
- ``SetItem(target, value)``   ``x.grad = None`` / ``xs[0] = 1``: target an Attribute or a Subscript
- ``Import(module, alias)``    ``import torch.nn.functional as F`` -> module ``'torch.nn.functional'``,
                               alias ``'F'`` (``import torch.nn`` binds ``torch``: alias None)
- ``ImportFrom(module, names)``  ``from torch import ones as o`` -> names ``[('ones', 'o')]``
                               (``('*', None)`` for ``import *``)
- ``Pass()``, ``Break()``, ``Continue()``, ``Return(value)`` (value an expression or None)
- ``If(test, body, orelse)``   orelse: a list of statements (``elif`` is an ``If`` inside it)
- ``For(target, iter, body)``  ``for i, (a, b) in enumerate(xs):``; target a ``Name`` or a
                               ``TupleExpr`` of targets (checked by the builder)
- ``While(test, body)``
- ``FunctionDef(name, params, body, decorators)``  decorators: expressions, outermost first

``Program(body, source, filename)``: body is the list of top-level statements (possibly empty).

Constructing nodes: the fields in ``_fields`` are positional (``BinOp('+', a, b)``); the others
(``kwarg_positions``, ``target_nodes``, ``Del.targets``, ``source``, ``filename``) and the
positions are keywords with defaults, so a hand-built ``Num(3)`` is at line 0, column 0.

Helpers: :func:`walk` (pre-order, explicit stack), :func:`postorder` (children before their
parent, explicit stack: the order an iterative evaluator wants), :func:`iter_child_nodes`.
"""

from __future__ import annotations

from typing import Any, Iterator

__all__ = [
    "Node", "Expr", "Stmt",
    "Num", "Str", "Const", "Name", "EllipsisLit", "ListExpr", "TupleExpr", "DictExpr", "BinOp", "UnaryOp",
    "Compare", "Call", "Attribute", "Subscript", "Slice", "Lambda", "Param", "BoolOp", "Not", "IfExp",
    "ListComp", "Comprehension", "FString", "FormattedValue",
    "Assign", "AugAssign", "ExprStmt", "Assert", "With", "Del", "SetItem", "Import", "ImportFrom",
    "Pass", "Break", "Continue", "Return", "If", "For", "While", "FunctionDef", "Program",
    "walk", "postorder", "iter_child_nodes",
]


class Node:
    """Base of every AST node, and the one constructor they all share.

    ``_fields``: the node's own fields, in order: the constructor's positional parameters and
    what ``repr`` shows. ``_keyword_fields``: further fields, given by keyword, with their
    defaults (``None`` stands for a new empty list). ``_child_fields``: the fields that hold
    nodes, lists of nodes or ``(name, node)`` pairs, in source order."""

    __slots__ = ("line", "column", "end_line", "end_column")
    _fields: tuple[str, ...] = ()
    _keyword_fields: dict[str, Any] = {}
    _child_fields: tuple[str, ...] = ()

    def __init__(self, *values: Any, line: int = 0, column: int = 0, end_line: int = 0,
                 end_column: int = 0, **keywords: Any) -> None:
        fields = self._fields
        if len(values) != len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} positional "
                            f"field(s) {fields}, got {len(values)}")
        for name, value in zip(fields, values):
            setattr(self, name, value)
        if self._keyword_fields or keywords:
            for name, default in self._keyword_fields.items():
                value = keywords.pop(name, default)
                setattr(self, name, [] if value is None else value)
            if keywords:
                raise TypeError(f"{type(self).__name__}() has no field {next(iter(keywords))!r}")
        self.line = line
        self.column = column
        self.end_line = end_line
        self.end_column = end_column

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


# ------------------------------------------------------------------------------ expressions

class Num(Expr):
    __slots__ = _fields = ("value",)


class Str(Expr):
    __slots__ = _fields = ("value",)


class Const(Expr):
    __slots__ = _fields = ("value",)


class Name(Expr):
    __slots__ = _fields = ("id",)


class EllipsisLit(Expr):
    __slots__ = ()


class ListExpr(Expr):
    __slots__ = _fields = _child_fields = ("items",)


class TupleExpr(Expr):
    __slots__ = _fields = _child_fields = ("items",)


class DictExpr(Expr):
    __slots__ = _fields = _child_fields = ("keys", "values")


class BinOp(Expr):
    __slots__ = _fields = ("op", "left", "right")
    _child_fields = ("left", "right")


class UnaryOp(Expr):
    __slots__ = _fields = ("op", "operand")
    _child_fields = ("operand",)


class Compare(Expr):
    __slots__ = _fields = ("op", "left", "right")
    _child_fields = ("left", "right")


class Call(Expr):
    __slots__ = ("func", "args", "kwargs", "kwarg_positions")
    _fields = ("func", "args", "kwargs")
    _keyword_fields = {"kwarg_positions": None}
    _child_fields = ("func", "args", "kwargs")


class Attribute(Expr):
    __slots__ = _fields = ("value", "attr")
    _child_fields = ("value",)


class Subscript(Expr):
    __slots__ = _fields = _child_fields = ("value", "index")


class Slice(Expr):
    __slots__ = _fields = _child_fields = ("start", "stop", "step")


class Lambda(Expr):
    __slots__ = _fields = ("params", "body")
    _child_fields = ("params", "body")


class Param(Node):
    __slots__ = _fields = ("name", "default")
    _child_fields = ("default",)


class BoolOp(Expr):
    __slots__ = _fields = ("op", "left", "right")
    _child_fields = ("left", "right")


class Not(Expr):
    __slots__ = _fields = _child_fields = ("operand",)


class IfExp(Expr):
    __slots__ = _fields = _child_fields = ("test", "body", "orelse")


class ListComp(Expr):
    __slots__ = _fields = _child_fields = ("elt", "generators")


class Comprehension(Node):
    __slots__ = _fields = ("target", "iter", "ifs")
    _child_fields = ("iter", "ifs")


class FString(Expr):
    __slots__ = _fields = _child_fields = ("parts",)


class FormattedValue(Expr):
    __slots__ = _fields = ("value", "conversion", "spec")
    _child_fields = ("value",)


# ------------------------------------------------------------------------------ statements

class Assign(Stmt):
    __slots__ = ("targets", "value", "unpack", "target_nodes")
    _fields = ("targets", "value", "unpack")
    _keyword_fields = {"target_nodes": None}
    _child_fields = ("target_nodes", "value")


class AugAssign(Stmt):
    __slots__ = _fields = ("target", "op", "value")
    _child_fields = ("target", "value")


class SetItem(Stmt):
    __slots__ = _fields = _child_fields = ("target", "value")


class ExprStmt(Stmt):
    __slots__ = _fields = _child_fields = ("value",)


class Assert(Stmt):
    __slots__ = _fields = _child_fields = ("test", "msg")


class With(Stmt):
    __slots__ = ("context", "body", "target")
    _fields = _child_fields = ("context", "body")
    _keyword_fields = {"target": ()}  # the Name of ``with EXPR as NAME:``; () without one


class Del(Stmt):
    __slots__ = ("names", "targets")
    _fields = ("names",)
    _keyword_fields = {"targets": None}
    _child_fields = ("targets",)


class Import(Stmt):
    __slots__ = _fields = ("module", "alias")


class ImportFrom(Stmt):
    __slots__ = _fields = ("module", "names")


class Pass(Stmt):
    __slots__ = ()


class Break(Stmt):
    __slots__ = ()


class Continue(Stmt):
    __slots__ = ()


class Return(Stmt):
    __slots__ = _fields = _child_fields = ("value",)


class If(Stmt):
    __slots__ = _fields = _child_fields = ("test", "body", "orelse")


class For(Stmt):
    __slots__ = _fields = ("target", "iter", "body")
    _child_fields = ("iter", "body")


class While(Stmt):
    __slots__ = _fields = _child_fields = ("test", "body")


class FunctionDef(Stmt):
    __slots__ = _fields = ("name", "params", "body", "decorators")
    _child_fields = ("decorators", "params", "body")


class Program(Node):
    __slots__ = ("body", "source", "filename")
    _fields = _child_fields = ("body",)
    _keyword_fields = {"source": "", "filename": "<program>"}


# ------------------------------------------------------------------------------ traversal

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
