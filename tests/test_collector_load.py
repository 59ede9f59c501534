"""What a recorded op leaves for the cyclic garbage collector: every object it keeps that the
collector tracks counts towards the next collection and is traversed in it. A recorded op keeps
its node and its output tensor; the shapes the node keeps are shared tuples (autograd.node.sizes),
not new ones per op (issue 16: on small tensors the collector's share of an op's time)."""

from __future__ import annotations

import gc
from collections import Counter

import pytest

import gradcli
from gradcli.autograd import node as node_module
from gradcli.autograd.node import Node, sizes
from gradcli.autograd.tensor import Tensor


def young_after(make, times: int = 10) -> Counter:
    """The kinds of the collector-tracked objects made since a collection, once ``times`` calls of
    ``make`` are kept."""
    keep = [make() for _ in range(3)]  # warm: look-ups, caches, leaves' AccumulateGrad
    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        keep = [make() for _ in range(times)]
        kinds = Counter("Node" if isinstance(o, Node) else type(o).__name__
                        for o in gc.get_objects(generation=0) if o is not keep)
    finally:
        if was:
            gc.enable()
    assert len(keep) == times
    return kinds


def kept_by(make, leaves, times: int = 10) -> dict:
    """What each call of ``make`` leaves for the collector, less what a call that records nothing
    (``lambda: x``) leaves: this test's own objects. (A first round warms whatever this process
    makes once.)"""
    young_after(make, times)
    kinds = young_after(make, times)
    kinds.subtract(young_after(lambda: leaves["x"], times))
    return {kind: n / times for kind, n in kinds.items() if n}


@pytest.fixture
def leaves():
    return {"x": gradcli.tensor([[0.9, 1.2], [0.7, 1.4]], requires_grad=True),
            "y": gradcli.tensor([[1.1, 0.6], [1.3, 0.8]], requires_grad=True),
            "row": gradcli.tensor([0.75, 1.25], requires_grad=True)}


@pytest.mark.parametrize("expr", [
    lambda e: e["x"] * e["y"],  # record2
    lambda e: e["x"] * 1.5,  # record_number
    lambda e: e["x"] * e["row"],  # a broadcast input: its sizes kept for sum_to
    lambda e: e["x"].sin(),  # apply1
    lambda e: e["x"].sum(),  # the input's sizes kept for the backward's expand
], ids=["mul", "mul number", "broadcast", "sin", "sum"])
def test_a_recorded_op_keeps_its_node_and_its_tensor_only(leaves, expr):
    assert kept_by(lambda: expr(leaves), leaves) == {"Node": 1.0, "Tensor": 1.0}


def test_an_op_with_arguments_keeps_them_and_no_shape(leaves):
    """sum(1) keeps its arguments (the dims and keepdim: torch's saved dim and keepdim), not its
    shapes."""
    assert kept_by(lambda: leaves["x"].sum(1), leaves) == {"Node": 1.0, "Tensor": 1.0, "tuple": 2.0}


def test_sizes_are_one_tuple_per_value_and_the_table_is_bounded(monkeypatch):
    monkeypatch.setattr(node_module, "SIZES", {})
    monkeypatch.setattr(node_module, "_SIZES_MAX", 4)
    first = sizes((2, 3))
    assert sizes(tuple([2, 3])) is first
    assert sizes(((2, 3), (3,))) == ((2, 3), (3,))
    for n in range(10):
        assert sizes((n, n)) == (n, n)
    assert len(node_module.SIZES) <= 4


def test_shapes_kept_on_nodes_are_the_shared_ones(leaves):
    a = leaves["x"] * leaves["row"]
    b = leaves["x"] * leaves["row"]
    assert a.grad_fn._shape is b.grad_fn._shape == (2, 2)
    assert a.grad_fn._shapes is b.grad_fn._shapes == ((2, 2), (2,))
    assert isinstance(a, Tensor)
