"""``gradcli.autograd``: the functional entry points, named as in ``torch.autograd``."""

from .engine import (  # noqa: F401
    backward, detect_anomaly, grad, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly,
)
from .grad_mode import enable_grad, inference_mode, is_inference_mode_enabled, no_grad, set_grad_enabled  # noqa: F401
from . import graph, introspection  # noqa: F401  (grad_fn._saved_*, node hooks, saved_tensors_hooks)
