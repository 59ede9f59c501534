"""gradcli.tensor's dtype from NumPy data and from a tensor, as torch.tensor's: a NumPy array or
scalar keeps its dtype where gradcli has it (float64 stays float64: before, every float became
the default float32, and int32 became int64); a tensor is copied with its dtype and torch's
warning; Python numbers and lists keep torch's rule (floats: the default dtype)."""

import warnings

import numpy as np
import pytest

import gradcli as gc

torch = pytest.importorskip("torch")

DATA = [np.array([1.0, 2.0]), np.array([1, 2]), np.array([1.0], np.float32), np.array([True, False]), np.array(3.5),
        np.array([1, 2], np.int32), np.float64(2.5), np.float32(1.5), np.int64(3), np.array([1.0], np.float16),
        [1.0, 2.0], [1, 2], 2.5, True, [[1.0], [2.0]]]


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_dtype_as_torch(data):
    got, want = gc.tensor(data), torch.tensor(data)
    assert str(got.dtype) == str(want.dtype)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("data", [np.array([1], np.uint8), np.array([1], np.int16)], ids=repr)
def test_a_numpy_dtype_gradcli_lacks_takes_the_old_rule(data):
    assert str(gc.tensor(data).dtype) == "torch.int64"


def test_an_explicit_dtype_wins():
    assert str(gc.tensor(np.array([1.0, 2.0]), dtype=gc.float32).dtype) == "torch.float32"
    assert str(gc.tensor(np.array([1, 2], np.int32), dtype=gc.float64).dtype) == "torch.float64"


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "bool"])
def test_a_tensor_is_copied_with_its_dtype_and_torchs_warning(dtype):
    source = gc.tensor([1, 0], dtype=getattr(gc, dtype))
    with pytest.warns(UserWarning) as caught:
        copy = gc.tensor(source)
    with warnings.catch_warnings(record=True) as torch_caught:
        warnings.simplefilter("always")
        want = torch.tensor(torch.tensor([1, 0], dtype=getattr(torch, dtype)))
    assert str(copy.dtype) == str(want.dtype) and copy.tolist() == want.tolist()
    assert [str(w.message) for w in caught] == [str(w.message) for w in torch_caught]
    assert caught[0].filename == __file__  # the caller's line, as torch's
    copy.add_(1) if dtype != "bool" else None
    assert source.tolist() == [1, 0] or dtype == "bool"  # a copy, not a view


def test_the_language_warns_on_a_tensor_copy():
    from gradcli.cli import main
    import contextlib
    import io
    import json
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["eval", "import torch\na = torch.tensor([1.0, 2.0], dtype=torch.float64)\nb = torch.tensor(a)",
                     "--json"]) == 0
    doc = json.loads(out.getvalue())
    assert [(w["line"], w["category"]) for w in doc["warnings"]] == [(3, "UserWarning")]
    assert [v["dtype"] for v in doc["variables"]] == ["float64", "float64"]
