"""Relative belief ratio, strength and the RB test (research notes section 6, checks 1, 2, 4)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from icmlx.stats import (
    EBMMLEGamma2,
    EBSparsityGamma2,
    OracleGamma2,
    SparsityGamma2,
    bayes_oracle_test,
    log_relative_belief_ratio,
    rb_strength,
    relative_belief_gamma2,
    relative_belief_ratio,
    relative_belief_test,
    relative_belief_threshold,
)

X64 = bool(jax.config.jax_enable_x64)
RTOL = 1e-10 if X64 else 2e-6  # dtype tolerance for closed forms


@pytest.mark.x64
@pytest.mark.parametrize(
    ("g", "x", "rb", "strength"),
    [(100.0, 2.5, 0.455436, 0.01202), (1e4, 3.0, 1.11146, 0.00270), (1e6, -2.0, 135.336, 0.04550)],
)
def test_rb_and_strength_fixed_points(g, x, rb, strength):
    # values from the research notes (section 6), quoted to 6 significant digits: half a last digit
    got = float(relative_belief_ratio(jnp.array([x]), g)[0])
    assert got == pytest.approx(rb, rel=6e-6)
    s = float(rb_strength(jnp.array([x]), g)[0])
    assert s == pytest.approx(strength, abs=6e-6)


@pytest.mark.x64
def test_rb_equals_posterior_over_prior_density_at_zero():
    # independent float64 SciPy reference: posterior N(g x/(1+g), s2 g/(1+g)) vs prior N(0, gamma2)
    rng = np.random.default_rng(0)
    x = rng.normal(0, 3, size=50)
    sigma = 1.7
    for gamma2 in [0.5, 30.0, 1e4]:
        g = gamma2 / sigma**2
        post = sps.norm.pdf(0.0, loc=x * g / (1 + g), scale=sigma * np.sqrt(g / (1 + g)))
        prior = sps.norm.pdf(0.0, scale=np.sqrt(gamma2))
        ref = np.log(post / prior)
        got = np.asarray(log_relative_belief_ratio(jnp.asarray(x), gamma2, sigma), np.float64)
        np.testing.assert_allclose(np.exp(got), np.exp(ref), rtol=1e-6 if not X64 else 1e-10)


def test_strength_monte_carlo():
    # Str(0) = Pi(RB(mu|x) <= RB(0|x) | x) with RB(mu|x) = posterior/prior density, 2e6 posterior draws
    rng = np.random.default_rng(1)
    for g, x in [(100.0, 2.5), (4.0, 1.0)]:
        m, v = x * g / (1 + g), g / (1 + g)
        mu = rng.normal(m, np.sqrt(v), size=2_000_000)
        log_rb_mu = sps.norm.logpdf(mu, m, np.sqrt(v)) - sps.norm.logpdf(mu, 0, np.sqrt(g))
        log_rb_0 = sps.norm.logpdf(0, m, np.sqrt(v)) - sps.norm.logpdf(0, 0, np.sqrt(g))
        mc = np.mean(log_rb_mu <= log_rb_0)
        got = float(rb_strength(jnp.array([x]), g)[0])
        assert abs(got - mc) < 3e-4 + 4 * np.sqrt(mc * (1 - mc) / 2e6)


def test_strength_tends_to_pvalue():
    x = jnp.array([0.5, 1.0, 2.0, 3.0])
    pval = 2 * sps.norm.sf(np.abs(np.asarray(x, np.float64)))
    np.testing.assert_allclose(np.asarray(rb_strength(x, 1e12), np.float64), pval, rtol=1e-5)


def test_threshold_equivalence_on_grid():
    # RB(0|x) < k  <=>  z^2 > (1 + 1/g)(log1p(g) - 2 log k), on a grid away from the boundary
    xs = jnp.linspace(-8.0, 8.0, 2001)
    for gamma2, k, sigma in [(100.0, 1.0, 1.0), (1e4, 0.3, 2.0), (2.0, 1.0, 0.5)]:
        lrb = np.asarray(log_relative_belief_ratio(xs, gamma2, sigma), np.float64)
        c2 = float(relative_belief_threshold(gamma2, k, sigma))
        z2 = (np.asarray(xs, np.float64) / sigma) ** 2
        far = np.abs(z2 - c2) > 1e-4 * max(c2, 1.0)
        assert np.array_equal((lrb < np.log(k))[far], (z2 > c2)[far])
        res = relative_belief_test(xs, gamma2=gamma2, k=k, sigma=sigma)
        assert np.array_equal(np.asarray(res.reject)[far], (lrb < np.log(k))[far])


@pytest.mark.x64
def test_rb_reproduces_bayes_oracle():
    # gamma = tau and k = p delta_A / ((1 - p) delta_0): the RB rule IS the Bayes oracle
    rng = np.random.default_rng(2)
    x = jnp.asarray(rng.normal(0, 3, size=(3, 20_000)))
    for p, tau2, d0, dA in [(0.01, 11.645, 1.0, 1.0), (0.2, 3.0, 2.0, 1.0), (1e-4, 21.5, 1.0, 3.0)]:
        k = p * dA / ((1 - p) * d0)
        rb = relative_belief_test(x, gamma2=tau2, k=k)
        bo = bayes_oracle_test(x, p=p, tau2=tau2, delta0=d0, deltaA=dA)
        assert np.array_equal(np.asarray(rb.reject), np.asarray(bo.reject))
        np.testing.assert_allclose(float(rb.threshold), float(bo.threshold), rtol=RTOL * 10)


def test_presets():
    p, tau2, sigma = 0.01, 11.645, 1.0
    f = (1 - p) / p
    assert float(relative_belief_gamma2(OracleGamma2(p=p, tau2=tau2))) == pytest.approx(tau2 * f * f, 1e-6)
    assert float(relative_belief_gamma2(OracleGamma2(p, tau2, delta=2.0))) == pytest.approx(tau2 * 4 * f * f, 1e-6)
    assert float(relative_belief_gamma2(SparsityGamma2(p=p))) == pytest.approx(f * f, 1e-6)
    x = jnp.concatenate([jnp.zeros(990), jnp.full((10,), 10.0)])[None, :]
    # p_hat = 10 / 1000 exactly -> gamma2 = 99^2
    assert float(relative_belief_gamma2(EBSparsityGamma2(), x=x)[0, 0]) == pytest.approx(99.0**2, 1e-5)
    for rule in [EBSparsityGamma2(), "eb_sparsity"]:
        res = relative_belief_test(x, gamma2=rule, sigma=sigma)
        assert int(res.num_rejected[0]) == 10
    for rule in [EBMMLEGamma2(), EBMMLEGamma2(num_em_steps=10), "eb_mmle"]:
        res = relative_belief_test(x, gamma2=rule)
        assert res.gamma2.shape == (1, 1) and int(res.num_rejected[0]) == 10


def test_bad_inputs():
    x = jnp.array([0.0, 1.0])
    with pytest.raises(ValueError, match="gamma2"):
        relative_belief_ratio(x, -1.0)
    with pytest.raises(ValueError, match="sigma"):
        relative_belief_test(x, gamma2=1.0, sigma=0.0)
    with pytest.raises(ValueError, match="unknown gamma2"):
        relative_belief_test(x, gamma2="nope")
    with pytest.raises(ValueError, match="needs the data x"):
        relative_belief_gamma2(EBSparsityGamma2())
    with pytest.raises(ValueError, match=r"SparsityGamma2: p must lie in \(0"):
        relative_belief_test(x, gamma2=SparsityGamma2(p=1.5))
    with pytest.raises((ValueError, RuntimeError), match="NaN"):
        relative_belief_test(jnp.array([0.0, jnp.nan]), gamma2=1.0)
    with pytest.raises((ValueError, RuntimeError), match="gamma2"):
        jax.jit(lambda g: relative_belief_ratio(x, g))(jnp.array(-2.0))
    with pytest.raises(TypeError):
        relative_belief_ratio(jnp.array([1.0 + 1.0j]), 1.0)


def test_jit_vmap_and_compile_once():
    import equinox as eqx

    f = eqx.debug.assert_max_traces(lambda x: relative_belief_test(x, gamma2=SparsityGamma2(p=0.01)), max_traces=1)
    fj = jax.jit(f)
    x = jax.random.normal(jax.random.key(0), (4, 64))
    a = fj(x)
    b = fj(x + 1.0)
    assert a.reject.shape == (4, 64) and b.reject.shape == (4, 64)
    eager = relative_belief_test(x, gamma2=SparsityGamma2(p=0.01))
    assert np.array_equal(np.asarray(a.reject), np.asarray(eager.reject))
    v = jax.vmap(lambda r: relative_belief_test(r, gamma2=EBSparsityGamma2()).reject)(x)
    assert np.array_equal(np.asarray(v), np.asarray(relative_belief_test(x, gamma2=EBSparsityGamma2()).reject))
    # a rule object may also be a jit argument (no leaves: all its fields are static)
    g = jax.jit(lambda x, rule: relative_belief_test(x, gamma2=rule).reject)
    assert np.array_equal(np.asarray(g(x, SparsityGamma2(p=0.01))), np.asarray(eager.reject))


_SHAPE = 32


@settings(deadline=None, max_examples=10)
@given(
    st.lists(st.floats(-6, 6, allow_nan=False), min_size=_SHAPE, max_size=_SHAPE),
    st.sampled_from([10.0, 1e3, 1e5]),
)
def test_decisions_monotone_in_abs_x(vals, gamma2):
    x = jnp.asarray(np.array(vals), dtype=jnp.result_type(float))
    res = relative_belief_test(x, gamma2=gamma2)
    rej = np.asarray(res.reject)
    ax = np.abs(np.asarray(x))
    # if |x_i| <= |x_j| and i is rejected then j is rejected
    assert not np.any(rej[:, None] & ~rej[None, :] & (ax[:, None] <= ax[None, :]))
    # strength is non-increasing in |x| (ties allowed)
    order = np.argsort(ax, kind="stable")
    s = np.asarray(res.strength)[order]
    assert np.all(np.diff(s) <= 1e-6)


@settings(deadline=None, max_examples=10)
@given(st.permutations(list(range(_SHAPE))))
def test_permutation_equivariance(perm):
    x = jax.random.normal(jax.random.key(3), (_SHAPE,)) * 3.0
    perm = np.array(perm)
    for rule in [EBSparsityGamma2(), SparsityGamma2(p=0.05)]:
        a = relative_belief_test(x, gamma2=rule)
        b = relative_belief_test(x[perm], gamma2=rule)
        assert np.array_equal(np.asarray(a.reject)[perm], np.asarray(b.reject))


def test_import_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, icmlx.stats; "
        "bad = [m for m in ('numpyro', 'diffrax', 'scipy', 'statsmodels') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.x64
def test_eb_storey_rule_is_the_plug_in_oracle():
    # independent NumPy/SciPy: Storey's closed-form bootstrap pi0 (R qvalue's formula), the moment slab variance, the
    # Bayes oracle's threshold; the RB test with EBStoreyGamma2 must reject exactly where z^2 exceeds it
    from scipy import stats as sps

    from icmlx.stats import EBStoreyGamma2, simulate_two_groups

    dt = jnp.result_type(float)
    x = simulate_two_groups(jax.random.key(3), 5000, 0.05, 9.0, 3, dtype=dt).x
    z = np.asarray(x, np.float64)
    res = relative_belief_test(x, gamma2=EBStoreyGamma2())
    lam = np.arange(1, 20) * 0.05
    for r in range(3):
        p = 2.0 * sps.norm.sf(np.abs(z[r]))
        n = p.size
        w = np.array([(p >= v).sum() for v in lam], np.float64)
        curve = w / (n * (1.0 - lam))
        mse = w / (n**2 * (1.0 - lam) ** 2) * (1.0 - w / n) + (curve - np.quantile(curve, 0.1)) ** 2
        pi0 = min(curve[mse == mse.min()].min(), 1.0)
        ph = np.clip(1.0 - pi0, 1.0 / n, 1.0 - 1.0 / n)
        u = max(np.mean(z[r] ** 2) - 1.0, 1e-3) / ph
        c2 = (1.0 + 1.0 / u) * (np.log1p(u) + 2.0 * np.log((1.0 - ph) / ph))
        got = np.asarray(res.reject[r])
        want = z[r] ** 2 > c2
        near = np.abs(z[r] ** 2 - c2) < (1e-9 if X64 else 1e-3) * c2  # rounding at the cutoff itself
        assert np.array_equal(got[~near], want[~near])
        assert float(res.threshold[r, 0]) == pytest.approx(c2, rel=1e-9 if X64 else 1e-4)
    assert relative_belief_test(x, gamma2="eb_storey").reject.sum() == res.reject.sum()
