"""Typed errors: every failure a user can cause maps to one exit code (SPEC §1).

The engine raises these with PyTorch's wording; the CLI adds the source position
and maps ``exit_code`` to the process status and ``kind`` to the JSON error object.
Each also derives from the Python builtin a library user would catch (a shape
error is a ``ValueError``, an autograd error a ``RuntimeError``), so
``import gradcli`` behaves like ``import torch`` in a notebook.
"""

from __future__ import annotations


class GradcliError(Exception):
    """Base class. ``kind`` goes into JSON; ``exit_code`` is the process status."""

    kind = "error"
    exit_code = 2

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None,
                 hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.hint = hint

    def at(self, line: int | None, column: int | None) -> "GradcliError":
        """Attach a source position unless a more precise one is already set."""
        if self.line is None:
            self.line, self.column = line, column
        return self

    def __str__(self) -> str:
        return self.message


# exit 1 ---------------------------------------------------------------------
class CheckFailed(GradcliError):
    kind, exit_code = "check", 1


# exit 2: bad input ------------------------------------------------------------
class UsageError(GradcliError):
    kind, exit_code = "usage", 2


class GradSyntaxError(GradcliError):
    kind, exit_code = "syntax", 2


class GradNameError(GradcliError, NameError):
    kind, exit_code = "name", 2


class GradTypeError(GradcliError, TypeError):
    kind, exit_code = "type", 2


class ShapeError(GradcliError, ValueError):
    kind, exit_code = "shape", 2


class DimensionError(ShapeError, IndexError):
    """A dim argument out of range ("Dimension out of range"): an IndexError, as in torch."""


# exit 3: evaluation ----------------------------------------------------------
class AutogradError(GradcliError, RuntimeError):
    kind, exit_code = "autograd", 3


class DeviceError(GradcliError, RuntimeError):
    kind, exit_code = "device", 3


class LimitError(GradcliError, RuntimeError):
    kind, exit_code = "limit", 3
