"""What ``gradcli test`` runs: ``*.grad`` files found under PATHS, chosen with ``-k`` and ``--shard``.

The order is the sorted order of the files' displayed paths (component by component), whatever
order PATHS were given in or the file system lists them in: every machine of a CI matrix and
every ``-j`` sees the same list, so ``--shard K/N`` (the files whose index in it is K-1 modulo N)
splits a suite the same way everywhere, and the shards' union is the whole suite.
"""

from __future__ import annotations

import os

from ...errors import UsageError

SUFFIX = ".grad"
# Directories never entered (pytest's norecursedirs, in short): hidden ones (.git, .venv, .tox...),
# and trees of other tools' files.
SKIPPED_DIRS = ("node_modules", "__pycache__", "venv")


class Item:
    """One program to run: its path as shown (relative to the working directory when under it),
    its JUnit ``classname`` (the directory, dotted) and ``name`` (the file name)."""

    __slots__ = ("path", "display", "classname", "name", "index")

    def __init__(self, path: str, display: str, index: int = 0):
        self.path, self.display, self.index = path, display, index
        directory, self.name = os.path.split(display)
        self.classname = directory.replace(os.sep, ".").strip(".") or "gradcli"


def collect(paths: list[str]) -> list[Item]:
    """Every ``*.grad`` file under ``paths`` (a file named directly is taken whatever its suffix),
    once each, in sorted order. A path that does not exist is a usage error."""
    found: dict[str, str] = {}  # real path -> displayed path
    for path in paths or ["."]:
        if not os.path.exists(path):
            raise UsageError(f"no such file or directory: {path}")
        files = [path] if not os.path.isdir(path) else _walk(path)
        for f in files:
            found.setdefault(os.path.realpath(f), _display(f))
    ordered = sorted(found.items(), key=lambda kv: _sort_key(kv[1]))
    return [Item(real, display, i) for i, (real, display) in enumerate(ordered)]


def _walk(top: str) -> list[str]:
    """The ``*.grad`` files under ``top``, with an explicit stack (no recursion on the tree's
    depth) and without following links to directories (no cycles)."""
    out, stack = [], [top]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            raise UsageError(f"cannot read the directory {directory}: {exc.strerror or exc}") from None
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and entry.name not in SKIPPED_DIRS:
                    stack.append(entry.path)
            elif entry.name.endswith(SUFFIX) and entry.is_file():
                out.append(entry.path)
    return out


def _display(path: str) -> str:
    rel = os.path.relpath(os.path.abspath(path))
    shown = os.path.abspath(path) if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel
    return shown.replace(os.sep, "/")


def _sort_key(display: str):
    return display.split("/")


# -- -k EXPR --------------------------------------------------------------------------------------

_PRECEDENCE = {"or": 1, "and": 2, "not": 3}


def keyword_matcher(expr: str):
    """A predicate on a displayed path for ``-k EXPR``, as pytest's ``-k``: each word matches when
    it is a substring of the path (case-insensitive), combined with ``not``, ``and``, ``or`` and
    parentheses. The expression goes to postfix through a shunting-yard (an explicit stack, so a
    deeply parenthesised expression cannot exhaust Python's recursion limit)."""
    postfix = _postfix(_tokens(expr), expr)

    def matches(path: str) -> bool:
        text, stack = path.lower(), []
        for kind, word in postfix:
            if kind == "word":
                stack.append(word in text)
            elif word == "not":
                stack.append(not stack.pop())
            else:
                right, left = stack.pop(), stack.pop()
                stack.append(left and right if word == "and" else left or right)
        return stack[0]
    return matches


def _tokens(expr: str) -> list[tuple[str, str]]:
    tokens, word = [], ""
    for ch in expr + " ":
        if ch in "() \t":
            if word:
                tokens.append(("op", word) if word in _PRECEDENCE else ("word", word.lower()))
                word = ""
            if ch in "()":
                tokens.append((ch, ch))
        else:
            word += ch
    return tokens


def _postfix(tokens, expr: str) -> list[tuple[str, str]]:
    """Shunting-yard, checking as it goes that operands and operators alternate."""
    out, ops, want_operand = [], [], True
    for kind, word in tokens:
        if kind == "word" or kind == "(" or (kind == "op" and word == "not"):
            if not want_operand:
                raise _bad_k(expr, f"expected 'and' or 'or' before {word!r}")
            if kind == "word":
                out.append((kind, word))
                want_operand = False
            else:
                ops.append((kind, word))
        elif kind == "op" or kind == ")":
            if want_operand:
                raise _bad_k(expr, f"expected a word before {word!r}")
            while ops and ops[-1][0] == "op" and (kind == ")" or _PRECEDENCE[ops[-1][1]] >= _PRECEDENCE[word]):
                out.append(ops.pop())
            if kind == ")":
                if not ops:
                    raise _bad_k(expr, "unbalanced ')'")
                ops.pop()
            else:
                ops.append((kind, word))
                want_operand = True
    if want_operand:
        raise _bad_k(expr, "the expression is empty" if not tokens else "it ends without a word")
    while ops:
        if ops[-1][0] == "(":
            raise _bad_k(expr, "unbalanced '('")
        out.append(ops.pop())
    return out


def _bad_k(expr: str, why: str) -> UsageError:
    return UsageError(f"-k {expr!r}: {why}",
                      hint="-k takes words matched against file paths, with and, or, not and parentheses, "
                           "e.g. -k 'hooks and not slow'")


# -- --shard K/N ----------------------------------------------------------------------------------

def parse_shard(spec: str | None) -> tuple[int, int] | None:
    """``K/N`` with ``1 <= K <= N``, or None when not given."""
    if spec is None:
        return None
    k, slash, n = spec.partition("/")
    try:
        k, n = int(k), int(n)
    except ValueError:
        k = n = 0
    if not slash or not 1 <= k <= n:
        raise UsageError(f"--shard expects K/N with 1 <= K <= N, e.g. --shard 2/4; got {spec!r}")
    return k, n


def select(items: list[Item], keyword: str | None, shard: tuple[int, int] | None) -> list[Item]:
    """The items ``-k`` keeps, then those of shard K of N (by index in that list, modulo N)."""
    if keyword is not None:
        matches = keyword_matcher(keyword)
        items = [item for item in items if matches(item.display)]
    if shard is not None:
        k, n = shard
        items = [item for i, item in enumerate(items) if i % n == k - 1]
    return items
