"""``plot_graph``: draw a learned graph with matplotlib (optional dependency, imported when called)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from icmlx._plotting import axes_or_new, require_matplotlib

from ._graph_io import _labels, as_endpoint, graph_to_edges

__all__ = ["plot_graph"]


def _layout(d: int, edges: np.ndarray) -> np.ndarray:
    """``(d, 2)`` node positions: networkx's spring layout (fixed seed) if installed, else a circle."""
    try:
        import networkx as nx
    except ImportError:
        nx = None
    if nx is not None and d > 1:
        g = nx.Graph()
        g.add_nodes_from(range(d))
        g.add_edges_from((int(i), int(j)) for i, j, _ in edges)
        pos = nx.spring_layout(g, seed=0)
        return np.asarray([pos[k] for k in range(d)], float)
    t = 2 * np.pi * np.arange(d) / max(d, 1)
    return np.stack([np.cos(t), np.sin(t)], axis=1)


def plot_graph(
    result: Any,
    *,
    ax=None,
    names: Sequence[str] | None = None,
    pos: Mapping[Any, Sequence[float]] | np.ndarray | None = None,
    node_size: float = 600.0,
    **kwargs: Any,
):
    """Draw a graph: nodes with their labels, arrows for ``i -> j``, plain lines for ``i - j``, double arrows
    for ``i <-> j``.

    Args:
      result: a `icmlx.structure.PCResult` / `icmlx.structure.PCTreeResult`, an endpoint matrix
        or an adjacency matrix (see `icmlx.structure.to_networkx` for the encodings).
      ax: matplotlib axes to draw on (default: a new figure).
      names: node labels (default: the result's names, else ``0..d-1``).
      pos: node positions, a ``(d, 2)`` array or a mapping from label (or index) to ``(x, y)``; default
        networkx's spring layout with a fixed seed when networkx is installed, else a circle.
      node_size: marker area of the nodes (points²).
      **kwargs: passed to the edge artists (e.g. ``color=``, ``linewidth=``).

    Returns:
      The `matplotlib.axes.Axes` drawn on: one ``Line2D`` per undirected edge in ``ax.lines``, one
      ``FancyArrowPatch`` per directed or bidirected edge in ``ax.patches``, the nodes as one scatter collection
      and one text per node.

    Examples:
      >>> import matplotlib
      >>> matplotlib.use("Agg")
      >>> import numpy as np
      >>> from icmlx.structure import plot_graph
      >>> ax = plot_graph(np.array([[0, -1, 0], [1, 0, -1], [0, -1, 0]]), names=["a", "b", "c"])
      >>> len(ax.patches), len(ax.lines), [t.get_text() for t in ax.texts]
      (1, 1, ['a', 'b', 'c'])
    """
    require_matplotlib()
    from matplotlib.patches import FancyArrowPatch

    g, own = as_endpoint(result)
    d = g.shape[0]
    labels = _labels(d, own, names)
    edges = graph_to_edges(g)
    if pos is None:
        xy = _layout(d, edges)
    elif isinstance(pos, Mapping):
        xy = np.asarray([pos[lab] if lab in pos else pos[k] for k, lab in enumerate(labels)], float)
    else:
        xy = np.asarray(pos, float)
    if xy.shape != (d, 2):
        raise ValueError(f"pos must give (x, y) for each of the d={d} nodes, got shape {xy.shape}")
    ax = axes_or_new(ax)
    color = kwargs.pop("color", "0.2")
    shrink = np.sqrt(node_size) / 2 + 2
    for i, j, kind in edges.tolist():
        if kind == 0:
            ax.plot(xy[[i, j], 0], xy[[i, j], 1], color=color, zorder=1, **kwargs)
        else:
            style = "-|>" if kind == 1 else "<|-|>"
            ax.add_patch(FancyArrowPatch(xy[i], xy[j], arrowstyle=style, mutation_scale=15, color=color,
                                         shrinkA=shrink, shrinkB=shrink, zorder=1, **kwargs))
    ax.scatter(xy[:, 0], xy[:, 1], s=node_size, c="white", edgecolors="0.2", zorder=2)
    for k, lab in enumerate(labels):
        ax.text(xy[k, 0], xy[k, 1], str(lab), ha="center", va="center", zorder=3)
    ax.set_aspect("equal")
    ax.margins(0.15)
    ax.set_axis_off()
    return ax
