"""Loop-heavy programs end to end, gradcli against the same script under PyTorch, and the
evaluator's cost per executed statement.

The programs are ``benchmarks/loops/*.grad``: PyTorch code as written (``import torch``,
``for step in range(...)``, ``with torch.no_grad(): w -= lr * w.grad``), so each one runs
unchanged as ``python FILE`` under torch and as ``gradcli eval -f FILE``.

1. End to end, as a user runs them: ``python -m gradcli eval -f FILE --json`` and the same with
   the default table (this checkout: ``PYTHONPATH`` is set to it; ``--gradcli gradcli`` runs the
   installed script instead) against ``python FILE`` (torch's import included; torch's default
   threads, and one thread through ``OMP_NUM_THREADS=1``: on a small busy machine torch's thread
   pool can cost more than its ops), each a fresh process, engines alternating round by round;
   medians and gradcli / torch ratios.
2. Where the time goes, in one process (CPU time, so other processes' load counts less): the
   program run by the evaluator (parsed once, outside the timing); the same program text run
   as Python with ``torch`` bound to the very functions the language calls (the op registry's,
   through ``gradcli.lang.modules``): the ops alone; and under torch. Evaluator time minus the
   ops' time, over the statements and loop iterations executed (the evaluator's steps), is the
   evaluator's own cost per statement.
3. Trivial loops (``pass``, ``a = 1``, ``a = a + 1``): statements per second of the evaluator alone.

    python benchmarks/bench_loop.py [--rounds 5] [--programs sgd mlp control_flow] [--gradcli CMD]
"""

from __future__ import annotations

import argparse
import builtins
import os
import shlex
import subprocess
import sys
import time
import types
from pathlib import Path

from _common import ROOT, import_torch, machine, median, ratio, table

LOOPS = Path(__file__).resolve().parent / "loops"
TRIVIAL = {
    "pass": "for i in range(200000):\n    pass\n",
    "a = 1": "for i in range(200000):\n    a = 1\n",
    "a = a + 1": "a = 0\nfor i in range(200000):\n    a = a + 1\n",
    "x = x * 1.0 (2x2 tensor)": "import torch\nx = torch.ones(2, 2)\nfor i in range(100000):\n    x = x * 1.0\n",
}


def load() -> str:
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())


# -- 1. end to end ---------------------------------------------------------------------------------

def end_to_end(programs, rounds: int, gradcli_cmd: list[str]) -> list:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rows = []
    for name in programs:
        path = str(LOOPS / f"{name}.grad")
        commands = {"gradcli --json": gradcli_cmd + ["eval", "-f", path, "--json"],
                    "gradcli (table)": gradcli_cmd + ["eval", "-f", path],
                    "torch": [sys.executable, path],
                    "torch, 1 thread": [sys.executable, path]}
        envs = {label: env for label in commands}
        envs["torch, 1 thread"] = dict(env, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        times = {k: [] for k in commands}
        for i in range(rounds + 1):  # the first round warms the page cache and byte code
            for label, cmd in commands.items():
                t0 = time.perf_counter()
                proc = subprocess.run(cmd, capture_output=True, text=True, env=envs[label], cwd=ROOT)
                elapsed = time.perf_counter() - t0
                if proc.returncode != 0:
                    raise SystemExit(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
                if i:
                    times[label].append(elapsed)
        base, single = median(times["torch"]), median(times["torch, 1 thread"])
        for label, ts in times.items():
            rows.append([name, label, f"{median(ts):.3f}", f"{min(ts):.3f}", ratio(median(ts), base),
                         ratio(median(ts), single)])
    return rows


# -- 2. where the time goes ---------------------------------------------------------------------

def _namespace(module_name: str):
    """The module as the language sees it, with the functions themselves (a BuiltinRef's ``fn``)."""
    from gradcli.lang import modules
    from gradcli.lang.values import BuiltinRef
    ns = types.SimpleNamespace()
    for key, value in modules.members(module_name).items():
        if isinstance(value, BuiltinRef):
            value = value.fn
        elif isinstance(value, modules.Module):
            value = _namespace(value.name)
        setattr(ns, key, value)
    return ns


def _python_runner(text: str, torch_module, print_=lambda *args, **kwargs: None):
    """The program text as a Python function of no arguments; ``import torch...`` binds
    ``torch_module`` and ``print`` is ``print_`` (nothing, by default)."""
    code = compile(text, "<program>", "exec")

    def importer(name, globals=None, locals=None, fromlist=(), level=0):
        if name.split(".")[0] == "torch":
            return torch_module
        return builtins.__import__(name, globals, locals, fromlist, level)

    def run():
        env = {"__builtins__": dict(vars(builtins), __import__=importer, print=print_)}
        exec(code, env)
    return run


def _evaluator_runner(text: str):
    from gradcli.cli.session import engine_state
    from gradcli.lang import parser
    from gradcli.lang.evaluator import Evaluator
    program = parser.parse(text)
    steps = [0]

    def run():
        with engine_state():
            ev = Evaluator(auto_backward=False)
            result = ev.run(program)
            if result.error is not None:
                raise SystemExit(f"the program failed: {result.error}")
            steps[0] = ev.steps
    return run, steps


def _cpu_rounds(fns: dict, rounds: int) -> dict:
    """CPU seconds of each function, alternating round by round after one warm-up; minimum and median."""
    times = {k: [] for k in fns}
    for i in range(rounds + 1):
        for name, fn in fns.items():
            t0 = time.process_time()
            fn()
            if i:
                times[name].append(time.process_time() - t0)
    return times


def split(programs, rounds: int) -> list:
    torch = import_torch(1)
    rows = []
    library = _namespace("torch")
    for name in programs:
        text = (LOOPS / f"{name}.grad").read_text()
        evaluate, steps = _evaluator_runner(text)
        fns = {"evaluator": evaluate, "library": _python_runner(text, library)}
        if torch is not None:
            fns["torch"] = _python_runner(text, torch)
        times = _cpu_rounds(fns, rounds)
        ev, lib = median(times["evaluator"]), median(times["library"])
        per_step = (ev - lib) / steps[0] * 1e6
        rows.append([name, f"{steps[0]:,}", f"{ev:.3f}", f"{lib:.3f}",
                     f"{median(times['torch']):.3f}" if torch is not None else "-",
                     f"{(ev - lib) / ev:.0%}", f"{per_step:.2f}", ratio(lib, median(times["torch"]) if torch else None)])
    return rows


def trivial(rounds: int) -> list:
    rows = []
    for label, text in TRIVIAL.items():
        run, steps = _evaluator_runner(text)
        t = median(_cpu_rounds({"run": run}, rounds)["run"])
        rows.append([label, f"{steps[0]:,}", f"{t:.3f}", f"{t / steps[0] * 1e6:.2f}", f"{steps[0] / t:,.0f}"])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--programs", nargs="+", default=["sgd", "mlp", "control_flow"])
    ap.add_argument("--gradcli", default=None, help="the gradcli command (default: python -m gradcli, this checkout)")
    ap.add_argument("--skip", nargs="*", default=(), choices=("end-to-end", "split", "trivial"))
    args = ap.parse_args()
    gradcli_cmd = shlex.split(args.gradcli) if args.gradcli else [sys.executable, "-m", "gradcli"]
    print(machine() + f"; {load()}")
    if "end-to-end" not in args.skip:
        print(f"\nEnd to end (wall seconds, fresh processes, {args.rounds} rounds alternating; {load()}):")
        print(table(end_to_end(args.programs, args.rounds, gradcli_cmd),
                    ["program", "run", "median s", "min s", "x torch", "x torch 1 thread"]))
    if "split" not in args.skip:
        print(f"\nIn one process (CPU seconds, medians of {args.rounds}; torch 1 thread; {load()}):")
        print(table(split(args.programs, args.rounds),
                    ["program", "steps", "evaluator s", "ops alone (library) s", "torch s", "evaluator share",
                     "evaluator us/step", "ops: library / torch"]))
    if "trivial" not in args.skip:
        print(f"\nThe evaluator alone (CPU seconds, medians of {args.rounds}; {load()}):")
        print(table(trivial(args.rounds), ["loop body", "steps", "s", "us/step", "steps/s"]))
    print(f"\n{load()}")


if __name__ == "__main__":
    main()
