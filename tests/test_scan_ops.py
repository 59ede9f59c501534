"""cumsum, cumprod, flip, roll, tril/triu (and tril_/triu_), lerp, addcmul, addcdiv (and their
in-place forms) from a program: run through ``gradcli eval`` and under torch itself, every printed
line the same; their dtypes and refusals (a bad dim, mismatched dtypes, shapes) as torch's."""

import numpy as np
import pytest

import gradcli as gc
from helpers import error_text, same_error_as_torch
from test_lang_pytorch import run, same_as_torch

torch = pytest.importorskip("torch")

PROGRAMS = {
    "scans, flips, rolls and triangles": """
import torch
x = torch.tensor([[1.0, 2.0, 0.5], [3.0, 0.5, 2.0]], requires_grad=True)
c = torch.cumsum(x, dim=0)
p = x.cumprod(1)
f = x.flip(0)
g = torch.flip(x, [0, 1])
r = torch.roll(x, 1, 1)
s = x.roll(-1)
t = x.tril()
u = torch.triu(x, diagonal=1)
print(c, p, f, g, r, s, t, u)
print([v.grad_fn.name() for v in (c, p, f, g, r, s, t, u)], len(c.grad_fn.next_functions))
total = (c * 1.5).sum() + (p * p).sum() + (f * x).sum() + g[0, 0] + (r * 2).sum() + s[1, 2] + t.sum() + u.sum()
total.backward()
print(x.grad)
""",
    "cumprod through zeros": """
import torch
x = torch.tensor([[2.0, 0.0, 3.0, 0.5], [0.0, 1.5, 0.0, 2.0]], requires_grad=True)
y = torch.cumprod(x, dim=1)
y.backward(torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 2.0, 1.0]]))
print(y, x.grad)
g, = torch.autograd.grad(torch.cumprod(x, -1).sum(), x, create_graph=True)
print(g)
h, = torch.autograd.grad((g * g).sum(), x)
print(h)
""",
    "lerp, addcmul, addcdiv and their in-place forms": """
import torch
x = torch.tensor([[1.0, 2.0, 4.0], [3.0, 0.5, 2.0]], requires_grad=True)
e = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
w = torch.tensor([[0.25], [0.75]], requires_grad=True)
a = torch.lerp(x, e, 0.25)
b = x.lerp(e, w)
m = torch.addcmul(x, e, w, value=2)
d = torch.addcdiv(x, e, w, value=-0.5)
print(a, b, m, d)
print([v.grad_fn.name() for v in (a, b, m, d)], [len(v.grad_fn.next_functions) for v in (a, b, m, d)])
y = x * 1
y.lerp_(e, 0.5)
y.addcmul_(e, e, value=0.5)
y.addcdiv_(x, w)
y.tril_()
print(y, y.grad_fn.name(), y.grad_fn.next_functions[0][0].name())
(a.sum() + b.sum() + (m * d).sum() + y.sum()).backward()
print(x.grad, e.grad, w.grad)
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_print_what_torch_prints(name):
    same_as_torch(PROGRAMS[name])


@pytest.mark.parametrize("program, message", [
    ("import torch\nx = torch.ones(2, 3, requires_grad=True)\ny = torch.cumsum(x, dim=2)",
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("import torch\nx = torch.ones(2, 3)\ny = x.cumprod(-3)",
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ("import torch\ny = torch.ones(2, 3).flip(0, 2)", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("import torch\ny = torch.ones(2, 3).flip((1, -1))", "dim 1 appears multiple times in the list of dims"),
    ("import torch\ny = torch.ones(2, 3).roll(1, 5)", "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    ("import torch\ny = torch.ones(2, 3).roll((1, 2), 0)", "shifts and dimensions must align. shifts: 2, dims:1"),
    ("import torch\ny = torch.ones(3).tril()", "tril: input tensor must have at least 2 dimensions"),
    ("import torch\ny = torch.lerp(torch.ones(2), torch.ones(2, dtype=torch.float64), 0.5)",
     "expected dtype float for `end` but got dtype double"),
    ("import torch\ny = torch.addcmul(torch.ones(2, 3), torch.ones(4), torch.ones(3))",
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
])
def test_a_bad_argument_exits_2_with_torchs_message(program, message):
    code, doc = run(program)
    assert code == 2, doc
    assert doc["error"]["message"] == message
    with pytest.raises(Exception) as info:  # torch's own words
        exec(program, {})  # noqa: S102 (fixed test programs)
    assert error_text(info.value) == message


ERRORS = [
    "L.ones(2, 3).cumsum(2)", "L.tensor(3.0).cumsum(1)", "L.ones(2, 3).flip(2)", "L.ones(2, 3).flip((0, -2))",
    "L.ones(2, 3).roll(1, 2)", "L.ones(2, 3).roll((1,), (0, 1))", "L.ones(2, 3).roll((1, 2))", "L.ones(2, 3).roll([], [])",
    "L.tensor(3.0).roll(1, 0)", "L.tensor(3.0).triu()",
    "L.lerp(L.ones(2, 3), L.ones(2, 3, dtype=L.float64), 0.5)", "L.lerp(L.ones(3), L.ones(3), L.ones(3, dtype=L.float64))",
    "L.lerp(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64), 0.5)",
    "L.lerp(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64))",
    "L.lerp(L.ones(2, 3), L.ones(4), 0.5)", "L.lerp(L.ones(2, 3), L.ones(3), L.ones(2, 2))",
    "L.addcmul(L.ones(2, 3), L.ones(4), L.ones(3))", "L.addcdiv(L.ones(3), L.ones(2, 3), L.ones(4, 1, 2))",
    "L.addcdiv(L.ones(3), L.tensor([1, 2, 3]), L.tensor([1, 2, 3]))",
    "L.ones(3).addcmul_(L.ones(2, 3), L.ones(3))", "L.ones(3, dtype=L.int64).addcmul_(L.ones(3), L.ones(3))",
    "L.ones(3).lerp_(L.ones(2, 3), 0.5)", "L.ones(2, 2, requires_grad=True).tril_()",
]


@pytest.mark.parametrize("src", ERRORS)
def test_error_messages_match_torch(src):
    same_error_as_torch(src)


VALUES = [
    "L.tensor([1, 2, 3], dtype=L.int32).cumsum(0)", "L.tensor([True, False, True]).cumsum(0)",
    "L.tensor([2, 3, 4]).cumprod(0)", "L.tensor([1, 2]).cumsum(0, dtype=L.float32)",
    "L.tensor([[0.1, 0.2], [0.3, 0.7]]).cumsum(1, dtype=L.float64)", "L.tensor(2.5).cumsum(-1)",
    "L.tensor(2.5).cumprod(0)", "L.ones(2, 0).cumprod(1)", "L.ones(0).cumsum(0)",
    "L.tensor(3.0).flip(0)", "L.arange(6.0).reshape(2, 3).flip([])", "L.arange(6.0).reshape(2, 3).roll(-7, 1)",
    "L.arange(6.0).reshape(2, 3).roll((1, 1), (1, 1))", "L.tensor(3.0).roll(2)", "L.ones(0).roll(1)",
    "L.arange(24.0).reshape(2, 3, 4).tril(1)", "L.arange(12.0).reshape(3, 4).triu(-5)",
    "L.arange(12).reshape(3, 4).tril()", "L.tensor([[1.0, float('nan')], [2.0, 3.0]]).tril()",
    "L.lerp(L.tensor([1.0, 2.0]), L.tensor([3.0, 5.0]), L.tensor(0.5, dtype=L.float64))",
    "L.lerp(L.tensor([1.0, 2.0]), L.tensor([3.0, 5.0]), L.tensor(2))", "L.lerp(L.ones(3), L.zeros(2, 3), 2)",
    "L.addcmul(L.tensor([1, 2]), L.tensor([1, 2]), L.tensor([3, 4]), value=2.5)",
    "L.addcmul(L.ones(2), L.tensor([1, 2]), L.ones(2, dtype=L.float64))",
    "L.addcmul(L.ones(2), L.tensor(2.0, dtype=L.float64), L.ones(2))",
    "L.addcdiv(L.tensor([1, 2]), L.ones(2), L.tensor([2.0, 4.0]), value=L.tensor(3.0))",
    "L.addcdiv(L.ones(2), L.ones(2), L.zeros(2))",
]


@pytest.mark.parametrize("src", VALUES)
def test_values_and_dtypes_match_torch(src):
    ours, theirs = (eval(src, {"L": L}) for L in (gc, torch))  # noqa: S307 (fixed test expressions)
    assert str(ours.dtype) == str(theirs.dtype) and list(ours.shape) == list(theirs.shape)
    np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.numpy())


def test_float32_scans_round_as_torch_accumulates():
    """torch's CPU cumsum/cumprod accumulate float32 in float64: the same bits here (NumPy alone
    would round at every step)."""
    values = np.random.default_rng(0).uniform(0.9, 1.1, (3, 500)).astype(np.float32)
    for name in ("cumsum", "cumprod"):
        ours = getattr(gc.tensor(values.tolist(), dtype=gc.float32), name)(1)
        theirs = getattr(torch.tensor(values), name)(1)
        np.testing.assert_array_equal(np.asarray(ours._data), theirs.numpy())


def test_dtype_cast_inside_the_node_as_torch():
    """cumsum/cumprod(dtype=): one node straight on the input (no ToCopyBackward0 before it), the
    gradient back in the input's dtype."""
    for L in (gc, torch):
        x = L.tensor([[1.0, 2.0, 0.5], [3.0, 0.5, 2.0]], requires_grad=True)
        for y in (L.cumsum(x, 0, dtype=L.float64), x.cumprod(1, dtype=L.float64)):
            assert str(y.dtype) == "torch.float64"
            assert [type(n).__name__ for n, _ in y.grad_fn.next_functions] == ["AccumulateGrad"]
        (L.cumsum(x, 0, dtype=L.float64).sum() + x.cumprod(1, dtype=L.float64).sum()).backward()
        assert str(x.grad.dtype) == "torch.float32"
    ours, theirs = [], []
    for L, out in ((gc, ours), (torch, theirs)):
        x = L.tensor([[1.0, 2.0, 0.5], [3.0, 0.5, 2.0]], requires_grad=True)
        (L.cumsum(x, 0, dtype=L.float64).sum() + x.cumprod(1, dtype=L.float64).sum()).backward()
        out.append(x.grad.tolist())
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_saved_fields_as_torch():
    """grad_fn._saved_*: the same fields, with the same values where torch shows them plainly."""
    for fn in (lambda L, x, e, w: x.cumsum(1), lambda L, x, e, w: x.cumprod(0), lambda L, x, e, w: x.flip(0),
               lambda L, x, e, w: x.roll((1, 2), (0, 1)), lambda L, x, e, w: x.roll(1), lambda L, x, e, w: x.tril(1),
               lambda L, x, e, w: x.triu(), lambda L, x, e, w: L.lerp(x, e, 0.3), lambda L, x, e, w: L.lerp(x, e, w),
               lambda L, x, e, w: L.addcmul(x, e, w, value=2), lambda L, x, e, w: L.addcdiv(x, e, w)):
        nodes = []
        for L in (gc, torch):
            x = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
            e = L.tensor([[0.5, 1.5, 2.5]], requires_grad=True)
            w = L.tensor([0.2, 0.7, 0.4], requires_grad=True)
            nodes.append(fn(L, x, e, w).grad_fn)
        fields = [sorted(a for a in dir(n) if a.startswith("_saved_")) for n in nodes]
        assert fields[0] == fields[1], type(nodes[1]).__name__
        for field in fields[1]:
            theirs = getattr(nodes[1], field)
            if not isinstance(theirs, torch.Tensor):
                assert getattr(nodes[0], field) == theirs, field


def test_ops_are_listed_with_their_nodes(capsys):
    from gradcli.cli import main
    import json
    assert main(["ops", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["functions"]}
    expected = {"cumsum": ["CumsumBackward0"], "cumprod": ["CumprodBackward0"], "flip": ["FlipBackward0"],
                "roll": ["RollBackward0"], "tril": ["TrilBackward0"], "triu": ["TriuBackward0"],
                "lerp": ["LerpBackward0", "LerpBackward1"], "addcmul": ["AddcmulBackward0"],
                "addcdiv": ["AddcdivBackward0"], "tril_": ["TrilBackward0"], "lerp_": ["LerpBackward0", "LerpBackward1"]}
    for name, nodes in expected.items():
        assert rows[name]["grad_fns"] == nodes, name


def test_cumprod_zeros_path_on_array_api_strict():
    """The O(n) masks of cumprod's gradient with zeros (plain backward) use only array-API calls."""
    pytest.importorskip("array_api_strict")
    from test_backends import host
    values = [[2.0, 0.0, 3.0, 0.5], [0.0, 1.5, 0.0, 2.0], [1.0, 2.0, 3.0, 4.0]]
    grads = []
    for device in ("array_api_strict", "cpu"):
        x = gc.tensor(values, dtype=gc.float64, device=device, requires_grad=True)
        (gc.cumprod(x, 1) * gc.tensor([[1.0, 2.0, 3.0, 4.0]] * 3, dtype=gc.float64, device=device)).sum().backward()
        grads.append(host(x.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    np.testing.assert_allclose(grads[1][0], [1.0, 2 * (2 + 3 * 3 + 4 * 3 * 0.5), 0.0, 0.0])  # 2nd: x0 (g1 + g2 x2 + g3 x2 x3)


@pytest.mark.parametrize("src", ["L.ones(2, 3).cumsum(1.0)", "L.ones(2, 3).cumprod((0, 1))", "L.ones(2, 3).cumsum(True)",
                                 "L.ones(2, 3).flip(True)", "L.ones(2, 3).flip(None)", "L.ones(2, 3).roll(None)",
                                 "L.ones(2, 3).roll(1.5)", "L.ones(2, 3).tril(1.5)",
                                 "L.addcmul(L.ones(2), L.ones(2), L.ones(2), value=None)", "L.lerp(L.ones(2), [1.0], 0.5)",
                                 "L.addcdiv(L.ones(2), L.ones(2), 2.0)"])
def test_wrong_argument_types_are_type_errors_as_in_torch(src):
    """torch's TypeError (its message adds the argument's position, which gradcli leaves out)."""
    for L in (gc, torch):
        with pytest.raises(TypeError):
            eval(src, {"L": L})  # noqa: S307 (fixed test expressions)


def test_numpy_and_tensor_integers_are_taken_as_ints():
    x = np.arange(6.0).reshape(2, 3)
    for src in ("t.cumsum(np.int64(1))", "t.cumprod(L.tensor(0))", "t.flip(np.int64(0), 1)",
                "t.roll(np.int32(1), np.int64(0))", "t.tril(np.int64(-1))"):
        ours, theirs = (eval(src, {"L": L, "np": np, "t": L.tensor(x.tolist())}) for L in (gc, torch))  # noqa: S307
        np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.numpy())


def test_running_sums_start_from_positive_zero_as_torch():
    """torch's cumsum adds each element to an accumulator that starts at +0.0: a running sum of -0.0
    is +0.0 (NumPy's accumulate starts from the first element: -0.0); cumprod keeps -0.0 (1 * -0.0)."""
    for values in ([-0.0, 1.0], [-0.0, -0.0, -1.0, 1.0], [[-0.0, 2.0], [-0.0, -0.0]]):
        for dtype, tdtype in ((gc.float32, torch.float32), (gc.float64, torch.float64), (gc.float16, torch.float16)):
            for dim in range(np.ndim(values)):
                for fn in ("cumsum", "cumprod"):
                    got = getattr(gc.tensor(values, dtype=dtype), fn)(dim)
                    want = getattr(torch.tensor(values, dtype=tdtype), fn)(dim)
                    assert str(got) == str(want), (values, dtype, dim, fn)
                    assert np.array_equal(np.signbit(np.array(got.tolist())), np.signbit(want.numpy())), (values, fn)
    x, tx = gc.tensor([-0.0, 1.0], requires_grad=True), torch.tensor([-0.0, 1.0], requires_grad=True)
    x.cumsum(0).backward(gc.tensor([-0.0, -0.0]))
    tx.cumsum(0).backward(torch.tensor([-0.0, -0.0]))
    assert str(x.grad) == str(tx.grad) == "tensor([0., 0.])"
