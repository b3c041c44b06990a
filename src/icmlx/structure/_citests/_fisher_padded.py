"""PC's Fisher-z tester in padded shapes: the correlation of a zero-padded sample, and p-values of conditioning
sets padded to one width, so that one compilation serves every ``n`` in a bucket and every level up to the width.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from ..._checks import default_float_dtype
from ._batched import _BatchedTest, _pad_dim
from ._contingency import pad_samples
from ._gaussian import _fisher_z_kernel, _scaled

__all__: list[str] = []

# The correlation matrix is one float64 product on the host up to this many multiply-adds (n * d_pad^2), so the
# programs that take it do not depend on n; larger data use the device, on the sample axis padded to a bucket.
HOST_CORRELATION_FLOPS = 2**30


def correlation_matrix(data, d_pad: int, dtype) -> jax.Array:
    """The ``(d_pad, d_pad)`` correlation matrix of the concrete ``(n, d)`` sample (identity past ``d``), on the
    device in ``dtype``: standardised in float64 on the host (correlations are scale-free, so any scale fits in
    float32), then one host product, or `_padded_correlation` on a bucketed sample axis for large data.
    Either way no compiled program depends on ``n`` exactly. A constant column gets an identity row and column
    (uncorrelated with everything: its tests give ``p = 1``, and conditioning on it changes nothing)."""
    z = np.asarray(data, np.float64)
    n, d = z.shape
    const = np.all(z == z[:1], axis=0)
    z = np.where(const, 0.0, z)
    m = np.abs(z).max(axis=0)
    z = z / np.where(m > 0, m, 1.0)
    z = z - z.mean(axis=0)
    sd = z.std(axis=0)
    z = z / np.where(sd > 0, sd, 1.0)
    if n * d_pad * d_pad <= HOST_CORRELATION_FLOPS:
        corr = np.eye(d_pad)
        c = z.T @ z
        sd = np.sqrt(np.diag(c))
        live = sd > 0
        sd = np.where(live, sd, 1.0)
        corr[:d, :d] = np.where(live[:, None] & live[None, :], c / (sd[:, None] * sd[None, :]), np.eye(d))
        return jax.device_put(corr.astype(dtype))
    xp = np.zeros((pad_samples(n, d_pad), d_pad), dtype)
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
    live = (jnp.arange(dp, dtype=jnp.int32) < d) & (jnp.diag(cov) > 0)  # constant columns: identity rows
    sd = jnp.where(live, jnp.sqrt(jnp.diag(cov)), 1.0)
    r = cov / (sd[:, None] * sd[None, :])
    return jnp.where(live[:, None] & live[None, :], r, jnp.eye(dp, dtype=x.dtype))


@jax.jit
def _fisher_z_pvalues(corr, n, x, y, s, k):
    """PC's Fisher-z p-values: sets padded to the width of ``s`` (``k`` = true size, traced); ``k = 0`` takes
    the plain correlation (the unconditional path of `_fisher_z_kernel`), so every level up to the width
    shares one compilation."""
    p0 = _fisher_z_kernel(corr, n, x, y, s[:, :0])[1]
    pk = _fisher_z_kernel(corr, n, x, y, s, k)[1]
    return jnp.where(k == 0, p0, pk)


@jax.jit
def _fisher_z_pvalues_grouped(corr, n, x, y, s, k, group):
    """`_fisher_z_pvalues` for data with duplicated columns (``group[j]``: the first column equal to
    column ``j``). A set member that duplicates an earlier one adds nothing and is dropped (the correlation
    submatrix would be singular); a set that holds a duplicate of ``x`` or ``y`` determines it, so the residual
    of ``x`` or ``y`` is zero and the test says independent (``p = 1``), as a chi-square test whose strata fix
    ``x`` has no degrees of freedom. ``n - |S| - 3`` counts the members kept."""
    w = s.shape[1]
    pos = jnp.arange(w, dtype=jnp.int32)
    gs = group[s]
    earlier = (gs[:, :, None] == gs[:, None, :]) & (pos[None, None, :] < pos[None, :, None])
    keep = (pos < k)[None, :] & ~jnp.any(earlier & (pos < k)[None, None, :], axis=2)
    determined = jnp.any(keep & ((gs == group[x][:, None]) | (gs == group[y][:, None])), axis=1)
    idx = jnp.concatenate([x[:, None], y[:, None], s], axis=1)
    sub = corr[idx[:, :, None], idx[:, None, :]]
    live = jnp.concatenate([jnp.ones((x.shape[0], 2), bool), keep], axis=1)
    sub = jnp.where(live[:, :, None] & live[:, None, :], sub, jnp.eye(w + 2, dtype=corr.dtype))
    inv = jnp.linalg.inv(sub)
    r = -inv[:, 0, 1] / jnp.sqrt(jnp.abs(inv[:, 0, 0] * inv[:, 1, 1]))
    eps = jnp.finfo(corr.dtype).eps
    r = jnp.where(jnp.abs(r) >= 1.0, (1.0 - eps) * jnp.sign(r), r)
    z = 0.5 * jnp.log((1.0 + r) / (1.0 - r))
    kk = jnp.sum(keep, axis=1, dtype=jnp.int32)
    stat = jnp.sqrt((n - kk - 3).astype(corr.dtype)) * jnp.abs(z)
    p = 2.0 * (1.0 - ndtr(stat))
    return jnp.where(determined, jnp.ones((), corr.dtype), p)


class _FisherZBatch(_BatchedTest):
    """PC's Fisher-z tests on one sample: its correlation matrix (padded to a multiple of 16 variables) and the
    p-value kernel, conditioning sets padded to a multiple of 4 with the true size traced."""

    pad_sets = True
    lo = 256
    fixed_batch = True

    def __init__(self, data: np.ndarray, mesh=None, max_batch: int = 8192, group: np.ndarray | None = None):
        super().__init__(mesh, max_batch)
        n, d = data.shape
        self.n = np.int32(n)
        dp = _pad_dim(d)
        self.corr = correlation_matrix(data, dp, default_float_dtype())
        self.group = None
        if group is not None and np.any(group != np.arange(d)):
            g = np.arange(dp, dtype=np.int32)
            g[:d] = group
            self.group = jax.device_put(g)

    @classmethod
    def from_blocks(cls, arrays, mesh, max_batch: int, groups) -> "_FisherZBatch":
        """The tests of several ``(n, d)`` samples side by side (sample ``b``'s variable ``j`` is column
        ``b d + j``): each sample's correlation matrix, as `correlation_matrix` computes it alone, on a diagonal
        block (zero off the blocks, which no test reads), and the duplicate groups shifted to match."""
        n, d = arrays[0].shape
        dp = _pad_dim(d)
        big = np.eye(_pad_dim(len(arrays) * d), dtype=default_float_dtype())
        group = np.arange(big.shape[0], dtype=np.int32)
        for b, (a, g) in enumerate(zip(arrays, groups)):
            big[b * d:(b + 1) * d, b * d:(b + 1) * d] = np.asarray(correlation_matrix(a, dp, big.dtype))[:d, :d]
            group[b * d:(b + 1) * d] = np.asarray(g) + b * d
        out = cls.__new__(cls)
        _BatchedTest.__init__(out, mesh, max_batch)
        out.n = np.int32(n)
        out.corr = jax.device_put(big)
        out.group = jax.device_put(group) if np.any(group != np.arange(group.shape[0])) else None
        return out

    def _kernel(self, xs, ys, ss, kk, plan, m):
        kk = np.int32(0) if kk is None else kk
        if self.group is not None:
            return _fisher_z_pvalues_grouped(self.corr, self.n, xs, ys, ss, kk, self.group)
        return _fisher_z_pvalues(self.corr, self.n, xs, ys, ss, kk)
