"""Float64 NumPy references of the unbinned empirical-Bayes local fdr, for the stats tests."""

import numpy as np
import scipy.stats as sps


def storey_pi0(z):
    """Storey's bootstrap π̂₀ (R qvalue's formula) from the two-sided p-values of ``z``."""
    p = 2.0 * sps.norm.sf(np.abs(z))
    lam = np.round(np.arange(0.05, 0.951, 0.05), 2)
    n = p.size
    w = np.array([(p >= v).sum() for v in lam], np.float64)
    curve = w / (n * (1.0 - lam))
    mse = w / (n**2 * (1.0 - lam) ** 2) * (1.0 - w / n) + (curve - np.quantile(curve, 0.1)) ** 2
    return min(curve[mse == mse.min()].min(), 1.0)


def npmle_lfdr(z, grid_size=51, steps=200):
    """π̂₀ φ / f with Storey's π̂₀ and the EM fit of the alternative's weights on a grid, over every test."""
    pi0 = storey_pi0(z)
    grid = np.abs(z).max() * np.linspace(-1.0, 1.0, grid_size)
    lik = sps.norm.pdf(z[:, None] - grid[None, :])
    lik0 = sps.norm.pdf(z)
    w = np.full(grid_size, 1.0 / grid_size)
    for _ in range(steps):
        f = pi0 * lik0 + (1.0 - pi0) * lik @ w
        w = w * (lik / f[:, None]).sum(0)
        w /= w.sum()
    return np.minimum(pi0 * lik0 / (pi0 * lik0 + (1.0 - pi0) * lik @ w), 1.0)
