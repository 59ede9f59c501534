"""Issue 13 D: every grad-mode form torch supports, run under torch and gradcli: decorators with and
without parentheses, ``no_grad(f)``, ``set_grad_enabled`` as a call, a block and a decorator,
decorated generators, ``inference_mode``, and the previous mode restored however a block ends."""

import pytest

import gradcli as gc

torch = pytest.importorskip("torch")


def _observations(m):
    x = m.ones(2, requires_grad=True)
    out = []

    def f():
        return (x * 2).requires_grad, m.is_grad_enabled()

    out.append(m.no_grad(f)())
    out.append(m.no_grad()(f)())
    with m.no_grad():
        out.append(m.enable_grad(f)())
        out.append(m.enable_grad()(f)())
    out.append(m.is_grad_enabled())

    @m.no_grad
    def bare():
        return m.is_grad_enabled()
    out.append(bare())

    m.set_grad_enabled(False)  # the function form: the mode changes until changed back
    out.append(m.is_grad_enabled())
    m.set_grad_enabled(True)
    decorated = m.set_grad_enabled(False)(f)
    out.append(m.is_grad_enabled())  # not turned off by decorating
    out.append(decorated())
    out.append(m.is_grad_enabled())
    with m.set_grad_enabled(False):
        out.append(m.is_grad_enabled())
    out.append(m.is_grad_enabled())

    @m.no_grad()
    def gen():
        for _ in range(2):
            yield m.is_grad_enabled(), (x * 2).requires_grad
    it = gen()
    out.append(next(it))
    out.append(m.is_grad_enabled())  # the caller's code between steps runs outside the context
    out.append(next(it))
    out.append(list(m.enable_grad()(gen)()))

    class Model:
        @m.no_grad()
        def step(self):
            return m.is_grad_enabled()
    out.append(Model().step())

    for ctx in (m.no_grad(), m.enable_grad(), m.set_grad_enabled(False), m.inference_mode()):
        try:
            with ctx:
                raise KeyError("inside")
        except KeyError:
            out.append(m.is_grad_enabled())

    @m.no_grad()
    def fails():
        raise ValueError("x")
    with pytest.raises(ValueError):
        fails()
    out.append(m.is_grad_enabled())

    with m.inference_mode():
        out.append(((x * 2).requires_grad, m.is_grad_enabled(), m.is_inference_mode_enabled()))
        with m.inference_mode(False):
            out.append((m.is_grad_enabled(), m.is_inference_mode_enabled()))
    out.append((m.is_grad_enabled(), m.is_inference_mode_enabled()))
    out.append(m.inference_mode()(f)())
    out.append(m.inference_mode(f)())
    out.append(type(m.no_grad().clone()).__name__)
    return out


def test_grad_mode_forms_match_torch():
    theirs = _observations(torch)
    ours = _observations(gc)
    assert ours == theirs
    assert gc.is_grad_enabled()
