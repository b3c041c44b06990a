"""Simulation of overdamped Langevin paths with diffrax, and subsampling to sparse observations."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_values, is_traced
from .._inputs import is_dataframe
from .._repr import summarise
from .._types import PRNGKey, RealScalarLike
from ._data import ArrayOrFrame, as_real, as_sigma, check_count, check_scale
from ._systems import DriftFn

#: Most Euler–Maruyama steps `simulate` takes (diffrax counts steps in int32).
MAX_STEPS = 2**31 - 2
#: Most saved state entries (``num_paths * num_saves * d``) `simulate` allocates (4 GiB of float32).
MAX_SAVED = 2**30

__all__ = ["SamplePaths", "simulate", "subsample"]


class SamplePaths(eqx.Module):
    """Trajectories observed at shared times.

    Attributes:
      ts: observation times, shape ``(n_obs,)``.
      xs: states, shape ``(n_traj, n_obs, d)``.
    """

    ts: Float[Array, " n_obs"]
    xs: Float[Array, "n_traj n_obs d"]

    def __check_init__(self):
        ts, xs = jnp.shape(self.ts), jnp.shape(self.xs)
        if len(xs) != 3 or ts != xs[1:2]:
            raise ValueError(f"SamplePaths: need ts of shape (n_obs,) and xs of shape (n_traj, n_obs, d), got ts "
                             f"{ts} and xs {xs}")

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
    $x_{j+1} = x_j + f(x_j)\,dt + \sigma\sqrt{dt}\,\xi_j$.

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
      `SamplePaths` with ``ts`` of shape ``(n_save,)`` and ``xs`` of shape ``(n_traj, n_save, d)``.

    Raises:
      ValueError: if ``sigma`` is not positive, ``dt``/``t1`` are not finite and positive or ``dt > t1``,
        ``save_every`` is not a positive integer, ``x0`` is not 1- or 2-D or not finite, ``ts`` lies outside
        ``[0, t1]`` or is not increasing, ``drift`` does not map a state ``(d,)`` to ``(d,)``, or the run is too
        large (more than ``MAX_STEPS`` steps, or more than ``MAX_SAVED`` saved numbers: raise ``dt`` or
        ``save_every``). Host checks for concrete input; only a ``sigma``/``x0``/``ts`` traced by the caller's
        ``jit`` gets ``eqx.error_if``.

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
    check_scale(dt, "dt", "simulate")
    check_scale(t1, "t1", "simulate")
    if is_dataframe(x0):
        x0 = x0.to_numpy()
    x0 = as_real(x0, "x0", "simulate")
    if x0.ndim == 1:
        x0 = x0[None]  # one state: one path
    if x0.ndim != 2:
        raise ValueError(f"simulate: x0 must have shape (n_traj, d) or (d,), got shape {x0.shape}")
    x0 = check_values(x0, lambda xp, v: ~xp.isfinite(v), "simulate: x0 contains NaN or inf; pass finite states")
    dtype = x0.dtype
    sigma_arr = as_sigma(sigma, dtype, "simulate")
    ratio = float(t1) / float(dt)
    if ratio < 0.5:
        raise ValueError(f"simulate: dt={dt} is larger than t1={t1}, so not one step fits; pass dt <= t1")
    if ratio > MAX_STEPS:
        raise ValueError(f"simulate: t1/dt = {ratio:.3g} steps is more than the {MAX_STEPS:,} diffrax can count; "
                         "raise dt or lower t1")
    n_steps = int(round(ratio))
    n_paths, d = x0.shape
    if ts is None:
        save_every = check_count(save_every, "save_every", "simulate")
        num_saves = n_steps // save_every + 1
    else:
        num_saves = int(np.size(ts))
    if n_paths * num_saves * d > MAX_SAVED:
        raise ValueError(f"simulate: saving {n_paths:,} paths x {num_saves:,} times x d={d} is "
                         f"{n_paths * num_saves * d * np.dtype(dtype).itemsize / 2**30:.3g} GiB; raise save_every "
                         "(or dt), or simulate fewer paths per call")
    _check_drift(drift, d, dtype)
    grid = jnp.arange(n_steps + 1, dtype=dtype) * jnp.asarray(dt, dtype)
    if ts is None:
        save_ts = grid[::save_every]
    else:
        save_ts = as_real(ts, "ts", "simulate", dtype)
        if save_ts.ndim != 1 or save_ts.shape[0] < 1:
            raise ValueError(f"simulate: ts must be a non-empty 1-D array of save times, got shape {save_ts.shape}")
        save_ts = check_values(
            save_ts, lambda xp, v: (v < 0) | (v > t1) | ~xp.isfinite(v),
            f"simulate: ts must lie in [0, t1] = [0, {t1}]; drop the save times outside it or raise t1",
        )
        save_ts = check_values(save_ts, lambda xp, v: ~(xp.diff(v) > 0),
                               "simulate: ts must be strictly increasing; sort the save times and drop repeats")

    keys = jax.random.split(key, x0.shape[0])
    xs = _paths(keys, drift, sigma_arr, x0, grid, save_ts)
    return SamplePaths(ts=save_ts, xs=xs)


@eqx.filter_jit
def _paths(keys, drift, sigma_arr, x0, grid, save_ts):
    """The Euler–Maruyama paths, one compiled program per drift and shapes (a `LinearDrift` is data, so
    refitted drifts of one size share it)."""
    d = x0.shape[1]
    dtype = x0.dtype

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
            max_steps=grid.shape[0],
            adjoint=diffrax.ForwardMode(),
        )
        return sol.ys

    return jax.vmap(one)(keys, x0)


def _check_drift(drift, d: int, dtype) -> None:
    """A ``ValueError`` naming ``drift`` unless it maps one state ``(d,)`` to a drift ``(d,)`` (traced only)."""
    state = jax.ShapeDtypeStruct((d,), dtype)
    try:
        out = jax.eval_shape(drift, state)
    except Exception as err:  # noqa: BLE001 - any failure to evaluate is the user's drift not fitting d
        raise ValueError(f"simulate: drift cannot be evaluated on a state of shape ({d},) (the d of x0): "
                         f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}") from err
    if getattr(out, "shape", None) != (d,):
        raise ValueError(f"simulate: drift must map a state of shape ({d},) to a drift of shape ({d},), got "
                         f"{getattr(out, 'shape', type(out).__name__)}")


def subsample(paths: SamplePaths, every: int | np.integer) -> SamplePaths:
    """Keep every ``every``-th observation (the first one included) of every trajectory.

    Args:
      paths: dense `SamplePaths`.
      every: positive integer stride; the new interval is ``every`` times the old one.

    Returns:
      The sparse `SamplePaths`.

    Raises:
      ValueError: if ``every`` is not a positive integer, or so large that fewer than two observations remain.
      TypeError: if ``paths`` is not a `SamplePaths`.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import SamplePaths, subsample
      >>> p = SamplePaths(ts=jnp.arange(5.0), xs=jnp.zeros((1, 5, 2)))
      >>> subsample(p, 2).ts.tolist()
      [0.0, 2.0, 4.0]
    """
    if not isinstance(paths, SamplePaths):
        raise TypeError(f"subsample: paths must be a SamplePaths (from simulate), got {type(paths).__name__}; "
                        "slice an array directly, x[:, ::every]")
    every = check_count(every, "every", "subsample")
    n_obs = paths.ts.shape[0]
    if every > n_obs - 1:
        raise ValueError(f"subsample: every={every} leaves fewer than two of the {n_obs} observations; pass every <= "
                         f"{max(n_obs - 1, 1)}")
    if is_traced(paths):
        return SamplePaths(ts=paths.ts[::every], xs=paths.xs[:, ::every])
    # concrete paths: strided copies on the host (a device slice compiles a program per shape and stride)
    return SamplePaths(ts=jax.device_put(np.asarray(paths.ts)[::every]),
                       xs=jax.device_put(np.ascontiguousarray(np.asarray(paths.xs)[:, ::every])))
