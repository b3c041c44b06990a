"""The icmlx.stats API: RESULTS/Solution, gamma2 rule objects, removed aliases as errors."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import icmlx
from icmlx import stats
from icmlx.stats import (
    AbstractGamma2,
    EBMMLEGamma2,
    EBSparsityGamma2,
    OracleGamma2,
    SparsityGamma2,
    TwoGroupsSolution,
    benjamini_hochberg,
    relative_belief_gamma2,
    relative_belief_test,
    simulate_risk_ratios,
    simulate_two_groups,
    two_groups_em,
)


def _x(key=0, n=400):
    return simulate_two_groups(jax.random.key(key), n, 0.05, 9.0, num_replicates=2).x


# --- icmlx.RESULTS and icmlx.Solution ---------------------------------------------------------------------


def test_two_groups_em_is_a_solution_with_results():
    fit = two_groups_em(_x(), num_steps=30)
    assert isinstance(fit, TwoGroupsSolution) and isinstance(fit, icmlx.Solution)
    assert isinstance(fit.result, icmlx.RESULTS)
    assert fit.result == icmlx.RESULTS.successful
    assert icmlx.result_name(fit.result) == "successful"
    assert int(fit.num_steps) == int(fit.stats["num_steps"]) == 30
    p, tau2 = fit.value
    assert p is fit.p and tau2 is fit.tau2 and fit.log_likelihood is fit.stats["log_likelihood"]
    assert fit.p.shape == (2,) and fit.log_likelihood.shape == (30, 2)


def test_two_groups_em_value_matches_an_independent_numpy_em():
    # the same EM written in float64 NumPy from the formulas (E-step responsibilities, closed-form M-step)
    x = np.asarray(_x(1, 2000)[0], np.float64)
    fit = two_groups_em(jnp.asarray(x, jnp.result_type(float)), num_steps=25, p_init=0.1, tau2_init=4.0)
    p, t2, n = 0.1, 4.0, x.size

    def logpdf(v):
        return -0.5 * (np.log(2 * np.pi * v) + x * x / v)

    for _ in range(25):
        l1 = np.log(p) + logpdf(1.0 + t2)
        l0 = np.log1p(-p) + logpdf(1.0)
        r = np.exp(l1 - np.logaddexp(l0, l1))
        p = float(np.clip(r.mean(), 1 / n, 1 - 1 / n))
        t2 = max(float((r * x * x).sum() / r.sum()) - 1.0, 1e-6)
    np.testing.assert_allclose(float(fit.p), p, rtol=2e-4)
    np.testing.assert_allclose(float(fit.tau2), t2, rtol=2e-4)


def test_throw_true_raises_on_a_nonfinite_fit():
    # finite input whose squares overflow (x^2 = inf) makes the fit non-finite; an infinite x is refused up front
    x = _x()[0]
    x = x.at[3].set(jnp.finfo(x.dtype).max / 2)
    with pytest.raises((RuntimeError, ValueError), match="non-finite"):
        jax.block_until_ready(two_groups_em(x).p)
    with pytest.raises((RuntimeError, ValueError), match="non-finite"):
        jax.block_until_ready(jax.jit(lambda v: two_groups_em(v).p)(x))
    fit = two_groups_em(x, throw=False)
    assert fit.result == icmlx.RESULTS.nonfinite
    assert icmlx.result_name(fit.result) == "nonfinite"


def test_infinite_input_is_refused_before_the_fit():
    x = _x()[0].at[3].set(jnp.inf)
    for call in (lambda: two_groups_em(x), lambda: relative_belief_test(x, gamma2=EBMMLEGamma2())):
        with pytest.raises(ValueError, match=r"x contains 1 infinite value \(first at index 3\)") as info:
            call()
        assert len(str(info.value)) < 200


def test_relative_belief_eb_mmle_refuses_a_failed_fit():
    # before: a non-finite EM fit inside relative_belief_test gave NaN gamma2 and 0 rejections, silently
    x = _x()[0]
    x = x.at[3].set(jnp.finfo(x.dtype).max / 2)
    with pytest.raises(ValueError, match=r"EBMMLEGamma2\(\) gave a non-finite gamma2"):
        relative_belief_test(x, gamma2=EBMMLEGamma2())


# --- gamma2 rule objects ------------------------------------------------------------------------------------


def test_rules_are_static_hashable_and_not_callable():
    rules = [OracleGamma2(p=0.01, tau2=11.645, delta=2.0), SparsityGamma2(p=0.01), EBSparsityGamma2(),
             EBMMLEGamma2(num_em_steps=12)]
    for r in rules:
        assert isinstance(r, AbstractGamma2) and isinstance(r, eqx.Module)
        assert jax.tree_util.tree_leaves(r) == []
        assert not callable(r)
        assert hash(r) == hash(type(r)(**{f: getattr(r, f) for f in r.__dataclass_fields__}))
    assert len({*rules, SparsityGamma2(p=0.01), EBMMLEGamma2(num_em_steps=12)}) == 4
    assert OracleGamma2(p=0.01, tau2=jnp.asarray(2.0)) == OracleGamma2(p=0.01, tau2=2.0)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: OracleGamma2(p=1.5, tau2=1.0), "p"),
        (lambda: OracleGamma2(p=0.1, tau2=-1.0), "tau2"),
        (lambda: OracleGamma2(p=0.1, tau2=1.0, delta=0.0), "delta"),
        (lambda: SparsityGamma2(p=0.0), "p"),
        (lambda: SparsityGamma2(p=float("nan")), "p"),
        (lambda: EBMMLEGamma2(num_em_steps=0), "num_em_steps"),
    ],
)
def test_rules_reject_invalid_settings(make, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        make()


def test_rules_reject_traced_and_non_numeric_settings():
    with pytest.raises(TypeError, match="traced"):
        jax.jit(lambda p: relative_belief_gamma2(SparsityGamma2(p=p)))(0.1)
    # (under the suite's jaxtyping checks the annotation catches these first; both errors name p)
    with pytest.raises((TypeError, ValueError), match=r"\bp\b"):
        SparsityGamma2(p="0.1")
    with pytest.raises((TypeError, ValueError), match=r"\bp\b"):
        SparsityGamma2(p=jnp.array([0.1, 0.2]))
    with pytest.raises((TypeError, ValueError), match="num_em_steps"):
        EBMMLEGamma2(num_em_steps=2.5)
    x = jnp.array([0.0, 3.0])
    for kwargs in (dict(gamma2=SparsityGamma2(p=0.1), p=0.2), dict(gamma2=2.0, tau=1.0), dict(gamma2=2.0, p=0.1)):
        with pytest.raises(TypeError, match="unexpected keyword"):
            relative_belief_test(x, **kwargs)


def test_rules_give_the_closed_forms():
    p, tau2, delta = 0.02, 7.0, 1.5
    f = (1 - p) / p
    assert float(relative_belief_gamma2(OracleGamma2(p, tau2, delta))) == pytest.approx(tau2 * (f * delta) ** 2, 1e-6)
    assert float(relative_belief_gamma2(SparsityGamma2(p), sigma=2.0)) == pytest.approx((2.0 * f) ** 2, 1e-6)
    x = _x()
    fit = two_groups_em(x, num_steps=7)
    ref = np.asarray(fit.tau2 * ((1 - fit.p) / fit.p) ** 2)[:, None]
    np.testing.assert_allclose(np.asarray(relative_belief_gamma2(EBMMLEGamma2(num_em_steps=7), x=x)), ref, rtol=1e-6)


# --- removed aliases: the old spellings are errors -----------------------------------------------------------


def _same(a, b):
    for f in ("reject", "log_rb", "strength", "threshold", "gamma2", "k"):
        np.testing.assert_array_equal(np.asarray(getattr(a, f)), np.asarray(getattr(b, f)))


def test_removed_gamma2_flags_are_errors():
    x = _x()
    for kwargs in (dict(gamma2="sparsity", p=0.01), dict(p=0.01), dict(gamma2="eb_mmle", em_steps=9),
                   dict(gamma2="eb_mmle", num_em_steps=9)):
        with pytest.raises(TypeError, match="unexpected keyword"):
            relative_belief_test(x, **kwargs)
    for name in ("oracle", "sparsity"):
        with pytest.raises(ValueError, match="rule object"):
            relative_belief_test(x, gamma2=name)
    with pytest.raises(TypeError, match="unexpected keyword"):
        relative_belief_gamma2("oracle", p=0.01, tau2=9.0)
    with pytest.raises(TypeError):  # the old keyword name of rule
        relative_belief_gamma2(preset="eb_sparsity", x=x)
    assert stats.PRESETS == ("eb_sparsity", "eb_mmle", "eb_storey", "eb_lfdr")


def test_shorthand_strings_do_not_warn():
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(relative_belief_test(x, gamma2="eb_sparsity"), relative_belief_test(x, gamma2=EBSparsityGamma2()))
        _same(relative_belief_test(x, gamma2="eb_mmle"), relative_belief_test(x, gamma2=EBMMLEGamma2()))


def test_removed_n_rep_is_an_error():
    key = jax.random.key(5)
    with pytest.raises(TypeError, match="n_rep|num_replicates"):
        simulate_two_groups(key, 50, 0.1, 4.0, n_rep=3)
    with pytest.raises(TypeError, match="n_rep|num_replicates"):
        simulate_risk_ratios(key, {"cut": lambda v: jnp.abs(v) > 3.0}, n_rep=2, n=20, p=0.1, tau2=4.0)


def test_num_rejected_only():
    x = _x()
    results = [
        benjamini_hochberg(stats.two_sided_pvalues(x), 0.1),
        stats.bonferroni(stats.two_sided_pvalues(x), 0.1),
        relative_belief_test(x, gamma2=EBSparsityGamma2()),
        stats.bayes_oracle_test(x, p=0.05, tau2=9.0),
        stats.horseshoe_test(x, 0.05),
    ]
    for res in results:
        assert not hasattr(res, "n_rejected")
        np.testing.assert_array_equal(np.asarray(res.num_rejected), np.asarray(res.reject).sum(-1))


def test_removed_names_are_gone():
    with pytest.raises(AttributeError):
        stats.TwoGroupsEM  # noqa: B018
    with pytest.raises(AttributeError):
        stats.NoSuchName  # noqa: B018


def test_string_alpha_is_a_type_error():
    p = [0.01, 0.2, 0.03]
    for fn in (benjamini_hochberg, stats.bonferroni, stats.multipletests):
        with pytest.raises(TypeError, match="alpha"):
            fn(p, alpha="0.05")
