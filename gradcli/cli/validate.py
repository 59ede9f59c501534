"""Option and environment values checked before anything runs (SPEC §1: bad input is exit 2).

The fast path and typer only convert types; whether a number makes sense (a negative timeout,
NaN, a seed torch would refuse, a device that is not one) is decided here once, for both, so a
bad value is a usage error with a message, never an "internal error" from deep in the engine.
"""

from __future__ import annotations

import math
import re

from ..errors import UsageError

# torch.manual_seed takes any seed in [-2**63, 2**64 - 1]; a negative one is used modulo 2**64.
SEED_MIN, SEED_MAX = -2 ** 63, 2 ** 64 - 1
# setitimer's limit on this platform is far above this; a day is more than any run should get.
TIMEOUT_MAX = 86_400.0


def timeout(value):
    """``--timeout``: finite seconds in [0, a day]; None gives the default, 0 none."""
    if value is None:
        from ..limits import DEFAULT_TIMEOUT
        return DEFAULT_TIMEOUT
    if not math.isfinite(value) or value < 0 or value > TIMEOUT_MAX:
        raise UsageError(f"--timeout must be a number of seconds from 0 to {TIMEOUT_MAX:g} (0 for no limit), "
                         f"not {value!r}")
    return float(value)


_UNITS = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
_SIZE = re.compile(r"([0-9]{1,15})\s*([KMGT]?)(?:I?B)?\Z", re.IGNORECASE)


def size(flag: str, value):
    """A byte count: digits with an optional K, M, G or T (powers of 1024), e.g. ``512M``."""
    if value is None:
        return None
    m = _SIZE.match(str(value).strip())
    if not m or int(m.group(1)) == 0:
        shown = str(value)[:40]
        raise UsageError(f"{flag} must be a positive number of bytes, e.g. 512M or 8G, not {shown!r}")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def positive(flag: str, value):
    if value is not None and value < 1:
        raise UsageError(f"{flag} must be a positive integer, not {value!r}")
    return value


def seed(value):
    """torch's range; a negative seed maps to ``seed % 2**64``, as ``torch.manual_seed`` does."""
    if value is None:
        return None
    if not SEED_MIN <= value <= SEED_MAX:
        raise UsageError(f"--seed must be between {SEED_MIN} and {SEED_MAX} (torch.manual_seed's range), "
                         f"not {value}")
    return value % 2 ** 64


def device(value):
    """A device string that can be one: printable, no spaces, at most 64 characters. Whether it
    names a device (``tpu``, ``cuda:x``) and whether that is there is the backend's to say, with
    torch's messages and exit 3 (SPEC §1); text that cannot be a device string at all (empty,
    control characters, a megabyte) is bad input, exit 2."""
    text = "cpu" if value is None else str(value)
    if not text or len(text) > 64 or not text.isprintable() or any(c.isspace() for c in text):
        shown = ascii(text[:40]) + ("..." if len(text) > 40 else "")
        raise UsageError(f"--device (or GRADCLI_DEVICE) must be cpu, cuda or cuda:N, not {shown}",
                         hint="use --device cpu, cuda or cuda:N")
    return text
