"""Handing a learned graph on: edge lists, networkx graphs, Graphviz DOT text, and reading what users pass back in.

Two encodings of a graph are accepted everywhere (results, metrics, plots):

* an **endpoint matrix** (causal-learn's encoding, what `icmlx.structure.pc` returns): ``g[j, i] = 1,
  g[i, j] = -1`` means ``i -> j``; both ``-1`` means ``i - j``; both ``1`` means ``i <-> j``; ``0`` no edge;
* an **adjacency matrix** (a bool matrix, or any matrix with no ``-1`` entry, e.g. a DAG from
  `icmlx.structure.random_er_dag` or ``networkx.to_numpy_array``): ``a[i, j]`` means ``i -> j``, and
  ``a[i, j] = a[j, i] = 1`` means the undirected edge ``i - j``.

A matrix of 0/1 integers is thus read as an adjacency matrix; an endpoint matrix whose only edges are bidirected
has no ``-1`` either, so pass such a graph as a result object (``PCResult``) rather than as a bare matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["graph_to_edges", "adjacency_to_endpoint", "as_endpoint", "named_edges", "to_networkx", "to_dot"]

#: Names of the edge kinds of an edge list row ``(i, j, kind)``.
EDGE_KINDS = ("undirected", "directed", "bidirected")


def graph_to_edges(graph: np.ndarray) -> np.ndarray:
    """Edge list ``(i, j, kind)`` of an endpoint matrix (see `icmlx.structure.PCResult`).

    Args:
      graph: ``(d, d)`` int endpoint matrix (causal-learn encoding).

    Returns:
      ``(e, 3)`` int32 NumPy array, rows ``(i, j, kind)`` with kind ``0`` = ``i - j``, ``1`` = ``i -> j``,
      ``2`` = ``i <-> j``.

    Examples:
      >>> import numpy as np
      >>> from icmlx.structure import graph_to_edges
      >>> g = np.array([[0, -1, 0], [1, 0, -1], [0, -1, 0]])  # 0 -> 1 - 2
      >>> graph_to_edges(g).tolist()
      [[0, 1, 1], [1, 2, 0]]

    Raises:
      ValueError: a non-square matrix or entries outside ``{-1, 0, 1}``.
    """
    g = np.asarray(graph)
    _check_square(g, "graph")
    if g.dtype != bool and not np.all(np.isin(g, (-1, 0, 1))):
        bad = sorted(set(np.unique(g).tolist()) - {-1, 0, 1})[:5]
        raise ValueError(f"graph has entries {bad}; pass an endpoint matrix (-1 tail, 1 arrow, 0 none)")
    iu, ju = np.nonzero(np.triu((g != 0) | (g.T != 0), 1))
    a, b = g[iu, ju], g[ju, iu]  # mark at i, mark at j
    kind = np.full(iu.shape, 2, np.int32)
    kind[(a == -1) & (b == -1)] = 0
    fwd = (a == -1) & (b == 1)
    back = (a == 1) & (b == -1)
    kind[fwd | back] = 1
    i = np.where(back, ju, iu)
    j = np.where(back, iu, ju)
    return np.stack([i, j, kind], axis=1).astype(np.int32).reshape(-1, 3)


def adjacency_to_endpoint(adjacency):
    """Endpoint matrix of an adjacency matrix (``a[i, j]``: ``i -> j``; symmetric pairs undirected); jittable."""
    xp = jnp if isinstance(adjacency, jax.Array) else np
    a = adjacency.astype(bool)
    a = a & ~xp.eye(a.shape[0], dtype=bool)
    return xp.where(a, -1, xp.where(a.T, 1, 0)).astype(xp.int32)


def _endpoint_traceable(g):
    """The endpoint matrix of ``g`` under the module's rule (bool, or no ``-1`` entry: adjacency); jittable."""
    g = jnp.asarray(g)
    if g.dtype == jnp.bool_:
        return adjacency_to_endpoint(g)
    gi = g.astype(jnp.int32)
    return jnp.where(jnp.any(gi == -1), gi, adjacency_to_endpoint(gi != 0))


def _check_square(g: np.ndarray, name: str) -> None:
    if g.ndim != 2 or g.shape[0] != g.shape[1]:
        raise ValueError(f"{name} must be a (d, d) graph matrix, got shape {g.shape}")


def as_endpoint(graph: Any, *, name: str = "graph") -> tuple[np.ndarray, tuple[str, ...] | None]:
    """``(endpoint matrix, names)`` of a result (``.graph``, ``.names``) or a bare matrix, on the host.

    Raises:
      ValueError: for a non-square matrix or entries outside ``{-1, 0, 1}`` (or an inconsistent endpoint pair).
    """
    names = getattr(graph, "names", None)
    if hasattr(graph, "graph") and hasattr(graph, "skeleton"):
        return np.asarray(graph.graph).astype(np.int32), names
    g = np.asarray(graph)
    _check_square(g, name)
    if g.dtype == bool:
        return adjacency_to_endpoint(g), None
    if not np.all(np.isin(g, (-1, 0, 1))):
        bad = sorted(set(np.unique(g).tolist()) - {-1, 0, 1})[:5]
        raise ValueError(
            f"{name} has entries {bad}; pass an endpoint matrix (-1 tail, 1 arrow, 0 none) or a 0/1 adjacency matrix"
        )
    if not np.any(g == -1):
        return adjacency_to_endpoint(g != 0), None
    one_sided = (g != 0) != (g.T != 0)
    if one_sided.any():
        i, j = (int(v[0]) for v in np.nonzero(one_sided))
        raise ValueError(
            f"{name} mixes encodings: entry [{i}, {j}] = {int(g[i, j])} but [{j}, {i}] = {int(g[j, i])}; an endpoint "
            "matrix marks both ends of an edge (use a bool matrix for a DAG adjacency)"
        )
    return g.astype(np.int32), None


def edge_kinds(graph: Any) -> np.ndarray:
    """``graph_to_edges`` of anything `as_endpoint` accepts."""
    return graph_to_edges(as_endpoint(graph)[0])


def _labels(d: int, names: Sequence[str] | None, given: Sequence[str] | None) -> list:
    labels = given if given is not None else names
    if labels is None:
        return list(range(d))
    labels = [str(v) for v in labels]
    if len(labels) != d:
        raise ValueError(f"names has {len(labels)} entries for a graph on d={d} nodes")
    return labels


def to_networkx(graph: Any, names: Sequence[str] | None = None):
    """The graph as a `networkx.DiGraph` (needs networkx).

    Convention: ``i -> j`` is the edge ``(i, j)`` with ``kind="directed"``; ``i - j`` is the pair of edges
    ``(i, j)`` and ``(j, i)``, both with ``kind="undirected"``; ``i <-> j`` the pair with ``kind="bidirected"``.
    Nodes are the names when known (a DataFrame's columns, or ``names=``), else ``0..d-1``; every node carries its
    column number as the attribute ``index``, and isolated nodes are kept.

    Args:
      graph: a `icmlx.structure.PCResult` / `icmlx.structure.PCTreeResult`, an endpoint matrix, or
        an adjacency matrix (see the module notes).
      names: node labels overriding the result's.

    Returns:
      ``networkx.DiGraph``.

    Examples:
      >>> import numpy as np
      >>> from icmlx.structure import to_networkx
      >>> g = to_networkx(np.array([[0, -1, 0], [1, 0, -1], [0, -1, 0]]), names=["a", "b", "c"])  # a -> b - c
      >>> sorted(g.edges(data="kind"))
      [('a', 'b', 'directed'), ('b', 'c', 'undirected'), ('c', 'b', 'undirected')]
    """
    try:
        import networkx as nx
    except ImportError as err:  # pragma: no cover - exercised only without networkx
        raise ImportError("to_networkx needs networkx, which is not installed: pip install networkx") from err
    g, own = as_endpoint(graph)
    labels = _labels(g.shape[0], own, names)
    out = nx.DiGraph()
    out.add_nodes_from((lab, {"index": k}) for k, lab in enumerate(labels))
    for i, j, kind in graph_to_edges(g).tolist():
        out.add_edge(labels[i], labels[j], kind=EDGE_KINDS[kind])
        if kind != 1:
            out.add_edge(labels[j], labels[i], kind=EDGE_KINDS[kind])
    return out


def _dot_id(label) -> str:
    text = str(label).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def to_dot(graph: Any, names: Sequence[str] | None = None, *, title: str = "G") -> str:
    """The graph as Graphviz DOT text (no graphviz needed to write it; render with ``dot -Tpng``).

    ``i -> j`` is written as an arrow, ``i - j`` as ``[dir=none]`` and ``i <-> j`` as ``[dir=both]`` in a
    ``digraph``; every node is listed, isolated ones included. Labels as in `to_networkx`.

    Args:
      graph: a result, an endpoint matrix or an adjacency matrix.
      names: node labels overriding the result's.
      title: the graph's name in the DOT text.

    Returns:
      DOT source text.

    Examples:
      >>> import numpy as np
      >>> from icmlx.structure import to_dot
      >>> print(to_dot(np.array([[0, -1, 0], [1, 0, -1], [0, -1, 0]]), names=["a", "b", "c"]))
      digraph "G" {
        "a";
        "b";
        "c";
        "a" -> "b";
        "b" -> "c" [dir=none];
      }
    """
    g, own = as_endpoint(graph)
    labels = _labels(g.shape[0], own, names)
    lines = [f"digraph {_dot_id(title)} {{"]
    lines += [f"  {_dot_id(lab)};" for lab in labels]
    style = {0: " [dir=none]", 1: "", 2: " [dir=both]"}
    for i, j, kind in graph_to_edges(g).tolist():
        lines.append(f"  {_dot_id(labels[i])} -> {_dot_id(labels[j])}{style[kind]};")
    lines.append("}")
    return "\n".join(lines)


def graph_summary(graph: Any) -> dict:
    """``{d, num_edges, directed, undirected, bidirected}`` of a concrete graph (for ``__repr__``)."""
    g, _ = as_endpoint(graph)
    kinds = graph_to_edges(g)[:, 2]
    return {
        "d": g.shape[0],
        "num_edges": int(kinds.size),
        "directed": int(np.sum(kinds == 1)),
        "undirected": int(np.sum(kinds == 0)),
        "bidirected": int(np.sum(kinds == 2)),
    }


def result_repr(res, extra: dict) -> str:
    """``PCResult(d=8, num_edges=9, directed=5, undirected=4, num_tests=123, names=(...))`` (or the field
    summary while traced)."""
    from icmlx._checks import is_traced
    from icmlx._repr import record_repr, summarise

    if is_traced(res.graph):
        return record_repr(res)
    info = graph_summary(res)
    if not info["bidirected"]:
        info.pop("bidirected")
    info.update(extra)
    if res.names is not None:
        info["names"] = res.names
    body = ", ".join(f"{k}={summarise(v) if not isinstance(v, int) else v}" for k, v in info.items())
    return f"{type(res).__name__}({body})"


def named_edges(graph: Any, names: Sequence[str] | None = None) -> list[tuple]:
    """``[(a, b, kind), ...]``: the edge list with node labels and kind names (``"directed"`` means ``a -> b``).

    Examples:
      >>> import numpy as np
      >>> from icmlx.structure import named_edges
      >>> named_edges(np.array([[0, 1], [0, 0]], bool), names=["rain", "wet"])
      [('rain', 'wet', 'directed')]
    """
    g, own = as_endpoint(graph)
    labels = _labels(g.shape[0], own, names)
    return [(labels[i], labels[j], EDGE_KINDS[k]) for i, j, k in graph_to_edges(g).tolist()]


class GraphResult(eqx.Module):
    """Base of the graph records (`PCResult`, `PCTreeResult`): the ways a graph goes on to the next
    tool. Subclasses declare ``graph``, ``num_tests`` and ``names``."""

    def to_networkx(self, names=None):
        """The graph as a ``networkx.DiGraph`` (`icmlx.structure.to_networkx`)."""
        return to_networkx(self, names)

    def to_dot(self, names=None) -> str:
        """The graph as Graphviz DOT text (`icmlx.structure.to_dot`)."""
        return to_dot(self, names)

    def named_edges(self) -> list[tuple]:
        """``[(a, b, kind), ...]`` with node names (or numbers) and kind ``"directed"``/``"undirected"``/...."""
        return named_edges(self)

    def __repr__(self) -> str:
        return result_repr(self, {"num_tests": self.num_tests})
