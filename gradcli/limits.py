"""Resource limits (SPEC §5): refuse a tensor over ``max_elements`` before allocating it."""

from __future__ import annotations

from .errors import LimitError

DEFAULT_MAX_ELEMENTS = 2 ** 28         # 1 GiB of float32
DEFAULT_MAX_PROGRAM_BYTES = 10 * 2 ** 20  # 10 MiB of program text
DEFAULT_MAX_STATEMENTS = 1_000_000


class _Limits:
    __slots__ = ("max_elements", "max_program_bytes", "max_statements")

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.max_elements = DEFAULT_MAX_ELEMENTS
        self.max_program_bytes = DEFAULT_MAX_PROGRAM_BYTES
        self.max_statements = DEFAULT_MAX_STATEMENTS


LIMITS = _Limits()


def check_numel(shape) -> None:
    """Raise LimitError if a tensor of ``shape`` would exceed the element limit."""
    n = 1
    for s in shape:
        n *= int(s)
    if n > LIMITS.max_elements:
        raise LimitError(
            f"a tensor of shape {tuple(int(s) for s in shape)} has {n:,} elements, over the limit of "
            f"{LIMITS.max_elements:,}",
            hint="raise it with --max-elements N if this machine has the memory")


def check_statements(count: int) -> None:
    """A program over the statement limit is bad input (exit 2, SPEC §5), like one over the size limit."""
    if count > LIMITS.max_statements:
        from .errors import UsageError
        raise UsageError(f"the program has {count:,} statements, over the limit of {LIMITS.max_statements:,}",
                         hint="raise it with --max-statements N")
