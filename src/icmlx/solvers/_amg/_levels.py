"""The host (NumPy/SciPy) half of the smoothed-aggregation set-up: strength of connection, aggregation of the
strength graph, the tentative prolongator fitted to near-nullspace candidates, Jacobi prolongator smoothing on
``A`` itself, Galerkin products and the colouring a parallel Gauss–Seidel sweep needs.

Everything here is vectorised over nodes (no Python loop over rows or aggregates); the loops that remain run
over levels, candidates (``k ≤ 6``), Luby rounds and the wavefront rounds of aggregation and colouring
(`._wavefront`).
"""

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..._buckets import size_bucket
from ._aggregation import standard_aggregate
from ._hierarchy import _luby_priorities, _nbr_max
from ._relaxation import power_bound
from ._wavefront import MAX_DEGREE, closed_table, greedy_colors

__all__: list[str] = []


def node_matrix(A: Any, node_of: np.ndarray, num_nodes: int) -> Any:
    r"""Amalgamate ``A`` to its node graph: ``N_IJ = ‖A_{IJ}‖_F`` over the dofs of nodes ``I`` and ``J``."""
    import scipy.sparse as sp

    if num_nodes == A.shape[0] and np.array_equal(node_of, np.arange(num_nodes)):
        N = abs(sp.csr_matrix(A))  # one dof per node: the norms are the magnitudes (no COO round trip)
        N.sum_duplicates()
        return N
    coo = A.tocoo()
    data = np.abs(coo.data) if np.iscomplexobj(coo.data) else coo.data  # (|a_ij|: the strength of a complex A)
    N = sp.csr_matrix((data ** 2, (node_of[coo.row], node_of[coo.col])), shape=(num_nodes, num_nodes))
    N.sum_duplicates()
    N.data = np.sqrt(N.data)
    return N


def symmetric_pattern(M: Any, keep: Any) -> Any:
    """The symmetrised off-diagonal pattern ``{(i, j): i ≠ j, keep(M)_ij or keep(M)_ji}`` of a square CSR
    matrix as a CSR matrix of ones with sorted columns; ``keep(data, rows, cols) -> bool[nnz]``.

    When the stored pattern of ``M`` is symmetric (the usual case) the transpose is read entry for entry against
    ``M`` (no sparse sum, no COO rebuild).
    """
    import scipy.sparse as sp

    M = sp.csr_matrix(M)
    M.sum_duplicates()  # (canonical: sorted columns, no repeats)
    n = M.shape[0]
    T = M.T.tocsr()  # (canonical too)
    rows = np.repeat(np.arange(n), np.diff(M.indptr))
    if np.array_equal(M.indptr, T.indptr) and np.array_equal(M.indices, T.indices):
        m = (keep(M.data, rows, M.indices) | keep(T.data, rows, T.indices)) & (M.indices != rows)
        indptr = np.zeros(n + 1, M.indptr.dtype)
        np.cumsum(np.bincount(rows[m], minlength=n), out=indptr[1:])
        return sp.csr_matrix((np.ones(int(indptr[-1])), M.indices[m], indptr), shape=M.shape)
    m = keep(M.data, rows, M.indices) & (M.indices != rows)
    S = sp.csr_matrix((np.ones(int(m.sum())), (rows[m], M.indices[m])), shape=M.shape)
    S = ((S + S.T) > 0).astype(np.float64).tocsr()
    S.sort_indices()
    return S


def symmetric_strength(N: Any, theta: float) -> Any:
    r"""Strong connections of the node matrix: $|n_{ij}| \ge \theta \sqrt{|n_{ii} n_{jj}|}$ (off-diagonal),
    symmetrised; the pattern that aggregation reads."""
    d = np.abs(N.diagonal())

    def keep(data, rows, cols):
        strong = data != 0
        if theta > 0:
            strong &= np.abs(data) >= theta * np.sqrt(d[rows] * d[cols])
        return strong

    return symmetric_pattern(N, keep)


def fit_candidates(agg_of_dof: np.ndarray, B: np.ndarray, num_aggs: int, *, rtol: float = 1e-10):
    r"""The tentative prolongator ``T`` and coarse candidates ``B_c`` with ``B = T B_c`` (per-aggregate thin QR).

    Modified Gram–Schmidt over the ``k`` columns of ``B`` restricted to each aggregate, done for all aggregates at
    once with segment sums (twice, for orthogonality in floating point); a column whose remainder is below
    ``rtol`` of its norm on the aggregate is dropped (an aggregate with fewer dofs than candidates).

    Returns:
      ``(T, Bc, coarse_node)``: ``T`` a CSR ``n × n_c`` with orthonormal columns per aggregate, ``Bc``
      ``(n_c, k)``, and the aggregate (coarse node) of each coarse dof.
    """
    import scipy.sparse as sp

    n, k = B.shape
    inside = agg_of_dof >= 0
    seg = np.where(inside, agg_of_dof, num_aggs)
    cplx = np.iscomplexobj(B)

    def segsum(v):
        if np.iscomplexobj(v):  # (bincount takes real weights: the two parts apart)
            return segsum(v.real) + 1j * segsum(v.imag)
        return np.bincount(seg, weights=v, minlength=num_aggs + 1)[:num_aggs]

    def dot(u, v):  # uᴴ v per aggregate (u v for real candidates)
        return segsum(np.conj(u) * v) if cplx else segsum(u * v)

    Q = np.zeros((n, k), B.dtype)
    R = np.zeros((num_aggs, k, k), B.dtype)
    ok = np.zeros((num_aggs, k), bool)
    for j in range(k):
        v = np.where(inside, B[:, j], 0.0)
        ref = np.sqrt(dot(v, v).real)
        for _ in range(2):  # MGS, repeated once ("twice is enough")
            for i in range(j):
                c = dot(Q[:, i], v)
                R[:, i, j] += c
                v = v - np.append(c, 0.0)[seg] * Q[:, i]
        nrm = np.sqrt(dot(v, v).real)
        good = (nrm > rtol * ref) & (nrm > 0)
        ok[:, j] = good
        R[:, j, j] = np.where(good, nrm, 0.0)
        scale = np.append(np.where(good, 1.0 / np.where(good, nrm, 1.0), 0.0), 0.0)
        Q[:, j] = v * scale[seg]
    col = np.full((num_aggs, k), -1, np.int64)
    col[ok] = np.arange(int(ok.sum()))
    nc = int(ok.sum())
    rows = np.repeat(np.arange(n), k)
    cols = np.concatenate([col, np.full((1, k), -1)])[seg].ravel()
    vals = Q.ravel()
    keep = cols >= 0
    T = sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(n, nc))
    T.eliminate_zeros()
    Bc = R[ok]  # row j of R_a for each kept (a, j)
    coarse_node = np.nonzero(ok)[0]
    return T, Bc, coarse_node


@partial(jax.jit, static_argnames=("n", "num_steps"))
def _coo_power_bound(data, rows, cols, d, start, *, n: int, num_steps: int):
    return power_bound(lambda v: jax.ops.segment_sum(data * v[cols], rows, num_segments=n), d,
                       jax.ops.segment_sum(jnp.abs(data), rows, num_segments=n), start, num_steps)


def rho_dinv_a(A: Any, d: np.ndarray, iters: int = 20) -> tuple[float, float]:
    """``(upper / 1.1, safe upper bound)`` of ``ρ(D⁻¹A)``: `._relaxation.power_bound` (``1.1 ×`` a Rayleigh
    quotient after ``iters`` power steps from the level's fixed pseudo-random start, capped by Gershgorin: what a
    Chebyshev smoother needs), the same function and start the JAX numeric set-up runs, so both set-ups
    give a level the same bound. Sizes are padded to `size_bucket` rungs so the levels share compiled programs
    (padded entries are zero, padded diagonal entries one)."""
    if np.iscomplexobj(A.data):
        # a complex A: the Gershgorin bound max_i Σ_j |a_ij| / |a_ii| (its spectrum is not on the real line, where
        # the Rayleigh quotient of the power steps would bound it)
        row = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        upper = float(np.max(np.bincount(row, weights=np.abs(A.data), minlength=A.shape[0]) / np.abs(d)))
        return upper, upper
    n, nnz = A.shape[0], A.nnz
    n_pad, nnz_pad = size_bucket(n, minimum=64, steps=4), size_bucket(nnz, minimum=256, steps=4)
    row = np.repeat(np.arange(n, dtype=np.int32), np.diff(A.indptr))
    data = np.zeros(nnz_pad, A.data.dtype)
    data[:nnz] = A.data
    rows = np.full(nnz_pad, n_pad - 1, np.int32)
    rows[:nnz] = row
    cols = np.full(nnz_pad, n_pad - 1, np.int32)
    cols[:nnz] = A.indices
    dd = np.ones(n_pad, np.asarray(d).dtype)
    dd[:n] = d
    start = np.zeros(n_pad)
    start[:n] = np.random.default_rng(0).standard_normal(n)
    dtype = jnp.result_type(float)
    _, upper = _coo_power_bound(jnp.asarray(data, dtype), jnp.asarray(rows), jnp.asarray(cols),
                                jnp.asarray(dd, dtype), jnp.asarray(start, dtype), n=n_pad, num_steps=iters)
    # the estimate is upper / 1.1 (the capped one when Gershgorin binds), as the numeric set-up's ω = 4 / (3 ρ)
    return float(upper) / 1.1, float(upper)


def multicolor(A: Any, table: tuple | None = None) -> np.ndarray:
    """A colouring of the (symmetrised) graph of ``A`` so that the rows of one colour relax at once (a parallel
    Gauss–Seidel): the sequential greedy colouring in node order (two colours for a 5-point stencil, four for a
    9-point one), computed in wavefront rounds (`._wavefront`), when every degree is at most
    `._wavefront.MAX_DEGREE`; else Luby independent sets, one per colour.

    ``table``: the `._wavefront.closed_table` of that graph when the caller has it already (the strength
    graph of a scalar problem at ``theta = 0`` is the same graph)."""
    if table is not None and table[0].shape[1] <= MAX_DEGREE + 2:
        return greedy_colors(*table)
    G = symmetric_pattern(A, lambda data, rows, cols: data != 0)
    n = G.shape[0]
    deg = np.diff(G.indptr)
    if n and deg.max() <= MAX_DEGREE:
        return greedy_colors(*closed_table(G.indptr, G.indices))
    prio = _luby_priorities(n)
    color = np.full(n, -1, np.int64)
    c = 0
    while np.any(color < 0):
        left = color < 0
        p = np.where(left, prio, np.int32(-1))
        # a node is in the set when its priority beats every uncoloured neighbour's (then no two are adjacent)
        for _ in range(64):
            und = left & (color < 0)
            m = _nbr_max(G.indptr, G.indices, np.where(und, p, -1))
            new = und & (p == m)
            if not new.any():
                break
            color[new] = c
            # neighbours of the new members sit this colour out
            blocked = _nbr_max(G.indptr, G.indices, new.astype(np.int8)) > 0
            left = left & ~blocked & (color < 0)
            p = np.where(left, p, -1)
        c += 1
    return color


def smoothed_prolongator(A: Any, T: Any, d: np.ndarray, rho: float) -> Any:
    """``P = (I − ω D⁻¹A) T`` with ``ω = 4 / (3 ρ(D⁻¹A))`` (Vaněk, Mandel & Brezina), on ``A`` itself."""
    AT = (A @ T).tocsr()
    AT.data *= np.repeat((4.0 / (3.0 * rho)) / d, np.diff(AT.indptr))  # ω D⁻¹ (A T), rows scaled in place
    P = (T - AT).tocsr()
    P.eliminate_zeros()
    return P


def improve_candidates(A: Any, B: np.ndarray, d: np.ndarray, rho: float, num_steps: int) -> np.ndarray:
    """``num_steps`` damped-Jacobi sweeps on ``A B = 0`` (PyAMG relaxes its candidates likewise): the candidates
    then respect the boundary conditions that ``A`` holds."""
    w = (4.0 / (3.0 * rho)) / d
    for _ in range(num_steps):
        B = B - w[:, None] * (A @ B)
    return B


def _symmetrised(M: Any) -> Any:
    """``(M + Mᵀ) / 2`` of a canonical CSR matrix (``(M + Mᴴ) / 2`` for a complex one); when the stored pattern is
    symmetric (a Galerkin product of a symmetric operator), the transpose's values are averaged in place of a
    sparse sum."""
    T = (M.conj().T if np.iscomplexobj(M.data) else M.T).tocsr()  # (canonical: sorted columns)
    if np.array_equal(M.indptr, T.indptr) and np.array_equal(M.indices, T.indices):
        M.data = (M.data + T.data) * 0.5
        return M
    S = ((M + T) * 0.5).tocsr()
    S.sum_duplicates()
    return S


def sa_levels(A: Any, *, B: np.ndarray, node_of: np.ndarray, strength: Any, max_coarse: int, max_levels: int,
              improve_steps: int, symmetric: bool, record: list | None = None, keep_tables: bool = True):
    """The SA levels on the host: ``[(A_ℓ, P_ℓ, ρ_ℓ upper bound, d_ℓ, P_ℓᵀ, graph table)]`` and the coarsest
    ``A_L``; the graph table is the `._wavefront.closed_table` of the graph of ``A_ℓ`` when the strength graph
    is that graph (else ``None``), for `multicolor`; ``keep_tables=False`` keeps ``None`` there (a relaxation
    without a colouring: the tables, an ``int64`` row per node, are then dropped as soon as a level is
    aggregated). ``strength``: an ``AbstractStrength`` (its
    ``strong_graph`` reads the level's candidates before the finest level's improvement, as PyAMG's evolution
    measure does).

    With a list as ``record``, each level appends the symbolic facts a numeric re-set-up reuses:
    ``dict(agg_of_dof, num_aggs, coarse_node, Bc)`` (the aggregate of each dof, ``-1`` outside every aggregate;
    their number; the aggregate of each coarse dof; the coarse candidates).
    """
    levels = []
    cur = A
    num_nodes = int(node_of.max()) + 1 if node_of.size else 0
    while cur.shape[0] > max_coarse and len(levels) < max_levels - 1:
        d = cur.diagonal()
        if np.any(d == 0):
            break  # (only reachable for the caller's envelope fallback; the fine level is checked up front)
        rho, upper = rho_dinv_a(cur, d)
        S = strength.strong_graph(cur, B=B, node_of=node_of, num_nodes=num_nodes, rho=rho)
        if not levels and improve_steps:
            B = improve_candidates(cur, B, d, rho, improve_steps)
        # (a node past the wavefront's degree cap: the aggregation and the colouring take their fallbacks)
        fits = S.shape[0] and int(np.diff(S.indptr).max()) <= MAX_DEGREE
        table = closed_table(S.indptr, S.indices) if fits else None
        agg_node, num_aggs = standard_aggregate(S, table=table)
        if num_aggs == 0:
            break
        agg_of_dof = agg_node[node_of]
        T, Bc, coarse_node = fit_candidates(agg_of_dof, B, num_aggs)
        if T.shape[1] == 0 or T.shape[1] >= cur.shape[0]:
            break
        if record is not None:
            record.append(dict(agg_of_dof=agg_of_dof, num_aggs=num_aggs, coarse_node=coarse_node, Bc=Bc))
        P = smoothed_prolongator(cur, T, d, rho)
        # (once: the Galerkin product and the restriction both use it; Pᴴ for a complex A)
        R = (P.conj().T if np.iscomplexobj(P.data) else P.T).tocsr()
        nxt = (R @ (cur @ P)).tocsr()
        nxt.sum_duplicates()
        if symmetric:
            nxt = _symmetrised(nxt)
        # a scalar problem at theta = 0: the strength graph is the graph of A, which the colouring reads too
        same = strength.is_graph_of_a and num_nodes == cur.shape[0] and np.array_equal(node_of, np.arange(num_nodes))
        levels.append((cur, P, upper, d, R, table if same and keep_tables else None))
        del table
        cur, B, node_of, num_nodes = nxt, Bc, coarse_node, num_aggs
    return levels, cur
