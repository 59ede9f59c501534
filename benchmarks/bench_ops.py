"""Every op of the table at small shapes, forward and backward, gradcli against PyTorch eager.

The cases come from the op table itself (``gradcli.ops.registry.FUNCTIONS``): every differentiable
function and operator, called the way programs call it:

- a binary operator with two tensors (``x * y``), a Python number on the right (``x * 1.5``) and on
  the left (``1.5 * x``), and a broadcast operand (``x * row``, row of shape (2,));
- a unary function as a function (``exp(x)``);
- a reduction over everything, over one dim, and over one dim keeping it;
- everything else (shape ops, linear algebra, clamp, where, in-place ops...) from a short recipe in
  :data:`RECIPES`, written once per op. An op of the table with no recipe and no rule is listed as
  "not measured" (and ``tests/test_bench_ops.py`` fails, so a new op cannot be forgotten).

One measurement: ``--calls`` outputs of the op computed from the same 2x2 float32 leaves (which
require grad; ``--batch N``: N rows each, the same cases at a program's batch size), then one ``autograd.backward(outputs, ones)``: the op's forward, its node, its
backward formula and the accumulation of its gradient into the leaf, per call. Rounds of gradcli and
torch alternate (``_common.time_interleaved``), ``--rounds`` of each after a warm-up; the figure is
gradcli's fastest round over torch's fastest round for the same case in the same run (the ratio of
the medians beside it: see ``measure``). Per family and overall: geometric means of the per-case
ratios. The objects that exist before the first case (both libraries' modules) are frozen out of
the collector's way (``gc.freeze``): the full collection before each round then takes ~1 ms
instead of ~90 ms; the rounds themselves collect as before (young objects only).

A second table times typical programs as chains (``y = y * 1.0001`` ... then one backward): the mixes
of the seed articles (Python-number operands, unary functions, an SGD-like step, reductions). A third
times an optimizer's in-place updates of a parameter under no_grad (``p -= 0.1 * g``, ``g.zero_()``).

    python benchmarks/bench_ops.py [--calls 1000] [--rounds 9] [--only NAME ...] [--markdown] [--device cuda]
    python benchmarks/bench_ops.py --batch 64 --calls 200   # the same cases on 64 rows
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
from dataclasses import dataclass

from _common import import_torch, machine, median, table, time_interleaved


@dataclass
class Case:
    op: str          # the op's name in the table
    family: str      # its category
    label: str       # how it is called, as a program would write it
    call: object     # call(lib, env) -> tensor;  env: the leaves (x, y, row, m, v...) of lib


# ------------------------------------------------------------------------------ inputs

def environment(lib, batch: int = 2):
    """The leaves every case draws from, built the same way on gradcli and torch: 2x2 float32
    values in [0.5, 1.5) (log, sqrt, pow stay finite), a row that broadcasts, a 2x3 matrix, vectors.
    ``batch``: the leading dim of every leaf of two or more dims, and of the labels (their rows
    repeated: the same values), as a program's batch of rows; the vectors keep their 2 elements."""
    def rows(values):  # the two rows repeated to ``batch``
        return values if batch == 2 else [values[i % 2] for i in range(batch)]

    def leaf(values, grad=True):
        return lib.tensor(rows(values) if isinstance(values[0], list) else values, requires_grad=grad)
    lib.manual_seed(0)  # F.dropout's mask: torch's for the seed, so the two libraries' values agree
    return {
        "x": leaf([[0.9, 1.2], [0.7, 1.4]]),
        "y": leaf([[1.1, 0.6], [1.3, 0.8]]),
        "row": leaf([0.75, 1.25]),
        "m": leaf([[0.5, 1.0, 1.5], [1.1, 0.9, 0.7]]),
        "v": leaf([0.6, 1.2]),
        "h": leaf([[0.45, -0.3], [0.2, 0.8]]),  # inside (-1, 1): asin, acos, atanh
        "u": leaf([[1.1, 1.6], [1.3, 1.9]]),  # above 1: acosh
        "u3": leaf([[0.7, 1.0, 0.5], [0.9, 1.1, 1.3]]),  # m's shape, for cross
        "p": leaf([[0.25, 0.6], [0.4, 0.9]]),  # inside (0, 1): logit
        "w": leaf([1.3, 0.8]),
        "b3": leaf([[[0.9, 1.2], [0.7, 1.4]], [[1.1, 0.6], [1.3, 0.8]]]),
        "mask": lib.tensor(rows([[True, False], [False, True]])),
        "target": lib.tensor(rows([[1.0, 0.0], [0.0, 1.0]])),
        "labels": lib.tensor(rows([1, 0])),
    }


# ------------------------------------------------------------------------------ cases

def _fn(lib, name):
    return getattr(lib, name)


def _F(lib):
    """torch.nn.functional, or gradcli's declarations of it: one dict look-up for either (an import
    statement per call would be timed as gradcli's, ~0.5 us of every F.* case)."""
    found = _FUNCTIONAL.get(lib)
    if found is None:
        if lib.__name__ == "torch":
            found = lib.nn.functional
        else:
            from gradcli.ops import nn_functional as found
        _FUNCTIONAL[lib] = found
    return found


_FUNCTIONAL: dict = {}


def _index(lib, values):
    """An int64 index tensor of ``lib``, made once (its construction is not the op's time)."""
    key = (lib.__name__, repr(values))
    found = _INDICES.get(key)
    if found is None:
        found = _INDICES[key] = lib.tensor(values)
    return found


_INDICES: dict = {}


# Ops whose calls cannot be guessed from their parameters: one recipe each, as a program writes it.
RECIPES = {
    "reshape": [("x.reshape(4)", lambda L, e: e["x"].reshape(4))],
    "view": [("x.view(4)", lambda L, e: e["x"].view(4))],
    "flatten": [("flatten(x)", lambda L, e: L.flatten(e["x"]))],
    "transpose": [("x.transpose(0, 1)", lambda L, e: e["x"].transpose(0, 1))],
    "t": [("x.t()", lambda L, e: e["x"].t())],
    "permute": [("x.permute(1, 0)", lambda L, e: e["x"].permute(1, 0))],
    "unsqueeze": [("x.unsqueeze(0)", lambda L, e: e["x"].unsqueeze(0))],
    "squeeze": [("x.unsqueeze(0).squeeze(0)", lambda L, e: e["x"].unsqueeze(0).squeeze(0))],
    "expand": [("row.expand(2, 2)", lambda L, e: e["row"].expand(2, 2))],
    "broadcast_to": [("broadcast_to(row, (2, 2))", lambda L, e: L.broadcast_to(e["row"], (2, 2)))],
    "expand_as": [("row.expand_as(x)", lambda L, e: e["row"].expand_as(e["x"]))],
    "view_as": [("x.view_as(y)", lambda L, e: e["x"].view_as(e["y"]))],
    "reshape_as": [("x.t().reshape_as(y)", lambda L, e: e["x"].t().reshape_as(e["y"]))],
    "type_as": [("x.type_as(m.double())", lambda L, e: e["x"].type_as(e["m"].double()))],
    "clone": [("x.clone()", lambda L, e: e["x"].clone())],
    "to": [("x.to(float64)", lambda L, e: e["x"].to(L.float64))],
    "cat": [("cat([x, y])", lambda L, e: L.cat([e["x"], e["y"]])),
            ("cat([x, y], dim=1)", lambda L, e: L.cat([e["x"], e["y"]], dim=1))],
    "stack": [("stack([x, y])", lambda L, e: L.stack([e["x"], e["y"]]))],
    "narrow": [("x.narrow(1, 0, 1)", lambda L, e: e["x"].narrow(1, 0, 1))],
    "select": [("x.select(0, 1)", lambda L, e: e["x"].select(0, 1))],
    # several outputs, one node: a case uses one output (the others' gradients are zeros)
    "unbind": [("x.unbind()[1]", lambda L, e: e["x"].unbind()[1]),
               ("x.unbind(1)[0] * x.unbind(1)[1]", lambda L, e: L.mul(*e["x"].unbind(1)))],
    "split": [("x.split(1)[1]", lambda L, e: e["x"].split(1)[1]),
              ("x.split([1, 1], dim=1)[0]", lambda L, e: e["x"].split([1, 1], dim=1)[0])],
    "chunk": [("x.chunk(2, dim=1)[1]", lambda L, e: e["x"].chunk(2, dim=1)[1])],
    "pow": [("x ** y", lambda L, e: e["x"] ** e["y"]),
            ("x ** 2", lambda L, e: e["x"] ** 2),
            ("x ** 0.5", lambda L, e: e["x"] ** 0.5),
            ("2 ** x", lambda L, e: 2 ** e["x"])],
    "clamp": [("x.clamp(0.8, 1.3)", lambda L, e: e["x"].clamp(0.8, 1.3)),
              ("x.clamp(min=1.0)", lambda L, e: e["x"].clamp(min=1.0))],
    "maximum": [("maximum(x, y)", lambda L, e: L.maximum(e["x"], e["y"]))],
    "minimum": [("minimum(x, y)", lambda L, e: L.minimum(e["x"], e["y"]))],
    "where": [("where(mask, x, y)", lambda L, e: L.where(e["mask"], e["x"], e["y"]))],
    "add_": [("x * 1 then add_(y)", lambda L, e: (e["x"] * 1).add_(e["y"]))],
    "sub_": [("x * 1 then sub_(y)", lambda L, e: (e["x"] * 1).sub_(e["y"]))],
    "mul_": [("x * 1 then mul_(y)", lambda L, e: (e["x"] * 1).mul_(e["y"]))],
    "div_": [("x * 1 then div_(y)", lambda L, e: (e["x"] * 1).div_(e["y"]))],
    "zero_": None,  # no gradient flows through it: nothing to measure
    "pow_": [("x * 1 then pow_(2)", lambda L, e: (e["x"] * 1).pow_(2))],
    "clamp_": [("x * 1 then clamp_(0.8, 1.3)", lambda L, e: (e["x"] * 1).clamp_(0.8, 1.3))],
    "clip_": [("x * 1 then clip_(0.8, 1.3)", lambda L, e: (e["x"] * 1).clip_(0.8, 1.3))],
    "clamp_min": [("x.clamp_min(1.0)", lambda L, e: e["x"].clamp_min(1.0))],
    "clamp_max": [("x.clamp_max(1.0)", lambda L, e: e["x"].clamp_max(1.0))],
    "clamp_min_": [("x * 1 then clamp_min_(1.0)", lambda L, e: (e["x"] * 1).clamp_min_(1.0))],
    "clamp_max_": [("x * 1 then clamp_max_(1.0)", lambda L, e: (e["x"] * 1).clamp_max_(1.0))],
    "masked_fill_": [("x * 1 then masked_fill_(mask, 0)", lambda L, e: (e["x"] * 1).masked_fill_(e["mask"], 0.0))],
    "mm": [("mm(x, m)", lambda L, e: L.mm(e["x"], e["m"]))],
    "mv": [("mv(x, v)", lambda L, e: L.mv(e["x"], e["v"]))],
    "dot": [("dot(v, w)", lambda L, e: L.dot(e["v"], e["w"]))],
    "outer": [("outer(v, w)", lambda L, e: L.outer(e["v"], e["w"]))],
    "matmul": [("x @ m", lambda L, e: e["x"] @ e["m"]),
               ("b3 @ x (batched)", lambda L, e: e["b3"] @ e["x"]),
               ("v @ x", lambda L, e: e["v"] @ e["x"])],
    "norm": [("x.norm()", lambda L, e: e["x"].norm()),
             ("x.norm(dim=1)", lambda L, e: e["x"].norm(dim=1)),
             ("x.norm(p=1)", lambda L, e: e["x"].norm(p=1))],
    "var": [("x.var()", lambda L, e: e["x"].var()), ("x.var(1)", lambda L, e: e["x"].var(1))],
    "std": [("x.std()", lambda L, e: e["x"].std()), ("x.std(1)", lambda L, e: e["x"].std(1))],
    "logsumexp": [("x.logsumexp(1)", lambda L, e: e["x"].logsumexp(1))],
    "softmax": [("x.softmax(1)", lambda L, e: e["x"].softmax(1))],
    "log_softmax": [("x.log_softmax(1)", lambda L, e: e["x"].log_softmax(1))],
    "amax": [("x.amax()", lambda L, e: e["x"].amax()), ("x.amax(1)", lambda L, e: e["x"].amax(1))],
    "amin": [("x.amin()", lambda L, e: e["x"].amin()), ("x.amin(1)", lambda L, e: e["x"].amin(1))],
    "max": [("x.max()", lambda L, e: e["x"].max()), ("x.max(1).values", lambda L, e: e["x"].max(1)[0]),
            ("max(x, y)", lambda L, e: L.max(e["x"], e["y"]))],
    "min": [("x.min()", lambda L, e: e["x"].min()), ("x.min(1).values", lambda L, e: e["x"].min(1)[0])],
    "diagonal": [("x.diagonal()", lambda L, e: e["x"].diagonal())],
    "copy_": [("x * 1 then copy_(y)", lambda L, e: (e["x"] * 1).copy_(e["y"]))],
    "fill_": [("x * 1 then fill_(2)", lambda L, e: (e["x"] * 1).fill_(2.0))],
    "clip": [("x.clip(0.8, 1.3)", lambda L, e: e["x"].clip(0.8, 1.3))],
    "masked_fill": [("x.masked_fill(mask, 0)", lambda L, e: e["x"].masked_fill(e["mask"], 0.0))],
    "mse_loss": [("F.mse_loss(x, y)", lambda L, e: _F(L).mse_loss(e["x"], e["y"]))],
    "l1_loss": [("F.l1_loss(x, y)", lambda L, e: _F(L).l1_loss(e["x"], e["y"]))],
    "binary_cross_entropy": [("F.binary_cross_entropy(x.sigmoid(), target)",
                              lambda L, e: _F(L).binary_cross_entropy(e["x"].sigmoid(), e["target"]))],
    "binary_cross_entropy_with_logits": [("F.binary_cross_entropy_with_logits(x, target)",
                                          lambda L, e: _F(L).binary_cross_entropy_with_logits(e["x"], e["target"]))],
    "nll_loss": [("F.nll_loss(x, labels)", lambda L, e: _F(L).nll_loss(e["x"], e["labels"]))],
    "cross_entropy": [("F.cross_entropy(x, labels)", lambda L, e: _F(L).cross_entropy(e["x"], e["labels"]))],
    "asin": [("asin(h)", lambda L, e: L.asin(e["h"]))],
    "acosh": [("acosh(u)", lambda L, e: L.acosh(e["u"]))],
    "atanh": [("atanh(h)", lambda L, e: L.atanh(e["h"]))],
    "logaddexp": [("logaddexp(x, y)", lambda L, e: L.logaddexp(e["x"], e["y"])),
                  ("logaddexp(x, row)", lambda L, e: L.logaddexp(e["x"], e["row"]))],
    "logaddexp2": [("logaddexp2(x, y)", lambda L, e: L.logaddexp2(e["x"], e["y"]))],
    "xlogy": [("xlogy(x, y)", lambda L, e: L.xlogy(e["x"], e["y"])), ("xlogy(x, 2)", lambda L, e: L.xlogy(e["x"], 2))],
    "xlogy_": [("x * 1 then xlogy_(y)", lambda L, e: (e["x"] * 1).xlogy_(e["y"]))],
    "trace": [("x.trace()", lambda L, e: e["x"].trace())],
    "movedim": [("movedim(b3, 0, 2)", lambda L, e: L.movedim(e["b3"], 0, 2))],
    "ravel": [("x.t().ravel()", lambda L, e: e["x"].t().ravel())],
    "tile": [("x.tile(2, 1)", lambda L, e: e["x"].tile(2, 1))],
    "diag": [("diag(row)", lambda L, e: L.diag(e["row"])), ("x.diag()", lambda L, e: e["x"].diag())],
    "diag_embed": [("diag_embed(row, 1)", lambda L, e: L.diag_embed(e["row"], 1))],
    "cross": [("cross(m, u3, dim=1)", lambda L, e: L.cross(e["m"], e["u3"], dim=1))],
    "kron": [("kron(x, y)", lambda L, e: L.kron(e["x"], e["y"]))],
    "rot90": [("x.rot90()", lambda L, e: e["x"].rot90()), ("rot90(m, 2)", lambda L, e: L.rot90(e["m"], 2))],
    "repeat_interleave": [("x.repeat_interleave(2, dim=0)", lambda L, e: e["x"].repeat_interleave(2, dim=0)),
                          ("row.repeat_interleave(2)", lambda L, e: e["row"].repeat_interleave(2))],
    "logit": [("logit(p)", lambda L, e: L.logit(e["p"])), ("p.logit(0.3)", lambda L, e: e["p"].logit(0.3))],
    "logit_": [("p * 1 then logit_()", lambda L, e: (e["p"] * 1).logit_())],
    "sinc": [("sinc(x)", lambda L, e: L.sinc(e["x"]))],
    "sinc_": [("x * 1 then sinc_()", lambda L, e: (e["x"] * 1).sinc_())],
    "unflatten": [("x.unflatten(1, (2, 1))", lambda L, e: e["x"].unflatten(1, (2, 1)))],
    "diff": [("diff(x)", lambda L, e: L.diff(e["x"]))],
    "fmax": [("fmax(x, y)", lambda L, e: L.fmax(e["x"], e["y"]))],
    "fmin": [("fmin(x, row)", lambda L, e: L.fmin(e["x"], e["row"]))],
    "copysign": [("copysign(x, h)", lambda L, e: L.copysign(e["x"], e["h"])),
                 ("copysign(x, -1.0)", lambda L, e: L.copysign(e["x"], -1.0))],
    "copysign_": [("x * 1 then copysign_(h)", lambda L, e: (e["x"] * 1).copysign_(e["h"]))],
    "nan_to_num": [("nan_to_num(x)", lambda L, e: L.nan_to_num(e["x"]))],
    "nan_to_num_": [("x * 1 then nan_to_num_()", lambda L, e: (e["x"] * 1).nan_to_num_())],
    "acos": [("acos(h)", lambda L, e: L.acos(e["h"]))],
    "asin_": [("h * 1 then asin_()", lambda L, e: (e["h"] * 1).asin_())],
    "acos_": [("h * 1 then acos_()", lambda L, e: (e["h"] * 1).acos_())],
    "round": [("x.round()", lambda L, e: e["x"].round()),
              ("x.round(decimals=1)", lambda L, e: e["x"].round(decimals=1))],
    "round_": [("x * 1 then round_(decimals=1)", lambda L, e: (e["x"] * 1).round_(decimals=1))],
    "atan2": [("atan2(x, y)", lambda L, e: L.atan2(e["x"], e["y"])), ("atan2(x, row)", lambda L, e: L.atan2(e["x"], e["row"]))],
    "atan2_": [("x * 1 then atan2_(y)", lambda L, e: (e["x"] * 1).atan2_(e["y"]))],
    "hypot": [("hypot(x, y)", lambda L, e: L.hypot(e["x"], e["y"]))],
    "hypot_": [("x * 1 then hypot_(y)", lambda L, e: (e["x"] * 1).hypot_(e["y"]))],
    "fmod": [("fmod(x, y)", lambda L, e: L.fmod(e["x"], e["y"])), ("fmod(x, 0.4)", lambda L, e: L.fmod(e["x"], 0.4))],
    "fmod_": [("x * 1 then fmod_(0.4)", lambda L, e: (e["x"] * 1).fmod_(0.4))],
    "remainder": [("x % y", lambda L, e: e["x"] % e["y"]), ("x % 1.5", lambda L, e: e["x"] % 1.5),
                  ("x % row", lambda L, e: e["x"] % e["row"])],
    "remainder_": [("x * 1 then remainder_(0.4)", lambda L, e: (e["x"] * 1).remainder_(0.4))],
    "getitem": [("x[0]", lambda L, e: e["x"][0]), ("x[:, 1]", lambda L, e: e["x"][:, 1]),
                ("x[[1, 0]]", lambda L, e: e["x"][[1, 0]]), ("x[mask]", lambda L, e: e["x"][e["mask"]])],
    "cumsum": [("x.cumsum(1)", lambda L, e: e["x"].cumsum(1))],
    "cumprod": [("x.cumprod(1)", lambda L, e: e["x"].cumprod(1))],
    "flip": [("x.flip(0)", lambda L, e: e["x"].flip(0))],
    "roll": [("x.roll(1, 0)", lambda L, e: e["x"].roll(1, 0)), ("x.roll(1)", lambda L, e: e["x"].roll(1))],
    "tril": [("x.tril()", lambda L, e: e["x"].tril())],
    "triu": [("x.triu(1)", lambda L, e: e["x"].triu(1))],
    "tril_": [("x * 1 then tril_()", lambda L, e: (e["x"] * 1).tril_())],
    "triu_": [("x * 1 then triu_()", lambda L, e: (e["x"] * 1).triu_())],
    "lerp": [("lerp(x, y, 0.3)", lambda L, e: L.lerp(e["x"], e["y"], 0.3)),
             ("lerp(x, y, row)", lambda L, e: L.lerp(e["x"], e["y"], e["row"]))],
    "lerp_": [("x * 1 then lerp_(y, 0.3)", lambda L, e: (e["x"] * 1).lerp_(e["y"], 0.3))],
    "addcmul": [("addcmul(x, y, x)", lambda L, e: L.addcmul(e["x"], e["y"], e["x"])),
                ("addcmul(x, y, row, value=0.5)", lambda L, e: L.addcmul(e["x"], e["y"], e["row"], value=0.5))],
    "addcmul_": [("x * 1 then addcmul_(y, y)", lambda L, e: (e["x"] * 1).addcmul_(e["y"], e["y"]))],
    "addcdiv": [("addcdiv(x, y, row, value=0.5)", lambda L, e: L.addcdiv(e["x"], e["y"], e["row"], value=0.5))],
    "addcdiv_": [("x * 1 then addcdiv_(y, x)", lambda L, e: (e["x"] * 1).addcdiv_(e["y"], e["x"]))],
    "gelu": [("F.gelu(h)", lambda L, e: _F(L).gelu(e["h"])),
             ("F.gelu(h, approximate='tanh')", lambda L, e: _F(L).gelu(e["h"], approximate="tanh"))],
    "silu": [("F.silu(h)", lambda L, e: _F(L).silu(e["h"]))],
    "leaky_relu": [("F.leaky_relu(h, 0.2)", lambda L, e: _F(L).leaky_relu(e["h"], 0.2)),
                   ("F.leaky_relu(h * 1, inplace=True)", lambda L, e: _F(L).leaky_relu(e["h"] * 1, inplace=True))],
    "elu": [("F.elu(h)", lambda L, e: _F(L).elu(e["h"]))],
    "softplus": [("F.softplus(h)", lambda L, e: _F(L).softplus(e["h"]))],
    "hardtanh": [("F.hardtanh(h, -0.25, 0.5)", lambda L, e: _F(L).hardtanh(e["h"], -0.25, 0.5))],
    "relu6": [("F.relu6(h)", lambda L, e: _F(L).relu6(e["h"]))],
    "logsigmoid": [("F.logsigmoid(h)", lambda L, e: _F(L).logsigmoid(e["h"]))],
    "softsign": [("F.softsign(h)", lambda L, e: _F(L).softsign(e["h"]))],
    "tanhshrink": [("F.tanhshrink(h)", lambda L, e: _F(L).tanhshrink(e["h"]))],
    "linear": [("F.linear(x, y)", lambda L, e: _F(L).linear(e["x"], e["y"])),
               ("F.linear(x, y, row)", lambda L, e: _F(L).linear(e["x"], e["y"], e["row"])),
               ("F.linear(b3, y, row)", lambda L, e: _F(L).linear(e["b3"], e["y"], e["row"]))],
    "addmm": [("addmm(row, x, y)", lambda L, e: L.addmm(e["row"], e["x"], e["y"]))],
    "dropout": [("F.dropout(x, 0.5)", lambda L, e: _F(L).dropout(e["x"], 0.5))],
    "index_select": [("m.index_select(1, [2, 0])", lambda L, e: e["m"].index_select(1, _index(L, [2, 0])))],
    "index_add": [("x.index_add(0, [1, 1], y)", lambda L, e: e["x"].index_add(0, _index(L, [1, 1]), e["y"]))],
    "gather": [("x.gather(1, [[1, 0], [0, 0]])", lambda L, e: e["x"].gather(1, _index(L, [[1, 0], [0, 0]])))],
    "take_along_dim": [("take_along_dim(x, [[1], [0]], 1)",
                        lambda L, e: L.take_along_dim(e["x"], _index(L, [[1], [0]]), 1))],
    "scatter": [("x.scatter(1, [[1, 0], [0, 1]], y)", lambda L, e: e["x"].scatter(1, _index(L, [[1, 0], [0, 1]]), e["y"])),
                ("x.scatter(0, [[1, 0]], 2.0)", lambda L, e: e["x"].scatter(0, _index(L, [[1, 0]]), 2.0))],
    "scatter_": [("x * 1 then scatter_(1, [[1, 0], [0, 1]], y)",
                  lambda L, e: (e["x"] * 1).scatter_(1, _index(L, [[1, 0], [0, 1]]), e["y"]))],
    "scatter_add": [("x.scatter_add(0, [[1, 1], [0, 1]], y)",
                     lambda L, e: e["x"].scatter_add(0, _index(L, [[1, 1], [0, 1]]), e["y"]))],
    "scatter_add_": [("x * 1 then scatter_add_(0, [[1, 1], [0, 1]], y)",
                      lambda L, e: (e["x"] * 1).scatter_add_(0, _index(L, [[1, 1], [0, 1]]), e["y"]))],
    "masked_select": [("x.masked_select(mask)", lambda L, e: e["x"].masked_select(e["mask"]))],
    "repeat": [("x.repeat(2, 3)", lambda L, e: e["x"].repeat(2, 3))],
    "sort": [("x.sort(1).values", lambda L, e: e["x"].sort(1).values),
             ("m.sort(descending=True).values", lambda L, e: e["m"].sort(descending=True).values)],
    "topk": [("m.topk(2).values", lambda L, e: e["m"].topk(2).values)],
    "kthvalue": [("m.kthvalue(2).values", lambda L, e: e["m"].kthvalue(2).values)],
    "median": [("m.median()", lambda L, e: e["m"].median()),
               ("m.median(1).values", lambda L, e: e["m"].median(1).values)],
    "bmm": [("bmm(b3, b3)", lambda L, e: L.bmm(e["b3"], e["b3"]))],
}

# Families left out: creation functions and the legacy constructors (their outputs are leaves),
# comparisons (never differentiable), autograd's functional API (it runs other ops).
_SKIPPED_CATEGORIES = ("creation", "comparison", "autograd", "legacy")


def _operator_cases(info):
    """``x OP y``, ``x OP 1.5``, ``1.5 OP x``, ``x OP row`` for a binary operator ``a OP b``."""
    sym = info.operator.split()[1]
    binop = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
             "/": lambda a, b: a / b}[sym]
    return [
        (f"x {sym} y", lambda L, e: binop(e["x"], e["y"])),
        (f"x {sym} 1.5", lambda L, e: binop(e["x"], 1.5)),
        (f"1.5 {sym} x", lambda L, e: binop(1.5, e["x"])),
        (f"x {sym} row", lambda L, e: binop(e["x"], e["row"])),
    ]


def _reduction_cases(info):
    name = info.name
    out = [(f"x.{name}()", lambda L, e: getattr(e["x"], name)())]
    if "dim=None" in info.parameters or "dim=()" in info.parameters:
        out.append((f"x.{name}(1)", lambda L, e: getattr(e["x"], name)(1)))
        out.append((f"x.{name}(1, keepdim=True)", lambda L, e: getattr(e["x"], name)(1, keepdim=True)))
    return out


def cases_of(info) -> list | None:
    """The calls that measure one op, or None when the table says nothing can be measured."""
    if info.name in RECIPES:
        return RECIPES[info.name]
    if info.alias_of is not None:  # torch's other spelling (multiply, arcsin): measured under the op's name
        return None
    if not info.differentiable or info.category in _SKIPPED_CATEGORIES:
        return None
    if info.operator and info.operator.startswith("a ") and info.arity == 2 \
            and info.operator.split()[1] in "+-*/":
        return _operator_cases(info)
    if info.operator == "-a":
        return [("-x", lambda L, e: -e["x"])]
    if info.operator == "abs(a)":
        return [("abs(x)", lambda L, e: abs(e["x"]))]
    if info.category == "reduction" and info.arity == 1:
        return _reduction_cases(info)
    if info.category == "in-place" and info.parameters == ["input"]:  # exp_, relu_...: on a non-leaf
        name = info.name
        return [(f"x * 1 then {name}()", lambda L, e: getattr(e["x"] * 1, name)())]
    if info.arity == 1 and info.parameters == ["input"]:
        name = info.name
        return [(f"{name}(x)", lambda L, e: _fn(L, name)(e["x"]))]
    return []  # differentiable, but no rule fits: needs a recipe


def all_cases(only=None) -> tuple[list[Case], list[str]]:
    """Every case of the op table, and the differentiable ops that have none (no recipe)."""
    from gradcli.ops import registry
    cases, missing = [], []
    for info in registry.FUNCTIONS.values():
        if only and info.name not in only:
            continue
        found = cases_of(info)
        if found is None:
            continue
        if not found:
            missing.append(info.name)
        for label, call in found:
            cases.append(Case(info.name, info.category, label, call))
    if (not only or "getitem" in only) and "getitem" not in registry.FUNCTIONS:
        for label, call in RECIPES["getitem"]:
            cases.append(Case("getitem", "indexing", label, call))
    return cases, missing


def case_by_case(description: str, calls: int, rounds: int):
    """For the scripts that take the op table's cases one at a time (``bench_ops_split.py``,
    ``bench_collector.py``): their ``--only``/``--calls``/``--rounds`` arguments, gradcli, torch
    on one thread (the machine printed), and the cases chosen. Exits where torch is missing."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--only", nargs="+", help="op names to measure (default: all)")
    ap.add_argument("--calls", type=int, default=calls)
    ap.add_argument("--rounds", type=int, default=rounds)
    args = ap.parse_args()
    import gradcli
    torch = import_torch()
    if torch is None:
        raise SystemExit("PyTorch is not installed: nothing to compare with")
    torch.set_num_threads(1)
    print(machine() + ", torch threads 1")
    return args, gradcli, torch, all_cases(args.only)[0]


# ------------------------------------------------------------------------------ timing

def fan_out(lib, case: Case, calls: int, batch: int = 2):
    """``calls`` outputs of the case from the same leaves, then one backward through all of them."""
    env = environment(lib, batch)
    first = case.call(lib, env)
    seeds = [lib.ones_like(first)] * calls

    def run():
        outs = [case.call(lib, env) for _ in range(calls)]
        lib.autograd.backward(outs, seeds)
        for t in env.values():
            t.grad = None
    return run


# Typical programs: a chain of mixed ops on a 2x2 leaf, then one backward (the table).
MIXES = {
    "tensor-tensor mul/add": lambda L, y, e, i: y * e["c"] if i % 2 == 0 else y + e["d"],
    "Python-number operands": lambda L, y, e, i: y * 1.0001 if i % 2 == 0 else y + 0.0001,
    "unary sin / exp with a number factor": lambda L, y, e, i: (y.sin() if i % 2 == 0 else y.exp()) * 0.5,
    "matmul, relu, SGD-like step": lambda L, y, e, i: ((y @ e["c"]).relu() if i % 2 == 0
                                                       else y - 0.1 * e["d"]),
    "sum(dim, keepdim), mean, divide by a number":
        lambda L, y, e, i: (y.sum(1, keepdim=True) * e["c"] if i % 3 == 0
                            else (y.mean() + y if i % 3 == 1 else y / 2.0)),
}


def chain(lib, mix, steps: int):
    def run():
        x = lib.ones(2, 2, requires_grad=True)
        e = {"c": lib.full((2, 2), 0.5), "d": lib.full((2, 2), 0.001)}
        y = x
        for i in range(steps):
            y = mix(lib, y, e, i)
        y.sum().backward()
        return x.grad
    return run


# An optimizer's step: in-place updates of a parameter (a 2x2 leaf that requires grad) under no_grad.
UPDATES = {
    "p -= 0.1 * g": lambda L, p, g: p.__isub__(0.1 * g),
    "p.add_(g)": lambda L, p, g: p.add_(g),
    "p.mul_(0.9)": lambda L, p, g: p.mul_(0.9),
    "p.sub_(g, alpha=0.1)": lambda L, p, g: p.sub_(g, alpha=0.1),
    "g.zero_()": lambda L, p, g: g.zero_(),
}


def updates(lib, update, calls: int):
    def run():
        p = lib.ones(2, 2, requires_grad=True)
        g = lib.full((2, 2), 1e-3)
        with lib.no_grad():
            for _ in range(calls):
                update(lib, p, g)
    return run


def geomean(xs) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def on_device(device: str, torch):
    """Makes ``device`` both libraries' default (leaves, index tensors, constants are made there) and
    returns what turns a dict of measured functions into ones that end with the device synchronised
    (a GPU's kernels run after the Python that launched them returns)."""
    if device == "cpu":
        return lambda fns: fns
    from gradcli.autograd import factory
    from gradcli.backend import get_backend
    factory.DEFAULT_DEVICE[0] = device
    torch.set_default_device(device)
    sync = {"gradcli": get_backend(device).synchronize, "torch": torch.cuda.synchronize}
    import cupy
    print(f"device {device}: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, CuPy {cupy.__version__}, "
          f"torch {torch.__version__}")

    def synchronised(fn, done):
        def run():
            fn()
            done()
        return run
    return lambda fns: {name: synchronised(fn, sync[name]) for name, fn in fns.items()}


def measure(fns: dict, rounds: int, per: int) -> tuple[dict, dict]:
    """(best, median): each engine's fastest round and its median round, in us per output.

    The figure is the fastest round (timeit's rule: the slower rounds are other work on the
    machine, not the code). On this 2-core virtual machine a round of either library varies by up
    to 50% from one second to the next; the best of interleaved rounds moved by 0.02-0.05x from
    one set of five rounds to the next where the ratio of medians moved by 0.1-0.5x (RESULTS.md,
    fifteenth session). The median is printed beside it."""
    times = time_interleaved(fns, rounds=rounds, warmup=1)
    return ({name: min(ts) / per * 1e6 for name, ts in times.items()},
            {name: median(ts) / per * 1e6 for name, ts in times.items()})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000, help="outputs per measurement (fan-out)")
    ap.add_argument("--steps", type=int, default=20000, help="ops per typical-program chain")
    ap.add_argument("--rounds", type=int, default=9, help="timed rounds of each engine (the figure: the fastest)")
    ap.add_argument("--only", nargs="+", help="op names to measure (default: all)")
    ap.add_argument("--no-mixes", action="store_true", help="skip the typical-program chains")
    ap.add_argument("--markdown", action="store_true", help="also print Markdown for RESULTS.md")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1: tiny tensors)")
    ap.add_argument("--device", default="cpu",
                    help="cpu, or cuda: gradcli on CuPy against torch on CUDA, every measurement synchronised")
    ap.add_argument("--batch", type=int, default=2,
                    help="rows of every leaf of two or more dims (default 2: the 2x2 table); a recipe "
                         "written for 2 rows that fails at another count is listed, not measured")
    args = ap.parse_args()

    torch = import_torch(args.threads)
    if torch is None:
        sys.exit("bench_ops.py compares with PyTorch: pip install torch==2.13.0")
    import gradcli
    print(machine() + f", torch threads {torch.get_num_threads()}")
    timed = on_device(args.device, torch)
    gc.freeze()  # the modules of both libraries: never garbage, traversed by every full collection


    cases, missing = all_cases(args.only)
    rows, by_family, ratios, medians, unfit = [], {}, [], [], []
    for case in cases:
        try:
            theirs = fan_out(torch, case, args.calls, args.batch)
            if args.batch != 2:
                theirs()  # (its backward too: scatter's src of more rows than the index fails there)
        except Exception:  # a recipe's shapes for 2 rows (x.view(4), expand(2, 2)) at another --batch
            if args.batch == 2:
                raise
            unfit.append(case.label)
            continue
        fns = {"gradcli": fan_out(gradcli, case, args.calls, args.batch), "torch": theirs}  # (torch's call
        # worked: gradcli's failing is a bug, and stops the run)
        us, mid = measure(timed(fns), args.rounds, args.calls)
        r, rm = us["gradcli"] / us["torch"], mid["gradcli"] / mid["torch"]
        ratios.append(r)
        medians.append(rm)
        by_family.setdefault(case.family, []).append(r)
        rows.append([case.op, case.label, f"{us['gradcli']:.2f}", f"{us['torch']:.2f}", f"{r:.2f}x", f"{rm:.2f}x"])
        print(f"  {case.label:<32} {r:.2f}x  (medians {rm:.2f}x)", file=sys.stderr, flush=True)

    print(table(rows, ["op", "call", "gradcli us/op", "torch us/op", "gradcli/torch", "of medians"]))
    print()
    fam_rows = [[f, str(len(rs)), f"{geomean(rs):.2f}x", f"{max(rs):.2f}x"] for f, rs in by_family.items()]
    fam_rows.append(["all", str(len(ratios)), f"{geomean(ratios):.2f}x", f"{max(ratios):.2f}x"])
    print(table(fam_rows, ["family", "cases", "geometric mean", "worst"]))
    labels = [r[1] for r in rows]
    worst = sorted(zip(ratios, labels), reverse=True)[:5]
    print("\nworst cases: " + ", ".join(f"{label} {r:.2f}x" for r, label in worst))
    above = [(r, label) for r, label in sorted(zip(ratios, labels), reverse=True) if r > 1.0]
    print(f"above 1.0x: {len(above)}" + (": " + ", ".join(f"{label} {r:.2f}x" for r, label in above) if above else ""))
    print(f"of medians: geometric mean {geomean(medians):.2f}x, {sum(r > 1.0 for r in medians)} above 1.0x")
    if missing:
        print("not measured (differentiable, no recipe): " + ", ".join(missing))
    if unfit:
        print(f"not measured at --batch {args.batch} (the recipe's shapes are for 2 rows): " + ", ".join(unfit))

    if not args.no_mixes and args.batch == 2:  # (the chains are on 2x2 leaves of their own)
        for title, items, make in ((f"{args.steps:,}-op chain", MIXES, chain),
                                   ("update under no_grad (an optimizer's step)", UPDATES, updates)):
            print()
            print(side_by_side(title, items, make, gradcli, torch, timed, args.rounds, args.steps))


def side_by_side(title, items, make, gradcli, torch, timed, rounds, steps) -> str:
    """A table of ``items`` (name -> what ``make(lib, item, steps)`` makes a timed function of, of
    ``steps`` operations), each timed on gradcli and torch in turn, with the ratios' geometric mean."""
    rows, ratios, medians = [], [], []
    for name, item in items.items():
        fns = {"gradcli": make(gradcli, item, steps), "torch": make(torch, item, steps)}
        us, mid = measure(timed(fns), rounds, steps)
        ratios.append(us["gradcli"] / us["torch"])
        medians.append(mid["gradcli"] / mid["torch"])
        rows.append([name, f"{us['gradcli']:.2f}", f"{us['torch']:.2f}", f"{ratios[-1]:.2f}x", f"{medians[-1]:.2f}x"])
    rows.append(["geometric mean", "", "", f"{geomean(ratios):.2f}x", f"{geomean(medians):.2f}x"])
    return table(rows, [title, "gradcli us/op", "torch us/op", "gradcli/torch", "of medians"])

if __name__ == "__main__":
    main()
