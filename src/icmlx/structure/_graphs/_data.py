"""Random graphs (poly-forests, Erdős–Rényi DAGs), SEM samplers, and causal-learn text-format readers."""

import functools
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from icmlx._checks import check_int, check_number, check_values, is_traced
from icmlx._types import PRNGKey, RealScalarLike

from ._dag import check_dag, dag_levels

__all__ = [
    "random_polyforest",
    "random_er_dag",
    "topological_order",
    "sample_linear_gaussian",
    "sample_bernoulli",
    "sample_nonlinear",
    "read_causal_learn_graph",
    "read_causal_learn_data",
    "read_endpoint_matrix",
]


def _check_size(v, name: str) -> int:
    return check_int(v, name, minimum=0)


def check_real(v, name: str) -> None:
    """A real number (or real array): else the shared ``TypeError``; the range is the caller's to check."""
    try:
        check_number(v, name, allow_inf=True, allow_array=True)
    except ValueError:  # NaN: reported by the caller's range check
        pass


def _check_range(v, name: str, lo: float, hi: float, what: str):
    """``v`` (a number, or traced) inside ``[lo, hi]``: ValueError on the host, error_if when traced."""
    msg = f"{name} must lie in [{lo:g}, {hi:g}] ({what}), got {name}={v!r}"
    if is_traced(v):
        return check_values(v, lambda xp, x: ~((x >= lo) & (x <= hi)), f"{name} must lie in [{lo:g}, {hi:g}] ({what})")
    check_real(v, name)
    if not np.ndim(v) == 0 or not (lo <= float(np.asarray(v)) <= hi):
        raise ValueError(msg)
    return v


def _check_weights(w_low, w_high):
    """``0 <= w_low <= w_high < inf`` (the edge-weight magnitudes of the samplers)."""
    msg = f"w_low and w_high must be finite with 0 <= w_low <= w_high, got {w_low=!r}, {w_high=!r}"
    if is_traced((w_low, w_high)):
        lo = jnp.asarray(w_low)
        w_high = check_values(jnp.asarray(w_high), lambda xp, hi: ~(xp.isfinite(hi) & xp.isfinite(lo) & (lo >= 0)
                                                                      & (lo <= hi)), msg.split(", got")[0])
        return lo, w_high
    check_real(w_low, "w_low")
    check_real(w_high, "w_high")
    lo, hi = float(np.asarray(w_low)), float(np.asarray(w_high))
    if not (np.isfinite(lo) and np.isfinite(hi) and 0.0 <= lo <= hi):
        raise ValueError(msg)
    return w_low, w_high


def random_polyforest(key: PRNGKey, d: int, drop_prob: RealScalarLike = 0.0) -> Bool[Array, "d d"]:
    r"""Random poly-forest on ``d`` nodes: a random recursive tree, random edge directions, each edge dropped
    with probability ``drop_prob``, then randomly relabelled.

    Node ``i >= 1`` attaches to a uniform earlier node; the edge points either way with probability 1/2 (every
    orientation of a tree is a poly-tree).

    Args:
      key: PRNG key.
      d: number of nodes (static).
      drop_prob: probability of deleting each tree edge (a forest).

    Returns:
      ``(d, d)`` bool DAG, ``dag[i, j]`` meaning ``i -> j``.

    Examples:
      >>> import jax
      >>> from icmlx.structure import random_polyforest
      >>> dag = random_polyforest(jax.random.key(0), 6)
      >>> int(dag.sum())
      5

    Raises:
      ValueError: ``d`` not a non-negative integer, or ``drop_prob`` outside ``[0, 1]``.
    """
    d = _check_size(d, "d")
    drop_prob = _check_range(drop_prob, "drop_prob", 0.0, 1.0, "a probability")
    if d == 0:
        return jnp.zeros((0, 0), bool)
    return _random_polyforest(key, d, drop_prob)


@functools.partial(jax.jit, static_argnames=("d",))
def _random_polyforest(key, d, drop_prob):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    i = jnp.arange(1, d, dtype=jnp.int32)
    u = jax.random.uniform(k1, (d - 1,))
    parent = jnp.floor(u * i.astype(u.dtype)).astype(jnp.int32)
    flip = jax.random.bernoulli(k2, 0.5, (d - 1,))
    keep = ~jax.random.bernoulli(k3, drop_prob, (d - 1,))
    src = jnp.where(flip, i, parent)
    dst = jnp.where(flip, parent, i)
    a = jnp.zeros((d, d), bool).at[src, dst].set(keep)
    perm = jax.random.permutation(k4, d)
    return a[perm][:, perm]


def random_er_dag(key: PRNGKey, d: int, expected_degree: RealScalarLike = 2.0) -> Bool[Array, "d d"]:
    r"""Erdős–Rényi DAG: each pair ``i < j`` (in a random order) is an edge with probability
    $p = \text{expected\_degree}/(d-1)$.

    Examples:
      >>> import jax
      >>> from icmlx.structure import random_er_dag
      >>> dag = random_er_dag(jax.random.key(0), 5, 2.0)
      >>> bool((dag & dag.T).any())
      False

    Raises:
      ValueError: ``d`` not a non-negative integer, or ``expected_degree`` outside ``[0, d - 1]`` (an edge
        probability outside ``[0, 1]``).
    """
    d = _check_size(d, "d")
    expected_degree = _check_range(expected_degree, "expected_degree", 0.0, float(d - 1) if d > 1 else np.inf,
                                   "the edge probability expected_degree / (d - 1) must be in [0, 1]")
    return _random_er_dag(key, d, expected_degree)


@functools.partial(jax.jit, static_argnames=("d",))
def _random_er_dag(key, d, expected_degree):
    k1, k2 = jax.random.split(key)
    p = expected_degree / max(d - 1, 1)
    upper = jnp.triu(jax.random.bernoulli(k1, p, (d, d)), 1)
    perm = jax.random.permutation(k2, d)
    return upper[perm][:, perm]


def topological_order(dag: Bool[ArrayLike, "d d"] | Int[ArrayLike, "d d"]) -> Int[Array, " d"]:
    """A topological order of ``dag`` (sorted by longest-path depth from the roots).

    Args:
      dag: ``(d, d)`` bool adjacency, ``dag[i, j]`` meaning ``i -> j``.

    Returns:
      ``(d,)`` int node order in which every parent precedes its children.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import topological_order
      >>> topological_order(jnp.array([[0, 0, 0], [1, 0, 1], [1, 0, 0]], bool)).tolist()  # 1 -> 2 -> 0
      [1, 2, 0]

    Raises:
      ValueError: ``dag`` is not square, or has a directed cycle (a runtime error under ``jit``).
    """
    return _topological_order(check_dag(dag))


@jax.jit
def _topological_order(dag):
    lev, _ = dag_levels(dag)
    return jnp.argsort(lev, stable=True).astype(jnp.int32)


def _weights(key, dag, lo, hi, dtype):
    k1, k2 = jax.random.split(key)
    mag = jax.random.uniform(k1, dag.shape, dtype, lo, hi)
    sign = jnp.where(jax.random.bernoulli(k2, 0.5, dag.shape), 1.0, -1.0).astype(dtype)
    return jnp.where(dag, mag * sign, 0.0).astype(dtype)


def sample_linear_gaussian(
    key: PRNGKey,
    dag: Bool[ArrayLike, "d d"] | Int[ArrayLike, "d d"],
    n: int,
    w_low: RealScalarLike = 0.5,
    w_high: RealScalarLike = 1.0,
) -> Float[Array, "n d"]:
    r"""Linear Gaussian SEM $x = x W + \varepsilon$, $W_{ij} = \pm U[w_{low}, w_{high}]$ on edges,
    $\varepsilon \sim N(0, I)$; sampled as $X = E (I - W)^{-1}$.

    Examples:
      >>> import jax
      >>> from icmlx.structure import random_polyforest, sample_linear_gaussian
      >>> k = jax.random.key(0)
      >>> sample_linear_gaussian(k, random_polyforest(k, 4), 10).shape
      (10, 4)

    Raises:
      ValueError: ``dag`` not square or cyclic, ``n`` negative, weights not ``0 <= w_low <= w_high < inf``.
    """
    dag, n = check_dag(dag), _check_size(n, "n")
    return _sample_linear_gaussian(key, dag, n, *_check_weights(w_low, w_high))


@functools.partial(jax.jit, static_argnames=("n",))
def _sample_linear_gaussian(key, dag, n, w_low, w_high):
    dtype = jnp.zeros((), float).dtype
    k1, k2 = jax.random.split(key)
    w = _weights(k1, dag, w_low, w_high, dtype)
    e = jax.random.normal(k2, (n, dag.shape[0]), dtype)
    eye = jnp.eye(dag.shape[0], dtype=dtype)
    return jnp.linalg.solve((eye - w).T, e.T).T


def _ancestral(order, init, step):
    def body(t, x):
        j = order[t]
        return x.at[:, j].set(step(x, j))

    return jax.lax.fori_loop(0, order.shape[0], body, init)


def sample_bernoulli(
    key: PRNGKey, dag: Bool[ArrayLike, "d d"] | Int[ArrayLike, "d d"], n: int, strength: RealScalarLike = 0.4
) -> Int[Array, "n d"]:
    r"""Binary SEM on ``dag``: $P(x_j=1\mid pa) = \tfrac12 + \text{strength}\cdot
    \frac{1}{|pa|}\sum_{k\in pa} s_{kj}(2x_k-1)$ with random signs $s_{kj}=\pm1$; roots are
    Bernoulli(1/2). ``strength < 1/2`` keeps probabilities inside ``(0, 1)``.

    Examples:
      >>> import jax
      >>> from icmlx.structure import random_polyforest, sample_bernoulli
      >>> k = jax.random.key(0)
      >>> x = sample_bernoulli(k, random_polyforest(k, 4), 10)
      >>> x.shape, str(x.dtype)
      ((10, 4), 'int32')

    Raises:
      ValueError: ``dag`` not square or cyclic, ``n`` negative, ``|strength| > 1/2`` or NaN.
    """
    dag, n = check_dag(dag), _check_size(n, "n")
    strength = _check_range(strength, "strength", -0.5, 0.5, "so that every probability lies in [0, 1]")
    return _sample_bernoulli(key, dag, n, strength)


@functools.partial(jax.jit, static_argnames=("n",))
def _sample_bernoulli(key, dag, n, strength):
    dtype = jnp.zeros((), float).dtype
    k1, k2 = jax.random.split(key)
    d = dag.shape[0]
    sign = jnp.where(jax.random.bernoulli(k1, 0.5, (d, d)), 1.0, -1.0).astype(dtype)
    w = jnp.where(dag, sign, 0.0).astype(dtype)
    npa = jnp.maximum(jnp.sum(dag, axis=0), 1).astype(dtype)
    u = jax.random.uniform(k2, (n, d), dtype)
    order = _topological_order(dag)

    def step(x, j):
        s = (2.0 * x.astype(dtype) - 1.0) @ w[:, j]
        p = 0.5 + strength * s / npa[j]
        return (u[:, j] < p).astype(jnp.int32)

    return _ancestral(order, jnp.zeros((n, d), jnp.int32), step)


def sample_nonlinear(
    key: PRNGKey,
    dag: Bool[ArrayLike, "d d"] | Int[ArrayLike, "d d"],
    n: int,
    w_low: RealScalarLike = 1.0,
    w_high: RealScalarLike = 2.0,
) -> Float[Array, "n d"]:
    r"""Nonlinear additive-noise SEM $x_j = \sum_{k\in pa(j)} W_{kj}\tanh(x_k) + \varepsilon_j$,
    $\varepsilon_j \sim N(0, 1)$, $|W_{kj}| \sim U[w_{low}, w_{high}]$.

    Examples:
      >>> import jax
      >>> from icmlx.structure import random_polyforest, sample_nonlinear
      >>> k = jax.random.key(0)
      >>> sample_nonlinear(k, random_polyforest(k, 4), 10).shape
      (10, 4)

    Raises:
      ValueError: ``dag`` not square or cyclic, ``n`` negative, weights not ``0 <= w_low <= w_high < inf``.
    """
    dag, n = check_dag(dag), _check_size(n, "n")
    return _sample_nonlinear(key, dag, n, *_check_weights(w_low, w_high))


@functools.partial(jax.jit, static_argnames=("n",))
def _sample_nonlinear(key, dag, n, w_low, w_high):
    dtype = jnp.zeros((), float).dtype
    k1, k2 = jax.random.split(key)
    w = _weights(k1, dag, w_low, w_high, dtype)
    e = jax.random.normal(k2, (n, dag.shape[0]), dtype)
    order = _topological_order(dag)
    return _ancestral(order, e, lambda x, j: jnp.tanh(x) @ w[:, j] + e[:, j])


def read_causal_learn_graph(path: str | Path) -> tuple[np.ndarray, list[str]]:
    """Read causal-learn's graph text format (``Graph Nodes:`` then ``k. Xa --> Xb`` lines).

    Returns:
      ``(dag, names)``: ``(d, d)`` bool NumPy adjacency and the node names. Undirected ``---`` lines set both
      directions.
    """
    text = Path(path).read_text().splitlines()
    names: list[str] = []
    for i, line in enumerate(text):
        if line.strip().startswith("Graph Nodes"):
            names = [v.strip() for v in text[i + 1].replace(",", ";").split(";") if v.strip()]
            break
    if not names:
        raise ValueError(f"{path}: no 'Graph Nodes:' header")
    idx = {v: k for k, v in enumerate(names)}
    a = np.zeros((len(names), len(names)), bool)
    pat = re.compile(r"^\s*\d+\.\s*(\S+)\s*(-->|---|<->|<--)\s*(\S+)\s*$")
    numbered = re.compile(r"^\s*\d+\.\s+\S")
    for line in text:
        m = pat.match(line)
        if not m:
            if numbered.match(line):
                raise ValueError(f"{path}: cannot read the edge line {line.strip()!r}; expected 'k. A --> B' "
                                 "(or ---, <->, <--)")
            continue
        unknown = [u for u in (m.group(1), m.group(3)) if u not in idx]
        if unknown:
            raise ValueError(f"{path}: edge line {line.strip()!r} names unknown node(s) {unknown}; the nodes are "
                             f"{names}")
        u, op, v = idx[m.group(1)], m.group(2), idx[m.group(3)]
        if op == "-->":
            a[u, v] = True
        elif op == "<--":
            a[v, u] = True
        else:
            a[u, v] = a[v, u] = True
    return a, names


def read_causal_learn_data(path: str | Path) -> tuple[np.ndarray, list[str]]:
    """Read a whitespace table with a header row (causal-learn's ``data_*.txt``): ``(array, names)``."""
    with open(path) as fh:
        header = fh.readline().split()
    if not header:
        raise ValueError(f"{path}: empty file or no header row of variable names")
    arr = np.loadtxt(path, skiprows=1, ndmin=2)
    if arr.size == 0:
        raise ValueError(f"{path}: the header names {len(header)} variables but there are no data rows")
    if arr.shape[1] != len(header):
        raise ValueError(f"{path}: header has {len(header)} names but rows have {arr.shape[1]} values")
    return arr, header


def read_endpoint_matrix(path: str | Path) -> np.ndarray:
    """Read causal-learn's stored ``d x d`` endpoint matrix (``benchmark_returned_results/*.txt``).

    Raises:
      ValueError: an empty file, a matrix that is not square, or entries outside ``{-1, 0, 1}``.
    """
    arr = np.loadtxt(path, ndmin=2)
    if arr.size == 0:
        raise ValueError(f"{path}: empty file; expected a d x d endpoint matrix")
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{path}: an endpoint matrix is square (d, d), got shape {arr.shape}")
    bad = sorted(set(np.unique(arr).tolist()) - {-1.0, 0.0, 1.0})[:5]
    if bad:
        raise ValueError(f"{path}: endpoint entries must be -1, 0 or 1, got {bad}")
    return arr.astype(np.int64)
