"""`bootstrap_pc`'s batched path: all resamples of a level in one batch give, resample by resample, the graph that
`pc` gives on that resample alone (and causal-learn's)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.structure import (
    BackgroundKnowledge,
    ChiSquare,
    FisherZ,
    MaxPColliders,
    bootstrap_pc,
    pc,
    random_er_dag,
    sample_linear_gaussian,
)
from icmlx.structure._search._pc_lockstep import _lockstep_graphs


def _gauss(seed, d, n, degree=2.0):
    dag = random_er_dag(jax.random.key(seed), d, expected_degree=degree)
    return np.asarray(sample_linear_gaussian(jax.random.key(seed + 100), dag, n))


def _rows(seed, num, n):
    return np.random.default_rng(seed).integers(0, n, size=(num, n))


def _pc_graph(data, **kwargs):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="(constant|duplicated) columns")
        return np.asarray(pc(data, **kwargs).graph)


@pytest.mark.parametrize("colliders", ["sepset", MaxPColliders(priority=3)])
def test_lockstep_fisher_z_equals_pc_per_resample(colliders):
    x = _gauss(0, 12, 800, degree=2.5)
    rows = _rows(1, 6, 800)
    got = _lockstep_graphs(FisherZ(), x, rows, "raise", None, alpha=0.05, colliders=colliders)
    for b, idx in enumerate(rows):
        np.testing.assert_array_equal(got[b], _pc_graph(x[idx], ci_test="fisherz", alpha=0.05, colliders=colliders))


def test_lockstep_chi_square_equals_pc_per_resample():
    x = _gauss(2, 8, 1000)
    codes = (x > 0).astype(int) + (x > 1).astype(int)  # three levels; a resample can miss the rare one
    rows = _rows(3, 5, 1000)
    got = _lockstep_graphs(ChiSquare(), codes, rows, "raise", None, alpha=0.05)
    for b, idx in enumerate(rows):
        np.testing.assert_array_equal(got[b], _pc_graph(codes[idx], ci_test="chisq", alpha=0.05))


def test_lockstep_background_knowledge_and_testwise_equal_pc():
    x = _gauss(4, 7, 600)
    bk = BackgroundKnowledge.from_edges(7, forbidden=[(0, 1), (1, 0)], required=[(2, 3)])
    rows = _rows(5, 4, 600)
    got = _lockstep_graphs(FisherZ(), x, rows, "raise", None, background_knowledge=bk)
    for b, idx in enumerate(rows):
        np.testing.assert_array_equal(got[b], _pc_graph(x[idx], background_knowledge=bk))
    miss = x.copy()
    miss[np.random.default_rng(6).random(x.shape) < 0.03] = np.nan
    got = _lockstep_graphs(FisherZ(), miss, rows, "testwise", None)
    for b, idx in enumerate(rows):
        np.testing.assert_array_equal(got[b], _pc_graph(miss[idx], nan_policy="testwise"))


def test_bootstrap_frequencies_equal_a_loop_of_pc():
    x = _gauss(7, 10, 1000, degree=2.5)
    key, num = jax.random.key(8), 6
    res = bootstrap_pc(key, x, num, alpha=0.05)
    # the documented resampling: resample b takes rows randint(split(key, num)[b], (n,), 0, n, int32)
    counts = np.zeros((3, 10, 10))
    for k in jax.random.split(key, num):
        g = _pc_graph(x[np.asarray(jax.random.randint(k, (1000,), 0, 1000, jnp.int32))], alpha=0.05)
        counts += [(g.T == 1) & (g == -1), (g == -1) & (g.T == -1), (g == 1) & (g.T == 1)]
    np.testing.assert_allclose(np.asarray(res.directed_frequency), counts[0] / num, atol=1e-7)
    np.testing.assert_allclose(np.asarray(res.undirected_frequency), counts[1] / num, atol=1e-7)
    np.testing.assert_allclose(np.asarray(res.bidirected_frequency), counts[2] / num, atol=1e-7)
    # the order-dependent PC takes the loop; it agrees on the adjacencies of these strong signals
    loop = bootstrap_pc(key, x, num, alpha=0.05, stable=False)
    assert np.abs(np.asarray(loop.edge_frequency) - np.asarray(res.edge_frequency)).max() <= 0.5
    with pytest.raises(TypeError, match="unexpected keyword"):
        bootstrap_pc(key, x, 2, alpah=0.05)
    with pytest.raises(ValueError, match="alpha"):
        bootstrap_pc(key, x, 2, alpha=1.5)


def test_lockstep_resamples_match_causal_learn():
    cl = pytest.importorskip("causallearn.search.ConstraintBased.PC")
    x = _gauss(9, 8, 1000, degree=2.5)
    rows = _rows(10, 3, 1000)
    got = _lockstep_graphs(FisherZ(), x, rows, "raise", None, alpha=0.05)
    for b, idx in enumerate(rows):
        ref = cl.pc(x[idx], 0.05, "fisherz", show_progress=False)  # stable, uc_rule 0, priority 2
        np.testing.assert_array_equal(got[b], ref.G.graph)
