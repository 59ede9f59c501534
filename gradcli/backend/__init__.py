"""The one seam between the engine and an array library.

The engine never imports numpy or cupy for computation: every tensor carries a
``Backend`` whose ``xp`` is an array namespace (NumPy, CuPy, or any Python
array-API namespace such as ``array_api_strict``), plus the few things the array
API lacks: scatter-add (for index backward), transfer to the host, and
synchronisation. This is Chainer's ``get_array_module`` turned inside out: the
tensor knows its backend, so no op has to guess it from the array type.

CuPy is imported only when a CUDA device is asked for, so CPU start-up stays fast.
"""

from __future__ import annotations

import numpy as _np

from ..errors import DeviceError
from .numpy_fast import NUMPY_NAMESPACE, mean_of

_NP_SCALAR = _np.generic


class Backend:
    """An array namespace plus the operations the array API does not provide."""

    __slots__ = ("name", "xp", "device_type", "index", "_dtypes", "native", "is_numpy")

    def __init__(self, name: str, xp, device_type: str = "cpu", index: int | None = None):
        self.name = name               # "cpu", "cuda:0", "array_api_strict"
        self.xp = xp
        self.device_type = device_type
        self.index = index
        self._dtypes = {}
        self.is_numpy = xp is _np or xp is NUMPY_NAMESPACE  # arrays are NumPy's: on the host
        # NumPy and CuPy index with arrays and slices mixed, and have scatter-add; a bare
        # array-API namespace need not: those two go through the host there (correct, not fast)
        self.native = self.is_numpy or device_type == "cuda"

    # -- dtypes ---------------------------------------------------------------
    def dtype(self, name: str):
        """The namespace's dtype object for a gradcli dtype name."""
        dt = self._dtypes.get(name)
        if dt is None:
            # NumPy and CuPy share NumPy's dtype objects (np.bool is NumPy 2 only); others their own
            dt = self._dtypes[name] = _np.dtype(name) if self.native else getattr(self.xp, name)
        return dt

    def dtype_name(self, array) -> str:
        return _dtype_name(array.dtype)

    # -- the operations the array API lacks ------------------------------------
    def asarray(self, value, dtype: str | None = None):
        xp = self.xp
        if dtype is None:
            return xp.asarray(value)
        return xp.asarray(value, dtype=self.dtype(dtype))

    def fix(self, array):
        """NumPy returns scalars from 0-d arithmetic; keep tensors backed by arrays."""
        if isinstance(array, _NP_SCALAR):
            return _np.asarray(array)
        return array

    def to_host(self, array) -> _np.ndarray:
        if self.is_numpy:
            return array
        if self.device_type == "cuda":
            return self.xp.asnumpy(array)
        return _np.asarray(_np.from_dlpack(array)) if hasattr(array, "__dlpack__") else _np.asarray(array)

    def from_host(self, array: _np.ndarray):
        if self.is_numpy:
            return array
        return self.xp.asarray(array)

    def gather(self, array, key):
        """``array[key]`` with NumPy's advanced indexing (integer arrays and masks mixed with
        slices), which the array API specifies only for integer arrays alone."""
        if self.native:
            return array[key]
        host = _np.asarray(self.to_host(array))[_host_index(self, key)]
        return self.from_host(_np.ascontiguousarray(host))

    def put(self, target, key, values):
        """``target[key] = values`` with NumPy's advanced indexing (its index arrays may be NumPy's),
        which the array API does not have; returns the array written."""
        if self.native:
            target[key] = values
            return target
        host = _np.array(self.to_host(target))
        host[_host_index(self, key)] = _np.asarray(self.to_host(values))
        return self.from_host(host)

    def scatter_add(self, target, index, values):
        """``target[index] += values`` with repeated indices accumulating (index_put_ with accumulate)."""
        xp = self.xp
        if self.is_numpy:
            _np.add.at(target, index, values)
        elif self.device_type == "cuda":
            at = getattr(xp.add, "at", None)  # CuPy 13+ (cupyx.scatter_add is deprecated there)
            if at is None:
                import cupyx  # only reachable with CuPy present
                at = cupyx.scatter_add
            at(target, index, values)
        else:
            # Generic array-API path: go through the host (correct, not fast).
            host = _np.array(self.to_host(target))
            _np.add.at(host, _host_index(self, index), _np.asarray(self.to_host(values)))
            return self.from_host(host)
        return target

    def synchronize(self) -> None:
        if self.device_type == "cuda":
            self.xp.cuda.get_current_stream().synchronize()

    def __repr__(self) -> str:
        return f"Backend({self.name!r})"


def _host_index(backend: Backend, index):
    if isinstance(index, tuple):
        return tuple(_host_index(backend, i) for i in index)
    if hasattr(index, "shape") and not isinstance(index, _np.ndarray):
        return _np.asarray(backend.to_host(index))
    return index


def _dtype_name(dt) -> str:
    # NumPy computes ``dtype.name`` in Python at every read (about 5 us): read it once per dtype.
    key = (dt.__class__, dt)  # the class first: another library's dtypes never meet NumPy's in ==
    name = _DTYPE_NAMES.get(key)
    if name is None:
        # numpy/cupy dtypes have .name; array-API namespaces may only print as "array_api_strict.float32"
        name = getattr(dt, "name", None) or str(dt).rpartition(".")[2]
        name = _DTYPE_NAMES[key] = "bool" if name == "bool_" else name
    return name


_DTYPE_NAMES: dict = {}


# Reductions on NumPy arrays through the ufunc's own reduce: np.sum and np.mean are Python wrappers
# around it that cost about 1 and 2.5 us a call, and every reduction runs one in its forward and
# often one in its backward (sum_to of a broadcast gradient). Same dtypes, same values; any other
# array (CuPy, array-api-strict) takes its namespace's function.
_ADD_REDUCE = _np.add.reduce
_MAX_REDUCE = _np.maximum.reduce
_MIN_REDUCE = _np.minimum.reduce
_NDARRAY = _np.ndarray


def array_sum(xp, x, axis=None, keepdims=False):
    """``xp.sum(x, axis=axis, keepdims=keepdims)``."""
    if x.__class__ is _NDARRAY:
        return _ADD_REDUCE(x, axis=axis, keepdims=keepdims)
    return xp.sum(x, axis=axis, keepdims=keepdims)


def array_max(xp, x, axis=None, keepdims=False):
    """``xp.max(x, axis=axis, keepdims=keepdims)``: a NumPy array's through the NumPy namespace's
    (maximum.reduce without np.max's wrapper; many narrow rows across them, ``along_rows``)."""
    if x.__class__ is _NDARRAY:
        return _NUMPY_MAX(x, axis, keepdims)
    return xp.max(x, axis=axis, keepdims=keepdims)


_NUMPY_MAX = NUMPY_NAMESPACE.max


def all_finite(x) -> bool:
    """Is every element of a NumPy float array finite? Two reductions and no temporary (nan fails
    both comparisons); False for an empty array and for other arrays: the caller's general path."""
    if x.__class__ is _NDARRAY and x.size:
        return -_INF < float(_MIN_REDUCE(x, axis=None)) and float(_MAX_REDUCE(x, axis=None)) < _INF
    return False


_INF = float("inf")


def array_mean(xp, x, axis=None, keepdims=False):
    """``xp.mean(x, axis=axis, keepdims=keepdims)``; float32/float64 NumPy arrays as np.mean
    computes them (the sum, then a true division by the count in the array's dtype)."""
    if x.__class__ is _NDARRAY:
        out = mean_of(x, axis, keepdims)
        if out is not None:
            return out
    return xp.mean(x, axis=axis, keepdims=keepdims)


NUMPY = Backend("cpu", NUMPY_NAMESPACE)
_cache: dict[str, Backend] = {"cpu": NUMPY}
# True once a second backend exists: a graph may then span devices (x.cuda() records
# ToCopyBackward0), so the engine picks the array math per node instead of once per walk.
SEVERAL = [False]


def backend_of_array(array) -> Backend:
    """The backend a bare array belongs to (gradients travel through backward as bare arrays)."""
    if array.__class__ is _np.ndarray or isinstance(array, (_np.ndarray, _NP_SCALAR)):
        return NUMPY
    device = getattr(array, "device", None)
    if type(array).__module__.startswith("cupy"):
        return get_backend(f"cuda:{device.id}")
    namespace = array.__array_namespace__()
    for backend in list(_cache.values()):
        if backend.xp is namespace:
            return backend
    raise TypeError(f"no gradcli backend for arrays of type {type(array).__name__}")


def get_backend(device: str | None) -> Backend:
    """The backend for a device string: "cpu", "cuda", "cuda:N" (or "array_api_strict" for tests)."""
    if device is None:
        return NUMPY
    device = str(device)
    backend = _cache.get(device)
    if backend is not None:
        return backend
    if device == "cuda":
        backend = get_backend("cuda:0")
    elif device.startswith("cuda:"):
        backend = _cuda_backend(device)
    elif device == "array_api_strict":
        import array_api_strict
        backend = Backend("array_api_strict", array_api_strict)
    else:
        raise DeviceError(f"Expected one of cpu, cuda device type at start of device string: {device}",
                          hint="use --device cpu, cuda or cuda:N")
    _cache[device] = backend
    SEVERAL[0] = True
    return backend


def _cuda_backend(device: str) -> Backend:
    """CuPy on GPU ``N``; each way of not having one is its own message, saying how to fix it
    (the message alone must do: ``--json`` shows no hint)."""
    index_text = device[len("cuda:"):]
    if not index_text.isdigit():
        raise DeviceError(f"Invalid device string: '{device}'", hint="use cuda or cuda:N with N a GPU index")
    index = int(index_text)
    try:
        import cupy
    except ModuleNotFoundError as exc:
        if exc.name not in (None, "cupy"):  # CuPy is there, but something it imports is not
            raise _broken_cupy(device, exc) from None
        raise DeviceError(
            f"CuPy is not installed, and device '{device}' needs it: pip install 'gradcli[gpu]' "
            f"(CuPy for CUDA 12), or use --device cpu",
            hint="pip install 'gradcli[gpu]' installs cupy-cuda12x; for another CUDA version install "
                 "the matching cupy-cudaXXx package",
        ) from None
    except Exception as exc:  # a broken CUDA install raising at import (missing libcudart...)
        raise _broken_cupy(device, exc) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError: no driver, driver too old, no device
        text = f"{type(exc).__name__}: {exc}"
        if "NoDevice" in text or "no CUDA-capable device" in text:
            what = "no CUDA GPU was found"
            fix = "run on a machine with an NVIDIA GPU, or use --device cpu"
        elif "Driver" in text or "driver" in text:
            what = "the NVIDIA driver is missing or too old for this CuPy"
            fix = "install or update the NVIDIA driver (nvidia-smi should list the GPU), or use --device cpu"
        else:
            what = "CUDA could not be initialised"
            fix = "check that nvidia-smi lists the GPU, or use --device cpu"
        raise DeviceError(f"device '{device}' is not available: {what} ({text}): {fix}", hint=fix) from None
    if count == 0:
        fix = "run on a machine with an NVIDIA GPU, or use --device cpu"
        raise DeviceError(f"device '{device}' is not available: no CUDA GPU was found: {fix}", hint=fix)
    if index >= count:
        names = ", ".join(f"cuda:{i}" for i in range(count))
        fix = f"use {names}, or --device cpu"
        raise DeviceError(
            f"device '{device}' does not exist: this machine has {count} CUDA device{'s' if count > 1 else ''} "
            f"({names}): {fix}", hint=fix)
    cupy.cuda.Device(index).use()
    return Backend(f"cuda:{index}", _CupyNamespace(cupy), "cuda", index)


class _CupyNamespace:
    """CuPy as an array-API namespace (array-api-compat's idea, only the names gradcli uses).

    CuPy mirrors NumPy's main namespace; releases before NumPy 2's array-API names lack some
    (``astype``, ``permute_dims``, ``concat``) or their keywords (``asarray(copy=)``,
    ``var(correction=)``). Those are supplied here; everything else is CuPy's own function,
    and arrays stay ``cupy.ndarray``.
    """

    def __init__(self, cupy):
        self.__dict__["_cupy"] = cupy
        for name, fallback in (("astype", _astype), ("permute_dims", None), ("concat", None)):
            if getattr(cupy, name, None) is None:
                self.__dict__[name] = fallback or (cupy.transpose if name == "permute_dims" else cupy.concatenate)

    def __getattr__(self, name):
        value = getattr(self._cupy, name)
        self.__dict__[name] = value  # looked up once
        return value

    def asarray(self, obj, dtype=None, copy=None):
        if copy:
            return self._cupy.array(obj, dtype=dtype, copy=True)
        return self._cupy.asarray(obj, dtype=dtype)

    def reshape(self, x, shape, copy=None):
        if copy is False:  # a view or nothing (NumPy 2's reshape(copy=False)): CuPy's shape setter says
            view = x.view()
            try:
                view.shape = shape
            except AttributeError as exc:
                raise ValueError(str(exc)) from None
            return view
        out = self._cupy.reshape(x, shape)
        return out.copy() if copy else out

    # CuPy's sorts are stable always (thrust's stable sort; NaN last, as NumPy) and take no stable=
    def sort(self, x, axis=-1, stable=True):
        return self._cupy.sort(x, axis=axis)

    def argsort(self, x, axis=-1, stable=True):
        return self._cupy.argsort(x, axis=axis)

    def var(self, x, axis=None, correction=0, keepdims=False):
        return self._cupy.var(x, axis=axis, ddof=correction, keepdims=keepdims)

    def std(self, x, axis=None, correction=0, keepdims=False):
        return self._cupy.std(x, axis=axis, ddof=correction, keepdims=keepdims)

    def __repr__(self):
        return f"<array namespace for {self._cupy.__name__}>"


def _astype(x, dtype, copy=True):
    return x.astype(dtype, copy=copy)


def _broken_cupy(device: str, exc: BaseException) -> DeviceError:
    fix = ("reinstall the CuPy build that matches your CUDA version (pip install 'gradcli[gpu]' is for "
           "CUDA 12), or use --device cpu")
    return DeviceError(f"CuPy is installed but failed to import, so device '{device}' cannot be used "
                       f"({type(exc).__name__}: {exc}): {fix}", hint=fix)
