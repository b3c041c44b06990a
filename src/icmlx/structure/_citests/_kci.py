r"""The kernel CI test in its random-feature form (RCIT): KCI's statistic on random Fourier features, batched.

For ``x ⫫ y | S`` the three blocks are mapped to random Fourier features of a Gaussian kernel (width: the median
pairwise distance, on standardised data), $f_x$ (``num_xy`` features), $f_y$, $f_z$ (``num_z`` features of
the joint ``S``). The features of ``x`` and ``y`` are residualised on those of ``S`` by ridge regression,
$r_x = f_x - f_z (C_{zz} + \lambda I)^{-1} C_{zx}$, and the statistic is the squared Frobenius norm of their
cross-covariance,

$$T = n\,\lVert C_{r_x r_y} \rVert_F^2,\qquad C_{r_x r_y} = \tfrac1n \textstyle\sum_i r_{x,i} r_{y,i}^\top .$$

Under independence $T \approx \sum_j \lambda_j \chi^2_1$ with $\lambda_j$ the eigenvalues of the covariance of
the products $r_{x,i} \otimes r_{y,i}$; the p-value is that sum's gamma approximation (matching its mean
$\sum\lambda_j$ and variance $2\sum\lambda_j^2$), as KCI's ``approx=True``. The work per test is
$O(n\,(D_z^2 + D_{xy}^2))$, against the exact KCI's $O(n^3)$ kernel matrices.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaincc

from ._batched import _FunctionTest

__all__: list[str] = []

MEDIAN_SAMPLES = 500  # samples used by the median-distance width (as RCIT and causal-learn's KCI subsample)


def _column_widths(z: np.ndarray) -> np.ndarray:
    """Per column, the median pairwise distance of its first `MEDIAN_SAMPLES` values (1 if 0), on the host."""
    sub = z[:MEDIAN_SAMPLES]
    iu = np.triu_indices(sub.shape[0], 1)
    out = np.array([np.median(np.abs(sub[:, j][:, None] - sub[:, j][None, :])[iu]) for j in range(z.shape[1])])
    return np.where(out > 0, out, 1.0)


def _features(key, v, width, num):
    """Centred random Fourier features ``(n, num)`` of the Gaussian kernel of bandwidth ``width`` on ``v``."""
    kw, kb = jax.random.split(key)
    w = jax.random.normal(kw, (v.shape[1], num), v.dtype) / width
    b = jax.random.uniform(kb, (num,), v.dtype, 0.0, 2.0 * np.pi)
    f = jnp.sqrt(jnp.asarray(2.0 / num, v.dtype)) * jnp.cos(v @ w + b)
    return f - jnp.mean(f, axis=0)


def _kci_rf(inputs, x, y, s, *, num_xy: int, num_z: int, ridge: float):
    """p-value of ``x ⫫ y | S`` (one test; ``vmap``-ed by the caller); ``inputs`` = (standardised data, the
    columns' median distances, the features' key). The joint width of ``S`` is the root sum of squares of its
    columns' widths (the median distance of independent coordinates, approximately)."""
    data, widths, key = inputs
    n = data.shape[0]
    kx, ky, kz = jax.random.split(key, 3)
    fx = _features(kx, data[:, x][:, None], widths[x], num_xy)
    fy = _features(ky, data[:, y][:, None], widths[y], num_xy)
    if s.shape[0] > 0:
        fz = _features(kz, data[:, s], jnp.sqrt(jnp.sum(widths[s] ** 2)), num_z)
        czz = fz.T @ fz / n + ridge * jnp.eye(num_z, dtype=data.dtype)
        chol = jax.scipy.linalg.cho_factor(czz)
        fx = fx - fz @ jax.scipy.linalg.cho_solve(chol, fz.T @ fx / n)
        fy = fy - fz @ jax.scipy.linalg.cho_solve(chol, fz.T @ fy / n)
    cxy = fx.T @ fy / n
    stat = n * jnp.sum(cxy**2)
    prod = (fx[:, :, None] * fy[:, None, :]).reshape(n, -1)
    prod = prod - jnp.mean(prod, axis=0)
    lam = jnp.clip(jnp.linalg.eigvalsh(prod.T @ prod / n), 0.0)
    mean = jnp.sum(lam)
    var = 2.0 * jnp.sum(lam**2)
    tiny = jnp.finfo(data.dtype).tiny
    shape = mean**2 / jnp.maximum(var, tiny)
    scale = var / jnp.maximum(mean, tiny)
    p = gammaincc(jnp.maximum(shape, tiny), stat / jnp.maximum(scale, tiny))
    return jnp.where(mean > 0, p, jnp.ones((), data.dtype))


@functools.lru_cache(maxsize=16)
def _kci_fn(num_xy: int, num_z: int, ridge: float):
    """One function object per setting, so that its compiled programs are reused by every run with it."""
    return functools.partial(_kci_rf, num_xy=num_xy, num_z=num_z, ridge=ridge)


class _KCIBatch(_FunctionTest):
    """`_kci_rf` vmapped over each batch, on the data standardised on the host (float64)."""

    def __init__(self, data: np.ndarray, *, key, num_xy: int, num_z: int, ridge: float, max_batch: int):
        from ..._checks import default_float_dtype

        z = np.asarray(data, np.float64)
        sd = z.std(axis=0)
        z = (z - z.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        super().__init__(_kci_fn(num_xy, num_z, ridge), z.astype(default_float_dtype()), max_batch=max_batch,
                         label="kci")
        self.data = (self.data, jax.device_put(_column_widths(z).astype(default_float_dtype())), key)
        self.num = max(num_xy, num_z)

    def _traceable(self, k: int) -> bool:
        return True

    def _cap(self, plan=None) -> int:
        from ._batched import _pow2_cap

        return _pow2_cap(2**25, self.n * (self.num + 32), self.max_batch)
