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


@pytest.mark.parametrize("other", [(2, 3, 4), (5, 3, 4), (3, 1, 4), "number"])
def test_expand_as(other):
    like = (lambda lib: 5) if other == "number" else (lambda lib: lib.zeros(*other))
    _same(lambda a: a[:, :1].expand_as(like(torch if isinstance(a, torch.Tensor) else gradcli)))


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
    assert id(v) in [id(w) for w in views._live_views(x)]
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
            ww = w.view(4, 6)
    assert w._view.no_grad and w._view.inference and ww.grad_fn.name() == "ViewBackward0"
    assert (ww._view.no_grad, ww._view.multi, ww._view.inference) == (True, False, True) and ww._base is x
    u = (x * 1).unbind(0)[1]  # multi-output meta is inherited by a view of the view
    uu = u.view(12)
    assert (uu._view.no_grad, uu._view.multi, uu._view.inference) == (False, True, False)
    assert uu.grad_fn.next_functions[0][1] == 1


# -- the nodes made without function.apply1 / node.new_node are theirs ------------------------------

_SLOTS = [s for s in gradcli.autograd.node.Node.__slots__ if s not in ("__weakref__", "_seq")]
_UNSET = object()


def _fields(node):
    return {s: getattr(node, s, _UNSET) for s in _SLOTS}, gradcli.autograd.node.EDGE_NRS.get(node)


def _view_cases(x):
    """(view op class, input, attrs) for every view op that view_of makes the node of."""
    from gradcli.ops import indexing, shape
    row = x.unbind(0)[1]  # output 1 of UnbindBackward0: the view's edge is (node, 1)
    return [(shape.ViewBackward0, x, ((24,),)), (shape.TransposeBackward0, x, (0, 2)),
            (shape.PermuteBackward0, x, ((2, 0, 1),)), (shape.UnsqueezeBackward0, x, (1,)),
            (shape.SqueezeBackward1, x, ((2, 3, 4),)), (shape.ExpandBackward0, x[:, :1], ((2, 5, 4),)),
            (shape.DiagonalBackward0, x, (0, 1, 2)), (shape.TBackward0, row, ()),
            (indexing.SelectBackward0, row, ((0, Ellipsis),)),
            (indexing.SliceBackward0, row, ((slice(None), slice(1, None)),)), (shape.AliasBackward0, x, ())]


@pytest.mark.parametrize("case", range(11))
def test_view_of_makes_the_node_apply1_makes(case):
    from gradcli.autograd.function import apply1
    x = gradcli.tensor(DATA, requires_grad=True) * 1
    cls, input, attrs = _view_cases(x)[case]
    out = views.view_of(cls, input, attrs)
    ref = views.make_view(apply1(cls, input, input._data, attrs), input, cls, attrs)
    fast, plain = out.grad_fn, ref.grad_fn
    assert views._PLAIN[cls] is True  # the class saves nothing: its node is made by view_of itself
    assert _fields(fast) == _fields(plain) and type(fast) is cls
    assert fast._seq > plain._seq - 2
    # the tensor and its ViewInfo: what Tensor._make and make_view give
    tensor_slots = [s for s in gradcli.Tensor.__slots__ if s not in ("__weakref__", "_fn", "_view", "_data")]
    assert {s: getattr(out, s) for s in tensor_slots} == {s: getattr(ref, s) for s in tensor_slots}
    assert out._data.base is ref._data.base and out._data.strides == ref._data.strides
    info_slots = [s for s in views.ViewInfo.__slots__ if s != "base"]
    assert {s: getattr(out._view, s) for s in info_slots} == {s: getattr(ref._view, s) for s in info_slots}
    assert out._view.base is ref._view.base is out._base
    live = [id(v) for v in views._live_views(out._base)]
    assert id(out) in live and id(ref) in live


def test_view_of_nodes_take_the_anomaly_modes_counter():
    from gradcli.autograd.engine import TRACES
    x = gradcli.tensor(DATA, requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"), gradcli.autograd.detect_anomaly():
        v = x.view(24)
        assert v.grad_fn._seq in TRACES


def test_cat_and_stack_nodes_are_the_ones_new_node_makes():
    from gradcli.autograd.node import new_node
    from gradcli.ops import shape
    x = gradcli.tensor(DATA[0], requires_grad=True)
    y = gradcli.tensor(DATA[1])
    rows = (gradcli.tensor(DATA, requires_grad=True) * 1).unbind(0)
    for cls, fn in ((shape.CatBackward0, gradcli.cat), (shape.StackBackward0, gradcli.stack)):
        for inputs in ([x, y], [y, rows[1], x, rows[0]], [rows[1]]):
            out = fn(inputs)
            edges = tuple((t.grad_fn or t._accumulator(), t.output_nr) if t.requires_grad else (None, 0)
                          for t in inputs)
            plain = new_node(cls, (), out._data, out.grad_fn._attrs, None, edges)
            assert _fields(out.grad_fn) == _fields(plain) and type(out.grad_fn) is cls


# -- masked_fill and where with operands of one shape (no broadcast of the mask) ---------------------

@pytest.mark.parametrize("mask_shape", [(2, 3, 4), (3, 4), (4,), (1, 3, 1)])
@pytest.mark.parametrize("value", [0.0, -2.5, "tensor"])
def test_masked_fill_matches_torch(mask_shape, value):
    mask = np.arange(int(np.prod(mask_shape))).reshape(mask_shape) % 3 == 0
    x, t = gradcli.tensor(DATA, requires_grad=True), torch.tensor(DATA, requires_grad=True)
    vx = gradcli.tensor(1.5, requires_grad=True) if value == "tensor" else value
    vt = torch.tensor(1.5, requires_grad=True) if value == "tensor" else value
    out, want = x.masked_fill(gradcli.tensor(mask), vx), t.masked_fill(torch.tensor(mask), vt)
    assert out.tolist() == want.tolist() and out.grad_fn.name() == want.grad_fn.name()
    seed = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    out.backward(gradcli.tensor(seed))
    want.backward(torch.tensor(seed))
    assert x.grad.tolist() == t.grad.tolist()
    if value == "tensor":
        assert vx.grad.item() == vt.grad.item()


def test_masked_fill_refuses_what_it_refused():
    x = gradcli.tensor(DATA)
    with pytest.raises(gradcli.errors.ShapeError, match="only supports a 0-dimensional value tensor"):
        x.masked_fill(gradcli.tensor(DATA > 3), gradcli.tensor([1.0]))
    with pytest.raises(gradcli.errors.ShapeError, match="must match the size of tensor b"):
        x.masked_fill(gradcli.tensor(np.ones(5, dtype=bool)), 0.0)


def test_where_of_one_shape_matches_torch_and_checks_the_limit():
    cond = DATA % 2 == 0
    x, t = gradcli.tensor(DATA, requires_grad=True), torch.tensor(DATA, requires_grad=True)
    y, u = gradcli.tensor(-DATA, requires_grad=True), torch.tensor(-DATA, requires_grad=True)
    out, want = gradcli.where(gradcli.tensor(cond), x, y), torch.where(torch.tensor(cond), t, u)
    assert out.tolist() == want.tolist() and out.grad_fn.name() == want.grad_fn.name()
    out.sum().backward()
    want.sum().backward()
    assert x.grad.tolist() == t.grad.tolist() and y.grad.tolist() == u.grad.tolist()
    LIMITS.max_elements = 20
    try:
        with pytest.raises(gradcli.errors.LimitError, match="has 24 elements, over the limit of 20"):
            gradcli.where(gradcli.tensor(cond), x, y)
    finally:
        LIMITS.reset()


def test_the_live_view_table_drops_dead_roots_and_keeps_the_live_ones():
    """Views of results that die leave entries that the table sweeps as it doubles (no callback
    per root); a live root's views are still found and rebased after any number of sweeps."""
    views._LIVE.clear()
    views._SWEEP[0] = 1024
    x = gradcli.tensor(DATA, requires_grad=True)
    base = x * 1
    kept = base.view(6, 4)
    held = (x * 2).view(4, 6)  # a second live root
    roots = []
    for _ in range(5000):
        roots.append(x * 1)  # many roots alive at once, so that ids are not simply reused
        roots[-1].view(24)
        if len(roots) > 3000:
            roots.clear()
    assert len(views._LIVE) < 2 * 3000 + 1024
    assert views._live_views(base) == [kept]
    base.mul_(2)  # kept's base changed in place: its grad_fn is rebuilt, as torch's
    assert kept.grad_fn.name() == "AsStridedBackward0"
    kept.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(DATA.shape, 2.0, dtype=np.float32))
    assert held.grad_fn.name() == "ViewBackward0" and views._live_views(held._base) == [held]
