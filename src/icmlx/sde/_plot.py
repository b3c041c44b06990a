"""Plot helpers for what every drift example draws: a drift field against the truth, and sample paths.

matplotlib is imported only when a helper is called (the ``plot`` extra); each helper takes ``ax=None`` and
returns the `matplotlib.axes.Axes` it drew on.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from .._checks import check_int, check_number
from .._plotting import axes_or_new
from ._basis import LinearDrift, RBFBasis
from ._metrics import _evaluate

__all__ = ["plot_drift", "plot_paths"]


def _unwrap(drift):
    """The drift callable of a result record (``DriftEstimate.drift``, ``DriftSolution.value``) or itself."""
    if not callable(drift) and hasattr(drift, "drift"):
        return drift.drift
    return drift


def _bounds(drift, bounds, fn):
    if bounds is not None:
        b = np.asarray(bounds, dtype=float)
        if b.shape == (2,):
            b = b[None]
        if b.ndim != 2 or b.shape[1] != 2 or not np.all(b[:, 1] > b[:, 0]):
            raise ValueError(f"{fn}: bounds must be (lo, hi) in 1-D or ((x_lo, x_hi), (y_lo, y_hi)) in 2-D with "
                             f"lo < hi, got {bounds!r}")
        return b
    if isinstance(drift, LinearDrift) and isinstance(drift.basis, RBFBasis):
        c = np.asarray(drift.basis.centers)
        return np.stack([c.min(0), c.max(0)], axis=-1)
    raise ValueError(f"{fn}: cannot tell the plotting box of {type(drift).__name__}; pass bounds=(lo, hi) in 1-D "
                     "or ((x_lo, x_hi), (y_lo, y_hi)) in 2-D")


def plot_drift(
    drift: Any,
    *,
    ax: Any = None,
    bounds: Any = None,
    true_drift: Any = None,
    num_points: int = 20,
    band: float | None = None,
    **kwargs: Any,
):
    """Draw a 1-D or 2-D drift: arrows (``quiver``) on a ``num_points``-per-axis grid in 2-D, a curve in 1-D.

    Args:
      drift: a drift callable ``(d,) -> (d,)`` (a `LinearDrift`, a JAX or NumPy function), or a
        `DriftEstimate` / `DriftSolution` (its drift is drawn).
      ax: axes to draw on (default: a new figure).
      bounds: the box, ``(lo, hi)`` in 1-D or ``((x_lo, x_hi), (y_lo, y_hi))`` in 2-D; default the box of the
        inducing points of a fitted `SparseGP`/RBF drift (required for other callables).
      true_drift: optional reference drift, drawn in a second colour (2-D) or dashed (1-D).
      num_points: grid points per axis.
      band: in 1-D, shade ``drift(x) ± band * drift.std(x)`` (e.g. ``1.645`` for a 90% band); the drift must
        carry its weight covariance (`LinearDrift.std`). ``None`` (default): no band.
      **kwargs: passed to ``ax.quiver`` (2-D) or ``ax.plot`` (1-D) for the estimate.

    Returns:
      The `matplotlib.axes.Axes`. Axis labels are the coordinate names carried from a DataFrame, else
      ``x_1, x_2``.

    Raises:
      ValueError: ``d`` not 1 or 2, bad ``bounds``, or no ``bounds`` for a callable without inducing points;
        ``band`` not positive, given in 2-D, or for a drift without standard errors.
      ImportError: matplotlib is not installed (``pip install 'icmlx[plot]'``).

    Examples:
      >>> import matplotlib; matplotlib.use("Agg")
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import ou_drift, plot_drift
      >>> ax = plot_drift(ou_drift(-jnp.eye(2)), bounds=((-1, 1), (-1, 1)), num_points=5)
      >>> len(ax.collections), ax.collections[0].U.shape
      (1, (25,))
    """
    fn = "plot_drift"
    drift = _unwrap(drift)
    true_drift = _unwrap(true_drift) if true_drift is not None else None
    num_points = check_int(num_points, "num_points", where=fn, minimum=2)
    b = _bounds(drift, bounds, fn)
    d = b.shape[0]
    if band is not None:
        check_number(band, "band", where=fn, minimum=0, open_minimum=True)
        if d != 1:
            raise ValueError(f"{fn}: band is drawn in 1-D only, got d={d}")
        if getattr(drift, "covariance", None) is None:
            raise ValueError(f"{fn}: band needs a drift with standard errors (a LinearDrift fitted by a library "
                             f"class, see LinearDrift.std), got {type(drift).__name__} without them")
    if isinstance(drift, LinearDrift) and drift.weights.shape[-1] != d:
        raise ValueError(f"{fn}: bounds describe d={d} but the drift has d={drift.weights.shape[-1]}")
    if d not in (1, 2):
        raise ValueError(f"{fn}: draws 1-D or 2-D drifts, got d={d}; plot a 2-D slice, e.g. "
                         "lambda x: drift(jnp.concatenate([x, rest]))[:2] with bounds for the two coordinates")
    names = getattr(drift, "names", None) or tuple(f"x_{k + 1}" for k in range(d))
    axes = [np.linspace(lo, hi, num_points) for lo, hi in b]
    grid = np.stack([m.reshape(-1) for m in np.meshgrid(*axes, indexing="ij")], -1)
    grid_j = jnp.asarray(grid, jnp.zeros(()).dtype)
    est = np.asarray(_evaluate(drift, grid_j, "drift", fn))
    ref = None if true_drift is None else np.asarray(_evaluate(true_drift, grid_j, "true_drift", fn))
    ax = axes_or_new(ax)
    if d == 1:
        line = ax.plot(grid[:, 0], est[:, 0], **{"label": "estimate", **kwargs})[0]
        if band is not None:
            sd = np.asarray(drift.std(grid_j))[:, 0]
            ax.fill_between(grid[:, 0], est[:, 0] - band * sd, est[:, 0] + band * sd, color=line.get_color(),
                            alpha=0.25, label=f"± {band:g} s.e.")
        if ref is not None:
            ax.plot(grid[:, 0], ref[:, 0], "--", color="k", label="true")
        ax.set_xlabel(names[0])
        ax.set_ylabel(f"drift of {names[0]}")
    else:
        ax.quiver(grid[:, 0], grid[:, 1], est[:, 0], est[:, 1], **{"color": "C0", "label": "estimate", **kwargs})
        if ref is not None:
            ax.quiver(grid[:, 0], grid[:, 1], ref[:, 0], ref[:, 1], color="C1", alpha=0.6, label="true")
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1])
    if ref is not None or band is not None:
        ax.legend()
    return ax


def plot_paths(paths: Any, ts: Any = None, *, ax: Any = None, max_paths: int = 20, max_points: int = 10_000,
               **kwargs: Any):
    """Draw sample paths: 2-D paths as curves in the plane (dots at the observations), 1-D paths against time.

    Args:
      paths: a `SamplePaths`, or observations of shape ``(n_obs, d)`` / ``(n_traj, n_obs, d)``.
      ts: times for a 1-D array input (default ``0, 1, 2, ...``); ignored for `SamplePaths`.
      ax: axes to draw on (default: a new figure).
      max_paths: draw at most this many trajectories (the first ones).
      max_points: draw at most about this many observations of a trajectory (every ``k``-th one, the first and
        the last kept), so that a trajectory of millions of observations draws in a moment.
      **kwargs: passed to ``ax.plot`` for every trajectory.

    Returns:
      The `matplotlib.axes.Axes`, with one line per trajectory drawn.

    Raises:
      ValueError: ``d`` not 1 or 2, or ``max_paths`` or ``max_points`` below 1 (2 for ``max_points``).

    Examples:
      >>> import matplotlib; matplotlib.use("Agg")
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import SamplePaths, plot_paths
      >>> ax = plot_paths(SamplePaths(ts=jnp.arange(4.0), xs=jnp.zeros((3, 4, 2))))
      >>> len(ax.lines)
      3
    """
    fn = "plot_paths"
    max_paths = check_int(max_paths, "max_paths", where=fn, minimum=1)
    max_points = check_int(max_points, "max_points", where=fn, minimum=2)
    if type(paths).__name__ == "SamplePaths":
        ts, xs = np.asarray(paths.ts), paths.xs
    else:
        xs = paths.to_numpy() if hasattr(paths, "to_numpy") else paths
        xs = xs if hasattr(xs, "ndim") else np.asarray(xs, dtype=float)
        if xs.ndim == 2:
            xs = xs[None]
        ts = np.arange(xs.shape[1], dtype=float) if ts is None else np.asarray(ts, dtype=float)
    if xs.ndim != 3 or xs.shape[-1] not in (1, 2):
        raise ValueError(f"{fn}: draws paths of shape (n_traj, n_obs, d) with d = 1 or 2, got shape {xs.shape}")
    # only what is drawn is copied to the host: the first trajectories, thinned to about max_points observations
    step = max(1, -(-(xs.shape[1] - 1) // (max_points - 1)))
    keep = np.unique(np.r_[np.arange(0, xs.shape[1], step), xs.shape[1] - 1])
    xs = np.asarray(xs[:max_paths], dtype=float)[:, keep]
    ts = np.asarray(ts)[..., keep]
    ax = axes_or_new(ax)
    for k, x in enumerate(xs):
        style = {"color": f"C{k % 10}", "lw": 1.0, **kwargs}
        if xs.shape[-1] == 1:
            ax.plot(ts, x[:, 0], **style)
        else:
            ax.plot(x[:, 0], x[:, 1], marker=".", ms=3, **style)
    if xs.shape[-1] == 1:
        ax.set_xlabel("t")
        ax.set_ylabel("x")
    else:
        ax.set_xlabel("x_1")
        ax.set_ylabel("x_2")
    return ax
