"""Tail degree of a schedule and the robustness exponent it gives (Attia & Koren, arXiv:2503.09411)."""

import warnings
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike

from .._checks import check_int, check_number
from ._schedules import _check_int

__all__ = ["tail_degree", "robustness_exponent"]


def tail_degree(
    schedule: Callable,
    total_steps: int | None = None,
    *,
    v_range: tuple[float, float] = (1e-3, 1e-2),
    num_points: int = 16,
    rtol: float = 1e-6,
) -> float:
    r"""Polynomial degree ``p`` of a schedule's decay to zero near the horizon ``T``.

    Fits the slope of $\log \eta(T(1 - v))$ against $\log v$ for ``v`` log-spaced in
    ``v_range`` (a least-squares fit in float64 on the host; the schedule is evaluated at fractional counts).
    If the schedule does not anneal to zero — its value at ``T`` exceeds ``rtol`` times its peak
    value, as for a constant, inverse-sqrt or floored schedule — the robustness of annealing is lost, a
    ``UserWarning`` says so, and ``0.0`` is returned (the constant-schedule degree, exponent 1).

    This is an analysis helper called eagerly (not inside ``jit``).

    Args:
      schedule: a ``count -> value`` callable.
      total_steps: the horizon ``T``; defaults to ``schedule.horizon`` for icmlx schedules.
      v_range: the window of remaining fractions used for the fit.
      num_points: number of fit points.
      rtol: the final value counts as zero when it is at most ``rtol`` times the peak.

    Returns:
      The fitted degree ``p`` as a Python float.

    Raises:
      ValueError: if ``total_steps`` is missing for a horizon-free schedule, or not positive; ``v_range`` not
        ``0 < low < high < 1``; ``num_points < 2``; a negative or NaN ``rtol``; non-finite schedule values.
      TypeError: a ``schedule`` that is not callable.

    Examples:
      >>> from icmlx.optim import cosine_decay, tail_degree, robustness_exponent
      >>> p = tail_degree(cosine_decay(1.0, 1000))
      >>> round(p, 2), round(robustness_exponent(p), 2)
      (2.0, 0.2)
    """
    if not callable(schedule):
        raise TypeError(f"tail_degree: schedule must be a callable count -> value, got {schedule=!r}")
    _check_tail_settings(v_range, num_points, rtol)
    if total_steps is None:
        total_steps = getattr(schedule, "horizon", None)
        if total_steps is None:
            raise ValueError("total_steps is required for a schedule without a horizon (e.g. inverse_sqrt)")
    total_steps = _check_int("total_steps", total_steps, minimum=1)
    T = float(total_steps)
    v = np.geomspace(v_range[0], v_range[1], num_points)
    counts = jnp.asarray(T * (1.0 - v), dtype=jnp.asarray(0.0).dtype)
    # Evaluate the schedule on the remaining fraction; make counts exact relative to T where possible.
    vals = np.asarray(jax.device_get(schedule(counts)), dtype=np.float64)
    v_eff = (T - np.asarray(counts, dtype=np.float64)) / T
    # Reference level: the peak over the horizon (a warmup may start at 0).
    grid = jnp.linspace(0.0, T, 257).astype(counts.dtype)
    v0 = float(np.max(np.asarray(jax.device_get(schedule(grid)), dtype=np.float64)))
    vT = float(np.asarray(schedule(total_steps), dtype=np.float64))
    if not np.isfinite(vals).all() or not np.isfinite(v0) or v0 <= 0:
        raise ValueError(f"schedule values must be finite with a positive peak, got peak={v0}")
    if abs(vT) > rtol * abs(v0):
        warnings.warn(
            f"schedule does not anneal to zero (value {vT:.3g} at T={total_steps}, start {v0:.3g}): "
            "the robustness to an overestimated step size is lost; error grows linearly in rho.",
            UserWarning,
            stacklevel=2,
        )
        return 0.0
    good = vals > 0
    if good.sum() < 2:
        raise ValueError("schedule is zero throughout the tail window; widen v_range")
    slope = np.polyfit(np.log(v_eff[good]), np.log(vals[good]), 1)[0]
    return float(slope)


def _check_tail_settings(v_range, num_points, rtol) -> None:
    try:
        lo_v, hi_v = v_range
    except (TypeError, ValueError):
        raise ValueError(f"tail_degree: v_range must be a pair (low, high) of floats, got {v_range=!r}") from None
    lo = float(check_number(lo_v, "v_range[0]", where="tail_degree"))
    hi = float(check_number(hi_v, "v_range[1]", where="tail_degree"))
    if not 0.0 < lo < hi < 1.0:
        raise ValueError(
            f"tail_degree: v_range must satisfy 0 < low < high < 1 (remaining fractions of the horizon), got "
            f"{v_range=!r}"
        )
    check_int(num_points, "num_points", where="tail_degree", minimum=2)
    check_number(rtol, "rtol", where="tail_degree", minimum=0)


def robustness_exponent(p: float | ArrayLike) -> float:
    r"""Exponent of $\rho$ in SGD's error for a schedule of tail degree ``p``: $1/(2p+1)$.

    ``p = 0`` (no annealing) gives 1: error linear in the misspecification factor $\rho$.

    Args:
      p: tail degree, ``p >= 0`` (see `tail_degree`).

    Returns:
      $1/(2p+1)$.

    References:
      Attia & Koren, arXiv:2503.09411.

    Examples:
      >>> from icmlx.optim import robustness_exponent
      >>> robustness_exponent(1.0)
      0.3333333333333333
    """
    value = float(check_number(p, "p", where="robustness_exponent", minimum=0))
    return 1.0 / (2.0 * value + 1.0)
