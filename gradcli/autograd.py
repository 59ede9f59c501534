"""``gradcli.autograd``: the functional entry points, named as in ``torch.autograd``."""

from .engine import backward, grad  # noqa: F401
from .grad_mode import enable_grad, no_grad, set_grad_enabled  # noqa: F401
