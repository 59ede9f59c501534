"""What the tutorials' code needs beyond the seed articles' (examples/tutorials): ``torch.empty``,
``Tensor.new_*``, ``out=`` on torch functions, ``arange(end=...)``, ``type(...)``, a device printed
as ``cpu``, ``from __future__ import``. Each program runs under gradcli and, where torch is
installed, under torch itself: the printed lines must be the same; errors have torch's words and the
SPEC's exit codes."""

import pytest

from test_lang_pytorch import run, same_as_torch


def error_of(program, code):
    got, doc = run(program)
    assert got == code, doc["error"]
    return doc["error"]["message"]


# ------------------------------------------------------------------------------ printing

def test_a_device_prints_as_torch_prints_it():
    same_as_torch("""
import torch
x = torch.ones(2)
print(x.device)
print(f"{x.device}", str(x.device), f"{x.device!r}", [x.device], (x.device,), {"d": x.device})
print(f"{x.dtype!r} {x.shape!r} {x!r} {'a'!r} {1.5!r} {[1, 'b']!r}")
""")


def test_type_prints_and_compares_as_pythons():
    same_as_torch("""
import torch
x = torch.ones(2, requires_grad=True)
y = x * 2
print(type(1.5), type(3), type("s"), type(True), type(None), type([1]), type((1,)), type({}))
print(type(x), type(x.dtype), type(x.shape), type(x.device), type(y.grad_fn), type(torch.max(y, 0)))
print(type(type(1.5)), type(x.grad_fn), type(y.grad_fn.next_functions[0][0]))
print(type(1.5) == float, type(3) == float, type(x) == torch.Tensor, type(x) != torch.Tensor)
print(isinstance(x, type(y)), isinstance(2.5, type(1.0)), isinstance(2, (type(1.0), str)))
agg = y.sum()
print(agg.item(), type(agg.item()), type(lambda a: a))
""")


def test_type_is_neither_callable_nor_has_members():
    assert "not callable" in error_of("t = type(1.5)\nt('3')", 2)
    assert error_of("t = type(1.5)\nt.mro", 2)


# ------------------------------------------------------------------------------ creation

def test_empty_and_empty_like_have_the_shape_dtype_and_flags_asked_for():
    same_as_torch("""
import torch
for e in (torch.empty(5, 3), torch.empty((2,)), torch.empty(size=(1, 2)), torch.empty(0),
          torch.empty(2, dtype=torch.float64, requires_grad=True),
          torch.empty_like(torch.ones(2, 3, dtype=torch.long)),
          torch.empty_like(torch.ones(2), dtype=torch.float16, requires_grad=True)):
    print(e.shape, e.dtype, e.requires_grad, e.is_leaf, e.grad_fn)
""")


def test_new_methods_take_the_tensors_dtype_and_device_unless_given():
    same_as_torch("""
import torch
x = torch.ones(2, dtype=torch.float64); i = torch.tensor([1, 2])
print(x.new_ones(2, 3), x.new_ones((2,)).shape, x.new_ones(size=(1, 2)).shape, x.new_zeros(2, dtype=torch.float32))
print(x.new_full((2,), 3), i.new_full((2,), 3.7), x.new_full(size=(1,), fill_value=2.0), i.new_zeros([2]))
print(i.new_tensor([1.5, 2.5]), x.new_tensor([1, 2]), x.new_tensor([1.0], requires_grad=True))
print(x.new_empty(2).shape, x.new_ones([]).shape, x.new_ones(()).shape, x.new_empty((2, 1)).dtype)
w = torch.ones(2, requires_grad=True)
n = w.new_ones(2)
print(n.requires_grad, n.is_leaf, w.new_zeros(1, requires_grad=True))
""")


@pytest.mark.parametrize("program, message", [
    ("i = tensor([1])\ni.new_ones(2, requires_grad=True)", "Only Tensors of floating point and complex dtype can require gradients"),
    ("x = ones(1)\nx.new_full(2, 1.0)", "new_full(): argument 'size' (position 1) must be tuple of ints, not int"),
    ("x = ones(1)\nx.new_ones(2, size=(2,))", "new_ones() got multiple values for argument 'size'"),
    ("x = ones(1)\nx.new_ones(-1)", "Trying to create tensor with negative dimension -1: [-1]"),
])
def test_new_methods_refuse_what_torch_refuses(program, message):
    assert error_of(program, 2) == message


def test_arange_takes_end_as_a_keyword():
    same_as_torch("""
import torch
print(torch.arange(end=3), torch.arange(start=2, end=5), torch.arange(3), torch.arange(1, 4), torch.arange(4.0))
print(torch.arange(start=1, end=4, step=2), torch.arange(end=2.5), torch.arange(0, end=3, dtype=torch.float64))
""")
    assert error_of("arange()", 2) == "arange() missing required argument 'end'"


# ------------------------------------------------------------------------------ out=

def test_out_receives_the_result_and_is_returned():
    same_as_torch("""
import torch
torch.manual_seed(0)
x = torch.rand(5, 3); y = torch.rand(5, 3)
result = torch.empty(5, 3)
r = torch.add(x, y, out=result)
print(r is result, result, result.requires_grad, result.grad_fn)
m = torch.rand_like(x[:3, :3])
torch.matmul(x[:3], y[:3].T, out=m)
print(m, torch.allclose(m, x[:3] @ y[:3].T))
z = torch.rand_like(x)
print(torch.mul(x, x, out=z) is z, torch.equal(z, x * x))
s = torch.zeros(5)
torch.sum(x, 1, out=s)
print(s, torch.allclose(s, x.sum(1)))
v, i = torch.zeros(5), torch.zeros(5, dtype=torch.long)
got = torch.max(x, 1, out=(v, i))
print(v, i, got[0] is v, got[1] is i)
c = torch.zeros(10, 3)
torch.cat([x, y], out=c)
print(c.sum(), torch.add(x, 1, out=None).shape)
""")


def test_out_is_cast_to_its_dtype_where_torch_casts_and_refused_where_it_does_not():
    same_as_torch("""
import torch
o = torch.zeros(2, dtype=torch.float64)
torch.add(torch.ones(2), 1, out=o)
print(o)
h = torch.zeros(2, dtype=torch.float16)
torch.add(torch.ones(2, dtype=torch.float64), 1, out=h)
print(h)
f = torch.zeros(2)
torch.gt(torch.ones(2), 0, out=f)
print(f)
l = torch.zeros(2, dtype=torch.long)
torch.add(torch.tensor([1, 2]), 3, out=l)
print(l)
""")
    assert error_of("l = zeros(2, dtype=long)\nadd(ones(2), 1, out=l)", 2) == \
        "result type Float can't be cast to the desired output type Long"
    assert error_of("b = zeros(2, dtype=bool)\nadd(ones(2), 1, out=b)", 2) == \
        "result type Float can't be cast to the desired output type Bool"


def test_an_out_of_another_shape_is_resized_with_torchs_warning():
    code, doc = run("import torch\nr = torch.ones(5, 3)\ntorch.add(torch.ones(2), 1, out=r)\nprint(r)\n"
                    "e = torch.empty(0)\ntorch.mul(torch.ones(2, 2), 2, out=e)\nprint(e)")
    assert code == 0, doc["error"]
    assert doc["printed"] == ["tensor([2., 2.])", "tensor([[2., 2.],\n        [2., 2.]])"]
    assert [(w["line"], w["category"]) for w in doc["warnings"]] == [(3, "UserWarning")]  # none for 0 elements
    assert doc["warnings"][0]["message"].startswith(
        "An output with one or more elements was resized since it had shape [5, 3], which does not match the "
        "required output shape [2]. This behavior is deprecated")


def test_an_out_that_is_a_view_writes_through_to_its_base():
    same_as_torch("""
import torch
base = torch.zeros(4)
v = base[:2]
torch.add(torch.ones(2), 1, out=v)
print(v, base)
""")
    assert error_of("base = zeros(4)\nv = base[:2]\nadd(ones(3), 1, out=v)", 2) == \
        "out= is a view of shape [2], and the result's shape is [3]: gradcli resizes only a tensor that is not a view"


MESSAGE = "functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."


@pytest.mark.parametrize("program, name", [
    ("g = ones(2, requires_grad=True)\nadd(g, ones(2), out=zeros(2))", "add"),
    ("add(ones(2), ones(2), out=zeros(2, requires_grad=True))", "add"),
    ("g = ones(2, requires_grad=True)\ncat([ones(1), g], out=zeros(3))", "cat"),
    ("import torch\ng = ones(2, 2, requires_grad=True)\ntorch.max(g, 1, out=(zeros(2), zeros(2, dtype=long)))", "max"),
])
def test_out_refuses_an_argument_that_requires_grad_as_torch(program, name):
    assert error_of(program, 3) == f"{name}(): {MESSAGE}"


def test_under_no_grad_out_takes_any_argument():
    same_as_torch("""
import torch
x = torch.ones(2, requires_grad=True)
with torch.no_grad():
    o = torch.zeros(2, requires_grad=True)
    torch.mul(x, 2, out=o)
print(o, o.requires_grad, o.is_leaf, o.grad_fn)
""")


@pytest.mark.parametrize("program, message", [
    ("add(ones(2), 1, out=5)", "add(): argument 'out' must be Tensor, not int"),
    ("import torch\ntorch.max(ones(2, 2), 1, out=zeros(2))", "max(): argument 'out' must be a tuple of 2 Tensors"),
    ("x = ones(2)\nx.add_(ones(2), out=zeros(2))", "add_() got an unexpected keyword argument 'out'"),
    ("x = ones(2)\nx.add(ones(2), out=zeros(2))", "add() got an unexpected keyword argument 'out'"),
    ("import torch.nn.functional as F\nF.relu(ones(2), out=zeros(2))", "relu() got an unexpected keyword argument 'out'"),
])
def test_out_where_it_does_not_fit_is_refused_with_exit_2(program, message):
    assert error_of(program, 2) == message


# ------------------------------------------------------------------------------ __future__

def test_from_future_imports_change_nothing():
    same_as_torch("from __future__ import print_function, division\nfrom __future__ import annotations\n"
                  "import torch\nprint(torch.ones(1) / 2, 7 / 2)")
    assert error_of("from __future__ import braces", 2) == "future feature braces is not defined"


# ------------------------------------------------------------------------------ Tensor methods

def test_casts_views_and_layout_methods_as_torch():
    same_as_torch("""
import torch
x = torch.ones(2, 3, requires_grad=True)
y = torch.ones(3, 2, dtype=torch.float64)
a = x.view_as(y); print(a.grad_fn.name(), a.shape)
c = x.reshape_as(y); print(c.grad_fn.name())
d = x.type_as(y); print(d.grad_fn.name(), d.dtype, x.type_as(x) is x)
print(x.type(torch.float32) is x, x.type(torch.float64).grad_fn.name(), x.type('torch.DoubleTensor').dtype, x.type())
print(x.int().dtype, x.int().grad_fn, x.bool().requires_grad, x.half().grad_fn.name(), x.half().dtype, x.bool())
print(x.long().requires_grad, x.long().grad_fn, x.to(torch.int64).is_leaf, x.to(torch.float64).grad_fn.name())
print(x.t().contiguous().grad_fn.name(), x.contiguous() is x, x.t().is_contiguous(), x[:, 1].is_contiguous(),
      x[1].is_contiguous(), x.expand(2, 2, 3).is_contiguous(), torch.ones(3, 1).t().is_contiguous(),
      x.permute(1, 0).contiguous().is_contiguous())
z = x.t().contiguous()
z.sum().backward()
print(x.grad, z.is_contiguous(), z)
print(torch.is_tensor(x), torch.is_tensor([1]), torch.numel(x), torch.is_floating_point(x),
      torch.ones(2, dtype=torch.long).is_floating_point(), x.is_floating_point())
print(x.double().type(), torch.ones(2, dtype=torch.int32).type(), x.int().type(), x.long().type(), x.bool().type())
print(x.grad_fn, (x * 2).grad_fn.next_functions[0][0].name(), (x * 2).grad_fn.name())
""")


def test_the_default_dtype_is_the_programs_own_run_by_run():
    same_as_torch("""
import torch
print(torch.get_default_dtype())
torch.set_default_dtype(torch.float64)
print(torch.ones(1).dtype, torch.tensor([1.5]).dtype, torch.get_default_dtype(), torch.rand(1).dtype)
torch.set_default_dtype(torch.float32)
""")
    code, doc = run("set_default_dtype(float64)\nprint(ones(1).dtype)")
    assert code == 0 and doc["printed"] == ["torch.float64"]
    code, doc = run("print(ones(1).dtype, get_default_dtype())")  # the next run starts from --dtype
    assert code == 0 and doc["printed"] == ["torch.float32 torch.float32"]


def test_random_fills_in_place_draw_torchs_numbers_and_record_torchs_nodes():
    same_as_torch("""
import torch
torch.manual_seed(0)
print(torch.empty(3).uniform_(-1, 1), torch.empty(3).normal_(2, 0.5))
print(torch.ones(2, dtype=torch.float16).uniform_(), torch.ones(20, dtype=torch.float64).normal_(1, 2))
w = torch.empty(2, 3)
print(w.uniform_() is w, w)
x = torch.ones(2, 2, requires_grad=True)
y = x * 2
y[0].normal_()
print(y.grad_fn.name(), y.grad_fn.next_functions[0][0].name())
z = x * 3
z.uniform_()
print(z.grad_fn.name(), z.grad_fn.next_functions[0][0].name())
z.sum().backward()
print(x.grad)
with torch.no_grad():
    x.normal_(0, 0.01)
print(x.requires_grad, x.is_leaf, x)
""")


@pytest.mark.parametrize("program, code, message", [
    ("x = ones(2)\nx.type('float64')", 2, "invalid type: 'float64'"),
    ("import torch\ntorch.numel(3)", 2, "numel(): argument 'input' (position 1) must be Tensor, not int"),
    ("import torch\ntorch.set_default_dtype(torch.long)", 2, "only floating-point types are supported as the default type"),
    ("x = ones(2)\nx.uniform_(2, 1)", 2, "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    ("x = ones(2)\nx.normal_(0, -1)", 2, "normal expects std >= 0.0, but found std -1"),
    ("x = ones(2, dtype=long)\nx.uniform_()", 2, "\"check_uniform_bounds\" not implemented for 'Long'"),
    ("x = ones(2, requires_grad=True)\nx.normal_()", 3, "a leaf Variable that requires grad is being used in an in-place operation."),
    ("x = ones(2)\nx.view_as(3)", 2, "view_as(): argument 'other' (position 1) must be Tensor, not int"),
])
def test_methods_refuse_what_torch_refuses(program, code, message):
    assert error_of(program, code) == message


def test_torch_device_objects_print_and_serve_as_device_arguments():
    same_as_torch("""
import torch
device = torch.device("cpu")
print(device, repr(device), device.type, device.index, torch.device("cuda", 0), torch.device("cuda:1").index)
x = torch.linspace(-1, 1, 5, device=device, dtype=torch.float)
print(x, x.device, torch.ones(2, device=device).to(device).device, x.device == device)
""")
    assert error_of("import torch\ntorch.device('gpu')", 3) == \
        "Expected one of cpu, cuda device type at start of device string: gpu"
