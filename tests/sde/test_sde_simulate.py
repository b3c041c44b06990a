"""Simulation: OU stationary law (closed-form Lyapunov solution via SciPy), Euler-Maruyama exactness,
subsampling and input errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from beartype.roar import BeartypeCallHintViolation

from icmlx.sde import (
    SamplePaths,
    ou_drift,
    ou_stationary_covariance,
    simulate,
    subsample,
)

A = np.array([[-1.0, 2.0], [-2.0, -1.0]])
SIGMA = 0.5


@pytest.mark.x64
def test_ou_stationary_statistics():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    S_ref = scipy_linalg.solve_continuous_lyapunov(A, -(SIGMA**2) * np.eye(2))
    n_traj = 400
    p = simulate(jax.random.key(0), ou_drift(jnp.asarray(A)), SIGMA, jnp.zeros((n_traj, 2)), 10.0,
                 0.01, save_every=100)
    xs = np.asarray(p.xs[:, 4:], np.float64)  # t = 4..10; e^{-4} transient is negligible
    flat = xs.reshape(-1, 2)
    S_hat = flat.T @ flat / flat.shape[0]
    # Correlation time ~1 => about 400 x 4 effective samples; s.e. of a covariance entry <= S sqrt(2/n_eff)
    se = np.sqrt(2.0 / (n_traj * 4)) * np.max(np.diag(S_ref))
    assert np.all(np.abs(S_hat - S_ref) < 4 * se + 0.01 * np.max(S_ref))  # + O(dt) Euler bias
    assert np.all(np.abs(flat.mean(0)) < 4 * np.sqrt(np.max(np.diag(S_ref)) / (n_traj * 4)))
    np.testing.assert_allclose(np.asarray(ou_stationary_covariance(jnp.asarray(A), SIGMA)), S_ref,
                               rtol=1e-5, atol=1e-6)


def test_euler_maruyama_steps_are_gaussian_with_right_moments():
    # Dense path with f = 0: increments must be iid N(0, sigma^2 dt) (checks sigma and dt scaling).
    p = simulate(jax.random.key(1), lambda x: jnp.zeros_like(x), 0.7, jnp.zeros((8, 2)), 5.0, 0.01)
    inc = np.diff(np.asarray(p.xs, np.float64), axis=1).reshape(-1)
    n = inc.size
    var = 0.7**2 * 0.01
    assert abs(inc.mean()) < 4 * np.sqrt(var / n)
    assert abs(inc.var() / var - 1.0) < 4 * np.sqrt(2.0 / n)
    np.testing.assert_allclose(np.asarray(p.ts[:3]), [0.0, 0.01, 0.02], atol=1e-6)


def test_subsample_and_shapes():
    p = SamplePaths(ts=jnp.arange(11.0), xs=jnp.arange(44.0).reshape(2, 11, 2))
    s = subsample(p, 5)
    assert s.xs.shape == (2, 3, 2)
    np.testing.assert_array_equal(np.asarray(s.ts), [0.0, 5.0, 10.0])
    np.testing.assert_array_equal(np.asarray(s.xs[:, 1]), np.asarray(p.xs[:, 5]))
    with pytest.raises(ValueError, match="every"):
        subsample(p, 0)


def test_simulate_bad_input():
    f = ou_drift(-jnp.eye(2))
    with pytest.raises(ValueError, match="sigma"):
        simulate(jax.random.key(0), f, 0.0, jnp.zeros((2, 2)), 1.0, 0.1)
    with pytest.raises(ValueError, match="x0 must have shape"):
        simulate(jax.random.key(0), f, 1.0, jnp.zeros((2, 2, 2)), 1.0, 0.1)
    with pytest.raises(ValueError, match="dt"):
        simulate(jax.random.key(0), f, 1.0, jnp.zeros((2, 2)), 1.0, -0.1)
    with pytest.raises((ValueError, TypeError, BeartypeCallHintViolation)):  # beartype fires first in tests
        ou_drift(jnp.zeros((2, 3)))
