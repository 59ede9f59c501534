"""grad_fn introspection against torch: _saved_* fields, node hooks, metadata, post-accumulate hooks,
saved_tensors_hooks, and the language reaching them."""

import json

import numpy as np
import pytest

import gradcli as gc
from gradcli.autograd.graph import saved_tensors_hooks
from gradcli.cli.fast import main as cli_main

torch = pytest.importorskip("torch")


def leaves(lib):
    x = lib.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
    w = lib.tensor([[1., 2.], [3., 4.], [5., 6.]], requires_grad=True)
    z = lib.tensor([[2., 1., 3.], [1., 2., 2.]], requires_grad=True)
    return x, w, z


OPS = {
    "mul": lambda x, w, z: x * z, "mul_int": lambda x, w, z: x * 2, "mul_float": lambda x, w, z: x * 2.5,
    "div": lambda x, w, z: x / z, "pow": lambda x, w, z: x ** 2, "pow_tensor": lambda x, w, z: x ** z,
    "exp": lambda x, w, z: x.exp(), "sin": lambda x, w, z: x.sin(), "cos": lambda x, w, z: x.cos(),
    "tanh": lambda x, w, z: x.tanh(), "sigmoid": lambda x, w, z: x.sigmoid(), "log": lambda x, w, z: x.log(),
    "mm": lambda x, w, z: x @ w, "sum": lambda x, w, z: x.sum(), "sum_dim": lambda x, w, z: x.sum(1),
    "mean": lambda x, w, z: x.mean(), "mean_dim": lambda x, w, z: x.mean(1, keepdim=True),
    "select": lambda x, w, z: x[1], "index": lambda x, w, z: x[[0, 1]], "slice": lambda x, w, z: x[:, 1:],
    "add": lambda x, w, z: x + z, "sub": lambda x, w, z: x - z, "add_scalar": lambda x, w, z: x + 1,
    "relu": lambda x, w, z: x.relu(), "view": lambda x, w, z: x.view(6), "t": lambda x, w, z: x.t(),
    "softmax": lambda x, w, z: x.softmax(1), "neg": lambda x, w, z: -x,
}


def plain(value):
    if isinstance(value, (torch.Tensor, gc.Tensor)):
        return ("tensor", tuple(value.shape), str(value.dtype).split(".")[-1],
                None if value.grad_fn is None else value.grad_fn.name(), value.requires_grad)
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    return value


@pytest.mark.parametrize("name", OPS)
def test_saved_fields_as_torch_names_and_fills_them(name):
    (tx, tw, tz), (gx, gw, gz) = leaves(torch), leaves(gc)
    theirs, ours = OPS[name](tx, tw, tz).grad_fn, OPS[name](gx, gw, gz).grad_fn
    fields = sorted(a for a in dir(theirs) if a.startswith("_saved_"))
    assert sorted(a for a in dir(ours) if a.startswith("_saved_")) == fields
    for field in fields:
        t, g = getattr(theirs, field), getattr(ours, field)
        assert plain(g) == plain(t), field
        if isinstance(t, torch.Tensor):
            assert np.allclose(np.asarray(g.tolist()), t.detach().numpy(), rtol=1e-6)
            assert (t is tx) == (g is gx), field  # a saved leaf is the leaf itself


def test_saved_tensors_are_freed_by_backward_but_not_the_rest():
    x = gc.tensor([1., 2.], requires_grad=True)
    y = (x ** 3).sum(0)
    node = y.grad_fn.next_functions[0][0]
    y.backward()
    with pytest.raises(gc.AutogradError, match="^Trying to backward through the graph a second time"):
        node._saved_self
    assert node._saved_exponent == 3 and y.grad_fn._saved_dim == (0,)
    with pytest.raises(AttributeError, match="^'PowBackward0' object has no attribute '_saved_other'$"):
        node._saved_other


def run_hooks(lib):
    log = []
    x = lib.tensor([1., 2.], requires_grad=True)
    n = (x * x).sum()
    n.grad_fn.register_prehook(lambda go: log.append(("pre", [g.tolist() for g in go])))
    n.grad_fn.register_hook(lambda gi, go: log.append(("post", [g.tolist() for g in gi], [g.tolist() for g in go])))
    m = n.grad_fn.next_functions[0][0]
    m.register_hook(lambda gi, go: (gi[0] * 10, gi[1]))
    m.register_prehook(lambda go: (go[0] * 2,))
    handle = m.register_prehook(lambda go: log.append("removed"))
    handle.remove()
    n.backward()
    log.append(("grad", x.grad.tolist()))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("postacc", t.grad.tolist())))
    (x * 3).sum().backward()
    a = x.detach().requires_grad_()
    acc = (a * 2).grad_fn.next_functions[0][0]
    acc.register_hook(lambda gi, go: log.append(("acc post", gi, [g.tolist() for g in go])))
    acc.register_prehook(lambda go: log.append(("acc pre", [g.tolist() for g in go])))
    (a * 2).sum().backward()
    m.metadata["note"] = 1
    log.append((m.metadata, n.grad_fn.name(), acc.name()))
    return log


def test_node_hooks_metadata_and_post_accumulate_hooks_as_torch():
    assert run_hooks(gc) == run_hooks(torch)


def test_node_hooks_under_create_graph():
    for lib in (gc, torch):
        x = lib.tensor([1., 2.], requires_grad=True)
        y = (x * x).sum()
        y.grad_fn.next_functions[0][0].register_hook(lambda gi, go: (gi[0] * 3, gi[1]))
        g, = lib.autograd.grad(y, x, create_graph=True)
        assert g.tolist() == [4., 8.] and g.requires_grad


def run_saved_hooks(lib, hooks):
    log = []
    x = lib.tensor([1., 2.], requires_grad=True)

    def pack(t):
        log.append(("pack", [round(v, 5) for v in t.tolist()], t is x))
        return t * 1

    def unpack(t):
        log.append(("unpack", [round(v, 5) for v in t.tolist()]))
        return t

    with hooks(pack, unpack):
        y = x.exp() * x
    z = x * 2  # outside: no hooks
    log.append([round(v, 5) for v in y.grad_fn._saved_self.tolist()])
    y.sum().backward()
    z.sum().backward()
    log.append([round(v, 4) for v in x.grad.tolist()])
    return log


def test_saved_tensors_hooks_as_torch():
    assert run_saved_hooks(gc, saved_tensors_hooks) == run_saved_hooks(torch, torch.autograd.graph.saved_tensors_hooks)


def test_a_program_reaches_the_fields_and_hooks(capsys):
    program = ("x = tensor([1.0, 2.0], requires_grad=True)\ny = x.exp() * x\n"
               "print(y.grad_fn._saved_other)\nprint(y.grad_fn.next_functions[0][0]._saved_result)\n"
               "h = y.grad_fn.register_prehook(lambda go: print(go))\n"
               "x.register_post_accumulate_grad_hook(lambda t: print(t.grad))\ny.sum().backward()")
    code = cli_main(["eval", program, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    assert doc["printed"] == ["tensor([1., 2.], requires_grad=True)", "tensor([2.7183, 7.3891], grad_fn=<ExpBackward0>)",
                              "(tensor([1., 1.]),)", "tensor([ 5.4366, 22.1672])"]
    code = cli_main(["eval", "x = tensor([1.0], requires_grad=True)\nprint((x * 2).grad_fn._saved_bogus)", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 2 and doc["error"]["message"] == "'MulBackward0' object has no attribute '_saved_bogus'"
