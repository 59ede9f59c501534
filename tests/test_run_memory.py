"""What a run leaves to the cyclic collector, and how the command ends.

- An evaluator holds no reference cycle of its own (its print builtin and call chain reach it
  weakly): once a run is dropped, reference counting frees its variables and their whole graph
  (before, a full collection found them: ~0.16 s after a 100,000-term program).
- A walk of one long expression (from 20,000 operators) freezes what it made when it resumes
  the collector, as a long program's parse does: the graph is alive, and the next young
  collection would traverse all of it.
- ``gradcli`` (the console script, ``python -m gradcli``) ends with ``os._exit`` once its output
  is flushed: no teardown of the program's objects, the same output and status."""

import contextlib
import gc
import io
import os
import subprocess
import sys
import weakref

import pytest

from gradcli.cli import main
from gradcli.lang.evaluator import Evaluator, _FREEZE_AFTER, _PAUSE_AFTER

PROGRAMS = ["s = x * 1.5 + sin(x) + y / 2\nz = s.sum()",
            "s = x * 1.5\nprint(s)\nz = s.sum()",
            "z = sum([x * i for i in range(3)]).sum()\nprint(z, x.grad)"]


def _run(program, *options):
    with contextlib.redirect_stdout(io.StringIO()):
        return main(["eval", program, "-g", "x=ones(2,2)", "-g", "y=ones(2,2)", *options])


@pytest.mark.parametrize("options", [(), ("--json",)])
@pytest.mark.parametrize("program", PROGRAMS)
def test_a_dropped_run_leaves_nothing_to_the_cyclic_collector(program, options):
    assert _run(program, *options) == 0  # warm: imports, caches
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        assert _run(program, *options) == 0
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


def test_an_evaluator_is_freed_by_reference_counting():
    ev = Evaluator()
    ev.run_statement_source("x", _leaf_call(), True, "-g")
    ref = weakref.ref(ev)
    x = weakref.ref(ev.env["x"])
    enabled = gc.isenabled()
    gc.disable()
    try:
        del ev
        assert ref() is None and x() is None
    finally:
        if enabled:
            gc.enable()


def _leaf_call():
    from gradcli.lang import parser
    return parser.parse("ones(2)\n").body[0].value


def test_print_and_calls_still_work_through_the_weak_references():
    ev = Evaluator()
    from gradcli.lang import parser
    result = ev.run(parser.parse("a = [1, 2]\nprint(len(a), 'x')\nb = max(a)\n"))
    assert result.error is None and result.printed == ["2 x"] and ev.env["b"] == 2
    assert ev.builtins["print"].__name__ == "_print"


def test_a_long_walk_freezes_what_it_made():
    from gradcli.lang import parser
    terms = _FREEZE_AFTER + 10
    program = parser.parse("s = " + " + ".join(["x * 2"] * (terms // 2)) + "\n")
    short = parser.parse("s = " + " + ".join(["x"] * (_PAUSE_AFTER + 10)) + "\n")
    gc.unfreeze()
    try:
        ev = Evaluator(auto_backward=False)
        ev.run_statement_source("x", _leaf_call(), True, "-g")
        assert ev.run(short).error is None
        assert gc.get_freeze_count() == 0 and gc.isenabled()  # paused, not long enough to freeze
        assert ev.run(program).error is None
        assert gc.get_freeze_count() >= terms and gc.isenabled()
        frozen = gc.get_freeze_count()
        del ev  # its graph is freed (and leaves the frozen generation) all the same
        assert gc.get_freeze_count() <= frozen - terms
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("args, status, out", [
    (["eval", "y = (x * 3).sum()", "-g", "x=ones(2)", "--json"], 0, '"name": "y"'),
    (["eval", "y = nope"], 2, ""),
    (["check", "y = (x * 3).sum()", "-g", "x=ones(2)"], 0, ""),
    (["eval", "y = (x * 3).sum()\nassert y.item() == 7, 'not seven'", "-g", "x=ones(2)"], 1, ""),
])
def test_the_command_ends_with_its_status_and_whole_output(args, status, out):
    """``python -m gradcli`` ends through os._exit: what it wrote to a pipe arrives whole, with its
    status (stdout is a pipe here: block-buffered, so only an explicit flush delivers it)."""
    done = subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "100"}, timeout=120)
    assert done.returncode == status, done.stderr
    assert out in done.stdout
    if "--json" in args:
        import json
        assert json.loads(done.stdout)["error"] is None
    if status == 2:
        assert "name 'nope' is not defined" in done.stderr
    if status == 1:
        assert "not seven" in done.stderr
