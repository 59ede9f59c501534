"""Code copied from the tutorials a learner of PyTorch autograd meets first (examples/tutorials/*.py):
PyTorch's 60 Minute Blitz (tensors, autograd), its Learn the Basics (tensors, torch.autograd) and
Dive into Deep Learning's automatic differentiation section, each as its author wrote it (a seed
added where random values are printed). `gradcli eval` must print what Python with torch 2.13 prints,
line for line, as the seed snippets (tests/test_seed_snippets.py: the same goldens, regenerated with
GRADCLI_REGEN=1 where torch is installed)."""

from pathlib import Path

import pytest

from test_seed_snippets import check, expected, torch_run

TUTORIALS = Path(__file__).resolve().parent.parent / "examples" / "tutorials"
FILES = sorted(TUTORIALS.glob("*.py"))


def test_there_are_tutorials_and_each_has_a_golden():
    assert len(FILES) >= 5
    for path in FILES:
        assert (TUTORIALS / "expected" / f"{path.stem}.json").exists(), path.name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_tutorial_as_written_prints_what_torch_prints(path):
    check(path)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden_is_what_torch_prints(path):
    assert expected(path) == torch_run(path.read_text())
