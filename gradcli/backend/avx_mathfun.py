"""The float32 ``log`` and ``sincos`` of torch's AVX2 normal kernel, bit for bit, on NumPy arrays.

torch's ``randn`` on 16 or more float32 elements runs Box-Muller through ATen's
``native/cpu/avx_mathfun.h`` (cephes polynomials on 8 lanes) on any AVX2 or AVX-512 CPU, not
through the C library: NumPy's or libm's ``log``/``cos``/``sin`` differ from it in the last bit
for a third of the values. This is the same sequence of float32 operations, with the fused
multiply-adds the compiler forms from it (a product used only by one addition is fused: the
polynomial steps, the argument reduction, the final terms), each one emulated in float64 (the
product of two float32 values is exact there; the sum rounds once to float64, then to float32).
"""

from __future__ import annotations

import numpy as _np

_f32 = _np.float32
_LOG_P = tuple(_f32(v) for v in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                                  1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                                  3.3333331174E-1))
_DP = tuple(_f32(v) for v in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8))


def fma32(a, b, c):
    """``a * b + c`` with one rounding to float32 (via float64)."""
    return (_np.asarray(a, _np.float64) * _np.asarray(b, _np.float64) + _np.asarray(c, _np.float64)).astype(_f32)


def log256(x: _np.ndarray) -> _np.ndarray:
    """``log256_ps`` for positive float32 ``x``."""
    x = _np.maximum(x, _np.array(0x00800000, _np.uint32).view(_f32))
    bits = x.view(_np.uint32)
    e = ((bits >> 23).astype(_np.int32) - 127).astype(_f32) + _f32(1)
    x = ((bits & _np.uint32(0x807FFFFF)) | _np.uint32(0x3F000000)).view(_f32)
    below = x < _f32(0.707106781186547524)
    tmp = _np.where(below, x, _f32(0))
    x = x - _f32(1)
    e = e - below.astype(_f32)
    x = x + tmp
    z = x * x
    y = _np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = fma32(y, x, p)
    y = fma32(y * x, z, e * _f32(-2.12194440e-4))
    y = fma32(-z, _f32(0.5), y)
    return fma32(e, _f32(0.693359375), x + y)


def sincos256(x: _np.ndarray) -> tuple[_np.ndarray, _np.ndarray]:
    """``sincos256_ps`` for non-negative float32 ``x`` (Box-Muller's angle): (sin, cos)."""
    j = _np.trunc(x * _f32(1.27323954473516)).astype(_np.int32)
    j = (j + 1) & ~1
    y = j.astype(_f32)
    for dp in _DP:
        x = fma32(y, dp, x)
    z = x * x
    yc = fma32(_f32(2.443315711809948E-005), z, _f32(-1.388731625493765E-003))
    yc = fma32(yc, z, _f32(4.166664568298827E-002))
    yc = fma32(yc * z, z, -(z * _f32(0.5))) + _f32(1)
    ys = fma32(_f32(-1.9515295891E-4), z, _f32(8.3321608736E-3))
    ys = fma32(ys, z, _f32(-1.6666654611E-1))
    ys = fma32(ys * z, x, x)
    first = (j & 2) == 0
    s = _np.where(first, ys, yc)
    c = _np.where(first, yc, ys)
    return _np.where((j & 4) != 0, -s, s), _np.where(((j - 2) & 4) == 0, -c, c)
