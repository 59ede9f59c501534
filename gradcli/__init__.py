"""gradcli: a PyTorch-faithful autograd engine you can drive from a terminal.

As a library it keeps PyTorch's names::

    import gradcli as gc
    x = gc.tensor([1., 2.], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.grad            # tensor([2., 4.])
"""

import sys as _sys


def _as_command() -> bool:
    """Whether this process is the ``gradcli`` command (the console script or ``python -m``)."""
    argv = getattr(_sys, "orig_argv", None) or []
    return argv[1:3] == ["-m", "gradcli"] or _sys.argv[0].endswith(("/gradcli", "\\gradcli", "gradcli.exe"))


def _pause_gc_while_starting() -> None:
    """Run as the command, the imports below (the op table: thousands of long-lived objects, and
    then the language and lark) run with the cyclic garbage collector paused: collecting among
    objects that all live to the end is pure cost (~10 ms of a start, more on a busy machine).
    :func:`gradcli.cli.fast.resume_gc` turns it back on, and freezes what was imported, before
    any program runs."""
    import gc
    gc.disable()


def _quiet_ctrl_c_while_starting() -> None:
    """Run as the ``gradcli`` command, Ctrl-C during the imports below (a few hundred ms on a busy
    machine) ends the process with status 130 and, under ``--json``, one JSON document, instead
    of a KeyboardInterrupt traceback; :func:`gradcli.cli.fast.main` then takes SIGINT over. Imported
    as a library, nothing changes."""
    import os
    import _signal as signal  # the C module: ``signal`` imports enum and functools (~3 ms more window)

    def interrupted(signum, frame):
        if "--json" in _sys.argv:
            try:  # a one-line module; not yet imported when the Ctrl-C came during start-up
                from ._version import __version__ as version
            except BaseException:
                version = None
            os.write(1, ('{"version": %s, "variables": [], "printed": [], "checks": [], "backward": "none", '
                         '"error": {"kind": "interrupted", "message": "interrupted", "line": null, "column": null}}\n'
                         % ("null" if version is None else '"%s"' % version)).encode())
        os.write(2, b"interrupted\n")
        os._exit(130)
    try:
        if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:  # ignored by the parent (`cmd &` in a
            signal.signal(signal.SIGINT, interrupted)         # script): stays ignored, as for Python
            # Blocked by the parent (`env --block-signal=INT gradcli ...`: the one way to cover the
            # interpreter's own start-up, SPEC §5): a Ctrl-C that arrived meanwhile is pending, and
            # is taken here, now that the handler is in place.
            signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT,))
    except (ValueError, AttributeError):  # not the main thread; no pthread_sigmask (Windows)
        pass


if _as_command():
    _quiet_ctrl_c_while_starting()
    _pause_gc_while_starting()

from ._version import __version__  # noqa: F401,E402

from . import ops as _ops  # noqa: F401  (defines the op table and Tensor methods)
from . import autograd  # noqa: F401
from .ops.creation import (  # noqa: F401
    allclose, arange, eye, full, full_like, linspace, ones, ones_like, rand, rand_like, randn,
    randn_like, tensor, zeros, zeros_like,
)
from .backend.dtypes import (  # noqa: F401
    Size, bool_ as bool, device, dtype, float16, float32, float64, get_default_dtype, int32, int64,
    set_default_dtype,
)
from .errors import (  # noqa: F401
    AutogradError, CheckFailed, DeviceError, GradcliError, GradNameError, GradSyntaxError, GradTypeError,
    LimitError, ShapeError, UsageError,
)
from .autograd.engine import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: F401
from .autograd.grad_mode import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from .ops import *  # noqa: F401,F403
from .ops import abs, all, any, max, min, pow, sum  # noqa: F401  (shadow builtins, as torch does)
from .autograd.tensor import Tensor  # noqa: F401  (the class; the legacy constructor is ops.legacy_tensor)
from .ops.legacy import cuda  # noqa: F401
from .ops import autograd_functional as _functional
autograd.functional = _functional  # gradcli.autograd.functional.jacobian, as torch.autograd.functional

float = float32  # noqa: A001
double = float64
long = int64
half = float16
int = int32  # noqa: A001  (torch.int is int32)
