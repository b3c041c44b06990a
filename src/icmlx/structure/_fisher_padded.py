"""PC's Fisher-z tester in padded shapes: the correlation of a zero-padded sample, and p-values of conditioning
sets padded to one width, so that one compilation serves every ``n`` in a bucket and every level up to the width.
"""

import jax
import jax.numpy as jnp
import numpy as np

from ._contingency import _pad_samples
from ._gaussian import _fisher_z_kernel, _scaled

__all__: list[str] = []

# The correlation matrix is one float64 product on the host up to this many multiply-adds (n * d_pad^2), so the
# programs that take it do not depend on n; larger data use the device, on the sample axis padded to a bucket.
HOST_CORRELATION_FLOPS = 2**30


def correlation_matrix(data, d_pad: int, dtype) -> jax.Array:
    """The ``(d_pad, d_pad)`` correlation matrix of the concrete ``(n, d)`` sample (identity past ``d``), on the
    device in ``dtype``: standardised in float64 on the host (correlations are scale-free, so any scale fits in
    float32), then one host product, or :func:`_padded_correlation` on a bucketed sample axis for large data.
    Either way no compiled program depends on ``n`` exactly."""
    z = np.asarray(data, np.float64)
    n, d = z.shape
    z = z / np.abs(z).max(axis=0)
    z = z - z.mean(axis=0)
    z = z / z.std(axis=0)
    if n * d_pad * d_pad <= HOST_CORRELATION_FLOPS:
        corr = np.eye(d_pad)
        c = z.T @ z
        sd = np.sqrt(np.diag(c))
        corr[:d, :d] = c / (sd[:, None] * sd[None, :])
        return jax.device_put(corr.astype(dtype))
    xp = np.zeros((_pad_samples(n, d_pad), d_pad), dtype)
    xp[:n, :d] = z
    return _padded_correlation(jax.device_put(xp), np.int32(n), np.int32(d))


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
