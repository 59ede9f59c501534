"""Large tensors: forward + backward, gradcli against PyTorch, time and peak memory.

Cases (``--cases``, all by default):

- ``pointwise``: ``mean(sin(x) * exp(x) + x**2)`` on 10^7 float32 elements (``--n``);
- ``matmul``: a two-layer product, ``mean(relu(x @ w1) @ w2)``, x ``--rows`` x ``--dim``,
  w1 and w2 ``--dim`` x ``--dim``, all three requiring grad (six matrix products in all);
- ``softmax``: ``sum(softmax(x, 1) * x) + mean(logsumexp(x, 1))`` on ``--n`` elements as rows
  of 1,000.

Engines: gradcli, PyTorch eager (``torch.set_num_threads(--threads)``, 2 by default) and a
hand-derived NumPy gradient (the floor, e.g. ``(cos(x)*e + sin(x)*e + 2x) / n`` with
``e = exp(x)``). Each engine runs each case in its own fresh subprocess so that one's
allocator caches cannot flatter or hurt another; the processes take their rounds in turn
(A, B, C, A, B, C...), so that load from elsewhere on the machine falls on every engine alike
(multi-threaded matrix products are very sensitive to it), with a pause (``--pause``) before
each round, as an idle BLAS or OpenMP thread spins for a while after its work. In that process, the inputs are created (and,
for gradcli/torch, marked as requiring grad), then for each round: the peak-RSS counter is
reset (``/proc/self/clear_refs``), the resident size read as the baseline, the round run and
timed (forward, backward, a gradient read), and ``VmHWM - baseline`` recorded as the round's
peak memory over baseline. The inputs and their ``.grad`` from an earlier round are part of the
baseline (``.grad`` is set to None between rounds, so each round allocates it afresh). The
figures are medians over rounds after one warm-up round. Where ``/proc/self/clear_refs`` cannot
be written, peaks fall back to ``ru_maxrss`` deltas, which only ever grow (first round's figure).
The printed gradient element is the same in every engine (a check that they computed one thing).

The cyclic GC stays enabled (as users run it); these rounds allocate few objects.

    python benchmarks/bench_large.py [--cases pointwise matmul softmax] [--n 10000000] [--rows 2048]
        [--dim 1024] [--rounds 5] [--threads 2] [--engines gradcli torch numpy]
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


def _one_round(run_round) -> dict:
    """One timed round: wall seconds and the peak resident memory over the round's start (MiB)."""
    resettable = _reset_peak()
    if resettable:
        base = _status()["VmRSS"]
    else:
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    value = run_round()
    elapsed = time.perf_counter() - t0
    peak = _status()["VmHWM"] if resettable else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": elapsed, "peak_mib": max(peak - base, 0) / 1024, "value": float(value)}


def serve(run_round) -> None:
    """The child's side: one round for each ``round`` line on stdin, its figures as a JSON line."""
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip() != "round":
            break
        print(json.dumps(_one_round(run_round)), flush=True)


def _pointwise(engine, lib, n):
    """``mean(sin(x) * exp(x) + x**2)``; the NumPy floor by hand."""
    if engine == "numpy":
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
        return run_round
    x = lib.linspace(-2.0, 2.0, n).requires_grad_()

    def run_round():
        x.grad = None
        y = (lib.sin(x) * lib.exp(x) + x ** 2).mean()
        y.backward()
        return x.grad[n // 3].item()
    return run_round


def _matmul(engine, lib, rows, dim):
    """``mean(relu(x @ w1) @ w2)`` with x, w1 and w2 requiring grad: two products forward, four backward."""
    import numpy as np
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape, dtype=np.float32) / np.float32(dim ** 0.5)
              for shape in ((rows, dim), (dim, dim), (dim, dim))]
    if engine == "numpy":
        x, w1, w2 = arrays

        def run_round():
            h = x @ w1
            np.maximum(h, 0, out=h)
            out = h @ w2
            float(out.mean())
            del out
            g = np.float32(1.0 / (rows * dim))
            gw2 = h.T @ np.full((rows, dim), g, dtype=np.float32)
            gh = np.full((rows, dim), g, dtype=np.float32) @ w2.T
            gh *= h > 0
            del h
            gw1 = x.T @ gh
            gx = gh @ w1.T
            return gw1[dim // 3, dim // 2] + gw2[0, 0] + gx[rows // 3, dim // 2]
        return run_round
    x, w1, w2 = (lib.tensor(a).requires_grad_() for a in arrays) if engine == "gradcli" else (
        lib.from_numpy(a).requires_grad_() for a in arrays)

    def run_round():
        x.grad = w1.grad = w2.grad = None
        loss = ((x @ w1).relu() @ w2).mean()
        loss.backward()
        return (w1.grad[dim // 3, dim // 2] + w2.grad[0, 0] + x.grad[rows // 3, dim // 2]).item()
    return run_round


def _softmax(engine, lib, n):
    """``sum(softmax(x, 1) * x) + mean(logsumexp(x, 1))`` on rows of 1,000."""
    import numpy as np
    rows = n // 1000
    data = np.linspace(-2.0, 2.0, rows * 1000, dtype=np.float32).reshape(rows, 1000)
    if engine == "numpy":
        x = data

        def run_round():  # d/dx: s * (1 + x - sum(s * x)) + s / rows
            m = x.max(axis=1, keepdims=True)
            s = np.exp(x - m)
            z = s.sum(axis=1, keepdims=True)
            s /= z
            sx = s * x
            row = sx.sum(axis=1, keepdims=True)
            float(sx.sum() + (np.log(z) + m).mean())
            grad = sx
            grad += s
            s *= np.float32(1.0 / rows) - row
            grad += s
            return grad[rows // 3, 500]
        return run_round
    x = (lib.tensor(data) if engine == "gradcli" else lib.from_numpy(data)).requires_grad_()

    def run_round():
        x.grad = None
        loss = (x.softmax(dim=1) * x).sum() + x.logsumexp(dim=1).mean()
        loss.backward()
        return x.grad[rows // 3, 500].item()
    return run_round


def child(engine: str, case: str, args):
    """The case's round function in this engine (None: torch is not installed)."""
    if engine == "gradcli":
        import gradcli as lib
    elif engine == "torch":
        lib = import_torch(args.threads)
        if lib is None:
            return None
    elif engine == "numpy":
        lib = None
    else:
        raise SystemExit(f"unknown engine {engine}")
    if case == "pointwise":
        run_round = _pointwise(engine, lib, args.n)
    elif case == "matmul":
        run_round = _matmul(engine, lib, args.rows, args.dim)
    elif case == "softmax":
        run_round = _softmax(engine, lib, args.n)
    else:
        raise SystemExit(f"unknown case {case}")
    return run_round


CASES = ("pointwise", "matmul", "softmax")
TITLES = {"pointwise": "mean(sin(x) * exp(x) + x**2), x: {n:,} float32",
          "matmul": "mean(relu(x @ w1) @ w2), x: {rows} x {dim}, w1, w2: {dim} x {dim} float32, all requiring grad",
          "softmax": "sum(softmax(x, 1) * x) + mean(logsumexp(x, 1)), x: {n:,} float32 as rows of 1,000"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pause", type=float, default=0.5,
                    help="seconds between rounds: idle threads of the engine before stop spinning")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads in torch's process")
    ap.add_argument("--engines", nargs="+", default=["gradcli", "torch", "numpy"])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run_round = child(args.child, args.case, args)
        if run_round is None:
            print(json.dumps({"skipped": "torch not installed"}), flush=True)
            return
        serve(run_round)
        return

    print(machine() + f"; torch threads {args.threads}; load average "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    for case in args.cases:
        print(f"\n{case}: " + TITLES[case].format(n=args.n, rows=args.rows, dim=args.dim))
        print(_table(_run_case(case, args)))


def _run_case(case: str, args) -> dict:
    """Every engine in its own process, all started first, then round by round in turn (engine A,
    B, C, A, B, C...) so that the machine's load falls on all alike; medians after one warm-up."""
    procs, results = {}, {}
    for engine in args.engines:
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", engine, "--case", case, "--n", str(args.n),
             "--rows", str(args.rows), "--dim", str(args.dim), "--threads", str(args.threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        first = proc.stdout.readline()
        reply = json.loads(first) if first.strip() else {"skipped": f"failed (exit {proc.wait()})"}
        if "skipped" in reply:
            results[engine] = reply
            proc.stdin.close()
            proc.wait()
        else:
            procs[engine] = proc
    rounds = {engine: [] for engine in procs}
    for i in range(1 + args.rounds):
        for engine, proc in procs.items():
            time.sleep(args.pause)  # the last engine's idle BLAS/OpenMP threads spin for a while
            proc.stdin.write("round\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line.strip():
                raise SystemExit(f"{engine} failed (exit {proc.wait()})")
            if i:
                rounds[engine].append(json.loads(line))
    for engine, proc in procs.items():
        proc.stdin.close()
        proc.wait()
        rs = rounds[engine]
        results[engine] = {"seconds": median([r["seconds"] for r in rs]), "min_seconds": min(r["seconds"] for r in rs),
                           "peak_mib": median([r["peak_mib"] for r in rs]), "value": rs[-1]["value"]}
    return {engine: results[engine] for engine in args.engines if engine in results}


def _table(results: dict) -> str:
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
    return table(rows, ["engine", "median s", "min s", "peak MiB over baseline", "time / torch",
                        "memory / torch", "a gradient element"])


if __name__ == "__main__":
    main()
