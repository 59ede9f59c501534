"""PyTorch's legacy API, with torch 2.13's behaviour: Variable, Tensor(...), FloatTensor & co., Parameter.

The seed articles (and much code on the web) still write ``Variable(t, requires_grad=True)``,
``torch.Tensor([1, 2])``, ``torch.FloatTensor(2, 3)``, ``volatile=True`` and ``nn.Parameter``;
torch 2.13 still runs them, so gradcli does too, with the same results and warnings:

- ``Variable(t, requires_grad=False, volatile=False)``: a new leaf sharing ``t``'s data (also
  when ``t`` is not a leaf); ``volatile`` has no effect but warns; ``.volatile`` is False, warns.
- ``Tensor(...)``: a list gives the default float dtype, sizes give a tensor of that size
  (zeros here: torch's is uninitialised memory), a tensor gives an alias (AliasBackward0).
  ``FloatTensor``/``DoubleTensor``/``LongTensor`` fix the dtype.
- ``Parameter(t, requires_grad=True)``: a leaf sharing ``t``'s data, printed as torch prints
  a parameter ("Parameter containing:").
- ``cuda.FloatTensor`` and friends: torch without CUDA refuses them ("Torch not compiled with
  CUDA enabled"); gradcli makes them on its CUDA device when CuPy has one, else says why not.
"""

from __future__ import annotations

import warnings

from ..autograd import legacy as _legacy
from ..autograd.factory import _finish, tensor as _tensor
from ..autograd.function import apply
from ..autograd.tensor import Tensor
from ..backend import dtypes as _dt
from ..errors import ArgumentValueError, GradTypeError
from .creation import _full, _size
from .registry import op
from .shape import AliasBackward0

VOLATILE_ARGUMENT = "volatile was removed and now has no effect. Use `with torch.no_grad():` instead."


@op(method=False, category="legacy", name="Variable", namespaces=("torch.autograd",))
def variable(data, requires_grad=False, volatile=False):
    """Legacy torch.autograd.Variable: a new leaf sharing data's values (volatile: no effect, warns)."""
    if not isinstance(data, Tensor):
        raise GradTypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    if volatile:
        warnings.warn(VOLATILE_ARGUMENT, UserWarning, stacklevel=2)
    return _leaf(data, requires_grad)


def _leaf(data: Tensor, requires_grad) -> Tensor:
    out = data.detach()  # the same storage and version counter: an in-place change shows in both
    if requires_grad:
        if not data.dtype.is_floating_point:
            raise GradTypeError("Only Tensors of floating point and complex dtype can require gradients")
        out.requires_grad_(True)
    return out


@op(method=False, category="legacy", name="Parameter", namespaces=("torch.nn",))
def parameter(data=None, requires_grad=True):
    """torch.nn.Parameter: a leaf that requires grad (by default), printed as 'Parameter containing:'."""
    if data is None:
        data = _tensor([])
    if not isinstance(data, Tensor):
        raise GradTypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
    out = _leaf(data, requires_grad)
    _legacy.mark_parameter(out)
    return out


def _legacy_new(args, dtype, device=None):
    """torch's legacy ``new()``: no argument, a tensor, a sequence of data, or sizes."""
    name = _dt.DEFAULTS.float.name if dtype is None else dtype
    if not args:
        return _finish(_full_host((0,), name), name, device, False)
    if len(args) == 1 and isinstance(args[0], Tensor):
        source = args[0]
        if dtype is not None and source.dtype.name != dtype:
            raise GradTypeError(f"expected {_options(dtype)} (got {_options(source.dtype.name)})")
        return apply(AliasBackward0, (source,))
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return _tensor(list(args[0]), dtype=name, device=device)
    for a in args:
        if isinstance(a, bool) or not isinstance(a, int):
            if len(args) == 1 and not isinstance(a, (list, tuple)):
                kind = type(a).__name__
                if isinstance(a, (int, float)):
                    raise GradTypeError(f"new(): data must be a sequence (got {kind})")
                raise GradTypeError(f"new(): invalid data type '{kind}'")
            raise GradTypeError(f"new(): argument 'size' must be tuple of ints, but found element of type "
                                f"{type(a).__name__}")
    shape = _size(args)
    return _full(shape, 0, name, device, False)


def _full_host(shape, name):
    import numpy as np
    return np.zeros(shape, dtype=name)


def _options(name: str) -> str:
    c = {"float32": "float", "float64": "double", "int64": "long int", "float16": "c10::Half"}.get(name, name)
    return (f"TensorOptions(dtype={c}, device=cpu, layout=Strided, requires_grad=false (default), "
            f"pinned_memory=false (default), memory_format=(nullopt))")


_LEGACY_TYPES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "int64": "LongTensor",
                 "int32": "IntTensor", "bool": "BoolTensor"}


@op(category="legacy", name="type", namespaces=())
def tensor_type(input, dtype=None, non_blocking=False):
    """With no dtype, the tensor's legacy type name ('torch.FloatTensor'); else the tensor cast to
    ``dtype`` (a dtype, or such a name: 'torch.DoubleTensor'), itself where it has that dtype."""
    if dtype is None:
        prefix = "torch.cuda." if input._backend.device_type == "cuda" else "torch."
        return prefix + _LEGACY_TYPES.get(input.dtype.name, input.dtype.name)
    if isinstance(dtype, str):
        name = dtype.replace("torch.cuda.", "torch.")
        found = next((k for k, v in _LEGACY_TYPES.items() if "torch." + v == name), None)
        if found is None:
            raise ArgumentValueError(f"invalid type: '{dtype}'")
        device = "cuda" if dtype.startswith("torch.cuda.") else None
        return input.to(device, found) if device else input.to(found)
    return input.to(dtype)


@op(method=False, category="legacy", name="Tensor")
def legacy_tensor(*args, device=None):
    """Legacy torch.Tensor(...): data (the default float dtype), sizes (zeros), or a tensor (an alias)."""
    return _legacy_new(args, None, device)


@op(method=False, category="legacy", name="FloatTensor")
def float_tensor(*args, device=None):
    """Legacy torch.FloatTensor(...): float32 from data or sizes."""
    return _legacy_new(args, "float32", device)


@op(method=False, category="legacy", name="DoubleTensor")
def double_tensor(*args, device=None):
    """Legacy torch.DoubleTensor(...): float64 from data or sizes."""
    return _legacy_new(args, "float64", device)


@op(method=False, category="legacy", name="LongTensor")
def long_tensor(*args, device=None):
    """Legacy torch.LongTensor(...): int64 from data (floats truncated) or sizes."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        import numpy as np
        _tensor(list(args[0]))  # torch's checks and messages for ragged or wrong data
        data = np.trunc(np.asarray(args[0], dtype=np.float64)) if _has_float(args[0]) else args[0]
        return _tensor(np.asarray(data).tolist(), dtype="int64", device=device)
    return _legacy_new(args, "int64", device)


def _has_float(seq) -> bool:
    stack = [seq]
    while stack:
        for v in stack.pop():
            if isinstance(v, (list, tuple)):
                stack.append(v)
            elif isinstance(v, float):
                return True
    return False


def _cuda(name, dtype):
    def make(*args):
        return _legacy_new(args, dtype, "cuda")
    make.__name__ = name
    make.__doc__ = f"Legacy torch.cuda.{name}(...): on the CUDA device (CuPy); torch without CUDA refuses it."
    return make


class _Cuda:
    """``torch.cuda`` as far as legacy code reaches into it: the typed constructors, is_available()."""

    FloatTensor = staticmethod(_cuda("FloatTensor", "float32"))
    DoubleTensor = staticmethod(_cuda("DoubleTensor", "float64"))
    LongTensor = staticmethod(_cuda("LongTensor", "int64"))

    @staticmethod
    def is_available() -> bool:
        from ..backend import get_backend
        from ..errors import DeviceError
        try:
            get_backend("cuda:0")
        except DeviceError:
            return False
        return True

    def __repr__(self):
        return "<module 'torch.cuda'>"


cuda = _Cuda()  # the language's torch.cuda (not in the op table: its names are not identifiers)
