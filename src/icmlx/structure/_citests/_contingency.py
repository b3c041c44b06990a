"""The contingency-table engine of the discrete CI tests: counting plans and kernels for X² and G².

A batch of tests is planned on the host (`_chi_square_groups`): small and medium tables are counted by one
scatter of the samples into a dense ``(strata, K, K)`` table (AND + popcount of per-category bitsets is an opt-in
alternative for the smallest, `BITS_MIN_TESTS`), and large products of cardinalities per sample: each sample's
cell, row, column and stratum counts come from scatters into flat buffers of the test's own cells while those
fit (`._flat_counts`, O(n) per test), else from sorting the codes (`_sorted_stat_dof`), so neither the product
of the conditioning cardinalities nor the ``kmax^2`` cells of a stratum are ever scanned. On high-cardinality
data (tens to a hundred categories) the tables of the older per-sample plans (strata re-ranked into
``(strata, kmax, kmax)`` tables, kept behind `SORTED_PLANS`) were mostly empty and dominated the run.
`icmlx.structure.chi_square` and PC's tester both dispatch through
`_chi_square_plan`.

Compile once: every static size is a coarse bucket. The sample axis is padded to a power of four with headroom,
reusing a length already compiled in the process (`pad_samples` states the rule), and the true ``n`` is a
traced argument (the counting loops run over ``ceil(n / chunk)`` chunks and mask the rest), so a new ``n``
reuses every program; flat tables, dense strata and
strata code bounds are rounded up to a few sizes (`_plan_bucket`); conditioning sets are padded with a
constant variable to one width per plan kind; p-values of statistics read back to the host are computed there
(`_chi2_pvalue_host`, the closed-form series of `._chi2_tail`), so they compile nothing.
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from ..._buckets import size_bucket
from ..._checks import default_float_dtype
from . import _flat_counts
from ._batched import _BatchedTest, _bucket, _pad_dim, _to_host
from ._chi2_tail import chi2_sf, chi2_sf_host
from ._flat_counts import _chi_square_flat_kernel
from ._sorted_counts import _sorted_stat_dof, _sorted_wide_batch

__all__: list[str] = []


def _dense_codes(codes):
    """Map arbitrary int codes (n,) to dense 0..m-1 ranks of their distinct values (m <= n_max)."""
    order = jnp.argsort(codes)
    sc = codes[order]
    new = jnp.concatenate([jnp.zeros((1,), bool), sc[1:] != sc[:-1]])
    dense_sorted = jnp.cumsum(new.astype(jnp.int32))
    return jnp.zeros_like(dense_sorted).at[order].set(dense_sorted)


def _pow2(v: int) -> int:
    return size_bucket(v)


def _stratum_codes(data_t, cards, s, mode, live):
    """Mixed-radix stratum code of every sample (Horner form with the true cardinalities); padding samples
    (``~live``) get sample 0's code, so they add no stratum."""
    stratum = jnp.zeros((s.shape[0], data_t.shape[1]), data_t.dtype)
    for j in range(s.shape[1]):  # static unroll over |S| columns
        stratum = stratum * cards[s[:, j]][:, None] + data_t[s[:, j]]
        if mode == "sort_each":
            stratum = jax.vmap(_dense_codes)(jnp.where(live, stratum, stratum[:, :1]))
    stratum = jnp.where(live, stratum, stratum[:, :1])
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


@jax.jit
def _chi2_pvalue(stat, dof):
    """Upper tail of χ²_dof at ``stat`` on the device (`._chi2_tail.chi2_sf`); 1 where dof = 0
    (causal-learn's rule). Used where the statistics stay on the device (sharded batches)."""
    return jnp.where(dof == 0, 1.0, chi2_sf(stat, jnp.maximum(dof, 1))).astype(stat.dtype)


def _chi2_pvalue_host(stat, dof) -> np.ndarray:
    """`_chi2_pvalue` on the host in float64 (`._chi2_tail.chi2_sf_host`): no device program, for
    statistics that are read back anyway."""
    dof = np.asarray(dof)
    return np.where(dof == 0, 1.0, chi2_sf_host(stat, np.maximum(dof, 1)))


BITS_CELLS = 64  # largest flat table (pow2 of prod card(S) * card x * card y) counted with bitsets
# Bitset counting is off by default (None); a number turns it on for batches with at least that many qualifying
# tests. Since the dense kernel zeroes its table in place, the two plans count these small tables at about the same
# speed on CPU (benchmarks/structure_chi2_plans.py, the results beside it), while bitsets compile two programs of
# their own, so a fresh process is better off without them. It stays as a tested alternative kernel; whether it
# pays on a GPU, where scatters contend and popcounts are cheap, has not been measured.
BITS_MIN_TESTS: int | None = None
DENSE_CELLS = 2**17  # largest dense (strata, kmax, kmax) table of one test (else strata are re-ranked)


@functools.partial(jax.jit, static_argnames=("kmax",))
def _pack_bits(data_t, n, kmax):
    """``(d, n_pad)`` category codes (``n_pad`` a multiple of 32) -> ``(d, kmax, n_pad / 32)`` uint32 indicator
    bitsets (sample ``i`` is bit ``i % 32`` of word ``i // 32``; bits of samples ``>= n``, traced, are zero)."""
    d, n_pad = data_t.shape
    w = n_pad // 32
    live = jnp.arange(n_pad, dtype=jnp.int32) < n
    onehot = (data_t[:, None, :] == jnp.arange(kmax, dtype=data_t.dtype)[None, :, None]) & live
    onehot = onehot.reshape(d, kmax, w, 32).astype(jnp.uint32)
    return jnp.sum(onehot << jnp.arange(32, dtype=jnp.uint32), axis=-1, dtype=jnp.uint32)  # disjoint bits: sum = or


def _flat_geometry(cards, xi, yi, n_cells):
    """Flat cell ``c = r * cxy + a * cy + b`` (stratum ``r``, x = a, y = b) -> its parts, for one test."""
    cy = cards[yi]
    cxy = cards[xi] * cy
    c = jnp.arange(n_cells, dtype=cards.dtype)
    q = c % cxy
    return c // cxy, q // cy, q % cy


def _flat_counts_bits(bits, cards, xi, yi, si, n_cells, n):
    """Counts ``(n_cells,)`` of the flat table of one test by AND + popcount of indicator bitsets
    (``n_cells * n / 32`` word operations, no per-sample work), over ``ceil(n / 32)`` words (``n`` traced) in
    chunks of a sixteenth of the padded words."""
    kmax, w = bits.shape[1], bits.shape[2]
    cw = w // 16 if w % 16 == 0 else w
    r, a, b = _flat_geometry(cards, xi, yi, n_cells)
    a = jnp.minimum(a, kmax - 1)
    cats, stride = [], jnp.ones((), cards.dtype)
    for j in range(si.shape[0]):  # digit j of the stratum's mixed-radix code selects the category of S_j
        c = cards[si[j]]
        cats.append(jnp.minimum((r // stride) % c, kmax - 1))
        stride = stride * c
    live = r < stride

    def rows(v, off):
        v = v.astype(jnp.int32)
        return jax.lax.dynamic_slice(bits, (v, jnp.zeros_like(v), off.astype(jnp.int32)), (1, kmax, cw))[0]

    def chunk(i, acc):
        off = i * cw
        words = rows(xi, off)[a] & rows(yi, off)[b]
        # static unroll over the (padded) |S|: a dynamic loop would carry the (cells, words) block through memory
        for j in range(si.shape[0]):
            words = words & rows(si[j], off)[cats[j]]
        return acc + jnp.sum(jax.lax.population_count(words), axis=-1, dtype=jnp.int32)

    counts = jax.lax.fori_loop(0, (n + 32 * cw - 1) // (32 * cw), chunk, jnp.zeros(n_cells, jnp.int32))
    return jnp.where(live, counts, 0)


def _dense_table_scatter(buf, data_t, cards, xi, yi, si, k, n, kmax):
    """Add the contingency table of one test into the zeroed flat buffer ``buf`` (``rows * kmax * kmax`` int32
    cells; stratum by mixed-radix code of ``S = si[:k]``, ``k`` dynamic) by scatter-adds of the first ``n``
    (traced) samples, in chunks of a sixteenth of the padded sample axis."""
    n_pad = data_t.shape[1]
    ch = n_pad // 16 if n_pad % 16 == 0 else n_pad
    size = buf.shape[0]

    def chunk(i, counts):
        off = i * ch

        def col(v):
            return jax.lax.dynamic_slice(data_t, (v.astype(jnp.int32), off.astype(jnp.int32)), (1, ch))[0]

        code = jax.lax.fori_loop(0, k, lambda j, code: code * cards[si[j]] + col(si[j]), jnp.zeros(ch, data_t.dtype))
        cell = (code * kmax + col(xi)) * kmax + col(yi)
        live = off + jnp.arange(ch, dtype=jnp.int32) < n
        return counts.at[jnp.where(live, cell, size)].add(1, mode="drop")  # padding samples: dropped

    return jax.lax.fori_loop(0, (n + ch - 1) // ch, chunk, buf)


def _dense_stat_dof(buf, n_strata, chunk, kmax, g_square):
    """X² (or G²) and dof of the table in ``buf`` over its first ``n_strata`` (traced) strata, ``chunk`` strata
    per step; each chunk is zeroed after it is read, so ``buf`` is clean for the next test (the work follows the
    table's true size, not the buffer's)."""
    fdt = default_float_dtype()
    cells = chunk * kmax * kmax

    def step(c, acc):
        st, df, b = acc
        tab = jax.lax.dynamic_slice_in_dim(b, c * cells, cells).reshape(1, chunk, kmax, kmax)
        s_c, d_c = _table_stat_dof(tab.astype(fdt), g_square)
        # the zeroing's offset depends on both statistics of the chunk through a term that is always 0 (no float,
        # NaN included, exceeds inf; dof is a sum of products of counts >= 1, minus 1): XLA then orders the zeroing
        # after every read of the chunk and updates ``b`` in place. With an independent offset it copied the whole
        # buffer at every step, a cost per test that grew with the buffer, not with the table.
        order = (s_c[0] > jnp.inf) | (d_c[0] < 0)
        off = c * cells + order.astype(jnp.int32)
        return st + s_c[0], df + d_c[0], jax.lax.dynamic_update_slice_in_dim(b, jnp.zeros(cells, b.dtype), off, 0)

    init = (jnp.zeros((), fdt), jnp.zeros((), jnp.int32), buf)
    return jax.lax.fori_loop(0, (n_strata + chunk - 1) // chunk, step, init)


def _flat_stat_dof(counts, cards, xi, yi, *, kmax, g_square):
    """X² (or G²) and causal-learn's dof of one test from its flat table (strata with no sample are dropped)."""
    fdt = default_float_dtype()
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


@functools.partial(jax.jit, static_argnames=("kmax", "g_square", "size", "use_bits", "chunk"))
def _chi_square_table_kernel(table, cards, x, y, s, m, k, n, *, kmax, g_square, size, use_bits, chunk=1):
    """Batched χ²/G² statistic and dof, one test per loop step (its working set stays in cache).

    ``use_bits``: ``table`` is the bitset stack and ``size`` the flat table size (bitset counting); else
    ``table`` holds the ``(d, n)`` codes and ``size`` the largest number of strata of a dense
    ``(strata, kmax, kmax)`` table, filled by one scatter of the samples into a buffer carried through the loop;
    only the test's ``prod card(S)`` strata are read (and zeroed again), ``chunk`` at a time, so one compilation
    serves every dense table size. Only the first ``m`` (dynamic) of the ``b`` padded tests are computed: one
    compilation serves every batch up to ``b``. Dense tables use the conditioning sets ``s[:, :k]`` (``k``
    dynamic: every ``|S|`` up to the width of ``s`` shares a compilation); bitset counting uses all of ``s``
    (padded with a constant variable of one category). ``n`` (traced) is the number of real samples; the rest of
    the padded sample axis is ignored.
    """
    fdt = default_float_dtype()
    b = x.shape[0]
    if use_bits:
        def body(i, out):
            counts = _flat_counts_bits(table, cards, x[i], y[i], s[i], size, n)
            st, df = _flat_stat_dof(counts, cards, x[i], y[i], kmax=kmax, g_square=g_square)
            return out[0].at[i].set(st), out[1].at[i].set(df)

        return jax.lax.fori_loop(0, m, body, (jnp.zeros(b, fdt), jnp.zeros(b, jnp.int32)))

    def dense_body(i, out):
        stat, dof, buf = out
        buf = _dense_table_scatter(buf, table, cards, x[i], y[i], s[i], k, n, kmax)
        strata = jnp.prod(cards[s[i]])  # the padding columns are the constant variable (one category)
        st, df, buf = _dense_stat_dof(buf, strata, chunk, kmax, g_square)
        return stat.at[i].set(st), dof.at[i].set(df), buf

    init = (jnp.zeros(b, fdt), jnp.zeros(b, jnp.int32), jnp.zeros(size * kmax * kmax, jnp.int32))
    stat, dof, _ = jax.lax.fori_loop(0, m, dense_body, init)
    return stat, dof


@functools.partial(jax.jit, static_argnames=("kmax", "g_square", "n_strata", "mode", "code_bound"))
def _chi_square_loop_kernel(data_t, cards, x, y, s, m, n, *, kmax, g_square, n_strata, mode, code_bound):
    """`_chi_square_kernel`'s statistic and dof one test per loop step (cache-resident counting tables),
    for the first ``m`` (dynamic) of ``b`` padded tests."""
    fdt = default_float_dtype()
    b = x.shape[0]

    def body(i, out):
        st, df = _chi_square_stat_dof(
            data_t, cards, x[i][None], y[i][None], s[i][None], n, kmax=kmax, g_square=g_square, n_strata=n_strata,
            mode=mode, code_bound=code_bound,
        )
        return out[0].at[i].set(st[0]), out[1].at[i].set(df[0])

    return jax.lax.fori_loop(0, m, body, (jnp.zeros(b, fdt), jnp.zeros(b, jnp.int32)))


def _chi_square_stat_dof(data_t, cards, x, y, s, n_live, *, kmax, g_square, n_strata, mode, code_bound):
    """data_t: (d, n) integer codes (transposed so that a variable is one contiguous row); cards: (d,) int;
    only the first ``n_live`` (traced) samples count (padding samples get weight 0 and sample 0's stratum).

    Per-sample form (no dense (strata, K, K) arithmetic): with O, r, c, m the counts of a sample's cell,
    row, column and stratum, sum_{E>0} (O-E)^2/E = sum_i O_i m_i / (r_i c_i) - n and
    G^2 = 2 sum_i log(O_i m_i / (r_i c_i)).
    """
    fdt = default_float_dtype()
    b = x.shape[0]
    if mode == "sorted_wide":
        return _sorted_wide_batch(data_t, x, y, s, n_live, n_strata, g_square=g_square)
    if mode in ("sorted", "sorted_each"):
        # only the first n_strata (a static bucket >= the true n) samples: the sorts' cost follows n, not n_pad
        n = n_strata
        live = jnp.arange(n, dtype=jnp.int32) < n_live
        xv, yv = data_t[x, :n], data_t[y, :n]
        if mode == "sorted_each":
            stratum = _stratum_codes(data_t[:, :n], cards, s, "sort_each", live)
        else:
            stratum = jnp.zeros((b, n), data_t.dtype)
            for j in range(s.shape[1]):  # static unroll over |S| columns
                stratum = stratum * cards[s[:, j]][:, None] + data_t[s[:, j], :n]
        one = functools.partial(_sorted_stat_dof, g_square=g_square, rank_strata=code_bound != 1)
        stat, dof = jax.vmap(one, in_axes=(0, 0, 0, None, None, 0, 0))(
            xv, yv, stratum, live, n_live, cards[x], cards[y])
        return stat, dof.astype(jnp.int32)
    n = data_t.shape[1]
    xv = data_t[x]
    yv = data_t[y]
    live = jnp.arange(n, dtype=jnp.int32) < n_live
    stratum = _stratum_codes(data_t, cards, s, mode, live)
    if mode == "scatter":
        rows_b = jnp.arange(b)[:, None]
        present = jnp.zeros((b, code_bound), jnp.int32).at[rows_b, stratum].set(1)
        rank = jnp.cumsum(present, axis=1) - 1
        stratum = jnp.take_along_axis(rank, stratum, axis=1)
    off = jnp.arange(b, dtype=xv.dtype)[:, None]
    # int32 scatter-adds are faster than float64 ones on CPU; padding samples add 0
    ones = jnp.broadcast_to(live.astype(jnp.int32), (b, n)).reshape(-1)
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
    ratio = jnp.where(live, o_i * m_i / jnp.where(live, r_i * c_i, 1.0), 1.0)
    if g_square:
        stat = 2.0 * jnp.sum(jnp.log(ratio), axis=1)
    else:
        stat = jnp.maximum(jnp.sum(jnp.where(live, ratio, 0.0), axis=1) - n_live.astype(fdt), 0.0)
    nzr = jnp.sum(rtab.reshape(b, n_strata, kmax) > 0, axis=2)
    nzc = jnp.sum(ctab.reshape(b, n_strata, kmax) > 0, axis=2)
    dof = jnp.sum(jnp.where(mtab.reshape(b, n_strata) > 0, (nzr - 1) * (nzc - 1), 0), axis=1).astype(jnp.int32)
    return stat, dof


@functools.partial(jax.jit, static_argnames=("kmax", "g_square", "n_strata", "mode", "code_bound"))
def _chi_square_kernel(data_t, cards, x, y, s, n, *, kmax, g_square, n_strata, mode, code_bound):
    """Batched (vectorised over tests, e.g. sharded) χ²/G²: statistic and dof."""
    return _chi_square_stat_dof(
        data_t, cards, x, y, s, n, kmax=kmax, g_square=g_square, n_strata=n_strata, mode=mode, code_bound=code_bound
    )


def _log2_strata(cards, s) -> np.ndarray:
    """Host-side: log2 of the product of the cardinalities of each conditioning set, shape ``(b,)``."""
    return np.log2(np.asarray(cards, np.float64))[np.asarray(s)].sum(axis=1)


def _kmax_bucket(max_card) -> int:
    """Table side for categories ``0..max_card-1``: a power of two >= 2 (fewer compilations)."""
    return size_bucket(max_card, minimum=2)


_INT32_MAX = 2**31 - 1
HEADROOM_CELLS = 2**22  # padded (rows x samples) up to which the first call leaves room for twice its samples
_SAMPLE_BUCKETS: set[int] = set()  # sample-axis lengths this process has used (its programs are compiled)


def pad_samples(n: int, rows: int = 1) -> int:
    """Padded length ``B`` of the sample axis (a power of four >= 256) for ``n`` samples of ``rows`` variables.

    The rule that lets a later call with another ``n`` (same ``d``) reuse every compiled program:

    1. a length this process already used is reused when ``n <= B <= 16 n`` (the smallest such);
    2. else ``B`` is the smallest power of four >= ``2n``, or >= ``n`` when ``2n * rows`` exceeds
       `HEADROOM_CELLS` (large data: memory first).

    So after a first call with ``n`` samples, any ``n'`` in ``[n/2, 2n]`` reuses its programs (``[n/4, n]`` and
    the rest of the bucket for large data). The counting loops run over the true ``n`` in chunks of ``B/16``, so
    the padding costs memory, not work (less than one chunk, at most ``n``).
    """
    fits = [b for b in _SAMPLE_BUCKETS if n <= b <= 16 * max(n, 16)]
    if fits:
        return min(fits)
    want = 2 * n if 2 * n * rows <= HEADROOM_CELLS else n
    b = size_bucket(want, minimum=256, growth=4)
    _SAMPLE_BUCKETS.add(b)
    return b


def _pad_codes(codes: np.ndarray, n_pad: int, rows: int | None = None) -> np.ndarray:
    """``(d, n)`` int codes -> ``(rows, n_pad)`` int32, zero-filled (extra rows are constant variables)."""
    d, n = codes.shape
    out = np.zeros((d if rows is None else rows, n_pad), np.int32)
    out[:d, :n] = codes
    return out


def _bits_width() -> int:
    """Width of the padded conditioning sets of bitset plans (cards >= 2: |S| <= log2(BITS_CELLS) - 2)."""
    return max(int(math.log2(BITS_CELLS)) - 2, 1)


def _dense_top(kmax: int) -> int:
    return max(DENSE_CELLS // (kmax * kmax), 1)


def _dense_width(kmax: int) -> int:
    """Width of the padded conditioning sets of dense plans (cards >= 2: |S| <= log2 of the largest strata)."""
    return max(4, _dense_top(kmax).bit_length() - 1)


def _plan_bucket(plan: tuple, kmax: int, n_pad: int) -> tuple:
    """Round a plan's static sizes up to a few buckets, so that one compilation serves many table sizes.

    Bitset tables: one size, `BITS_CELLS` rounded up to a power of four (a small table costs a few more
    word operations, far less than a compilation). Dense tables: one buffer of the largest strata count
    ``DENSE_CELLS / kmax^2`` (the kernel reads only each test's own strata, see `_dense_chunk`).
    """
    kind = plan[0]
    if kind == "bits":
        return ("bits", size_bucket(max(plan[1], BITS_CELLS), minimum=16, growth=4))
    if kind == "dense1":
        return ("dense1", max(_dense_top(kmax), plan[1]))
    return plan


def _dense_chunk(kmax: int, n_pad: int) -> int:
    """Strata per step of the dense tables' arithmetic: a power of two near the count whose table arithmetic
    matches a quarter of one chunk of the sample scatter (most tables of a PC run have a few strata, and every
    step does a whole chunk's arithmetic; smaller steps add loop overhead where large tables dominate). Paired on
    alarm, insurance and child (n = 10^4), a quarter was 10-30% faster than a whole chunk; an eighth no faster."""
    return min(_pow2(max(n_pad // (64 * kmax * kmax), 1)), _dense_top(kmax))


#: Per-sample counting by sorting (`_sorted_stat_dof`) for every table too large for the dense plan; ``False``
#: restores the table-based per-sample plans (an independent code path, compared in the tests). On pgmpy's mildew
#: network (n = 5,000, up to 100 categories) sorting took a PC run from 81 s to 5.2 s, 2.3x causal-learn's speed
#: at about half its memory (``python benchmarks/structure_scale.py --highcard-only --bif mildew.bif``).
SORTED_PLANS = True


def _strata_plan(n: int, kmax: int, bound: int, n_true: int | None = None) -> tuple[str, int, int]:
    """How to index the strata of a batch whose mixed-radix stratum codes lie below ``bound`` (the product of
    the conditioning variables' cardinalities, largest over the batch), ``n`` the padded sample count.

    Returns ``(mode, n_strata, code_bound)`` (all static): ``"dense"`` (a ``(n_strata, K, K)`` table per test),
    ``"sorted"`` / ``"sorted_each"`` (`_sorted_stat_dof` over the first ``n_strata`` samples, a bucket of the true
    ``n_true`` with four rungs per octave; ``_each``: strata codes past int32, re-ranked after every column) when
    `SORTED_PLANS`, or ``"sorted_wide"`` (`_sorted_stat_dof_wide`: keys sorted as tuples, no integer codes) when
    the cell codes of ``n_strata`` strata, ``n_strata kmax^2``, would pass int32; else
    ``"scatter"`` (codes re-ranked through a ``code_bound`` presence table, then per-sample counting over at most
    ``n_strata <= n`` observed strata), ``"sort"`` (codes re-ranked by one sort) or ``"sort_each"`` (codes do not
    fit in int32: re-ranked after every column), while their tables of ``n_strata kmax^2`` cells have int32
    indices. Code bounds are powers of four (fewer compilations).
    """
    nb = size_bucket(bound, growth=4)
    if nb * kmax * kmax <= max(2 * n, 4096):
        return "dense", nb, nb
    length = size_bucket(n_true, minimum=256, steps=4, maximum=n) if n_true is not None else n
    if SORTED_PLANS and length * kmax * kmax < 2**31:
        # code_bound 1: raw stratum codes times kmax^2 fit in int32, so the strata need no re-ranking
        return ("sorted" if bound < 2**31 else "sorted_each"), length, int(nb * kmax * kmax < 2**31)
    if SORTED_PLANS or (min(n, nb) if nb <= 2**16 else n) * kmax * kmax >= 2**31:
        return "sorted_wide", length, 0
    if nb <= 2**16:
        return "scatter", min(n, nb), nb
    if bound < 2**31:
        return "sort", n, 0
    return "sort_each", n, 0


def _chi_square_plan(plan, data_t, bits, cards, x, y, s, m, n, *, const, kmax, g_square, vectorised=False):
    """Statistic and dof of one plan group of `_chi_square_groups` (host-side dispatch, NumPy indices).

    ``data_t`` is ``(d, n_pad)`` (see `pad_samples`), ``n`` the true sample count (traced). ``"bits"`` /
    ``"dense1"`` plans run the per-test table kernel, with ``s`` padded with the constant variable ``const`` to
    one width per plan kind (``|S|`` is a dynamic bound for dense tables); strata plans run the per-sample
    kernel, one test per loop step, or vectorised over the batch (``vectorised``, for sharded batches). Only
    the first ``m`` tests of the loop kernels are computed.
    """
    k = np.int32(s.shape[1])
    n = np.int32(n)
    if plan[0] == "flat":
        return _chi_square_flat_kernel(data_t, cards, x, y, _pad_sets(s, const), m, n, g_square=g_square,
                                       cells=plan[1], length=plan[2])
    if plan[0] in ("bits", "dense1"):
        use_bits = plan[0] == "bits"
        width = _bits_width() if use_bits else _dense_width(kmax)
        return _chi_square_table_kernel(
            bits if use_bits else data_t, cards, x, y, _pad_sets(s, const, width), m, k, n, kmax=kmax,
            g_square=g_square, size=plan[1], use_bits=use_bits,
            chunk=1 if use_bits else min(_dense_chunk(kmax, data_t.shape[1]), plan[1]),
        )
    mode, n_strata, bound = plan
    kw = dict(kmax=kmax, g_square=g_square, n_strata=n_strata, mode=mode, code_bound=bound)
    if vectorised:
        return _chi_square_kernel(data_t, cards, x, y, s, n, **kw)
    return _chi_square_loop_kernel(data_t, cards, x, y, _pad_sets(s, const), m, n, **kw)


def _pad_sets(s: np.ndarray, const: int, width: int | None = None) -> np.ndarray:
    """Pad conditioning sets ``(m, k)`` with the constant variable ``const`` to ``width`` columns (default
    ``max(4, pow2(k))``)."""
    m, k = s.shape
    kb = size_bucket(k, minimum=4) if width is None else max(width, k)
    return np.concatenate([s, np.full((m, kb - k), const, s.dtype)], axis=1)


def _chi_square_groups(cards_np, x, y, s, n: int, kmax: int, sharded: bool = False, n_true: int | None = None):
    """Host-side plan of a batch of χ² tests: ``[(indices, plan), ...]`` (``n`` the padded sample count).

    Bitset counting (when `BITS_MIN_TESTS` turns it on) when the flat table
    ``C = pow2(prod card(S) * card x * card y) <= BITS_CELLS`` (``("bits", C)``) and at least
    `BITS_MIN_TESTS` tests of the batch qualify; else a dense table of
    ``R = pow2(prod card(S))`` strata filled by scatters of the samples when ``R * kmax^2 <= DENSE_CELLS``
    (``("dense1", R)``); else the per-sample strata plans of `_strata_plan` by ``R`` (also used for
    every test of a sharded batch, whose kernel is vectorised).
    Sizes are then rounded up to buckets (`_plan_bucket`) and groups of the same bucket merged.
    """
    lr = _log2_strata(cards_np, s)
    lc = np.ceil(lr + np.log2(cards_np[x] * cards_np[y]) - 1e-9).astype(np.int64)
    lr = np.ceil(lr - 1e-9).astype(np.int64)
    bits = (lc <= int(math.log2(BITS_CELLS))) & (not sharded)
    if BITS_MIN_TESTS is None or bits.sum() < BITS_MIN_TESTS:  # off, or too few to repay its compilation
        bits[:] = False
    dense = (lr + 2 * int(math.log2(kmax)) <= int(math.log2(DENSE_CELLS))) & (not sharded) & ~bits
    cap = _flat_counts.FLAT_CELLS
    flat = (lc <= int(math.log2(max(cap, 1)))) & (cap > 0) & (not sharded) & ~bits & ~dense
    key = np.where(bits, lc, np.where(dense, 64 + lr, np.where(flat, 128 + lc, -1 - lr)))
    merged: dict[tuple, list] = {}
    for kb in np.unique(key):
        idx = np.nonzero(key == kb)[0]
        if kb >= 128:
            length = size_bucket(n_true, minimum=256, steps=4, maximum=n) if n_true is not None else n
            plan = ("flat", size_bucket(1 << int(kb - 128), minimum=2**12, growth=4), length)
        elif kb >= 64:
            plan = ("dense1", 1 << int(kb - 64))
        elif kb >= 0:
            plan = ("bits", 1 << int(kb))
        else:
            lb = int(-1 - kb)
            plan = _strata_plan(n, kmax, 1 << lb if lb < 62 else 2**62, n_true)
        merged.setdefault(_plan_bucket(plan, kmax, n), []).append(idx)
    return [(np.sort(np.concatenate(parts)), plan) for plan, parts in merged.items()]


class _ChiSquareEngine(_BatchedTest):
    """X² / G² tests on one integer-coded sample: the one orchestration behind `icmlx.structure.chi_square`
    and PC's ``ChiSquare`` / ``GSquare`` testers.

    The ``(d, n)`` codes are padded to a multiple of 16 variables (at least one padding row: a constant
    variable of one category that pads conditioning sets) and to a sample bucket (`pad_samples`; the
    kernels count the first ``n`` samples). Cardinalities are ``max code + 1``, at least 2 for every real
    variable (an empty category changes no statistic and no dof; a constant variable then has one observed
    category, so its tests have no degrees of freedom and ``p = 1``, causal-learn's rule). A batch is planned by
    `_chi_square_groups`, every group dispatched before any result is read back, and the p-values of the
    statistics read back are computed on the host (sharded batches compute them on the device).
    """

    lo = 64

    def __init__(self, codes: np.ndarray, *, g_square: bool, mesh=None, max_batch: int = 8192):
        super().__init__(mesh, max_batch)
        codes = np.asarray(codes)  # (n, d) codes 0..K-1
        n, d = codes.shape
        enc = np.ascontiguousarray(codes.T).astype(np.int32)
        self.n = n
        self.const = d
        rows = _pad_dim(d + 1)
        self.n_pad = pad_samples(n, rows)
        self.data = jax.device_put(_pad_codes(enc, self.n_pad, rows))  # device_put: no per-shape staging program
        cards = np.ones(rows, np.int64)
        if n > 0:
            cards[:d] = np.maximum(enc.max(axis=1) + 1, 2)
        self.cards_np = cards
        self.cards = jax.device_put(cards.astype(np.int32))
        self.kmax = _kmax_bucket(cards.max())
        self.bits = None  # indicator bitsets, packed when a batch first takes the bitset plan
        self.g_square = bool(g_square)
        self.per_test = 12 * n

    def _cap(self, plan=None) -> int:
        per = self.per_test
        cells = 0
        if plan is not None:
            mode, ns, bound = plan if len(plan) == 3 else (plan[0], plan[1], 0)
            if not mode.startswith("sorted"):
                cells = ns * self.kmax**2
            per += 8 * ns if mode.startswith("sorted") else cells * (4 if mode != "dense" else 1) + bound
        cap = max(16, 1 << int(math.log2(max(2**24 // per, 16))))
        if cells:
            # the vectorised table kernels index the batch's tables side by side: b * cells must stay in int32
            cap = min(cap, 1 << max((_INT32_MAX // cells).bit_length() - 1, 0))
        return min(cap, self.max_batch)

    def _batch_size(self, m: int, plan) -> int:
        if self.mesh is None:  # loop kernels: one padded size for all, the work follows the true count m
            return self.max_batch
        return _bucket(m, self._cap(plan), 64 if plan[0] == "dense" else 16)

    def _kernel(self, xs, ys, ss, kk, plan, m):
        sharded = self.mesh is not None
        if sharded and not plan[0].startswith("sorted") and xs.shape[0] * plan[1] * self.kmax**2 > _INT32_MAX:
            raise ValueError(f"chi_square over a mesh of {self.mesh.size} devices: a batch of {xs.shape[0]} tables "
                             f"of {plan[1] * self.kmax**2:,} cells has more cells than int32 indexes "
                             f"({_INT32_MAX:,}); use fewer devices or run unsharded (mesh=None)")
        if plan[0] == "bits" and self.bits is None:
            self.bits = _pack_bits(self.data, np.int32(self.n), self.kmax)
        stat, dof = _chi_square_plan(
            plan, self.data, self.bits, self.cards, xs, ys, ss, np.int32(m), self.n, const=self.const,
            kmax=self.kmax, g_square=self.g_square, vectorised=sharded,
        )
        # unsharded: (stat, dof) come back to the host, where the p-values compile nothing
        return _chi2_pvalue(stat, dof) if sharded else (stat, dof)

    def _pending(self, x, y, s):
        groups = _chi_square_groups(self.cards_np, x, y, s, self.n_pad, self.kmax, self.mesh is not None, self.n)
        # dispatch every group before reading any result back: host work overlaps device work
        return [(idx, self._dispatch(x[idx], y[idx], s[idx], plan)) for idx, plan in groups]

    def stat_dof(self, x, y, s) -> tuple[np.ndarray, np.ndarray]:
        """Host statistics and dofs of a batch (unsharded engines)."""
        stat = np.zeros(x.shape[0], default_float_dtype())
        dof = np.zeros(x.shape[0], np.int32)
        for idx, chunks in self._pending(x, y, s):
            stat[idx] = np.concatenate([np.asarray(st)[:m] for (st, _), m in chunks])
            dof[idx] = np.concatenate([np.asarray(df)[:m] for (_, df), m in chunks])
        return stat, dof

    def pvalues(self, x, y, s) -> np.ndarray:
        if self.mesh is not None:
            out = np.empty(x.shape[0], dtype=np.float64)
            for idx, chunks in self._pending(x, y, s):
                out[idx] = np.concatenate([_to_host(p)[:m] for p, m in chunks])
            return out
        stat, dof = self.stat_dof(x, y, s)
        # float64 tail of the float32 statistic, rounded as the device p-value would be
        return _chi2_pvalue_host(stat, dof).astype(stat.dtype).astype(np.float64)
