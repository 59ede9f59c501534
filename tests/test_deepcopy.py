"""copy.deepcopy of a tensor, as torch's: leaves only (a non-leaf's graph is never copied)."""

import copy

import pytest

import gradcli as gc
from gradcli.errors import AutogradError

torch = pytest.importorskip("torch")


def _leaf_with_grad(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    (a * 3).sum().backward()
    return a


def test_a_leaf_copies_its_values_requires_grad_and_grad_as_torch():
    for lib in (gc, torch):
        a = _leaf_with_grad(lib)
        c = copy.deepcopy(a)
        assert c.tolist() == [1.0, 2.0] and c.requires_grad and c.is_leaf, lib.__name__
        assert c.grad.tolist() == [3.0, 3.0] and c.grad is not a.grad, lib.__name__
        assert c._version == 1, lib.__name__
        with lib.no_grad():
            c.add_(1.0)
        assert a.tolist() == [1.0, 2.0], lib.__name__  # its own storage


def test_a_non_leaf_refuses_with_torchs_message():
    a = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as theirs:
        copy.deepcopy(a * 2)
    x = gc.ones(2, requires_grad=True)
    with pytest.raises(AutogradError) as ours:
        copy.deepcopy(x * 2)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(AutogradError):
        copy.deepcopy(x[0])  # a view with history is not a leaf either


def test_memo_keeps_shared_tensors_shared():
    for lib in (gc, torch):
        a = lib.ones(2)
        pair = copy.deepcopy([a, a])
        assert pair[0] is pair[1] and pair[0] is not a, lib.__name__
        with lib.no_grad():
            w = lib.ones(2, requires_grad=True)[0]  # a view made under no_grad: a leaf
        assert copy.deepcopy(w).requires_grad, lib.__name__
