"""Contingency statistics by sorting codes: X² / G² and their dof without a table over the cardinalities.

The per-sample counting plan of `._contingency` for tables whose product of cardinalities is too large for a
dense ``(strata, K, K)`` scatter (high-cardinality data: tens to a hundred categories per variable). Where even the
codes of the observed cells would pass int32 (`_sorted_stat_dof_wide`), the keys are sorted as tuples instead.
"""

import functools

import jax
import jax.numpy as jnp

from ..._checks import default_float_dtype

__all__: list[str] = []


def _starts(*keys):
    """Whether each position of lexicographically sorted ``keys`` starts a run of equal tuples."""
    new = keys[0][1:] != keys[0][:-1]
    for key in keys[1:]:
        new = new | (key[1:] != key[:-1])
    return jnp.concatenate([jnp.ones(1, bool), new])


def _run_ids(first):
    """The index of each sorted position's run (``first`` from `_starts`)."""
    return jnp.cumsum(first.astype(jnp.int32)) - 1


def _run_sizes(first, real):
    """Per sorted position, the number of ``real`` positions of its run."""
    seg = _run_ids(first)
    return jax.ops.segment_sum(real.astype(jnp.int32), seg, num_segments=first.shape[0])[seg]


def _sorted_stat_dof(xv, yv, stratum, live, n_live, cx, cy, *, g_square, rank_strata=True):
    r"""X² (or G²) and causal-learn's dof of one test by sorting codes (no table over the product of
    cardinalities).

    Two sorts: of the cell codes ``(r cx + x) cy + y`` (``r`` the stratum code, re-ranked to ``0..L-1`` first
    when ``rank_strata``, i.e. when the raw codes times ``cx cy`` could pass int32), which orders the rows
    ``r cx + x`` and the strata ``r`` as well, and of the column codes ``r cy + y``. Runs of equal codes give the
    counts ``O, R, M`` of each observed cell, its row and its stratum; its column count ``C`` is found by binary
    search in the sorted columns. Then $X^2 = \sum_{O>0} O^2 M / (R C) - n$ and
    $G^2 = 2 \sum_{O>0} O \log(O M / (R C))$. Padding samples (``~live``) get a code above every real one, so
    they count in no real run. Both orders number the strata alike, so the dof, ``sum over observed strata of
    (nonzero rows - 1)(nonzero columns - 1)``, is read from the first entry of each distinct row and column.
    Work and memory are ``O(L log L)`` per test, whatever the cardinalities: with categories in the tens or
    hundreds the tables of the other modes would be mostly empty.
    """
    n = xv.shape[0]
    big = jnp.iinfo(jnp.int32).max

    def run_counts(key, real):  # per sorted position: the size of its run, and whether it starts one
        first = _starts(key)
        return _run_sizes(first, real), first, _run_ids(first)

    stratum = stratum.astype(jnp.int32)
    if rank_strata:
        skey = jnp.sort(jnp.where(live, stratum, big))
        slo = jnp.searchsorted(skey, stratum, side="left", method="scan")
        stratum = _run_ids(_starts(skey))[slo]  # dense rank, < n
    xv, yv = xv.astype(jnp.int32), yv.astype(jnp.int32)
    okey = jnp.sort(jnp.where(live, (stratum * cx + xv) * cy + yv, big))
    ckey = jnp.sort(jnp.where(live, stratum * cy + yv, big))
    real_o, real_c = okey != big, ckey != big
    rkey = jnp.where(real_o, okey // cy, big)  # cells sorted => rows and strata sorted
    mkey = jnp.where(real_o, okey // (cx * cy), big)
    o, new_cell, _ = run_counts(okey, real_o)
    r, new_row, _ = run_counts(rkey, real_o)
    m, _, sid_o = run_counts(mkey, real_o)
    c_run, new_col, _ = run_counts(ckey, real_c)
    col_of_cell = jnp.where(real_o, mkey * cy + okey % cy, big)
    c = c_run[jnp.minimum(jnp.searchsorted(ckey, col_of_cell, side="left", method="scan"), n - 1)]
    # stratum index of each sorted position (the same numbering in both orders: strata ascend in both)
    sid_c = _run_ids(_starts(jnp.where(real_c, ckey // cy, big)))
    return _stat_dof_of_runs((o, r, c, m), new_cell & real_o, (new_row & real_o, sid_o), (new_col & real_c, sid_c),
                             n_live, g_square)


def _stat_dof_of_runs(counts, use, rows, cols, n_live, g_square):
    """X² (or G²) and dof from per-position counts ``(O, R, C, M)`` in cell order, ``use`` marking the first
    position of each observed cell, and the row and column starts with their stratum indices (``(first, sid)``,
    in the cell order and the column order)."""
    fdt = default_float_dtype()
    n = use.shape[0]
    o_f, r_f, c_f, m_f = (v.astype(fdt) for v in counts)
    ratio = jnp.where(use, o_f * m_f / jnp.where(use, r_f * c_f, 1.0), 1.0)
    if g_square:
        stat = 2.0 * jnp.sum(jnp.where(use, o_f * jnp.log(ratio), 0.0))
    else:
        stat = jnp.maximum(jnp.sum(jnp.where(use, o_f * ratio, 0.0)) - n_live.astype(fdt), 0.0)
    nzr = jax.ops.segment_sum(rows[0].astype(jnp.int32), rows[1], num_segments=n)
    nzc = jax.ops.segment_sum(cols[0].astype(jnp.int32), cols[1], num_segments=n)
    dof = jnp.sum(jnp.where(nzr > 0, (nzr - 1) * (nzc - 1), 0))
    return stat, dof


def _pair_ranks(a, b):
    """Dense ranks (``0..L-1``, lexicographic) of the pairs ``(a[i], b[i])`` of two int32 code arrays: the
    mixed-radix code ``a cb + b`` without its product, which passes int32 once ``max a * cb >= 2^31``."""
    n = a.shape[0]
    sa, sb, perm = jax.lax.sort((a, b, jnp.arange(n, dtype=jnp.int32)), num_keys=2)
    return jnp.zeros(n, jnp.int32).at[perm].set(_run_ids(_starts(sa, sb)))


def _sorted_stat_dof_wide(xv, yv, stratum, live, n_live, *, g_square):
    r"""`_sorted_stat_dof` without integer codes: cells, rows and columns are sorted as tuples of keys
    (``stratum`` the dense rank of each sample's conditioning values, from `_pair_ranks`), for tests whose codes
    ``(r cx + x) cy + y`` would pass int32 (``L cx cy >= 2^31``: a million samples of 50-category variables).

    Two sorts: of the tuples ``(r, y)``, whose runs give each sample's column count ``C`` (carried back to the
    samples), and of ``(r, x, y)`` with ``C`` alongside, whose runs give ``O``, the rows ``(r, x)`` give ``R`` and
    the strata ``M``; then the statistic and dof as `_sorted_stat_dof`. Every index stays below the sample count.
    """
    n = xv.shape[0]
    big = jnp.iinfo(jnp.int32).max
    idx = jnp.arange(n, dtype=jnp.int32)
    r = jnp.where(live, stratum.astype(jnp.int32), big)  # padding samples sort last, in no real stratum
    xv, yv = xv.astype(jnp.int32), yv.astype(jnp.int32)
    cr, cyv, cperm = jax.lax.sort((r, yv, idx), num_keys=2)
    real_c = cr != big
    new_col = _starts(cr, cyv)
    c = jnp.zeros(n, jnp.int32).at[cperm].set(_run_sizes(new_col, real_c))
    orr, oxv, oyv, c = jax.lax.sort((r, xv, yv, c), num_keys=3)
    real_o = orr != big
    new_cell, new_row, new_stratum = _starts(orr, oxv, oyv), _starts(orr, oxv), _starts(orr)
    counts = (_run_sizes(new_cell, real_o), _run_sizes(new_row, real_o), c, _run_sizes(new_stratum, real_o))
    return _stat_dof_of_runs(counts, new_cell & real_o, (new_row & real_o, _run_ids(new_stratum)),
                             (new_col & real_c, _run_ids(_starts(cr))), n_live, g_square)


def _sorted_wide_batch(data_t, x, y, s, n_live, n, *, g_square):
    """`_sorted_stat_dof_wide` of the tests ``(x, y, s)`` (``(b,)``, ``(b,)``, ``(b, k)``) over the first ``n`` of
    the ``(d, n_pad)`` codes ``data_t``, of which the first ``n_live`` (traced) are samples: the strata are the
    dense ranks of ``(stratum, S_j)`` taken column by column. Returns ``(stat, dof)``, each ``(b,)``, dof int32."""
    live = jnp.arange(n, dtype=jnp.int32) < n_live
    stratum = jnp.zeros((x.shape[0], n), jnp.int32)
    for j in range(s.shape[1]):  # static unroll over |S| columns
        stratum = jax.vmap(_pair_ranks)(stratum, data_t[s[:, j], :n])
    one = functools.partial(_sorted_stat_dof_wide, g_square=g_square)
    stat, dof = jax.vmap(one, in_axes=(0, 0, 0, None, None))(data_t[x, :n], data_t[y, :n], stratum, live, n_live)
    return stat, dof.astype(jnp.int32)
