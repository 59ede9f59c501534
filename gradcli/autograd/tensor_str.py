"""Tensor values printed exactly as PyTorch's ``repr`` prints them.

A short re-telling of ``torch/_tensor_str.py`` for host NumPy arrays:

* ``_summarize`` keeps the ``edgeitems`` first and last entries of every axis
  longer than ``2 * edgeitems`` (torch's ``get_summarized_data``);
* ``_format_elements`` is torch's ``_Formatter``: it picks integer, fixed or
  scientific notation and the common column width, and turns every kept
  element into a right-aligned string;
* ``_nested`` is ``_tensor_str_with_formatter`` / ``_vector_str``: brackets,
  ``...`` markers, line wrapping and the blank lines between 3-d+ slices;
* ``_add_suffixes`` appends ``device=``, ``size=``, ``dtype=``, ``grad_fn=`` /
  ``requires_grad=`` with torch's own line-breaking rule.

The only difference from torch is that a ``grad_fn`` is shown as
``<MeanBackward0>``, without the object's address.

Everything is plain Python over ``ndarray.tolist()``: for the small tensors a
CLI prints this is faster than vectorised NumPy, and the values are exactly the
Python floats torch formats (``Tensor.tolist()`` and ``Tensor.item()`` also go
through C doubles).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["format_tensor", "format_node", "format_next_functions"]

_NUMPY_DTYPES = {
    "float16": np.dtype(np.float16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "bool": np.dtype(np.bool_),
}
_PREFIX = "tensor("
_INDENT = len(_PREFIX)
_isfinite = math.isfinite


# -- public API ------------------------------------------------------------------

def format_tensor(
    array,
    *,
    dtype: str,
    precision: int = 4,
    requires_grad: bool = False,
    grad_fn: str | None = None,
    device: str = "cpu",
    default_float: str = "float32",
    linewidth: int = 80,
    threshold: float = 1000,
    edgeitems: int = 3,
    sci_mode: bool | None = None,
) -> str:
    """``repr`` of the torch tensor holding ``array``, under the given print options.

    ``dtype`` is the gradcli dtype name; ``grad_fn`` the node's class name (a
    non-leaf), ``requires_grad`` marks a leaf that requires grad.
    """
    np_dtype = _NUMPY_DTYPES.get(dtype)
    if np_dtype is None:
        raise ValueError(f"format_tensor: unknown dtype {dtype!r}")
    array = np.asarray(array, dtype=np_dtype)
    shape = array.shape
    suffixes = []
    if device != "cpu":
        suffixes.append(f"device='{_device_name(device)}'")

    if array.size == 0:
        body = "[]"
        if array.ndim != 1:
            suffixes.append(f"size={shape}")
        if dtype != default_float:           # even int64 and bool: nothing to infer it from
            suffixes.append(f"dtype=torch.{dtype}")
    else:
        if not edgeitems:
            suffixes.append(f"size={shape}")
        if dtype not in (default_float, "int64", "bool"):
            suffixes.append(f"dtype=torch.{dtype}")
        body = _tensor_body(array, dtype, precision, linewidth, threshold, edgeitems, sci_mode)

    if grad_fn is not None:
        suffixes.append(f"grad_fn={format_node(grad_fn)}")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(_PREFIX + body, suffixes, linewidth)


def format_node(name: str | None) -> str:
    """A ``grad_fn`` as torch shows it, minus the address: ``<MeanBackward0>`` or ``None``."""
    return "None" if name is None else f"<{name}>"


def format_next_functions(entries: Iterable[tuple[str | None, int]]) -> str:
    """``repr(grad_fn.next_functions)`` without addresses: ``((<AddBackward0>, 0), (None, 0))``."""
    items = [f"({format_node(name)}, {index})" for name, index in entries]
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


# -- the tensor's body -------------------------------------------------------------

def _tensor_body(array, dtype, precision, linewidth, threshold, edgeitems, sci_mode) -> str:
    """Everything between ``tensor(`` and the suffixes, for a non-empty tensor."""
    summarize = array.size > threshold
    if summarize and not edgeitems and array.ndim:
        return "[...]"
    elided = tuple(summarize and n > 2 * edgeitems for n in array.shape)
    kept = _summarize(array, elided, edgeitems) if summarize else array
    strings, width = _format_elements(kept.ravel().tolist(), dtype.startswith("float"),
                                      precision, sci_mode)
    if array.ndim == 0:
        return strings[0]
    return _nested(strings, 0, kept.shape, elided, edgeitems, width + 2, _INDENT, linewidth)


def _summarize(array: np.ndarray, elided: Sequence[bool], edgeitems: int) -> np.ndarray:
    """Keep the first and last ``edgeitems`` entries of every elided axis."""
    for axis, cut in enumerate(elided):
        if cut:
            n = array.shape[axis]
            keep = list(range(edgeitems)) + list(range(n - edgeitems, n))
            array = array.take(keep, axis=axis)
    return array


def _format_elements(values: list, floating: bool, precision: int,
                     sci_mode: bool | None) -> tuple[list[str], int]:
    """torch's ``_Formatter``: every value as a string padded to the common width.

    For floats the mode (integer / fixed / scientific) and the width come from
    the non-zero finite values only, so ``-0.0000`` or ``inf`` may stick out.
    """
    if not floating:                          # ints and bools: str() and the widest
        strings = [str(v) for v in values]
        width = max(1, max(map(len, strings)))
        return [s.rjust(width) for s in strings], width

    regular = [v for v in values if v != 0 and _isfinite(v)]
    if not regular:                           # only zeros, nan and inf: "0.", "-0.", "nan"
        int_mode, sci = True, False
    else:
        magnitudes = [abs(v) for v in regular]
        largest, smallest = max(magnitudes), min(magnitudes)
        int_mode = all(v.is_integer() for v in regular)
        if sci_mode is None:
            sci = largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
        else:
            sci = sci_mode

    if sci:
        spec = f".{precision}e"
        strings = [format(v, spec) for v in values]
        width = max([len(format(v, spec)) for v in regular], default=1)
    elif int_mode:                            # a trailing "." says "float", except nan/inf
        strings = [format(v, ".0f") + "." if _isfinite(v) else format(v, ".0f")
                   for v in values]
        width = max([len(format(v, ".0f")) + 1 for v in regular], default=1)
    else:
        spec = f".{precision}f"
        strings = [format(v, spec) for v in values]
        width = max([len(format(v, spec)) for v in regular], default=1)
    return [s.rjust(width) for s in strings], width


def _nested(strings: list[str], start: int, shape: tuple[int, ...], elided: Sequence[bool],
            edgeitems: int, element_length: int, indent: int, linewidth: int) -> str:
    """Bracketed text of the (summarized) block of ``shape`` starting at ``strings[start]``.

    Recurses once per dimension (``ndim`` is small).
    """
    n = shape[0]
    if len(shape) == 1:
        items = strings[start:start + n]
        if elided[0]:
            items[edgeitems:edgeitems] = [" ..."]
        per_line = max(1, (linewidth - indent) // element_length)
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"

    step = math.prod(shape[1:])
    slices = [_nested(strings, start + i * step, shape[1:], elided[1:], edgeitems,
                      element_length, indent + 1, linewidth) for i in range(n)]
    if elided[0]:
        slices[edgeitems:edgeitems] = ["..."]
    separator = "," + "\n" * (len(shape) - 1) + " " * (indent + 1)
    return "[" + separator.join(slices) + "]"


# -- suffixes --------------------------------------------------------------------

def _add_suffixes(text: str, suffixes: list[str], linewidth: int) -> str:
    """Append ``, suffix`` items, wrapping onto a new line as torch does."""
    parts = [text]
    # torch's arithmetic, quirks included (one more than the last line's length)
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > linewidth:
            parts.append(",\n" + " " * _INDENT + suffix)
            last_line_len = _INDENT + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _device_name(device: str) -> str:
    """torch prints a CUDA device with its index: ``cuda`` is ``cuda:0``."""
    return "cuda:0" if device == "cuda" else device
