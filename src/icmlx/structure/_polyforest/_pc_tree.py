"""The poly-forest learner ("PC-tree") of Gao, Wang & Aragam (arXiv:2507.05689), fully jitted.

Skeleton: keep ``{j, k}`` iff ``j`` and ``k`` are dependent marginally AND given every single other node ``l``
(conditioning sets of size <= 1, all nodes as candidate separators -- no adaptivity, so every test is batched).
Colliders: ``j -> l <- k`` for non-adjacent neighbours ``j, k`` of ``l`` that are marginally independent.
Then Meek's R1 to a fixpoint (R2-R4 cannot fire on a forest skeleton).
"""

import dataclasses
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from icmlx._checks import check_values, is_traced
from icmlx._inputs import to_host
from icmlx._progress import resolve_progress

from ..._checks import check_int, check_number, default_float_dtype
from .._citests._testers import AbstractCITest, as_ci_test
from .._graphs._graph_io import GraphResult, graph_to_edges
from .._inputs import TableLike
from ._tree_scores import default_cond_bins

_INT32_MAX = 2**31 - 1

__all__ = ["PCTreeResult", "default_cond_bins", "pc_tree", "pc_tree_from_scores", "polyforest_scores"]


class PCTreeResult(GraphResult):
    """Output of `pc_tree` (fixed shapes, so the whole learner jits).

    Attributes:
      graph: ``(d, d)`` int CPDAG, causal-learn endpoint encoding (see `icmlx.structure.PCResult`).
      skeleton: ``(d, d)`` bool adjacency.
      marginal_score: ``(d, d)`` dependence score of the marginal test (larger = more dependent).
      conditional_score: ``(d, d)`` smallest dependence score over single separators ``l``.
      separator: ``(d, d)`` int: ``-1`` if the pair is marginally independent, else the ``l`` attaining
        ``conditional_score`` (a separator when the pair is not adjacent).
      conflicts: ``(d, d)`` bool edges left undirected because two rules oriented them both ways.
      num_tests: number of CI tests, ``d(d-1)/2 * (d-1)``.
      names: the variable names (a DataFrame's columns, or ``names=``), or ``None``.

    ``edges`` is the ``(e, 3)`` edge list in `icmlx.structure.PCResult`'s format (computed on the host
    from ``graph``); ``to_networkx()``, ``to_dot()`` and `icmlx.structure.plot_graph` hand the graph on.
    """

    graph: Int[Array, "d d"]
    skeleton: Bool[Array, "d d"]
    marginal_score: Float[Array, "d d"]
    conditional_score: Float[Array, "d d"]
    separator: Int[Array, "d d"]
    conflicts: Bool[Array, "d d"]
    num_tests: Int[Array, ""]
    names: tuple[str, ...] | None = eqx.field(static=True, default=None)

    @property
    def edges(self) -> Int[Array, "e 3"]:
        """``(e, 3)`` int edge list ``(i, j, kind)`` as `icmlx.structure.PCResult`'s ``edges``."""
        if is_traced(self.graph):
            raise TypeError("PCTreeResult.edges has a data-dependent length; read it outside jit (or use .graph)")
        return jnp.asarray(graph_to_edges(np.asarray(self.graph)))


def _num_tests(d: int) -> int:
    """``d(d-1)/2 * (d-1)``, checked against the count's dtype (int32 unless x64 is on) before any work."""
    count = d * (d - 1) // 2 * max(d - 1, 1)
    if count > _INT32_MAX and not jax.config.jax_enable_x64:
        raise ValueError(f"pc_tree on d={d} variables runs {count:,} CI tests, more than an int32 num_tests counts; "
                         "enable 64-bit counts with jax.config.update('jax_enable_x64', True), or use fewer variables")
    return count


def pc_tree_from_scores(
    marginal_score: Float[Array, "d d"],
    conditional_score: Float[Array, "d d"],
    separator: Int[Array, "d d"],
    cut0: Float[Array, ""],
    cut1: Float[Array, ""],
) -> PCTreeResult:
    r"""Skeleton, colliders and R1 from precomputed dependence scores (``dependent`` iff ``score >= cut``).

    Conflict policy (order-free): an edge that two colliders, or R1 from both ends, would orient both ways is
    left undirected and flagged in ``conflicts``.

    Args:
      marginal_score: ``(d, d)`` dependence score of the marginal tests.
      conditional_score: ``(d, d)`` smallest dependence score over the single separators.
      separator: ``(d, d)`` int separator attaining ``conditional_score``.
      cut0: scalar cuts of the marginal and the conditional scores.
      cut1: scalar cuts of the marginal and the conditional scores.

    Returns:
      `PCTreeResult`.

    References:
      Gao, Wang & Aragam, arXiv:2507.05689 (the PC-tree procedure); Meek, UAI (1995) (rule R1).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import pc_tree_from_scores
      >>> s0 = jnp.array([[0., 1, 0], [1, 0, 1], [0, 1, 0]])  # 0 - 1 - 2, with 0 _||_ 2
      >>> s1 = jnp.array([[0., 1, 0], [1, 0, 1], [0, 1, 0]])
      >>> res = pc_tree_from_scores(s0, s1, -jnp.ones((3, 3), jnp.int32), jnp.array(0.5), jnp.array(0.5))
      >>> res.graph.tolist()  # collider 0 -> 1 <- 2
      [[0, -1, 0], [1, 0, 1], [0, -1, 0]]

    Raises:
      ValueError: scores or separator not all ``(d, d)``, cuts not scalars, NaN scores or cuts (a runtime error
        under ``jit``), or more tests than an int32 count holds (without x64).
    """
    shapes = [np.shape(v) for v in (marginal_score, conditional_score, separator)]
    if len(shapes[0]) != 2 or shapes[0][0] != shapes[0][1] or len(set(shapes)) != 1:
        raise ValueError(f"marginal_score, conditional_score and separator must all be (d, d), got shapes {shapes}")
    if np.ndim(cut0) != 0 or np.ndim(cut1) != 0:
        raise ValueError(f"cut0 and cut1 must be scalars, got shapes {np.shape(cut0)} and {np.shape(cut1)}")
    msg = "pc_tree_from_scores got NaN scores or cuts; recompute them (polyforest_scores checks the data)"
    bad = lambda xp, v: xp.isnan(v)  # noqa: E731
    marginal_score, conditional_score = (check_values(jnp.asarray(v), bad, msg)
                                         for v in (marginal_score, conditional_score))
    cut0, cut1 = (check_values(jnp.asarray(v), bad, msg) for v in (cut0, cut1))
    _num_tests(shapes[0][0])
    return _from_scores(marginal_score, conditional_score, jnp.asarray(separator), cut0, cut1)


@jax.jit
def _from_scores(marginal_score, conditional_score, separator, cut0, cut1):
    d = marginal_score.shape[0]
    eye = jnp.eye(d, dtype=bool)
    dep0 = (marginal_score >= cut0) & ~eye
    dep1 = (conditional_score >= cut1) & ~eye
    dep0 = dep0 & dep0.T
    skel = dep0 & dep1 & dep1.T
    nonadj = ~skel & ~eye
    indep0 = ~dep0 & ~eye
    si = skel.astype(jnp.int32)
    # arrow[j, l]: some k != j, k - l, k !~ j, k _||_ j marginally
    cand = (nonadj & indep0).astype(jnp.int32)
    arrow = skel & ((cand @ si) > 0)
    clash = arrow & arrow.T
    conflicts = clash
    arrow = arrow & ~clash

    def step(c):
        ar, conf, _ = c
        und = skel & ~ar & ~ar.T & ~conf
        prop = und & ((ar.astype(jnp.int32).T @ nonadj.astype(jnp.int32)) > 0)  # a -> b, a !~ c => b -> c
        both = prop & prop.T
        new_ar = ar | (prop & ~both)
        new_conf = conf | both
        changed = jnp.any(new_ar != ar) | jnp.any(new_conf != conf)
        return new_ar, new_conf, changed

    arrow, conflicts, _ = jax.lax.while_loop(
        lambda c: c[2], step, (arrow, conflicts, jnp.array(True))
    )
    g = jnp.where(skel, -1, 0)
    g = jnp.where(arrow.T, 1, g)  # i -> j: g[j, i] = 1, g[i, j] = -1
    sep = jnp.where(dep0, separator, -1)
    count = _num_tests(d)
    num_tests = jnp.asarray(count, jnp.int64 if count > _INT32_MAX else jnp.int32)
    return PCTreeResult(
        graph=g.astype(jnp.int32),
        skeleton=skel,
        marginal_score=marginal_score,
        conditional_score=conditional_score,
        separator=sep.astype(jnp.int32),
        conflicts=conflicts & skel,
        num_tests=num_tests,
    )


def polyforest_scores(
    data: Float[ArrayLike, "n d"] | Int[ArrayLike, "n d"] | Bool[ArrayLike, "d d"] | TableLike,
    *,
    ci_test: str | AbstractCITest | Callable = "fisherz",
    alpha: float | None = 0.01,
    threshold: float | None = None,
    chunk_size: int | None = None,
) -> tuple[Float[Array, "d d"], Float[Array, "d d"], Int[Array, "d d"], Float[Array, ""], Float[Array, ""]]:
    """Dependence scores ``(marginal, min-over-l conditional, argmin l, cut0, cut1)`` used by `pc_tree`.

    Arguments as `pc_tree`; ``pc_tree(data, ...)`` is ``pc_tree_from_scores(*polyforest_scores(data, ...))``.

    Returns:
      ``(marginal, conditional, separator, cut0, cut1)``: two ``(d, d)`` float scores, the ``(d, d)`` int argmin
      separator and the two scalar cuts ("dependent" iff ``score >= cut``).

    References:
      Gao, Wang & Aragam, arXiv:2507.05689.

    Examples:
      >>> import jax
      >>> from icmlx.structure import polyforest_scores, random_polyforest, sample_linear_gaussian
      >>> x = sample_linear_gaussian(jax.random.key(0), random_polyforest(jax.random.key(0), 5), 500)
      >>> s0, s1, sep, cut0, cut1 = polyforest_scores(x, alpha=0.01)
      >>> s0.shape, sep.shape
      ((5, 5), (5, 5))
    """
    test = as_ci_test(ci_test, "pc_tree")
    data, _ = _prepare(data, test, alpha, threshold, None)
    _check_chunk_size(chunk_size)
    return test._tree_scores(data, alpha, threshold, chunk_size, False)


def _prepare(data, test: AbstractCITest, alpha, threshold, names):
    """Host-side checks of ``pc_tree``'s inputs, by the tester's `check_input` (as
    `icmlx.structure.pc`'s); ``(data, names)``. Host input stays on the host, cast as it will be used (the
    tester's scores upload it once, or only the statistics they need), so that the sample does not travel to the
    device and back."""
    if threshold is None and test.uses_alpha:
        if alpha is None:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha=}")
        check_number(alpha, "alpha", minimum=0, maximum=1, open_minimum=True, open_maximum=True)
    if is_traced(data):  # inside the user's jit: the checks run in the tester's scores, as error_if
        return jnp.asarray(data), names
    arr, names = test.check_input(data, nan_policy="raise", names=names)
    if isinstance(arr, np.ndarray) and arr.ndim == 2:
        test._check_distinct(arr, names)
    if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":  # codes, or the oracle's DAG
        return arr, names
    if isinstance(data, jax.Array):
        return jnp.asarray(arr), names
    if np.asarray(data).dtype.kind == "f":  # float input keeps JAX's default float dtype
        return to_host(arr), names
    return to_host(arr, default_float_dtype()), names


def _check_chunk_size(chunk_size) -> None:
    if chunk_size is not None:
        check_int(chunk_size, "chunk_size", minimum=1)


def pc_tree(
    data: Float[ArrayLike, "n d"] | Int[ArrayLike, "n d"] | Bool[ArrayLike, "d d"] | TableLike,
    *,
    ci_test: str | AbstractCITest | Callable = "fisherz",
    alpha: float | None = 0.01,
    threshold: float | None = None,
    chunk_size: int | None = None,
    names: list[str] | tuple[str, ...] | None = None,
    progress: bool | None = None,
) -> PCTreeResult:
    r"""Learn a poly-forest CPDAG with the optimal PC-tree procedure of Gao, Wang & Aragam.

    $$
    j - k \in \hat E \iff \psi(j,k\mid\emptyset) = \text{dep} \ \wedge\
    \psi(j,k\mid\{l\}) = \text{dep}\ \ \forall l \notin \{j,k\},
    $$

    then ``j -> l <- k`` for neighbours ``j, k`` of ``l`` with $\psi(j,k\mid\emptyset)=\text{indep}$,
    then R1. All $O(d^3)$ tests are computed in one jitted pass, chunked over ``l`` so memory is
    $O(d^2\cdot\text{chunk})$.

    Testers (strategy objects, or their string shorthands) and calibrations:

    * `FisherZ` (``"fisherz"``): score ``|ρ_{jk·S}|``; with ``alpha`` the cut is
      $\tanh(\Phi^{-1}(1-\alpha/2)/\sqrt{n-|S|-3})$ (same decisions as Fisher-z ``p > alpha``);
      with ``threshold`` the cut is ``threshold`` (the paper's calibrated τ ≈ c/2).
    * `Bernoulli` (``"bernoulli"``): with ``alpha``, Pearson χ² p-values; with ``threshold``, the
      covariance gap $\sum_z \hat p(z)|\hat p_{11|z}-\hat p_{1\cdot|z}\hat p_{\cdot1|z}|$.
    * `Nonparametric` (``"nonparametric"`` = ``Nonparametric()``): binned U-statistic (``num_bins``
      equal-frequency bins for ``j, k``, ``cond_bins`` for the separator ``l``). With ``alpha``, the asymptotic
      p-value of `icmlx.structure.nonparametric_test` (weighted-χ² null, Pearson's three-moment
      approximation), "dependent" iff ``p <= alpha``; with ``threshold``, the statistic ``T`` itself is
      thresholded. Conditioning on a binned ``l`` leaves a residual dependence that only vanishes as
      ``cond_bins`` grows, so by default (``cond_bins=None``) it grows like $\sqrt n$
      (`default_cond_bins`).
    * `DSeparation` (``"d_separation"``): pass the true DAG as ``data`` (oracle).

    Args:
      data: ``(n, d)`` samples (NumPy/JAX array or pandas DataFrame; its column names name the result), or
        the ``(d, d)`` DAG for the oracle. Checked on the host as `pc` checks its data (missing values,
        constant or duplicated columns, too few samples); for ``bernoulli`` two-valued columns of any type
        (bool, strings, categories, 1/2) are coded 0/1.
      ci_test: the tester, an `AbstractCITest` or its string shorthand.
      alpha: level (ignored when ``threshold`` is given).
      threshold: calibrated cut on the statistic (positive; below 1 for ``fisherz``, whose statistic is a
        partial correlation).
      chunk_size: separators per chunk (default keeps a chunk near 2^23 scores).
      names: variable names for NumPy/JAX data (default: a DataFrame's columns, else none).
      progress: report each chunk of separators from inside the compiled program (standard error). None
        shows progress in an interactive terminal for loops driven from Python; a loop inside one compiled
        program reports only with progress=True (this learner is one compiled program).

    Returns:
      `PCTreeResult`.

    Raises:
      ValueError / TypeError: bad tester, alpha outside (0, 1), a threshold out of range, wrong dtype or text
        columns, NaN/Inf, constant or duplicated columns, ``n <= 4`` for ``fisherz``, non-binary data for
        ``bernoulli``. Inside the caller's ``jit`` only the dtype and NaN/0-1 checks run (as runtime errors).

    References:
      Gao, Wang & Aragam, "Optimal structure learning and conditional independence testing", ICML 2026,
      arXiv:2507.05689; Wang et al., arXiv:2402.06380.

    Examples:
      >>> import jax
      >>> from icmlx.structure import Nonparametric, pc_tree, random_polyforest, sample_linear_gaussian
      >>> from icmlx.structure import dag_to_cpdag, sample_nonlinear
      >>> key = jax.random.key(0)
      >>> dag = random_polyforest(key, 8)
      >>> x = sample_linear_gaussian(key, dag, 3000)
      >>> res = pc_tree(x, alpha=0.001)
      >>> bool((res.graph == dag_to_cpdag(dag)).all())
      True
      >>> res = pc_tree(sample_nonlinear(key, dag, 600), ci_test=Nonparametric(num_bins=3), alpha=0.001)
      >>> res.graph.shape, int(res.num_tests)
      ((8, 8), 196)
    """
    test = as_ci_test(ci_test, "pc_tree")
    data, names = _prepare(data, test, alpha, threshold, names)
    _check_chunk_size(chunk_size)
    _num_tests(data.shape[-1])  # before the O(d^3) work, not after it
    show = resolve_progress(progress, in_program=True)
    res = _from_scores(*test._tree_scores(data, alpha, threshold, chunk_size, show))
    if show:
        jax.effects_barrier()  # the chunk reports are printed before the call returns
    return res if names is None else dataclasses.replace(res, names=names)
