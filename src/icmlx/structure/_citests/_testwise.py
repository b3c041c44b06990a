"""Fisher-z tests under test-wise deletion (``pc(..., nan_policy="testwise")``): each test uses the rows complete
in its own variables ``x, y, S``, as causal-learn's MV-PC and Tetrad's test-wise deletion do."""

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from ._batched import _FunctionTest

__all__: list[str] = []


def _testwise_fisher_z(data, x, y, s):
    r"""Fisher-z p-value of ``x ⫫ y | S`` on the rows of ``data`` (NaN = missing) complete in ``x, y, S``.

    With $m$ such rows and $r$ the partial correlation of their sample,
    $p = 2(1 - \Phi(\sqrt{m - |S| - 3}\,|\operatorname{atanh} r|))$. Fails soft: too few complete rows
    ($m - |S| - 3 \le 0$) or a variable constant on them gives ``p = 1`` (no evidence of dependence).
    """
    k = s.shape[0]
    idx = jnp.concatenate([jnp.stack([x, y]), s])
    sub = data[:, idx]  # (n, k + 2)
    ok = jnp.all(jnp.isfinite(sub), axis=1)
    m = jnp.sum(ok)
    w = ok.astype(sub.dtype)[:, None]
    z = jnp.where(ok[:, None], sub, 0.0)
    mean = jnp.sum(z, axis=0) / jnp.maximum(m, 1).astype(sub.dtype)
    zc = (z - mean) * w
    cov = zc.T @ zc
    var = jnp.diag(cov)
    live = var > 0
    sd = jnp.sqrt(jnp.where(live, var, 1.0))
    corr = jnp.where(live[:, None] & live[None, :], cov / (sd[:, None] * sd[None, :]), jnp.eye(k + 2, dtype=sub.dtype))
    if k == 0:
        r = corr[0, 1]
    else:
        inv = jnp.linalg.inv(corr)
        r = -inv[0, 1] / jnp.sqrt(jnp.abs(inv[0, 0] * inv[1, 1]))
    eps = jnp.finfo(sub.dtype).eps
    r = jnp.where(jnp.abs(r) >= 1.0, (1.0 - eps) * jnp.sign(r), r)
    dof = m - k - 3
    stat = jnp.sqrt(jnp.maximum(dof, 1).astype(sub.dtype)) * jnp.abs(0.5 * jnp.log((1.0 + r) / (1.0 - r)))
    p = 2.0 * (1.0 - ndtr(stat))
    return jnp.where((dof > 0) & live[0] & live[1], p, jnp.ones((), sub.dtype))


class _TestwiseFisherZ(_FunctionTest):
    """Fisher-z with test-wise deletion: `_testwise_fisher_z` vmapped over each batch (columns are
    standardised on their observed cells first, in float64 on the host, so any scale fits the float dtype)."""

    def __init__(self, data: np.ndarray, max_batch: int = 8192):
        from ..._checks import default_float_dtype

        z = np.asarray(data, np.float64)
        z = (z - np.nanmean(z, axis=0)) / np.where(np.nanstd(z, axis=0) > 0, np.nanstd(z, axis=0), 1.0)
        super().__init__(_testwise_fisher_z, z.astype(default_float_dtype()), max_batch=max_batch, label="fisherz")
        self.traced_k = {}

    def _traceable(self, k: int) -> bool:
        return True

