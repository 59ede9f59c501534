"""Choosing what to draw, check and differentiate (`graph --root`, `check --of/--wrt`,
`eval --of`), and graph files in any format Graphviz writes: the real command, as a process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = ("w = tensor([1., 2.], requires_grad=True)\nv = tensor([3., 4.], requires_grad=True)\n"
           "loss = (w * w * v).sum()\nother = (w.detach() * 3).sum()\nprint(loss)\nw.grad")


def gradcli(*args, cwd=ROOT):
    env = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1", COLUMNS="120")
    return subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, stdin=subprocess.DEVNULL, timeout=300)


def test_graph_defaults_to_the_last_value_that_requires_grad():
    # the program ends with print and w.grad (None): the graph drawn is loss's
    p = gradcli("graph", PROGRAM)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "#0 SumBackward0 loss []"


def test_graph_root_is_repeatable():
    p = gradcli("graph", PROGRAM + "\nm = (v * 2).mean()", "--root", "loss", "--root", "m", "--format", "json")
    assert p.returncode == 0, p.stderr
    graph = json.loads(p.stdout)
    assert graph["roots"] == [0, 1]
    assert [(n["name"], n["variable"]) for n in graph["nodes"][:2]] == [("SumBackward0", "loss"), ("MeanBackward0", "m")]
    names = {n["variable"] for n in graph["nodes"] if n["name"] == "AccumulateGrad"}
    assert names == {"w", "v"}  # shared leaves drawn once


@pytest.mark.parametrize("args, message", [
    (["--root", "other"], "error: --root other: other does not require grad, so it has no backward graph\n"),
    (["--root", "nope"], "error: --root nope: nope is not a variable of the program\n"),
])
def test_no_graph_is_exit_2_with_nothing_on_stdout(args, message):
    p = gradcli("graph", PROGRAM, *args)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr.startswith(message)


def test_a_program_without_a_graph_is_exit_2_also_with_o(tmp_path):
    for extra in ([], ["-o", str(tmp_path / "g.png")], ["--json"]):
        p = gradcli("graph", "x = ones(2)\nprint(x * 2)", *extra)
        assert p.returncode == 2, p
        assert "no value of the program requires grad" in p.stderr
        if extra == ["--json"]:
            assert json.loads(p.stdout)["error"]["kind"] == "type"
        else:
            assert p.stdout == ""
    assert not (tmp_path / "g.png").exists()  # no blank image


def test_rebound_names_are_told_apart():
    rnn = "h = ones(2, requires_grad=True)\n" + "h = tanh(h * 2)\n" * 3
    p = gradcli("graph", rnn)
    assert p.returncode == 0
    tanh = [line.split("TanhBackward0 ")[1] for line in p.stdout.splitlines() if "Tanh" in line]
    assert tanh == ["h''' [2]", "h'' [2]", "h' [2]"]
    assert p.stdout.splitlines()[-1].endswith("#6 AccumulateGrad h [2]")


def test_missing_folder_is_exit_2_for_every_format(tmp_path):
    for name in ("x.dot", "x.png", "x.pdf", "x.json"):
        p = gradcli("graph", PROGRAM, "-o", str(tmp_path / "nodir" / name))
        assert p.returncode == 2, p
        assert p.stderr.startswith(f"error: cannot write {tmp_path / 'nodir' / name}: the folder ")


def test_format_svg_without_o_hints_at_o():
    p = gradcli("graph", PROGRAM, "--format", "svg")
    assert p.returncode == 2
    assert p.stderr == ("error: --format must be one of tree, dot, mermaid, json, not 'svg'\n"
                        "hint: to draw an image, write it to a file: -o graph.svg\n")


MAGIC = {"pdf": b"%PDF", "png": b"\x89PNG", "svg": b"<?xml", "jpg": b"\xff\xd8\xff", "gif": b"GIF8",
         "ps": b"%!PS"}


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("ext", sorted(MAGIC))
def test_o_writes_any_graphviz_format(tmp_path, ext):
    out = tmp_path / f"g.{ext}"
    p = gradcli("graph", PROGRAM, "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"wrote {out} (5 nodes)\n"
    assert out.read_bytes().startswith(MAGIC[ext])


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_leaves_are_labelled_with_name_and_shape_in_graphviz(tmp_path):
    out = tmp_path / "g.svg"
    assert gradcli("graph", PROGRAM, "-o", str(out)).returncode == 0
    svg = out.read_text()
    assert ">AccumulateGrad</text>" in svg and ">w</text>" in svg and ">v</text>" in svg and ">[2]</text>" in svg


def test_check_of_and_wrt():
    p = gradcli("check", PROGRAM, "--of", "loss", "--wrt", "v", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["gradcheck_of"] == "loss (line 3)"
    assert [c["leaf"] for c in doc["gradcheck"]] == ["v"]
    assert doc["gradcheck"][0]["worst"]["analytic"] in (1.0, 4.0)  # d loss / dv = w * w
    p = gradcli("check", PROGRAM, "--of", "loss", "--json")
    assert [c["leaf"] for c in json.loads(p.stdout)["gradcheck"]] == ["w", "v"]


@pytest.mark.parametrize("args, message", [
    (["--wrt", "q"], "error: --wrt q: q is not a leaf that requires grad\nhint: the leaves check can check: w, v\n"),
    (["--of", "nope"], "error: --of nope: nope is not a variable of the program\n"),
])
def test_check_bad_targets_are_exit_2(args, message):
    p = gradcli("check", PROGRAM, *args)
    assert p.returncode == 2 and p.stderr.startswith(message), p


def test_eval_of_runs_backward_from_the_named_value():
    p = gradcli("eval", PROGRAM, "--of", "loss", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    grads = {v["name"]: v["grad"] for v in doc["variables"]}
    assert doc["backward"] == "auto" and grads["w"] == [6.0, 16.0] and grads["v"] == [1.0, 4.0]
    torch = pytest.importorskip("torch")
    w = torch.tensor([1., 2.], requires_grad=True)
    v = torch.tensor([3., 4.], requires_grad=True)
    (w * w * v).sum().backward()
    assert grads["w"] == w.grad.tolist() and grads["v"] == v.grad.tolist()
    p = gradcli("eval", PROGRAM, "--of", "nope")
    assert p.returncode == 2 and p.stderr.startswith("error: --of nope: nope is not a variable of the program")
