"""Test helpers: a gradcheck of our own (central finite differences in float64) and comparisons
of gradcli tensors with torch's."""

from __future__ import annotations

import numpy as np

import gradcli as gc


def numeric_grads(fn, inputs, cotangent, eps=1e-6):
    """Central differences of ``sum(fn(*inputs) * cotangent)`` for every requiring-grad input."""
    grads = []
    for x in inputs:
        if not (isinstance(x, gc.Tensor) and x.requires_grad):
            grads.append(None)
            continue
        base = x.data._data.copy()
        g = np.zeros_like(base, dtype=np.float64)
        flat = x.data._data.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            hi = float(np.sum(np.asarray(fn(*inputs).detach()._data, dtype=np.float64) * cotangent))
            flat[i] = old - eps
            lo = float(np.sum(np.asarray(fn(*inputs).detach()._data, dtype=np.float64) * cotangent))
            flat[i] = old
            g.reshape(-1)[i] = (hi - lo) / (2 * eps)
        x.data._data[...] = base
        grads.append(g)
    return grads


def analytic_grads(fn, inputs, cotangent):
    out = fn(*inputs)
    wanted = [x for x in inputs if isinstance(x, gc.Tensor) and x.requires_grad]
    got = gc.autograd.grad([out], wanted, grad_outputs=[gc.tensor(cotangent, dtype=out.dtype)], allow_unused=True,
                           materialize_grads=True)
    it = iter(got)
    return [np.asarray(next(it)._data, dtype=np.float64) if isinstance(x, gc.Tensor) and x.requires_grad else None
            for x in inputs]


def gradcheck(fn, *inputs, eps=1e-6, atol=1e-6, rtol=1e-5, seed=0):
    """Assert that the engine's gradients of ``fn`` match finite differences (inputs in float64)."""
    out = fn(*inputs)
    cotangent = np.random.default_rng(seed).standard_normal(tuple(out.shape)) + 0.5
    num = numeric_grads(fn, inputs, cotangent, eps)
    ana = analytic_grads(fn, inputs, cotangent)
    for k, (n, a) in enumerate(zip(num, ana)):
        if n is None:
            continue
        assert a.shape == n.shape, f"input {k}: gradient shape {a.shape} != {n.shape}"
        np.testing.assert_allclose(a, n, atol=atol, rtol=rtol, err_msg=f"input {k} of {getattr(fn, '__name__', fn)}")
    return True


def leaf(array, requires_grad=True):
    return gc.tensor(np.asarray(array, dtype=np.float64).tolist(), dtype=gc.float64, requires_grad=requires_grad)


def assert_matches_torch(ours, theirs, atol=1e-6, rtol=1e-5):
    """Values, shape and dtype of a gradcli tensor against a torch tensor."""
    assert list(ours.shape) == list(theirs.shape), (ours.shape, theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", ""), (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(np.asarray(ours.detach()._data, dtype=np.float64),
                               theirs.detach().double().numpy(), atol=atol, rtol=rtol, equal_nan=True)


def graph_names(t):
    """(name, [(child name or None, index)...]) for every node reachable from t.grad_fn, breadth-first."""
    out, seen, queue = [], set(), [t.grad_fn]
    while queue:
        node = queue.pop(0)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        name = type(node).__name__
        kids = [(None if c is None else type(c).__name__, i) for c, i in node.next_functions]
        out.append((name, kids))
        queue.extend(c for c, _ in node.next_functions if c is not None)
    return out
