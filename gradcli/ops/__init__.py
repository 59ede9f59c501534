"""The op table: every differentiable function, its grad_fn and its derivative formulas.

Importing this package defines the node classes (``gradcli.autograd.node.NODE_CLASSES``),
registers the user-facing functions (``gradcli.ops.registry.FUNCTIONS``) and attaches
their method forms and operators to ``Tensor``.
"""

from .pointwise import (  # noqa: F401
    abs, add, add_, clamp, cos, div, div_, eq, exp, ge, gt, le, log, log1p, logical_and, logical_or, lt,
    maximum, minimum, mul, mul_, ne, neg, pow, reciprocal, relu, rsqrt, rsub, sigmoid, sign, sin, sqrt,
    square, sub, sub_, tan, tanh, where, zero_,
)
from .reduction import (  # noqa: F401
    all, amax, amin, any, log_softmax, logsumexp, max, mean, min, norm, prod, softmax, std, sum, var,
)
from .shape import (  # noqa: F401
    cat, clone, detach, expand, expand_as, flatten, permute, reshape, squeeze, stack, t, transpose,
    unsqueeze, view,
)
from .linalg import bmm, dot, matmul, mm, mv, outer  # noqa: F401
from .indexing import embed, getitem, index_with_key, narrow, select  # noqa: F401
from .creation import zeros_like  # noqa: F401,E402
from ..autograd.tensor import Tensor as _Tensor

_Tensor.__matmul__ = lambda a, b: matmul(a, b)
_Tensor.__rmatmul__ = lambda a, b: matmul(b, a)
