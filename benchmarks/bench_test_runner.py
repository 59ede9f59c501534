"""`gradcli test`: the per-program cost of a small program (a few ops, one assert) run by the test
runner, against the same programs run one `gradcli eval -f FILE` process per file (CI today).

Three figures per program, each the median of several rounds:

- in one worker, in-process: `run_file` on every file in a loop (what `gradcli test -j 1` pays per
  file, start-up excluded), wall and CPU time: the issue's target is under 5 ms;
- `gradcli test DIR -j 1` and `-j N` as commands: (wall of N files - wall of 1 file) / (N - 1), the
  command's start-up and collection subtracted;
- `gradcli eval -f FILE` as one process per file, on a sample of the files.

Byte code is compiled first, as `pip install` does (see bench_startup.py).

    python benchmarks/bench_test_runner.py [--programs 1000] [--rounds 3] [--eval-sample 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PROGRAM = """x = tensor([{a}, {b}, 3.0], requires_grad=True)
y = (x * x + 2 * x).sum()
y.backward()
assert allclose(x.grad, 2 * x + 2), "dy/dx = 2x + 2"
"""


def make_suite(root: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        path = root / f"d{i % 10}" / f"p{i:04}.grad"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PROGRAM.format(a=float(i), b=i + 0.5))
        paths.append(path)
    return paths


def wall(cmd: list[str], cwd: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return elapsed


def in_process_ms(root: Path, rounds: int) -> tuple[float, float]:
    """Wall and CPU milliseconds per file (CPU time is what other load on a shared machine
    disturbs least)."""
    from gradcli.cli.testing.collect import collect
    from gradcli.cli.testing.execute import Settings, run_file
    items = collect([str(root)])
    settings = Settings()
    walls, cpus = [], []
    for i in range(rounds + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        results = [run_file(item, settings) for item in items]
        wall_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
        assert all(r.outcome == "passed" for r in results), [r.error for r in results if r.error]
        if i:  # the first round warms up (parser, imports)
            walls.append(wall_s / len(items) * 1000)
            cpus.append(cpu_s / len(items) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def command_ms(root: Path, one: Path, n: int, jobs: int, rounds: int) -> float:
    gradcli = [sys.executable, "-m", "gradcli", "test"]
    per = []
    for i in range(rounds + 1):
        whole = wall(gradcli + [str(root), "-j", str(jobs)], root)
        single = wall(gradcli + [str(one), "-j", "1"], root)
        if i:
            per.append((whole - single) / (n - 1) * 1000)
    return statistics.median(per)


def eval_ms(paths: list[Path], root: Path, rounds: int) -> float:
    per = []
    for i in range(rounds + 1):
        t0 = time.perf_counter()
        for p in paths:
            wall([sys.executable, "-m", "gradcli", "eval", "-f", str(p), "--json"], root)
        if i:
            per.append((time.perf_counter() - t0) / len(paths) * 1000)
    return statistics.median(per)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--eval-sample", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "gradcli")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "suite"
        paths = make_suite(root, args.programs)
        inproc, inproc_cpu = in_process_ms(root, args.rounds)
        one_worker = command_ms(root, paths[0], args.programs, 1, args.rounds)
        workers = command_ms(root, paths[0], args.programs, args.jobs, args.rounds)
        per_eval = eval_ms(paths[:args.eval_sample], root, args.rounds)
    print(f"{args.programs} programs (a few ops, one assert), {os.cpu_count()} cores, "
          f"CPython {sys.version.split()[0]}, median of {args.rounds} rounds")
    print("| way of running | ms per program | vs one eval per file |")
    print("| --- | --- | --- |")
    print(f"| run_file in one worker, in-process | {inproc:.2f} | {per_eval / inproc:.0f}x faster |")
    print(f"| the same, CPU time | {inproc_cpu:.2f} | |")
    print(f"| gradcli test -j 1 (start-up subtracted) | {one_worker:.2f} | {per_eval / one_worker:.0f}x faster |")
    print(f"| gradcli test -j {args.jobs} (start-up subtracted) | {workers:.2f} | {per_eval / workers:.0f}x faster |")
    print(f"| gradcli eval -f FILE, one process per file ({args.eval_sample} files) | {per_eval:.1f} | 1x |")
    print(f"1,000 programs: gradcli test -j 1 about {one_worker:.1f} s + start-up; "
          f"one eval per file about {per_eval:.0f} s")


if __name__ == "__main__":
    main()
