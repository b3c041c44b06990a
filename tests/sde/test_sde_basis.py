"""Function classes against float64 NumPy closed forms; metrics against a NumPy reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icmlx.sde import (
    FourierBasis,
    PolynomialBasis,
    RBFBasis,
    RidgeRegression,
    SparseGP,
    box_grid,
    rmse,
    weighted_rmse,
)


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    dt = 0.05
    dx = (-x + np.stack([x[:, 1], -x[:, 0]], 1)) * dt + 0.3 * np.sqrt(dt) * rng.normal(size=(n, 2))
    return x, dx, dt


def _rbf(x, c, ell):
    return np.exp(-0.5 * ((x[:, None] - c[None]) ** 2).sum(-1) / ell**2)


@pytest.mark.x64
def test_sparse_gp_matches_dtc_formula(x64):
    x, dx, dt = _data()
    sigma, ell, jitter = 0.3, 0.9, 1e-3
    c = np.asarray(box_grid(jnp.asarray(x), 5, pad=0.5), np.float64)
    f = SparseGP(RBFBasis(jnp.asarray(c), ell), jitter=jitter).fit(
        jnp.asarray(x), jnp.asarray(dx), dt, sigma)
    # Ruttor-Batz-Opper form: f(x) = k(x)^T (I + Lambda K)^{-1} d,
    # Lambda = s^-2 K^-1 I1 K^-1, d = s^-2 K^-1 I2, I1 = dt sum k k^T, I2 = sum k dx^T.
    K = _rbf(c, c, ell) + jitter * np.eye(len(c))
    kx = _rbf(x, c, ell)
    I1 = dt * kx.T @ kx
    I2 = kx.T @ dx
    Kinv = np.linalg.inv(K)
    Lam = Kinv @ I1 @ Kinv / sigma**2
    d = Kinv @ I2 / sigma**2
    xt = np.array([[0.3, -0.2], [1.0, 0.5]])
    ref = _rbf(xt, c, ell) @ np.linalg.solve(np.eye(len(c)) + Lam @ K, d)
    got = np.asarray(jax.vmap(f)(jnp.asarray(xt)), np.float64)
    tol = 1e-6 if x64 else 5e-2  # float32: near-singular Gram of a smooth kernel
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_ridge_polynomial_matches_lstsq():
    x, dx, dt = _data()
    sigma, ridge = 0.3, 1e-2
    basis = PolynomialBasis(2, 2)
    f = RidgeRegression(basis, ridge=ridge).fit(jnp.asarray(x, jnp.float32), jnp.asarray(dx, jnp.float32),
                                                dt, sigma)
    E = np.array(basis.exponents)
    Phi = np.prod(x[:, None, :] ** E[None], axis=-1)
    W = np.linalg.solve(dt * Phi.T @ Phi + sigma**2 * ridge * np.eye(len(E)), Phi.T @ dx)
    np.testing.assert_allclose(np.asarray(f.weights, np.float64), W, rtol=2e-3, atol=2e-3)


def test_fourier_features_approximate_rbf_kernel():
    b = FourierBasis.sample(jax.random.key(0), 4000, 2, lengthscale=0.8)
    x, y = jnp.array([0.1, 0.2]), jnp.array([0.5, -0.3])
    approx = float(b(x) @ b(y))
    exact = float(np.exp(-0.5 * np.sum((np.asarray(x) - np.asarray(y)) ** 2) / 0.64))
    assert abs(approx - exact) < 4 * np.sqrt(1.0 / 4000)  # MC s.e. of a mean of bounded cosines


def test_weighted_rmse_matches_numpy():
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(150, 2))
    f = lambda x: -x
    g = lambda x: -x + 0.3 * jnp.sin(x)
    got = float(weighted_rmse(f, g, jnp.asarray(obs, jnp.float32), grid_size=10, bandwidth=0.4))
    lo, hi = obs.min(0), obs.max(0)
    ax = [np.linspace(lo[i], hi[i], 10) for i in range(2)]
    G = np.stack([m.ravel() for m in np.meshgrid(*ax, indexing="ij")], -1)
    w = np.exp(-0.5 * ((G[:, None] - obs[None]) ** 2).sum(-1) / 0.16).sum(1)
    err = 0.3 * np.sin(G)
    ref = np.mean(np.sqrt((w[:, None] * err**2).sum(0) / w.sum()))
    np.testing.assert_allclose(got, ref, rtol=1e-4)
    ref_plain = np.sqrt(np.mean(err**2))
    np.testing.assert_allclose(float(rmse(f, g, jnp.asarray(obs, jnp.float32), grid_size=10)), ref_plain,
                               rtol=1e-4)


@settings(deadline=None, max_examples=5)
@given(c0=st.floats(-2, 2), c1=st.floats(-2, 2))
def test_weighted_rmse_of_constant_offset(c0, c1):
    # Invariant: a constant offset c gives wRMSE = mean_k |c_k| whatever the weights.
    obs = jnp.asarray(np.random.default_rng(0).normal(size=(50, 2)), jnp.float32)
    c = jnp.array([c0, c1], jnp.float32)
    got = float(weighted_rmse(lambda x: x, lambda x: x + c, obs, grid_size=6))
    np.testing.assert_allclose(got, (abs(c0) + abs(c1)) / 2, rtol=1e-4, atol=1e-5)


def test_ridge_rejects_bad_penalty():
    with pytest.raises(ValueError, match="ridge"):
        RidgeRegression(PolynomialBasis(2, 1), ridge=0.0)
    with pytest.raises(ValueError, match="degree"):
        PolynomialBasis(2, -1)
