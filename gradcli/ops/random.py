"""The random functions beyond rand/randn: randint, normal, randperm, and the seed functions.

All draw from the one generator of ``creation`` (torch's mt19937, see
``gradcli/backend/generator.py``), consuming it as torch's CPU kernels do, so a program seeded
with ``manual_seed(n)`` gets torch's numbers call after call. Their results are leaves:
``normal`` with tensor means or stds is not differentiated (torch's NormalBackward is not here).
"""

from __future__ import annotations

import numpy as _np

from ..autograd.factory import _finish
from ..autograd.node import define_node
from ..autograd.tensor import Tensor
from ..backend import dtypes as _dt
from ..errors import GradTypeError, ShapeError
from . import creation as _creation
from ..backend.generator import Generator as _Generator
from .creation import _draw, _float, _gen, _size
from .inplace import scalar_type
from .shape import overwrite_
from .registry import op


@op(method=False, differentiable=False, category="creation")
def manual_seed(seed):
    """Seed the random generator: then rand, randn, randint... draw torch's numbers for that seed."""
    _creation.manual_seed(seed)


@op(method=False, differentiable=False, category="creation")
def initial_seed():
    """The seed the random generator was last seeded with."""
    return _creation.initial_seed()


@op(method=False, differentiable=False, category="creation")
def seed():
    """Seed the random generator from the system's entropy; returns the seed."""
    return _creation.seed()


_DEFAULT_GENERATOR_SEED = 67280421310721  # what torch.Generator() starts from


@op(method=False, differentiable=False, category="creation", name="Generator")
def generator(device="cpu"):
    """A random generator of one's own (torch.Generator): g.manual_seed(n), then rand(..., generator=g)."""
    if str(device) != "cpu":
        raise GradTypeError("gradcli's Generator draws torch's CPU numbers: device='cpu' only")
    return _Generator(_DEFAULT_GENERATOR_SEED)


def _int(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise GradTypeError(f"randint(): argument '{what}' must be int, not {type(value).__name__}")
    return value


@op(method=False, differentiable=False, category="creation")
def randint(low, high=None, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Random integers in [low, high) (low defaults to 0): randint(10, (3,)) or randint(2, 9, (3,))."""
    if size is None:
        low, high, size = 0, low, high
    if size is None:
        raise GradTypeError("randint() missing required argument 'size'")
    low, high = _int(low, "low"), _int(high, "high")
    shape = _size(tuple(size) if isinstance(size, (list, tuple)) else (size,))
    if low >= high:
        raise ShapeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    name = "int64" if dtype is None else _dt.by_name(dtype).name
    n = int(_np.prod(shape, dtype=_np.int64))
    values = _gen(generator).randint(n, low, high).reshape(shape).astype(name)
    return _finish(values, name, device, requires_grad)


@op(method=False, differentiable=False, category="creation")
def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise GradTypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    _size((n,))  # torch's message for a negative n
    name = "int64" if dtype is None else _dt.by_name(dtype).name
    return _finish(_gen(generator).randperm(n).astype(name), name, device, requires_grad)


def _host(t):
    return t._backend.to_host(t._data)


@op(method=False, differentiable=False, category="creation")
def normal(mean=0.0, std=1.0, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Normal random values: normal(mean, std, size) with numbers, or normal(mean, std) with tensors
    (the result has their broadcast shape)."""
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if not tensors:
        if size is None:
            raise GradTypeError("normal() with number mean and std needs a size")
        if std < 0:
            raise ShapeError(f"normal expects std >= 0.0, but found std {std:g}")
        shape = _size(tuple(size) if isinstance(size, (list, tuple)) else (size,))
        name = _float(dtype)
        values = _draw(shape, name, lambda g, n, d: g.normal(n, d, float(mean), float(std)), generator)
        return _finish(values, name, device, requires_grad)
    name = _dt.DTYPES[tensors[0].dtype.name].name
    m = _host(mean) if isinstance(mean, Tensor) else mean
    s = _host(std) if isinstance(std, Tensor) else std
    if (_np.asarray(s) < 0).any():
        raise ShapeError("normal expects all elements of std >= 0.0" if isinstance(std, Tensor) else
                         f"normal expects std >= 0.0, but found std {std:g}")
    shape = _np.broadcast_shapes(_np.shape(m), _np.shape(s))
    _size(shape)
    if isinstance(std, Tensor):  # torch: normal_(0, 1), then * std + mean
        values = _draw(shape, name, lambda g, n, d: g.normal(n, d), generator) * s + m
    else:                        # torch: normal_(0, std), then + mean
        values = _draw(shape, name, lambda g, n, d: g.normal(n, d, 0.0, float(s)), generator) + m
    device = str(tensors[0].device) if device is None else device
    return _finish(_np.asarray(values, dtype=name), name, device, requires_grad)


# -- in-place fills: x.uniform_(a, b), x.normal_(mean, std) (weight initialisation) --------------------

# On a tensor that requires grad (not a leaf: torch refuses that) the fill is recorded, as torch's
# UniformBackward0/NormalBackward0: from here on the values depend on nothing, so the gradient is zero.
UniformBackward0 = define_node("UniformBackward0", self="F.zeros_like(grad)", forward=lambda xp, x: x)
NormalBackward0 = define_node("NormalBackward0", self="F.zeros_like(grad)", forward=lambda xp, x: x)


def _fill_random(input, node, name, kernel, draw, generator):
    if not isinstance(input, Tensor):
        raise GradTypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise GradTypeError(f'"{kernel}" not implemented for \'{scalar_type(input.dtype)}\'')
    backend = input._backend

    def values():
        drawn = _draw(tuple(input.shape), input.dtype.name, draw, generator)
        return drawn if backend.is_numpy else backend.from_host(drawn)
    return overwrite_(input, values, node)


@op(UniformBackward0, category="creation", namespaces=())
def uniform_(input, from_=0.0, to=1.0, generator=None):
    """Fill in place with uniform random values in [from_, to), torch's for a given seed."""
    if from_ > to:
        raise ShapeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    return _fill_random(input, UniformBackward0, "uniform_", "check_uniform_bounds",
                        lambda g, n, d: g.uniform(n, d, from_, to), generator)


@op(NormalBackward0, category="creation", namespaces=())
def normal_(input, mean=0.0, std=1.0, generator=None):
    """Fill in place with normal random values of ``mean`` and ``std``, torch's for a given seed."""
    if std < 0:
        raise ShapeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill_random(input, NormalBackward0, "normal_", "normal_kernel_cpu",
                        lambda g, n, d: g.normal(n, d, mean, std), generator)
