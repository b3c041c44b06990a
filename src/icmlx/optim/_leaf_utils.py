"""Per-leaf helpers shared by DASH and SOAP: dtypes, finiteness, and host-built zero state."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array


def _factor_dtype(leaves: list[Array]):
    if any(jnp.dtype(x.dtype) == jnp.float64 for x in leaves):
        return jnp.float64
    return jnp.float32


def _check_leaf_dtypes(fn_name: str, leaves, what: str) -> None:
    for x in leaves:
        dt = jnp.result_type(x)
        if not jnp.issubdtype(dt, jnp.floating):
            raise TypeError(
                f"{fn_name}: every leaf of {what} must have a real floating dtype (float32, float64, bfloat16, "
                f"float16), got dtype={dt} for a leaf of shape {jnp.shape(x)}"
            )


def _on_host_ok(x) -> bool:
    """Whether ``jnp.zeros_like(x)`` can be built on the host: a concrete, strongly typed, addressable array."""
    return (isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer) and not x.weak_type
            and x.is_fully_addressable)


def _host_zeros_like(x: Array) -> Array:
    """``jnp.zeros_like(x)`` made in NumPy and transferred: no compiled program.

    Same dtype, sharding and commitment as ``jnp.zeros_like`` (an uncommitted input gives an uncommitted
    array, so the first update's arguments carry the same placement as every later one's).
    """
    z = np.zeros(x.shape, x.dtype)
    return jax.device_put(z, x.sharding) if x.committed else jax.device_put(z)


def _all_finite(leaves) -> Array:
    finite = jnp.ones([], bool)
    for g in leaves:
        finite = finite & jnp.all(jnp.isfinite(g))
    return finite


def _guard_nonfinite(out, new_state, state, finite, nonfinite: str, where: str):
    """The ``nonfinite`` policy of a preconditioned step, applied once the step is computed.

    ``finite`` says whether the gradient and the new statistics are finite: a finite gradient can still overflow
    them (``G G^T`` or ``G^2`` past the float max for entries past ~1e19 in float32), and such a step counts as a
    non-finite gradient. ``"raise"``: a runtime error naming ``where``; ``"skip"``: a zero update and the old state,
    so the state stays finite.
    """
    if nonfinite == "raise":
        out = jax.tree.map(lambda o: eqx.error_if(
            o, ~finite, f"{where}: the gradient overflowed the second-moment or Kronecker-factor statistics "
            "(entries past ~sqrt(float max)); scale the loss down or clip the gradient."), out)
        return out, new_state
    new_state = lax.cond(finite, lambda: new_state, lambda: state)
    return jax.tree.map(lambda o: jnp.where(finite, o, jnp.zeros_like(o)), out), new_state
