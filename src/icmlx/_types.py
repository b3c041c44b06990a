"""Shared jaxtyping aliases used across icmlx signatures."""

from typing import Any

import jax
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int, Key, PyTree, Real, Shaped

__all__ = [
    "Array",
    "ArrayLike",
    "Float",
    "Int",
    "Key",
    "PRNGKey",
    "PyTree",
    "Real",
    "RealScalarLike",
    "IntScalarLike",
    "Shaped",
    "Schedule",
]

#: A JAX PRNG key, either a new-style typed key or a legacy ``uint32[2]`` key.
PRNGKey = Key[Array, ""] | jax.Array
#: A real scalar given as a Python number, NumPy scalar or 0-d array.
RealScalarLike = float | int | np.floating | np.integer | Real[ArrayLike, ""]
#: An integer scalar (a step counter, for instance).
IntScalarLike = int | np.integer | Int[ArrayLike, ""]
#: A learning-rate schedule: ``count -> value``.
Schedule = Any
