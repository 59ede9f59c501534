"""Syntax errors: Lark's exceptions turned into one-line :class:`GradSyntaxError` messages.

:func:`translate_error` names what went wrong in words ("unexpected ')' — expected an
expression", "'(' was never closed", "chained comparisons ... are not supported") with a 1-based
line and column; :func:`format_error_context` draws the source line with a caret under the
column (the error's ``hint``). Only :func:`gradcli.lang.parser.parse` calls
:func:`translate_error`, after a failed parse, so lark is loaded by then.
"""

from __future__ import annotations

import unicodedata
from copy import copy
from typing import Any

from ..errors import GradSyntaxError

_EXPR_STARTERS = {"NAME", "NUMBER", "STRING", "FSTRING"}
_EXPR_STARTER_TEXT = {"(", "[", "{", "-", "+", "True", "False", "None", "lambda", "...", "not"}
_STATEMENT_KEYWORDS = {"assert", "del", "with", "if", "for", "while", "def", "return", "pass", "break",
                       "continue", "import", "from", "@"}
_OPERATOR_TEXT = {"+", "-", "*", "/", "@", "**", "<", "<=", ">", ">=", "==", "!=", ".", "(",
                  "[", "+=", "-=", "*=", "/=", "%", "//", "%=", "//=", "**=", "and", "or", "not", "in",
                  "is", "if", "for"}
_COMPARE_TEXT = {"<", "<=", ">", ">=", "==", "!="}
_PUNCT_ORDER = [")", "]", "}", ":", ",", "="]


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
    statement = any(texts[n] in _STATEMENT_KEYWORDS and texts[n] not in _OPERATOR_TEXT for n in rest)
    expression = "NUMBER" in rest
    name = "NAME" in rest
    if statement or expression:
        rest = {n for n in rest if n not in _EXPR_STARTERS and texts[n] not in _EXPR_STARTER_TEXT
                and (texts[n] not in _STATEMENT_KEYWORDS or not statement)}
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


def translate_error(exc: Exception, parser, indenter, text: str) -> GradSyntaxError:
    """The GradSyntaxError for ``exc``, raised by Lark's ``parser`` (whose postlexer is
    ``indenter``) on ``text``."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken
    from lark.indenter import DedentError

    from .postlex import CLOSE, UNSUPPORTED_KEYWORDS

    brackets = list(indenter.brackets)

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
        brackets = list(indenter.brackets)  # as replayed, up to (not including) the bad token
        if tok.type in CLOSE:
            if not brackets:
                return GradSyntaxError(f"unmatched '{tok.value}'", line=line, column=column)
            opener = brackets[-1]
            if CLOSE[tok.type] != opener.value:
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

        if tok.type == "NAME" and tok.value in UNSUPPORTED_KEYWORDS:
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
        if brackets and tok.type not in CLOSE and brackets[-1].line < line:
            opener = brackets[-1]
            message += (f" ('{opener.value}' at line {opener.line}, column {opener.column} "
                        "is still open)")
        return GradSyntaxError(message, line=line, column=column)

    if isinstance(exc, DedentError):  # pragma: no cover - GradIndenter raises its own
        return GradSyntaxError("unindent does not match any outer indentation level",
                               line=1, column=1)
    return GradSyntaxError(f"invalid syntax ({type(exc).__name__})", line=1, column=1)



# ------------------------------------------------------------------------------ the caret

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
