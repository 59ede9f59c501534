"""100,000-term program, end to end: parse, evaluate and back-propagate
`y = x + x + ... + x; z = y.sum()` through `gradcli eval` (in-process, so the figure is the
program's cost, not start-up), with the phases timed separately; PyTorch builds and
back-propagates the same chain where installed (it has no parser, so that row is eval+backward).

    python benchmarks/bench_parse.py [--terms 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import io
import statistics
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def program(terms: int) -> str:
    return "y = " + " + ".join(["x"] * terms) + "\nz = y.sum()\n"


def gradcli_phases(source: str) -> dict[str, float]:
    import gradcli
    from gradcli.lang import parser
    from gradcli.lang.evaluator import Evaluator  # noqa: F401  (imported before timing)
    from gradcli.cli import main
    t0 = time.perf_counter()
    parser.parse(source)
    t1 = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        code = main(["eval", source, "-g", "x=ones(2,2)", "--json"])
    t2 = time.perf_counter()
    assert code == 0, code
    x = gradcli.ones(2, 2, requires_grad=True)
    t3 = time.perf_counter()
    y = x
    for _ in range(source.count("+")):
        y = y + x
    y.sum().backward()
    t4 = time.perf_counter()
    return {"parse": t1 - t0, "eval end to end": t2 - t1, "library fwd+bwd": t4 - t3}


def torch_chain(terms: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    x = torch.ones(2, 2, requires_grad=True)
    t0 = time.perf_counter()
    y = x
    for _ in range(terms - 1):
        y = y + x
    y.sum().backward()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--terms", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    source = program(args.terms)
    print(f"{args.terms:,}-term program, {len(source):,} bytes; gc enabled: {gc.isenabled()}")
    gradcli_phases(program(100))  # warm-up: parser cache, imports
    runs = [gradcli_phases(source) for _ in range(args.rounds)]
    for key in runs[0]:
        print(f"  gradcli {key:18} {statistics.median(r[key] for r in runs):7.3f} s")
    total = statistics.median(r["eval end to end"] for r in runs)
    t = [torch_chain(args.terms) for _ in range(args.rounds)]
    if t[0] is not None:
        tm = statistics.median(t)
        lib = statistics.median(r["library fwd+bwd"] for r in runs)
        print(f"  torch   {'fwd+bwd':18} {tm:7.3f} s   (gradcli library / torch: {lib / tm:.2f}x)")
    print(f"\ntarget: parse + evaluate + backward under 2 s: {total:.2f} s "
          f"({'met' if total < 2.0 else 'NOT met'})")


if __name__ == "__main__":
    main()
