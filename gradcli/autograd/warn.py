"""torch's UserWarnings, raised with ``warnings.warn`` at the user's line.

The stack level is the first frame outside the gradcli package, so a warning from deep inside
the engine points where torch's would: at the user's ``y.grad`` or ``z.backward(...)`` line (the
CLI catches them and names the program's line instead).
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

NON_LEAF_GRAD = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                 "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
                 "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
                 "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
                 "github.com/pytorch/pytorch/pull/30531 for more information.")
CREATE_GRAPH_CYCLE = ("Using backward() with create_graph=True will create a reference cycle between the "
                      "parameter and its gradient which can cause a memory leak. We recommend using "
                      "autograd.grad when creating the graph to avoid this. If you have to use this function, "
                      "make sure to reset the .grad fields of your parameters to None after use to break the "
                      "cycle and avoid the leak.")
ANOMALY_ENABLED = ("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                   "enabled for debugging.")


def warn(message: str) -> None:
    """``warnings.warn(message, UserWarning)`` attributed to the first caller outside gradcli."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level if frame is not None else 2)


def user_stack() -> str:
    """The Python stack outside gradcli, formatted as torch's anomaly mode keeps it per node."""
    frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(_PACKAGE)]
    return "".join(traceback.format_list(frames))
