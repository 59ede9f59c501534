"""benchmarks/bench_ops.py measures the whole op table: an op added without a way to call it in
the benchmark fails here (no timing is asserted: performance lives in benchmarks/)."""

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))
import bench_ops  # noqa: E402

import gradcli  # noqa: E402


def test_every_differentiable_op_has_a_case():
    cases, missing = bench_ops.all_cases()
    assert missing == []
    measured = {c.op for c in cases}
    from gradcli.ops import registry
    for info in registry.FUNCTIONS.values():
        if info.differentiable and info.category not in bench_ops._SKIPPED_CATEGORIES and info.name != "zero_" \
                and info.alias_of is None:  # (an alias is measured under its op's name)
            assert info.name in measured, info.name


@pytest.mark.parametrize("case", bench_ops.all_cases()[0], ids=lambda c: c.label)
def test_every_case_runs_forward_and_backward_on_gradcli(case):
    env = bench_ops.environment(gradcli)
    out = case.call(gradcli, env)
    gradcli.autograd.backward([out], [gradcli.ones_like(out)])
    assert any(t.grad is not None for t in env.values() if t.requires_grad), case.label


def test_cases_match_torch_values():
    torch = pytest.importorskip("torch")
    for case in bench_ops.all_cases()[0]:
        ours = case.call(gradcli, bench_ops.environment(gradcli))
        theirs = case.call(torch, bench_ops.environment(torch))
        np.testing.assert_allclose(np.array(ours.detach().tolist()), theirs.detach().numpy(), rtol=1e-5,
                                   err_msg=case.label)
        assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__, case.label


def test_the_split_times_both_halves_and_turns_the_collector_back_on():
    import gc

    import bench_ops_split
    cases, _ = bench_ops.all_cases(["lerp"])
    forward, backward = bench_ops_split.split(gradcli, cases[0], calls=5, rounds=1)
    assert forward > 0 and backward > 0
    assert gc.isenabled()
