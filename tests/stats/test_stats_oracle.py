"""Bayes oracle, exact threshold risks and the exact ABOS ratio table (notes section 6, checks 3 and 5)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

from icmlx.stats import (
    OracleGamma2,
    SparsityGamma2,
    abos_risk_ratio,
    bayes_oracle_test,
    bayes_oracle_threshold,
    bfdr_threshold,
    bonferroni_threshold,
    calibrate_tau2,
    horseshoe_threshold,
    relative_belief_gamma2,
    relative_belief_threshold,
    threshold_risk,
)

X64 = bool(jax.config.jax_enable_x64)

# Exact table of the research notes (section 4, primary design C = 1, p = n^-1/2): quoted to 4-5 digits.
NS = np.array([1e2, 1e3, 1e4, 1e5, 1e6, 1e8])
TABLE = {
    "u": [6.223, 9.046, 11.645, 14.157, 16.624, 21.488],
    "c2_bo": [7.396, 10.162, 12.735, 15.230, 17.686, 22.536],
    "rbo_np": [0.7473, 0.7294, 0.7199, 0.7139, 0.7096, 0.7038],
    "h1": [1.0168, 1.0118, 1.0091, 1.0075, 1.0064, 1.0049],
    "h2": [1.1778, 1.1822, 1.1763, 1.1697, 1.1637, 1.1533],
    "naive": [2.135, 5.125, 13.83, 39.34, 114.7, 1010.0],
    "bonf": [1.0829, 1.0980, 1.1129, 1.1255, 1.1358, 1.1513],
    "hs": [1.0538, 1.0418, 1.0351, 1.0309, 1.0280, None],
    "hs_thr": [3.284, 3.664, 3.995, 4.299, 4.581, None],
}


@pytest.fixture(scope="module")
def design():
    p = jnp.asarray(NS**-0.5, dtype=jnp.result_type(float))
    tau2 = calibrate_tau2(p)
    return p, tau2


def test_oracle_point_values():
    # notes check 3: C=1, n=1e4, p=0.01
    p = 0.01
    tau2 = float(calibrate_tau2(p))
    assert tau2 == pytest.approx(11.645, abs=1e-3)
    c2 = bayes_oracle_threshold(p, tau2)
    assert float(c2) == pytest.approx(12.735, abs=1e-3)
    r = threshold_risk(c2, p, tau2)
    assert float(r.type1) == pytest.approx(3.590e-4, rel=1e-3)
    assert float(r.type2) == pytest.approx(0.6844, abs=1e-4)
    assert float(r.risk) / p == pytest.approx(0.7199, abs=1e-3)


def test_oracle_threshold_is_bayes_rule():
    # the oracle threshold is where the two weighted densities cross (SciPy float64 reference)
    for p, tau2, sigma, d0, dA in [(0.01, 11.645, 1.0, 1.0, 1.0), (0.2, 4.0, 2.0, 3.0, 1.0)]:
        c = np.sqrt(float(bayes_oracle_threshold(p, tau2, sigma, d0, dA))) * sigma
        lhs = p * dA * sps.norm.pdf(c, scale=np.sqrt(sigma**2 + tau2))
        rhs = (1 - p) * d0 * sps.norm.pdf(c, scale=sigma)
        assert lhs == pytest.approx(rhs, rel=1e-4)


def test_threshold_risk_against_scipy_and_minimised_by_oracle():
    p, tau2 = 0.05, 9.0
    c2s = jnp.linspace(0.5, 30.0, 300)
    r = threshold_risk(c2s, p, tau2)
    c = np.sqrt(np.asarray(c2s, np.float64))
    t1 = 2 * sps.norm.sf(c)
    t2 = 2 * sps.norm.cdf(c / np.sqrt(1 + tau2)) - 1
    tol = 1e-12 if X64 else 2e-6
    np.testing.assert_allclose(np.asarray(r.type1, np.float64), t1, rtol=tol * 10, atol=tol)
    np.testing.assert_allclose(np.asarray(r.type2, np.float64), t2, atol=tol)
    r_bo = float(threshold_risk(bayes_oracle_threshold(p, tau2), p, tau2).risk)
    assert r_bo <= float(jnp.min(r.risk)) * (1 + 1e-6)


def test_oracle_lfdr_and_decisions():
    x = jnp.linspace(-6.0, 6.0, 101)
    res = bayes_oracle_test(x, p=0.1, tau2=4.0)
    xx = np.asarray(x, np.float64)
    f0 = 0.9 * sps.norm.pdf(xx)
    f1 = 0.1 * sps.norm.pdf(xx, scale=np.sqrt(5.0))
    np.testing.assert_allclose(np.asarray(res.lfdr, np.float64), f0 / (f0 + f1), rtol=1e-5)
    far = np.abs(f0 / (f0 + f1) - 0.5) > 1e-4
    assert np.array_equal(np.asarray(res.reject)[far], (f1 > f0)[far])


@pytest.mark.x64
def test_exact_ratio_table(design):
    # notes check 5: match the exact table to 1e-3 (relative for ratios > 2)
    p, tau2 = design
    np.testing.assert_allclose(np.asarray(tau2), TABLE["u"], atol=1e-3)
    c2 = bayes_oracle_threshold(p, tau2)
    np.testing.assert_allclose(np.asarray(c2), TABLE["c2_bo"], atol=1e-3)
    rbo = threshold_risk(c2, p, tau2).risk / p
    np.testing.assert_allclose(np.asarray(rbo), TABLE["rbo_np"], atol=1e-3)
    # the rule objects hold one static (p, tau2) each: evaluate them along the grid
    g_h1 = jnp.stack([relative_belief_gamma2(OracleGamma2(p=pi, tau2=ti)) for pi, ti in zip(p.tolist(), tau2.tolist())])
    h1 = abos_risk_ratio(relative_belief_threshold(g_h1.astype(p.dtype)), p, tau2)
    np.testing.assert_allclose(np.asarray(h1), TABLE["h1"], atol=1e-3)
    g_h2 = jnp.stack([relative_belief_gamma2(SparsityGamma2(p=pi)) for pi in p.tolist()])
    h2 = abos_risk_ratio(relative_belief_threshold(g_h2.astype(p.dtype)), p, tau2)
    np.testing.assert_allclose(np.asarray(h2), TABLE["h2"], atol=1e-3)
    naive = abos_risk_ratio(relative_belief_threshold(tau2), p, tau2)
    np.testing.assert_allclose(np.asarray(naive), TABLE["naive"], rtol=1e-3)
    bonf = abos_risk_ratio(bonferroni_threshold(jnp.asarray(NS, p.dtype), 0.05), p, tau2)
    np.testing.assert_allclose(np.asarray(bonf), TABLE["bonf"], atol=1e-3)
    thr = horseshoe_threshold(p[:5])
    np.testing.assert_allclose(np.asarray(thr), TABLE["hs_thr"][:5], atol=1e-3)
    hs = abos_risk_ratio(thr**2, p[:5], tau2[:5])
    np.testing.assert_allclose(np.asarray(hs), TABLE["hs"][:5], atol=1e-3)
    # qualitative claims: H1 strictly decreasing and < 1.02 for n >= 1e3; naive > 2 and increasing;
    # Bonferroni increasing for p = n^-1/2
    h1 = np.asarray(h1)
    assert np.all(np.diff(h1) < 0) and np.all(h1[1:] < 1.02)
    assert np.all(np.asarray(naive) > 2) and np.all(np.diff(np.asarray(naive)) > 0)
    assert np.all(np.diff(np.asarray(bonf)) > 0)


def test_bfdr_bh_ratios(design):
    # notes: BH(.05) as its BFDR threshold: 1.042, 1.021, 1.012, 1.006, 1.003 (n = 1e2..1e6)
    p, tau2 = design
    r = abos_risk_ratio(bfdr_threshold(0.05, p, tau2), p, tau2)
    np.testing.assert_allclose(np.asarray(r)[:5], [1.042, 1.021, 1.012, 1.006, 1.003], atol=1e-3)
    # BFDR at the solution equals alpha (closed form via SciPy)
    c = np.sqrt(np.asarray(bfdr_threshold(0.05, p, tau2), np.float64))
    pp, u = np.asarray(p, np.float64), np.asarray(tau2, np.float64)
    t1 = 2 * sps.norm.sf(c)
    pw = 2 * sps.norm.sf(c / np.sqrt(1 + u))
    bfdr = (1 - pp) * t1 / ((1 - pp) * t1 + pp * pw)
    np.testing.assert_allclose(bfdr, 0.05, rtol=1e-3)


def test_calibrate_regime():
    p = jnp.asarray([0.1, 1e-3, 1e-6])
    for C in [0.5, 1.0, 2.0]:
        u = np.asarray(calibrate_tau2(p, C), np.float64)
        f = (1 - np.asarray(p, np.float64)) / np.asarray(p, np.float64)
        np.testing.assert_allclose(np.log(u * f * f) / u, C, rtol=1e-4)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"p must lie in \(0"):
        bayes_oracle_threshold(1.2, 1.0)
    with pytest.raises(ValueError, match="tau2"):
        threshold_risk(1.0, 0.1, -1.0)
    with pytest.raises(ValueError, match="sigma"):
        bayes_oracle_test(jnp.zeros(3), p=0.1, tau2=1.0, sigma=0.0)
    with pytest.raises((ValueError, RuntimeError), match="p must lie"):
        jax.jit(lambda p: bayes_oracle_threshold(p, 1.0))(jnp.array(0.0))
    with pytest.raises((ValueError, RuntimeError), match="NaN"):
        bayes_oracle_test(jnp.array([jnp.nan, 1.0]), p=0.1, tau2=1.0)
    with pytest.raises((ValueError, RuntimeError), match="no tau2"):
        calibrate_tau2(0.4, 1.0)  # 2 log(1.5) < 1: no regime solution
