"""``gradcli.autograd``: the functional entry points, named as in ``torch.autograd``."""

from .engine import backward, detect_anomaly, grad, set_detect_anomaly  # noqa: F401
from .grad_mode import enable_grad, no_grad, set_grad_enabled  # noqa: F401
from . import graph, introspection  # noqa: F401  (grad_fn._saved_*, node hooks, saved_tensors_hooks)
from .inference import inference_mode, is_inference_mode_enabled  # noqa: F401
