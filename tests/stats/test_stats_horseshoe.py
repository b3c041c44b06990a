"""Horseshoe shrinkage by quadrature (notes check 7), its threshold, and the numpyro NUTS reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from _horseshoe_quad import horseshoe_shrinkage_quad
from icmlx.stats import estimate_sigma, horseshoe_mmle_tau, horseshoe_shrinkage, horseshoe_test, horseshoe_threshold

X64 = bool(jax.config.jax_enable_x64)


@pytest.mark.x64
def test_shrinkage_against_adaptive_quadrature():
    # issue: accurate to 1e-6 over tau in [1e-6, 1] (float64); float32 is held to 2e-6
    tol = 1e-6 if X64 else 2e-6
    xs = np.array([0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 25.0])
    for tau in [1e-6, 1e-4, 1e-2, 0.1, 0.5, 1.0]:
        got = np.asarray(horseshoe_shrinkage(jnp.asarray(xs, jnp.result_type(float)), tau), np.float64)
        ref = np.array([horseshoe_shrinkage_quad(z, tau) for z in xs])
        np.testing.assert_allclose(got, ref, atol=tol, err_msg=f"tau={tau}")


def test_shrinkage_fixed_points():
    # notes check 7 (quoted to 5 digits) and the exact value 1/3 at tau = 1, x = 0
    x = jnp.array([0.0, 4.0, 6.0, 6.0, 6.0])
    tau = jnp.array([1.0, 0.01, 0.01, 1e-4, 1e-6])
    got = np.asarray(horseshoe_shrinkage(x, tau), np.float64)
    np.testing.assert_allclose(got, [1 / 3, 0.50353, 0.93844, 0.93121, 0.52597], atol=6e-6)


def test_threshold_and_test():
    thr = float(horseshoe_threshold(0.01))
    assert thr == pytest.approx(3.995, abs=1e-3)
    # the threshold is where the shrinkage crosses 1/2
    e = horseshoe_shrinkage(jnp.array([thr - 1e-2, thr + 1e-2]), 0.01)
    assert float(e[0]) < 0.5 < float(e[1])
    x = jnp.linspace(-6.0, 6.0, 121)
    res = horseshoe_test(x, 0.01)
    direct = np.asarray(horseshoe_shrinkage(x, 0.01)) > 0.5
    assert np.array_equal(np.asarray(res.reject), direct)
    # EB tau per row
    xb = jnp.stack([jnp.concatenate([jnp.zeros(90), jnp.full((10,), 8.0)]), jnp.zeros(100)])
    res = horseshoe_test(xb, "eb")
    np.testing.assert_allclose(np.asarray(res.tau), [0.1, 0.01], rtol=1e-6)
    assert [int(v) for v in res.num_rejected] == [10, 0]


@pytest.mark.x64
def test_mmle_tau_is_horseshoe_mmle_tau_per_row():
    # tau="mmle" is horseshoe_mmle_tau of x / sigma on [1/n, 1] (checked against SciPy in
    # test_stats_horseshoe_intervals.py), per row; the decisions are the exact shrinkage > 1/2 rule at that tau
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 400)) * 1.7
    x[0, :20] += 9.0
    x = jnp.asarray(x, jnp.result_type(float))
    s = estimate_sigma(x, "mad")
    for binned in (True, False):
        res = horseshoe_test(x, "mmle", sigma="mad", binned=binned)
        # the same standardised rows z = x / sigma: in float32 the flat likelihood near its maximum moves the
        # golden-section answer by ~1e-3 under rounding changes of the summed log-likelihood
        want = np.asarray(horseshoe_mmle_tau(x / s[:, None], binned=binned), np.float64)
        np.testing.assert_allclose(np.asarray(res.tau), want, rtol=1e-6 if X64 else 1e-3)
        assert want[0] > want[1]
    for i in range(2):
        direct = np.asarray(horseshoe_shrinkage(x[i] / s[i], float(res.tau[i]))) > 0.5
        assert np.array_equal(np.asarray(res.reject[i]), direct)


@pytest.mark.x64
def test_storey_tau_is_one_minus_storey_pi0():
    # tau="storey": 1 - pi0 with pi0 from an independent NumPy Storey bootstrap on the
    # two-sided p-values: the lambda grid 0.05..0.95, the lambda of least estimated MSE (Storey et al. 2004)
    from scipy import stats as sps

    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2000))
    x[0, :200] += rng.choice([-4.0, 4.0], 200)
    x = jnp.asarray(x, jnp.result_type(float))
    res = horseshoe_test(x, "storey")
    p = 2.0 * sps.norm.sf(np.abs(np.asarray(x, np.float64)))
    lam = np.round(np.arange(0.05, 0.951, 0.05), 2)
    want = []
    for row in p:
        m = row.size
        w = np.array([(row >= v).sum() for v in lam], np.float64)
        curve = w / (m * (1.0 - lam))
        mse = w / (m**2 * (1.0 - lam) ** 2) * (1.0 - w / m) + (curve - np.quantile(curve, 0.1)) ** 2
        pi0 = np.clip(curve[mse == mse.min()].min(), 1.0 / m, 1.0)
        want.append(np.clip(1.0 - pi0, 1.0 / m, 1.0))
    np.testing.assert_allclose(np.asarray(res.tau), want, rtol=1e-5 if X64 else 1e-3)
    assert 0.05 < float(res.tau[0]) < 0.15 and float(res.tau[1]) < 0.03
    for i in range(2):
        direct = np.asarray(horseshoe_shrinkage(x[i], float(res.tau[i]))) > 0.5
        assert np.array_equal(np.asarray(res.reject[i]), direct)


def test_bad_inputs():
    with pytest.raises(ValueError, match="tau"):
        horseshoe_shrinkage(jnp.zeros(3), 0.0)
    with pytest.raises(ValueError, match="tau must be"):
        horseshoe_test(jnp.zeros(3), "mle")
    with pytest.raises((ValueError, RuntimeError), match="NaN"):
        horseshoe_shrinkage(jnp.array([jnp.nan]), 0.1)


@pytest.mark.slow
def test_nuts_matches_quadrature_fixed_tau():
    pytest.importorskip("numpyro")
    from icmlx.stats import horseshoe_nuts

    x = jnp.array([0.0, 1.5, 3.0, 4.0, 6.0])
    fit = horseshoe_nuts(jax.random.key(0), x, tau=0.1, num_warmup=1000, num_samples=4000)
    quad = np.asarray(horseshoe_shrinkage(x, 0.1), np.float64)
    se = np.asarray(fit.shrinkage_se, np.float64)
    # Monte Carlo agreement within 4 batch-means standard errors (+ small floor)
    assert np.all(np.abs(np.asarray(fit.shrinkage, np.float64) - quad) < 4 * se + 5e-3)


@pytest.mark.slow
def test_nuts_smoke_full_bayes():
    pytest.importorskip("numpyro")
    from icmlx.stats import horseshoe_nuts

    x = jnp.array([0.0, 0.3, -0.5, 9.0])
    fit = horseshoe_nuts(jax.random.key(1), x, num_warmup=150, num_samples=200)
    assert fit.tau.shape == (200,) and bool(jnp.all(fit.tau > 0))
    assert np.asarray(fit.reject).tolist() == [False, False, False, True]


def test_chunked_path_matches_single_batch():
    # inputs larger than batch_size go through lax.map in chunks; results must not change
    x = jnp.linspace(-7.0, 7.0, 50)
    a = horseshoe_shrinkage(x, 0.05, batch_size=16)
    b = horseshoe_shrinkage(x, 0.05)
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
