"""Timing helpers shared by the engine benchmarks (bench_per_op.py, bench_large.py).

Every figure is the median of several timed rounds after warm-up rounds, taken
in one process with the same thread settings for every engine. The cyclic
garbage collector is stated explicitly for every measurement: ``gc_mode="on"``
leaves it as the product runs (enabled, default thresholds), ``"off"`` disables
it around the timed call only (and collects before each round), so the two
figures side by side show what the collector costs.

PyTorch is optional: ``import_torch()`` returns None when it is not installed,
and the scripts then print gradcli's own figures only.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def import_torch(threads: int | None = None):
    """PyTorch, or None when it is not installed; ``threads`` sets torch.set_num_threads."""
    try:
        import torch
    except ImportError:
        return None
    if threads is not None:
        torch.set_num_threads(threads)
    return torch


def time_rounds(fn, *, rounds: int = 5, warmup: int = 1, gc_mode: str = "on", setup=None) -> list[float]:
    """Wall seconds of ``fn()`` for each of ``rounds`` timed rounds, after ``warmup`` untimed ones.

    ``setup()`` (untimed) runs before every call and its result is passed to ``fn``.
    ``gc_mode``: "on" (collector enabled as in production) or "off" (disabled during the call).
    """
    if gc_mode not in ("on", "off"):
        raise ValueError(gc_mode)
    times = []
    was_enabled = gc.isenabled()
    try:
        for i in range(warmup + rounds):
            arg = setup() if setup is not None else None
            gc.collect()
            if gc_mode == "off":
                gc.disable()
            else:
                gc.enable()
            t0 = time.perf_counter()
            if setup is not None:
                fn(arg)
            else:
                fn()
            elapsed = time.perf_counter() - t0
            gc.enable()
            del arg
            if i >= warmup:
                times.append(elapsed)
    finally:
        if was_enabled:
            gc.enable()
        else:
            gc.disable()
    return times


def time_interleaved(fns: dict, *, rounds: int = 5, warmup: int = 1, gc_mode: str = "on") -> dict:
    """Like ``time_rounds`` for several engines at once, round by round (engine A, engine B, A, B...),
    so that load on the machine during the run hits every engine alike. Returns name -> times."""
    times = {name: [] for name in fns}
    for i in range(warmup + rounds):
        for name, fn in fns.items():
            t = time_rounds(fn, rounds=1, warmup=0, gc_mode=gc_mode)[0]
            if i >= warmup:
                times[name].append(t)
    return times


def median(xs) -> float:
    return statistics.median(xs)


def ratio(a: float, b: float | None) -> str:
    """``a / b`` formatted, or "-" when ``b`` is missing."""
    if not b:
        return "-"
    return f"{a / b:.2f}x"


def machine() -> str:
    import numpy
    torch = import_torch()
    return (f"{os.cpu_count()} cores, CPython {sys.version.split()[0]}, numpy {numpy.__version__}, "
            f"torch {torch.__version__ if torch is not None else 'not installed'}")


def table(rows, headers) -> str:
    """A plain-text table (also valid Markdown)."""
    cols = [headers] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(headers))]
    line = lambda r: "| " + " | ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in cols[1:]])
