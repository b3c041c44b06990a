"""Simulation of overdamped Langevin paths with diffrax, and subsampling to sparse observations."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_values
from .._inputs import is_dataframe
from .._repr import summarise
from .._types import PRNGKey, RealScalarLike
from ._data import ArrayOrFrame, as_sigma
from ._systems import DriftFn

__all__ = ["SamplePaths", "simulate", "subsample"]


class SamplePaths(eqx.Module):
    """Trajectories observed at shared times.

    Attributes:
      ts: observation times, shape ``(n_obs,)``.
      xs: states, shape ``(n_traj, n_obs, d)``.
    """

    ts: Float[Array, " n_obs"]
    xs: Float[Array, "n_traj n_obs d"]

    def __repr__(self) -> str:
        n_traj, n_obs, d = self.xs.shape
        span = f"[{summarise(self.ts[0])}, {summarise(self.ts[-1])}]" if n_obs else "[]"
        return f"SamplePaths(num_paths={n_traj}, num_times={n_obs}, d={d}, ts={span}, xs={summarise(self.xs)})"


def simulate(
    key: PRNGKey,
    drift: DriftFn,
    sigma: RealScalarLike,
    x0: ArrayOrFrame,
    t1: float,
    dt: float,
    *,
    save_every: int | None = 1,
    ts: Float[ArrayLike, " n_save"] | None = None,
) -> SamplePaths:
    r"""Simulate ``dX = f(X) dt + sigma dW`` from each row of ``x0`` with diffrax (Euler–Maruyama).

    Each trajectory uses its own Brownian path (``diffrax.UnsafeBrownianPath`` with a key folded from
    ``key``); the trajectories are ``vmap``-ped. Steps land exactly on the grid ``0, dt, 2dt, ..., t1``
    (``diffrax.StepTo``), so a path saved every step is the Euler–Maruyama chain
    :math:`x_{j+1} = x_j + f(x_j)\,dt + \sigma\sqrt{dt}\,\xi_j`.

    Args:
      key: PRNG key.
      drift: drift callable ``f(x: (d,)) -> (d,)``.
      sigma: positive scalar diffusion scale (isotropic, additive noise).
      x0: initial states, shape ``(n_traj, d)`` (NumPy, JAX, lists or a DataFrame), or one state ``(d,)`` for
        a single path.
      t1: final time (``t0 = 0``).
      dt: integration step; ``t1 / dt`` is rounded to an integer number of steps.
      save_every: save every ``save_every``-th step (default 1: the dense path). Ignored if ``ts`` is given.
      ts: explicit save times (must lie in ``[0, t1]``; saved by linear interpolation between steps).

    Returns:
      :class:`SamplePaths` with ``ts`` of shape ``(n_save,)`` and ``xs`` of shape ``(n_traj, n_save, d)``.

    Raises:
      ValueError: if ``sigma`` is not positive, ``dt``/``t1``/``save_every`` are not positive, ``x0`` is not 1-
        or 2-D or not finite, or ``ts`` lies outside ``[0, t1]`` (host checks for concrete input; only a
        ``sigma``/``x0`` traced by the caller's ``jit`` gets ``eqx.error_if``).

    References:
      Kidger, "On Neural Differential Equations" (diffrax), arXiv:2202.02435.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import simulate, ou_drift
      >>> p = simulate(jax.random.key(0), ou_drift(-jnp.eye(2)), 0.5, jnp.zeros((3, 2)), 1.0, 0.01,
      ...              save_every=10)
      >>> p.xs.shape, p.ts.shape
      ((3, 11, 2), (11,))
    """
    if not (dt > 0 and t1 > 0):
        raise ValueError(f"simulate: dt and t1 must be positive, got {dt=}, {t1=}")
    if is_dataframe(x0):
        x0 = x0.to_numpy()
    x0 = jnp.asarray(x0)
    if not jnp.issubdtype(x0.dtype, jnp.floating):
        x0 = x0.astype(jnp.zeros(()).dtype)
    if x0.ndim == 1:
        x0 = x0[None]  # one state: one path
    if x0.ndim != 2:
        raise ValueError(f"simulate: x0 must have shape (n_traj, d) or (d,), got shape {x0.shape}")
    x0 = check_values(x0, lambda xp, v: ~xp.isfinite(v), "simulate: x0 contains NaN or inf; pass finite states")
    dtype = x0.dtype
    sigma_arr = as_sigma(sigma, dtype, "simulate")
    n_steps = int(round(t1 / dt))
    grid = jnp.arange(n_steps + 1, dtype=dtype) * jnp.asarray(dt, dtype)
    if ts is None:
        if save_every is None or save_every < 1:
            raise ValueError(f"simulate: save_every must be a positive integer, got {save_every=}")
        save_ts = grid[::save_every]
    else:
        save_ts = check_values(
            jnp.asarray(ts, dtype), lambda xp, v: (v < 0) | (v > t1) | ~xp.isfinite(v),
            f"simulate: ts must lie in [0, t1] = [0, {t1}]; drop the save times outside it or raise t1",
        )
    d = x0.shape[1]

    def one(k, y0):
        bm = diffrax.UnsafeBrownianPath(shape=(d,), key=k)
        terms = diffrax.MultiTerm(
            diffrax.ODETerm(lambda t, y, args: drift(y)),
            diffrax.ControlTerm(lambda t, y, args: sigma_arr * jnp.eye(d, dtype=dtype), bm),
        )
        sol = diffrax.diffeqsolve(
            terms,
            diffrax.Euler(),
            grid[0],
            grid[-1],
            dt0=None,
            y0=y0,
            saveat=diffrax.SaveAt(ts=save_ts),
            stepsize_controller=diffrax.StepTo(ts=grid),
            max_steps=n_steps + 1,
            adjoint=diffrax.ForwardMode(),
        )
        return sol.ys

    keys = jax.random.split(key, x0.shape[0])
    xs = jax.vmap(one)(keys, x0)
    return SamplePaths(ts=save_ts, xs=xs)


def subsample(paths: SamplePaths, every: int) -> SamplePaths:
    """Keep every ``every``-th observation (the first one included) of every trajectory.

    Args:
      paths: dense :class:`SamplePaths`.
      every: positive integer stride; the new interval is ``every`` times the old one.

    Returns:
      The sparse :class:`SamplePaths`.

    Raises:
      ValueError: if ``every`` is not a positive integer.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import SamplePaths, subsample
      >>> p = SamplePaths(ts=jnp.arange(5.0), xs=jnp.zeros((1, 5, 2)))
      >>> subsample(p, 2).ts.tolist()
      [0.0, 2.0, 4.0]
    """
    if not isinstance(every, int) or every < 1:
        raise ValueError(f"every must be a positive integer, got {every=}")
    return SamplePaths(ts=paths.ts[::every], xs=paths.xs[:, ::every])
