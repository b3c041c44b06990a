"""estimate_diffusion against the σ that simulated the data: dense observations (τ = 0.01, Euler–Maruyama at
dt = 0.001), scalar / diagonal / full models, localization noise, ragged trajectories, and input errors.

Tolerances: with N increments in d coordinates the scalar estimator's relative standard error is about
1/sqrt(2 N d) (0.4% at N = 40,000, d = 1); the tolerances of the issue (3%, 5%) are several standard errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.sde import (
    NoGuidance,
    conservative_drift,
    estimate_diffusion,
    infer_drift,
    naive_drift,
    ou_drift,
    simulate,
    weighted_rmse,
)

TAU, DT = 0.01, 0.001


def _double_well(x):
    return x - x**3


@pytest.fixture(scope="module")
def double_well():
    sigma = 0.7
    p = simulate(jax.random.key(1), _double_well, sigma, jnp.zeros((20, 1)), 20.0, DT, save_every=10)
    return p, sigma


def _ou_with_diffusion(key, A, L, n_traj, t1):
    """Paths of dX = A X dt + L dW: simulate Z = L^{-1} X (drift L^{-1} A L, unit noise) and map back."""
    A, L = np.asarray(A), np.asarray(L)
    Linv = np.linalg.inv(L)
    p = simulate(key, ou_drift(jnp.asarray(Linv @ A @ L, jnp.zeros(()).dtype)), 1.0,
                 jnp.zeros((n_traj, A.shape[0])), t1, DT, save_every=round(TAU / DT))
    xs = np.einsum("ij,nkj->nki", L, np.asarray(p.xs, np.float64))
    return xs, np.asarray(p.ts, np.float64)


def test_scalar_sigma_double_well_and_within_its_standard_error(double_well):
    p, sigma = double_well
    est = estimate_diffusion(p, None)
    assert abs(float(est.sigma) / sigma - 1) < 0.03
    # the reported standard error explains the error (4 standard errors)
    assert abs(float(est.sigma) - sigma) < 4 * float(est.sigma_se)
    assert 0.001 < float(est.sigma_se) / sigma < 0.02
    assert est.noise is None and est.model == "scalar"


def test_scalar_sigma_2d_ou():
    A = np.array([[-1.0, 0.8], [-0.8, -1.0]])
    sigma = 0.5
    xs, ts = _ou_with_diffusion(jax.random.key(2), A, sigma * np.eye(2), 10, 10.0)
    est = estimate_diffusion(xs, ts)
    assert abs(float(est.sigma) / sigma - 1) < 0.03
    # the same with the known drift removed instead of the fitted one
    known = estimate_diffusion(xs, ts, drift=ou_drift(jnp.asarray(A, jnp.zeros(()).dtype)))
    assert abs(float(known.sigma) / sigma - 1) < 0.03


def test_diagonal_and_full_models():
    A = np.array([[-1.0, 0.5], [-0.5, -2.0]])
    sig = np.array([0.3, 0.8])
    xs, ts = _ou_with_diffusion(jax.random.key(3), A, np.diag(sig), 10, 10.0)
    est = estimate_diffusion(xs, ts, model="diagonal")
    assert est.sigma.shape == (2,)
    np.testing.assert_array_less(np.abs(np.asarray(est.sigma) / sig - 1), 0.05)
    # a correlated noise: sigma sigma^T = L L^T with L lower triangular
    L = np.array([[0.5, 0.0], [0.3, 0.4]])
    xs, ts = _ou_with_diffusion(jax.random.key(4), A, L, 10, 10.0)
    full = estimate_diffusion(xs, ts, model="full")
    np.testing.assert_allclose(np.asarray(full.sigma), L, atol=0.03)
    assert float(full.sigma[0, 1]) == 0.0
    np.testing.assert_allclose(np.asarray(full.covariance), L @ L.T, atol=0.03)
    assert np.all(np.asarray(full.sigma_se)[np.tril_indices(2)] > 0)


def test_measurement_noise_robust_estimator_against_the_plain_one(double_well):
    p, sigma = double_well
    a = 0.4 * sigma * np.sqrt(TAU)  # 40% of the per-step displacement
    y = np.asarray(p.xs, np.float64) + a * np.random.default_rng(0).normal(size=p.xs.shape)
    plain = estimate_diffusion(y, p.ts)
    robust = estimate_diffusion(y, p.ts, measurement_noise=True)
    # the plain estimator sees sigma^2 + 2 a^2 / tau = 1.32 sigma^2: about 15% too high
    assert float(plain.sigma) / sigma - 1 > 0.10
    assert abs(float(robust.sigma) / sigma - 1) < 0.05
    assert abs(float(robust.noise) / a - 1) < 0.15


def test_ragged_equals_equal_pieces(double_well):
    p, _ = double_well
    y, t = np.asarray(p.xs[0]), np.asarray(p.ts)  # one trajectory of 2001 states
    # equal pieces sharing their boundary states (so both cuts hold exactly the same intervals)
    equal = np.stack([y[i * 500: i * 500 + 501] for i in range(4)])
    equal_t = np.stack([t[i * 500: i * 500 + 501] for i in range(4)])
    cuts = [0, 300, 1100, 1450, 2000]
    ragged = [y[a: b + 1] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    ragged_t = [t[a: b + 1] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    for noise in (False, True):
        e1 = estimate_diffusion(equal, equal_t, measurement_noise=noise)
        e2 = estimate_diffusion(ragged, ragged_t, measurement_noise=noise)
        # without noise the intervals are the same; with it, the lag-1 pairs across the cuts differ (3 of 2000)
        tol = 1e-5 if not noise else 0.01
        np.testing.assert_allclose(float(e2.sigma), float(e1.sigma), rtol=tol)
    d1 = naive_drift(equal, equal_t, 0.7)
    d2 = naive_drift(ragged, ragged_t, 0.7)
    x = jnp.linspace(-1.5, 1.5, 7)[:, None]
    np.testing.assert_allclose(np.asarray(jax.vmap(d2.drift)(x)), np.asarray(jax.vmap(d1.drift)(x)),
                               rtol=1e-3, atol=1e-3)
    # the conservative estimator reads the states of all pieces (time order ignored)
    c1 = conservative_drift(np.concatenate(ragged), None, 0.7)
    c2 = conservative_drift(ragged, ragged_t, 0.7)
    np.testing.assert_allclose(np.asarray(c2.drift.weights), np.asarray(c1.drift.weights), rtol=1e-4, atol=1e-6)


def test_ragged_infer_drift_matches_equal_pieces_to_monte_carlo_error():
    """One double-well path (tau = 1, 120 intervals) cut into 3 equal pieces or 3 ragged ones (same intervals):
    the EM drifts differ by no more than two equal-piece runs with different keys do (3x, plus a floor)."""
    p = simulate(jax.random.key(0), _double_well, 0.7, jnp.zeros((1, 1)), 120.0, 0.01, save_every=100)
    y, t = np.asarray(p.xs[0]), np.asarray(p.ts)
    equal = np.stack([y[i * 40: i * 40 + 41] for i in range(3)])
    equal_t = np.stack([t[i * 40: i * 40 + 41] for i in range(3)])
    cuts = [0, 25, 89, 120]  # lengths 26, 65, 32: the same padded size as the equal pieces (one compilation)
    ragged = [y[a: b + 1] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    ragged_t = [t[a: b + 1] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    init = naive_drift(equal, equal_t, 0.7).drift
    cfg = dict(num_steps=3, num_particles=32, num_time_steps=10, guidance=NoGuidance(), init=init,
               function_class=None)
    e1 = infer_drift(jax.random.key(1), equal, equal_t, 0.7, **cfg)
    e2 = infer_drift(jax.random.key(2), equal, equal_t, 0.7, **cfg)
    r1 = infer_drift(jax.random.key(1), ragged, ragged_t, 0.7, **cfg)
    assert r1.ess.shape == (120,) and r1.degenerate.shape == (120,)
    mc = float(weighted_rmse(e1.drift, e2.drift, y))
    diff = float(weighted_rmse(e1.drift, r1.drift, y))
    assert diff < 3 * mc + 0.02, (diff, mc)


def test_errors():
    y = np.cumsum(np.random.default_rng(0).normal(size=(50, 2)), 0)
    ts = np.arange(50.0)
    with pytest.raises(ValueError, match="model must be one of"):
        estimate_diffusion(y, ts, model="isotropic")
    with pytest.raises(TypeError, match="measurement_noise"):
        estimate_diffusion(y, ts, measurement_noise="yes")
    with pytest.raises(TypeError, match="drift"):
        estimate_diffusion(y, ts, drift=3.0)
    with pytest.raises(ValueError, match="ragged observations .* need ts as a list of 2"):
        estimate_diffusion([y[:20], y[:30]], ts)
    with pytest.raises(ValueError, match="trajectory 1 has d = 1"):
        estimate_diffusion([y[:20], y[:30, :1]], [ts[:20], ts[:30]])
    with pytest.raises(ValueError, match="strictly increasing"):
        estimate_diffusion(y, ts[::-1])
