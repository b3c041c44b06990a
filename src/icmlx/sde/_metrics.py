"""Accuracy metrics for inferred drifts: density-weighted RMSE on a grid and plain RMSE."""

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._checks import is_traced
from ._basis import box_grid
from ._data import ArrayOrFrame, as_states
from ._systems import DriftFn

__all__ = ["kde_weights", "weighted_rmse", "rmse"]


def kde_weights(
    points: Float[Array, "n d"], grid: Float[Array, "g d"], bandwidth: float | None = None
) -> Float[Array, " g"]:
    r"""Gaussian kernel density estimate of ``points`` evaluated on ``grid`` (normalised to sum to one).

    The bandwidth defaults to Scott's rule per dimension, :math:`h_d = n^{-1/(d+4)} \mathrm{std}_d`.

    Args:
      points: data, shape ``(n, d)``.
      grid: evaluation points, shape ``(g, d)``.
      bandwidth: optional positive scalar bandwidth (all dimensions).

    Returns:
      Weights of shape ``(g,)`` summing to one.

    Raises:
      ValueError: ``bandwidth <= 0``.

    References:
      Scott, "Multivariate Density Estimation" (1992).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import kde_weights
      >>> w = kde_weights(jnp.zeros((10, 2)), jnp.array([[0.0, 0.0], [3.0, 0.0]]), bandwidth=1.0)
      >>> round(float(w.sum()), 4), bool(w[0] > w[1])
      (1.0, True)
    """
    if bandwidth is not None and not bandwidth > 0:
        raise ValueError(f"kde_weights: bandwidth must be positive or None (Scott's rule), got {bandwidth=}")
    n, d = points.shape
    if bandwidth is None:
        h = jnp.std(points, axis=0) * n ** (-1.0 / (d + 4))
    else:
        h = jnp.full((d,), bandwidth, points.dtype)
    z = (grid[:, None, :] - points[None, :, :]) / h
    logk = jax.scipy.special.logsumexp(-0.5 * jnp.sum(z * z, axis=-1), axis=1)
    return jax.nn.softmax(logk)


_NOT_TRACEABLE = (
    jax.errors.TracerArrayConversionError,
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
)

#: Largest KDE evaluation (grid points x observations) :func:`weighted_rmse` attempts.
MAX_KDE_PAIRS = 2**28


def _evaluate(f, grid, name: str, fn: str):
    """``f`` on every grid point: ``vmap`` when ``f`` is JAX-traceable, else point by point on the host with
    NumPy (a function calling ``np.sin`` on a NumPy array, say)."""
    d = grid.shape[-1]
    try:
        out = jax.vmap(f)(grid)
    except _NOT_TRACEABLE:
        if is_traced(grid):
            raise TypeError(f"{fn}: {name} is not JAX-traceable (it converts its input to NumPy), so it cannot "
                            "run inside jit; call the metric outside jit") from None
        host = np.asarray(grid)
        out = jnp.asarray(np.stack([np.asarray(f(p), dtype=host.dtype) for p in host]))
    if out.shape != grid.shape:
        raise ValueError(f"{fn}: {name} must map a state of shape ({d},) to a drift of shape ({d},), got output "
                         f"shape {out.shape[1:]} per state")
    return out.astype(grid.dtype)


def _grid_errors(f_true, f_est, observations, grid_size, fn):
    obs, _ = as_states(observations, fn=fn)
    pts = obs.reshape(-1, obs.shape[-1])
    grid = box_grid(pts, grid_size)
    err = _evaluate(f_true, grid, "f_true", fn) - _evaluate(f_est, grid, "f_est", fn)
    return pts, grid, err


def weighted_rmse(
    f_true: DriftFn,
    f_est: DriftFn,
    observations: ArrayOrFrame,
    *,
    grid_size: int = 20,
    bandwidth: float | None = None,
) -> Float[Array, ""]:
    r"""Density-weighted RMSE, the paper's headline metric, averaged over output dimensions.

    .. math::
        \mathrm{wRMSE} = \frac1d \sum_{k=1}^d
        \sqrt{\frac{\sum_g w_g (f_k(x_g) - \hat f_k(x_g))^2}{\sum_g w_g}}

    on a ``grid_size ** d`` grid over the bounding box of the observations, with ``w`` a Gaussian KDE of
    the observations (Scott bandwidth unless ``bandwidth`` is given; the authors' scripts pick it by
    cross-validation). Plain RMSE is dominated by extrapolation in the box corners; this is not.

    Args:
      f_true: reference drift ``(d,) -> (d,)``: a JAX function (``vmap``-ped over the grid) or any Python
        function of a NumPy state, such as one calling ``np.sin`` (evaluated point by point on the host).
      f_est: estimated drift ``(d,) -> (d,)``, likewise.
      observations: observed states, any leading shape, last axis ``d`` (NumPy, JAX, a DataFrame).
      grid_size: grid points per axis.
      bandwidth: optional positive scalar KDE bandwidth.

    Returns:
      Scalar wRMSE.

    Raises:
      ValueError: a drift whose output shape is not ``(d,)``, ``bandwidth <= 0``, or a grid too large: the
        grid has ``grid_size ** d`` points and the KDE compares each with every observation; lower
        ``grid_size`` (the message says to what).

    References:
      Maoutsa, arXiv:2512.23566.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import weighted_rmse
      >>> obs = jax.random.normal(jax.random.key(0), (100, 2))
      >>> float(weighted_rmse(lambda x: -x, lambda x: -x + 0.5, obs))
      0.5
    """
    if bandwidth is not None and not bandwidth > 0:
        raise ValueError(f"weighted_rmse: bandwidth must be positive or None (Scott's rule), got {bandwidth=}")
    obs, _ = as_states(observations, fn="weighted_rmse")
    n, d = obs.reshape(-1, obs.shape[-1]).shape
    if grid_size**d * n > MAX_KDE_PAIRS:
        fit = max(2, int((MAX_KDE_PAIRS / n) ** (1.0 / d) + 1e-9))
        raise ValueError(
            f"weighted_rmse: grid_size={grid_size} in d={d} is {grid_size**d:,} grid points, each compared with "
            f"{n:,} observations by the KDE; pass grid_size <= {fit} (or fewer observations)"
        )
    pts, grid, err = _grid_errors(f_true, f_est, obs, grid_size, "weighted_rmse")
    w = kde_weights(pts, grid, bandwidth)
    return jnp.mean(jnp.sqrt(jnp.sum(w[:, None] * err**2, axis=0) / jnp.sum(w)))


def rmse(
    f_true: DriftFn, f_est: DriftFn, observations: ArrayOrFrame, *, grid_size: int = 20
) -> Float[Array, ""]:
    r"""Plain RMSE :math:`\sqrt{\mathrm{mean}_{g,k}(f_k - \hat f_k)^2}` on the grid of :func:`weighted_rmse`.

    The drifts may be JAX functions or NumPy-only Python functions, as in :func:`weighted_rmse`.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import rmse
      >>> obs = jax.random.normal(jax.random.key(0), (100, 2))
      >>> float(rmse(lambda x: -x, lambda x: -x + 0.5, obs))
      0.5
    """
    _, _, err = _grid_errors(f_true, f_est, observations, grid_size, "rmse")
    return jnp.sqrt(jnp.mean(err**2))
