"""The PC algorithm (PC-stable by default) with batched CI tests and causal-learn-compatible orientation."""

import contextlib
import gc
import math
from collections.abc import Callable
from itertools import combinations

import equinox as eqx
import jax
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from icmlx._checks import is_traced
from icmlx._memory import check_memory
from icmlx._progress import ProgressBar, resolve_progress

from ..._checks import check_int, check_number, default_float_dtype
from .._citests._testers import AbstractCITest, as_ci_test
from .._graphs._graph_io import GraphResult, graph_to_edges
from .._inputs import TableLike, encode_discrete, validate_data
from . import _orient
from ._background import BackgroundKnowledge, resolve_background
from ._colliders import AbstractColliderRule, _as_collider_rule

__all__ = ["PCResult", "BackgroundKnowledge", "pc", "encode_discrete", "graph_to_edges", "validate_data"]


class PCResult(GraphResult):
    """Output of `pc`.

    Attributes:
      graph: ``(d, d)`` int CPDAG in causal-learn's endpoint encoding: ``graph[j, i] = 1, graph[i, j] = -1``
        means ``i -> j``; both ``-1`` means ``i - j``; both ``1`` means ``i <-> j``; ``0`` no edge.
      edges: ``(e, 3)`` int edge list ``(i, j, kind)`` with kind ``0`` = ``i - j`` (``i < j``), ``1`` =
        ``i -> j``, ``2`` = ``i <-> j`` (``i < j``).
      skeleton: ``(d, d)`` bool symmetric adjacency.
      sepset_members: ``(m, 3)`` int rows ``(x, y, k)``, ``x < y``: ``k`` lies in a separating set found for the
        removed edge ``x - y`` (causal-learn's union over the separating sets of both endpoints), stored per
        removed edge, so memory follows the edges removed, not ``d^3``. `sepset` gives the dense view.
      max_pvalue: ``(d, d)`` largest p-value seen for each pair (pcalg's ``pMax``).
      num_tests: number of distinct CI tests run (causal-learn's cache size).
      conflicts: ``(d, d)`` bool, ``conflicts[x, y]`` marks an edge where a collider clashed with an
        orientation already made (resolved by ``uc_priority``).
      names: the variable names (a DataFrame's columns, or ``names=``), or ``None``.

    ``to_networkx()`` and ``to_dot()`` hand the graph on (see `icmlx.structure.to_networkx`),
    `icmlx.structure.plot_graph` draws it, and `named_edges` lists the edges by name.
    """

    graph: Int[Array, "d d"]
    edges: Int[Array, "e 3"]
    skeleton: Bool[Array, "d d"]
    sepset_members: Int[Array, "m 3"]
    max_pvalue: Float[Array, "d d"]
    num_tests: Int[Array, ""]
    conflicts: Bool[Array, "d d"]
    names: tuple[str, ...] | None = eqx.field(static=True, default=None)

    @property
    def sepset(self) -> Bool[Array, "d d d"]:
        """``(d, d, d)`` bool, ``sepset[x, y, k]``: ``k`` lies in a separating set found for ``x, y`` (symmetric in
        ``x, y``), built from `sepset_members` on demand (``d^3`` bytes: refused when they do not fit)."""
        d = int(self.graph.shape[0])
        check_memory(float(d) ** 3, f"the dense (d, d, d) separating-set view at d={d}",
                     "read sepset_members (one row (x, y, k) per separating-set member) instead")
        out = np.zeros((d, d, d), bool)
        m = np.asarray(self.sepset_members)
        out[m[:, 0], m[:, 1], m[:, 2]] = True
        out[m[:, 1], m[:, 0], m[:, 2]] = True
        return jax.device_put(out)


@contextlib.contextmanager
def _gc_paused():
    """Pause Python's cyclic garbage collector during PC's host loop: it allocates many small tuples (test keys),
    and each generation-1/2 collection they trigger rescans the large heap of a JAX process (a full collection
    costs a sizeable fraction of a whole PC run on a mid-sized network). Use it around a function call, so that
    the call's objects are freed by reference counting before the collector is re-enabled (a cheap young
    collection then picks up any cycles). The previous state is restored on exit."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()



def _resolve_ci_test(ci_test, data, where: str) -> AbstractCITest:
    """The tester object; ``None``: `DegenerateGaussian` for a table that mixes categorical and numeric
    columns, else `FisherZ`."""
    if ci_test is None:
        from .._citests._mixed import is_mixed_table

        ci_test = "dg" if data is not None and is_mixed_table(data) else "fisherz"
    return as_ci_test(ci_test, where)


class _Tester:
    """The p-value cache of one PC run around a prepared CI test (`AbstractCITest.prepare`): distinct
    tests are keyed ``(min(x, y), max(x, y), *sorted(S))`` and evaluated once, a level's new tests in one batch
    per set size.

    Per set size ``k`` the keys are stored as one sorted int64 array of mixed-radix codes beside a float64 array
    of p-values (16 bytes a test, looked up by binary search) while ``(k + 2) log2 d < 62``; larger keys go to a
    dict of tuples."""

    def __init__(self, batched, d: int):
        self.batched = batched
        self.d = d
        self.codes: dict[int, np.ndarray] = {}
        self.ps: dict[int, np.ndarray] = {}
        self.cache: dict[tuple, float] = {}

    def __len__(self) -> int:
        return sum(len(c) for c in self.codes.values()) + len(self.cache)

    def _coded(self, k: int) -> bool:
        return (k + 2) * math.log2(max(self.d, 2)) < 62

    def pvalues(self, triples) -> list[float]:
        """p-values of ``[(x, y, S), ...]`` (canonicalised to flat keys ``(min, max, *sorted(S))``, cached)."""
        keys = [(min(x, y), max(x, y), *sorted(S)) for x, y, S in triples]
        out = np.empty(len(keys))
        by_k: dict[int, list[int]] = {}
        for i, key in enumerate(keys):
            by_k.setdefault(len(key) - 2, []).append(i)
        for k, idx in by_k.items():
            rows = np.asarray([keys[i] for i in idx], np.int64).reshape(len(idx), k + 2)
            uniq, inv = np.unique(rows, axis=0, return_inverse=True)
            out[idx] = self.pvalues_rows(uniq)[inv.reshape(-1)]
        return out.tolist()

    def pvalues_rows(self, rows: np.ndarray) -> np.ndarray:
        """p-values of distinct canonical rows ``(m, 2 + k)`` = ``(min, max, sorted S)``."""
        m, k = rows.shape[0], rows.shape[1] - 2
        if not self._coded(k):
            keys = list(map(tuple, rows.tolist()))
            todo = [key for key in keys if key not in self.cache]
            if todo:
                arr = np.asarray(todo, np.int64).reshape(len(todo), k + 2)
                ps = self.batched.pvalues(arr[:, 0], arr[:, 1], arr[:, 2:])
                self.cache.update(zip(todo, np.asarray(ps, np.float64).tolist()))
            return np.asarray([self.cache[key] for key in keys], np.float64)
        code = rows @ (self.d ** np.arange(k + 2, dtype=np.int64))
        known = self.codes.get(k, np.zeros(0, np.int64))
        pos = np.searchsorted(known, code)
        hit = pos < len(known)
        hit[hit] = known[pos[hit]] == code[hit]
        out = np.empty(m)
        if hit.any():
            out[hit] = self.ps[k][pos[hit]]
        if not hit.all():
            new = ~hit
            p_new = np.asarray(self.batched.pvalues(rows[new, 0], rows[new, 1], rows[new, 2:]), np.float64)
            out[new] = p_new
            allc = np.concatenate([known, code[new]])
            allp = np.concatenate([self.ps.get(k, np.zeros(0)), p_new])
            order = np.argsort(allc, kind="stable")
            self.codes[k], self.ps[k] = allc[order], allp[order]
        return out


class _AllEvaluated:
    """PC-stable's test count: every evaluated test counts (the tester's cache size, causal-learn's count)."""

    def __init__(self, tester: _Tester):
        self.tester = tester

    def add(self, key) -> None:
        pass

    def update(self, keys) -> None:
        for _ in keys:  # consume a generator argument
            pass

    def __len__(self) -> int:
        return len(self.tester)


#: Largest number of (x, y, S) rows of one chunk of a PC-stable level: a level is built, deduplicated and tested
#: chunk by chunk (by ranges of x), so its host memory is bounded whatever the number of tests; the tester's cache
#: deduplicates across chunks.
LEVEL_CHUNK_TESTS = 2**22


class _Sepsets:
    """Separating-set members stored per removed edge: rows ``(min(x, y), max(x, y), k)``. ``sep[x, z, y]``
    (symmetric in ``x, z``) says whether ``y`` lies in a separating set found for ``x, z``."""

    def __init__(self, d: int):
        self.d = d
        self.parts: list[np.ndarray] = []
        self._codes: set | None = None

    def add(self, x: np.ndarray, y: np.ndarray, k: np.ndarray) -> None:
        if len(x):
            self.parts.append(np.column_stack([np.minimum(x, y), np.maximum(x, y), k]).astype(np.int64))
            self._codes = None

    def rows(self) -> np.ndarray:
        if not self.parts:
            return np.zeros((0, 3), np.int64)
        r = np.concatenate(self.parts)
        d = self.d
        code = np.unique((r[:, 0] * d + r[:, 1]) * d + r[:, 2])  # sorted by (x, y, k), each row once
        return np.column_stack([code // (d * d), (code // d) % d, code % d])

    def __getitem__(self, key) -> bool:
        x, z, y = (int(v) for v in key)
        if self._codes is None:
            r = self.rows()
            self._codes = set(((r[:, 0] * self.d + r[:, 1]) * self.d + r[:, 2]).tolist())
        a, b = min(x, z), max(x, z)
        return (a * self.d + b) * self.d + y in self._codes


def _level_chunks(deg: np.ndarray, depth: int):
    """Ranges ``[lo, hi)`` of ``x`` whose tests at ``depth`` (``deg(x) * C(deg(x) - 1, depth)`` each) total at
    most `LEVEL_CHUNK_TESTS` rows (a single ``x`` with more is a chunk of its own)."""
    d = deg.shape[0]
    lo, acc = 0, 0
    for x in range(d):
        k = int(deg[x])
        num = k * math.comb(k - 1, depth) if k - 1 >= depth else 0
        if acc and acc + num > LEVEL_CHUNK_TESTS:
            yield lo, x
            lo, acc = x, 0
        acc += num
    yield lo, d


def _level_tests(adj, depth: int, lo: int, hi: int):
    """The tests of one chunk ``[lo, hi)`` of ``x`` at ``depth``: ``(x, y, s, uniq, inv)`` with ``uniq`` the
    distinct canonical rows ``(min, max, sorted S)`` and ``inv`` mapping each test to its row; ``None`` if none."""
    d = adj.shape[0]
    xs, ys, ss = [], [], []
    for x in range(lo, hi):
        nb = np.flatnonzero(adj[x])
        if len(nb) - 1 < depth:
            continue
        cl = list(combinations(nb.tolist(), depth))
        combos = np.asarray(cl, np.int64).reshape(len(cl), depth)
        # (y, S) pairs with S a subset of adj(x) \ {y}: all at once, y-major (sorted rows of S)
        yi, ci = np.nonzero(~(combos[None, :, :] == nb[:, None, None]).any(axis=2))
        xs.append(np.full(len(yi), x, np.int64))
        ys.append(nb[yi])
        ss.append(combos[ci])
    if not xs:
        return None
    x, y, s = np.concatenate(xs), np.concatenate(ys), np.concatenate(ss)
    del xs, ys, ss
    rows = np.column_stack([np.minimum(x, y), np.maximum(x, y), s])
    if (depth + 2) * math.log2(max(d, 2)) < 62:  # rows as one mixed-radix int64 key: a 1-D unique is fast
        code = rows @ (d ** np.arange(depth + 2, dtype=np.int64))
        _, first, inv = np.unique(code, return_index=True, return_inverse=True)
        uniq = rows[first]
        del code
    else:
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
    return x, y, s, uniq, inv


def _level_apply(chunk, p_u: np.ndarray, depth: int, alpha: float, removal, sep: "_Sepsets", maxp) -> None:
    """Record a chunk's p-values ``p_u`` (one per distinct row of `_level_tests`): ``maxp``, the edges to
    remove (``p > alpha``) and their separating sets, in place."""
    x, y, s, _, inv = chunk
    p = p_u[inv.reshape(-1)]
    np.maximum.at(maxp, (x, y), p)
    np.maximum.at(maxp, (y, x), p)
    ind = p > alpha
    removal[x[ind], y[ind]] = True
    for j in range(depth):
        sep.add(x[ind], y[ind], s[ind, j])


def _check_level_memory(adj, depth: int) -> None:
    deg = adj.sum(axis=1)
    per_x = [k * math.comb(k - 1, depth) for k in deg.tolist() if k - 1 >= depth]
    num = float(min(sum(per_x), max([LEVEL_CHUNK_TESTS, *per_x])))  # the largest chunk
    # per test row of a chunk: x, y, S, the canonical row and its key, index arrays of the unique (int64), p-values
    check_memory(num * 8.0 * (3 * (depth + 2) + 6), f"pc's level {depth} ({num:.3g} CI tests in a chunk)",
                 f"pass max_depth={depth - 1}, a smaller alpha or fewer variables" if depth else "use fewer variables")


def _stable_level(tester: _Tester, adj, depth, alpha, sep: _Sepsets, maxp, counted, bk_forbid_both) -> np.ndarray:
    """One PC-stable level, vectorised: every ``(x, y, S)`` with ``y`` adjacent to ``x`` and ``S`` a ``depth``-subset
    of ``adj(x) \\ {y}`` (adjacencies frozen), distinct tests evaluated once, in chunks of ``x`` of at most
    `LEVEL_CHUNK_TESTS` tests. Updates ``sep``, ``maxp`` and ``counted`` in place; returns the symmetric
    mask of edges to remove."""
    d = adj.shape[0]
    deg = adj.sum(axis=1)
    _check_level_memory(adj, depth)
    removal = np.zeros((d, d), bool)
    if bk_forbid_both is not None:
        removal |= np.asarray(bk_forbid_both, bool) & adj
    for lo, hi in _level_chunks(deg, depth):
        chunk = _level_tests(adj, depth, lo, hi)
        if chunk is not None:
            _level_apply(chunk, tester.pvalues_rows(chunk[3]), depth, alpha, removal, sep, maxp)
    return removal | removal.T


def _skeleton(tester: _Tester, d, alpha, stable, max_depth, bk_forbid_both, on_level=None):
    adj = ~np.eye(d, dtype=bool)
    sep = _Sepsets(d)
    maxp = np.full((d, d), -np.inf)
    # PC-stable evaluates exactly the tests it counts; the original PC stops a pair's tests at its first
    # independence, so its count is kept as a set of the tests it reached
    counted = _AllEvaluated(tester) if stable else set()
    depth = -1
    while adj.sum(axis=1).max(initial=0) - 1 > depth:
        depth += 1
        if max_depth is not None and depth > max_depth:
            break
        if stable:
            adj &= ~_stable_level(tester, adj, depth, alpha, sep, maxp, counted, bk_forbid_both)
        else:
            for x in range(d):
                nb_x = np.nonzero(adj[x])[0].tolist()  # original PC: adjacencies as they are now
                for y in nb_x:
                    if not adj[x, y]:
                        continue
                    others = [v for v in nb_x if v != y]
                    ss = list(combinations(others, depth))
                    if bk_forbid_both is not None and bk_forbid_both[x, y]:
                        adj[x, y] = adj[y, x] = False
                        continue
                    ps = tester.pvalues([(x, y, S) for S in ss])
                    for S, p in zip(ss, ps):
                        counted.add((min(x, y), max(x, y), *sorted(S)))
                        maxp[x, y] = maxp[y, x] = max(maxp[x, y], p)
                        if p > alpha:
                            adj[x, y] = adj[y, x] = False
                            sep.add(np.full(len(S), x), np.full(len(S), y), np.asarray(S, np.int64))
                            break
        if on_level is not None:
            on_level(depth, len(counted), adj)
    return adj, sep, maxp, counted


def _orient_result(adj, sep, maxp, counted, pfn, bk, rule, alpha: float, meek_r4, names) -> "PCResult":
    """The orientation phase on a skeleton (colliders by ``rule``, background knowledge ``bk``, Meek's rules) and
    the `PCResult`; ``pfn`` evaluates the orientation phase's extra tests, which ``counted`` records."""
    d = adj.shape[0]
    g = _orient._Graph(adj)
    if bk is not None:
        _orient.orient_by_background(g, bk)
    conflicts: list = []

    def pfn_counted(triples):
        counted.update((min(x, y), max(x, y), *sorted(S)) for x, y, S in triples)
        return pfn(triples)  # evaluated tests are in the tester's count (PC-stable)

    r4 = (bk is not None) if meek_r4 is None else bool(meek_r4)
    rule.orient(g, sep, alpha, bk, pfn_counted, conflicts, r4)

    conf = np.zeros((d, d), bool)
    for x, y, z in conflicts:
        conf[x, y] = conf[y, x] = conf[z, y] = conf[y, z] = True
    maxp = np.where(np.isfinite(maxp), maxp, 0.0)
    return PCResult(
        # jax.device_put of host arrays compiles nothing; jnp.asarray compiles a small program per new shape.
        graph=jax.device_put(g.g.astype(np.int32)),
        edges=jax.device_put(np.asarray(graph_to_edges(g.g))),
        skeleton=jax.device_put(np.asarray(adj)),
        sepset_members=jax.device_put(sep.rows().astype(np.int32)),
        max_pvalue=jax.device_put(np.asarray(maxp, dtype=default_float_dtype())),
        num_tests=jax.device_put(np.asarray(len(counted), dtype=np.int32)),
        conflicts=jax.device_put(np.asarray(conf)),
        names=names,
    )


def pc(
    data: Float[ArrayLike, "n d"] | Int[ArrayLike, "n d"] | TableLike | None,
    *,
    ci_test: str | AbstractCITest | Callable | None = None,
    alpha: float | np.floating = 0.05,
    max_depth: int | None = None,
    stable: bool = True,
    colliders: str | AbstractColliderRule = "sepset",
    background_knowledge: BackgroundKnowledge | None = None,
    true_dag: Bool[ArrayLike, "d d"] | None = None,
    nan_policy: str = "raise",
    meek_r4: bool | None = None,
    mesh: jax.sharding.Mesh | None = None,
    max_batch: int = 8192,
    names: list[str] | tuple[str, ...] | None = None,
    progress: bool | None = None,
) -> PCResult:
    r"""The PC algorithm: skeleton by CI tests level by level, unshielded colliders, then Meek's rules.

    Skeleton (PC-stable, Colombo & Maathuis 2014): for $\ell = 0, 1, \dots$ the adjacencies $A(x)$ are frozen
    and the edge ``x - y`` is removed if some $S \subseteq A(x)\setminus\{y\}$, $|S| = \ell$, gives
    $p(x, y \mid S) > \alpha$. All distinct tests of a level are handed to the tester's batched evaluator
    (`AbstractCITest.prepare`) at once: the built-in testers run them through jitted kernels on padded
    sizes (the sample axis in power-of-four buckets with the true ``n`` traced, conditioning sets and batches
    padded per kernel kind), so a new ``n`` in the same bucket compiles nothing, sharded over ``mesh`` if given;
    a function ``ci_test`` is ``jax.vmap``-ed over the level. The orientation phase replays causal-learn exactly
    (same triple order; colliders by `SepsetColliders` = causal-learn's ``uc_rule=0``,
    `MaxPColliders` = 1 or `DefiniteMaxPColliders` = 2, each with its conflict ``priority``:
    0 overwrite, 1 bidirected, 2 keep existing, 3 stronger, 4 stronger*; Meek R1-R3, and R4 when background
    knowledge is given).

    ``pc`` is a host-driven procedure: Python decides, level by level, which tests to run next, so it cannot
    be traced by ``jax.jit`` or ``jax.vmap`` (its data must be concrete). The compiled work is inside each
    level; for many resamples use `icmlx.structure.bootstrap_pc`, and for a learner that is one compiled
    program, `icmlx.structure.pc_tree`.

    A constant column is independent of everything (its tests give ``p = 1``: no degrees of freedom for
    χ²/G², a zero correlation for Fisher-z), so it is left isolated; of a duplicated pair each column
    determines the other, so conditioning on one makes the other independent of everything, and the pair stays
    adjacent (causal-learn's χ²/G² decide the same; for Fisher-z, a set holding a duplicate of ``x`` or ``y``
    gives ``p = 1`` and a duplicate inside a set is dropped). Both get a ``UserWarning`` naming the columns.

    Args:
      data: ``(n, d)`` NumPy/JAX array or pandas DataFrame (numeric for ``fisherz``; for ``chisq``/``gsq``/
        ``bernoulli`` integer, string, categorical or bool columns, coded by sorted distinct values; a column of
        non-integer numbers is refused by name rather than made into one category per value); for
        ``d_separation`` the DAG, or ``None`` with ``true_dag``. A DataFrame's column names name the result.
      ci_test: the tester, `FisherZ`, `ChiSquare`, `GSquare`, `Bernoulli`,
        `DegenerateGaussian`, `DSeparation` or `UserCITest`; the shorthand ``"fisherz"``,
        ``"chisq"``, ``"gsq"``, ``"bernoulli"``, ``"dg"``, ``"d_separation"``; ``None`` (default):
        `DegenerateGaussian` for a DataFrame that mixes categorical (text, bool, category) and numeric
        columns, else `FisherZ`; or a function ``fn(data, x, y, S) -> p_value`` (see
        `UserCITest`: vmapped over each level if JAX can trace it, else called test by test with a
        warning).
      alpha: level; "independent" means ``p > alpha``.
      max_depth: largest conditioning-set size (causal-learn ``max_k``).
      stable: PC-stable (default) or the original order-dependent PC.
      colliders: the collider rule and its conflict priority, an `AbstractColliderRule` or the shorthand
        ``"sepset"`` / ``"maxp"`` / ``"definite_maxp"`` (priority 2); causal-learn's ``uc_rule`` 0, 1, 2 are
        these three classes.
      background_knowledge: forbidden/required edges; built with names, it is matched to the data's names.
      true_dag: ``(d, d)`` bool DAG for the d-separation oracle.
      nan_policy: ``"raise"``, ``"listwise"`` (drop incomplete rows) or ``"testwise"`` (each test uses the
        rows complete in its own variables ``x, y, S``; Fisher-z and function testers, which receive the NaNs).
      meek_r4: apply Meek's R4 (default: only with background knowledge).
      mesh: optional device mesh; CI-test batches of the built-in testers are sharded along its first axis. A
        mesh over the devices of several processes (``jax.distributed``) works when every process makes the same
        call on the same data: each gathers every batch's p-values and gets the whole graph.
      max_batch: largest batch per kernel call.
      names: variable names for NumPy/JAX data (default: a DataFrame's columns, else none).
      progress: show the skeleton's levels (depth, tests so far, edges left) on standard error. None shows
        progress in an interactive terminal for loops driven from Python; a loop inside one compiled program
        reports only with progress=True.

    Returns:
      `PCResult`.

    Raises:
      ValueError: alpha outside (0, 1), bad options (an unsupported ``ci_test`` or ``colliders``), NaN (with
        ``nan_policy="raise"``), non-integer columns for discrete tests (named), too few samples for
        ``fisherz``, background knowledge naming unknown variables, a function tester returning p-values
        outside [0, 1].
      TypeError: text or category columns with ``fisherz``; ``pc`` called on traced data (inside ``jit``).

    References:
      Spirtes, Glymour & Scheines (2000); Colombo & Maathuis, JMLR 15 (2014); Meek, UAI (1995);
      Gao, Wang & Aragam, arXiv:2507.05689.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import pc
      >>> dag = jnp.array([[0, 0, 1], [0, 0, 1], [0, 0, 0]], bool)  # 0 -> 2 <- 1
      >>> res = pc(None, ci_test="d_separation", true_dag=dag)
      >>> res.edges.tolist()
      [[0, 2, 1], [1, 2, 1]]
      >>> from icmlx.structure import DSeparation, MaxPColliders
      >>> res = pc(None, ci_test=DSeparation(), true_dag=dag, colliders=MaxPColliders(priority=3))
      >>> res.edges.tolist(), int(res.num_tests)
      ([[0, 2, 1], [1, 2, 1]], 6)
    """
    if isinstance(alpha, (jax.Array, np.ndarray)):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha=}")
    check_number(alpha, "alpha", where="pc", minimum=0, maximum=1, open_minimum=True, open_maximum=True)
    check_int(max_batch, "max_batch", where="pc", minimum=1)
    rule = _as_collider_rule(colliders)
    if max_depth is not None:
        check_int(max_depth, "max_depth", where="pc", minimum=0)
    if is_traced((data, true_dag)):
        raise TypeError("pc is a host-driven procedure (Python chooses each level's tests from the last level's "
                        "results), so it cannot run under jax.jit or jax.vmap: call it on concrete data, use "
                        "bootstrap_pc for many resamples, or pc_tree for a learner that is one compiled program")
    test = _resolve_ci_test(ci_test, data, "pc")
    if not isinstance(nan_policy, str) or nan_policy not in ("raise", "listwise", "testwise"):
        raise ValueError(f"nan_policy must be 'raise', 'listwise' or 'testwise', got {nan_policy=}")
    if nan_policy == "testwise" and not test.handles_missing:
        raise ValueError(f"nan_policy='testwise' needs a CI test that drops missing rows test by test (FisherZ, or "
                         f"a function ci_test that handles NaN), got {test!r}; use nan_policy='listwise'")
    # the d-separation oracle's "data" is the DAG (true_dag=, or data= as pc_tree takes it)
    source = test._source(data, true_dag)
    arr, names = test.check_input(source, nan_policy=nan_policy, names=names)
    d = int(arr.shape[1])
    show = resolve_progress(progress)

    def run():  # a function, so that its locals are freed before the collector is re-enabled
        nonlocal names
        bk = None
        forbid_both = None
        if background_knowledge is not None:
            bk, names = resolve_background(background_knowledge, d, names)
            forbid_both = bk[0] & bk[0].T
        try:
            batched = test.prepare(arr, mesh=mesh, max_batch=max_batch)
        except NotImplementedError as err:
            raise ValueError(f"pc cannot use ci_test={test!r}: {err}") from None
        tester = _Tester(batched, d)
        with ProgressBar("pc", enabled=show, unit="level") as bar:
            def on_level(depth, num_tests, adj):
                bar.update(1, depth=depth, tests=num_tests, edges=int(adj.sum()) // 2)

            adj, sep, maxp, counted = _skeleton(tester, d, float(alpha), stable, max_depth, forbid_both, on_level)

        return _orient_result(adj, sep, maxp, counted, tester.pvalues, bk, rule, float(alpha), meek_r4, names)

    with _gc_paused():
        return run()
