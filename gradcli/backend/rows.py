"""Row-wise kernels on large NumPy arrays, block by block and on a few threads.

softmax, log_softmax, logsumexp and their gradients make four or five passes over their input
(max, subtract, exp, sum, divide). On a tensor of millions of elements each pass streams the whole
array through memory on one core; torch fuses them and splits the rows between its threads. Here
a kernel written for whole arrays (NumPy ufuncs with ``out=``, reducing along ``dim``) is run on
blocks of a few hundred kilobytes of rows, so that its later passes read the block from cache, and
the blocks are shared out between threads (NumPy releases the GIL inside a ufunc's loop and a
reduction's). A reduction along a row reads only that row, in the same order whatever block it is
in, and an elementwise operation is the same on each element: the result is the whole-array
kernel's, bit for bit.

Only NumPy arrays of at least ``MIN_ELEMENTS`` take this path: on small ones a thread's hand-off
(~20 us) costs more than the work, and they fit in cache anyway.
"""

from __future__ import annotations

import contextvars
import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as _np

_ndarray = _np.ndarray
MIN_ELEMENTS = 1 << 20       # 4 MiB of float32: below this a kernel runs on the whole array at once
BLOCK_ELEMENTS = 1 << 16     # a block's size in elements (256 KiB of float32 per array, in L2 cache)
THREADS = max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8))


def by_rows(kernel, dim, shape, *arrays, out=None):
    """``kernel(out, *arrays, dim)``: a kernel that writes its result into ``out`` and returns it.
    ``out``: one of ``arrays``, where the kernel allows that, or None: the kernel's own new arrays.
    Where the arrays are large NumPy arrays and ``dim`` (an int, or a tuple of one) is their last,
    the kernel runs on blocks of their rows, in parallel, into ``out`` or a new C-contiguous array
    of ``shape``; otherwise it runs once, on the whole arrays. Each array has ``shape`` or ``shape``
    with the last dim reduced to 1 (a row's max, sum or gradient, kept), as ``shape`` itself may be."""
    first = arrays[0]
    if first.__class__ is not _ndarray or first.size < MIN_ELEMENTS or not _along_rows(dim, first.ndim):
        return kernel(out, *arrays, dim)
    width = first.shape[-1]
    for a in arrays:  # a full array is split by views; a row's values may be a broadcast (copied: small)
        if a.__class__ is not _ndarray or a.ndim != first.ndim or a.shape[-1] != 1 and not a.flags.c_contiguous:
            return kernel(out, *arrays, dim)
    if out is None:
        out = _np.empty(shape, first.dtype)
    rows = first.size // width
    views = [out.reshape(rows, out.shape[-1])] + [a.reshape(rows, a.shape[-1]) for a in arrays]
    _share(kernel, views, 1 if dim.__class__ is int else (1,), rows, max(1, BLOCK_ELEMENTS // width))
    return out


def _along_rows(dim, ndim) -> bool:
    """``dim`` is the last of two or more: each row of the last dim is reduced on its own."""
    if ndim < 2:
        return False
    if dim.__class__ is not int:
        if len(dim) != 1:
            return False
        dim = dim[0]
    return dim % ndim == ndim - 1


def _share(kernel, views, dim, rows, step) -> None:
    """The blocks of ``step`` rows, taken in turn by this thread and the pool's until none is left
    (a thread that another process slows takes fewer). Each worker runs in a copy of this thread's
    context, so that NumPy's error state (``np.errstate``) is the caller's there too."""
    blocks = itertools.count()  # next() on it is atomic under the GIL: each block goes to one thread

    def work():
        for i in blocks:
            lo = i * step
            if lo >= rows:
                return
            hi = lo + step
            kernel(*[v[lo:hi] for v in views], dim)

    pool = _pool()
    helpers = [pool.submit(contextvars.copy_context().run, work)
               for _ in range(min(THREADS, (rows + step - 1) // step) - 1)]
    try:
        work()
    finally:
        for f in helpers:
            f.result()


_POOL = [None, None]  # the executor and the process it belongs to (a forked child makes its own)


def _pool() -> ThreadPoolExecutor:
    pool, pid = _POOL
    if pool is None or pid != os.getpid():
        pool = ThreadPoolExecutor(max_workers=THREADS - 1 or 1, thread_name_prefix="gradcli-rows")
        _POOL[:] = pool, os.getpid()
    return pool
