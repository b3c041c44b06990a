"""Choosing the drift's function class from the data by held-out likelihood of the observed increments."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_number
from .._types import PRNGKey, RealScalarLike
from ._basis import PolynomialBasis
from ._chunks import check_chunk_size, chunked
from ._class_scores import FunctionClassSelection, one_standard_error_choice
from ._classes import RidgeRegression
from ._data import ArrayOrFrame, as_sigma, interval_data
from ._diffusion import estimate_diffusion
from ._em import select_by_bridges
from ._estimators import check_function_class, default_function_class, fit_chunk, fit_rows

__all__ = ["FunctionClassSelection", "select_function_class"]


def _default_candidates(states, d: int) -> tuple:
    """Monomials of degree 1-3 (ridge 1e-3) and the default sparse GP."""
    polys = tuple(RidgeRegression(PolynomialBasis(d, k), 1e-3) for k in (1, 2, 3))
    return polys + (default_function_class(states),)


def select_function_class(
    observations: ArrayOrFrame,
    ts: ArrayOrFrame,
    sigma: RealScalarLike | None = None,
    *,
    candidates: tuple | list | None = None,
    holdout: float = 0.25,
    score: str = "euler",
    key: PRNGKey | None = None,
    em_options: dict | None = None,
    chunk_size: int | None = None,
) -> FunctionClassSelection:
    r"""Pick the drift's function class by the held-out likelihood of the observed increments.

    The intervals are taken in trajectory order and split into a training block (the first
    ``1 - holdout`` of them) and a held-out block (the rest: the last trajectories, or the end of a single
    one). Each candidate is fitted to the training block by `naive_drift`'s increment regression, and scored by
    the Euler log-likelihood of the held-out increments,
    $$\ell = \frac{1}{N_h}\sum_{k\in h}\Big[-\frac{\lVert\Delta y_k - f(y_k)\tau_k\rVert^2}{2\sigma^2\tau_k}
    - \frac d2\log(2\pi\sigma^2\tau_k)\Big];$$
    the simplest candidate (the first, in the order given) whose score is within one standard error of the best
    one's wins (the one-standard-error rule; the error is that of the mean paired difference of the per-interval
    log-likelihoods), so that a large class that only ties a small one is not taken. At a coarse interval the
    Euler likelihood scores the interval-scale (naive) fit, not the drift that `infer_drift` would find, so it
    ranks classes by how well the naive fit generalises, not by the EM's final error: on a double well or a
    rotating well it separates the classes that contain the drift from the linear one at a fine interval, but
    a sparse GP can tie cubic monomials there while giving `infer_drift` a larger error, and at $\tau = 1$ the
    linear class can win.

    ``score="bridge"`` scores what `infer_drift` finds instead: the trajectories are split into training and
    held-out ones (the last ``holdout`` of them; a single trajectory, or too few, is cut in time), each candidate
    is fitted by `infer_drift`'s EM on the training part (a smaller EM: ``em_options``, default 4 iterations, 32
    particles, 10 steps per interval, geodesic guidance; ``sigma=None`` learns $\sigma$ in each fit; the fit runs
    on the observations padded to their size bucket with the training part as each trajectory's count of
    observations, so new sizes of one bucket compile nothing), and scored
    by the SMC estimate of the held-out transition log-likelihood $\log p_{\hat f,\hat\sigma}(y_{k+1}\mid y_k)$
    (look-ahead bridges, the same random numbers for every candidate), with the same one-standard-error rule.
    On a double well and a rotating well at $\tau \in \{0.1, 0.5, 1\}$ it picks a class whose EM drift is
    within 1.2x of the best of linear and cubic monomials, RBF ridge regression and the sparse GP, where the
    Euler score picks the sparse GP at $\tau = 0.5$ (4.5x the best; ``benchmarks/sde_function_class.py``). It costs one
    smaller EM per candidate on three quarters of the data plus one bridge pass. It runs under `jax.jit` and
    `jax.vmap` as well (the split depends on the shapes only); there ``function_class`` is a `SelectedClass`.

    Args:
      observations: as in `naive_drift` (regular or ragged trajectories, a DataFrame, a `SamplePaths`).
      ts: the observation times, as in `naive_drift`.
      sigma: positive diffusion scale, or ``None`` (default) to estimate it with `estimate_diffusion`.
      candidates: feature classes (`RidgeRegression`, `SparseGP`) for states in ``d``, simplest first; default:
        monomials of degree 1, 2 and 3 (`RidgeRegression` with ridge ``1e-3``) and `default_function_class`.
      holdout: the held-out fraction of the intervals (``score="bridge"``: of the trajectories), in ``(0, 1)``.
      score: ``"euler"`` (the naive fits' Euler likelihood, above) or ``"bridge"`` (the EM fits' held-out bridge
        evidence). With ``"bridge"`` the default candidates are, simplest first, linear and cubic monomials
        (ridge ``1e-3``), RBF ridge regression (a grid of 12, 8, 5 or 3 centres per axis in d = 1, 2, 3 or more,
        lengthscale the grid spacing, ridge ``1e-2``) and `default_function_class`.
      key: PRNG key for ``score="bridge"`` (the EM fits and the bridges).
      em_options: for the candidates' fits with ``score="bridge"``, a dict of `infer_drift`'s ``num_steps``,
        ``num_particles``, ``num_time_steps``, ``num_paths``, ``guidance`` and ``lookahead``.
      chunk_size: intervals per chunk of the fits and scores (as `naive_drift`'s and `infer_drift`'s; ``None``:
        from the memory budget).

    Returns:
      `FunctionClassSelection`.

    Raises:
      ValueError: ``holdout`` outside ``(0, 1)``, fewer than two intervals in either block, an empty
        ``candidates``, a candidate for another ``d``, an unknown ``score``, ``score="bridge"`` without ``key``;
        the input errors of `naive_drift`.
      TypeError: a candidate that is not a feature class; ``em_options`` not a dict, or with another key.

    References:
      Maoutsa, arXiv:2512.23566; Frishman & Ronceray, Phys. Rev. X 10, 021009 (2020), arXiv:1809.09650
      (basis choice for force inference).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import select_function_class, simulate
      >>> p = simulate(jax.random.key(0), lambda x: x - x**3, 0.7, jnp.zeros((8, 1)), 20.0, 0.01, save_every=5)
      >>> sel = select_function_class(p, None)
      >>> int(sel.index) in (1, 2, 3), sel.scores.shape   # not the linear class for a double well
      (True, (4,))
    """
    fn = "select_function_class"
    holdout = check_number(holdout, "holdout", where=fn)
    if not 0.0 < holdout < 1.0:
        raise ValueError(f"{fn}: holdout must be in (0, 1), got {holdout=}")
    if score not in ("euler", "bridge"):
        raise ValueError(f"{fn}: score must be 'euler' or 'bridge', got {score=}")
    chunk_size = check_chunk_size(chunk_size, fn)
    if score == "bridge":
        return select_by_bridges(observations, ts, sigma, candidates, holdout, key, em_options, fn, chunk_size)
    states, incs, dts, _, _, _ = interval_data(observations, ts, fn=fn)
    n, d = states.shape
    n_train = int(round(n * (1.0 - holdout)))
    if n_train < 2 or n - n_train < 2:
        raise ValueError(f"{fn}: {n} intervals leave fewer than two in the training or held-out block at "
                         f"{holdout=}; pass more observations")
    sig = as_sigma(sigma, states.dtype, fn, allow_none=True)
    if sig is None:
        sig = estimate_diffusion(observations, ts, chunk_size=chunk_size).sigma
    if candidates is None:
        candidates = _default_candidates(np.asarray(states)[:n_train], d)
    candidates = tuple(candidates)
    if not candidates:
        raise ValueError(f"{fn}: candidates must hold at least one function class")
    for fc in candidates:
        check_function_class(fc, d, fn)
    tr = (jax.device_put(np.asarray(a)[:n_train]) for a in (states, incs, dts))
    xs, dxs, hs = (jax.device_put(np.asarray(a)[n_train:]) for a in (states, incs, dts))
    tr = tuple(tr)
    ll = jnp.stack([_loglik(fit_rows(fc, *tr, sig, chunk_size=chunk_size), xs, dxs, hs, sig,
                            fit_chunk(fc, xs, chunk_size)) for fc in candidates])
    scores, se, index = one_standard_error_choice(ll)
    return FunctionClassSelection(candidates[int(index)], candidates, scores, se, index, sig)


@eqx.filter_jit
def _loglik(drift, x, dx, h, sig, chunk):
    """Each interval's Euler log-likelihood, the drift evaluated on ``chunk`` intervals at a time."""
    d = x.shape[-1]
    s2 = sig**2

    def part(win, valid):
        x, dx, h = win
        r = dx - jax.vmap(drift)(x) * h[:, None]
        return None, -0.5 * jnp.sum(r**2, -1) / (s2 * h) - 0.5 * d * jnp.log(2 * jnp.pi * s2 * h)

    return chunked(part, (x, dx, h), x.shape[0], chunk)[1]
