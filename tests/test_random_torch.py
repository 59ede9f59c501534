"""torch's random numbers: after manual_seed(n) (or --seed n) gradcli draws exactly torch's values.

Every path of torch's CPU kernels is exercised against torch itself: uniform (one 32-bit word
per float32, two per float64), normal below 16 elements (Box-Muller in double with the second
value kept in the generator, across calls) and from 16 up (blocks of 16, the tail drawn again,
the AVX2 float32 log/sincos), randint (one word or two by the range), randperm, and sequences of
calls that carry the generator's state over.
"""

import json

import numpy as np
import pytest

import gradcli as gc
from gradcli.cli.fast import main as cli_main

torch = pytest.importorskip("torch")

SIZES = (1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 100, 1000, 4097, 100_000)
SEEDS = (0, 1, 42, 2**40 + 7)
DTYPES = (("float32", torch.float32), ("float64", torch.float64), ("float16", torch.float16))


def same(ours, theirs):
    a = np.asarray(ours.tolist())
    b = theirs.float().numpy() if theirs.dtype == torch.float16 else theirs.numpy()
    return a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype,tdtype", DTYPES)
def test_rand_randn_normal_every_size_in_one_sequence(seed, dtype, tdtype):
    # One generator for the whole sequence: each call must leave torch's state (words consumed,
    # the cached normal sample) for the next.
    gc.manual_seed(seed)
    torch.manual_seed(seed)
    for n in SIZES:
        assert same(gc.rand(n, dtype=dtype), torch.rand(n, dtype=tdtype)), ("rand", n)
        assert same(gc.randn(n, dtype=dtype), torch.randn(n, dtype=tdtype)), ("randn", n)
        assert same(gc.normal(2.5, 0.3, (n,), dtype=dtype), torch.normal(2.5, 0.3, (n,), dtype=tdtype)), n


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_randint_randperm_every_size(seed):
    gc.manual_seed(seed)
    torch.manual_seed(seed)
    for n in SIZES:
        assert same(gc.randint(10, (n,)), torch.randint(10, (n,))), n
        assert same(gc.randint(-5, 2**30, (n,)), torch.randint(-5, 2**30, (n,))), n  # two words each
        assert same(gc.randperm(n), torch.randperm(n)), n


def test_shapes_like_and_tensor_arguments():
    gc.manual_seed(7)
    torch.manual_seed(7)
    assert same(gc.rand(2, 3, 4), torch.rand(2, 3, 4))
    assert same(gc.randn((5, 5)), torch.randn((5, 5)))
    assert same(gc.rand_like(gc.ones(3, 3)), torch.rand_like(torch.ones(3, 3)))
    assert same(gc.randn_like(gc.ones(4, 5, dtype=gc.float64)), torch.randn_like(torch.ones(4, 5, dtype=torch.float64)))
    assert same(gc.randint(3, 9, (2, 2)), torch.randint(3, 9, (2, 2)))
    assert same(gc.normal(gc.ones(5), 2.0), torch.normal(torch.ones(5), 2.0))
    assert same(gc.normal(gc.zeros(17), gc.ones(17) * 3), torch.normal(torch.zeros(17), torch.ones(17) * 3))
    assert same(gc.normal(1.0, gc.ones(3, 1) * 2), torch.normal(1.0, torch.ones(3, 1) * 2))


def test_odd_sizes_between_small_and_vectorised_paths_keep_the_cached_sample():
    # randn(3) leaves a cached second sample; randn(20) (vectorised) does not use it; randn(1) does.
    gc.manual_seed(11)
    torch.manual_seed(11)
    for n in (3, 20, 1, 1, 5, 16, 2):
        assert same(gc.randn(n, dtype="float64"), torch.randn(n, dtype=torch.float64)), n
        assert same(gc.randn(n), torch.randn(n)), n


def test_manual_seed_resets_the_cached_normal_and_initial_seed():
    gc.manual_seed(5)
    gc.randn(1)  # leaves a cached sample behind
    gc.manual_seed(5)
    torch.manual_seed(5)
    assert same(gc.randn(3), torch.randn(3))
    assert gc.initial_seed() == torch.initial_seed() == 5
    s = gc.seed()
    assert gc.initial_seed() == s
    torch.manual_seed(s)
    assert same(gc.rand(4), torch.rand(4))


def test_large_seed_uses_its_low_32_bits_like_torch():
    gc.manual_seed(2**63 + 12345)
    torch.manual_seed(2**63 + 12345)
    assert same(gc.rand(5), torch.rand(5))
    assert gc.initial_seed() == torch.initial_seed()


_DEFAULT_KERNEL = """
import numpy as np, torch, gradcli as gc
assert torch.backends.cpu.get_cpu_capability() == "DEFAULT"
gc.manual_seed(9); torch.manual_seed(9)
for n in (16, 17, 100, 5000):
    for d, td in (("float32", torch.float32), ("float64", torch.float64)):
        assert np.array_equal(np.asarray(gc.randn(n, dtype=d).tolist()), torch.randn(n, dtype=td).numpy()), n
        assert np.array_equal(np.asarray(gc.normal(1.5, 0.7, (n,), dtype=d).tolist()),
                              torch.normal(1.5, 0.7, (n,), dtype=td).numpy()), n
    assert np.array_equal(np.asarray(gc.normal(1.5, 0.7, (3,)).tolist()), torch.normal(1.5, 0.7, (3,)).numpy())
print("ok")
"""


def test_cpus_without_avx2_get_the_c_library_kernel():
    # torch's DEFAULT capability computes float32 Box-Muller with the C library's logf/cosf/sinf
    # and no fused multiply-add; gradcli follows it where torch would (ATEN_CPU_CAPABILITY=default).
    import os
    import subprocess
    import sys
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    done = subprocess.run([sys.executable, "-c", _DEFAULT_KERNEL], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_cli_seed_gives_torchs_values(capsys):
    code = cli_main(["eval", "y = randn(20) + rand(3, 2).sum()", "--seed", "123", "--json", "--no-backward"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    torch.manual_seed(123)
    want = torch.randn(20) + torch.rand(3, 2).sum()
    values = next(v for v in doc["variables"] if v["name"] == "y")["data"]
    assert np.array_equal(np.asarray(values, dtype=np.float32), want.numpy())


def test_manual_seed_in_a_program(capsys):
    code = cli_main(["eval", "manual_seed(4)\nr = randint(0, 100, (6,))\np = randperm(6)", "--json", "--no-backward"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    torch.manual_seed(4)
    values = {v["name"]: v["data"] for v in doc["variables"]}
    assert values["r"] == torch.randint(0, 100, (6,)).tolist()
    assert values["p"] == torch.randperm(6).tolist()


def test_bad_arguments_are_torchs_errors():
    with pytest.raises(gc.ShapeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=5"):
        gc.randint(5, 5, (2,))
    with pytest.raises(gc.GradTypeError):
        gc.manual_seed("1")
    gc.manual_seed(1.5)
    torch.manual_seed(1.5)
    assert same(gc.rand(2), torch.rand(2))
    with pytest.raises(gc.ShapeError, match=r"^normal expects std >= 0.0, but found std -1$"):
        gc.normal(0.0, -1.0, (2,))
    with pytest.raises(gc.ShapeError, match=r"^normal expects std >= 0.0, but found std -1$"):
        gc.normal(gc.ones(2), -1.0)
    with pytest.raises(gc.ShapeError, match=r"^Trying to create tensor with negative dimension -1: \[-1\]$"):
        gc.randperm(-1)


def test_a_generator_of_ones_own():
    from gradcli.ops import FUNCTIONS
    g, tg = FUNCTIONS["Generator"].fn(), torch.Generator()
    assert g.initial_seed() == tg.initial_seed()
    assert same(gc.rand(5, generator=g), torch.rand(5, generator=tg))
    assert g.manual_seed(5) is g
    tg.manual_seed(5)
    gc.manual_seed(0)  # the default generator is another one
    assert same(gc.randn(20, generator=g), torch.randn(20, generator=tg))
    assert same(gc.randint(0, 5, (3,), generator=g), torch.randint(0, 5, (3,), generator=tg))
    assert same(gc.randperm(6, generator=g), torch.randperm(6, generator=tg))
    assert same(gc.normal(0.0, 2.0, (3,), generator=g), torch.normal(0.0, 2.0, (3,), generator=tg))
    torch.manual_seed(0)
    assert same(gc.rand(3), torch.rand(3))
    with pytest.raises(gc.GradTypeError):
        gc.rand(2, generator=3)


def test_generator_in_a_program(capsys):
    code = cli_main(["eval", "g = Generator()\ng.manual_seed(5)\nx = rand(2, generator=g)", "--json", "--no-backward"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    tg = torch.Generator()
    tg.manual_seed(5)
    assert {v["name"]: v["data"] for v in doc["variables"]}["x"] == torch.rand(2, generator=tg).tolist()
