"""The legacy API as torch 2.13 runs it: Variable, volatile, Tensor(...)/FloatTensor & co., Parameter, cuda."""

import warnings

import numpy as np
import pytest

import gradcli as gc
from gradcli.ops import FUNCTIONS
from gradcli.cli.fast import main as cli_main

torch = pytest.importorskip("torch")
from torch.autograd import Variable as TVariable  # noqa: E402

Variable = FUNCTIONS["Variable"].fn
Tensor = FUNCTIONS["Tensor"].fn


def state(t):
    return (t.requires_grad, t.is_leaf, None if t.grad_fn is None else t.grad_fn.name(), repr(t))


def caught(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [(x.category, str(x.message)) for x in w]


@pytest.mark.parametrize("requires_grad", [False, True])
def test_variable_is_a_new_leaf_sharing_the_data(requires_grad):
    for make, tmake in ((lambda: gc.ones(2), lambda: torch.ones(2)),
                        (lambda: gc.ones(2, requires_grad=True) * 2, lambda: torch.ones(2, requires_grad=True) * 2)):
        src, tsrc = make(), tmake()
        v, tv = Variable(src, requires_grad=requires_grad), TVariable(tsrc, requires_grad=requires_grad)
        assert v is not src
        assert state(v) == state(tv)
        before = src.tolist()
        src.detach().add_(1) if src.requires_grad else src.add_(1)  # the same storage
        assert v.tolist() == [b + 1 for b in before]


def test_variable_gradient_reaches_the_variable():
    v = Variable(gc.tensor([1.0, 2.0]), requires_grad=True)
    tv = TVariable(torch.tensor([1.0, 2.0]), requires_grad=True)
    (v * v).sum().backward()
    (tv * tv).sum().backward()
    assert v.grad.tolist() == tv.grad.tolist()


def test_volatile_warns_as_torch_and_has_no_effect():
    (v, got) = caught(lambda: Variable(gc.ones(2), volatile=True))
    (tv, want) = caught(lambda: TVariable(torch.ones(2), volatile=True))
    assert got == want == [(UserWarning, "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.")]
    assert state(v) == state(tv)
    (flag, got) = caught(lambda: v.volatile)
    (tflag, want) = caught(lambda: tv.volatile)
    assert flag is tflag is False and got == want == [(UserWarning, "volatile was removed (Variable.volatile is always False)")]


def test_variable_errors():
    with pytest.raises(gc.GradTypeError, match="^Variable data has to be a tensor, but got list$"):
        Variable([1, 2])
    with pytest.raises(gc.GradTypeError, match="^Only Tensors of floating point and complex dtype can require gradients$"):
        Variable(gc.ones(2, dtype="int64"), requires_grad=True)


@pytest.mark.parametrize("args", [([1, 2],), ((1, 2),), ([[1.5, 2], [3, 4]],), (2, 3), (3,), (), ([True, False],)])
def test_tensor_constructor(args):
    ours, theirs = Tensor(*args), torch.Tensor(*args)
    assert ours.shape == tuple(theirs.shape) and ours.dtype.name == str(theirs.dtype).split(".")[1]
    if args and isinstance(args[0], (list, tuple)):
        assert ours.tolist() == theirs.tolist() and repr(ours) == repr(theirs)
    else:
        assert not np.asarray(ours.tolist()).any()  # torch's are uninitialised; gradcli's zeros


def test_typed_constructors():
    assert repr(gc.FloatTensor([1, 2])) == repr(torch.FloatTensor([1, 2]))
    assert repr(gc.DoubleTensor([1, 2])) == repr(torch.DoubleTensor([1, 2]))
    assert repr(gc.LongTensor([1.7, -2.5, 3])) == repr(torch.LongTensor([1.7, -2.5, 3]))
    assert gc.LongTensor(2, 3).shape == (2, 3) and gc.LongTensor(2, 3).dtype.name == "int64"
    assert repr(gc.DoubleTensor(2)) == "tensor([0., 0.], dtype=torch.float64)"


def test_tensor_of_a_tensor_is_an_alias():
    a, ta = gc.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    assert state(Tensor(a)) == state(torch.Tensor(ta))
    assert repr(Tensor(gc.ones(2, dtype="float64"))) == repr(torch.Tensor(torch.ones(2, dtype=torch.float64)))
    with pytest.raises(gc.GradTypeError, match=r"^expected TensorOptions\(dtype=float, .*\(got TensorOptions\(dtype=double"):
        gc.FloatTensor(gc.ones(2, dtype="float64"))


def test_tensor_constructor_errors():
    with pytest.raises(gc.GradTypeError, match=r"^new\(\): data must be a sequence \(got float\)$"):
        Tensor(2.5)
    with pytest.raises(gc.GradTypeError, match=r"^new\(\): invalid data type 'str'$"):
        Tensor("a")
    with pytest.raises(gc.ShapeError, match=r"^Trying to create tensor with negative dimension -1: \[-1\]$"):
        Tensor(-1)
    with pytest.raises(gc.ShapeError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
        Tensor([[1, 2], [3]])


def test_parameter():
    p, tp = gc.Parameter(gc.ones(2)), torch.nn.Parameter(torch.ones(2))
    assert state(p) == state(tp)
    assert repr(p) == repr(tp) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    assert repr(p * 2) == repr(tp * 2).replace("MulBackward0", "MulBackward0")
    assert repr(gc.Parameter(gc.ones(2), requires_grad=False)) == repr(torch.nn.Parameter(torch.ones(2), requires_grad=False))
    assert repr(gc.Parameter()) == repr(torch.nn.Parameter())
    assert repr(gc.Parameter(gc.ones(2, dtype="float64"))) == repr(torch.nn.Parameter(torch.ones(2, dtype=torch.float64)))
    (p * p).sum().backward()
    assert p.grad.tolist() == [2.0, 2.0]
    assert repr(p.detach()) == "tensor([1., 1.])"
    with pytest.raises(gc.GradTypeError, match="^Only Tensors of floating point and complex dtype can require gradients$"):
        gc.Parameter(gc.ones(2, dtype="int64"))


def test_cuda_without_a_gpu():
    if gc.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert gc.cuda.is_available() is torch.cuda.is_available() is False or torch.cuda.is_available()
    with pytest.raises(gc.DeviceError):
        gc.cuda.FloatTensor([1, 2])
    with pytest.raises(gc.DeviceError):
        gc.ones(2).cuda()


def test_legacy_program_in_the_cli(capsys):
    program = ("from torch.autograd import Variable\nfrom torch.nn import Parameter\n"
               "x = Variable(Tensor([1, 2]), requires_grad=True)\n"
               "w = Parameter(DoubleTensor([3, 4]).float())\n"
               "y = (x * w).sum()\ny.backward()")
    code = cli_main(["eval", program, "--json"])
    import json
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    grads = {v["name"]: v["grad"] for v in doc["variables"]}
    assert grads["x"] == [3.0, 4.0] and grads["w"] == [1.0, 2.0]
    code = cli_main(["eval", "from torch.autograd import Variable\nv = Variable(ones(2), volatile=True)\nprint(v.volatile)", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["printed"] == ["False"]
    code = cli_main(["eval", "from torch.autograd import Variable\nx = Variable([1, 2])", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 2 and doc["error"]["message"] == "Variable data has to be a tensor, but got list"
