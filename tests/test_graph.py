"""`gradcli graph`: every node of the last value's backward graph, as a tree, DOT, Mermaid, JSON."""

import json
import os
import stat

import pytest

from gradcli.cli import main

QUICKSTART = "x = ones(2, 2, requires_grad=True)\ny = x + 2\nz = y * y * 3\nout = z.mean()"


def run(capsys, *args):
    code = main(["graph", *args])
    out, err = capsys.readouterr()
    return code, out, err


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


def test_mermaid_with_saved_shapes(capsys):
    code, out, _ = run(capsys, "a = w * w; mean(a + 1)", "-g", "w=ones(3)", "--format", "mermaid", "--saved")
    assert code == 0
    assert out == ('graph TD\n  n0["MeanBackward0<br/>[]"]\n  n1["AddBackward0<br/>[3]"]\n'
                   '  n2["MulBackward0<br/>a<br/>[3]<br/>saved self: [3], other: [3]"]\n'
                   '  n3["AccumulateGrad<br/>w<br/>[3]"]\n'
                   "  n0 --> n1\n  n1 --> n2\n  n2 --> n3\n  n2 --> n3\n")


def test_json_format_and_json_document(capsys):
    code, out, _ = run(capsys, "y = x * 2 - x\nsum(y)", "-g", "x=ones(2)", "--format", "json")
    graph = json.loads(out)
    assert code == 0
    assert [n["name"] for n in graph["nodes"]] == ["SumBackward0", "SubBackward0", "MulBackward0", "AccumulateGrad"]
    assert graph["nodes"][1]["variable"] == "y" and graph["nodes"][3]["variable"] == "x"
    assert {(e["from"], e["to"], e["input"]) for e in graph["edges"]} == {(0, 1, 0), (1, 2, 0), (1, 3, 1), (2, 3, 0)}
    code, out, _ = run(capsys, "sum(x * 2)", "-g", "x=ones(2)", "--json")
    doc = json.loads(out)
    assert doc["error"] is None and [n["name"] for n in doc["graph"]["nodes"]] == \
        ["SumBackward0", "MulBackward0", "AccumulateGrad"]


def test_nothing_to_draw(capsys):
    code, out, _ = run(capsys, "x * 2", "-l", "x=ones(2)")
    assert code == 0 and "no graph" in out


def test_bad_format_and_errors(capsys):
    assert run(capsys, "x", "-g", "x=ones(1)", "--format", "png")[0] == 2
    assert run(capsys, "x", "-g", "x=ones(1)", "-o", "graph.txt")[0] == 2
    assert run(capsys, "print(1)")[0] == 2
    assert run(capsys, "undefined + 1")[0] == 2


def test_dot_file_always_works(capsys, tmp_path):
    path = tmp_path / "g.dot"
    code, out, _ = run(capsys, QUICKSTART, "-o", str(path))
    assert code == 0 and "wrote" in out
    assert path.read_text().startswith("digraph gradcli {")


def test_svg_without_graphviz_exits_3_with_a_hint(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot here
    code, _, err = run(capsys, QUICKSTART, "-o", str(tmp_path / "g.svg"))
    assert code == 3
    assert "Graphviz's 'dot' program is not installed" in err and "apt install graphviz" in err


def test_svg_is_rendered_by_dot_when_installed(capsys, tmp_path, monkeypatch):
    fake = tmp_path / "dot"
    fake.write_text('#!/bin/sh\n# a stand-in for Graphviz: record the arguments and the DOT text\n'
                    'echo "$@" > "$(dirname "$0")/args"\ncat > "$(dirname "$0")/input"\n'
                    'echo "<svg/>" > "$3"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    out_file = tmp_path / "g.svg"
    code, _, err = run(capsys, QUICKSTART, "-o", str(out_file))
    assert code == 0, err
    assert (tmp_path / "args").read_text().split() == ["-Tsvg", "-o", str(out_file)]
    assert (tmp_path / "input").read_text().startswith("digraph gradcli {")
    assert out_file.read_text() == "<svg/>\n"


def test_ten_thousand_nodes_and_a_deep_chain(capsys):
    program = "y = x\n" + "y = y * 1.0001 + 0.0001\n" * 5000 + "sum(y)"
    code, out, _ = run(capsys, program, "-g", "x=ones(2)")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 10_002  # sum, 5000 * (add, mul), the leaf
    assert max(len(line) for line in lines) < 200  # indentation stops growing
    assert lines[-1].endswith("AccumulateGrad x [2]  [depth 10001]")
    code, out, _ = run(capsys, program, "-g", "x=ones(2)", "--format", "dot")
    assert code == 0 and out.count(" -> ") == 10_001
