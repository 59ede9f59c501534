"""Tensors an op keeps as attributes of its node (gather's and scatter's index, masked_fill's mask,
where's condition, nll_loss's target), which torch saves: changed in place before backward, they
fail it with torch's message (gradcli once computed a gradient from the changed index, silently
wrong); the graph freed by a backward refuses a second one; retain_graph keeps them; an op whose
formula does not read them (scatter_add, index_add without src's gradient) saves nothing."""

from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc
from gradcli.ops import nn_functional as GF

torch = pytest.importorskip("torch")


def _env(lib):
    return {
        "x": lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True),
        "idx": lib.tensor([[0, 0], [1, 0]]), "row": lib.tensor([1, 0]), "lab": lib.tensor([1, 0]),
        "mask": lib.tensor([[True, False], [False, True]]),
        "w": lib.tensor([0.5, 2.0]), "t": lib.tensor([[1.0, 0.0], [0.0, 1.0]]),
        "F": torch.nn.functional if lib is torch else GF, "lib": lib,
    }


# (the op, the tensor it keeps, a change of it in place)
CASES = {
    "gather": (lambda e: e["x"].gather(1, e["idx"]), "idx", lambda t: t.add_(1).clamp_(0, 1)),
    "scatter value": (lambda e: e["x"].scatter(1, e["idx"], 5.0), "idx", lambda t: t.mul_(0)),
    "scatter src": (lambda e: e["x"].scatter(1, e["idx"], e["x"] * 2), "idx", lambda t: t.mul_(0)),
    "scatter_add": (lambda e: (e["x"] * 1).scatter_add(1, e["idx"], e["x"]), "idx", lambda t: t.mul_(0)),
    "scatter_ in place": (lambda e: (e["x"] * 1).scatter_(1, e["idx"], 5.0), "idx", lambda t: t.mul_(0)),
    "index_select": (lambda e: e["x"].index_select(0, e["row"]), "row", lambda t: t.mul_(0)),
    "index_add": (lambda e: (e["x"] * 1).index_add(0, e["row"], e["x"]), "row", lambda t: t.mul_(0)),
    "masked_fill": (lambda e: e["x"].masked_fill(e["mask"], 0.0), "mask", lambda t: t.mul_(False)),
    "masked_fill 0-d value": (lambda e: e["x"].masked_fill(e["mask"], e["x"].sum()), "mask", lambda t: t.mul_(False)),
    "where": (lambda e: e["lib"].where(e["mask"], e["x"], 0.0), "mask", lambda t: t.mul_(False)),
    "nll_loss": (lambda e: e["F"].nll_loss(e["x"].log_softmax(1), e["lab"]), "lab", lambda t: t.mul_(0)),
    "nll_loss sum": (lambda e: e["F"].nll_loss(e["x"], e["lab"], reduction="sum"), "lab", lambda t: t.mul_(0)),
    "cross_entropy": (lambda e: e["F"].cross_entropy(e["x"], e["lab"]), "lab", lambda t: t.mul_(0)),
    "nll_loss weight": (lambda e: e["F"].nll_loss(e["x"], e["lab"], weight=e["w"]), "w", lambda t: t.mul_(2)),
    "binary_cross_entropy weight": (lambda e: e["F"].binary_cross_entropy(e["x"].sigmoid(), e["t"], weight=e["w"]),
                                    "w", lambda t: t.mul_(2)),
    "bce_with_logits pos_weight": (lambda e: e["F"].binary_cross_entropy_with_logits(e["x"], e["t"],
                                                                                      pos_weight=e["w"]),
                                   "w", lambda t: t.mul_(2)),
    "x[index]": (lambda e: e["x"][e["row"]], "row", lambda t: t.mul_(0)),
    "x[index, index]": (lambda e: e["x"][e["row"], e["lab"]], "lab", lambda t: t.mul_(0)),
    "x[:, index]": (lambda e: e["x"][:, e["row"]], "row", lambda t: t.mul_(0)),
    "masked_select": (lambda e: e["x"].masked_select(e["mask"]), "mask", lambda t: t.mul_(False)),
    "x[mask]": (lambda e: e["x"][e["mask"]], "mask", lambda t: t.mul_(False)),
    "y[index] = v": (lambda e: _put(e, e["row"]), "row", lambda t: t.mul_(0)),
    "y[mask] = v": (lambda e: _put(e, e["mask"]), "mask", lambda t: t.mul_(False)),
}


def _put(e, key):
    """``y[key] = v`` on a copy of x (IndexPutBackward0 on y), v a product of x (its gradient too)."""
    y = e["x"] * 1
    y[key] = e["x"][0, 0] * 3
    return y


def _backward(lib, name, change=False, twice=False, retain=False):
    """What backward through the case gives: the leaf's gradient, or the error's message."""
    op, kept, modify = CASES[name]
    e = _env(lib)
    out = op(e)
    loss = (out * 1.5).sum() if out.dim() else out
    if change:
        modify(e[kept])
    try:
        loss.backward(retain_graph=retain)
        if twice:
            loss.backward()
        return np.asarray(e["x"].grad.tolist())
    except RuntimeError as exc:  # gradcli's AutogradError is a RuntimeError, as torch's
        return str(exc)


@pytest.mark.parametrize("name", list(CASES))
def test_a_kept_tensor_changed_in_place_fails_backward_with_torchs_message(name):
    ours, theirs = _backward(gc, name, change=True), _backward(torch, name, change=True)
    assert isinstance(theirs, str) and "modified by an inplace operation" in theirs
    assert ours == theirs


@pytest.mark.parametrize("name", list(CASES))
def test_unchanged_the_gradient_is_torchs_and_a_second_backward_is_refused(name):
    np.testing.assert_allclose(_backward(gc, name), _backward(torch, name), rtol=1e-6)
    ours, theirs = _backward(gc, name, twice=True), _backward(torch, name, twice=True)
    assert isinstance(theirs, str) and theirs.startswith("Trying to backward through the graph a second time")
    assert ours == theirs
    np.testing.assert_allclose(_backward(gc, name, twice=True, retain=True),
                               _backward(torch, name, twice=True, retain=True), rtol=1e-6)


def test_an_index_given_as_a_list_is_not_kept():
    """A list index becomes a new tensor (torch's too): nothing of the caller's to change."""
    for lib in (gc, torch):
        e = _env(lib)
        rows = [1, 0]
        out = e["x"][rows]
        rows[0] = 0
        out.sum().backward()
        np.testing.assert_array_equal(np.asarray(e["x"].grad.tolist()), np.ones((2, 2)))


@pytest.mark.parametrize("op", [
    lambda e, s: (e["x"] + 0).scatter_add(1, e["idx"], s),  # (x + 0: AddBackward0 saves nothing)
    lambda e, s: (e["x"] + 0).index_add(0, e["idx"][0], s),
], ids=["scatter_add", "index_add"])
def test_without_srcs_gradient_the_index_is_not_kept(op):
    """torch saves scatter_add's and index_add's index for src's gradient only: changed in place
    when src needs none, backward runs (and a second one too: nothing was saved)."""
    for lib in (gc, torch):
        e = _env(lib)
        out = op(e, lib.ones(2, 2))
        e["idx"].mul_(0)
        loss = out.sum()
        loss.backward()
        loss.backward()
        np.testing.assert_array_equal(np.asarray(e["x"].grad.tolist()), np.full((2, 2), 2.0))


def test_an_index_made_under_inference_mode_cannot_be_saved():
    got = []
    for lib in (gc, torch):
        x = lib.ones(2, 2, requires_grad=True)
        with lib.inference_mode():
            idx = lib.tensor([[0, 0], [1, 0]])
        with pytest.raises(RuntimeError) as exc:
            x.gather(1, idx)
        got.append(str(exc.value))
        with lib.no_grad():  # nothing recorded: nothing saved
            assert x.gather(1, idx).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert got[0] == got[1]


@pytest.mark.parametrize("weight", [[0.5, 2.0, 1.0], [[0.5, 2.0, 1.0]] * 2, [[[0.5, 2.0]]], [[[1.0]]] * 3,
                                    [[0.5], [2.0]], [0.5, 2.0], 3.0], ids=str)
def test_binary_cross_entropy_broadcasts_its_weight_as_torch(weight):
    """torch expands the weight to the shape it broadcasts to with the target (that view is saved),
    or says why it cannot."""
    got = []
    for lib, F in ((gc, GF), (torch, torch.nn.functional)):
        x = lib.tensor([[0.3, 0.6], [0.2, 0.9]], requires_grad=True)
        try:
            out = F.binary_cross_entropy(x, lib.tensor([[1.0, 0.0], [0.0, 1.0]]), weight=lib.tensor(weight))
            out.backward()
            got.append((round(out.item(), 6), np.asarray(x.grad.tolist()).round(6).tolist()))
        except RuntimeError as exc:
            got.append(str(exc))
    assert got[0] == got[1]


@pytest.mark.parametrize("make, field", [
    (lambda x: x.gather(1, gc.tensor([[0], [1]])), "_saved_index"),
    (lambda x: x.index_select(0, gc.tensor([1])), "_saved_index"),
    (lambda x: x.masked_fill(gc.tensor([[True, False], [False, True]]), 0.0), "_saved_mask"),
    (lambda x: GF.nll_loss(x, gc.tensor([0, 1]), weight=gc.tensor([1.0, 2.0])), "_saved_target"),
    (lambda x: GF.nll_loss(x, gc.tensor([0, 1]), weight=gc.tensor([1.0, 2.0])), "_saved_weight"),
])
def test_a_kept_tensor_is_freed_with_the_graph(make, field):
    """A tensor an op keeps as an attribute (torch saves it) reads until backward frees the graph,
    then fails as the saved inputs do, with torch's message; retain_graph keeps it."""
    x = gc.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    kept = make(x)
    assert getattr(kept.grad_fn, field) is not None
    kept.sum().backward(retain_graph=True)
    assert getattr(kept.grad_fn, field) is not None
    y = make(x)
    y.sum().backward()
    with pytest.raises(RuntimeError) as caught:  # (gradcli's AutogradError is one)
        getattr(y.grad_fn, field)
    tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    ty = torch.nn.functional.nll_loss(tx, torch.tensor([0, 1]))
    ty.backward()
    with pytest.raises(RuntimeError) as want:
        ty.grad_fn._saved_target
    assert str(caught.value) == str(want.value)
    if hasattr(type(y.grad_fn), "_saved_dim"):  # a plain value still reads, as torch's
        assert y.grad_fn._saved_dim in (0, 1)
