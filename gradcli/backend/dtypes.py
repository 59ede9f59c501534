"""Dtypes, shapes and devices as PyTorch shows them, and PyTorch's type promotion.

Promotion follows ``torch.result_type``: operands are grouped into tensors with
dimensions, zero-dim tensors and Python scalars; a higher group only matters when
it is of a higher category (bool < integer < floating), and a Python float takes
the default float dtype, not float64 (numpy's NEP 50 differs there).
"""

from __future__ import annotations


class dtype:
    """A tensor element type; prints as ``torch.float32`` so output matches PyTorch."""

    __slots__ = ("name", "category", "itemsize", "is_floating_point")

    def __init__(self, name: str, category: int, itemsize: int):
        self.name = name
        self.category = category            # 0 bool, 1 integer, 2 floating
        self.itemsize = itemsize
        self.is_floating_point = category == 2

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        return (by_name, (self.name,))


bool_ = dtype("bool", 0, 1)
int32 = dtype("int32", 1, 4)
int64 = dtype("int64", 1, 8)
float16 = dtype("float16", 2, 2)
float32 = dtype("float32", 2, 4)
float64 = dtype("float64", 2, 8)

DTYPES = {d.name: d for d in (bool_, int32, int64, float16, float32, float64)}
ALIASES = {"float": "float32", "double": "float64", "long": "int64", "int": "int32", "half": "float16",
           "bool_": "bool"}
_ORDER = ("bool", "int32", "int64", "float16", "float32", "float64")
_RANK = {name: i for i, name in enumerate(_ORDER)}


def by_name(name) -> dtype:
    """Look up a dtype by gradcli/torch/numpy name (``"float32"``, ``"torch.float64"``, ``"double"``)."""
    if isinstance(name, dtype):
        return name
    text = str(name)
    if text.startswith("torch."):
        text = text[6:]
    text = ALIASES.get(text, text)
    try:
        return DTYPES[text]
    except KeyError:
        from ..errors import GradTypeError
        raise GradTypeError(f"unknown dtype '{name}'",
                            hint="use one of: " + ", ".join(DTYPES)) from None


class _Defaults:
    __slots__ = ("float",)

    def __init__(self):
        self.float = float32


DEFAULTS = _Defaults()


def get_default_dtype() -> dtype:
    return DEFAULTS.float


def set_default_dtype(d) -> None:
    d = by_name(d)
    if not d.is_floating_point:
        from ..errors import GradTypeError
        raise GradTypeError("only floating-point types are supported as the default type")
    DEFAULTS.float = d


def promote_types(a: str, b: str) -> str:
    """Two dtype names to the smallest that holds both (bool < ints < floats)."""
    if a == b:
        return a
    return a if _RANK[a] > _RANK[b] else b


def scalar_dtype_name(value) -> str:
    if value is True or value is False:
        return "bool"
    if isinstance(value, int):
        return "int64"
    return DEFAULTS.float.name


def _category(name: str | None) -> int:
    return -1 if name is None else DTYPES[name].category


def _combine(higher: str | None, lower: str | None) -> str | None:
    if higher is None:
        return lower
    if lower is None:
        return higher
    ch, cl = _category(higher), _category(lower)
    if ch == 2:
        return higher
    if higher == "bool" or cl == 2:
        return promote_types(higher, lower)
    return higher


def result_type(operands) -> str:
    """``torch.result_type`` over tensors (anything with ``dtype`` and ``ndim``) and Python scalars."""
    dim = zero = wrapped = None
    for op in operands:
        d = getattr(op, "dtype", None)
        if d is None:
            name = scalar_dtype_name(op)
            wrapped = name if wrapped is None else promote_types(wrapped, name)
        elif op.ndim:
            dim = d.name if dim is None else promote_types(dim, d.name)
        else:
            zero = d.name if zero is None else promote_types(zero, d.name)
    return _combine(dim, _combine(zero, wrapped))


class Size(tuple):
    """A shape; prints as ``torch.Size([2, 2])``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"torch.Size({list(self)!r})"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


class device:
    """A device; prints as ``device(type='cpu')`` / ``device(type='cuda', index=0)``."""

    __slots__ = ("type", "index")

    def __init__(self, name: str):
        kind, _, idx = str(name).partition(":")
        self.type = kind
        self.index = int(idx) if idx else None

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        return str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))
