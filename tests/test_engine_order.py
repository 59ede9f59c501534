"""The order in which backward runs nodes and hooks, against torch on random graphs.

The engine has two walks (engine._walk_plain for an ordinary ``backward()``, engine._walk_general
for targets, create_graph, anomaly mode and grad_fn hooks) and two ready queues (a sorted stack of
the roots beside a heap, or one heap). Tensor hooks on every intermediate and every leaf record
the order in which gradients arrive; it must be torch's, on graphs with many roots (a fan-out),
roots that are leaves, duplicated roots, chains, and nodes with two, three and four leaf inputs
(whose AccumulateGrads are ready at once: their order is the priority queue's tie-breaking).
"""

import random

import numpy as np
import pytest

import gradcli as gc
from helpers import assert_close_or_none, clean_engine_state  # noqa: F401

torch = pytest.importorskip("torch")


def _program(seed: int):
    """A random graph as steps: ("unary", name, i), ("binary", op, i, j), ("stack", [i, j, ...]),
    over tensors numbered in creation order (leaves first); and the roots, with repeats."""
    rng = random.Random(seed)
    n_leaves = rng.randint(1, 5)
    steps = []
    count = n_leaves
    for _ in range(rng.randint(1, 14)):
        kind = rng.choice(["unary", "binary", "binary", "stack", "number"])
        if kind == "unary":
            steps.append(("unary", rng.choice(["exp", "sin", "tanh"]), rng.randrange(count)))
        elif kind == "number":
            steps.append(("number", rng.choice(["mul", "add"]), rng.randrange(count)))
        elif kind == "binary":
            steps.append(("binary", rng.choice(["add", "mul", "sub"]), rng.randrange(count), rng.randrange(count)))
        else:
            steps.append(("stack", [rng.randrange(count) for _ in range(rng.randint(2, 4))]))
        count += 1
    roots = [rng.randrange(count) for _ in range(rng.randint(1, 6))]
    if rng.random() < 0.5:
        roots += [rng.randrange(n_leaves, count) for _ in range(rng.randint(1, 30))]  # a fan-out
    return n_leaves, steps, roots


def step_of(lib, values, step):
    """The tensor one step of ``_program`` makes from the tensors made so far."""
    if step[0] == "unary":
        return getattr(lib, step[1])(values[step[2]])
    if step[0] == "number":
        return values[step[2]] * 1.5 if step[1] == "mul" else values[step[2]] + 0.5
    if step[0] == "binary":
        a, b = values[step[2]], values[step[3]]
        return a + b if step[1] == "add" else a * b if step[1] == "mul" else a - b
    return lib.stack([values[i] for i in step[1]]).sum(0)


def _run(lib, n_leaves, steps, roots, node_hook: bool):
    order = []
    values = [lib.tensor([0.3 + 0.1 * i, 0.7 - 0.05 * i], requires_grad=True) for i in range(n_leaves)]
    for i, leaf in enumerate(values):
        leaf.register_hook(lambda g, i=i: order.append(("leaf", i)))
    for step in steps:
        out = step_of(lib, values, step)
        n = len(values)
        out.register_hook(lambda g, n=n: order.append(("t", n)))
        values.append(out)
    outs = [values[i] for i in roots]
    if node_hook:  # a hook on a grad_fn: the general walk
        fn = next((t.grad_fn for t in outs if t.grad_fn is not None), None)
        if fn is not None:
            fn.register_prehook(lambda g: order.append(("node",)))
    seed = lib.ones(2)
    lib.autograd.backward(outs, [seed] * len(outs))
    grads = [None if t.grad is None else np.asarray(t.grad.tolist()) for t in values[:n_leaves]]
    return order, grads


@pytest.mark.parametrize("node_hook", [False, True], ids=["plain", "general"])
@pytest.mark.parametrize("seed", range(120))
def test_hooks_run_in_torchs_order(seed, node_hook):
    n_leaves, steps, roots = _program(seed)
    order, grads = _run(gc, n_leaves, steps, roots, node_hook)
    torch_order, torch_grads = _run(torch, n_leaves, steps, roots, node_hook)
    assert order == torch_order
    assert_close_or_none(grads, torch_grads, rtol=1e-5)


def test_leaves_of_one_node_in_torchs_tie_order():
    """Four leaves stacked: their AccumulateGrads are ready at once, behind a fan-out of roots."""
    order = {}
    for lib in (gc, torch):
        seen = order[lib] = []
        leaves = [lib.tensor([1.0, 2.0], requires_grad=True) for _ in range(4)]
        for i, leaf in enumerate(leaves):
            leaf.register_hook(lambda g, i=i: seen.append(i))
        outs = [lib.stack(leaves).sum(0)] + [leaves[0] * k for k in range(1, 6)] + [lib.stack(leaves[1:]).sum(0)]
        lib.autograd.backward(outs, [lib.ones(2)] * len(outs))
    assert order[gc] == order[torch]


def test_repeated_seed_object_is_checked_for_every_output():
    """``[seed] * n`` is validated once per shape and dtype, not once for all: a later output of
    another shape still fails with torch's message."""
    x = gc.ones(2, requires_grad=True)
    outs = [x * 2, x * 3, (x * 4).sum()]
    seed = gc.ones(2)
    with pytest.raises(Exception) as err:
        gc.autograd.backward(outs, [seed] * 3)
    assert "Mismatch in shape: grad_output[2] has a shape of torch.Size([2]) and output[2] has a shape of " \
           "torch.Size([])" in str(err.value)
    y = gc.ones(2, dtype=gc.float64, requires_grad=True)
    gc.autograd.backward([x * 2, y * 2, x * 5], [seed] * 3)  # a float32 seed for a float64 output: cast
    assert x.grad.tolist() == [7.0, 7.0] and y.grad.tolist() == [2.0, 2.0] and y.grad.dtype == gc.float64


def _bench_cases():
    import sys
    from pathlib import Path
    bench = Path(__file__).resolve().parent.parent / "benchmarks"
    if str(bench) not in sys.path:
        sys.path.insert(0, str(bench))
    import bench_ops
    return bench_ops




def test_fan_out_of_every_op_matches_torch():
    """bench_ops.py's measurement in small: several outputs of each case from the same leaves, one
    backward with one seed object repeated: the leaves' gradients (summed in place in the walk's
    buffers) are torch's, and so is every output's grad_fn."""
    bench_ops = _bench_cases()
    for case in bench_ops.all_cases()[0]:
        grads = {}
        for lib in (gc, torch):
            env = bench_ops.environment(lib)
            outs = [case.call(lib, env) for _ in range(3)]
            lib.autograd.backward(outs, [lib.ones_like(outs[0])] * len(outs))
            # (a zeros tensor added: torch's sgn gives a ZeroTensor, which has no values to list)
            grads[lib] = {k: None if t.grad is None else
                          np.asarray((lib.zeros(tuple(t.grad.shape), dtype=t.grad.dtype) + t.grad).tolist())
                          for k, t in env.items() if t.requires_grad}
            grads[lib, "fn"] = [type(t.grad_fn).__name__ for t in outs]
        assert grads[gc, "fn"] == grads[torch, "fn"], case.label
        for name, ours in grads[gc].items():
            theirs = grads[torch][name]
            assert (ours is None) == (theirs is None), (case.label, name)
            if ours is not None:
                np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, err_msg=f"{case.label}: {name}")


@pytest.mark.parametrize("target", ["a", "c"])
def test_a_grad_fn_hook_registered_by_a_tensor_hook_during_backward_runs(target):
    """A tensor hook (user code, in the middle of a plain backward) registers a hook on a grad_fn
    not yet run (a), or on the one whose output it is hooked on (c): torch runs it."""
    seen = {}
    for lib in (gc, torch):
        log = seen[lib] = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a = x * 2
        c = a.exp() * 3
        node = a.grad_fn if target == "a" else c.grad_fn

        def hook(g, node=node, log=log):
            node.register_prehook(lambda gs: log.append("prehook"))
            log.append("tensor hook")
        c.register_hook(hook)
        c.sum().backward()
        log.append(x.grad.tolist())
    assert seen[gc] == seen[torch]


def test_copy_gives_the_overwritten_tensor_a_zero_gradient_as_torch():
    """``dst.copy_(src)`` on a tensor with history: torch's CopyBackwards sends zeros to ``dst``'s
    old history (its values are gone), so ``x.grad`` is zeros, not None; ``fill_`` did already."""
    for lib in (gc, torch):
        x = lib.ones(2, 2, requires_grad=True)
        y = lib.ones(2, 2, requires_grad=True)
        z = (x * 3).copy_(y)
        (z * 2).sum().backward()
        assert x.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]], lib.__name__
        assert y.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]], lib.__name__
