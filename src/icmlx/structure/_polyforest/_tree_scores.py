"""The dependence scores of the poly-forest learner (`icmlx.structure.pc_tree`) that the CI-test objects
produce: the fused kernels of the built-in testers, and scores from any tester's p-values."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from icmlx._checks import check_values, is_traced
from icmlx._inputs import to_device

from ..._checks import check_int, default_float_dtype
from .._citests._contingency import pad_samples
from .._citests._fisher_padded import correlation_matrix
from .._graphs._data import check_real
from ._polyforest_kernels import _scores

__all__ = ["default_cond_bins"]


def default_cond_bins(n: int, num_bins: int = 4) -> int:
    """Default number of separator bins of the nonparametric tester: ``max(num_bins, round(sqrt(n) / 5))``.

    Conditioning on a binned separator leaves a within-bin residual dependence that a calibrated test detects
    once ``n`` is large enough, so the bins must shrink as ``n`` grows (Neykov, Balakrishnan & Wasserman let the
    number of bins grow with ``n`` at a rate set by the smoothness). The ``sqrt(n) / 5`` rate is a heuristic: on
    the tanh additive-noise poly-trees of ``examples/polyforest_rates.py`` it left no detectable binning bias up to
    ``n = 19200`` while keeping ``>= 5 sqrt(n)`` samples per stratum; with a fixed 7 bins false edges grew with
    ``n``.

    References:
      Neykov, Balakrishnan & Wasserman, "Minimax optimal conditional independence testing", Ann. Statist. 49
      (2021), arXiv:2001.03039.

    Raises:
      ValueError: ``n`` not a positive integer, or ``num_bins`` not an integer ``>= 2``.

    Examples:
      >>> from icmlx.structure import default_cond_bins
      >>> [default_cond_bins(n, 3) for n in (300, 2400, 9600)]
      [3, 10, 20]
    """
    check_int(n, "n", where="default_cond_bins", minimum=1)
    check_int(num_bins, "num_bins", where="default_cond_bins", minimum=2)
    return max(int(num_bins), round(math.sqrt(n) / 5.0))


def scores_from_pvalues(batched, d: int, alpha):
    """``pc_tree``'s scores from a prepared tester's p-values (`AbstractCITest.prepare`): every pair
    marginally and given each single other node, one batch per separator ``l``. Scores are ``-p`` and both cuts
    ``-alpha`` ("dependent" iff ``p <= alpha``); the separator is the ``l`` of the largest p-value."""
    fdt = default_float_dtype()
    j, k = np.triu_indices(d, 1)
    p0 = batched.pvalues(j.astype(np.int64), k.astype(np.int64), np.zeros((j.size, 0), np.int64))
    s0 = np.zeros((d, d))
    s0[j, k] = s0[k, j] = -p0
    pmax = np.full((d, d), -np.inf)
    arg = np.full((d, d), -1, np.int64)
    for sep in range(d):
        use = (j != sep) & (k != sep)
        if not use.any():
            continue
        jj, kk = j[use], k[use]
        p = batched.pvalues(jj.astype(np.int64), kk.astype(np.int64), np.full((jj.size, 1), sep, np.int64))
        better = p > pmax[jj, kk]
        pmax[jj[better], kk[better]] = p[better]
        arg[jj[better], kk[better]] = sep
    pmax = np.maximum(pmax, pmax.T)
    np.fill_diagonal(pmax, 0.0)  # as the fused kernels: a node's score with itself is -0, not -(-inf)
    arg = np.maximum(arg, arg.T)
    cut = np.asarray(-float(alpha), fdt)
    return (jax.device_put(s0.astype(fdt)), jax.device_put((-pmax).astype(fdt)),
            jax.device_put(arg.astype(np.int32)), jax.device_put(cut), jax.device_put(cut))


def fused_scores(test, data, alpha, threshold, chunk_size, progress=False, num_bins=4, cond_bins=4):
    """The fused score kernel of a tester that has one (`._polyforest_kernels`), one compiled program.

    The tester object supplies each step: ``_tree_threshold`` (its extra rule on the threshold),
    ``_tree_data`` (dtype and value checks), ``_tree_memory`` (memory per separator, for the default chunk),
    ``_tree_host`` (a host reduction of the sample that removes ``n`` from the compiled shapes),
    ``_tree_pvalue_scores`` (an optional two-program path) and ``_tree_kernel`` (the fused kernel)."""
    if threshold is not None and not is_traced(threshold):
        check_real(threshold, "threshold")
        t = float(np.asarray(threshold))
        test._tree_threshold(t, threshold)
        if not (np.isfinite(t) and t > 0.0):
            raise ValueError(f"threshold must be a positive finite cut on the statistic, got {threshold=}")
    if not isinstance(data, np.ndarray):  # host data from _prepare is already cast; uploaded below where needed
        data = jnp.asarray(data)
    data = test._tree_data(data)
    n, d = data.shape[0], data.shape[1]
    if chunk_size is None:
        chunk_size = int(max(1, min(d, 2**23 // max(test._tree_memory(n, d, num_bins, cond_bins), 1))))
    fdt = default_float_dtype()
    n_true = None
    if not is_traced(data):
        data, n_true = test._tree_host(data, n, d, fdt)
    if isinstance(data, np.ndarray):
        data = to_device(data)  # the testers below take the sample itself
    if threshold is None:
        out = test._tree_pvalue_scores(data, alpha, chunk_size, num_bins, cond_bins, progress)
        if out is not None:
            return out
    return _scores(
        data,
        jnp.asarray(0.01 if alpha is None else alpha, fdt),
        jnp.asarray(0.0 if threshold is None else threshold, fdt),
        n_true,
        kernel=test._tree_kernel(),
        chunk_size=chunk_size,
        num_bins=num_bins,
        cond_bins=cond_bins,
        use_threshold=threshold is not None,
        progress=progress,
    )


def pad_sample_rows(data, n: int, d: int):
    """The sample zero-padded on the host to the bucketed row count of `.._citests._contingency.pad_samples` (a
    device-to-host copy only for device input): statistics that are sums over rows do not change, and a new ``n`` of the
    same bucket compiles nothing."""
    host = np.asarray(data)
    padded = np.zeros((pad_samples(n, d), d), host.dtype)
    padded[:n] = host
    return jax.device_put(padded)


def check_float_sample(data, label: str):
    """A float sample without NaN or Inf (``error_if`` when traced)."""
    if not jnp.issubdtype(data.dtype, jnp.floating):
        raise TypeError(f"ci_test={label!r} needs floating data, got {data.dtype=}")
    return check_values(
        data, lambda xp, v: ~xp.isfinite(v), "data contains NaN or Inf; drop or impute those rows first"
    )


def check_binary_sample(data, label: str):
    """A 0/1 integer sample (``error_if`` when traced)."""
    if not (jnp.issubdtype(data.dtype, jnp.integer) or data.dtype == jnp.bool_):
        raise TypeError(f"ci_test={label!r} needs 0/1 integer data, got {data.dtype=}")
    return check_values(data, lambda xp, v: (v < 0) | (v > 1), f"ci_test={label!r} needs 0/1 data; recode it")


def correlation_sample(data, n: int, d: int, fdt):
    """Fisher-z's host reduction: the correlation matrix and the true ``n``."""
    return correlation_matrix(data, d, fdt), np.int32(n)
