"""The shape ops' fast paths (issue 16): plain-int shapes, C-contiguous views, the diagonal's key
kept per arguments. Each must give what the general path gives, and torch's values and errors."""

import numpy as np
import pytest

import gradcli
from gradcli.errors import GradTypeError, ShapeError
from gradcli.ops.shape import _shape_arg, _viewable, diagonal_key

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [(4,), ((2, 2),), ([1, 4],), (2, -1), (gradcli.tensor(4),)])
def test_shape_arg_plain_and_general(shape):
    want = tuple(int(s) for s in (shape[0] if isinstance(shape[0], (list, tuple)) else shape))
    got = _shape_arg(shape)
    assert got == want and type(got) is tuple and all(type(s) is int for s in got)


@pytest.mark.parametrize("bad", [(True,), (2.0,), ((2, "a"),), (np.float64(4.0),)])
def test_shape_arg_rejects_what_the_fast_path_skips(bad):
    with pytest.raises(GradTypeError, match="shape must be a sequence of ints"):
        _shape_arg(bad)


def test_viewable_contiguous_and_not():
    x = gradcli.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    assert _viewable(x, (3, 2)) and _viewable(x, (6,))
    xt = x.t()  # not contiguous: (6,) needs a copy, (3, 1, 2) does not
    assert not _viewable(xt, (6,)) and _viewable(xt, (3, 1, 2))
    with pytest.raises(ShapeError, match="view size is not compatible"):
        xt.view(6)
    tt = torch.arange(6.0).reshape(2, 3).t()
    assert xt.view(3, 1, 2).tolist() == tt.view(3, 1, 2).tolist()
    assert xt.reshape(6).tolist() == tt.reshape(6).tolist()
    assert xt.reshape(6).grad_fn is None and x.view(3, 2)._view is not None


@pytest.mark.parametrize("offset,d1,d2", [(0, 0, 1), (1, 0, 1), (-1, 1, 0), (2, 2, 0), (-5, 0, 2)])
def test_diagonal_backward_repeats_match_torch(offset, d1, d2):
    data = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    for _ in range(3):  # the second and third backward use the kept key
        x = gradcli.tensor(data, requires_grad=True)
        t = torch.tensor(data, requires_grad=True)
        y, u = x.diagonal(offset, d1, d2), t.diagonal(offset, d1, d2)
        assert y.tolist() == u.tolist()
        (y * y).sum().backward()
        (u * u).sum().backward()
        assert x.grad.tolist() == t.grad.tolist()
    key = diagonal_key((2, 3, 4), offset, d1, d2)
    assert key is diagonal_key((2, 3, 4), offset, d1, d2)
    for k in key:
        if isinstance(k, np.ndarray):
            assert not k.flags.writeable
