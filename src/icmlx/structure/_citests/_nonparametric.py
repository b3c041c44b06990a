"""Nonparametric CI tests: the binned U-statistic, and its calibration by an asymptotic or a permutation p-value.

The statistic of `binned_u_statistic` (equal-frequency bins, per-stratum unbiased
U-statistic of $\\sum_{ab}(p_{ab|z}-p_{a|z}p_{b|z})^2$). Under conditional independence given the binned
separator, $m_z U_z$ is a degenerate U-statistic whose limit is a weighted sum of centred $\\chi^2_1$
variables with weights $\\lambda_i\\mu_j$ = products of the eigenvalues of the within-stratum covariance
matrices $C_x = D_p - pp^\\top$ and $C_y = D_q - qq^\\top$ of the bin indicators. Its cumulants only need
$\\operatorname{tr} C^k$, closed forms in the stratum margins, so the asymptotic p-value (Pearson's
three-moment $\\chi^2$ approximation) costs no more than the statistic: it is what lets the poly-forest
learner run all $O(d^3)$ tests at a union-bound level $\\alpha/d^2$ that no permutation p-value resolves.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaincc
from jaxtyping import Array, Float, Int

from icmlx._checks import check_values
from icmlx._types import PRNGKey

from ..._checks import check_int, default_float_dtype
from ..._strategy import as_strategy
from ._ci_tests import CIResult, _check_batch

__all__ = [
    "binned_u_statistic",
    "nonparametric_test",
    "AbstractCalibration",
    "Asymptotic",
    "Permutation",
]


def rank_bins(data, num_bins):
    """Equal-frequency bins 0..num_bins-1 of each column (ranks), ties broken by order: rank ``r`` of ``n`` is in
    bin ``floor(r num_bins / n)``, counted as the bin starts ``ceil(b n / num_bins)``, ``b >= 1``, at or below
    ``r``. The starts are exact host integers below ``n``, so no product ``r num_bins`` is formed: in int32 it
    wraps once ``n num_bins >= 2^31`` (``cond_bins`` grown with ``n``: 600 bins of 4 million samples)."""
    n = data.shape[0]
    ranks = jnp.argsort(jnp.argsort(data, axis=0), axis=0)
    starts = (np.arange(1, num_bins, dtype=np.int64) * n + num_bins - 1) // num_bins
    return jnp.searchsorted(jnp.asarray(starts.astype(ranks.dtype)), ranks, side="right")


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


@functools.partial(jax.jit, static_argnames=("num_bins",))
def _u_kernel(bins, x, y, s, *, num_bins):
    fdt = default_float_dtype()
    n = bins.shape[0]

    def one(xi, yi, si):
        z = jnp.zeros(n, jnp.int32)
        for j in range(si.shape[0]):
            z = z * num_bins + bins[:, si[j]]
        nz = num_bins ** si.shape[0]
        cell = (z * num_bins + bins[:, xi]) * num_bins + bins[:, yi]
        cnt = jax.ops.segment_sum(jnp.ones(n, fdt), cell, nz * num_bins * num_bins)
        cnt = cnt.reshape(nz, num_bins, num_bins)
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
    num_bins: int = 4,
) -> CIResult:
    r"""Nonparametric CI statistic: equal-frequency binning plus a per-bin unbiased U-statistic.

    Every variable is cut into ``num_bins`` equal-frequency bins; for each bin ``z`` of ``S`` with ``m_z``
    samples the U-statistic $U_z$ is the unbiased estimate (falling factorials of the counts) of

    $$
    \sum_{a,b}\bigl(p_{ab|z} - p_{a|z}p_{b|z}\bigr)^2, \qquad T = \sum_z \frac{m_z}{n} U_z.
    $$

    ``T`` has mean 0 under conditional independence (up to binning error) and is thresholded by the
    poly-forest learner (Neykov, Balakrishnan & Wasserman line). No p-value is attached: ``pvalue`` is
    ``1`` where ``T <= 0`` and ``0`` otherwise, so callers should threshold ``statistic``.

    Args:
      data: ``(n, d)`` continuous data.
      x: ``(b,)`` int indices.
      y: ``(b,)`` int indices.
      s: ``(b, k)`` conditioning sets.
      num_bins: bins per variable.

    Returns:
      `CIResult` (``dof = -1``).

    Raises:
      ValueError: bad shapes, ``num_bins`` not an integer ``>= 2``, NaN/Inf data (a runtime error under ``jit``),
        a bad batch (an index out of range, ``x == y``, ``S`` holding ``x`` or ``y``), or a table of
        ``num_bins^(|S| + 2)`` cells past int32 (``2^31 - 1``).
      TypeError: non-floating data.

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
    check_int(num_bins, "num_bins", minimum=2)
    data = _check_data(data, "binned_u_statistic")
    x, y, s = _check_batch(x, y, s, data.shape[1])
    _check_cells("binned_u_statistic", num_bins, num_bins, s.shape[1])
    bins = rank_bins(data, num_bins).astype(jnp.int32)
    stat = _u_kernel(bins, x, y, s, num_bins=num_bins)
    p = jnp.where(stat > 0, 0.0, 1.0).astype(stat.dtype)
    return CIResult(stat, p, jnp.full(x.shape, -1, jnp.int32))


def _check_data(data, where: str):
    if np.ndim(data) != 2:
        raise ValueError(f"data must be (n, d), got shape {np.shape(data)}")
    data = jnp.asarray(data)
    if not jnp.issubdtype(data.dtype, jnp.floating):
        raise TypeError(f"{where} needs floating data, got {data.dtype=}")
    return check_values(data, lambda xp, v: ~xp.isfinite(v), "data has NaN or Inf entries; drop or impute them first")


def _check_cells(where: str, num_bins: int, cond_bins: int, k: int) -> None:
    """Refuse a table of ``cond_bins^k num_bins^2`` cells (one per stratum of a ``|S| = k`` set and pair of bins)
    past int32: its flat cell index would wrap (and the table alone would take at least 8 GB per test)."""
    cells = cond_bins**k * num_bins**2
    if cells > 2**31 - 1:
        raise ValueError(f"{where}: |S|={k} with cond_bins={cond_bins} and num_bins={num_bins} needs a table of "
                         f"{cells:,} cells per test, more than int32 indexes ({2**31 - 1:,}); use fewer bins or a "
                         "smaller conditioning set")


def _trace_powers(p):
    """``tr C, tr C^2, tr C^3`` of ``C = diag(p) - p p^T`` (last axis of ``p``), in closed form."""
    s2 = jnp.sum(p**2, axis=-1)
    s3 = jnp.sum(p**3, axis=-1)
    s4 = jnp.sum(p**4, axis=-1)
    t1 = 1.0 - s2
    t2 = s2 - 2.0 * s3 + s2**2
    t3 = s3 - 3.0 * s4 + 3.0 * s3 * s2 - s2**3
    return jnp.maximum(t1, 0.0), jnp.maximum(t2, 0.0), jnp.maximum(t3, 0.0)


def stratum_stat_and_cumulants(cnt):
    """For count tables ``cnt (..., A, B)`` of strata: ``(m U, kappa2, kappa3)`` of each stratum.

    ``m U`` is the stratum's U-statistic times its size; ``kappa2 = 2 tr(C_x^2) tr(C_y^2)`` and
    ``kappa3 = 8 tr(C_x^3) tr(C_y^3)`` are the null cumulants of its weighted-chi^2 limit. Strata with fewer
    than 4 samples contribute 0 to all three (their U-statistic is defined as 0).
    """
    fdt = cnt.dtype
    na = cnt.sum(axis=-1)
    nb = cnt.sum(axis=-2)
    m = na.sum(axis=-1)
    batch = cnt.shape[:-2]
    f = _u_stat_cells
    for _ in batch:
        f = jax.vmap(f)
    u = f(cnt, na, nb, m)
    ok = m >= 4
    safe_m = jnp.where(ok, m, jnp.ones((), fdt))
    _, px2, px3 = _trace_powers(na / safe_m[..., None])
    _, py2, py3 = _trace_powers(nb / safe_m[..., None])
    zero = jnp.zeros((), fdt)
    return (
        jnp.where(ok, m * u, zero),
        jnp.where(ok, 2.0 * px2 * py2, zero),
        jnp.where(ok, 8.0 * px3 * py3, zero),
    )


def pearson3_pvalue(q, k2, k3):
    """Upper tail of a centred weighted chi^2 sum with cumulants (0, k2, k3) at ``q`` (Pearson: g chi2_h - g h)."""
    fdt = q.dtype
    ok = (k2 > 0) & (k3 > 0)
    k2s = jnp.where(ok, k2, jnp.ones((), fdt))
    k3s = jnp.where(ok, k3, jnp.ones((), fdt))
    g = k3s / (4.0 * k2s)
    h = 8.0 * k2s**3 / k3s**2
    arg = jnp.maximum(q + g * h, 0.0) / (2.0 * g)
    p = gammaincc((h / 2.0).reshape(-1), arg.reshape(-1)).reshape(q.shape)  # 1-D: compiles faster
    return jnp.where(ok, p, jnp.ones((), fdt))


def _strata(cond, s, cond_bins):
    """Mixed-radix stratum code (n,) of the binned separator columns ``s`` (k,) of ``cond`` (n, d)."""
    z = jnp.zeros(cond.shape[0], jnp.int32)
    for j in range(s.shape[0]):  # static unroll over |S|
        z = z * cond_bins + cond[:, s[j]]
    return z


def _statistic(xb, yb, z, *, num_bins, num_strata):
    """``T = sum_z (m_z / n) U_z`` and the null cumulants of ``n T`` for one test."""
    fdt = default_float_dtype()
    n = xb.shape[0]
    cell = (z * num_bins + xb) * num_bins + yb
    cnt = jax.ops.segment_sum(jnp.ones(n, fdt), cell, num_strata * num_bins * num_bins)
    mu, k2, k3 = stratum_stat_and_cumulants(cnt.reshape(num_strata, num_bins, num_bins))
    return jnp.sum(mu) / n, jnp.sum(k2), jnp.sum(k3)


def _within_strata_permutation(u, z):
    """Index array ``src`` (n,) such that ``x[src]`` permutes ``x`` within the strata ``z``: positions sorted by
    stratum are filled with the samples sorted by (stratum, ``u``)."""
    n = z.shape[0]
    idx = jnp.arange(n, dtype=jnp.int32)
    by_z = jnp.lexsort((idx, z))
    by_zu = jnp.lexsort((idx, u, z))
    return jnp.zeros(n, jnp.int32).at[by_z].set(by_zu.astype(jnp.int32))


def _permutation_uniforms(key, num_permutations, n):
    return jax.random.uniform(key, (num_permutations, n), default_float_dtype())


def _tie_tolerance(n):
    # statistics of tables that are equal up to a relabelling can differ by round-off: count T_b >= T - tol.
    return 1e-4 / n


@functools.partial(jax.jit, static_argnames=("num_bins", "cond_bins", "num_permutations"))
def _np_kernel(data, x, y, s, key, *, num_bins, cond_bins, num_permutations):
    n = data.shape[0]
    bins = rank_bins(data, num_bins).astype(jnp.int32)
    cond = rank_bins(data, cond_bins).astype(jnp.int32)
    num_strata = cond_bins ** s.shape[1]
    stat_fn = functools.partial(_statistic, num_bins=num_bins, num_strata=num_strata)

    def one(xi, yi, si):
        z = _strata(cond, si, cond_bins)
        t, k2, k3 = stat_fn(bins[:, xi], bins[:, yi], z)
        p_asym = pearson3_pvalue(n * t, k2, k3)
        if num_permutations == 0:
            return t, p_asym
        u = _permutation_uniforms(key, num_permutations, n)

        def perm_stat(ub):
            src = _within_strata_permutation(ub, z)
            return stat_fn(bins[src, xi], bins[:, yi], z)[0]

        tb = jax.lax.map(perm_stat, u, batch_size=min(num_permutations, 64))  # memory: b x 64 x n, not b x B x n
        exceed = jnp.sum((tb >= t - _tie_tolerance(n)).astype(jnp.int32))
        return t, (1.0 + exceed.astype(t.dtype)) / (num_permutations + 1.0)

    return jax.vmap(one)(x, y, s)


class AbstractCalibration(eqx.Module):
    """How `nonparametric_test` turns its binned U-statistic into a p-value (a strategy object).

    Subclasses hold only static (hashable) settings and are not callable: `Asymptotic` and
    `Permutation`.
    """


class Asymptotic(AbstractCalibration):
    r"""Asymptotic p-value: Pearson's three-moment approximation of the weighted-$\chi^2$ null of ``nT``.

    No settings and no randomness; cheap enough for the poly-forest learner's $O(d^3)$ tests.

    Examples:
      >>> from icmlx.structure import Asymptotic
      >>> Asymptotic() == Asymptotic()
      True
    """


class Permutation(AbstractCalibration):
    r"""Permutation p-value $(1+\#\{T_b\ge T\})/(B+1)$ from ``num_permutations`` within-stratum draws.

    Exact in finite samples for conditional independence given the binned separator. Needs ``key=`` in
    `nonparametric_test`.

    Attributes:
      num_permutations: number of permutations ``B`` (``>= 1``).

    Raises:
      TypeError: if ``num_permutations`` is not an integer.
      ValueError: if ``num_permutations < 1``.

    Examples:
      >>> from icmlx.structure import Permutation
      >>> Permutation(num_permutations=99).num_permutations
      99
    """

    num_permutations: int = eqx.field(static=True)

    def __init__(self, num_permutations: int = 199):
        num_permutations = check_int(num_permutations, "num_permutations", where="Permutation", minimum=1)
        self.num_permutations = int(num_permutations)


_CALIBRATIONS = {"asymptotic": Asymptotic, "permutation": Permutation}


def _as_calibration(method) -> AbstractCalibration:
    return as_strategy(method, AbstractCalibration, _CALIBRATIONS, "method")



def nonparametric_test(
    data: Float[Array, "n d"],
    x: Int[Array, " b"],
    y: Int[Array, " b"],
    s: Int[Array, "b k"],
    *,
    num_bins: int = 3,
    cond_bins: int | None = None,
    method: str | AbstractCalibration = "asymptotic",
    key: PRNGKey | None = None,
) -> CIResult:
    r"""Calibrated nonparametric CI tests of ``x ⫫ y | S``: binned U-statistic with a p-value.

    ``x`` and ``y`` are cut into ``num_bins`` equal-frequency bins, every variable of ``S`` into ``cond_bins``; for
    each stratum ``z`` of the binned ``S`` with ``m_z`` samples, $U_z$ is the unbiased U-statistic of
    $\theta_z=\sum_{ab}(p_{ab|z}-p_{a|z}p_{b|z})^2$ and

    $$
    T = \sum_z \frac{m_z}{n} U_z .
    $$

    ``method=Asymptotic()`` (``"asymptotic"``): under independence within every stratum,
    $nT=\sum_z m_zU_z$ converges to $\sum_z\sum_{ij}\lambda^z_i\mu^z_j(\xi_{zij}^2-1)$ with
    $\lambda^z, \mu^z$ the eigenvalues of $C=\operatorname{diag}(p)-pp^\top$ for the within-stratum
    bin frequencies of ``x`` and ``y``. Its cumulants are
    $\kappa_2=2\sum_z\operatorname{tr}(C_x^2)\operatorname{tr}(C_y^2)$,
    $\kappa_3=8\sum_z\operatorname{tr}(C_x^3)\operatorname{tr}(C_y^3)$ (closed forms in the margins), and the
    p-value is Pearson's three-moment approximation

    $$
    p = \Pr\bigl[g\,\chi^2_h - g h \ge nT\bigr],\qquad g=\frac{\kappa_3}{4\kappa_2},\quad
    h=\frac{8\kappa_2^3}{\kappa_3^2},
    $$

    exact when all weights are equal (uniform within-stratum margins), and cheap enough for the poly-forest
    learner's $O(d^3)$ tests at levels like $0.05/d^2$.

    ``method=Permutation(num_permutations=B)`` (``"permutation"``: ``B = 199``): ``x`` is permuted within the
    strata of the binned ``S`` (``B`` draws from ``key``, shared by the batch; vmapped) and
    $p=(1+\#\{T_b\ge T\})/(B+1)$, exact in finite samples for conditional independence given the binned
    ``S``.

    Binning ``S`` is only an approximation of conditioning on ``S``: for continuous ``S`` the residual dependence
    within a bin shrinks as ``cond_bins`` grows, so ``cond_bins`` should grow with ``n`` (Neykov, Balakrishnan &
    Wasserman bin the conditioning variable ever more finely as ``n`` grows).

    Args:
      data: ``(n, d)`` continuous data.
      x: ``(b,)`` int indices.
      y: ``(b,)`` int indices.
      s: ``(b, k)`` conditioning sets.
      num_bins: bins for ``x`` and ``y`` (``>= 2``).
      cond_bins: bins for every variable of ``S`` (default ``num_bins``).
      method: the calibration, an `AbstractCalibration` (`Asymptotic`, `Permutation`) or
        the shorthand ``"asymptotic"`` / ``"permutation"``.
      key: PRNG key of the permutations (needed for `Permutation`, unused otherwise).

    Returns:
      `icmlx.structure.CIResult` with ``statistic = T`` and the p-value (``dof = -1``).

    Raises:
      ValueError: bad shapes, ``num_bins``/``cond_bins < 2``, unknown ``method``, missing ``key``, or a table of
        ``cond_bins^|S| num_bins^2`` cells past int32 (``2^31 - 1``).
      TypeError: non-floating data.

    References:
      Gao, Wang & Aragam, "Optimal structure learning and conditional independence testing", ICML 2026,
      arXiv:2507.05689 (Thm 5.1); Neykov, Balakrishnan & Wasserman, "Minimax optimal conditional independence
      testing", Ann. Statist. 49 (2021), arXiv:2001.03039; Pearson, Biometrika 46 (1959) (three-moment
      chi-square approximation).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.structure import Permutation, nonparametric_test
      >>> e = jax.random.normal(jax.random.key(0), (2000, 3))
      >>> data = jnp.stack([e[:, 0], jnp.tanh(2 * e[:, 0]) + 0.5 * e[:, 1], e[:, 2]], axis=1)
      >>> res = nonparametric_test(data, jnp.array([0, 0]), jnp.array([1, 2]), jnp.zeros((2, 0), jnp.int32))
      >>> [bool(p < 0.01) for p in res.pvalue]
      [True, False]
      >>> perm = nonparametric_test(data, jnp.array([0]), jnp.array([2]), jnp.zeros((1, 0), jnp.int32),
      ...                           method=Permutation(num_permutations=99), key=jax.random.key(1))
      >>> bool(perm.pvalue[0] > 0.01)
      True
    """
    data = _check_data(data, "nonparametric_test")
    x, y, s = _check_batch(x, y, s, data.shape[1])
    cond_bins = num_bins if cond_bins is None else cond_bins
    for name, v in (("num_bins", num_bins), ("cond_bins", cond_bins)):
        check_int(v, name, minimum=2)
    _check_cells("nonparametric_test", num_bins, cond_bins, s.shape[1])
    calibration = _as_calibration(method)
    if isinstance(calibration, Permutation):
        if key is None:
            raise ValueError("method=Permutation(...) needs key= (a PRNG key for the permutations)")
        num_permutations = calibration.num_permutations
    else:
        key, num_permutations = jax.random.key(0), 0
    t, p = _np_kernel(
        data, x, y, s, key, num_bins=num_bins, cond_bins=cond_bins, num_permutations=num_permutations
    )
    return CIResult(t, p, jnp.full(x.shape, -1, jnp.int32))
