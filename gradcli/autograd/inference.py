"""``torch.inference_mode``: no graph recorded inside, as a context manager or a decorator.

It is ``no_grad`` (the language's ``with`` accepts it as one) plus the flag
``is_inference_mode_enabled()`` reads. torch also marks the tensors made inside as inference
tensors, which later refuse to be saved for backward; gradcli does not track that: they are
ordinary tensors that do not require grad (the values and grad modes are torch's).
"""

from __future__ import annotations

import functools

from .grad_mode import STATE, no_grad


class _Inference:
    __slots__ = ("enabled",)

    def __init__(self):
        self.enabled = False


INFERENCE = _Inference()


def is_inference_mode_enabled() -> bool:
    return INFERENCE.enabled


class inference_mode(no_grad):
    """Disable graph recording inside the block (``mode=False``: leave inference mode, grad on, as torch)."""

    __slots__ = ("_on", "_prev_inference")

    def __init__(self, mode: bool = True):
        self._on = bool(mode)

    def __enter__(self):
        self._prev = STATE.enabled
        self._prev_inference = INFERENCE.enabled
        STATE.enabled = not self._on
        INFERENCE.enabled = self._on
        return None

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        INFERENCE.enabled = self._prev_inference
        return False

    def __call__(self, fn):
        """As a decorator (``@inference_mode()``): the function runs in inference mode."""
        on = self._on

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(on):
                return fn(*args, **kwargs)
        return wrapper
