r"""Efron's two-groups local false discovery rate with a theoretical or an empirical null."""

import functools
import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._central_matching import (
    central_matching_fit,
    central_region,
    histogram,
    mle_half_width,
    mle_null,
    sorted_quantile,
)
from ._checks import Labels, prepare_scores, static_int

__all__ = ["LocalFDRResult", "local_fdr"]

_NULLS = ("empirical", "mle", "theoretical")


class LocalFDRResult(eqx.Module):
    r"""Result of `local_fdr`.

    Attributes:
      lfdr: $\mathrm{fdr}(z_i)=\pi_0 f_0(z_i)/f(z_i)$, capped at 1, shape ``(*batch, m)``.
      null_mean: the null's centre $\delta_0$ per row, shape ``(*batch,)`` (0 for the theoretical null).
      null_sd: the null's scale $\sigma_0$ per row (1 for the theoretical null).
      pi0: the null proportion $\pi_0$ per row, in $(0, 1]$.
    """

    lfdr: Float[Array, "*batch m"]
    null_mean: Float[Array, "*batch"]
    null_sd: Float[Array, "*batch"]
    pi0: Float[Array, "*batch"]
    _labels: Labels | None = eqx.field(static=True, default=None)

    @property
    def labels(self) -> Any:
        """The pandas index of the Series passed in, or ``None``."""
        return None if self._labels is None else self._labels.index


def _natural_spline_basis(t, knots):
    """A natural cubic spline basis at ``t`` with the given ``knots`` (first and last the boundary knots): one column
    per knot, the intercept included; the truncated-power form of Hastie, Tibshirani & Friedman (2009), eqs.
    (5.4)-(5.5), its columns then orthonormalised for a well-conditioned Newton step."""
    df = knots.shape[0] - 1

    def d(k):
        return (jnp.maximum(t - knots[k], 0.0) ** 3 - jnp.maximum(t - knots[-1], 0.0) ** 3) / (knots[-1] - knots[k])

    cols = [jnp.ones_like(t), t] + [d(k) - d(df - 1) for k in range(df - 1)]
    q, _ = jnp.linalg.qr(jnp.stack(cols, axis=-1))
    return q


def _poisson_fit(x, y, knots, num_steps):
    """Lindsey's method: Poisson regression of the bin counts ``y`` on a natural spline in ``x`` with ``knots``.

    Newton (IRLS) from the least-squares fit of ``log(y + 1)``, a fixed number of steps, with a small ridge so a
    bin pattern that pins a coefficient cannot make the system singular. Returns the fitted log counts.
    """
    dt = y.dtype
    basis = _natural_spline_basis(x, knots)
    ridge = 1e-8 * jnp.eye(basis.shape[-1], dtype=dt)
    beta = jnp.linalg.solve(basis.T @ basis + ridge, basis.T @ jnp.log(y + 1.0))

    def step(_, beta):
        eta = jnp.clip(basis @ beta, -50.0, 50.0)
        mu = jnp.exp(eta)
        hess = (basis * mu[:, None]).T @ basis + ridge * (1.0 + jnp.sum(y))
        return beta + jnp.linalg.solve(hess, basis.T @ (y - mu))

    beta = jax.lax.fori_loop(0, num_steps, step, beta)
    return basis @ beta


def _row(z, null, num_bins, df, central, half_width):
    dt = z.dtype
    m = z.shape[-1]
    counts, x, width = histogram(z, num_bins)
    zs = jnp.sort(z)  # the one sort: every quantile below is read from it
    # knots at quantiles of z, boundary knots at the outer bin centres: the flexibility goes where the data are
    inner = sorted_quantile(zs, jnp.linspace(0.0, 1.0, df + 1, dtype=dt)[1:-1])
    knots = jnp.concatenate([x[:1], inner, x[-1:]])
    log_f = _poisson_fit(x, counts, knots, 30) - jnp.log(m * width)  # the fitted density f on the bin centres

    inside = central_region(zs, x, central)
    if null == "empirical":
        mean, sd, pi0_cm, curved = central_matching_fit(x, counts, width, inside, m)
    elif null == "mle":
        mean, sd, pi0_cm, curved = mle_null(z, zs, half_width)
        mean = jnp.where(curved, mean, 0.0)
        sd = jnp.where(curved, sd, 1.0)
    else:
        mean = jnp.zeros((), dt)
        sd = jnp.ones((), dt)

    def log_f0(v):
        w = (v - mean) / sd
        return -0.5 * w * w - jnp.log(sd) - 0.5 * math.log(2.0 * math.pi)

    # pi0 = (mass of f over the central region) / (mass of f0 there): the theoretical null's estimate, and the
    # empirical one's when central matching found no curvature
    ratio = jnp.sum(jnp.where(inside, jnp.exp(log_f), 0.0)) / jnp.maximum(
        jnp.sum(jnp.where(inside, jnp.exp(log_f0(x)), 0.0)), jnp.finfo(dt).tiny)
    pi0 = ratio if null == "theoretical" else jnp.where(curved, pi0_cm, ratio)
    pi0 = jnp.clip(pi0, jnp.finfo(dt).tiny, 1.0)
    lfdr = jnp.minimum(pi0 * jnp.exp(log_f0(z) - jnp.interp(z, x, log_f)), 1.0)
    return lfdr, mean, sd, pi0


@functools.partial(jax.jit, static_argnames=("null", "num_bins", "df", "central", "half_width"))
def _local_fdr_core(z, null, num_bins, df, central, half_width):
    batch, m = z.shape[:-1], z.shape[-1]
    out = jax.vmap(lambda r: _row(r, null, num_bins, df, central, half_width))(z.reshape(-1, m))
    lfdr, mean, sd, pi0 = out
    return lfdr.reshape(z.shape), mean.reshape(batch), sd.reshape(batch), pi0.reshape(batch)


def local_fdr(
    z: Any,
    null: str = "empirical",
    *,
    num_bins: int = 120,
    df: int = 7,
    central: float = 0.1,
) -> LocalFDRResult:
    r"""Efron's local false discovery rate in the two-groups model, with a theoretical or an empirical null.

    $$f(z)=\pi_0 f_0(z)+(1-\pi_0)f_1(z),\qquad \mathrm{fdr}(z)=\frac{\pi_0 f_0(z)}{f(z)},\qquad
    f_0=N(\delta_0,\sigma_0^2).$$

    The mixture density $f$ is fitted by Lindsey's method: a Poisson regression of the counts of a
    ``num_bins``-bin histogram on a natural cubic spline with ``df`` degrees of freedom (Efron's 7), knots at
    quantiles of ``z``.
    ``null="theoretical"`` takes $\delta_0=0$, $\sigma_0=1$ and
    $\pi_0=\int_A f/\int_A f_0$ over the central region $A$ (between the ``central`` and
    ``1 - central`` quantiles of ``z``). ``null="empirical"`` fits $\delta_0, \sigma_0, \pi_0$ by central
    matching (locfdr's ``"CM"``): over $A$, $\log f(z)\approx\beta_0+\beta_1 z+\beta_2 z^2$ by least
    squares, so $\sigma_0^2=-1/(2\beta_2)$, $\delta_0=\beta_1\sigma_0^2$ and
    $\pi_0=\sqrt{2\pi}\,\sigma_0\exp(\beta_0+\delta_0^2/(2\sigma_0^2))$ (capped at 1; if the centre of
    $\log f$ is not concave it falls back to the theoretical null). ``null="mle"`` is Efron's maximum-likelihood
    empirical null (locfdr's ``"MLE"``): on $A_0=[\tilde z-c\,s,\ \tilde z+c\,s]$ ($\tilde z$ the median, $s$
    the normal-consistent interquartile range, $c=4.3\exp(-0.26\log_{10}m)$ as locfdr), taken to hold null
    values only, $(\delta_0,\sigma_0)$ maximise the likelihood of the $N_0$ values in $A_0$ as a sample of
    $N(\delta_0,\sigma_0^2)$ truncated to $A_0$, and $\pi_0=(N_0/m)/P_0(A_0)$, capped at 1.
    Use an empirical null when the z-scores' null is not $N(0,1)$ (correlation, a wrong variance, an overall
    shift; Efron 2004).

    Args:
      z: z-scores, shape ``(*batch, m)`` (list, NumPy, JAX, pandas Series; finite); one family per row.
      null: ``"empirical"`` (central matching, default), ``"mle"`` (truncated-normal maximum likelihood) or
        ``"theoretical"`` (static).
      num_bins: histogram bins (static int >= 10).
      df: degrees of freedom of the natural spline for $\log f$ (static int in 2..15; knots at quantiles of
        ``z``).
      central: the central region's lower quantile in (0, 0.5) (static), default 0.1 (the central 80%).

    Returns:
      `LocalFDRResult` (``lfdr``, ``null_mean``, ``null_sd``, ``pi0``).

    Raises:
      ValueError: an unknown ``null``, bad settings, NaN or infinite ``z``.

    References:
      Efron (2004), J. Amer. Statist. Assoc. 99 (the empirical null). Efron (2007), Ann. Statist. 35 (central
      matching, the ML null). Efron (2010), *Large-Scale Inference*, Cambridge, ch. 5–6. Lindsey (1974),
      J. R. Stat. Soc. B 36.

    Examples:
      >>> import jax
      >>> from icmlx.stats import local_fdr
      >>> z = 0.3 + 1.3 * jax.random.normal(jax.random.key(0), (20_000,))
      >>> res = local_fdr(z)
      >>> print(round(float(res.null_mean), 1), round(float(res.null_sd), 1))
      0.3 1.3
      >>> ml = local_fdr(z, null="mle")
      >>> print(round(float(ml.null_mean), 1), round(float(ml.null_sd), 1))
      0.3 1.3
    """
    if null not in _NULLS:
        raise ValueError(f"null must be one of {_NULLS}, got {null=!r}")
    num_bins = static_int("local_fdr", "num_bins", num_bins, lo=10)
    df = static_int("local_fdr", "df", df, lo=2)
    if df > 15:
        raise ValueError(f"local_fdr: df must be at most 15, got {df=}")
    if isinstance(central, (bool, str)) or not isinstance(central, (int, float)) or not 0.0 < central < 0.5:
        raise ValueError(f"local_fdr: central must be a number in (0, 0.5), got {central=!r}")
    x, labels = prepare_scores(z, "local_fdr", name="z")
    if x.shape[-1] < 10:
        raise ValueError(f"local_fdr needs at least 10 z-scores per row to fit a density, got {x.shape[-1]}")
    half_width = mle_half_width(x.shape[-1])
    lfdr, mean, sd, pi0 = _local_fdr_core(x, null, num_bins, df, float(central), half_width)
    return LocalFDRResult(lfdr=lfdr, null_mean=mean, null_sd=sd, pi0=pi0, _labels=labels)
