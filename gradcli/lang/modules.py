"""The modules a program can import: ``torch`` (and its ``autograd``, ``nn.functional`` and
``cuda`` parts), ``numpy`` and ``math``, as sandbox namespaces.

A :class:`Module` is a name, not a Python module: ``torch.ones`` is looked up in the op
registry as it is now (``registry.NAMESPACES["torch"]``, the dialect's own builtins), and
``F.relu`` in ``registry.NAMESPACES["torch.nn.functional"]``, which ops join by declaring
``@op(..., namespaces=("torch.nn.functional",))``. A member is a whitelisted function (handed to
the program as a :class:`~gradcli.lang.values.BuiltinRef`), a constant, or a submodule; nothing
else, and nothing that reaches Python. Importing anything else is a ``GradNameError`` (exit 2)
naming what there is, with a hint for what gradcli leaves out (``nn.Module``, optimizers,
datasets).
"""

from __future__ import annotations

import math

from ..autograd.grad_mode import inference_mode
from ..backend.dtypes import DTYPES, device
from ..errors import DeviceError, GradcliError, GradNameError, GradTypeError
from ..ops import registry
from .values import BuiltinRef

# What gradcli leaves out, and what to write instead.
_BEYOND = ("gradcli differentiates tensor programs: no nn.Module, optimizers or datasets; write the "
           "model as tensors that require grad (w = torch.randn(3, 2, requires_grad=True)), the "
           "forward pass as expressions, and the update by hand under torch.no_grad() "
           "(w -= lr * w.grad; w.grad.zero_())")
_HINTS = {"torch.optim": _BEYOND, "torch.utils": _BEYOND, "torch.utils.data": _BEYOND, "torchvision": _BEYOND,
          "torch.nn.Module": _BEYOND, "torch.nn.Linear": _BEYOND}


class Module:
    """An importable namespace: ``torch``, ``torch.nn.functional``, ``math``..."""
    __slots__ = ("name",)
    type_label = "module"

    def __init__(self, name: str):
        self.name = name

    @classmethod
    def of(cls, name: str) -> "Module":
        """The one module object of that name (``F is torch.nn.functional``)."""
        module = _MODULES.get(name)
        if module is None:
            module = _MODULES[name] = cls(name)
        return module

    def __repr__(self) -> str:
        return f"<module '{self.name}'>"

    def __eq__(self, other):
        return isinstance(other, Module) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


_MODULES: dict = {}

# Bare names of the dialect (``view(x, 6)``) that torch has as Tensor methods only: ``torch.view(x, 6)``
# fails in torch, so it fails here, with a hint (_NOT_IN_TORCH; tests/test_lang_pytorch.py checks every
# member of the torch modules against torch's own).
_METHODS_ONLY = ("view", "expand", "expand_as", "to", "copy_")


def _function_form(name: str, param: str, fn):
    """``torch.<name>``: ``fn`` refusing the methods' forms with torch's words (``torch.permute(x, 1, 0)``)."""
    def function(*args, **kwargs):
        if len(args) > 2:
            raise GradTypeError(f"{name}() takes 2 positional arguments but {len(args)} were given")
        if len(args) == 2 and args[1].__class__ is int:
            raise GradTypeError(f"{name}(): argument '{param}' (position 2) must be tuple of ints, not int")
        return fn(*args, **kwargs)
    found = _FUNCTION_FORMS.get(fn)
    if found is None:
        function.__name__ = function.__qualname__ = name
        found = _FUNCTION_FORMS[fn] = function
        registry.BY_FUNCTION[function] = registry.BY_FUNCTION[fn]  # its signature, for messages
    return found


_FUNCTION_FORMS: dict = {}  # an op's function -> its torch.<name> form, made once

_NOT_IN_TORCH = {**{f"torch.{name}": f"in torch, {name} is a Tensor method: x.{name}(...)" for name in _METHODS_ONLY},
                 "torch.saved_tensors_hooks": "it is torch.autograd.graph.saved_tensors_hooks"}


def _cuda_available() -> bool:
    from ..backend import get_backend
    try:
        get_backend("cuda")
        return True
    except GradcliError:
        return False
    except Exception:
        return False


_DTYPE_NAMES = dict(DTYPES)
_DTYPE_NAMES.update({"float": DTYPES["float32"], "double": DTYPES["float64"], "long": DTYPES["int64"]})
_DTYPE_NAMES.update({n: DTYPES[d] for n, d in (("half", "float16"), ("int", "int32")) if d in DTYPES})
_NUMBERS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}


def _device(type, index=None):
    """``torch.device("cpu")``, ``torch.device("cuda", 0)``, ``torch.device("cuda:1")``: a device
    object, which ``device=`` arguments and ``.to()`` take as they take its name."""
    name = str(type)
    kind, _, number = name.partition(":")
    if kind not in ("cpu", "cuda") or number and not number.isdecimal() or number and index is not None:
        raise DeviceError(f"Expected one of cpu, cuda device type at start of device string: {name}")
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise GradTypeError(f"device(): argument 'index' must be a non-negative int, not {index!r}")
        name = f"{kind}:{index}"
    return device(name)
_PYTHON_BUILTINS = {"len", "float", "int", "print"}


def _math_members() -> dict:
    names = ("sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "tanh", "sinh", "cosh", "atan",
             "asin", "acos", "floor", "ceil", "fabs", "isclose", "isnan", "isinf", "isfinite", "erf", "trunc",
             "atan2", "hypot", "copysign", "degrees", "radians", "fsum", "prod", "lgamma", "gamma", "expm1",
             "log1p")
    members = {n: BuiltinRef(n, getattr(math, n)) for n in names if hasattr(math, n)}
    members.update(_NUMBERS)
    members["tau"] = math.tau
    return members


def _numpy_members() -> dict:
    """numpy, as far as the snippets use it: constants, and arrays as float64 tensors."""
    from ..autograd.factory import tensor
    from ..ops.creation import ones, zeros

    def array(data, dtype=None):
        return tensor(data, dtype=dtype if dtype is not None else _numpy_dtype(data))

    members = {"array": BuiltinRef("array", array), "asarray": BuiltinRef("asarray", array),
               "ones": BuiltinRef("ones", lambda shape, dtype="float64": ones(shape, dtype=dtype)),
               "zeros": BuiltinRef("zeros", lambda shape, dtype="float64": zeros(shape, dtype=dtype)),
               "float32": DTYPES["float32"], "float64": DTYPES["float64"], "int64": DTYPES["int64"]}
    members.update({n: BuiltinRef(n, getattr(math, n)) for n in ("sqrt", "exp", "log", "sin", "cos", "tanh")})
    members.update(_NUMBERS)
    return members


def _numpy_dtype(data):
    """numpy's default dtype for nested Python numbers: float64 if any float, else int64."""
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, float):
            return "float64"
    return "int64"


def _torch_members() -> dict:
    from .sandbox import BUILTINS, PYTHON_BUILTINS, registered_builtins
    registered_builtins()
    members = {name: BuiltinRef(name, fn) for name, fn in BUILTINS.items() if name not in _PYTHON_BUILTINS
               and name not in PYTHON_BUILTINS and name not in ("backward", "grad", "saved_tensors_hooks")}
    members.update(_ops_in("torch"))
    for name in _METHODS_ONLY:  # bare names of the dialect, Tensor methods in torch: no torch.view
        members.pop(name, None)
    for name, info in registry.NAMESPACES["torch"].items():  # torch's function forms take the sizes that
        param = info.sizes_parameter  # the methods and bare names take one by one as one sequence:
        if param is not None and name in members:  # torch.permute(x, (1, 0)), x.permute(1, 0)
            members[name] = BuiltinRef(name, _function_form(name, param, info.fn))
    members.update(_DTYPE_NAMES)
    members.update(_NUMBERS)
    members["device"] = BuiltinRef("device", _device)
    members["inference_mode"] = BuiltinRef("inference_mode", inference_mode)
    members.update(_anomaly_members(("is_anomaly_enabled", "is_anomaly_check_nan_enabled")))
    members.update({"autograd": Module.of("torch.autograd"), "nn": Module.of("torch.nn"), "cuda": Module.of("torch.cuda")})
    return members


def _ops_in(namespace: str) -> dict:
    return {name: BuiltinRef(name, info.fn) for name, info in registry.NAMESPACES.get(namespace, {}).items()}


def _autograd_members() -> dict:
    from .sandbox import BUILTINS, registered_builtins
    registered_builtins()
    members = {"grad": BuiltinRef("grad", BUILTINS["grad"]), "backward": BuiltinRef("backward", BUILTINS["backward"])}
    members.update(_anomaly_members())
    members.update(_ops_in("torch.autograd"))
    if "torch.autograd.functional" in registry.NAMESPACES:
        members["functional"] = Module.of("torch.autograd.functional")
    members["graph"] = Module.of("torch.autograd.graph")
    return members


def _anomaly_members(names=("detect_anomaly", "set_detect_anomaly")) -> dict:
    """Anomaly mode where torch has it: ``torch.autograd.detect_anomaly()`` and
    ``set_detect_anomaly(mode)`` (a call, or a ``with`` block); ``torch.is_anomaly_enabled()``."""
    from ..autograd import engine
    return {name: BuiltinRef(name, getattr(engine, name)) for name in names}


def _graph_members() -> dict:
    """``torch.autograd.graph``: saved_tensors_hooks (the program's pack/unpack functions)."""
    from .sandbox import BUILTINS, registered_builtins
    registered_builtins()
    return {"saved_tensors_hooks": BuiltinRef("saved_tensors_hooks", BUILTINS["saved_tensors_hooks"])}


def _cuda_members() -> dict:
    members = {"is_available": BuiltinRef("is_available", _cuda_available),
               "device_count": BuiltinRef("device_count", lambda: 1 if _cuda_available() else 0)}
    from ..ops.legacy import cuda
    members.update({n: BuiltinRef(n, getattr(cuda, n)) for n in ("FloatTensor", "DoubleTensor", "LongTensor")})
    members.update(_ops_in("torch.cuda"))
    return members


_MEMBERS = {
    "torch": _torch_members,
    "torch.autograd": _autograd_members,
    "torch.autograd.graph": _graph_members,
    "torch.nn": lambda: {"functional": Module.of("torch.nn.functional"), **_ops_in("torch.nn")},
    "torch.nn.functional": lambda: _ops_in("torch.nn.functional"),
    "torch.cuda": _cuda_members,
    "numpy": _numpy_members,
    "math": _math_members,
}


_CACHE: dict = {}  # module name -> (the registry's size when read, members)


def members(module_name: str) -> dict:
    """The members of a module, as the registry is now (an op declared since the last read
    joins), cached while the registry does not change."""
    functions = registry.FUNCTIONS
    key = (id(functions), len(functions), next(reversed(functions), None),
           sum(map(len, registry.NAMESPACES.values())))
    cached = _CACHE.get(module_name)
    if cached is not None and cached[0] == key:
        return cached[1]
    make = _MEMBERS.get(module_name)
    table = make() if make is not None else (_ops_in(module_name) if module_name in registry.NAMESPACES else {})
    _CACHE[module_name] = (key, table)
    return table


def known_modules() -> list[str]:
    names = set(_MEMBERS) | {n for n in registry.NAMESPACES if n.startswith("torch.")}
    return sorted(names)


def import_module(name: str) -> Module:
    """The module ``import NAME`` binds, or a GradNameError saying what can be imported."""
    if name in _MEMBERS or name in registry.NAMESPACES:
        return Module.of(name)
    hint = _HINTS.get(name) or next((h for prefix, h in _HINTS.items() if name.startswith(prefix + ".")), None)
    raise GradNameError(f"No module named '{name}' in gradcli: it can import {', '.join(known_modules())}",
                        hint=hint)


def member(module: Module, attr: str):
    """``module.attr``: a whitelisted function, constant or submodule."""
    table = members(module.name)
    if attr in table:
        return table[attr]
    full = f"{module.name}.{attr}"
    if full in registry.NAMESPACES:  # a submodule that ops declared themselves in (torch.linalg)
        return Module.of(full)
    hint = _HINTS.get(full) or _NOT_IN_TORCH.get(full) or _HINTS.get(module.name)
    if hint is None and module.name == "torch.nn":
        hint = _BEYOND
    from .sandbox import suggest
    raise GradNameError(f"module '{module.name}' has no attribute '{attr}' in gradcli"
                        f"{suggest(attr, table)}", hint=hint)


def import_from(module_name: str, name: str):
    """``from MODULE import NAME``: a member, or a submodule (``from torch import nn``)."""
    import_module(module_name)  # an unknown module is named as such
    table = members(module_name)
    if name in table:
        return table[name]
    full = f"{module_name}.{name}"
    if full in _MEMBERS or full in registry.NAMESPACES:
        return Module.of(full)
    from .sandbox import suggest
    raise GradNameError(f"cannot import name '{name}' from '{module_name}' in gradcli{suggest(name, table)}",
                        hint=_HINTS.get(full) or _HINTS.get(module_name) or
                        (_BEYOND if module_name == "torch.nn" else None))
