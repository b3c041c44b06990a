"""The function-class selection's record and its held-out bridge score (shared by `select_function_class` and
`infer_drift(function_class="auto")`).

The score runs on concrete data and inside a caller's `jax.jit`/`jax.vmap` alike: the split into training and
held-out intervals depends on shapes only, the candidates are built from the data's bounding box with `jnp`, and
the choice is an index array. On concrete data the chosen candidate itself is returned; under a transformation,
a `SelectedClass` that carries every candidate and the traced index.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._checks import is_traced
from ._basis import LinearDrift, PolynomialBasis, RBFBasis, SelectedBasis, box_grid
from ._bridges import bridges_from_keys
from ._chunks import chunked
from ._classes import RidgeRegression, _fit_inputs
from ._data import ArrayOrFrame
from ._estimators import _intervals, check_function_class, default_function_class, fit_drift

__all__ = ["FunctionClassSelection", "SelectedClass"]


class FunctionClassSelection(eqx.Module):
    """What `select_function_class` returns.

    Attributes:
      function_class: the chosen candidate (pass it as ``function_class=`` to any drift estimator).
      candidates: all candidates, in the order scored.
      scores: held-out mean log-likelihood per interval of each candidate, shape ``(num_candidates,)``.
      scores_se: standard error of each score's difference from the best score (0 for the best).
      index: position of the chosen candidate, an integer array of shape ``()`` (traced under `jax.jit`).
      sigma: the diffusion scale used in the likelihood.

    Under `jax.jit`/`jax.vmap` the choice is not known while tracing, so ``function_class`` is a `SelectedClass`
    holding every candidate and ``index``; on concrete data it is the chosen candidate itself.
    """

    function_class: eqx.Module
    candidates: tuple
    scores: Float[Array, " num_candidates"]
    scores_se: Float[Array, " num_candidates"]
    index: Int[Array, ""]
    sigma: Float[Array, ""]


class SelectedClass(eqx.Module):
    r"""The candidate function class number ``index`` of ``candidates``, where ``index`` may be traced.

    Fitting runs the chosen candidate's fit only (``lax.switch``) and returns a `LinearDrift` on a
    `SelectedBasis`: the chosen class's weights $W_i$ (and posterior covariance $C_i$) padded with zeros to the
    largest candidate's size, so that $f(x) = W_i^\top\phi_i(x)$ whatever the index, with one output shape.
    `infer_drift(function_class="auto")` fits one of these when it selects inside a compiled program.

    Attributes:
      candidates: feature classes (`RidgeRegression`, `SparseGP`) for states in one ``d``.
      index: the chosen one, an integer array of shape ``()``.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import PolynomialBasis, RidgeRegression, SelectedClass
      >>> x = jax.random.normal(jax.random.key(0), (400, 1))
      >>> lin, cub = RidgeRegression(PolynomialBasis(1, 1), 1e-6), RidgeRegression(PolynomialBasis(1, 3), 1e-6)
      >>> f = jax.jit(lambda i: SelectedClass((lin, cub), i).fit(x, -0.1 * x, 0.1, 0.1))(0)
      >>> f.weights.shape, [round(v, 2) for v in f(jnp.array([0.5])).tolist()]
      ((4, 1), [-0.5])
    """

    candidates: tuple
    index: Int[Array, ""]

    def __init__(self, candidates, index):
        candidates = tuple(candidates)
        if not candidates:
            raise ValueError("SelectedClass: candidates must hold at least one function class")
        self.candidates = candidates
        self.index = jnp.asarray(index, jnp.int32)

    @property
    def basis(self) -> SelectedBasis:
        """The candidates' bases, chosen by ``index``."""
        return SelectedBasis(tuple(c.basis for c in self.candidates), self.index)

    def fit(self, states: ArrayOrFrame, increments: ArrayOrFrame, dt: ArrayOrFrame, sigma, weights=None
            ) -> LinearDrift:
        """The chosen candidate's fit (inputs as `RidgeRegression.fit`), padded to the largest candidate's size.

        Raises:
          ValueError: as `RidgeRegression.fit`.
        """
        return self._fit(*_fit_inputs(self.basis, states, increments, dt, sigma, weights, "SelectedClass.fit"))

    def _fit(self, states, increments, dt, sigma, weights=None) -> LinearDrift:
        """`fit` without the input checks."""
        basis = self.basis
        m = basis.num_features
        shapes = [jax.eval_shape(lambda c=c: fit_drift(c, states, increments, dt, sigma, weights))
                  for c in self.candidates]
        has_cov = all(s.covariance is not None and s.covariance.ndim == 2 for s in shapes)

        def branch(c):
            def f(args):
                lin = fit_drift(c, *args)
                k = lin.weights.shape[0]
                W = jnp.pad(lin.weights, ((0, m - k), (0, 0)))
                C = jnp.pad(lin.covariance, ((0, m - k), (0, m - k))) if has_cov else None
                return W, C
            return f

        args = (states, increments, dt, sigma) + (() if weights is None else (weights,))
        W, C = jax.lax.switch(jnp.clip(self.index, 0, len(self.candidates) - 1),
                              [branch(c) for c in self.candidates], args)
        return LinearDrift(basis, W, covariance=C)

    def _from_normal_equations(self, G, B, sigma) -> LinearDrift:
        """The chosen candidate's fit from the normal equations of the `SelectedBasis` features (zero outside the
        chosen candidate's block), padded as `fit` pads it."""
        basis = self.basis
        m = basis.num_features

        def branch(c, k):
            def f(args):
                G, B, sigma = args
                lin = c._from_normal_equations(G[:k, :k], B[:k], sigma)
                return (jnp.pad(lin.weights, ((0, m - k), (0, 0))),
                        jnp.pad(lin.covariance, ((0, m - k), (0, m - k))))
            return f

        W, C = jax.lax.switch(jnp.clip(self.index, 0, len(self.candidates) - 1),
                              [branch(c, k) for c, k in zip(self.candidates, basis.sizes, strict=True)], (G, B, sigma))
        return LinearDrift(basis, W, covariance=C)

    def __repr__(self) -> str:
        return f"SelectedClass(index={self.index!r}, candidates={self.candidates!r})"


def default_candidates(states, d: int) -> tuple:
    """The bridge score's candidates, simplest first: linear and cubic monomials, RBF ridge regression, the sparse
    GP (built from the states' bounding box, traced or concrete)."""
    xp = jnp if is_traced(states) else np
    pts = xp.asarray(states).reshape(-1, d)
    k = {1: 12, 2: 8, 3: 5}.get(d, 3)
    box = xp.stack([pts.min(0), pts.max(0)])
    width = xp.mean(box[1] - box[0] + 1.0)
    rbf = RidgeRegression(RBFBasis(box_grid(box, k, 0.5), width / (k - 1)), 1e-2)
    polys = tuple(RidgeRegression(PolynomialBasis(d, k), 1e-3) for k in (1, 3))
    return polys + (rbf, default_function_class(box))


def _split_counts(lengths, n_pad: int, holdout: float, fn: str):
    """The training part as each trajectory's count of real observations, and the held-out intervals' flat
    indices into the ``(n_traj, n_pad - 1)`` padded intervals with their weights (1 real, 0 padding).

    Whole trajectories are held out when there are enough of them (the last ones), else each trajectory is cut
    in time (its last ``holdout`` held out, the cut observation shared). The split depends on the lengths only
    (host integers), so traced and concrete data split alike; the held-out indices are padded to half the
    padded interval count, a size fixed by the size bucket, so that new lengths reuse the compiled score.
    """
    lengths = np.asarray(lengths)
    n_traj = len(lengths)
    n_hold = int(round(n_traj * holdout))
    held = []
    if 1 <= n_hold < n_traj:
        train = lengths.copy()
        train[n_traj - n_hold:] = 1  # no interval of a held-out trajectory is fitted
        for i in range(n_traj - n_hold, n_traj):
            held.extend(i * (n_pad - 1) + np.arange(lengths[i] - 1))
    else:
        train = np.round(lengths * (1.0 - holdout)).astype(int)
        for i, (n, k) in enumerate(zip(lengths, train)):
            if k < 3 or n - k < 2:
                raise ValueError(f"{fn}: a trajectory of {n} observations cannot be split into a training part "
                                 f"(>= 3) and a held-out part (>= 2) at {holdout=}; pass more observations")
            held.extend(i * (n_pad - 1) + np.arange(k - 1, n - 1))
    size = max(len(held), n_traj * (n_pad - 1) // 2)
    index = np.zeros(size, np.int32)
    index[: len(held)] = held
    weight = np.zeros(size, np.float32)
    weight[: len(held)] = 1.0
    return train.astype(np.int32), index, weight


def select_candidates(fit, obs_p, ts_p, lengths, sigma, candidates, holdout, key, num_particles, num_time_steps,
                      fn, chunk=None):
    """The held-out bridge score of each candidate and the one-standard-error choice, on observations padded to
    their size bucket (concrete or traced). ``fit(fc, n_train, key)`` fits candidate ``fc`` to each trajectory's
    first ``n_train`` observations and returns ``(drift, sigma)``; ``sigma`` is the given diffusion scale (or
    ``None`` when each fit estimates its own). ``chunk(fc)``: held-out intervals scored at once for candidate
    ``fc`` (``None``: all)."""
    n_traj, n_pad, d = obs_p.shape
    train, index, weight = _split_counts(lengths, n_pad, holdout, fn)
    dtype = obs_p.dtype
    states, incs, taus = _intervals(obs_p, ts_p)
    if candidates is None:
        # the training observations' bounding box: padding repeats a real observation, so it cannot widen it
        real = (np.arange(n_pad)[None] < train[:, None]).reshape(-1, 1)
        pts = obs_p.reshape(-1, d)
        box = jnp.stack([jnp.min(jnp.where(real, pts, jnp.inf), 0), jnp.max(jnp.where(real, pts, -jnp.inf), 0)])
        candidates = default_candidates(box if is_traced(box) else np.asarray(box), d)
    candidates = tuple(candidates)
    if not candidates:
        raise ValueError(f"{fn}: candidates must hold at least one function class")
    for fc in candidates:
        check_function_class(fc, d, fn)
    starts, ends, hs = states[index], (states + incs)[index], taus[index]
    w = jnp.asarray(weight, dtype)
    k_fit, k_score = jax.random.split(key)
    n_held = index.shape[0]
    targets = jnp.zeros((n_held, num_time_steps + 1, d), dtype)
    # the same bridge randomness for every candidate (common random numbers sharpen the paired differences)
    keys = jax.random.split(k_score, n_held)
    ll, sigmas = [], []
    n_train = jnp.asarray(train)
    for fc in candidates:
        drift, sig = fit(fc, n_train, k_fit)
        ll.append(_held_out_evidence(keys, drift, sig.astype(dtype), starts, ends, hs, targets, num_particles,
                                     num_time_steps, n_held if chunk is None else min(n_held, chunk(fc))))
        sigmas.append(sig.astype(dtype))
    scores, se, choice = one_standard_error_choice(jnp.stack(ll), w)
    out_sig = jnp.stack(sigmas)[choice] if sigma is None else jnp.asarray(sigma, dtype)
    chosen = SelectedClass(candidates, choice) if is_traced(choice) else candidates[int(choice)]
    return FunctionClassSelection(chosen, candidates, scores, se, choice, out_sig)


@eqx.filter_jit
def _held_out_evidence(keys, drift, sig, starts, ends, hs, targets, num_particles, num_time_steps, chunk):
    """Each held-out interval's bridge evidence (look-ahead weights, one path), ``-inf`` for a collapsed bridge;
    the bridges run ``chunk`` intervals at a time."""
    def score(win, valid):
        bs = bridges_from_keys(*win[:1], drift, sig, *win[1:], jnp.zeros((), sig.dtype), num_particles,
                               num_time_steps, 1, True)
        return None, jnp.where(bs.degenerate, -jnp.inf, bs.log_evidence)

    return chunked(score, (keys, starts, ends, hs, targets), keys.shape[0], chunk)[1]


@jax.jit
def one_standard_error_choice(ll, weight=None):
    """Scores, standard errors and the one-standard-error choice from per-interval log-likelihoods ``(C, N)``
    (intervals of ``weight`` 0 left out): the first candidate whose mean is within one standard error (of the
    paired difference) of the best."""
    w = jnp.ones(ll.shape[1], ll.dtype) if weight is None else weight.astype(ll.dtype)
    n = jnp.sum(w)
    ll = jnp.where(jnp.isfinite(ll), ll, jnp.asarray(-1e30, ll.dtype)) * w  # a collapsed bridge scores -1e30
    scores = ll.sum(1) / n
    best = jnp.argmax(scores)
    diff = ll - ll[best]
    mean = diff.sum(1, keepdims=True) / n
    var = jnp.sum(w * (diff - mean) ** 2, 1) / (n - 1)
    se = jnp.nan_to_num(jnp.sqrt(var / n), nan=jnp.inf)
    index = jnp.argmax(scores >= scores[best] - se).astype(jnp.int32)
    return scores, se, index
