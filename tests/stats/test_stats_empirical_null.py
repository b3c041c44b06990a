"""The empirical null by central matching (``sigma="empirical"``, ``local_fdr(null="empirical")``) against an
independent float64 NumPy/statsmodels fit of the same quadratic, and its recovery of a known N(delta, sigma^2) null."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.stats import (
    EmpiricalNullSigma,
    estimate_sigma,
    local_fdr,
    relative_belief_test,
    two_sided_pvalues,
)

sm = pytest.importorskip("statsmodels.api")
FLOAT = jnp.result_type(float)


def _central_matching_ref(z, num_bins=120, central=0.1):
    """Float64 reference: the histogram between min and max, the bins between the central quantiles, and a Poisson
    GLM (statsmodels IRLS) of their counts on 1, x, x^2; sigma0^2 = -1/(2 b2), delta0 = b1 sigma0^2."""
    z = np.asarray(z, np.float64)
    lo, hi = z.min(), z.max()
    width = (hi - lo) / num_bins
    idx = np.clip(np.floor((z - lo) / width).astype(int), 0, num_bins - 1)
    counts = np.bincount(idx, minlength=num_bins).astype(np.float64)
    x = lo + (np.arange(num_bins) + 0.5) * width
    inside = (x >= np.quantile(z, central)) & (x <= np.quantile(z, 1.0 - central))
    xc = x[inside]
    design = np.column_stack([np.ones_like(xc), xc, xc * xc])
    b = sm.GLM(counts[inside], design, family=sm.families.Poisson()).fit(tol=1e-12, maxiter=200).params
    var = -0.5 / b[2]
    return b[1] * var, np.sqrt(var)


def _sample(rng, reps, m, delta, sigma, frac):
    nonnull = rng.random((reps, m)) < frac
    mu = np.where(nonnull, rng.choice([-1.0, 1.0], (reps, m)) * rng.uniform(2.0, 5.0, (reps, m)) * sigma, 0.0)
    return delta + sigma * rng.standard_normal((reps, m)) + mu


@pytest.mark.x64
def test_sigma_rule_equals_a_float64_central_matching_fit():
    rng = np.random.default_rng(0)
    x = _sample(rng, 3, 5_000, np.array([[0.0], [0.4], [-1.0]]), np.array([[1.0], [2.5], [0.6]]), 0.05)
    xj = jnp.asarray(x, FLOAT)
    x64 = np.asarray(xj, np.float64)
    ref = np.array([_central_matching_ref(r) for r in x64])
    rule = EmpiricalNullSigma()
    loc, sd = rule._null(xj)
    tol = 1e-8 if FLOAT == jnp.float64 else 2e-3
    np.testing.assert_allclose(np.asarray(sd, np.float64), ref[:, 1], rtol=tol)
    np.testing.assert_allclose(np.asarray(loc, np.float64), ref[:, 0], rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(estimate_sigma(xj, "empirical"), np.float64), ref[:, 1], rtol=tol)
    # local_fdr's empirical null is the same fit (on z-scores, its centre and scale)
    res = local_fdr(xj)
    np.testing.assert_allclose(np.asarray(res.null_sd, np.float64), ref[:, 1], rtol=tol)
    np.testing.assert_allclose(np.asarray(res.null_mean, np.float64), ref[:, 0], rtol=tol, atol=tol)


def test_sigma_rule_recovers_a_known_null():
    # null N(delta, sigma^2) with 5% signals at +-U(2, 5) sigma, m = 2e4, 8 replicates per (delta, sigma): the
    # scale within 4% and the centre within 0.05 sigma (mean absolute error), where the MAD overestimates the
    # scale and the median is the only location it knows
    rng = np.random.default_rng(1)
    for delta, sigma in ((0.0, 1.0), (0.3, 1.3), (-2.0, 4.0)):
        x = jnp.asarray(_sample(rng, 8, 20_000, delta, sigma, 0.05), FLOAT)
        loc, sd = EmpiricalNullSigma()._null(x)
        rel_sd = np.mean(np.abs(np.asarray(sd, np.float64) / sigma - 1.0))
        rel_loc = np.mean(np.abs(np.asarray(loc, np.float64) - delta)) / sigma
        assert rel_sd < 0.04 and rel_loc < 0.05, (delta, sigma, rel_sd, rel_loc)
        rel_mad = np.mean(np.abs(np.asarray(estimate_sigma(x, "mad"), np.float64) / sigma - 1.0))
        assert rel_sd < rel_mad, (rel_sd, rel_mad)


def test_gaussian_counts_are_matched_exactly():
    # closed form: a sample whose histogram is (to rounding) exp(quadratic) -- the N(0.7, 1.6^2) quantiles at
    # (i + 1/2)/m -- gives the quadratic's delta and sigma to the discretisation error of binning
    from scipy.stats import norm

    m = 200_000
    x = norm.ppf((np.arange(m) + 0.5) / m, loc=0.7, scale=1.6)
    loc, sd = EmpiricalNullSigma()._null(jnp.asarray(x, FLOAT))
    np.testing.assert_allclose(float(sd), 1.6, rtol=5e-3)
    np.testing.assert_allclose(float(loc), 0.7, atol=5e-3)


def test_tests_use_the_centred_data():
    # sigma="empirical" tests x - delta0 with scale sigma0: the same decisions and p-values as passing the centred
    # data and the number sigma0
    rng = np.random.default_rng(2)
    x = jnp.asarray(_sample(rng, 2, 4_000, 1.5, 2.0, 0.05), FLOAT)
    loc, sd = EmpiricalNullSigma()._null(x)
    xc = x - loc[:, None]
    got = relative_belief_test(x, gamma2=9.0, sigma="empirical")
    p = two_sided_pvalues(x, sigma="empirical")
    for i in range(2):
        want = relative_belief_test(xc[i], gamma2=9.0, sigma=sd[i])
        np.testing.assert_array_equal(np.asarray(got.reject[i]), np.asarray(want.reject))
        np.testing.assert_allclose(np.asarray(p[i]), np.asarray(two_sided_pvalues(xc[i], sigma=sd[i])),
                                   rtol=1e-5, atol=1e-7)
    # a shift of the whole row leaves the decisions unchanged (the MAD rule would reject the shifted nulls)
    shifted = relative_belief_test(x + 3.0, gamma2=9.0, sigma="empirical")
    assert abs(int(shifted.num_rejected.sum()) - int(got.num_rejected.sum())) <= 2


def test_jit_vmap_and_bad_settings():
    x = jnp.asarray(_sample(np.random.default_rng(3), 4, 3_000, 0.2, 1.1, 0.05), FLOAT)
    f = jax.jit(lambda v: estimate_sigma(v, "empirical"))
    np.testing.assert_allclose(np.asarray(jax.vmap(f)(x)), np.asarray(estimate_sigma(x, "empirical")), rtol=1e-5)
    with pytest.raises(ValueError, match="num_bins"):
        EmpiricalNullSigma(num_bins=3)
    with pytest.raises(ValueError, match="central"):
        EmpiricalNullSigma(central=0.7)
    with pytest.raises(TypeError, match="central"):
        EmpiricalNullSigma(central="0.1")


def _mle_null_ref(z):
    """Float64 reference of the ML null: the values within c robust sds of the median (c as locfdr,
    4.3 exp(-0.26 log10 m)), scipy.stats.truncnorm's log likelihood maximised by scipy.optimize, pi0 = (N0/m)/P0."""
    from scipy import optimize
    from scipy import stats as sps

    z = np.asarray(z, np.float64)
    m = z.size
    c = 4.3 * np.exp(-0.26 * np.log10(m))
    med = np.median(z)
    s = (np.quantile(z, 0.75) - np.quantile(z, 0.25)) / (2.0 * sps.norm.ppf(0.75))
    a, b = med - c * s, med + c * s
    inside = z[(z >= a) & (z <= b)]

    def nll(t):
        mu, sd = t[0], np.exp(t[1])
        return -np.sum(sps.truncnorm.logpdf(inside, (a - mu) / sd, (b - mu) / sd, loc=mu, scale=sd))

    t = optimize.minimize(nll, [med, np.log(s)], method="Nelder-Mead",
                          options={"xatol": 1e-11, "fatol": 1e-12, "maxiter": 20_000}).x
    mu, sd = t[0], np.exp(t[1])
    p0 = sps.norm.cdf((b - mu) / sd) - sps.norm.cdf((a - mu) / sd)
    return mu, sd, min(inside.size / m / p0, 1.0)


@pytest.mark.x64
def test_mle_null_equals_scipy_truncated_normal_mle():
    rng = np.random.default_rng(4)
    z = _sample(rng, 3, 8_000, np.array([[0.0], [0.3], [-0.5]]), np.array([[1.0], [1.3], [0.8]]), 0.05)
    zj = jnp.asarray(z, FLOAT)
    ref = np.array([_mle_null_ref(r) for r in np.asarray(zj, np.float64)])
    res = local_fdr(zj, null="mle")
    tol = 1e-6 if FLOAT == jnp.float64 else 2e-3
    np.testing.assert_allclose(np.asarray(res.null_mean, np.float64), ref[:, 0], rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(res.null_sd, np.float64), ref[:, 1], rtol=tol)
    np.testing.assert_allclose(np.asarray(res.pi0, np.float64), ref[:, 2], rtol=tol)


def test_mle_null_recovers_a_shifted_widened_null():
    # the design (null N(0.3, 1.3^2), 5% signals, m = 2e4, 8 replicates): centre and scale within 0.05,
    # no worse than statsmodels' NullDistribution (truncated-normal ML on a fixed band) on the same data
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    z = _sample(np.random.default_rng(0), 8, 20_000, 0.3, 1.3, 0.05)
    res = local_fdr(jnp.asarray(z, FLOAT), null="mle")
    err_mean = np.mean(np.abs(np.asarray(res.null_mean, np.float64) - 0.3))
    err_sd = np.mean(np.abs(np.asarray(res.null_sd, np.float64) - 1.3))
    ref = [multitest.NullDistribution(row) for row in z]
    assert err_mean < 0.05 and err_sd < 0.05, (err_mean, err_sd)
    assert err_mean <= np.mean([abs(r.mean - 0.3) for r in ref]) and err_sd <= np.mean([abs(r.sd - 1.3) for r in ref])
    assert np.all(np.asarray(res.pi0) <= 1.0)
    np.testing.assert_allclose(np.asarray(res.pi0, np.float64), 0.95, atol=0.04)
    # the lfdr is pi0 f0 / f with the fitted null: large for the bulk, small far out
    lf = np.asarray(res.lfdr)
    assert np.median(lf[np.abs(z - 0.3) < 0.5]) > 0.9 and np.median(lf[np.abs(z - 0.3) > 5.5]) < 0.05
