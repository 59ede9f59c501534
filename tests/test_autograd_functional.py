"""autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp) against torch.autograd.functional."""

import json

import numpy as np
import pytest

import gradcli as gc
from gradcli.cli.fast import main as cli_main
from gradcli.ops import FUNCTIONS

torch = pytest.importorskip("torch")
TAF = torch.autograd.functional
OURS = {name: FUNCTIONS[name].fn for name in ("jacobian", "hessian", "vjp", "jvp", "hvp", "vhp")}

XS, YS = [1., 2., 3.], [0.5, -1.]


def x(lib, data=XS):
    return lib.tensor(data, dtype=lib.float64)


CASES = {
    "jac-one": ("jacobian", lambda a: a.exp() * a.sum(), lambda L: x(L), {}),
    "jac-tuples": ("jacobian", lambda a, b: (a.sum() * b, b ** 2), lambda L: (x(L), x(L, YS)), {}),
    "jac-scalar-out": ("jacobian", lambda a: a.sum(), lambda L: x(L), {}),
    "jac-unused-input": ("jacobian", lambda a, b: a * 2, lambda L: (x(L), x(L, YS)), {}),
    "jac-matrix": ("jacobian", lambda a: a @ a.t(), lambda L: x(L, [[1., 2.], [3., 4.]]), {}),
    "hess-one": ("hessian", lambda a: (a ** 3).sum(), lambda L: x(L), {}),
    "hess-tuple": ("hessian", lambda a, b: (a ** 2).sum() * b.sum(), lambda L: (x(L), x(L, YS)), {}),
    "hess-matrix": ("hessian", lambda a: (a.sin() * a).sum(), lambda L: x(L, [[1., 2.], [3., 4.]]), {}),
    "vjp": ("vjp", lambda a: a.exp() * a.sum(), lambda L: x(L), {"v": True}),
    "vjp-scalar": ("vjp", lambda a: a.sum(), lambda L: x(L), {}),
    "jvp": ("jvp", lambda a: a.exp() * a.sum(), lambda L: x(L), {"v": True}),
    "hvp": ("hvp", lambda a: (a ** 3).sum(), lambda L: x(L), {"v": True}),
    "vhp": ("vhp", lambda a: (a ** 3 * a.sum()).sum(), lambda L: x(L), {"v": True}),
}


def flat(r):
    return [r] if not isinstance(r, tuple) else [t for item in r for t in flat(item)]


def structure(r):
    return tuple(structure(t) for t in r) if isinstance(r, tuple) else tuple(r.shape)


def run(lib, fns, case, create_graph):
    name, fn, inputs, kw = CASES[case]
    kw = {"v": lib.ones(3, dtype=lib.float64)} if kw.get("v") else {}
    return fns[name](fn, inputs(lib), create_graph=create_graph, **kw)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_against_torch(case, create_graph):
    ours = run(gc, OURS, case, create_graph)
    theirs = run(torch, TAF.__dict__, case, create_graph)
    assert structure(ours) == structure(theirs)
    for a, b in zip(flat(ours), flat(theirs)):
        assert np.allclose(np.asarray(a.tolist()), b.detach().numpy(), rtol=1e-13, atol=0)
        assert a.requires_grad == b.requires_grad


def test_create_graph_keeps_the_result_connected_to_the_inputs():
    for lib, fns in ((gc, OURS), (torch, TAF.__dict__)):
        a = lib.tensor(XS, dtype=lib.float64, requires_grad=True)
        jac = fns["jacobian"](lambda t: t ** 3, a, create_graph=True)
        jac.sum().backward()
        assert a.grad.tolist() == [6., 12., 18.]
        a2 = lib.tensor(XS, dtype=lib.float64, requires_grad=True)
        assert fns["jacobian"](lambda t: t ** 3, a2).requires_grad is False


def test_errors_in_torchs_words():
    with pytest.raises(gc.AutogradError, match="^The vector v can only be None if the user-provided function returns "
                                               "a single Tensor with a single element.$"):
        OURS["vjp"](lambda a: a * 2, x(gc))
    with pytest.raises(gc.GradTypeError, match=r"^The outputs of the user-provided function given to jacobian must be "
                                               r"either a Tensor or a tuple of Tensors but the given outputs of the "
                                               r"user-provided function has type <class 'int'>.$"):
        OURS["jacobian"](lambda a: 3, x(gc))
    with pytest.raises(gc.AutogradError, match="^The Tensor returned by the function given to hessian should contain "
                                               "a single element$"):
        OURS["hessian"](lambda a: a * 2, x(gc))
    with pytest.raises(gc.AutogradError, match="^Output 0 of the user-provided function is independent of input 1. "
                                               "This is not allowed in strict mode.$"):
        OURS["jacobian"](lambda a, b: a * 2, (x(gc), x(gc, YS)), strict=True)
    with pytest.raises(gc.ShapeError, match=r"^v has invalid size: should be \[3\] but got \[2\].$"):
        OURS["vjp"](lambda a: a * 2, x(gc), gc.ones(2, dtype="float64"))


def test_a_program_passes_its_own_functions(capsys):
    program = ("from torch.autograd.functional import jacobian, hessian, vjp\n"
               "x = tensor([1.0, 2.0, 3.0])\nJ = jacobian(lambda a: a.exp() * a.sum(), x)\n"
               "H = hessian(lambda a: (a ** 3).sum(), x)\nout, v = vjp(lambda a: a * a, x, ones(3))")
    code = cli_main(["eval", program, "--json", "--dtype", "float64"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    got = {v["name"]: v["data"] for v in doc["variables"]}
    t = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    assert np.allclose(got["J"], TAF.jacobian(lambda a: a.exp() * a.sum(), t).numpy(), rtol=1e-13)
    assert got["H"] == TAF.hessian(lambda a: (a ** 3).sum(), t).tolist()
    assert got["v"] == [2.0, 4.0, 6.0]
