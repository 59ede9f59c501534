"""torch's CPU random number generator, value for value: mt19937 and ATen's transformations.

A program seeded with ``manual_seed(n)`` (or ``--seed n``) must draw the numbers torch draws
after ``torch.manual_seed(n)``, so the generator is the same mt19937 (NumPy's ``MT19937``
bit generator, given the state ATen's seeding computes) and each distribution consumes its
32-bit words the way ATen's CPU kernels do (``ATen/core/DistributionsHelper.h``,
``TransformationHelper.h``, ``native/cpu/DistributionTemplates.h``):

- uniform: one word per float32 value (its low 24 bits / 2**24), two per float64 value
  (``random64() = w0 << 32 | w1``, its low 53 bits / 2**53);
- normal, 16 or more elements: uniforms for the whole tensor, Box-Muller on each block of 16
  (``u1 = 1 - data[j]``, ``u2 = data[j + 8]``), the last 16 drawn again when the size is not a
  multiple of 16; computed in the dtype with the C library's ``log``/``cos``/``sin`` (torch
  calls them; NumPy's own float32 ones differ in the last bit);
- normal, fewer elements: ``normal_distribution<double>`` per element, whose second value is
  kept in the generator for the next draw (also across calls, until the next seed);
- randint: ``word % range + low``, one word while the range is below 2**28, two above;
- randperm: a Fisher-Yates swap with ``word % (n - i)``.

numpy.random and ctypes are imported on first use (start-up does not pay for them).
"""

from __future__ import annotations

import math

import numpy as _np

from .avx_mathfun import fma32, log256, sincos256

_MASK32 = 0xFFFFFFFF


class Generator:
    """One torch CPU generator: an mt19937 stream plus the cached second normal sample."""

    def __init__(self, seed: int | None = None):
        self._bitgen = None
        self._initial_seed = 0
        self.next_double_normal = None
        self.manual_seed(fresh_seed() if seed is None else seed)

    # -- seeding ---------------------------------------------------------------
    def manual_seed(self, seed: int) -> "Generator":
        """ATen's ``mt19937(seed)``: the standard init_genrand with the seed's low 32 bits."""
        seed = int(seed)
        if seed < -(1 << 63) or seed >= (1 << 64):
            raise OverflowError("Overflow when unpacking long")
        seed &= (1 << 64) - 1
        self._initial_seed = seed
        self.next_double_normal = None
        key = _np.empty(624, dtype=_np.uint32)
        s = seed & _MASK32
        for i in range(624):
            key[i] = s
            s = (1812433253 * (s ^ (s >> 30)) + i + 1) & _MASK32
        from numpy.random import MT19937
        bitgen = MT19937(0)
        bitgen.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
        self._bitgen = bitgen
        return self

    def initial_seed(self) -> int:
        return self._initial_seed

    def __repr__(self) -> str:
        return "<torch._C.Generator object>"

    def seed(self) -> int:
        """Seed from the operating system's entropy, as ``torch.seed()``; returns the seed."""
        s = fresh_seed()
        self.manual_seed(s)
        return s

    # -- raw words -------------------------------------------------------------
    def words(self, n: int) -> _np.ndarray:
        """The next ``n`` 32-bit outputs of mt19937, as uint64."""
        if n <= 0:
            return _np.empty(0, dtype=_np.uint64)
        return self._bitgen.random_raw(n)

    def random64(self, n: int) -> _np.ndarray:
        """``random64()`` n times: two words each, the first the high half."""
        w = self.words(2 * n)
        return (w[0::2] << _np.uint64(32)) | w[1::2]

    # -- distributions ---------------------------------------------------------
    def uniform(self, n: int, dtype: str, low: float = 0.0, high: float = 1.0) -> _np.ndarray:
        """``uniform_(low, high)`` on n elements of ``dtype``: float64 from 53 bits, float32 from
        24; float16 is float32's value rounded (its opmath type is float), 1.0 clamped to ``low``."""
        if dtype == "float16":
            out = self.uniform(n, "float32", low, high).astype(_np.float16)
            top = _np.float16(high)
            return _np.where(out == top, _np.float16(low), out) if (out == top).any() else out
        if dtype == "float64":
            x = (self.random64(n) & _np.uint64((1 << 53) - 1)).astype(_np.float64) * 2.0 ** -53
            out = x * (high - low) + low
        else:
            x = (self.words(n) & _np.uint64((1 << 24) - 1)).astype(_np.float32) * _np.float32(2.0 ** -24)
            out = (x * _np.float32(_np.float32(high) - _np.float32(low)) + _np.float32(low)).astype(dtype)
        top = out.dtype.type(high)
        return _np.where(out == top, out.dtype.type(low), out) if (out == top).any() else out

    def normal(self, n: int, dtype: str, mean: float = 0.0, std: float = 1.0) -> _np.ndarray:
        """``normal_(mean, std)`` on n contiguous elements of ``dtype``."""
        if LIBM_KERNEL[0] is None:
            LIBM_KERNEL[0] = _uses_libm_kernel()
        if n >= 16 and dtype == "float16":
            return self._normal_fill_half(n, mean, std)
        if n >= 16:
            return self._normal_fill(n, dtype, mean, std)
        out = _np.empty(n, dtype=_np.float64)
        for i in range(n):
            out[i] = self._normal_double()
        if std != 1 or mean != 0:  # val * std + mean, fused where the kernel was built with FMA
            out = out * std + mean if LIBM_KERNEL[0] else _fma64(out, std, mean)
        return out.astype(dtype)

    def _normal_double(self) -> float:
        """``at::normal_distribution<double>``: Box-Muller on two float64 uniforms, one kept."""
        if self.next_double_normal is not None:
            value, self.next_double_normal = self.next_double_normal, None
            return value
        u1, u2 = self.uniform(2, "float64")
        r = math.sqrt(-2.0 * math.log1p(-float(u2)))
        theta = 2.0 * math.pi * float(u1)
        self.next_double_normal = r * math.sin(theta)
        return r * math.cos(theta)

    def _normal_fill(self, n: int, dtype: str, mean: float, std: float) -> _np.ndarray:
        data = self.uniform(n, dtype)
        blocks = n // 16
        out = _box_muller16(data[: blocks * 16].reshape(blocks, 16), dtype, mean, std).reshape(-1)
        if n % 16:  # the last 16 are drawn again and replace what stood there
            tail = _box_muller16(self.uniform(16, dtype).reshape(1, 16), dtype, mean, std)
            out = _np.concatenate([out[: n - 16], tail.reshape(-1)])
        return out

    def _normal_fill_half(self, n: int, mean: float, std: float) -> _np.ndarray:
        """float16's ``normal_fill``: float32 Box-Muller block by block (16 uniforms each), then the
        last 16 drawn again when n is not a multiple of 16; rounded to float16."""
        blocks = n // 16
        out = _box_muller16(self.uniform(blocks * 16, "float32").reshape(blocks, 16), "float32", mean, std)
        out = out.reshape(-1).astype(_np.float16)
        if n % 16:
            tail = _box_muller16(self.uniform(16, "float32").reshape(1, 16), "float32", mean, std)
            out = _np.concatenate([out, _np.zeros(n % 16, _np.float16)])
            out[n - 16:] = tail.reshape(-1).astype(_np.float16)
        return out

    def randint(self, n: int, low: int, high: int) -> _np.ndarray:
        """``random_(low, high)`` on n int64 elements: ``word % range + low``."""
        span = high - low
        raw = self.random64(n) if span >= (1 << 28) else self.words(n)
        return ((raw % _np.uint64(span)).astype(_np.int64) + _np.int64(low))

    def randperm(self, n: int) -> _np.ndarray:
        """ATen's ``randperm_cpu``: swap i with i + word % (n - i), for i below n - 1."""
        perm = _np.arange(n, dtype=_np.int64)
        if n < 2:
            return perm
        z = (self.words(n - 1) % _np.arange(n, 1, -1, dtype=_np.uint64)).astype(_np.int64)
        z += _np.arange(n - 1, dtype=_np.int64)
        for i, j in enumerate(z.tolist()):
            perm[i], perm[j] = perm[j], perm[i]
        return perm


def _box_muller16(blocks: _np.ndarray, dtype: str, mean: float, std: float) -> _np.ndarray:
    """``NormalFill16`` on each row of 16 uniforms: rows of 16 normals."""
    u1 = (blocks[:, :8].dtype.type(1) - blocks[:, :8]).reshape(-1)
    u2 = blocks[:, 8:].reshape(-1)
    if dtype != "float64":  # the kernel's mean and std are of its dtype
        mean, std = _np.float32(mean), _np.float32(std)
    if dtype == "float64":
        radius = _np.sqrt(-2.0 * _libm_map(math.log, u1))
        theta = 2.0 * math.pi * u2
        first, second = radius * _np.cos(theta), radius * _np.sin(theta)
        if std != 1 or mean != 0:
            first, second = _fma64(first, std, mean), _fma64(second, std, mean)
    elif LIBM_KERNEL[0]:
        f = _libm()
        theta = (2.0 * math.pi * u2.astype(_np.float64)).astype(_np.float32)
        radius = _np.sqrt(_np.float32(-2) * _libm_map(f.logf, u1, _np.float32))
        first = radius * _libm_map(f.cosf, theta, _np.float32)
        second = radius * _libm_map(f.sinf, theta, _np.float32)
        first, second = fma32(first, std, mean), fma32(second, std, mean)
    else:
        radius = _np.sqrt(_np.float32(-2) * log256(u1))
        sin, cos = sincos256(_np.float32(2.0 * math.pi) * u2)
        first, second = fma32(radius * cos, std, mean), fma32(radius * sin, std, mean)
    return _np.concatenate([first.reshape(-1, 8), second.reshape(-1, 8)], axis=1)


def _fma64(x, std, mean):
    """``std::fma`` in float64 (NumPy has none): the C library's, element by element."""
    fma = _libm().fma
    return _np.fromiter((fma(v, std, mean) for v in _np.asarray(x).tolist()), _np.float64, count=_np.size(x))


def _libm_map(fn, values, dtype=_np.float64):
    return _np.fromiter(map(fn, values.tolist()), dtype=dtype, count=values.size)


# torch picks its float32 normal kernel by CPU: the AVX2 one (avx_mathfun) on x86 with AVX2 or
# AVX-512, the C library's logf/cosf/sinf otherwise (ATEN_CPU_CAPABILITY=default)
LIBM_KERNEL = [None]
_LIBM = [None]


def _libm():
    """The C library's float functions and fma: the ones torch's scalar kernels call."""
    if _LIBM[0] is None:
        import ctypes
        import ctypes.util
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        for name in ("logf", "cosf", "sinf"):
            f = getattr(libm, name)
            f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
        libm.fma.restype, libm.fma.argtypes = ctypes.c_double, [ctypes.c_double] * 3
        _LIBM[0] = libm
    return _LIBM[0]


def _uses_libm_kernel() -> bool:
    import os
    import platform
    forced = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
    if forced == "default" or platform.machine().lower() not in ("x86_64", "amd64"):
        return True
    return not _has_avx2()


def _has_avx2() -> bool:
    """Whether the CPU has AVX2 (torch's AVX2 and AVX-512 kernels need it); assumed where unknown."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return " avx2" in line
    except OSError:
        pass
    return True


def fresh_seed() -> int:
    """A nondeterministic 64-bit seed (torch's default generator starts from one)."""
    import os
    return int.from_bytes(os.urandom(8), "little")


DEFAULT = [None]


def default_generator() -> Generator:
    """The process's generator (made on first use: start-up imports no numpy.random)."""
    if DEFAULT[0] is None:
        DEFAULT[0] = Generator()
    return DEFAULT[0]
