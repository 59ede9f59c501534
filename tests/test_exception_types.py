"""Issue 13 C: gradcli's errors derive from the builtin exception torch raises in the same
situation (RuntimeError, IndexError, TypeError) and say what torch says; the CLI's exit codes and
JSON kinds stay those of the SPEC."""

import json

import pytest

import gradcli as gc
from gradcli.errors import GradcliError

torch = pytest.importorskip("torch")

CASES = {
 "broadcast": lambda m: m.ones(2) + m.ones(3),
 "matmul": lambda m: m.ones(2,3) @ m.ones(2,3),
 "mm": lambda m: m.mm(m.ones(2,3), m.ones(2,3)),
 "req_int": lambda m: m.tensor([1,2]).requires_grad_(),
 "req_int_ctor": lambda m: m.tensor([1,2], requires_grad=True),
 "grad_shape": lambda m: setattr(m.ones(2, requires_grad=True), "grad", m.ones(3)),
 "grad_dtype": lambda m: setattr(m.ones(2, requires_grad=True), "grad", m.ones(2, dtype=m.float64)),
 "dim_range": lambda m: m.ones(2).sum(3),
 "dim_range_t": lambda m: m.ones(2,2).transpose(0, 5),
 "index_range": lambda m: m.ones(2)[5],
 "index_range2": lambda m: m.ones(2,2)[0, 7],
 "list_index_range": lambda m: m.ones(2)[[0, 5]],
 "tensor_index_range": lambda m: m.ones(2)[m.tensor([0, 5])],
 "zero_d": lambda m: m.tensor(1.)[0],
 "zero_d_slice": lambda m: m.tensor(1.)[0:1],
 "too_many": lambda m: m.ones(2)[0, 0],
 "view_bad": lambda m: m.ones(2,3).t().view(6),
 "reshape_bad": lambda m: m.ones(2,3).reshape(4),
 "cat_bad": lambda m: m.cat([m.ones(2,3), m.ones(2,2)]),
 "select_range": lambda m: m.ones(2,2).select(1, 3),
 "narrow_range": lambda m: m.ones(2,2).narrow(0, 1, 3),
 "squeeze_dim": lambda m: m.ones(2).squeeze(3),
 "unsqueeze_dim": lambda m: m.ones(2).unsqueeze(3),
 "softmax_dim": lambda m: m.ones(2).softmax(2),
 "len0": lambda m: len(m.tensor(1.)),
 "item": lambda m: m.ones(2).item(),
 "bool": lambda m: bool(m.ones(2)),
 "expand_bad": lambda m: m.ones(2).expand(3),
 "stack_bad": lambda m: m.stack([m.ones(2), m.ones(3)]),
 "inplace_shape": lambda m: m.ones(2).add_(m.ones(2,2)),
 "inplace_cast": lambda m: m.ones(2, dtype=m.int64).add_(m.ones(2)),
 "backward_nonscalar": lambda m: (m.ones(2, requires_grad=True)*2).backward(),
 "permute_dup": lambda m: m.ones(2,2).permute(0,0),
 "diag_same": lambda m: m.ones(2,2).diagonal(0, 1, 1),
 "flatten_bad": lambda m: m.ones(2,2).flatten(1, 0),
 "max_dim": lambda m: m.ones(2).max(4),
 "gather_like": lambda m: m.ones(2,2)[m.tensor([True, False, True])],
 "mask_shape": lambda m: m.ones(2,2)[m.tensor([[True, False]])],
 "float_index": lambda m: m.ones(2)[m.tensor([0.])],
 "setitem_shape": lambda m: m.ones(2,2).__setitem__(0, m.ones(3)),
 "iterate_0d": lambda m: list(m.tensor(1.)),
}


def _raised(f, m):
    try:
        f(m)
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return exc
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_exception_type_and_message_match_torch(name):
    theirs = _raised(CASES[name], torch)
    ours = _raised(CASES[name], gc)
    assert theirs is not None and ours is not None
    assert isinstance(ours, type(theirs)), (type(ours).__mro__, type(theirs))
    assert isinstance(ours, GradcliError)
    assert str(ours) == str(theirs).split("\n")[0]


@pytest.mark.parametrize("program, kind, code", [
    ("ones(2) + ones(3)", "shape", 2),
    ("ones(2).sum(3)", "shape", 2),  # "Dimension out of range": torch's IndexError, kind shape (issue 14)
    ("ones(2)[5]", "shape", 2),
    ("tensor([1, 2]).requires_grad_()", "type", 2),
    ("ones(2)[tensor([0.])]", "type", 2),
    ("ones(2).item()", "type", 2),
    ("w = ones(2, requires_grad=True); w[0].mul_(2)", "autograd", 3),
])
def test_cli_kinds_and_exit_codes_unchanged(capsys, program, kind, code):
    from gradcli.cli import main
    status = main(["eval", program, "--json"])
    out, _ = capsys.readouterr()
    assert status == code
    assert json.loads(out)["error"]["kind"] == kind


def test_iteration_gives_the_rows():
    rows = [[r.tolist() for r in m.tensor([[1.0, 2.0], [3.0, 4.0]])] for m in (gc, torch)]
    assert rows[0] == rows[1] == [[1.0, 2.0], [3.0, 4.0]]
