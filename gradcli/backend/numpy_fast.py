"""NumPy as the CPU backend's array namespace, without NumPy's Python-level wrappers on hot calls.

``np.reshape``, ``np.stack``, ``np.sum``, ``np.zeros_like``... are Python functions around an
ndarray method or a ufunc's ``reduce``; on the 2x2 tensors of a typical program the wrapper costs
more than the work (``np.stack`` of two arrays 7 us, the concatenation inside it 0.8 us;
``np.zeros_like`` 3 us, ``np.zeros`` 0.8 us). Every forward and every formula reaches NumPy
through ``backend.xp``, so this namespace speeds all of them at once: for a plain ``ndarray`` each
function below does exactly what NumPy's own does (the same values, dtypes, shapes, strides and
view-or-copy), and anything else (a NumPy scalar, a list, an argument the shortcut does not
cover) goes to NumPy's function itself. Every other name is NumPy's own.
"""

from __future__ import annotations

import numpy as _np

_ndarray = _np.ndarray
_ADD = _np.add.reduce
_MUL = _np.multiply.reduce
_MAX = _np.maximum.reduce
_MIN = _np.minimum.reduce
_concatenate = _np.concatenate
_zeros = _np.zeros
_intp = _np.intp
_true_divide = _np.true_divide
_subtract = _np.subtract
_square = _np.square
_sqrt = _np.sqrt
_maximum = _np.maximum
_F32 = _np.dtype(_np.float32)
_F64 = _np.dtype(_np.float64)
_SCALAR_TYPES = frozenset((_np.float16, _np.float32, _np.float64, _np.int32, _np.int64, _np.bool_))


class NumPyNamespace:
    """``numpy`` with the hot wrappers replaced by their exact fast forms (see the module)."""

    __name__ = "numpy"

    def __getattr__(self, name):
        value = getattr(_np, name)
        self.__dict__[name] = value  # looked up once: then as fast as a module attribute
        return value

    def __repr__(self) -> str:
        return "<array namespace for numpy>"

    @staticmethod
    def reshape(x, shape, order="C", *, copy=None):
        """``copy=False`` (a view or an error): always a view for a C-contiguous array in C order."""
        if x.__class__ is _ndarray and (copy is None or copy is False and order == "C" and x.flags.c_contiguous):
            return x.reshape(shape, order=order)
        if x.__class__ in _SCALAR_TYPES and copy is None:  # a full reduction's result: np.reshape calls this
            return x.reshape(shape, order=order)
        return _np.reshape(x, shape, order=order, copy=copy)

    @staticmethod
    def astype(x, dtype, /, *, copy=True, device=None):
        if x.__class__ is _ndarray and device is None:
            return x.astype(dtype, copy=copy)
        return _np.astype(x, dtype, copy=copy, device=device)

    @staticmethod
    def permute_dims(x, axes):
        if x.__class__ is _ndarray:
            return x.transpose(axes)
        return _np.permute_dims(x, axes)

    @staticmethod
    def squeeze(x, axis=None):
        if x.__class__ is _ndarray:
            return x.squeeze() if axis is None else x.squeeze(axis=axis)
        return _np.squeeze(x, axis=axis)

    @staticmethod
    def expand_dims(x, axis):
        """np.expand_dims is ``a.reshape(shape)`` with a 1 at ``axis``: the same for one int axis."""
        if x.__class__ is _ndarray and axis.__class__ is int:
            shape = list(x.shape)
            n = len(shape) + 1
            if -n <= axis < n:
                shape.insert(axis % n, 1)
                return x.reshape(shape)
        return _np.expand_dims(x, axis)

    @staticmethod
    def stack(arrays, axis=0):
        """np.stack: every array given one more dim at ``axis``, concatenated along it."""
        if arrays.__class__ in (list, tuple) and arrays and axis.__class__ is int:
            first = arrays[0]
            if first.__class__ is _ndarray:
                shape = first.shape
                n = len(shape) + 1
                if -n <= axis < n and all(a.__class__ is _ndarray and a.shape == shape for a in arrays):
                    ax = axis % n
                    new = shape[:ax] + (1,) + shape[ax:]
                    return _concatenate([a.reshape(new) for a in arrays], axis=ax)
        return _np.stack(arrays, axis=axis)

    @staticmethod
    def broadcast_to(x, shape, subok=False):
        """np.broadcast_to builds its read-only view with an nditer in Python (2 us on a 2x2 array);
        for a C-contiguous, non-empty numeric array and a tuple of ints that broadcasts, the same
        view (shape, strides 0 on the broadcast dims, read-only, sharing x's memory) is one ndarray
        over x's buffer."""
        if x.__class__ is _ndarray and shape.__class__ is tuple and x.size and x.dtype.kind in "biufc" \
                and x.flags.c_contiguous:
            key = (x.shape, x.strides, shape)
            strides = _STRIDES.get(key)
            if strides is None:
                strides = _broadcast_strides(x.shape, x.strides, shape)
                if strides is not None:  # kept per (shape, strides, target): programs repeat a few
                    if len(_STRIDES) >= 4096:
                        _STRIDES.clear()
                    _STRIDES[key] = strides
            if strides is not None:
                out = _ndarray(shape, x.dtype, x, 0, strides)
                out.flags.writeable = False
                return out
        return _np.broadcast_to(x, shape, subok=subok)

    @staticmethod
    def tril(m, k=0):
        """np.tril: ``where(tri mask, m, 0)``, the mask kept per (rows, columns, k)."""
        if m.__class__ is _ndarray and m.ndim >= 2 and k.__class__ is int:
            return _where(_triangle(m.shape[-2], m.shape[-1], k), m, _zeros(1, m.dtype))
        return _np.tril(m, k=k)

    @staticmethod
    def triu(m, k=0):
        """np.triu: ``where(tri mask for k - 1, 0, m)``, the mask kept as tril's."""
        if m.__class__ is _ndarray and m.ndim >= 2 and k.__class__ is int:
            return _where(_triangle(m.shape[-2], m.shape[-1], k - 1), _zeros(1, m.dtype), m)
        return _np.triu(m, k=k)

    @staticmethod
    def roll(a, shift, axis=None):
        """np.roll along given axes of a C-contiguous array (the layout its ``empty_like`` result
        has then): each axis's two slices concatenated in their new order. A small one of one dim or more (up to
        ``_ROLL_TAKE`` elements) and shifts and axes of plain ints: one ``take`` of the flat
        positions np.roll itself gives ``arange(size)`` of that shape, kept per (shape, shift, axis)."""
        if a.__class__ is _ndarray and a.ndim and a.flags.c_contiguous and 0 < a.size <= _ROLL_TAKE:
            positions = roll_positions(a.shape, shift, axis)
            if positions is not None:
                return a.take(positions)
        if a.__class__ is _ndarray and axis is None and a.flags.c_contiguous and a.size and shift.__class__ is int:
            return NumPyNamespace.roll(a.reshape(-1), shift, 0).reshape(a.shape)  # np.roll's own way, by the view
        if a.__class__ is _ndarray and axis is not None and a.flags.c_contiguous and a.size:
            shifts = shift if shift.__class__ is tuple else (shift,)
            axes = axis if axis.__class__ is tuple else (axis,)
            if len(shifts) == len(axes) and all(s.__class__ is int for s in shifts) and all(
                    d.__class__ is int and -a.ndim <= d < a.ndim for d in axes):
                moves = {}
                for s, d in zip(shifts, axes):  # np.roll adds the shifts of a repeated axis
                    moves[d % a.ndim] = moves.get(d % a.ndim, 0) + s
                out = a
                for d, s in moves.items():
                    n = a.shape[d]
                    s %= n
                    if s:
                        lead = (slice(None),) * d
                        out = _concatenate((out[lead + (slice(n - s, None),)], out[lead + (slice(0, n - s),)]), axis=d)
                return a.copy() if out is a else out
        return _np.roll(a, shift, axis=axis)

    @staticmethod
    def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        """np.cumulative_sum is ``add.accumulate`` along an axis (given for two or more dims)."""
        return _cumulative(_np.add, _np.cumulative_sum, x, axis, dtype, out, include_initial)

    @staticmethod
    def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        """np.cumulative_prod, as cumulative_sum: ``multiply.accumulate``."""
        return _cumulative(_np.multiply, _np.cumulative_prod, x, axis, dtype, out, include_initial)

    @staticmethod
    def take(a, indices, axis=None, out=None, mode="raise"):
        """np.take: the ndarray's own method, which np.take calls through its dispatch wrapper."""
        if a.__class__ is _ndarray:
            return a.take(indices, axis=axis, out=out, mode=mode)
        return _np.take(a, indices, axis=axis, out=out, mode=mode)

    @staticmethod
    def take_along_axis(arr, indices, axis=-1):
        """np.take_along_axis: ``arr[key]``, the key's aranges along the other axes kept per shape."""
        if arr.__class__ is _ndarray and indices.__class__ is _ndarray and axis.__class__ is int \
                and indices.dtype.kind in "iu" and indices.ndim == arr.ndim and -arr.ndim <= axis < arr.ndim:
            return arr[along_axis_key(arr.shape, axis % arr.ndim, indices)]
        return _np.take_along_axis(arr, indices, axis=axis)

    @staticmethod
    def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
        if a.__class__ is _ndarray and order is None:
            return a.argsort(axis=axis, kind=kind, stable=stable)
        return _np.argsort(a, axis=axis, kind=kind, order=order, stable=stable)

    @staticmethod
    def sort(a, axis=-1, kind=None, order=None, *, stable=None):
        """np.sort: a copy in the same layout (order "K"), sorted in place."""
        if a.__class__ is _ndarray and order is None and axis is not None:
            out = a.copy(order="K")
            out.sort(axis=axis, kind=kind, stable=stable)
            return out
        return _np.sort(a, axis=axis, kind=kind, order=order, stable=stable)

    @staticmethod
    def flip(m, axis=None):
        """np.flip: ``m`` indexed by ``::-1`` on the axes (one int or a tuple), a view."""
        if m.__class__ is _ndarray and axis.__class__ is int and -m.ndim <= axis < m.ndim:
            return m[reversed_key(m.ndim, axis % m.ndim)]
        if m.__class__ is _ndarray and axis is not None:
            axes = axis if axis.__class__ is tuple else (axis,)
            n = m.ndim
            if all(a.__class__ is int and -n <= a < n for a in axes) and len({a % n for a in axes}) == len(axes):
                key = [_ALL] * n
                for a in axes:
                    key[a % n] = _REVERSED
                return m[tuple(key)]
        return _np.flip(m, axis=axis)

    @staticmethod
    def zeros_like(x, dtype=None):
        """For a C-contiguous array (the layout np.zeros_like keeps), np.zeros of its shape."""
        if x.__class__ is _ndarray and x.flags.c_contiguous:
            return _zeros(x.shape, x.dtype if dtype is None else dtype)
        return _np.zeros_like(x, dtype=dtype)

    @staticmethod
    def sum(x, axis=None, dtype=None, keepdims=False):
        if x.__class__ is _ndarray:
            return _ADD(x, axis=axis, dtype=dtype, keepdims=keepdims)
        return _np.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)

    @staticmethod
    def prod(x, axis=None, dtype=None, keepdims=False):
        if x.__class__ is _ndarray:
            return _MUL(x, axis=axis, dtype=dtype, keepdims=keepdims)
        return _np.prod(x, axis=axis, dtype=dtype, keepdims=keepdims)

    @staticmethod
    def max(x, axis=None, keepdims=False):
        if x.__class__ is _ndarray:
            if axis is None or x.size < MAX_ACROSS_FROM:
                return _MAX(x, axis=axis, keepdims=keepdims)
            return along_rows(_np.maximum, x, axis, keepdims)  # (many narrow rows: across them)
        return _np.max(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def min(x, axis=None, keepdims=False):
        if x.__class__ is _ndarray:
            if axis is None or x.size < MAX_ACROSS_FROM:
                return _MIN(x, axis=axis, keepdims=keepdims)
            return along_rows(_np.minimum, x, axis, keepdims)
        return _np.min(x, axis=axis, keepdims=keepdims)


    @staticmethod
    def mean(x, axis=None, dtype=None, keepdims=False):
        """float32/float64: np.mean's own arithmetic (the sum, then a true division by the count)."""
        if x.__class__ is _ndarray and dtype is None:
            out = mean_of(x, axis, keepdims)
            if out is not None:
                return out
        return _np.mean(x, axis=axis, dtype=dtype, keepdims=keepdims)

    @staticmethod
    def var(x, axis=None, *, correction=0, keepdims=False):
        """float32/float64: np.var's own calls (two sums, a subtraction, a square, two divisions)."""
        if x.__class__ is _ndarray:
            out = var_of(x, axis, correction, keepdims)
            if out is not None:
                return out
        return _np.var(x, axis=axis, correction=correction, keepdims=keepdims)

    @staticmethod
    def std(x, axis=None, *, correction=0, keepdims=False):
        """np.std: np.var's result, its square root taken in place (as NumPy's own _std does)."""
        out = NumPyNamespace.var(x, axis, correction=correction, keepdims=keepdims)
        if out.__class__ is _ndarray:
            return _sqrt(out, out=out)
        return out.dtype.type(_sqrt(out)) if hasattr(out, "dtype") else _sqrt(out)

    @staticmethod
    def argmax(x, axis=None, out=None, *, keepdims=False):
        if x.__class__ is _ndarray and out is None:
            return x.argmax(axis=axis, keepdims=keepdims)
        return _np.argmax(x, axis=axis, out=out, keepdims=keepdims)

    @staticmethod
    def argmin(x, axis=None, out=None, *, keepdims=False):
        if x.__class__ is _ndarray and out is None:
            return x.argmin(axis=axis, keepdims=keepdims)
        return _np.argmin(x, axis=axis, out=out, keepdims=keepdims)

    @staticmethod
    def diagonal(x, offset=0, axis1=0, axis2=1):
        if x.__class__ is _ndarray:
            return x.diagonal(offset, axis1, axis2)
        return _np.diagonal(x, offset, axis1, axis2)

    @staticmethod
    def nonzero(x):
        if x.__class__ is _ndarray:
            return x.nonzero()
        return _np.nonzero(x)


def _cumulative(ufunc, numpy_fn, x, axis, dtype, out, include_initial):
    """``ufunc.accumulate`` along the axis, what NumPy's cumulative functions run for a plain call."""
    if x.__class__ is _ndarray and x.ndim and out is None and not include_initial and (axis is not None or x.ndim == 1):
        return ufunc.accumulate(x, axis=0 if axis is None else axis, dtype=dtype)
    return numpy_fn(x, axis=axis, dtype=dtype, out=out, include_initial=include_initial)


def along_rows(ufunc, x, axis, keepdims=False):
    """``ufunc.reduce(x, axis, None, None, keepdims)`` (``ufunc``: np.add, np.maximum or np.minimum),
    and the same result bit for bit, where it costs less: ``axis`` the last dim (an int or a
    1-tuple) of a C-contiguous array of many narrow rows. NumPy reduces such rows one at a time, a
    call of its inner loop per row (maximum over 1024 rows of 10: 60 us); reduced instead across a
    transposed copy, each row's values are combined in order by whole-array passes (6 us). A
    maximum or minimum is the same in any order, signed zeros and NaN included; a float32/64 sum
    of fewer than 8 values is added in order by NumPy's pairwise sum too (from 8 it is not)."""
    if x.__class__ is _ndarray and x.ndim >= 2:
        shape = x.shape
        w = shape[-1]
        widest, rows = _NARROW[ufunc]
        if 0 < w <= widest and x.size >= rows * w:
            last = len(shape) - 1
            if (axis == (last,) or axis == last or axis == -1 or axis == (-1,)) and x.flags.c_contiguous \
                    and (ufunc is not _np.add or x.dtype is _F32 or x.dtype is _F64):
                out = ufunc.reduce(x.reshape(-1, w).T.copy(), 0)
                return out.reshape(shape[:-1] + (1,) if keepdims else shape[:-1])
    return ufunc.reduce(x, axis, None, None, keepdims)


# along_rows, per reduction: the widest rows it takes, and the fewest rows where the copy pays
_NARROW = {_np.add: (7, 128), _np.maximum: (32, 48), _np.minimum: (32, 48)}
# Below these sizes along_rows never copies (a row has at least one element): hot callers test the
# size and call the reduction itself, without along_rows' call and checks.
SUM_ACROSS_FROM = _NARROW[_np.add][1]
MAX_ACROSS_FROM = _NARROW[_np.maximum][1]


def accumulate(ufunc, x, axis):
    """``ufunc.accumulate`` along ``axis`` of a NumPy array as torch's CPU kernel runs it (what
    formulas.cumulative computes through this namespace's cumulative_sum/prod): float32 and float16
    in float64 and float32 (its acc_type), each value rounded back to the input's dtype."""
    wider = _WIDER.get(x.dtype)
    return ufunc.accumulate(x, axis=axis) if wider is None else ufunc.accumulate(x, axis=axis, dtype=wider).astype(x.dtype)


_WIDER = {_np.dtype("float32"): _np.dtype("float64"), _np.dtype("float16"): _np.dtype("float32")}


def along_axis_key(shape, axis, indices, keepdim=True):
    """The advanced key that picks, at each position, ``indices`` along ``axis`` and the position's
    own index along every other axis of ``shape`` (np.take_along_axis's, gather's): the aranges of
    the other axes are kept per (shape, axis), read-only. ``keepdim=False``: ``indices`` have no
    ``axis`` (one per position of ``shape`` without it, at least one dim), and so has the result."""
    key = _ALONG.get((shape, axis, keepdim))
    if key is None:
        if len(_ALONG) >= 1024:
            _ALONG.clear()
        rest = shape if keepdim else shape[:axis] + (1,) + shape[axis + 1:]
        ones = (1,) * len(rest)
        parts = []
        for d, n in enumerate(rest):
            if d == axis:
                parts.append(None)
            else:
                part = _np.arange(n).reshape(ones[:d] + (-1,) + ones[d + 1:])
                if not keepdim:
                    part = part.reshape(part.shape[:axis] + part.shape[axis + 1:])
                part.flags.writeable = False
                parts.append(part)
        key = _ALONG[(shape, axis, keepdim)] = parts
    out = list(key)
    out[axis] = indices
    return tuple(out)


_ALONG: dict = {}


def along_axis_flat(shape, axis, indices, keepdim=True):
    """The flat (C-order) positions in an array of ``shape`` of the elements along_axis_key's key
    picks, for ``indices`` known to lie in ``0..shape[axis]-1`` (``x.take(positions)`` is
    ``x[key]``, ``out.put(positions, v)`` is ``out[key] = v`` on a C-contiguous ``out``; one array
    op here and one there, against the key's several): ``indices`` times the axis's stride plus
    each position's offset along the other axes, kept per (shape, axis, indices' shape, keepdim)."""
    key = (shape, axis, indices.shape, keepdim)
    found = _FLAT.get(key)
    if found is None:
        found = _flat_offsets(shape, axis, indices.shape, keepdim)
        if len(_FLAT) >= 1024:
            _FLAT.clear()
        _FLAT[key] = found
    base, step = found
    return _add(base, indices if step is None else _multiply(indices, step))


def _flat_offsets(shape, axis, ishape, keepdim):
    """along_axis_flat's offsets of the other axes (an intp array of ``ishape``, read-only) and the
    axis's stride in elements (None for 1; else a read-only 0-d intp array)."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    others = [d for d in range(len(shape)) if d != axis]
    base = _zeros(ishape, _intp)
    for j, n in enumerate(ishape):
        d = j if keepdim else others[j]
        if d != axis and n > 1:
            part = _np.arange(n, dtype=_intp) * strides[d]
            base += part.reshape((1,) * j + (n,) + (1,) * (len(ishape) - j - 1))
    base.flags.writeable = False
    step = None
    if strides[axis] != 1:
        step = _np.array(strides[axis], _intp)
        step.flags.writeable = False
    return base, step


_FLAT: dict = {}


def intp_scalar(n):
    """``n`` as a read-only 0-d intp array, kept per int: a ufunc takes it for ~0.2 us less than a
    Python int (which it converts on every call); the same values and result dtype against intp arrays."""
    found = _INTP_SCALARS.get(n)
    if found is None:
        if len(_INTP_SCALARS) >= 1024:
            _INTP_SCALARS.clear()
        found = _INTP_SCALARS[n] = _np.array(n, _intp)
        found.flags.writeable = False
    return found


_INTP_SCALARS: dict = {}
_add = _np.add
_multiply = _np.multiply
_ALL = slice(None)
_REVERSED = slice(None, None, -1)


def reversed_key(ndim, axis):
    """The basic key that reverses ``axis`` (in 0..ndim-1) of an array of ``ndim`` dims (np.flip's
    view), kept per (ndim, axis)."""
    key = _REVERSED_KEYS.get((ndim, axis))
    if key is None:
        if len(_REVERSED_KEYS) >= 1024:
            _REVERSED_KEYS.clear()
        parts = [_ALL] * ndim
        parts[axis] = _REVERSED
        key = _REVERSED_KEYS[(ndim, axis)] = tuple(parts)
    return key


_REVERSED_KEYS: dict = {}


def _plain_ints(value) -> bool:
    """An int, or a tuple of ints (no bools, no NumPy integers): a key that means one thing to np.roll."""
    if value.__class__ is int:
        return True
    if value.__class__ is not tuple:
        return False
    for v in value:
        if v.__class__ is not int:
            return False
    return True


def roll_positions(shape, shift, axis):
    """The flat positions that ``np.roll(x, shift, axis)`` reads, for a C-contiguous ``x`` of
    ``shape`` (``x.take(positions)`` is the rolled copy: np.roll's own result on ``arange``, so its
    rules hold, repeated axes adding up, shifts modulo the size), read-only, kept per (shape,
    shift, axis); None where np.roll itself must answer (an argument other than ints or tuples of
    ints, or one it rejects: its own call then raises its error)."""
    if not (_plain_ints(shift) and (axis is None or _plain_ints(axis))):
        return None  # (checked first: 1.0 and True are keys equal to 1)
    key = (shape, shift, axis)
    found = _ROLLS.get(key)
    if found is None:
        try:
            found = _np.roll(_np.arange(_prod(shape), dtype=_intp).reshape(shape), shift, axis=axis)
        except Exception:  # np.roll's error (an axis out of range, shifts and axes that do not pair)
            return None
        found.flags.writeable = False
        if len(_ROLLS) >= 256:
            _ROLLS.clear()
        _ROLLS[key] = found
    return found


_ROLLS: dict = {}
_ROLL_TAKE = 4096  # elements: a cached position array costs 8 bytes per element
_prod = __import__("math").prod


def _triangle(rows, columns, k):
    """np.tri(rows, columns, k, dtype=bool), read-only, kept per shape and k (a program repeats a few)."""
    key = (rows, columns, k)
    mask = _TRIANGLES.get(key)
    if mask is None:
        if len(_TRIANGLES) >= 1024:
            _TRIANGLES.clear()
        mask = _TRIANGLES[key] = _np.tri(rows, columns, k, dtype=bool)
        mask.flags.writeable = False
    return mask


_TRIANGLES: dict = {}
_where = _np.where


def mean_of(x, axis, keepdims):
    """np.mean of a float32/float64 ndarray as np.mean computes it, or None for anything else
    (float16 sums in float32 there; an empty mean warns): the sum, then a true division by the
    number of elements reduced. (NumPy divides by an intp, so a float32 sum is divided in float64
    and rounded back; for fewer than 2**29 elements that is the correctly rounded float32 quotient
    this division gives.)"""
    if x.dtype.kind != "f" or x.dtype.itemsize < 4:
        return None
    count = _reduced_count(x, axis)
    if not count:
        return None
    out = _ADD(x, axis=axis, keepdims=keepdims)
    if out.__class__ is _ndarray:  # divided in place, as np.mean does (its strides too)
        out /= count
        return out
    return out / count  # np.mean: float32(float64 sum / count), the same value below 2**29 elements


def var_of(x, axis, correction, keepdims):
    """np.var of a float32/float64 ndarray with NumPy's own ufunc calls in NumPy's order
    (numpy/_core/_methods.py ``_var``), or None where np.var itself must answer: other dtypes, an axis
    NumPy rejects, a correction that is not an int or float, no degrees of freedom left (it warns)."""
    if x.dtype.kind != "f" or x.dtype.itemsize < 4 or correction.__class__ not in (int, float):
        return None
    count = _reduced_count(x, axis)
    if count is None or correction >= count:
        return None
    rcount = _intp(count)
    mean = _ADD(x, axis, None, keepdims=True)
    if mean.__class__ is not _ndarray:
        return None
    mean = _true_divide(mean, rcount, out=mean, casting="unsafe", subok=False)
    d = _subtract(x, mean)
    d = _square(d, out=d)
    ret = _ADD(d, axis, None, None, keepdims)
    dof = _maximum(rcount - correction, 0)
    if ret.__class__ is _ndarray:
        return _true_divide(ret, dof, out=ret, casting="unsafe", subok=False)
    return ret.dtype.type(ret / dof)


_STRIDES: dict = {}  # broadcast_to's (shape, strides, target shape) -> the view's strides


def _broadcast_strides(have, strides, shape):
    """The strides of ``have`` (with ``strides``) broadcast to ``shape``, or None where NumPy's
    own broadcast_to must answer (it does not broadcast, a size is not a non-negative int, empty)."""
    lead = len(shape) - len(have)
    if lead < 0:
        return None
    out = [0] * lead
    for s in shape[:lead]:
        if s.__class__ is not int or s <= 0:
            return None
    for h, st, s in zip(have, strides, shape[lead:]):
        if s.__class__ is not int or s <= 0:
            return None
        if h == s and s != 1:
            out.append(st)
        elif h == 1:  # as NumPy's nditer: every dim of size 1 in x gets stride 0
            out.append(0)
        else:
            return None
    return tuple(out)


def _reduced_count(x, axis):
    """How many elements a reduction of ``x`` over ``axis`` takes, or None for an axis that NumPy
    rejects or that is not None, an int or a tuple (NumPy's own function then answers)."""
    shape = x.shape
    n = len(shape)
    if axis is None:
        count = x.size
    elif axis.__class__ is int:
        if not -n <= axis < n:
            return None
        count = shape[axis]
    else:
        if axis.__class__ is not tuple or len({a % n if a.__class__ is int and -n <= a < n else None
                                               for a in axis}) != len(axis) or None in {
                a if a.__class__ is int and -n <= a < n else None for a in axis}:
            return None  # NumPy's own errors for a bad axis
        count = 1
        for a in axis:
            count *= shape[a]
    return count


# float32 transcendentals rounded once from float64. NumPy's own float32 kernels (SIMD polynomials)
# give a different last bit from torch's on 12-50% of the values (exp 41%, log10 50%, tanh 33%, log
# 19%); computed in float64 and rounded once, 95-100% agree (torch's are near correctly rounded), so
# printed values (``y.item()`` shows every digit) are torch's. The double is costly on large arrays
# (exp of 10^7 float32: 20 ms -> 300 ms), so from ROUNDED_ONCE_MAX elements on NumPy's own kernels run.
ROUNDED_ONCE_MAX = 1 << 12
_ROUNDED_ONCE = ("exp", "log", "sin", "cos", "tan", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "asin",
                 "acos", "atan", "arctanh", "atanh", "log1p", "expm1", "log2", "log10", "exp2")


def _rounded_once(ufunc):
    def rounded_once(x, *args, **kwargs):
        if x.__class__ is _ndarray and x.dtype is _F32 and x.size <= ROUNDED_ONCE_MAX and not args and not kwargs:
            return ufunc(x.astype(_F64)).astype(_F32)
        return ufunc(x, *args, **kwargs)
    rounded_once.__name__ = rounded_once.__qualname__ = ufunc.__name__
    rounded_once.__doc__ = f"np.{ufunc.__name__}: a small float32 array's computed in float64, rounded once."
    return staticmethod(rounded_once)


for _name in _ROUNDED_ONCE:
    setattr(NumPyNamespace, _name, _rounded_once(getattr(_np, _name)))

NUMPY_NAMESPACE = NumPyNamespace()


def least(a):
    """The smallest element of a non-empty array (NaN if it holds one): ``a[argmin]``, a third of a
    ``minimum.reduce``'s cost on a batch's targets or a small input, and less at any size."""
    flat = a.ravel()
    return flat[flat.argmin()]


def greatest(a):
    """The largest element of a non-empty array (NaN if it holds one), as ``least``."""
    flat = a.ravel()
    return flat[flat.argmax()]


def number_array(value, dtype):
    """A Python number operand of an array operator (``y * 1.0001``, ``w - 0.1 * g``) as a read-only
    0-d array of the array's dtype where that is float32 or float64, kept per value: NEP 50 casts
    the number to the array's dtype before the ufunc runs, so the result has the same bits, and
    the call costs ~0.28 us on a 2x2 array instead of ~0.55 (NumPy's conversion of a Python
    scalar). The number itself where the cast is not plainly the value's: another dtype, a zero
    (its sign: -0.0 == 0.0 as a key), NaN, a float beyond the dtype's range (NumPy warns as it
    casts), an int beyond 2**53 (not exact in a double)."""
    table = _NUMBERS32 if dtype is _F32 else _NUMBERS64 if dtype is _F64 else None
    if table is None:
        return value
    found = table.get(value)
    if found is None:
        if not value or value != value or (abs(value) > _FINITE[dtype] if value.__class__ is float
                                           else not -_EXACT <= value <= _EXACT):
            return value
        if len(table) >= 512:  # a program's constants are few; a loop's varying ones are not kept long
            table.clear()
        found = _np.array(value, dtype)
        found.flags.writeable = False
        table[value] = found
    return found


def half_by_number(ufunc, a, number):
    """``ufunc(a, number)`` for a float16 array and a Python number as torch's CPU kernels compute
    a float16 tensor times or over a number: in float32 (their opmath), the number a float32 (not
    rounded to float16 first, as NumPy's float16 loop does), the result rounded to float16 once.
    (NumPy computes float16 * float16 through float32 too: only the number's rounding differs.)"""
    return ufunc(a, _np.float32(number)).astype(_np.float16)


class HalfOpmath:
    """A Python number that a float16 gradient is multiplied or divided by in a formula
    (MulBackward0's ``grad * other``, DivBackward0's ``grad / other`` where ``other`` was a
    number): NumPy hands the operation to it, and it computes as :func:`half_by_number`."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs or len(inputs) != 2 or inputs[0] is self:
            return NotImplemented
        return half_by_number(ufunc, inputs[0], self.value)


_NUMBERS32: dict = {}
_NUMBERS64: dict = {}
_FINITE = {_F32: float(_np.finfo(_np.float32).max), _F64: float(_np.finfo(_np.float64).max)}
_EXACT = 2 ** 53


# The least x whose exp(-x) is finite, with a margin, by dtype: 1 / (1 + exp(-x)) above it neither
# overflows nor warns (log of float32's largest value is 88.72, float64's 709.78).
EXP_NEG_SAFE = {_F32: -88.0, _F64: -709.0}
_SCALARS32: dict = {}  # values -> (their 0-d arrays, the tuple itself where it holds a zero)
_SCALARS64: dict = {}
_copysign = __import__("math").copysign


def scalars(x, values):
    """``values`` (a tuple of Python numbers) as read-only 0-d arrays of ``x``'s dtype, where ``x``
    is a float32 or float64 ndarray of one dim or more (so that a ufunc's result on it is an array
    of its dtype, which a formula may write into with ``out=``); else None, and the caller's
    generic form runs.

    Under NEP 50 a Python number is cast to the array's dtype before the ufunc runs, so the 0-d
    array gives the same bits, and a call on a 2x2 array costs ~0.31 us, not ~0.57. Kept per dtype
    and tuple (a formula's constants, or an op's attributes such as alpha). -0.0 is equal to 0.0
    as a key: a tuple holding -0.0 gets None, its sign left to the generic form."""
    if x.__class__ is not _ndarray or not x.ndim:
        return None
    dtype = x.dtype
    table = _SCALARS32 if dtype is _F32 else _SCALARS64 if dtype is _F64 else None
    if table is None:
        return None
    found = table.get(values)
    if found is None or found[1] is not None and found[1] is not values:
        if 0 in values:  # a zero in a tuple other than the one stored (a formula's own): -0.0?
            for v in values:
                if v == 0 and _copysign(1.0, v) < 0:
                    return None
        if found is None:
            if len(table) >= 256:  # attributes vary little; a NaN never matches again
                table.clear()
            arrays = []
            for v in values:
                a = _np.array(v, dtype)
                a.flags.writeable = False
                arrays.append(a)
            found = table[values] = (tuple(arrays), values if 0 in values else None)
    return found[0]
