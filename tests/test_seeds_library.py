"""Every seed article snippet (examples/*.grad) run as plain Python on two libraries: gradcli's
engine (`import gradcli as gc`) and PyTorch. The .grad language is Python-flavoured on purpose,
so each file is also a Python program; what it prints, and the error it stops with, must be the
same in both (grad_fn addresses aside). Without torch, the library run is compared with the
checked-in output of `gradcli eval` instead."""

import json
import warnings
import re
from pathlib import Path

import pytest

import gradcli as gc
from helpers import clean_engine_state  # noqa: F401

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FILES = sorted(EXAMPLES.glob("*.grad"))
NAMES = ["tensor", "ones", "zeros", "full", "rand", "randn", "arange", "linspace", "eye", "ones_like", "zeros_like",
         "rand_like", "mean", "sum", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt", "matmul", "mm",
         "mv", "dot", "outer", "cat", "stack", "allclose", "no_grad", "enable_grad", "set_grad_enabled", "where",
         "maximum", "minimum", "clamp", "softmax", "log_softmax", "abs", "pow", "max", "min", "prod", "norm"]


def namespace(lib, printed):
    ns = {name: getattr(lib, name) for name in NAMES if hasattr(lib, name)}
    if lib.__name__ == "torch":  # the language's allclose also takes a number, as a convenience
        ns["allclose"] = lambda a, b, **k: lib.allclose(a, lib.as_tensor(b, dtype=a.dtype), **k)
    ns["grad"] = lib.autograd.grad
    ns["backward"] = lambda t, *a, **k: t.backward(*a, **k)
    ns["print"] = lambda *args: printed.append(" ".join(_text(a) for a in args))
    return ns


def _text(value):
    return re.sub(r" object at 0x[0-9a-f]+", "", repr(value) if not isinstance(value, str) else value)


def run(lib, path):
    printed = []
    lib.set_grad_enabled(True)  # a snippet may leave grad mode off (seed4_no_grad does, on purpose)
    try:
        exec(compile(path.read_text(), str(path), "exec"), namespace(lib, printed))  # noqa: S102 (test oracle)
        error = None
    except Exception as exc:  # the error a snippet demonstrates
        error = str(exc).split(" Hint:")[0]
    return printed, error


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_snippet_prints_what_torch_prints(path):
    if "--seed" in path.read_text():
        pytest.skip("uses random values: torch's generator differs")
    ours, our_error = run(gc, path)
    torch = pytest.importorskip("torch")
    theirs, their_error = run(torch, path)
    assert ours == theirs
    assert our_error == their_error


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_library_prints_what_the_cli_prints(path):
    if "--seed" in path.read_text():
        gc.manual_seed(int(re.search(r"--seed (\d+)", path.read_text()).group(1)))
    ours, our_error = run(gc, path)
    expected = json.loads((EXAMPLES / "expected" / f"{path.stem}.json").read_text())
    assert ours == expected["printed"][:len(ours)]
    if expected["error"] is None:
        assert our_error is None
    else:
        assert expected["error"]["message"].startswith(our_error)


# -- every numbered snippet of the seed articles, written with the library API ------------------------
#
# Each snippet is the article's code with today's API (``Variable(t, requires_grad=...)`` is the tensor
# itself) and ``L`` standing for ``gradcli`` or ``torch``; the expected lines are what current PyTorch
# prints (the articles show 0.3-era output), object addresses dropped. Both libraries must print them.

def _show(out):
    def show(*values):
        out.append(" ".join(v if isinstance(v, str) else _text(v) for v in values))
    return show


def seed0_code1(L, show):  # 代码1: x does not require grad, so its grad stays None
    x = L.ones(2, 2, requires_grad=False)
    temp = L.zeros(2, 2, requires_grad=True)
    y = x + temp + 2
    y = y.mean()
    y.backward()
    show(x.grad)


def seed0_code2(L, show):  # 代码2: d(mean)/d(temp) is 1/4 everywhere
    x = L.ones(2, 2, requires_grad=False)
    temp = L.zeros(2, 2, requires_grad=True)
    y = x + temp + 2
    y = y.mean()
    y.backward()
    show(temp.grad)


def seed0_code3(L, show):  # 代码3: nothing requires grad, backward fails
    x = L.ones(2, 2, requires_grad=False)
    L.zeros(2, 2, requires_grad=True)
    y = x + 2
    y = y.mean()
    y.backward()


def seed0_code4(L, show):  # 代码4: y has no grad_fn
    x = L.ones(2, 2, requires_grad=False)
    y = (x + 2).mean()
    show(y.grad_fn)


def seed0_grad_accumulates(L, show):  # 2.grad属性: grads add up until x.grad.data.zero_()
    temp = L.zeros(2, 2, requires_grad=True)
    for _ in range(2):
        (L.ones(2, 2) + temp + 2).mean().backward()
        show(temp.grad)
    temp.grad.data.zero_()
    show(temp.grad)


def seed2_retain_graph(L, show):  # retain_variables用法
    x = L.ones(3)
    w = L.rand(3, requires_grad=True)
    y = w.mul(x)
    z = y.sum()
    z.backward(retain_graph=True)
    show(w.grad)
    z.backward()
    show(w.grad)
    z.backward()


def seed2_graph(L, show):  # 叶子节点 / requires_grad / grad_fn of a, b, c, d
    a = L.ones(3, 4, requires_grad=True)
    b = L.zeros(3, 4)
    c = a.add(b)
    d = c.sum()
    d.backward()
    show(a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad)
    show(a.is_leaf, b.is_leaf, c.is_leaf, d.is_leaf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that c.grad of a non-leaf is never populated
        show(a.grad, b.grad, c.grad, d.grad)
    show("\n", a.grad_fn, "\n", b.grad_fn, "\n", c.grad_fn, "\n", d.grad_fn)
    c.backward(L.ones(a.size()))  # a vector output needs its gradient
    show(a.grad)


def seed2_next_functions(L, show):  # .grad_fn.next_functions
    x = L.ones(1)
    w = L.rand(1, requires_grad=True)
    b = L.rand(1, requires_grad=True)
    y = w.mul(x)
    z = y.add(b)
    show(x.is_leaf, w.is_leaf, b.is_leaf, y.is_leaf, z.is_leaf)
    show(x.requires_grad, w.requires_grad, b.requires_grad, y.requires_grad, z.requires_grad)
    show(x.grad_fn, w.grad_fn, b.grad_fn, y.grad_fn, z.grad_fn)
    show(y.grad_fn.next_functions, z.grad_fn.next_functions)
    show(z.grad_fn.next_functions[0][0] == y.grad_fn)
    show(z.grad_fn.next_functions[0][0] is y.grad_fn)


def seed2_volatile_is_no_grad(L, show):  # .volatile, replaced by no_grad
    x = L.ones(1)
    w = L.rand(1, requires_grad=True)
    with L.no_grad():
        y = w.mul(x)
    show(x.requires_grad, w.requires_grad, y.requires_grad)


def seed2_set_grad_enabled(L, show):  # the >>> session
    x = L.zeros(1, requires_grad=True)
    with L.no_grad():
        y = x * 2
    show(y.requires_grad)
    is_train = False
    with L.set_grad_enabled(is_train):
        y = x * 2
    show(y.requires_grad)
    L.set_grad_enabled(True)
    y = x * 2
    show(y.requires_grad)
    L.set_grad_enabled(False)
    y = x * 2
    show(y.requires_grad)
    L.set_grad_enabled(True)


def seed2_register_hook(L, show):  # the register_hook docstring example
    v = L.tensor([0.0, 0.0, 0.0], requires_grad=True)
    h = v.register_hook(lambda grad: grad * 2)
    v.backward(L.tensor([1.0, 1.0, 1.0]))
    show(v.grad.data)
    h.remove()
    v.backward(L.tensor([1.0, 1.0, 1.0]))
    show(v.grad)


def seed2_retain_grad(L, show):  # retain_grad from the Variable source: non-leaf grads kept on request
    a = L.ones(3, 4, requires_grad=True)
    c = a * 2
    c.retain_grad()
    c.sum().backward()
    show(c.grad.sum(), c.retains_grad, a.retains_grad)


def seed3_grad_starts_none(L, show):
    w1 = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w2 = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    show(w1.grad)
    show(w2.grad)


def seed3_accumulate_and_zero(L, show):
    w1 = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = L.mean(w1)
    d.backward()
    show(w1.grad)
    d.backward()
    show(w1.grad)
    w1.grad.data.zero_()
    show(w1.grad)
    learning_rate = 0.1
    w1.data.sub_(learning_rate * w1.grad.data)
    show(w1)
    L.mean(w1 * w1).backward()
    w1.data.sub_(learning_rate * w1.grad.data)
    show(w1)


def seed3_backward_gradient(L, show):  # z.backward(gradient=grads): the gradient of sum(z * grads)
    w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = w * w
    grads = L.tensor([0.1, 1.0, 10.0])
    z.backward(gradient=grads)
    show(w.grad)


def seed3_retain_variables(L, show):
    w1 = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w2 = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = w1 * w2 + w1
    res = L.mean(z)
    res.backward()
    res.backward()


def seed3_partial(L, show):  # only the second row is used
    w1 = L.rand(2, 3, requires_grad=True)
    res = L.mean(w1[1])
    res.backward()
    show(w1.grad)


def seed4_variable(L, show):
    x = L.ones(2, 2, requires_grad=True)
    show(x)
    y = x + 2
    show(y)
    show(x.grad_fn)
    show(y.grad_fn)
    z = y * y * 3
    out = z.mean()
    show(z, out)
    out.backward()
    show(x.grad)


def seed4_backward_weights(L, show):  # y.backward(w) is the gradient of l = sum(y * w)
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    w = L.tensor([3.0, 0.5])
    y.backward(w, retain_graph=True)
    first = x.grad.clone()
    x.grad = None
    (y * w).sum().backward()
    show(first, L.allclose(first, x.grad))


FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
         "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
         "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
         "you need to access saved tensors after calling backward.")
QUARTER = "tensor([[0.2500, 0.2500],\n        [0.2500, 0.2500]])"

SNIPPETS = {
    seed0_code1: (["None"], None),
    seed0_code2: ([QUARTER], None),
    seed0_code3: ([], "element 0 of tensors does not require grad and does not have a grad_fn"),
    seed0_code4: (["None"], None),
    seed0_grad_accumulates: ([QUARTER, "tensor([[0.5000, 0.5000],\n        [0.5000, 0.5000]])",
                              "tensor([[0., 0.],\n        [0., 0.]])"], None),
    seed2_retain_graph: (["tensor([1., 1., 1.])", "tensor([2., 2., 2.])"], FREED),
    seed2_graph: (["True False True True", "True True False False",
                   "tensor([[1., 1., 1., 1.],\n        [1., 1., 1., 1.],\n        [1., 1., 1., 1.]]) None None None",
                   "\n None \n None \n <AddBackward0> \n <SumBackward0>",
                   "tensor([[2., 2., 2., 2.],\n        [2., 2., 2., 2.],\n        [2., 2., 2., 2.]])"], None),
    seed2_next_functions: (["True True True False False", "False True True True True",
                            "None None None <MulBackward0> <AddBackward0>",
                            "((<AccumulateGrad>, 0), (None, 0)) ((<MulBackward0>, 0), (<AccumulateGrad>, 0))",
                            "True", "True"], None),
    seed2_volatile_is_no_grad: (["False True False"], None),
    seed2_set_grad_enabled: (["False", "False", "True", "False"], None),
    seed2_register_hook: (["tensor([2., 2., 2.])", "tensor([3., 3., 3.])"], None),
    seed2_retain_grad: (["tensor(12.) True False"], None),
    seed3_grad_starts_none: (["None", "None"], None),
    seed3_accumulate_and_zero: (["tensor([0.3333, 0.3333, 0.3333])", "tensor([0.6667, 0.6667, 0.6667])",
                                 "tensor([0., 0., 0.])", "tensor([1., 2., 3.], requires_grad=True)",
                                 "tensor([0.9333, 1.8667, 2.8000], requires_grad=True)"], None),
    seed3_backward_gradient: (["tensor([ 0.2000,  4.0000, 60.0000])"], None),
    seed3_retain_variables: ([], FREED),
    seed3_partial: (["tensor([[0.0000, 0.0000, 0.0000],\n        [0.3333, 0.3333, 0.3333]])"], None),
    seed4_variable: (["tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)",
                      "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)", "None", "<AddBackward0>",
                      "tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>) "
                      "tensor(27., grad_fn=<MeanBackward0>)",
                      "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"], None),
    seed4_backward_weights: (["tensor([6., 2.]) True"], None),
}


@pytest.mark.parametrize("lib", ["gradcli", "torch"])
@pytest.mark.parametrize("snippet", list(SNIPPETS), ids=[f.__name__ for f in SNIPPETS])
def test_seed_snippet_prints_what_pytorch_shows(snippet, lib):
    L = gc if lib == "gradcli" else pytest.importorskip("torch")
    expected_lines, expected_error = SNIPPETS[snippet]
    printed = []
    L.set_grad_enabled(True)
    try:
        if expected_error is None:
            snippet(L, _show(printed))
        else:
            with pytest.raises(Exception) as info:
                snippet(L, _show(printed))
            assert str(info.value).split(" Hint:")[0] == expected_error
    finally:
        L.set_grad_enabled(True)
    assert printed == expected_lines
