"""Horseshoe credible intervals and the MMLE of tau against SciPy quadrature, root finding and optimisation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, optimize
from scipy import stats as sps

from icmlx.stats import horseshoe_intervals, horseshoe_mmle_tau

X64 = bool(jax.config.jax_enable_x64)


def _posterior_cdf(t, z, tau):
    """P(mu <= t | z) by adaptive quadrature over kappa in y = log(kappa / (1 - kappa))."""

    from scipy.special import expit

    def dens(y):  # pi(kappa | z) kappa (1 - kappa), the Jacobian of y
        k, one_minus_k = expit(y), expit(-y)
        return k * np.sqrt(one_minus_k) * np.exp(-0.5 * k * z * z) / (one_minus_k + tau * tau * k)

    def num(y):
        one_minus_k = expit(-y)
        sd = np.sqrt(one_minus_k)
        if sd == 0.0:
            return dens(y) * float(t >= 0.0)
        return dens(y) * sps.norm.cdf((t - one_minus_k * z) / sd)

    lo, hi = -60.0 - 2.0 * np.log1p(z * z), 60.0 - 2.0 * np.log(tau)
    pts = sorted({-2.0 * np.log(tau), -np.log1p(z * z), 0.0})
    kw = dict(points=pts, limit=400, epsabs=0, epsrel=1e-11)
    return integrate.quad(num, lo, hi, **kw)[0] / integrate.quad(dens, lo, hi, **kw)[0]


@pytest.mark.x64_only
@pytest.mark.x64
def test_intervals_match_scipy_quadrature():
    zs = np.array([0.0, 0.7, 2.0, -3.5, 5.0, 9.0])
    for tau in (0.01, 0.1, 0.8):
        ci = horseshoe_intervals(jnp.asarray(zs), tau, level=0.9)
        for i, z in enumerate(zs):
            for q, got in ((0.05, ci.lower[i]), (0.5, ci.median[i]), (0.95, ci.upper[i])):
                ref = optimize.brentq(lambda t, z=z, tau=tau, q=q: _posterior_cdf(t, z, tau) - q, -20.0, 20.0,
                                      xtol=1e-12)
                assert float(got) == pytest.approx(ref, abs=1e-6), (tau, z, q)


def test_intervals_contract():
    x = jnp.asarray([[0.0, 1.0, 4.0], [-6.0, 0.5, 2.0]], jnp.result_type(float))
    ci = horseshoe_intervals(x, jnp.asarray([[0.05], [0.2]], x.dtype), sigma=2.0)
    assert ci.lower.shape == x.shape
    lo, med, hi = np.asarray(ci.lower), np.asarray(ci.median), np.asarray(ci.upper)
    assert np.all(lo <= med) and np.all(med <= hi)
    np.testing.assert_allclose(float(ci.median[0, 0]), 0.0, atol=1e-5)  # symmetric posterior at x = 0
    with pytest.raises(ValueError, match="level"):
        horseshoe_intervals(x, 0.1, level=1.5)


def _neg_loglik(log_tau, z):
    tau = np.exp(log_tau)

    def m(zi):
        def f(v):
            lam = np.exp(v)
            var = 1.0 + tau * tau * lam * lam
            return lam * np.exp(-0.5 * zi * zi / var) / np.sqrt(2 * np.pi * var) * 2.0 / (np.pi * (1.0 + lam * lam))

        return integrate.quad(f, -30.0, 30.0 - log_tau, points=[0.0, -log_tau, np.log1p(abs(zi)) - log_tau],
                              limit=400, epsabs=0, epsrel=1e-11)[0]

    return -sum(np.log(m(zi)) for zi in z)


@pytest.mark.x64_only
@pytest.mark.x64
def test_mmle_matches_scipy_optimiser():
    rng = np.random.default_rng(0)
    n = 120
    z = rng.standard_normal(n)
    z[:8] += rng.choice([-1.0, 1.0], 8) * rng.uniform(3.0, 8.0, 8)
    got = float(horseshoe_mmle_tau(jnp.asarray(z), binned=False))  # every test (the binned default: elsewhere)
    ref = optimize.minimize_scalar(_neg_loglik, bounds=(np.log(1.0 / n), 0.0), args=(z,), method="bounded",
                                   options={"xatol": 1e-9})
    assert got == pytest.approx(np.exp(ref.x), rel=1e-4)
