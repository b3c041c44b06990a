"""icmlx.sde at the sizes users record: the streamed (chunked) computations equal the all-at-once ones, sizes
past the int32 boundaries run, and the diffusion estimator's standard error equals a float64 NumPy reference
(lag products inside a trajectory only)."""

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


def test_estimate_diffusion_under_jit_and_vmap_with_chunks():
    y, ts = _ou_paths(4, 3, 50)
    eager = estimate_diffusion(y, ts, chunk_size=16).sigma
    jitted = jax.jit(lambda v: estimate_diffusion(v, ts, chunk_size=16).sigma)(jnp.asarray(y))
    batched = jax.vmap(lambda v: estimate_diffusion(v, ts, chunk_size=16).sigma)(jnp.stack([jnp.asarray(y)] * 2))
    np.testing.assert_allclose(float(jitted), float(eager), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(batched), float(eager), rtol=1e-6)


def test_chunk_size_errors():
    y, ts = _ou_paths(5, 1, 20)
    with pytest.raises(ValueError, match="chunk_size"):
        estimate_diffusion(y, ts, chunk_size=0)
    with pytest.raises(TypeError, match="chunk_size"):
        estimate_diffusion(y, ts, chunk_size=2.5)
