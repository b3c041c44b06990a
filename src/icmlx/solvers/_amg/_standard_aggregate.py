"""Standard aggregation (Vaněk, Mandel & Brezina) of a strength graph in PyAMG's node order, host side.

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
from .._sparse import bucket_size
from ._wavefront import MAX_DEGREE, closed_table, lexicographic_mis

__all__: list[str] = []


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
