"""The record of a batch of conditional-independence (CI) tests, and the batch contract every tester shares.

Every tester takes index arrays ``x: (b,)``, ``y: (b,)`` and ``s: (b, k)`` (one conditioning-set size ``k`` per
call, so a PC level is one batch) and returns a :class:`CIResult` with one statistic and one p-value per test. The
testers live in :mod:`._gaussian` (Fisher-z), :mod:`._discrete` (chi-square, G-square, Bernoulli),
:mod:`._nonparametric` (binned U-statistic) and :mod:`._dseparation` (the d-separation oracle).
"""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

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


def _float_dtype():
    return jnp.zeros((), dtype=float).dtype


def _check_batch(x, y, s):
    if x.ndim != 1 or y.ndim != 1 or s.ndim != 2:
        raise ValueError(f"x, y must be (b,) and s (b, k); got {x.shape=}, {y.shape=}, {s.shape=}")
    if not (x.shape[0] == y.shape[0] == s.shape[0]):
        raise ValueError(f"batch sizes differ: {x.shape=}, {y.shape=}, {s.shape=}")
