"""The data of the two-process ``pc`` test, built with NumPy only (the same on every process, whatever its
devices)."""

import numpy as np


def problems() -> dict:
    """``{name: (data, ci_test)}``: a linear-Gaussian chain-and-collider graph (Fisher-z) and its three-level
    discretisation (χ²)."""
    rng = np.random.default_rng(0)
    n, d = 1000, 8
    x = rng.normal(size=(n, d))
    for j, parents in {2: (0, 1), 3: (2,), 4: (3,), 5: (3, 1), 7: (6, 5)}.items():
        x[:, j] += sum(0.8 * x[:, p] for p in parents)
    codes = (x > -0.5).astype(np.int64) + (x > 0.5)
    return {"fisherz": (x, "fisherz"), "chisq": (codes, "chisq")}
