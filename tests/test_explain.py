"""`check` explains the known situations where autograd and finite differences legitimately
disagree, in the failing leaf's row and JSON record (`why`), and only there."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def check(*args, columns="200"):
    env = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1", COLUMNS=columns)
    return subprocess.run([sys.executable, "-m", "gradcli", "check", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=300)


@pytest.mark.parametrize("program, leaf, why", [
    ("y = (x * x.detach()).sum()", "x=tensor([2., 1.])", "detach() on line 1 cuts the graph"),
    ("with no_grad():\n    c = x * 3\ny = (x * c).sum()", "x=tensor([2., 1.])", "no_grad() on line 1 cuts the graph"),
    ("x.data.mul_(2)\ny = (x * x).sum()", "x=tensor([1., 2.])", ".data on line 1 changes values outside autograd"),
    ("y = relu(x).sum()", "x=tensor([0., 1.])", "relu (line 1) is evaluated at its kink"),
    ("y = relu(x - 1).sum()", "x=tensor([1., 2.])", "relu (line 1) is evaluated at its kink"),
    ("y = clamp(x, min=1.0).sum()", "x=tensor([1., 2.])", "clamp (line 1) is evaluated at its kink"),
    ("y = clamp(x, max=1.0).sum()", "x=tensor([1., 0.])", "clamp (line 1) is evaluated at its kink"),
    ("y = (x * sign(x - 1)).sum()", "x=tensor([1., 2.])", "sign (line 1) is a step"),
])
def test_a_known_situation_is_explained(program, leaf, why):
    p = check(program, "-g", leaf, "--json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    record = doc["gradcheck"][0]
    assert record["passed"] is False and record["why"].startswith(why)
    assert doc["error"]["kind"] == "check" and why in doc["error"]["message"]
    table = check(program, "-g", leaf)
    row = next(line for line in table.stdout.splitlines() if line.startswith(" x "))
    assert "FAIL" in row and why.split()[0] in row  # in the leaf's row


def test_at_80_columns_the_reason_follows_the_table_whole():
    p = check("y = relu(x).sum()", "-g", "x=tensor([0., 1.])", columns="80")
    text = " ".join(p.stdout.split())
    assert "x: relu (line 1) is evaluated at its kink, where the gradient is a convention" in text


@pytest.mark.parametrize("program, leaf", [
    ("y = x.abs().sum()", "x=tensor([0., 1.])"),          # torch's 0 is the average slope
    ("y = maximum(x, ones(2)).sum()", "x=tensor([1., 2.])"),  # a tie shares the gradient evenly
    ("y = x.max()", "x=tensor([3., 3.])"),
])
def test_kinks_where_the_conventions_agree_pass(program, leaf):
    p = check(program, "-g", leaf, "--json")
    assert p.returncode == 0 and "why" not in json.loads(p.stdout)["gradcheck"][0]


def test_away_from_the_kink_nothing_is_said():
    p = check("y = relu(x).sum() + x.abs().sum()", "-g", "x=tensor([0.5, -1.0])", "--json")
    assert p.returncode == 0
    assert "why" not in json.loads(p.stdout)["gradcheck"][0]


def test_a_passing_leaf_carries_no_reason():
    # detach is used, but only on a leaf that check does not differentiate through
    p = check("c = w.detach()\ny = (x * x).sum() + c.sum()", "-g", "x=ones(2)", "-l", "w=ones(2)", "--json")
    assert p.returncode == 0 and "why" not in json.loads(p.stdout)["gradcheck"][0]
