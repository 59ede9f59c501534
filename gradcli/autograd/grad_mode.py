"""Grad mode: whether operations record a graph (``torch.no_grad`` and friends).

A module-level flag read on every operation; the context managers save and
restore it, so they nest and survive exceptions.
"""

from __future__ import annotations


class _State:
    __slots__ = ("enabled",)

    def __init__(self):
        self.enabled = True


STATE = _State()


def is_grad_enabled() -> bool:
    return STATE.enabled


class set_grad_enabled:
    """Context manager (and function, as in torch) setting grad mode on or off."""

    __slots__ = ("_prev", "_mode")

    def __init__(self, mode: bool):
        self._prev = STATE.enabled
        self._mode = bool(mode)
        STATE.enabled = self._mode

    def __enter__(self):
        STATE.enabled = self._mode
        return None

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False


class no_grad:
    """Disable graph recording inside the block."""

    __slots__ = ("_prev",)
    _mode = False

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._mode
        return None

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def __call__(self, fn):
        """As a decorator (``@gc.no_grad()``): the function runs in this mode."""
        import functools
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = STATE.enabled
            STATE.enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                STATE.enabled = prev
        return wrapper


class enable_grad(no_grad):
    """Enable graph recording inside the block (even within ``no_grad``)."""

    __slots__ = ()
    _mode = True
