"""Tensors from Python data: what ``tensor([...])`` and a gradient given as a list are made of.

The engine converts ``grad_outputs`` given as numbers or lists with it, and the ``tensor``
function of the op table is this function, registered. ``DEFAULT_DEVICE`` is the CLI's
``--device``.
"""

from __future__ import annotations

import numpy as _np

from ..backend import dtypes as _dt
from ..backend import get_backend
from ..errors import GradTypeError, RuntimeTypeError, ShapeError
from ..limits import check_numel
from .tensor import Tensor

DEFAULT_DEVICE = ["cpu"]  # set by the CLI's --device


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor from a number or (nested) list: ints give int64, floats the default dtype. From a
    tensor, a NumPy array or a NumPy scalar, the dtype is theirs where it is one of gradcli's (as
    torch keeps it: ``torch.tensor(np.zeros(2))`` is float64); a tensor's copy warns as torch's."""
    typed = False
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=3)  # (the caller of gradcli.tensor, through creation's function)
        data = data._backend.to_host(data._data)
        typed = True
    elif isinstance(data, (_np.ndarray, _np.generic)):
        typed = True
    _check_nested(data)
    host = _np.asarray(data)
    if host.dtype == object or host.dtype.kind in "USO":
        raise GradTypeError(f"could not convert {type(data).__name__} to a tensor of numbers")
    if dtype is None:
        kind = host.dtype.kind
        if typed and host.dtype.name in _dt.DTYPES:
            name = host.dtype.name
        else:
            name = "bool" if kind == "b" else "int64" if kind in "iu" else _dt.DEFAULTS.float.name
    else:
        name = _dt.by_name(dtype).name
    check_numel(host.shape)
    host = host.astype(name if name != "bool" else _np.bool_, copy=True)
    return _finish(host, name, device, requires_grad)


def _check_nested(data) -> None:
    """Reject ragged lists with torch's message, without recursion."""
    if not isinstance(data, (list, tuple)):
        return
    stack = [(data, 0)]
    shape = {}
    while stack:
        seq, depth = stack.pop()
        if depth in shape and shape[depth] != len(seq):
            raise ShapeError(f"expected sequence of length {shape[depth]} at dim {depth} (got {len(seq)})")
        shape[depth] = len(seq)
        kinds = {isinstance(v, (list, tuple)) for v in seq}
        if len(kinds) > 1:
            raise ShapeError(f"expected sequence of length {len(seq)} at dim {depth + 1}")
        nested = []
        for v in seq:
            if isinstance(v, (list, tuple)):
                nested.append((v, depth + 1))
            elif isinstance(v, Tensor):
                if v.numel() != 1:
                    raise GradTypeError("only one element tensors can be converted to Python scalars")
            elif not isinstance(v, (int, float, bool)):
                raise GradTypeError(f"new(): invalid data type '{type(v).__name__}'")
        stack.extend(reversed(nested))  # depth first, in order: the first ragged row is the one named


def _finish(host: _np.ndarray, dtype: str, device, requires_grad: bool) -> Tensor:
    backend = get_backend(DEFAULT_DEVICE[0] if device is None else device)
    data = backend.from_host(host) if not backend.is_numpy else host
    if not backend.is_numpy:
        data = backend.asarray(data, dtype)
    t = Tensor._make(data, backend)
    if requires_grad:
        if not _dt.DTYPES[backend.dtype_name(data)].is_floating_point:
            # a constructor's wording, not requires_grad_()'s ("only Tensors of floating point dtype ...")
            raise RuntimeTypeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t
