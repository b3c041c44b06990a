"""Batched conditional-independence (CI) tests: many ``(x, y, S)`` triples in one jitted call.

Every tester takes index arrays ``x: (b,)``, ``y: (b,)`` and ``s: (b, k)`` (one conditioning-set size ``k`` per
call, so a PC level is one batch) and returns a :class:`CIResult` with one statistic and one p-value per test.
"""

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaincc, ndtr
from jaxtyping import Array, Bool, Float, Int

__all__ = [
    "CIResult",
    "correlation_matrix",
    "fisher_z",
    "chi_square",
    "bernoulli_test",
    "binned_u_statistic",
    "d_separation",
]


class CIResult(eqx.Module):
    """Statistics, p-values and degrees of freedom of a batch of CI tests.

    Attributes:
      statistic: ``(b,)`` test statistic (Fisher-z: ``sqrt(n-|S|-3)|atanh r|``; chi-square: X² or G²).
      pvalue: ``(b,)`` p-value; "independent" means ``pvalue > alpha`` (causal-learn's rule).
      dof: ``(b,)`` degrees of freedom (integer; ``-1`` where the notion does not apply).
    """

    statistic: Float[Array, " b"]
    pvalue: Float[Array, " b"]
    dof: Int[Array, " b"]


def _float_dtype():
    return jnp.zeros((), dtype=float).dtype


def _check_batch(x, y, s):
    if x.ndim != 1 or y.ndim != 1 or s.ndim != 2:
        raise ValueError(f"x, y must be (b,) and s (b, k); got {x.shape=}, {y.shape=}, {s.shape=}")
    if not (x.shape[0] == y.shape[0] == s.shape[0]):
        raise ValueError(f"batch sizes differ: {x.shape=}, {y.shape=}, {s.shape=}")


def correlation_matrix(data: Float[Array, "n d"]) -> Float[Array, "d d"]:
    r"""Pearson correlation matrix of the columns, ``np.corrcoef(data.T)``.

    .. math:: R_{jk} = \frac{\sum_i (x_{ij}-\bar x_j)(x_{ik}-\bar x_k)}{\sqrt{\sum_i (x_{ij}-\bar x_j)^2
       \sum_i (x_{ik}-\bar x_k)^2}}

    Args:
      data: ``(n, d)`` floating data.

    Returns:
      ``(d, d)`` correlation matrix in the dtype of ``data``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import correlation_matrix
      >>> r = correlation_matrix(jnp.array([[0.0, 1.0], [1.0, 3.0], [2.0, 5.0]]))
      >>> print(round(float(r[0, 1]), 3))
      1.0
    """
    xc = data - jnp.mean(data, axis=0, keepdims=True)
    cov = xc.T @ xc
    sd = jnp.sqrt(jnp.diag(cov))
    return cov / (sd[:, None] * sd[None, :])


@jax.jit
def _fisher_z_kernel(corr, n, x, y, s, k=None):
    """``k``: optional true set size (traced); columns ``>= k`` of ``s`` are padding, replaced by identity
    rows/columns of the correlation submatrix (an uncorrelated unit variable leaves the partial correlation
    unchanged), so several set sizes share one compilation."""
    idx = jnp.concatenate([x[:, None], y[:, None], s], axis=1)  # (b, k+2)
    sub = corr[idx[:, :, None], idx[:, None, :]]  # (b, k+2, k+2)
    if k is None:
        k = s.shape[1]
    else:
        w = s.shape[1] + 2
        pos = jnp.arange(w, dtype=jnp.int32)
        live = pos < k + 2
        eye = jnp.eye(w, dtype=corr.dtype)
        sub = jnp.where(live[:, None] & live[None, :], sub, eye)
    if s.shape[1] == 0:
        r = sub[:, 0, 1]
    else:
        inv = jnp.linalg.inv(sub)
        r = -inv[:, 0, 1] / jnp.sqrt(jnp.abs(inv[:, 0, 0] * inv[:, 1, 1]))
    eps = jnp.finfo(corr.dtype).eps
    r = jnp.where(jnp.abs(r) >= 1.0, (1.0 - eps) * jnp.sign(r), r)
    z = 0.5 * jnp.log((1.0 + r) / (1.0 - r))
    stat = jnp.sqrt(jnp.asarray(n - k - 3).astype(corr.dtype)) * jnp.abs(z)
    p = 2.0 * (1.0 - ndtr(stat))
    return stat, p


def fisher_z(
    corr: Float[Array, "d d"],
    n: int,
    x: Int[Array, " b"],
    y: Int[Array, " b"],
    s: Int[Array, "b k"],
) -> CIResult:
    r"""Fisher-z partial-correlation tests of ``x ⫫ y | S`` for a batch of triples.

    With :math:`P = (R_{VV})^{-1}` for :math:`V = (x, y, S)`:

    .. math:: r = -\frac{P_{01}}{\sqrt{P_{00}P_{11}}},\quad
       T = \sqrt{n-|S|-3}\,|\operatorname{atanh} r|,\quad p = 2(1-\Phi(T)).

    ``|r| >= 1`` is clamped to ``(1-eps) sign r`` as in causal-learn. Run with ``jax_enable_x64`` for p-values
    that agree with causal-learn to 1e-10.

    Args:
      corr: ``(d, d)`` correlation matrix (see :func:`correlation_matrix`).
      n: sample size.
      x: ``(b,)`` int indices; y: ``(b,)`` int indices; s: ``(b, k)`` conditioning sets.

    Returns:
      :class:`CIResult` (``dof`` is ``-1``).

    Raises:
      ValueError: if the batch shapes disagree or ``n - k - 3 <= 0``.

    References:
      Gao, Wang & Aragam, arXiv:2507.05689; Kalisch & Bühlmann, JMLR 8 (2007).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.structure import correlation_matrix, fisher_z
      >>> data = jax.random.normal(jax.random.key(0), (500, 3))
      >>> res = fisher_z(correlation_matrix(data), 500, jnp.array([0]), jnp.array([1]),
      ...                jnp.array([[2]]))
      >>> bool(res.pvalue[0] > 0.01)
      True
    """
    _check_batch(x, y, s)
    if n - s.shape[1] - 3 <= 0:
        raise ValueError(f"Fisher-z needs n - |S| - 3 > 0, got {n=} and |S|={s.shape[1]}")
    stat, p = _fisher_z_kernel(corr, jnp.asarray(n, jnp.int32), x, y, s)
    return CIResult(stat, p, jnp.full(x.shape, -1, jnp.int32))


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
    # words through memory and run ~2x slower
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
    ones = jnp.ones((b * n,), jnp.int32)  # int32 scatter-add is ~4x faster than float64 on CPU
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


def chi_square(
    data: Int[Array, "n d"],
    x: Int[Array, " b"],
    y: Int[Array, " b"],
    s: Int[Array, "b k"],
    *,
    g_square: bool = False,
) -> CIResult:
    r"""Pearson χ² (or G²) tests of ``x ⫫ y | S`` for integer-coded discrete data, causal-learn's dof rule.

    Per observed configuration ``s`` of ``S`` (empty strata are dropped), with counts :math:`O_{s,a,b}`:

    .. math:: E_{s,a,b} = \frac{O_{s,a\cdot}O_{s,\cdot b}}{O_{s,\cdot\cdot}},\quad
       X^2 = \sum \frac{(O-E)^2}{E}\ (E>0),\quad G^2 = 2\sum O\ln\frac{O}{E}\ (O>0),

    .. math:: \mathrm{df} = \sum_s (r_s - 1)(c_s - 1),\qquad p = \begin{cases}1 & \mathrm{df}=0\\
       \bar F_{\chi^2_{\mathrm{df}}}(X^2) & \text{else}\end{cases}

    where :math:`r_s, c_s` count the non-empty rows/columns of stratum ``s`` (= causal-learn's
    ``K_x - 1 - #zero rows``). Categories must be coded ``0..K-1`` (see :func:`icmlx.structure.encode_discrete`).
    Strata get mixed-radix codes from the true cardinalities. Each test's table is counted on its own (one test
    per step of a compiled loop, so its working set stays in cache): by AND + popcount of per-category bitsets of
    the samples when ``prod card(S) * card x * card y`` is at most 64 cells, else by one scatter-add of the samples
    into a dense ``(strata, K, K)`` table when that has at most ``2^17`` cells; larger products are re-coded to at
    most ``n`` observed strata (by a rank scatter, or by sorting past ``2^16``) and accumulated per sample, so
    the full product of cardinalities is never allocated.

    Args:
      data: ``(n, d)`` integer data with values in ``0..K_j-1``.
      x, y: ``(b,)`` int indices; s: ``(b, k)`` conditioning sets.
      g_square: use G² instead of Pearson X².

    Returns:
      :class:`CIResult` with the statistic, p-value and dof.

    Raises:
      TypeError: if ``data`` is not an integer array.

    References:
      causal-learn ``Chisq_or_Gsq``; Gao, Wang & Aragam, arXiv:2507.05689.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.structure import chi_square
      >>> data = jax.random.randint(jax.random.key(0), (400, 3), 0, 2)
      >>> res = chi_square(data, jnp.array([0]), jnp.array([1]), jnp.array([[2]]))
      >>> int(res.dof[0])
      2
    """
    _check_batch(x, y, s)
    if not jnp.issubdtype(data.dtype, jnp.integer):
        raise TypeError(f"chi_square needs integer-coded data, got {data.dtype=}")
    n, d = data.shape
    fdt = _float_dtype()
    # one extra constant row (card 1) pads conditioning sets; cards >= 2 (an empty category changes nothing)
    data_t = jnp.zeros((d + 1, n), jnp.int32).at[:d].set(data.T.astype(jnp.int32))
    cards_np = np.ones(d + 1, np.int64)
    cards_np[:d] = np.maximum(np.asarray(jnp.max(data, axis=0)) + 1, 2) if n > 0 else 2
    cards = jnp.asarray(cards_np, jnp.int32)
    kmax = _kmax_bucket(cards_np.max())
    xn, yn, sn = (np.asarray(a, np.int64) for a in (x, y, s))
    groups = _chi_square_groups(cards_np, xn, yn, sn, n, kmax)
    bits = _pack_bits(data_t, kmax) if any(plan[0] == "bits" for _, plan in groups) else None
    stat = jnp.zeros(xn.shape[0], fdt)
    dof = jnp.zeros(xn.shape[0], jnp.int32)
    for idx, plan in groups:
        xs, ys, ss = xn[idx].astype(np.int32), yn[idx].astype(np.int32), sn[idx].astype(np.int32)
        st, df = _chi_square_plan(
            plan, data_t, bits, cards, xs, ys, ss, np.int32(len(idx)), const=d, kmax=kmax, g_square=g_square
        )
        stat, dof = stat.at[idx].set(st), dof.at[idx].set(df)
    return CIResult(stat, _chi2_pvalue(stat, dof), dof)


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


@jax.jit
def _bernoulli_kernel(data, x, y, s):
    fdt = _float_dtype()

    def one(xi, yi, si):
        xv = data[:, xi].astype(fdt)
        yv = data[:, yi].astype(fdt)
        if si.shape[0] == 0:
            z = jnp.zeros(data.shape[0], jnp.int32)
            nz = 1
        else:
            z = jnp.zeros(data.shape[0], jnp.int32)
            for j in range(si.shape[0]):
                z = 2 * z + data[:, si[j]].astype(jnp.int32)
            nz = 2 ** si.shape[0]
        cnt = jax.ops.segment_sum(jnp.ones_like(xv), z, nz)
        sx = jax.ops.segment_sum(xv, z, nz)
        sy = jax.ops.segment_sum(yv, z, nz)
        sxy = jax.ops.segment_sum(xv * yv, z, nz)
        m = jnp.where(cnt > 0, cnt, 1.0)
        px, py, pxy = sx / m, sy / m, sxy / m
        cov = pxy - px * py
        n_tot = jnp.sum(cnt)
        gap = jnp.sum(cnt / n_tot * jnp.abs(cov))
        den = px * (1 - px) * py * (1 - py)
        ok = (cnt > 0) & (den > 0)
        chi = jnp.sum(jnp.where(ok, cnt * cov**2 / jnp.where(ok, den, 1.0), 0.0))
        dof = jnp.sum(ok.astype(jnp.int32))
        p = jnp.where(dof == 0, 1.0, gammaincc(jnp.maximum(dof, 1).astype(fdt) / 2.0, chi / 2.0))
        return gap, p, dof

    return jax.vmap(one)(x, y, s)


def bernoulli_test(
    data: Int[Array, "n d"] | Bool[Array, "n d"],
    x: Int[Array, " b"],
    y: Int[Array, " b"],
    s: Int[Array, "b k"],
) -> CIResult:
    r"""Bernoulli CI tester for binary data: covariance gap statistic with a Pearson χ² p-value.

    For each configuration ``z`` of ``S`` with empirical weight :math:`\hat p(z)`:

    .. math:: T = \sum_z \hat p(z)\,\bigl|\hat p_{11|z} - \hat p_{1\cdot|z}\hat p_{\cdot 1|z}\bigr|,\qquad
       X^2 = \sum_z n_z \frac{(\hat p_{11|z}-\hat p_{1\cdot|z}\hat p_{\cdot1|z})^2}
       {\hat p_{1\cdot|z}(1-\hat p_{1\cdot|z})\hat p_{\cdot1|z}(1-\hat p_{\cdot1|z})}

    ``T`` is the plug-in gap the poly-forest learner thresholds (its minimax rate is ``n^{-1/2}``); the p-value
    is :math:`\bar F_{\chi^2_{\mathrm{df}}}(X^2)` with one dof per non-degenerate stratum (equal to the
    :func:`chi_square` p-value on binary data).

    Args:
      data: ``(n, d)`` binary (0/1) data.
      x, y: ``(b,)`` int indices; s: ``(b, k)`` conditioning sets.

    Returns:
      :class:`CIResult` with ``statistic = T``.

    References:
      Gao, Wang & Aragam, arXiv:2507.05689 (Thm 4.1); Canonne et al., "Testing conditional independence of
      discrete distributions" (2018).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.structure import bernoulli_test
      >>> data = jax.random.bernoulli(jax.random.key(1), 0.5, (1000, 3)).astype(jnp.int32)
      >>> res = bernoulli_test(data, jnp.array([0]), jnp.array([1]), jnp.zeros((1, 0), jnp.int32))
      >>> bool(res.statistic[0] < 0.05)
      True
    """
    _check_batch(x, y, s)
    if data.dtype == jnp.bool_:
        data = data.astype(jnp.int32)
    if not jnp.issubdtype(data.dtype, jnp.integer):
        raise TypeError(f"bernoulli_test needs 0/1 integer or bool data, got {data.dtype=}")
    stat, p, dof = _bernoulli_kernel(data, x, y, s)
    return CIResult(stat, p, dof)


def _rank_bins(data, n_bins):
    """Equal-frequency bins 0..n_bins-1 of each column (ranks), ties broken by order."""
    n = data.shape[0]
    ranks = jnp.argsort(jnp.argsort(data, axis=0), axis=0)
    return (ranks * n_bins) // n


def _u_stat_cells(nab, na, nb, m):
    """Unbiased estimate of sum_ab (p_ab - p_a p_b)^2 from counts of one stratum (m samples)."""
    fdt = nab.dtype
    m2 = m * (m - 1)
    m3 = m2 * (m - 2)
    m4 = m3 * (m - 3)
    t1 = jnp.sum(nab * (nab - 1))
    t2 = jnp.sum(nab * ((na[:, None] - 1) * (nb[None, :] - 1) - (nab - 1)))
    c = nab
    nA = na[:, None] * jnp.ones_like(nab)
    nB = nb[None, :] * jnp.ones_like(nab)
    q = (
        c * (c - 1) * (nB - 2) * (nB - 3)
        + 2 * c * (nA - c) * (nB - 1) * (nB - 2)
        + (nA - c) * (nA - c - 1) * nB * (nB - 1)
    )
    t3 = jnp.sum(q)
    ok = m >= 4
    safe = lambda v: jnp.where(ok, v, jnp.ones((), fdt))
    return jnp.where(ok, t1 / safe(m2) - 2 * t2 / safe(m3) + t3 / safe(m4), 0.0)


@functools.partial(jax.jit, static_argnames=("n_bins",))
def _u_kernel(bins, x, y, s, *, n_bins):
    fdt = _float_dtype()
    n = bins.shape[0]

    def one(xi, yi, si):
        z = jnp.zeros(n, jnp.int32)
        for j in range(si.shape[0]):
            z = z * n_bins + bins[:, si[j]]
        nz = n_bins ** si.shape[0]
        cell = (z * n_bins + bins[:, xi]) * n_bins + bins[:, yi]
        cnt = jax.ops.segment_sum(jnp.ones(n, fdt), cell, nz * n_bins * n_bins)
        cnt = cnt.reshape(nz, n_bins, n_bins)
        m = cnt.sum(axis=(1, 2))
        u = jax.vmap(_u_stat_cells)(cnt, cnt.sum(axis=2), cnt.sum(axis=1), m)
        return jnp.sum(m / n * u)

    return jax.vmap(one)(x, y, s)


def binned_u_statistic(
    data: Float[Array, "n d"],
    x: Int[Array, " b"],
    y: Int[Array, " b"],
    s: Int[Array, "b k"],
    *,
    n_bins: int = 4,
) -> CIResult:
    r"""Nonparametric CI statistic: equal-frequency binning plus a per-bin unbiased U-statistic.

    Every variable is cut into ``n_bins`` equal-frequency bins; for each bin ``z`` of ``S`` with ``m_z``
    samples the U-statistic :math:`U_z` is the unbiased estimate (falling factorials of the counts) of

    .. math:: \sum_{a,b}\bigl(p_{ab|z} - p_{a|z}p_{b|z}\bigr)^2, \qquad T = \sum_z \frac{m_z}{n} U_z.

    ``T`` has mean 0 under conditional independence (up to binning error) and is thresholded by the
    poly-forest learner (Neykov, Balakrishnan & Wasserman line). No p-value is attached: ``pvalue`` is
    ``1`` where ``T <= 0`` and ``0`` otherwise, so callers should threshold ``statistic``.

    Args:
      data: ``(n, d)`` continuous data.
      x, y: ``(b,)`` int indices; s: ``(b, k)`` conditioning sets.
      n_bins: bins per variable.

    Returns:
      :class:`CIResult` (``dof = -1``).

    References:
      Neykov, Balakrishnan & Wasserman, Ann. Statist. 49 (2021); Gao, Wang & Aragam, arXiv:2507.05689 (Thm 5.1).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.structure import binned_u_statistic
      >>> x = jax.random.normal(jax.random.key(2), (2000, 2))
      >>> data = jnp.stack([x[:, 0], jnp.tanh(2 * x[:, 0]) + 0.3 * x[:, 1]], axis=1)
      >>> res = binned_u_statistic(data, jnp.array([0]), jnp.array([1]), jnp.zeros((1, 0), jnp.int32))
      >>> bool(res.statistic[0] > 0.05)
      True
    """
    _check_batch(x, y, s)
    if n_bins < 2:
        raise ValueError(f"n_bins must be >= 2, got {n_bins=}")
    bins = _rank_bins(data, n_bins).astype(jnp.int32)
    stat = _u_kernel(bins, x, y, s, n_bins=n_bins)
    p = jnp.where(stat > 0, 0.0, 1.0).astype(stat.dtype)
    return CIResult(stat, p, jnp.full(x.shape, -1, jnp.int32))


@jax.jit
def _dsep_kernel(dag, x, y, s, k=None):
    """``k``: optional true set size (traced); columns ``>= k`` of ``s`` are ignored."""
    d = dag.shape[0]
    valid = jnp.ones((s.shape[1],), bool) if k is None else jnp.arange(s.shape[1], dtype=jnp.int32) < k
    a = dag.astype(jnp.int32)
    # ancestors closure: anc[i, j] = j is an ancestor of i (or i itself)
    reach = jnp.eye(d, dtype=jnp.int32) | a.T

    def body(carry):
        r, _ = carry
        r2 = jnp.minimum(r @ r, 1) | r
        return r2, jnp.any(r2 != r)

    anc, _ = jax.lax.while_loop(lambda c: c[1], body, (reach, jnp.array(True)))

    def one(xi, yi, si):
        cond = jnp.zeros(d, bool).at[si].max(valid)
        members = cond.at[xi].set(True).at[yi].set(True)
        in_an = jnp.any(members[:, None] & (anc > 0), axis=0)  # ancestral set of {x, y} ∪ S
        sub = a * (in_an[:, None] & in_an[None, :]).astype(jnp.int32)
        moral = (sub + sub.T + sub @ sub.T) > 0
        moral = moral & ~jnp.eye(d, dtype=bool)
        keep = in_an & ~cond
        moral = moral & keep[:, None] & keep[None, :]
        start = jnp.zeros(d, bool).at[xi].set(True)

        def step(c):
            r, _ = c
            r2 = r | jnp.any(moral & r[:, None], axis=0)
            return r2, jnp.any(r2 != r)

        r, _ = jax.lax.while_loop(lambda c: c[1], step, (start, jnp.array(True)))
        return ~r[yi]

    return jax.vmap(one)(x, y, s)


def d_separation(
    dag: Bool[Array, "d d"],
    x: Int[Array, " b"],
    y: Int[Array, " b"],
    s: Int[Array, "b k"],
) -> CIResult:
    r"""d-separation oracle: ``p = 1`` if ``x ⫫_d y | S`` in ``dag`` and ``p = 0`` otherwise.

    Uses the moral-ancestral criterion (Lauritzen): ``x`` and ``y`` are d-separated by ``S`` iff they are
    disconnected in the moral graph of :math:`\mathrm{An}(\{x,y\}\cup S)` after deleting ``S``.

    Args:
      dag: ``(d, d)`` bool adjacency, ``dag[i, j]`` meaning ``i -> j``.
      x, y: ``(b,)`` int indices; s: ``(b, k)`` conditioning sets.

    Returns:
      :class:`CIResult` with ``statistic = pvalue = 1.0`` for separated triples, else ``0.0``.

    References:
      Lauritzen et al., Networks 20 (1990); causal-learn ``D_Separation``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import d_separation
      >>> dag = jnp.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], bool)  # 0 -> 1 -> 2
      >>> res = d_separation(dag, jnp.array([0, 0]), jnp.array([2, 2]), jnp.array([[1], [1]]))
      >>> res.pvalue.tolist()
      [1.0, 1.0]
    """
    _check_batch(x, y, s)
    sep = _dsep_kernel(dag.astype(bool), x, y, s)
    p = sep.astype(_float_dtype())
    return CIResult(p, p, jnp.full(x.shape, -1, jnp.int32))
