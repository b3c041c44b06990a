r"""A CI test for tables that mix categorical and continuous columns: the degenerate-Gaussian likelihood-ratio test.

Every categorical variable with ``K`` categories is embedded as ``K - 1`` indicator columns (the first category
is the reference), every continuous one as itself; the test of ``x ⫫ y | S`` is the Gaussian likelihood-ratio
test that the blocks of ``x`` and ``y`` are conditionally uncorrelated given the block of ``S``. With ``L(A)`` the
log-determinant of the embedded covariance restricted to the blocks of ``A``,

$$G = n\,[L(x \cup S) + L(y \cup S) - L(x \cup y \cup S) - L(S)] \sim \chi^2_{p_x p_y},$$

``p_x``, ``p_y`` the widths of the two blocks. For a continuous ``x`` this is the F-free form of the regression
LRT of ``x`` on the indicators and values of ``y`` and ``S`` (a conditional-Gaussian child with category-specific
means); for two continuous variables it is the Fisher-z test's likelihood-ratio twin.
"""

import jax
import jax.numpy as jnp
import numpy as np

from ..._checks import default_float_dtype
from ._batched import _BatchedTest, _pad_dim
from ._chi2_tail import chi2_sf_host

__all__: list[str] = []

MAX_CATEGORIES = 64


def _is_categorical_column(col: np.ndarray) -> bool:
    """Text, bool, pandas-categorical (object) cells: categorical; numbers: continuous."""
    if col.dtype.kind in "bUS":
        return True
    if col.dtype.kind != "O":
        return False
    return any(isinstance(v, str | bool | np.bool_) for v in col.tolist())


def _embed(arr: np.ndarray, names) -> tuple[np.ndarray, int, np.ndarray]:
    """``(E, w, width)``: the standardised embedding ``(n, d * w)`` (variable ``j`` owns columns ``j w ..
    j w + w - 1``, unused ones zero), the block width ``w`` and each variable's live width."""
    from .._inputs import column_codes

    n, d = arr.shape
    cat = [_is_categorical_column(arr[:, j]) for j in range(d)]
    codes = {j: column_codes(arr[:, j], names[j]) for j in range(d) if cat[j]}
    many = [names[j] for j, c in codes.items() if c.max() + 1 > MAX_CATEGORIES]
    if many:
        raise ValueError(f"categorical columns {many} have more than {MAX_CATEGORIES} categories; merge rare ones")
    w = max([1] + [int(c.max()) for c in codes.values()])
    emb = np.zeros((n, d * w))
    width = np.ones(d, np.int64)
    for j in range(d):
        if cat[j]:
            k = int(codes[j].max()) + 1
            emb[:, j * w: j * w + k - 1] = codes[j][:, None] == np.arange(1, k)[None, :]
            width[j] = max(k - 1, 1)
        else:
            emb[:, j * w] = arr[:, j].astype(np.float64)
    return emb, w, width


class _DegenerateGaussianBatch(_BatchedTest):
    """The embedded covariance (padded to identity on dead columns) and the batched log-determinant statistic;
    statistics come back to the host, where the χ² tail compiles nothing."""

    pad_sets = True
    lo = 64

    def __init__(self, arr: np.ndarray, names, max_batch: int = 8192):
        super().__init__(None, max_batch)
        emb, w, width = _embed(arr, names)
        n, dw = emb.shape
        emb = emb - emb.mean(axis=0)
        sd = emb.std(axis=0)
        live = sd > 0
        emb = emb / np.where(live, sd, 1.0)
        cov = emb.T @ emb / n
        cov = np.where(live[:, None] & live[None, :], cov, np.eye(dw))
        dp = _pad_dim(arr.shape[1])
        full = np.eye(dp * w)
        full[:dw, :dw] = cov
        live_p = np.zeros(dp * w, bool)
        live_p[:dw] = live
        self.cov = jax.device_put(full.astype(default_float_dtype()))
        self.live = jax.device_put(live_p)
        self.n = n
        self.w = w
        self.per_test = ((4 + 2) * w) ** 2 * 4

    def _kernel(self, xs, ys, ss, kk, plan, m):
        return _dg_stat(self.cov, self.live, xs, ys, ss, kk, np.asarray(self.n, default_float_dtype()), w=self.w)

    def pvalues(self, x, y, s) -> np.ndarray:
        stat = np.concatenate([np.asarray(st)[:m] for (st, _), m in self._dispatch(x, y, s)])
        dof = np.concatenate([np.asarray(df)[:m] for (_, df), m in self._dispatch(x, y, s)])
        return np.where(dof == 0, 1.0, chi2_sf_host(np.maximum(stat, 0.0).astype(np.float64), np.maximum(dof, 1)))


def _dg_stat_impl(cov, live, x, y, s, k, n, *, w):
    """Statistic and dof of one batch (sets padded to the width of ``s``; ``k`` the true size, traced)."""
    b, kw = s.shape
    blocks = jnp.concatenate([x[:, None], y[:, None], s], axis=1)  # (b, kw + 2)
    cols = (blocks[:, :, None] * w + jnp.arange(w, dtype=blocks.dtype)).reshape(b, -1)  # (b, (kw + 2) w)
    in_set = jnp.broadcast_to(jnp.arange(kw, dtype=jnp.int32)[None, :] < k, (b, kw))
    member = jnp.concatenate([jnp.ones((b, 2), bool), in_set], axis=1)
    use = jnp.repeat(member, w, axis=1) & live[cols]
    sub = cov[cols[:, :, None], cols[:, None, :]]
    role = jnp.repeat(jnp.arange(kw + 2, dtype=jnp.int32), w)  # block index per column (0: x, 1: y, >= 2: S)
    is_x = (role == 0)[None, :] & use
    is_y = (role == 1)[None, :] & use
    is_s = (role >= 2)[None, :] & use
    eye = jnp.eye(sub.shape[1], dtype=sub.dtype)

    def logdet(mask):
        m2 = mask[:, :, None] & mask[:, None, :]
        return jnp.linalg.slogdet(jnp.where(m2, sub, eye))[1]

    stat = n * (logdet(is_x | is_s) + logdet(is_y | is_s) - logdet(is_x | is_y | is_s) - logdet(is_s))
    dof = jnp.sum(is_x, axis=1, dtype=jnp.int32) * jnp.sum(is_y, axis=1, dtype=jnp.int32)
    return stat, dof


_dg_stat = jax.jit(_dg_stat_impl, static_argnames=("w",))


def is_mixed_table(data) -> bool:
    """Whether ``data`` (a DataFrame or an object array) holds both categorical and numeric columns."""
    from icmlx._inputs import table_values

    values, _ = table_values(data)
    arr = np.asarray(values) if not hasattr(values, "shape") or isinstance(values, np.ndarray) else None
    if arr is None or arr.ndim != 2 or arr.dtype.kind != "O":
        return False
    cat = [_is_categorical_column(arr[:, j]) for j in range(arr.shape[1])]
    return any(cat) and not all(cat)
