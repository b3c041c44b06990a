r"""The misspecification experiment of Attia & Koren (arXiv:2503.09411), as one compiled sweep.

Projected SGD on the one-dimensional stochastic convex problem

.. math::
    f_\varepsilon(x) = \varepsilon |x|, \quad x \in [-D, D], \qquad
    g_t = \varepsilon\,\mathrm{sign}(x_t) + \sigma \xi_t,\ \xi_t \sim \mathcal N(0, 1),
    \qquad x_{t+1} = \Pi_{[-D, D]}\left(x_t - \rho\,\eta_t\, g_t\right),\ x_1 = D,

is run for every schedule, misspecification factor :math:`\rho`, problem scale :math:`\varepsilon` and
replicate at once (common random numbers: the same noise for every cell). The worst case over the problem's
scale, :math:`W(\rho) = \max_\varepsilon \mathbb E[\varepsilon |x_T|]`, grows like :math:`\rho^{1/(2p+1)}` for a
schedule annealed to zero with tail degree ``p`` and like :math:`\rho` for constant or inverse-sqrt steps.
:func:`fit_slopes` fits the exponent by least squares on a log–log scale with a bootstrap interval.
"""

import functools
import warnings
from collections.abc import Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from .._deprecation import renamed_kwargs
from .._types import PRNGKey

__all__ = ["SweepResult", "SlopeFitResult", "schedule_table", "misspecification_sweep", "fit_slopes"]


class SweepResult(eqx.Module):
    """Outcome of :func:`misspecification_sweep`.

    Attributes:
      errors: ``(S, K, E, R)`` final suboptimality :math:`\\varepsilon |x_T|` per schedule, rho, scale and
        replicate.
      rhos: ``(K,)`` misspecification factors.
      eps: ``(E,)`` problem scales.
      worst: ``(S, K)`` worst case over scales of the replicate mean, :math:`W(\\rho)`.
      worst_eps_index: ``(S, K)`` index into ``eps`` of the worst case.
    """

    errors: Float[Array, "S K E R"]
    rhos: Float[Array, " K"]
    eps: Float[Array, " E"]
    worst: Float[Array, "S K"]
    worst_eps_index: Int[Array, "S K"]


class SlopeFitResult(eqx.Module):
    """Least-squares slopes of :math:`\\log W` against :math:`\\log\\rho` with a bootstrap interval.

    Attributes:
      slope: ``(S,)`` slope on the full set of replicates.
      ci_low, ci_high: ``(S,)`` percentile bootstrap interval (resampling replicates, redoing the max over
        scales each time).
      boot: ``(B, S)`` bootstrap slopes, ``B = num_resamples``.
    """

    slope: Float[Array, " S"]
    ci_low: Float[Array, " S"]
    ci_high: Float[Array, " S"]
    boot: Float[Array, "B S"]


def schedule_table(schedules: Sequence[Callable], total_steps: int) -> Float[Array, "S T"]:
    """Evaluate schedules at counts ``0..T-1`` and stack them into an ``(S, T)`` step-size table.

    Stacking turns a list of differently-built schedules into one array, so a sweep over schedules is a
    ``vmap``/broadcast instead of one compiled function per schedule.

    Args:
      schedules: ``S`` callables ``count -> step size``.
      total_steps: ``T >= 1``.

    Returns:
      ``(S, T)`` array of step sizes.

    Examples:
      >>> from icmlx.optim import schedule_table, linear_decay, constant
      >>> schedule_table([constant(1.0), linear_decay(1.0, 4)], 4)
      Array([[1.  , 1.  , 1.  , 1.  ],
             [1.  , 0.75, 0.5 , 0.25]], dtype=float32)
    """
    if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps < 1:
        raise ValueError(f"total_steps must be a positive int, got {total_steps=}")
    if len(schedules) == 0:
        raise ValueError("schedules must not be empty")
    counts = jnp.arange(total_steps)
    rows = [jnp.asarray(s(counts)) for s in schedules]
    dtype = jnp.result_type(*rows)
    return jnp.stack([r.astype(dtype) for r in rows])


def _check_positive(x: Array, name: str) -> Array:
    return eqx.error_if(x, ~(jnp.isfinite(x) & (x > 0)).all(), f"{name} must be finite and > 0")


@eqx.filter_jit
def _sweep(key, table, rhos, eps, num_replicates: int, diameter, noise):
    T = table.shape[1]
    dtype = table.dtype
    x0 = jnp.full((table.shape[0], rhos.shape[0], eps.shape[0], num_replicates), diameter, dtype)
    rho_b = rhos[None, :, None, None]
    eps_b = eps[None, None, :, None]

    def body(x, inp):
        t, eta = inp  # eta: (S,)
        xi = jax.random.normal(jax.random.fold_in(key, t), (num_replicates,), dtype)
        g = eps_b * jnp.sign(x) + noise * xi
        x = jnp.clip(x - (rho_b * eta[:, None, None, None]) * g, -diameter, diameter)
        return x, None

    x, _ = jax.lax.scan(body, x0, (jnp.arange(T), table.T))
    errors = eps_b * jnp.abs(x)
    mean = errors.mean(axis=-1)
    return errors, mean.max(axis=-1), jnp.argmax(mean, axis=-1).astype(jnp.int32)


@renamed_kwargs(n_replicates="num_replicates")
def misspecification_sweep(
    key: PRNGKey,
    table: Float[Array, "S T"],
    rhos: Float[ArrayLike, " K"],
    *,
    eps: Float[ArrayLike, " E"] | None = None,
    num_replicates: int = 256,
    diameter: float = 1.0,
    noise: float = 1.0,
) -> SweepResult:
    r"""Run projected SGD on :math:`f_\varepsilon(x) = \varepsilon|x|` for every schedule, rho, scale, replicate.

    One compiled function: a ``lax.scan`` over the ``T`` steps whose state is the ``(S, K, E, R)`` array of
    iterates. The step at count ``t`` for schedule ``s`` is ``rhos[k] * table[s, t]``; build the table with
    :func:`schedule_table` from schedules scaled by the tuned step (e.g. :math:`D/(\sigma\sqrt T)`).

    Args:
      key: PRNG key; the same noise sequence is shared by every cell (common random numbers).
      table: ``(S, T)`` step sizes before misspecification.
      rhos: ``(K,)`` positive misspecification factors.
      eps: ``(E,)`` positive problem scales; default a 17-point log grid on :math:`[\sigma/\sqrt T, \sigma]`.
      num_replicates: ``R`` independent runs per cell (``n_replicates`` is its deprecated name).
      diameter: half-width ``D`` of the domain; the start is ``x_1 = D``.
      noise: gradient noise standard deviation :math:`\sigma`.

    Returns:
      A :class:`SweepResult`.

    Raises:
      ValueError: non-positive sizes; ``XlaRuntimeError`` (via ``eqx.error_if``) for non-positive or
        non-finite ``rhos``/``eps`` or a negative table.

    References:
      Attia & Koren, arXiv:2503.09411.

    Examples:
      >>> import jax
      >>> from icmlx.optim import misspecification_sweep, schedule_table, linear_decay
      >>> T = 64
      >>> table = schedule_table([linear_decay(1.0 / T**0.5, T)], T)
      >>> res = misspecification_sweep(jax.random.key(0), table, jnp.array([1.0, 4.0]), num_replicates=8)
      >>> res.worst.shape
      (1, 2)
    """
    table = jnp.asarray(table)
    if not jnp.issubdtype(table.dtype, jnp.floating):
        raise TypeError(f"table must be floating, got dtype {table.dtype}")
    if isinstance(num_replicates, bool) or not isinstance(num_replicates, int) or num_replicates < 1:
        raise ValueError(f"num_replicates must be a positive int, got {num_replicates=}")
    if not diameter > 0 or not noise > 0:
        raise ValueError(f"diameter and noise must be > 0, got {diameter=}, {noise=}")
    T = table.shape[1]
    dtype = table.dtype
    rhos = jnp.asarray(rhos).astype(dtype)
    if eps is None:
        eps = jnp.geomspace(noise / T**0.5, noise, 17).astype(dtype)
    eps = jnp.asarray(eps).astype(dtype)
    rhos = _check_positive(rhos, "rhos")
    eps = _check_positive(eps, "eps")
    table = eqx.error_if(table, ~(jnp.isfinite(table) & (table >= 0)).all(),
                         "table must be finite and >= 0")
    errors, worst, idx = _sweep(key, table, rhos, eps, num_replicates, float(diameter), float(noise))
    return SweepResult(errors=errors, rhos=rhos, eps=eps, worst=worst, worst_eps_index=idx)


def _ols_slope(logx, logy, mask):
    w = mask.astype(logx.dtype)
    n = w.sum()
    mx = (w * logx).sum() / n
    my = (w * logy).sum(axis=-1, keepdims=True) / n
    cov = (w * (logx - mx) * (logy - my)).sum(axis=-1)
    var = (w * (logx - mx) ** 2).sum()
    return cov / var


def _accept_old_argument_order(fn):
    """``fit_slopes(result, key, ...)``, the previous release's order, still works for one release (warns)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if len(args) >= 1 and isinstance(args[0], SweepResult):
            warnings.warn(
                "fit_slopes(result, key, ...) is deprecated and will be removed in the next release; the key comes "
                "first: fit_slopes(key, result, ...).",
                DeprecationWarning,
                stacklevel=2,
            )
            if len(args) >= 2:
                args = (args[1], args[0], *args[2:])
            else:
                args = (kwargs.pop("key"), args[0])
        return fn(*args, **kwargs)

    return wrapper


@_accept_old_argument_order
@renamed_kwargs(n_boot="num_resamples")
def fit_slopes(
    key: PRNGKey,
    result: SweepResult,
    *,
    fit_range: tuple[float, float] = (4.0, 64.0),
    num_resamples: int = 200,
    level: float = 0.95,
) -> SlopeFitResult:
    r"""Fit :math:`\log W(\rho) = a + b \log \rho` per schedule on ``fit_range``, with a bootstrap interval.

    The bootstrap resamples replicates with replacement (the same resample for every cell, as the draws are
    shared), recomputes the replicate means, redoes the max over scales, and refits.

    Args:
      key: PRNG key for the bootstrap.
      result: a :class:`SweepResult`.
      fit_range: inclusive range of :math:`\rho` used in the fit (fix it before looking at the data).
      num_resamples: number of bootstrap resamples ``B`` (``n_boot`` is its deprecated name).
      level: coverage of the percentile interval.

    The previous release's order ``fit_slopes(result, key, ...)`` still works for one release, with a
    ``DeprecationWarning``.

    Returns:
      A :class:`SlopeFitResult`.

    Raises:
      ValueError: fewer than two rhos in ``fit_range``, or ``num_resamples < 1``.

    References:
      Attia & Koren, arXiv:2503.09411.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.optim import fit_slopes, linear_decay, misspecification_sweep, schedule_table
      >>> T = 64
      >>> table = schedule_table([linear_decay(1.0 / T**0.5, T)], T)
      >>> res = misspecification_sweep(jax.random.key(0), table, jnp.array([4.0, 8.0, 16.0]), num_replicates=8)
      >>> fit_slopes(jax.random.key(1), res, num_resamples=10).boot.shape
      (10, 1)
    """
    if isinstance(num_resamples, bool) or not isinstance(num_resamples, int) or num_resamples < 1:
        raise ValueError(f"num_resamples must be a positive int, got {num_resamples=}")
    rhos = result.rhos
    mask = (rhos >= fit_range[0] * (1 - 1e-6)) & (rhos <= fit_range[1] * (1 + 1e-6))
    if int(mask.sum()) < 2:
        raise ValueError(f"need at least two rhos in {fit_range=}, got rhos={rhos}")
    logx = jnp.log(rhos)
    slope = _ols_slope(logx, jnp.log(result.worst), mask)

    errors = result.errors
    R = errors.shape[-1]
    idx = jax.random.randint(key, (num_resamples, R), 0, R)
    counts = jnp.zeros((num_resamples, R), errors.dtype).at[jnp.arange(num_resamples)[:, None], idx].add(1.0)
    means = jnp.einsum("sker,br->bske", errors, counts) / R
    worst_b = means.max(axis=-1)  # (B, S, K)
    boot = _ols_slope(logx, jnp.log(worst_b), mask)  # (B, S)
    a = (1 - level) / 2
    lo = jnp.quantile(boot, a, axis=0)
    hi = jnp.quantile(boot, 1 - a, axis=0)
    return SlopeFitResult(slope=slope, ci_low=lo, ci_high=hi, boot=boot)
