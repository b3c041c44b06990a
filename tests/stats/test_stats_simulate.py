"""Simulation driver: MC vs exact risk (notes check 6), data-driven rules (check 9), sharding, EM."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.stats import (
    OracleGamma2,
    SparsityGamma2,
    abos_risk_ratio,
    benjamini_hochberg,
    bonferroni,
    bonferroni_threshold,
    calibrate_tau2,
    horseshoe_test,
    horseshoe_threshold,
    relative_belief_gamma2,
    relative_belief_test,
    relative_belief_threshold,
    simulate_risk_ratios,
    simulate_two_groups,
    two_groups_em,
    two_sided_pvalues,
)

N = 10_000
P = 0.01
R = 300


@pytest.fixture(scope="module")
def comparison():
    tau2 = float(calibrate_tau2(P))
    g_h1 = float(relative_belief_gamma2(OracleGamma2(p=P, tau2=tau2)))
    rules = {
        "rb_h1": lambda x: relative_belief_test(x, gamma2=g_h1).reject,
        "rb_h2": lambda x: relative_belief_test(x, gamma2=SparsityGamma2(p=P)).reject,
        "rb_naive": lambda x: relative_belief_test(x, gamma2=tau2).reject,
        "bonf": lambda x: bonferroni(two_sided_pvalues(x), 0.05).reject,
        "hs_p": lambda x: horseshoe_test(x, P).reject,
        "rb_h3": lambda x: relative_belief_test(x, gamma2="eb_sparsity").reject,
        "bh10": lambda x: benjamini_hochberg(two_sided_pvalues(x), 0.10).reject,
        "hs_eb": lambda x: horseshoe_test(x, "eb").reject,
    }
    cmp = simulate_risk_ratios(jax.random.key(N), rules, n=N, p=P, tau2=tau2, num_replicates=R)
    return tau2, g_h1, cmp


def test_mc_matches_exact_for_threshold_rules(comparison):
    tau2, g_h1, cmp = comparison
    res = cmp.as_dict()
    exact = {
        "rb_h1": abos_risk_ratio(relative_belief_threshold(g_h1), P, tau2),
        "rb_h2": abos_risk_ratio(relative_belief_threshold(float((1 - P) / P) ** 2), P, tau2),
        "rb_naive": abos_risk_ratio(relative_belief_threshold(tau2), P, tau2),
        "bonf": abos_risk_ratio(bonferroni_threshold(N), P, tau2),
        "hs_p": abos_risk_ratio(horseshoe_threshold(P) ** 2, P, tau2),
    }
    for name, ex in exact.items():
        mc, se = res[name]
        # notes check 6: |MC - exact| < 4 SE (paired SE of the ratio)
        assert abs(mc - float(ex)) < 4 * se, (name, mc, se, float(ex))
    # the oracle row is exactly 1 with zero SE
    assert res["oracle"] == (1.0, 0.0)


def test_data_driven_rules_in_expected_bands(comparison):
    _, _, cmp = comparison
    res = cmp.as_dict()
    # notes check 9 (n = 1e4, R = 300)
    assert 0.99 <= res["rb_h3"][0] <= 1.02, res["rb_h3"]
    assert 0.99 <= res["bh10"][0] <= 1.02, res["bh10"]
    assert 1.05 <= res["hs_eb"][0] <= 1.12, res["hs_eb"]


def test_sharded_equals_unsharded():
    assert jax.device_count() == 4
    rules = {"bonf": lambda x: bonferroni(two_sided_pvalues(x), 0.1).reject}
    kw = dict(n=64, p=0.05, tau2=9.0, num_replicates=10)  # 10 replicates: padded to 12 over 4 devices
    a = simulate_risk_ratios(jax.random.key(1), rules, shard=True, **kw)
    b = simulate_risk_ratios(jax.random.key(1), rules, shard=False, **kw)
    np.testing.assert_array_equal(np.asarray(a.loss), np.asarray(b.loss))
    # the driver's draws are the public simulator's draws (common random numbers)
    s = simulate_two_groups(jax.random.key(1), 64, 0.05, 9.0, num_replicates=10)
    rej = bonferroni(two_sided_pvalues(s.x), 0.1).reject
    loss = jnp.sum(rej & ~s.nonnull, -1) + jnp.sum(~rej & s.nonnull, -1)
    np.testing.assert_array_equal(np.asarray(a.loss[1]), np.asarray(loss, a.loss.dtype))


def test_simulate_moments():
    s = simulate_two_groups(jax.random.key(2), 20_000, 0.1, 4.0, num_replicates=5)
    frac = float(jnp.mean(s.nonnull))
    assert abs(frac - 0.1) < 4 * np.sqrt(0.09 / 1e5)
    v = float(jnp.var(s.x))  # marginal variance 1 + p tau2 = 1.4
    assert abs(v - 1.4) < 0.03
    assert bool(jnp.all(jnp.where(s.nonnull, True, s.mu == 0.0)))


def test_em_recovers_parameters_and_ascends():
    s = simulate_two_groups(jax.random.key(3), 50_000, 0.05, 9.0, num_replicates=2)
    fit = two_groups_em(s.x, num_steps=200)
    assert int(fit.num_steps) == 200 and fit.log_likelihood.shape == (200, 2)
    np.testing.assert_allclose(np.asarray(fit.p), 0.05, atol=0.008)
    np.testing.assert_allclose(np.asarray(fit.tau2), 9.0, rtol=0.15)
    ll = np.asarray(fit.log_likelihood, np.float64)
    # EM ascent property (up to float rounding of a sum of 5e4 terms)
    assert np.all(np.diff(ll, axis=0) > -1e-6 * np.abs(ll[1:]) - 1e-3)


def test_bad_inputs():
    with pytest.raises(ValueError, match="reserved"):
        simulate_risk_ratios(jax.random.key(0), {"oracle": lambda x: x > 0}, n=10, p=0.1,
                             tau2=1.0, num_replicates=4)
    with pytest.raises(ValueError, match="num_replicates"):
        simulate_risk_ratios(jax.random.key(0), {}, n=10, p=0.1, tau2=1.0, num_replicates=1)
    with pytest.raises(ValueError, match="p must lie"):
        simulate_two_groups(jax.random.key(0), 10, 0.0, 1.0)
    with pytest.raises(ValueError, match="tau2"):
        simulate_two_groups(jax.random.key(0), 10, 0.1, -1.0)
