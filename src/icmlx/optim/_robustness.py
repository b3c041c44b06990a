r"""The misspecification experiment of Attia & Koren (arXiv:2503.09411), as one compiled sweep.

Projected SGD on the one-dimensional stochastic convex problem

$$
f_\varepsilon(x) = \varepsilon |x|, \quad x \in [-D, D], \qquad
g_t = \varepsilon\,\mathrm{sign}(x_t) + \sigma \xi_t,\ \xi_t \sim \mathcal N(0, 1),
\qquad x_{t+1} = \Pi_{[-D, D]}\left(x_t - \rho\,\eta_t\, g_t\right),\ x_1 = D,
$$

is run for every schedule, misspecification factor $\rho$, problem scale $\varepsilon$ and
replicate at once (common random numbers: the same noise for every cell). The worst case over the problem's
scale, $W(\rho) = \max_\varepsilon \mathbb E[\varepsilon |x_T|]$, grows like $\rho^{1/(2p+1)}$ for a
schedule annealed to zero with tail degree ``p`` and like $\rho$ for constant or inverse-sqrt steps.
`fit_slopes` fits the exponent by least squares on a log–log scale with a bootstrap interval.
"""

import warnings
from collections.abc import Callable, Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from .._checks import check_int, check_number, check_values
from .._progress import ProgressBar, resolve_progress
from .._repr import record_repr
from .._types import PRNGKey
from ._tail import tail_degree

__all__ = ["SweepResult", "SlopeFitResult", "schedule_table", "misspecification_sweep", "fit_slopes"]


def _concrete(*arrays) -> bool:
    return not any(isinstance(a, jax.core.Tracer) for a in arrays)


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _columns(values: list[str], max_columns: int = 8) -> list[str]:
    """At most ``max_columns`` entries: the first and last few, with ``...`` between."""
    if len(values) <= max_columns:
        return values
    head = max_columns // 2
    return values[:head] + ["..."] + values[len(values) - (max_columns - head - 1):]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            for r in [header, *rows]]


def _labels_for(labels, num_schedules: int) -> tuple[str, ...]:
    if labels:
        return tuple(labels)
    return tuple(f"schedule {i}" for i in range(num_schedules))


class SweepResult(eqx.Module):
    """Outcome of `misspecification_sweep`.

    Prints as a table of the worst case $W(\\rho)$ with one row per schedule.

    Attributes:
      errors: ``(S, K, E, R)`` final suboptimality $\\varepsilon |x_T|$ per schedule, rho, scale and
        replicate.
      rhos: ``(K,)`` misspecification factors.
      eps: ``(E,)`` problem scales.
      worst: ``(S, K)`` worst case over scales of the replicate mean, $W(\\rho)$.
      worst_eps_index: ``(S, K)`` index into ``eps`` of the worst case.
      labels: ``S`` schedule names (static; the mapping's keys when schedules were passed by name, else
        ``()``, printed as ``schedule 0``, ``schedule 1``, ...).
      tail_degrees: ``S`` tail degrees ``p`` from `tail_degree` when schedules (not a
        table) were passed, else ``()`` (static).
    """

    errors: Float[Array, "S K E R"]
    rhos: Float[Array, " K"]
    eps: Float[Array, " E"]
    worst: Float[Array, "S K"]
    worst_eps_index: Int[Array, "S K"]
    labels: tuple[str, ...] = eqx.field(static=True, default=())
    tail_degrees: tuple[float, ...] = eqx.field(static=True, default=())

    def __repr__(self) -> str:
        if not _concrete(self.errors, self.rhos, self.worst):
            return record_repr(self)
        S, K, E, R = self.errors.shape
        rhos = np.asarray(self.rhos, np.float64)
        worst = np.asarray(self.worst, np.float64)
        labels = _labels_for(self.labels, S)
        header = _columns(["rho"] + [_fmt(r) for r in rhos], 9)
        rows = [_columns([labels[s]] + [_fmt(v) for v in worst[s]], 9) for s in range(S)]
        lines = [f"SweepResult: worst case W(rho) = max over {E} scales of the mean of {R} replicates "
                 f"({S} schedules x {K} rhos)"]
        return "\n".join(lines + _table(header, rows))


class SlopeFitResult(eqx.Module):
    """Least-squares slopes of $\\log W$ against $\\log\\rho$ with a bootstrap interval.

    Prints as one row per schedule: its label, the slope, the interval and, when the sweep knew the
    schedules, the tail degree ``p`` and the predicted exponent $1/(2p+1)$.

    Attributes:
      slope: ``(S,)`` slope on the full set of replicates.
      lower: ``(S,)`` lower end of the percentile bootstrap interval (resampling replicates, redoing the max
        over scales each time).
      upper: ``(S,)`` upper end of the same interval.
      boot: ``(B, S)`` bootstrap slopes, ``B = num_resamples``.
      intercept: ``(S,)`` intercept $a$ of the fit $\\log W = a + b \\log \\rho$.
      labels: ``S`` schedule names carried from the `SweepResult` (static).
      tail_degrees: ``S`` tail degrees carried from the `SweepResult`, or ``()`` (static).
      fit_range: the range of $\\rho$ that was fitted (static).
      level: coverage of the interval (static).
    """

    slope: Float[Array, " S"]
    lower: Float[Array, " S"]
    upper: Float[Array, " S"]
    boot: Float[Array, "B S"]
    intercept: Float[Array, " S"] | None = None
    labels: tuple[str, ...] = eqx.field(static=True, default=())
    tail_degrees: tuple[float, ...] = eqx.field(static=True, default=())
    fit_range: tuple[float, float] | None = eqx.field(static=True, default=None)
    level: float | None = eqx.field(static=True, default=None)

    def __repr__(self) -> str:
        if not _concrete(self.slope, self.lower, self.upper):
            return record_repr(self, ["slope", "lower", "upper", "boot"])
        slope, lo, hi = (np.asarray(a, np.float64) for a in (self.slope, self.lower, self.upper))
        S = slope.shape[0]
        labels = _labels_for(self.labels, S)
        level = f"{100 * self.level:g}%" if self.level is not None else "bootstrap"
        header = ["schedule", "slope", f"{level} interval"]
        rows = [[labels[s], f"{slope[s]:.3f}", f"[{lo[s]:.3f}, {hi[s]:.3f}]"] for s in range(S)]
        if self.tail_degrees:
            header += ["tail p", "predicted 1/(2p+1)"]
            for s, p in enumerate(self.tail_degrees):
                rows[s] += [f"{p:.2f}", f"{1.0 / (2.0 * p + 1.0):.3f}"]
        where = ""
        if self.fit_range is not None:
            where = f" on rho in [{_fmt(self.fit_range[0])}, {_fmt(self.fit_range[1])}]"
        head = (f"SlopeFitResult: slope of log W against log rho{where}, {level} percentile bootstrap "
                f"({self.boot.shape[0]} resamples)")
        return "\n".join([head] + _table(header, rows))


def schedule_table(schedules: Sequence[Callable], total_steps: int) -> Float[Array, "S T"]:
    """Evaluate schedules at counts ``0..T-1`` and stack them into an ``(S, T)`` step-size table.

    Stacking turns a list of differently-built schedules into one array, so a sweep over schedules is a
    ``vmap``/broadcast instead of one compiled function per schedule.

    Args:
      schedules: ``S`` callables ``count -> step size``.
      total_steps: ``T >= 1``.

    Returns:
      ``(S, T)`` array of step sizes.

    Examples:
      >>> from icmlx.optim import schedule_table, linear_decay, constant
      >>> schedule_table([constant(1.0), linear_decay(1.0, 4)], 4)
      Array([[1.  , 1.  , 1.  , 1.  ],
             [1.  , 0.75, 0.5 , 0.25]], dtype=float32)
    """
    total_steps = check_int(total_steps, "total_steps", minimum=1)
    if len(schedules) == 0:
        raise ValueError("schedules must not be empty")
    bad = [f for f in schedules if not callable(f)]
    if bad:
        raise TypeError(f"schedule_table: every schedule must be a callable count -> value, got {bad[0]!r}")
    counts = jnp.arange(total_steps)
    rows = []
    for i, f in enumerate(schedules):
        row = jnp.asarray(f(counts))
        if row.shape not in ((), (total_steps,)):
            raise ValueError(
                f"schedule_table: schedule {i} returned shape {row.shape} for counts of shape ({total_steps},); a "
                f"schedule maps a count array to values of the same shape (or a scalar)"
            )
        rows.append(jnp.broadcast_to(row, (total_steps,)))
    dtype = jnp.result_type(*rows)
    table = jnp.stack([r.astype(dtype) for r in rows])
    return check_values(
        table, lambda xp, v: ~xp.isfinite(v),
        "schedule_table: a schedule returned non-finite (NaN/inf) step sizes; check its settings.",
    )


def _check_positive(x: Array, name: str) -> Array:
    return check_values(
        x, lambda xp, v: ~(xp.isfinite(v) & (v > 0)),
        f"misspecification_sweep: every entry of {name} must be finite and > 0; drop or fix the bad entries.",
    )


def _steps(key, x, ts, table_t, rho_b, eps_b, diameter, noise):
    """Projected SGD steps at counts ``ts`` (step sizes ``table_t``, ``(len(ts), S)``) from iterates ``x``."""
    num_replicates = x.shape[-1]

    def body(x, inp):
        t, eta = inp  # eta: (S,)
        xi = jax.random.normal(jax.random.fold_in(key, t), (num_replicates,), x.dtype)
        g = eps_b * jnp.sign(x) + noise * xi
        x = jnp.clip(x - (rho_b * eta[:, None, None, None]) * g, -diameter, diameter)
        return x, None

    x, _ = jax.lax.scan(body, x, (ts, table_t))
    return x


def _start(table, rhos, eps, num_replicates: int, diameter):
    x0 = jnp.full((table.shape[0], rhos.shape[0], eps.shape[0], num_replicates), diameter, table.dtype)
    return x0, rhos[None, :, None, None], eps[None, None, :, None]


def _finish(x, eps_b):
    errors = eps_b * jnp.abs(x)
    mean = errors.mean(axis=-1)
    return errors, mean.max(axis=-1), jnp.argmax(mean, axis=-1).astype(jnp.int32)


@eqx.filter_jit
def _sweep(key, table, rhos, eps, num_replicates: int, diameter, noise):
    x0, rho_b, eps_b = _start(table, rhos, eps, num_replicates, diameter)
    x = _steps(key, x0, jnp.arange(table.shape[1]), table.T, rho_b, eps_b, diameter, noise)
    return _finish(x, eps_b)


_start_jit = eqx.filter_jit(_start)
_steps_jit = eqx.filter_jit(_steps)
_finish_jit = eqx.filter_jit(_finish)

#: Number of pieces a sweep is cut into when it shows progress.
_PROGRESS_PIECES = 20


def _sweep_with_progress(key, table, rhos, eps, num_replicates, diameter, noise, bar):
    """The same steps as `_sweep`, run in equal pieces from Python so that a bar can advance.

    The table is padded with zero step sizes to a whole number of pieces (one compiled piece); a zero step
    leaves the iterate unchanged, so the result is the one-program result.
    """
    S, T = table.shape
    length = -(-T // _PROGRESS_PIECES)
    num_pieces = -(-T // length)
    padded = jnp.concatenate([table, jnp.zeros((S, num_pieces * length - T), table.dtype)], axis=1)
    x, rho_b, eps_b = _start_jit(table, rhos, eps, num_replicates, diameter)
    for i in range(num_pieces):
        ts = jnp.arange(i * length, (i + 1) * length)
        x = jax.block_until_ready(
            _steps_jit(key, x, ts, padded[:, i * length:(i + 1) * length].T, rho_b, eps_b, diameter, noise)
        )
        bar.update(min(length, T - i * length))
    return _finish_jit(x, eps_b)


def _as_table(table, labels, total_steps):
    """``(table, labels, tail degrees)`` from an ``(S, T)`` array, a sequence or a mapping of schedules."""
    if isinstance(table, Mapping) or (isinstance(table, Sequence) and table and callable(table[0])):
        if isinstance(table, Mapping):
            names, schedules = tuple(str(k) for k in table), list(table.values())
        else:
            names, schedules = (), list(table)
        if not all(callable(f) for f in schedules):
            raise TypeError("misspecification_sweep: table must be an (S, T) array or schedules (callables)")
        if total_steps is None:
            horizons = [getattr(f, "horizon", None) for f in schedules]
            if any(h is None for h in horizons) or max(horizons) < 1:
                raise ValueError(
                    "misspecification_sweep: a schedule has no horizon (e.g. inverse_sqrt or constant); "
                    "pass total_steps=T."
                )
            total_steps = int(max(horizons))
        degrees = []
        for f in schedules:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "does not anneal" is the expected p = 0
                degrees.append(tail_degree(f, total_steps))
        return schedule_table(schedules, total_steps), (labels or names), tuple(degrees)
    if total_steps is not None:
        raise ValueError("misspecification_sweep: total_steps is only used with schedules, not with a table")
    return jnp.asarray(table), labels, ()


def misspecification_sweep(
    key: PRNGKey,
    table: Float[ArrayLike, "S T"] | Sequence[Callable] | Mapping[str, Callable],
    rhos: Float[ArrayLike, " K"] | Sequence[float] | None = None,
    *,
    eps: Float[ArrayLike, " E"] | Sequence[float] | None = None,
    num_replicates: int = 256,
    diameter: float = 1.0,
    noise: float = 1.0,
    labels: Sequence[str] | None = None,
    total_steps: int | None = None,
    progress: bool | None = None,
) -> SweepResult:
    r"""Run projected SGD on $f_\varepsilon(x) = \varepsilon|x|$ for every schedule, rho, scale, replicate.

    One compiled function: a ``lax.scan`` over the ``T`` steps whose state is the ``(S, K, E, R)`` array of
    iterates. The step at count ``t`` for schedule ``s`` is ``rhos[k] * table[s, t]``; build the table with
    `schedule_table` from schedules scaled by the tuned step (e.g. $D/(\sigma\sqrt T)$), or pass
    the schedules themselves (a mapping ``{name: schedule}`` keeps the names): the table is then built over
    ``total_steps`` (default: the longest horizon) and each schedule's tail degree is recorded, so that
    `fit_slopes` can print the predicted exponent next to the fitted one.

    Args:
      key: PRNG key; the same noise sequence is shared by every cell (common random numbers).
      table: ``(S, T)`` step sizes before misspecification (NumPy or JAX), or ``S`` schedules as a sequence
        or a ``{name: schedule}`` mapping.
      rhos: ``(K,)`` positive misspecification factors (array or list); default ``1, 2, 4, ..., 64``, which
        covers `fit_slopes`' default ``fit_range=(4, 64)`` with five points.
      eps: ``(E,)`` positive problem scales (array or list); default a 17-point log grid on
        $[\sigma/\sqrt T, \sigma]$.
      num_replicates: ``R`` independent runs per cell.
      diameter: half-width ``D`` of the domain; the start is ``x_1 = D``.
      noise: gradient noise standard deviation $\sigma$.
      labels: ``S`` schedule names for the result's printout and plots (default: the mapping's keys).
      total_steps: horizon ``T`` when schedules are passed (default: their longest horizon).
      progress: show a progress bar. None shows progress in an interactive terminal for loops driven from
        Python; a loop inside one compiled program reports only with progress=True. With a bar the ``T``
        steps run in 20 compiled pieces driven from Python (the same result).

    Returns:
      A `SweepResult`.

    Raises:
      ValueError: non-positive sizes, ``labels`` of the wrong length, or (checked on the host for concrete
        input, via ``eqx.error_if`` when traced) non-positive or non-finite ``rhos``/``eps``, a negative or
        non-finite table.
      TypeError: a non-floating table.

    References:
      Attia & Koren, arXiv:2503.09411.

    Examples:
      >>> import jax
      >>> from icmlx.optim import misspecification_sweep, schedule_table, linear_decay
      >>> T = 64
      >>> table = schedule_table([linear_decay(1.0 / T**0.5, T)], T)
      >>> res = misspecification_sweep(jax.random.key(0), table, jnp.array([1.0, 4.0]), num_replicates=8)
      >>> res.worst.shape
      (1, 2)
    """
    table, labels, degrees = _as_table(table, labels, total_steps)
    if not jnp.issubdtype(table.dtype, jnp.floating):
        raise TypeError(f"table must be floating, got dtype {table.dtype}")
    if table.ndim != 2:
        raise ValueError(f"table must be (S, T): one row of step sizes per schedule, got shape {table.shape}")
    num_replicates = check_int(num_replicates, "num_replicates", minimum=1)
    for name, value in (("diameter", diameter), ("noise", noise)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"misspecification_sweep: {name} must be finite and > 0, got {name}={value!r}")
    S, T = table.shape
    if S == 0 or T == 0:
        raise ValueError(f"misspecification_sweep: table must have at least one schedule and one step, got shape "
                         f"{table.shape}")
    if labels is not None and len(labels) not in (0, S):
        raise ValueError(f"labels must name the {S} schedules (rows of table), got {len(labels)} labels")
    dtype = table.dtype
    rhos = 2.0 ** jnp.arange(7, dtype=dtype) if rhos is None else jnp.asarray(rhos).astype(dtype)
    if eps is None:
        eps = jnp.geomspace(noise / T**0.5, noise, 17).astype(dtype)
    eps = jnp.asarray(eps).astype(dtype)
    for name, value in (("rhos", rhos), ("eps", eps)):
        if value.ndim != 1 or value.shape[0] == 0:
            raise ValueError(f"misspecification_sweep: {name} must be a non-empty 1-D array, got shape {value.shape}")
    rhos = _check_positive(rhos, "rhos")
    eps = _check_positive(eps, "eps")
    table = check_values(
        table, lambda xp, v: ~(xp.isfinite(v) & (v >= 0)),
        "misspecification_sweep: table must be finite and >= 0 (step sizes before misspecification).",
    )
    show = resolve_progress(progress)
    if show:
        with ProgressBar("misspecification_sweep", total=T, enabled=True) as bar:
            errors, worst, idx = _sweep_with_progress(
                key, table, rhos, eps, num_replicates, float(diameter), float(noise), bar)
    else:
        errors, worst, idx = _sweep(key, table, rhos, eps, num_replicates, float(diameter), float(noise))
    return SweepResult(errors=errors, rhos=rhos, eps=eps, worst=worst, worst_eps_index=idx,
                       labels=tuple(str(x) for x in labels or ()), tail_degrees=degrees)


def _ols_slope(logx, logy, mask):
    w = mask.astype(logx.dtype)
    n = w.sum()
    mx = (w * logx).sum() / n
    my = (w * logy).sum(axis=-1, keepdims=True) / n
    cov = (w * (logx - mx) * (logy - my)).sum(axis=-1)
    var = (w * (logx - mx) ** 2).sum()
    return cov / var


def fit_slopes(
    key: PRNGKey,
    result: SweepResult,
    *,
    fit_range: tuple[float, float] = (4.0, 64.0),
    num_resamples: int = 200,
    level: float = 0.95,
) -> SlopeFitResult:
    r"""Fit $\log W(\rho) = a + b \log \rho$ per schedule on ``fit_range``, with a bootstrap interval.

    The bootstrap resamples replicates with replacement (the same resample for every cell, as the draws are
    shared), recomputes the replicate means, redoes the max over scales, and refits.

    Args:
      key: PRNG key for the bootstrap.
      result: a `SweepResult`.
      fit_range: inclusive range of $\rho$ used in the fit (fix it before looking at the data).
      num_resamples: number of bootstrap resamples ``B``.
      level: coverage of the percentile interval.

    Returns:
      A `SlopeFitResult`.

    Raises:
      ValueError: fewer than two rhos in ``fit_range``, ``num_resamples < 1``, ``level`` outside (0, 1), or
        non-finite errors or a zero worst case at the fitted rhos.
      TypeError: ``result`` is not a `SweepResult`.

    References:
      Attia & Koren, arXiv:2503.09411.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.optim import fit_slopes, linear_decay, misspecification_sweep, schedule_table
      >>> T = 64
      >>> table = schedule_table([linear_decay(1.0 / T**0.5, T)], T)
      >>> res = misspecification_sweep(jax.random.key(0), table, jnp.array([4.0, 8.0, 16.0]), num_replicates=8)
      >>> fit_slopes(jax.random.key(1), res, num_resamples=10).boot.shape
      (10, 1)
    """
    if not isinstance(result, SweepResult):
        raise TypeError(f"fit_slopes: result must be the SweepResult of misspecification_sweep, got "
                        f"{type(result).__name__}")
    num_resamples = check_int(num_resamples, "num_resamples", minimum=1)
    check_number(level, "level", where="fit_slopes", minimum=0, maximum=1, open_minimum=True, open_maximum=True)
    check_number(fit_range[0], "fit_range[0]", where="fit_slopes")
    check_number(fit_range[1], "fit_range[1]", where="fit_slopes")
    if not 0.0 < float(fit_range[0]) <= float(fit_range[1]) < np.inf:
        raise ValueError(f"fit_range must be (low, high) with 0 < low <= high < inf, got {fit_range=}")
    rhos = result.rhos
    mask = (rhos >= fit_range[0] * (1 - 1e-6)) & (rhos <= fit_range[1] * (1 + 1e-6))
    if int(mask.sum()) < 2:
        raise ValueError(f"need at least two rhos in {fit_range=}, got rhos={rhos}")
    # A log-log fit needs finite, positive worst cases (and replicate errors) at the fitted rhos.
    sel = np.asarray(mask)
    check_values(
        result.errors[:, sel], lambda xp, v: ~(xp.isfinite(v) & (v >= 0)),
        "fit_slopes: result.errors has NaN/inf or negative entries at the fitted rhos; rerun the sweep.",
    )
    check_values(
        result.worst[:, sel], lambda xp, v: ~(v > 0),
        "fit_slopes: a worst case W(rho) in fit_range is zero, so log W is -inf; fit a range where the "
        "error is positive (or use more steps or noise).",
    )
    logx = jnp.log(rhos)
    slope = _ols_slope(logx, jnp.log(result.worst), mask)

    errors = result.errors
    R = errors.shape[-1]
    idx = jax.random.randint(key, (num_resamples, R), 0, R)
    counts = jnp.zeros((num_resamples, R), errors.dtype).at[jnp.arange(num_resamples)[:, None], idx].add(1.0)
    means = jnp.einsum("sker,br->bske", errors, counts) / R
    worst_b = means.max(axis=-1)  # (B, S, K)
    boot = _ols_slope(logx, jnp.log(worst_b), mask)  # (B, S)
    a = (1 - level) / 2
    lo = jnp.quantile(boot, a, axis=0)
    hi = jnp.quantile(boot, 1 - a, axis=0)
    w = mask.astype(logx.dtype)
    intercept = (w * jnp.log(result.worst)).sum(-1) / w.sum() - slope * (w * logx).sum() / w.sum()
    return SlopeFitResult(
        slope=slope, lower=lo, upper=hi, boot=boot, intercept=intercept, labels=result.labels,
        tail_degrees=result.tail_degrees, fit_range=(float(fit_range[0]), float(fit_range[1])), level=float(level),
    )
