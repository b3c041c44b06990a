"""Turning what users hold (pandas DataFrames, NumPy, JAX, lists) into arrays, keeping column names.

Only duck typing is used, so pandas is never imported: a DataFrame is anything with ``columns`` and
``to_numpy``; a Series anything with ``to_numpy`` and ``name``.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

__all__ = ["is_dataframe", "is_series", "column_names", "table_values", "to_device", "to_host"]


def to_device(x: Any, dtype: Any = None) -> jax.Array:
    """A host array-like on the default device, converted to ``dtype`` on the host first.

    ``dtype=None`` keeps the array's dtype; either way it is canonicalised (float64 becomes float32 unless x64 is
    on). The conversion runs in NumPy because ``jnp.asarray`` or a device-side ``astype`` of a host array compiles
    a small staging program per shape and dtype, and a fresh process would pay one for every input it receives;
    ``jax.device_put`` of a NumPy array compiles nothing. A JAX array already in the target dtype is returned as it
    is (no round trip through the host).
    """
    if isinstance(x, jax.Array):
        target = jax.dtypes.canonicalize_dtype(x.dtype if dtype is None else dtype)
        if x.dtype == target:
            return x
    return jax.device_put(to_host(x, dtype))


def to_host(x: Any, dtype: Any = None) -> np.ndarray:
    """`to_device`'s conversion without the upload: a NumPy array in ``dtype`` (``None``: its own), canonicalised
    as JAX would store it. For data that a caller reads on the host first and uploads later, or only in part."""
    arr = np.asarray(x)
    return np.asarray(arr, jax.dtypes.canonicalize_dtype(arr.dtype if dtype is None else dtype))


def is_dataframe(x: Any) -> bool:
    """Whether ``x`` looks like a pandas (or polars-like) DataFrame."""
    return hasattr(x, "columns") and hasattr(x, "to_numpy") and getattr(x, "ndim", 2) == 2


def is_series(x: Any) -> bool:
    """Whether ``x`` looks like a pandas Series."""
    return hasattr(x, "to_numpy") and hasattr(x, "name") and not hasattr(x, "columns")


def column_names(x: Any) -> tuple[str, ...] | None:
    """The column names of a DataFrame as strings, else ``None``."""
    if not is_dataframe(x):
        return None
    return tuple(str(c) for c in x.columns)


def table_values(x: Any, *, name: str = "data") -> tuple[Any, tuple[str, ...] | None]:
    """``(values, names)``: a DataFrame becomes a NumPy array and its column names; anything else passes through.

    A DataFrame whose columns all have numeric dtypes gives a numeric array; mixed or object columns give an
    object array, left to the caller to encode (e.g. categorical columns for a χ² test).
    """
    if is_dataframe(x):
        names = column_names(x)
        try:
            values = x.to_numpy()
        except Exception as err:  # pragma: no cover - exotic frames
            raise TypeError(f"{name}: could not convert the DataFrame to an array ({err})") from err
        return np.asarray(values), names
    if is_series(x):
        return np.asarray(x.to_numpy()), None
    return x, None
