"""gradcli.present.plain_table draws the tables without rich: its text must be rich's, byte for byte.

Three layers:

* :func:`plain_table.render` against rich's own ``console.print(table)`` on hypothesis-drawn
  tables (headers, multi-line cells with blank lines, styles, titles, widths 40..200, wrapping
  columns that fit) in every colour system, under ``NO_COLOR`` and without colour;
* :func:`plain_table.output_mode` against the decisions of the rich console that
  ``tables._console`` makes, for terminals and pipes under FORCE_COLOR, NO_COLOR, TERM,
  TTY_COMPATIBLE and encodings;
* ``tables.print_table`` on real runs (fitted to widths 40..200, ``--wide``, checks), drawn
  without rich and with rich (the plain path switched off), on a terminal and not.
"""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gradcli.cli.session import Options, run
from gradcli.present import plain_table, tables
from helpers import run_on_a_terminal

RICH_CONSOLES = [  # (rich console keywords, the plain_table mode that must draw as it does)
    ({"color_system": None}, plain_table.PLAIN),
    ({"force_terminal": True, "color_system": "standard"}, plain_table.COLOUR),
    ({"force_terminal": True, "color_system": "256"}, plain_table.COLOUR),
    ({"force_terminal": True, "color_system": "truecolor"}, plain_table.COLOUR),
    ({"force_terminal": True, "color_system": "truecolor", "no_color": True}, plain_table.ATTRIBUTES),
    ({"force_terminal": True, "color_system": "standard", "no_color": True}, plain_table.ATTRIBUTES),
]
COLUMN_STYLES = ["", "bold", "cyan", "dim", "green", "bold red", "italic", "bold cyan"]
TEXT_STYLES = ["", "green", "dim", "bold red", "cyan", "bold", "italic dim"]


def rich_text(columns, rows, console_kwargs, width, title=None, no_wrap=None):
    """What rich's console writes for the table (as tables.show captures it, before stripping)."""
    console_kwargs = {"no_color": False, **console_kwargs}  # not from the environment (conftest sets NO_COLOR)
    console = Console(file=io.StringIO(), width=width, highlight=False, soft_wrap=False, **console_kwargs)
    table = Table(box=box.SIMPLE_HEAVY, pad_edge=False, title=title, title_justify="left")
    for k, (header, style) in enumerate(columns):
        table.add_column(header, style=style or None, no_wrap=True if no_wrap is None else no_wrap[k])
    for row in rows:
        table.add_row(*(Text(text, style=style) for text, style in row))
    with console.capture() as capture:
        console.print(table)
    return capture.get()


_HEADER = st.text(alphabet="abcdefgh_ ", min_size=1, max_size=14).filter(lambda h: h.strip() == h)
_CELL = st.text(alphabet=st.sampled_from("ab .-[]()01:,/\n"), max_size=30)


@st.composite
def _tables(draw):
    n = draw(st.integers(1, 7))
    columns = [(draw(_HEADER), draw(st.sampled_from(COLUMN_STYLES))) for _ in range(n)]
    rows = draw(st.lists(st.lists(st.tuples(_CELL, st.sampled_from(TEXT_STYLES)), min_size=n, max_size=n),
                         max_size=6))
    return columns, rows


@given(_tables(), st.integers(40, 200), st.sampled_from(RICH_CONSOLES), st.sampled_from([None, "checks", "t"]),
       st.data())
@settings(max_examples=600, deadline=None)
def test_render_writes_what_rich_writes(table, width, console, title, data):
    columns, rows = table
    kwargs, mode = console
    no_wrap = data.draw(st.lists(st.booleans(), min_size=len(columns), max_size=len(columns)))
    text = plain_table.render(columns, rows, mode, width, title)
    natural = plain_table.table_width(
        [plain_table.column_width(h, [r[k][0] for r in rows]) for k, (h, _) in enumerate(columns)])
    if natural > width or (title is not None and len(title) > natural):
        assert text is None  # rich would fold (or crop): its turn
        return
    assert text == rich_text(columns, rows, kwargs, width, title, no_wrap)


@given(_tables(), st.sampled_from(RICH_CONSOLES))
@settings(max_examples=200, deadline=None)
def test_at_its_natural_width_as_fit_print_prints_it(table, console):
    columns, rows = table
    kwargs, mode = console
    text = plain_table.render(columns, rows, mode)
    width = len(text.split("\n")[0])
    assert text == rich_text(columns, rows, kwargs, width)
    assert tables.natural_width(Console(width=80, file=io.StringIO()), _rich_table(columns, rows)) == width


def _rich_table(columns, rows):
    table = Table(box=box.SIMPLE_HEAVY, pad_edge=False)
    for header, style in columns:
        table.add_column(header, style=style or None, no_wrap=True)
    for row in rows:
        table.add_row(*(Text(text, style=style) for text, style in row))
    return table


@pytest.mark.parametrize("cell", ["漢字", "e\u0301", "a\tb", "\x1b[31m", "\u200b", "\x7f", "é"])
def test_text_rich_measures_otherwise_is_left_to_rich(cell):
    assert plain_table.render([("name", "")], [[(cell, "")]], plain_table.PLAIN, 80) is None
    assert plain_table.render([("name", "")], [[("x", "")]], plain_table.PLAIN, 80, title=cell) is None


def test_a_title_wider_than_the_table_is_left_to_rich():
    assert plain_table.render([("a", "")], [], plain_table.PLAIN, 80, title="a long title") is None


# -- the output mode: as the console tables._console makes decides ----------------------------------

class FakeStream(io.StringIO):
    """A stream that says whether it is a terminal, with an encoding."""

    def __init__(self, tty: bool, encoding: str = "utf-8"):
        super().__init__()
        self._tty, self._encoding = tty, encoding

    def isatty(self):
        return self._tty

    @property
    def encoding(self):
        return self._encoding


ENVIRONMENTS = [{}, {"FORCE_COLOR": "1"}, {"NO_COLOR": "1"}, {"FORCE_COLOR": "1", "NO_COLOR": "1"},
                {"FORCE_COLOR": ""}, {"NO_COLOR": ""}, {"TERM": "dumb"}, {"TERM": "unknown"},
                {"TERM": "DUMB", "FORCE_COLOR": "1"}, {"TERM": "xterm-256color"}, {"COLORTERM": "truecolor"},
                {"TTY_COMPATIBLE": "0"}, {"TTY_COMPATIBLE": "1"}, {"TTY_COMPATIBLE": "2"}, {"TERM": "xterm-16color"}]


@pytest.mark.parametrize("env", ENVIRONMENTS)
@pytest.mark.parametrize("tty", [False, True])
@pytest.mark.parametrize("encoding", ["utf-8", "UTF-8", "utf-16", "latin-1", "ascii"])
def test_the_output_mode_is_the_consoles(monkeypatch, env, tty, encoding):
    for key in ("FORCE_COLOR", "NO_COLOR", "TERM", "COLORTERM", "TTY_COMPATIBLE", "COLUMNS", "LINES"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    stream = FakeStream(tty, encoding)
    mode = tables._plain_mode(stream)
    console = tables._console(stream)
    columns = [("name", "bold"), ("grad_fn", "cyan"), ("grad", "")]
    rows = [[("x", ""), ("<MeanBackward0>", ""), ("tensor([[1., 1.],\n        [1., 1.]])", "green")],
            [("y", ""), ("None", ""), ("None", "dim")]]
    if mode is None:  # the cases rich draws otherwise: it must draw them
        assert (console.is_dumb_terminal or not console.encoding.startswith("utf")
                or env.get("TTY_COMPATIBLE") in ("0", "1"))
        return
    assert console.width == tables.width(stream)
    with console.capture() as capture:
        console.print(_rich_table(columns, rows))
    assert plain_table.render(columns, rows, mode, console.width) == capture.get()


# -- print_table: without rich and with it -----------------------------------------------------------

PROGRAMS = [
    "examples/seed0_variable.grad",
    "examples/seed3_quickstart.grad",
    "x = ones(2)\nassert x.sum() == 2, 'a message long enough to be wrapped at forty columns, or cut'",
    "w = rand(3, 40, requires_grad=True)\ny = (w * w).sum()\nassert True\nassert 1 == 2",
    "1 + 2",
    "x = ones(2)\nassert True",
    "é = ones(2, requires_grad=True)\ns = (é * 2).sum()",
    "x = ones(2)\nassert x.sum() == 2, '漢字'",
]


def _result(program):
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if program.endswith(".grad"):
        opts = Options(file=os.path.join(root, program))
    else:
        opts = Options(source=program, seed=0)
    return run(opts)[3]


def _printed(result, stream, wide, plain: bool, monkeypatch):
    with monkeypatch.context() as m:
        if not plain:
            m.setattr(tables, "_plain_mode", lambda file: None)
        tables.print_table(result, file=stream, wide=wide)
    return stream.getvalue()


@pytest.mark.parametrize("program", PROGRAMS)
def test_print_table_writes_rich_bytes(monkeypatch, program):
    result = _result(program)
    for key in ("FORCE_COLOR", "NO_COLOR", "TERM", "COLORTERM", "TTY_COMPATIBLE", "LINES"):
        monkeypatch.delenv(key, raising=False)
    for env in ({}, {"NO_COLOR": "1"}, {"FORCE_COLOR": "1"}):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        for columns in (40, 60, 80, 100, 120, 160, 200):
            monkeypatch.setenv("COLUMNS", str(columns))
            for tty in (False, True):
                for wide in (False, True):
                    plain = _printed(result, FakeStream(tty), wide, True, monkeypatch)
                    with_rich = _printed(result, FakeStream(tty), wide, False, monkeypatch)
                    assert plain == with_rich, (env, columns, tty, wide)


def test_the_seed_example_imports_neither_rich_nor_lark_nor_typer():
    """On the warm path (the parser's tables cached by a first run), the seed example's table is
    drawn without rich, and nothing imports lark or typer."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import sys; from gradcli.cli.fast import main; "
            "rc = main(['eval', '-f', 'examples/seed0_variable.grad']); sys.stdout.flush(); "
            "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'lark', 'typer', 'json')))")
    for _ in range(2):  # the first run may fill the parse cache
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                           env=dict(os.environ, PYTHONPATH=root, COLUMNS="80"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "0 []"



# -- what a user sees: the command on a pipe and on a real terminal, with and without rich -------------

_WRAPPER = ("import sys; from gradcli.present import tables; from gradcli.cli.fast import main\n"
            "if sys.argv.pop(1) == 'rich': tables._plain_mode = lambda file: None\n"
            "sys.exit(main(sys.argv[1:]))")
_ROOT = __import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.abspath(__file__)))


def _command(drawer, args, env_vars, columns=None):
    """(exit code, bytes shown) of ``gradcli eval ARGS`` drawn by ``drawer`` ('plain', or 'rich':
    the plain path switched off), on a pipe, or on a pseudo-terminal ``columns`` wide."""
    import os
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "TERM")}
    env.update(env_vars, PYTHONPATH=_ROOT)
    cmd = [sys.executable, "-c", _WRAPPER, drawer, "eval", *args]
    if columns is None:
        p = subprocess.run(cmd, capture_output=True, env=env, cwd=_ROOT, stdin=subprocess.DEVNULL, timeout=300)
        return p.returncode, p.stdout, p.stderr
    return run_on_a_terminal(cmd, columns, env, _ROOT, stderr_on_terminal=False)


@pytest.mark.parametrize("args", [["-f", "examples/seed0_variable.grad"], ["-f", "examples/seed3_quickstart.grad"],
                                  ["-f", "examples/seed3_quickstart.grad", "--wide"],
                                  ["x = ones(2)\nassert x.sum() == 3, 'a failing check with a message'"]])
@pytest.mark.parametrize("where", [
    ({"COLUMNS": "80"}, None), ({"COLUMNS": "120"}, None), ({"COLUMNS": "80", "FORCE_COLOR": "1"}, None),
    ({"TERM": "xterm-256color"}, 80), ({"TERM": "xterm-256color"}, 120),
    ({"TERM": "xterm-256color", "NO_COLOR": "1"}, 120), ({"TERM": "dumb"}, 120)])
def test_the_command_shows_the_same_bytes_without_rich(args, where):
    env_vars, columns = where
    assert _command("plain", args, env_vars, columns) == _command("rich", args, env_vars, columns)
