"""Drift estimators from sparse observations: naive increment regression, the conservative (score)
estimator, and EM with SMC bridges guided by observation geodesics (Maoutsa, arXiv:2512.23566)."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from .._types import PRNGKey
from ._basis import LinearDrift, RBFBasis, SparseGP, _solve_psd, box_grid
from ._bridges import smc_bridges
from ._geodesic import geodesic_targets

__all__ = [
    "DriftEstimate",
    "EMHistory",
    "DriftInference",
    "RESULTS",
    "default_function_class",
    "naive_drift",
    "conservative_drift",
    "infer_drift",
]


class RESULTS(eqx.Enumeration):
    """Outcome codes of :func:`infer_drift`."""

    successful = ""
    degenerate_bridges = "some bridges collapsed (all weights zero); they were left out of the M-step"
    nonfinite_drift = "the fitted drift weights are not finite"


class DriftEstimate(eqx.Module):
    """Result of :func:`naive_drift` / :func:`conservative_drift`.

    Attributes:
      drift: the fitted drift, a callable ``(d,) -> (d,)``.
      method: ``"naive"`` or ``"conservative"``.
      n_samples: number of increments (naive) or states (conservative) used.
    """

    drift: LinearDrift
    method: str = eqx.field(static=True)
    n_samples: int = eqx.field(static=True)


class EMHistory(eqx.Module):
    """Per-iteration record of :func:`infer_drift` (leading axis ``n_iters``).

    Attributes:
      loss: ``-mean_k log p_hat(y_{k+1} | y_k)``, the SMC estimate of the per-interval negative log
        likelihood of the observations under the drift used for that iteration's bridges (with geodesic
        guidance it includes the path-cost tilt).
      ess_median: median over intervals of the final effective sample size, as a fraction of ``n_particles``.
      ess_min: smallest final ESS fraction over intervals.
      drift_change: RMS change of the drift on the observations, ``sqrt(mean ||f_new(y) - f_old(y)||^2)``.
      n_degenerate: number of collapsed bridges.
      weights: drift weights after each iteration, shape ``(n_iters, m, d)``.
    """

    loss: Float[Array, " n_iters"]
    ess_median: Float[Array, " n_iters"]
    ess_min: Float[Array, " n_iters"]
    drift_change: Float[Array, " n_iters"]
    n_degenerate: Array
    weights: Float[Array, "n_iters m d"]


class DriftInference(eqx.Module):
    """Result of :func:`infer_drift`.

    Attributes:
      drift: the final drift (callable).
      initial_drift: the EM starting point (the naive estimate unless ``init`` was given).
      history: :class:`EMHistory`.
      ess: final-iteration ESS fraction per interval, shape ``(n_intervals,)``.
      degenerate: final-iteration collapsed-bridge flags per interval, shape ``(n_intervals,)``.
      result: :class:`RESULTS` code.
    """

    drift: LinearDrift
    initial_drift: LinearDrift
    history: EMHistory
    ess: Float[Array, " n_int"]
    degenerate: Bool[Array, " n_int"]
    result: RESULTS

    def drift_at(self, iteration: int) -> LinearDrift:
        """The drift after EM iteration ``iteration`` (0-based); ``-1`` is the final one."""
        return LinearDrift(self.drift.basis, self.history.weights[iteration])


# --------------------------------------------------------------------------- validation


def _check_inputs(observations, ts, sigma):
    obs = jnp.asarray(observations)
    if not jnp.issubdtype(obs.dtype, jnp.floating):
        raise TypeError(f"observations must be floating point, got {obs.dtype=}")
    if obs.ndim == 2:
        obs = obs[None]
    if obs.ndim != 3:
        raise ValueError(f"observations must have shape (n_obs, d) or (n_traj, n_obs, d), got {obs.shape=}")
    if obs.shape[1] < 2:
        raise ValueError(f"need at least two observations per trajectory, got {obs.shape[1]=}")
    ts = jnp.asarray(ts)
    if ts.shape != (obs.shape[1],):
        raise ValueError(f"ts must have shape (n_obs,) = ({obs.shape[1]},), got {ts.shape=}")
    ts = ts.astype(obs.dtype)
    if isinstance(sigma, int | float) and not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma=}")
    sig = jnp.asarray(sigma, obs.dtype)
    if sig.shape != ():
        raise ValueError(f"sigma must be a scalar (isotropic noise), got {sig.shape=}")
    obs = eqx.error_if(obs, ~jnp.all(jnp.isfinite(obs)), "observations contain NaN or inf")
    ts = eqx.error_if(ts, ~jnp.all(jnp.diff(ts) > 0), "ts must be strictly increasing")
    sig = eqx.error_if(sig, ~(sig > 0), "sigma must be positive")
    return obs, ts, sig


def default_function_class(
    observations: Float[Array, "*batch d"], n_per_dim: int = 12, lengthscale_factor: float = 0.2
) -> SparseGP:
    """The default drift class: a :class:`SparseGP` with ``n_per_dim ** d`` inducing points on a grid over the
    observation box widened by 0.5, and lengthscale ``lengthscale_factor`` times the mean box width."""
    pts = jnp.asarray(observations).reshape(-1, jnp.shape(observations)[-1])
    width = jnp.mean(jnp.max(pts, 0) - jnp.min(pts, 0))
    return SparseGP(RBFBasis(box_grid(pts, n_per_dim, pad=0.5), lengthscale_factor * width))


def _intervals(obs, ts):
    d = obs.shape[-1]
    states = obs[:, :-1].reshape(-1, d)
    incs = (obs[:, 1:] - obs[:, :-1]).reshape(-1, d)
    dts = jnp.broadcast_to(jnp.diff(ts), obs.shape[:1] + (ts.shape[0] - 1,)).reshape(-1)
    return states, incs, dts


# --------------------------------------------------------------------------- estimators


def naive_drift(
    observations: Float[Array, "*batch n_obs d"],
    ts: Float[Array, " n_obs"],
    sigma: float | Float[Array, ""],
    *,
    function_class: eqx.Module | None = None,
) -> DriftEstimate:
    r"""Increment regression at the observation interval (the "Gaussian likelihood" baseline).

    Fits :math:`f` to :math:`(y_{k+1} - y_k)/\tau_k` on :math:`y_k` under the Euler path likelihood (see
    :class:`SparseGP`). Consistent as :math:`\tau \to 0`; for linear drift it converges to
    :math:`(e^{A\tau} - I)/\tau` and is biased for large ``tau``. Uneven intervals are supported.

    Args:
      observations: shape ``(n_obs, d)`` (one trajectory) or ``(n_traj, n_obs, d)``.
      ts: strictly increasing observation times shared by all trajectories, shape ``(n_obs,)``.
      sigma: positive diffusion scale.
      function_class: a :class:`SparseGP` or :class:`RidgeRegression`; default :func:`default_function_class`.

    Returns:
      :class:`DriftEstimate`.

    Raises:
      ValueError: fewer than two observations, shape mismatch, ``sigma <= 0``; at run time (``eqx.error_if``)
        NaN observations or non-increasing times.
      TypeError: non-floating observations.

    References:
      Maoutsa, arXiv:2512.23566.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import naive_drift
      >>> y = jnp.cumsum(0.1 * jax.random.normal(jax.random.key(0), (500, 2)), axis=0)  # f = 0
      >>> est = naive_drift(y, jnp.arange(500.0) * 0.01, 1.0)
      >>> est.method, est.drift(jnp.zeros(2)).shape
      ('naive', (2,))
    """
    obs, ts, sig = _check_inputs(observations, ts, sigma)
    fc = default_function_class(obs) if function_class is None else function_class
    states, incs, dts = _intervals(obs, ts)
    return DriftEstimate(fc.fit(states, incs, dts, sig), "naive", int(states.shape[0]))


def conservative_drift(
    observations: Float[Array, "*batch d"],
    sigma: float | Float[Array, ""],
    *,
    function_class: eqx.Module | None = None,
    regularization: float = 1e-3,
) -> DriftEstimate:
    r"""Conservative drift :math:`\hat f = (\sigma^2/2)\nabla\log\hat p` from a score estimate of the states.

    The score :math:`\psi = W^\top\phi` is fitted by (Hyvärinen) score matching in the same feature space,
    :math:`\min_W \frac1n\sum_i[\lVert\psi(y_i)\rVert^2 + 2\nabla\cdot\psi(y_i)] + C\,\mathrm{tr}(W^\top P W)`,
    i.e. :math:`W = -(\Phi^\top\Phi/n + C P)^{-1} \frac1n\sum_i J_\phi(y_i)` with
    :math:`(J_\phi)_{jk} = \partial_k\phi_j`. It uses only the invariant density, so it is exact for gradient
    drifts and misses every divergence-free (rotational) part.

    Args:
      observations: states, any leading shape, last axis ``d`` (time order is ignored).
      sigma: positive diffusion scale.
      function_class: feature class providing ``basis`` and ``penalty`` (default :func:`default_function_class`).
      regularization: ``C`` above.

    Returns:
      :class:`DriftEstimate` with method ``"conservative"``.

    Raises:
      ValueError: ``sigma <= 0`` or fewer than two states; NaN states at run time.

    References:
      Hyvärinen, JMLR 6 (2005); Maoutsa, Reich & Opper, Entropy 22:802 (2020), arXiv:2005.06400.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import conservative_drift
      >>> y = jax.random.normal(jax.random.key(0), (2000, 2)) * 0.5   # N(0, 0.25 I): score -4x
      >>> est = conservative_drift(y, 1.0)                              # drift (1/2) score = -2x
      >>> [round(v, 1) for v in est.drift(jnp.array([0.5, 0.0])).tolist()]
      [-1.0, 0.0]
    """
    pts = jnp.asarray(observations)
    if pts.ndim < 2 or pts.reshape(-1, pts.shape[-1]).shape[0] < 2:
        raise ValueError(f"need at least two states of shape (..., d), got {pts.shape=}")
    pts = pts.reshape(-1, pts.shape[-1])
    dummy_ts = jnp.arange(pts.shape[0], dtype=pts.dtype)
    obs, _, sig = _check_inputs(pts, dummy_ts, sigma)
    pts = obs[0]
    fc = default_function_class(pts) if function_class is None else function_class
    drift = _score_fit(fc.basis, fc.penalty(pts.dtype), pts, sig, regularization)
    return DriftEstimate(drift, "conservative", int(pts.shape[0]))


@eqx.filter_jit
def _score_fit(basis, P, pts, sig, regularization):
    n = pts.shape[0]
    phi = jax.vmap(basis)(pts)
    jac = jnp.sum(jax.vmap(jax.jacfwd(basis))(pts), axis=0)  # (m, d)
    G = phi.T @ phi / n + regularization * P
    W = -_solve_psd(G, jac / n)
    return LinearDrift(basis, 0.5 * sig**2 * W)


def _progress_print(it, loss, ess, change, ndeg):
    print(
        f"[infer_drift] iter {int(it) + 1}: loss={float(loss):.4f} ess_median={float(ess):.2f} "
        f"drift_change={float(change):.4f} degenerate={int(ndeg)}",
        flush=True,
    )


def infer_drift(
    key: PRNGKey,
    observations: Float[Array, "*batch n_obs d"],
    ts: Float[Array, " n_obs"],
    sigma: float | Float[Array, ""],
    *,
    guidance: str = "geodesic",
    strength: float = 5.0,
    n_iters: int = 8,
    n_particles: int = 128,
    n_steps: int = 40,
    n_paths: int = 4,
    function_class: eqx.Module | None = None,
    init: LinearDrift | None = None,
    n_nodes: int = 300,
    k_neighbors: int = 10,
    orientation_eps: float | None = None,
    lookahead: bool = False,
    progress: bool = False,
    throw: bool = True,
) -> DriftInference:
    r"""EM drift inference with SMC bridges between every pair of consecutive observations.

    Start from the naive estimate :math:`\hat f_0`. Each iteration (a ``lax.scan`` step) draws, for all
    intervals at once (``vmap``), ``n_paths`` bridge paths from an SMC sampler targeting

    .. math::
        q(x_{[t_k, t_{k+1}]}) \propto p_{\hat f_a}(x \mid y_k, y_{k+1})
        \exp\!\Big(-\beta \int \lVert x_t - \gamma_k(t)\rVert\,dt\Big),

    where :math:`\gamma_k` is the geodesic between :math:`y_k` and :math:`y_{k+1}` under the observation
    metric (``guidance="geodesic"``; ``"none"`` sets :math:`\beta = 0`), then refits the drift to the
    increments of the augmented paths under the path likelihood (M-step, no divergence term needed because the
    paths are stochastic). Uneven observation intervals are supported (each bridge uses ``tau_k / n_steps``).

    Args:
      key: PRNG key.
      observations: shape ``(n_obs, d)`` or ``(n_traj, n_obs, d)``.
      ts: strictly increasing shared observation times, shape ``(n_obs,)``.
      sigma: known positive diffusion scale.
      guidance: ``"geodesic"`` or ``"none"``.
      strength: guidance strength ``beta`` per unit time.
      n_iters: EM iterations.
      n_particles: SMC particles per interval.
      n_steps: bridge time steps per interval.
      n_paths: paths drawn per interval for the M-step.
      function_class: drift class (default :func:`default_function_class`).
      init: starting drift (default: the naive estimate in the same class).
      n_nodes: geodesic graph size (see :func:`geodesic_targets`).
      k_neighbors: geodesic kNN graph degree.
      orientation_eps: geodesic orientation mask radius (see :func:`geodesic_targets`; ``None`` = off).
      lookahead: use the look-ahead twisted SMC weights (see :func:`smc_bridges`).
      progress: print one line per iteration (``jax.debug.callback``) — useful for long runs.
      throw: raise if the drift becomes non-finite (otherwise check ``result``).

    Returns:
      :class:`DriftInference` with the final drift, the EM history and per-interval bridge diagnostics.
      Collapsed bridges are counted in ``history.n_degenerate``, flagged in ``degenerate`` and given zero
      weight in the M-step; ``result`` is then ``RESULTS.degenerate_bridges``.

    Raises:
      ValueError: bad ``guidance``, sizes, shapes or ``sigma``; at run time NaN observations or
        non-increasing times.

    References:
      Maoutsa, "From Geometry to Dynamics: Learning Overdamped Langevin Dynamics from Sparse Observations
      with Geometric Constraints", ICML 2026, arXiv:2512.23566.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import RESULTS, infer_drift
      >>> y = jnp.cumsum(0.3 * jax.random.normal(jax.random.key(0), (30, 2)), axis=0)  # a random walk
      >>> ts = jnp.arange(30.0)
      >>> res = infer_drift(jax.random.key(1), y, ts, 0.3, guidance="none", n_iters=2,
      ...                   n_particles=8, n_steps=4)
      >>> res.history.loss.shape, bool(res.result == RESULTS.successful)
      ((2,), True)
    """
    if guidance not in ("geodesic", "none"):
        raise ValueError(f"guidance must be 'geodesic' or 'none', got {guidance=}")
    for name, v in (("n_iters", n_iters), ("n_particles", n_particles), ("n_paths", n_paths)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {name}={v}")
    if not isinstance(n_steps, int) or n_steps < 2:
        raise ValueError(f"n_steps must be an integer >= 2, got {n_steps=}")
    if not strength >= 0:
        raise ValueError(f"strength must be non-negative, got {strength=}")
    obs, ts, sig = _check_inputs(observations, ts, sigma)
    fc = default_function_class(obs) if function_class is None else function_class
    n_traj, n_obs, d = obs.shape
    # The guidance enters the compiled EM loop only as data (targets, beta): plain and geodesic runs of the
    # same size share one compiled function (beta = 0 makes the path cost vanish).
    if guidance == "geodesic":
        targets = geodesic_targets(obs, n_steps, n_nodes=n_nodes, k_neighbors=k_neighbors,
                                   orientation_eps=orientation_eps)
        beta = jnp.asarray(strength, obs.dtype)
    else:
        targets = jnp.zeros((n_traj, n_obs - 1, n_steps + 1, d), obs.dtype)
        beta = jnp.zeros((), obs.dtype)
    targets = targets.reshape(n_traj * (n_obs - 1), n_steps + 1, d)
    return _infer_core(
        key, obs, ts, sig, fc, init, targets, beta, n_iters, n_particles, n_steps, n_paths, lookahead, progress,
        throw,
    )


@eqx.filter_jit
def _infer_core(
    key, obs, ts, sig, fc, init, targets, beta, n_iters, n_particles, n_steps, n_paths, lookahead, progress,
    throw,
):
    d = obs.shape[-1]
    states, incs, dts = _intervals(obs, ts)
    if init is None:
        init = fc.fit(states, incs, dts, sig)
    basis = init.basis
    starts = states
    ends = states + incs
    ypts = obs.reshape(-1, d)

    def em_step(carry, it):
        key, W = carry
        key, kb = jax.random.split(key)
        drift = LinearDrift(basis, W)
        bs = smc_bridges(kb, drift, sig, starts, ends, dts, targets, beta,
                         n_particles=n_particles, n_steps=n_steps, n_paths=n_paths, lookahead=lookahead)
        p = bs.paths  # (B, R, K+1, d)
        x = p[:, :, :-1].reshape(-1, d)
        dx = jnp.diff(p, axis=2).reshape(-1, d)
        h = jnp.broadcast_to((dts / n_steps)[:, None, None], p.shape[:2] + (n_steps,)).reshape(-1)
        wint = jnp.where(bs.degenerate, 0.0, 1.0 / n_paths).astype(obs.dtype)
        w = jnp.broadcast_to(wint[:, None, None], p.shape[:2] + (n_steps,)).reshape(-1)
        new = fc.fit(x, dx, h, sig, weights=w)
        Wn = new.weights
        change = jnp.sqrt(jnp.mean(jnp.sum((jax.vmap(new)(ypts) - jax.vmap(drift)(ypts)) ** 2, -1)))
        valid = ~bs.degenerate
        n_valid = jnp.maximum(jnp.sum(valid), 1).astype(obs.dtype)
        loss = -jnp.sum(jnp.where(valid, bs.log_evidence, 0.0)) / n_valid
        ess_frac = bs.ess / n_particles
        ess_med = jnp.median(ess_frac)
        ndeg = jnp.sum(bs.degenerate)
        if progress:
            jax.debug.callback(_progress_print, it, loss, ess_med, change, ndeg)
        out = (loss, ess_med, jnp.min(ess_frac), change, ndeg, Wn, ess_frac, bs.degenerate)
        return (key, Wn), out

    (_, W), outs = jax.lax.scan(em_step, (key, init.weights), jnp.arange(n_iters))
    loss, ess_med, ess_min, change, ndeg, Ws, ess_all, deg_all = outs
    history = EMHistory(loss, ess_med, ess_min, change, ndeg, Ws)
    finite = jnp.all(jnp.isfinite(W))
    result = RESULTS.where(finite, RESULTS.successful, RESULTS.nonfinite_drift)
    result = RESULTS.where(finite & (ndeg[-1] > 0), RESULTS.degenerate_bridges, result)
    if throw:
        W = eqx.error_if(W, ~finite, "infer_drift: the fitted drift became non-finite")
    return DriftInference(LinearDrift(basis, W), init, history, ess_all[-1], deg_all[-1], result)
