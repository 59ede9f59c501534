"""The ops: every user-facing function, each declared once with its node(s) and formulas.

Importing this package runs the declarations, family by family: each defines its node classes
(``gradcli.autograd.node.NODE_CLASSES``), registers its functions (``gradcli.ops.registry.FUNCTIONS``)
and attaches their method forms and operators to ``Tensor``. Every registered function is
exported from here by its name (``gradcli.ops.mul``), read from the registry.
"""

from . import creation, indexing, legacy, linalg, pointwise, random, reduction, shape  # noqa: F401  (the declarations)
from . import multi_output  # noqa: F401  (unbind, split, chunk, iteration: after indexing)
from . import autograd_functional, nn_functional  # noqa: F401  (after the families whose ops they use)
from . import formulas  # noqa: F401  (hands the engine its formula namespaces)
from .indexing import embed, getitem, index_with_key  # noqa: F401  (used by formulas)
from .linalg import bmm  # noqa: F401
from .nn_functional import (elu_backward, gelu_backward, hardtanh_backward, leaky_relu_backward,  # noqa: F401
                            log_sigmoid_backward, softplus_backward)
from .pointwise import rsub, sigmoid_backward, tanh_backward, threshold_backward  # noqa: F401
from .reduction import log_softmax_backward, softmax_backward  # noqa: F401
from .registry import FUNCTIONS, module_form

# torch.special: the ops gradcli has under their special names (logit and sinc declare it themselves)
for _name in "erf erfc expm1 exp2 log1p xlogy logsumexp round softmax log_softmax".split():
    module_form("torch.special", FUNCTIONS[_name].fn)
module_form("torch.special", FUNCTIONS["sigmoid"].fn, "expit")

globals().update({name: info.fn for name, info in FUNCTIONS.items()})
__all__ = list(FUNCTIONS)
