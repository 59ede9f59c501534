"""Constructors: ``tensor``, ``ones``, ``zeros``, ``rand``... each taking dtype, device, requires_grad.

Every constructor checks the element limit before allocating. Random values come from
torch's CPU generator reimplemented (``gradcli/backend/generator.py``): after
``manual_seed(n)`` (or ``--seed n``) rand, randn, randint, normal, randperm and the ``_like``
forms draw exactly the numbers torch draws after ``torch.manual_seed(n)``, call after call.
Random values for a GPU are drawn on the host and copied (torch's CUDA generator differs).
"""

from __future__ import annotations

import functools as _functools

import numpy as _np

from ..backend import dtypes as _dt
from ..backend import get_backend
from ..backend import generator as _generator
from ..errors import GradTypeError, ShapeError
from .registry import op
from ..limits import check_numel
from ..autograd import factory as _factory
from ..autograd.factory import DEFAULT_DEVICE, _finish  # noqa: F401  (DEFAULT_DEVICE: the CLI sets it)
from ..autograd.tensor import Tensor

_RNG = [None]  # the Generator; made on first use (numpy.random costs ~10 ms of start-up)


def manual_seed(seed: int) -> None:
    """Seed the generator behind rand/randn/randint/normal/randperm, as torch.manual_seed."""
    if isinstance(seed, bool) or not isinstance(seed, (int, float)):
        raise GradTypeError(f"manual_seed expected an int, but got {type(seed).__name__}")
    _RNG[0] = _generator.Generator(int(seed))  # torch: int(seed), so 1.5 seeds as 1


def initial_seed() -> int:
    """The seed the generator was last seeded with."""
    return _rng().initial_seed()


def seed() -> int:
    """Seed the generator from the operating system's entropy; returns that seed."""
    return _rng().seed()


def _rng():
    if _RNG[0] is None:
        _RNG[0] = _generator.Generator()
    return _RNG[0]


def _draw(shape, name: str, draw, generator=None):
    """``draw(generator, n, dtype)`` for a shape, in the dtype (float16, float32 and float64 as
    torch draws them), from ``generator`` (a ``Generator``) or the default one."""
    n = int(_np.prod(shape, dtype=_np.int64))
    return draw(_gen(generator), n, name).reshape(shape).astype(name, copy=False)


def _gen(generator):
    if generator is None:
        return _rng()
    if not isinstance(generator, _generator.Generator):
        raise GradTypeError(f"generator must be a Generator, not {type(generator).__name__}")
    return generator


def _size_keyword(fn, leading: int = 0):
    """torch's ``ones(size=(2, 3))``: the sizes as the keyword ``size`` too (its signature, shown by
    ``gradcli ops``, stays ``*size``), after ``leading`` positional arguments (a method's tensor)."""
    @_functools.wraps(fn)
    def sized(*args, **kwargs):
        if "size" in kwargs:
            if len(args) > leading:
                raise GradTypeError(f"{fn.__name__}() got multiple values for argument 'size'")
            args = args + (kwargs.pop("size"),)
        return fn(*args, **kwargs)
    return sized


def _size(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    for s in size:
        if isinstance(s, bool) or not isinstance(s, int):
            raise GradTypeError(f"size must be a sequence of ints, but got {type(s).__name__}")
        if s < 0:
            raise ShapeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    check_numel(size)
    return tuple(size)


def _float(dtype) -> str:
    return (_dt.DEFAULTS.float if dtype is None else _dt.by_name(dtype)).name


@op(method=False, category="creation")
def tensor(data, dtype=None, device=None, requires_grad=False):
    """A tensor from a number or (nested) list; ints give int64, floats the default dtype."""
    return _factory.tensor(data, dtype, device, requires_grad)


def _filled(value, size, dtype, device, requires_grad):
    shape = _size(size)
    name = _float(dtype)
    return _full(shape, value, name, device, requires_grad)


def _full(shape, value, name, device, requires_grad):
    """A constant tensor; on a GPU made there (no host buffer and no copy of 10**8 elements)."""
    backend = get_backend(DEFAULT_DEVICE[0] if device is None else device)
    if backend.device_type == "cuda":
        return _finish(backend.xp.full(shape, value, dtype=backend.dtype(name)), name, device, requires_grad)
    return _finish(_np.full(shape, value, dtype=name), name, device, requires_grad)


@op(method=False, category="creation")
@_size_keyword
def ones(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of ones."""
    return _filled(1, size, dtype, device, requires_grad)


@op(method=False, category="creation")
@_size_keyword
def zeros(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros."""
    return _filled(0, size, dtype, device, requires_grad)


@op(method=False, category="creation")
@_size_keyword
def empty(*size, dtype=None, device=None, requires_grad=False):
    """A tensor whose values are not to be relied on: torch leaves them uninitialised; here they are zeros."""
    return _filled(0, size, dtype, device, requires_grad)


@op(method=False, category="creation")
def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor filled with one value (its dtype inferred from the value)."""
    if isinstance(size, int):
        size = (size,)
    if dtype is None:
        dtype = "bool" if isinstance(fill_value, bool) else "int64" if isinstance(fill_value, int) else None
    shape = _size(tuple(size))
    name = _float(dtype)
    return _full(shape, fill_value, name, device, requires_grad)


@op(method=False, category="creation")
@_size_keyword
def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform random values in [0, 1), torch's for a given seed (manual_seed, --seed)."""
    shape = _size(size)
    name = _float(dtype)
    return _finish(_draw(shape, name, lambda g, n, d: g.uniform(n, d), generator), name, device, requires_grad)


@op(method=False, category="creation")
@_size_keyword
def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal random values, torch's for a given seed (manual_seed, --seed)."""
    shape = _size(size)
    name = _float(dtype)
    return _finish(_draw(shape, name, lambda g, n, d: g.normal(n, d), generator), name, device, requires_grad)


@op(method=False, category="creation")
def arange(start=None, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values from start (default 0) up to end, by step; integers give int64."""
    if end is None:  # arange(end), arange(end=n)
        if start is None:
            raise GradTypeError("arange() missing required argument 'end'")
        start, end = 0, start
    elif start is None:
        start = 0
    for v in (start, end, step):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise GradTypeError("arange() arguments must be numbers")
    if step == 0:
        raise ShapeError("step must be nonzero")
    count = max(0, -(-(end - start) // step)) if all(isinstance(v, int) for v in (start, end, step)) \
        else max(0, int(_np.ceil((end - start) / step)))
    if (end - start) * step < 0:
        raise ShapeError("upper bound and larger bound inconsistent with step sign")
    check_numel((count,))
    if dtype is None:
        name = "int64" if all(isinstance(v, int) for v in (start, end, step)) else _dt.DEFAULTS.float.name
    else:
        name = _dt.by_name(dtype).name
    host = (start + step * _np.arange(count, dtype=_np.float64)).astype(name) if name != "int64" \
        else _np.arange(start, end, step, dtype=_np.int64)
    return _finish(host, name, device, requires_grad)


@op(method=False, category="creation")
def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from start to end inclusive."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise GradTypeError("linspace(): number of steps must be a non-negative int")
    check_numel((steps,))
    name = _float(dtype)
    return _finish(_np.linspace(start, end, steps).astype(name), name, device, requires_grad)


@op(method=False, category="creation")
def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """The identity matrix (n x m)."""
    m = n if m is None else m
    shape = _size((n, m))
    name = _float(dtype)
    return _finish(_np.eye(*shape, dtype=name), name, device, requires_grad)


def _like(fill, input, dtype, device, requires_grad):
    name = input.dtype.name if dtype is None else _dt.by_name(dtype).name
    device = str(input.device) if device is None else device
    shape = tuple(input.shape)
    check_numel(shape)
    host = fill(shape, name)
    return _finish(host, name, device, requires_grad)


@op(method=False, category="creation")
def ones_like(input, dtype=None, device=None, requires_grad=False):
    """Ones with ``input``'s shape, dtype and device."""
    return _like(lambda s, d: _np.ones(s, dtype=d), input, dtype, device, requires_grad)


@op(method=False, category="creation")
def zeros_like(input, dtype=None, device=None, requires_grad=False):
    """Zeros with ``input``'s shape, dtype and device."""
    return _like(lambda s, d: _np.zeros(s, dtype=d), input, dtype, device, requires_grad)


@op(method=False, category="creation")
def empty_like(input, dtype=None, device=None, requires_grad=False):
    """A tensor with ``input``'s shape, dtype and device whose values are not to be relied on (zeros here)."""
    return zeros_like(input, dtype, device, requires_grad)


@op(method=False, category="creation")
def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):
    """``fill_value`` with ``input``'s shape, dtype and device."""
    return _like(lambda s, d: _np.full(s, fill_value, dtype=d), input, dtype, device, requires_grad)


@op(method=False, category="creation")
def rand_like(input, dtype=None, device=None, requires_grad=False):
    """Uniform random values with ``input``'s shape, dtype and device."""
    return _like(lambda s, d: _draw(s, d, lambda g, n, b: g.uniform(n, b)), input, dtype, device, requires_grad)


@op(method=False, category="creation")
def randn_like(input, dtype=None, device=None, requires_grad=False):
    """Standard normal values with ``input``'s shape, dtype and device."""
    return _like(lambda s, d: _draw(s, d, lambda g, n, b: g.normal(n, b)), input, dtype, device, requires_grad)


# -- Tensor.new_*: a new tensor with this one's dtype and device (torch's methods, no torch.* form) ------

def _new_like(self, dtype, device):
    return (self.dtype.name if dtype is None else _dt.by_name(dtype).name), (str(self.device) if device is None else device)


def _new_filled(value, self, size, dtype, device, requires_grad):
    name, device = _new_like(self, dtype, device)
    return _full(_size(size), value, name, device, requires_grad)


# ``x.new_ones(2, 3)``, ``x.new_ones((2, 3))`` and ``x.new_ones(size=(2, 3))``, as torch
_sized_method = _functools.partial(_size_keyword, leading=1)


@op(category="creation", namespaces=())
@_sized_method
def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    """Ones of the given size, with this tensor's dtype and device unless given."""
    return _new_filled(1, self, size, dtype, device, requires_grad)


@op(category="creation", namespaces=())
@_sized_method
def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    """Zeros of the given size, with this tensor's dtype and device unless given."""
    return _new_filled(0, self, size, dtype, device, requires_grad)


@op(category="creation", namespaces=())
@_sized_method
def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size, this tensor's dtype and device, values not to be relied on (zeros here)."""
    return _new_filled(0, self, size, dtype, device, requires_grad)


@op(category="creation", namespaces=())
def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    """``fill_value`` in a tensor of the given size, with this tensor's dtype and device unless given."""
    if not isinstance(size, (list, tuple)):
        raise GradTypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    return _new_filled(fill_value, self, size, dtype, device, requires_grad)


@op(category="creation", namespaces=())
def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """A tensor of ``data`` (copied), with this tensor's dtype and device unless given."""
    name, device = _new_like(self, dtype, device)
    return _factory.tensor(data, name, device, requires_grad)


@op(differentiable=False, category="comparison")
def equal(input, other):
    """True when both have the same shape and the same values (NaN equals nothing; a Python bool)."""
    for what, value in (("input", input), ("other", other)):
        if not isinstance(value, Tensor):
            raise GradTypeError(f"equal(): argument '{what}' (position {1 if what == 'input' else 2}) must be "
                                f"Tensor, not {type(value).__name__}")
    a, b = input._backend.to_host(input._data), other._backend.to_host(other._data)
    return a.shape == b.shape and bool(_np.array_equal(a, b))


@op(differentiable=False, category="comparison")
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when |input - other| <= atol + rtol * |other| everywhere (a Python bool)."""
    a = input._backend.to_host(input._data) if isinstance(input, Tensor) else _np.asarray(input)
    b = other._backend.to_host(other._data) if isinstance(other, Tensor) else _np.asarray(other)
    try:
        check_numel(_np.broadcast_shapes(a.shape, b.shape))  # numpy would materialise the broadcast
        return bool(_np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))
    except ValueError:
        raise ShapeError(f"The size of tensor a ({a.shape}) must match the size of tensor b ({b.shape})") from None
