r"""Binned summaries of z-scores for the empirical-Bayes fits whose terms depend on $z^2$ only.

`square_bins` replaces a row of $n$ tests by `NUM_BINS` equal bins of $|z|$ over $[0,\max|z|]$, each carrying its
count and the mean of $z^2$ over its tests: one pass over the tests, after which a sum $\sum_i h(z_i^2)$ (a
log-likelihood, an E-step's totals) costs $O(K)$. With $\bar s_b$ the bin's mean square, the error of
$\sum_{i\in b}h(z_i^2)\approx c_b\,h(\bar s_b)$ is $\tfrac12\sum_{i\in b}h''(\xi_i)(z_i^2-\bar s_b)^2$: the
first-order term cancels at the mean, and $|z_i^2-\bar s_b|\le 2\max|z|\cdot h_b$ for bins of width
$h_b=\max|z|/K$.
"""

import jax
import jax.numpy as jnp

#: Bins of |z| over [0, max|z|] in `square_bins`.
NUM_BINS = 512


def _square_bins_row(z, num_bins):
    dt = z.dtype
    a = jnp.abs(z)
    top = jnp.max(a)
    scale = jnp.where(top > 0, top, 1.0)
    k = jnp.clip(jnp.floor(a * (num_bins / scale)).astype(jnp.int32), 0, num_bins - 1)
    counts = jnp.zeros(num_bins, dt).at[k].add(1.0)
    squares = jnp.zeros(num_bins, dt).at[k].add(z * z)
    centres = scale * (jnp.arange(num_bins, dtype=dt) + 0.5) / num_bins
    return jnp.where(counts > 0, squares / jnp.maximum(counts, 1.0), centres * centres), counts


def square_bins(z, num_bins=NUM_BINS):
    """``(mean_squares, counts)``, each ``(*batch, num_bins)``: the binned summary of the rows of ``z``."""
    n = z.shape[-1]
    m, c = jax.vmap(lambda r: _square_bins_row(r, num_bins))(z.reshape(-1, n))
    return m.reshape(*z.shape[:-1], num_bins), c.reshape(*z.shape[:-1], num_bins)
