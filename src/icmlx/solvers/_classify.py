"""The one classification of a sparse matrix by symmetry and sign structure, shared by the multigrid set-up
(``amg_setup``: CG or GMRES, hierarchy on ``A`` or on its envelope) and G-RANS (``GRANSOperator``: the outer step)."""

from typing import Any, NamedTuple

import numpy as np

__all__: list[str] = []

# symmetric to this many machine epsilons of the input dtype, relative to the largest entry: summation-order
# rounding in an assembly stays far below it, a genuine asymmetry (advection, a one-sided boundary row) far above
SYMMETRY_EPS_MULTIPLE = 1e3
# the largest matrix whose definiteness `classify(probe_definite=True)` settles by a sparse factorisation: a 2-D P2
# stiffness matrix of 65k unknowns factors with about 6M stored entries (~0.1 GB); past this size the cost of the
# factorisation would outweigh the solve it chooses for
INERTIA_MAX_N = 100_000


class MatrixClass(NamedTuple):
    """What the solvers choose by: ``symmetric`` (to `symmetry_tolerance`), ``positive_diagonal`` and
    ``spd_like`` (symmetric, positive diagonal, non-negative row sums up to the same rounding allowance)."""

    symmetric: bool
    positive_diagonal: bool
    spd_like: bool


def input_eps(A: Any) -> float:
    """Machine epsilon of the dtype the caller's matrix holds (float64 when it holds none, or integers)."""
    for obj in (getattr(A, "vals", None), getattr(A, "data", None), A):
        dt = getattr(obj, "dtype", None)
        if dt is not None and np.issubdtype(np.dtype(dt), np.inexact):  # (complex64: float32's epsilon)
            return float(np.finfo(np.dtype(dt)).eps)
    return float(np.finfo(np.float64).eps)


def symmetry_tolerance(eps: float) -> float:
    r"""Relative tolerance $\tau = 10^3 \varepsilon$ of `classify`'s symmetry test."""
    return SYMMETRY_EPS_MULTIPLE * eps


def is_symmetric(A: Any, eps: float, *, conjugate: bool = False) -> bool:
    r"""Whether the SciPy CSR ``A`` equals $B = A^\top$ (or $A^H$ with ``conjugate``, for a complex ``A``) to
    `symmetry_tolerance`: $\max_{ij} |a_{ij} - b_{ij}| \le \tau \max_{ij} |a_{ij}|$ (a max-norm test: one
    asymmetric row is not averaged away, as a Frobenius-norm test over all entries would do)."""
    if not A.nnz:
        return True
    scale = float(np.abs(A.data).max())
    T = (A.conj().T if conjugate else A.T).tocsr()  # (sorted columns, no repeats)
    if A.has_canonical_format and np.array_equal(A.indptr, T.indptr) and np.array_equal(A.indices, T.indices):
        asym = float(np.abs(A.data - T.data).max())  # a symmetric pattern: Bᵀ entry for entry, no sparse sum
    else:
        asym = float(abs(A - T).max())
    return asym <= symmetry_tolerance(eps) * scale


def positive_definite_by_inertia(A: Any) -> bool | None:
    r"""Whether the symmetric ``A`` is positive definite, by Sylvester's law of inertia: ``True``/``False`` from
    the signs of the pivots of a symmetric-mode sparse LU ($P A P^\top = L D L^\top$, no off-diagonal pivoting),
    ``None`` when it cannot tell (``A`` above `INERTIA_MAX_N` unknowns, or the factorisation pivoted off the
    diagonal or failed).

    A congruence keeps the number of negative eigenvalues, so all pivots positive holds exactly when every
    eigenvalue is positive; no eigenvalue estimate (whose error near zero would decide the answer) is involved.
    """
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    n = A.shape[0]
    if n > INERTIA_MAX_N:
        return None
    try:
        lu = spla.splu(sp.csc_matrix(A), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                       options=dict(SymmetricMode=True))
    except RuntimeError:  # (exactly singular: no definite answer needed, the solvers will say so)
        return None
    if not np.array_equal(lu.perm_r, lu.perm_c):  # a row pivot: the pivots are no longer those of PAPᵀ
        return None
    return bool(np.all(lu.U.diagonal() > 0))


def classify(A: Any, eps: float, *, probe_definite: bool = False) -> MatrixClass:
    r"""Classify a SciPy sparse matrix (float64 values of an input whose dtype had machine epsilon ``eps``).

    Symmetric by `is_symmetric` ($\max_{ij} |a_{ij} - a_{ji}| \le \tau \max_{ij} |a_{ij}|$, ``τ = 1e3 ε``); SPD-like
    when moreover every diagonal entry is positive and every row sum is at least ``−τ Σ_j |a_ij|``. The row-sum
    test holds for M-matrices (P1 stiffness, finite differences) but fails for symmetric positive definite
    matrices with positive off-diagonal entries (P2 and higher-order stiffness matrices, whose rows next to a
    Dirichlet boundary sum below zero) as it does for indefinite ones (Helmholtz $K - k^2 M$); with
    ``probe_definite`` such a symmetric matrix with a positive diagonal is SPD-like when
    `positive_definite_by_inertia` proves it positive definite.
    """
    import scipy.sparse as sp

    A = sp.csr_matrix(A)
    tau = symmetry_tolerance(eps)
    absdata = np.abs(A.data)
    symmetric = is_symmetric(A, eps)
    d = A.diagonal()
    posdiag = bool(np.all(d > 0))
    row = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    rowsum = np.bincount(row, weights=A.data, minlength=A.shape[0])
    rowabs = np.bincount(row, weights=absdata, minlength=A.shape[0])
    spd_like = bool(symmetric and posdiag and np.all(rowsum >= -tau * rowabs))
    if probe_definite and symmetric and posdiag and not spd_like:
        spd_like = positive_definite_by_inertia(A) is True
    return MatrixClass(bool(symmetric), posdiag, spd_like)
