r"""``multipletests``: every p-value adjustment of ``statsmodels.stats.multitest.multipletests`` on one engine.

Each method is a `_Procedure` (a strategy object) that maps one family of p-values, sorted ascending when it
needs them sorted, to its decisions and adjusted p-values. The engine around it does what all methods share: the
sort and its inverse (one ``lax.sort`` carrying the permutation), the NaN policy, the per-row family size, the clip
at 1 and the vectorisation over rows. `benjamini_hochberg`'s ``"sort"`` path, `bh_adjusted_pvalues`
and `bonferroni` call the same engine.

Every formula follows the operation order of statsmodels 0.14/0.15 (for instance ``(m * p) / j`` in Hommel's
Simes minima and ``p / ((k / n))`` in the BH adjustment), so the adjusted p-values agree to rounding of the
transcendental functions (Šidák) and exactly elsewhere, and the decisions agree test for test.
"""

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .._checks import check_values, is_traced
from .._types import RealScalarLike
from ._checks import Labels, _where_first, check_scalar, host_input_array
from ._records import rejected_labels

__all__ = ["METHODS", "MultipleTestsResult", "multipletests"]


class MultipleTestsResult(eqx.Module):
    """Result of `multipletests` (the four outputs of statsmodels' ``multipletests``, per row).

    Attributes:
      reject: decisions, shape ``(*batch, n)`` (``False`` for a NaN p-value under ``nan_policy="omit"`` and for
        every test of a row with a NaN under ``"propagate"``).
      pvalues_adjusted: adjusted p-values, shape ``(*batch, n)``, clipped at 1 (NaN where the input was NaN under
        ``"omit"``, and for the whole row under ``"propagate"``).
      alpha_sidak: the Šidák per-test level $1-(1-\\alpha)^{1/m}$ of each row's family size ``m``, shape
        ``(*batch,)``.
      alpha_bonferroni: the Bonferroni per-test level $\\alpha/m$, shape ``(*batch,)``.
      num_tests: the family size ``m`` per row (the non-NaN p-values), shape ``(*batch,)``.
      method: the method name.
    """

    reject: Bool[Array, "*batch n"]
    pvalues_adjusted: Float[Array, "*batch n"]
    alpha_sidak: Float[Array, "*batch"]
    alpha_bonferroni: Float[Array, "*batch"]
    num_tests: Int[Array, "*batch"]
    method: str = eqx.field(static=True)
    _labels: Labels | None = eqx.field(static=True, default=None)

    @property
    def num_rejected(self) -> Array:
        """Number of rejections per row."""
        return jnp.sum(self.reject, axis=-1)

    @property
    def labels(self) -> Any:
        """The pandas index of the Series passed in, or ``None``."""
        return None if self._labels is None else self._labels.index

    @property
    def rejected_labels(self) -> Any:
        """Labels of the rejected tests (a pandas Index for Series input), else their positions (per row)."""
        return rejected_labels(self.reject, self._labels)

    def __repr__(self) -> str:
        if isinstance(self.reject, jax.core.Tracer):
            return f"MultipleTestsResult(method={self.method!r})"
        nrej = np.asarray(self.num_rejected)
        nrej = int(nrej) if nrej.ndim == 0 else nrej.tolist()
        return f"MultipleTestsResult(method={self.method!r}, num_tests={self.reject.shape[-1]}, num_rejected={nrej})"


# --- the procedures -------------------------------------------------------------------------------------------------
#
# Each works on one row: ``p`` (sorted ascending with the NaN/padding entries last when ``needs_sort``), ``valid``
# (which entries belong to the family), ``n`` (the family size as a float of p's dtype, traced) and ``alpha``. It
# returns (reject, adjusted) before the clip at 1; the engine masks the invalid entries.


@dataclasses.dataclass(frozen=True)
class _Procedure:
    """One multiple-testing method: ``run(p, valid, n, alpha) -> (reject, adjusted)`` on one row."""

    needs_sort: bool
    run: Callable[..., tuple[Array, Array]]
    summary: str


def _ranks(p, valid):
    """``(rank, k)`` as floats: the 1-based ranks and the step-down counts ``k = m - rank + 1`` (m, m-1, ..., 1 over
    the family of size m).

    Both are formed in int32 and then converted: positions past 2^24 are not all float32 numbers, and ``m - i`` of
    rounded floats came out 0 near the end of a family of 10^8 (Hochberg's ``alpha / k`` was then infinite).
    """
    i = jnp.arange(p.shape[-1], dtype=jnp.int32)
    m = jnp.sum(valid, dtype=jnp.int32)
    return (i + 1).astype(p.dtype), jnp.maximum(m - i, 1).astype(p.dtype)


def _step_down(p, crit, valid):
    """Reject the sorted p-values before the first one above its critical value (statsmodels' ``notrejectmin``)."""
    notreject = ~(p <= crit) | ~valid
    return jnp.cumsum(notreject.astype(jnp.int32)) == 0


def _step_up(p, crit, valid):
    """Reject every sorted p-value up to the last one at or below its critical value."""
    hit = (p <= crit) & valid
    return jax.lax.cummax(hit.astype(jnp.int32), reverse=True) > 0


def _cummax(raw, valid):
    return jax.lax.cummax(jnp.where(valid, raw, -jnp.inf))


def _rev_cummin(raw, valid):
    return jax.lax.cummin(jnp.where(valid, raw, jnp.inf), reverse=True)


def _sidak_alpha(alpha, k):
    # 1 - (1 - alpha)^(1/k) without the cancellation of 1 - (a number near 1): in float32 that form loses every
    # digit once alpha / k is below the spacing of floats near 1 (k above about 10^6 at alpha = 0.05)
    return -jnp.expm1(jnp.log1p(-alpha) / k)


def _bonferroni(p, valid, n, alpha):
    return p <= alpha / n, p * n


def _sidak(p, valid, n, alpha):
    return p <= _sidak_alpha(alpha, n), -jnp.expm1(n * jnp.log1p(-p))


def _holm_sidak(p, valid, n, alpha):
    _, k = _ranks(p, valid)
    reject = _step_down(p, _sidak_alpha(alpha, k), valid)
    return reject, _cummax(-jnp.expm1(k * jnp.log1p(-p)), valid)


def _holm(p, valid, n, alpha):
    _, k = _ranks(p, valid)
    return _step_down(p, alpha / k, valid), _cummax(p * k, valid)


def _simes_hochberg(p, valid, n, alpha):
    _, k = _ranks(p, valid)
    return _step_up(p, alpha / k, valid), _rev_cummin(k * p, valid)


def _bh_core(p, valid, n, alpha, scale=None):
    """BH (``scale=None``) or BY (``scale`` = the harmonic sum): step-up on ``ecdf * alpha``, ``p / ecdf`` adjusted."""
    rank, _ = _ranks(p, valid)
    ecdf = rank / n
    if scale is not None:
        ecdf = ecdf / scale
    return _step_up(p, ecdf * alpha, valid), _rev_cummin(p / ecdf, valid)


def _fdr_bh(p, valid, n, alpha):
    return _bh_core(p, valid, n, alpha)


def _fdr_by(p, valid, n, alpha):
    rank, _ = _ranks(p, valid)
    cm = jnp.sum(jnp.where(valid, 1.0 / rank, 0.0))
    return _bh_core(p, valid, n, alpha, cm)


def _two_stage(p, valid, n, alpha, bky):
    """Two-stage linear step-up (statsmodels' ``fdrcorrection_twostage`` with ``maxiter=1``)."""
    fact = 1.0 + alpha if bky else jnp.ones_like(alpha)
    alpha1 = alpha / fact if bky else alpha
    rej1, adj = _bh_core(p, valid, n, alpha1)
    adj = jnp.minimum(adj, 1.0)
    r1 = jnp.sum(rej1).astype(p.dtype)
    n0 = n - r1  # the estimated number of true nulls
    alpha_star = alpha1 * n / n0
    rej2, _ = _bh_core(p, valid, n, alpha_star)
    second = adj * (n0 / n)
    if bky:
        second = second * (1.0 + alpha)
    one_stage = (r1 == 0) | (r1 == n)
    return jnp.where(one_stage, rej1, rej2), jnp.where(one_stage, adj * fact, second)


def _fdr_tsbh(p, valid, n, alpha):
    return _two_stage(p, valid, n, alpha, bky=False)


def _fdr_tsbky(p, valid, n, alpha):
    return _two_stage(p, valid, n, alpha, bky=True)


def _first_true(pred, lo, hi, steps):
    """Vectorised bisection: the first integer in ``(lo, hi]`` where the monotone ``pred`` holds (``pred(hi)`` is
    taken to hold, ``pred(lo)`` not), elementwise over the shape of ``lo`` and ``hi``; ``steps`` is static."""

    def body(_, lohi):
        lo, hi = lohi
        mid = (lo + hi) // 2
        open_ = hi - lo > 1  # once the bracket is one wide, mid = lo and the answer is hi
        ok = pred(mid) | ~open_
        return jnp.where(ok, lo, mid), jnp.where(ok & open_, mid, hi)

    return jax.lax.fori_loop(0, steps, body, (lo, hi))[1]


#: The largest family Hommel's hull loop counts in int32 (``2 * size`` steps).
_HOMMEL_MAX = 2**30 - 1
#: Values per chunk of Hommel's bisections (their working memory is a few arrays of this size).
_HOMMEL_CHUNK = 2**16


def _lower_hull(p, m):
    """The lower convex hull of the points ``(k, p_(k))``, ``k = 1..m``, of sorted ``p`` (monotone chain).

    Returns ``(hull, count)``: the 1-based positions of the hull's vertices, left to right, in ``hull[:count]``.
    A vertex is dropped when it lies on or above the segment joining its neighbours, so collinear and tied points
    leave only the ends of their segment. Each point is pushed once and popped at most once, so ``2 * size`` steps
    of a ``fori_loop`` finish every row; the steps after a row's last point change nothing. (A fixed trip count
    keeps the loop's predicate unbatched under ``vmap``: a batched ``while_loop`` selects its whole state at every
    step.)

    The loop's state (the stack, then the next point ``k`` and the stack size) is one int32 array updated by one
    scatter per step. Every read of the state then feeds that scatter only, and XLA updates the array in place; with
    the two counters carried beside the stack, fusion duplicates the stack reads into the counters' updates and XLA
    copies the stack at every step.
    """
    size = p.shape[-1]
    if size > _HOMMEL_MAX:
        raise ValueError(f"multipletests(method='hommel') handles up to {_HOMMEL_MAX} tests per row (the hull's "
                         f"2 * size steps are counted in int32), got {size}")
    dt = p.dtype
    at_k, at_top = size, size + 1  # the slots of the counters

    def y(k):  # p at the 1-based position k
        return p[jnp.clip(k - 1, 0, size - 1)]

    def body(_, state):
        k, top = state[at_k], state[at_top]
        j = state[jnp.maximum(top - 1, 0)]
        i = state[jnp.maximum(top - 2, 0)]
        live = k <= m
        # (j - i)(p_k - p_i) <= (k - i)(p_j - p_i): j is not strictly below the chord from i to k
        pop = (top >= 2) & ((j - i).astype(dt) * (y(k) - y(i)) <= (k - i).astype(dt) * (y(j) - y(i)))
        push = live & ~pop
        pop = live & pop
        # a pop (or a finished row) rewrites the top of the stack with its own value: a no-op
        where = jnp.stack([jnp.where(push, top, jnp.maximum(top - 1, 0)), jnp.int32(at_k), jnp.int32(at_top)])
        what = jnp.stack([jnp.where(push, k, j), jnp.where(push, k + 1, k),
                          jnp.where(push, top + 1, jnp.where(pop, top - 1, top))])
        return state.at[where].set(what, unique_indices=True)

    state = jnp.zeros(size + 2, jnp.int32).at[at_k].set(1)
    state = jax.lax.fori_loop(0, 2 * size, body, state)
    return state[:size], state[at_top]


def _hommel(p, valid, n, alpha):
    r"""Hommel's adjusted p-values on sorted ``p`` in $O(m\log m)$ (Meijer, Krebs & Goeman 2019).

    With $a_i=\min_{j\le i} i\,p_{(m-i+j)}/j$ the Simes p-value of the $i$ largest p-values, statsmodels' loop over
    $i=m,\dots,2$ gives $\tilde p_{(k)}=\max_{1\le i\le m}\min(i\,p_{(k)}, a_i)$ (its $i=1$ term is $p_{(k)}$).

    - $a_i/i$ is the least slope from $(m-i, 0)$ to the points $(k, p_{(k)})$, $k>m-i$. That line supports every
      point, so it touches the lower convex hull of the points at a vertex right of $m-i$ (`_lower_hull`), and the
      slopes to the vertices are unimodal along the hull: a bisection per $i$ finds the vertex.
    - $a_i$ does not increase with $i$ and $i\,p$ does, so $\{i: i\,p_{(k)}\le a_i\}$ is $\{1,\dots,J\}$ and the
      maximum is at $J$ or $J+1$ (a bisection per $k$; $a_{m+1}=0$).

    Each value is formed as statsmodels forms it, $(i\,p)/j$ and $\min(i\,p, a_i)$, so the results agree to
    rounding; tied p-values get identical adjusted values. Both bisections run over chunks of `_HOMMEL_CHUNK`
    values (``lax.map``), so their working memory is a budget and the only arrays of the family's size are ``p``,
    the hull, the $a_i$ and the result.
    """
    size = p.shape[-1]
    dt = p.dtype
    m = jnp.sum(valid, dtype=jnp.int32)
    steps = max(1, int(size).bit_length() + 1)
    chunk = min(_HOMMEL_CHUNK, size)
    hull, count = _lower_hull(p, m)
    # hull positions past the count act as +infinity in the searches below
    hull = jnp.where(jnp.arange(size, dtype=jnp.int32) < count, hull, size + 1)
    last = count - 1

    def y(k):
        return p[jnp.clip(k - 1, 0, size - 1)]

    def simes(i):  # a_i for one set size i (0 past the family)
        x0 = m - i  # the x-axis point whose least slope to the right is a_i / i
        first = jnp.searchsorted(hull, x0, side="right").astype(jnp.int32)  # the first vertex right of x0

        def flat_from(t):  # the slope to vertex t is no larger than the slope to vertex t + 1
            v, w = hull[jnp.minimum(t, size - 1)], hull[jnp.minimum(t + 1, size - 1)]
            return (t >= last) | (y(v) * (w - x0).astype(dt) <= y(w) * (v - x0).astype(dt))

        v = hull[jnp.minimum(_first_true(flat_from, first - 1, jnp.maximum(last, first), steps), size - 1)]
        return jnp.where(i <= m, (i.astype(dt) * y(v)) / (v - x0).astype(dt), 0.0)  # statsmodels' (m p) / j

    a = jax.lax.map(simes, jnp.arange(1, size + 1, dtype=jnp.int32), batch_size=chunk)

    def a_at(j):  # a_j for j = 1..m, and a_{m+1} = 0
        return jnp.where(j <= m, a[jnp.clip(j - 1, 0, size - 1)], 0.0)

    def adjusted(pk):  # the adjusted value of one sorted p-value
        def past(j):  # j p > a_j: j is beyond the prefix where the Simes term j p is the smaller
            return (j > m) | (j.astype(dt) * pk > a_at(j))

        jj = jnp.maximum(_first_true(past, jnp.int32(0), m + 1, steps) - 1, 1)
        adj = jnp.maximum(jnp.minimum(jj.astype(dt) * pk, a_at(jj)),
                          jnp.minimum((jj + 1).astype(dt) * pk, a_at(jj + 1)))
        return jnp.maximum(adj, pk)  # statsmodels starts from p itself

    adj = jax.lax.map(adjusted, p, batch_size=chunk)
    return adj <= alpha, adj


#: The methods by statsmodels name (the aliases statsmodels accepts map to the same procedures).
_PROCEDURES: dict[str, _Procedure] = {
    "bonferroni": _Procedure(False, _bonferroni, "one-step Bonferroni (FWER)"),
    "sidak": _Procedure(False, _sidak, "one-step Šidák (FWER, independent tests)"),
    "holm-sidak": _Procedure(True, _holm_sidak, "step-down with Šidák levels (FWER, independent tests)"),
    "holm": _Procedure(True, _holm, "step-down Holm (FWER)"),
    "simes-hochberg": _Procedure(True, _simes_hochberg, "step-up Hochberg (FWER, independent tests)"),
    "hommel": _Procedure(True, _hommel, "closed Simes tests (FWER, independent or positively dependent)"),
    "fdr_bh": _Procedure(True, _fdr_bh, "Benjamini-Hochberg (FDR, independent or positively dependent)"),
    "fdr_by": _Procedure(True, _fdr_by, "Benjamini-Yekutieli (FDR, any dependence)"),
    "fdr_tsbh": _Procedure(True, _fdr_tsbh, "two-stage BH (FDR, adaptive)"),
    "fdr_tsbky": _Procedure(True, _fdr_tsbky, "two-stage Benjamini-Krieger-Yekutieli (FDR, adaptive)"),
}

_ALIASES = {
    "b": "bonferroni", "bonf": "bonferroni", "s": "sidak", "hs": "holm-sidak", "h": "holm",
    "sh": "simes-hochberg", "ho": "hommel", "fdr_i": "fdr_bh", "fdr_p": "fdr_bh", "fdri": "fdr_bh",
    "fdrp": "fdr_bh", "fdr_n": "fdr_by", "fdr_c": "fdr_by", "fdrn": "fdr_by", "fdrcorr": "fdr_by",
    "fdr_2sbh": "fdr_tsbh", "fdr_2sbky": "fdr_tsbky", "fdr_twostage": "fdr_tsbky",
}

#: The method names `multipletests` accepts (statsmodels' names; its short aliases are accepted too).
METHODS = tuple(_PROCEDURES)

_NAN_POLICIES = ("raise", "omit", "propagate")


def _resolve_method(method: Any) -> str:
    if not isinstance(method, str):
        raise TypeError(f"method must be a string such as 'fdr_bh', got {method=!r}")
    name = _ALIASES.get(method.lower(), method.lower())
    if name not in _PROCEDURES:
        raise ValueError(f"unknown method {method!r}; use one of {METHODS}")
    return name


def _row(p, alpha, procedure):
    """One family: sort (if needed), run the procedure, clip, unsort."""
    size = p.shape[-1]
    valid = ~jnp.isnan(p)
    n_int = jnp.sum(valid, dtype=jnp.int32)
    n = n_int.astype(p.dtype)
    if procedure.needs_sort:
        key = jnp.where(valid, p, jnp.inf)  # the family first, NaN entries last
        ps, perm = jax.lax.sort((key, jnp.arange(size, dtype=jnp.int32)), num_keys=1)
        vs = jnp.arange(size, dtype=jnp.int32) < n_int
        rej, adj = procedure.run(ps, vs, n, alpha)
        rej = jnp.zeros(size, bool).at[perm].set(rej & vs)
        adj = jnp.zeros(size, p.dtype).at[perm].set(adj)
    else:
        rej, adj = procedure.run(jnp.where(valid, p, 0.0), valid, n, alpha)
        rej = rej & valid
    adj = jnp.where(valid, jnp.minimum(adj, 1.0), jnp.nan)
    return rej, adj, _sidak_alpha(alpha, n), alpha / n, n_int


@functools.partial(jax.jit, static_argnames=("method", "propagate"))
def _engine(p, alpha, method, propagate):
    procedure = _PROCEDURES[method]
    batch, size = p.shape[:-1], p.shape[-1]
    flat = p.reshape(-1, size)
    rej, adj, a_sidak, a_bonf, n = jax.vmap(lambda r: _row(r, alpha, procedure))(flat)
    if propagate:
        bad = jnp.any(jnp.isnan(flat), axis=-1, keepdims=True)
        rej = rej & ~bad
        adj = jnp.where(bad, jnp.nan, adj)
    return (rej.reshape(p.shape), adj.reshape(p.shape), a_sidak.reshape(batch), a_bonf.reshape(batch),
            n.reshape(batch))


@functools.partial(jax.jit, static_argnames=("method", "propagate"))
def _sorted_engine(ps, n_int, bad, alpha, method, propagate):
    """The procedure on rows already sorted on the host (NaN last), ``n_int`` the family size of each row."""
    procedure = _PROCEDURES[method]
    size = ps.shape[-1]

    def row(q, k):
        vs = jnp.arange(size, dtype=jnp.int32) < k
        n = k.astype(q.dtype)
        rej, adj = procedure.run(q, vs, n, alpha)
        adj = jnp.where(vs, jnp.minimum(adj, 1.0), jnp.nan)
        return rej & vs, adj, _sidak_alpha(alpha, n), alpha / n

    rej, adj, a_sidak, a_bonf = jax.vmap(row)(ps, n_int)
    if propagate:
        rej = rej & ~bad[:, None]
        adj = jnp.where(bad[:, None], jnp.nan, adj)
    return rej, adj, a_sidak, a_bonf


def _host_sorted(v: np.ndarray, alpha: Array, method: str, propagate: bool) -> tuple[Array, ...]:
    """A sorted method on NumPy input: the sort and its inverse on the host, the procedure jitted.

    NumPy's sort of a large family is several times faster than XLA's CPU sort carrying the permutation, and the
    inverse permutation is one NumPy scatter. The procedure (and so every decision and adjusted p-value) is the
    same compiled code as on the device path; only where the rows are sorted differs.
    """
    size = v.shape[-1]
    flat = v.reshape(-1, size)
    nan = np.isnan(flat)
    key = np.where(nan, np.inf, flat) if nan.any() else flat
    perm = np.argsort(key, axis=-1)
    ps = np.take_along_axis(key, perm, axis=-1)
    n_int = (size - nan.sum(axis=-1)).astype(np.int32)
    rej_s, adj_s, a_sidak, a_bonf = _sorted_engine(ps, n_int, nan.any(axis=-1), alpha, method, propagate)
    rej = np.empty(flat.shape, bool)
    adj = np.empty(flat.shape, v.dtype)
    np.put_along_axis(rej, perm, np.asarray(rej_s), axis=-1)
    np.put_along_axis(adj, perm, np.asarray(adj_s), axis=-1)
    batch = v.shape[:-1]
    return (jnp.asarray(rej.reshape(v.shape)), jnp.asarray(adj.reshape(v.shape)), a_sidak.reshape(batch),
            a_bonf.reshape(batch), jnp.asarray(n_int.reshape(batch)))


def check_alpha(alpha: Any, dtype: Any) -> jax.Array:
    """``alpha`` as a scalar of ``dtype`` in (0, 1); a string or other non-number is a ``TypeError`` naming it."""
    if isinstance(alpha, str):
        raise TypeError(f"alpha must be a real number, got the string alpha={alpha!r}")
    a = check_scalar("alpha", alpha, dtype, lo=0.0, hi=1.0)
    if a.ndim != 0:
        raise ValueError(f"alpha must be a scalar, got shape {a.shape}")
    return a


def prepare_pvalues(pvalues: Any, where: str, nan_policy: str, keep_host: bool = False) -> tuple[Any, Labels | None]:
    """P-values as a floating array with a non-empty tests axis, checked for ``[0, 1]`` (NaN per ``nan_policy``).

    Host input (list, NumPy, Series) comes back as a NumPy array when ``keep_host``, else on the device.
    """
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(f"{where}: nan_policy must be one of {_NAN_POLICIES}, got {nan_policy=!r}")
    p, labels = host_input_array(pvalues, "pvalues")
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"{where}: pvalues must have a non-empty last (tests) axis, got {p.shape=}")
    allow_nan = nan_policy != "raise"
    hint = "; pass nan_policy='omit' to leave them out of the family" if not allow_nan else ""
    if is_traced(p):
        p = check_values(
            p, lambda xp, v: ((xp.isnan(v) & (not allow_nan)) | (v < 0.0) | (v > 1.0)),
            f"{where}: pvalues must lie in [0, 1] (NaN or out-of-range value found{hint})",
        )
        return p, labels
    v = np.asarray(p)
    if not allow_nan and np.isnan(v).any():
        found = _where_first(np.isnan(v), labels).format(what="NaN value")
        raise ValueError(f"{where}: pvalues contains {found}{hint}")
    out = (v < 0.0) | (v > 1.0)
    if out.any():
        found = _where_first(out, labels).format(what="value")
        raise ValueError(f"{where}: pvalues must lie in [0, 1], but {found} lie outside; for z-scores pass "
                         "two_sided_pvalues(z)")
    return (p if keep_host or not isinstance(p, np.ndarray) else jax.device_put(p)), labels


def run_method(p: Any, alpha: Array, method: str, nan_policy: str = "raise") -> tuple[Array, ...]:
    """The engine on checked p-values: ``(reject, adjusted, alpha_sidak, alpha_bonferroni, num_tests)``.

    A NumPy ``p`` of a method that sorts takes the host-sort path (`_host_sorted`); any other input the jitted
    engine (a NumPy ``p`` is put on the device first).
    """
    name = _resolve_method(method)
    propagate = nan_policy == "propagate"
    if isinstance(p, np.ndarray):
        if _PROCEDURES[name].needs_sort:
            return _host_sorted(p, alpha, name, propagate)
        p = jax.device_put(p)
    return _engine(p, alpha, name, propagate)


def multipletests(
    pvalues: Any,
    alpha: RealScalarLike = 0.05,
    method: str = "fdr_bh",
    *,
    nan_policy: str = "raise",
) -> MultipleTestsResult:
    r"""Multiple-testing adjustment of p-values: every method of statsmodels' ``multipletests``, batched.

    With the sorted p-values $p_{(1)}\le\dots\le p_{(m)}$ of one family:

    - ``"bonferroni"``: $\tilde p_i=\min(1, m p_i)$; ``"sidak"``: $\tilde p_i=1-(1-p_i)^m$.
    - ``"holm"``: step-down, $\tilde p_{(i)}=\max_{j\le i}(m-j+1)p_{(j)}$; ``"holm-sidak"`` the same with
      $1-(1-p_{(j)})^{m-j+1}$.
    - ``"simes-hochberg"``: step-up, $\tilde p_{(i)}=\min_{j\ge i}(m-j+1)p_{(j)}$.
    - ``"hommel"``: the closure of Simes tests, $\tilde p_i=\max_{I\ni i}\min_{j}|I|\,p_{(j:I)}/j$
      (the maximum over the worst index set of each size).
    - ``"fdr_bh"``: $\tilde p_{(i)}=\min_{j\ge i} m p_{(j)}/j$; ``"fdr_by"`` multiplies by
      $\sum_{k=1}^m 1/k$.
    - ``"fdr_tsbh"``, ``"fdr_tsbky"``: two-stage adaptive BH (Benjamini, Krieger & Yekutieli 2006): BH at
      $\alpha'$ ($\alpha$ for tsbh, $\alpha/(1+\alpha)$ for tsbky) gives $r_1$
      rejections, then BH at $\alpha' m/(m-r_1)$; the adjusted p-values are the BH ones times
      $(m-r_1)/m$ (and $1+\alpha$ for tsbky), so they depend on $\alpha$.

    The decisions and the ``reject``/``pvalues_adjusted`` arrays are those of
    ``statsmodels.stats.multitest.multipletests(row, alpha, method)`` for each row (statsmodels' operation order,
    ``maxiter=1`` for the two-stage methods). Host input (list, NumPy, Series) is sorted by NumPy and the
    procedure runs jitted on the sorted rows; JAX and traced input is sorted by one ``lax.sort`` per row. Hommel
    costs $O(m\log m)$ after the sort (Meijer, Krebs & Goeman 2019; statsmodels' loop is $O(m^2)$).

    Args:
      pvalues: p-values in [0, 1], shape ``(*batch, m)``: a list, NumPy or JAX array or pandas Series; one family
        per row (leading axes are batch axes).
      alpha: the FWER or FDR level in (0, 1) (a number; a string is a ``TypeError``).
      method: one of `METHODS` (statsmodels' names; its short aliases such as ``"hs"`` also work). Static
        under ``jax.jit``.
      nan_policy: ``"raise"`` (default): NaN is an error; ``"omit"``: NaN p-values leave the family (its size
        ``m`` counts the others) and come back not rejected with a NaN adjusted p-value; ``"propagate"``: a row
        with a NaN comes back all NaN and not rejected, the other rows as usual.

    Returns:
      `MultipleTestsResult` (``reject``, ``pvalues_adjusted``, ``alpha_sidak``, ``alpha_bonferroni``,
      ``num_tests``).

    Raises:
      TypeError: a non-numeric ``alpha`` or a non-string ``method``.
      ValueError: an unknown ``method`` or ``nan_policy``, ``alpha`` outside (0, 1), p-values outside [0, 1] or
        NaN under ``nan_policy="raise"`` (concrete input at once, under ``jit`` at run time).

    References:
      Holm (1979), Scand. J. Statist. 6. Hochberg (1988), Biometrika 75. Hommel (1988), Biometrika 75.
      Šidák (1967), J. Amer. Statist. Assoc. 62. Meijer, Krebs & Goeman (2019), Biometrical J. 61(1)
      (Hommel's procedure in linear time), arXiv:1710.08273. Benjamini & Hochberg (1995), J. R. Stat. Soc. B 57.
      Benjamini & Yekutieli (2001), Ann. Statist. 29. Benjamini, Krieger & Yekutieli (2006), Biometrika 93.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import multipletests
      >>> p = jnp.array([0.01, 0.02, 0.03, 0.04, 0.5])
      >>> res = multipletests(p, alpha=0.05, method="holm")
      >>> print(res.reject, jnp.round(res.pvalues_adjusted, 3))
      [ True False False False False] [0.05 0.08 0.09 0.09 0.5 ]
      >>> print(multipletests(jnp.array([0.01, jnp.nan, 0.04]), method="fdr_bh", nan_policy="omit").reject)
      [ True False  True]
    """
    name = _resolve_method(method)
    p, labels = prepare_pvalues(pvalues, "multipletests", nan_policy, keep_host=True)
    a = check_alpha(alpha, p.dtype)
    rej, adj, a_sidak, a_bonf, n = run_method(p, a, name, nan_policy)
    return MultipleTestsResult(reject=rej, pvalues_adjusted=adj, alpha_sidak=a_sidak, alpha_bonferroni=a_bonf,
                               num_tests=n, method=name, _labels=labels)
