"""pc_tree (poly-forest learner): oracle, float64 NumPy reference, invariances, consistency, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.structure import (
    Nonparametric,
    dag_to_cpdag,
    pc_tree,
    random_polyforest,
    sample_bernoulli,
    sample_linear_gaussian,
    sample_nonlinear,
    shd,
)


def test_oracle_pc_tree_on_100_random_polyforests():
    base = jax.random.key(5)
    for i in range(100):
        k = jax.random.fold_in(base, i)
        dag = random_polyforest(k, 9, 0.2)
        res = pc_tree(dag, ci_test="d_separation")
        np.testing.assert_array_equal(np.asarray(res.graph), np.asarray(dag_to_cpdag(dag)))
        assert not bool(res.conflicts.any())


def _numpy_pc_tree(x, alpha):
    """Independent float64 NumPy reference of the PC-tree rule with Fisher-z cuts."""
    from scipy.stats import norm

    n, d = x.shape
    r = np.corrcoef(x.T)
    z = norm.ppf(1 - alpha / 2)
    cut0, cut1 = np.tanh(z / np.sqrt(n - 3)), np.tanh(z / np.sqrt(n - 4))
    dep0 = np.abs(r) >= cut0
    skel = np.zeros((d, d), bool)
    for j in range(d):
        for k in range(d):
            if j == k or not dep0[j, k]:
                continue
            ok = True
            for l in range(d):
                if l in (j, k):
                    continue
                pr = (r[j, k] - r[j, l] * r[k, l]) / np.sqrt((1 - r[j, l] ** 2) * (1 - r[k, l] ** 2))
                if abs(pr) < cut1:
                    ok = False
                    break
            skel[j, k] = ok
    arrow = np.zeros((d, d), bool)
    for l in range(d):
        nb = np.nonzero(skel[l])[0]
        for j in nb:
            for k in nb:
                if j != k and not skel[j, k] and not dep0[j, k]:
                    arrow[j, l] = True
    clash = arrow & arrow.T
    arrow &= ~clash
    changed = True
    while changed:
        changed = False
        und = skel & ~arrow & ~arrow.T & ~clash
        prop = np.zeros_like(arrow)
        for a in range(d):
            for b in range(d):
                if arrow[a, b]:
                    for c in range(d):
                        if und[b, c] and c != a and not skel[a, c]:
                            prop[b, c] = True
        both = prop & prop.T
        new = arrow | (prop & ~both)
        clash |= both
        if (new != arrow).any():
            arrow, changed = new, True
    g = np.where(skel, -1, 0)
    g[arrow.T] = 1
    return g


@pytest.mark.x64
@pytest.mark.x64_only
def test_gaussian_pc_tree_matches_numpy_reference():
    for seed in range(3):
        k = jax.random.key(seed)
        with jax.enable_x64(True):
            dag = random_polyforest(k, 12, 0.1)
            x = sample_linear_gaussian(k, dag, 150)  # small n: errors and conflicts do occur
            got = np.asarray(pc_tree(x, alpha=0.05).graph)
        np.testing.assert_array_equal(got, _numpy_pc_tree(np.asarray(x), 0.05))


@pytest.fixture(scope="module")
def gauss_data():
    k = jax.random.key(21)
    dag = random_polyforest(k, 15, 0.1)
    return dag, sample_linear_gaussian(k, dag, 1500)


def test_pc_tree_is_order_independent_and_chunk_invariant(gauss_data):
    _, x = gauss_data
    perm = np.random.default_rng(1).permutation(x.shape[1])
    a = np.asarray(pc_tree(x, alpha=0.01).graph)
    b = np.asarray(pc_tree(x[:, perm], alpha=0.01).graph)
    np.testing.assert_array_equal(b, a[np.ix_(perm, perm)])
    c = np.asarray(pc_tree(x, alpha=0.01, chunk_size=4).graph)
    np.testing.assert_array_equal(c, a)


def test_pc_tree_jit_and_eager_agree(gauss_data):
    _, x = gauss_data
    a = pc_tree(x, alpha=0.01).graph
    b = jax.jit(lambda v: pc_tree(v, alpha=0.01).graph)(x)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # the decision stage (while-loop R1, conflict policy) eagerly; the eager score pass is in the slow test
    from icmlx.structure import pc_tree_from_scores, polyforest_scores

    scores = polyforest_scores(x, alpha=0.01)
    with jax.disable_jit():
        c = pc_tree_from_scores(*scores).graph
    np.testing.assert_array_equal(np.asarray(c), np.asarray(a))


@pytest.mark.slow
def test_pc_tree_fully_eager_agrees(gauss_data):
    _, x = gauss_data
    with jax.disable_jit():
        c = pc_tree(x[:, :6], alpha=0.01).graph
    np.testing.assert_array_equal(np.asarray(c), np.asarray(pc_tree(x[:, :6], alpha=0.01).graph))


def _pearson_strata_pvalue(xj, xk, z):
    """float64 SciPy reference: Pearson chi^2 summed over strata of z (2x2 tables, no continuity correction),
    one dof per stratum whose table has no empty row or column; p = 1 when no such stratum."""
    from scipy import stats

    chi, dof = 0.0, 0
    for v in np.unique(z):
        m = z == v
        tab = np.array([[np.sum((xj[m] == a) & (xk[m] == b)) for b in (0, 1)] for a in (0, 1)])
        if (tab.sum(0) > 0).all() and (tab.sum(1) > 0).all():
            chi += stats.chi2_contingency(tab, correction=False)[0]
            dof += 1
    return 1.0 if dof == 0 else float(stats.chi2.sf(chi, dof))


def test_bernoulli_scores_match_scipy_reference():
    # binary data from a NumPy poly-tree 0 -> 1 -> 2 <- 3, 2 -> 4, 5 -> 4 (noisy copies / XOR-free ORs)
    rng = np.random.default_rng(8)
    n = 800
    flip = lambda v, q: np.where(rng.random(n) < q, 1 - v, v)  # noqa: E731
    x0, x3, x5 = (rng.integers(0, 2, n) for _ in range(3))
    x1 = flip(x0, 0.2)
    x2 = flip(x1 | x3, 0.2)
    x4 = flip(x2 & x5, 0.1)
    x = jnp.asarray(np.stack([x0, x1, x2, x3, x4, x5], axis=1), jnp.int32)
    from icmlx.structure import polyforest_scores

    s0, s1, arg, _, _ = polyforest_scores(x, ci_test="bernoulli", alpha=0.05)
    xn = np.asarray(x)
    # brute force: max over l of the p-value of x_j _||_ x_k | x_l, and the marginal p-value
    for j, kk in [(0, 1), (2, 5), (3, 4)]:
        ls = [l for l in range(6) if l not in (j, kk)]
        ref = max(_pearson_strata_pvalue(xn[:, j], xn[:, kk], xn[:, l]) for l in ls)
        # float32 scores: chi^2 from O(n) counts, relative round-off ~1e-6
        np.testing.assert_allclose(-float(s1[j, kk]), ref, rtol=1e-4, atol=1e-6)
        m = _pearson_strata_pvalue(xn[:, j], xn[:, kk], np.zeros(len(xn)))
        np.testing.assert_allclose(-float(s0[j, kk]), m, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "tester,sampler,kw,n_small,n_big",
    [
        ("fisherz", sample_linear_gaussian, {"alpha": 1e-4}, 60, 4000),
        pytest.param("bernoulli", sample_bernoulli, {"alpha": 1e-4}, 100, 6000,
                     marks=pytest.mark.slow),
        # the thresholded statistic: its scores are checked against binned_u_statistic in
        # test_pc_tree_nonparametric_pvalue_scores_match_the_tester; the learner's convergence by the calibrated case
        pytest.param(Nonparametric(num_bins=3, cond_bins=3), sample_nonlinear, {"threshold": 0.004}, 200, 6000,
                     marks=pytest.mark.slow),
        # calibrated p-value at 0.05 / d^2, separator bins growing with n (default_cond_bins: 3 at n = 200,
        # 15 at n = 6000) so that the binning bias of chain pairs j -> l -> k stays undetectable
        (Nonparametric(num_bins=3), sample_nonlinear, {"alpha": 0.05 / 64}, 200, 6000),
    ],
)
def test_shd_decreases_to_zero_with_n(tester, sampler, kw, n_small, n_big):
    # Monte Carlo over 4 poly-trees (d = 8): mean SHD at large n must be 0 and below the small-n value.
    # alpha = 1e-4 (a level shrinking with n, as the paper's calibrated threshold): at a fixed 0.01 each
    # collider pair is missed with probability 0.01, so SHD would not go to 0.
    shds = {n_small: [], n_big: []}
    for i in range(4):
        k = jax.random.fold_in(jax.random.key(33), i)
        dag = random_polyforest(k, 8)
        truth = dag_to_cpdag(dag)
        x_all = sampler(k, dag, n_big)  # one sampler compilation; the small sample is a prefix
        for n in (n_small, n_big):
            shds[n].append(int(shd(pc_tree(x_all[:n], ci_test=tester, **kw).graph, truth)))
    assert np.mean(shds[n_big]) == 0.0, shds
    assert np.mean(shds[n_small]) > 0.0, shds


def test_pc_tree_bad_input():
    x = jax.random.normal(jax.random.key(0), (50, 4))
    with pytest.raises(ValueError, match="alpha"):
        pc_tree(x, alpha=2.0)
    with pytest.raises(ValueError, match="num_bins"):
        pc_tree(x, ci_test=Nonparametric(num_bins=1))
    with pytest.raises(ValueError, match="ci_test"):
        pc_tree(x, ci_test="no_such_test")
    with pytest.raises(ValueError, match=r"integer.*\['X1', 'X2', 'X3', 'X4'\]"):  # names the columns
        pc_tree(x, ci_test="bernoulli")
    bad = x.at[3, 1].set(jnp.nan)
    with pytest.raises(Exception, match="NaN"):
        jax.block_until_ready(pc_tree(bad).graph)


@pytest.mark.parametrize("tester", ["fisherz", "bernoulli"])
def test_host_sample_is_not_uploaded_whole(tester, monkeypatch):
    # Fisher-z needs only the correlation matrix and Bernoulli a zero-padded copy: the (n, d) NumPy sample itself
    # must not be put on the device (it used to be uploaded, then read back for those statistics)
    rng = np.random.default_rng(1)
    n, d = 300, 5
    x = rng.standard_normal((n, d)) if tester == "fisherz" else (rng.random((n, d)) < 0.5).astype(np.int64)
    x[:, 1] = x[:, 0] + 0.5 * rng.standard_normal(n) if tester == "fisherz" else x[:, 0] ^ (rng.random(n) < 0.1)
    ref = pc_tree(jnp.asarray(x), ci_test=tester, alpha=0.01)  # device input: the other path
    shapes = []
    put = jax.device_put

    def spy(v, *a, **k):
        shapes.append(np.shape(v))
        return put(v, *a, **k)

    monkeypatch.setattr(jax, "device_put", spy)
    res = pc_tree(x, ci_test=tester, alpha=0.01)
    assert (n, d) not in shapes, shapes
    np.testing.assert_array_equal(np.asarray(res.graph), np.asarray(ref.graph))
