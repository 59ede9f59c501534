"""How the recording and backward paths stay on CPython's specialised instructions (node.BLANK,
node.specialised, _walk_plain's loop), and that doing so changes nothing a program can see: every
node is of its op's class, named and linked as torch's, whichever path made it."""

import subprocess
import sys
import textwrap

import pytest

import gradcli as gc
from gradcli.autograd import node as node_module
from gradcli.autograd.node import BLANK, NODE_CLASSES, Node


def _graph(*roots):
    """Every node reachable from the roots' grad_fns (an explicit stack)."""
    seen, stack = [], [t.grad_fn for t in roots]
    while stack:
        n = stack.pop()
        if n is None or any(n is s for s in seen):
            continue
        seen.append(n)
        stack.extend(child for child, _ in n.next_functions)
    return seen


def test_every_recording_path_leaves_nodes_of_their_ops_class():
    x = gc.tensor([[0.5, 1.2], [0.8, 1.4]], requires_grad=True)
    y = gc.tensor([[1.5, 0.2], [0.3, 2.0]], requires_grad=True)
    outs = [
        x * y, x + 1.5, 2.0 - x,          # record2, record_number, a reflected number
        x.exp(), x.sum(1),                # apply1
        x.t(), x.view(4), x[0],           # view_of
        gc.lerp(x, y, 0.25), gc.addcmul(x, x, y), gc.where(x > 1, x, y),  # three tensors
        gc.cat([x, y]),                   # cat's own node
    ]
    loss = sum(o.sum() for o in outs)
    names = set()
    for n in _graph(loss):
        assert type(n) is not BLANK and not isinstance(n, BLANK)
        if type(n).__name__ != "AccumulateGrad":
            assert NODE_CLASSES[type(n).__name__] is type(n)
        names.add(type(n).__name__)
    assert {"MulBackward0", "AddBackward0", "RsubBackward1", "ExpBackward0", "SumBackward1", "TBackward0",
            "ViewBackward0", "SelectBackward0", "LerpBackward0", "AddcmulBackward0", "WhereBackward0",
            "CatBackward0"} <= names
    loss.backward()
    assert x.grad is not None and y.grad is not None


def test_gradients_through_blank_made_nodes_match_torch():
    torch = pytest.importorskip("torch")

    def program(lib):
        x = lib.tensor([[0.5, 1.2], [0.8, 1.4]], requires_grad=True)
        y = lib.tensor([[1.5, 0.2], [0.3, 2.0]], requires_grad=True)
        z = (x * y + x / 2.0 - y.exp() * 0.5).t().reshape(4)[1:] * 3
        w = lib.lerp(x, y, 0.25) * lib.addcmul(x, x, y)
        (z.sum() + w.mean()).backward()
        return x.grad.tolist(), y.grad.tolist(), type(z.grad_fn).__name__, type(w.grad_fn).__name__

    ours, theirs = program(gc), program(torch)
    assert ours[2:] == theirs[2:]
    for a, b in zip(ours[:2], theirs[:2]):
        assert [v for row in a for v in row] == pytest.approx([v for row in b for v in row], rel=1e-6)


def test_a_node_made_blank_takes_a_define_node_class_only():
    """BLANK has Node's layout (no slots of its own), which is what lets a node change class."""
    assert BLANK.__slots__ == () and BLANK.__bases__ == (Node,)
    assert BLANK.__basicsize__ == NODE_CLASSES["MulBackward0"].__basicsize__
    assert "_Blank" not in NODE_CLASSES


def test_each_node_class_backpropagates_through_a_copy_of_its_own():
    mul, add = NODE_CLASSES["MulBackward0"], NODE_CLASSES["AddBackward0"]
    assert mul.apply is not add.apply and mul.apply.__code__ is not add.apply.__code__
    assert mul.apply.__code__.co_code == add.apply.__code__.co_code  # the same function
    copy = node_module.specialised(node_module._apply_2)
    assert copy is not node_module._apply_2 and copy.__code__ is not node_module._apply_2.__code__
    assert (copy.__name__, copy.__qualname__, copy.__doc__, copy.__globals__) == \
        (node_module._apply_2.__name__, node_module._apply_2.__qualname__, node_module._apply_2.__doc__,
         node_module._apply_2.__globals__)


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="CPython 3.11's adaptive instruction names")
def test_one_backward_of_one_input_nodes_runs_the_walk_specialised():
    """A conditional loop end does not warm a function up in 3.11: with ``while node is not None``,
    a process's first seven backwards of a chain of one-input nodes ran the walk unspecialised."""
    code = textwrap.dedent("""
        import dis, io, contextlib
        import gradcli as gc
        from gradcli.autograd import engine
        x = gc.tensor([0.5, 1.5], requires_grad=True)
        y = x
        for _ in range(200):
            y = y.sin()
        y.sum().backward()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            dis.dis(engine._walk_plain, adaptive=True)
        print("RESUME_QUICK" in out.getvalue())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"
