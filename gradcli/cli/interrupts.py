"""``--timeout`` and Ctrl-C (SIGINT) for one command, without races against its own teardown.

Both raise only while the run is *live* (:data:`gradcli.limits.DEADLINE`): from the start of the
command until it begins to write its output (:func:`gradcli.limits.settle`, which calls
:func:`hold`). Then the alarm is stopped and SIGINT is held back (blocked, left pending), so a
document that has started is finished whole, and the process then exits 130. The alarm is one-shot (``setitimer`` with no interval); should its
exception or a Ctrl-C's be swallowed (raised inside a finalizer, which Python reports as
"Exception ignored" and drops), the evaluator's and engine's polls of ``DEADLINE.expired`` raise
it again, and the report is not printed. Leaving the block first marks the run over, then stops the
timer, then restores the old handlers (``signal.signal`` runs any pending Python-level handler
first, which is then our inert one), so no alarm can fire in teardown.
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
import time

from ..limits import DEADLINE, timeout_error


class _State:
    __slots__ = ("interrupted",)

    def __init__(self):
        self.interrupted = False


STATE = _State()


def _on_alarm(signum, frame):
    DEADLINE.expired = True
    if DEADLINE.live:
        raise _ours(timeout_error())


def _on_sigint(signum, frame):
    STATE.interrupted = True
    if DEADLINE.live:
        DEADLINE.interrupted = DEADLINE.expired = True  # for the polls, should this be swallowed
        raise _ours(KeyboardInterrupt())


def _ours(exc: BaseException) -> BaseException:
    exc.gradcli_signal = True  # see _unraisable
    return exc


def _unraisable(previous, unraisable) -> None:
    """``sys.unraisablehook`` while a command runs (``previous`` bound: the hook it replaced): an
    exception our handlers raised inside a finalizer (where Python cannot propagate it) is not
    reported, since the next poll raises it again; anything else goes to ``previous``."""
    if not getattr(unraisable.exc_value, "gradcli_signal", False):
        previous(unraisable)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def take_sigint():
    """Route SIGINT through :func:`_on_sigint` from now on (the CLI's first act); the old handler."""
    DEADLINE.live = True
    DEADLINE.hold = hold
    STATE.interrupted = False
    if not _main_thread() or signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        return None  # a SIGINT the parent ignores (a background job of a script) stays ignored, as
        #              CPython leaves it (it installs its KeyboardInterrupt handler only over SIG_DFL)
    return signal.signal(signal.SIGINT, _on_sigint)


def hold() -> None:
    """The output is being written: stop the alarm, and keep SIGINT pending until :func:`release`.
    (CPython drops the rest of a ``print`` whose blocked write to a pipe a signal interrupts, even
    when the handler returns quietly: holding the signal back keeps the document whole.)"""
    DEADLINE.live = False
    if not _main_thread():
        return
    if hasattr(signal, "SIGALRM"):
        signal.setitimer(signal.ITIMER_REAL, 0)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def release(keep_held: bool = False) -> None:
    """After the output: a SIGINT that arrived meanwhile counts as an interruption (exit 130). It is
    consumed rather than delivered; ``keep_held`` leaves SIGINT blocked (the process is ending: a
    Ctrl-C during the interpreter's shutdown must not add to what was written)."""
    if not _main_thread() or not hasattr(signal, "pthread_sigmask"):
        return
    if signal.SIGINT in signal.sigpending():
        signal.sigwait({signal.SIGINT})
        STATE.interrupted = True
    if not keep_held:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def give_sigint(old) -> None:
    """Put back the handler :func:`take_sigint` replaced (for callers of ``main`` in-process)."""
    DEADLINE.live = False
    DEADLINE.hold = None
    if old is not None and _main_thread():
        signal.signal(signal.SIGINT, old)


class guarded:
    """One command's run: live (interruptible) until it settles or ends, with ``--timeout``
    (``seconds``; None or 0: none) armed in the main thread, where signals can be handled."""

    def __init__(self, seconds):
        self.seconds = seconds or 0.0
        self._old_alarm = self._old_hook = None

    def __enter__(self):
        DEADLINE.expired = DEADLINE.interrupted = False
        self._old_hook = sys.unraisablehook
        sys.unraisablehook = functools.partial(_unraisable, self._old_hook)
        DEADLINE.seconds = self.seconds or None
        DEADLINE.at = time.monotonic() + self.seconds if self.seconds else None
        DEADLINE.live = True
        if self.seconds and hasattr(signal, "SIGALRM") and _main_thread():
            self._old_alarm = signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        DEADLINE.live = False  # first: from here on the alarm and SIGINT only take note
        if self._old_alarm is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old_alarm)
            self._old_alarm = None
        DEADLINE.at = None
        sys.unraisablehook = self._old_hook
        if DEADLINE.hold is not None:  # under the CLI: what follows is output (an error's report)
            DEADLINE.hold()
        return False
