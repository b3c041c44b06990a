"""Pointwise standard errors of a fitted drift (LinearDrift.std) against the true drift, a closed form for the
constant-drift case, and the band in plot_drift."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.sde import LinearDrift, PolynomialBasis, RidgeRegression, naive_drift, ou_drift, plot_drift, simulate


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
