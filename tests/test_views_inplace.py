"""Views and in-place updates (issue 13, A and B): every case runs the same code under torch and
gradcli and compares what it observes: values, gradients, grad_fn names and next_functions, view
bases, version counters, and the type (a subclass of torch's) and message of any exception."""

import numpy as np
import pytest

import gradcli as gc

torch = pytest.importorskip("torch")


def _norm(v):
    """What a case observed, in a form both libraries share."""
    if hasattr(v, "next_functions"):
        return ("node", type(v).__name__, v.name(),
                tuple(None if n is None else type(n).__name__ for n, _ in v.next_functions))
    if hasattr(v, "shape") and hasattr(v, "tolist"):
        return ("tensor", tuple(v.shape), np.round(np.asarray(v.detach().tolist(), dtype=float), 5).tolist())
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    return v


def _observe(case, m):
    seen = []
    try:
        case(m, seen.append)
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return [_norm(x) for x in seen], exc
    return [_norm(x) for x in seen], None


def same_as_torch(case):
    """Run ``case(m, see)`` with m = torch and m = gradcli; all it saw and raised must agree."""
    ours, our_exc = _observe(case, gc)
    theirs, their_exc = _observe(case, torch)
    assert ours == theirs
    if their_exc is None:
        assert our_exc is None, f"gradcli raised {our_exc!r}; torch did not"
        return theirs
    assert our_exc is not None, f"torch raised {their_exc!r}; gradcli did not"
    assert isinstance(our_exc, type(their_exc)), (type(our_exc).__mro__, type(their_exc))
    assert str(our_exc) == str(their_exc)
    assert isinstance(our_exc, gc.errors.GradcliError)  # the CLI's exit code and kind still apply
    return theirs


W = [[1.0, 2.0], [3.0, 4.0]]


def _start(m):
    r = m.ones(2, 2, requires_grad=True)
    return r, r.clone(), m.tensor(W)


def _finish(m, see, r, x, w):
    see(x.grad_fn)
    (x * w).sum().backward()
    see(r.grad)


# -- A: in-place through views rebases history ------------------------------------------------------

INPLACE_THROUGH_VIEWS = {
    "slice_mul_": lambda m, x, r: x[0:1].mul_(2),
    "select_add_tensor": lambda m, x, r: x[0].add_(r[1] * 3),
    "transpose_select_mul_tensor": lambda m, x, r: x.t()[0].mul_(r[1]),
    "view_slice_imul": lambda m, x, r: x.view(4)[1:3].mul_(3),
    "chain_of_views": lambda m, x, r: x.unsqueeze(0).squeeze(0).permute(1, 0)[1].add_(r[0] * 2),
    "narrow_sub_": lambda m, x, r: x.narrow(1, 1, 1).sub_(r[:, :1]),
    "select_method_div_": lambda m, x, r: x.select(1, 0).div_(r[0] + 1),
    "reshape_viewable": lambda m, x, r: x.reshape(4)[::2].mul_(5),
    "diagonal_mul_": lambda m, x, r: x.diagonal().mul_(r[0]),
    "zero_on_view": lambda m, x, r: x[1].zero_(),
    "fill_on_view": lambda m, x, r: x[:, 0].fill_(3),
    "copy_into_view": lambda m, x, r: x[1].copy_(r[0] * 7),
    "view_of_view": lambda m, x, r: x[0][1:].mul_(r[1, :1]),
    "whole_base_then_view_used": lambda m, x, r: x.mul_(r),
    "alias_ellipsis": lambda m, x, r: x[...].add_(1),
}


@pytest.mark.parametrize("name", sorted(INPLACE_THROUGH_VIEWS))
def test_in_place_through_a_view_matches_torch(name):
    change = INPLACE_THROUGH_VIEWS[name]

    def case(m, see):
        r, x, w = _start(m)
        v = x[1]  # a view made before: its grad_fn is regenerated too
        change(m, x, r)
        see(x)
        see(v.grad_fn)
        see(v._base is x)
        see(x._version)
        see(v._version)
        _finish(m, see, r, x, w)
    same_as_torch(case)


def test_issue_example_gives_torch_gradient():
    r = gc.ones(2, 2, requires_grad=True)
    x = r.clone()
    x[0:1].mul_(2)
    x.sum().backward()
    assert r.grad.tolist() == [[2.0, 2.0], [1.0, 1.0]]
    assert x.grad_fn.name() == "torch::autograd::CopySlices"
    assert [type(n).__name__ for n, _ in x.grad_fn.next_functions] == ["CloneBackward0", "NoneType"]


@pytest.mark.parametrize("make", [
    lambda x: x[0:1], lambda x: x[1], lambda x: x.t(), lambda x: x.view(4), lambda x: x.reshape(2, 2),
    lambda x: x.transpose(0, 1), lambda x: x.permute(1, 0), lambda x: x.T, lambda x: x.unsqueeze(1),
    lambda x: x[None], lambda x: x.squeeze(), lambda x: x.expand(3, 2, 2), lambda x: x.narrow(0, 1, 1),
    lambda x: x.select(1, 1), lambda x: x.diagonal(), lambda x: x[...], lambda x: x[0][1],
])
def test_views_share_storage_version_and_base(make):
    def case(m, see):
        x = m.ones(2, 2).clone()
        v = make(x)
        see(v._is_view())
        see(v._base is x)
        x.add_(1)  # the view sees the change and the version
        see(v)
        see(v._version)
        see(x.detach()._is_view())
        see(x.detach()._base is None)
    same_as_torch(case)


def test_advanced_indexing_and_clone_are_not_views():
    def case(m, see):
        x = m.ones(3, 2)
        for v in (x[[0, 1]], x[m.tensor([True, False, True])], x.clone(), x.t().reshape(6)):
            see(v._is_view())
            see(v._base is None)
    same_as_torch(case)


def test_in_place_on_base_regenerates_views_and_their_gradient():
    def case(m, see):
        r, x, w = _start(m)
        v = x[0]
        x.mul_(2)
        see(v.grad_fn)
        (v * w[0]).sum().backward()
        see(r.grad)
    same_as_torch(case)


def test_saved_tensor_modified_through_a_view_fails_backward():
    def case(m, see):
        r, x, _ = _start(m)
        y = x * x
        x[0:2].mul_(2)
        y.sum().backward()
    same_as_torch(case)


def test_saved_output_modified_through_a_view_fails_backward():
    def case(m, see):
        r = m.ones(2, 2, requires_grad=True)
        y = r.exp()
        y[0].mul_(2)
        y.sum().backward()
    same_as_torch(case)


@pytest.mark.parametrize("where", ["base", "view"])
def test_retain_grad_follows_in_place_changes(where):
    def case(m, see):
        r, x, w = _start(m)
        v = x[0]
        v.retain_grad()
        x.retain_grad()
        (x if where == "base" else v).mul_(3)
        (x * w).sum().backward()
        see(x.grad)
        see(v.grad)
        see(r.grad)
    same_as_torch(case)


def test_hooks_stay_with_the_history_they_were_registered_on():
    def case(m, see):
        r, x, w = _start(m)
        seen = []
        x.register_hook(lambda g: seen.append(g.clone()))
        x.mul_(2)
        x[0].add_(1)
        (x * w).sum().backward()
        see(seen)
        see(r.grad)
    same_as_torch(case)


def test_view_of_a_tensor_that_needs_no_grad_gets_a_history_when_the_base_does():
    def case(m, see):
        z = m.zeros(3)
        w = m.ones(3, requires_grad=True)
        v = z[0:2]
        z.add_(w)
        see(v.requires_grad)
        see(v.grad_fn)
        (v * m.tensor([2.0, 5.0])).sum().backward()
        see(w.grad)
    same_as_torch(case)


# -- item assignment --------------------------------------------------------------------------------

SETITEM = {
    "int_scalar": lambda m, x, r: x.__setitem__(0, 5),
    "mask_zero": lambda m, x, r: x.__setitem__(m.tensor([True, False]), 0),
    "index_tensor_values": lambda m, x, r: x.__setitem__(m.tensor([0]), r[1] * 3),
    "pair_of_ints": lambda m, x, r: x.__setitem__((0, 1), r[0, 0] * 3),
    "column_list": lambda m, x, r: x.__setitem__((slice(None), [1]), r[:, :1] * 3),
    "repeated_index": lambda m, x, r: x.__setitem__([0, 0], r[1] * 2),
    "broadcast_value": lambda m, x, r: x.__setitem__(slice(None), r[0] * 2),
    "ellipsis": lambda m, x, r: x.__setitem__(Ellipsis, 2.5),
    "mask_2d_values": lambda m, x, r: x.__setitem__(m.tensor([[True, False], [False, True]]), r[0] * 4),
    "slice_then_mask": lambda m, x, r: x.__setitem__((slice(1, None), m.tensor([False, True])), r[0, :1]),
}


@pytest.mark.parametrize("name", sorted(SETITEM))
def test_item_assignment_matches_torch(name):
    def case(m, see):
        r, x, w = _start(m)
        SETITEM[name](m, x, r)
        see(x)
        _finish(m, see, r, x, w)
    same_as_torch(case)


def test_augmented_item_assignment_matches_torch():
    def case(m, see):
        r, x, w = _start(m)
        x[1:] += r[0]
        x[:, 0] *= r[1]
        see(x)
        _finish(m, see, r, x, w)
    same_as_torch(case)


def test_item_assignment_on_a_tensor_without_grad():
    def case(m, see):
        z = m.zeros(3)
        w = m.ones(3, requires_grad=True)
        z[1:] = w[:2] * 2
        see(z)
        see(z.grad_fn)
        (z * m.tensor([1.0, 2.0, 3.0])).sum().backward()
        see(w.grad)
        z2 = m.zeros(2, 3)
        z2[0] = m.tensor([1, 2, 3])  # integer values cast to the tensor's dtype
        z2[:, 1] = 7
        see(z2)
        see(z2.requires_grad)
    same_as_torch(case)


# -- B: the errors torch raises ------------------------------------------------------------------------

def _leaf_view_in_place(m, see):
    r = m.ones(2, 2, requires_grad=True)
    r[0].mul_(2)


def _leaf_item_assignment(m, see):
    r = m.ones(2, 2, requires_grad=True)
    r[0] = 1


def _no_grad_view_of_leaf(m, see):
    r = m.ones(2, 2, requires_grad=True)
    with m.no_grad():
        v = r[0]
    v.mul_(2)


def _no_grad_view_of_non_leaf(m, see):
    x = m.ones(2, 2, requires_grad=True).clone()
    with m.no_grad():
        v = x[0]
    v.mul_(2)


def _no_grad_view_changed_in_no_grad(m, see):
    r = m.ones(2, 2, requires_grad=True)
    x = r.clone()
    with m.no_grad():
        v = x[0]
        v.mul_(2)
    see(x)
    x.sum().backward()
    see(r.grad)


def _detach_view_in_place(m, see):
    x = m.ones(2, 2, requires_grad=True).clone()
    x[0].detach_()


def _saved_detached_in_place(m, see):
    r = m.ones(2, 2, requires_grad=True)
    x = r * 1
    y = x * x
    x.detach_()
    see(x.requires_grad)
    y.sum().backward()


def _detached_before_use(m, see):
    r = m.ones(2, requires_grad=True)
    x = r * 2
    x.detach_()
    y = (x * r).sum()
    y.backward()
    see(r.grad)


def _data_set_to_integer(m, see):
    r = m.ones(2, requires_grad=True)
    r.data = m.tensor([1, 2])


def _grad_set_to_itself(m, see):
    r = m.ones(2, requires_grad=True)
    r.grad = r


def _grad_of_nothing(m, see):
    r = m.ones(2, requires_grad=True)
    m.autograd.grad(r.sum(), [])


def _expanded_in_place(m, see):
    x = m.ones(2, requires_grad=True).clone()
    x.expand(3, 2).mul_(2)


def _overlapping_item_assignment(m, see):
    x = m.ones(2).clone()
    x.expand(3, 2)[0] = 1


def _version_of_base_in_no_grad(m, see):
    r = m.ones(2, 2, requires_grad=True)
    with m.no_grad():
        r[0].mul_(2)
    see(r)
    see(r._version)
    see(r.grad_fn)


ERRORS = [_leaf_view_in_place, _leaf_item_assignment, _no_grad_view_of_leaf, _no_grad_view_of_non_leaf,
          _no_grad_view_changed_in_no_grad, _detach_view_in_place, _saved_detached_in_place,
          _detached_before_use, _data_set_to_integer, _grad_set_to_itself, _grad_of_nothing,
          _expanded_in_place, _overlapping_item_assignment, _version_of_base_in_no_grad]


@pytest.mark.parametrize("case", ERRORS, ids=lambda f: f.__name__.strip("_"))
def test_view_and_in_place_errors_match_torch(case):
    same_as_torch(case)


def test_double_backward_through_copy_slices():
    def case(m, see):
        r = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        x = r.clone()
        x[0].mul_(r[1])
        (g,) = m.autograd.grad((x * x).sum(), r, create_graph=True)
        see(g)
        g.sum().backward()
        see(r.grad)
    same_as_torch(case)


# -- item assignment in the language ---------------------------------------------------------------

PROGRAM = """r = ones(2, 2, requires_grad=True)
x = r.clone()
x[0] = 5
x[1:] += r[0] * 2
x[:, 1] *= 3
x[tensor([False, True]), 0] = r[1, 1] * 4
(x * x).sum().backward()
print(x.grad_fn)
print(x.grad_fn.next_functions)
print(r.grad)
"""


def test_item_assignment_in_the_language_matches_torch(capsys):
    import json
    import re
    from gradcli.cli import main
    code = main(["eval", PROGRAM, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    printed = json.loads(out)["printed"]
    lines = []
    env = {"ones": torch.ones, "tensor": torch.tensor,
           "print": lambda *a: lines.append(" ".join(str(x) for x in a))}
    exec(PROGRAM, env)  # noqa: S102 - the same program under torch, as the oracle
    assert printed == [re.sub(r" object at 0x[0-9a-f]+", "", line) for line in lines]
    assert printed[0] == "<CopySlices>"


@pytest.mark.parametrize("program, message, code", [
    ("t = (1, 2); t[0] = 2", "'tuple' object does not support item assignment", 2),
    ("x = ones(3); x[5] = 2", "index 5 is out of bounds for dimension 0 with size 3", 2),
    ("w = ones(2, requires_grad=True); w[0] = 1",
     "a view of a leaf Variable that requires grad is being used in an in-place operation.", 3),
])
def test_item_assignment_errors_in_the_language(capsys, program, message, code):
    from gradcli.cli import main
    import json
    status = main(["eval", program, "--json"])
    out, _ = capsys.readouterr()
    assert status == code
    assert json.loads(out)["error"]["message"] == message


def test_item_assignment_and_views_pass_gradcheck(capsys):
    # finite differences, independent of torch: gradcli check on in-place changes through views
    from gradcli.cli import main
    import json
    program = """r = ones(2, 3, requires_grad=True)
w = tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
x = r * w
x[0] = x[1] * 3
x[:, 1] *= w[0, :2]
x.t()[2].mul_(r[:, 2])
x[tensor([True, False]), 0] = w[1, 1] * 4
v = x.view(6)
v[1:4] += r[0]
y = (x * x).sum()
"""
    assert main(["check", program, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(g["leaf"], g["passed"]) for g in doc["gradcheck"]] == [("r", True), ("w", True)]
