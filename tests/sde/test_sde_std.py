"""Pointwise standard errors of a fitted drift (LinearDrift.std) against the true drift, a closed form for the
constant-drift case, and the band in plot_drift."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.sde import (
    LinearDrift,
    PolynomialBasis,
    RidgeRegression,
    conservative_drift,
    infer_drift,
    naive_drift,
    ou_drift,
    plot_drift,
    simulate,
)


def _double_well(x):
    return x - x**3


def test_90_percent_band_covers_the_true_drift():
    """Dense double-well data (tau = 0.01, sigma = 0.7 given), default class: the nominal 90% band
    f_hat +- 1.645 std covers the true drift on >= 80% of a grid over the bulk of the states, in each of three
    independent data sets (the errors are smooth in x, so one data set's coverage moves in steps of many points)."""
    x = jnp.linspace(-1.3, 1.3, 27)[:, None]
    truth = np.asarray(_double_well(x))[:, 0]
    for k in range(3):
        p = simulate(jax.random.key(10 + k), _double_well, 0.7, jnp.zeros((10, 1)), 20.0, 0.001, save_every=10)
        est = naive_drift(p, None, 0.7)
        f, s = np.asarray(est.drift(x))[:, 0], np.asarray(est.drift.std(x))[:, 0]
        cover = np.mean(np.abs(f - truth) <= 1.645 * s)
        assert cover >= 0.8, (k, cover)
        assert np.all(s > 0)


@pytest.mark.x64
def test_std_of_a_constant_drift_is_sigma_over_root_time():
    """Features (1,): the estimate is sum(dx) / sum(dt) with standard error sigma / sqrt(sum dt) (closed form)."""
    rng = np.random.default_rng(0)
    dts = rng.uniform(0.01, 0.1, 300)
    sigma = 0.8
    dx = sigma * np.sqrt(dts)[:, None] * rng.normal(size=(300, 2))
    fit = RidgeRegression(PolynomialBasis(2, 0), 1e-12).fit(rng.normal(size=(300, 2)), dx, dts, sigma)
    rtol = 1e-9 if jnp.zeros(()).dtype == jnp.float64 else 1e-4  # the dtype's rounding over 300 terms
    np.testing.assert_allclose(np.asarray(fit.std(np.zeros((3, 2)))), sigma / np.sqrt(dts.sum()), rtol=rtol)
    np.testing.assert_allclose(np.asarray(fit.weights[0]), dx.sum(0) / dts.sum(), rtol=rtol)


def test_std_errors_and_plot_band():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    plain = LinearDrift(PolynomialBasis(1, 1), jnp.zeros((2, 1)))
    with pytest.raises(ValueError, match="no weight covariance"):
        plain.std(jnp.zeros(1))
    rng = np.random.default_rng(1)
    fit = RidgeRegression(PolynomialBasis(1, 1), 1e-6).fit(rng.normal(size=(200, 1)), 0.1 * rng.normal(size=(200, 1)),
                                                           0.01, 1.0)
    with pytest.raises(ValueError, match="shape"):
        fit.std(jnp.zeros(2))
    ax = plot_drift(fit, bounds=(-1, 1), band=1.645, num_points=5)
    assert len(ax.collections) == 1  # the shaded band
    assert "1.645 s.e." in [t.get_text() for t in ax.get_legend().get_texts()][-1]
    with pytest.raises(ValueError, match="band"):
        plot_drift(plain, bounds=(-1, 1), band=1.645)
    with pytest.raises(ValueError, match="band"):
        plot_drift(fit, bounds=(-1, 1), band=-1.0)
    with pytest.raises(ValueError, match="1-D only"):
        plot_drift(ou_drift(-jnp.eye(2)), bounds=((-1, 1), (-1, 1)), band=1.0)


def _monomials(x, exponents):
    """Monomial features and their Jacobian in float64 NumPy: (n, m) and (n, m, d)."""
    e = np.asarray(exponents, float)  # (m, d)
    phi = np.prod(x[:, None, :] ** e[None], -1)
    jac = np.zeros(phi.shape + (x.shape[1],))
    for k in range(x.shape[1]):
        ek = e.copy()
        ek[:, k] = np.maximum(ek[:, k] - 1, 0)
        jac[..., k] = e[None, :, k] * np.prod(x[:, None, :] ** ek[None], -1)
    return phi, jac


@pytest.mark.x64
def test_conservative_std_is_the_sandwich_covariance():
    """conservative_drift's std against a float64 NumPy sandwich covariance of the score-matching M-estimator
    (quadratic monomials in 2-D, independent Gaussian states), and one standard error per coordinate."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=(600, 2)) * np.array([0.5, 1.2])
    basis, C, sigma = PolynomialBasis(2, 2), 1e-3, 0.9
    est = conservative_drift(y, None, sigma, function_class=RidgeRegression(basis, 1.0), regularization=C)
    phi, jac = _monomials(y, basis.exponents)
    n, m = phi.shape
    G = phi.T @ phi / n + C * np.eye(m)
    W = -np.linalg.solve(G, jac.sum(0) / n)
    x = rng.normal(size=(7, 2))
    px, _ = _monomials(x, basis.exponents)
    ref = np.empty((7, 2))
    for k in range(2):
        u = phi * (phi @ W[:, k])[:, None] + jac[..., k]
        u = u - u.mean(0)
        Gi = np.linalg.inv(G)
        cov = sigma**4 / (4 * n) * Gi @ (u.T @ u / n) @ Gi
        ref[:, k] = np.sqrt(np.einsum("im,ml,il->i", px, cov, px))
    rtol = 1e-6 if jnp.zeros(()).dtype == jnp.float64 else 2e-2  # float32: a 6x6 Gram of quartic moments
    np.testing.assert_allclose(np.asarray(est.drift(x)), px @ (0.5 * sigma**2 * W), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(np.asarray(est.drift.std(x)), ref, rtol=rtol)
    assert not np.allclose(ref[:, 0], ref[:, 1])  # the coordinates' errors differ


def test_conservative_std_matches_the_spread_over_data_sets():
    """Independent N(0, 0.5^2) states (true drift -2x at sigma = 1): the sandwich standard error at x = 0.8 is
    within 25% of the spread of the estimate over 200 independent data sets (the spread's own relative Monte Carlo
    error is about 1/sqrt(2 * 200) = 5%)."""
    rng = np.random.default_rng(4)
    fc = RidgeRegression(PolynomialBasis(1, 1), 1.0)
    x = jnp.array([[0.8]])
    vals, stds = [], []
    for _ in range(200):
        est = conservative_drift(0.5 * rng.normal(size=(300, 1)), None, 1.0, function_class=fc, regularization=1e-6)
        vals.append(float(est.drift(x)[0, 0]))
        stds.append(float(est.drift.std(x)[0, 0]))
    assert abs(np.mean(vals) + 1.6) < 0.1  # -2 * 0.8
    assert 0.75 < np.mean(stds) / np.std(vals) < 1.25, (np.mean(stds), np.std(vals))


@pytest.mark.x64
def test_em_std_of_a_constant_drift_is_sigma_over_root_time():
    """infer_drift with the constant feature only: every augmented path of an interval spans its tau, so the
    final M-step's Gram is the total observed time T and the standard error is sigma / sqrt(T + sigma^2 ridge)
    (closed form), with the sigma that step used (given, or the EM's previous estimate)."""
    rng = np.random.default_rng(5)
    ts = np.cumsum(rng.uniform(0.3, 0.7, 40))
    ts = np.concatenate([[0.0], ts])
    obs = np.cumsum(0.8 * np.sqrt(np.diff(ts, prepend=0.0))[:, None] * rng.normal(size=(41, 1)), 0)
    ridge = 1e-3
    fc = RidgeRegression(PolynomialBasis(1, 0), ridge)
    T = ts[-1] - ts[0]
    for sigma in (0.8, None):
        sol = infer_drift(jax.random.key(0), obs, ts, sigma, function_class=fc, num_steps=3, num_particles=16,
                          num_time_steps=4)
        assert not np.any(np.asarray(sol.degenerate))
        s = 0.8 if sigma is not None else float(sol.history.sigma[-2])
        rtol = 1e-9 if jnp.zeros(()).dtype == jnp.float64 else 1e-4
        np.testing.assert_allclose(np.asarray(sol.drift.std(np.zeros((2, 1)))), s / np.sqrt(T + s**2 * ridge),
                                   rtol=rtol)
