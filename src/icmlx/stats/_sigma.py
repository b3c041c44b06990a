r"""Estimating the noise scale $\sigma$ from the data (the empirical null), as strategy objects.

Every z-test in `icmlx.stats` takes ``sigma=``: a known number, or a rule that estimates it per row of ``x``
from the bulk of the data, which is mostly null in a sparse problem. ``sigma="mad"`` is `MADSigma`
(scale only); ``sigma="empirical"`` is `EmpiricalNullSigma` (Efron's empirical null: centre and scale).
"""

import abc
import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._checks import check_values, is_traced
from .._strategy import as_strategy
from ._central_matching import central_matching
from ._checks import Labels, as_input_array, check_finite, positive, static_int

__all__ = ["AbstractSigma", "EmpiricalNullSigma", "MADSigma", "estimate_sigma"]

#: 1 / Phi^{-1}(3/4): the MAD of N(0, s^2) is s / 1.4826 (scipy.stats.median_abs_deviation(scale="normal")).
_MAD_TO_SD = 1.482602218505602


class AbstractSigma(eqx.Module):
    """Base class of the rules that estimate the noise standard deviation $\\sigma$ from ``x``.

    A rule is an ``eqx.Module`` with static fields only and is not callable; pass it as ``sigma=`` to the z-tests
    or evaluate it with `estimate_sigma`.
    """

    @abc.abstractmethod
    def _sigma(self, x: Any) -> Float[Array, "*batch"]:
        """sigma per row of ``x`` (shape ``(*batch,)``)."""

    def _null(self, x: Any) -> tuple[Any, Float[Array, "*batch"]]:
        """``(location, sigma)`` per row; location ``None`` for a scale-only rule (the null is centred at 0)."""
        return None, self._sigma(x)


class MADSigma(AbstractSigma):
    r"""Robust scale: $\hat\sigma = 1.4826\,\mathrm{median}_i\,|x_i-\mathrm{median}(x)|$ per row (``"mad"``).

    The normal-consistent median absolute deviation, as ``scipy.stats.median_abs_deviation(x, scale="normal")``.
    With a fraction $p$ of non-null tests it is biased upwards, by at most about $1+1.25p$ (large
    effects: the median of $|x|$ moves to the $\tfrac12/(1-p)$ quantile of the null; measured 1.012 at
    $p=0.01$, 1.063 at $p=0.05$, 1.13 at $p=0.1$), so it needs most tests to be null. It breaks
    down (gives 0) when half the values of a row are equal.

    Examples:
      >>> import jax
      >>> from icmlx.stats import MADSigma, estimate_sigma, simulate_two_groups
      >>> x = simulate_two_groups(jax.random.key(0), 20_000, p=0.01, tau2=36.0, sigma=2.0).x
      >>> round(float(estimate_sigma(x, MADSigma())[0]), 2)
      2.04
    """

    def _sigma(self, x):
        return _mad(x)


@jax.jit
def _mad(x):
    med = jnp.median(x, axis=-1, keepdims=True)
    return _MAD_TO_SD * jnp.median(jnp.abs(x - med), axis=-1)


class EmpiricalNullSigma(AbstractSigma):
    r"""Efron's empirical null $N(\delta_0,\sigma_0^2)$ by central matching, per row (``"empirical"``).

    The centre of the histogram of $x$ (``num_bins`` bins; the bins between the ``central`` and
    ``1 - central`` quantiles of $x$) is matched by a quadratic in the log density,
    $\log f(x)\approx\beta_0+\beta_1x+\beta_2x^2$ (Poisson regression of the bin counts), so
    $\sigma_0^2=-1/(2\beta_2)$ and $\delta_0=\beta_1\sigma_0^2$: the same fit as
    ``local_fdr(null="empirical")``. The z-tests then use the scale $\sigma_0$ **and** the centre: they test
    $x-\delta_0$ (the null is $N(\delta_0,\sigma_0^2)$, so an overall shift of the data, e.g. a
    normalisation offset, is not taken for signal). `estimate_sigma` returns $\sigma_0$ only. Where the centre
    of $\log f$ is not concave ($\beta_2\ge0$, e.g. too few values or a flat histogram) the rule falls back to
    the median and `MADSigma`'s scale. Unlike the MAD, the fit uses only the shape of the central bulk, so it
    needs most tests null near the centre, not an exactly null median.

    Attributes:
      num_bins: histogram bins (int >= 10), default 120 (as ``local_fdr``).
      central: the central region's lower quantile in (0, 0.5), default 0.1 (the central 80%).

    References:
      Efron (2004), J. Amer. Statist. Assoc. 99. Efron (2007), Ann. Statist. 35 (central matching).
      Efron (2010), *Large-Scale Inference*, Cambridge, sec. 6.2.

    Examples:
      >>> import jax
      >>> from icmlx.stats import EmpiricalNullSigma, estimate_sigma
      >>> x = 0.5 + 2.0 * jax.random.normal(jax.random.key(0), (20_000,))
      >>> round(float(estimate_sigma(x, EmpiricalNullSigma())), 1)
      2.0
    """

    num_bins: int = eqx.field(static=True, default=120)
    central: float = eqx.field(static=True, default=0.1)

    def __check_init__(self):
        static_int("EmpiricalNullSigma", "num_bins", self.num_bins, lo=10)
        c = self.central
        if isinstance(c, (bool, str)) or not isinstance(c, (int, float)) or not 0.0 < c < 0.5:
            raise ValueError(f"EmpiricalNullSigma: central must be a number in (0, 0.5), got central={c!r}")

    def _sigma(self, x):
        return self._null(x)[1]

    def _null(self, x):
        return _empirical_null(x, self.num_bins, float(self.central))


@functools.partial(jax.jit, static_argnums=(1, 2))
def _empirical_null(x, num_bins, central):
    batch, n = x.shape[:-1], x.shape[-1]
    rows = x.reshape(-1, n)
    mean, sd, _, curved = jax.vmap(lambda r: central_matching(r, num_bins, central))(rows)
    mean = jnp.where(curved, mean, jnp.median(rows, axis=-1))
    sd = jnp.where(curved, sd, _mad(rows))
    return mean.reshape(batch), sd.reshape(batch)


_SHORTHANDS = {"mad": MADSigma, "empirical": EmpiricalNullSigma}


def as_sigma_rule(sigma: Any) -> AbstractSigma | None:
    """The rule object for ``sigma`` (an `AbstractSigma` or a shorthand string), or None for a number."""
    if isinstance(sigma, AbstractSigma):
        return sigma
    if isinstance(sigma, str):
        return as_strategy(sigma, AbstractSigma, _SHORTHANDS, "sigma")
    return None


def _checked_scale(s: jax.Array, where: str) -> jax.Array:
    msg = (f"{where}: the estimated sigma is 0 (at least half the values of a row are equal); "
           "pass sigma as a number")
    if is_traced(s):
        return check_values(s, lambda xp, v: ~(v > 0), msg)
    if not bool(np.all(np.asarray(s) > 0)):
        raise ValueError(msg)
    return s


def resolve_sigma(sigma: Any, x: jax.Array, where: str) -> tuple[jax.Array, jax.Array, bool]:
    """``(x, s, estimated)``: the known ``sigma`` checked (> 0), or the rule's estimate per row, shape
    ``(*batch, 1)``; ``x`` centred by the rule's null location where it has one (`EmpiricalNullSigma`)."""
    rule = as_sigma_rule(sigma)
    if rule is None:
        return x, positive("sigma", sigma, x.dtype), False
    loc, s = rule._null(x)
    s = _checked_scale(s.astype(x.dtype), where)
    if loc is not None:
        x = x - loc.astype(x.dtype)[..., None]
    return x, s[..., None], True


def estimate_sigma(x: Any, method: AbstractSigma | str = "mad") -> Float[Array, "*batch"]:
    r"""The noise standard deviation $\hat\sigma$ of each row of ``x`` by a rule (`AbstractSigma`).

    ``sigma="mad"`` (``MADSigma()``) or ``sigma="empirical"`` (``EmpiricalNullSigma()``) in
    `relative_belief_test`, `two_groups_em`, `estimate_sparsity`, `horseshoe_test` and `two_sided_pvalues` uses
    this estimate, per row.

    Args:
      x: observations, shape ``(*batch, n)`` (list, NumPy, JAX or pandas Series).
      method: the rule, or its shorthand ``"mad"`` or ``"empirical"``.

    Returns:
      $\hat\sigma$, shape ``(*batch,)``.

    Raises:
      ValueError: NaN or infinite values in ``x``; an unknown ``method``; an estimate of 0.

    References:
      Hampel (1974), J. Amer. Statist. Assoc. 69 (the MAD). Efron (2004), J. Amer. Statist. Assoc. 99 (the
      empirical null).

    Examples:
      >>> from icmlx.stats import estimate_sigma
      >>> print(estimate_sigma([-2.0, -1.0, 0.0, 1.0, 9.0]))   # 1.4826 * median(|x - 0|)
      1.4826
    """
    rule = as_sigma_rule(method)
    if rule is None:
        raise ValueError(
            f"method must be a sigma rule (MADSigma(), EmpiricalNullSigma()), 'mad' or 'empirical', got {method=!r}")
    x, labels = as_input_array(x, "x")
    if x.ndim < 1 or x.shape[-1] < 2:
        raise ValueError(f"estimate_sigma: x needs at least 2 values along its last axis, got x.shape={x.shape}")
    x = check_finite(x, "x", labels if isinstance(labels, Labels) else None)
    return _checked_scale(rule._sigma(x).astype(x.dtype), "estimate_sigma")
