"""``gradcli.autograd``: the functional entry points, named as in ``torch.autograd``."""

from .engine import backward, detect_anomaly, grad, set_detect_anomaly  # noqa: F401
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401
