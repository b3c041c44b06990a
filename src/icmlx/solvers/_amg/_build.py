"""Smoothed aggregation at PyAMG's quality: strength strategies, near-nullspace candidates (rigid-body modes), and
the set-up that turns the host levels of ``_sa_setup`` into a padded, jittable `MultilevelHierarchy`."""

import contextlib
import ctypes
import ctypes.util
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Inexact, Int

from ..._inputs import to_device, to_host
from ..._strategy import as_strategy
from .._classify import classify, input_eps, is_symmetric, symmetry_tolerance
from .._convert import as_scipy_csr, positive_int
from .._sparse import bucket_size
from ._hierarchy import _MAX_DENSE_COARSE, EllMatrix, MultilevelHierarchy, _ell_width, as_cycle, m_matrix_envelope
from ._levels import multicolor, sa_levels
from ._numeric import build_pattern, numeric_setup_jit
from ._relaxation import (
    AbstractRelaxation,
    ChebyshevRelaxation,
    ColorBlocks,
    GaussSeidelRelaxation,
    JacobiRelaxation,
)
from ._strength import AbstractStrength, EvolutionStrength, SymmetricStrength

__all__ = ["rigid_body_modes"]

STRENGTHS = {"symmetric": SymmetricStrength, "evolution": EvolutionStrength}

RELAXATIONS = {"chebyshev": ChebyshevRelaxation, "jacobi": JacobiRelaxation, "gauss_seidel": GaussSeidelRelaxation}


def rigid_body_modes(coords: Any) -> np.ndarray:
    r"""Rigid-body modes of linear elasticity at the nodes ``coords``: the near-nullspace of the operator.

    2-D: translations $(1, 0)$, $(0, 1)$ and the rotation $(-y, x)$; 3-D: three translations
    and the rotations $(0, -z, y)$, $(z, 0, -x)$, $(-y, x, 0)$. Dofs are interleaved per node
    (``x₀, y₀, x₁, y₁, …``), the ordering of ``pyamg.gallery.linear_elasticity``.

    Args:
      coords: ``float[num_nodes, d]`` node coordinates, ``d`` 2 or 3.

    Returns:
      ``float64[num_nodes · d, 3]`` (2-D) or ``[num_nodes · d, 6]`` (3-D): pass as ``near_nullspace=``.

    Raises:
      ValueError: ``coords`` not of shape ``(num_nodes, 2 | 3)`` or with NaN/Inf.

    References:
      Vaněk, Mandel & Brezina, Computing 56 (1996), §5 (elasticity with rigid-body modes).

    Examples:
      >>> import numpy as np
      >>> from icmlx.solvers import rigid_body_modes
      >>> rigid_body_modes(np.array([[0.0, 0.0], [1.0, 2.0]])).tolist()
      [[1.0, 0.0, -0.0], [0.0, 1.0, 0.0], [1.0, 0.0, -2.0], [0.0, 1.0, 1.0]]
    """
    X = np.asarray(coords, np.float64)
    if X.ndim != 2 or X.shape[1] not in (2, 3):
        raise ValueError(f"rigid_body_modes: coords must have shape (num_nodes, 2) or (num_nodes, 3), got "
                         f"{X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("rigid_body_modes: coords has NaN or Inf entries; fix them first")
    m, d = X.shape
    if d == 2:
        x, y = X[:, 0], X[:, 1]
        B = np.zeros((m, 2, 3))
        B[:, 0, 0] = B[:, 1, 1] = 1.0
        B[:, 0, 2], B[:, 1, 2] = -y, x
        return B.reshape(2 * m, 3)
    x, y, z = X[:, 0], X[:, 1], X[:, 2]
    B = np.zeros((m, 3, 6))
    B[:, 0, 0] = B[:, 1, 1] = B[:, 2, 2] = 1.0
    B[:, 1, 3], B[:, 2, 3] = -z, y
    B[:, 0, 4], B[:, 2, 4] = z, -x
    B[:, 0, 5], B[:, 1, 5] = -y, x
    return B.reshape(3 * m, 6)


def _candidates(B: Any, n: int) -> np.ndarray:
    if B is None:
        return np.ones((n, 1))
    B = np.asarray(B, np.float64)
    if B.ndim == 1:
        B = B[:, None]
    if B.ndim != 2 or B.shape[0] != n or not 1 <= B.shape[1] <= 64:
        raise ValueError(f"near_nullspace must be an (n, k) array with n = {n} rows and 1 <= k <= 64 columns, got "
                         f"shape {B.shape}")
    if not np.all(np.isfinite(B)):
        raise ValueError("near_nullspace has NaN or Inf entries; fix them first")
    if np.linalg.matrix_rank(B.T @ B) < B.shape[1]:
        raise ValueError(f"near_nullspace: its {B.shape[1]} columns are linearly dependent; drop the redundant ones")
    return B


def _block_size(A: Any, block_size: Any, n: int) -> int:
    if block_size is None:
        bs = getattr(A, "blocksize", None)  # a SciPy BSR matrix carries its node blocks
        return int(bs[0]) if bs is not None and bs[0] == bs[1] else 1
    b = positive_int(block_size, "block_size", "amg_setup")
    if n % b:
        raise ValueError(f"amg_setup: block_size={b} must divide n = {n} (dofs per node)")
    return b


def build_hierarchy(A: Any, *, near_nullspace: Any = None, block_size: Any = None, strength: Any = None,
                    relaxation: Any = None, cycle: Any = "V", max_coarse: int = 500, max_levels: int = 10,
                    improve_candidates: int = 4, dtype: Any = None, reuse_pattern: bool = False):
    """The hierarchy (`MultilevelHierarchy`) and the facts the solver needs: ``(H, symmetric, on, pattern,
    K)``, ``on`` ``"A"`` or ``"envelope"`` (the operator the hierarchy was built on); with ``reuse_pattern`` the
    symbolic set-up (``_sa_numeric.SAPattern``), else ``None``; ``K`` the padded Krylov matrix (``A`` with identity
    padding rows) when the set-up made it (``None`` for an envelope hierarchy on the host path)."""
    raw = A
    A = as_scipy_csr(A, name="A", allow_complex=True)
    # the clean-up below is in place and a CSR input may share its arrays with the caller's matrix: copy only when
    # there is something to clean up (a canonical matrix without stored zeros is read, never written, and is not
    # held twice through the set-up)
    if not (A.has_canonical_format and np.all(A.data != 0)):
        A = A.copy()
    n = A.shape[0]
    if n == 0:
        raise ValueError("amg_setup: A is empty (0 × 0); there is nothing to solve")
    strength = as_strategy(SymmetricStrength() if strength is None else strength, AbstractStrength, STRENGTHS,
                           "strength")
    default_relaxation = relaxation is None
    # the symmetric default: Chebyshev of degree 3 on D^-1 A. It needs no colouring (the largest host cost of a
    # Gauss-Seidel set-up), and on the benchmark problems (Poisson, rotated anisotropy, elasticity, high-contrast
    # FEM) it took no more CG iterations than the multicolour sweep, or fewer, at less work per cycle
    relaxation = as_strategy(ChebyshevRelaxation(degree=3) if relaxation is None else relaxation, AbstractRelaxation,
                             RELAXATIONS, "relaxation")
    cycle = as_cycle(cycle)
    positive_int(max_coarse, "max_coarse", "amg_setup")
    positive_int(max_levels, "max_levels", "amg_setup")
    positive_int(improve_candidates, "improve_candidates", "amg_setup", minimum=0)
    A.sum_duplicates()
    A.eliminate_zeros()
    B = _candidates(near_nullspace, n)
    bs = _block_size(raw, block_size, n)
    cplx = np.iscomplexobj(A.data)
    if cplx:
        symmetric, posdiag = _classify_complex(A, strength, reuse_pattern, input_eps(raw))
    else:
        cls = classify(A, input_eps(raw))
        symmetric, posdiag = cls.symmetric, cls.positive_diagonal
    on = "A"
    if not posdiag and not cplx:
        # no relaxation converges on a zero or negative diagonal: the hierarchy is built on the M-matrix envelope
        # and preconditions a Krylov iteration on A itself
        A, on, symmetric = m_matrix_envelope(A), "envelope", False
        if np.any(A.diagonal() <= 0):
            raise ValueError("amg_setup: A has an empty row (a zero diagonal and no off-diagonal entries); "
                             "the system is singular there: fix the matrix")
    if default_relaxation and not (symmetric and on == "A"):
        # a nonsymmetric (or envelope) hierarchy: damped Jacobi, which preconditions GMRES reliably here, where the
        # multicolour Gauss–Seidel cycle was seen to stall it on a small nonsymmetric case
        relaxation = JacobiRelaxation()
    dtype = jnp.result_type(float) if dtype is None else dtype
    if cplx:  # the complex dtype of the requested precision
        dtype = jnp.complex128 if jnp.finfo(dtype).dtype == jnp.float64 else jnp.complex64
    if reuse_pattern:
        if on != "A":
            raise ValueError("amg_setup(reuse_pattern=True) needs A with a positive diagonal (its hierarchy is "
                             "built on A itself); this A is not: use reuse_pattern=False")
        pattern, values, coarse = build_pattern(
            A, B=B, node_of=np.arange(n) // bs, strength=strength, max_coarse=max_coarse,
            max_levels=max_levels, improve_steps=improve_candidates, symmetric=symmetric, relaxation=relaxation,
            cycle=cycle, dtype=dtype)
        _check_coarse(coarse)
        H, K = numeric_setup_jit(pattern, to_device(values, dtype))
        return H, symmetric, on, pattern, K
    levels, coarse = sa_levels(A, B=B, node_of=np.arange(n) // bs, strength=strength,
                               max_coarse=max_coarse, max_levels=max_levels, improve_steps=improve_candidates,
                               symmetric=symmetric and on == "A", keep_tables=relaxation.needs_coloring)
    _check_coarse(coarse)
    H, K = _assemble(levels, coarse, relaxation, cycle, n, dtype, symmetric and on == "A",
                     A if on == "A" else None)
    return H, symmetric, on, None, K


def _classify_complex(A: Any, strength: Any, reuse_pattern: bool, eps: float) -> tuple[bool, bool]:
    """``(hermitian with a positive diagonal, positive_diagonal)`` of a complex CSR ``A`` (to ``τ = 1e3 ε`` of its
    largest entry, as `classify`), refusing what the complex set-up does not cover. ``positive_diagonal`` means a
    real positive diagonal: with a Hermitian ``A`` the cycle is then Hermitian positive definite and CG applies; any
    other nonzero diagonal keeps the hierarchy on ``A`` itself (no envelope) with Jacobi relaxation under GMRES."""
    if reuse_pattern:
        raise ValueError("amg_setup(reuse_pattern=True) needs a real matrix; a complex A is set up on the host: "
                         "use reuse_pattern=False")
    if not isinstance(strength, SymmetricStrength):
        raise ValueError(f"amg_setup: a complex A takes strength='symmetric' (measured on |a_ij|), got {strength!r}")
    d = A.diagonal()
    if np.any(d == 0):
        raise ValueError("amg_setup: a complex A needs a nonzero diagonal (its relaxation divides by it); this A has "
                         "a zero diagonal entry: use gmres or bicgstab without this preconditioner")
    hermitian = is_symmetric(A, eps, conjugate=True)
    posdiag = bool(np.all(d.real > 0) and np.all(np.abs(d.imag) <= symmetry_tolerance(eps) * np.abs(d)))
    return bool(hermitian and posdiag), posdiag


def _check_coarse(coarse: Any) -> None:
    if coarse.shape[0] > _MAX_DENSE_COARSE:
        raise ValueError(f"amg_setup: coarsening stopped at {coarse.shape[0]} unknowns (> {_MAX_DENSE_COARSE}), too "
                         "many for the dense coarsest solve: the strength graph does not coarsen.\nLower "
                         "SymmetricStrength's theta or raise EvolutionStrength's epsilon (fewer weak couplings), "
                         "or raise max_levels.")


@functools.cache
def _malloc_trim() -> Any:
    try:  # glibc only; elsewhere the set-up simply keeps what its allocator keeps
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def _return_freed_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``). The host set-up frees many
    arrays of a few MB, below glibc's (adaptive) mmap threshold, so they sit in the heap after the set-up; the
    compiled solve would allocate its work vectors on top of them. The values are untouched."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class SplitEllMatrix(EllMatrix):
    r"""An `EllMatrix` whose longest rows continue in an overflow block: ``idx``/``val`` hold the first ``k``
    entries of every row, ``over_idx``/``over_val`` the rest of the ``m`` rows listed in ``over_rows`` (in the same
    transposed layout), so that $(A x)_i = \sum_{j<k} \mathrm{val}_{ji} x_{\mathrm{idx}_{ji}}$ plus, for
    $i = \mathrm{over\_rows}_r$, $\sum_j \mathrm{over\_val}_{jr} x_{\mathrm{over\_idx}_{jr}}$.

    A level of a 3-D smoothed-aggregation hierarchy has rows of very unequal length (on 3-D Poisson with 1M
    unknowns the first coarse operator has a mean of 31 entries a row and a longest of 45), and one ELL block pads
    every row to the longest; `split_width` picks the ``k`` that stores the fewest slots.

    Attributes:
      over_idx: ``int32[k_over, m]`` column index of each overflow slot.
      over_val: ``[k_over, m]`` its value (0 in unused slots).
      over_rows: ``int32[m]`` the (distinct, increasing) row of each overflow column.
    """

    over_idx: Int[Array, "ko m"]
    over_val: Inexact[Array, "ko m"]
    over_rows: Int[Array, " m"]

    def mv(self, x: Inexact[Array, " n_cols"]) -> Inexact[Array, " n_rows"]:
        y = super().mv(x)

        def body(j, z):
            return z + self.over_val[j] * x[self.over_idx[j]]

        # (the overflow holds at least one slot; the loop starts from its product, as `EllMatrix.mv` does)
        z = jax.lax.fori_loop(1, self.over_idx.shape[0], body, body(0, 0.0))
        return y.at[self.over_rows].add(z, indices_are_sorted=True, unique_indices=True)

    def diagonal(self) -> Inexact[Array, " n"]:
        on = self.over_idx == self.over_rows[None, :]
        return super().diagonal().at[self.over_rows].add(jnp.sum(jnp.where(on, self.over_val, 0.0), axis=0))


def split_width(counts: np.ndarray, num_rows: int) -> int:
    """The width ``k`` of the main block of a `SplitEllMatrix` for rows with ``counts`` entries, padded to
    ``num_rows`` rows: the ``k`` minimising ``k · num_rows + (longest − k) · #{rows longer than k}``."""
    longest = int(counts.max()) if counts.size else 0
    if longest <= 1:
        return max(longest, 1)
    # rows longer than k, for every k (a histogram's tail sums)
    longer = num_rows - np.cumsum(np.bincount(counts, minlength=longest + 1)) - (num_rows - counts.size)
    k = np.arange(1, longest + 1)
    return int(k[np.argmin(k * num_rows + (longest - k) * longer[1:longest + 1])])


_SPLIT_GAIN = 0.85  # split a matrix only when that stores at most this fraction of the single block's slots


def _ell_any(M, num_rows: int, num_cols: int, dtype, width: int | None = None):
    """The device `EllMatrix` of a set-up matrix (canonical CSR without stored zeros), as a `SplitEllMatrix` when
    that stores markedly fewer slots (`_SPLIT_GAIN`); ``width`` the single block's width (``None``: the longest
    row rounded up to a multiple of 4)."""
    cnt = np.diff(M.indptr)
    longest = int(cnt.max()) if cnt.size else 0
    full = _ell_width(max(longest, 1)) if width is None else width
    k = split_width(cnt, num_rows)
    m = int(np.count_nonzero(cnt > k))
    vdt = to_host(np.zeros(0, M.dtype), dtype).dtype
    if k * num_rows + (longest - k) * m > _SPLIT_GAIN * full * num_rows:
        idx, val = _ell_slots(M, num_rows, width=full, dtype=vdt)
        return EllMatrix(_adopt(idx, np.int32), _adopt(val, dtype), (num_rows, num_cols))
    idx, val = _ell_slots(M, num_rows, width=k, dtype=vdt, truncate=True)
    main = (_adopt(idx, np.int32), _adopt(val, dtype))
    del idx, val
    rows = np.flatnonzero(cnt > k)
    o_idx = np.zeros((longest - k, m), np.int32)
    o_val = np.zeros((longest - k, m), vdt)
    sel = np.arange(m)
    for j in range(longest - k):  # (a loop over slots, not over rows)
        sel = sel[cnt[rows[sel]] > k + j]
        pos = M.indptr[rows[sel]] + k + j
        o_idx[j, sel] = M.indices[pos]
        o_val[j, sel] = M.data[pos]
    return SplitEllMatrix(*main, (num_rows, num_cols), to_device(o_idx, np.int32), to_device(o_val, dtype),
                          to_device(rows.astype(np.int32), np.int32))


_ALIGN = 64  # bytes: the alignment at which XLA:CPU adopts a host buffer instead of copying it


def _host_zeros(shape: tuple, dtype: Any) -> np.ndarray:
    """A zeroed host array whose data starts at an `_ALIGN`-byte boundary (NumPy's own allocations are only
    16-byte aligned), so that `_adopt` can hand its memory to the CPU backend."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    buf = np.zeros(nbytes + _ALIGN, np.uint8)
    off = (-buf.ctypes.data) % _ALIGN
    return buf[off:off + nbytes].view(dtype).reshape(shape)


def _adopt(a: np.ndarray, dtype: Any) -> Any:
    """``a`` on the default device, converted to ``dtype`` as `to_device` does. The caller hands ``a`` over (it is
    never written again): on the CPU backend an aligned array in the target dtype becomes the device buffer itself
    (``may_alias``), so a level's matrices are not held twice, host and device, while they are uploaded (the
    set-up's peak); elsewhere it is copied."""
    return jax.device_put(to_host(a, dtype), may_alias=True)


# jax.monitoring's event after each XLA compilation (``jax._src.dispatch.BACKEND_COMPILE_EVENT``)
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_TRIM_AFTER_COMPILE = [0]  # how many `freed_after_compile` blocks are open


@functools.cache
def _install_compile_trim() -> None:
    def listener(event: str, duration: float, **metadata: Any) -> None:
        if event == _COMPILE_EVENT and _TRIM_AFTER_COMPILE[0]:
            _return_freed_memory()

    jax.monitoring.register_event_duration_secs_listener(listener)


@contextlib.contextmanager
def freed_after_compile():
    """Within the block, each XLA compilation is followed by `_return_freed_memory`, before the compiled program
    first runs. Compiling a solve (an LLVM build of the whole cycle) frees most of what it allocated, but in small
    pieces that stay in the C heap; the program's work vectors would then be allocated on top of them (on 3-D
    Poisson with 1M unknowns the compile left about 0.14 GB behind, as much as the solve's work vectors)."""
    _install_compile_trim()
    _TRIM_AFTER_COMPILE[0] += 1
    try:
        yield
    finally:
        _TRIM_AFTER_COMPILE[0] -= 1


def _ell_slots(M, num_rows: int, width: int | None = None, dtype: Any = None,
               truncate: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The host ``(idx int32[k, num_rows], val[k, num_rows])`` of a CSR matrix without duplicate entries: slot
    ``j`` of row ``i`` holds its ``j``-th stored entry (the layout of `EllMatrix.from_scipy`). Filled one slot at a
    time over the rows that reach it, so that no index array of the matrix's length (two ``int64`` per stored
    entry) is made beside the ELL arrays: the largest transient of the set-up's conversion. ``val`` is in
    ``dtype`` (``None``: float64, or complex128 for a complex matrix); both arrays are `_host_zeros`, ready for
    `_adopt`. ``truncate``: rows longer than ``width`` keep their first ``width`` entries (the main block of a
    `SplitEllMatrix`)."""
    cnt = np.diff(M.indptr)
    longest = int(cnt.max()) if cnt.size else 0
    k = _ell_width(max(longest, 1)) if width is None else width
    if truncate:
        longest = min(longest, k)
    elif longest > k:
        raise ValueError(f"row width {longest} exceeds the requested ELL width {k}")
    idx = _host_zeros((k, num_rows), np.int32)
    val = _host_zeros((k, num_rows), np.result_type(M.dtype, np.float64) if dtype is None else dtype)
    rows = np.arange(M.shape[0], dtype=M.indptr.dtype)
    for j in range(longest):  # (k ≤ the longest row: a loop over slots, not over rows or entries)
        rows = rows[cnt[rows] > j]
        pos = M.indptr[rows] + j
        idx[j, rows] = M.indices[pos]
        val[j, rows] = M.data[pos]
    return idx, val


def _ell(M, num_rows: int, num_cols: int, dtype, exact: bool = False) -> EllMatrix:
    # a prolongator or restriction of the set-up: canonical CSR without stored zeros, so no clean-up copy.
    # ``exact``: the width is the longest row itself, not rounded up to a multiple of 4 (a prolongator: it has the
    # fine level's rows, the most of any matrix but the operator, and few entries per row, so the rounding would
    # add up to 3 empty slots to rows that hold 3 to 6 entries)
    if not np.all(np.isfinite(M.data)):
        raise ValueError("EllMatrix.from_scipy: the matrix has NaN or Inf entries; fix them first")
    width = max(1, int(np.diff(M.indptr).max())) if exact and M.nnz else None
    return _ell_any(M, num_rows, num_cols, dtype, width=width)


def _assemble(levels, coarse, relaxation, cycle, n, dtype, symmetric, A=None, level_data=None):
    """The padded device hierarchy of the host levels, and with ``A`` (the cleaned CSR matrix the Krylov iteration
    runs on, or ``None``) that matrix as a padded `EllMatrix` with identity padding rows. ``level_data``: a host
    vector per level that the relaxation reads in place of a colouring (zero-padded to the level's padded size;
    AIR's F-point indicator), or ``None``."""
    ops, dinvs, pros, ress, lams, sizes, colors = [], [], [], [], [], [], []
    pad = bucket_size(n)
    K = None
    num_levels = len(levels)
    for lvl in range(num_levels):
        # the host levels are consumed as they are uploaded (the caller's list empties): a level's host matrices
        # are released once its device arrays exist, so host and device copies of the whole hierarchy never
        # coexist (the set-up's peak memory)
        cur, P, upper, d, R, table = levels.pop(0)
        nl = cur.shape[0]
        pad_c = bucket_size(P.shape[1], minimum=16)
        if np.any(cur.data == 0):  # (a Galerkin product can store exact zeros: they would widen the ELL rows)
            cur = cur.copy()
            cur.eliminate_zeros()
        if not np.all(np.isfinite(cur.data)):
            raise ValueError("EllMatrix.from_scipy: the matrix has NaN or Inf entries; fix them first")
        # the finest operator (and the Krylov matrix sharing its slots) at its longest row: its products are most
        # of a cycle's work, and the stencil fixes that width across a mesh family; coarse levels keep the
        # multiple-of-4 widths, which vary less across the matrices of one padded size
        width = max(1, int(np.diff(cur.indptr).max())) if lvl == 0 and cur.nnz else None
        coloured = level_data is None and relaxation is not None and relaxation.needs_coloring
        if lvl > 0 and level_data is None and not coloured:
            # a coarse Galerkin operator: rows of unequal length (a SplitEllMatrix when that stores fewer slots)
            op = _ell_any(cur, pad, pad, dtype)
        else:
            # (the values in the working dtype from the start, unless a colouring reads them first on the host)
            idx, val = _ell_slots(cur, pad, width=width,
                                  dtype=None if coloured else to_host(np.zeros(0, cur.dtype), dtype).dtype)
            extra = np.arange(nl, pad) if lvl == 0 and A is not None else np.zeros(0, np.int64)
            # the Krylov matrix is the finest operator with a 1 on each padding row's diagonal (a padding row's first
            # slot, empty in the operator, holds its own index and a 1)
            idx[0, extra] = extra
            if level_data is not None:
                v = np.zeros(pad)
                v[:nl] = level_data[lvl]
                colors.append(to_device(v, dtype))
            elif relaxation is not None and relaxation.needs_coloring:
                colors.append(ColorBlocks.from_ell(idx, val, d, multicolor(cur, table), dtype))
            # the cycle's finest operator is that Krylov matrix too (one copy of the finest values): its padding rows
            # meet only vectors that are zero there (zero inverse diagonal and prolongator rows keep them so), where
            # a 1 or a 0 on the diagonal gives the same products
            val[0, extra] = 1.0
            op = EllMatrix(_adopt(idx, np.int32), _adopt(val, dtype), (pad, pad))
            del idx, val
        ops.append(op)
        if lvl == 0 and A is not None:
            K = op
        dinv = np.zeros(pad, np.result_type(d, np.float64))
        dinv[:nl] = 1.0 / d
        dinvs.append(to_device(dinv, dtype))
        del cur
        pros.append(_ell(P, pad, pad_c, dtype, exact=True))
        del P
        ress.append(_ell(R, pad_c, pad, dtype))
        del R
        lams.append(upper)
        sizes.append(pad)
        pad = pad_c
        _return_freed_memory()
    if A is not None and K is None:  # (no level: A is solved by the coarsest dense inverse alone)
        K = EllMatrix.from_scipy(A, num_rows=pad, num_cols=pad, pad_identity=True, dtype=dtype)
    Cd = coarse.toarray()
    Cinv = np.zeros((pad, pad), np.result_type(coarse.dtype, np.float64))
    m = Cd.shape[0]
    if m:
        # a pseudo-inverse: a singular Galerkin operator (a pure Neumann problem) keeps its range solvable
        Cinv[:m, :m] = np.linalg.pinv(Cd, rcond=1e-13, hermitian=symmetric)
    sizes.append(pad)
    H = MultilevelHierarchy(
        ops=tuple(ops), dinv=tuple(dinvs), prolong=tuple(pros), restrict=tuple(ress),
        lambda_max=to_device(np.asarray(lams, np.float64), dtype), coarse_inv=to_device(Cinv, dtype),
        sizes=tuple(sizes), degree=getattr(relaxation, "degree", 2), n=n, relaxation=relaxation, cycle=cycle,
        colors=tuple(colors))
    return H, K
