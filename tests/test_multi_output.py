"""Multi-output nodes (unbind, split, chunk, iterating over a tensor) against torch: one node for
all outputs, ``output_nr``, edges ``(node, output_nr)``, gradients with missing outputs, hooks,
retain_grad, ``backward(inputs=)``, ``autograd.grad``, anomaly mode, double backward, the views'
in-place errors, and the CLI's tables and JSON."""

import json
import re
import warnings

import numpy as np
import pytest

import gradcli as gc

torch = pytest.importorskip("torch")


def fns(t):
    """next_functions as (name, output_nr) pairs."""
    return [(None if n is None else n.name(), i) for n, i in t.grad_fn.next_functions]


def walk(node):
    """The graph under ``node`` as (depth, name, output_nr) rows, depth first (an explicit stack)."""
    rows, stack = [], [(node, 0, 0)]
    while stack:
        n, nr, depth = stack.pop()
        rows.append((depth, None if n is None else n.name(), nr))
        if n is not None:
            stack.extend((c, i, depth + 1) for c, i in reversed(n.next_functions))
    return rows


def same(a, b):
    """A gradcli tensor (or None) equal to a torch one."""
    if a is None or b is None:
        assert a is None and b is None
        return
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)


def both(fn):
    """``fn(lib)`` under gradcli and torch."""
    return fn(gc), fn(torch)


def base(lib, shape=(3, 4)):
    n = int(np.prod(shape))
    return lib.tensor(np.arange(1.0, n + 1).reshape(shape).tolist(), requires_grad=True)


SPLITS = [
    ("unbind", lambda x: x.unbind()),
    ("unbind dim 1", lambda x: x.unbind(1)),
    ("unbind dim -1", lambda x: x.unbind(-1)),
    ("split 2", lambda x: x.split(2)),
    ("split 3 dim 1", lambda x: x.split(3, dim=1)),
    ("split sizes", lambda x: x.split([1, 2])),
    ("split sizes dim 1", lambda x: x.split((1, 0, 3), 1)),
    ("chunk 2", lambda x: x.chunk(2)),
    ("chunk 3 dim 1", lambda x: x.chunk(3, 1)),
    ("split too big", lambda x: x.split(5)),
    ("iteration", lambda x: tuple(iter(x))),
]


@pytest.mark.parametrize("name,f", SPLITS, ids=[s[0] for s in SPLITS])
def test_outputs_share_one_node(name, f):
    (ga, ta) = both(lambda lib: f(base(lib) * 1))
    assert len(ga) == len(ta) and type(ga) is tuple
    for g, t in zip(ga, ta):
        same(g, t)
        assert g.grad_fn.name() == t.grad_fn.name()
        assert g.output_nr == t.output_nr
        assert g.grad_fn is ga[0].grad_fn
        assert g._is_view() and t._is_view()
        assert fns(g) == fns(t) == [("MulBackward0", 0)]
        assert tuple(g.shape) == tuple(t.shape)


@pytest.mark.parametrize("name,f", SPLITS, ids=[s[0] for s in SPLITS])
@pytest.mark.parametrize("used", ["all", "last", "first"])
def test_gradients_with_missing_outputs(name, f, used):
    def run(lib):
        x = base(lib)
        parts = f(x)
        chosen = {"all": parts, "last": parts[-1:], "first": parts[:1]}[used]
        total = sum(((p * (i + 2)) ** 2).sum() for i, p in enumerate(chosen))
        total.backward()
        return x.grad, [fns(p) for p in parts], [(n, i) for n, i in fns_of(total)]
    (gg, gf, gt), (tg, tf, tt) = both(run)
    same(gg, tg)
    assert gf == tf and gt == tt


def fns_of(t):
    return [(None if n is None else n.name(), i) for n, i in t.grad_fn.next_functions]


def test_edges_carry_output_numbers():
    def run(lib):
        x = base(lib)
        a, b, c = x.unbind()
        y = c * b + a
        p, q = x.split([1, 2])
        z = lib.cat([q, p])
        w = lib.stack([c, a])
        return walk(y.grad_fn), walk(z.grad_fn), walk(w.grad_fn), c.output_nr, q.output_nr
    g, t = both(run)
    assert g == t
    assert ("UnbindBackward0", 2) in [r[1:] for r in g[0]]


def test_an_output_of_an_output():
    def run(lib):
        x = base(lib, (2, 3, 2))
        inner = x.unbind()[1].split(1, dim=0)[2]
        out = (inner * 3).sum()
        out.backward()
        return x.grad, walk(out.grad_fn), inner.output_nr
    (gg, gw, gn), (tg, tw, tn) = both(run)
    same(gg, tg)
    assert gw == tw and gn == tn == 2


@pytest.mark.filterwarnings("ignore:The .grad attribute")
def test_hooks_and_retain_grad_per_output():
    def run(lib):
        seen = []
        x = base(lib, (3,))
        p, q, r = x.unbind()
        q.retain_grad()
        p.register_hook(lambda g: seen.append(("p", g.item())))
        q.register_hook(lambda g: seen.append(("q", g.item())) or g * 10)
        handle = r.register_hook(lambda g: seen.append(("r", g.item())))
        handle.remove()
        (p * 2 + q * 3 + r * 4).backward()
        return x.grad, q.grad, p.grad, r.grad, seen
    g, t = both(run)
    for a, b in zip(g[:4], t[:4]):
        same(a, b)
    assert g[4] == t[4]


def test_node_hooks_see_every_output():
    def run(lib):
        seen = []
        x = base(lib, (2, 2))
        u, v = x.unbind()
        u.grad_fn.register_prehook(lambda go: seen.append(("pre", [g.tolist() for g in go])))
        u.grad_fn.register_hook(lambda gi, go: seen.append(("post", [g.tolist() for g in gi],
                                                             [g.tolist() for g in go])))
        (u * v).sum().backward()
        return x.grad, seen
    (gg, gs), (tg, ts) = both(run)
    same(gg, tg)
    assert gs == ts


def test_backward_inputs_and_autograd_grad():
    def run(lib):
        x = base(lib, (2, 2))
        u, v = x.unbind()
        w = (u * 3 + v * v).sum()
        grads = lib.autograd.grad(w, [v, x, u], retain_graph=True)
        w.backward(inputs=[u])
        return u.grad, x.grad, grads
    (gu, gx, gg), (tu, tx, tg) = both(run)
    same(gu, tu)
    same(gx, tx)
    for a, b in zip(gg, tg):
        same(a, b)


def test_backward_from_an_output():
    def run(lib):
        x = base(lib, (2, 3))
        a, b = x.unbind()
        b.backward(lib.tensor([1.0, 2.0, 3.0]))
        return x.grad
    same(*both(run))


def test_unused_output_autograd_grad_allow_unused():
    def run(lib):
        x = base(lib, (2, 3))
        a, b = x.unbind()
        c = a * 2
        return lib.autograd.grad(c.sum(), [a, b], allow_unused=True, materialize_grads=True)
    (ga, gb), (ta, tb) = both(run)
    same(ga, ta)
    same(gb, tb)


def test_anomaly_mode():
    def run(lib):
        with warnings.catch_warnings(), lib.autograd.set_detect_anomaly(True):
            warnings.simplefilter("ignore")
            x = base(lib, (2, 2))
            u, v = x.unbind()
            (u * v).sum().backward()
        return x.grad
    same(*both(run))


@pytest.mark.parametrize("used", ["both", "second"])
@pytest.mark.parametrize("kind", ["unbind", "split", "chunk", "split sizes"])
def test_double_backward(kind, used):
    def run(lib):
        x = base(lib, (4, 2))
        parts = {"unbind": lambda: x.unbind(), "split": lambda: x.split(2), "chunk": lambda: x.chunk(2),
                 "split sizes": lambda: x.split([1, 3])}[kind]()
        first, second = parts[0], parts[-1]
        y = (second ** 3).sum() * x.sum() if used == "second" else (first ** 2 * second.sum() ** 3).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), x)
        return g, gg, walk(g.grad_fn)
    (gg1, gg2, gw), (tg1, tg2, tw) = both(run)
    same(gg1, tg1)
    same(gg2, tg2)
    assert gw == tw


def test_gradcheck_through_split_and_unbind():
    from helpers import numeric_grads
    x = gc.tensor(np.random.default_rng(0).normal(size=(4, 3)).tolist(), dtype=gc.float64, requires_grad=True)

    def fn(t):
        a, b = t.split([3, 1])
        rows = a.unbind(1)
        return rows[0] * rows[2].exp() + b.sum() * rows[1]
    cot = np.random.default_rng(1).normal(size=(3,))
    fn(x).backward(gc.tensor(cot.tolist(), dtype=gc.float64))
    np.testing.assert_allclose(x.grad.numpy(), numeric_grads(fn, [x], cot)[0], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("code", [
    "x.unbind()[1].mul_(2)",
    "(x * 1).unbind()[0].add_(1)",
    "(x * 1).split([1, 2])[1].add_(1)",
    "(x * 1).chunk(2)[1].sub_(1)",
    "(x * 1).unbind()[1][0].add_(1)",
    "(x * 1).unbind()[2].view(4).add_(1)",
    "x.detach().unbind()[0].mul_(2)",
    "torch.ones(3, 2).unbind()[0].mul_(2)",
])
def test_in_place_on_an_output_view(code):
    def run(lib):
        x = base(lib)
        try:
            eval(code, {"x": x, "torch": lib})  # noqa: S307  (test code, fixed strings)
        except RuntimeError as exc:
            return exc
        return None
    g, t = both(run)
    assert (g is None and t is None) or (isinstance(g, type(t)) and str(g) == str(t))


def test_in_place_under_no_grad_is_allowed():
    def run(lib):
        x = base(lib)
        z = x * 1
        with lib.no_grad():
            r = z.unbind()[1]
            r.mul_(2)
        return z.detach()
    same(*both(run))


@pytest.mark.parametrize("code", [
    "x.split([1, 1])", "x.split(0)", "x.split(-1)", "x.split([1, -1, 3])", "x.chunk(0)", "x.unbind(2)",
    "s.unbind()", "s.split(1)", "s.chunk(1)", "x.split(2.0)", "list(s)",
])
def test_errors_as_torch(code):
    def run(lib):
        env = {"x": base(lib), "s": lib.tensor(3.0)}
        try:
            eval(code, env)  # noqa: S307  (test code, fixed strings)
        except (RuntimeError, IndexError, TypeError) as exc:
            return exc
        return None
    g, t = both(run)
    assert t is not None and isinstance(g, type(t)) and str(g) == str(t)


def test_empty_and_saved_fields():
    def run(lib):
        x = base(lib)
        e = lib.zeros(0, 2)
        s, w, u = x.split(2, -1)[0].grad_fn, x.split([1, 2])[1].grad_fn, x.unbind(-1)[0].grad_fn
        return ([tuple(t.shape) for t in e.unbind()], [tuple(t.shape) for t in e.split(2)],
                [tuple(t.shape) for t in lib.ones(5).chunk(3)], len(lib.ones(6).chunk(4)),
                s._saved_dim, s._saved_split_size, tuple(s._saved_self_sym_sizes), u._saved_dim,
                tuple(w._saved_split_sizes), w._saved_dim)
    g, t = both(run)
    assert g == t


def test_namespaces_and_ops_listing():
    t = base(gc)
    assert [p.tolist() for p in gc.unbind(t, 1)] == [p.tolist() for p in t.unbind(1)]
    assert [p.tolist() for p in gc.split(t, 2)] == [p.tolist() for p in gc.chunk(t, 2)]
    from gradcli.ops.registry import FUNCTIONS
    assert {"unbind", "split", "chunk"} <= set(FUNCTIONS)


PROGRAM = ("x = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)\n"
           "total = 0\n"
           "for r in x:\n"
           "    total = total + (r * r).sum()\n"
           "a, b = x.split([1, 2])\n"
           "q = b * 2\n"
           "r = x.unbind()[2] * 3\n"
           "total.backward()\n")


def test_cli_json_and_table(capsys):
    from gradcli.cli.fast import main
    code = main(["eval", "import torch\n" + PROGRAM, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    variables = {v["name"]: v for v in doc["variables"]}
    assert variables["q"]["next_functions"] == [["SplitWithSizesBackward0", 1], [None, 0]]
    assert variables["r"]["next_functions"] == [["UnbindBackward0", 2], [None, 0]]
    assert variables["x"]["grad"] == [[2.0, 4.0], [6.0, 8.0], [10.0, 12.0]]
    code = main(["eval", "import torch\n" + PROGRAM])
    out = capsys.readouterr().out
    assert code == 0
    assert re.search(r"\(<UnbindBackward0>,\s*2\)", out) and re.search(r"\(<SplitWithSizesBackward0>,\s*1\)", out)


def test_cli_in_place_on_an_output_exits_as_a_runtime_error(capsys):
    from gradcli.cli.fast import main
    code = main(["eval", "import torch\nx = torch.ones(3, 2, requires_grad=True)\nfor r in x:\n    r.mul_(2)\n", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3
    assert doc["error"]["message"].startswith("Output 0 of Unbind is a view and is being modified inplace.")
    assert doc["error"]["line"] == 4
