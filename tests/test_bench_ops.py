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


def test_a_batch_repeats_the_rows_of_every_leaf_of_two_or_more_dims():
    env = bench_ops.environment(gradcli, batch=6)
    assert tuple(env["x"].shape) == (6, 2) and tuple(env["m"].shape) == (6, 3) and tuple(env["b3"].shape) == (6, 2, 2)
    assert tuple(env["row"].shape) == (2,) and env["labels"].tolist() == [1, 0, 1, 0, 1, 0]
    assert env["x"].tolist()[4] == env["x"].tolist()[0] and env["mask"].tolist()[3] == [False, True]
    assert env["x"].requires_grad and not env["labels"].requires_grad and not env["mask"].requires_grad


@pytest.mark.parametrize("batch", [1, 3, 64])
def test_at_other_batches_every_case_torch_runs_gives_torchs_values_and_gradients(batch):
    """The op table's cases on leaves of 1, 3 and 64 rows (``bench_ops.py --batch N``): shapes no
    case was written for. Where torch's call fails (a recipe's shapes for 2 rows), gradcli's fails too."""
    torch = pytest.importorskip("torch")
    for case in bench_ops.all_cases()[0]:
        env_t = bench_ops.environment(torch, batch=batch)
        env_g = bench_ops.environment(gradcli, batch=batch)
        try:
            theirs = case.call(torch, env_t)
            theirs.backward(torch.ones_like(theirs))
        except Exception:
            with pytest.raises(Exception):
                ours = case.call(gradcli, env_g)
                ours.backward(gradcli.ones_like(ours))
            continue
        ours = case.call(gradcli, env_g)
        ours.backward(gradcli.ones_like(ours))
        assert list(ours.shape) == list(theirs.shape), case.label
        np.testing.assert_allclose(np.array(ours.detach().tolist()), theirs.detach().numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=case.label)
        for name, t in env_t.items():
            g = env_g[name].grad
            assert (g is None) == (t.grad is None), (case.label, name)
            if g is not None:
                np.testing.assert_allclose(np.array(g.tolist()), t.grad.numpy(force=True), rtol=1e-5, atol=1e-5,
                                           err_msg=f"{case.label}: {name}.grad")
