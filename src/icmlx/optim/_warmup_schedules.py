"""Schedules with a warmup or made of pieces: warmup-stable-decay, warmup, warmup + cosine, join.

Same conventions as `._schedules`: pure ``count -> value`` callables, 0-indexed counts, tails computed from
the remaining steps.
"""

import dataclasses
from collections.abc import Callable, Sequence
from typing import Literal

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_number
from ._schedules import (
    CountLike,
    Schedule,
    ValueArray,
    _as_value,
    _check_int,
    _check_nonneg,
    _check_positive,
    _Constant,
    _cosine_factor,
    _count,
    _remaining_fraction,
    _value_dtype,
    _warn_floor,
)

__all__ = ["wsd", "warmup", "warmup_cosine_decay", "join"]


CooldownShape = Literal["linear", "cosine", "1-sqrt"]


def _cooldown_factor(v: Array, shape: str) -> Array:
    """Cooldown shape as a function of the remaining fraction ``v`` in [0, 1] (1 at start, 0 at end)."""
    if shape == "linear":
        return v
    if shape == "cosine":
        return jnp.square(jnp.sin((jnp.pi / 2) * v))
    # "1-sqrt" (Hägele et al.): 1 - sqrt(progress), progress = 1 - v. Written to stay accurate near v = 0:
    # 1 - sqrt(1 - v) = v / (1 + sqrt(1 - v)).
    return v / (1.0 + jnp.sqrt(jnp.clip(1.0 - v, 0.0, 1.0)))


@dataclasses.dataclass(frozen=True, eq=False)
class _WSD(Schedule):
    init_value: object
    total_steps: int
    warmup_steps: int
    cooldown_steps: int
    cooldown_shape: str
    end_value: object
    warmup_init_value: object

    def __call__(self, count: CountLike) -> ValueArray:
        dtype = _value_dtype(self.init_value, self.end_value)
        c = _count(count, dtype)
        T, W, C = self.total_steps, self.warmup_steps, self.cooldown_steps
        peak = _as_value(self.init_value, dtype)
        end = _as_value(self.end_value, dtype)
        v = _remaining_fraction(c - (T - C), C)
        g = jnp.where(v >= 1, 1.0, _cooldown_factor(v, self.cooldown_shape)).astype(dtype)
        cool = end + (peak - end) * g
        if W == 0:
            return cool
        w0 = _as_value(self.warmup_init_value, dtype)
        ramp = w0 + (peak - w0) * (jnp.clip(c, 0, W) / W)
        return jnp.where(c < W, ramp, cool)

    @property
    def horizon(self):  # type: ignore[override]
        return self.total_steps


def wsd(
    init_value: float | Float[ArrayLike, ""],
    total_steps: int,
    *,
    warmup_steps: int = 0,
    cooldown_fraction: float = 0.2,
    cooldown_shape: str = "linear",
    end_value: float | Float[ArrayLike, ""] = 0.0,
    warmup_init_value: float | Float[ArrayLike, ""] = 0.0,
) -> Schedule:
    r"""Warmup–stable–decay (WSD, "trapezoidal") schedule.

    Linear warmup from ``warmup_init_value`` to ``init_value`` over ``warmup_steps``, constant
    ``init_value`` until the last ``C = round(cooldown_fraction * total_steps)`` steps, then a cooldown to
    ``end_value`` whose shape is a function of the remaining fraction $v = (T - t)/C$:

    $$
    \eta_t = \eta_{\mathrm{end}} + (\eta_0 - \eta_{\mathrm{end}})\, g(v), \qquad
    g(v) = v \;(\text{linear}),\quad \sin^2(\pi v/2)\;(\text{cosine}),\quad 1-\sqrt{1-v}\;(\text{1-sqrt}).
    $$

    Tail degree: 1 for linear and 1-sqrt, 2 for cosine. In icmlx's own experiment
    (``examples/annealing_robustness.py``) a linear cooldown of fraction $\delta$ behaves like linear
    decay at misspecification $\rho/\delta$: same slope 1/3, error larger by about
    $\delta^{-1/3}$ (1.7x for 20%). Short cooldowns give up some robustness.

    Args:
      init_value: peak (stable) value.
      total_steps: horizon ``T`` (includes warmup and cooldown).
      warmup_steps: linear warmup length ``W >= 0``.
      cooldown_fraction: cooldown length as a fraction of ``total_steps``, in ``(0, 1]``.
      cooldown_shape: ``"linear"``, ``"cosine"`` or ``"1-sqrt"``.
      end_value: final value (keep 0 for robustness; at least 5% of ``init_value`` warns).
      warmup_init_value: value at ``count = 0`` when ``warmup_steps > 0``.

    Returns:
      A schedule ``count -> value``.

    Raises:
      ValueError: non-positive ``total_steps``, negative ``warmup_steps``, ``cooldown_fraction`` outside
        ``(0, 1]``, an unknown shape, or warmup and cooldown that do not fit in ``total_steps``.

    References:
      Hu et al., MiniCPM, arXiv:2404.06395; Hägele et al., arXiv:2405.18392 (1-sqrt cooldown);
      Attia & Koren, arXiv:2503.09411.

    Examples:
      >>> from icmlx.optim import wsd
      >>> sched = wsd(1.0, total_steps=10, cooldown_fraction=0.2)
      >>> print(sched(jnp.arange(11)))
      [1.  1.  1.  1.  1.  1.  1.  1.  1.  0.5 0. ]
    """
    total_steps = _check_int("total_steps", total_steps, minimum=1)
    warmup_steps = _check_int("warmup_steps", warmup_steps, minimum=0)
    check_number(cooldown_fraction, "cooldown_fraction", minimum=0, maximum=1, open_minimum=True)
    if cooldown_shape not in ("linear", "cosine", "1-sqrt"):
        raise ValueError(
            f"cooldown_shape must be 'linear', 'cosine' or '1-sqrt', got cooldown_shape={cooldown_shape!r}"
        )
    cooldown_steps = max(1, int(round(float(cooldown_fraction) * total_steps)))
    if warmup_steps + cooldown_steps > total_steps:
        raise ValueError(
            f"warmup_steps + cooldown steps must fit in total_steps, got {warmup_steps=} + "
            f"{cooldown_steps=} > {total_steps=}"
        )
    for name, v in (("init_value", init_value), ("end_value", end_value),
                    ("warmup_init_value", warmup_init_value)):
        _check_nonneg(name, v)
    _warn_floor("wsd", f"end_value={end_value!r}", end_value, init_value, f"init_value={init_value!r}")
    return _WSD(init_value, total_steps, warmup_steps, cooldown_steps, cooldown_shape, end_value,
                warmup_init_value)


@dataclasses.dataclass(frozen=True, eq=False)
class _Warmup(Schedule):
    schedule: Callable
    warmup_steps: int
    init_value: object
    peak: object

    def __call__(self, count: CountLike) -> ValueArray:
        W = self.warmup_steps
        _count(count, jnp.float32)  # the count check, before the arithmetic below
        after = self.schedule(jnp.maximum(jnp.asarray(count) - W, 0))
        dtype = after.dtype
        c = _count(count, dtype)
        w0 = _as_value(self.init_value, dtype)
        peak = _as_value(self.peak, dtype)
        ramp = w0 + (peak - w0) * (jnp.clip(c, 0, W) / W)
        return jnp.where(c < W, ramp, after)

    @property
    def horizon(self):  # type: ignore[override]
        h = getattr(self.schedule, "horizon", None)
        return None if h is None else self.warmup_steps + h


def warmup(schedule: Callable, warmup_steps: int, init_value: float = 0.0) -> Schedule:
    r"""Prepend a linear warmup to any schedule.

    $$
    \eta_t = \begin{cases} \eta_{w} + (s(0) - \eta_w)\, t / W & t < W \\ s(t - W) & t \ge W \end{cases}
    $$

    The wrapped schedule starts after the warmup, so the horizon grows by ``W``. Warmup does not change the
    tail degree, hence not the robustness exponent.

    Args:
      schedule: any ``count -> value`` callable.
      warmup_steps: ``W >= 1``.
      init_value: value at ``count = 0``.

    Returns:
      A schedule ``count -> value``.

    Raises:
      ValueError: ``warmup_steps < 1``.

    Examples:
      >>> from icmlx.optim import warmup, linear_decay
      >>> print(warmup(linear_decay(1.0, 2), warmup_steps=2)(jnp.arange(5)))
      [0.  0.5 1.  0.5 0. ]
    """
    if not callable(schedule):
        raise TypeError(f"warmup: schedule must be a callable count -> value, got {schedule=!r}")
    warmup_steps = _check_int("warmup_steps", warmup_steps, minimum=1)
    _check_nonneg("init_value", init_value)
    peak = schedule(0)
    return _Warmup(schedule, warmup_steps, init_value, peak)


def warmup_cosine_decay(
    peak_value: float | Float[ArrayLike, ""],
    warmup_steps: int,
    decay_steps: int,
    init_value: float = 0.0,
    end_value: float = 0.0,
    exponent: float = 1.0,
) -> Schedule:
    r"""Linear warmup then cosine decay, with optax's conventions.

    As in ``optax.warmup_cosine_decay_schedule``, ``decay_steps`` is the total length *including* warmup; the
    cosine runs over ``decay_steps - warmup_steps`` steps from ``peak_value`` to ``end_value``.

    Args:
      peak_value: value reached at the end of warmup.
      warmup_steps: ``W >= 0``.
      decay_steps: total length ``T > W``.
      init_value: value at ``count = 0``.
      end_value: final value (keep 0 for robustness; at least 5% of ``peak_value`` warns).
      exponent: cosine exponent.

    Returns:
      A schedule ``count -> value``.

    Raises:
      ValueError: if ``warmup_steps >= decay_steps``.

    Examples:
      >>> from icmlx.optim import warmup_cosine_decay
      >>> sched = warmup_cosine_decay(1.0, warmup_steps=10, decay_steps=110)
      >>> print(sched(0), sched(10), sched(60), sched(110))
      0.0 1.0 0.5 0.0
    """
    warmup_steps = _check_int("warmup_steps", warmup_steps, minimum=0)
    decay_steps = _check_int("decay_steps", decay_steps, minimum=1)
    if warmup_steps >= decay_steps:
        raise ValueError(
            f"warmup_steps must be smaller than decay_steps (which includes the warmup), got "
            f"{warmup_steps=} >= {decay_steps=}"
        )
    _check_nonneg("end_value", end_value)
    _check_nonneg("peak_value", peak_value)
    _check_nonneg("init_value", init_value)
    _warn_floor("warmup_cosine_decay", f"end_value={end_value!r}", end_value, peak_value,
                f"peak_value={peak_value!r}")
    _check_positive("exponent", exponent)
    # cosine from peak to end: init*(alpha + (1-alpha) h) with alpha = end/peak, written explicitly to allow
    # peak_value == 0 and array peaks.
    base = _PeakToEnd(peak_value, end_value, decay_steps - warmup_steps, float(exponent))
    if warmup_steps == 0:
        return base
    return _Warmup(base, warmup_steps, init_value, peak_value)


@dataclasses.dataclass(frozen=True, eq=False)
class _PeakToEnd(Schedule):
    peak_value: object
    end_value: object
    decay_steps: int
    exponent: float

    def __call__(self, count: CountLike) -> ValueArray:
        dtype = _value_dtype(self.peak_value, self.end_value)
        h = _cosine_factor(_count(count, dtype), self.decay_steps, self.exponent)
        peak = _as_value(self.peak_value, dtype)
        end = _as_value(self.end_value, dtype)
        return end + (peak - end) * h

    @property
    def horizon(self):  # type: ignore[override]
        return self.decay_steps


@dataclasses.dataclass(frozen=True, eq=False)
class _Join(Schedule):
    schedules: tuple
    boundaries: tuple

    def __call__(self, count: CountLike) -> ValueArray:
        _count(count, jnp.float32)
        count = jnp.asarray(count)
        out = self.schedules[0](count)
        for b, s in zip(self.boundaries, self.schedules[1:]):
            out = jnp.where(count < b, out, s(count - b).astype(out.dtype))
        return out

    @property
    def horizon(self):  # type: ignore[override]
        h = getattr(self.schedules[-1], "horizon", None)
        return None if h is None else self.boundaries[-1] + h


def join(schedules: Sequence[Callable], boundaries: Sequence[int]) -> Schedule:
    r"""Concatenate schedules: schedule ``i + 1`` starts at ``boundaries[i]`` and sees ``count - boundaries[i]``.

    Same semantics as ``optax.join_schedules``.

    Args:
      schedules: ``k >= 1`` schedules.
      boundaries: ``k - 1`` strictly increasing non-negative integer step boundaries.

    Returns:
      A schedule ``count -> value``.

    Raises:
      ValueError: wrong number of boundaries or boundaries not strictly increasing.

    Examples:
      >>> from icmlx.optim import join, constant, linear_decay
      >>> sched = join([constant(1.0), linear_decay(1.0, 2)], boundaries=[2])
      >>> print(sched(jnp.arange(5)))
      [1.  1.  1.  0.5 0. ]
    """
    schedules = tuple(schedules)
    bad = [f for f in schedules if not callable(f)]
    if bad:
        raise TypeError(f"join: every schedule must be a callable count -> value, got {bad[0]!r}")
    boundaries = tuple(_check_int("boundary", b, minimum=0) for b in boundaries)
    if len(schedules) < 1 or len(boundaries) != len(schedules) - 1:
        raise ValueError(
            f"need len(boundaries) == len(schedules) - 1, got {len(schedules)} schedules and "
            f"{len(boundaries)} boundaries"
        )
    if any(b1 <= b0 for b0, b1 in zip(boundaries, boundaries[1:])):
        raise ValueError(f"boundaries must be strictly increasing, got {boundaries=}")
    joined = _Join(schedules, boundaries)
    if not all(isinstance(f, _Constant) for f in schedules) and joined.horizon is not None:
        try:
            peak = max(float(f(0)) for f in schedules)
            _warn_floor("join", "its last schedule", float(joined.final_value), peak, "the peak")
        except (TypeError, ValueError, jax.errors.ConcretizationTypeError):
            pass  # traced or array-valued pieces: nothing to check at construction
    return joined
