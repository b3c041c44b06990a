"""``multipletests`` against ``statsmodels.stats.multitest.multipletests``, row by row, for every method."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.stats import METHODS, benjamini_hochberg, bh_adjusted_pvalues, bonferroni, multipletests

multitest = pytest.importorskip("statsmodels.stats.multitest")


def _families(n, rng):
    """Rows of p-values with ties, exact zeros and ones, strong signals and none."""
    p = rng.uniform(size=(5, n)) ** 3
    p[0, : n // 3] = 0.0  # exact zeros
    p[0, n // 3 : n // 3 + max(1, n // 10)] = 1.0  # exact ones
    p[1] = np.round(p[1], 2)  # many ties
    p[2, : max(1, n // 2)] *= 1e-4  # strong signals
    p[3] = rng.uniform(0.3, 1.0, size=n)  # nothing to reject
    rng.shuffle(p, axis=1)
    return p


def _check_rows(p, res, method, alpha):
    for i in range(p.shape[0]):
        with np.errstate(divide="ignore"):
            rej, adj, a_sidak, a_bonf = multitest.multipletests(p[i], alpha, method)
        assert np.array_equal(np.asarray(res.reject[i]), rej), (method, p.shape, i)
        np.testing.assert_allclose(np.asarray(res.pvalues_adjusted[i]), adj, rtol=0, atol=1e-12,
                                   err_msg=f"{method} {p.shape} row {i}")
        # statsmodels forms 1 - (1 - alpha)^(1/m), which cancels (2e-16 / (alpha / m) relative); icmlx does not
        m = int(res.num_tests[i])
        assert float(res.alpha_sidak[i]) == pytest.approx(-np.expm1(np.log1p(-alpha) / m), rel=1e-14)
        assert float(res.alpha_sidak[i]) == pytest.approx(a_sidak, rel=max(1e-14, 1e-15 * m / alpha))
        assert float(res.alpha_bonferroni[i]) == pytest.approx(a_bonf, rel=1e-15)


@pytest.mark.x64_only
@pytest.mark.x64
@pytest.mark.parametrize("method", METHODS)
def test_every_method_matches_statsmodels_row_by_row(method):
    # float64 throughout: rejected identical, adjusted p-values to 1e-12 (the bar)
    rng = np.random.default_rng(abs(hash(method)) % 2**32)
    # (statsmodels' Hommel is O(n^2): its largest family is 10^4)
    sizes = [1, 2, 7, 300, 10_000] if method == "hommel" else [1, 2, 7, 300, 20_000, 100_000]
    saw = set()
    for n in sizes:
        p = _families(n, rng)
        if n == 100_000:
            p = p[[0, 2]]  # one family with zeros, ones and ties, one with strong signals
        for alpha in (0.05, 0.25):
            # NumPy input is sorted on the host, JAX input by lax.sort: both against statsmodels
            for given in (p, jnp.asarray(p)):
                res = multipletests(given, alpha, method)
                _check_rows(p, res, method, alpha)
                saw.update(np.asarray(res.num_rejected > 0).tolist())
    assert saw == {True, False}


def test_batch_axes_and_jit_agree_with_rows():
    rng = np.random.default_rng(3)
    p = jnp.asarray(rng.uniform(size=(2, 3, 40)) ** 3, jnp.result_type(float))
    for method in ("holm", "fdr_tsbky", "hommel"):
        full = multipletests(p, 0.1, method)
        jitted = jax.jit(lambda q, m=method: multipletests(q, 0.1, m))(p)
        for b in range(2):
            for r in range(3):
                row = multipletests(p[b, r], 0.1, method)
                assert np.array_equal(np.asarray(full.reject[b, r]), np.asarray(row.reject))
                np.testing.assert_array_equal(np.asarray(full.pvalues_adjusted[b, r]), np.asarray(row.pvalues_adjusted))
        np.testing.assert_array_equal(np.asarray(jitted.pvalues_adjusted), np.asarray(full.pvalues_adjusted))
        assert full.alpha_bonferroni.shape == (2, 3)


def test_nan_policies():
    rng = np.random.default_rng(4)
    p = rng.uniform(size=(3, 30)) ** 4
    p[0, [2, 7]] = np.nan
    p[2, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        multipletests(p)
    for method in METHODS:
        omit = multipletests(p, 0.1, method, nan_policy="omit")
        for i in range(3):
            keep = ~np.isnan(p[i])
            with np.errstate(divide="ignore"):
                rej, adj, *_ = multitest.multipletests(p[i][keep], 0.1, method)
            got_adj = np.asarray(omit.pvalues_adjusted[i], np.float64)
            assert np.array_equal(np.asarray(omit.reject[i])[keep], rej), (method, i)
            assert not np.asarray(omit.reject[i])[~keep].any()
            assert np.isnan(got_adj[~keep]).all()
            np.testing.assert_allclose(got_adj[keep], adj, rtol=1e-5, atol=1e-6)
            assert int(omit.num_tests[i]) == keep.sum()
        if method not in ("holm", "fdr_bh", "sidak"):  # propagate shares the engine; three methods suffice
            continue
        prop = multipletests(p, 0.1, method, nan_policy="propagate")
        assert np.isnan(np.asarray(prop.pvalues_adjusted)[[0, 2]]).all()
        assert not np.asarray(prop.reject)[[0, 2]].any()
        np.testing.assert_array_equal(np.asarray(prop.pvalues_adjusted[1]), np.asarray(omit.pvalues_adjusted[1]))


def test_bh_and_bonferroni_share_the_engine():
    rng = np.random.default_rng(5)
    p = jnp.asarray(rng.uniform(size=(4, 500)) ** 4, jnp.result_type(float))
    for method, fn in (("fdr_bh", benjamini_hochberg), ("bonferroni", bonferroni)):
        ref = multipletests(p, 0.1, method)
        got = fn(p, 0.1)
        assert np.array_equal(np.asarray(got.reject), np.asarray(ref.reject))
    np.testing.assert_array_equal(np.asarray(bh_adjusted_pvalues(p)),
                                  np.asarray(multipletests(p, method="fdr_bh").pvalues_adjusted))
    assert np.array_equal(np.asarray(benjamini_hochberg(p, 0.1, method="sort").reject),
                          np.asarray(multipletests(p, 0.1).reject))


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown method"):
        multipletests([0.1, 0.2], method="fdr_gbs")
    with pytest.raises(TypeError, match="alpha"):
        multipletests([0.1, 0.2], alpha="0.05")
    with pytest.raises(ValueError, match="nan_policy"):
        multipletests([0.1, 0.2], nan_policy="drop")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        multipletests([0.1, 1.5], nan_policy="omit")
    assert multipletests([0.01, 0.02], method="hs").method == "holm-sidak"  # statsmodels' aliases


def _hommel_edge_rows(n):
    """Families whose lower hull is degenerate: all equal, collinear, zeros then a line, a staircase of ties."""
    k = np.arange(1, n + 1)
    rows = [np.full(n, 0.3), k / n, np.where(k <= n // 2, 0.0, k / n), np.ceil(8 * k / n) / 8,
            np.minimum(1.0, 0.02 * k ** 2 / n), np.r_[np.zeros(n - 1), 1.0]]
    return np.stack([r.astype(np.float64) for r in rows])


@pytest.mark.parametrize("n", [1, 2, 3, 10, 257])
def test_hommel_degenerate_hulls_match_statsmodels(n):
    # collinear and tied points leave only the ends of their segments on the hull; the adjusted p-values are those of
    # statsmodels' O(n^2) loop (to float32 rounding in a float32 run; 1e-12 in the x64 run)
    p = _hommel_edge_rows(n)
    res = multipletests(p, 0.1, "hommel")
    tol = 1e-12 if jnp.result_type(float) == jnp.float64 else 1e-6
    for i in range(p.shape[0]):
        rej, adj, *_ = multitest.multipletests(p[i], 0.1, "hommel")
        np.testing.assert_allclose(np.asarray(res.pvalues_adjusted[i], np.float64), adj, rtol=0, atol=tol)
        if tol == 1e-12:
            assert np.array_equal(np.asarray(res.reject[i]), rej)


def test_hommel_ties_get_equal_values_and_vmap_matches_rows():
    rng = np.random.default_rng(11)
    p = np.round(rng.uniform(size=(3, 2000)) ** 4, 3)  # many ties
    pj = jnp.asarray(p, jnp.result_type(float))
    rows = jax.vmap(lambda q: multipletests(q, 0.05, "hommel").pvalues_adjusted)(pj)
    full = multipletests(pj, 0.05, "hommel").pvalues_adjusted
    np.testing.assert_array_equal(np.asarray(rows), np.asarray(full))
    for i in range(3):
        adj = np.asarray(full[i])
        for v in np.unique(p[i])[:50]:
            assert np.unique(adj[p[i] == v]).size == 1  # tied p-values, one adjusted value
        _, ref, *_ = multitest.multipletests(p[i], 0.05, "hommel")
        np.testing.assert_allclose(adj, ref, rtol=1e-5, atol=1e-7)


def test_hommel_size_limit_is_a_clear_error():
    # the hull loop counts 2 * size steps in int32; a larger family is refused at trace time (shape only)
    big = jax.ShapeDtypeStruct((2**30,), jnp.float32)
    with pytest.raises(ValueError, match="up to 1073741823 tests"):
        jax.eval_shape(lambda q: multipletests(q, 0.05, "hommel").pvalues_adjusted, big)


def test_sidak_levels_keep_their_digits_in_float32():
    # 1 - (1 - alpha)^(1/m) rounds to a multiple of 6e-8 in float32 at m = 10^6 (or to 0 past ~10^7); the levels
    # must agree with the float64 value to float32 precision, and so the decisions with statsmodels' (float64)
    m = 10**6
    p = np.full(m, 0.5, np.float32)
    p[:5] = np.array([4.9e-8, 5.0e-8, 5.2e-8, 5.3e-8, 1e-9], np.float32)  # the level is 5.1293e-8
    exact = -np.expm1(np.log1p(-0.05) / m)
    for method in ("sidak", "holm-sidak"):
        res = multipletests(jnp.asarray(p, jnp.float32), 0.05, method)
        assert float(res.alpha_sidak) == pytest.approx(exact, rel=1e-6)
        want = multitest.multipletests(p.astype(np.float64), 0.05, method)[0]
        assert np.array_equal(np.asarray(res.reject), want), method
        assert np.asarray(res.reject)[:5].tolist() == [True, True, False, False, True]


def test_step_counts_past_float32_integers():
    # 2^24 + 8 tests: positions past 2^24 are not all float32 numbers, and the step-down counts m - i formed from
    # rounded floats reached 0 at the end of the family (Hochberg then rejected every test); p = 0.5 everywhere
    # rejects nothing. Adjusted: Holm max_j (m - j + 1) p = 1 after the clip, Hochberg min_j (m - j + 1) p = 0.5
    # (at the last test)
    m = 2**24 + 8
    p = np.full(m, 0.5, np.float32)
    for method, want in (("simes-hochberg", 0.5), ("holm", 1.0)):
        res = multipletests(p, 0.05, method)
        assert int(res.num_rejected) == 0, method
        adj = np.asarray(res.pvalues_adjusted)
        assert adj.min() == want and adj.max() == want, method
