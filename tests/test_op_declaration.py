"""One op, one declaration: a node (grad_fn, forward, a formula per input) and ``@op`` on its
function are all it takes for the op to work in the library, ``eval``, ``gradcli ops`` and
``gradcli check``; what ``gradcli ops`` shows is read from the code it describes."""

from __future__ import annotations

import ast
import inspect
import json
import traceback
from pathlib import Path

import pytest

import gradcli as gc
from gradcli.autograd import node as node_module
from gradcli.autograd.function import apply
from gradcli.autograd.node import define_node
from gradcli.autograd.tensor import Tensor
from gradcli.cli import main
from gradcli.ops import registry
from gradcli.ops.registry import FUNCTIONS, op

PACKAGE = Path(__file__).resolve().parent.parent / "gradcli"


def run_json(capsys, *argv):
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


# -- signatures come from the code ----------------------------------------------------------------

def _parsed(signature: str) -> inspect.Signature:
    """The signature text ``gradcli ops`` shows, read back as Python would read a ``def``."""
    name, params = signature.split("(", 1)
    tree = ast.parse(f"def {name}({params}: pass")
    namespace: dict = {}
    exec(compile(tree, "<signature>", "exec"), {"inf": float("inf")}, namespace)  # noqa: S102 (test only)
    return inspect.signature(namespace[name])


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_every_signature_shown_is_what_the_function_accepts(capsys, name):
    rows = {r["name"]: r for r in run_json(capsys, "ops", "--json")[1]["functions"]}
    shown = _parsed(rows[name]["signature"])
    actual = inspect.signature(FUNCTIONS[name].fn)
    assert [(p.name, p.kind, p.default) for p in shown.parameters.values()] == \
        [(p.name, p.kind, _default(p)) for p in actual.parameters.values()]


def _default(p):
    """A parameter's default; div's rounding_mode default is a marker that reads as None (torch
    shows None there too) but tells an explicit None apart (torch then records DivBackward2)."""
    from gradcli.ops.pointwise import _NOT_GIVEN
    return None if p.default is _NOT_GIVEN else p.default


def test_in_place_ops_take_what_their_out_of_place_form_takes():
    x = gc.ones(2)
    x.add_(gc.ones(2), alpha=3)
    assert x.tolist() == [4.0, 4.0]
    assert str(inspect.signature(FUNCTIONS["add_"].fn)) == str(inspect.signature(FUNCTIONS["add"].fn))


# -- dtype= is honoured, as torch honours it ------------------------------------------------------------

DTYPE_CASES = {
    "sum": (lambda m, x, d: m.sum(x, dtype=d), lambda m, x, d: x.sum(0, dtype=d)),
    "mean": (lambda m, x, d: m.mean(x, dtype=d), lambda m, x, d: x.mean(1, dtype=d)),
    "prod": (lambda m, x, d: m.prod(x, dtype=d), lambda m, x, d: x.prod(0, dtype=d)),
    "softmax": (lambda m, x, d: m.softmax(x, 0, dtype=d), lambda m, x, d: m.softmax(x, 1, dtype=d)),
    "log_softmax": (lambda m, x, d: m.log_softmax(x, 0, dtype=d), lambda m, x, d: m.log_softmax(x, 1, dtype=d)),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", list(DTYPE_CASES))
def test_dtype_argument_matches_torch(name):
    torch = pytest.importorskip("torch")
    data = [[0.5, 1.5, 2.0], [1.0, -0.5, 3.0]]
    for form in DTYPE_CASES[name]:
        x, tx = gc.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        y, ty = form(gc, x, gc.float64), form(torch, tx, torch.float64)
        assert y.dtype.name == "float64" and str(ty.dtype) == "torch.float64"
        assert _flat(y.tolist()) == pytest.approx(_flat(ty.tolist()), rel=1e-12)
        (y * y).sum().backward()
        (ty * ty).sum().backward()
        assert x.grad.dtype.name == "float32"
        assert _flat(x.grad.tolist()) == pytest.approx(_flat(tx.grad.tolist()), rel=1e-6)


def _flat(rows):
    return [v for row in rows for v in row] if isinstance(rows, list) and rows and isinstance(rows[0], list) \
        else rows


def test_dtype_argument_on_integers_gives_floats():
    assert gc.mean(gc.tensor([1, 2]), dtype=gc.float32).item() == 1.5
    assert gc.sum(gc.tensor([1, 2]), dtype=gc.float64).dtype.name == "float64"


# -- a new op is one declaration ------------------------------------------------------------------------

@pytest.fixture
def isolated_registry(monkeypatch):
    """Declarations made in a test leave the tables as they found them."""
    monkeypatch.setattr(node_module, "NODE_CLASSES", dict(node_module.NODE_CLASSES))
    monkeypatch.setattr(registry, "FUNCTIONS", dict(registry.FUNCTIONS))
    monkeypatch.setattr(registry, "BY_FUNCTION", dict(registry.BY_FUNCTION))
    monkeypatch.setattr(Tensor, "cube", None, raising=False)  # undone: the method goes away again
    yield


def declare_cube(formula: str = "grad * 3 * self * self"):
    CubeBackward0 = define_node("CubeBackward0", forward=lambda xp, x: x * x * x, self=formula)

    @op(CubeBackward0)
    def cube(input):
        """Elementwise input ** 3."""
        return apply(CubeBackward0, (input,))
    return cube


def test_a_declared_op_works_in_the_library_eval_ops_and_check(capsys, isolated_registry):
    declare_cube()
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    x.cube().sum().backward()
    assert x.grad.tolist() == [3.0, 12.0]

    code, doc = run_json(capsys, "eval", "y = sum(cube(x))", "-g", "x=tensor([1.0, 2.0])", "--json")
    assert code == 0
    assert doc["variables"][0]["grad"] == [3.0, 12.0]
    assert doc["variables"][1]["next_functions"] == [["CubeBackward0", 0]]

    code, doc = run_json(capsys, "ops", "--json")
    row = next(r for r in doc["functions"] if r["name"] == "cube")
    assert row["signature"] == "cube(input)" and row["method"] == "x.cube()"
    assert row["derivatives"] == {"CubeBackward0": {"self": "grad * 3 * self * self"}}
    assert row["doc"] == "Elementwise input ** 3."

    assert main(["check", "sum(cube(x) * x)", "-g", "x=tensor([0.5, -1.5, 2.0])"]) == 0
    capsys.readouterr()


def test_check_catches_a_wrong_formula_in_a_declared_op(capsys, isolated_registry):
    declare_cube(formula="grad * 3 * self")  # the derivative of x**3 is 3 * x**2: this is wrong
    assert main(["check", "sum(cube(x))", "-g", "x=tensor([0.5, -1.5, 2.0])"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_a_formula_in_a_traceback_names_its_node_and_input():
    Bad = define_node("BadFormulaBackward0", inputs=("self", "other"), forward=lambda xp, a, b: a * b,
                      self="grad * other", other="grad * self.no_such_member")
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(AttributeError) as info:
        apply(Bad, (x, x)).sum().backward()
    text = "".join(traceback.format_exception(info.value))
    assert 'File "<BadFormulaBackward0.other>", line 2, in BadFormulaBackward0.other' in text
    assert "grad * self.no_such_member" in text


def test_formulas_are_compiled_on_first_use(isolated_registry):
    """Start-up: a node class's formulas become functions when first read (then a plain class
    attribute); a formula that is not an expression fails there (the package's own: next test)."""
    Lazy = define_node("LazyFormulaBackward0", inputs=("self", "other"), forward=lambda xp, a, b: a * b,
                       self="grad * other")
    assert isinstance(Lazy.__dict__["formulas"], node_module._Formulas)
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    apply(Lazy, (x, gc.tensor([3.0, 4.0]))).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]
    formulas = Lazy.__dict__["formulas"]
    assert formulas.__class__ is tuple and formulas[1] is None
    assert formulas[0].__name__ == "LazyFormulaBackward0.self" and Lazy.formulas is formulas
    Broken = define_node("BrokenFormulaBackward0", self="grad *")
    with pytest.raises(SyntaxError):
        Broken.formulas


def test_every_declared_formula_compiles_and_its_names_are_what_python_reads():
    """define_node reads a formula's names from its text (a start-up shortcut, no compile): the
    saves it plans are those that the compiled formula's own names (co_names) give."""
    checked = 0
    for name, cls in sorted(node_module.NODE_CLASSES.items()):
        if "_uses" not in cls.__dict__:
            continue  # a hand-written node class
        for (inp, text), formula, uses in zip(cls.derivatives, cls.formulas, cls._uses):
            if text == "non_differentiable":
                assert formula is None
                continue
            names = set(compile(text, "<formula>", "eval").co_names)
            assert names <= uses, (name, inp)
            relevant = set(cls.input_names) | {"result"} | {f"{i}_sizes" for i in cls.input_names}
            assert uses & relevant == names & relevant, (name, inp)
            checked += 1
    assert checked > 150


def test_nothing_in_the_package_is_generated_with_exec():
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "exec":
                pytest.fail(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} calls exec")


def test_c_code_called_from_a_formula_can_import(monkeypatch):
    """C code called from a formula imports through the formula's builtins: CuPy builds a ufunc's
    kernel at its first use with a dtype and imports then (every first CUDA backward died with
    KeyError: '__import__' while formulas had no builtins at all). PyImport_ImportModule called
    straight from the formula's frame is such C code."""
    import ctypes
    import sys
    c_import = ctypes.pythonapi.PyImport_ImportModule
    c_import.restype, c_import.argtypes = ctypes.py_object, [ctypes.c_char_p]
    monkeypatch.setitem(node_module._FORMULA_GLOBALS, "c_import", c_import)
    formula = node_module._compile_formula("ProbeBackward0", "self", ("name",), "c_import(name)")
    assert formula(b"json") is sys.modules["json"]
    with pytest.raises(NameError):  # and still nothing else: no builtins but the import hook
        node_module._compile_formula("ProbeBackward0", "self", ("x",), "len(x)")([1])
