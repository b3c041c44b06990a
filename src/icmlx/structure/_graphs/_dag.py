"""Checks of DAG arguments at the public boundary: a square matrix without a directed cycle.

A cycle makes every routine that walks a DAG wrong or endless (a topological order does not exist, an ancestral
sampler has no order to follow, a CPDAG is undefined), so each public function that takes a DAG checks it here.
A concrete matrix is checked on the host (Kahn's algorithm, O(d^2)); a traced one gets `equinox.error_if`
on the result of `dag_levels`, whose loop is bounded by ``d`` steps, so it ends on a cyclic graph too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from icmlx._checks import check_values

__all__ = ["check_dag", "dag_levels", "host_has_cycle"]


def _cycle_message(name: str) -> str:
    return f"{name} has a cycle (a directed cycle or a self-loop); pass a DAG (acyclic adjacency, dag[i, j]: i -> j)"


def host_has_cycle(a: np.ndarray) -> bool:
    """Whether the ``(d, d)`` adjacency ``a`` (nonzero = edge) has a directed cycle (Kahn's algorithm)."""
    a = np.asarray(a) != 0
    d = a.shape[0]
    indeg = a.sum(axis=0).astype(np.int64)
    stack = np.flatnonzero(indeg == 0).tolist()
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        ch = np.flatnonzero(a[v])
        indeg[ch] -= 1
        stack.extend(ch[indeg[ch] == 0].tolist())
    return seen < d


def dag_levels(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(levels, cyclic)``: longest-path depth of each node from the roots, and whether ``a`` has a cycle.

    The relaxation stops when the levels settle or after ``d + 1`` sweeps; in a DAG no level exceeds ``d - 1``,
    while on a cycle the levels grow every sweep, so ``cyclic`` is exact and the loop always ends.
    """
    a = a.astype(bool)
    d = a.shape[0]

    def body(c):
        lev, _, it = c
        new = jnp.max(jnp.where(a, lev[:, None] + 1, 0), axis=0, initial=0)
        return new, jnp.any(new != lev), it + 1

    init = (jnp.zeros(d, jnp.int32), jnp.array(True), jnp.array(0, jnp.int32))
    lev, _, _ = jax.lax.while_loop(lambda c: c[1] & (c[2] <= d), body, init)
    return lev, jnp.any(lev >= d)


def check_dag(dag, name: str = "dag"):
    """``dag`` as a bool JAX array, after checking it is a square acyclic matrix (ValueError / error_if)."""
    shape = np.shape(dag)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name} must be a (d, d) adjacency matrix, got shape {shape}")
    dag = dag if isinstance(dag, jax.Array) else jnp.asarray(np.asarray(dag))
    if jnp.issubdtype(dag.dtype, jnp.complexfloating):
        raise TypeError(f"{name} must be a bool or 0/1 adjacency matrix, got {dag.dtype=}")
    dag = check_values(
        dag, lambda xp, v: host_has_cycle(v) if xp is np else dag_levels(v)[1], _cycle_message(name)
    )
    return dag.astype(bool)
