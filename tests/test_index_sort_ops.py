"""The index and sort ops in the language: a PyTorch program using index_select, gather, scatter,
scatter_add, masked_select, repeat, sort, topk, kthvalue, median and bmm prints what torch prints
(values, gradients, grad_fn names, return_types and their .values/.indices), the gradient's own
graph under create_graph is torch's, and bad indices fail with torch's messages (exit 2)."""

import pytest

import gradcli as gc
from test_lang_pytorch import run, same_as_torch

torch = pytest.importorskip("torch")

PROGRAM = """
import torch
x = torch.tensor([[0.5, -1.5, 2.0, 0.25], [3.0, 1.0, -0.75, 1.5], [-2.0, 0.125, 0.875, -0.5]], requires_grad=True)
idx = torch.tensor([[2, 0, 1, 0], [1, 2, 0, 2]])
g = x.gather(0, idx)
s = x.scatter(0, idx, g * 2)
a = torch.scatter_add(x, 0, idx, g)
v = x.scatter(1, torch.tensor([[3], [0], [1]]), 9.5)
i = torch.index_select(x, -1, torch.tensor([3, 0, 3]))
m = x.masked_select(x > 0.4)
r = x[0].repeat(2, 2)
print(g, s, a, v, i, m, r, sep="\\n")
print(g.grad_fn.name(), s.grad_fn.name(), a.grad_fn.name(), v.grad_fn.name(), i.grad_fn.name(), m.grad_fn.name(), r.grad_fn.name())
srt = x.sort(1, descending=True)
print(srt)
print(srt.values, srt.indices, type(srt), srt.values.grad_fn.name())
values, indices = torch.topk(x, 2, dim=0, largest=False)
print(values, indices, torch.argsort(x, 1))
k = x.kthvalue(2, 1)
med = x.median(0, keepdim=True)
print(k, med, x.median(), x.median().grad_fn.name(), k.values.grad_fn.name(), med.values.grad_fn.name())
b = torch.bmm(x.view(1, 3, 4), x.t().reshape(1, 4, 3))
print(b.grad_fn.name(), b.grad_fn.next_functions[0][0].name())
total = g.sum() + (s * s).sum() + a.sum() + v.sum() + (i * i).sum() + m.sum() + r.sum()
total = total + (srt.values * torch.arange(4.0)).sum() + values.sum() + k.values.sum() + med.values.sum() + x.median() + b.sum()
total.backward()
print(x.grad)
y = x.detach().requires_grad_()
gx, = torch.autograd.grad((y.sort(0).values ** 2).sum() + (y.gather(1, idx[:, :2].t()) ** 2).sum(), y, create_graph=True)
print(gx.grad_fn.name(), [f.name() for f, _ in gx.grad_fn.next_functions if f is not None])
print([(None if f is None else f.name(), n) for f, n in gx.grad_fn.next_functions[0][0].next_functions])
x2 = torch.zeros(2, 3)
x2.scatter_(1, torch.tensor([[2], [0]]), torch.tensor([[1.0], [2.0]]))
x2.scatter_add_(0, torch.tensor([[1, 1, 1]]), torch.ones(1, 3))
print(x2)
"""


def test_index_and_sort_program_prints_what_torch_prints():
    same_as_torch(PROGRAM)


BAD = [
    "torch.ones(3, 4).gather(1, torch.tensor([[4]]))",
    "torch.ones(3, 4).gather(1, torch.tensor([[-1]]))",
    "torch.ones(3, 4).gather(1, torch.tensor([[0.0]]))",
    "torch.ones(3, 4).gather(1, torch.tensor([0]))",
    "torch.ones(3, 4).gather(1, torch.tensor([[0]] * 4))",
    "torch.ones(3, 4).index_select(1, torch.tensor([4]))",
    "torch.ones(3, 4).index_select(1, torch.tensor([0.0]))",
    "torch.ones(3, 4).index_select(1, torch.tensor([[0]]))",
    "torch.ones(3, 4).index_select(2, torch.tensor([0]))",
    "torch.ones(3, 4).scatter(1, torch.tensor([[4]]), torch.ones(3, 4))",
    "torch.ones(3, 4).scatter(1, torch.tensor([[0, 1]] * 3), torch.ones(3, 1))",
    "torch.ones(3, 4).scatter(1, torch.tensor([[0]]), torch.ones(3, 4, dtype=torch.float64))",
    "torch.ones(3, 4).scatter_add(1, torch.tensor([[0]]), 1.0)",
    "torch.ones(3, 4).masked_select(torch.tensor([1, 0, 1, 0]))",
    "torch.ones(3, 4).masked_select(torch.tensor([True, False]))",
    "torch.ones(3, 4).repeat(2)",
    "torch.ones(3, 4).topk(5, 1)",
    "torch.ones(3, 4).kthvalue(0, 1)",
    "torch.zeros(0, 3).median(0)",
    "torch.bmm(torch.ones(2, 2, 3), torch.ones(2, 4, 2))",
    "torch.bmm(torch.ones(2, 3), torch.ones(2, 3, 2))",
    "x = torch.ones(2, 5, requires_grad=True)\nx.scatter_add(0, torch.tensor([[1, 0, 1]]), (x * 2)[:, :4]).sum().backward()",
]


@pytest.mark.parametrize("src", BAD)
def test_bad_indices_fail_with_torchs_message(src):
    program = "import torch\n" + src
    try:
        exec(compile(program, "<torch>", "exec"), {})
    except Exception as exc:  # noqa: BLE001  (torch's message, whatever its type)
        expected = str(exc).split("\n")[0]
    else:
        pytest.fail("torch accepted it")
    code, doc = run(program)
    assert doc["error"]["message"] == expected
    assert code == (3 if "backward" in src else 2)  # a bad program: 2; a failing backward: 3 (SPEC)


@pytest.mark.parametrize("values", [[float("nan"), 1.0], [1.0, float("nan"), 2.0], [3.0, 1.0, 2.0],
                                    [[2.0, float("nan")], [float("nan"), 0.5]], [2.0, 1.0]])
def test_median_of_everything_is_nan_where_any_element_is(values):
    """torch's median() (no dim) is NaN where the input holds one (it sorted NaN last and picked the
    middle: median([nan, 1]) was 1), its gradient shared by the NaNs (evenly_distribute_backward)."""
    x, tx = gc.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    got, want = x.median(), tx.median()
    assert str(got) == str(want)
    got.backward()
    want.backward()
    assert str(x.grad) == str(tx.grad)
