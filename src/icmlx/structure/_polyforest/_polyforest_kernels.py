"""The score kernels of the poly-forest learner (`icmlx.structure.pc_tree`): for every pair ``(j, k)`` the
marginal score and the weakest score given one other node ``l``, chunked over ``l``, per CI test (Fisher-z,
Bernoulli χ², binned nonparametric, d-separation). Scores are "larger = more dependent"; the learner compares them
with its cut-offs.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import erfc, ndtri

from icmlx._progress import in_program_reporter

from ..._checks import default_float_dtype
from .._citests._dseparation import d_separated
from .._citests._gaussian import stable_correlation
from .._citests._nonparametric import pearson3_pvalue, rank_bins, stratum_stat_and_cumulants

__all__: list[str] = []


def _chunked_min(d, chunk, fn, report=None):
    """min/argmin over l of fn(L) -> (d, d, c) scores, scanning chunks of l (l == j or l == k masked)."""
    fdt = default_float_dtype()
    n_chunks = (d + chunk - 1) // chunk
    ls = jnp.arange(n_chunks * chunk, dtype=jnp.int32).reshape(n_chunks, chunk)
    j = jnp.arange(d, dtype=jnp.int32)[:, None, None]
    k = jnp.arange(d, dtype=jnp.int32)[None, :, None]

    def body(carry, xs):
        best, arg = carry
        step, L = xs
        if report is not None:  # static: only a program built with progress=True holds the callback
            report(step + 1, separators=jnp.minimum((step + 1) * chunk, d))
        Lc = jnp.minimum(L, d - 1)
        sc = fn(Lc)
        bad = (L[None, None, :] >= d) | (L[None, None, :] == j) | (L[None, None, :] == k)
        sc = jnp.where(bad, jnp.inf, sc)
        i = jnp.argmin(sc, axis=2)
        m = jnp.take_along_axis(sc, i[:, :, None], axis=2)[:, :, 0]
        upd = m < best
        return (jnp.where(upd, m, best), jnp.where(upd, L[i], arg)), None

    init = (jnp.full((d, d), jnp.inf, fdt), jnp.full((d, d), -1, jnp.int32))
    (best, arg), _ = jax.lax.scan(body, init, (jnp.arange(n_chunks, dtype=jnp.int32), ls))
    return best, arg


def _gauss_scores(data, alpha, threshold, chunk, report=None, n=None):
    """``data`` the ``(n, d)`` sample, or with ``n`` (traced) given its ``(d, d)`` correlation matrix."""
    fdt = default_float_dtype()
    if n is None:
        n, d = data.shape
        r = stable_correlation(data.astype(fdt))
    else:
        r, d = data, data.shape[0]

    def fn(L):
        rl = r[:, L]  # (d, c)
        num = r[:, :, None] - rl[:, None, :] * rl[None, :, :]
        den = jnp.sqrt(jnp.maximum((1 - rl**2)[:, None, :] * (1 - rl**2)[None, :, :], 1e-300))
        return jnp.abs(num / den)

    s1, arg = _chunked_min(d, chunk, fn, report)
    s0 = jnp.abs(r)
    if threshold is None:
        z = ndtri(1.0 - alpha / 2.0)
        cut0 = jnp.tanh(z / jnp.sqrt(jnp.asarray(n - 3, fdt)))
        cut1 = jnp.tanh(z / jnp.sqrt(jnp.asarray(n - 4, fdt)))
    else:
        cut0 = cut1 = jnp.asarray(threshold, fdt)
    return s0, s1, arg, cut0, cut1


def _bern_chi(n11, n1a, n1b, m):
    """Pearson chi^2 of a 2x2 table from n11, row-1 count, col-1 count, total (vectorised); returns (chi, ok)."""
    pa = n1a / jnp.maximum(m, 1.0)
    pb = n1b / jnp.maximum(m, 1.0)
    cov = n11 / jnp.maximum(m, 1.0) - pa * pb
    den = pa * (1 - pa) * pb * (1 - pb)
    ok = (m > 0) & (den > 0)
    chi = jnp.where(ok, m * cov**2 / jnp.where(ok, den, 1.0), 0.0)
    gap = jnp.abs(cov) * m
    return chi, ok, gap


#: Rows per step of the Bernoulli triple counts over a zero-padded sample (at least; 1/16 of the padded length).
_ROW_CHUNK = 256


def _bern_scores(data, alpha, threshold, chunk, report=None, n=None):
    """``n`` (traced) when ``data`` is zero-padded past its first ``n`` rows: every count below is a sum over the
    rows of ``x`` (a zero row adds nothing) or ``n`` minus one."""
    fdt = default_float_dtype()
    x = data.astype(fdt)
    d = x.shape[1]
    nn = jnp.asarray(x.shape[0] if n is None else n, fdt)
    n1 = jnp.sum(x, axis=0)
    n11 = x.T @ x

    def score(chi, dof, gap):
        if threshold is None:
            # chi^2 survival function for dof <= 2 in closed form (|S| <= 1 on binary data): dof 1 ->
            # erfc(sqrt(chi/2)), dof 2 -> exp(-chi/2); cheaper to compile than gammaincc
            p = jnp.where(dof == 0, 1.0, jnp.where(dof == 1, erfc(jnp.sqrt(chi / 2.0)), jnp.exp(-chi / 2.0)))
            return -p
        return gap / nn

    chi0, ok0, gap0 = _bern_chi(n11, n1[:, None], n1[None, :], nn)
    s0 = score(chi0, ok0.astype(jnp.int32), gap0)

    def triples(L):
        """Counts of j=1, k=1, l=1 (d, d, c)."""
        if n is None or x.shape[0] <= _ROW_CHUNK:
            return jnp.einsum("nj,nk,nl->jkl", x, x, x[:, L])
        # zero-padded sample: sum over the row chunks that hold the true n rows only (the padding rows are zero
        # and would cost as much as real ones); the counts are integers, so the sum is exact in any order
        rows = max(_ROW_CHUNK, x.shape[0] // 16)
        xr = x.reshape(-1, rows, d)

        def body(i, acc):
            xi = jax.lax.dynamic_index_in_dim(xr, i, keepdims=False)
            return acc + jnp.einsum("nj,nk,nl->jkl", xi, xi, xi[:, L])

        num_chunks = (jnp.asarray(n, jnp.int32) + rows - 1) // rows
        return jax.lax.fori_loop(0, num_chunks, body, jnp.zeros((d, d, L.shape[0]), fdt))

    def fn(L):
        xl = x[:, L]  # (n, c)
        m1 = jnp.sum(xl, axis=0)  # (c,)
        a1 = x.T @ xl  # (d, c): count j=1, l=1
        t1 = triples(L)  # j=1,k=1,l=1
        chi1, ok1, g1 = _bern_chi(t1, a1[:, None, :], a1[None, :, :], m1[None, None, :])
        chi0_, ok0_, g0 = _bern_chi(
            n11[:, :, None] - t1,
            (n1[:, None] - a1)[:, None, :],
            (n1[:, None] - a1)[None, :, :],
            (nn - m1)[None, None, :],
        )
        dof = ok1.astype(jnp.int32) + ok0_.astype(jnp.int32)
        return score(chi1 + chi0_, dof, g1 + g0)

    s1, arg = _chunked_min(d, chunk, fn, report)
    if threshold is None:
        cut0 = cut1 = jnp.asarray(-alpha, fdt)
    else:
        cut0 = cut1 = jnp.asarray(threshold, fdt)
    return s0, s1, arg, cut0, cut1


def _np_counts(data, num_bins, cond_bins):
    """The sample as one-hot bins ``(n + 1, d num_bins)`` (row ``n`` zero) and, per separator ``l``, the rows of
    its ``cond_bins`` strata ``(cond_bins size, d)`` (padded with row ``n``), for `_np_tables`."""
    fdt = default_float_dtype()
    n, d = data.shape
    a = num_bins
    xb = jax.nn.one_hot(rank_bins(data, a), a, dtype=fdt).reshape(n, d * a)
    xb = jnp.concatenate([xb, jnp.zeros((1, d * a), fdt)], axis=0)  # row n: padding
    order = jnp.argsort(data, axis=0, stable=True).astype(jnp.int32)  # (n, d): samples of column l by rank
    order = jnp.concatenate([order, jnp.full((1, d), n, jnp.int32)], axis=0)
    # rank r is in stratum r * cond_bins // n; pad every stratum to the largest size with position n
    size = -(-n // cond_bins)
    pos = np.full((cond_bins, size), n, np.int64)
    rk = np.arange(n)
    st = rk * cond_bins // n
    first = np.searchsorted(st, np.arange(cond_bins))
    pos[st, rk - first[st]] = rk
    order = order[jnp.asarray(pos.reshape(-1), jnp.int32)]  # (strata * size, d), padding rows -> zero row n
    return xb, order, size


def _np_tables(xb, order, L, *, num_bins, cond_bins, size):
    """``(m U, kappa2, kappa3)`` of every pair given each separator of ``L``, summed over its strata, (d, d, c).

    Counting per separator l is one Gram matrix per stratum of l: the samples are gathered in the rank order of
    column l, so the equal-frequency strata are contiguous row blocks of static sizes, and each block's
    ``(d num_bins) x (d num_bins)`` Gram matrix holds the count tables of every (j, k) pair: O(n d^2 num_bins^2)
    per l, whatever ``cond_bins``.
    """
    a = num_bins
    d = order.shape[1]
    xs = xb[order[:, L].T].reshape(L.shape[0], cond_bins, size, d * a)  # (c, strata, size, d a)
    cnt = jnp.einsum("lsna,lsnb->lsab", xs, xs).reshape(L.shape[0], cond_bins, d, a, d, a)
    cnt = cnt.transpose(2, 4, 0, 1, 3, 5)  # (d, d, c, strata, a, a)
    return tuple(v.sum(axis=3) for v in stratum_stat_and_cumulants(cnt))


def _np_scores(data, alpha, threshold, chunk, num_bins, cond_bins, report=None):
    """Binned U-statistics of all (j, k) pairs, marginally and given every single l (cond_bins strata)
    (`_np_tables`), in one program. With ``threshold`` the score is T; otherwise it is minus the asymptotic
    p-value of `icmlx.structure.nonparametric_test` (`np_pvalue_scores` computes those in two
    programs instead, one of which does not depend on ``n``).
    """
    fdt = default_float_dtype()
    n, d = data.shape
    a = num_bins
    xb, order, size = _np_counts(data, num_bins, cond_bins)
    nn = jnp.asarray(n, fdt)

    def score(mu, k2, k3):
        if threshold is not None:
            return mu / nn
        return -pearson3_pvalue(mu, k2, k3)

    c0 = (xb.T @ xb).reshape(d, a, d, a).transpose(0, 2, 1, 3)
    s0 = score(*stratum_stat_and_cumulants(c0))

    def fn(L):
        return score(*_np_tables(xb, order, L, num_bins=num_bins, cond_bins=cond_bins, size=size))

    s1, arg = _chunked_min(d, chunk, fn, report)
    if threshold is None:
        cut = jnp.asarray(-alpha, fdt)
    else:
        cut = jnp.asarray(threshold, fdt)
    return s0, s1, arg, cut, cut


#: Largest ``d^3`` for which `np_pvalue_scores` keeps the statistics of every (j, k, l) (3 floats each).
NP_STATS_CELLS = 2**24


@functools.partial(jax.jit, static_argnames=("chunk", "num_bins", "cond_bins", "progress"))
def _np_stats(data, *, chunk, num_bins, cond_bins, progress=False):
    """The statistics of `_np_tables` for every separator, ``(3, d, d, d + 1)``; the last column is the
    marginal one (no separator)."""
    n, d = data.shape
    a = num_bins
    xb, order, size = _np_counts(data, num_bins, cond_bins)
    c0 = (xb.T @ xb).reshape(d, a, d, a).transpose(0, 2, 1, 3)
    marginal = jnp.stack(stratum_stat_and_cumulants(c0))  # (3, d, d)
    n_chunks = -(-d // chunk)
    ls = jnp.minimum(jnp.arange(n_chunks * chunk, dtype=jnp.int32), d - 1).reshape(n_chunks, chunk)
    report = in_program_reporter("pc_tree", total=n_chunks) if progress else None

    def body(_, xs):
        step, L = xs
        if report is not None:  # static: only a program built with progress=True holds the callback
            report(step + 1, separators=jnp.minimum((step + 1) * chunk, d))
        return None, jnp.stack(_np_tables(xb, order, L, num_bins=num_bins, cond_bins=cond_bins, size=size))

    _, st = jax.lax.scan(body, None, (jnp.arange(n_chunks, dtype=jnp.int32), ls))  # (chunks, 3, d, d, chunk)
    st = jnp.moveaxis(st, 0, 3).reshape(3, d, d, n_chunks * chunk)[..., :d]
    return jnp.concatenate([st, marginal[..., None]], axis=-1)


@jax.jit
def _np_min_pvalues(stats, alpha):
    """Scores ``-p`` of `_np_scores` from the statistics of `_np_stats` (a program per ``d`` only)."""
    fdt = default_float_dtype()
    d = stats.shape[1]
    p = -pearson3_pvalue(stats[0], stats[1], stats[2])  # (d, d, d + 1)
    s1, arg = _chunked_min(d, d, lambda L: p[..., L])  # one chunk: every separator is already in p
    cut = jnp.asarray(-alpha, fdt)
    return p[..., d], s1, arg, cut, cut


def np_pvalue_scores(data, alpha, chunk, num_bins, cond_bins, progress=False):
    """The scores of `_scores` for ``ci_test="nonparametric"`` with ``alpha``, in two programs: the count
    statistics (one per ``n``: its strata sizes are static) and their p-values and minima over separators (one per
    ``d``), so a new ``n`` compiles no p-value code (the incomplete gamma function is most of the compilation).
    ``None`` when ``d^3`` is past `NP_STATS_CELLS` (the caller then uses `_scores`)."""
    d = data.shape[1]
    if d**3 > NP_STATS_CELLS:
        return None
    stats = _np_stats(data, chunk=chunk, num_bins=num_bins, cond_bins=cond_bins, progress=progress)
    return _np_min_pvalues(stats, alpha)


def _dsep_scores(dag, chunk, report=None):
    fdt = default_float_dtype()
    d = dag.shape[0]
    jj, kk = jnp.meshgrid(jnp.arange(d, dtype=jnp.int32), jnp.arange(d, dtype=jnp.int32), indexing="ij")
    jj, kk = jj.reshape(-1), kk.reshape(-1)
    e = jnp.zeros((d * d, 0), jnp.int32)
    s0 = jnp.where(d_separated(dag, jj, kk, e), 0.0, 1.0).astype(fdt).reshape(d, d)

    def fn(L):
        def per_l(l):
            sep = d_separated(dag, jj, kk, jnp.full((d * d, 1), l, jnp.int32))
            return jnp.where(sep, 0.0, 1.0).astype(fdt).reshape(d, d)

        return jnp.moveaxis(jax.lax.map(per_l, L), 0, 2)

    s1, arg = _chunked_min(d, chunk, fn, report)
    half = jnp.asarray(0.5, fdt)
    return s0, s1, arg, half, half


def gauss_kernel(data, alpha, threshold, chunk, report, n, num_bins, cond_bins):
    """`FisherZ`'s fused scores in the common kernel signature of `_scores`."""
    return _gauss_scores(data, alpha, threshold, chunk, report, n)


def bern_kernel(data, alpha, threshold, chunk, report, n, num_bins, cond_bins):
    """`Bernoulli`'s fused scores in the common kernel signature of `_scores`."""
    return _bern_scores(data, alpha, threshold, chunk, report, n)


def np_kernel(data, alpha, threshold, chunk, report, n, num_bins, cond_bins):
    """`Nonparametric`'s fused scores in the common kernel signature of `_scores`."""
    return _np_scores(data, alpha, threshold, chunk, num_bins, cond_bins, report)


def dsep_kernel(data, alpha, threshold, chunk, report, n, num_bins, cond_bins):
    """`DSeparation`'s fused scores in the common kernel signature of `_scores`."""
    return _dsep_scores(data, chunk, report)


@functools.partial(
    jax.jit, static_argnames=("kernel", "chunk_size", "num_bins", "cond_bins", "use_threshold", "progress")
)
def _scores(data, alpha, threshold, n=None, *, kernel, chunk_size, num_bins, cond_bins, use_threshold,
            progress=False):
    # kernel: the tester's fused score function (one of the ``*_kernel`` above, chosen by the tester object);
    # n (traced): the host prepared data that no longer fixes the sample size (a correlation matrix, or a
    # zero-padded sample), so one program serves every n of a bucket
    thr = threshold if use_threshold else None
    d = data.shape[1]
    rep = in_program_reporter("pc_tree", total=-(-d // chunk_size)) if progress else None
    return kernel(data, alpha, thr, chunk_size, rep, n, num_bins, cond_bins)
