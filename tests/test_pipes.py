"""Closed pipes (SPEC §1, README "Exit codes"): every command and output path, run as a real
process whose stdout is a real pipe that the reader closes early, ends quietly with status 141
(the status of a process that SIGPIPE ended, as ``yes | head`` gives), never with a traceback
and never with 1 (a failed check)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = 20

# 60 prints of a 30x30 tensor (under the 1000 elements torch summarises past): ~300 KB
BIG_PRINTS = "b = randn(30, 30)\nx = randn(3, requires_grad=True)\n" + "print(b)\n" * 60 + "y = (x * x).sum()\n"
CHAIN = "x = ones(1, requires_grad=True)\ny = x\n" + "y = y * 2\n" * 1500 + "y\n"  # > 64 KB drawn

CASES = {
    "ops table": ["ops"],
    "ops json": ["ops", "--json"],
    "eval table": ["eval", BIG_PRINTS],
    "eval json": ["eval", "x = randn(120, 120, requires_grad=True); y = (x * x).sum()", "--json"],
    "check table": ["check", BIG_PRINTS],
    "check json": ["check", BIG_PRINTS, "--json"],
    "graph tree": ["graph", CHAIN],
    "graph dot": ["graph", CHAIN, "--format", "dot"],
    "graph json": ["graph", CHAIN, "--json"],
}


QUICK = "examples/seed3_quickstart.grad"
# With the reader gone before the run starts, the first write meets the closed pipe: small
# programs suffice, and every output path is taken.
SMALL = {
    "ops table": ["ops"],
    "ops json": ["ops", "--json"],
    "eval table": ["eval", "-f", QUICK],
    "eval json": ["eval", "-f", QUICK, "--json"],
    "eval error json": ["eval", "mean(x +", "--json"],
    "check table": ["check", "-f", QUICK],
    "check json": ["check", "-f", QUICK, "--json"],
    "graph tree": ["graph", "-f", QUICK],
    "graph dot": ["graph", "-f", QUICK, "--format", "dot"],
    "graph json": ["graph", "-f", QUICK, "--json"],
}


def env():
    e = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1")
    e.pop("FORCE_COLOR", None)
    return e


def closed_pipe_run(args):
    """Run with stdout a pipe whose reader has already gone: every write meets the closed pipe."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.Popen([sys.executable, "-m", "gradcli", *args], stdout=w, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=env(), cwd=ROOT)
    finally:
        os.close(w)


@pytest.mark.parametrize("case", sorted(SMALL))
def test_closed_pipe_exits_141_quietly(case):
    statuses, errors = [], []
    for _ in range(0, RUNS, 5):  # five at a time: the machine is shared
        procs = [closed_pipe_run(SMALL[case]) for _ in range(5)]
        for p in procs:
            errors.append(p.communicate(timeout=300)[1].decode())
            statuses.append(p.returncode)
    assert statuses == [141] * RUNS, (statuses, errors)
    assert errors == [""] * RUNS


@pytest.mark.parametrize("case", sorted(CASES))
def test_reader_closes_after_10_bytes(case):
    """Like ``| head -c 10``: the reader takes 10 bytes and goes. Whether the writer meets the
    closed pipe depends on timing (all written before the reader left: 0), never on anything else."""
    for _ in range(4):
        proc = subprocess.run(["bash", "-c", 'set -o pipefail; "$@" | head -c 10 > /dev/null', "sh",
                               sys.executable, "-m", "gradcli", *CASES[case]],
                              capture_output=True, env=env(), cwd=ROOT, timeout=300)
        assert proc.returncode in (0, 141), proc
        assert proc.stderr == b""


@pytest.mark.parametrize("command", [
    "eval -f examples/seed3_quickstart.grad | head -1",
    "eval -f examples/seed3_quickstart.grad --json | head -c 10",
    "ops --json | head -1",
    "check 'mean(w * w)' -g 'w=tensor([1., 2., 3.])' --json | grep -q passed",
])
def test_shell_pipeline_under_pipefail(command):
    """The README's own pipelines in a real shell with ``set -o pipefail``: a small output fits
    the pipe's buffer (status 0) or meets the closed pipe (141); nothing else, nothing on stderr."""
    script = f"set -o pipefail; {sys.executable} -m gradcli {command}"
    for _ in range(10):
        proc = subprocess.run(["bash", "-c", script], capture_output=True, env=env(), cwd=ROOT, timeout=300)
        assert proc.returncode in (0, 141), proc
        assert proc.stderr == b""


def test_help_into_a_closed_pipe():
    """The typer path (help) too: click's own handler would exit 1."""
    script = f"set -o pipefail; {sys.executable} -m gradcli eval --help | head -c 1 > /dev/null"
    for _ in range(5):
        proc = subprocess.run(["bash", "-c", script], capture_output=True, env=env(), cwd=ROOT, timeout=300)
        assert proc.returncode in (0, 141), proc
        assert b"Traceback" not in proc.stderr
    for _ in range(5):  # and with the reader gone before help is written: always the closed pipe
        p = closed_pipe_run(["eval", "--help"])
        assert (p.communicate(timeout=300)[1], p.returncode) == (b"", 141)
