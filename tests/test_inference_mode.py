"""inference_mode (context manager and decorator), dtype aliases, .item()/.tolist(), against torch."""

import pytest

import gradcli as gc

torch = pytest.importorskip("torch")


def modes(lib):
    seen = []
    x = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        y = x * 2
        seen.append((y.requires_grad, lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        with lib.inference_mode(False):
            seen.append((lib.is_inference_mode_enabled(), lib.is_grad_enabled(), (x * 2).requires_grad))
    seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled(), (x * 2).requires_grad))

    @lib.inference_mode()
    def f(t):
        return t * 3, lib.is_inference_mode_enabled()

    out, inside = f(x)
    seen.append((out.requires_grad, inside, lib.is_inference_mode_enabled()))
    with lib.no_grad():
        with lib.inference_mode():
            pass
        seen.append(lib.is_grad_enabled())
    return seen


def test_inference_mode_as_torch():
    assert modes(gc) == modes(torch)


def test_dtype_aliases_item_tolist():
    for alias in ("float", "double", "long", "half", "int"):
        assert str(getattr(gc, alias)) == str(getattr(torch, alias))
    x, t = gc.tensor([[1.5, 2.0]]), torch.tensor([[1.5, 2.0]])
    assert x.sum().item() == t.sum().item() and x.tolist() == t.tolist()


def test_inference_mode_in_a_program(capsys):
    import json
    from gradcli.cli.fast import main
    code = main(["eval", "x = ones(2, requires_grad=True)\nwith inference_mode():\n    y = x * 2\n"
                         "print(y.requires_grad, is_inference_mode_enabled())\nz = ones(1, dtype=half)", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["printed"] == ["False False"]
    assert {v["name"]: v["dtype"] for v in doc["variables"]}["z"] == "float16"
