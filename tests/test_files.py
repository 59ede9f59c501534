"""Program files and stdin: each odd case gets a clear message (exit 2) or just works."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = "x = ones(2, requires_grad=True)\nprint((x * 3).sum())\ny = (x * 3).sum()\n"


def cli(*args, stdin=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "gradcli", "eval", *args, "--json"], input=stdin,
                          capture_output=True, env=env, timeout=120)


def check_ok(proc):
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["printed"] == ["tensor(6., grad_fn=<SumBackward0>)"]
    assert doc["variables"][0]["grad"] == [3.0, 3.0]


@pytest.mark.parametrize("encoding", [
    lambda t: t.encode(), lambda t: b"\xef\xbb\xbf" + t.encode(), lambda t: t.replace("\n", "\r\n").encode(),
    lambda t: t.replace("\n", "\r").encode(), lambda t: t.rstrip("\n").encode(),
], ids=["utf8", "bom", "crlf", "cr", "no-final-newline"])
def test_files_that_just_work(tmp_path, encoding):
    path = tmp_path / "p.grad"
    path.write_bytes(encoding(PROGRAM))
    check_ok(cli("-f", str(path)))
    check_ok(cli("-f", "-", stdin=encoding(PROGRAM)))
    check_ok(cli(stdin=encoding(PROGRAM)))


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ("dir", "is a directory, not a program file"),
    (b"x = 1\n\xff\xfe = 2\n", "is not UTF-8 text (invalid byte at offset 6)"),
    (b"\x00\x01\x02binary", "contains NUL bytes"),
    (b"", "empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "is not UTF-8 text (invalid byte at offset 0)"),
])
def test_files_that_get_a_clear_message(tmp_path, content, message):
    path = tmp_path / "p.grad"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    proc = cli("-f", str(path))
    err = proc.stderr.decode()
    if content == b"":  # an empty file is an empty program: nothing to do, and the output says so
        assert proc.returncode == 0, err
        assert json.loads(proc.stdout)["note"] == "the program is empty: nothing to evaluate"
        return
    assert proc.returncode == 2, err
    assert message in err
    assert "Traceback" not in err
    assert json.loads(proc.stdout)["error"]["kind"] == "usage"


def test_stdin_variants():
    assert cli(stdin=b"").returncode == 2  # nothing piped: no program
    assert cli("-f", "-", stdin=b"\xff").returncode == 2
    proc = cli("1 + 1", "-f", "prog.grad")
    assert proc.returncode == 2 and b"not both" in proc.stderr
