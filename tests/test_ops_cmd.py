"""`gradcli ops`: the op table as users see it, from the same registry the engine uses."""

import json

from gradcli.cli import main
from gradcli.function import FUNCTIONS
from gradcli.oplist import node_class

SPEC_FUNCTIONS = ("add sub mul div neg pow matmul mm mv dot outer exp log log1p sqrt rsqrt abs sin cos tan tanh "
                  "sigmoid relu reciprocal square clamp maximum minimum where sum mean prod max min amax amin norm "
                  "var std logsumexp softmax log_softmax reshape view transpose t permute unsqueeze squeeze expand "
                  "flatten cat stack clone detach allclose tensor ones zeros full rand randn arange linspace eye "
                  "ones_like zeros_like rand_like").split()


def ops_json(capsys):
    assert main(["ops", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_spec_function_is_listed(capsys):
    names = {f["name"] for f in ops_json(capsys)["functions"]}
    assert set(SPEC_FUNCTIONS) <= names
    assert names == set(FUNCTIONS)  # exactly the engine's table


def test_rows_carry_method_grad_fn_and_derivative(capsys):
    rows = {f["name"]: f for f in ops_json(capsys)["functions"]}
    mul = rows["mul"]
    assert mul["method"] == "x.mul(...)" and mul["operator"] == "a * b" and mul["arity"] == 2
    assert mul["grad_fns"] == ["MulBackward0"]
    assert mul["derivatives"] == {"MulBackward0": {"self": "grad * other", "other": "grad * self"}}
    assert rows["sub"]["grad_fns"] == ["SubBackward0", "RsubBackward1"]
    assert rows["cat"]["method"] is None
    assert "CatBackward0" in rows["cat"]["derivatives"] and rows["cat"]["derivatives"]["CatBackward0"]
    assert rows["tensor"]["grad_fns"] == []


def test_every_grad_fn_named_in_the_table_exists():
    for info in FUNCTIONS.values():
        for name in info.grad_fns:
            cls = node_class(name)
            assert cls is not None, name
            assert cls.__name__ == name


def test_table_output(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    assert f"{len(FUNCTIONS)} functions" in out
    assert "MulBackward0" in out and "grad * other" in out and "x.mean(...)" in out
