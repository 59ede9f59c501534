"""The loop benchmark's programs (benchmarks/loops/*.grad) print what they print under PyTorch.

Each program is PyTorch code as written; ``gradcli eval -f FILE`` and ``python FILE`` must print
the same lines. Integers and words are compared exactly; floats to float32 rounding (rtol 1e-4,
atol 1e-10): after thousands of float32 training steps the last bits differ where torch's
reductions add in another order than NumPy's (the SGD's final weights agree exactly, its final
loss, 2e-12, is rounding noise). The benchmark's library mirror (the program run as Python with
``torch`` bound to the functions the language calls) must agree too.
"""

import json
import re
import runpy
import sys
from pathlib import Path

import pytest

from gradcli.cli.fast import main as cli_main

torch = pytest.importorskip("torch")

LOOPS = Path(__file__).resolve().parent.parent / "benchmarks" / "loops"
PROGRAMS = sorted(p.stem for p in LOOPS.glob("*.grad"))
_NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?$")


def _tokens(line: str) -> list[str]:
    return [t for t in re.split(r"[\s\[\](),]+", line) if t]


def assert_same_output(ours: list[str], theirs: list[str]) -> None:
    assert len(ours) == len(theirs), (ours, theirs)
    for a_line, b_line in zip(ours, theirs):
        a_tokens, b_tokens = _tokens(a_line), _tokens(b_line)
        assert len(a_tokens) == len(b_tokens), (a_line, b_line)
        for a, b in zip(a_tokens, b_tokens):
            if _NUMBER.match(b) and ("." in b or "e" in b):
                assert float(a) == pytest.approx(float(b), rel=1e-4, abs=1e-10), (a_line, b_line)
            else:
                assert a == b, (a_line, b_line)


def _torch_output(path: Path, capsys) -> list[str]:
    capsys.readouterr()
    runpy.run_path(str(path), run_name="__main__")
    return capsys.readouterr().out.splitlines()


def test_there_are_programs():
    assert {"sgd", "mlp", "control_flow"} <= set(PROGRAMS)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_prints_torchs_values(name, capsys):
    path = LOOPS / f"{name}.grad"
    code = cli_main(["eval", "-f", str(path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["error"] is None, doc["error"]
    assert doc["printed"], "a benchmark program prints its results"
    assert_same_output(doc["printed"], _torch_output(path, capsys))


def test_library_mirror_prints_the_same(capsys):
    # bench_loop.py's "ops alone" column runs the program text as Python on the language's functions
    sys.path.insert(0, str(LOOPS.parent))
    try:
        import bench_loop
    finally:
        sys.path.remove(str(LOOPS.parent))
    path = LOOPS / "control_flow.grad"
    printed = []
    run = bench_loop._python_runner(path.read_text(), bench_loop._namespace("torch"),
                                    print_=lambda *args: printed.append(" ".join(map(str, args))))
    run()
    assert_same_output(printed, _torch_output(path, capsys))


def test_comparison_is_not_vacuous():
    assert_same_output(["1 0.5 [1.0, 2.0]"], ["1 0.50001 [1.0, 2.0]"])
    with pytest.raises(AssertionError):
        assert_same_output(["1 0.5"], ["1 0.51"])
    with pytest.raises(AssertionError):
        assert_same_output(["2 0.5"], ["1 0.5"])
    with pytest.raises(AssertionError):
        assert_same_output(["1 0.5"], ["1 0.5", "more"])
