"""gradcli's tables without rich: the exact bytes rich writes for them, in the common case.

Importing ``rich.console`` and ``rich.table`` and laying a table out costs ~20 ms of a ~90 ms
``gradcli eval`` (issue 16: start-up within 1.5x ``python -c "import numpy"``). The tables gradcli
prints are simple: rich's SIMPLE_HEAVY box, ``pad_edge=False``, a few plain styles, and no cell
folded (each table fits the width, or is printed at its natural width). For cells of printable
ASCII and newlines, rich's layout is then arithmetic: a column is as wide as its widest line plus
its padding, and every cell line is padded to that width. :func:`render` writes what rich writes
for such a table, byte for byte: tests/test_plain_table.py compares the two on thousands of
tables, on a terminal or not, in colour, under ``NO_COLOR`` and without colour.

Anything outside that case returns None, and the caller draws the table with rich as before:
wide or combining characters, tabs, a table that must wrap, a dumb terminal (rich's console
treats it apart: its size, its colours), a stream that is not UTF-8 (rich draws an ASCII box), Windows, Jupyter, IDLE,
``TTY_COMPATIBLE``.
"""

from __future__ import annotations

import os
import sys

PLAIN, COLOUR, ATTRIBUTES = "plain", "colour", "attributes"

# rich's SGR parameters (Style._make_ansi_codes): attributes in bit order, then the colour
_ATTRIBUTES = {"bold": "1", "dim": "2", "italic": "3"}
_COLOURS = {"black": "30", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35",
            "cyan": "36", "white": "37"}
_ORDER = ("1", "2", "3")

# rich's theme: a table's header is bold (table.header), its title italic (table.title)
HEADER_STYLE, TITLE_STYLE = "bold", "italic"


def output_mode(file, force: bool, styled: bool) -> str | None:
    """How rich would write to ``file`` with the console :func:`gradcli.present.tables._console`
    makes (``force``: FORCE_COLOR set; ``styled``: a terminal or forced): :data:`PLAIN` (no escape
    codes: rich's colour system is None), :data:`COLOUR`, :data:`ATTRIBUTES` (``NO_COLOR``: bold,
    dim and italic kept, colours dropped), or None where rich would draw differently from
    :func:`render` (see the module's docstring) or this cannot tell."""
    if sys.platform == "win32" or hasattr(sys.modules.get("builtins"), "get_ipython"):
        return None  # legacy Windows consoles, Jupyter: rich's own rendering
    if hasattr(file, "rich_proxied_file"):
        return None
    encoding = (getattr(file, "encoding", "utf-8") or "utf-8").lower()
    if not encoding.startswith("utf"):
        return None  # rich swaps the box for ASCII
    terminal = _rich_is_terminal(file, force)
    if terminal is None:
        return None
    if terminal and os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return None  # rich's console treats it apart (without a height it would even be 80 columns)
    if not (styled and terminal):
        return PLAIN  # color_system None (or "auto" detected as None: not a terminal)
    return ATTRIBUTES if os.environ.get("NO_COLOR") else COLOUR


def _rich_is_terminal(file, force: bool) -> bool | None:
    """rich's ``Console.is_terminal`` for a console with ``force_terminal=True if force else
    None``; None where rich would look at something this does not follow."""
    if force:
        return True
    stdin = sys.stdin
    if hasattr(stdin, "__module__") and str(stdin.__module__).startswith("idlelib"):
        return None
    if os.environ.get("TTY_COMPATIBLE", "") in ("0", "1"):
        return None
    force_color = os.environ.get("FORCE_COLOR")
    if force_color is not None:
        return force_color != ""
    isatty = getattr(file, "isatty", None)
    try:
        return False if isatty is None else bool(isatty())
    except ValueError:
        return False


def plain_text(text: str) -> bool:
    """Whether rich measures ``text`` as one cell a character and splits it only at newlines:
    printable ASCII and newlines (no tab, no control character, nothing wide or combining)."""
    return text.isascii() and (text.isprintable() or text.replace("\n", "").isprintable())


def column_width(header: str, texts) -> int:
    """The width of a column's content: its widest line, header included."""
    return max([len(header), *(len(line) for text in texts for line in text.split("\n"))])


def table_width(widths) -> int:
    """The natural width of a table whose columns' contents are ``widths`` wide: each column
    padded by one space on each inner side (``pad_edge=False``), one divider between columns and
    an edge on each side."""
    n = len(widths)
    return sum(widths) + 2 * (n - 1) + (n - 1) + 2


def render(columns, rows, mode: str, width: int | None = None, title: str | None = None) -> str | None:
    """The text rich's ``console.print(table)`` writes for a SIMPLE_HEAVY, ``pad_edge=False``
    table (trailing spaces included: the caller strips them as it does rich's).

    ``columns``: (header, style) pairs; ``rows``: lists of (text, style) pairs, one a column
    (style: a rich style string of :data:`_ATTRIBUTES` and :data:`_COLOURS` words, or ""); a cell
    is drawn in its column's style plus its own, its padding in its column's. ``width``: the
    console's width; a table wider than that, which rich would fold or crop, gives None, as does
    a cell or title rich would measure otherwise (:func:`plain_text`). None ``width``: the
    table at its natural width, however wide (``fit_print``)."""
    texts = [header for header, _ in columns] + [text for row in rows for text, _ in row]
    if title is not None:
        texts.append(title)
    if not all(plain_text(t) for t in texts) or (title is not None and "\n" in title):
        return None
    widths = [column_width(header, [row[i][0] for row in rows]) for i, (header, _) in enumerate(columns)]
    total = table_width(widths)
    if (width is not None and total > width) or (title is not None and len(title) > total):
        return None
    n = len(columns)
    pads = [(0 if i == 0 else 1, 0 if i == n - 1 else 1) for i in range(n)]
    out = []
    if title is not None:
        out.append(_styled(title.ljust(total), TITLE_STYLE, mode) + "\n")
    out.append(" " * total + "\n")  # the top edge: blank in SIMPLE_HEAVY
    header = [(text, "") for text, _ in columns]
    out.append(_row(header, [HEADER_STYLE] * n, widths, pads, mode, bottom=True))
    out.append(" " + "\u2501" * (total - 2) + " \n")  # the heavy rule under the header
    column_styles = [style for _, style in columns]
    for row in rows:
        out.append(_row(row, column_styles, widths, pads, mode))
    out.append(" " * total + "\n")  # the bottom edge
    return "".join(out)


def _row(cells, column_styles, widths, pads, mode, bottom=False) -> str:
    """The lines of one row: each cell line padded to its column, shorter cells filled with
    blank lines in their column's style (below the text; above it for the header row)."""
    split = [text.split("\n") for text, _ in cells]
    height = max(len(lines) for lines in split)
    lines = [[] for _ in range(height)]
    for (text, style), cell_lines, column_style, width, (left, right) in zip(cells, split, column_styles,
                                                                            widths, pads):
        text_style = _combine(column_style, style)
        blank = _styled(" " * (left + width + right), column_style, mode)
        drawn = [_styled(" " * left, column_style, mode) + _styled(line.ljust(width), text_style, mode)
                 + _styled(" " * right, column_style, mode) for line in cell_lines]
        fill = [blank] * (height - len(drawn))
        for k, part in enumerate(fill + drawn if bottom else drawn + fill):
            lines[k].append(part)
    return "".join(" " + " ".join(parts) + " \n" for parts in lines)


def _combine(base: str, over: str) -> str:
    """rich's ``Style + Style`` for these styles: attributes add up, the later colour wins."""
    if not base or not over:
        return base or over
    words = base.split() + over.split()
    colour = [w for w in words if w in _COLOURS][-1:]
    return " ".join([w for w in words if w in _ATTRIBUTES] + colour)


def _sgr(style: str, mode: str) -> str:
    """The SGR parameters rich writes for ``style`` in ``mode`` ("" for none)."""
    if mode == PLAIN or not style:
        return ""
    words = style.split()
    for w in words:
        if w not in _ATTRIBUTES and w not in _COLOURS:
            raise ValueError(f"style {style!r}: only {sorted(_ATTRIBUTES)} and the standard colours")
    codes = sorted({_ATTRIBUTES[w] for w in words if w in _ATTRIBUTES}, key=_ORDER.index)
    colours = [_COLOURS[w] for w in words if w in _COLOURS]
    if colours and mode == COLOUR:
        codes.append(colours[-1])
    return ";".join(codes)


def _styled(text: str, style: str, mode: str) -> str:
    """One segment as rich's console writes it: nothing for empty text, the text alone without
    codes, else the codes, the text and a reset."""
    if not text:
        return ""
    codes = _sgr(style, mode)
    return f"\x1b[{codes}m{text}\x1b[0m" if codes else text
