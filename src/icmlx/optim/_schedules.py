r"""Annealed learning-rate schedules.

Every schedule is a pure function ``count -> value`` (a small frozen callable object), jit- and vmap-safe,
usable anywhere optax takes a learning rate. Values use 0-indexed counts as optax does: the value at
``count = 0`` is the initial value and the last of ``T`` steps uses ``count = T - 1``.

Annealing tails are computed from the *remaining* steps ``T - count`` rather than from ``1 - count / T``, so the
values close to the end of training are accurate to float32 round-off relative to the value itself (optax's
cosine, which evaluates ``cos(pi * count / T)``, loses all relative precision in the last few steps).

Why annealing matters (Attia & Koren, arXiv:2503.09411): SGD on a convex Lipschitz problem with a stepsize
that decays to zero like $(1 - t/T)^p$ has error $O(\rho^{1/(2p+1)}/\sqrt{T})$ when the initial step
is overestimated by a factor $\rho$, against $O(\rho/\sqrt{T})$ for a constant or inverse-sqrt
schedule. Only the *tail degree* ``p`` matters, and only if the schedule really reaches zero: see
`tail_degree` and `robustness_exponent` (`._tail`). Warmup,
warmup-stable-decay and joined schedules are in `._warmup_schedules`.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from .._checks import check_int, check_number, is_traced

__all__ = [
    "Schedule",
    "constant",
    "polynomial_decay",
    "linear_decay",
    "cosine_decay",
    "inverse_sqrt",
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
    try:
        dt = jnp.result_type(count)
    except TypeError:
        dt = np.dtype(object)
    if not (jnp.issubdtype(dt, jnp.integer) or jnp.issubdtype(dt, jnp.floating)):
        raise TypeError(f"count must be an integer or floating step count (array), got {count=!r} of dtype {dt}")
    return jnp.asarray(count).astype(dtype)


def _check_int(name: str, value, *, minimum: int) -> int:
    return check_int(value, name, minimum=minimum)


def _check_nonneg(name: str, value) -> None:
    # A traced value (e.g. under inject_hyperparams) passes through: the schedule adds no check to the program.
    if not is_traced(value):
        check_number(value, name, minimum=0, allow_array=True)


def _check_positive(name: str, value) -> None:
    check_number(value, name, minimum=0, open_minimum=True)


#: A floor of at least this fraction of the peak draws a warning (see `_warn_floor`).
FLOOR_WARN_FRACTION = 0.05


def _number(x) -> float | None:
    """``x`` as a float when it is a concrete scalar, else ``None`` (traced or array-valued)."""
    if isinstance(x, jax.core.Tracer) or np.ndim(x) != 0:
        return None
    try:
        return float(x)
    except (TypeError, jax.errors.ConcretizationTypeError):
        return None


def _warn_floor(fn: str, setting: str, floor, peak, peak_setting: str) -> None:
    """Warn when a decaying schedule keeps a floor of at least 5% of its peak, or does not decay at all.

    Rule: with a floor of ``f`` times the peak, SGD's error under a step overestimated by $\\rho$ grows
    like $\\rho$ instead of $\\rho^{1/(2p+1)}$ once the floor's term $f\\rho$ passes
    $\\rho^{1/(2p+1)}$, i.e. from $\\rho \\approx f^{-3/2}$ for linear decay. A floor of 5% or more
    moves that point below 100x (89x at 5%, 32x at 10%), inside the range a step-size search covers; smaller
    floors only matter past it, so they pass silently (`tail_degree` still reports them).
    """
    f, p = _number(floor), _number(peak)
    if f is None or p is None or p <= 0 or f < FLOOR_WARN_FRACTION * p:
        return
    from ._warn import warn_user

    if f >= p:
        warn_user(
            f"{fn}: {setting} is not below {peak_setting}, so the schedule does not anneal (were the values "
            f"swapped?); use constant() for a constant step."
        )
        return
    warn_user(
        f"{fn}: {setting} keeps a floor of {f / p:.0%} of the peak, so an overestimated step size is no longer "
        f"forgiven (error grows linearly in it past ~{(f / p) ** -1.5:.0f}x).\n"
        f"Anneal to 0 to keep the robustness of annealing (Attia & Koren, arXiv:2503.09411)."
    )


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
        horizon-free schedule such as `inverse_sqrt`.
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
    r"""Constant schedule $\eta_t = \eta$.

    It never anneals, so it has no robustness to an overestimated step size: error grows like $\rho$.

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

    $$
    \eta_t = \eta_{\mathrm{end}} + (\eta_0 - \eta_{\mathrm{end}})
    \left(\frac{T - \min(t, T)}{T}\right)^{p}
    $$

    With ``end_value = 0`` this is the degree-``p`` annealed schedule of Attia & Koren, whose error under a
    step size overestimated by $\rho$ grows only like $\rho^{1/(2p+1)}$. Identical to
    ``optax.polynomial_schedule(init_value, end_value, power, decay_steps)`` up to round-off; the tail is
    computed from the remaining steps. ``power = 0`` gives a constant ``init_value``.

    Args:
      init_value: value at ``count = 0``.
      decay_steps: horizon ``T >= 1``; the value is ``end_value`` for every ``count >= T``.
      power: tail degree ``p >= 0``.
      end_value: final value. A positive floor removes the robustness to misspecification: a floor of at
        least 5% of ``init_value`` (or one not below it) warns here, any floor warns in `tail_degree`.

    Returns:
      A schedule ``count -> value``.

    Raises:
      ValueError: non-positive ``decay_steps``, negative ``power`` or negative or NaN values.

    Warns:
      UserWarning: ``end_value`` at least 5% of ``init_value`` (the error then grows linearly in an
        overestimation $\rho$ from about ``(end_value / init_value) ** -1.5``), or not below it.

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
    if isinstance(power, jax.Array):
        raise ValueError(f"power must be a finite Python float >= 0, got power={power!r}")
    check_number(power, "power", minimum=0)
    _check_nonneg("init_value", init_value)
    _check_nonneg("end_value", end_value)
    if float(power) > 0:
        _warn_floor("polynomial_decay", f"end_value={end_value!r}", end_value, init_value,
                    f"init_value={init_value!r}")
    return _Polynomial(init_value, decay_steps, float(power), end_value)


def linear_decay(
    init_value: float | Float[ArrayLike, ""],
    decay_steps: int,
    end_value: float | Float[ArrayLike, ""] = 0.0,
) -> Schedule:
    r"""Linear decay $\eta_t = \eta_{\mathrm{end}} + (\eta_0 - \eta_{\mathrm{end}})(1 - t/T)$.

    `polynomial_decay` with ``power = 1``: tail degree 1, robustness exponent 1/3. In the worst case
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

    $$
    \eta_t = \eta_0\left[\alpha + (1-\alpha)\left(\tfrac12\left(1 + \cos\frac{\pi \min(t,T)}{T}\right)
    \right)^{e}\right],
    \qquad \tfrac12(1+\cos\pi u) = \sin^2\!\left(\tfrac{\pi}{2}(1-u)\right)
    $$

    Same arguments and values as ``optax.cosine_decay_schedule`` but evaluated through the sine of the
    remaining fraction, so the tail is accurate in float32. Tail degree ``2 e``: with ``alpha = 0`` the
    robustness exponent is $1/(4e+1)$ (1/5 for the usual cosine). Any ``alpha > 0`` leaves a floor and
    the error grows linearly in $\rho$ again.

    Args:
      init_value: value at ``count = 0``.
      decay_steps: horizon ``T >= 1``.
      alpha: final value as a fraction of ``init_value``, in ``[0, 1]``; ``alpha >= 0.05`` warns (a floor:
        see `polynomial_decay`).
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
    check_number(alpha, "alpha", minimum=0, maximum=1)
    _check_positive("exponent", exponent)
    _check_nonneg("init_value", init_value)
    _warn_floor("cosine_decay", f"alpha={alpha!r}", float(alpha), 1.0, "1 (no decay)")
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
    r"""Horizon-free inverse square-root decay $\eta_t = \eta_0 / \sqrt{1 + t/\tau}$.

    The classical comparator: it does not reach zero at any finite horizon, so its error under an
    overestimated step grows like $\rho$, as for a constant step (`tail_degree` returns 0).

    Args:
      init_value: value at ``count = 0``.
      timescale: $\tau > 0$; the value halves after $3\tau$ steps.

    Returns:
      A schedule ``count -> value`` with ``horizon = None``.

    References:
      Attia & Koren, arXiv:2503.09411.

    Examples:
      >>> from icmlx.optim import inverse_sqrt
      >>> print(inverse_sqrt(1.0)(3))
      0.5
    """
    _check_positive("timescale", timescale)
    _check_nonneg("init_value", init_value)
    return _InverseSqrt(init_value, float(timescale))
