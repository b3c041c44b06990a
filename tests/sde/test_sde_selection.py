"""select_function_class: held-out likelihood picks a class that contains the true drift over one that does not,
and scores match a float64 NumPy evaluation of the Euler likelihood."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.sde import PolynomialBasis, RidgeRegression, naive_drift, select_function_class, simulate


def _double_well(x):
    return x - x**3


def test_selection_prefers_a_class_containing_the_double_well():
    """Double well at tau = 0.05: cubic monomials (containing x - x^3) score above linear ones, and the held-out
    score of the chosen class is the best; the chosen class's naive fit is close to the truth on the bulk."""
    p = simulate(jax.random.key(0), _double_well, 0.7, jnp.zeros((12, 1)), 30.0, 0.01, save_every=5)
    lin = RidgeRegression(PolynomialBasis(1, 1), 1e-3)
    cub = RidgeRegression(PolynomialBasis(1, 3), 1e-3)
    sel = select_function_class(p, None, 0.7, candidates=[lin, cub])
    assert sel.index == 1 and float(sel.scores[1]) > float(sel.scores[0])
    x = jnp.linspace(-1.2, 1.2, 9)[:, None]
    f = naive_drift(p, None, 0.7, function_class=sel.function_class).drift(x)
    assert float(jnp.sqrt(jnp.mean((f - _double_well(x)) ** 2))) < 0.3


@pytest.mark.x64
def test_scores_are_the_held_out_euler_likelihood():
    """The score of a class against a float64 NumPy fit on the first 75% of the intervals and Euler
    log-likelihood on the rest (monomials of degree 2, uneven times, sigma given)."""
    rng = np.random.default_rng(0)
    ts = np.concatenate([[0.0], np.cumsum(rng.uniform(0.02, 0.08, 199))])
    y = np.cumsum(0.5 * np.sqrt(np.diff(ts, prepend=0.0))[:, None] * rng.normal(size=(200, 1)), 0)
    sigma, ridge = 0.5, 1e-3
    sel = select_function_class(y, ts, sigma, candidates=[RidgeRegression(PolynomialBasis(1, 2), ridge)])
    x, dx, h = y[:-1, 0], np.diff(y[:, 0]), np.diff(ts)
    k = int(round(199 * 0.75))
    phi = np.stack([np.ones_like(x), x, x**2], 1)
    A = (phi[:k] * h[:k, None]).T @ phi[:k] + sigma**2 * ridge * np.eye(3)
    w = np.linalg.solve(A, phi[:k].T @ dx[:k])
    r = dx[k:] - (phi[k:] @ w) * h[k:]
    ref = np.mean(-0.5 * r**2 / (sigma**2 * h[k:]) - 0.5 * np.log(2 * np.pi * sigma**2 * h[k:]))
    rtol = 1e-9 if jnp.zeros(()).dtype == jnp.float64 else 1e-4
    np.testing.assert_allclose(float(sel.scores[0]), ref, rtol=rtol)


def test_selection_errors():
    y = np.cumsum(np.random.default_rng(1).normal(size=(50, 2)), 0)
    ts = np.arange(50.0)
    with pytest.raises(ValueError, match="holdout"):
        select_function_class(y, ts, 1.0, holdout=1.0)
    with pytest.raises(TypeError, match="holdout"):
        select_function_class(y, ts, 1.0, holdout="half")
    with pytest.raises(ValueError, match="candidates"):
        select_function_class(y, ts, 1.0, candidates=[])
    with pytest.raises(ValueError, match="d = 1"):
        select_function_class(y, ts, 1.0, candidates=[RidgeRegression(PolynomialBasis(1, 1))])
