"""Output that fits: real processes at real widths (COLUMNS on a pipe, a real pseudo-terminal
with its window size), colour rules (NO_COLOR, FORCE_COLOR, TERM=dumb), errors on a terminal."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from gradcli.present import tables
from helpers import run_on_a_terminal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUICK = "examples/seed3_quickstart.grad"
ESC = "\x1b["


def gradcli(*args, **env_vars):
    env = dict(os.environ, PYTHONPATH=ROOT)
    for key in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "TERM"):
        env.pop(key, None)
    env.update(env_vars)
    return subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, stdin=subprocess.DEVNULL, timeout=300)


def on_a_terminal(args, columns, **env_vars):
    """Run with stdout and stderr on a real pseudo-terminal of ``columns`` columns; what it showed."""
    env = dict(os.environ, PYTHONPATH=ROOT, TERM="xterm-256color")
    for key in ("NO_COLOR", "FORCE_COLOR", "COLUMNS"):
        env.pop(key, None)
    env.update(env_vars)
    code, shown, _ = run_on_a_terminal([sys.executable, "-m", "gradcli", *args], columns, env, ROOT)
    return code, shown.decode().replace("\r\n", "\n")


def table_lines(text):
    """The lines of the tables: from the first header on (what the program printed comes first)."""
    lines = re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["name"])
    return [line for line in lines[start:] if line.startswith(" ")]



def coloured(text):
    """Whether ``text`` has foreground colour codes (NO_COLOR keeps bold and dim, as rich does)."""
    return re.search(r"\x1b\[(?:\d+;)*(?:3[0-8]|9[0-7])(?:;\d+)*m", text) is not None


@pytest.mark.parametrize("columns", [80, 100])
def test_quickstart_fits_without_folding_a_tensor_row(columns):
    p = gradcli("eval", "-f", QUICK, COLUMNS=str(columns))
    assert p.returncode == 0, p.stderr
    lines = table_lines(p.stdout)
    assert max(len(line) for line in lines) <= columns
    assert all(line == line.rstrip() for line in p.stdout.splitlines())  # no trailing spaces
    first = lines[0].split()
    assert first[0] == "name" and {"data", "grad", "grad_fn"} <= set(first)
    if columns == 100:
        assert first == ["name", "shape", "dtype", "grad_fn", "data", "grad"]
    # every tensor row whole: each repr line of x's data and grad is on one output line
    for row in ("tensor([[4.5000, 4.5000],", "[4.5000, 4.5000]])", "tensor([[27., 27.],", "[27., 27.]])"):
        assert any(row in line for line in lines), row
    # every column is shown somewhere, in a table that starts with the name
    headers = [line.split() for line in lines if line.split()[:1] == ["name"]]
    shown = {h for header in headers for h in header}
    assert shown == {"name", "shape", "dtype", "requires_grad", "is_leaf", "grad_fn", "next_functions", "data",
                     "grad"}


def test_wide_puts_every_column_in_one_table():
    for flag in ("--wide", "--full"):
        p = gradcli("eval", "-f", QUICK, flag, COLUMNS="80")
        headers = [line.split() for line in table_lines(p.stdout) if line.split()[:1] == ["name"]]
        assert headers == [["name", "shape", "dtype", "requires_grad", "is_leaf", "grad_fn", "next_functions",
                            "data", "grad"]]


@pytest.mark.parametrize("value", ["abc", "0", "-5", ""])
def test_bad_columns_are_ignored_for_80(value):
    assert gradcli("eval", "-f", QUICK, COLUMNS=value).stdout == gradcli("eval", "-f", QUICK, COLUMNS="80").stdout


def test_piped_output_defaults_to_80_columns():
    p = gradcli("eval", "-f", QUICK)
    assert max(len(line) for line in table_lines(p.stdout)) <= 80


def test_check_result_column_is_never_cut():
    p = gradcli("check", "sum(x ** 3)", "-g", "x=tensor([0.5, -1.0, 2.0])", COLUMNS="40")
    assert p.returncode == 0
    row = next(line for line in p.stdout.splitlines() if line.startswith(" x "))
    assert row.split()[:3] == ["x", "pass", "[3]"] and "…" not in p.stdout


def test_colour_rules_on_a_pipe():
    assert ESC not in gradcli("eval", "-f", QUICK).stdout
    assert ESC in gradcli("eval", "-f", QUICK, FORCE_COLOR="1").stdout
    forced = gradcli("eval", "-f", QUICK, FORCE_COLOR="1", NO_COLOR="1").stdout
    assert ESC in forced and not coloured(forced)


def test_colour_rules_on_a_terminal():
    code, shown = on_a_terminal(["eval", "-f", QUICK], 120)
    assert code == 0 and ESC in shown
    code, shown = on_a_terminal(["eval", "-f", QUICK], 120, NO_COLOR="1")
    assert code == 0 and not coloured(shown)
    code, shown = on_a_terminal(["eval", "-f", QUICK], 120, TERM="dumb")
    assert code == 0 and ESC not in shown


def test_the_terminal_width_is_the_terminals():
    for columns in (80, 120, 200):
        code, shown = on_a_terminal(["eval", "-f", QUICK], columns, NO_COLOR="1")
        lines = table_lines(shown)
        assert max(len(line) for line in lines) <= columns
        tables = sum(line.split()[:1] == ["name"] for line in lines)
        assert tables == (1 if columns >= 160 else 2 if columns >= 100 else 3)


def test_a_dumb_terminal_gets_its_own_width_and_no_cell_is_cut():
    """TERM=dumb (Emacs' shell): rich sized such a console at 80 columns whatever width gradcli gave
    it, and cut cells with an ellipsis; now the terminal's width, as any terminal's, without colour."""
    name = "a_variable_name_long_enough_that_an_eighty_column_table_would_have_to_cut_it_short_here"
    for columns in (200, 80):
        code, shown = on_a_terminal(["eval", f"{name} = ones(2, 3)"], columns, TERM="dumb")
        _, xterm = on_a_terminal(["eval", f"{name} = ones(2, 3)"], columns, NO_COLOR="1")
        assert code == 0 and ESC not in shown and "\u2026" not in shown
        assert name in shown and "tensor([[1., 1., 1.]," in shown
        assert table_lines(shown) == table_lines(xterm)
    code, shown = on_a_terminal(["eval", "-f", QUICK], 200, TERM="dumb")
    assert sum(line.split()[:1] == ["name"] for line in table_lines(shown)) == 1  # one table, as at 200 columns


def test_error_on_a_terminal_is_coloured_and_wrapped_between_words():
    program = "y = 2 + undefined_name_that_is_long"
    code, shown = on_a_terminal(["eval", program], 40)
    assert code == 2
    assert shown.startswith(ESC + "1;31merror:" + ESC + "0m")
    plain = shown.replace(ESC + "1;31m", "").replace(ESC + "0m", "").replace(ESC + "1;36m", "")
    message = [line for line in plain.splitlines() if not line.startswith(("   |", "  -->"))]
    assert all(len(line) <= 40 for line in message), message
    words = " ".join(message).split()
    assert "'undefined_name_that_is_long'" in words  # no word cut in two
    # in a pipe, the same message stays on one line and without colour
    p = gradcli("eval", program)
    assert p.stderr.startswith("error: name 'undefined_name_that_is_long' is not defined") and ESC not in p.stderr


def test_a_grad_of_none_is_not_green():
    p = gradcli("eval", "y = x * 2\ns = y.sum()", "-g", "x=ones(2)", FORCE_COLOR="1", COLUMNS="200")
    row_y = next(line for line in p.stdout.splitlines() if line.lstrip(" ").startswith(ESC + "1my"))
    assert row_y.endswith(ESC + "2mNone" + ESC + "0m")  # dim
    row_x = next(line for line in p.stdout.splitlines() if line.lstrip(" ").startswith(ESC + "1mx"))
    assert ESC + "32mtensor([2., 2.])" in row_x  # green


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_a_deep_graph_tree_fits_the_width(columns):
    rnn = "h = ones(2, requires_grad=True)\nw = ones(2, requires_grad=True)\n" + "h = tanh(h * w + 1)\n" * 40
    p = gradcli("graph", rnn, COLUMNS=str(columns))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns
    drawn = [m.group(1) for line in lines for m in [re.search(r"#(\d+) (?!\S+ \(continued below\))", line)] if m]
    assert sorted(map(int, drawn)) == list(range(len(drawn)))  # every node once
    assert len(drawn) == 40 * 3 + 2  # tanh, add, mul per step; the two leaves
    if columns == 60:
        assert any(line.endswith("(continued below)") for line in lines)
        assert any(re.fullmatch(r"#\d+ \S+.*  \[depth \d+\]", line) for line in lines)


# Start-up: which columns fit is decided on one-row tables of each column's widest cell; that must
# measure exactly as the whole table does (rich's own measurement, wide characters included).
_CELL = st.text(alphabet=st.sampled_from("ab .-[]()01漢字é\u0301"), max_size=30)


@given(st.lists(st.fixed_dictionaries({col: _CELL for col, _ in tables._COLUMNS}), min_size=1, max_size=6),
       st.lists(st.sampled_from(tables._PRIORITY), min_size=1, max_size=8, unique=True))
@settings(max_examples=60, deadline=None)
def test_the_widest_cells_measure_as_the_whole_table(data, columns):
    from rich.console import Console
    console = Console(width=80, file=io.StringIO())
    measure = tables._measuring_table(console, data)
    assert tables.natural_width(console, measure(columns)) == \
        tables.natural_width(console, tables.variables_table(data, columns))
