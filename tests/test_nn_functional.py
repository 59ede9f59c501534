"""torch.nn.functional's losses: values, gradients (input and target), grad_fn chains, errors, against torch."""

import json
import warnings

import numpy as np
import pytest

import gradcli as gc
from gradcli.cli.fast import main as cli_main
from gradcli.ops import FUNCTIONS

torch = pytest.importorskip("torch")
TF = torch.nn.functional

F = {name: info.fn for name, info in FUNCTIONS.items() if info.category == "functional"}
TOL = {"float32": dict(rtol=2e-6, atol=1e-7), "float64": dict(rtol=1e-13, atol=1e-15)}
rng = np.random.default_rng(12)
X, Y = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
P, Q = rng.uniform(0.05, 0.95, (4, 5)), rng.uniform(0, 1, (4, 5))
IDX = np.array([1, 0, 4, 2])
PROB = np.exp(Y) / np.exp(Y).sum(1, keepdims=True)
CASES = [("mse_loss", X, Y), ("l1_loss", X, Y), ("binary_cross_entropy", P, Q),
         ("binary_cross_entropy_with_logits", X, Q), ("cross_entropy", X, IDX), ("cross_entropy", X, PROB),
         ("nll_loss", X, IDX)]


def chain(t):
    names, node = [], t.grad_fn
    while node is not None:
        names.append(node.name().replace("torch::autograd::", ""))
        nxt = [f for f, _ in node.next_functions if f is not None]
        node = nxt[0] if nxt else None
    return names


def pair(a, dtype, requires_grad):
    if a.dtype.kind == "i":
        return gc.tensor(a.tolist()), torch.tensor(a)
    return (gc.tensor(a.tolist(), dtype=dtype, requires_grad=requires_grad),
            torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=requires_grad))


def close(ours, theirs, dtype):
    return np.allclose(np.asarray(ours.tolist()), theirs.detach().numpy(), **TOL[dtype])


def test_the_functional_category_lists_the_losses():
    assert sorted(F) == ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "dropout", "elu",
                         "gelu", "hardtanh", "l1_loss", "leaky_relu", "linear", "logsigmoid", "mse_loss", "nll_loss",
                         "relu6", "silu", "softplus", "softsign", "tanhshrink"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,a,b", CASES, ids=[f"{c[0]}-{c[2].dtype.kind}" for c in CASES])
def test_loss_against_torch(name, a, b, reduction, dtype):
    target_grad = name != "cross_entropy"
    gi, ti = pair(a, dtype, True)
    gt, tt = pair(b, dtype, target_grad)
    ours, theirs = F[name](gi, gt, reduction=reduction), getattr(TF, name)(ti, tt, reduction=reduction)
    assert close(ours, theirs, dtype)
    assert chain(ours) == chain(theirs)
    assert ours.shape == tuple(theirs.shape) and ours.dtype.name == dtype
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    assert close(gi.grad, ti.grad, dtype)
    if tt.requires_grad:
        if name == "binary_cross_entropy" and dtype == "float32":
            # torch's own float32 gradient for the target (log(1 - p) - log(p), cancelling) differs by up
            # to 2.6e-6 between runs of one process (its vectorised log's path depends on alignment)
            assert np.allclose(np.asarray(gt.grad.tolist()), tt.grad.numpy(), rtol=2e-6, atol=1e-5)
        else:
            assert close(gt.grad, tt.grad, dtype)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_weight_ignore_index_and_second_derivative(reduction):
    x = torch.tensor(X, requires_grad=True)
    g = gc.tensor(X.tolist(), dtype="float64", requires_grad=True)
    t, gt = torch.tensor([1, -100, 4, 2]), gc.tensor([1, -100, 4, 2])
    w = rng.uniform(0.5, 2, 5)
    a = TF.cross_entropy(x, t, weight=torch.tensor(w), reduction=reduction)
    b = F["cross_entropy"](g, gt, weight=gc.tensor(w.tolist(), dtype="float64"), reduction=reduction)
    assert close(b, a, "float64")
    ga, = torch.autograd.grad(a.sum(), x, create_graph=True)
    gb, = gc.autograd.grad(b.sum(), g, create_graph=True)
    assert close(gb, ga, "float64")
    ha, = torch.autograd.grad((ga * ga).sum(), x)
    hb, = gc.autograd.grad((gb * gb).sum(), g)
    assert np.allclose(np.asarray(hb.tolist()), ha.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,a,b", [c for c in CASES if c[0] in ("mse_loss", "binary_cross_entropy",
                                                                   "binary_cross_entropy_with_logits")])
def test_second_derivatives_through_the_loss_nodes(name, a, b):
    gi, ti = pair(a, "float64", True)
    gt, tt = pair(b, "float64", True)
    ga, = torch.autograd.grad(getattr(TF, name)(ti, tt), ti, create_graph=True)
    gb, = gc.autograd.grad(F[name](gi, gt), gi, create_graph=True)
    ha, hta = torch.autograd.grad((ga * ga).sum(), (ti, tt))
    hb, htb = gc.autograd.grad((gb * gb).sum(), (gi, gt))
    # torch's double backward of binary_cross_entropy adds its 1e-12 inside the formula; gradcli
    # differentiates the floored first derivative: equal to about 1e-11 relative
    tol = dict(rtol=1e-9, atol=1e-12)
    assert np.allclose(np.asarray(hb.tolist()), ha.numpy(), **tol)
    assert np.allclose(np.asarray(htb.tolist()), hta.numpy(), **tol)


def test_one_dimensional_input_and_next_functions():
    x = torch.tensor(X[0], requires_grad=True)
    g = gc.tensor(X[0].tolist(), dtype="float64", requires_grad=True)
    a, b = TF.cross_entropy(x, torch.tensor(3)), F["cross_entropy"](g, gc.tensor(3))
    a.backward()
    b.backward()
    assert close(b, a, "float64") and close(g.grad, x.grad, "float64")
    assert len(F["nll_loss"](g, gc.tensor(3)).grad_fn.next_functions) == len(TF.nll_loss(x, torch.tensor(3)).grad_fn.next_functions)
    m = F["mse_loss"](g, g.detach()).grad_fn.next_functions
    assert [n is None for n, _ in m] == [n is None for n, _ in TF.mse_loss(x, x.detach()).grad_fn.next_functions]


def test_saved_reduction_is_torchs_int():
    x = gc.tensor(X.tolist(), requires_grad=True)
    assert [F["mse_loss"](x, x.detach(), reduction=r).grad_fn._saved_reduction for r in ("none", "mean", "sum")] \
        == [TF.mse_loss(torch.ones(1, requires_grad=True), torch.ones(1), reduction=r).grad_fn._saved_reduction
            for r in ("none", "mean", "sum")]


def test_errors_as_torch_words_them():
    x = gc.tensor(X.tolist(), requires_grad=True)
    with pytest.raises(gc.ShapeError, match=r"^Target 9 is out of bounds\.$"):
        F["nll_loss"](x, gc.tensor([1, 2, 9, 0]))
    with pytest.raises(gc.ShapeError, match=r"^Expected input batch_size \(4\) to match target batch_size \(2\)\.$"):
        F["cross_entropy"](x, gc.tensor([1, 2]))
    with pytest.raises(gc.GradTypeError, match="^avg is not a valid value for reduction$"):
        F["mse_loss"](x, x, reduction="avg")
    with pytest.raises(gc.ShapeError, match="^all elements of input should be between 0 and 1$"):
        F["binary_cross_entropy"](x, x.detach())
    with pytest.raises(gc.GradTypeError, match="^expected target dtype to be Long or Byte, but got Float$"):
        F["nll_loss"](x, gc.tensor([1., 2., 0., 1.]))
    with pytest.raises(gc.ShapeError, match="^0D or 1D target tensor expected, multi-target not supported$"):
        F["cross_entropy"](x, gc.rand(4, 3))



@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
def test_a_negative_target_other_than_ignore_index_is_out_of_bounds(name):
    """The usual call's check (the targets' least element) sends a negative target to the general
    path, which names it, as torch does; a target of ignore_index (-100) is simply ignored."""
    x = gc.tensor(X.tolist(), requires_grad=True)
    with pytest.raises(gc.ShapeError, match=r"^Target -1 is out of bounds\.$"):
        F[name](x, gc.tensor([1, -1, 0, 2]))
    loss = F[name](x, gc.tensor([1, -100, 0, 2]))
    expected = getattr(TF, name)(torch.tensor(X.tolist()), torch.tensor([1, -100, 0, 2]))
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)


@pytest.mark.parametrize("values", [[0.5, float("nan")], float("nan"), [[0.5, 0.25], [1.5, 0.5]], [-0.0, 0.5]])
def test_binary_cross_entropy_range_check_on_any_shape(values):
    """The input's least and greatest elements, found flat, decide the range check: NaN anywhere,
    a 0-d input, a 2-d one; -0.0 is in range (torch: the same)."""
    x, t = gc.tensor(values), gc.ones_like(gc.tensor(values))
    try:
        expected = TF.binary_cross_entropy(torch.tensor(values), torch.ones_like(torch.tensor(values))).item()
    except RuntimeError as e:
        with pytest.raises(gc.ShapeError, match=f"^{e}$"):
            F["binary_cross_entropy"](x, t)
    else:
        assert F["binary_cross_entropy"](x, t).item() == pytest.approx(expected, rel=1e-6)

def test_size_mismatch_warns_with_torchs_text():
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        F["mse_loss"](gc.ones(3, 1), gc.ones(3))
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        TF.mse_loss(torch.ones(3, 1), torch.ones(3))
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


def test_ops_lists_them_and_a_program_uses_them(capsys):
    assert cli_main(["ops", "--json"]) == 0
    ops = {o["name"]: o for o in json.loads(capsys.readouterr().out)["functions"]}
    assert ops["mse_loss"]["category"] == "functional" and "MseLossBackward0" in ops["mse_loss"]["grad_fns"]
    code = cli_main(["eval", "x = tensor([[1.0, 2.0, 0.5]], requires_grad=True)\n"
                             "import torch.nn.functional as F\nloss = F.cross_entropy(x, tensor([2]))\nloss.backward()", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    x = torch.tensor([[1.0, 2.0, 0.5]], requires_grad=True)
    TF.cross_entropy(x, torch.tensor([2])).backward()
    got = {v["name"]: v for v in doc["variables"]}
    assert np.allclose(got["x"]["grad"], x.grad.numpy(), rtol=1e-6)
    assert got["loss"]["grad_fn"] == "NllLossBackward0"


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4), (2, 2, 2, 2)])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_without_dim_is_torchs_implicit_choice(name, shape):
    data = rng.standard_normal(shape)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        got = FUNCTIONS[name].fn(gc.tensor(data.tolist()))
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        want = getattr(TF, name)(torch.tensor(data, dtype=torch.float32))
    assert np.allclose(np.asarray(got.tolist()), want.numpy(), rtol=1e-6, atol=1e-7)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits_pos_weight_and_weight(reduction):
    pw, w = rng.uniform(0.5, 3, 5), rng.uniform(0.5, 2, 5)
    gi, ti = pair(X, "float64", True)
    gt, tt = pair(Q, "float64", True)
    ours = F["binary_cross_entropy_with_logits"](gi, gt, weight=gc.tensor(w.tolist(), dtype="float64"),
                                                 pos_weight=gc.tensor(pw.tolist(), dtype="float64"), reduction=reduction)
    theirs = TF.binary_cross_entropy_with_logits(ti, tt, weight=torch.tensor(w), pos_weight=torch.tensor(pw),
                                                 reduction=reduction)
    assert close(ours, theirs, "float64")
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    assert close(gi.grad, ti.grad, "float64") and close(gt.grad, tt.grad, "float64")


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 5, 4), (2, 5, 2, 3), (2, 5, 2, 1, 3)])
@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_class_indices_of_any_dimension_with_weight_and_ignore_index(shape, name, reduction):
    # (C,), (N, C) and torch's nll_loss_nd: (N, C, H, W) is NllLoss2DBackward0, other dims go
    # through a view to (N, C, 1, -1) and back
    data = rng.standard_normal(shape)
    target = np.asarray(rng.integers(0, 5, (shape[0],) + shape[2:]) if len(shape) > 1 else rng.integers(0, 5, ()))
    if target.ndim:
        target.flat[0] = -100
    w = rng.uniform(0.5, 2, 5)
    gx = gc.tensor(data.tolist(), dtype="float64", requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    ours = F[name](gx, gc.tensor(target.tolist()), weight=gc.tensor(w.tolist(), dtype="float64"), reduction=reduction)
    theirs = getattr(TF, name)(tx, torch.tensor(target), weight=torch.tensor(w), reduction=reduction)
    assert close(ours, theirs, "float64") and ours.shape == tuple(theirs.shape)
    assert chain(ours) == chain(theirs)
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    assert close(gx.grad, tx.grad, "float64")


def graph(node, depth=0, out=None):
    """The whole backward graph as (depth, name) pairs, depth first."""
    out = [] if out is None else out
    stack = [(node, depth)]
    while stack:
        n, d = stack.pop()
        if n is None:
            continue
        out.append((d, n.name().replace("torch::autograd::", "")))
        stack.extend((c, d + 1) for c, _ in reversed(n.next_functions))
    return out


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 5, 4)])
@pytest.mark.parametrize("kind", ["indices", "probabilities"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_label_smoothing(shape, kind, reduction, weighted):
    data = rng.standard_normal(shape)
    if kind == "indices":
        target = np.asarray(rng.integers(0, 5, (shape[0],) + shape[2:]) if len(shape) > 1 else rng.integers(0, 5, ()))
        if target.ndim:
            target.flat[0] = -100
    else:
        target = np.exp(data) / np.exp(data).sum(1 if len(shape) > 1 else 0, keepdims=True)
    w = rng.uniform(0.5, 2, 5) if weighted else None
    gx = gc.tensor(data.tolist(), dtype="float64", requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    gt = gc.tensor(target.tolist(), dtype="float64" if kind == "probabilities" else None)
    ours = F["cross_entropy"](gx, gt, weight=None if w is None else gc.tensor(w.tolist(), dtype="float64"),
                              reduction=reduction, label_smoothing=0.2)
    theirs = TF.cross_entropy(tx, torch.tensor(target), weight=None if w is None else torch.tensor(w),
                              reduction=reduction, label_smoothing=0.2)
    assert close(ours, theirs, "float64") and graph(ours.grad_fn) == graph(theirs.grad_fn)
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    assert close(gx.grad, tx.grad, "float64")
