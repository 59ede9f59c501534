"""``gradcli.autograd``: the functional entry points, named as in ``torch.autograd``."""

from .engine import (  # noqa: F401
    backward, detect_anomaly, grad, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly,
)
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401
