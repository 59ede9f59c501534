"""The AST builder and the postlexer as Lark's path needs them: the one place that subclasses lark.

:class:`~gradcli.lang.builder.ASTBuilder` and :class:`~gradcli.lang.postlex.PostLexer` are plain
classes, so the fast path (:mod:`gradcli.lang.fastpath`) parses a program without importing lark.
Lark's path (no cache yet, or an error to word) wants a ``Transformer`` whose methods take their
children inline and an ``Indenter`` that makes lark tokens: these are those, with no behaviour
of their own.
"""

from __future__ import annotations

from lark import Transformer, v_args
from lark.indenter import Indenter
from lark.lexer import Token

from .builder import ASTBuilder
from .postlex import PostLexer

__all__ = ["LarkASTBuilder", "GradIndenter"]


def _lark_builder() -> type:
    """The AST builder as a lark ``Transformer`` (children inline), embedded in the LALR parser.
    ``v_args`` wraps only the methods a class defines itself, so the builder's rule methods are
    copied into the subclass (the same functions)."""
    methods = {name: f for name, f in vars(ASTBuilder).items() if not name.startswith("_")}
    methods["__doc__"] = _lark_builder.__doc__
    return v_args(inline=True)(type("LarkASTBuilder", (ASTBuilder, Transformer), methods))


LarkASTBuilder = _lark_builder()


class GradIndenter(PostLexer, Indenter):
    """The postlexer as a lark ``Indenter`` (``always_accept``), making lark tokens."""

    Token = Token
