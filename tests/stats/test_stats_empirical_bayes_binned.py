"""The binned empirical-Bayes paths against float64 NumPy/SciPy references of the unbinned computations.

The binned summaries replace the tests by a histogram (`EBLocalFDRGamma2`, ``horseshoe_test(tau="lfdr")``,
`two_groups_em`, `horseshoe_mmle_tau`), so their results are compared with the exact, unbinned estimates computed
here in NumPy, with the tolerances the binning error allows; Storey's counts and the quantiles of `local_fdr` are
exact and compared exactly.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

from _lfdr_reference import npmle_lfdr
from icmlx.stats import (
    EBLocalFDRGamma2,
    EBMMLEGamma2,
    horseshoe_mmle_tau,
    horseshoe_test,
    relative_belief_gamma2,
    relative_belief_test,
    simulate_two_groups,
    two_groups_em,
)
from icmlx.stats._central_matching import sorted_quantile
from icmlx.stats._qvalues import DEFAULT_LAMBDAS, _pi0_core

X64 = bool(jax.config.jax_enable_x64)






def _risk(z, lfdr, c):
    return float(np.sum(np.where(np.abs(z) > c, lfdr, 1.0 - lfdr)))


def _brute_force(z, lfdr):
    a = np.sort(np.abs(z))[::-1]
    cands = np.concatenate([[a[0] + 1.0], 0.5 * (a[:-1] + a[1:]), [0.5 * a[-1]]])
    risks = np.array([_risk(z, lfdr, c) for c in cands])
    return cands[int(np.argmin(risks))], float(risks.min())


@pytest.mark.x64
@pytest.mark.parametrize("p, tau2", [(0.01, 16.0), (0.05, 9.0), (0.2, 2.0)])
def test_binned_risk_cutoff_is_the_exact_one_up_to_near_ties(p, tau2):
    # the binned NPMLE and the cell-edge search against the exact estimated risk (float64 NumPy, every test): the
    # binned cutoff's estimated risk is within 1e-4 relative of the least (a near-tie when the decisions differ:
    # the tests between the two cutoffs have fdr near 1/2), and at most two decisions per row differ
    dt = jnp.result_type(float)
    x = simulate_two_groups(jax.random.key(7), 3000, p, tau2, 4, dtype=dt).x
    z = np.asarray(x, np.float64)
    res = relative_belief_test(x)  # the default: EBLocalFDRGamma2(binned=True)
    hs = horseshoe_test(x)
    same_rows = 0
    for r in range(z.shape[0]):
        lfdr = npmle_lfdr(z[r])
        c, best = _brute_force(z[r], lfdr)
        got = np.asarray(res.reject[r])
        assert np.sum(np.where(got, lfdr, 1.0 - lfdr)) <= best * (1.0 + 1e-4) + 1e-9
        assert np.sum(got != (np.abs(z[r]) > c)) <= 2
        same_rows += int(np.array_equal(got, np.abs(z[r]) > c))
        assert np.array_equal(np.asarray(hs.reject[r]), got)  # the horseshoe's lfdr tau: the same cutoff
    assert same_rows >= 3


def test_binned_and_unbinned_rules_agree_and_are_static_settings():
    x = simulate_two_groups(jax.random.key(3), 5000, 0.05, 9.0, 3).x
    binned = relative_belief_test(x, gamma2=EBLocalFDRGamma2())
    exact = relative_belief_test(x, gamma2=EBLocalFDRGamma2(binned=False))
    assert int(jnp.sum(binned.reject != exact.reject)) <= 3
    # the rule is a static setting under jit, and vmap over rows gives the batched answer
    jitted = jax.jit(lambda v: relative_belief_test(v).reject)(x)
    assert np.array_equal(np.asarray(jitted), np.asarray(binned.reject))
    rows = jax.vmap(lambda v: relative_belief_gamma2(EBLocalFDRGamma2(), x=v))(x)
    np.testing.assert_allclose(np.asarray(rows).reshape(-1),
                               np.asarray(relative_belief_gamma2(EBLocalFDRGamma2(), x=x)).reshape(-1), rtol=1e-5)
    with pytest.raises(TypeError, match="binned"):
        EBLocalFDRGamma2(binned="yes")
    with pytest.raises(TypeError, match="binned"):
        horseshoe_test(x, binned=1)
    with pytest.raises(TypeError, match="binned"):
        two_groups_em(x, binned=None)


def _numpy_em(z, steps):
    """The unbinned two-groups EM of `two_groups_em` in float64 NumPy (same start, same clips)."""
    n = z.size
    z2 = z * z
    thr = np.sqrt(2.0 * np.log(n))
    big = np.abs(z) > thr
    p = min(np.clip(big.sum() / n, 1.0 / n, 1.0 - 1.0 / n), 0.5)
    t = max(z2[big].mean() - 1.0 if big.any() else 0.0, 1.0)
    for _ in range(steps):
        l0 = np.log1p(-p) + sps.norm.logpdf(z, scale=1.0)
        l1 = np.log(p) + sps.norm.logpdf(z, scale=np.sqrt(1.0 + t))
        r = np.exp(l1 - np.logaddexp(l0, l1))
        p = np.clip(r.mean(), 1.0 / n, 1.0 - 1.0 / n)
        t = max((r * z2).sum() / r.sum() - 1.0, 1e-6)
    return p, t


@pytest.mark.x64
def test_binned_two_groups_em_matches_the_unbinned_fit():
    # 512 bins of |z| at their mean squares: p and tau2 within 1e-3 relative of the float64 EM over every test
    dt = jnp.result_type(float)
    x = simulate_two_groups(jax.random.key(4), 20_000, 0.05, 9.0, 2, dtype=dt).x
    fit = two_groups_em(x, num_steps=60)
    for r in range(2):
        p, t = _numpy_em(np.asarray(x[r], np.float64), 60)
        assert float(fit.p[r]) == pytest.approx(p, rel=1e-3)
        assert float(fit.tau2[r]) == pytest.approx(t, rel=1e-3)
    ll = np.asarray(fit.log_likelihood, np.float64)  # EM on the binned summary ascends its likelihood
    assert np.all(np.diff(ll, axis=0) > -1e-6 * np.abs(ll[1:]) - 1e-3)
    g2 = relative_belief_gamma2(EBMMLEGamma2(), x=x)
    g2_exact = relative_belief_gamma2(EBMMLEGamma2(binned=False), x=x)
    np.testing.assert_allclose(np.asarray(g2), np.asarray(g2_exact), rtol=2e-3)


def _neg_loglik(z, tau):
    """-sum log m(z_i | tau) for the horseshoe, by the trapezoid rule on a fine grid in log lambda (float64)."""
    v = np.linspace(-30.0, 30.0 - np.log(tau), 6001)
    var = 1.0 + (tau * np.exp(v)) ** 2
    prior = 2.0 / np.pi * np.exp(v) / (1.0 + np.exp(2.0 * v))
    dens = sps.norm.pdf(z[:, None], scale=np.sqrt(var)[None, :]) * prior[None, :]
    return -float(np.sum(np.log(np.trapezoid(dens, v, axis=1))))


@pytest.mark.x64
def test_binned_mmle_tau_attains_the_unbinned_likelihood():
    # the marginal likelihood is flat near its maximum, so tau itself moves with the binning; the exact likelihood at
    # the binned tau is within 0.01 nats of its value at the unbinned tau (out of ~1e4)
    dt = jnp.result_type(float)
    rng = np.random.default_rng(1)
    z = rng.standard_normal(4000)
    z[:80] += rng.choice([-1.0, 1.0], 80) * rng.uniform(2.0, 7.0, 80)
    zj = jnp.asarray(z, dt)
    t_b = float(horseshoe_mmle_tau(zj))
    t_e = float(horseshoe_mmle_tau(zj, binned=False))
    assert abs(np.log(t_b / t_e)) < 0.05
    assert _neg_loglik(z, t_b) - _neg_loglik(z, t_e) < 0.01


def test_storey_counts_are_exact_with_ties_nan_and_rows():
    # W(lambda) = #{p >= lambda} from the one-pass buckets, against NumPy's counts, ties at the lambdas included
    rng = np.random.default_rng(2)
    dt = jnp.result_type(float)
    p = rng.uniform(size=(3, 4000)).astype(np.dtype(dt))
    p[0, :100] = np.nan
    p[1, :300] = np.asarray(DEFAULT_LAMBDAS, np.dtype(dt))[rng.integers(0, 19, 300)]  # exactly at the grid
    p[2, :10] = 1.0
    _, curve = _pi0_core(jnp.asarray(p), DEFAULT_LAMBDAS, "bootstrap", 3.0)
    lam = np.asarray(DEFAULT_LAMBDAS, np.dtype(dt))
    for r in range(3):
        v = p[r][~np.isnan(p[r])]
        counts = np.array([(v >= lv).sum() for lv in lam], np.float64)
        np.testing.assert_allclose(np.asarray(curve[r], np.float64) * v.size * (1.0 - lam.astype(np.float64)),
                                   counts, rtol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 5, 1000])
def test_sorted_quantile_is_numpy_quantile(n):
    rng = np.random.default_rng(n)
    z = rng.standard_normal(n).astype(np.dtype(jnp.result_type(float)))
    zs = jnp.sort(jnp.asarray(z))
    qs = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    tol = 1e-12 if X64 else 1e-6
    np.testing.assert_allclose(np.asarray(sorted_quantile(zs, jnp.asarray(qs, zs.dtype)), np.float64),
                               np.quantile(z.astype(np.float64), qs), rtol=tol, atol=tol)
    assert float(sorted_quantile(zs, 0.5, midpoint=True)) == pytest.approx(float(np.median(z)), rel=tol, abs=tol)


def test_passes_stream_without_per_test_intermediates():
    # compiled programs only (nothing runs): the binned cutoff's scratch memory does not grow with n (its passes go
    # chunk by chunk), and no multipletests method keeps a (tests x k) array: at most 12 values per test of scratch
    # (Storey's 19 lambdas or the NPMLE's 51 atoms per test would be far past it)
    from icmlx.stats._multitest import METHODS as NAMES
    from icmlx.stats._multitest import _engine
    from icmlx.stats._risk_threshold import _binned_cutoff

    def scratch(fn, *args):
        return fn.lower(*args).compile().memory_analysis().temp_size_in_bytes

    f32 = jnp.float32
    small = scratch(_binned_cutoff, jax.ShapeDtypeStruct((1, 2**20), f32))
    large = scratch(_binned_cutoff, jax.ShapeDtypeStruct((1, 2**23), f32))
    assert large <= small + 2**20, (small, large)
    n = 2**18
    for method in NAMES:
        temp = scratch(_engine, jax.ShapeDtypeStruct((n,), f32), jax.ShapeDtypeStruct((), f32), method, False)
        assert temp <= 48 * n, (method, temp / n)


def test_counts_past_float32_integers():
    # 2^24 + 8 equal values fall in one bin: a float32 count stops at 2^24 (adding 1 no longer changes it); the
    # histograms count in int32
    from icmlx.stats._binning import square_bins
    from icmlx.stats._central_matching import histogram

    m = 2**24 + 8
    z = jnp.full((m,), 1.0, jnp.float32)
    counts, _, _ = histogram(z, 120)
    assert int(jnp.sum(counts).astype(jnp.int32)) == m and int(jnp.max(counts).astype(jnp.int32)) == m
    _, c = square_bins(z[None])
    assert int(jnp.max(c).astype(jnp.int32)) == m
