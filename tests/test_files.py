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


# -- in-process: the same cases through cli.main, with stdin replaced -------------------------------

def run_in_process(args, stdin_bytes=None, monkeypatch=None):
    import contextlib
    import io
    from gradcli.cli import main
    if stdin_bytes is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin_bytes), encoding="utf-8"))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["eval", *args, "--json"])
    return code, json.loads(out.getvalue()), err.getvalue()


@pytest.mark.parametrize("data, code, message", [
    (b"\xef\xbb\xbfprint(1)\n", 0, None),
    (b"print(1)\r\nprint(2)\r\n", 0, None),
    (b"print(1)\rprint(2)", 0, None),
    (b"x = 1 \\\r\n + 1\r\nprint(x)", 0, None),
    (b"with no_grad():\r\n    print(1)\r\n", 0, None),
    (b"   \n\n", 0, None),
    (b"x\x00", 2, "stdin contains NUL bytes: it looks like a binary file, not a program"),
    (b"\xff\xfep\x00", 2, "stdin is not UTF-8 text (it looks like UTF-16) (invalid byte at offset 0)"),
    (b"x = '\xe9'", 2, "stdin is not UTF-8 text (invalid byte at offset 5)"),
    (b"\x89PNG\r\n\x1a\n", 2, "stdin is not UTF-8 text (invalid byte at offset 0)"),
    (b"\x01\x02\x03", 2, "unexpected character U+0001"),
])
def test_stdin_through_dash_f(monkeypatch, data, code, message):
    got, doc, err = run_in_process(["-f", "-"], data, monkeypatch)
    assert got == code, err
    if message is None:
        assert doc["error"] is None
    else:
        assert doc["error"]["message"].startswith(message)
        assert "Traceback" not in err


def test_printed_lines_are_the_same_with_any_line_ending(monkeypatch):
    program = "print(1)\nwith no_grad():\n    print(2)\nprint(3)\n"
    outputs = set()
    for ending in ("\n", "\r\n", "\r"):
        code, doc, _ = run_in_process(["-f", "-"], program.replace("\n", ending).encode(), monkeypatch)
        assert code == 0
        outputs.add(tuple(doc["printed"]))
    assert outputs == {("1", "2", "3")}


def test_errors_in_crlf_files_point_at_the_right_line_and_column(tmp_path):
    path = tmp_path / "p.grad"
    path.write_bytes(b"x = 1\r\ny = (x +\r\nz = 2\r\n")
    proc = cli("-f", str(path))
    doc = json.loads(proc.stdout)
    assert proc.returncode == 2 and (doc["error"]["line"], doc["error"]["column"]) == (3, 3)
    assert "('(' at line 2, column 5 is still open)" in doc["error"]["message"]
    assert b"\r" not in proc.stderr  # the source line shown under the message has no stray CR


@pytest.mark.parametrize("make, message", [
    (lambda p: p.parent / "missing" / "p.grad", "no such file: "),
    (lambda p: p.parent, "is a directory, not a program file"),
    (lambda p: (p.parent / "link.grad").symlink_to(p.parent / "gone") or p.parent / "link.grad", "no such file: "),
    (lambda p: (p.write_bytes(b"\xfe\xffx\x00"), p)[1], "(it looks like UTF-16)"),
])
def test_more_files_that_get_a_clear_message(tmp_path, make, message):
    path = tmp_path / "p.grad"
    target = make(path)
    code, doc, err = run_in_process(["-f", str(target)])
    assert code == 2 and doc["error"]["kind"] == "usage"
    assert message in doc["error"]["message"] and message in err


def test_size_limit_applies_to_files_and_stdin(tmp_path, monkeypatch):
    path = tmp_path / "big.grad"
    path.write_bytes(b"x = 1\n" * 100)
    code, doc, err = run_in_process(["-f", str(path), "--max-program-size", "100"])
    assert code == 2 and doc["error"]["message"] == f"{path} is larger than the program size limit of 100 bytes"
    assert "raise it with --max-program-size BYTES" in err
    code, doc, _ = run_in_process(["-f", "-", "--max-program-size", "100"], b"x = 1\n" * 100, monkeypatch)
    assert code == 2 and doc["error"]["message"] == "stdin is larger than the program size limit of 100 bytes"
    code, doc, _ = run_in_process(["-f", str(path), "--max-program-size", "600"])
    assert code == 0
