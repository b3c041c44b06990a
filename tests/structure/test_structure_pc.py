"""PC: golden causal-learn outputs, d-separation oracle, live agreement with causal-learn, bad inputs."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.structure import (
    BackgroundKnowledge,
    DefiniteMaxPColliders,
    MaxPColliders,
    SepsetColliders,
    dag_to_cpdag,
    pc,
    random_er_dag,
    random_polyforest,
    read_causal_learn_data,
    read_causal_learn_graph,
    read_endpoint_matrix,
    sample_linear_gaussian,
)

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "causal-learn"
NETS = ["asia", "cancer", "earthquake", "survey", "sachs", "child"]


def _colliders(uc_rule, uc_priority):
    """The collider-rule object of causal-learn's flags (``uc_priority=-1``: the rule's default, 3, 3, 4)."""
    cls = [SepsetColliders, MaxPColliders, DefiniteMaxPColliders][uc_rule]
    return cls(priority={0: 3, 1: 3, 2: 4}[uc_rule] if uc_priority == -1 else uc_priority)


def _need_data():
    if not DATA.is_dir():
        pytest.skip(f"reference data folder {DATA} is absent")


# ---------------------------------------------------------------- golden files (causal-learn stored outputs)
@pytest.mark.x64
@pytest.mark.x64_only
def test_golden_linear_10_fisherz_all_orientation_rules():
    _need_data()
    x, _ = read_causal_learn_data(DATA / "data_linear_10.txt")
    with jax.enable_x64(True):
        for rule, prio in [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, -1), (2, -1)]:
            res = pc(x, ci_test="fisherz", alpha=0.05, colliders=_colliders(rule, prio))
            gold = read_endpoint_matrix(
                DATA / f"benchmark_returned_results/linear_10_pc_fisherz_0.05_stable_{rule}_{prio}.txt"
            )
            np.testing.assert_array_equal(np.asarray(res.graph), gold, err_msg=f"{rule=} {prio=}")


@pytest.mark.x64
@pytest.mark.x64_only
@pytest.mark.parametrize(
    "net", ["asia", "cancer", "earthquake", pytest.param("survey", marks=pytest.mark.slow),
            pytest.param("sachs", marks=pytest.mark.slow), pytest.param("child", marks=pytest.mark.slow)]
)
def test_golden_bnlearn_chisq(net):
    _need_data()
    x, _ = read_causal_learn_data(DATA / f"bnlearn_discrete_10000/data/{net}.txt")
    gold = read_endpoint_matrix(
        DATA / f"bnlearn_discrete_10000/benchmark_returned_results/{net}_pc_chisq_0.05_stable_0_-1.txt"
    )
    with jax.enable_x64(True):
        res = pc(x.astype(np.int64), ci_test="chisq", alpha=0.05, colliders=SepsetColliders(priority=3))
    np.testing.assert_array_equal(np.asarray(res.graph), gold)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["chisq", "gsq"])
def test_golden_discrete_10(method):
    _need_data()
    x, _ = read_causal_learn_data(DATA / "data_discrete_10.txt")
    gold = read_endpoint_matrix(
        DATA / f"benchmark_returned_results/discrete_10_pc_{method}_0.05_stable_0_-1.txt"
    )
    with jax.enable_x64(True):
        res = pc(x.astype(np.int64), ci_test=method, alpha=0.05, colliders=SepsetColliders(priority=3))
    np.testing.assert_array_equal(np.asarray(res.graph), gold)


# ---------------------------------------------------------------- oracle
@pytest.mark.parametrize(
    "nets", [NETS[:4], pytest.param(NETS[4:], marks=pytest.mark.slow)], ids=["small", "sachs-child"]
)
def test_oracle_pc_recovers_cpdag_of_bnlearn_networks(nets):
    _need_data()
    for net in nets:
        dag, _ = read_causal_learn_graph(DATA / f"bnlearn_discrete_10000/truth_dag_graph/{net}.graph.txt")
        res = pc(None, ci_test="d_separation", true_dag=jnp.asarray(dag))
        np.testing.assert_array_equal(np.asarray(res.graph), np.asarray(dag_to_cpdag(jnp.asarray(dag))),
                                      err_msg=net)


def test_dag_to_cpdag_matches_causal_learn():
    dag2cpdag = pytest.importorskip("causallearn.utils.DAG2CPDAG").dag2cpdag
    from causallearn.graph.Dag import Dag
    from causallearn.graph.GraphNode import GraphNode

    for seed in range(8):
        dag = np.asarray(random_er_dag(jax.random.key(seed), 9, 3.0))
        nodes = [GraphNode(f"X{i + 1}") for i in range(9)]
        g = Dag(nodes)
        for i, j in zip(*np.nonzero(dag)):
            g.add_directed_edge(nodes[i], nodes[j])
        ref = dag2cpdag(g).graph
        # eager: Chickering's labelling on the host; traced: the jitted Meek closure
        np.testing.assert_array_equal(np.asarray(dag_to_cpdag(jnp.asarray(dag))), ref)
        np.testing.assert_array_equal(np.asarray(jax.jit(dag_to_cpdag)(jnp.asarray(dag))), ref)


def test_oracle_pc_on_40_random_polyforests():
    base = jax.random.key(11)
    for i in range(40):  # fold_in, not iteration over a split key array (that compiles an unstack of 100)
        k = jax.random.fold_in(base, i)
        dag = random_polyforest(k, 12, 0.2)
        res = pc(None, ci_test="d_separation", true_dag=dag)
        np.testing.assert_array_equal(np.asarray(res.graph), np.asarray(dag_to_cpdag(dag)))


def test_oracle_pc_on_er_dags_all_options():
    for seed in range(2):
        dag = random_er_dag(jax.random.key(100 + seed), 10, 3.0)
        truth = np.asarray(dag_to_cpdag(dag))
        for stable in (True, False):
            res = pc(None, ci_test="d_separation", true_dag=dag, stable=stable)
            np.testing.assert_array_equal(np.asarray(res.graph), truth)


# ---------------------------------------------------------------- live agreement with causal-learn
def _cl_pc(x, **kw):
    cl = pytest.importorskip("causallearn.search.ConstraintBased.PC")
    return cl.pc(x, show_progress=False, **kw)


def _cl_sepset_union(cg, d):
    u = np.zeros((d, d, d), bool)
    for a in range(d):
        for b in range(d):
            if cg.sepset[a, b] is not None:
                for S in cg.sepset[a, b]:
                    for v in S:
                        u[a, b, v] = True
    return u


@pytest.fixture(scope="module")
def gauss_cases():
    cases = []
    for seed in range(3):
        k = jax.random.key(200 + seed)
        with jax.enable_x64(True):
            dag = random_er_dag(k, 9, 2.5)
            x = np.asarray(sample_linear_gaussian(k, dag, 400))
        cases.append(x)
    return cases


@pytest.mark.x64
@pytest.mark.x64_only
@pytest.mark.parametrize("stable,uc_rule,uc_priority", [(True, 0, 2), (True, 0, 3), (False, 0, 2),
                                                        (True, 1, -1), (True, 2, -1), (True, 0, 1)])
def test_live_agreement_fisherz(gauss_cases, stable, uc_rule, uc_priority):
    for x in gauss_cases:
        d = x.shape[1]
        cg = _cl_pc(x, alpha=0.05, indep_test="fisherz", stable=stable, uc_rule=uc_rule,
                    uc_priority=uc_priority)
        with jax.enable_x64(True):
            res = pc(x, ci_test="fisherz", alpha=0.05, stable=stable, colliders=_colliders(uc_rule, uc_priority))
        np.testing.assert_array_equal(np.asarray(res.graph), cg.G.graph)
        np.testing.assert_array_equal(np.asarray(res.skeleton), cg.G.graph != 0)
        if uc_rule == 0:
            np.testing.assert_array_equal(np.asarray(res.sepset), _cl_sepset_union(cg, d))
        # p-values: our max p per pair vs causal-learn's cache (all tests it ran during the skeleton)
        if stable and uc_rule == 0 and uc_priority == 2:
            ref = np.zeros((d, d))
            for key, p in cg.test.pvalue_cache.items():
                if ";" not in key:
                    continue
                a, b = (int(v) for v in key.split("|")[0].split(";"))
                ref[a, b] = ref[b, a] = max(ref[a, b], p)
            np.testing.assert_allclose(np.asarray(res.max_pvalue), ref, rtol=0, atol=1e-10)
            assert int(res.num_tests) == sum(";" in k for k in cg.test.pvalue_cache)


@pytest.mark.x64
@pytest.mark.x64_only
def test_live_agreement_background_knowledge(gauss_cases):
    bkmod = pytest.importorskip("causallearn.utils.PCUtils.BackgroundKnowledge")
    from causallearn.graph.GraphNode import GraphNode

    x = gauss_cases[0]
    d = x.shape[1]
    forbidden, required = [(0, 1), (1, 0), (3, 2)], [(4, 5)]
    bk = bkmod.BackgroundKnowledge()
    nodes = [GraphNode(f"X{i + 1}") for i in range(d)]
    for i, j in forbidden:
        bk.add_forbidden_by_node(nodes[i], nodes[j])
    for i, j in required:
        bk.add_required_by_node(nodes[i], nodes[j])
    cg = _cl_pc(x, alpha=0.05, indep_test="fisherz", background_knowledge=bk)
    with jax.enable_x64(True):
        res = pc(x, ci_test="fisherz", alpha=0.05,
                 background_knowledge=BackgroundKnowledge.from_edges(d, forbidden, required),
                 meek_r4=False)
    np.testing.assert_array_equal(np.asarray(res.graph), cg.G.graph)


def test_skeleton_is_order_independent(gauss_cases):
    x = gauss_cases[1].astype(np.float32)
    perm = np.random.default_rng(0).permutation(x.shape[1])
    a = pc(x, alpha=0.05)
    b = pc(x[:, perm], alpha=0.05)
    skel_a = np.asarray(a.skeleton)
    np.testing.assert_array_equal(np.asarray(b.skeleton), skel_a[np.ix_(perm, perm)])
    np.testing.assert_array_equal(np.asarray(b.sepset), np.asarray(a.sepset)[np.ix_(perm, perm, perm)])


def test_sharded_batches_give_the_same_result(gauss_cases):
    devs = jax.devices()
    if len(devs) < 2:
        pytest.skip("needs several (fake) devices")
    mesh = jax.sharding.Mesh(np.asarray(devs), ("tests",))
    x = gauss_cases[2].astype(np.float32)
    a = pc(x, alpha=0.05)
    b = pc(x, alpha=0.05, mesh=mesh)
    np.testing.assert_array_equal(np.asarray(a.graph), np.asarray(b.graph))
    np.testing.assert_array_equal(np.asarray(a.max_pvalue), np.asarray(b.max_pvalue))


def test_sharded_chi_square_matches_the_host_pvalues():
    # sharded: the vectorised counting kernel and p-values on the device (float32 series); unsharded: the loop
    # kernel, statistics read back and p-values on the host in float64. Same graph; p-values to float32 rounding.
    devs = jax.devices()
    if len(devs) < 2:
        pytest.skip("needs several (fake) devices")
    mesh = jax.sharding.Mesh(np.asarray(devs), ("tests",))
    rng = np.random.default_rng(7)
    n = 600
    z = rng.integers(0, 3, n)
    cols = [np.where(rng.random(n) < 0.6, z, rng.integers(0, 3, n)) for _ in range(3)]
    x = np.stack(cols + [z], axis=1)
    a = pc(x, ci_test="chisq", alpha=0.05)
    b = pc(x, ci_test="chisq", alpha=0.05, mesh=mesh)
    np.testing.assert_array_equal(np.asarray(a.graph), np.asarray(b.graph))
    np.testing.assert_array_equal(np.asarray(a.sepset), np.asarray(b.sepset))
    np.testing.assert_allclose(np.asarray(a.max_pvalue), np.asarray(b.max_pvalue), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- bad input
def test_bad_inputs_raise_clear_errors():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 4))
    with pytest.raises(ValueError, match="alpha"):
        pc(x, alpha=1.5)
    with pytest.raises(ValueError, match="alpha"):
        pc(x, alpha=0.0)
    bad = x.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="X3"):
        pc(bad)
    res = pc(bad, nan_policy="listwise")  # deletion mode asked for: runs
    assert res.graph.shape == (4, 4)
    const = x.copy()
    const[:, 1] = 2.0
    with pytest.warns(UserWarning, match=r"constant.*X2"):  # a warning, not a refusal: X2 is left isolated
        assert not np.asarray(pc(const).skeleton)[1].any()
    dup = x.copy()
    dup[:, 3] = dup[:, 0]
    with pytest.warns(UserWarning, match=r"duplicated.*X1.*X4"):
        assert bool(pc(dup).skeleton[0, 3])
    with pytest.raises(ValueError, match="integer"):
        pc(x, ci_test="chisq")
    with pytest.raises(ValueError, match="ci_test"):
        pc(x, ci_test="no_such_test")
    with pytest.raises(ValueError, match="true_dag"):
        pc(None, ci_test="d_separation")
    with pytest.raises(ValueError, match="colliders"):
        pc(x, colliders="maxP2")
    with pytest.raises(ValueError, match="priority"):
        DefiniteMaxPColliders(priority=1)  # definite max-P has no overwrite/bi-directed variant
    with pytest.raises(ValueError, match="priority"):
        SepsetColliders(priority=5)
    with pytest.raises(TypeError, match="uc_rule"):  # causal-learn's flags are the colliders= objects here
        pc(x, uc_rule=5)
