"""The PC algorithm (PC-stable by default) with batched CI tests and causal-learn-compatible orientation."""

import contextlib
import functools
import gc
import math
from itertools import combinations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from icmlx._deprecation import deprecated_attribute, warn_renamed
from icmlx._memory import check_memory
from icmlx._progress import ProgressBar, resolve_progress

from . import _graph_io, _orient
from ._background import BackgroundKnowledge, resolve_background
from ._ci_tests import _float_dtype
from ._colliders import AbstractColliderRule, DefiniteMaxPColliders, MaxPColliders, _as_collider_rule, _from_uc_flags
from ._contingency import (
    _chi2_pvalue,
    _chi2_pvalue_host,
    _chi_square_groups,
    _chi_square_plan,
    _kmax_bucket,
    _pack_bits,
    _pad_codes,
    _pad_samples,
)
from ._dag import check_dag
from ._discrete import _bernoulli_kernel, _encode_codes
from ._dseparation import _dsep_kernel
from ._fisher_padded import _fisher_z_pvalues, correlation_matrix
from ._graph_io import graph_to_edges
from ._inputs import TableLike, encode_discrete, prepare_data, validate_data
from ._testers import AbstractCITest, _as_ci_test

__all__ = ["PCResult", "BackgroundKnowledge", "pc", "encode_discrete", "graph_to_edges", "validate_data", "CI_TESTS"]

CI_TESTS = ("fisherz", "chisq", "gsq", "bernoulli", "d_separation")


class PCResult(_graph_io.GraphResult):
    """Output of :func:`pc`.

    Attributes:
      graph: ``(d, d)`` int CPDAG in causal-learn's endpoint encoding: ``graph[j, i] = 1, graph[i, j] = -1``
        means ``i -> j``; both ``-1`` means ``i - j``; both ``1`` means ``i <-> j``; ``0`` no edge.
      edges: ``(e, 3)`` int edge list ``(i, j, kind)`` with kind ``0`` = ``i - j`` (``i < j``), ``1`` =
        ``i -> j``, ``2`` = ``i <-> j`` (``i < j``).
      skeleton: ``(d, d)`` bool symmetric adjacency.
      sepset: ``(d, d, d)`` bool, ``sepset[x, y, k]``: ``k`` lies in a separating set found for ``x, y``
        (causal-learn's union over the separating sets of both endpoints).
      max_pvalue: ``(d, d)`` largest p-value seen for each pair (pcalg's ``pMax``).
      num_tests: number of distinct CI tests run (causal-learn's cache size).
      conflicts: ``(d, d)`` bool, ``conflicts[x, y]`` marks an edge where a collider clashed with an
        orientation already made (resolved by ``uc_priority``).
      names: the variable names (a DataFrame's columns, or ``names=``), or ``None``.

    ``to_networkx()`` and ``to_dot()`` hand the graph on (see :func:`icmlx.structure.to_networkx`),
    :func:`icmlx.structure.plot_graph` draws it, and :meth:`named_edges` lists the edges by name.
    """

    graph: Int[Array, "d d"]
    edges: Int[Array, "e 3"]
    skeleton: Bool[Array, "d d"]
    sepset: Bool[Array, "d d d"]
    max_pvalue: Float[Array, "d d"]
    num_tests: Int[Array, ""]
    conflicts: Bool[Array, "d d"]
    names: tuple[str, ...] | None = eqx.field(static=True, default=None)

    n_tests = deprecated_attribute("num_tests")  # deprecated alias, one release


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



def _pad_dim(d: int) -> int:
    return max(16, -(-d // 16) * 16)


def _bucket(m: int, cap: int, lo: int = 64) -> int:
    b = lo
    while b < m and b < cap:
        b *= 4
    return min(b, cap)


class _Tester:
    """Evaluates lists of ``(x, y, S)`` through jitted batched kernels in a few padded shapes: the sample axis in
    power-of-four buckets with the true ``n`` traced, ``d`` in multiples of 16, conditioning sets padded to one width
    per kernel, one batch size per kernel (see ``_contingency`` and ``_fisher_padded``)."""

    def __init__(self, ci_test, data, true_dag, mesh, max_batch):
        self.ci_test = ci_test
        self.cache: dict[tuple, float] = {}
        self.mesh = mesh
        fdt = _float_dtype()
        if ci_test == "fisherz":
            n, d = data.shape
            self.n = n
            dp = _pad_dim(d)  # pad d and n to size buckets so similar sizes share one compilation
            self.corr = correlation_matrix(data, dp, fdt)
            self._kernel = lambda xs, ys, ss, kk, plan: _fisher_z_pvalues(
                self.corr, np.int32(self.n), xs, ys, ss, np.int32(0) if kk is None else kk
            )
            per_test = 1
        elif ci_test in ("chisq", "gsq"):
            enc = _encode_codes(data).T  # (d, n) on the host: one variable per contiguous row
            self.n = enc.shape[1]
            # at least one padding row: a constant variable (card 1) that pads conditioning sets; the sample axis
            # is padded to a bucket (the kernels count the first n samples), so a new n reuses the programs
            self.const = enc.shape[0]
            self.n_pad = _pad_samples(self.n, _pad_dim(enc.shape[0] + 1))
            self.data = jax.device_put(_pad_codes(enc, self.n_pad, _pad_dim(enc.shape[0] + 1)))
            cards = np.ones(self.data.shape[0], np.int64)
            cards[: enc.shape[0]] = enc.max(axis=1) + 1
            self.cards_np = cards
            self.cards = jax.device_put(cards.astype(np.int32))
            self.kmax = _kmax_bucket(cards.max())
            self.bits = None  # indicator bitsets, packed when a batch first takes the bitset plan
            g2 = ci_test == "gsq"

            def kern(xs, ys, ss, kk, plan):
                sharded = self.mesh is not None
                if plan[0] == "bits" and self.bits is None:
                    self.bits = _pack_bits(self.data, np.int32(self.n), self.kmax)
                stat, dof = _chi_square_plan(
                    plan, self.data, self.bits, self.cards, xs, ys, ss, kk, self.n, const=self.const,
                    kmax=self.kmax, g_square=g2, vectorised=sharded,
                )
                # unsharded: (stat, dof) come back to the host, where the p-values compile nothing
                return _chi2_pvalue(stat, dof) if sharded else (stat, dof)

            self._kernel = kern
            per_test = 12 * self.n
        elif ci_test == "bernoulli":
            enc = encode_discrete(data)
            if int(jnp.max(enc)) > 1:
                raise ValueError("ci_test='bernoulli' needs binary data")
            self.data = enc
            self.n = enc.shape[0]
            self._kernel = lambda xs, ys, ss, kk, plan: _bernoulli_kernel(self.data, xs, ys, ss)[1]
            per_test = 6 * self.n
        elif ci_test == "d_separation":
            if true_dag is None:
                raise ValueError("ci_test='d_separation' needs true_dag=")
            dag = jnp.asarray(true_dag, dtype=bool)
            dp = _pad_dim(dag.shape[0])
            self.dag = jnp.zeros((dp, dp), bool).at[: dag.shape[0], : dag.shape[0]].set(dag)
            self._kernel = lambda xs, ys, ss, kk, plan: _dsep_kernel(self.dag, xs, ys, ss, kk).astype(fdt)
            per_test = 4 * self.dag.shape[0] ** 2
        else:
            raise ValueError(f"ci_test must be one of {CI_TESTS}, got {ci_test=}")
        self.per_test = per_test
        self.max_batch = max_batch

    def _cap(self, plan) -> int:
        per = self.per_test
        if plan is not None:
            mode, ns, bound = plan
            per += ns * self.kmax**2 * (4 if mode != "dense" else 1) + bound
        cap = max(16, 1 << int(math.log2(max(2**24 // per, 16))))
        return min(cap, self.max_batch)

    def _run(self, x: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
        if self.ci_test not in ("chisq", "gsq"):
            return self._run_plan(x, y, s, None)
        out = np.empty(x.shape[0], dtype=np.float64)
        groups = _chi_square_groups(self.cards_np, x, y, s, self.n_pad, self.kmax, self.mesh is not None)
        # dispatch every group before reading any result back: host work overlaps device work
        pending = [(idx, self._dispatch(x[idx], y[idx], s[idx], plan)) for idx, plan in groups]
        for idx, chunks in pending:
            if self.mesh is None:
                stat = np.concatenate([np.asarray(st)[:m] for (st, _), m in chunks])
                dof = np.concatenate([np.asarray(df)[:m] for (_, df), m in chunks])
                # float64 tail of the float32 statistic, rounded as the device p-value would be
                out[idx] = _chi2_pvalue_host(stat, dof).astype(stat.dtype)
            else:
                out[idx] = np.concatenate([np.asarray(p)[:m] for p, m in chunks])
        return out

    def _run_plan(self, x: np.ndarray, y: np.ndarray, s: np.ndarray, plan) -> np.ndarray:
        return np.concatenate([np.asarray(p)[:m] for p, m in self._dispatch(x, y, s, plan)])

    def _dispatch(self, x: np.ndarray, y: np.ndarray, s: np.ndarray, plan) -> list:
        """Launch the kernel calls of one plan (asynchronously); returns ``[(p_device, n_valid), ...]``."""
        m, k = s.shape
        out = []
        kk = None
        if (self.ci_test == "fisherz") or (self.ci_test == "d_separation" and k > 0):
            # pad |S| to a multiple of 4 (masked in the kernel): set sizes 0-4 (Fisher-z; d-separation 1-4)
            # share one compilation
            kb = max(-(-k // 4) * 4, 4)
            s = np.concatenate([s, np.zeros((m, kb - k), s.dtype)], axis=1)
            kk = np.int32(k)
        # cheap kernels: no bucket below 256 (fewer compilations; a padded test costs next to nothing)
        if self.ci_test in ("fisherz", "d_separation"):
            lo = 256
        elif plan is not None and plan[0] != "dense":
            lo = 16  # per-sample counting over up to n strata: padding a batch is expensive
        else:
            lo = 64
        # loop kernels (chi-square, unsharded): one padded size for all, the work follows the true count m;
        # Fisher-z: one size for all (a padded test costs next to nothing beside a compilation)
        if plan is not None and self.mesh is None:
            b = self.max_batch
        elif self.ci_test == "fisherz" and self.mesh is None:
            b = self._cap(None)
        else:
            b = _bucket(m, self._cap(plan), lo)
        if self.mesh is not None:
            nd = self.mesh.size
            b = ((b + nd - 1) // nd) * nd
        for start in range(0, m, b):
            stop = min(start + b, m)
            pad = b - (stop - start)
            xs = np.concatenate([x[start:stop], np.repeat(x[start:start + 1], pad)])
            ys = np.concatenate([y[start:stop], np.repeat(y[start:start + 1], pad)])
            ss = np.concatenate([s[start:stop], np.repeat(s[start:start + 1], pad, axis=0)])
            xs, ys, ss = (a.astype(np.int32) for a in (xs, ys, ss))  # NumPy in: no eager device conversion ops
            if self.mesh is not None:
                from jax.sharding import NamedSharding, PartitionSpec

                axis = self.mesh.axis_names[0]
                sh1 = NamedSharding(self.mesh, PartitionSpec(axis))
                sh2 = NamedSharding(self.mesh, PartitionSpec(axis, None))
                xs, ys, ss = jax.device_put(xs, sh1), jax.device_put(ys, sh1), jax.device_put(ss, sh2)
            if plan is not None and self.mesh is None:  # chi-square loop kernels: compute only the real tests
                kk = np.int32(stop - start)
            out.append((self._kernel(xs, ys, ss, kk, plan), stop - start))
        return out

    def pvalues(self, triples) -> list[float]:
        """p-values of ``[(x, y, S), ...]`` (canonicalised to flat keys ``(min, max, *sorted(S))``, cached)."""
        keys = [(min(x, y), max(x, y), *sorted(S)) for x, y, S in triples]
        self._evaluate(list(dict.fromkeys(k for k in keys if k not in self.cache)))
        return [self.cache[k] for k in keys]

    def pvalues_rows(self, rows: np.ndarray) -> tuple[np.ndarray, list]:
        """p-values of distinct canonical rows ``(m, 2 + k)`` = ``(min, max, sorted S)``; also their keys."""
        keys = list(map(tuple, rows.tolist()))
        self._evaluate([k for k in keys if k not in self.cache])
        return np.asarray([self.cache[k] for k in keys], dtype=np.float64), keys

    def _evaluate(self, todo: list) -> None:
        by_k: dict[int, list] = {}
        for key in todo:
            by_k.setdefault(len(key) - 2, []).append(key)
        for k, ks in by_k.items():
            arr = np.asarray(ks, dtype=np.int64).reshape(len(ks), k + 2)
            ps = self._run(arr[:, 0], arr[:, 1], arr[:, 2:])
            self.cache.update(zip(ks, ps.tolist()))


def _stable_level(tester: _Tester, adj, depth, alpha, sep, maxp, counted, bk_forbid_both) -> np.ndarray:
    """One PC-stable level, vectorised: every ``(x, y, S)`` with ``y`` adjacent to ``x`` and ``S`` a ``depth``-subset
    of ``adj(x) \\ {y}`` (adjacencies frozen), distinct tests evaluated once. Updates ``sep``, ``maxp`` and
    ``counted`` in place; returns the symmetric mask of edges to remove."""
    d = adj.shape[0]
    deg = adj.sum(axis=1)
    num = float(sum(k * math.comb(k - 1, depth) for k in deg.tolist() if k - 1 >= depth))
    # per test row: x, y, S, the canonical row and its key, index arrays of the unique (int64), p-values
    check_memory(num * 8.0 * (3 * (depth + 2) + 6), f"pc's level {depth} ({num:.3g} CI tests)",
                 f"pass max_depth={depth - 1}, a smaller alpha or fewer variables" if depth else "use fewer variables")
    xs, ys, ss = [], [], []
    for x in range(d):
        nb = np.flatnonzero(adj[x])
        if len(nb) - 1 < depth:
            continue
        cl = list(combinations(nb.tolist(), depth))
        combos = np.asarray(cl, np.int64).reshape(len(cl), depth)
        for y in nb:
            c = combos[~(combos == y).any(axis=1)]  # subsets of adj(x) \ {y}, sorted rows
            xs.append(np.full(len(c), x, np.int64))
            ys.append(np.full(len(c), y, np.int64))
            ss.append(c)
    removal = np.zeros((d, d), bool)
    if bk_forbid_both is not None:
        removal |= np.asarray(bk_forbid_both, bool) & adj
    if not xs:
        return removal | removal.T
    x, y, s = np.concatenate(xs), np.concatenate(ys), np.concatenate(ss)
    rows = np.column_stack([np.minimum(x, y), np.maximum(x, y), s])
    if (depth + 2) * math.log2(max(d, 2)) < 62:  # rows as one mixed-radix int64 key: a 1-D unique is fast
        code = rows @ (d ** np.arange(depth + 2, dtype=np.int64))
        _, first, inv = np.unique(code, return_index=True, return_inverse=True)
        uniq = rows[first]
    else:
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
    p_u, keys = tester.pvalues_rows(uniq)
    counted.update(keys)
    p = p_u[inv.reshape(-1)]
    np.maximum.at(maxp, (x, y), p)
    np.maximum.at(maxp, (y, x), p)
    ind = p > alpha
    removal[x[ind], y[ind]] = True
    for j in range(depth):
        sep[x[ind], y[ind], s[ind, j]] = True
        sep[y[ind], x[ind], s[ind, j]] = True
    return removal | removal.T


def _skeleton(tester: _Tester, d, alpha, stable, max_depth, bk_forbid_both, on_level=None):
    adj = ~np.eye(d, dtype=bool)
    sep = np.zeros((d, d, d), dtype=bool)
    maxp = np.full((d, d), -np.inf)
    counted: set = set()
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
                            for v in S:
                                sep[x, y, v] = sep[y, x, v] = True
                            break
        if on_level is not None:
            on_level(depth, len(counted), adj)
    return adj, sep, maxp, counted


def _uc_flags_alias(fn):
    """Accept causal-learn's flag-style ``uc_rule=`` / ``uc_priority=`` for one release: they build the collider
    rule object (``uc_rule`` 0, 1, 2 -> :class:`SepsetColliders`, :class:`MaxPColliders`,
    :class:`DefiniteMaxPColliders`; ``uc_priority=-1`` -> the rule's default priority, 3, 3, 4)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        old = {k: kwargs.pop(k) for k in ("uc_rule", "uc_priority") if k in kwargs}
        if old:
            for k in old:
                warn_renamed(k, "colliders=SepsetColliders/MaxPColliders/DefiniteMaxPColliders(priority=...)", "pc()")
            if "colliders" in kwargs:
                raise TypeError(f"pc() got both {sorted(old)} (deprecated) and colliders=; pass colliders=")
            kwargs["colliders"] = _from_uc_flags(old.get("uc_rule", 0), old.get("uc_priority", 2))
        return fn(*args, **kwargs)

    return wrapper


@_uc_flags_alias
def pc(
    data: Float[ArrayLike, "n d"] | Int[ArrayLike, "n d"] | TableLike | None,
    *,
    ci_test: str | AbstractCITest = "fisherz",
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

    Skeleton (PC-stable, Colombo & Maathuis 2014): for :math:`\ell = 0, 1, \dots` the adjacencies
    :math:`A(x)` are frozen and the edge ``x - y`` is removed if some :math:`S \subseteq A(x)\setminus\{y\}`,
    :math:`|S| = \ell`, gives :math:`p(x, y \mid S) > \alpha`. All tests of a level are evaluated as one
    batch through a jitted kernel on padded sizes (the sample axis in power-of-four buckets with the true ``n``
    traced, conditioning sets and batches padded per kernel kind), so a new ``n`` in the same bucket compiles
    nothing, and
    sharded over ``mesh`` if given. The orientation phase replays causal-learn exactly (same triple order;
    colliders by :class:`SepsetColliders` = causal-learn's ``uc_rule=0``, :class:`MaxPColliders` = 1 or
    :class:`DefiniteMaxPColliders` = 2, each with its conflict ``priority``: 0 overwrite, 1 bidirected,
    2 keep existing, 3 stronger, 4 stronger*; Meek R1-R3, and R4 when background knowledge is given).

    Args:
      data: ``(n, d)`` NumPy/JAX array or pandas DataFrame (numeric for ``fisherz``; for ``chisq``/``gsq``/
        ``bernoulli`` integer, string, categorical or bool columns, coded by sorted distinct values); ``None``
        for ``d_separation`` (then ``true_dag`` fixes ``d``). A DataFrame's column names name the result.
      ci_test: the tester, :class:`FisherZ`, :class:`ChiSquare`, :class:`GSquare`, :class:`Bernoulli` or
        :class:`DSeparation`, or its shorthand ``"fisherz"``, ``"chisq"``, ``"gsq"``, ``"bernoulli"``,
        ``"d_separation"``.
      alpha: level; "independent" means ``p > alpha``.
      max_depth: largest conditioning-set size (causal-learn ``max_k``).
      stable: PC-stable (default) or the original order-dependent PC.
      colliders: the collider rule and its conflict priority, an :class:`AbstractColliderRule` or the shorthand
        ``"sepset"`` / ``"maxp"`` / ``"definite_maxp"`` (priority 2). The flags ``uc_rule=`` / ``uc_priority=``
        of causal-learn are accepted for one release (deprecated) and build the object.
      background_knowledge: forbidden/required edges; built with names, it is matched to the data's names.
      true_dag: ``(d, d)`` bool DAG for the d-separation oracle.
      nan_policy: ``"raise"`` or ``"listwise"`` (drop incomplete rows).
      meek_r4: apply Meek's R4 (default: only with background knowledge).
      mesh: optional device mesh; CI-test batches are sharded along its first axis.
      max_batch: largest batch per kernel call.
      names: variable names for NumPy/JAX data (default: a DataFrame's columns, else none).
      progress: show the skeleton's levels (depth, tests so far, edges left) on standard error. None shows
        progress in an interactive terminal for loops driven from Python; a loop inside one compiled program
        reports only with progress=True.

    Returns:
      :class:`PCResult`.

    Raises:
      ValueError: alpha outside (0, 1), bad options (an unsupported ``ci_test`` or ``colliders``), NaN (with
        ``nan_policy="raise"``), constant or duplicated columns, non-integer data for discrete tests, too
        few samples for ``fisherz``, background knowledge naming unknown variables.
      TypeError: text or category columns with ``fisherz``.

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
    if isinstance(alpha, bool) or not (isinstance(alpha, int | float | np.integer | np.floating)
                                       and 0.0 < float(alpha) < 1.0):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha=}")
    rule = _as_collider_rule(colliders)
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int | np.integer)
                                  or max_depth < 0):
        raise ValueError(f"max_depth must be None or an integer >= 0, got {max_depth=}")
    ci_test = _as_ci_test(ci_test, CI_TESTS, "pc").name
    if ci_test == "d_separation":
        if true_dag is None:
            raise ValueError("ci_test='d_separation' needs true_dag=")
        true_dag = check_dag(true_dag, "true_dag")
        d = int(true_dag.shape[0])
        arr = None
    else:
        if data is None:
            raise ValueError(f"data is required for {ci_test=}")
        arr, names = prepare_data(data, ci_test=ci_test, nan_policy=nan_policy, names=names)
        d = arr.shape[1]
        if ci_test == "fisherz" and arr.shape[0] < 4:
            raise ValueError(f"fisherz needs n > |S| + 3 complete samples (at least 4), got n={arr.shape[0]}")
    if ci_test == "d_separation" and names is not None:
        names = tuple(str(v) for v in names)
        if len(names) != d:
            raise ValueError(f"names has {len(names)} entries but true_dag has d={d} nodes")
    # the (d, d, d) separating-set record (each level's tests are estimated before they are built)
    check_memory(float(d) ** 3 * 2.0, f"pc on d={d} variables (a (d, d, d) separating-set record)",
                 "use fewer variables, or pc_tree (O(d^2) memory)")
    show = resolve_progress(progress)

    def run():  # a function, so that its locals are freed before the collector is re-enabled
        nonlocal names
        bk = None
        forbid_both = None
        if background_knowledge is not None:
            bk, names = resolve_background(background_knowledge, d, names)
            forbid_both = bk[0] & bk[0].T
        tester = _Tester(ci_test, arr, true_dag, mesh, max_batch)
        with ProgressBar("pc", enabled=show, unit="level") as bar:
            def on_level(depth, num_tests, adj):
                bar.update(1, depth=depth, tests=num_tests, edges=int(adj.sum()) // 2)

            adj, sep, maxp, counted = _skeleton(tester, d, float(alpha), stable, max_depth, forbid_both, on_level)

        g = _orient._Graph(adj)
        if bk is not None:
            _orient.orient_by_background(g, bk)
        conflicts: list = []
        pfn = tester.pvalues

        def pfn_counted(triples):
            counted.update((min(x, y), max(x, y), *sorted(S)) for x, y, S in triples)
            return pfn(triples)

        r4 = (bk is not None) if meek_r4 is None else bool(meek_r4)
        pr = rule.priority
        if isinstance(rule, DefiniteMaxPColliders):
            duc, dnuc = _orient.definite_maxp(g, float(alpha), pr, bk, pfn_counted, conflicts)
            _orient.definite_meek(g, bk, duc, dnuc)
            _orient.meek(g, bk, r4)
        elif isinstance(rule, MaxPColliders):
            _orient.maxp(g, pr, bk, pfn_counted, conflicts)
            _orient.meek(g, bk, r4)
        else:
            _orient.uc_sepset(g, sep, pr, bk, pfn_counted, conflicts)
            _orient.meek(g, bk, r4)

        conf = np.zeros((d, d), bool)
        for x, y, z in conflicts:
            conf[x, y] = conf[y, x] = conf[z, y] = conf[y, z] = True
        maxp = np.where(np.isfinite(maxp), maxp, 0.0)
        return PCResult(
            # jax.device_put of host arrays compiles nothing; jnp.asarray compiles a small program per new shape.
            graph=jax.device_put(g.g.astype(np.int32)),
            edges=jax.device_put(np.asarray(graph_to_edges(g.g))),
            skeleton=jax.device_put(np.asarray(adj)),
            sepset=jax.device_put(np.asarray(sep)),
            max_pvalue=jax.device_put(np.asarray(maxp, dtype=_float_dtype())),
            num_tests=jax.device_put(np.asarray(len(counted), dtype=np.int32)),
            conflicts=jax.device_put(np.asarray(conf)),
            names=names,
        )

    with _gc_paused():
        return run()
