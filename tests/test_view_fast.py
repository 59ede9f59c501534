"""The view ops' shared recording path and their usual-call shortcuts (issue 16): ``view_of`` for
every single-view op, plain-int shapes for view/reshape/flatten/expand/permute, one int for
squeeze, ``x[0]`` and ``x[:, 1]`` without ``_decompose``. Each must give torch's values, dtype,
grad_fn, next_functions, view relation, version counter, gradients and errors."""

import numpy as np
import pytest

import gradcli
from gradcli.autograd import views
from gradcli.limits import LIMITS

torch = pytest.importorskip("torch")

DATA = np.arange(1.0, 25.0, dtype=np.float32).reshape(2, 3, 4)


def _same(call, data=DATA):
    """``call`` on a gradcli leaf and a torch leaf: the same result, history and gradient (or the
    same error type and message)."""
    x = gradcli.tensor(data, requires_grad=True)
    t = torch.tensor(data, requires_grad=True)
    try:
        want = call(t)
    except Exception as exc:  # noqa: BLE001 - the oracle's error is the expectation
        with pytest.raises(type(exc)) as got:
            call(x)
        assert str(got.value) == str(exc)
        return None
    out = call(x)
    assert out.tolist() == want.tolist() and out.dtype.name == str(want.dtype).replace("torch.", "")
    assert out.grad_fn.name() == want.grad_fn.name()
    assert [(n.name(), nr) for n, nr in out.grad_fn.next_functions] == \
        [(n.name(), nr) for n, nr in want.grad_fn.next_functions]
    assert (out._base is x) == (want._base is t)
    assert out._version == want._version == 0
    seed = np.arange(1.0, 1.0 + want.numel(), dtype=np.float32).reshape(tuple(want.shape))
    out.backward(gradcli.tensor(seed))
    want.backward(torch.tensor(seed))
    assert x.grad.tolist() == t.grad.tolist()
    return out


@pytest.mark.parametrize("shape", [(24,), ((24,),), ([4, 6],), (2, 12), (2, -1), (-1,), (1, 24, 1), (-2, -12),
                                   (0,), (25,), (2, -1, -1), (2, 0, -1)])
@pytest.mark.parametrize("op", ["view", "reshape"])
def test_view_and_reshape_shapes(op, shape):
    _same(lambda a: getattr(a, op)(*shape))


@pytest.mark.parametrize("shape", [(True, 24), (2.0, 12), ((2, 12.5),)])
@pytest.mark.parametrize("op", ["view", "reshape", "expand", "permute"])
def test_shapes_of_other_types_are_refused(op, shape):
    x = gradcli.tensor(DATA)
    with pytest.raises(gradcli.errors.GradTypeError, match="^shape must be a sequence of ints, got (bool|float)$"):
        getattr(x, op)(*shape)


def test_reshape_of_a_transpose_copies_as_torch():
    out = _same(lambda a: a.transpose(0, 2).reshape(24))
    assert out.grad_fn.name() == "UnsafeViewBackward0" and out._base is None


@pytest.mark.parametrize("args", [(), (0,), (1,), (0, 1), (1, 2), (-2, -1), (2, 1), (5,)])
def test_flatten(args):
    _same(lambda a: a.flatten(*args))


def test_flatten_zero_dim_and_empty():
    _same(lambda a: a.sum().flatten(), DATA)
    _same(lambda a: a[:, :0].flatten(1), DATA)


@pytest.mark.parametrize("dims", [(2, 0, 1), ((1, 0, 2),), (0, 1, 2), (-1, 0, 1), (0, 0, 1), (0, 1), (0, 1, 3)])
def test_permute(dims):
    _same(lambda a: a.permute(*dims))


@pytest.mark.parametrize("dim", [0, 1, -1, -4, 4, None, (0, 1)])
def test_squeeze_after_unsqueeze(dim):
    _same(lambda a: a.unsqueeze(0).squeeze(dim) if dim is not None else a.unsqueeze(0).squeeze())


def test_squeeze_zero_dim():
    _same(lambda a: a.sum().squeeze(0))
    _same(lambda a: a.sum().squeeze(-1))
    _same(lambda a: a.sum().squeeze(1))


@pytest.mark.parametrize("sizes", [(2, 2, 3, 4), (2, -1, -1, -1), (3, 2, 3, 4), (-1, 2, 3, 4), (2, 3, 4),
                                   (2, 3, 5), (2, 3), (1, 2, 3, 4), (0, 2, 3, 4), ((2, 2, 3, 4),),
                                   (2, 2, -1, 4)])
def test_expand(sizes):
    _same(lambda a: a[:, :1].expand(*sizes))


def test_expand_checks_the_element_limit():
    x = gradcli.tensor([1.0, 2.0], requires_grad=True)
    LIMITS.max_elements = 100
    try:
        assert x.expand(50, 2).shape == (50, 2)
        with pytest.raises(gradcli.errors.LimitError, match="over the limit of 100"):
            x.expand(51, 2)
        with pytest.raises(gradcli.errors.LimitError, match="no elements"):
            x.expand(0, 1000, 2)
    finally:
        LIMITS.reset()


@pytest.mark.parametrize("key", [0, 1, -1, 2, (0,), (1, 2), (-1, 0, 3), (slice(None), 1), (0, slice(1, None)),
                                 (slice(None), slice(None)), (slice(None), 1, slice(None, None, 2)),
                                 (1, slice(0, 2), -1), (0, 1, 2, 3), (slice(None, None, -1),), (slice(0, 1.5),),
                                 (0, 5), (slice(None), 3), (0, slice(None), 1, None), ()])
def test_getitem_basic_keys(key):
    _same(lambda a: a[key])


def test_getitem_of_a_zero_dim_tensor():
    _same(lambda a: a.sum()[0])
    _same(lambda a: a.sum()[()])


@pytest.mark.parametrize("dim,index", [(0, 1), (1, -1), (-1, 3), (2, 4), (3, 0), (1, np.int64(2))])
def test_select(dim, index):
    _same(lambda a: a.select(dim, index))


def test_select_and_narrow_of_a_zero_dim_tensor_say_why():
    _same(lambda a: a.sum().select(0, 0))
    x = gradcli.tensor(1.0)
    with pytest.raises(gradcli.errors.ShapeError, match=r"^narrow\(\) cannot be applied to a 0-dim tensor\.$"):
        x.narrow(0, 0, 1)
    with pytest.raises(RuntimeError, match=r"^narrow\(\) cannot be applied to a 0-dim tensor\.$"):
        torch.tensor(1.0).narrow(0, 0, 1)


def test_views_of_views_share_the_root_and_its_version():
    x = gradcli.tensor(DATA, requires_grad=True) * 1
    v = x.view(6, 4)[1:].permute(1, 0).unsqueeze(0).squeeze(0)
    assert v._base is x and v._vc is x._vc
    assert [step[0].__name__ for step in v._view.chain] == \
        ["ViewBackward0", "SliceBackward0", "PermuteBackward0", "UnsqueezeBackward0", "SqueezeBackward1"]
    assert v in views._live_views(x)
    x.mul_(2)
    assert v._version == 1 and v.grad_fn.name() == "AsStridedBackward0"


def test_a_view_made_under_no_grad_keeps_torchs_creation_meta():
    x = gradcli.tensor(DATA, requires_grad=True)
    with gradcli.no_grad():
        v = x.view(24)
    assert v._view.no_grad and not v._view.multi and v.requires_grad and v.grad_fn is None
    with gradcli.inference_mode():
        with gradcli.enable_grad():
            w = x.view(24)
    assert w._view.no_grad and w._view.inference
