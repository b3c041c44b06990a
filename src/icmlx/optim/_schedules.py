r"""Annealed learning-rate schedules.

Every schedule is a pure function ``count -> value`` (a small frozen callable object), jit- and vmap-safe,
usable anywhere optax takes a learning rate. Values use 0-indexed counts as optax does: the value at
``count = 0`` is the initial value and the last of ``T`` steps uses ``count = T - 1``.

Annealing tails are computed from the *remaining* steps ``T - count`` rather than from ``1 - count / T``, so the
values close to the end of training are accurate to float32 round-off relative to the value itself (optax's
cosine, which evaluates ``cos(pi * count / T)``, loses all relative precision in the last few steps).

Why annealing matters (Attia & Koren, arXiv:2503.09411): SGD on a convex Lipschitz problem with a stepsize
that decays to zero like :math:`(1 - t/T)^p` has error :math:`O(\rho^{1/(2p+1)}/\sqrt{T})` when the initial step
is overestimated by a factor :math:`\rho`, against :math:`O(\rho/\sqrt{T})` for a constant or inverse-sqrt
schedule. Only the *tail degree* ``p`` matters, and only if the schedule really reaches zero: see
:func:`tail_degree` and :func:`robustness_exponent`.
"""

import dataclasses
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

__all__ = [
    "Schedule",
    "constant",
    "polynomial_decay",
    "linear_decay",
    "cosine_decay",
    "inverse_sqrt",
    "wsd",
    "warmup",
    "warmup_cosine_decay",
    "join",
    "tail_degree",
    "robustness_exponent",
]

CountLike = Int[ArrayLike, "*batch"] | Float[ArrayLike, "*batch"]
ValueArray = Float[Array, "*batch"]


# --------------------------------------------------------------------------------------------------------------
# helpers


def _value_dtype(*values) -> jnp.dtype:
    """Floating dtype of the schedule's values: that of the first floating *array* value, else the default."""
    for v in values:
        if isinstance(v, jax.Array | np.ndarray | np.floating) and jnp.issubdtype(v.dtype, jnp.floating):
            return jnp.dtype(v.dtype)
    return jnp.dtype(jnp.asarray(0.0).dtype)  # float32, or float64 under JAX_ENABLE_X64


def _count(count, dtype) -> Array:
    count = jnp.asarray(count)
    if not (jnp.issubdtype(count.dtype, jnp.integer) or jnp.issubdtype(count.dtype, jnp.floating)):
        raise TypeError(f"count must be an integer or floating array, got dtype {count.dtype}")
    return count.astype(dtype)


def _check_int(name: str, value, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be a Python int, got {name}={value!r} of type {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {name}={value}")
    return int(value)


def _check_nonneg(name: str, value) -> None:
    # Only concrete values can be checked; traced values (e.g. under inject_hyperparams) pass through.
    try:
        v = float(value)
    except (TypeError, jax.errors.ConcretizationTypeError):
        return
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {name}={value!r}")


def _as_value(x, dtype) -> Array:
    return jnp.asarray(x).astype(dtype)


def _remaining_fraction(c: Array, T: int) -> Array:
    """``clip(T - c, 0, T) / T``, exactly 1 at the start and 0 past the end.

    XLA may rewrite a division by a constant as a multiplication by its reciprocal, which would put the
    start value one ulp below ``init_value``; the ``where`` pins it.
    """
    remaining = jnp.clip(T - c, 0, T)
    return jnp.where(remaining >= T, 1.0, remaining / T).astype(c.dtype)


class Schedule:
    """Base class of icmlx schedules: a callable ``count -> value`` with a known horizon.

    Attributes:
      horizon: number of steps after which the schedule is constant (its final value), or ``None`` for a
        horizon-free schedule such as :func:`inverse_sqrt`.
    """

    horizon: int | None = None

    def __call__(self, count: CountLike) -> ValueArray:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def final_value(self):
        """The value the schedule settles at (``None`` if it has no horizon)."""
        if self.horizon is None:
            return None
        return self(self.horizon)


# --------------------------------------------------------------------------------------------------------------
# schedules


@dataclasses.dataclass(frozen=True, eq=False)
class _Constant(Schedule):
    value: object

    def __call__(self, count: CountLike) -> ValueArray:
        dtype = _value_dtype(self.value)
        c = _count(count, dtype)
        return jnp.broadcast_to(_as_value(self.value, dtype), c.shape)

    @property
    def horizon(self):  # type: ignore[override]
        return 0


def constant(value: float | Float[ArrayLike, ""]) -> Schedule:
    r"""Constant schedule :math:`\eta_t = \eta`.

    It never anneals, so it has no robustness to an overestimated step size: error grows like :math:`\rho`.

    Args:
      value: the step size.

    Returns:
      A schedule ``count -> value``.

    Examples:
      >>> from icmlx.optim import constant
      >>> print(constant(0.1)(5))
      0.1
    """
    _check_nonneg("value", value)
    return _Constant(value)


@dataclasses.dataclass(frozen=True, eq=False)
class _Polynomial(Schedule):
    init_value: object
    decay_steps: int
    power: float
    end_value: object

    def __call__(self, count: CountLike) -> ValueArray:
        dtype = _value_dtype(self.init_value, self.end_value)
        c = _count(count, dtype)
        # remaining steps are exact for integer counts below 2**24 in float32
        frac = _remaining_fraction(c, self.decay_steps)
        h = jnp.power(frac, jnp.asarray(self.power, dtype)) if self.power != 1 else frac
        init = _as_value(self.init_value, dtype)
        end = _as_value(self.end_value, dtype)
        return end + (init - end) * h

    @property
    def horizon(self):  # type: ignore[override]
        return self.decay_steps


def polynomial_decay(
    init_value: float | Float[ArrayLike, ""],
    decay_steps: int,
    power: float = 1.0,
    end_value: float | Float[ArrayLike, ""] = 0.0,
) -> Schedule:
    r"""Polynomial decay to ``end_value`` over ``decay_steps`` steps.

    .. math::
        \eta_t = \eta_{\mathrm{end}} + (\eta_0 - \eta_{\mathrm{end}})
                 \left(\frac{T - \min(t, T)}{T}\right)^{p}

    With ``end_value = 0`` this is the degree-``p`` annealed schedule of Attia & Koren, whose error under a
    step size overestimated by :math:`\rho` grows only like :math:`\rho^{1/(2p+1)}`. Identical to
    ``optax.polynomial_schedule(init_value, end_value, power, decay_steps)`` up to round-off; the tail is
    computed from the remaining steps. ``power = 0`` gives a constant ``init_value``.

    Args:
      init_value: value at ``count = 0``.
      decay_steps: horizon ``T >= 1``; the value is ``end_value`` for every ``count >= T``.
      power: tail degree ``p >= 0``.
      end_value: final value. A positive floor removes the robustness to misspecification (a warning is
        issued by :func:`tail_degree`).

    Returns:
      A schedule ``count -> value``.

    Raises:
      ValueError: non-positive ``decay_steps``, negative ``power`` or negative values.

    References:
      Attia & Koren, "Learning Rate Annealing Improves Tuning Robustness in Stochastic Optimization",
      arXiv:2503.09411.

    Examples:
      >>> from icmlx.optim import polynomial_decay
      >>> sched = polynomial_decay(1.0, decay_steps=10, power=2.0)
      >>> print(sched(0), sched(5), sched(10), sched(99))
      1.0 0.25 0.0 0.0
    """
    decay_steps = _check_int("decay_steps", decay_steps, minimum=1)
    if isinstance(power, jax.Array) or not math.isfinite(float(power)) or float(power) < 0:
        raise ValueError(f"power must be a finite Python float >= 0, got power={power!r}")
    _check_nonneg("init_value", init_value)
    _check_nonneg("end_value", end_value)
    return _Polynomial(init_value, decay_steps, float(power), end_value)


def linear_decay(
    init_value: float | Float[ArrayLike, ""],
    decay_steps: int,
    end_value: float | Float[ArrayLike, ""] = 0.0,
) -> Schedule:
    r"""Linear decay :math:`\eta_t = \eta_{\mathrm{end}} + (\eta_0 - \eta_{\mathrm{end}})(1 - t/T)`.

    :func:`polynomial_decay` with ``power = 1``: tail degree 1, robustness exponent 1/3. In the worst case
    it is the optimal schedule for the last iterate of SGD (Defazio et al., arXiv:2310.07831).

    Args:
      init_value: value at ``count = 0``.
      decay_steps: horizon ``T >= 1``.
      end_value: final value (keep 0 for robustness).

    Returns:
      A schedule ``count -> value``.

    References:
      Attia & Koren, arXiv:2503.09411; Defazio et al., arXiv:2310.07831.

    Examples:
      >>> from icmlx.optim import linear_decay
      >>> print(linear_decay(1.0, 4)(jnp.arange(6)))
      [1.   0.75 0.5  0.25 0.   0.  ]
    """
    return polynomial_decay(init_value, decay_steps, 1.0, end_value)


def _cosine_factor(c: Array, T: int, exponent: float) -> Array:
    """``((1 + cos(pi min(c, T) / T)) / 2) ** exponent``, evaluated as ``sin^2(pi (T - c) / (2 T))``.

    The sine of the remaining fraction keeps full relative precision as ``c -> T``.
    """
    v = _remaining_fraction(c, T)
    h = jnp.where(v >= 1, 1.0, jnp.square(jnp.sin((jnp.pi / 2) * v))).astype(c.dtype)
    if exponent != 1.0:
        h = jnp.power(h, jnp.asarray(exponent, c.dtype))
    return h


@dataclasses.dataclass(frozen=True, eq=False)
class _Cosine(Schedule):
    init_value: object
    decay_steps: int
    alpha: float
    exponent: float

    def __call__(self, count: CountLike) -> ValueArray:
        dtype = _value_dtype(self.init_value)
        h = _cosine_factor(_count(count, dtype), self.decay_steps, self.exponent)
        init = _as_value(self.init_value, dtype)
        return init * ((1.0 - self.alpha) * h + self.alpha)

    @property
    def horizon(self):  # type: ignore[override]
        return self.decay_steps


def cosine_decay(
    init_value: float | Float[ArrayLike, ""],
    decay_steps: int,
    alpha: float = 0.0,
    exponent: float = 1.0,
) -> Schedule:
    r"""Cosine decay (Loshchilov & Hutter) to ``alpha * init_value``.

    .. math::
        \eta_t = \eta_0\left[\alpha + (1-\alpha)\left(\tfrac12\left(1 + \cos\frac{\pi \min(t,T)}{T}\right)
        \right)^{e}\right],
        \qquad \tfrac12(1+\cos\pi u) = \sin^2\!\left(\tfrac{\pi}{2}(1-u)\right)

    Same arguments and values as ``optax.cosine_decay_schedule`` but evaluated through the sine of the
    remaining fraction, so the tail is accurate in float32. Tail degree ``2 e``: with ``alpha = 0`` the
    robustness exponent is :math:`1/(4e+1)` (1/5 for the usual cosine). Any ``alpha > 0`` leaves a floor and
    the error grows linearly in :math:`\rho` again.

    Args:
      init_value: value at ``count = 0``.
      decay_steps: horizon ``T >= 1``.
      alpha: final value as a fraction of ``init_value``, in ``[0, 1]``.
      exponent: power ``e > 0`` applied to the cosine factor.

    Returns:
      A schedule ``count -> value``.

    References:
      Loshchilov & Hutter, "SGDR", arXiv:1608.03983; Attia & Koren, arXiv:2503.09411.

    Examples:
      >>> from icmlx.optim import cosine_decay
      >>> sched = cosine_decay(1.0, decay_steps=100)
      >>> print(sched(0), sched(50), sched(100))
      1.0 0.5 0.0
    """
    decay_steps = _check_int("decay_steps", decay_steps, minimum=1)
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got alpha={alpha!r}")
    if not math.isfinite(float(exponent)) or float(exponent) <= 0:
        raise ValueError(f"exponent must be > 0, got exponent={exponent!r}")
    _check_nonneg("init_value", init_value)
    return _Cosine(init_value, decay_steps, float(alpha), float(exponent))


@dataclasses.dataclass(frozen=True, eq=False)
class _InverseSqrt(Schedule):
    init_value: object
    timescale: float

    def __call__(self, count: CountLike) -> ValueArray:
        dtype = _value_dtype(self.init_value)
        c = jnp.maximum(_count(count, dtype), 0)
        return _as_value(self.init_value, dtype) * jax.lax.rsqrt(1.0 + c / self.timescale)


def inverse_sqrt(init_value: float | Float[ArrayLike, ""], timescale: float = 1.0) -> Schedule:
    r"""Horizon-free inverse square-root decay :math:`\eta_t = \eta_0 / \sqrt{1 + t/\tau}`.

    The classical comparator: it does not reach zero at any finite horizon, so its error under an
    overestimated step grows like :math:`\rho`, as for a constant step (:func:`tail_degree` returns 0).

    Args:
      init_value: value at ``count = 0``.
      timescale: :math:`\tau > 0`; the value halves after :math:`3\tau` steps.

    Returns:
      A schedule ``count -> value`` with ``horizon = None``.

    References:
      Attia & Koren, arXiv:2503.09411.

    Examples:
      >>> from icmlx.optim import inverse_sqrt
      >>> print(inverse_sqrt(1.0)(3))
      0.5
    """
    if not math.isfinite(float(timescale)) or float(timescale) <= 0:
        raise ValueError(f"timescale must be > 0, got timescale={timescale!r}")
    _check_nonneg("init_value", init_value)
    return _InverseSqrt(init_value, float(timescale))


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
    ``end_value`` whose shape is a function of the remaining fraction :math:`v = (T - t)/C`:

    .. math::
        \eta_t = \eta_{\mathrm{end}} + (\eta_0 - \eta_{\mathrm{end}})\, g(v), \qquad
        g(v) = v \;(\text{linear}),\quad \sin^2(\pi v/2)\;(\text{cosine}),\quad 1-\sqrt{1-v}\;(\text{1-sqrt}).

    Tail degree: 1 for linear and 1-sqrt, 2 for cosine. In icmlx's own experiment
    (``examples/annealing_robustness.py``) a linear cooldown of fraction :math:`\delta` behaves like linear
    decay at misspecification :math:`\rho/\delta`: same slope 1/3, error larger by about
    :math:`\delta^{-1/3}` (1.7x for 20%). Short cooldowns give up some robustness.

    Args:
      init_value: peak (stable) value.
      total_steps: horizon ``T`` (includes warmup and cooldown).
      warmup_steps: linear warmup length ``W >= 0``.
      cooldown_fraction: cooldown length as a fraction of ``total_steps``, in ``(0, 1]``.
      cooldown_shape: ``"linear"``, ``"cosine"`` or ``"1-sqrt"``.
      end_value: final value (keep 0 for robustness).
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
    if not 0.0 < float(cooldown_fraction) <= 1.0:
        raise ValueError(f"cooldown_fraction must be in (0, 1], got cooldown_fraction={cooldown_fraction!r}")
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

    .. math::
        \eta_t = \begin{cases} \eta_{w} + (s(0) - \eta_w)\, t / W & t < W \\ s(t - W) & t \ge W \end{cases}

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
      end_value: final value (keep 0 for robustness).
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
    boundaries = tuple(_check_int("boundary", b, minimum=0) for b in boundaries)
    if len(schedules) < 1 or len(boundaries) != len(schedules) - 1:
        raise ValueError(
            f"need len(boundaries) == len(schedules) - 1, got {len(schedules)} schedules and "
            f"{len(boundaries)} boundaries"
        )
    if any(b1 <= b0 for b0, b1 in zip(boundaries, boundaries[1:])):
        raise ValueError(f"boundaries must be strictly increasing, got {boundaries=}")
    return _Join(schedules, boundaries)


# --------------------------------------------------------------------------------------------------------------
# tail analysis


def tail_degree(
    schedule: Callable,
    total_steps: int | None = None,
    *,
    v_range: tuple[float, float] = (1e-3, 1e-2),
    num: int = 16,
    zero_tol: float = 1e-6,
) -> float:
    r"""Polynomial degree ``p`` of a schedule's decay to zero near the horizon ``T``.

    Fits the slope of :math:`\log \eta(T(1 - v))` against :math:`\log v` for ``v`` log-spaced in
    ``v_range`` (a least-squares fit in float64 on the host; the schedule is evaluated at fractional counts).
    If the schedule does not anneal to zero — its value at ``T`` exceeds ``zero_tol`` times its initial
    value, as for a constant, inverse-sqrt or floored schedule — the robustness of annealing is lost, a
    ``UserWarning`` says so, and ``0.0`` is returned (the constant-schedule degree, exponent 1).

    This is an analysis helper called eagerly (not inside ``jit``).

    Args:
      schedule: a ``count -> value`` callable.
      total_steps: the horizon ``T``; defaults to ``schedule.horizon`` for icmlx schedules.
      v_range: the window of remaining fractions used for the fit.
      num: number of fit points.
      zero_tol: relative threshold below which the final value counts as zero.

    Returns:
      The fitted degree ``p`` as a Python float.

    Raises:
      ValueError: if ``total_steps`` is missing for a horizon-free schedule, or not positive.

    Examples:
      >>> from icmlx.optim import cosine_decay, tail_degree, robustness_exponent
      >>> p = tail_degree(cosine_decay(1.0, 1000))
      >>> round(p, 2), round(robustness_exponent(p), 2)
      (2.0, 0.2)
    """
    if total_steps is None:
        total_steps = getattr(schedule, "horizon", None)
        if total_steps is None:
            raise ValueError("total_steps is required for a schedule without a horizon (e.g. inverse_sqrt)")
    total_steps = _check_int("total_steps", total_steps, minimum=1)
    T = float(total_steps)
    v = np.geomspace(v_range[0], v_range[1], num)
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
    if abs(vT) > zero_tol * abs(v0):
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


def robustness_exponent(p: float) -> float:
    r"""Exponent of :math:`\rho` in SGD's error for a schedule of tail degree ``p``: :math:`1/(2p+1)`.

    ``p = 0`` (no annealing) gives 1: error linear in the misspecification factor :math:`\rho`.

    Args:
      p: tail degree, ``p >= 0`` (see :func:`tail_degree`).

    Returns:
      :math:`1/(2p+1)`.

    References:
      Attia & Koren, arXiv:2503.09411.

    Examples:
      >>> from icmlx.optim import robustness_exponent
      >>> robustness_exponent(1.0)
      0.3333333333333333
    """
    if not math.isfinite(float(p)) or float(p) < 0:
        raise ValueError(f"p must be >= 0, got p={p!r}")
    return 1.0 / (2.0 * float(p) + 1.0)
