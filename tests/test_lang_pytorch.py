"""The language's PyTorch front door (issue 12, part A): imports, ``torch.`` spellings, control
flow, functions, comprehensions and formatting. Programs run under gradcli and, where they are
PyTorch code, under torch itself (exec of the same source), and every printed line must match."""

import contextlib
import io
import json
import re

import pytest

from gradcli.cli import main


def run(program, *args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["eval", program, "--json", *args])
    assert "Traceback" not in err.getvalue()
    return code, json.loads(out.getvalue())


def torch_prints(source):
    """What Python with torch prints running ``source`` (object addresses stripped)."""
    pytest.importorskip("torch")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<torch>", "exec"), {"__name__": "__snippet__"})
    return [re.sub(r" at 0x[0-9a-f]+", "", line) for line in out.getvalue().rstrip("\n").split("\n")]


def same_as_torch(source):
    code, doc = run(source)
    assert code == 0, doc["error"]
    printed = "\n".join(doc["printed"]).split("\n")
    assert printed == torch_prints(source)
    return doc


PROGRAMS = {
    "imports and aliases": """
import torch
import torch as t
from torch import ones as o, zeros
from torch.autograd import grad
x = t.ones(2, 2, requires_grad=True)
y = torch.mean(x * 3 + o(2, 2) - zeros(2, 2))
g, = grad(y, [x])
print(g, y, torch.float32, t.float, torch.double, torch.long)
""",
    "functional namespace and cuda": """
import torch
import torch.nn.functional as F
import torch.cuda as cuda
print(cuda.is_available(), torch.cuda.is_available())
x = torch.tensor([-1.0, 2.0], requires_grad=True)
print(torch.sum(x * x), F is torch.nn.functional)
""",
    "if elif else and loops": """
import torch
x = torch.ones(3, requires_grad=True)
total = 0
for i in range(5):
    if i == 1:
        continue
    elif i % 2 == 0:
        total = total + x * i
    else:
        total = total - x
    if i >= 4:
        break
n = 0
while n < 10:
    n += 3
total.sum().backward()
print(total, x.grad, n)
""",
    "d2l f(a) with data-dependent control flow": """
import torch
def f(a):
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c
a = torch.tensor(0.5, requires_grad=True)
d = f(a)
d.backward()
print(a.grad == d / a, a.grad)
""",
    "functions, defaults, keywords, lambdas, closures": """
import torch
def affine(x, w=2.0, *args_unused_never, b=1.0) if False else None
""",
}
# (the last one is replaced below: Python-only syntax that gradcli does not take)
PROGRAMS["functions, defaults, keywords, lambdas, closures"] = """
import torch
def affine(x, w=2.0, b=1.0):
    return x * w + b
def outer(k):
    def inner(v):
        return v * k
    return inner
sq = lambda a, b=3: a ** 2 + b
x = torch.arange(3.0, requires_grad=True)
y = affine(x, b=0.5) + affine(x, 3.0) + outer(4)(x) + sq(x, b=1)
y.sum().backward()
print(y, x.grad, sq(2), affine(1, w=3))
def countdown(n):
    def step(k):
        return 0 if k == 0 else 1 + step(k - 1)
    return step(n)
fs = [lambda: i for i in range(3)]
print(countdown(5), [f() for f in fs], (lambda a: lambda b: a * b)(2)(3))
"""
PROGRAMS["decorated no_grad and grad mode"] = """
import torch
@torch.no_grad()
def step(w):
    return w * 2
@torch.enable_grad()
def keep(w):
    return w * 3
w = torch.ones(2, requires_grad=True)
print(step(w).requires_grad, keep(w).requires_grad, torch.is_grad_enabled())
with torch.no_grad():
    print(keep(w).requires_grad, step(w).requires_grad)
@torch.inference_mode()
def infer(w):
    return w * 4
with torch.inference_mode():
    print((w * 2).requires_grad, infer(w).requires_grad)
print(infer(w).requires_grad, (w * 2).requires_grad)
"""
PROGRAMS["iteration over a tensor, enumerate, zip, comprehension"] = """
import torch
x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
rows = [r * (i + 1) for i, r in enumerate(x)]
pairs = [a + b for a, b in zip(rows, [10, 20])]
s = sum(pairs)
for row in x:
    s = s + row
s.sum().backward()
print(s, x.grad, len(rows), [i * j for i in range(3) for j in range(2) if i != j])
"""
PROGRAMS["python numbers, strings and formatting"] = """
import math
import torch
a = 7
b = 2
print(a / b, a // b, a % b, -a // b, a ** b, 2.5 * b, a == 7 and b == 2, not a, a if b > 3 else b)
loss = torch.tensor(0.123456)
name = 'loss'
print(f"{name}: {loss:.4f} {loss.item():.2f} {a!r} {math.pi:.3f} {{}}", "%.3f" % 1.5, "%d/%d" % (a, b))
print("{} and {x:>5}".format(1, x=2), str(3) + "!", round(2.567, 2), abs(-3), max(1, 5, 2), min([4, 2]))
print(1 in [1, 2], 3 not in (1, 2), None is None, a is not None, isinstance(a, int), isinstance(loss, float))
xs = [1, 2]
xs.append(3)
xs[0] += 10
print(xs, sorted([3, 1, 2]), list(reversed(xs)), tuple(range(3)), bool(0), float(2), int(2.7))
"""
PROGRAMS["autograd tutorial loop: gradient descent by hand"] = """
import torch
x = torch.linspace(-1, 1, 5)
y = 3 * x + 0.5
w = torch.zeros(1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for epoch in range(20):
    loss = ((w * x + b - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        b -= 0.1 * b.grad
        w.grad.zero_()
        b.grad.zero_()
    if epoch % 5 == 4:
        print(f"epoch {epoch}: loss {loss.item():.6f}")
print(w, b)
"""
PROGRAMS["attribute assignment"] = """
import torch
x = torch.ones(2)
x.requires_grad = True
y = (x * 2).sum()
y.backward()
print(x.grad)
x.grad = None
print(x.grad, x.requires_grad)
"""

PROGRAMS["d2l f(a) as published, randn(size=())"] = """
import torch
torch.manual_seed(0)
def f(a):
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c
a = torch.randn(size=(), requires_grad=True)
d = f(a)
d.backward()
print(a, a.grad == d / a, torch.ones(size=(2,)), torch.zeros(size=[1, 2]), torch.rand(size=(2,)))
"""

PROGRAMS["saved tensors hooks, F and Variable"] = """
import torch
import torch.nn.functional as F
from torch.autograd import Variable
x = Variable(torch.ones(2, 3), requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
    y = (x * x).sum()
y.backward()
print(x.grad)
loss = F.cross_entropy(x, torch.tensor([0, 2]))
loss.backward()
print(loss, x.grad)
"""


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_prints_what_torch_prints(name):
    same_as_torch(PROGRAMS[name])


def test_dialect_and_pytorch_spelling_side_by_side():
    code, doc = run("y = mean(x + 2)", "-g", "x=ones(2,2)")
    assert code == 0 and doc["backward"] == "auto"
    code, doc = run("import torch\nx = torch.ones(2, 2, requires_grad=True)\ny = torch.mean(x + 2)")
    assert code == 0 and doc["backward"] == "auto"
    assert doc["variables"][0]["grad"] == [[0.25, 0.25], [0.25, 0.25]]


def test_t_is_transpose_until_torch_is_imported_as_t():
    code, doc = run("print(t(ones(2, 3)).shape)")
    assert code == 0 and doc["printed"] == ["torch.Size([3, 2])"]
    code, doc = run("import torch as t\nprint(t.ones(2, 3).shape)")
    assert code == 0 and doc["printed"] == ["torch.Size([2, 3])"]


def test_a_program_ending_in_a_loop_gets_no_implicit_backward():
    code, doc = run("import torch\nx = torch.ones(2, requires_grad=True)\nfor i in range(2):\n    y = (x * i).sum()")
    assert code == 0 and doc["backward"] == "none"


@pytest.mark.parametrize("program, kind, words", [
    ("import os", "name", "No module named 'os' in gradcli: it can import math, numpy, torch"),
    ("import torch.optim as optim", "name", "No module named 'torch.optim'"),
    ("from torch import nn\nm = nn.Linear(2, 3)", "name", "module 'torch.nn' has no attribute 'Linear'"),
    ("import torch\ntorch.frobnicate(1)", "name", "module 'torch' has no attribute 'frobnicate'"),
    ("from torch import onez", "name", "cannot import name 'onez' from 'torch' in gradcli; did you mean 'ones'?"),
    ("import torch\ntorch(1)", "type", "'module' object is not callable"),
    ("import torch\ntorch.view(ones(2, 3), 6)", "name", "module 'torch' has no attribute 'view'"),
    ("import torch\ntorch.permute(ones(2, 3), 1, 0)", "type", "permute() takes 2 positional arguments but 3 were given"),
    ("import torch\ntorch.reshape(ones(2, 3), 6)", "type",
     "reshape(): argument 'shape' (position 2) must be tuple of ints, not int"),
    ("from torch import tile\ntile(ones(2, 3), 2)", "type", "tile(): argument 'dims' (position 2) must be tuple of ints, not int"),
    ("import torch\ntorch.flip(ones(2, 3), 0)", "type", "flip(): argument 'dims' (position 2) must be tuple of ints, not int"),
    ("import torch\ntorch.broadcast_to(ones(3), 2, 3)", "type", "broadcast_to() takes 2 positional arguments but 3 were given"),
    ("import torch\ntorch.broadcast_to(ones(3), siz=(2, 3))", "type",
     "broadcast_to() got an unexpected keyword argument 'siz'"),
    ("import torch\ntorch.expand(ones(1), 2)", "name", "module 'torch' has no attribute 'expand'"),
    ("import torch\ntorch.cuda.is_grad_enabled()", "name", "module 'torch.cuda' has no attribute 'is_grad_enabled'"),
    ("def f(a):\n    return a\nf()", "type", "f() missing 1 required positional argument: 'a'"),
    ("def f(a):\n    return a\nf(1, 2)", "type", "f() takes 1 positional argument but 2 were given"),
    ("def f(a):\n    return a\nf(b=1)", "type", "f() got an unexpected keyword argument 'b'"),
    ("break", "syntax", "'break' outside loop"),
    ("print(1)\nif True:\n    continue", "syntax", "'continue' outside loop"),
    ("for i in range(2):\n    def f():\n        break", "syntax", "'break' outside loop"),
    ("print(1)\nreturn 1", "syntax", "'return' outside function"),
    ("x = 1\nx.grad = 2", "name", "cannot assign to 'grad' of a int"),
    ("'{0.real}'.format(1)", "name", "only positions and names are allowed"),
    ("if ones(2):\n    pass", "type", "Boolean value of Tensor with more than one value is ambiguous"),
])
def test_refusals_exit_2_with_a_message(program, kind, words):
    code, doc = run(program)
    assert code == 2, doc
    assert doc["error"]["kind"] == kind and words in doc["error"]["message"], doc["error"]


def test_jumps_outside_loops_are_found_before_anything_runs():
    code, doc = run("print(1)\nwhile True:\n    pass\nbreak")
    assert code == 2 and doc["printed"] == [] and doc["error"]["line"] == 4


def test_optimizers_get_a_hint_of_what_to_write_instead(capsys, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    for program in ("import torch.optim as optim", "import torch\nm = torch.nn.Linear(2, 3)"):
        assert main(["eval", program]) == 2
        text = " ".join((capsys.readouterr().err + capsys.readouterr().out).split())
        assert "no nn.Module, optimizers or datasets" in text, text


@pytest.mark.parametrize("program", ["while True:\n    pass", "n = 0\nwhile n >= 0:\n    n += 1",
                                     "xs = [i for i in range(10 ** 12)]", "for i in range(10 ** 12):\n    pass"])
def test_endless_loops_end_by_the_step_budget(program):
    code, doc = run(program, "--max-steps", "5000")
    assert code == 3 and doc["error"]["kind"] == "limit"
    assert doc["error"]["message"].startswith("the program ran more than 5,000 steps")


def test_the_step_budget_counts_every_statement():
    assert run("for i in range(10):\n    x = i", "--max-steps", "21")[0] == 0   # 1 + 10 iterations + 10
    assert run("for i in range(10):\n    x = i", "--max-steps", "20")[0] == 3


def test_recursion_runs_on_the_evaluators_stack_within_max_depth():
    fact = "def fact(n):\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\n"
    code, doc = run(fact + "print(fact(5), fact(30))")
    assert code == 0 and doc["printed"] == [f"120 {__import__('math').factorial(30)}"]
    code, doc = run(fact.replace("n * fact", "fact") + "fact(5000)", "--max-depth", "6000")  # far beyond Python's own recursion limit
    assert code == 0, doc["error"]
    code, doc = run(fact + "fact(50)", "--max-depth", "10")
    assert code == 3 and doc["error"]["kind"] == "limit"
    assert doc["error"]["message"].startswith("maximum recursion depth exceeded: calls nested more than 10 deep")
    assert doc["error"]["line"] == 4


def test_bad_limits_are_usage_errors():
    assert run("1", "--max-steps", "0")[0] == 2
    assert run("1", "--max-depth", "-1")[0] == 2


def test_f_string_errors_are_syntax_errors_at_the_string():
    code, doc = run("x = 1\nprint(f'{x +}')")
    assert code == 2 and doc["error"]["kind"] == "syntax" and doc["error"]["line"] == 2
    code, doc = run("print(f'{}')")
    assert code == 2 and "empty expression" in doc["error"]["message"]


def test_format_widths_are_bounded():
    code, doc = run("print(f'{1:999999999}')")
    assert code == 3 and doc["error"]["kind"] == "limit"
    code, doc = run("print('%999999999d' % 1)")
    assert code == 3 and doc["error"]["kind"] == "limit"


def test_functional_namespace_hook_reaches_registry_ops():
    """An op declared with namespaces=("torch.nn.functional",) is F.<name> and not a bare name."""
    from gradcli.ops import registry
    from gradcli.ops.pointwise import mul

    @registry.op(method=False, namespaces=("torch.nn.functional",), name="twice_for_test")
    def twice_for_test(input):
        """Test op: 2 * input."""
        return mul(input, 2)
    try:
        code, doc = run("import torch.nn.functional as F\nx = ones(2, requires_grad=True)\ny = F.twice_for_test(x).sum()")
        assert code == 0 and doc["variables"][0]["grad"] == [2.0, 2.0]
        code, doc = run("twice_for_test(ones(2))")
        assert code == 2 and doc["error"]["kind"] == "name"
        code, doc = run("import torch\nfrom torch.nn.functional import twice_for_test as tw\n"
                        "print(torch.nn.functional.twice_for_test(ones(1)), tw(ones(1)))")
        assert code == 0 and doc["printed"] == ["tensor([2.]) tensor([2.])"]
    finally:
        del registry.FUNCTIONS["twice_for_test"]
        del registry.NAMESPACES["torch.nn.functional"]["twice_for_test"]
        registry.BY_FUNCTION.pop(twice_for_test, None)


def test_a_new_module_path_is_importable_once_an_op_declares_itself_there():
    from gradcli.ops import registry
    from gradcli.ops.pointwise import mul

    @registry.op(method=False, namespaces=("torch.special_for_test",), name="thrice_for_test")
    def thrice_for_test(input):
        """Test op: 3 * input."""
        return mul(input, 3)
    try:
        code, doc = run("import torch\nimport torch.special_for_test as S\n"
                        "print(S.thrice_for_test(ones(1)), torch.special_for_test.thrice_for_test(ones(1)))")
        assert code == 0 and doc["printed"] == ["tensor([3.]) tensor([3.])"], doc["error"]
    finally:
        del registry.FUNCTIONS["thrice_for_test"]
        del registry.NAMESPACES["torch.special_for_test"]
        registry.BY_FUNCTION.pop(thrice_for_test, None)


PROGRAMS_MORE = {
    "a def as a hook, run by backward": """
import torch
def double(g):
    return g * 2
x = torch.ones(3, requires_grad=True)
h = x.register_hook(double)
(x * x).sum().backward()
print(x.grad)
h.remove()
""",
    "unpacking, nested targets, while with else-free break": """
import torch
pairs = [(1, (2.0, 3.0)), (2, (4.0, 5.0))]
acc = torch.zeros(2, requires_grad=True)
out = acc
for i, (a, b) in pairs:
    out = out + torch.tensor([a, b]) * i
k = 0
while True:
    k += 1
    if k == 4:
        break
print(out, k, [p[0] for p in pairs], -7 // 2, -7 % 3, 2 ** -1, 10 / 4)
""",
    "shape ops' sizes by torch's keywords, and the methods' forms": """
import torch
x = torch.arange(6.0, requires_grad=True)
m = x.view(size=(2, 3))
a = torch.permute(m, dims=(1, 0))
b = m.permute(dims=(1, 0)) * torch.reshape(a, shape=(3, 2))
c = torch.tile(m, dims=(2,)) + torch.broadcast_to(m[0], size=(2, 3)).repeat(repeats=(1, 2))
d = m[:1].expand(size=(2, 3)) * m.reshape(shape=(2, 3)) + m.new_ones(size=(3,)) + torch.flip(m, dims=(0,))
e = m.permute(1, 0) + m.reshape(3, 2) + m.flip(0, 1).view(3, 2) + m.tile(1, 1).t()
(b.sum() + c.sum() + d.sum() + e.sum()).backward()
print(a, b, c, d, e, x.grad)
print(b.grad_fn.name(), [f.name() for f, _ in c.grad_fn.next_functions],
      [f.name() for f, _ in d.grad_fn.next_functions[0][0].next_functions if f is not None])
""",
}


@pytest.mark.parametrize("name", list(PROGRAMS_MORE))
def test_more_programs_print_what_torch_prints(name):
    same_as_torch(PROGRAMS_MORE[name])


def test_check_and_graph_follow_loops_and_functions(capsys):
    program = ("import torch\nx = torch.ones(3, requires_grad=True)\ndef f(v, k=2):\n    return (v ** k).sum()\n"
               "total = 0\nfor i in range(3):\n    total = total + f(x * i, k=3)\n")
    assert main(["check", program + "total", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(c["leaf"], c["passed"]) for c in doc["gradcheck"]] == [("x", True)]
    assert doc["variables"][0]["grad"] == [27.0, 27.0, 27.0]  # d/dx sum over i of (i x)^3 = 3 x^2 (0 + 1 + 8)
    assert main(["graph", program + "loss = total", "--format", "json"]) == 0, capsys.readouterr()
    graph = json.loads(capsys.readouterr().out)
    names = json.dumps(graph)
    assert names.count("PowBackward0") == 3 and "SumBackward0" in names


def test_isinstance_and_values_of_functions():
    code, doc = run("import torch\nx = torch.ones(2)\nf = torch.mean\n"
                    "print(isinstance(x, float), isinstance(1.5, (int, float)), isinstance([1], list), f(x), abs)")
    assert code == 0 and doc["printed"] == ["False True True tensor(1.) <built-in function abs>"]


def test_hostile_values_are_bounded():
    code, doc = run("xs = [1, (2,)]\nxs.append(xs)\nprint(xs, str(xs))")
    assert code == 0 and doc["printed"] == ["[1, (2,), [...]] [1, (2,), [...]]"]
    for program in ("xs = [0] * 10 ** 9", "s = 'ab' * 10 ** 9", "xs = list(range(10 ** 9))",
                    "xs = sorted(range(10 ** 9))", "all(range(1, 10 ** 12))", "'-'.join(range(10 ** 12))",
                    "xs = []\nxs.extend(range(10 ** 12))"):
        code, doc = run(program)
        assert code == 3 and doc["error"]["kind"] == "limit", (program, doc["error"])
    code, doc = run("print(len(range(10 ** 12)), 10 ** 12 in range(10 ** 13))")
    assert code == 0 and doc["printed"] == ["1000000000000 True"]


# PyTorch's own tutorials, as published (values that depend on the random generator are not printed).
TUTORIALS = {
    "blitz: differentiation in autograd": """
import torch

a = torch.tensor([2., 3.], requires_grad=True)
b = torch.tensor([6., 4.], requires_grad=True)
Q = 3*a**3 - b**2
external_grad = torch.tensor([1., 1.])
Q.backward(gradient=external_grad)
# check if collected gradients are correct
print(9*a**2 == a.grad)
print(-2*b == b.grad)
""",
    "blitz: exclusion from the DAG": """
import torch

x = torch.rand(5, 5)
y = torch.rand(5, 5)
z = torch.rand((5, 5), requires_grad=True)

a = x + y
print(f"Does `a` require gradients?: {a.requires_grad}")
b = x + z
print(f"Does `b` require gradients?: {b.requires_grad}")
""",
    "basics: optional reading, Jacobian product": """
import torch

inp = torch.eye(4, 5, requires_grad=True)
out = (inp+1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\\n{inp.grad}")
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\\nSecond call\\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\\nCall after zeroing gradients\\n{inp.grad}")
""",
    "basics: disabling gradient tracking": """
import torch

x = torch.ones(5)  # input tensor
y = torch.zeros(3)  # expected output
w = torch.ones(5, 3, requires_grad=True)
b = torch.ones(3, requires_grad=True)
z = torch.matmul(x, w)+b
print(z.requires_grad)

with torch.no_grad():
    z = torch.matmul(x, w)+b
print(z.requires_grad)

z = torch.matmul(x, w)+b
z_det = z.detach()
print(z_det.requires_grad)
""",
    "autograd mechanics: grad mode": """
import torch

x = torch.zeros(1, requires_grad=True)
with torch.no_grad():
    y = x * 2
print(y.requires_grad)

is_train = False
with torch.set_grad_enabled(is_train):
    y = x * 2
print(y.requires_grad)

torch.set_grad_enabled(True)
y = x * 2
print(y.requires_grad)

torch.set_grad_enabled(False)
y = x * 2
print(y.requires_grad)
torch.set_grad_enabled(True)
""",
}


@pytest.mark.parametrize("name", list(TUTORIALS))
def test_pytorch_tutorial_prints_what_torch_prints(name):
    same_as_torch(TUTORIALS[name])


def test_max_statements_counts_the_statements_inside_blocks():
    program = "def f():\n    a = 1\n    b = 2\nif True:\n    c = 3\nelse:\n    d = 4\nfor i in range(1):\n    e = 5"
    assert run(program, "--max-statements", "8")[0] == 0
    code, doc = run(program, "--max-statements", "7")
    assert code == 2 and "statements" in doc["error"]["message"]


def test_check_and_graph_take_the_last_value_computed_in_a_loop(capsys):
    program = "x = ones(3, requires_grad=True)\nfor i in range(3):\n    y = (x * i).exp().sum()"
    assert main(["check", program, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gradcheck_of"] == "the last value (line 3)"
    assert doc["gradcheck"][0]["passed"] and doc["gradcheck"][0]["worst"]["analytic"] == pytest.approx(2 * __import__("math").exp(2))
    assert main(["graph", program, "--format", "json"]) == 0
    graph = json.loads(capsys.readouterr().out)
    assert [n["name"] for n in graph["nodes"]] == ["SumBackward0", "ExpBackward0", "MulBackward0", "AccumulateGrad"]


def test_docstrings_and_triple_quoted_strings():
    same_as_torch('import torch\n\ndef f(x):\n    """Square it.\n\n    Returns "x ** 2" (with \'quotes\').\n    """\n'
                  '    return x ** 2\n\'\'\'A module\ndocstring\'\'\'\nprint(f(3), """a\nb""", \'\'\'it\'s\'\'\', "x\\ty")\n'
                  'print(f(torch.ones(2, requires_grad=True)))\n')
    code, doc = run('x = """never closed\nprint(1)')
    assert code == 2 and doc["error"]["kind"] == "syntax"


@pytest.mark.parametrize("module", ["torch", "torch.nn", "torch.nn.functional", "torch.autograd",
                                    "torch.autograd.functional", "torch.autograd.graph", "torch.cuda"])
def test_every_member_of_a_torch_module_is_torchs(module):
    """A program reaches nothing through ``torch.`` that torch lacks (the dialect's bare ``view(x, 6)``
    is no ``torch.view``: a learner's code that runs here runs under torch)."""
    torch = pytest.importorskip("torch")
    from gradcli.lang import modules
    found = torch
    for part in module.split(".")[1:]:
        found = getattr(found, part)
    assert sorted(n for n in modules.members(module) if not hasattr(found, n)) == []


def test_a_method_reached_through_torch_names_the_method(capsys, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(["eval", "import torch\ny = torch.view(ones(2, 3), 6)"]) == 2
    assert "hint: in torch, view is a Tensor method: x.view(...)" in capsys.readouterr().err
    assert main(["eval", "y = view(ones(2, 3), 6)", "--json"]) == 0  # the dialect's bare name stays
