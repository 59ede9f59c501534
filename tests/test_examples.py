"""Every file in examples/ runs through `gradcli eval --json` and matches its checked-in
expected document (values, grads, grad_fns, printed output, checks and errors)."""

import json
import re
from pathlib import Path

import pytest

from gradcli.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FILES = sorted(EXAMPLES.glob("*.grad"))


def _args(path: Path):
    match = re.search(r"gradcli: (.*)", path.read_text())
    return match.group(1).split() if match else []


def run_json(capsys, path):
    code = main(["eval", "-f", str(path), "--json", *_args(path)])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_example_matches_expected(capsys, path):
    code, doc = run_json(capsys, path)
    expected = json.loads((EXAMPLES / "expected" / f"{path.stem}.json").read_text())
    assert doc == expected
    want_code = 0 if expected["error"] is None else {"autograd": 3, "name": 2, "shape": 2}[expected["error"]["kind"]]
    if any(not c["passed"] for c in expected["checks"]):
        want_code = 1
    assert code == want_code


def test_every_example_has_expected_output():
    assert FILES, "no examples found"
    for path in FILES:
        assert (EXAMPLES / "expected" / f"{path.stem}.json").exists(), path.name


def test_seed_outputs_read_as_the_articles_say(capsys):
    """Spot-check the lines the seed articles print, in PyTorch's format."""
    _, doc = run_json(capsys, EXAMPLES / "seed0_variable.grad")
    assert doc["printed"][:3] == ["None", "tensor([[0.2500, 0.2500],\n        [0.2500, 0.2500]])", "None"]
    _, doc = run_json(capsys, EXAMPLES / "seed2_accumulate.grad")
    assert doc["printed"][2:5] == ["tensor([0.3333, 0.3333, 0.3333])", "tensor([0.6667, 0.6667, 0.6667])",
                                   "tensor([0., 0., 0.])"]
    _, doc = run_json(capsys, EXAMPLES / "seed3_quickstart.grad")
    assert doc["printed"][4] == ("tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>) "
                                 "tensor(27., grad_fn=<MeanBackward0>)")
    assert doc["printed"][5] == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"
    _, doc = run_json(capsys, EXAMPLES / "seed4_next_functions.grad")
    assert doc["printed"][3] == "((<AccumulateGrad>, 0), (None, 0)) ((<MulBackward0>, 0), (<AccumulateGrad>, 0))"
    assert doc["printed"][4] == "True"
    _, doc = run_json(capsys, EXAMPLES / "seed2_retain_graph.grad")
    assert doc["error"]["kind"] == "autograd"
    assert doc["error"]["message"].startswith("Trying to backward through the graph a second time")
    assert doc["error"]["line"] == 9


def _table_text(capsys, monkeypatch, path, columns=160):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", str(columns))
    code = main(["eval", "-f", str(path), *_args(path)])
    out = capsys.readouterr().out
    return code, "\n".join(line.rstrip() for line in out.splitlines()).strip("\n") + "\n"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_example_table_matches_golden(capsys, monkeypatch, path):
    """The default output (printed lines, the variables table, checks, notes) is checked in too:
    examples/expected/<name>.txt, rendered at 160 columns without colour. Regenerate a golden
    with GRADCLI_REGEN=1 after reviewing the change."""
    import os
    code, text = _table_text(capsys, monkeypatch, path)
    golden = EXAMPLES / "expected" / f"{path.stem}.txt"
    if os.environ.get("GRADCLI_REGEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    assert "\x1b[" not in text  # no colour codes when piped


def test_ci_script_runs(tmp_path):
    """examples/ci.sh, as a user's CI would run it (gradcli as `python -m gradcli`)."""
    import os
    import subprocess
    import sys
    shim = tmp_path / "gradcli"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gradcli "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "GRADCLI": str(shim), "PYTHONPATH": str(EXAMPLES.parent)}
    proc = subprocess.run(["sh", str(EXAMPLES / "ci.sh")], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("gradcli checks passed")


def test_readme_shows_real_output(capsys, monkeypatch):
    """The README's first screen shows what the example really prints."""
    readme = (EXAMPLES.parent / "README.md").read_text()
    assert './install.sh && export PATH="$HOME/.local/bin:$PATH" && gradcli eval -f examples/seed3_quickstart.grad' \
        in readme
    assert "pip install -e '.[test]' torch==2.13.0 && python -m pytest -q" in readme
    shown = readme.split("The first command prints (real output, `NO_COLOR=1`, 80 columns):\n\n```\n")[1]
    shown = shown.split("```")[0]
    _, text = _table_text(capsys, monkeypatch, EXAMPLES / "seed3_quickstart.grad", columns=80)
    assert shown == text


def test_readme_installs_into_an_environment():
    """A bare ``pip install .`` may put the script where PATH does not look (a user install's
    ~/.local/bin) or be refused (Debian's PEP 668): the install command makes .venv (install.sh),
    and the test command makes and activates it, so the ``gradcli`` each runs is the one installed."""
    readme = (EXAMPLES.parent / "README.md").read_text()
    assert './install.sh && export PATH="$HOME/.local/bin:$PATH" && gradcli eval -f examples/seed3_quickstart.grad' \
        in readme
    assert ("python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' torch==2.13.0 && "
            "python -m pytest -q") in readme
    script = (EXAMPLES.parent / "install.sh").read_text()
    assert '"$PYTHON" -m venv "$VENV"' in script and '"$VENV/bin/python" -m pip install' in script


STUB_PYTHON = """#!/bin/sh
printf '#!/bin/sh\\necho installed\\n' > "$(dirname "$0")/gradcli"
chmod +x "$(dirname "$0")/gradcli"
"""


def _install(tmp_path, path_dirs, **env):
    """install.sh with a stand-in environment (its python "installs" by writing bin/gradcli), HOME in
    tmp_path and PATH of ``path_dirs`` then /usr/bin:/bin: (code, stdout, stderr, the venv's gradcli)."""
    import subprocess
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    stub = venv / "bin" / "python"
    stub.write_text(STUB_PYTHON)
    stub.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    full = {"HOME": str(home), "VENV": str(venv), "PATH": ":".join([*map(str, path_dirs), "/usr/bin", "/bin"]),
            **env}
    proc = subprocess.run(["sh", str(EXAMPLES.parent / "install.sh")], capture_output=True, text=True, env=full,
                          timeout=60)
    return proc.returncode, proc.stdout, proc.stderr, venv / "bin" / "gradcli"


def test_install_links_gradcli_into_a_folder_already_on_path(tmp_path):
    """~/.local/bin where PATH has it (made if missing); the link runs the installed command."""
    import subprocess
    local = tmp_path / "home" / ".local" / "bin"
    code, out, err, command = _install(tmp_path, [local])
    assert code == 0, err
    assert (local / "gradcli").resolve() == command.resolve()
    assert out == f"gradcli: {local}/gradcli -> {command}\n"
    done = subprocess.run(["gradcli"], capture_output=True, text=True, env={"PATH": f"{local}:/usr/bin:/bin"})
    assert done.stdout == "installed\n"


def test_install_falls_back_to_a_writable_path_folder_under_home(tmp_path):
    mine = tmp_path / "home" / "tools"
    mine.mkdir(parents=True)
    code, out, err, command = _install(tmp_path, [tmp_path / "elsewhere", mine])
    assert code == 0, err
    assert (mine / "gradcli").resolve() == command.resolve()


def test_install_without_a_folder_makes_local_bin_and_puts_it_on_path_in_new_shells(tmp_path):
    """A user's shell before ~/.local/bin exists (Debian's ~/.profile adds it only once it does), no
    folder of PATH writable: ~/.local/bin is made and linked into; ~/.profile and the shells' rc files
    that exist get a line putting it on PATH, once, where they do not mention it already."""
    import subprocess
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("alias ll='ls -l'\n")
    (home / ".zshrc").write_text('path+=("$HOME/.local/bin")\n')  # mentions it: left alone
    local = home / ".local" / "bin"
    code, out, err, command = _install(tmp_path, [tmp_path / "missing"])
    assert code == 0, err
    assert (local / "gradcli").resolve() == command.resolve()
    assert out == (f"gradcli: added ~/.local/bin to PATH in {home}/.profile\n"
                   f"gradcli: added ~/.local/bin to PATH in {home}/.bashrc\n"
                   'gradcli: ~/.local/bin is on PATH in new shells; in this one: export PATH="$HOME/.local/bin:$PATH"\n'
                   f"gradcli: {local}/gradcli -> {command}\n")
    assert (home / ".zshrc").read_text() == 'path+=("$HOME/.local/bin")\n'
    for rc in (".profile", ".bashrc"):  # a new shell that reads it finds gradcli
        shell = subprocess.run(["sh", "-c", f". {home / rc} && gradcli"], capture_output=True, text=True,
                               env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
        assert shell.stdout == "installed\n", (rc, shell.stderr)
    again = _install(tmp_path, [tmp_path / "missing"])  # a second install adds no second line
    assert again[0] == 0 and (home / ".bashrc").read_text().count("# gradcli (install.sh)") == 1
    assert "added" not in again[1]


def test_install_may_leave_the_start_up_files_and_link_nothing(tmp_path):
    code, out, err, _ = _install(tmp_path, [tmp_path / "missing"], GRADCLI_PROFILE="none")
    assert code == 0 and not (tmp_path / "home" / ".profile").exists()
    assert (tmp_path / "home" / ".local" / "bin" / "gradcli").exists()
    code, out, err, command = _install(tmp_path, [tmp_path / "home" / "bin"], GRADCLI_BIN="none")
    assert code == 0 and out == "" and not (tmp_path / "home" / "bin" / "gradcli").exists()
    assert err == (f"gradcli: installed as {command} (GRADCLI_BIN=none: no link); run it by that path, "
                   f"or add {command.parent} to PATH\n")


def test_ci_runs_the_readme_test_command():
    script = (EXAMPLES.parent / ".ci" / "run").read_text()
    assert "pip install -e '.[test]' torch==2.13.0 && python -m pytest -q" in script
    assert "./install.sh && PATH=$bin:$PATH gradcli eval -f examples/seed3_quickstart.grad" in script
    assert '-m venv "$VENV"' in script and '. "$VENV/bin/activate"' in script  # its own environment
