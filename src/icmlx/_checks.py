"""Checks at the public boundary: settings (counts, ranges, numbers) and value checks that stay out of compiled
programs when the input is concrete.

Settings: `check_int` (counts, sizes, step numbers) and `check_number` (tolerances, rates, scales, levels) are the
library's one implementation. A string, a bool or any other non-number where a number belongs is a ``TypeError``
naming the argument (``"0.05"`` is not silently parsed, ``True`` is not a count); a number outside its range is a
``ValueError`` showing the value and the range. `default_float_dtype` is the one answer to "which float dtype do new
arrays get".

Values:

A check written as `equinox.error_if` puts a host callback into the compiled program, and JAX does not store
programs with host callbacks in its persistent compilation cache, so every new process compiles them again. It also
reports a failure as a long runtime error. `check_values` therefore checks a concrete input (a NumPy array,
a Python number, a JAX array outside ``jit``) on the host with NumPy and raises a plain ``ValueError`` carrying
the message; only a traced input (inside the user's ``jit``/``vmap``) gets `equinox.error_if`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["check_int", "check_number", "check_values", "default_float_dtype", "is_traced"]


def default_float_dtype() -> np.dtype:
    """The float dtype JAX gives new arrays: float64 with ``jax_enable_x64``, else float32.

    It asks `jax.dtypes.canonicalize_dtype` and builds no array, so calling it compiles nothing in a fresh process.

    Examples:
      >>> import numpy as np
      >>> default_float_dtype() in (np.dtype("float32"), np.dtype("float64"))
      True
    """
    return np.dtype(jax.dtypes.canonicalize_dtype(np.float64))


def _prefix(where: str) -> str:
    return f"{where}: " if where else ""


def _shown(value: Any) -> str:
    return "a traced value" if is_traced(value) else repr(value)


def _interval(minimum, maximum, open_minimum: bool, open_maximum: bool) -> str:
    left = "(" if open_minimum or minimum is None else "["
    right = ")" if open_maximum or maximum is None else "]"
    return f"{left}{'-inf' if minimum is None else minimum}, {'inf' if maximum is None else maximum}{right}"


def check_int(value: Any, name: str, *, where: str = "", minimum: int | None = None,
              maximum: int | None = None) -> int:
    """``value`` as a Python ``int`` in ``[minimum, maximum]`` (a static setting: a count, a size, a step number).

    Args:
      value: the setting. Python and NumPy integers (and 0-d integer NumPy arrays) are accepted.
      name: the argument's name, shown in the error.
      where: the public function or class, shown first in the error (``"pc"``, ``"GRANS"``).
      minimum, maximum: inclusive bounds; ``None`` for none.

    Returns:
      ``int(value)``.

    Raises:
      TypeError: ``value`` is not an integer: a string (``"10"``), a bool, a float (``10.0``), a traced value.
      ValueError: ``value`` is outside ``[minimum, maximum]``.

    Examples:
      >>> check_int(np.int64(3), "num_steps", minimum=1)
      3
      >>> check_int("3", "num_steps", where="cg")
      Traceback (most recent call last):
        ...
      TypeError: cg: num_steps must be an integer, got num_steps='3' (str)
    """
    if isinstance(value, np.ndarray) and value.ndim == 0 and np.issubdtype(value.dtype, np.integer):
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        kind = "a traced value" if is_traced(value) else type(value).__name__
        hint = " (a static setting: pass a Python int)" if is_traced(value) else ""
        raise TypeError(f"{_prefix(where)}{name} must be an integer{hint}, got {name}={_shown(value)} ({kind})")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{_prefix(where)}{name} must be an integer in {_interval(minimum, maximum, False, False)}, "
                         f"got {name}={value}")
    return value


def check_number(value: Any, name: str, *, where: str = "", minimum: float | int | None = None,
                 maximum: float | int | None = None, open_minimum: bool = False, open_maximum: bool = False,
                 allow_inf: bool = False, allow_array: bool = False) -> Any:
    """Check a real-valued setting (a tolerance, a rate, a scale, a level) and return it unchanged.

    Python and NumPy numbers, and real JAX/NumPy arrays (0-d unless ``allow_array``), are accepted. A concrete value
    is checked on the host; a traced one (inside the user's ``jit``) goes through `check_values`, so the range check
    runs when the program runs.

    Args:
      value: the setting.
      name: the argument's name, shown in the error.
      where: the public function or class, shown first in the error.
      minimum, maximum: bounds, inclusive unless ``open_minimum`` / ``open_maximum``; ``None`` for none.
      allow_inf: accept ±inf (NaN is always refused).
      allow_array: accept arrays of any shape (every entry is checked), not only scalars.

    Raises:
      TypeError: ``value`` is not a real number: a string (``"1e-3"``), a bool, ``None``, a complex number, an array
        of another dtype, or an array where a scalar belongs.
      ValueError: ``value`` is NaN, infinite (unless ``allow_inf``) or outside the range.

    Examples:
      >>> check_number(0.05, "alpha", minimum=0, maximum=1, open_minimum=True)
      0.05
      >>> check_number("0.05", "alpha", where="benjamini_hochberg")
      Traceback (most recent call last):
        ...
      TypeError: benjamini_hochberg: alpha must be a real number, got alpha='0.05' (str)
    """
    prefix = _prefix(where)
    kind = "a real array" if allow_array else "a real number"
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (np.ndarray, jax.Array))
                                                 and value.dtype == np.bool_):
        raise TypeError(f"{prefix}{name} must be {kind}, got {name}={value!r} (bool)")
    if isinstance(value, (np.ndarray, jax.Array, np.generic)):
        if not (np.issubdtype(value.dtype, np.floating) or np.issubdtype(value.dtype, np.integer)):
            raise TypeError(f"{prefix}{name} must be {kind}, got {name} of dtype {value.dtype}")
        if not allow_array and np.ndim(value) != 0:
            raise TypeError(f"{prefix}{name} must be a scalar, got {name} of shape {np.shape(value)}")
    elif not isinstance(value, numbers.Real):
        raise TypeError(f"{prefix}{name} must be {kind}, got {name}={value!r} ({type(value).__name__})")
    interval = _interval(minimum, maximum, open_minimum, open_maximum)

    def bad(xp, v):
        out = xp.isnan(v) if allow_inf else ~xp.isfinite(v)
        if minimum is not None:
            out = out | ((v <= minimum) if open_minimum else (v < minimum))
        if maximum is not None:
            out = out | ((v >= maximum) if open_maximum else (v > maximum))
        return out

    finite = "" if allow_inf else ", finite"
    message = f"{prefix}{name} must lie in {interval}{finite}, got {name}={_shown(value)}"
    if is_traced(value):
        return check_values(value, bad, message)
    if bool(np.any(bad(np, np.asarray(value, dtype=np.float64)))):
        raise ValueError(message)
    return value


def is_traced(x: Any) -> bool:
    """Whether any leaf of ``x`` is a JAX tracer (the call is being traced by ``jit``/``vmap``/``grad``)."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))


def check_values(x: Any, bad: Callable[[Any, Any], Any], message: str) -> Any:
    """Return ``x``; raise with ``message`` where ``bad(xp, x)`` has a true entry.

    Args:
      x: the array to check (returned unchanged, as a JAX array when it was traced).
      bad: ``bad(xp, x)`` -> boolean array; ``xp`` is `numpy` for a concrete ``x`` (checked on the host) and
        `jax.numpy` for a traced one, so one predicate serves both.
      message: what is wrong and what to do, in one or two lines.

    Raises:
      ValueError: for a concrete ``x`` with a bad entry (at call time).
      equinox's runtime error: for a traced ``x`` with a bad entry (when the compiled program runs).
    """
    if is_traced(x):
        return eqx.error_if(x, jnp.any(bad(jnp, x)), message)
    if bool(np.any(bad(np, np.asarray(x)))):
        raise ValueError(message)
    return x
