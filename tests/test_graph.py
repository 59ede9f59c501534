"""`gradcli graph`: every node of the last value's backward graph, as a tree, DOT, Mermaid, JSON."""

import io
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gradcli.cli import main

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = "x = ones(2, 2, requires_grad=True)\ny = x + 2\nz = y * y * 3\nout = z.mean()"


def run(capsys, *args):
    code = main(["graph", *args])
    out, err = capsys.readouterr()
    return code, out, err


# -- the renderings, exactly ---------------------------------------------------------------------

def test_tree_shows_every_node_and_shared_subgraphs_once(capsys):
    code, out, err = run(capsys, QUICKSTART)
    assert code == 0, err
    assert out == ("#0 MeanBackward0 out []\n"
                   "└── #1 MulBackward0 z [2, 2]\n"
                   "    └── #2 MulBackward0 [2, 2]\n"
                   "        ├── #3 AddBackward0 y [2, 2]\n"
                   "        │   └── #4 AccumulateGrad x [2, 2]\n"
                   "        └── (see #3: AddBackward0)\n")


def test_dot(capsys):
    code, out, _ = run(capsys, "mean(x * w + 2)", "-l", "x=ones(2,2)", "-g", "w=rand(2,2)", "--format", "dot")
    assert code == 0
    assert out == ('digraph gradcli {\n  rankdir="TB";\n'
                   '  node [shape=box, style="rounded,filled", fontname="monospace"];\n'
                   '  n0 [label="MeanBackward0\\n[]", fillcolor="lightgray"];\n'
                   '  n1 [label="AddBackward0\\n[2, 2]", fillcolor="white"];\n'
                   '  n2 [label="MulBackward0\\n[2, 2]", fillcolor="white"];\n'
                   '  n3 [label="AccumulateGrad\\nw\\n[2, 2]", fillcolor="lightblue"];\n'
                   "  n0 -> n1;\n  n1 -> n2;\n  n2 -> n3;\n}\n")


def test_dot_labels_edges_by_input_position(capsys):
    code, out, _ = run(capsys, "s = a * b", "-g", "a=ones(2)", "-g", "b=ones(2)", "--format", "dot")
    assert code == 0
    assert out.splitlines()[3:] == ['  n0 [label="MulBackward0\\ns\\n[2]", fillcolor="lightgray"];',
                                    '  n1 [label="AccumulateGrad\\na\\n[2]", fillcolor="lightblue"];',
                                    '  n2 [label="AccumulateGrad\\nb\\n[2]", fillcolor="lightblue"];',
                                    '  n0 -> n1 [label="0"];', '  n0 -> n2 [label="1"];', "}"]


def test_mermaid_with_saved_shapes(capsys):
    code, out, _ = run(capsys, "a = w * w; mean(a + 1)", "-g", "w=ones(3)", "--format", "mermaid", "--show-saved")
    assert code == 0
    assert out == ('graph TD\n  n0["MeanBackward0<br/>[]"]\n  n1["AddBackward0<br/>[3]"]\n'
                   '  n2["MulBackward0<br/>a<br/>[3]<br/>saved self: [3], other: [3]"]\n'
                   '  n3["AccumulateGrad<br/>w<br/>[3]"]\n'
                   "  n0 --> n1\n  n1 --> n2\n  n2 -->|0| n3\n  n2 -->|1| n3\n")


def test_saved_values_are_freed_by_backward(capsys):
    # the quickstart file calls out.backward(): the graph of `out` has given its buffers back
    code, out, _ = run(capsys, "-f", str(ROOT / "examples" / "seed3_quickstart.grad"), "--saved")
    assert code == 0
    assert out.splitlines()[:3] == ["#0 MeanBackward0 out []", "└── #1 MulBackward0 z [2, 2] saved freed",
                                    "    └── #2 MulBackward0 [2, 2] saved freed"]
    code, out, _ = run(capsys, "z = sin(x) * 2; z.sum().backward(retain_graph=True); z", "-g", "x=ones(2)",
                       "--show-saved")
    assert out == "#0 MulBackward0 z [2]\n└── #1 SinBackward0 [2] saved self: [2]\n    └── #2 AccumulateGrad x [2]\n"


def test_json_format(capsys):
    code, out, _ = run(capsys, "y = x * 2 - x\nsum(y)", "-g", "x=ones(2)", "--format", "json")
    assert code == 0
    assert json.loads(out) == {
        "root": 0, "roots": [0],
        "nodes": [{"id": 0, "name": "SumBackward0", "variable": None, "shape": []},
                  {"id": 1, "name": "SubBackward0", "variable": "y", "shape": [2]},
                  {"id": 2, "name": "MulBackward0", "variable": None, "shape": [2]},
                  {"id": 3, "name": "AccumulateGrad", "variable": "x", "shape": [2]}],
        "edges": [{"from": 0, "to": 1, "input": 0}, {"from": 1, "to": 2, "input": 0},
                  {"from": 1, "to": 3, "input": 1}, {"from": 2, "to": 3, "input": 0}],
    }
    assert out.count("\n") == 16  # one line per node and per edge, and the frame


def test_json_document(capsys):
    code, out, _ = run(capsys, "sum(x * 2)", "-g", "x=ones(2)", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["error"] is None and doc["backward"] == "none"
    assert [v["name"] for v in doc["variables"]] == ["x", "_"]
    assert [n["name"] for n in doc["graph"]["nodes"]] == ["SumBackward0", "MulBackward0", "AccumulateGrad"]
    code, out, _ = run(capsys, "sum(x * 2) @ x", "-g", "x=ones(2)", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["graph"] is None and doc["error"]["kind"] == "shape"
    code, out, _ = run(capsys, "x", "-g", "x=ones(2)", "--format", "svg", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["graph"] is None and doc["error"]["kind"] == "usage"


# -- what is drawn -----------------------------------------------------------------------------

def test_every_name_the_program_bound(capsys):
    # y is bound twice: both nodes carry the name, the second told apart as y'; the last value
    # here is unnamed
    code, out, _ = run(capsys, "y = x + 2\ny = y.mean()\ny * 3", "-g", "x=ones(2)")
    assert code == 0
    assert out == ("#0 MulBackward0 []\n└── #1 MeanBackward0 y' []\n    └── #2 AddBackward0 y [2]\n"
                   "        └── #3 AccumulateGrad x [2]\n")


def test_the_last_value_skips_prints_asserts_and_backward_calls(capsys):
    code, out, _ = run(capsys, "s = sum(x * x)\ns.backward()\nprint(s)\nassert s > 0", "-g", "x=ones(2)")
    assert code == 0
    assert out.splitlines()[0] == "#0 SumBackward0 s []"


def test_a_leaf_and_a_value_without_graph(capsys):
    code, out, _ = run(capsys, "x", "-g", "x=ones(2)")
    assert code == 0 and out == "#0 AccumulateGrad x [2]\n"
    code, out, err = run(capsys, "x * 2", "-l", "x=ones(2)")  # no graph: exit 2, nothing on stdout
    assert code == 2 and out == ""
    assert err.startswith("error: no value of the program requires grad, so there is no backward graph to draw")


def test_none_inputs_are_not_drawn(capsys):
    # next_functions of x * c is ((AccumulateGrad, 0), (None, 0)): the None input has no node
    code, out, _ = run(capsys, "x * c", "-g", "x=ones(2)", "-l", "c=ones(2)", "--format", "json")
    assert code == 0
    graph = json.loads(out)
    assert len(graph["nodes"]) == 2 and graph["edges"] == [{"from": 0, "to": 1, "input": 0}]


def test_a_failed_assert_stops_the_program_exit_1(capsys):
    code, out, err = run(capsys, "y = x * 2\nassert allclose(y, 3), 'not three'", "-g", "x=ones(2)")
    assert code == 1 and out == ""
    assert err.startswith("error: assertion failed: not three\n  --> line 2, column 1")


@pytest.mark.parametrize("args, code, text", [
    (["x", "-g", "x=ones(1)", "--format", "png"], 2, "--format must be one of tree, dot, mermaid, json"),
    (["x", "-g", "x=ones(1)", "-o", "graph.xyz"], 2, "-o cannot tell a format from 'graph.xyz'"),
    (["x", "-g", "x=ones(1)", "-o", "g.dot", "--format", "mermaid"], 2, "--format mermaid does not match -o g.dot"),
    (["print(1)"], 2, "the program computes no tensor"),
    (["undefined + 1"], 2, "name 'undefined' is not defined"),
    (["s = sum(x * x); s.backward(); s.backward(); s", "-g", "x=ones(2)"], 3, "a second time"),
])
def test_errors(capsys, args, code, text):
    got, _, err = run(capsys, *args)
    assert got == code and text in err


# -- files -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("ext, start", [(".dot", "digraph gradcli {"), (".gv", "digraph gradcli {"),
                                        (".mmd", "graph TD"), (".json", '{\n  "root": 0,')])
def test_text_files_always_work(capsys, tmp_path, ext, start):
    path = tmp_path / f"g{ext}"
    code, out, _ = run(capsys, QUICKSTART, "-o", str(path))
    assert code == 0 and out == f"wrote {path} (5 nodes)\n"
    assert path.read_text().startswith(start)


def test_svg_without_graphviz_exits_3_with_a_hint(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot here
    code, out, err = run(capsys, QUICKSTART, "-o", str(tmp_path / "g.svg"))
    assert code == 3 and out == ""
    assert err.startswith(f"error: cannot write {tmp_path / 'g.svg'}: Graphviz's 'dot' program is not installed\n")
    assert "the package graphviz, sudo apt-get install graphviz" in err and "-o graph.dot" in err
    assert not (tmp_path / "g.svg").exists()


def _fake_dot(tmp_path, body):
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\n" + body)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return fake


@pytest.mark.parametrize("ext", ["svg", "png"])
def test_svg_and_png_are_rendered_by_dot_when_installed(capsys, tmp_path, monkeypatch, ext):
    _fake_dot(tmp_path, '# a stand-in for Graphviz: record the arguments and the DOT text\n'
                        'echo "$@" > "$(dirname "$0")/args"\ncat > "$(dirname "$0")/input"\n'
                        'echo "rendered" > "${2#-o}"\n')
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    out_file = tmp_path / f"g.{ext.upper()}"
    code, out, err = run(capsys, QUICKSTART, "-o", str(out_file))
    assert code == 0, err
    assert out == f"wrote {out_file} (5 nodes)\n"
    # dot writes a temporary file beside the output (renamed into place once complete), named in
    # the -o<path> form with an absolute path: a file called "-Tx.svg" is never read as an option
    t_flag, o_flag = (tmp_path / "args").read_text().split()
    assert t_flag == f"-T{ext}" and o_flag.startswith(f"-o{tmp_path}/.g.{ext.upper()}.") and o_flag.endswith(".tmp")
    code, dot_text, _ = run(capsys, QUICKSTART, "--format", "dot")
    assert (tmp_path / "input").read_text() == dot_text  # exactly the DOT that --format dot prints
    assert out_file.read_text() == "rendered\n"


def test_a_failing_dot_exits_3_with_its_message(capsys, tmp_path, monkeypatch):
    _fake_dot(tmp_path, 'cat > /dev/null\necho "Error: syntax error in line 1" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    code, _, err = run(capsys, QUICKSTART, "-o", str(tmp_path / "g.svg"))
    assert code == 3
    assert "error: Graphviz's dot failed (exit 1): Error: syntax error in line 1" in err


# -- size and depth ------------------------------------------------------------------------------

def test_ten_thousand_nodes_in_a_deep_chain(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    program = "y = x\n" + "y = y * 1.0001 + 0.0001\n" * 5000 + "sum(y)"
    code, out, _ = run(capsys, program, "-g", "x=ones(2)")
    assert code == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80  # deep branches go on below, within the width
    drawn = [int(m.group(1)) for line in lines for m in [re.search(r"#(\d+) (?!\S+ \(continued below\))", line)] if m]
    assert sorted(drawn) == list(range(10_002))  # every node drawn once
    assert lines[10] == " " * 36 + "└── #10 MulBackward0 (continued below)"
    assert lines[11:13] == ["", "#10 MulBackward0 [2]  [depth 10]"]
    assert lines[-1] == "└── #10001 AccumulateGrad x [2]"
    code, out, _ = run(capsys, program, "-g", "x=ones(2)", "--format", "dot")
    assert code == 0 and out.count(" -> ") == 10_001
    code, out, _ = run(capsys, program, "-g", "x=ones(2)", "--format", "json")
    graph = json.loads(out)
    assert len(graph["nodes"]) == 10_002 and len(graph["edges"]) == 10_001
    ys = [n["variable"] for n in graph["nodes"] if (n["variable"] or "").startswith("y")]
    assert len(ys) == len(set(ys)) == 5000  # each `y = ...` binding, each told apart
    assert {"y", "y'", "y''", "y'" "''", "y'4", "y'4999"} <= set(ys)


def test_ten_thousand_shared_nodes(capsys):
    """y = y + y, 10,000 times: each node is reached twice, so 2**10000 paths, drawn in 20,001 lines."""
    program = "y = x\n" + "y = y + y\n" * 10_000 + "y"
    code, out, _ = run(capsys, program, "-g", "x=ones(1)")
    assert code == 0
    lines = out.splitlines()
    below = sum(line.endswith("(continued below)") for line in lines)
    assert below == lines.count("") > 0  # deep branches continue below, one block each
    assert len(lines) - 2 * below == 20_001  # 10,001 nodes once each, 10,000 references
    assert sum("(see #" in line for line in lines) == 10_000
    code, out, _ = run(capsys, program, "-g", "x=ones(1)", "--format", "mermaid")
    assert code == 0 and out.count(" -->|") == 20_000


def test_colour_tree_on_a_terminal_has_the_same_text(monkeypatch):
    from gradcli.present import graph
    monkeypatch.delenv("NO_COLOR", raising=False)

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    import gradcli as gc
    x = gc.ones(2, 2, requires_grad=True)
    y = x + 2
    out = (y * y * 3).mean()
    nodes = graph.collect(out.grad_fn, lambda obj: "x" if obj is x else None)
    term = Terminal()
    graph.print_tree(nodes, file=term)
    text = term.getvalue()
    assert "\x1b[" in text  # coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines() == graph.tree_lines(nodes)


# -- as a process ----------------------------------------------------------------------------------

def test_as_a_process():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "gradcli", "graph", "mean(w * w)", "-g", "w=ones(2)",
                           "--format", "mermaid"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ('graph TD\n  n0["MeanBackward0<br/>[]"]\n  n1["MulBackward0<br/>[2]"]\n'
                           '  n2["AccumulateGrad<br/>w<br/>[2]"]\n  n0 --> n1\n  n1 -->|0| n2\n  n1 -->|1| n2\n')
    proc = subprocess.run([sys.executable, "-m", "gradcli", "graph", "mean(w * )", "-g", "w=ones(2)"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error:") and "Traceback" not in proc.stderr
