"""Grad mode: whether operations record a graph (``torch.no_grad`` and friends).

A module-level flag read on every operation; the context managers save and
restore it, so they nest and survive exceptions.
"""

from __future__ import annotations


import functools
import inspect
import sys


class _State:
    """``enabled``: grad mode. ``inference``: inside inference_mode. ``formula``: a derivative
    formula is running under create_graph, where torch's C++ formulas use the Scalar overloads
    (``grad * 2`` records MulBackward1, ``x + 1`` AddBackward1)."""

    __slots__ = ("enabled", "inference", "formula")

    def __init__(self):
        self.enabled = True
        self.inference = False
        self.formula = False


STATE = _State()


def is_grad_enabled() -> bool:
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _DecoratorContextManager:
    """torch's decorator behaviour for the grad-mode context managers: the decorated function (or
    each step of a decorated generator) runs inside a fresh copy of the context."""

    __slots__ = ()

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            return _wrap_generator(self.clone, func)

        @functools.wraps(func)
        def decorate_context(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return decorate_context

    def clone(self):
        return self.__class__()


def _wrap_generator(ctx_factory, func):
    """torch's ``_wrap_generator``: the generator's body runs in the context at every resumption,
    and the caller's code between two ``next`` calls runs outside it."""
    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value
    return generator_context


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """``no_grad(f)`` and a bare ``@no_grad`` decorate ``f`` as ``no_grad()(f)`` does (torch 2.x)."""

    __slots__ = ()

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable graph recording inside the block (or the decorated function)."""

    __slots__ = ("_prev",)
    _mode = False

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._mode
        return None

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False


class enable_grad(no_grad):
    """Enable graph recording inside the block (even within ``no_grad``)."""

    __slots__ = ()
    _mode = True


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode on or off when called (as torch's function form), for a block as a context
    manager; as a decorator it restores the mode it changed and applies to the function only."""

    __slots__ = ("_prev", "_mode")

    def __init__(self, mode: bool):
        self._prev = STATE.enabled
        self._mode = bool(mode)
        STATE.enabled = self._mode

    def __call__(self, func):
        STATE.enabled = self._prev  # torch: the decorator form does not change the mode at import
        return super().__call__(func)

    def __enter__(self):
        STATE.enabled = self._mode
        return None

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def clone(self):
        return self.__class__(self._mode)


class inference_mode(_DecoratorContextManager):
    """``torch.inference_mode``: grad mode off inside (``inference_mode(False)``: on). Tensors made
    inside are inference tensors (``Tensor._make`` reads ``STATE.inference``: see
    ``tensor.INFERENCE_VC``), which outside may be neither saved for backward nor changed in place."""

    __slots__ = ("_prev", "_mode")

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True):
        self._mode = mode

    def __enter__(self):
        self._prev = (STATE.enabled, STATE.inference)
        STATE.enabled = not self._mode  # as c10::InferenceMode: inference_mode(False) turns grad on
        STATE.inference = self._mode
        return None

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self._prev
        return False

    def clone(self):
        return self.__class__(self._mode)
