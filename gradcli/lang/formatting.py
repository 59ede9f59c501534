"""Formatting text as Python does, without letting a format reach Python: f-string fields,
``str.format`` and ``%``.

Python's own ``str.format`` follows ``{0.attr}`` and ``{0[key]}`` inside the format string and
would hand a program any attribute; here a field is only a position or a keyword, and a value is
formatted by :func:`format_value`: numbers and strings by Python's format specs (widths and
precisions bounded), a one-element 0-d tensor as torch does (``f"{loss:.4f}"`` formats
``loss.item()``), anything else by its display text.
"""

from __future__ import annotations

import re
import string

from ..autograd.tensor import Tensor
from ..errors import GradNameError, GradTypeError, LimitError
from .values import display, repr_text, type_name

MAX_WIDTH = 10_000  # the widest field or longest precision a spec may ask for
_NUMBERS_IN_SPEC = re.compile(r"\d+")


def _check_spec(spec: str) -> None:
    if len(spec) > 50 or any(int(n) > MAX_WIDTH for n in _NUMBERS_IN_SPEC.findall(spec)):
        raise LimitError(f"format spec {spec[:50]!r} asks for more than {MAX_WIDTH:,} characters")


def format_value(value, spec: str = "", conversion: str = "") -> str:
    """``format(value, spec)`` after ``!r``/``!s``, for the language's values."""
    if conversion == "r":
        value = repr_text(value)
    elif conversion == "s":
        value = display(value)
    if spec:
        _check_spec(spec)
    if isinstance(value, Tensor):
        if value.ndim == 0 and spec:  # torch: a 0-d tensor formats as its item
            value = value.item()
        elif spec:
            raise GradTypeError("unsupported format string passed to Tensor.__format__")
        else:
            return display(value)
    if isinstance(value, (int, float, str)):  # bool is an int
        try:
            return format(value, spec)
        except ValueError as exc:
            raise GradTypeError(str(exc)) from None
    if spec:
        raise GradTypeError(f"unsupported format string passed to {type_name(value)}.__format__")
    return display(value)


def str_format(template: str, *args, **kwargs) -> str:
    """``template.format(*args, **kwargs)`` with fields that are positions or names only."""
    if not isinstance(template, str):
        raise GradTypeError("format needs a string")
    out = []
    auto = 0
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise GradTypeError(str(exc)) from None
    for literal, field, spec, conversion in parsed:
        out.append(literal)
        if field is None:
            continue
        if spec and "{" in spec:
            raise GradTypeError("nested fields in a format spec are not supported")
        if field == "":
            key, auto = auto, auto + 1
        elif field.isdigit():
            key = int(field)
        elif field.isidentifier():
            key = field
        else:
            raise GradNameError(f"format field {{{field}}}: only positions and names are allowed "
                                "(no attributes or indexes)")
        if isinstance(key, int):
            if key >= len(args):
                raise GradTypeError(f"Replacement index {key} out of range for positional args tuple")
            value = args[key]
        else:
            if key not in kwargs:
                raise GradNameError(f"format: no keyword argument '{key}'")
            value = kwargs[key]
        out.append(format_value(value, spec or "", conversion or ""))
    return "".join(out)


class _Arg:
    """A tensor given to ``%``: ``%f``/``%d`` read its one value, ``%s``/``%r`` its display."""
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t

    def __float__(self):
        return float(self.t)

    def __int__(self):
        return int(self.t)

    def __index__(self):
        return int(self.t)

    def __str__(self):
        return display(self.t)

    __repr__ = __str__


_PERCENT_SPEC = re.compile(r"%[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?[a-zA-Z%]")


def percent_format(template: str, values) -> str:
    """``template % values`` (a tuple or one value; tensors through :class:`_Arg`)."""
    for match in _PERCENT_SPEC.finditer(template):
        if "*" in match.group(0):
            raise GradTypeError("'*' widths are not supported in % formatting")
        _check_spec(match.group(0))
    items = values if isinstance(values, tuple) else (values,)
    safe = []
    for v in items:
        if isinstance(v, Tensor):
            safe.append(_Arg(v))
        elif v is None or isinstance(v, (int, float, str)):
            safe.append(v)
        else:
            safe.append(display(v))
    try:
        return template % tuple(safe)
    except (TypeError, ValueError) as exc:
        raise GradTypeError(str(exc)) from None
