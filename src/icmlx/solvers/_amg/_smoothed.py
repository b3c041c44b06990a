"""`smoothed_aggregation`: the smoothed-aggregation builder of `amg_setup` run on the M-matrix envelope, a V-cycle
that preconditions any Krylov solve (G-RANS's `MultilevelSmoother` is built by it)."""

from typing import Any

import numpy as np

from .._convert import as_scipy_csr, positive_int
from ._build import build_hierarchy
from ._hierarchy import MultilevelHierarchy, m_matrix_envelope
from ._relaxation import ChebyshevRelaxation

__all__ = ["smoothed_aggregation"]


def smoothed_aggregation(A: Any, *, max_coarse: int = 400, max_levels: int = 10, degree: int = 2,
                         envelope: bool = True, dtype: Any = None) -> MultilevelHierarchy:
    r"""A smoothed-aggregation V-cycle of ``A`` (or of its M-matrix envelope): a preconditioner for any Krylov solve.

    The hierarchy is made by the builder `amg_setup` runs, on the M-matrix envelope ``Ã`` of ``A``
    (`m_matrix_envelope`; ``Ã = A`` for symmetric diagonally dominant M-matrices): standard aggregation of the
    graph of ``Ã``, Jacobi-smoothed prolongators ``P = (I − ω D⁻¹Ã) T`` and Galerkin coarse operators ``PᵀÃP``,
    coarsening until at most ``max_coarse`` nodes remain, with `ChebyshevRelaxation` of ``degree`` on every
    level. Since ``Ã`` is symmetric positive definite, the cycle is an SPD preconditioner even when ``A`` is
    indefinite or nonsymmetric (a "Laplace preconditioner" for Helmholtz); `amg_setup` instead builds on ``A``
    itself where it can and chooses the Krylov method.

    Args:
      A: square matrix: SciPy sparse in any format, a BCOO, a dense array or a `SparseMatrix`
        (concrete, not traced).
      max_coarse: largest coarsest level, solved by a dense inverse.
      max_levels: cap on the number of levels.
      degree: Chebyshev smoothing degree (products with ``Ã`` per pre-/post-smoothing).
      envelope: build on ``Ã`` (default). ``False`` uses ``A`` itself (must then be SPD-like).
      dtype: floating dtype of the values (default: JAX's default float).

    Returns:
      A `MultilevelHierarchy` padded to `bucket_size` of ``n``; pass it as ``preconditioner=`` to `cg` /
      `gmres` / `bicgstab` (the Krylov iteration then uses ``A`` and the V-cycle preconditions it), or call
      `as_preconditioner` for an n-vector map.

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
    positive_int(degree, "degree", "smoothed_aggregation")
    A = as_scipy_csr(A, name="A")
    At = m_matrix_envelope(A) if envelope else A
    if np.any(At.diagonal() <= 0):
        raise ValueError("smoothed_aggregation: the hierarchy operator needs a positive diagonal (first bad row "
                         f"{int(np.nonzero(At.diagonal() <= 0)[0][0])}){'' if envelope else '; use envelope=True'}")
    try:
        return build_hierarchy(At, relaxation=ChebyshevRelaxation(degree=degree), max_coarse=max_coarse,
                               max_levels=max_levels, dtype=dtype)[0]
    except ValueError as err:  # the builder's checks, named after this entry point
        msg = str(err).replace("amg_setup:", "smoothed_aggregation:", 1)
        if "coarsening stopped" in msg:  # (the strength advice of amg_setup does not apply: every coupling counts)
            msg = (msg.splitlines()[0]
                   + "\nRaise max_levels, or use preconditioner='jacobi' for a (nearly) diagonal matrix.")
        raise ValueError(msg) from None
