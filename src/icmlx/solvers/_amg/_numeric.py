"""The numeric half of smoothed aggregation in JAX: from the values of a matrix on a stored pattern
(``_sa_pattern``) to a `MultilevelHierarchy`, with gathers and segment sums in one jittable function.

Per level: the diagonal, a power-iteration bound of ``ρ(D⁻¹A)`` (the host rule: ``1.1 ×`` a Rayleigh quotient
after 20 steps from the same start, capped by Gershgorin), the tentative prolongator from a per-aggregate
modified Gram–Schmidt of the candidates (segment sums over aggregates, twice), ``P = T − ω D⁻¹ A T``, the Galerkin
product ``Pᵀ(AP)`` as two pair lists, and the values scattered into the ELL and colour-block layouts of the
cycle; the coarsest level gets a dense pseudo-inverse. The aggregates, the kept candidate columns and every
pattern are those of the first matrix.
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._inputs import to_device
from .._sparse import bucket_size
from ._hierarchy import EllMatrix, MultilevelHierarchy
from ._pattern import NUM_POWER_STEPS, coo_of, ell_slots, host_levels, level_pattern, structural
from ._relaxation import ColorBlocks, power_bound

__all__: list[str] = []

_INDEX_KEYS = ("arows", "acols", "diag", "t_dof", "t_cand", "t_in_p", "agg", "ok_agg", "ok_cand", "at_a", "at_t",
               "at_p", "prows", "pcols", "ap_a", "ap_p", "ap_t", "g_p", "g_ap", "g_t", "crows", "ccols", "ctrans",
               "a_slot", "p_slot", "r_slot")
_SIZE_KEYS = ("n", "nc", "pad", "pad_c", "k", "num_aggs", "num_ap", "a_width", "p_width", "r_width")


class SALevelPattern(eqx.Module):
    """The index arrays of one level (``int32`` leaves) and its sizes (static)."""

    index: dict
    start: Any  # the power iteration's start vector
    ok: Any  # bool[num_aggs, k]: the candidate columns kept on each aggregate
    ell: dict  # the ELL index arrays of A_ℓ, P_ℓ, P_ℓᵀ (and the padded Krylov matrix on level 0)
    gs: dict | None
    sizes: tuple = eqx.field(static=True)

    def size(self, key: str) -> int:
        return dict(self.sizes)[key]


class SAPattern(eqx.Module):
    """The symbolic set-up of a smoothed-aggregation hierarchy: what ``AMGSolver.update`` reuses."""

    levels: tuple
    rows: Any  # int32[nnz]: row of each stored entry of A (the order of AMGSolver.update's values)
    cols: Any  # int32[nnz]: its column
    krylov_idx: Any
    krylov_slot: Any
    coarse_rows: Any
    coarse_cols: Any
    candidates: Any  # float[n, k]: the near-nullspace candidates before improvement
    n: int = eqx.field(static=True)
    nnz: int = eqx.field(static=True)
    coarse_n: int = eqx.field(static=True)
    coarse_pad: int = eqx.field(static=True)
    improve_steps: int = eqx.field(static=True)
    symmetric: bool = eqx.field(static=True)
    relaxation: Any = eqx.field(static=True)
    cycle: Any = eqx.field(static=True)  # an AbstractCycle


def _ell_index(rows, cols, slot, width, num_rows, identity_from: int | None = None) -> np.ndarray:
    idx = np.zeros((width, num_rows), np.int32)  # unused slots: column 0 with value 0
    idx[slot, rows] = cols
    if identity_from is not None:
        extra = np.arange(identity_from, num_rows)
        idx[0, extra] = extra
    return idx


def build_pattern(A: Any, *, B: np.ndarray, node_of: np.ndarray, strength: Any, max_coarse: int, max_levels: int,
                  improve_steps: int, symmetric: bool, relaxation: Any, cycle: Any, dtype: Any):
    """Host levels of ``A`` and the `SAPattern` of them; returns ``(pattern, values of A, coarsest)``."""
    A = structural(A)
    host, coarse = host_levels(A, B=B, node_of=node_of, strength=strength, max_coarse=max_coarse, max_levels=max_levels,
                               improve_steps=improve_steps, symmetric=symmetric)
    gs = relaxation is not None and relaxation.needs_coloring
    arows, acols = coo_of(A)
    n0 = A.shape[0]
    pad = bucket_size(n0)
    levels = []
    k_slot, k_width = ell_slots(arows, n0)
    krylov_idx = _ell_index(arows, acols, k_slot, k_width, pad, identity_from=n0)
    for lvl, rec in enumerate(host):
        n = rec["A"].shape[0]
        L = level_pattern(arows, acols, n, rec["agg_of_dof"], rec["num_aggs"], rec["coarse_node"], rec["Bc"],
                          B.shape[1] if lvl == 0 else host[lvl - 1]["Bc"].shape[1], symmetric, gs, pad)
        ok = np.zeros((L["num_aggs"], L["k"]), bool)
        ok[L["ok_agg"], L["ok_cand"]] = True
        ell = dict(
            a=_ell_index(arows, acols, L["a_slot"], L["a_width"], pad),
            p=_ell_index(L["prows"], L["pcols"], L["p_slot"], L["p_width"], pad),
            r=_ell_index(L["pcols"], L["prows"], L["r_slot"], L["r_width"], L["pad_c"]),
        )
        gsd = None
        if gs:
            g = L["gs"]
            nc_, k_, m_ = g["cshape"]
            cidx = np.zeros((nc_, k_, m_), np.int32)
            cidx[g["color"], g["slot"], g["where"]] = acols
            gsd = dict(rows=g["crow"], idx=cidx, color=g["color"],
                       slot=g["slot"], where=g["where"], row_color=g["row_color"], row_where=g["row_where"])
            gsd = {key: to_device(v, np.int32) for key, v in gsd.items()}
        levels.append(SALevelPattern(
            index={key: to_device(L[key], np.int32) for key in _INDEX_KEYS},
            start=to_device(L["start"], dtype), ok=to_device(ok, bool),
            ell={key: to_device(v, np.int32) for key, v in ell.items()}, gs=gsd,
            sizes=tuple((key, int(L[key])) for key in _SIZE_KEYS)))
        arows, acols, pad = L["crows"], L["ccols"], L["pad_c"]
    pattern = SAPattern(levels=tuple(levels), rows=to_device(coo_of(A)[0], np.int32),
                        cols=to_device(coo_of(A)[1], np.int32), krylov_idx=to_device(krylov_idx, np.int32),
                        krylov_slot=to_device(k_slot, np.int32), coarse_rows=to_device(arows, np.int32),
                        coarse_cols=to_device(acols, np.int32), candidates=to_device(B, dtype), n=n0,
                        nnz=int(A.nnz), coarse_n=int(coarse.shape[0]), coarse_pad=pad, improve_steps=improve_steps,
                        symmetric=symmetric, relaxation=relaxation, cycle=cycle)
    return pattern, A.data, coarse


def _tentative(L: SALevelPattern, B):
    """Per-aggregate modified Gram–Schmidt of the candidates: ``(T values, R)`` (``Q`` on the T entries)."""
    ix = L.index
    num_aggs, k = L.size("num_aggs"), L.size("k")
    agg = ix["agg"]

    def segsum(v):
        return jax.ops.segment_sum(v, agg, num_segments=num_aggs + 1)[:num_aggs]

    def spread(c):
        return jnp.append(c, 0.0)[agg]

    inside = agg < num_aggs
    Q = []
    R = jnp.zeros((num_aggs, k, k), B.dtype)
    for j in range(k):  # candidates: k <= 64, usually 1-6
        v = jnp.where(inside, B[:, j], 0.0)
        for _ in range(2):  # MGS, repeated once, as the host fit_candidates
            for i in range(j):
                c = segsum(Q[i] * v)
                R = R.at[:, i, j].add(c)
                v = v - spread(c) * Q[i]
        nrm = jnp.sqrt(segsum(v * v))
        good = L.ok[:, j]
        R = R.at[:, j, j].set(jnp.where(good, nrm, 0.0))
        Q.append(v * spread(jnp.where(good, 1.0 / jnp.where(good & (nrm > 0), nrm, 1.0), 0.0)))
    Q = jnp.stack(Q)
    return Q[ix["t_cand"], ix["t_dof"]], R


def _ell(idx, slot, rows, vals, shape):
    return EllMatrix(idx, jnp.zeros(idx.shape, vals.dtype).at[slot, rows].set(vals), shape)


def _level(L: SALevelPattern, a, B, improve_steps: int, symmetric: bool):
    """One level's cycle data and the next level's values and candidates."""
    ix = L.index
    n, nc, pad, pad_c = L.size("n"), L.size("nc"), L.size("pad"), L.size("pad_c")
    rows, cols = ix["arows"], ix["acols"]
    d = a[ix["diag"]]
    _, upper = power_bound(lambda v: jax.ops.segment_sum(a * v[cols], rows, num_segments=n), d,
                           jax.ops.segment_sum(jnp.abs(a), rows, num_segments=n), L.start, NUM_POWER_STEPS)
    omega = 4.0 / (3.0 * (upper / 1.1))
    for _ in range(improve_steps):  # damped Jacobi on A B = 0 (first level only)
        B = B - (omega / d)[:, None] * jax.ops.segment_sum(a[:, None] * B[cols], rows, num_segments=n)
    t_vals, R = _tentative(L, B)
    num_p = ix["prows"].shape[0]
    at = jax.ops.segment_sum(a[ix["at_a"]] * t_vals[ix["at_t"]], ix["at_p"], num_segments=num_p)
    p_vals = jnp.zeros(num_p, a.dtype).at[ix["t_in_p"]].add(t_vals) - omega * (1.0 / d)[ix["prows"]] * at
    ap = jax.ops.segment_sum(a[ix["ap_a"]] * p_vals[ix["ap_p"]], ix["ap_t"], num_segments=L.size("num_ap"))
    c_vals = jax.ops.segment_sum(p_vals[ix["g_p"]] * ap[ix["g_ap"]], ix["g_t"], num_segments=ix["crows"].shape[0])
    if symmetric:
        c_vals = 0.5 * (c_vals + c_vals[ix["ctrans"]])
    Bc = R[ix["ok_agg"], ix["ok_cand"], :]
    op = _ell(L.ell["a"], ix["a_slot"], rows, a, (pad, pad))
    pro = _ell(L.ell["p"], ix["p_slot"], ix["prows"], p_vals, (pad, pad_c))
    res = _ell(L.ell["r"], ix["r_slot"], ix["pcols"], p_vals, (pad_c, pad))
    dinv = jnp.zeros(pad, a.dtype).at[:n].set(1.0 / d)
    colors = None
    if L.gs is not None:
        g = L.gs
        val = jnp.zeros(g["idx"].shape, a.dtype).at[g["color"], g["slot"], g["where"]].set(a)
        cd = jnp.zeros(g["rows"].shape, a.dtype).at[g["row_color"], g["row_where"]].set(1.0 / d)
        colors = ColorBlocks(g["rows"], g["idx"], val, cd)
    return (op, dinv, pro, res, upper, colors), c_vals, Bc, nc


def numeric_setup(pattern: SAPattern, values) -> tuple[MultilevelHierarchy, EllMatrix]:
    """The hierarchy of the matrix with ``values`` on ``pattern`` (jittable), and its padded Krylov matrix."""
    a = values
    B = pattern.candidates.astype(a.dtype)
    ops, dinvs, pros, ress, lams, sizes, colors = [], [], [], [], [], [], []
    for lvl, L in enumerate(pattern.levels):
        (op, dinv, pro, res, upper, cb), a_next, B, _ = _level(L, a, B, pattern.improve_steps if lvl == 0 else 0,
                                                              pattern.symmetric)
        ops.append(op)
        dinvs.append(dinv)
        pros.append(pro)
        ress.append(res)
        lams.append(upper)
        sizes.append(L.size("pad"))
        if cb is not None:
            colors.append(cb)
        a = a_next
    m, pad = pattern.coarse_n, pattern.coarse_pad
    C = jnp.zeros((m, m), a.dtype).at[pattern.coarse_rows, pattern.coarse_cols].add(a)
    # a pseudo-inverse, as the host set-up: a singular Galerkin operator (pure Neumann) keeps its range solvable
    cut = 1e-13 if a.dtype == jnp.float64 else 10 * max(m, 1) * float(jnp.finfo(a.dtype).eps)
    Cinv = jnp.zeros((pad, pad), a.dtype).at[:m, :m].set(jnp.linalg.pinv(C, rtol=cut, hermitian=pattern.symmetric))
    sizes.append(pad)
    relaxation = pattern.relaxation
    H = MultilevelHierarchy(ops=tuple(ops), dinv=tuple(dinvs), prolong=tuple(pros), restrict=tuple(ress),
                            lambda_max=jnp.stack(lams) if lams else jnp.zeros((0,), a.dtype), coarse_inv=Cinv,
                            sizes=tuple(sizes), degree=getattr(relaxation, "degree", 2), n=pattern.n,
                            relaxation=relaxation, cycle=pattern.cycle, colors=tuple(colors))
    n, pad0 = pattern.n, sizes[0]
    val = jnp.zeros(pattern.krylov_idx.shape, values.dtype).at[pattern.krylov_slot, pattern.rows].set(values)
    krylov = EllMatrix(pattern.krylov_idx, val.at[0, n:].set(1.0), (pad0, pad0))
    return H, krylov


numeric_setup_jit = eqx.filter_jit(numeric_setup)
