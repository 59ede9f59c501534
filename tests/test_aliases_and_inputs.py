"""Issue 13, "also used by others' tests": the ``axis=``/``keepdims=`` aliases, ``clip``, ``narrow``,
``select``, ``argmax``/``argmin``, ``backward(inputs=...)`` with non-leaves, ``materialize_grads``
under ``create_graph``: values, gradients and grad_fn names against torch."""

import numpy as np
import pytest

import gradcli as gc

torch = pytest.importorskip("torch")

DATA = [[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]


def _out(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (tuple, list)):
        return tuple(_out(x) for x in v)
    return (np.round(np.asarray(v.detach().tolist(), dtype=float), 4).tolist(), str(v.dtype).split(".")[-1],
            None if v.grad_fn is None else type(v.grad_fn).__name__)


CALLS = {
    "sum": lambda m, x: x.sum(axis=1), "sum_fn": lambda m, x: m.sum(x, axis=0, keepdims=True),
    "mean": lambda m, x: x.mean(axis=1, keepdim=True), "prod": lambda m, x: m.prod(x, axis=1),
    "amax": lambda m, x: x.amax(axis=0), "amin": lambda m, x: m.amin(x, axis=1),
    "var": lambda m, x: x.var(axis=1), "std": lambda m, x: m.std(x, axis=0),
    "max": lambda m, x: x.max(axis=1)[0], "min_indices": lambda m, x: m.min(x, axis=0)[1],
    "logsumexp": lambda m, x: x.logsumexp(axis=1), "softmax": lambda m, x: m.softmax(x, axis=0),
    "log_softmax": lambda m, x: x.log_softmax(axis=1), "all": lambda m, x: (x > 0).all(axis=1),
    "any": lambda m, x: m.any(x > 4, axis=0), "cat": lambda m, x: m.cat([x, x], axis=1),
    "squeeze": lambda m, x: x[None].squeeze(axis=0), "unsqueeze": lambda m, x: x.unsqueeze(axis=1),
    "argmax": lambda m, x: x.argmax(axis=1), "argmax_flat": lambda m, x: m.argmax(x),
    "argmin": lambda m, x: m.argmin(x, dim=0, keepdim=True), "argmin_flat_keep": lambda m, x: x.argmin(keepdim=True),
    "clip": lambda m, x: x.clip(-1, 2), "clip_min": lambda m, x: m.clip(x, min=0),
    "clip_max": lambda m, x: x.clip(max=0), "clip_tensor": lambda m, x: x.clip(m.zeros(3)),
    "narrow": lambda m, x: x.narrow(1, -2, 2), "narrow_fn": lambda m, x: m.narrow(x, 0, 1, 1),
    "select": lambda m, x: x.select(-1, -1), "select_fn": lambda m, x: m.select(x, 0, 1),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_call_matches_torch(name):
    results = []
    for m in (gc, torch):
        x = m.tensor(DATA, requires_grad=True)
        out = CALLS[name](m, x)
        grad = None
        if out.requires_grad:
            (out.float() * m.arange(out.numel()).reshape(out.shape).float()).sum().backward()
            grad = x.grad
        results.append((_out(out), _out(grad)))
    assert results[0] == results[1]


@pytest.mark.parametrize("call", [lambda m, x: x.norm(axis=0), lambda m, x: x.sum(dim=0, axis=1),
                                  lambda m, x: x.narrow(1, 1, 5), lambda m, x: x.select(0, 2)])
def test_refused_as_torch_refuses(call):
    errors = []
    for m in (gc, torch):
        with pytest.raises(Exception) as info:
            call(m, m.tensor(DATA))
        errors.append(info.value)
    assert isinstance(errors[0], type(errors[1])), (type(errors[0]).__mro__, type(errors[1]))


def test_backward_inputs_with_non_leaves():
    results = []
    for m in (gc, torch):
        x = m.tensor(DATA, requires_grad=True)
        w = m.ones(3, requires_grad=True)
        y = x * 2
        z = (y * y * w).sum()
        z.backward(inputs=[y, w], retain_graph=True)
        first = (_out(y.grad), _out(w.grad), x.grad)
        z.backward(inputs=y)  # accumulates into y.grad
        results.append((first, _out(y.grad), x.grad, y.grad_fn is not None))
    assert results[0] == results[1]


def test_materialize_grads_with_create_graph():
    results = []
    for m in (gc, torch):
        x = m.tensor(DATA, requires_grad=True)
        w = m.ones(3, requires_grad=True)
        gx, gw = m.autograd.grad((x * x).sum(), [x, w], create_graph=True, materialize_grads=True)
        plain = m.autograd.grad((x * x).sum(), [w], materialize_grads=True)[0]
        results.append((_out(gx), _out(gw), gw.requires_grad, gw.is_leaf, plain.requires_grad))
        with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when "
                                             "materialize_grads=True, but got: allow_unused=False."):
            m.autograd.grad((x * x).sum(), [w], materialize_grads=True, allow_unused=False)
    assert results[0] == results[1]
