"""Row-wise computations on large NumPy arrays, block by block and on a few threads.

softmax, log_softmax, logsumexp and their gradients make four or five passes over their input
(max, subtract, exp, sum, divide). On a tensor of millions of elements each pass streams the whole
array through memory on one core; torch fuses them and splits the rows between its threads. Here
such a computation runs on blocks of a few hundred kilobytes of rows, so that its later passes read
the block from cache, and the blocks are shared out between threads (NumPy releases the GIL inside
a ufunc's loop and a reduction's). A reduction along a row reads only that row, in the same order
whatever block it is in, and an elementwise operation is the same on each element: the result is
the whole array's, bit for bit.

Only arrays of at least ``MIN_ELEMENTS`` are worth it: on smaller ones a thread's hand-off (~20 us)
costs more than the work, and they fit in cache anyway. The callers test that themselves (it is
one comparison; a call here costs 0.4 us, 3% of a small softmax's forward and backward).
"""

from __future__ import annotations

import contextvars
import itertools
import os

import numpy as _np

_ndarray = _np.ndarray
_copyto = _np.copyto
MIN_ELEMENTS = 1 << 20       # 4 MiB of float32: below this, compute the whole array at once
BLOCK_ELEMENTS = 1 << 16     # a block's size in elements (256 KiB of float32 per array, in L2 cache)


def threads(environ=os.environ) -> int:
    """How many threads share out the blocks: ``OMP_NUM_THREADS`` where it is set to a positive
    count (its first, where it lists one per nesting level: ``4,2``), as torch (OpenMP) and NumPy's
    OpenBLAS take theirs from it, so that ``OMP_NUM_THREADS=1`` keeps a run on one core; else as many
    as the process may run on, at most 8."""
    first = environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if first.isdecimal() and len(first) <= 6 and int(first) > 0:
        return int(first)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, 8))


THREADS = threads()


def by_rows(fn, dim, shape, *arrays, out=None):
    """``fn(*blocks, dim)`` on blocks of rows of ``arrays``, in parallel, each block's result copied
    into ``out`` (one of ``arrays``: the block's own, which ``fn`` has read by then) or into a new
    C-contiguous array of ``shape``; that array, or None where the arrays do not split into blocks
    of rows (``dim``, an int or a tuple of one, not their last; a full-size one not C-contiguous; a
    single block), and the caller computes the whole at once. ``fn`` is the caller's own
    computation: it meets blocks of fewer rows, so it does not come back here for ever. Each array
    has ``shape``, or ``shape`` with the last dim reduced to 1 (a row's max, sum or gradient, kept),
    as ``shape`` itself may be; the blocks are 2-d, and ``dim`` for them 1 (or ``(1,)``)."""
    ndim = len(shape)
    if not _along_rows(dim, ndim):
        return None
    width = 1
    for a in arrays:  # a full array is split by views; a row's values may be a broadcast (copied: small)
        if a.__class__ is not _ndarray or a.ndim != ndim or a.shape[-1] != 1 and not a.flags.c_contiguous:
            return None
        width = max(width, a.shape[-1])
    rows = 1
    for s in shape[:-1]:
        rows *= s
    step = max(1, BLOCK_ELEMENTS // width)
    if rows <= step:
        return None
    if out is None:
        out = _np.empty(shape, arrays[0].dtype)
    views = [out.reshape(rows, out.shape[-1])] + [a.reshape(rows, a.shape[-1]) for a in arrays]
    _share(fn, views, 1 if dim.__class__ is int else (1,), rows, step)
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


def _share(fn, views, dim, rows, step) -> None:
    """The blocks of ``step`` rows, taken in turn by this thread and the pool's until none is left
    (a thread that another process slows takes fewer). Each worker runs in a copy of this thread's
    context, so that NumPy's error state (``np.errstate``) is the caller's there too."""
    blocks = itertools.count()  # next() on it is atomic under the GIL: each block goes to one thread
    out, arrays = views[0], views[1:]

    def work():
        for i in blocks:
            lo = i * step
            if lo >= rows:
                return
            hi = lo + step
            _copyto(out[lo:hi], fn(*[a[lo:hi] for a in arrays], dim))

    extra = min(THREADS, (rows + step - 1) // step) - 1
    helpers = []
    if extra > 0:  # (on one thread, no pool: the blocks still read their later passes from cache)
        pool = _pool()
        helpers = [pool.submit(contextvars.copy_context().run, work) for _ in range(extra)]
    try:
        work()
    finally:
        for f in helpers:
            f.result()


_POOL = [None, None]  # the executor and the process it belongs to (a forked child makes its own)


def _pool():
    pool, pid = _POOL
    if pool is None or pid != os.getpid():
        from concurrent.futures import ThreadPoolExecutor  # (4 ms of imports: only once a large array needs it)
        pool = ThreadPoolExecutor(max_workers=THREADS - 1 or 1, thread_name_prefix="gradcli-rows")
        _POOL[:] = pool, os.getpid()
    return pool
