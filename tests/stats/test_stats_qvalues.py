"""Storey's q-values and pi0 estimates against statsmodels' BH, SciPy's smoothing spline and simulated truth."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.stats import estimate_pi0, qvalues, simulate_two_groups, two_sided_pvalues

multitest = pytest.importorskip("statsmodels.stats.multitest")
FLOAT = jnp.result_type(float)


@pytest.mark.x64
def test_given_pi0_is_pi0_times_bh_adjusted():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=(3, 700)) ** 3
    p[0, :50] = 0.0
    p[1] = np.round(p[1], 2)
    p = np.asarray(jnp.asarray(p, FLOAT), np.float64)
    tol = 1e-12 if FLOAT == jnp.float64 else 1e-6
    for pi0 in (0.3, 1.0, np.array([0.2, 0.7, 0.9])):
        res = qvalues(jnp.asarray(p, FLOAT), pi0=pi0)
        pis = np.broadcast_to(pi0, (3,))
        for r in range(3):
            _, adj, *_ = multitest.multipletests(p[r], method="fdr_bh")
            np.testing.assert_allclose(np.asarray(res.qvalues[r], np.float64), pis[r] * adj, rtol=tol, atol=tol)
            q_sorted = np.asarray(res.qvalues[r])[np.argsort(p[r], kind="stable")]
            assert np.all(np.diff(q_sorted) >= 0)  # monotone in p


def _scipy_smoother_row(x, df):
    """The hat matrix's last row of SciPy's penalised natural cubic spline, its penalty set by trace = df."""
    from scipy.interpolate import make_smoothing_spline

    eye = np.eye(x.size)

    def hat(lam):
        return np.array([make_smoothing_spline(x, eye[j], lam=lam)(x) for j in range(x.size)]).T

    lo, hi = -20.0, 5.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.trace(hat(10.0**mid)) > df else (lo, mid)
    return hat(10.0 ** (0.5 * (lo + hi)))[-1]


def test_smoother_is_the_df3_smoothing_spline():
    from icmlx.stats._qvalues import DEFAULT_LAMBDAS, _smoother_row

    x = np.asarray(DEFAULT_LAMBDAS)
    np.testing.assert_allclose(_smoother_row(DEFAULT_LAMBDAS, 3.0), _scipy_smoother_row(x, 3.0), atol=1e-6)
    uneven = (0.0, 0.1, 0.15, 0.4, 0.5, 0.8)
    np.testing.assert_allclose(_smoother_row(uneven, 3.0), _scipy_smoother_row(np.asarray(uneven), 3.0), atol=1e-6)


@pytest.mark.parametrize("method", ["smoother", "bootstrap"])
def test_pi0_recovers_the_truth_on_two_groups_data(method):
    # Storey's pi0 estimates the density of the p-values at 1: pi0 + (1 - pi0) f1(1), with f1(1) = 1/sqrt(1 + tau2)
    # for N(0, tau2) effects. With tau2 = 1000 that bias is at most 0.016, so the estimate must be within 0.03 of
    # pi0 itself (mean absolute error over 20 replicates of m = 10^4; the per-replicate sd is about 0.02, the MAE's
    # Monte Carlo error 0.005). With tau2 = 9 the truth it can reach is the density at 1; the same 0.03 holds there.
    for tau2, identifiable in ((1000.0, False), (9.0, True)):
        for pi0 in (0.5, 0.8, 0.95, 1.0):
            z = simulate_two_groups(jax.random.key(7), 10_000, max(1.0 - pi0, 1e-12), tau2, 20).x
            est = np.asarray(estimate_pi0(two_sided_pvalues(z), method=method), np.float64)
            target = pi0 + (1.0 - pi0) / np.sqrt(1.0 + tau2) if identifiable else pi0
            assert np.mean(np.abs(est - target)) < 0.03, (tau2, pi0, est.mean())
            assert np.all(est <= 1.0)


def test_robust_where_qvalue_fails():
    # tiny m, p-values piling at 1 (discrete tests), all p-values below the grid, a grid past max(p)
    cases = [
        np.array([0.3]),
        np.array([0.01, 0.04]),
        np.concatenate([np.full(600, 1.0), np.random.default_rng(1).uniform(size=400) ** 4]),
        np.round(np.random.default_rng(2).uniform(size=500), 1),
        np.full(50, 1e-4),
        np.random.default_rng(3).uniform(0, 0.5, size=300),
    ]
    for p in cases:
        for method in ("smoother", "bootstrap"):
            res = qvalues(p, pi0_method=method)
            pi0 = float(res.pi0)
            assert (1.0 - 1e-6) / p.size <= pi0 <= 1.0, (p[:3], method, pi0)
            q = np.asarray(res.qvalues)
            assert np.all(np.isfinite(q)) and np.all(q <= 1.0)
            _, adj, *_ = multitest.multipletests(np.asarray(jnp.asarray(p, FLOAT), np.float64), method="fdr_bh")
            np.testing.assert_allclose(q, pi0 * adj, rtol=1e-5, atol=1e-7)


def test_batches_nan_and_bad_input():
    rng = np.random.default_rng(4)
    p = rng.uniform(size=(2, 200))
    p[1, :40] *= 1e-3
    both = qvalues(p)
    for r in range(2):
        np.testing.assert_allclose(np.asarray(both.qvalues[r]), np.asarray(qvalues(p[r]).qvalues), rtol=1e-6)
    assert both.pi0_lambda.shape == (2, 19) and both.lambdas.shape == (19,)
    jitted = jax.jit(lambda x: qvalues(x).qvalues)(jnp.asarray(p, FLOAT))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(both.qvalues), rtol=1e-6)
    pn = p[0].copy()
    pn[5] = np.nan
    omit = qvalues(pn, nan_policy="omit")
    ref = qvalues(np.delete(pn, 5))
    assert np.isnan(float(omit.qvalues[5]))
    np.testing.assert_allclose(np.delete(np.asarray(omit.qvalues), 5), np.asarray(ref.qvalues), rtol=1e-6)
    with pytest.raises(ValueError, match="NaN"):
        qvalues(pn)
    with pytest.raises(ValueError, match="pi0"):
        qvalues(p, pi0=1.5)
    with pytest.raises(TypeError, match="pi0"):
        qvalues(p, pi0="0.5")
    with pytest.raises(ValueError, match="pi0_method"):
        qvalues(p, pi0_method="spline")
    with pytest.raises(ValueError, match="lambdas"):
        qvalues(p, lambdas=[0.5, 0.2])
