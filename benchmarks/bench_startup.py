"""Start-up: wall time of `gradcli eval` on the seed example against `python -c "import numpy"`
(the SPEC's yardstick) and, in the source-tree mode where installed, the same program as a PyTorch
script.

Two modes:

    python benchmarks/bench_startup.py [--rounds 15]
        the source tree: ``python -m gradcli`` with this checkout on PYTHONPATH, byte code compiled
        first (``compileall``): with PYTHONDONTWRITEBYTECODE set, a source checkout would otherwise
        recompile every module on every start and measure the compiler instead.

    python benchmarks/bench_startup.py --installed [--venv DIR] [--system-site-packages] [--rounds 15]
                                       [--baseline-venv DIR2]
        as a user has it: a virtual environment (made once, in DIR, default
        ``~/.cache/gradcli-bench/startup-venv``) with this checkout installed by ``pip install .``
        (non-editable, byte code compiled; reinstalled on every run so that it is the current
        tree), its dependencies from the package registry, or from this interpreter's site
        with ``--system-site-packages``. The installed ``gradcli`` console script (not
        ``python -m``) is timed against that environment's ``python -c "import numpy"``.
        ``--baseline-venv DIR2``: also time the ``gradcli`` already installed in DIR2 (say, from an
        earlier commit: ``git archive REF | tar -x -C /tmp/old && python -m venv DIR2 &&
        DIR2/bin/pip install /tmp/old``), interleaved in the same rounds: before and after in one run.

Every command runs as a fresh process, interleaved round by round so that load on the machine
hits all of them alike; the figures are medians of the rounds after one warm-up (which also fills
gradcli's parser cache and the OS page cache): wall time, and CPU time (user + system, which
load on a shared machine disturbs less). Targets (issue 16): the table at most 1.5x ``import
numpy``, ``--json`` at most 1.3x.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "seed0_variable.grad"
TARGETS = {"gradcli eval seed": 1.5, "gradcli eval seed --json": 1.3}
DEFAULT_VENV = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gradcli-bench" / "startup-venv"

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


def source_commands() -> dict[str, list[str]]:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "gradcli")], check=True)
    cmds = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import numpy": [sys.executable, "-c", "import numpy"],
        "gradcli eval seed": [sys.executable, "-m", "gradcli", "eval", "-f", str(SEED)],
        "gradcli eval seed --json": [sys.executable, "-m", "gradcli", "eval", "-f", str(SEED), "--json"],
    }
    import importlib.util
    if importlib.util.find_spec("torch") is not None:
        cmds["torch script"] = [sys.executable, "-c", TORCH_SCRIPT]
    return cmds


def _bin(venv: Path, name: str) -> str:
    scripts = venv / ("Scripts" if os.name == "nt" else "bin")
    return str(scripts / (name + (".exe" if os.name == "nt" else "")))


def installed_commands(venv: Path, system_site: bool) -> dict[str, list[str]]:
    """Make (once) the virtual environment, install this checkout into it (non-editable), compile
    its byte code, and return the commands run from it."""
    python = _bin(venv, "python")
    if not Path(python).exists():
        print(f"creating {venv} ...", file=sys.stderr)
        flags = ["--system-site-packages"] if system_site else []
        subprocess.run([sys.executable, "-m", "venv", *flags, str(venv)], check=True)
        deps = [] if system_site else [str(ROOT)]  # the first install takes the dependencies from the registry
        if deps:
            subprocess.run([python, "-m", "pip", "install", "--quiet", *deps], check=True)
    print(f"installing {ROOT} into {venv} (pip install ., not editable) ...", file=sys.stderr)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(ROOT)],
                   check=True)
    missing = subprocess.run([python, "-c", "import numpy, lark, typer, rich"], capture_output=True, text=True,
                             env=_clean_env(), cwd=venv)
    if missing.returncode:  # (--system-site-packages: the site of the interpreter a venv is made from, not a venv's)
        raise SystemExit(f"{venv} lacks gradcli's dependencies ({missing.stderr.strip().splitlines()[-1]}): "
                         f"remove it and run without --system-site-packages, or make it from an interpreter "
                         f"that has them")
    site = subprocess.run([python, "-c", "import gradcli, os; print(os.path.dirname(gradcli.__file__))"],
                          check=True, capture_output=True, text=True, env=_clean_env(), cwd=venv).stdout.strip()
    if site.startswith(str(ROOT)):
        raise SystemExit(f"the venv imports gradcli from the checkout ({site}), not from an install")
    subprocess.run([python, "-m", "compileall", "-q", site], check=True)
    gradcli = _bin(venv, "gradcli")
    return {
        "python -c pass": [python, "-c", "pass"],
        "import numpy": [python, "-c", "import numpy"],
        "gradcli eval seed": [gradcli, "eval", "-f", str(SEED)],
        "gradcli eval seed --json": [gradcli, "eval", "-f", str(SEED), "--json"],
    }


def baseline_commands(venv: Path) -> dict[str, list[str]]:
    """The same commands from another environment's install, as it is (nothing reinstalled)."""
    if not Path(_bin(venv, "gradcli")).exists():
        raise SystemExit(f"no gradcli installed in {venv}")
    return {
        "baseline: import numpy": [_bin(venv, "python"), "-c", "import numpy"],
        "baseline: gradcli eval seed": [_bin(venv, "gradcli"), "eval", "-f", str(SEED)],
        "baseline: gradcli eval seed --json": [_bin(venv, "gradcli"), "eval", "-f", str(SEED), "--json"],
    }


def _clean_env() -> dict:
    """The environment for the installed mode: no PYTHONPATH (it would shadow the install)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run_once(cmd: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd} failed: {proc.stderr.decode()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(cmds: dict[str, list[str]], env: dict, cwd: Path, rounds: int) -> dict[str, tuple[list, list]]:
    times: dict[str, tuple[list, list]] = {name: ([], []) for name in cmds}
    for cmd in cmds.values():  # warm-up: caches filled
        run_once(cmd, env, cwd)
    for _ in range(rounds):
        for name, cmd in cmds.items():
            wall, cpu = run_once(cmd, env, cwd)
            times[name][0].append(wall)
            times[name][1].append(cpu)
    return times


def report(times: dict[str, tuple[list, list]]) -> None:
    base_wall = statistics.median(times["import numpy"][0])
    base_cpu = statistics.median(times["import numpy"][1])
    print(f"{'command':36} {'wall s':>7} {'x numpy':>8} {'cpu s':>7} {'x numpy':>8}")
    for name, (walls, cpus) in times.items():
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        print(f"{name:36} {wall:7.3f} {wall / base_wall:8.2f} {cpu:7.3f} {cpu / base_cpu:8.2f}")
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, target in TARGETS.items():
        ratio = statistics.median(times[name][0]) / base_wall
        print(f"target: {name} <= {target:.2f}x import numpy (wall): {ratio:.2f}x "
              f"({'met' if ratio <= target else 'NOT met'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--installed", action="store_true",
                    help="time a non-editable install in a virtual environment (see --venv)")
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV, help=f"its directory (default {DEFAULT_VENV})")
    ap.add_argument("--system-site-packages", action="store_true",
                    help="a new venv takes the dependencies from this interpreter's site, not the registry")
    ap.add_argument("--baseline-venv", type=Path,
                    help="with --installed: also time the gradcli installed there, in the same rounds")
    args = ap.parse_args()
    if args.installed:
        # run outside the checkout, so that nothing in it shadows the install
        cmds, env, cwd = installed_commands(args.venv, args.system_site_packages), _clean_env(), args.venv
        if args.baseline_venv:
            cmds.update(baseline_commands(args.baseline_venv))
    else:
        cmds = source_commands()
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cwd = ROOT
    report(measure(cmds, env, cwd, args.rounds))


if __name__ == "__main__":
    main()
