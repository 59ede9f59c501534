"""Large tensors: forward + backward of ``mean(sin(x) * exp(x) + x**2)`` on 10^7 float32 elements.

Engines: gradcli, PyTorch eager (``torch.set_num_threads(--threads)``, 2 by default) and a
hand-derived NumPy gradient (the floor: ``(cos(x)*e + sin(x)*e + 2x) / n`` with ``e = exp(x)``).
Each engine runs in its own fresh subprocess so that one's allocator caches cannot
flatter or hurt another. In that process, ``x`` is created (and, for gradcli/torch,
marked as requiring grad), then for each round: the peak-RSS counter is reset
(``/proc/self/clear_refs``), the resident size read as the baseline, the round run
and timed (forward, backward, ``x.grad`` read), and ``VmHWM - baseline`` recorded as
the round's peak memory over baseline. ``x`` itself (40 MB) and its ``.grad`` from
an earlier round are part of the baseline (``x.grad`` is set to None between rounds,
so each round allocates it afresh). The figures are medians over rounds after one
warm-up round. Where ``/proc/self/clear_refs`` cannot be written, peaks fall back to
``ru_maxrss`` deltas, which only ever grow (first round's figure).

The cyclic GC stays enabled (as users run it); these rounds allocate few objects.

    python benchmarks/bench_large.py [--n 10000000] [--rounds 5] [--threads 2] [--engines gradcli torch numpy]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from _common import ROOT, import_torch, machine, median, ratio, table


def _status() -> dict:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                key, value = line.split(":")
                out[key] = int(value.split()[0])  # KiB
    return out


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _measure(run_round, rounds: int, warmup: int = 1) -> dict:
    times, peaks = [], []
    for i in range(warmup + rounds):
        resettable = _reset_peak()
        if resettable:
            base = _status()["VmRSS"]
        else:
            base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        value = run_round()
        elapsed = time.perf_counter() - t0
        peak = _status()["VmHWM"] if resettable else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if i >= warmup:
            times.append(elapsed)
            peaks.append(max(peak - base, 0) / 1024)
    return {"seconds": median(times), "min_seconds": min(times), "peak_mib": median(peaks),
            "value": float(value)}


def child(engine: str, n: int, rounds: int, threads: int) -> dict:
    if engine == "gradcli":
        import gradcli as g
        x = g.linspace(-2.0, 2.0, n).requires_grad_()

        def run_round():
            x.grad = None
            y = (g.sin(x) * g.exp(x) + x ** 2).mean()
            y.backward()
            return x.grad._data[n // 3]
    elif engine == "torch":
        torch = import_torch(threads)
        if torch is None:
            return {"skipped": "torch not installed"}
        x = torch.linspace(-2.0, 2.0, n).requires_grad_()

        def run_round():
            x.grad = None
            y = (torch.sin(x) * torch.exp(x) + x ** 2).mean()
            y.backward()
            return x.grad[n // 3].item()
    elif engine == "numpy":
        import numpy as np
        x = np.linspace(-2.0, 2.0, n, dtype=np.float32)

        def run_round():
            s = np.sin(x)
            e = np.exp(x)
            y = s * e
            y += x * x
            loss = y.mean()
            del y
            grad = np.cos(x)
            grad *= e
            s *= e
            grad += s
            del s, e
            grad += 2 * x
            grad /= n
            float(loss)
            return grad[n // 3]
    else:
        raise SystemExit(f"unknown engine {engine}")
    return _measure(run_round, rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads in torch's process")
    ap.add_argument("--engines", nargs="+", default=["gradcli", "torch", "numpy"])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n, args.rounds, args.threads)))
        return

    print(machine() + f"; n = {args.n:,} float32; torch threads {args.threads}")
    results = {}
    for engine in args.engines:
        proc = subprocess.run(
            [sys.executable, __file__, "--child", engine, "--n", str(args.n), "--rounds", str(args.rounds),
             "--threads", str(args.threads)],
            capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            print(f"{engine}: failed\n{proc.stderr[-2000:]}")
            continue
        results[engine] = json.loads(proc.stdout.strip().splitlines()[-1])
    torch_res = results.get("torch")
    if torch_res is not None and "skipped" in torch_res:
        torch_res = None
    rows = []
    for engine, r in results.items():
        if "skipped" in r:
            rows.append([engine, "-", "-", "-", "-", "-", r["skipped"]])
            continue
        rows.append([engine, f"{r['seconds']:.3f}", f"{r['min_seconds']:.3f}", f"{r['peak_mib']:.0f}",
                     ratio(r["seconds"], torch_res and torch_res["seconds"]),
                     ratio(r["peak_mib"], torch_res and torch_res["peak_mib"]), f"{r['value']:.6g}"])
    print(table(rows, ["engine", "median s", "min s", "peak MiB over baseline", "time / torch",
                       "memory / torch", "grad[n/3]"]))


if __name__ == "__main__":
    main()
