"""CI testers vs independent references: NumPy/SciPy closed forms, causal-learn's CIT, networkx d-separation."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from icmlx.structure import (
    bernoulli_test,
    binned_u_statistic,
    chi_square,
    correlation_matrix,
    d_separation,
    fisher_z,
    random_er_dag,
)


def _triples(d, k, m, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < m:
        v = rng.choice(d, size=k + 2, replace=False)
        out.append(v)
    a = np.asarray(out)
    return jnp.asarray(a[:, 0], jnp.int32), jnp.asarray(a[:, 1], jnp.int32), jnp.asarray(a[:, 2:], jnp.int32)


@pytest.mark.x64
@pytest.mark.x64_only
@pytest.mark.parametrize("k", [0, 1, 3])
def test_fisher_z_matches_numpy_partial_correlation(k):
    # reference: partial correlation from the inverse of the float64 NumPy correlation submatrix
    rng = np.random.default_rng(1)
    n, d = 300, 7
    a = rng.normal(size=(d, d))
    x = rng.normal(size=(n, d)) @ a
    with jax.enable_x64(True):
        corr = correlation_matrix(jnp.asarray(x))
        xs, ys, ss = _triples(d, k, 20)
        res = fisher_z(corr, n, xs, ys, ss)
        p = np.asarray(res.pvalue)
    r_np = np.corrcoef(x.T)
    for t in range(20):
        v = [int(xs[t]), int(ys[t]), *map(int, ss[t])]
        inv = np.linalg.inv(r_np[np.ix_(v, v)])
        r = -inv[0, 1] / np.sqrt(inv[0, 0] * inv[1, 1])
        stat = np.sqrt(n - k - 3) * abs(np.arctanh(r))
        p_ref = 2 * stats.norm.sf(stat)
        # float64: agreement to 1e-10 absolute (causal-learn's own 1 - cdf form loses ~1e-16)
        assert abs(p[t] - p_ref) < 1e-10


def _discrete(n, d, seed, kmax=3):
    rng = np.random.default_rng(seed)
    cards = rng.integers(2, kmax + 1, size=d)
    x = np.zeros((n, d), np.int64)
    x[:, 0] = rng.integers(0, cards[0], n)
    for j in range(1, d):
        parent = x[:, j - 1] % cards[j]
        noise = rng.integers(0, cards[j], n)
        x[:, j] = np.where(rng.random(n) < 0.4, parent, noise)
    return x


@pytest.mark.x64
@pytest.mark.x64_only
@pytest.mark.parametrize("method", ["chisq", "gsq"])
def test_chi_square_matches_causal_learn(method):
    cit = pytest.importorskip("causallearn.utils.cit")
    # every counting plan is exercised: bitsets (|S| = 0, small tables), a dense table filled by one scatter of
    # the samples (|S| = 2), strata re-ranked per sample (|S| = 8: 4^8 strata * 4^2 cells > 2^17);
    # n = 300 leaves many strata with structural zeros (exercises the dof rule)
    x = _discrete(300, 10, seed=3, kmax=4)
    tester = cit.CIT(x, method)
    with jax.enable_x64(True):
        for k in (0, 2, 8):
            xs, ys, ss = _triples(10, k, 12, seed=k)
            res = chi_square(jnp.asarray(x, jnp.int32), xs, ys, ss, g_square=(method == "gsq"))
            p = np.asarray(res.pvalue)
            for t in range(12):
                ref = tester(int(xs[t]), int(ys[t]), [int(v) for v in ss[t]])
                assert abs(p[t] - ref) < 1e-10, (k, t, p[t], ref)


def test_chi_square_counting_plans_agree():
    # the three counting plans give the same statistic and dof on the same tests (independent code paths)
    import icmlx.structure._citests._contingency as ct

    # all cards 3, |S| = 2: every test has the same 81-cell table (one compilation per plan)
    x = jnp.asarray(np.random.default_rng(5).integers(0, 3, size=(500, 6)), jnp.int32)
    xs, ys, ss = _triples(6, 2, 12, seed=1)
    plans = [("bits", 128), ("dense1", 128), None]
    outs = []
    for plan in plans:
        if plan is None:  # force the per-sample strata plan
            old = ct.DENSE_CELLS
            ct.DENSE_CELLS = 1
            try:
                outs.append(chi_square(x, xs, ys, ss))
            finally:
                ct.DENSE_CELLS = old
        else:
            old = ct.BITS_CELLS, ct.BITS_MIN_TESTS
            ct.BITS_CELLS = plan[1] if plan[0] == "bits" else 1
            ct.BITS_MIN_TESTS = 0  # bitsets even for a small batch
            try:
                outs.append(chi_square(x, xs, ys, ss))
            finally:
                ct.BITS_CELLS, ct.BITS_MIN_TESTS = old
    for o in outs[1:]:
        np.testing.assert_array_equal(np.asarray(o.dof), np.asarray(outs[0].dof))
        np.testing.assert_allclose(np.asarray(o.statistic), np.asarray(outs[0].statistic), rtol=1e-5)


def test_small_tables_take_the_dense_plan_unless_bitsets_are_turned_on():
    # host planning only: a batch large enough for the old bitset rule (>= 32,768 tests of <= 64-cell tables)
    import icmlx.structure._citests._contingency as ct

    rng = np.random.default_rng(0)
    m, d = 40_000, 30
    a = np.argsort(rng.random((m, d)), axis=1)[:, :4]  # |S| = 2, binary: 16-cell tables
    cards = np.full(d, 2)
    kinds = {plan[0] for _, plan in ct._chi_square_groups(cards, a[:, 0], a[:, 1], a[:, 2:], 1 << 14, 2)}
    assert "bits" not in kinds
    old = ct.BITS_MIN_TESTS
    ct.BITS_MIN_TESTS = 32768
    try:
        groups = ct._chi_square_groups(cards, a[:, 0], a[:, 1], a[:, 2:], 1 << 14, 2)
    finally:
        ct.BITS_MIN_TESTS = old
    assert {plan[0] for _, plan in groups} == {"bits"}


@pytest.mark.x64
@pytest.mark.x64_only
def test_bernoulli_pvalue_equals_pearson_chi_square():
    # on binary data the Bernoulli tester's p-value is the Pearson chi^2 test (scipy, no continuity correction)
    rng = np.random.default_rng(4)
    n = 500
    z = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.7, z, rng.integers(0, 2, n))
    b = np.where(rng.random(n) < 0.7, z, rng.integers(0, 2, n))
    data = np.stack([a, b, z], axis=1)
    with jax.enable_x64(True):
        res = bernoulli_test(jnp.asarray(data, jnp.int32), jnp.array([0]), jnp.array([1]),
                             jnp.zeros((1, 0), jnp.int32))
        tab = np.array([[np.sum((a == i) & (b == j)) for j in (0, 1)] for i in (0, 1)])
        chi2, p, _, _ = stats.chi2_contingency(tab, correction=False)
        assert abs(float(res.pvalue[0]) - p) < 1e-10
        # gap statistic: |p11 - p1. p.1|
        gap = abs(np.mean(a * b) - a.mean() * b.mean())
        assert abs(float(res.statistic[0]) - gap) < 1e-12


def test_binned_u_statistic_is_unbiased_brute_force():
    # compare the count formula with the explicit U-statistic over all ordered distinct tuples (m = 7)
    rng = np.random.default_rng(5)
    m = 7
    xb = rng.integers(0, 2, m)
    yb = rng.integers(0, 2, m)
    from icmlx.structure._citests._nonparametric import _u_stat_cells

    nab = np.array([[np.sum((xb == a) & (yb == b)) for b in (0, 1)] for a in (0, 1)], float)
    got = float(_u_stat_cells(jnp.asarray(nab, jnp.float32), jnp.asarray(nab.sum(1), jnp.float32),
                              jnp.asarray(nab.sum(0), jnp.float32), jnp.asarray(float(m), jnp.float32)))
    idx = range(m)
    t1 = np.mean([sum((xb[i] == a) & (yb[i] == b) & (xb[j] == a) & (yb[j] == b)
                      for a in (0, 1) for b in (0, 1))
                  for i, j in itertools.permutations(idx, 2)])
    t2 = np.mean([sum((xb[i] == a) & (yb[i] == b) & (xb[j] == a) & (yb[k] == b)
                      for a in (0, 1) for b in (0, 1))
                  for i, j, k in itertools.permutations(idx, 3)])
    t3 = np.mean([sum((xb[i] == a) & (xb[j] == a) & (yb[k] == b) & (yb[l] == b)
                      for a in (0, 1) for b in (0, 1))
                  for i, j, k, l in itertools.permutations(idx, 4)])
    assert abs(got - (t1 - 2 * t2 + t3)) < 1e-5  # float32 round-off on O(1) terms


def test_binned_u_statistic_separates_dependence():
    key = jax.random.key(3)
    k1, k2 = jax.random.split(key)
    z = jax.random.normal(k1, (3000,))
    e = jax.random.normal(k2, (3000, 2))
    # x, y depend on z only through sign(z); the median of z is a bin edge, so given z's bin they are
    # exactly independent
    s = jnp.sign(z)
    data = jnp.stack([s + 0.5 * e[:, 0], s + 0.5 * e[:, 1], z], axis=1)
    res = binned_u_statistic(data, jnp.array([0, 0]), jnp.array([1, 1]),
                             jnp.array([[2], [2]]), num_bins=4)
    marg = binned_u_statistic(data, jnp.array([0]), jnp.array([1]), jnp.zeros((1, 0), jnp.int32))
    # marginal: strong dependence; conditional: mean-zero U-statistic, |T| ~ 1e-3 (sd at n=3000)
    assert float(marg.statistic[0]) > 0.02
    assert abs(float(res.statistic[0])) < 0.005


def test_d_separation_matches_networkx():
    nx = pytest.importorskip("networkx")
    dag = np.asarray(random_er_dag(jax.random.key(7), 9, 2.5))
    g = nx.DiGraph()
    g.add_nodes_from(range(9))
    g.add_edges_from(zip(*np.nonzero(dag)))
    for k in (0, 1, 2):
        xs, ys, ss = _triples(9, k, 40, seed=10 + k)
        p = np.asarray(d_separation(jnp.asarray(dag), xs, ys, ss).pvalue)  # one transfer, not 40 device reads
        for t in range(40):
            ref = nx.is_d_separator(g, {int(xs[t])}, {int(ys[t])}, {int(v) for v in ss[t]})
            assert bool(p[t] == 1.0) == ref


@pytest.mark.x64
@pytest.mark.x64_only
def test_chi_square_high_cardinality_matches_causal_learn():
    # up to 60 categories: the conditioned tests take the sorted per-sample counting (tables of 60^2 cells per
    # stratum would be mostly empty at n = 2,000)
    cit = pytest.importorskip("causallearn.utils.cit")
    rng = np.random.default_rng(7)
    n, d = 2000, 6
    cards = [60, 45, 7, 30, 3, 52]
    x = np.zeros((n, d), np.int64)
    x[:, 0] = rng.integers(0, cards[0], n)
    for j in range(1, d):
        x[:, j] = np.where(rng.random(n) < 0.5, x[:, j - 1] % cards[j], rng.integers(0, cards[j], n))
    for method in ("chisq", "gsq"):
        tester = cit.CIT(x, method)
        with jax.enable_x64(True):
            for k in (1, 2, 3):
                xs, ys, ss = _triples(d, k, 8, seed=10 + k)
                p = np.asarray(chi_square(jnp.asarray(x, jnp.int32), xs, ys, ss, g_square=method == "gsq").pvalue)
                for t in range(8):
                    ref = tester(int(xs[t]), int(ys[t]), [int(v) for v in ss[t]])
                    assert abs(p[t] - ref) < 1e-10, (method, k, t, p[t], ref)


@pytest.mark.parametrize("k", [1, 8])
def test_sorted_counting_agrees_with_table_counting(k):
    # the sorted per-sample counts against the per-sample counts from tables (scatter-ranked strata for |S| = 1,
    # strata codes past int32, re-ranked column by column, for |S| = 8 with 20 categories: 20^8 > 2^31)
    import icmlx.structure._citests._contingency as ct
    import icmlx.structure._citests._flat_counts as fc

    rng = np.random.default_rng(11)
    x = jnp.asarray(rng.integers(0, 20, size=(700, 10)), jnp.int32)
    xs, ys, ss = _triples(10, k, 6, seed=k)
    old, old_flat = ct.DENSE_CELLS, fc.FLAT_CELLS
    ct.DENSE_CELLS, fc.FLAT_CELLS = 1, 0  # every test to the sorted or table per-sample plans
    try:
        kinds = {plan[0] for _, plan in ct._chi_square_groups(np.full(11, 20), xs, ys, ss, 4096, 32, n_true=700)}
        assert kinds == {"sorted" if k == 1 else "sorted_each"}
        got = chi_square(x, xs, ys, ss)
        ct.SORTED_PLANS = False
        ref = chi_square(x, xs, ys, ss)
    finally:
        ct.DENSE_CELLS, ct.SORTED_PLANS, fc.FLAT_CELLS = old, True, old_flat
    np.testing.assert_array_equal(np.asarray(got.dof), np.asarray(ref.dof))
    np.testing.assert_allclose(np.asarray(got.statistic), np.asarray(ref.statistic), rtol=1e-5)


def test_sharded_table_batches_keep_int32_cell_indices():
    # the vectorised (sharded) table kernels index a batch's tables side by side, cell + test * cells: the batch
    # cap keeps b * cells in int32 (a dense table of 2^27 cells, 20 million samples, is at most 8 per batch), and a
    # mesh whose smallest batch would pass it is refused by name; planning only, no table is built
    from jax.sharding import Mesh

    import icmlx.structure._citests._contingency as ct

    codes = np.tile(np.arange(16), 4)[:, None] * np.ones((1, 3), np.int64)  # kmax = 16
    eng = ct._ChiSquareEngine(codes, g_square=False)
    for plan in [("dense", 2**19, 2**19), ("dense", 2**15, 2**15), ("scatter", 2**16, 2**16), ("sort", 2**22, 0)]:
        cells = plan[1] * eng.kmax**2
        assert eng._cap(plan) * cells <= 2**31 - 1, plan
    if jax.device_count() > 1:
        sharded = ct._ChiSquareEngine(codes, g_square=False, mesh=Mesh(np.array(jax.devices()), ("tests",)))
        b = jax.device_count()
        idx = np.zeros(b, np.int32)
        with pytest.raises(ValueError, match="more cells than int32"):
            sharded._kernel(idx, idx + 1, np.full((b, 1), 2, np.int32), None, ("dense", 2**21, 2**21), b)


def test_bernoulli_refuses_strata_codes_past_int32():
    # |S| = 31 binary variables: the stratum code 2 z + bit reaches 2^31 - 1 and its 2^31 strata pass int32
    data = jnp.asarray(np.random.default_rng(0).integers(0, 2, size=(20, 33)), jnp.int32)
    with pytest.raises(ValueError, match=r"\|S\|=31 .* 2\^31 strata"):
        bernoulli_test(data, jnp.array([0]), jnp.array([1]), jnp.arange(2, 33)[None, :])


@pytest.mark.parametrize("g_square", [False, True])
def test_flat_counting_matches_a_numpy_table(g_square):
    # the flat-buffer per-sample counts (high-cardinality x, y given one or two others) against X² / G² and
    # causal-learn's dof from explicit NumPy tables; a rare category of x left out of some strata exercises the
    # empty rows and columns
    import icmlx.structure._citests._contingency as ct

    rng = np.random.default_rng(12)
    n, cards = 3000, np.array([90, 70, 12, 5, 9])
    x = np.stack([rng.integers(0, c, n) for c in cards], axis=1)
    x[:, 1] = np.where(rng.random(n) < 0.6, x[:, 0] % 70, x[:, 1])
    x[:, 0] = np.where(x[:, 0] == 89, np.where(x[:, 2] == 0, 89, 0), x[:, 0])
    xs, ys = np.array([0, 0, 1, 0]), np.array([1, 1, 3, 3])
    ss = [np.array([[2], [4], [2], [4]]), np.array([[2, 4], [4, 2], [2, 4], [4, 2]])]
    for s in ss:
        kinds = {plan[0] for _, plan in ct._chi_square_groups(np.append(cards, 1), xs, ys, s, 4096, 128, n_true=n)}
        assert kinds == {"flat"}
        idx = (jnp.asarray(v, jnp.int32) for v in (xs, ys, s))
        got = chi_square(jnp.asarray(x, jnp.int32), *idx, g_square=g_square)
        for t in range(len(xs)):
            stat, dof = _numpy_stat_dof(x, xs[t], ys[t], s[t], g_square)
            assert int(got.dof[t]) == dof, (t, int(got.dof[t]), dof)
            np.testing.assert_allclose(float(got.statistic[t]), stat, rtol=2e-4)


def _numpy_stat_dof(x, xi, yi, si, g_square):
    """X² (or G²) and causal-learn's dof of ``x[:, xi] ⫫ x[:, yi] | x[:, si]`` from explicit float64 NumPy tables
    over the observed categories of each stratum."""
    _, stratum = np.unique(x[:, si], axis=0, return_inverse=True)
    stat, dof = 0.0, 0
    for r in np.unique(stratum):
        rows = stratum == r
        _, a = np.unique(x[rows, xi], return_inverse=True)
        _, b = np.unique(x[rows, yi], return_inverse=True)
        tab = np.zeros((a.max() + 1, b.max() + 1))
        np.add.at(tab, (a, b), 1.0)
        e = tab.sum(1, keepdims=True) * tab.sum(0, keepdims=True) / tab.sum()
        if g_square:
            pos = tab > 0
            stat += 2.0 * np.sum(tab[pos] * np.log(tab[pos] / e[pos]))
        else:
            stat += np.sum((tab - e) ** 2 / e)
        dof += (tab.shape[0] - 1) * (tab.shape[1] - 1)
    return stat, dof


@pytest.mark.parametrize("g_square", [False, True])
def test_chi_square_counts_tables_whose_cell_codes_pass_int32(g_square):
    # 2,048 categories (kmax = 2^11) and ~1,000 strata: a cell code (stratum * cx + x) * cy + y reaches ~2^32, and a
    # table over the sample bucket's strata has 5,120 * 2^22 cells, so no int32 code or table index can count it;
    # the same boundary as 2 million samples of 32-category variables. |S| = 3: stratum codes past int32 as well.
    import icmlx.structure._citests._contingency as ct

    rng = np.random.default_rng(13)
    n = 5000
    z = rng.choice(np.arange(0, 2048, 2), size=n)
    x0 = np.where(rng.random(n) < 0.5, z % 5, rng.integers(0, 5, n))
    x1 = np.where(rng.random(n) < 0.5, x0 % 3, rng.integers(0, 3, n))
    x0[0], x1[1] = 2047, 2047  # cardinality 2,048 (empty categories change no statistic and no dof)
    few = [rng.choice(v, size=n) for v in ([0, 1000, 2047], [5, 2047], [2047, 7, 300])]  # 18 strata
    x = np.stack([x0, x1, z, *few], axis=1)
    for xs, ys, s in ((np.array([0, 0]), np.array([1, 1]), np.array([[2], [3]])),
                      (np.array([0, 0]), np.array([1, 2]), np.array([[3, 4, 5], [3, 4, 5]]))):
        kinds = {plan[0] for _, plan in ct._chi_square_groups(np.append(np.full(6, 2048), 1), xs, ys, s,
                                                               ct.pad_samples(n, 16), 2048, n_true=n)}
        assert kinds == {"sorted_wide"}
        got = chi_square(jnp.asarray(x, jnp.int32), *(jnp.asarray(v, jnp.int32) for v in (xs, ys, s)),
                         g_square=g_square)
        for t in range(len(xs)):
            stat, dof = _numpy_stat_dof(x, xs[t], ys[t], s[t], g_square)
            assert int(got.dof[t]) == dof, (t, int(got.dof[t]), dof)
            np.testing.assert_allclose(float(got.statistic[t]), stat, rtol=2e-4)
