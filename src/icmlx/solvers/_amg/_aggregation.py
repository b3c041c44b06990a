"""Greedy standard aggregation on the matrix graph (NumPy, setup time only)."""

from typing import Any

import numpy as np

from ..._checks import check_int
from .._convert import as_scipy_csr, positive_int

__all__ = ["standard_aggregation", "aggregation_hierarchy"]


def _csr(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    keep = rows != cols
    r = np.concatenate([rows[keep], cols[keep]])
    c = np.concatenate([cols[keep], rows[keep]])
    key = np.unique(r.astype(np.int64) * n + c)
    r, c = key // n, key % n
    indptr = np.zeros(n + 1, np.int64)
    np.add.at(indptr, r + 1, 1)
    return np.cumsum(indptr), c


def _pattern(rows: Any, cols: Any, n: int | None, where: str) -> tuple[np.ndarray, np.ndarray, int]:
    """``(rows, cols, n)`` from a COO pattern, or from a matrix passed alone as the first argument."""
    if cols is None and n is None:
        coo = as_scipy_csr(rows, name="A").tocoo()
        return coo.row.astype(np.int64), coo.col.astype(np.int64), int(coo.shape[0])
    if cols is None or n is None:
        raise TypeError(f"{where}: pass either a matrix alone ({where}(A)) or the COO pattern "
                        f"({where}(rows, cols, n))")
    check_int(n, "n", where=where, minimum=0)
    rows = np.asarray(rows).astype(np.int64)
    cols = np.asarray(cols).astype(np.int64)
    if rows.shape != cols.shape:
        raise ValueError(f"{where}: rows and cols must have the same length, got {rows.shape} and {cols.shape}")
    if rows.size and (min(rows.min(), cols.min()) < 0 or max(rows.max(), cols.max()) >= n):
        raise ValueError(f"{where}: indices must lie in [0, n) = [0, {n}), got values in "
                         f"[{min(rows.min(), cols.min())}, {max(rows.max(), cols.max())}]")
    return rows, cols, int(n)


def standard_aggregation(rows: Any, cols: Any = None, n: int | None = None) -> np.ndarray:
    """Greedy standard aggregation of the (symmetrised) graph of a sparse matrix.

    Pass 1 makes an aggregate of every node whose neighbours are all free, together with those
    neighbours; pass 2 attaches each remaining node to a neighbouring aggregate; pass 3 groups the
    leftovers with their free neighbours. Purely topological (uses the pattern, not the values), so
    matrices on the same mesh share their aggregates.

    Args:
      rows: COO pattern (NumPy or JAX integer arrays; concrete, not traced), or the square matrix
        itself as ``rows`` (SciPy sparse in any format, BCOO, dense or ``SparseMatrix``) with ``cols`` and
        ``n`` omitted.
      cols: COO pattern (NumPy or JAX integer arrays; concrete, not traced), or the square matrix
        itself as ``rows`` (SciPy sparse in any format, BCOO, dense or ``SparseMatrix``) with ``cols`` and
        ``n`` omitted.
      n: number of nodes.

    Returns:
      ``int32[n]`` aggregate index of each node, in ``[0, n_aggregates)``.

    Raises:
      ValueError: indices outside ``[0, n)``, or a non-square matrix. TypeError: half a pattern.

    References:
      Vaněk, Mandel & Brezina, Computing 56 (1996).

    Examples:
      >>> import numpy as np
      >>> from icmlx.solvers import standard_aggregation
      >>> rows = np.array([0, 1, 1, 2, 2, 3]); cols = np.array([1, 0, 2, 1, 3, 2])
      >>> standard_aggregation(rows, cols, 4)
      array([0, 0, 1, 1], dtype=int32)
    """
    rows, cols, n = _pattern(rows, cols, n, "standard_aggregation")
    indptr, nbr = _csr(rows, cols, n)
    agg = np.full(n, -1, np.int64)
    k = 0
    for i in range(n):  # pass 1 (setup-time NumPy; not traced)
        if agg[i] >= 0:
            continue
        nb = nbr[indptr[i]:indptr[i + 1]]
        if np.all(agg[nb] < 0):
            agg[i] = k
            agg[nb] = k
            k += 1
    for i in np.nonzero(agg < 0)[0]:  # pass 2
        nb = nbr[indptr[i]:indptr[i + 1]]
        owned = agg[nb]
        owned = owned[owned >= 0]
        if owned.size:
            agg[i] = owned[0]
    for i in np.nonzero(agg < 0)[0]:  # pass 3
        if agg[i] >= 0:
            continue
        nb = nbr[indptr[i]:indptr[i + 1]]
        agg[i] = k
        free = nb[agg[nb] < 0]
        agg[free] = k
        k += 1
    return agg.astype(np.int32)


def aggregation_hierarchy(rows: Any, cols: Any = None, n: int | None = None, *, min_size: int = 4,
                          max_levels: int = 12) -> list[np.ndarray]:
    """Repeated standard aggregation: maps from each level to the next coarser one.

    Args:
      rows: COO pattern of the fine matrix (concrete arrays), or the matrix itself as ``rows`` (SciPy
        sparse in any format, BCOO, dense or ``SparseMatrix``) with ``cols`` and ``n`` omitted.
      cols: COO pattern of the fine matrix (concrete arrays), or the matrix itself as ``rows`` (SciPy
        sparse in any format, BCOO, dense or ``SparseMatrix``) with ``cols`` and ``n`` omitted.
      n: number of fine nodes.
      min_size: stop once a level has at most this many nodes (a positive int).
      max_levels: cap on the number of coarsenings (an int >= 0).

    Returns:
      A list ``[agg_1, agg_2, ...]`` where ``agg_l`` maps the nodes of level ``l-1`` (level 0 = fine)
      to those of level ``l``.

    Raises:
      ValueError, TypeError: as in `standard_aggregation`; ``min_size < 1`` or ``max_levels < 0``.

    Examples:
      >>> import numpy as np
      >>> from icmlx.solvers import aggregation_hierarchy
      >>> i = np.arange(99); rows = np.r_[i, i + 1]; cols = np.r_[i + 1, i]
      >>> [int(a.max()) + 1 for a in aggregation_hierarchy(rows, cols, 100)]
      [34, 12, 4]
      >>> import scipy.sparse as sp
      >>> [int(a.max()) + 1 for a in aggregation_hierarchy(sp.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(100, 100)))]
      [34, 12, 4]
    """
    positive_int(min_size, "min_size", "aggregation_hierarchy")
    positive_int(max_levels, "max_levels", "aggregation_hierarchy", minimum=0)
    rows, cols, n = _pattern(rows, cols, n, "aggregation_hierarchy")
    maps = []
    while n > min_size and len(maps) < max_levels:
        agg = standard_aggregation(rows, cols, n)
        nc = int(agg.max()) + 1
        if nc >= n:  # no coarsening possible (e.g. a diagonal matrix)
            break
        maps.append(agg)
        key = np.unique(agg[rows].astype(np.int64) * nc + agg[cols])
        rows, cols, n = key // nc, key % nc, nc
    return maps
