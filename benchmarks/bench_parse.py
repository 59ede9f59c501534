"""100,000-term programs end to end: parse, evaluate and back-propagate, phase by phase, beside
Python's own parser (``ast.parse``) and PyTorch running the same program.

Two programs (``--program``): ``x + x + ... + x`` and the mixed terms of issue 16, cycling
``x * 1.5``, ``sin(x)``, ``y / 2``, ``x * y``, ``exp(y) * 0.5``, ``(x - y) * 2`` joined by ``+``;
each is ``s = <terms>`` then ``z = s.sum()``, with leaves ``-g x=ones(2,2) -g y=ones(2,2)``.

gradcli's phases, in-process (the program's cost, not start-up): ``parse`` (the text to an
AST), ``eval`` (run it, auto-backward off), ``backward`` (``z.backward()``), and ``end to end``:
``gradcli eval --json`` in-process (parse, run, auto-backward, the JSON document: the target's
figure); and ``the command``: ``python -m gradcli eval --json`` with the program on its standard
input, a process of its own, start-up and exit included, as a user runs it.

Anchors, in the same rounds (gradcli, then Python, then torch, round after round; medians):
- ``ast.parse`` of the same text: it fails (RecursionError) on a long chain, so the first term
  count where it fails is printed, and it is timed on two texts with the same terms that it
  does parse: the chain cut into statements of 1,000 terms (``s0 = ...``, ``s1 = ...``, then
  ``s = s0 + s1 + ...``), and one flat list (``s = sum([t1, t2, ...])``); gradcli parses both
  too, so each ratio compares one text; ast.parse is timed as Python runs it (collector on) and
  with the collector paused, as gradcli's parser pauses it;
- PyTorch (threads 1) runs the statements form (compiled beforehand; Python cannot compile the
  chain in one expression): eval, then backward; the gradients are checked against gradcli's.

    python benchmarks/bench_parse.py [--terms 100000] [--rounds 5] [--program mixed|sum|both]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MIXED = ["x * 1.5", "sin(x)", "y / 2", "x * y", "exp(y) * 0.5", "(x - y) * 2"]
LEAVES = ["-g", "x=ones(2,2)", "-g", "y=ones(2,2)"]


def terms_of(kind: str, n: int) -> list[str]:
    return ["x"] * n if kind == "sum" else [MIXED[i % len(MIXED)] for i in range(n)]


def chain_text(terms: list[str]) -> str:
    return "s = " + " + ".join(terms) + "\nz = s.sum()\n"


def statements_text(terms: list[str], per: int = 1000) -> str:
    parts = [terms[i:i + per] for i in range(0, len(terms), per)]
    lines = [f"s{i} = " + " + ".join(p) for i, p in enumerate(parts)]
    return "\n".join(lines) + "\ns = " + " + ".join(f"s{i}" for i in range(len(parts))) + "\nz = s.sum()\n"


def list_text(terms: list[str]) -> str:
    return "s = sum([" + ", ".join(terms) + "])\nz = s.sum()\n"


def first_failing_terms(kind: str, limit: int) -> int | None:
    """The fewest terms whose chain ``ast.parse`` refuses (RecursionError), or None up to limit."""
    def fails(n):
        try:
            ast.parse(chain_text(terms_of(kind, n)))
            return False
        except (RecursionError, MemoryError):
            return True
    if not fails(limit):
        return None
    lo, hi = 1, limit  # fails(hi), not fails(lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fails(mid) else (mid, hi)
    return hi


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def timed_paused(fn):
    """``timed`` with the cyclic collector paused, as gradcli's parser runs (ast.parse runs with
    it on: on these texts most of its time is the collector's)."""
    gc.disable()
    try:
        return timed(fn)
    finally:
        gc.enable()


def gradcli_round(text: str) -> dict:
    """One round of gradcli's figures. ``end to end`` comes first, from a heap without the phases'
    leftovers: timed after them, it ran beside the eval phase's graph and tree (a million objects
    the program's own allocations then page and collect around: 0.15-0.3 s of the 2 s)."""
    from gradcli.cli import main, session
    from gradcli.lang import parser
    from gradcli.lang.evaluator import Evaluator
    out = {}
    gc.collect()
    with contextlib.redirect_stdout(io.StringIO()):
        out["end to end"], code = timed(lambda: main(["eval", text, *LEAVES, "--json"]))
    assert code == 0, code
    out["parse"], _ = timed(lambda: parser.parse(text))
    opts = session.Options(source=text, grads=[LEAVES[1], LEAVES[3]], json=True, no_backward=True)
    prepared = session.prepare(opts)
    interp = Evaluator(auto_backward=False)
    out["eval"], result = timed(lambda: session.run_prepared(opts, prepared, interp, configure_first=False))
    assert result.error is None, result.error
    out["backward"], _ = timed(lambda: interp.env["z"].backward())
    out["grads"] = [_listed(interp.env[n].grad) for n in ("x", "y")]
    del prepared, interp
    out["the command"] = command_time(text)
    return out


ROOT = Path(__file__).resolve().parent.parent


def command_time(text: str) -> float:
    """``python -m gradcli eval --json`` of ``text`` (on its standard input) in a process of its
    own: wall time from the start to the exit (this checkout's gradcli)."""
    with tempfile.TemporaryFile("w+") as program:
        program.write(text)
        program.seek(0)
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "gradcli", "eval", *LEAVES, "--json"], stdin=program,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=str(ROOT))
        elapsed = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr
    return elapsed


def torch_round(torch, code) -> dict:
    env = {"x": torch.ones(2, 2, requires_grad=True), "y": torch.ones(2, 2, requires_grad=True),
           "sin": torch.sin, "exp": torch.exp, "sum": sum}
    out = {}
    out["eval"], _ = timed(lambda: exec(code, env))
    out["backward"], _ = timed(lambda: env["z"].backward())
    out["grads"] = [_listed(env[n].grad) for n in ("x", "y")]
    return out


def _listed(grad) -> list:
    return [] if grad is None else [v for row in grad.tolist() for v in row]  # y unused: no grad


def median(rounds: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rounds)


def run(kind: str, n: int, rounds: int, torch) -> None:
    terms = terms_of(kind, n)
    chain, split, flat = chain_text(terms), statements_text(terms), list_text(terms)
    name = "x + x + ..." if kind == "sum" else "mixed terms"
    print(f"\n{name}: {n:,} terms; the chain {len(chain):,} bytes")
    failing = first_failing_terms(kind, n)
    print("  ast.parse of the chain: " + (f"RecursionError from {failing:,} terms on"
                                          if failing else "parses"))
    code = compile(split, "<statements>", "exec") if torch else None
    from gradcli.lang import parser
    parser.parse(chain_text(terms[:50]))  # warm-up: imports, the grammar, the fast path's tables
    g, py, t = [], [], []
    for _ in range(rounds):
        g.append(gradcli_round(chain))
        py.append({
            "gradcli statements": timed(lambda: parser.parse(split))[0],
            "ast statements": timed(lambda: ast.parse(split))[0],
            "ast statements paused": timed_paused(lambda: ast.parse(split))[0],
            "gradcli list": timed(lambda: parser.parse(flat))[0],
            "ast list": timed(lambda: ast.parse(flat))[0],
            "ast list paused": timed_paused(lambda: ast.parse(flat))[0],
        })
        if torch:
            t.append(torch_round(torch, code))
    print("  gradcli (chain)      " + "  ".join(f"{k} {median(g, k):.3f} s" for k in
                                               ("parse", "eval", "backward", "end to end",
                                                "the command")))
    for form in ("statements", "list"):
        gs, ps, pp = (median(py, f"gradcli {form}"), median(py, f"ast {form}"),
                      median(py, f"ast {form} paused"))
        print(f"  parse, {form:10}   gradcli {gs:.3f} s   ast.parse {ps:.3f} s ({pp:.3f} s with the "
              f"collector paused)   gradcli / ast.parse {gs / ps:.2f}x ({gs / pp:.2f}x)")
    if torch:
        te, tb = median(t, "eval"), median(t, "backward")
        ok = all(len(gr) == len(tr) and all(abs(a - b) <= 1e-4 * max(1.0, abs(b)) for a, b in zip(gr, tr))
                 for gr, tr in zip(g[0]["grads"], t[0]["grads"]))
        ge = median(g, "eval") + median(g, "backward")
        print(f"  torch (statements)   eval {te:.3f} s  backward {tb:.3f} s   (gradients equal: {ok})")
        print(f"  eval + backward: gradcli / torch {ge / (te + tb):.2f}x;   "
              f"end to end with parsing: gradcli / torch {median(g, 'end to end') / (te + tb):.2f}x")
    total = median(g, "end to end")
    print(f"  target: parse + evaluate + backward under 2 s: {total:.2f} s "
          f"({'met' if total < 2.0 else 'NOT met'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--terms", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--program", choices=["mixed", "sum", "both"], default="both")
    args = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    print(f"Python {sys.version.split()[0]}; torch {torch.__version__ if torch else 'not installed'}")
    for kind in (["sum", "mixed"] if args.program == "both" else [args.program]):
        run(kind, args.terms, args.rounds, torch)


if __name__ == "__main__":
    main()
