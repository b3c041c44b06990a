"""Bad-input cases for every public entry point of ``icmlx.structure`` (see ``tests/fuzz/_harness.py``).

References are independent of the code under test: causal-learn's ``pc`` and ``dag2cpdag`` and its CI tests,
``np.corrcoef``, ``scipy.stats``, networkx (acyclicity, topological orders, d-separation) and graphs written down
by hand. ``python tests/fuzz/census.py --only structure`` runs every case in watched subprocesses.
"""

from __future__ import annotations

import functools
import math
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import icmlx.structure as st
from _harness import Case, assert_good, params

CASES: list[Case] = []
NAN = ("nan", "inf", "finite")
CYCLE = ("cycle", "cyclic", "acyclic")


# under pytest, jaxtyping's runtime check (tests/conftest.py) may refuse a wrong dtype or shape first: its message
# names the parameter, its value's dtype and shape, and the expected type
TYPED = "whilst typechecking parameter"
ABOUT_TYPES = ("(n, d)", "shape", "integer", "float", "dtype", "(d, d)", "square", "complex", "0/1")


# The default subset (the suite's time budget) keeps every cheap host-side case, one traced case per kind of check
# and one scale case per learner; cases that compile a program of their own run with -m slow and in the census.
TRACED_DEFAULT = {"correlation_matrix.nan.jit", "fisher_z.index_out_of_range.jit", "topological_order.cyclic.jit",
                  "shd.entries_two.jit"}
COMPILING = {
    "chi_square.valid_empty_set.eager", "chi_square.valid_set_g2.eager", "pc.d_separation_valid.eager",
    "sample_bernoulli.valid.eager", "sample_linear_gaussian.valid_root_variance.eager",
    "fisher_z.valid_empty_set.eager",
    "pc_tree.d_separation_valid.eager", "correlation_matrix.int_data", "random_er_dag.degree_full.eager",
    "random_polyforest.valid.eager", "random_er_dag.valid.eager", "bernoulli_test.valid_empty_set.eager",
    "pc_tree_from_scores.valid.eager", "d_separation.valid.eager", "pc_tree.bernoulli_valid.eager",
    "topological_order.long_chain.eager", "plot_graph.not_square.eager",
}


def add(name, run, check=None, words=(), **kw):
    traced = name.endswith((".jit", ".vmap"))
    if (traced and name not in TRACED_DEFAULT) or name in COMPILING:
        kw["slow"] = True
    if any(w in ABOUT_TYPES for w in words):
        words = (*words, TYPED)
    if words is CYCLE:
        kw.setdefault("timeout", 20.0)  # the old behaviour on a cycle is a compiled loop that never returns
    CASES.append(Case(name=f"structure.{name}", run=run, check=check, words=words, **kw))


# ---------------------------------------------------------------- shared data and references
# 0 -> 2 <- 1, 2 -> 3 -> 4: every edge is compelled (a collider, then R1 twice)
EDGES = [(0, 2), (1, 2), (2, 3), (3, 4)]
D = 5


def _dag(edges=EDGES, d=D):
    a = np.zeros((d, d), bool)
    for i, j in edges:
        a[i, j] = True
    return a


def _endpoint(directed=(), undirected=(), d=D):
    g = np.zeros((d, d), np.int32)
    for i, j in directed:
        g[i, j], g[j, i] = -1, 1
    for i, j in undirected:
        g[i, j] = g[j, i] = -1
    return g


TRUE_CPDAG = _endpoint(directed=EDGES)
CYCLIC = _dag([(0, 1), (1, 2), (2, 0), (2, 3)], 4)
SELF_LOOP = _dag([(0, 1), (1, 1)], 3)


@functools.cache
def gauss(n=1000):
    """Linear Gaussian SEM on ``EDGES`` (float64 NumPy)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, D))
    for i, j in EDGES:  # EDGES is in topological order
        x[:, j] += 0.8 * x[:, i]
    return x


@functools.cache
def binary(n=2000):
    rng = np.random.default_rng(1)
    x = (rng.random((n, D)) < 0.5).astype(np.int32)
    for i, j in EDGES:
        flip = rng.random(n) < 0.2
        x[:, j] = np.where(flip, x[:, j], x[:, i])
    return x


@functools.cache
def cl_pc(key, alpha=0.05):
    """causal-learn's PC-stable (Fisher-z, sepset colliders, priority 2) on a named float64 data set."""
    from causallearn.search.ConstraintBased.PC import pc as cl

    x = {"gauss": gauss(), "gauss200": gauss()[:200]}[key]
    return np.asarray(cl(x, alpha, "fisherz", stable=True, uc_rule=0, uc_priority=2, show_progress=False).G.graph)


def same_graph(ref):
    return lambda out: np.array_equal(np.asarray(out.graph), np.asarray(ref() if callable(ref) else ref))


def close(ref, rtol=1e-3, atol=1e-4):
    return lambda out: np.allclose(np.asarray(out, np.float64), ref() if callable(ref) else ref, rtol=rtol, atol=atol)


def modes(name, fn, args, check=None, words=(), which=("eager", "jit"), slow=(), **kw):
    """Eager / jit / vmap variants of ``fn(*args)`` (vmap over a stacked pair of the first argument)."""
    for mode in which:
        if mode == "eager":
            run = functools.partial(lambda a: fn(*a()), args)
        elif mode == "jit":
            run = functools.partial(lambda a: jax.jit(fn)(*a()), args)
        else:
            def run(a=args):
                first, *rest = a()
                first = jnp.stack([jnp.asarray(first)] * 2)
                return jax.vmap(lambda f: fn(f, *rest))(first)
            chk = check
            check_v = None if chk is None else (lambda out, chk=chk: chk(jax.tree.map(lambda v: v[0], out)))
            add(f"{name}.{mode}", run, check_v, words, slow=mode in slow, **kw)
            continue
        add(f"{name}.{mode}", run, check, words, slow=mode in slow, **kw)


def f32(x):
    return jnp.asarray(np.asarray(x, np.float32))


SCALES = {"1e20": 1e20, "1e-20": 1e-20, "1e30": 1e30, "1e-30": 1e-30,
          "mixed": np.array([1e20, 1.0, 1e-20, 1e15, 1e-10])}

# ---------------------------------------------------------------- correlation_matrix
corr_ref = functools.cache(lambda: np.corrcoef(gauss().T))
for tag, s in SCALES.items():
    modes(f"correlation_matrix.scale_{tag}", st.correlation_matrix, lambda s=s: (f32(gauss() * s),),
          check=close(corr_ref, atol=2e-3), which=("eager", "jit", "vmap"), slow=("vmap",) if tag != "1e20" else ())


def _with(x, idx, value):
    x = np.array(x, np.float64)
    x[idx] = value
    return x


modes("correlation_matrix.nan", st.correlation_matrix, lambda: (f32(_with(gauss()[:50], (3, 1), np.nan)),),
      words=NAN, which=("eager", "jit", "vmap"))
modes("correlation_matrix.inf", st.correlation_matrix, lambda: (f32(_with(gauss()[:50], (3, 1), np.inf)),),
      words=NAN, which=("eager",))
modes("correlation_matrix.constant_column", st.correlation_matrix,
      lambda: (f32(_with(gauss()[:50], (slice(None), 2), 1.0)),), words=("constant",), which=("eager", "jit"))
add("correlation_matrix.int_data", lambda: st.correlation_matrix(jnp.asarray(np.arange(40).reshape(10, 4) ** 2 % 7)),
    check=close(lambda: np.corrcoef((np.arange(40).reshape(10, 4) ** 2 % 7).T)), words=("float", "dtype", "integer"))
add("correlation_matrix.complex", lambda: st.correlation_matrix(jnp.ones((5, 2), jnp.complex64)),
    words=("complex", "real", "float"))
add("correlation_matrix.one_dim", lambda: st.correlation_matrix(f32(gauss()[:, 0])), words=("(n, d)", "ndim", "shape"))
add("correlation_matrix.one_sample", lambda: st.correlation_matrix(f32(gauss()[:1])), words=("sample", "n="))
add("correlation_matrix.empty", lambda: st.correlation_matrix(jnp.zeros((0, 3))), words=("sample", "n=", "empty"))

# ---------------------------------------------------------------- CI tests: index contract shared by all
I1 = lambda *v: jnp.asarray(v, jnp.int32)  # noqa: E731
S0 = jnp.zeros((1, 0), jnp.int32)
IDX = ("s", "x", "y", "index", "range")


def fz_ref(i, j, cond, n=1000):
    from scipy import stats

    r = np.corrcoef(gauss(n).T)
    v = [i, j, *cond]
    p = np.linalg.inv(r[np.ix_(v, v)])
    rho = -p[0, 1] / math.sqrt(p[0, 0] * p[1, 1])
    z = math.sqrt(n - len(cond) - 3) * abs(math.atanh(rho))
    return 2 * stats.norm.sf(z)


def fisher(x, y, s, n=1000, corr=None):
    c = f32(np.corrcoef(gauss(n).T)) if corr is None else corr
    return st.fisher_z(c, n, x, y, s)


add("fisher_z.valid_empty_set.eager", lambda: fisher(I1(0, 0), I1(1, 4), jnp.zeros((2, 0), jnp.int32)).pvalue,
    check=close(lambda: [fz_ref(0, 1, []), fz_ref(0, 4, [])], atol=1e-5))
add("fisher_z.valid_set.eager", lambda: fisher(I1(0), I1(4), I1(2).reshape(1, 1)).pvalue,
    check=close(lambda: [fz_ref(0, 4, [2])], rtol=1e-2, atol=1e-4))
add("fisher_z.valid_set.jit", lambda: jax.jit(lambda c, x, y, s: st.fisher_z(c, 1000, x, y, s).pvalue)(
    f32(np.corrcoef(gauss().T)), I1(0), I1(4), I1(2).reshape(1, 1)),
    check=close(lambda: [fz_ref(0, 4, [2])], rtol=1e-2, atol=1e-4))
add("fisher_z.set_contains_x.eager", lambda: fisher(I1(0), I1(1), I1(0).reshape(1, 1)), words=IDX)
add("fisher_z.set_contains_y.jit", lambda: jax.jit(lambda c, x, y, s: st.fisher_z(c, 1000, x, y, s))(
    f32(np.corrcoef(gauss().T)), I1(0), I1(1), I1(1).reshape(1, 1)), words=IDX)
add("fisher_z.x_equals_y.eager", lambda: fisher(I1(2), I1(2), S0), words=IDX)
add("fisher_z.index_out_of_range.eager", lambda: fisher(I1(0), I1(7), S0), words=IDX)
add("fisher_z.index_out_of_range.jit", lambda: jax.jit(lambda c, x, y, s: st.fisher_z(c, 1000, x, y, s))(
    f32(np.corrcoef(gauss().T)), I1(0), I1(7), S0), words=IDX)
add("fisher_z.negative_index.eager", lambda: fisher(I1(-1), I1(2), S0), words=IDX)
add("fisher_z.float_index.eager", lambda: fisher(jnp.asarray([0.0]), jnp.asarray([1.0]), S0),
    words=("integer", "int", "dtype"))
add("fisher_z.nan_corr.eager", lambda: fisher(I1(0), I1(1), S0, corr=f32(_with(np.eye(5), (0, 1), np.nan))),
    words=NAN)
add("fisher_z.n_too_small.eager", lambda: st.fisher_z(f32(np.eye(5)), 4, I1(0), I1(1), I1(2, 3).reshape(1, 2)),
    words=("n",))
add("fisher_z.corr_not_square.eager", lambda: st.fisher_z(jnp.ones((5, 4)), 100, I1(0), I1(1), S0),
    words=("corr", "(d, d)", "square"))
add("fisher_z.batch_mismatch.eager", lambda: fisher(I1(0, 1), I1(2), S0), words=("batch", "shape"))


def disc_data():
    return jnp.asarray(binary() + 2 * binary()[:, ::-1])  # values 0..3


def cl_cit(kind, data, x, y, cond):
    from causallearn.utils.cit import CIT

    return CIT(np.asarray(data), kind)(x, y, list(cond))


add("chi_square.valid_empty_set.eager", lambda: st.chi_square(disc_data(), I1(0), I1(2), S0).pvalue,
    check=close(lambda: [cl_cit("chisq", disc_data(), 0, 2, [])], atol=1e-5))
add("chi_square.valid_set_g2.eager", lambda: st.chi_square(disc_data(), I1(0), I1(3), I1(2).reshape(1, 1),
                                                           g_square=True).pvalue,
    check=close(lambda: [cl_cit("gsq", disc_data(), 0, 3, [2])], rtol=1e-2, atol=1e-5))
add("chi_square.float_data.eager", lambda: st.chi_square(jnp.asarray(gauss()), I1(0), I1(1), S0),
    words=("integer",))
add("chi_square.negative_codes.eager", lambda: st.chi_square(disc_data() - 1, I1(0), I1(1), S0),
    words=("negative", "0..", "code"))
add("chi_square.set_contains_x.eager", lambda: st.chi_square(disc_data(), I1(0), I1(1), I1(0).reshape(1, 1)),
    words=IDX)
add("chi_square.index_out_of_range.eager", lambda: st.chi_square(disc_data(), I1(0), I1(9), S0), words=IDX)
add("chi_square.empty_data.eager", lambda: st.chi_square(jnp.zeros((0, 3), jnp.int32), I1(0), I1(1), S0),
    words=("sample", "empty", "n="))
add("chi_square.one_dim.eager", lambda: st.chi_square(jnp.zeros((10,), jnp.int32), I1(0), I1(1), S0),
    words=("(n, d)", "shape", "ndim"))


def bern_ref():
    from scipy import stats

    x = binary()
    t = np.histogram2d(x[:, 0], x[:, 2], bins=2)[0]
    return [stats.chi2_contingency(t, correction=False)[1]]


add("bernoulli_test.valid_empty_set.eager", lambda: st.bernoulli_test(jnp.asarray(binary()), I1(0), I1(2), S0).pvalue,
    check=close(bern_ref, atol=1e-5))
add("bernoulli_test.non_binary.eager", lambda: st.bernoulli_test(disc_data(), I1(0), I1(1), S0),
    words=("binary", "0/1"))
add("bernoulli_test.non_binary.jit", lambda: jax.jit(st.bernoulli_test)(disc_data(), I1(0), I1(1), S0),
    words=("binary", "0/1"))
add("bernoulli_test.float_data.eager", lambda: st.bernoulli_test(jnp.asarray(gauss()), I1(0), I1(1), S0),
    words=("integer", "0/1"))
add("bernoulli_test.set_contains_y.eager",
    lambda: st.bernoulli_test(jnp.asarray(binary()), I1(0), I1(1), I1(1).reshape(1, 1)), words=IDX)
add("bernoulli_test.index_out_of_range.jit",
    lambda: jax.jit(st.bernoulli_test)(jnp.asarray(binary()), I1(0), I1(5), S0), words=IDX)


def nx_dsep(dag, x, y, cond):
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(range(dag.shape[0]))
    g.add_edges_from(zip(*np.nonzero(dag)))
    f = getattr(nx, "is_d_separator", None) or nx.d_separated
    return float(f(g, {x}, {y}, set(cond)))


DSEP_Q = ([0, 0, 0, 1], [1, 3, 4, 4], [[3], [2], [3], [0]])
modes("d_separation.valid", st.d_separation,
      lambda: (jnp.asarray(_dag()), I1(*DSEP_Q[0]), I1(*DSEP_Q[1]), jnp.asarray(DSEP_Q[2], jnp.int32)),
      check=lambda out: np.array_equal(np.asarray(out.pvalue),
                                       [nx_dsep(_dag(), a, b, c) for a, b, c in zip(*DSEP_Q)]))
modes("d_separation.cyclic", st.d_separation, lambda: (jnp.asarray(CYCLIC), I1(0), I1(3), S0), words=CYCLE)
add("d_separation.self_loop.eager", lambda: st.d_separation(jnp.asarray(SELF_LOOP), I1(0), I1(2), S0), words=CYCLE)
add("d_separation.set_contains_x.eager",
    lambda: st.d_separation(jnp.asarray(_dag()), I1(0), I1(3), I1(0).reshape(1, 1)), words=IDX)
add("d_separation.index_out_of_range.eager", lambda: st.d_separation(jnp.asarray(_dag()), I1(0), I1(8), S0),
    words=IDX)
add("d_separation.not_square.eager", lambda: st.d_separation(jnp.zeros((3, 4), bool), I1(0), I1(1), S0),
    words=("(d, d)", "square", "dag"))

NPD = functools.cache(lambda: f32(np.tanh(gauss()[:400])))
add("binned_u_statistic.nan.eager", lambda: st.binned_u_statistic(f32(_with(NPD(), (0, 0), np.nan)), I1(0), I1(1), S0),
    words=NAN)
add("binned_u_statistic.nan.jit",
    lambda: jax.jit(st.binned_u_statistic)(f32(_with(NPD(), (0, 0), np.nan)), I1(0), I1(1), S0), words=NAN)
add("binned_u_statistic.one_bin.eager", lambda: st.binned_u_statistic(NPD(), I1(0), I1(1), S0, num_bins=1),
    words=("num_bins",))
add("binned_u_statistic.float_bins.eager", lambda: st.binned_u_statistic(NPD(), I1(0), I1(1), S0, num_bins=2.5),
    words=("num_bins",))
add("binned_u_statistic.set_contains_x.eager",
    lambda: st.binned_u_statistic(NPD(), I1(0), I1(1), I1(0).reshape(1, 1)), words=IDX)
add("binned_u_statistic.int_data.eager",
    lambda: st.binned_u_statistic(jnp.asarray(binary()), I1(0), I1(1), S0), words=("float", "dtype"))
add("nonparametric_test.nan.eager", lambda: st.nonparametric_test(f32(_with(NPD(), (0, 0), np.nan)), I1(0), I1(1), S0),
    words=NAN)
add("nonparametric_test.inf.jit",
    lambda: jax.jit(st.nonparametric_test)(f32(_with(NPD(), (0, 0), np.inf)), I1(0), I1(1), S0), words=NAN)
add("nonparametric_test.permutation_without_key.eager",
    lambda: st.nonparametric_test(NPD(), I1(0), I1(1), S0, method="permutation"), words=("key",))
add("nonparametric_test.one_cond_bin.eager",
    lambda: st.nonparametric_test(NPD(), I1(0), I1(1), I1(2).reshape(1, 1), cond_bins=1), words=("cond_bins",))
add("nonparametric_test.set_contains_y.eager",
    lambda: st.nonparametric_test(NPD(), I1(0), I1(1), I1(1).reshape(1, 1)), words=IDX)
add("nonparametric_test.index_out_of_range.eager",
    lambda: st.nonparametric_test(NPD(), I1(0), I1(6), S0), words=IDX)
add("nonparametric_test.int_data.eager", lambda: st.nonparametric_test(jnp.asarray(binary()), I1(0), I1(1), S0),
    words=("float",))
add("nonparametric_test.bad_method.eager", lambda: st.nonparametric_test(NPD(), I1(0), I1(1), S0, method="bogus"),
    words=("method",))

# ---------------------------------------------------------------- pc
PC_REF = functools.partial(cl_pc, "gauss")
for tag, s in SCALES.items():
    add(f"pc.scale_{tag}.eager", lambda s=s: st.pc(gauss() * s), check=same_graph(PC_REF), slow=tag != "1e20")
add("pc.scale_1e20_float32.eager", lambda: st.pc(f32(gauss() * 1e20)), check=same_graph(PC_REF))
add("pc.nan.eager", lambda: st.pc(_with(gauss(), (5, 1), np.nan)), words=NAN)
add("pc.inf.eager", lambda: st.pc(_with(gauss(), (5, 1), -np.inf)), words=NAN)
add("pc.nan_listwise.eager", lambda: st.pc(np.vstack([gauss(), np.full((3, D), np.nan)]), nan_policy="listwise"),
    check=same_graph(PC_REF), slow=True)
add("pc.one_dim.eager", lambda: st.pc(gauss()[:, 0]), words=("(n, d)", "shape"))
add("pc.three_dim.eager", lambda: st.pc(gauss()[None]), words=("(n, d)", "shape"))
add("pc.empty.eager", lambda: st.pc(np.zeros((0, D))), words=("sample", "n="))
add("pc.n_3.eager", lambda: st.pc(gauss()[:3]), words=("sample", "n="))
for tag, a in {"zero": 0.0, "one": 1.0, "negative": -0.1, "above_one": 1.5, "nan": float("nan"),
               "inf": float("inf"), "string": "0.05", "none": None}.items():
    add(f"pc.alpha_{tag}.eager", lambda a=a: st.pc(gauss()[:200], alpha=a), words=("alpha",))
add("pc.alpha_numpy_scalar.eager", lambda: st.pc(gauss(), alpha=np.float32(0.05)), check=same_graph(PC_REF))
add("pc.max_depth_negative.eager", lambda: st.pc(gauss()[:200], max_depth=-1), words=("max_depth",))
add("pc.max_depth_float.eager", lambda: st.pc(gauss()[:200], max_depth=1.5), words=("max_depth",))
add("pc.max_depth_nan.eager", lambda: st.pc(gauss()[:200], max_depth=float("nan")), words=("max_depth",))
# constant and duplicated columns are warned about, not refused: a constant column is left without edges and a
# duplicated pair stays adjacent (causal-learn's answer)
add("pc.constant_column.eager", lambda: st.pc(_with(gauss()[:200], (slice(None), 3), 2.0)),
    check=lambda out: not np.asarray(out.graph)[3].any() and not np.asarray(out.graph)[:, 3].any())
add("pc.duplicated_column.eager", lambda: st.pc(np.column_stack([gauss()[:200], gauss()[:200, 1]])),
    check=lambda out: np.asarray(out.graph)[1, D] != 0 and np.asarray(out.graph)[D, 1] != 0)
add("pc.complex.eager", lambda: st.pc(gauss()[:200] + 1j), words=("complex", "real", "numeric"))
add("pc.chisq_non_integer.eager", lambda: st.pc(gauss()[:200], ci_test="chisq"), words=("integer",))
add("pc.gsq_non_integer.eager", lambda: st.pc(gauss()[:200], ci_test=st.GSquare()), words=("integer",))
add("pc.bernoulli_non_binary.eager", lambda: st.pc(np.asarray(disc_data()), ci_test=st.Bernoulli()),
    words=("binary",))
add("pc.bad_ci_test.eager", lambda: st.pc(gauss()[:200], ci_test="bogus"), words=("ci_test",))
add("pc.bad_colliders.eager", lambda: st.pc(gauss()[:200], colliders="bogus"), words=("colliders",))
add("pc.names_wrong_length.eager", lambda: st.pc(gauss()[:200], names=["a", "b"]), words=("names",))
add("pc.single_variable.eager", lambda: st.pc(gauss()[:, :1]), check=lambda out: np.array_equal(out.graph, [[0]]))
add("pc.int_data.eager", lambda: st.pc(np.round(gauss() * 1000).astype(np.int64)),
    check=same_graph(lambda: np.asarray(cl_pc("gauss"))))
add("pc.float16.eager", lambda: st.pc(gauss().astype(np.float16)), check=same_graph(PC_REF), slow=True)
add("pc.d_separation_cyclic.eager", lambda: st.pc(None, ci_test="d_separation", true_dag=CYCLIC), words=CYCLE)
add("pc.d_separation_not_square.eager", lambda: st.pc(None, ci_test="d_separation", true_dag=np.zeros((3, 4), bool)),
    words=("true_dag", "(d, d)", "square"))
add("pc.d_separation_valid.eager", lambda: st.pc(None, ci_test="d_separation", true_dag=_dag()),
    check=same_graph(TRUE_CPDAG))
BK = st.BackgroundKnowledge
add("pc.bk_unknown_name.eager", lambda: BK.from_edges(["a", "b", "c"], forbidden=[("a", "zz")]),
    words=("unknown", "zz"))
add("pc.bk_out_of_range.eager", lambda: BK.from_edges(3, required=[(0, 5)]), words=("range",))
add("pc.bk_forbidden_and_required.eager", lambda: BK.from_edges(3, forbidden=[(0, 1)], required=[(0, 1)]),
    words=("contradict", "both"))
add("pc.bk_required_both_ways.eager", lambda: BK.from_edges(3, required=[(0, 1), (1, 0)]),
    words=("contradict", "both", "cycle"))
add("pc.bk_required_against_tiers.eager", lambda: BK.from_edges(3, required=[(1, 0)], tiers=[0, 1, 1]),
    words=("contradict", "both", "tier"))
add("pc.bk_contradiction_direct.eager",
    lambda: st.pc(gauss()[:200], background_knowledge=BK(jnp.eye(D, k=1, dtype=bool), jnp.eye(D, k=1, dtype=bool))),
    words=("contradict", "both"))
add("pc.bk_names_not_in_data.eager",
    lambda: st.pc(gauss()[:200], names=list("abcde"),
                  background_knowledge=BK.from_edges(["a", "q"], forbidden=[("a", "q")])),
    words=("q", "not columns", "unknown"))
add("pc.bk_wrong_size.eager", lambda: st.pc(gauss()[:200], background_knowledge=BK.from_edges(3)),
    words=("background", "d="))

# ---------------------------------------------------------------- pc_tree and its parts
for tag, s in SCALES.items():
    modes(f"pc_tree.scale_{tag}", lambda x: st.pc_tree(x), lambda s=s: (f32(gauss() * s),),
          check=same_graph(TRUE_CPDAG), which=("eager", "jit"), slow=("jit",) if tag != "1e20" else ())
add("pc_tree.scale_1e20_float64_input.eager", lambda: st.pc_tree(gauss() * 1e20), check=same_graph(TRUE_CPDAG))
add("pc_tree.unscaled.vmap", lambda: jax.vmap(lambda x: st.pc_tree(x).graph)(jnp.stack([f32(gauss())] * 2))[1],
    check=lambda out: np.array_equal(np.asarray(out), TRUE_CPDAG), slow=True)
modes("pc_tree.nan", lambda x: st.pc_tree(x), lambda: (f32(_with(gauss(), (3, 0), np.nan)),), words=NAN)
add("pc_tree.constant_column.eager", lambda: st.pc_tree(_with(gauss(), (slice(None), 1), 0.0)),
    check=lambda out: not np.asarray(out.graph)[1].any() and not np.asarray(out.graph)[:, 1].any())
add("pc_tree.duplicated_column.eager", lambda: st.pc_tree(np.column_stack([gauss(), gauss()[:, 2]])),
    words=("duplicated",))
add("pc_tree.n_4.eager", lambda: st.pc_tree(gauss()[:4]), words=("n=", "n >", "sample"))
add("pc_tree.one_dim.eager", lambda: st.pc_tree(gauss()[:, 0]), words=("(n, d)", "shape"))
add("pc_tree.complex.eager", lambda: st.pc_tree(gauss() + 1j), words=("complex", "real", "numeric", "float"))
for tag, t in {"zero": 0.0, "negative": -0.2, "one": 1.0, "nan": float("nan"), "string": "0.1", "bool": True}.items():
    add(f"pc_tree.threshold_{tag}.eager", lambda t=t: st.pc_tree(gauss(), threshold=t), words=("threshold",))
add("pc_tree.threshold_nonparametric_inf.eager",
    lambda: st.pc_tree(np.tanh(gauss()), ci_test="nonparametric", threshold=float("inf")), words=("threshold",))
for tag, a in {"zero": 0.0, "one": 1.0, "nan": float("nan"), "negative": -1.0, "none": None}.items():
    add(f"pc_tree.alpha_{tag}.eager", lambda a=a: st.pc_tree(gauss(), alpha=a), words=("alpha",))
add("pc_tree.bernoulli_non_binary.eager", lambda: st.pc_tree(np.asarray(disc_data()), ci_test="bernoulli"),
    words=("binary",))
add("pc_tree.bernoulli_non_binary.jit", lambda: jax.jit(lambda x: st.pc_tree(x, ci_test="bernoulli"))(disc_data()),
    words=("binary", "0/1"))
add("pc_tree.bernoulli_valid.eager", lambda: st.pc_tree(binary(), ci_test="bernoulli", alpha=0.001),
    check=same_graph(TRUE_CPDAG))
add("pc_tree.bad_ci_test.eager", lambda: st.pc_tree(binary(), ci_test="bogus"), words=("ci_test",))
add("pc_tree.chisq_valid.eager", lambda: st.pc_tree(binary(), ci_test="chisq", alpha=0.001),
    check=same_graph(TRUE_CPDAG))
add("pc_tree.nonparametric_nan.eager",
    lambda: st.pc_tree(_with(np.tanh(gauss()), (0, 0), np.nan), ci_test="nonparametric"), words=NAN)
modes("pc_tree.d_separation_cyclic", lambda g: st.pc_tree(g, ci_test="d_separation"), lambda: (jnp.asarray(CYCLIC),),
      words=CYCLE)
add("pc_tree.d_separation_valid.eager", lambda: st.pc_tree(jnp.asarray(_dag()), ci_test="d_separation"),
    check=same_graph(TRUE_CPDAG))
add("pc_tree.num_tests_int32_overflow.eager", lambda: st.pc_tree(np.random.default_rng(0).standard_normal((8, 1700))),
    words=("int32", "x64", "num_tests"), timeout=120)
add("pc_tree.chunk_size_zero.eager", lambda: st.pc_tree(gauss(), chunk_size=0), words=("chunk_size",))
add("pc_tree.chunk_size_negative.eager", lambda: st.pc_tree(gauss(), chunk_size=-3), words=("chunk_size",))
add("pc_tree.names_wrong_length.eager", lambda: st.pc_tree(gauss(), names=["a"]), words=("names",))

add("polyforest_scores.scale_1e20.eager", lambda: st.polyforest_scores(f32(gauss() * 1e20))[0],
    check=lambda out: np.allclose(np.asarray(out) * (1 - np.eye(D)), np.abs(corr_ref()) * (1 - np.eye(D)),
                                  atol=2e-3))
add("polyforest_scores.scale_1e-20.jit", lambda: jax.jit(lambda x: st.polyforest_scores(x)[0])(f32(gauss() * 1e-20)),
    check=lambda out: np.allclose(np.asarray(out) * (1 - np.eye(D)), np.abs(corr_ref()) * (1 - np.eye(D)),
                                  atol=2e-3))
add("polyforest_scores.nan.eager", lambda: st.polyforest_scores(_with(gauss(), (0, 0), np.nan)), words=NAN)
add("polyforest_scores.alpha_nan.eager", lambda: st.polyforest_scores(gauss(), alpha=float("nan")), words=("alpha",))


def scores(d=3):
    s = jnp.asarray([[0.0, 1, 0], [1, 0, 1], [0, 1, 0]])
    return s, s, -jnp.ones((d, d), jnp.int32), jnp.asarray(0.5), jnp.asarray(0.5)


add("pc_tree_from_scores.valid.eager", lambda: st.pc_tree_from_scores(*scores()),
    check=same_graph(_endpoint(directed=[(0, 1), (2, 1)], d=3)))
add("pc_tree_from_scores.shape_mismatch.eager",
    lambda: st.pc_tree_from_scores(scores()[0], jnp.zeros((4, 4)), *scores()[2:]),
    words=("shape", "conditional_score", "(d, d)"))
add("pc_tree_from_scores.not_square.eager",
    lambda: st.pc_tree_from_scores(jnp.zeros((3, 4)), jnp.zeros((3, 4)), -jnp.ones((3, 4), jnp.int32),
                                   jnp.asarray(0.5), jnp.asarray(0.5)), words=("shape", "(d, d)", "square"))
add("pc_tree_from_scores.nan_scores.eager",
    lambda: st.pc_tree_from_scores(scores()[0].at[0, 1].set(jnp.nan), *scores()[1:]), words=NAN)
add("pc_tree_from_scores.nan_cut.eager", lambda: st.pc_tree_from_scores(*scores()[:3], jnp.asarray(jnp.nan),
                                                                        jnp.asarray(0.5)), words=NAN + ("cut",))

for tag, (n, nb) in {"n_zero": (0, 4), "n_negative": (-5, 4), "bins_one": (100, 1), "n_nan": (float("nan"), 4),
                     "n_float": (100.5, 4)}.items():
    add(f"default_cond_bins.{tag}.eager", lambda n=n, nb=nb: st.default_cond_bins(n, nb),
        words=("n", "num_bins", "integer"))
add("default_cond_bins.valid.eager", lambda: st.default_cond_bins(10000, 3), check=lambda out: out == 20)
for tag, kw in {"num_bins_one": {"num_bins": 1}, "num_bins_float": {"num_bins": 2.5},
                "cond_bins_zero": {"cond_bins": 0}}.items():
    add(f"Nonparametric.{tag}.eager", lambda kw=kw: st.Nonparametric(**kw), words=tuple(kw))
for tag, kw in {"priority_bad": {"priority": 7}, "priority_float": {"priority": 1.5}}.items():
    for cls in (st.SepsetColliders, st.MaxPColliders, st.DefiniteMaxPColliders):
        add(f"{cls.__name__}.{tag}.eager", lambda cls=cls, kw=kw: cls(**kw), words=("priority",))
add("Permutation.zero.eager", lambda: st.Permutation(num_permutations=0), words=("num_permutations",))
add("Permutation.float.eager", lambda: st.Permutation(num_permutations=9.5), words=("num_permutations",))

# ---------------------------------------------------------------- random graphs, orders and samplers
KEY = jax.random.key(0)


def acyclic(out, d=None):
    import networkx as nx

    a = np.asarray(out)
    if a.ndim == 3:
        return all(acyclic(v, d) for v in a)
    g = nx.DiGraph(a.astype(int))
    return (d is None or a.shape == (d, d)) and nx.is_directed_acyclic_graph(g)


for tag, e in {"negative": -1.0, "above_d_minus_1": 9.0, "nan": float("nan"), "inf": float("inf")}.items():
    modes(f"random_er_dag.expected_degree_{tag}", lambda k, e: st.random_er_dag(k, 6, e), lambda e=e: (KEY, e),
          words=("expected_degree",), which=("eager", "jit") if tag in ("negative", "nan") else ("eager",))
modes("random_er_dag.valid", lambda k: st.random_er_dag(k, 8, 3.0), lambda: (KEY,),
      check=lambda out: acyclic(out, 8), which=("eager", "jit"))
add("random_er_dag.valid.vmap", lambda: jax.vmap(lambda k: st.random_er_dag(k, 8, 3.0))(jax.random.split(KEY, 3)),
    check=lambda out: acyclic(out))
add("random_er_dag.d_negative.eager", lambda: st.random_er_dag(KEY, -2), words=("d",))
add("random_er_dag.d_zero.eager", lambda: st.random_er_dag(KEY, 0), check=lambda out: np.shape(out) == (0, 0))
add("random_er_dag.degree_full.eager", lambda: st.random_er_dag(KEY, 6, 5.0),
    check=lambda out: acyclic(out, 6) and int(np.sum(out)) == 15)
for tag, p in {"negative": -0.1, "above_one": 1.5, "nan": float("nan")}.items():
    modes(f"random_polyforest.drop_prob_{tag}", lambda k, p: st.random_polyforest(k, 6, p), lambda p=p: (KEY, p),
          words=("drop_prob",), which=("eager", "jit") if tag == "nan" else ("eager",))


def forest(out, d):
    import networkx as nx

    a = np.asarray(out)
    return a.shape == (d, d) and nx.is_forest(nx.Graph((a | a.T).astype(int))) and acyclic(a)


add("random_polyforest.valid.eager", lambda: st.random_polyforest(KEY, 9, 0.3), check=lambda out: forest(out, 9))
add("random_polyforest.valid.vmap", lambda: jax.vmap(lambda k: st.random_polyforest(k, 9))(jax.random.split(KEY, 3)),
    check=lambda out: all(forest(v, 9) for v in np.asarray(out)))
add("random_polyforest.d_zero.eager", lambda: st.random_polyforest(KEY, 0), check=lambda out: np.shape(out) == (0, 0),
    words=("d",))
add("random_polyforest.d_negative.eager", lambda: st.random_polyforest(KEY, -1), words=("d",))


def valid_order(dag):
    def chk(out):
        o = np.asarray(out)
        if sorted(o.tolist()) != list(range(dag.shape[0])):
            return False
        pos = np.argsort(o)
        return all(pos[i] < pos[j] for i, j in zip(*np.nonzero(dag)))

    return chk


modes("topological_order.cyclic", st.topological_order, lambda: (jnp.asarray(CYCLIC),), words=CYCLE,
      which=("eager", "jit", "vmap"))
modes("topological_order.self_loop", st.topological_order, lambda: (jnp.asarray(SELF_LOOP),), words=CYCLE)
modes("topological_order.valid", st.topological_order, lambda: (jnp.asarray(_dag()[::-1, ::-1]),),
      check=valid_order(_dag()[::-1, ::-1]), which=("eager", "jit", "vmap"))
add("topological_order.int_matrix.eager", lambda: st.topological_order(jnp.asarray(_dag().astype(np.int32))),
    check=valid_order(_dag()))
add("topological_order.not_square.eager", lambda: st.topological_order(jnp.zeros((3, 4), bool)),
    words=("(d, d)", "square", "dag"))
add("topological_order.long_chain.eager", lambda: st.topological_order(jnp.asarray(np.eye(300, k=1, dtype=bool))),
    check=lambda out: np.array_equal(out, np.arange(300)))

SAMPLERS = {"sample_linear_gaussian": st.sample_linear_gaussian, "sample_bernoulli": st.sample_bernoulli,
            "sample_nonlinear": st.sample_nonlinear}
for sname, fn in SAMPLERS.items():
    modes(f"{sname}.cyclic", lambda k, g, fn=fn: fn(k, g, 50), lambda: (KEY, jnp.asarray(CYCLIC)), words=CYCLE,
          which=("eager", "jit"))
    add(f"{sname}.self_loop.eager", lambda fn=fn: fn(KEY, jnp.asarray(SELF_LOOP), 50), words=CYCLE)
    add(f"{sname}.n_negative.eager", lambda fn=fn: fn(KEY, jnp.asarray(_dag()), -3), words=("n",))
    add(f"{sname}.n_zero.eager", lambda fn=fn: fn(KEY, jnp.asarray(_dag()), 0), check=lambda out: out.shape == (0, D))
    add(f"{sname}.not_square.eager", lambda fn=fn: fn(KEY, jnp.zeros((3, 4), bool), 10),
        words=("(d, d)", "square", "dag"))
    add(f"{sname}.cyclic.vmap",
        lambda fn=fn: jax.vmap(lambda k: fn(k, jnp.asarray(CYCLIC), 20))(jax.random.split(KEY, 2)),
        words=CYCLE, slow=True)
for sname in ("sample_linear_gaussian", "sample_nonlinear"):
    fn = SAMPLERS[sname]
    add(f"{sname}.w_low_nan.eager", lambda fn=fn: fn(KEY, jnp.asarray(_dag()), 20, w_low=float("nan")),
        words=("w_low",))
    add(f"{sname}.w_low_above_w_high.eager", lambda fn=fn: fn(KEY, jnp.asarray(_dag()), 20, w_low=2.0, w_high=1.0),
        words=("w_low", "w_high"))
    add(f"{sname}.w_high_inf.jit", lambda fn=fn: jax.jit(lambda k, w: fn(k, jnp.asarray(_dag()), 20, w_high=w))(
        KEY, jnp.inf), words=("w_high", "w_low"))
for tag, v in {"above_half": 0.8, "nan": float("nan"), "inf": float("inf")}.items():
    add(f"sample_bernoulli.strength_{tag}.eager", lambda v=v: st.sample_bernoulli(KEY, jnp.asarray(_dag()), 20, v),
        words=("strength",))
add("sample_bernoulli.strength_nan.jit",
    lambda: jax.jit(lambda k, v: st.sample_bernoulli(k, jnp.asarray(_dag()), 20, v))(KEY, jnp.nan), words=("strength",))
add("sample_bernoulli.valid.eager", lambda: st.sample_bernoulli(KEY, jnp.asarray(_dag()), 4000),
    check=lambda out: set(np.unique(out).tolist()) <= {0, 1}
    and abs(float(np.mean(np.asarray(out)[:, 0])) - 0.5) < 0.04)
add("sample_linear_gaussian.valid_root_variance.eager",
    lambda: st.sample_linear_gaussian(KEY, jnp.asarray(_dag()), 4000),
    check=lambda out: abs(float(np.var(np.asarray(out)[:, 0])) - 1.0) < 0.1)

# ---------------------------------------------------------------- metrics
G1 = _endpoint(directed=[(0, 2), (1, 2)], undirected=[(2, 3)])
G2 = _endpoint(directed=[(0, 2), (2, 1)], undirected=[(3, 4)])
# by hand: pairs (1,2) reversed, (2,3) missing, (3,4) extra -> SHD 3; skeleton: tp 2, est 3, true 3
HAND = {"shd": 3, "skeleton_scores": (2 / 3, 2 / 3), "arrowhead_scores": (1 / 2, 1 / 2), "exact_recovery": False}
METRICS = {"shd": st.shd, "skeleton_scores": st.skeleton_scores, "arrowhead_scores": st.arrowhead_scores,
           "exact_recovery": st.exact_recovery}


def metric_check(mname):
    want = HAND[mname]

    def chk(out):
        if isinstance(want, tuple):
            return np.allclose([float(out.precision), float(out.recall)], want, atol=1e-6)
        return bool(np.asarray(out) == want)

    return chk


for mname, fn in METRICS.items():
    modes(f"{mname}.valid", fn, lambda: (jnp.asarray(G2), jnp.asarray(G1)), check=metric_check(mname),
          which=("eager", "jit"))
    add(f"{mname}.shape_mismatch.eager", lambda fn=fn: fn(jnp.asarray(G1), jnp.zeros((4, 4), jnp.int32)),
        words=("shape", "same nodes", "truth"))
    add(f"{mname}.entries_two.eager", lambda fn=fn: fn(jnp.asarray(G1) * 2, jnp.asarray(G1)),
        words=("entries", "endpoint", "adjacency"))
    add(f"{mname}.entries_two.jit", lambda fn=fn: jax.jit(fn)(jnp.asarray(G1) * 2, jnp.asarray(G1)),
        words=("entries", "endpoint", "adjacency"))
    add(f"{mname}.fractional.eager", lambda fn=fn: fn(jnp.asarray(_dag(), jnp.float32) * 0.5, jnp.asarray(G1)),
        words=("entries", "endpoint", "adjacency"))
    add(f"{mname}.nan.eager", lambda fn=fn: fn(jnp.asarray(G1, jnp.float32).at[0, 1].set(jnp.nan), jnp.asarray(G1)),
        words=("entries", "endpoint", "nan"))
    add(f"{mname}.not_square.eager", lambda fn=fn: fn(jnp.zeros((3, 4), jnp.int32), jnp.zeros((3, 4), jnp.int32)),
        words=("(d, d)", "square"))
    add(f"{mname}.one_sided_endpoint.eager",
        lambda fn=fn: fn(jnp.asarray(G1).at[3, 4].set(-1), jnp.asarray(G1)), words=("mixes", "endpoint", "both ends"))


def cl_cpdag(dag):
    from causallearn.graph.Dag import Dag
    from causallearn.graph.GraphNode import GraphNode
    from causallearn.utils.DAG2CPDAG import dag2cpdag

    nodes = [GraphNode(f"X{i + 1}") for i in range(dag.shape[0])]
    g = Dag(nodes)
    for i, j in zip(*np.nonzero(dag)):
        g.add_directed_edge(nodes[i], nodes[j])
    return np.asarray(dag2cpdag(g).graph)


@functools.cache
def er_np(d, deg, seed=0):
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((d, d)) < deg / max(d - 1, 1), 1)
    p = rng.permutation(d)
    return a[p][:, p]


modes("dag_to_cpdag.valid", st.dag_to_cpdag, lambda: (jnp.asarray(er_np(9, 3.0)),),
      check=lambda out: np.array_equal(np.asarray(out), cl_cpdag(er_np(9, 3.0))), which=("eager", "jit", "vmap"))
modes("dag_to_cpdag.cyclic", st.dag_to_cpdag, lambda: (jnp.asarray(CYCLIC),), words=CYCLE,
      which=("eager", "jit", "vmap"))
add("dag_to_cpdag.self_loop.eager", lambda: st.dag_to_cpdag(jnp.asarray(SELF_LOOP)), words=CYCLE)
add("dag_to_cpdag.not_square.eager", lambda: st.dag_to_cpdag(jnp.zeros((3, 4), bool)),
    words=("(d, d)", "square", "dag"))
@functools.cache
def er_blocks(num_blocks=150, size=10):
    """A large DAG made of ``num_blocks`` random 10-node DAGs, nodes shuffled, with its CPDAG from causal-learn block
    by block (the CPDAG of a disjoint union is the union of the CPDAGs)."""
    d = num_blocks * size
    dag, ref = np.zeros((d, d), bool), np.zeros((d, d), np.int32)
    for b in range(num_blocks):
        blk = er_np(size, 2.5, seed=b)
        sl = slice(b * size, (b + 1) * size)
        dag[sl, sl], ref[sl, sl] = blk, cl_cpdag(blk)
    p = np.random.default_rng(0).permutation(d)
    return dag[p][:, p], ref[p][:, p]


add("dag_to_cpdag.large_sparse.eager", lambda: st.dag_to_cpdag(jnp.asarray(er_blocks()[0])),
    check=lambda out: np.array_equal(np.asarray(out), er_blocks()[1]), slow=True, timeout=120)
add("dag_to_cpdag.medium.eager", lambda: st.dag_to_cpdag(jnp.asarray(er_np(120, 3.0))),
    check=lambda out: np.array_equal(np.asarray(out), cl_cpdag(er_np(120, 3.0))), slow=True)

# ---------------------------------------------------------------- graph I/O
add("to_networkx.entries_two.eager", lambda: st.to_networkx(G1 * 2), words=("entries", "endpoint"))
add("to_dot.not_square.eager", lambda: st.to_dot(np.zeros((2, 3), int)), words=("(d, d)", "square"))
add("named_edges.names_wrong_length.eager", lambda: st.named_edges(G1, names=["a"]), words=("names",))
add("graph_to_edges.valid.eager", lambda: st.graph_to_edges(G1),
    check=lambda out: sorted(map(tuple, np.asarray(out).tolist())) == [(0, 2, 1), (1, 2, 1), (2, 3, 0)])
add("graph_to_edges.not_square.eager", lambda: st.graph_to_edges(np.zeros((2, 3), int)), words=("(d, d)", "square"))
add("graph_to_edges.entries_two.eager", lambda: st.graph_to_edges(G1 * 2), words=("entries", "endpoint"))
add("encode_discrete.nan.eager", lambda: st.encode_discrete(_with(np.ones((4, 2)), (0, 0), np.nan)),
    words=("missing", "nan"))
add("encode_discrete.non_integer.eager", lambda: st.encode_discrete(np.full((4, 2), 0.5)), words=("integer",))
add("encode_discrete.one_dim.eager", lambda: st.encode_discrete(np.ones(4)), words=("(n, d)", "shape"))
add("encode_discrete.valid.eager", lambda: st.encode_discrete(np.array([[3, -7], [5, -7], [3, 9]])),
    check=lambda out: np.array_equal(out, [[0, 0], [1, 0], [0, 1]]))


def in_tmp(text, fn):
    fd, path = tempfile.mkstemp(suffix=".txt")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    try:
        return fn(path)
    finally:
        os.unlink(path)


MISSING = ("no such file", "not found", "exist")
for rname in ("read_causal_learn_graph", "read_causal_learn_data", "read_endpoint_matrix"):
    add(f"{rname}.missing_file.eager", lambda rname=rname: getattr(st, rname)("/nonexistent/icmlx_graph.txt"),
        words=MISSING)
    add(f"{rname}.empty_file.eager", lambda rname=rname: in_tmp("", getattr(st, rname)),
        words=("empty", "no ", "header", "graph nodes"))
add("read_causal_learn_graph.no_header.eager", lambda: in_tmp("1. X1 --> X2\n", st.read_causal_learn_graph),
    words=("graph nodes", "header"))
add("read_causal_learn_graph.unknown_node.eager",
    lambda: in_tmp("Graph Nodes:\nX1;X2\n\nGraph Edges:\n1. X1 --> X9\n", st.read_causal_learn_graph),
    words=("x9", "unknown"))
add("read_causal_learn_graph.valid.eager",
    lambda: in_tmp("Graph Nodes:\nX1;X2;X3\n\nGraph Edges:\n1. X1 --> X2\n2. X3 --- X2\n", st.read_causal_learn_graph),
    check=lambda out: np.array_equal(out[0], [[0, 1, 0], [0, 0, 1], [0, 1, 0]]) and out[1] == ["X1", "X2", "X3"])
add("read_causal_learn_graph.garbled_edge.eager",
    lambda: in_tmp("Graph Nodes:\nX1;X2\n\nGraph Edges:\n1. X1 ==> X2\n", st.read_causal_learn_graph),
    words=("edge", "line", "x1 ==> x2"))
add("read_causal_learn_data.ragged.eager", lambda: in_tmp("a b\n1 2\n3\n", st.read_causal_learn_data),
    words=("row", "column", "values", "line"))
add("read_causal_learn_data.text_cell.eager", lambda: in_tmp("a b\n1 2\n3 x\n", st.read_causal_learn_data),
    words=("convert", "number", "numeric", "'x'"))
add("read_causal_learn_data.header_mismatch.eager", lambda: in_tmp("a b c\n1 2\n3 4\n", st.read_causal_learn_data),
    words=("header",))
add("read_causal_learn_data.valid.eager", lambda: in_tmp("a b\n1 2\n3 4.5\n", st.read_causal_learn_data),
    check=lambda out: np.allclose(out[0], [[1, 2], [3, 4.5]]) and list(out[1]) == ["a", "b"])
add("read_endpoint_matrix.bad_entries.eager", lambda: in_tmp("0 5\n1 0\n", st.read_endpoint_matrix),
    words=("entries", "endpoint", "-1"))
add("read_endpoint_matrix.not_square.eager", lambda: in_tmp("0 1 0\n-1 0 0\n", st.read_endpoint_matrix),
    words=("square", "(d, d)"))
add("read_endpoint_matrix.fractional.eager", lambda: in_tmp("0 0.5\n1 0\n", st.read_endpoint_matrix),
    words=("entries", "endpoint", "integer"))
add("read_endpoint_matrix.valid.eager", lambda: in_tmp("0 -1\n1 0\n", st.read_endpoint_matrix),
    check=lambda out: np.array_equal(out, [[0, -1], [1, 0]]))
add("plot_graph.not_square.eager", lambda: st.plot_graph(np.zeros((2, 3), int)), words=("(d, d)", "square"))


@pytest.mark.parametrize("case", params(CASES))
def test_fuzz(case):
    assert_good(case)
