"""The record of a batch of conditional-independence (CI) tests, and the batch contract every tester shares.

Every tester takes index arrays ``x: (b,)``, ``y: (b,)`` and ``s: (b, k)`` (one conditioning-set size ``k`` per
call, so a PC level is one batch) and returns a `CIResult` with one statistic and one p-value per test. The
testers live in `._gaussian` (Fisher-z), `._discrete` (chi-square, G-square, Bernoulli),
`._nonparametric` (binned U-statistic) and `._dseparation` (the d-separation oracle).
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from icmlx._checks import is_traced

__all__ = ["CIResult"]


class CIResult(eqx.Module):
    """Statistics, p-values and degrees of freedom of a batch of CI tests.

    Attributes:
      statistic: ``(b,)`` test statistic (Fisher-z: ``sqrt(n-|S|-3)|atanh r|``; chi-square: X² or G²).
      pvalue: ``(b,)`` p-value; "independent" means ``pvalue > alpha`` (causal-learn's rule).
      dof: ``(b,)`` degrees of freedom (integer; ``-1`` where the notion does not apply).
    """

    statistic: Float[Array, " b"]
    pvalue: Float[Array, " b"]
    dof: Int[Array, " b"]


def _check_batch(x, y, s, d: int):
    """The batch contract: integer ``x, y: (b,)``, ``s: (b, k)``, indices in ``0..d-1``, ``x != y`` and ``S``
    holding neither. Returns ``(x, y, s)`` (``x`` carries an ``error_if`` when the indices are traced)."""
    if np.ndim(x) != 1 or np.ndim(y) != 1 or np.ndim(s) != 2:
        raise ValueError(f"x, y must be (b,) and s (b, k); got shapes x {np.shape(x)}, y {np.shape(y)}, "
                         f"s {np.shape(s)}")
    if not (np.shape(x)[0] == np.shape(y)[0] == np.shape(s)[0]):
        raise ValueError(f"batch sizes differ: x {np.shape(x)}, y {np.shape(y)}, s {np.shape(s)}")
    for name, v in (("x", x), ("y", y), ("s", s)):
        dt = jnp.asarray(v).dtype if not hasattr(v, "dtype") else v.dtype
        if not jnp.issubdtype(dt, jnp.integer):
            raise TypeError(f"{name} must hold integer variable indices, got dtype {dt}")
    rule = f"x, y and s must be variable indices in 0..{d - 1}, with x != y and s containing neither x nor y"
    if is_traced((x, y, s)):
        x, y, s = jnp.asarray(x), jnp.asarray(y), jnp.asarray(s)
        yc, sc = y.astype(x.dtype), s.astype(x.dtype)  # indices may mix int32 and int64 (x64)
        idx = jnp.concatenate([x[:, None], yc[:, None], sc], axis=1)
        bad = jnp.any((idx < 0) | (idx >= d)) | jnp.any(x == yc)
        bad = bad | jnp.any(sc == x[:, None]) | jnp.any(sc == yc[:, None])
        return eqx.error_if(x, bad, rule), y, s
    xn, yn, sn = (np.asarray(v) for v in (x, y, s))
    idx = np.concatenate([xn[:, None], yn[:, None], sn], axis=1)
    out = (idx < 0) | (idx >= d)
    if np.any(out):
        raise ValueError(f"index out of range: {rule} (got values {sorted(set(idx[out].tolist()))[:5]})")
    if np.any(xn == yn):
        raise ValueError(f"x == y in test {int(np.flatnonzero(xn == yn)[0])}: {rule}")
    hit = np.any(sn == xn[:, None], axis=1) | np.any(sn == yn[:, None], axis=1)
    if hit.any():
        raise ValueError(f"the conditioning set s contains x or y in test {int(np.flatnonzero(hit)[0])}: {rule}")
    return jnp.asarray(x), jnp.asarray(y), jnp.asarray(s)
