"""p-value based anchors: two-sided p-values, Benjamini–Hochberg step-up and Bonferroni."""

import dataclasses
import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .._buckets import size_bucket
from .._checks import check_values, is_traced
from .._types import RealScalarLike
from ._checks import (
    Labels,
    _where_first,
    as_input_array,
    check_scalar,
    float_dtype,
    host_input_array,
    warn_float32_tails,
    warn_if_pvalues,
)
from ._multitest import check_alpha, run_method
from ._records import TestDecisions
from ._sigma import AbstractSigma, resolve_sigma

__all__ = [
    "two_sided_pvalues",
    "MultipleTestResult",
    "benjamini_hochberg",
    "bh_adjusted_pvalues",
    "bonferroni",
    "bonferroni_threshold",
]


def two_sided_pvalues(
    x: Any, sigma: RealScalarLike | AbstractSigma | str = 1.0
) -> Float[Array, "*shape"]:
    r"""Two-sided normal p-values $p_i = 2\bar\Phi(|x_i|/\sigma)$, computed without cancellation.

    Args:
      x: observations, shape ``(*batch, n)``: list, NumPy, JAX or pandas Series (z-scores when ``sigma=1``). An
        infinite value gives the p-value 0. Values that all lie in ``[0, 1]`` look like p-values and give a
        warning.
      sigma: noise standard deviation (> 0), or ``"mad"``/`MADSigma` to estimate it per row
        (``"empirical"``/`EmpiricalNullSigma`: the empirical null's centre and scale; ``x`` is centred first).

    Returns:
      p-values, same shape and dtype as ``x``.

    Raises:
      ValueError: non-positive ``sigma``; NaN in ``x`` (a concrete ``x`` at once, under ``jit`` at run time).

    References:
      Benjamini & Hochberg (1995), J. R. Stat. Soc. B 57(1).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import two_sided_pvalues
      >>> print(jnp.round(two_sided_pvalues(jnp.array([0.0, 1.959964, -3.0])), 4))
      [1.   0.05 0.0027]
    """
    x, _ = as_input_array(x, "x")
    if x.ndim < 1:
        x = x[None]
        return _pvals(*_pvalue_inputs(x, sigma))[0]
    return _pvals(*_pvalue_inputs(x, sigma))


def _pvalue_inputs(x, sigma):
    x = check_values(x, lambda xp, v: xp.isnan(v), "two_sided_pvalues: x contains NaN; drop or impute it first")
    x, s, estimated = resolve_sigma(sigma, x, "two_sided_pvalues")
    warn_if_pvalues(x, None if estimated else s, "two_sided_pvalues", stacklevel=3)
    return x, s


@jax.jit
def _pvals(x, s):
    # imported at trace time: jax.scipy.special is a tenth of a second of import that BH alone does not need
    from jax.scipy.special import ndtr

    return 2.0 * ndtr(-jnp.abs(x) / s)


class MultipleTestResult(TestDecisions):
    """Decisions of a p-value procedure (`benjamini_hochberg`, `bonferroni`).

    Attributes:
      reject: decisions, shape of the p-values.
      num_rejected: number of rejections per row, shape ``(*batch,)``.
      threshold: the p-value cutoff per row (reject iff ``p <= threshold``; 0 with no rejection for BH).
      labels: the index of the pandas Series passed as ``pvalues`` (``None`` otherwise); `rejected_labels`
        reads the rejected ones.
    """

    reject: Bool[Array, "*batch n"]
    num_rejected: Int[Array, "*batch"]
    threshold: Float[Array, "*batch"]
    _labels: Labels | None = eqx.field(static=True, default=None)

    _repr_fields = ("threshold",)



def _check_pvalues(pvalues, where):
    # host data is checked on the host and then put on the device once (no round trip of a large input)
    p, labels = _check_pvalues_host(pvalues, where)
    return (jax.device_put(p) if isinstance(p, np.ndarray) else p), labels


def _check_pvalues_host(pvalues, where):
    """`_check_pvalues` that leaves host data (list, NumPy, Series) a checked NumPy array."""
    p, labels = host_input_array(pvalues, "pvalues")
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"{where}: pvalues must have a non-empty last (tests) axis, got {p.shape=}")
    if is_traced(p):
        return check_values(
            p, lambda xp, v: xp.isnan(v) | (v < 0.0) | (v > 1.0),
            f"{where}: pvalues must lie in [0, 1] (NaN or out-of-range value found); for z-scores pass "
            "two_sided_pvalues(z)",
        ), labels
    v = np.asarray(p)
    if np.isnan(v).any():
        where_nan = _where_first(np.isnan(v), labels).format(what="NaN value")
        raise ValueError(f"{where}: pvalues contains {where_nan}; drop or impute those entries first")
    out = (v < 0.0) | (v > 1.0)
    if out.any():
        first = v.reshape(-1)[np.flatnonzero(out.reshape(-1))[0]]
        found = _where_first(out, labels).format(what="value")
        raise ValueError(
            f"{where}: pvalues must lie in [0, 1], but {found} lie outside, e.g. {float(first):.4g}; these look "
            "like z-scores: convert them with two_sided_pvalues(z) first"
        )
    return p, labels


def _line(j, n, alpha, dt):
    # The BH critical values (j / n) * alpha, in the same operation order as statsmodels (n a Python int or a
    # traced int: the same float value of n either way).
    return (j.astype(dt) / (n.astype(dt) if hasattr(n, "astype") else n)) * alpha


def _bh_bucket(p, n, alpha, nmax):
    """Smallest j in {0..n+1} with p <= line(j) (line(n+1) = +inf), exactly, without sorting.

    A float guess ceil(p n / alpha) is off by at most a few ulps of j; a short bisection on the exact critical
    values (computed by formula, no gathers) repairs it. ``n`` may be traced; ``nmax >= n`` is static and sizes
    the bisection window.
    """
    dt = p.dtype
    eps = float(jnp.finfo(dt).eps)
    w = int(math.ceil(8.0 * eps * (nmax + 2))) + 2  # |guess - j| <= ~2 eps j <= w
    nf = n.astype(dt) if hasattr(n, "astype") else n
    guess = jnp.ceil(jnp.minimum(p * (nf / alpha), nf + 1.0))
    j0 = guess.astype(jnp.int32)

    def cond_true(j):
        return (j >= n + 1) | (p <= _line(j, n, alpha, dt))

    if 8.0 * eps * (nmax + 2) < 1.0:
        # the guess is within 1 of the exact bucket: one step up, one step down
        j = jnp.where(~cond_true(j0), j0 + 1, j0)
        return jnp.where((j >= 1) & cond_true(j - 1), j - 1, j)
    lo = jnp.maximum(j0 - w - 1, -1)  # cond(lo) is false (or lo = -1 sentinel)
    hi = jnp.minimum(j0 + w, n + 1)  # cond(hi) is true
    steps = max(1, int(math.ceil(math.log2(2 * w + 2))) + 1)

    def body(_, lohi):
        lo, hi = lohi
        mid = (lo + hi) // 2
        ok = cond_true(mid) & (mid >= 0)
        return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

    lo, hi = jax.lax.fori_loop(0, steps, body, (lo, hi))
    return hi


def benjamini_hochberg(
    pvalues: Any,
    alpha: RealScalarLike = 0.05,
    *,
    method: str = "bucket",
) -> MultipleTestResult:
    r"""Benjamini–Hochberg step-up procedure (FDR control at level ``alpha``), vectorised over rows.

    With sorted p-values $p_{(1)}\le\dots\le p_{(n)}$,

    $$
    k^* = \max\{k : p_{(k)} \le k\alpha/n\},\qquad \text{reject } H_{0i} \iff p_i \le p_{(k^*)}
    $$

    (nothing if no such $k$). ``method="sort"`` sorts each row. ``method="bucket"`` (default) is an exact
    equivalent without sorting. With $C(k)=\#\{i: p_i\le k\alpha/n\}$, $k^*=\max\{k: C(k)\ge k\}$ is
    the largest fixed point of the nondecreasing $C$; for a concrete JAX array the iteration
    $k\leftarrow C(k)$ from $k=n$ reaches it exactly in a few passes over the tests (at most 40 on
    simulated two-groups data), and a histogram takes over if 64 passes were not enough. The histogram (also the
    path under ``jit``) places each $p_i$ in the bucket $j_i=\min\{j: p_i\le j\alpha/n\}$ (a float
    guess repaired by bisection on the same critical values) and takes
    $k^*=\max\{k: \#\{j_i\le k\}\ge k\}$. Every path rejects $p_i\le k^*\alpha/n$ and gives identical
    decisions (same critical values $(k/n)\alpha$ as ``statsmodels``); XLA's CPU sort is slow, so "bucket" is
    the faster one for large ``n``.
    P-values held on the host (NumPy, a list, a pandas Series) are sorted in NumPy, in the same dtype and with
    the same critical values, and the record is put on the device: no program is compiled, whatever ``n``.

    Args:
      pvalues: p-values in [0, 1], shape ``(*batch, n)``: list, NumPy, JAX or pandas Series (its index comes back
        as ``result.labels``); one BH procedure per row. z-scores are refused: pass ``two_sided_pvalues(z)``.
      alpha: FDR level in (0, 1); scalar (Python or 0-d array).
      method: ``"bucket"`` or ``"sort"``.

    Returns:
      `MultipleTestResult` (``reject``, ``num_rejected`` = $k^*$, ``threshold`` =
      $p_{(k^*)}$, 0 if none).

    Raises:
      ValueError: ``alpha`` outside (0, 1), unknown ``method``; p-values NaN or outside [0, 1] (a concrete input at
        once, under ``jit`` at run time).

    References:
      Benjamini & Hochberg (1995), J. R. Stat. Soc. B 57(1):289–300.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import benjamini_hochberg
      >>> pv = jnp.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205])
      >>> res = benjamini_hochberg(pv)
      >>> print(res.reject, int(res.num_rejected))
      [ True  True False False False False False False] 2
    """
    if method not in ("bucket", "sort"):
        raise ValueError(f"method must be 'bucket' or 'sort', got {method=!r}")
    p, labels = _check_pvalues_host(pvalues, "benjamini_hochberg")
    dt = p.dtype
    a = check_alpha(alpha, dt)
    n = p.shape[-1]
    if isinstance(p, np.ndarray):  # host data: the same decisions in NumPy, no program to compile
        res = _bh_host(p, np.asarray(a), n)
    elif method == "sort":
        res = _bh_sort_decisions(p, a)
    elif is_traced(p):
        res = _bh_bucket_decisions(p, a, n)  # inside the user's jit the shape is theirs: no padding
    else:
        res = _bh_bucket_padded(p, a, n)
    return res if labels is None else dataclasses.replace(res, _labels=labels)


def _size_bucket(n: int, dtype: Any) -> int:
    """The padded test count for ``n``: the next power of two, at least 1024.

    Coarse on purpose: a script that runs BH on 10^6 tests and then on a subset of 0.7 * 10^6 compiles once; the
    price is at most twice the work of a call, which is linear in ``n`` and small beside the compilation saved.
    A bucket that would cross the size past which `_bh_bucket` needs its bisection (about 2^20 tests in
    float32) stops just below it, at 2^20 - 1024, so padding never switches a call to the slower repair.
    """
    m = size_bucket(n, minimum=1024)
    # largest multiple of 1024 with 8 eps (m + 2) < 1 (a ragged length vectorises worse)
    fast = (int(math.ceil(1.0 / (8.0 * float(jnp.finfo(dtype).eps)))) - 3) // 1024 * 1024
    return fast if n <= fast < m else m


def _bh_bucket_padded(p, a, n):
    """BH on concrete p-values padded to `_size_bucket` with the true ``n`` traced: a new ``n`` in the same
    bucket reuses the compiled program and compiles nothing else."""
    m = _size_bucket(n, p.dtype)
    pad = [(0, 0)] * (p.ndim - 1) + [(0, m - n)]
    # padded entries are p = 1 and are masked out of the histogram and the decisions
    p = jax.device_put(np.pad(p, pad, constant_values=1.0)) if isinstance(p, np.ndarray) \
        else jnp.pad(p, pad, constant_values=1.0)
    res, converged = _bh_fixed_point_decisions(p, a, np.int32(n))
    if not bool(converged):  # slow convergence (p-values that follow the BH line closely): the histogram is exact
        res = _bh_bucket_decisions(p, a, np.int32(n))
    if m == n:
        return res
    # the slice back to n on the host: an eager slice would be one more program for every new n
    return dataclasses.replace(res, reject=jax.device_put(np.asarray(res.reject)[..., :n]))


def _bh_host(p: np.ndarray, a: np.ndarray, n: int) -> MultipleTestResult:
    """`_bh_sort_decisions` in NumPy for p-values held on the host, in the same dtype and with the same
    critical values, so the decisions are those of every device path; the record's arrays are put on the device.

    A one-shot script with NumPy p-values then compiles nothing: the sort is cheaper than the compilation of
    any device program, and its cost, O(n log n) per row, is small beside reading the data.
    """
    ks = np.arange(1, n + 1, dtype=np.int32)
    ps = np.sort(p, axis=-1)
    ok = ps <= _line(ks, n, a, p.dtype)
    kstar = np.max(np.where(ok, ks, 0), axis=-1).astype(np.int32)
    idx = np.maximum(kstar - 1, 0)[..., None]
    thr = np.where(kstar > 0, np.take_along_axis(ps, idx, axis=-1)[..., 0], 0.0).astype(p.dtype)
    reject = (p <= thr[..., None]) & (kstar > 0)[..., None]
    return MultipleTestResult(reject=jax.device_put(reject), num_rejected=jax.device_put(kstar),
                              threshold=jax.device_put(thr))


def _bh_sort_decisions(p, a):
    """BH by the sort-based engine of `multipletests` (``method="fdr_bh"``), as a `MultipleTestResult`."""
    reject, _, _, _, _ = run_method(p, a, "fdr_bh")
    return _decisions(p, reject)


def _decisions(p, reject):
    thr = jnp.max(jnp.where(reject, p, 0.0), axis=-1)
    return MultipleTestResult(reject=reject, num_rejected=jnp.sum(reject, axis=-1, dtype=jnp.int32), threshold=thr)


# Passes of the fixed-point iteration before the histogram takes over: simulated two-groups data (normal z-scores,
# 0-99% signals of mean shift 1-5, alpha 0.05-0.3, n = 10^6) converge in at most 40.
_BH_FIXED_POINT_STEPS = 64


@jax.jit
def _bh_fixed_point_decisions(p, a, n):
    """BH by the largest fixed point of the count of p-values under the line, and whether it converged.

    ``C(k) = #{i < n : p_i <= (k/n) alpha}`` is nondecreasing in ``k``, and ``k* = max{k : C(k) >= k}`` is its
    largest fixed point (``C(k*) = k*``: were it larger, ``C(C(k*)) >= C(k*)`` would put ``C(k*)`` in the set).
    From ``k_0 = n``
    the iterates ``k_{t+1} = C(k_t)`` never increase and never pass below ``k*`` (``C(k_t) >= C(k*) = k*``), so
    they stop at ``k*`` exactly; each pass is one comparison and one sum over the tests. It compiles to a small
    loop, where the bucket histogram needs a scatter and a cumulative sum over ``m`` bins (slower to compile and
    to run). Capped at `_BH_FIXED_POINT_STEPS` passes; ``converged`` is False if a row had not stopped.
    """
    m = p.shape[-1]
    dt = p.dtype
    valid = jnp.arange(m, dtype=jnp.int32) < n

    def count(k):
        return jnp.sum((p <= _line(k, n, a, dt)[..., None]) & valid, axis=-1, dtype=jnp.int32)

    def cond(state):
        k, k_next, steps = state
        return jnp.any(k_next != k) & (steps < _BH_FIXED_POINT_STEPS)

    def body(state):
        _, k, steps = state
        return k, count(k), steps + 1

    k0 = jnp.broadcast_to(jnp.asarray(n, jnp.int32), p.shape[:-1])
    k, kstar, _ = jax.lax.while_loop(cond, body, (k0, count(k0), jnp.int32(1)))
    # p_i <= line(k*) is p_i <= p_(k*): no p-value lies in (p_(k*), line(k*)], or k* + 1 would qualify
    reject = (p <= _line(kstar, n, a, dt)[..., None]) & valid
    thr = jnp.max(jnp.where(reject, p, 0.0), axis=-1)
    return MultipleTestResult(reject=reject, num_rejected=kstar, threshold=thr), jnp.all(kstar == k)


@jax.jit
def _bh_bucket_decisions(p, a, n):
    # p: (*batch, m) of which the first n (traced, n <= m) are the tests; entries past n are padding
    m = p.shape[-1]
    batch = p.shape[:-1]
    ks = jnp.arange(1, m + 1, dtype=jnp.int32)
    j = _bh_bucket(p, n, a, m)  # in 0..n+1
    # padding: out of range, dropped by the histogram below
    j = jnp.where(jnp.arange(m, dtype=jnp.int32) < n, j, m + 2)
    rows = math.prod(batch)
    # per-row histogram of the buckets (vmapped scatter: no flat index, so no int32 overflow)
    counts = jax.vmap(lambda jr: jnp.zeros(m + 2, jnp.int32).at[jr].add(1, mode="drop"))(
        j.reshape(rows, m)
    )
    # #{j_i <= k}, k = 1..m (cumsum, not associative_scan: the scan runs faster per call on CPU but compiles
    # much slower for large n, a bad trade for one-shot use); for k > n the count is at most n < k, so k* <= n
    cum = jnp.cumsum(counts, axis=1)[:, 1 : m + 1]
    kstar = jnp.max(jnp.where(cum >= ks, ks, 0), axis=-1).reshape(batch)
    reject = j <= kstar[..., None]
    thr = jnp.max(jnp.where(reject, p, 0.0), axis=-1)
    return MultipleTestResult(reject=reject, num_rejected=kstar, threshold=thr)


def bh_adjusted_pvalues(pvalues: Any) -> Float[Array, "*batch n"]:
    r"""BH-adjusted p-values $\tilde p_{(i)} = \min_{k\ge i}\min(1, n p_{(k)}/k)$ (sort-based).

    ``benjamini_hochberg(p, alpha).reject == (adjusted <= alpha)`` up to rounding at the boundary.

    Args:
      pvalues: p-values in [0, 1], shape ``(*batch, n)``.

    Returns:
      Adjusted p-values, same shape.

    Raises:
      ValueError: NaN or out-of-range p-values (run time).

    References:
      Benjamini & Hochberg (1995); Yekutieli & Benjamini (1999), J. Stat. Plan. Inference 82.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import bh_adjusted_pvalues
      >>> print(jnp.round(bh_adjusted_pvalues(jnp.array([0.01, 0.04, 0.03])), 3))
      [0.03 0.04 0.04]
    """
    return _bh_adjusted(_check_pvalues(pvalues, "bh_adjusted_pvalues")[0])


def _bh_adjusted(p):
    return run_method(p, jnp.asarray(0.05, p.dtype), "fdr_bh")[1]


def bonferroni(
    pvalues: Any, alpha: RealScalarLike = 0.05
) -> MultipleTestResult:
    r"""Bonferroni correction (FWER at level ``alpha``): reject $H_{0i}$ iff $p_i\le\alpha/n$.

    Warns at trace time for float32 input with $n\ge10^6$ (the cutoff $\alpha/n$ sits where float32
    p-values computed as $1-\Phi$ are already 0); use float64 there.

    Args:
      pvalues: p-values in [0, 1], shape ``(*batch, n)``.
      alpha: FWER level in (0, 1).

    Returns:
      `MultipleTestResult` with ``threshold = alpha / n``.

    Raises:
      ValueError: ``alpha`` outside (0, 1); NaN or out-of-range p-values (run time).

    References:
      Dunn (1961), J. Amer. Statist. Assoc. 56. Bogdan et al. (2011), arXiv:1002.3501 (ABOS of Bonferroni).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import bonferroni
      >>> print(bonferroni(jnp.array([0.001, 0.02, 0.3]), 0.05).reject)
      [ True False False]
    """
    p, labels = _check_pvalues(pvalues, "bonferroni")
    dt = p.dtype
    a = check_alpha(alpha, dt)
    n = p.shape[-1]
    warn_float32_tails(dt, n, "bonferroni")
    res = _bonf(p, a)
    return res if labels is None else dataclasses.replace(res, _labels=labels)


def _bonf(p, a):
    reject, _, _, a_bonf, _ = run_method(p, a, "bonferroni")
    return MultipleTestResult(reject=reject, num_rejected=jnp.sum(reject, axis=-1, dtype=jnp.int32), threshold=a_bonf)


def bonferroni_threshold(
    n: RealScalarLike | Float[Array, "..."], alpha: RealScalarLike = 0.05
) -> Float[Array, "..."]:
    r"""Bonferroni as a threshold on $z^2$: $c^2 = \big(\Phi^{-1}(\alpha/(2n))\big)^2$.

    Uses the lower tail $\Phi^{-1}(\alpha/2n)$ (accurate in float32 too), never
    $\Phi^{-1}(1-\alpha/2n)$, which is infinite in float32 for $n\ge10^6$.

    Args:
      n: number of tests (>= 1), scalar or array (e.g. a grid of n for exact risk tables).
      alpha: FWER level in (0, 1).

    Returns:
      $c^2$, broadcast shape.

    Raises:
      ValueError: ``n < 1`` or ``alpha`` outside (0, 1).

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501.

    Examples:
      >>> from icmlx.stats import bonferroni_threshold
      >>> round(float(bonferroni_threshold(1e4)), 3)   # 4.565^2
      20.837
    """
    dt = float_dtype(n, alpha)
    nn = check_scalar("n", n, dt, lo=1.0, lo_closed=True)
    a = check_scalar("alpha", alpha, dt, lo=0.0, hi=1.0)
    return _bonf_c2(nn, a)


@jax.jit
def _bonf_c2(nn, a):
    from jax.scipy.special import ndtri  # at trace time, as in _pvals

    z = ndtri(a / (2.0 * nn))
    return z * z
