"""Empirical-Bayes estimates in the two-groups normal-means model: sparsity and (p, tau^2) by EM."""

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._types import RealScalarLike
from ._checks import as_float_array, check_no_nan, positive

__all__ = ["estimate_sparsity", "TwoGroupsEM", "two_groups_em"]

_LOG_2PI = math.log(2.0 * math.pi)


def estimate_sparsity(
    x: Float[Array, "*batch n"],
    sigma: RealScalarLike = 1.0,
    *,
    c1: float = 2.0,
    c2: float = 1.0,
) -> Float[Array, "*batch"]:
    r"""Simple empirical-Bayes sparsity estimate (van der Pas et al. / Ghosh et al. type).

    .. math::

        \hat p = \operatorname{clip}\Big(\frac{\#\{i : |x_i| > \sigma\sqrt{c_1 \log n}\}}{c_2\, n},
        \ \frac1n,\ 1 - \frac1n\Big).

    With ``c1=2, c2=1`` this is the two-sided version of ``NormalBetaPrime::est.sparsity``; it is
    also the
    empirical-Bayes horseshoe scale :math:`\hat\tau`. The estimate is biased low by the factor
    :math:`P = 2\bar\Phi(\sqrt{2\log n/(1+\tau^2)})` (the power of the universal threshold).

    Args:
      x: observations, shape ``(*batch, n)``; tests run along the last axis.
      sigma: known noise standard deviation (> 0).
      c1, c2: the threshold and normalising constants (Python floats > 0).

    Returns:
      :math:`\hat p`, shape ``(*batch,)``.

    Raises:
      ValueError: non-positive ``sigma``/``c1``/``c2``; NaN in ``x`` (at run time).

    References:
      van der Pas, Kleijn & van der Vaart (2014), arXiv:1404.0202. Ghosh, Tang, Ghosh & Chakrabarti
      (2016),
      Bayesian Anal. 11(3).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import estimate_sparsity
      >>> x = jnp.array([0.1, -0.3, 5.0, 0.2, -6.0, 0.0, 1.0, 0.5, -0.4, 0.3])
      >>> round(float(estimate_sparsity(x)), 3)   # 2 of 10 exceed sqrt(2 log 10) = 2.146
      0.2
    """
    if c1 <= 0 or c2 <= 0:
        raise ValueError(f"c1 and c2 must be positive, got {c1=}, {c2=}")
    x = check_no_nan(as_float_array(x, "x"), "x")
    if x.ndim < 1 or x.shape[-1] < 2:
        raise ValueError(f"x must have at least 2 tests along its last axis, got {x.shape=}")
    return _sparsity_core(x, positive("sigma", sigma, x.dtype), float(c1), float(c2))


@functools.partial(jax.jit, static_argnums=(2, 3))
def _sparsity_core(x, s, c1, c2):
    n = x.shape[-1]
    thr = s * math.sqrt(c1 * math.log(n))
    count = jnp.sum(jnp.abs(x) > thr, axis=-1).astype(x.dtype)
    return jnp.clip(count / (c2 * n), 1.0 / n, 1.0 - 1.0 / n)


class TwoGroupsEM(eqx.Module):
    """Result of :func:`two_groups_em`.

    Attributes:
      p: estimated non-null proportion, shape ``(*batch,)``.
      tau2: estimated slab variance :math:`\\tau^2` (on the scale of ``x``), shape ``(*batch,)``.
      log_likelihood: marginal log-likelihood after each EM step, shape ``(num_steps, *batch)``;
        non-decreasing (EM's ascent property).
      num_steps: the number of EM steps run.
    """

    p: Float[Array, "*batch"]
    tau2: Float[Array, "*batch"]
    log_likelihood: Float[Array, "steps *batch"]  # noqa: F821
    num_steps: Int[Array, ""]


def _mixture_terms(x2, p, tau2, s2):
    # log weight + log density of the null N(0, s2) and the alternative N(0, s2 + tau2) components
    v1 = s2 + tau2
    l0 = jnp.log1p(-p)[..., None] - 0.5 * (_LOG_2PI + jnp.log(s2) + x2 / s2)
    l1 = jnp.log(p)[..., None] - 0.5 * (_LOG_2PI + jnp.log(v1)[..., None] + x2 / v1[..., None])
    return l0, l1


def two_groups_em(
    x: Float[Array, "*batch n"],
    sigma: RealScalarLike = 1.0,
    *,
    num_steps: int = 100,
    p_init: RealScalarLike | Float[Array, "*batch"] | None = None,
    tau2_init: RealScalarLike | Float[Array, "*batch"] | None = None,
) -> TwoGroupsEM:
    r"""Maximum marginal likelihood (EM) for the two-groups model
    :math:`X\sim(1-p)N(0,\sigma^2)+pN(0,\sigma^2+\tau^2)`.

    E-step: :math:`r_i = p\,\phi(x_i;0,\sigma^2+\tau^2) / [\,p\,\phi(x_i;0,\sigma^2+\tau^2) +
    (1-p)\,\phi(x_i;0,\sigma^2)]`. M-step: :math:`p \leftarrow \bar r`,
    :math:`\tau^2 \leftarrow \max(\sum r_i x_i^2/\sum r_i - \sigma^2,\ 10^{-6}\sigma^2)` (the
    constrained
    maximiser; :math:`p` is kept in :math:`[1/n, 1-1/n]`). Steps run in ``lax.scan``; batched over
    leading axes.

    Args:
      x: observations, shape ``(*batch, n)``.
      sigma: known noise standard deviation (> 0).
      num_steps: number of EM steps (static Python int >= 1).
      p_init: starting p; default :func:`estimate_sparsity` clipped to ``[1/n, 0.5]``.
      tau2_init: starting tau^2; default ``max(mean x^2 over the |x| > sigma sqrt(2 log n) tests -
        sigma^2,
        sigma^2)``.

    Returns:
      :class:`TwoGroupsEM` with ``p``, ``tau2``, the log-likelihood trace and ``num_steps``.

    Raises:
      ValueError: bad ``num_steps``/``sigma``/initial values; NaN in ``x`` (at run time).

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501 (the two-groups model).
      Dempster, Laird & Rubin (1977), J. R. Stat. Soc. B 39(1) (EM).

    Examples:
      >>> import jax
      >>> from icmlx.stats import simulate_two_groups, two_groups_em
      >>> sample = simulate_two_groups(jax.random.key(2), 100_000, p=0.05, tau2=9.0)
      >>> fit = two_groups_em(sample.x[0])
      >>> print(round(float(fit.p), 2), round(float(fit.tau2)))
      0.05 9
    """
    if not isinstance(num_steps, int) or num_steps < 1:
        raise ValueError(f"num_steps must be a positive int, got {num_steps=}")
    x = check_no_nan(as_float_array(x, "x"), "x")
    if x.ndim < 1 or x.shape[-1] < 2:
        raise ValueError(f"x must have at least 2 tests along its last axis, got {x.shape=}")
    dt = x.dtype
    s = positive("sigma", sigma, dt)
    batch = x.shape[:-1]
    p0 = None
    t0 = None
    if p_init is not None:
        from ._checks import check_scalar

        p0 = jnp.broadcast_to(check_scalar("p_init", p_init, dt, lo=0.0, hi=1.0), batch)
    if tau2_init is not None:
        t0 = jnp.broadcast_to(positive("tau2_init", tau2_init, dt), batch)
    p, tau2, lls = _em_core(x, s, p0, t0, num_steps)
    steps = jnp.asarray(num_steps, jnp.int32)
    return TwoGroupsEM(p=p, tau2=tau2, log_likelihood=lls, num_steps=steps)


@functools.partial(jax.jit, static_argnums=4)
def _em_core(x, s, p0, t0, num_steps):
    dt = x.dtype
    n = x.shape[-1]
    s2 = s * s
    x2 = x * x
    if p0 is None:
        p0 = jnp.minimum(_sparsity_core(x, s, 2.0, 1.0), 0.5)
    if t0 is None:
        big = jnp.abs(x) > s * math.sqrt(2.0 * math.log(n))
        cnt = jnp.sum(big, axis=-1).astype(dt)
        m2 = jnp.sum(jnp.where(big, x2, 0.0), axis=-1) / jnp.maximum(cnt, 1.0)
        t0 = jnp.maximum(m2 - s2, s2)
    lo_p = 1.0 / n
    tau_floor = 1e-6 * s2

    def step(carry, _):
        p, tau2 = carry
        l0, l1 = _mixture_terms(x2, p, tau2, s2)
        lse = jnp.logaddexp(l0, l1)
        r = jnp.exp(l1 - lse)
        ll = jnp.sum(lse, axis=-1)
        sr = jnp.sum(r, axis=-1)
        p_new = jnp.clip(sr / n, lo_p, 1.0 - lo_p)
        v_new = jnp.sum(r * x2, axis=-1) / jnp.maximum(sr, jnp.finfo(dt).tiny)
        tau2_new = jnp.maximum(v_new - s2, tau_floor)
        return (p_new, tau2_new), ll

    (p, tau2), lls = jax.lax.scan(step, (p0, t0), None, length=num_steps)
    return p, tau2, lls
