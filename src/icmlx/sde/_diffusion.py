"""Diffusion (and localization-noise) estimation from observed trajectories: the quadratic variation of the
increments with the drift's contribution removed, and Vestergaard–Blainey–Flyvbjerg's covariance estimator that
is unbiased under measurement noise."""

import math
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._repr import summarise
from ._basis import _BROADCASTING, _exponents
from ._chunks import check_chunk_size, chunk_rows, chunked
from ._data import ArrayOrFrame, as_real, interval_data

__all__ = ["DiffusionEstimate", "DiffusionField", "estimate_diffusion"]

_MODELS = ("scalar", "diagonal", "full")


class DiffusionEstimate(eqx.Module):
    """What `estimate_diffusion` returns.

    Attributes:
      sigma: the diffusion scale: shape ``()`` (``model="scalar"``: $\\sigma\\sigma^\\top = \\sigma^2 I$), ``(d,)``
        (``"diagonal"``: the per-axis $\\sigma_i$) or ``(d, d)`` (``"full"``: the lower-triangular Cholesky
        factor $L$ of $\\sigma\\sigma^\\top = LL^\\top$).
      sigma_se: the standard error of each entry of ``sigma`` (same shape; delta method from a
        dependence-corrected covariance of the per-interval terms).
      covariance: the estimated $\\sigma\\sigma^\\top$, shape ``(d, d)`` (of the chosen model).
      noise: the localization-noise standard deviation in the same form as ``sigma`` (with
        ``measurement_noise=True``), else ``None``.
      model: ``"scalar"``, ``"diagonal"``, ``"full"``, or ``"basis"`` for a state-dependent diffusion (then
        ``sigma``, ``sigma_se``, ``covariance`` and ``noise`` are the scalar model's, the state average).
      num_intervals: the number of observation intervals used.
      field: with ``model=<basis>``, the fitted state-dependent diffusion (a `DiffusionField`), else ``None``.
    """

    sigma: Float[Array, "*s"]
    sigma_se: Float[Array, "*s"]
    covariance: Float[Array, "d d"]
    noise: Float[Array, "*s"] | None
    model: str = eqx.field(static=True)
    num_intervals: int = eqx.field(static=True)
    field: "DiffusionField | None" = None

    def __repr__(self) -> str:
        noise = "" if self.noise is None else f", noise={summarise(self.noise)}"
        return (f"DiffusionEstimate(model={self.model!r}, sigma={summarise(self.sigma)}, "
                f"sigma_se={summarise(self.sigma_se)}{noise}, num_intervals={self.num_intervals})")


class DiffusionField(eqx.Module):
    r"""A state-dependent diffusion $\sigma\sigma^\top(x) = \sum_j \phi_j(x)\,W_j$ in a feature basis.

    Returned by `estimate_diffusion` with ``model=<basis>`` (the weights are fitted by least squares, see
    there). ``field(x)`` gives $\sigma\sigma^\top(x)$, `diffusion` the diffusion tensor
    $D(x) = \tfrac12\sigma\sigma^\top(x)$ (SFI's convention) and `sigma` a lower-triangular factor $L(x)$ with
    $LL^\top = \sigma\sigma^\top(x)$ (negative eigenvalues of the fitted matrix, possible far from the data,
    clipped to zero).

    Attributes:
      basis: the feature map, ``(..., d) -> (..., m)`` (a library basis) or ``(d,) -> (m,)`` (any callable).
      weights: shape ``(m, d, d)``, each ``weights[j]`` symmetric.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import DiffusionField, PolynomialBasis
      >>> g = DiffusionField(PolynomialBasis(1, 2), jnp.array([[[0.25]], [[0.0]], [[1.0]]]))   # 0.25 + x^2
      >>> g(jnp.array([1.0])).tolist(), g.sigma(jnp.array([0.0])).tolist()
      ([[1.25]], [[0.5]])
    """

    basis: Callable
    weights: Float[Array, "m d d"]

    def _features(self, x):
        x = as_real(x, "x", "DiffusionField", None if jnp.issubdtype(getattr(x, "dtype", float), jnp.floating)
                    else self.weights.dtype)
        d = self.weights.shape[-1]
        if x.ndim == 0 or x.shape[-1] != d:
            raise ValueError(f"DiffusionField: x must be states of shape (..., d) with d = {d}, got shape {x.shape}")
        if x.ndim == 1 or isinstance(self.basis, _BROADCASTING):
            return self.basis(x)
        return jax.vmap(self.basis)(x.reshape(-1, d)).reshape(x.shape[:-1] + (-1,))

    def __call__(self, x: ArrayOrFrame) -> Float[Array, "*batch d d"]:
        r"""$\sigma\sigma^\top(x)$, shape ``(..., d, d)`` for states ``(..., d)``."""
        phi = self._features(x)
        return jnp.einsum("...m,mij->...ij", phi, self.weights.astype(phi.dtype))

    def diffusion(self, x: ArrayOrFrame) -> Float[Array, "*batch d d"]:
        r"""The diffusion tensor $D(x) = \tfrac12\sigma\sigma^\top(x)$, shape ``(..., d, d)``."""
        return 0.5 * self(x)

    def sigma(self, x: ArrayOrFrame) -> Float[Array, "*batch d d"]:
        r"""A lower-triangular $L(x)$ with $LL^\top = \sigma\sigma^\top(x)$ (clipped to PSD), ``(..., d, d)``."""
        S = self(x)
        S = 0.5 * (S + jnp.swapaxes(S, -1, -2))
        lam, vec = jnp.linalg.eigh(S)
        lam = jnp.maximum(lam, 0.0)
        d = S.shape[-1]
        psd = jnp.einsum("...ik,...k,...jk->...ij", vec, lam, vec)
        tr = jnp.trace(psd, axis1=-2, axis2=-1)[..., None, None]
        jitter = 1e-12 * jnp.maximum(tr, jnp.finfo(S.dtype).tiny) * jnp.eye(d, dtype=S.dtype)
        return jnp.linalg.cholesky(psd + jitter)

    def __repr__(self) -> str:
        m, d, _ = self.weights.shape
        return f"DiffusionField(basis={self.basis!r}, num_features={m}, d={d})"


def _poly_degree(d: int, n: int) -> int:
    """Cubic drift removal while the data hold ten intervals per feature (and ``d <= 6``), else lower."""
    for degree in (3, 2, 1, 0):
        if (degree < 3 or d <= 6) and n >= 10 * math.comb(d + degree, degree):
            return degree
    return 0


def _feature_map(states, degree: int):
    """Monomials of the states standardized by their mean and spread, up to total degree ``degree``: a map
    ``(d,) -> (m,)``."""
    mu = jnp.mean(states, 0)
    sd = jnp.std(states, 0)
    sd = jnp.where(sd > 0, sd, 1.0)
    exps = list(_exponents(states.shape[-1], degree))

    def phi(x):
        z = (x - mu) / sd
        feats = []
        for e in exps:
            v = jnp.ones((), x.dtype)
            for k, p in enumerate(e):
                if p:
                    v = v * jax.lax.integer_pow(z[k], p)
            feats.append(v)
        return jnp.stack(feats)

    return phi


def _reduce(cov, model: str):
    """The model's ``sigma`` from $\\sigma\\sigma^\\top$."""
    d = cov.shape[-1]
    if model == "scalar":
        return jnp.sqrt(jnp.trace(cov) / d)
    if model == "diagonal":
        return jnp.sqrt(jnp.diagonal(cov))
    return jnp.linalg.cholesky(0.5 * (cov + cov.T))


def _model_cov(cov, model: str):
    d = cov.shape[-1]
    if model == "scalar":
        return jnp.trace(cov) / d * jnp.eye(d, dtype=cov.dtype)
    if model == "diagonal":
        return jnp.diag(jnp.diagonal(cov))
    return 0.5 * (cov + cov.T)


def _psd_factor(cov, model: str):
    """``_reduce`` of the nearest positive semi-definite matrix (a noise covariance estimate may be indefinite)."""
    cov = 0.5 * (cov + cov.T)
    if model == "scalar":
        return jnp.sqrt(jnp.maximum(jnp.trace(cov) / cov.shape[-1], 0.0))
    if model == "diagonal":
        return jnp.sqrt(jnp.maximum(jnp.diagonal(cov), 0.0))
    lam, vec = jnp.linalg.eigh(cov)
    lam = jnp.maximum(lam, 0.0)
    psd = (vec * lam) @ vec.T
    jitter = 1e-12 * jnp.maximum(jnp.trace(psd), jnp.finfo(cov.dtype).tiny) * jnp.eye(cov.shape[-1], dtype=cov.dtype)
    return jnp.linalg.cholesky(psd + jitter)


def _lag_products(z, follows, valid, lags: int, chunk: int):
    """The window's part of $\\sum_k z_k z_k^\\top + \\sum_{l \\le lags} \\sum_k [k, k + l \\text{ in one trajectory}]
    (z_k z_{k+l}^\\top + z_{k+l} z_k^\\top)$ over its own ``chunk`` rows (the window holds ``lags`` rows past
    them): the covariance of the mean of ``lags``-dependent terms, up to $1/n^2$ (truncated kernel)."""
    own = z[:chunk]
    S = own.T @ own
    same = valid[:chunk]
    for lag in range(1, lags + 1):
        same = same & follows[lag - 1: lag - 1 + chunk]
        a, b = jnp.where(same[:, None], own, 0.0), z[lag: lag + chunk]
        S = S + a.T @ b + b.T @ a
    return S


def _noise_terms(r, follows, valid):
    """Per-interval terms with localization noise: $q_k = r_k r_k^\\top + 2\\,\\mathrm{sym}(r_k r_{k+1}^\\top)$ and
    $-\\mathrm{sym}(r_k r_{k+1}^\\top)$ where interval ``k + 1`` continues ``k`` (else zero), and that mask."""
    nxt = jnp.concatenate([r[1:], jnp.zeros_like(r[:1])])
    cross = r[:, :, None] * nxt[:, None, :]
    cross = 0.5 * (cross + jnp.swapaxes(cross, 1, 2))
    mask = (follows & valid & jnp.concatenate([valid[1:], jnp.zeros((1,), bool)])).astype(r.dtype)
    rr = r[:, :, None] * r[:, None, :]
    # E[r_k r_k^T] = S dt_k + 2A and E[r_k r_{k+1}^T] = -A for noise covariance A (Vestergaard et al. 2014)
    return (rr + 2.0 * cross) * mask[:, None, None], -cross * mask[:, None, None], mask


@eqx.filter_jit
def _estimate(states, incs, dts, follows, drift, model: str, noise: bool, degree: int, basis=None, chunk=None):
    """The estimator over chunks of ``chunk`` intervals: three passes of sums (the drift regression's normal
    equations, the residual terms, their dependence-corrected covariance), each holding one chunk's
    (intervals x features) intermediates at a time."""
    n, d = states.shape
    dtype = states.dtype
    chunk = n if chunk is None else chunk
    # windows reach one interval back (the instruments) and three ahead (the lag-2 products of the noise terms)
    front, back = (1, 3) if noise else (0, 0)
    data = (states, incs, dts, follows)
    run = lambda fn: chunked(fn, data, n, chunk, front=front, back=back)[0]  # noqa: E731

    def own(x):
        return x[front: front + chunk]

    if drift is None:
        feature = _feature_map(states, degree)

        def normal_equations(win, valid):
            s, dx, dt, fo = win
            phi = jax.vmap(feature)(s)  # (W, m)
            v = own(valid).astype(dtype)
            if noise:
                # instrumental variables: the previous state's features are independent of this interval's
                # localization errors, which bias the plain regression (errors in variables)
                prev = fo[:chunk] & valid[:chunk]
                zf = jnp.where(prev[:, None], phi[:chunk], 0.0) * v[:, None]
                return ((zf * own(dt)[:, None]).T @ own(phi), zf.T @ own(dx)), None
            return ((phi * (v * dt)[:, None]).T @ phi, (phi * v[:, None]).T @ dx), None

        G, B = run(normal_equations)
        m = G.shape[0]
        ridge = 1e-10 * jnp.trace(jnp.abs(G)) / m
        W = jnp.linalg.solve(G + ridge * jnp.eye(m, dtype=dtype), B)
        f_hat = lambda x: feature(x) @ W  # noqa: E731
    else:
        m = 0
        f_hat = lambda x: drift(x).astype(dtype)  # noqa: E731
    lags = 2 if noise else 0
    scale = 1.0 if noise else n / max(n - m, 1)  # the least-squares fit takes m of the n noise dimensions

    def terms(win, valid):
        """The residuals' terms $q_k$, the noise terms and the interval mask over a window."""
        s, dx, dt, fo = win
        r = dx - jax.vmap(f_hat)(s) * dt[:, None]
        if noise:
            return _noise_terms(r, fo, valid)
        rr = r[:, :, None] * r[:, None, :]
        mask = valid.astype(dtype)
        return rr * mask[:, None, None], None, mask

    def residual_sums(win, valid):
        s, _, dt, _ = win
        q, a_terms, mask = (None if x is None else own(x) for x in terms(win, valid))
        dt, s = own(dt), own(s)
        # first order in tau: the drift's Jacobian J enters the residual covariance as (J S + S J^T) tau^2 / 2
        jac = jax.vmap(jax.jacfwd(f_hat))(s)  # (chunk, d, d)
        out = {"q": jnp.sum(q, 0), "mask": jnp.sum(mask), "dt": jnp.sum(dt * mask),
               "jac": jnp.sum(jac * (mask * dt**2)[:, None, None], 0)}
        if noise:
            out["a"] = jnp.sum(a_terms, 0)
        if basis is not None:  # static: sigma sigma^T(y_k) tau_k ~ q_k, least squares weighted by tau_k
            psi = jax.vmap(basis)(s).astype(dtype)  # (chunk, m_s)
            out["G"] = (psi * (mask * dt)[:, None]).T @ psi
            out["B"] = psi.T @ q.reshape(-1, d * d)
        return out, None

    sums = run(residual_sums)
    total_dt = sums["dt"]
    cov = scale * sums["q"] / total_dt
    noise_cov = sums["a"] / jnp.maximum(sums["mask"], 1.0) if noise else None
    # the residual r = sigma dW + J sigma int W ds has covariance S tau + (J S + S J^T) tau^2 / 2, so
    # S = M - (A M + M A^T) with A = sum tau_k^2 J_k / (2 sum tau_k)
    A = sums["jac"] / (2.0 * total_dt)
    corrected = cov - (A @ cov + cov @ A.T)
    # outside the first-order regime (tau |J| of order one: coarse intervals, where infer_drift estimates sigma
    # jointly) the correction is not trusted beyond doubling or halving the variance
    ratio = jnp.trace(corrected) / jnp.trace(cov)
    cov = jnp.where((ratio > 0.5) & (ratio < 2.0), corrected, cov)
    cov_m = _model_cov(cov, model)
    sigma = _reduce(cov, model)

    def dependence(win, valid):
        # delta method: the ratio estimator's influence terms z_k, then the Jacobian of the reduction
        q, _, mask = terms(win, valid)
        z = (scale * q - cov[None] * win[2][:, None, None]) * mask[:, None, None] / (total_dt / n)
        return _lag_products(z[front:].reshape(-1, d * d), win[3][front:], valid[front:], lags, chunk), None

    V = run(dependence) / float(n) ** 2
    J = jax.jacfwd(lambda c: _reduce(c.reshape(d, d), model).reshape(-1))(cov.reshape(-1))
    se = jnp.sqrt(jnp.maximum(jnp.sum((J @ V) * J, -1), 0.0)).reshape(sigma.shape)
    noise_level = None if noise_cov is None else _psd_factor(noise_cov, model)
    field = None
    if basis is not None:
        G, ms = sums["G"], sums["G"].shape[0]
        ridge = 1e-10 * jnp.trace(jnp.abs(G)) / ms
        Wf = jnp.linalg.solve(G + ridge * jnp.eye(ms, dtype=dtype), scale * sums["B"]).reshape(ms, d, d)
        field = DiffusionField(basis, 0.5 * (Wf + jnp.swapaxes(Wf, 1, 2)))
    return sigma, se, cov_m, noise_level, field


def estimate_diffusion(
    observations: ArrayOrFrame,
    ts: ArrayOrFrame,
    *,
    model: str | Callable = "scalar",
    measurement_noise: bool = False,
    drift: Callable | None = None,
    chunk_size: int | None = None,
) -> DiffusionEstimate:
    r"""The diffusion $\sigma\sigma^\top$ of $dX = f(X)\,dt + \sigma\,dW$ from observed trajectories.

    With $r_k = \Delta y_k - \hat f(y_k)\,\tau_k$ the increments with the drift's contribution removed
    ($\hat f$: a least-squares fit in cubic monomials of the standardized states, or ``drift`` if given),
    the quadratic-variation estimator is

    $$\widehat{\sigma\sigma^\top} = \frac{n}{n - m}\,\frac{\sum_k r_k r_k^\top}{\sum_k \tau_k}$$

    ($m$ fitted features), corrected to first order in $\tau$ for the drift's variation within an interval:
    the residual $\sigma\Delta W + J\sigma\int W\,ds$ ($J$ the drift's Jacobian) has covariance
    $\Sigma\tau + (J\Sigma + \Sigma J^\top)\tau^2/2$, so $\Sigma = M - (AM + MA^\top)$ with
    $A = \sum_k \tau_k^2 J(y_k) / (2\sum_k\tau_k)$ (applied while it changes the variance by less than a factor
    two). Localization noise $\epsilon_k \sim (0, A)$ on every observation adds $2A$ to
    $E[r_k r_k^\top]$ and $-A$ to $E[r_k r_{k+1}^\top]$, so with ``measurement_noise=True`` the covariance-based
    estimator (Vestergaard, Blainey & Flyvbjerg 2014, per axis and for cross terms)

    $$\widehat{\sigma\sigma^\top} = \frac{\sum_k \big(r_k r_k^\top + r_k r_{k+1}^\top + r_{k+1} r_k^\top\big)}
    {\sum_k \tau_k}, \qquad \hat A = -\overline{\mathrm{sym}(r_k r_{k+1}^\top)}$$

    is used over consecutive intervals of one trajectory, and the drift is fitted with the previous state's
    features as instruments (the plain regression is biased by the noise it shares with the increments). Both
    are consistent as $\tau \to 0$; at a coarse interval the drift's curvature makes them biased (use
    `infer_drift` with ``sigma=None`` there). The standard errors come from the delta method with the
    within-trajectory dependence of the terms (lags 0, or 0 to 2 with noise).

    With ``model=<basis>`` (features $\psi(x) \in \mathbb R^m$) the diffusion is state-dependent,
    $\sigma\sigma^\top(x) = \sum_j \psi_j(x) W_j$, fitted by least squares of the same per-interval terms
    $q_k$ ($r_k r_k^\top$, or the noise-robust combination above) on $\psi(y_k)\tau_k$,

    $$\Big(\sum_k \tau_k\,\psi_k\psi_k^\top\Big) W = \sum_k \psi_k\, q_k$$

    (SFI's ``infer_diffusion_linear``; a constant basis gives the scalar estimator's $\sum q_k / \sum \tau_k$).
    It carries the $O(\tau)$ bias of the increments (no first-order correction), so it is meant for dense data.
    ``sigma``, ``sigma_se`` and ``noise`` are then the scalar model's (the state average).

    Args:
      observations: shape ``(n_obs, d)`` or ``(n_traj, n_obs, d)`` (NumPy, JAX, lists, a DataFrame, a list of
        equal-length trajectories, a `SamplePaths`), or a list of trajectories of different lengths
        ``(n_i, d)`` (ragged).
      ts: observation times, shape ``(n_obs,)``, ``(n_traj, n_obs)``, or for ragged observations a list of
        the trajectories' time grids; ``None`` with a `SamplePaths`.
      model: ``"scalar"`` (isotropic), ``"diagonal"`` (per-axis $\sigma_i$), ``"full"`` (a Cholesky factor), or a
        feature basis (`PolynomialBasis`, `RBFBasis`, any callable ``(d,) -> (m,)``) for a state-dependent
        diffusion, returned as ``field`` (see above).
      measurement_noise: use the noise-robust estimator and return the noise level.
      drift: a known drift ``(d,) -> (d,)`` to remove instead of the fitted one.
      chunk_size: intervals per chunk. The estimator is a few passes of sums over the intervals, each run over
        chunks so that its (intervals x features) intermediates take one chunk's memory; ``None`` chooses the
        largest power of two within the memory budget (`icmlx.sde` guide, "Data sets of any size"). The result
        does not depend on it beyond the order of floating-point sums.

    Returns:
      `DiffusionEstimate` (with ``field``, a `DiffusionField`, for a basis ``model``).

    Raises:
      ValueError: an unknown ``model``; a basis that fails on one state, does not return a vector, or has more
        features than there are intervals; shapes, NaN data, non-increasing times (as in `naive_drift`);
        ``measurement_noise=True`` without two consecutive intervals in some trajectory.
      TypeError: non-numeric data; ``measurement_noise`` not a bool; ``drift`` not callable.

    References:
      Vestergaard, Blainey & Flyvbjerg, "Optimal estimation of diffusion coefficients from single-particle
      trajectories", Phys. Rev. E 89, 022726 (2014), arXiv:1311.3583; Frishman & Ronceray, "Learning force fields
      from stochastic trajectories", Phys. Rev. X 10, 021009 (2020), arXiv:1809.09650.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import estimate_diffusion
      >>> y = jnp.cumsum(0.5 * 0.1 * jax.random.normal(jax.random.key(0), (4000, 2)), axis=0)  # sigma 0.5
      >>> est = estimate_diffusion(y, jnp.arange(4000.0) * 0.01)
      >>> round(float(est.sigma), 1), est.sigma_se.shape
      (0.5, ())
    """
    fn = "estimate_diffusion"
    basis = None
    if callable(model) and not isinstance(model, str):
        basis, model = model, "basis"
    elif not isinstance(model, str) or model not in _MODELS:
        raise ValueError(f"{fn}: model must be one of {_MODELS} or a feature basis (a callable (d,) -> (m,), e.g. "
                         f"PolynomialBasis), got {model=}")
    if not isinstance(measurement_noise, bool):
        raise TypeError(f"{fn}: measurement_noise must be True or False, got {measurement_noise=}")
    if drift is not None and not callable(drift):
        raise TypeError(f"{fn}: drift must be a callable (d,) -> (d,) or None, got {drift!r}")
    states, incs, dts, follows, _, _ = interval_data(observations, ts, fn=fn)
    n, d = states.shape
    if measurement_noise and not follows.any():
        raise ValueError(f"{fn}: measurement_noise=True needs trajectories of at least three observations (two "
                         "consecutive intervals)")
    degree = _poly_degree(d, int(follows.sum()) if measurement_noise else n)
    if basis is not None:
        try:
            m_s = jax.eval_shape(basis, jax.ShapeDtypeStruct((d,), states.dtype)).shape
        except Exception as e:  # noqa: BLE001 - any failure of a user callable on one state
            raise ValueError(f"{fn}: the basis must map one state of shape (d,) = ({d},) to features (m,); calling "
                             f"it failed with {type(e).__name__}: {e}") from e
        if len(m_s) != 1:
            raise ValueError(f"{fn}: the basis must map one state (d,) to a feature vector (m,), got shape {m_s}")
        if m_s[0] > n:
            raise ValueError(f"{fn}: the basis has {m_s[0]} features but the data hold only {n} intervals; pass a "
                             "smaller basis or more observations")
    chunk_size = check_chunk_size(chunk_size, fn)
    est_model = "scalar" if basis is not None else model
    m = math.comb(d + degree, degree) if drift is None else 0
    m_s = 0 if basis is None else m_s[0]
    # per interval: the drift's and the basis' features (with their weighted copies), the Jacobian and the terms
    row_bytes = states.dtype.itemsize * (3 * (m + m_s) + 8 * d * d + 4 * d + 8)
    chunk = chunk_rows(n, row_bytes, chunk_size)
    sigma, se, cov, noise, field = _estimate(states, incs, dts, follows, drift, est_model, measurement_noise, degree,
                                             basis, chunk)
    return DiffusionEstimate(sigma, se, cov, noise, model, n, field)
