"""Resource limits (SPEC §5): refuse a tensor over ``max_elements`` before allocating it."""

from __future__ import annotations

from .errors import LimitError

DEFAULT_MAX_ELEMENTS = 2 ** 28         # 1 GiB of float32
DEFAULT_MAX_PROGRAM_BYTES = 10 * 2 ** 20  # 10 MiB of program text
DEFAULT_MAX_STATEMENTS = 1_000_000
DEFAULT_MAX_STEPS = 10_000_000         # statements executed, loop iterations included
DEFAULT_MAX_DEPTH = 1_000              # nested calls of the program's own functions


class _Limits:
    __slots__ = ("max_elements", "max_program_bytes", "max_statements", "max_steps", "max_depth")

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.max_elements = DEFAULT_MAX_ELEMENTS
        self.max_program_bytes = DEFAULT_MAX_PROGRAM_BYTES
        self.max_statements = DEFAULT_MAX_STATEMENTS
        self.max_steps = DEFAULT_MAX_STEPS
        self.max_depth = DEFAULT_MAX_DEPTH


LIMITS = _Limits()


class _Deadline:
    """``--timeout``'s state, shared by the alarm (``commands._Timeout``) and the session. After it
    first fires the alarm repeats (an exception raised while Python runs a finalizer or a gc
    callback is printed and dropped, so one alone could be lost); once the program has stopped
    with its error recorded, ``settled`` turns the later ticks into no-ops, so that the output
    (variables, the error's line) is still rendered in full."""

    __slots__ = ("expired", "settled")

    def __init__(self):
        self.expired = self.settled = False


DEADLINE = _Deadline()


def check_numel(shape) -> None:
    """Raise LimitError if a tensor of ``shape`` would exceed the element limit."""
    n = rows = 1
    for s in shape:
        s = int(s)
        n *= s
        rows *= s or 1
    if n > LIMITS.max_elements:
        raise LimitError(
            f"a tensor of shape {_shape_text(shape)} has {_count_text(n)} elements, over the limit of "
            f"{LIMITS.max_elements:,}",
            hint="raise it with --max-elements N if this machine has the memory")
    if rows > LIMITS.max_elements:  # empty, yet printing it or listing it in JSON would never end
        raise LimitError(
            f"a tensor of shape {_shape_text(shape)} has no elements, but its other dimensions multiply to "
            f"{_count_text(rows)}, over the limit of {LIMITS.max_elements:,}",
            hint="raise it with --max-elements N")


def _count_text(n: int) -> str:
    return f"{n:,}" if n < 10 ** 30 else f"about 10**{len(str(n)) - 1}"


def _shape_text(shape) -> str:
    dims = [str(int(s)) if int(s) < 10 ** 30 else f"<{len(str(int(s)))}-digit number>" for s in shape]
    if len(dims) > 12:
        dims = dims[:6] + ["..."] + dims[-5:]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


# Python ints are exact and unbounded: the language caps them at Python's own limit for printing one
# (4,300 digits), so that a few squarings of a huge number cannot run for hours inside one C call
# (which --timeout cannot interrupt).
MAX_INT_DIGITS = 4300
_MAX_INT = 10 ** MAX_INT_DIGITS


def check_int(value, what: str = "an integer result"):
    """``value`` if it is a float or a Python int under the cap, else LimitError."""
    if value.__class__ is int and not -_MAX_INT < value < _MAX_INT:
        raise LimitError(f"{what} has more than {MAX_INT_DIGITS:,} digits",
                         hint="integers are exact in the language: use floats (2.0 ** 1000 rather than 2 ** 1000) "
                              "for approximate values")
    return value


def check_statements(count: int) -> None:
    """A program over the statement limit is bad input (exit 2, SPEC §5), like one over the size limit."""
    if count > LIMITS.max_statements:
        from .errors import UsageError
        raise UsageError(f"the program has {count:,} statements, over the limit of {LIMITS.max_statements:,}",
                         hint="raise it with --max-statements N")
