"""The contingency-table engine of the discrete CI tests: counting plans and kernels for X² and G².

A batch of tests is planned on the host (:func:`_chi_square_groups`): small flat tables are counted by AND +
popcount of per-category bitsets, medium ones by one scatter of the samples into a dense ``(strata, K, K)`` table,
and large products of cardinalities by re-coding the strata observed in the sample and counting per sample, so the
full product is never allocated. :func:`icmlx.structure.chi_square` and PC's tester both dispatch through
:func:`_chi_square_plan`.
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaincc

from ._ci_tests import _float_dtype

__all__: list[str] = []


def _dense_codes(codes):
    """Map arbitrary int codes (n,) to dense 0..m-1 ranks of their distinct values (m <= n_max)."""
    order = jnp.argsort(codes)
    sc = codes[order]
    new = jnp.concatenate([jnp.zeros((1,), bool), sc[1:] != sc[:-1]])
    dense_sorted = jnp.cumsum(new.astype(jnp.int32))
    return jnp.zeros_like(dense_sorted).at[order].set(dense_sorted)


def _pow2(v: int) -> int:
    return 1 << max(int(v) - 1, 0).bit_length()


def _strata_plan(n: int, kmax: int, bound: int) -> tuple[str, int, int]:
    """How to index the strata of a batch whose mixed-radix stratum codes lie below ``bound`` (the product of
    the conditioning variables' cardinalities, largest over the batch).

    Returns ``(mode, n_strata, code_bound)`` (all static): ``"dense"`` (a ``(n_strata, K, K)`` table per test),
    ``"scatter"`` (codes re-ranked through a ``code_bound`` presence table, then per-sample counting over at most
    ``n_strata <= n`` observed strata), ``"sort"`` (codes re-ranked by one sort) or ``"sort_each"`` (codes do not
    fit in int32: re-ranked after every column).
    """
    nb = _pow2(bound)
    if nb * kmax * kmax <= max(2 * n, 4096):
        return "dense", nb, nb
    if nb <= 2**16:
        return "scatter", min(n, nb), nb
    if bound < 2**31:
        return "sort", n, 0
    return "sort_each", n, 0


def _stratum_codes(data_t, cards, s, mode):
    """Mixed-radix stratum code of every sample (Horner form with the true cardinalities)."""
    stratum = jnp.zeros((s.shape[0], data_t.shape[1]), data_t.dtype)
    for j in range(s.shape[1]):  # static unroll over |S| columns
        stratum = stratum * cards[s[:, j]][:, None] + data_t[s[:, j]]
        if mode == "sort_each":
            stratum = jax.vmap(_dense_codes)(stratum)
    if mode == "sort":
        stratum = jax.vmap(_dense_codes)(stratum)
    return stratum


def _table_stat_dof(counts, g_square):
    """X² (or G²) and causal-learn's dof from ``(b, strata, K, K)`` float contingency tables."""
    ns = counts.sum(axis=(2, 3))
    rows = counts.sum(axis=3)
    cols = counts.sum(axis=2)
    safe_ns = jnp.where(ns > 0, ns, 1.0)
    expected = rows[..., :, None] * cols[..., None, :] / safe_ns[..., None, None]
    safe_e = jnp.where(expected > 0, expected, 1.0)
    if g_square:
        ratio = jnp.where(counts > 0, counts / safe_e, 1.0)
        stat = 2.0 * jnp.sum(counts * jnp.log(ratio), axis=(1, 2, 3))
    else:
        stat = jnp.sum(jnp.where(expected > 0, (counts - expected) ** 2 / safe_e, 0.0), axis=(1, 2, 3))
    nzr = jnp.sum(rows > 0, axis=2)
    nzc = jnp.sum(cols > 0, axis=2)
    dof = jnp.sum(jnp.where(ns > 0, (nzr - 1) * (nzc - 1), 0), axis=1)
    return stat, dof.astype(jnp.int32)


@functools.partial(jax.jit, static_argnames=("head",))
def _chi2_pvalue(stat, dof, head=None):
    """Upper tail of χ²_dof at ``stat`` (of its first ``head`` entries if given); 1 where dof = 0 (causal-learn's
    rule)."""
    if head is not None:
        stat, dof = stat[:head], dof[:head]
    dof_f = jnp.maximum(dof, 1).astype(stat.dtype)
    return jnp.where(dof == 0, 1.0, gammaincc(dof_f / 2.0, stat / 2.0))


BITS_CELLS = 64  # largest flat table (pow2 of prod card(S) * card x * card y) counted with bitsets
DENSE_CELLS = 2**17  # largest dense (strata, kmax, kmax) table of one test (else strata are re-ranked)


@functools.partial(jax.jit, static_argnames=("kmax",))
def _pack_bits(data_t, kmax):
    """``(d, n)`` category codes -> ``(d, kmax, ceil(n/32))`` uint32 indicator bitsets (sample ``i`` is bit
    ``i % 32`` of word ``i // 32``; bits past ``n`` are zero)."""
    d, n = data_t.shape
    w = -(-n // 32)
    onehot = data_t[:, None, :] == jnp.arange(kmax, dtype=data_t.dtype)[None, :, None]
    onehot = jnp.pad(onehot, ((0, 0), (0, 0), (0, 32 * w - n))).reshape(d, kmax, w, 32).astype(jnp.uint32)
    return jnp.sum(onehot << jnp.arange(32, dtype=jnp.uint32), axis=-1, dtype=jnp.uint32)  # disjoint bits: sum = or


def _flat_geometry(cards, xi, yi, n_cells):
    """Flat cell ``c = r * cxy + a * cy + b`` (stratum ``r``, x = a, y = b) -> its parts, for one test."""
    cy = cards[yi]
    cxy = cards[xi] * cy
    c = jnp.arange(n_cells, dtype=cards.dtype)
    q = c % cxy
    return c // cxy, q // cy, q % cy


def _flat_counts_bits(bits, cards, xi, yi, si, n_cells):
    """Counts ``(n_cells,)`` of the flat table of one test by AND + popcount of indicator bitsets
    (``n_cells * n / 32`` word operations, no per-sample work)."""
    kmax = bits.shape[1]
    r, a, b = _flat_geometry(cards, xi, yi, n_cells)
    words = bits[xi][jnp.minimum(a, kmax - 1)] & bits[yi][b]
    stride = jnp.ones((), cards.dtype)
    # static unroll over |S| (at most log2(n_cells) - 2 <= 4 here): a dynamic loop would carry the (cells, n/32)
    # words through memory and run slower
    for j in range(si.shape[0]):  # digit j of the stratum's mixed-radix code selects the category of S_j
        c = cards[si[j]]
        words = words & bits[si[j]][jnp.minimum((r // stride) % c, kmax - 1)]
        stride = stride * c
    words = jnp.where((r < stride)[:, None], words, jnp.uint32(0))
    return jnp.sum(jax.lax.population_count(words), axis=-1, dtype=jnp.int32)


def _dense_table_scatter(data_t, cards, xi, yi, si, k, n_rows, kmax):
    """Contingency table ``(n_rows, kmax, kmax)`` of one test (strata by mixed-radix code of ``S = si[:k]``,
    ``k`` dynamic) by one scatter-add of the ``n`` samples; its margins are then plain (vectorised) reductions."""
    code = jax.lax.fori_loop(
        0, k, lambda j, code: code * cards[si[j]] + data_t[si[j]], jnp.zeros(data_t.shape[1], data_t.dtype)
    )
    cell = (code * kmax + data_t[xi]) * kmax + data_t[yi]
    counts = jax.ops.segment_sum(jnp.ones(cell.shape, jnp.int32), cell, num_segments=n_rows * kmax * kmax)
    return counts.reshape(n_rows, kmax, kmax)


def _flat_stat_dof(counts, cards, xi, yi, *, kmax, g_square):
    """X² (or G²) and causal-learn's dof of one test from its flat table (strata with no sample are dropped)."""
    fdt = _float_dtype()
    n_cells = counts.shape[0]
    n_rows = max(n_cells // 4, 1)  # card x, card y >= 2, so at most n_cells / 4 strata
    r, a, b = _flat_geometry(cards, xi, yi, n_cells)
    valid = r < n_rows
    r = jnp.minimum(r, n_rows - 1)
    o = jnp.where(valid, counts, 0).astype(fdt)
    m = jax.ops.segment_sum(o, r, num_segments=n_rows)
    ra, rb = r * kmax + jnp.minimum(a, kmax - 1), r * kmax + b
    rows = jax.ops.segment_sum(o, ra, num_segments=n_rows * kmax)
    cols = jax.ops.segment_sum(o, rb, num_segments=n_rows * kmax)
    expected = rows[ra] * cols[rb] / jnp.where(m > 0, m, 1.0)[r]
    use = valid & (expected > 0)
    safe_e = jnp.where(use, expected, 1.0)
    if g_square:
        stat = 2.0 * jnp.sum(jnp.where(use & (o > 0), o * jnp.log(jnp.where(o > 0, o, 1.0) / safe_e), 0.0))
    else:
        stat = jnp.sum(jnp.where(use, (o - expected) ** 2 / safe_e, 0.0))
    nzr = jnp.sum(rows.reshape(n_rows, kmax) > 0, axis=1)
    nzc = jnp.sum(cols.reshape(n_rows, kmax) > 0, axis=1)
    dof = jnp.sum(jnp.where(m > 0, (nzr - 1) * (nzc - 1), 0)).astype(jnp.int32)
    return stat, dof


@functools.partial(jax.jit, static_argnames=("kmax", "g_square", "size", "use_bits"))
def _chi_square_table_kernel(table, cards, x, y, s, m, k, *, kmax, g_square, size, use_bits):
    """Batched χ²/G² statistic and dof, one test per loop step (its working set stays in cache).

    ``use_bits``: ``table`` is the bitset stack and ``size`` the flat table size (bitset counting); else
    ``table`` holds the ``(d, n)`` codes and ``size`` the number of strata of a dense ``(size, kmax, kmax)``
    table filled by one scatter of the samples. Only the first ``m`` (dynamic) of the ``b`` padded tests are
    computed: one compilation serves every batch up to ``b``. Dense tables use the conditioning sets
    ``s[:, :k]`` (``k`` dynamic: every ``|S|`` up to the width of ``s`` shares a compilation); bitset counting
    uses all of ``s`` (``|S|`` static, at most 4).
    """
    fdt = _float_dtype()

    def body(i, out):
        if use_bits:
            counts = _flat_counts_bits(table, cards, x[i], y[i], s[i], size)
            st, df = _flat_stat_dof(counts, cards, x[i], y[i], kmax=kmax, g_square=g_square)
        else:
            tab = _dense_table_scatter(table, cards, x[i], y[i], s[i], k, size, kmax)
            st, df = _table_stat_dof(tab[None].astype(fdt), g_square)
            st, df = st[0], df[0]
        return out[0].at[i].set(st), out[1].at[i].set(df)

    b = x.shape[0]
    return jax.lax.fori_loop(0, m, body, (jnp.zeros(b, fdt), jnp.zeros(b, jnp.int32)))


@functools.partial(jax.jit, static_argnames=("kmax", "g_square", "n_strata", "mode", "code_bound"))
def _chi_square_loop_kernel(data_t, cards, x, y, s, m, *, kmax, g_square, n_strata, mode, code_bound):
    """:func:`_chi_square_kernel`'s statistic and dof one test per loop step (cache-resident counting tables),
    for the first ``m`` (dynamic) of ``b`` padded tests."""
    fdt = _float_dtype()
    b = x.shape[0]

    def body(i, out):
        st, df = _chi_square_stat_dof(
            data_t, cards, x[i][None], y[i][None], s[i][None], kmax=kmax, g_square=g_square, n_strata=n_strata,
            mode=mode, code_bound=code_bound,
        )
        return out[0].at[i].set(st[0]), out[1].at[i].set(df[0])

    return jax.lax.fori_loop(0, m, body, (jnp.zeros(b, fdt), jnp.zeros(b, jnp.int32)))


def _chi_square_stat_dof(data_t, cards, x, y, s, *, kmax, g_square, n_strata, mode, code_bound):
    """data_t: (d, n) integer codes (transposed so that a variable is one contiguous row); cards: (d,) int.

    Per-sample form (no dense (strata, K, K) arithmetic): with O, r, c, m the counts of a sample's cell,
    row, column and stratum, sum_{E>0} (O-E)^2/E = sum_i O_i m_i / (r_i c_i) - n and
    G^2 = 2 sum_i log(O_i m_i / (r_i c_i)).
    """
    fdt = _float_dtype()
    b = x.shape[0]
    n = data_t.shape[1]
    xv = data_t[x]
    yv = data_t[y]
    stratum = _stratum_codes(data_t, cards, s, mode)
    if mode == "scatter":
        rows_b = jnp.arange(b)[:, None]
        present = jnp.zeros((b, code_bound), jnp.int32).at[rows_b, stratum].set(1)
        rank = jnp.cumsum(present, axis=1) - 1
        stratum = jnp.take_along_axis(rank, stratum, axis=1)
    off = jnp.arange(b, dtype=xv.dtype)[:, None]
    ones = jnp.ones((b * n,), jnp.int32)  # int32 scatter-adds are faster than float64 ones on CPU
    if mode == "dense":  # small tables: one scatter, then table arithmetic
        cells = n_strata * kmax * kmax
        cell = (stratum * kmax + xv) * kmax + yv + off * cells
        counts = jax.ops.segment_sum(ones, cell.reshape(-1), num_segments=b * cells)
        return _table_stat_dof(counts.reshape(b, n_strata, kmax, kmax).astype(fdt), g_square)

    def count(idx, size):
        flat = (idx + off * size).reshape(-1)
        tab = jax.ops.segment_sum(ones, flat, num_segments=b * size)
        return tab, tab[flat].reshape(b, n).astype(fdt)

    _, o_i = count((stratum * kmax + xv) * kmax + yv, n_strata * kmax * kmax)
    rtab, r_i = count(stratum * kmax + xv, n_strata * kmax)
    ctab, c_i = count(stratum * kmax + yv, n_strata * kmax)
    mtab, m_i = count(stratum, n_strata)
    ratio = o_i * m_i / (r_i * c_i)
    if g_square:
        stat = 2.0 * jnp.sum(jnp.log(ratio), axis=1)
    else:
        stat = jnp.maximum(jnp.sum(ratio, axis=1) - n, 0.0)
    nzr = jnp.sum(rtab.reshape(b, n_strata, kmax) > 0, axis=2)
    nzc = jnp.sum(ctab.reshape(b, n_strata, kmax) > 0, axis=2)
    dof = jnp.sum(jnp.where(mtab.reshape(b, n_strata) > 0, (nzr - 1) * (nzc - 1), 0), axis=1).astype(jnp.int32)
    return stat, dof


@functools.partial(jax.jit, static_argnames=("kmax", "g_square", "n_strata", "mode", "code_bound"))
def _chi_square_kernel(data_t, cards, x, y, s, *, kmax, g_square, n_strata, mode, code_bound):
    """Batched (vectorised over tests, e.g. sharded) χ²/G²: statistic and dof."""
    return _chi_square_stat_dof(
        data_t, cards, x, y, s, kmax=kmax, g_square=g_square, n_strata=n_strata, mode=mode, code_bound=code_bound
    )


def _log2_strata(cards, s) -> np.ndarray:
    """Host-side: log2 of the product of the cardinalities of each conditioning set, shape ``(b,)``."""
    return np.log2(np.asarray(cards, np.float64))[np.asarray(s)].sum(axis=1)


def _kmax_bucket(max_card) -> int:
    """Table side for categories ``0..max_card-1``: a power of two >= 2 (fewer compilations)."""
    return 1 << max(int(max_card) - 1, 1).bit_length()


def _chi_square_plan(plan, data_t, bits, cards, x, y, s, m, *, const, kmax, g_square, vectorised=False):
    """Statistic and dof of one plan group of :func:`_chi_square_groups` (host-side dispatch, NumPy indices).

    ``"bits"``/``"dense1"`` plans run the per-test table kernel (dense tables get ``s`` padded with the constant
    variable ``const`` and ``|S|`` as a dynamic bound); strata plans run the per-sample kernel, one test per loop
    step, or vectorised over the batch (``vectorised``, for sharded batches). Only the first ``m`` tests of the
    loop kernels are computed.
    """
    k = np.int32(s.shape[1])
    if plan[0] in ("bits", "dense1"):
        use_bits = plan[0] == "bits"
        return _chi_square_table_kernel(
            bits if use_bits else data_t, cards, x, y, s if use_bits else _pad_sets(s, const), m, k, kmax=kmax,
            g_square=g_square, size=plan[1], use_bits=use_bits,
        )
    mode, n_strata, bound = plan
    kw = dict(kmax=kmax, g_square=g_square, n_strata=n_strata, mode=mode, code_bound=bound)
    if vectorised:
        return _chi_square_kernel(data_t, cards, x, y, s, **kw)
    return _chi_square_loop_kernel(data_t, cards, x, y, s, m, **kw)


def _pad_sets(s: np.ndarray, const: int) -> np.ndarray:
    """Pad conditioning sets ``(m, k)`` to width ``max(4, pow2(k))`` with the constant variable ``const``."""
    m, k = s.shape
    kb = max(4, 1 << max(k - 1, 0).bit_length())
    return np.concatenate([s, np.full((m, kb - k), const, s.dtype)], axis=1)


def _chi_square_groups(cards_np, x, y, s, n: int, kmax: int, sharded: bool = False):
    """Host-side plan of a batch of χ² tests: ``[(indices, plan), ...]``.

    Bitset counting when the flat table ``C = pow2(prod card(S) * card x * card y) <= BITS_CELLS``
    (``("bits", C)``); else a dense table of ``R = pow2(prod card(S))`` strata filled by one scatter of the
    samples when ``R * kmax^2 <= DENSE_CELLS`` (``("dense1", R)``); else the per-sample strata plans of
    :func:`_strata_plan` by ``R`` (also used for every test of a sharded batch, whose kernel is vectorised).
    """
    lr = _log2_strata(cards_np, s)
    lc = np.ceil(lr + np.log2(cards_np[x] * cards_np[y]) - 1e-9).astype(np.int64)
    lr = np.ceil(lr - 1e-9).astype(np.int64)
    bits = (lc <= int(math.log2(BITS_CELLS))) & (not sharded)
    dense = (lr + 2 * int(math.log2(kmax)) <= int(math.log2(DENSE_CELLS))) & (not sharded) & ~bits
    key = np.where(bits, lc, np.where(dense, 64 + lr, -1 - lr))
    groups = []
    for kb in np.unique(key):
        idx = np.nonzero(key == kb)[0]
        if kb >= 64:
            plan = ("dense1", 1 << int(kb - 64))
        elif kb >= 0:
            plan = ("bits", 1 << int(kb))
        else:
            lb = int(-1 - kb)
            plan = _strata_plan(n, kmax, 1 << lb if lb < 62 else 2**62)
        groups.append((idx, plan))
    return groups
