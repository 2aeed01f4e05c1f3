"""Big-integer multiplication through the NTT (Kawamura et al., docs/HARDWARE.md).

import kasoku as ks
ks.bigmul(3**100000, 7**90000)          # == 3**100000 * 7**90000, any size up to 2^31 bits per operand
ks.bigmul_decimal("123", "-4")          # "-492": the seed's own scheme, base-10 digits, up to 32,768 each
"""

from __future__ import annotations

from ._kasoku import _BigMultiplier, bigmul_decimal
from .errors import ParameterError

_MULTIPLIER = _BigMultiplier()  # the tables of the last few sizes, reused by the next products


def bigmul(a: int, b: int, threads: int | None = None) -> int:
    """a * b through kasoku's NTT (32-bit limbs, two 60-bit primes, CRT); `threads` (default 1, at most 2 used):
    one NTT prime per thread."""
    if not isinstance(a, int) or not isinstance(b, int):
        raise ParameterError(f"bigmul multiplies Python ints, got {type(a).__name__} and {type(b).__name__}")
    t = 1 if threads is None else int(threads)
    if t < 1:
        raise ParameterError(f"bigmul: threads must be >= 1, got {t}")
    negative = (a < 0) != (b < 0)
    a, b = abs(a), abs(b)
    raw = _MULTIPLIER.bytes(
        a.to_bytes((a.bit_length() + 7) // 8, "little"), b.to_bytes((b.bit_length() + 7) // 8, "little"), t
    )
    p = int.from_bytes(raw, "little")
    return -p if negative else p


__all__ = ["bigmul", "bigmul_decimal"]
