"""Benjamini–Hochberg and Bonferroni against statsmodels (notes section 6, check 8)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icmlx.stats import (
    benjamini_hochberg,
    bh_adjusted_pvalues,
    bonferroni,
    bonferroni_threshold,
    two_sided_pvalues,
)

multitest = pytest.importorskip("statsmodels.stats.multitest")
FLOAT = jnp.result_type(float)


def _cases():
    rng = np.random.default_rng(0)
    out = []
    for n in [1, 17, 1000, 20_000]:
        small = rng.uniform(size=(3, n)) ** 4  # many small p-values
        none = rng.uniform(0.2, 1.0, size=(2, n))  # no rejection at all
        mix = rng.uniform(size=(2, n))
        mix[:, : max(1, n // 50)] *= 1e-5
        out.append(np.concatenate([small, none, mix]))  # one batch (one compile) per n
    ties = np.repeat(rng.uniform(0, 0.05, size=(1, 50)), 4, axis=1)  # ties at the cutoff
    out.append(ties)
    return out


@pytest.mark.parametrize(("method", "alpha"), [("bucket", 0.05), ("bucket", 0.2), ("sort", 0.1)])
def test_bh_matches_statsmodels(method, alpha):
    saw_none = saw_some = False
    for p in _cases():
        pj = jnp.asarray(p, FLOAT)
        res = benjamini_hochberg(pj, alpha, method=method)
        pp = np.asarray(pj, np.float64)
        for row in range(p.shape[0]):
            ref, *_ = multitest.multipletests(pp[row], alpha=alpha, method="fdr_bh")
            got = np.asarray(res.reject[row])
            assert np.array_equal(got, ref), (p.shape, row)
            assert int(res.num_rejected[row]) == ref.sum()
            saw_none |= ref.sum() == 0
            saw_some |= ref.sum() > 0
    assert saw_none and saw_some


def test_bh_adjusted_matches_statsmodels():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=(2, 500)) ** 3
    got = np.asarray(bh_adjusted_pvalues(jnp.asarray(p, FLOAT)), np.float64)
    for r in range(2):
        _, ref, *_ = multitest.multipletests(np.asarray(jnp.asarray(p[r], FLOAT), np.float64),
                                             method="fdr_bh")
        np.testing.assert_allclose(got[r], ref, rtol=1e-5)


def test_bonferroni_matches_statsmodels():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=(3, 400)) ** 5
    res = bonferroni(jnp.asarray(p, FLOAT), 0.05)
    for r in range(3):
        ref, *_ = multitest.multipletests(np.asarray(jnp.asarray(p[r], FLOAT), np.float64), 0.05,
                                          method="bonferroni")
        assert np.array_equal(np.asarray(res.reject[r]), ref)


def test_bonferroni_threshold_equivalent_to_pvalue_rule():
    from scipy import stats as sps

    for n in [10, 1e4, 1e6, 1e12]:
        c = np.sqrt(float(bonferroni_threshold(n, 0.05)))
        assert 2 * sps.norm.sf(c) == pytest.approx(0.05 / n, rel=1e-4)


def test_pvalues_two_sided():
    from scipy import stats as sps

    x = jnp.linspace(-9.0, 9.0, 37)
    ref = 2 * sps.norm.sf(np.abs(np.asarray(x, np.float64)))
    np.testing.assert_allclose(np.asarray(two_sided_pvalues(x), np.float64), ref, rtol=1e-5)


def test_float32_warning_for_million_tests():
    p = jnp.full((1_000_000,), 0.5, jnp.float32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        bonferroni(p, 0.05)
    assert any("float64" in str(m.message) for m in w)


def test_bad_inputs():
    with pytest.raises((ValueError, RuntimeError), match=r"\[0, 1\]"):
        benjamini_hochberg(jnp.array([0.1, 1.2]))
    with pytest.raises(ValueError, match=r"pvalues contains 1 NaN value \(first at index 1\)"):
        benjamini_hochberg(jnp.array([0.1, jnp.nan]))
    with pytest.raises((ValueError, RuntimeError), match=r"\[0, 1\]"):
        bonferroni(jnp.array([-0.1, 0.5]))
    with pytest.raises(ValueError, match="alpha"):
        benjamini_hochberg(jnp.array([0.1, 0.2]), alpha=1.5)
    with pytest.raises(ValueError, match="method"):
        benjamini_hochberg(jnp.array([0.1, 0.2]), method="heap")


def test_jit_compile_once():
    import equinox as eqx

    f = jax.jit(eqx.debug.assert_max_traces(lambda p, a: benjamini_hochberg(p, a), max_traces=1))
    p = jax.random.uniform(jax.random.key(0), (4, 256))
    a = f(p, jnp.asarray(0.1, p.dtype))
    b = f(p**2, jnp.asarray(0.05, p.dtype))
    assert a.reject.shape == b.reject.shape == (4, 256)


@settings(deadline=None, max_examples=10)
@given(st.permutations(list(range(64))), st.integers(0, 2**31 - 1))
def test_bh_permutation_equivariant(perm, seed):
    p = jax.random.uniform(jax.random.key(seed), (64,)) ** 3
    perm = np.array(perm)
    a = benjamini_hochberg(p, 0.1)
    b = benjamini_hochberg(p[perm], 0.1)
    assert np.array_equal(np.asarray(a.reject)[perm], np.asarray(b.reject))


@settings(deadline=None, max_examples=10)
@given(st.integers(0, 2**31 - 1))
def test_bh_monotone_in_pvalue(seed):
    p = np.asarray(jax.random.uniform(jax.random.key(seed), (64,)) ** 4)
    rej = np.asarray(benjamini_hochberg(jnp.asarray(p), 0.1).reject)
    # a rejected p-value implies every smaller p-value is rejected
    assert not np.any(rej[:, None] & ~rej[None, :] & (p[None, :] <= p[:, None]))


def test_bucket_bisection_path_float32_large_n():
    # float32 with n >= 1e6: under jit the histogram takes the bisection repair path, eagerly the fixed-point
    # iteration runs; both must agree exactly with sorting
    n = 1 << 20  # 8 eps (n + 2) >= 1 for float32: bisection path
    u = jax.random.uniform(jax.random.key(5), (n,), jnp.float32)
    p = jnp.where(jnp.arange(n) < 3000, u * 1e-4, u) ** 2
    a = jax.jit(lambda p: benjamini_hochberg(p, 0.05, method="bucket"))(p)
    b = benjamini_hochberg(p, 0.05, method="sort")
    c = benjamini_hochberg(p, 0.05)
    assert int(a.num_rejected) == int(b.num_rejected) == int(c.num_rejected) > 0
    assert np.array_equal(np.asarray(a.reject), np.asarray(b.reject))
    assert np.array_equal(np.asarray(c.reject), np.asarray(b.reject))


def test_bh_slow_fixed_point_falls_back_to_the_histogram():
    # sorted p-values just above the BH line: C(k) = k - 1 above the signals, so k <- C(k) steps down one at a
    # time; past the cap the histogram must give statsmodels' answer (eagerly and under jit)
    from icmlx.stats._fdr import _BH_FIXED_POINT_STEPS, _bh_fixed_point_decisions

    n, alpha = 300, 0.1
    k = np.arange(1, n + 1)
    p = np.minimum((k + 1) * alpha / n, 1.0)
    p[:5] = 1e-6  # five true rejections below the chain
    p = np.random.default_rng(4).permutation(p).astype(np.dtype(FLOAT))
    _, converged = _bh_fixed_point_decisions(jnp.asarray(p), jnp.asarray(alpha, FLOAT), np.int32(n))
    assert not bool(converged) and n > _BH_FIXED_POINT_STEPS
    ref, *_ = multitest.multipletests(p.astype(np.float64), alpha=alpha, method="fdr_bh")
    for res in (benjamini_hochberg(jnp.asarray(p), alpha), jax.jit(lambda q: benjamini_hochberg(q, alpha))(p),
                benjamini_hochberg(p, alpha)):
        assert np.array_equal(np.asarray(res.reject), ref) and int(res.num_rejected) == ref.sum() >= 5


def test_bh_new_size_reuses_the_compiled_program():
    # a concrete JAX array is padded to a power-of-two bucket with n traced: sizes 1025..2048 share one program
    from icmlx.stats._fdr import _bh_fixed_point_decisions

    rng = np.random.default_rng(3)
    before = None
    for n in (1025, 1700, 2048):
        p = rng.uniform(size=(2, n)) ** 3
        p[:, : n // 40] *= 1e-4
        res = benjamini_hochberg(jnp.asarray(p, FLOAT), 0.1)
        if before is None:
            before = _bh_fixed_point_decisions._cache_size()
        assert res.reject.shape == (2, n)
        pp = np.asarray(jnp.asarray(p, FLOAT), np.float64)
        for row in range(2):
            ref, *_ = multitest.multipletests(pp[row], alpha=0.1, method="fdr_bh")
            assert np.array_equal(np.asarray(res.reject[row]), ref) and int(res.num_rejected[row]) == ref.sum() > 0
            assert float(res.threshold[row]) == pp[row][ref].max()
    assert _bh_fixed_point_decisions._cache_size() == before


def test_bh_on_host_pvalues_compiles_nothing_and_matches_the_device_paths():
    # NumPy p-values are sorted on the host in the working dtype: the decisions must be those of the device paths
    # (sort and bucket, same critical values) and of statsmodels, ties and values on the BH line included
    from jax import monitoring

    rng = np.random.default_rng(11)
    n, alpha = 3000, 0.1
    p = rng.uniform(size=(3, n)) ** 4
    p[0, :40] = (np.arange(1, 41) / n) * alpha  # exactly on the line
    p[1, :50] = p[1, 50]  # ties
    p[2] = 1.0  # nothing rejected
    p = p.astype(np.dtype(FLOAT))
    compiled, active = [], [True]
    monitoring.register_event_listener(  # stays registered, inert once this check is done
        lambda e, **k: compiled.append(e) if active[0] and e.endswith("compile_requests_use_cache") else None)
    host = benjamini_hochberg(p, alpha)
    host_sort = benjamini_hochberg(p, alpha, method="sort")
    active[0] = False
    assert not compiled, compiled
    assert isinstance(host.reject, jax.Array) and host.reject.shape == (3, n)
    for dev in (benjamini_hochberg(jnp.asarray(p), alpha), benjamini_hochberg(jnp.asarray(p), alpha, method="sort"),
                host_sort):
        assert np.array_equal(np.asarray(host.reject), np.asarray(dev.reject))
        assert np.array_equal(np.asarray(host.num_rejected), np.asarray(dev.num_rejected))
        assert np.array_equal(np.asarray(host.threshold), np.asarray(dev.threshold))
    for row in range(3):
        ref, *_ = multitest.multipletests(p[row].astype(np.float64), alpha=alpha, method="fdr_bh")
        assert np.array_equal(np.asarray(host.reject[row]), ref) and int(host.num_rejected[row]) == ref.sum()
    assert int(host.num_rejected[2]) == 0 and float(host.threshold[2]) == 0.0 and int(host.num_rejected[0]) >= 40
