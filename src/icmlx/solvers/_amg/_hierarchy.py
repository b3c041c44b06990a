"""Smoothed-aggregation multilevel hierarchy (NumPy/SciPy set-up, JAX V-cycle) and ELL sparse matrices.

The hierarchy is the multi-scale backbone of G-RANS's ``smoother="multilevel"`` mode and, on its own, a
non-learned algebraic-multigrid preconditioner for the JAX Krylov solvers (the ablation floor).
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Inexact, Int

from ..._buckets import round_up
from ..._inputs import to_device
from .._convert import as_scipy_csr, positive_int
from .._sparse import SparseMatrix, bucket_size
from ._relaxation import relax

__all__ = ["EllMatrix", "MultilevelHierarchy", "smoothed_aggregation", "mis2_aggregation",
           "m_matrix_envelope"]


_MAX_DENSE_COARSE = 8192  # largest coarsest level inverted densely (0.5 GiB in float64)


def _ell_width(k: int) -> int:
    """Padded row width: a multiple of 4 (so matrices of one mesh family share compiled shapes)."""
    return round_up(k, 4)


def _ell_host(M: Any, *, num_rows: int | None = None, num_cols: int | None = None, width: int | None = None,
              pad_identity: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The host arrays ``(idx int32[k, num_rows], val float64[k, num_rows])`` of `EllMatrix.from_scipy` for a
    CSR matrix without duplicate entries (the set-up's own products are; nothing is copied or re-canonicalised)."""
    nr, nc = M.shape
    n_rows = nr if num_rows is None else num_rows
    n_cols = nc if num_cols is None else num_cols
    if n_rows < nr or n_cols < nc:
        raise ValueError(f"EllMatrix.from_scipy: num_rows={n_rows}, num_cols={n_cols} must be at least the "
                         f"matrix shape {M.shape} (they pad it)")
    cnt = np.diff(M.indptr)
    k = _ell_width(int(cnt.max()) if cnt.size else 1) if width is None else width
    if cnt.size and cnt.max() > k:
        raise ValueError(f"row width {int(cnt.max())} exceeds the requested ELL width {k}")
    # slot j of row i sits at j · n_rows + i of the flattened (k, n_rows) arrays
    row = np.repeat(np.arange(nr, dtype=np.int64), cnt)
    flat = (np.arange(M.nnz, dtype=np.int64) - M.indptr[row]) * n_rows + row
    idx = np.zeros((k, n_rows), np.int32)
    val = np.zeros((k, n_rows), np.result_type(M.data.dtype, np.float64))
    idx.ravel()[flat] = M.indices
    val.ravel()[flat] = M.data
    if pad_identity:
        extra = np.arange(nr, min(n_rows, n_cols))
        idx[0, extra] = extra
        val[0, extra] = 1.0
    return idx, val


class EllMatrix(eqx.Module):
    r"""Sparse matrix in transposed ELLPACK layout: ``(A x)_i = Σ_j val[j, i] · x[idx[j, i]]``.

    Every row stores the same number ``k`` of (index, value) slots (unused slots have value 0), kept as
    ``k`` contiguous rows of length ``num_rows`` so that a product is ``k`` gathers and fused
    multiply-adds with no scatter. On XLA:CPU this is faster than the COO segment sum of
    `SparseMatrix` and than the same gather written as one fused ``(n, k)`` reduction. XLA:CPU is
    markedly slower on row counts that are not a multiple of 8: pad with ``num_rows``/``num_cols`` and
    ``pad_identity=True`` (``benchmarks/solvers_fem.py`` pads to `bucket_size`). Has
    ``mv``/``shape``/``diagonal`` so that `cg`, `gmres` and `bicgstab` accept it.

    Attributes:
      idx: ``int32[k, num_rows]`` column index of each slot.
      val: ``float[k, num_rows]`` value of each slot (0 in unused slots).
      shape: ``(num_rows, num_cols)``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import EllMatrix, SparseMatrix
      >>> A = SparseMatrix.from_dense(jnp.array([[2.0, -1.0], [0.0, 3.0]]))
      >>> EllMatrix.from_sparse(A).mv(jnp.array([1.0, 1.0])).tolist()
      [1.0, 3.0]
    """

    idx: Int[Array, "k n"]
    val: Inexact[Array, "k n"]
    shape: tuple[int, int] = eqx.field(static=True)

    @classmethod
    def from_scipy(cls, M: Any, *, num_rows: int | None = None, num_cols: int | None = None,
                   width: int | None = None, pad_identity: bool = False,
                   dtype: Any = None) -> "EllMatrix":
        """From a SciPy sparse matrix, optionally padded to ``num_rows × num_cols`` and row width ``width``.

        Padding slots hold value 0. Padding rows are zero, or with ``pad_identity=True`` carry a 1 on the
        diagonal (so a padded square system stays nonsingular and Jacobi-preconditionable)."""
        import scipy.sparse as sp  # lazy: set-up only

        M = sp.csr_matrix(M, copy=True)  # the in-place clean-up below must not touch the caller's arrays
        M.sum_duplicates()
        M.eliminate_zeros()  # FEM assembly stores structural zeros (P1 Poisson: width 12 -> 8)
        if not np.all(np.isfinite(M.data)):
            raise ValueError("EllMatrix.from_scipy: the matrix has NaN or Inf entries; fix them first")
        idx, val = _ell_host(M, num_rows=num_rows, num_cols=num_cols, width=width, pad_identity=pad_identity)
        dtype = jnp.result_type(float) if dtype is None else dtype
        n_rows, n_cols = idx.shape[1], M.shape[1] if num_cols is None else num_cols
        return cls(to_device(idx, np.int32), to_device(val, dtype), (n_rows, n_cols))

    @classmethod
    def from_sparse(cls, A: SparseMatrix, **kwargs: Any) -> "EllMatrix":
        """From a `SparseMatrix` (duplicates summed; eager, not traceable); ``kwargs`` as in
        `from_scipy`."""
        return cls.from_scipy(A.to_scipy(), dtype=A.vals.dtype, **kwargs)

    def mv(self, x: Inexact[Array, " n_cols"]) -> Inexact[Array, " n_rows"]:
        """``A @ x``: a ``fori_loop`` over the ``k`` slots, each one gather and a multiply-add.

        A compiled loop rather than an unrolled sum on purpose: unrolled, XLA:CPU fuses the elementwise
        producer of ``x`` into every gather and recomputes it per gathered entry, which made two chained
        products much slower than one; the loop boundary materialises ``x``."""
        if jnp.shape(x) != (self.shape[1],):
            raise ValueError(f"EllMatrix.mv: x must be a vector of length {self.shape[1]}, got shape {jnp.shape(x)}")

        def body(j, y):
            return y + self.val[j] * x[self.idx[j]]

        dtype = jnp.result_type(self.val, x)
        if self.idx.shape[0] == 0:
            return jnp.zeros(self.shape[0], dtype)
        # (the loop starts from slot 0's product, not from zeros: XLA merges every zeros vector of one size into one
        # and copies it into each loop, and those copies were live together, the peak of a compiled V-cycle)
        return jax.lax.fori_loop(1, self.idx.shape[0], body, (self.val[0] * x[self.idx[0]]).astype(dtype))

    def diagonal(self) -> Inexact[Array, " n"]:
        """Main diagonal (square matrices)."""
        on = self.idx == jnp.arange(self.shape[0], dtype=self.idx.dtype)[None, :]
        return jnp.sum(jnp.where(on, self.val, 0.0), axis=0)


# ---------------------------------------------------------------------------------------------------
# set-up (NumPy / SciPy; eager)
# ---------------------------------------------------------------------------------------------------
def m_matrix_envelope(A: Any) -> Any:
    r"""The symmetric M-matrix envelope of ``A``, on which the hierarchy is built (a SciPy CSR matrix).

    $$
    \tilde a_{ij} = -\tfrac12(|a_{ij}| + |a_{ji}|)\ (i \ne j), \qquad
    \tilde a_{ii} = \max\bigl(a_{ii},\ \textstyle\sum_{j\ne i} |\tilde a_{ij}|\bigr).
    $$

    For a symmetric diagonally dominant M-matrix (P1 Poisson, reaction–diffusion with a dominant stiffness)
    ``Ã = A`` exactly; for advection–diffusion it is a diffusion-like symmetrisation and for Helmholtz
    ``K − k²M`` a Laplacian-like positive definite operator (a "Laplace preconditioner"): the hierarchy
    and its smoothers stay convergent even when ``A`` is indefinite, and the outer Krylov step on ``A``
    handles the rest.

    Args:
      A: square matrix: SciPy sparse (any format), BCOO, dense, or a `SparseMatrix` (concrete).

    Returns:
      ``Ã`` as a float64 ``scipy.sparse.csr_matrix``.

    Raises:
      ValueError: ``A`` not square or with NaN/Inf entries. TypeError: an unsupported type.

    Examples:
      >>> import numpy as np
      >>> from icmlx.solvers import m_matrix_envelope
      >>> m_matrix_envelope(np.array([[2.0, 1.0], [1.0, 2.0]])).toarray().tolist()
      [[2.0, -1.0], [-1.0, 2.0]]
    """
    import scipy.sparse as sp

    A = as_scipy_csr(A, name="A")
    d = A.diagonal()
    off = A - sp.diags(d)
    off = abs(off)
    off = (off + off.T) * 0.5
    off.eliminate_zeros()
    dd = np.maximum(d, np.asarray(off.sum(axis=1)).ravel())
    return (sp.diags(dd) - off).tocsr()


def _nbr_max(indptr: np.ndarray, indices: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``max(v_i, max_{j ∈ N(i)} v_j)`` for a CSR pattern (vectorised)."""
    out = v.copy()
    deg = np.diff(indptr)
    has = deg > 0
    if indices.size:
        red = np.maximum.reduceat(v[indices], indptr[:-1][has])
        out[has] = np.maximum(out[has], red)
    return out


def mis2_aggregation(A: Any) -> np.ndarray:
    """Aggregates of the matrix graph from a distance-2 maximal independent set (vectorised NumPy).

    Roots are chosen Luby-style: an undecided node whose (hashed, distinct) priority is the largest in its
    2-hop neighbourhood becomes a root and covers that neighbourhood; this repeats until every node is
    decided. Each root then takes its neighbours, and the remaining (2-hop) nodes join a neighbouring
    aggregate. Purely topological and deterministic, so matrices on one mesh share their aggregates. About
    8-15 nodes per aggregate on 2-D P1 meshes.

    Args:
      A: square matrix (SciPy sparse in any format, BCOO, dense or `SparseMatrix`); only its pattern
        is used.

    Returns:
      ``int64[n]`` aggregate index of each node.

    References:
      Bell, Dalton & Olson, SIAM J. Sci. Comput. 34 (2012), "Exposing fine-grained parallelism in algebraic
      multigrid methods" (MIS(k) aggregation).

    Examples:
      >>> import numpy as np, scipy.sparse as sp
      >>> from icmlx.solvers import mis2_aggregation
      >>> A = sp.diags([-np.ones(11), 2 * np.ones(12), -np.ones(11)], [-1, 0, 1])
      >>> agg = mis2_aggregation(A); int(agg.max()) + 1, bool(np.all(np.bincount(agg) >= 2))
      (4, True)
    """
    S = as_scipy_csr(A, name="A")
    n = S.shape[0]
    S = (abs(S) + abs(S).T).tocsr()
    S.setdiag(0)
    S.eliminate_zeros()
    S.sort_indices()
    indptr, indices = S.indptr, S.indices
    prio = _mis2_priorities(n)
    state = np.zeros(n, np.int8)  # 0 undecided, 1 root, 2 covered
    for _ in range(64):  # Luby rounds (set-up time; typically 5-10)
        und = state == 0
        if not und.any():
            break
        p = np.where(und, prio, np.int32(-1))
        m2 = _nbr_max(indptr, indices, _nbr_max(indptr, indices, p))
        new = und & (prio == m2)
        state[new] = 1
        cov = _nbr_max(indptr, indices, _nbr_max(indptr, indices, new.astype(np.int8)))
        state[(state == 0) & (cov > 0)] = 2
    state[state == 0] = 1  # (not reached for finite graphs: every round adds a root)
    roots = np.nonzero(state == 1)[0]
    agg = np.full(n, -1, np.int32)
    agg[roots] = np.arange(roots.size, dtype=np.int32)
    for _ in range(3):  # neighbours of roots, then 2-hop nodes, then (defensive) a third sweep
        free = agg < 0
        if not free.any():
            break
        best = _nbr_max(indptr, indices, agg)
        agg[free] = best[free]
    left = agg < 0
    agg[left] = roots.size + np.arange(int(left.sum()), dtype=np.int32)
    return agg.astype(np.int64)


def _mis2_priorities(n: int) -> np.ndarray:
    # distinct pseudo-random priorities: multiplication by an odd constant is a bijection mod 2^31
    return ((np.arange(n, dtype=np.uint64) * np.uint64(2654435761)) % np.uint64(2 ** 31)).astype(np.int32)


@jax.jit
def _mis2_ell_jit(nbr: Int[Array, "k n"], prio: Int[Array, " n"], real: Bool[Array, " n"]) -> Int[Array, " n"]:
    # the rounds of mis2_aggregation on a padded ELL pattern (a slot that is not an edge points to its own row),
    # as gathers; padding rows start "covered" and never become roots

    def nmax(v):
        return jax.lax.fori_loop(0, nbr.shape[0], lambda j, m: jnp.maximum(m, v[nbr[j]]), v)

    def cond(c):
        state, it = c
        return jnp.any(state == 0) & (it < 64)

    def body(c):
        state, it = c
        und = state == 0
        m2 = nmax(nmax(jnp.where(und, prio, -1)))
        new = und & (prio == m2)
        state = jnp.where(new, 1, state)
        cov = nmax(nmax(new.astype(jnp.int32)))
        return jnp.where((state == 0) & (cov > 0), 2, state), it + 1

    state, _ = jax.lax.while_loop(cond, body, (jnp.where(real, 0, 2).astype(jnp.int32), jnp.int32(0)))
    roots = (state != 2) & real  # undecided after 64 rounds become roots, as in the NumPy version
    agg = jnp.where(roots, jnp.cumsum(roots, dtype=jnp.int32) - 1, -1)
    for _ in range(3):  # neighbours of roots, then 2-hop nodes, then (defensive) a third sweep
        agg = jnp.where(agg < 0, nmax(agg), agg)
    left = (agg < 0) & real
    return jnp.where(left, jnp.sum(roots, dtype=jnp.int32) + jnp.cumsum(left, dtype=jnp.int32) - 1, agg)


def _mis2_from_ell(ell: "EllMatrix", n: int) -> np.ndarray:
    """`mis2_aggregation` of a structurally symmetric matrix given as padded ELL (first ``n`` rows real),
    jitted (one compilation per padded shape): the same aggregates as the NumPy version, faster on large
    meshes."""
    npad = ell.shape[0]
    # the pattern on the host (integer selects, exact): on the device each op was a program per level shape
    idx = np.asarray(ell.idx)
    rows = np.arange(npad, dtype=idx.dtype)[None, :]
    nbr = np.where((np.asarray(ell.val) != 0) & (idx != rows), idx, rows)
    prio = np.full(npad, -1, np.int32)
    prio[:n] = _mis2_priorities(n)
    real = np.arange(npad) < n
    return np.asarray(_mis2_ell_jit(*(jax.device_put(a) for a in (nbr, prio, real))))[:n].astype(np.int64)


def _spectral_radius(M: Any, d: np.ndarray, iters: int = 12, stop_at_cap: bool = False) -> float:
    """Upper estimate of ρ(D⁻¹M) for symmetric ``M`` with positive diagonal ``d``.

    ``1.1 ×`` the Rayleigh quotient of ``D^{-1/2} M D^{-1/2}`` after ``iters`` power steps (from a fixed
    pseudo-random start), capped by the Gershgorin bound ``max_i Σ_j |m_ij| / d_i``, which it can never
    exceed. An underestimate would make the Chebyshev smoother amplify the top of the spectrum. With
    ``stop_at_cap`` the steps stop once ``1.1 ×`` the quotient reaches the cap (the result is the cap then; for
    a positive semi-definite ``M`` later quotients could not lower it, see `._sa_setup.rho_dinv_a`)."""
    import scipy.sparse as sp

    M = sp.csr_matrix(M)
    s = 1.0 / np.sqrt(d)
    row = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
    gersh = float(np.max(np.bincount(row, weights=np.abs(M.data), minlength=M.shape[0]) / d))
    # D^{-1/2} M D^{-1/2} formed once (one pass over the entries), so a power step is one product
    Ms = sp.csr_matrix((M.data * s[row] * s[M.indices], M.indices, M.indptr), shape=M.shape)
    x = np.random.default_rng(0).standard_normal(M.shape[0])
    lam = gersh
    for _ in range(iters):
        y = Ms @ x
        lam = float(x @ y / max(x @ x, 1e-300))
        if stop_at_cap and 1.1 * lam >= gersh:
            break
        x = y / max(np.linalg.norm(y), 1e-300)
    return min(1.1 * lam, gersh)


class MultilevelHierarchy(eqx.Module):
    r"""A smoothed-aggregation hierarchy and its V-cycle, ``r ↦ B r ≈ Ã⁻¹ r`` (pure JAX, jit/vmap-safe).

    Level ``ℓ`` has the operator ``Ã_ℓ`` (ELL), its inverse diagonal, the Chebyshev bounds of
    ``D_ℓ⁻¹Ã_ℓ``, and the prolongator ``P_ℓ = (I − ω D_ℓ⁻¹Ã_ℓ) T_ℓ`` (``T_ℓ`` the normalised aggregate
    indicator, ``ω = 4/(3ρ)``) with its transpose; ``Ã_{ℓ+1} = P_ℓᵀ Ã_ℓ P_ℓ``. The coarsest level is solved
    with a stored dense inverse. One V-cycle applies Chebyshev smoothing of degree ``degree`` before and
    after each coarse correction; for symmetric ``Ã`` it is a symmetric positive-definite preconditioner.
    All sizes are padded (nodes to `bucket_size`, row widths to multiples of 4): matrices of one mesh
    family reuse the compiled cycle.

    Build with `smoothed_aggregation` (or `amg_setup`); `air_setup` builds one for nonsymmetric problems with an
    approximate ideal restriction (``restrict`` not ``prolongᵀ``, ``A_{ℓ+1} = R_ℓ A_ℓ P_ℓ``). To precondition a
    Krylov solve of ``A`` pass the hierarchy itself,
    ``cg(A, b, preconditioner=H)`` (or ``gmres``/``bicgstab``), or use `as_preconditioner`, a map from
    n-vectors to n-vectors: padding is done inside and the iteration uses ``A`` itself. (``H.ops[0]`` is the
    padded envelope ``Ã``, not ``A``: iterating with it solves a different system unless ``Ã = A``.)
    """

    ops: tuple[EllMatrix, ...]
    dinv: tuple[Inexact[Array, " _n"], ...]
    prolong: tuple[EllMatrix, ...]
    restrict: tuple[EllMatrix, ...]
    lam: Inexact[Array, " levels"]
    coarse_inv: Inexact[Array, "nc nc"]
    sizes: tuple[int, ...] = eqx.field(static=True)
    degree: int = eqx.field(static=True, default=2)
    n: int | None = eqx.field(static=True, default=None)
    relaxation: Any = eqx.field(static=True, default=None)  # an AbstractRelaxation; None: Chebyshev(degree)
    cycle: str = eqx.field(static=True, default="V")
    colors: tuple = ()  # per level data of the relaxation: ColorBlocks (Gauss–Seidel), the F-points (FC-Jacobi)

    @property
    def num_levels(self) -> int:
        """Number of levels including the coarsest."""
        return len(self.sizes)

    def __repr__(self) -> str:
        dtype = jnp.dtype(self.coarse_inv.dtype).name
        return (f"MultilevelHierarchy(n={self.n}, num_levels={self.num_levels}, sizes={self.sizes}, "
                f"degree={self.degree}, dtype={dtype})")

    def as_preconditioner(self, n: int | None = None):
        """One V-cycle as a map ``r ↦ B r`` on unpadded vectors of length ``n`` (jit/vmap-safe).

        Args:
          n: the size of the vectors (default: the size of the matrix the hierarchy was built from; the padded
            size ``sizes[0]`` is accepted too and gives the cycle itself).

        Returns:
          A callable ``float[n] -> float[n]`` (same dtype as its input), to pass as ``preconditioner=`` to
          `cg`, `gmres` or `bicgstab`, or to any solver that takes ``r -> M⁻¹ r``.

        Raises:
          ValueError: ``n`` differs from the size the hierarchy was built for, or exceeds its padded size.

        Examples:
          >>> import numpy as np, scipy.sparse as sp
          >>> from icmlx.solvers import smoothed_aggregation
          >>> A = sp.diags([-np.ones(99), 2 * np.ones(100), -np.ones(99)], [-1, 0, 1])
          >>> M = smoothed_aggregation(A, max_coarse=10).as_preconditioner()
          >>> M(np.ones(100)).shape
          (100,)
        """
        npad = self.sizes[0]
        if n is None:
            n = self.n if self.n is not None else npad
        if n == npad:  # vectors already padded (e.g. a padded EllMatrix system): the cycle itself
            return self
        if (self.n is not None and n != self.n) or n > npad:
            raise ValueError(f"this MultilevelHierarchy was built for a {self.n} × {self.n} matrix, but the "
                             f"vectors have length {n}.\nBuild it from the same matrix: smoothed_aggregation(A).")
        return _PaddedCycle(self, n)

    def _smooth(self, lvl: int, b, x, zero: bool = False):
        # Chebyshev smoothing on D⁻¹Ã for [λ/30, λ] (Adams et al. 2003) unless another relaxation was set up
        colors = self.colors[lvl] if self.colors else None
        return relax(self.relaxation, self.ops[lvl], self.dinv[lvl], self.lam[lvl], colors, b, x, zero,
                     self.degree)

    def _cycle(self, lvl: int, b):
        if lvl == len(self.ops):
            return self.coarse_inv @ b
        x = self._smooth(lvl, b, jnp.zeros_like(b), zero=True)
        r = self.restrict[lvl].mv(b - self.ops[lvl].mv(x))
        if self.cycle == "W" and lvl + 1 < len(self.ops):
            # two coarse cycles, the second on the residual the first leaves (a loop: the trace stays linear
            # in the number of levels)
            A1 = self.ops[lvl + 1]
            e = jax.lax.fori_loop(0, 2, lambda _, e: e + self._cycle(lvl + 1, r - A1.mv(e)), jnp.zeros_like(r))
        else:
            e = self._cycle(lvl + 1, r)
        x = x + self.prolong[lvl].mv(e)
        return self._smooth(lvl, b, x)

    def __call__(self, r: Inexact[Array, " n"]) -> Inexact[Array, " n"]:
        """One V-cycle from a zero initial guess: ``B r ≈ Ã⁻¹ r`` (``r`` of the padded fine size; a complex ``r``
        through a real hierarchy: its real and imaginary parts apart)."""
        if jnp.iscomplexobj(r) and not jnp.iscomplexobj(self.coarse_inv):
            return jax.lax.complex(self._cycle(0, jnp.real(r)), self._cycle(0, jnp.imag(r)))
        return self._cycle(0, r)


class _PaddedCycle(eqx.Module):
    """``r ↦ B r`` on unpadded n-vectors (a pytree, so a Krylov loop that takes it compiles once)."""

    hierarchy: MultilevelHierarchy
    n: int = eqx.field(static=True)

    def __call__(self, r):
        H = self.hierarchy
        dtype = H.coarse_inv.dtype
        r = jnp.asarray(r)
        if jnp.iscomplexobj(r) and not jnp.iscomplexobj(H.coarse_inv):
            # a real cycle on a complex vector: applied to its real and imaginary parts (it stays C-linear)
            return jax.lax.complex(self(jnp.real(r)), self(jnp.imag(r)))
        out_dtype = r.dtype if jnp.issubdtype(r.dtype, jnp.inexact) else dtype
        v = jnp.zeros((H.sizes[0],), dtype).at[: self.n].set(r.astype(dtype))
        return H(v)[: self.n].astype(out_dtype)

    def __repr__(self) -> str:
        return f"V-cycle preconditioner on {self.n}-vectors of {self.hierarchy!r}"


def smoothed_aggregation(A: Any, *, max_coarse: int = 400, max_levels: int = 10, degree: int = 2,
                         envelope: bool = True, pad_to: int | None = None,
                         dtype: Any = None) -> MultilevelHierarchy:
    r"""Build a smoothed-aggregation hierarchy of ``A`` (eager NumPy/SciPy set-up; returns JAX arrays).

    The hierarchy is built on the M-matrix envelope ``Ã`` of ``A`` (`m_matrix_envelope`; ``Ã = A``
    for symmetric diagonally dominant M-matrices) with distance-2 MIS aggregation
    (`mis2_aggregation`), Jacobi-smoothed prolongators ``P = (I − ω D⁻¹Ã) T`` and Galerkin coarse
    operators ``PᵀÃP``, coarsening until at most ``max_coarse`` nodes remain.

    Args:
      A: square matrix: SciPy sparse in any format, a BCOO, a dense array or a `SparseMatrix`
        (concrete, not traced).
      max_coarse: largest coarsest level, solved by a dense inverse.
      max_levels: cap on the number of levels.
      degree: Chebyshev smoothing degree (products with ``Ã`` per pre-/post-smoothing).
      envelope: build on ``Ã`` (default). ``False`` uses ``A`` itself (must then be SPD-like).
      pad_to: padded fine size (default `bucket_size` of ``n``).
      dtype: floating dtype of the values (default: JAX's default float).

    Returns:
      A `MultilevelHierarchy`; pass it as ``preconditioner=`` to `cg` / `gmres` /
      `bicgstab` (the Krylov iteration then uses ``A`` and the V-cycle preconditions it), or call
      `as_preconditioner` for an n-vector map. Calling ``H`` itself applies one
      V-cycle to a vector of the padded size ``H.sizes[0]``.

    Raises:
      ValueError: ``A`` not square, with NaN/Inf entries, or (on ``Ã``) a non-positive diagonal; ``degree``,
        ``max_coarse`` or ``max_levels`` not a positive int; a coarsest level of more than 8192 nodes (the graph
        does not coarsen: its dense inverse would not fit), checked before it is allocated.
      TypeError: an unsupported matrix type, or called under ``jax.jit``.

    References:
      Vaněk, Mandel & Brezina, Computing 56 (1996), "Algebraic multigrid by smoothed aggregation for second
      and fourth order elliptic problems"; Adams, Brezina, Hu & Tuminaro, J. Comput. Phys. 188 (2003)
      (Chebyshev smoothers).

    Examples:
      >>> import numpy as np, scipy.sparse as sp
      >>> from icmlx.solvers import cg, smoothed_aggregation
      >>> T = sp.diags([-np.ones(29), 2 * np.ones(30), -np.ones(29)], [-1, 0, 1])
      >>> A = (sp.kron(T, sp.eye(30)) + sp.kron(sp.eye(30), T)).tocsr()
      >>> H = smoothed_aggregation(A, max_coarse=50)
      >>> sol = cg(A, np.ones(900), preconditioner=H, rtol=1e-5)  # iterates on A, V-cycles precondition
      >>> int(sol.num_steps) < 15, bool(np.linalg.norm(np.ones(900) - A @ np.asarray(sol.value)) < 1e-3 * 30)
      (True, True)
    """
    return build_sa_hierarchy(A, max_coarse=max_coarse, max_levels=max_levels, degree=degree, envelope=envelope,
                     pad_to=pad_to, dtype=dtype)[0]


def build_sa_hierarchy(A: Any, *, max_coarse: int = 400, max_levels: int = 10, degree: int = 2,
              envelope: bool = True, pad_to: int | None = None, dtype: Any = None, tight: bool = False):
    """`smoothed_aggregation`, also returning the aggregate maps and the coarsest operator. With ``tight``
    each ELL matrix is packed at its longest row's width instead of the width rounded up to a multiple of 4:
    every product gathers every slot, so on a mesh with rows of 5 and 9 entries a third of the rounded work is
    padding (G-RANS, whose cycle runs inside every iteration)."""
    import scipy.sparse as sp

    def ell(M, num_rows, num_cols):
        width = None
        if tight:  # the clean-up from_scipy does, first, so that the width counts the entries it packs
            M = sp.csr_matrix(M, copy=True)
            M.sum_duplicates()
            M.eliminate_zeros()
            width = max(1, int(np.diff(M.indptr).max()) if M.shape[0] else 1)
        return EllMatrix.from_scipy(M, num_rows=num_rows, num_cols=num_cols, width=width, dtype=dtype)

    A = as_scipy_csr(A, name="A")
    n = A.shape[0]
    for name, value in (("degree", degree), ("max_coarse", max_coarse), ("max_levels", max_levels)):
        positive_int(value, name, "smoothed_aggregation")
    dtype = jnp.result_type(float) if dtype is None else dtype
    At = m_matrix_envelope(A) if envelope else A.copy()
    d = At.diagonal()
    if np.any(d <= 0):
        raise ValueError("the hierarchy operator needs a positive diagonal "
                         f"(first bad row {int(np.nonzero(d <= 0)[0][0])})")
    ops, dinvs, pros, ress, lams, sizes, maps = [], [], [], [], [], [], []
    cur = At
    pad = bucket_size(n) if pad_to is None else positive_int(pad_to, "pad_to", "smoothed_aggregation")
    if pad < n:
        raise ValueError(f"pad_to={pad} is smaller than n={n}")
    while cur.shape[0] > max_coarse and len(ops) < max_levels - 1:
        nl = cur.shape[0]
        dl = cur.diagonal()
        DA = sp.diags(1.0 / dl) @ cur
        rho = _spectral_radius(cur, dl)
        op_ell = ell(cur, pad, pad)
        # the envelope (and its Galerkin products) is structurally symmetric: aggregate on its ELL pattern,
        # jitted, where that pays off (the same aggregates as the NumPy version)
        agg = _mis2_from_ell(op_ell, nl) if (envelope and nl >= 4096) else mis2_aggregation(cur)
        nc = int(agg.max()) + 1
        if nc >= nl:
            break
        maps.append(agg)
        size = np.bincount(agg, minlength=nc).astype(np.float64)
        T = sp.csr_matrix((1.0 / np.sqrt(size[agg]), (np.arange(nl), agg)), shape=(nl, nc))
        P = (T - (4.0 / (3.0 * rho)) * (DA @ T)).tocsr()
        P.eliminate_zeros()
        R = P.T.tocsr()
        pad_c = bucket_size(nc, minimum=16)
        ops.append(op_ell)
        dinv = np.zeros(pad)
        dinv[:nl] = 1.0 / dl
        dinvs.append(to_device(dinv, dtype))
        pros.append(ell(P, pad, pad_c))
        ress.append(ell(R, pad_c, pad))
        lams.append(rho)
        sizes.append(pad)
        cur = (R @ cur @ P).tocsr()
        cur.sum_duplicates()
        pad = pad_c
    # coarsest: dense inverse (pseudo-inverse guard for an exactly singular Galerkin operator)
    if cur.shape[0] > _MAX_DENSE_COARSE:
        raise ValueError(f"smoothed_aggregation: coarsening stopped at {cur.shape[0]} nodes (> {_MAX_DENSE_COARSE}), "
                         f"whose dense coarsest inverse would need {8 * pad**2 / 2**30:.1f} GiB and O(n³) work: the "
                         "graph does not coarsen (e.g. a diagonal or disconnected matrix) or max_levels is too small."
                         "\nRaise max_levels, or use preconditioner='jacobi' for a (nearly) diagonal matrix.")
    Cd = cur.toarray()
    Cinv = np.zeros((pad, pad))
    try:
        Cinv[: Cd.shape[0], : Cd.shape[0]] = np.linalg.inv(Cd)
    except np.linalg.LinAlgError:
        Cinv[: Cd.shape[0], : Cd.shape[0]] = np.linalg.pinv(Cd)
    sizes.append(pad)
    H = MultilevelHierarchy(
        ops=tuple(ops), dinv=tuple(dinvs), prolong=tuple(pros), restrict=tuple(ress),
        lam=to_device(np.asarray(lams, np.float64), dtype), coarse_inv=to_device(Cinv, dtype),
        sizes=tuple(sizes), degree=degree, n=n)
    return H, maps, cur
