"""The op table's cases split into forward and backward: where an op's time goes, gradcli against
PyTorch eager, per call.

For each case of ``bench_ops.py`` (``--only`` op names), ``--calls`` outputs are computed from the
same leaves (the forward, timed), then one backward runs through all of them (timed), with the
cyclic GC off during both; the figures are the minima over ``--rounds`` rounds after two warm-up
rounds, engines in turn. A minimum of GC-free rounds reads lower than ``bench_ops.py``'s median of
rounds with the GC on: this script is for finding which half of an op to work on, and the op table
for the figures that count.

    python benchmarks/bench_ops_split.py [--only lerp addcmul ...] [--calls 2000] [--rounds 10]
"""

from __future__ import annotations

import gc
import time

import bench_ops


def split(lib, case, calls: int, rounds: int) -> tuple[float, float]:
    """(forward us, backward us) per call: minima over the rounds."""
    env = bench_ops.environment(lib)
    first = case.call(lib, env)
    seeds = [lib.ones_like(first)] * calls
    forward, backward = [], []
    for r in range(rounds + 2):
        gc.disable()
        try:
            t0 = time.perf_counter()
            outs = [case.call(lib, env) for _ in range(calls)]
            t1 = time.perf_counter()
            lib.autograd.backward(outs, seeds)
            t2 = time.perf_counter()
        finally:
            gc.enable()
        for t in env.values():
            t.grad = None
        del outs
        if r >= 2:
            forward.append((t1 - t0) / calls * 1e6)
            backward.append((t2 - t1) / calls * 1e6)
    return min(forward), min(backward)


def main() -> None:
    args, gradcli, torch, cases = bench_ops.case_by_case(__doc__.splitlines()[0], calls=2000, rounds=10)
    for case in cases:
        (gf, gb), (tf, tb) = split(gradcli, case, args.calls, args.rounds), split(torch, case, args.calls, args.rounds)
        print(f"{case.label:45s} fwd {gf:6.2f}/{tf:6.2f} = {gf / tf:.2f}x  bwd {gb:6.2f}/{tb:6.2f} = {gb / tb:.2f}x  "
              f"total {(gf + gb) / (tf + tb):.2f}x")


if __name__ == "__main__":
    main()
