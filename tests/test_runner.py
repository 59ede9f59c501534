"""``gradcli test``: collection, -k and --shard, isolation of each file, exit codes, the pytest-style
report, --json, JUnit XML in the shape CI reporters read, -x, --gradcheck, -j workers (crashes and
overruns included), and the issue's done-when: 300 generated programs through a real subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gradcli.cli.commands import COMMANDS
from gradcli.cli.fast import main, parse
from gradcli.cli.testing import collect, workers
from gradcli.cli.testing.execute import Settings, run_file
from gradcli.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent

PASS = """x = tensor([1.0, 2.0], requires_grad=True)
y = (x * x).sum()
y.backward()
assert allclose(x.grad, 2 * x), "dy/dx is 2x"
"""
FAIL = PASS.replace("2 * x)", "3 * x)")
SYNTAX = "x = ones(2)\ny = (x +\n"
SHAPE = "x = ones(2)\ny = x + ones(3)\n"


def write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def gradcli_test(*args, capsys):
    """``gradcli test ARGS`` in this process: (exit code, stdout, stderr)."""
    rc = main(["test", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def summary_line(out: str) -> str:
    return re.sub(r" in \d+\.\d\d s$", " in S s", out.rstrip("\n").split("\n")[-1])


# -- collection -----------------------------------------------------------------------------------

def test_collects_grad_files_recursively_in_sorted_order(tmp_path, monkeypatch):
    write(tmp_path, {"b.grad": PASS, "a/z.grad": PASS, "a/b/c.grad": PASS, "a.grad": PASS, "notes.txt": "x",
                     ".hidden/h.grad": PASS, "node_modules/m.grad": PASS, "a/__pycache__/p.grad": PASS})
    monkeypatch.chdir(tmp_path)
    items = collect.collect(["b.grad", "."])  # the argument order does not matter; b.grad is listed once
    assert [i.display for i in items] == ["a/b/c.grad", "a/z.grad", "a.grad", "b.grad"]
    assert [(i.classname, i.name) for i in items][:2] == [("a.b", "c.grad"), ("a", "z.grad")]
    assert items[3].classname == "gradcli"
    assert [i.index for i in items] == [0, 1, 2, 3]


def test_a_file_named_directly_is_run_whatever_its_suffix(tmp_path, monkeypatch):
    write(tmp_path, {"prog.txt": PASS})
    monkeypatch.chdir(tmp_path)
    assert [i.display for i in collect.collect(["prog.txt"])] == ["prog.txt"]


def test_paths_outside_the_working_directory_are_shown_absolute(tmp_path, monkeypatch):
    write(tmp_path, {"in/a.grad": PASS})
    monkeypatch.chdir(tmp_path / "in")
    other = tmp_path / "out"
    write(other, {"b.grad": PASS})
    shown = [i.display for i in collect.collect([".", str(other)])]
    assert shown == [str(other / "b.grad"), "a.grad"]  # sorted by path components: "" (root) first


def test_deep_directories_are_walked_without_recursion(tmp_path):
    deep = tmp_path
    for i in range(150):
        deep = deep / "d"
    write(deep, {"x.grad": PASS})
    (item,) = collect.collect([str(tmp_path)])
    assert item.path.endswith("/d/x.grad")


@pytest.mark.parametrize("expr, wanted", [
    ("hooks", {"suite/hooks_basic.grad", "suite/slow/hooks_big.grad"}),
    ("HOOKS and not slow", {"suite/hooks_basic.grad"}),
    ("slow or matmul", {"suite/slow/hooks_big.grad", "suite/slow/sum.grad", "suite/matmul.grad"}),
    ("not (slow or hooks)", {"suite/matmul.grad", "other/views.grad"}),
    ("suite and (matmul or basic)", {"suite/matmul.grad", "suite/hooks_basic.grad"}),
    ("not not views", {"other/views.grad"}),
    ("slow/sum", {"suite/slow/sum.grad"}),
    ("matmul and hooks or views", {"other/views.grad"}),  # 'and' binds tighter than 'or', as in Python
])
def test_k_selects_like_pytest(expr, wanted):
    paths = ["suite/hooks_basic.grad", "suite/slow/hooks_big.grad", "suite/slow/sum.grad",
             "suite/matmul.grad", "other/views.grad"]
    matches = collect.keyword_matcher(expr)
    assert {p for p in paths if matches(p)} == wanted


@pytest.mark.parametrize("expr, why", [
    ("", "the expression is empty"), ("a and", "it ends without a word"), ("a b", "expected 'and' or 'or' before 'b'"),
    ("(a or b", "unbalanced '('"), ("a)", "unbalanced ')'"), ("and a", "expected a word before 'and'"),
])
def test_k_rejects_malformed_expressions(expr, why):
    with pytest.raises(UsageError) as info:
        collect.keyword_matcher(expr)
    assert info.value.message == f"-k {expr!r}: {why}"


def test_k_deeply_parenthesised_needs_no_recursion():
    expr = "(" * 5000 + "abc" + ")" * 5000
    assert collect.keyword_matcher(expr)("x/abc.grad")


def test_shards_are_disjoint_balanced_and_cover_the_suite(tmp_path):
    items = [collect.Item(f"/p{i}", f"p{i:02}.grad", i) for i in range(23)]
    shards = [collect.select(items, None, (k, 4)) for k in range(1, 5)]
    assert sorted(i.index for s in shards for i in s) == list(range(23))
    assert [len(s) for s in shards] == [6, 6, 6, 5]
    assert [i.index for i in shards[1]] == [1, 5, 9, 13, 17, 21]


@pytest.mark.parametrize("spec", ["0/3", "4/3", "1/0", "a/b", "2", "1/2/3", "-1/2"])
def test_bad_shard_specs_are_usage_errors(spec):
    with pytest.raises(UsageError, match="--shard expects K/N"):
        collect.parse_shard(spec)


# -- one file, in isolation ------------------------------------------------------------------------

def test_each_file_starts_from_the_same_engine_state(tmp_path):
    """A file that turns grad mode off, draws random numbers and changes the default dtype leaves
    nothing behind: the next file sees what it would see alone, with the random generator seeded 0."""
    write(tmp_path, {
        "a_messy.grad": "set_grad_enabled(False)\nr = rand(5)\nw = ones(2, dtype=float64)\n",
        "b_clean.grad": "print(rand(3))\nx = ones(2, requires_grad=True)\ny = x * 2\n"
                        "assert y.requires_grad, 'grad mode is on'\nassert is_grad_enabled()\n"
                        "assert rand(1).dtype == float32\n",
    })
    items = collect.collect([str(tmp_path)])
    alone = run_file(items[1], Settings())
    run_file(items[0], Settings())
    after = run_file(items[1], Settings())
    assert after.outcome == alone.outcome == "passed"
    assert after.printed == alone.printed
    eval_out = subprocess.run([sys.executable, "-m", "gradcli", "eval", "print(rand(3))", "--seed", "0", "--json"],
                              capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert after.printed == json.loads(eval_out)["printed"]


def test_seed_option_changes_every_files_numbers(tmp_path):
    write(tmp_path, {"r.grad": "print(rand(2))\n"})
    (item,) = collect.collect([str(tmp_path)])
    assert run_file(item, Settings(seed=0)).printed != run_file(item, Settings(seed=1)).printed
    assert run_file(item, Settings(seed=1)).printed == run_file(item, Settings(seed=1)).printed


def test_timeout_is_an_error_for_that_file_only(tmp_path):
    slow = "x = ones(400, 400)\n" + "y = (x @ x @ x).sum()\n" * 400
    write(tmp_path, {"a_slow.grad": slow, "b_ok.grad": PASS})
    items = collect.collect([str(tmp_path)])
    start = time.perf_counter()
    res = run_file(items[0], Settings(timeout=0.3))
    assert time.perf_counter() - start < 10  # stopped, not run to the end
    assert res.outcome == "error" and res.error.kind == "limit"
    assert res.error.message == "the program ran longer than --timeout 0.3 s"
    assert run_file(items[1], Settings(timeout=0.3)).outcome == "passed"


def test_outcomes_and_problem_records(tmp_path):
    write(tmp_path, {"pass.grad": PASS, "fail.grad": FAIL, "syntax.grad": SYNTAX, "shape.grad": SHAPE,
                     "binary.grad": "x = 1\n\x00\n"})
    results = {i.name: run_file(i, Settings()) for i in collect.collect([str(tmp_path)])}
    assert {n: r.outcome for n, r in results.items()} == {
        "binary.grad": "error", "fail.grad": "failed", "pass.grad": "passed", "shape.grad": "error",
        "syntax.grad": "error"}
    assert [p.record() for p in results["fail.grad"].failures] == [
        {"kind": "assert", "line": 4, "column": 1, "message": "assertion failed: dy/dx is 2x",
         "where": "allclose(tensor([2., 4.]), tensor([3., 6.], grad_fn=<MulBackward0>))"}]
    assert results["fail.grad"].checks == [{"line": 4, "passed": False, "message": "dy/dx is 2x"}]
    assert (results["syntax.grad"].error.kind, results["syntax.grad"].error.line) == ("syntax", 2)
    assert (results["shape.grad"].error.kind, results["shape.grad"].error.line) == ("shape", 2)
    assert results["binary.grad"].error.message.endswith(
        "contains NUL bytes: it looks like a binary file, not a program")


# -- the command: exit codes and the report ----------------------------------------------------------

def test_all_passing_exits_0_with_the_summary(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"a.grad": PASS, "b/c.grad": PASS})
    monkeypatch.chdir(tmp_path)
    rc, out, err = gradcli_test("-j", "1", capsys=capsys)
    assert (rc, err) == (0, "")
    assert out.count("\n") == 1 and summary_line(out) == "2 passed, 0 failed, 0 errors in S s"


def test_a_failure_prints_the_caret_report_and_exits_1(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"ok.grad": PASS, "bad.grad": FAIL, "broken.grad": SYNTAX})
    monkeypatch.chdir(tmp_path)
    rc, out, _ = gradcli_test("-j", "1", capsys=capsys)
    assert rc == 1
    body = out.rsplit("\n", 2)[0]
    assert body == (
        "FAILED bad.grad:4:1: assertion failed: dy/dx is 2x\n"
        '   | assert allclose(x.grad, 3 * x), "dy/dx is 2x"\n'
        "   | ^\n"
        "where: allclose(tensor([2., 4.]), tensor([3., 6.], grad_fn=<MulBackward0>))\n"
        "\n"
        "ERROR broken.grad:2:5: syntax error: '(' was never closed\n"
        "   | y = (x +\n"
        "   |     ^\n")
    assert summary_line(out) == "1 passed, 1 failed, 1 error in S s"


@pytest.mark.parametrize("args, message", [
    (["missing"], "error: no such file or directory: missing"),
    (["empty"], "error: no *.grad files found in empty"),
    (["-k", "nothing"], "error: -k 'nothing' selects none of the 1 programs collected"),
    (["--shard", "3/2"], "error: --shard expects K/N with 1 <= K <= N, e.g. --shard 2/4; got '3/2'"),
    (["-j", "0"], "error: -j expects a number of worker processes, 1 or more; got 0"),
    (["--timeout", "-1"], "error: --timeout must be a positive number of seconds (0: no limit)"),
    (["--eps", "0"], "error: --eps must be a positive number, not 0"),
    (["--junit-xml", "no/such/dir/r.xml"], "error: --junit-xml no/such/dir/r.xml: no such directory: no/such/dir"),
])
def test_usage_errors_exit_2(tmp_path, monkeypatch, capsys, args, message):
    write(tmp_path, {"a.grad": PASS})
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    rc, out, err = gradcli_test(*args, capsys=capsys)
    assert (rc, out) == (2, "")
    assert err.split("\n")[0] == message
    rc, out, _ = gradcli_test(*args, "--json", capsys=capsys)
    doc = json.loads(out)
    assert rc == 2 and doc["summary"] is None and doc["error"]["kind"] == "usage"


def test_an_empty_shard_is_not_an_error(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"a.grad": PASS})
    monkeypatch.chdir(tmp_path)
    rc, out, _ = gradcli_test("--shard", "2/2", capsys=capsys)
    assert rc == 0 and summary_line(out) == "0 passed, 0 failed, 0 errors, 1 deselected in S s"


def test_json_is_one_document_with_every_file_and_the_summary(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"ok.grad": PASS + "print(x.grad)\n", "bad.grad": FAIL, "broken.grad": SHAPE})
    monkeypatch.chdir(tmp_path)
    rc, out, err = gradcli_test("--json", "-j", "1", "-k", "not nothing", capsys=capsys)
    doc = json.loads(out)
    assert rc == 1
    assert [(r["path"], r["outcome"]) for r in doc["results"]] == [
        ("bad.grad", "failed"), ("broken.grad", "error"), ("ok.grad", "passed")]
    s = doc["summary"]
    assert (s["collected"], s["selected"], s["run"], s["passed"], s["failed"], s["errors"], s["stopped_early"]) == \
        (3, 3, 3, 1, 1, 1, False)
    assert doc["results"][2]["printed"] == ["tensor([2., 4.])"]
    assert doc["results"][1]["error"] == {
        "kind": "shape", "line": 2, "column": 5,
        "message": "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"}
    assert "FAILED bad.grad:4:1" in err and summary_line(err) == "1 passed, 1 failed, 1 error in S s"


def test_exitfirst_stops_at_the_first_failure(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"a.grad": PASS, "b.grad": FAIL, "c.grad": PASS, "d.grad": PASS})
    monkeypatch.chdir(tmp_path)
    rc, out, _ = gradcli_test("-x", "-j", "1", "--json", capsys=capsys)
    doc = json.loads(out)
    assert rc == 1 and [r["path"] for r in doc["results"]] == ["a.grad", "b.grad"]
    assert doc["summary"]["stopped_early"] is True
    write(tmp_path, {f"e{i:03}.grad": PASS for i in range(200)})  # with workers: the failure is in the first chunk
    rc, out, err = gradcli_test("-x", "-j", "2", "--json", capsys=capsys)
    doc = json.loads(out)
    assert rc == 1 and doc["summary"]["stopped_early"] is True and doc["summary"]["failed"] == 1
    assert len(doc["results"]) < 204 and [r["path"] for r in doc["results"][:2]] == ["a.grad", "b.grad"]
    assert f"stopped at the first failure (-x): {204 - len(doc['results'])} of 204 programs not run" in err


def test_gradcheck_fails_a_wrong_gradient_and_passes_a_right_one(tmp_path, monkeypatch, capsys):
    write(tmp_path, {
        "right.grad": "x = tensor([0.5, 1.5], requires_grad=True)\nsum(sin(x) * x)\n",
        "hooked.grad": "x = tensor([0.5, 1.5], requires_grad=True)\nh = x.register_hook(lambda g: g * 2)\n"
                       "sum(x * x)\n",
        "noleaf.grad": "y = ones(2) * 3\n",
        "explicit.grad": "w = tensor([1.0, 2.0], requires_grad=True)\nh = w.register_hook(lambda g: g + 1)\n"
                         "(w * w).sum().backward()\n",
    })
    monkeypatch.chdir(tmp_path)
    rc, out, _ = gradcli_test("-j", "1", capsys=capsys)
    assert rc == 0  # without --gradcheck only asserts count
    rc, out, _ = gradcli_test("-j", "1", "--gradcheck", "--json", capsys=capsys)
    results = {r["path"]: r for r in json.loads(out)["results"]}
    assert rc == 1
    assert results["right.grad"]["outcome"] == "passed" and results["right.grad"]["gradcheck"][0]["passed"]
    hooked = results["hooked.grad"]
    assert hooked["outcome"] == "failed" and hooked["gradcheck"][0]["worst"]["analytic"] == 6.0
    assert hooked["failures"][0]["message"].startswith(
        "gradcheck: the gradient of x differs from finite differences (max abs error 3.000e+00")
    assert results["explicit.grad"]["failures"] == [{
        "kind": "gradcheck", "line": 3, "column": 1,
        "message": "gradcheck: the gradient of w differs from finite differences (backward() on line 3) "
                   "(max abs error 1.000e+00, max rel error 5.000e-01); worst element [1]: analytic 5 vs numeric 4"}]
    assert results["noleaf.grad"]["outcome"] == "error"
    assert results["noleaf.grad"]["error"]["message"].startswith("gradcheck: no leaf requires grad")


# -- JUnit XML --------------------------------------------------------------------------------------

# The shape of Jenkins' junit-10.xsd (pytest's xunit2 family), which GitLab, Jenkins and GitHub's
# test-report actions read: element -> (allowed attributes, required attributes, allowed children).
JUNIT = {
    "testsuites": ({"name", "time", "tests", "failures", "disabled", "errors"}, set(), {"testsuite"}),
    "testsuite": ({"name", "tests", "failures", "errors", "time", "disabled", "skipped", "timestamp", "hostname",
                   "id", "package", "file", "log", "url", "version"}, {"name", "tests"},
                  {"properties", "testcase", "system-out", "system-err"}),
    "testcase": ({"name", "assertions", "time", "classname", "status"}, {"name"},
                 {"skipped", "error", "failure", "system-out", "system-err"}),
    "failure": ({"message", "type"}, set(), set()),
    "error": ({"message", "type"}, set(), set()),
    "system-out": (set(), set(), set()),
}
INTEGER = {"tests", "failures", "errors", "skipped", "disabled"}


def check_junit_shape(root: ET.Element) -> None:
    assert root.tag == "testsuites"
    stack = [root]
    while stack:
        el = stack.pop()
        allowed, required, children = JUNIT[el.tag]
        assert set(el.attrib) <= allowed, (el.tag, set(el.attrib) - allowed)
        assert required <= set(el.attrib), (el.tag, required - set(el.attrib))
        for name in INTEGER & set(el.attrib):
            assert el.attrib[name].isdigit(), (el.tag, name)
        if "time" in el.attrib:
            assert re.fullmatch(r"\d+\.\d+", el.attrib["time"]), el.attrib["time"]
        if "timestamp" in el.attrib:
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", el.attrib["timestamp"])
        assert {c.tag for c in el} <= children, (el.tag, {c.tag for c in el} - children)
        if el.tag == "testcase":
            assert len([c for c in el if c.tag in ("failure", "error")]) <= 1
        stack.extend(el)
    for el in [root, *root.iter("testsuite")]:
        cases = list(el.iter("testcase"))
        assert int(el.get("tests")) == len(cases)
        assert int(el.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(el.get("errors")) == sum(c.find("error") is not None for c in cases)


def test_junit_xml_has_the_shape_ci_reporters_read(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"ok.grad": PASS, "grads/bad.grad": FAIL, "grads/deep/broken.grad": SYNTAX,
                     "noisy.grad": 'print("bell \\x07 and <tags> & more")\n' + PASS})
    monkeypatch.chdir(tmp_path)
    rc, _, _ = gradcli_test("--junit-xml", "report.xml", "-j", "1", capsys=capsys)
    assert rc == 1
    text = (tmp_path / "report.xml").read_text(encoding="utf-8")
    assert text.startswith("<?xml version='1.0' encoding='utf-8'?>")
    root = ET.fromstring(text)
    check_junit_shape(root)
    (suite,) = root
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "1")
    cases = {(c.get("classname"), c.get("name")): c for c in suite}
    assert list(cases) == [("grads", "bad.grad"), ("grads.deep", "broken.grad"), ("gradcli", "noisy.grad"),
                           ("gradcli", "ok.grad")]
    failure = cases["grads", "bad.grad"].find("failure")
    assert (failure.get("type"), failure.get("message")) == ("assert", "grads/bad.grad:4: assertion failed: dy/dx is 2x")
    assert failure.text.split("\n")[1] == '   | assert allclose(x.grad, 3 * x), "dy/dx is 2x"'
    error = cases["grads.deep", "broken.grad"].find("error")
    assert error.get("type") == "syntax" and error.get("message") == "grads/deep/broken.grad:2: '(' was never closed"
    assert cases["gradcli", "noisy.grad"].find("system-out").text == "bell \\x07 and <tags> & more"
    assert len(cases["gradcli", "ok.grad"]) == 0


# -- -j N: worker processes --------------------------------------------------------------------------

def _records(out: str):
    return [{k: v for k, v in r.items() if k != "time"} for r in json.loads(out)["results"]]


def test_workers_give_the_same_results_as_one_process(tmp_path, monkeypatch, capsys):
    files = {}
    for i in range(40):
        files[f"d{i % 3}/p{i:02}.grad"] = [PASS, FAIL, SYNTAX, SHAPE, "print(randn(2))\n" + PASS][i % 5]
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    rc1, one, _ = gradcli_test("--json", "-j", "1", capsys=capsys)
    rc3, three, _ = gradcli_test("--json", "-j", "3", capsys=capsys)
    assert rc1 == rc3 == 1
    assert _records(one) == _records(three) and len(_records(one)) == 40


def _crash_on(name, real=run_file):
    def run(item, settings):
        if item.name == name:
            os._exit(7)
        return real(item, settings)
    return run


FORKED = pytest.mark.skipif(not sys.platform.startswith("linux"),
                            reason="workers see the test's patched function only where they are forked (Linux)")


@FORKED
def test_a_worker_that_dies_costs_one_file_an_error(tmp_path, monkeypatch):
    write(tmp_path, {f"p{i}.grad": PASS for i in range(6)})
    monkeypatch.setattr(workers, "run_file", _crash_on("p2.grad"))  # forked workers inherit it
    items = collect.collect([str(tmp_path)])
    pool = workers.Pool(Settings(), 2).start(items)
    try:
        results = sorted(pool.results(), key=lambda r: r.index)
    finally:
        pool.close()
    assert [r.outcome for r in results] == ["passed", "passed", "error", "passed", "passed", "passed"]
    assert results[2].error.message == "its worker process died (exit status 7) while running it"


@FORKED
def test_a_worker_stuck_past_the_timeout_is_stopped(tmp_path, monkeypatch):
    import signal

    def stuck(item, settings, real=run_file):
        if item.name == "p1.grad":  # the alarm cannot reach it, as inside one long C call
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(60)
        return real(item, settings)

    write(tmp_path, {f"p{i}.grad": PASS for i in range(4)})
    monkeypatch.setattr(workers, "run_file", stuck)
    monkeypatch.setattr(workers, "GRACE", 0.3)
    items = collect.collect([str(tmp_path)])
    start = time.perf_counter()
    pool = workers.Pool(Settings(timeout=0.5), 2).start(items)
    try:
        results = sorted(pool.results(), key=lambda r: r.index)
    finally:
        pool.close()
    assert time.perf_counter() - start < 10
    assert [r.outcome for r in results] == ["passed", "error", "passed", "passed"]
    assert results[1].error.message == ("the program ran longer than --timeout 0.5 s and its worker process "
                                        "had to be stopped")


def test_chunks_keep_collection_order_and_balance():
    assert workers.chunks(list(range(10)), 2) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    assert max(len(c) for c in workers.chunks(list(range(10_000)), 2)) == 32


# -- the command line ---------------------------------------------------------------------------------

def test_the_fast_path_binds_test_as_typer_does():
    import typer

    from gradcli.cli import app
    argv = ["a", "b/c", "-k", "x and not y", "-j", "2", "--shard", "1/3", "--junit-xml", "r.xml", "--json",
            "--gradcheck", "-x", "--seed", "3", "--timeout", "5"]
    fast = parse(COMMANDS["test"], argv)
    typed = typer.main.get_command(app).commands["test"].make_context("test", list(argv)).params
    assert fast == {k: (list(v) if isinstance(v, tuple) else v) for k, v in typed.items()}
    assert fast["paths"] == ["a", "b/c"] and fast["test_timeout"] == 5.0
    assert parse(COMMANDS["test"], [])["paths"] is None


# -- done when: 300 programs, a real subprocess, -j and shards ------------------------------------------

def _suite(root: Path) -> dict:
    """300 programs in nested directories: every 10th fails an assert, every 25th (from 7) is a
    syntax error, every 31st (from 5) a shape error; the expected outcome of each."""
    expected = {}
    for i in range(300):
        rel = f"g{i % 4}/h{i % 3}/p{i:03}.grad"
        head = f"x = tensor([{i}.0, {i + 1}.5], requires_grad=True)\ny = (x ** 2).sum()\ny.backward()\n"
        if i % 25 == 7:
            text, outcome = head + "z = (x +\n", "error"
        elif i % 31 == 5:
            text, outcome = head + "z = x + ones(3)\n", "error"
        elif i % 10 == 3:
            text, outcome = head + "assert allclose(x.grad, 3 * x), 'wrong on purpose'\n", "failed"
        else:
            text, outcome = head + f"assert allclose(x.grad, 2 * x), 'program {i}'\n", "passed"
        expected[rel] = outcome
        write(root, {rel: text})
    return expected


def _run_cli(suite: Path, *args) -> tuple[int, list]:
    report = suite.parent / f"report{abs(hash(args))}.xml"
    proc = subprocess.run([sys.executable, "-m", "gradcli", "test", "suite", "--junit-xml", str(report), *args],
                          capture_output=True, text=True, cwd=suite.parent,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    root = ET.parse(report).getroot()
    check_junit_shape(root)
    cases = [(c.get("classname"), c.get("name"), c[0].tag if len(c) else "passed",
              c[0].get("message") if len(c) else None) for c in root.iter("testcase")]
    return proc.returncode, cases, proc.stdout


def test_300_programs_through_a_real_subprocess(tmp_path):
    suite = tmp_path / "suite"
    expected = _suite(suite)
    rc, whole, out = _run_cli(suite, "-j", "1")
    assert rc == 1
    failed = sum(o == "failed" for o in expected.values())
    errors = sum(o == "error" for o in expected.values())
    assert (failed, errors) == (29, 22)
    assert summary_line(out) == f"{300 - failed - errors} passed, {failed} failed, {errors} errors in S s"
    outcomes = {f"{c[0].replace('.', '/')}/{c[1]}": c[2] for c in whole}
    assert outcomes == {f"suite/{rel}": {"passed": "passed", "failed": "failure", "error": "error"}[o]
                        for rel, o in expected.items()}
    rc2, parallel, _ = _run_cli(suite, "-j", "2")
    assert rc2 == 1 and parallel == whole
    shards = []
    for k in (1, 2, 3):
        rck, part, _ = _run_cli(suite, "-j", "2", "--shard", f"{k}/3")
        assert rck == 1 and 99 <= len(part) <= 101
        shards += part
    assert sorted(shards) == sorted(whole) and len(shards) == 300


# -- the CI recipes and the example suite -----------------------------------------------------------

def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "gradcli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}, timeout=300)


def test_the_readme_shows_the_example_suite_as_it_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"```\n\$ gradcli test examples/suite\n(.*?)```", readme, re.S).group(1)
    proc = _cli("test", "examples/suite")
    assert proc.returncode == 1

    def norm(text):
        return re.sub(r" in \d+\.\d\d s\n", " in S s\n", text)
    assert norm(proc.stdout) == norm(shown)


def test_the_example_suite_passes_gradcheck_but_for_its_wrong_assert():
    proc = _cli("test", "examples/suite", "--gradcheck", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert {r["path"]: r["outcome"] for r in doc["results"] if r["outcome"] != "passed"} == \
        {"examples/suite/activations/tanh.grad": "failed"}
    assert all(g["passed"] for r in doc["results"] for g in r["gradcheck"]) and len(doc["results"]) == 6


def test_the_pre_commit_hook_runs_the_files_it_is_given():
    yaml = pytest.importorskip("yaml")
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert (hook["id"], hook["entry"], hook["language"], hook["files"]) == \
        ("gradcli-test", "gradcli test", "python", r"\.grad$")
    assert re.search(hook["files"], "tests/a.grad") and not re.search(hook["files"], "a.grad.bak")
    command = hook["entry"].split()
    files = ["examples/suite/basics/chain_rule.grad", "examples/suite/linalg/matmul.grad"]
    assert command[0] == "gradcli"
    proc = _cli(*command[1:], *files)  # as pre-commit calls it: the entry, then the changed files
    assert proc.returncode == 0 and summary_line(proc.stdout) == "2 passed, 0 failed, 0 errors in S s"
    assert _cli(*command[1:], "examples/suite/activations/tanh.grad").returncode == 1


def test_the_github_workflow_runs_gradcli_test_on_every_shard():
    import shlex
    yaml = pytest.importorskip("yaml")
    flow = yaml.safe_load((ROOT / "examples" / "github-actions.yml").read_text())
    job = flow["jobs"]["gradcli"]
    shards = job["strategy"]["matrix"]["shard"]
    (line,) = [s["run"] for s in job["steps"] if "gradcli test" in s.get("run", "")]
    seen = []
    for k in shards:
        argv = shlex.split(line.replace("${{ matrix.shard }}", str(k)))
        kwargs = parse(COMMANDS["test"], argv[2:])
        assert argv[:2] == ["gradcli", "test"] and kwargs is not None
        assert collect.parse_shard(kwargs["shard"]) == (k, len(shards))
        seen.append(kwargs["junit_xml"])
    assert flow["jobs"]["report"]["steps"][-1]["with"]["report_paths"] == "junit-*.xml"
    assert seen == [f"junit-{k}.xml" for k in shards]


def test_spawned_workers_as_on_macos_and_windows(tmp_path, monkeypatch, capsys):
    """Where fork is not used, workers start fresh and receive pickled items and settings."""
    import multiprocessing
    write(tmp_path, {"a.grad": PASS, "b.grad": FAIL, "c.grad": SYNTAX, "d.grad": "print(rand(2))\n" + PASS})
    monkeypatch.chdir(tmp_path)
    rc1, one, _ = gradcli_test("--json", "-j", "1", capsys=capsys)
    monkeypatch.setattr(workers, "_context", lambda: multiprocessing.get_context("spawn"))
    rc2, two, _ = gradcli_test("--json", "-j", "2", capsys=capsys)
    assert rc1 == rc2 == 1 and _records(one) == _records(two)


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_the_progress_bar_on_a_terminal_leaves_the_report(tmp_path):
    """Under a pseudo-terminal: a rich progress bar while running, then the same report as piped."""
    import pty
    write(tmp_path, {f"p{i:02}.grad": PASS for i in range(30)} | {"zz.grad": FAIL})
    out, rc = _run_on_a_terminal([sys.executable, "-m", "gradcli", "test", "-j", "2"], tmp_path, pty)
    assert rc == 1
    assert "━" in out and "gradcli test" in out  # the bar was drawn
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out).replace("\r", "")
    assert "FAILED zz.grad:4:1: assertion failed: dy/dx is 2x\n" in text
    assert re.search(r"30 passed, 1 failed, 0 errors in \d+\.\d\d s", text)


def _run_on_a_terminal(cmd, cwd, pty):
    pid, fd = pty.fork()
    if pid == 0:  # the child: run the command with the terminal as stdout
        os.chdir(cwd)
        os.environ.pop("NO_COLOR", None)
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(cmd[0], cmd)
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks).decode("utf-8", "replace"), os.waitstatus_to_exitcode(status)


def test_control_characters_from_a_program_are_shown_escaped(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"evil.grad": 'x = 1\nassert x == 2, "clear \\x1b[2J bell \\x07"\n'})
    monkeypatch.chdir(tmp_path)
    rc, out, _ = gradcli_test("-j", "1", capsys=capsys)
    assert rc == 1 and "\x1b" not in out and "\x07" not in out
    assert out.split("\n")[0] == "FAILED evil.grad:2:1: assertion failed: clear \\x1b[2J bell \\x07"
    rc, out, _ = gradcli_test("-j", "1", "--json", capsys=capsys)
    assert json.loads(out)["results"][0]["failures"][0]["message"] == "assertion failed: clear \x1b[2J bell \x07"


def test_a_failed_assert_shows_the_values_its_call_was_given(tmp_path):
    """Only for a failed assert whose test is a call, with the values as they were at the assert."""
    head = "w = tensor([1.0, 2.0], requires_grad=True)\n(w * w).sum().backward()\n"
    write(tmp_path, {"a.grad": head + "assert w.grad.allclose(3 * w, atol=0.5)\n",
                     "b.grad": head + "assert allclose(w.grad, 2 * w)\ng = w.grad\nassert g.sum() == 7, 'no call'\n",
                     "c.grad": head + "g = w.grad\ng.zero_()\nassert allclose(g, 1.0)\n"})
    results = [run_file(item, Settings()) for item in collect.collect([str(tmp_path)])]
    assert [[(p.line, p.where) for p in r.failures] for r in results] == [
        [(3, "allclose(tensor([2., 4.]), tensor([3., 6.], grad_fn=<MulBackward0>), atol=0.5)")],
        [(5, None)],
        [(5, "allclose(tensor([0., 0.]), 1.0)")]]
    assert results[0].failures[0].text.split("\n")[-1] == \
        "where: allclose(tensor([2., 4.]), tensor([3., 6.], grad_fn=<MulBackward0>), atol=0.5)"


def test_without_worker_processes_it_runs_in_one(tmp_path, monkeypatch, capsys):
    """Where queues cannot be made (no /dev/shm for their semaphores), -j N runs in this process."""
    class NoSemaphores:
        def Queue(self):
            raise OSError(38, "Function not implemented")
    write(tmp_path, {"a.grad": PASS, "b.grad": FAIL})
    monkeypatch.chdir(tmp_path)
    rc1, one, _ = gradcli_test("--json", "-j", "1", capsys=capsys)
    monkeypatch.setattr(workers, "_context", NoSemaphores)
    rc2, two, err = gradcli_test("--json", "-j", "2", capsys=capsys)
    assert rc1 == rc2 == 1 and _records(one) == _records(two)
    assert err.startswith("note: running in one process: worker processes are not available here "
                          "([Errno 38] Function not implemented)\n")


def test_an_assert_that_stops_the_program_is_one_failure(tmp_path, monkeypatch):
    """Where a failed assert stops the program (a CheckFailed error of kind "check", as issue 14 makes
    it), the file fails once for it, with the same report, and is not an error."""
    from gradcli.cli import session
    from gradcli.errors import CheckFailed
    real = session.run_prepared

    def stopping(opts, prepared, interp, configure_first=True):
        result = real(opts, prepared, interp, configure_first)
        bad = next((c for c in result.checks if not c.passed), None)
        if bad is not None:
            result.error = CheckFailed(f"assertion failed: {bad.message}", line=bad.line, column=1)
        return result

    write(tmp_path, {"bad.grad": FAIL})
    (item,) = collect.collect([str(tmp_path)])
    before = run_file(item, Settings())
    monkeypatch.setattr(session, "run_prepared", stopping)
    after = run_file(item, Settings())
    assert after.outcome == before.outcome == "failed" and after.error is None
    assert [p.text for p in after.failures] == [p.text for p in before.failures] and len(after.failures) == 1
