"""More of torch.nn.functional: the activations (gelu, silu, leaky_relu, elu, softplus, hardtanh,
relu6, logsigmoid, softsign, tanhshrink), F.linear and torch.addmm, F.dropout. A PyTorch program
run by ``gradcli eval`` must print what torch prints (values, gradients, grad_fn names); dropout's
mask is torch's for a seed; errors as torch's. The oracle, gradcheck and benchmark tables cover
each op's values, gradients and graphs."""

import numpy as np
import pytest

import gradcli as gc
from gradcli.ops import nn_functional as NF
from helpers import clean_engine_state, error_text  # noqa: F401
from test_lang_pytorch import same_as_torch

torch = pytest.importorskip("torch")

PROGRAM = """
import torch
import torch.nn.functional as F
x = torch.tensor([[-2.5, -0.75, 0.0], [0.5, 1.25, 2.75]], requires_grad=True)
acts = [F.gelu(x), F.gelu(x, approximate='tanh'), F.silu(x), F.leaky_relu(x), F.leaky_relu(x, 0.2), F.elu(x, 0.5),
        F.softplus(x), F.softplus(x, beta=2, threshold=1.5), F.hardtanh(x), F.hardtanh(x, -0.5, 2.0), F.relu6(x * 3),
        F.logsigmoid(x), F.softsign(x), F.tanhshrink(x)]
for a in acts:
    print(a, a.grad_fn.name())
y = x * 1
F.leaky_relu(y, 0.1, inplace=True)
z = x * 1
F.elu(z, inplace=True)
h = F.hardtanh(x * 1, inplace=True)
print(y.grad_fn.name(), z.grad_fn.name(), h.grad_fn.name())
total = sum(a.sum() for a in acts) + (y * z * h).sum()
total.backward()
print(total, x.grad)
w = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], requires_grad=True)
b = torch.tensor([0.1, -0.2], requires_grad=True)
outs = [F.linear(x, w), F.linear(x, w, b), F.linear(x[0], w, b), F.linear(x.unsqueeze(0), w, b),
        torch.addmm(b, x, w.t(), beta=0.5, alpha=2)]
for o in outs:
    print(o, o.grad_fn.name(), [f.name() for f, _ in o.grad_fn.next_functions])
loss = sum(o.pow(2).sum() for o in outs)
x.grad = None
loss.backward()
print(loss, x.grad, w.grad, b.grad)
print(F.dropout(x, 0.3, training=False) is x, F.dropout(x, 0.0) is x)
torch.manual_seed(3)
d = F.dropout(torch.ones(2, 8) * x.sum(), 0.4)
print(d, d.grad_fn.name())
q = torch.tensor([-1.5, 0.25, 2.0], requires_grad=True)
g, = torch.autograd.grad(F.gelu(q).sum(), q, create_graph=True)
print(g, g.grad_fn.name(), [None if f is None else f.name() for f, _ in g.grad_fn.next_functions])
"""


def test_program_prints_what_torch_prints():
    same_as_torch(PROGRAM)


@pytest.mark.parametrize("p", [0.2, 0.5, 0.75, 1 / 3, 0.999, 1.0])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_dropout_mask_is_torchs_for_a_seed(p, dtype):
    torch.manual_seed(11)
    gc.manual_seed(11)
    xt = torch.randn(5, 37, dtype=getattr(torch, dtype), requires_grad=True)
    xg = gc.randn(5, 37, dtype=getattr(gc, dtype), requires_grad=True)
    yt, yg = torch.nn.functional.dropout(xt, p), NF.dropout(xg, p)
    assert np.array_equal(yt.detach().numpy(), np.asarray(yg.tolist()))
    yt.sum().backward()
    yg.sum().backward()
    assert np.array_equal(xt.grad.numpy(), np.asarray(xg.grad.tolist()))
    assert type(yg.grad_fn).__name__ == type(yt.grad_fn).__name__ == "MulBackward0"


@pytest.mark.parametrize("p", [0.3, 1.0])
def test_dropout_in_place_is_torchs_for_a_seed(p):
    torch.manual_seed(5)
    gc.manual_seed(5)
    xt, xg = torch.randn(4, 9), gc.randn(4, 9)
    yt, yg = torch.nn.functional.dropout(xt, p, inplace=True), NF.dropout(xg, p, inplace=True)
    assert yt is xt and yg is xg
    assert np.array_equal(xt.numpy(), np.asarray(xg.tolist()))


@pytest.mark.parametrize("call", [
    lambda F, L: F.dropout(L.ones(2), 1.5),
    lambda F, L: F.gelu(L.ones(2), approximate="exact"),
    lambda F, L: F.gelu(L.tensor([1, 2])),
    lambda F, L: F.elu(L.tensor([1, 2])),
    lambda F, L: F.softplus(L.tensor([1, 2])),
    lambda F, L: F.linear(L.ones(2, 4), L.ones(5, 3), L.ones(5)),
    lambda F, L: L.addmm(L.ones(5), L.ones(2, 4), L.ones(3, 5)),
    lambda F, L: L.addmm(L.ones(4), L.ones(2, 4), L.ones(4, 3)),
    lambda F, L: L.addmm(L.ones(3, 3), L.ones(2, 4), L.ones(4, 3)),
    lambda F, L: L.addmm(L.ones(1, 1, 3), L.ones(2, 4), L.ones(4, 3)),
])
def test_errors_as_torchs(call):
    with pytest.raises(Exception) as theirs:
        call(torch.nn.functional, torch)
    with pytest.raises(Exception) as ours:
        call(NF, gc)
    assert error_text(ours.value) == error_text(theirs.value)
    assert isinstance(ours.value, type(theirs.value))
