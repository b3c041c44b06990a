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
#: Values per chunk of `chunked_sum`: its working memory is a few arrays of this size, whatever the row's length.
CHUNK = 2**16


def chunked_sum(fn, x, init, combine=None):
    """``init + sum_c fn(x_c)`` over the chunks ``x_c`` of the 1-D ``x`` (`CHUNK` values each, then the rest).

    ``fn`` maps a chunk to a pytree shaped like ``init`` (histograms, counts, sums), so a pass that scatters into
    bins or forms per-test values needs the memory of one chunk, not of the row: a ``lax.scan`` over the chunks
    (each read in place by ``dynamic_slice``), then the last, shorter chunk. ``combine(total, part)`` replaces the
    sum (a maximum, say).
    """
    combine = combine or (lambda a, b: jax.tree.map(jnp.add, a, b))
    n = x.shape[-1]
    whole = n // CHUNK
    total = init
    if whole:
        def body(acc, i):
            return combine(acc, fn(jax.lax.dynamic_slice(x, (i * CHUNK,), (CHUNK,)))), None

        total, _ = jax.lax.scan(body, total, jnp.arange(whole, dtype=jnp.int32))
    if n % CHUNK:
        total = combine(total, fn(x[whole * CHUNK:]))
    return total


def _square_bins_row(z, num_bins):
    dt = z.dtype
    top = jnp.max(jnp.abs(z))
    scale = jnp.where(top > 0, top, 1.0)

    def add(c):
        k = jnp.clip(jnp.floor(jnp.abs(c) * (num_bins / scale)).astype(jnp.int32), 0, num_bins - 1)
        return jnp.zeros(num_bins, jnp.int32).at[k].add(1), jnp.zeros(num_bins, dt).at[k].add(c * c)

    # counts in int32: a float32 count stops growing at 2^24
    counts, squares = chunked_sum(add, z, (jnp.zeros(num_bins, jnp.int32), jnp.zeros(num_bins, dt)))
    counts = counts.astype(dt)
    centres = scale * (jnp.arange(num_bins, dtype=dt) + 0.5) / num_bins
    return jnp.where(counts > 0, squares / jnp.maximum(counts, 1.0), centres * centres), counts


def square_bins(z, num_bins=NUM_BINS):
    """``(mean_squares, counts)``, each ``(*batch, num_bins)``: the binned summary of the rows of ``z``."""
    n = z.shape[-1]
    m, c = jax.vmap(lambda r: _square_bins_row(r, num_bins))(z.reshape(-1, n))
    return m.reshape(*z.shape[:-1], num_bins), c.reshape(*z.shape[:-1], num_bins)
