"""The function-class selection's record and its held-out bridge score (shared by `select_function_class` and
`infer_drift(function_class="auto")`)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._basis import PolynomialBasis, RBFBasis, RidgeRegression, box_grid
from ._bridges import _smc_bridges_jit
from ._data import as_sigma, as_trajectories
from ._estimators import check_function_class, default_function_class

__all__ = ["FunctionClassSelection"]


class FunctionClassSelection(eqx.Module):
    """What `select_function_class` returns.

    Attributes:
      function_class: the chosen candidate (pass it as ``function_class=`` to any drift estimator).
      candidates: all candidates, in the order scored.
      scores: held-out mean log-likelihood per interval of each candidate, shape ``(num_candidates,)``.
      standard_errors: standard error of each score's difference from the best score (0 for the best).
      index: position of the chosen candidate.
      sigma: the diffusion scale used in the likelihood.
    """

    function_class: eqx.Module
    candidates: tuple
    scores: Float[Array, " num_candidates"]
    standard_errors: Float[Array, " num_candidates"]
    index: int = eqx.field(static=True)
    sigma: Float[Array, ""]


def default_candidates(states, d: int) -> tuple:
    """The bridge score's candidates, simplest first: linear and cubic monomials, RBF ridge regression, the sparse
    GP."""
    pts = np.asarray(states).reshape(-1, d)
    k = {1: 12, 2: 8, 3: 5}.get(d, 3)
    width = float(np.mean(pts.max(0) - pts.min(0) + 1.0))
    rbf = RidgeRegression(RBFBasis(box_grid(pts, k, 0.5), width / (k - 1)), 1e-2)
    polys = tuple(RidgeRegression(PolynomialBasis(d, k), 1e-3) for k in (1, 3))
    return polys + (rbf, default_function_class(pts))


def _split_trajectories(observations, ts, holdout: float, fn: str):
    """Training and held-out trajectories: whole trajectories when there are enough of them (the last ones held
    out), else each trajectory cut in time (its last ``holdout`` held out)."""
    trajs, _ = as_trajectories(observations, ts, fn=fn)
    trajs = [(np.asarray(o), np.asarray(t)) for o, t in trajs]
    n_hold = int(round(len(trajs) * holdout))
    if 1 <= n_hold < len(trajs):
        return trajs[: len(trajs) - n_hold], trajs[len(trajs) - n_hold:]
    train, held = [], []
    for o, t in trajs:
        k = int(round(len(t) * (1.0 - holdout)))
        if k < 3 or len(t) - k < 2:
            raise ValueError(f"{fn}: a trajectory of {len(t)} observations cannot be split into a training part "
                             f"(>= 3) and a held-out part (>= 2) at {holdout=}; pass more observations")
        train.append((o[:k], t[:k]))
        held.append((o[k - 1:], t[k - 1:]))
    return train, held


def _as_input(trajs):
    """Trajectories as `infer_drift` takes them: an array when they share one time grid, else lists."""
    if len({len(t) for _, t in trajs}) == 1 and all(np.array_equal(t, trajs[0][1]) for _, t in trajs):
        return np.stack([o for o, _ in trajs]), trajs[0][1]
    return [o for o, _ in trajs], [t for _, t in trajs]


def select_by_bridges(infer_drift, observations, ts, sigma, candidates, holdout, key, em_options, fn):
    """`select_function_class` with ``score="bridge"``; ``infer_drift`` is passed in (the EM module calls this
    for ``function_class="auto"``, so this module does not import it)."""
    if key is None:
        raise ValueError(f"{fn}: score='bridge' needs a PRNG key (key=jax.random.key(0)) for the EM fits and the "
                         "bridges")
    opts = dict(num_steps=4, num_particles=32, num_time_steps=10, guidance="geodesic")
    if em_options is not None:
        if not isinstance(em_options, dict):
            raise TypeError(f"{fn}: em_options must be a dict of infer_drift options, got {em_options!r}")
        opts.update(em_options)
    train, held = _split_trajectories(observations, ts, holdout, fn)
    d = train[0][0].shape[-1]
    sig = as_sigma(sigma, jnp.zeros(()).dtype, fn, allow_none=True)
    if candidates is None:
        candidates = default_candidates(np.concatenate([o for o, _ in train]), d)
    candidates = tuple(candidates)
    if not candidates:
        raise ValueError(f"{fn}: candidates must hold at least one function class")
    for fc in candidates:
        check_function_class(fc, d, fn)
    starts = np.concatenate([o[:-1] for o, _ in held])
    ends = np.concatenate([o[1:] for o, _ in held])
    taus = np.concatenate([np.diff(t) for _, t in held])
    starts, ends, taus = (jax.device_put(a) for a in (starts, ends, taus))
    obs_tr, ts_tr = _as_input(train)
    k_fit, k_score = jax.random.split(key)
    K = int(opts["num_time_steps"])
    targets = jnp.zeros((starts.shape[0], K + 1, d), starts.dtype)
    ll, sigmas = [], []
    for fc in candidates:
        sol = infer_drift(k_fit, obs_tr, ts_tr, sigma, function_class=fc, throw=False, **opts)
        # the same bridge randomness for every candidate (common random numbers sharpen the paired differences)
        bs = _smc_bridges_jit(k_score, sol.drift, sol.sigma.astype(starts.dtype), starts, ends, taus, targets,
                              jnp.zeros((), starts.dtype), int(opts["num_particles"]), K, 1, True)
        ll.append(np.asarray(jnp.where(bs.degenerate, -jnp.inf, bs.log_evidence), np.float64))
        sigmas.append(float(sol.sigma))
    ll = np.stack(ll)
    ll = np.where(np.isfinite(ll), ll, -1e30)
    scores = ll.mean(1)
    best = int(np.argmax(scores))
    diff = ll - ll[best]
    se = np.nan_to_num(diff.std(1, ddof=1) / np.sqrt(ll.shape[1]), nan=np.inf)
    index = int(np.flatnonzero(scores >= scores[best] - se)[0])
    dtype = starts.dtype
    out_sig = jnp.asarray(sigmas[index], dtype) if sig is None else jnp.asarray(sig, dtype)
    return FunctionClassSelection(candidates[index], candidates, jnp.asarray(scores, dtype), jnp.asarray(se, dtype),
                                  index, out_sig)
