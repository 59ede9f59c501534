"""Parsing: ``.grad`` source text -> AST (SPEC §2, §5). :func:`parse` is the front end's entry.

``parse(source)`` returns a :class:`~gradcli.lang.ast.Program`. The grammar lives in
``grammar/gradcli.lark`` (installed as ``gradcli/grammar/gradcli.lark``); it is parsed with
Lark's LALR(1) parser and contextual lexer, the indentation postlexer
(:mod:`gradcli.lang.postlex`) between them, and the AST built *during* the parse by an embedded
transformer (:mod:`gradcli.lang.builder`), so nothing recurses on the depth of the program: a
100,000-term sum or an expression nested 10,000 deep parses without touching the recursion
limit. Every syntax error -- whatever the input: binary garbage, NUL bytes, lone surrogates,
huge lines -- is a :class:`gradcli.errors.GradSyntaxError` with a one-line message,
``line``/``column`` (1-based) and ``hint`` (the source line with a caret), made by
:mod:`gradcli.lang.syntax_errors`.

This module also owns the Lark parser's life: lark is imported on the first parse, not with
this module (start-up time), and Lark's analysis of the grammar is cached per user on disk.
Beside it, the first parse writes the fast path's tables as plain data (:mod:`gradcli.lang.fastpath`,
``marshal``); with them a later process parses every valid program through the fast path without
importing lark at all (lark costs ~0.5x numpy's import time: its import, loading the parser,
compiling its lexers). Lark's path remains the reference: it parses when there are no cached
tables yet, when they are stale or corrupt, with ``GRADCLI_NO_CACHE=1``, and whenever the fast
path declines (any error), so errors are worded by Lark's path, as before.

Language notes (decisions where SPEC §2 is silent): no chained comparisons or chained
assignment; Python keywords the language does not use (``if``, ``for``, ``and``, ``not``,
``import``, ...) are errors, and so is using a keyword as a name; strings are single-line,
single or double quoted, without prefixes (no ``r""``/``f""``); only decimal numbers (no
``0x10``, no complex); tabs in indentation count to the next multiple of 8, as in Python 2
(consistent use is up to the author); a backslash at the end of a line continues it.
"""

from __future__ import annotations

import gc
import os
import threading
from typing import Any

from ..errors import GradcliError, GradSyntaxError
# iter_child_nodes: also reached as parser.iter_child_nodes by the tests of parsed trees.
from .ast import Program, iter_child_nodes  # noqa: F401

__all__ = ["parse", "grammar_text"]


# ------------------------------------------------------------------------------ the grammar

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_GRAMMAR = os.path.join(os.path.dirname(_HERE), "grammar", "gradcli.lark")  # in the installed wheel
_REPO_GRAMMAR = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "grammar", "gradcli.lark")


def grammar_text() -> str:
    """The grammar: from the installed package (``gradcli/grammar/``, where the wheel puts it) if
    present, else from the repository. A plain file read: ``importlib.resources`` and ``pathlib``
    cost ~5 ms of every start, and gradcli is never imported from a zip file."""
    try:
        with open(_PACKAGE_GRAMMAR, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        with open(_REPO_GRAMMAR, encoding="utf-8") as f:
            return f.read()


# ------------------------------------------------------------------------------ the Lark parser (lazy, cached)

_lock = threading.RLock()
_parser: Any = None
_indenter: Any = None

def _cache_dir() -> str | None:
    """The per-user cache directory, or None where no private, writable one can be had (or
    ``GRADCLI_NO_CACHE=1``): ``GRADCLI_CACHE_DIR``, else ``$XDG_CACHE_HOME/gradcli`` or
    ``~/.cache/gradcli``, made mode 0700; one that another user owns or can write is refused,
    since Lark's cache there is a pickle."""
    if os.environ.get("GRADCLI_NO_CACHE"):
        return None
    try:
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
        return base
    except Exception:
        return None


def _cache_path(grammar: str) -> str | None:
    """A per-user cache file for Lark's grammar analysis (it saves ~60 ms of start-up), or None
    where no cache directory can be had (:func:`_cache_dir`): then the grammar is analysed on
    every start. The file name carries a hash of the grammar and of the lark and Python
    versions, and inside the file Lark checks a SHA-256 of grammar text + options + versions
    and rebuilds (rewriting the file) on any mismatch, so a stale grammar is never used; a
    corrupt or unreadable file is ignored, and failing to write it is harmless."""
    base = _cache_dir()
    if base is None:
        return None
    try:
        import hashlib
        import sys

        import lark
        key = f"{grammar}\0{lark.__version__}\0{sys.version_info[:2]}".encode("utf-8", "replace")
        return os.path.join(base, f"grammar-{hashlib.sha256(key).hexdigest()[:16]}.lark-cache")
    except Exception:
        return None


def import_lark() -> None:
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
    import_lark()
    from lark import Lark

    from .lark_adapter import GradIndenter
    grammar = grammar_text()
    cache_fn = _cache_path(grammar) if cache else None
    if cache_fn:
        try:
            indenter = GradIndenter()
            return Lark(grammar, cache=cache_fn, **_lark_options(indenter)), indenter
        except Exception:  # a cache problem must never stop the parser from being built
            pass
    indenter = GradIndenter()
    return Lark(grammar, **_lark_options(indenter)), indenter


def _lark_options(indenter) -> dict:
    from .lark_adapter import LarkASTBuilder
    return dict(parser="lalr", lexer="contextual", postlex=indenter, transformer=LarkASTBuilder(),
                start="start", maybe_placeholders=True)


def _get_parser():
    """Lark's parser, built (or loaded from Lark's cache) on first use; the fast path's plain
    tables are written to the cache then, where they are missing, for the next start."""
    global _parser, _indenter
    if _parser is None:
        with _lock:
            if _parser is None:
                _parser, _indenter = _build_parser()
                if not _fast and _load_fast() is None:  # none yet, stale or corrupt
                    _write_tables(_parser)
    return _parser


# ------------------------------------------------------------------------------ the fast path

# Without a cache of the fast path's tables, texts from this length on are parsed by the fast path
# first (gradcli.lang.fastpath), built from the loaded Lark parser: below it, building the tables
# (once a process) would cost more than it saves.
FAST_PATH_MIN_CHARS = 20_000
_fast: Any = None  # the fast path; None: not looked for yet; False: none (yet)
_fast_from_lark = True  # whether building it from Lark's parser is still to be tried


def _fast_parse(text: str, pending: list):
    """The program by the fast path, or None where it cannot tell (then Lark's path parses; the
    f-string fields the fast path left in ``pending`` are taken out again). The fast path comes
    from the cached plain tables (no lark import), else, for a long text, from Lark's parser."""
    global _fast, _fast_from_lark
    if _fast is None:
        _fast = _load_fast() or False
    if _fast is False and _fast_from_lark and len(text) >= FAST_PATH_MIN_CHARS:
        _fast_from_lark = False  # tried once a process
        from .fastpath import FastPath
        from .postlex import PostLexer
        try:
            _fast = FastPath.from_lark(_get_parser(), PostLexer())
        except Exception:  # pragma: no cover - a lark or grammar the fast path cannot take
            _fast = False
    if not _fast:
        return None
    mark = len(pending)
    program = _fast.parse(text)
    if program is None:
        del pending[mark:]
    return program


def preload() -> None:
    """Load what parsing will need, for a command's start-up (with its garbage collector paused):
    the fast path from its cached tables, else lark (which then parses)."""
    global _fast
    if _fast is None:
        _fast = _load_fast() or False
    if not _fast:
        import_lark()
        import lark  # noqa: F401


def _tables_path(key: str | None = None) -> str | None:
    """The cache file of the fast path's plain tables, next to Lark's cache, or None. Its name is
    keyed by a hash (CRC-32: ``hashlib`` costs 3 ms of a start) of the grammar, the lark and
    Python versions and the tables' format, read without importing lark (the version from
    lark's ``__init__.py``): a grammar changed or lark upgraded names another file, and the
    whole key, kept inside the file, is checked on loading."""
    base = _cache_dir()
    if base is None:
        return None
    try:
        import zlib
        if key is None:
            key = _tables_key()
        return os.path.join(base, f"grammar-{zlib.crc32(key.encode('utf-8', 'replace')):08x}"
                                  f"-{len(key):x}.fast-tables")
    except Exception:
        return None


def _tables_key() -> str:
    import sys

    from .fastpath import TABLES_FORMAT
    return f"{grammar_text()}\0{_lark_version()}\0{sys.version_info[:2]}\0{TABLES_FORMAT}"


_LARK_VERSION: str | None = None


def _lark_version() -> str:
    """lark's version as its ``__init__.py`` states it, found on ``sys.path`` as the import
    system would find it, without importing lark (~0.3x numpy's import time); read once a
    process."""
    global _LARK_VERSION
    if _LARK_VERSION is None:
        _LARK_VERSION = _read_lark_version()
    return _LARK_VERSION


def _read_lark_version() -> str:
    import re
    import sys
    for entry in sys.path:
        init = os.path.join(entry or os.getcwd(), "lark", "__init__.py")
        if os.path.isfile(init):
            with open(init, encoding="utf-8") as f:
                found = re.search(r"""^__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)""", f.read(), re.M)
            if found:
                return found.group(1)
            break
    raise LookupError("lark's version")


def _load_fast():
    """The fast path from the cached plain tables, without importing lark; None where there is
    no cache file or it is unreadable, corrupt, of another format or for another grammar (then
    Lark's path parses, and writes the file afresh)."""
    try:
        key = _tables_key()
    except Exception:
        return None
    path = _tables_path(key)
    if path is None:
        return None
    try:
        import marshal

        from .fastpath import FastPath
        from .postlex import PostLexer
        with open(path, "rb") as f:
            stored, tables = marshal.loads(f.read())
        if stored != key:
            return None
        return FastPath(tables, PostLexer())
    except Exception:
        return None


def _write_tables(lark) -> None:
    """Write the fast path's plain tables of the loaded Lark parser to the cache (atomically,
    private to the user); any failure only means Lark's path at the next start."""
    try:
        key = _tables_key()
    except Exception:
        return
    path = _tables_path(key)
    if path is None:
        return
    try:
        import marshal
        import tempfile

        from .fastpath import tables_from_lark
        data = marshal.dumps((key, tables_from_lark(lark)))
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".fast-tables-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except Exception:
        pass


# ------------------------------------------------------------------------------ parse

def _check_jumps(program) -> None:
    """``break``/``continue`` outside a loop and ``return`` outside a function are syntax errors,
    found before anything runs, as Python finds them. Statements only, on an explicit stack."""
    from .ast import Break, Continue, For, FunctionDef, If, Return, While, With
    stack = [(program.body, False, False)]  # (statements, in a loop, in a function)
    while stack:
        body, in_loop, in_function = stack.pop()
        for stmt in body:
            cls = stmt.__class__
            if (cls is Break or cls is Continue) and not in_loop:
                word = "break" if cls is Break else "continue"
                raise GradSyntaxError(f"'{word}' outside loop", line=stmt.line, column=stmt.column)
            if cls is Return and not in_function:
                raise GradSyntaxError("'return' outside function", line=stmt.line, column=stmt.column)
            if cls is FunctionDef:
                stack.append((stmt.body, False, True))
            elif cls is For or cls is While:
                stack.append((stmt.body, True, in_function))
            elif cls is If:
                stack.append((stmt.body, in_loop, in_function))
                stack.append((stmt.orelse, in_loop, in_function))
            elif cls is With:
                stack.append((stmt.body, in_loop, in_function))


def _parse_text(text: str, pending: list):
    """The program: by the fast path where it can tell, else by Lark's path (which raises
    lark's exceptions for an error; :func:`parse` words them)."""
    program = _fast_parse(text, pending)
    if program is None:  # no fast path, or it could not tell: Lark's path
        program = _get_parser().parse(text)
    return program


def _parse_fields(pending: list) -> None:
    """Parse the expressions of the f-strings' fields (``f"{x:.4f}"``), which the builder left
    in ``pending``, and fill them in; a field's own f-strings join the list (no recursion)."""
    from .ast import ExprStmt, walk
    while pending:
        field, expr, line, column = pending.pop()
        try:
            program = _parse_text("(" + expr + ")\n", pending)
        except GradSyntaxError as exc:
            raise GradSyntaxError(f"f-string: {exc.message}", line=line, column=column) from None
        except GradcliError:
            raise
        except Exception:
            raise GradSyntaxError("f-string: invalid syntax", line=line, column=column) from None
        if len(program.body) != 1 or not isinstance(program.body[0], ExprStmt):
            raise GradSyntaxError("f-string: invalid syntax", line=line, column=column)
        value = program.body[0].value
        for node in walk(value):  # the field's positions, in the program's lines and columns
            node.column = column + node.column - 2 if node.line == 1 else node.column
            node.end_column = column + node.end_column - 2 if node.end_line == 1 else node.end_column
            node.line += line - 1
            node.end_line += line - 1
        field.value = value


def parse(source: str, *, filename: str = "<program>") -> Program:
    """Parse a ``.grad`` program. Raises :class:`GradSyntaxError` (and nothing else) for any
    text that is not a valid program."""
    if not isinstance(source, str):
        raise TypeError(f"parse() needs a str, not {type(source).__name__}")
    # CRLF and a lone CR are newlines, as in Python (CRLF -> LF moves no line or column).
    text = source.replace("\r\n", "\n").replace("\r", "\n") if "\r" in source else source
    if not text.endswith("\n"):
        text += "\n"
    from .postlex import prescan
    prescan(text)  # literals too long for the lexer's regular expressions (issue 17)
    with _lock:
        from . import builder
        del builder.PENDING_FIELDS[:]
        # The parse allocates a node or token per few characters and frees none of them: the
        # cyclic collector, running on the allocations, would only traverse them (a third of the
        # parse of a 100,000-term program). Paused, as the backward engine pauses it.
        collecting = gc.isenabled()
        gc.disable()
        try:
            program = _parse_text(text, builder.PENDING_FIELDS)
            _parse_fields(builder.PENDING_FIELDS)
            _check_jumps(program)
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
            from .syntax_errors import translate_error  # only after a failed parse: not at start-up
            try:
                err = translate_error(exc, _get_parser(), _indenter, text)
            except Exception:  # pragma: no cover - must never happen, but never leak
                err = GradSyntaxError("invalid syntax", line=1, column=1)
        else:
            program.source = source
            program.filename = filename
            return program
        finally:
            if collecting:
                gc.enable()
    if err.line is None:
        err.line, err.column = 1, 1
    if err.hint is None:
        from .syntax_errors import format_error_context
        err.hint = format_error_context(text, err.line, err.column)
    raise err

