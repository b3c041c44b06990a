"""Padded sizes: the one rule by which icmlx rounds a size up so that similar sizes share one compiled program.

XLA compiles one program per array shape. A size that varies from call to call (a test count, a sample count, a
matrix's nonzeros) is therefore padded to a *bucket*, the smallest rung at or above it on a fixed ladder, and the
padding is masked. Every subpackage takes its buckets from `size_bucket`; what differs between callers is only
the ladder's parameters, each chosen where it is used for the reason given there:

* ``growth=2`` (a power of two above ``minimum``): a size up to twice as large reuses the program, at most half
  the work is padding.
* ``growth=4``: half as many programs again, for sizes that change a lot between calls (batches of CI tests,
  sample axes); the padding costs memory, not work, where the loops run over the true size.
* ``steps=4`` (rungs at 1, 1.25, 1.5 and 1.75 times a power of two): padding wastes at most 25%, for arrays whose
  padded entries cost work on every iteration (a sparse matrix's nonzeros in a Krylov loop).
* ``maximum``: a cap (a memory budget); sizes above it are split by the caller.

`round_up` is the arithmetic ladder (multiples of a width) for small dimensions such as a padded variable count.
"""

from __future__ import annotations

import operator
from typing import SupportsIndex

__all__ = ["round_up", "size_bucket"]


def size_bucket(n: SupportsIndex, *, minimum: SupportsIndex = 1, growth: int = 2, steps: int = 1,
                maximum: SupportsIndex | None = None) -> int:
    """The smallest rung ``>= n`` of the ladder ``minimum * growth^k`` (or its ``steps`` rungs per octave), capped.

    With ``steps = 1`` the rungs are $b_k = \\text{minimum}\\cdot\\text{growth}^k$, $k = 0, 1, \\dots$ With
    ``steps = s > 1`` (``growth`` must be 2) the rungs above ``minimum`` are
    $\\lfloor 2^{e-1} (s + j) / s \\rfloor$, $j = 0, \\dots, s$, with $2^{e-1} < n \\le 2^e$: ``s`` evenly spaced
    rungs per octave, so the padding is at most $1/s$ of the bucket.

    Args:
      n: the size (a non-negative Python or NumPy int).
      minimum: the smallest bucket (``>= 1``).
      growth: the ladder's ratio (``>= 2``).
      steps: rungs per octave (``1``, or ``> 1`` with ``growth = 2``).
      maximum: the largest bucket (``None``: no cap); the result is ``min(bucket, maximum)``, which may be
        below ``n``: the caller splits the work into pieces of that size.

    Returns:
      The bucket, a Python int.

    Examples:
      >>> size_bucket(1000), size_bucket(1000, minimum=1024), size_bucket(100, minimum=64, growth=4)
      (1024, 1024, 256)
      >>> size_bucket(1100, minimum=64, steps=4), size_bucket(5000, minimum=64, growth=4, maximum=2048)
      (1280, 2048)
    """
    n, minimum = operator.index(n), operator.index(minimum)
    maximum = None if maximum is None else operator.index(maximum)
    if steps > 1 and growth != 2:
        raise ValueError(f"size_bucket: rungs per octave need growth=2, got {growth=}, {steps=}")
    if steps > 1:
        if n <= minimum:
            b = minimum
        else:
            half = 1 << (n - 1).bit_length() - 1  # 2^(e-1) < n <= 2^e
            b = next(half * frac // steps for frac in range(steps, 2 * steps + 1) if half * frac // steps >= n)
    else:
        b = minimum
        while b < n and (maximum is None or b < maximum):
            b *= growth
    return b if maximum is None else min(b, maximum)


def round_up(n: SupportsIndex, multiple: int, *, minimum: int | None = None) -> int:
    """``n`` rounded up to a multiple of ``multiple`` (at least ``minimum``, default ``multiple``).

    Examples:
      >>> round_up(33, 16), round_up(0, 16), round_up(5, 4, minimum=16)
      (48, 16, 16)
    """
    return max(multiple if minimum is None else minimum, -(-operator.index(n) // multiple) * multiple)
