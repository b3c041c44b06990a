"""The one classification of a sparse matrix by symmetry and sign structure, shared by the multigrid set-up
(``amg_setup``: CG or GMRES, hierarchy on ``A`` or on its envelope) and G-RANS (``GRANSOperator``: the outer step)."""

from typing import Any, NamedTuple

import numpy as np

__all__: list[str] = []

# symmetric to this many machine epsilons of the input dtype, relative to the largest entry: summation-order
# rounding in an assembly stays far below it, a genuine asymmetry (advection, a one-sided boundary row) far above
SYMMETRY_EPS_MULTIPLE = 1e3


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
        if dt is not None and np.issubdtype(np.dtype(dt), np.floating):
            return float(np.finfo(np.dtype(dt)).eps)
    return float(np.finfo(np.float64).eps)


def symmetry_tolerance(eps: float) -> float:
    r"""Relative tolerance $\tau = 10^3 \varepsilon$ of `classify`'s symmetry test."""
    return SYMMETRY_EPS_MULTIPLE * eps


def classify(A: Any, eps: float) -> MatrixClass:
    r"""Classify a SciPy sparse matrix (float64 values of an input whose dtype had machine epsilon ``eps``).

    Symmetric when $\max_{ij} |a_{ij} - a_{ji}| \le \tau \max_{ij} |a_{ij}|$, ``τ = 1e3 ε`` (a max-norm
    test: one asymmetric row is not averaged away, as a Frobenius-norm test over all entries would do); SPD-like
    when moreover every diagonal entry is positive and every row sum is at least ``−τ Σ_j |a_ij|``.
    """
    import scipy.sparse as sp

    A = sp.csr_matrix(A)
    tau = symmetry_tolerance(eps)
    absdata = np.abs(A.data)
    scale = float(absdata.max()) if A.nnz else 0.0
    asym = 0.0
    if A.nnz:
        T = A.T.tocsr()  # (sorted columns, no repeats)
        if A.has_canonical_format and np.array_equal(A.indptr, T.indptr) and np.array_equal(A.indices, T.indices):
            asym = float(np.abs(A.data - T.data).max())  # a symmetric pattern: Aᵀ entry for entry, no sparse sum
        else:
            asym = float(abs(A - T).max())
    symmetric = asym <= tau * scale
    d = A.diagonal()
    posdiag = bool(np.all(d > 0))
    row = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    rowsum = np.bincount(row, weights=A.data, minlength=A.shape[0])
    rowabs = np.bincount(row, weights=absdata, minlength=A.shape[0])
    spd_like = bool(symmetric and posdiag and np.all(rowsum >= -tau * rowabs))
    return MatrixClass(bool(symmetric), posdiag, spd_like)
