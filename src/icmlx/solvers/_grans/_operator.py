"""The G-RANS operator: eager per-matrix set-up (padding, scaling, aggregation, features) as a lineax operator."""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from ..._buckets import size_bucket
from ..._inputs import to_device
from .._amg._aggregation import aggregation_hierarchy
from .._amg._hierarchy import EllMatrix, MultilevelHierarchy
from .._classify import classify, is_symmetric
from .._sparse import SparseMatrix, bucket_size
from ._smoothers import AbstractSmoother

__all__ = ["GRANSOperator"]

N_LEVELS = 2  # levels of the aggregation hierarchy that carry basis columns


class GRANSOperator(lx.AbstractLinearOperator):
    """A square sparse matrix padded to a size bucket, with the G-RANS set-up attached.

    Built by ``GRANS.setup(A)`` (eager, NumPy aggregation), then a pytree of arrays: it can be passed
    through ``jax.jit`` and to ``lineax.linear_solve``. ``mv`` acts on unpadded vectors of length ``n``.

    Attributes:
      A: padded ``SparseMatrix`` (padded nodes carry an identity row), working dtype (its complex counterpart for a
        complex matrix).
      feats: ``float32[n_pad, 3]`` matrix-only node features.
      mask: ``[n_pad]`` 1 on true nodes, 0 on padding (real working dtype).
      colidx: ``int32[n_pad, Q]`` basis column of each node's slot (level, channel).
      pool: ``int32[n_pad, 2]`` aggregate of each node on the two basis levels.
      zslot: ``int32[nnz, Q]`` slot of ``a_kj w_jq`` in the compressed ``A V`` rows.
      zcol: ``int32[n_pad, S]`` basis column of each compressed slot.
      col_used: ``bool[m]`` columns that exist (others are padding).
      lambda_max: bound on the spectrum of ``D⁻¹A`` for the Chebyshev smoother.
      ell: the padded ``A`` in ELL layout (the fast product used inside the iteration).
      hierarchy: the smoothed-aggregation V-cycle (``smoother=MultilevelSmoother()``) or ``None``.
      n: true size (static). symmetric / spd_like: structural flags (static).
      num_aggregates: ``(N_0, N_1)`` aggregates on the two basis levels (static).
    """

    A: SparseMatrix
    feats: Float[Array, "npad 3"]
    mask: Float[Array, " npad"]
    colidx: Int[Array, "npad q"]
    pool: Int[Array, "npad 2"]
    zslot: Int[Array, "nnz q"]
    zcol: Int[Array, "npad s"]
    col_used: Bool[Array, " m"]
    lambda_max: Float[Array, ""]
    ell: EllMatrix
    hierarchy: MultilevelHierarchy | None
    n: int = eqx.field(static=True)
    symmetric: bool = eqx.field(static=True)
    spd_like: bool = eqx.field(static=True)
    num_aggregates: tuple[int, int] = eqx.field(static=True)
    has_basis: bool = eqx.field(static=True, default=True)

    @property
    def padded_size(self) -> int:
        """The padded size ``n_pad`` (a `bucket_size`) of every node array."""
        return self.A.shape[0]

    @property
    def matrix_class(self) -> str:
        """``"spd_like"`` (symmetric, positive diagonal, non-negative row sums or, up to 100k unknowns,
        positive definite by the inertia of a sparse factorisation), ``"symmetric"`` (otherwise symmetric, e.g.
        indefinite) or ``"nonsymmetric"``: what ``GRANS(outer="auto")`` chooses by."""
        return "spd_like" if self.spd_like else ("symmetric" if self.symmetric else "nonsymmetric")

    @property
    def pool_segments(self) -> int:
        return self.col_used.shape[0] // (self.colidx.shape[1] // N_LEVELS) + 1

    def __repr__(self) -> str:
        ml = "multilevel" if self.hierarchy is not None else "none"
        return (f"GRANSOperator(n={self.n}, padded_size={self.padded_size}, nnz={self.A.vals.shape[0]}, "
                f"dtype={jnp.dtype(self.A.dtype).name}, matrix_class={self.matrix_class!r}, "
                f"num_aggregates={self.num_aggregates}, hierarchy={ml})")

    def mv(self, vector):
        v = jnp.zeros((self.padded_size,), self.A.dtype).at[: self.n].set(vector.astype(self.A.dtype))
        return self.ell.mv(v)[: self.n].astype(vector.dtype)

    def as_matrix(self):
        return self.A.as_matrix()[: self.n, : self.n]

    def transpose(self):
        raise NotImplementedError("GRANSOperator.transpose: call GRANS.setup(A.transpose()) instead")

    def in_structure(self):
        return jax.ShapeDtypeStruct((self.n,), self.A.dtype)

    def out_structure(self):
        return jax.ShapeDtypeStruct((self.n,), self.A.dtype)


@lx.linearise.register(GRANSOperator)
def _(operator):
    return operator


@lx.materialise.register(GRANSOperator)
def _(operator):
    return operator


for _check in (lx.is_symmetric, lx.is_diagonal, lx.is_tridiagonal, lx.is_lower_triangular,
               lx.is_upper_triangular, lx.is_positive_semidefinite, lx.is_negative_semidefinite,
               lx.has_unit_diagonal):
    _check.register(GRANSOperator)(lambda operator: False)


def _select_levels(maps: list[np.ndarray], n: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Fine→level maps for the finest pair of consecutive levels whose node count fits ``budget``."""
    comp = [np.arange(n)]
    for a in maps:
        comp.append(a[comp[-1]])
    comp.append(np.zeros(n, np.int64))  # the global level (one aggregate)
    sizes = [int(c.max()) + 1 for c in comp]
    for l in range(1, len(comp) - 1):
        if sizes[l] + sizes[l + 1] <= budget:
            return comp[l], comp[l + 1]
    return comp[-2], comp[-1]



def _unique_inverse(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(k, return_inverse=True)`` by a stable (timsort/radix) argsort, which is faster than
    ``np.unique``'s sort on the nearly row-sorted keys of the set-up."""
    perm = np.argsort(k, kind="stable")
    ks = k[perm]
    first = np.empty(ks.size, bool)
    first[:1] = True
    np.not_equal(ks[1:], ks[:-1], out=first[1:])
    inv = np.empty(k.size, np.int64)
    inv[perm] = np.cumsum(first) - 1
    return ks[first], inv


def _setup(A: SparseMatrix, *, channels: int, max_columns: int, dtype: Any,
           dmax_bucket: int = 4, smoother: AbstractSmoother, basis: bool = True) -> GRANSOperator:
    if not isinstance(A, SparseMatrix):
        raise TypeError(f"G-RANS needs a SparseMatrix, got {type(A).__name__}")
    n, n2 = A.shape
    if n != n2:
        raise ValueError(f"G-RANS needs a square matrix, got {A.shape=}")
    if n < 16:
        raise ValueError(f"G-RANS is meant for sparse systems with n >= 16 unknowns, got {n=}; "
                         "use a dense direct solver")
    if isinstance(A.vals, jax.core.Tracer):
        raise TypeError("GRANS.setup is eager (NumPy aggregation): call it outside jax.jit")
    rows = np.asarray(A.rows).astype(np.int64)
    cols = np.asarray(A.cols).astype(np.int64)
    in_eps = float(np.finfo(np.asarray(A.vals).dtype).eps)
    cplx = np.iscomplexobj(np.asarray(A.vals))
    vals = np.asarray(A.vals).astype(np.complex128 if cplx else np.float64)
    if not np.all(np.isfinite(vals)):
        raise ValueError("matrix has NaN or Inf entries")
    if rows.size and (rows.min() < 0 or rows.max() >= n or cols.min() < 0 or cols.max() >= n):
        raise ValueError("matrix indices out of range")
    # coalesce duplicates
    key, inv = _unique_inverse(rows * n + cols)
    vals = _bincount(inv, vals, key.size)
    rows, cols = key // n, key % n
    diag = np.zeros(n, vals.dtype)
    np.add.at(diag, rows[rows == cols], vals[rows == cols])
    if np.any(diag == 0):
        bad = int(np.nonzero(diag == 0)[0][0])
        raise ValueError(f"matrix has a zero diagonal entry (first at row {bad}); G-RANS needs "
                         "nonzero diagonals for its scaling and smoother")
    import scipy.sparse as sp  # set-up only (lazy: `import icmlx.solvers` does not import SciPy)

    csr = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    csr.eliminate_zeros()  # stored zeros (FEM assembly) would widen every ELL row
    # the one classifier amg_setup uses too; a symmetric matrix with a positive diagonal that fails the row-sum
    # test (P2 stiffness as well as Helmholtz) is settled by its inertia: SPD-like means the energy-norm step
    if cplx:  # complex symmetric (Aᵀ = A: Helmholtz with absorption) or not; never SPD-like (no energy-norm step)
        # (Aᵀ = A decides the outer step and the adjoint solve: Aᵀλ = g is then a solve with A)
        symmetric, spd_like = is_symmetric(csr, in_eps), False
    else:
        matrix_class = classify(csr, in_eps, probe_definite=True)
        symmetric = matrix_class.symmetric
        spd_like = matrix_class.spd_like
    feats = np.zeros((bucket_size(n), 3), np.float32)
    if basis:  # the network's node features (the transpose lookup serves only them)
        feats[:n] = _node_features(key, rows, cols, vals, diag, n)
    # hierarchy and basis levels
    n_pad = bucket_size(n)
    hierarchy = smoother.hierarchy(csr, dtype)  # the V-cycle of a MultilevelSmoother (else None)
    if basis:  # the basis levels: standard aggregation of the graph of A, repeated
        maps = aggregation_hierarchy(rows, cols, n)
    # padding
    pad_nodes = np.arange(n, n_pad)
    nnz_true = key.size
    nnz_pad = bucket_size(nnz_true + pad_nodes.size)
    extra = nnz_pad - nnz_true - pad_nodes.size
    prow = np.concatenate([rows, pad_nodes, np.zeros(extra, np.int64)])
    pcol = np.concatenate([cols, pad_nodes, np.zeros(extra, np.int64)])
    pval = np.concatenate([vals, np.ones(pad_nodes.size), np.zeros(extra)])
    if basis:
        colidx, pool, zslot, zcol, col_used, (N0, N1) = _basis_index(
            maps, rows, cols, n, n_pad, nnz_pad, channels=channels, max_columns=max_columns,
            dmax_bucket=dmax_bucket)
    else:  # no projection: index arrays of the right ranks, no aggregates (a solve with a basis refuses it)
        Q = N_LEVELS * channels
        colidx, pool = np.zeros((n_pad, Q), np.int64), np.zeros((n_pad, N_LEVELS), np.int64)
        zslot, zcol = np.zeros((0, Q), np.int64), np.zeros((n_pad, 1), np.int64)
        col_used, (N0, N1) = np.zeros(2 * Q, bool), (0, 0)
    mask = np.zeros(n_pad)
    mask[:n] = 1.0
    real_dtype = np.finfo(np.dtype(dtype)).dtype  # (the mask and the spectral bound are real for a complex A)
    dtype = np.result_type(dtype, np.complex64) if cplx else dtype
    Ap = SparseMatrix(to_device(prow, np.int32), to_device(pcol, np.int32), to_device(pval, dtype), (n_pad, n_pad))
    # the bound of ρ(D⁻¹A) its relaxation is scaled by
    lmax = jnp.real(smoother.spectral_bound(Ap, spd_like)).astype(real_dtype)
    # the row width is the longest row's, not rounded up: the product inside the loop gathers every slot (P1
    # reaction-diffusion on the unit-square mesh has rows of 5 and 9 entries; rounded to 12, a third are empty)
    ell = EllMatrix.from_scipy(csr, num_rows=n_pad, num_cols=n_pad, pad_identity=True, dtype=dtype,
                               width=max(1, int(np.diff(csr.indptr).max())))
    return GRANSOperator(
        A=Ap, feats=to_device(feats), mask=to_device(mask, real_dtype), colidx=to_device(colidx, np.int32),
        pool=to_device(pool, np.int32), zslot=to_device(zslot, np.int32), zcol=to_device(zcol, np.int32),
        col_used=to_device(col_used), lambda_max=lmax,
        ell=ell, hierarchy=hierarchy, n=n, symmetric=symmetric, spd_like=spd_like,
        num_aggregates=(N0, N1), has_basis=basis)


def _bincount(index: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """``np.bincount`` with real or complex weights (NumPy's takes real ones only)."""
    if np.iscomplexobj(weights):
        return (np.bincount(index, weights=weights.real, minlength=size)
                + 1j * np.bincount(index, weights=weights.imag, minlength=size))
    return np.bincount(index, weights=weights, minlength=size)


def _node_features(key, rows, cols, vals, diag, n: int) -> np.ndarray:
    """The network's matrix-only node features ``float[n, 3]``: row sum, absolute row sum and asymmetry
    ``Σ_j |â_ij − â_ji|`` of the scaled ``Â = D^{-1/2} A D^{-1/2}`` (``key = rows·n + cols`` sorted, coalesced).
    For a complex ``A`` the row sum is that of ``Re Â`` (the network's message passing runs on ``Re Â``) and the
    other two use the moduli."""
    tkey = cols * n + rows  # transpose lookup
    pos = np.minimum(np.searchsorted(key, tkey), key.size - 1)
    vals_t = np.where(key[pos] == tkey, vals[pos], 0.0)
    sd = np.sqrt(np.abs(diag))
    scale = sd[rows] * sd[cols]
    ahat, ahat_t = vals / scale, vals_t / scale
    rowsum = np.bincount(rows, weights=ahat.real, minlength=n)
    rowabs = np.bincount(rows, weights=np.abs(ahat), minlength=n)
    asym = np.bincount(rows, weights=np.abs(ahat - ahat_t), minlength=n)
    return np.stack([rowsum, rowabs, asym], 1)


def _basis_index(maps, rows, cols, n: int, n_pad: int, nnz_pad: int, *, channels: int, max_columns: int,
                 dmax_bucket: int):
    """The index arrays of the basis ``V`` on two aggregation levels: ``(colidx, pool, zslot, zcol, col_used,
    (N0, N1))`` (see `GRANSOperator`)."""
    nnz_true = rows.size
    budget = max_columns // channels
    a0, a1 = _select_levels(maps, n, budget)
    N0, N1 = int(a0.max()) + 1, int(a1.max()) + 1
    C = channels
    Q = N_LEVELS * C
    m = min(bucket_size((N0 + N1) * C), max_columns)
    offs = (0, N0)
    aggs = (a0, a1)
    # compressed rows of A V: distinct aggregates touched by each row, per level
    ranks, dmax = [], 1
    for l in range(N_LEVELS):
        Nl = (N0, N1)[l]
        k = rows * Nl + aggs[l][cols]
        u, uinv = _unique_inverse(k)
        urow = u // Nl
        first = np.searchsorted(urow, urow, side="left")
        rank_u = np.arange(u.size) - first
        ranks.append((rank_u[uinv], u, urow, rank_u))
        dmax = max(dmax, int(rank_u.max()) + 1)
    D = size_bucket(dmax, minimum=dmax_bucket)
    S = N_LEVELS * D * C
    if n_pad * S + 1 > np.iinfo(np.int32).max:  # zslot holds slots 0..n_pad S (the last: dropped), as int32
        raise ValueError(f"G-RANS: the compressed A V of n_pad={n_pad} rows of {S} slots each ({D} aggregates a row "
                         f"on each of {N_LEVELS} levels × {C} channels) has {n_pad * S + 1:,} slots, more than "
                         f"int32 indexes ({np.iinfo(np.int32).max:,}); use fewer channels or a smaller system")
    colidx = np.zeros((n_pad, Q), np.int64)
    pool = np.zeros((n_pad, N_LEVELS), np.int64)
    for l in range(N_LEVELS):  # static, 2 levels (setup-time NumPy)
        pool[:n, l] = aggs[l]
        pool[n:, l] = m // C  # dummy segment
        for c in range(C):
            colidx[:n, l * C + c] = (offs[l] + aggs[l]) * C + c
    zslot = np.full((nnz_pad, Q), n_pad * S, np.int64)
    zcol = np.zeros((n_pad, S), np.int64)
    for l in range(N_LEVELS):
        rank_e, u, urow, rank_u = ranks[l]
        Nl = (N0, N1)[l]
        for c in range(C):
            s_e = (l * D + rank_e) * C + c
            zslot[:nnz_true, l * C + c] = rows * S + s_e
            zcol[urow, (l * D + rank_u) * C + c] = (offs[l] + u % Nl) * C + c
    col_used = np.zeros(m, bool)
    col_used[: (N0 + N1) * C] = True
    return colidx, pool, zslot, zcol, col_used, (N0, N1)
