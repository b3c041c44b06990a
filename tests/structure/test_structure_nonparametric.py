"""Calibrated nonparametric CI test: brute-force NumPy/SciPy references, null calibration, pc_tree with alpha."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from icmlx.structure import (
    Nonparametric,
    Permutation,
    nonparametric_test,
    pc_tree,
    random_polyforest,
    sample_nonlinear,
)


def _rank_bins_np(v, b):
    ranks = np.argsort(np.argsort(v, kind="stable"), kind="stable")
    return ranks * b // len(v)


def test_rank_bins_where_rank_times_bins_passes_int32():
    # rank * bins passes 2^31, which int32 arithmetic wraps (here 2,100 bins of a million samples; cond_bins grown
    # as sqrt(n) / 5 passes it from 5 million samples on): the bins against NumPy's int64 ranks
    from icmlx.structure._citests._nonparametric import rank_bins

    n, b = 2**20 + 5, 2100
    v = np.random.default_rng(3).permutation(n).astype(np.float32)  # distinct and exact in float32
    got = np.asarray(jax.jit(rank_bins, static_argnums=1)(jnp.asarray(v)[:, None], b))[:, 0]
    np.testing.assert_array_equal(got, _rank_bins_np(v, b))


def test_tables_past_int32_cells_are_refused_by_name():
    # cond_bins^|S| * num_bins^2 cells per test past 2^31 - 1: the flat cell index would wrap (and the table alone
    # would take tens of GB), so the size is refused before any work
    from icmlx.structure import binned_u_statistic

    data = jnp.asarray(np.random.default_rng(0).normal(size=(50, 5)), jnp.float32)
    x, y, s = jnp.array([0]), jnp.array([1]), jnp.array([[2, 3, 4]])
    with pytest.raises(ValueError, match=r"cond_bins=1300 .* 35,152,000,000 cells"):
        nonparametric_test(data, x, y, s, num_bins=4, cond_bins=1300)
    with pytest.raises(ValueError, match=r"num_bins=80 .* 3,276,800,000 cells"):
        binned_u_statistic(data, x, y, s, num_bins=80)


def _u_brute(xs, ys):
    """Unbiased estimate of sum_ab (p_ab - p_a p_b)^2 by averaging the order-4 kernel over all ordered
    4-tuples of distinct samples (no count formulas)."""
    m = len(xs)
    if m < 4:
        return 0.0
    ex = xs[:, None] == xs[None, :]
    ey = ys[:, None] == ys[None, :]
    i, j, k, l = np.ix_(*(np.arange(m),) * 4)
    distinct = (i != j) & (i != k) & (i != l) & (j != k) & (j != l) & (k != l)
    h = ex[i, j] & ey[i, j]
    h = h.astype(float) - 2.0 * (ex[i, j] & ey[i, k]) + (ex[i, j] & ey[k, l])
    return float(h[distinct].sum() / distinct.sum())


def _weights(v, nbins):
    """Eigenvalues of diag(p) - p p^T for the empirical bin frequencies p (independent of the trace forms)."""
    p = np.bincount(v, minlength=nbins) / len(v)
    return np.linalg.eigvalsh(np.diag(p) - np.outer(p, p))


def _reference(x, y, z, n_bins, cond_bins):
    """float64 reference of T and its Pearson three-moment p-value, one stratum at a time."""
    xb, yb, zb = _rank_bins_np(x, n_bins), _rank_bins_np(y, n_bins), _rank_bins_np(z, cond_bins)
    n = len(x)
    nt, k2, k3 = 0.0, 0.0, 0.0
    for c in range(cond_bins):
        sel = zb == c
        m = int(sel.sum())
        if m < 4:
            continue
        nt += m * _u_brute(xb[sel], yb[sel])
        w = np.outer(_weights(xb[sel], n_bins), _weights(yb[sel], n_bins)).ravel()
        k2 += 2 * np.sum(w**2)
        k3 += 8 * np.sum(w**3)
    g, h = k3 / (4 * k2), 8 * k2**3 / k3**2
    return nt / n, float(stats.chi2.sf((nt + g * h) / g, h))


@pytest.mark.x64
def test_statistic_and_asymptotic_pvalue_match_bruteforce_reference():
    rng = np.random.default_rng(0)
    n = 45  # 3 strata of 15: the 4-tuple brute force stays small
    z = rng.normal(size=n)
    x = np.tanh(z) + rng.normal(size=n)
    y = x + 0.5 * z + rng.normal(size=n)
    w = rng.normal(size=n)
    data = jnp.asarray(np.stack([x, y, z, w], axis=1))
    xs, ys, ss = jnp.array([0, 0, 1, 0]), jnp.array([1, 1, 3, 3]), jnp.array([[2], [3], [2], [1]])
    res = nonparametric_test(data, xs, ys, ss, num_bins=3, cond_bins=3)
    cols = [x, y, z, w]
    for t in range(4):
        ref_t, ref_p = _reference(cols[int(xs[t])], cols[int(ys[t])], cols[int(ss[t, 0])], 3, 3)
        # float32 counts/arithmetic (or float64 under x64): relative round-off << 1e-4
        np.testing.assert_allclose(float(res.statistic[t]), ref_t, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(float(res.pvalue[t]), ref_p, rtol=1e-3, atol=1e-6)
    # marginal test (empty S) = one stratum
    m = nonparametric_test(data, jnp.array([0]), jnp.array([3]), jnp.zeros((1, 0), jnp.int32), num_bins=3)
    ref_t, ref_p = _reference(x, w, np.zeros(n), 3, 1)
    np.testing.assert_allclose(float(m.statistic[0]), ref_t, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(float(m.pvalue[0]), ref_p, rtol=1e-3, atol=1e-6)


def test_permutation_pvalue_matches_numpy_for_the_same_permutations():
    from icmlx.structure._citests._nonparametric import _permutation_uniforms

    rng = np.random.default_rng(1)
    n, b = 36, 39
    z = rng.normal(size=n)
    x = z + rng.normal(size=n)
    y = z + 0.7 * x + rng.normal(size=n)
    data = jnp.asarray(np.stack([x, y, z], axis=1), jnp.float32)
    key = jax.random.key(4)
    res = nonparametric_test(data, jnp.array([0, 0]), jnp.array([1, 1]), jnp.array([[2], [2]]), num_bins=2,
                             cond_bins=3, method=Permutation(num_permutations=b), key=key)
    xv = np.asarray(data, np.float64)
    xb, yb, zb = _rank_bins_np(xv[:, 0], 2), _rank_bins_np(xv[:, 1], 2), _rank_bins_np(xv[:, 2], 3)
    u = np.asarray(_permutation_uniforms(key, b, n))

    def stat(xperm):
        return sum(np.sum(zb == c) * _u_brute(xperm[zb == c], yb[zb == c]) for c in range(3)) / n

    t0 = stat(xb)
    exceed = 0
    for r in range(b):
        xperm = xb.copy()
        for c in range(3):  # stratum c: its samples (ascending index) receive x of its samples sorted by u
            idx = np.nonzero(zb == c)[0]
            xperm[idx] = xb[idx[np.argsort(u[r, idx], kind="stable")]]
        exceed += stat(xperm) >= t0 - 1e-4 / n
    ref = (1 + exceed) / (b + 1)
    np.testing.assert_allclose(float(res.statistic[0]), t0, rtol=1e-4, atol=1e-6)
    # same permutations, same tie rule; a float32 tie right at the tolerance could flip one count
    assert abs(float(res.pvalue[0]) - ref) <= 1.0 / (b + 1) + 1e-6, (float(res.pvalue[0]), ref)
    assert float(res.pvalue[0]) == float(res.pvalue[1])


@pytest.fixture(scope="module")
def null_pvalues():
    # X _||_ Y | bin(Z): X and Y depend on Z only through a step function at the terciles of U(0, 1)
    reps, n = 300, 300

    def one(k):
        k1, k2, k3 = jax.random.split(k, 3)
        z = jax.random.uniform(k1, (n,))
        step = jnp.floor(3.0 * z)
        x = step + jax.random.normal(k2, (n,))
        y = jnp.sin(step) * 2.0 + jax.random.normal(k3, (n,))
        return jnp.stack([x, y, z], axis=1)

    data = jax.vmap(one)(jax.random.split(jax.random.key(7), reps))
    # marginal test of x vs an independent column (z of the neighbouring replicate); one compilation for both
    indep = data.at[:, :, 2].set(jnp.roll(data[:, :, 2], 1, axis=0))

    def both(v, w):
        pc = nonparametric_test(v, jnp.array([0]), jnp.array([1]), jnp.array([[2]]), num_bins=3, cond_bins=3).pvalue
        pm = nonparametric_test(w, jnp.array([0]), jnp.array([2]), jnp.zeros((1, 0), jnp.int32), num_bins=4).pvalue
        return pc[0], pm[0]

    pc, pm = jax.jit(jax.vmap(both))(data, indep)
    return np.asarray(pc), np.asarray(pm)


def test_asymptotic_pvalues_are_uniform_under_the_null(null_pvalues):
    for p in null_pvalues:
        # KS against U(0, 1) with 300 draws; the rejection fractions within 3.5 binomial standard errors
        assert stats.kstest(p, "uniform").pvalue > 1e-3
        for a in (0.05, 0.2):
            se = np.sqrt(a * (1 - a) / len(p))
            assert abs(np.mean(p <= a) - a) < 3.5 * se, (a, np.mean(p <= a))


@pytest.mark.slow  # ~7 s; calibration is covered by the uniformity test and the brute-force permutation test
def test_asymptotic_and_permutation_pvalues_agree():
    # moderate dependence: both p-values estimate the same tail probability (MC error of B = 499: <= 0.023)
    k1, k2 = jax.random.split(jax.random.key(3))
    e = jax.random.normal(k1, (400, 3))
    data = jnp.stack([e[:, 0], 0.12 * e[:, 0] + e[:, 1], e[:, 2]], axis=1)
    xs, ys, ss = jnp.array([0]), jnp.array([1]), jnp.array([[2]])
    pa = float(nonparametric_test(data, xs, ys, ss, num_bins=3, cond_bins=2).pvalue[0])
    pp = float(nonparametric_test(data, xs, ys, ss, num_bins=3, cond_bins=2,
                                  method=Permutation(num_permutations=499), key=k2).pvalue[0])
    assert 0.005 < pp < 0.9, pp  # a non-trivial p-value, so the comparison means something
    assert abs(pa - pp) < 0.05 + 0.2 * pp, (pa, pp)


def test_pc_tree_nonparametric_pvalue_scores_match_the_tester():
    k = jax.random.key(3)
    dag = random_polyforest(k, 6)
    x = sample_nonlinear(k, dag, 600)
    from icmlx.structure import polyforest_scores

    s0, s1, arg, cut0, cut1 = polyforest_scores(x, ci_test=Nonparametric(num_bins=3, cond_bins=4), alpha=0.01)
    assert float(cut0) == pytest.approx(-0.01) and float(cut1) == pytest.approx(-0.01)
    pairs = list(itertools.combinations(range(6), 2))
    trip = np.array([(j, kk, l) for j, kk in pairs for l in range(6) if l not in (j, kk)])  # 4 l per pair
    r = nonparametric_test(x, jnp.asarray(trip[:, 0]), jnp.asarray(trip[:, 1]), jnp.asarray(trip[:, 2:]),
                           num_bins=3, cond_bins=4).pvalue
    pj, pk = jnp.asarray([p[0] for p in pairs]), jnp.asarray([p[1] for p in pairs])
    m = nonparametric_test(x, pj, pk, jnp.zeros((len(pairs), 0), jnp.int32), num_bins=3).pvalue
    r = np.asarray(r).reshape(len(pairs), 4)
    for t, (j, kk) in enumerate(pairs):
        # score = -(max over l of the p-value): same statistic, different summation order (float32)
        np.testing.assert_allclose(-float(s1[j, kk]), r[t].max(), rtol=1e-3, atol=1e-6)
        np.testing.assert_allclose(-float(s0[j, kk]), float(m[t]), rtol=1e-3, atol=1e-6)
    # threshold mode: the statistic itself, min over l, vs the segment-sum kernel of binned_u_statistic
    from icmlx.structure import binned_u_statistic

    t0, t1, targ, _, _ = polyforest_scores(x, ci_test=Nonparametric(num_bins=3, cond_bins=3), threshold=0.01)
    u = binned_u_statistic(x, jnp.asarray(trip[:, 0]), jnp.asarray(trip[:, 1]), jnp.asarray(trip[:, 2:]), num_bins=3)
    u = np.asarray(u.statistic).reshape(len(pairs), 4)
    for t, (j, kk) in enumerate(pairs):
        np.testing.assert_allclose(float(t1[j, kk]), u[t].min(), rtol=1e-4, atol=1e-6)
        assert int(targ[j, kk]) == int(trip[4 * t + np.argmin(u[t]), 2])


def test_pc_tree_nonparametric_one_program_fallback_matches_two_programs(monkeypatch):
    # past NP_STATS_CELLS (d > 256) the p-value scores come from the one-program _np_scores instead of
    # _np_stats + _np_min_pvalues: forced here on small data, the two implementations must agree
    from icmlx.structure import polyforest_scores
    from icmlx.structure._polyforest import _polyforest_kernels

    k = jax.random.key(5)
    x = sample_nonlinear(k, random_polyforest(k, 7), 500)
    tester = Nonparametric(num_bins=3, cond_bins=4)
    two = polyforest_scores(x, ci_test=tester, alpha=0.01)
    monkeypatch.setattr(_polyforest_kernels, "NP_STATS_CELLS", 0)
    one = polyforest_scores(x, ci_test=tester, alpha=0.01)
    for i in (0, 1, 3, 4):  # marginal and conditional scores, cuts
        np.testing.assert_allclose(np.asarray(two[i]), np.asarray(one[i]), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(np.asarray(two[2]), np.asarray(one[2]))  # argmin separators


def test_nonparametric_bad_input():
    x = jax.random.normal(jax.random.key(0), (50, 3))
    one, s = jnp.array([0]), jnp.array([[2]])
    with pytest.raises(ValueError, match="method"):
        nonparametric_test(x, one, one + 1, s, method="kci")
    with pytest.raises(ValueError, match="key"):
        nonparametric_test(x, one, one + 1, s, method="permutation")
    with pytest.raises(ValueError, match="num_bins"):
        nonparametric_test(x, one, one + 1, s, num_bins=1)
    with pytest.raises((TypeError, Exception), match="(floating|Float)"):  # jaxtyping may catch it first
        nonparametric_test(x.astype(jnp.int32), one, one + 1, s)
    with pytest.raises(ValueError, match="cond_bins"):
        pc_tree(x, ci_test=Nonparametric(cond_bins=1), alpha=0.01)
