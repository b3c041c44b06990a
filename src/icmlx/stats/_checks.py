"""Input validation shared by the ``icmlx.stats`` public functions (private).

Python numbers and concrete arrays are checked eagerly on the host (``ValueError`` naming the value); traced arrays
(inside a user's ``jax.jit``) are checked with :func:`equinox.error_if`, which raises at run time
(:func:`icmlx._checks.check_values`).
"""

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_values

__all__: list[str] = []


def default_float() -> Any:
    """The default floating dtype (float64 under ``jax_enable_x64``, else float32)."""
    return jnp.result_type(float)


def float_dtype(*values: Any) -> Any:
    """The floating dtype of the array arguments, else the default float dtype."""
    dts = [
        v.dtype
        for v in values
        if isinstance(v, (jax.Array, np.ndarray)) and jnp.issubdtype(v.dtype, jnp.floating)
    ]
    if not dts:
        return default_float()
    dt = dts[0]
    for d in dts[1:]:
        if d != dt:
            raise TypeError(f"mixed floating dtypes {dt} and {d}; cast the inputs to one dtype")
    return dt


def as_float_array(x: Any, name: str) -> jax.Array:
    """``x`` as a floating JAX array (integers are cast to the default float; complex is refused)."""
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {x.dtype}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(default_float())
    return x


def check_no_nan(x: jax.Array, name: str) -> jax.Array:
    """Raise if ``x`` has a NaN: a ``ValueError`` now for a concrete ``x``, at run time under ``jit``."""
    return check_values(x, lambda xp, v: xp.isnan(v), f"{name} contains NaN; drop or impute those entries first")


def _range_check(arr, lo, hi, lo_closed, hi_closed, msg):
    def bad(xp, v):
        out = xp.isnan(v)
        if lo is not None:
            out = out | ((v < lo) if lo_closed else (v <= lo))
        if hi is not None:
            out = out | ((v > hi) if hi_closed else (v >= hi))
        return out

    return check_values(arr, bad, msg)


def check_scalar(
    name: str,
    value: Any,
    dtype: Any,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_closed: bool = False,
    hi_closed: bool = False,
) -> jax.Array:
    """Convert a scalar (or broadcastable array) parameter to ``dtype`` and check its range.

    The interval is ``(lo, hi)`` with the closedness flags; NaN is always rejected.
    """
    left = "[" if lo_closed else "("
    right = "]" if hi_closed else ")"
    interval = f"{left}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{right}"
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got {name}={value!r}")
    if not isinstance(value, jax.Array):
        v = np.asarray(value, dtype=np.float64)
        bad = np.isnan(v)
        if lo is not None:
            bad |= (v < lo) if lo_closed else (v <= lo)
        if hi is not None:
            bad |= (v > hi) if hi_closed else (v >= hi)
        if np.any(bad):
            raise ValueError(f"{name} must lie in {interval}, got {name}={value!r}")
        return jnp.asarray(value, dtype=dtype)
    if jnp.issubdtype(value.dtype, jnp.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {value.dtype}")
    return _range_check(value.astype(dtype), lo, hi, lo_closed, hi_closed,
                        f"{name} must lie in {interval}")


def positive(name: str, value: Any, dtype: Any) -> jax.Array:
    """A strictly positive parameter (variances, scales, costs)."""
    return check_scalar(name, value, dtype, lo=0.0)


def warn_float32_tails(dtype: Any, n: int, what: str) -> None:
    """Warn (at trace time) when float32 is used for ``n >= 1e6`` tests whose thresholds live in far tails."""
    if n >= 1_000_000 and jnp.dtype(dtype).itemsize < 8:
        warnings.warn(
            f"{what}: {n} tests in {jnp.dtype(dtype).name}; the per-test level is ~1/n and float32 "
            "loses the far tail (1 - Phi(z) rounds to 0 below ~6e-8). Enable float64 with "
            "jax.config.update('jax_enable_x64', True) and pass float64 inputs.",
            UserWarning,
            stacklevel=3,
        )
