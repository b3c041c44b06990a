r"""Storey's q-values with the null proportion $\pi_0$ estimated from the p-values, or given."""

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._checks import check_number, check_values, is_traced
from ._binning import chunked_sum
from ._checks import Labels
from ._multitest import prepare_pvalues, run_method

__all__ = ["QValuesResult", "qvalues", "estimate_pi0"]

#: The default grid of lambda (as R ``qvalue``): 0.05, 0.10, ..., 0.95.
DEFAULT_LAMBDAS = tuple(round(0.05 * i, 2) for i in range(1, 20))

_PI0_METHODS = ("smoother", "bootstrap")


class QValuesResult(eqx.Module):
    r"""Result of `qvalues`.

    Attributes:
      qvalues: $q_i=\pi_0\,\tilde p_i^{BH}$, shape ``(*batch, m)`` (NaN where the input was NaN under
        ``nan_policy="omit"``).
      pi0: the null proportion used, per row, shape ``(*batch,)``, in $[1/m, 1]$.
      lambdas: the grid $\lambda_1<\dots<\lambda_L$, shape ``(L,)``.
      pi0_lambda: the λ-curve $\hat\pi_0(\lambda)=\#\{p_i\ge\lambda\}/(m(1-\lambda))$, shape ``(*batch, L)``
        (NaN when ``pi0`` was given).
    """

    qvalues: Float[Array, "*batch m"]
    pi0: Float[Array, "*batch"]
    lambdas: Float[Array, " L"]
    pi0_lambda: Float[Array, "*batch L"]
    _labels: Labels | None = eqx.field(static=True, default=None)

    @property
    def labels(self) -> Any:
        """The pandas index of the Series passed in, or ``None``."""
        return None if self._labels is None else self._labels.index


@functools.lru_cache(maxsize=32)
def _smoother_row(lambdas: tuple[float, ...], df: float) -> np.ndarray:
    r"""The last row of the natural cubic smoothing spline's hat matrix on the knots ``lambdas`` with ``df`` degrees
    of freedom (as R ``smooth.spline(lambda, pi0, df=3)``, evaluated at the largest lambda).

    Reinsch form: with $K=QR^{-1}Q^\top$ the roughness matrix of the knots, the fit of data $y$ is
    $(I+sK)^{-1}y$, and $s$ is set so that the trace of that matrix is ``df``. It depends on the knots
    only, so the smoother is one fixed linear map of the λ-curve.
    """
    x = np.asarray(lambdas, np.float64)
    n = x.size
    if n <= 2 or df >= n:
        row = np.zeros(n)
        row[-1] = 1.0
        return row
    h = np.diff(x)
    q = np.zeros((n, n - 2))
    r = np.zeros((n - 2, n - 2))
    for j in range(n - 2):
        q[j, j] = 1.0 / h[j]
        q[j + 1, j] = -1.0 / h[j] - 1.0 / h[j + 1]
        q[j + 2, j] = 1.0 / h[j + 1]
        r[j, j] = (h[j] + h[j + 1]) / 3.0
        if j + 1 < n - 2:
            r[j, j + 1] = r[j + 1, j] = h[j + 1] / 6.0
    k = q @ np.linalg.solve(r, q.T)
    evals, evecs = np.linalg.eigh((k + k.T) / 2.0)
    evals = np.maximum(evals, 0.0)
    lo, hi = -30.0, 30.0  # bisection on log s: trace (I + s K)^-1 = sum 1 / (1 + s d) falls from n to 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        tr = np.sum(1.0 / (1.0 + np.exp(mid) * evals))
        lo, hi = (mid, hi) if tr > df else (lo, mid)
    s = np.exp(0.5 * (lo + hi))
    hat = (evecs / (1.0 + s * evals)) @ evecs.T
    return hat[-1]


def _check_lambdas(lambdas: Any) -> tuple[float, ...]:
    if isinstance(lambdas, str):
        raise TypeError(f"lambdas must be a sequence of numbers in [0, 1), got {lambdas=!r}")
    try:
        lam = np.atleast_1d(np.asarray(lambdas, np.float64))
    except (TypeError, ValueError) as err:
        raise TypeError(f"lambdas must be a sequence of numbers in [0, 1), got {lambdas=!r}") from err
    if lam.ndim != 1 or lam.size < 1 or not np.all(np.isfinite(lam)) or np.any(lam < 0) or np.any(lam >= 1):
        raise ValueError(f"lambdas must be a non-empty 1-D sequence of numbers in [0, 1), got {lambdas=!r}")
    if np.any(np.diff(lam) <= 0):
        raise ValueError(f"lambdas must be strictly increasing, got {lambdas=!r}")
    return tuple(float(v) for v in lam)


def storey_buckets(p, lambdas):
    """Counts of the p-values of one row (or chunk) per bucket ``b = #{j : lambda_j <= p}``, ``b = 0..L`` (NaN
    dropped): ``#{p >= lambda_j}`` is the count of the buckets past ``j``. One pass, no (tests x lambdas) array."""
    num = len(lambdas)
    b = jnp.searchsorted(jnp.asarray(lambdas, p.dtype), p, side="right").astype(jnp.int32)
    b = jnp.where(jnp.isnan(p), num + 1, b)
    return jnp.zeros(num + 1, jnp.int32).at[b].add(1, mode="drop")


def pi0_from_buckets(hist, lambdas, method, df, dtype):
    """``(pi0, pi0_lambda)`` from `storey_buckets`' counts, shape ``(*batch, L + 1)``."""
    lam = jnp.asarray(lambdas, dtype)
    m = jnp.sum(hist, axis=-1).astype(dtype)
    w = jnp.cumsum(hist[..., ::-1], axis=-1)[..., ::-1][..., 1:].astype(dtype)  # W(lambda_j) = #{p >= lambda_j}
    curve = w / (m[..., None] * (1.0 - lam))
    if method == "smoother":
        pi0 = curve @ jnp.asarray(_smoother_row(lambdas, df), dtype)
    else:
        # Storey, Taylor & Siegmund (2004): the lambda of least estimated mean squared error, with the bootstrap's
        # variance in closed form and the bias against the 10% quantile of the curve (as R qvalue)
        floor = jnp.quantile(curve, 0.1, axis=-1, keepdims=True)
        mse = (w / (m[..., None] ** 2 * (1.0 - lam) ** 2)) * (1.0 - w / m[..., None]) + (curve - floor) ** 2
        best = mse == jnp.min(mse, axis=-1, keepdims=True)
        pi0 = jnp.min(jnp.where(best, curve, jnp.inf), axis=-1)
    return jnp.clip(pi0, 1.0 / jnp.maximum(m, 1.0), 1.0), curve


@functools.partial(jax.jit, static_argnames=("lambdas", "method", "df"))
def _pi0_core(p, lambdas, method, df):
    """``(pi0, pi0_lambda)`` per row of ``p`` (NaN entries are not in the family)."""
    rows = p.reshape(-1, p.shape[-1])
    hist = jax.vmap(lambda r: chunked_sum(lambda c: storey_buckets(c, lambdas), r,
                                          jnp.zeros(len(lambdas) + 1, jnp.int32)))(rows)
    pi0, curve = pi0_from_buckets(hist, lambdas, method, df, p.dtype)
    return pi0.reshape(p.shape[:-1]), curve.reshape(*p.shape[:-1], len(lambdas))


@jax.jit
def storey_pi0_of_scores(z):
    """Storey's bootstrap pi0 (the default grid) of the two-sided p-values ``2 Phi(-|z|)``, per row of ``z``: the
    p-values are formed chunk by chunk, so no array of the row's size is made."""
    from jax.scipy.special import ndtr

    rows = z.reshape(-1, z.shape[-1])
    init = jnp.zeros(len(DEFAULT_LAMBDAS) + 1, jnp.int32)
    hist = jax.vmap(lambda r: chunked_sum(lambda c: storey_buckets(2.0 * ndtr(-jnp.abs(c)), DEFAULT_LAMBDAS), r,
                                          init))(rows)
    return pi0_from_buckets(hist, DEFAULT_LAMBDAS, "bootstrap", 3.0, z.dtype)[0].reshape(z.shape[:-1])


def estimate_pi0(
    pvalues: Any,
    *,
    method: str = "smoother",
    lambdas: Any = DEFAULT_LAMBDAS,
    nan_policy: str = "raise",
) -> Float[Array, "*batch"]:
    r"""Storey's estimate of the proportion $\pi_0$ of true nulls, per row (see `qvalues`).

    Args:
      pvalues: p-values in [0, 1], shape ``(*batch, m)``.
      method: ``"smoother"`` or ``"bootstrap"`` (static).
      lambdas: the λ grid (static), default 0.05, ..., 0.95.
      nan_policy: ``"raise"`` or ``"omit"`` (NaN p-values are left out).

    Returns:
      $\hat\pi_0\in[1/m,1]$, shape ``(*batch,)``.

    Raises:
      ValueError: an unknown ``method``/``nan_policy``, a bad grid, p-values outside [0, 1].

    References:
      Storey & Tibshirani (2003), PNAS 100(16). Storey, Taylor & Siegmund (2004), J. R. Stat. Soc. B 66(1).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import estimate_pi0
      >>> p = jnp.linspace(0.0005, 0.9995, 1000)   # uniform p-values: all null
      >>> float(estimate_pi0(p))
      1.0
    """
    return qvalues(pvalues, pi0_method=method, lambdas=lambdas, nan_policy=nan_policy).pi0


def qvalues(
    pvalues: Any,
    pi0: Any = None,
    *,
    pi0_method: str = "smoother",
    lambdas: Any = DEFAULT_LAMBDAS,
    smooth_df: float = 3.0,
    nan_policy: str = "raise",
) -> QValuesResult:
    r"""Storey's q-values: the BH-adjusted p-values times the null proportion $\pi_0$, per row.

    $$q_{(i)}=\pi_0\min_{j\ge i}\min\Big(1,\frac{m\,p_{(j)}}{j}\Big),\qquad
    \hat\pi_0(\lambda)=\frac{\#\{p_i\ge\lambda\}}{m(1-\lambda)}.$$

    $\pi_0$ is given, or estimated from the λ-curve as R ``qvalue`` does: ``"smoother"`` takes the natural
    cubic smoothing spline of the curve (``smooth_df`` degrees of freedom) at the largest λ (Storey & Tibshirani
    2003); ``"bootstrap"`` takes the curve at the λ of least estimated mean squared error (Storey, Taylor &
    Siegmund 2004; the bootstrap variance in closed form). Where ``qvalue`` stops with an error (an estimate
    $\le0$, a grid past the largest p-value, p-values piling at 1, tiny $m$), the estimate is kept in
    $[1/m, 1]$ instead, so $q_i\le\tilde p_i^{BH}$ always.

    Args:
      pvalues: p-values in [0, 1], shape ``(*batch, m)``: list, NumPy, JAX or pandas Series.
      pi0: the null proportion in (0, 1] (a number or one per row, shape ``(*batch,)``), or ``None`` to estimate it.
      pi0_method: ``"smoother"`` (default) or ``"bootstrap"`` (static).
      lambdas: the λ grid in [0, 1), increasing (static); default 0.05, 0.10, ..., 0.95.
      smooth_df: degrees of freedom of the smoothing spline (static, >= 2).
      nan_policy: ``"raise"`` (default) or ``"omit"``: NaN p-values leave the family and get a NaN q-value.

    Returns:
      `QValuesResult` (``qvalues``, ``pi0``, ``lambdas``, ``pi0_lambda``).

    Raises:
      TypeError: a non-numeric ``pi0`` or ``lambdas``.
      ValueError: ``pi0`` outside (0, 1], an unknown ``pi0_method``/``nan_policy``, a bad grid, p-values outside
        [0, 1] (or NaN under ``"raise"``).

    References:
      Storey (2002), J. R. Stat. Soc. B 64(3). Storey & Tibshirani (2003), PNAS 100(16). Storey, Taylor & Siegmund
      (2004), J. R. Stat. Soc. B 66(1).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import qvalues
      >>> res = qvalues(jnp.array([0.001, 0.01, 0.02, 0.5, 0.9]), pi0=0.5)
      >>> print(jnp.round(res.qvalues, 4))
      [0.0025 0.0125 0.0167 0.3125 0.45  ]
    """
    if pi0_method not in _PI0_METHODS:
        raise ValueError(f"pi0_method must be one of {_PI0_METHODS}, got {pi0_method=!r}")
    if nan_policy not in ("raise", "omit"):
        raise ValueError(f"qvalues: nan_policy must be 'raise' or 'omit', got {nan_policy=!r}")
    lam = _check_lambdas(lambdas)
    if isinstance(smooth_df, (jax.Array, np.ndarray)):
        raise ValueError(f"smooth_df must be a number >= 2, got {smooth_df=!r}")
    check_number(smooth_df, "smooth_df", where="qvalues", minimum=2)
    # host p-values stay on the host for the BH step, which sorts them there (`multipletests`' NumPy path)
    p, labels = prepare_pvalues(pvalues, "qvalues", nan_policy, keep_host=True)
    dt = p.dtype
    _, adj, _, _, _ = run_method(p, jnp.asarray(0.05, dt), "fdr_bh")
    p = jax.device_put(p) if isinstance(p, np.ndarray) else p
    batch = p.shape[:-1]
    if pi0 is None:
        est, curve = _pi0_core(p, lam, pi0_method, float(smooth_df))
    else:
        if isinstance(pi0, (str, bool)):
            raise TypeError(f"pi0 must be a number in (0, 1], got {pi0=!r}")
        try:
            est = jnp.asarray(pi0, dt) if not isinstance(pi0, np.ndarray) else jnp.asarray(pi0.astype(dt))
        except TypeError as err:
            raise TypeError(f"pi0 must be a number in (0, 1], got {pi0=!r}") from err
        if est.ndim > 0 and est.shape != batch:
            raise ValueError(f"pi0 must be a scalar or have the batch shape {batch}, got shape {est.shape}")
        bad = lambda xp, v: xp.isnan(v) | (v <= 0.0) | (v > 1.0)  # noqa: E731
        if is_traced(est):
            est = check_values(est, bad, "pi0 must lie in (0, 1]")
        elif bool(np.any(bad(np, np.asarray(est)))):
            raise ValueError(f"pi0 must lie in (0, 1], got {pi0=!r}")
        est = jnp.broadcast_to(est, batch)
        curve = jnp.full((*batch, len(lam)), jnp.nan, dt)
    return QValuesResult(qvalues=est[..., None] * adj, pi0=est, lambdas=jnp.asarray(lam, dt), pi0_lambda=curve,
                         _labels=labels)
