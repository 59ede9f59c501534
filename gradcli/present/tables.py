"""Rendering a run: the variables table, the JSON document, and error messages.

The tables are rich's: :mod:`gradcli.present.plain_table` writes rich's exact bytes for the common
ones without importing rich (~20 ms of a start), and rich itself draws the rest (wide characters,
a message that wraps, a dumb terminal...). JSON and errors need nothing but the standard library,
so scripted use stays fast.
"""

from __future__ import annotations

import math
import os
import sys

from .._version import __version__
from ..errors import GradcliError


# -- values --------------------------------------------------------------------------------

def node_name(node) -> str | None:
    return None if node is None else node.name_for_repr()


def next_functions_text(t) -> str:
    if t.grad_fn is None:
        return "None"
    return repr(t.grad_fn.next_functions)


def _unreadable(t) -> bool:
    """A view whose grad_fn torch refuses to read (its base changed in place since unbind/split or
    no_grad made it): shown as torch's repr shows it, ``grad_fn=<Invalid>``, and not a leaf."""
    if t.grad_fn is not None or t._view is None:
        return False
    from ..autograd.views import grad_fn_unreadable
    return grad_fn_unreadable(t)


def tensor_text(t) -> str:
    """The repr of a tensor's values, without autograd suffixes (the ``data`` column)."""
    return repr(t.detach())


def _json_number(x):
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


def json_values(t):
    """Nested lists of full-precision numbers; NaN and infinities as strings."""
    if t is None:
        return None
    host = t._backend.to_host(t._data)
    if host.dtype.kind == "f" and not bool(__import__("numpy").isfinite(host).all()):
        return _map_nested(host.tolist(), _json_number)
    return host.tolist()


def _map_nested(value, fn):
    if not isinstance(value, list):
        return fn(value)
    out = []
    stack = [(value, out)]
    while stack:
        src, dst = stack.pop()
        for item in src:
            if isinstance(item, list):
                child = []
                dst.append(child)
                stack.append((item, child))
            else:
                dst.append(fn(item))
    return out


def variable_record(name: str, t, values: bool = True) -> dict:
    return {
        "name": name,
        "shape": list(t.shape),
        "dtype": t.dtype.name,
        "device": str(t.device),
        "requires_grad": t.requires_grad,
        "is_leaf": t.grad_fn is None and not _unreadable(t),
        "grad_fn": "Invalid" if _unreadable(t) else node_name(t.grad_fn),
        "next_functions": None if t.grad_fn is None else
        [[node_name(n), i] for n, i in t.grad_fn.next_functions],
        "data": json_values(t) if values else None,
        "grad": json_values(t._grad) if values else None,
    }


def rows(result):
    """The table's rows: named tensors in order of first binding, then the unnamed last value as ``_``."""
    from ..autograd.tensor import Tensor
    out = list(result.tensors)
    last = result.last_value
    if isinstance(last, Tensor) and all(v is not last for _, v in out):
        out.append(("_", last))
    return out


# -- JSON ----------------------------------------------------------------------------------

def json_document(result=None, *, device="cpu", dtype="float32", error: GradcliError | None = None,
                  extra: dict | None = None) -> str:
    values = True
    if result is not None:
        try:
            _check_json_size(result)
        except GradcliError as err:  # the variables without their values, and the run's own error first
            values = False
            result.note = "; ".join(filter(None, [result.note, f"data and grad left out: {err.message}"]))
            if error is None:
                error = result.error = err
    doc = {
        "version": __version__,
        "device": device,
        "dtype": dtype,
        "variables": [] if result is None else [variable_record(n, t, values) for n, t in rows(result)],
        "printed": [] if result is None else list(result.printed),
        "checks": [] if result is None else
        [{"line": c.line, "passed": c.passed, "message": c.message} for c in result.checks],
        "backward": "none" if result is None else result.backward,
        "warnings": [{"line": line, "category": category, "message": message}
                     for line, category, message in getattr(result, "warnings", ())],
        "error": None if error is None else error_record(error),
    }
    if result is not None and result.note:
        doc["note"] = result.note
    if extra:
        doc.update(extra)
    return dump_document(doc)


def _check_json_size(result) -> None:
    """Refuse (``--max-output``) a document of gigabytes before building it: each number takes at
    least three characters ("1, ")."""
    from ..limits import check_output
    count = 0
    for _, t in rows(result):
        count += t.numel() + (t._grad.numel() if t._grad is not None else 0)
    check_output(3 * count, "the JSON document")


def dump_document(doc: dict) -> str:
    """Pretty JSON with one line per variable and per check, as SPEC §4 shows it."""
    import json  # only here: the table output does not pay for importing it
    def one(value):
        return json.dumps(value, allow_nan=False, default=str, separators=(", ", ": "))
    parts = []
    for key, value in doc.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            items = ",\n    ".join(one(v) for v in value)
            parts.append(f'  {one(key)}: [\n    {items}\n  ]')
        else:
            parts.append(f"  {one(key)}: {one(value)}")
    return "{\n" + ",\n".join(parts) + "\n}"


def error_record(err: GradcliError) -> dict:
    return {"kind": err.kind, "message": err.message, "line": err.line, "column": err.column}


# -- errors on stderr ------------------------------------------------------------------------

# Control characters a program can put in a string, a name or a source line: sent raw, ESC and OSC
# sequences clear a terminal, retitle it or write its clipboard (OSC 52), CR and BEL rewrite or
# ring it, and bidirectional overrides reorder what is shown ("Trojan source"). Tabs and newlines
# stay; JSON escapes everything itself.
_CONTROLS = None


def escape_controls(text: str) -> str:
    """``text`` with control characters as Python escapes (``\\x1b``, ``\\u202e``)."""
    global _CONTROLS
    if _CONTROLS is None:
        import re
        _CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
    if not _CONTROLS.search(text):
        return text
    return _CONTROLS.sub(lambda m: ascii(m.group())[1:-1], text)


def terminal_text(text: str, file=None) -> str:
    """A program's printed text: as it is, but escaped when it goes to a terminal."""
    file = file or sys.stdout
    try:
        tty = file.isatty()
    except (AttributeError, ValueError):
        tty = False
    return escape_controls(text) if tty else text


def error_text(err: GradcliError, source: str | None) -> str:
    return escape_controls(_error_text(err, source))


def _error_text(err: GradcliError, source: str | None) -> str:
    lines = [f"error: {err.message}"]
    if err.line is not None and source is not None:
        lines.append(f"  --> line {err.line}, column {err.column}")
        src_lines = source.split("\n")
        if 1 <= err.line <= len(src_lines):
            text = src_lines[err.line - 1]
            if len(text) > 200:
                start = max(0, (err.column or 1) - 100)
                text, offset = text[start:start + 200], start
            else:
                offset = 0
            lines.append(f"   | {text}")
            lines.append(f"   | {' ' * max(0, (err.column or 1) - 1 - offset)}^")
    if err.hint:
        hint = err.hint
        if "\n" not in hint or err.line is None:
            lines.append(f"hint: {hint}")
    return "\n".join(lines)


def print_error(err: GradcliError, source: str | None, file=None) -> None:
    """:func:`error_text` on stderr, through :func:`print_diagnostic`."""
    print_diagnostic(error_text(err, source), file)


def print_diagnostic(text: str, file=None) -> None:
    """An error or a warning on stderr, control characters escaped. On a terminal, ``error:`` and
    ``hint:`` in colour (unless ``NO_COLOR``; ``FORCE_COLOR`` colours a pipe too) and the message
    lines wrapped between words at the terminal's width; in a pipe or a log the text stays as is,
    one line per message."""
    file = file or sys.stderr
    text = escape_controls(text)
    tty = hasattr(file, "isatty") and file.isatty()
    if tty and os.environ.get("TERM") != "dumb":
        text = _wrap(text, width(file))
    if (tty or os.environ.get("FORCE_COLOR")) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb":
        text = "\n".join(_colour_label(line) for line in text.split("\n"))
    print(text, file=file)


def _wrap(text: str, columns: int) -> str:
    """Wrap the message lines between words; the indented ones (a source line, its caret) stay whole."""
    import textwrap
    out = []
    for line in text.split("\n"):
        if line and not line.startswith(" ") and len(line) > columns:
            out.extend(textwrap.wrap(line, columns, subsequent_indent="  ", break_long_words=False,
                                     break_on_hyphens=False))
        else:
            out.append(line)
    return "\n".join(out)


def _colour_label(line: str) -> str:
    for label, code in (("error:", "1;31"), ("hint:", "1;36")):
        if line.startswith(label):
            return f"\x1b[{code}m{label}\x1b[0m{line[len(label):]}"
    return line


# -- the table ------------------------------------------------------------------------------

def _console(file=None):
    """A rich console for ``file`` (stdout): colour and width as rich decides them on a terminal
    (``NO_COLOR``, ``FORCE_COLOR``, ``TERM=dumb`` honoured), and on a pipe :func:`width` columns
    without colour. A closed pipe raises BrokenPipeError (rich's own handler exits 1, the code of
    a failed check), which the entry point turns into a quiet exit 141."""
    from rich.console import Console
    file = file or sys.stdout
    force, styled = _colour_flags(file)
    # A height as well as the width: given a width alone, rich sizes a TERM=dumb terminal's console
    # at 80 columns whatever the width asked (Console.size), and crops cells with "..." there.
    # Nothing printed here reads the height.
    console = Console(file=file, width=width(file), height=25, highlight=False, soft_wrap=False,
                      force_terminal=True if force else None, color_system="auto" if styled else None,
                      no_color=bool(os.environ.get("NO_COLOR")))
    console.on_broken_pipe = _broken_pipe
    return console


def _colour_flags(file) -> tuple[bool, bool]:
    """(FORCE_COLOR is set, the output is styled: a terminal or forced) for ``file``."""
    is_tty = hasattr(file, "isatty") and file.isatty()
    force = bool(os.environ.get("FORCE_COLOR"))
    return force, is_tty or force


def _plain_mode(file):
    """How :mod:`gradcli.present.plain_table` draws for ``file`` what rich would with
    :func:`_console`'s console, or None where rich must draw."""
    from . import plain_table
    return plain_table.output_mode(file, *_colour_flags(file))


def show(console, *renderables, **kwargs) -> None:
    """Print through ``console`` with no trailing spaces on any line (rich pads every cell to
    its column's width; a pipe, a diff or a log should not carry that padding)."""
    with console.capture() as capture:
        console.print(*renderables, **kwargs)
    console.file.write(strip_trailing(capture.get()))


def strip_trailing(text: str) -> str:
    """``text`` with the spaces before each line's end removed, colour codes kept."""
    import re
    return re.sub(r"(?:[ ]|\x1b\[[0-9;]*m)+(?=\n|$)", lambda m: m.group().replace(" ", ""), text)


def _broken_pipe():
    raise BrokenPipeError(32, "Broken pipe")


def width(file=None) -> int:
    """Columns to fit: the terminal's width on a terminal, else ``COLUMNS`` or 80. ``COLUMNS``
    that is not a positive integer (``abc``, ``0``) is ignored, as rich and most tools do."""
    file = file or sys.stdout
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and 0 < int(env) <= 10_000:
        return int(env)
    if hasattr(file, "isatty") and file.isatty():
        try:
            return os.get_terminal_size(file.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            pass
    return 80


_COLUMNS = (("name", "bold"), ("shape", ""), ("dtype", ""), ("requires_grad", ""), ("is_leaf", ""),
            ("grad_fn", "cyan"), ("next_functions", "cyan"), ("data", ""), ("grad", ""))


def _cells(t, name: str) -> list[str]:
    invalid = _unreadable(t)
    return [name, str(list(t.shape)), t.dtype.name, str(t.requires_grad), str(t.grad_fn is None and not invalid),
            repr(t.grad_fn) if t.grad_fn is not None else "<Invalid>" if invalid else "None", next_functions_text(t),
            tensor_text(t), "None" if t._grad is None else tensor_text(t._grad)]


# rich lays a table out at about 2.5 ms a row: 10,000 variables took 25 s after the run, beyond the
# reach of --timeout. The table shows the first and last of them; --json lists every one.
MAX_TABLE_ROWS = 1000


def _table_rows(all_rows):
    """The rows the table shows, and how many it leaves out (the middle ones)."""
    if len(all_rows) <= MAX_TABLE_ROWS:
        return all_rows, 0
    half = MAX_TABLE_ROWS // 2
    return all_rows[:half] + all_rows[-half:], len(all_rows) - 2 * half


# Which columns go into the first table, in order, when not all fit: the values first.
_PRIORITY = ("data", "grad", "grad_fn", "shape", "dtype", "requires_grad", "is_leaf", "next_functions")


def print_table(result, file=None, title: str | None = None, wide: bool = False) -> None:
    """The variables, fitted to the width (:func:`width`): the name and as many columns as fit
    in a first table (values first: data, grad, grad_fn, shape...), the rest in a second table
    below (and a third if need be), each starting with the name. A cell is never folded: a
    column wider than the terminal on its own is printed whole. ``wide``: one table with every
    column, however wide (``--wide``).

    Drawn by :mod:`gradcli.present.plain_table` where that writes rich's bytes (most runs: rich
    is then never imported), else by rich."""
    file = file or sys.stdout
    names = [c for c, _ in _COLUMNS]
    shown, hidden = _table_rows(rows(result))
    data = [dict(zip(names, (escape_controls(c) for c in _cells(t, name)))) for name, t in shown]
    if hidden:
        filler = dict.fromkeys(names, "")
        filler["name"] = "..."
        filler["data"] = f"{hidden:,} more variables, not shown here (--json lists them all)"
        data.insert(MAX_TABLE_ROWS // 2, filler)
    if not data and not result.checks:
        return  # nothing to show: no empty table
    mode = _plain_mode(file)
    if data and not (mode and title is None and _print_plain_variables(file, mode, data, wide)):
        console = _console(file)
        for k, cols in enumerate(_rich_groups(console, data, wide)):
            fit_print(console, variables_table(data, cols, title if k == 0 else None))
    if result.checks and not (mode and _print_plain_checks(file, mode, result.checks)):
        _print_checks(_console(file), result.checks)


def _rich_groups(console, data: list[dict], wide: bool) -> list[list[str]]:
    """The columns of each variables table, measured by rich."""
    if wide:
        return [list(_PRIORITY)]
    make = _measuring_table(console, data)
    return _pack(console.width, lambda cols: natural_width(console, make(cols)))


def _print_plain_variables(file, mode, data: list[dict], wide: bool) -> bool:
    """The variables tables of :func:`print_table` through :mod:`plain_table`; False (nothing
    written) where it cannot draw them as rich would. The columns are packed arithmetically:
    for plain text a table's width is the sum of its columns' (:func:`plain_table.table_width`)."""
    from . import plain_table
    if not all(plain_table.plain_text(text) for r in data for text in r.values()):
        return False
    content = {col: plain_table.column_width(col, [r[col] for r in data]) for col, _ in _COLUMNS}

    def measure(cols):
        return plain_table.table_width([content["name"]] + [content[c] for c in cols])

    groups = [list(_PRIORITY)] if wide else _pack(width(file), measure)
    texts = []
    for cols in groups:
        shown = [(col, style) for col, style in _COLUMNS if col == "name" or col in cols]
        cells = [[(r[col], _grad_style(r[col]) if col == "grad" else "") for col, _ in shown] for r in data]
        texts.append(plain_table.render(shown, cells, mode))  # at its natural width, as fit_print
    if None in texts:
        return False
    for text in texts:
        file.write(strip_trailing(text))
    return True


def _check_cells(c) -> tuple:
    """A check's row: its line, pass or FAIL, its message; each (text, style)."""
    return ((str(c.line), ""), ("pass", "green") if c.passed else ("FAIL", "bold red"),
            (escape_controls(c.message or ""), ""))


def _print_plain_checks(file, mode, checks) -> bool:
    """The checks table through :mod:`plain_table` (False where it cannot draw it as rich would:
    a message that has to wrap, wide characters)."""
    from . import plain_table
    text = plain_table.render([("line", ""), ("result", ""), ("message", "")], [_check_cells(c) for c in checks],
                              mode, width(file), title="checks")
    if text is None:
        return False
    file.write(strip_trailing(text))
    return True


def _print_checks(console, checks) -> None:
    """The checks table, by rich."""
    from rich import box
    from rich.table import Table
    from rich.text import Text
    table = Table(box=box.SIMPLE_HEAVY, pad_edge=False, title="checks", title_justify="left")
    for col in ("line", "result", "message"):
        table.add_column(col, no_wrap=col != "message")
    for c in checks:
        (line, _), (result, style), (message, _) = _check_cells(c)
        table.add_row(line, Text(result, style=style), Text(message))
    show(console, table)


def _grad_style(text: str) -> str:
    """A gradient in green; a ``grad`` of None dim, not green like a real one."""
    return "dim" if text == "None" else "green"


def variables_table(data: list[dict], columns, title: str | None = None):
    """The rich table of the rows ``data`` (cell texts by column name): the name and ``columns``."""
    from rich import box
    from rich.table import Table
    from rich.text import Text
    out = Table(box=box.SIMPLE_HEAVY, title=title, pad_edge=False)
    for col, style in _COLUMNS:
        if col == "name" or col in columns:
            out.add_column(col, style=style or None, no_wrap=True)
    for r in data:
        out.add_row(*(Text(r[col], style=_grad_style(r[col]) if col == "grad" else "")
                      for col, _ in _COLUMNS if col == "name" or col in columns))
    return out


def _measuring_table(console, data: list[dict]):
    """``make(columns)`` for rich's :func:`_pack`: the table of those columns with one row, each cell the
    widest of its column. A table's natural width is the sum of its columns' widest cells (and
    rules and padding), so this one measures as the whole table would, while measuring every
    cell of every candidate table cost more than the rest of a small run (~10 ms for the seed
    example: eight columns tried, each try measuring all rows again). Each cell is measured once
    here, by rich, as in the table."""
    from rich.measure import Measurement
    from rich.text import Text
    options = console.options.update_width(1 << 20)
    widest = {}
    for col, _ in _COLUMNS:
        cells = [r[col] for r in data]
        widths = [Measurement.get(console, options, Text(c)).maximum for c in cells]
        widest[col] = cells[widths.index(max(widths))]
    return lambda cols: variables_table([widest], cols)


def _pack(columns: int, measure) -> list[list[str]]:
    """The columns of :data:`_PRIORITY` in as few tables as fit ``columns`` wide (``measure``:
    the width of the table of the name and the given columns): each column goes into the first
    table it fits in (first fit, values first)."""
    groups: list[list[str]] = []
    for col in _PRIORITY:
        for cols in groups:
            if measure(cols + [col]) <= columns:
                cols.append(col)
                break
        else:
            groups.append([col])
    return groups


def natural_width(console, renderable) -> int:
    from rich.measure import Measurement
    return Measurement.get(console, console.options.update_width(1 << 20), renderable).maximum


def fit_print(console, table) -> None:
    """Print ``table`` at its natural width where that is more than the console's: rich would
    otherwise crop cells (``pa…``); a terminal then wraps the long lines whole."""
    width = console.width
    need = natural_width(console, table)
    if need > width:
        console.width = need
    try:
        show(console, table)
    finally:
        console.width = width


def print_notes(result, file=None) -> None:
    file = file or sys.stdout
    if result.note:
        print(f"note: {escape_controls(result.note)}", file=file)
    print_failed_checks(result)


def print_failed_checks(result) -> None:
    """Failed asserts go to stderr in every output mode, so CI logs show them (one that stopped
    the program is the run's error, printed with its caret instead)."""
    err = result.error
    for c in result.checks:
        if not c.passed and not (err is not None and err.kind == "check" and err.line == c.line):
            msg = f": {escape_controls(c.message)}" if c.message else ""
            print(f"check failed at line {c.line}{msg}", file=sys.stderr)
