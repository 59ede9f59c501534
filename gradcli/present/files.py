"""Writing an output file (``graph -o``) atomically: a temporary file in the same folder, then
``os.replace``. A write that fails (a full disk, a file-size limit) leaves the old file as it was
and is an error; a path that names something other than a regular file (``/dev/full``, a FIFO,
a folder) is refused before anything is written.

Exit codes (SPEC §1): a path that cannot be used (no such folder, no permission, not a regular
file) is bad input, 2; a write that fails on the way (no space, file too large, I/O error) is a
device error, 3, as a failing Graphviz is.
"""

from __future__ import annotations

import os
import signal
import stat
import tempfile

from ..errors import DeviceError, UsageError


def destination(path: str) -> str:
    """The real path ``path`` writes to (through symlinks), or UsageError if it cannot be one."""
    if not path:
        raise UsageError("-o needs a file name")
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else \
            "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file"
        raise UsageError(f"cannot write {path}: it is {what}, not a regular file",
                         hint="-o writes a new file or replaces a regular one")
    folder = os.path.dirname(real) or "."
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: no such folder {os.path.dirname(path) or '.'}")
    return real


def write_atomically(path: str, fill) -> None:
    """Create ``path`` through ``fill(temporary_path)`` (which writes the whole file there), then
    rename it into place. On any failure the temporary file is removed and ``path`` is untouched."""
    real = destination(path)
    folder, name = os.path.split(real)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    old_xfsz = _ignore_sigxfsz()
    try:
        try:
            fill(tmp)
            _match_mode(tmp, real)
            os.replace(tmp, real)
        except OSError as exc:
            raise DeviceError(f"cannot write {path}: {exc.strerror or exc}; the old file, if any, is unchanged") from None
    finally:
        if old_xfsz is not None:
            signal.signal(signal.SIGXFSZ, old_xfsz)
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str, text: str) -> None:
    def fill(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    write_atomically(path, fill)


def _match_mode(tmp: str, real: str) -> None:
    """The new file gets the old one's permissions, or those of a new file under the umask
    (mkstemp makes it 0600)."""
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(tmp, mode)


def _ignore_sigxfsz():
    """Past ``ulimit -f`` the kernel sends SIGXFSZ, which kills by default: ignored, the write fails
    with EFBIG instead and is reported. The old handler, or None where it cannot be changed."""
    if not hasattr(signal, "SIGXFSZ"):
        return None
    try:
        return signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    except ValueError:  # not the main thread
        return None
