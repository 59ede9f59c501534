"""eval's implicit backward: after the last statement, ``backward()`` on its value when that is
a one-element tensor that requires grad, and otherwise the note that says why it did not run
and what to write instead.
"""

from __future__ import annotations

from ..autograd.tensor import Tensor
from ..errors import GradcliError
from .ast import Assign, Call, ExprStmt, Name


def run_implicit_backward(result, stmt, value) -> None:
    """Back-propagate from ``value``, the value of the program's last statement ``stmt``,
    setting ``result.backward`` to ``"auto"``, or set ``result.note`` when it cannot run."""
    if not isinstance(stmt, (Assign, ExprStmt)) or _is_print(stmt):
        return
    if not isinstance(value, Tensor) or not value.requires_grad:
        return
    if value.numel() != 1:
        named = isinstance(stmt, Assign) and not stmt.unpack
        name = stmt.targets[0] if named else "y"
        how = (f"pass a gradient: {name}.backward(ones_like({name}))" if named else
               "name it and pass a gradient: y = ...; y.backward(ones_like(y))")
        result.note = (f"{name if named else 'the result'} has shape {list(value.shape)}, so backward "
                       f"was not run: gradients are implicit only for one-element tensors. Reduce it "
                       f"(sum(), mean()) or {how}")
        return
    try:
        value.backward()
    except GradcliError as err:
        raise err.at(stmt.line, stmt.column)
    result.backward = "auto"


def _is_print(stmt) -> bool:
    return (isinstance(stmt, ExprStmt) and isinstance(stmt.value, Call)
            and isinstance(stmt.value.func, Name) and stmt.value.func.id == "print")
