"""Drift estimators from sparse observations: naive increment regression, the conservative (score)
estimator, and EM with SMC bridges guided by observation geodesics (Maoutsa, arXiv:2512.23566)."""

import functools
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._deprecation import deprecated_attribute, renamed_kwargs
from ._basis import LinearDrift, RBFBasis, SparseGP, _solve_psd, box_grid

__all__ = [
    "DriftEstimate",
    "default_function_class",
    "naive_drift",
    "conservative_drift",
]


class DriftEstimate(eqx.Module):
    """Result of :func:`naive_drift` / :func:`conservative_drift`.

    Attributes:
      drift: the fitted drift, a callable ``(d,) -> (d,)``.
      method: ``"naive"`` or ``"conservative"``.
      num_samples: number of increments (naive) or states (conservative) used.
    """

    drift: LinearDrift
    method: str = eqx.field(static=True)
    num_samples: int = eqx.field(static=True)

    n_samples = deprecated_attribute("num_samples")  # deprecated alias, one release


# --------------------------------------------------------------------------- validation


def _check_inputs(observations, ts, sigma):
    obs = jnp.asarray(observations)
    if not jnp.issubdtype(obs.dtype, jnp.floating):
        raise TypeError(f"observations must be floating point, got {obs.dtype=}")
    if obs.ndim == 2:
        obs = obs[None]
    if obs.ndim != 3:
        raise ValueError(f"observations must have shape (n_obs, d) or (n_traj, n_obs, d), got {obs.shape=}")
    if obs.shape[1] < 2:
        raise ValueError(f"need at least two observations per trajectory, got {obs.shape[1]=}")
    ts = jnp.asarray(ts)
    if ts.shape != (obs.shape[1],):
        raise ValueError(f"ts must have shape (n_obs,) = ({obs.shape[1]},), got {ts.shape=}")
    ts = ts.astype(obs.dtype)
    if isinstance(sigma, int | float) and not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma=}")
    sig = jnp.asarray(sigma, obs.dtype)
    if sig.shape != ():
        raise ValueError(f"sigma must be a scalar (isotropic noise), got {sig.shape=}")
    obs = eqx.error_if(obs, ~jnp.all(jnp.isfinite(obs)), "observations contain NaN or inf")
    ts = eqx.error_if(ts, ~jnp.all(jnp.diff(ts) > 0), "ts must be strictly increasing")
    sig = eqx.error_if(sig, ~(sig > 0), "sigma must be positive")
    return obs, ts, sig


@renamed_kwargs(n_per_dim="num_per_dim")
def default_function_class(
    observations: Float[Array, "*batch d"], num_per_dim: int = 12, lengthscale_factor: float = 0.2
) -> SparseGP:
    r"""The default drift class: a :class:`SparseGP` on a grid of inducing points over the observations.

    The ``num_per_dim ** d`` inducing points lie on a regular grid over the bounding box of the observations
    widened by 0.5 on every side; the RBF lengthscale is :math:`\ell = c\,ar w` with ``c =
    lengthscale_factor`` and :math:`ar w` the mean box width.

    Args:
      observations: observed states, any leading shape, last axis ``d``.
      num_per_dim: inducing points per axis.
      lengthscale_factor: ``c`` above.

    Returns:
      A :class:`SparseGP` (unfitted; its ``fit`` gives a :class:`LinearDrift`).

    References:
      Ruttor, Batz & Opper, NeurIPS 2013; Maoutsa, arXiv:2512.23566.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import default_function_class
      >>> fc = default_function_class(jnp.array([[0.0, 0.0], [1.0, 1.0]]), num_per_dim=4)
      >>> fc.basis.centers.shape, round(float(fc.basis.lengthscale), 2)
      ((16, 2), 0.2)
    """
    pts = jnp.asarray(observations).reshape(-1, jnp.shape(observations)[-1])
    width = jnp.mean(jnp.max(pts, 0) - jnp.min(pts, 0))
    return SparseGP(RBFBasis(box_grid(pts, num_per_dim, pad=0.5), lengthscale_factor * width))


def _intervals(obs, ts):
    d = obs.shape[-1]
    states = obs[:, :-1].reshape(-1, d)
    incs = (obs[:, 1:] - obs[:, :-1]).reshape(-1, d)
    dts = jnp.broadcast_to(jnp.diff(ts), obs.shape[:1] + (ts.shape[0] - 1,)).reshape(-1)
    return states, incs, dts


# --------------------------------------------------------------------------- estimators


def naive_drift(
    observations: Float[Array, "*batch n_obs d"],
    ts: Float[Array, " n_obs"],
    sigma: float | Float[Array, ""],
    *,
    function_class: eqx.Module | None = None,
) -> DriftEstimate:
    r"""Increment regression at the observation interval (the "Gaussian likelihood" baseline).

    Fits :math:`f` to :math:`(y_{k+1} - y_k)/\tau_k` on :math:`y_k` under the Euler path likelihood (see
    :class:`SparseGP`). Consistent as :math:`\tau \to 0`; for linear drift it converges to
    :math:`(e^{A\tau} - I)/\tau` and is biased for large ``tau``. Uneven intervals are supported.

    Args:
      observations: shape ``(n_obs, d)`` (one trajectory) or ``(n_traj, n_obs, d)``.
      ts: strictly increasing observation times shared by all trajectories, shape ``(n_obs,)``.
      sigma: positive diffusion scale.
      function_class: a :class:`SparseGP` or :class:`RidgeRegression`; default :func:`default_function_class`.

    Returns:
      :class:`DriftEstimate`.

    Raises:
      ValueError: fewer than two observations, shape mismatch, ``sigma <= 0``; at run time (``eqx.error_if``)
        NaN observations or non-increasing times.
      TypeError: non-floating observations.

    References:
      Maoutsa, arXiv:2512.23566.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import naive_drift
      >>> y = jnp.cumsum(0.1 * jax.random.normal(jax.random.key(0), (500, 2)), axis=0)  # f = 0
      >>> est = naive_drift(y, jnp.arange(500.0) * 0.01, 1.0)
      >>> est.method, est.drift(jnp.zeros(2)).shape
      ('naive', (2,))
    """
    obs, ts, sig = _check_inputs(observations, ts, sigma)
    fc = default_function_class(obs) if function_class is None else function_class
    states, incs, dts = _intervals(obs, ts)
    return DriftEstimate(fc.fit(states, incs, dts, sig), "naive", int(states.shape[0]))


def _is_scalar(x) -> bool:
    return isinstance(x, int | float | np.number) or (hasattr(x, "shape") and jnp.ndim(x) == 0)


def _old_conservative_call(fn):
    """Accept the pre-``ts`` call ``conservative_drift(observations, sigma)`` for one release, with a warning."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        old = (len(args) == 2 and "sigma" not in kwargs and "ts" not in kwargs and _is_scalar(args[1])) or (
            len(args) == 1 and "sigma" in kwargs and "ts" not in kwargs
        )
        if old:
            warnings.warn(
                "conservative_drift(observations, sigma) is deprecated and will be removed in the next release; "
                "call conservative_drift(observations, ts, sigma) (ts may be None: this estimator ignores time).",
                DeprecationWarning,
                stacklevel=2,
            )
            sigma = kwargs.pop("sigma") if "sigma" in kwargs else args[1]
            return fn(args[0], None, sigma, **kwargs)
        return fn(*args, **kwargs)

    return wrapper


@_old_conservative_call
def conservative_drift(
    observations: Float[Array, "*batch d"],
    ts: Float[Array, " n_obs"] | None,
    sigma: float | Float[Array, ""],
    *,
    function_class: eqx.Module | None = None,
    regularization: float = 1e-3,
) -> DriftEstimate:
    r"""Conservative drift :math:`\hat f = (\sigma^2/2)\nabla\log\hat p` from a score estimate of the states.

    The score :math:`\psi = W^\top\phi` is fitted by (Hyvärinen) score matching in the same feature space,
    :math:`\min_W \frac1n\sum_i[\lVert\psi(y_i)\rVert^2 + 2\nabla\cdot\psi(y_i)] + C\,\mathrm{tr}(W^\top P W)`,
    i.e. :math:`W = -(\Phi^\top\Phi/n + C P)^{-1} \frac1n\sum_i J_\phi(y_i)` with
    :math:`(J_\phi)_{jk} = \partial_k\phi_j`. It uses only the invariant density, so it is exact for gradient
    drifts and misses every divergence-free (rotational) part.

    Args:
      observations: states, shape ``(n_obs, d)`` or ``(n_traj, n_obs, d)``; any leading shape when ``ts`` is
        ``None``. Time order is ignored.
      ts: the observation times, shape ``(n_obs,)`` (checked like :func:`naive_drift`'s, then unused: the
        estimator reads only the states' density), or ``None``.
      sigma: positive diffusion scale.
      function_class: feature class providing ``basis`` and ``penalty`` (default :func:`default_function_class`).
      regularization: ``C`` above.

    Returns:
      :class:`DriftEstimate` with method ``"conservative"``.

    Raises:
      ValueError: ``sigma <= 0``, fewer than two states, or ``ts`` of the wrong shape; at run time NaN states
        or non-increasing ``ts``.

    Deprecated:
      The two-argument call ``conservative_drift(observations, sigma)`` still works for one release with a
      ``DeprecationWarning`` (it means ``ts=None``).

    References:
      Hyvärinen, JMLR 6 (2005); Maoutsa, Reich & Opper, Entropy 22:802 (2020), arXiv:2005.06400.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import conservative_drift
      >>> y = jax.random.normal(jax.random.key(0), (2000, 2)) * 0.5   # N(0, 0.25 I): score -4x
      >>> est = conservative_drift(y, None, 1.0)                        # drift (1/2) score = -2x
      >>> [round(v, 1) for v in est.drift(jnp.array([0.5, 0.0])).tolist()]
      [-1.0, 0.0]
    """
    pts = jnp.asarray(observations)
    if pts.ndim < 2 or pts.reshape(-1, pts.shape[-1]).shape[0] < 2:
        raise ValueError(f"need at least two states of shape (..., d), got {pts.shape=}")
    if ts is not None:
        obs, _, sig = _check_inputs(pts, ts, sigma)
        pts = obs.reshape(-1, obs.shape[-1])
    else:
        pts = pts.reshape(-1, pts.shape[-1])
        dummy_ts = jnp.arange(pts.shape[0], dtype=pts.dtype)
        obs, _, sig = _check_inputs(pts, dummy_ts, sigma)
        pts = obs[0]
    fc = default_function_class(pts) if function_class is None else function_class
    drift = _score_fit(fc.basis, fc.penalty(pts.dtype), pts, sig, regularization)
    return DriftEstimate(drift, "conservative", int(pts.shape[0]))


@eqx.filter_jit
def _score_fit(basis, P, pts, sig, regularization):
    n = pts.shape[0]
    phi = jax.vmap(basis)(pts)
    jac = jnp.sum(jax.vmap(jax.jacfwd(basis))(pts), axis=0)  # (m, d)
    G = phi.T @ phi / n + regularization * P
    W = -_solve_psd(G, jac / n)
    return LinearDrift(basis, 0.5 * sig**2 * W)
