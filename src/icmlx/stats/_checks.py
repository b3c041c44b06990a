"""Input validation shared by the ``icmlx.stats`` public functions (private).

Python numbers and concrete arrays are checked eagerly on the host (``ValueError`` naming the value); traced arrays
(inside a user's ``jax.jit``) are checked with `equinox.error_if`, which raises at run time
(`icmlx._checks.check_values`).
"""

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_int, check_number, check_values, default_float_dtype, is_traced
from .._inputs import to_device

__all__: list[str] = []


def float_dtype(*values: Any) -> Any:
    """The floating dtype of the array arguments, else the default float dtype."""
    dts = [
        v.dtype
        for v in values
        if isinstance(v, (jax.Array, np.ndarray)) and jnp.issubdtype(v.dtype, jnp.floating)
    ]
    if not dts:
        return default_float_dtype()
    dt = dts[0]
    for d in dts[1:]:
        if d != dt:
            raise TypeError(f"mixed floating dtypes {dt} and {d}; cast the inputs to one dtype")
    return dt


def host_float_array(x: np.ndarray, name: str, dtype: Any = None) -> np.ndarray:
    """A NumPy array as the floating host array `as_float_array` would put on the device.

    Always a new buffer: ``jax.device_put`` may alias host memory on CPU, and the caller's array must stay theirs
    (writing to it later must not change a JAX array). ``dtype`` defaults to the input's floating dtype (as JAX
    would store it), else the default float.
    """
    if x.dtype == object:
        raise TypeError(f"{name}: got an object array; pass numbers (e.g. np.asarray(values, dtype=float))")
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {x.dtype}")
    if dtype is None:
        floating = jnp.issubdtype(x.dtype, jnp.floating)
        dtype = jax.dtypes.canonicalize_dtype(x.dtype) if floating else default_float_dtype()
    y = x.astype(dtype, copy=False)
    return y.copy() if y is x else y


def as_float_array(x: Any, name: str) -> jax.Array:
    """``x`` as a floating JAX array (integers are cast to the default float; complex is refused)."""
    if isinstance(x, np.ndarray):
        # host data: cast on the host and transfer once; jnp.asarray would compile a conversion program
        return jax.device_put(host_float_array(x, name))
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {x.dtype}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(default_float_dtype())
    return x


def check_no_nan(x: jax.Array, name: str) -> jax.Array:
    """Raise if ``x`` has a NaN: a ``ValueError`` now for a concrete ``x``, at run time under ``jit``."""
    return check_values(x, lambda xp, v: xp.isnan(v), f"{name} contains NaN; drop or impute those entries first")


def _range_check(arr, lo, hi, lo_closed, hi_closed, allow_inf, msg):
    def bad(xp, v):
        out = xp.isnan(v)
        if not allow_inf:
            out = out | xp.isinf(v)
        if lo is not None:
            out = out | ((v < lo) if lo_closed else (v <= lo))
        if hi is not None:
            out = out | ((v > hi) if hi_closed else (v >= hi))
        return out

    return check_values(arr, bad, msg)


def _representable(name: str, v: np.ndarray, value: Any, dtype: Any, allow_inf: bool) -> None:
    """Refuse a finite host value that the working dtype turns into inf, or a nonzero one it flushes to zero."""
    dt = np.dtype(dtype)
    if not np.issubdtype(dt, np.floating):
        return
    info = np.finfo(dt)
    finite = np.isfinite(v)
    over = finite & (np.abs(v) > float(info.max))
    under = finite & (v != 0) & (np.abs(v) < float(info.tiny))
    if np.any(over) or np.any(under):
        what = "overflows" if np.any(over) else "underflows"
        raise ValueError(
            f"{name}={value!r} {what} in {dt.name} (its normal range is {float(info.tiny):.2g} to "
            f"{float(info.max):.2g}); pass float64 inputs with jax_enable_x64, or rescale the data"
        )


def check_scalar(
    name: str,
    value: Any,
    dtype: Any,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_closed: bool = False,
    hi_closed: bool = False,
    allow_inf: bool = False,
) -> jax.Array:
    """Convert a scalar (or broadcastable array) parameter to ``dtype`` and check its range.

    The interval is ``(lo, hi)`` with the closedness flags; NaN is always rejected, infinities unless
    ``allow_inf``. A concrete value must also be a normal number of ``dtype`` (not overflow to inf or flush to 0
    when cast), so that float32 cannot silently turn ``p=1e-40`` into 0 or ``tau2=1e40`` into inf.
    """
    left = "[" if lo_closed else "("
    right = "]" if hi_closed else ")"
    interval = f"{left}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{right}"
    finite = "" if allow_inf else " and be finite"
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got {name}={value!r}")
    if isinstance(value, (np.ndarray, np.generic)) and np.iscomplexobj(value):
        raise TypeError(f"{name} must be real, got dtype {value.dtype}")
    if not isinstance(value, jax.Array):
        host = np.asarray(value) if isinstance(value, (list, tuple)) else value
        check_number(host, name, minimum=lo, maximum=hi, open_minimum=not lo_closed, open_maximum=not hi_closed,
                     allow_inf=allow_inf, allow_array=True)
        v = np.asarray(host, dtype=np.float64)
        _representable(name, v, value, dtype, allow_inf)
        if hi is not None and not hi_closed and np.any(np.asarray(v, dtype=np.dtype(dtype)).astype(np.float64) >= hi):
            raise ValueError(f"{name}={value!r} rounds to {hi} in {np.dtype(dtype).name}; it must lie in {interval}: "
                             "pass float64 inputs with jax_enable_x64")
        # a transfer, not jnp.asarray: that compiles a conversion program (one more per process, cache or not)
        return to_device(value, dtype)
    if jnp.issubdtype(value.dtype, jnp.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {value.dtype}")
    return _range_check(value.astype(dtype), lo, hi, lo_closed, hi_closed, allow_inf,
                        f"{name} must lie in {interval}{finite}")


def positive(name: str, value: Any, dtype: Any) -> jax.Array:
    """A strictly positive, finite parameter (variances, scales, costs)."""
    return check_scalar(name, value, dtype, lo=0.0)


def static_int(where: str, name: str, value: Any, *, lo: int = 1) -> int:
    """``value`` as a Python int ``>= lo`` (a static setting such as ``num_steps``): `icmlx._checks.check_int`."""
    return check_int(value, name, where=where, minimum=lo)


def static_bool(where: str, name: str, value: Any) -> bool:
    """``value`` as a Python bool (a static switch such as ``binned``), else a ``TypeError`` naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{where}: {name} must be True or False (a static setting), got {name}={value!r}")
    return bool(value)


def static_positive_float(where: str, name: str, value: Any) -> float:
    """``value`` as a finite Python float > 0 (a static setting), else a ``ValueError``/``TypeError``."""
    if isinstance(value, jax.core.Tracer):
        raise TypeError(f"{where}: {name} must be a real number (a static setting: pass a Python float), "
                        f"got {name}=a traced value")
    return float(check_number(value, name, where=where, minimum=0, open_minimum=True))


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


# --- what users hold: lists, NumPy, JAX, pandas Series -> a floating array (+ the Series' index) --------------


class Labels:
    """The index of a pandas Series carried into a result (a static field compared by identity, so cheap to hash)."""

    __slots__ = ("index",)

    def __init__(self, index: Any):
        self.index = index

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"Labels({len(self.index)})"


def _series_values(x: Any, name: str) -> tuple[Any, Labels | None]:
    """A pandas Series (or a one-column DataFrame) as a float64 NumPy array and its index; else ``(x, None)``."""
    from .._inputs import is_dataframe, is_series

    if is_dataframe(x):
        if x.shape[1] != 1:
            raise TypeError(
                f"{name}: got a DataFrame with {x.shape[1]} columns; pass one column of statistics (df['z']), "
                "or df.to_numpy().T for one test per row"
            )
        x = x.iloc[:, 0]
    if is_series(x):
        try:
            values = x.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name}: the Series has non-numeric values (dtype {x.dtype}); pass numbers") from err
        return values, Labels(x.index)
    return x, None


def host_input_array(x: Any, name: str) -> tuple[Any, Labels | None]:
    """Like `as_input_array`, but host data (list, NumPy, Series) stays a NumPy array of the final dtype.

    A caller checks the values there and puts the array on the device once (`jax.device_put`), so a
    large input makes one host-to-device copy and no round trip.
    """
    x, labels = _series_values(x, name)
    if isinstance(x, (list, tuple)):
        try:
            x = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name}: could not read the list as numbers ({err})") from err
    if isinstance(x, np.ndarray):
        # a float64 array under float32 JAX: cast once, quietly
        return host_float_array(x, name, default_float_dtype() if x.dtype != object else None), labels
    return as_float_array(x, name), labels


def as_input_array(x: Any, name: str) -> tuple[jax.Array, Labels | None]:
    """``x`` (list, tuple, NumPy, JAX, pandas Series) as a floating JAX array, and the Series index if any."""
    x, labels = host_input_array(x, name)
    return (jax.device_put(x) if isinstance(x, np.ndarray) else x), labels


def _where_first(mask: np.ndarray, labels: Labels | None) -> str:
    flat = np.flatnonzero(mask.reshape(-1))
    count = flat.size
    first = np.unravel_index(flat[0], mask.shape)
    pos = int(first[0]) if mask.ndim == 1 else tuple(int(i) for i in first)
    at = f"label {labels.index[pos]!r}" if labels is not None and mask.ndim == 1 else f"index {pos}"
    return f"{count} {{what}}{'s' if count > 1 else ''} (first at {at})"


def check_finite(x: jax.Array, name: str, labels: Labels | None = None) -> jax.Array:
    """Refuse NaN and infinite entries with a short message that counts them and says where the first one is.

    A concrete ``x`` is checked on the host (``ValueError`` now); a traced one with `equinox.error_if`.
    """
    if is_traced(x):
        return check_values(
            x, lambda xp, v: ~xp.isfinite(v),
            f"{name} contains NaN or an infinite value; z-scores must be finite: drop or impute NaN, cap infinities",
        )
    v = np.asarray(x)
    bad_nan = np.isnan(v)
    if bad_nan.any():
        where = _where_first(bad_nan, labels).format(what="NaN value")
        raise ValueError(f"{name} contains {where}; drop or impute those entries first")
    bad_inf = np.isinf(v)
    if bad_inf.any():
        where = _where_first(bad_inf, labels).format(what="infinite value")
        raise ValueError(
            f"{name} contains {where}; z-scores must be finite: drop it, or cap it at a large finite value "
            "(e.g. 40) to keep it as a sure rejection"
        )
    return x


#: Fewer tests than this are never taken for p-values (genuine z-scores all land in [0, 1] with probability
#: at most 0.383 ** n, the N(0.5, 1) case; 6.8e-5 at n = 10).
MIN_TESTS_FOR_PVALUE_WARNING = 10


def looks_like_pvalues(z: np.ndarray) -> bool:
    """The rule for "these z-scores are p-values": at least 10 values, all in [0, 1] (NaN-free, host NumPy).

    Genuine z-scores are N(mu_i, 1) with half of the null ones negative, so all n of them fall in [0, 1] with
    probability at most ``0.383 ** n`` (attained at mu = 0.5; ``0.341 ** n`` under the global null), while p-values
    always do.
    """
    z = np.asarray(z)
    return z.size >= MIN_TESTS_FOR_PVALUE_WARNING and bool(np.all((z >= 0.0) & (z <= 1.0)))


def warn_if_pvalues(x: jax.Array, scale: Any, where: str, stacklevel: int) -> None:
    """Warn when the z-scores ``x / scale`` of a concrete ``x`` look like p-values (`looks_like_pvalues`)."""
    if is_traced(x) or is_traced(scale):
        return
    z = np.asarray(x)
    if scale is not None:
        z = z / np.asarray(scale)
    if looks_like_pvalues(z):
        warnings.warn(
            f"{where}: all {z.size} values of x/sigma lie in [0, 1]; these look like p-values, but {where} expects "
            "z-scores (statistics/sigma). Pass the statistics, or for p-values use benjamini_hochberg/bonferroni.",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def prepare_scores(x: Any, where: str, *, name: str = "x", stacklevel: int = 3) -> tuple[jax.Array, Labels | None]:
    """``x`` as a finite floating array with a tests axis, and the Series index (the entry of every z-test)."""
    x, labels = as_input_array(x, name)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"{where}: {name} must have a non-empty last (tests) axis, got {name}.shape={x.shape}")
    return check_finite(x, name, labels), labels
