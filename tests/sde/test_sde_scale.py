"""icmlx.sde at the sizes users record: the streamed (chunked) computations equal the all-at-once ones, sizes
past the int32 boundaries run, and the diffusion estimator's standard error equals a float64 NumPy reference
(lag products inside a trajectory only)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.sde import PolynomialBasis, estimate_diffusion


def _ou_paths(seed, n_traj, n_obs, tau=0.01, sigma=0.6, d=2):
    """Exact OU paths dX = -X dt + sigma dW sampled every tau (float64 NumPy)."""
    rng = np.random.default_rng(seed)
    a = np.exp(-tau)
    s = sigma * np.sqrt((1 - a * a) / 2.0)
    x = np.empty((n_traj, n_obs, d))
    x[:, 0] = rng.normal(size=(n_traj, d)) * sigma / np.sqrt(2.0)
    for k in range(1, n_obs):
        x[:, k] = a * x[:, k - 1] + s * rng.normal(size=(n_traj, d))
    return x.astype(np.float32), (np.arange(n_obs) * tau)


def _reference_scalar(y, ts, noise: bool):
    """float64 NumPy: the scalar model of `estimate_diffusion` with the known drift f(x) = -x (module docstring
    of ``_diffusion``), its first-order correction, and the delta-method standard error whose lag products
    (lags 0, or 0 to 2 with noise) stay inside a trajectory."""
    y = np.asarray(y, np.float64)
    n_traj, n_obs, d = y.shape
    tau = np.diff(np.asarray(ts, np.float64))
    r_traj = [(y[i, 1:] - y[i, :-1]) + y[i, :-1] * tau[:, None] for i in range(n_traj)]
    q, mask, dts, traj_of = [], [], [], []
    for i, r in enumerate(r_traj):
        for k in range(n_obs - 1):
            rr = np.outer(r[k], r[k])
            if noise:
                follows = k + 1 < n_obs - 1
                c = np.outer(r[k], r[k + 1]) if follows else np.zeros((d, d))
                q.append((rr + c + c.T) * follows)
                mask.append(float(follows))
            else:
                q.append(rr)
                mask.append(1.0)
            dts.append(tau[k])
            traj_of.append(i)
    q, mask, dts, traj_of = np.array(q), np.array(mask), np.array(dts), np.array(traj_of)
    n = len(dts)
    total = np.sum(dts * mask)
    cov = q.sum(0) / total
    A = -np.eye(d) * np.sum(mask * dts**2) / (2 * total)  # the Jacobian of -x is -I
    corrected = cov - (A @ cov + cov @ A.T)
    if 0.5 < np.trace(corrected) / np.trace(cov) < 2.0:
        cov = corrected
    sigma = np.sqrt(np.trace(cov) / d)
    z = ((q - cov[None] * dts[:, None, None]) * mask[:, None, None] / (total / n)).reshape(n, d * d)
    lags = 2 if noise else 0
    V = z.T @ z
    for lag in range(1, lags + 1):
        for k in range(n - lag):
            if traj_of[k] == traj_of[k + lag]:
                V += np.outer(z[k], z[k + lag]) + np.outer(z[k + lag], z[k])
    V /= float(n) ** 2
    J = (np.eye(d) / (2 * d * sigma)).reshape(-1)
    return sigma, np.sqrt(J @ V @ J)


@pytest.mark.parametrize("noise", [False, True])
def test_estimate_diffusion_standard_error_against_numpy(noise):
    y, ts = _ou_paths(0, 5, 41)
    if noise:
        y = y + 0.005 * np.random.default_rng(1).normal(size=y.shape).astype(np.float32)
    est = estimate_diffusion(y, ts, drift=lambda x: -x, measurement_noise=noise, chunk_size=16)
    sigma, se = _reference_scalar(y, ts, noise)
    np.testing.assert_allclose(float(est.sigma), sigma, rtol=2e-5)
    np.testing.assert_allclose(float(est.sigma_se), se, rtol=1e-4)


@pytest.mark.parametrize("kw", [{}, {"measurement_noise": True}, {"model": "full"},
                                {"model": "diagonal", "measurement_noise": True},
                                {"model": PolynomialBasis(2, 2)}, {"drift": lambda x: -x}])
def test_estimate_diffusion_chunked_equals_one_chunk(kw):
    y, ts = _ou_paths(2, 6, 60)  # 354 intervals: chunks of 7 split trajectories and leave a ragged last chunk
    whole = estimate_diffusion(y, ts, chunk_size=10**6, **kw)
    parts = estimate_diffusion(y, ts, chunk_size=7, **kw)
    for a, b in [(whole.sigma, parts.sigma), (whole.sigma_se, parts.sigma_se), (whole.covariance, parts.covariance),
                 (whole.noise, parts.noise)]:
        if a is not None:
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=2e-5, atol=1e-9)
    if whole.field is not None:
        np.testing.assert_allclose(np.asarray(parts.field.weights), np.asarray(whole.field.weights), rtol=1e-4,
                                   atol=1e-6)


def test_estimate_diffusion_past_the_int32_square():
    """46,341 intervals is the first count whose square passes 2^31 - 1 (the standard error divides by n^2)."""
    y, ts = _ou_paths(3, 1, 46_343, tau=0.01)
    est = estimate_diffusion(y, ts)
    assert est.num_intervals == 46_342
    assert abs(float(est.sigma) / 0.6 - 1) < 0.02
    assert 0 < float(est.sigma_se) < 0.01


@pytest.mark.parametrize("noise", [pytest.param(False, marks=pytest.mark.slow), True])
def test_estimate_diffusion_under_jit_and_vmap_with_chunks(noise):
    y, ts = _ou_paths(4, 3, 50)

    def sigma(v):
        return estimate_diffusion(v, ts, chunk_size=16, measurement_noise=noise).sigma

    eager = sigma(y)
    jitted = jax.jit(sigma)(jnp.asarray(y))
    batched = jax.vmap(sigma)(jnp.stack([jnp.asarray(y)] * 2))
    np.testing.assert_allclose(float(jitted), float(eager), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(batched), float(eager), rtol=1e-6)


def test_chunk_size_errors():
    y, ts = _ou_paths(5, 1, 20)
    with pytest.raises(ValueError, match="chunk_size"):
        estimate_diffusion(y, ts, chunk_size=0)
    with pytest.raises(TypeError, match="chunk_size"):
        estimate_diffusion(y, ts, chunk_size=2.5)


# --------------------------------------------------------------------------- infer_drift

from icmlx.sde import (  # noqa: E402
    NoGuidance,
    RidgeRegression,
    default_function_class,
    infer_drift,
    select_function_class,
    smc_bridges,
)

_EM = dict(num_particles=16, num_time_steps=8, num_paths=2)


def _coarse(seed=6, n_traj=4, n_obs=17):
    """Double-well-like paths sampled at tau = 0.5 (17 observations: 16 intervals, no padding)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_traj, 2))
    out = [x]
    for _ in range(n_obs - 1):
        for _ in range(50):
            x = x + (x - x**3) * 0.01 + 0.6 * 0.1 * rng.normal(size=x.shape)
        out.append(x)
    return np.stack(out, 1).astype(np.float32), np.arange(n_obs) * 0.5


def test_one_em_step_equals_a_float64_numpy_m_step():
    """The streamed E- and M-step (three chunks of intervals) against the bridges drawn by `smc_bridges` with the
    same key, fitted in float64 NumPy: the drift's weights and the sigma update of the docstring."""
    y, ts = _coarse()
    fc = RidgeRegression(PolynomialBasis(2, 3), 1e-3)
    init = fc.fit(y[:, :-1].reshape(-1, 2), np.diff(y, axis=1).reshape(-1, 2), 0.5, 0.6)
    key = jax.random.key(3)
    sol = infer_drift(key, y, ts, None, guidance=NoGuidance(), function_class=fc, init=init, num_steps=1,
                      chunk_size=24, **_EM)
    sig0 = float(sol.initial_sigma)
    a, b = y[:, :-1].reshape(-1, 2), y[:, 1:].reshape(-1, 2)
    bs = smc_bridges(jax.random.split(key)[1], init, sig0, a, b, np.full(len(a), 0.5, np.float32), **_EM)
    p = np.asarray(bs.paths, np.float64)  # (B, R, K+1, d)
    K, R = _EM["num_time_steps"], _EM["num_paths"]
    w = np.where(np.asarray(bs.degenerate), 0.0, 1.0 / R)
    x, dx = p[:, :, :-1].reshape(-1, 2), np.diff(p, axis=2).reshape(-1, 2)
    h = 0.5 / K
    wr = np.repeat(w, R * K)
    phi = np.asarray(fc.basis(jnp.asarray(x, jnp.float32)), np.float64)
    G = (phi * (wr * h)[:, None]).T @ phi + sig0**2 * 1e-3 * np.eye(phi.shape[1])
    W = np.linalg.solve(G, (phi * wr[:, None]).T @ dx)
    np.testing.assert_allclose(np.asarray(sol.drift.weights), W, rtol=2e-3, atol=2e-3 * np.abs(W).max())
    fh = (phi @ W * h).reshape(len(a), R, K, 2).sum(2)
    resid = (b - a)[:, None] - fh
    sigma = np.sqrt(np.sum(np.repeat(w, R) * np.sum(resid.reshape(-1, 2) ** 2, -1)) / (2 * np.sum(w * R * 0.5)))
    np.testing.assert_allclose(float(sol.sigma), sigma, rtol=1e-4)


@pytest.mark.parametrize("sigma", [pytest.param(0.6, marks=pytest.mark.slow), None])
def test_infer_drift_chunked_equals_one_chunk(sigma):
    y, ts = _coarse(n_traj=3, n_obs=14)  # 13 of 16 padded intervals real: chunks of 5 cut trajectories
    fc = RidgeRegression(PolynomialBasis(2, 3), 1e-3)
    runs = [infer_drift(jax.random.key(1), y, ts, sigma, function_class=fc, num_steps=2, chunk_size=c, **_EM)
            for c in (None, 5)]
    # float32 sums in another order, carried through a second iteration's bridges (weights of order one)
    np.testing.assert_allclose(np.asarray(runs[1].drift.weights), np.asarray(runs[0].drift.weights), rtol=1e-3,
                               atol=2e-3)
    np.testing.assert_allclose(float(runs[1].sigma), float(runs[0].sigma), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(runs[1].ess), np.asarray(runs[0].ess), rtol=1e-3)
    np.testing.assert_allclose(np.asarray(runs[1].history.loss), np.asarray(runs[0].history.loss), rtol=1e-3)
    np.testing.assert_allclose(np.asarray(runs[1].history.drift_change), np.asarray(runs[0].history.drift_change),
                               rtol=1e-3)


def test_infer_drift_chunked_with_a_user_class_and_the_default_class():
    """A user class with only ``fit`` gets every interval at once (the same result whatever ``chunk_size``); the
    sparse GP streams."""
    y, ts = _coarse(n_traj=2)
    lib = RidgeRegression(PolynomialBasis(2, 1), 1e-3)

    class UserClass(eqx.Module):
        basis: eqx.Module

        def fit(self, states, increments, dt, sigma, weights=None):
            return lib.fit(states, increments, dt, sigma, weights)

    user = [infer_drift(jax.random.key(2), y, ts, 0.6, function_class=UserClass(lib.basis), num_steps=1,
                        chunk_size=c, **_EM) for c in (None, 4)]
    np.testing.assert_array_equal(np.asarray(user[1].drift.weights), np.asarray(user[0].drift.weights))
    gp = default_function_class(y)
    runs = [infer_drift(jax.random.key(2), y, ts, 0.6, function_class=gp, num_steps=1, chunk_size=c, **_EM)
            for c in (None, 4)]
    grid = jnp.linspace(-1.0, 1.0, 5)[:, None] * jnp.ones(2)
    np.testing.assert_allclose(np.asarray(runs[1].drift(grid)), np.asarray(runs[0].drift(grid)), rtol=1e-3,
                               atol=1e-3)


@pytest.mark.slow  # four candidate EMs and their scores, twice: about 40 s on 2 cores
def test_bridge_selection_chunked_equals_one_chunk():
    y, ts = _coarse(n_traj=4)
    opts = dict(num_steps=1, num_particles=8, num_time_steps=4)
    sel = [select_function_class(y, ts, 0.6, score="bridge", key=jax.random.key(0), em_options=opts,
                                 chunk_size=c) for c in (None, 3)]
    assert int(sel[0].index) == int(sel[1].index)
    np.testing.assert_allclose(np.asarray(sel[1].scores), np.asarray(sel[0].scores), rtol=1e-4)


def test_infer_drift_past_the_int32_square():
    """Past 46,341 intervals the sigma estimate that starts the EM squared a Python int (an OverflowError)."""
    rng = np.random.default_rng(0)
    y = np.cumsum(0.06 * rng.normal(size=(1, 46_400, 1)), axis=1).astype(np.float32)
    sol = infer_drift(jax.random.key(0), y, np.arange(46_400) * 0.01, None, guidance="none",
                      function_class=RidgeRegression(PolynomialBasis(1, 1), 1e-3), num_steps=1, num_particles=2,
                      num_time_steps=2, num_paths=1)
    assert abs(float(sol.initial_sigma) / 0.6 - 1) < 0.05


# --------------------------------------------------------------------------- the other entry points

from icmlx.sde import conservative_drift, geodesic_targets, naive_drift, weighted_rmse  # noqa: E402
from icmlx.sde._geodesic import _geodesic_jit  # noqa: E402


def test_naive_and_conservative_drift_chunked_equal_one_chunk():
    y, ts = _ou_paths(7, 4, 60)
    fc = RidgeRegression(PolynomialBasis(2, 3), 1e-3)  # well conditioned: float32 sums in any order agree
    grid = jnp.asarray(np.linspace(-1, 1, 6)[:, None] * np.ones(2), jnp.float32)
    for est in (naive_drift, conservative_drift):
        a, b = (est(y, ts, 0.6, function_class=fc, chunk_size=c) for c in (None, 9))
        np.testing.assert_allclose(np.asarray(b.drift(grid)), np.asarray(a.drift(grid)), rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(np.asarray(b.drift.std(grid)), np.asarray(a.drift.std(grid)), rtol=2e-3,
                                   atol=1e-5)


def test_conservative_drift_sandwich_against_numpy():
    """The streamed two-pass sandwich covariance against the one-pass float64 formula of the docstring."""
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(300, 1)) * 0.5
    fc = RidgeRegression(PolynomialBasis(1, 2), 1e-3)
    est = conservative_drift(pts.astype(np.float32), None, 1.0, function_class=fc, chunk_size=64)
    x = pts[:, 0]
    phi = np.stack([np.ones_like(x), x, x * x], 1)
    dphi = np.stack([np.zeros_like(x), np.ones_like(x), 2 * x], 1)
    n = len(x)
    G = phi.T @ phi / n + 1e-3 * 1e-3 * np.eye(3)
    w = -np.linalg.solve(G, dphi.sum(0) / n)
    u = phi * (phi @ w)[:, None] + dphi
    u = u - u.mean(0)
    Ginv = np.linalg.inv(G)
    cov = 0.25 / n * Ginv @ (u.T @ u / n) @ Ginv
    np.testing.assert_allclose(np.asarray(est.drift.weights)[:, 0], 0.5 * w, rtol=1e-3)
    np.testing.assert_allclose(np.asarray(est.drift.covariance)[0], cov, rtol=2e-3)


def test_select_function_class_euler_chunked_equals_one_chunk():
    y, ts = _ou_paths(8, 4, 60)
    a, b = (select_function_class(y, ts, 0.6, chunk_size=c) for c in (None, 11))
    assert int(a.index) == int(b.index)
    np.testing.assert_allclose(np.asarray(b.scores), np.asarray(a.scores), rtol=1e-4)


def test_weighted_rmse_past_the_old_kde_limit():
    """The KDE runs over chunks of observations: 700,000 observations on a 20 x 20 grid (2.8 x 10^8 pairs, past
    the 2^28 that used to be refused) give the closed form of a constant error."""
    obs = np.random.default_rng(0).normal(size=(700_000, 2)).astype(np.float32)
    assert float(weighted_rmse(lambda x: -x, lambda x: -x + 0.25, obs)) == pytest.approx(0.25, rel=1e-5)


def test_geodesic_targets_chunked_equal_one_batch():
    y, _ = _ou_paths(9, 3, 12)
    whole = geodesic_targets(jnp.asarray(y), 6, num_nodes=30, num_neighbors=4)
    for eps in (None, 0.05):
        a, b = (_geodesic_jit(jnp.asarray(y), 12, 6, 30, 4, 0.15, 1e-3, 2000, eps, c) for c in (None, 5))
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
    np.testing.assert_allclose(np.asarray(_geodesic_jit(jnp.asarray(y), 12, 6, 30, 4, 0.15, 1e-3, 2000, None, 5)),
                               np.asarray(whole), rtol=1e-6)


# --------------------------------------------------------------------------- memory set by the chunk


def _temp_bytes(fn, *args):
    return jax.jit(fn).lower(*args).compile().memory_analysis().temp_size_in_bytes


def test_infer_drift_memory_grows_with_the_data_not_with_its_bridges():
    """XLA's buffer plan of one EM iteration under the caller's jit: with a fixed chunk, 16x the trajectories add
    about a hundred bytes per interval (keys, targets, diagnostics), where all-at-once bridges add 14 KB each
    (64 particles x 8 steps of history)."""
    fc = RidgeRegression(PolynomialBasis(2, 3), 1e-3)
    ts = jnp.arange(17.0) * 0.5

    def run(X):
        return infer_drift(jax.random.key(0), X, ts, 0.6, function_class=fc, guidance="none", num_steps=1,
                           num_particles=64, num_time_steps=8, num_paths=2, chunk_size=8).drift.weights

    small, large = (_temp_bytes(run, jnp.zeros((n, 17, 2)) + 0.1 * jnp.arange(17.0)[:, None]) for n in (2, 32))
    assert (large - small) / (30 * 16) < 1024


def test_estimate_diffusion_memory_grows_with_the_data_not_with_its_features():
    def run(X):
        return estimate_diffusion(X, jnp.arange(65.0) * 0.01, measurement_noise=True, chunk_size=32).sigma

    X = jnp.asarray(_ou_paths(10, 64, 65)[0])
    small, large = _temp_bytes(run, X[:4]), _temp_bytes(run, X)
    # the (intervals x d) data and their padded copies (about 45 bytes an interval); the features, Jacobians and
    # d x d terms are per chunk (all at once they add about 260)
    assert (large - small) / (60 * 64) < 100


def test_plot_paths_thins_a_long_trajectory():
    import matplotlib

    matplotlib.use("Agg")
    from icmlx.sde import plot_paths

    y = np.cumsum(np.random.default_rng(0).normal(size=(3, 200_001, 2)), axis=1).astype(np.float32)
    ax = plot_paths(y, max_paths=2, max_points=1000)
    assert len(ax.lines) == 2
    xy = ax.lines[0].get_xydata()
    assert len(xy) <= 1001
    np.testing.assert_array_equal(xy[[0, -1]], y[0, [0, -1]])


def test_infer_drift_chunked_under_vmap_equals_eager_runs():
    ys = np.stack([_coarse(seed=s, n_traj=2)[0] for s in (11, 12)])
    ts = _coarse()[1]
    fc = RidgeRegression(PolynomialBasis(2, 1), 1e-3)

    def weights(y):
        return infer_drift(jax.random.key(4), y, ts, 0.6, function_class=fc, guidance="none", num_steps=1,
                           chunk_size=8, **_EM).drift.weights

    batched = jax.vmap(weights)(jnp.asarray(ys))
    for k in range(2):
        np.testing.assert_allclose(np.asarray(batched[k]), np.asarray(weights(ys[k])), rtol=1e-4, atol=1e-5)
