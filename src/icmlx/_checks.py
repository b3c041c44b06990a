"""Value checks at the public boundary that stay out of compiled programs when the input is concrete.

A check written as `equinox.error_if` puts a host callback into the compiled program, and JAX does not store
programs with host callbacks in its persistent compilation cache, so every new process compiles them again. It also
reports a failure as a long runtime error. `check_values` therefore checks a concrete input (a NumPy array,
a Python number, a JAX array outside ``jit``) on the host with NumPy and raises a plain ``ValueError`` carrying
the message; only a traced input (inside the user's ``jit``/``vmap``) gets `equinox.error_if`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["check_values", "is_traced"]


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
