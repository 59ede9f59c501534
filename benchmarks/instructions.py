"""Instructions, not seconds: what a change does to the work, on a machine whose timings drift.

On the 2-core virtual machines this project is measured on, a round of the same code varies by up
to 50% from one second to the next, so a 3% change cannot be seen in time. Valgrind's callgrind
counts the instructions executed, the same on every run of the same code and input (hash seeds
fixed, address randomisation off, collection only inside the measured call), whatever else the
machine does. Two kinds of measurement:

- ``--phases N``: the parse, the evaluation and the backward of ``bench_parse.py``'s program of N
  mixed terms (default 10,000), each in a process of its own, in millions of instructions;
- ``--cases LABEL ...``: op-table cases of ``bench_ops.py`` by their label (``"x.log_softmax(1)"``,
  ``"x * y"``), the forward of a fan-out of 1,000 calls and then its backward, after 12 fan-outs
  of warm-up (CPython readies a function's specialised instructions after 8 calls), in thousands
  of instructions per call.

``--against REF`` measures the commit REF the same way (a worktree of it, made and removed here),
beside this checkout. Counts are not times: a NumPy call and a Python call of the same count can
take different times. They tell where the work went and whether a change removed some; the
timed benchmarks beside torch are the figures.

    python benchmarks/instructions.py --phases 10000
    python benchmarks/instructions.py --cases "x.log_softmax(1)" "x * y" --against HEAD~3
    python benchmarks/instructions.py --cases=-x    (a label that starts with "-": one, after "=")

Needs valgrind (Debian's package ``valgrind``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs in the measured process: the work is done inside functools.reduce, the one call of it in the
# run, and callgrind collects inside that call alone (--toggle-collect).
_PROGRAM = r'''
import functools, os, sys
sys.path.insert(0, {benchmarks!r})
kind, arg = sys.argv[1], sys.argv[2]

def measured(fn):
    return functools.reduce(lambda a, b: fn(), [0, 0])

if kind in ("parse", "eval", "backward"):
    from bench_parse import LEAVES, chain_text, terms_of
    from gradcli.cli import session
    from gradcli.lang import parser
    from gradcli.lang.evaluator import Evaluator
    text = chain_text(terms_of("mixed", int(arg)))
    parser.parse(chain_text(terms_of("mixed", 50)))
    if kind == "parse":
        measured(lambda: parser.parse(text))
    else:
        opts = session.Options(source=text, grads=[LEAVES[1], LEAVES[3]], json=True, no_backward=True)
        prepared = session.prepare(opts)
        interp = Evaluator(auto_backward=False)
        run = lambda: session.run_prepared(opts, prepared, interp, configure_first=False)
        if kind == "eval":
            measured(run)
        else:
            run()
            measured(lambda: interp.env["z"].backward())
else:
    import bench_ops
    import gradcli
    case = next(c for c in bench_ops.all_cases(None)[0] if c.label == arg)
    env = bench_ops.environment(gradcli)
    seeds = [gradcli.ones_like(case.call(gradcli, env))] * 1000
    forward = lambda: [case.call(gradcli, env) for _ in range(1000)]

    def backward(outs):
        gradcli.autograd.backward(outs, seeds)
        for t in env.values():
            t.grad = None
    for _ in range(12):
        backward(forward())
    if kind == "case forward":
        measured(forward)
    else:
        outs = forward()
        measured(lambda: backward(outs))
os._exit(0)
'''


def count(tree: Path, kind: str, arg: str) -> int:
    """Instructions executed in one measurement of the checkout at ``tree``."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(_PROGRAM.format(benchmarks=str(tree / "benchmarks")))
    try:
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(tree))
        done = subprocess.run(["setarch", "-R", "valgrind", "--tool=callgrind", "--collect-atstart=no",
                               "--toggle-collect=functools_reduce", "--callgrind-out-file=/dev/null",
                               sys.executable, f.name, kind, arg],
                              capture_output=True, text=True, env=env, cwd=str(tree))
    finally:
        os.unlink(f.name)
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    raise SystemExit(f"callgrind gave no count for {kind} {arg}:\n{done.stderr[-2000:]}")


def measure(tree: Path, phases: int | None, cases: list[str]) -> list[tuple[str, str]]:
    rows = []
    if phases:
        for kind in ("parse", "eval", "backward"):
            rows.append((f"{phases:,} mixed terms: {kind}", f"{count(tree, kind, str(phases)) / 1e6:.1f} M"))
    for label in cases:
        for kind in ("forward", "backward"):
            rows.append((f"{label}: {kind}", f"{count(tree, 'case ' + kind, label) / 1000 / 1000:.1f} k a call"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phases", type=int, nargs="?", const=10_000, help="terms of the mixed program (default 10,000)")
    ap.add_argument("--cases", nargs="+", default=[], help="op-table cases by label")
    ap.add_argument("--against", help="a commit measured the same way, beside this checkout")
    args = ap.parse_args()
    if not args.phases and not args.cases:
        ap.error("nothing to measure: give --phases and/or --cases")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    ours = measure(ROOT, args.phases, args.cases)
    theirs = None
    if args.against:
        other = Path(tempfile.mkdtemp()) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(other), args.against], check=True)
        try:
            theirs = measure(other, args.phases, args.cases)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)], check=False)
    width = max(len(name) for name, _ in ours)
    for i, (name, value) in enumerate(ours):
        print(f"{name:<{width}}  {value:>14}" + (f"   {args.against}: {theirs[i][1]}" if theirs else ""))


if __name__ == "__main__":
    main()
