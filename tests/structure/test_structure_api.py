"""The structure API of CONTRIBUTING.md: strategy objects, removed aliases as errors, renamed fields."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

import icmlx
from icmlx.structure import (
    Asymptotic,
    Bernoulli,
    ChiSquare,
    DefiniteMaxPColliders,
    DSeparation,
    FisherZ,
    GSquare,
    MaxPColliders,
    Nonparametric,
    Permutation,
    SepsetColliders,
    binned_u_statistic,
    default_cond_bins,
    nonparametric_test,
    pc,
    pc_tree,
    polyforest_scores,
)

STRATEGIES = [FisherZ(), ChiSquare(), GSquare(), Bernoulli(), DSeparation(), Nonparametric(),
              Nonparametric(num_bins=3, cond_bins=5), Asymptotic(), Permutation(), Permutation(num_permutations=9),
              SepsetColliders(), SepsetColliders(priority=0), MaxPColliders(priority=4), DefiniteMaxPColliders(3)]


@pytest.fixture(scope="module")
def nonlinear():
    # a poly-tree 0 -> 1 -> 2 <- 3, 2 -> 4 with tanh links (NumPy-generated: no sampler compilation)
    dag = np.zeros((5, 5), bool)
    dag[0, 1] = dag[1, 2] = dag[3, 2] = dag[2, 4] = True
    rng = np.random.default_rng(11)
    e = rng.normal(size=(400, 5))
    x = np.zeros((400, 5))
    x[:, 0], x[:, 3] = e[:, 0], e[:, 3]
    x[:, 1] = 1.5 * np.tanh(x[:, 0]) + e[:, 1]
    x[:, 2] = 1.5 * np.tanh(x[:, 1]) - 1.5 * np.tanh(x[:, 3]) + e[:, 2]
    x[:, 4] = 1.5 * np.tanh(x[:, 2]) + e[:, 4]
    return jnp.asarray(dag), jnp.asarray(x, jnp.float32)


@pytest.mark.parametrize("obj", STRATEGIES, ids=repr)
def test_strategy_objects_are_static_hashable_and_not_callable(obj):
    assert jax.tree_util.tree_leaves(obj) == []  # static fields only
    assert hash(obj) == hash(type(obj)(**{f: getattr(obj, f) for f in _fields(obj)}))
    assert obj == type(obj)(**{f: getattr(obj, f) for f in _fields(obj)})
    assert not callable(obj)
    # usable as a jit static argument
    f = jax.jit(lambda x, s: x + 1, static_argnums=1)
    assert int(f(1, obj)) == 2


def _fields(obj):
    import dataclasses

    return [f.name for f in dataclasses.fields(obj)]


def test_strategy_objects_distinguish_settings():
    assert Nonparametric(num_bins=3) != Nonparametric(num_bins=4)
    assert Permutation(9) != Permutation(10)
    assert FisherZ() != Bernoulli()


@pytest.mark.parametrize(
    "build,arg",
    [
        (lambda: Nonparametric(num_bins=1), "num_bins"),
        (lambda: Nonparametric(cond_bins=1), "cond_bins"),
        (lambda: Nonparametric(num_bins=3, cond_bins=0), "cond_bins"),
        (lambda: Permutation(num_permutations=0), "num_permutations"),
        (lambda: Permutation(num_permutations=-5), "num_permutations"),
        (lambda: SepsetColliders(priority=-1), "priority"),
        (lambda: MaxPColliders(priority=7), "priority"),
        (lambda: DefiniteMaxPColliders(priority=0), "priority"),
    ],
)
def test_strategy_objects_reject_invalid_settings(build, arg):
    with pytest.raises(ValueError, match=arg):
        build()


@pytest.mark.parametrize(
    "build,arg",
    [
        (lambda: Nonparametric(num_bins=2.5), "num_bins"),
        (lambda: Nonparametric(num_bins=True), "num_bins"),
        (lambda: Nonparametric(cond_bins="4"), "cond_bins"),
        (lambda: Permutation(num_permutations=9.0), "num_permutations"),
    ],
)
def test_strategy_objects_reject_non_integer_settings(build, arg):
    # TypeError naming the argument (from the constructor, or from jaxtyping's runtime check when it is on)
    with pytest.raises(TypeError, match=arg):
        build()


def test_unsupported_tester_is_a_clear_value_error():
    x = np.asarray(jax.random.normal(jax.random.key(0), (50, 4)))
    with pytest.raises(ValueError, match="ci_test"):
        pc(x, ci_test=Nonparametric())  # pc_tree only
    with pytest.raises(ValueError, match="ci_test"):
        pc_tree(x, ci_test=ChiSquare())  # non-integer columns for a discrete tester
    with pytest.raises((ValueError, TypeError), match="method"):  # jaxtyping may catch the type first
        nonparametric_test(jnp.asarray(x), jnp.array([0]), jnp.array([1]), jnp.zeros((1, 0), jnp.int32),
                           method=FisherZ())


def test_string_shorthands_map_to_the_default_objects(nonlinear):
    from icmlx.structure._citests._testers import as_ci_test

    every = ("fisherz", "chisq", "gsq", "bernoulli", "nonparametric", "d_separation")
    defaults = (FisherZ(), ChiSquare(), GSquare(), Bernoulli(), Nonparametric(), DSeparation())
    for name, obj in zip(every, defaults):
        assert as_ci_test(name, "pc") == obj
        assert as_ci_test(obj, "pc") is obj
    dag, _ = nonlinear
    o = pc(None, ci_test=DSeparation(), true_dag=dag)
    np.testing.assert_array_equal(np.asarray(o.graph), np.asarray(pc(None, ci_test="d_separation", true_dag=dag).graph))
    # pc_tree's oracle learns the same CPDAG from the same tester object
    t = pc_tree(dag, ci_test=DSeparation())
    np.testing.assert_array_equal(np.asarray(t.graph), np.asarray(o.graph))


def test_removed_aliases_raise(nonlinear):
    """The one-release aliases are gone: the old keywords are errors, not silent translations."""
    dag, x = nonlinear
    xs, ys, ss = jnp.array([0, 1]), jnp.array([2, 3]), jnp.array([[4], [4]])
    with pytest.raises(TypeError, match="n_bins"):
        binned_u_statistic(x, xs, ys, ss, n_bins=3)
    with pytest.raises(TypeError, match="n_bins"):
        default_cond_bins(2400, n_bins=3)
    with pytest.raises(TypeError, match="n_permutations"):
        nonparametric_test(x, xs, ys, ss, method="permutation", key=jax.random.key(5), n_permutations=19)
    with pytest.raises(TypeError, match="cond_bins"):
        polyforest_scores(x, ci_test="nonparametric", cond_bins=4)
    with pytest.raises(TypeError, match="uc_rule"):
        pc(None, ci_test="d_separation", true_dag=dag, uc_rule=1)
    assert not hasattr(pc(None, ci_test="d_separation", true_dag=dag), "n_tests")


def test_structure_defines_no_status_enumeration():
    # structure's routines are procedures (tests, PC, pc_tree), not iterative solves: no RESULTS of their own
    import icmlx.structure as s

    assert not hasattr(s, "RESULTS") or s.RESULTS is icmlx.RESULTS
