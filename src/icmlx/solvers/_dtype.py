"""The working dtype policy of G-RANS: float64 ``x``/``r``/projection when x64 is on, else float32 with a warning."""

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["working_dtype"]


def working_dtype(dtype: str = "auto") -> Any:
    """The dtype used for ``x``, ``r`` and the projection.

    ``"auto"`` is float64 when ``jax_enable_x64`` is on and float32 (with a ``UserWarning``) otherwise;
    ``"float64"`` with x64 off raises ``ValueError``; ``"float32"`` is always allowed.

    Args:
      dtype: ``"auto"``, ``"float64"`` or ``"float32"`` (or the dtype itself, e.g. ``jnp.float32``).

    Returns:
      ``jnp.float64`` or ``jnp.float32``.

    Raises:
      ValueError: unknown name, or ``"float64"`` while x64 is disabled.

    Examples:
      >>> from icmlx.solvers import working_dtype
      >>> working_dtype("float32")
      <class 'jax.numpy.float32'>
    """
    x64 = bool(jax.config.jax_enable_x64)
    if not isinstance(dtype, str):  # a dtype object (jnp.float32, np.float64, np.dtype("float32"))
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
        if name not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'auto', 'float64' or 'float32' (or that dtype), got {dtype!r}")
        dtype = name
    if dtype == "float32":
        return jnp.float32
    if dtype == "float64":
        if not x64:
            raise ValueError(
                "G-RANS dtype='float64' needs 64-bit JAX: set JAX_ENABLE_X64=1 or call "
                "jax.config.update('jax_enable_x64', True) before creating arrays "
                "(float32 x/r cannot reach relative residuals below ~1e-4 at n >= 1e4)"
            )
        return jnp.float64
    if dtype == "auto":
        if x64:
            return jnp.float64
        warnings.warn(
            "G-RANS is running x, r and the projection in float32 because jax_enable_x64 is off; "
            "relative residuals below ~1e-4 may be unreachable (status 'stagnation'). "
            "Enable x64 for the float64 solver.", UserWarning, stacklevel=3)
        return jnp.float32
    raise ValueError(f"dtype must be 'auto', 'float64' or 'float32', got {dtype!r}")

