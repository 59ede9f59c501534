"""What the legacy API leaves on tensors: which ones are parameters, and ``.volatile``.

``nn.Parameter`` is a Tensor that prints as "Parameter containing:\\n" + its repr; making it a
subclass would fail the ``x.__class__ is Tensor`` fast paths of every op, so a parameter is a
plain Tensor remembered here (weakly: a parameter that is dropped is forgotten).
"""

from __future__ import annotations

import warnings
import weakref

from .tensor import Tensor

_PARAMETERS: "weakref.WeakValueDictionary[int, Tensor]" = weakref.WeakValueDictionary()

VOLATILE_ATTRIBUTE = "volatile was removed (Variable.volatile is always False)"


def mark_parameter(t: Tensor) -> None:
    _PARAMETERS[id(t)] = t


def is_parameter(t: Tensor) -> bool:
    return _PARAMETERS.get(id(t)) is t


def repr_prefix(t: Tensor) -> str:
    """What torch prints before a tensor's repr: "Parameter containing:\\n" for a parameter."""
    return "Parameter containing:\n" if _PARAMETERS and is_parameter(t) else ""


def _volatile(self) -> bool:
    """Legacy ``Variable.volatile``: always False, with torch's warning."""
    warnings.warn(VOLATILE_ATTRIBUTE, UserWarning, stacklevel=2)
    return False


Tensor.volatile = property(_volatile)
