"""Full-Bayes horseshoe for the normal-means problem, fitted with numpyro NUTS (numpyro imported lazily)."""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from .._progress import resolve_progress
from .._repr import record_repr, summarise
from .._types import PRNGKey, RealScalarLike
from ._checks import positive, prepare_scores, static_int

__all__ = ["HorseshoeMCMCResult", "horseshoe_nuts"]

_NUM_BLOCKS = 20  # batch means for the Monte Carlo standard error: 20 blocks of at least 2 draws


class HorseshoeMCMCResult(eqx.Module):
    """Posterior summaries from `horseshoe_nuts`.

    Attributes:
      shrinkage: posterior mean of $1-\\kappa_i$, shape ``(n,)``.
      shrinkage_se: its Monte Carlo standard error (batch means over 20 blocks), shape ``(n,)``.
      posterior_mean: $E[\\mu_i\\mid x] = E[1-\\kappa_i\\mid x]\\,x_i$, shape ``(n,)``.
      reject: Datta–Ghosh decisions $E[1-\\kappa_i\\mid x]>1/2$, shape ``(n,)``.
      tau: posterior draws of $\\tau$ (constant if ``tau`` was fixed), shape
        ``(num_samples,)``.
    """

    shrinkage: Float[Array, " n"]
    shrinkage_se: Float[Array, " n"]
    posterior_mean: Float[Array, " n"]
    reject: Bool[Array, " n"]
    tau: Float[Array, " s"]

    @property
    def num_rejected(self) -> Array:
        """Number of rejections."""
        return jnp.sum(self.reject, axis=-1)

    @property
    def num_tests(self) -> int:
        """Number of tests."""
        return self.reject.shape[-1]

    def __repr__(self) -> str:
        if isinstance(self.tau, jax.core.Tracer):
            return record_repr(self)
        return (f"HorseshoeMCMCResult(num_tests={self.num_tests}, num_rejected={int(self.num_rejected)}, "
                f"num_samples={self.tau.shape[0]}, tau_mean={summarise(jnp.mean(self.tau))}, "
                f"max_shrinkage_se={summarise(jnp.max(self.shrinkage_se))})")


def horseshoe_nuts(
    key: PRNGKey,
    x: Any,
    *,
    tau: RealScalarLike | None = None,
    tau_scale: RealScalarLike = 1.0,
    sigma: RealScalarLike = 1.0,
    num_warmup: int = 500,
    num_samples: int = 1000,
    progress: bool | None = None,
) -> HorseshoeMCMCResult:
    r"""Horseshoe posterior for $X_i\sim N(\mu_i,\sigma^2)$ by NUTS (numpyro), with $\mu$ integrated out.

    Model: $\lambda_i\sim C^+(0,1)$, $\tau\sim C^+(0,\text{tau\_scale})$ (or fixed ``tau``),
    $X_i\mid\lambda_i,\tau\sim N(0,\sigma^2(1+\lambda_i^2\tau^2))$ (the slab mean marginalised, which mixes
    far better than the centred parametrisation). Returns the posterior mean of
    $1-\kappa_i=\lambda_i^2\tau^2/(1+\lambda_i^2\tau^2)$. With fixed ``tau`` it is a Monte Carlo reference for
    `horseshoe_shrinkage`. numpyro is imported inside this function, so ``import icmlx.stats`` does not import
    it. Not jit-able as a whole (numpyro's MCMC driver jits itself).

    Args:
      key: PRNG key.
      x: observations, shape ``(n,)`` (list, NumPy, JAX or pandas Series); all finite.
      tau: fixed global scale (> 0), or ``None`` for the half-Cauchy hyperprior.
      tau_scale: scale of the half-Cauchy prior on $\tau$ (> 0).
      sigma: known noise standard deviation (> 0).
      num_warmup: NUTS warm-up draws (an int >= 0; one chain).
      num_samples: kept draws (an int >= 40: the standard error uses 20 batch means of at least 2 draws).
      progress: show numpyro's progress bar (warm-up and sampling). None shows progress in an interactive terminal
        for loops driven from Python; a loop inside one compiled program reports only with progress=True. NUTS
        with a progress bar is driven from Python (numpyro's own bar), so None shows it in a terminal.

    Returns:
      `HorseshoeMCMCResult`.

    Raises:
      ImportError: numpyro is not installed (``pip install icmlx[stats]``).
      ValueError: non-positive or infinite scales; NaN or infinite values in ``x``; ``x`` not 1-d; ``num_warmup``
        or ``num_samples`` not an int in range.

    References:
      Carvalho, Polson & Scott (2010), Biometrika 97(2). Hoffman & Gelman (2014), JMLR 15 (NUTS).
      Phan, Pradhan & Jankowiak (2019), arXiv:1912.11554 (numpyro).

    Examples:
      Skipped under doctest (NUTS compilation is slow; ``tests/stats`` runs it):

      >>> import jax, jax.numpy as jnp
      >>> from icmlx.stats import horseshoe_nuts
      >>> fit = horseshoe_nuts(jax.random.key(0), jnp.array([0.0, 8.0]), tau=0.1,
      ...                      num_warmup=200, num_samples=400)  # doctest: +SKIP
      >>> print(fit.reject)  # doctest: +SKIP
      [False  True]
    """
    try:
        import numpyro
        import numpyro.distributions as dist
        from numpyro.infer import MCMC, NUTS
    except ImportError as err:  # pragma: no cover - numpyro is in the stats extra
        raise ImportError("horseshoe_nuts needs numpyro: pip install 'icmlx[stats]'") from err
    num_warmup = static_int("horseshoe_nuts", "num_warmup", num_warmup, lo=0)
    num_samples = static_int("horseshoe_nuts", "num_samples", num_samples, lo=2 * _NUM_BLOCKS)
    x, _ = prepare_scores(x, "horseshoe_nuts")
    if x.ndim != 1:
        raise ValueError(f"horseshoe_nuts: x must be 1-d (one set of tests), got {x.shape=}")
    dt = x.dtype
    s = positive("sigma", sigma, dt)
    ts = positive("tau_scale", tau_scale, dt)
    tau_fixed = None if tau is None else positive("tau", tau, dt)
    n = x.shape[0]

    def model(obs):
        lam = numpyro.sample("lam", dist.HalfCauchy(jnp.ones((n,), dt)))
        t = numpyro.sample("tau", dist.HalfCauchy(ts)) if tau_fixed is None else tau_fixed
        scale = s * jnp.sqrt(1.0 + (lam * t) ** 2)
        numpyro.sample("obs", dist.Normal(jnp.zeros((n,), dt), scale), obs=obs)

    with jax.numpy_dtype_promotion("standard"):  # numpyro internals mix weak/strong dtypes
        mcmc = MCMC(NUTS(model), num_warmup=num_warmup, num_samples=num_samples,
                    progress_bar=resolve_progress(progress))
        mcmc.run(key, x)
        draws = mcmc.get_samples()
    lam = draws["lam"].astype(dt)
    taus = draws["tau"].astype(dt) if tau_fixed is None else jnp.full((num_samples,), tau_fixed, dt)
    lt2 = (lam * taus[:, None]) ** 2
    one_minus_kappa = lt2 / (1.0 + lt2)
    mean = jnp.mean(one_minus_kappa, axis=0)
    nb = _NUM_BLOCKS
    m = (num_samples // nb) * nb
    blocks = one_minus_kappa[:m].reshape(nb, m // nb, n).mean(axis=1)
    se = jnp.std(blocks, axis=0, ddof=1) / jnp.sqrt(jnp.asarray(nb, dt))
    return HorseshoeMCMCResult(
        shrinkage=mean, shrinkage_se=se, posterior_mean=mean * x, reject=mean > 0.5, tau=taus
    )
