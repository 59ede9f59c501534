"""Test helpers: a gradcheck of our own (central finite differences in float64) and comparisons
of gradcli tensors with torch's."""

from __future__ import annotations

import re

import numpy as np

import gradcli as gc


def _inputs_requiring_grad(inputs):
    return [x for x in inputs if isinstance(x, gc.Tensor) and x.requires_grad]


def _value(fn, inputs, cotangent) -> float:
    """``sum(fn(*inputs) * cotangent)`` in float64 (grad mode stays on: ``fn`` may differentiate)."""
    out = fn(*inputs)
    return float(np.sum(np.asarray(out.detach()._data, dtype=np.float64) * cotangent))


def numeric_grads(fn, inputs, cotangent, eps=1e-6):
    """Central differences of ``sum(fn(*inputs) * cotangent)`` for every requiring-grad input.

    Each element of each such input is perturbed in place (on the tensor's own array, so that
    ``fn`` sees it whatever views it takes) and restored exactly afterwards."""
    grads = []
    for x in inputs:
        if not (isinstance(x, gc.Tensor) and x.requires_grad):
            grads.append(None)
            continue
        arr = x._data
        assert arr.dtype == np.float64, "gradcheck needs float64 inputs"
        g = np.zeros(arr.shape, dtype=np.float64)
        for idx in np.ndindex(*arr.shape):
            old = float(arr[idx])
            arr[idx] = old + eps
            hi = _value(fn, inputs, cotangent)
            arr[idx] = old - eps
            lo = _value(fn, inputs, cotangent)
            arr[idx] = old
            g[idx] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def analytic_grads(fn, inputs, cotangent):
    """The engine's gradients of ``sum(fn(*inputs) * cotangent)`` through ``autograd.grad``."""
    out = fn(*inputs)
    wanted = _inputs_requiring_grad(inputs)
    got = gc.autograd.grad([out], wanted, grad_outputs=[gc.tensor(np.asarray(cotangent).tolist(), dtype=out.dtype)],
                           allow_unused=True, materialize_grads=True)
    it = iter(got)
    return [np.asarray(next(it)._data, dtype=np.float64) if isinstance(x, gc.Tensor) and x.requires_grad else None
            for x in inputs]


def gradcheck(fn, *inputs, eps=1e-6, atol=1e-6, rtol=1e-5, seed=0):
    """Assert that the engine's gradients of ``fn`` match finite differences (inputs in float64).

    A non-scalar output is contracted with a fixed random cotangent (shifted away from zero so
    that no element is ignored), so the whole Jacobian-vector product is checked at once."""
    out = fn(*inputs)
    assert out.requires_grad, "gradcheck: the output does not require grad"
    cotangent = np.random.default_rng(seed).standard_normal(tuple(out.shape)) + 0.5
    before = [np.array(x._data, copy=True) for x in _inputs_requiring_grad(inputs)]
    num = numeric_grads(fn, inputs, cotangent, eps)
    ana = analytic_grads(fn, inputs, cotangent)
    for x, b in zip(_inputs_requiring_grad(inputs), before):
        assert np.array_equal(x._data, b), "gradcheck changed an input"
    name = getattr(fn, "__name__", repr(fn))
    for k, (n, a) in enumerate(zip(num, ana)):
        if n is None:
            continue
        assert a.shape == n.shape, f"{name}: input {k}: gradient shape {a.shape} != {n.shape}"
        np.testing.assert_allclose(a, n, atol=atol, rtol=rtol, err_msg=f"{name}: input {k}")
    return True


def same_bits(a, b, nan_signs: bool = True) -> None:
    """Equal bit for bit (NaNs equal to NaNs), same dtype and shape; ``nan_signs=False``: a NaN's
    sign bit aside (no op shows it, and NumPy's loops set it by operand order)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b, equal_nan=True)
    if nan_signs:
        assert np.array_equal(np.signbit(a), np.signbit(b))
    else:
        assert np.array_equal(np.signbit(a) & (a == a), np.signbit(b) & (b == b))


def leaf(array, requires_grad=True):
    """A float64 leaf (what gradcheck wants) from anything numpy can read."""
    return gc.tensor(np.asarray(array, dtype=np.float64).tolist(), dtype=gc.float64, requires_grad=requires_grad)


def dtype_name(t) -> str:
    """``float32`` for gradcli's and torch's dtypes alike."""
    return str(t.dtype).replace("torch.", "")


def assert_close_or_none(ours, theirs, **tolerances) -> None:
    """Two lists of gradients (arrays, or None for an input without one), pair by pair: None in the
    same places, the arrays close (``np.testing.assert_allclose``'s ``tolerances``)."""
    for a, b in zip(ours, theirs):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, **tolerances)


def assert_matches_torch(ours, theirs, atol=1e-6, rtol=1e-5):
    """Values, shape and dtype of a gradcli tensor against a torch tensor (NaNs in the same places)."""
    assert list(ours.shape) == list(theirs.shape), (ours.shape, theirs.shape)
    assert dtype_name(ours) == dtype_name(theirs), (ours.dtype, theirs.dtype)
    mine = np.asarray(ours.detach()._data)
    other = theirs.detach().cpu().numpy(force=True)
    if mine.dtype.kind in "biu":
        np.testing.assert_array_equal(mine, other)
    else:
        np.testing.assert_allclose(mine.astype(np.float64), other.astype(np.float64), atol=atol, rtol=rtol,
                                   equal_nan=True)


def graph_names(t):
    """(name, [(child name or None, index)...]) for every node reachable from t.grad_fn, breadth-first
    in next_functions order: the whole graph's shape as names, comparable between engines."""
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


def plain(value) -> str:
    """repr with object addresses dropped (``<AddBackward0 object at 0x...>`` -> ``<AddBackward0>``)."""
    return re.sub(r" object at 0x[0-9a-fA-F]+", "", repr(value) if not isinstance(value, str) else value)


def error_text(exc: BaseException) -> str:
    """An error's message without torch's trailing hint (anomaly detection) or gradcli's."""
    return str(exc).split(" Hint:")[0]


try:
    import pytest as _pytest

    @_pytest.fixture(autouse=True)
    def clean_engine_state():
        """Each test starts from the library's defaults: in-process CLI runs elsewhere in the suite
        leave process-wide engine state behind (--detect-anomaly, --dtype, grad mode)."""
        from gradcli.autograd.engine import ANOMALY
        ANOMALY.enabled = False
        gc.set_grad_enabled(True)
        gc.set_default_dtype(gc.float32)
        yield
        ANOMALY.enabled = False
        gc.set_grad_enabled(True)
except ImportError:  # pragma: no cover (helpers used without pytest)
    pass


def run_on_a_terminal(cmd, columns: int, env: dict, cwd: str, stderr_on_terminal: bool = True):
    """Run ``cmd`` with stdout (and stderr, unless ``stderr_on_terminal`` is False: then a pipe)
    on a real pseudo-terminal of ``columns`` columns; (exit code, bytes shown, stderr bytes)."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(cmd, stdout=slave, stderr=slave if stderr_on_terminal else subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=env, cwd=cwd)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed: the process has ended
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    err = b""
    if not stderr_on_terminal:
        err = proc.stderr.read()
        proc.stderr.close()
    return proc.wait(timeout=300), b"".join(chunks), err


def same_error_as_torch(src: str) -> None:
    """``src`` (an expression over ``L``) raises under gradcli and torch, with the same message."""
    import pytest
    torch = pytest.importorskip("torch")
    messages = []
    for L in (gc, torch):
        with pytest.raises(Exception) as info:
            eval(src, {"L": L})  # noqa: S307 (fixed test expressions)
        messages.append(error_text(info.value))
    assert messages[0] == messages[1]
