"""Typed errors: every failure a user can cause maps to one exit code (SPEC §1).

The engine raises these with PyTorch's wording; the CLI adds the source position
and maps ``exit_code`` to the process status and ``kind`` to the JSON error object.
Each also derives from the Python builtin torch raises in the same situation (a
shape mismatch and an autograd error are ``RuntimeError``s, a dim or index out of
range an ``IndexError``), so ``except RuntimeError`` written for torch catches them.
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


class RuntimeTypeError(GradTypeError, RuntimeError):
    """A wrong type or dtype where torch raises RuntimeError (``requires_grad`` on an integer
    tensor, a ``.grad`` of another dtype, ``item()`` of many elements); still a ``TypeError``."""


class KernelTypeError(GradTypeError, NotImplementedError):
    """A dtype torch has no kernel for (``floor`` of a bool tensor: "floor_vml_cpu" not implemented
    for 'Bool'): torch's NotImplementedError; still a ``TypeError``."""


class TypeIndexError(GradTypeError, IndexError):
    """A wrong argument where torch raises IndexError: a dim out of range, a float tensor as an index."""


class GradKeyError(GradTypeError, KeyError):
    """A dict has no such key (``d["b"]``): Python's KeyError, a bad program (exit 2)."""

    __str__ = GradcliError.__str__  # KeyError's own would quote the message


class ArgumentValueError(GradTypeError, ValueError):
    """A wrong argument where torch raises ValueError (``materialize_grads`` with ``allow_unused=False``)."""


class ShapeError(GradcliError, RuntimeError, ValueError):
    """Shapes that do not fit: torch raises RuntimeError (broadcasting, matmul, view); gradcli's
    earlier ``ValueError`` stays a base for code written against it."""

    kind, exit_code = "shape", 2


class GradIndexError(ShapeError, IndexError):
    """A dim or an index out of range, indexing a 0-d tensor: torch's IndexError."""


class DimensionError(GradIndexError):
    """A dim argument out of range ("Dimension out of range"): an IndexError, kind "shape", as in torch."""


# exit 3: evaluation ----------------------------------------------------------
class AutogradError(GradcliError, RuntimeError):
    kind, exit_code = "autograd", 3


class DeviceError(GradcliError, RuntimeError):
    kind, exit_code = "device", 3


class LimitError(GradcliError, RuntimeError):
    kind, exit_code = "limit", 3
