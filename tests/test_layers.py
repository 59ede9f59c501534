"""The folders are the pipeline, and imports point only downward.

    errors, limits, _version  (foundation: what every layer may raise or read)
    backend/   NumPy, CuPy, array-api-strict; dtypes
    autograd/  Tensor, graph nodes, recording, the backward engine, grad mode
    ops/       the op registry, the declarations by family, the formula namespace
    lang/      AST, parser, evaluator, sandbox
    present/   tables, JSON documents, graph drawing
    cli/       commands, the fast path, the typer app, the session pipeline

A module may import from its own layer and the layers below it, never from a layer above:
every import counts, at module level or deferred into a function body.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gradcli"

LAYERS = [
    ("gradcli._version", "gradcli.errors", "gradcli.limits"),
    ("gradcli.backend",),
    ("gradcli.autograd",),
    ("gradcli.ops",),
    ("gradcli.lang",),
    ("gradcli.present",),
    ("gradcli.cli",),
    ("gradcli", "gradcli.__main__", "gradcli.fastcli"),  # the facade, ``python -m gradcli``, the old launcher: on top
]


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = rank, len(prefix)
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS"
    return best


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path = PACKAGE):
    """``(line, imported module)`` for every import in the file, however deeply nested."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "gradcli":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "gradcli":
                continue
            for alias in node.names:  # ``from . import ops`` imports the module gradcli.ops
                sub = f"{target}.{alias.name}"
                is_module = (root.parent / (sub.replace(".", "/") + ".py")).exists() or \
                    (root.parent / sub.replace(".", "/")).is_dir()
                yield node.lineno, sub if is_module else target


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer():
    for path in MODULES:
        layer_of(module_name(path))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_point_downward(path):
    source = module_name(path)
    rank = layer_of(source)
    upward = [f"line {line}: {target} ({LAYERS[layer_of(target)][0]} is above {LAYERS[rank][0]})"
              for line, target in imports_of(path) if layer_of(target) > rank]
    assert not upward, f"{source} imports from a higher layer:\n" + "\n".join(upward)


def test_the_checker_sees_deferred_and_relative_imports(tmp_path):
    """The test itself can fail: a deferred relative import from autograd up into ops is caught."""
    fake = tmp_path / "gradcli"
    (fake / "autograd").mkdir(parents=True)
    (fake / "ops").mkdir()
    (fake / "ops" / "__init__.py").write_text("")
    module = fake / "autograd" / "tensor.py"
    module.write_text("def zero_(t):\n    from ..ops import pointwise\n    from gradcli.lang import syntax\n")
    (fake / "ops" / "pointwise.py").write_text("")
    found = [target for _, target in imports_of(module, root=fake)]
    assert found == ["gradcli.ops.pointwise", "gradcli.lang"]
    assert [layer_of(t) > layer_of("gradcli.autograd.tensor") for t in found] == [True, True]
