"""The in-place variants derived from the op declarations (issue 13): every one against torch
(values, gradients, grad_fn and next_functions names, versions), the errors torch raises (saved
values modified, leaves, integer results), through views, and in the language."""

import json

import numpy as np
import pytest

import gradcli as gc
from gradcli.ops import catalog, registry
from gradcli.ops.inplace import TORCH_FUNCTIONS
from helpers import clean_engine_state  # noqa: F401

torch = pytest.importorskip("torch")

X = [[0.5, -1.25], [2.0, 0.75]]
POS = [[0.5, 1.25], [2.0, 0.75]]
OTHER = [[1.5, 0.5], [-2.0, 1.25]]
UNIT = [[0.5, -0.25], [0.75, 0.125]]  # asin_, acos_: inside (-1, 1)
ABOVE1 = [[1.5, 1.25], [2.0, 3.0]]  # acosh_

# Every in-place op derived from a declaration: (its arguments after the tensor, made for m = torch
# or gradcli, as (args, kwargs)), and the tensor's values.
def _no_args(m):
    return (), {}


CASES = {
    "add_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {"alpha": 2}), X),
    "sub_": (lambda m: ((2.5,), {}), X), "mul_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {}), X),
    "div_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {}), X),
    "neg_": (_no_args, X), "pow_": (lambda m: ((3,), {}), X), "square_": (_no_args, X),
    "exp_": (_no_args, X), "log_": (_no_args, POS), "log1p_": (_no_args, POS), "sqrt_": (_no_args, POS),
    "rsqrt_": (_no_args, POS), "abs_": (_no_args, X), "sin_": (_no_args, X), "cos_": (_no_args, X),
    "tan_": (_no_args, X), "tanh_": (_no_args, X), "sigmoid_": (_no_args, X), "relu_": (_no_args, X),
    "reciprocal_": (_no_args, X), "sign_": (_no_args, X), "sgn_": (_no_args, X),
    "exp2_": (_no_args, X), "log2_": (_no_args, POS), "log10_": (_no_args, POS), "sinh_": (_no_args, X),
    "cosh_": (_no_args, X), "asin_": (_no_args, UNIT), "acos_": (_no_args, UNIT), "atan_": (_no_args, X),
    "erf_": (_no_args, X), "floor_": (_no_args, X), "ceil_": (_no_args, X), "trunc_": (_no_args, X),
    "round_": (lambda m: ((), {"decimals": 1}), X), "frac_": (_no_args, X),
    "atan2_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {}), X),
    "hypot_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {}), X),
    "fmod_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {}), X), "remainder_": (lambda m: ((0.75,), {}), X),
    "floor_divide_": (lambda m: ((m.tensor(OTHER),), {}), X),
    "clamp_": (lambda m: ((-0.5, 1.0), {}), X), "clip_": (lambda m: ((), {"min": m.tensor(0.25)}), X),
    "clamp_min_": (lambda m: ((0.6,), {}), X),
    "clamp_max_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {}), X),
    "masked_fill_": (lambda m: ((m.tensor([[True, False], [False, True]]), m.tensor(3.0, requires_grad=True)), {}), X),
    "tril_": (_no_args, X), "triu_": (lambda m: ((1,), {}), X),
    "lerp_": (lambda m: ((m.tensor(OTHER, dtype=m.float64, requires_grad=True),  # lerp wants self's dtype
                          m.tensor([0.25, 0.75], dtype=m.float64, requires_grad=True)), {}), X),
    "addcmul_": (lambda m: ((m.tensor(OTHER, requires_grad=True), m.tensor([[2.0], [-0.5]], requires_grad=True)),
                            {"value": 0.5}), X),
    "addcdiv_": (lambda m: ((m.tensor([1.5, -2.0], requires_grad=True), m.tensor(POS, requires_grad=True)),
                            {"value": -2}), X),
    "scatter_": (lambda m: ((1, m.tensor([[1, 0], [0, 1]]), m.tensor(OTHER, dtype=m.float64, requires_grad=True)),
                            {}), X),
    "scatter_add_": (lambda m: ((0, m.tensor([[1, 1]]), m.tensor([[1.5, -2.0]], dtype=m.float64, requires_grad=True)),
                                {}), X),
    "expm1_": (_no_args, X), "erfc_": (_no_args, X), "deg2rad_": (_no_args, X), "rad2deg_": (_no_args, X),
    "xlogy_": (lambda m: ((m.tensor(POS, dtype=m.float64, requires_grad=True),), {}), X),
    "asinh_": (_no_args, X), "acosh_": (_no_args, ABOVE1), "atanh_": (_no_args, UNIT),
    # torch's other spellings
    "absolute_": (_no_args, X), "arcsin_": (_no_args, UNIT), "arccos_": (_no_args, UNIT), "arctan_": (_no_args, X),
    "arcsinh_": (_no_args, X), "arccosh_": (_no_args, ABOVE1), "arctanh_": (_no_args, UNIT),
    "arctan2_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {}), X), "fix_": (_no_args, X),
    "negative_": (_no_args, X), "multiply_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {}), X),
    "subtract_": (lambda m: ((2.5,), {"alpha": 2}), X),
    "divide_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {"rounding_mode": "trunc"}), X),
    "true_divide_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {}), X),
    "nan_to_num_": (lambda m: ((), {"posinf": 3.0}), X),
    "copysign_": (lambda m: ((m.tensor(OTHER, requires_grad=True),), {}), X),
    "logit_": (lambda m: ((), {"eps": 0.25}), UNIT), "sinc_": (_no_args, X),
}
# Outputs their backward reads (torch saves the result): changing them again fails backward.
SAVES_RESULT = ("exp_", "sigmoid_", "tanh_", "relu_", "sqrt_", "rsqrt_", "tan_", "reciprocal_", "exp2_")
# No gradient in torch (a NotImplemented node): backward fails in both. torch names its in-place
# aten op there (aten::floor_divide_); gradcli's variant records the out-of-place op's node, so
# its message names aten::floor_divide.
NO_GRADIENT = {"floor_divide_": r"^derivative for aten::floor_divide_? is not implemented$"}
# torch records AsinhBackward1... for the in-place inverse hyperbolics, with no derivative
OWN_NODE = {"asinh_": "AsinhBackward1", "acosh_": "AcoshBackward1", "atanh_": "AtanhBackward1",
            "arcsinh_": "AsinhBackward1", "arccosh_": "AcoshBackward1", "arctanh_": "AtanhBackward1"}
NO_GRADIENT.update({name: rf"^the derivative for 'inplace version of {node[:5].lower()}' is not implemented\.$"
                    for name, node in OWN_NODE.items()})


def _derived():
    return sorted(n for n, info in registry.FUNCTIONS.items()
                  if info.category == "in-place" and n not in ("zero_", "fill_", "copy_"))


def _call(m, name):
    make, data = CASES[name]
    args, kwargs = make(m)
    leaf = m.tensor(data, dtype=m.float64, requires_grad=True)
    y = leaf * 1
    out = getattr(y, name)(*args, **kwargs)
    return leaf, y, out, [a for a in (*args, *kwargs.values()) if isinstance(a, m.Tensor) and a.requires_grad]


def _plain(m, t):
    """A tensor's values (torch's sgn gradient is a ZeroTensor, which has no storage to list)."""
    return m.zeros(tuple(t.shape), dtype=t.dtype).add_(t).tolist()


def _names(node):
    return (type(node).__name__, [None if c is None else type(c).__name__ for c, _ in node.next_functions])


def test_every_derived_inplace_op_has_a_case_and_a_row_in_gradcli_ops():
    assert _derived() == sorted(CASES)
    rows = {r["name"]: r for r in catalog.rows()}
    for name in CASES:
        row = rows[name]
        if name in OWN_NODE:  # a node of its own, torch's (not the out-of-place op's)
            assert row["category"] == "in-place" and row["grad_fns"] == [OWN_NODE[name]] and row["grad_fns_of"] is None
            continue
        outplace = registry.FUNCTIONS[name[:-1]]
        assert row["category"] == "in-place" and row["grad_fns_of"] == outplace.name
        assert row["grad_fns"] == [cls.__name__ for cls in outplace.nodes]
        assert row["method"].startswith(f"x.{name}(")


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_op_matches_torch(name):
    seen = []
    for m in (gc, torch):
        leaf, y, out, others = _call(m, name)
        assert out is y
        cot = m.tensor(np.arange(1.0, 5.0).reshape(2, 2).tolist(), dtype=m.float64)
        if name in NO_GRADIENT:
            with pytest.raises(RuntimeError, match=NO_GRADIENT[name]):
                (y * cot).sum().backward()
            grads = None
        else:
            (y * cot).sum().backward()
            grads = [np.round(np.asarray(_plain(m, t.grad)), 10).tolist() for t in (leaf, *others)]
        seen.append((np.round(y.detach().tolist(), 10).tolist(), y._version, _names(y.grad_fn),
                     _names(y.grad_fn.next_functions[0][0]), grads))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_on_a_leaf_that_requires_grad_is_torchs_error(name):
    messages = []
    for m in (gc, torch):
        leaf = m.tensor(CASES[name][1], requires_grad=True)
        args, kwargs = CASES[name][0](m)
        with pytest.raises(RuntimeError) as info:
            getattr(leaf, name)(*args, **kwargs)
        messages.append(str(info.value))
        assert leaf._version == 0
    assert messages[0] == messages[1] == "a leaf Variable that requires grad is being used in an in-place operation."


@pytest.mark.parametrize("name", SAVES_RESULT)
@pytest.mark.parametrize("how", ["tensor", "temporary view", "view used since"])
def test_a_saved_result_changed_again_fails_backward_as_in_torch(name, how):
    messages = []
    for m in (gc, torch):
        leaf = m.tensor(POS, requires_grad=True)
        base = leaf * 1
        keep = None
        if how == "tensor":
            getattr(base, name)()
        elif how == "temporary view":
            getattr(base[1], name)()
        else:  # an op that used the view holds its node: torch names it
            view = base[1]
            getattr(view, name)()
            keep = view * 1
            del view
        base.mul_(2)
        with pytest.raises(RuntimeError) as info:
            base.sum().backward()
        messages.append(str(info.value))
        del keep
    assert messages[0] == messages[1]
    producer = "AsStrided" if how == "view used since" else registry.FUNCTIONS[name[:-1]].nodes[0].__name__[:-9]
    assert f"which is output 0 of {producer}, is at version 2; expected version 1 instead." in messages[0]


@pytest.mark.parametrize("name", ["sin_", "cos_", "log_", "pow_", "abs_", "clamp_", "div_"])
def test_an_overwritten_input_is_saved_as_torchs_original_self(name):
    # the formula reads the input as it was (a clone, in the graph under create_graph): no error
    results = []
    for m in (gc, torch):
        leaf, y, out, others = _call(m, name)
        cot = m.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=m.float64)
        (g,) = m.autograd.grad([(y * cot).sum()], [leaf], create_graph=True)
        h = m.autograd.grad([(g * g).sum()], [leaf], allow_unused=True)[0] if g.requires_grad else None
        results.append((np.round(g.tolist(), 10).tolist(), None if h is None else np.round(_plain(m, h), 8).tolist(),
                        g.grad_fn and _names(g.grad_fn)))
    assert results[0] == results[1]


def test_self_times_self_in_place_fails_as_in_torch():
    messages = []
    for m in (gc, torch):
        y = m.tensor([1.0, 2.0], requires_grad=True) * 2
        y.mul_(y)  # other is y itself: saved as it is, then modified
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("name", ["exp_", "sigmoid_", "sin_", "relu_", "clamp_min_"])
def test_inplace_through_a_view_rebases_the_base(name):
    seen = []
    for m in (gc, torch):
        leaf = m.tensor(X, requires_grad=True)
        base = leaf * 1
        view = base[:, 1]
        args = (0.6,) if name == "clamp_min_" else ()
        getattr(view, name)(*args)
        (base * m.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        seen.append((_names(base.grad_fn), type(view.grad_fn).__name__, base._version, view._version,
                     np.round(base.detach().tolist(), 6).tolist(), np.round(leaf.grad.tolist(), 6).tolist()))
    assert seen[0] == seen[1]
    assert seen[0][0][0] == "CopySlices" and seen[0][1] == "AsStridedBackward0"


def test_inplace_without_grad_bumps_the_version_and_checks_the_dtype():
    for m in (gc, torch):
        x = m.tensor([1.0, 4.0])
        assert x.sqrt_() is x and x.tolist() == [1.0, 2.0] and x._version == 1
        with m.no_grad():
            w = m.tensor([1.0, 2.0], requires_grad=True)
            w.mul_(3)  # allowed on a leaf under no_grad
            assert w.tolist() == [3.0, 6.0] and w.grad_fn is None
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            m.tensor([1, 2]).exp_()


def test_torch_module_functions_and_functional_relu():
    torch_names = {n for n in CASES if hasattr(torch, n)}
    assert torch_names == set(TORCH_FUNCTIONS) & set(CASES)
    for n in CASES:
        assert (n in registry.NAMESPACES["torch"]) == (n in torch_names), n
    for m in (gc, torch):
        y = m.tensor(X, requires_grad=True) * 1
        assert m.relu_(y) is y and type(y.grad_fn).__name__ == "ReluBackward0"
        z = m.tensor(X, requires_grad=True) * 1
        assert m.sigmoid_(z) is z and type(z.grad_fn).__name__ == "SigmoidBackward0"
    from gradcli.ops import nn_functional
    for F, m in ((nn_functional, gc), (torch.nn.functional, torch)):
        y = m.tensor(X, requires_grad=True) * 1
        assert F.relu(y, inplace=True) is y and y.tolist() == [[0.5, 0.0], [2.0, 0.75]]
        assert F.relu(y * 1) is not y


def test_inplace_ops_in_the_language(capsys):
    from gradcli.cli import main
    program = ("import torch\nimport torch.nn.functional as F\nx = torch.tensor([[0.5, -1.0]], requires_grad=True)\n"
               "y = x * 2\ny.exp_()\nz = x * 1\nF.relu(z, inplace=True)\nw = torch.sigmoid_(x * 3)\n"
               "(y + z + w).sum().backward()\nprint(y.grad_fn, z.grad_fn, w.grad_fn)\nprint(x.grad)")
    assert main(["eval", program, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)["printed"]
    x = torch.tensor([[0.5, -1.0]], requires_grad=True)
    y = (x * 2).exp_()
    z = torch.nn.functional.relu(x * 1, inplace=True)
    w = torch.sigmoid_(x * 3)
    (y + z + w).sum().backward()
    assert printed[0] == "<ExpBackward0> <ReluBackward0> <SigmoidBackward0>"
    assert printed[1] == str(x.grad)
    bad = "x = tensor([1.0], requires_grad=True); y = x.exp(); y.exp_(); y.sum().backward()"
    assert main(["eval", bad, "--json"]) == 3
    err = json.loads(capsys.readouterr().out)["error"]["message"]
    assert err.startswith("one of the variables needed for gradient computation has been modified by an inplace "
                          "operation: [torch.FloatTensor [1]], which is output 0 of Exp, is at version 1; "
                          "expected version 0 instead.")
