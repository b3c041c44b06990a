"""Drift estimators from sparse observations: naive increment regression, the conservative (score)
estimator, and EM with SMC bridges guided by observation geodesics (Maoutsa, arXiv:2512.23566)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._checks import is_traced
from .._types import RealScalarLike
from ._basis import LinearDrift, RBFBasis, _input_dim, box_grid
from ._chunks import check_chunk_size, chunk_rows, chunked
from ._classes import SparseGP, _solve_psd, normal_equations
from ._data import (
    ArrayOrFrame,
    as_observations,
    as_sigma,
    as_states,
    as_trajectories,
    check_count,
    check_scale,
    interval_data,
    is_ragged,
)
from ._diffusion import estimate_diffusion

__all__ = [
    "DriftEstimate",
    "default_function_class",
    "naive_drift",
    "conservative_drift",
]


class DriftEstimate(eqx.Module):
    """Result of `naive_drift` / `conservative_drift`.

    Attributes:
      drift: the fitted drift, a callable ``(d,) -> (d,)``.
      method: ``"naive"`` or ``"conservative"``.
      num_samples: number of increments (naive) or states (conservative) used.
      sigma: the diffusion scale used: the given one, or with ``sigma=None`` the estimate of
        `estimate_diffusion` (scalar model).
    """

    drift: LinearDrift
    method: str = eqx.field(static=True)
    num_samples: int = eqx.field(static=True)
    sigma: Float[Array, ""]

    @property
    def names(self) -> tuple[str, ...] | None:
        """Coordinate names carried from a DataFrame (``drift.names``), or ``None``."""
        return self.drift.names

    def __repr__(self) -> str:
        return f"DriftEstimate(method={self.method!r}, num_samples={self.num_samples}, drift={self.drift!r})"


# --------------------------------------------------------------------------- validation


def _check_inputs(observations, ts, sigma, fn="naive_drift"):
    """``(obs (n_traj, n_obs, d), ts, sigma)`` from what the user holds (`icmlx.sde._data`)."""
    obs, ts, sig, _ = as_observations(observations, ts, sigma, fn=fn)
    return obs, ts, sig


def check_function_class(fc, d: int, fn: str, needs=("fit",)):
    """A ``TypeError``/``ValueError`` naming ``function_class`` unless it is a feature class for states in ``d``."""
    if not all(callable(getattr(fc, attr, None)) for attr in needs) or not hasattr(fc, "basis"):
        raise TypeError(f"{fn}: function_class must be a SparseGP or RidgeRegression (an object with a basis and "
                        f"{', '.join(needs)}), got {fc!r}")
    k = _input_dim(fc.basis)
    if k is not None and k != d:
        raise ValueError(f"{fn}: function_class takes states with d = {k}, but the observations have d = {d}; "
                         "build it from these observations (e.g. default_function_class(observations))")
    return fc


def fit_drift(fc, states, increments, dt, sigma, weights=None) -> LinearDrift:
    """``fc.fit`` without its input checks when ``fc`` is a library class (the inputs were checked already)."""
    fit = getattr(fc, "_fit", None) or fc.fit
    return fit(states, increments, dt, sigma, weights) if weights is not None else fit(states, increments, dt, sigma)


def streams(fc) -> bool:
    """Whether ``fc`` fits from normal equations added up over chunks of rows (``_from_normal_equations``: the
    library classes); a user class with only ``fit`` is given all rows at once."""
    return callable(getattr(fc, "_from_normal_equations", None)) and all(
        streams(c) for c in getattr(fc, "candidates", ()))


def fit_in_chunks(fc, states, increments, dt, sigma, weights, chunk: int) -> LinearDrift:
    """``fc``'s fit to the rows, its normal equations added up over chunks of ``chunk`` rows (``fc`` streams);
    traceable, for use inside a compiled function."""
    def part(win, valid):
        return normal_equations(fc.basis, *win[:3], jnp.where(valid, win[3], 0.0)), None

    data = (states, increments, jnp.broadcast_to(jnp.asarray(dt, states.dtype), states.shape[:1]),
            jnp.ones(states.shape[:1], states.dtype) if weights is None else weights.astype(states.dtype))
    return fc._from_normal_equations(*chunked(part, data, states.shape[0], chunk)[0], sigma)


def fit_chunk(fc, states, chunk_size: int | None = None) -> int:
    """Rows per chunk of a streamed fit: the rows' features with their weighted copy and the data."""
    n, d = states.shape
    m = int(jax.eval_shape(fc.basis, jax.ShapeDtypeStruct((d,), states.dtype)).shape[-1])
    return chunk_rows(n, states.dtype.itemsize * (3 * m + 2 * d + 4), chunk_size)


def fit_rows(fc, states, increments, dt, sigma, weights=None, chunk_size: int | None = None) -> LinearDrift:
    """`fit_drift` in chunks of rows within the memory budget when ``fc`` streams and the rows need more than one
    chunk; else ``fc``'s own fit."""
    chunk = fit_chunk(fc, states, chunk_size) if streams(fc) else states.shape[0]
    if chunk >= states.shape[0]:
        return fit_drift(fc, states, increments, dt, sigma, weights)
    return _fit_in_chunks_jit(fc, states, increments, dt, sigma, weights, chunk)


_fit_in_chunks_jit = eqx.filter_jit(fit_in_chunks)


def _named(drift: LinearDrift, names) -> LinearDrift:
    if names is None or len(names) != drift.weights.shape[-1]:
        return drift
    return LinearDrift(drift.basis, drift.weights, names=tuple(names), covariance=drift.covariance)


#: Most inducing points of the automatic default class (``num_per_dim=None``).
DEFAULT_MAX_INDUCING = 2048
#: Largest explicit inducing grid accepted (its float32 kernel matrix is 1.6 GB).
MAX_INDUCING = 20_000


def _auto_num_per_dim(d: int) -> int:
    """12 per axis while ``12 ** d`` fits `DEFAULT_MAX_INDUCING`, else the most that fit (0: use data)."""
    if 12**d <= DEFAULT_MAX_INDUCING:
        return 12
    k = int(DEFAULT_MAX_INDUCING ** (1.0 / d) + 1e-9)
    return k if k >= 3 else 0


def default_function_class(
    observations: ArrayOrFrame, num_per_dim: int | None = None, lengthscale_factor: float = 0.2
) -> SparseGP:
    r"""The default drift class: a `SparseGP` with inducing points over the observations.

    The inducing points lie on a regular grid of ``num_per_dim`` points per axis over the bounding box of the
    observations widened by 0.5 on every side (by half the mean box width when that is below 1, so that
    data on a small scale gets the same class as rescaled data). The RBF lengthscale is $\ell = c\,\bar w\,s$ with
    ``c = lengthscale_factor``, $\bar w$ the mean box width and $s = \max(1, 11/(k - 1))$ the grid
    spacing relative to 12 points per axis (``s = 1`` for an explicit ``num_per_dim``).

    The size of the class is what the M-step pays for: an ``(n, m)`` feature matrix and an ``m x m`` kernel
    matrix and eigendecomposition for ``m`` inducing points. A grid has ``num_per_dim ** d`` points, so the
    default ``num_per_dim=None`` picks by dimension: 12 per axis (the paper's setting) while that is at most
    ``DEFAULT_MAX_INDUCING = 2048`` points (``d <= 3``: 12, 144, 1728 points), then the most per axis that fit
    (``d = 4``: 6 per axis, 1296 points; ``d = 5``: 4, 1024; ``d = 6``: 3, 729), and for ``d >= 7``, where a
    grid of 2 per axis only covers the corners, an evenly strided subset of at most 1024 observations as
    inducing points, with the median distance between them as the lengthscale. Twelve per axis at ``d = 5``
    would be 248,832 points, a kernel matrix of 248 GB.

    Args:
      observations: observed states, any leading shape, last axis ``d`` (NumPy, JAX, a DataFrame).
      num_per_dim: inducing points per axis, or ``None`` for the choice above.
      lengthscale_factor: ``c`` above.

    Returns:
      A `SparseGP` (unfitted; its ``fit`` gives a `LinearDrift`).

    Raises:
      ValueError: an explicit ``num_per_dim`` whose grid has more than ``MAX_INDUCING = 20000`` points (the
        message gives the size and the largest ``num_per_dim`` that fits); constant or non-finite observations;
        ``lengthscale_factor`` not finite and positive.

    References:
      Ruttor, Batz & Opper, NeurIPS 2013; Maoutsa, arXiv:2512.23566.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import default_function_class
      >>> fc = default_function_class(jnp.array([[0.0, 0.0], [1.0, 1.0]]), num_per_dim=4)
      >>> fc.basis.centers.shape, round(float(fc.basis.lengthscale), 2)
      ((16, 2), 0.2)
      >>> default_function_class(jnp.eye(5)).basis.centers.shape   # d = 5: 4 per axis, not 12
      (1024, 5)
    """
    check_scale(lengthscale_factor, "lengthscale_factor", "default_function_class")
    pts, _ = as_states(observations, fn="default_function_class")
    d = pts.shape[-1]
    if is_traced(pts):
        pts = pts.reshape(-1, d)
        lo, hi = jnp.min(pts, 0), jnp.max(pts, 0)
    else:  # on the host: eager reductions would be programs for every new number of observations
        host = np.asarray(pts).reshape(-1, d)
        lo, hi = host.min(0), host.max(0)
        pts = host
    xp = jnp if is_traced(pts) else np  # the box's scalars on the host too (same float32 operations)
    width = xp.mean(hi - lo)
    pad = xp.minimum(xp.asarray(0.5, width.dtype), 0.5 * width)  # 0.5, or half the width for data narrower than 1
    box = xp.stack([lo, hi])  # box_grid needs only the bounding box: a (2, d) input whatever n is
    if num_per_dim is not None:
        num_per_dim = check_count(num_per_dim, "num_per_dim", "default_function_class")
        m = num_per_dim**d
        if m > MAX_INDUCING:
            gb = m * m * pts.dtype.itemsize / 1e9
            size = f"{gb:,.0f}" if gb < 1e6 else f"{gb:.3g}"
            fit = int(MAX_INDUCING ** (1.0 / d) + 1e-9)
            raise ValueError(
                f"default_function_class: num_per_dim={num_per_dim} in d={d} gives {m:,} inducing points (a "
                f"{size} GB kernel matrix); pass num_per_dim <= {fit}, or leave num_per_dim=None to choose by d"
            )
        return SparseGP(RBFBasis(box_grid(box, num_per_dim, pad=pad), lengthscale_factor * width))
    k = _auto_num_per_dim(d)
    if k:
        scale = max(1.0, 11.0 / (k - 1))
        return SparseGP(RBFBasis(box_grid(box, k, pad=pad), lengthscale_factor * width * scale))
    centers = pts[:: max(1, -(-pts.shape[0] // 1024))]
    dist = jnp.sqrt(jnp.sum((centers[:, None] - centers[None]) ** 2, -1))
    # the median over distinct pairs: repeated observations must not shrink the lengthscale to zero
    return SparseGP(RBFBasis(centers, jnp.nanmedian(jnp.where(dist > 0, dist, jnp.nan))))


def _intervals(obs, ts):
    if not is_traced((obs, ts)):  # on the host (exact: slices and differences): no program per new shape
        o, t = np.asarray(obs), np.asarray(ts)
        d = o.shape[-1]
        dts = np.broadcast_to(np.diff(t, axis=-1), (o.shape[0], o.shape[1] - 1)).reshape(-1)
        return (jax.device_put(o[:, :-1].reshape(-1, d)), jax.device_put((o[:, 1:] - o[:, :-1]).reshape(-1, d)),
                jax.device_put(dts))
    d = obs.shape[-1]
    states = obs[:, :-1].reshape(-1, d)
    incs = (obs[:, 1:] - obs[:, :-1]).reshape(-1, d)
    # ts is (n_obs,) shared by the trajectories or (n_traj, n_obs), one grid each
    dts = jnp.broadcast_to(jnp.diff(ts, axis=-1), (obs.shape[0], obs.shape[1] - 1)).reshape(-1)
    return states, incs, dts


# --------------------------------------------------------------------------- estimators


def naive_drift(
    observations: ArrayOrFrame,
    ts: ArrayOrFrame,
    sigma: RealScalarLike | None = None,
    *,
    function_class: eqx.Module | None = None,
    chunk_size: int | None = None,
) -> DriftEstimate:
    r"""Increment regression at the observation interval (the "Gaussian likelihood" baseline).

    Fits $f$ to $(y_{k+1} - y_k)/\tau_k$ on $y_k$ under the Euler path likelihood (see
    `SparseGP`). Consistent as $\tau \to 0$; for linear drift it converges to
    $(e^{A\tau} - I)/\tau$ and is biased for large ``tau``. Uneven intervals are supported.

    Args:
      observations: shape ``(n_obs, d)`` (one trajectory) or ``(n_traj, n_obs, d)``: NumPy, JAX, nested
        lists, a pandas DataFrame (rows = times, columns = coordinates; the names are kept in
        ``drift.names``), a list of equal-length trajectories, a `SamplePaths`, or a list of
        trajectories of different lengths ``(n_i, d)`` (ragged, with a list of time grids as ``ts``).
      ts: strictly increasing observation times, shape ``(n_obs,)`` (shared) or ``(n_traj, n_obs)`` (one grid
        per trajectory), or a list of grids for ragged observations; NumPy, JAX, a pandas Series/Index;
        ``None`` with a `SamplePaths`.
      sigma: positive diffusion scale, or ``None`` (default) to estimate it from the increments with
        `estimate_diffusion` (scalar model; reported in ``sigma`` of the result).
      function_class: a `SparseGP` or `RidgeRegression`; default `default_function_class`.
      chunk_size: intervals per chunk: the fit adds up its normal equations over chunks, so its (intervals x
        features) matrix takes one chunk's memory (``None``: the largest power of two within the memory budget;
        a user class with only ``fit`` gets every interval at once).

    Returns:
      `DriftEstimate`.

    Raises:
      ValueError: fewer than two observations, shape mismatch, ``sigma <= 0``, NaN observations, a constant
        coordinate, non-increasing times (checked on the host for concrete input; ``eqx.error_if`` only
        inside the caller's ``jit``); a ``function_class`` for another ``d``.
      TypeError: non-numeric observations or datetime ``ts``; a ``function_class`` that is not a feature class.

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
    fn = "naive_drift"
    chunk_size = check_chunk_size(chunk_size, fn)
    if is_ragged(observations):
        states, incs, dts, _, names, _ = interval_data(observations, ts, fn=fn)
        sig = as_sigma(sigma, states.dtype, fn, allow_none=True)
        pts = states
    else:
        obs, ts, sig, names = as_observations(observations, ts, sigma, fn=fn, allow_none=True)
        states, incs, dts = _intervals(obs, ts)
        pts = obs
    if sig is None:
        sig = estimate_diffusion(observations, ts, chunk_size=chunk_size).sigma
    fc = default_function_class(pts) if function_class is None else function_class
    check_function_class(fc, states.shape[-1], fn)
    drift = _named(fit_rows(fc, states, incs, dts, sig, chunk_size=chunk_size), names)
    return DriftEstimate(drift, "naive", int(states.shape[0]), sig)


def conservative_drift(
    observations: ArrayOrFrame,
    ts: ArrayOrFrame | None,
    sigma: RealScalarLike | None = None,
    *,
    function_class: eqx.Module | None = None,
    regularization: float = 1e-3,
    chunk_size: int | None = None,
) -> DriftEstimate:
    r"""Conservative drift $\hat f = (\sigma^2/2)\nabla\log\hat p$ from a score estimate of the states.

    The score $\psi = W^\top\phi$ is fitted by (Hyvärinen) score matching in the same feature space,
    $\min_W \frac1n\sum_i[\lVert\psi(y_i)\rVert^2 + 2\nabla\cdot\psi(y_i)] + C\,\mathrm{tr}(W^\top P W)$,
    i.e. $W = -(\Phi^\top\Phi/n + C P)^{-1} \frac1n\sum_i J_\phi(y_i)$ with
    $(J_\phi)_{jk} = \partial_k\phi_j$. It uses only the invariant density, so it is exact for gradient
    drifts and misses every divergence-free (rotational) part.

    Args:
      observations: states, shape ``(n_obs, d)`` or ``(n_traj, n_obs, d)``; any leading shape when ``ts`` is
        ``None``. Time order is ignored. NumPy, JAX, lists or a DataFrame, as in `naive_drift`.
      ts: the observation times, shape ``(n_obs,)`` (checked like `naive_drift`'s, then unused: the
        estimator reads only the states' density), or ``None``.
      sigma: positive diffusion scale, or ``None`` (default) to estimate it with `estimate_diffusion`
        (needs ``ts``). The drift scales with $\sigma^2$, so a coarse interval's biased estimate biases it.
      function_class: feature class providing ``basis`` and ``penalty`` (default `default_function_class`).
      regularization: ``C`` above.
      chunk_size: states per chunk of the two passes of sums (features, their Jacobians and the per-state
        gradients take one chunk's memory; ``None``: from the memory budget).

    Returns:
      `DriftEstimate` with method ``"conservative"``. Its drift's ``std`` is the sandwich (M-estimator)
      standard error of the score-matching fit, one covariance per coordinate $k$:
      $\mathrm{Cov}(w_k) = \tfrac{\sigma^4}{4n} G^{-1} S_k G^{-1}$ with $G = \Phi^\top\Phi/n + C P$ and $S_k$ the
      empirical covariance of the per-state gradients $u_{ik} = \phi_i\phi_i^\top w_k + \partial_k\phi(y_i)$.
      It treats the states as independent and $\sigma$ as known: states along one trajectory are correlated, so
      for densely sampled paths it is narrower than the spread over independent data sets.

    Raises:
      ValueError: ``sigma <= 0``, fewer than two states, ``ts`` of the wrong shape, NaN states, a constant
        coordinate or non-increasing ``ts`` (host checks for concrete input, as in `naive_drift`);
        ``regularization`` not finite and positive; a ``function_class`` for another ``d``.

    References:
      Hyvärinen, JMLR 6 (2005); Maoutsa, Reich & Opper, Entropy 22:802 (2020), arXiv:2005.06400.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import conservative_drift
      >>> y = jax.random.normal(jax.random.key(0), (2000, 2)) * 0.5   # N(0, 0.25 I): score -4x
      >>> est = conservative_drift(y, None, 1.0)                        # drift (1/2) score = -2x
      >>> [round(v, 1) for v in est.drift(jnp.array([0.5, 0.0])).tolist()]
      [-1.0, 0.0]
    """
    fn = "conservative_drift"
    check_scale(regularization, "regularization", fn)
    chunk_size = check_chunk_size(chunk_size, fn)
    if is_ragged(observations) and ts is not None:
        trajs, names = as_trajectories(observations, ts, fn=fn)
        pts = jnp.concatenate([o for o, _ in trajs])
        sig = as_sigma(sigma, pts.dtype, fn, allow_none=True)
    elif ts is not None:
        obs, _, sig, names = as_observations(observations, ts, sigma, fn=fn, allow_none=True)
        pts = obs.reshape(-1, obs.shape[-1])
    else:
        if is_ragged(observations):
            observations = [np.asarray(v) for v in observations]
            observations = np.concatenate(observations)
        obs, names = as_states(observations, fn=fn)
        sig = as_sigma(sigma, obs.dtype, fn, allow_none=True)
        if sig is None:
            raise ValueError(f"{fn}: sigma=None estimates sigma from the increments, which needs the observation "
                             "times: pass ts, or a number for sigma")
        pts = obs.reshape(-1, obs.shape[-1])
    if sig is None:
        sig = estimate_diffusion(observations, ts, chunk_size=chunk_size).sigma
    fc = default_function_class(pts) if function_class is None else function_class
    check_function_class(fc, pts.shape[-1], "conservative_drift", needs=("penalty",))
    m = int(jax.eval_shape(fc.basis, jax.ShapeDtypeStruct(pts.shape[-1:], pts.dtype)).shape[-1])
    chunk = chunk_rows(pts.shape[0], pts.dtype.itemsize * (4 * m * (pts.shape[-1] + 1) + pts.shape[-1]), chunk_size)
    drift = _score_fit(fc.basis, fc.penalty(pts.dtype), pts, sig, regularization, chunk)
    return DriftEstimate(_named(drift, names), "conservative", int(pts.shape[0]), sig)


@eqx.filter_jit
def _score_fit(basis, P, pts, sig, regularization, chunk):
    """Two passes of sums over chunks of ``chunk`` states: the score-matching normal equations, then the
    centred outer products of the per-state gradients (their mean is known from the first pass)."""
    n = pts.shape[0]

    def moments(win, valid):
        phi = jnp.where(valid[:, None], jax.vmap(basis)(win[0]), 0.0)
        jac = jnp.where(valid[:, None, None], jax.vmap(jax.jacfwd(basis))(win[0]), 0.0)
        return (phi.T @ phi, jnp.sum(jac, axis=0)), None  # (m, m), (m, d)

    PP, jac = chunked(moments, (pts,), n, chunk)[0]
    G = PP / n + regularization * P
    W = -_solve_psd(G, jac / n)
    # sandwich covariance of each score column: per-state gradients u_i = phi_i phi_i^T w + d phi_i / d x_k, whose
    # mean is (Phi^T Phi / n) w + sum_i d phi_i / d x_k / n
    mean = (PP / n) @ W + jac / n  # (m, d)

    def spread(win, valid):
        phi = jax.vmap(basis)(win[0])
        grads = (phi @ W)[:, None, :] * phi[:, :, None] + jax.vmap(jax.jacfwd(basis))(win[0]) - mean  # (c, m, d)
        grads = jnp.where(valid[:, None, None], grads, 0.0)
        return jnp.einsum("imk,ilk->kml", grads, grads), None

    S = chunked(spread, (pts,), n, chunk)[0] / n  # (d, m, m)
    Ginv = _solve_psd(G, jnp.eye(G.shape[0], dtype=G.dtype))
    cov = (0.25 * sig**4 / n) * (Ginv @ S @ Ginv)
    return LinearDrift(basis, 0.5 * sig**2 * W, covariance=0.5 * (cov + jnp.swapaxes(cov, -1, -2)))
