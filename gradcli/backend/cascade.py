"""Sums in torch's order: torch's CPU ``sum`` kernel for float32/float64, bit for bit, where it pays.

torch adds a reduction's values by ``cascade_sum`` (aten/src/ATen/native/cpu/SumKernel.cpp), not
one after another and not pairwise as NumPy does; from 5 values on the orders differ in the last
bits, and down many rows far more, for NumPy adds row after row: the sum down 1,024 rows of
``x / row``'s gradient is -1456.3396 in NumPy's order and -1456.3557 in torch's (-1456.3555
exactly), a difference a tensor's 4 decimals show. The kernel's pieces:

- **the cascade** (``multi_row_sum``): values are added in order into a first accumulator; after
  every ``step`` values (16, or more for over 2**20 values: 2 ** max(4, ceil(log2 n) // 4)) it
  passes its sum into the next level and restarts at zero; the second level passes after every
  ``step`` of those, the third likewise, and the fourth keeps what it gets. Values left after the
  last whole group go to the first level. At the end the levels are added, first to last.
- **row_sum**: a row read as rows of 4 (``ilp_factor``): four interleaved cascades, the values
  past the last whole 4 added to the first one, then the four added in order.
- **a sum down rows** (a leading dim, each column on its own): blocks of 4 columns (of ``4 V``
  where a row has ``V`` or more: ``Vectorized<T>::size()``, 8 float32 or 4 float64 in torch's
  x86-64 kernels) take the cascade; the other columns row_sum.
- **a sum along contiguous rows** (the last dim, or everything): rows of ``V`` or more values
  are read as vectors, row_summed lane by lane; then the values past the last vector are added
  from zero, then the lanes in order. Narrower rows: row_sum. Up to ``2 V - 1`` values a row (15
  float32, 7 float64) that is one addition after another in a new order (``_ORDERS``), which
  costs a reordering copy; wider rows keep NumPy's pairwise sum: emulated they cost 4-8x torch's
  time (NumPy's about 1x), and NumPy's order is as accurate; its last bits are not always torch's.

Every accumulator starts at +0.0 (a sum of -0.0s is +0.0). The arithmetic is vectorised across
rows, columns and groups: whole-array passes, no loop over the values. A sum split over threads
(torch on more than 32,768 elements and several threads) is not followed: these are torch's
single-thread bits.
"""

from __future__ import annotations

import numpy as _np

from .numpy_fast import along_rows

_ADD = _np.add.reduce
_ACCUMULATE = _np.add.accumulate
_F32 = _np.dtype(_np.float32)
_F64 = _np.dtype(_np.float64)
_LANES = {_F32: 8, _F64: 4}
# The fewest rows summed down in torch's order. Below, NumPy's order: its cost is a few
# microseconds less than the cascade's (at 64 rows of 2, 1.6 us against 7), and its error, about
# the rows times the dtype's epsilon at worst, stays below what tensors print. From 256 rows the
# cascade is about NumPy's time for narrow columns (1,024 rows of 2: 14 us each; 100,000 rows of 3:
# 340 us against NumPy's 1,300), at most 1.7x it for wide ones.
SUM_DOWN_FROM = 256


def _seq(b):
    """(q, t, c) -> (q, c): each column's t values (t >= 1) added in order. A reduction along a
    middle axis adds in order when the last axis has 2 or more elements (the reduced axis is then
    not the innermost loop, which NumPy would sum pairwise); narrow columns across a transposed
    copy, in t - 1 whole-array passes."""
    q, t, c = b.shape
    if t == 1:
        return b[:, 0]
    if c == 1:
        return _ACCUMULATE(b[:, :, 0], 1)[:, -1:]
    if c < 16 and q > 1:
        return _ADD(b.transpose(1, 0, 2).copy(), 0)
    return _ADD(b, 1)


def _plain(a):
    """(q, n, c) -> (q, c): the cascade down each column's n values (multi_row_sum)."""
    q, n, c = a.shape
    if n <= 16:
        return _seq(a)
    power = max(4, (n - 1).bit_length() // 4)
    step = 1 << power
    total = None
    level = a
    for _ in range(3):  # levels 0 to 2 pass their sums up; the fourth keeps all
        t = level.shape[1]
        full = t // step
        end = full * step
        if end < t:  # this level's last value: what came after its last pass, from zero
            part = _seq(level[:, end:])
            total = part if total is None else total + part
        if not full:
            return total
        level = _seq(level[:, :end].reshape(q * full, step, c)).reshape(q, full, c)
    part = _seq(level)
    return part if total is None else total + part


def _row_sum(a):
    """(q, n, c) -> (q, c): row_sum down each column: four interleaved cascades (values i, i + 4,
    ...), the values past the last whole 4 added to the first, then the four added in order."""
    q, n, c = a.shape
    m = n >> 2
    if not m:
        return _seq(a)
    parts = _plain(a[:, :4 * m].reshape(q, m, 4 * c))
    out = parts[:, :c]
    for i in range(4 * m, n):
        out = out + a[:, i]
    out = out + parts[:, c:2 * c]
    out += parts[:, 2 * c:3 * c]
    out += parts[:, 3 * c:]
    return out


def _down(a, lanes):
    """(p, n, k) -> (p, k): each column's sum down the n rows (vectorized_outer_sum,
    scalar_outer_sum): blocks of 4 columns (of 4 vectors where k >= lanes) cascade, the rest row_sum."""
    k = a.shape[2]
    block = 4 if k < lanes else 4 * lanes
    plain = k // block * block
    if plain == k:
        return _plain(a)
    if not plain:
        return _row_sum(a)
    return _np.concatenate((_plain(a[:, :, :plain]), _row_sum(a[:, :, plain:])), 1)


def _in_order(n, lanes):
    """The positions of a row of n values (n < 2 lanes) in the order torch adds them, one after
    another: row_sum of fewer than ``lanes`` values adds 0 and 4.. to the first of its four
    partial sums, then the others (0, 4, 5, 6, 1, 2, 3); one vector and fewer than ``lanes``
    values past it: those values, then the vector's lanes (8, 9, ..., 0, 1, ..., 7)."""
    if n < lanes:
        return _np.array([0, *range(4, n), 1, 2, 3] if n > 4 else range(n), dtype=_np.intp)
    return _np.array([*range(lanes, n), *range(lanes)], dtype=_np.intp)


# Rows of up to 2 lanes - 1 values: torch's order is one after another, in a new order. Callers
# call torch_sum from this many values (fewer: NumPy's order is torch's).
SUM_FROM = 5
_ORDERS = {(n, lanes): _in_order(n, lanes) for lanes in (4, 8) for n in range(5, 2 * lanes)}


def _along(a, lanes):
    """(p, n) C-contiguous, 5 <= n < 2 lanes -> (p,): each row's values added in torch's order
    (scalar_inner_sum's row_sum, or vectorized_inner_sum of one vector): the row reordered, then
    added one after another (NumPy adds in order up to 7 values of a row; from 8 values or 16
    rows, down the rows of a copy with a column per row; one row of 8 or more by accumulate)."""
    p, n = a.shape
    order = _ORDERS[(n, lanes)]
    if n < 8 and p < 16:
        return _ADD(a.take(order, 1), 1)
    if p == 1:
        return _ACCUMULATE(a[0].take(order))[-1:]
    return _ADD(a.T.take(order, 0), 0)  # (many rows: a few passes over them all, not a call per row)


def torch_sum(x, axis=None, keepdims=False):
    """``np.add.reduce(x, axis, None, None, keepdims)`` of a NumPy array, in torch's order where
    x is a C-contiguous float32/float64 array whose reduced dims, once the dims of size 1 are left
    out, are one run, and
    - the run ends the shape (a sum along rows, or of everything) with 5 to 15 values (float64:
      7), where torch's order is one value after another in a new order; or
    - kept dims follow it, and it has SUM_DOWN_FROM values or more (a sum down rows: the
      gradient of a broadcast row over a batch). There NumPy adds row after row, each column's
      error growing with the rows, and one inner-loop call per row; torch's cascade keeps the
      error at the scale of 16 values.
    Every other sum is NumPy's: up to 4 values both add in order; wider rows pairwise (as accurate
    as torch's, its last bits not always torch's: see the module), many narrow rows across them
    (``along_rows``). ``axis``: None, an int or a tuple of ints. What to do is kept per shape and
    axis (a program sums the same few shapes again and again)."""
    lanes = _LANES.get(x.dtype)
    if lanes is None or not x.flags.c_contiguous:
        return _ADD(x, axis, None, None, keepdims)
    if axis is None and not keepdims:
        n = x.size
        if n < SUM_FROM or n >= 2 * lanes:  # NumPy's, in order or pairwise
            return _ADD(x, None)
        v = x.reshape(-1).take(_ORDERS[(n, lanes)])  # 5 to 2 lanes - 1 values: a scalar, reordered
        return (_ADD(v) if n < 8 else _ACCUMULATE(v)[-1]) + 0.0
    key = (x.shape, axis, keepdims, lanes)
    try:
        plan = _PLANS.get(key)
    except TypeError:  # (an axis list: not a key)
        plan = _NUMPY_SUM
    else:
        if plan is None:
            if len(_PLANS) >= 4096:
                _PLANS.clear()
            plan = _PLANS[key] = _plan(x.shape, axis, keepdims, lanes)
    how, rows, out_shape = plan
    if how is _NUMPY:
        return _ADD(x, axis, None, None, keepdims)
    if how is _ACROSS:
        return along_rows(_np.add, x, axis, keepdims)
    if how is _TWO:
        out = _ADD(_along(x.reshape(rows[:2]), lanes).reshape(rows[2:]), 0)  # (sequential: 2+ columns)
    else:
        out = _along(x.reshape(rows), lanes) if how is _ALONG else _down(x.reshape(rows), lanes)
    out += 0.0  # every accumulator of torch's starts at +0.0: no -0.0 result (out is a new array)
    return out.reshape(out_shape) if out_shape else out.reshape(())[()]


_NUMPY, _ACROSS, _ALONG, _DOWN, _TWO = "numpy", "along_rows", "along", "down", "two runs"
_NUMPY_SUM = (_NUMPY, None, None)
_PLANS: dict = {}


def _plan(shape, axis, keepdims, lanes):
    """(how, the shape x is read as, the result's shape) for torch_sum: ``how`` _NUMPY (add.reduce,
    its errors too), _ACROSS (``along_rows``), _ALONG (rows of 5 to 2 lanes - 1 values, reordered:
    read as (rows, n)), _DOWN (the cascade down n >= SUM_DOWN_FROM rows: read as (before, n, after))
    or _TWO (rows of such values summed, then those sums down the first run: read as (rows, n),
    the sums as (first run, kept))."""
    ndim = len(shape)
    if axis is None:
        reduced = list(range(ndim))
    elif axis.__class__ is int:
        reduced = [axis % ndim] if -ndim <= axis < ndim else None
    else:
        reduced = [d % ndim for d in axis] if all(d.__class__ is int and -ndim <= d < ndim for d in axis) else None
        if reduced is not None and len(set(reduced)) < len(reduced):
            reduced = None
    if reduced is None:
        return _NUMPY_SUM  # NumPy's own error
    before = n = after = last = 1  # kept dims before the reduced run, the run, kept dims after it,
    state = 0  # a second run that ends the shape; state 0: before the run, 1: in it, 2: after it, 3: in the second
    for d in range(ndim):
        s = shape[d]
        if s == 1:
            continue
        if d in reduced:
            if state >= 2:
                state = 3
                last *= s
            else:
                state = 1
                n *= s
        elif state == 3:
            return _NUMPY_SUM  # kept dims after a second run: NumPy's
        elif state:
            state = 2
            after *= s
        else:
            before *= s
    if keepdims:
        out_shape = tuple(1 if d in reduced else s for d, s in enumerate(shape))
    else:
        out_shape = tuple(s for d, s in enumerate(shape) if d not in reduced)
    if state == 3:  # rows reduced, kept dims, rows reduced to the end (sum_to of (b, m, k) to (m, 1))
        # torch sums each last run along its row, then adds those sums in order over the first
        # run (its output accumulates across the outer loop); NumPy does the same, but for rows
        # of 5 to 2 lanes - 1 values, which torch adds in another order
        if before != 1 or last <= 4 or last >= 2 * lanes:
            return _NUMPY_SUM
        return (_TWO, (n * after, last, n, after), out_shape)
    if after == 1:  # along rows
        if n <= 4 or n >= 2 * lanes or not before * n:
            return (_ACROSS, None, None)
        return (_ALONG, (before, n), out_shape)
    if n < SUM_DOWN_FROM:  # down fewer rows: NumPy's (faster there)
        return _NUMPY_SUM
    return (_DOWN, (before, n, after), out_shape)
