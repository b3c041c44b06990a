"""PC's Fisher-z tester in padded shapes: the correlation of a zero-padded sample, and p-values of conditioning
sets padded to one width, so that one compilation serves every ``n`` in a bucket and every level up to the width.
"""

import jax
import jax.numpy as jnp

from ._gaussian import _fisher_z_kernel, _scaled

__all__: list[str] = []


@jax.jit
def _padded_correlation(x, n, d):
    """Correlation matrix of the first ``n`` rows and ``d`` columns (both traced) of the zero-padded ``x``
    ``(n_pad, d_pad)``, with identity rows/columns past ``d``: one compilation per padded shape (a loop over row
    blocks would follow ``n`` exactly but takes several times longer to compile)."""
    n_pad, dp = x.shape
    rows = (jnp.arange(n_pad, dtype=jnp.int32) < n)[:, None]
    x = _scaled(x)  # per-column max-abs scaling before and after centring: no overflow/underflow on any scale
    mean = jnp.sum(x, axis=0) / n.astype(x.dtype)
    xc = _scaled(jnp.where(rows, x - mean, 0.0))
    cov = xc.T @ xc
    live = jnp.arange(dp, dtype=jnp.int32) < d
    sd = jnp.where(live, jnp.sqrt(jnp.diag(cov)), 1.0)
    r = cov / (sd[:, None] * sd[None, :])
    return jnp.where(live[:, None] & live[None, :], r, jnp.eye(dp, dtype=x.dtype))


@jax.jit
def _fisher_z_pvalues(corr, n, x, y, s, k):
    """PC's Fisher-z p-values: sets padded to the width of ``s`` (``k`` = true size, traced); ``k = 0`` takes
    the plain correlation (the unconditional path of :func:`_fisher_z_kernel`), so every level up to the width
    shares one compilation."""
    p0 = _fisher_z_kernel(corr, n, x, y, s[:, :0])[1]
    pk = _fisher_z_kernel(corr, n, x, y, s, k)[1]
    return jnp.where(k == 0, p0, pk)
