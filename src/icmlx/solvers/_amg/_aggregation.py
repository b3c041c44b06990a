"""Standard aggregation (Vaněk, Mandel & Brezina) of a graph in PyAMG's node order, host side: the one
implementation the smoothed-aggregation set-up and G-RANS's basis levels use.

Pass 1 roots are the lexicographically first maximal independent set of the square of the graph (roots three or
more steps apart, among the nodes with a neighbour), computed in wavefront rounds (`._wavefront`); each root
takes its neighbours. Pass 2 attaches each remaining node to the aggregate of its first neighbour in column order;
pass 3 is the lexicographically first maximal independent set of the graph on the nodes still free, each taking its
free neighbours. The result equals PyAMG's ``standard_aggregation`` node for node.
"""

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Int

from ..._buckets import round_up
from ..._checks import check_int
from .._convert import as_scipy_csr, positive_int
from .._sparse import bucket_size
from ._wavefront import MAX_DEGREE, closed_table, lexicographic_mis

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
    neighbours (in node order); pass 2 attaches each remaining node to the aggregate of its first neighbour
    from pass 1; pass 3 groups the leftovers with their free neighbours; a node without neighbours is an
    aggregate of its own. The aggregation `amg_setup` runs (PyAMG's ``standard_aggregation`` node for node, on
    the graph of every nonzero), here on the pattern alone: matrices on the same mesh share their aggregates.

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
    import scipy.sparse as sp

    rows, cols, n = _pattern(rows, cols, n, "standard_aggregation")
    indptr, nbr = _csr(rows, cols, n)
    agg, num = standard_aggregate(sp.csr_matrix((np.ones(nbr.size), nbr, indptr), shape=(n, n)))
    lone = agg < 0  # (no neighbour: an aggregate of its own, after the others)
    agg[lone] = num + np.arange(int(lone.sum()))
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


def standard_aggregate(S: Any, table: tuple | None = None) -> tuple[np.ndarray, int]:
    """Standard aggregation of the strength graph ``S`` (any SciPy sparse matrix with a symmetric pattern, as
    `._sa_setup.symmetric_strength` makes; diagonal ignored) in PyAMG's node order.

    Nodes without a strong neighbour stay out (``-1``). Returns ``(aggregate of each node, number of
    aggregates)``; aggregates are numbered by their roots, pass-1 roots first. ``table``: the
    `._wavefront.closed_table` of ``S`` when the caller has made it already.

    References:
      Vaněk, Mandel & Brezina, Computing 56 (1996) 179–196; Bell, Olson & Schroder, PyAMG (2023),
      ``standard_aggregation``.
    """
    import scipy.sparse as sp

    S = sp.csr_matrix(S)
    S.sort_indices()
    n = S.shape[0]
    deg = np.diff(S.indptr)
    if not n or deg.max() > MAX_DEGREE:
        return _standard_aggregate_loop(S)
    C, low = closed_table(S.indptr, S.indices) if table is None else table
    roots = np.nonzero(lexicographic_mis(C, low, 2))[0]
    x = np.zeros(n + 1, np.int64)  # 0 free, a > 0 aggregate a − 1, −1 isolated; slot n absorbs the padding
    x[C[roots]] = np.arange(1, roots.size + 1)[:, None]  # (root neighbourhoods are disjoint)
    x[:n][deg == 0] = -1
    x = x[:n]
    nxt = roots.size + 1
    _join_first_aggregated_neighbour(S, x, deg)
    left = np.nonzero(x == 0)[0]
    if left.size:  # pass 3 on the graph of the nodes still free, in node order
        L = S[left][:, left].tocsr()
        L.sort_indices()
        CL, lowL = closed_table(L.indptr, L.indices)
        is_root = lexicographic_mis(CL, lowL, 1)
        lone = CL[:, 1] == left.size  # (no free neighbour: a root of its own, which the MIS leaves out)
        is_root[lone[:-1]] = True
        rid = np.full(left.size + 1, np.iinfo(np.int64).max)
        rid[is_root] = np.arange(nxt, nxt + int(is_root.sum()))
        # a free node joins the lowest root beside it: the first that came by while it was free
        x[left] = rid[CL[:-1]].min(axis=1)
        nxt += int(is_root.sum())
    agg = np.where(x > 0, x - 1, -1).astype(np.int64)
    return agg, nxt - 1


def _neighbour_table(S: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(nbr, edge)`` of a CSR graph padded to `bucket_size` rows: slot 0 is the node itself, then its
    neighbours in column order, padding slots repeat the node; ``edge`` marks the real neighbours."""
    n = S.shape[0]
    deg = np.diff(S.indptr)
    npad = bucket_size(n)
    k = round_up(int(deg.max()) + 1, 4) if n else 4
    nbr = np.repeat(np.arange(npad, dtype=np.int32)[:, None], k, axis=1)
    pos = 1 + np.arange(S.nnz) - np.repeat(S.indptr[:-1], deg)
    nbr[np.repeat(np.arange(n), deg), pos] = S.indices
    return nbr, nbr != np.arange(npad)[:, None]




@functools.partial(jax.jit, static_argnames="first")
def _greedy_pass(nbr: Int[Array, "n k"], edge: Bool[Array, "n k"], order: Int[Array, " m"], count: Int[Array, ""],
                 x: Int[Array, " n"], nxt: Int[Array, ""], first: bool):
    # the sequential passes of standard aggregation, compiled: each step gathers and scatters one row of the
    # neighbour table (slot 0 is the node itself, padding slots repeat it; ``edge`` marks real neighbours), so the
    # loop is O(n k). (The node's own value is read from its slot: a separate scalar read of the carried array
    # made XLA copy it every step.)
    def body(t, c):
        x, nxt = c
        i = order[t]
        row, others = nbr[i], edge[i]
        vals = x[row]
        free = vals[0] == 0
        if first:  # pass 1: a free node whose neighbours are all free roots an aggregate of them
            has = jnp.any(others)
            make = free & has & ~jnp.any(others & (vals != 0))
            new = jnp.where(make, nxt, vals)
            new = new.at[0].set(jnp.where(free & ~has, -1, new[0]))  # isolated: stays out
        else:  # pass 3: a node still free roots an aggregate of its free neighbours
            make = free
            new = jnp.where(make & (vals == 0), nxt, vals)
        return x.at[row].set(new), nxt + make.astype(nxt.dtype)

    return jax.lax.fori_loop(0, count, body, (x, nxt))


def _standard_aggregate_loop(S: Any) -> tuple[np.ndarray, int]:
    """`standard_aggregate` node by node (the graphs with a node past `._wavefront.MAX_DEGREE`).

    Pass 1 (sequential, compiled): a node whose strong neighbours are all free makes an aggregate with them.
    Pass 2 (vectorised): each remaining node joins the aggregate of its first strong neighbour from pass 1.
    Pass 3 (sequential, compiled, over the few nodes left): a node makes an aggregate with its free neighbours.
    Nodes without a strong neighbour stay out (``-1``). Returns ``(aggregate of each node, number of aggregates)``.
    """
    import scipy.sparse as sp

    S = sp.csr_matrix(S)
    S.sort_indices()
    n = S.shape[0]
    deg = np.diff(S.indptr)
    npad = bucket_size(n)
    nbr, edge = _neighbour_table(S)
    nbr_j, edge_j = jnp.asarray(nbr), jnp.asarray(edge)
    order = jnp.arange(npad, dtype=jnp.int32)
    x, nxt = _greedy_pass(nbr_j, edge_j, order, jnp.int32(n), jnp.zeros(npad, jnp.int32), jnp.int32(1), True)
    x = np.asarray(x)[:n].copy()
    nxt = int(nxt)
    _join_first_aggregated_neighbour(S, x, deg)
    left = np.nonzero(x == 0)[0]
    if left.size:
        xp = np.zeros(npad, np.int32)
        xp[:n] = x
        ordl = np.zeros(npad, np.int32)
        ordl[: left.size] = left
        xj, nxt = _greedy_pass(nbr_j, edge_j, jnp.asarray(ordl), jnp.int32(left.size), jnp.asarray(xp), jnp.int32(nxt),
                               False)
        x = np.asarray(xj)[:n].copy()
        nxt = int(nxt)
    agg = np.where(x > 0, x - 1, -1).astype(np.int64)
    return agg, nxt - 1


def _join_first_aggregated_neighbour(S: Any, x: np.ndarray, deg: np.ndarray) -> None:
    """Pass 2 of standard aggregation, in place on ``x`` (0 free, ``a > 0`` aggregate ``a − 1``): each free node
    joins the aggregate of its first neighbour (in column order) that holds a pass-1 aggregate."""
    free = np.nonzero(x == 0)[0]
    if free.size:
        hit = x[S.indices] > 0
        posn = np.where(hit, np.arange(S.nnz), S.nnz)
        firstpos = np.full(x.size, S.nnz)
        nz = deg > 0
        firstpos[nz] = np.minimum.reduceat(posn, S.indptr[:-1][nz])
        take = free[firstpos[free] < S.nnz]
        x[take] = x[S.indices[firstpos[take]]]
