"""Streaming over intervals: computations that hold (intervals x something) run over chunks of rows, their sums
accumulated, so that peak memory is set by a chunk size instead of by the size of the data.

`chunk_rows` turns a per-row cost in bytes into a number of rows per chunk from a memory budget
(`icmlx._memory.chunk_budget`); `chunked` runs a function over windows of consecutive rows in a ``lax.scan``
and adds up what it returns. Both work on concrete and traced arrays alike: the chunking depends on shapes only,
so the same program runs eagerly, under the caller's ``jit`` and under ``vmap``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_int
from .._memory import chunk_budget

__all__ = ["check_chunk_size", "chunk_rows", "chunked"]


def check_chunk_size(chunk_size, fn: str) -> int | None:
    """``None`` (choose from the memory budget) or a positive int, else an error naming ``chunk_size``."""
    return None if chunk_size is None else check_int(chunk_size, "chunk_size", where=fn, minimum=1)


def chunk_rows(n: int, bytes_per_row: int | float, chunk_size: int | None = None, *, multiple: int = 1) -> int:
    """Rows per chunk: ``chunk_size`` if given, else the largest power of two whose rows fit the budget.

    The result is at most ``n`` (one chunk holds everything when it fits), at least ``multiple`` and, when it is
    below ``n``, a multiple of ``multiple`` (the devices a chunk's rows are sharded over).

    Examples:
      >>> chunk_rows(10, 1.0), chunk_rows(10**6, 1e6, 100), chunk_rows(10**6, 1e6, 100, multiple=8)
      (10, 100, 104)
    """
    n = int(n)
    if chunk_size is None:
        rows = max(1, int(chunk_budget() // max(float(bytes_per_row), 1.0)))
        rows = 1 << (rows.bit_length() - 1)  # a power of two: few distinct programs across machines
    else:
        rows = int(chunk_size)
    if rows >= n:
        return max(n, 1)
    return max(multiple, -(-rows // multiple) * multiple)


def _pad_rows(a, front: int, total: int):
    """``a`` along axis 0 with ``front`` rows before and edge copies up to ``total`` rows (finite, harmless)."""
    n = a.shape[0]
    xp = np if isinstance(a, np.ndarray) else jnp
    widths = [(front, total - n - front)] + [(0, 0)] * (a.ndim - 1)
    return xp.pad(a, widths, mode="edge")


def chunked(fn, arrays: tuple, n: int, chunk: int, *, front: int = 0, back: int = 0, combine=jnp.add,
            identity: float = 0.0):
    """``fn`` over windows of ``chunk`` consecutive rows of ``arrays``, its sums added up (or combined by
    ``combine``, whose identity is ``identity``: ``jnp.logaddexp`` and ``-inf`` for sums of exponentials).

    Window ``c`` holds rows ``c * chunk - front`` to ``(c + 1) * chunk + back`` (exclusive) of every array in
    ``arrays`` (each with ``n`` rows along axis 0); rows outside ``[0, n)`` are edge copies. ``fn(window, valid)``
    gets the window (a tuple like ``arrays``) and ``valid`` (a bool ``(front + chunk + back,)``: the row is one of
    the ``n``), and returns ``(sums, rows)``: ``sums`` a pytree added over the windows, ``rows`` a pytree of
    per-row outputs for the window's ``chunk`` own rows (leading axis ``chunk``), or ``None``.

    Returns ``(sums, rows)`` with ``rows`` concatenated over the windows and cut to ``n`` rows.
    """
    n_chunks = max(1, -(-n // chunk))
    total = n_chunks * chunk + front + back
    if front == 0 and back == 0 and n_chunks * chunk == n:
        padded = arrays  # the windows tile the data: no copy
    else:
        padded = tuple(_pad_rows(a, front, total) for a in arrays)
    width = chunk + front + back
    offsets = np.arange(width) - front

    def body(acc, c):
        start = c * chunk
        window = tuple(jax.lax.dynamic_slice_in_dim(a, start, width) for a in padded)
        idx = start + offsets
        sums, rows = fn(window, (idx >= 0) & (idx < n))
        acc = sums if acc is None else jax.tree.map(combine, acc, sums)
        return acc, rows

    if n_chunks == 1:
        sums, rows = body(None, 0)
        rows = jax.tree.map(lambda r: r[None], rows)
    else:
        first = jax.eval_shape(lambda: body(None, 0)[0])
        zero = jax.tree.map(lambda s: jnp.full(s.shape, identity, s.dtype), first)
        sums, rows = jax.lax.scan(lambda acc, c: body(acc, c), zero, jnp.arange(n_chunks))
    rows = jax.tree.map(lambda r: r.reshape((n_chunks * chunk,) + r.shape[2:])[:n], rows)
    return sums, rows
