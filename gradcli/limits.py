"""Resource limits (SPEC §5): refuse a tensor over ``max_elements`` before allocating it."""

from __future__ import annotations

from .errors import LimitError

DEFAULT_MAX_ELEMENTS = 2 ** 28


class _Limits:
    __slots__ = ("max_elements",)

    def __init__(self):
        self.max_elements = DEFAULT_MAX_ELEMENTS


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
