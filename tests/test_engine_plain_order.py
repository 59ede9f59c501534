"""The order in which the plain walk (engine._walk_plain: an ordinary ``backward()``, no hooks at
all) runs nodes, against torch on random graphs.

test_engine_order checks the order through tensor hooks, which hand the walk over to the general
one at the first hooked node; here nothing is hooked on gradcli's side: each node class's ``apply``
and the engine's ``_accumulate`` are wrapped to record what runs, while torch records the same
through a pre-hook on every node and a hook on every leaf (which do not change its order). The
plain walk keeps the next node out of its heap where it can (a chain, the newer operand of an add
and then its leaf); the order must still be the priority queue's, ties between leaves included.
"""

import gc as collector

import pytest

import gradcli as gc
from gradcli.autograd import engine
from helpers import clean_engine_state  # noqa: F401
from test_engine_order import _program, step_of

torch = pytest.importorskip("torch")


def _build(lib, n_leaves, steps):
    values = [lib.tensor([0.3 + 0.1 * i, 0.7 - 0.05 * i], requires_grad=True) for i in range(n_leaves)]
    labels = []  # (node, label)
    for step in steps:
        n = len(values)
        out = step_of(lib, values, step)
        if step[0] == "stack":
            labels.append((out.grad_fn.next_functions[0][0], ("stack", n)))
        labels.append((out.grad_fn, ("t", n)))
        values.append(out)
    return values, labels


def _torch_order(n_leaves, steps, roots):
    order = []
    values, labels = _build(torch, n_leaves, steps)
    for i, leaf in enumerate(values[:n_leaves]):
        leaf.register_hook(lambda g, i=i: order.append(("leaf", i)))
    for node, label in labels:
        node.register_prehook(lambda g, label=label: order.append(label))
    outs = [values[i] for i in roots]
    torch.autograd.backward(outs, [torch.ones(2)] * len(outs))
    return order


def _plain_order(n_leaves, steps, roots, monkeypatch):
    collector.collect()  # grad_fn hooks of earlier tests' graphs awaiting the collector: the general walk
    assert not engine._HOOKED_ANY
    order = []
    values, labels = _build(gc, n_leaves, steps)
    names = {id(node): label for node, label in labels}
    for cls in {node.__class__ for node, _ in labels}:
        def apply(node, grad, F, differentiable, _apply=cls.apply):
            order.append(names[id(node)])
            return _apply(node, grad, F, differentiable)
        monkeypatch.setattr(cls, "apply", apply)
    leaves = {id(leaf): i for i, leaf in enumerate(values[:n_leaves])}
    accumulate = engine._accumulate

    def recorded(variable, g, create_graph):
        order.append(("leaf", leaves[id(variable)]))
        return accumulate(variable, g, create_graph)
    monkeypatch.setattr(engine, "_accumulate", recorded)
    walks = []
    plain = engine._walk_plain
    monkeypatch.setattr(engine, "_walk_plain", lambda *a: walks.append("plain") or plain(*a))
    outs = [values[i] for i in roots]
    gc.autograd.backward(outs, [gc.ones(2)] * len(outs))
    monkeypatch.undo()
    return order, walks


@pytest.mark.parametrize("seed", range(300))
def test_plain_walk_runs_nodes_in_torchs_order(seed, monkeypatch):
    n_leaves, steps, roots = _program(seed)
    order, walks = _plain_order(n_leaves, steps, roots, monkeypatch)
    assert walks == ["plain"]
    assert order == _torch_order(n_leaves, steps, roots)


def test_a_chain_of_adds_runs_each_newer_term_before_the_older_sum(monkeypatch):
    """``x * 1.5 + sin(y) + x * y + exp(y) + 0.5``: each add's newer operand runs first (straight
    from ``nxt``), then the older sum (from the heap); a leaf once all its uses have run."""
    steps = [("number", "mul", 0), ("unary", "sin", 1), ("binary", "add", 2, 3), ("binary", "mul", 0, 1),
             ("binary", "add", 4, 5), ("unary", "exp", 1), ("binary", "add", 6, 7), ("number", "add", 8)]
    order, walks = _plain_order(2, steps, [9], monkeypatch)
    assert walks == ["plain"]
    assert order == _torch_order(2, steps, [9])
    assert order == [("t", 9), ("t", 8), ("t", 7), ("t", 6), ("t", 5), ("t", 4), ("t", 3), ("leaf", 1),
                     ("t", 2), ("leaf", 0)]
