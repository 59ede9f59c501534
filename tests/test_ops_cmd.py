"""`gradcli ops`: the op table as users see it, from the same registry the engine uses."""

import json
import os
import subprocess
import sys
from pathlib import Path

from gradcli.cli import main
from gradcli.ops.registry import FUNCTIONS, op
from gradcli.autograd.node import NODE_CLASSES, define_node
from gradcli.ops.catalog import method_form, node_class

SPEC_FUNCTIONS = ("add sub mul div neg pow matmul mm mv dot outer exp log log1p sqrt rsqrt abs sin cos tan tanh "
                  "sigmoid relu reciprocal square clamp maximum minimum where sum mean prod max min amax amin norm "
                  "var std logsumexp softmax log_softmax reshape view transpose t permute unsqueeze squeeze expand "
                  "flatten cat stack clone detach allclose tensor ones zeros full rand randn arange linspace eye "
                  "ones_like zeros_like rand_like").split()


def ops_json(capsys):
    assert main(["ops", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_spec_function_is_listed(capsys):
    doc = ops_json(capsys)
    names = [f["name"] for f in doc["functions"]]
    assert set(SPEC_FUNCTIONS) <= set(names)
    assert names == list(FUNCTIONS)  # exactly the engine's table, in its order


def test_rows_carry_method_arguments_grad_fn_and_derivative(capsys):
    rows = {f["name"]: f for f in ops_json(capsys)["functions"]}
    add = rows["add"]
    assert add["signature"] == "add(input, other, *, alpha=1)"
    assert add["arguments"] == ["input", "other", "*", "alpha=1"]
    assert add["method"] == "x.add(other, *, alpha=1)" and add["operator"] == "a + b" and add["arity"] == 2
    mul = rows["mul"]
    assert mul["grad_fns"] == ["MulBackward0", "MulBackward1"]  # MulBackward1: a number, inside formulas
    assert mul["derivatives"] == {"MulBackward0": {"self": "grad * other", "other": "grad * self"},
                                  "MulBackward1": {"self": "grad * other"}}
    assert rows["sub"]["grad_fns"] == ["SubBackward0", "SubBackward1", "RsubBackward1"]
    assert rows["cat"]["method"] is None
    assert "CatBackward0" in rows["cat"]["derivatives"] and rows["cat"]["derivatives"]["CatBackward0"]
    assert rows["tensor"]["grad_fns"] == [] and rows["tensor"]["category"] == "creation"
    assert rows["lt"]["differentiable"] is False and rows["lt"]["operator"] == "a < b"


def test_derivatives_are_the_formulas_the_engine_runs(capsys):
    rows = {f["name"]: f for f in ops_json(capsys)["functions"]}
    for row in rows.values():
        for grad_fn, formulas in row["derivatives"].items():
            assert formulas == dict(node_class(grad_fn).derivatives)
    assert rows["sin"]["derivatives"]["SinBackward0"] == {"self": NODE_CLASSES["SinBackward0"].derivatives[0][1]}


def test_in_place_ops_show_the_node_they_record(capsys):
    rows = {f["name"]: f for f in ops_json(capsys)["functions"]}
    assert rows["mul_"]["grad_fns"] == rows["mul"]["grad_fns"] and rows["mul_"]["grad_fns_of"] == "mul"
    assert rows["mul_"]["method"] == "x.mul_(other)"
    assert main(["eval", "y = x * 1; y.mul_(2); y", "-g", "x=ones(2)", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["variables"][1]["grad_fn"] in rows["mul_"]["grad_fns"]


def test_every_grad_fn_named_in_the_table_exists():
    for info in FUNCTIONS.values():
        for name in info.grad_fns:
            cls = node_class(name)
            assert cls is not None, name
            assert cls.__name__ == name


def test_a_new_function_appears_without_a_second_list(capsys, monkeypatch):
    import gradcli.ops.registry
    import gradcli.autograd.node
    monkeypatch.setattr(gradcli.autograd.node, "NODE_CLASSES", dict(NODE_CLASSES))
    monkeypatch.setattr(gradcli.ops.registry, "FUNCTIONS", dict(FUNCTIONS))
    cube_backward = define_node("CubeBackward0", self="grad * 3 * self * self")

    @op(cube_backward, method=False)
    def cube(input):
        """x ** 3"""

    rows = {f["name"]: f for f in ops_json(capsys)["functions"]}
    assert rows["cube"]["derivatives"] == {"CubeBackward0": {"self": "grad * 3 * self * self"}}
    assert rows["cube"]["method"] is None and rows["cube"]["doc"] == "x ** 3"
    monkeypatch.undo()
    assert "cube" not in FUNCTIONS and "CubeBackward0" not in NODE_CLASSES


def test_method_form_with_keyword_only_arguments():
    assert method_form(FUNCTIONS["sum"]) == "x.sum(dim=None, keepdim=False, *, dtype=None)"
    assert method_form(FUNCTIONS["neg"]) == "x.neg()"


def test_table_output(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].strip() == f"{len(FUNCTIONS)} functions"
    assert "MulBackward0" in out and "grad * other" in out and "x.mean(dim=None, keepdim=False, *, dtype=None)" in out
    add_line = next(line for line in out.splitlines() if line.lstrip().startswith("add(input"))
    assert add_line.split()[:8] == ["add(input,", "other,", "*,", "alpha=1)", "2", "x.add(other,", "*,", "alpha=1)"]
    assert "AddBackward0" in add_line and "self: grad" in add_line


def test_as_a_process():
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run([sys.executable, "-m", "gradcli", "ops", "--json"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0
    assert len(json.loads(proc.stdout)["functions"]) == len(FUNCTIONS)
