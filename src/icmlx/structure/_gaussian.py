"""Gaussian CI tests: the correlation matrix and batched Fisher-z partial-correlation tests."""

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr
from jaxtyping import Array, Float, Int

from ._ci_tests import CIResult, _check_batch

__all__ = ["correlation_matrix", "fisher_z"]


def correlation_matrix(data: Float[Array, "n d"]) -> Float[Array, "d d"]:
    r"""Pearson correlation matrix of the columns, ``np.corrcoef(data.T)``.

    .. math:: R_{jk} = \frac{\sum_i (x_{ij}-\bar x_j)(x_{ik}-\bar x_k)}{\sqrt{\sum_i (x_{ij}-\bar x_j)^2
       \sum_i (x_{ik}-\bar x_k)^2}}

    Args:
      data: ``(n, d)`` floating data.

    Returns:
      ``(d, d)`` correlation matrix in the dtype of ``data``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import correlation_matrix
      >>> r = correlation_matrix(jnp.array([[0.0, 1.0], [1.0, 3.0], [2.0, 5.0]]))
      >>> print(round(float(r[0, 1]), 3))
      1.0
    """
    xc = data - jnp.mean(data, axis=0, keepdims=True)
    cov = xc.T @ xc
    sd = jnp.sqrt(jnp.diag(cov))
    return cov / (sd[:, None] * sd[None, :])


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

    With :math:`P = (R_{VV})^{-1}` for :math:`V = (x, y, S)`:

    .. math:: r = -\frac{P_{01}}{\sqrt{P_{00}P_{11}}},\quad
       T = \sqrt{n-|S|-3}\,|\operatorname{atanh} r|,\quad p = 2(1-\Phi(T)).

    ``|r| >= 1`` is clamped to ``(1-eps) sign r`` as in causal-learn. Run with ``jax_enable_x64`` for p-values
    that agree with causal-learn to 1e-10.

    Args:
      corr: ``(d, d)`` correlation matrix (see :func:`correlation_matrix`).
      n: sample size.
      x: ``(b,)`` int indices; y: ``(b,)`` int indices; s: ``(b, k)`` conditioning sets.

    Returns:
      :class:`CIResult` (``dof`` is ``-1``).

    Raises:
      ValueError: if the batch shapes disagree or ``n - k - 3 <= 0``.

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
    _check_batch(x, y, s)
    if n - s.shape[1] - 3 <= 0:
        raise ValueError(f"Fisher-z needs n - |S| - 3 > 0, got {n=} and |S|={s.shape[1]}")
    stat, p = _fisher_z_kernel(corr, jnp.asarray(n, jnp.int32), x, y, s)
    return CIResult(stat, p, jnp.full(x.shape, -1, jnp.int32))
