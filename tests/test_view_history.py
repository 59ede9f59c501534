"""Views whose history torch will not rebase, views made under no_grad, ``backward(inputs=)`` on a
non-leaf, and which node the "modified by an inplace operation" error names (issues 13 and 12):
every case runs the same code under torch and gradcli (``same_as_torch``: what each saw, and the
type and message of what each raised), plus the language's ``.grad_fn``, the tables and anomaly
mode from ``torch.autograd``."""

import json

import pytest

import gradcli as gc
from gradcli.cli import main
from test_views_inplace import same_as_torch

torch = pytest.importorskip("torch")


def run_json(capsys, program):
    code = main(["eval", program, "--json"])
    return code, json.loads(capsys.readouterr().out)


# -- 1. outputs of unbind/split/chunk once their base changed in place -------------------------------

MAKERS = {
    "unbind": lambda x: x.unbind(0),
    "split": lambda x: x.split(1),
    "split_sizes": lambda x: x.split([2, 1]),
    "chunk": lambda x: x.chunk(3),
    "iteration": lambda x: list(x),
    "view_of_an_output": lambda x: [r[:1] for r in x.unbind(0)],
}

CHANGES = {
    "base_mul_": lambda m, x, parts: x.mul_(2),
    "base_item_assignment": lambda m, x, parts: x.__setitem__(0, 5.0),
    "another_view_add_": lambda m, x, parts: x[2].add_(1),
    "base_under_no_grad": lambda m, x, parts: _in_no_grad(m, lambda: x.mul_(2)),
}

USES = {
    "multiply": lambda m, v: v * 1,
    "backward": lambda m, v: v.sum().backward(),
    "is_leaf": lambda m, v: v.is_leaf,
    "retain_grad": lambda m, v: v.retain_grad(),
    "register_hook": lambda m, v: v.register_hook(lambda g: g),
    "backward_on_it": lambda m, v: v.backward(m.ones_like(v)),
    "in_place_on_it": lambda m, v: v.add_(1),
}


def _in_no_grad(m, fn):
    with m.no_grad():
        fn()


@pytest.mark.parametrize("maker", sorted(MAKERS))
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_multi_view_output_refuses_use_after_its_base_changed(maker, change):
    def case(m, see):
        a = m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
        x = a.clone()
        parts = MAKERS[maker](x)
        see(parts[1].grad_fn)  # before: its own node
        CHANGES[change](m, x, parts)
        see(parts[1].requires_grad)
        see(parts[1]._version)
        see(repr(parts[1]).endswith("grad_fn=<Invalid>)"))
        parts[1] * 1
    same_as_torch(case)


@pytest.mark.parametrize("use", sorted(USES))
def test_every_use_of_a_stale_multi_view_raises_as_torch(use):
    def case(m, see):
        a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        x = a.clone()
        r = x.unbind(0)
        x.mul_(2)
        see(USES[use](m, r[0]))
    same_as_torch(case)


@pytest.mark.parametrize("finish", ["backward", "backward_inputs", "autograd_grad"])
def test_graph_recorded_before_the_change_runs_but_the_view_refuses(finish):
    def case(m, see):
        a = m.ones(2, 2, requires_grad=True)
        x = a.clone()
        r = x.unbind(0)
        y = (r[0] * 2).sum()  # recorded while r[0] was fresh
        x.mul_(2)
        if finish == "backward":
            y.backward()
            see(a.grad)
        elif finish == "backward_inputs":
            y.backward(inputs=[r[0]])
        else:
            see(m.autograd.grad(y, [r[0]]))
    same_as_torch(case)


def test_multi_view_of_a_leaf_changed_under_no_grad():
    def case(m, see):
        a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        r = a.unbind(0)
        with m.no_grad():
            a.mul_(2)
        see(a.grad_fn)
        (r[1] * 2).sum().backward()
    same_as_torch(case)


def test_multi_view_of_a_tensor_that_gets_a_history_later():
    # made when x needed no grad: no node; once x.mul_(w) gives x one, the row refuses as torch's
    def case(m, see):
        x = m.tensor([[1.0, 2.0], [3.0, 4.0]])
        w = m.tensor([[1.0, 1.0], [2.0, 2.0]], requires_grad=True)
        r = x.unbind(0)
        see(r[0].requires_grad)
        x.mul_(w)
        see(r[0].requires_grad)
        r[0] * 1
    same_as_torch(case)


def test_multi_views_of_a_tensor_without_grad_stay_usable():
    def case(m, see):
        x = m.tensor([[1.0, 2.0], [3.0, 4.0]])
        r = x.unbind(0)
        x.mul_(2)
        see(r[0] * 1)
        see(r[0].is_leaf)
        see(r[0].requires_grad)
    same_as_torch(case)


def test_unchanged_multi_views_keep_their_gradient():
    def case(m, see):
        a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        x = a.clone()
        r = x.unbind(0)
        y = x * 3  # a new tensor: r's base is untouched
        (r[0] * r[1] + y.sum()).sum().backward()
        see(a.grad)
    same_as_torch(case)


def _torch_error(program_for_torch):
    try:
        exec(program_for_torch, {"torch": torch})  # noqa: S102 - the oracle runs the same program
    except RuntimeError as exc:
        return str(exc)
    raise AssertionError("torch did not raise")


@pytest.mark.parametrize("read", ["r[0].grad_fn", "r[0].is_leaf", "r[1] * 1", "r[0].sum().backward()"])
def test_the_language_refuses_as_torch_with_exit_3(capsys, read):
    program = ("import torch\na = torch.ones(2, 2, requires_grad=True)\nx = a.clone()\nr = x.unbind(0)\n"
               f"x.mul_(2)\ny = {read}\n")
    code, doc = run_json(capsys, program)
    assert code == 3
    assert doc["error"]["kind"] == "autograd"
    assert doc["error"]["line"] == 6
    assert doc["error"]["message"] == _torch_error(program)


def test_tables_show_a_stale_view_as_torch_prints_it(capsys):
    program = ("a = ones(2, 2, requires_grad=True)\nx = a.clone()\nr = x.unbind(0)\nv = r[0]\nx.mul_(2)\n"
               "print(v)\n")
    code, doc = run_json(capsys, program)
    assert code == 0
    assert doc["printed"] == ["tensor([2., 2.], grad_fn=<Invalid>)"]
    row = next(v for v in doc["variables"] if v["name"] == "v")
    assert (row["requires_grad"], row["is_leaf"], row["grad_fn"], row["next_functions"]) == \
        (True, False, "Invalid", None)
    assert main(["eval", program]) == 0
    assert "<Invalid>" in capsys.readouterr().out


# -- 2. views made under no_grad of a tensor that requires grad ---------------------------------------

def _no_grad_view(m, x, index=0):
    with m.no_grad():
        return x[index]


NO_GRAD_VIEW_CASES = {
    "of_a_leaf": lambda m, see, a: (
        see(a.grad_fn), _use_no_grad_view(m, see, a, _no_grad_view(m, a))),
    "of_a_non_leaf": lambda m, see, a: _use_no_grad_view(m, see, a, _no_grad_view(m, a * 1)),
}


def _use_no_grad_view(m, see, a, v):
    see(v.requires_grad)
    see(v.is_leaf)
    see(v.grad_fn)
    see(v._base is not None)
    w = v * 2
    see(w.requires_grad)
    see(w.grad_fn)
    w.sum().backward()
    see(a.grad)
    see(v.grad)


@pytest.mark.parametrize("name", sorted(NO_GRAD_VIEW_CASES))
def test_no_grad_view_requires_grad_without_an_edge(name):
    def case(m, see):
        a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        NO_GRAD_VIEW_CASES[name](m, see, a)
    same_as_torch(case)


def test_no_grad_view_beside_a_recorded_input():
    def case(m, see):
        a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v = _no_grad_view(m, a)
        w = v * a[1]
        see(w.grad_fn)
        w.sum().backward()
        see(a.grad)
    same_as_torch(case)


def _retain(m, see, a, v):
    v.retain_grad()
    see(v.retains_grad)
    (v * 2).sum().backward()
    see(v.grad)


def _hook(m, see, a, v):
    v.register_hook(lambda g: see("hook ran"))
    (v * 2).sum().backward()
    see(v.grad)


def _requires_grad_false(m, see, a, v):
    v.requires_grad_(False)
    see(v.requires_grad)
    see(repr(v))


def _requires_grad_true(m, see, a, v):
    v.requires_grad_(True)
    (v * 2).sum().backward()
    see(v.grad)
    see(a.grad)


def _backward_of_it(m, see, a, v):
    v.backward(m.ones_like(v))


def _sum_backward(m, see, a, v):
    v.sum().backward()
    see(a.grad)


def _grad_wrt_it(m, see, a, v):
    m.autograd.grad((v * v).sum(), v)


def _grad_wrt_base(m, see, a, v):
    see(m.autograd.grad((v * v).sum(), a, allow_unused=True))


def _view_of_it_in_grad_mode(m, see, a, v):
    u = v[1:]
    see(u.requires_grad)
    see(u.is_leaf)
    see(u.grad_fn)
    see(u._base is a)
    (u * 3).sum().backward()
    see(a.grad)


def _backward_inputs_it(m, see, a, v):
    (v * a[1]).sum().backward(inputs=[v])
    see(v.grad)
    see(a.grad)


def _changed_in_no_grad_then_read(m, see, a, v):
    with m.no_grad():
        v.mul_(2)
    see(a)
    see(v.requires_grad)
    see(v.is_leaf)


def _base_changed_in_no_grad_then_used(m, see, a, v):
    with m.no_grad():
        a.mul_(2)
        see(v * 1)  # under no_grad nothing reads its grad_fn
    v * 1


def _changed_in_place_in_grad_mode(m, see, a, v):
    v.mul_(2)  # the existing error stays


def _unbind_under_no_grad(m, see, a, v):
    with m.no_grad():
        r = a.unbind(0)
    see(r[1].output_nr)
    see(r[1].requires_grad)
    see((r[1] * 2).grad_fn)


NO_GRAD_VIEW_USES = [_retain, _hook, _requires_grad_false, _requires_grad_true, _backward_of_it, _sum_backward,
                     _grad_wrt_it, _grad_wrt_base, _backward_inputs_it, _view_of_it_in_grad_mode, _changed_in_no_grad_then_read,
                     _base_changed_in_no_grad_then_used, _changed_in_place_in_grad_mode, _unbind_under_no_grad]


@pytest.mark.parametrize("use", NO_GRAD_VIEW_USES, ids=lambda f: f.__name__.strip("_"))
def test_no_grad_view_behaves_as_torch(use):
    def case(m, see):
        a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v = _no_grad_view(m, a)
        see(repr(v))
        use(m, see, a, v)
    same_as_torch(case)


def _in_inference_mode(m, x):
    with m.inference_mode():
        return x[0]


def _view_of_no_grad_view_in_grad_mode(m, x):
    with m.no_grad():
        v = x[0]
        with m.enable_grad():
            return v[1:]


def _no_grad_view_of_inference_view(m, x):
    with m.inference_mode():
        v = x[0]
    with m.no_grad():
        return v[1:]


def _multi_view_of_no_grad_view(m, x):
    with m.no_grad():
        v = x[0]
    return v.unbind(0)[1]


@pytest.mark.parametrize("make", [_in_inference_mode, _view_of_no_grad_view_in_grad_mode,
                                  _no_grad_view_of_inference_view, _multi_view_of_no_grad_view],
                         ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("change", ["itself", "base", "base_in_no_grad"])
def test_creation_modes_name_themselves_as_torch(make, change):
    # torch's creation metas pass to views of views (a new one wins, inference mode's stays)
    def case(m, see):
        a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        x = a.clone()
        v = make(m, x)
        see(v.requires_grad)
        see(v.grad_fn)
        if change == "itself":
            v.mul_(2)
        elif change == "base":
            x.mul_(2)
        else:
            _in_no_grad(m, lambda: x.mul_(2))
        see(v * 1)
    same_as_torch(case)


def test_no_grad_view_in_the_language(capsys):
    program = ("import torch\na = torch.ones(2, 2, requires_grad=True)\nwith torch.no_grad():\n    v = a[0]\n"
               "w = v * 2\nprint(v.requires_grad, v.is_leaf, v.grad_fn)\nprint(w.grad_fn.next_functions)\n"
               "w.sum().backward()\nprint(a.grad, v.grad)\n")
    code, doc = run_json(capsys, program)
    assert code == 0
    assert doc["printed"] == ["True True None", "((None, 0), (None, 0))", "None None"]
    lines = []
    exec(program, {"print": lambda *a: lines.append(" ".join(map(str, a)))})  # noqa: S102 - under torch
    assert doc["printed"] == lines


@pytest.mark.parametrize("args, message", [
    (["--root", "v"], "--root v: v is a view made under no_grad: it requires grad but has no backward graph"),
    ([], "the last value is a view made under no_grad: it requires grad but has no backward graph"),
])
def test_graph_of_a_no_grad_view_says_it_has_none(capsys, args, message):
    program = "a = ones(2, 2, requires_grad=True)\nwith no_grad():\n    v = a[0]\n"
    assert main(["graph", program, "--json", *args]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["message"] == message


def test_program_ending_with_a_no_grad_view_sum(capsys):
    program = "a = ones(2, 2, requires_grad=True)\nwith no_grad():\n    v = a[0]\ny = v.sum()\n"
    code, doc = run_json(capsys, program)
    assert code == 0
    rows = {v["name"]: v for v in doc["variables"]}
    assert rows["y"]["next_functions"] == [[None, 0]]
    assert rows["a"]["grad"] is None and rows["v"]["grad"] is None


def test_check_leaves_out_a_no_grad_view(capsys):
    program = "a = ones(3, 2, requires_grad=True)\nwith no_grad():\n    v = a[0]\ny = (v * a[1]).sum()\n"
    assert main(["check", program, "--json"]) == 1  # a's gradient misses the path no_grad cut
    doc = json.loads(capsys.readouterr().out)
    assert [g["leaf"] for g in doc["gradcheck"]] == ["a"]


# -- other views once their base changed outside grad mode: a new AsStridedBackward0, as torch --------

@pytest.mark.parametrize("leaf", [True, False])
def test_view_gets_a_new_history_after_a_change_under_no_grad(leaf):
    def case(m, see):
        a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        x = a if leaf else a.clone()
        v = x[0]
        with m.no_grad():
            x.mul_(2)
        see(v.grad_fn)
        (v * m.tensor([3.0, 5.0])).sum().backward()
        see(a.grad)
    same_as_torch(case)


# -- 3. backward(inputs=[y]) with y a non-leaf: y retains its grad ------------------------------------

def _inputs_then_accumulate(m, see, a, y):
    y.sum().backward(inputs=[y], retain_graph=True)
    see(y.retains_grad)
    see(y.grad)
    see(a.grad)
    see(y.is_leaf)
    (y * y).sum().backward(inputs=[y], retain_graph=True)
    see(y.grad)
    (y * 2).sum().backward()  # no inputs: y retains its grad, and the leaf gets its own
    see(y.grad)
    see(a.grad)


def _inputs_one_tensor(m, see, a, y):
    y.sum().backward(inputs=y)
    see(y.retains_grad)
    see(y.grad)


def _autograd_backward_with_a_leaf(m, see, a, y):
    m.autograd.backward(y.sum(), inputs=[y, a])
    see(y.retains_grad)
    see(y.grad)
    see(a.grad)


def _autograd_grad_does_not_retain(m, see, a, y):
    see(m.autograd.grad(y.sum(), [y]))
    see(y.retains_grad)


def _create_graph(m, see, a, y):
    y.sum().backward(inputs=[y], create_graph=True)
    see(y.retains_grad)
    see(y.grad)
    see(y.grad.grad_fn)


def _multi_output_input(m, see, a, y):
    r = y.unbind(0)
    (r[0] * r[1]).backward(inputs=[r[1]], retain_graph=True)
    see(r[1].retains_grad)
    see(r[0].retains_grad)
    see(r[1].grad)
    (r[0] * r[1]).backward()
    see(r[1].grad)


def _hooks_run_first(m, see, a, y):
    y.register_hook(lambda g: g * 10)
    y.sum().backward(inputs=[y], retain_graph=True)
    see(y.grad)


def _grad_reset_then_backward(m, see, a, y):
    y.sum().backward(inputs=[y], retain_graph=True)
    y.grad = None
    y.sum().backward(retain_graph=True)
    see(y.grad)


def _changed_in_place_after(m, see, a, y):
    y.sum().backward(inputs=[y], retain_graph=True)
    y.mul_(2)
    see(y.retains_grad)
    (y * 1).sum().backward()
    see(y.grad)
    see(a.grad)


INPUTS_CASES = [_inputs_then_accumulate, _inputs_one_tensor, _autograd_backward_with_a_leaf,
                _autograd_grad_does_not_retain, _create_graph, _multi_output_input, _hooks_run_first,
                _grad_reset_then_backward, _changed_in_place_after]


@pytest.mark.parametrize("case_fn", INPUTS_CASES, ids=lambda f: f.__name__.strip("_"))
def test_backward_inputs_non_leaf_retains_grad(case_fn):
    def case(m, see):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        case_fn(m, see, a, a * 3)
    same_as_torch(case)


# -- 4. which node the "modified by an inplace operation" error names --------------------------------

def _exp_on_view_then_view_changed(m, see, r, x, v):
    v.mul_(2)
    x.sum().backward()


def _exp_on_view_then_view_add(m, see, r, x, v):
    v.add_(2)
    see(v.grad_fn)
    x.sum().backward()


def _exp_on_view_then_base_changed_and_view_used(m, see, r, x, v):
    x.mul_(2)
    (v * 1).sum().backward()


def _exp_on_view_then_view_changed_retained_graph(m, see, r, x, v):
    v.mul_(2)
    x.sum().backward(retain_graph=True)


@pytest.mark.parametrize("case_fn", [_exp_on_view_then_view_changed, _exp_on_view_then_view_add,
                                     _exp_on_view_then_base_changed_and_view_used,
                                     _exp_on_view_then_view_changed_retained_graph],
                         ids=lambda f: f.__name__.strip("_"))
def test_modified_error_names_the_node_torch_names(case_fn):
    def case(m, see):
        r = m.ones(2, 2, requires_grad=True)
        x = r.clone()
        v = x[0]
        v.exp_()
        case_fn(m, see, r, x, v)
    same_as_torch(case)


def test_modified_error_while_an_unread_view_keeps_its_old_node():
    def case(m, see):
        r = m.ones(2, 2, requires_grad=True)
        x = r.clone()
        v = x[0]
        v.exp_()
        x.mul_(2)
        x.sum().backward()
    same_as_torch(case)


# -- torch.autograd's anomaly mode in the language ------------------------------------------------------

def test_set_detect_anomaly_as_call_and_block(capsys):
    program = """import torch
print(torch.is_anomaly_enabled())
torch.autograd.set_detect_anomaly(True)
print(torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
with torch.autograd.set_detect_anomaly(False, check_nan=False) as m:
    print(m, torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
print(torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
torch.autograd.set_detect_anomaly(False)
print(torch.is_anomaly_enabled())
"""
    code, doc = run_json(capsys, program)
    assert code == 0
    lines = []
    exec(program, {"print": lambda *a: lines.append(" ".join(map(str, a)))})  # noqa: S102 - under torch
    assert doc["printed"] == lines == ["False", "True True", "None False False", "True True", "False"]
    assert not gc.is_anomaly_enabled()  # the run's settings do not leak out of it


@pytest.mark.parametrize("mode", ["torch.autograd.detect_anomaly()", "torch.autograd.set_detect_anomaly(True)"])
def test_anomaly_mode_names_the_failing_node_as_torch(capsys, mode):
    program = (f"import torch\nx = torch.tensor([0.0, 1.0], requires_grad=True)\nwith {mode}:\n"
               "    y = (x.sqrt() * 0).sum()\n    y.backward()\n")
    code, doc = run_json(capsys, program)
    assert code == 3
    with pytest.warns(UserWarning):
        assert doc["error"]["message"] == _torch_error(program)
    assert any("Error detected in SqrtBackward0" in w["message"] for w in doc["warnings"])


def test_autograd_has_no_is_anomaly_enabled_as_torch(capsys):
    assert not hasattr(torch.autograd, "is_anomaly_enabled")
    code, doc = run_json(capsys, "import torch\nprint(torch.autograd.is_anomaly_enabled())\n")
    assert code == 2
    assert doc["error"]["message"].startswith("module 'torch.autograd' has no attribute 'is_anomaly_enabled'")
