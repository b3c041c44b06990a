"""Gaussian CI tests: the correlation matrix and batched Fisher-z partial-correlation tests."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr
from jaxtyping import Array, Float, Int

from icmlx._checks import check_values

from ._ci_tests import CIResult, _check_batch

__all__ = ["correlation_matrix", "fisher_z"]


def correlation_matrix(data: Float[Array, "n d"]) -> Float[Array, "d d"]:
    r"""Pearson correlation matrix of the columns, ``np.corrcoef(data.T)``.

    $$
    R_{jk} = \frac{\sum_i (x_{ij}-\bar x_j)(x_{ik}-\bar x_k)}{\sqrt{\sum_i (x_{ij}-\bar x_j)^2
    \sum_i (x_{ik}-\bar x_k)^2}}
    $$

    Args:
      data: ``(n, d)`` floating data.

    Each column is divided by its largest magnitude before and after centring, so data on any scale (``1e-30``
    to ``1e30`` in float32) give the correlations of the unscaled data instead of overflowing or underflowing.

    Returns:
      ``(d, d)`` correlation matrix in the dtype of ``data`` (integer data: the default float dtype).

    Raises:
      ValueError: ``data`` not ``(n, d)`` with ``n >= 2``; NaN/Inf entries or a constant column (a runtime
        error under ``jit``).
      TypeError: complex data.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import correlation_matrix
      >>> r = correlation_matrix(jnp.array([[0.0, 1.0], [1.0, 3.0], [2.0, 5.0]]))
      >>> print(round(float(r[0, 1]), 3))
      1.0
    """
    shape = np.shape(data)
    if len(shape) != 2:
        raise ValueError(f"data must be (n, d), got shape {shape}")
    if shape[0] < 2:
        raise ValueError(f"a correlation needs at least 2 samples, got n={shape[0]}")
    data = jnp.asarray(data)
    if jnp.issubdtype(data.dtype, jnp.complexfloating):
        raise TypeError(f"correlation_matrix needs real data, got {data.dtype=}")
    if not jnp.issubdtype(data.dtype, jnp.floating):
        data = data.astype(jnp.zeros((), float).dtype)
    data = check_values(data, lambda xp, v: ~xp.isfinite(v), "data has NaN or Inf entries; drop or impute them first")
    data = check_values(data, lambda xp, v: xp.max(v, axis=0) == xp.min(v, axis=0),
                        "data has a constant column (no variation): its correlations are undefined; drop it")
    return stable_correlation(data)


def _scaled(x):
    """``x / max|x|`` per column (columns of zeros left alone): keeps squares inside the float range."""
    m = jnp.max(jnp.abs(x), axis=0, keepdims=True)
    return x / jnp.where(m > 0, m, 1.0).astype(x.dtype)


def stable_correlation(data):
    """The correlation matrix, stable on any scale: scale, centre, scale again, then the cross-products."""
    x = _scaled(data)
    xc = _scaled(x - jnp.mean(x, axis=0, keepdims=True))
    cov = xc.T @ xc
    sd = jnp.sqrt(jnp.diag(cov))
    r = cov / (sd[:, None] * sd[None, :])
    return jnp.where(jnp.eye(r.shape[0], dtype=bool), jnp.ones((), r.dtype), jnp.clip(r, -1.0, 1.0))


@jax.jit
def _fisher_z_kernel(corr, n, x, y, s, k=None):
    """``k``: optional true set size (traced); columns ``>= k`` of ``s`` are padding, replaced by identity
    rows/columns of the correlation submatrix (an uncorrelated unit variable leaves the partial correlation
    unchanged), so several set sizes share one compilation."""
    idx = jnp.concatenate([x[:, None], y[:, None], s], axis=1)  # (b, k+2)
    sub = corr[idx[:, :, None], idx[:, None, :]]  # (b, k+2, k+2)
    if k is None:
        k = s.shape[1]
    else:
        w = s.shape[1] + 2
        pos = jnp.arange(w, dtype=jnp.int32)
        live = pos < k + 2
        eye = jnp.eye(w, dtype=corr.dtype)
        sub = jnp.where(live[:, None] & live[None, :], sub, eye)
    if s.shape[1] == 0:
        r = sub[:, 0, 1]
    else:
        inv = jnp.linalg.inv(sub)
        r = -inv[:, 0, 1] / jnp.sqrt(jnp.abs(inv[:, 0, 0] * inv[:, 1, 1]))
    eps = jnp.finfo(corr.dtype).eps
    r = jnp.where(jnp.abs(r) >= 1.0, (1.0 - eps) * jnp.sign(r), r)
    z = 0.5 * jnp.log((1.0 + r) / (1.0 - r))
    stat = jnp.sqrt(jnp.asarray(n - k - 3).astype(corr.dtype)) * jnp.abs(z)
    p = 2.0 * (1.0 - ndtr(stat))
    return stat, p


def fisher_z(
    corr: Float[Array, "d d"],
    n: int,
    x: Int[Array, " b"],
    y: Int[Array, " b"],
    s: Int[Array, "b k"],
) -> CIResult:
    r"""Fisher-z partial-correlation tests of ``x ⫫ y | S`` for a batch of triples.

    With $P = (R_{VV})^{-1}$ for $V = (x, y, S)$:

    $$
    r = -\frac{P_{01}}{\sqrt{P_{00}P_{11}}},\quad
    T = \sqrt{n-|S|-3}\,|\operatorname{atanh} r|,\quad p = 2(1-\Phi(T)).
    $$

    ``|r| >= 1`` is clamped to ``(1-eps) sign r`` as in causal-learn. Run with ``jax_enable_x64`` for p-values
    that agree with causal-learn to 1e-10.

    Args:
      corr: ``(d, d)`` correlation matrix (see `correlation_matrix`).
      n: sample size.
      x: ``(b,)`` int indices; y: ``(b,)`` int indices; s: ``(b, k)`` conditioning sets.

    Returns:
      `CIResult` (``dof`` is ``-1``).

    Raises:
      ValueError: if the batch shapes disagree, an index is out of range, ``x == y`` or ``S`` holds ``x`` or
        ``y``, ``corr`` is not square or has NaN/Inf entries, or ``n - k - 3 <= 0``.

    References:
      Gao, Wang & Aragam, arXiv:2507.05689; Kalisch & Bühlmann, JMLR 8 (2007).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.structure import correlation_matrix, fisher_z
      >>> data = jax.random.normal(jax.random.key(0), (500, 3))
      >>> res = fisher_z(correlation_matrix(data), 500, jnp.array([0]), jnp.array([1]),
      ...                jnp.array([[2]]))
      >>> bool(res.pvalue[0] > 0.01)
      True
    """
    corr = jnp.asarray(corr)
    if corr.ndim != 2 or corr.shape[0] != corr.shape[1]:
        raise ValueError(f"corr must be a (d, d) correlation matrix, got shape {corr.shape}")
    x, y, s = _check_batch(x, y, s, corr.shape[0])
    corr = check_values(corr, lambda xp, v: ~xp.isfinite(v), "corr has NaN or Inf entries; check the data")
    if n - s.shape[1] - 3 <= 0:
        raise ValueError(f"Fisher-z needs n - |S| - 3 > 0, got {n=} and |S|={s.shape[1]}")
    stat, p = _fisher_z_kernel(corr, jnp.asarray(n, jnp.int32), x, y, s)
    return CIResult(stat, p, jnp.full(x.shape, -1, jnp.int32))
