"""Contingency statistics by sorting codes: X² / G² and their dof without a table over the cardinalities.

The per-sample counting plan of `._contingency` for tables whose product of cardinalities is too large for a
dense ``(strata, K, K)`` scatter (high-cardinality data: tens to a hundred categories per variable).
"""

import jax
import jax.numpy as jnp

from .._checks import default_float_dtype

__all__: list[str] = []


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
    fdt = default_float_dtype()
    n = xv.shape[0]
    big = jnp.iinfo(jnp.int32).max

    def starts(key):
        return jnp.concatenate([jnp.ones(1, bool), key[1:] != key[:-1]])

    def run_counts(key, real):  # per sorted position: the size of its run, and whether it starts one
        first = starts(key)
        seg = jnp.cumsum(first.astype(jnp.int32)) - 1
        return jax.ops.segment_sum(real.astype(jnp.int32), seg, num_segments=n)[seg], first, seg

    stratum = stratum.astype(jnp.int32)
    if rank_strata:
        skey = jnp.sort(jnp.where(live, stratum, big))
        slo = jnp.searchsorted(skey, stratum, side="left", method="scan")
        stratum = (jnp.cumsum(starts(skey).astype(jnp.int32)) - 1)[slo]  # dense rank, < n
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
    use = new_cell & real_o
    o_f, r_f, c_f, m_f = (v.astype(fdt) for v in (o, r, c, m))
    ratio = jnp.where(use, o_f * m_f / jnp.where(use, r_f * c_f, 1.0), 1.0)
    if g_square:
        stat = 2.0 * jnp.sum(jnp.where(use, o_f * jnp.log(ratio), 0.0))
    else:
        stat = jnp.maximum(jnp.sum(jnp.where(use, o_f * ratio, 0.0)) - n_live.astype(fdt), 0.0)
    # stratum index of each sorted position (the same numbering in both orders: strata ascend in both)
    sid_c = jnp.cumsum(starts(jnp.where(real_c, ckey // cy, big)).astype(jnp.int32)) - 1
    nzr = jax.ops.segment_sum((new_row & real_o).astype(jnp.int32), sid_o, num_segments=n)
    nzc = jax.ops.segment_sum((new_col & real_c).astype(jnp.int32), sid_c, num_segments=n)
    dof = jnp.sum(jnp.where(nzr > 0, (nzr - 1) * (nzc - 1), 0))
    return stat, dof
