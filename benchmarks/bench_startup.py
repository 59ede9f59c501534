"""Start-up: wall time of `gradcli eval` on the seed example against `python -c "import numpy"`
(the SPEC's yardstick) and, where installed, the same program as a PyTorch script.

Byte code is compiled first (`compileall`), as `pip install` does for an installed package: with
PYTHONDONTWRITEBYTECODE set, a source checkout would otherwise recompile every module on every
start and measure the compiler instead. Every command runs as a fresh process, interleaved round by round so that load on the machine
hits all of them alike; the figure is the median of the rounds after one warm-up (which also
fills gradcli's parser cache and the OS page cache).

    python benchmarks/bench_startup.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "seed0_variable.grad"

TORCH_SCRIPT = """
import torch
x = torch.ones(2, 2)
temp = torch.zeros(2, 2, requires_grad=True)
y = (x + temp + 2).mean()
y.backward()
print(x.grad); print(temp.grad)
z = (x + 2).mean(); print(z.grad_fn)
temp.grad.data.zero_(); print(temp.grad)
"""


def commands() -> dict[str, list[str]]:
    cmds = {
        "import numpy": [sys.executable, "-c", "import numpy"],
        "gradcli eval seed": [sys.executable, "-m", "gradcli", "eval", "-f", str(SEED)],
        "gradcli eval seed --json": [sys.executable, "-m", "gradcli", "eval", "-f", str(SEED), "--json"],
    }
    try:
        import importlib.util
        if importlib.util.find_spec("torch") is not None:
            cmds["torch script"] = [sys.executable, "-c", TORCH_SCRIPT]
    except Exception:
        pass
    return cmds


def wall(cmd: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd} failed: {proc.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "gradcli")], check=True)
    cmds = commands()
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for name, cmd in cmds.items():  # warm-up
        wall(cmd)
    for _ in range(args.rounds):
        for name, cmd in cmds.items():
            times[name].append(wall(cmd))
    base = statistics.median(times["import numpy"])
    print(f"{'command':28} {'median s':>9} {'min s':>7} {'x numpy':>8}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:28} {med:9.3f} {min(ts):7.3f} {med / base:8.2f}")
    ratio = statistics.median(times["gradcli eval seed"]) / base
    print(f"\ntarget: gradcli eval seed <= 2.00x import numpy: {ratio:.2f}x "
          f"({'met' if ratio <= 2.0 else 'NOT met'})")


if __name__ == "__main__":
    main()
