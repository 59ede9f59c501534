"""GPU: forward + backward of ``mean(sin(x) * exp(x) + x**2)`` on 10^8 float32 elements on CUDA.

Engines, each timed in this one process, interleaved round by round (engine A, B, C, A, ...):

- gradcli with ``--device cuda`` (CuPy arrays behind the backend seam);
- PyTorch eager on CUDA, when torch is installed with CUDA support;
- a hand-derived CuPy gradient, the floor for an unfused engine on CuPy:
  ``(cos(x) * e + sin(x) * e + 2x) / n`` with ``e = exp(x)``.

Every round ends with the device synchronised (``Backend.synchronize`` for gradcli and the
CuPy floor, ``torch.cuda.synchronize`` for torch) before the clock stops, so the figures are
the GPU's work and not just the kernel launches. ``x`` is made once (untimed) and its
``.grad`` reset to None before each round, so each round allocates its gradient afresh (from
the allocators' caches after warm-up). Figures are medians over ``--rounds`` rounds after
``--warmup`` rounds; the min is shown too. Results of the engines are compared (the loss,
and the gradient at a few indices) before timing.

Without a GPU (no CuPy, no driver, no device) it prints ``no GPU`` with the reason and exits 0.

    python benchmarks/bench_gpu.py [--n 100000000] [--rounds 7] [--warmup 2] [--device cuda]
"""

from __future__ import annotations

import argparse
import sys

from _common import ROOT, import_torch, median, table, time_interleaved  # noqa: F401 (ROOT: sys.path)


def _gradcli(n: int, device: str):
    import gradcli as gc
    from gradcli.backend import get_backend
    backend = get_backend(device)
    x = gc.linspace(-2.0, 2.0, n, device=device).requires_grad_()

    def run():
        x.grad = None
        y = (gc.sin(x) * gc.exp(x) + x ** 2).mean()
        y.backward()
        backend.synchronize()
        return y

    def probe():
        y = run()
        return float(y.item()), x.grad, lambda idx: [float(x.grad[i].item()) for i in idx]
    return run, probe, backend


def _cupy_floor(n: int, backend):
    cp = backend.xp
    x = cp.linspace(-2.0, 2.0, n, dtype=cp.float32)

    def run():
        e = cp.exp(x)
        s = cp.sin(x)
        y = cp.mean(s * e + x * x)
        g = (cp.cos(x) * e + s * e + 2 * x) / n
        backend.synchronize()
        return y, g

    def probe():
        y, g = run()
        return float(y), g, lambda idx: [float(g[i]) for i in idx]
    return run, probe


def _torch(n: int, torch, index: int):
    dev = torch.device("cuda", index)
    x = torch.linspace(-2.0, 2.0, n, device=dev, dtype=torch.float32).requires_grad_()

    def run():
        x.grad = None
        y = (torch.sin(x) * torch.exp(x) + x ** 2).mean()
        y.backward()
        torch.cuda.synchronize(dev)
        return y

    def probe():
        y = run()
        return float(y.item()), x.grad, lambda idx: [float(x.grad[i].item()) for i in idx]
    return run, probe


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10 ** 8)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)

    from gradcli.backend import get_backend
    from gradcli.errors import DeviceError
    try:
        backend = get_backend(args.device)
    except DeviceError as exc:
        print(f"no GPU: {exc}")
        return 0
    if backend.device_type != "cuda":
        print(f"no GPU: device '{args.device}' is not a CUDA device")
        return 0

    engines, probes = {}, {}
    engines["gradcli"], probes["gradcli"], _ = _gradcli(args.n, args.device)
    engines["cupy (hand-written gradient)"], probes["cupy (hand-written gradient)"] = _cupy_floor(args.n, backend)
    torch = import_torch()
    torch_note = "not installed"
    if torch is not None:
        if torch.cuda.is_available():
            engines["torch"], probes["torch"] = _torch(args.n, torch, backend.index)
            torch_note = f"{torch.__version__} on {torch.cuda.get_device_name(backend.index)}"
        else:
            torch_note = f"{torch.__version__} without CUDA"

    # the engines agree before they are timed
    idx = [0, args.n // 3, args.n // 2, args.n - 1]
    results = {name: probe() for name, probe in probes.items()}
    ref_loss, _, ref_at = results["gradcli"]
    ref_values = ref_at(idx)
    for name, (loss, _, at) in results.items():
        values = at(idx)
        close = abs(loss - ref_loss) <= 1e-4 * abs(ref_loss) and all(
            abs(a - b) <= 1e-4 * abs(b) + 1e-12 for a, b in zip(values, ref_values))
        print(f"{name}: loss {loss:.6f}, grad at {idx} = {[f'{v:.4e}' for v in values]}"
              f"{'' if close else '  <-- DIFFERS from gradcli'}")
    del results

    cp = backend.xp
    device_name = cp.cuda.runtime.getDeviceProperties(backend.index)["name"]
    device_name = device_name.decode() if isinstance(device_name, bytes) else device_name
    times = time_interleaved(engines, rounds=args.rounds, warmup=args.warmup)
    base = median(times["torch"]) if "torch" in times else None
    rows = []
    for name, ts in times.items():
        m = median(ts)
        rows.append([name, f"{m * 1e3:.2f}", f"{min(ts) * 1e3:.2f}", f"{args.n / m / 1e9:.2f}",
                     f"{m / base:.2f}x" if base else "-"])
    print()
    print(f"mean(sin(x) * exp(x) + x**2), forward + backward, n = {args.n:,} float32 on {args.device} "
          f"({device_name}); CuPy {cp.__version__}; torch {torch_note}")
    print(f"median of {args.rounds} rounds after {args.warmup} warm-up rounds, synchronised")
    print(table(rows, ["engine", "median ms", "min ms", "G elements/s", "vs torch"]))
    pool = cp.get_default_memory_pool()
    print(f"CuPy memory pool after the runs: {pool.total_bytes() / 2**20:.0f} MiB held, "
          f"{pool.used_bytes() / 2**20:.0f} MiB in use")
    return 0


if __name__ == "__main__":
    sys.exit(main())
