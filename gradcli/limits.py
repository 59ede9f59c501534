"""Resource limits (SPEC §5): refuse a tensor over ``max_elements`` or over the memory budget
before allocating it, bound the text a run may print, and carry ``--timeout``'s state."""

from __future__ import annotations

import os
import weakref

from .errors import LimitError

DEFAULT_MAX_ELEMENTS = 2 ** 28         # 1 GiB of float32
DEFAULT_MAX_PROGRAM_BYTES = 10 * 2 ** 20  # 10 MiB of program text
DEFAULT_MAX_STATEMENTS = 1_000_000
DEFAULT_MAX_OUTPUT = 16 * 2 ** 20      # characters of printed text, or of the JSON document
DEFAULT_TIMEOUT = 60.0                 # seconds of wall time for eval, check and graph (0: none)
DEFAULT_MAX_STEPS = 10_000_000         # statements executed, loop iterations included
DEFAULT_MAX_DEPTH = 1_000              # nested calls of the program's own functions


def default_max_memory() -> int:
    """4 GiB, or half the physical memory or half the address-space ulimit (``ulimit -v``,
    ``prlimit --as``) where that is less: a laptop keeps room to work, and a run under a ulimit is
    refused with a message before the allocator fails."""
    cap = 4 * 2 ** 30
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        if physical > 0:
            cap = min(cap, physical // 2)
    except (AttributeError, ValueError, OSError):
        pass
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            cap = min(cap, soft // 2)
    except (ImportError, ValueError, OSError):
        pass
    return cap


class _Limits:
    __slots__ = ("max_elements", "max_program_bytes", "max_statements", "max_memory", "max_output",
                 "itemsize", "max_steps", "max_depth")

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.max_elements = DEFAULT_MAX_ELEMENTS
        self.max_program_bytes = DEFAULT_MAX_PROGRAM_BYTES
        self.max_statements = DEFAULT_MAX_STATEMENTS
        self.max_memory = default_max_memory()
        self.max_output = DEFAULT_MAX_OUTPUT
        self.itemsize = 4  # the default dtype's: what a tensor about to be made is assumed to take
        self.max_steps = DEFAULT_MAX_STEPS
        self.max_depth = DEFAULT_MAX_DEPTH


LIMITS = _Limits()


# -- the memory budget ---------------------------------------------------------------------------
# A running total of the bytes held by live arrays that own their memory. Arrays are counted when a
# tensor is made around them and uncounted by a weakref finalizer when the array itself is freed,
# so views, saved tensors and aliases are never counted twice. Arrays under TRACK_BYTES are not
# counted (a finalizer per small op result would cost more than the op): the statement limit bounds
# how many of those a program can make.

TRACK_BYTES = 1 << 16


class _Memory:
    __slots__ = ("live", "counted", "baseline", "untracked")

    def __init__(self):
        self.live = 0
        self.counted: dict[int, int] = {}  # id(array) -> its bytes, while it is alive
        self.baseline = 0   # the process's resident bytes when the run started (see poll_memory)
        self.untracked = 0  # resident bytes beyond that, less the counted arrays, at the last poll


MEMORY = _Memory()


def _release(key: int) -> None:
    MEMORY.live -= MEMORY.counted.pop(key, 0)


def track(array) -> None:
    """Count ``array`` (an op's result, a tensor's data) against ``--max-memory`` until it is freed;
    LimitError when it takes the total over the budget (the array is freed as the error unwinds)."""
    nbytes = getattr(array, "nbytes", 0)
    if nbytes < TRACK_BYTES:
        return
    base = array
    while getattr(base, "base", None) is not None:
        base = base.base
    key = id(base)
    if key in MEMORY.counted:
        return
    try:
        weakref.finalize(base, _release, key)
    except TypeError:  # an array type without weak references: not counted
        return
    MEMORY.counted[key] = base.nbytes
    MEMORY.live += base.nbytes
    if MEMORY.live + MEMORY.untracked > LIMITS.max_memory:
        raise _over_memory(0)


def check_bytes(nbytes: int) -> None:
    """Refuse, before allocating, ``nbytes`` more than the memory budget has left."""
    if MEMORY.live + MEMORY.untracked + nbytes > LIMITS.max_memory:
        raise _over_memory(nbytes)


def _over_memory(more: int) -> LimitError:
    need = f" (this needs {_bytes_text(more)} more)" if more else ""
    what = " of arrays" if not MEMORY.untracked else " of arrays and other values"
    total, limit = _bytes_text(MEMORY.live + MEMORY.untracked + more), _bytes_text(LIMITS.max_memory)
    if total == limit:  # over by less than the rounding
        total = "more than " + total
    return LimitError(
        f"the run would hold {total}{what}, over the memory limit of {limit}{need}",
        hint="raise it with --max-memory BYTES (e.g. 8G) if this machine has the memory")


# Everything else a run holds (arrays under TRACK_BYTES, tensors' own objects, Python lists and
# strings) is not counted one by one, which would cost on every op. Instead the evaluator polls the
# process's resident size every POLL_STEPS steps (statements, loop and comprehension iterations:
# ~5 us a poll, 5 ns a step) and before it builds a large list or string: what the process holds
# beyond its size when the run started, less the arrays already counted, joins the total. Between
# two polls a program can add at most POLL_STEPS statements' worth (a statement's own list or
# string is capped at 10,000,000 items and checked before it is built). Linux only (/proc); where
# the file is missing, only arrays are counted.

POLL_STEPS = 1024
_STATM = "/proc/self/statm"
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _resident() -> int | None:
    """The process's resident bytes (current, not peak), or None where /proc is missing."""
    try:
        with open(_STATM, "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def start_run() -> None:
    """A run starts: what the process holds now (the interpreter, the modules) is not the program's."""
    MEMORY.baseline = _resident() or 0
    MEMORY.untracked = 0


def poll_memory(more: int = 0) -> None:
    """Update what the run holds beyond its counted arrays; LimitError if that, with ``more`` bytes
    about to be allocated, is over the budget."""
    rss = _resident()
    if rss is not None and MEMORY.baseline:
        MEMORY.untracked = max(0, rss - MEMORY.baseline - MEMORY.live)
    check_bytes(more)


def check_sequence(length: int, itemsize: int) -> None:
    """A list (8 bytes an item) or string about to be built: over 65,536 items, the process is polled
    and the new object's bytes checked against the budget before it is allocated."""
    if length > 65_536:
        poll_memory(length * itemsize)


def _bytes_text(n: int) -> str:
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def check_host_objects(count: int, what: str = "the list") -> None:
    """A NumPy array turned into Python objects (``tolist()``) takes about 32 bytes an element:
    refuse it before it is built if that would go over the memory budget."""
    check_bytes(32 * count)
    if count > LIMITS.max_output:
        raise LimitError(f"{what} would have {count:,} elements, over the output limit of "
                         f"{LIMITS.max_output:,}", hint="raise it with --max-output N")


def check_output(size: int, what: str = "the output", limit: int | None = None) -> None:
    """Text about to be built or written: refused beyond ``limit`` characters (what is left of
    ``--max-output``; all of it by default)."""
    if size > (LIMITS.max_output if limit is None else limit):
        raise LimitError(f"{what} would be about {_count_text(size)} characters, over the output limit of "
                         f"{LIMITS.max_output:,}",
                         hint="raise it with --max-output N, or print a summary (x.sum(), x[:10])")


class _Deadline:
    """``--timeout``'s state, shared by the alarm (:mod:`gradcli.cli.interrupts`), the evaluator and
    the engine. The alarm fires once and sets ``expired``; it raises only while the run is
    ``live`` (a signal handler's exception raised inside a finalizer is printed and dropped, so
    :func:`poll`, called at each statement, call and backward node, raises it again); a Ctrl-C
    while live sets ``interrupted`` and ``expired`` both, and the poll raises KeyboardInterrupt. Once a
    command starts writing its output it clears ``live``: from then on neither the alarm nor a
    poll raises, so the output (variables, the error's line) is written in full, once. ``at`` is
    the deadline on ``time.monotonic()`` (None: none), for estimates of long single calls."""

    __slots__ = ("expired", "interrupted", "live", "at", "seconds", "hold")

    def __init__(self):
        self.expired = self.interrupted = self.live = False
        self.at = self.seconds = None
        self.hold = None  # called by settle(): the CLI stops the alarm and holds SIGINT back there


DEADLINE = _Deadline()


def timeout_error() -> LimitError:
    return LimitError(f"the program ran longer than --timeout {DEADLINE.seconds:g} s",
                      hint="raise it with --timeout SECONDS (0 for no limit)")


def poll() -> None:
    """Raise the timeout's LimitError if the deadline passed while the run is live, or
    KeyboardInterrupt if a Ctrl-C came (its handler's own exception may have been swallowed)."""
    if DEADLINE.expired and DEADLINE.live:
        if DEADLINE.interrupted:
            raise KeyboardInterrupt
        raise timeout_error()


def settle() -> None:
    """The run is over: what follows (writing the output) is not interrupted by the timeout or by
    Ctrl-C (a signal that lands in a blocked write to a pipe makes Python drop the rest of it)."""
    DEADLINE.live = False
    if DEADLINE.hold is not None:
        DEADLINE.hold()


# A documented, conservative rate for one dense matrix product (NumPy's BLAS measured 47 GFLOP/s in
# float32 and 29 in float64 on 2 shared cores of the development machine; a laptop does more). A
# product estimated to need more time than --timeout has left is refused before it starts, since
# one C call cannot be interrupted: at 1e10, a 16384 x 16384 product (8.8e12 operations) is refused
# under any timeout below 15 minutes, a 2048 x 2048 one (1.7e10) needs 2 s left.
MATMUL_FLOPS_PER_SECOND = 1e10


def check_flops(flops: float, what: str = "this matrix product") -> None:
    """Refuse one C call (a matmul) estimated to run past the deadline: it cannot be interrupted."""
    need = flops / MATMUL_FLOPS_PER_SECOND
    if need <= 0.05 or DEADLINE.at is None or not DEADLINE.live:
        return
    import time
    left = DEADLINE.at - time.monotonic()
    if need > max(left, 0.0):
        raise LimitError(f"{what} needs about {flops:.3g} floating-point operations (~{need:.0f} s at "
                         f"{MATMUL_FLOPS_PER_SECOND:.0e} per second), more than the {max(left, 0):.1f} s "
                         f"left of --timeout {DEADLINE.seconds:g} s",
                         hint="raise --timeout (0 for no limit), or use smaller matrices")


def check_numel(shape) -> None:
    """Raise LimitError if a tensor of ``shape`` would exceed the element limit or the memory budget."""
    n = rows = 1
    for s in shape:
        s = int(s)
        n *= s
        rows *= s or 1
    if n > LIMITS.max_elements:
        raise LimitError(
            f"a tensor of shape {_shape_text(shape)} has {_count_text(n)} elements, over the limit of "
            f"{LIMITS.max_elements:,}",
            hint="raise it with --max-elements N if this machine has the memory")
    if rows > LIMITS.max_elements:  # empty, yet printing it or listing it in JSON would never end
        raise LimitError(
            f"a tensor of shape {_shape_text(shape)} has no elements, but its other dimensions multiply to "
            f"{_count_text(rows)}, over the limit of {LIMITS.max_elements:,}",
            hint="raise it with --max-elements N")
    if n * LIMITS.itemsize >= TRACK_BYTES:
        check_bytes(n * LIMITS.itemsize)


def _count_text(n: int) -> str:
    return f"{n:,}" if n < 10 ** 30 else f"about 10**{len(str(n)) - 1}"


def _shape_text(shape) -> str:
    dims = [str(int(s)) if int(s) < 10 ** 30 else f"<{len(str(int(s)))}-digit number>" for s in shape]
    if len(dims) > 12:
        dims = dims[:6] + ["..."] + dims[-5:]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


# Python ints are exact and unbounded: the language caps them at Python's own limit for printing one
# (4,300 digits), so that a few squarings of a huge number cannot run for hours inside one C call
# (which --timeout cannot interrupt).
MAX_INT_DIGITS = 4300
_MAX_INT = 10 ** MAX_INT_DIGITS


def check_int(value, what: str = "an integer result"):
    """``value`` if it is a float or a Python int under the cap, else LimitError."""
    if value.__class__ is int and not -_MAX_INT < value < _MAX_INT:
        raise LimitError(f"{what} has more than {MAX_INT_DIGITS:,} digits",
                         hint="integers are exact in the language: use floats (2.0 ** 1000 rather than 2 ** 1000) "
                              "for approximate values")
    return value


# Literals are refused in the postlexer, before any conversion (int() of 10 MiB of digits is
# quadratic; decoding millions of escapes takes gigabytes): a number longer than the longest int the
# language keeps, a string with more escapes than any sensible message has.
MAX_NUMBER_CHARS = MAX_INT_DIGITS + 100
MAX_STRING_ESCAPES = 100_000


def statements_error(count: int, more: bool = False) -> "Exception":
    from .errors import UsageError
    return UsageError(f"the program has {'more than ' if more else ''}{count:,} statements, over the limit of "
                      f"{LIMITS.max_statements:,}", hint="raise it with --max-statements N")


def check_statements(count: int) -> None:
    """A program over the statement limit is bad input (exit 2, SPEC §5), like one over the size limit."""
    if count > LIMITS.max_statements:
        raise statements_error(count)
