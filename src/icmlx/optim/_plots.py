"""Small matplotlib helpers for what the optim examples draw: a schedule, and the risk curve of a sweep.

matplotlib is imported only when a helper is called (``icmlx._plotting``).
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from .._checks import check_int
from .._plotting import axes_or_new
from ._robustness import SlopeFitResult, SweepResult, _labels_for

__all__ = ["plot_risk_curve", "plot_schedule"]


def plot_risk_curve(
    result: SweepResult,
    *,
    fit: SlopeFitResult | None = None,
    ax: Any = None,
    **kwargs: Any,
):
    r"""Worst-case error $W(\rho)$ against the misspecification $\rho$ on log–log axes.

    One marked line per schedule (``result.worst[s]`` against ``result.rhos``), labelled with the schedule's
    name; with ``fit`` (from `fit_slopes`) each label gains the fitted slope and its
    interval, and a dashed line $e^{a}\rho^{b}$ is drawn over the fitted range in the same colour.

    Args:
      result: a `SweepResult`.
      fit: optional `SlopeFitResult` of the same sweep.
      ax: matplotlib axes to draw on (default: a new figure).
      **kwargs: passed to ``ax.loglog`` for the data lines (e.g. ``marker``, ``lw``).

    Returns:
      The ``matplotlib.axes.Axes`` drawn on.

    Raises:
      ImportError: matplotlib is not installed (``pip install 'icmlx[plot]'``).
      ValueError: ``fit`` has a different number of schedules than ``result``.
      TypeError: ``result`` is not a `SweepResult`.

    Examples:
      >>> import matplotlib; matplotlib.use("Agg")
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.optim import constant, linear_decay, misspecification_sweep, plot_risk_curve
      >>> T = 64
      >>> res = misspecification_sweep(jax.random.key(0), {"linear": linear_decay(T**-0.5, T),
      ...     "constant": constant(T**-0.5)}, jnp.array([1.0, 4.0, 16.0]), num_replicates=8, total_steps=T)
      >>> ax = plot_risk_curve(res)
      >>> [line.get_label() for line in ax.get_lines()]
      ['linear', 'constant']
    """
    if not isinstance(result, SweepResult):
        raise TypeError(f"plot_risk_curve: result must be the SweepResult of misspecification_sweep, got "
                        f"{type(result).__name__}")
    rhos = np.asarray(result.rhos, np.float64)
    worst = np.asarray(result.worst, np.float64)
    num_schedules = worst.shape[0]
    labels = _labels_for(result.labels, num_schedules)
    if fit is not None and np.shape(fit.slope)[0] != num_schedules:
        raise ValueError(
            f"fit has {np.shape(fit.slope)[0]} schedules but result has {num_schedules}; pass the fit_slopes "
            f"result of this sweep"
        )
    ax = axes_or_new(ax)
    style = {"marker": "o", **kwargs}
    for s in range(num_schedules):
        label = labels[s]
        if fit is not None:
            label += f" (slope {float(fit.slope[s]):.2f} [{float(fit.lower[s]):.2f}, {float(fit.upper[s]):.2f}])"
        (line,) = ax.loglog(rhos, worst[s], label=label, **style)
        if fit is not None and fit.intercept is not None and fit.fit_range is not None:
            lo, hi = fit.fit_range
            inside = rhos[(rhos >= lo * (1 - 1e-6)) & (rhos <= hi * (1 + 1e-6))]
            xs = np.array([inside.min(), inside.max()])
            ys = np.exp(float(fit.intercept[s])) * xs ** float(fit.slope[s])
            ax.loglog(xs, ys, ls="--", color=line.get_color(), label="_nolegend_")
    ax.set_xlabel(r"misspecification $\rho$")
    ax.set_ylabel(r"worst-case error $W(\rho)$")
    ax.legend()
    return ax


def plot_schedule(schedule: Callable, num_steps: int, *, ax: Any = None, **kwargs: Any):
    r"""Learning rate against step: ``schedule(t)`` for ``t = 0, ..., num_steps - 1``.

    Args:
      schedule: any ``count -> value`` callable (an icmlx or optax schedule).
      num_steps: number of steps to draw, ``>= 1``.
      ax: matplotlib axes to draw on (default: a new figure).
      **kwargs: passed to ``ax.plot`` (e.g. ``label``).

    Returns:
      The ``matplotlib.axes.Axes`` drawn on.

    Raises:
      ImportError: matplotlib is not installed (``pip install 'icmlx[plot]'``).
      TypeError: ``num_steps`` is not an integer.
      ValueError: ``num_steps`` is below 1.

    Examples:
      >>> import matplotlib; matplotlib.use("Agg")
      >>> from icmlx.optim import plot_schedule, warmup_cosine_decay
      >>> ax = plot_schedule(warmup_cosine_decay(1.0, 10, 100), 100)
      >>> float(ax.get_lines()[0].get_ydata()[10])
      1.0
    """
    num_steps = check_int(num_steps, "num_steps", where="plot_schedule", minimum=1)
    counts = np.arange(int(num_steps))
    values = np.asarray(schedule(counts))
    if values.shape != counts.shape:
        values = np.broadcast_to(values, counts.shape)
    ax = axes_or_new(ax)
    ax.plot(counts, values, **kwargs)
    ax.set_xlabel("step")
    ax.set_ylabel("learning rate")
    return ax
