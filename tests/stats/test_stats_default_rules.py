"""The default rules: `EBLocalFDRGamma2` and ``horseshoe_test(tau="lfdr")``, against float64 NumPy/SciPy references.

Both estimate the two-groups local fdr (Storey's pi0, a grid NPMLE of the alternative by EM) and take the threshold
on |z| that minimises the estimated misclassification risk. The references: Storey's bootstrap pi0 in closed form
(R qvalue's formula), the same EM written in float64 NumPy, the threshold by brute force over every candidate
cutoff, the relative-belief threshold equation solved by SciPy's brentq and the horseshoe's E[1 - kappa | c; tau] = 1/2
by SciPy quadrature.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from _horseshoe_quad import horseshoe_shrinkage_quad
from _lfdr_reference import npmle_lfdr
from icmlx.stats import (
    EBLocalFDRGamma2,
    horseshoe_test,
    relative_belief_gamma2,
    relative_belief_test,
    simulate_two_groups,
)

X64 = bool(jax.config.jax_enable_x64)


def _brute_force_cutoff(z, lfdr):
    """The cutoff on |z| minimising sum_{|z|>c} lfdr + sum_{|z|<=c} (1 - lfdr), over every gap between sorted |z|."""
    a = np.sort(np.abs(z))[::-1]
    cands = np.concatenate([[a[0] + 1.0], 0.5 * (a[:-1] + a[1:]), [0.5 * a[-1]]])
    risks = [np.sum(np.where(np.abs(z) > c, lfdr, 1.0 - lfdr)) for c in cands]
    return cands[int(np.argmin(risks))], float(np.min(risks))






def _data(n=2000, reps=3, seed=5):
    dt = jnp.result_type(float)
    return simulate_two_groups(jax.random.key(seed), n, 0.05, 9.0, reps, dtype=dt).x


@pytest.mark.x64
def test_eb_lfdr_gamma2_thresholds_at_the_estimated_risk_minimiser():
    x = _data()
    z = np.asarray(x, np.float64)
    lfdr = np.stack([npmle_lfdr(r) for r in z])
    res = relative_belief_test(x, gamma2=EBLocalFDRGamma2())
    g2 = np.asarray(relative_belief_gamma2(EBLocalFDRGamma2(), x=x), np.float64)
    for r in range(z.shape[0]):
        c, best = _brute_force_cutoff(z[r], lfdr[r])
        # the RB threshold equation (1 + 1/g) log(1 + g) = c^2, solved by SciPy
        g = optimize.brentq(lambda lg, c=c: (1.0 + np.exp(-lg)) * np.log1p(np.exp(lg)) - c * c, -30.0, 200.0,
                            xtol=1e-14)
        assert np.log(g2[r, 0]) == pytest.approx(g, rel=1e-9 if X64 else 1e-4)
        got = np.asarray(res.reject[r])
        near = np.abs(np.abs(z[r]) - c) < (1e-9 if X64 else 1e-4) * c
        assert np.array_equal(got[~near], (np.abs(z[r]) > c)[~near])
        # the rule's decisions attain the brute-force minimum of the estimated risk
        assert np.sum(np.where(got, lfdr[r], 1.0 - lfdr[r])) == pytest.approx(best, rel=1e-9 if X64 else 1e-4)
    assert np.array_equal(np.asarray(relative_belief_test(x, gamma2="eb_lfdr").reject), np.asarray(res.reject))
    assert np.array_equal(np.asarray(relative_belief_test(x).reject), np.asarray(res.reject))  # the default


@pytest.mark.x64
def test_horseshoe_lfdr_tau_puts_the_cutoff_at_the_risk_minimiser():
    x = _data(seed=6, reps=2)
    z = np.asarray(x, np.float64)
    lfdr = np.stack([npmle_lfdr(r) for r in z])
    res = horseshoe_test(x)  # tau="lfdr", the default
    for r in range(z.shape[0]):
        c, _ = _brute_force_cutoff(z[r], lfdr[r])
        # SciPy: the tau with E[1 - kappa | z = c; tau] = 1/2 by adaptive quadrature and brentq on log tau
        lt = optimize.brentq(lambda lt, c=c: horseshoe_shrinkage_quad(c, np.exp(lt)) - 0.5, -30.0, 0.0, xtol=1e-12)
        assert np.log(float(res.tau[r])) == pytest.approx(lt, rel=1e-6 if X64 else 1e-3)
        assert float(res.threshold[r]) == pytest.approx(c, rel=1e-6 if X64 else 1e-3)
        got = np.asarray(res.reject[r])
        near = np.abs(np.abs(z[r]) - c) < 1e-3 * c
        assert np.array_equal(got[~near], (np.abs(z[r]) > c)[~near])
    assert np.array_equal(np.asarray(horseshoe_test(x, "lfdr").reject), np.asarray(res.reject))


def test_defaults_on_pure_noise_and_on_tiny_families():
    # pure noise: Storey's pi0 near 1 and an alternative fitted near 0 keep every fdr above 1/2 or nearly so
    x = jax.random.normal(jax.random.key(0), (20, 5000))
    assert float(relative_belief_test(x).reject.sum(-1).mean()) < 0.5
    assert float(horseshoe_test(x).reject.sum(-1).mean()) < 0.5
    small = jnp.array([0.1, -0.3, 8.0])
    assert np.asarray(relative_belief_test(small).reject).tolist() == [False, False, True]
    assert np.asarray(horseshoe_test(small).reject).tolist() == [False, False, True]
