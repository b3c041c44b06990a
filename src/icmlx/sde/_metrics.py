"""Accuracy metrics for inferred drifts: density-weighted RMSE on a grid and plain RMSE."""

import types

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_values, is_traced
from .._inputs import to_device
from ._basis import MAX_GRID_POINTS, box_grid
from ._chunks import chunk_rows, chunked
from ._data import ArrayOrFrame, as_real, as_states, check_count, check_finite, check_scale
from ._systems import DriftFn

__all__ = ["kde_weights", "weighted_rmse", "rmse"]


def kde_weights(
    points: ArrayLike, grid: ArrayLike, bandwidth: float | None = None
) -> Float[Array, " g"]:
    r"""Gaussian kernel density estimate of ``points`` evaluated on ``grid`` (normalised to sum to one).

    The bandwidth defaults to Scott's rule per dimension, $h_d = n^{-1/(d+4)} \mathrm{std}_d$.

    Args:
      points: data, shape ``(n, d)``.
      grid: evaluation points, shape ``(g, d)``.
      bandwidth: optional positive scalar bandwidth (all dimensions).

    Returns:
      Weights of shape ``(g,)`` summing to one.

    Raises:
      ValueError: ``bandwidth`` not finite and positive; ``points``/``grid`` not 2-D with one ``d``, empty or
        not finite; Scott's rule with a constant coordinate (pass ``bandwidth``).

    References:
      Scott, "Multivariate Density Estimation" (1992).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import kde_weights
      >>> w = kde_weights(jnp.zeros((10, 2)), jnp.array([[0.0, 0.0], [3.0, 0.0]]), bandwidth=1.0)
      >>> round(float(w.sum()), 4), bool(w[0] > w[1])
      (1.0, True)
    """
    fn = "kde_weights"
    check_scale(bandwidth, "bandwidth", fn, allow_none=True)
    points = as_real(points, "points", fn)
    grid = as_real(grid, "grid", fn, points.dtype)
    if points.ndim != 2 or points.shape[0] < 1:
        raise ValueError(f"{fn}: points must have shape (n, d) with n >= 1, got shape {points.shape}")
    n, d = points.shape
    if grid.ndim != 2 or grid.shape[1] != d:
        raise ValueError(f"{fn}: grid must have shape (g, d) with d = {d} (the points'), got shape {grid.shape}")
    points = check_finite(points, "points", fn)
    grid = check_finite(grid, "grid", fn)
    if bandwidth is None:
        points = check_values(points, lambda xp, v: xp.any(xp.max(v, axis=0) == xp.min(v, axis=0)),
                              f"{fn}: Scott's rule needs spread data, but a coordinate of points is constant (or "
                              "there is one point); pass a positive bandwidth")
    return _kde(points, grid, _bandwidths(points, bandwidth))


def _bandwidths(points, bandwidth):
    """Per-dimension KDE bandwidths: Scott's rule for ``bandwidth=None``, else the (checked) scalar in every one."""
    n, d = points.shape
    if bandwidth is None:
        return _stable_std(points) * n ** (-1.0 / (d + 4))
    return jnp.full((d,), bandwidth, points.dtype)


def _kde(points, grid, h):
    n, d = points.shape
    # the (grid x points) kernel matrix one chunk of points at a time, its log-sums combined
    chunk = chunk_rows(n, points.dtype.itemsize * 3 * (grid.shape[0] + d))

    def part(win, valid):
        # the points on the last axis, (g, d, points): the elementwise work runs along the points, not along d
        z = (grid[:, :, None] - win[0].T[None]) / h[:, None]
        return jax.scipy.special.logsumexp(jnp.where(valid[None], -0.5 * jnp.sum(z * z, axis=1), -jnp.inf),
                                           axis=1), None

    logk = chunked(part, (points,), n, chunk, combine=jnp.logaddexp, identity=-jnp.inf)[0]
    return jax.nn.softmax(logk)


@jax.jit
def _weighted_rmse_jit(points, grid, f_true_grid, f_est_grid, bandwidth):
    # one program for the arithmetic of weighted_rmse, whose inputs the host has checked (eagerly, each of its
    # few dozen operations was a program of its own, compiled again for every new shape); bandwidth=None (an
    # empty pytree, so its own trace) is Scott's rule
    return jnp.mean(_rms(f_true_grid - f_est_grid, axis=0, w=_kde(points, grid, _bandwidths(points, bandwidth))))


def _stable_std(x):
    """Standard deviation per column, scaled first so that data near the float limits does not overflow."""
    c = x - jnp.mean(x, axis=0)
    m = jnp.max(jnp.abs(c), axis=0)
    m = jnp.where(m > 0, m, jnp.ones_like(m))
    return m * jnp.sqrt(jnp.mean((c / m) ** 2, axis=0))


def _rms(err, axis=None, w=None):
    """``sqrt(mean(err**2))`` (weighted by ``w`` along axis 0), scaled first so that huge errors do not overflow."""
    m = jnp.max(jnp.abs(err), axis=axis, keepdims=True)
    m = jnp.where(m > 0, m, jnp.ones_like(m))
    z = (err / m) ** 2
    ms = jnp.mean(z, axis=axis) if w is None else jnp.sum(w[:, None] * z, axis=0) / jnp.sum(w)
    return jnp.squeeze(m, axis) * jnp.sqrt(ms) if axis is not None else m.reshape(()) * jnp.sqrt(ms)


_NOT_TRACEABLE = (
    jax.errors.TracerArrayConversionError,
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
)


@eqx.filter_jit
def _vmap_jit(f, grid):
    # one program per drift (a module's arrays are traced, a plain function is static) instead of one per
    # operation of the drift
    return jax.vmap(f)(grid)


def _static_part_hashable(f) -> bool:
    """Whether ``eqx.filter_jit`` can key its cache on ``f`` (what is not an array must be hashable)."""
    try:
        hash(eqx.partition(f, eqx.is_array)[1])
    except TypeError:
        return False
    return True


def _made_per_call(f) -> bool:
    """Whether ``f`` is a lambda or a nested function: typically a new object on every call, which the compiled
    path would key its cache on (a compile per call, and the cache holding every such function alive)."""
    qualname = getattr(f, "__qualname__", "") if isinstance(f, types.FunctionType) else ""
    return "<lambda>" in qualname or "<locals>" in qualname


def _evaluate(f, grid, name: str, fn: str):
    """``f`` on every grid point: ``vmap`` when ``f`` is JAX-traceable, else point by point on the host with
    NumPy (a function calling ``np.sin`` on a NumPy array, say)."""
    d = grid.shape[-1]
    try:
        out = _vmap_jit(f, grid) if _static_part_hashable(f) and not _made_per_call(f) else jax.vmap(f)(grid)
    except _NOT_TRACEABLE:
        if is_traced(grid):
            raise TypeError(f"{fn}: {name} is not JAX-traceable (it converts its input to NumPy), so it cannot "
                            "run inside jit; call the metric outside jit") from None
        host = np.asarray(grid)
        out = jnp.asarray(np.stack([np.asarray(f(p), dtype=host.dtype) for p in host]))
    except (ValueError, TypeError) as err:
        raise ValueError(f"{fn}: {name} cannot be evaluated on a state of shape ({d},) (the d of the "
                         f"observations): {str(err).splitlines()[0] if str(err) else type(err).__name__}") from err
    if out.shape != grid.shape:
        raise ValueError(f"{fn}: {name} must map a state of shape ({d},) to a drift of shape ({d},), got output "
                         f"shape {out.shape[1:]} per state")
    return check_values(out.astype(grid.dtype), lambda xp, v: ~xp.isfinite(v),
                        f"{fn}: {name} returned NaN or inf on the grid over the observations; check the drift there")


#: Largest grid of `weighted_rmse`, whose KDE compares every grid point with every observation.
MAX_KDE_GRID_POINTS = 2**20


def _grid_errors(f_true, f_est, observations, grid_size, fn, max_points=MAX_GRID_POINTS):
    grid_size = check_count(grid_size, "grid_size", fn, low=2)
    obs, _ = as_states(observations, fn=fn)
    pts = obs.reshape(-1, obs.shape[-1])
    d = pts.shape[-1]
    if grid_size**d > max_points:
        fit = max(2, int(max_points ** (1.0 / d) + 1e-9))
        raise ValueError(f"{fn}: grid_size={grid_size} in d={d} is a grid of {grid_size**d:,} points (it grows as "
                         f"grid_size ** d); pass grid_size <= {fit}")
    grid = box_grid(pts, grid_size)
    return pts, grid, _evaluate(f_true, grid, "f_true", fn), _evaluate(f_est, grid, "f_est", fn)


def weighted_rmse(
    f_true: DriftFn,
    f_est: DriftFn,
    observations: ArrayOrFrame,
    *,
    grid_size: int = 20,
    bandwidth: float | None = None,
) -> Float[Array, ""]:
    r"""Density-weighted RMSE, the paper's headline metric, averaged over output dimensions.

    $$
    \mathrm{wRMSE} = \frac1d \sum_{k=1}^d
    \sqrt{\frac{\sum_g w_g (f_k(x_g) - \hat f_k(x_g))^2}{\sum_g w_g}}
    $$

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
      ValueError: a drift whose output shape is not ``(d,)`` or that is not finite on the grid, ``bandwidth``
        not finite and positive, ``grid_size < 2``, or a grid of more than ``2 ** 20`` points (it has
        ``grid_size ** d``; the message says how small ``grid_size`` must be). The KDE compares every grid point
        with every observation, one chunk of observations at a time, so its cost grows linearly with the
        observations and its memory does not.

    References:
      Maoutsa, arXiv:2512.23566.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import weighted_rmse
      >>> obs = jax.random.normal(jax.random.key(0), (100, 2))
      >>> float(weighted_rmse(lambda x: -x, lambda x: -x + 0.5, obs))
      0.5
    """
    check_scale(bandwidth, "bandwidth", "weighted_rmse", allow_none=True)
    grid_size = check_count(grid_size, "grid_size", "weighted_rmse", low=2)
    obs, _ = as_states(observations, fn="weighted_rmse")
    pts, grid, true_grid, est_grid = _grid_errors(f_true, f_est, obs, grid_size, "weighted_rmse", MAX_KDE_GRID_POINTS)
    h = None if bandwidth is None else to_device(bandwidth, pts.dtype)  # (a given bandwidth was checked above)
    return _weighted_rmse_jit(pts, grid, true_grid, est_grid, h)


def rmse(
    f_true: DriftFn, f_est: DriftFn, observations: ArrayOrFrame, *, grid_size: int = 20
) -> Float[Array, ""]:
    r"""Plain RMSE $\sqrt{\mathrm{mean}_{g,k}(f_k - \hat f_k)^2}$ on the grid of `weighted_rmse`.

    The drifts may be JAX functions or NumPy-only Python functions, as in `weighted_rmse`.

    Raises:
      ValueError: as `weighted_rmse` (a drift of the wrong shape or not finite, ``grid_size < 2`` or a
        grid of more than ``2**22`` points).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import rmse
      >>> obs = jax.random.normal(jax.random.key(0), (100, 2))
      >>> float(rmse(lambda x: -x, lambda x: -x + 0.5, obs))
      0.5
    """
    _, _, true_grid, est_grid = _grid_errors(f_true, f_est, observations, grid_size, "rmse")
    return _rmse_jit(true_grid, est_grid)


@jax.jit
def _rmse_jit(true_grid, est_grid):
    return _rms(true_grid - est_grid)
