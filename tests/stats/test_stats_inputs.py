"""Issue #17 for icmlx.stats: the inputs users hold, defaults that run, errors and warnings that say what to do.

Every check is against something the code under test did not produce: NumPy closed forms, statsmodels' BH,
scipy's MAD and normal tail, pandas indexing, or the known parameters of simulated data.
"""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from statsmodels.stats.multitest import multipletests

from icmlx import stats
from icmlx.stats import (
    EBLocalFDRGamma2,
    EBMMLEGamma2,
    EBSparsityGamma2,
    MADSigma,
    benjamini_hochberg,
    bh_adjusted_pvalues,
    bonferroni,
    estimate_sigma,
    estimate_sparsity,
    horseshoe_test,
    relative_belief_test,
    simulate_two_groups,
    two_groups_em,
    two_sided_pvalues,
)
from icmlx.stats._checks import looks_like_pvalues

pd = pytest.importorskip("pandas")


def _z(key=0, n=10_000, p=0.01, tau2=16.0, sigma=1.0, num_replicates=1):
    return simulate_two_groups(jax.random.key(key), n, p, tau2, num_replicates, sigma=sigma)


def _eb_sparsity_reference(z):
    """EBSparsityGamma2 + RB < 1 written out in float64 NumPy from the formulas (one row of z-scores)."""
    z = np.asarray(z, np.float64)
    n = z.size
    p_hat = np.clip(np.sum(np.abs(z) > math.sqrt(2 * math.log(n))) / n, 1 / n, 1 - 1 / n)
    g = ((1 - p_hat) / p_hat) ** 2
    c2 = (1 + 1 / g) * math.log1p(g)
    return z * z > c2, g, c2


# --- the default gamma2 --------------------------------------------------------------------------------------


def test_relative_belief_test_runs_with_its_defaults_and_is_eb_lfdr():
    z = _z().x[0]
    res = relative_belief_test(z)  # raised "needs gamma2" before
    default = relative_belief_test(z, gamma2=EBLocalFDRGamma2())
    assert np.array_equal(np.asarray(res.reject), np.asarray(default.reject))
    res = relative_belief_test(z, gamma2=EBSparsityGamma2())
    reject, g, c2 = _eb_sparsity_reference(z)
    assert np.array_equal(np.asarray(res.reject), reject)
    np.testing.assert_allclose(float(res.gamma2[0]), g, rtol=1e-5)
    np.testing.assert_allclose(float(res.threshold[0]), c2, rtol=1e-5)
    explicit = relative_belief_test(z, gamma2=EBSparsityGamma2())
    assert np.array_equal(np.asarray(explicit.reject), np.asarray(res.reject))


def _fdr_power(reject, nonnull):
    reject, nonnull = np.asarray(reject), np.asarray(nonnull)
    tp = (reject & nonnull).sum(-1)
    fp = (reject & ~nonnull).sum(-1)
    return float(np.mean(fp / np.maximum(tp + fp, 1))), float(np.mean(tp / np.maximum(nonnull.sum(-1), 1)))


def _bh(pvalues, alpha):
    return np.stack([multipletests(np.asarray(r, np.float64), alpha=alpha, method="fdr_bh")[0] for r in pvalues])


def test_default_risk_fdr_and_power_as_documented_and_eb_mmle_does_not_control_fdr():
    # one point of the documented study (n = 1e4, p = 0.01, tau2 = 4 and 9), 30 replicates; references on the same
    # draws: BH from statsmodels and the exact Bayes rule from SciPy densities, p N(0, 1 + tau2) > (1 - p) N(0, 1)
    for tau2 in (4.0, 9.0):
        s = _z(key=11, p=0.01, tau2=tau2, num_replicates=30)
        reject = np.asarray(relative_belief_test(s.x).reject)
        fdr_d, pow_d = _fdr_power(reject, s.nonnull)
        fdr_m, _ = _fdr_power(relative_belief_test(s.x, gamma2=EBMMLEGamma2()).reject, s.nonnull)
        pv = two_sided_pvalues(s.x)
        fdr_bh05, _ = _fdr_power(_bh(pv, 0.05), s.nonnull)
        bh10 = _bh(pv, 0.10)
        _, pow_bh10 = _fdr_power(bh10, s.nonnull)
        x = np.asarray(s.x, np.float64)
        oracle = 0.01 * scipy.stats.norm.pdf(x, scale=np.sqrt(1.0 + tau2)) > 0.99 * scipy.stats.norm.pdf(x)
        nonnull = np.asarray(s.nonnull)

        def risk(r, nonnull=nonnull):
            return float(np.sum(r != nonnull))

        assert risk(reject) <= 1.1 * risk(oracle), (tau2, risk(reject), risk(oracle))
        assert risk(reject) <= 1.05 * risk(bh10), (tau2, risk(reject), risk(bh10))
        assert 0.1 < fdr_d < 0.45, (tau2, fdr_d)  # the Bayes rule's own FDR here is about 0.1-0.3
        assert pow_d > pow_bh10, (tau2, pow_d, pow_bh10)
        assert fdr_bh05 < 0.09
        if tau2 == 4.0:
            assert fdr_m > 0.25, fdr_m  # documented: 0.33 at p = 0.01, tau2 = 4


# --- p-values where z-scores belong, and back ---------------------------------------------------------------


def test_pvalues_passed_as_z_scores_warn_in_every_z_test():
    z = _z().x[0]
    pv = two_sided_pvalues(z)
    calls = {
        "relative_belief_test": lambda v: relative_belief_test(v),
        "estimate_sparsity": lambda v: estimate_sparsity(v),
        "two_groups_em": lambda v: two_groups_em(v, num_steps=5),
        "horseshoe_test": lambda v: horseshoe_test(v),
        "two_sided_pvalues": lambda v: two_sided_pvalues(v),
        "bayes_oracle_test": lambda v: stats.bayes_oracle_test(v, p=0.01, tau2=16.0),
    }
    for where, call in calls.items():
        with pytest.warns(UserWarning, match=rf"{where}: all 10000 values of x/sigma lie in \[0, 1\]; .*p-values"):
            call(pv)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the genuine z-scores give no warning
            call(z)
    # the case the issue reported: 0 rejections, now with the warning
    with pytest.warns(UserWarning, match="look like p-values"):
        assert int(relative_belief_test(pv).num_rejected) == 0


def test_pvalue_rule_has_no_false_alarms_on_genuine_z_scores():
    # genuine z-scores, small n (the hard case), many designs: the rule never fires (its bound is 0.383 ** n)
    # (two-groups draws in NumPy: the rule, not the simulator, is under test, and four shapes would compile four
    # simulators)
    alarms = 0
    rng = np.random.default_rng(100)
    for n, p, tau2 in [(10, 0.1, 1.0), (12, 0.5, 0.25), (20, 0.05, 9.0), (50, 0.01, 4.0)]:
        nonnull = rng.random((2000, n)) < p
        x = np.where(nonnull, math.sqrt(tau2) * rng.normal(size=(2000, n)), 0.0) + rng.normal(size=(2000, n))
        alarms += sum(looks_like_pvalues(row) for row in x)
    assert alarms == 0
    # the worst case for the rule, N(0.5, 1), at n = 10: P(all in [0, 1]) = (2 Phi(0.5) - 1) ** 10 = 6.8e-5
    bound = (2 * scipy.stats.norm.cdf(0.5) - 1) ** 10
    assert bound < 1e-4
    rng = np.random.default_rng(0)
    rows = rng.normal(0.5, 1.0, size=(20_000, 10))
    assert sum(looks_like_pvalues(r) for r in rows) <= 5  # expected 1.4
    # and it always fires on p-values, never below 10 tests, never when sigma rescales data in [0, 1]
    assert all(looks_like_pvalues(rng.uniform(size=k)) for k in (10, 100, 10_000))
    assert not looks_like_pvalues(rng.uniform(size=9))
    data = rng.uniform(size=200)  # raw data in [0, 1] with a known small sigma: not p-values
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        relative_belief_test(data, sigma=0.05)


@pytest.mark.parametrize("procedure", [benjamini_hochberg, bonferroni, bh_adjusted_pvalues])
def test_z_scores_passed_as_pvalues_raise_clearly(procedure):
    z = _z(n=500).x[0]
    with pytest.raises(ValueError, match=r"pvalues must lie in \[0, 1\].*two_sided_pvalues\(z\)") as info:
        procedure(z)
    assert len(str(info.value)) < 250
    n_out = int(np.sum((np.asarray(z) < 0) | (np.asarray(z) > 1)))
    assert f"{n_out} values" in str(info.value)
    # under the user's jit the same text comes at run time
    with pytest.raises(Exception, match="two_sided_pvalues"):
        jax.block_until_ready(jax.jit(lambda v: procedure(v))(z))
    procedure(two_sided_pvalues(z))  # the fix the message names works


# --- NaN and Inf --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda v: relative_belief_test(v),
        lambda v: relative_belief_test(v, gamma2=EBMMLEGamma2()),
        lambda v: two_groups_em(v),
        lambda v: estimate_sparsity(v),
        lambda v: horseshoe_test(v),
        lambda v: stats.bayes_oracle_test(v, p=0.01, tau2=4.0),
        lambda v: estimate_sigma(v),
    ],
)
def test_non_finite_z_scores_give_a_short_error_naming_the_argument(call):
    x = np.asarray(_z(n=1000).x[0], np.float64)
    for bad, what in ((np.nan, "NaN value"), (np.inf, "infinite value"), (-np.inf, "infinite value")):
        y = x.copy()
        y[[17, 400]] = bad
        with pytest.raises(ValueError, match=rf"^x contains 2 {what}s \(first at index 17\)") as info:
            call(y)
        msg = str(info.value)
        assert len(msg) < 200 and "equinox" not in msg and "\n" not in msg


def test_inf_no_longer_turns_eb_mmle_into_zero_rejections():
    # before: one Inf made two_groups_em NaN and relative_belief_test(eb_mmle) reject nothing, silently
    x = np.array(_z(n=2000).x[0], np.float64)  # a writable copy (under x64 asarray is a read-only view)
    x[5] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        relative_belief_test(x, gamma2="eb_mmle")
    x[5] = 40.0  # the cap the message suggests: a sure rejection, the rest as without it
    res = relative_belief_test(x, gamma2="eb_mmle")
    assert bool(res.reject[5]) and np.isfinite(float(res.gamma2[0]))


def test_nan_under_jit_is_reported_with_the_message():
    x = jnp.asarray(_z(n=100).x[0]).at[3].set(jnp.nan)
    with pytest.raises(Exception, match="x contains NaN or an infinite value"):
        jax.block_until_ready(jax.jit(lambda v: relative_belief_test(v).reject)(x))


def test_nan_in_a_series_names_its_label():
    z = np.asarray(_z(n=50).x[0], np.float64)
    s = pd.Series(z, index=[f"gene{i}" for i in range(50)])
    s["gene7"] = np.nan
    with pytest.raises(ValueError, match=r"x contains 1 NaN value \(first at label 'gene7'\)"):
        relative_belief_test(s)
    p = pd.Series(np.linspace(0.01, 0.9, 50), index=s.index)
    p["gene9"] = np.nan
    with pytest.raises(ValueError, match=r"pvalues contains 1 NaN value \(first at label 'gene9'\)"):
        benjamini_hochberg(p)


# --- what users hold ------------------------------------------------------------------------------------------


def test_lists_numpy_jax_and_series_give_the_same_decisions():
    z = np.asarray(_z(n=3000, p=0.05, tau2=9.0).x[0], np.float64)
    ref, _, _ = _eb_sparsity_reference(z)
    for form in (z.tolist(), z, jnp.asarray(z, jnp.result_type(float)), pd.Series(z), pd.DataFrame({"z": z})):
        assert np.array_equal(np.asarray(relative_belief_test(form, gamma2=EBSparsityGamma2()).reject), ref), \
            type(form)
    pv = two_sided_pvalues(z.tolist())
    np.testing.assert_allclose(np.asarray(pv), 2 * scipy.stats.norm.sf(np.abs(z)), rtol=2e-5, atol=1e-30)
    with pytest.raises(TypeError, match="one column"):
        relative_belief_test(pd.DataFrame({"a": z, "b": z}))
    with pytest.raises(TypeError, match="non-numeric"):
        relative_belief_test(pd.Series(["a"] * 20))


def test_series_labels_come_back_on_the_result():
    z = np.asarray(_z(n=2000, p=0.02, tau2=16.0).x[0], np.float64)
    s = pd.Series(z, index=[f"h{i:04d}" for i in range(z.size)], name="z")
    res = relative_belief_test(s, gamma2=EBSparsityGamma2())
    _, _, c2 = _eb_sparsity_reference(z)
    expected = s[s.abs() > math.sqrt(c2)].index  # pandas' own selection
    assert list(res.rejected_labels) == list(expected) and len(expected) > 10
    assert res.labels is s.index
    # BH on a Series of p-values: the rejected labels are statsmodels' rejections
    pv = pd.Series(2 * scipy.stats.norm.sf(np.abs(z)), index=s.index)
    bh = benjamini_hochberg(pv, 0.05)
    sm = multipletests(pv.to_numpy(), alpha=0.05, method="fdr_bh")[0]
    assert list(bh.rejected_labels) == list(pv.index[sm])
    # without labels: positions; horseshoe and the oracle carry labels too
    assert np.array_equal(relative_belief_test(z, gamma2=EBSparsityGamma2()).rejected_labels,
                          np.flatnonzero(np.abs(z) > math.sqrt(c2)))
    hs = horseshoe_test(s, tau=0.02)
    assert list(hs.rejected_labels) == list(s[s.abs() > float(hs.threshold)].index)
    orc = stats.bayes_oracle_test(s, p=0.02, tau2=16.0)
    assert list(orc.rejected_labels) == list(s[s**2 > float(orc.threshold)].index)
    # a result with labels still goes through jit-friendly tree operations
    assert jax.tree_util.tree_structure(res) == jax.tree_util.tree_structure(res)


# --- sigma estimated from the data ---------------------------------------------------------------------------


def test_estimate_sigma_is_scipys_normal_mad():
    rng = np.random.default_rng(1)
    for shape in [(1000,), (3, 1001), (2, 2, 64)]:
        x = rng.standard_t(5, size=shape).astype(np.float32)
        ref = scipy.stats.median_abs_deviation(x.astype(np.float64), axis=-1, scale="normal")
        np.testing.assert_allclose(np.asarray(estimate_sigma(x)), ref, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(estimate_sigma(x, MADSigma())), ref, rtol=1e-5)
    with pytest.raises(ValueError, match="sigma is 0"):
        estimate_sigma(np.r_[np.zeros(10), 1.0, 2.0])
    with pytest.raises(ValueError, match="shorthands"):
        estimate_sigma(rng.normal(size=10), "iqr")


def _numpy_em(z, num_steps):
    """two_groups_em's EM for unit noise from its formulas (default start), float64 NumPy."""
    n = z.size
    big = np.abs(z) > math.sqrt(2 * math.log(n))
    p = min(np.clip(big.sum() / n, 1 / n, 1 - 1 / n), 0.5)
    t2 = max((z[big] ** 2).mean() - 1.0 if big.any() else 0.0, 1.0)
    for _ in range(num_steps):
        l1 = np.log(p) - 0.5 * (np.log(2 * np.pi * (1 + t2)) + z * z / (1 + t2))
        l0 = np.log1p(-p) - 0.5 * (np.log(2 * np.pi) + z * z)
        r = np.exp(l1 - np.logaddexp(l0, l1))
        p = float(np.clip(r.mean(), 1 / n, 1 - 1 / n))
        t2 = max(float((r * z * z).sum() / r.sum()) - 1.0, 1e-6)
    return p, t2


def test_sigma_mad_recovers_a_known_sigma_in_every_z_test():
    sigma, p, tau2 = 3.0, 0.02, 9.0 * 16.0  # u = tau2 / sigma^2 = 16
    s = _z(key=5, n=20_000, p=p, tau2=tau2, sigma=sigma, num_replicates=2)
    x = np.asarray(s.x, np.float64)
    mad = scipy.stats.median_abs_deviation(x, axis=-1, scale="normal")  # independent sigma-hat
    assert np.all(np.abs(mad / sigma - 1) < 0.05)  # (biased up by at most ~1.25 p)
    res = relative_belief_test(s.x, sigma="mad", gamma2=EBSparsityGamma2())
    np.testing.assert_allclose(np.asarray(res.sigma)[:, 0], mad, rtol=1e-5)
    for r in range(2):
        ref, g, _ = _eb_sparsity_reference(x[r] / mad[r])
        assert np.sum(np.asarray(res.reject[r]) != ref) <= 1  # float32 vs float64 at the cutoff
        np.testing.assert_allclose(float(res.gamma2[r, 0]), g * mad[r] ** 2, rtol=1e-4)  # in units of x
    # the two-groups fit: the EM of x / sigma-hat written in float64 NumPy, tau2 back in the units of x
    fit = two_groups_em(s.x, sigma="mad")
    for r in range(2):
        p_ref, t2_ref = _numpy_em(x[r] / mad[r], 100)
        np.testing.assert_allclose(float(fit.p[r]), p_ref, rtol=2e-3)
        np.testing.assert_allclose(float(fit.tau2[r]), t2_ref * mad[r] ** 2, rtol=2e-3)
    np.testing.assert_allclose(np.asarray(fit.p), p, rtol=0.25)  # and near the truth
    np.testing.assert_allclose(np.asarray(fit.stats["sigma"]), mad, rtol=1e-5)
    # the known-sigma fit with sigma = 1 (the wrong scale) is far off; the estimate fixes it
    assert abs(float(two_groups_em(s.x[0]).p) - p) > 5 * abs(float(fit.p[0]) - p)
    # estimate_sparsity and the p-values use the same estimate
    thr = mad[:, None] * math.sqrt(2 * math.log(x.shape[-1]))
    np.testing.assert_allclose(np.asarray(estimate_sparsity(s.x, sigma="mad")), (np.abs(x) > thr).mean(-1),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(two_sided_pvalues(s.x, sigma="mad")),
                               2 * scipy.stats.norm.sf(np.abs(x) / mad[:, None]), rtol=1e-4, atol=1e-30)
    hs = horseshoe_test(s.x[0], sigma=MADSigma())
    assert np.array_equal(np.asarray(hs.reject), np.abs(x[0]) / mad[0] > float(hs.threshold))


def test_sigma_mad_with_a_numeric_gamma2_and_an_oracle_rule():
    x = _z(key=6, n=5000, p=0.02, tau2=36.0, sigma=2.0).x[0]
    mad = float(scipy.stats.median_abs_deviation(np.asarray(x, np.float64), scale="normal"))
    res = relative_belief_test(x, gamma2=400.0, sigma="mad")
    g = 400.0 / mad**2
    c2 = (1 + 1 / g) * math.log1p(g)
    np.testing.assert_allclose(float(np.ravel(res.threshold)[0]), c2, rtol=1e-4)
    # OracleGamma2's tau2 is in the units of x: gamma2 = tau2 f^2 whatever sigma is
    rule = stats.OracleGamma2(p=0.02, tau2=36.0)
    res = relative_belief_test(x, gamma2=rule, sigma="mad")
    np.testing.assert_allclose(float(np.ravel(res.gamma2)[0]), 36.0 * (0.98 / 0.02) ** 2, rtol=1e-4)
    with pytest.raises(TypeError, match="unexpected keyword"):  # the removed flags are errors
        relative_belief_test(x, gamma2="oracle", p=0.02, tau2=36.0, sigma="mad")


# --- what results print ---------------------------------------------------------------------------------------


def test_results_print_counts_not_array_placeholders():
    s = _z(n=100_000, p=0.005, tau2=16.0)
    z = s.x[0]
    n_rej_rb = int(np.sum(_eb_sparsity_reference(z)[0]))
    text = repr(relative_belief_test(z, gamma2=EBSparsityGamma2()))
    assert text.startswith(f"RelativeBeliefResult(num_tests=100000, num_rejected={n_rej_rb}, gamma2=[")
    assert "k=1, sigma=1)" in text and len(text) < 160
    pv = np.asarray(two_sided_pvalues(z), np.float64)
    n_bh = int(multipletests(pv, alpha=0.05, method="fdr_bh")[0].sum())
    text = repr(benjamini_hochberg(pv, 0.05))
    assert text.startswith(f"MultipleTestResult(num_tests=100000, num_rejected={n_bh}, threshold=") and len(text) < 120
    assert repr(horseshoe_test(z)).startswith("HorseshoeResult(num_tests=100000, num_rejected=")
    assert repr(stats.bayes_oracle_test(z, p=0.005, tau2=16.0)).startswith("OracleResult(num_tests=100000, ")
    n_nonnull = int(np.asarray(s.nonnull).sum())
    assert repr(s) == f"TwoGroupsSample(num_replicates=1, n=100000, num_nonnull=[{n_nonnull}], x=f32[1, 100000])" \
        or repr(s).startswith("TwoGroupsSample(num_replicates=1, n=100000, ")
    rules = {"bonf": lambda v: bonferroni(two_sided_pvalues(v), 0.05).reject}
    cmp = stats.simulate_risk_ratios(jax.random.key(0), rules, n=500, p=0.05, tau2=9.0, num_replicates=16)
    ratio = float(cmp.ratio[1])
    assert repr(cmp).startswith(f"RiskComparison(num_replicates=16, ratio={{oracle=1±0, bonf={ratio:.4g}±")


# --- progress -------------------------------------------------------------------------------------------------


def test_simulate_risk_ratios_progress_reports_and_gives_the_same_numbers(capsys):
    rules = {"cut": lambda v: jnp.abs(v) > 3.0}  # a rule that compiles fast: the progress path is under test
    kw = dict(n=100, p=0.05, tau2=9.0, num_replicates=23)
    quiet = stats.simulate_risk_ratios(jax.random.key(3), rules, **kw, progress=False)
    assert capsys.readouterr().err == ""
    shown = stats.simulate_risk_ratios(jax.random.key(3), rules, **kw, progress=True)
    err = capsys.readouterr().err
    assert "simulate_risk_ratios" in err and "23/23" in err
    np.testing.assert_array_equal(np.asarray(shown.loss), np.asarray(quiet.loss))


def test_horseshoe_nuts_passes_progress_to_numpyro(monkeypatch):
    pytest.importorskip("numpyro")
    import numpyro.infer

    seen = {}

    class FakeMCMC:
        def __init__(self, kernel, *, num_warmup, num_samples, progress_bar):
            seen["progress_bar"] = progress_bar
            self.num_samples = num_samples

        def run(self, key, x):
            self.n = x.shape[0]

        def get_samples(self):
            return {"lam": jnp.ones((self.num_samples, self.n)), "tau": jnp.full((self.num_samples,), 0.5)}

    monkeypatch.setattr(numpyro.infer, "MCMC", FakeMCMC)
    for progress, expected in ((True, True), (False, False), (None, False)):  # None: not a terminal under pytest
        fit = stats.horseshoe_nuts(jax.random.key(0), [0.0, 3.0], num_samples=40, progress=progress)
        assert seen["progress_bar"] is expected
    # 1 - kappa = lam^2 tau^2 / (1 + lam^2 tau^2) = 0.25 / 1.25 with the fake draws
    np.testing.assert_allclose(np.asarray(fit.shrinkage), 0.2, rtol=1e-6)
    assert repr(fit).startswith("HorseshoeMCMCResult(num_tests=2, num_rejected=0, num_samples=40")


# --- the plot -------------------------------------------------------------------------------------------------


def test_plot_rejections_draws_the_histogram_and_the_cutoffs():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    z = _z(n=3000, p=0.05, tau2=9.0).x[0]
    res = relative_belief_test(z)
    fig, ax = plt.subplots()
    out = stats.plot_rejections(res, x=z, ax=ax, bins=40)
    assert out is ax
    c = math.sqrt(float(res.threshold[0]))
    assert sorted(line.get_xdata()[0] for line in ax.lines) == pytest.approx([-c, c], rel=1e-6)
    heights = np.array([p.get_height() for p in ax.patches])
    assert heights.sum() == pytest.approx(z.size)  # every test is in one of the two stacked groups
    assert heights[40:].sum() == pytest.approx(int(np.sum(np.abs(np.asarray(z)) > c)))  # the rejected group
    hs = horseshoe_test(z)
    ax2 = stats.plot_rejections(hs, x=z)
    assert ax2.lines[1].get_xdata()[0] == pytest.approx(float(hs.threshold))
    with pytest.raises(TypeError, match="relative_belief_test"):
        stats.plot_rejections(benjamini_hochberg(two_sided_pvalues(z)), x=z)
    plt.close("all")


def test_simulation_refuses_draws_larger_than_free_memory(monkeypatch):
    # under the fixed 8 GiB cap, yet more than this machine has free: refused before any allocation.
    # 10^6 float32 draws need 9 bytes each (x, mu, nonnull), 9 MB; pretend 1 MB is free
    from icmlx import _memory

    monkeypatch.setattr(_memory, "available_bytes", lambda: 1e6)
    with pytest.raises(ValueError, match=r"memory.*lower n or num_replicates"):
        simulate_two_groups(jax.random.key(0), 1_000_000, 0.01, 4.0)
    assert simulate_two_groups(jax.random.key(0), 1000, 0.01, 4.0).x.shape == (1, 1000)
