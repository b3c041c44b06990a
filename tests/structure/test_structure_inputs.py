"""What users hold and pass on: DataFrames and names, categorical columns, networkx/DOT/plots, SHD on a DAG,
progress, and pc_tree's input checks. Each reference is built here independently of icmlx's own conversions
(networkx from the matrix entries, SciPy's chi2_contingency, causal-learn's SHD and PC)."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.structure import (
    BackgroundKnowledge,
    arrowhead_scores,
    dag_to_cpdag,
    encode_discrete,
    exact_recovery,
    named_edges,
    pc,
    pc_tree,
    plot_graph,
    random_er_dag,
    random_polyforest,
    sample_linear_gaussian,
    shd,
    skeleton_scores,
    to_dot,
    to_networkx,
)

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def gauss():
    k = jax.random.key(3)
    dag = random_er_dag(k, 6, 2.0)
    x = np.asarray(sample_linear_gaussian(k, dag, 800))
    return np.asarray(dag), x


def _expected_marks(g):
    """{(a, b): kind} read entry by entry from an endpoint matrix (the encoding's definition)."""
    out = {}
    d = g.shape[0]
    for i in range(d):
        for j in range(d):
            if i == j or g[i, j] == 0:
                continue
            if g[i, j] == -1 and g[j, i] == 1:
                out[(i, j)] = "directed"
            elif g[i, j] == -1 and g[j, i] == -1:
                out[(i, j)] = "undirected"
            elif g[i, j] == 1 and g[j, i] == 1:
                out[(i, j)] = "bidirected"
    return out


# ---------------------------------------------------------------- DataFrames and names
def test_pc_on_a_dataframe_keeps_names_and_gives_the_array_result(gauss):
    dag, x = gauss
    cols = ["age", "bmi", "bp", "chol", "diet", "exercise"]
    df = pd.DataFrame(x, columns=cols)
    a, b = pc(df), pc(x)
    np.testing.assert_array_equal(np.asarray(a.graph), np.asarray(b.graph))
    assert a.names == tuple(cols) and b.names is None
    expected = {(cols[i], cols[j], kind) for (i, j), kind in _expected_marks(np.asarray(a.graph)).items()
                if kind == "directed" or i < j}
    assert set(named_edges(a)) == expected
    assert set(a.named_edges()) == expected
    t = pc_tree(df.astype(np.float32), alpha=0.01)
    assert t.names == tuple(cols)
    np.testing.assert_array_equal(np.asarray(t.graph), np.asarray(pc_tree(x.astype(np.float32), alpha=0.01).graph))
    assert pc(x, names=cols).names == tuple(cols)
    with pytest.raises(ValueError, match="6 columns"):
        pc(x, names=cols[:5])


def test_background_knowledge_by_name_is_placed_by_the_data_names():
    # oracle PC on the chain a - b - c (all undirected); requiring b -> a by name must orient exactly that edge
    dag = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], bool)
    names = ["a", "b", "c"]
    bk = BackgroundKnowledge.from_edges(["c", "b", "a"], required=[("b", "a")])  # another order than the data
    res = pc(None, ci_test="d_separation", true_dag=dag, names=names, background_knowledge=bk)
    assert set(res.named_edges()) == {("b", "a", "directed"), ("b", "c", "undirected")}
    hand = np.zeros((3, 3), bool)
    hand[1, 0] = True  # b -> a in the data's order
    np.testing.assert_array_equal(np.asarray(bk.required)[np.ix_([2, 1, 0], [2, 1, 0])], hand)
    tiers = BackgroundKnowledge.from_edges(names, tiers={"a": 0, "c": 1})
    hand = np.zeros((3, 3), bool)
    hand[2, 0] = True  # c (tier 1) -> a (tier 0) forbidden; b has no tier
    np.testing.assert_array_equal(np.asarray(tiers.forbidden), hand)
    with pytest.raises(ValueError, match=r"unknown variable 'd'"):
        BackgroundKnowledge.from_edges(names, forbidden=[("a", "d")])
    with pytest.raises(ValueError, match="no names are known"):
        BackgroundKnowledge.from_edges(3, forbidden=[("a", "b")])
    other = BackgroundKnowledge.from_edges(["a", "b", "zz"], required=[("a", "b")])
    with pytest.raises(ValueError, match=r"\['zz'\].*not columns"):
        pc(None, ci_test="d_separation", true_dag=dag, names=names, background_knowledge=other)


# ---------------------------------------------------------------- categorical columns
def _categorical_frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(["low", "mid", "high"], n)
    b = np.where(rng.random(n) < 0.7, np.where(a == "low", "no", "yes"), rng.choice(["no", "yes"], n))
    c = pd.Categorical(np.where(rng.random(n) < 0.7, b, rng.choice(["no", "yes"], n)))
    e = rng.random(n) < 0.5  # bool, independent
    return pd.DataFrame({"a": a, "b": b, "c": c, "e": e})


def _codes_by_hand(df):
    return np.stack([np.unique(np.asarray(df[c]).astype(str), return_inverse=True)[1] for c in df.columns], 1)


def test_text_categorical_and_bool_columns_run_chisq_like_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    df = _categorical_frame()
    codes = _codes_by_hand(df)
    np.testing.assert_array_equal(np.asarray(encode_discrete(df)), codes)
    res = pc(df, ci_test="chisq", max_depth=0)
    assert res.names == ("a", "b", "c", "e")
    d = codes.shape[1]
    for i in range(d):
        for j in range(i + 1, d):
            table = np.zeros((codes[:, i].max() + 1, codes[:, j].max() + 1))
            np.add.at(table, (codes[:, i], codes[:, j]), 1)
            ref = scipy_stats.chi2_contingency(table, correction=False).pvalue
            np.testing.assert_allclose(float(res.max_pvalue[i, j]), ref, rtol=2e-4, atol=1e-7)
    # the same data with missing labels: an error naming the column, or rows dropped on request
    bad = df.astype({"a": object}).copy()
    bad.loc[5, "a"] = None
    with pytest.raises(ValueError, match=r"\['a'\].*listwise"):
        pc(bad, ci_test="chisq")
    assert pc(bad, ci_test="chisq", nan_policy="listwise").graph.shape == (4, 4)
    with pytest.raises(TypeError, match=r"\['a', 'b', 'c'\].*chisq"):
        pc(df, ci_test="fisherz")


@pytest.mark.x64
@pytest.mark.x64_only
@pytest.mark.parametrize("method", ["chisq", "gsq"])
def test_categorical_frame_matches_causal_learn_on_hand_codes(method):
    cl = pytest.importorskip("causallearn.search.ConstraintBased.PC")
    df = _categorical_frame(n=900, seed=1)
    cg = cl.pc(_codes_by_hand(df).astype(float), alpha=0.05, indep_test=method, show_progress=False)
    with jax.enable_x64(True):
        res = pc(df, ci_test=method, alpha=0.05)
    np.testing.assert_array_equal(np.asarray(res.graph), cg.G.graph)


def test_fisherz_on_category_codes_warns_at_the_caller():
    import warnings

    codes = np.random.default_rng(4).integers(0, 3, size=(200, 3))
    with pytest.warns(UserWarning, match="chisq") as rec:
        pc(codes)
    assert rec[0].filename == __file__  # the warning points at the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pc(np.random.default_rng(4).integers(0, 50, size=(200, 3)))  # many levels: a count, no warning


def test_bernoulli_pc_tree_codes_two_valued_columns():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(2)
    n = 500
    a = rng.random(n) < 0.5
    b = np.where(rng.random(n) < 0.8, a, rng.random(n) < 0.5)
    df = pd.DataFrame({"a": a, "b": np.where(b, "yes", "no"), "c": pd.Categorical(np.where(rng.random(n) < .5, 1, 2))})
    res = pc_tree(df, ci_test="bernoulli", alpha=0.01)
    codes = _codes_by_hand(df)
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        table = np.zeros((2, 2))
        np.add.at(table, (codes[:, i], codes[:, j]), 1)
        ref = scipy_stats.chi2_contingency(table, correction=False).pvalue
        np.testing.assert_allclose(-float(res.marginal_score[i, j]), ref, rtol=2e-4, atol=1e-6)
    with pytest.raises(ValueError, match=r"\['x'\].*more than two"):
        pc_tree(pd.DataFrame({"x": rng.integers(0, 3, n), "y": a}), ci_test="bernoulli")


# ---------------------------------------------------------------- handing the graph on
def test_to_networkx_and_dot_match_the_matrix_entries():
    nx = pytest.importorskip("networkx")
    for seed in range(4):
        dag = random_er_dag(jax.random.key(seed), 7, 2.0)
        res = pc(None, ci_test="d_separation", true_dag=dag)  # CPDAG: directed and undirected edges
        g = np.asarray(res.graph)
        expected = _expected_marks(g)
        G = res.to_networkx()
        assert isinstance(G, nx.DiGraph) and sorted(G.nodes) == list(range(7))  # isolated nodes kept
        assert {(u, v): k for u, v, k in G.edges(data="kind")} == expected
        names = [f"v{i}" for i in range(7)]
        Gn = to_networkx(g, names=names)
        assert {(u, v) for u, v in Gn.edges} == {(names[i], names[j]) for i, j in expected}
        dot_named = to_dot(g, names=names)
        assert all(f'"{names[i]}" -> "{names[j]}";' in dot_named for (i, j), k in expected.items() if k == "directed")
        dot = res.to_dot()
        assert set(re.findall(r'^  "(\w+)";$', dot, re.M)) == {str(i) for i in range(7)}
        arrows = re.findall(r'^  "(\w+)" -> "(\w+)"( \[dir=none\]| \[dir=both\])?;$', dot, re.M)
        got = {}
        for u, v, style in arrows:
            kind = {"": "directed", " [dir=none]": "undirected", " [dir=both]": "bidirected"}[style]
            got[(int(u), int(v))] = kind
            if kind != "directed":
                got[(int(v), int(u))] = kind
        assert got == expected
    # a bool DAG is an adjacency matrix: networkx's own reader gives the same edges
    dag = np.asarray(random_er_dag(jax.random.key(9), 8, 2.0))
    ref = nx.from_numpy_array(dag.astype(int), create_using=nx.DiGraph)
    assert set(to_networkx(dag).edges) == set(ref.edges)
    assert set(to_networkx(dag.astype(np.int32)).edges) == set(ref.edges)
    with pytest.raises(ValueError, match="mixes encodings"):
        to_networkx(np.array([[0, -1], [0, 0]]))


def test_pc_tree_result_has_edges_in_pc_result_format():
    for seed in range(3):
        dag = random_polyforest(jax.random.key(seed), 9)
        tree = pc_tree(dag, ci_test="d_separation")
        full = pc(None, ci_test="d_separation", true_dag=dag)
        np.testing.assert_array_equal(np.asarray(tree.edges), np.asarray(full.edges))
        expected = sorted((i, j, {"undirected": 0, "directed": 1}[k])
                          for (i, j), k in _expected_marks(np.asarray(dag_to_cpdag(dag))).items()
                          if k == "directed" or i < j)
        assert sorted(map(tuple, np.asarray(tree.edges).tolist())) == expected


def test_repr_counts_edges(gauss):
    dag, x = gauss
    df = pd.DataFrame(x, columns=list("ABCDEF"))
    res = pc(df)
    kinds = list(_expected_marks(np.asarray(res.graph)).values())
    directed, undirected = kinds.count("directed"), kinds.count("undirected") // 2
    text = repr(res)
    assert text.startswith(f"PCResult(d=6, num_edges={directed + undirected}, directed={directed}, "
                           f"undirected={undirected}, num_tests={int(res.num_tests)}")
    assert "names=('A', 'B', 'C', 'D', 'E', 'F')" in text
    assert repr(pc_tree(np.asarray(dag), ci_test="d_separation")).startswith("PCTreeResult(d=6, num_edges=")


def test_plot_graph_draws_one_artist_per_edge():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch

    dag = random_er_dag(jax.random.key(4), 6, 2.0)
    res = pc(None, ci_test="d_separation", true_dag=dag, names=list("uvwxyz"))
    kinds = list(_expected_marks(np.asarray(res.graph)).values())
    pos = np.stack([np.arange(6.0), np.arange(6.0) ** 2], axis=1)
    fig, ax = plt.subplots()
    out = plot_graph(res, ax=ax, pos=pos)
    assert out is ax
    assert len(ax.lines) == kinds.count("undirected") // 2
    assert sum(isinstance(p, FancyArrowPatch) for p in ax.patches) == kinds.count("directed")
    assert [t.get_text() for t in ax.texts] == list("uvwxyz")
    np.testing.assert_allclose(np.asarray(ax.collections[0].get_offsets()), pos)
    plt.close(fig)


def test_plot_graph_falls_back_to_a_circle_without_networkx(monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import sys

    import matplotlib.pyplot as plt

    monkeypatch.setitem(sys.modules, "networkx", None)  # import networkx now raises ImportError
    ax = plot_graph(np.array([[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0]], bool))
    t = 2 * np.pi * np.arange(4) / 4
    np.testing.assert_allclose(np.asarray(ax.collections[0].get_offsets()), np.stack([np.cos(t), np.sin(t)], 1),
                               atol=1e-12)
    plt.close(ax.figure)


# ---------------------------------------------------------------- SHD against a DAG
def _cl_general_graph(endpoint, nodes):
    from causallearn.graph.GeneralGraph import GeneralGraph

    g = GeneralGraph(nodes)
    g.graph = np.asarray(endpoint).astype(int)
    return g


def test_shd_against_a_bool_dag_matches_causal_learn(gauss):
    pytest.importorskip("causallearn")
    from causallearn.graph.Dag import Dag
    from causallearn.graph.GraphNode import GraphNode
    from causallearn.graph.SHD import SHD

    for seed in range(4):
        k = jax.random.key(50 + seed)
        dag = np.asarray(random_er_dag(k, 7, 2.0))
        est = pc(np.asarray(sample_linear_gaussian(k, jnp.asarray(dag), 150)), alpha=0.05)
        nodes = [GraphNode(f"X{i + 1}") for i in range(7)]
        truth = Dag(nodes)
        for i, j in zip(*np.nonzero(dag)):
            truth.add_directed_edge(nodes[i], nodes[j])
        ref = SHD(truth, _cl_general_graph(est.graph, nodes)).get_shd()
        assert int(shd(est.graph, dag)) == ref
        assert int(shd(est, dag.astype(np.int32))) == ref  # a result, and a 0/1 integer DAG
        assert int(jax.jit(shd)(est.graph, jnp.asarray(dag))) == ref  # the same rule under jit
        assert int(shd(dag, est)) == ref
        ref_cpdag = SHD(_cl_general_graph(dag_to_cpdag(jnp.asarray(dag)), nodes),
                        _cl_general_graph(est.graph, nodes)).get_shd()
        assert int(shd(est, dag_to_cpdag(jnp.asarray(dag)))) == ref_cpdag
    # scores and exact recovery read a DAG the same way: a DAG against its own arrows is recovered exactly
    own_arrows = np.where(dag, -1, 0) + np.where(dag.T, 1, 0)  # the DAG written in the endpoint encoding
    assert bool(exact_recovery(own_arrows, dag)) and not bool(exact_recovery(own_arrows.T, dag))
    assert float(skeleton_scores(dag_to_cpdag(jnp.asarray(dag)), dag).f1) == 1.0  # same skeleton
    assert float(arrowhead_scores(own_arrows, dag).f1) == 1.0
    with pytest.raises(ValueError, match=r"estimate is \(7, 7\) but truth is \(6, 6\)"):
        shd(est.graph, dag[:6, :6])
    with pytest.raises(ValueError, match=r"entries \[-2"):
        shd(2 * np.asarray(est.graph), dag)


# ---------------------------------------------------------------- progress
def test_pc_progress_reports_levels_and_tests(gauss, capsys):
    _, x = gauss
    res = pc(x, progress=True)
    err = capsys.readouterr().err
    assert "pc:" in err and "depth=" in err
    last = re.findall(r"tests=(\d+)", err)[-1]
    assert int(last) == int(res.num_tests)
    pc(x, progress=False)
    assert capsys.readouterr().err == ""


def test_pc_tree_progress_reports_every_chunk_from_the_program(capsys):
    x = np.random.default_rng(1).normal(size=(300, 7)).astype(np.float32)
    plain = pc_tree(x, chunk_size=3, progress=False)
    assert capsys.readouterr().err == ""
    res = pc_tree(x, chunk_size=3, progress=True)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("pc_tree:")]
    assert len(lines) == 3  # ceil(7 / 3) chunks of separators
    assert sorted(lines)[-1] == "pc_tree: step 3/3 [separators=7]"
    np.testing.assert_array_equal(np.asarray(res.graph), np.asarray(plain.graph))


# ---------------------------------------------------------------- pc_tree's input checks
def test_pc_tree_checks_its_data_like_pc():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 4)).astype(np.float32)
    const = x.copy()
    const[:, 2] = 1.0
    with pytest.warns(UserWarning, match=r"constant.*X3"):
        assert not np.asarray(pc_tree(const).skeleton)[2].any()
    dup = x.copy()
    dup[:, 3] = dup[:, 0]
    # pc keeps a duplicated pair adjacent; pc_tree's scores are not finite for it, so it refuses, naming the pair
    with pytest.warns(UserWarning, match=r"duplicated.*X1.*X4"), pytest.raises(ValueError, match=r"duplicated.*X1.*X4"):
        pc_tree(dup)
    with pytest.raises(ValueError, match=r"n > 4"):
        pc_tree(x[:4])
    nan = x.copy()
    nan[7, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN/Inf.*X2"):
        pc_tree(nan)
    for bad in (-0.1, 0.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="threshold"):
            pc_tree(x, threshold=bad)
    with pytest.raises(ValueError, match="threshold"):
        pc_tree(x, ci_test="nonparametric", threshold=float("inf"))
    with pytest.raises(TypeError, match=r"numeric data; columns \['t'\]"):
        pc_tree(pd.DataFrame({"t": ["a", "b"] * 100, "u": x[:, 0]}))
    # inside the caller's jit the host checks step aside and the learner still runs
    eager = pc_tree(x, alpha=0.01)
    traced = jax.jit(lambda v: pc_tree(v, alpha=0.01).graph)(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(traced), np.asarray(eager.graph))


def test_pc_refuses_a_level_that_would_not_fit_in_memory(monkeypatch):
    # the per-level estimate, exercised without allocating: pretend 3 kB are free. One common factor keeps every
    # pair dependent, so level 1 runs 5 * 4 * 3 = 60 tests (about 7 kB of rows) after level 0's 20 (about 2 kB);
    # the (d, d, d) sepset record of d = 5 needs 250 B
    from icmlx import _memory

    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 1)) + 0.5 * rng.standard_normal((200, 5))
    monkeypatch.setattr(_memory, "available_bytes", lambda: 3000.0)
    with pytest.raises(ValueError, match=r"level 1 .*max_depth=0"):
        pc(x)
    assert pc(x, max_depth=0).graph.shape == (5, 5)
