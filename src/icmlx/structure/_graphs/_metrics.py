"""Structure-learning metrics on endpoint matrices, and the CPDAG of a DAG."""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from icmlx._checks import check_values, is_traced
from icmlx._memory import check_memory

from ._dag import check_dag
from ._graph_io import _endpoint_traceable, as_endpoint

#: A graph as the metrics take it: a result (``PCResult``/``PCTreeResult``), an endpoint or an adjacency matrix.
GraphLike = Int[ArrayLike, "d d"] | Bool[ArrayLike, "d d"] | Any

__all__ = ["dag_to_cpdag", "shd", "skeleton_scores", "arrowhead_scores", "exact_recovery", "Scores"]


class Scores(eqx.Module):
    """Precision, recall and F1 (0/0 is reported as 1)."""

    precision: Float[Array, ""]
    recall: Float[Array, ""]
    f1: Float[Array, ""]


def dag_to_cpdag(dag: Bool[ArrayLike, "d d"] | Int[ArrayLike, "d d"]) -> Int[Array, "d d"]:
    r"""CPDAG (essential graph) of a DAG, in causal-learn's endpoint encoding.

    A concrete DAG is labelled on the host by Chickering's edge-labelling algorithm (compelled or reversible
    edges; O(d^2) memory, O(edges x degree) time). A traced one (inside ``jit``/``vmap``) keeps the arrows of
    v-structures $a \to c \leftarrow b$ (``a, b`` non-adjacent) and closes the pattern under Meek's rules
    R1-R3 (complete without background knowledge, Meek 1995); its R3 step holds ``(d, d, d)`` intermediates, so
    a size that would not fit in memory is refused at trace time.

    Args:
      dag: ``(d, d)`` bool, ``dag[i, j]`` meaning ``i -> j``.

    Returns:
      ``(d, d)`` int endpoint matrix (``g[j, i] = 1, g[i, j] = -1`` ⇔ ``i -> j``; both ``-1`` undirected).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import dag_to_cpdag
      >>> dag = jnp.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], bool)  # chain: all undirected
      >>> dag_to_cpdag(dag).tolist()
      [[0, -1, 0], [-1, 0, -1], [0, -1, 0]]

    Raises:
      ValueError: ``dag`` not square or cyclic (a runtime error under ``jit``); under ``jit``, a ``d`` whose
        ``(d, d, d)`` intermediates would not fit in memory.

    References:
      Chickering, "A transformational characterization of equivalent Bayesian network structures", UAI (1995);
      Meek, "Causal inference and causal explanation with background knowledge", UAI (1995).
    """
    dag = check_dag(dag)
    if not is_traced(dag):
        return jax.device_put(_host_cpdag(np.asarray(dag)))
    d = dag.shape[0]
    check_memory(4.0 * d**3, f"dag_to_cpdag under jit/vmap on d={d} nodes",
                 "call it outside jit (the host algorithm needs O(d^2) memory)")
    return _meek_cpdag(dag)


def _host_cpdag(a: np.ndarray) -> np.ndarray:
    """Chickering's Find-Compelled on a concrete acyclic ``a``: edges ``x -> y`` taken with ``y`` ascending and,
    into each ``y``, ``x`` descending in a topological order; each is labelled compelled or reversible."""
    d = a.shape[0]
    indeg = a.sum(axis=0).astype(np.int64)
    stack = np.flatnonzero(indeg == 0).tolist()[::-1]
    order = []
    while stack:
        v = stack.pop()
        order.append(v)
        ch = np.flatnonzero(a[v])
        indeg[ch] -= 1
        stack.extend(ch[indeg[ch] == 0].tolist())
    pos = np.empty(d, np.int64)
    pos[np.asarray(order, np.int64)] = np.arange(d)
    parents = [np.flatnonzero(a[:, y]).tolist() for y in range(d)]
    compelled = np.zeros((d, d), bool)
    labelled = np.zeros((d, d), bool)
    for y in order:
        pa = sorted(parents[y], key=lambda v: -pos[v])
        for x in pa:
            if labelled[x, y]:
                continue
            into_y = False
            for w in parents[x]:
                if compelled[w, x]:
                    if not a[w, y]:
                        into_y = True
                        break
                    compelled[w, y] = labelled[w, y] = True
            if into_y:
                compelled[pa, y] = labelled[pa, y] = True
                continue
            free = [z for z in pa if not labelled[z, y]]
            if any(z != x and not a[z, x] for z in pa):
                compelled[free, y] = True
            labelled[free, y] = True
    g = np.where(a | a.T, -1, 0)
    g[compelled.T] = 1  # arrow at y: g[y, x] = 1
    return g.astype(np.int32)


@jax.jit
def _meek_cpdag(dag):
    a = dag.astype(bool)
    skel = a | a.T
    nonadj = ~skel & ~jnp.eye(a.shape[0], dtype=bool)
    # v-structures: arrow u -> c kept if some w -> c with w non-adjacent to u
    vs = a & (jnp.einsum("uw,wc->uc", nonadj.astype(jnp.int32), a.astype(jnp.int32)) > 0)
    directed = vs  # directed[i, j]: i -> j compelled so far

    def step(c):
        dr, _ = c
        und = skel & ~dr & ~dr.T
        di = dr.astype(jnp.int32)
        ui = und.astype(jnp.int32)
        na = nonadj.astype(jnp.int32)
        # R1: a -> b - c, a !~ c  =>  b -> c
        r1 = und & (jnp.einsum("ab,ac->bc", di, na) > 0)
        # R2: a -> c -> b, a - b  =>  a -> b
        r2 = und & (di @ di > 0)
        # R3: a - c1 -> b, a - c2 -> b, c1 !~ c2, a - b  =>  a -> b
        m = jnp.einsum("ac,cb,ad,db,cd->ab", ui, di, ui, di, na)
        r3 = und & (m > 0)
        new = dr | r1 | r2 | r3
        return new, jnp.any(new != dr)

    directed, _ = jax.lax.while_loop(lambda c: c[1], step, (directed, jnp.array(True)))
    und = skel & ~directed & ~directed.T
    g = jnp.where(und, -1, 0)
    g = jnp.where(directed, -1, g)  # tail at i
    g = jnp.where(directed.T, 1, g)  # arrow at j: g[j, i] = 1
    return g.astype(jnp.int32)


def _pairs(g):
    return g != 0


def _one(g, name: str):
    if hasattr(g, "graph") and hasattr(g, "skeleton"):  # a result: its graph is an endpoint matrix
        return jnp.asarray(g.graph).astype(jnp.int32)
    if is_traced(g) and jnp.asarray(g).dtype != jnp.bool_:
        g = check_values(jnp.asarray(g), lambda xp, v: ~((v == -1) | (v == 0) | (v == 1)),
                         f"{name} has entries outside -1, 0, 1; pass an endpoint matrix (-1 tail, 1 arrow, 0 none) "
                         "or a 0/1 adjacency matrix")
    if is_traced(g):
        return _endpoint_traceable(g)
    return jnp.asarray(as_endpoint(g, name=name)[0])


def _endpoints(estimate, truth):
    """The two graphs as endpoint matrices of equal shape (converted and checked on the host when concrete)."""
    e, t = _one(estimate, "estimate"), _one(truth, "truth")
    if e.shape != t.shape:
        raise ValueError(f"estimate is {e.shape} but truth is {t.shape}; compare graphs on the same nodes")
    return e, t


def shd(estimate: GraphLike, truth: GraphLike) -> Int[Array, ""]:
    """Structural Hamming distance: unordered pairs whose endpoint pair ``(g[i,j], g[j,i])`` differs.

    This is causal-learn's ``SHD``: a missing or extra edge counts 1, and so does an edge present in both with
    different marks (a reversed arrow, an undirected edge against an arrow).

    Both graphs may be results (``PCResult``, ``PCTreeResult``), endpoint matrices (causal-learn's encoding,
    as ``pc`` returns) or adjacency matrices (bool, or 0/1 with no ``-1``: ``a[i, j]`` means ``i -> j``, a
    symmetric pair an undirected edge), e.g. the true DAG. A DAG is compared by its own arrows; compare
    equivalence classes with ``dag_to_cpdag(dag)``.

    Args:
      estimate: the learned graph.
      truth: the reference graph.

    Returns:
      int32 scalar.

    Raises:
      ValueError: for graphs of different sizes, or a matrix that is neither encoding.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import shd
      >>> int(shd(jnp.array([[0, -1], [1, 0]]), jnp.array([[0, -1], [-1, 0]])))
      1
      >>> int(shd(jnp.array([[0, -1], [1, 0]]), jnp.array([[0, 1], [0, 0]], bool)))  # 0 -> 1 against a DAG
      0
    """
    return _shd(*_endpoints(estimate, truth))


@jax.jit
def _shd(estimate, truth):
    diff = (estimate != truth) | (estimate.T != truth.T)
    return (jnp.sum(jnp.triu(diff, 1))).astype(jnp.int32)


def _prf(tp, n_est, n_true):
    fdt = jnp.zeros((), float).dtype
    tp, n_est, n_true = (jnp.asarray(v).astype(fdt) for v in (tp, n_est, n_true))
    prec = jnp.where(n_est > 0, tp / jnp.maximum(n_est, 1.0), 1.0)
    rec = jnp.where(n_true > 0, tp / jnp.maximum(n_true, 1.0), 1.0)
    f1 = jnp.where(prec + rec > 0, 2 * prec * rec / jnp.maximum(prec + rec, 1e-30), 0.0)
    return Scores(prec, rec, f1)


def skeleton_scores(estimate: GraphLike, truth: GraphLike) -> Scores:
    """Adjacency precision / recall / F1 (unordered pairs).

    Graphs in either encoding, as for `shd`.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import skeleton_scores
      >>> s = skeleton_scores(jnp.array([[0, -1], [-1, 0]]), jnp.array([[0, -1], [1, 0]]))
      >>> float(s.f1)
      1.0
    """
    return _skeleton_scores(*_endpoints(estimate, truth))


@jax.jit
def _skeleton_scores(estimate, truth):
    e = jnp.triu(_pairs(estimate), 1)
    t = jnp.triu(_pairs(truth), 1)
    return _prf(jnp.sum(e & t), jnp.sum(e), jnp.sum(t))


def arrowhead_scores(estimate: GraphLike, truth: GraphLike) -> Scores:
    """Arrowhead precision / recall / F1: arrow marks ``g[j, i] == 1`` (causal-learn ``ArrowConfusion``).

    Graphs in either encoding, as for `shd`.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import arrowhead_scores
      >>> s = arrowhead_scores(jnp.array([[0, -1], [1, 0]]), jnp.array([[0, -1], [1, 0]]))
      >>> float(s.precision), float(s.recall)
      (1.0, 1.0)
    """
    return _arrowhead_scores(*_endpoints(estimate, truth))


@jax.jit
def _arrowhead_scores(estimate, truth):
    e = estimate == 1
    t = truth == 1
    return _prf(jnp.sum(e & t), jnp.sum(e), jnp.sum(t))


def exact_recovery(estimate: GraphLike, truth: GraphLike) -> Bool[Array, ""]:
    """``True`` iff the two endpoint matrices are identical (SHD 0, every mark equal).

    Graphs in either encoding, as for `shd`.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import dag_to_cpdag, exact_recovery
      >>> g = dag_to_cpdag(jnp.array([[0, 1], [0, 0]], bool))
      >>> bool(exact_recovery(g, g)), bool(exact_recovery(g, jnp.zeros_like(g)))
      (True, False)
    """
    return _exact_recovery(*_endpoints(estimate, truth))


@jax.jit
def _exact_recovery(estimate, truth):
    return jnp.all(estimate == truth)
