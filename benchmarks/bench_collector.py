"""The cyclic garbage collector's share of the op table's cases: each case's fan-out (``bench_ops.py``'s:
``--calls`` outputs from the same leaves, then one backward through all of them) timed with the
collector on, as programs run, and off, gradcli beside PyTorch eager; and how many objects the
collector tracks that each call leaves alive (what counts towards its next collection and is
traversed in it), by kind.

    python benchmarks/bench_collector.py [--only repeat_interleave kron ...] [--calls 1000] [--rounds 7]
"""

from __future__ import annotations

import gc
import statistics
import time
from collections import Counter

import bench_ops


def timed(run, rounds: int, collector: bool) -> float:
    """The median over ``rounds`` of one fan-out, in ms, with the collector on or off."""
    run()  # warm-up
    times = []
    for _ in range(rounds):
        if not collector:
            gc.disable()
        try:
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return statistics.median(times) * 1e3


def kept(lib, case, calls: int = 10) -> Counter:
    """The kinds of the tracked objects that each call of the case leaves alive (its outputs kept):
    the second of two counts (the first finds what this process makes once), less what a call that
    makes nothing leaves (this script's own)."""
    _kept(lib, case, calls)
    kinds = _kept(lib, case, calls)
    kinds.subtract(_kept(lib, _NOTHING, calls))
    return Counter({kind: n for kind, n in kinds.items() if n})


class _Nothing:
    """A case whose call makes nothing: the leaf x itself."""
    label = "x"

    @staticmethod
    def call(lib, env):
        return env["x"]


_NOTHING = _Nothing()


def _kept(lib, case, calls: int) -> Counter:
    env = bench_ops.environment(lib)
    outs = [case.call(lib, env) for _ in range(3)]  # warm: caches, the leaves' gradient edges
    gc.disable()
    try:
        gc.collect()
        outs = [case.call(lib, env) for _ in range(calls)]
        kinds = Counter(type(o).__name__ for o in gc.get_objects(generation=0) if o is not outs)
    finally:
        gc.enable()
    return Counter({kind: n / calls for kind, n in kinds.items() if kind != "function"})


def main() -> None:
    args, gradcli, torch, cases = bench_ops.case_by_case(__doc__.splitlines()[0], calls=1000, rounds=7)
    print("fan-out ms (medians): collector on / off")
    for case in cases:
        runs = {lib: bench_ops.fan_out(lib, case, args.calls) for lib in (gradcli, torch)}
        g_on, g_off = (timed(runs[gradcli], args.rounds, c) for c in (True, False))
        t_on, t_off = (timed(runs[torch], args.rounds, c) for c in (True, False))
        tracked = kept(gradcli, case)
        left = ", ".join(f"{kind} {n:g}" for kind, n in tracked.most_common())
        print(f"{case.label:45s} gradcli {g_on:7.2f} / {g_off:7.2f}  torch {t_on:7.2f} / {t_off:7.2f}  "
              f"x torch on {g_on / t_on:.2f}x, off {g_off / t_off:.2f}x  tracked per call: {left}")


if __name__ == "__main__":
    main()
