"""Discrete CI tests: Pearson X² / G² on contingency tables, and the Bernoulli covariance-gap tester."""

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Int

from icmlx._checks import check_values

from ..._checks import default_float_dtype
from ._batched import _BatchedTest
from ._chi2_tail import chi2_sf
from ._ci_tests import CIResult, _check_batch
from ._contingency import _chi2_pvalue_host, _ChiSquareEngine

__all__ = ["chi_square", "bernoulli_test"]


def chi_square(
    data: Int[Array, "n d"],
    x: Int[Array, " b"],
    y: Int[Array, " b"],
    s: Int[Array, "b k"],
    *,
    g_square: bool = False,
) -> CIResult:
    r"""Pearson χ² (or G²) tests of ``x ⫫ y | S`` for integer-coded discrete data, causal-learn's dof rule.

    Per observed configuration ``s`` of ``S`` (empty strata are dropped), with counts $O_{s,a,b}$:

    $$
    E_{s,a,b} = \frac{O_{s,a\cdot}O_{s,\cdot b}}{O_{s,\cdot\cdot}},\quad
    X^2 = \sum \frac{(O-E)^2}{E}\ (E>0),\quad G^2 = 2\sum O\ln\frac{O}{E}\ (O>0),
    $$

    $$
    \mathrm{df} = \sum_s (r_s - 1)(c_s - 1),\qquad p = \begin{cases}1 & \mathrm{df}=0\\
    \bar F_{\chi^2_{\mathrm{df}}}(X^2) & \text{else}\end{cases}
    $$

    where $r_s, c_s$ count the non-empty rows/columns of stratum ``s`` (= causal-learn's
    ``K_x - 1 - #zero rows``). Categories must be coded ``0..K-1`` (see `icmlx.structure.encode_discrete`).
    Strata get mixed-radix codes from the true cardinalities. Each test's table is counted on its own (one test
    per step of a compiled loop, so its working set stays in cache): by one scatter-add of the samples into a
    dense ``(strata, K, K)`` table when that has at most ``2^17`` cells; larger tables are counted per sample,
    each sample's cell, row, column and stratum counts read from sorted codes, so neither the product of
    cardinalities nor a stratum's ``K^2`` cells is ever allocated (memory and work ``O(n log n)`` per test).

    Args:
      data: ``(n, d)`` integer data with values in ``0..K_j-1``.
      x: ``(b,)`` int indices.
      y: ``(b,)`` int indices.
      s: ``(b, k)`` conditioning sets.
      g_square: use G² instead of Pearson X².

    Returns:
      `CIResult` with the statistic, p-value and dof.

    Raises:
      TypeError: if ``data`` is not an integer array.
      ValueError: ``data`` not ``(n, d)`` with ``n >= 1``, negative codes, or a bad batch (an index out of
        range, ``x == y``, ``S`` holding ``x`` or ``y``).

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
    if np.ndim(data) != 2:
        raise ValueError(f"data must be (n, d), got shape {np.shape(data)}")
    data = jnp.asarray(data)
    if not jnp.issubdtype(data.dtype, jnp.integer):
        raise TypeError(f"chi_square needs integer-coded data, got {data.dtype=}")
    n, d = data.shape
    if n == 0:
        raise ValueError("chi_square needs at least one sample, got n=0")
    x, y, s = _check_batch(x, y, s, d)
    if np.asarray(data).min() < 0:
        raise ValueError("chi_square needs category codes 0..K-1, got negative codes; recode with encode_discrete")
    engine = _ChiSquareEngine(np.asarray(data), g_square=g_square)
    stat, dof = engine.stat_dof(*(np.asarray(a, np.int64) for a in (x, y, s)))
    pval = _chi2_pvalue_host(stat, dof).astype(stat.dtype)  # on the host: the statistics are here already
    return CIResult(jax.device_put(stat), jax.device_put(pval), jax.device_put(dof))


@jax.jit
def _bernoulli_kernel(data, x, y, s):
    fdt = default_float_dtype()
    if s.shape[1] > 30:  # the stratum code of |S| binary columns, 2 z + bit, is an int32 below 2^|S|
        raise ValueError(f"bernoulli_test: |S|={s.shape[1]} binary conditioning variables have 2^{s.shape[1]} strata, "
                         "more than int32 indexes (2^31 - 1); condition on at most 30 variables")

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
        p = jnp.where(dof == 0, 1.0, chi2_sf(chi, jnp.maximum(dof, 1)))
        return gap, p, dof

    return jax.vmap(one)(x, y, s)


def bernoulli_test(
    data: Int[Array, "n d"] | Bool[Array, "n d"],
    x: Int[Array, " b"],
    y: Int[Array, " b"],
    s: Int[Array, "b k"],
) -> CIResult:
    r"""Bernoulli CI tester for binary data: covariance gap statistic with a Pearson χ² p-value.

    For each configuration ``z`` of ``S`` with empirical weight $\hat p(z)$:

    $$
    T = \sum_z \hat p(z)\,\bigl|\hat p_{11|z} - \hat p_{1\cdot|z}\hat p_{\cdot 1|z}\bigr|,\qquad
    X^2 = \sum_z n_z \frac{(\hat p_{11|z}-\hat p_{1\cdot|z}\hat p_{\cdot1|z})^2}
    {\hat p_{1\cdot|z}(1-\hat p_{1\cdot|z})\hat p_{\cdot1|z}(1-\hat p_{\cdot1|z})}
    $$

    ``T`` is the plug-in gap the poly-forest learner thresholds (its minimax rate is ``n^{-1/2}``); the p-value
    is $\bar F_{\chi^2_{\mathrm{df}}}(X^2)$ with one dof per non-degenerate stratum (equal to the
    `chi_square` p-value on binary data).

    Args:
      data: ``(n, d)`` binary (0/1) data.
      x: ``(b,)`` int indices.
      y: ``(b,)`` int indices.
      s: ``(b, k)`` conditioning sets.

    Returns:
      `CIResult` with ``statistic = T``.

    Raises:
      TypeError: ``data`` neither integer nor bool.
      ValueError: values other than 0/1 (a runtime error under ``jit``), a bad batch (an index out of
        range, ``x == y``, ``S`` holding ``x`` or ``y``), or more than 30 variables in ``S`` (``2^|S|`` strata
        past int32).

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
    if np.ndim(data) != 2:
        raise ValueError(f"data must be (n, d), got shape {np.shape(data)}")
    data = jnp.asarray(data)
    if data.dtype == jnp.bool_:
        data = data.astype(jnp.int32)
    if not jnp.issubdtype(data.dtype, jnp.integer):
        raise TypeError(f"bernoulli_test needs 0/1 integer or bool data, got {data.dtype=}")
    x, y, s = _check_batch(x, y, s, data.shape[1])
    data = check_values(data, lambda xp, v: (v < 0) | (v > 1), "bernoulli_test needs binary (0/1) data; recode it")
    stat, p, dof = _bernoulli_kernel(data, x, y, s)
    return CIResult(stat, p, dof)


class _BernoulliBatch(_BatchedTest):
    """PC's Bernoulli tests on 0/1 codes (one compiled vmap per set size and batch bucket)."""

    def __init__(self, codes: np.ndarray, mesh=None, max_batch: int = 8192):
        super().__init__(mesh, max_batch)
        self.data = jax.device_put(np.asarray(codes, np.int32))
        self.per_test = 6 * self.data.shape[0]

    def _kernel(self, xs, ys, ss, kk, plan, m):
        return _bernoulli_kernel(self.data, xs, ys, ss)[1]
