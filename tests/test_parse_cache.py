"""The fast path's plain tables, cached on disk: parsing without importing lark (issue 16).

The first parse of a process with no cache builds Lark's parser and writes, next to Lark's own
cache, the fast path's tables as plain data (marshal); a later process loads them and parses
every valid program without lark. Trees (with positions) must equal Lark's path's, errors stay
Lark's path's, and a stale or corrupt file, or GRADCLI_NO_CACHE=1, changes nothing but speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradcli.errors import GradSyntaxError
from gradcli.lang import parser as syntax
from gradcli.lang.fastpath import FastPath

import test_lang_dict_with
import test_lang_pytorch
import test_parse_fast
import test_syntax

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "seed0_variable.grad"

# Runs gradcli's command in a fresh interpreter and says on stderr, as the very last thing,
# whether lark was ever imported.
RUN = ("import atexit, sys\n"
       "atexit.register(lambda: sys.stderr.write('\\nLARK=%s\\n' % ('lark' in sys.modules)))\n"
       "from gradcli.cli.fast import main\n"
       "sys.argv = ['gradcli'] + sys.argv[1:]\n"
       "sys.exit(main())\n")


def run(cache: Path, *args: str, **env: str):
    environ = {k: v for k, v in os.environ.items() if k != "GRADCLI_NO_CACHE"}
    environ.update(GRADCLI_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **env)
    proc = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True,
                          env=environ, cwd=ROOT, timeout=120)
    assert proc.stderr.rstrip().splitlines()[-1].startswith("LARK="), proc.stderr
    return proc.returncode, proc.stdout, proc.stderr.rstrip().endswith("LARK=True")


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """This process's parser state as at start-up, with an empty cache directory."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("GRADCLI_CACHE_DIR", str(cache))
    monkeypatch.delenv("GRADCLI_NO_CACHE", raising=False)
    for name, value in (("_parser", None), ("_indenter", None), ("_fast", None),
                        ("_fast_from_lark", True)):
        monkeypatch.setattr(syntax, name, value)
    return cache


def outcome(source: str):
    try:
        return "ok", test_parse_fast.dump(syntax.parse(source))
    except GradSyntaxError as err:
        return "error", err.message, err.line, err.column, err.hint


def valid_corpus() -> list[str]:
    texts = test_parse_fast.program_texts()  # examples/**/*.grad and a sampler of every form
    texts += [v if isinstance(v, str) else v[0] for v in test_lang_dict_with.PROGRAMS.values()]
    texts += [v if isinstance(v, str) else v[0] for v in test_lang_pytorch.PROGRAMS.values()]
    for test in (test_syntax.test_statement_forms, test_syntax.test_expression_forms,
                 test_syntax.test_precedence_and_associativity):
        texts += [case[0] for mark in test.pytestmark if mark.name == "parametrize"
                  for case in mark.args[1]]
    texts.append(test_parse_fast.big_program(300))
    return texts


def error_corpus() -> list[str]:
    mark, = [m for m in test_syntax.test_error_messages_and_positions.pytestmark
             if m.name == "parametrize"]
    return [case[0] for case in mark.args[1]]


# ------------------------------------------------------------------------------ the command line

def test_the_second_run_parses_without_lark(tmp_path):
    cache = tmp_path / "cache"
    first = run(cache, "eval", "-f", str(SEED), "--json")
    assert first[0] == 0 and first[2]  # no cache yet: lark parsed, and the caches were written
    assert sorted(p.suffix for p in cache.iterdir()) == [".fast-tables", ".lark-cache"]
    assert json.loads(first[1])["variables"]
    for mode in (["--json"], []):  # the table too
        reference = run(tmp_path / f"other{len(mode)}", "eval", "-f", str(SEED), *mode)
        assert reference[2]  # a fresh cache directory: lark
        assert run(cache, "eval", "-f", str(SEED), *mode) == (0, reference[1], False)


def test_an_error_still_gets_lark_s_message(tmp_path):
    cache = tmp_path / "cache"
    run(cache, "eval", "-f", str(SEED))
    code, out, lark = run(cache, "eval", "x = (1 +\ny = 2\n", "--json")
    assert code == 2 and lark  # the fast path declined; Lark's path worded it
    error = json.loads(out)["error"]
    assert error["kind"] == "syntax" and (error["line"], error["column"]) == (2, 3)


def test_no_cache_writes_nothing_and_still_works(tmp_path):
    cache = tmp_path / "cache"
    reference = run(tmp_path / "other", "eval", "-f", str(SEED), "--json")
    for _ in range(2):
        code, out, lark = run(cache, "eval", "-f", str(SEED), "--json", GRADCLI_NO_CACHE="1")
        assert (code, out, lark) == (0, reference[1], True)
        assert not cache.exists() or not list(cache.iterdir())


# ------------------------------------------------------------------------------ in process

def test_tables_are_written_once_and_loaded_without_lark(fresh):
    assert syntax._load_fast() is None
    syntax.parse("x = 1\n")  # no tables yet: Lark's path, which writes them
    files = sorted(fresh.iterdir(), key=lambda f: f.suffix)
    assert [f.suffix for f in files] == [".fast-tables", ".lark-cache"]
    assert files[0] == Path(syntax._tables_path())
    assert syntax._fast is False  # this process did not use them
    loaded = syntax._load_fast()
    assert isinstance(loaded, FastPath)
    mtime = files[0].stat().st_mtime_ns
    syntax._parser = None
    syntax._get_parser()  # a valid file is not written again
    assert files[0].stat().st_mtime_ns == mtime
    code = ("import sys; from gradcli.lang import parser as p; "
            "t = p.parse('y = x * 1.5 + f\"{x:.2f}\"\\n'); "
            "print(type(p._fast).__name__, 'lark' in sys.modules, t.body[0].value.op)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, GRADCLI_CACHE_DIR=str(fresh), PYTHONPATH=str(ROOT)))
    assert out.stdout.split() == ["FastPath", "False", "+"], out.stderr


def test_trees_equal_lark_s_on_every_corpus(fresh, monkeypatch):
    syntax.parse("x\n")  # writes the tables
    fast = syntax._load_fast()
    assert fast is not None
    calls = []
    real = syntax._get_parser()

    class Spy:  # Lark's parser, counting its parses
        def __getattr__(self, name):
            return getattr(real, name)

        def parse(self, text, *args, **kwargs):
            calls.append(text)
            return real.parse(text, *args, **kwargs)

    monkeypatch.setattr(syntax, "_parser", Spy())
    texts = valid_corpus()
    assert len(texts) > 100
    for text in texts:
        monkeypatch.setattr(syntax, "_fast", fast)
        by_fast = outcome(text)
        assert by_fast[0] == "ok", (text, by_fast)
        assert calls == [], text  # the fast path parsed it all (f-string fields too)
        monkeypatch.setattr(syntax, "_fast", False)
        monkeypatch.setattr(syntax, "_fast_from_lark", False)
        assert outcome(text) == by_fast, text
        del calls[:]


def test_errors_are_lark_s_exactly(fresh, monkeypatch):
    syntax.parse("x\n")
    fast = syntax._load_fast()
    texts = error_corpus() + ["x = (1 +\ny = 2\n", "if x:\n    y = 1\n  z = 2\n", "y = f'{x +}'\n",
                              "x = 1 is\n", "class A: pass\n", "\x00garbage\n"]
    assert len(texts) > 20
    for text in texts:
        monkeypatch.setattr(syntax, "_fast", fast)
        by_fast = outcome(text)
        monkeypatch.setattr(syntax, "_fast", False)
        monkeypatch.setattr(syntax, "_fast_from_lark", False)
        by_lark = outcome(text)
        assert by_fast[0] == "error" and by_fast == by_lark, text


def test_a_corrupt_file_is_ignored_and_rewritten(fresh):
    syntax.parse("x\n")
    path = Path(syntax._tables_path())
    good = path.read_bytes()
    import marshal
    for bad in (b"", b"garbage\x00\xff", good[: len(good) // 2], b"\xe9" + good[1:],
                marshal.dumps(("key", {"pattern": 1}))):
        path.write_bytes(bad)
        assert syntax._load_fast() is None
        syntax._parser = syntax._fast = None
        assert outcome("y = x + 1\n")[0] == "ok"  # Lark's path, rewriting the file
        assert marshal.loads(path.read_bytes()) == marshal.loads(good)
        assert isinstance(syntax._load_fast(), FastPath)


def test_a_stale_file_is_ignored_and_rewritten(fresh, monkeypatch):
    """A file for another grammar (or lark, Python, format) under this one's name is not used;
    a changed grammar names another file, and its own tables follow the change."""
    import marshal
    syntax.parse("x\n")
    path = Path(syntax._tables_path())
    key, tables = marshal.loads(path.read_bytes())
    path.write_bytes(marshal.dumps((key.replace("arith", "arity", 1), tables)))
    assert syntax._load_fast() is None
    syntax._parser = syntax._fast = None
    syntax.parse("x\n")
    assert marshal.loads(path.read_bytes())[0] == key
    changed = syntax.grammar_text().replace('arith "<" arith                -> lt',
                                            'arith "<" arith                -> gt', 1)
    assert changed != syntax.grammar_text()
    monkeypatch.setattr(syntax, "grammar_text", lambda: changed)
    assert syntax._tables_path() != str(path) and syntax._load_fast() is None
    syntax._parser = syntax._fast = None
    assert syntax.parse("a < b\n").body[0].value.op == ">"  # Lark's path, writing the tables
    syntax._fast = syntax._load_fast()
    assert syntax._fast is not None
    syntax._parser = None
    assert syntax.parse("a < b\n").body[0].value.op == ">"  # the fast path: the new grammar's
    assert syntax._parser is None  # Lark's parser was not needed


def test_the_lark_version_is_read_without_importing_lark():
    import lark
    assert syntax._lark_version() == lark.__version__
