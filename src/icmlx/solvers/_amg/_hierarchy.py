"""The multigrid hierarchy and its cycle (pure JAX): `MultilevelHierarchy`, the cycle strategies (`VCycle`,
`WCycle`), ELL sparse matrices and the M-matrix envelope. The set-up that fills a hierarchy is ``_build``'s."""

import abc
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Inexact, Int

from ..._buckets import round_up
from ..._inputs import to_device
from ..._strategy import as_strategy
from .._convert import as_scipy_csr
from .._sparse import SparseMatrix
from ._relaxation import relax

__all__ = ["EllMatrix", "MultilevelHierarchy", "AbstractCycle", "VCycle", "WCycle", "m_matrix_envelope"]


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

    A complex ``A`` gets the moduli $|a_{ij}|$ off the diagonal and the real part $\operatorname{Re} a_{ii}$ in
    the diagonal's place (for Helmholtz with absorption, $K - k^2(1 + i\alpha)M$, the envelope of its real part
    with off-diagonal entries enlarged by at most a factor $\sqrt{1 + \alpha^2}$).

    For a symmetric diagonally dominant M-matrix (P1 Poisson, reaction–diffusion with a dominant stiffness)
    ``Ã = A`` exactly; for advection–diffusion it is a diffusion-like symmetrisation and for Helmholtz
    ``K − k²M`` a Laplacian-like positive definite operator (a "Laplace preconditioner"): the hierarchy
    and its smoothers stay convergent even when ``A`` is indefinite, and the outer Krylov step on ``A``
    handles the rest.

    Args:
      A: square matrix, real or complex: SciPy sparse (any format), BCOO, dense, or a `SparseMatrix` (concrete).

    Returns:
      ``Ã`` as a float64 ``scipy.sparse.csr_matrix`` (real for a complex ``A`` too).

    Raises:
      ValueError: ``A`` not square or with NaN/Inf entries. TypeError: an unsupported type.

    Examples:
      >>> import numpy as np
      >>> from icmlx.solvers import m_matrix_envelope
      >>> m_matrix_envelope(np.array([[2.0, 1.0], [1.0, 2.0]])).toarray().tolist()
      [[2.0, -1.0], [-1.0, 2.0]]
    """
    import scipy.sparse as sp

    A = as_scipy_csr(A, name="A", allow_complex=True)
    d = A.diagonal()
    off = abs(A - sp.diags(d))  # (the moduli: real for a complex A)
    d = d.real
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


def _luby_priorities(n: int) -> np.ndarray:
    # distinct pseudo-random priorities: multiplication by an odd constant is a bijection mod 2^31
    return ((np.arange(n, dtype=np.uint64) * np.uint64(2654435761)) % np.uint64(2 ** 31)).astype(np.int32)


class AbstractCycle(eqx.Module):
    """How a multigrid cycle visits the coarser levels: a strategy object (static, hashable), passed as
    ``amg_setup(cycle=...)`` (or its shorthand ``"V"``/``"W"``). `coarse_correction` is its behaviour."""

    @abc.abstractmethod
    def coarse_correction(self, H: "MultilevelHierarchy", lvl: int, r: Inexact[Array, " _n"]) -> Inexact[Array, " _n"]:
        """The correction of level ``lvl + 1`` for the restricted residual ``r`` of level ``lvl`` of ``H``."""


class VCycle(AbstractCycle):
    r"""One visit to each coarser level per cycle: $e_{\ell+1} = B_{\ell+1} r$.

    References:
      Trottenberg, Oosterlee & Schüller, *Multigrid* (2001), §2.4.

    Examples:
      >>> from icmlx.solvers import VCycle
      >>> VCycle()
      VCycle()
    """

    def coarse_correction(self, H, lvl, r):
        return H._cycle(lvl + 1, r)


class WCycle(AbstractCycle):
    r"""Two coarse cycles per level, the second on the residual the first leaves:
    $e = B r$, $e \leftarrow e + B(r - A_{\ell+1} e)$; more robust than a V-cycle on hard problems, at more
    coarse work per cycle.

    References:
      Trottenberg, Oosterlee & Schüller, *Multigrid* (2001), §2.4.

    Examples:
      >>> from icmlx.solvers import WCycle
      >>> WCycle()
      WCycle()
    """

    def coarse_correction(self, H, lvl, r):
        if lvl + 1 == len(H.ops):  # the coarsest level is solved exactly: a second visit would add nothing
            return H._cycle(lvl + 1, r)
        A1 = H.ops[lvl + 1]
        # a loop: the trace stays linear in the number of levels
        return jax.lax.fori_loop(0, 2, lambda _, e: e + H._cycle(lvl + 1, r - A1.mv(e)), jnp.zeros_like(r))


def as_cycle(cycle: Any) -> AbstractCycle:
    """A cycle object from an object or its shorthand (``"V"``, ``"W"``)."""
    return as_strategy(cycle, AbstractCycle, {"V": VCycle, "W": WCycle}, "cycle")


class MultilevelHierarchy(eqx.Module):
    r"""A smoothed-aggregation hierarchy and its V-cycle, ``r ↦ B r ≈ Ã⁻¹ r`` (pure JAX, jit/vmap-safe).

    Level ``ℓ`` has the operator ``Ã_ℓ`` (ELL), its inverse diagonal, the Chebyshev bounds of
    ``D_ℓ⁻¹Ã_ℓ``, and the prolongator ``P_ℓ = (I − ω D_ℓ⁻¹Ã_ℓ) T_ℓ`` (``T_ℓ`` the normalised aggregate
    indicator, ``ω = 4/(3ρ)``) with its transpose; ``Ã_{ℓ+1} = P_ℓᵀ Ã_ℓ P_ℓ``. The coarsest level is solved
    with a stored dense inverse. One V-cycle applies Chebyshev smoothing of degree ``degree`` before and
    after each coarse correction; for symmetric ``Ã`` it is a symmetric positive-definite preconditioner. How the
    coarser levels are visited is the ``cycle`` strategy's `AbstractCycle.coarse_correction` (`VCycle` by
    default, `WCycle`).
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
    lambda_max: Inexact[Array, " levels"]
    coarse_inv: Inexact[Array, "nc nc"]
    sizes: tuple[int, ...] = eqx.field(static=True)
    degree: int = eqx.field(static=True, default=2)
    n: int | None = eqx.field(static=True, default=None)
    relaxation: Any = eqx.field(static=True, default=None)  # an AbstractRelaxation; None: Chebyshev(degree)
    cycle: Any = eqx.field(static=True, default="V", converter=as_cycle)  # an AbstractCycle or its shorthand
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
        return relax(self.relaxation, self.ops[lvl], self.dinv[lvl], self.lambda_max[lvl], colors, b, x, zero,
                     self.degree)

    def _cycle(self, lvl: int, b):
        if lvl == len(self.ops):
            return self.coarse_inv @ b
        x = self._smooth(lvl, b, jnp.zeros_like(b), zero=True)
        r = self.restrict[lvl].mv(b - self.ops[lvl].mv(x))
        x = x + self.prolong[lvl].mv(self.cycle.coarse_correction(self, lvl, r))
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
