"""gradcli.autograd.tensor_str must print values exactly as PyTorch's ``repr`` does.

Two layers:

* hard-coded strings (each one captured from torch 2.13's ``repr``) that run
  without torch installed;
* an oracle section (``torch_oracle`` fixture, skipped without torch) comparing
  ``format_tensor`` with ``repr(torch.from_numpy(a))`` over hand-picked and
  hypothesis-drawn arrays, print options, default dtypes and autograd suffixes.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gradcli.autograd.tensor_str import format_next_functions, format_node, format_tensor

DTYPES = ["float32", "float64", "float16", "int64", "int32", "bool"]
FLOATS = ["float32", "float64", "float16"]


def _name(array: np.ndarray) -> str:
    return "bool" if array.dtype == np.bool_ else str(array.dtype)


# -- hard-coded expectations (no torch needed) ---------------------------------------

EXPECTED = [
    # (array, format_tensor keyword arguments, repr captured from torch 2.13)
    (np.full((2, 2), 0.25, np.float32), {},
     "tensor([[0.2500, 0.2500],\n        [0.2500, 0.2500]])"),
    (np.array(3.0, np.float32), dict(grad_fn="MeanBackward0"),
     "tensor(3., grad_fn=<MeanBackward0>)"),
    (np.array([1.0, 2.0, 3.0], np.float32), dict(requires_grad=True),
     "tensor([1., 2., 3.], requires_grad=True)"),
    (np.array([1e10, 1.0], np.float32), {}, "tensor([1.0000e+10, 1.0000e+00])"),
    (np.array([1e-5, 1.0], np.float32), {}, "tensor([1.0000e-05, 1.0000e+00])"),
    (np.array([0.0, -0.0, 1.5, np.inf], np.float32), {},
     "tensor([0.0000, -0.0000, 1.5000,    inf])"),
    (np.array([-0.0, 1.0, np.nan, -np.inf], np.float32), {}, "tensor([-0., 1., nan, -inf])"),
    (np.array([0.1, -2.5]), {}, "tensor([ 0.1000, -2.5000], dtype=torch.float64)"),
    (np.array([0.1, -2.5]), dict(default_float="float64"), "tensor([ 0.1000, -2.5000])"),
    (np.array([0.1, -2.5], np.float32), dict(default_float="float64"),
     "tensor([ 0.1000, -2.5000], dtype=torch.float32)"),
    (np.array([0.1, 65504.0], np.float16), {},
     "tensor([9.9976e-02, 6.5504e+04], dtype=torch.float16)"),
    (np.array([[1, -20], [300, 4]], np.int64), {}, "tensor([[  1, -20],\n        [300,   4]])"),
    (np.array([7, 8], np.int32), {}, "tensor([7, 8], dtype=torch.int32)"),
    (np.array([True, False, True]), {}, "tensor([ True, False,  True])"),
    (np.zeros((0, 3), np.float32), {}, "tensor([], size=(0, 3))"),
    (np.zeros((0,), np.int64), {}, "tensor([], dtype=torch.int64)"),
    (np.zeros((0, 3), np.int64), dict(device="cuda:0"),
     "tensor([], device='cuda:0', size=(0, 3), dtype=torch.int64)"),
    (np.array([1.0, 2.0]), dict(device="cuda:0", grad_fn="AddBackward0"),
     "tensor([1., 2.], device='cuda:0', dtype=torch.float64, grad_fn=<AddBackward0>)"),
    (np.array([1.0, 2.0], np.float32), dict(edgeitems=0), "tensor([1., 2.], size=(2,))"),
    (np.arange(12, dtype=np.float32).reshape(2, 2, 3) / 4, {},
     "tensor([[[0.0000, 0.2500, 0.5000],\n         [0.7500, 1.0000, 1.2500]],\n\n"
     "        [[1.5000, 1.7500, 2.0000],\n         [2.2500, 2.5000, 2.7500]]])"),
    (np.arange(1001, dtype=np.int64), {}, "tensor([   0,    1,    2,  ...,  998,  999, 1000])"),
    (np.linspace(-1, 1, 20).astype(np.float32), {},
     "tensor([-1.0000, -0.8947, -0.7895, -0.6842, -0.5789, -0.4737, -0.3684, -0.2632,\n"
     "        -0.1579, -0.0526,  0.0526,  0.1579,  0.2632,  0.3684,  0.4737,  0.5789,\n"
     "         0.6842,  0.7895,  0.8947,  1.0000])"),
    (np.array([1.23456, 2.5], np.float32), dict(precision=2), "tensor([1.23, 2.50])"),
]


@pytest.mark.parametrize("array, kwargs, expected", EXPECTED)
def test_hard_coded(array, kwargs, expected):
    assert format_tensor(array, dtype=_name(array), **kwargs) == expected


def test_format_node():
    assert format_node("MeanBackward0") == "<MeanBackward0>"
    assert format_node(None) == "None"


def test_format_next_functions():
    assert format_next_functions([("AddBackward0", 0), (None, 0)]) == \
        "((<AddBackward0>, 0), (None, 0))"
    assert format_next_functions([("AccumulateGrad", 0)]) == "((<AccumulateGrad>, 0),)"
    assert format_next_functions([]) == "()"


def test_no_torch_import():
    code = "import sys, gradcli.autograd.tensor_str; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fast_on_small_tensors():
    a = np.full((2, 2), 0.25, np.float32)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(200):
            format_tensor(a, dtype="float32", requires_grad=True)
        best = min(best, (time.perf_counter() - start) / 200)
    assert best < 100e-6, f"{best * 1e6:.1f} µs per 2x2 tensor"


# -- oracle: torch itself ------------------------------------------------------------

_TORCH_DEFAULT_OPTS = dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)


@pytest.fixture
def torch_oracle():
    """torch, with its print options and default dtype restored afterwards."""
    torch = pytest.importorskip("torch")
    yield torch
    torch.set_printoptions(**_TORCH_DEFAULT_OPTS)
    torch.set_default_dtype(torch.float32)


def torch_repr(torch, array, *, grad="none", default_float="float32", show_device=False,
               **opts) -> str:
    """repr of ``array`` as a torch tensor. grad: "none", "leaf" or "nonleaf"."""
    options = {**_TORCH_DEFAULT_OPTS, **opts}
    torch.set_printoptions(**options)
    torch.set_default_dtype(getattr(torch, default_float))
    t = torch.from_numpy(array.copy())  # (ascontiguousarray would make 0-d 1-d)
    if grad != "none":
        t = t.clone().requires_grad_()
        if grad == "nonleaf":
            t = t * 1          # same values (x * 1 keeps nan, inf and -0.0)
    get_default_device = torch._C._get_default_device
    if show_device:
        # Pretend the default device is CUDA so a CPU tensor prints device='cpu':
        # the device suffix is then in torch's own place in the order and wrapping.
        torch._C._get_default_device = lambda: "cuda"
    try:
        return repr(t)
    finally:
        torch._C._get_default_device = get_default_device


def check(torch, array, *, grad="none", default_float="float32", show_device=False, **opts):
    expected = torch_repr(torch, array, grad=grad, default_float=default_float,
                          show_device=show_device, **opts)
    expected = re.sub(r"grad_fn=<(\w+) object at 0x[0-9a-f]+>", r"grad_fn=<\1>", expected)
    name = re.search(r"grad_fn=<(\w+)>", expected)
    got = format_tensor(
        array, dtype=_name(array), requires_grad=grad != "none",
        grad_fn=name.group(1) if grad == "nonleaf" else None,
        default_float=default_float,
        device="xyz" if show_device else "cpu",  # same length as 'cpu'
        **opts,
    )
    got = got.replace("device='xyz'", "device='cpu'")
    assert got == expected, f"\n--- torch ---\n{expected}\n--- gradcli ---\n{got}"


def _hand_picked() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    f32 = np.float32
    arrays = [
        np.array(3.0, f32), np.array(-0.0, f32), np.array(np.nan), np.array(-np.inf, f32),
        np.array(0.1), np.array(1e-30, f32), np.array(123456789.0), np.array(7, np.int64),
        np.array(True), np.array(-3, np.int32), np.array(0.333, np.float16),
        np.array([0.0, 0.0], f32), np.array([-0.0, 0.0], f32), np.array([np.nan, np.inf], f32),
        np.array([np.nan, 0.5, -np.inf]), np.array([1e8, 1.0], f32), np.array([1.1e8, 1.0]),
        np.array([1e-4, 1.0]), np.array([9.99e-5, 1.0]), np.array([1000.0, 1.0]),
        np.array([1001.0, 1.0]), np.array([1000.5, 1.0]), np.array([1e300, 1e-300]),
        np.array([5e-324, 1.0]), np.array([1e308, -1e308]), np.array([-1e-200, 3e100]),
        np.array([0.5, 2.5, -1.5], f32), np.array([0.00005, 0.00015], f32),
        np.array([123456.0, 0.5]), np.array([1e20, 3.0]), np.array([-1.0, 2.0, -3.0], f32),
        np.array([65504.0, -65504.0, 6e-8], np.float16), np.array([np.inf, -0.0, 2.0, 1e-9]),
        np.array([[1e-3, 1e3], [-1e-3, -1e3]], f32), np.array([[np.nan]], f32),
        np.array([2**62, -2**63], np.int64), np.array([2**31 - 1, -2**31], np.int32),
        np.array([False, False]), np.array([[True], [False]]),
        np.zeros((0,), f32), np.zeros((0,)), np.zeros((0,), np.int32), np.zeros((0,), bool),
        np.zeros((2, 0, 3), f32), np.zeros((0, 0), np.int64), np.zeros((1, 0), np.float16),
        rng.standard_normal((3, 4)).astype(f32), rng.standard_normal((2, 3, 4)),
        rng.standard_normal((2, 2, 3, 4)).astype(f32) * 1e5,
        rng.standard_normal((3, 1, 2, 1)).astype(f32) * 1e-5,
        rng.standard_normal(200).astype(f32), rng.standard_normal(79).astype(f32) * 1e12,
        rng.standard_normal((4, 30)) * 1e3, rng.integers(-10**6, 10**6, 100),
        rng.integers(-9, 9, (3, 40)).astype(np.int32), rng.random(50) > 0.5,
        rng.standard_normal(1001).astype(f32), np.arange(2000, dtype=f32).reshape(20, 100),
        rng.standard_normal((10, 10, 12)).astype(f32), np.arange(1200).reshape(2, 3, 4, 50),
        (rng.standard_normal((7, 7, 7, 7)) * 10.0 ** rng.integers(-8, 9, (7, 7, 7, 7))),
        rng.random((40, 40)) > 0.3, np.arange(1001, dtype=np.float16),
        np.concatenate([rng.standard_normal(600), [np.nan, np.inf, -0.0], rng.standard_normal(600)]),
        np.arange(24, dtype=f32).reshape(2, 3, 4)[:, ::2],          # non-contiguous view
    ]
    return arrays


HAND_PICKED = _hand_picked()


@pytest.mark.torch
@pytest.mark.parametrize("array", HAND_PICKED, ids=lambda a: f"{_name(a)}{list(a.shape)}")
def test_oracle_hand_picked(torch_oracle, array):
    check(torch_oracle, array)
    if array.dtype.kind == "f":
        check(torch_oracle, array, grad="leaf")
        check(torch_oracle, array, grad="nonleaf", default_float="float64")
    check(torch_oracle, array, default_float="float64", show_device=True)


OPTION_VARIANTS = [
    dict(precision=0), dict(precision=1), dict(precision=8), dict(linewidth=30),
    dict(linewidth=5), dict(linewidth=200), dict(threshold=5), dict(threshold=0),
    dict(threshold=5, edgeitems=1), dict(threshold=5, edgeitems=0), dict(edgeitems=0),
    dict(threshold=10, edgeitems=10), dict(sci_mode=True), dict(sci_mode=False),
    dict(sci_mode=True, precision=2, linewidth=40), dict(threshold=float("inf")),
]


@pytest.mark.torch
@pytest.mark.parametrize("opts", OPTION_VARIANTS, ids=repr)
def test_oracle_print_options(torch_oracle, opts):
    for array in HAND_PICKED:
        check(torch_oracle, array, **opts)


@pytest.mark.torch
@pytest.mark.parametrize("default_float", FLOATS)
def test_oracle_default_dtype(torch_oracle, default_float):
    for array in HAND_PICKED[:40]:
        check(torch_oracle, array, default_float=default_float)
        if array.dtype.kind == "f":
            check(torch_oracle, array, grad="nonleaf", default_float=default_float,
                  show_device=True)


@pytest.mark.torch
@pytest.mark.parametrize("grad", ["none", "leaf", "nonleaf"])
@pytest.mark.parametrize("linewidth", [20, 40, 47, 48, 49, 50, 80])
def test_oracle_suffix_wrapping(torch_oracle, grad, linewidth):
    """Every suffix combination near the wrapping edge, single- and multi-line bodies."""
    for array in [np.array([1.5, 2.5]), np.zeros((0, 2)), np.arange(6.0).reshape(2, 3),
                  np.arange(30, dtype=np.float16), np.array(0.5)]:
        for default_float in ("float32", "float64"):
            for show_device in (False, True):
                for edgeitems in (3, 0):
                    check(torch_oracle, array, grad=grad, default_float=default_float,
                          show_device=show_device, linewidth=linewidth, edgeitems=edgeitems)


def test_oracle_next_functions(torch_oracle):
    torch = torch_oracle
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0])
    cases = [
        ((a * b).grad_fn.next_functions, [("AccumulateGrad", 0), (None, 0)]),
        ((a * 2).sum().grad_fn.next_functions, [("MulBackward0", 0)]),
        (((a + 1) * (a * 2)).grad_fn.next_functions, [("AddBackward0", 0), ("MulBackward0", 0)]),
        (a.sum().grad_fn.next_functions[0][0].next_functions, []),
    ]
    for actual, entries in cases:
        expected = re.sub(r"<(\w+) object at 0x[0-9a-f]+>", r"<\1>", repr(actual))
        assert format_next_functions(entries) == expected
        assert [format_node(None if f is None else type(f).__name__) for f, _ in actual] == \
            [format_node(name) for name, _ in entries]


# -- oracle: hypothesis ------------------------------------------------------------

_SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 0.5, 1e-5, 1e-4, 1e8, 1.5e8,
            1000.0, 1e10, 123.456]


def _cast(dtype: str):
    """Round a Python float to ``dtype`` (overflowing to inf) so hypothesis can store it."""
    def cast(value: float) -> float:
        with np.errstate(over="ignore"):
            return float(np.array(value, dtype))
    return cast


def _elements(dtype: str):
    if dtype == "bool":
        return st.booleans()
    if dtype.startswith("int"):
        bits = int(dtype[3:])
        return st.one_of(st.integers(-9, 99),
                         st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
    width = int(dtype[5:])
    return st.one_of(
        st.floats(-10, 10, width=width),                                   # fixed point
        st.integers(-10**4, 10**4).map(float),                             # integer-valued
        st.floats(width=width),                                            # anything
        st.sampled_from(_SPECIAL).map(_cast(dtype)),
        st.builds(lambda m, e: m * 10.0 ** e, st.floats(-10, 10), st.integers(-12, 12))
        .map(_cast(dtype)),                                                # mixed magnitudes
    )


@st.composite
def arrays_and_options(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=7))
    array = draw(hnp.arrays(np.dtype(dtype), shape, elements=_elements(dtype)))
    opts = draw(st.fixed_dictionaries({}, optional={
        "precision": st.integers(0, 8),
        "linewidth": st.integers(10, 120),
        "threshold": st.sampled_from([0, 3, 10, 50, 1000]),
        "edgeitems": st.integers(0, 4),
        "sci_mode": st.sampled_from([None, True, False]),
    }))
    return array, opts


@pytest.mark.torch
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=arrays_and_options(),
       grad=st.sampled_from(["none", "leaf", "nonleaf"]),
       default_float=st.sampled_from(FLOATS),
       show_device=st.booleans())
def test_oracle_hypothesis(torch_oracle, case, grad, default_float, show_device):
    array, opts = case
    if array.dtype.kind != "f":
        grad = "none"          # only floating tensors can require grad
    check(torch_oracle, array, grad=grad, default_float=default_float,
          show_device=show_device, **opts)


@pytest.mark.torch
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(array=hnp.arrays(
    st.sampled_from([np.float32, np.float64]),
    st.sampled_from([(1001,), (40, 30), (3, 20, 20), (2, 9, 8, 9)]),
    elements=st.floats(-1e6, 1e6, width=32)))
def test_oracle_hypothesis_summarized(torch_oracle, array):
    check(torch_oracle, array)
