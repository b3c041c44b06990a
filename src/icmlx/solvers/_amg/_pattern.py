"""The symbolic half of a reusable smoothed-aggregation set-up (host, NumPy/SciPy): the host levels of a first
matrix with their aggregates, and every index array the jitted numeric set-up (``_sa_numeric``) needs to
recompute the hierarchy's values for another matrix on the same sparsity pattern.

Per level the record holds the structural patterns (stored zeros kept, so a value that vanishes for one matrix
keeps its slot) of ``A_ℓ``, ``T_ℓ``, ``P_ℓ = (I − ωD⁻¹A_ℓ)T_ℓ`` and ``A_{ℓ+1} = P_ℓᵀA_ℓP_ℓ`` as COO index
arrays, the (entry, entry) → entry pair lists of the two sparse products, and the ELL / colour-block slots the
cycle stores its values in. Everything is vectorised over entries; the loop runs over levels.
"""

from typing import Any

import numpy as np

from ..._buckets import round_up
from .._sparse import bucket_size
from ._hierarchy import _ell_width
from ._levels import multicolor, sa_levels

__all__: list[str] = []

NUM_POWER_STEPS = 20  # as rho_dinv_a's host estimate


def structural(M: Any) -> Any:
    """``M`` as a sorted CSR matrix whose pattern keeps its stored zeros (duplicates summed)."""
    import scipy.sparse as sp

    M = sp.csr_matrix(M, dtype=np.float64, copy=True)
    M.sum_duplicates()
    M.sort_indices()
    return M


def coo_of(M: Any) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of each stored entry of a sorted CSR matrix, in storage order."""
    rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
    return rows, M.indices.astype(np.int64)


def positions(rows: np.ndarray, cols: np.ndarray, num_cols: int, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Storage positions of the entries ``(r, c)`` in a sorted CSR pattern ``(rows, cols)``; -1 where absent."""
    keys = rows * num_cols + cols
    q = np.asarray(r, np.int64) * num_cols + np.asarray(c, np.int64)
    if keys.size == 0:
        return np.full(q.shape, -1)
    pos = np.minimum(np.searchsorted(keys, q), keys.size - 1)
    return np.where(keys[pos] == q, pos, -1)


def product_pairs(arows, acols, brow_ptr, bcols, num_cols: int, extra_keys: np.ndarray | None = None):
    """Pairs of ``C = A B`` for sorted CSR patterns: ``(ia, ib, target)`` with ``C[target] += A[ia] · B[ib]``,
    and the pattern ``(crows, ccols)`` of ``C`` (together with ``extra_keys``, ``row · num_cols + col``)."""
    cnt = np.diff(brow_ptr)[acols]
    ia = np.repeat(np.arange(acols.size), cnt)
    off = np.arange(ia.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    ib = brow_ptr[acols[ia]] + off
    keys = arows[ia] * num_cols + bcols[ib]
    allk = keys if extra_keys is None else np.concatenate([keys, extra_keys])
    ukeys = np.unique(allk)
    target = np.searchsorted(ukeys, keys)
    return ia, ib, target, ukeys // num_cols, ukeys % num_cols


def ell_slots(rows: np.ndarray, num_rows: int) -> tuple[np.ndarray, int]:
    """The slot of each entry of a row-sorted pattern in a padded ELL layout, and the layout's width."""
    cnt = np.bincount(rows, minlength=num_rows)
    start = np.concatenate([[0], np.cumsum(cnt)[:-1]])
    slot = np.arange(rows.size) - start[rows]
    return slot, _ell_width(int(cnt.max()) if cnt.size else 1)


def transposed_slots(rows: np.ndarray, cols: np.ndarray, num_cols: int) -> tuple[np.ndarray, int]:
    """The ELL slot of each entry of ``M`` in the rows of ``Mᵀ`` (``Mᵀ`` rows sorted by ``M``'s row)."""
    order = np.lexsort((rows, cols))
    cnt = np.bincount(cols, minlength=num_cols)
    start = np.concatenate([[0], np.cumsum(cnt)[:-1]])
    slot = np.empty(rows.size, np.int64)
    slot[order] = np.arange(rows.size) - start[cols[order]]
    return slot, _ell_width(int(cnt.max()) if cnt.size else 1)


def color_layout(rows: np.ndarray, cols: np.ndarray, n: int):
    """Colour-block slots of a pattern for the multicolour Gauss–Seidel sweep (``ColorBlocks``' layout)."""
    import scipy.sparse as sp

    G = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    color = multicolor(G)
    nc = int(color.max()) + 1 if n else 1
    counts = np.bincount(color, minlength=nc)
    m = round_up(int(counts.max()), 8)
    order = np.argsort(color, kind="stable")
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    where = np.empty(n, np.int64)
    where[order] = np.arange(n) - start[color[order]]
    crow = np.zeros((nc, m), np.int64)
    crow[color[order], where[order]] = order
    real = np.zeros((nc, m), bool)
    real[color[order], where[order]] = True
    slot, k = ell_slots(rows, n)
    return dict(color=color[rows], slot=slot, where=where[rows], crow=crow, creal=real, cshape=(nc, k, m),
                row_color=color, row_where=where)


def host_levels(A: Any, *, B: np.ndarray, node_of: np.ndarray, strength: Any, max_coarse: int, max_levels: int,
                improve_steps: int, symmetric: bool):
    """The host SA levels of the first matrix (`sa_levels`) with what the pattern needs:
    ``[dict(A, agg_of_dof, num_aggs, coarse_node, Bc)]`` and the coarsest operator."""
    record: list = []
    levels, coarse = sa_levels(A, B=B, node_of=node_of, strength=strength, max_coarse=max_coarse, max_levels=max_levels,
                               improve_steps=improve_steps, symmetric=symmetric, record=record)
    return [dict(A=lev[0], **rec) for lev, rec in zip(levels, record)], coarse


def level_pattern(arows, acols, n: int, agg_of_dof, num_aggs: int, coarse_node, Bc, k: int, symmetric: bool,
                  gauss_seidel: bool, pad: int) -> dict:
    """Every index array of one level (``A_ℓ`` given by its structural pattern ``(arows, acols)``)."""
    nc = coarse_node.size
    pad_c = bucket_size(nc, minimum=16)
    diag = positions(arows, acols, n, np.arange(n), np.arange(n))
    if np.any(diag < 0):
        raise ValueError("amg_setup(reuse_pattern=True): a level operator has no stored diagonal entry")
    # the kept candidate of each coarse dof: R's row j has its first nonzero at column j
    cand = np.argmax(Bc != 0, axis=1) if nc else np.zeros(0, np.int64)
    start = np.searchsorted(coarse_node, np.arange(num_aggs))
    cnt = np.bincount(coarse_node, minlength=num_aggs)
    inside = np.nonzero(agg_of_dof >= 0)[0]
    per = cnt[agg_of_dof[inside]]
    t_dof = np.repeat(inside, per)
    off = np.arange(t_dof.size) - np.repeat(np.cumsum(per) - per, per)
    t_col = start[agg_of_dof[t_dof]] + off
    t_cand = cand[t_col]
    tptr = np.concatenate([[0], np.cumsum(np.bincount(t_dof, minlength=n))])  # t_dof is sorted: CSR order
    # P = T − ω D⁻¹ (A T): pattern of T ∪ pattern of A T
    t_keys = t_dof * nc + t_col
    at_a, at_t, at_p, prows, pcols = product_pairs(arows, acols, tptr, t_col, nc, extra_keys=t_keys)
    t_in_p = np.searchsorted(prows * nc + pcols, t_keys)
    pptr = np.concatenate([[0], np.cumsum(np.bincount(prows, minlength=n))])
    # A P, then Pᵀ (A P)
    ap_a, ap_p, ap_t, aprows, apcols = product_pairs(arows, acols, pptr, pcols, nc)
    apptr = np.concatenate([[0], np.cumsum(np.bincount(aprows, minlength=n))])
    # Pᵀ(AP)[a, b] += P[i, a] · AP[i, b]: pairs over the P entries of row i and the AP entries of row i
    cnt2 = np.diff(apptr)[prows]
    g_p = np.repeat(np.arange(prows.size), cnt2)
    off2 = np.arange(g_p.size) - np.repeat(np.cumsum(cnt2) - cnt2, cnt2)
    g_ap = apptr[prows[g_p]] + off2
    gkeys = pcols[g_p] * nc + apcols[g_ap]
    allk = np.concatenate([gkeys, (gkeys % nc) * nc + gkeys // nc]) if symmetric else gkeys
    ukeys = np.unique(allk)
    g_t = np.searchsorted(ukeys, gkeys)
    crows, ccols = ukeys // nc, ukeys % nc
    ctrans = np.searchsorted(ukeys, ccols * nc + crows) if symmetric else np.zeros(0, np.int64)
    a_slot, a_width = ell_slots(arows, n)
    p_slot, p_width = ell_slots(prows, n)
    r_slot, r_width = transposed_slots(prows, pcols, nc)
    rec = dict(n=n, nc=nc, pad=pad, pad_c=pad_c, k=k, arows=arows, acols=acols, diag=diag, t_dof=t_dof,
               t_cand=t_cand, t_in_p=t_in_p, agg=np.where(agg_of_dof >= 0, agg_of_dof, num_aggs),
               num_aggs=num_aggs, ok_agg=coarse_node, ok_cand=cand, at_a=at_a, at_t=at_t, at_p=at_p,
               prows=prows, pcols=pcols, ap_a=ap_a, ap_p=ap_p, ap_t=ap_t, num_ap=aprows.size, g_p=g_p, g_ap=g_ap,
               g_t=g_t, crows=crows, ccols=ccols, ctrans=ctrans, a_slot=a_slot, a_width=a_width, p_slot=p_slot,
               p_width=p_width, r_slot=r_slot, r_width=r_width,
               start=np.random.default_rng(0).standard_normal(n))
    if gauss_seidel:
        rec["gs"] = color_layout(arows, acols, n)
    return rec
