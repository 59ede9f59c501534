"""torch.broadcast_to and torch.take_along_dim, as torch: the values, the gradient, the nodes
(ExpandBackward0; GatherBackward0 after the two expands of _take_along_dim_helper, or after a
view without dim) and the messages."""

import pytest

import gradcli as gc

torch = pytest.importorskip("torch")

M = [[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]]


def _run(lib, call):
    m = lib.tensor(M, requires_grad=True)
    try:
        y = call(lib, m)
    except Exception as exc:  # gradcli's errors subclass torch's kinds: RuntimeError, TypeError, IndexError
        kind = next(k for k in (IndexError, RuntimeError, TypeError) if isinstance(exc, k))
        return kind.__name__, str(exc)
    y.sum().backward()
    return (y.tolist(), type(y.grad_fn).__name__, [type(n).__name__ for n, _ in y.grad_fn.next_functions],
            m.grad.tolist())


CALLS = {
    "dim 1": lambda L, m: L.take_along_dim(m, L.tensor([[0], [2]]), 1),
    "method": lambda L, m: m.take_along_dim(L.tensor([[0], [2]]), dim=1),
    "no dim": lambda L, m: L.take_along_dim(m, L.tensor([4, 0, 4])),
    "dim 0, broadcast": lambda L, m: L.take_along_dim(m, L.tensor([[0, 1, 1]]), 0),
    "negative dim": lambda L, m: L.take_along_dim(m, L.tensor([[1], [0]]), -1),
    "sorted": lambda L, m: L.take_along_dim(m, m.argsort(1), 1),
    "ndim differs": lambda L, m: L.take_along_dim(m, L.tensor([0, 1]), 1),
    "float indices": lambda L, m: L.take_along_dim(m, L.tensor([[0.0]]), 1),
    "no broadcast": lambda L, m: L.take_along_dim(m, L.tensor([[0, 1], [1, 0], [0, 0]]), 0),
    "dim out of range": lambda L, m: L.take_along_dim(m, L.tensor([[1], [0]]), 2),
    "broadcast_to": lambda L, m: L.broadcast_to(m[0], (2, 3)),
    "broadcast_to, list": lambda L, m: L.broadcast_to(m, [4, 2, 3]),
    "broadcast_to, method ints": lambda L, m: m[0].broadcast_to(2, 3),
    "broadcast_to, -1": lambda L, m: m[0].broadcast_to((2, -1)),
    "broadcast_to, mismatch": lambda L, m: L.broadcast_to(m, (2, 2)),
    "broadcast_to, float size": lambda L, m: L.broadcast_to(m, (2, 3.0)),
    "broadcast_to, list input": lambda L, m: L.broadcast_to([1.0, 2.0], (2, 2)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_as_torch(name):
    assert _run(gc, CALLS[name]) == _run(torch, CALLS[name])


def test_an_index_out_of_range_is_refused():
    """(torch's expanded index skips gather's bounds check and reads out of range: gradcli says so)"""
    m = gc.tensor(M)
    with pytest.raises(RuntimeError, match="index 2 is out of bounds for dimension 0 with size 2"):
        gc.take_along_dim(m, gc.tensor([[0, 1, 2]]), 0)


def test_in_the_language():
    import contextlib
    import io
    import json
    from gradcli.cli import main
    out = io.StringIO()
    program = ("import torch\nx = torch.tensor([[3.0, 1.0], [2.0, 5.0]], requires_grad=True)\n"
               "top = torch.take_along_dim(x, x.argmax(1, keepdim=True), 1)\nz = (top * 2).sum()\n")
    with contextlib.redirect_stdout(out):
        assert main(["eval", program, "--json"]) == 0
    doc = json.loads(out.getvalue())
    x = next(v for v in doc["variables"] if v["name"] == "x")
    assert x["grad"] == [[2.0, 0.0], [0.0, 2.0]]


def _error(lib, call):
    try:
        call(lib)
    except Exception as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("dim", [1, None])
def test_indices_changed_before_backward_as_torch(dim):
    """With dim, torch's node keeps the indices as they were (no error, the old positions); without
    it, gather keeps a view of them and fails as gather does."""
    def call(L):
        m = L.tensor(M, requires_grad=True)
        i = L.tensor([[0], [2]] if dim is not None else [0, 2])
        y = L.take_along_dim(m, i, dim)
        i[0] = 1
        y.sum().backward()
        return m.grad.tolist()
    assert _error(gc, call) == _error(torch, call)
    if dim is not None:
        assert call(gc) == call(torch) == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    else:
        assert _error(gc, call) is not None


def test_without_dim_a_non_contiguous_input_fails_as_torchs_view():
    def call(L):
        return L.take_along_dim(L.tensor(M).t(), L.tensor([0, 1]))
    assert _error(gc, call) == _error(torch, call) is not None


def test_the_graph_once_freed_refuses_a_second_backward_as_torchs():
    """torch's node saves its copy of the indices: freed by the first backward, a second backward
    and ``_saved_index`` fail with the freed-graph message; retain_graph keeps both."""
    def call(L, retain):
        m = L.tensor(M, requires_grad=True)
        y = L.take_along_dim(m, L.tensor([[0], [2]]), 1).sum()
        y.backward(retain_graph=retain)
        out = [_error(L, lambda L: y.backward())]
        out.append(_error(L, lambda L: y.grad_fn.next_functions[0][0]._saved_index))
        return out
    for retain in (False, True):
        assert call(gc, retain) == call(torch, retain)
    assert call(gc, False)[0] is not None and call(gc, True)[0] is None  # (the second backward then frees it)
