"""Per-op overhead: forward + backward of a long chain of tiny ops, gradcli against PyTorch eager.

The chain alternates ``y = y * a`` and ``y = y + b`` on a 2x2 float32 tensor ``x``
(requires grad) with 2x2 constants ``a`` (ones: the values stay finite and the
gradient is exactly 1) and ``b``; then ``y.sum().backward()``. Every engine
feature is live: grad mode on, a hook registered on ``x`` (it must fire once),
saved tensors checked against their version counters, graph freed after use. One
round = forward + backward + dropping the graph; the figure is the round's time
divided by the number of ops, the median of ``--rounds`` rounds after a warm-up; the
engines' rounds alternate (gradcli, torch, gradcli, ...) so load on the machine hits both alike.

The cyclic GC: "gc on" is the process as users run it (collector enabled, default
thresholds); "gc off" disables it around the timed round only. The difference is
what collections triggered by the many allocations cost.

A chain of ``--big`` ops (1,000,000 by default) is then run once per engine, each in a
fresh process (gc on), to show that back-propagation through a very deep graph works
(nothing recursive), how long it takes and the peak resident memory over the
process's baseline (``VmHWM - VmRSS`` before the chain).

    python benchmarks/bench_per_op.py [--ops 20000 100000] [--rounds 5] [--big 1000000]
                                      [--threads N] [--no-torch]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time

from _common import import_torch, machine, median, ratio, table, time_interleaved


def chain(lib, n: int, kind: str = "tensor"):
    """One forward + backward of an ``n``-op chain on ``lib`` (gradcli or torch: the same code
    runs on both); returns the hook's call count and the leaf's gradient."""
    x = lib.ones(2, 2, requires_grad=True)
    calls = []
    x.register_hook(lambda grad: calls.append(1))
    if kind == "tensor":
        a, b = lib.ones(2, 2), lib.full((2, 2), 0.001)
    else:
        a, b = 1.0, 0.001
    y = x
    for i in range(n):
        y = y * a if i % 2 == 0 else y + b
    y.sum().backward()
    return len(calls), x.grad


def _engine(name: str):
    """``chain`` bound to the library called ``name``."""
    import importlib
    lib = importlib.import_module(name)
    return lambda n, kind="tensor": chain(lib, n, kind)


def _check(result, n):
    calls, grad = result
    assert calls == 1, f"hook ran {calls} times"
    values = grad.tolist()
    assert values == [[1.0, 1.0], [1.0, 1.0]], values


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, nargs="+", default=[20000, 100000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--big", type=int, default=1_000_000, help="ops in the one-shot deep chain (0: skip)")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    ap.add_argument("--kinds", nargs="+", default=["tensor"], choices=["tensor", "scalar"],
                    help="operands: 2x2 constant tensors, or Python numbers")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--big-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.big_child:
        big_child(args.big_child, args.big, args.threads)
        return

    torch = None if args.no_torch else import_torch(args.threads)
    import gradcli  # noqa: F401  (import outside the timings)
    print(machine() + (f", torch threads {torch.get_num_threads()}" if torch is not None else ""))

    engines = {"gradcli": _engine("gradcli")}
    if torch is not None:
        engines["torch"] = _engine("torch")
    rows = []
    for kind in args.kinds:
        for n in args.ops:
            per = {}
            for name, fn in engines.items():
                _check(fn(n, kind), n)
            for mode in ("on", "off"):
                fns = {name: (lambda fn=fn: fn(n, kind)) for name, fn in engines.items()}
                for name, ts in time_interleaved(fns, rounds=args.rounds, warmup=1, gc_mode=mode).items():
                    per[name, mode] = median(ts) / n * 1e6
            for mode in ("on", "off"):
                t_ours = per["gradcli", mode]
                t_torch = per.get(("torch", mode))
                rows.append([f"{n:,} ({kind})", f"gc {mode}", f"{t_ours:.2f}",
                             "-" if t_torch is None else f"{t_torch:.2f}", ratio(t_ours, t_torch)])
    print(table(rows, ["chain (operands)", "gc", "gradcli us/op", "torch us/op", "gradcli/torch"]))

    if args.big:
        print()
        for name in engines:
            proc = subprocess.run([sys.executable, __file__, "--big-child", name, "--big", str(args.big)]
                                  + (["--threads", str(args.threads)] if args.threads else []),
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{args.big:,}-op chain, {name}: failed\n{proc.stderr[-2000:]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{args.big:,}-op chain, {name} (own process, gc on): forward+backward {r['seconds']:.2f} s "
                  f"({r['seconds'] / args.big * 1e6:.2f} us/op), peak RSS over baseline {r['peak_mib']:.0f} MiB")


def big_child(name: str, n: int, threads) -> None:
    """One ``n``-op chain in this (fresh) process: time and peak resident memory over baseline."""
    if name == "torch":
        import_torch(threads)
    fn = _engine(name)
    fn(100, "tensor")
    gc.collect()
    base = _vm("VmRSS")
    t0 = time.perf_counter()
    result = fn(n, "tensor")
    elapsed = time.perf_counter() - t0
    _check(result, n)
    print(json.dumps({"seconds": elapsed, "peak_mib": (_vm("VmHWM") - base) / 1024}))


def _vm(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


if __name__ == "__main__":
    main()
